// Geodesic shooting against analytic truth: the integrator's order, great
// circles, helices, Clairaut's relation, zero geodesic curvature, Jacobi
// fields vs finite differences, reverse sensitivities, plane hits, the
// turning angle, warm step sizes.
#include <capstan/geometry/geometry.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <random>

namespace cg = capstan::geometry;
using Vec3 = cg::Vec3<double>;

namespace {

constexpr double kShootTolerance = 1e-9;    // m, end points of shots at accuracy 1e-12
constexpr double kJacobiFdTolerance = 1e-6; // relative, central differences
constexpr double kClairautTolerance = 1e-9; // relative to R * sin(psi) scale
constexpr double kPi = std::numbers::pi;

cg::GeodesicOptions<double> numericOptions(double accuracy = 1e-12) {
  cg::GeodesicOptions<double> o;
  o.accuracy = accuracy;
  o.preferAnalytic = false;
  return o;
}

Vec3 randomUnit(std::mt19937& rng) {
  std::normal_distribution<double> n(0, 1);
  return Vec3(n(rng), n(rng), n(rng)).normalized();
}

template <class Surface> Vec3 randomSurfacePoint(const Surface& s, std::mt19937& rng, double scale) {
  return cg::findNearestPoint(s, scale * randomUnit(rng)).point;
}

template <class Surface> Vec3 randomTangent(const Surface& s, const Vec3& p, std::mt19937& rng) {
  const Vec3 n = cg::calcSurfaceUnitNormal(s, p);
  return cg::frameFromNormalAndHint(n, randomUnit(rng)).col(0);
}

const cg::Sphere<double> kSphere{0.7};
const cg::Cylinder<double> kCylinder{0.4};
const cg::Ellipsoid<double> kEllipsoid{Vec3(0.5, 0.3, 0.2)};
const cg::Ellipsoid<double> kSpheroid{Vec3(0.5, 0.5, 0.2)};
const cg::Torus<double> kTorus{1.0, 0.3};

}  // namespace

TEST_CASE("the Verner 7(6) tableau: consistent rows, seventh order, sixth-order estimate") {
  using C = cg::detail::Verner76<double>;
  // Row sums are the stage times c_i (autonomous form); c9 = c10 = 1.
  CHECK(std::abs(C::a21 - C::c2) < 1e-16);
  CHECK(std::abs(C::a31 + C::a32 - C::c3) < 1e-15);
  CHECK(std::abs(C::a41 + C::a43 - C::c4) < 1e-16);
  CHECK(std::abs(C::a51 + C::a53 + C::a54 - C::c5) < 1e-15);
  CHECK(std::abs(C::a61 + C::a63 + C::a64 + C::a65 - C::c6) < 1e-14);
  CHECK(std::abs(C::a71 + C::a73 + C::a74 + C::a75 + C::a76 - C::c7) < 1e-14);
  CHECK(std::abs(C::a81 + C::a83 + C::a84 + C::a85 + C::a86 + C::a87 - C::c8) < 1e-14);
  CHECK(std::abs(C::a91 + C::a93 + C::a94 + C::a95 + C::a96 + C::a97 + C::a98 - 1) < 1e-14);
  CHECK(std::abs(C::a101 + C::a103 + C::a104 + C::a105 + C::a106 + C::a107 - 1) < 1e-13);
  CHECK(std::abs(C::b1 + C::b4 + C::b5 + C::b6 + C::b7 + C::b8 + C::b9 - 1) < 1e-15);
  CHECK(std::abs(C::e1 + C::e4 + C::e5 + C::e6 + C::e7 + C::e8 + C::e9 + C::e10) < 1e-15);
  // Order from a nonlinear problem with a known solution: the geodesic
  // field on a sphere (great circles), fixed steps without drift
  // correction. Halving the step divides the end error by 2^7 and the
  // error estimate of a step by 2^7 (its local error is O(h^7)).
  const double r = 0.5, L = 1.5;
  const cg::detail::GeodesicField<cg::Sphere<double>> f(cg::Sphere<double>{r});
  using State = cg::detail::GeodesicState<double>;
  State y0;
  y0 << r, 0, 0, 0, 0.6, 0.8, 0, 1, 1, 0;
  const auto endError = [&](int n, double& firstEstimate) {
    State y = y0, yNew, err;
    cg::detail::VernerStages<State> k;
    const double h = L / n;
    for (int i = 0; i < n; ++i) {
      k[0] = f(y);
      cg::detail::vernerStep(f, y, h, k, yNew, &err);
      if (i == 0) firstEstimate = err.norm();
      y = yNew;
    }
    const double phi = L / r;
    State truth;
    truth << r * std::cos(phi), 0.6 * r * std::sin(phi), 0.8 * r * std::sin(phi), -std::sin(phi),
        0.6 * std::cos(phi), 0.8 * std::cos(phi), r * std::sin(phi), std::cos(phi), std::cos(phi),
        -std::sin(phi) / r;
    return (y - truth).norm();
  };
  double est8 = 0, est16 = 0, est32 = 0;
  const double e8 = endError(8, est8), e16 = endError(16, est16), e32 = endError(32, est32);
  MESSAGE("end errors " << e8 << " " << e16 << " " << e32 << ", estimates " << est8 << " " << est16 << " " << est32);
  CHECK(std::log2(e8 / e16) > 6.5);
  CHECK(std::log2(e16 / e32) > 6.5);
  CHECK(std::log2(e16 / e32) < 7.7);
  CHECK(std::log2(est16 / est32) > 6.5);
  CHECK(std::log2(est16 / est32) < 7.7);
}

TEST_CASE("sphere: closed form and numeric shots follow the great circle") {
  std::mt19937 rng(21);
  const double r = kSphere.radius;
  for (int trial = 0; trial < 20; ++trial) {
    const Vec3 P = randomSurfacePoint(kSphere, rng, 1.0);
    const Vec3 t = randomTangent(kSphere, P, rng);
    const double L = 0.2 + 3.0 * trial / 20.0;
    const Vec3 truth = std::cos(L / r) * P + r * std::sin(L / r) * t;
    const auto a = cg::shootGeodesicInDirectionUntilLengthReachedAnalytical(kSphere, P, t, L);
    const auto n = cg::shootGeodesicInDirectionUntilLengthReached(kSphere, P, t, L, numericOptions());
    REQUIRE(a.ok());
    REQUIRE(n.ok());
    CHECK(a.isAnalytic);
    CHECK(!n.isAnalytic);
    CHECK((a.pointQ() - truth).norm() < 1e-13);
    CHECK((n.pointQ() - truth).norm() < kShootTolerance);
    CHECK(std::abs(n.length() - L) < 1e-14);
    CHECK(std::abs(n.jacobiQ() - r * std::sin(L / r)) < kShootTolerance);
    CHECK(std::abs(n.jacobiTransQ() - std::cos(L / r)) < kShootTolerance);
    for (int i = 0; i < n.numPoints(); ++i) {
      CHECK(std::abs(kSphere.value(n.points[i])) < 1e-13);
      CHECK(std::abs(n.tangents[i].norm() - 1) < 1e-13);
      CHECK(std::abs(n.points[i].dot(P.cross(t))) < kShootTolerance);  // stays in the great-circle plane
    }
  }
}

TEST_CASE("cylinder: shots are helices with the analytic length and pitch") {
  std::mt19937 rng(22);
  const double r = kCylinder.radius;
  for (int trial = 0; trial < 20; ++trial) {
    const double phi0 = 2 * kPi * trial / 20.0, z0 = 0.3 * trial;
    const Vec3 P(r * std::cos(phi0), r * std::sin(phi0), z0);
    const double psi = 0.1 + 1.3 * trial / 20.0;  // angle from the circumferential direction
    const Vec3 t = std::cos(psi) * Vec3(-std::sin(phi0), std::cos(phi0), 0) + std::sin(psi) * Vec3::UnitZ();
    const double L = 2.5;
    const double phi = phi0 + std::cos(psi) * L / r;
    const Vec3 truth(r * std::cos(phi), r * std::sin(phi), z0 + std::sin(psi) * L);
    const auto a = cg::shootGeodesicInDirectionUntilLengthReached(kCylinder, P, t, L);
    const auto n = cg::shootGeodesicInDirectionUntilLengthReached(kCylinder, P, t, L, numericOptions());
    REQUIRE(a.ok());
    REQUIRE(n.ok());
    CHECK((a.pointQ() - truth).norm() < 1e-13);
    CHECK((n.pointQ() - truth).norm() < kShootTolerance);
    CHECK(std::abs(n.jacobiQ() - L) < kShootTolerance);
    CHECK(std::abs(n.jacobiTransQ() - 1) < kShootTolerance);
  }
}

TEST_CASE("surfaces of revolution: Clairaut's relation holds along the whole geodesic") {
  std::mt19937 rng(23);
  const auto checkClairaut = [&](const auto& s, double scale, double L) {
    for (int trial = 0; trial < 10; ++trial) {
      const Vec3 P = randomSurfacePoint(s, rng, scale);
      const Vec3 t = randomTangent(s, P, rng);
      const auto g = cg::shootGeodesicInDirectionUntilLengthReached(s, P, t, L, numericOptions());
      REQUIRE(g.ok());
      CHECK(g.numPoints() > 10);
      // rho * sin(psi) = z component of x cross t (psi from the meridian).
      const double c0 = g.points[0].cross(g.tangents[0]).z();
      for (int i = 0; i < g.numPoints(); ++i) {
        CHECK(std::abs(g.points[i].cross(g.tangents[i]).z() - c0) < kClairautTolerance * scale);
        CHECK(std::abs(s.value(g.points[i])) < 1e-12);
      }
    }
  };
  checkClairaut(kSpheroid, 0.5, 3.0);
  checkClairaut(kTorus, 1.3, 6.0);
}

TEST_CASE("numeric geodesics have zero geodesic curvature") {
  // kappa_g(s) = b . dt/ds, by central differences of shots of length s +- h.
  std::mt19937 rng(24);
  constexpr double h = 1e-4;
  // 1/m: truncation ~ h^2 k^3 / 6 (k <= 12.5 here) plus noise ~ accuracy / h.
  constexpr double kGeodesicCurvatureTolerance = 1e-6;
  for (int trial = 0; trial < 6; ++trial) {
    const Vec3 P = randomSurfacePoint(kEllipsoid, rng, 0.5);
    const Vec3 t = randomTangent(kEllipsoid, P, rng);
    for (const double s : {0.3, 0.8, 1.3}) {
      const auto g0 = cg::shootGeodesicInDirectionUntilLengthReached(kEllipsoid, P, t, s, numericOptions(1e-13));
      const auto gp = cg::shootGeodesicInDirectionUntilLengthReached(kEllipsoid, P, t, s + h, numericOptions(1e-13));
      const auto gm = cg::shootGeodesicInDirectionUntilLengthReached(kEllipsoid, P, t, s - h, numericOptions(1e-13));
      const Vec3 dt = (gp.tangentQ() - gm.tangentQ()) / (2 * h);
      CHECK(std::abs(dt.dot(g0.binormalQ())) < kGeodesicCurvatureTolerance);
      // ... while the normal curvature is the surface's in that direction.
      const double kn = cg::calcSurfaceCurvatureInDirection(kEllipsoid, g0.pointQ(), g0.tangentQ());
      CHECK(std::abs(dt.dot(g0.normalQ()) + kn) < 1e-5 * std::abs(kn) + kGeodesicCurvatureTolerance);
    }
  }
}

TEST_CASE("Jacobi fields match finite differences of shooting") {
  std::mt19937 rng(25);
  constexpr double eps = 1e-5;
  const auto check = [&](const auto& s, double scale, double L) {
    for (int trial = 0; trial < 8; ++trial) {
      const Vec3 P = randomSurfacePoint(s, rng, scale);
      const Vec3 t = randomTangent(s, P, rng);
      const Vec3 n = cg::calcSurfaceUnitNormal(s, P);
      const Vec3 b = t.cross(n);
      const auto opt = numericOptions(1e-13);
      const auto g = cg::shootGeodesicInDirectionUntilLengthReached(s, P, t, L, opt);
      REQUIRE(g.ok());
      // Directional: rotate the start tangent towards b.
      const auto gp = cg::shootGeodesicInDirectionUntilLengthReached(s, P, Vec3(std::cos(eps) * t + std::sin(eps) * b), L, opt);
      const auto gm = cg::shootGeodesicInDirectionUntilLengthReached(s, P, Vec3(std::cos(eps) * t - std::sin(eps) * b), L, opt);
      const double jd = (gp.pointQ() - gm.pointQ()).dot(g.binormalQ()) / (2 * eps);
      const double jdDot = (gp.tangentQ() - gm.tangentQ()).dot(g.binormalQ()) / (2 * eps);
      CHECK(std::abs(jd - g.jacobiQ()) < kJacobiFdTolerance * std::max(1.0, std::abs(jd)));
      CHECK(std::abs(jdDot - g.jacobiQDot()) < kJacobiFdTolerance * std::max(1.0, std::abs(jdDot)));
      // Positional: move P along b (re-projected onto the surface), same direction.
      const auto tp = cg::shootGeodesicInDirectionUntilLengthReached(s, Vec3(P + eps * b), t, L, opt);
      const auto tm = cg::shootGeodesicInDirectionUntilLengthReached(s, Vec3(P - eps * b), t, L, opt);
      const double jp = (tp.pointQ() - tm.pointQ()).dot(g.binormalQ()) / (2 * eps);
      CHECK(std::abs(jp - g.jacobiTransQ()) < 1e-5 * std::max(1.0, std::abs(jp)));
      // Reverse: from Q along -tQ, rotating towards that curve's binormal.
      cg::Geodesic<double> rev = g;
      cg::calcGeodesicReverseSensitivity(rev);
      const Vec3 u = -g.tangentQ();
      const Vec3 bu = u.cross(g.normalQ());
      const auto rp = cg::shootGeodesicInDirectionUntilLengthReached(s, g.pointQ(), Vec3(std::cos(eps) * u + std::sin(eps) * bu), L, opt);
      const auto rm = cg::shootGeodesicInDirectionUntilLengthReached(s, g.pointQ(), Vec3(std::cos(eps) * u - std::sin(eps) * bu), L, opt);
      const Vec3 bAtP = (-g.tangentP()).cross(g.normalP());
      const double jr = (rp.pointQ() - rm.pointQ()).dot(bAtP) / (2 * eps);
      CHECK(std::abs(jr - rev.jacobiQtoP.front().x()) < kJacobiFdTolerance * std::max(1.0, std::abs(jr)));
      CHECK(std::abs(rev.jacobiQtoP.back().x()) < 1e-14);
      CHECK(std::abs(rev.jacobiQtoP.back().y() - 1) < 1e-12);
      CHECK(std::abs(rev.jacobiTransQtoP.back().x() - 1) < 1e-12);
    }
  };
  check(kEllipsoid, 0.5, 1.0);
  check(kTorus, 1.3, 2.0);
}

TEST_CASE("plane hits: on the plane, matching the closed form and the length shot") {
  std::mt19937 rng(26);
  for (int trial = 0; trial < 10; ++trial) {
    const Vec3 P = randomSurfacePoint(kSphere, rng, 1.0);
    const Vec3 t = randomTangent(kSphere, P, rng);
    const cg::Plane<double> plane{randomUnit(rng), 0.1};
    const auto a = cg::shootGeodesicInDirectionUntilPlaneHitAnalytical(kSphere, P, t, plane);
    const auto n = cg::shootGeodesicInDirectionUntilPlaneHit(kSphere, P, t, plane, numericOptions());
    REQUIRE(a.status == n.status);
    if (!a.ok()) continue;
    CHECK(std::abs(plane.signedDistance(a.pointQ())) < 1e-13);
    CHECK(std::abs(plane.signedDistance(n.pointQ())) < 1e-13);
    CHECK(std::abs(a.length() - n.length()) < kShootTolerance);
  }
  // A plane the great circle never reaches.
  const Vec3 P(0.7, 0, 0);
  const auto miss = cg::shootGeodesicInDirectionUntilPlaneHit(kSphere, P, Vec3::UnitY(), cg::Plane<double>{Vec3::UnitZ(), 0.5});
  CHECK(miss.status == cg::GeodesicStatus::PlaneNotHit);
  // Ellipsoid and cylinder: the hit point equals a length shot of that length.
  for (int trial = 0; trial < 10; ++trial) {
    const Vec3 Pe = randomSurfacePoint(kEllipsoid, rng, 0.5);
    const Vec3 te = randomTangent(kEllipsoid, Pe, rng);
    const cg::Plane<double> plane{te, te.dot(Pe) + 0.2};
    auto opt = numericOptions();
    opt.maxLength = 5;
    const auto hit = cg::shootGeodesicInDirectionUntilPlaneHit(kEllipsoid, Pe, te, plane, opt);
    if (hit.status == cg::GeodesicStatus::PlaneNotHit) continue;
    REQUIRE(hit.ok());
    CHECK(std::abs(plane.signedDistance(hit.pointQ())) < 1e-12);
    const auto len = cg::shootGeodesicInDirectionUntilLengthReached(kEllipsoid, Pe, te, hit.length(), opt);
    CHECK((len.pointQ() - hit.pointQ()).norm() < kShootTolerance);
  }
  const Vec3 Pc(0.4, 0, 0);
  const Vec3 tc = Vec3(0, 1, 1).normalized();
  const cg::Plane<double> zPlane{Vec3::UnitZ(), 1.0};
  const auto hc = cg::shootGeodesicInDirectionUntilPlaneHit(kCylinder, Pc, tc, zPlane);
  const auto hn = cg::shootGeodesicInDirectionUntilPlaneHit(kCylinder, Pc, tc, zPlane, numericOptions());
  REQUIRE(hc.ok());
  REQUIRE(hn.ok());
  CHECK(std::abs(hc.length() - std::sqrt(2.0)) < 1e-12);
  CHECK(std::abs(hn.length() - std::sqrt(2.0)) < kShootTolerance);
}

TEST_CASE("shooting reports bad input instead of producing NaN") {
  const auto alongNormal = cg::shootGeodesicInDirectionUntilLengthReached(kEllipsoid, Vec3(0.5, 0, 0), Vec3::UnitX(), 1.0);
  CHECK(alongNormal.status == cg::GeodesicStatus::InvalidInput);
  const Vec3 nan(std::nan(""), 0, 0);
  CHECK(cg::shootGeodesicInDirectionUntilLengthReached(kTorus, nan, Vec3::UnitY(), 1.0).status ==
        cg::GeodesicStatus::InvalidInput);
  CHECK(cg::shootGeodesicInDirectionUntilLengthReached(kTorus, Vec3(1.3, 0, 0), Vec3::UnitY(), -1.0).status ==
        cg::GeodesicStatus::InvalidInput);
  auto few = numericOptions();
  few.maxSteps = 3;
  const auto capped = cg::shootGeodesicInDirectionUntilLengthReached(kTorus, Vec3(1.3, 0, 0), Vec3::UnitY(), 5.0, few);
  CHECK(capped.status == cg::GeodesicStatus::MaxStepsExceeded);
  CHECK(capped.pointQ().allFinite());
  // A start point slightly off the surface is projected onto it first.
  const auto off = cg::shootGeodesicInDirectionUntilLengthReached(kEllipsoid, Vec3(0.5003, 0.001, 0.0), Vec3::UnitY(), 0.5);
  REQUIRE(off.ok());
  CHECK(std::abs(kEllipsoid.value(off.pointP())) < 1e-13);
}

TEST_CASE("the turning angle integrates the normal curvature") {
  // Sphere: kn = 1/r on every great circle; numeric and closed form.
  std::mt19937 rng(31);
  for (int trial = 0; trial < 5; ++trial) {
    const Vec3 P = randomSurfacePoint(kSphere, rng, 1.0);
    const Vec3 t = randomTangent(kSphere, P, rng);
    const double L = 0.3 + 0.7 * trial;
    const auto n = cg::shootGeodesicInDirectionUntilLengthReached(kSphere, P, t, L, numericOptions(1e-10));
    const auto a = cg::shootGeodesicInDirectionUntilLengthReachedAnalytical(kSphere, P, t, L);
    REQUIRE(n.ok());
    CHECK(std::abs(n.turningAngle - L / kSphere.radius) < 1e-9);
    CHECK(std::abs(a.turningAngle - L / kSphere.radius) < 1e-13);
  }
  // Torus: the outer equator is a geodesic with kn = 1/(R + r).
  const Vec3 Pt(kTorus.torusRadius + kTorus.tubeRadius, 0, 0);
  const auto eq = cg::shootGeodesicInDirectionUntilLengthReached(kTorus, Pt, Vec3::UnitY(), 2.0, numericOptions(1e-10));
  REQUIRE(eq.ok());
  CHECK(std::abs(eq.turningAngle - 2.0 / (kTorus.torusRadius + kTorus.tubeRadius)) < 1e-9);
  // Ellipsoid (kn varies along the curve): the default accuracy agrees
  // with 1e-14, and with the chord angles summed over a dense shot (their
  // sum is the turning to O(h^2)).
  for (int trial = 0; trial < 5; ++trial) {
    const Vec3 P = randomSurfacePoint(kEllipsoid, rng, 0.5);
    const Vec3 t = randomTangent(kEllipsoid, P, rng);
    const auto g = cg::shootGeodesicInDirectionUntilLengthReached(kEllipsoid, P, t, 1.0, numericOptions(1e-9));
    const auto ref = cg::shootGeodesicInDirectionUntilLengthReached(kEllipsoid, P, t, 1.0, numericOptions(1e-14));
    REQUIRE(g.ok());
    REQUIRE(ref.ok());
    CHECK(std::abs(g.turningAngle - ref.turningAngle) < 1e-8);
    double chords = 0;
    for (int i = 0; i + 1 < ref.numPoints(); ++i)
      chords += std::atan2(ref.tangents[i].cross(ref.tangents[i + 1]).norm(), ref.tangents[i].dot(ref.tangents[i + 1]));
    CHECK(std::abs(chords - std::abs(ref.turningAngle)) < 1e-3 * std::abs(ref.turningAngle));
  }
}

TEST_CASE("a shot started from the previous shot's hint rarely rejects a step") {
  // A path of starts 1 mm apart on the ellipsoid, each shot started from
  // the hint of the one before: the first step is the one the controller
  // chose there, so almost no step is thrown away.
  const Vec3 P0 = cg::findNearestPoint(kEllipsoid, Vec3(0.4, 0.2, 0.1)).point;
  const Vec3 d = Vec3(-0.6, 0.05, 0).normalized();
  auto opt = numericOptions(5e-9);
  int rejected = 0, taken = 0;
  for (int k = 0; k < 100; ++k) {
    const Vec3 P = cg::findNearestPoint(kEllipsoid, Vec3(P0 + Vec3(0, 1e-3 * k, -1e-3 * k))).point;
    const auto g = cg::shootGeodesicInDirectionUntilLengthReached(
        kEllipsoid, P, cg::frameFromNormalAndHint(cg::calcSurfaceUnitNormal(kEllipsoid, P), d).col(0), 0.6, opt);
    REQUIRE(g.ok());
    REQUIRE(g.initialStepSizeHint > 0);
    if (k > 0) {
      rejected += g.stepsRejected;
      taken += g.stepsTaken;
    }
    opt.initialStepSize = g.initialStepSizeHint;
  }
  MESSAGE("steps taken " << taken << ", rejected " << rejected);
  CHECK(rejected * 20 < taken);
}
