// The roll-pitch-yaw bushing of runtime/include/capstan/force_elements.hpp
// against the expectations of Drake's own unit test of
// LinearBushingRollPitchYaw (multibody/tree/test/
// linear_bushing_roll_pitch_yaw_test.cc in RobotLocomotion/drake), restated
// without Drake: Drake builds a plant of World (frame A) and one free body
// (frame C); here the same relative poses and velocities are FrameMotion
// values and `capstan::bushing` is called directly. Every expected value is
// derived in this file from the formulas of ../shared/bushing.md, by a route
// of its own (the halfway frame from Eigen's angle-axis, N from the angles
// the test chose), never from the runtime's outputs.
//
// Frames and points, as in bushing.md: A = frame_a, C = frame_b, B the
// halfway frame with Bo midway between Ao and Co. A state of the bushing is
// the relative motion (rpy of R_AC, p_AoCo_A, w_AC_A, v_ACo_A).
//
// Also here: the power identity (the power of the bushing's forces on C,
// relative to A, is tau . qdot + f . [xd yd zd]), action-reaction over the
// full range of orientations, and the gimbal-lock threshold.
#include <doctest/doctest.h>

#include <capstan/force_elements.hpp>

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>

namespace {

using namespace capstan;
using V3 = Vec3<double>;
using M3 = Mat3<double>;

constexpr double kPi = 3.14159265358979323846;
constexpr double kEps = std::numeric_limits<double>::epsilon();
// Drake's tolerance for the spatial forces and for the halfway frame.
constexpr double kDrakeTol = 32 * kEps;
// Drake's tolerance for telling a wrong halfway frame from the right one.
constexpr double kHalfAngleRejectTol = 64 * kEps;
// A moving, rotated frame A adds the rounding of R_WA and of the transport
// terms to every relative quantity: a looser, still tight, relative bound.
constexpr double kMovingFrameTol = 1e-12;
// Power identities at random states (W; relative to the size of the terms).
constexpr double kPowerTol = 1e-12;

std::string str(const Eigen::MatrixXd& m) {
  std::ostringstream s;
  s << m.transpose();
  return s.str();
}

// Drake's relative comparison, element by element:
//   |a_i - b_i| <= tol * max(1, |a_i|, |b_i|).
// With tol proportional to |expected| (as Drake chooses it) a zero expected
// vector demands an exactly zero result.
bool nearRelative(const V3& a, const V3& b, double tol) {
  for (int i = 0; i < 3; ++i) {
    const double scale = std::max({1.0, std::abs(a[i]), std::abs(b[i])});
    if (!(std::abs(a[i] - b[i]) <= tol * scale)) return false;
  }
  return true;
}

void checkNear(const char* what, const V3& actual, const V3& expected, double tol) {
  INFO(what, ": actual [", str(actual), "], expected [", str(expected), "], tolerance ", tol);
  CHECK(nearRelative(actual, expected, tol));
}

M3 rotationAbout(const V3& axis, double angle) { return Eigen::AngleAxisd(angle, axis).toRotationMatrix(); }

// R_AC for roll-pitch-yaw q = (q0, q1, q2): R_AC = Rz(q2) Ry(q1) Rx(q0),
// space-fixed X-Y-Z (bushing.md 2).
M3 rpyRotation(const V3& q) {
  return rotationAbout(V3::UnitZ(), q[2]) * rotationAbout(V3::UnitY(), q[1]) * rotationAbout(V3::UnitX(), q[0]);
}

// N(q) with qdot = N w_AC_A (bushing.md 3), from the chosen angles.
M3 rpyRateMatrix(const V3& q) {
  const double cp = std::cos(q[1]), tp = std::tan(q[1]);
  const double cy = std::cos(q[2]), sy = std::sin(q[2]);
  M3 N;
  N << cy / cp, sy / cp, 0,  //
      -sy, cy, 0,            //
      cy * tp, sy * tp, 1;
  return N;
}

// The relative state Drake's test sets through its floating joint.
struct RelativeState {
  V3 rpy = V3::Zero();       // (q0, q1, q2) of R_AC (rad)
  V3 p_AoCo_A = V3::Zero();  // (m)
  V3 w_AC_A = V3::Zero();    // (rad/s)
  V3 v_ACo_A = V3::Zero();   // derivative of p_AoCo_A in A (m/s)
};

// C's motion in World for frame A moving as `A` and the relative state s:
//   R_WC = R_WA R_AC,  p_WCo = p_WAo + R_WA p_AoCo_A,
//   w_WC = w_WA + R_WA w_AC_A,
//   v_WCo = v_WAo + w_WA x (R_WA p_AoCo_A) + R_WA v_ACo_A.
FrameMotion<double> frameCMotion(const FrameMotion<double>& A, const RelativeState& s) {
  FrameMotion<double> C;
  const V3 p_AoCo_W = A.R_WF * s.p_AoCo_A;
  C.R_WF = A.R_WF * rpyRotation(s.rpy);
  C.p_WF = A.p_WF + p_AoCo_W;
  C.w_WF = A.w_WF + A.R_WF * s.w_AC_A;
  C.v_WF = A.v_WF + A.w_WF.cross(p_AoCo_W) + A.R_WF * s.v_ACo_A;
  return C;
}

// The bushing's response to a relative state, from bushing.md step by step.
struct Expected {
  V3 q, qdot, tau, t_A;   // angles, rates, gimbal torques, torque on C in A
  M3 R_AB;                // the halfway frame
  V3 xyz, xyzdot, f;      // displacement and rate in B, force on C in B
  V3 t_Ao_A, f_A_A;       // F_A_A: on A, about Ao, in A
  V3 t_Co_C, f_C_C;       // F_C_C: on C, about Co, in C
  double energy;          // Capstan's addition (J)
};

Expected expectedResponse(const RelativeState& s, const BushingConstants<double>& k) {
  Expected e;
  const M3 R_AC = rpyRotation(s.rpy);
  const M3 R_CA = R_AC.transpose();
  // Angles and rates; gimbal torques tau = -(k012 o q + d012 o qdot); the
  // torque on C with the same power, t = N^T tau (t . w_AC = tau . qdot).
  e.q = s.rpy;
  const M3 N = rpyRateMatrix(s.rpy);
  e.qdot = N * s.w_AC_A;
  e.tau = -(k.k012.cwiseProduct(e.q) + k.d012.cwiseProduct(e.qdot));
  e.t_A = N.transpose() * e.tau;
  // B: a rotation about R_AC's axis by half of R_AC's angle.
  const Eigen::AngleAxisd angleAxis_AC(R_AC);
  e.R_AB = Eigen::AngleAxisd(0.5 * angleAxis_AC.angle(), angleAxis_AC.axis()).toRotationMatrix();
  const M3 R_BA = e.R_AB.transpose();
  const M3 R_CB = R_CA * e.R_AB;
  // [x y z] = p_AoCo_B. Its rate is the derivative of p_AoCo in a frame
  // turning in A at w_AC/2: v_ACo - (w_AC/2) x p_AoCo, expressed in B.
  e.xyz = R_BA * s.p_AoCo_A;
  e.xyzdot = R_BA * (s.v_ACo_A - (0.5 * s.w_AC_A).cross(s.p_AoCo_A));
  e.f = -(k.kxyz.cwiseProduct(e.xyz) + k.dxyz.cwiseProduct(e.xyzdot));
  // The force f on C and -f on A both act at Bo: p_AoBo_B = xyz/2 and
  // p_CoBo_B = -xyz/2.
  const V3 p_AoBo_B = 0.5 * e.xyz;
  const V3 f_onA_B = -e.f;
  e.f_A_A = e.R_AB * f_onA_B;
  e.t_Ao_A = -e.t_A + e.R_AB * p_AoBo_B.cross(f_onA_B);
  e.f_C_C = R_CB * e.f;
  e.t_Co_C = R_CA * e.t_A + R_CB * (-p_AoBo_B).cross(e.f);
  e.energy = 0.5 * (k.k012.dot(e.q.cwiseAbs2()) + k.kxyz.dot(e.xyz.cwiseAbs2()));
  return e;
}

// Drake's "reasonable" constants: body C of mass m = 1 kg and central
// moments of inertia (2, 3, 4) kg*m^2; every mode with damping ratio
// zeta = 0.1; damped periods 1 s for the three rotations and (2, 3, 3) s
// for x, y, z. From the seed: wn = w_damped / sqrt(1 - zeta^2), k = I wn^2
// (or m wn^2), d = 2 zeta sqrt(I k) (or sqrt(m k)).
BushingConstants<double> drakeConstants() {
  const double m = 1.0, zeta = 0.1;
  const V3 I(2, 3, 4);
  const V3 dampedPeriodsXyz(2, 3, 3);
  const double wnRotate = (2 * kPi / 1.0) / std::sqrt(1 - zeta * zeta);
  BushingConstants<double> k;
  for (int i = 0; i < 3; ++i) {
    const double wnTranslate = (2 * kPi / dampedPeriodsXyz[i]) / std::sqrt(1 - zeta * zeta);
    k.k012[i] = I[i] * wnRotate * wnRotate;              // N*m/rad
    k.d012[i] = 2 * zeta * std::sqrt(I[i] * k.k012[i]);  // N*m*s/rad
    k.kxyz[i] = m * wnTranslate * wnTranslate;           // N/m
    k.dxyz[i] = 2 * zeta * std::sqrt(m * k.kxyz[i]);     // N*s/m
  }
  return k;
}

// A frame A with a general pose and motion in World (Drake's A is World).
FrameMotion<double> movingFrameA() {
  FrameMotion<double> A;
  A.R_WF = rpyRotation(V3(0.7, -0.4, 2.1));
  A.p_WF = V3(-0.3, 1.2, 0.8);
  A.w_WF = V3(1.5, -0.6, 2.2);
  A.v_WF = V3(-0.9, 0.4, 1.7);
  return A;
}

// One of Drake's comparisons: the state s, A at rest in World, checked with
// Drake's tolerances (32 eps times the size of the expected torque, for both
// torques, and of the expected force, for both forces); then the same state
// with A moving in World, where F_A_A and F_C_C must not change. When given,
// f_C_C_simple and t_Co_C_simple are Drake's by-hand values.
void compareWithDrake(const RelativeState& s, const V3* f_C_C_simple = nullptr, const V3* t_Co_C_simple = nullptr) {
  const BushingConstants<double> k = drakeConstants();
  const Expected e = expectedResponse(s, k);
  INFO("rpy [", str(s.rpy), "] p_AoCo_A [", str(s.p_AoCo_A), "] w_AC_A [", str(s.w_AC_A), "] v_ACo_A [",
       str(s.v_ACo_A), "]");
  const double torqueTol = kDrakeTol * e.t_Ao_A.norm();
  const double forceTol = kDrakeTol * e.f_A_A.norm();

  const FrameMotion<double> World;
  const BushingForces<double> b = bushing(World, frameCMotion(World, s), k);
  checkNear("t_Ao_A", b.F_A_A.head<3>(), e.t_Ao_A, torqueTol);
  checkNear("f_A_A", b.F_A_A.tail<3>(), e.f_A_A, forceTol);
  checkNear("t_Co_C", b.F_C_C.head<3>(), e.t_Co_C, torqueTol);
  checkNear("f_C_C", b.F_C_C.tail<3>(), e.f_C_C, forceTol);
  if (t_Co_C_simple) checkNear("t_Co_C by hand", b.F_C_C.head<3>(), *t_Co_C_simple, torqueTol);
  if (f_C_C_simple) checkNear("f_C_C by hand", b.F_C_C.tail<3>(), *f_C_C_simple, forceTol);
  // The intermediate quantities Drake's comparison is built from.
  checkNear("q", b.q, e.q, kDrakeTol);
  checkNear("qdot", b.qdot, e.qdot, kDrakeTol * e.qdot.norm());
  checkNear("xyz", b.xyz, e.xyz, kDrakeTol * e.xyz.norm());
  checkNear("xyzdot", b.xyzdot, e.xyzdot, kDrakeTol * e.xyzdot.norm());
  CHECK(b.energy == doctest::Approx(e.energy).epsilon(kDrakeTol));
  CHECK(b.cosPitch >= kGimbalLockCos);

  // A moving in World: Drake's F_A_A and F_C_C are relative quantities.
  const FrameMotion<double> A = movingFrameA();
  const BushingForces<double> m = bushing(A, frameCMotion(A, s), k);
  const double scale = 1 + e.t_Ao_A.norm() + e.f_A_A.norm();
  checkNear("t_Ao_A, A moving", m.F_A_A.head<3>(), e.t_Ao_A, kMovingFrameTol * scale);
  checkNear("f_A_A, A moving", m.F_A_A.tail<3>(), e.f_A_A, kMovingFrameTol * scale);
  checkNear("t_Co_C, A moving", m.F_C_C.head<3>(), e.t_Co_C, kMovingFrameTol * scale);
  checkNear("f_C_C, A moving", m.F_C_C.tail<3>(), e.f_C_C, kMovingFrameTol * scale);
}

RelativeState atRest(const V3& rpy, const V3& p_AoCo_A) {
  RelativeState s;
  s.rpy = rpy;
  s.p_AoCo_A = p_AoCo_A;
  return s;
}

// Drake's angles: roll pi/6, pitch pi/3, yaw 2 pi/3 (rad).
constexpr double kRoll = kPi / 6, kPitch = kPi / 3, kYaw = 2 * kPi / 3;

}  // namespace

TEST_CASE("drake bushing: orientations at rest (VariousOrientationsAtRest)") {
  const BushingConstants<double> k = drakeConstants();
  const V3 zero = V3::Zero();
  // Identity: nothing. One angle alone: N is the identity along that axis and
  // R_AC turns about it, so the torque on C is -k_i q_i about that axis, the
  // same in A and in C.
  compareWithDrake(atRest(zero, zero), &zero, &zero);
  const V3 tRoll(-k.k012[0] * kRoll, 0, 0), tPitch(0, -k.k012[1] * kPitch, 0), tYaw(0, 0, -k.k012[2] * kYaw);
  compareWithDrake(atRest(V3(kRoll, 0, 0), zero), &zero, &tRoll);
  compareWithDrake(atRest(V3(0, kPitch, 0), zero), &zero, &tPitch);
  compareWithDrake(atRest(V3(0, 0, kYaw), zero), &zero, &tYaw);
  // Two and three angles: only the step-by-step expectation.
  compareWithDrake(atRest(V3(kRoll, kPitch, 0), zero));
  compareWithDrake(atRest(V3(0, kPitch, kYaw), zero));
  compareWithDrake(atRest(V3(kRoll, 0, kYaw), zero));
  compareWithDrake(atRest(V3(kRoll, kPitch, kYaw), zero));
}

TEST_CASE("drake bushing: positions at rest (VariousPositionsAtRest)") {
  const BushingConstants<double> k = drakeConstants();
  const V3 zero = V3::Zero();
  // A, B and C aligned: [x y z] = p_AoCo_A, f = -kxyz o [x y z] on C at Bo,
  // so about Co the force has the moment (p_CoBo) x f = -(p_AoCo/2) x f.
  compareWithDrake(atRest(zero, zero), &zero, &zero);
  const V3 xyz(1, 2, 3);  // m
  for (int axis = 0; axis < 4; ++axis) {
    const V3 p = axis < 3 ? V3(xyz.cwiseProduct(V3::Unit(axis))) : xyz;  // x, y, z alone, then all three
    const V3 f = -k.kxyz.cwiseProduct(p);
    const V3 t = -0.5 * p.cross(f);
    compareWithDrake(atRest(zero, p), &f, &t);
  }
}

TEST_CASE("drake bushing: configurations at rest (VariousConfigurationsAtRest)") {
  const V3 orientations[] = {V3(0, 0, 0), V3(kPi / 6, 0, 0), V3(0, kPi / 3, 0), V3(0, 0, 2 * kPi / 3),
                             V3(kPi / 6, kPi / 3, 2 * kPi / 3)};
  for (const V3& rpy : orientations) {
    compareWithDrake(atRest(rpy, V3::Zero()));
    compareWithDrake(atRest(rpy, V3(1, 2, 3)));
  }
}

TEST_CASE("drake bushing: identity pose, rotation rates (IdentityPoseVariousRotationRates)") {
  const BushingConstants<double> k = drakeConstants();
  const V3 zero = V3::Zero();
  // At q = 0, N is the identity: qdot = w_AC_A and the torque on C is
  // -d_i w_i; p_AoCo = 0 keeps the force zero (w x p vanishes).
  RelativeState s;
  compareWithDrake(s, &zero, &zero);
  const V3 rates(2, 3, 4);  // roll, pitch, yaw rates (rad/s)
  for (int axis = 0; axis < 3; ++axis) {
    s.w_AC_A = rates.cwiseProduct(V3::Unit(axis));
    const V3 t = -k.d012.cwiseProduct(s.w_AC_A);
    compareWithDrake(s, &zero, &t);
  }
  s.w_AC_A = rates;
  compareWithDrake(s);
}

TEST_CASE("drake bushing: identity pose, translational rates (IdentityPoseWithTranslationalRates)") {
  const BushingConstants<double> k = drakeConstants();
  const V3 zero = V3::Zero();
  // Co at Ao moving at v_ACo_A = [xd yd zd]: f = -dxyz o v on C at Bo = Co,
  // so no moment about Co, exactly.
  RelativeState s;
  compareWithDrake(s, &zero, &zero);
  const V3 rates(4, 5, 6);  // m/s
  for (int axis = 0; axis < 4; ++axis) {
    s.v_ACo_A = axis < 3 ? V3(rates.cwiseProduct(V3::Unit(axis))) : rates;
    const V3 f = -k.dxyz.cwiseProduct(s.v_ACo_A);
    compareWithDrake(s, &f, &zero);
  }
}

TEST_CASE("drake bushing: poses and motions, all 16 combinations (VariousPosesAndMotion)") {
  const V3 rpys[] = {V3::Zero(), V3(0.1, 0.2, 0.3)};
  const V3 positions[] = {V3::Zero(), V3(0.4, 0.5, 0.6)};
  const V3 rates[] = {V3::Zero(), V3(0.7, 0.8, 0.9)};
  const V3 velocities[] = {V3::Zero(), V3(1.1, 1.2, 1.3)};
  for (const V3& rpy : rpys)
    for (const V3& p : positions)
      for (const V3& w : rates)
        for (const V3& v : velocities) {
          RelativeState s;
          s.rpy = rpy;
          s.p_AoCo_A = p;
          s.w_AC_A = w;
          s.v_ACo_A = v;
          compareWithDrake(s);
        }
}

TEST_CASE("drake bushing: gimbal lock at pitch = +-pi/2, whatever the constants (TestGimbalLock)") {
  // Drake throws from both F_A_A and F_C_C at rpy = (0, pi/2, 0). Capstan's
  // bushing reports |cos q1| below kGimbalLockCos and its callers stop with
  // gimbalLockMessage (tested in force_elements_test.cpp).
  const FrameMotion<double> World;
  const BushingConstants<double> constantSets[] = {drakeConstants(), BushingConstants<double>{}};
  const V3 locked[] = {V3(0, kPi / 2, 0), V3(0, -kPi / 2, 0), V3(0.3, kPi / 2, -1.2)};
  for (const BushingConstants<double>& k : constantSets)
    for (const V3& rpy : locked) {
      INFO("rpy [", str(rpy), "]");
      const BushingForces<double> b = bushing(World, frameCMotion(World, atRest(rpy, V3::Zero())), k);
      CHECK(b.cosPitch < kGimbalLockCos);
    }
  // The threshold: |cos q1| < 0.008, i.e. q1 within pi/2 - acos(0.008) =
  // 0.458 degrees of +-90 degrees (Drake's GimbalLockPitchAngleTolerance).
  const double lockAngle = kPi / 2 - std::acos(kGimbalLockCos);
  CHECK(lockAngle * 180 / kPi == doctest::Approx(0.458).epsilon(1e-3));
  for (const double sign : {1.0, -1.0}) {
    const double outside = sign * std::acos(0.0081), inside = sign * std::acos(0.0079);
    const BushingForces<double> ok = bushing(World, frameCMotion(World, atRest(V3(0.2, outside, 0.5), V3::Zero())),
                                             drakeConstants());
    const BushingForces<double> locks = bushing(
        World, frameCMotion(World, atRest(V3(0.2, inside, 0.5), V3::Zero())), drakeConstants());
    CHECK(ok.cosPitch == doctest::Approx(0.0081).epsilon(1e-9));
    CHECK(ok.cosPitch >= kGimbalLockCos);
    CHECK(locks.cosPitch == doctest::Approx(0.0079).epsilon(1e-9));
    CHECK(locks.cosPitch < kGimbalLockCos);
  }
}

TEST_CASE("drake bushing: the halfway frame is the half-angle rotation (HalfAngleAxisAlgorithm)") {
  // R_AC turns by theta about lambda = (1, 2, 3)/sqrt(14), for theta from 0
  // to 0.99 pi in steps of pi/32; R_AB must turn by theta/2 about lambda.
  // With A = World and p_AoCo_A = e_i, [x y z] = R_AB^T e_i is row i of R_AB.
  const V3 lambda = V3(1, 2, 3).normalized();
  const FrameMotion<double> World;
  int steps = 0;
  for (double theta = 0; theta <= 0.99 * kPi; theta += kPi / 32, ++steps) {
    FrameMotion<double> C;
    C.R_WF = rotationAbout(lambda, theta);
    M3 R_AB;
    for (int i = 0; i < 3; ++i) {
      C.p_WF = V3::Unit(i);
      R_AB.row(i) = bushing(World, C, BushingConstants<double>{}).xyz.transpose();
    }
    const M3 R_AB_expected = rotationAbout(lambda, theta / 2);
    INFO("theta = ", theta, ", R_AB - expected = [", str(R_AB - R_AB_expected), "]");
    CHECK((R_AB - R_AB_expected).cwiseAbs().maxCoeff() <= kDrakeTol);
    // Drake also shows its check has the resolution to reject a half angle
    // that is 128 eps off (at 64 eps).
    const M3 R_AB_bad = rotationAbout(lambda, theta / 2 + 128 * kEps);
    CHECK((R_AB_bad - R_AB_expected).cwiseAbs().maxCoeff() > kHalfAngleRejectTol);
  }
  CHECK(steps == 32);
}

TEST_CASE("bushing: the halfway frame stays accurate short of a half turn, beyond Drake's 0.99 pi") {
  // Drake's tested range stops at 0.99 pi. Closer to pi, the skew part of
  // R_AC (2 sin(theta) lambda) shrinks, but R_AB is still well determined
  // by R_AC (its symmetric part gives the axis): the same 32 eps must hold
  // at pi - delta for any axis. (Taking the axis from the skew part alone
  // gives an error of about eps / cos(theta/2)^2: 5e-4 at delta = 1e-6.)
  std::mt19937 rng(41);
  std::uniform_real_distribution<double> u(-1, 1);
  const FrameMotion<double> World;
  for (const double delta : {1e-2, 1e-4, 1e-6, 1e-8}) {
    for (int trial = 0; trial < 10; ++trial) {
      const V3 lambda = V3(u(rng), u(rng), u(rng)).normalized();
      FrameMotion<double> C;
      C.R_WF = rotationAbout(lambda, kPi - delta);
      M3 R_AB;
      for (int i = 0; i < 3; ++i) {
        C.p_WF = V3::Unit(i);
        R_AB.row(i) = bushing(World, C, BushingConstants<double>{}).xyz.transpose();
      }
      const M3 R_AB_expected = rotationAbout(lambda, (kPi - delta) / 2);
      INFO("pi - ", delta, ", axis [", str(lambda), "], R_AB - expected = [", str(R_AB - R_AB_expected), "]");
      CHECK((R_AB - R_AB_expected).cwiseAbs().maxCoeff() <= kDrakeTol);
    }
  }
}

namespace {

// A random relative state: roll and yaw over (-pi, pi), pitch over
// (-maxPitch, maxPitch), |p| up to 1 m, |w| up to 2 rad/s, |v| up to 2 m/s.
RelativeState randomState(std::mt19937& rng, double maxPitch) {
  std::uniform_real_distribution<double> u(-1, 1);
  RelativeState s;
  s.rpy = V3(kPi * u(rng), maxPitch * u(rng), kPi * u(rng));
  s.p_AoCo_A = V3(u(rng), u(rng), u(rng));
  s.w_AC_A = 2 * V3(u(rng), u(rng), u(rng));
  s.v_ACo_A = 2 * V3(u(rng), u(rng), u(rng));
  return s;
}

FrameMotion<double> randomFrame(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  FrameMotion<double> F;
  F.R_WF = rpyRotation(V3(kPi * u(rng), 1.5 * u(rng), kPi * u(rng)));
  F.p_WF = V3(u(rng), u(rng), u(rng));
  F.w_WF = 3 * V3(u(rng), u(rng), u(rng));
  F.v_WF = 3 * V3(u(rng), u(rng), u(rng));
  return F;
}

BushingConstants<double> randomConstants(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0.5, 50.0);
  BushingConstants<double> k;
  for (int i = 0; i < 3; ++i) {
    k.k012[i] = 4 * u(rng);  // N*m/rad
    k.d012[i] = u(rng) / 5;  // N*m*s/rad
    k.kxyz[i] = 20 * u(rng); // N/m
    k.dxyz[i] = u(rng);      // N*s/m
  }
  return k;
}

// The power of the bushing's forces on C in C's motion relative to A:
// F_C_C . V_AC_C about Co, with V_AC_C = [R_CA w_AC_A; R_CA v_ACo_A] (W).
double powerOnCRelativeToA(const BushingForces<double>& b, const RelativeState& s) {
  const M3 R_CA = rpyRotation(s.rpy).transpose();
  return b.F_C_C.head<3>().dot(R_CA * s.w_AC_A) + b.F_C_C.tail<3>().dot(R_CA * s.v_ACo_A);
}

// The power of the bushing's forces on both bodies in World:
// F_Ao_W . [w_WA; v_WAo] + F_Co_W . [w_WC; v_WCo] (W).
double powerInWorld(const BushingForces<double>& b, const FrameMotion<double>& A, const FrameMotion<double>& C) {
  return b.F_Ao_W.head<3>().dot(A.w_WF) + b.F_Ao_W.tail<3>().dot(A.v_WF) + b.F_Co_W.head<3>().dot(C.w_WF) +
         b.F_Co_W.tail<3>().dot(C.v_WF);
}

}  // namespace

TEST_CASE("bushing power: tau . qdot for the torque, f . [xd yd zd] for the force, at random states") {
  // bushing.md 5: t is chosen so that t . w_AC = tau . qdot. bushing.md 8-10:
  // f acts on C at Bo, and C's point at Bo moves in A at
  // v_ACo - w_AC x (p_AoCo/2) = R_AB [xd yd zd], so the force's power
  // relative to A is f . [xd yd zd]. Together: the power of the spatial force
  // on C relative to A, which by action-reaction is also the power of both
  // bodies' forces in World (or any frame). The stiffness and damping parts
  // split it into Drake's original (2020) conservative power
  // -(k012 o q) . qdot - (kxyz o xyz) . xyzdot and dissipation
  // -d012 . qdot^2 - dxyz . xyzdot^2 <= 0.
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 40; ++trial) {
    const RelativeState s = randomState(rng, 1.5);
    const FrameMotion<double> A = randomFrame(rng);
    const FrameMotion<double> C = frameCMotion(A, s);
    const BushingConstants<double> k = randomConstants(rng);
    const Expected e = expectedResponse(s, k);
    INFO("trial ", trial, " rpy [", str(s.rpy), "]");
    const double torquePower = e.tau.dot(e.qdot), forcePower = e.f.dot(e.xyzdot);
    const double scale = e.tau.norm() * e.qdot.norm() + e.f.norm() * e.xyzdot.norm();  // W

    BushingConstants<double> torqueOnly = k, forceOnly = k, stiffnessOnly = k, dampingOnly = k;
    torqueOnly.kxyz.setZero();
    torqueOnly.dxyz.setZero();
    forceOnly.k012.setZero();
    forceOnly.d012.setZero();
    stiffnessOnly.d012.setZero();
    stiffnessOnly.dxyz.setZero();
    dampingOnly.k012.setZero();
    dampingOnly.kxyz.setZero();

    CHECK(std::abs(powerOnCRelativeToA(bushing(A, C, torqueOnly), s) - torquePower) <= kPowerTol * (1 + scale));
    CHECK(std::abs(powerOnCRelativeToA(bushing(A, C, forceOnly), s) - forcePower) <= kPowerTol * (1 + scale));
    const BushingForces<double> b = bushing(A, C, k);
    CHECK(std::abs(powerOnCRelativeToA(b, s) - (torquePower + forcePower)) <= kPowerTol * (1 + scale));
    CHECK(std::abs(powerInWorld(b, A, C) - (torquePower + forcePower)) <= kPowerTol * (1 + scale));

    const double conservative = -(k.k012.cwiseProduct(e.q)).dot(e.qdot) - (k.kxyz.cwiseProduct(e.xyz)).dot(e.xyzdot);
    const double dissipation = -k.d012.dot(e.qdot.cwiseAbs2()) - k.dxyz.dot(e.xyzdot.cwiseAbs2());
    CHECK(dissipation <= 0);
    CHECK(std::abs(powerOnCRelativeToA(bushing(A, C, stiffnessOnly), s) - conservative) <= kPowerTol * (1 + scale));
    CHECK(std::abs(powerOnCRelativeToA(bushing(A, C, dampingOnly), s) - dissipation) <= kPowerTol * (1 + scale));
    // Capstan's energy (its addition; Drake's 2020 test expected the same
    // 1/2 k012 . q^2 + 1/2 kxyz . [x y z]^2).
    CHECK(b.energy == doctest::Approx(e.energy).epsilon(1e-12));
  }
}

TEST_CASE("bushing: action-reaction in A over the full range of orientations") {
  // force_elements_test.cpp checks action-reaction in World at one relative
  // orientation; here roll and yaw sweep (-pi, pi) and pitch comes within
  // 0.07 rad of lock. In A: f_A_A = -R_AC f_C_C, and the moments balance
  // about Ao: t_Ao_A + R_AC t_Co_C + p_AoCo_A x (R_AC f_C_C) = 0.
  std::mt19937 rng(77);
  for (int trial = 0; trial < 40; ++trial) {
    const RelativeState s = randomState(rng, kPi / 2 - 0.07);
    const FrameMotion<double> A = randomFrame(rng);
    const BushingForces<double> b = bushing(A, frameCMotion(A, s), randomConstants(rng));
    INFO("trial ", trial, " rpy [", str(s.rpy), "]");
    const M3 R_AC = rpyRotation(s.rpy);
    const V3 f_C_A = R_AC * b.F_C_C.tail<3>();
    const double scale = 1 + b.F_A_A.norm() + b.F_C_C.norm();
    CHECK((b.F_A_A.tail<3>() + f_C_A).norm() <= kMovingFrameTol * scale);
    const V3 netMoment_Ao_A = b.F_A_A.head<3>() + R_AC * b.F_C_C.head<3>() + s.p_AoCo_A.cross(f_C_A);
    CHECK(netMoment_Ao_A.norm() <= kMovingFrameTol * scale);
  }
}

TEST_CASE("bushing: at rest relative to A, damping adds nothing; coincident at rest, no force at all") {
  // C carried rigidly by a moving A (w_AC = 0, v_ACo = 0): qdot = 0 and
  // [xd yd zd] = 0 however fast A moves, so the damping constants must not
  // matter. With C also coincident with A, every force vanishes.
  std::mt19937 rng(91);
  for (int trial = 0; trial < 20; ++trial) {
    RelativeState s = randomState(rng, 1.4);
    s.w_AC_A.setZero();
    s.v_ACo_A.setZero();
    const FrameMotion<double> A = randomFrame(rng);
    const BushingConstants<double> k = randomConstants(rng);
    BushingConstants<double> undamped = k;
    undamped.d012.setZero();
    undamped.dxyz.setZero();
    const BushingForces<double> b = bushing(A, frameCMotion(A, s), k);
    const BushingForces<double> u = bushing(A, frameCMotion(A, s), undamped);
    INFO("trial ", trial);
    CHECK(b.qdot.norm() <= kMovingFrameTol);
    CHECK(b.xyzdot.norm() <= kMovingFrameTol);
    CHECK((b.F_C_C - u.F_C_C).norm() <= kMovingFrameTol * (1 + u.F_C_C.norm()));
    CHECK((b.F_A_A - u.F_A_A).norm() <= kMovingFrameTol * (1 + u.F_A_A.norm()));

    const BushingForces<double> c = bushing(A, A, k);
    CHECK(c.F_A_A.norm() <= kMovingFrameTol);
    CHECK(c.F_C_C.norm() <= kMovingFrameTol);
  }
}
