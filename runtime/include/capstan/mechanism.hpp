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
// State layout (SPEC §4-§5), per joint in tree order:
//   Weld         nq 0  nu 0
//   Revolute     q = angle about `axis` (rad)                  u = qdot
//   Prismatic    q = displacement along `axis` (m)             u = qdot
//   Cylindrical  q = (angle about, displacement along `axis`)  u = qdot
//   Universal    q = (angle about axis_a, then about the rotated axis_b)  u = qdot
//   Ball         q = quaternion (w, x, y, z) of R_FM           u = w_FM expressed in F
//   Free         q = (quaternion w,x,y,z of R_FM, p_FoMo_F)    u = (w_FM in F, v_FMo in F)
#pragma once

#include "capstan/spatial.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace capstan {

enum class JointType { Weld, Revolute, Prismatic, Cylindrical, Universal, Ball, Free };

constexpr int jointNq(JointType type) {
  switch (type) {
    case JointType::Weld: return 0;
    case JointType::Revolute: return 1;
    case JointType::Prismatic: return 1;
    case JointType::Cylindrical: return 2;
    case JointType::Universal: return 2;
    case JointType::Ball: return 4;
    case JointType::Free: return 7;
  }
  return 0;
}

constexpr int jointNu(JointType type) {
  switch (type) {
    case JointType::Weld: return 0;
    case JointType::Revolute: return 1;
    case JointType::Prismatic: return 1;
    case JointType::Cylindrical: return 2;
    case JointType::Universal: return 2;
    case JointType::Ball: return 3;
    case JointType::Free: return 6;
  }
  return 0;
}

// Whether the joint's q starts with a quaternion (w, x, y, z).
constexpr bool hasQuaternion(JointType type) {
  return type == JointType::Ball || type == JointType::Free;
}

constexpr const char* jointTypeName(JointType type) {
  switch (type) {
    case JointType::Weld: return "Weld";
    case JointType::Revolute: return "Revolute";
    case JointType::Prismatic: return "Prismatic";
    case JointType::Cylindrical: return "Cylindrical";
    case JointType::Universal: return "Universal";
    case JointType::Ball: return "Ball";
    case JointType::Free: return "Free";
  }
  return "?";
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
  int qOffset = 0;                           // first index in q; set by Mechanism::addBody
  int uOffset = 0;                           // first index in u; set by Mechanism::addBody

  int nq() const { return jointNq(type); }
  int nu() const { return jointNu(type); }

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
