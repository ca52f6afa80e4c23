// capstan::sim::AnyModel: a model behind virtual functions, with
// dynamic-size vectors -- what the simulation engine is compiled for once,
// so that a model's own program compiles only the model.
//
// The engine (capstan/sim/program.hpp: the simulate and eval modes of the
// program `capstan simulate` and `capstan eval` run, over the one loop of
// simulate.hpp and the one list of evaluate.hpp) is a translation unit that
// does not know the model: capstan compiles it once per runtime, compiler
// and flags, and links it to each model's own unit, which holds the
// generated class and Erased<Class>. A model's program then costs the
// compiler the model's code, not the integrators, the constraint solver,
// CVODE's adapter and the CSV writer again (about 3 of 16 s for the double
// pendulum at -O1).
//
// AnyModel is a capstan::sim::Model with every capability (model.hpp): a
// model without bushings has no bushingNames, one without cables ncables 0,
// one without constraints no constraintInfo; hasDerivatives() and
// splitDynamics() say at run time what the concepts say of a generated
// class at compile time. Its types are those of the interpreter's adapter
// (compiler/codegen/interpret.hpp, InterpretedModel).
//
// The cost of going through it: a virtual call and copies of q, u and the
// result per evaluation (O(nq + nu), against the dynamics' O(nu^2) and
// more); `capstan bench` times the generated class's functions directly.
#pragma once

#include <Eigen/Core>

#include <array>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "capstan/sim/model.hpp"

namespace capstan::cable {
struct ModelCableValues;
struct CablePathState;
}  // namespace capstan::cable

namespace capstan::sim {

class AnyModel {
 public:
  using Q = Eigen::VectorXd;                 // (nq)
  using U = Eigen::VectorXd;                 // (nu)
  using MassMatrix = Eigen::MatrixXd;        // (nu x nu)
  using ConstraintVector = Eigen::VectorXd;  // (constraint rows)
  using PositionErrors = Eigen::VectorXd;    // (holonomic rows)
  using ConstraintJacobian = Eigen::MatrixXd;  // (rows x nu)
  using OutputValues = std::vector<double>;  // (outputNames.size())
  using SpatialVector = Eigen::Matrix<double, 6, 1>;  // angular, then linear
  using ExternalForces = std::vector<SpatialVector>;  // (nb): [n; f] about each body origin, in World
  using FrameJacobian = Eigen::MatrixXd;     // (6 x nu)
  using CableValues = capstan::cable::ModelCableValues;
  struct BodyPose {  // X_WB: R_WB, p_WoBo_W (m)
    Eigen::Matrix3d R_WB = Eigen::Matrix3d::Identity();
    Eigen::Vector3d p_WB = Eigen::Vector3d::Zero();
  };
  struct BodyVelocity {  // w_WB (rad/s), v_WBo (m/s), in World
    Eigen::Vector3d w_WB = Eigen::Vector3d::Zero();
    Eigen::Vector3d v_WB = Eigen::Vector3d::Zero();
  };
  using BodyPoses = std::vector<BodyPose>;
  using BodyVelocities = std::vector<BodyVelocity>;
  struct BushingState {  // Drake's F_A_A (on A, about Ao, in A) and F_C_C (on C, about Co, in C)
    SpatialVector F_A_A = SpatialVector::Zero();
    SpatialVector F_C_C = SpatialVector::Zero();
  };
  using BushingStates = std::vector<BushingState>;
  struct ContactFrame {  // a sphere-on-sphere contact's frame C in World and the surfaces' separation (m)
    Eigen::Matrix3d R_WC = Eigen::Matrix3d::Identity();
    Eigen::Vector3d p_WC = Eigen::Vector3d::Zero();
    double separation = 0.0;
  };
  using ContactFrames = std::vector<ContactFrame>;
  struct ConstraintInfo {  // as the generated class's
    std::string name;
    int holonomicRow = 0, holonomic = 0, nonholonomicRow = 0, nonholonomic = 0;
  };

  // What a model is, fixed when it is made: sizes, the CSV's names and
  // units (SPEC section 6), its bushings, cables and constraints.
  struct Shape {
    int nq = 0, nu = 0, nb = 0, nf = 0, ncables = 0;
    std::vector<std::string> qNames, uNames, outputNames, bushingNames, cableNames;
    std::vector<std::string> qUnits, uUnits, outputUnits;
    std::vector<std::string> eventIndicatorNames;  // what eventIndicators reports: `contact.depth`, `rope.drum.contact`
    std::vector<ConstraintInfo> constraintInfo;
    bool derivatives = false;         // forwardDynamicsDerivatives
    bool inverseDerivatives = false;  // inverseDynamicsDerivatives
    bool split = false;               // appliedForces and bias (ConstraintSolver's split dynamics)
    bool articulated = false;         // forwardDynamics(t, q, u, udot, k) and solveMassMatrix
  };

  explicit AnyModel(Shape shape)
      : nq(shape.nq), nu(shape.nu), nb(shape.nb), nf(shape.nf), ncables(shape.ncables),
        qNames(std::move(shape.qNames)), uNames(std::move(shape.uNames)), outputNames(std::move(shape.outputNames)),
        bushingNames(std::move(shape.bushingNames)), cableNames(std::move(shape.cableNames)),
        qUnits(std::move(shape.qUnits)), uUnits(std::move(shape.uUnits)), outputUnits(std::move(shape.outputUnits)),
        eventIndicatorNames(std::move(shape.eventIndicatorNames)),
        constraintInfo(std::move(shape.constraintInfo)), derivatives_(shape.derivatives),
        inverseDerivatives_(shape.inverseDerivatives), split_(shape.split), articulated_(shape.articulated) {}
  AnyModel(const AnyModel&) = delete;
  AnyModel& operator=(const AnyModel&) = delete;
  virtual ~AnyModel() = default;

  const int nq, nu, nb, nf, ncables;
  const std::vector<std::string> qNames, uNames, outputNames, bushingNames, cableNames;
  const std::vector<std::string> qUnits, uUnits, outputUnits;
  const std::vector<std::string> eventIndicatorNames;
  const std::vector<ConstraintInfo> constraintInfo;
  bool hasDerivatives() const { return derivatives_; }
  bool hasInverseDerivatives() const { return inverseDerivatives_; }
  bool splitDynamics() const { return split_; }
  bool hasArticulatedFactor() const { return articulated_; }

  // The generated class's articulated-body factor (where
  // hasArticulatedFactor()): forwardDynamics(t, q, u, udot, k) fills it,
  // solveMassMatrix(k, x) applies M(q)^-1 to x's columns from it (the
  // constraint solver's path for few rows, docs/runtime.md). It holds the
  // class's own ArticulatedFactor, made by the first forwardDynamics call.
  struct ArticulatedFactor {
    struct Held {
      virtual ~Held() = default;
      virtual void solve(Eigen::MatrixXd& x) const = 0;
      virtual void solve(Eigen::VectorXd& x) const = 0;
    };
    std::shared_ptr<Held> held;
  };
  template <class Columns>
  static void solveMassMatrix(const ArticulatedFactor& k, Columns& x) {
    if (!k.held) throw std::logic_error("capstan::sim::AnyModel::solveMassMatrix: no forwardDynamics wrote the factor");
    k.held->solve(x);
  }

  // The generated class's functions of the same names (docs/generated-code.md).
  virtual void initialState(Q& q, U& u) const = 0;
  virtual bool setParameter(std::string_view name, double value) const = 0;
  virtual void qdot(const Q& q, const U& u, Q& qd) const = 0;
  virtual void forwardDynamics(double t, const Q& q, const U& u, U& udot) const = 0;
  virtual void forwardDynamics(double t, const Q& q, const U& u, const ExternalForces& fext, U& udot) const = 0;
  virtual void forwardDynamics(double t, const Q& q, const U& u, U& udot, ArticulatedFactor& k) const = 0;
  virtual void appliedForces(double t, const Q& q, const U& u, U& tau) const = 0;  // where splitDynamics()
  virtual void bias(const Q& q, const U& u, U& c) const = 0;                       // where splitDynamics()
  virtual void normalizeQuaternions(Q& q) const = 0;
  virtual double kineticEnergy(const Q& q, const U& u) const = 0;
  virtual double potentialEnergy(const Q& q) const = 0;
  virtual void outputValues(double t, const Q& q, const U& u, OutputValues& values) const = 0;
  virtual void massMatrix(const Q& q, MassMatrix& M) const = 0;
  virtual void bodyPoses(const Q& q, BodyPoses& poses) const = 0;
  virtual void bodyVelocities(const Q& q, const U& u, BodyVelocities& velocities) const = 0;
  virtual bool frameJacobian(int frame, const Q& q, FrameJacobian& J) const = 0;
  virtual bool frameJacobianDotU(int frame, const Q& q, const U& u, SpatialVector& JdotU) const = 0;
  virtual int gimbalLock(const Q& q, const U& u, double& pitch) const = 0;  // -1 without bushings
  virtual void bushingStates(const Q& q, const U& u, BushingStates& states) const = 0;
  virtual void contactFrames(const Q& q, ContactFrames& frames) const = 0;
  virtual void constraintPositionErrors(const Q& q, PositionErrors& e) const = 0;
  virtual void constraintVelocityErrors(const Q& q, const U& u, ConstraintVector& e) const = 0;
  virtual void constraintJacobian(const Q& q, ConstraintJacobian& G) const = 0;
  virtual void constraintBias(const Q& q, const U& u, ConstraintVector& gamma) const = 0;
  virtual int updateCables(double t, const Q& q, const U& u, ExternalForces& fext) const = 0;  // -1 without cables
  virtual const CableValues& cableValues(int c) const = 0;
  virtual const capstan::cable::CablePathState& cablePath(int c) const = 0;
  virtual void cableForces(int c, double t, const Q& q, const U& u, ExternalForces& fext) const = 0;
  virtual int cableFailure() const = 0;
  virtual std::string_view cableFailureMessage(double t) const = 0;
  virtual void forwardDynamicsDerivatives(double t, const Q& q, const U& u, MassMatrix& dudot_dq, MassMatrix& dudot_du,
                                          MassMatrix& dudot_dtau) const = 0;  // where hasDerivatives()
  virtual void inverseDynamicsDerivatives(double t, const Q& q, const U& u, const U& udot, MassMatrix& dtau_dq,
                                          MassMatrix& dtau_du, MassMatrix& M) const = 0;  // where hasInverseDerivatives()
  // y = [outputs; kinetic energy; potential energy]: dy_dq (rows x nq, raw
  // q) and dy_du (rows x nu); where hasDerivatives() (the same header).
  virtual void outputDerivatives(double t, const Q& q, const U& u, Eigen::MatrixXd& dy_dq,
                                 Eigen::MatrixXd& dy_du) const = 0;
  // The event indicators (eventIndicatorNames.size(), m): each compliant
  // contact's depth, each cable's wrap contact and spring stretch.
  virtual void eventIndicators(double t, const Q& q, const U& u, std::vector<double>& z) const = 0;

 private:
  const bool derivatives_, inverseDerivatives_, split_, articulated_;
};

namespace any_model_detail {
// An Eigen object (fixed or dynamic size) or std::array as a dynamic one.
template <class From, class To>
void assign(const From& from, To& to) {
  if constexpr (requires { to.resize(from.rows(), from.cols()); }) {
    to.resize(from.rows(), from.cols());
    to = from;
  } else {
    to.assign(from.begin(), from.end());
  }
}
[[noreturn]] inline void absent(const char* what) {
  throw std::logic_error(std::string("capstan::sim::Erased: the model has no ") + what);
}
template <class M>
constexpr bool kHasSplit = requires(const M& m, const typename M::Q& q, const typename M::U& u, typename M::U& out) {
  m.appliedForces(0.0, q, u, out);
  m.bias(q, u, out);
};
template <class M>
constexpr bool kHasArticulatedFactor = requires { typename M::ArticulatedFactor; };
template <class Names>
std::vector<std::string> strings(const Names& names) {
  return std::vector<std::string>(names.begin(), names.end());
}
}  // namespace any_model_detail

// A generated class M as an AnyModel: every call converts q and u to M's
// fixed-size vectors and the results back. `model` must outlive it; its
// parameters set through setParameter are model's own.
template <class M>
class Erased final : public AnyModel {
 public:
  explicit Erased(M& model) : AnyModel(shape()), model_(model) {}

  void initialState(Q& q, U& u) const override {
    typename M::Q qf;
    typename M::U uf;
    model_.initialState(qf, uf);
    q = qf;
    u = uf;
  }
  bool setParameter(std::string_view name, double value) const override {
    return capstan::sim::setParameter(model_, name, value);
  }
  void qdot(const Q& q, const U& u, Q& qd) const override {
    into<typename M::Q>(qd, [&](auto& out) { model_.qdot(typename M::Q(q), typename M::U(u), out); });
  }
  void forwardDynamics(double t, const Q& q, const U& u, U& udot) const override {
    into<typename M::U>(udot, [&](auto& out) { model_.forwardDynamics(t, typename M::Q(q), typename M::U(u), out); });
  }
  void forwardDynamics(double t, const Q& q, const U& u, const ExternalForces& fext, U& udot) const override {
    typename M::ExternalForces F;
    for (std::size_t b = 0; b < F.size(); ++b) F[b] = fext.at(b);
    into<typename M::U>(udot, [&](auto& out) { model_.forwardDynamics(t, typename M::Q(q), typename M::U(u), F, out); });
  }
  void forwardDynamics([[maybe_unused]] double t, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                       [[maybe_unused]] U& udot, [[maybe_unused]] ArticulatedFactor& k) const override {
    if constexpr (any_model_detail::kHasArticulatedFactor<M>) {
      auto* held = dynamic_cast<Factor*>(k.held.get());  // another model's factor is replaced
      if (held == nullptr) {
        auto made = std::make_shared<Factor>();
        held = made.get();
        k.held = std::move(made);
      }
      into<typename M::U>(
          udot, [&](auto& out) { model_.forwardDynamics(t, typename M::Q(q), typename M::U(u), out, held->factor); });
    } else {
      any_model_detail::absent("articulated factor");
    }
  }
  void appliedForces([[maybe_unused]] double t, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                     [[maybe_unused]] U& tau) const override {
    if constexpr (any_model_detail::kHasSplit<M>) {
      into<typename M::U>(tau, [&](auto& out) { model_.appliedForces(t, typename M::Q(q), typename M::U(u), out); });
    } else {
      any_model_detail::absent("appliedForces");
    }
  }
  void bias([[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, [[maybe_unused]] U& c) const override {
    if constexpr (any_model_detail::kHasSplit<M>) {
      into<typename M::U>(c, [&](auto& out) { model_.bias(typename M::Q(q), typename M::U(u), out); });
    } else {
      any_model_detail::absent("bias");
    }
  }
  void normalizeQuaternions(Q& q) const override {
    typename M::Q qf = q;
    model_.normalizeQuaternions(qf);
    q = qf;
  }
  double kineticEnergy(const Q& q, const U& u) const override {
    return model_.kineticEnergy(typename M::Q(q), typename M::U(u));
  }
  double potentialEnergy(const Q& q) const override { return model_.potentialEnergy(typename M::Q(q)); }
  void outputValues(double t, const Q& q, const U& u, OutputValues& values) const override {
    typename M::OutputValues out{};
    model_.outputValues(t, typename M::Q(q), typename M::U(u), out);
    values.assign(out.begin(), out.end());
  }
  void massMatrix(const Q& q, MassMatrix& mass) const override {
    into<typename M::MassMatrix>(mass, [&](auto& out) { model_.massMatrix(typename M::Q(q), out); });
  }
  void bodyPoses(const Q& q, BodyPoses& poses) const override {
    typename M::BodyPoses out;
    model_.bodyPoses(typename M::Q(q), out);
    poses.resize(out.size());
    for (std::size_t b = 0; b < out.size(); ++b) poses[b] = {out[b].R_WB, out[b].p_WB};
  }
  void bodyVelocities(const Q& q, const U& u, BodyVelocities& velocities) const override {
    typename M::BodyVelocities out;
    model_.bodyVelocities(typename M::Q(q), typename M::U(u), out);
    velocities.resize(out.size());
    for (std::size_t b = 0; b < out.size(); ++b) velocities[b] = {out[b].w_WB, out[b].v_WB};
  }
  bool frameJacobian(int frame, const Q& q, FrameJacobian& J) const override {
    typename M::FrameJacobian out;
    const bool ok = model_.frameJacobian(frame, typename M::Q(q), out);
    any_model_detail::assign(out, J);
    return ok;
  }
  bool frameJacobianDotU(int frame, const Q& q, const U& u, SpatialVector& JdotU) const override {
    return model_.frameJacobianDotU(frame, typename M::Q(q), typename M::U(u), JdotU);
  }
  int gimbalLock([[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                 [[maybe_unused]] double& pitch) const override {
    if constexpr (HasBushings<M>) {
      return model_.gimbalLock(typename M::Q(q), typename M::U(u), pitch);
    } else {
      return -1;
    }
  }
  void bushingStates([[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, BushingStates& states) const override {
    states.clear();
    if constexpr (HasBushings<M>) {
      typename M::BushingStates out;
      model_.bushingStates(typename M::Q(q), typename M::U(u), out);
      for (const auto& b : out) states.push_back({b.F_A_A, b.F_C_C});
    }
  }
  void contactFrames([[maybe_unused]] const Q& q, ContactFrames& frames) const override {
    frames.clear();
    if constexpr (HasContacts<M>) {
      typename M::ContactFrames out;
      model_.contactFrames(typename M::Q(q), out);
      for (const auto& c : out) frames.push_back({c.R_WC, c.p_WC, c.separation});
    }
  }
  void constraintPositionErrors([[maybe_unused]] const Q& q, PositionErrors& e) const override {
    if constexpr (HasConstraints<M>) {
      into<typename M::PositionErrors>(e, [&](auto& out) { model_.constraintPositionErrors(typename M::Q(q), out); });
    } else {
      e.resize(0);
    }
  }
  void constraintVelocityErrors([[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                                ConstraintVector& e) const override {
    if constexpr (HasConstraints<M>) {
      into<typename M::ConstraintVector>(
          e, [&](auto& out) { model_.constraintVelocityErrors(typename M::Q(q), typename M::U(u), out); });
    } else {
      e.resize(0);
    }
  }
  void constraintJacobian([[maybe_unused]] const Q& q, ConstraintJacobian& G) const override {
    if constexpr (HasConstraints<M>) {
      into<typename M::ConstraintJacobian>(G, [&](auto& out) { model_.constraintJacobian(typename M::Q(q), out); });
    } else {
      G.resize(0, nu);
    }
  }
  void constraintBias([[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                      ConstraintVector& gamma) const override {
    if constexpr (HasConstraints<M>) {
      into<typename M::ConstraintVector>(
          gamma, [&](auto& out) { model_.constraintBias(typename M::Q(q), typename M::U(u), out); });
    } else {
      gamma.resize(0);
    }
  }
  int updateCables([[maybe_unused]] double t, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                   [[maybe_unused]] ExternalForces& fext) const override {
    if constexpr (HasCables<M>) {
      typename M::ExternalForces out;
      const int failed = model_.updateCables(t, typename M::Q(q), typename M::U(u), out);
      fext.assign(out.begin(), out.end());
      return failed;
    } else {
      return -1;
    }
  }
  const CableValues& cableValues([[maybe_unused]] int c) const override {
    if constexpr (HasCables<M>) {
      return model_.cableValues(c);
    } else {
      any_model_detail::absent("cables");
    }
  }
  const capstan::cable::CablePathState& cablePath([[maybe_unused]] int c) const override {
    if constexpr (HasCables<M>) {
      return model_.cablePath(c);
    } else {
      any_model_detail::absent("cables");
    }
  }
  void cableForces([[maybe_unused]] int c, [[maybe_unused]] double t, [[maybe_unused]] const Q& q,
                   [[maybe_unused]] const U& u, [[maybe_unused]] ExternalForces& fext) const override {
    if constexpr (HasCables<M>) {
      into<typename M::ExternalForces>(
          fext, [&](auto& out) { model_.cableForces(c, t, typename M::Q(q), typename M::U(u), out); });
    } else {
      any_model_detail::absent("cables");
    }
  }
  int cableFailure() const override {
    if constexpr (HasCables<M>) {
      return model_.cableFailure();
    } else {
      return -1;
    }
  }
  std::string_view cableFailureMessage([[maybe_unused]] double t) const override {
    if constexpr (HasCables<M>) {
      message_ = std::string(model_.cableFailureMessage(t));
      return message_;
    } else {
      return {};
    }
  }
  void forwardDynamicsDerivatives([[maybe_unused]] double t, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                                  [[maybe_unused]] MassMatrix& dudot_dq, [[maybe_unused]] MassMatrix& dudot_du,
                                  [[maybe_unused]] MassMatrix& dudot_dtau) const override {
    if constexpr (HasDerivatives<M>) {
      typename M::MassMatrix dq, du, dtau;
      model_.forwardDynamicsDerivatives(t, typename M::Q(q), typename M::U(u), dq, du, dtau);
      any_model_detail::assign(dq, dudot_dq);
      any_model_detail::assign(du, dudot_du);
      any_model_detail::assign(dtau, dudot_dtau);
    } else {
      any_model_detail::absent("forwardDynamicsDerivatives");
    }
  }
  void inverseDynamicsDerivatives([[maybe_unused]] double t, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                                  [[maybe_unused]] const U& udot, [[maybe_unused]] MassMatrix& dtau_dq,
                                  [[maybe_unused]] MassMatrix& dtau_du, [[maybe_unused]] MassMatrix& mass) const override {
    if constexpr (HasInverseDerivatives<M>) {
      typename M::MassMatrix tq, tu, m;
      model_.inverseDynamicsDerivatives(t, typename M::Q(q), typename M::U(u), typename M::U(udot), tq, tu, m);
      any_model_detail::assign(tq, dtau_dq);
      any_model_detail::assign(tu, dtau_du);
      any_model_detail::assign(m, mass);
    } else {
      any_model_detail::absent("inverseDynamicsDerivatives");
    }
  }
  void eventIndicators([[maybe_unused]] double t, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                       std::vector<double>& z) const override {
    z.clear();
    if constexpr (HasEventIndicators<M>) {
      typename M::EventIndicators values{};
      model_.eventIndicators(t, typename M::Q(q), typename M::U(u), values);
      z.assign(values.begin(), values.end());
    }
  }
  void outputDerivatives([[maybe_unused]] double t, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u,
                         [[maybe_unused]] Eigen::MatrixXd& dy_dq, [[maybe_unused]] Eigen::MatrixXd& dy_du) const override {
    if constexpr (HasOutputDerivatives<M>) {
      typename M::OutputDerivativesQ dq;
      typename M::OutputDerivativesU du;
      model_.outputDerivatives(t, typename M::Q(q), typename M::U(u), dq, du);
      dy_dq = dq;
      dy_du = du;
    } else {
      any_model_detail::absent("outputDerivatives");
    }
  }

 private:
  static Shape shape() {
    using namespace any_model_detail;
    Shape s;
    s.nq = M::nq;
    s.nu = M::nu;
    s.nb = M::nb;
    s.nf = M::nf;
    s.qNames = strings(M::qNames);
    s.uNames = strings(M::uNames);
    s.outputNames = strings(M::outputNames);
    s.qUnits = strings(M::qUnits);
    s.uUnits = strings(M::uUnits);
    s.outputUnits = strings(M::outputUnits);
    if constexpr (HasBushings<M>) s.bushingNames = strings(M::bushingNames);
    if constexpr (HasEventIndicators<M>) s.eventIndicatorNames = strings(M::eventIndicatorNames);
    if constexpr (HasCables<M>) {
      s.ncables = M::ncables;
      s.cableNames = strings(M::cableNames);
    }
    if constexpr (HasConstraints<M>)
      for (const auto& c : M::constraintInfo)
        s.constraintInfo.push_back({std::string(c.name), c.holonomicRow, c.holonomic, c.nonholonomicRow, c.nonholonomic});
    s.derivatives = HasDerivatives<M>;
    s.inverseDerivatives = HasInverseDerivatives<M>;
    s.split = kHasSplit<M> && !HasCables<M>;
    s.articulated = kHasArticulatedFactor<M>;
    return s;
  }
  // M's factor behind AnyModel::ArticulatedFactor (instantiated only for
  // an M that has one).
  struct Factor final : ArticulatedFactor::Held {
    typename M::ArticulatedFactor factor{};
    void solve(Eigen::MatrixXd& x) const override { M::solveMassMatrix(factor, x); }
    void solve(Eigen::VectorXd& x) const override { M::solveMassMatrix(factor, x); }
  };
  // call(out) with `out` of M's type Out, then `out` into the dynamic-size `result`.
  template <class Out, class Result, class Call>
  static void into(Result& result, Call&& call) {
    Out out{};
    call(out);
    any_model_detail::assign(out, result);
  }

  M& model_;
  mutable std::string message_;
};

}  // namespace capstan::sim
