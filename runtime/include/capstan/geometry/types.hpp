#pragma once
// Shared vocabulary of capstan::geometry: fixed-size Eigen aliases, the
// frames a query returns, and the numeric constants every solver uses.
//
// Frames and points (docs/geometry.md, docs/notation.md):
//   S   the surface frame; every point and direction here is expressed in S.
//   P   a point on (or near) the surface; p_SP is "P measured from So in S".
//   R_SP columns (x, y, z) = (first tangent, second tangent, outward normal).
// Units: lengths in m, curvatures in 1/m, Gaussian curvature in 1/m^2.

#include <Eigen/Core>
#include <Eigen/Geometry>  // cross products

#include <cmath>
#include <limits>
#include <type_traits>

// CAPSTAN_FLATTEN: inline every call inside the function (GCC and Clang).
// For the small hot kernels of the geodesic and cable solvers, whose Eigen
// 3-vector and 3x3 operations g++ -O2 otherwise often leaves as calls
// costing more than their arithmetic.
#if defined(__GNUC__)
#define CAPSTAN_FLATTEN [[gnu::flatten]]
#else
#define CAPSTAN_FLATTEN
#endif

namespace capstan::geometry {

template <class Scalar> using Vec2 = Eigen::Matrix<Scalar, 2, 1>;
template <class Scalar> using Vec3 = Eigen::Matrix<Scalar, 3, 1>;
template <class Scalar> using Mat22 = Eigen::Matrix<Scalar, 2, 2>;
template <class Scalar> using Mat33 = Eigen::Matrix<Scalar, 3, 3>;

// For parameters whose Scalar comes from another argument (a surface), so
// Eigen expressions convert instead of failing template deduction.
template <class T> using NonDeduced = std::type_identity_t<T>;

// Numeric thresholds, as fractions of the scale they are compared with.
template <class Scalar> struct Tolerances {
  static constexpr Scalar eps = std::numeric_limits<Scalar>::epsilon();
  // A gradient shorter than this is treated as singular (no normal there).
  static constexpr Scalar tinyGradient = Scalar(1e-100);
  // Offset tried when the gradient vanishes (Simbody's sqrt(eps) convention).
  static Scalar sqrtEps() { return std::sqrt(eps); }
};

// An arbitrary unit vector perpendicular to unit vector n (continuous away
// from the switch between the two branches). Cost: ~10 flops and one sqrt.
template <class Scalar> Vec3<Scalar> anyPerpendicular(const Vec3<Scalar>& n) {
  using std::abs;
  const Vec3<Scalar> a = abs(n.x()) < Scalar(0.6) ? Vec3<Scalar>::UnitX() : Vec3<Scalar>::UnitY();
  return (a - n * n.dot(a)).normalized();
}

// R_SF with z = n (unit) and x along the tangent projection of the hint d;
// if d is (nearly) parallel to n an arbitrary perpendicular is used.
template <class Scalar>
Mat33<Scalar> frameFromNormalAndHint(const Vec3<Scalar>& n, const NonDeduced<Vec3<Scalar>>& d) {
  Vec3<Scalar> x = d - n * n.dot(d);
  const Scalar len = x.norm();
  x = len > Scalar(1e3) * Tolerances<Scalar>::eps * d.norm() && len > Scalar(0) ? Vec3<Scalar>(x / len)
                                                                               : anyPerpendicular(n);
  Mat33<Scalar> R_SF;
  R_SF.col(0) = x;
  R_SF.col(1) = n.cross(x);
  R_SF.col(2) = n;
  return R_SF;
}

// A plane {p : n.dot(p) == offset}, n unit; signed distance = n.dot(p) - offset.
template <class Scalar = double> struct Plane {
  Vec3<Scalar> normal;  // unit, in S
  Scalar offset;        // m
  Scalar signedDistance(const Vec3<Scalar>& p_SP) const { return normal.dot(p_SP) - offset; }
};

}  // namespace capstan::geometry
