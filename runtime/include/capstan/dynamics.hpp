// Mass matrix (composite rigid body), inverse dynamics (recursive
// Newton-Euler), energies and forward dynamics for a Mechanism<Scalar>.
//
// Equations of motion: M(q) udot = tau - C(q, u), where C collects the
// Coriolis, centrifugal and gravity terms (C = rnea(q, u, 0)) and M includes
// each joint's armature on its dofs' diagonal (mechanism.hpp); with
// external forces (ExternalForces below)
//   M(q) udot + C(q, u) = tau + sum_B J_WB^T F_B^ext.
// Per body B, about Bo, in World, with h = m p_BoBcm_W and I_Bo the
// rotational inertia about Bo, the force its inboard joint transmits to it:
//   F_B = M_B A_WB + [w x (I_Bo w); w x (w x h)] - [h x g; m g] - F_B^ext
//         + sum over children C of shiftForce(F_C, p_BoCo_W)
//   tau_j = H_PB_W^T F_B + armature_j udot_j.
// Everything but forwardDynamicsLlt is traceable with a symbolic Scalar.
#pragma once

#include "capstan/kinematics.hpp"

#include <Eigen/Cholesky>

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

namespace capstan {

// External spatial forces, one per body B (indexed as model.bodies):
// F_B^ext = [n; f] (N*m, N) applied to B, the moment about the body origin
// Bo, both expressed in World -- what a force element (bushing, spring,
// cable) computes from World-frame kinematics. By virtual work they are
// worth the generalized forces sum_B J_WB^T F_B^ext (J_WB: kinematics.hpp's
// bodyJacobian, about Bo in World), so
//   M udot + C = tau + sum_B J_WB^T F_B^ext.
// Both families of algorithms (this file's World frame, local_dynamics.hpp's
// joint frames) take them as an optional last argument; without it nothing
// is added to the traced code. A force at a point Q of B (p_BoQ_W) is
// F_B^ext = [p_BoQ_W x f; f].
template <class Scalar>
using ExternalForces = std::vector<Vec6<Scalar>>;

namespace detail {

// One force per body, or std::invalid_argument.
template <class Scalar>
void checkExternalForces(const Mechanism<Scalar>& model, const ExternalForces<Scalar>& fext) {
  if (fext.size() != static_cast<std::size_t>(model.numBodies())) {
    throw std::invalid_argument("external forces: need one spatial force per body (" +
                                std::to_string(model.numBodies()) + "), got " + std::to_string(fext.size()));
  }
}

// Velocity-product and gravity wrench of a body about Bo in World, given its
// spatial inertia M_Bo_W and velocity V_WB: (w x (I_Bo w) - h x g,
// w x (w x h) - m g) with h = m p_BoBcm_W and g in m/s^2.
template <class Scalar>
Vec6<Scalar> biasWrench(const SpatialInertia<Scalar>& M_Bo_W, const Vec6<Scalar>& V_WB, const Vec3<Scalar>& g) {
  const Vec3<Scalar> w = V_WB.template head<3>();
  const Vec3<Scalar> t_bias = cross(w, Vec3<Scalar>(M_Bo_W.I_P * w)) - cross(M_Bo_W.h, g);
  const Vec3<Scalar> f_bias = cross(w, cross(w, M_Bo_W.h)) - M_Bo_W.mass * g;
  return spatialVector<Scalar>(t_bias, f_bias);
}

// Backward Newton-Euler pass from accelerations `A` (per body, about Bo, in
// World): fills data.F_Bo_W and out = H^T F per joint. External forces, if
// not null, are subtracted from each body's F (a null fext adds nothing to
// the trace).
template <class Scalar>
void rneaBackward(const Mechanism<Scalar>& model, Data<Scalar>& data, const std::vector<Vec6<Scalar>>& A,
                  VectorX<Scalar>& out, const ExternalForces<Scalar>* fext = nullptr) {
  const int nb = model.numBodies();
  const Vec3<Scalar>& g = model.gravity;
  if (fext != nullptr) checkExternalForces(model, *fext);
  for (int i = 0; i < nb; ++i) {
    const auto b = static_cast<std::size_t>(i);
    const SpatialInertia<Scalar>& Mb = data.M_Bo_W[b];
    const Vec6<Scalar> bias = biasWrench(Mb, data.V_WB[b], g);
    data.F_Bo_W[b] = Mb * A[b] + bias;
    if (fext != nullptr) data.F_Bo_W[b] -= (*fext)[b];
  }
  for (int i = nb - 1; i >= 0; --i) {
    const auto b = static_cast<std::size_t>(i);
    const Joint<Scalar>& joint = model.joints[b];
    if (joint.nu() > 0) {
      out.segment(joint.uOffset, joint.nu()) = data.H_PB_W[b].transpose() * data.F_Bo_W[b];
    }
    if (joint.parent >= 0) {
      data.F_Bo_W[static_cast<std::size_t>(joint.parent)] += shiftForce(data.F_Bo_W[b], data.p_PoBo_W[b]);
    }
  }
}

// tau += armature udot, per dof: the rotor inertia's share of inverse
// dynamics (mechanism.hpp's Joint::armature).
template <class Scalar>
void addArmatureForces(const Mechanism<Scalar>& model, const VectorX<Scalar>& udot, VectorX<Scalar>& tau) {
  for (const Joint<Scalar>& joint : model.joints) {
    for (int k = 0; k < joint.nu(); ++k) tau[joint.uOffset + k] += joint.armature * udot[joint.uOffset + k];
  }
}

// The composite-rigid-body assembly of M, in any frame convention: for each
// joint j of body b, the forces F = Ic_b S_b that give b's subtree unit
// accelerations along j's dofs from rest (`unitForces(b, F)`), M_jj = S_b^T F
// + diag(armature_j), then F carried to each ancestor k in turn (`toParent(child, f)` moves a
// force from a body to its parent) with M_kj = S_k^T F. Entries between
// different branches stay zero. Shared by the World and joint-frame CRBA.
template <class Scalar, class Subspace, class UnitForces, class ToParent>
void assembleMassMatrix(const Mechanism<Scalar>& model, MatrixX<Scalar>& M, const Subspace& S,
                        const UnitForces& unitForces, const ToParent& toParent) {
  M.setZero();
  for (int i = 0; i < model.numBodies(); ++i) {
    const Joint<Scalar>& joint = model.joints[static_cast<std::size_t>(i)];
    const int nu_j = joint.nu();
    if (nu_j == 0) continue;
    Mat6X<Scalar> F(6, nu_j);
    unitForces(i, F);
    M.block(joint.uOffset, joint.uOffset, nu_j, nu_j) = S(i).transpose() * F;
    joint.addArmature(M, joint.uOffset);
    int k = i;
    while (model.joints[static_cast<std::size_t>(k)].parent >= 0) {
      for (int c = 0; c < nu_j; ++c) F.col(c) = toParent(k, Vec6<Scalar>(F.col(c)));
      k = model.joints[static_cast<std::size_t>(k)].parent;
      const Joint<Scalar>& ancestor = model.joints[static_cast<std::size_t>(k)];
      if (ancestor.nu() == 0) continue;
      const auto block = (S(k).transpose() * F).eval();
      M.block(ancestor.uOffset, joint.uOffset, ancestor.nu(), nu_j) = block;
      M.block(joint.uOffset, ancestor.uOffset, nu_j, ancestor.nu()) = block.transpose();
    }
  }
}

// Each body's composite inertia (its subtree's) about its origin, in
// World: data.Mc_Bo_W, from position kinematics already in data.
template <class Scalar>
void compositeInertias(const Mechanism<Scalar>& model, Data<Scalar>& data) {
  const int nb = model.numBodies();
  for (int i = 0; i < nb; ++i) data.Mc_Bo_W[static_cast<std::size_t>(i)] = data.M_Bo_W[static_cast<std::size_t>(i)];
  for (int i = nb - 1; i >= 0; --i) {
    const auto b = static_cast<std::size_t>(i);
    const int parent = model.joints[b].parent;
    if (parent >= 0) {
      data.Mc_Bo_W[static_cast<std::size_t>(parent)] += data.Mc_Bo_W[b].shift(Vec3<Scalar>(-data.p_PoBo_W[b]));
    }
  }
}

// Mass matrix from position kinematics already in data.
template <class Scalar>
void massMatrixFromKinematics(const Mechanism<Scalar>& model, Data<Scalar>& data) {
  compositeInertias(model, data);
  assembleMassMatrix(
      model, data.M, [&](int b) -> const Mat6X<Scalar>& { return data.H_PB_W[static_cast<std::size_t>(b)]; },
      [&](int b, Mat6X<Scalar>& F) {
        const auto k = static_cast<std::size_t>(b);
        for (int c = 0; c < F.cols(); ++c) F.col(c) = data.Mc_Bo_W[k] * Vec6<Scalar>(data.H_PB_W[k].col(c));
      },
      [&](int b, const Vec6<Scalar>& f) { return shiftForce(f, data.p_PoBo_W[static_cast<std::size_t>(b)]); });
}

}  // namespace detail

// M(q) (nu x nu), symmetric, by the composite-rigid-body algorithm; returns
// data.M. Also leaves position kinematics in data.
template <class Scalar>
const MatrixX<Scalar>& crba(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q) {
  forwardKinematics(model, data, q);
  detail::massMatrixFromKinematics(model, data);
  return data.M;
}

// Inverse dynamics tau = M(q) udot + C(q, u) (gravity included); returns
// data.tau. Leaves position, velocity and acceleration kinematics in data.
template <class Scalar>
const VectorX<Scalar>& rnea(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                            const VectorX<Scalar>& u, const VectorX<Scalar>& udot) {
  forwardKinematics(model, data, q, u, udot);
  detail::rneaBackward(model, data, data.A_WB, data.tau);
  detail::addArmatureForces(model, udot, data.tau);
  return data.tau;
}

// The same with external forces: tau = M udot + C - sum_B J_WB^T F_B^ext,
// the joint forces that give udot while fext acts; returns data.tau.
template <class Scalar>
const VectorX<Scalar>& rnea(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                            const VectorX<Scalar>& u, const VectorX<Scalar>& udot,
                            const ExternalForces<Scalar>& fext) {
  forwardKinematics(model, data, q, u, udot);
  detail::rneaBackward(model, data, data.A_WB, data.tau, &fext);
  detail::addArmatureForces(model, udot, data.tau);
  return data.tau;
}

// C(q, u) = rnea(q, u, 0): Coriolis, centrifugal and gravity generalized
// forces; returns data.C. Leaves position and velocity kinematics in data.
template <class Scalar>
const VectorX<Scalar>& nonlinearEffects(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                        const VectorX<Scalar>& q, const VectorX<Scalar>& u) {
  forwardKinematics(model, data, q, u);
  detail::rneaBackward(model, data, data.Abias_WB, data.C);
  return data.C;
}

// C(q, u) - sum_B J_WB^T F_B^ext with external forces; returns data.C.
template <class Scalar>
const VectorX<Scalar>& nonlinearEffects(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                        const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                        const ExternalForces<Scalar>& fext) {
  forwardKinematics(model, data, q, u);
  detail::rneaBackward(model, data, data.Abias_WB, data.C, &fext);
  return data.C;
}

// The bodies' kinetic energy 1/2 sum V_WB^T M_B V_WB, without the joints'
// armature (the overload with u adds it). Needs velocity kinematics.
template <class Scalar>
Scalar kineticEnergy(const Mechanism<Scalar>& model, const Data<Scalar>& data) {
  Scalar ke(0);
  for (int i = 0; i < model.numBodies(); ++i) {
    const auto b = static_cast<std::size_t>(i);
    ke += data.V_WB[b].dot(data.M_Bo_W[b] * data.V_WB[b]);
  }
  return Scalar(0.5) * ke;
}

// 1/2 u^T M u: the bodies' kinetic energy plus each rotor's
// 1/2 armature u_k^2. Needs velocity kinematics at this u.
template <class Scalar>
Scalar kineticEnergy(const Mechanism<Scalar>& model, const Data<Scalar>& data, const VectorX<Scalar>& u) {
  Scalar rotors(0);
  for (const Joint<Scalar>& joint : model.joints) {
    for (int k = 0; k < joint.nu(); ++k) rotors += joint.armature * (u[joint.uOffset + k] * u[joint.uOffset + k]);
  }
  return kineticEnergy(model, data) + Scalar(0.5) * rotors;
}

// -sum m g . p_WoBcm_W (zero at the World origin). Needs position kinematics.
template <class Scalar>
Scalar potentialEnergy(const Mechanism<Scalar>& model, const Data<Scalar>& data) {
  Scalar pe(0);
  for (int i = 0; i < model.numBodies(); ++i) {
    const auto b = static_cast<std::size_t>(i);
    const Vec3<Scalar> p_WoBcm_W = data.X_WB[b] * model.bodies[b].p_BoBcm_B;
    pe -= model.bodies[b].mass * dot<Scalar>(model.gravity, p_WoBcm_W);
  }
  return pe;
}

// The tree-sparse L^T D L factorization of a mass matrix (Featherstone, RBDA
// §6.5): M = L^T D L with L unit lower triangular, L(k, i) != 0 only for dofs i
// that are tree ancestors of dof k, so no fill-in. `dofParent` (data.dofParent)
// gives each dof's parent dof; for a dense matrix pass i - 1. In place on the
// lower triangle of A: afterwards A(k, k) = D(k), A(k, i) = L(k, i) for i < k.
// One division per pivot: its reciprocal, formed once and multiplied by (so a
// traced factor has n divisions, not one per entry); no pivoting (M is
// positive definite). Traceable.
template <class MatrixType, class Parents>
void ltdlFactor(MatrixType& A, const Parents& dofParent) {
  using Scalar = typename MatrixType::Scalar;
  const int n = static_cast<int>(A.rows());
  for (int k = n - 1; k >= 0; --k) {
    if (dofParent[static_cast<std::size_t>(k)] < 0) continue;  // a root dof: nothing to eliminate
    const Scalar dInv = Scalar(1) / A(k, k);
    for (int i = dofParent[static_cast<std::size_t>(k)]; i >= 0; i = dofParent[static_cast<std::size_t>(i)]) {
      const Scalar a = A(k, i) * dInv;
      for (int j = i; j >= 0; j = dofParent[static_cast<std::size_t>(j)]) A(i, j) -= a * A(k, j);
      A(k, i) = a;
    }
  }
}

// Solves (L^T D L) x = b in place, with the factor from ltdlFactor.
template <class MatrixType, class VectorType, class Parents>
void ltdlSolve(const MatrixType& LD, const Parents& dofParent, VectorType& x) {
  const int n = static_cast<int>(LD.rows());
  for (int k = n - 1; k >= 0; --k) {  // L^T z = b
    for (int i = dofParent[static_cast<std::size_t>(k)]; i >= 0; i = dofParent[static_cast<std::size_t>(i)]) {
      x[i] -= LD(k, i) * x[k];
    }
  }
  for (int k = 0; k < n; ++k) x[k] = x[k] / LD(k, k);  // D y = z: one division per pivot
  for (int k = 0; k < n; ++k) {  // L x = y
    for (int i = dofParent[static_cast<std::size_t>(k)]; i >= 0; i = dofParent[static_cast<std::size_t>(i)]) {
      x[k] -= LD(k, i) * x[i];
    }
  }
}

// M^-1 from the factor of ltdlFactor (M = L^T D L), into Z (n x n, both
// triangles; Z's entries are all written). Since L Z = D^-1 L^-T, and L^-T
// is unit upper triangular, the lower triangle of L Z is D^-1 on the
// diagonal and zero below it, so Z's lower triangle follows row by row
// from the root, each row in order of b:
//   Z(a, b) = [a == b] D(a)^-1 - sum_{j ancestor dof of a} L(a, j) Z(j, b),  b <= a,
// reading Z(j, b) = Z(b, j) where j < b (row b < a is done, or b = a and
// Z(a, j) came earlier in this row). It costs sum_a depth(a) (a + 1)
// products: n^3/3 on a chain, far fewer on a branched tree, whose M^-1 is
// dense all the same (a force on one branch moves the base the others
// hang from). One division per pivot. Traceable: branches on the tree only.
template <class MatrixType, class Parents>
void ltdlInverse(const MatrixType& LD, const Parents& dofParent, MatrixType& Z) {
  using Scalar = typename MatrixType::Scalar;
  const int n = static_cast<int>(LD.rows());
  for (int a = 0; a < n; ++a) {
    const Scalar dInv = Scalar(1) / LD(a, a);
    for (int b = 0; b <= a; ++b) {
      Scalar z = a == b ? dInv : Scalar(0);
      for (int j = dofParent[static_cast<std::size_t>(a)]; j >= 0; j = dofParent[static_cast<std::size_t>(j)]) {
        z -= LD(a, j) * (j >= b ? Z(j, b) : Z(b, j));
      }
      Z(a, b) = z;
      Z(b, a) = z;
    }
  }
}

namespace detail {

// udot = M^-1 (tau - C) with data.M and data.C already computed: the
// tree-sparse L^T D L factor into data.L, then the solve. Any workspace
// with M, L, C, udot and dofParent (Data, local::Data).
template <class DataType, class Vector>
void solveWithMassMatrix(DataType& data, const Vector& tau) {
  data.L = data.M;
  ltdlFactor(data.L, data.dofParent);
  data.udot = tau - data.C;
  ltdlSolve(data.L, data.dofParent, data.udot);
}

}  // namespace detail

// Forward dynamics udot = M^-1 (tau - C) by CRBA, RNEA bias and the
// tree-sparse L^T D L solve; returns data.udot. The method generated code
// uses (docs/runtime.md has the measurements). Traceable.
template <class Scalar>
const VectorX<Scalar>& forwardDynamics(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                       const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                       const VectorX<Scalar>& tau) {
  nonlinearEffects(model, data, q, u);
  detail::massMatrixFromKinematics(model, data);
  detail::solveWithMassMatrix(data, tau);
  return data.udot;
}

// The same with external forces: udot = M^-1 (tau - C + sum_B J_WB^T F_B^ext).
template <class Scalar>
const VectorX<Scalar>& forwardDynamics(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                       const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                       const VectorX<Scalar>& tau, const ExternalForces<Scalar>& fext) {
  nonlinearEffects(model, data, q, u, fext);
  detail::massMatrixFromKinematics(model, data);
  detail::solveWithMassMatrix(data, tau);
  return data.udot;
}

// The same with Eigen's dense LLT (double, or any Scalar Eigen can factor);
// for comparison only: not traceable.
template <class Scalar>
const VectorX<Scalar>& forwardDynamicsLlt(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                          const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                          const VectorX<Scalar>& tau, Eigen::LLT<MatrixX<Scalar>>& llt) {
  nonlinearEffects(model, data, q, u);
  detail::massMatrixFromKinematics(model, data);
  llt.compute(data.M);
  data.udot = tau - data.C;
  llt.solveInPlace(data.udot);
  return data.udot;
}

namespace detail {

// ltdlFactor's and ltdlSolve's dof parents for a dense small matrix (at
// most 6 x 6): a chain.
inline constexpr std::array<int, 6> kSmallDense = {-1, 0, 1, 2, 3, 4};

// Solves D x = b (x holds b) for a small symmetric positive definite D,
// which it leaves factored (dense L^T D L); traceable, no allocation.
template <class Small, class Vector>
void smallSpdSolve(Small& D, Vector& x) {
  ltdlFactor(D, kSmallDense);
  ltdlSolve(D, kSmallDense, x);
}

// Inverse of a small (at most 6 x 6) symmetric positive definite matrix by
// a dense L^T D L; traceable (divisions by pivots only), no allocation.
template <class Scalar, class Small>
void smallSpdInverse(const Small& D, Small& Dinv) {
  const int n = static_cast<int>(D.rows());
  Small A = D;
  ltdlFactor(A, kSmallDense);
  Dinv.resize(n, n);
  for (int c = 0; c < n; ++c) {
    Eigen::Matrix<Scalar, Eigen::Dynamic, 1, Eigen::ColMajor, 6, 1> e(n);
    e.setZero();
    e[c] = Scalar(1);
    ltdlSolve(A, kSmallDense, e);
    Dinv.col(c) = e;
  }
}

}  // namespace detail

// Forward dynamics by the articulated-body algorithm (Featherstone), about
// body origins in World, with D = H^T IA H + diag(armature) per joint;
// returns data.udot. External forces (optional)
// enter each body's bias force: pA_B = biasWrench_B - F_B^ext. Traceable.
template <class Scalar>
const VectorX<Scalar>& aba(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                           const VectorX<Scalar>& u, const VectorX<Scalar>& tau,
                           const ExternalForces<Scalar>* fext = nullptr) {
  forwardKinematics(model, data, q, u);
  const int nb = model.numBodies();
  const Vec3<Scalar>& g = model.gravity;
  if (fext != nullptr) detail::checkExternalForces(model, *fext);
  for (int i = 0; i < nb; ++i) {
    const auto b = static_cast<std::size_t>(i);
    const SpatialInertia<Scalar>& Mb = data.M_Bo_W[b];
    data.IA_Bo_W[b] = Mb.matrix();
    data.pA_Bo_W[b] = detail::biasWrench(Mb, data.V_WB[b], g);
    if (fext != nullptr) data.pA_Bo_W[b] -= (*fext)[b];
  }
  for (int i = nb - 1; i >= 0; --i) {
    const auto b = static_cast<std::size_t>(i);
    const Joint<Scalar>& joint = model.joints[b];
    const int nu_j = joint.nu();
    Mat6<Scalar> Ia = data.IA_Bo_W[b];
    Vec6<Scalar> pa = data.pA_Bo_W[b];
    if (nu_j > 0) {
      const Mat6X<Scalar>& H = data.H_PB_W[b];
      data.U[b] = data.IA_Bo_W[b] * H;
      typename Data<Scalar>::SmallMatrix D = H.transpose() * data.U[b];
      joint.addArmature(D, 0);
      detail::smallSpdInverse<Scalar>(D, data.Dinv[b]);
      data.uu[b] = tau.segment(joint.uOffset, nu_j) - H.transpose() * data.pA_Bo_W[b];
      const Mat6X<Scalar> UDinv = data.U[b] * data.Dinv[b];
      Ia -= UDinv * data.U[b].transpose();
      pa += UDinv * data.uu[b];
    }
    if (joint.parent >= 0) {
      const auto p = static_cast<std::size_t>(joint.parent);
      pa += Ia * data.Ac_WB[b];
      data.IA_Bo_W[p] += shiftInertiaMatrix(Ia, data.p_PoBo_W[b]);
      data.pA_Bo_W[p] += shiftForce(pa, data.p_PoBo_W[b]);
    }
  }
  for (int i = 0; i < nb; ++i) {
    const auto b = static_cast<std::size_t>(i);
    const Joint<Scalar>& joint = model.joints[b];
    Vec6<Scalar> A = data.Ac_WB[b];
    if (joint.parent >= 0) A += shiftVelocity(data.A_WB[static_cast<std::size_t>(joint.parent)], data.p_PoBo_W[b]);
    if (joint.nu() > 0) {
      const auto udot_j = (data.Dinv[b] * (data.uu[b] - data.U[b].transpose() * A)).eval();
      data.udot.segment(joint.uOffset, joint.nu()) = udot_j;
      A += data.H_PB_W[b] * udot_j;
    }
    data.A_WB[b] = A;
  }
  return data.udot;
}

// udot by the articulated-body algorithm with external forces.
template <class Scalar>
const VectorX<Scalar>& aba(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                           const VectorX<Scalar>& u, const VectorX<Scalar>& tau, const ExternalForces<Scalar>& fext) {
  return aba(model, data, q, u, tau, &fext);
}

}  // namespace capstan
