// Forward kinematics, body Jacobians and qdot = N(q) u for a Mechanism<Scalar>.
//
// Frames per body B with parent P (World when the joint's parent is -1):
//   X_WB = X_WP * X_PF * X_FM(q) * X_MB,   X_MB = X_BM^-1.
// Every joint's motion is described in its F frame by the hinge matrix
// H_FM_F (6 x nu_j): V_FM = [w_FM; v_FMo] (in F) = H_FM_F u_j. It is constant
// for every joint type but Universal. Across the joint, at Bo and in World:
//   V_PB_W = H_PB_W u_j,  H_PB_W = [R_WF Hw; R_WF (Hv + Hw x p_MoBo_F)]
// and the recursions (all about body origins, in World) are
//   V_WB = [w_WP; v_WPo + w_WP x p_PoBo_W] + V_PB_W
//   A_WB = [dw_WP; a_WPo + dw_WP x p_PoBo_W] + H_PB_W udot_j + Ac_WB
// with the velocity-product term
//   Ac_WB = [w_WP x w_PB + R_WF Hdot_w u;
//            w_WP x (w_WP x p_PoBo) + 2 w_WP x v_PBo
//            + R_WF (Hdot_v u + (Hdot_w u) x p_MoBo_F + w_FM x (w_FM x p_MoBo_F))].
// docs/runtime.md derives them. All functions are traceable with a symbolic
// Scalar: they branch on joint types (JointTraits, mechanism.hpp) and
// topology only.
#pragma once

#include "capstan/data.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace capstan {

namespace detail {

// X_FM(q) and H_FM_F for one joint (JointTraits::position).
template <class Scalar>
void jointPosition(const Joint<Scalar>& joint, const VectorX<Scalar>& q, Transform<Scalar>& X_FM,
                   Mat6X<Scalar>& H) {
  H.setZero();
  visitJointType(joint.type, [&](auto traits) { decltype(traits)::position(joint, q, X_FM, H); });
}

// d/dt_F(H_FM_F) u_j (JointTraits::hdotU): nonzero only where H turns with q
// (Universal).
template <class Scalar>
Vec6<Scalar> jointHdotU(const Joint<Scalar>& joint, const Mat6X<Scalar>& H, const VectorX<Scalar>& u) {
  Vec6<Scalar> out = Vec6<Scalar>::Zero();
  visitJointType(joint.type, [&](auto traits) { decltype(traits)::hdotU(joint, H, u, out); });
  return out;
}

}  // namespace detail

// Position kinematics: X_FM, X_WB, H_PB_W, M_Bo_W for every body.
// q: (nq). Needs nothing; everything else needs it.
template <class Scalar>
void forwardKinematics(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q) {
  const int nb = model.numBodies();
  for (int i = 0; i < nb; ++i) {
    const auto b = static_cast<std::size_t>(i);
    const Joint<Scalar>& joint = model.joints[b];
    const Body<Scalar>& body = model.bodies[b];
    detail::jointPosition(joint, q, data.X_FM[b], data.H_FM_F[b]);

    const Transform<Scalar> X_MB = joint.X_BM.inverse();
    Transform<Scalar> X_WF = joint.X_PF;
    Vec3<Scalar> p_WPo = Vec3<Scalar>::Zero();
    if (joint.parent >= 0) {
      const Transform<Scalar>& X_WP = data.X_WB[static_cast<std::size_t>(joint.parent)];
      X_WF = X_WP * joint.X_PF;
      p_WPo = X_WP.p;
    }
    const Transform<Scalar>& X_FM = data.X_FM[b];
    data.X_WB[b] = X_WF * (X_FM * X_MB);
    data.R_WF[b] = X_WF.R;
    data.p_PoBo_W[b] = data.X_WB[b].p - p_WPo;
    data.p_MoBo_F[b] = X_FM.R * X_MB.p;

    const Mat6X<Scalar>& H = data.H_FM_F[b];
    Mat6X<Scalar>& H_W = data.H_PB_W[b];
    for (int k = 0; k < joint.nu(); ++k) {
      const Vec3<Scalar> hw = H.template block<3, 1>(0, k);
      const Vec3<Scalar> hv = H.template block<3, 1>(3, k);
      H_W.template block<3, 1>(0, k) = X_WF.R * hw;
      H_W.template block<3, 1>(3, k) = X_WF.R * (hv + cross(hw, data.p_MoBo_F[b]));
    }

    data.M_Bo_W[b] = SpatialInertia<Scalar>::fromMassCenter(body.mass, body.p_BoBcm_B, body.I_Bcm_B)
                         .reExpress(data.X_WB[b].R);
  }
}

// Position and velocity kinematics: also V_WB, Ac_WB and the bias
// accelerations Abias_WB (A_WB when udot = 0). q: (nq), u: (nu).
template <class Scalar>
void forwardKinematics(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                       const VectorX<Scalar>& u) {
  forwardKinematics(model, data, q);
  const int nb = model.numBodies();
  for (int i = 0; i < nb; ++i) {
    const auto b = static_cast<std::size_t>(i);
    const Joint<Scalar>& joint = model.joints[b];
    const int nu_j = joint.nu();
    const Mat6X<Scalar>& H = data.H_FM_F[b];

    Vec6<Scalar> V_FM_F = Vec6<Scalar>::Zero();
    Vec6<Scalar> V_PB_W = Vec6<Scalar>::Zero();
    if (nu_j > 0) {
      V_FM_F = H * u.segment(joint.uOffset, nu_j);
      V_PB_W = data.H_PB_W[b] * u.segment(joint.uOffset, nu_j);
    }
    const Vec6<Scalar> Hdot_u = detail::jointHdotU(joint, H, u);

    // Velocity-product acceleration across the joint, measured in F.
    const Vec3<Scalar> w_FM = V_FM_F.template head<3>();
    const Vec3<Scalar>& p_MoBo_F = data.p_MoBo_F[b];
    const Vec3<Scalar> dw_F = Hdot_u.template head<3>();
    const Vec3<Scalar> a_F =
        Hdot_u.template tail<3>() + cross(dw_F, p_MoBo_F) + cross(w_FM, cross(w_FM, p_MoBo_F));
    const Mat3<Scalar>& R_WF = data.R_WF[b];
    Vec6<Scalar> Ac = spatialVector<Scalar>(R_WF * dw_F, R_WF * a_F);

    const Vec3<Scalar> w_PB = V_PB_W.template head<3>();
    const Vec3<Scalar> v_PBo = V_PB_W.template tail<3>();
    if (joint.parent >= 0) {
      const auto p = static_cast<std::size_t>(joint.parent);
      const Vec6<Scalar>& V_WP = data.V_WB[p];
      const Vec3<Scalar> w_WP = V_WP.template head<3>();
      const Vec3<Scalar>& r = data.p_PoBo_W[b];
      data.V_WB[b] = shiftVelocity(V_WP, r) + V_PB_W;
      Ac.template head<3>() += cross(w_WP, w_PB);
      Ac.template tail<3>() += cross(w_WP, cross(w_WP, r)) + Scalar(2) * cross(w_WP, v_PBo);
      data.Ac_WB[b] = Ac;
      const Vec6<Scalar>& A_WP = data.Abias_WB[p];
      data.Abias_WB[b] = shiftVelocity(A_WP, r) + Ac;
    } else {
      data.V_WB[b] = V_PB_W;
      data.Ac_WB[b] = Ac;
      data.Abias_WB[b] = Ac;
    }
  }
}

// Position, velocity and acceleration kinematics: also A_WB. udot: (nu).
template <class Scalar>
void forwardKinematics(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                       const VectorX<Scalar>& u, const VectorX<Scalar>& udot) {
  forwardKinematics(model, data, q, u);
  const int nb = model.numBodies();
  for (int i = 0; i < nb; ++i) {
    const auto b = static_cast<std::size_t>(i);
    const Joint<Scalar>& joint = model.joints[b];
    Vec6<Scalar> A = data.Ac_WB[b];
    if (joint.nu() > 0) A += data.H_PB_W[b] * udot.segment(joint.uOffset, joint.nu());
    if (joint.parent >= 0) A += shiftVelocity(data.A_WB[static_cast<std::size_t>(joint.parent)], data.p_PoBo_W[b]);
    data.A_WB[b] = A;
  }
}

// J_WF (6 x nu) of a frame F fixed on `body`, origin Fo at p_BoFo_B:
// V_WF = [w_WB; v_WFo] = J_WF u, angular rows then linear, in World. Each
// joint k on the path from the root contributes its columns H_PK_W shifted
// from Ko to Fo:
//   J_WF(:, k) = [Hw_k; Hv_k + Hw_k x (p_WFo - p_WKo)],  p_WFo = X_WB p_BoFo_B,
// and every other column is zero (the structural zeros of the tree). Needs
// position kinematics.
template <class Scalar>
void frameJacobian(const Mechanism<Scalar>& model, const Data<Scalar>& data, int body, const Vec3<Scalar>& p_BoFo_B,
                   MatrixX<Scalar>& J_WF) {
  if (J_WF.rows() != 6 || J_WF.cols() != model.nu) J_WF.resize(6, model.nu);
  J_WF.setZero();
  const Vec3<Scalar> p_WFo = data.X_WB[static_cast<std::size_t>(body)] * p_BoFo_B;
  for (int k = body; k >= 0; k = model.joints[static_cast<std::size_t>(k)].parent) {
    const auto kb = static_cast<std::size_t>(k);
    const Joint<Scalar>& joint = model.joints[kb];
    const Vec3<Scalar> p_KoFo_W = p_WFo - data.X_WB[kb].p;
    for (int c = 0; c < joint.nu(); ++c) {
      const Vec6<Scalar> column = data.H_PB_W[kb].col(c);
      J_WF.col(joint.uOffset + c) = shiftVelocity(column, p_KoFo_W);
    }
  }
}

// J_WB (6 x nu): V_WB = J_WB u, about Bo, in World (frameJacobian at Bo).
// Needs position kinematics.
template <class Scalar>
void bodyJacobian(const Mechanism<Scalar>& model, const Data<Scalar>& data, int body, MatrixX<Scalar>& J_WB) {
  frameJacobian(model, data, body, Vec3<Scalar>(Vec3<Scalar>::Zero()), J_WB);
}

// Jdot_WF u (6): the classical acceleration [dw_WB; a_WFo] of frame F's
// origin when udot = 0, in World, as Simbody's calcBiasForFrameJacobian
// defines it (A_WF = J_WF udot + Jdot_WF u). From Bo's (Abias_WB):
//   a_WFo = a_WBo + dw_WB x p_BoFo_W + w_WB x (w_WB x p_BoFo_W),
//   p_BoFo_W = R_WB p_BoFo_B.
// Needs velocity kinematics.
template <class Scalar>
Vec6<Scalar> frameJacobianDotU(const Mechanism<Scalar>& model, const Data<Scalar>& data, int body,
                               const Vec3<Scalar>& p_BoFo_B) {
  (void)model;
  const auto b = static_cast<std::size_t>(body);
  const Vec3<Scalar> p_BoFo_W = data.X_WB[b].R * p_BoFo_B;
  const Vec3<Scalar> dw = data.Abias_WB[b].template head<3>();
  const Vec3<Scalar> w = data.V_WB[b].template head<3>();
  const Vec3<Scalar> a = data.Abias_WB[b].template tail<3>() + cross(dw, p_BoFo_W) + cross(w, cross(w, p_BoFo_W));
  return spatialVector<Scalar>(dw, a);
}

// J_WQ (3 x nu): v_WQ = J_WQ u for the point Q fixed on `body` at p_BoQ_B.
// Needs position kinematics.
template <class Scalar>
void stationJacobian(const Mechanism<Scalar>& model, const Data<Scalar>& data, int body,
                     const Vec3<Scalar>& p_BoQ_B, MatrixX<Scalar>& J_WQ) {
  if (J_WQ.rows() != 3 || J_WQ.cols() != model.nu) J_WQ.resize(3, model.nu);
  J_WQ.setZero();
  const Transform<Scalar>& X_WB = data.X_WB[static_cast<std::size_t>(body)];
  const Vec3<Scalar> p_WQ = X_WB * p_BoQ_B;
  for (int k = body; k >= 0; k = model.joints[static_cast<std::size_t>(k)].parent) {
    const auto kb = static_cast<std::size_t>(k);
    const Joint<Scalar>& joint = model.joints[kb];
    const Vec3<Scalar> p_KoQ_W = p_WQ - data.X_WB[kb].p;
    for (int c = 0; c < joint.nu(); ++c) {
      const Vec3<Scalar> w = data.H_PB_W[kb].template block<3, 1>(0, c);
      const Vec3<Scalar> v = data.H_PB_W[kb].template block<3, 1>(3, c);
      J_WQ.col(joint.uOffset + c) = v + cross(w, p_KoQ_W);
    }
  }
}

// The configuration with every joint at q = 0 and identity quaternions. (nq)
template <class Scalar>
VectorX<Scalar> neutralConfiguration(const Mechanism<Scalar>& model) {
  VectorX<Scalar> q = VectorX<Scalar>::Zero(model.nq);
  for (const auto& joint : model.joints) {
    if (hasQuaternion(joint.type)) q[joint.qOffset] = Scalar(1);
  }
  return q;
}

// qdot = N(q) u. Quaternion joints: qdot_quat = 1/2 (0, w_FM_F) (x) quat;
// every other coordinate: qdot = u. q, qdot: (nq); u: (nu).
template <class Scalar>
void qdotFromU(const Mechanism<Scalar>& model, const VectorX<Scalar>& q, const VectorX<Scalar>& u,
               VectorX<Scalar>& qdot) {
  if (qdot.size() != model.nq) qdot.resize(model.nq);
  const Scalar half(0.5);
  for (const auto& joint : model.joints) {
    const int iq = joint.qOffset;
    const int iu = joint.uOffset;
    if (hasQuaternion(joint.type)) {
      const Scalar &w = q[iq], &x = q[iq + 1], &y = q[iq + 2], &z = q[iq + 3];
      const Scalar &wx = u[iu], &wy = u[iu + 1], &wz = u[iu + 2];
      qdot[iq] = -half * (x * wx + y * wy + z * wz);
      qdot[iq + 1] = half * (w * wx + z * wy - y * wz);
      qdot[iq + 2] = half * (-z * wx + w * wy + x * wz);
      qdot[iq + 3] = half * (y * wx - x * wy + w * wz);
      for (int k = 0; k < joint.nu() - 3; ++k) qdot[iq + 4 + k] = u[iu + 3 + k];  // Free: p_FoMo_F
    } else {
      for (int k = 0; k < joint.nu(); ++k) qdot[iq + k] = u[iu + k];
    }
  }
}

// u from qdot, the left inverse of N(q): w_FM_F = 2 vec(qdot_quat (x) conj(quat)) / |quat|^2.
template <class Scalar>
void uFromQdot(const Mechanism<Scalar>& model, const VectorX<Scalar>& q, const VectorX<Scalar>& qdot,
               VectorX<Scalar>& u) {
  if (u.size() != model.nu) u.resize(model.nu);
  for (const auto& joint : model.joints) {
    const int iq = joint.qOffset;
    const int iu = joint.uOffset;
    if (hasQuaternion(joint.type)) {
      const Vec4<Scalar> quat = detail::quaternionAt(q, iq);
      const Vec4<Scalar> conj(quat[0], -quat[1], -quat[2], -quat[3]);
      const Vec4<Scalar> prod = quaternionProduct<Scalar>(detail::quaternionAt(qdot, iq), conj);
      const Scalar s = Scalar(2) / (quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
      for (int k = 0; k < 3; ++k) u[iu + k] = s * prod[1 + k];
      for (int k = 0; k < joint.nu() - 3; ++k) u[iu + 3 + k] = qdot[iq + 4 + k];  // Free: v_FMo
    } else {
      for (int k = 0; k < joint.nu(); ++k) u[iu + k] = qdot[iq + k];
    }
  }
}

// N(q) (nq x nu) as a matrix, for constraint code and tests.
template <class Scalar>
MatrixX<Scalar> nMatrix(const Mechanism<Scalar>& model, const VectorX<Scalar>& q) {
  MatrixX<Scalar> N = MatrixX<Scalar>::Zero(model.nq, model.nu);
  VectorX<Scalar> e = VectorX<Scalar>::Zero(model.nu);
  VectorX<Scalar> column(model.nq);
  for (int c = 0; c < model.nu; ++c) {
    e[c] = Scalar(1);
    qdotFromU(model, q, e, column);
    N.col(c) = column;
    e[c] = Scalar(0);
  }
  return N;
}

// Scales each joint quaternion in q to unit length (after accepted steps,
// and on a state given by a user). Divided by its largest component first,
// so that neither {1e200, 1e200, 0, 0} (whose squares overflow) nor
// {1e-200, 0, 0, 0} (whose squares underflow) loses its direction. The
// generated class's normalizeQuaternions (model.hpp.j2) does the same.
inline void normalizeQuaternion(double* e) {
  const double largest = std::max({std::abs(e[0]), std::abs(e[1]), std::abs(e[2]), std::abs(e[3])});
  if (!std::isfinite(largest)) return;  // not finite: left for the caller to refuse
  if (largest == 0) {  // no direction: NaN, which the caller refuses, as for 0/0
    for (int k = 0; k < 4; ++k) e[k] = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  for (int k = 0; k < 4; ++k) e[k] /= largest;
  const double norm = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
  for (int k = 0; k < 4; ++k) e[k] /= norm;
}
// (A traced Scalar divides by the norm alone: it has no branches on values.)
template <class Scalar>
void normalizeQuaternions(const Mechanism<Scalar>& model, VectorX<Scalar>& q) {
  using std::sqrt;
  for (const auto& joint : model.joints) {
    if (!hasQuaternion(joint.type)) continue;
    const int iq = joint.qOffset;
    if constexpr (std::is_same_v<Scalar, double>) {
      normalizeQuaternion(&q[iq]);
    } else {
      const Scalar norm = sqrt(q[iq] * q[iq] + q[iq + 1] * q[iq + 1] + q[iq + 2] * q[iq + 2] + q[iq + 3] * q[iq + 3]);
      for (int k = 0; k < 4; ++k) q[iq + k] = q[iq + k] / norm;
    }
  }
}

}  // namespace capstan
