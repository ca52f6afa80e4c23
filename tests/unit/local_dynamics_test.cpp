// Joint-frame dynamics (local_dynamics.hpp) against the World-frame
// algorithms of dynamics.hpp: the same M, C and udot on random trees with
// every joint type, per joint type on chains, and through a traced Scalar.
#include <capstan/local_dynamics.hpp>

#include <doctest/doctest.h>

#include "multibody_fixtures.hpp"
#include "traced_scalar.hpp"

namespace {

using namespace capstan;
using capstan::testing::kAllJointTypes;
using capstan::testing::randomChain;
using capstan::testing::randomConfiguration;
using capstan::testing::randomTree;
using capstan::testing::randomVectorX;
using capstan::testing::relativeError;
using capstan::testing::Rng;
using capstan::testing::withRandomArmature;

constexpr double kRoundoff = 1e-11;  // relative, as dynamics_test
constexpr int kTrials = 20;
constexpr int kBodies = 10;

// Checks M, C and udot (both methods) of the joint-frame algorithms against
// the World-frame ones at a random state.
void checkAgainstWorld(const Mechanism<double>& model, Rng& rng) {
  capstan::Data<double> world(model);
  local::Data<double> joint(model);
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
  CHECK(relativeError(local::crba(model, joint, q), capstan::crba(model, world, q)) < kRoundoff);
  CHECK(relativeError(local::nonlinearEffects(model, joint, q, u), capstan::nonlinearEffects(model, world, q, u)) <
        kRoundoff);
  const VectorX<double> udot = capstan::forwardDynamics(model, world, q, u, tau);
  CHECK(relativeError(local::forwardDynamics(model, joint, q, u, tau), udot) < kRoundoff);
  CHECK(relativeError(local::aba(model, joint, q, u, tau), udot) < kRoundoff);
  CHECK(relativeError(local::inverseDynamics(model, joint, q, u, udot), tau) < kRoundoff);
}

TEST_CASE("joint-frame M, C and udot equal the World-frame ones on random trees") {
  Rng rng(41);
  for (int trial = 0; trial < kTrials; ++trial) checkAgainstWorld(randomTree(rng, kBodies), rng);
}

TEST_CASE("joint-frame and World-frame dynamics agree with armature on every joint") {
  Rng rng(43);
  for (int trial = 0; trial < 5; ++trial) checkAgainstWorld(withRandomArmature(rng, randomTree(rng, kBodies)), rng);
}

TEST_CASE("joint-frame dynamics agree for chains of each joint type") {
  Rng rng(42);
  for (JointType type : kAllJointTypes) {
    if (type == JointType::Weld) continue;
    const std::string typeName = jointTypeName(type);
    CAPTURE(typeName);
    for (int trial = 0; trial < 4; ++trial) checkAgainstWorld(randomChain(rng, 5, type), rng);
  }
}

TEST_CASE("a World-fixed pendulum: gravity enters as World's acceleration") {
  const double m = 2.0, l = 0.8, g = 9.81, I = 0.03, theta = 0.6;
  Mechanism<double> model;
  Joint<double> pivot;
  pivot.name = "pivot";
  pivot.type = JointType::Revolute;
  model.addBody(Body<double>{"bob", m, Vec3<double>(0, -l, 0), Mat3<double>::Identity() * I}, pivot);
  local::Data<double> data(model);
  const VectorX<double> q = VectorX<double>::Constant(1, theta);
  const VectorX<double> u = VectorX<double>::Zero(1);
  CHECK(local::crba(model, data, q)(0, 0) == doctest::Approx(m * l * l + I).epsilon(kRoundoff));
  CHECK(local::nonlinearEffects(model, data, q, u)[0] == doctest::Approx(m * g * l * std::sin(theta)).epsilon(kRoundoff));
}

TEST_CASE("the joint-frame algorithms trace with a Scalar that cannot be branched on") {
  using capstan::testing::Traced;
  Rng rng(43);
  const Mechanism<double> model = randomTree(rng, kBodies);
  const Mechanism<Traced> traced = model.cast<Traced>();
  local::Data<double> data(model);
  local::Data<Traced> tdata(traced);
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
  const VectorX<Traced> tq = q.cast<Traced>(), tu = u.cast<Traced>(), ttau = tau.cast<Traced>();
  auto value = [](const auto& x) { return capstan::testing::values(x); };
  CHECK(relativeError(value(local::crba(traced, tdata, tq)), local::crba(model, data, q)) < kRoundoff);
  CHECK(relativeError(value(local::forwardDynamics(traced, tdata, tq, tu, ttau)),
                      local::forwardDynamics(model, data, q, u, tau)) < kRoundoff);
  CHECK(relativeError(value(local::aba(traced, tdata, tq, tu, ttau)), local::aba(model, data, q, u, tau)) <
        kRoundoff);
}

}  // namespace
