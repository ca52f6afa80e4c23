// Point-to-point geodesics: analytic lengths, agreement of the two methods,
// warm starts, and robustness (random pairs, antipodes, coincident points,
// points off the surface): a correct geodesic or an explicit status, never NaN.
#include <capstan/geometry/geometry.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <random>

namespace cg = capstan::geometry;
using Vec3 = cg::Vec3<double>;

namespace {

constexpr double kPointTolerance = 1e-9;   // m, GeodesicOptions default
constexpr double kLengthTolerance = 1e-8;  // m, analytic lengths (ends within kPointTolerance)
constexpr double kPi = std::numbers::pi;

Vec3 randomUnit(std::mt19937& rng) {
  std::normal_distribution<double> n(0, 1);
  return Vec3(n(rng), n(rng), n(rng)).normalized();
}

template <class Surface> Vec3 randomSurfacePoint(const Surface& s, std::mt19937& rng, double scale) {
  return cg::findNearestPoint(s, scale * randomUnit(rng)).point;
}

const cg::Sphere<double> kSphere{0.7};
const cg::Cylinder<double> kCylinder{0.4};
const cg::Ellipsoid<double> kEllipsoid{Vec3(0.5, 0.3, 0.2)};
const cg::Torus<double> kTorus{1.0, 0.3};

cg::GeodesicOptions<double> numeric() {
  cg::GeodesicOptions<double> o;
  o.preferAnalytic = false;
  return o;
}

// A returned geodesic is sound: finite everywhere; if Ok, it joins P and Q.
template <class Surface> void checkSound(const Surface& s, const cg::Geodesic<double>& g, const Vec3& P, const Vec3& Q) {
  CHECK(std::isfinite(g.residual));
  for (int i = 0; i < g.numPoints(); ++i) {
    CHECK(g.points[i].allFinite());
    CHECK(g.tangents[i].allFinite());
    CHECK(std::abs(s.value(g.points[i])) < 1e-9);
  }
  if (!g.ok()) return;
  REQUIRE(g.numPoints() >= 2);
  CHECK((g.pointP() - P).norm() < kPointTolerance);
  CHECK((g.pointQ() - Q).norm() < 2 * kPointTolerance);
  CHECK(g.length() >= (Q - P).norm() - kPointTolerance);  // never shorter than the chord
}

}  // namespace

TEST_CASE("sphere: point-to-point lengths are great-circle arcs (closed form and numeric)") {
  std::mt19937 rng(31);
  const double r = kSphere.radius;
  int okAnalytic = 0, okNumeric = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const Vec3 P = randomSurfacePoint(kSphere, rng, 1.0), Q = randomSurfacePoint(kSphere, rng, 1.0);
    const double arc = r * std::acos(std::clamp(P.dot(Q) / (r * r), -1.0, 1.0));
    if (arc > 0.9 * kPi * r) continue;  // antipodes are tested separately
    const auto a = cg::initGeodesic(kSphere, P, Q);
    const auto n = cg::initGeodesic(kSphere, P, Q, std::nullopt, numeric());
    checkSound(kSphere, a, P, Q);
    checkSound(kSphere, n, P, Q);
    if (a.ok()) {
      ++okAnalytic;
      CHECK(std::abs(a.length() - arc) < kLengthTolerance);
    }
    if (n.ok()) {
      ++okNumeric;
      CHECK(std::abs(n.length() - arc) < kLengthTolerance);
    }
  }
  CHECK(okAnalytic >= 50);
  CHECK(okNumeric >= 50);
}

TEST_CASE("cylinder: point-to-point lengths are unrolled straight lines") {
  std::mt19937 rng(32);
  std::uniform_real_distribution<double> ang(-2.5, 2.5), dz(-1, 1);
  const double r = kCylinder.radius;
  for (int trial = 0; trial < 40; ++trial) {
    const double phi = ang(rng), z = dz(rng);
    const Vec3 P(r, 0, 0), Q(r * std::cos(phi), r * std::sin(phi), z);
    const double truth = std::hypot(r * phi, z);
    for (const auto& opt : {cg::GeodesicOptions<double>{}, numeric()}) {
      const auto g = cg::initGeodesic(kCylinder, P, Q, std::nullopt, opt);
      checkSound(kCylinder, g, P, Q);
      REQUIRE(g.ok());
      CHECK(std::abs(g.length() - truth) < kLengthTolerance);
    }
  }
}

TEST_CASE("ellipsoid and torus: split and orthogonal methods agree") {
  std::mt19937 rng(33);
  const auto run = [&](const auto& s, double scale, double maxChord) {
    int agreed = 0, tried = 0;
    for (int trial = 0; trial < 30; ++trial) {
      const Vec3 P = randomSurfacePoint(s, rng, scale), Q = randomSurfacePoint(s, rng, scale);
      if ((Q - P).norm() > maxChord) continue;
      ++tried;
      const auto ortho = cg::calcGeodesicUsingOrthogonalMethod(s, P, Q);
      const auto split = cg::calcGeodesic(s, P, Q, Vec3(Q - P), Vec3(Q - P));
      checkSound(s, ortho, P, Q);
      checkSound(s, split, P, Q);
      if (ortho.ok() && split.ok() && std::abs(ortho.length() - split.length()) < kLengthTolerance &&
          ortho.tangentP().dot(split.tangentP()) > 1 - 1e-8)
        ++agreed;
    }
    CHECK(agreed >= tried * 8 / 10);
  };
  run(kEllipsoid, 0.5, 0.4);
  run(kTorus, 1.3, 0.8);
}

TEST_CASE("the straight-line test's curvature scale is the largest principal curvature") {
  // From the shape operator's invariants: the same as the eigenvalues, on
  // convex (ellipsoid) and saddle (torus, inner side) points.
  std::mt19937 rng(41);
  const auto check = [](const auto& s, const Vec3& p) {
    const auto pc = cg::calcSurfacePrincipalCurvatures(s, p);
    const double expected = std::max(std::abs(pc.k[0]), std::abs(pc.k[1]));
    CHECK(std::abs(cg::detail::maxAbsCurvature(s, p) - expected) < 1e-12 * (1 + expected));
  };
  for (int i = 0; i < 50; ++i) {
    check(kEllipsoid, randomSurfacePoint(kEllipsoid, rng, 1.0));
    check(kTorus, randomSurfacePoint(kTorus, rng, 1.2));
  }
  check(kTorus, Vec3(0.7, 0, 0));  // innermost circle: k = -1/0.3 across, 1/0.7 along
  check(kSphere, Vec3(0, 0.7, 0));  // umbilic: both equal
}

TEST_CASE("calcSplitGeodError vanishes at a geodesic and grows with a kink") {
  const Vec3 P = cg::findNearestPoint(kEllipsoid, Vec3(0.4, 0.2, 0.1)).point;
  const Vec3 Q = cg::findNearestPoint(kEllipsoid, Vec3(-0.2, 0.25, 0.1)).point;
  const auto g = cg::initGeodesic(kEllipsoid, P, Q);
  REQUIRE(g.ok());
  const auto match = cg::calcSplitGeodError(kEllipsoid, P, Q, g.tangentP(), Vec3(-g.tangentQ()));
  REQUIRE(match.ok());
  CHECK(match.error.norm() < 1e-8);
  CHECK(std::abs(match.fromP.length() + match.fromQ.length() - g.length()) < kLengthTolerance);
  const Vec3 nP = cg::calcSurfaceUnitNormal(kEllipsoid, P);
  const Vec3 kinked = std::cos(0.01) * g.tangentP() + std::sin(0.01) * g.tangentP().cross(nP);
  const auto off = cg::calcSplitGeodError(kEllipsoid, P, Q, kinked, Vec3(-g.tangentQ()));
  REQUIRE(off.ok());
  CHECK(std::abs(off.error.x()) > 1e-4);
  CHECK(std::abs(off.error.y()) > 1e-4);
}

TEST_CASE("the near point selects which geodesic is found") {
  // Around the cylinder both ways: the near point picks the long way.
  const double r = kCylinder.radius;
  const Vec3 P(r, 0, 0), Q(r * std::cos(1.0), r * std::sin(1.0), 0.1);
  const auto shortWay = cg::initGeodesic(kCylinder, P, Q, std::nullopt, numeric());
  const Vec3 S(r * std::cos(-2.0), r * std::sin(-2.0), 0.03);  // on the long way round
  const auto longWay = cg::initGeodesic(kCylinder, P, Q, S, numeric());
  REQUIRE(shortWay.ok());
  REQUIRE(longWay.ok());
  CHECK(std::abs(shortWay.length() - std::hypot(r * 1.0, 0.1)) < kLengthTolerance);
  CHECK(std::abs(longWay.length() - std::hypot(r * (2 * kPi - 1.0), 0.1)) < kLengthTolerance);
}

TEST_CASE("robustness: hundreds of random pairs on each surface") {
  std::mt19937 rng(34);
  const auto run = [&](const auto& s, double scale, const cg::GeodesicOptions<double>& opt) {
    int ok = 0;
    constexpr int kPairs = 150;
    for (int trial = 0; trial < kPairs; ++trial) {
      const Vec3 P = randomSurfacePoint(s, rng, scale), Q = randomSurfacePoint(s, rng, scale);
      const auto g = cg::initGeodesic(s, P, Q, std::nullopt, opt);
      checkSound(s, g, P, Q);
      if (g.ok()) ++ok;
      else CHECK(g.status != cg::GeodesicStatus::Ok);
    }
    return ok;
  };
  // All 750 succeed today; a few explicit failures would still be acceptable.
  constexpr int kMinOk = 145;
  CHECK(run(kSphere, 1.0, cg::GeodesicOptions<double>{}) >= kMinOk);
  CHECK(run(kSphere, 1.0, numeric()) >= kMinOk);
  CHECK(run(kCylinder, 1.0, numeric()) >= kMinOk);
  CHECK(run(kEllipsoid, 0.5, cg::GeodesicOptions<double>{}) >= kMinOk);
  CHECK(run(kTorus, 1.3, cg::GeodesicOptions<double>{}) >= kMinOk);
}

TEST_CASE("robustness: antipodes, coincident points, points off the surface") {
  const double r = kSphere.radius;
  // Exact antipodes: every great circle is a geodesic; near antipodes: Q is
  // almost conjugate to P. Either a correct half circle or an explicit status.
  for (const double offset : {0.0, 1e-12, 1e-8, 1e-4, 1e-2}) {
    const Vec3 P(r, 0, 0);
    const Vec3 Q = cg::findNearestPoint(kSphere, Vec3(-r, offset, 0.3 * offset)).point;
    const double arc = r * std::acos(std::clamp(P.dot(Q) / (r * r), -1.0, 1.0));
    for (const auto& opt : {cg::GeodesicOptions<double>{}, numeric()}) {
      const auto g = cg::initGeodesic(kSphere, P, Q, std::nullopt, opt);
      checkSound(kSphere, g, P, Q);
      if (g.ok()) CHECK(std::abs(g.length() - arc) < 1e-7);
    }
  }
  // Almost coincident points: a straight line of the chord's length.
  const Vec3 P = cg::findNearestPoint(kEllipsoid, Vec3(0.3, 0.2, 0.1)).point;
  for (const double d : {0.0, 1e-15, 1e-12, 1e-9, 1e-7}) {
    const Vec3 Q = cg::findNearestPoint(kEllipsoid, Vec3(P + Vec3(d, -d, 0))).point;
    const auto g = cg::initGeodesic(kEllipsoid, P, Q);
    checkSound(kEllipsoid, g, P, Q);
    REQUIRE(g.ok());
    CHECK(g.isStraightLine);
    CHECK(std::abs(g.length() - (Q - P).norm()) < 1e-14);
  }
  // Points slightly off the surface are projected downhill first.
  const Vec3 A = cg::findNearestPoint(kTorus, Vec3(1.2, 0.3, 0.2)).point;
  const Vec3 B = cg::findNearestPoint(kTorus, Vec3(0.6, 0.9, -0.1)).point;
  const Vec3 nA = cg::calcSurfaceUnitNormal(kTorus, A);
  const auto off = cg::initGeodesic(kTorus, Vec3(A + 1e-4 * nA), B);
  const auto on = cg::initGeodesic(kTorus, A, B);
  REQUIRE(off.ok());
  REQUIRE(on.ok());
  CHECK((off.pointP() - A).norm() < 1e-12);
  CHECK(std::abs(off.length() - on.length()) < kLengthTolerance);
  // Non-finite input.
  CHECK(cg::initGeodesic(kTorus, Vec3(std::nan(""), 0, 0), B).status == cg::GeodesicStatus::InvalidInput);
  // A solver that is not allowed to converge says so, with its residual.
  auto one = numeric();
  one.maxIterations = 1;
  const auto capped = cg::calcGeodesicUsingOrthogonalMethod(kEllipsoid, Vec3(0.5, 0, 0), Vec3(0, 0.3, 0), Vec3(0, 1, 0), 0.1, one);
  CHECK(capped.status == cg::GeodesicStatus::NotConverged);
  CHECK(capped.residual > kPointTolerance);
  CHECK(std::isfinite(capped.residual));
  CHECK(capped.iterations >= 1);
}

TEST_CASE("continueGeodesic reports a failed warm start that leaves no points") {
  const Vec3 P0 = cg::findNearestPoint(kEllipsoid, Vec3(0.4, 0.2, 0.1)).point;
  const Vec3 Q0 = cg::findNearestPoint(kEllipsoid, Vec3(-0.2, 0.25, 0.1)).point;
  const auto prev = cg::initGeodesic(kEllipsoid, P0, Q0);
  REQUIRE(prev.ok());
  REQUIRE(!prev.isStraightLine);
  // One integrator step per shot: every shot fails, and so does the cold
  // fallback, whose curve is then empty. The jump flags used to read its
  // (nonexistent) first tangent.
  auto starved = cg::GeodesicOptions<double>{};
  starved.maxSteps = 1;
  const Vec3 P = cg::findNearestPoint(kEllipsoid, Vec3(P0 + Vec3(0, 0.01, -0.01))).point;
  const Vec3 Q = cg::findNearestPoint(kEllipsoid, Vec3(Q0 + Vec3(0.01, 0, 0.01))).point;
  const auto next = cg::continueGeodesic(kEllipsoid, P, Q, prev, starved);
  CHECK_FALSE(next.ok());
  CHECK(next.status != cg::GeodesicStatus::Ok);
  CHECK(next.numPoints() == 0);
  CHECK(!next.lengthJumped);
  CHECK(!next.flipped);
}

TEST_CASE("continueGeodesic tracks moving ends with a few shots and flags jumps") {
  const Vec3 P0 = cg::findNearestPoint(kEllipsoid, Vec3(0.4, 0.2, 0.1)).point;
  const Vec3 Q0 = cg::findNearestPoint(kEllipsoid, Vec3(-0.2, 0.25, 0.1)).point;
  auto g = cg::initGeodesic(kEllipsoid, P0, Q0);
  REQUIRE(g.ok());
  int totalShots = 0;
  constexpr int kSteps = 50;
  for (int k = 1; k <= kSteps; ++k) {
    const double a = 0.004 * k;
    const Vec3 P = cg::findNearestPoint(kEllipsoid, Vec3(P0 + Vec3(0, a, -a))).point;
    const Vec3 Q = cg::findNearestPoint(kEllipsoid, Vec3(Q0 + Vec3(a, 0, a))).point;
    const auto next = cg::continueGeodesic(kEllipsoid, P, Q, g);
    checkSound(kEllipsoid, next, P, Q);
    REQUIRE(next.ok());
    CHECK(!next.lengthJumped);
    CHECK(!next.flipped);
    const auto cold = cg::initGeodesic(kEllipsoid, P, Q);
    REQUIRE(cold.ok());
    CHECK(std::abs(cold.length() - next.length()) < kLengthTolerance);
    totalShots += next.shots;
    g = next;
  }
  CHECK(totalShots <= 3 * kSteps);
  // At a looser tolerance the second-order continuation makes most updates a
  // single shot.
  auto loose = cg::GeodesicOptions<double>{};
  loose.pointTolerance = 1e-7;
  auto h = cg::initGeodesic(kEllipsoid, P0, Q0, std::nullopt, loose);
  int looseShots = 0;
  constexpr int kLooseSteps = 200;
  for (int k = 1; k <= kLooseSteps; ++k) {
    const double a = 0.001 * k;  // ~1.4 mm per step
    h = cg::continueGeodesic(kEllipsoid, cg::findNearestPoint(kEllipsoid, Vec3(P0 + Vec3(0, a, -a))).point,
                             cg::findNearestPoint(kEllipsoid, Vec3(Q0 + Vec3(a, 0, a))).point, h, loose);
    REQUIRE(h.ok());
    looseShots += h.shots;
  }
  CHECK(looseShots <= kLooseSteps * 3 / 2);
  // A previous geodesic that is far from the new ends: the solution found is
  // the other way round the cylinder, which the length jump reveals.
  const double r = kCylinder.radius;
  auto around = cg::initGeodesic(kCylinder, Vec3(r, 0, 0), Vec3(r * std::cos(3.0), r * std::sin(3.0), 0), std::nullopt, numeric());
  REQUIRE(around.ok());
  const auto jumped = cg::continueGeodesic(kCylinder, Vec3(r, 0, 0), Vec3(r * std::cos(3.3), r * std::sin(3.3), 0), around, numeric());
  REQUIRE(jumped.ok());
  if (std::abs(jumped.length() - around.length()) > 0.3 * r) CHECK(jumped.lengthJumped);
  // Straight-line geodesics flip when the ends pass each other.
  const Vec3 S = cg::findNearestPoint(kEllipsoid, Vec3(0.1, 0.1, 0.3)).point;
  const Vec3 n = cg::calcSurfaceUnitNormal(kEllipsoid, S);
  const Vec3 e = cg::anyPerpendicular(n);
  const auto line = cg::initGeodesic(kEllipsoid, S, cg::findNearestPoint(kEllipsoid, Vec3(S + 1e-8 * e)).point);
  REQUIRE(line.isStraightLine);
  const auto swapped = cg::continueGeodesic(kEllipsoid, S, cg::findNearestPoint(kEllipsoid, Vec3(S - 1e-8 * e)).point, line);
  REQUIRE(swapped.ok());
  CHECK(swapped.flipped);
}
