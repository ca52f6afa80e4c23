// The reference interpreter: the generated functions' one implementation
// (functions.hpp) run over double on the model's runtime Mechanism<double>
// (no code generation). `capstan simulate
// --interpret`, `capstan eval --interpret` and the tests that check the
// generated code use it.
#pragma once

#include <Eigen/Core>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <capstan/constraint_solver.hpp>
#include <capstan/constraints.hpp>
#include <capstan/cable/model.hpp>
#include <capstan/force_elements.hpp>
#include <capstan/dynamics.hpp>
#include <capstan/mechanism.hpp>

#include "codegen/layout.hpp"

namespace capstan::codegen {

template <class Scalar>
class Environment;
template <class Scalar>
struct FunctionValues;
template <class Scalar>
struct ForceDerivatives;
enum class FunctionId;

// The model's external C++ functions, compiled (cli/external.hpp): the
// result of FlatModel::functions[function] for its C++ arguments in call
// order. An exception it throws becomes ExternalCallFailed at the call.
using ExternalFunctions = std::function<double(int function, const std::vector<double>& args)>;

// A cable's path could not be found (the generated class's cableFailure()).
struct CableFailed : std::runtime_error {
  CableFailed(const CableLayout& c, const capstan::cable::CableResult& r, std::string message)
      : std::runtime_error(std::move(message)), cable(&c), result(r) {}
  const CableLayout* cable;
  capstan::cable::CableResult result;
};

// One cable at a state (eval's "cables"): its values, its forces alone on
// the bodies (about their origins, in World), its solved path.
struct CableEvaluation {
  capstan::cable::ModelCableValues values;
  capstan::ExternalForces<double> F_Bo_W;  // per body
  capstan::cable::CablePathState path;
};

// d udot / d(q, u, tau) (forwardDynamicsDerivatives), each nu x nu, row i = udot[i].
struct DynamicsDerivatives {
  Eigen::MatrixXd dudot_dq;    // along the tangent space: column j along q + eps N(q) e_j
  Eigen::MatrixXd dudot_du;
  Eigen::MatrixXd dudot_dtau;  // M^-1: for a generalized force added to the applied tau
};

// d tau / d(q, u, udot) of inverseDynamics (inverseDynamicsDerivatives), each nu x nu.
struct InverseDynamicsDerivatives {
  Eigen::MatrixXd dtau_dq;  // along the tangent space, as DynamicsDerivatives::dudot_dq
  Eigen::MatrixXd dtau_du;
  Eigen::MatrixXd M;        // d tau / d udot
};

class Interpreter {
 public:
  // `parameters[k]`: the values of layout.parameters[k] (its defaults if empty).
  // Without `external`, evaluating a call to an external function throws
  // UnsupportedExpression.
  Interpreter(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
              std::vector<std::vector<double>> parameters = {}, std::vector<double> inputs = {},
              ExternalFunctions external = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Sets a runtime parameter element by its model name (`L1`,
  // `world.gravity[3]`: RuntimeParameter::elementName), as the generated
  // class's parameter() does; false for a name that is none. What depends
  // on the parameters (the mechanism, the cables' constants) is made again,
  // and the cables' paths start afresh.
  bool setParameter(std::string_view name, double value);

  const capstan::Mechanism<double>& mechanism() const { return mechanism_; }
  int nq() const { return mechanism_.nq; }
  int nu() const { return mechanism_.nu; }

  void initialState(Eigen::VectorXd& q, Eigen::VectorXd& u);
  Eigen::MatrixXd massMatrix(const Eigen::VectorXd& q);
  Eigen::VectorXd bias(const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  Eigen::VectorXd appliedForces(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  // (law, value) for every law of layout.evaluatedForceLaws(): what
  // locates a non-finite generalized force or cable tension.
  std::vector<std::pair<int, double>> forceLawValues(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  Eigen::VectorXd forwardDynamics(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  // The same with external spatial forces on the bodies, one per body in
  // bodyStates' order (capstan::ExternalForces: [n; f] about the body
  // origin, in World), besides the model's applied forces.
  Eigen::VectorXd forwardDynamics(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                  const capstan::ExternalForces<double>& fext);
  // The derivatives of forwardDynamics(t, q, u) as the generated code
  // computes them: the analytical recursions (dynamics_derivatives.hpp),
  // the force laws' and elements' own derivatives by dual numbers. Throws
  // UnsupportedExpression where a force law's external C++ function has an
  // argument that varies.
  DynamicsDerivatives forwardDynamicsDerivatives(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  // The oracle: the forward dynamics run with forward-mode dual numbers
  // (dual.hpp), one direction per run (3 nu runs), exact to round-off.
  DynamicsDerivatives forwardDynamicsDerivativesByDuals(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  // The derivatives of inverseDynamics(q, u, udot) (the force elements' forces included).
  InverseDynamicsDerivatives inverseDynamicsDerivatives(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                                        const Eigen::VectorXd& udot);
  // M udot + C (force laws not subtracted).
  Eigen::VectorXd inverseDynamics(const Eigen::VectorXd& q, const Eigen::VectorXd& u, const Eigen::VectorXd& udot);
  Eigen::VectorXd qdot(const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  double kineticEnergy(const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  double potentialEnergy(const Eigen::VectorXd& q);
  // X_WB and [w_WB; v_WBo] (in World) of every body.
  void bodyStates(const Eigen::VectorXd& q, const Eigen::VectorXd& u, std::vector<capstan::Transform<double>>& X_WB,
                  std::vector<capstan::Vec6<double>>& V_WB);
  // J_WF (6 x nu) and Jdot_WF u (6) of frame layout.jacobianFrames[frame].
  Eigen::MatrixXd frameJacobian(int frame, const Eigen::VectorXd& q);
  capstan::Vec6<double> frameJacobianDotU(int frame, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  // Each bushing's forces and angles (layout.forceElements order); throws
  // GimbalLock (functions.hpp) for one at gimbal lock.
  std::vector<capstan::BushingForces<double>> bushingStates(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  std::vector<double> outputs(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  // Every constraint's rows at (q, u) (capstan/constraints.hpp; rows as
  // layout.constraints gives them), with the contacts' frames.
  capstan::ConstraintRows<double> constraintRows(const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  // Every cable at (q, u) (layout.cables order), each path continued from
  // its last solution, as the generated class's updateCables; throws
  // CableFailed for a path that cannot be found. forwardDynamics and
  // potentialEnergy include the cables' forces and springs' energy.
  std::vector<CableEvaluation> cables(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  void normalizeQuaternions(Eigen::VectorXd& q) const;
  const ModelLayout& layout() const { return layout_; }
  // The cables' constants at the parameters (layout.cables order).
  const std::vector<capstan::cable::ModelCable>& cableModels() const { return cables_; }
  // The model's expressions (force laws, outputs) over double.
  Environment<double>& environment() { return *env_; }

 private:
  // The force laws' and elements' derivatives at (t, q, u), by dual numbers.
  ForceDerivatives<double> forceDerivatives(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);
  // The analytical derivative function `id` at (t, q, u, udot), with the
  // external forces fext held fixed for ForwardDynamicsDerivativesExternal.
  FunctionValues<double> derivatives(FunctionId id, double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                     const Eigen::VectorXd& udot, const capstan::ExternalForces<double>& fext = {});
  // The change of the cables' generalized forces at the paths `each` (this
  // state's, from cableForces) along N(q) e_j and by u_j, added into dtau_dq
  // and dtau_du: the cable frames' derivatives by dual numbers, then
  // capstan::cable::evaluateModelCableDerivatives, as the generated class's
  // cableDerivatives. Throws UnsupportedExpression for a wrap with friction.
  void cableForceDerivatives(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                             const std::vector<CableEvaluation>& each, Eigen::MatrixXd& dtau_dq,
                             Eigen::MatrixXd& dtau_du);
  // Runs generated function `id` (functions.hpp) on the arguments.
  FunctionValues<double> run(FunctionId id, double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u);

  // The cables' forces on the bodies at (q, u) (none: empty), their
  // springs' energy into `energy` when given.
  capstan::ExternalForces<double> cableForces(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                              double* energy = nullptr, std::vector<CableEvaluation>* each = nullptr);

  // Makes what depends on the parameters' values: the expressions'
  // environment, the mechanism, the cables' constants.
  void build();

  std::vector<std::vector<double>> parameters_;
  std::vector<capstan::cable::ModelCable> cables_;           // layout.cables order
  std::vector<capstan::cable::CablePathState> cableStates_;  // their warm starts
  std::vector<double> inputs_;
  std::unique_ptr<Environment<double>> env_;
  capstan::Mechanism<double> mechanism_;
  // The model over dual numbers, made on the first forwardDynamicsDerivatives.
  struct DualModel;
  std::unique_ptr<DualModel> dual_;
  // The model over dual numbers (made on first use).
  DualModel& dual();
  const sema::FlatModel& model_;
  const mechanics::Mechanism& mech_;
  const ModelLayout& layout_;
  ExternalFunctions external_;
};

// The interpreter as a capstan::sim::Model (capstan/sim/model.hpp), with
// dynamic sizes: what `simulate --interpret` runs through the same loop as
// a generated class, and capstan/constraint_solver.hpp's Model. It mirrors
// the generated class's API: faults are values (gimbalLock(),
// cableFailure()), not the interpreter's exceptions; an external C++
// function's ExternalCallFailed still propagates.
class InterpretedModel {
 public:
  using Q = Eigen::VectorXd;
  using U = Eigen::VectorXd;
  using MassMatrix = Eigen::MatrixXd;
  using ConstraintVector = Eigen::VectorXd;
  using PositionErrors = Eigen::VectorXd;
  using ConstraintJacobian = Eigen::MatrixXd;
  using OutputValues = std::vector<double>;
  using ExternalForces = capstan::ExternalForces<double>;
  using CableValues = capstan::cable::ModelCableValues;
  using FrameJacobian = Eigen::MatrixXd;                 // (6 x nu)
  using SpatialVector = capstan::Vec6<double>;
  struct BodyPose {                                      // X_WB
    Eigen::Matrix3d R_WB;
    Eigen::Vector3d p_WB;
  };
  struct BodyVelocity {                                  // World, about the body origin
    Eigen::Vector3d w_WB, v_WB;
  };
  using BodyPoses = std::vector<BodyPose>;
  using BodyVelocities = std::vector<BodyVelocity>;
  using BushingStates = std::vector<capstan::BushingForces<double>>;
  using ContactFrames = std::vector<capstan::ContactGeometry<double>>;
  // A constraint's name and rows, as the generated class's ConstraintInfo.
  struct ConstraintInfo {
    std::string name;
    int holonomicRow = 0, holonomic = 0, nonholonomicRow = 0, nonholonomic = 0;
  };

  explicit InterpretedModel(Interpreter& interpreter);

  const int nq, nu, nb, nf, ncables;
  const std::vector<std::string> qNames, uNames, outputNames, bushingNames, cableNames;
  const std::vector<std::string> qUnits, uUnits, outputUnits;  // as the generated class's
  const std::vector<ConstraintInfo> constraintInfo;

  void initialState(Q& q, U& u) const { interp_.initialState(q, u); }
  void qdot(const Q& q, const U& u, Q& qd) const { qd = interp_.qdot(q, u); }
  // udot; NaN, with cableFailure() set, where a cable's path is lost.
  void forwardDynamics(double t, const Q& q, const U& u, U& udot) const;
  void forwardDynamics(double t, const Q& q, const U& u, const ExternalForces& fext, U& udot) const;
  void bodyPoses(const Q& q, BodyPoses& poses) const;
  void bodyVelocities(const Q& q, const U& u, BodyVelocities& velocities) const;
  // Frame `frame` of layout.jacobianFrames (bodies first, as frameNames).
  bool frameJacobian(int frame, const Q& q, FrameJacobian& J) const {
    J = interp_.frameJacobian(frame, q);
    return true;
  }
  bool frameJacobianDotU(int frame, const Q& q, const U& u, SpatialVector& JdotU) const {
    JdotU = interp_.frameJacobianDotU(frame, q, u);
    return true;
  }
  // (a bushing's forces do not depend on time)
  void bushingStates(const Q& q, const U& u, BushingStates& states) const { states = interp_.bushingStates(0.0, q, u); }
  void contactFrames(const Q& q, ContactFrames& frames) const { frames = rows(q).contacts; }
  void massMatrix(const Q& q, MassMatrix& M) const { M = interp_.massMatrix(q); }
  void normalizeQuaternions(Q& q) const { interp_.normalizeQuaternions(q); }
  double kineticEnergy(const Q& q, const U& u) const { return interp_.kineticEnergy(q, u); }
  double potentialEnergy(const Q& q) const { return interp_.potentialEnergy(q); }
  void outputValues(double t, const Q& q, const U& u, OutputValues& values) const {
    values = interp_.outputs(t, q, u);
  }
  // A runtime parameter element by its model name (Interpreter::setParameter).
  bool setParameter(std::string_view name, double value) const { return interp_.setParameter(name, value); }
  void forwardDynamicsDerivatives(double t, const Q& q, const U& u, MassMatrix& dudot_dq, MassMatrix& dudot_du,
                                  MassMatrix& dudot_dtau) const;
  void inverseDynamicsDerivatives(double t, const Q& q, const U& u, const U& udot, MassMatrix& dtau_dq,
                                  MassMatrix& dtau_du, MassMatrix& M) const;
  // The first bushing (index in bushingNames) at gimbal lock, or -1.
  int gimbalLock(const Q& q, const U& u, double& pitch) const;
  // As the generated class's: every path solved by continuation; the first
  // cable whose path is lost, or -1 (fext is left empty: eval's cables
  // give the forces).
  int updateCables(double t, const Q& q, const U& u, ExternalForces& fext) const;
  const CableValues& cableValues(int c) const { return lastCables_.at(static_cast<std::size_t>(c)).values; }
  // Cable c's path at the last updateCables, and its forces alone on the bodies.
  const capstan::cable::CablePathState& cablePath(int c) const { return lastCables_.at(static_cast<std::size_t>(c)).path; }
  void cableForces(int c, double t, const Q& q, const U& u, ExternalForces& fext) const;
  int cableFailure() const { return failedCable_; }
  std::string cableFailureMessage(double) const { return cableFailure_; }
  void constraintPositionErrors(const Q& q, PositionErrors& e) const { e = rows(q).positionErrors; }
  void constraintVelocityErrors(const Q& q, const U& u, ConstraintVector& e) const {
    e = interp_.constraintRows(q, u).velocityErrors;
  }
  void constraintJacobian(const Q& q, ConstraintJacobian& G) const { G = rows(q).G; }
  void constraintBias(const Q& q, const U& u, ConstraintVector& gamma) const {
    gamma = interp_.constraintRows(q, u).gamma;
  }

 private:
  capstan::ConstraintRows<double> rows(const Q& q) const {
    return interp_.constraintRows(q, Eigen::VectorXd::Zero(interp_.nu()));
  }
  // Runs `evaluate`, an evaluation that may solve the cables' paths:
  // a path that is lost is recorded (cableFailure()) as the generated
  // class does, and the result is false.
  template <class Evaluate>
  bool solvingCables(Evaluate&& evaluate) const;
  Interpreter& interp_;
  mutable std::vector<CableEvaluation> lastCables_;
  mutable int failedCable_ = -1;
  mutable std::string cableFailure_;
};

// The force laws and outputs that code generation cannot translate, each at
// its place in the model: every one is translated once, with the
// interpreter, at the initial state (external functions are not run: only
// their form is checked, at their `external` clause).
std::vector<Unsupported> untranslatable(const sema::FlatModel& model, const mechanics::Mechanism& mech,
                                        const ModelLayout& layout);

}  // namespace capstan::codegen
