// The layout of a model for code generation: which flat variables become
// runtime parameters, which are recomputed from their bindings and which are
// folded; the tree joints and bodies in runtime (tree) order with their state
// names; inputs, outputs and force laws. Everything here is decided once, from
// the flat model and the mechanism, and shared by the interpreter and the
// tracer so both build the same runtime Mechanism.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mechanics/mechanism.hpp"
#include "sema/flat.hpp"

namespace capstan::codegen {

enum class VariableRole {
  Runtime,    // an independent parameter: a field of the generated `Parameters`
  Dependent,  // a parameter whose binding refers to other variables: recomputed
  Folded,     // a constant, `Evaluate = true`, structural or non-Real: its value is compiled in
  Input,      // a field of the generated `Inputs`
  Output,     // computed from its binding
  State,      // a joint's q or u
  Frame,      // a frame quantity of a connector (`tip.frame_b.r`): from the kinematics
  Other,      // anything else (unsupported in expressions)
};

struct RuntimeParameter {
  int variable = -1;
  std::string name;               // the model path: `link[2].L`
  std::string ident;              // the C++ field: `link_2_L`
  std::vector<int> shape;         // {} scalar, {3}, {3,3}
  std::vector<double> defaults;   // row-major
  std::string unit, description;
  std::size_t size() const { return defaults.size(); }
  // The model name of element k (row-major): `L` for a scalar, `axis[2]`,
  // `I[1,3]` (1-based subscripts). What `--set`, STATE.json, the generated
  // class's parameter() and the interpreter's setParameter() take.
  std::string elementName(std::size_t k) const;
};

struct IoVariable {
  int variable = -1;
  std::string name, ident, unit, description;
};

// A tree joint in runtime order: the mechanics' JointInfo — the one
// description of the joint (type, frames, state offsets) — plus what code
// generation adds: its runtime body and parent indices and its state names.
struct JointLayout {
  const mechanics::JointInfo* info = nullptr;  // into the Mechanism the layout was made from
  int mechJoint = -1;             // index into mechanics::Mechanism::joints
  std::string name;               // component path
  int body = -1;                  // runtime body index (== this joint's index)
  int parent = -1;                // runtime parent body, -1 for World
  std::vector<std::string> qNames, uNames;   // `shoulder.q[1]` (SPEC §6)

  int component() const { return info->component; }
  mechanics::JointType type() const { return info->type; }
  int qIndex() const { return info->qIndex; }
  int uIndex() const { return info->uIndex; }
  int nq() const { return info->nq; }
  int nu() const { return info->nu; }
  bool reversed() const { return info->reversed; }
};

struct BodyLayout {
  int mechBody = -1;              // index into mechanics::Mechanism::bodies
  std::string name;               // `link[2].body`
  std::string ident;              // monogram suffix: `Link2Body` (as in X_WLink2Body)
};

// A frame whose Jacobian the generated class gives (frameJacobian, eval's
// "jacobians"): every moving body's own frame, then every connector frame
// fixed to a moving body that is not a body frame.
struct JacobianFrame {
  std::string name;  // `link[2].body` (as eval's "bodies") or `tip.frame_b`
  int body = -1;     // runtime body
  int frame = -1;    // index into mechanics::Mechanism::frames; -1: the body frame itself
};

// A frame quantity that force laws and outputs read (the stdlib's `Frame`
// connector), measured and expressed in World.
enum class FrameQuantity {
  r,  // p_WoFo_W (m), 3
  R,  // R_WF, 3x3 row-major
  v,  // v_WFo_W (m/s), 3
  w,  // w_WF_W (rad/s), 3
};

struct FrameQuantityRef {
  int frame = -1;                 // index into mechanics::Mechanism::frames
  FrameQuantity quantity = FrameQuantity::r;
};

// A force element between two frames (SPEC §4 `Spring`, `Bushing`): its
// forces enter the dynamics as external forces on the frames' bodies.
struct ForceElementLayout {
  mechanics::ForceKind kind = mechanics::ForceKind::Spring;
  std::string name;               // component path: `mount`
  int component = -1;
  int frameA = -1, frameC = -1;   // index into mechanics::Mechanism::frames: `frame_a`, `frame_b`
  int bodyA = -1, bodyC = -1;     // runtime bodies, -1 for World
  int surfaceA = -1, surfaceC = -1;  // HuntCrossley: the surfaces' components (frames A, C are theirs)
};

// A bushing within about 0.458 degrees of gimbal lock (|cos pitch| <
// kGimbalLockCos), where Drake's LinearBushingRollPitchYaw throws: the
// interpreter stops with it; generated code reports it through gimbalLock().
struct GimbalLock : std::runtime_error {
  GimbalLock(const ForceElementLayout& e, double pitch)
      : std::runtime_error("bushing `" + e.name + "` is at gimbal lock"), element(&e), pitch(pitch) {}
  const ForceElementLayout* element;
  double pitch;  // rad
};

// A constraint (SPEC §4): a loop-closing joint, a sphere-on-sphere
// contact, or a coupler of two joints' coordinates (no frames). Its rows in the generated constraint vectors: `holonomic` rows
// from `holonomicRow`, then `nonholonomic` rows from `nonholonomicRow` (all
// holonomic rows of the model come first; capstan/constraints.hpp).
struct ConstraintLayout {
  mechanics::ConstraintKind kind = mechanics::ConstraintKind::LoopJoint;
  std::string name;               // component path: `couplerRocker`, `contact`
  int component = -1;             // the cut joint or the contact
  int joint = -1;                 // LoopJoint: index into mechanics::Mechanism::joints; Coupler: the follower's
  int leader = -1;                // Coupler: the leader's index into mechanics::Mechanism::joints
  int frameF = -1, frameM = -1;   // index into mechanics::Mechanism::frames: the cut joint's
                                  // frame_a and frame_b, or the spheres' frame_a (their centers)
  int bodyF = -1, bodyM = -1;     // runtime bodies, -1 for World
  int sphereF = -1, sphereB = -1; // SphereOnSphere: the Sphere components
  bool rolling = false;
  int holonomic = 0, nonholonomic = 0;
  int holonomicRow = 0, nonholonomicRow = 0;
};

// A cable (SPEC section 4 `Cable`) in Simbody's numbering: obstacle 0 is
// the origin O (the cable's frame_a), then its `path` in order (a ViaPoint's
// frame_a, a wrapped surface's frame_a), then the termination T (frame_b).
enum class CableObstacleKind { EndPoint, ViaPoint, Surface };

struct CableObstacleLayout {
  CableObstacleKind kind = CableObstacleKind::EndPoint;
  std::string name;       // what users call it: `rope.frame_a`, `via`, `overDrum`
  int component = -1;     // the Cable, ViaPoint or Wrap
  int surface = -1;       // Surface: the geometry component (Sphere, Cylinder, Ellipsoid, Torus)
  int frame = -1;         // index into mechanics::Mechanism::frames: the obstacle's frame F
  int body = -1;          // runtime body of F, -1 for World
};

struct CableLayout {
  std::string name;       // component path: `rope`
  int component = -1;
  std::vector<CableObstacleLayout> obstacles;  // O, path..., T
  std::vector<int> springs;                    // components of the CableSprings that pull on it
  // Its CableActuators: the component and the force law that sets its
  // `tension` (index into FlatModel::forceLaws, -1 when none does: 0 N).
  struct Actuator {
    int component = -1;
    int law = -1;
  };
  std::vector<Actuator> actuators;
  int firstFrame = 0;     // its obstacles' first entry in the generated CableFrames
  int firstActuator = 0;  // its actuators' first entry in CableFrames' tensions
};

struct ForceLawLayout {
  int law = -1;                   // index into FlatModel::forceLaws
  int uIndex = -1;                // the generalized force it sets
  std::string name;               // `joint[1].tau` (forceLawName)
};

// What a diagnostic calls force law `law` (index into FlatModel::forceLaws):
// the input it sets, `joint[1].tau`, `winch.tension`.
std::string forceLawName(const sema::FlatModel& model, int law);

// Something the code generator cannot handle yet, at a place in the model.
struct Unsupported {
  syntax::SourceRange range;
  std::string message;
};

struct ModelLayout {
  std::string className;          // C++ identifier from the model name
  std::vector<VariableRole> roles;          // per flat variable
  std::vector<int> parameterOfVariable;     // per flat variable: index into parameters, or -1
  std::vector<int> inputOfVariable;         // per flat variable: index into inputs, or -1
  // Per flat variable folded only because a folded binding reads it (folding
  // by dependency): the variable whose binding reads it, else -1.
  std::vector<int> foldedFor;
  std::vector<RuntimeParameter> parameters;
  std::vector<IoVariable> inputs, outputs;
  std::vector<JointLayout> joints;          // tree order
  std::vector<BodyLayout> bodies;           // runtime order: bodies[i] hangs from joints[i]
  std::vector<int> runtimeBody;             // per mechanics body: runtime index, -1 for World
  std::vector<JacobianFrame> jacobianFrames;  // bodies first, in runtime order
  std::vector<ForceLawLayout> forceLaws;
  std::vector<ForceElementLayout> forceElements;  // in model order
  std::vector<ConstraintLayout> constraints;      // in model order
  int holonomicRows = 0, constraintRows = 0;      // rows of all constraints
  std::vector<CableLayout> cables;                // in model order
  int cableFrameCount = 0;                        // obstacles of all cables together
  int cableActuatorCount = 0;                     // CableActuators of all cables together
  // Per flat variable with role Frame: which frame and quantity.
  std::vector<FrameQuantityRef> frameOf;
  // Per flat variable of a joint: (joint index, false for q / true for u), or joint -1.
  std::vector<std::pair<int, bool>> stateOf;
  int nq = 0, nu = 0;
  int worldGravity = -1;                    // the World's `gravity` variable, -1 if implicit

  // The runtime parameter named `name` (a model path), or -1.
  int findParameter(const std::string& name) const;
  // Every force law the generated code evaluates (indices into
  // FlatModel::forceLaws): the joints' `tau` (forceLaws order), then the
  // cable actuators' `tension`.
  std::vector<int> evaluatedForceLaws() const {
    std::vector<int> laws;
    for (const ForceLawLayout& fl : forceLaws) laws.push_back(fl.law);
    for (const CableLayout& c : cables)
      for (const CableLayout::Actuator& a : c.actuators)
        if (a.law >= 0) laws.push_back(a.law);
    return laws;
  }
  // The model's event indicators (m), as the generated eventIndicators gives
  // them and an FMU names them: each compliant contact's `CONTACT.depth`
  // (model order), then per cable (model order) each wrapped surface's
  // `CABLE.WRAP.contact` (path order) and each of its springs'
  // `SPRING.stretch`. The first `compliantContacts` are traced; the cables'
  // come from the path solver (docs/generated-code.md, "Event indicators").
  struct EventIndicator {
    std::string name;         // `contact.depth`
    std::string description;  // "the penetration depth of contact `contact`, > 0 in contact"
  };
  std::vector<EventIndicator> eventIndicators(const sema::FlatModel& model) const;
  int compliantContacts() const;
  // Why flat variable `v` (role Folded) is compiled in, as what completes
  // "parameter `v` is ...": "structural (...)", or "fixed at compile time:
  // `link2.joint.axis` depends on it and is a joint axis (...)".
  std::string foldReason(const sema::FlatModel& model, int v) const;
};

// Decides the layout. Problems the code generator cannot handle (cables, reversed quaternion joints, ...) are returned in
// `unsupported`; the layout is usable only when that list is empty.
ModelLayout makeLayout(const sema::FlatModel& model, const mechanics::Mechanism& mech,
                       std::vector<Unsupported>& unsupported);

// The joint (a component index) whose `armature` flat variable `v` is, when
// the model does not give it (no modification `armature = ...`): folded at
// its default 0, so its term vanishes from the generated code. Else -1.
int armatureNotGiven(const sema::FlatModel& model, int v);

// `link[2].body.mass` -> `link_2_body_mass` (a valid C++ identifier).
std::string cppIdentifier(const std::string& path);
// `link[2].body` -> `Link2Body`.
std::string monogramIdentifier(const std::string& path);

}  // namespace capstan::codegen
