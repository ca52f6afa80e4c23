// The Scalar multibody algorithms (double) against Simbody: the same random
// trees with every joint type, built as MobilizedBody::Pin/Slider/Cylinder/
// Universal/Ball/Free/Weld, compared on mass matrix, udot (World and
// joint-frame algorithms), body poses and velocities, kinetic and potential
// energy.
//
// Simbody fixes each mobilizer's axes in its F and M frames (Pin and
// Cylinder: z; Slider: x; Universal: x then y), so each joint's F and M frames
// are rotated by the same constant R_FF' that carries Simbody's canonical
// axes onto ours: X_PF' = X_PF * R_FF', X_BM' = X_BM * R_FF'. Then
// R_F'M' = R_FF'^T R_FM R_FF' is Simbody's joint rotation with the same q.
// Ball and Free use the same q (quaternion w,x,y,z of R_FM, p_FM) and u (w_FM
// and v_FM expressed in F) in both.
#include "simbody_cxx20.hpp"  // <Simbody.h>; first: it clears NDEBUG

#include <capstan/dynamics.hpp>
#include <capstan/local_dynamics.hpp>

#include <doctest/doctest.h>

#include "../unit/multibody_fixtures.hpp"

#include <vector>

namespace {

using capstan::JointType;
using capstan::testing::randomConfiguration;
using capstan::testing::randomVectorX;
using capstan::testing::Rng;

constexpr double kAgreement = 1e-10;  // relative, Simbody vs capstan
constexpr int kRandomTrees = 25;
constexpr int kStatesPerTree = 4;

SimTK::Vec3 toSimbody(const capstan::Vec3<double>& v) { return SimTK::Vec3(v[0], v[1], v[2]); }

SimTK::Rotation toSimbody(const capstan::Mat3<double>& R) {
  const SimTK::Mat33 m(R(0, 0), R(0, 1), R(0, 2), R(1, 0), R(1, 1), R(1, 2), R(2, 0), R(2, 1), R(2, 2));
  return SimTK::Rotation(m, true);  // orthonormal by construction
}

SimTK::Transform toSimbody(const capstan::Transform<double>& X) {
  return SimTK::Transform(toSimbody(X.R), toSimbody(X.p));
}

// An orthonormal basis (columns) with the given unit vector as column `k`.
capstan::Mat3<double> basisWithColumn(const capstan::Vec3<double>& a, int k) {
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
capstan::Mat3<double> simbodyAxisFrame(const capstan::Joint<double>& joint) {
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

double relativeDifference(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

void compareWithSimbody(const capstan::Mechanism<double>& model, Rng& rng) {
  SimbodyModel simbody(model);
  capstan::Data<double> data(model);
  capstan::local::Data<double> local(model);
  for (int s = 0; s < kStatesPerTree; ++s) {
    const capstan::VectorX<double> q = randomConfiguration(rng, model);
    const capstan::VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    const capstan::VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
    simbody.setState(q, u, tau);

    // Mass matrix.
    const capstan::MatrixX<double> M = capstan::crba(model, data, q);
    SimTK::Matrix Ms;
    simbody.matter.calcM(simbody.state, Ms);
    double scale = std::max(1.0, M.size() > 0 ? M.cwiseAbs().maxCoeff() : 0.0);
    for (int r = 0; r < model.nu; ++r) {
      for (int c = 0; c < model.nu; ++c) CHECK(std::abs(M(r, c) - Ms(r, c)) / scale < kAgreement);
    }

    // Forward dynamics (both of capstan's methods).
    const capstan::VectorX<double> udot = capstan::forwardDynamics(model, data, q, u, tau);
    const SimTK::Vector& udot_s = simbody.state.getUDot();
    scale = std::max(1.0, udot.size() > 0 ? udot.cwiseAbs().maxCoeff() : 0.0);
    for (int k = 0; k < model.nu; ++k) CHECK(std::abs(udot[k] - udot_s[k]) / scale < kAgreement);
    const capstan::VectorX<double> udot_aba = capstan::aba(model, data, q, u, tau);
    for (int k = 0; k < model.nu; ++k) CHECK(std::abs(udot_aba[k] - udot_s[k]) / scale < kAgreement);
    // The joint-frame versions generated code is traced from.
    const capstan::VectorX<double> udot_local = capstan::local::forwardDynamics(model, local, q, u, tau);
    for (int k = 0; k < model.nu; ++k) CHECK(std::abs(udot_local[k] - udot_s[k]) / scale < kAgreement);
    const capstan::VectorX<double> udot_local_aba = capstan::local::aba(model, local, q, u, tau);
    for (int k = 0; k < model.nu; ++k) CHECK(std::abs(udot_local_aba[k] - udot_s[k]) / scale < kAgreement);

    // Body poses and velocities.
    capstan::forwardKinematics(model, data, q, u);
    for (std::size_t b = 0; b < simbody.mobods.size(); ++b) {
      CAPTURE(b);
      const SimTK::Transform& X_GB = simbody.mobods[b].getBodyTransform(simbody.state);
      const SimTK::SpatialVec& V_GB = simbody.mobods[b].getBodyVelocity(simbody.state);
      for (int r = 0; r < 3; ++r) {
        CHECK(relativeDifference(data.X_WB[b].p[r], X_GB.p()[r]) < kAgreement);
        CHECK(relativeDifference(data.V_WB[b][r], V_GB[0][r]) < kAgreement);
        CHECK(relativeDifference(data.V_WB[b][3 + r], V_GB[1][r]) < kAgreement);
        for (int c = 0; c < 3; ++c) CHECK(relativeDifference(data.X_WB[b].R(r, c), X_GB.R()[r][c]) < kAgreement);
      }
    }

    // Frame Jacobians and their bias J-dot u at a random origin on each body
    // (the generated frameJacobian and frameJacobianDotU are traced from
    // these), against Simbody's calcFrameJacobian / calcBiasForFrameJacobian.
    for (std::size_t b = 0; b < simbody.mobods.size(); ++b) {
      CAPTURE(b);
      const capstan::Vec3<double> p = randomVectorX(rng, 3, 0.5);
      capstan::MatrixX<double> J;
      capstan::frameJacobian(model, data, static_cast<int>(b), p, J);
      SimTK::Matrix Js;
      const SimTK::MobilizedBodyIndex index = simbody.mobods[b].getMobilizedBodyIndex();
      simbody.matter.calcFrameJacobian(simbody.state, index, toSimbody(p), Js);
      REQUIRE(Js.nrow() == 6);
      REQUIRE(Js.ncol() == model.nu);
      for (int r = 0; r < 6; ++r)
        for (int c = 0; c < model.nu; ++c) CHECK(relativeDifference(J(r, c), Js(r, c)) < kAgreement);
      const capstan::Vec6<double> a = capstan::frameJacobianDotU(model, data, static_cast<int>(b), p);
      const SimTK::SpatialVec as = simbody.matter.calcBiasForFrameJacobian(simbody.state, index, toSimbody(p));
      for (int r = 0; r < 3; ++r) {
        CHECK(relativeDifference(a[r], as[0][r]) < kAgreement);
        CHECK(relativeDifference(a[3 + r], as[1][r]) < kAgreement);
      }
    }

    // Energies.
    CHECK(relativeDifference(capstan::kineticEnergy(model, data), simbody.matter.calcKineticEnergy(simbody.state)) <
          kAgreement);
    CHECK(relativeDifference(capstan::potentialEnergy(model, data), simbody.system.calcPotentialEnergy(simbody.state)) <
          kAgreement);
  }
}

TEST_CASE("random trees with every joint type agree with Simbody") {
  Rng rng(101);
  for (int trial = 0; trial < kRandomTrees; ++trial) {
    CAPTURE(trial);
    const int n = 1 + trial % 12;
    compareWithSimbody(capstan::testing::randomTree(rng, n), rng);
  }
}

TEST_CASE("serial chains of one joint type agree with Simbody") {
  Rng rng(102);
  for (JointType type : capstan::testing::kAllJointTypes) {
    CAPTURE(capstan::jointTypeName(type));
    compareWithSimbody(capstan::testing::randomChain(rng, 6, type), rng);
  }
}

}  // namespace
