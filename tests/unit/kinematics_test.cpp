// Forward kinematics, Jacobians and qdot = N(q) u against analytic values and
// finite differences.
#include <capstan/kinematics.hpp>

#include <doctest/doctest.h>

#include "multibody_fixtures.hpp"

#include <array>
#include <cmath>

namespace {

using namespace capstan;
using capstan::testing::randomConfiguration;
using capstan::testing::randomTree;
using capstan::testing::randomVectorX;
using capstan::testing::relativeError;
using capstan::testing::Rng;

constexpr double kRoundoff = 1e-12;        // relative, algorithms on O(1) data
constexpr double kFdStep = 1e-5;           // central-difference step
constexpr double kFdTolerance = 1e-7;      // O(kFdStep^2) truncation + O(eps/kFdStep) roundoff
constexpr int kTrials = 20;
constexpr int kBodies = 9;

// Spatial velocities of all bodies by central differences of X_WB along the
// path q(t) = q + t qdot.
std::vector<Vec6<double>> velocitiesByFiniteDifference(const Mechanism<double>& model, const VectorX<double>& q,
                                                       const VectorX<double>& qdot) {
  Data<double> plus(model), minus(model);
  forwardKinematics(model, plus, VectorX<double>(q + kFdStep * qdot));
  forwardKinematics(model, minus, VectorX<double>(q - kFdStep * qdot));
  std::vector<Vec6<double>> V(static_cast<std::size_t>(model.numBodies()));
  for (std::size_t b = 0; b < V.size(); ++b) {
    const Mat3<double> Rdot = (plus.X_WB[b].R - minus.X_WB[b].R) / (2 * kFdStep);
    const Mat3<double> R = (plus.X_WB[b].R + minus.X_WB[b].R) / 2;
    const Mat3<double> W = Rdot * R.transpose();  // [w]x
    const Vec3<double> w(W(2, 1), W(0, 2), W(1, 0));
    V[b] = spatialVector<double>(w, (plus.X_WB[b].p - minus.X_WB[b].p) / (2 * kFdStep));
  }
  return V;
}

TEST_CASE("double pendulum poses match the analytic values") {
  const double L1 = 0.7, L2 = 0.4;
  Mechanism<double> model;
  Joint<double> shoulder;
  shoulder.name = "shoulder";
  shoulder.type = JointType::Revolute;
  shoulder.axis = Vec3<double>::UnitZ();
  Joint<double> elbow = shoulder;
  elbow.name = "elbow";
  elbow.parent = 0;
  elbow.X_PF.p = Vec3<double>(0, -L1, 0);
  model.addBody(Body<double>{"upper", 1.0, Vec3<double>(0, -L1 / 2, 0), Mat3<double>::Identity() * 0.01}, shoulder);
  model.addBody(Body<double>{"lower", 1.0, Vec3<double>(0, -L2 / 2, 0), Mat3<double>::Identity() * 0.01}, elbow);
  Data<double> data(model);
  const double q1 = 0.3, q2 = -1.1, u1 = 0.7, u2 = 2.0;
  forwardKinematics(model, data, VectorX<double>(Eigen::Vector2d(q1, q2)), VectorX<double>(Eigen::Vector2d(u1, u2)));
  const Vec3<double> p_WElbow(L1 * std::sin(q1), -L1 * std::cos(q1), 0);
  CHECK(relativeError(data.X_WB[1].p, p_WElbow) < kRoundoff);
  CHECK(relativeError(data.X_WB[1].R, axisAngleRotation<double>(Vec3<double>::UnitZ(), q1 + q2)) < kRoundoff);
  const Vec3<double> v_WElbow(L1 * std::cos(q1) * u1, L1 * std::sin(q1) * u1, 0);
  CHECK(relativeError(data.V_WB[1], spatialVector<double>(Vec3<double>(0, 0, u1 + u2), v_WElbow)) < kRoundoff);
  // Bias acceleration of the lower body's origin: centripetal -L1 u1^2 toward the shoulder.
  const Vec3<double> a_bias = -u1 * u1 * p_WElbow;
  CHECK(relativeError(data.Abias_WB[1], spatialVector<double>(Vec3<double>::Zero(), a_bias)) < kRoundoff);
}

TEST_CASE("body velocities match finite differences of poses in random trees") {
  Rng rng(11);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Mechanism<double> model = randomTree(rng, kBodies);
    Data<double> data(model);
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    VectorX<double> qdot;
    qdotFromU(model, q, u, qdot);
    forwardKinematics(model, data, q, u);
    const auto V_fd = velocitiesByFiniteDifference(model, q, qdot);
    for (int b = 0; b < model.numBodies(); ++b) {
      CAPTURE(b);
      CHECK(relativeError(data.V_WB[static_cast<std::size_t>(b)], V_fd[static_cast<std::size_t>(b)]) < kFdTolerance);
    }
  }
}

TEST_CASE("body accelerations match finite differences of velocities") {
  Rng rng(12);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Mechanism<double> model = randomTree(rng, kBodies);
    Data<double> data(model), plus(model), minus(model), bias(model);
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    const VectorX<double> udot = randomVectorX(rng, model.nu, 1.0);
    VectorX<double> qdot;
    qdotFromU(model, q, u, qdot);
    forwardKinematics(model, data, q, u, udot);
    forwardKinematics(model, plus, VectorX<double>(q + kFdStep * qdot), VectorX<double>(u + kFdStep * udot));
    forwardKinematics(model, minus, VectorX<double>(q - kFdStep * qdot), VectorX<double>(u - kFdStep * udot));
    forwardKinematics(model, bias, q, u, VectorX<double>(VectorX<double>::Zero(model.nu)));
    for (std::size_t b = 0; b < static_cast<std::size_t>(model.numBodies()); ++b) {
      CAPTURE(b);
      const Vec6<double> A_fd = (plus.V_WB[b] - minus.V_WB[b]) / (2 * kFdStep);
      CHECK(relativeError(data.A_WB[b], A_fd) < kFdTolerance);
      CHECK(relativeError(data.Abias_WB[b], bias.A_WB[b]) < kRoundoff);
    }
  }
}

TEST_CASE("body and station Jacobians reproduce velocities") {
  Rng rng(13);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Mechanism<double> model = randomTree(rng, kBodies);
    Data<double> data(model);
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    forwardKinematics(model, data, q, u);
    MatrixX<double> J_WB, J_WQ;
    for (int b = 0; b < model.numBodies(); ++b) {
      const auto bb = static_cast<std::size_t>(b);
      bodyJacobian(model, data, b, J_WB);
      CHECK(relativeError(Vec6<double>(J_WB * u), data.V_WB[bb]) < kRoundoff);
      const Vec3<double> p_BoQ_B = capstan::testing::randomVector(rng, 1.0);
      stationJacobian(model, data, b, p_BoQ_B, J_WQ);
      const Vec3<double> w = data.V_WB[bb].head<3>();
      const Vec3<double> v_WQ = data.V_WB[bb].tail<3>() + w.cross(data.X_WB[bb].R * p_BoQ_B);
      CHECK(relativeError(Vec3<double>(J_WQ * u), v_WQ) < kRoundoff);
    }
  }
}

TEST_CASE("qdot = N(q) u: quaternion rates give w_FM in F; N has a left inverse") {
  Rng rng(14);
  Mechanism<double> model;
  model.addBody(capstan::testing::randomBody(rng, "ball"),
                capstan::testing::randomJoint(rng, JointType::Ball, -1, "ball"));
  model.addBody(capstan::testing::randomBody(rng, "free"),
                capstan::testing::randomJoint(rng, JointType::Free, 0, "free"));
  for (int trial = 0; trial < kTrials; ++trial) {
    const VectorX<double> q = randomConfiguration(rng, model);
    const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
    VectorX<double> qdot, u2;
    qdotFromU(model, q, u, qdot);
    CHECK(relativeError(VectorX<double>(nMatrix(model, q) * u), qdot) < kRoundoff);
    uFromQdot(model, q, qdot, u2);
    CHECK(relativeError(u2, u) < kRoundoff);
    // Unit quaternions stay unit to first order: q . qdot = 0 per quaternion.
    CHECK(std::abs(q.segment<4>(0).dot(qdot.segment<4>(0))) < kRoundoff);
    // d/dt R_FM(q(t)) R_FM^T = [w_FM_F]x for the ball joint.
    const Vec4<double> quat = q.segment<4>(0), quatdot = qdot.segment<4>(0);
    const Mat3<double> Rdot = (rotationFromQuaternion<double>(quat + kFdStep * quatdot) -
                               rotationFromQuaternion<double>(quat - kFdStep * quatdot)) /
                              (2 * kFdStep);
    const Mat3<double> W = Rdot * rotationFromQuaternion(quat).transpose();
    CHECK(relativeError(Vec3<double>(W(2, 1), W(0, 2), W(1, 0)), Vec3<double>(u.head<3>())) < kFdTolerance);
    // The free joint's translation rate is v_FM in F.
    CHECK(relativeError(Vec3<double>(qdot.segment<3>(8)), Vec3<double>(u.segment<3>(6))) < kRoundoff);
  }
}

TEST_CASE("normalizeQuaternions makes unit quaternions and keeps the rotation") {
  Rng rng(15);
  const Mechanism<double> model = randomTree(rng, kBodies);
  VectorX<double> q = randomConfiguration(rng, model);
  for (const auto& joint : model.joints) {
    if (hasQuaternion(joint.type)) q.segment<4>(joint.qOffset) *= 1.3;
  }
  Data<double> before(model), after(model);
  forwardKinematics(model, before, q);
  normalizeQuaternions(model, q);
  forwardKinematics(model, after, q);
  for (const auto& joint : model.joints) {
    if (hasQuaternion(joint.type)) CHECK(q.segment<4>(joint.qOffset).norm() == doctest::Approx(1.0).epsilon(kRoundoff));
  }
  for (std::size_t b = 0; b < static_cast<std::size_t>(model.numBodies()); ++b) {
    CHECK(relativeError(after.X_WB[b].R, before.X_WB[b].R) < kRoundoff);
    CHECK(relativeError(after.X_WB[b].p, before.X_WB[b].p) < kRoundoff);
  }
}

TEST_CASE("addBody rejects a parent that does not precede its child") {
  Mechanism<double> model;
  Joint<double> joint;
  joint.name = "loop";
  joint.parent = 0;
  CHECK_THROWS_AS(model.addBody(Body<double>{"first", 1.0, Vec3<double>::Zero(), Mat3<double>::Identity()}, joint),
                  std::invalid_argument);
}

}  // namespace

TEST_CASE("a quaternion keeps its direction whatever its scale; a zero one has none") {
  auto normalized = [](double a, double b, double c, double d) {
    double e[4] = {a, b, c, d};
    capstan::normalizeQuaternion(e);
    return std::array<double, 4>{e[0], e[1], e[2], e[3]};
  };
  const double h = std::sqrt(0.5);
  const auto huge = normalized(1e200, 1e200, 0, 0);  // squares overflow: 90 degrees about x
  CHECK(huge[0] == doctest::Approx(h).epsilon(1e-15));
  CHECK(huge[1] == doctest::Approx(h).epsilon(1e-15));
  const auto tiny = normalized(0, 0, -3e-200, 4e-200);  // squares underflow
  CHECK(tiny[2] == doctest::Approx(-0.6).epsilon(1e-15));
  CHECK(tiny[3] == doctest::Approx(0.8).epsilon(1e-15));
  const auto plain = normalized(2, 0, 0, 0);
  CHECK(plain[0] == 1.0);
  for (double x : normalized(0, 0, 0, 0)) CHECK(std::isnan(x));
}
