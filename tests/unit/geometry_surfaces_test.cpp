// Implicit surfaces and their queries against closed forms, finite
// differences and brute-force sampling.
#include <capstan/geometry/implicit_ops.hpp>
#include <capstan/geometry/surface_queries.hpp>
#include <capstan/geometry/surfaces.hpp>

#include <doctest/doctest.h>

#include <Eigen/Eigenvalues>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <utility>

namespace cg = capstan::geometry;
using Vec2 = cg::Vec2<double>;
using Vec3 = cg::Vec3<double>;
using Mat33 = cg::Mat33<double>;

namespace {

constexpr double kRoundoff = 1e-12;      // relative, closed-form vs closed-form
constexpr double kFiniteDiff = 1e-6;     // relative, central differences with step 1e-5
constexpr double kSolver = 1e-10;        // m, iterative solvers
constexpr double kPi = std::numbers::pi;

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

const cg::Sphere<double> kSphere{0.7};
const cg::Cylinder<double> kCylinder{0.4};
const cg::Ellipsoid<double> kEllipsoid{Vec3(0.5, 0.3, 0.2)};
const cg::Torus<double> kTorus{1.0, 0.3};

// Torus point from angles (u around z, v around the tube).
Vec3 torusPoint(double u, double v) {
  const double w = kTorus.torusRadius + kTorus.tubeRadius * std::cos(v);
  return Vec3(w * std::cos(u), w * std::sin(u), kTorus.tubeRadius * std::sin(v));
}
Vec3 ellipsoidPoint(double u, double v) {  // u longitude, v latitude
  const Vec3& r = kEllipsoid.radii;
  return Vec3(r.x() * std::cos(v) * std::cos(u), r.y() * std::cos(v) * std::sin(u), r.z() * std::sin(v));
}

template <class Surface> void checkDerivatives(const Surface& s, std::mt19937& rng, double scale) {
  std::uniform_real_distribution<double> u(-1.5 * scale, 1.5 * scale);
  constexpr double h = 1e-5;
  for (int trial = 0; trial < 50; ++trial) {
    const Vec3 p(u(rng), u(rng), u(rng));
    const Vec3 g = s.gradient(p);
    const Mat33 H = s.hessian(p);
    for (int i = 0; i < 3; ++i) {
      Vec3 dp = Vec3::Zero();
      dp[i] = h * scale;
      const double fd = (s.value(p + dp) - s.value(p - dp)) / (2 * dp[i]);
      CHECK(near(g[i], fd, kFiniteDiff, g.norm()));
      const Vec3 hd = (s.gradient(p + dp) - s.gradient(p - dp)) / (2 * dp[i]);
      CHECK(nearVec(H.col(i), hd, kFiniteDiff, H.norm()));
    }
    CHECK((H - H.transpose()).norm() <= kRoundoff * H.norm());
  }
}

}  // namespace

TEST_CASE("implicit functions: sign convention and derivatives by finite differences") {
  std::mt19937 rng(1);
  CHECK(kSphere.value(Vec3::Zero()) > 0);
  CHECK(kSphere.value(Vec3(1, 0, 0)) < 0);
  CHECK(std::abs(kSphere.value(Vec3(0, 0.7, 0))) < kRoundoff);
  CHECK(kTorus.value(Vec3(1.0, 0, 0)) > 0);
  CHECK(kTorus.value(Vec3::UnitZ() * 0.1) < 0);
  CHECK(cg::HalfSpace<double>{}.value(Vec3(1, 0, 0)) > 0);
  CHECK(cg::Brick<double>{Vec3(1, 2, 3)}.value(Vec3(0.5, 0, 0)) > 0);
  CHECK(cg::Brick<double>{Vec3(1, 2, 3)}.value(Vec3(1.5, 0, 0)) < 0);
  checkDerivatives(kSphere, rng, 0.7);
  checkDerivatives(kCylinder, rng, 0.4);
  checkDerivatives(kEllipsoid, rng, 0.5);
  checkDerivatives(kTorus, rng, 1.0);
}

TEST_CASE("unit normal points outward and has a fallback at singular points") {
  const Vec3 p(0.3, -0.2, 0.5);
  CHECK(nearVec(cg::calcSurfaceUnitNormal(kSphere, p), p.normalized(), kRoundoff));
  const Vec3 onAxis(0, 0, 0.3);
  const Vec3 n = cg::calcSurfaceUnitNormal(kCylinder, onAxis);
  CHECK(n.allFinite());
  CHECK(std::abs(n.norm() - 1) < kRoundoff);
  CHECK(std::abs(n.z()) < kRoundoff);  // from a nearby non-singular point
  const Vec3 n0 = cg::calcSurfaceUnitNormal(kSphere, Vec3::Zero());
  CHECK(n0.allFinite());
  CHECK(std::abs(n0.norm() - 1) < kRoundoff);
  CHECK(nearVec(cg::calcSurfaceUnitNormal(cg::HalfSpace<double>{}, p), -Vec3::UnitX(), kRoundoff));
}

TEST_CASE("Gaussian curvature matches closed forms (Goldman's adjoint formula)") {
  CHECK(near(cg::calcGaussianCurvature(kSphere, Vec3(0, 0.7, 0)), 1 / (0.7 * 0.7), kRoundoff));
  CHECK(std::abs(cg::calcGaussianCurvature(kCylinder, Vec3(0.4, 0, 1))) < kRoundoff);
  const Vec3& r = kEllipsoid.radii;
  for (double u = 0.1; u < 2 * kPi; u += 0.7) {
    for (double v = -1.4; v < 1.5; v += 0.35) {
      const Vec3 p = ellipsoidPoint(u, v);
      const double q = p.cwiseQuotient(r.cwiseProduct(r)).squaredNorm();
      const double abc = r.prod();
      const double kClosed = 1 / (abc * abc * q * q);
      CHECK(near(cg::calcGaussianCurvature(kEllipsoid, p), kClosed, kRoundoff));
      const double R = kTorus.torusRadius, t = kTorus.tubeRadius;
      const double kTorusClosed = std::cos(v) / (t * (R + t * std::cos(v)));
      CHECK(near(cg::calcGaussianCurvature(kTorus, torusPoint(u, v)), kTorusClosed, kRoundoff, 1 / (t * R)));
    }
  }
}

TEST_CASE("principal curvatures and directions; curvature in a direction obeys Euler's formula") {
  // Sphere: umbilic.
  const auto ps = cg::calcSurfacePrincipalCurvatures(kSphere, Vec3(0, 0, 0.7));
  CHECK(near(ps.k[0], 1 / 0.7, kRoundoff));
  CHECK(near(ps.k[1], 1 / 0.7, kRoundoff));
  // Cylinder: 1/r around, 0 along the axis.
  const Vec3 pc(0, 0.4, 2.0);
  const auto pcyl = cg::calcSurfacePrincipalCurvatures(kCylinder, pc);
  CHECK(near(pcyl.k[0], 1 / 0.4, kRoundoff));
  CHECK(std::abs(pcyl.k[1]) < kRoundoff);
  CHECK(std::abs(std::abs(pcyl.R_SP.col(1).z()) - 1) < kRoundoff);
  CHECK(near(cg::calcSurfaceCurvatureInDirection(kCylinder, pc, Vec3::UnitX()), 1 / 0.4, kRoundoff));
  // Torus: 1/r across the tube, cos(v)/(R + r cos(v)) around the axis.
  const double R = kTorus.torusRadius, r = kTorus.tubeRadius;
  for (double v = -3.0; v < 3.1; v += 0.5) {
    const Vec3 p = torusPoint(0.4, v);
    const auto pt = cg::calcSurfacePrincipalCurvatures(kTorus, p);
    const double kTube = 1 / r, kAround = std::cos(v) / (R + r * std::cos(v));
    CHECK(near(pt.k[0], std::max(kTube, kAround), kRoundoff, 1 / r));
    CHECK(near(pt.k[1], std::min(kTube, kAround), kRoundoff, 1 / r));
    const Mat33 Rsp = pt.R_SP;
    CHECK((Rsp.transpose() * Rsp - Mat33::Identity()).norm() < kRoundoff);
    CHECK(std::abs(Rsp.determinant() - 1) < kRoundoff);
    // Euler: k(theta) = kmax cos^2 + kmin sin^2.
    for (double th = 0; th < kPi; th += 0.4) {
      const Vec3 t = std::cos(th) * Rsp.col(0) + std::sin(th) * Rsp.col(1);
      const double kEuler = pt.k[0] * std::cos(th) * std::cos(th) + pt.k[1] * std::sin(th) * std::sin(th);
      CHECK(near(cg::calcSurfaceCurvatureInDirection(kTorus, p, t), kEuler, kRoundoff, 1 / r));
    }
  }
  // Ellipsoid: implicit result vs the parametric (Struik) result and vs K.
  const Vec3& ra = kEllipsoid.radii;
  for (double u = 0.2; u < 6; u += 0.9) {
    for (double v = -1.2; v < 1.3; v += 0.4) {
      const Vec3 p = ellipsoidPoint(u, v);
      const Vec3 pu(-ra.x() * std::cos(v) * std::sin(u), ra.y() * std::cos(v) * std::cos(u), 0);
      const Vec3 pv(-ra.x() * std::sin(v) * std::cos(u), -ra.y() * std::sin(v) * std::sin(u), ra.z() * std::cos(v));
      const Vec3 puu(-ra.x() * std::cos(v) * std::cos(u), -ra.y() * std::cos(v) * std::sin(u), 0);
      const Vec3 pvv(-ra.x() * std::cos(v) * std::cos(u), -ra.y() * std::cos(v) * std::sin(u), -ra.z() * std::sin(v));
      const Vec3 puv(ra.x() * std::sin(v) * std::sin(u), -ra.y() * std::sin(v) * std::cos(u), 0);
      const Vec3 nn = cg::calcSurfaceUnitNormal(kEllipsoid, p);
      const auto par = cg::evalParametricCurvature(p, nn, pu, pv, puu, pvv, puv);
      const auto imp = cg::calcSurfacePrincipalCurvatures(kEllipsoid, p);
      CHECK(near(par.k[0], imp.k[0], 1e-10));
      CHECK(near(par.k[1], imp.k[1], 1e-10));
      CHECK(near(imp.k[0] * imp.k[1], cg::calcGaussianCurvature(kEllipsoid, p), 1e-10));
      if (imp.k[0] - imp.k[1] > 1e-3) {  // directions defined away from umbilics
        CHECK(std::abs(std::abs(par.R_SP.col(0).dot(imp.R_SP.col(0))) - 1) < 1e-8);
      }
      CHECK(near(cg::calcSurfaceCurvatureInDirection(kEllipsoid, p, imp.R_SP.col(0)), imp.k[0], 1e-10));
    }
  }
}

TEST_CASE("combineParaboloids adds the curvature tensors") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> ku(-1, 5), ang(0, 2 * kPi);
  for (int trial = 0; trial < 50; ++trial) {
    const Vec3 z = randomUnit(rng);
    const Mat33 R_SP1 = cg::frameFromNormalAndHint(z, randomUnit(rng));
    Vec2 k1(ku(rng), ku(rng)), k2(ku(rng), ku(rng));
    if (k1[0] < k1[1]) std::swap(k1[0], k1[1]);
    if (k2[0] < k2[1]) std::swap(k2[0], k2[1]);
    const double w = ang(rng);
    const Vec3 x2 = std::cos(w) * R_SP1.col(0) + std::sin(w) * R_SP1.col(1);
    const Vec3 y2 = z.cross(x2);
    // Independent truth: eigenvalues of the summed 3x3 tensors restricted to the plane.
    const Mat33 T = k1[0] * R_SP1.col(0) * R_SP1.col(0).transpose() + k1[1] * R_SP1.col(1) * R_SP1.col(1).transpose() +
                    k2[0] * x2 * x2.transpose() + k2[1] * y2 * y2.transpose();
    Eigen::Matrix2d T2;
    T2 << R_SP1.col(0).dot(T * R_SP1.col(0)), R_SP1.col(0).dot(T * R_SP1.col(1)),
        R_SP1.col(1).dot(T * R_SP1.col(0)), R_SP1.col(1).dot(T * R_SP1.col(1));
    const Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d> es(T2);
    const auto full = cg::combineParaboloids(R_SP1, k1, x2, k2);
    const Vec2 fast = cg::combineParaboloidCurvatures(R_SP1, k1, x2, k2);
    CHECK(near(full.k[0], es.eigenvalues()[1], kRoundoff, 5));
    CHECK(near(full.k[1], es.eigenvalues()[0], kRoundoff, 5));
    CHECK(nearVec(Vec3(fast.x(), fast.y(), 0), Vec3(full.k.x(), full.k.y(), 0), kRoundoff, 5));
    // The returned x axis is the kmax direction of T; z is unchanged.
    const Vec3 dmax = full.R_SP.col(0);
    CHECK(near(dmax.dot(T * dmax), full.k[0], 1e-10, 5));
    CHECK(nearVec(full.R_SP.col(2), z, kRoundoff));
    CHECK(std::abs(full.R_SP.determinant() - 1) < kRoundoff);
  }
}

TEST_CASE("findNearestPoint: on the surface, normal through the query point, globally nearest") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-0.8, 0.8);
  // Dense parametric samples of the ellipsoid for the global check.
  std::vector<Vec3> samples;
  for (int i = 0; i < 200; ++i)
    for (int j = 1; j < 100; ++j) samples.push_back(ellipsoidPoint(2 * kPi * i / 200.0, -kPi / 2 + kPi * j / 100.0));
  for (int trial = 0; trial < 200; ++trial) {
    const Vec3 q(u(rng), u(rng), u(rng));
    const auto np = cg::findNearestPoint(kEllipsoid, q);
    CHECK(std::abs(kEllipsoid.value(np.point)) < kRoundoff * 10);
    CHECK(np.inside == (kEllipsoid.value(q) >= 0));
    const Vec3 d = q - np.point;
    CHECK((d - np.normal * np.normal.dot(d)).norm() < kSolver);
    double best = 1e300;
    for (const Vec3& sp : samples) best = std::min(best, (sp - q).norm());
    CHECK(d.norm() <= best + 1e-12);
  }
  // Points on coordinate planes inside (the off-plane branch) and the centre.
  for (const Vec3& q : {Vec3(0.1, 0.05, 0), Vec3(0, 0, 0), Vec3(0.4, 0, 0), Vec3(0.05, 0, 0.01)}) {
    const auto np = cg::findNearestPoint(kEllipsoid, q);
    double best = 1e300;
    for (const Vec3& sp : samples) best = std::min(best, (sp - q).norm());
    CHECK((q - np.point).norm() <= best + 1e-12);
    CHECK(std::abs(kEllipsoid.value(np.point)) < kRoundoff * 10);
  }
  // Torus: nearest point lies on the tube around the nearest centre-circle point.
  for (int trial = 0; trial < 100; ++trial) {
    const Vec3 q(2 * u(rng), 2 * u(rng), u(rng));
    const auto np = cg::findNearestPoint(kTorus, q);
    CHECK(std::abs(kTorus.value(np.point)) < kRoundoff * 10);
    CHECK(np.inside == (kTorus.value(q) >= 0));
    CHECK(nearVec(np.normal, cg::calcSurfaceUnitNormal(kTorus, np.point), 1e-10));
  }
  const auto nb = cg::findNearestPoint(cg::Brick<double>{Vec3(1, 2, 3)}, Vec3(0.9, 0.1, -0.2));
  CHECK(nb.inside);
  CHECK(nearVec(nb.point, Vec3(1, 0.1, -0.2), kRoundoff));
  CHECK(nearVec(nb.normal, Vec3::UnitX(), kRoundoff));
  const auto nbo = cg::findNearestPoint(cg::Brick<double>{Vec3(1, 2, 3)}, Vec3(2, 3, 0));
  CHECK(!nbo.inside);
  CHECK(nearVec(nbo.point, Vec3(1, 2, 0), kRoundoff));
  const auto nh = cg::findNearestPoint(cg::HalfSpace<double>{}, Vec3(-2, 1, 3));
  CHECK(!nh.inside);
  CHECK(nearVec(nh.point, Vec3(0, 1, 3), kRoundoff));
  const auto nc = cg::findNearestPoint(kCylinder, Vec3(0.1, 0, 5));
  CHECK(nc.inside);
  CHECK(nearVec(nc.point, Vec3(0.4, 0, 5), kRoundoff));
}

TEST_CASE("intersectsRay hits the surface at the first crossing") {
  std::mt19937 rng(5);
  const auto check = [&](const auto& s, double scale) {
    int hits = 0;
    for (int trial = 0; trial < 200; ++trial) {
      const Vec3 o = 2.5 * scale * randomUnit(rng);
      const Vec3 target = 0.6 * scale * randomUnit(rng);
      const Vec3 d = (target - o).normalized();
      const auto hit = cg::intersectsRay(s, o, d);
      // Brute-force march for the first sign change of f.
      double first = -1;
      const int n = 20000;
      double prev = s.value(o);
      for (int i = 1; i <= n; ++i) {
        const double t = 5 * scale * i / n;
        const double v = s.value(o + t * d);
        if ((v >= 0) != (prev >= 0)) {
          first = t;
          break;
        }
        prev = v;
      }
      if (first < 0) {
        CHECK(!hit.has_value());
        continue;
      }
      REQUIRE(hit.has_value());
      ++hits;
      CHECK(std::abs(hit->distance - first) <= 5 * scale / n);
      const Vec3 p = o + hit->distance * d;
      CHECK(std::abs(s.value(p)) < 1e-9);
      CHECK(nearVec(hit->normal, cg::calcSurfaceUnitNormal(s, p), 1e-8));
    }
    CHECK(hits > 20);
  };
  check(kSphere, 0.7);
  check(kEllipsoid, 0.5);
  check(kTorus, 1.3);
  // From inside a sphere: the exit point.
  const auto exitHit = cg::intersectsRay(kSphere, Vec3::Zero(), Vec3::UnitY());
  REQUIRE(exitHit.has_value());
  CHECK(near(exitHit->distance, 0.7, kRoundoff));
  CHECK(!cg::intersectsRay(kCylinder, Vec3(0, 0, 0), Vec3::UnitZ()).has_value());
  const auto hc = cg::intersectsRay(kCylinder, Vec3(2, 0, 1), -Vec3::UnitX());
  REQUIRE(hc.has_value());
  CHECK(near(hc->distance, 1.6, kRoundoff));
  const auto hh = cg::intersectsRay(cg::HalfSpace<double>{}, Vec3(-1, 0, 0), Vec3(1, 1, 0).normalized());
  REQUIRE(hh.has_value());
  CHECK(near(hh->distance, std::sqrt(2.0), kRoundoff));
  const auto hb = cg::intersectsRay(cg::Brick<double>{Vec3(1, 2, 3)}, Vec3(-5, 0.5, 0.5), Vec3::UnitX());
  REQUIRE(hb.has_value());
  CHECK(near(hb->distance, 4, kRoundoff));
  CHECK(nearVec(hb->normal, -Vec3::UnitX(), kRoundoff));
}

TEST_CASE("support points maximize d.p and bounding spheres enclose the shapes") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    const Vec3 d = randomUnit(rng);
    const Vec3 se = cg::calcSupportPoint(kEllipsoid, d);
    const Vec3 st = cg::calcSupportPoint(kTorus, d);
    CHECK(std::abs(kEllipsoid.value(se)) < kRoundoff * 10);
    CHECK(std::abs(kTorus.value(st)) < kRoundoff * 10);
    for (int i = 0; i < 60; ++i) {
      for (int j = 0; j < 60; ++j) {
        const double a = 2 * kPi * i / 60, b = 2 * kPi * j / 60;
        CHECK(d.dot(ellipsoidPoint(a, b / 2 - kPi / 2)) <= d.dot(se) + kRoundoff);
        CHECK(d.dot(torusPoint(a, b)) <= d.dot(st) + kRoundoff);
        CHECK(torusPoint(a, b).norm() <= cg::getBoundingSphere(kTorus).radius + kRoundoff);
      }
    }
  }
  CHECK(nearVec(cg::calcSupportPoint(cg::Brick<double>{Vec3(1, 2, 3)}, Vec3(1, -1, 1).normalized()), Vec3(1, -2, 3),
                kRoundoff));
  CHECK(!cg::calcSupportPoint(kCylinder, Vec3(0, 0.6, 0.8)).has_value());
  CHECK(cg::calcSupportPoint(kCylinder, Vec3(0, 1, 0)).has_value());
  CHECK(!cg::getBoundingSphere(cg::HalfSpace<double>{}).has_value());
  CHECK(near(cg::getBoundingSphere(kEllipsoid).radius, 0.5, kRoundoff));
}

TEST_CASE("projectDownhillToNearestPoint converges locally and is exact on the surface") {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 100; ++trial) {
    const Vec3 p = cg::findNearestPoint(kTorus, 1.2 * randomUnit(rng)).point;
    const Vec3 q = p + 0.05 * randomUnit(rng);
    const auto pr = cg::projectDownhillToNearestPoint(kTorus, q);
    CHECK(pr.converged);
    CHECK(std::abs(kTorus.value(pr.point)) < 1e-12);
    const Vec3 n = cg::calcSurfaceUnitNormal(kTorus, pr.point);
    const Vec3 d = q - pr.point;
    CHECK((d - n * n.dot(d)).norm() < kSolver);
    CHECK(nearVec(pr.point, cg::findNearestPoint(kTorus, q).point, 1e-9));
  }
  const Vec3 on = Vec3(0.3, 0.2, 0.1).normalized() * 0.7;
  const auto same = cg::projectDownhillToNearestPoint(kSphere, on);
  CHECK(same.iterations == 0);
  CHECK(same.point == on);
}

TEST_CASE("trackSeparationFromLine finds the closest and the deepest point") {
  // Line parallel to y at height D above the sphere's centre along x.
  for (const double D : {1.5, 0.9, 0.3, -0.4}) {
    const Vec3 A(D, -3, 0.0);
    // The tracker is local: start on the side it should track.
    const double expectedX = D >= 0 ? 0.7 : -0.7;
    const Vec3 guess = Vec3(expectedX, 0.2, 0.3).normalized() * 0.7;
    const auto res = cg::trackSeparationFromLine(kSphere, A, Vec3::UnitY(), guess);
    CHECK(res.converged);
    CHECK(nearVec(res.pointOnSurface, Vec3(expectedX, 0, 0), 1e-9));
    CHECK(nearVec(res.pointOnLine, Vec3(D, 0, 0), 1e-9));
    CHECK(near(res.height, std::abs(D) - 0.7, 1e-9));
  }
  // Ellipsoid: at the result, the normal is perpendicular to the line and
  // the normal line meets it.
  const Vec3 l = Vec3(0.2, 1, 0.3).normalized();
  const Vec3 A(0.2, 0.1, 0.35);
  const auto res = cg::trackSeparationFromLine(kEllipsoid, A, l, cg::calcSupportPoint(kEllipsoid, Vec3(0, 0, 1)));
  CHECK(res.converged);
  const Vec3 n = cg::calcSurfaceUnitNormal(kEllipsoid, res.pointOnSurface);
  CHECK(std::abs(n.dot(l)) < 1e-12);
  CHECK(nearVec(res.pointOnLine, res.pointOnSurface + res.height * n, 1e-9));
  // A guess that cannot work reports failure instead of garbage.
  const auto bad = cg::trackSeparationFromLine(kEllipsoid, A, Vec3::UnitZ(), Vec3(0, 0, 0.2));
  CHECK(bad.pointOnSurface.allFinite());
  CHECK(std::isfinite(bad.residual));
  // The residual reported is the one at the point returned, also when the
  // line search gives up (it used to move once more after its last trial).
  for (const auto& [line, r] : {std::pair{Vec3::UnitZ().eval(), bad}, std::pair{l, res}}) {
    const Vec3 P = r.pointOnSurface;
    const Vec3 nP = cg::calcSurfaceUnitNormal(kEllipsoid, P);
    const Vec3 e(nP.dot(line), (A - P).dot(nP.cross(line)), kEllipsoid.value(P));
    CHECK(r.residual == doctest::Approx(e.lpNorm<Eigen::Infinity>()).epsilon(1e-12));
  }
}

TEST_CASE("projectDownhillToNearestPoint reports the residual of the point it returns") {
  // From the centre of an ellipsoid (on its medial axis) and from points far
  // away, where the Newton iteration may stall and the line search give up.
  for (const Vec3& q : {Vec3(0, 0, 0), Vec3(1e-9, 0, 0), Vec3(0, 0, 1e-3), Vec3(1e6, 2e6, -3e6), Vec3(0.1, 1e-12, 0)}) {
    CAPTURE(q);
    const auto pr = cg::projectDownhillToNearestPoint(kEllipsoid, q);
    REQUIRE(pr.point.allFinite());
    const Vec3 x = pr.point;
    const Vec3 g = kEllipsoid.gradient(x);
    const double glen = std::max(g.norm(), cg::Tolerances<double>::tinyGradient);
    const Vec3 n = g / glen, d = x - q;
    const double expected = std::max(std::abs(kEllipsoid.value(x)) / glen, (d - n * n.dot(d)).norm());
    CHECK(pr.residual == doctest::Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("zero ray and support directions give no hit and no NaN") {
  const cg::Brick<double> brick{Vec3(1, 2, 3)};
  // From inside, a zero direction crosses no slab: it used to index n[-1].
  CHECK(!cg::intersectsRay(brick, Vec3(0.1, 0.2, 0.3), Vec3::Zero()).has_value());
  CHECK(!cg::intersectsRay(brick, Vec3(5, 0, 0), Vec3::Zero()).has_value());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(!cg::intersectsRay(brick, Vec3(0.1, 0.2, 0.3), Vec3(nan, 0, 0)).has_value());
  // Still a hit with zero components along the other axes, from inside.
  const auto exit = cg::intersectsRay(brick, Vec3(0.1, 0.2, 0.3), Vec3::UnitY());
  REQUIRE(exit.has_value());
  CHECK(exit->distance == doctest::Approx(1.8));
  CHECK(exit->normal == Vec3::UnitY());
  // Zero support direction: the origin, as for the sphere (not 0/0).
  CHECK(cg::calcSupportPoint(kSphere, Vec3::Zero()) == Vec3::Zero());
  const Vec3 se = cg::calcSupportPoint(kEllipsoid, Vec3::Zero());
  CHECK(se.allFinite());
  CHECK(se == cg::calcSupportPoint(kSphere, Vec3::Zero()));
}

TEST_CASE("shapes and closed-form operations are templated on Scalar") {
  using LVec3 = cg::Vec3<long double>;
  const cg::Torus<long double> torus{1.0L, 0.3L};
  const LVec3 p(1.2L, 0.1L, 0.05L);
  const LVec3 pd = p;
  const cg::Torus<double> torusD{1.0, 0.3};
  const Vec3 pD(1.2, 0.1, 0.05);
  CHECK(near(static_cast<double>(torus.value(pd)), torusD.value(pD), kRoundoff));
  CHECK(near(static_cast<double>(cg::calcGaussianCurvature(torus, pd)), cg::calcGaussianCurvature(torusD, pD),
             kRoundoff));
  const auto pc = cg::calcSurfacePrincipalCurvatures(torus, pd);
  const auto pcD = cg::calcSurfacePrincipalCurvatures(torusD, pD);
  CHECK(near(static_cast<double>(pc.k[0]), pcD.k[0], kRoundoff));
  CHECK(near(static_cast<double>(pc.k[1]), pcD.k[1], kRoundoff, pcD.k[0]));
  const auto support = cg::calcSupportPoint(cg::Ellipsoid<float>{cg::Vec3<float>(0.5f, 0.3f, 0.2f)},
                                            cg::Vec3<float>(0.0f, 0.0f, 1.0f));
  CHECK(std::abs(support.z() - 0.2f) < 1e-6f);
}
