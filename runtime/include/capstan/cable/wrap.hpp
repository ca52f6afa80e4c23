#pragma once
// One wrapping surface: a geodesic of signed length shot from (P, tP, L),
// its natural variations (Scholz, Sherman, Stavness et al. 2015), the wrap
// angle, the shortest-path guard and the closest point of a straight
// segment (touchdown). Everything here is in the surface frame S.
//
// Natural geodesic variations. A geodesic is fixed by its start point P,
// start tangent tP and length L. Its four variations are
//   u      slide P along tP (the same curve, shifted along itself),
//   v      move P along bP, the tangent parallel transported,
//   theta  turn tP towards bP about nP,
//   L      lengthen the curve at Q.
// To first order (jd, jp and their derivatives at Q from WrapGeodesic):
//   dP  = tP du + bP dv
//   dQ  = tQ (du + dL) + bQ (jp dv + jd dtheta)
//   dtP = bP dtheta               - (tP' W_P dP) nP
//   dtQ = bQ (jpDot dv + jdDot dtheta) - (tQ' W_Q dQ) nQ
//   dn  = W dx,   db = dt x n + t x dn,
// with W = -(I - n n') H / |grad f| the shape operator at the point (dn/dx
// for x on the surface; positive definite on convex surfaces) and the normal
// parts of dt keeping t tangent (d(t . n) = 0). Jacobi fields carry the
// tangential parts: a variation j(s) b(s) turns the tangent by j'(s) b(s).

#include <capstan/cable/types.hpp>
#include <capstan/geometry/geodesic_shooting.hpp>
#include <capstan/geometry/geodesic_solvers.hpp>
#include <capstan/geometry/implicit_ops.hpp>
#include <capstan/geometry/surface_queries.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace capstan::cable {

using Matrix34 = Eigen::Matrix<double, 3, 4>;

// The smallest radius of curvature of the shape (m): the length that makes
// the variations u, v, L comparable to theta.
inline double lengthScale(const Surface& surface) {
  struct Visitor {
    double operator()(const geometry::Sphere<double>& s) const { return s.radius; }
    double operator()(const geometry::Cylinder<double>& s) const { return s.radius; }
    double operator()(const geometry::Ellipsoid<double>& s) const {
      const double a = s.radii.maxCoeff(), c = s.radii.minCoeff();
      return c * c / a;
    }
    double operator()(const geometry::Torus<double>& s) const {
      return std::min(s.tubeRadius, s.torusRadius - s.tubeRadius);
    }
  };
  return std::visit(Visitor{}, surface);
}

// Shape operator W (3x3, in S) at a surface point x: dn/dx.
template <class S> Matrix3 shapeOperator(const S& s, const Vector3& x) {
  const Vector3 g = s.gradient(x);
  const double glen = std::max(g.norm(), geometry::Tolerances<double>::tinyGradient);
  const Vector3 n = -g / glen;
  return -(Matrix3::Identity() - n * n.transpose()) * s.hessian(x) / glen;
}

// The geodesic of signed length L from P along t (P is projected onto the
// surface and t onto its tangent plane). For L < 0 the curve is shot along
// -t for |L| and read back in the forward convention: tangents and
// binormals negated, and the Jacobi values at Q become
//   jd(L) = -jd~(|L|), jdDot(L) = jd~'(|L|), jp(L) = jp~(|L|), jpDot(L) = -jp~'(|L|)
// (~: the backward shot's), since turning t towards b turns -t towards -b.
template <class S>
WrapGeodesic shootWrap(const S& s, const Vector3& P, const Vector3& t, double L,
                       const geometry::GeodesicOptions<double>& opt) {
  WrapGeodesic w;
  const bool backward = L < 0;
  w.curve = geometry::shootGeodesicInDirectionUntilLengthReached(s, P, backward ? Vector3(-t) : t, std::abs(L), opt);
  w.status = w.curve.status;
  if (!w.curve.ok() || w.curve.numPoints() < 1) {
    if (w.status == geometry::GeodesicStatus::Ok) w.status = geometry::GeodesicStatus::InvalidInput;
    return w;
  }
  const auto& g = w.curve;
  const double sign = backward ? -1.0 : 1.0;
  w.P = g.pointP();
  w.Q = g.pointQ();
  w.tP = sign * g.tangentP();
  w.nP = g.normalP();
  w.bP = w.tP.cross(w.nP);
  w.tQ = sign * g.tangentQ();
  w.nQ = g.normalQ();
  w.bQ = w.tQ.cross(w.nQ);
  w.length = sign * g.length();
  w.jd = sign * g.jacobiQ();
  w.jdDot = g.jacobiQDot();
  w.jp = g.jacobiTransQ();
  w.jpDot = sign * g.jacobiTransQDot();
  w.wrapAngle = backward ? 0.0 : g.turningAngle;
  return w;
}

// First-order changes of the contact points and their frames per unit of
// each natural variation (columns u, v, theta, L), in S.
struct WrapVariation {
  Matrix34 dP, dQ, dnP, dbP, dnQ, dbQ;
};

// dP and dQ alone (the header's first two lines).
inline Matrix34 variationOfP(const WrapGeodesic& w) {
  Matrix34 d;
  d << w.tP, w.bP, Vector3::Zero(), Vector3::Zero();
  return d;
}
inline Matrix34 variationOfQ(const WrapGeodesic& w) {
  Matrix34 d;
  d << w.tQ, w.jp * w.bQ, w.jd * w.bQ, w.tQ;
  return d;
}

template <class S> CAPSTAN_FLATTEN WrapVariation calcWrapVariation(const S& s, const WrapGeodesic& w) {
  WrapVariation d;
  const Vector3 zero = Vector3::Zero();
  // Each end moves along two directions only (P: tP, bP; Q: tQ, bQ), so
  // dn = W dx needs W applied to those two.
  const Matrix3 WP = shapeOperator(s, w.P), WQ = shapeOperator(s, w.Q);
  const Vector3 WtP = WP * w.tP, WbP = WP * w.bP, WtQ = WQ * w.tQ, WbQ = WQ * w.bQ;
  d.dP = variationOfP(w);
  d.dQ = variationOfQ(w);
  d.dnP << WtP, WbP, zero, zero;
  d.dnQ << WtQ, w.jp * WbQ, w.jd * WbQ, WtQ;
  // dt: the tangential turn, minus the normal part (t' W dx) n that keeps
  // t tangent.
  Matrix34 dtP, dtQ;
  dtP << -w.tP.dot(WtP) * w.nP, -w.tP.dot(WbP) * w.nP, w.bP, zero;
  const double tWtQ = w.tQ.dot(WtQ), tWbQ = w.tQ.dot(WbQ);
  dtQ << -tWtQ * w.nQ, w.jpDot * w.bQ - w.jp * tWbQ * w.nQ, w.jdDot * w.bQ - w.jd * tWbQ * w.nQ, -tWtQ * w.nQ;
  for (int c = 0; c < 4; ++c) {
    d.dbP.col(c) = Vector3(dtP.col(c)).cross(w.nP) + w.tP.cross(Vector3(d.dnP.col(c)));
    d.dbQ.col(c) = Vector3(dtQ.col(c)).cross(w.nQ) + w.tQ.cross(Vector3(d.dnQ.col(c)));
  }
  return d;
}

// The shooting parameters after a variation x = (du, dv, dtheta, dL):
// start point, start tangent, signed length (S).
struct ShootParameters {
  Vector3 P, t;
  double L;
};

inline ShootParameters varyShootParameters(const WrapGeodesic& w, const Eigen::Vector4d& x) {
  const double c = std::cos(x[2]), sn = std::sin(x[2]);
  return {w.P + w.tP * x[0] + w.bP * x[1], c * w.tP + sn * w.bP, w.length + x[3]};
}

// The variation applied to first order, without a new shot: the ends,
// their frames and the length; interior points move by their Jacobi fields
// (j_p(s) dv + j_d(s) dtheta along b(s), du along t(s)). Its error is second
// order in x; the solver uses it only when that is below its tolerance.
template <class S> CAPSTAN_FLATTEN void applyLinearVariation(const S& s, WrapGeodesic& w, const Eigen::Vector4d& x) {
  const Vector3 P = w.P + variationOfP(w) * x, Q = w.Q + variationOfQ(w) * x;
  // The new frame at p: the normal there, the tangent turned in the tangent
  // plane by `turn` and re-projected (which transports it to first order).
  const auto frameAt = [&](const Vector3& p, const Vector3& turn, Vector3& t, Vector3& n, Vector3& b) {
    n = geometry::calcSurfaceUnitNormal(s, p);
    Vector3 tt = t + turn;
    tt -= n * n.dot(tt);
    t = tt.normalized();
    b = t.cross(n);
  };
  frameAt(P, w.bP * x[2], w.tP, w.nP, w.bP);
  frameAt(Q, w.bQ * (w.jpDot * x[1] + w.jdDot * x[2]), w.tQ, w.nQ, w.bQ);
  auto& g = w.curve;
  if (w.length >= 0) {
    for (int i = 1; i + 1 < g.numPoints(); ++i) {
      const auto k = static_cast<std::size_t>(i);
      g.points[k] += g.tangents[k] * x[0] +
                     g.binormals[k] * (g.jacobiTransPtoQ[k].x() * x[1] + g.jacobiPtoQ[k].x() * x[2]);
    }
  }
  w.P = P;
  w.Q = Q;
  w.length += x[3];
  if (g.numPoints() > 0) {
    g.points.front() = P;
    g.points.back() = Q;
    g.arcLengths.back() = std::abs(w.length);
  }
}

// The shortest-path guard: a geodesic is locally shortest between its ends
// only if no point of it is conjugate to P, i.e. the directional Jacobi
// field jd(s) stays positive for 0 < s <= L (a great circle longer than
// half the sphere fails). Checked at every stored point, except on a
// geodesic shorter than pi times the surface's smallest radius of
// curvature rho (lengthScale): its Gaussian curvature is at most 1/rho^2,
// so by the Morse-Schoenberg comparison no point conjugate to P comes
// before pi rho. That also keeps a wrap just touched down (a few nm long,
// whose Jacobi values are rounding noise) from being taken for a longest
// geodesic.
inline bool passesConjugatePoint(const WrapGeodesic& w, double lengthScale) {
  if (!(w.length > 0) || w.length < std::numbers::pi * lengthScale) return false;
  const auto& g = w.curve;
  const double L = g.length();
  for (int i = 1; i < g.numPoints(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (g.arcLengths[k] > 1e-9 * L && !(g.jacobiPtoQ[k].x() > 0)) return true;
  }
  return !(w.jd > 0);
}

// Touchdown witness: the point of the segment A -> B (S) closest to the
// surface, tracked from `guess` (capstan::geometry::trackSeparationFromLine:
// height > 0 clear, < 0 penetrating at the deepest point). `within` tells
// whether the line's point lies strictly between A and B.
struct SegmentSeparation {
  Vector3 pointOnSurface, pointOnLine;
  double height;
  bool within;
  bool converged;
};

template <class S>
SegmentSeparation trackSegment(const S& s, const Vector3& A, const Vector3& B, const Vector3& guess) {
  const Vector3 d = B - A;
  const double len = d.norm();
  const Vector3 l = d / len;
  const auto r = geometry::trackSeparationFromLine(s, A, l, guess);
  const double along = (r.pointOnLine - A).dot(l);
  return {r.pointOnSurface, r.pointOnLine, r.height, along > 0 && along < len, r.converged};
}

// The segment's closest (or deepest) point from scratch: tracked from the
// surface points nearest to nine points along it; the lowest converged
// height whose line point lies within the segment wins.
template <class S> std::optional<SegmentSeparation> findSegmentSeparation(const S& s, const Vector3& A, const Vector3& B) {
  std::optional<SegmentSeparation> best;
  for (int k = 0; k <= 8; ++k) {
    const Vector3 X = A + (B - A) * (k / 8.0);
    const Vector3 guess = geometry::findNearestPoint(s, X).point;
    const SegmentSeparation sep = trackSegment(s, A, B, guess);
    if (!sep.converged || !sep.within) continue;
    if (!best || sep.height < best->height) best = sep;
  }
  return best;
}

// f > 0: the point lies inside the solid.
inline bool isInside(const Surface& surface, const Vector3& p_S) {
  return std::visit([&](const auto& s) { return s.value(p_S) > 0; }, surface);
}

}  // namespace capstan::cable
