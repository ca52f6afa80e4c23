// The Scalar multibody algorithms (double) against Simbody: the same random
// trees with every joint type, built as MobilizedBody::Pin/Slider/Cylinder/
// Universal/Ball/Free/Weld, compared on mass matrix, udot (World and
// joint-frame algorithms), body poses and velocities, kinetic and potential
// energy.
//
// How joints map onto mobilizers: simbody_mechanism.hpp.
#include "simbody_mechanism.hpp"  // <Simbody.h> first: it clears NDEBUG

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
using capstan::testing::SimbodyModel;
using capstan::testing::toSimbody;

constexpr double kAgreement = 1e-10;  // relative, Simbody vs capstan
constexpr int kRandomTrees = 25;
constexpr int kStatesPerTree = 4;

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
