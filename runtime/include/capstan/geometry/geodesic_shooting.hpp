#pragma once
// Shooting geodesics: from a point P and a direction tP until a length is
// reached or a plane is crossed, on any smooth implicit surface (numerically)
// and on Sphere and Cylinder (closed forms); and the reverse Jacobi fields of
// an already computed geodesic.
//
// Numeric method. The state y = (x, v, jd, jd', jp, jp') obeys, with s the arc
// length, g = grad f(x), H = Hess f(x) and K the Gaussian curvature at x,
//   x' = v,   v' = -(v' H v / |g|^2) g,   j'' = -K j   (both Jacobi fields),
// (the acceleration is the normal one that keeps g . v = 0, i.e. v tangent).
// It is integrated by Verner's 7(6) pair with local error control
// (options.accuracy) and, after every accepted step, drift correction: x is
// moved back onto f = 0 along g (Newton) and v is re-projected onto the tangent
// plane and renormalized. The turning angle (the integral of the normal
// curvature, a cable's wrap angle) comes with each step from the same
// stages. A plane crossing is located by Newton on the step size from the
// start of the step in which the sign of the plane distance changes. Cost
// per step: 10 evaluations of F (GeodesicField: on a quadric, whose Hessian
// is constant, ~70 flops each) plus ~700 flops of stage sums.
//
// Closed forms. Sphere: great circles, jd = r sin(s/r), jp = cos(s/r).
// Cylinder: helices x(s) = (r cos(phi0 + a s / r), r sin(phi0 + a s / r), z0 + c s)
// with (a, c) the circumferential and axial parts of tP; jd = s, jp = 1.
//
// A start point off the surface is first projected downhill onto it, and the
// start direction is projected onto the tangent plane there.

#include <capstan/geometry/geodesic.hpp>
#include <capstan/geometry/implicit_ops.hpp>
#include <capstan/geometry/surfaces.hpp>
#include <capstan/geometry/types.hpp>

#include <Eigen/LU>  // 2x2 inverse and determinant (closed form)

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <type_traits>

namespace capstan::geometry {

template <class Surface> struct HasAnalyticGeodesics : std::false_type {};
template <class Scalar> struct HasAnalyticGeodesics<Sphere<Scalar>> : std::true_type {};
template <class Scalar> struct HasAnalyticGeodesics<Cylinder<Scalar>> : std::true_type {};

namespace detail {

template <class Scalar> using GeodesicState = Eigen::Matrix<Scalar, 10, 1>;

// Quadrics: f = f0 + g0' x + x' H x / 2, so g = g0 + H x with H (and adj(H),
// which gives K) the same at every point: computed once per shot instead of
// at every evaluation.
template <class Surface> struct HasConstantHessian : std::false_type {};
template <class Scalar> struct HasConstantHessian<Sphere<Scalar>> : std::true_type {};
template <class Scalar> struct HasConstantHessian<Cylinder<Scalar>> : std::true_type {};
template <class Scalar> struct HasConstantHessian<Ellipsoid<Scalar>> : std::true_type {};
template <class Scalar> struct HasConstantHessian<HalfSpace<Scalar>> : std::true_type {};

// The right-hand side y' = F(y) of the header's ODE:
//   lambda = v' H v / |g|^2,  K = g' adj(H) g / |g|^4,
//   F(y) = (v, -lambda g, jd', -K jd, jp', -K jp).
// Cost per evaluation: ~70 flops and one division on a quadric; one
// gradient and one Hessian more otherwise. The symmetric forms are written
// out: Eigen's 3x3 products are often not inlined at -O2, and then cost
// more than their arithmetic.
template <class Surface> class GeodesicField {
 public:
  using Scalar = ScalarOf<Surface>;
  using State = GeodesicState<Scalar>;

  explicit GeodesicField(const Surface& s) : s_(s) {
    if constexpr (HasConstantHessian<Surface>::value) {
      g0_ = s.gradient(Vec3<Scalar>::Zero());
      H_ = s.hessian(Vec3<Scalar>::Zero());
      adjH_ = adjugateOfSymmetric(H_);
    }
  }

  CAPSTAN_FLATTEN State operator()(const State& y) const {
    const Scalar v0 = y[3], v1 = y[4], v2 = y[5];
    Scalar gx, gy, gz;
    Mat33<Scalar> Hx, Ax;
    const Mat33<Scalar>* H = &H_;
    const Mat33<Scalar>* A = &adjH_;
    if constexpr (HasConstantHessian<Surface>::value) {
      gx = g0_[0] + H_(0, 0) * y[0] + H_(0, 1) * y[1] + H_(0, 2) * y[2];
      gy = g0_[1] + H_(1, 0) * y[0] + H_(1, 1) * y[1] + H_(1, 2) * y[2];
      gz = g0_[2] + H_(2, 0) * y[0] + H_(2, 1) * y[1] + H_(2, 2) * y[2];
    } else {
      const Vec3<Scalar> x = y.template head<3>();
      const Vec3<Scalar> g = s_.gradient(x);
      gx = g[0];
      gy = g[1];
      gz = g[2];
      Hx = s_.hessian(x);
      Ax = adjugateOfSymmetric(Hx);
      H = &Hx;
      A = &Ax;
    }
    const Mat33<Scalar>& M = *H;
    const Mat33<Scalar>& N = *A;
    const Scalar g2 = gx * gx + gy * gy + gz * gz;
    const Scalar vHv = M(0, 0) * v0 * v0 + M(1, 1) * v1 * v1 + M(2, 2) * v2 * v2 +
                       Scalar(2) * (M(0, 1) * v0 * v1 + M(0, 2) * v0 * v2 + M(1, 2) * v1 * v2);
    const Scalar gAg = N(0, 0) * gx * gx + N(1, 1) * gy * gy + N(2, 2) * gz * gz +
                       Scalar(2) * (N(0, 1) * gx * gy + N(0, 2) * gx * gz + N(1, 2) * gy * gz);
    const Scalar inv = g2 > Scalar(0) ? Scalar(1) / g2 : Scalar(0);
    const Scalar lambda = vHv * inv, K = gAg * inv * inv;
    State dy;
    dy << v0, v1, v2, -lambda * gx, -lambda * gy, -lambda * gz, y[7], -K * y[6], y[9], -K * y[8];
    return dy;
  }

 private:
  const Surface& s_;
  Vec3<Scalar> g0_ = Vec3<Scalar>::Zero();                    // 1/m, gradient at x = 0
  Mat33<Scalar> H_ = Mat33<Scalar>::Zero(), adjH_ = Mat33<Scalar>::Zero();  // 1/m^2, 1/m^4
};

// Verner's "most efficient" 7(6) pair, RKV76.IIa: J. H. Verner, "Numerically
// optimal Runge-Kutta pairs with interpolants", Numer. Algorithms 53 (2010)
// 383-396; coefficients from the author's table RKV76.IIa.Efficient
// (www.sfu.ca/~jverner), rounded to 21 significant digits. Ten stages; the
// seventh-order weights b use stages 1 and 4-9, the sixth-order ones stages
// 1, 4-7 and 10 (e = b - bhat below); stage 2 feeds stage 3 only. Not FSAL:
// the next step's first stage is evaluated at the drift-corrected point.
// Against Dormand-Prince 5(4) on the ellipsoid's length-1 shots to 1e-10 m:
// ~30 steps instead of ~84, 300 evaluations instead of 500 (docs/geometry.md).
template <class Scalar> struct Verner76 {
  static constexpr int order = 7;  // of the propagated solution; the error estimate is O(h^7)
  static constexpr Scalar c2 = Scalar(0.005), c3 = Scalar(0.108888888888888888889), c4 = Scalar(0.163333333333333333333),
                          c5 = Scalar(0.4555), c6 = Scalar(0.609509448997838131709), c7 = Scalar(0.884),
                          c8 = Scalar(0.925);
  static constexpr Scalar a21 = Scalar(0.005);
  static constexpr Scalar a31 = Scalar(-1.07679012345679012346), a32 = Scalar(1.18567901234567901235);
  static constexpr Scalar a41 = Scalar(0.0408333333333333333333), a43 = Scalar(0.1225);
  static constexpr Scalar a51 = Scalar(0.638913923625572678051), a53 = Scalar(-2.45567263822365680966),
                          a54 = Scalar(2.27225871459808413161);
  static constexpr Scalar a61 = Scalar(-2.66157737501875713112), a63 = Scalar(10.8045138864561376957),
                          a64 = Scalar(-8.35391465739619941197), a65 = Scalar(0.820487594956656979142);
  static constexpr Scalar a71 = Scalar(6.06774143469677099272), a73 = Scalar(-24.7112736359110857973),
                          a74 = Scalar(20.4275179307888939405), a75 = Scalar(-1.90615797881664715062),
                          a76 = Scalar(1.00617224924206801479);
  static constexpr Scalar a81 = Scalar(12.0546700762532029951), a83 = Scalar(-49.7547849504689893281),
                          a84 = Scalar(41.1428886386046766326), a85 = Scalar(-4.46176014997400418564),
                          a86 = Scalar(2.04233482223917495982), a87 = Scalar(-0.0983484366540610737953);
  static constexpr Scalar a91 = Scalar(10.1381465228818078764), a93 = Scalar(-42.6411360317175021462),
                          a94 = Scalar(35.7638400399225700714), a95 = Scalar(-4.34802284039290765334),
                          a96 = Scalar(2.00986226837703589544), a97 = Scalar(0.348749046033827240595),
                          a98 = Scalar(-0.271439005104831284237);
  static constexpr Scalar a101 = Scalar(-45.0300720342986771244), a103 = Scalar(187.327243765458884075),
                          a104 = Scalar(-154.028823693501869060), a105 = Scalar(18.5646530634753623386),
                          a106 = Scalar(-7.14180967929507885493), a107 = Scalar(1.30880857816137862511);
  static constexpr Scalar b1 = Scalar(0.0471556184862722217043), b4 = Scalar(0.257505642984341518960),
                          b5 = Scalar(0.262166539774126204771), b6 = Scalar(0.152160926567385574032),
                          b7 = Scalar(0.493996917003248424691), b8 = Scalar(-0.294303117140325044156),
                          b9 = Scalar(0.0813174723249510999973);
  // b - bhat: the error estimate's weights.
  static constexpr Scalar e1 = b1 - Scalar(0.0446086066063411762873), e4 = b4 - Scalar(0.267164037857137268051),
                          e5 = b5 - Scalar(0.220101830017729301998), e6 = b6 - Scalar(0.218843170314315683098),
                          e7 = b7 - Scalar(0.228987170541120288338), e8 = b8, e9 = b9,
                          e10 = -Scalar(0.0202951846633562822277);
};

// One step of size h from y for any right-hand side f of the state type
// (the geodesic field; the order test feeds it others). The caller puts
// f(y) in k[0]; the step fills the other stages (k[9] only with err),
// writes the seventh-order solution and, when err is non-null, the error
// estimate (one evaluation more).
template <class State> using VernerStages = std::array<State, 10>;

template <class Field, class State, class Scalar>
CAPSTAN_FLATTEN void vernerStep(const Field& f, const State& y, Scalar h, VernerStages<State>& k, State& yOut,
                                State* err) {
  using C = Verner76<Scalar>;
  // Stage sums as y + (h a_ij) k_j: the products h a_ij are scalars, which
  // saves a multiplication per component and stage (~5 % of a step).
  k[1] = f(State(y + (h * C::a21) * k[0]));
  k[2] = f(State(y + (h * C::a31) * k[0] + (h * C::a32) * k[1]));
  k[3] = f(State(y + (h * C::a41) * k[0] + (h * C::a43) * k[2]));
  k[4] = f(State(y + (h * C::a51) * k[0] + (h * C::a53) * k[2] + (h * C::a54) * k[3]));
  k[5] = f(State(y + (h * C::a61) * k[0] + (h * C::a63) * k[2] + (h * C::a64) * k[3] + (h * C::a65) * k[4]));
  k[6] = f(State(y + (h * C::a71) * k[0] + (h * C::a73) * k[2] + (h * C::a74) * k[3] + (h * C::a75) * k[4] +
                 (h * C::a76) * k[5]));
  k[7] = f(State(y + (h * C::a81) * k[0] + (h * C::a83) * k[2] + (h * C::a84) * k[3] + (h * C::a85) * k[4] +
                 (h * C::a86) * k[5] + (h * C::a87) * k[6]));
  k[8] = f(State(y + (h * C::a91) * k[0] + (h * C::a93) * k[2] + (h * C::a94) * k[3] + (h * C::a95) * k[4] +
                 (h * C::a96) * k[5] + (h * C::a97) * k[6] + (h * C::a98) * k[7]));
  yOut = y + h * (C::b1 * k[0] + C::b4 * k[3] + C::b5 * k[4] + C::b6 * k[5] + C::b7 * k[6] + C::b8 * k[7] +
                  C::b9 * k[8]);
  if (err) {
    k[9] = f(State(y + (h * C::a101) * k[0] + (h * C::a103) * k[2] + (h * C::a104) * k[3] + (h * C::a105) * k[4] +
                   (h * C::a106) * k[5] + (h * C::a107) * k[6]));
    *err = h * (C::e1 * k[0] + C::e4 * k[3] + C::e5 * k[4] + C::e6 * k[5] + C::e7 * k[6] + C::e8 * k[7] +
                C::e9 * k[8] + C::e10 * k[9]);
  }
}

// The step's seventh-order quadrature of a function q of the stage
// derivatives: h sum_i b_i q(k_i), i.e. the integral over the step of a
// quantity that depends on the state only (integrated as an extra state
// that feeds nothing back would give exactly this).
template <class State, class Scalar, class Integrand>
CAPSTAN_FLATTEN Scalar vernerQuadrature(const VernerStages<State>& k, Scalar h, const Integrand& q) {
  using C = Verner76<Scalar>;
  return h * (C::b1 * q(k[0]) + C::b4 * q(k[3]) + C::b5 * q(k[4]) + C::b6 * q(k[5]) + C::b7 * q(k[6]) +
              C::b8 * q(k[7]) + C::b9 * q(k[8]));
}

// The turning of a step: the integral of the normal curvature kn, which on
// a geodesic is the normal acceleration, v' = kn n; |v'| from the stage
// derivatives and its sign from the normal g0 at the start of the step
// (n cannot turn over within a step). rad.
template <class Scalar>
CAPSTAN_FLATTEN Scalar stepTurning(const VernerStages<GeodesicState<Scalar>>& k, Scalar h, const Vec3<Scalar>& g0) {
  using std::sqrt;
  return vernerQuadrature(k, h, [&](const GeodesicState<Scalar>& d) {
    const Scalar a2 = d[3] * d[3] + d[4] * d[4] + d[5] * d[5];
    const Scalar a = sqrt(a2);
    return d[3] * g0[0] + d[4] * g0[1] + d[5] * g0[2] < Scalar(0) ? -a : a;
  });
}

// Error of a step relative to the requested accuracy (<= 1 accepts).
template <class Scalar>
CAPSTAN_FLATTEN Scalar errorRatio(const GeodesicState<Scalar>& y, const GeodesicState<Scalar>& err, Scalar accuracy) {
  using std::abs;
  using std::max;
  Scalar r = err.template head<6>().template lpNorm<Eigen::Infinity>();
  for (int i = 6; i < 10; ++i) r = max(r, abs(err[i]) / (Scalar(1) + abs(y[i])));
  return r / accuracy;
}

// Drift correction: x back onto f = 0 along the gradient (one Newton step:
// the drift is of the order of the local error, so the step leaves an error
// of its square), v tangent and unit.
template <class Surface> CAPSTAN_FLATTEN void projectState(const Surface& s, GeodesicState<ScalarOf<Surface>>& y) {
  using Scalar = ScalarOf<Surface>;
  const Vec3<Scalar> x = y.template head<3>();
  const Vec3<Scalar> g = s.gradient(x);
  const Scalar g2 = g.squaredNorm();
  if (!(g2 > Scalar(0))) return;
  y.template head<3>() = x - (s.value(x) / g2) * g;
  Vec3<Scalar> v = y.template segment<3>(3);
  v -= g * (g.dot(v) / g2);
  y.template segment<3>(3) = v.normalized();
}

// Start point on the surface and unit tangent there; false if impossible.
template <class Surface>
bool prepareStart(const Surface& s, const Vec3<ScalarOf<Surface>>& xP, const Vec3<ScalarOf<Surface>>& tP,
                  Vec3<ScalarOf<Surface>>& x0, Vec3<ScalarOf<Surface>>& t0) {
  using Scalar = ScalarOf<Surface>;
  if (!xP.allFinite() || !tP.allFinite()) return false;
  x0 = projectDownhillToNearestPoint(s, xP).point;
  if (!x0.allFinite()) return false;
  const Vec3<Scalar> n = calcSurfaceUnitNormal(s, x0);
  const Vec3<Scalar> t = tP - n * n.dot(tP);
  const Scalar len = t.norm();
  if (!(len > Scalar(1e-8) * tP.norm())) return false;
  t0 = t / len;
  return true;
}

template <class Surface>
CAPSTAN_FLATTEN void recordState(const Surface& s, const GeodesicState<ScalarOf<Surface>>& y, ScalarOf<Surface> arc,
                 Geodesic<ScalarOf<Surface>>& geod) {
  using Scalar = ScalarOf<Surface>;
  const Vec3<Scalar> x = y.template head<3>();
  geod.addPoint(x, y.template segment<3>(3), calcSurfaceUnitNormal(s, x), arc, Vec2<Scalar>(y[6], y[7]),
                Vec2<Scalar>(y[8], y[9]));
}

// The shared numeric shooter: until `length`, or until `plane` is crossed
// (then `length` is ignored and options.maxLength bounds the search).
template <class Surface>
Geodesic<ScalarOf<Surface>> shootNumerically(const Surface& s, const Vec3<ScalarOf<Surface>>& xP,
                                             const Vec3<ScalarOf<Surface>>& tP, ScalarOf<Surface> length,
                                             const Plane<ScalarOf<Surface>>* plane,
                                             const GeodesicOptions<ScalarOf<Surface>>& opt) {
  using Scalar = ScalarOf<Surface>;
  using State = GeodesicState<Scalar>;
  using std::abs;
  using std::max;
  using std::min;
  using std::pow;
  using std::sqrt;
  Geodesic<Scalar> geod;
  geod.shots = 1;
  Vec3<Scalar> x0, t0;
  const Scalar target = plane ? opt.maxLength : length;
  if (!(target >= Scalar(0)) || !(opt.accuracy > Scalar(0)) || !prepareStart(s, xP, tP, x0, t0)) {
    geod.status = GeodesicStatus::InvalidInput;
    return geod;
  }
  State y;
  y << x0, t0, Scalar(0), Scalar(1), Scalar(1), Scalar(0);
  const std::size_t reserveHint = opt.storeInteriorPoints ? 64 : 2;
  geod.reserve(reserveHint);
  recordState(s, y, Scalar(0), geod);

  // Initial step from the normal curvature along t0 and the Gaussian curvature.
  Scalar h = opt.initialStepSize;
  if (!(h > Scalar(0))) {
    const Vec3<Scalar> g = s.gradient(x0);
    const Mat33<Scalar> H = s.hessian(x0);
    const Scalar glen = max(g.norm(), Tolerances<Scalar>::tinyGradient);
    const Scalar k = max({abs(t0.dot(H * t0)) / glen, sqrt(abs(calcGaussianCurvature(g, H))), Scalar(1e-3)});
    h = Scalar(0.5) * pow(opt.accuracy, Scalar(1) / Scalar(Verner76<Scalar>::order)) / k;
  }
  Scalar arc = 0;
  const GeodesicField<Surface> f(s);
  VernerStages<State> k;
  k[0] = f(y);
  State yNew, err;
  Scalar side = plane ? plane->signedDistance(x0) : Scalar(0);
  // Step control: h_new = h min(5, max(0.2, 0.8 r^(-1/7))). The safety factor 0.8 (not 0.9) halves the
  // rejected steps on the bench's shots for 5 % more accepted ones.
  constexpr Scalar kSafety = Scalar(0.8), kMinShrink = Scalar(0.2), kMaxGrow = Scalar(5);
  constexpr float kExponent = -1.0f / float(Verner76<Scalar>::order);
  // The step the controller asks for after the first accepted one: where a
  // shot from (nearly) the same start should begin (initialStepSizeHint).
  Scalar startStep = 0;
  bool done = target == Scalar(0);
  while (!done) {
    if (geod.stepsTaken + geod.stepsRejected >= opt.maxSteps) {
      geod.status = GeodesicStatus::MaxStepsExceeded;
      break;
    }
    const Scalar remaining = target - arc;
    const bool lastStep = h >= remaining * (Scalar(1) - Scalar(1e-12));
    const Scalar hStep = lastStep ? remaining : h;
    vernerStep(f, y, hStep, k, yNew, &err);
    const Scalar ratio = yNew.allFinite() ? errorRatio(y, err, opt.accuracy) : Scalar(1e10);
    // The factor needs two digits: powf's latency is ~60 % of pow's, on the
    // path from one step to the next (0 and overflow clamp to the bounds).
    const Scalar factor =
        ratio > Scalar(0)
            ? min(kMaxGrow, max(kMinShrink, kSafety * Scalar(std::pow(static_cast<float>(ratio), kExponent))))
            : kMaxGrow;
    if (!(ratio <= Scalar(1))) {
      ++geod.stepsRejected;
      h = hStep * factor;
      if (h <= Scalar(16) * Tolerances<Scalar>::eps * (arc + Scalar(1))) {
        geod.status = GeodesicStatus::StepSizeUnderflow;
        break;
      }
      continue;
    }
    if (++geod.stepsTaken == 1) startStep = hStep * factor;
    const Vec3<Scalar> g0 = s.gradient(y.template head<3>());
    projectState(s, yNew);
    if (plane) {
      const Scalar dNew = plane->signedDistance(yNew.template head<3>());
      if (side == Scalar(0)) {
        side = dNew;  // start point on the plane: the side left first is the reference
      } else if ((side > Scalar(0)) != (dNew > Scalar(0)) || dNew == Scalar(0)) {
        // Newton on tau in (0, hStep]: plane distance of a single step of size tau.
        const Scalar d0 = plane->signedDistance(y.template head<3>());
        Scalar tau = hStep * d0 / (d0 - dNew), tauTaken = tau;
        State yTau = yNew;
        for (int it = 0; it < 20; ++it) {
          vernerStep(f, y, tau, k, yTau, static_cast<State*>(nullptr));
          tauTaken = tau;
          const Scalar phi = plane->signedDistance(yTau.template head<3>());
          const Scalar dphi = plane->normal.dot(yTau.template segment<3>(3));
          if (abs(phi) <= Scalar(4) * Tolerances<Scalar>::eps * (Scalar(1) + yTau.template head<3>().norm()) ||
              dphi == Scalar(0))
            break;
          const Scalar next = min(max(tau - phi / dphi, Scalar(0)), hStep);
          if (next == tau) break;
          tau = next;
        }
        geod.turningAngle += stepTurning(k, tauTaken, g0);
        projectState(s, yTau);
        arc += tauTaken;
        recordState(s, yTau, arc, geod);
        geod.residual = abs(plane->signedDistance(yTau.template head<3>()));
        geod.status = GeodesicStatus::Ok;
        geod.initialStepSizeHint = startStep > Scalar(0) ? startStep : h;
        return geod;
      }
    }
    arc = lastStep ? target : arc + hStep;
    geod.turningAngle += stepTurning(k, hStep, g0);
    y = yNew;
    if (!lastStep) k[0] = f(y);
    if (opt.storeInteriorPoints || lastStep) recordState(s, y, arc, geod);
    if (!lastStep || factor < Scalar(1)) h = hStep * factor;
    if (lastStep) {
      done = true;
      geod.status = plane ? GeodesicStatus::PlaneNotHit : GeodesicStatus::Ok;
    }
  }
  if (target == Scalar(0)) {
    recordState(s, y, Scalar(0), geod);
    geod.status = plane ? GeodesicStatus::PlaneNotHit : GeodesicStatus::Ok;
  } else if (geod.numPoints() < 2) {
    recordState(s, y, arc, geod);  // failed early: still end with the last good point
  }
  geod.initialStepSizeHint = startStep > Scalar(0) ? startStep : h;
  return geod;
}

// ------------------------------------------------------------ closed forms
template <class Scalar> Scalar smallestPositiveAngle(Scalar phi) {
  constexpr Scalar twoPi = Scalar(2) * std::numbers::pi_v<Scalar>;
  phi = std::fmod(phi, twoPi);
  if (phi <= Scalar(1e-14)) phi += twoPi;
  return phi;
}

// The inputs a closed form accepts: a finite start point and direction, the
// start off the center or axis (`radial`, its distance from it, > 0 m) and
// a length >= 0 m or a plane to end at.
template <class Scalar>
bool analyticInputValid(const Vec3<Scalar>& xP, const Vec3<Scalar>& tP, Scalar radial, Scalar length,
                        const Plane<Scalar>* plane) {
  return xP.allFinite() && tP.allFinite() && radial > Scalar(0) && (length >= Scalar(0) || plane);
}

template <class Scalar>
Geodesic<Scalar> shootAnalytically(const Sphere<Scalar>& s, const Vec3<Scalar>& xP, const Vec3<Scalar>& tP,
                                   Scalar length, const Plane<Scalar>* plane, const GeodesicOptions<Scalar>& opt) {
  using std::acos;
  using std::atan2;
  using std::cos;
  using std::sin;
  using std::sqrt;
  Geodesic<Scalar> geod;
  geod.isAnalytic = true;
  geod.shots = 1;
  const Scalar r = s.radius;
  const Scalar len0 = xP.norm();
  if (!analyticInputValid(xP, tP, len0, length, plane)) {
    geod.status = GeodesicStatus::InvalidInput;
    return geod;
  }
  const Vec3<Scalar> u = xP / len0;
  Vec3<Scalar> t = tP - u * u.dot(tP);
  if (!(t.norm() > Scalar(1e-8) * tP.norm())) {
    geod.status = GeodesicStatus::InvalidInput;
    return geod;
  }
  t.normalize();
  Scalar L = length;
  geod.status = GeodesicStatus::Ok;
  if (plane) {
    // n . x(phi) = r (a cos(phi) + b sin(phi)) = offset, phi = s / r.
    const Scalar a = plane->normal.dot(u), b = plane->normal.dot(t);
    const Scalar rho = sqrt(a * a + b * b);
    const Scalar c = rho > Scalar(0) ? plane->offset / (r * rho) : Scalar(2);
    if (c > Scalar(1) || c < Scalar(-1)) {
      L = opt.maxLength;
      geod.status = GeodesicStatus::PlaneNotHit;
    } else {
      const Scalar phiC = atan2(b, a), alpha = acos(c);
      L = r * std::min(smallestPositiveAngle(phiC + alpha), smallestPositiveAngle(phiC - alpha));
      if (L > opt.maxLength) {
        L = opt.maxLength;
        geod.status = GeodesicStatus::PlaneNotHit;
      }
    }
  }
  const int n = opt.storeInteriorPoints ? std::max(2, opt.analyticPoints) : 2;
  geod.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const Scalar arc = L * Scalar(i) / Scalar(n - 1);
    const Scalar phi = arc / r, c = cos(phi), sn = sin(phi);
    const Vec3<Scalar> nrm = c * u + sn * t;
    geod.addPoint(r * nrm, -sn * u + c * t, nrm, arc, Vec2<Scalar>(r * sn, c), Vec2<Scalar>(c, -sn / r));
  }
  if (plane && geod.ok()) geod.residual = std::abs(plane->signedDistance(geod.pointQ()));
  geod.turningAngle = calcSurfaceCurvatureInDirection(s, geod.pointP(), geod.tangentP()) * L;  // kn is constant
  return geod;
}

template <class Scalar>
Geodesic<Scalar> shootAnalytically(const Cylinder<Scalar>& s, const Vec3<Scalar>& xP, const Vec3<Scalar>& tP,
                                   Scalar length, const Plane<Scalar>* plane, const GeodesicOptions<Scalar>& opt) {
  using std::abs;
  using std::atan2;
  using std::cos;
  using std::sin;
  using std::sqrt;
  Geodesic<Scalar> geod;
  geod.isAnalytic = true;
  geod.shots = 1;
  const Scalar r = s.radius;
  const Scalar rho = sqrt(xP.x() * xP.x() + xP.y() * xP.y());
  if (!analyticInputValid(xP, tP, rho, length, plane)) {
    geod.status = GeodesicStatus::InvalidInput;
    return geod;
  }
  const Scalar phi0 = atan2(xP.y(), xP.x()), z0 = xP.z();
  const Vec3<Scalar> eR(cos(phi0), sin(phi0), Scalar(0)), ePhi(-sin(phi0), cos(phi0), Scalar(0));
  Scalar a = tP.dot(ePhi), c = tP.z();
  const Scalar tlen = sqrt(a * a + c * c);
  if (!(tlen > Scalar(1e-8) * tP.norm())) {
    geod.status = GeodesicStatus::InvalidInput;
    return geod;
  }
  a /= tlen;
  c /= tlen;
  const Scalar omega = a / r;  // rad/m
  const auto pointAt = [&](Scalar arc) {
    const Scalar phi = phi0 + omega * arc;
    return Vec3<Scalar>(r * cos(phi), r * sin(phi), z0 + c * arc);
  };
  Scalar L = length;
  geod.status = GeodesicStatus::Ok;
  if (plane) {
    // Scan h(s) = n . x(s) - offset in steps of at most 0.1 rad of turning,
    // then refine the first sign change by safeguarded Newton.
    const auto h = [&](Scalar arc) { return plane->signedDistance(pointAt(arc)); };
    const auto dh = [&](Scalar arc) {
      const Scalar phi = phi0 + omega * arc;
      return plane->normal.dot(Vec3<Scalar>(-a * sin(phi), a * cos(phi), c));
    };
    const Scalar ds = std::min(abs(omega) > Scalar(0) ? Scalar(0.1) / abs(omega) : opt.maxLength,
                               opt.maxLength / Scalar(64));
    Scalar lo = 0, hlo = h(Scalar(0));
    bool found = false;
    for (Scalar hi = ds; lo < opt.maxLength && !found; hi = std::min(hi + ds, opt.maxLength)) {
      const Scalar hhi = h(hi);
      if (hlo != Scalar(0) && ((hlo > Scalar(0)) != (hhi > Scalar(0)) || hhi == Scalar(0))) {
        Scalar left = lo, right = hi, arc = hi;
        for (int it = 0; it < 100; ++it) {
          const Scalar val = h(arc);
          if (val == Scalar(0)) break;
          if ((val > Scalar(0)) == (hlo > Scalar(0))) left = arc; else right = arc;
          const Scalar d = dh(arc);
          Scalar next = d != Scalar(0) ? arc - val / d : (left + right) / 2;
          if (!(next > left && next < right)) next = (left + right) / 2;
          if (abs(next - arc) <= Scalar(4) * Tolerances<Scalar>::eps * (Scalar(1) + abs(arc))) {
            arc = next;
            break;
          }
          arc = next;
        }
        L = arc;
        found = true;
      }
      if (hi >= opt.maxLength) break;
      lo = hi;
      hlo = hhi;
    }
    if (!found) {
      L = opt.maxLength;
      geod.status = GeodesicStatus::PlaneNotHit;
    }
  }
  const int n = opt.storeInteriorPoints ? std::max(2, opt.analyticPoints) : 2;
  geod.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const Scalar arc = L * Scalar(i) / Scalar(n - 1);
    const Scalar phi = phi0 + omega * arc;
    const Vec3<Scalar> nrm(cos(phi), sin(phi), Scalar(0));
    geod.addPoint(pointAt(arc), Vec3<Scalar>(-a * sin(phi), a * cos(phi), c), nrm, arc, Vec2<Scalar>(arc, 1),
                  Vec2<Scalar>(1, 0));
  }
  if (plane && geod.ok()) geod.residual = abs(plane->signedDistance(geod.pointQ()));
  geod.turningAngle = calcSurfaceCurvatureInDirection(s, geod.pointP(), geod.tangentP()) * L;  // kn is constant
  return geod;
}

// Closed form when the surface has one and the options allow, else numeric.
template <class Surface>
Geodesic<ScalarOf<Surface>> shoot(const Surface& s, const Vec3<ScalarOf<Surface>>& xP,
                                  const Vec3<ScalarOf<Surface>>& tP, ScalarOf<Surface> length,
                                  const Plane<ScalarOf<Surface>>* plane,
                                  const GeodesicOptions<ScalarOf<Surface>>& opt) {
  if constexpr (HasAnalyticGeodesics<Surface>::value) {
    if (opt.preferAnalytic) return shootAnalytically(s, xP, tP, length, plane, opt);
  }
  return shootNumerically(s, xP, tP, length, plane, opt);
}

}  // namespace detail

// Geodesic of arc length `length` (m) from xP in direction tP.
template <class Surface>
Geodesic<ScalarOf<Surface>> shootGeodesicInDirectionUntilLengthReached(
    const Surface& s, const Vec3<ScalarOf<Surface>>& xP, const Vec3<ScalarOf<Surface>>& tP,
    ScalarOf<Surface> length, const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  static_assert(Surface::isSmooth, "geodesics need a smooth surface");
  return detail::shoot(s, xP, tP, length, static_cast<const Plane<ScalarOf<Surface>>*>(nullptr), opt);
}

// Geodesic from xP in direction tP up to its first crossing of `plane`
// (status PlaneNotHit if none within options.maxLength).
template <class Surface>
Geodesic<ScalarOf<Surface>> shootGeodesicInDirectionUntilPlaneHit(const Surface& s,
                                                                  const Vec3<ScalarOf<Surface>>& xP,
                                                                  const Vec3<ScalarOf<Surface>>& tP,
                                                                  const Plane<ScalarOf<Surface>>& plane,
                                                                  const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  static_assert(Surface::isSmooth, "geodesics need a smooth surface");
  return detail::shoot(s, xP, tP, ScalarOf<Surface>(0), &plane, opt);
}

// The closed forms, explicitly (Sphere and Cylinder only).
template <class Surface>
Geodesic<ScalarOf<Surface>> shootGeodesicInDirectionUntilLengthReachedAnalytical(
    const Surface& s, const Vec3<ScalarOf<Surface>>& xP, const Vec3<ScalarOf<Surface>>& tP,
    ScalarOf<Surface> length, const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  static_assert(HasAnalyticGeodesics<Surface>::value, "closed-form geodesics exist for Sphere and Cylinder only");
  return detail::shootAnalytically(s, xP, tP, length, static_cast<const Plane<ScalarOf<Surface>>*>(nullptr), opt);
}

template <class Surface>
Geodesic<ScalarOf<Surface>> shootGeodesicInDirectionUntilPlaneHitAnalytical(
    const Surface& s, const Vec3<ScalarOf<Surface>>& xP, const Vec3<ScalarOf<Surface>>& tP,
    const Plane<ScalarOf<Surface>>& plane, const GeodesicOptions<ScalarOf<Surface>>& opt = {}) {
  static_assert(HasAnalyticGeodesics<Surface>::value, "closed-form geodesics exist for Sphere and Cylinder only");
  return detail::shootAnalytically(s, xP, tP, ScalarOf<Surface>(0), &plane, opt);
}

// Fills jacobiQtoP and jacobiTransQtoP at every stored point: the Jacobi
// fields started at Q with (j, dj/dsigma) = initDirectional (default (0, 1):
// rotating the tangent at Q) and initPositional (default (1, 0)), sigma = L - s.
// Because the Jacobi equation is linear, each is the combination of the two
// forward fields already stored that matches its values at Q (the Wronskian
// jp jd' - jd jp' = 1 keeps the 2x2 system well posed); no re-integration.
// Cost: ~10 flops per stored point.
template <class Scalar>
void calcGeodesicReverseSensitivity(Geodesic<Scalar>& geod,
                                    const NonDeduced<Vec2<Scalar>>& initDirectional = Vec2<Scalar>(0, 1),
                                    const NonDeduced<Vec2<Scalar>>& initPositional = Vec2<Scalar>(1, 0)) {
  const int n = geod.numPoints();
  geod.jacobiQtoP.assign(n, Vec2<Scalar>::Zero());
  geod.jacobiTransQtoP.assign(n, Vec2<Scalar>::Zero());
  if (n == 0 || static_cast<int>(geod.jacobiPtoQ.size()) != n) return;
  const Vec2<Scalar> jd = geod.jacobiPtoQ.back(), jp = geod.jacobiTransPtoQ.back();
  Mat22<Scalar> M;
  M << jd.x(), jp.x(), jd.y(), jp.y();
  const Mat22<Scalar> Minv = M.inverse();
  const auto fill = [&](const Vec2<Scalar>& init, std::vector<Vec2<Scalar>>& out) {
    // In s: y(L) = init[0], y'(L) = -init[1].
    const Vec2<Scalar> coef = Minv * Vec2<Scalar>(init.x(), -init.y());
    for (int i = 0; i < n; ++i) {
      const Vec2<Scalar>& d = geod.jacobiPtoQ[i];
      const Vec2<Scalar>& p = geod.jacobiTransPtoQ[i];
      out[i] = Vec2<Scalar>(coef.x() * d.x() + coef.y() * p.x(), -(coef.x() * d.y() + coef.y() * p.y()));
    }
  };
  fill(initDirectional, geod.jacobiQtoP);
  fill(initPositional, geod.jacobiTransQtoP);
}

}  // namespace capstan::geometry
