// Force elements between two frames: the point-to-point spring-damper
// (`Spring`), the roll-pitch-yaw bushing (`Bushing`, Drake's
// LinearBushingRollPitchYaw, its formulas restated below) and the compliant
// contact of a sphere with a sphere or a half-space (`HuntCrossleyContact`,
// Simbody's HuntCrossleyForce).
//
// Frames: A is the element's `frame_a`, C its `frame_b`. Each element reads
// the two frames' motion in World (FrameMotion) and returns the spatial
// forces it applies at their origins, [torque; force] in World:
//   F_Ao_W on the body of A about Ao,  F_Co_W on the body of C about Co,
// which the caller moves to the body origins (shiftForce) and adds to the
// external forces of the dynamics (local::ExternalForces). Everything here
// is traceable with a symbolic Scalar: no branch on values. Where a formula
// is undefined (a spring of zero length, a bushing at gimbal lock) the
// element says so through its result (BushingForces::cosPitch) instead of
// branching; the caller decides (the interpreter and the generated drivers
// stop with an error naming the element).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "capstan/spatial.hpp"

namespace capstan {

// A frame F's pose and the velocity of its origin, in World.
template <class Scalar>
struct FrameMotion {
  Mat3<Scalar> R_WF = Mat3<Scalar>::Identity();
  Vec3<Scalar> p_WF = Vec3<Scalar>::Zero();  // p_WoFo_W (m)
  Vec3<Scalar> w_WF = Vec3<Scalar>::Zero();  // (rad/s)
  Vec3<Scalar> v_WF = Vec3<Scalar>::Zero();  // v_WFo_W (m/s)
};

// --------------------------------------------------------------- Spring
//
// A linear spring-damper between the origins Ao and Co:
//   r = p_WCo - p_WAo,  L = |r|,  e = r / L,  Ldot = e . (v_WCo - v_WAo),
//   T = k (L - L0) + d Ldot  (tension, N),
// force -T e on C at Co and +T e on A at Ao; elastic energy 1/2 k (L - L0)^2.
// L is computed as sqrt(r.r + 1e-300), the same double for any length above
// 1e-142 m, so coincident origins give no force instead of 0/0.
template <class Scalar>
struct SpringForces {
  Scalar length, lengthDot, tension, energy;  // m, m/s, N, J
  Vec6<Scalar> F_Ao_W, F_Co_W;                // [torque; force] about Ao and Co, in World
};

template <class Scalar>
SpringForces<Scalar> spring(const FrameMotion<Scalar>& A, const FrameMotion<Scalar>& C, const Scalar& stiffness,
                            const Scalar& damping, const Scalar& length0) {
  using std::sqrt;
  SpringForces<Scalar> out;
  const Vec3<Scalar> r = C.p_WF - A.p_WF;
  out.length = sqrt(dot(r, r) + Scalar(1e-300));
  const Vec3<Scalar> e = r / out.length;
  out.lengthDot = dot(e, Vec3<Scalar>(C.v_WF - A.v_WF));
  const Scalar stretch = out.length - length0;
  out.tension = stiffness * stretch + damping * out.lengthDot;
  out.energy = Scalar(0.5) * stiffness * stretch * stretch;
  const Vec3<Scalar> f = e * out.tension;
  out.F_Ao_W = spatialVector<Scalar>(Vec3<Scalar>::Zero(), f);
  out.F_Co_W = spatialVector<Scalar>(Vec3<Scalar>::Zero(), Vec3<Scalar>(-f));
  return out;
}

// -------------------------------------------------------------- Bushing
//
// With R_AC = R_WA^T R_WC, r = p_AoCo_A, w_AC_A and v_ACo_A (the derivative
// of r taken in A):
//   q = (roll q0, pitch q1, yaw q2) with R_AC = Rz(q2) Ry(q1) Rx(q0):
//     cp = sqrt(R00^2 + R10^2) = cos q1,  q1 = atan2(-R20, cp),
//     q0 = atan2(R21, R22),  q2 = atan2(R10, R00);
//   qdot = N w_AC_A,  N = [cy/cp, sy/cp, 0; -sy, cy, 0; cy sp/cp, sy sp/cp, 1]
//     (cy = R00/cp, sy = R10/cp, sp = -R20);
//   gimbal torques tau = -(k012 o q + d012 o qdot), torque on C t = N^T tau (in A);
//   frame B halfway: R_AB the rotation about R_AC's axis by half its angle,
//     from the quaternion (1 + w, x, y, z) of R_AC's unit (w, x, y, z), w >= 0.
//     K = 4 q q^T is linear in R_AC (K00 = 1 + tr, K0i = 4 w q_i from the
//     skew part, Kij = 4 q_i q_j from the symmetric part); its first column
//     g = 4 w q, and K g = 16 w q keeps q's direction to a few eps at every
//     angle below pi, where g alone loses it as w -> 0 (error ~ eps / w^2:
//     5e-4 at 1e-6 rad short of a half turn). half = (|K g| + (K g)_w, (K g)_xyz);
//   [x y z] = R_AB^T r,  [xd yd zd] = R_AB^T (v_ACo_A - 1/2 w_AC_A x r);
//   f = -(kxyz o [x y z] + dxyz o [xd yd zd]) on C at Bo (in B), f_A = R_AB f;
//   F_A_A = [-t + (r/2) x (-f_A); -f_A]  about Ao, in A,
//   F_C_C = R_CA [t + (-r/2) x f_A; f_A]  about Co, in C.
// N divides by cos q1: Drake stops when |cos q1| < 0.008 (kGimbalLockCos);
// so do the callers, reading cosPitch. R_AB is undefined when R_AC turns by
// pi (1 + tr = 0); onePlusTrace reports it. Energy (Capstan's addition; Drake
// defines none): 1/2 k012 . q^2 + 1/2 kxyz . [x y z]^2. The torque part is
// exactly conservative (t . w_AC = tau . qdot); the force part only to first
// order, since [xd yd zd] is not the derivative of [x y z] in general.
inline constexpr double kGimbalLockCos = 0.008;

// What stops an evaluation at gimbal lock: bushing `name` at `pitch` (rad)
// at time t (s). One message for the interpreter and the generated drivers.
inline std::string gimbalLockMessage(std::string_view name, double pitch, double t) {
  char b[320];
  std::snprintf(b, sizeof b,
                "bushing `%.*s` is at gimbal lock at t = %.17g: pitch = %.6g degrees, within 0.458 degrees of "
                "+-90 (|cos pitch| < 0.008, where Drake's LinearBushingRollPitchYaw stops)",
                static_cast<int>(name.size()), name.data(), t, pitch * 180.0 / 3.14159265358979323846);
  return b;
}

template <class Scalar>
struct BushingConstants {
  Vec3<Scalar> k012 = Vec3<Scalar>::Zero(), d012 = Vec3<Scalar>::Zero();  // torque stiffness (N·m/rad), damping (N·m·s/rad)
  Vec3<Scalar> kxyz = Vec3<Scalar>::Zero(), dxyz = Vec3<Scalar>::Zero();  // force stiffness (N/m), damping (N·s/m)
};

template <class Scalar>
struct BushingForces {
  Vec3<Scalar> q, qdot;           // roll-pitch-yaw (rad) and rates (rad/s)
  Vec3<Scalar> xyz, xyzdot;       // p_AoCo in B (m) and its rate (m/s)
  Vec6<Scalar> F_A_A, F_C_C;      // Drake's: on A about Ao in A, on C about Co in C
  Vec6<Scalar> F_Ao_W, F_Co_W;    // the same in World
  Scalar cosPitch, onePlusTrace;  // |cos q1| (>= 0), 1 + tr(R_AC) (0 at a turn by pi)
  Scalar energy;                  // J
};

template <class Scalar>
BushingForces<Scalar> bushing(const FrameMotion<Scalar>& A, const FrameMotion<Scalar>& C,
                              const BushingConstants<Scalar>& k) {
  using std::atan2;
  using std::sqrt;
  BushingForces<Scalar> out;
  const Mat3<Scalar> R_AC = A.R_WF.transpose() * C.R_WF;
  const Vec3<Scalar> r = A.R_WF.transpose() * Vec3<Scalar>(C.p_WF - A.p_WF);
  const Vec3<Scalar> w = A.R_WF.transpose() * Vec3<Scalar>(C.w_WF - A.w_WF);
  const Vec3<Scalar> v = A.R_WF.transpose() * Vec3<Scalar>(C.v_WF - A.v_WF - cross(A.w_WF, Vec3<Scalar>(C.p_WF - A.p_WF)));

  // Roll-pitch-yaw and their rates.
  const Scalar cp = sqrt(R_AC(0, 0) * R_AC(0, 0) + R_AC(1, 0) * R_AC(1, 0));
  const Scalar sp = -R_AC(2, 0);
  const Scalar cy = R_AC(0, 0) / cp, sy = R_AC(1, 0) / cp;
  out.q = Vec3<Scalar>(atan2(R_AC(2, 1), R_AC(2, 2)), atan2(sp, cp), atan2(R_AC(1, 0), R_AC(0, 0)));
  Mat3<Scalar> N;
  N << cy / cp, sy / cp, Scalar(0),  //
      -sy, cy, Scalar(0),            //
      cy * sp / cp, sy * sp / cp, Scalar(1);
  out.qdot = N * w;
  const Vec3<Scalar> tau = -(k.k012.cwiseProduct(out.q) + k.d012.cwiseProduct(out.qdot));
  const Vec3<Scalar> t = N.transpose() * tau;

  // The halfway frame B and the displacement in it.
  using std::max;  // 1 + tr may round below 0 at a turn by pi
  const Scalar onePlusTrace = max(Scalar(0), Scalar(Scalar(1) + R_AC(0, 0) + R_AC(1, 1) + R_AC(2, 2)));
  const Vec4<Scalar> g(onePlusTrace, R_AC(2, 1) - R_AC(1, 2), R_AC(0, 2) - R_AC(2, 0), R_AC(1, 0) - R_AC(0, 1));
  const Scalar Kxx = Scalar(1) + R_AC(0, 0) - R_AC(1, 1) - R_AC(2, 2);
  const Scalar Kyy = Scalar(1) - R_AC(0, 0) + R_AC(1, 1) - R_AC(2, 2);
  const Scalar Kzz = Scalar(1) - R_AC(0, 0) - R_AC(1, 1) + R_AC(2, 2);
  const Scalar Kxy = R_AC(0, 1) + R_AC(1, 0), Kxz = R_AC(0, 2) + R_AC(2, 0), Kyz = R_AC(1, 2) + R_AC(2, 1);
  const Vec4<Scalar> Kg(g[0] * g[0] + g[1] * g[1] + g[2] * g[2] + g[3] * g[3],  // K's first row is g
                        g[1] * g[0] + Kxx * g[1] + Kxy * g[2] + Kxz * g[3],
                        g[2] * g[0] + Kxy * g[1] + Kyy * g[2] + Kyz * g[3],
                        g[3] * g[0] + Kxz * g[1] + Kyz * g[2] + Kzz * g[3]);
  const Vec4<Scalar> half(sqrt(Kg[0] * Kg[0] + Kg[1] * Kg[1] + Kg[2] * Kg[2] + Kg[3] * Kg[3]) + Kg[0], Kg[1], Kg[2],
                          Kg[3]);
  const Mat3<Scalar> R_AB = rotationFromQuaternion<Scalar>(half);  // normalizes
  out.xyz = R_AB.transpose() * r;
  out.xyzdot = R_AB.transpose() * Vec3<Scalar>(v - Scalar(0.5) * cross(w, r));
  const Vec3<Scalar> f = -(k.kxyz.cwiseProduct(out.xyz) + k.dxyz.cwiseProduct(out.xyzdot));
  const Vec3<Scalar> f_A = R_AB * f;

  const Vec3<Scalar> halfR = Scalar(0.5) * r;
  out.F_A_A = spatialVector<Scalar>(Vec3<Scalar>(-t - cross(halfR, f_A)), Vec3<Scalar>(-f_A));
  const Vec3<Scalar> tC_A = t - cross(halfR, f_A);
  out.F_C_C = spatialVector<Scalar>(Vec3<Scalar>(R_AC.transpose() * tC_A), Vec3<Scalar>(R_AC.transpose() * f_A));
  out.F_Ao_W = reExpress<Scalar>(A.R_WF, out.F_A_A);
  out.F_Co_W = spatialVector<Scalar>(Vec3<Scalar>(A.R_WF * tC_A), Vec3<Scalar>(A.R_WF * f_A));
  out.cosPitch = cp;
  out.onePlusTrace = onePlusTrace;
  out.energy = Scalar(0.5) * (k.k012.dot(out.q.cwiseProduct(out.q)) + k.kxyz.dot(out.xyz.cwiseProduct(out.xyz)));
  return out;
}

// ------------------------------------------------- Hunt-Crossley contact
//
// A compliant point contact that can separate, between a sphere B (center
// Co, the origin of C; radius rB) and a surface F on A: a sphere (center
// Ao, radius rF) or the half-space x > 0 of A (boundary the y-z plane,
// outward normal -x_A). After Simbody's HuntCrossleyForce (Hunt & Crossley
// 1975 for the normal force, Hollars for friction):
//   n   the unit normal from F into B: (Co - Ao) / |Co - Ao| for a sphere,
//       -x_A (in World) for the half-space;
//   x   the penetration depth, rF + rB - |Co - Ao| (sphere) or
//       rB + x_A . (Co - Ao) (half-space); the surfaces touch where x > 0;
//   R   the relative radius of curvature, rF rB / (rF + rB) (sphere) or rB;
//   P   the contact point, halfway between the two surfaces' deepest points
//       along n: P = Co - (rB - x/2) n;
//   v   the velocity of B's material point at P relative to F's,
//       xdot = -n . v the rate of penetration (> 0 approaching);
//   fH  = (4/3) E sqrt(R) x^(3/2)                       (Hertz; E the pair's
//       effective plane-strain modulus, `stiffness`, Pa),
//   f   = max(0, fH (1 + 3/2 c xdot))                   (Hunt-Crossley; c the
//       `dissipation`, s/m: the restitution falls as 1 - c v with impact speed v),
//   vt  = v - (n . v) n, vs = |vt|, s = vs / vtr (vtr the transition velocity),
//   mu  = min(s, 1) (ud + 2 (us - ud) / (1 + s^2)) + uv vs   (Hollars; us, ud
//       static and dynamic coefficients, uv viscous, s/m),
//   force on B at P: f n - f mu vt / vs; on F at P its opposite;
//   elastic energy (2/5) fH x.
// Apart (x <= 0) every term is zero. x^(3/2) is max(x, 0) sqrt(max(x, 0) +
// 1e-300), and vs is sqrt(vt . vt + 1e-300), the same doubles for any
// depth or slip above 1e-142, so that the derivatives are zero rather than
// 0/0 where the surfaces are apart or do not slip.
template <class Scalar>
struct HuntCrossleyConstants {
  Scalar radiusF = Scalar(0), radiusB = Scalar(0);  // m; radiusF unused for a half-space
  bool halfSpace = false;                           // F is A's half-space x > 0
  Scalar stiffness = Scalar(0), dissipation = Scalar(0);  // E (Pa), c (s/m)
  Scalar staticFriction = Scalar(0), dynamicFriction = Scalar(0), viscousFriction = Scalar(0);  // us, ud, uv (s/m)
  Scalar transitionVelocity = Scalar(0.01);  // vtr (m/s)
};

template <class Scalar>
struct HuntCrossleyForces {
  Scalar depth, depthRate, normalForce, frictionForce, energy;  // x (m), xdot (m/s), f (N), f mu vs / vs (N), J
  Vec3<Scalar> normal, point;                                   // n; P (m), in World
  Vec6<Scalar> F_Ao_W, F_Co_W;                                  // [torque; force] about Ao and Co, in World
};

template <class Scalar>
HuntCrossleyForces<Scalar> huntCrossley(const FrameMotion<Scalar>& A, const FrameMotion<Scalar>& C,
                                        const HuntCrossleyConstants<Scalar>& k) {
  using std::max;
  using std::min;
  using std::sqrt;
  HuntCrossleyForces<Scalar> out;
  const Vec3<Scalar> r = C.p_WF - A.p_WF;  // p_AoCo_W
  Scalar R;
  if (k.halfSpace) {
    const Vec3<Scalar> x_A = A.R_WF.col(0);
    out.normal = -x_A;
    out.depth = k.radiusB + dot(x_A, r);
    R = k.radiusB;
  } else {
    const Scalar distance = sqrt(dot(r, r) + Scalar(1e-300));
    out.normal = r / distance;
    out.depth = k.radiusF + k.radiusB - distance;
    R = k.radiusF * k.radiusB / (k.radiusF + k.radiusB);
  }
  const Vec3<Scalar>& n = out.normal;
  out.point = C.p_WF - (k.radiusB - Scalar(0.5) * out.depth) * n;
  const Vec3<Scalar> p_AoP = out.point - A.p_WF, p_CoP = out.point - C.p_WF;
  const Vec3<Scalar> v = Vec3<Scalar>(C.v_WF + cross(C.w_WF, p_CoP)) - Vec3<Scalar>(A.v_WF + cross(A.w_WF, p_AoP));
  out.depthRate = -dot(n, v);
  const Scalar x = max(out.depth, Scalar(0));
  const Scalar fH = Scalar(4.0 / 3.0) * k.stiffness * sqrt(R) * x * sqrt(x + Scalar(1e-300));
  out.normalForce = max(Scalar(0), Scalar(fH * (Scalar(1) + Scalar(1.5) * k.dissipation * out.depthRate)));
  const Vec3<Scalar> vt = v - dot(n, v) * n;
  const Scalar vs = sqrt(dot(vt, vt) + Scalar(1e-300));
  const Scalar s = vs / k.transitionVelocity;
  const Scalar mu = min(s, Scalar(1)) * (k.dynamicFriction + Scalar(2) * (k.staticFriction - k.dynamicFriction) /
                                                                   (Scalar(1) + s * s)) +
                    k.viscousFriction * vs;
  out.frictionForce = out.normalForce * mu;
  const Vec3<Scalar> f_B = out.normalForce * n - (out.frictionForce / vs) * vt;
  out.F_Co_W = spatialVector<Scalar>(cross(p_CoP, f_B), f_B);
  out.F_Ao_W = spatialVector<Scalar>(Vec3<Scalar>(-cross(p_AoP, f_B)), Vec3<Scalar>(-f_B));
  out.energy = Scalar(0.4) * fH * x;
  return out;
}

}  // namespace capstan
