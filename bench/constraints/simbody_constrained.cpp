// The Simbody side of constraints_bench: a ConstrainedModel as Simbody
// mobilized bodies and constraints, evaluated and integrated.
//
//   Tree: MobilizedBody::Pin (about z of F and M, which is the tables' axis)
//         and MobilizedBody::Ball (quaternions), F at p_PF on the parent, M
//         the body frame; Force::Gravity (one pass over the bodies).
//   Cut revolute: Simbody has no pin constraint, so one is made of what it
//         has with the same rows as Capstan's revolute cut: Constraint::Ball
//         at the two points (3 rows) and two Constraint::ConstantAngle that
//         keep M's z perpendicular to F's x and to F's y (2 rows). In a
//         planar loop the Ball's z row and both angles are redundant, as
//         Capstan's out-of-plane rows are; Simbody's solver handles that.
//         With CutModel::BallOnly, the Ball alone: what a Simbody
//         user would write for a planar loop, where the angles add nothing.
//   Contact: Constraint::SphereOnSphereContact, with or without rolling.
//
// Evaluation (what is timed) is Simbody's fastest documented usage, as in
// bench/peers/simbody_peer.cpp: the state is written once; each call
// invalidates the cache from Stage::Position on and realizes
// Stage::Acceleration, which recomputes kinematics, the constraint errors
// and Jacobian operators, the forward dynamics and the multipliers.
#include "../../tests/crosscheck/simbody_cxx20.hpp"  // <Simbody.h>; first: it clears NDEBUG

#include "constrained.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cbench {
namespace {

SimTK::Vec3 vec3(const double v[3]) { return SimTK::Vec3(v[0], v[1], v[2]); }

// The model in Simbody, and the map from the canonical state layout to
// Simbody's q and u.
class SimbodyModel {
 public:
  SimbodyModel(const ConstrainedModel& model, CutModel cuts) {
    SimTK::Force::Gravity(forces_, matter_, vec3(model.gravity));
    for (const TreeBody& b : model.bodies) {
      const SimTK::Vec3 com = vec3(b.com);
      const SimTK::Inertia I_cm(vec3(b.inertia));
      const SimTK::Body::Rigid info(SimTK::MassProperties(b.mass, com, I_cm.shiftFromMassCenter(-com, b.mass)));
      SimTK::MobilizedBody& parent = body(b.parent);
      const SimTK::Transform X_PF(vec3(b.p_PF));
      if (b.type == Mobilizer::Pin) {
        mobods_.push_back(SimTK::MobilizedBody::Pin(parent, X_PF, info, SimTK::Transform()));
      } else {
        mobods_.push_back(SimTK::MobilizedBody::Ball(parent, X_PF, info, SimTK::Transform()));
      }
    }
    for (const ConstraintTable& c : model.constraints) {
      SimTK::MobilizedBody& F = body(c.bodyF);
      SimTK::MobilizedBody& M = body(c.bodyM);
      if (c.kind == ConstraintKind::PinCut) {
        SimTK::Constraint::Ball(F, vec3(c.p_F), M, vec3(c.p_M));
        if (cuts == CutModel::BallOnly) continue;
        SimTK::Constraint::ConstantAngle(F, SimTK::UnitVec3(1, 0, 0), M, SimTK::UnitVec3(0, 0, 1));
        SimTK::Constraint::ConstantAngle(F, SimTK::UnitVec3(0, 1, 0), M, SimTK::UnitVec3(0, 0, 1));
      } else {
        contacts_.push_back(
            SimTK::Constraint::SphereOnSphereContact(F, vec3(c.p_F), c.radiusF, M, vec3(c.p_M), c.radiusM, c.rolling));
      }
    }
    state_ = system_.realizeTopology();
    system_.realizeModel(state_);
    for (std::size_t b = 0; b < mobods_.size(); ++b) {
      const SimTK::MobilizedBody& m = mobods_[b];
      if (static_cast<int>(m.getMobilizedBodyIndex()) != static_cast<int>(b) + 1)
        throw std::runtime_error("Simbody numbered the bodies differently from the table");
      const int q0 = m.getFirstQIndex(state_), u0 = m.getFirstUIndex(state_);
      const bool ball = model.bodies[b].type == Mobilizer::Ball;
      if (m.getNumQ(state_) != (ball ? 4 : 1) || m.getNumU(state_) != (ball ? 3 : 1))
        throw std::runtime_error("unexpected Simbody mobilizer size (a Ball without quaternion?)");
      if (ball) quaternions_.push_back(q0);
      for (int k = 0; k < m.getNumQ(state_); ++k) qIndex_.push_back(q0 + k);
      for (int k = 0; k < m.getNumU(state_); ++k) uIndex_.push_back(u0 + k);
    }
    nq_ = state_.getNQ();
    nu_ = state_.getNU();
    if (nq_ != model.nq() || nu_ != model.nu()) throw std::runtime_error("Simbody's nq/nu differ from the table");
  }

  SimTK::MobilizedBody& body(int i) {
    if (i < 0) return matter_.updGround();
    return mobods_.at(static_cast<std::size_t>(i));
  }

  // Canonical q, u -> the State.
  void setState(SimTK::State& s, const std::vector<double>& q, const std::vector<double>& u) const {
    SimTK::Vector& qs = s.updQ();
    SimTK::Vector& us = s.updU();
    for (std::size_t i = 0; i < q.size(); ++i) qs[qIndex_[i]] = q[i];
    for (std::size_t i = 0; i < u.size(); ++i) us[uIndex_[i]] = u[i];
  }
  void getState(const SimTK::State& s, std::vector<double>& q, std::vector<double>& u) const {
    q.resize(qIndex_.size());
    u.resize(uIndex_.size());
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = s.getQ()[qIndex_[i]];
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = s.getU()[uIndex_[i]];
  }

  // udot, the forces on the bodies and at the contacts, at a state realized
  // to Acceleration.
  Evaluation evaluation(const SimTK::State& s) const {
    Evaluation e;
    e.udot.resize(uIndex_.size());
    for (std::size_t i = 0; i < e.udot.size(); ++i) e.udot[i] = s.getUDot()[uIndex_[i]];
    // Simbody reports constraint forces with the multipliers' sign (the
    // negative of what the constraint applies).
    e.bodyForces.assign(mobods_.size(), {});
    for (SimTK::ConstraintIndex ci(0); ci < matter_.getNumConstraints(); ++ci) {
      const SimTK::Constraint& c = matter_.getConstraint(ci);
      const SimTK::Vector_<SimTK::SpatialVec> F = c.getConstrainedBodyForcesAsVector(s);
      for (int i = 0; i < c.getNumConstrainedBodies(); ++i) {
        const int b =
            static_cast<int>(
                c.getMobilizedBodyFromConstrainedBody(SimTK::ConstrainedBodyIndex(i)).getMobilizedBodyIndex()) -
            1;
        if (b < 0) continue;  // Ground
        for (int k = 0; k < 3; ++k) {
          e.bodyForces[static_cast<std::size_t>(b)][static_cast<std::size_t>(k)] -= F[i][0][k];
          e.bodyForces[static_cast<std::size_t>(b)][static_cast<std::size_t>(k + 3)] -= F[i][1][k];
        }
      }
    }
    for (const SimTK::Constraint::SphereOnSphereContact& c : contacts_) {
      const SimTK::Vec3 f = c.findForceOnSphereBInG(s);
      e.contactForces.push_back({f[0], f[1], f[2]});
    }
    return e;
  }

  SimTK::MultibodySystem system_;
  SimTK::SimbodyMatterSubsystem matter_{system_};
  SimTK::GeneralForceSubsystem forces_{system_};
  std::vector<SimTK::MobilizedBody> mobods_;
  std::vector<SimTK::Constraint::SphereOnSphereContact> contacts_;
  SimTK::State state_;
  std::vector<int> qIndex_, uIndex_;  // canonical index -> Simbody index
  std::vector<int> quaternions_;      // Simbody q index of each quaternion's w
  int nq_ = 0, nu_ = 0;
};

class SimbodyEngine final : public Engine {
 public:
  SimbodyEngine(const ConstrainedModel& model, CutModel cuts) : s_(model, cuts) {}

  void setState(const std::vector<double>& q, const std::vector<double>& u) override { s_.setState(s_.state_, q, u); }

  Evaluation evaluate() override {
    s_.system_.realize(s_.state_, SimTK::Stage::Acceleration);
    return s_.evaluation(s_.state_);
  }

  double run(long calls) override {
    double sum = 0.0;
    SimTK::State& s = s_.state_;
    for (long k = 0; k < calls; ++k) {
      s.invalidateAllCacheAtOrAbove(SimTK::Stage::Position);
      s_.system_.realize(s, SimTK::Stage::Acceleration);
      sum += s.getUDot()[s_.nu_ - 1] + s.getMultipliers()[0];
    }
    return sum;
  }

 private:
  SimbodyModel s_;
};

class SimbodyRk4 final : public Stepper {
 public:
  SimbodyRk4(const ConstrainedModel& model, CutModel cuts, double h, double tolerance)
      : s_(model, cuts),
        h_(h),
        tolerance_(tolerance),
        n_(static_cast<std::size_t>(s_.nq_ + s_.nu_)),
        y_(n_),
        tmp_(n_),
        k1_(n_),
        k2_(n_),
        k3_(n_),
        k4_(n_) {}

  void start(const std::vector<double>& q, const std::vector<double>& u) override {
    s_.setState(s_.state_, q, u);
    s_.state_.setTime(0.0);
    read(y_);
    steps_ = 0;
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
      // As capstan's projection: quaternions normalized, then q and u onto
      // the constraints.
      for (const int w : s_.quaternions_) {
        double* e = &y_[static_cast<std::size_t>(w)];
        const double norm = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
        for (int j = 0; j < 4; ++j) e[j] /= norm;
      }
      write(y_);
      s_.system_.project(s_.state_, tolerance_);
      read(y_);
    }
    steps_ += steps;
  }

  void state(std::vector<double>& q, std::vector<double>& u) const override {
    SimTK::State s = s_.state_;
    for (int i = 0; i < s_.nq_; ++i) s.updQ()[i] = y_[static_cast<std::size_t>(i)];
    for (int i = 0; i < s_.nu_; ++i) s.updU()[i] = y_[static_cast<std::size_t>(s_.nq_ + i)];
    s_.getState(s, q, u);
  }

  double evaluationsPerStep() const override { return 4; }
  long stepsTaken() const override { return steps_; }

 private:
  void write(const std::vector<double>& y) {
    SimTK::Vector& q = s_.state_.updQ();
    for (int i = 0; i < s_.nq_; ++i) q[i] = y[static_cast<std::size_t>(i)];
    SimTK::Vector& u = s_.state_.updU();
    for (int i = 0; i < s_.nu_; ++i) u[i] = y[static_cast<std::size_t>(s_.nq_ + i)];
  }
  void read(std::vector<double>& y) const {
    for (int i = 0; i < s_.nq_; ++i) y[static_cast<std::size_t>(i)] = s_.state_.getQ()[i];
    for (int i = 0; i < s_.nu_; ++i) y[static_cast<std::size_t>(s_.nq_ + i)] = s_.state_.getU()[i];
  }
  // ydot = [N(q) u; udot] at y = [q; u], Simbody's order. The time is not
  // written: no force here depends on it.
  void derivative(const std::vector<double>& y, std::vector<double>& ydot) {
    write(y);
    s_.system_.realize(s_.state_, SimTK::Stage::Acceleration);
    const SimTK::Vector& qdot = s_.state_.getQDot();
    const SimTK::Vector& udot = s_.state_.getUDot();
    for (int i = 0; i < s_.nq_; ++i) ydot[static_cast<std::size_t>(i)] = qdot[i];
    for (int i = 0; i < s_.nu_; ++i) ydot[static_cast<std::size_t>(s_.nq_ + i)] = udot[i];
  }

  SimbodyModel s_;
  double h_, tolerance_;
  std::size_t n_;
  std::vector<double> y_, tmp_, k1_, k2_, k3_, k4_;
  long steps_ = 0;
};

class SimbodyMerson final : public Stepper {
 public:
  SimbodyMerson(const ConstrainedModel& model, CutModel cuts, double h, double accuracy, double tolerance)
      : s_(model, cuts), h_(h), integ_(s_.system_) {
    if (accuracy > 0) {
      integ_.setAccuracy(accuracy);
    } else {
      integ_.setFixedStepSize(h);
    }
    integ_.setConstraintTolerance(tolerance);
  }

  void start(const std::vector<double>& q, const std::vector<double>& u) override {
    s_.setState(s_.state_, q, u);
    s_.state_.setTime(0.0);
    integ_.initialize(s_.state_);
    steps_ = 0;
    realizations0_ = integ_.getNumRealizations();  // Simbody's counters run on across initialize()
    taken0_ = integ_.getNumStepsTaken();
  }

  // stepTo() returns early once after initialize() (StartOfContinuousInterval)
  // and may return at Simbody's own events: call it until the time is reached.
  void advance(long steps) override {
    steps_ += steps;
    const double t1 = static_cast<double>(steps_) * h_;
    while (integ_.getTime() < t1 - 1e-9 * h_) integ_.stepTo(t1);
  }

  void state(std::vector<double>& q, std::vector<double>& u) const override { s_.getState(integ_.getState(), q, u); }

  // Realizations to Acceleration per step taken since start().
  double evaluationsPerStep() const override {
    return static_cast<double>(integ_.getNumRealizations() - realizations0_) / std::max(1L, stepsTaken());
  }
  long stepsTaken() const override { return integ_.getNumStepsTaken() - taken0_; }

 private:
  SimbodyModel s_;
  double h_;
  SimTK::RungeKuttaMersonIntegrator integ_;
  long steps_ = 0;
  int realizations0_ = 0, taken0_ = 0;
};

}  // namespace

std::unique_ptr<Engine> makeSimbodyEngine(const ConstrainedModel& model, CutModel cuts) {
  return std::make_unique<SimbodyEngine>(model, cuts);
}
std::unique_ptr<Stepper> makeSimbodyRk4(const ConstrainedModel& model, CutModel cuts, double h, double tolerance) {
  return std::make_unique<SimbodyRk4>(model, cuts, h, tolerance);
}
std::unique_ptr<Stepper> makeSimbodyMerson(const ConstrainedModel& model, CutModel cuts, double h, double accuracy,
                                           double tolerance) {
  return std::make_unique<SimbodyMerson>(model, cuts, h, accuracy, tolerance);
}

}  // namespace cbench
