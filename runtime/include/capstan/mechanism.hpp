// Mechanism<Scalar>: the constant description of a tree of rigid bodies and
// joints that the multibody algorithms (kinematics.hpp, dynamics.hpp) consume.
//
// Body i hangs from its parent through joint i (joints[i] is body i's inboard
// joint); World is parent index -1. Bodies are in tree order: a parent's
// index is smaller than its children's. Joint frames (SPEC §4):
//   F  fixed to the parent body P, pose X_PF (X_WF when the parent is World);
//   M  fixed to the child body B, pose X_BM;
// at q = 0 (and the identity quaternion) F and M coincide, so X_FM(0) = 1 and
// an axis has the same components in F and in M.
//
// State layout (SPEC §4-§5), per joint in tree order (each type's
// JointTraits below holds its counts, X_FM(q) and motion subspace):
//   Weld         nq 0  nu 0
//   Revolute     q = angle about `axis` (rad)                  u = qdot
//   Prismatic    q = displacement along `axis` (m)             u = qdot
//   Cylindrical  q = (angle about, displacement along `axis`)  u = qdot
//   Universal    q = (angle about axis_a, then about the rotated axis_b)  u = qdot
//   Ball         q = quaternion (w, x, y, z) of R_FM           u = w_FM expressed in F
//   Free         q = (quaternion w,x,y,z of R_FM, p_FoMo_F)    u = (w_FM in F, v_FMo in F)
//
// A joint's `armature` is the reflected inertia of a rotor (a motor and its
// gearing) that moves with each of its dofs: the mass matrix's diagonal
// entry for each of the joint's dofs gains it (M = M_bodies(q) + diag(armature)),
// as MuJoCo's joint `armature` and Pinocchio's `model.armature` define it.
// Every algorithm that forms or factors M reads it here (dynamics.hpp,
// local_dynamics.hpp: CRBA, ABA's D = S^T IA S + armature, inverse dynamics'
// tau += armature udot); the kinetic energy gains 1/2 armature u^2 per dof.
#pragma once

#include "capstan/spatial.hpp"

#include <array>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace capstan {

// The joint types: one row each. Adding a joint type is a row here and a
// JointTraits specialization below; a row without one does not compile
// (visitJointType instantiates every row's traits).
#define CAPSTAN_JOINT_TYPES(X) X(Weld) X(Revolute) X(Prismatic) X(Cylindrical) X(Universal) X(Ball) X(Free)

enum class JointType {
#define CAPSTAN_JOINT_ENUMERATOR(Name) Name,
  CAPSTAN_JOINT_TYPES(CAPSTAN_JOINT_ENUMERATOR)
#undef CAPSTAN_JOINT_ENUMERATOR
};

// The axis parameters a joint type reads (Joint's `axis`, `axis_a`, `axis_b`).
enum class JointAxes {
  None,       // no axis
  Axis,       // `axis`: unit, in F (the same components in M)
  Universal,  // `axis_a` in F, then `axis_b` fixed in M, perpendicular to it
};

template <class Scalar>
struct Joint;

// Everything that depends on a joint's type, one specialization per type:
//   name          its name in models and messages
//   nq, nu        coordinates and speeds
//   qUnits, uUnits  each coordinate's and speed's unit ("rad", "m"; a
//                 quaternion's components are "1")
//   quaternion    q starts with a quaternion (w, x, y, z) of R_FM and u with
//                 w_FM in F; the rest of q and u are equal (qdot = u)
//   axes          the axis parameters it reads
//   reversible    swapping F and M is the same type with `axis` negated
//   position      X_FM(q) and the hinge matrix H_FM_F (6 x nu, zero on entry):
//                 V_FM = [w_FM; v_FMo] (in F) = H_FM_F u
//   hdotU         d/dt_F(H_FM_F) u (zero on entry; nonzero where H turns)
//   subspace      S (6 x nu, at Mo, in M; zero on entry) from X_FM and H,
//                 written so that a constant S stays constant when traced
//   subspaceRate  the rate of S's components in M, times u (zero on entry),
//                 given vJ = S u
//   loopClosure   the rows a cut joint of this type adds (constraints.hpp):
//                 calls on a row builder, in row order
// A type whose H is constant in F, or whose S is constant in M, says so by
// deriving from ConstantHinge or ConstantSubspace (a zero rate).
// Every function is traceable with a symbolic Scalar: no branch on values.
template <JointType type>
struct JointTraits;  // no definition: a type without a specialization does not compile

namespace detail {

template <class Scalar>
Vec4<Scalar> quaternionAt(const VectorX<Scalar>& q, int offset) {
  return Vec4<Scalar>(q[offset], q[offset + 1], q[offset + 2], q[offset + 3]);
}

}  // namespace detail

// Opt-in halves of a specialization, for the types whose hinge matrix H is
// constant in F (hdotU = 0) or whose subspace S is constant in M
// (subspaceRate = 0).
struct ConstantHinge {
  template <class Scalar>
  static void hdotU(const Joint<Scalar>&, const Mat6X<Scalar>&, const VectorX<Scalar>&, Vec6<Scalar>&) {}
};
struct ConstantSubspace {
  template <class Scalar>
  static void subspaceRate(const Joint<Scalar>&, const Mat6X<Scalar>&, const Vec6<Scalar>&, const VectorX<Scalar>&,
                           Vec6<Scalar>&) {}
};

template <>
struct JointTraits<JointType::Weld> : ConstantHinge, ConstantSubspace {
  static constexpr const char* name = "Weld";
  static constexpr int nq = 0, nu = 0;
  static constexpr std::array<std::string_view, 0> qUnits{};
  static constexpr std::array<std::string_view, 0> uUnits{};
  static constexpr bool quaternion = false;
  static constexpr JointAxes axes = JointAxes::None;
  static constexpr bool reversible = true;

  template <class Scalar>
  static void position(const Joint<Scalar>&, const VectorX<Scalar>&, Transform<Scalar>& X_FM, Mat6X<Scalar>&) {
    X_FM = Transform<Scalar>::identity();
  }
  template <class Scalar>
  static void subspace(const Joint<Scalar>&, const VectorX<Scalar>&, const Transform<Scalar>&, const Mat6X<Scalar>&,
                       Mat6X<Scalar>&) {}
  template <class Rows>
  static void loopClosure(Rows& rows) {
    rows.allTranslations();
    rows.allRotations();
  }
};

// A joint about or along one axis, constant in F and M: H = S, constant.
struct SingleAxisJoint : ConstantHinge, ConstantSubspace {
  static constexpr bool quaternion = false;
  static constexpr JointAxes axes = JointAxes::Axis;
  static constexpr bool reversible = true;

  template <class Scalar>
  static void subspace(const Joint<Scalar>&, const VectorX<Scalar>&, const Transform<Scalar>&, const Mat6X<Scalar>& H,
                       Mat6X<Scalar>& S) {
    S = H;  // the axis is the same in F and M
  }
};

template <>
struct JointTraits<JointType::Revolute> : SingleAxisJoint {
  static constexpr const char* name = "Revolute";
  static constexpr int nq = 1, nu = 1;  // q = angle about `axis` (rad)
  static constexpr std::array<std::string_view, 1> qUnits{{"rad"}};
  static constexpr std::array<std::string_view, 1> uUnits{{"rad/s"}};

  template <class Scalar>
  static void position(const Joint<Scalar>& joint, const VectorX<Scalar>& q, Transform<Scalar>& X_FM,
                       Mat6X<Scalar>& H) {
    X_FM = Transform<Scalar>(axisAngleRotation<Scalar>(joint.axis, q[joint.qOffset]), Vec3<Scalar>::Zero());
    H.template block<3, 1>(0, 0) = joint.axis;
  }
  template <class Rows>
  static void loopClosure(Rows& rows) {
    rows.allTranslations();
    rows.perpendicular(rows.b, rows.axis);
    rows.perpendicular(rows.c, rows.axis);
  }
};

template <>
struct JointTraits<JointType::Prismatic> : SingleAxisJoint {
  static constexpr const char* name = "Prismatic";
  static constexpr int nq = 1, nu = 1;  // q = displacement along `axis` (m)
  static constexpr std::array<std::string_view, 1> qUnits{{"m"}};
  static constexpr std::array<std::string_view, 1> uUnits{{"m/s"}};

  template <class Scalar>
  static void position(const Joint<Scalar>& joint, const VectorX<Scalar>& q, Transform<Scalar>& X_FM,
                       Mat6X<Scalar>& H) {
    X_FM = Transform<Scalar>(Mat3<Scalar>::Identity(), joint.axis * q[joint.qOffset]);
    H.template block<3, 1>(3, 0) = joint.axis;
  }
  template <class Rows>
  static void loopClosure(Rows& rows) {
    rows.translation(rows.b);
    rows.translation(rows.c);
    rows.allRotations();
  }
};

template <>
struct JointTraits<JointType::Cylindrical> : SingleAxisJoint {
  static constexpr const char* name = "Cylindrical";
  static constexpr int nq = 2, nu = 2;  // q = (angle about `axis` (rad), displacement along it (m))
  static constexpr std::array<std::string_view, 2> qUnits{{"rad", "m"}};
  static constexpr std::array<std::string_view, 2> uUnits{{"rad/s", "m/s"}};

  template <class Scalar>
  static void position(const Joint<Scalar>& joint, const VectorX<Scalar>& q, Transform<Scalar>& X_FM,
                       Mat6X<Scalar>& H) {
    const int iq = joint.qOffset;
    X_FM = Transform<Scalar>(axisAngleRotation<Scalar>(joint.axis, q[iq]), joint.axis * q[iq + 1]);
    H.template block<3, 1>(0, 0) = joint.axis;
    H.template block<3, 1>(3, 1) = joint.axis;
  }
  template <class Rows>
  static void loopClosure(Rows& rows) {
    rows.translation(rows.b);
    rows.translation(rows.c);
    rows.perpendicular(rows.b, rows.axis);
    rows.perpendicular(rows.c, rows.axis);
  }
};

// q = (angle about axis_a, then about the rotated axis_b) (rad):
// R_FM = R_FI(q0 about axis_a) R_IM(q1 about axis_b).
template <>
struct JointTraits<JointType::Universal> {
  static constexpr const char* name = "Universal";
  static constexpr int nq = 2, nu = 2;
  static constexpr std::array<std::string_view, 2> qUnits{{"rad", "rad"}};
  static constexpr std::array<std::string_view, 2> uUnits{{"rad/s", "rad/s"}};
  static constexpr bool quaternion = false;
  static constexpr JointAxes axes = JointAxes::Universal;
  static constexpr bool reversible = false;

  template <class Scalar>
  static void position(const Joint<Scalar>& joint, const VectorX<Scalar>& q, Transform<Scalar>& X_FM,
                       Mat6X<Scalar>& H) {
    const int iq = joint.qOffset;
    const Mat3<Scalar> R_FI = axisAngleRotation<Scalar>(joint.axis_a, q[iq]);
    const Mat3<Scalar> R_IM = axisAngleRotation<Scalar>(joint.axis_b, q[iq + 1]);
    X_FM = Transform<Scalar>(R_FI * R_IM, Vec3<Scalar>::Zero());
    H.template block<3, 1>(0, 0) = joint.axis_a;
    H.template block<3, 1>(0, 1) = R_FI * joint.axis_b;
  }
  // The second axis R_FI axis_b turns with the first angle:
  // d/dt(R_FI b) = u0 axis_a x (R_FI b).
  template <class Scalar>
  static void hdotU(const Joint<Scalar>& joint, const Mat6X<Scalar>& H, const VectorX<Scalar>& u, Vec6<Scalar>& out) {
    const int iu = joint.uOffset;
    const Vec3<Scalar> b_F = H.template block<3, 1>(0, 1);
    out.template head<3>() = cross<Scalar>(joint.axis_a, b_F) * (u[iu] * u[iu + 1]);
  }
  // In M the first axis is R_IM^T a and the second is b itself.
  template <class Scalar>
  static void subspace(const Joint<Scalar>& joint, const VectorX<Scalar>& q, const Transform<Scalar>&,
                       const Mat6X<Scalar>&, Mat6X<Scalar>& S) {
    const Mat3<Scalar> R_IM = axisAngleRotation<Scalar>(joint.axis_b, q[joint.qOffset + 1]);
    S.template block<3, 1>(0, 0) = R_IM.transpose() * joint.axis_a;
    S.template block<3, 1>(0, 1) = joint.axis_b;
  }
  // s0 = R(b, -q1) a turns at -u1 about b.
  template <class Scalar>
  static void subspaceRate(const Joint<Scalar>& joint, const Mat6X<Scalar>& S, const Vec6<Scalar>&,
                           const VectorX<Scalar>& u, Vec6<Scalar>& out) {
    const int iu = joint.uOffset;
    const Vec3<Scalar> s0 = S.template block<3, 1>(0, 0);
    out.template head<3>() = cross<Scalar>(joint.axis_b, s0) * (-(u[iu] * u[iu + 1]));
  }
  template <class Rows>
  static void loopClosure(Rows& rows) {
    rows.allTranslations();
    rows.perpendicular(rows.axis_a, rows.axis_b);
  }
};

// q = quaternion (w, x, y, z) of R_FM; u = w_FM expressed in F. S = [R_MF; 0]
// turns at -w_FM in M, and its rate times u is -w x w = 0.
template <>
struct JointTraits<JointType::Ball> : ConstantHinge, ConstantSubspace {
  static constexpr const char* name = "Ball";
  static constexpr int nq = 4, nu = 3;
  static constexpr std::array<std::string_view, 4> qUnits{{"1", "1", "1", "1"}};
  static constexpr std::array<std::string_view, 3> uUnits{{"rad/s", "rad/s", "rad/s"}};
  static constexpr bool quaternion = true;
  static constexpr JointAxes axes = JointAxes::None;
  static constexpr bool reversible = false;

  template <class Scalar>
  static void position(const Joint<Scalar>& joint, const VectorX<Scalar>& q, Transform<Scalar>& X_FM,
                       Mat6X<Scalar>& H) {
    X_FM = Transform<Scalar>(rotationFromQuaternion(detail::quaternionAt(q, joint.qOffset)), Vec3<Scalar>::Zero());
    H.template block<3, 3>(0, 0).setIdentity();
  }
  template <class Scalar>
  static void subspace(const Joint<Scalar>&, const VectorX<Scalar>&, const Transform<Scalar>& X_FM,
                       const Mat6X<Scalar>&, Mat6X<Scalar>& S) {
    S.template block<3, 3>(0, 0) = X_FM.R.transpose();
  }
  template <class Rows>
  static void loopClosure(Rows& rows) {
    rows.allTranslations();
  }
};

// q = (quaternion w,x,y,z of R_FM, p_FoMo_F); u = (w_FM in F, v_FMo in F).
template <>
struct JointTraits<JointType::Free> : ConstantHinge {
  static constexpr const char* name = "Free";
  static constexpr int nq = 7, nu = 6;
  static constexpr std::array<std::string_view, 7> qUnits{{"1", "1", "1", "1", "m", "m", "m"}};
  static constexpr std::array<std::string_view, 6> uUnits{{"rad/s", "rad/s", "rad/s", "m/s", "m/s", "m/s"}};
  static constexpr bool quaternion = true;
  static constexpr JointAxes axes = JointAxes::None;
  static constexpr bool reversible = false;

  template <class Scalar>
  static void position(const Joint<Scalar>& joint, const VectorX<Scalar>& q, Transform<Scalar>& X_FM,
                       Mat6X<Scalar>& H) {
    const int iq = joint.qOffset;
    X_FM = Transform<Scalar>(rotationFromQuaternion(detail::quaternionAt(q, iq)),
                             Vec3<Scalar>(q[iq + 4], q[iq + 5], q[iq + 6]));
    H.setIdentity();
  }
  template <class Scalar>
  static void subspace(const Joint<Scalar>&, const VectorX<Scalar>&, const Transform<Scalar>& X_FM,
                       const Mat6X<Scalar>&, Mat6X<Scalar>& S) {
    const Mat3<Scalar> R_MF = X_FM.R.transpose();
    S.template block<3, 3>(0, 0) = R_MF;
    S.template block<3, 3>(3, 3) = R_MF;
  }
  // The linear columns R_MF turn at -w_FM, giving -(w x v) in M.
  template <class Scalar>
  static void subspaceRate(const Joint<Scalar>&, const Mat6X<Scalar>&, const Vec6<Scalar>& vJ, const VectorX<Scalar>&,
                           Vec6<Scalar>& out) {
    const Vec3<Scalar> w = vJ.template head<3>(), vel = vJ.template tail<3>();
    out.template tail<3>() = -cross(w, vel);
  }
  template <class Rows>
  static void loopClosure(Rows&) {}
};

// f(JointTraits<type>{}): the one dispatch from a joint type at run time to
// its traits.
template <class F>
constexpr decltype(auto) visitJointType(JointType type, F&& f) {
  switch (type) {
#define CAPSTAN_JOINT_CASE(Name) \
  case JointType::Name:          \
    return std::forward<F>(f)(JointTraits<JointType::Name>{});
    CAPSTAN_JOINT_TYPES(CAPSTAN_JOINT_CASE)
#undef CAPSTAN_JOINT_CASE
  }
  return std::forward<F>(f)(JointTraits<JointType::Weld>{});  // not a JointType (a cast from a bad int)
}

// Every joint type, in declaration order (for loops over types).
inline constexpr JointType kJointTypes[] = {
#define CAPSTAN_JOINT_ELEMENT(Name) JointType::Name,
    CAPSTAN_JOINT_TYPES(CAPSTAN_JOINT_ELEMENT)
#undef CAPSTAN_JOINT_ELEMENT
};

constexpr int jointNq(JointType type) {
  return visitJointType(type, [](auto traits) { return decltype(traits)::nq; });
}
constexpr int jointNu(JointType type) {
  return visitJointType(type, [](auto traits) { return decltype(traits)::nu; });
}
// Each coordinate's and each speed's unit, in state order.
constexpr std::span<const std::string_view> jointQUnits(JointType type) {
  return visitJointType(type, [](auto traits) { return std::span<const std::string_view>(decltype(traits)::qUnits); });
}
constexpr std::span<const std::string_view> jointUUnits(JointType type) {
  return visitJointType(type, [](auto traits) { return std::span<const std::string_view>(decltype(traits)::uUnits); });
}
// Whether the joint's q starts with a quaternion (w, x, y, z).
constexpr bool hasQuaternion(JointType type) {
  return visitJointType(type, [](auto traits) { return decltype(traits)::quaternion; });
}
constexpr JointAxes jointAxes(JointType type) {
  return visitJointType(type, [](auto traits) { return decltype(traits)::axes; });
}
constexpr bool jointReversible(JointType type) {
  return visitJointType(type, [](auto traits) { return decltype(traits)::reversible; });
}
constexpr const char* jointTypeName(JointType type) {
  return visitJointType(type, [](auto traits) { return decltype(traits)::name; });
}

template <class Scalar>
struct Body {
  std::string name;
  Scalar mass = Scalar(0);                                // kg
  Vec3<Scalar> p_BoBcm_B = Vec3<Scalar>::Zero();          // m
  Mat3<Scalar> I_Bcm_B = Mat3<Scalar>::Zero();            // kg*m^2, about Bcm, in B

  template <class NewScalar>
  Body<NewScalar> cast() const {
    return Body<NewScalar>{name, NewScalar(mass), p_BoBcm_B.template cast<NewScalar>(),
                           I_Bcm_B.template cast<NewScalar>()};
  }
};

template <class Scalar>
struct Joint {
  std::string name;
  JointType type = JointType::Weld;
  int parent = -1;                           // parent body index; -1 = World
  Transform<Scalar> X_PF;                    // F in the parent body frame
  Transform<Scalar> X_BM;                    // M in the child body frame
  Vec3<Scalar> axis = Vec3<Scalar>::UnitZ();    // Revolute, Prismatic, Cylindrical: unit, in F
  Vec3<Scalar> axis_a = Vec3<Scalar>::UnitX();  // Universal: first axis, unit, in F
  Vec3<Scalar> axis_b = Vec3<Scalar>::UnitY();  // Universal: second axis, unit, fixed in M
                                                //   (its components in F at q = 0)
  Scalar armature = Scalar(0);               // rotor inertia reflected to each dof: kg*m^2 for
                                             //   a rotation, kg for a translation (header comment)
  int qOffset = 0;                           // first index in q; set by Mechanism::addBody
  int uOffset = 0;                           // first index in u; set by Mechanism::addBody

  int nq() const { return jointNq(type); }
  int nu() const { return jointNu(type); }

  // Adds the armature to the diagonal entries (offset + k, offset + k) of a
  // square matrix, one per dof k: M's block for this joint (offset = uOffset)
  // or the articulated-body algorithm's nu x nu D (offset = 0).
  template <class Matrix>
  void addArmature(Matrix& A, int offset) const {
    for (int k = 0; k < nu(); ++k) A(offset + k, offset + k) += armature;
  }

  template <class NewScalar>
  Joint<NewScalar> cast() const {
    Joint<NewScalar> j;
    j.name = name;
    j.type = type;
    j.parent = parent;
    j.X_PF = X_PF.template cast<NewScalar>();
    j.X_BM = X_BM.template cast<NewScalar>();
    j.axis = axis.template cast<NewScalar>();
    j.axis_a = axis_a.template cast<NewScalar>();
    j.axis_b = axis_b.template cast<NewScalar>();
    j.armature = NewScalar(armature);
    j.qOffset = qOffset;
    j.uOffset = uOffset;
    return j;
  }
};

template <class Scalar>
struct Mechanism {
  std::vector<Body<Scalar>> bodies;   // (nb)
  std::vector<Joint<Scalar>> joints;  // (nb); joints[i] is the inboard joint of bodies[i]
  Vec3<Scalar> gravity = Vec3<Scalar>(Scalar(0), Scalar(-9.81), Scalar(0));  // m/s^2, in World
  int nq = 0;
  int nu = 0;

  int numBodies() const { return static_cast<int>(bodies.size()); }

  // Appends `body` with inboard `joint`, assigns the joint's q/u offsets and
  // returns the new body's index. Throws std::invalid_argument (a caller bug,
  // not a user diagnostic) when the parent does not precede the body.
  int addBody(Body<Scalar> body, Joint<Scalar> joint) {
    const int index = numBodies();
    if (joint.parent < -1 || joint.parent >= index) {
      throw std::invalid_argument("joint `" + joint.name + "` of body `" + body.name +
                                  "` names parent " + std::to_string(joint.parent) +
                                  "; parents must precede their children (tree order)");
    }
    joint.qOffset = nq;
    joint.uOffset = nu;
    nq += joint.nq();
    nu += joint.nu();
    bodies.push_back(std::move(body));
    joints.push_back(std::move(joint));
    return index;
  }

  // The same mechanism with every parameter converted to NewScalar (e.g. from
  // double to a symbolic Scalar for tracing).
  template <class NewScalar>
  Mechanism<NewScalar> cast() const {
    Mechanism<NewScalar> m;
    for (const auto& b : bodies) m.bodies.push_back(b.template cast<NewScalar>());
    for (const auto& j : joints) m.joints.push_back(j.template cast<NewScalar>());
    m.gravity = gravity.template cast<NewScalar>();
    m.nq = nq;
    m.nu = nu;
    return m;
  }
};

}  // namespace capstan
