// Spatial algebra: transforms, quaternions, shifts, cross products, inertia.
#include <capstan/spatial.hpp>

#include <Eigen/Dense>

#include <doctest/doctest.h>

#include "multibody_fixtures.hpp"

namespace {

using namespace capstan;
using capstan::testing::randomQuaternion;
using capstan::testing::randomRotation;
using capstan::testing::randomTransform;
using capstan::testing::randomUnitVector;
using capstan::testing::randomVector;
using capstan::testing::relativeError;
using capstan::testing::Rng;

constexpr double kRoundoff = 1e-13;  // relative, for O(10) flops on O(1) data
constexpr int kTrials = 50;

Vec6<double> randomSpatial(Rng& rng) {
  return spatialVector<double>(randomVector(rng, 2.0), randomVector(rng, 2.0));
}

TEST_CASE("transform composition, inverse and point mapping agree") {
  Rng rng(1);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Transform<double> X_AB = randomTransform(rng, 2.0);
    const Transform<double> X_BC = randomTransform(rng, 2.0);
    const Vec3<double> p_CoQ_C = randomVector(rng, 2.0);
    const Transform<double> X_AC = X_AB * X_BC;
    CHECK(relativeError(X_AC * p_CoQ_C, X_AB * (X_BC * p_CoQ_C)) < kRoundoff);
    const Transform<double> X_AA = X_AB * X_AB.inverse();
    CHECK(relativeError(X_AA.R, Mat3<double>::Identity()) < kRoundoff);
    CHECK(X_AA.p.norm() < kRoundoff);
  }
}

TEST_CASE("quaternion rotation is orthonormal, scale invariant and matches axis-angle") {
  Rng rng(2);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Vec3<double> axis = randomUnitVector(rng);
    const double angle = capstan::testing::uniform(rng, -3.0, 3.0);
    const Vec4<double> q(std::cos(angle / 2), std::sin(angle / 2) * axis[0], std::sin(angle / 2) * axis[1],
                         std::sin(angle / 2) * axis[2]);
    const Mat3<double> R = rotationFromQuaternion(q);
    CHECK(relativeError(R, axisAngleRotation<double>(axis, angle)) < kRoundoff);
    CHECK(relativeError(R * R.transpose(), Mat3<double>::Identity()) < kRoundoff);
    CHECK(R.determinant() == doctest::Approx(1.0).epsilon(kRoundoff));
    CHECK(relativeError(rotationFromQuaternion<double>(3.7 * q), R) < kRoundoff);
    CHECK(relativeError(R * axis, axis) < kRoundoff);  // the axis is fixed
  }
}

TEST_CASE("quaternionFromRotation inverts rotationFromQuaternion; products compose") {
  Rng rng(3);
  for (int trial = 0; trial < kTrials; ++trial) {
    Vec4<double> q = randomQuaternion(rng);
    if (q[0] < 0) q = -q;
    CHECK(relativeError(quaternionFromRotation(rotationFromQuaternion(q)), q) < kRoundoff);
    const Vec4<double> p = randomQuaternion(rng);
    CHECK(relativeError(rotationFromQuaternion(quaternionProduct(p, q)),
                        Mat3<double>(rotationFromQuaternion(p) * rotationFromQuaternion(q))) < kRoundoff);
  }
  // Each branch of Shepperd's method: rotations by pi about x, y, z.
  for (int axis = 0; axis < 3; ++axis) {
    const Mat3<double> R = axisAngleRotation<double>(Vec3<double>::Unit(axis), 3.1);
    CHECK(relativeError(rotationFromQuaternion(quaternionFromRotation(R)), R) < kRoundoff);
  }
}

TEST_CASE("shifts preserve power and spatial cross products are dual") {
  Rng rng(4);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Vec6<double> V_Ao = randomSpatial(rng);
    const Vec6<double> F_Bo = randomSpatial(rng);
    const Vec3<double> p_AoBo = randomVector(rng, 2.0);
    const Vec6<double> V_Bo = shiftVelocity(V_Ao, p_AoBo);
    const Vec6<double> F_Ao = shiftForce(F_Bo, p_AoBo);
    CHECK(F_Ao.dot(V_Ao) == doctest::Approx(F_Bo.dot(V_Bo)).epsilon(kRoundoff));
    // (V x m) . f = -m . (V x* f)
    const Vec6<double> m = randomSpatial(rng);
    CHECK(crossMotion(V_Ao, m).dot(F_Bo) == doctest::Approx(-m.dot(crossForce(V_Ao, F_Bo))).epsilon(kRoundoff));
    CHECK(crossMotion(V_Ao, V_Ao).norm() < kRoundoff);
    // Re-expression commutes with the shift.
    const Mat3<double> R = randomRotation(rng);
    CHECK(relativeError(reExpress(R, shiftVelocity(V_Ao, p_AoBo)),
                        shiftVelocity(reExpress(R, V_Ao), Vec3<double>(R * p_AoBo))) < kRoundoff);
  }
}

TEST_CASE("spatial inertia: shift, re-expression, matrix and kinetic energy") {
  Rng rng(5);
  for (int trial = 0; trial < kTrials; ++trial) {
    const double mass = capstan::testing::uniform(rng, 0.5, 3.0);
    const Vec3<double> c = randomVector(rng, 1.0);
    const Mat3<double> I_cm = capstan::testing::randomCentralInertia(rng, mass);
    const SpatialInertia<double> M_Bo = SpatialInertia<double>::fromMassCenter(mass, c, I_cm);
    // About the center of mass the momentum is (I_cm w, m v_cm).
    const SpatialInertia<double> M_cm = M_Bo.shift(c);
    CHECK(M_cm.h.norm() < kRoundoff);
    CHECK(relativeError(M_cm.I_P, I_cm) < kRoundoff);
    // Shifting there and back, and the 6x6 shift, agree.
    const Vec3<double> r = randomVector(rng, 2.0);
    CHECK(relativeError(M_Bo.shift(r).shift(-r).matrix(), M_Bo.matrix()) < kRoundoff);
    CHECK(relativeError(shiftInertiaMatrix(M_Bo.shift(r).matrix(), r), M_Bo.matrix()) < kRoundoff);
    // Kinetic energy about Bo equals 1/2 m v_cm^2 + 1/2 w I_cm w.
    const Vec6<double> V_Bo = randomSpatial(rng);
    const Vec3<double> w = V_Bo.head<3>();
    const Vec3<double> v_cm = V_Bo.tail<3>() + w.cross(c);
    const double ke = 0.5 * V_Bo.dot(M_Bo * V_Bo);
    CHECK(ke == doctest::Approx(0.5 * mass * v_cm.squaredNorm() + 0.5 * w.dot(I_cm * w)).epsilon(kRoundoff));
    CHECK(relativeError(Vec6<double>(M_Bo.matrix() * V_Bo), Vec6<double>(M_Bo * V_Bo)) < kRoundoff);
    // Re-expressing keeps the kinetic energy.
    const Mat3<double> R = randomRotation(rng);
    const double keA = 0.5 * reExpress(R, V_Bo).dot(M_Bo.reExpress(R) * reExpress(R, V_Bo));
    CHECK(keA == doctest::Approx(ke).epsilon(kRoundoff));
  }
}

}  // namespace
