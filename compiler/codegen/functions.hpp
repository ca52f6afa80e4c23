// The functions every generated model class has, in one table that the
// tracer (trace.cpp), the interpreter (interpret.cpp) and the IR follow —
// their names, typed arguments and results, and documentation — and one
// implementation over Scalar (FunctionEvaluator::run) that the interpreter
// runs with double and the tracer with symbolic::Expr. A new function is one
// table row and one case of run(); the tracer then says how its values are
// cut into blocks, and the template renders whatever the IR lists.
#pragma once

#include <capstan/constraints.hpp>
#include <capstan/dynamics_derivatives.hpp>
#include <capstan/dynamics.hpp>
#include <capstan/local_dynamics.hpp>

#include <functional>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include "codegen/assemble.hpp"

namespace capstan::codegen {

// The C++ types of arguments and results (members of the generated class,
// docs/generated-code.md), and what each holds.
enum class ValueType {
  Time,            // double (s)
  Q,               // (nq) generalized coordinates
  U,               // (nu) generalized speeds, accelerations or forces
  MassMatrix,      // (nu x nu)
  BodyPoses,       // X_WB of every body
  BodyVelocities,  // w_WB, v_WBo of every body, in World
  Outputs,         // the model's outputs
  Energy,          // double (J), returned
  Point,           // Eigen::Vector3d: a point of a body, in its frame (m)
  FrameJacobian,   // (6 x nu): angular rows, then linear
  FrameKinematics,  // what frame Jacobians are made from: every body's pose, velocity and
                    // acceleration at udot = 0, each dof's column H_PB_W
  EventIndicators,  // one per compliant contact: its penetration depth (m), > 0 in contact
  OutputDerivativesQ,  // (nout + 2) x nq: d[outputs; kinetic energy; potential energy] / dq (raw q)
  OutputDerivativesU,  // (nout + 2) x nu: the same by u
  MassMatrixKinematics,  // what the compact mass matrix is made from: every body's origin,
                         // each dof's column H_PB_W and unit force Mc_Bo_W H_PB_W, armatures
  SpatialVector,   // (6): angular, then linear
  BushingStates,   // one BushingState per bushing
  ExternalForces,  // one spatial force [n; f] per body (N*m, N): the moment about the
                   // body origin, then the force, in World (capstan::ExternalForces)
  PositionErrors,      // (holonomic constraint rows) phi_p(q)
  ConstraintVector,    // (constraint rows): velocity errors, gamma or multipliers
  ConstraintJacobian,  // (rows x nu) G(q)
  ContactFrames,       // one ContactFrame per sphere-on-sphere contact: R_WC, p_WC, separation
  CableFrames,     // per obstacle of every cable: the motion of its frame F in World
                   // and p_BoFo_W (capstan::cable::ModelCable's inputs)
  CableFrameDerivatives,  // dq, du ((6 obstacles + actuators) x nu): d(w_WF, v_WFo, tension)
                          // along N(q) e_j and by u_j, each cable's rows together
  ArticulatedFactor,  // what the articulated-body passes leave for solveMassMatrix: per body
                      // R_PK, p_PK; per dof S, U = IA S and (S^T IA S)^-1 (the template's struct)
  JointKinematics,  // what the tree recursions as loops read at (q, u) (TraceOptions::recursions
                    // loops): per body its joint frame in its parent's and its joint's S-rate
                    // term; per dof S
  JointConstants,   // and what they read of the parameters only: per body its inertia and
                    // body frame in its joint frame; per dof its armature; gravity
};

struct FunctionArgument {
  ValueType type;
  const char* name;  // as in the generated signature: "q", "udot"
};

enum class FunctionId {
  MassMatrix,
  Bias,
  AppliedForces,
  ForwardDynamics,
  ForwardDynamicsExternal,  // forwardDynamics with external forces on the bodies
  // forwardDynamics by ABA keeping its articulated factor, for the
  // template's solveMassMatrix (M^-1 in O(n)): only in classes of models
  // with constraint rows and no cables (the constraint solver's few-rows path).
  ForwardDynamicsFactor,
  InverseDynamics,
  Qdot,
  BodyPoses,
  BodyVelocities,
  KineticEnergy,
  PotentialEnergy,
  Outputs,
  InitialState,
  FrameJacobian,
  FrameJacobianDotU,
  FrameKinematics,            // poses and dof columns, for frameJacobian(frame, k, J)
  FrameKinematicsVelocities,  // also velocities and bias accelerations, for frameJacobianDotU(frame, k, ...)
  MassMatrixKinematics,       // for massMatrix as a loop (TraceOptions::quadratic compact)
  // The inputs of the tree recursions as loops (TraceOptions::recursions
  // loops): private, only in such classes, with the force elements' forces.
  JointKinematics,
  JointConstants,
  ElementForces,
  BushingStates,
  EventIndicators,  // only in classes of models with compliant (Hunt-Crossley) contacts
  CableFrames,  // only in classes of models with cables
  ForwardDynamicsDerivatives,  // d udot / d(q, u, tau): only on request (TraceOptions::derivatives)
  // The same at fixed external forces on the bodies, and the cable frames'
  // derivatives: with cables, what the template's forwardDynamicsDerivatives
  // and outputDerivatives assemble the cables' derivatives from.
  ForwardDynamicsDerivativesExternal,
  CableFrameDerivatives,
  InverseDynamicsDerivatives,  // d tau / d(q, u, udot) of inverseDynamics: only on request
  OutputDerivatives,  // d[outputs; energies] / d(q, u): only on request
  // Constraint rows (capstan/constraints.hpp): only in classes of models
  // with constraint rows; ContactFrames only with contacts.
  ConstraintPositionErrors,
  ConstraintVelocityErrors,
  ConstraintJacobian,
  ConstraintBias,
  ConstraintForces,
  ContactFrames,
};

// Whether function `id` exists only for models with constraint rows.
constexpr bool isConstraintFunction(FunctionId id) {
  return id == FunctionId::ConstraintPositionErrors || id == FunctionId::ConstraintVelocityErrors ||
         id == FunctionId::ConstraintJacobian || id == FunctionId::ConstraintBias ||
         id == FunctionId::ConstraintForces || id == FunctionId::ContactFrames;
}

struct GeneratedFunction {
  FunctionId id;
  const char* name;
  std::vector<FunctionArgument> arguments;  // read
  std::vector<FunctionArgument> results;    // written; an Energy is returned
  std::vector<std::string> doc;             // the generated doc comment's lines
  // One function per moving body, named `name` + the body's identifier
  // (`frameJacobianLink2Body`), for frames fixed to that body.
  bool perBody = false;
  // For a second function of the same name (an overload): a word that
  // tells it apart. key() = name + overload is unique in the table; the
  // IR's `key` and a split function's workspace struct are named after it.
  const char* overload = "";
  // Emitted only when asked for (`compile --derivatives`, `eval
  // --derivatives`), so that other models' headers and compile times stay
  // as they were.
  bool onRequest = false;

  std::string key() const { return std::string(name) + overload; }

  // The C++ parameter list: `[[maybe_unused]] const Q& q, MassMatrix& M`
  // (arguments may go unread in a particular model; results are written,
  // except Outputs when a model has none).
  std::string parameters() const;
  // `double` for an Energy result, else `void`.
  std::string returnType() const;
};

// Every generated function but updateDerived (which exists only for models
// with cached parameter-only values, derived.hpp), in emission order.
const std::vector<GeneratedFunction>& generatedFunctions();
const GeneratedFunction& generatedFunction(FunctionId id);

// The arguments and results of one call, over Scalar. Only those of the
// function run are read or written.
template <class Scalar>
struct FunctionValues {
  Scalar time = Scalar(0.0);
  VectorX<Scalar> q, u;
  MatrixX<Scalar> M;
  VectorX<Scalar> C, tau, udot, qdot;  // bias, applied or inverse-dynamics forces, accelerations, qdot
  std::vector<Transform<Scalar>> X_WB;
  std::vector<Vec6<Scalar>> V_WB;
  ExternalForces<Scalar> fext;  // per body (forwardDynamics with external forces)
  Scalar energy = Scalar(0.0);
  std::vector<Scalar> outputs;
  int body = -1;        // perBody functions: the runtime body
  Vec3<Scalar> point = Vec3<Scalar>::Zero();  // p_BoFo_B (m)
  MatrixX<Scalar> J;    // J_WF (6 x nu)
  // frameKinematics: H_PB_W of every dof (6 x nu, column u_index), and per
  // body Abias_WB (A_WB at udot = 0); with X_WB and V_WB above.
  MatrixX<Scalar> H_W;
  std::vector<Vec6<Scalar>> Abias_WB;
  // massMatrixKinematics: each dof's F_W = Mc_Bo_W H_PB_W (6 x nu), the
  // force about its body's origin, in World, that gives the body's subtree
  // a unit acceleration along it from rest; each dof's armature (nu).
  MatrixX<Scalar> F_W;
  VectorX<Scalar> armature;
  // jointKinematics with u: each body's joint term of c, S-rate u (in K).
  std::vector<Vec6<Scalar>> cJ;
  Vec6<Scalar> JdotU = Vec6<Scalar>::Zero();  // Jdot_WF u
  std::vector<BushingForces<Scalar>> bushings;  // per bushing, in layout.forceElements order
  std::vector<Scalar> indicators;  // per Hunt-Crossley contact, in layout.forceElements order: its depth
  // Per obstacle of every cable (layout.cables, each from firstFrame): the
  // motion of its frame F and p_BoFo_W.
  std::vector<FrameMotion<Scalar>> cableFrames;
  std::vector<Vec3<Scalar>> cableOffsets;
  // Per cable actuator of every cable (each from firstActuator): the
  // `tension` its force law gives (N, 0 without one).
  std::vector<Scalar> cableTensions;
  // forwardDynamicsDerivatives: a generalized force added to the applied
  // tau (empty: none), the variable of d udot / d tau.
  VectorX<Scalar> dtau;
  // The derivative functions (dynamics_derivatives.hpp), each nu x nu:
  // inverseDynamics' d tau / dq (along N(q)), d tau / du and d tau / d udot
  // = M; forwardDynamics' d udot / d(q, u, tau). dudot_* are written over
  // double only (the tracer leaves the dense solve to run time, from
  // M and dr_dq, dr_du = d(inverseDynamics - appliedForces) at udot).
  MatrixX<Scalar> dtau_dq, dtau_du, dr_dq, dr_du, dudot_dq, dudot_du, dudot_dtau;
  // With FunctionEvaluator::derivativePairs: the pair terms' factors, which
  // dtau_dq, dtau_du, dr_dq, dr_du and M then leave out.
  local::DerivativePairs<Scalar> pairs;
  // outputDerivatives' y = [outputs; kinetic energy; potential energy] at
  // (time, q, u) (the tracer differentiates them).
  std::vector<Scalar> columns;
  // Constraint functions: the rows at (q, u) (positionErrors,
  // velocityErrors, G, gamma, contacts), and for constraintForces the
  // multipliers read (lambda) and the forces written (bodyForces per body,
  // tau = -G^T lambda).
  ConstraintRows<Scalar> constraints;
  VectorX<Scalar> lambda;
  std::vector<Vec6<Scalar>> bodyForces;
};


// How the dynamics are computed: the algorithm, and whether about joint
// frames (local_dynamics.hpp, the production family) or about body origins
// in World (dynamics.hpp). The tracer tries each and emits the cheapest.
struct DynamicsMethod {
  bool aba = true;          // else CRBA + tree-sparse L^T D L
  bool jointFrames = true;  // else World
  // forwardDynamicsDerivatives: the analytical recursions
  // (dynamics_derivatives.hpp); else only udot(q, u, tau + dtau), for an
  // oracle that differentiates it (symbolically, or by dual numbers).
  bool analyticDerivatives = true;
};

// The derivatives of the state-dependent forces along each tangent
// direction, for the derivative functions: the force laws' applied tau and
// the force elements' external forces (World, about Bo, per body). Column j
// of q is along q + eps N(q) e_j. Empty when the model has neither.
template <class Scalar>
struct ForceDerivatives {
  MatrixX<Scalar> dtau_dq, dtau_du;                 // (nu x nu) of appliedForces
  std::vector<ExternalForces<Scalar>> dF_dq, dF_du;  // per column, per body
};

// The one implementation of the generated functions over Scalar.
template <class Scalar>
class FunctionEvaluator {
 public:
  FunctionEvaluator(const Mechanism<Scalar>& mechanism, Environment<Scalar>& env)
      : mechanism_(mechanism), env_(env), world(mechanism), joint(mechanism), derivative(mechanism) {}

  // Runs on each joint-frame workspace before an algorithm (the tracer
  // replaces its parameter stage by cached symbols).
  std::function<void(local::Data<Scalar>&)> prepare;
  // The derivatives of the state-dependent forces at v's (time, q, u) given
  // their values there (applied tau, the elements' fext, empty if none):
  // small expressions each caller differentiates its own way (the tracer
  // symbolically, the interpreter by dual numbers). Unset: none.
  std::function<ForceDerivatives<Scalar>(const FunctionValues<Scalar>& v, const VectorX<Scalar>& tau,
                                          const std::vector<Vec6<Scalar>>& fext)>
      forceDerivatives;
  // forwardDynamicsDerivatives' udot: false, by ABA (the interpreter's, an
  // independent check); true, solved for with the M^-1 the derivatives need
  // anyway (local::inverseDynamicsDerivativesAtForwardDynamics; v.dudot_dtau
  // = M^-1 then comes with it): the tracer's while it traces M^-1.
  bool udotFromMassMatrix = false;
  // The derivative functions' pair terms (local::DerivativePairs) left out
  // of the results and their factors in v.pairs: the tracer's while it
  // emits the pairs' sum as a loop (the compact form). Not with
  // udotFromMassMatrix, whose M^-1 needs the whole M.
  bool derivativePairs = false;

  // The force elements' external forces at (time, q, u); empty when the
  // model has none, so tree models trace exactly as without them.
  std::vector<Vec6<Scalar>> elementForces(FunctionValues<Scalar>& v) {
    if (env_.layout().forceElements.empty()) return {};
    env_.setState(v.time, v.q, v.u);
    return env_.elementForces(check()).fext;
  }
  // Over double, a bushing at gimbal lock stops the evaluation.
  auto check() {
    return [](const ForceElementLayout& e, const BushingForces<Scalar>& f) {
      if constexpr (std::is_same_v<Scalar, double>) {
        if (f.cosPitch < kGimbalLockCos) throw GimbalLock(e, f.q[1]);
      }
    };
  }

  // Computes function `id`'s results in `v` from its arguments.
  void run(FunctionId id, FunctionValues<Scalar>& v, DynamicsMethod method = {}) {
    world = Data<Scalar>(mechanism_);
    joint = local::Data<Scalar>(mechanism_);
    joint.articulatedFactor = id == FunctionId::ForwardDynamicsFactor;  // its U and D^-1 are emitted
    if (prepare) prepare(joint);
    switch (id) {
      case FunctionId::MassMatrix:
        v.M = method.jointFrames ? local::crba(mechanism_, joint, v.q) : crba(mechanism_, world, v.q);
        return;
      case FunctionId::Bias:
        v.C = method.jointFrames ? local::nonlinearEffects(mechanism_, joint, v.q, v.u)
                                 : nonlinearEffects(mechanism_, world, v.q, v.u);
        return;
      case FunctionId::AppliedForces:
        env_.setState(v.time, v.q, v.u);
        v.tau = env_.appliedForces();
        return;
      case FunctionId::ForwardDynamics:
      case FunctionId::ForwardDynamicsExternal:
      case FunctionId::ForwardDynamicsFactor:  // the same udot (the tracer keeps the factor, trace.cpp)
      // What forwardDynamicsDerivatives differentiates: udot(q, u, tau + dtau).
      // The derivative is the Scalar's part: the tracer differentiates the
      // traced DAG (symbolic::jacobian), the interpreter seeds dual numbers
      // (dual.hpp) along one direction per run.
      case FunctionId::ForwardDynamicsDerivatives: {
        if (id == FunctionId::ForwardDynamicsDerivatives && method.analyticDerivatives) {
          derivatives(id, v);
          return;
        }
        env_.setState(v.time, v.q, v.u);
        v.tau = env_.appliedForces();
        if (id == FunctionId::ForwardDynamicsDerivatives && v.dtau.size() > 0) v.tau += v.dtau;
        // The force elements' forces, plus the caller's for the overload.
        std::vector<Vec6<Scalar>> fext = elementForces(v);
        if (id == FunctionId::ForwardDynamicsExternal) {
          if (fext.empty()) {
            fext = v.fext;
          } else {
            for (std::size_t b = 0; b < fext.size(); ++b) fext[b] += v.fext.at(b);
          }
        }
        if (fext.empty()) {
          if (method.jointFrames) {
            v.udot = method.aba ? local::aba(mechanism_, joint, v.q, v.u, v.tau)
                                : local::forwardDynamics(mechanism_, joint, v.q, v.u, v.tau);
          } else {
            v.udot = method.aba ? aba(mechanism_, world, v.q, v.u, v.tau)
                                : forwardDynamics(mechanism_, world, v.q, v.u, v.tau);
          }
        } else if (method.jointFrames) {
          v.udot = method.aba ? local::aba(mechanism_, joint, v.q, v.u, v.tau, fext)
                              : local::forwardDynamics(mechanism_, joint, v.q, v.u, v.tau, fext);
        } else {
          v.udot = method.aba ? aba(mechanism_, world, v.q, v.u, v.tau, fext)
                              : forwardDynamics(mechanism_, world, v.q, v.u, v.tau, fext);
        }
        return;
      }
      case FunctionId::InverseDynamicsDerivatives:
      case FunctionId::ForwardDynamicsDerivativesExternal:
        derivatives(id, v);
        return;
      case FunctionId::OutputDerivatives: {
        FunctionValues<Scalar> w = v;
        run(FunctionId::Outputs, w);
        v.columns = w.outputs;
        run(FunctionId::KineticEnergy, w);
        v.columns.push_back(w.energy);
        run(FunctionId::PotentialEnergy, w);
        v.columns.push_back(w.energy);
        return;
      }
      case FunctionId::InverseDynamics:
        // Joint frames only: the World family has no Newton-Euler with udot.
      {
        // Less what the force elements apply: inverse(forward) = the force laws' tau.
        const std::vector<Vec6<Scalar>> fext = elementForces(v);
        v.tau = local::inverseDynamics(mechanism_, joint, v.q, v.u, v.udot, fext.empty() ? nullptr : &fext);
        return;
      }
      case FunctionId::Qdot:
        qdotFromU(mechanism_, v.q, v.u, v.qdot);
        return;
      case FunctionId::BodyPoses:
        forwardKinematics(mechanism_, world, v.q);
        v.X_WB = world.X_WB;
        return;
      case FunctionId::BodyVelocities:
        forwardKinematics(mechanism_, world, v.q, v.u);
        v.V_WB = world.V_WB;
        return;
      case FunctionId::KineticEnergy:
        forwardKinematics(mechanism_, world, v.q, v.u);
        v.energy = kineticEnergy(mechanism_, world, v.u);
        return;
      case FunctionId::PotentialEnergy:
        forwardKinematics(mechanism_, world, v.q);
        v.energy = potentialEnergy(mechanism_, world);
        if (!env_.layout().forceElements.empty()) {
          // Elastic energy depends on q only: read at u = 0.
          v.u = VectorX<Scalar>::Constant(mechanism_.nu, Scalar(0.0));
          env_.setState(v.time, v.q, v.u);
          v.energy += env_.elementForces().energy;
        }
        return;
      case FunctionId::BushingStates:
        env_.setState(v.time, v.q, v.u);
        v.bushings.clear();
        for (const ForceElementLayout& e : env_.layout().forceElements) {
          if (e.kind != mechanics::ForceKind::Bushing) continue;
          v.bushings.push_back(env_.bushingForces(e));
          check()(e, v.bushings.back());
        }
        return;
      case FunctionId::EventIndicators:
        env_.setState(v.time, v.q, v.u);
        v.indicators.clear();
        for (const ForceElementLayout& e : env_.layout().forceElements)
          if (e.kind == mechanics::ForceKind::HuntCrossley) v.indicators.push_back(env_.huntCrossleyForces(e).depth);
        return;
      case FunctionId::CableFrames:
      case FunctionId::CableFrameDerivatives:  // the frames, which the tracer differentiates
        env_.setState(v.time, v.q, v.u);
        v.cableFrames.clear();
        v.cableOffsets.clear();
        v.cableTensions.clear();
        for (const CableLayout& c : env_.layout().cables) {
          for (const CableObstacleLayout& o : c.obstacles) {
            v.cableFrames.push_back(env_.frameMotion(o.frame));
            v.cableOffsets.push_back(env_.frameOffset(o.frame));
          }
          for (const CableLayout::Actuator& a : c.actuators)
            v.cableTensions.push_back(a.law < 0 ? Scalar(0.0) : env_.lawValue(a.law));
        }
        return;
      case FunctionId::Outputs:
        env_.setState(v.time, v.q, v.u);
        v.outputs.clear();
        for (std::size_t k = 0; k < env_.layout().outputs.size(); ++k) v.outputs.push_back(env_.output(static_cast<int>(k)));
        return;
      case FunctionId::FrameJacobian:
        forwardKinematics(mechanism_, world, v.q);
        frameJacobian(mechanism_, world, v.body, v.point, v.J);
        return;
      case FunctionId::FrameJacobianDotU:
        forwardKinematics(mechanism_, world, v.q, v.u);
        v.JdotU = frameJacobianDotU(mechanism_, world, v.body, v.point);
        return;
      case FunctionId::FrameKinematics:
      case FunctionId::FrameKinematicsVelocities:
      case FunctionId::MassMatrixKinematics:
        if (id != FunctionId::FrameKinematicsVelocities) {
          forwardKinematics(mechanism_, world, v.q);
        } else {
          forwardKinematics(mechanism_, world, v.q, v.u);
          v.V_WB = world.V_WB;
          v.Abias_WB = world.Abias_WB;
        }
        v.X_WB = world.X_WB;
        v.H_W = MatrixX<Scalar>::Constant(6, mechanism_.nu, Scalar(0.0));
        for (std::size_t b = 0; b < mechanism_.joints.size(); ++b) {
          const Joint<Scalar>& joint = mechanism_.joints[b];
          for (int c = 0; c < joint.nu(); ++c) v.H_W.col(joint.uOffset + c) = world.H_PB_W[b].col(c);
        }
        if (id == FunctionId::MassMatrixKinematics) {
          detail::compositeInertias(mechanism_, world);
          v.F_W = MatrixX<Scalar>::Constant(6, mechanism_.nu, Scalar(0.0));
          v.armature = VectorX<Scalar>::Constant(mechanism_.nu, Scalar(0.0));
          for (std::size_t b = 0; b < mechanism_.joints.size(); ++b) {
            const Joint<Scalar>& joint = mechanism_.joints[b];
            for (int c = 0; c < joint.nu(); ++c) {
              v.F_W.col(joint.uOffset + c) = world.Mc_Bo_W[b] * Vec6<Scalar>(world.H_PB_W[b].col(c));
              v.armature[joint.uOffset + c] = joint.armature;
            }
          }
        }
        return;
      case FunctionId::JointKinematics:
        // The joint frames, subspaces and each joint's own S-rate term.
        local::positionKinematics(mechanism_, joint, v.q);
        v.cJ.assign(mechanism_.joints.size(), Vec6<Scalar>::Zero());
        for (std::size_t b = 0; b < mechanism_.joints.size(); ++b) {
          const Joint<Scalar>& j = mechanism_.joints[b];
          if (j.nu() == 0) continue;
          const Vec6<Scalar> vJ = joint.S[b] * v.u.segment(j.uOffset, j.nu());
          v.cJ[b] = local::detail::subspaceRate(j, joint.S[b], vJ, v.u);
        }
        return;
      case FunctionId::JointConstants:
        // The parameter stage (joint.I_K) and the mechanism's: the tracer
        // reads them there.
        return;
      case FunctionId::ElementForces:
        v.fext = elementForces(v);
        return;
      case FunctionId::ConstraintPositionErrors:
      case FunctionId::ConstraintVelocityErrors:
      case FunctionId::ConstraintJacobian:
      case FunctionId::ConstraintBias:
      case FunctionId::ContactFrames:
      case FunctionId::ConstraintForces:
        // Functions of q alone are run at u = 0 (the tracer passes u's
        // symbols; they do not reach the values these read).
        forwardKinematics(mechanism_, world, v.q, v.u);
        v.constraints = evaluateConstraints(mechanism_, world, env_.constraints(), &v.q, &v.u);
        if (id == FunctionId::ConstraintForces) {
          v.bodyForces = constraintBodyForces(mechanism_, v.constraints, v.lambda);
          v.tau = -v.constraints.G.transpose() * v.lambda;
        }
        return;
      case FunctionId::InitialState:
        // As the parameters give them; the caller normalizes quaternions
        // (the generated function's last statement, the interpreter's).
        env_.initialState(v.q, v.u);
        return;
    }
  }


 private:
  const Mechanism<Scalar>& mechanism_;
  Environment<Scalar>& env_;

 public:
  // The algorithms' workspaces after the last run (the tracer cuts their
  // per-joint quantities into blocks).
  Data<Scalar> world;
  local::Data<Scalar> joint;
  local::Data<Scalar> derivative;  // the derivative recursions' (joint keeps ABA's)

 private:
  // forwardDynamicsDerivatives and inverseDynamicsDerivatives by the
  // analytical recursions (dynamics_derivatives.hpp): inverseDynamics'
  // derivatives at fixed forces, plus the force elements' (as -J^T dF) and,
  // for forward dynamics, less the force laws': the residual r = inverse
  // dynamics - applied forces, at ABA's udot; then -M^-1 dr (double only).
  // ForwardDynamicsDerivativesExternal adds v.fext to the elements' forces,
  // held fixed (in World, about the body origins).
  void derivatives(FunctionId id, FunctionValues<Scalar>& v) {
    env_.setState(v.time, v.q, v.u);
    const VectorX<Scalar> applied = env_.appliedForces();
    const std::vector<Vec6<Scalar>> elements = elementForces(v);
    std::vector<Vec6<Scalar>> fext = elements;
    if (id == FunctionId::ForwardDynamicsDerivativesExternal) {
      if (fext.empty()) fext = v.fext;
      else
        for (std::size_t b = 0; b < fext.size(); ++b) fext[b] += v.fext.at(b);
    }
    const ExternalForces<Scalar>* F = fext.empty() ? nullptr : &fext;
    const bool forward = id != FunctionId::InverseDynamicsDerivatives;
    const bool solve = forward && udotFromMassMatrix;
    if (forward) v.tau = applied;
    if (forward && !solve) v.udot = local::aba(mechanism_, joint, v.q, v.u, applied, F);
    derivative = local::Data<Scalar>(mechanism_);
    if (prepare) prepare(derivative);
    if (derivativePairs) {
      if (solve) throw std::logic_error("derivativePairs with udotFromMassMatrix");
      local::inverseDynamicsDerivativesFactored(mechanism_, derivative, v.q, v.u, v.udot, F, v.dtau_dq, v.dtau_du,
                                                v.pairs);
    } else if (solve) {
      local::inverseDynamicsDerivativesAtForwardDynamics(mechanism_, derivative, v.q, v.u, applied, F, v.udot,
                                                         v.dudot_dtau, v.dtau_dq, v.dtau_du);
    } else {
      local::inverseDynamicsDerivatives(mechanism_, derivative, v.q, v.u, v.udot, F, v.dtau_dq, v.dtau_du,
                                        /*massMatrix=*/true);
    }
    ForceDerivatives<Scalar> d;
    const bool hasLaws = !env_.layout().forceLaws.empty();
    if (forceDerivatives && (!elements.empty() || hasLaws)) d = forceDerivatives(v, applied, elements);
    for (int j = 0; j < mechanism_.nu; ++j) {
      if (!d.dF_dq.empty()) local::addExternalForceDerivative(mechanism_, derivative, d.dF_dq[static_cast<std::size_t>(j)], v.dtau_dq, j);
      if (!d.dF_du.empty()) local::addExternalForceDerivative(mechanism_, derivative, d.dF_du[static_cast<std::size_t>(j)], v.dtau_du, j);
    }
    v.M = derivative.M;
    if (!forward) return;
    v.dr_dq = v.dtau_dq;
    v.dr_du = v.dtau_du;
    if (d.dtau_dq.size() > 0) v.dr_dq -= d.dtau_dq;
    if (d.dtau_du.size() > 0) v.dr_du -= d.dtau_du;
    if constexpr (std::is_arithmetic_v<Scalar>) {
      if (derivativePairs) return;  // the products need the pairs' terms
      if (solve) {
        local::forwardDynamicsDerivativesFromMinv(v.dudot_dtau, v.dr_dq, v.dr_du, v.dudot_dq, v.dudot_du);
      } else {
        local::forwardDynamicsDerivativesFromInverse(derivative, v.M, v.dr_dq, v.dr_du, v.dudot_dq, v.dudot_du,
                                                     v.dudot_dtau);
      }
    }
  }
};

}  // namespace capstan::codegen
