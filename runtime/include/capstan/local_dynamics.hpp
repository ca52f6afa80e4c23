// Mass matrix, bias and forward dynamics in joint frames (Featherstone's
// body coordinates), for code generation.
//
// dynamics.hpp computes every per-body quantity in World. That is the
// natural form for the interpreter and for poses, but traced symbolically
// it is expensive: each body's rotation to World is a dense product of all
// the joint rotations above it, so its inertia, expressed in World, is a
// dense expression that has to be rebuilt every call. Here each body i is
// described in its own joint frame K_i, the M frame of its inboard joint,
// where
//   - its spatial inertia is a constant (it folds when traced),
//   - the joint's motion subspace S_i is constant for every joint type but
//     Universal, Ball and Free (and sparse for those),
//   - the transform from the parent's frame K_p is X_{Kp F} * X_FM(q):
//     a constant followed by one joint rotation about its axis, which is
//     mostly zeros when traced.
// Gravity enters as an acceleration of World, a_0 = [0; -g] (Featherstone,
// RBDA §5.3), so no body needs its orientation in World at all.
//
// Spatial vectors are [angular; linear] about the origin of K_i, expressed
// in K_i. Accelerations here are spatial (Featherstone) accelerations:
// linear part d/dt(v_O) - w x v_O for the body point O at the origin. The
// recursions, for body i with parent p, E = R_{Ki Kp}, r = p_{KpKi} in K_p:
//   v_i = iX_p v_p + S_i u_i                       (v_0 = 0)
//   c_i = S̊_i u_i + v_i x (S_i u_i)             (S̊: derivative of S_i's
//                                                   components in K_i)
//   a_i = iX_p a_p + S_i udot_i + c_i             (a_0 = [0; -g])
//   f_i = I_i a_i + v_i x* (I_i v_i)
//   tau_i = S_i^T f_i (+ armature_i udot_i in inverse dynamics; M and ABA's
//           D = S_i^T IA_i S_i gain the armature on their diagonal: mechanism.hpp)
//   iX_p [w; v] = [E w; E (v + w x r)],   pX_i^* [n; f] = [E^T n + r x E^T f; E^T f].
// The results (M, C, udot) are the same as dynamics.hpp's to roundoff; the
// unit tests check that on random trees of every joint type. Everything
// here is traceable: it branches on joint types and topology only.
#pragma once

#include "capstan/dynamics.hpp"

#include <vector>

namespace capstan::local {

// External spatial forces: dynamics.hpp's ExternalForces (one F_B = [n; f]
// per body, about Bo, in World). Every algorithm below takes them as an
// optional last argument and moves them into the joint frames
// (detail::externalForcesInJointFrames); without it nothing is added to the
// traced code.
using capstan::ExternalForces;

template <class Scalar>
struct Data {
  using SmallMatrix = typename capstan::Data<Scalar>::SmallMatrix;
  using SmallVector = typename capstan::Data<Scalar>::SmallVector;

  explicit Data(const Mechanism<Scalar>& model) : dofParent(capstan::Data<Scalar>::dofParents(model)) {
    const auto nb = static_cast<std::size_t>(model.numBodies());
    R_PK.resize(nb, Mat3<Scalar>::Identity());
    p_PK.resize(nb, Vec3<Scalar>::Zero());
    S.resize(nb);
    Ic_K.resize(nb);
    v.resize(nb, Vec6<Scalar>::Zero());
    c.resize(nb, Vec6<Scalar>::Zero());
    a.resize(nb, Vec6<Scalar>::Zero());
    f.resize(nb, Vec6<Scalar>::Zero());
    IA.resize(nb, Mat6<Scalar>::Zero());
    pA.resize(nb, Vec6<Scalar>::Zero());
    U.resize(nb);
    Dinv.resize(nb);
    uu.resize(nb);
    for (std::size_t i = 0; i < nb; ++i) {
      const int nu_j = model.joints[i].nu();
      S[i].setZero(6, nu_j);
      U[i].setZero(6, nu_j);
      Dinv[i].setZero(nu_j, nu_j);
      uu[i].setZero(nu_j);
    }
    M.setZero(model.nu, model.nu);
    C.setZero(model.nu);
    udot.setZero(model.nu);
    L.setZero(model.nu, model.nu);
    setParameterStage(model);
  }

  // What depends on the model's parameters only, not on the state
  // (Simbody's Instance stage): computed here, once; a code generator may
  // replace these entries by values cached between parameter changes.
  //   X_PF_i = X_{Kp F_i} = X_{B_p M_p}^-1 X_{B_p F_i}   (X_PF_i = X_{W F_i} for a root)
  //   I_K_i  = body i's spatial inertia about K_i, in K_i, from its mass m,
  //            center of mass X_{M_i B_i} p_BoBcm and R_{M_i B_i} I_Bcm R_{M_i B_i}^T
  void setParameterStage(const Mechanism<Scalar>& model);  // defined below

  // Parameters (setParameterStage)
  std::vector<Transform<Scalar>> X_PF;       // (nb) F_i in its parent's joint frame K_p (World for a root)
  std::vector<SpatialInertia<Scalar>> I_K;   // (nb) the body's inertia about K_i, in K_i
  // Position (positionKinematics)
  std::vector<Mat3<Scalar>> R_PK;            // (nb) R_{Kp Ki}: K_i in its parent's K_p (World for a root)
  std::vector<Vec3<Scalar>> p_PK;            // (nb) p_{KpKi}, in K_p
  std::vector<Mat6X<Scalar>> S;              // (nb) 6 x nu_j motion subspace, at K_i, in K_i
  // Velocity (velocityKinematics)
  std::vector<Vec6<Scalar>> v;               // (nb) spatial velocity of body i
  std::vector<Vec6<Scalar>> c;               // (nb) velocity-product acceleration c_i
  // Dynamics
  std::vector<Vec6<Scalar>> a;               // (nb) spatial acceleration (gravity included)
  std::vector<Vec6<Scalar>> f;               // (nb) force the joint transmits (Newton-Euler)
  std::vector<SpatialInertia<Scalar>> Ic_K;  // (nb) composite inertia of the subtree
  std::vector<Mat6<Scalar>> IA;              // (nb) articulated inertia
  std::vector<Vec6<Scalar>> pA;              // (nb) articulated bias force
  std::vector<Mat6X<Scalar>> U;              // (nb) IA S
  std::vector<SmallMatrix> Dinv;             // (nb) (S^T IA S)^-1
  std::vector<SmallVector> uu;               // (nb) tau_j - S^T pA (a floating base: see abaBackwardStep)
  MatrixX<Scalar> M;                         // (nu x nu)
  VectorX<Scalar> C;                         // (nu)
  VectorX<Scalar> udot;                      // (nu)
  MatrixX<Scalar> L;                         // (nu x nu) L^T D L factor of M
  std::vector<int> dofParent;                // (nu) as capstan::Data::dofParent
  // ABA leaves every joint's U, D^-1 and uu, the articulated factor that
  // generated code's solveMassMatrix reads; false (forward dynamics alone):
  // a floating base's are not formed (abaBackwardStep).
  bool articulatedFactor = false;
};

// iX_p m: a motion vector at Kp in Kp, at Ki in Ki.
template <class Scalar>
Vec6<Scalar> motionToChild(const Mat3<Scalar>& R_PK, const Vec3<Scalar>& p_PK, const Vec6<Scalar>& m_P) {
  const Vec3<Scalar> w = m_P.template head<3>();
  const Vec3<Scalar> v = m_P.template tail<3>() + cross(w, p_PK);
  return spatialVector<Scalar>(R_PK.transpose() * w, R_PK.transpose() * v);
}

// pX_i^* f: a force at Ki in Ki, at Kp in Kp.
template <class Scalar>
Vec6<Scalar> forceToParent(const Mat3<Scalar>& R_PK, const Vec3<Scalar>& p_PK, const Vec6<Scalar>& f_K) {
  const Vec3<Scalar> force = R_PK * f_K.template tail<3>();
  return spatialVector<Scalar>(R_PK * f_K.template head<3>() + cross(p_PK, force), force);
}

namespace detail {

// R A R^T for a symmetric A: the upper triangle computed once and mirrored,
// so a traced result is exactly symmetric and shares its entries.
template <class Scalar>
Mat3<Scalar> rotateSymmetric(const Mat3<Scalar>& R, const Mat3<Scalar>& A) {
  const Mat3<Scalar> RA = R * A;
  Mat3<Scalar> out;
  for (int i = 0; i < 3; ++i) {
    for (int j = i; j < 3; ++j) {
      out(i, j) = RA(i, 0) * R(j, 0) + RA(i, 1) * R(j, 1) + RA(i, 2) * R(j, 2);
      out(j, i) = out(i, j);
    }
  }
  return out;
}

// X_{Kp F} of body i's joint: its F frame in the parent's joint frame
// (in World for a root). Constant.
template <class Scalar>
Transform<Scalar> parentFrameToF(const Mechanism<Scalar>& model, int i) {
  const Joint<Scalar>& joint = model.joints[static_cast<std::size_t>(i)];
  if (joint.parent < 0) return joint.X_PF;
  return model.joints[static_cast<std::size_t>(joint.parent)].X_BM.inverse() * joint.X_PF;
}

// S_i (at Mo, in M) and the joint's X_FM (JointTraits::subspace). S is
// written per type so that constant subspaces stay constant when traced (no
// reliance on the tracer simplifying R_MF * axis back to the axis).
template <class Scalar>
void jointSubspace(const Joint<Scalar>& joint, const VectorX<Scalar>& q, Transform<Scalar>& X_FM,
                   Mat6X<Scalar>& S) {
  Mat6X<Scalar> H;
  H.setZero(6, joint.nu());
  capstan::detail::jointPosition(joint, q, X_FM, H);
  S.setZero(6, joint.nu());
  visitJointType(joint.type, [&](auto traits) { decltype(traits)::subspace(joint, q, X_FM, H, S); });
}

// S̊_i u_i: the rate of change of S_i's components in K_i, times u_i
// (JointTraits::subspaceRate; zero where S is constant in M).
template <class Scalar>
Vec6<Scalar> subspaceRate(const Joint<Scalar>& joint, const Mat6X<Scalar>& S, const Vec6<Scalar>& vJ,
                          const VectorX<Scalar>& u) {
  Vec6<Scalar> out = Vec6<Scalar>::Zero();
  visitJointType(joint.type, [&](auto traits) { decltype(traits)::subspaceRate(joint, S, vJ, u, out); });
  return out;
}

// pX_i^* IA iX_p for a symmetric 6 x 6 (articulated) inertia: rotated into
// K_p, then shifted from K_i's origin to K_p's. Blocks [[A, B], [B^T, D]].
template <class Scalar>
Mat6<Scalar> inertiaToParent(const Mat3<Scalar>& R_PK, const Vec3<Scalar>& p_PK, const Mat6<Scalar>& IA) {
  const Mat3<Scalar> A = rotateSymmetric<Scalar>(R_PK, IA.template topLeftCorner<3, 3>());
  const Mat3<Scalar> B = R_PK * IA.template topRightCorner<3, 3>() * R_PK.transpose();
  const Mat3<Scalar> D = rotateSymmetric<Scalar>(R_PK, IA.template bottomRightCorner<3, 3>());
  // With Phi = [[1, 0], [-[r]x, 1]]: Phi^T IA Phi =
  //   [[A - B[r]x + [r]x C2, B + [r]x D], [C2, D]],  C2 = B^T - D[r]x.
  const Mat3<Scalar> rx = skew(p_PK);
  const Mat3<Scalar> C2 = B.transpose() - D * rx;
  const Mat3<Scalar> Brx = B * rx;
  const Mat3<Scalar> rxC2 = rx * C2;
  Mat6<Scalar> out;
  for (int i = 0; i < 3; ++i) {
    for (int j = i; j < 3; ++j) {
      out(i, j) = A(i, j) - Brx(i, j) + rxC2(i, j);
      out(j, i) = out(i, j);
    }
  }
  out.template topRightCorner<3, 3>() = B + rx * D;
  out.template bottomLeftCorner<3, 3>() = C2;
  out.template bottomRightCorner<3, 3>() = D;
  return out;
}

// The same for a rigid (composite) inertia, kept in its 10-number form.
template <class Scalar>
SpatialInertia<Scalar> rigidInertiaToParent(const Mat3<Scalar>& R_PK, const Vec3<Scalar>& p_PK,
                                            const SpatialInertia<Scalar>& I_K) {
  const SpatialInertia<Scalar> rotated(I_K.mass, R_PK * I_K.h, rotateSymmetric<Scalar>(R_PK, I_K.I_P));
  return rotated.shift(Vec3<Scalar>(-p_PK));
}

}  // namespace detail

template <class Scalar>
void Data<Scalar>::setParameterStage(const Mechanism<Scalar>& model) {
  const auto nb = static_cast<std::size_t>(model.numBodies());
  X_PF.resize(nb);
  I_K.resize(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    const Joint<Scalar>& joint = model.joints[b];
    const Body<Scalar>& body = model.bodies[b];
    X_PF[b] = detail::parentFrameToF(model, static_cast<int>(b));
    const Transform<Scalar> X_MB = joint.X_BM.inverse();
    I_K[b] = SpatialInertia<Scalar>::fromMassCenter(body.mass, X_MB * body.p_BoBcm_B,
                                                    detail::rotateSymmetric<Scalar>(X_MB.R, body.I_Bcm_B));
  }
}

// The recursions below are loops over per-body steps, each reading only
// its body's entries of Data, its parent's and its children's: a code
// generator may trace one step of a body with those entries as symbols.

// Body b's joint frame and motion subspace:
//   X_{Kp Ki} = X_PF_i X_FM(q_i),  S_i
template <class Scalar>
void positionStep(const Mechanism<Scalar>& model, Data<Scalar>& data, std::size_t b, const VectorX<Scalar>& q) {
  Transform<Scalar> X_FM;
  detail::jointSubspace(model.joints[b], q, X_FM, data.S[b]);
  const Transform<Scalar> X_PK = data.X_PF[b] * X_FM;
  data.R_PK[b] = X_PK.R;
  data.p_PK[b] = X_PK.p;
}

// Body b's velocity and velocity-product acceleration, after its
// positionStep and its parent's velocityStep:
//   v_i = iX_p v_p + S_i u_i,  c_i = S̊_i u_i + v_i x (S_i u_i)
template <class Scalar>
void velocityStep(const Mechanism<Scalar>& model, Data<Scalar>& data, std::size_t b, const VectorX<Scalar>& u) {
  const Joint<Scalar>& joint = model.joints[b];
  Vec6<Scalar> vJ = Vec6<Scalar>::Zero();
  if (joint.nu() > 0) vJ = data.S[b] * u.segment(joint.uOffset, joint.nu());
  data.v[b] = vJ;
  if (joint.parent >= 0) {
    data.v[b] += motionToChild(data.R_PK[b], data.p_PK[b], data.v[static_cast<std::size_t>(joint.parent)]);
  }
  data.c[b] = detail::subspaceRate(joint, data.S[b], vJ, u) + crossMotion(data.v[b], vJ);
}

// Joint frames and motion subspaces (the bodies' inertias in them are the
// parameter stage's, Data::setParameterStage).
template <class Scalar>
void positionKinematics(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q) {
  for (int i = 0; i < model.numBodies(); ++i) positionStep(model, data, static_cast<std::size_t>(i), q);
}

// Also the bodies' velocities and velocity-product accelerations.
template <class Scalar>
void velocityKinematics(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                        const VectorX<Scalar>& u) {
  positionKinematics(model, data, q);
  for (int i = 0; i < model.numBodies(); ++i) velocityStep(model, data, static_cast<std::size_t>(i), u);
}

namespace detail {

// World's spatial acceleration seen from a root's frame: gravity as a_0.
template <class Scalar>
Vec6<Scalar> parentAcceleration(const Mechanism<Scalar>& model, const Data<Scalar>& data, int i) {
  const auto b = static_cast<std::size_t>(i);
  const int parent = model.joints[b].parent;
  if (parent >= 0) return motionToChild(data.R_PK[b], data.p_PK[b], data.a[static_cast<std::size_t>(parent)]);
  const Vec6<Scalar> a0 = spatialVector<Scalar>(Vec3<Scalar>::Zero(), Vec3<Scalar>(-model.gravity));
  return motionToChild(data.R_PK[b], data.p_PK[b], a0);
}

// One body's F = [n_Bo; f] (World) at K_i in K_i, R_WK its orientation.
template <class Scalar>
Vec6<Scalar> externalForceInJointFrame(const Joint<Scalar>& joint, const Mat3<Scalar>& R_WK, const Vec6<Scalar>& F) {
  const Vec3<Scalar> p_KoBo_W = R_WK * Vec3<Scalar>(joint.X_BM.inverse().p);
  const Vec3<Scalar> n_B = F.template head<3>();
  const Vec3<Scalar> force = F.template tail<3>();
  const Vec3<Scalar> n_K = n_B + p_KoBo_W.cross(force);
  return spatialVector<Scalar>(Vec3<Scalar>(R_WK.transpose() * n_K), Vec3<Scalar>(R_WK.transpose() * force));
}

// fext (World, about Bo) as spatial forces at K_i in K_i. Needs position
// kinematics. Composes R_{W Ki} down the tree, which the algorithms proper
// never need, so models without external forces do not pay for it:
//   R_{W Ki} = R_{W Kp} R_{Kp Ki},  p_{W Ki} = p_{W Kp} + R_{W Kp} p_{KpKi}
//   n_Ko = n_Bo + p_{KoBo} x f,     [n; f] in K_i = R_{W Ki}^T [n_Ko; f].
template <class Scalar>
void externalForcesInJointFrames(const Mechanism<Scalar>& model, const Data<Scalar>& data,
                                 const ExternalForces<Scalar>& fext, std::vector<Vec6<Scalar>>& f_K) {
  const auto nb = static_cast<std::size_t>(model.numBodies());
  capstan::detail::checkExternalForces(model, fext);
  std::vector<Mat3<Scalar>> R_WK(nb);
  std::vector<Vec3<Scalar>> p_WK(nb);
  f_K.resize(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    const int parent = model.joints[b].parent;
    if (parent >= 0) {
      const auto p = static_cast<std::size_t>(parent);
      R_WK[b] = R_WK[p] * data.R_PK[b];
      p_WK[b] = p_WK[p] + R_WK[p] * data.p_PK[b];
    } else {
      R_WK[b] = data.R_PK[b];
      p_WK[b] = data.p_PK[b];
    }
    f_K[b] = externalForceInJointFrame(model.joints[b], R_WK[b], fext[b]);
  }
}

// Newton-Euler's forward step of body b, after its velocity kinematics and
// its parent's step: a_i, and f_i of the body alone (its fext f_K at K_i in
// K_i subtracted, if given):
//   a_i = iX_p a_p + c_i + S_i udot_i,  f_i = I_i a_i + v_i x* (I_i v_i) - f_K
template <class Scalar>
void newtonEulerForwardStep(const Mechanism<Scalar>& model, Data<Scalar>& data, std::size_t b,
                            const VectorX<Scalar>* udot, const Vec6<Scalar>* f_K) {
  const Joint<Scalar>& joint = model.joints[b];
  data.a[b] = parentAcceleration(model, data, static_cast<int>(b)) + data.c[b];
  if (udot != nullptr && joint.nu() > 0) data.a[b] += data.S[b] * udot->segment(joint.uOffset, joint.nu());
  data.f[b] = data.I_K[b] * data.a[b] + crossForce(data.v[b], data.I_K[b] * data.v[b]);
  if (f_K != nullptr) data.f[b] -= *f_K;
}

// Its backward step, after its children's (which added their f to f_i):
//   C_i = S_i^T f_i,  f_p += pX_i^* f_i
template <class Scalar>
void newtonEulerBackwardStep(const Mechanism<Scalar>& model, Data<Scalar>& data, std::size_t b) {
  const Joint<Scalar>& joint = model.joints[b];
  if (joint.nu() > 0) data.C.segment(joint.uOffset, joint.nu()) = data.S[b].transpose() * data.f[b];
  if (joint.parent >= 0) {
    data.f[static_cast<std::size_t>(joint.parent)] += forceToParent(data.R_PK[b], data.p_PK[b], data.f[b]);
  }
}

// Newton-Euler from velocity kinematics already in data: f_i, and data.C =
// S^T f (C - sum J^T F with fext, a null fext adding nothing to the trace).
template <class Scalar>
void newtonEuler(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>* udot,
                 const ExternalForces<Scalar>* fext) {
  const int nb = model.numBodies();
  std::vector<Vec6<Scalar>> f_K;
  if (fext != nullptr) externalForcesInJointFrames(model, data, *fext, f_K);
  for (int i = 0; i < nb; ++i) {
    const auto b = static_cast<std::size_t>(i);
    newtonEulerForwardStep(model, data, b, udot, fext != nullptr ? &f_K[b] : nullptr);
  }
  for (int i = nb - 1; i >= 0; --i) newtonEulerBackwardStep(model, data, static_cast<std::size_t>(i));
  if (udot != nullptr) capstan::detail::addArmatureForces(model, *udot, data.C);
}

}  // namespace detail

// C(q, u) by recursive Newton-Euler in joint frames; returns data.C.
template <class Scalar>
const VectorX<Scalar>& nonlinearEffects(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                        const VectorX<Scalar>& q, const VectorX<Scalar>& u) {
  velocityKinematics(model, data, q, u);
  detail::newtonEuler<Scalar>(model, data, nullptr, nullptr);
  return data.C;
}

// C(q, u) - sum_B J_B^T F_B with external forces (see ExternalForces);
// returns data.C.
template <class Scalar>
const VectorX<Scalar>& nonlinearEffects(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                        const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                        const ExternalForces<Scalar>& fext) {
  velocityKinematics(model, data, q, u);
  detail::newtonEuler<Scalar>(model, data, nullptr, &fext);
  return data.C;
}

// tau = M udot + C - sum_B J_B^T F_B by recursive Newton-Euler in joint
// frames (fext optional); returns it (also left in data.C).
template <class Scalar>
const VectorX<Scalar>& inverseDynamics(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                       const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                       const VectorX<Scalar>& udot, const ExternalForces<Scalar>* fext = nullptr) {
  velocityKinematics(model, data, q, u);
  detail::newtonEuler<Scalar>(model, data, &udot, fext);
  return data.C;
}

template <class Scalar>
const VectorX<Scalar>& inverseDynamics(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                       const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                       const VectorX<Scalar>& udot, const ExternalForces<Scalar>& fext) {
  return inverseDynamics(model, data, q, u, udot, &fext);
}

namespace detail {

// M from position kinematics already in data (composite rigid body).
template <class Scalar>
void massMatrixFromKinematics(const Mechanism<Scalar>& model, Data<Scalar>& data) {
  const int nb = model.numBodies();
  for (int i = 0; i < nb; ++i) data.Ic_K[static_cast<std::size_t>(i)] = data.I_K[static_cast<std::size_t>(i)];
  for (int i = nb - 1; i >= 0; --i) {
    const auto b = static_cast<std::size_t>(i);
    const int parent = model.joints[b].parent;
    if (parent >= 0) {
      data.Ic_K[static_cast<std::size_t>(parent)] += rigidInertiaToParent(data.R_PK[b], data.p_PK[b], data.Ic_K[b]);
    }
  }
  capstan::detail::assembleMassMatrix(
      model, data.M, [&](int b) -> const Mat6X<Scalar>& { return data.S[static_cast<std::size_t>(b)]; },
      [&](int b, Mat6X<Scalar>& F) {
        const auto k = static_cast<std::size_t>(b);
        for (int c = 0; c < F.cols(); ++c) F.col(c) = data.Ic_K[k] * Vec6<Scalar>(data.S[k].col(c));
      },
      [&](int b, const Vec6<Scalar>& f) {
        const auto k = static_cast<std::size_t>(b);
        return forceToParent(data.R_PK[k], data.p_PK[k], f);
      });
}

}  // namespace detail

// M(q) by the composite-rigid-body algorithm in joint frames; returns data.M.
template <class Scalar>
const MatrixX<Scalar>& crba(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q) {
  positionKinematics(model, data, q);
  detail::massMatrixFromKinematics(model, data);
  return data.M;
}

// udot = M^-1 (tau - C): CRBA and Newton-Euler in joint frames, then the
// tree-sparse L^T D L solve; returns data.udot.
template <class Scalar>
const VectorX<Scalar>& forwardDynamics(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                       const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                       const VectorX<Scalar>& tau) {
  nonlinearEffects(model, data, q, u);
  detail::massMatrixFromKinematics(model, data);
  capstan::detail::solveWithMassMatrix(data, tau);
  return data.udot;
}

// The same with external forces: udot = M^-1 (tau - C + sum_B J_B^T F_B).
template <class Scalar>
const VectorX<Scalar>& forwardDynamics(const Mechanism<Scalar>& model, Data<Scalar>& data,
                                       const VectorX<Scalar>& q, const VectorX<Scalar>& u,
                                       const VectorX<Scalar>& tau, const ExternalForces<Scalar>& fext) {
  nonlinearEffects(model, data, q, u, fext);
  detail::massMatrixFromKinematics(model, data);
  capstan::detail::solveWithMassMatrix(data, tau);
  return data.udot;
}

// ABA's backward step at body b, once its children's steps have added
// their articulated inertias and bias forces to IA_b and pA_b:
//   U_i = IA_i S_i,  D_i^-1 = (S_i^T U_i)^-1,  u_i = tau_i - S_i^T pA_i,
//   Ia_i = IA_i - U_i D_i^-1 U_i^T,  pa_i = pA_i + Ia_i c_i + U_i D_i^-1 u_i,
//   IA_p += pX_i^* Ia_i iX_p,  pA_p += pX_i^* pa_i
// A floating base (a root Free joint: S square, S^-1 = S^T = diag(R, R)
// with R = R_FM) needs no D^-1 unless the articulated factor is kept
// (Data::articulatedFactor): with A = a_0 + c_i (what the forward step
// adds S udot_i to) and the armature m, D udot_i = u_i - U_i^T A is
//   (IA_i + m 1) y = S tau_i - pA_i - IA_i A,  udot_i = S^T y,  a_i = A + y,
// one 6 x 6 solve instead of forming U_i, D_i = S^T U_i and D_i^-1 (about
// 500 fewer operations for the humanoid); y goes into uu, U and D^-1 stay
// zero.
template <class Scalar>
bool floatingBase(const Joint<Scalar>& joint, const Data<Scalar>& data) {
  return !data.articulatedFactor && joint.parent < 0 && joint.type == JointType::Free;
}

template <class Scalar>
void abaBackwardStep(const Mechanism<Scalar>& model, Data<Scalar>& data, std::size_t b, const VectorX<Scalar>& tau) {
  const Joint<Scalar>& joint = model.joints[b];
  const int nu_j = joint.nu();
  if (floatingBase(joint, data)) {
    const Mat6X<Scalar>& S = data.S[b];
    const Vec6<Scalar> A = detail::parentAcceleration(model, data, static_cast<int>(b)) + data.c[b];
    Mat6<Scalar> K = data.IA[b];
    for (int k = 0; k < 6; ++k) K(k, k) += joint.armature;
    Vec6<Scalar> y = S * Vec6<Scalar>(tau.template segment<6>(joint.uOffset)) - data.pA[b] - data.IA[b] * A;
    capstan::detail::smallSpdSolve(K, y);
    data.U[b].setZero();
    data.Dinv[b].setZero();
    data.uu[b] = y;
    return;
  }
  Mat6<Scalar> Ia = data.IA[b];
  Vec6<Scalar> pa = data.pA[b];
  if (nu_j > 0) {
    const Mat6X<Scalar>& S = data.S[b];
    data.U[b] = data.IA[b] * S;
    typename Data<Scalar>::SmallMatrix D = S.transpose() * data.U[b];
    joint.addArmature(D, 0);
    capstan::detail::smallSpdInverse<Scalar>(D, data.Dinv[b]);
    data.uu[b] = tau.segment(joint.uOffset, nu_j) - S.transpose() * data.pA[b];
    const Mat6X<Scalar> UDinv = data.U[b] * data.Dinv[b];
    // Ia -= UDinv U^T, lower triangle once (Ia stays exactly symmetric).
    for (int r = 0; r < 6; ++r) {
      for (int col = r; col < 6; ++col) {
        Ia(r, col) -= UDinv.row(r).dot(data.U[b].row(col));
        Ia(col, r) = Ia(r, col);
      }
    }
    pa += UDinv * data.uu[b];
  }
  if (joint.parent >= 0) {
    const auto p = static_cast<std::size_t>(joint.parent);
    pa += Ia * data.c[b];
    data.IA[p] += detail::inertiaToParent(data.R_PK[b], data.p_PK[b], Ia);
    data.pA[p] += forceToParent(data.R_PK[b], data.p_PK[b], pa);
  }
}

// ABA's forward step at body b, after its parent's:
//   a_i = iX_p a_p + c_i (gravity as a_0),  udot_i = D_i^-1 (u_i - U_i^T a_i),
//   a_i += S_i udot_i
// (a floating base: udot_i = S^T y, a_i += y; abaBackwardStep).
template <class Scalar>
void abaForwardStep(const Mechanism<Scalar>& model, Data<Scalar>& data, std::size_t b) {
  const Joint<Scalar>& joint = model.joints[b];
  Vec6<Scalar> A = detail::parentAcceleration(model, data, static_cast<int>(b)) + data.c[b];
  if (floatingBase(joint, data)) {
    const Vec6<Scalar> y = data.uu[b];
    data.udot.segment(joint.uOffset, 6) = data.S[b].transpose() * y;
    data.a[b] = A + y;
    return;
  }
  if (joint.nu() > 0) {
    const auto udot_j = (data.Dinv[b] * (data.uu[b] - data.U[b].transpose() * A)).eval();
    data.udot.segment(joint.uOffset, joint.nu()) = udot_j;
    A += data.S[b] * udot_j;
  }
  data.a[b] = A;
}

// udot by the articulated-body algorithm in joint frames; returns data.udot.
template <class Scalar>
const VectorX<Scalar>& aba(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                           const VectorX<Scalar>& u, const VectorX<Scalar>& tau,
                           const ExternalForces<Scalar>* fext = nullptr) {
  velocityKinematics(model, data, q, u);
  const int nb = model.numBodies();
  std::vector<Vec6<Scalar>> f_K;
  if (fext != nullptr) detail::externalForcesInJointFrames(model, data, *fext, f_K);
  for (int i = 0; i < nb; ++i) {
    const auto b = static_cast<std::size_t>(i);
    data.IA[b] = data.I_K[b].matrix();
    data.pA[b] = crossForce(data.v[b], data.I_K[b] * data.v[b]);
    if (fext != nullptr) data.pA[b] -= f_K[b];  // pA_i = v_i x* I_i v_i - f_i^ext
  }
  for (int i = nb - 1; i >= 0; --i) abaBackwardStep(model, data, static_cast<std::size_t>(i), tau);
  for (int i = 0; i < nb; ++i) abaForwardStep(model, data, static_cast<std::size_t>(i));
  return data.udot;
}

// udot by the articulated-body algorithm with external forces.
template <class Scalar>
const VectorX<Scalar>& aba(const Mechanism<Scalar>& model, Data<Scalar>& data, const VectorX<Scalar>& q,
                           const VectorX<Scalar>& u, const VectorX<Scalar>& tau, const ExternalForces<Scalar>& fext) {
  return aba(model, data, q, u, tau, &fext);
}

}  // namespace capstan::local
