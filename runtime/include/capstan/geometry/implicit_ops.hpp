#pragma once
// Differential geometry of any implicit surface (the ImplicitSurface concept
// of surfaces.hpp: value, gradient, hessian), plus the two local solvers that
// need only f and its derivatives, and the curvature utilities that need no
// surface at all. Every point and direction is expressed in the surface frame S.
//
// Sign conventions: f > 0 inside; outward normal n = -g / |g| with g = grad f;
// curvatures are positive where the surface is convex (sphere: +1/r).
//
//   calcSurfaceValue / Gradient / Hessian      f, g, H at p_SP
//   calcSurfaceUnitNormal(s, p)                n; at a singular point (g = 0)
//       the normal at p + sqrt(eps) e_i for the first i that works, else +z
//   calcGaussianCurvature(g, H)                K = g' adj(H) g / |g|^4  (Goldman 2005)
//   calcSurfaceCurvatureInDirection(s, p, t)   k_t = -t' H t / |g|, t unit tangent
//   calcSurfacePrincipalCurvatures(s, p)       (kmax, kmin) and R_SP = [dmax dmin n]
//   projectDownhillToNearestPoint(s, p_SQ)     local nearest surface point (Newton)
//   trackSeparationFromLine(s, A, l, guess)    closest / deepest point to a line
//   combineParaboloids(R_SP1, k1, x2, k2)      relative curvature of two contacting
//                                              paraboloids, with directions
//   combineParaboloidCurvatures(...)           the same, curvatures only
//   evalParametricCurvature(...)               principal curvatures from a (u, v)
//                                              parameterization (Struik 1961, ch. 2)

#include <capstan/geometry/types.hpp>
#include <capstan/linear_solve.hpp>

#include <cmath>

namespace capstan::geometry {

template <class Surface> using ScalarOf = typename Surface::ScalarType;

template <class Surface>
ScalarOf<Surface> calcSurfaceValue(const Surface& s, const Vec3<ScalarOf<Surface>>& p_SP) {
  return s.value(p_SP);
}
template <class Surface>
Vec3<ScalarOf<Surface>> calcSurfaceGradient(const Surface& s, const Vec3<ScalarOf<Surface>>& p_SP) {
  return s.gradient(p_SP);
}
template <class Surface>
Mat33<ScalarOf<Surface>> calcSurfaceHessian(const Surface& s, const Vec3<ScalarOf<Surface>>& p_SP) {
  return s.hessian(p_SP);
}

// Outward unit normal; never NaN (see the fallback above). Cost: one gradient.
template <class Surface>
CAPSTAN_FLATTEN Vec3<ScalarOf<Surface>> calcSurfaceUnitNormal(const Surface& s, const Vec3<ScalarOf<Surface>>& p_SP) {
  using Scalar = ScalarOf<Surface>;
  Vec3<Scalar> g = s.gradient(p_SP);
  Scalar len = g.norm();
  for (int i = 0; i < 3 && !(len > Tolerances<Scalar>::tinyGradient); ++i) {
    Vec3<Scalar> p = p_SP;
    p[i] += Tolerances<Scalar>::sqrtEps() * (Scalar(1) + p_SP.norm());
    g = s.gradient(p);
    len = g.norm();
  }
  if (!(len > Tolerances<Scalar>::tinyGradient)) return Vec3<Scalar>::UnitZ();
  return -g / len;
}

// Adjugate of a symmetric 3x3 matrix (itself symmetric; ~20 flops).
template <class Scalar> Mat33<Scalar> adjugateOfSymmetric(const Mat33<Scalar>& H) {
  Mat33<Scalar> A;
  A(0, 0) = H(1, 1) * H(2, 2) - H(1, 2) * H(1, 2);
  A(0, 1) = H(0, 2) * H(1, 2) - H(0, 1) * H(2, 2);
  A(0, 2) = H(0, 1) * H(1, 2) - H(0, 2) * H(1, 1);
  A(1, 1) = H(0, 0) * H(2, 2) - H(0, 2) * H(0, 2);
  A(1, 2) = H(0, 1) * H(0, 2) - H(0, 0) * H(1, 2);
  A(2, 2) = H(0, 0) * H(1, 1) - H(0, 1) * H(0, 1);
  A(1, 0) = A(0, 1);
  A(2, 0) = A(0, 2);
  A(2, 1) = A(1, 2);
  return A;
}

// u' M u for symmetric M, written out (~15 flops; Eigen's 3x3 product is
// often not inlined at -O2, which costs more than the arithmetic).
template <class Scalar> Scalar symmetricQuadraticForm(const Mat33<Scalar>& M, const Vec3<Scalar>& u) {
  return M(0, 0) * u[0] * u[0] + M(1, 1) * u[1] * u[1] + M(2, 2) * u[2] * u[2] +
         Scalar(2) * (M(0, 1) * u[0] * u[1] + M(0, 2) * u[0] * u[2] + M(1, 2) * u[1] * u[2]);
}

// Gaussian curvature from the gradient and Hessian at one point (~50 flops).
template <class Scalar> Scalar calcGaussianCurvature(const Vec3<Scalar>& g, const NonDeduced<Mat33<Scalar>>& H) {
  const Scalar g2 = g.squaredNorm();
  if (!(g2 > Scalar(0))) return Scalar(0);
  return symmetricQuadraticForm(adjugateOfSymmetric(H), g) / (g2 * g2);
}

template <class Surface>
ScalarOf<Surface> calcGaussianCurvature(const Surface& s, const Vec3<ScalarOf<Surface>>& p_SP) {
  return calcGaussianCurvature(s.gradient(p_SP), s.hessian(p_SP));
}

// Normal curvature in the unit tangent direction t_S (1/m); 0 at a singular point.
template <class Surface>
ScalarOf<Surface> calcSurfaceCurvatureInDirection(const Surface& s, const Vec3<ScalarOf<Surface>>& p_SP,
                                                  const Vec3<ScalarOf<Surface>>& t_S) {
  using Scalar = ScalarOf<Surface>;
  const Scalar glen = s.gradient(p_SP).norm();
  if (!(glen > Tolerances<Scalar>::tinyGradient)) return Scalar(0);
  return -t_S.dot(s.hessian(p_SP) * t_S) / glen;
}

template <class Scalar> struct PrincipalCurvatures {
  Vec2<Scalar> k;      // (kmax, kmin), 1/m
  Mat33<Scalar> R_SP;  // columns: kmax direction, kmin direction, outward normal
};

// Eigen-decomposition of the symmetric 2x2 shape operator [a b; b c] written
// in the tangent basis (t1, t2) of normal n.
template <class Scalar>
PrincipalCurvatures<Scalar> principalFromShapeOperator(Scalar a, NonDeduced<Scalar> b, NonDeduced<Scalar> c,
                                                       const NonDeduced<Vec3<Scalar>>& t1,
                                                       const NonDeduced<Vec3<Scalar>>& t2,
                                                       const NonDeduced<Vec3<Scalar>>& n) {
  using std::sqrt;
  using std::abs;
  const Scalar mean = (a + c) / 2, half = (a - c) / 2;
  const Scalar d = sqrt(half * half + b * b);
  const Scalar kmax = mean + d, kmin = mean - d;
  // Eigenvector of kmax from whichever row is better conditioned.
  Vec2<Scalar> v = a >= c ? Vec2<Scalar>(kmax - c, b) : Vec2<Scalar>(b, kmax - a);
  if (!(v.norm() > Tolerances<Scalar>::eps * (abs(kmax) + abs(kmin) + Scalar(1e-300)))) v = Vec2<Scalar>(1, 0);
  const Vec3<Scalar> dmax = (v.x() * t1 + v.y() * t2).normalized();
  PrincipalCurvatures<Scalar> out;
  out.k = Vec2<Scalar>(kmax, kmin);
  out.R_SP.col(0) = dmax;
  out.R_SP.col(1) = n.cross(dmax);
  out.R_SP.col(2) = n;
  return out;
}

// Principal curvatures from f alone (shape operator -P H P / |g| restricted to
// the tangent plane). Cost: one gradient, one Hessian, ~120 flops.
template <class Surface>
PrincipalCurvatures<ScalarOf<Surface>> calcSurfacePrincipalCurvatures(const Surface& s,
                                                                      const Vec3<ScalarOf<Surface>>& p_SP) {
  using Scalar = ScalarOf<Surface>;
  const Vec3<Scalar> n = calcSurfaceUnitNormal(s, p_SP);
  const Scalar glen = s.gradient(p_SP).norm();
  const Mat33<Scalar> H = s.hessian(p_SP);
  const Vec3<Scalar> t1 = anyPerpendicular(n);
  const Vec3<Scalar> t2 = n.cross(t1);
  const Scalar w = glen > Tolerances<Scalar>::tinyGradient ? Scalar(-1) / glen : Scalar(0);
  const Vec3<Scalar> Ht1 = H * t1, Ht2 = H * t2;
  return principalFromShapeOperator(w * t1.dot(Ht1), w * t1.dot(Ht2), w * t2.dot(Ht2), t1, t2, n);
}

// Result of the local Newton solvers below.
template <class Scalar> struct SurfaceProjection {
  Vec3<Scalar> point;  // p_SP on the surface (the best iterate if not converged)
  bool converged;
  int iterations;
  Scalar residual;     // m: max(|f| / |g|, distance of Q from the normal line at P)
};

// Local nearest point: solves x - Q = lambda g(x), f(x) = 0 by Newton with a
// backtracking line search, starting at Q. Returns Q itself when Q is already
// on the surface to tolerance. Cost: ~3 to 6 (gradient + Hessian + 4x4 solve).
template <class Surface>
SurfaceProjection<ScalarOf<Surface>> projectDownhillToNearestPoint(const Surface& s,
                                                                   const Vec3<ScalarOf<Surface>>& p_SQ) {
  using Scalar = ScalarOf<Surface>;
  using std::abs;
  using std::max;
  constexpr Scalar kTolerance = Scalar(64) * Tolerances<Scalar>::eps;  // relative to the local scale
  constexpr int kMaxIterations = 50;
  Vec3<Scalar> x = p_SQ;
  Scalar lambda = 0;
  const auto residualOf = [&](const Vec3<Scalar>& p, Scalar lam, Eigen::Matrix<Scalar, 4, 1>& r) {
    const Vec3<Scalar> g = s.gradient(p);
    r.template head<3>() = p - p_SQ - lam * g;
    r[3] = s.value(p);
    const Scalar glen = max(g.norm(), Tolerances<Scalar>::tinyGradient);
    const Scalar scale = p.norm() + Scalar(1) / glen;
    // Distance-like error: off-surface distance and off-normal-line offset.
    const Vec3<Scalar> n = g / glen;
    const Vec3<Scalar> d = p - p_SQ;
    return max(abs(r[3]) / glen, (d - n * n.dot(d)).norm()) / scale;
  };
  Eigen::Matrix<Scalar, 4, 1> r;
  Scalar err = residualOf(x, lambda, r);
  int it = 0;
  for (; it < kMaxIterations && err > kTolerance; ++it) {
    const Vec3<Scalar> g = s.gradient(x);
    const Mat33<Scalar> H = s.hessian(x);
    Eigen::Matrix<Scalar, 4, 4> J;
    J.template topLeftCorner<3, 3>() = Mat33<Scalar>::Identity() - lambda * H;
    J.template topRightCorner<3, 1>() = -g;
    J.template bottomLeftCorner<1, 3>() = g.transpose();
    J(3, 3) = 0;
    Eigen::Matrix<Scalar, 4, 1> step = -r;
    if (!solveLinearInPlace(J, step) || !step.allFinite()) break;
    Scalar alpha = 1;
    Eigen::Matrix<Scalar, 4, 1> rTry;
    Scalar errTry = err;
    // Halve only before a retry, so the step taken is the one evaluated; when
    // no trial decreases the residual, stop here rather than move to an
    // unevaluated point whose residual would not match the one reported.
    bool decreased = false;
    for (int ls = 0; ls < 20 && !decreased; ++ls) {
      if (ls > 0) alpha /= 2;
      errTry = residualOf(x + alpha * step.template head<3>(), lambda + alpha * step[3], rTry);
      decreased = errTry < err || rTry.norm() < r.norm();
    }
    if (!decreased) break;
    x += alpha * step.template head<3>();
    lambda += alpha * step[3];
    r = rTry;
    err = errTry;
  }
  return {x, err <= kTolerance, it, err * (x.norm() + Scalar(1) / max(s.gradient(x).norm(),
                                                                       Tolerances<Scalar>::tinyGradient))};
}

template <class Scalar> struct LineSeparation {
  Vec3<Scalar> pointOnSurface;  // p_SP: closest point (separated) or deepest (penetrating)
  Vec3<Scalar> pointOnLine;     // p_SR: the matching point of the line
  Scalar height;                // m, (R - P) . n: > 0 outside, < 0 penetrating
  bool converged;
  int iterations;
  Scalar residual;              // max norm of the seed's error vector
};

// Newton on err(P) = [n . l, (A - P) . (n x l), f(P)] (the seed's system; its
// (R - Q) . (n x l) equals (A - P) . (n x l)), with the analytic Jacobian
// dn/dP = -(I - n n') H / |g|. Cost per iteration: one gradient, one Hessian,
// one 3x3 solve. `direction` must be unit.
template <class Surface>
LineSeparation<ScalarOf<Surface>> trackSeparationFromLine(const Surface& s, const Vec3<ScalarOf<Surface>>& pointOnLine,
                                                          const Vec3<ScalarOf<Surface>>& direction,
                                                          const Vec3<ScalarOf<Surface>>& startingGuess) {
  using Scalar = ScalarOf<Surface>;
  using std::max;
  const Vec3<Scalar>& A = pointOnLine;
  const Vec3<Scalar>& l = direction;
  constexpr Scalar kTolerance = Scalar(1e-13);
  constexpr int kMaxIterations = 50;
  const auto errorAt = [&](const Vec3<Scalar>& P) {
    const Vec3<Scalar> n = calcSurfaceUnitNormal(s, P);
    return Vec3<Scalar>(n.dot(l), (A - P).dot(n.cross(l)), s.value(P));
  };
  Vec3<Scalar> P = startingGuess;
  Vec3<Scalar> err = errorAt(P);
  int it = 0;
  for (; it < kMaxIterations && err.template lpNorm<Eigen::Infinity>() > kTolerance; ++it) {
    const Vec3<Scalar> g = s.gradient(P);
    const Scalar glen = max(g.norm(), Tolerances<Scalar>::tinyGradient);
    const Vec3<Scalar> n = -g / glen;
    const Mat33<Scalar> dn = -(Mat33<Scalar>::Identity() - n * n.transpose()) * s.hessian(P) / glen;
    Mat33<Scalar> J;
    J.row(0) = l.transpose() * dn;
    J.row(1) = -(n.cross(l)).transpose() + (l.cross(A - P)).transpose() * dn;
    J.row(2) = g.transpose();
    Vec3<Scalar> step = -err;
    if (!solveLinearInPlace(J, step) || !step.allFinite()) break;
    Scalar alpha = 1;
    Vec3<Scalar> errTry = err;
    // As above: the step taken is the one evaluated, and an exhausted line
    // search stops at the last evaluated point.
    bool decreased = false;
    for (int ls = 0; ls < 20 && !decreased; ++ls) {
      if (ls > 0) alpha /= 2;
      errTry = errorAt(P + alpha * step);
      decreased = errTry.norm() < err.norm();
    }
    if (!decreased) break;
    P += alpha * step;
    err = errTry;
  }
  const Vec3<Scalar> n = calcSurfaceUnitNormal(s, P);
  const Vec3<Scalar> R = A + l * l.dot(P - A);
  const Scalar residual = err.template lpNorm<Eigen::Infinity>();
  return {P, R, (R - P).dot(n), residual <= kTolerance, it, residual};
}

template <class Scalar> struct CombinedParaboloid {
  Vec2<Scalar> k;      // (kmax, kmin) of the difference paraboloid, 1/m
  Mat33<Scalar> R_SP;  // columns: kmax direction, kmin direction, normal z of P1
};

namespace detail {
// Relative curvature tensor K = K1 + K2 in P1's (x1, y1) basis: [a b; b c].
template <class Scalar>
void combinedCurvatureTensor(const Mat33<Scalar>& R_SP1, const Vec2<Scalar>& k1, const Vec3<Scalar>& x2,
                             const Vec2<Scalar>& k2, Scalar& a, Scalar& b, Scalar& c) {
  Vec2<Scalar> cs(x2.dot(R_SP1.col(0)), x2.dot(R_SP1.col(1)));
  cs.normalize();
  const Scalar co = cs.x(), si = cs.y();
  a = k1.x() + k2.x() * co * co + k2.y() * si * si;
  b = (k2.x() - k2.y()) * co * si;
  c = k1.y() + k2.x() * si * si + k2.y() * co * co;
}
}  // namespace detail

// Difference paraboloid of two paraboloids sharing origin and (opposite)
// normals: P1 with frame R_SP1 (x = kmax dir, z = normal away from surface 1)
// and curvatures k1; P2 with kmax direction x2 (in P1's tangent plane) and
// curvatures k2. Convex curvatures are positive for both. Cost: ~100 flops.
template <class Scalar>
CombinedParaboloid<Scalar> combineParaboloids(const Mat33<Scalar>& R_SP1, const NonDeduced<Vec2<Scalar>>& k1,
                                              const NonDeduced<Vec3<Scalar>>& x2,
                                              const NonDeduced<Vec2<Scalar>>& k2) {
  Scalar a, b, c;
  detail::combinedCurvatureTensor(R_SP1, k1, x2, k2, a, b, c);
  const auto pc = principalFromShapeOperator(a, b, c, Vec3<Scalar>(R_SP1.col(0)), Vec3<Scalar>(R_SP1.col(1)),
                                             Vec3<Scalar>(R_SP1.col(2)));
  return {pc.k, pc.R_SP};
}

// Curvatures only, the cheap form of combineParaboloids (~40 flops).
template <class Scalar>
Vec2<Scalar> combineParaboloidCurvatures(const Mat33<Scalar>& R_SP1, const NonDeduced<Vec2<Scalar>>& k1,
                                         const NonDeduced<Vec3<Scalar>>& x2,
                                         const NonDeduced<Vec2<Scalar>>& k2) {
  using std::sqrt;
  Scalar a, b, c;
  detail::combinedCurvatureTensor(R_SP1, k1, x2, k2, a, b, c);
  const Scalar mean = (a + c) / 2, half = (a - c) / 2;
  const Scalar d = sqrt(half * half + b * b);
  return Vec2<Scalar>(mean + d, mean - d);
}

template <class Scalar> struct ParametricCurvature {
  Vec2<Scalar> k;      // (kmax, kmin), 1/m
  Mat33<Scalar> R_SP;  // columns: kmax direction, kmin direction, nn
  Vec3<Scalar> p_SP;   // the point, as given
};

// Principal curvatures of a parameterized surface P(u, v) with unit normal nn.
// First fundamental form E, F, G; second e, f, g with e = -P_uu . nn etc.;
// normal curvature in direction (du, dv) is II / I (Struik eq. 6-3). The
// extremes solve det(II - k I) = 0, i.e. (EG - F^2) k^2 - (eG + gE - 2fF) k
// + (eg - f^2) = 0 (equivalent to Struik's quadratic 6-5 in t = dv/du, but
// without its singularity when a principal direction is the v line).
// Cost: ~90 flops.
template <class Scalar>
ParametricCurvature<Scalar> evalParametricCurvature(const Vec3<Scalar>& P, const NonDeduced<Vec3<Scalar>>& nn,
                                                    const NonDeduced<Vec3<Scalar>>& dPdu,
                                                    const NonDeduced<Vec3<Scalar>>& dPdv,
                                                    const NonDeduced<Vec3<Scalar>>& d2Pdu2,
                                                    const NonDeduced<Vec3<Scalar>>& d2Pdv2,
                                                    const NonDeduced<Vec3<Scalar>>& d2Pdudv) {
  using std::sqrt;
  using std::abs;
  using std::max;
  const Scalar E = dPdu.dot(dPdu), F = dPdu.dot(dPdv), G = dPdv.dot(dPdv);
  const Scalar e = -d2Pdu2.dot(nn), f = -d2Pdudv.dot(nn), g = -d2Pdv2.dot(nn);
  const Scalar det = E * G - F * F;
  const Scalar H = (e * G + g * E - 2 * f * F) / (2 * det);
  const Scalar K = (e * g - f * f) / det;
  const Scalar d = sqrt(max(H * H - K, Scalar(0)));
  const Scalar kmax = H + d, kmin = H - d;
  // (du, dv) in the null space of II - kmax I, from the better-conditioned row.
  const Vec2<Scalar> row1(f - kmax * F, -(e - kmax * E)), row2(g - kmax * G, -(f - kmax * F));
  Vec2<Scalar> duv = row1.norm() >= row2.norm() ? row1 : row2;
  if (!(duv.norm() > Scalar(1e3) * Tolerances<Scalar>::eps * (abs(e) + abs(f) + abs(g) + Scalar(1e-300)))) {
    duv = Vec2<Scalar>(1, 0);  // umbilic: every direction is principal
  }
  const Vec3<Scalar> dmax = (duv.x() * dPdu + duv.y() * dPdv).normalized();
  ParametricCurvature<Scalar> out;
  out.k = Vec2<Scalar>(kmax, kmin);
  out.R_SP.col(0) = dmax;
  out.R_SP.col(1) = nn.cross(dmax);
  out.R_SP.col(2) = nn;
  out.p_SP = P;
  return out;
}

}  // namespace capstan::geometry
