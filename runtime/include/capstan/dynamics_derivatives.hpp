// Analytical derivatives of inverse and forward dynamics in joint frames
// (local_dynamics.hpp's family), for code generation and the interpreter.
//
// Inverse dynamics tau = ID(q, u, udot, fext) (recursive Newton-Euler) is
// differentiated by a tangent recursion: for each dof j (joint J, column
// s = S_J e_m of its motion subspace, in K_J) the derivative of every
// per-body quantity along the direction d (q moving along q + eps N(q) e_j,
// or u along u + eps e_j), written d(x). Only the bodies of J's subtree
// move relative to their parents; above J only the forces change, so each
// column costs O(subtree + depth): d tau_i / d x_j is structurally zero
// unless i and j lie on one path to the root (the tracer folds the zeros).
//
// Along q, J's joint moves its frame by the body twist s: X_FM' = X_FM s^,
// so (with iX_p the motion transform from K_p to K_i, as local_dynamics.hpp)
//   d(JX_p) = -(s x) JX_p,   d(pX_J^*) = pX_J^* (s x*).
// Its subspace turns with it where it is not fixed in M (Ball, Free: fixed
// in F; Universal's first column: fixed in the cross frame I):
//   d(S_J) = -(s_r x) S_J,  s_r = [w_s; 0], w_s = s's angular part (Ball,
//   Free), [b; 0] along q1 for Universal's first column, zero otherwise.
// The recursion for the column (v, c, a, f of local_dynamics.hpp, vJ_i = S_i u_i,
// h_i = I_i v_i; f_i accumulated over the subtree after the backward pass):
//   at J, along q:  d(v_J) = (JX_p v_p) x s + d(S_J) u_J
//                   d(a_J) = (JX_p a_p) x s + d(S_J) udot_J + d(c_J)
//   at J, along u:  d(v_J) = s,  d(a_J) = d(c_J)
//                   d(c_J) = d(S̊_J u_J) + d(v_J) x vJ_J + v_J x d(vJ_J)
//   below J (i in J's subtree, parent p):
//                   d(v_i) = iX_p d(v_p),  d(a_i) = iX_p d(a_p) + d(v_i) x vJ_i
//   every i in the subtree:
//                   d(f_i) = I_i d(a_i) + d(v_i) x* h_i + v_i x* I_i d(v_i)
//                            - d(fext_i)   (along q: fext is fixed in World
//                                           and applied at Bo, fixed in K_i,
//                                           which turns by s_i = iX_J s: only
//                                           s_i's rotation w acts, d(F) = -w x F
//                                           for the force and the moment about Bo)
//   backward:       d(f_p) += pX_i^* d(f_i) inside the subtree, then
//                   g = d(f_J) + s x* f_J (along q),  g <- pX_i^* g up to the root
//   d(tau_i) = S_i^T d(f_i) in the subtree (+ d(S_J)^T f_J at J along q),
//              S_i^T g above it.
// d tau / d udot = M (composite rigid body, local::crba; armature included).
//
// Forward dynamics udot = M^-1 (tau - C + sum J^T fext) satisfies
// ID(q, u, udot(q, u, tau)) = tau, so
//   d udot / d tau = M^-1,   d udot / dx = -M^-1 d ID / dx at fixed udot (x = q, u),
// where the applied forces' and state-dependent external forces' own
// derivatives (force laws, springs, bushings) are added to d ID / dx by the
// caller (addExternalForceDerivative): they are small expressions,
// differentiated where they are built. M^-1 comes from the tree-sparse
// L^T D L factor (dynamics.hpp's ltdlFactor / ltdlInverse).
//
// References: Carpentier & Mansard, "Analytical derivatives of rigid body
// dynamics algorithms" (RSS 2018); Singh, Russell & Wensing, "Efficient
// analytical derivatives of rigid-body dynamics using spatial vector
// algebra" (RA-L 2022); Featherstone, RBDA ch. 5-6. Everything here is
// traceable: it branches on joint types and topology only.
#pragma once

#include "capstan/local_dynamics.hpp"

#include <vector>

namespace capstan::local {

namespace detail {

// d(S_J) along J's own dof m (see the header comment); 6 x nu_J.
template <class Scalar>
Mat6X<Scalar> subspaceDerivative(const Joint<Scalar>& joint, const Mat6X<Scalar>& S, int m) {
  Mat6X<Scalar> dS = Mat6X<Scalar>::Zero(6, joint.nu());
  Vec6<Scalar> turn = Vec6<Scalar>::Zero();
  int first = 0, last = -1;  // the columns that turn
  switch (joint.type) {
    case JointType::Universal:
      if (m == 1) {
        turn.template head<3>() = joint.axis_b;
        first = last = 0;
      }
      break;
    case JointType::Ball:
    case JointType::Free:
      if (m < 3) {
        turn.template head<3>() = S.template block<3, 1>(0, m);
        first = 0;
        last = joint.nu() - 1;
      }
      break;
    default:
      break;
  }
  for (int c = first; c <= last; ++c) dS.col(c) = -crossMotion<Scalar>(turn, Vec6<Scalar>(S.col(c)));
  return dS;
}

// d(S̊_J u_J) (local_dynamics.hpp's subspaceRate) for a change dS of S and
// dvJ of vJ = S u, du of the joint's u (nu_J entries).
template <class Scalar>
Vec6<Scalar> subspaceRateDerivative(const Joint<Scalar>& joint, const Mat6X<Scalar>& S, const Mat6X<Scalar>& dS,
                                    const Vec6<Scalar>& vJ, const Vec6<Scalar>& dvJ, const VectorX<Scalar>& u,
                                    const VectorX<Scalar>& du) {
  Vec6<Scalar> out = Vec6<Scalar>::Zero();
  if (joint.type == JointType::Universal) {
    const int iu = joint.uOffset;
    const Vec3<Scalar> s0 = S.template block<3, 1>(0, 0), ds0 = dS.template block<3, 1>(0, 0);
    out.template head<3>() = cross<Scalar>(joint.axis_b, ds0) * (-(u[iu] * u[iu + 1])) +
                             cross<Scalar>(joint.axis_b, s0) * (-(du[0] * u[iu + 1] + u[iu] * du[1]));
  } else if (joint.type == JointType::Free) {
    const Vec3<Scalar> w = vJ.template head<3>(), vel = vJ.template tail<3>();
    const Vec3<Scalar> dw = dvJ.template head<3>(), dvel = dvJ.template tail<3>();
    out.template tail<3>() = -(cross(dw, vel) + cross(w, dvel));
  }
  return out;
}

// Adds S_i^T g to rows of body i's dofs in column `col`.
template <class Scalar>
void addProjected(const Joint<Scalar>& joint, const Mat6X<Scalar>& S, const Vec6<Scalar>& g, MatrixX<Scalar>& out,
                  int col) {
  for (int r = 0; r < joint.nu(); ++r) out(joint.uOffset + r, col) += Vec6<Scalar>(S.col(r)).dot(g);
}

}  // namespace detail

namespace detail {

// A motion vector at K_i in K_i, about the World origin in World (R, p: K_i's pose).
template <class Scalar>
Vec6<Scalar> motionToWorld(const Mat3<Scalar>& R, const Vec3<Scalar>& p, const Vec6<Scalar>& m) {
  const Vec3<Scalar> w = R * m.template head<3>();
  return spatialVector<Scalar>(w, Vec3<Scalar>(R * m.template tail<3>() + cross(p, w)));
}

// B x = v x* (Y x) - Y (v x x) + x x* (Y v) as a 6 x 6 matrix, from the
// inertia's structure (Y = [[I, [h]x], [-[h]x, m 1]], v = [w; nu]) rather
// than column by column. With W = [w]x, N = [nu]x and [a]x[b]x = b a^T -
// (a.b) 1, the first two terms are the symmetric
//   [[W I - I W - (nu h^T + h nu^T) + 2 (nu.h) 1,  [k]x], [-[k]x, 0]],
//   k = w x h + m nu,
// (W I - I W = W I + (W I)^T; [w]x[h]x - [h]x[w]x = [w x h]x), and the
// third, for Y v = [n; f], is [[-[n]x, -[f]x], [-[f]x, 0]].
template <class Scalar>
Mat6<Scalar> velocityInertiaProduct(const SpatialInertia<Scalar>& Y, const Vec6<Scalar>& v) {
  const Vec3<Scalar> w = v.template head<3>(), nu = v.template tail<3>();
  const Vec6<Scalar> momentum = Y * v;
  const Vec3<Scalar> n = momentum.template head<3>(), f = momentum.template tail<3>();
  Mat3<Scalar> WI;
  for (int c = 0; c < 3; ++c) WI.col(c) = cross(w, Vec3<Scalar>(Y.I_P.col(c)));
  const Scalar twice = Scalar(2) * dot(nu, Y.h);
  Mat3<Scalar> top;
  for (int r = 0; r < 3; ++r)
    for (int c = r; c < 3; ++c) {
      Scalar x = WI(r, c) + WI(c, r) - (nu[r] * Y.h[c] + Y.h[r] * nu[c]);
      if (r == c) x += twice;
      top(r, c) = top(c, r) = x;
    }
  const Vec3<Scalar> k = cross(w, Y.h) + Y.mass * nu;
  const Mat3<Scalar> K = skew(k), F = skew(f);
  Mat6<Scalar> B;
  B.template topLeftCorner<3, 3>() = top - skew(n);
  B.template topRightCorner<3, 3>() = K - F;
  B.template bottomLeftCorner<3, 3>() = -K - F;
  B.template bottomRightCorner<3, 3>() = Mat3<Scalar>::Constant(Scalar(0.0));
  return B;
}

// A force at K_i in K_i, about the World origin in World.
template <class Scalar>
Vec6<Scalar> forceToWorld(const Mat3<Scalar>& R, const Vec3<Scalar>& p, const Vec6<Scalar>& f) {
  const Vec3<Scalar> force = R * f.template tail<3>();
  return spatialVector<Scalar>(Vec3<Scalar>(R * f.template head<3>() + cross(p, force)), force);
}

// M^-1 from M by its tree-sparse L^T D L factor (into data.L) and
// ltdlInverse, into Minv.
template <class Scalar>
void massMatrixInverse(Data<Scalar>& data, const MatrixX<Scalar>& M, MatrixX<Scalar>& Minv) {
  data.L = M;
  ltdlFactor(data.L, data.dofParent);
  Minv = MatrixX<Scalar>::Constant(M.rows(), M.cols(), Scalar(0.0));
  ltdlInverse(data.L, data.dofParent, Minv);
}

}  // namespace detail

// d udot / dx = -M^-1 dr/dx for x = q and u, from M^-1 and the
// inverse-dynamics residual's derivatives (coefficient by coefficient, so
// for any Scalar).
template <class Scalar>
void forwardDynamicsDerivativesFromMinv(const MatrixX<Scalar>& Minv, const MatrixX<Scalar>& dr_dq,
                                        const MatrixX<Scalar>& dr_du, MatrixX<Scalar>& dudot_dq,
                                        MatrixX<Scalar>& dudot_du) {
  dudot_dq = -Minv.lazyProduct(dr_dq);
  dudot_du = -Minv.lazyProduct(dr_du);
}

// The pair terms of inverse dynamics' derivatives (and of M), factored:
// per dof k (of joint K) and per column j (dof j of joint J), with the
// names of inverseDynamicsDerivatives' comment below,
//   F_k = [F1_k; F2_k; F3_k],  Wq_j = [w; dV; s] along q,  Wu_j = [w; dV; 0]
//   along u (F3 and the s block only with external forces, else 12 rows),
//   G_j = g along q or u (zero at a root, which has no ancestors),
// so that for every dof j on dof k's path to the root (j = k included):
//   d tau_k / dx_j += F_k . W_j                       (k in J's subtree)
//   d tau_j / dx_k += F_j . W_k   if j is K's own dof, else Sw_j . G_k
//   M_kj = M_jk    += F1_k . Sw_j                     (once if j = k)
// What addDerivativePairs sums, O(1) per pair: inverseDynamicsDerivatives
// adds them itself; a code generator may emit the factors as straight-line
// code and the sum as a loop over the dof tree (its size grows with nu
// while the pairs grow with nu^2).
template <class Scalar>
struct DerivativePairs {
  MatrixX<Scalar> Sw;      // 6 x nu: each dof's motion subspace column, about the World origin in World
  MatrixX<Scalar> F;       // 12 (18 with external forces) x nu: [F1; F2; F3] per dof
  MatrixX<Scalar> Wq, Wu;  // as F, per column: [w; dV; s] along q, [w; dV; 0] along u
  MatrixX<Scalar> Gq, Gu;  // 6 x nu, per column: g along q, along u (a force, in World)
};

// Adds the pair terms of `p` (DerivativePairs) to whichever of dtau_dq,
// dtau_du and M is given. dofParent: Data::dofParents; firstDof[k]: the
// first dof of dof k's joint.
template <class Scalar>
void addDerivativePairs(const std::vector<int>& dofParent, const std::vector<int>& firstDof,
                        const DerivativePairs<Scalar>& p, MatrixX<Scalar>* dtau_dq, MatrixX<Scalar>* dtau_du,
                        MatrixX<Scalar>* M) {
  const auto nu = static_cast<int>(dofParent.size());
  for (int k = 0; k < nu; ++k) {
    for (int j = k; j >= 0; j = dofParent[static_cast<std::size_t>(j)]) {
      if (M != nullptr) {
        const Scalar m = Vec6<Scalar>(p.F.col(k).template head<6>()).dot(Vec6<Scalar>(p.Sw.col(j)));
        (*M)(k, j) += m;
        if (j != k) (*M)(j, k) += m;
      }
      if (dtau_dq == nullptr) continue;
      (*dtau_dq)(k, j) += p.F.col(k).dot(p.Wq.col(j));
      (*dtau_du)(k, j) += p.F.col(k).dot(p.Wu.col(j));
      if (j == k) continue;
      if (j >= firstDof[static_cast<std::size_t>(k)]) {
        (*dtau_dq)(j, k) += p.F.col(j).dot(p.Wq.col(k));
        (*dtau_du)(j, k) += p.F.col(j).dot(p.Wu.col(k));
      } else {
        (*dtau_dq)(j, k) += p.Sw.col(j).dot(p.Gq.col(k));
        (*dtau_du)(j, k) += p.Sw.col(j).dot(p.Gu.col(k));
      }
    }
  }
}

// The first dof of each dof's joint (addDerivativePairs' firstDof).
template <class Scalar>
std::vector<int> firstDofs(const Mechanism<Scalar>& model) {
  std::vector<int> first(static_cast<std::size_t>(model.nu), 0);
  for (const Joint<Scalar>& joint : model.joints)
    for (int c = 0; c < joint.nu(); ++c) first[static_cast<std::size_t>(joint.uOffset + c)] = joint.uOffset;
  return first;
}

// d tau / dq (along N(q), as dudot_dq) and d tau / du of inverse dynamics
// tau = M udot + C - sum_B J_B^T F_B at fixed external forces fext (World,
// about Bo; optional), by the recursion in the header comment with its
// subtree sums taken once: every quantity about the World origin in World
// (x^W = X_{W Ki} x, so no transport is needed between bodies), per body
//   Y_i, h_i = Y_i v_i, B_i x = v_i x* (Y_i x) - Y_i (v_i x x) + x x* h_i,
//   T_i s = -d(fext_i) for K_i turning by s (only s's rotation w acts):
//   [w x n_i + p_i x (w x f_i); w x f_i], n_i about Bo, p_i = p_WoBo,
// summed over subtrees: Ic_k, B_k, T_k. For the column of dof j (joint J),
// with the uniform changes of J's subtree dV = d(v_J), dA = d(a_J) (in
// World) and w = dA + v_J x dV, every k in J's subtree has
//   d(f_k) accumulated = Ic_k w + B_k dV + T_k s   (the last along q only)
// since d(a_l) = dA + dV x (v_l - v_J) for l below J, so
//   d(tau_k) = F1_k^T w + F2_k^T dV + F3_k^T s,  F1_k = Ic_k S_k,
//   F2_k = B_k^T S_k, F3_k = T_k^T S_k (per column of S_k, precomputed),
// plus d(S_J)^T f_J at J; above J, d(tau_a) = S_a^T g with
// g = d(f_J) + s x* f_J (along q). O(1) 6-vector dot products per pair of
// dofs on one path. Newton-Euler itself runs in World too (v, a and f per
// body, no transform between bodies; `derivativeForwardStep`): 16 % fewer
// operations than in joint frames converted to World. Leaves in data the
// joint frames, velocity kinematics and C (= tau) as inverseDynamics does,
// not its joint-frame a and f; with `massMatrix`,
// also data.M = d tau / d udot from the same composite inertias (one dot
// product per pair of dofs on a path: M_ak = F1_k^T S_a for a on k's path
// to the root, plus the armature), which the joint-frame composite rigid
// body algorithm would recompute with a transform per pair.
//
// With `solveFor` (forward dynamics' applied tau), udot is not given but
// solved for on the way, from the M these sums give anyway, instead of by
// a separate ABA: Newton-Euler runs at udot = 0 (giving C - sum J^T
// fext), then M's L^T D L factor (data.L), M^-1 (into *Minv, ltdlInverse)
// and udot = M^-1 (tau - C) (into udot); the World accelerations and
// forces then take udot's part, which the subtree sums give in O(1) per
// body: with da_k = sum of S_j udot_j over k's path (da_p at k's parent),
//   a_k += da_k,   f_k += Ic_k da_p + sum_{j in k's subtree} F1_j udot_j.
// data's joint-frame a, f, tau then stay those at udot = 0.
// The recursion's per-body quantities, about the World origin in World
// (x^W = X_{W Ki} x). f, Ic, B and T are the body's own after its forward
// step and its subtree's after its backward step.
template <class Scalar>
struct DerivativeData {
  explicit DerivativeData(const Mechanism<Scalar>& model) {
    const auto nb = static_cast<std::size_t>(model.numBodies());
    R.resize(nb, Mat3<Scalar>::Identity());
    p.resize(nb, Vec3<Scalar>::Zero());
    v.resize(nb, Vec6<Scalar>::Zero());
    a.resize(nb, Vec6<Scalar>::Zero());
    vJ.resize(nb, Vec6<Scalar>::Zero());
    f.resize(nb, Vec6<Scalar>::Zero());
    Sw.resize(nb);
    for (std::size_t b = 0; b < nb; ++b) Sw[b].setZero(6, model.joints[b].nu());
    Ic.resize(nb);
    B.resize(nb, Mat6<Scalar>::Zero());
    T.resize(nb, Mat6<Scalar>::Zero());
  }
  std::vector<Mat3<Scalar>> R;              // (nb) R_{W Ki}
  std::vector<Vec3<Scalar>> p;              // (nb) p_{W Ki} (m)
  std::vector<Vec6<Scalar>> v, a;           // (nb) velocity (rad/s, m/s), acceleration (rad/s^2, m/s^2)
  std::vector<Vec6<Scalar>> vJ;             // (nb) the joint's part of v, S_i u_i
  std::vector<Vec6<Scalar>> f;              // (nb) the body's force, then the joint's (its subtree's) (N m, N)
  std::vector<Mat6X<Scalar>> Sw;            // (nb) 6 x nu_j motion subspace
  std::vector<SpatialInertia<Scalar>> Ic;   // (nb) Y_i (kg, kg m, kg m^2), then summed over the subtree
  std::vector<Mat6<Scalar>> B, T;           // (nb) B_i, T_i (with fext), then summed over the subtree
};

// The recursion as per-body steps, each reading only its body's entries of
// Data and DerivativeData, its parent's and its children's (as
// local_dynamics.hpp's steps: a code generator may trace one step of a body
// with those entries as symbols). In order: every body's forward step
// (parents first), every body's backward step (children first), then every
// body's column step.

// Body b's forward step, after its parent's: its joint frame and velocity
// kinematics (positionStep, velocityStep), and in World its pose (composed
// with its parent's), S, vJ = S u, v = v_p + vJ, a = a_p + S udot + c (c =
// S̊ u + v x vJ, a_0 = [0; -g]), its own Y, B and T, and its own force
// f = Y a + v x* (Y v) - F_b (F_b its fext, World, about Bo, if given,
// moved to the World origin); its backward step adds the children's.
template <class Scalar>
void derivativeForwardStep(const Mechanism<Scalar>& model, Data<Scalar>& data, DerivativeData<Scalar>& w,
                           std::size_t b, const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                           const VectorX<Scalar>& udot, const Vec6<Scalar>* F_b) {
  const Joint<Scalar>& joint = model.joints[b];
  positionStep(model, data, b, q);
  velocityStep(model, data, b, u);
  const int parent = joint.parent;
  const auto k = static_cast<std::size_t>(parent >= 0 ? parent : 0);
  if (parent >= 0) {
    w.R[b] = w.R[k] * data.R_PK[b];
    w.p[b] = w.p[k] + w.R[k] * data.p_PK[b];
  } else {
    w.R[b] = data.R_PK[b];
    w.p[b] = data.p_PK[b];
  }
  const Mat3<Scalar>& R = w.R[b];
  const Vec3<Scalar>& p = w.p[b];
  for (int c = 0; c < joint.nu(); ++c) w.Sw[b].col(c) = detail::motionToWorld(R, p, Vec6<Scalar>(data.S[b].col(c)));
  w.vJ[b] = Vec6<Scalar>::Zero();
  Vec6<Scalar> rate = Vec6<Scalar>::Zero();  // S̊ u in World
  if (joint.nu() > 0) {
    const VectorX<Scalar> uJ = u.segment(joint.uOffset, joint.nu());
    w.vJ[b] = w.Sw[b] * uJ;
    const Vec6<Scalar> vJ_K = data.S[b] * uJ;
    rate = detail::motionToWorld(R, p, detail::subspaceRate(joint, data.S[b], vJ_K, u));
  }
  w.v[b] = parent >= 0 ? Vec6<Scalar>(w.v[k] + w.vJ[b]) : w.vJ[b];
  const Vec6<Scalar> a0 = spatialVector<Scalar>(Vec3<Scalar>::Zero(), Vec3<Scalar>(-model.gravity));
  w.a[b] = (parent >= 0 ? w.a[k] : a0) + rate + crossMotion(w.v[b], w.vJ[b]);
  if (joint.nu() > 0) w.a[b] += w.Sw[b] * udot.segment(joint.uOffset, joint.nu());
  w.Ic[b] = detail::rigidInertiaToParent(R, p, data.I_K[b]);
  w.f[b] = w.Ic[b] * w.a[b] + crossForce(w.v[b], Vec6<Scalar>(w.Ic[b] * w.v[b]));
  w.B[b] = detail::velocityInertiaProduct(w.Ic[b], w.v[b]);
  w.T[b] = Mat6<Scalar>::Zero();
  if (F_b != nullptr) {
    const Vec3<Scalar> n = F_b->template head<3>(), force = F_b->template tail<3>();
    const Vec3<Scalar> pB = p + R * Vec3<Scalar>(joint.X_BM.inverse().p);  // p_WoBo
    w.f[b] -= spatialVector<Scalar>(Vec3<Scalar>(n + cross(pB, force)), force);
    // T [w; v] = [w x n + pB x (w x force); w x force] = [-[n]x - [pB]x [force]x; -[force]x] w.
    const Mat3<Scalar> Fx = skew(force);
    w.T[b].template topLeftCorner<3, 3>() = -skew(n) - skew(pB) * Fx;
    w.T[b].template bottomLeftCorner<3, 3>() = -Fx;
  }
}

// Body b's backward step, after its children's (which added their f, Ic, B
// and T to b's): Newton-Euler's C_b = S^T f_b (without the armature), f,
// Ic, B (and with `turns`, external forces, T) passed to the parent, all in
// World (plain sums), and b's dofs' factors in P (DerivativePairs: Sw and
// F = [Ic S; B^T S; T^T S]).
template <class Scalar>
void derivativeBackwardStep(const Mechanism<Scalar>& model, Data<Scalar>& data, DerivativeData<Scalar>& w,
                            std::size_t b, bool turns, DerivativePairs<Scalar>& P) {
  const Joint<Scalar>& joint = model.joints[b];
  if (joint.nu() > 0) data.C.segment(joint.uOffset, joint.nu()) = w.Sw[b].transpose() * w.f[b];
  if (joint.parent >= 0) {
    const auto k = static_cast<std::size_t>(joint.parent);
    w.f[k] += w.f[b];
    w.Ic[k] += w.Ic[b];
    w.B[k] += w.B[b];
    if (turns) w.T[k] += w.T[b];
  }
  for (int c = 0; c < joint.nu(); ++c) {
    const Vec6<Scalar> s = w.Sw[b].col(c);
    const int k = joint.uOffset + c;
    P.Sw.col(k) = s;
    P.F.col(k).template segment<6>(0) = w.Ic[b] * s;
    P.F.col(k).template segment<6>(6) = w.B[b].transpose() * s;
    if (turns) P.F.col(k).template segment<6>(12) = w.T[b].transpose() * s;
  }
}

// Body J's column step, after every backward step: the columns of J's dofs
// (DerivativePairs' W and G, along q and along u), and J's own
// d(S_J)^T f_J into dtau_dq's block of J's dofs (zero unless S_J turns).
template <class Scalar>
void derivativeColumnStep(const Mechanism<Scalar>& model, const Data<Scalar>& data, const DerivativeData<Scalar>& w,
                          std::size_t bJ, const VectorX<Scalar>& u, const VectorX<Scalar>& udot, bool turns,
                          DerivativePairs<Scalar>& P, MatrixX<Scalar>& dtau_dq) {
  const Joint<Scalar>& joint = model.joints[bJ];
  if (joint.nu() == 0) return;
  const Mat6X<Scalar>& S = data.S[bJ];
  const Mat3<Scalar>& R = w.R[bJ];
  const Vec3<Scalar>& p = w.p[bJ];
  const VectorX<Scalar> uJ = u.segment(joint.uOffset, joint.nu());
  const VectorX<Scalar> udotJ = udot.segment(joint.uOffset, joint.nu());
  const int parent = joint.parent;
  const Vec6<Scalar> a0 = spatialVector<Scalar>(Vec3<Scalar>::Zero(), Vec3<Scalar>(-model.gravity));
  const Vec6<Scalar> vP = parent >= 0 ? w.v[static_cast<std::size_t>(parent)] : Vec6<Scalar>(Vec6<Scalar>::Zero());
  const Vec6<Scalar> aP = parent >= 0 ? w.a[static_cast<std::size_t>(parent)] : a0;
  const VectorX<Scalar> noU = VectorX<Scalar>::Constant(joint.nu(), Scalar(0.0));
  const Vec6<Scalar> vJ_K = S * uJ;
  for (int m = 0; m < joint.nu(); ++m) {
    const int col = joint.uOffset + m;
    const Vec6<Scalar> s = w.Sw[bJ].col(m);
    for (const bool alongQ : {true, false}) {
      Mat6X<Scalar> dS = Mat6X<Scalar>::Zero(6, joint.nu());  // in K_J
      VectorX<Scalar> duJ = noU;
      Vec6<Scalar> dV, dvJ, dA;
      if (alongQ) {
        dS = detail::subspaceDerivative(joint, S, m);
        dvJ = detail::motionToWorld(R, p, Vec6<Scalar>(dS * uJ));
        dV = crossMotion(vP, s) + dvJ;
      } else {
        duJ[m] = Scalar(1.0);
        dvJ = s;
        dV = s;
      }
      const Vec6<Scalar> rate = detail::motionToWorld(
          R, p, detail::subspaceRateDerivative(joint, S, dS, vJ_K, Vec6<Scalar>(dS * uJ + S * duJ), u, duJ));
      dA = rate + crossMotion(dV, w.vJ[bJ]) + crossMotion(w.v[bJ], dvJ);
      if (alongQ) dA += crossMotion(aP, s) + detail::motionToWorld(R, p, Vec6<Scalar>(dS * udotJ));
      const Vec6<Scalar> wc = dA + crossMotion(w.v[bJ], dV);
      MatrixX<Scalar>& W = alongQ ? P.Wq : P.Wu;
      W.col(col).template segment<6>(0) = wc;
      W.col(col).template segment<6>(6) = dV;
      if (alongQ && turns) W.col(col).template segment<6>(12) = s;
      if (alongQ) {
        for (int r = 0; r < joint.nu(); ++r)
          dtau_dq(joint.uOffset + r, col) += detail::motionToWorld(R, p, Vec6<Scalar>(dS.col(r))).dot(w.f[bJ]);
      }
      if (parent < 0) continue;
      Vec6<Scalar> g = w.Ic[bJ] * wc + w.B[bJ] * dV;
      if (alongQ) g += crossForce(s, w.f[bJ]);
      if (alongQ && turns) g += w.T[bJ] * s;
      (alongQ ? P.Gq : P.Gu).col(col) = g;
    }
  }
}

// DerivativePairs' factors for `nu` dofs, zero (18 rows of F and W with
// external forces, else 12).
template <class Scalar>
DerivativePairs<Scalar> zeroDerivativePairs(int nu, bool turns) {
  DerivativePairs<Scalar> P;
  const int rows = turns ? 18 : 12;
  P.Sw = MatrixX<Scalar>::Constant(6, nu, Scalar(0.0));
  P.F = MatrixX<Scalar>::Constant(rows, nu, Scalar(0.0));
  P.Wq = P.Wu = P.F;
  P.Gq = P.Gu = P.Sw;
  return P;
}

namespace detail {

template <class Scalar>
void inverseDynamicsDerivativesImpl(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                                    const VectorX<Scalar>& u, VectorX<Scalar>& udot, const VectorX<Scalar>* solveFor,
                                    MatrixX<Scalar>* Minv, const ExternalForces<Scalar>* fext,
                                    MatrixX<Scalar>& dtau_dq, MatrixX<Scalar>& dtau_du, bool massMatrix,
                                    DerivativePairs<Scalar>* pairs = nullptr) {
  if (solveFor != nullptr) {
    udot = VectorX<Scalar>::Constant(model.nu, Scalar(0.0));
    massMatrix = true;
  }
  if (fext != nullptr) capstan::detail::checkExternalForces(model, *fext);
  const int nb = model.numBodies(), nu = model.nu;
  const auto nbs = static_cast<std::size_t>(nb);
  const bool turns = fext != nullptr;
  DerivativeData<Scalar> w(model);
  DerivativePairs<Scalar> P = zeroDerivativePairs<Scalar>(nu, turns);
  for (std::size_t b = 0; b < nbs; ++b)
    derivativeForwardStep(model, data, w, b, q, u, udot, turns ? &(*fext)[b] : nullptr);
  for (std::size_t b = nbs; b-- > 0;) derivativeBackwardStep(model, data, w, b, turns, P);
  capstan::detail::addArmatureForces(model, udot, data.C);  // C as inverseDynamics leaves it
  const std::vector<int> firstDof = firstDofs(model);
  if (massMatrix) {  // the armature, then the pairs' terms (unless the caller sums them): the solve needs M
    data.M = MatrixX<Scalar>::Constant(nu, nu, Scalar(0.0));
    for (const Joint<Scalar>& joint : model.joints)
      if (joint.nu() > 0) joint.addArmature(data.M, joint.uOffset);
    if (pairs == nullptr) addDerivativePairs<Scalar>(data.dofParent, firstDof, P, nullptr, nullptr, &data.M);
  }
  if (solveFor != nullptr) {
    massMatrixInverse(data, data.M, *Minv);
    udot = Minv->lazyProduct(VectorX<Scalar>(*solveFor - data.C));
    std::vector<Vec6<Scalar>> da(nbs), G(nbs);
    for (std::size_t b = 0; b < nbs; ++b) {
      const Joint<Scalar>& joint = model.joints[b];
      const int parent = joint.parent;
      const Vec6<Scalar> daP =
          parent >= 0 ? da[static_cast<std::size_t>(parent)] : Vec6<Scalar>(Vec6<Scalar>::Zero());
      da[b] = daP;
      G[b] = Vec6<Scalar>::Zero();
      for (int c = 0; c < joint.nu(); ++c) {
        const Scalar x = udot[joint.uOffset + c];
        da[b] += Vec6<Scalar>(w.Sw[b].col(c)) * x;
        G[b] += Vec6<Scalar>(P.F.col(joint.uOffset + c).template head<6>()) * x;
      }
      w.a[b] += da[b];
      w.f[b] += w.Ic[b] * daP;
    }
    for (int i = nb - 1; i >= 0; --i) {  // G_k = sum over k's subtree of F1_j udot_j
      const auto b = static_cast<std::size_t>(i);
      w.f[b] += G[b];
      const int parent = model.joints[b].parent;
      if (parent >= 0) G[static_cast<std::size_t>(parent)] += G[b];
    }
  }
  dtau_dq = MatrixX<Scalar>::Constant(nu, nu, Scalar(0.0));
  dtau_du = MatrixX<Scalar>::Constant(nu, nu, Scalar(0.0));
  for (std::size_t b = 0; b < nbs; ++b) derivativeColumnStep(model, data, w, b, u, udot, turns, P, dtau_dq);
  if (pairs != nullptr) {
    *pairs = std::move(P);
  } else {
    addDerivativePairs<Scalar>(data.dofParent, firstDof, P, &dtau_dq, &dtau_du, nullptr);
  }
}

}  // namespace detail

template <class Scalar>
void inverseDynamicsDerivatives(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                                const VectorX<Scalar>& u, const VectorX<Scalar>& udot,
                                const ExternalForces<Scalar>* fext, MatrixX<Scalar>& dtau_dq,
                                MatrixX<Scalar>& dtau_du, bool massMatrix = false) {
  VectorX<Scalar> given = udot;
  detail::inverseDynamicsDerivativesImpl<Scalar>(model, data, q, u, given, nullptr, nullptr, fext, dtau_dq, dtau_du, massMatrix);
}

// The same with M (massMatrix) and the pair terms left out: dtau_dq,
// dtau_du and data.M hold the rest (each joint's own d(S_J)^T f_J, M's
// armature) and `pairs` their factors, which addDerivativePairs adds.
template <class Scalar>
void inverseDynamicsDerivativesFactored(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                                        const VectorX<Scalar>& u, const VectorX<Scalar>& udot,
                                        const ExternalForces<Scalar>* fext, MatrixX<Scalar>& dtau_dq,
                                        MatrixX<Scalar>& dtau_du, DerivativePairs<Scalar>& pairs) {
  VectorX<Scalar> given = udot;
  detail::inverseDynamicsDerivativesImpl<Scalar>(model, data, q, u, given, nullptr, nullptr, fext, dtau_dq, dtau_du,
                                                 /*massMatrix=*/true, &pairs);
}

// The same at forward dynamics' udot = M^-1 (tau - C + sum J^T fext), which
// it solves for on the way (see above): returns udot, M^-1 (Minv; the
// factor in data.L, M in data.M) and d tau / dq, d tau / du there. ABA's
// work is saved: M, which the derivatives need, gives udot.
template <class Scalar>
void inverseDynamicsDerivativesAtForwardDynamics(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                                 const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                                 const VectorX<Scalar>& tau, const ExternalForces<Scalar>* fext,
                                                 VectorX<Scalar>& udot, MatrixX<Scalar>& Minv,
                                                 MatrixX<Scalar>& dtau_dq, MatrixX<Scalar>& dtau_du) {
  detail::inverseDynamicsDerivativesImpl<Scalar>(model, data, q, u, udot, &tau, &Minv, fext, dtau_dq, dtau_du, true);
}

// Adds to `dtau` (nu) the generalized force -sum_B J_B^T dF_B of a change dF
// of the external forces (World, about Bo, per body; as ExternalForces), as
// inverse dynamics subtracts them: the state-dependent forces' (springs',
// bushings') own derivatives, one column at a time. Needs position
// kinematics in data. Bodies whose dF is the constant zero add nothing to
// a traced result.
template <class Scalar>
void addExternalForceDerivative(const Mechanism<Scalar>& model, const Data<Scalar>& data,
                                const ExternalForces<Scalar>& dF, MatrixX<Scalar>& dtau, int col) {
  std::vector<Vec6<Scalar>> dF_K;
  detail::externalForcesInJointFrames(model, data, dF, dF_K);
  std::vector<Vec6<Scalar>> g(dF_K.size());
  for (std::size_t b = 0; b < dF_K.size(); ++b) g[b] = -dF_K[b];
  for (int i = model.numBodies() - 1; i >= 0; --i) {
    const auto k = static_cast<std::size_t>(i);
    detail::addProjected(model.joints[k], data.S[k], g[k], dtau, col);
    const int parent = model.joints[k].parent;
    if (parent >= 0) g[static_cast<std::size_t>(parent)] += forceToParent(data.R_PK[k], data.p_PK[k], g[k]);
  }
}

// The derivatives of forward dynamics from those of the inverse-dynamics
// residual r(q, u, udot) = ID - applied forces (at the forward dynamics'
// udot) and M: the tree-sparse L^T D L factor of M (into data.L), M^-1 from
// it (ltdlInverse), then
//   dudot_dtau = M^-1,  dudot_dq = -M^-1 dr_dq,  dudot_du = -M^-1 dr_du.
template <class Scalar>
void forwardDynamicsDerivativesFromInverse(Data<Scalar>& data, const MatrixX<Scalar>& M, const MatrixX<Scalar>& dr_dq,
                                           const MatrixX<Scalar>& dr_du, MatrixX<Scalar>& dudot_dq,
                                           MatrixX<Scalar>& dudot_du, MatrixX<Scalar>& dudot_dtau) {
  detail::massMatrixInverse(data, M, dudot_dtau);
  forwardDynamicsDerivativesFromMinv(dudot_dtau, dr_dq, dr_du, dudot_dq, dudot_du);
}

// d udot / d(q, u, tau) of forward dynamics with fixed external forces
// (optional) and no state-dependent applied forces: the inverse-dynamics
// derivatives at forward dynamics' udot, which they solve for with M^-1
// (inverseDynamicsDerivativesAtForwardDynamics), then
//   dudot_dtau = M^-1,  dudot_dq = -M^-1 dtau_dq,  dudot_du = -M^-1 dtau_du.
template <class Scalar>
void forwardDynamicsDerivatives(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                                const VectorX<Scalar>& u, const VectorX<Scalar>& tau,
                                const ExternalForces<Scalar>* fext, MatrixX<Scalar>& dudot_dq,
                                MatrixX<Scalar>& dudot_du, MatrixX<Scalar>& dudot_dtau) {
  VectorX<Scalar> udot;
  MatrixX<Scalar> dtau_dq, dtau_du;
  inverseDynamicsDerivativesAtForwardDynamics(model, data, q, u, tau, fext, udot, dudot_dtau, dtau_dq, dtau_du);
  forwardDynamicsDerivativesFromMinv(dudot_dtau, dtau_dq, dtau_du, dudot_dq, dudot_du);
}

}  // namespace capstan::local
