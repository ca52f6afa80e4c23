// Mechanics: from the flat model's frames and connections to a mechanism —
// rigid groups merged into bodies, the spanning tree from `world`, the joints
// that close loops (cuts), constraints, force elements and cables — and the
// physical checks of SPEC §4.
//
// Poses here are evaluated with the parameters' compile-time values (for the
// checks, the summary and the JSON); each frame also records the chain of
// fixed components that places it in its body, so code generation can rebuild
// that pose from runtime parameters.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "capstan/mechanism.hpp"

#include "sema/flat.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::mechanics {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;

// A rigid transform X_AB: R_AB and p_AoBo_A (the runtime's, over double).
using Transform = capstan::Transform<double>;

// One step of the chain that places a frame in its body: through a fixed
// component (FixedTranslation, FixedFrame, Weld), forwards (frame_a -> frame_b)
// or backwards. Plain connections add no step.
struct FixedStep {
  int component = -1;
  bool forward = true;
};

// A connector frame of a primitive component, e.g. `link[2].tip.frame_b`.
struct FrameInfo {
  int component = -1;
  std::string connector;
  int body = -1;                 // the rigid group it belongs to (0 = world)
  Transform X_BF;                // its pose in the body frame (compile-time values)
  std::vector<FixedStep> path;   // from the body frame to this frame
};

struct BodyInfo {
  std::string name;              // path of its first `Body` (its frame_a is the body frame), or of the frame that starts it
  int referenceFrame = -1;       // index into Mechanism::frames: the body frame B
  std::vector<int> bodyComponents;  // the `Body` components merged into it
  std::vector<int> components;      // every component attached rigidly (geometry, fixed offsets, ...)
  int parentJoint = -1;          // index into Mechanism::joints, -1 for world and free-floating errors
  // Merged mass properties in B (compile-time values).
  double mass = 0.0;
  Vec3 p_BoBcm_B = Vec3::Zero();
  Mat3 I_Bcm_B = Mat3::Zero();   // about the merged center of mass
};

// Joint types and their coordinate counts are the runtime's (SPEC §4).
using capstan::JointType;
using capstan::jointNq;
using capstan::jointNu;
using capstan::jointTypeName;

struct JointInfo {
  int component = -1;
  JointType type = JointType::Revolute;
  int frameA = -1, frameB = -1;  // indices into Mechanism::frames (F and M)
  int parentBody = -1, childBody = -1;  // in the tree: parent is the inboard body
  bool reversed = false;         // frame_b is on the inboard side
  bool cut = false;              // closes a loop: a constraint, not a mobilizer
  int qIndex = -1, uIndex = -1;  // offsets in q and u (tree joints)
  int nq = 0, nu = 0;
};

enum class ConstraintKind { LoopJoint, SphereOnSphere, Coupler };

struct ConstraintInfo {
  ConstraintKind kind = ConstraintKind::LoopJoint;
  std::string name;              // component path
  int component = -1;            // the cut joint or the contact component
  int joint = -1;                // LoopJoint: index into joints; Coupler: the follower's
  int leader = -1;               // Coupler: the leader's index into joints
  int bodyF = -1, bodyB = -1;    // SphereOnSphere: the bodies the spheres are on
  int sphereF = -1, sphereB = -1;   // SphereOnSphere: sphere components
  int holonomic = 0;             // position-level rows
  int nonholonomic = 0;          // velocity-level rows
};

enum class ForceKind { Spring, Bushing, HuntCrossley, CableSpring, CableActuator, JointForceLaw };

struct ForceInfo {
  ForceKind kind = ForceKind::Spring;
  std::string name;
  int component = -1;
  int frameA = -1, frameB = -1;  // Spring, Bushing; HuntCrossley: its surfaces' frames
  int surfaceA = -1, surfaceB = -1;  // HuntCrossley: the surfaceF and sphereB components
  int cable = -1;                // CableSpring, CableActuator: index into cables
  int forceLaw = -1;             // JointForceLaw: index into FlatModel::forceLaws
};

struct CableElement {
  int component = -1;            // a ViaPoint or a Wrap
  bool isWrap = false;
  int body = -1;                 // the body it moves with
  int surface = -1;              // Wrap: the geometry component
};

struct CableInfo {
  std::string name;
  int component = -1;
  int origin = -1, termination = -1;   // frames (frame_a, frame_b)
  std::vector<CableElement> path;
};

struct Mechanism {
  std::vector<FrameInfo> frames;
  std::vector<BodyInfo> bodies;        // bodies[0] is world
  std::vector<JointInfo> joints;       // tree joints in tree order, then cut joints
  std::vector<ConstraintInfo> constraints;
  std::vector<ForceInfo> forces;
  std::vector<CableInfo> cables;
  Vec3 gravity{0.0, -9.81, 0.0};
  int worldComponent = -1;             // -1: implicit World
  int nq = 0, nu = 0;

  int treeJointCount() const;
  int holonomicRows() const;
  int nonholonomicRows() const;
  int findFrame(int component, const std::string& connector) const;
};

// Builds the mechanism and runs the physical checks; problems go to `diags`.
// Returns nullopt only when the topology could not be built at all.
std::optional<Mechanism> build(const sema::FlatModel& model, syntax::DiagnosticEngine& diags);

// The summary of SPEC §6 printed by `capstan check`.
std::string summary(const sema::FlatModel& model, const Mechanism& mech);

// The flattened mechanism as JSON (`capstan check --json`), documented in
// docs/check-json.md.
nlohmann::json toJson(const sema::FlatModel& model, const Mechanism& mech);

}  // namespace capstan::mechanics
