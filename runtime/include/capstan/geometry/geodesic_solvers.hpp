#pragma once
// Point-to-point geodesics between P and Q on a smooth surface.
//
//   calcGeodesicUsingOrthogonalMethod(s, P, Q, tPhint, lengthHint, opt)
//       Newton on (L, theta): shoot from P with direction t(theta) for length
//       L; the end point E must reach Q. With e = E - Q, the residual
//       (e . tE, e . bE) has Jacobian diag(1, jd(L)) (jd the directional
//       Jacobi field), so each iteration costs one shot. Steps are limited
//       (|dtheta| <= 0.5 rad, L > 0) and halved when the miss distance grows.
//       A last step whose second-order remainder is below 1 % of the
//       tolerance (or the step that would polish a converged shot) is
//       applied through the Jacobi fields, without a shot
//       (applyLinearVariation): the points, tangents and length are then
//       those of the varied geodesic to that remainder, while the Jacobi
//       values are those of the last shot (advanced by dL at Q), off by
//       about dtheta relative.
//   calcGeodesic(s, P, Q, tPhint, tQhint, opt)           (split geodesic)
//       shoot from P along tP and from Q along -tQ until both cross the
//       plane bisecting PQ; Newton on (thetaP, thetaQ) drives the position
//       and tangent mismatch there, ((xB - xA) . bA, (tA + tB) . bA), to zero
//       with the Jacobian from the two Jacobi fields; the joined curve is then
//       polished by the orthogonal method (usually zero or one iteration).
//   initGeodesic(s, P, Q, near, opt)
//       initial-guess strategy: straight line for very close points; else
//       start towards `near` (if given) or along the chord, orthogonal method
//       first, split method next, then rotated start directions.
//   continueGeodesic(s, P, Q, prev, opt)
//       warm start from the previous geodesic: length predicted by the first
//       variation L' + dQ . tQ - dP . tP, start direction corrected with the
//       Jacobi fields, plus a higher-order correction c m^2 (m the end
//       motion) with c extrapolated from the previous two updates, then the
//       orthogonal method; flags lengthJumped when the
//       length changed by more than the ends moved, and flipped when P and Q
//       swapped order along a (straight) geodesic.
//   makeStraightLineGeodesic(s, P, Q, defaultDirection, opt)
//       the two-point chord, for coincident or very close points.
//   calcSplitGeodError(s, P, Q, tP, tQ, opt)
//       the split method's residual for given directions, with both halves.
//
// Every result carries its status, Newton iterations, residual |x_end - Q|
// and the number of shots; a failed solve returns the best curve it found,
// never NaN.

#include <capstan/geometry/geodesic.hpp>
#include <capstan/geometry/geodesic_shooting.hpp>
#include <capstan/geometry/implicit_ops.hpp>
#include <capstan/geometry/types.hpp>

#include <Eigen/LU>  // 2x2 inverse and determinant (closed form)

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace capstan::geometry {

namespace detail {

// Rotate unit tangent t about the normal n by angle theta towards b = t x n.
template <class Scalar>
Vec3<Scalar> rotateInTangentPlane(const Vec3<Scalar>& t, const Vec3<Scalar>& n, Scalar theta) {
  using std::cos;
  using std::sin;
  return (cos(theta) * t + sin(theta) * t.cross(n)).normalized();
}

// Unit tangent at surface point x from a hint (any perpendicular if the hint
// is along the normal or zero).
template <class Surface>
Vec3<ScalarOf<Surface>> tangentFromHint(const Surface& s, const Vec3<ScalarOf<Surface>>& x,
                                        const Vec3<ScalarOf<Surface>>& hint) {
  const Vec3<ScalarOf<Surface>> n = calcSurfaceUnitNormal(s, x);
  return frameFromNormalAndHint(n, hint).col(0);
}

// Largest absolute normal curvature at x (the straight-line test's scale):
// |kmean| + sqrt(kmean^2 - K) from the invariants of the shape operator,
// 2 kmean = -(tr H - n' H n) / |g| and K (no tangent basis, no eigenvectors).
template <class Surface> ScalarOf<Surface> maxAbsCurvature(const Surface& s, const Vec3<ScalarOf<Surface>>& x) {
  using Scalar = ScalarOf<Surface>;
  using std::abs;
  using std::sqrt;
  const Vec3<Scalar> g = s.gradient(x);
  const Mat33<Scalar> H = s.hessian(x);
  const Scalar g2 = g.squaredNorm();
  if (!(g2 > Scalar(0))) return Scalar(0);
  const Scalar mean = -(H.trace() - symmetricQuadraticForm(H, g) / g2) / (Scalar(2) * sqrt(g2));
  return abs(mean) + sqrt(std::max(mean * mean - calcGaussianCurvature(g, H), Scalar(0)));
}

template <class Scalar> void accumulateCost(Geodesic<Scalar>& into, const Geodesic<Scalar>& from) {
  into.stepsTaken += from.stepsTaken;
  into.stepsRejected += from.stepsRejected;
  into.shots += from.shots;
}

// The geodesic with start angle theta + dTheta and length L + dL, to first
// order, from `geod` and its Jacobi fields instead of a new shot. With J the
// directional field, every stored point moves by j dTheta along b and its
// tangent turns by j' dTheta towards b; the end point moves on by dL along
// tQ, where j advances by (j', -K j) dL. The normals are re-evaluated at the
// moved points and the tangents re-projected onto their tangent planes,
// which adds the normal parts of the variations (for the end: the normal
// curvature times dL). The curve left off is second order: about
// (|dTheta| max(L, |j|) + |dL|)^2 (1/L + kappa) with kappa the largest
// curvature (linearVariationRemainder). Cost: ~40 flops per stored point.
template <class Scalar> Scalar linearVariationRemainder(const Geodesic<Scalar>& geod, Scalar dTheta, Scalar dL,
                                                        Scalar kappa) {
  using std::abs;
  const Scalar L = geod.length();
  const Scalar u = abs(dTheta) * std::max(L, abs(geod.jacobiQ())) + abs(dL);
  return u * u * (Scalar(1) / L + kappa);
}

template <class Surface>
CAPSTAN_FLATTEN void applyLinearVariation(const Surface& s, Geodesic<ScalarOf<Surface>>& geod, ScalarOf<Surface> dTheta,
                          ScalarOf<Surface> dL) {
  using Scalar = ScalarOf<Surface>;
  const auto moveTo = [&](int i, const Vec3<Scalar>& x, const Vec3<Scalar>& t) {
    const Vec3<Scalar> n = calcSurfaceUnitNormal(s, x);
    geod.points[i] = x;
    geod.normals[i] = n;
    geod.tangents[i] = (t - n * n.dot(t)).normalized();
    geod.binormals[i] = geod.tangents[i].cross(n);
  };
  const int last = geod.numPoints() - 1;
  for (int i = 0; i <= last; ++i) {  // at P: j = 0, j' = 1
    const Vec3<Scalar> b = geod.binormals[i];
    const Vec2<Scalar>& jd = geod.jacobiPtoQ[i];
    moveTo(i, geod.points[i] + (jd.x() * dTheta) * b, geod.tangents[i] + (jd.y() * dTheta) * b);
  }
  const Scalar K = calcGaussianCurvature(s, geod.points[last]);
  geod.turningAngle += calcSurfaceCurvatureInDirection(s, geod.points[last], geod.tangents[last]) * dL;
  moveTo(last, geod.points[last] + dL * geod.tangents[last], geod.tangents[last]);
  geod.arcLengths[last] += dL;
  for (Vec2<Scalar>* j : {&geod.jacobiPtoQ[last], &geod.jacobiTransPtoQ[last]})
    *j = Vec2<Scalar>(j->x() + dL * j->y(), j->y() - dL * K * j->x());
}

// P and Q already on the surface.
template <class Surface>
Geodesic<ScalarOf<Surface>> orthogonalSolve(const Surface& s, const Vec3<ScalarOf<Surface>>& P,
                                            const Vec3<ScalarOf<Surface>>& Q, Vec3<ScalarOf<Surface>> t,
                                            ScalarOf<Surface> L, const GeodesicOptions<ScalarOf<Surface>>& opt) {
  using Scalar = ScalarOf<Surface>;
  using std::abs;
  using std::clamp;
  constexpr Scalar kMaxAngleStep = Scalar(0.5);  // rad
  constexpr Scalar kLinearFinishFraction = Scalar(0.01);
  const Vec3<Scalar> nP = calcSurfaceUnitNormal(s, P);
  const Scalar kappa = std::max(maxAbsCurvature(s, P), maxAbsCurvature(s, Q));  // 1/m
  GeodesicOptions<Scalar> shotOpt = opt;
  Geodesic<Scalar> cost, best;
  Scalar bestErr = std::numeric_limits<Scalar>::infinity();
  Vec3<Scalar> tPrev = t;
  Scalar LPrev = L, dThetaPrev = 0, dLPrev = 0, errPrev = std::numeric_limits<Scalar>::infinity();
  GeodesicStatus failure = GeodesicStatus::NotConverged;
  bool converged = false;
  // Linear finish: a last step (dTheta, dL) whose second-order remainder is
  // far below the tolerance moves `best` through its Jacobi fields, without
  // a shot. It leaves the miss's normal part, e . nQ (itself second order).
  const auto linearFinish = [&](const Vec3<Scalar>& e, Scalar dTheta, Scalar dL) {
    const Scalar remainder = linearVariationRemainder(best, dTheta, dL, kappa);
    if (!(remainder <= kLinearFinishFraction * opt.pointTolerance) ||
        !(abs(e.dot(best.normalQ())) <= opt.pointTolerance / 2))
      return false;
    applyLinearVariation(s, best, dTheta, dL);
    bestErr = (best.pointQ() - Q).norm() + remainder;
    return true;
  };
  int it = 0;
  for (; it <= opt.maxIterations; ++it) {
    Geodesic<Scalar> g = shoot(s, P, t, L, static_cast<const Plane<Scalar>*>(nullptr), shotOpt);
    accumulateCost(cost, g);
    if (!g.ok()) {
      failure = g.status;
      break;
    }
    shotOpt = startingFrom(shotOpt, g);
    const Vec3<Scalar> e = g.pointQ() - Q;
    const Scalar err = e.norm();
    if (err < bestErr) {
      bestErr = err;
      best = std::move(g);
    }
    if (err <= opt.pointTolerance) {
      // Converged; polish the miss away when that is a linear finish.
      const Scalar j = best.jacobiQ();
      if (err == bestErr && err > Scalar(0) && abs(j) > Scalar(1e-10) * (L + Scalar(1e-300))) {
        const Vec3<Scalar> miss = e;
        linearFinish(miss, -miss.dot(best.binormalQ()) / j, -miss.dot(best.tangentQ()));
      }
      converged = true;
      break;
    }
    if (it == opt.maxIterations) break;
    if (err > errPrev && it > 0) {  // overshoot: go back and take half the previous step
      dThetaPrev /= 2;
      dLPrev /= 2;
      t = rotateInTangentPlane(tPrev, nP, dThetaPrev);
      L = LPrev + dLPrev;
      continue;
    }
    const Geodesic<Scalar>& cur = err <= bestErr ? best : g;
    const Scalar j = cur.jacobiQ();
    if (!(abs(j) > Scalar(1e-10) * (L + Scalar(1e-300)))) {
      failure = GeodesicStatus::SingularJacobian;
      break;
    }
    const Scalar dL = clamp(-e.dot(cur.tangentQ()), -L / 2, L);
    const Scalar dTheta = clamp(-e.dot(cur.binormalQ()) / j, -kMaxAngleStep, kMaxAngleStep);
    if (err <= bestErr && linearFinish(e, dTheta, dL)) {
      converged = true;
      break;
    }
    tPrev = t;
    LPrev = L;
    errPrev = err;
    dThetaPrev = dTheta;
    dLPrev = dL;
    t = rotateInTangentPlane(t, nP, dTheta);
    L += dL;
  }
  best.status = converged ? GeodesicStatus::Ok : failure;
  // Not even one successful shot: report how far P is from Q.
  best.residual = best.points.empty() ? (Q - P).norm() : bestErr;
  best.iterations = it;
  best.stepsTaken = cost.stepsTaken;
  best.stepsRejected = cost.stepsRejected;
  best.shots = cost.shots;
  return best;
}

}  // namespace detail

// Two-point straight geodesic P'Q' with P', Q' the downhill projections of xP,
// xQ; numerically coincident points collapse to their midpoint (length 0).
template <class Surface>
Geodesic<ScalarOf<Surface>> makeStraightLineGeodesic(const Surface& s, const Vec3<ScalarOf<Surface>>& xP,
                                                     const Vec3<ScalarOf<Surface>>& xQ,
                                                     const Vec3<ScalarOf<Surface>>& defaultDirection,
                                                     const GeodesicOptions<ScalarOf<Surface>>& = {}) {
  using Scalar = ScalarOf<Surface>;
  Geodesic<Scalar> geod;
  geod.isStraightLine = true;
  if (!xP.allFinite() || !xQ.allFinite()) {
    geod.status = GeodesicStatus::InvalidInput;
    return geod;
  }
  Vec3<Scalar> P = projectDownhillToNearestPoint(s, xP).point;
  Vec3<Scalar> Q = projectDownhillToNearestPoint(s, xQ).point;
  Vec3<Scalar> d = Q - P;
  Scalar L = d.norm();
  if (L <= Scalar(64) * Tolerances<Scalar>::eps * (Scalar(1) + P.norm())) {
    P = Q = projectDownhillToNearestPoint(s, Vec3<Scalar>((P + Q) / 2)).point;
    d = defaultDirection;
    L = 0;
  }
  const Vec3<Scalar> nP = calcSurfaceUnitNormal(s, P), nQ = calcSurfaceUnitNormal(s, Q);
  geod.addPoint(P, frameFromNormalAndHint(nP, d).col(0), nP, Scalar(0), Vec2<Scalar>(0, 1), Vec2<Scalar>(1, 0));
  geod.addPoint(Q, frameFromNormalAndHint(nQ, d).col(0), nQ, L, Vec2<Scalar>(L, 1), Vec2<Scalar>(1, 0));
  geod.turningAngle = (calcSurfaceCurvatureInDirection(s, P, geod.tangentP()) +
                       calcSurfaceCurvatureInDirection(s, Q, geod.tangentQ())) * L / 2;
  geod.status = GeodesicStatus::Ok;
  return geod;
}

template <class Surface>
Geodesic<ScalarOf<Surface>> calcGeodesicUsingOrthogonalMethod(const Surface& s, const Vec3<ScalarOf<Surface>>& xP,
                                                              const Vec3<ScalarOf<Surface>>& xQ,
                                                              const Vec3<ScalarOf<Surface>>& tPhint,
                                                              ScalarOf<Surface> lengthHint,
                                                              const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  using Scalar = ScalarOf<Surface>;
  static_assert(Surface::isSmooth, "geodesics need a smooth surface");
  if (!xP.allFinite() || !xQ.allFinite() || !tPhint.allFinite() || !(lengthHint == lengthHint)) {
    Geodesic<Scalar> bad;
    bad.status = GeodesicStatus::InvalidInput;
    return bad;
  }
  const Vec3<Scalar> P = projectDownhillToNearestPoint(s, xP).point;
  const Vec3<Scalar> Q = projectDownhillToNearestPoint(s, xQ).point;
  const Scalar L = lengthHint > Scalar(0) ? lengthHint : (Q - P).norm();
  return detail::orthogonalSolve(s, P, Q, detail::tangentFromHint(s, P, tPhint), L, opt);
}

// Guesses the start direction (along the chord) and length (the chord).
template <class Surface>
Geodesic<ScalarOf<Surface>> calcGeodesicUsingOrthogonalMethod(const Surface& s, const Vec3<ScalarOf<Surface>>& xP,
                                                              const Vec3<ScalarOf<Surface>>& xQ,
                                                              const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  return calcGeodesicUsingOrthogonalMethod(s, xP, xQ, Vec3<ScalarOf<Surface>>(xQ - xP), (xQ - xP).norm(), opt);
}

template <class Scalar> struct SplitGeodesicError {
  Vec2<Scalar> error;          // ((xB - xA) . bA  in m, (tA + tB) . bA), both 0 at a match
  Geodesic<Scalar> fromP;      // P along tP to the bisecting plane (A)
  Geodesic<Scalar> fromQ;      // Q along tQ to the bisecting plane (B)
  bool ok() const { return fromP.ok() && fromQ.ok(); }
};

// The mismatch of the two half geodesics the split method joins: shot from
// P along tP and from Q along tQ (pointing back towards P), both up to the
// plane bisecting PQ. P and Q are used as given (on the surface).
template <class Surface>
SplitGeodesicError<ScalarOf<Surface>> calcSplitGeodError(const Surface& s, const Vec3<ScalarOf<Surface>>& P,
                                                         const Vec3<ScalarOf<Surface>>& Q,
                                                         const Vec3<ScalarOf<Surface>>& tP,
                                                         const Vec3<ScalarOf<Surface>>& tQ,
                                                         const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  using Scalar = ScalarOf<Surface>;
  const Vec3<Scalar> chord = Q - P;
  const Scalar chordLen = chord.norm();
  SplitGeodesicError<Scalar> out;
  out.error = Vec2<Scalar>::Zero();
  if (!(chordLen > Scalar(0))) {
    out.fromP.status = out.fromQ.status = GeodesicStatus::InvalidInput;
    return out;
  }
  const Plane<Scalar> mid{chord / chordLen, chord.dot(P + Q) / (2 * chordLen)};
  out.fromP = detail::shoot(s, P, tP, Scalar(0), &mid, opt);
  out.fromQ = detail::shoot(s, Q, tQ, Scalar(0), &mid, opt);
  if (out.ok()) {
    const Vec3<Scalar>& bA = out.fromP.binormalQ();
    out.error = Vec2<Scalar>((out.fromQ.pointQ() - out.fromP.pointQ()).dot(bA),
                             (out.fromP.tangentQ() + out.fromQ.tangentQ()).dot(bA));
  }
  return out;
}

// Split-geodesic method (see the header comment).
template <class Surface>
Geodesic<ScalarOf<Surface>> calcGeodesic(const Surface& s, const Vec3<ScalarOf<Surface>>& xP,
                                         const Vec3<ScalarOf<Surface>>& xQ, const Vec3<ScalarOf<Surface>>& tPhint,
                                         const Vec3<ScalarOf<Surface>>& tQhint,
                                         const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  using Scalar = ScalarOf<Surface>;
  using std::abs;
  using std::clamp;
  static_assert(Surface::isSmooth, "geodesics need a smooth surface");
  constexpr Scalar kMaxAngleStep = Scalar(0.5);  // rad
  Geodesic<Scalar> cost;
  if (!xP.allFinite() || !xQ.allFinite() || !tPhint.allFinite() || !tQhint.allFinite()) {
    cost.status = GeodesicStatus::InvalidInput;
    return cost;
  }
  const Vec3<Scalar> P = projectDownhillToNearestPoint(s, xP).point;
  const Vec3<Scalar> Q = projectDownhillToNearestPoint(s, xQ).point;
  const Vec3<Scalar> chord = Q - P;
  const Scalar chordLen = chord.norm();
  if (chordLen * detail::maxAbsCurvature(s, P) <= opt.straightLineFraction)
    return makeStraightLineGeodesic(s, P, Q, tPhint, opt);
  const Plane<Scalar> mid{chord / chordLen, chord.dot(P + Q) / (2 * chordLen)};
  const Vec3<Scalar> nP = calcSurfaceUnitNormal(s, P), nQ = calcSurfaceUnitNormal(s, Q);
  Vec3<Scalar> tP = detail::tangentFromHint(s, P, tPhint);
  Vec3<Scalar> uQ = detail::tangentFromHint(s, Q, Vec3<Scalar>(-tQhint));
  GeodesicOptions<Scalar> shotOpt = opt;
  GeodesicStatus failure = GeodesicStatus::NotConverged;
  Scalar lastErr = std::numeric_limits<Scalar>::infinity();
  int it = 0;
  bool matched = false;
  Scalar LA = 0, LB = 0;
  for (; it < opt.maxIterations; ++it) {
    const Geodesic<Scalar> A = detail::shoot(s, P, tP, Scalar(0), &mid, shotOpt);
    const Geodesic<Scalar> B = detail::shoot(s, Q, uQ, Scalar(0), &mid, shotOpt);
    detail::accumulateCost(cost, A);
    detail::accumulateCost(cost, B);
    if (!A.ok() || !B.ok()) {
      failure = !A.ok() ? A.status : B.status;
      break;
    }
    LA = A.length();
    LB = B.length();
    const Vec3<Scalar> dx = B.pointQ() - A.pointQ(), dt = A.tangentQ() + B.tangentQ();
    lastErr = std::max(dx.norm(), dt.norm() * (LA + LB));
    if (lastErr <= opt.pointTolerance) {
      matched = true;
      break;
    }
    const Vec3<Scalar>& bA = A.binormalQ();
    const Scalar bb = B.binormalQ().dot(bA);
    Mat22<Scalar> J;
    J << -A.jacobiQ(), B.jacobiQ() * bb, A.jacobiQDot(), B.jacobiQDot() * bb;
    const Vec2<Scalar> r(dx.dot(bA), dt.dot(bA));
    const Scalar det = J.determinant();
    if (!(abs(det) > Scalar(1e-14) * (J.squaredNorm() + Scalar(1e-300)))) {
      failure = GeodesicStatus::SingularJacobian;
      break;
    }
    const Vec2<Scalar> step = -J.inverse() * r;
    tP = detail::rotateInTangentPlane(tP, nP, clamp(step.x(), -kMaxAngleStep, kMaxAngleStep));
    uQ = detail::rotateInTangentPlane(uQ, nQ, clamp(step.y(), -kMaxAngleStep, kMaxAngleStep));
  }
  // Polish (and fill the full curve with its Jacobi fields) from P, whether or
  // not the halves matched: a good-enough match converges in one shot.
  GeodesicOptions<Scalar> polishOpt = opt;
  if (!matched) polishOpt.maxIterations = std::max(opt.maxIterations - it, 1);
  Geodesic<Scalar> geod = detail::orthogonalSolve(s, P, Q, tP, LA + LB > Scalar(0) ? LA + LB : chordLen, polishOpt);
  if (!geod.ok() && !matched && failure != GeodesicStatus::NotConverged) geod.status = failure;
  geod.iterations += it;
  detail::accumulateCost(geod, cost);
  return geod;
}

// Robust entry point with an initial-guess strategy (see the header comment).
template <class Surface>
Geodesic<ScalarOf<Surface>> initGeodesic(const Surface& s, const Vec3<ScalarOf<Surface>>& xP,
                                         const Vec3<ScalarOf<Surface>>& xQ,
                                         const std::optional<Vec3<ScalarOf<Surface>>>& near = std::nullopt,
                                         const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  using Scalar = ScalarOf<Surface>;
  static_assert(Surface::isSmooth, "geodesics need a smooth surface");
  Geodesic<Scalar> result;
  if (!xP.allFinite() || !xQ.allFinite() || (near && !near->allFinite())) {
    result.status = GeodesicStatus::InvalidInput;
    return result;
  }
  const Vec3<Scalar> P = projectDownhillToNearestPoint(s, xP).point;
  const Vec3<Scalar> Q = projectDownhillToNearestPoint(s, xQ).point;
  const Vec3<Scalar> chord = Q - P;
  const Scalar chordLen = chord.norm();
  if (chordLen * detail::maxAbsCurvature(s, P) <= opt.straightLineFraction)
    return makeStraightLineGeodesic(s, P, Q, detail::tangentFromHint(s, P, chord), opt);
  Vec3<Scalar> dirP = chord, dirQ = chord;
  Scalar L0 = chordLen;
  Geodesic<Scalar> cost;
  if (near) {
    // Via the near point S: start along the geodesic P -> S, guess the length
    // |PS| + |SQ| (geodesic lengths where those solve, chords otherwise).
    const Vec3<Scalar> S = projectDownhillToNearestPoint(s, *near).point;
    dirP = S - P;
    dirQ = Q - S;
    const Geodesic<Scalar> toS = initGeodesic(s, P, S, std::nullopt, opt);
    const Geodesic<Scalar> fromS = initGeodesic(s, S, Q, std::nullopt, opt);
    detail::accumulateCost(cost, toS);
    detail::accumulateCost(cost, fromS);
    if (toS.ok()) dirP = toS.tangentP();
    if (fromS.ok()) dirQ = fromS.tangentQ();
    L0 = (toS.ok() ? toS.length() : dirP.norm()) + (fromS.ok() ? fromS.length() : (Q - S).norm());
  }
  const Vec3<Scalar> tP0 = detail::tangentFromHint(s, P, dirP);
  const Vec3<Scalar> nP = calcSurfaceUnitNormal(s, P);
  const auto finish = [&](Geodesic<Scalar>& g) -> Geodesic<Scalar>& {
    detail::accumulateCost(cost, g);
    g.stepsTaken = cost.stepsTaken;
    g.stepsRejected = cost.stepsRejected;
    g.shots = cost.shots;
    return g;
  };
  result = detail::orthogonalSolve(s, P, Q, tP0, L0, opt);
  if (result.ok()) return finish(result);
  detail::accumulateCost(cost, result);
  result = calcGeodesic(s, P, Q, tP0, detail::tangentFromHint(s, Q, dirQ), opt);
  if (result.ok()) return finish(result);
  for (const Scalar angle : {Scalar(0.3), Scalar(-0.3), Scalar(0.8), Scalar(-0.8)}) {
    detail::accumulateCost(cost, result);
    result = detail::orthogonalSolve(s, P, Q, detail::rotateInTangentPlane(tP0, nP, angle), L0, opt);
    if (result.ok()) break;
  }
  return finish(result);
}

// Warm start from prev (see the header comment).
template <class Surface>
Geodesic<ScalarOf<Surface>> continueGeodesic(const Surface& s, const Vec3<ScalarOf<Surface>>& xP,
                                             const Vec3<ScalarOf<Surface>>& xQ, const Geodesic<ScalarOf<Surface>>& prev,
                                             const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  using Scalar = ScalarOf<Surface>;
  using std::abs;
  static_assert(Surface::isSmooth, "geodesics need a smooth surface");
  if (prev.numPoints() < 2 || !prev.ok()) return initGeodesic(s, xP, xQ, std::nullopt, opt);
  if (!xP.allFinite() || !xQ.allFinite()) {
    Geodesic<Scalar> bad;
    bad.status = GeodesicStatus::InvalidInput;
    return bad;
  }
  const Vec3<Scalar> P = projectDownhillToNearestPoint(s, xP).point;
  const Vec3<Scalar> Q = projectDownhillToNearestPoint(s, xQ).point;
  const Vec3<Scalar> dP = P - prev.pointP(), dQ = Q - prev.pointQ();
  const Scalar endMotion = dP.norm() + dQ.norm();
  const Vec3<Scalar> chord = Q - P;
  const Scalar chordLen = chord.norm();
  const auto flagJump = [&](Geodesic<Scalar>& g) {
    // A failed solve can hand back a curve without points (its status says
    // why); there is no tangent to compare, and front() of it is undefined.
    if (g.numPoints() == 0) return g;
    g.lengthJumped = abs(g.length() - prev.length()) > endMotion + Scalar(10) * opt.pointTolerance;
    g.flipped = g.tangentP().dot(prev.tangentP()) < Scalar(0);
    return g;
  };
  const Vec3<Scalar> nP = calcSurfaceUnitNormal(s, P);
  // Still (or again) a straight line: keep the previous direction as default.
  if (chordLen * detail::maxAbsCurvature(s, P) <= opt.straightLineFraction) {
    Geodesic<Scalar> g = makeStraightLineGeodesic(s, P, Q, prev.tangentP(), opt);
    return flagJump(g);
  }
  // Predicted start direction and length from the first variation and the
  // Jacobi fields at Q (end displacement along bQ = jd dtheta + jp (dP . bP)).
  Vec3<Scalar> t = detail::tangentFromHint(s, P, prev.tangentP());
  Scalar L = prev.length() + dQ.dot(prev.tangentQ()) - dP.dot(prev.tangentP());
  if (prev.isStraightLine) {
    t = detail::tangentFromHint(s, P, chord);
    L = chordLen;
  } else {
    const Scalar j = prev.jacobiQ();
    if (abs(j) > Scalar(1e-8) * prev.length()) {
      const Scalar dTheta = (dQ.dot(prev.binormalQ()) - prev.jacobiTransQ() * dP.dot(prev.binormalP())) / j;
      t = detail::rotateInTangentPlane(t, nP, std::clamp(dTheta, Scalar(-0.5), Scalar(0.5)));
    }
    if (!(L > Scalar(0))) L = chordLen;
  }
  // Higher order: on a smooth path the error of the first-order prediction
  // is about c m^2 (m the end motion) with c drifting slowly; add c m^2 with
  // c extrapolated linearly from the previous two updates (the previous one
  // alone if the one before is missing), each used only if its motion was
  // within a factor 2 of this one.
  const Vec3<Scalar> tFirstOrder = t;
  const Scalar LFirstOrder = L;
  const auto comparable = [&](Scalar m) { return endMotion > Scalar(0.5) * m && endMotion < Scalar(2) * m; };
  if (endMotion > Scalar(0) && comparable(prev.continuationMotion)) {
    const Scalar m2 = endMotion * endMotion;
    Vec2<Scalar> c = prev.continuationCorrection / (prev.continuationMotion * prev.continuationMotion);
    if (comparable(prev.continuationMotionBefore))
      c = Scalar(2) * c - prev.continuationCorrectionBefore /
                              (prev.continuationMotionBefore * prev.continuationMotionBefore);
    t = detail::rotateInTangentPlane(t, nP, c.x() * m2);
    L += c.y() * m2;
  }
  Geodesic<Scalar> g = detail::orthogonalSolve(s, P, Q, t, L, startingFrom(opt, prev));
  if (!g.ok()) {
    const Geodesic<Scalar> failed = g;
    g = initGeodesic(s, P, Q, std::optional<Vec3<Scalar>>(prev.points[prev.points.size() / 2]), opt);
    detail::accumulateCost(g, failed);
  } else if (!prev.isStraightLine) {
    const Vec3<Scalar>& tP = g.tangentP();
    g.continuationCorrection = Vec2<Scalar>(std::atan2(tP.dot(tFirstOrder.cross(nP)), tP.dot(tFirstOrder)),
                                            g.length() - LFirstOrder);
    g.continuationMotion = endMotion;
    g.continuationCorrectionBefore = prev.continuationCorrection;
    g.continuationMotionBefore = prev.continuationMotion;
  }
  return flagJump(g);
}

}  // namespace capstan::geometry
