#pragma once
// Shape-specific global queries: nearest point, ray intersection, support
// point and bounding sphere. Each is a free-function overload per shape; all
// inputs and outputs are expressed in the surface frame S.
//
//   findNearestPoint(s, p_SQ)      -> NearestPoint{point p_SP, inside, normal n_S}
//       the globally nearest surface point P to the query point Q; `inside`
//       is true when Q is inside the solid (or on its surface); `normal` is the
//       outward unit normal at P. Cost: O(1) flops, Ellipsoid ~ 10 Newton steps.
//   intersectsRay(s, p_SO, d_S)    -> std::optional<RayHit{distance, normal}>
//       the first surface crossing at distance >= 0 along the unit direction
//       d from origin O (from inside the solid that is the exit point).
//   calcSupportPoint(s, d_S)       -> point maximizing d . p over the surface;
//       std::optional for infinite shapes (no support point in most directions).
//   getBoundingSphere(s)           -> BoundingSphere (std::optional for
//       infinite shapes, which have none).

#include <capstan/geometry/surfaces.hpp>
#include <capstan/geometry/types.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace capstan::geometry {

template <class Scalar> struct NearestPoint {
  Vec3<Scalar> point;   // p_SP, on the surface
  bool inside;          // query point inside the solid (or on its surface)
  Vec3<Scalar> normal;  // outward unit normal at P, in S
};

template <class Scalar> struct RayHit {
  Scalar distance;      // m, from the ray origin along the ray direction
  Vec3<Scalar> normal;  // outward unit normal at the hit point, in S
};

template <class Scalar> struct BoundingSphere {
  Vec3<Scalar> center;  // in S
  Scalar radius;        // m
};

namespace detail {

// Smallest root >= 0 of t^2 + 2 b t + c = 0, if any.
template <class Scalar> std::optional<Scalar> firstNonnegativeRoot(Scalar b, Scalar c) {
  using std::sqrt;
  const Scalar disc = b * b - c;
  if (disc < Scalar(0)) return std::nullopt;
  const Scalar s = sqrt(disc);
  // Stable pair of roots: q = -(b + sign(b) s), t1 = q, t2 = c / q.
  const Scalar q = b >= Scalar(0) ? -(b + s) : -(b - s);
  Scalar t1 = q, t2 = q != Scalar(0) ? c / q : Scalar(0);
  if (t1 > t2) std::swap(t1, t2);
  if (t1 >= Scalar(0)) return t1;
  if (t2 >= Scalar(0)) return t2;
  return std::nullopt;
}

}  // namespace detail

// ---------------------------------------------------------------- Sphere
template <class Scalar>
NearestPoint<Scalar> findNearestPoint(const Sphere<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SQ) {
  const Scalar len = p_SQ.norm();
  const Vec3<Scalar> n = len > Scalar(0) ? Vec3<Scalar>(p_SQ / len) : Vec3<Scalar>::UnitX();
  return {s.radius * n, len <= s.radius, n};
}

template <class Scalar>
std::optional<RayHit<Scalar>> intersectsRay(const Sphere<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SO,
                                            const NonDeduced<Vec3<Scalar>>& d_S) {
  const auto t = detail::firstNonnegativeRoot(p_SO.dot(d_S), p_SO.squaredNorm() - s.radius * s.radius);
  if (!t) return std::nullopt;
  return RayHit<Scalar>{*t, ((p_SO + *t * d_S) / s.radius).normalized()};
}

template <class Scalar> Vec3<Scalar> calcSupportPoint(const Sphere<Scalar>& s, const NonDeduced<Vec3<Scalar>>& d_S) {
  return s.radius * d_S.normalized();
}

template <class Scalar> BoundingSphere<Scalar> getBoundingSphere(const Sphere<Scalar>& s) {
  return {Vec3<Scalar>::Zero(), s.radius};
}

// ---------------------------------------------------------------- Cylinder
template <class Scalar>
NearestPoint<Scalar> findNearestPoint(const Cylinder<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SQ) {
  using std::sqrt;
  const Scalar rho = sqrt(p_SQ.x() * p_SQ.x() + p_SQ.y() * p_SQ.y());
  const Vec3<Scalar> n =
      rho > Scalar(0) ? Vec3<Scalar>(p_SQ.x() / rho, p_SQ.y() / rho, Scalar(0)) : Vec3<Scalar>::UnitX();
  return {Vec3<Scalar>(s.radius * n.x(), s.radius * n.y(), p_SQ.z()), rho <= s.radius, n};
}

template <class Scalar>
std::optional<RayHit<Scalar>> intersectsRay(const Cylinder<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SO,
                                            const NonDeduced<Vec3<Scalar>>& d_S) {
  const Scalar a = d_S.x() * d_S.x() + d_S.y() * d_S.y();
  if (a <= Tolerances<Scalar>::eps) return std::nullopt;  // parallel to the axis
  const Scalar b = (p_SO.x() * d_S.x() + p_SO.y() * d_S.y()) / a;
  const Scalar c = (p_SO.x() * p_SO.x() + p_SO.y() * p_SO.y() - s.radius * s.radius) / a;
  const auto t = detail::firstNonnegativeRoot(b, c);
  if (!t) return std::nullopt;
  const Vec3<Scalar> p = p_SO + *t * d_S;
  return RayHit<Scalar>{*t, Vec3<Scalar>(p.x(), p.y(), Scalar(0)).normalized()};
}

// Bounded only for directions perpendicular to the axis.
template <class Scalar>
std::optional<Vec3<Scalar>> calcSupportPoint(const Cylinder<Scalar>& s, const NonDeduced<Vec3<Scalar>>& d_S) {
  if (d_S.z() != Scalar(0)) return std::nullopt;
  return s.radius * d_S.normalized();
}

template <class Scalar> std::optional<BoundingSphere<Scalar>> getBoundingSphere(const Cylinder<Scalar>&) {
  return std::nullopt;
}

// ---------------------------------------------------------------- Ellipsoid
namespace detail {

// Nearest point to y (all y_i >= 0) on the ellipsoid with semi-axes e, using
// only the axes flagged in `active` (the others stay 0). The nearest point is
// x_i = e_i^2 y_i / (t + e_i^2) with t the largest root of
// F(t) = sum (e_i y_i / (t + e_i^2))^2 - 1, unless y lies in a coordinate plane
// of a shorter axis and close enough to the centre that the nearest point
// leaves that plane (then it is found in closed form).
template <class Scalar>
Vec3<Scalar> nearestOnEllipsoidOctant(const Vec3<Scalar>& e, const Vec3<Scalar>& y, std::array<bool, 3> active) {
  using std::sqrt;
  int k = -1, j = -1;  // k: shortest axis with y > 0; j: shortest axis with y == 0
  for (int i = 0; i < 3; ++i) {
    if (!active[i]) continue;
    if (y[i] > Scalar(0)) {
      if (k < 0 || e[i] < e[k]) k = i;
    } else if (j < 0 || e[i] < e[j]) {
      j = i;
    }
  }
  Vec3<Scalar> x = Vec3<Scalar>::Zero();
  if (k < 0) {  // y is the centre: the nearest points are the ends of the shortest axis
    x[j] = e[j];
    return x;
  }
  if (j >= 0 && e[j] < e[k]) {
    Scalar s = 0;
    for (int i = 0; i < 3; ++i) {
      if (!active[i] || y[i] <= Scalar(0)) continue;
      x[i] = e[i] * e[i] * y[i] / (e[i] * e[i] - e[j] * e[j]);
      s += (x[i] / e[i]) * (x[i] / e[i]);
    }
    if (s < Scalar(1)) {
      x[j] = e[j] * sqrt(Scalar(1) - s);
      return x;
    }
    active[j] = false;
    return nearestOnEllipsoidOctant(e, y, active);
  }
  // Regular case: bracket the root, then Newton from the left (F is convex
  // and decreasing on (-e_k^2, inf), so the iterates increase monotonically).
  Scalar sumSq = 0;
  for (int i = 0; i < 3; ++i)
    if (active[i] && y[i] > Scalar(0)) sumSq += e[i] * e[i] * y[i] * y[i];
  Scalar lo = -e[k] * e[k] + e[k] * y[k];
  Scalar hi = -e[k] * e[k] + sqrt(sumSq);
  Scalar t = lo;
  constexpr int kMaxIterations = 200;
  for (int it = 0; it < kMaxIterations; ++it) {
    Scalar F = -1, dF = 0;
    for (int i = 0; i < 3; ++i) {
      if (!active[i] || y[i] <= Scalar(0)) continue;
      const Scalar r = e[i] * y[i] / (t + e[i] * e[i]);
      F += r * r;
      dF -= Scalar(2) * r * r / (t + e[i] * e[i]);
    }
    if (F > Scalar(0)) lo = t; else hi = t;
    Scalar tNext = dF < Scalar(0) ? t - F / dF : (lo + hi) / 2;
    if (!(tNext > lo && tNext < hi)) tNext = (lo + hi) / 2;
    if (tNext == t || hi - lo <= Scalar(4) * Tolerances<Scalar>::eps * (std::abs(lo) + std::abs(hi))) {
      t = tNext;
      break;
    }
    t = tNext;
  }
  for (int i = 0; i < 3; ++i)
    if (active[i] && y[i] > Scalar(0)) x[i] = e[i] * e[i] * y[i] / (t + e[i] * e[i]);
  return x;
}

}  // namespace detail

template <class Scalar>
NearestPoint<Scalar> findNearestPoint(const Ellipsoid<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SQ) {
  const Vec3<Scalar> y = p_SQ.cwiseAbs();
  Vec3<Scalar> x = detail::nearestOnEllipsoidOctant(s.radii, y, {true, true, true});
  for (int i = 0; i < 3; ++i)
    if (p_SQ[i] < Scalar(0)) x[i] = -x[i];
  const Vec3<Scalar> n = x.cwiseQuotient(s.radii.cwiseProduct(s.radii)).normalized();
  return {x, s.value(p_SQ) >= Scalar(0), n};
}

template <class Scalar>
std::optional<RayHit<Scalar>> intersectsRay(const Ellipsoid<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SO,
                                            const NonDeduced<Vec3<Scalar>>& d_S) {
  // In coordinates scaled by 1/radii the ellipsoid is the unit sphere and the
  // ray parameter is unchanged.
  const Vec3<Scalar> o = p_SO.cwiseQuotient(s.radii), d = d_S.cwiseQuotient(s.radii);
  const Scalar a = d.squaredNorm();
  const auto t = detail::firstNonnegativeRoot(o.dot(d) / a, (o.squaredNorm() - Scalar(1)) / a);
  if (!t) return std::nullopt;
  const Vec3<Scalar> p = p_SO + *t * d_S;
  return RayHit<Scalar>{*t, p.cwiseQuotient(s.radii.cwiseProduct(s.radii)).normalized()};
}

template <class Scalar> Vec3<Scalar> calcSupportPoint(const Ellipsoid<Scalar>& s, const NonDeduced<Vec3<Scalar>>& d_S) {
  const Vec3<Scalar> r2d = s.radii.cwiseProduct(s.radii).cwiseProduct(d_S);
  const Scalar denom = s.radii.cwiseProduct(d_S).norm();
  // A zero direction has no support point; return the origin like the Sphere
  // (whose normalized() leaves a zero vector unchanged) instead of 0/0.
  if (denom == Scalar(0)) return Vec3<Scalar>::Zero();
  return r2d / denom;
}

template <class Scalar> BoundingSphere<Scalar> getBoundingSphere(const Ellipsoid<Scalar>& s) {
  return {Vec3<Scalar>::Zero(), s.radii.maxCoeff()};
}

// ---------------------------------------------------------------- Torus
template <class Scalar>
NearestPoint<Scalar> findNearestPoint(const Torus<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SQ) {
  using std::sqrt;
  const Scalar rho = sqrt(p_SQ.x() * p_SQ.x() + p_SQ.y() * p_SQ.y());
  // C: the nearest point on the centre circle (any one when Q is on the axis).
  const Vec3<Scalar> u =
      rho > Scalar(0) ? Vec3<Scalar>(p_SQ.x() / rho, p_SQ.y() / rho, Scalar(0)) : Vec3<Scalar>::UnitX();
  const Vec3<Scalar> p_SC = s.torusRadius * u;
  const Vec3<Scalar> r_CQ = p_SQ - p_SC;
  const Scalar len = r_CQ.norm();
  const Vec3<Scalar> n = len > Scalar(0) ? Vec3<Scalar>(r_CQ / len) : u;
  return {p_SC + s.tubeRadius * n, len <= s.tubeRadius, n};
}

namespace detail {

// The real roots of the polynomial a[0] + a[1] t + ... + a[N] t^N (a[N] !=
// 0), ascending, into `roots`; returns how many. Between consecutive real
// roots of the derivative (found the same way, down to degree 1) and the
// Cauchy bound 1 + max |a[i] / a[N]| the polynomial is monotonic, so each
// interval holds at most one root: bracketed Newton finds it, bisecting
// when a step leaves the bracket. A derivative root where the polynomial is
// zero to its rounding error (a double root, which no sign change shows) is
// a root too. Plain loops rather than the eigenvalues of the companion
// matrix: Eigen's EigenSolver<Matrix4> took a quarter of the g++ time of
// every generated driver that includes the cable solver.
template <int N, class Scalar>
int realPolynomialRoots(const std::array<Scalar, N + 1>& a, std::array<Scalar, N>& roots) {
  using std::abs;
  if constexpr (N == 1) {
    roots[0] = -a[0] / a[1];
    return 1;
  } else {
    const auto value = [&](Scalar t) {
      Scalar v = a[N];
      for (int i = N - 1; i >= 0; --i) v = v * t + a[static_cast<std::size_t>(i)];
      return v;
    };
    // Horner's rounding error at t, the size below which a value is zero.
    const auto roundoff = [&](Scalar t) {
      Scalar v = abs(a[N]);
      for (int i = N - 1; i >= 0; --i) v = v * abs(t) + abs(a[static_cast<std::size_t>(i)]);
      return Scalar(4 * N) * Tolerances<Scalar>::eps * v;
    };
    std::array<Scalar, N> da;
    for (int i = 0; i < N; ++i) da[static_cast<std::size_t>(i)] = Scalar(i + 1) * a[static_cast<std::size_t>(i + 1)];
    std::array<Scalar, N - 1> critical;
    const int nc = realPolynomialRoots<N - 1, Scalar>(da, critical);
    Scalar bound(0);
    for (int i = 0; i < N; ++i) bound = std::max(bound, Scalar(abs(a[static_cast<std::size_t>(i)] / a[N])));
    bound += Scalar(1);
    int n = 0;
    const auto add = [&](Scalar t) {
      if (n == 0 || t != roots[static_cast<std::size_t>(n - 1)]) roots[static_cast<std::size_t>(n++)] = t;
    };
    Scalar lo = -bound, flo = value(lo);
    for (int k = 0; k <= nc; ++k) {
      const Scalar hi = k < nc ? critical[static_cast<std::size_t>(k)] : bound;
      const Scalar fhi = value(hi);
      if ((flo < Scalar(0)) != (fhi < Scalar(0)) && flo != Scalar(0) && fhi != Scalar(0)) {
        Scalar l = lo, h = hi, t = (lo + hi) / 2;
        const bool rising = flo < Scalar(0);
        for (int it = 0; it < 200 && h - l > Scalar(2) * Tolerances<Scalar>::eps * std::max(abs(l), abs(h)); ++it) {
          const Scalar f = value(t);
          if (f == Scalar(0)) break;
          if ((f < Scalar(0)) == rising) l = t;
          else h = t;
          Scalar df = da[N - 1];
          for (int i = N - 2; i >= 0; --i) df = df * t + da[static_cast<std::size_t>(i)];
          const Scalar newton = df != Scalar(0) ? Scalar(t - f / df) : l;
          t = newton > l && newton < h ? newton : (l + h) / 2;
        }
        add(t);
      }
      if (k < nc && abs(fhi) <= roundoff(hi)) add(hi);
      lo = hi;
      flo = fhi;
    }
    return n;
  }
}

}  // namespace detail

// Solves the quartic (|p|^2 + R^2 - r^2)^2 = 4 R^2 (px^2 + py^2), p = O + t d,
// after moving O to the point of the ray nearest the torus centre, for its
// real roots (detail::realPolynomialRoots).
template <class Scalar>
std::optional<RayHit<Scalar>> intersectsRay(const Torus<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SO,
                                            const NonDeduced<Vec3<Scalar>>& d_S) {
  using std::abs;
  const Scalar R = s.torusRadius, r = s.tubeRadius;
  const Scalar t0 = -p_SO.dot(d_S);
  const Vec3<Scalar> o = p_SO + t0 * d_S;
  const Scalar B = o.dot(d_S), G = o.squaredNorm() + R * R - r * r;
  const Scalar dxy2 = d_S.x() * d_S.x() + d_S.y() * d_S.y();
  const Scalar odxy = o.x() * d_S.x() + o.y() * d_S.y();
  const Scalar oxy2 = o.x() * o.x() + o.y() * o.y();
  const Scalar c3 = 4 * B, c2 = 4 * B * B + 2 * G - 4 * R * R * dxy2;
  const Scalar c1 = 4 * B * G - 8 * R * R * odxy, c0 = G * G - 4 * R * R * oxy2;
  std::array<Scalar, 4> roots;
  const int nRoots = detail::realPolynomialRoots<4, Scalar>({c0, c1, c2, c3, Scalar(1)}, roots);
  constexpr Scalar kSurfaceTolerance = Scalar(1e-8); // on f, dimensionless
  std::optional<Scalar> best;
  for (int i = 0; i < nRoots; ++i) {
    const Scalar t = roots[static_cast<std::size_t>(i)];
    if (abs(s.value(o + t * d_S)) > kSurfaceTolerance) continue;
    const Scalar dist = t + t0;
    if (dist >= Scalar(0) && (!best || dist < *best)) best = dist;
  }
  if (!best) return std::nullopt;
  const Vec3<Scalar> g = s.gradient(p_SO + *best * d_S);
  return RayHit<Scalar>{*best, (-g).normalized()};
}

template <class Scalar> Vec3<Scalar> calcSupportPoint(const Torus<Scalar>& s, const NonDeduced<Vec3<Scalar>>& d_S) {
  using std::sqrt;
  // The torus is the Minkowski sum of its centre circle and a ball of radius r.
  const Vec3<Scalar> d = d_S.normalized();
  const Scalar dxy = sqrt(d.x() * d.x() + d.y() * d.y());
  const Vec3<Scalar> u =
      dxy > Scalar(0) ? Vec3<Scalar>(d.x() / dxy, d.y() / dxy, Scalar(0)) : Vec3<Scalar>::UnitX();
  return s.torusRadius * u + s.tubeRadius * d;
}

template <class Scalar> BoundingSphere<Scalar> getBoundingSphere(const Torus<Scalar>& s) {
  return {Vec3<Scalar>::Zero(), s.torusRadius + s.tubeRadius};
}

// ---------------------------------------------------------------- HalfSpace
template <class Scalar>
NearestPoint<Scalar> findNearestPoint(const HalfSpace<Scalar>&, const NonDeduced<Vec3<Scalar>>& p_SQ) {
  return {Vec3<Scalar>(Scalar(0), p_SQ.y(), p_SQ.z()), p_SQ.x() >= Scalar(0), -Vec3<Scalar>::UnitX()};
}

template <class Scalar>
std::optional<RayHit<Scalar>> intersectsRay(const HalfSpace<Scalar>&, const NonDeduced<Vec3<Scalar>>& p_SO,
                                            const NonDeduced<Vec3<Scalar>>& d_S) {
  using std::abs;
  if (abs(d_S.x()) <= Tolerances<Scalar>::eps) return std::nullopt;  // parallel to the plane
  const Scalar t = -p_SO.x() / d_S.x();
  if (t < Scalar(0)) return std::nullopt;
  return RayHit<Scalar>{t, -Vec3<Scalar>::UnitX()};
}

// Bounded only in the direction of the outward normal -x (any plane point).
template <class Scalar>
std::optional<Vec3<Scalar>> calcSupportPoint(const HalfSpace<Scalar>&, const NonDeduced<Vec3<Scalar>>& d_S) {
  if (d_S.x() < Scalar(0) && d_S.y() == Scalar(0) && d_S.z() == Scalar(0)) return Vec3<Scalar>::Zero();
  return std::nullopt;
}

template <class Scalar> std::optional<BoundingSphere<Scalar>> getBoundingSphere(const HalfSpace<Scalar>&) {
  return std::nullopt;
}

// ---------------------------------------------------------------- Brick
template <class Scalar>
NearestPoint<Scalar> findNearestPoint(const Brick<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SQ) {
  const Vec3<Scalar> clamped = p_SQ.cwiseMax(-s.halfLengths).cwiseMin(s.halfLengths);
  if (clamped != p_SQ) {  // outside: the clamped point, normal towards Q
    return {clamped, false, (p_SQ - clamped).normalized()};
  }
  const int k = s.activeAxis(p_SQ);
  const Scalar sign = p_SQ[k] >= Scalar(0) ? Scalar(1) : Scalar(-1);
  Vec3<Scalar> p = p_SQ;
  p[k] = sign * s.halfLengths[k];
  Vec3<Scalar> n = Vec3<Scalar>::Zero();
  n[k] = sign;
  return {p, true, n};
}

// Slab method: entry point from outside, exit point from inside.
template <class Scalar>
std::optional<RayHit<Scalar>> intersectsRay(const Brick<Scalar>& s, const NonDeduced<Vec3<Scalar>>& p_SO,
                                            const NonDeduced<Vec3<Scalar>>& d_S) {
  // A zero direction is no ray: from inside it would cross no slab at all.
  if (d_S.isZero(Scalar(0))) return std::nullopt;
  Scalar tEnter = -std::numeric_limits<Scalar>::infinity(), tExit = std::numeric_limits<Scalar>::infinity();
  int axisEnter = -1, axisExit = -1;
  for (int i = 0; i < 3; ++i) {
    if (d_S[i] == Scalar(0)) {
      if (p_SO[i] < -s.halfLengths[i] || p_SO[i] > s.halfLengths[i]) return std::nullopt;
      continue;
    }
    Scalar t1 = (-s.halfLengths[i] - p_SO[i]) / d_S[i], t2 = (s.halfLengths[i] - p_SO[i]) / d_S[i];
    if (t1 > t2) std::swap(t1, t2);
    if (t1 > tEnter) { tEnter = t1; axisEnter = i; }
    if (t2 < tExit) { tExit = t2; axisExit = i; }
  }
  if (tEnter > tExit || tExit < Scalar(0)) return std::nullopt;
  const bool fromOutside = tEnter >= Scalar(0);
  const Scalar t = fromOutside ? tEnter : tExit;
  const int k = fromOutside ? axisEnter : axisExit;
  // No slab set the hit (e.g. NaN input makes every comparison false): no
  // face to report, and n[-1] would be out of bounds.
  if (k < 0) return std::nullopt;
  Vec3<Scalar> n = Vec3<Scalar>::Zero();
  n[k] = (p_SO[k] + t * d_S[k]) >= Scalar(0) ? Scalar(1) : Scalar(-1);
  return RayHit<Scalar>{t, n};
}

template <class Scalar> Vec3<Scalar> calcSupportPoint(const Brick<Scalar>& s, const NonDeduced<Vec3<Scalar>>& d_S) {
  Vec3<Scalar> p;
  for (int i = 0; i < 3; ++i) p[i] = d_S[i] >= Scalar(0) ? s.halfLengths[i] : -s.halfLengths[i];
  return p;
}

template <class Scalar> BoundingSphere<Scalar> getBoundingSphere(const Brick<Scalar>& s) {
  return {Vec3<Scalar>::Zero(), s.halfLengths.norm()};
}

}  // namespace capstan::geometry
