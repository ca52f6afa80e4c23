// Mass matrix, inverse and forward dynamics, energies: consistency checks on
// random trees with every joint type, and a traced (non-double) Scalar.
#include <capstan/dynamics.hpp>
#include <capstan/local_dynamics.hpp>

#include <doctest/doctest.h>

#include "multibody_fixtures.hpp"
#include "traced_scalar.hpp"

#include <cmath>

namespace {

using namespace capstan;
using capstan::testing::randomChain;
using capstan::testing::randomConfiguration;
using capstan::testing::randomTree;
using capstan::testing::randomVectorX;
using capstan::testing::relativeError;
using capstan::testing::Rng;
using capstan::testing::withRandomArmature;

constexpr double kRoundoff = 1e-11;     // relative, O(n^2) flops on O(1) data
constexpr double kPowerFdStep = 1e-3;       // fourth-order central difference
constexpr double kPowerFdTolerance = 1e-8;  // O(h^4) truncation + O(eps/h) roundoff, relative to energy
constexpr int kTrials = 20;
constexpr int kBodies = 10;

TEST_CASE("the mass matrix is symmetric positive definite") {
  Rng rng(21);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Mechanism<double> model = randomTree(rng, kBodies);
    Data<double> data(model);
    const MatrixX<double>& M = crba(model, data, randomConfiguration(rng, model));
    CHECK(relativeError(M, MatrixX<double>(M.transpose())) < kRoundoff);
    Eigen::SelfAdjointEigenSolver<MatrixX<double>> eig(M);
    CHECK(eig.eigenvalues().minCoeff() > 0.0);
  }
}

TEST_CASE("CRBA columns equal RNEA with unit accelerations, no velocity, no gravity") {
  Rng rng(22);
  for (int trial = 0; trial < kTrials; ++trial) {
    Mechanism<double> model = randomTree(rng, kBodies);
    model.gravity.setZero();
    Data<double> data(model);
    const VectorX<double> q = randomConfiguration(rng, model);
    const MatrixX<double> M = crba(model, data, q);
    const VectorX<double> zero = VectorX<double>::Zero(model.nu);
    for (int c = 0; c < model.nu; ++c) {
      CAPTURE(c);
      VectorX<double> e = zero;
      e[c] = 1.0;
      CHECK(relativeError(rnea(model, data, q, zero, e), VectorX<double>(M.col(c))) < kRoundoff);
    }
  }
}

TEST_CASE("inverse dynamics is M udot + C, and C is RNEA at zero acceleration") {
  Rng rng(23);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Mechanism<double> model = randomTree(rng, kBodies);
    Data<double> data(model);
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    const VectorX<double> udot = randomVectorX(rng, model.nu, 1.0);
    const MatrixX<double> M = crba(model, data, q);
    const VectorX<double> C = nonlinearEffects(model, data, q, u);
    CHECK(relativeError(rnea(model, data, q, u, udot), VectorX<double>(M * udot + C)) < kRoundoff);
    CHECK(relativeError(rnea(model, data, q, u, VectorX<double>(VectorX<double>::Zero(model.nu))), C) < kRoundoff);
  }
}

TEST_CASE("kinetic energy is u^T M u / 2 (armature included); potential energy is -m g . p_cm") {
  Rng rng(24);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Mechanism<double> model = withRandomArmature(rng, randomTree(rng, kBodies));
    Data<double> data(model);
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    const MatrixX<double> M = crba(model, data, q);
    forwardKinematics(model, data, q, u);
    CHECK(kineticEnergy(model, data, u) == doctest::Approx(0.5 * u.dot(M * u)).epsilon(kRoundoff));
    double pe = 0.0;
    for (std::size_t b = 0; b < model.bodies.size(); ++b) {
      const Vec3<double> p_WBcm = data.X_WB[b].p + data.X_WB[b].R * model.bodies[b].p_BoBcm_B;
      pe -= model.bodies[b].mass * model.gravity.dot(p_WBcm);
    }
    CHECK(potentialEnergy(model, data) == doctest::Approx(pe).epsilon(kRoundoff));
  }
}

TEST_CASE("forward dynamics: L^T D L, LLT and ABA agree and invert RNEA (armature on half the trials)") {
  Rng rng(25);
  for (int trial = 0; trial < kTrials; ++trial) {
    CAPTURE(trial);
    const Mechanism<double> model =
        trial % 2 == 0 ? randomTree(rng, kBodies) : withRandomArmature(rng, randomTree(rng, kBodies));
    Data<double> data(model);
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
    const VectorX<double> udot = forwardDynamics(model, data, q, u, tau);
    Eigen::LLT<MatrixX<double>> llt(model.nu);
    CHECK(relativeError(forwardDynamicsLlt(model, data, q, u, tau, llt), udot) < kRoundoff);
    CHECK(relativeError(aba(model, data, q, u, tau), udot) < kRoundoff);
    CHECK(relativeError(rnea(model, data, q, u, udot), tau) < kRoundoff);
  }
}

TEST_CASE("tree-sparse L^T D L solves dense and tree-structured systems") {
  Rng rng(26);
  for (int n : {1, 2, 5, 12}) {
    const MatrixX<double> B = randomVectorX(rng, n * n, 1.0).reshaped(n, n);
    const MatrixX<double> A = B * B.transpose() + MatrixX<double>::Identity(n, n);
    std::vector<int> chain(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) chain[static_cast<std::size_t>(k)] = k - 1;
    MatrixX<double> LD = A;
    ltdlFactor(LD, chain);
    VectorX<double> x = randomVectorX(rng, n, 1.0);
    const VectorX<double> b = x;
    ltdlSolve(LD, chain, x);
    CHECK(relativeError(VectorX<double>(A * x), b) < kRoundoff);
  }
  // A branched tree: the factor touches only ancestor entries, so entries
  // between different branches stay exactly as they were (zero).
  const Mechanism<double> model = randomTree(rng, kBodies);
  Data<double> data(model);
  MatrixX<double> LD = crba(model, data, randomConfiguration(rng, model));
  const MatrixX<double> M = LD;
  ltdlFactor(LD, data.dofParent);
  for (int k = 0; k < model.nu; ++k) {
    std::vector<bool> ancestor(static_cast<std::size_t>(k), false);
    for (int i = data.dofParent[static_cast<std::size_t>(k)]; i >= 0; i = data.dofParent[static_cast<std::size_t>(i)]) {
      ancestor[static_cast<std::size_t>(i)] = true;
    }
    for (int i = 0; i < k; ++i) {
      if (!ancestor[static_cast<std::size_t>(i)]) {
        CHECK(M(k, i) == 0.0);
        CHECK(LD(k, i) == 0.0);
      }
    }
  }
  VectorX<double> x = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> b = x;
  ltdlSolve(LD, data.dofParent, x);
  CHECK(relativeError(VectorX<double>(M * x), b) < kRoundoff);
}

TEST_CASE("power balance: d(KE + PE)/dt = u . tau along the motion, rotors' energy included") {
  Rng rng(27);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Mechanism<double> model = withRandomArmature(rng, randomTree(rng, kBodies));
    Data<double> data(model);
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
    const VectorX<double> udot = forwardDynamics(model, data, q, u, tau);
    VectorX<double> qdot;
    qdotFromU(model, q, u, qdot);
    auto energy = [&](double s) {
      const VectorX<double> us = u + s * udot;
      forwardKinematics(model, data, VectorX<double>(q + s * qdot), us);
      return kineticEnergy(model, data, us) + potentialEnergy(model, data);
    };
    const double h = kPowerFdStep;
    const double dEdt = (8 * (energy(h) - energy(-h)) - (energy(2 * h) - energy(-2 * h))) / (12 * h);
    const double power = u.dot(tau);
    CHECK(std::abs(dEdt - power) < kPowerFdTolerance * std::max(1.0, std::abs(energy(0))));
  }
}

TEST_CASE("a simple pendulum has C = m g l sin(theta) and M = m l^2 + I") {
  const double m = 2.0, l = 0.8, g = 9.81, I = 0.03, theta = 0.6;
  Mechanism<double> model;
  Joint<double> pivot;
  pivot.name = "pivot";
  pivot.type = JointType::Revolute;
  model.addBody(Body<double>{"bob", m, Vec3<double>(0, -l, 0), Mat3<double>::Identity() * I}, pivot);
  Data<double> data(model);
  const VectorX<double> q = VectorX<double>::Constant(1, theta);
  const VectorX<double> u = VectorX<double>::Zero(1);
  CHECK(crba(model, data, q)(0, 0) == doctest::Approx(m * l * l + I).epsilon(kRoundoff));
  CHECK(nonlinearEffects(model, data, q, u)[0] == doctest::Approx(m * g * l * std::sin(theta)).epsilon(kRoundoff));
}

// Armature (mechanism.hpp): a rotor of inertia J_r on the pivot adds J_r to
// M, J_r udot to inverse dynamics and J_r u^2 / 2 to the kinetic energy; by
// hand, udot = (tau - m g l_c sin(theta)) / (m l_c^2 + I_zz + J_r).
TEST_CASE("a pendulum with armature: M = m l_c^2 + I_zz + J_r in every algorithm") {
  const double m = 2.0, l = 0.8, g = 9.81, I = 0.03, Jr = 0.25, theta = 0.6, rate = 1.3, tau0 = 0.7, acc = -2.1;
  Mechanism<double> model;
  Joint<double> pivot;
  pivot.name = "pivot";
  pivot.type = JointType::Revolute;
  pivot.armature = Jr;
  model.addBody(Body<double>{"bob", m, Vec3<double>(0, -l, 0), Mat3<double>::Identity() * I}, pivot);
  Data<double> data(model);
  local::Data<double> joint(model);
  const VectorX<double> q = VectorX<double>::Constant(1, theta), u = VectorX<double>::Constant(1, rate);
  const VectorX<double> tau = VectorX<double>::Constant(1, tau0), udot = VectorX<double>::Constant(1, acc);
  const double M = m * l * l + I + Jr, C = m * g * l * std::sin(theta);
  CHECK(crba(model, data, q)(0, 0) == doctest::Approx(M).epsilon(kRoundoff));
  CHECK(local::crba(model, joint, q)(0, 0) == doctest::Approx(M).epsilon(kRoundoff));
  CHECK(rnea(model, data, q, u, udot)[0] == doctest::Approx(M * acc + C).epsilon(kRoundoff));
  CHECK(local::inverseDynamics(model, joint, q, u, udot)[0] == doctest::Approx(M * acc + C).epsilon(kRoundoff));
  const double expected = (tau0 - C) / M;
  CHECK(forwardDynamics(model, data, q, u, tau)[0] == doctest::Approx(expected).epsilon(kRoundoff));
  CHECK(aba(model, data, q, u, tau)[0] == doctest::Approx(expected).epsilon(kRoundoff));
  CHECK(local::aba(model, joint, q, u, tau)[0] == doctest::Approx(expected).epsilon(kRoundoff));
  forwardKinematics(model, data, q, u);
  CHECK(kineticEnergy(model, data, u) == doctest::Approx(0.5 * M * rate * rate).epsilon(kRoundoff));
}

// Two links (a revolute shoulder, a prismatic slider on the arm): with
// armature (J_r kg*m^2, m_r kg) M(q) becomes M_0(q) + diag(J_r, m_r) and
// nothing else changes.
TEST_CASE("a revolute-prismatic arm with armature: M(q) + diag(armature), C unchanged") {
  Rng rng(29);
  Mechanism<double> bare;
  Joint<double> shoulder, slider;
  shoulder.name = "shoulder";
  shoulder.type = JointType::Revolute;
  slider.name = "slider";
  slider.type = JointType::Prismatic;
  slider.parent = 0;
  slider.axis = Vec3<double>::UnitX();
  slider.X_PF = Transform<double>(Mat3<double>::Identity(), Vec3<double>(0.5, 0, 0));
  bare.addBody(Body<double>{"arm", 1.5, Vec3<double>(0.25, 0, 0), Mat3<double>::Identity() * 0.02}, shoulder);
  bare.addBody(Body<double>{"carriage", 0.7, Vec3<double>(0.1, 0.05, 0), Mat3<double>::Identity() * 0.01}, slider);
  Mechanism<double> geared = bare;
  geared.joints[0].armature = 0.4;  // kg*m^2
  geared.joints[1].armature = 3.0;  // kg
  Data<double> d0(bare), d1(geared);
  const VectorX<double> q = randomVectorX(rng, 2, 1.0), u = randomVectorX(rng, 2, 1.0);
  const VectorX<double> udot = randomVectorX(rng, 2, 1.0), tau = randomVectorX(rng, 2, 2.0);
  MatrixX<double> M = crba(bare, d0, q);
  M(0, 0) += 0.4;
  M(1, 1) += 3.0;
  CHECK(relativeError(crba(geared, d1, q), M) < kRoundoff);
  const VectorX<double> C = nonlinearEffects(bare, d0, q, u);
  CHECK(relativeError(nonlinearEffects(geared, d1, q, u), C) < kRoundoff);
  CHECK(relativeError(rnea(geared, d1, q, u, udot), VectorX<double>(M * udot + C)) < kRoundoff);
  const VectorX<double> expected = M.llt().solve(VectorX<double>(tau - C));
  CHECK(relativeError(aba(geared, d1, q, u, tau), expected) < kRoundoff);
  CHECK(relativeError(forwardDynamics(geared, d1, q, u, tau), expected) < kRoundoff);
}

TEST_CASE("the algorithms trace with a Scalar that cannot be branched on") {
  using capstan::testing::Traced;
  Rng rng(28);
  const Mechanism<double> model = withRandomArmature(rng, randomTree(rng, kBodies));
  const Mechanism<Traced> traced = model.cast<Traced>();
  Data<double> data(model);
  Data<Traced> tdata(traced);
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
  const VectorX<Traced> tq = q.cast<Traced>(), tu = u.cast<Traced>(), ttau = tau.cast<Traced>();
  auto value = [](const auto& x) { return capstan::testing::values(x); };

  CHECK(relativeError(value(crba(traced, tdata, tq)), crba(model, data, q)) < kRoundoff);
  CHECK(relativeError(value(nonlinearEffects(traced, tdata, tq, tu)), nonlinearEffects(model, data, q, u)) <
        kRoundoff);
  CHECK(relativeError(value(forwardDynamics(traced, tdata, tq, tu, ttau)), forwardDynamics(model, data, q, u, tau)) <
        kRoundoff);
  CHECK(relativeError(value(aba(traced, tdata, tq, tu, ttau)), aba(model, data, q, u, tau)) < kRoundoff);
  CHECK(kineticEnergy(traced, tdata).value == doctest::Approx(kineticEnergy(model, data)).epsilon(kRoundoff));
  CHECK(kineticEnergy(traced, tdata, tu).value == doctest::Approx(kineticEnergy(model, data, u)).epsilon(kRoundoff));
  CHECK(potentialEnergy(traced, tdata).value == doctest::Approx(potentialEnergy(model, data)).epsilon(kRoundoff));
  VectorX<Traced> tqdot;
  VectorX<double> qdot;
  qdotFromU(traced, tq, tu, tqdot);
  qdotFromU(model, q, u, qdot);
  CHECK(relativeError(value(tqdot), qdot) < kRoundoff);
  // Scale q off the unit sphere so normalization has something to undo.
  VectorX<double> q2 = 1.3 * q;
  VectorX<Traced> tq2 = q2.cast<Traced>();
  normalizeQuaternions(traced, tq2);
  normalizeQuaternions(model, q2);
  CHECK(relativeError(value(tq2), q2) < kRoundoff);
  // Both Data hold position kinematics at q (from the aba calls above).
  MatrixX<Traced> tJ;
  MatrixX<double> J;
  bodyJacobian(traced, tdata, kBodies - 1, tJ);
  bodyJacobian(model, data, kBodies - 1, J);
  REQUIRE(tJ.rows() == 6);
  REQUIRE(tJ.cols() == model.nu);
  CHECK(relativeError(value(tJ), J) < kRoundoff);
}

}  // namespace
