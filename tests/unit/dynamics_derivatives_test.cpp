// Analytical derivatives of inverse and forward dynamics in joint frames
// (dynamics_derivatives.hpp) against central differences of
// local::inverseDynamics and local::aba, on random trees of every joint type
// and chains of each type, with external forces; d udot / d tau M = I; and
// through a traced Scalar.
#include <capstan/dynamics_derivatives.hpp>

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

constexpr double kDifferences = 1e-6;  // relative, vs central differences
constexpr double kStep = 1e-5;         // central-difference step
constexpr double kRoundoff = 1e-11;

ExternalForces<double> randomForces(Rng& rng, const Mechanism<double>& model) {
  ExternalForces<double> fext;
  for (int b = 0; b < model.numBodies(); ++b) fext.push_back(randomVectorX(rng, 6, 3.0));
  return fext;
}

// Central differences of f(q, u) along q + eps N(q) e_j and u + eps e_j.
template <class F>
void centralDifferences(const Mechanism<double>& model, const VectorX<double>& q, const VectorX<double>& u, F f,
                        MatrixX<double>& dq, MatrixX<double>& du) {
  const MatrixX<double> N = nMatrix(model, q);
  dq.resize(model.nu, model.nu);
  du.resize(model.nu, model.nu);
  for (int j = 0; j < model.nu; ++j) {
    const VectorX<double> e = VectorX<double>::Unit(model.nu, j);
    dq.col(j) = (f(VectorX<double>(q + kStep * N.col(j)), u) - f(VectorX<double>(q - kStep * N.col(j)), u)) / (2 * kStep);
    du.col(j) = (f(q, VectorX<double>(u + kStep * e)) - f(q, VectorX<double>(u - kStep * e))) / (2 * kStep);
  }
}

void checkDerivatives(const Mechanism<double>& model, Rng& rng, bool withForces) {
  local::Data<double> data(model);
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> udot = randomVectorX(rng, model.nu, 2.0);
  const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
  const ExternalForces<double> fext = randomForces(rng, model);
  const ExternalForces<double>* F = withForces ? &fext : nullptr;

  // Inverse dynamics.
  MatrixX<double> dtau_dq, dtau_du, fdq, fdu;
  local::inverseDynamicsDerivatives(model, data, q, u, udot, F, dtau_dq, dtau_du);
  centralDifferences(model, q, u, [&](const VectorX<double>& x, const VectorX<double>& y) {
    local::Data<double> d(model);
    return VectorX<double>(local::inverseDynamics(model, d, x, y, udot, F));
  }, fdq, fdu);
  CHECK(relativeError(dtau_dq, fdq) < kDifferences);
  CHECK(relativeError(dtau_du, fdu) < kDifferences);
  // d tau / d udot = M.
  local::Data<double> d(model);
  const MatrixX<double> M = local::crba(model, d, q);

  // Forward dynamics.
  MatrixX<double> dq, du, dtau;
  local::forwardDynamicsDerivatives(model, data, q, u, tau, F, dq, du, dtau);
  centralDifferences(model, q, u, [&](const VectorX<double>& x, const VectorX<double>& y) {
    local::Data<double> w(model);
    return VectorX<double>(local::aba(model, w, x, y, tau, F));
  }, fdq, fdu);
  CHECK(relativeError(dq, fdq) < kDifferences);
  CHECK(relativeError(du, fdu) < kDifferences);
  CHECK(relativeError(MatrixX<double>(dtau * M), MatrixX<double>::Identity(model.nu, model.nu)) < 1e-9);

  // udot solved for on the way (from the recursions' M) is ABA's, and the
  // derivatives there are those at ABA's udot.
  VectorX<double> udotSolved;
  MatrixX<double> Minv, tq, tu;
  local::inverseDynamicsDerivativesAtForwardDynamics(model, data, q, u, tau, F, udotSolved, Minv, tq, tu);
  local::Data<double> w(model);
  const VectorX<double> udotAba = local::aba(model, w, q, u, tau, F);
  CHECK(relativeError(udotSolved, udotAba) < kRoundoff);
  CHECK(relativeError(Minv, MatrixX<double>(M.inverse())) < 1e-9);  // ltdlInverse against Eigen's LU of CRBA's M
  local::inverseDynamicsDerivatives(model, data, q, u, udotAba, F, dtau_dq, dtau_du);
  CHECK(relativeError(tq, dtau_dq) < 1e-9);
  CHECK(relativeError(tu, dtau_du) < 1e-9);
}

TEST_CASE("the factored derivatives plus their pair terms are the assembled ones, M included") {
  Rng rng(77);
  for (int trial = 0; trial < 8; ++trial) {
    CAPTURE(trial);
    const Mechanism<double> model = withRandomArmature(rng, randomTree(rng, 8));
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0), udot = randomVectorX(rng, model.nu, 2.0);
    const ExternalForces<double> fext = randomForces(rng, model);
    const ExternalForces<double>* F = trial % 2 == 0 ? &fext : nullptr;
    local::Data<double> whole(model), factored(model);
    MatrixX<double> dq, du, fq, fu;
    local::inverseDynamicsDerivatives(model, whole, q, u, udot, F, dq, du, /*massMatrix=*/true);
    local::DerivativePairs<double> pairs;
    local::inverseDynamicsDerivativesFactored(model, factored, q, u, udot, F, fq, fu, pairs);
    CHECK(pairs.F.rows() == (F != nullptr ? 18 : 12));
    local::addDerivativePairs(factored.dofParent, local::firstDofs(model), pairs, &fq, &fu, &factored.M);
    CHECK(relativeError(fq, dq) < kRoundoff);
    CHECK(relativeError(fu, du) < kRoundoff);
    CHECK(relativeError(factored.M, whole.M) < kRoundoff);
  }
}

TEST_CASE("the velocity-inertia product B from the inertia's structure equals its definition column by column") {
  Rng rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    const Vec3<double> h = randomVectorX(rng, 3, 1.0);
    const MatrixX<double> A = MatrixX<double>(randomVectorX(rng, 9, 1.0).reshaped(3, 3));
    const SpatialInertia<double> Y(1.0 + trial, h, Mat3<double>(A * A.transpose()));
    const Vec6<double> v = randomVectorX(rng, 6, 2.0);
    const Mat6<double> B = local::detail::velocityInertiaProduct(Y, v);
    for (int c = 0; c < 6; ++c) {
      const Vec6<double> e = Vec6<double>::Unit(c);
      const Vec6<double> want = crossForce(v, Vec6<double>(Y * e)) - Y * crossMotion(v, e) + crossForce(e, Vec6<double>(Y * v));
      CHECK(relativeError(Vec6<double>(B.col(c)), want) < kRoundoff);
    }
  }
}

TEST_CASE("inverse and forward dynamics derivatives match central differences on random trees") {
  Rng rng(71);
  for (int trial = 0; trial < 12; ++trial) {
    CAPTURE(trial);
    const Mechanism<double> model = randomTree(rng, 8);
    checkDerivatives(model, rng, trial % 2 == 0);
  }
}

TEST_CASE("dynamics derivatives with armature: d tau / d udot = M includes it, ABA's derivatives match") {
  Rng rng(76);
  for (int trial = 0; trial < 4; ++trial) {
    CAPTURE(trial);
    checkDerivatives(withRandomArmature(rng, randomTree(rng, 8)), rng, trial % 2 == 0);
  }
}

TEST_CASE("dynamics derivatives match central differences on chains of each joint type") {
  Rng rng(72);
  for (JointType type : kAllJointTypes) {
    if (type == JointType::Weld) continue;
    const std::string typeName = jointTypeName(type);
    CAPTURE(typeName);
    for (int trial = 0; trial < 3; ++trial) checkDerivatives(randomChain(rng, 4, type), rng, trial != 1);
  }
}

TEST_CASE("d tau / dq is structurally zero off the tree's paths") {
  // Two branches from one root: dofs of different branches do not couple.
  Rng rng(73);
  Mechanism<double> model;
  model.gravity = Vec3<double>(0, 0, -9.81);
  const int parents[] = {-1, 0, 1, 0, 3};
  for (int i = 0; i < 5; ++i) {
    model.addBody(capstan::testing::randomBody(rng, "b" + std::to_string(i)),
                  capstan::testing::randomJoint(rng, JointType::Revolute, parents[i], "j" + std::to_string(i)));
  }
  local::Data<double> data(model);
  MatrixX<double> dq, du;
  const VectorX<double> q = randomConfiguration(rng, model), u = randomVectorX(rng, 5, 1.0);
  local::inverseDynamicsDerivatives(model, data, q, u, randomVectorX(rng, 5, 1.0),
                                    static_cast<const ExternalForces<double>*>(nullptr), dq, du);
  for (int i : {1, 2}) {
    for (int j : {3, 4}) {
      CHECK(dq(i, j) == 0.0);
      CHECK(dq(j, i) == 0.0);
      CHECK(du(i, j) == 0.0);
      CHECK(du(j, i) == 0.0);
    }
  }
}

TEST_CASE("external force derivatives enter as -J^T dF") {
  Rng rng(74);
  const Mechanism<double> model = randomTree(rng, 6);
  local::Data<double> data(model);
  const VectorX<double> q = randomConfiguration(rng, model), u = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> udot = randomVectorX(rng, model.nu, 1.0);
  const ExternalForces<double> fext = randomForces(rng, model), dF = randomForces(rng, model);
  local::inverseDynamics(model, data, q, u, udot, &fext);
  MatrixX<double> column = MatrixX<double>::Zero(model.nu, 1);
  local::addExternalForceDerivative(model, data, dF, column, 0);
  // inverse dynamics is affine in fext.
  ExternalForces<double> shifted = fext;
  for (std::size_t b = 0; b < shifted.size(); ++b) shifted[b] += dF[b];
  local::Data<double> d2(model);
  const VectorX<double> tau0 = local::inverseDynamics(model, data, q, u, udot, &fext);
  const VectorX<double> tau1 = local::inverseDynamics(model, d2, q, u, udot, &shifted);
  CHECK(relativeError(VectorX<double>(column.col(0)), VectorX<double>(tau1 - tau0)) < kRoundoff);
}

TEST_CASE("the derivative recursions trace with a Scalar that cannot be branched on") {
  using capstan::testing::Traced;
  Rng rng(75);
  const Mechanism<double> model = randomTree(rng, 8);
  const Mechanism<Traced> traced = model.cast<Traced>();
  local::Data<double> data(model);
  local::Data<Traced> tdata(traced);
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
  const ExternalForces<double> fext = randomForces(rng, model);
  ExternalForces<Traced> tfext;
  for (const Vec6<double>& F : fext) tfext.push_back(F.cast<Traced>());
  MatrixX<double> dq, du, dtau;
  MatrixX<Traced> tdq, tdu, tdtau;
  local::forwardDynamicsDerivatives(model, data, q, u, tau, &fext, dq, du, dtau);
  local::forwardDynamicsDerivatives(traced, tdata, VectorX<Traced>(q.cast<Traced>()), VectorX<Traced>(u.cast<Traced>()),
                                    VectorX<Traced>(tau.cast<Traced>()), &tfext, tdq, tdu, tdtau);
  auto value = [](const auto& x) { return capstan::testing::values(x); };
  CHECK(relativeError(value(tdq), dq) < kRoundoff);
  CHECK(relativeError(value(tdu), du) < kRoundoff);
  CHECK(relativeError(value(tdtau), dtau) < kRoundoff);
}

}  // namespace
