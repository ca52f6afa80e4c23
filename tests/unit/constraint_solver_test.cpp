// ConstraintSolver (constraint_solver.hpp) over the runtime's own algorithms
// (constrained_mechanism.hpp's adapter): redundant rows of a planar
// four-bar, enabling and disabling, Baumgarte stabilization, coordinate
// projection and assembly, and the failure of an impossible assembly.
#include "constrained_mechanism.hpp"
#include "multibody_fixtures.hpp"

#include <capstan/integrators.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>

namespace {

using namespace capstan;
using capstan::testing::ConstrainedMechanism;
using capstan::testing::cutJoint;
using capstan::testing::nullSpaceProjector;
using capstan::testing::randomBody;
using capstan::testing::randomConfiguration;
using capstan::testing::randomJoint;
using capstan::testing::randomTransform;
using capstan::testing::randomTree;
using capstan::testing::randomVectorX;
using capstan::testing::relativeError;
using capstan::testing::Rng;
using capstan::testing::sphereContact;

using Solver = ConstraintSolver<ConstrainedMechanism>;

constexpr double kRoundoff = 1e-10;   // relative: identities that hold to rounding
constexpr double kAgreement = 1e-9;   // relative: two formulations of one mechanism
constexpr double kIntegration = 1e-6; // relative: RK4 at 50 steps per time constant, 5 time constants

double infinityNorm(const Eigen::Ref<const VectorX<double>>& v) { return v.size() > 0 ? v.cwiseAbs().maxCoeff() : 0.0; }

// ------------------------------------------------------------- four-bar

// A planar four-bar in World's x-y plane: ground pivots A = 0 and D = (d, 0,
// 0); crank (length a) on a Revolute about z at A, coupler (b) and rocker
// (c) each on a Revolute about z at the end of the previous link; the
// rocker's far end closed to D by a Revolute cut (5 rows, of which only the
// two in-plane translations are independent). Each link's frame is at its
// proximal pivot, x along the link. Gravity -y.
struct FourBar {
  Mechanism<double> model;
  Constraint<double> cut;
  VectorX<double> q;  // assembled at crank angle theta
};

constexpr double kCrank = 0.3, kCoupler = 1.0, kRocker = 0.8, kGround = 0.9;  // m

FourBar fourBar(double theta) {
  FourBar out;
  out.model.gravity = Vec3<double>(0, -9.81, 0);
  const double lengths[] = {kCrank, kCoupler, kRocker};
  for (int i = 0; i < 3; ++i) {
    Joint<double> pivot;
    pivot.name = "pivot" + std::to_string(i);
    pivot.type = JointType::Revolute;
    pivot.parent = i - 1;
    pivot.axis = Vec3<double>::UnitZ();
    if (i > 0) pivot.X_PF.p = Vec3<double>(lengths[i - 1], 0, 0);
    const double m = 2.0 * lengths[i], L = lengths[i];
    Mat3<double> I = Mat3<double>::Zero();
    I.diagonal() << 1e-3, m * L * L / 12, m * L * L / 12;
    out.model.addBody(Body<double>{"link" + std::to_string(i), m, Vec3<double>(L / 2, 0, 0), I}, pivot);
  }
  Joint<double> axes;
  axes.axis = Vec3<double>::UnitZ();
  out.cut =
      cutJoint(JointType::Revolute, {-1, Transform<double>(Mat3<double>::Identity(), Vec3<double>(kGround, 0, 0))},
               {2, Transform<double>(Mat3<double>::Identity(), Vec3<double>(kRocker, 0, 0))}, axes);
  // Assembly by hand: B = a (cos, sin) theta; C where the circles about B
  // (radius b) and D (radius c) meet, above the ground line.
  const Eigen::Vector2d B(kCrank * std::cos(theta), kCrank * std::sin(theta)), D(kGround, 0);
  const double dist = (D - B).norm();
  const double along = (dist * dist + kCoupler * kCoupler - kRocker * kRocker) / (2 * dist);
  const double across = std::sqrt(kCoupler * kCoupler - along * along);
  const Eigen::Vector2d e = (D - B) / dist;
  const Eigen::Vector2d C = B + along * e + across * Eigen::Vector2d(-e.y(), e.x());
  const double coupler = std::atan2(C.y() - B.y(), C.x() - B.x());
  const double rocker = std::atan2(D.y() - C.y(), D.x() - C.x());
  out.q = Eigen::Vector3d(theta, coupler - theta, rocker - coupler);
  return out;
}

TEST_CASE("a planar four-bar: 5 cut rows of rank 2 give the udot of its 2 independent rows") {
  Rng rng(401);
  int states = 0;
  for (double theta : {0.3, 1.1, 2.0, -0.8}) {
    CAPTURE(theta);
    const FourBar bar = fourBar(theta);
    Constraint<double> inPlane = bar.cut;
    inPlane.rows.resize(2);  // the translations along F's x and y
    REQUIRE(inPlane.rows[0].kind == LoopRowKind::Translation);
    REQUIRE(inPlane.rows[1].kind == LoopRowKind::Translation);
    ConstrainedMechanism full(bar.model, {bar.cut}), independent(bar.model, {inPlane});
    REQUIRE(infinityNorm(full.rows(bar.q, VectorX<double>::Zero(3)).positionErrors) < kRoundoff);
    const VectorX<double> u =
        nullSpaceProjector(full.rows(bar.q, VectorX<double>::Zero(3)).G) * randomVectorX(rng, 3, 2.0);
    full.tau() = independent.tau() = randomVectorX(rng, 3, 5.0);
    Solver fullSolver(full, full.rowRanges()), independentSolver(independent, independent.rowRanges());
    VectorX<double> udot, lambda, udotIndependent, lambdaIndependent;
    fullSolver.accelerations(0.0, bar.q, u, udot, lambda);
    independentSolver.accelerations(0.0, bar.q, u, udotIndependent, lambdaIndependent);
    CHECK(fullSolver.rowCount() == 5);
    CHECK(fullSolver.rank() == 2);
    CHECK(independentSolver.rank() == 2);
    CHECK(udot.allFinite());
    CHECK(lambda.allFinite());
    CHECK(relativeError(udot, udotIndependent) < kAgreement);
    // The minimum-norm multipliers: the in-plane ones as the independent
    // rows', nothing on the out-of-plane rows (whose G rows vanish).
    CHECK(relativeError(lambda.head<2>(), lambdaIndependent) < kAgreement);
    CHECK(infinityNorm(lambda.tail<3>()) < kAgreement * std::max(1.0, infinityNorm(lambdaIndependent)));
    // The loop's acceleration constraint holds, and the one dof moves.
    const ConstraintRows<double> rows = full.rows(bar.q, u);
    CHECK(relativeError(VectorX<double>(rows.G * udot), rows.gamma) < kRoundoff);
    CHECK(infinityNorm(udot) > 0.1);
    ++states;
  }
  CHECK(states == 4);
}

// ------------------------------------------------------ enable / disable

TEST_CASE("disabling every constraint gives the tree's udot; disabling one gives the others' udot") {
  Rng rng(402);
  for (int trial = 0; trial < 8; ++trial) {
    CAPTURE(trial);
    Mechanism<double> model = randomTree(rng, 7);
    const int floater =
        model.addBody(randomBody(rng, "floater"), randomJoint(rng, JointType::Free, 3, "floating"));
    const Constraint<double> ball = cutJoint(JointType::Ball, {1, randomTransform(rng, 0.5)},
                                             {floater, randomTransform(rng, 0.5)}, Joint<double>{});
    const Constraint<double> rolling =
        sphereContact({-1, randomTransform(rng, 0.5)}, 0.3, {floater, randomTransform(rng, 0.5)}, 0.2, true);
    ConstrainedMechanism both(model, {ball, rolling}), ballOnly(model, {ball}), rollingOnly(model, {rolling});
    const VectorX<double> q = randomConfiguration(rng, model), u = randomVectorX(rng, model.nu, 1.0);
    const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
    both.tau() = ballOnly.tau() = rollingOnly.tau() = tau;
    Solver solver(both, both.rowRanges());
    VectorX<double> udot, lambda, expectedUdot, expectedLambda;
    // Both enabled: 3 + 1 + 2 rows, of rank 6 or 5 (with two points of the
    // floater held, a pair of forces along the line through them is
    // redundant unless the Ball's other body can take it): G's rank.
    solver.accelerations(0.0, q, u, udot, lambda);
    Eigen::JacobiSVD<MatrixX<double>> svd(both.rows(q, u).G);
    svd.setThreshold(1e-8);
    CHECK(solver.rank() == svd.rank());
    CHECK(solver.rank() >= 5);
    const VectorX<double> udotBoth = udot;
    // Neither: the tree's own forward dynamics, no multipliers.
    solver.enable(0, false);
    solver.enable(1, false);
    CHECK_FALSE(solver.enabled(0));
    solver.accelerations(0.0, q, u, udot, lambda);
    Data<double> data(model);
    CHECK(relativeError(udot, VectorX<double>(forwardDynamics(model, data, q, u, tau))) < kRoundoff);
    CHECK(infinityNorm(lambda) == 0.0);
    CHECK(solver.rank() == 0);
    CHECK(solver.positionError(q) == 0.0);  // disabled errors are not counted
    // Only the ball, then only the rolling contact: as if the other were not there.
    solver.enable(0, true);
    solver.accelerations(0.0, q, u, udot, lambda);
    Solver(ballOnly, ballOnly.rowRanges()).accelerations(0.0, q, u, expectedUdot, expectedLambda);
    CHECK(relativeError(udot, expectedUdot) < kAgreement);
    CHECK(relativeError(lambda.head<3>(), expectedLambda) < kAgreement);
    CHECK(infinityNorm(lambda.tail<3>()) == 0.0);
    solver.enable(0, false);
    solver.enable(1, true);
    solver.accelerations(0.0, q, u, udot, lambda);
    Solver(rollingOnly, rollingOnly.rowRanges()).accelerations(0.0, q, u, expectedUdot, expectedLambda);
    CHECK(relativeError(udot, expectedUdot) < kAgreement);
    CHECK(infinityNorm(lambda.head<3>()) == 0.0);
    CHECK(std::abs(lambda[3] - expectedLambda[0]) < kAgreement * std::max(1.0, infinityNorm(expectedLambda)));
    CHECK(relativeError(lambda.tail<2>(), expectedLambda.tail<2>()) < kAgreement);
    // And back: both again.
    solver.enable(0, true);
    solver.accelerations(0.0, q, u, udot, lambda);
    CHECK(relativeError(udot, udotBoth) < kRoundoff);
  }
}

TEST_CASE("constraints without rows (a Free cut) leave the tree's own motion") {
  Rng rng(403);
  const Mechanism<double> model = randomTree(rng, 7);
  ConstrainedMechanism mech(model, {cutJoint(JointType::Free, {0, {}}, {3, {}}, Joint<double>{})});
  mech.tau() = randomVectorX(rng, model.nu, 5.0);
  const VectorX<double> q = randomConfiguration(rng, model), u = randomVectorX(rng, model.nu, 1.0);
  Solver solver(mech, mech.rowRanges());
  VectorX<double> udot, lambda;
  solver.accelerations(0.0, q, u, udot, lambda);
  Data<double> data(model);
  CHECK(solver.rowCount() == 0);
  CHECK(solver.rank() == 0);
  CHECK(lambda.size() == 0);
  CHECK(relativeError(udot, VectorX<double>(forwardDynamics(model, data, q, u, mech.tau()))) < kRoundoff);
  VectorX<double> qp = q, up = u;
  solver.project(qp, up);
  CHECK(relativeError(qp, q) < kRoundoff);
  CHECK(relativeError(up, u) == 0.0);
}

// ------------------------------------------------------------ Baumgarte

// x = [q; u] of a constrained mechanism for rk4, udot from the solver;
// project() normalizes quaternions and, when asked, projects onto the
// constraints.
struct Constrained {
  Constrained(ConstrainedMechanism& m, Solver& s, bool projectAfterEachStep = false)
      : mech(m), solver(s), projectAfterStep(projectAfterEachStep) {}

  ConstrainedMechanism& mech;
  Solver& solver;
  bool projectAfterStep;
  VectorX<double> udot, lambda, qdot;

  void derivative(double t, const VectorX<double>& x, VectorX<double>& xdot) {
    const int nq = mech.model().nq, nu = mech.model().nu;
    const VectorX<double> q = x.head(nq), u = x.tail(nu);
    solver.accelerations(t, q, u, udot, lambda);
    mech.qdot(q, u, qdot);
    xdot.resize(nq + nu);
    xdot << qdot, udot;
  }
  void project(VectorX<double>& x) {
    const int nq = mech.model().nq, nu = mech.model().nu;
    VectorX<double> q = x.head(nq), u = x.tail(nu);
    if (projectAfterStep) {
      solver.project(q, u);
    } else {
      mech.normalizeQuaternions(q);
    }
    x << q, u;
  }
};

VectorX<double> stateOf(const VectorX<double>& q, const VectorX<double>& u) {
  VectorX<double> x(q.size() + u.size());
  x << q, u;
  return x;
}

TEST_CASE("Baumgarte: a position error decays as (1 + t/T) e^(-t/T), and stays without stabilization") {
  // A free body held at a point by a Ball cut to World, started off by a
  // known offset at rest. With time constant T each row obeys
  // phi'' = -2/T phi' - phi/T^2 exactly (the rows are independent), so from
  // phi' = 0: phi(t) = phi(0) (1 + t/T) e^(-t/T). Without it phi'' = 0.
  Rng rng(404);
  Mechanism<double> model;
  model.gravity = Vec3<double>(0, -9.81, 0);
  model.addBody(randomBody(rng, "body"), randomJoint(rng, JointType::Free, -1, "free"));
  const VectorX<double> q0 = randomConfiguration(rng, model), u0 = VectorX<double>::Zero(6);
  Data<double> data(model);
  forwardKinematics(model, data, q0);
  const Vec3<double> p_BoP_B(0.3, -0.2, 0.1), offset(0.01, -0.02, 0.005);
  const Vec3<double> p_WP = data.X_WB[0] * p_BoP_B;
  ConstrainedMechanism mech(
      model, {cutJoint(JointType::Ball, {-1, Transform<double>(Mat3<double>::Identity(), Vec3<double>(p_WP - offset))},
                       {0, Transform<double>(Mat3<double>::Identity(), p_BoP_B)}, Joint<double>{})});
  const VectorX<double> phi0 = mech.rows(q0, u0).positionErrors;
  REQUIRE(relativeError(phi0, offset) < kRoundoff);
  constexpr double T = 0.05;
  for (bool stabilized : {true, false}) {
    CAPTURE(stabilized);
    Solver solver(mech, mech.rowRanges());
    solver.settings().baumgarteTimeConstant = stabilized ? T : 0.0;
    Constrained system{mech, solver};
    VectorX<double> x = stateOf(q0, u0);
    double worst = 0.0;
    int observed = 0;
    IntegratorSettings settings;
    settings.stepSize = T / 50;
    settings.outputInterval = T / 2;
    const IntegrationStatus status = rk4(system, 0.0, 5 * T, x, settings, [&](double t, const VectorX<double>& xt) {
      const VectorX<double> phi = mech.rows(xt.head(7), xt.tail(6)).positionErrors;
      const double decay = stabilized ? (1 + t / T) * std::exp(-t / T) : 1.0;
      worst = std::max(worst, infinityNorm(phi - decay * phi0) / infinityNorm(phi0));
      ++observed;
    });
    REQUIRE(status.ok);
    CHECK(observed == 11);
    CHECK(worst < kIntegration);
    MESSAGE("Baumgarte " << std::string(stabilized ? "on" : "off") << ": worst relative deviation " << worst);
  }
}

TEST_CASE("Baumgarte: a rolling ball's slip decays about as e^(-t/T)") {
  // A ball on a fixed sphere, no gravity, spun at rest about a tangent:
  // its point at the contact slips. The rolling rows obey slip' = -slip/T
  // with tangents fixed in the sphere's frame; the tangents then turn only
  // within the tangent plane, so the slip's magnitude follows e^(-t/T).
  Mechanism<double> model;
  model.gravity.setZero();
  Joint<double> free;
  free.type = JointType::Free;
  const double m = 1.2, rb = 0.2, rf = 0.5;
  model.addBody(Body<double>{"ball", m, Vec3<double>::Zero(), Mat3<double>::Identity() * (0.4 * m * rb * rb)}, free);
  VectorX<double> q0 = neutralConfiguration(model), u0 = VectorX<double>::Zero(6);
  q0.segment<3>(4) = Vec3<double>(0, rf + rb, 0);
  u0[2] = 2.0;  // spin about z: the bottom point slips along x at rb * 2
  ConstrainedMechanism mech(model, {sphereContact({-1, {}}, rf, {0, {}}, rb, true)});
  const double slip0 = mech.rows(q0, u0).velocityErrors.tail<2>().norm();
  REQUIRE(std::abs(slip0 - 2.0 * rb) < kRoundoff);
  constexpr double T = 0.02;
  Solver solver(mech, mech.rowRanges());
  solver.settings().baumgarteTimeConstant = T;
  Constrained system{mech, solver};
  VectorX<double> x = stateOf(q0, u0);
  double worstSlip = 0.0, worstNormal = 0.0;
  IntegratorSettings settings;
  settings.stepSize = T / 50;
  settings.outputInterval = T / 2;
  const IntegrationStatus status = rk4(system, 0.0, 5 * T, x, settings, [&](double t, const VectorX<double>& xt) {
    const ConstraintRows<double> rows = mech.rows(xt.head(7), xt.tail(6));
    worstSlip = std::max(worstSlip, std::abs(rows.velocityErrors.tail<2>().norm() - slip0 * std::exp(-t / T)) / slip0);
    worstNormal = std::max(worstNormal, std::abs(rows.positionErrors[0]) / rb);
  });
  REQUIRE(status.ok);
  CHECK(worstSlip < kIntegration);
  CHECK(worstNormal < kIntegration);
  MESSAGE("rolling slip vs e^(-t/T): worst relative deviation " << worstSlip << ", separation " << worstNormal);
}

// ----------------------------------------------------------- projection

TEST_CASE("assembly from a perturbed q0 reaches the tolerance by (to first order) the minimum-norm correction") {
  Rng rng(405);
  const FourBar bar = fourBar(0.9);
  ConstrainedMechanism mech(bar.model, {bar.cut});
  Solver solver(mech, mech.rowRanges());
  const VectorX<double> zero = VectorX<double>::Zero(3);
  for (double size : {1e-3, 1e-5}) {
    CAPTURE(size);
    const VectorX<double> q0 = bar.q + randomVectorX(rng, 3, size);
    VectorX<double> q = q0;
    solver.projectPositions(q);
    CHECK(solver.positionError(q) <= solver.settings().tolerance);
    // Revolute joints only: N = 1. The first Gauss-Newton step is
    // -G^+ phi(q0); the whole correction differs from it by O(size^2).
    const ConstraintRows<double> rows = mech.rows(q0, zero);
    const Eigen::CompleteOrthogonalDecomposition<MatrixX<double>> cod(rows.G);
    const VectorX<double> linear = -cod.solve(rows.positionErrors);
    const double deviation = infinityNorm(VectorX<double>(q - q0 - linear)) / infinityNorm(linear);
    CHECK(deviation < 100 * size);
    // Minimum norm: nothing along the mechanism's own motion (G's null space).
    const VectorX<double> alongMotion = nullSpaceProjector(rows.G) * (q - q0);
    CHECK(infinityNorm(alongMotion) / infinityNorm(VectorX<double>(q - q0)) < 100 * size);
    MESSAGE("assembly from " << size << ": correction vs -G^+ phi " << deviation);
  }
}

TEST_CASE("projection with quaternions: a random tree with a Ball cut and a rolling contact") {
  // Started near a state that satisfies both, projection returns to within
  // the tolerance with unit quaternions, and the velocity projection leaves
  // G u = 0 by the minimum-norm change of u.
  Rng rng(406);
  int projected = 0;
  for (int trial = 0; trial < 8; ++trial) {
    CAPTURE(trial);
    Mechanism<double> model = randomTree(rng, 7);
    const int floater = model.addBody(randomBody(rng, "floater"), randomJoint(rng, JointType::Free, 2, "floating"));
    const VectorX<double> q = randomConfiguration(rng, model);
    Data<double> data(model);
    forwardKinematics(model, data, q);
    // Satisfied at q: the Ball's points coincide; the spheres touch.
    const Transform<double> X_FB = randomTransform(rng, 0.5);
    const Vec3<double> p_WP = data.X_WB[4] * X_FB.p;
    const Transform<double> X_WB = data.X_WB[static_cast<std::size_t>(floater)];
    const Constraint<double> ball =
        cutJoint(JointType::Ball, {4, X_FB},
                 {floater, Transform<double>(Mat3<double>::Identity(), X_WB.inverse() * p_WP)}, Joint<double>{});
    const Vec3<double> p_WSf(0.2, -0.4, 0.3), n = capstan::testing::randomUnitVector(rng);
    const Constraint<double> contact = sphereContact(
        {-1, Transform<double>(Mat3<double>::Identity(), p_WSf)}, 0.4,
        {floater, Transform<double>(Mat3<double>::Identity(), X_WB.inverse() * Vec3<double>(p_WSf + 0.7 * n))}, 0.3,
        true);
    ConstrainedMechanism mech(model, {ball, contact});
    Solver solver(mech, mech.rowRanges());
    REQUIRE(solver.positionError(q) < kRoundoff);
    VectorX<double> qp = q + randomVectorX(rng, model.nq, 1e-3);
    VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    const VectorX<double> u0 = u;
    solver.project(qp, u);
    CHECK(solver.positionError(qp) <= solver.settings().tolerance);
    for (const Joint<double>& j : model.joints) {
      if (hasQuaternion(j.type)) CHECK(std::abs(qp.segment<4>(j.qOffset).norm() - 1.0) < kRoundoff);
    }
    const ConstraintRows<double> rows = mech.rows(qp, u);
    CHECK(infinityNorm(rows.velocityErrors) < kRoundoff * std::max(1.0, infinityNorm(u0)));
    // The change of u is G^+ G u0: in G's row space, nothing along the null space.
    CHECK(infinityNorm(VectorX<double>(nullSpaceProjector(rows.G) * (u - u0))) < kRoundoff);
    ++projected;
  }
  CHECK(projected == 8);
}

// The adapter with bias() and appliedForces(), as generated classes have:
// accelerations() then starts from M's Cholesky factor and tau - C instead
// of calling forwardDynamics.
class SplitDynamicsMechanism : public ConstrainedMechanism {
 public:
  using ConstrainedMechanism::ConstrainedMechanism;
  void bias(const Q& q, const U& u, U& C) const { C = nonlinearEffects(model(), biasData_, q, u); }
  void appliedForces(double /*t*/, const Q& /*q*/, const U& /*u*/, U& out) const { out = tau(); }
  // Counted, to show that accelerations() does without it.
  void forwardDynamics(double t, const Q& q, const U& u, U& udot) const {
    ++forwardDynamicsCalls;
    ConstrainedMechanism::forwardDynamics(t, q, u, udot);
  }
  mutable int forwardDynamicsCalls = 0;

 private:
  mutable Data<double> biasData_{model()};
};

TEST_CASE("accelerations from bias and applied forces equal those from forwardDynamics") {
  // Random trees with a Ball cut and a rolling contact, off the constraints
  // (so gamma carries velocity terms) and with applied joint forces.
  Rng rng(407);
  for (int trial = 0; trial < 8; ++trial) {
    CAPTURE(trial);
    Mechanism<double> model = randomTree(rng, 7);
    const int floater = model.addBody(randomBody(rng, "floater"), randomJoint(rng, JointType::Free, 2, "floating"));
    const Constraint<double> ball =
        cutJoint(JointType::Ball, {4, randomTransform(rng, 0.5)}, {floater, randomTransform(rng, 0.5)}, Joint<double>{});
    const Constraint<double> contact =
        sphereContact({-1, randomTransform(rng, 0.5)}, 0.4, {floater, randomTransform(rng, 0.5)}, 0.3, true);
    ConstrainedMechanism whole(model, {ball, contact});
    SplitDynamicsMechanism split(model, {ball, contact});
    whole.tau() = split.tau() = randomVectorX(rng, model.nu, 3.0);
    Solver a(whole, whole.rowRanges());
    ConstraintSolver<SplitDynamicsMechanism> b(split, split.rowRanges());
    const VectorX<double> q = randomConfiguration(rng, model), u = randomVectorX(rng, model.nu, 1.0);
    VectorX<double> udotA, udotB, lambdaA, lambdaB;
    a.accelerations(0.0, q, u, udotA, lambdaA);
    b.accelerations(0.0, q, u, udotB, lambdaB);
    CHECK(split.forwardDynamicsCalls == 0);
    REQUIRE(a.rank() == b.rank());
    CHECK(relativeError(udotB, udotA) < kRoundoff);
    if (a.rank() == a.rowCount()) CHECK(relativeError(lambdaB, lambdaA) < kRoundoff);
  }
}

TEST_CASE("velocity projection of the four-bar: G u = 0 by the minimum-norm change") {
  Rng rng(407);
  const FourBar bar = fourBar(1.4);
  ConstrainedMechanism mech(bar.model, {bar.cut});
  Solver solver(mech, mech.rowRanges());
  const VectorX<double> u0 = randomVectorX(rng, 3, 2.0);
  VectorX<double> u = u0;
  solver.projectVelocities(bar.q, u);
  const ConstraintRows<double> rows = mech.rows(bar.q, u);
  CHECK(infinityNorm(rows.velocityErrors) < kRoundoff);
  CHECK(infinityNorm(VectorX<double>(nullSpaceProjector(rows.G) * (u - u0))) < kRoundoff);
  CHECK(infinityNorm(VectorX<double>(u - u0)) > 0.01);  // it did change u
}

TEST_CASE("a four-bar integrated with projection after each step keeps its energy") {
  // Workless constraint forces over time: RK4 at 1 ms for 1 s, projected
  // onto the position and velocity constraints after every step.
  Rng rng(408);
  const FourBar bar = fourBar(0.5);
  ConstrainedMechanism mech(bar.model, {bar.cut});
  Solver solver(mech, mech.rowRanges());
  VectorX<double> u = nullSpaceProjector(mech.rows(bar.q, VectorX<double>::Zero(3)).G) * randomVectorX(rng, 3, 3.0);
  Data<double> data(bar.model);
  auto energy = [&](const VectorX<double>& q, const VectorX<double>& v) {
    forwardKinematics(bar.model, data, q, v);
    return kineticEnergy(bar.model, data) + potentialEnergy(bar.model, data);
  };
  const double e0 = energy(bar.q, u);
  Constrained system{mech, solver, true};
  VectorX<double> x = stateOf(bar.q, u);
  IntegratorSettings settings;
  settings.stepSize = 1e-3;
  double drift = 0.0, kinetic = 0.0;
  const IntegrationStatus status = rk4(system, 0.0, 1.0, x, settings, [&](double, const VectorX<double>& xt) {
    drift = std::max(drift, std::abs(energy(xt.head(3), xt.tail(3)) - e0));
    kinetic = std::max(kinetic, kineticEnergy(bar.model, data));
  });
  REQUIRE(status.ok);
  CHECK(drift / kinetic < kIntegration);
  CHECK(kinetic > 0.1);  // it moved
  MESSAGE("four-bar energy drift over 1 s: " << drift / kinetic << " of the largest kinetic energy");
}

// ------------------------------------------------------------- failures

TEST_CASE("two spheres on World that cannot touch: ProjectionFailure names the row and how far off it is") {
  Rng rng(409);
  const Mechanism<double> model = randomTree(rng, 3);
  ConstrainedMechanism mech(
      model, {sphereContact({-1, {}}, 0.5, {-1, Transform<double>(Mat3<double>::Identity(), Vec3<double>(3, 0, 0))},
                            0.5, false)});
  Solver solver(mech, mech.rowRanges());
  VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> q0 = q;
  std::string message;
  int row = -1;
  try {
    solver.projectPositions(q);
  } catch (const ProjectionFailure& failure) {
    message = failure.what();
    row = failure.row;
  }
  CAPTURE(message);
  CHECK(message == "the position constraints cannot be satisfied near q: an error of 2 is left where no step reduces "
                   "it (tolerance 1e-10)");
  CHECK(row == 0);
  CHECK(relativeError(q, q0) < kRoundoff);  // nothing could move it
  // Non-finite errors are a failure too, not a silent return.
  Mechanism<double> ball;
  Joint<double> free;
  free.type = JointType::Free;
  ball.addBody(randomBody(rng, "ball"), free);
  ConstrainedMechanism onBall(ball, {sphereContact({-1, {}}, 0.5, {0, {}}, 0.5, false)});
  Solver ballSolver(onBall, onBall.rowRanges());
  VectorX<double> bad = neutralConfiguration(ball);
  bad[4] = std::nan("");
  CHECK_THROWS_WITH_AS(ballSolver.projectPositions(bad), "the position errors are not finite", ProjectionFailure);
}

}  // namespace
