// Mechanisms and random states shared by the multibody unit and cross-check
// tests (kinematics_test, dynamics_test, integrators_test,
// crosscheck/dynamics_simbody_test).
#pragma once

#include <capstan/mechanism.hpp>
#include <capstan/spatial.hpp>

#include <Eigen/Dense>

#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace capstan::testing {

using Rng = std::mt19937_64;

inline double uniform(Rng& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

inline Vec3<double> randomVector(Rng& rng, double scale) {
  return Vec3<double>(uniform(rng, -scale, scale), uniform(rng, -scale, scale), uniform(rng, -scale, scale));
}

inline Vec3<double> randomUnitVector(Rng& rng) {
  Vec3<double> v = randomVector(rng, 1.0);
  while (v.norm() < 0.1) v = randomVector(rng, 1.0);
  return v.normalized();
}

inline Vec4<double> randomQuaternion(Rng& rng) {
  Vec4<double> q(uniform(rng, -1, 1), uniform(rng, -1, 1), uniform(rng, -1, 1), uniform(rng, -1, 1));
  while (q.norm() < 0.1) q = Vec4<double>(uniform(rng, -1, 1), uniform(rng, -1, 1), uniform(rng, -1, 1), 0.5);
  return q.normalized();
}

inline Mat3<double> randomRotation(Rng& rng) { return rotationFromQuaternion(randomQuaternion(rng)); }

inline Transform<double> randomTransform(Rng& rng, double scale) {
  return Transform<double>(randomRotation(rng), randomVector(rng, scale));
}

// A central inertia of a body with random principal moments (always
// satisfying the triangle inequality) and random principal axes.
inline Mat3<double> randomCentralInertia(Rng& rng, double mass) {
  const Vec3<double> s(uniform(rng, 0.05, 0.5), uniform(rng, 0.05, 0.5), uniform(rng, 0.05, 0.5));
  const Vec3<double> moments(mass * (s[1] * s[1] + s[2] * s[2]), mass * (s[0] * s[0] + s[2] * s[2]),
                             mass * (s[0] * s[0] + s[1] * s[1]));
  const Mat3<double> R = randomRotation(rng);
  return R * moments.asDiagonal() * R.transpose();
}

inline Body<double> randomBody(Rng& rng, const std::string& name) {
  Body<double> body;
  body.name = name;
  body.mass = uniform(rng, 0.5, 3.0);
  body.p_BoBcm_B = randomVector(rng, 0.5);
  body.I_Bcm_B = randomCentralInertia(rng, body.mass);
  return body;
}

// A joint of the given type with random frames and axes. Universal axes are
// perpendicular (as Simbody's Universal requires).
inline Joint<double> randomJoint(Rng& rng, JointType type, int parent, const std::string& name) {
  Joint<double> joint;
  joint.name = name;
  joint.type = type;
  joint.parent = parent;
  joint.X_PF = randomTransform(rng, 0.8);
  joint.X_BM = randomTransform(rng, 0.8);
  joint.axis = randomUnitVector(rng);
  joint.axis_a = randomUnitVector(rng);
  const Vec3<double> t = randomUnitVector(rng);
  joint.axis_b = (t - t.dot(joint.axis_a) * joint.axis_a).normalized();
  return joint;
}

// Every joint type (the runtime's table, mechanism.hpp).
inline constexpr const auto& kAllJointTypes = capstan::kJointTypes;
inline constexpr int kJointTypeCount = static_cast<int>(std::size(kAllJointTypes));

// A random tree of `n` bodies; body i's parent is uniformly one of -1..i-1
// and its joint type cycles through all types starting at a random one.
inline Mechanism<double> randomTree(Rng& rng, int n) {
  Mechanism<double> model;
  model.gravity = randomVector(rng, 10.0);
  const int start = std::uniform_int_distribution<int>(0, kJointTypeCount - 1)(rng);
  for (int i = 0; i < n; ++i) {
    const int parent = std::uniform_int_distribution<int>(-1, i - 1)(rng);
    const JointType type = kAllJointTypes[(start + i) % kJointTypeCount];
    model.addBody(randomBody(rng, "body" + std::to_string(i)),
                  randomJoint(rng, type, parent, "joint" + std::to_string(i)));
  }
  return model;
}

// A serial chain of `n` bodies with joints of one type.
inline Mechanism<double> randomChain(Rng& rng, int n, JointType type) {
  Mechanism<double> model;
  model.gravity = randomVector(rng, 10.0);
  for (int i = 0; i < n; ++i) {
    model.addBody(randomBody(rng, "body" + std::to_string(i)),
                  randomJoint(rng, type, i - 1, "joint" + std::to_string(i)));
  }
  return model;
}

// The same model with a random armature (rotor inertia, mechanism.hpp) in
// [0.05, 0.5] on every joint.
inline Mechanism<double> withRandomArmature(Rng& rng, Mechanism<double> model) {
  for (Joint<double>& joint : model.joints) joint.armature = uniform(rng, 0.05, 0.5);
  return model;
}

// A random configuration: unit quaternions, other coordinates in [-1.5, 1.5].
inline VectorX<double> randomConfiguration(Rng& rng, const Mechanism<double>& model) {
  VectorX<double> q(model.nq);
  for (int k = 0; k < model.nq; ++k) q[k] = uniform(rng, -1.5, 1.5);
  for (const auto& joint : model.joints) {
    if (hasQuaternion(joint.type)) q.segment<4>(joint.qOffset) = randomQuaternion(rng);
  }
  return q;
}

inline VectorX<double> randomVectorX(Rng& rng, int n, double scale) {
  VectorX<double> v(n);
  for (int k = 0; k < n; ++k) v[k] = uniform(rng, -scale, scale);
  return v;
}

// Relative difference max|a - b| / max(1, max|b|) between two arrays.
template <class A, class B>
double relativeError(const A& a, const B& b) {
  if (b.size() == 0) return 0.0;
  const double scale = std::max(1.0, b.cwiseAbs().maxCoeff());
  return (a - b).cwiseAbs().maxCoeff() / scale;
}

}  // namespace capstan::testing
