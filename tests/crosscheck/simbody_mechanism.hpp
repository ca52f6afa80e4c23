// A capstan Mechanism<double> built as a Simbody MultibodySystem, shared by
// the cross-checks against Simbody (dynamics_simbody_test,
// constraints_simbody_test).
//
// Simbody fixes each mobilizer's axes in its F and M frames (Pin and
// Cylinder: z; Slider: x; Universal: x then y), so each joint's F and M frames
// are rotated by the same constant R_FF' that carries Simbody's canonical
// axes onto ours: X_PF' = X_PF * R_FF', X_BM' = X_BM * R_FF'. Then
// R_F'M' = R_FF'^T R_FM R_FF' is Simbody's joint rotation with the same q.
// Ball and Free use the same q (quaternion w,x,y,z of R_FM, p_FM) and u (w_FM
// and v_FM expressed in F) in both. Body frames are the same in both, so a
// station or frame on body b is the same numbers on mobods[b].
#pragma once

#include "simbody_cxx20.hpp"  // <Simbody.h>; first: it clears NDEBUG

#include <capstan/mechanism.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace capstan::testing {

inline SimTK::Vec3 toSimbody(const capstan::Vec3<double>& v) { return SimTK::Vec3(v[0], v[1], v[2]); }

inline SimTK::Rotation toSimbody(const capstan::Mat3<double>& R) {
  const SimTK::Mat33 m(R(0, 0), R(0, 1), R(0, 2), R(1, 0), R(1, 1), R(1, 2), R(2, 0), R(2, 1), R(2, 2));
  return SimTK::Rotation(m, true);  // orthonormal by construction
}

inline SimTK::Transform toSimbody(const capstan::Transform<double>& X) {
  return SimTK::Transform(toSimbody(X.R), toSimbody(X.p));
}

// An orthonormal basis (columns) with the given unit vector as column `k`.
inline capstan::Mat3<double> basisWithColumn(const capstan::Vec3<double>& a, int k) {
  const capstan::Vec3<double> t = std::abs(a[0]) < 0.9 ? capstan::Vec3<double>::UnitX() : capstan::Vec3<double>::UnitY();
  const capstan::Vec3<double> b = (t - t.dot(a) * a).normalized();
  const capstan::Vec3<double> c = a.cross(b);
  capstan::Mat3<double> R;
  // Columns (k, k+1, k+2) cyclic = (a, b, c): a right-handed frame.
  R.col(k) = a;
  R.col((k + 1) % 3) = b;
  R.col((k + 2) % 3) = c;
  return R;
}

// R_FF' that carries Simbody's canonical joint axes onto the joint's axes.
inline capstan::Mat3<double> simbodyAxisFrame(const capstan::Joint<double>& joint) {
  switch (joint.type) {
    case JointType::Revolute:
    case JointType::Cylindrical:
      return basisWithColumn(joint.axis, 2);
    case JointType::Prismatic:
      return basisWithColumn(joint.axis, 0);
    case JointType::Universal: {
      capstan::Mat3<double> R;
      R << joint.axis_a, joint.axis_b, joint.axis_a.cross(joint.axis_b);
      return R;
    }
    default:
      return capstan::Mat3<double>::Identity();
  }
}

struct SimbodyModel {
  SimTK::MultibodySystem system;
  SimTK::SimbodyMatterSubsystem matter{system};
  SimTK::GeneralForceSubsystem forces{system};
  std::vector<SimTK::MobilizedBody> mobods;
  std::vector<SimTK::Force::MobilityConstantForce> mobilityForces;  // one per dof, in u order
  SimTK::State state;

  explicit SimbodyModel(const capstan::Mechanism<double>& model) {
    SimTK::Force::UniformGravity(forces, matter, toSimbody(model.gravity));
    for (std::size_t i = 0; i < model.bodies.size(); ++i) {
      const auto& body = model.bodies[i];
      const auto& joint = model.joints[i];
      const capstan::Mat3<double>& I = body.I_Bcm_B;
      const SimTK::Inertia I_cm(SimTK::Vec3(I(0, 0), I(1, 1), I(2, 2)), SimTK::Vec3(I(0, 1), I(0, 2), I(1, 2)));
      const SimTK::Vec3 com = toSimbody(body.p_BoBcm_B);
      const SimTK::Body::Rigid info(SimTK::MassProperties(body.mass, com, I_cm.shiftFromMassCenter(-com, body.mass)));
      const capstan::Transform<double> R_FFs(simbodyAxisFrame(joint), capstan::Vec3<double>::Zero());
      const SimTK::Transform X_PF = toSimbody(joint.X_PF * R_FFs);
      const SimTK::Transform X_BM = toSimbody(joint.X_BM * R_FFs);
      SimTK::MobilizedBody& parent =
          joint.parent < 0 ? matter.updGround() : mobods[static_cast<std::size_t>(joint.parent)];
      switch (joint.type) {
        case JointType::Weld: mobods.push_back(SimTK::MobilizedBody::Weld(parent, X_PF, info, X_BM)); break;
        case JointType::Revolute: mobods.push_back(SimTK::MobilizedBody::Pin(parent, X_PF, info, X_BM)); break;
        case JointType::Prismatic: mobods.push_back(SimTK::MobilizedBody::Slider(parent, X_PF, info, X_BM)); break;
        case JointType::Cylindrical:
          mobods.push_back(SimTK::MobilizedBody::Cylinder(parent, X_PF, info, X_BM));
          break;
        case JointType::Universal:
          mobods.push_back(SimTK::MobilizedBody::Universal(parent, X_PF, info, X_BM));
          break;
        case JointType::Ball: mobods.push_back(SimTK::MobilizedBody::Ball(parent, X_PF, info, X_BM)); break;
        case JointType::Free: mobods.push_back(SimTK::MobilizedBody::Free(parent, X_PF, info, X_BM)); break;
      }
      for (int k = 0; k < joint.nu(); ++k) {
        mobilityForces.emplace_back(forces, mobods.back(), SimTK::MobilizerUIndex(k), 0.0);
      }
    }
    state = system.realizeTopology();
  }

  void setState(const capstan::VectorX<double>& q, const capstan::VectorX<double>& u,
                const capstan::VectorX<double>& tau) {
    REQUIRE(state.getNQ() == q.size());
    REQUIRE(state.getNU() == u.size());
    for (int k = 0; k < q.size(); ++k) state.updQ()[k] = q[k];
    for (int k = 0; k < u.size(); ++k) state.updU()[k] = u[k];
    for (int k = 0; k < tau.size(); ++k) mobilityForces[static_cast<std::size_t>(k)].setDefaultForce(tau[k]);
    // Default forces are topology-stage parameters: re-realize, keeping q and u.
    const SimTK::Vector qs = state.getQ(), us = state.getU();
    state = system.realizeTopology();
    state.updQ() = qs;
    state.updU() = us;
    system.realize(state, SimTK::Stage::Acceleration);
  }
};
}  // namespace capstan::testing
