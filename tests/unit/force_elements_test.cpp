// The force elements of runtime/include/capstan/force_elements.hpp against
// the identities that define them (../shared/bushing.md, Drake's
// LinearBushingRollPitchYaw): angles and rates, the halfway frame,
// action-reaction, the moment identity, the power of the gimbal torques,
// zero forces at coincident frames at rest, and the spring's energy.
#include <doctest/doctest.h>

#include <capstan/force_elements.hpp>

#include <cmath>
#include <random>

namespace {

using namespace capstan;

Vec3<double> randomVec3(std::mt19937& rng, double scale) {
  std::uniform_real_distribution<double> d(-scale, scale);
  return {d(rng), d(rng), d(rng)};
}

// A random rotation as Rz(y) Ry(p) Rx(r) with |p| < 1.2 (away from lock).
Mat3<double> rpyRotation(double r, double p, double y) {
  return axisAngleRotation<double>(Vec3<double>::UnitZ(), y) * axisAngleRotation<double>(Vec3<double>::UnitY(), p) *
         axisAngleRotation<double>(Vec3<double>::UnitX(), r);
}

FrameMotion<double> randomMotion(std::mt19937& rng) {
  FrameMotion<double> m;
  const Vec3<double> a = randomVec3(rng, 1.0);
  m.R_WF = rpyRotation(a[0], a[1], a[2]);
  m.p_WF = randomVec3(rng, 1.0);
  m.w_WF = randomVec3(rng, 2.0);
  m.v_WF = randomVec3(rng, 2.0);
  return m;
}

// C moved along its motion by time h (a rotation by h w, a translation by h v).
FrameMotion<double> advance(const FrameMotion<double>& m, double h) {
  FrameMotion<double> out = m;
  const double angle = m.w_WF.norm() * h;
  if (angle != 0) out.R_WF = axisAngleRotation<double>(m.w_WF.normalized(), angle) * m.R_WF;
  out.p_WF = m.p_WF + h * m.v_WF;
  return out;
}

BushingConstants<double> randomConstants(std::mt19937& rng) {
  std::uniform_real_distribution<double> d(0.5, 100.0);
  BushingConstants<double> k;
  for (int i = 0; i < 3; ++i) {
    k.k012[i] = d(rng);
    k.d012[i] = d(rng) / 10;
    k.kxyz[i] = d(rng) * 10;
    k.dxyz[i] = d(rng);
  }
  return k;
}

}  // namespace

TEST_CASE("bushing: roll-pitch-yaw angles, their rates N w, and the halfway frame") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    FrameMotion<double> A = randomMotion(rng), C = A;
    std::uniform_real_distribution<double> angle(-1.2, 1.2);
    const double r = angle(rng), p = angle(rng), y = angle(rng);
    C.R_WF = A.R_WF * rpyRotation(r, p, y);
    C.p_WF = A.p_WF + randomVec3(rng, 0.3);
    C.w_WF = A.w_WF + randomVec3(rng, 1.0);
    const BushingConstants<double> k = randomConstants(rng);
    const BushingForces<double> f = bushing(A, C, k);
    CHECK(f.q[0] == doctest::Approx(r).epsilon(1e-12));
    CHECK(f.q[1] == doctest::Approx(p).epsilon(1e-12));
    CHECK(f.q[2] == doctest::Approx(y).epsilon(1e-12));
    CHECK(f.cosPitch == doctest::Approx(std::cos(p)).epsilon(1e-12));
    // qdot by central differences of q along the relative motion.
    const double h = 1e-6;
    const BushingForces<double> fp = bushing(advance(A, h), advance(C, h), k);
    const BushingForces<double> fm = bushing(advance(A, -h), advance(C, -h), k);
    for (int i = 0; i < 3; ++i) CHECK(f.qdot[i] == doctest::Approx((fp.q[i] - fm.q[i]) / (2 * h)).epsilon(1e-6));
    // Gimbal torques' power: t . w_AC = tau . qdot (t the torque on C in A).
    // With the force part switched off, F_C_C's torque is t (in C).
    BushingConstants<double> torqueOnly = k;
    torqueOnly.kxyz.setZero();
    torqueOnly.dxyz.setZero();
    const BushingForces<double> g = bushing(A, C, torqueOnly);
    const Mat3<double> R_AC = A.R_WF.transpose() * C.R_WF;
    const Vec3<double> t_A = R_AC * g.F_C_C.head<3>();
    const Vec3<double> w_AC_A = A.R_WF.transpose() * (C.w_WF - A.w_WF);
    const Vec3<double> tau = -(k.k012.cwiseProduct(g.q) + k.d012.cwiseProduct(g.qdot));
    CHECK(t_A.dot(w_AC_A) == doctest::Approx(tau.dot(g.qdot)).epsilon(1e-10));
  }
}

TEST_CASE("bushing: action-reaction and the moment identity, in World") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const FrameMotion<double> A = randomMotion(rng);
    FrameMotion<double> C = randomMotion(rng);
    C.R_WF = A.R_WF * rpyRotation(0.3, -0.7, 1.1);  // away from lock
    const BushingForces<double> f = bushing(A, C, randomConstants(rng));
    // Drake's frames and World agree.
    const Vec6<double> FA = reExpress<double>(A.R_WF, f.F_A_A), FC = reExpress<double>(C.R_WF, f.F_C_C);
    for (int i = 0; i < 6; ++i) {
      CHECK(FA[i] == doctest::Approx(f.F_Ao_W[i]).epsilon(1e-12));
      CHECK(FC[i] == doctest::Approx(f.F_Co_W[i]).epsilon(1e-12));
    }
    // Equal and opposite forces; zero net moment about any point (Ao).
    for (int i = 0; i < 3; ++i) CHECK(FA[3 + i] + FC[3 + i] == doctest::Approx(0.0).epsilon(1e-12).scale(FA.norm()));
    const Vec3<double> netMoment = FA.head<3>() + FC.head<3>() + cross<double>(C.p_WF - A.p_WF, FC.tail<3>());
    CHECK(netMoment.norm() <= 1e-12 * (1 + FA.norm() + FC.norm()));
  }
}

TEST_CASE("bushing: no forces at coincident frames at rest; the halfway frame halves R_AC") {
  std::mt19937 rng(7);
  const FrameMotion<double> A = randomMotion(rng);
  FrameMotion<double> C = A;
  const BushingForces<double> f = bushing(A, C, randomConstants(rng));
  CHECK(f.F_A_A.norm() < 1e-12);
  CHECK(f.F_C_C.norm() < 1e-12);
  CHECK(f.energy == doctest::Approx(0.0));
  // Pure translation of C along A's x: f along -x only, its size kx x.
  BushingConstants<double> k = randomConstants(rng);
  C.p_WF = A.p_WF + A.R_WF * Vec3<double>(0.2, 0, 0);
  C.v_WF = A.v_WF + cross<double>(A.w_WF, C.p_WF - A.p_WF);  // at rest relative to A
  C.w_WF = A.w_WF;
  const BushingForces<double> g = bushing(A, C, k);
  CHECK(g.xyz[0] == doctest::Approx(0.2));
  CHECK(g.xyzdot.norm() < 1e-12);
  CHECK(g.F_C_C[3] == doctest::Approx(-k.kxyz[0] * 0.2));
  CHECK(std::abs(g.F_C_C[4]) < 1e-12);
  // The displacement in the halfway frame: R_AB^2 = R_AC, so [x y z] for C
  // turned by 2 theta about z and displaced along A's x is R_z(-theta) x.
  C.R_WF = A.R_WF * axisAngleRotation<double>(Vec3<double>::UnitZ(), 0.8);
  const BushingForces<double> b = bushing(A, C, k);
  CHECK(b.xyz[0] == doctest::Approx(0.2 * std::cos(0.4)));
  CHECK(b.xyz[1] == doctest::Approx(-0.2 * std::sin(0.4)));
}

TEST_CASE("bushing: gimbal lock is reported through |cos pitch|, never a NaN force in range") {
  FrameMotion<double> A, C;
  C.R_WF = rpyRotation(0.1, 1.5707963267948966 - 0.005, 0.2);
  const BushingForces<double> f = bushing(A, C, BushingConstants<double>{});
  CHECK(f.cosPitch < kGimbalLockCos);
  CHECK(f.cosPitch > 0);
  CHECK(std::isfinite(f.F_C_C.norm()));
  const std::string m = gimbalLockMessage("mount", f.q[1], 0.25);
  CHECK(m.find("bushing `mount` is at gimbal lock at t = 0.25: pitch = 89.7") != std::string::npos);
}

TEST_CASE("spring: tension, equal and opposite forces, energy whose rate is minus the elastic power") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    const FrameMotion<double> A = randomMotion(rng), C = randomMotion(rng);
    const double k = 30.0, d = 0.0, L0 = 0.4;
    const SpringForces<double> s = spring(A, C, k, d, L0);
    CHECK(s.length == doctest::Approx((C.p_WF - A.p_WF).norm()));
    CHECK(s.tension == doctest::Approx(k * (s.length - L0)));
    CHECK((s.F_Ao_W + s.F_Co_W).norm() < 1e-12);
    // dE/dt = -(power of the spring's forces on the two points).
    const double h = 1e-6;
    const double dE = (spring(advance(A, h), advance(C, h), k, d, L0).energy -
                       spring(advance(A, -h), advance(C, -h), k, d, L0).energy) / (2 * h);
    const double power = s.F_Ao_W.tail<3>().dot(A.v_WF) + s.F_Co_W.tail<3>().dot(C.v_WF);
    CHECK(dE == doctest::Approx(-power).epsilon(1e-6));
  }
  // Coincident origins: no force, no NaN.
  const FrameMotion<double> A;
  const SpringForces<double> s = spring(A, A, 10.0, 1.0, 0.0);
  CHECK(s.F_Co_W.norm() == 0.0);
  CHECK(std::isfinite(s.length));
}
