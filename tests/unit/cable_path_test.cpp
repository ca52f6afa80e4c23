// Cable paths (capstan/cable_path.hpp): closed-form lengths over spheres and
// cylinders, the wrap angle over an ellipsoid's principal section and the
// rejection of cusps, via points, the length rate against finite differences of the
// length, power and force balance, liftoff and touchdown, consecutive
// surfaces, ellipsoids and tori without jumps, the shortest-path guard,
// capstan friction, the cable spring law and failures as values.
#include <capstan/cable_path.hpp>

#include <Eigen/Geometry>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

namespace cc = capstan::cable;
namespace cg = capstan::geometry;
using cc::Matrix3;
using cc::Motion;
using cc::Vector3;

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kClosedForm = 1e-12;     // relative: lengths over closed-form geodesics
constexpr double kTangency = 1e-9;        // sine of the kink angle at a contact point
constexpr double kRateVsDifference = 1e-7;  // relative: dL/dt against central differences over 1e-4 s
constexpr double kBalance = 1e-12;        // relative to tension * (1 + lever arm)
constexpr double kPowerMatch = 1e-12;     // relative to |tension| * sum |segment rates|

bool nearRel(double a, double b, double rel, double scale = 1.0) {
  return std::abs(a - b) <= rel * std::max({std::abs(a), std::abs(b), scale});
}

Matrix3 rotation(const Vector3& axis, double angle) { return Eigen::AngleAxisd(angle, axis.normalized()).toRotationMatrix(); }

Motion fixedAt(const Vector3& p, const Matrix3& R = Matrix3::Identity()) {
  Motion m;
  m.R_WF = R;
  m.p_WF = p;
  return m;
}

// A frame moving smoothly: p(t) = p0 + v0 t + a t^2 / 2, R(t) = exp(w t) R0.
struct Trajectory {
  Vector3 p0 = Vector3::Zero(), v0 = Vector3::Zero(), a = Vector3::Zero(), w = Vector3::Zero();
  Matrix3 R0 = Matrix3::Identity();
  Motion at(double t) const {
    Motion m;
    const double angle = w.norm() * t;
    m.R_WF = (angle != 0 ? rotation(w, angle) : Matrix3::Identity()) * R0;
    m.p_WF = p0 + v0 * t + 0.5 * a * t * t;
    m.w_WF = w;
    m.v_WF = v0 + a * t;
    return m;
  }
};

std::vector<Motion> framesAt(const std::vector<Trajectory>& tr, double t) {
  std::vector<Motion> f;
  for (const auto& x : tr) f.push_back(x.at(t));
  return f;
}

// The frames' change per unit time along their trajectories at t: turning
// at w, the origin moving at v, the velocities changing by (0, a).
std::vector<cc::FrameVariation> ratesAt(const std::vector<Trajectory>& tr, double t) {
  std::vector<cc::FrameVariation> d;
  for (const auto& x : tr) {
    const Motion m = x.at(t);
    d.push_back({m.w_WF, m.v_WF, Vector3::Zero(), x.a});
  }
  return d;
}

// The frames moved by s times the variations d.
std::vector<Motion> varied(std::vector<Motion> frames, const std::vector<cc::FrameVariation>& d, double s) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const double angle = d[i].rotation.norm() * s;
    if (angle != 0) frames[i].R_WF = rotation(d[i].rotation, angle) * frames[i].R_WF;
    frames[i].p_WF += s * d[i].origin;
    frames[i].w_WF += s * d[i].angularVelocity;
    frames[i].v_WF += s * d[i].velocity;
  }
  return frames;
}

// Shortest length from O around a circle of radius r centred at the origin
// to T, all in a plane (O, T outside): tangent lines plus the arc between
// the tangent points on the side the cable wraps.
double tangentLinesPlusArc(const Eigen::Vector2d& O, const Eigen::Vector2d& T, double r) {
  const double lo = O.norm(), lt = T.norm();
  const double angle = std::acos(std::clamp(O.dot(T) / (lo * lt), -1.0, 1.0));
  return std::sqrt(lo * lo - r * r) + std::sqrt(lt * lt - r * r) + r * (angle - std::acos(r / lo) - std::acos(r / lt));
}

// Every active wrap meets its segments tangentially, on its surface.
void checkTangency(const cc::CablePath& path, const cc::CablePathState& st) {
  for (std::size_t k = 0; k < st.segments.size(); ++k) {
    const auto& s = st.segments[k];
    const auto& from = st.obstacles[static_cast<std::size_t>(s.from)];
    const auto& to = st.obstacles[static_cast<std::size_t>(s.to)];
    if (path.obstacles[static_cast<std::size_t>(s.from)].kind == cc::ObstacleKind::Surface) {
      CHECK(s.e_W.cross(from.Q.t_W).norm() < kTangency);
      CHECK(s.e_W.dot(from.Q.t_W) > 0);
    }
    if (path.obstacles[static_cast<std::size_t>(s.to)].kind == cc::ObstacleKind::Surface) {
      CHECK(s.e_W.cross(to.P.t_W).norm() < kTangency);
      CHECK(s.e_W.dot(to.P.t_W) > 0);
    }
  }
}

}  // namespace

TEST_CASE("a cable round a fixed sphere: tangent lines plus the great-circle arc") {
  const double r = 0.5;
  const struct {
    Vector3 O, T;
  } cases[] = {{{-1, 0.2, 0}, {1, 0.3, 0.1}}, {{-2, -0.1, 0.3}, {0.8, 0.4, -0.2}}, {{0.3, -1.2, 0}, {0.2, 1.1, 0.05}}};
  for (const auto& c : cases) {
    cc::CablePath path = cc::makeCablePath(c.O, c.T);
    cc::addWrap(path, cg::Sphere<double>{r});
    const std::vector<Motion> frames(3);
    cc::CablePathState st;
    const cc::CableResult res = cc::solveForInitialCablePath(path, frames, st);
    REQUIRE_MESSAGE(res.ok(), res.message());
    // The path lies in the plane through O, T and the centre.
    const Vector3 e1 = c.O.normalized(), e2 = (c.T - e1 * e1.dot(c.T)).normalized();
    const double expected = tangentLinesPlusArc({c.O.dot(e1), c.O.dot(e2)}, {c.T.dot(e1), c.T.dot(e2)}, r);
    CHECK(nearRel(st.length, expected, kClosedForm));
    const auto& o = st.obstacles[1];
    REQUIRE(o.active);
    CHECK(std::abs(o.P.p_W.norm() - r) < 1e-12);
    CHECK(std::abs(o.Q.p_W.norm() - r) < 1e-12);
    CHECK(nearRel(o.wrapAngle, o.arcLength / r, kClosedForm));
    checkTangency(path, st);
  }
}

TEST_CASE("a cable round a fixed cylinder: the unrolled helix, sqrt(planar^2 + dz^2)") {
  const double r = 0.3;
  const Vector3 O(-1, 0.1, -0.4), T(0.9, 0.15, 0.6);
  cc::CablePath path = cc::makeCablePath(O, T);
  // The cylinder's axis is z (S = F = World) here; rotated and shifted below.
  cc::addWrap(path, cg::Cylinder<double>{r});
  const std::vector<Motion> frames(3);
  cc::CablePathState st;
  const cc::CableResult res = cc::solveForInitialCablePath(path, frames, st);
  REQUIRE_MESSAGE(res.ok(), res.message());
  const double planar = tangentLinesPlusArc(O.head<2>(), T.head<2>(), r);
  CHECK(nearRel(st.length, std::hypot(planar, T.z() - O.z()), kClosedForm));
  checkTangency(path, st);
  // The same cylinder posed in a rotated, shifted frame gives the same length.
  const Matrix3 R = rotation(Vector3(1, 2, -0.5), 0.7);
  const Vector3 p(0.3, -0.2, 1.1);
  cc::CablePath moved = cc::makeCablePath(p + R * O, p + R * T);
  cc::addWrap(moved, cg::Cylinder<double>{r}, R, p);
  cc::CablePathState st2;
  REQUIRE(cc::solveForInitialCablePath(moved, frames, st2).ok());
  CHECK(nearRel(st2.length, st.length, kClosedForm));
}

TEST_CASE("over an ellipsoid's principal section: the wrap angle is the normal's turning, and no cusps") {
  // O, T and the centre in the plane z = 0, a symmetry plane: the path is
  // the planar ellipse x^2/a^2 + y^2/b^2 = 1 there, a geodesic integrated
  // numerically, and its turning equals the angle between the normals at P
  // and Q. (A trapezoid over Dormand-Prince's stored points was 4e-6 rad
  // off on a case like this.)
  const Vector3 semi(0.12, 0.1, 0.2);
  const struct {
    Vector3 O, T;
  } cases[] = {{{-0.5, 0.2, 0}, {0.1, -0.8, 0}}, {{-0.6, 0.05, 0}, {0.5, 0.08, 0}}};
  const Vector3 nearTop(0, 0.2, 0);
  for (const auto& c : cases) {
    cc::CablePath path = cc::makeCablePath(c.O, c.T);
    cc::addWrap(path, cg::Ellipsoid<double>{semi}, Matrix3::Identity(), Vector3::Zero(), nearTop);
    const std::vector<Motion> frames(3);
    cc::CablePathState st;
    const cc::CableResult res = cc::solveForInitialCablePath(path, frames, st);
    REQUIRE_MESSAGE(res.ok(), res.message());
    const auto& o = st.obstacles[1];
    REQUIRE(o.active);
    const auto normal = [&](const Vector3& x) { return Vector3(x.x() / (semi.x() * semi.x()), x.y() / (semi.y() * semi.y()), 0); };
    const Vector3 nP = normal(o.P.p_W), nQ = normal(o.Q.p_W);
    const double turning = std::atan2(nP.cross(nQ).norm(), nP.dot(nQ));
    MESSAGE("wrap angle " << o.wrapAngle << ", normals turn by " << turning);
    CHECK(std::abs(o.P.p_W.z()) < 1e-12);
    CHECK(std::abs(std::abs(o.wrapAngle) - turning) < 1e-9);
    checkTangency(path, st);
  }
  // The straight line clears the ellipsoid on the right while the near
  // point asks for its top: the tangency conditions also hold for a wrap
  // whose entry segment runs back against the geodesic (a cusp, e = -t at
  // P), which the solver once returned; the cable runs straight.
  const Vector3 O(0.05, 0.7, 0), T(0.3, -0.6, 0);
  cc::CablePath path = cc::makeCablePath(O, T);
  cc::addWrap(path, cg::Ellipsoid<double>{semi}, Matrix3::Identity(), Vector3::Zero(), nearTop);
  cc::CablePathState st;
  const cc::CableResult res = cc::solveForInitialCablePath(path, std::vector<Motion>(3), st);
  REQUIRE_MESSAGE(res.ok(), res.message());
  CHECK(!st.obstacles[1].active);
  CHECK(nearRel(st.length, (T - O).norm(), kClosedForm));
}

TEST_CASE("via points only: the sum of the segment lengths") {
  const Vector3 O(0, 0, 0), V1(1, 0.5, 0), V2(1.5, -0.2, 0.3), T(2, 0, 0);
  cc::CablePath path = cc::makeCablePath(O, T);
  cc::addViaPoint(path, V1);
  cc::addViaPoint(path, V2);
  // The via points are given in moving frames: the second is posed by R, p.
  const Matrix3 R = rotation(Vector3(0, 0, 1), 0.4);
  const Vector3 p(0.1, 0.2, 0.3);
  path.obstacles[2].p_FP = R.transpose() * (V2 - p);
  std::vector<Motion> frames(4);
  frames[2] = fixedAt(p, R);
  cc::CablePathState st;
  REQUIRE(cc::updateCablePath(path, frames, st).ok());
  CHECK(nearRel(st.length, (V1 - O).norm() + (V2 - V1).norm() + (T - V2).norm(), 1e-15));
  CHECK(st.segments.size() == 3);
  CHECK(st.last.shots == 0);
}

TEST_CASE("the Jacobian of the tangency conditions matches finite differences of the residual") {
  // Two consecutive wraps (ellipsoid, then torus) and a sphere after a via
  // point, each at a non-solution, including a negative geodesic length.
  cc::CablePath path = cc::makeCablePath(Vector3(-2, 0.4, 0.1), Vector3(2.5, 0.3, -0.2));
  cc::addWrap(path, cg::Ellipsoid<double>{Vector3(0.4, 0.3, 0.25)}, Matrix3::Identity(), Vector3(-1, 0, 0));
  cc::addWrap(path, cg::Torus<double>{0.5, 0.2}, rotation(Vector3(1, 0, 0), kPi / 2), Vector3(0.2, -0.5, 0));
  cc::addViaPoint(path, Vector3(1.2, 0.6, 0));
  cc::addWrap(path, cg::Sphere<double>{0.3}, Matrix3::Identity(), Vector3(1.9, 0, 0));
  const std::vector<Motion> frames(6);
  std::vector<cc::WrapGeodesic> wraps(6);
  const auto& opt = path.options.geodesic;
  const auto shoot = [&](int i, const Vector3& P, const Vector3& t, double L) {
    wraps[static_cast<std::size_t>(i)] = std::visit(
        [&](const auto& s) { return cc::shootWrap(s, P, t, L, opt); }, path.obstacles[static_cast<std::size_t>(i)].surface);
    REQUIRE(wraps[static_cast<std::size_t>(i)].ok());
  };
  shoot(1, Vector3(-0.1, 0.5, 0.1), Vector3(1, 0, -0.2), 0.35);
  shoot(2, Vector3(0.7, 0.1, 0.05), Vector3(0.2, 1, 0.3), -0.08);  // S coordinates of the torus
  shoot(4, Vector3(0, 0.3, 0), Vector3(1, 0.1, 0.1), 0.2);
  const std::vector<int> active{0, 1, 2, 3, 4, 5};
  const cc::detail::PathView v{path, frames, active};
  const std::vector<int> blocks = cc::detail::surfaceBlocks(v);
  REQUIRE(blocks.size() == 3);
  Eigen::MatrixXd J;
  Eigen::VectorXd r0, rp, rm;
  REQUIRE(cc::detail::evalResidual(v, blocks, wraps, r0));
  cc::detail::evalJacobian(v, blocks, wraps, J);
  const double h = 1e-6;
  int compared = 0;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const int i = active[static_cast<std::size_t>(blocks[k])];
    const cc::WrapGeodesic base = wraps[static_cast<std::size_t>(i)];
    for (int c = 0; c < 4; ++c) {
      Eigen::Vector4d x = Eigen::Vector4d::Zero();
      for (const double sgn : {1.0, -1.0}) {
        x[c] = sgn * h;
        const cc::ShootParameters p = cc::varyShootParameters(base, x);
        shoot(i, p.P, p.t, p.L);
        REQUIRE(cc::detail::evalResidual(v, blocks, wraps, sgn > 0 ? rp : rm));
      }
      wraps[static_cast<std::size_t>(i)] = base;
      const Eigen::VectorXd fd = (rp - rm) / (2 * h);
      const Eigen::VectorXd col = J.col(4 * static_cast<Eigen::Index>(k) + c);
      CHECK_MESSAGE((fd - col).norm() <= 1e-5 * (1 + col.norm()), "block " << k << " column " << c << "\nfd  " << fd.transpose()
                                                                            << "\njac " << col.transpose());
      ++compared;
    }
  }
  CHECK(compared == 12);
}

namespace {

// A cable over all four shapes and two via points, every obstacle on its
// own moving frame (the model the rate, power and balance tests share).
struct MovingModel {
  cc::CablePath path;
  std::vector<Trajectory> frames;
};

MovingModel allShapes() {
  MovingModel m;
  // Ends and via points at y = 0 (World); the surfaces' frames sit below
  // y = 0, so every straight line between the points penetrates them and
  // the cable wraps over their tops (near points there as well). The
  // cylinder and the ellipsoid follow each other with no via point between.
  // The torus is a ring in the xy plane whose top tube the cable crosses
  // above the tube's centre line. Geodesics to 1e-12, so that differences
  // of lengths over 1e-4 s resolve the rate to 1e-8.
  m.path = cc::makeCablePath(Vector3::Zero(), Vector3::Zero());
  m.path.options.geodesic.accuracy = 1e-12;
  m.path.options.tolerance = 1e-12;
  cc::addWrap(m.path, cg::Sphere<double>{0.25}, Matrix3::Identity(), Vector3::Zero(), Vector3(0, 0.25, 0));
  cc::addViaPoint(m.path, Vector3::Zero());
  cc::addWrap(m.path, cg::Cylinder<double>{0.2}, Matrix3::Identity(), Vector3::Zero(), Vector3(0, 0.2, 0));
  cc::addWrap(m.path, cg::Ellipsoid<double>{Vector3(0.3, 0.2, 0.25)}, Matrix3::Identity(), Vector3::Zero(),
              Vector3(0, 0.2, 0));
  cc::addViaPoint(m.path, Vector3::Zero());
  cc::addWrap(m.path, cg::Torus<double>{0.3, 0.15}, Matrix3::Identity(), Vector3::Zero(), Vector3(0, 0.45, 0));
  const double xs[] = {-2.0, -1.2, -0.5, 0.2, 1.0, 1.7, 2.5, 3.3};
  const double ys[] = {0.0, -0.12, 0.0, -0.05, -0.05, 0.0, -0.36, 0.0};
  std::mt19937 rng(7);
  std::normal_distribution<double> n(0, 1);
  for (int i = 0; i < 8; ++i) {
    Trajectory t;
    t.p0 = Vector3(xs[i], ys[i], 0.02 * n(rng));
    t.v0 = 0.05 * Vector3(n(rng), n(rng), n(rng));
    t.a = 0.1 * Vector3(n(rng), n(rng), n(rng));
    t.w = 0.2 * Vector3(n(rng), n(rng), n(rng));
    t.R0 = rotation(Vector3(n(rng), n(rng), n(rng)), 0.1);
    m.frames.push_back(t);
  }
  return m;
}

// Sum over all frames of F . V (the power of spatial forces at the frame
// origins with the frames' twists).
double powerOf(const std::vector<cc::SpatialForce>& F, const std::vector<Motion>& frames) {
  double p = 0;
  for (std::size_t i = 0; i < F.size(); ++i)
    p += F[i].head<3>().dot(frames[i].w_WF) + F[i].tail<3>().dot(frames[i].v_WF);
  return p;
}

}  // namespace

TEST_CASE("the length rate equals central differences of the length along random motions") {
  MovingModel m = allShapes();
  cc::CablePathState st;
  const cc::CableResult first = cc::updateCablePath(m.path, framesAt(m.frames, 0.0), st);
  REQUIRE_MESSAGE(first.ok(), first.message());
  for (std::size_t i = 1; i + 1 < st.obstacles.size(); ++i)
    if (m.path.obstacles[i].kind == cc::ObstacleKind::Surface) CHECK_MESSAGE(st.obstacles[i].active, "obstacle " << i);
  const double h = 1e-4;
  int compared = 0;
  for (double t = 0; t <= 0.4 + 1e-12; t += 0.04) {
    cc::CablePathState plus = st, minus = st, mid = st;
    REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, t), mid).ok());
    REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, t + h), plus).ok());
    REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, t - h), minus).ok());
    for (std::size_t i = 0; i < mid.obstacles.size(); ++i) REQUIRE(mid.obstacles[i].active);
    const double fd = (plus.length - minus.length) / (2 * h);
    CHECK_MESSAGE(nearRel(mid.lengthDot, fd, kRateVsDifference, 0.1), "t = " << t << " rate " << mid.lengthDot << " fd " << fd);
    checkTangency(m.path, mid);
    st = mid;
    ++compared;
  }
  CHECK(compared == 11);
}

TEST_CASE("the contact points' rates (material motion and sliding) equal central differences along random motions") {
  // The path's sensitivity (calcContactPointVariations along the motion): every surface and via
  // point moving, each wrap's P and Q sliding as the path re-solves.
  MovingModel m = allShapes();
  cc::CablePathState st;
  REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, 0.0), st).ok());
  const double h = 1e-4;
  double worst = 0, largest = 0, sliding = 0;
  for (double t = 0; t <= 0.4 + 1e-12; t += 0.08) {
    cc::CablePathState plus = st, minus = st, mid = st;
    const std::vector<Motion> frames = framesAt(m.frames, t);
    REQUIRE(cc::updateCablePath(m.path, frames, mid).ok());
    REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, t + h), plus).ok());
    REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, t - h), minus).ok());
    std::vector<Vector3> pDot, qDot;
    cc::calcContactPointVariations(m.path, frames, mid, ratesAt(m.frames, t), pDot, qDot);
    for (std::size_t i = 0; i < mid.obstacles.size(); ++i) {
      REQUIRE(mid.obstacles[i].active);
      const Vector3 fdP = (plus.obstacles[i].P.p_W - minus.obstacles[i].P.p_W) / (2 * h);
      const Vector3 fdQ = (plus.obstacles[i].Q.p_W - minus.obstacles[i].Q.p_W) / (2 * h);
      worst = std::max({worst, (pDot[i] - fdP).norm(), (qDot[i] - fdQ).norm()});
      largest = std::max({largest, fdP.norm(), fdQ.norm()});
      sliding = std::max(sliding, (pDot[i] - cc::detail::materialVelocity(frames[i], mid.obstacles[i].P.p_W)).norm());
      CHECK_MESSAGE((pDot[i] - fdP).norm() <= 1e-5 * std::max(1.0, fdP.norm()), "t = " << t << " obstacle " << i << " P: "
                    << pDot[i].transpose() << " against " << fdP.transpose());
      CHECK_MESSAGE((qDot[i] - fdQ).norm() <= 1e-5 * std::max(1.0, fdQ.norm()), "t = " << t << " obstacle " << i << " Q: "
                    << qDot[i].transpose() << " against " << fdQ.transpose());
    }
    st = mid;
  }
  MESSAGE("contact point rates: worst difference " << worst << " m/s, largest rate " << largest
                                                     << " m/s, largest sliding " << sliding << " m/s");
  CHECK(largest > 0.1);    // the points do move
  CHECK(sliding > 0.01);   // and slide over their surfaces: the sensitivity is not the material motion alone
}

TEST_CASE("the length's acceleration and the spring-driven forces' rates equal central differences") {
  // allShapes' frames move with constant angular velocities w and origin
  // accelerations a: alpha = 0. A spring k x (1 + c x') taut along the
  // whole motion drives the tension; its rate k x' (1 + c x') + k x c x''.
  MovingModel m = allShapes();
  const double k = 300, slack = 4.0, c = 0.2;
  cc::CablePathState st;
  REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, 0.0), st).ok());
  const std::size_t n = st.obstacles.size();
  const auto forces = [&](const cc::CablePathState& s, const std::vector<Motion>& frames) {
    std::vector<cc::SpatialForce> F(n, cc::SpatialForce::Zero());
    cc::applyBodyForces(m.path, s, cc::cableSpring(s.length, s.lengthDot, k, slack, c).tension, frames, F);
    return F;
  };
  const double h = 1e-4;
  double worstF = 0, largestF = 0;
  for (double t = 0; t <= 0.4 + 1e-12; t += 0.08) {
    cc::CablePathState plus = st, minus = st, mid = st;
    const std::vector<Motion> frames = framesAt(m.frames, t), fp = framesAt(m.frames, t + h), fm = framesAt(m.frames, t - h);
    REQUIRE(cc::updateCablePath(m.path, frames, mid).ok());
    REQUIRE(cc::updateCablePath(m.path, fp, plus).ok());
    REQUIRE(cc::updateCablePath(m.path, fm, minus).ok());
    REQUIRE(mid.length > slack);
    const std::vector<cc::FrameVariation> d = ratesAt(m.frames, t);
    CHECK(nearRel(cc::calcLengthVariation(frames, mid, d), mid.lengthDot, 1e-12, 0.1));
    const double Ldd = cc::calcLengthRateVariation(m.path, frames, mid, d);
    const double fdLdd = (plus.lengthDot - minus.lengthDot) / (2 * h);
    CHECK_MESSAGE(nearRel(Ldd, fdLdd, 1e-5, 0.1), "t = " << t << ": L'' " << Ldd << " against " << fdLdd);
    const double x = mid.length - slack, xd = mid.lengthDot;
    const double T = cc::cableSpring(mid.length, xd, k, slack, c).tension;
    const double Tdot = k * xd * (1 + c * xd) + k * x * c * Ldd;
    std::vector<cc::SpatialForce> FDot(n, cc::SpatialForce::Zero());
    REQUIRE(cc::calcBodyForceVariations(m.path, frames, mid, d, T, Tdot, FDot));
    const std::vector<cc::SpatialForce> Fp = forces(plus, fp), Fm = forces(minus, fm);
    for (std::size_t i = 0; i < n; ++i) {
      const cc::SpatialForce fd = (Fp[i] - Fm[i]) / (2 * h);
      worstF = std::max(worstF, (FDot[i] - fd).norm());
      largestF = std::max(largestF, fd.norm());
      CHECK_MESSAGE((FDot[i] - fd).norm() <= 1e-5 * std::max(1.0, fd.norm()), "t = " << t << " obstacle " << i << ": "
                    << FDot[i].transpose() << " against " << fd.transpose());
    }
    st = mid;
  }
  MESSAGE("force rates: worst difference " << worstF << ", largest rate " << largestF << " (N/s, N m/s)");
  CHECK(largestF > 1.0);
  // A wrap with friction is refused.
  cc::CablePath rough = m.path;
  rough.obstacles[1].friction = 0.3;
  std::vector<cc::SpatialForce> FDot(n, cc::SpatialForce::Zero());
  CHECK_FALSE(cc::calcBodyForceVariations(rough, framesAt(m.frames, 0.4), st, ratesAt(m.frames, 0.4), 1.0, 0.0, FDot));
}

TEST_CASE("variations of the poses at fixed velocities, and of the velocities alone, equal central differences") {
  // What a derivative by a coordinate at fixed speeds, or by a speed,
  // asks: the frames' poses move along one direction while their
  // velocities stay (or change along another), unlike a motion in time.
  MovingModel m = allShapes();
  const double k = 300, slack = 4.0, c = 0.2;
  cc::CablePathState st;
  const std::vector<Motion> frames = framesAt(m.frames, 0.2);
  REQUIRE(cc::updateCablePath(m.path, frames, st).ok());
  const std::size_t n = st.obstacles.size();
  std::mt19937 rng(11);
  std::normal_distribution<double> g(0, 1);
  const auto random = [&](double scale) { return Vector3(scale * g(rng), scale * g(rng), scale * g(rng)); };
  std::vector<cc::FrameVariation> poses(n), speeds(n);
  for (std::size_t i = 0; i < n; ++i) {
    poses[i] = {random(0.3), random(0.2), Vector3::Zero(), Vector3::Zero()};
    speeds[i] = {Vector3::Zero(), Vector3::Zero(), random(0.5), random(0.5)};
  }
  const double h = 1e-5;
  for (const auto* d : {&poses, &speeds}) {
    cc::CablePathState plus = st, minus = st;
    const std::vector<Motion> fp = varied(frames, *d, h), fm = varied(frames, *d, -h);
    REQUIRE(cc::updateCablePath(m.path, fp, plus).ok());
    REQUIRE(cc::updateCablePath(m.path, fm, minus).ok());
    std::vector<Vector3> dP, dQ;
    cc::calcContactPointVariations(m.path, frames, st, *d, dP, dQ);
    for (std::size_t i = 0; i < n; ++i) {
      const Vector3 fd = (plus.obstacles[i].P.p_W - minus.obstacles[i].P.p_W) / (2 * h);
      CHECK_MESSAGE((dP[i] - fd).norm() <= 1e-6 * std::max(1.0, fd.norm()), "obstacle " << i << ": " << dP[i].transpose()
                    << " against " << fd.transpose());
    }
    const double dL = cc::calcLengthVariation(frames, st, *d), dLdot = cc::calcLengthRateVariation(m.path, frames, st, *d);
    CHECK(nearRel(dL, (plus.length - minus.length) / (2 * h), 1e-6, 0.1));
    CHECK_MESSAGE(nearRel(dLdot, (plus.lengthDot - minus.lengthDot) / (2 * h), 1e-6, 0.1),
                  "d(L') " << dLdot << " against " << (plus.lengthDot - minus.lengthDot) / (2 * h));
    const double x = st.length - slack, xd = st.lengthDot;
    const double dT = k * dL * (1 + c * xd) + k * x * c * dLdot;
    std::vector<cc::SpatialForce> dF(n, cc::SpatialForce::Zero());
    REQUIRE(cc::calcBodyForceVariations(m.path, frames, st, *d, cc::cableSpring(st.length, xd, k, slack, c).tension, dT, dF));
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<cc::SpatialForce> Fp(n, cc::SpatialForce::Zero()), Fm(n, cc::SpatialForce::Zero());
      cc::applyBodyForces(m.path, plus, cc::cableSpring(plus.length, plus.lengthDot, k, slack, c).tension, fp, Fp);
      cc::applyBodyForces(m.path, minus, cc::cableSpring(minus.length, minus.lengthDot, k, slack, c).tension, fm, Fm);
      const cc::SpatialForce fd = (Fp[i] - Fm[i]) / (2 * h);
      CHECK_MESSAGE((dF[i] - fd).norm() <= 1e-5 * std::max(1.0, fd.norm()), "obstacle " << i << ": " << dF[i].transpose()
                    << " against " << fd.transpose());
    }
  }
  // The speeds' variation leaves the poses, so the contact points and L, alone.
  std::vector<Vector3> dP, dQ;
  cc::calcContactPointVariations(m.path, frames, st, speeds, dP, dQ);
  for (const Vector3& p : dP) CHECK(p.norm() == 0.0);
  CHECK(cc::calcLengthVariation(frames, st, speeds) == 0.0);
}

TEST_CASE("the integrated length rate tracks the length") {
  MovingModel m = allShapes();
  cc::CablePathState st;
  REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, 0.0), st).ok());
  const double L0 = st.length;
  // Simpson's rule on the rate at 401 points over 0.4 s (every wrap stays
  // on its surface: a liftoff's kink would make the rule second order).
  const int n = 400;
  const double T = 0.4, dt = T / n;
  double integral = 0;
  for (int k = 0; k <= n; ++k) {
    REQUIRE(cc::updateCablePath(m.path, framesAt(m.frames, k * dt), st).ok());
    for (std::size_t i = 0; i < st.obstacles.size(); ++i) REQUIRE(st.obstacles[i].active);
    integral += (k == 0 || k == n ? 1 : (k % 2 ? 4 : 2)) * st.lengthDot * dt / 3;
  }
  CHECK_MESSAGE(nearRel(L0 + integral, st.length, 1e-10), "L0 " << L0 << " integral " << integral << " L " << st.length);
  CHECK(std::abs(st.length - L0) > 1e-3);  // the motion did change the length
}

TEST_CASE("cable power is -tension * length rate and equals the power of the body forces; forces balance") {
  MovingModel m = allShapes();
  cc::CablePathState st;
  const double tension = 37.5;
  for (const double t : {0.0, 0.1, 0.2, 0.35}) {
    const std::vector<Motion> frames = framesAt(m.frames, t);
    REQUIRE(cc::updateCablePath(m.path, frames, st).ok());
    std::vector<cc::SpatialForce> F(frames.size(), cc::SpatialForce::Zero());
    cc::applyBodyForces(m.path, st, tension, frames, F);
    double rateScale = 0;
    for (const auto& s : st.segments) rateScale += std::abs(s.lengthDot);
    CHECK(nearRel(cc::calcCablePower(m.path, st, tension), -tension * st.lengthDot, kPowerMatch, tension * rateScale));
    CHECK(nearRel(powerOf(F, frames), -tension * st.lengthDot, kPowerMatch, tension * rateScale));
    // Sum of all forces, and of all moments about the World origin.
    Vector3 force = Vector3::Zero(), moment = Vector3::Zero();
    double lever = 0;
    for (std::size_t i = 0; i < F.size(); ++i) {
      force += F[i].tail<3>();
      moment += F[i].head<3>() + frames[i].p_WF.cross(Vector3(F[i].tail<3>()));
      lever = std::max(lever, frames[i].p_WF.norm());
    }
    CHECK(force.norm() <= kBalance * tension);
    CHECK(moment.norm() <= kBalance * tension * (1 + lever));
    // The cable presses every wrapped surface inwards: the resultant
    // -T e_in + T e_out points against the outward normals at P and Q.
    for (std::size_t i = 1; i + 1 < F.size(); ++i)
      if (m.path.obstacles[i].kind == cc::ObstacleKind::Surface && st.obstacles[i].active)
        CHECK(F[i].tail<3>().dot(st.obstacles[i].P.n_W + st.obstacles[i].Q.n_W) < 0);
  }
  // Slack: nothing applied, no power.
  std::vector<cc::SpatialForce> F(m.frames.size(), cc::SpatialForce::Zero());
  cc::applyBodyForces(m.path, st, 0.0, framesAt(m.frames, 0.35), F);
  for (const auto& f : F) CHECK(f.norm() == 0);
  CHECK(cc::calcCablePower(m.path, st, 0.0) == 0);
}

namespace {

// Length of the shortest cable O -> T past a sphere (c, r): the straight
// segment if it clears the sphere, else tangent lines plus the arc in the
// plane through O, T and c.
double sphereCableLength(const Vector3& O, const Vector3& T, const Vector3& c, double r) {
  const Vector3 d = T - O;
  const double s = std::clamp((c - O).dot(d) / d.squaredNorm(), 0.0, 1.0);
  if ((O + s * d - c).norm() >= r) return d.norm();
  const Vector3 a = O - c, b = T - c;
  const Vector3 e1 = a.normalized(), e2 = (b - e1 * e1.dot(b)).normalized();
  return tangentLinesPlusArc({a.dot(e1), 0}, {b.dot(e1), b.dot(e2)}, r);
}

}  // namespace

TEST_CASE("liftoff and touchdown along a scripted motion: the length stays exact and continuous") {
  // A sphere rises through the straight cable O -> T and falls back.
  const Vector3 O(-1, 0, 0), T(1, 0, 0.1);
  const double r = 0.2;
  cc::CablePath path = cc::makeCablePath(O, T);
  cc::addWrap(path, cg::Sphere<double>{r});
  const auto center = [](double t) { return Vector3(0.1, -0.5 + 0.6 * std::sin(kPi * t), 0.05); };
  cc::CablePathState st;
  const int steps = 1000;
  int touchdowns = 0, liftoffs = 0, worstStep = -1;
  double worstJump = 0, worstError = 0;
  bool wasActive = false;
  double prevL = 0;
  for (int k = 0; k <= steps; ++k) {
    const double t = static_cast<double>(k) / steps;
    std::vector<Motion> frames(3);
    frames[1] = fixedAt(center(t));
    frames[1].v_WF = Vector3(0, 0.6 * kPi * std::cos(kPi * t), 0);
    const cc::CableResult res = cc::updateCablePath(path, frames, st);
    REQUIRE_MESSAGE(res.ok(), "step " << k << ": " << res.message());
    const bool active = st.obstacles[1].active;
    // The event indicator: > 0 exactly while wrapped, the arc length; while
    // clear, minus the segment's clearance from the sphere.
    const double z = st.obstacles[1].contactIndicator;
    CHECK_MESSAGE(active == (z > 0), "step " << k << ": indicator " << z);
    if (active) CHECK(z == st.obstacles[1].arcLength);
    if (!active) {
      const Vector3 c = center(t), d = T - O;
      const double s = std::clamp((c - O).dot(d) / d.squaredNorm(), 0.0, 1.0);
      CHECK_MESSAGE(std::abs(-z - ((O + s * d - c).norm() - r)) < 1e-9, "step " << k);
    }
    if (active != wasActive && k > 0) CHECK_MESSAGE(std::abs(z) < 0.1, "step " << k << ": a jump to " << z);
    touchdowns += active && !wasActive;
    liftoffs += !active && wasActive;
    wasActive = active;
    worstError = std::max(worstError, std::abs(st.length - sphereCableLength(O, T, center(t), r)));
    if (k > 0) {
      // |dL| <= 2 |d center|: the length is 2-Lipschitz in the sphere's position.
      const double jump = std::abs(st.length - prevL) / (2 * (center(t) - center(t - 1.0 / steps)).norm());
      if (jump > worstJump) worstJump = jump, worstStep = k;
    }
    prevL = st.length;
  }
  CHECK(touchdowns == 1);
  CHECK(liftoffs == 1);
  CHECK_MESSAGE(worstError < 1e-12, "worst length error " << worstError);
  CHECK_MESSAGE(worstJump <= 1.0 + 1e-9, "worst |dL| / (2 |dc|) " << worstJump << " at step " << worstStep);
}

TEST_CASE("touchdown and liftoff probed back and forth like a root finder: solved everywhere, one sign change") {
  // A cylinder (axis z) rises through the straight cable O -> T; an event
  // locator bisects on the contact indicator around each switch and then
  // steps just past it, the states jumping back and forth by ever smaller
  // amounts. Found by fmusim's CVODE on an FMU: a wrap a few nm long had
  // rounding noise for Jacobi values and was refused as passing a
  // conjugate point, and a zero-length wrap stayed at indicator 0 after
  // the cable had cleared the surface.
  const Vector3 O(-1, 0, 0), T(1, 0.05, 0);
  const double r = 0.2;
  cc::CablePath path = cc::makeCablePath(O, T);
  cc::addWrap(path, cg::Cylinder<double>{r});
  cc::CablePathState st;
  const auto indicator = [&](double t) {
    std::vector<Motion> frames(3);
    frames[1] = fixedAt(Vector3(0.1, -0.5 + 0.6 * std::sin(kPi * t), 0));
    const cc::CableResult res = cc::updateCablePath(path, frames, st);
    REQUIRE_MESSAGE(res.ok(), "t = " << t << ": " << res.message());
    return st.obstacles[1].contactIndicator;
  };
  std::vector<double> switches;
  double previous = indicator(0);
  for (int k = 1; k <= 200; ++k) {
    const double t = k / 200.0, z = indicator(t);
    if ((previous > 0) != (z > 0)) {
      double lo = (k - 1) / 200.0, hi = t;
      const bool rising = z > 0;
      for (int it = 0; it < 80 && hi - lo > 1e-16; ++it) {
        const double mid = 0.5 * (lo + hi);
        ((indicator(mid) > 0) == rising ? hi : lo) = mid;
      }
      for (int again = 0; again < 3; ++again) {  // the locator's last looks either side
        CHECK((indicator(lo) > 0) != rising);
        CHECK((indicator(hi) > 0) == rising);
      }
      const double past = indicator(hi + 1e-9);
      CHECK_MESSAGE((past > 0) == rising, "just past the switch at t = " << hi << ": " << past);
      CHECK(past != 0);
      switches.push_back(hi);
      indicator(t);
    }
    previous = z;
  }
  CHECK(switches.size() == 2);  // touchdown, then liftoff
}

TEST_CASE("consecutive surfaces with no via point between them: a belt under two cylinders") {
  // O and T above two cylinders; near points under them loop the cable
  // down the outer sides, along the bottoms, and up again.
  const double r = 0.2;
  const Vector3 O(-1, 0.5, 0), T(1, 0.5, 0);
  cc::CablePath path = cc::makeCablePath(O, T);
  cc::addWrap(path, cg::Cylinder<double>{r}, Matrix3::Identity(), Vector3(-0.5, 0, 0), Vector3(0, -r, 0));
  cc::addWrap(path, cg::Cylinder<double>{r}, Matrix3::Identity(), Vector3(0.5, 0, 0), Vector3(0, -r, 0));
  const std::vector<Motion> frames(4);
  cc::CablePathState st;
  const cc::CableResult res = cc::solveForInitialCablePath(path, frames, st);
  REQUIRE_MESSAGE(res.ok(), res.message());
  const double d = std::hypot(0.5, 0.5);
  const double arc = (3 * kPi / 2) - (3 * kPi / 4 + std::acos(r / d));  // tangent point to the bottom
  CHECK(nearRel(st.length, 2 * (std::sqrt(d * d - r * r) + r * arc) + 1.0, kClosedForm));
  CHECK(st.segments.size() == 3);
  CHECK(nearRel(st.obstacles[1].wrapAngle, arc, kClosedForm));
  checkTangency(path, st);
  // Near points above instead: the straight line is closest, nothing wraps.
  path.obstacles[1].near_S = Vector3(0, r, 0);
  path.obstacles[2].near_S = Vector3(0, r, 0);
  REQUIRE(cc::solveForInitialCablePath(path, frames, st).ok());
  CHECK(!st.obstacles[1].active);
  CHECK(!st.obstacles[2].active);
  CHECK(nearRel(st.length, 2.0, 1e-15));
  CHECK(st.obstacles[1].separation > 0);
}

namespace {

// Length and moment arm dL/dangle of a cable over a surface turning about
// `axis` through its frame origin, continued over `steps` steps of `dAngle`;
// checks that consecutive lengths follow the trapezoid of the rates (no
// jump in length), that the arm changes smoothly (no jump in moment arm),
// and that the continued path is the one a cold solve finds.
void checkNoJumps(const cc::Surface& surface, const Vector3& O, const Vector3& T, const Vector3& axis, int steps,
                  double dAngle) {
  cc::CablePath path = cc::makeCablePath(O, T);
  cc::addWrap(path, surface);
  cc::CablePathState st;
  const Vector3 w = axis.normalized();
  double prevL = 0, prevArm = 0, prevArmChange = 0, worstTrapezoid = 0, worstArmJerk = 0, worstCold = 0;
  int shots = 0;
  for (int k = 0; k <= steps; ++k) {
    std::vector<Motion> frames(3);
    frames[1].R_WF = rotation(w, k * dAngle);
    frames[1].w_WF = w;  // 1 rad/s: lengthDot is the moment arm dL/dangle
    const cc::CableResult res = cc::updateCablePath(path, frames, st);
    REQUIRE_MESSAGE(res.ok(), "step " << k << ": " << res.message());
    REQUIRE(st.obstacles[1].active);
    if (k > 0) shots += res.shots;
    const double arm = st.lengthDot;
    if (k > 0) {
      worstTrapezoid = std::max(worstTrapezoid, std::abs(st.length - prevL - 0.5 * (arm + prevArm) * dAngle));
      const double change = arm - prevArm;
      if (k > 1) worstArmJerk = std::max(worstArmJerk, std::abs(change - prevArmChange));
      prevArmChange = change;
    }
    if (k % 50 == 0) {
      cc::CablePathState cold;
      REQUIRE(cc::solveForInitialCablePath(path, frames, cold).ok());
      worstCold = std::max(worstCold, std::abs(cold.length - st.length));
    }
    prevL = st.length;
    prevArm = arm;
  }
  // Trapezoid error ~ dAngle^3 |L'''| / 12; arm second differences ~ dAngle^2 |L''''|.
  CHECK_MESSAGE(worstTrapezoid < 1e-8, "trapezoid " << worstTrapezoid);
  CHECK_MESSAGE(worstArmJerk < 1e-5, "arm second difference " << worstArmJerk);
  CHECK_MESSAGE(worstCold < 1e-9, "continued vs cold " << worstCold);
  MESSAGE("shots per update: " << static_cast<double>(shots) / steps);
}

}  // namespace

TEST_CASE("ellipsoid: no jumps in length or moment arm along a smooth rotation") {
  checkNoJumps(cg::Ellipsoid<double>{Vector3(0.3, 0.2, 0.15)}, Vector3(-0.8, 0.1, 0.05), Vector3(0.7, 0.12, -0.1),
               Vector3(0.3, 0.2, 1), 400, 0.005);
}

TEST_CASE("torus: no jumps in length or moment arm along a smooth rotation") {
  // A ring in the xy plane; the cable runs over the top of its tube and
  // crosses it more and more obliquely as the ring turns about y.
  checkNoJumps(cg::Torus<double>{0.3, 0.08}, Vector3(-0.8, 0.35, 0.02), Vector3(0.7, 0.33, -0.03),
               Vector3(0, 1, 0.2), 400, 0.002);
}

TEST_CASE("the shortest-path guard: the shorter side wins, a longest geodesic is refused") {
  const double r = 0.3;
  const Vector3 O(-1, 0.1, 0), T(1, 0.05, 0);
  cc::CablePath path = cc::makeCablePath(O, T);
  cc::addWrap(path, cg::Sphere<double>{r});
  const std::vector<Motion> frames(3);
  cc::CablePathState st;
  REQUIRE(cc::solveForInitialCablePath(path, frames, st).ok());
  const double shortest = sphereCableLength(O, T, Vector3::Zero(), r);
  CHECK(nearRel(st.length, shortest, kClosedForm));
  CHECK(st.obstacles[1].P.p_W.y() > 0);  // over the top: the line passes above the centre
  // A near point below picks the other, longer side (still locally shortest).
  path.obstacles[1].near_S = Vector3(0, -r, 0);
  cc::CablePathState below;
  REQUIRE(cc::solveForInitialCablePath(path, frames, below).ok());
  CHECK(below.obstacles[1].P.p_W.y() < 0);
  CHECK(below.length > shortest + 0.05);
  // A loop over the far side of a sphere from two points on the same side
  // wraps more than half a great circle: it passes the antipode's conjugate
  // point, the cable would slip off, and the solver says so.
  cc::CablePath loop = cc::makeCablePath(Vector3(-0.1, -1, 0), Vector3(0.1, -1, 0));
  cc::addWrap(loop, cg::Sphere<double>{r}, Matrix3::Identity(), Vector3::Zero(), Vector3(0, r, 0));
  const cc::CableResult res = cc::solveForInitialCablePath(loop, frames, st);
  CHECK(res.status == cc::CableStatus::NotShortest);
  CHECK(res.obstacle == 1);
  CHECK(res.message().find("obstacle 1") != std::string::npos);
  // The same loop over a cylinder is a pulley: a valid wrap of angle pi + 2 asin(r'/...)
  cc::CablePath pulley = cc::makeCablePath(Vector3(-0.1, -1, 0), Vector3(0.1, -1, 0));
  cc::addWrap(pulley, cg::Cylinder<double>{r}, Matrix3::Identity(), Vector3::Zero(), Vector3(0, r, 0));
  REQUIRE(cc::solveForInitialCablePath(pulley, frames, st).ok());
  const double d = std::hypot(0.1, 1.0);
  const double phi = std::atan2(-1.0, -0.1) + 2 * kPi;  // direction of O from the axis, in (pi, 2 pi)
  const double wrap = 2 * ((phi - std::acos(r / d)) - kPi / 2);  // from the tangent point over the top, both sides
  CHECK(nearRel(st.obstacles[1].wrapAngle, wrap, kClosedForm));
  CHECK(nearRel(st.length, 2 * std::sqrt(d * d - r * r) + r * wrap, kClosedForm));
}

TEST_CASE("capstan friction: e^(mu theta) over a half wrap, its sign follows the slip, smooth near zero slip") {
  const double r = 0.2, mu = 0.3;
  cc::CablePath path = cc::makeCablePath(Vector3::Zero(), Vector3::Zero());
  // Both strands hang vertically from a pulley: the wrap angle is pi.
  cc::addWrap(path, cg::Cylinder<double>{r}, Matrix3::Identity(), Vector3::Zero(), Vector3(0, r, 0), mu);
  const auto solve = [&](double vO, double vT, cc::CablePathState& st) {
    std::vector<Motion> frames(3);
    frames[0] = fixedAt(Vector3(-r, -1, 0));
    frames[2] = fixedAt(Vector3(r, -1.2, 0));
    frames[0].v_WF = Vector3(0, -vO, 0);  // positive vO lengthens the origin strand
    frames[2].v_WF = Vector3(0, -vT, 0);
    REQUIRE(cc::solveForInitialCablePath(path, frames, st).ok());
    return frames;
  };
  const double tension = 10;
  // The ratio of the termination strand's tension to the origin's.
  const auto ratio = [&](double vO, double vT) {
    cc::CablePathState st;
    const std::vector<Motion> frames = solve(vO, vT, st);
    std::vector<cc::SpatialForce> F(3, cc::SpatialForce::Zero());
    cc::applyBodyForces(path, st, tension, frames, F);
    CHECK(nearRel(st.obstacles[1].wrapAngle, kPi, kClosedForm));
    // With friction the power is still that of the body forces.
    CHECK(nearRel(cc::calcCablePower(path, st, tension), powerOf(F, frames), kPowerMatch, tension));
    return F[2].tail<3>().norm() / F[0].tail<3>().norm();
  };
  CHECK(nearRel(ratio(1, 0), std::exp(-mu * kPi), 1e-5));   // origin side pulls: load side gets less
  CHECK(nearRel(ratio(-1, 0), std::exp(mu * kPi), 1e-5));   // origin side lets go: it holds more
  CHECK(nearRel(ratio(0.5, -0.5), std::exp(-mu * kPi), 1e-5));
  CHECK(nearRel(ratio(0.3, 0.3), 1.0, 1e-15));  // both strands lengthen alike: no slip, no friction
  // Through zero slip: exactly the documented smoothing, so continuous and
  // monotonic (the slip is half the origin strand's rate here).
  const double vs = path.options.frictionSlipVelocity;
  double prev = ratio(-4 * vs, 0);
  int monotonic = 0, matched = 0;
  for (int k = -15; k <= 16; ++k) {
    const double vO = k * vs / 4, slip = vO / 2;
    const double q = ratio(vO, 0);
    matched += nearRel(q, std::exp(-mu * kPi * slip / std::sqrt(slip * slip + vs * vs)), 1e-9);
    monotonic += q < prev;
    prev = q;
  }
  CHECK(matched == 32);
  CHECK(monotonic == 32);
}

TEST_CASE("cable spring: k x (1 + c xdot) for x > 0, clamped at zero; energy and dissipated power") {
  const double k = 200, L0 = 1.0, c = 0.5;
  auto f = cc::cableSpring(1.1, 0.4, k, L0, c);
  CHECK(nearRel(f.stretch, 0.1, 1e-14));
  CHECK(nearRel(f.tension, k * 0.1 * (1 + c * 0.4), 1e-14));
  CHECK(nearRel(f.energy, 0.5 * k * 0.01, 1e-14));
  CHECK(nearRel(f.powerLoss, k * 0.1 * c * 0.4 * 0.4, 1e-14));
  f = cc::cableSpring(0.9, 0.4, k, L0, c);  // slack
  CHECK(f.tension == 0);
  CHECK(f.energy == 0);
  CHECK(f.powerLoss == 0);
  f = cc::cableSpring(1.1, -3.0, k, L0, c);  // shortening fast: c xdot < -1
  CHECK(f.tension == 0);
  CHECK(nearRel(f.powerLoss, k * 0.1 * 3.0, 1e-14));  // still dissipates k x |xdot|
}

TEST_CASE("cable spring variation: the tension's and energy's change equal central differences, each side") {
  const double k = 200, L0 = 1.0, c = 0.5, h = 1e-7;
  // (L, L'): taut and damped; taut with the clamp active (c L' < -1); slack.
  for (const auto& [L, Ld] : {std::pair{1.1, 0.4}, std::pair{1.1, -3.0}, std::pair{0.9, 0.4}}) {
    for (const auto& [dL, dLd] : {std::pair{1.0, 0.0}, std::pair{0.0, 1.0}, std::pair{0.3, -0.7}}) {
      const cc::CableSpringVariation v = cc::cableSpringVariation(L, Ld, k, L0, c, dL, dLd);
      const cc::CableSpringForce plus = cc::cableSpring(L + h * dL, Ld + h * dLd, k, L0, c);
      const cc::CableSpringForce minus = cc::cableSpring(L - h * dL, Ld - h * dLd, k, L0, c);
      CHECK(v.tension == doctest::Approx((plus.tension - minus.tension) / (2 * h)).epsilon(1e-6));
      CHECK(v.energy == doctest::Approx((plus.energy - minus.energy) / (2 * h)).epsilon(1e-6));
    }
  }
}

TEST_CASE("failures are values that name the obstacle") {
  const std::vector<Motion> three(3);
  cc::CablePathState st;
  // The origin inside the sphere.
  cc::CablePath inside = cc::makeCablePath(Vector3(0.1, 0, 0), Vector3(2, 0, 0));
  cc::addWrap(inside, cg::Sphere<double>{0.5});
  cc::CableResult res = cc::solveForInitialCablePath(inside, three, st);
  CHECK(res.status == cc::CableStatus::PointInsideSurface);
  CHECK(res.obstacle == 0);
  CHECK(res.otherObstacle == 1);
  CHECK(res.message() ==
        "cable path: point of obstacle 0 lies inside the surface of obstacle 1; move the point or the surface");
  // Wrong number of frames; a non-finite frame.
  cc::CablePath path = cc::makeCablePath(Vector3(-1, 0.1, 0), Vector3(1, 0.1, 0));
  cc::addWrap(path, cg::Sphere<double>{0.3});
  res = cc::updateCablePath(path, std::vector<Motion>(2), st);
  CHECK(res.status == cc::CableStatus::InvalidInput);
  std::vector<Motion> bad(3);
  bad[1].p_WF.x() = std::nan("");
  res = cc::solveForInitialCablePath(path, bad, st);
  CHECK(res.status == cc::CableStatus::InvalidInput);
  CHECK(res.obstacle == 1);
  // No initial path within the iteration limit.
  path.options.maxInitialIterations = 1;
  res = cc::solveForInitialCablePath(path, three, st);
  CHECK(res.status == cc::CableStatus::NoInitialPath);
  CHECK(res.obstacle == 1);
  CHECK(res.message().find("obstacle 1") != std::string::npos);
  // Continuation over a jump too large for its iteration limit: obstacle and residual.
  path.options.maxInitialIterations = 80;
  path.options.maxIterations = 1;
  REQUIRE(cc::solveForInitialCablePath(path, three, st).ok());
  std::vector<Motion> moved(3);
  moved[1] = fixedAt(Vector3(0.02, 0.01, 0.01));
  res = cc::updateCablePath(path, moved, st);
  CHECK(res.status == cc::CableStatus::NotConverged);
  CHECK(res.obstacle == 1);
  CHECK(res.residual > path.options.tolerance);
  CHECK(res.message().find("obstacle 1") != std::string::npos);
  CHECK(res.message().find("residual") != std::string::npos);
  for (const auto& w : st.wraps) CHECK(w.P.allFinite());  // the best iterate, never NaN
}
