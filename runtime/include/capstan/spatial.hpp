// Spatial algebra templated on Scalar: rotations, rigid transforms, spatial
// velocities and forces, rigid-body spatial inertia, quaternions.
//
// Conventions (docs/runtime.md, docs/notation.md):
// - Monogram names: R_AB is the rotation of frame B in frame A (maps vectors
//   expressed in B to A); p_AoBo_A the position of Bo from Ao expressed in A;
//   X_AB = {R_AB, p_AoBo_A} the pose of B in A.
// - Spatial vectors are Vec6 = [angular; linear]: a spatial velocity
//   V_AB = [w_AB; v_ABo] (angular velocity, then the velocity of the point Bo)
//   and a spatial force F_Bo = [t_Bo; f] (torque about Bo, then force), as in
//   Simbody. The point a spatial vector refers to is part of its name.
// - Quaternions are Vec4 = (w, x, y, z).
//
// Every function here is traceable with a symbolic Scalar: Scalar arithmetic
// only, no branches on Scalar values, math functions called unqualified
// (`using std::sin; sin(x)`) so a custom Scalar's overloads are found by ADL.
// The one exception is marked "double-valued only".
#pragma once

#include <Eigen/Core>

#include <cmath>

namespace capstan {

template <class Scalar> using Vec3 = Eigen::Matrix<Scalar, 3, 1>;
template <class Scalar> using Vec4 = Eigen::Matrix<Scalar, 4, 1>;
template <class Scalar> using Vec6 = Eigen::Matrix<Scalar, 6, 1>;
template <class Scalar> using Mat3 = Eigen::Matrix<Scalar, 3, 3>;
template <class Scalar> using Mat6 = Eigen::Matrix<Scalar, 6, 6>;
template <class Scalar> using VectorX = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
template <class Scalar> using MatrixX = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
// A 6 x k matrix with k <= 6 known at run time; never allocates.
template <class Scalar>
using Mat6X = Eigen::Matrix<Scalar, 6, Eigen::Dynamic, Eigen::ColMajor, 6, 6>;

// a x b, written out so that a symbolic Scalar sees exactly these products.
template <class Scalar>
Vec3<Scalar> cross(const Vec3<Scalar>& a, const Vec3<Scalar>& b) {
  return Vec3<Scalar>(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                      a[0] * b[1] - a[1] * b[0]);
}

template <class Scalar>
Scalar dot(const Vec3<Scalar>& a, const Vec3<Scalar>& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

// [v]x, the matrix with [v]x * a == v x a.
template <class Scalar>
Mat3<Scalar> skew(const Vec3<Scalar>& v) {
  Mat3<Scalar> S;
  S << Scalar(0), -v[2], v[1], v[2], Scalar(0), -v[0], -v[1], v[0], Scalar(0);
  return S;
}

// R_FM for a rotation by `angle` (rad) about the unit vector `axis` (the same
// in F and M): R = c*I + s*[a]x + (1 - c)*a*a^T (Rodrigues).
template <class Scalar>
Mat3<Scalar> axisAngleRotation(const Vec3<Scalar>& axis, const Scalar& angle) {
  using std::cos;
  using std::sin;
  const Scalar c = cos(angle);
  const Scalar s = sin(angle);
  const Scalar t = Scalar(1) - c;
  Mat3<Scalar> R = t * axis * axis.transpose() + s * skew(axis);
  R(0, 0) += c;
  R(1, 1) += c;
  R(2, 2) += c;
  return R;
}

// R_FM of the quaternion q = (w, x, y, z). q need not be unit length: like
// Drake's RotationMatrix it divides by |q|^2, so the result is a rotation for
// any nonzero q (integrator stages between normalizations stay consistent).
template <class Scalar>
Mat3<Scalar> rotationFromQuaternion(const Vec4<Scalar>& q) {
  const Scalar& w = q[0];
  const Scalar& x = q[1];
  const Scalar& y = q[2];
  const Scalar& z = q[3];
  const Scalar s = Scalar(2) / (w * w + x * x + y * y + z * z);
  const Scalar xx = s * x * x, yy = s * y * y, zz = s * z * z;
  const Scalar xy = s * x * y, xz = s * x * z, yz = s * y * z;
  const Scalar wx = s * w * x, wy = s * w * y, wz = s * w * z;
  Mat3<Scalar> R;
  R << Scalar(1) - (yy + zz), xy - wz, xz + wy,  //
      xy + wz, Scalar(1) - (xx + zz), yz - wx,   //
      xz - wy, yz + wx, Scalar(1) - (xx + yy);
  return R;
}

// The unit quaternion (w >= 0) of a rotation matrix. Double-valued only: it
// branches on values (Shepperd's method) and is meant for initial
// conditions and tests, never for traced code.
inline Vec4<double> quaternionFromRotation(const Mat3<double>& R) {
  const double trace = R.trace();
  Vec4<double> q;
  if (trace >= R(0, 0) && trace >= R(1, 1) && trace >= R(2, 2)) {
    const double r = std::sqrt(1.0 + trace);
    const double s = 0.5 / r;
    q << 0.5 * r, (R(2, 1) - R(1, 2)) * s, (R(0, 2) - R(2, 0)) * s, (R(1, 0) - R(0, 1)) * s;
  } else if (R(0, 0) >= R(1, 1) && R(0, 0) >= R(2, 2)) {
    const double r = std::sqrt(1.0 + R(0, 0) - R(1, 1) - R(2, 2));
    const double s = 0.5 / r;
    q << (R(2, 1) - R(1, 2)) * s, 0.5 * r, (R(0, 1) + R(1, 0)) * s, (R(0, 2) + R(2, 0)) * s;
  } else if (R(1, 1) >= R(2, 2)) {
    const double r = std::sqrt(1.0 + R(1, 1) - R(0, 0) - R(2, 2));
    const double s = 0.5 / r;
    q << (R(0, 2) - R(2, 0)) * s, (R(0, 1) + R(1, 0)) * s, 0.5 * r, (R(1, 2) + R(2, 1)) * s;
  } else {
    const double r = std::sqrt(1.0 + R(2, 2) - R(0, 0) - R(1, 1));
    const double s = 0.5 / r;
    q << (R(1, 0) - R(0, 1)) * s, (R(0, 2) + R(2, 0)) * s, (R(1, 2) + R(2, 1)) * s, 0.5 * r;
  }
  if (q[0] < 0.0) q = -q;
  return q / q.norm();
}

// The Hamilton product a (x) b of quaternions (w, x, y, z): R(a (x) b) = R(a) R(b).
template <class Scalar>
Vec4<Scalar> quaternionProduct(const Vec4<Scalar>& a, const Vec4<Scalar>& b) {
  return Vec4<Scalar>(a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                      a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                      a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                      a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]);
}

// X_AB: the pose of frame B in frame A, R = R_AB, p = p_AoBo_A.
template <class Scalar>
struct Transform {
  Mat3<Scalar> R = Mat3<Scalar>::Identity();
  Vec3<Scalar> p = Vec3<Scalar>::Zero();

  Transform() = default;
  Transform(const Mat3<Scalar>& R_AB, const Vec3<Scalar>& p_AoBo_A) : R(R_AB), p(p_AoBo_A) {}

  static Transform identity() { return Transform(); }

  // X_BA from X_AB.
  Transform inverse() const {
    Mat3<Scalar> R_BA = R.transpose();
    return Transform(R_BA, -(R_BA * p));
  }

  // X_AC = X_AB * X_BC.
  Transform operator*(const Transform& X_BC) const {
    return Transform(R * X_BC.R, p + R * X_BC.p);
  }

  // p_AoQ_A = X_AB * p_BoQ_B.
  Vec3<Scalar> operator*(const Vec3<Scalar>& p_BoQ_B) const { return p + R * p_BoQ_B; }

  template <class NewScalar>
  Transform<NewScalar> cast() const {
    return Transform<NewScalar>(R.template cast<NewScalar>(), p.template cast<NewScalar>());
  }
};

// Angular and linear parts of a spatial vector [angular; linear].
template <class Derived>
auto angular(const Eigen::MatrixBase<Derived>& V) {
  return V.template head<3>();
}
template <class Derived>
auto linear(const Eigen::MatrixBase<Derived>& V) {
  return V.template tail<3>();
}

template <class Scalar>
Vec6<Scalar> spatialVector(const Vec3<Scalar>& angularPart, const Vec3<Scalar>& linearPart) {
  Vec6<Scalar> V;
  V << angularPart, linearPart;
  return V;
}

// V_AB at Bo from V_AB at Ao (same expressed-in frame E):
// w unchanged, v_ABo = v_ABo' + w x p_AoBo_E. (Featherstone's motion transform.)
template <class Scalar>
Vec6<Scalar> shiftVelocity(const Vec6<Scalar>& V_ao, const Vec3<Scalar>& p_AoBo_E) {
  const Vec3<Scalar> w = V_ao.template head<3>();
  const Vec3<Scalar> v = V_ao.template tail<3>();
  return spatialVector<Scalar>(w, v + cross(w, p_AoBo_E));
}

// F_Ao from F_Bo (a force applied at Bo, referred to Ao; same frame E):
// t_Ao = t_Bo + p_AoBo_E x f, f unchanged.
template <class Scalar>
Vec6<Scalar> shiftForce(const Vec6<Scalar>& F_Bo, const Vec3<Scalar>& p_AoBo_E) {
  const Vec3<Scalar> t = F_Bo.template head<3>();
  const Vec3<Scalar> f = F_Bo.template tail<3>();
  return spatialVector<Scalar>(t + cross(p_AoBo_E, f), f);
}

// Re-express a spatial vector given in B in frame A: [R_AB w; R_AB v].
template <class Scalar>
Vec6<Scalar> reExpress(const Mat3<Scalar>& R_AB, const Vec6<Scalar>& V_B) {
  return spatialVector<Scalar>(R_AB * V_B.template head<3>(), R_AB * V_B.template tail<3>());
}

// Spatial cross products (Featherstone's V x and V x*) in the Plücker sense
// for V = [w; v] and the motion m = [mw; mv] or force f = [n; f]:
//   V x m  = [w x mw; w x mv + v x mw]
//   V x* f = [w x n + v x f; w x f]
template <class Scalar>
Vec6<Scalar> crossMotion(const Vec6<Scalar>& V, const Vec6<Scalar>& m) {
  const Vec3<Scalar> w = V.template head<3>(), v = V.template tail<3>();
  const Vec3<Scalar> mw = m.template head<3>(), mv = m.template tail<3>();
  return spatialVector<Scalar>(cross(w, mw), cross(w, mv) + cross(v, mw));
}

template <class Scalar>
Vec6<Scalar> crossForce(const Vec6<Scalar>& V, const Vec6<Scalar>& f) {
  const Vec3<Scalar> w = V.template head<3>(), v = V.template tail<3>();
  const Vec3<Scalar> n = f.template head<3>(), fl = f.template tail<3>();
  return spatialVector<Scalar>(cross(w, n) + cross(v, fl), cross(w, fl));
}

// Spatial inertia of a rigid body (or a composite of rigidly moving bodies)
// about a point P, expressed in a frame E: mass m, first moment
// h = m * p_PBcm_E, rotational inertia I_P (about P, in E). Acting on the
// spatial velocity [w; v_P] it gives the momentum about P:
//   L_P = I_P w + h x v_P,   p = m v_P - h x w.
template <class Scalar>
struct SpatialInertia {
  Scalar mass = Scalar(0);
  Vec3<Scalar> h = Vec3<Scalar>::Zero();
  Mat3<Scalar> I_P = Mat3<Scalar>::Zero();

  SpatialInertia() = default;
  SpatialInertia(const Scalar& m, const Vec3<Scalar>& firstMoment, const Mat3<Scalar>& inertiaAboutP)
      : mass(m), h(firstMoment), I_P(inertiaAboutP) {}

  // From mass, center of mass p_PBcm_E and central inertia I_Bcm_E.
  static SpatialInertia fromMassCenter(const Scalar& m, const Vec3<Scalar>& p_PBcm_E,
                                       const Mat3<Scalar>& I_Bcm_E) {
    // I_P = I_Bcm + m (|c|^2 1 - c c^T)
    Mat3<Scalar> I = I_Bcm_E - m * p_PBcm_E * p_PBcm_E.transpose();
    const Scalar c2 = m * dot(p_PBcm_E, p_PBcm_E);
    I(0, 0) += c2;
    I(1, 1) += c2;
    I(2, 2) += c2;
    return SpatialInertia(m, m * p_PBcm_E, I);
  }

  // The same inertia about the point Q, given p_PQ_E (from the current point
  // P to Q). With r = p_QP = -p_PQ:
  //   I_Q = I_P + m(|r|^2 1 - r r^T) + 2 (r.h) 1 - r h^T - h r^T,  h_Q = h + m r.
  SpatialInertia shift(const Vec3<Scalar>& p_PQ_E) const {
    const Vec3<Scalar> r = -p_PQ_E;
    Mat3<Scalar> I = I_P - mass * r * r.transpose() - r * h.transpose() - h * r.transpose();
    const Scalar diag = mass * dot(r, r) + Scalar(2) * dot(r, h);
    I(0, 0) += diag;
    I(1, 1) += diag;
    I(2, 2) += diag;
    return SpatialInertia(mass, h + mass * r, I);
  }

  // The same inertia expressed in A, given R_AE.
  SpatialInertia reExpress(const Mat3<Scalar>& R_AE) const {
    return SpatialInertia(mass, R_AE * h, R_AE * I_P * R_AE.transpose());
  }

  SpatialInertia operator+(const SpatialInertia& other) const {
    return SpatialInertia(mass + other.mass, h + other.h, I_P + other.I_P);
  }
  SpatialInertia& operator+=(const SpatialInertia& other) {
    mass += other.mass;
    h += other.h;
    I_P += other.I_P;
    return *this;
  }

  // Momentum about P of the spatial velocity V = [w; v_P] (or the spatial
  // force that produces the spatial acceleration V, ignoring velocity terms).
  Vec6<Scalar> operator*(const Vec6<Scalar>& V) const {
    const Vec3<Scalar> w = V.template head<3>(), v = V.template tail<3>();
    return spatialVector<Scalar>(I_P * w + cross(h, v), mass * v - cross(h, w));
  }

  // The 6x6 matrix [[I_P, [h]x], [-[h]x, m 1]].
  Mat6<Scalar> matrix() const {
    Mat6<Scalar> M;
    const Mat3<Scalar> H = skew(h);
    M.template topLeftCorner<3, 3>() = I_P;
    M.template topRightCorner<3, 3>() = H;
    M.template bottomLeftCorner<3, 3>() = -H;
    M.template bottomRightCorner<3, 3>() = mass * Mat3<Scalar>::Identity();
    return M;
  }
};

// Shift a 6x6 spatial (e.g. articulated) inertia from Bo to Ao, both
// expressed in E, given p_AoBo_E:  I_Ao = Phi^T I_Bo Phi with
// Phi = [[1, 0], [-[r]x, 1]] (V_Bo = Phi V_Ao, F_Ao = Phi^T F_Bo).
template <class Scalar>
Mat6<Scalar> shiftInertiaMatrix(const Mat6<Scalar>& I_Bo, const Vec3<Scalar>& p_AoBo_E) {
  const Mat3<Scalar> S = skew(p_AoBo_E);
  const Mat3<Scalar> A = I_Bo.template topLeftCorner<3, 3>();
  const Mat3<Scalar> B = I_Bo.template topRightCorner<3, 3>();
  const Mat3<Scalar> C = I_Bo.template bottomLeftCorner<3, 3>();
  const Mat3<Scalar> D = I_Bo.template bottomRightCorner<3, 3>();
  // Phi^T = [[1, [r]x], [0, 1]] since (-[r]x)^T = [r]x.
  const Mat3<Scalar> C2 = C - D * S;           // bottom-left of I Phi
  const Mat3<Scalar> A2 = A - B * S;           // top-left of I Phi
  Mat6<Scalar> out;
  out.template topLeftCorner<3, 3>() = A2 + S * C2;
  out.template topRightCorner<3, 3>() = B + S * D;
  out.template bottomLeftCorner<3, 3>() = C2;
  out.template bottomRightCorner<3, 3>() = D;
  return out;
}

}  // namespace capstan
