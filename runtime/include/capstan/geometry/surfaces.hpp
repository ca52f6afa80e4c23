#pragma once
// Contact surfaces as implicit functions in their own frame S.
//
// Convention (Simbody's): f(p_SP) > 0 inside the solid, f = 0 on the surface,
// f < 0 outside. The outward unit normal is therefore n = -grad f / |grad f|.
// Smooth shapes use Simbody's normalized functions, so values, gradients and
// Hessians agree with Simbody's `calcSurfaceValue` & co. to round-off:
//
//   Sphere    radius r          f = 1 - |p|^2 / r^2
//   Cylinder  radius r, axis z  f = 1 - (x^2 + y^2) / r^2           (infinite)
//   Ellipsoid radii (a, b, c)   f = 1 - x^2/a^2 - y^2/b^2 - z^2/c^2
//   Torus     R (centre circle), r (tube), axis z
//                               f = 1 - ((R - rho)^2 + z^2) / r^2,  rho = sqrt(x^2 + y^2)
//   HalfSpace x > 0 inside      f = x, outward normal -x             (infinite)
//   Brick     half lengths h    f = min_i (h_i - |p_i|)             (not smooth)
//
// Every shape is a plain aggregate (its parameters) with three members that
// form the ImplicitSurface concept used by all algorithms:
//   value(p_SP)    -> Scalar          (dimensionless for smooth shapes; m for Brick)
//   gradient(p_SP) -> Vec3            (1/m)
//   hessian(p_SP)  -> Mat33, symmetric (1/m^2)
// and the compile-time flags isSmooth, isConvex, isFinite.
// Cost of each member: a handful of flops (Torus: one sqrt more).

#include <capstan/geometry/types.hpp>

#include <algorithm>
#include <cmath>

namespace capstan::geometry {

template <class Scalar = double> struct Sphere {
  using ScalarType = Scalar;
  static constexpr bool isSmooth = true;
  static constexpr bool isConvex = true;
  static constexpr bool isFinite = true;

  Scalar radius;  // m

  Scalar value(const Vec3<Scalar>& p_SP) const {
    return Scalar(1) - p_SP.squaredNorm() / (radius * radius);
  }
  Vec3<Scalar> gradient(const Vec3<Scalar>& p_SP) const {
    return (Scalar(-2) / (radius * radius)) * p_SP;
  }
  Mat33<Scalar> hessian(const Vec3<Scalar>&) const {
    return (Scalar(-2) / (radius * radius)) * Mat33<Scalar>::Identity();
  }
};

template <class Scalar = double> struct Cylinder {
  using ScalarType = Scalar;
  static constexpr bool isSmooth = true;
  static constexpr bool isConvex = true;
  static constexpr bool isFinite = false;

  Scalar radius;  // m; axis is z, infinite length

  Scalar value(const Vec3<Scalar>& p_SP) const {
    return Scalar(1) - (p_SP.x() * p_SP.x() + p_SP.y() * p_SP.y()) / (radius * radius);
  }
  Vec3<Scalar> gradient(const Vec3<Scalar>& p_SP) const {
    const Scalar c = Scalar(-2) / (radius * radius);
    return Vec3<Scalar>(c * p_SP.x(), c * p_SP.y(), Scalar(0));
  }
  Mat33<Scalar> hessian(const Vec3<Scalar>&) const {
    const Scalar c = Scalar(-2) / (radius * radius);
    Mat33<Scalar> H = Mat33<Scalar>::Zero();
    H(0, 0) = c;
    H(1, 1) = c;
    return H;
  }
};

template <class Scalar = double> struct Ellipsoid {
  using ScalarType = Scalar;
  static constexpr bool isSmooth = true;
  static constexpr bool isConvex = true;
  static constexpr bool isFinite = true;

  Vec3<Scalar> radii;  // m, semi-axes along x, y, z

  Scalar value(const Vec3<Scalar>& p_SP) const {
    return Scalar(1) - p_SP.cwiseQuotient(radii).squaredNorm();
  }
  Vec3<Scalar> gradient(const Vec3<Scalar>& p_SP) const {
    return Scalar(-2) * p_SP.cwiseQuotient(radii.cwiseProduct(radii));
  }
  Mat33<Scalar> hessian(const Vec3<Scalar>&) const {
    return (Scalar(-2) * radii.cwiseProduct(radii).cwiseInverse()).asDiagonal();
  }
};

template <class Scalar = double> struct Torus {
  using ScalarType = Scalar;
  static constexpr bool isSmooth = true;
  static constexpr bool isConvex = false;
  static constexpr bool isFinite = true;

  Scalar torusRadius;  // m, radius R of the centre circle in the xy plane
  Scalar tubeRadius;   // m, radius r of the tube

  Scalar value(const Vec3<Scalar>& p_SP) const {
    using std::sqrt;
    const Scalar rho = sqrt(p_SP.x() * p_SP.x() + p_SP.y() * p_SP.y());
    const Scalar d = torusRadius - rho;
    return Scalar(1) - (d * d + p_SP.z() * p_SP.z()) / (tubeRadius * tubeRadius);
  }
  // On the z axis (rho = 0) f is not differentiable; the x, y components are
  // returned as 0 there (a singular point, far from the surface when R > r).
  Vec3<Scalar> gradient(const Vec3<Scalar>& p_SP) const {
    using std::sqrt;
    const Scalar r2 = tubeRadius * tubeRadius;
    const Scalar rho = sqrt(p_SP.x() * p_SP.x() + p_SP.y() * p_SP.y());
    const Scalar c = rho > Scalar(0) ? Scalar(2) * (torusRadius - rho) / (r2 * rho) : Scalar(0);
    return Vec3<Scalar>(c * p_SP.x(), c * p_SP.y(), Scalar(-2) * p_SP.z() / r2);
  }
  Mat33<Scalar> hessian(const Vec3<Scalar>& p_SP) const {
    using std::sqrt;
    const Scalar r2 = tubeRadius * tubeRadius;
    const Scalar rho2 = p_SP.x() * p_SP.x() + p_SP.y() * p_SP.y();
    const Scalar rho = sqrt(rho2);
    Mat33<Scalar> H = Mat33<Scalar>::Zero();
    H(2, 2) = Scalar(-2) / r2;
    if (rho > Scalar(0)) {
      const Scalar c = Scalar(2) * torusRadius / (r2 * rho2 * rho);
      H(0, 0) = c * p_SP.y() * p_SP.y() - Scalar(2) / r2;
      H(1, 1) = c * p_SP.x() * p_SP.x() - Scalar(2) / r2;
      H(0, 1) = -c * p_SP.x() * p_SP.y();
      H(1, 0) = H(0, 1);
    }
    return H;
  }
};

template <class Scalar = double> struct HalfSpace {
  using ScalarType = Scalar;
  static constexpr bool isSmooth = true;
  static constexpr bool isConvex = true;
  static constexpr bool isFinite = false;

  Scalar value(const Vec3<Scalar>& p_SP) const { return p_SP.x(); }
  Vec3<Scalar> gradient(const Vec3<Scalar>&) const { return Vec3<Scalar>::UnitX(); }
  Mat33<Scalar> hessian(const Vec3<Scalar>&) const { return Mat33<Scalar>::Zero(); }
};

template <class Scalar = double> struct Brick {
  using ScalarType = Scalar;
  static constexpr bool isSmooth = false;
  static constexpr bool isConvex = true;
  static constexpr bool isFinite = true;

  Vec3<Scalar> halfLengths;  // m

  // Index of the face nearest to p_SP (the one realizing the min in f).
  int activeAxis(const Vec3<Scalar>& p_SP) const {
    using std::abs;
    int k = 0;
    Scalar best = halfLengths[0] - abs(p_SP[0]);
    for (int i = 1; i < 3; ++i) {
      const Scalar v = halfLengths[i] - abs(p_SP[i]);
      if (v < best) {
        best = v;
        k = i;
      }
    }
    return k;
  }
  Scalar value(const Vec3<Scalar>& p_SP) const {
    using std::abs;
    const int k = activeAxis(p_SP);
    return halfLengths[k] - abs(p_SP[k]);
  }
  // Piecewise constant; on an edge or corner the lowest active axis wins.
  Vec3<Scalar> gradient(const Vec3<Scalar>& p_SP) const {
    const int k = activeAxis(p_SP);
    Vec3<Scalar> g = Vec3<Scalar>::Zero();
    g[k] = p_SP[k] >= Scalar(0) ? Scalar(-1) : Scalar(1);
    return g;
  }
  Mat33<Scalar> hessian(const Vec3<Scalar>&) const { return Mat33<Scalar>::Zero(); }
};

}  // namespace capstan::geometry
