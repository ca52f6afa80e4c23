// External spatial forces in the joint-frame dynamics (local_dynamics.hpp),
// checked against the principle of virtual work through World-frame body
// Jacobians (kinematics.hpp): with F_B about Bo in World, forward dynamics
// with fext equals forward dynamics with tau + sum_B J_WB^T F_B, and inverse
// dynamics undoes forward dynamics with fext.
#include <capstan/local_dynamics.hpp>

#include <doctest/doctest.h>

#include "multibody_fixtures.hpp"

namespace {

using namespace capstan;
using capstan::testing::kAllJointTypes;
using capstan::testing::randomChain;
using capstan::testing::randomConfiguration;
using capstan::testing::randomTree;
using capstan::testing::randomVector;
using capstan::testing::randomVectorX;
using capstan::testing::relativeError;
using capstan::testing::Rng;

constexpr double kRoundoff = 1e-10;

local::ExternalForces<double> randomForces(Rng& rng, const Mechanism<double>& model) {
  local::ExternalForces<double> fext;
  for (int b = 0; b < model.numBodies(); ++b) {
    fext.push_back(spatialVector<double>(randomVector(rng, 3.0), randomVector(rng, 10.0)));
  }
  return fext;
}

// tau + sum_B J_WB^T F_B, the generalized forces fext is worth.
VectorX<double> virtualWorkTau(const Mechanism<double>& model, const VectorX<double>& q, const VectorX<double>& tau,
                               const local::ExternalForces<double>& fext) {
  capstan::Data<double> world(model);
  forwardKinematics(model, world, q);
  VectorX<double> total = tau;
  MatrixX<double> J;
  for (int b = 0; b < model.numBodies(); ++b) {
    bodyJacobian(model, world, b, J);
    total += J.transpose() * fext[static_cast<std::size_t>(b)];
  }
  return total;
}

void checkExternalForces(const Mechanism<double>& model, Rng& rng) {
  local::Data<double> data(model);
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
  const local::ExternalForces<double> fext = randomForces(rng, model);
  const VectorX<double> tauTotal = virtualWorkTau(model, q, tau, fext);
  const VectorX<double> expected = local::aba(model, data, q, u, tauTotal);
  const VectorX<double> viaAba = local::aba(model, data, q, u, tau, fext);
  const VectorX<double> viaCrba = local::forwardDynamics(model, data, q, u, tau, fext);
  CHECK(relativeError(viaAba, expected) < kRoundoff);
  CHECK(relativeError(viaCrba, expected) < kRoundoff);
  // The fext term must matter, or the checks above prove nothing.
  CHECK(relativeError(local::aba(model, data, q, u, tau), expected) > 1e-6);
  // C with fext is C - sum J^T F.
  const VectorX<double> C = local::nonlinearEffects(model, data, q, u);
  CHECK(relativeError(VectorX<double>(local::nonlinearEffects(model, data, q, u, fext)),
                      VectorX<double>(C - (tauTotal - tau))) < kRoundoff);
  // Inverse dynamics undoes forward dynamics, with and without fext.
  CHECK(relativeError(VectorX<double>(local::inverseDynamics(model, data, q, u, viaAba, fext)), tau) < kRoundoff);
  const VectorX<double> udot0 = local::aba(model, data, q, u, tau);
  CHECK(relativeError(VectorX<double>(local::inverseDynamics(model, data, q, u, udot0)), tau) < kRoundoff);
}

TEST_CASE("external forces obey virtual work on random trees") {
  Rng rng(81);
  for (int trial = 0; trial < 20; ++trial) checkExternalForces(randomTree(rng, 8), rng);
}

TEST_CASE("external forces obey virtual work on chains of each joint type") {
  Rng rng(82);
  for (JointType type : kAllJointTypes) {
    if (type == JointType::Weld) continue;
    const std::string typeName = jointTypeName(type);
    CAPTURE(typeName);
    for (int trial = 0; trial < 3; ++trial) checkExternalForces(randomChain(rng, 4, type), rng);
  }
}

TEST_CASE("external forces: one per body or a clear error") {
  Rng rng(83);
  const Mechanism<double> model = randomTree(rng, 3);
  local::Data<double> data(model);
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = VectorX<double>::Zero(model.nu);
  const local::ExternalForces<double> tooFew(2, Vec6<double>::Zero());
  CHECK_THROWS_AS(local::aba(model, data, q, u, u, tooFew), std::invalid_argument);
}

}  // namespace
