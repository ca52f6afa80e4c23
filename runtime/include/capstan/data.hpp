// Data<Scalar>: the workspace of the multibody algorithms. Sized once from a
// Mechanism; the algorithms (kinematics.hpp, dynamics.hpp) write into it and
// never allocate afterwards. Every per-body quantity is about the body origin
// Bo and expressed in World; spatial vectors are [angular; linear].
#pragma once

#include "capstan/mechanism.hpp"

#include <vector>

namespace capstan {

template <class Scalar>
struct Data {
  using SmallMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor, 6, 6>;
  using SmallVector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1, Eigen::ColMajor, 6, 1>;

  explicit Data(const Mechanism<Scalar>& model) {
    const auto nb = static_cast<std::size_t>(model.numBodies());
    X_FM.resize(nb);
    X_WB.resize(nb);
    R_WF.resize(nb);
    p_PoBo_W.resize(nb, Vec3<Scalar>::Zero());
    p_MoBo_F.resize(nb, Vec3<Scalar>::Zero());
    H_FM_F.resize(nb);
    H_PB_W.resize(nb);
    V_WB.resize(nb, Vec6<Scalar>::Zero());
    Ac_WB.resize(nb, Vec6<Scalar>::Zero());
    Abias_WB.resize(nb, Vec6<Scalar>::Zero());
    A_WB.resize(nb, Vec6<Scalar>::Zero());
    M_Bo_W.resize(nb);
    Mc_Bo_W.resize(nb);
    F_Bo_W.resize(nb, Vec6<Scalar>::Zero());
    IA_Bo_W.resize(nb, Mat6<Scalar>::Zero());
    pA_Bo_W.resize(nb, Vec6<Scalar>::Zero());
    U.resize(nb);
    Dinv.resize(nb);
    uu.resize(nb);
    for (std::size_t i = 0; i < nb; ++i) {
      const int nu_j = model.joints[i].nu();
      H_FM_F[i].setZero(6, nu_j);
      H_PB_W[i].setZero(6, nu_j);
      U[i].setZero(6, nu_j);
      Dinv[i].setZero(nu_j, nu_j);
      uu[i].setZero(nu_j);
    }
    M.setZero(model.nu, model.nu);
    tau.setZero(model.nu);
    C.setZero(model.nu);
    udot.setZero(model.nu);
    L.setZero(model.nu, model.nu);
    dofParent = dofParents(model);
  }

  // The tree parent of each dof (-1 at a root): a joint's first dof hangs
  // from the last dof of the nearest ancestor joint that has dofs, its later
  // dofs from the previous one. What the tree-sparse L^T D L works on.
  static std::vector<int> dofParents(const Mechanism<Scalar>& model) {
    std::vector<int> parents(static_cast<std::size_t>(model.nu), -1);
    for (const auto& joint : model.joints) {
      int parentDof = -1;
      for (int a = joint.parent; a >= 0; a = model.joints[static_cast<std::size_t>(a)].parent) {
        const auto& ancestor = model.joints[static_cast<std::size_t>(a)];
        if (ancestor.nu() > 0) {
          parentDof = ancestor.uOffset + ancestor.nu() - 1;
          break;
        }
      }
      for (int k = 0; k < joint.nu(); ++k) {
        parents[static_cast<std::size_t>(joint.uOffset + k)] = k == 0 ? parentDof : joint.uOffset + k - 1;
      }
    }
    return parents;
  }

  // Position kinematics (forwardKinematics(q))
  std::vector<Transform<Scalar>> X_FM;     // (nb) across each joint
  std::vector<Transform<Scalar>> X_WB;     // (nb) body poses
  std::vector<Mat3<Scalar>> R_WF;          // (nb) joint F frame orientation
  std::vector<Vec3<Scalar>> p_PoBo_W;      // (nb) from the parent origin (Wo for World)
  std::vector<Vec3<Scalar>> p_MoBo_F;      // (nb)
  std::vector<Mat6X<Scalar>> H_FM_F;       // (nb) 6 x nu_j: V_FM (at Mo, in F) = H_FM_F u_j
  std::vector<Mat6X<Scalar>> H_PB_W;       // (nb) 6 x nu_j: V_PB (at Bo, in W) = H_PB_W u_j
  std::vector<SpatialInertia<Scalar>> M_Bo_W;  // (nb) body spatial inertia about Bo, in W

  // Velocity kinematics (forwardKinematics(q, u))
  std::vector<Vec6<Scalar>> V_WB;          // (nb) [w_WB; v_WBo] in W
  std::vector<Vec6<Scalar>> Ac_WB;         // (nb) velocity-product part of A_WB given A_WP
  std::vector<Vec6<Scalar>> Abias_WB;      // (nb) A_WB when udot = 0 (no gravity)

  // Acceleration kinematics (forwardKinematics(q, u, udot))
  std::vector<Vec6<Scalar>> A_WB;          // (nb) [dw_WB/dt; a_WBo] in W

  // Dynamics
  std::vector<SpatialInertia<Scalar>> Mc_Bo_W;  // (nb) composite inertia of the subtree
  std::vector<Vec6<Scalar>> F_Bo_W;        // (nb) spatial force the joint transmits to B
  MatrixX<Scalar> M;                       // (nu x nu) mass matrix
  VectorX<Scalar> tau;                     // (nu) inverse dynamics result
  VectorX<Scalar> C;                       // (nu) bias: Coriolis, centrifugal, gravity
  VectorX<Scalar> udot;                    // (nu) forward dynamics result
  MatrixX<Scalar> L;                       // (nu x nu) L^T D L factor of M (ltdlFactor)
  std::vector<int> dofParent;              // (nu) tree parent of each dof, -1 at a root

  // Articulated-body algorithm
  std::vector<Mat6<Scalar>> IA_Bo_W;       // (nb) articulated inertia
  std::vector<Vec6<Scalar>> pA_Bo_W;       // (nb) articulated bias force
  std::vector<Mat6X<Scalar>> U;            // (nb) IA H
  std::vector<SmallMatrix> Dinv;           // (nb) (H^T IA H)^-1
  std::vector<SmallVector> uu;             // (nb) tau_j - H^T pA
};

}  // namespace capstan
