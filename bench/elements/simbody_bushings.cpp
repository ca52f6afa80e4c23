// The Simbody side of elements_peers_bench: a BushingModel as Simbody
// mobilized bodies (MobilizedBody::Free from Ground, quaternions), gravity
// (Force::Gravity, one pass over the bodies) and Force::LinearBushing, and
// two fixed-step integrators over it:
//
//   RK4:    classical Runge-Kutta written out here; each derivative writes q
//           and u into the State (which invalidates every stage from
//           Position on), realizes Stage::Acceleration and reads getQDot()
//           and getUDot() -- Simbody's fastest documented way to evaluate
//           the dynamics (bench/peers/simbody_peer.cpp). The same steps as
//           capstan::rk4: k1..k4, the weighted sum, quaternions normalized.
//   Merson: Simbody's RungeKuttaMersonIntegrator with setFixedStepSize(h),
//           advanced by one stepTo() over the whole batch: what a Simbody
//           user writes, with Simbody's own step bookkeeping, error
//           estimate and projection.
#include "../../tests/crosscheck/simbody_cxx20.hpp"  // <Simbody.h>; first: it clears NDEBUG

#include "steppers.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace elements {
namespace {

SimTK::Vec3 vec3(const double v[3]) { return SimTK::Vec3(v[0], v[1], v[2]); }
SimTK::Vec6 vec6(const double v[6]) { return SimTK::Vec6(v[0], v[1], v[2], v[3], v[4], v[5]); }

// The model in Simbody, and the map from the canonical (Capstan) state
// layout to Simbody's q and u.
class SimbodyModel {
 public:
  explicit SimbodyModel(const BushingModel& model) {
    SimTK::Force::Gravity(forces_, matter_, vec3(model.gravity));
    for (const FreeBody& b : model.bodies) {
      const SimTK::Vec3 com = vec3(b.com);
      const SimTK::Inertia I_cm(vec3(b.inertia));
      const SimTK::Body::Rigid info(SimTK::MassProperties(b.mass, com, I_cm.shiftFromMassCenter(-com, b.mass)));
      mobods_.push_back(SimTK::MobilizedBody::Free(matter_.updGround(), SimTK::Transform(vec3(b.p_WF)), info,
                                                   SimTK::Transform()));
    }
    auto body = [&](int i) -> const SimTK::MobilizedBody& {
      if (i < 0) return matter_.getGround();
      return mobods_[static_cast<std::size_t>(i)];
    };
    for (const BushingTable& k : model.bushings) {
      SimTK::Force::LinearBushing(forces_, body(k.a), SimTK::Transform(vec3(k.p_BaAo)), body(k.c),
                                  SimTK::Transform(vec3(k.p_BcCo)), vec6(k.stiffness), vec6(k.damping));
    }
    state_ = system_.realizeTopology();
    system_.realizeModel(state_);
    for (const SimTK::MobilizedBody& m : mobods_) {
      const int q0 = m.getFirstQIndex(state_), u0 = m.getFirstUIndex(state_);
      if (m.getNumQ(state_) != 7 || m.getNumU(state_) != 6) throw std::runtime_error("Free mobilizer without quaternion");
      quaternions_.push_back(q0);
      for (int k = 0; k < 7; ++k) qIndex_.push_back(q0 + k);
      for (int k = 0; k < 6; ++k) uIndex_.push_back(u0 + k);
    }
    nq_ = state_.getNQ();
    nu_ = state_.getNU();
    if (nq_ != model.nq() || nu_ != model.nu()) throw std::runtime_error("Simbody's nq/nu differ from the table");
  }

  // Canonical q, u -> the State.
  void setState(const std::vector<double>& q, const std::vector<double>& u) {
    SimTK::Vector& qs = state_.updQ();
    SimTK::Vector& us = state_.updU();
    for (std::size_t i = 0; i < q.size(); ++i) qs[qIndex_[i]] = q[i];
    for (std::size_t i = 0; i < u.size(); ++i) us[uIndex_[i]] = u[i];
  }
  void getState(const SimTK::State& s, std::vector<double>& q, std::vector<double>& u) const {
    q.resize(qIndex_.size());
    u.resize(uIndex_.size());
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = s.getQ()[qIndex_[i]];
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = s.getU()[uIndex_[i]];
  }

  SimTK::MultibodySystem system_;
  SimTK::SimbodyMatterSubsystem matter_{system_};
  SimTK::GeneralForceSubsystem forces_{system_};
  std::vector<SimTK::MobilizedBody> mobods_;
  SimTK::State state_;
  std::vector<int> qIndex_, uIndex_;  // canonical index -> Simbody index
  std::vector<int> quaternions_;      // Simbody q index of each quaternion's w
  int nq_ = 0, nu_ = 0;
};

class SimbodyRk4 final : public Stepper {
 public:
  SimbodyRk4(const BushingModel& model, double h)
      : s_(model), h_(h), n_(static_cast<std::size_t>(s_.nq_ + s_.nu_)), y_(n_), tmp_(n_), k1_(n_), k2_(n_),
        k3_(n_), k4_(n_) {}

  void start(const std::vector<double>& q, const std::vector<double>& u) override {
    s_.setState(q, u);
    for (int i = 0; i < s_.nq_; ++i) y_[static_cast<std::size_t>(i)] = s_.state_.getQ()[i];
    for (int i = 0; i < s_.nu_; ++i) y_[static_cast<std::size_t>(s_.nq_ + i)] = s_.state_.getU()[i];
  }

  void advance(long steps) override {
    const double h = h_;
    for (long k = 0; k < steps; ++k) {
      derivative(y_, k1_);
      for (std::size_t i = 0; i < n_; ++i) tmp_[i] = y_[i] + (h / 2) * k1_[i];
      derivative(tmp_, k2_);
      for (std::size_t i = 0; i < n_; ++i) tmp_[i] = y_[i] + (h / 2) * k2_[i];
      derivative(tmp_, k3_);
      for (std::size_t i = 0; i < n_; ++i) tmp_[i] = y_[i] + h * k3_[i];
      derivative(tmp_, k4_);
      for (std::size_t i = 0; i < n_; ++i) y_[i] += (h / 6) * (k1_[i] + 2 * k2_[i] + 2 * k3_[i] + k4_[i]);
      for (const int w : s_.quaternions_) {
        double* e = &y_[static_cast<std::size_t>(w)];
        const double norm = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
        for (int j = 0; j < 4; ++j) e[j] /= norm;
      }
    }
  }

  void state(std::vector<double>& q, std::vector<double>& u) const override {
    SimTK::State s = s_.state_;
    for (int i = 0; i < s_.nq_; ++i) s.updQ()[i] = y_[static_cast<std::size_t>(i)];
    for (int i = 0; i < s_.nu_; ++i) s.updU()[i] = y_[static_cast<std::size_t>(s_.nq_ + i)];
    s_.getState(s, q, u);
  }

  double evaluationsPerStep() const override { return 4; }

 private:
  // ydot = [N(q) u; udot] at y = [q; u], Simbody's q and u order. The time
  // is not written: no force here depends on it, and setTime() costs Simbody
  // about 1 us an evaluation.
  void derivative(const std::vector<double>& y, std::vector<double>& ydot) {
    SimTK::State& s = s_.state_;
    SimTK::Vector& q = s.updQ();
    for (int i = 0; i < s_.nq_; ++i) q[i] = y[static_cast<std::size_t>(i)];
    SimTK::Vector& u = s.updU();
    for (int i = 0; i < s_.nu_; ++i) u[i] = y[static_cast<std::size_t>(s_.nq_ + i)];
    s_.system_.realize(s, SimTK::Stage::Acceleration);
    const SimTK::Vector& qdot = s.getQDot();
    const SimTK::Vector& udot = s.getUDot();
    for (int i = 0; i < s_.nq_; ++i) ydot[static_cast<std::size_t>(i)] = qdot[i];
    for (int i = 0; i < s_.nu_; ++i) ydot[static_cast<std::size_t>(s_.nq_ + i)] = udot[i];
  }

  SimbodyModel s_;
  double h_;
  std::size_t n_;
  std::vector<double> y_, tmp_, k1_, k2_, k3_, k4_;
};

class SimbodyMerson final : public Stepper {
 public:
  SimbodyMerson(const BushingModel& model, double h) : s_(model), h_(h), integ_(s_.system_) {
    integ_.setFixedStepSize(h);
  }

  void start(const std::vector<double>& q, const std::vector<double>& u) override {
    s_.setState(q, u);
    s_.state_.setTime(0.0);
    integ_.initialize(s_.state_);
    steps_ = 0;
    realizations0_ = integ_.getNumRealizations();  // Simbody's counters run on across initialize()
    taken0_ = integ_.getNumStepsTaken();
    attempted0_ = integ_.getNumStepsAttempted();
  }

  // stepTo() returns early once after initialize() (StartOfContinuousInterval)
  // and may return at Simbody's own events: call it until the time is reached.
  void advance(long steps) override {
    steps_ += steps;
    const double t1 = static_cast<double>(steps_) * h_;
    while (integ_.getTime() < t1 - 1e-9 * h_) integ_.stepTo(t1);
  }

  void state(std::vector<double>& q, std::vector<double>& u) const override { s_.getState(integ_.getState(), q, u); }

  // Realizations per step taken since start() (Simbody counts every
  // realize to Acceleration); a rejected step, impossible at a fixed step
  // unless Simbody's error control overrides it, is an error.
  double evaluationsPerStep() const override {
    const int taken = integ_.getNumStepsTaken() - taken0_;
    if (integ_.getNumStepsAttempted() - attempted0_ != taken) throw std::runtime_error("RKM rejected a step");
    return static_cast<double>(integ_.getNumRealizations() - realizations0_) / std::max(1, taken);
  }

 private:
  SimbodyModel s_;
  double h_;
  SimTK::RungeKuttaMersonIntegrator integ_;
  long steps_ = 0;
  int realizations0_ = 0, taken0_ = 0, attempted0_ = 0;
};

}  // namespace

std::unique_ptr<Stepper> makeSimbodyRk4(const BushingModel& model, double h) {
  return std::make_unique<SimbodyRk4>(model, h);
}
std::unique_ptr<Stepper> makeSimbodyMerson(const BushingModel& model, double h) {
  return std::make_unique<SimbodyMerson>(model, h);
}

}  // namespace elements
