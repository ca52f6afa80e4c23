// capstan::geometry against Simbody's ContactGeometry (Debian libsimbody-dev
// 3.7) on the same inputs.
//
// Avoided because Debian's Simbody aborts on them (SimTK_ASSERT_ALWAYS):
// Torus intersectsRay / calcCurvature / calcSupportPoint, Brick
// findNearestPoint / intersectsRay. Known Simbody defects checked against
// analytic truth instead: Torus::findNearestPoint leaves `inside` and
// `normal` unset; Simbody's numeric shooting runs at a hard-coded integrator
// accuracy of 1e-6 (GeodesicOptions is an empty stub), so its geodesics are
// compared at that accuracy while ours are held to the closed forms at 1e-9.
// g++ 12 at -O2 reports a false -Warray-bounds inside Simbody's inlined
// Rotation accessors (Vec.h); it is not about this file's code.
#pragma GCC diagnostic ignored "-Warray-bounds"
#include "simbody_cxx20.hpp"  // <Simbody.h>; first: it clears NDEBUG

#include <capstan/geometry/geometry.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <random>

namespace cg = capstan::geometry;
using Vec2 = cg::Vec2<double>;
using Vec3 = cg::Vec3<double>;
using Mat33 = cg::Mat33<double>;

namespace {

constexpr double kAgree = 1e-9;                // relative: implicit-surface operations
constexpr double kSimbodyShootAccuracy = 1e-6; // Simbody's hard-coded IntegratorAccuracy
constexpr double kSimbodyShootTolerance = 50 * kSimbodyShootAccuracy;  // end points after length ~1
constexpr double kOursVsTruth = 1e-9;          // m: our shots vs closed forms

// In this test binary Simbody's length-terminated shots also stop at its
// hit-plane event, whose default plane is x = 0 (seen as geodesics ending on
// x = 0 short of their length; a standalone program does not show it). The
// plane is parked far away before every length shot.
void parkHitPlane(const SimTK::ContactGeometry& g) { g.setPlane(SimTK::Plane(SimTK::Vec3(1, 0, 0), 1e9)); }

SimTK::Vec3 sim(const Vec3& v) { return SimTK::Vec3(v.x(), v.y(), v.z()); }
Vec3 cap(const SimTK::Vec3& v) { return Vec3(v[0], v[1], v[2]); }
Mat33 cap(const SimTK::Rotation& R) {
  Mat33 m;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m(i, j) = R.asMat33()(i, j);
  return m;
}
SimTK::Rotation simRotation(const Mat33& m) {
  SimTK::Mat33 M;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) M(i, j) = m(i, j);
  return SimTK::Rotation(M, true);
}

bool near(double a, double b, double rel, double scale = 1.0) {
  return std::abs(a - b) <= rel * std::max({std::abs(a), std::abs(b), scale});
}
bool nearVec(const Vec3& a, const Vec3& b, double rel, double scale = 1.0) {
  return (a - b).norm() <= rel * std::max({a.norm(), b.norm(), scale});
}

Vec3 randomUnit(std::mt19937& rng) {
  std::normal_distribution<double> n(0, 1);
  return Vec3(n(rng), n(rng), n(rng)).normalized();
}

struct Pair {
  const char* name;
  double scale;
};

// Implicit-surface operations at points on and near the surface.
template <class Surface>
void compareImplicit(const Surface& ours, const SimTK::ContactGeometry& theirs, double scale, std::mt19937& rng) {
  std::uniform_real_distribution<double> off(-0.05, 0.05);
  for (int trial = 0; trial < 100; ++trial) {
    const Vec3 onSurface = cg::findNearestPoint(ours, scale * randomUnit(rng)).point;
    const Vec3 p = onSurface + scale * off(rng) * randomUnit(rng);
    const SimTK::Vec3 sp = sim(p);
    CHECK(near(ours.value(p), theirs.calcSurfaceValue(sp), kAgree));
    const Vec3 g = ours.gradient(p);
    CHECK(nearVec(g, cap(theirs.calcSurfaceGradient(sp)), kAgree));
    const Mat33 H = ours.hessian(p);
    const SimTK::Mat33 sH = theirs.calcSurfaceHessian(sp);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) CHECK(near(H(i, j), sH(i, j), kAgree, H.norm()));
    CHECK(nearVec(cg::calcSurfaceUnitNormal(ours, p), cap(theirs.calcSurfaceUnitNormal(sp).asVec3()), kAgree));
    const double K = cg::calcGaussianCurvature(ours, onSurface);
    CHECK(near(K, theirs.calcGaussianCurvature(sim(onSurface)), kAgree));
    const auto pc = cg::calcSurfacePrincipalCurvatures(ours, onSurface);
    SimTK::Vec2 sk;
    SimTK::Rotation sR;
    theirs.calcSurfacePrincipalCurvatures(sim(onSurface), sk, sR);
    CHECK(near(pc.k[0], sk[0], kAgree, std::abs(pc.k[0])));
    CHECK(near(pc.k[1], sk[1], kAgree, std::abs(pc.k[0])));
    if (pc.k[0] - pc.k[1] > 1e-6 * std::abs(pc.k[0])) {
      CHECK(std::abs(std::abs(pc.R_SP.col(0).dot(cap(sR).col(0))) - 1) < 1e-8);
    }
    const Vec3 t = pc.R_SP.col(0) * std::cos(0.3 * trial) + pc.R_SP.col(1) * std::sin(0.3 * trial);
    CHECK(near(cg::calcSurfaceCurvatureInDirection(ours, onSurface, t),
               theirs.calcSurfaceCurvatureInDirection(sim(onSurface), SimTK::UnitVec3(sim(t))), kAgree,
               std::abs(pc.k[0])));
    // Downhill projection from a nearby point.
    const Vec3 q = onSurface + 0.02 * scale * randomUnit(rng);
    CHECK(nearVec(cg::projectDownhillToNearestPoint(ours, q).point, cap(theirs.projectDownhillToNearestPoint(sim(q))),
                  kAgree));
  }
}

}  // namespace

TEST_CASE("implicit-surface operations agree with Simbody on sphere, cylinder, ellipsoid, torus") {
  std::mt19937 rng(41);
  compareImplicit(cg::Sphere<double>{0.7}, SimTK::ContactGeometry::Sphere(0.7), 0.7, rng);
  compareImplicit(cg::Cylinder<double>{0.4}, SimTK::ContactGeometry::Cylinder(0.4), 0.4, rng);
  compareImplicit(cg::Ellipsoid<double>{Vec3(0.5, 0.3, 0.2)},
                  SimTK::ContactGeometry::Ellipsoid(SimTK::Vec3(0.5, 0.3, 0.2)), 0.5, rng);
  compareImplicit(cg::Torus<double>{1.0, 0.3}, SimTK::ContactGeometry::Torus(1.0, 0.3), 1.3, rng);
}

TEST_CASE("nearest points, rays, support points, bounding spheres agree with Simbody") {
  std::mt19937 rng(42);
  const cg::Sphere<double> sphere{0.7};
  const SimTK::ContactGeometry::Sphere sSphere(0.7);
  const cg::Ellipsoid<double> ell{Vec3(0.5, 0.3, 0.2)};
  const SimTK::ContactGeometry::Ellipsoid sEll(SimTK::Vec3(0.5, 0.3, 0.2));
  const cg::Cylinder<double> cyl{0.4};
  const SimTK::ContactGeometry::Cylinder sCyl(0.4);
  const cg::Torus<double> torus{1.0, 0.3};
  const SimTK::ContactGeometry::Torus sTorus(1.0, 0.3);
  const cg::Brick<double> brick{Vec3(0.3, 0.2, 0.1)};
  const SimTK::ContactGeometry::Brick sBrick(SimTK::Vec3(0.3, 0.2, 0.1));
  const SimTK::ContactGeometry::HalfSpace sHalf;
  int ellipsoidDisagreements = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Vec3 q = 1.2 * randomUnit(rng) * (0.1 + trial / 200.0);
    bool inside;
    SimTK::UnitVec3 normal;
    const auto compare = [&](const auto& ours, const SimTK::ContactGeometry& theirs) {
      const auto np = cg::findNearestPoint(ours, q);
      const Vec3 sp = cap(theirs.findNearestPoint(sim(q), inside, normal));
      CHECK(nearVec(np.point, sp, kAgree));
      CHECK(np.inside == inside);
      CHECK(nearVec(np.normal, cap(normal.asVec3()), kAgree));
    };
    compare(sphere, sSphere);
    compare(cyl, sCyl);
    compare(cg::HalfSpace<double>{}, sHalf);
    // Ellipsoid: Simbody's answer is an approximation for points off the
    // surface; ours is never farther from q than Simbody's.
    const auto ne = cg::findNearestPoint(ell, q);
    const Vec3 se = cap(sEll.findNearestPoint(sim(q), inside, normal));
    CHECK(ne.inside == inside);
    CHECK((ne.point - q).norm() <= (se - q).norm() + 1e-12);
    if (!nearVec(ne.point, se, kAgree)) ++ellipsoidDisagreements;
    // Torus: Simbody returns the point only.
    CHECK(nearVec(cg::findNearestPoint(torus, q).point, cap(sTorus.findNearestPoint(sim(q), inside, normal)), kAgree));
    // Rays from outside towards the shape.
    const Vec3 o = 2.0 * randomUnit(rng);
    const Vec3 d = (0.2 * randomUnit(rng) - o).normalized();
    double dist;
    const auto compareRay = [&](const auto& ours, const SimTK::ContactGeometry& theirs) {
      const auto hit = cg::intersectsRay(ours, o, d);
      const bool sHit = theirs.intersectsRay(sim(o), SimTK::UnitVec3(sim(d)), dist, normal);
      CHECK(hit.has_value() == sHit);
      if (hit && sHit) {
        CHECK(near(hit->distance, dist, kAgree));
        CHECK(nearVec(hit->normal, cap(normal.asVec3()), kAgree));
      }
    };
    compareRay(sphere, sSphere);
    compareRay(ell, sEll);
    compareRay(cyl, sCyl);
    compareRay(cg::HalfSpace<double>{}, sHalf);
    const Vec3 dir = randomUnit(rng);
    CHECK(nearVec(cg::calcSupportPoint(sphere, dir), cap(sSphere.calcSupportPoint(SimTK::UnitVec3(sim(dir)))), kAgree));
    CHECK(nearVec(cg::calcSupportPoint(ell, dir), cap(sEll.calcSupportPoint(SimTK::UnitVec3(sim(dir)))), kAgree));
    CHECK(nearVec(cg::calcSupportPoint(brick, dir), cap(sBrick.calcSupportPoint(SimTK::UnitVec3(sim(dir)))), kAgree));
  }
  MESSAGE("ellipsoid nearest points differing from Simbody's by more than 1e-9: " << ellipsoidDisagreements << "/200");
  SimTK::Vec3 c;
  SimTK::Real r;
  sEll.getBoundingSphere(c, r);
  CHECK(cg::getBoundingSphere(ell).radius <= r + 1e-15);  // ours is never looser
  sTorus.getBoundingSphere(c, r);
  CHECK(near(cg::getBoundingSphere(torus).radius, r, kAgree));
  sSphere.getBoundingSphere(c, r);
  CHECK(near(cg::getBoundingSphere(sphere).radius, r, kAgree));
}

TEST_CASE("trackSeparationFromLine, combineParaboloids, evalParametricCurvature agree with Simbody") {
  std::mt19937 rng(43);
  const cg::Ellipsoid<double> ell{Vec3(0.5, 0.3, 0.2)};
  const SimTK::ContactGeometry::Ellipsoid sEll(SimTK::Vec3(0.5, 0.3, 0.2));
  int compared = 0;
  for (int trial = 0; trial < 30; ++trial) {
    const Vec3 P = cg::findNearestPoint(ell, randomUnit(rng)).point;
    const Vec3 n = cg::calcSurfaceUnitNormal(ell, P);
    const Vec3 l = cg::anyPerpendicular(n);
    const Vec3 A = P + 0.05 * n + 0.1 * l;  // a line just above P, tangent-ish
    const Vec3 guess = cg::findNearestPoint(ell, Vec3(P + 0.01 * randomUnit(rng))).point;
    const auto ours = cg::trackSeparationFromLine(ell, A, l, guess);
    SimTK::Vec3 sPoint, sLine;
    SimTK::Real sHeight;
    const bool sOk = sEll.trackSeparationFromLine(sim(A), SimTK::UnitVec3(sim(l)), sim(guess), sPoint, sLine, sHeight);
    if (!sOk || !ours.converged) continue;
    ++compared;
    CHECK(nearVec(ours.pointOnSurface, cap(sPoint), 1e-8));
    CHECK(nearVec(ours.pointOnLine, cap(sLine), 1e-8));
    CHECK(near(ours.height, sHeight, 1e-8));
  }
  MESSAGE("trackSeparationFromLine: " << compared << "/30 trials converged for both and were compared");
  CHECK(compared >= 20);  // 30/30 at this seed
  std::uniform_real_distribution<double> ku(0.1, 5), ang(0, 6.28);
  for (int trial = 0; trial < 50; ++trial) {
    const Mat33 R1 = cg::frameFromNormalAndHint(randomUnit(rng), randomUnit(rng));
    Vec2 k1(ku(rng), ku(rng)), k2(ku(rng), ku(rng));
    if (k1[0] < k1[1]) std::swap(k1[0], k1[1]);
    if (k2[0] < k2[1]) std::swap(k2[0], k2[1]);
    const double w = ang(rng);
    const Vec3 x2 = std::cos(w) * R1.col(0) + std::sin(w) * R1.col(1);
    SimTK::Rotation sR;
    SimTK::Vec2 sk, skFast;
    SimTK::ContactGeometry::combineParaboloids(simRotation(R1), SimTK::Vec2(k1[0], k1[1]), SimTK::UnitVec3(sim(x2)),
                                               SimTK::Vec2(k2[0], k2[1]), sR, sk);
    SimTK::ContactGeometry::combineParaboloids(simRotation(R1), SimTK::Vec2(k1[0], k1[1]), SimTK::UnitVec3(sim(x2)),
                                               SimTK::Vec2(k2[0], k2[1]), skFast);
    const auto ours = cg::combineParaboloids(R1, k1, x2, k2);
    const Vec2 fast = cg::combineParaboloidCurvatures(R1, k1, x2, k2);
    CHECK(near(ours.k[0], sk[0], kAgree));
    CHECK(near(ours.k[1], sk[1], kAgree, ours.k[0]));
    CHECK(near(fast[0], skFast[0], kAgree));
    CHECK(near(fast[1], skFast[1], kAgree, fast[0]));
    if (ours.k[0] - ours.k[1] > 1e-6) CHECK(std::abs(std::abs(ours.R_SP.col(0).dot(cap(sR).col(0))) - 1) < 1e-9);
  }
  // Ellipsoid parameterization by longitude u and latitude v.
  const Vec3 r(0.5, 0.3, 0.2);
  for (double u = 0.2; u < 6; u += 0.7) {
    for (double v = -1.2; v < 1.3; v += 0.5) {
      const Vec3 p(r.x() * std::cos(v) * std::cos(u), r.y() * std::cos(v) * std::sin(u), r.z() * std::sin(v));
      const Vec3 pu(-r.x() * std::cos(v) * std::sin(u), r.y() * std::cos(v) * std::cos(u), 0);
      const Vec3 pv(-r.x() * std::sin(v) * std::cos(u), -r.y() * std::sin(v) * std::sin(u), r.z() * std::cos(v));
      const Vec3 puu(-r.x() * std::cos(v) * std::cos(u), -r.y() * std::cos(v) * std::sin(u), 0);
      const Vec3 pvv(-r.x() * std::cos(v) * std::cos(u), -r.y() * std::cos(v) * std::sin(u), -r.z() * std::sin(v));
      const Vec3 puv(r.x() * std::sin(v) * std::sin(u), -r.y() * std::sin(v) * std::cos(u), 0);
      const Vec3 nn = cg::calcSurfaceUnitNormal(ell, p);
      SimTK::Transform X;
      const SimTK::Vec2 sk = SimTK::ContactGeometry::evalParametricCurvature(
          sim(p), SimTK::UnitVec3(sim(nn)), sim(pu), sim(pv), sim(puu), sim(pvv), sim(puv), X);
      const auto ours = cg::evalParametricCurvature(p, nn, pu, pv, puu, pvv, puv);
      CHECK(near(ours.k[0], sk[0], kAgree));
      CHECK(near(ours.k[1], sk[1], kAgree));
    }
  }
}

TEST_CASE("geodesic shooting: Simbody within its own accuracy, ours at the closed forms") {
  std::mt19937 rng(44);
  cg::GeodesicOptions<double> numeric;
  numeric.preferAnalytic = false;
  numeric.accuracy = 1e-12;
  SimTK::GeodesicOptions sOpt;
  double worstSimbodySphere = 0, worstOursSphere = 0;
  const auto shootBoth = [&](const auto& ours, const SimTK::ContactGeometry& theirs, double scale, double L,
                             double& worstSimbodyVsOurs) {
    for (int trial = 0; trial < 10; ++trial) {
      const Vec3 P = cg::findNearestPoint(ours, scale * randomUnit(rng)).point;
      const Vec3 t = cg::frameFromNormalAndHint(cg::calcSurfaceUnitNormal(ours, P), randomUnit(rng)).col(0);
      const auto g = cg::shootGeodesicInDirectionUntilLengthReached(ours, P, t, L, numeric);
      REQUIRE(g.ok());
      SimTK::Geodesic sg;
      parkHitPlane(theirs);
      theirs.shootGeodesicInDirectionUntilLengthReached(sim(P), SimTK::UnitVec3(sim(t)), L, sOpt, sg);
      const double d = (g.pointQ() - cap(sg.getPointQ())).norm();
      worstSimbodyVsOurs = std::max(worstSimbodyVsOurs, d);
      CHECK(d < kSimbodyShootTolerance);
      CHECK(near(g.length(), sg.getLength(), kAgree));
      CHECK(std::abs(g.jacobiQ() - sg.getJacobiQ()) < kSimbodyShootTolerance * std::max(1.0, std::abs(g.jacobiQ())));
      CHECK(g.tangentQ().dot(cap(sg.getTangentQ().asVec3())) > 1 - kSimbodyShootTolerance);
      CHECK(g.binormalQ().dot(cap(sg.getBinormalQ().asVec3())) > 1 - kSimbodyShootTolerance);
    }
  };
  // Sphere: both against the great circle.
  const cg::Sphere<double> sphere{0.7};
  const SimTK::ContactGeometry::Sphere sSphere(0.7);
  for (int trial = 0; trial < 10; ++trial) {
    const Vec3 P = 0.7 * randomUnit(rng);
    const Vec3 t = cg::anyPerpendicular(Vec3(P / 0.7));
    const double L = 1.0;
    const Vec3 truth = std::cos(L / 0.7) * P + 0.7 * std::sin(L / 0.7) * t;
    const auto g = cg::shootGeodesicInDirectionUntilLengthReached(sphere, P, t, L, numeric);
    SimTK::Geodesic sg;
    parkHitPlane(sSphere);
    sSphere.shootGeodesicInDirectionUntilLengthReached(sim(P), SimTK::UnitVec3(sim(t)), L, sOpt, sg);
    worstOursSphere = std::max(worstOursSphere, (g.pointQ() - truth).norm());
    worstSimbodySphere = std::max(worstSimbodySphere, (cap(sg.getPointQ()) - truth).norm());
    CHECK((g.pointQ() - truth).norm() < kOursVsTruth);
    CHECK((cap(sg.getPointQ()) - truth).norm() < kSimbodyShootTolerance);
    CHECK(std::abs(g.jacobiQ() - 0.7 * std::sin(L / 0.7)) < kOursVsTruth);
  }
  MESSAGE("sphere, L = 1: ours vs great circle " << worstOursSphere << " m, Simbody vs great circle "
                                                  << worstSimbodySphere << " m");
  double worst = 0;
  shootBoth(cg::Cylinder<double>{0.4}, SimTK::ContactGeometry::Cylinder(0.4), 0.4, 1.0, worst);
  MESSAGE("cylinder: |ours - Simbody| <= " << worst);
  worst = 0;
  shootBoth(cg::Ellipsoid<double>{Vec3(0.5, 0.3, 0.2)}, SimTK::ContactGeometry::Ellipsoid(SimTK::Vec3(0.5, 0.3, 0.2)),
            0.5, 1.0, worst);
  MESSAGE("ellipsoid: |ours - Simbody| <= " << worst);
  worst = 0;
  shootBoth(cg::Torus<double>{1.0, 0.3}, SimTK::ContactGeometry::Torus(1.0, 0.3), 1.3, 1.0, worst);
  MESSAGE("torus: |ours - Simbody| <= " << worst);
}

TEST_CASE("point-to-point geodesics on the ellipsoid agree with Simbody's orthogonal method") {
  std::mt19937 rng(45);
  const cg::Ellipsoid<double> ell{Vec3(0.5, 0.3, 0.2)};
  const SimTK::ContactGeometry::Ellipsoid sEll(SimTK::Vec3(0.5, 0.3, 0.2));
  int compared = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const Vec3 P = cg::findNearestPoint(ell, randomUnit(rng)).point;
    const Vec3 Q = cg::findNearestPoint(ell, Vec3(P + 0.3 * randomUnit(rng))).point;
    const auto ours = cg::calcGeodesicUsingOrthogonalMethod(ell, P, Q);
    SimTK::Geodesic sg;
    parkHitPlane(sEll);
    sEll.calcGeodesicUsingOrthogonalMethod(sim(P), sim(Q), sg);
    const bool sConverged = (cap(sg.getPointQ()) - Q).norm() < 1e-6;
    if (!ours.ok() || !sConverged) continue;
    ++compared;
    CHECK(std::abs(ours.length() - sg.getLength()) < kSimbodyShootTolerance);
    CHECK(ours.tangentP().dot(cap(sg.getTangentP().asVec3())) > 1 - kSimbodyShootTolerance);
  }
  CHECK(compared >= 10);
}
