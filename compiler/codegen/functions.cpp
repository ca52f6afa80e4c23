#include "codegen/functions.hpp"

#include <stdexcept>

namespace capstan::codegen {

namespace {

const char* cppType(ValueType t) {
  switch (t) {
    case ValueType::Time: return "double";
    case ValueType::Q: return "Q";
    case ValueType::U: return "U";
    case ValueType::MassMatrix: return "MassMatrix";
    case ValueType::BodyPoses: return "BodyPoses";
    case ValueType::BodyVelocities: return "BodyVelocities";
    case ValueType::Outputs: return "Outputs";
    case ValueType::Energy: return "double";
    case ValueType::Point: return "Eigen::Vector3d";
    case ValueType::FrameJacobian: return "FrameJacobian";
    case ValueType::FrameKinematics: return "FrameKinematics";
    case ValueType::MassMatrixKinematics: return "MassMatrixKinematics";
    case ValueType::EventIndicators: return "EventIndicators";
    case ValueType::OutputDerivativesQ: return "OutputDerivativesQ";
    case ValueType::OutputDerivativesU: return "OutputDerivativesU";
    case ValueType::SpatialVector: return "SpatialVector";
    case ValueType::BushingStates: return "BushingStates";
    case ValueType::ExternalForces: return "ExternalForces";
    case ValueType::PositionErrors: return "PositionErrors";
    case ValueType::ConstraintVector: return "ConstraintVector";
    case ValueType::ConstraintJacobian: return "ConstraintJacobian";
    case ValueType::ContactFrames: return "ContactFrames";
    case ValueType::CableFrames: return "CableFrames";
    case ValueType::CableFrameDerivatives: return "CableFrameDerivatives";
    case ValueType::ArticulatedFactor: return "ArticulatedFactor";
    case ValueType::JointKinematics: return "JointKinematics";
    case ValueType::JointConstants: return "JointConstants";
  }
  throw std::logic_error("cppType: unknown value type");
}

using T = ValueType;

}  // namespace

std::string GeneratedFunction::parameters() const {
  std::string out;
  auto add = [&](const std::string& p) { out += (out.empty() ? "" : ", ") + p; };
  for (const FunctionArgument& a : arguments) {
    const std::string type = cppType(a.type);
    add("[[maybe_unused]] " + (a.type == T::Time ? type : "const " + type + "&") + " " + a.name);
  }
  for (const FunctionArgument& r : results) {
    if (r.type == T::Energy) continue;
    add(std::string(r.type == T::Outputs ? "[[maybe_unused]] " : "") + cppType(r.type) + "& " + r.name);
  }
  return out;
}

std::string GeneratedFunction::returnType() const {
  for (const FunctionArgument& r : results)
    if (r.type == T::Energy) return "double";
  return "void";
}

const std::vector<GeneratedFunction>& generatedFunctions() {
  static const std::vector<GeneratedFunction> table = {
      {FunctionId::MassMatrix, "massMatrix", {{T::Q, "q"}}, {{T::MassMatrix, "M"}},
       {"M(q) (nu x nu), symmetric positive definite, by the composite-rigid-body algorithm."}},
      {FunctionId::Bias, "bias", {{T::Q, "q"}, {T::U, "u"}}, {{T::U, "C"}},
       {"C(q, u) (nu): Coriolis, centrifugal and gravity generalized forces, so that",
        "M udot = tau - C; by recursive Newton-Euler."}},
      {FunctionId::AppliedForces, "appliedForces", {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}}, {{T::U, "tau"}},
       {"tau (nu): the generalized forces of the model's force laws (`joint.tau = ...`)."}},
      // Its doc comment names the method chosen (trace.cpp).
      {FunctionId::ForwardDynamics, "forwardDynamics", {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}}, {{T::U, "udot"}},
       {}},
      // The same with external spatial forces (runtime/include/capstan/
      // dynamics.hpp's ExternalForces); its doc comment names the method too.
      {FunctionId::ForwardDynamicsExternal, "forwardDynamics",
       {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}, {T::ExternalForces, "fext"}}, {{T::U, "udot"}}, {}, false, "External"},
      {FunctionId::ForwardDynamicsFactor, "forwardDynamics", {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}},
       {{T::U, "udot"}, {T::ArticulatedFactor, "k"}},
       {"udot (nu) = M^-1 (tau - C) by the articulated-body algorithm in joint frames, as",
        "forwardDynamics(time, q, u, udot), keeping in k what solveMassMatrix(k, x) needs to apply",
        "M(q)^-1 to more vectors in O(n) each: every body's joint frame in its parent's and every",
        "dof's S, U = IA S and (S^T IA S)^-1 column. The constraint solver's path for few rows."},
       false, "Factor"},
      {FunctionId::InverseDynamics, "inverseDynamics", {{T::Q, "q"}, {T::U, "u"}, {T::U, "udot"}}, {{T::U, "tau"}},
       {"tau (nu) = M(q) udot + C(q, u): the generalized forces that give the accelerations udot",
        "(recursive Newton-Euler in joint frames). The model's force laws are not subtracted:",
        "inverseDynamics(q, u, udot) = appliedForces(time, q, u) for udot = forwardDynamics(time, q, u)."}},
      {FunctionId::Qdot, "qdot", {{T::Q, "q"}, {T::U, "u"}}, {{T::Q, "qd"}}, {"qdot (nq) = N(q) u."}},
      {FunctionId::BodyPoses, "bodyPoses", {{T::Q, "q"}}, {{T::BodyPoses, "poses"}},
       {"X_WB of every body (its `frame_a`) in World."}},
      {FunctionId::BodyVelocities, "bodyVelocities", {{T::Q, "q"}, {T::U, "u"}}, {{T::BodyVelocities, "velocities"}},
       {"w_WB and v_WBo of every body, in World."}},
      {FunctionId::KineticEnergy, "kineticEnergy", {{T::Q, "q"}, {T::U, "u"}}, {{T::Energy, "ke"}},
       {"Kinetic energy 1/2 u^T M u (J)."}},
      {FunctionId::PotentialEnergy, "potentialEnergy", {{T::Q, "q"}}, {{T::Energy, "pe"}},
       {"Gravitational potential energy -sum m g . p_WoBcm (J), zero at the World origin."}},
      {FunctionId::Outputs, "outputs", {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}}, {{T::Outputs, "out"}},
       {"The model's `output` variables."}},
      {FunctionId::InitialState, "initialState", {}, {{T::Q, "q"}, {T::U, "u"}},
       {"The initial state from the joints' q0 and u0 parameters (quaternions normalized)."}},
      {FunctionId::FrameJacobian, "frameJacobian", {{T::Q, "q"}, {T::Point, "p_BoFo_B"}}, {{T::FrameJacobian, "J"}},
       {"J_WF (6 x nu) of the frame F of this body with origin p_BoFo_B (m, in the body frame):",
        "[w_WF; v_WFo] = J_WF u, angular rows then linear, in World. frameJacobian(frame, ...)",
        "below takes a frame by its index in frameNames."},
       true},
      {FunctionId::FrameJacobianDotU, "frameJacobianDotU", {{T::Q, "q"}, {T::U, "u"}, {T::Point, "p_BoFo_B"}},
       {{T::SpatialVector, "JdotU"}},
       {"Jdot_WF u (6): the classical acceleration [dw_WF; a_WFo] of that frame's origin when",
        "udot = 0, in World (Simbody's calcBiasForFrameJacobian), so A_WF = J_WF udot + Jdot_WF u."},
       true},
      // Kinematics once, then any frame's J and Jdot u from it (the
      // template's frameJacobian(frame, k, J) and frameJacobianDotU(frame, k, JdotU)).
      {FunctionId::FrameKinematics, "frameKinematics", {{T::Q, "q"}}, {{T::FrameKinematics, "k"}},
       {"What frameJacobian(frame, k, J) reads, for any number of frames at one q: every body's",
        "R_WB and p_WB, and each dof's column H_W (6 x nu) of the joint it belongs to, about that",
        "joint's body origin, in World. k.V_WB and k.Abias_WB are left as they were."}},
      {FunctionId::FrameKinematicsVelocities, "frameKinematics", {{T::Q, "q"}, {T::U, "u"}},
       {{T::FrameKinematics, "k"}},
       {"The same, and what frameJacobianDotU(frame, k, JdotU) reads too: every body's spatial",
        "velocity V_WB = [w_WB; v_WBo] and its acceleration at udot = 0, Abias_WB, in World."},
       false, "Velocities"},
      // Only where massMatrix is compact (trace.cpp): the template's
      // massMatrix(q, M) loops over what this writes.
      {FunctionId::MassMatrixKinematics, "massMatrixKinematics", {{T::Q, "q"}}, {{T::MassMatrixKinematics, "k"}},
       {"What massMatrix assembles M from: every body's p_WB, each dof's column H_W and its unit",
        "force F_W = Mc_Bo_W H_W (its body's composite inertia, about the body origin, in World),",
        "each dof's armature."}},
      // Only where the tree recursions are loops (trace.cpp): the template's
      // bodyPoses, bias, forwardDynamics, ... loop over what these write.
      {FunctionId::JointKinematics, "jointKinematics", {{T::Q, "q"}, {T::U, "u"}}, {{T::JointKinematics, "k"}},
       {"What the tree recursions read at (q, u): every body's joint frame K in its parent's and its",
        "joint's own velocity-product term cJ = (rate of S's components in K) u; each dof's column",
        "of S (in K). Functions of q alone pass u = 0."}},
      {FunctionId::JointConstants, "jointConstants", {}, {{T::JointConstants, "c"}},
       {"What the tree recursions read of the parameters only (jointConstants() keeps it until",
        "params change): every body's inertia about Ko and its frame B, in its joint frame K;",
        "each dof's armature; gravity."}},
      {FunctionId::ElementForces, "elementForces", {{T::Q, "q"}, {T::U, "u"}}, {{T::ExternalForces, "fext"}},
       {"The force elements' (springs', bushings', compliant contacts') spatial forces on the bodies,",
        "fext[b] = [n; f] about each body origin, in World."}},
      // Only in classes of models with bushings (trace.cpp).
      {FunctionId::BushingStates, "bushingStates", {{T::Q, "q"}, {T::U, "u"}}, {{T::BushingStates, "out"}},
       {"Each bushing's state (bushingNames order): Drake's spatial forces F_A_A (on A, about Ao,",
        "in A) and F_C_C (on C, about Co, in C), its roll-pitch-yaw angles and rates, and",
        "|cos pitch|, which gimbalLock() compares with Drake's 0.008."}},
      // Only in classes of models with Hunt-Crossley contacts (trace.cpp).
      {FunctionId::EventIndicators, "eventIndicators", {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}},
       {{T::EventIndicators, "z"}},
       {"Each compliant contact's penetration depth x (m; eventIndicatorNames order): > 0 where its",
        "surfaces touch, < 0 apart. Where one changes sign the contact force switches on or off, so",
        "an integrator that stops there (an FMU's event indicators) steps over no impact."}},
      // Only in classes of models with cables (trace.cpp).
      {FunctionId::CableFrames, "cableFrames", {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}}, {{T::CableFrames, "frames"}},
       {"Each cable obstacle's frame F (cableObstacleNames order, all cables together): R_WF,",
        "p_WoFo_W, w_WF and v_WFo_W in World, and p_BoFo_W, Fo from the origin of the body F is",
        "fixed to; each cable actuator's `tension` as its force law gives it (N, before the",
        "runtime clamps it at 0): what capstan::cable::evaluateModelCable solves the paths from."}},
      // Only on request (trace.cpp); MassMatrix is the (nu x nu) type.
      {FunctionId::ForwardDynamicsDerivatives, "forwardDynamicsDerivatives",
       {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}},
       {{T::MassMatrix, "dudot_dq"}, {T::MassMatrix, "dudot_du"}, {T::MassMatrix, "dudot_dtau"}},
       {"The derivatives of forwardDynamics' udot (nu) at (time, q, u), each nu x nu, row i = udot[i]:",
        "dudot_dq along the tangent space, column j = d udot / d eps along q + eps N(q) e_j",
        "(N(q) = d qdot / d u: for a Ball or Free joint a small rotation w_FM in F, as its u);",
        "dudot_du; dudot_dtau = M(q)^-1, for a generalized force added to the applied tau.",
        "By the analytical derivatives of inverse dynamics (a tangent recursion of Newton-Euler in",
        "joint frames), the force laws' and force elements' own derivatives and d udot = -M^-1 dtau."},
       false, "", true},
      // Only in classes of models with cables, on request (trace.cpp): named
      // forwardDynamicsDerivativesWithoutCables there.
      {FunctionId::ForwardDynamicsDerivativesExternal, "forwardDynamicsDerivatives",
       {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}, {T::ExternalForces, "fext"}},
       {{T::MassMatrix, "dudot_dq"}, {T::MassMatrix, "dudot_du"}, {T::MassMatrix, "dudot_dtau"}},
       {"forwardDynamicsDerivatives' derivatives with the spatial forces fext[b] = [n; f] on the",
        "bodies (about each body origin, in World) added and held fixed as q and u change: the",
        "cables' forces, whose own change forwardDynamicsDerivatives adds (docs/cables.md)."},
       false, "External", true},
      {FunctionId::CableFrameDerivatives, "cableFrameDerivatives", {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}},
       {{T::CableFrameDerivatives, "d"}},
       {"The derivatives of cableFrames' w_WF, v_WF (World) and actuator tensions, cable by cable",
        "(cable c's rows from 6 cableFirstObstacle[c] + cableFirstActuator[c]): its obstacle i's w_WF",
        "then v_WF at rows 6i .. 6i+5 of them, then its actuators' tensions; d.dq's column j along",
        "q + eps N(q) e_j at fixed u, d.du's by u_j (the frames' Jacobians). Exact: the traced frames",
        "differentiated symbolically."},
       false, "", true},
      {FunctionId::InverseDynamicsDerivatives, "inverseDynamicsDerivatives",
       {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}, {T::U, "udot"}},
       {{T::MassMatrix, "dtau_dq"}, {T::MassMatrix, "dtau_du"}, {T::MassMatrix, "M"}},
       {"The derivatives of inverseDynamics' tau (nu) at (q, u, udot), each nu x nu, row i = tau[i]:",
        "dtau_dq along the tangent space, column j = d tau / d eps along q + eps N(q) e_j (as",
        "forwardDynamicsDerivatives' dudot_dq); dtau_du; M = d tau / d udot. The force elements'",
        "forces (subtracted by inverseDynamics) are differentiated with it; the force laws are not",
        "in inverseDynamics. dtau_i / dq_j and dtau_i / du_j are zero unless dofs i and j lie on",
        "one path to the root."},
       false, "", true},
      {FunctionId::OutputDerivatives, "outputDerivatives", {{T::Time, "time"}, {T::Q, "q"}, {T::U, "u"}},
       {{T::OutputDerivativesQ, "dy_dq"}, {T::OutputDerivativesU, "dy_du"}},
       {"The derivatives of y = [the model's outputs (outputNames order); kineticEnergy(q, u);",
        "potentialEnergy(q)] at (time, q, u): dy_dq (rows x nq) by the raw coordinates q (a",
        "quaternion's four numbers each), dy_du (rows x nu). Exact: the traced outputs and energies",
        "differentiated symbolically."},
       false, "", true},
      {FunctionId::ConstraintPositionErrors, "constraintPositionErrors", {{T::Q, "q"}}, {{T::PositionErrors, "perr"}},
       {"phi_p(q) (holonomic rows): each constraint's position errors (constraintInfo gives its",
        "rows): a cut joint's offsets (m) along and angles (dot products) across the directions its",
        "type forbids; a contact's signed separation of the sphere surfaces (m). Zero when satisfied."}},
      {FunctionId::ConstraintVelocityErrors, "constraintVelocityErrors", {{T::Q, "q"}, {T::U, "u"}},
       {{T::ConstraintVector, "verr"}},
       {"phi_v(q, u) = G(q) u (rows): the holonomic rows' time derivatives, then the rolling",
        "contacts' slip velocities (m/s) along their Cx and Cy."}},
      {FunctionId::ConstraintJacobian, "constraintJacobian", {{T::Q, "q"}}, {{T::ConstraintJacobian, "G"}},
       {"G(q) (rows x nu) = d phi_v / d u; its structural zeros are not written (set to zero once)."}},
      {FunctionId::ConstraintBias, "constraintBias", {{T::Q, "q"}, {T::U, "u"}}, {{T::ConstraintVector, "gamma"}},
       {"gamma(q, u) (rows): the right-hand side of G udot = gamma, minus the rows' acceleration",
        "at udot = 0 (-Gdot u)."}},
      {FunctionId::ConstraintForces, "constraintForces", {{T::Q, "q"}, {T::ConstraintVector, "lambda"}},
       {{T::ExternalForces, "bodyForces"}, {T::U, "tau"}},
       {"What multipliers lambda (rows; Simbody's sign: M udot = tau - C - G^T lambda) apply:",
        "bodyForces[b] = [n; f] on body b, the moment about its origin then the force, in World",
        "(Simbody's calcConstraintForcesFromMultipliers), and the generalized forces tau = -G^T lambda."}},
      {FunctionId::ContactFrames, "contactFrames", {{T::Q, "q"}}, {{T::ContactFrames, "frames"}},
       {"Each sphere-on-sphere contact's frame C (Simbody's findContactFrameInG): z from the center",
        "of sphere F towards that of sphere B, origin Co on the center line at rf / (rf + rb),",
        "x and y fixed on F for the pose; and the signed separation of the surfaces (findSeparation)."}},
  };
  return table;
}

const GeneratedFunction& generatedFunction(FunctionId id) {
  for (const GeneratedFunction& f : generatedFunctions())
    if (f.id == id) return f;
  throw std::logic_error("generatedFunction: not in the table");
}

}  // namespace capstan::codegen
