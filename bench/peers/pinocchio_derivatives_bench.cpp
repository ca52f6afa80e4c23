// Dynamics derivatives against Pinocchio's library, side by side in one
// program (docs/performance.md, "Derivatives vs Pinocchio"): Capstan's
// generated forwardDynamicsDerivatives / inverseDynamicsDerivatives
// (`capstan compile --derivatives`) against Pinocchio's analytical
// computeABADerivatives / computeRNEADerivatives (Carpentier & Mansard),
// header-only, on the peer models arm7, chain20, chain50 and the humanoid;
// and, in the same rounds, forwardDynamics against Pinocchio's aba (both of
// its conventions) and frameJacobian of the last body against
// computeFrameJacobian (from q, LOCAL_WORLD_ALIGNED); and the two
// products -M^-1 d tau that both forward derivatives end with, alone, with
// what a target of 3x computeABADerivatives leaves beside them.
// Built and run by bench/peers/pinocchio.sh with PINOCCHIO_PREFIX (an
// installation made by hand outside this repository); without it the
// script skips.
//
// Before timing, the results are compared: on revolute-only models every
// entry (d udot / dq, d udot / du, M^-1's upper triangle; d tau / dq,
// d tau / du, M's upper triangle) to kTolerance relative; on the humanoid
// (a Free root: Pinocchio's velocity is in the body frame) the hinge rows
// and columns; forward dynamics on the hinges' accelerations, the frame
// Jacobian on the hinges' columns. Per call: the median over rounds of
// thread CPU time, engines interleaved. Env: PEERS_ROUNDS (31),
// PEERS_BATCH_US (2000).
// With PEERS_COLD=1 the derivative and forward-dynamics rows are timed a
// second time cold: each call after code that evicts the first-level
// instruction cache (evictInstructionCache), less that code's own time,
// as in a program that runs other code between calls (a solver, an
// integrator) rather than one function in a loop.
// Each model is built in when its macro is defined (pinocchio.sh defines
// those it is asked for): PEERS_ARM7, PEERS_CHAIN20, PEERS_CHAIN50,
// PEERS_HUMANOID. With PEERS_MUJOCO (pinocchio.sh's MUJOCO_PREFIX: a
// MuJoCo 3 built by hand, linked with mujoco_peer.cpp), forwardDynamics is
// also timed against MuJoCo's mj_forward and its minimal sequence of
// stages, after their udot is compared with Capstan's; the last line
// names the fastest peer.
#ifdef PEERS_ARM7
#include "Arm7.hpp"
#endif
#ifdef PEERS_CHAIN20
#include "Chain20.hpp"
#endif
#ifdef PEERS_CHAIN50
#include "Chain50.hpp"
#endif
#ifdef PEERS_HUMANOID
#include "Humanoid.hpp"
#endif
#include "peers.hpp"
#include "timing.hpp"

#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>
#ifdef PEERS_MUJOCO
#include <mujoco/mujoco.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace peers;

// One of kEvictFunctions distinct functions of integer arithmetic on
// registers (xor-shift, multiply and add with immediates: no data, nothing
// a compiler can fold across rounds), each about 400 bytes of machine code.
template <int K, int... Round>
[[gnu::noinline]] std::uint64_t evictStep(std::uint64_t x, std::integer_sequence<int, Round...>) {
  ((x ^= x >> 13, x *= 0x9E3779B97F4A7C15ULL + 2 * static_cast<std::uint64_t>(K),
    x += static_cast<std::uint64_t>(Round * 131 + K)),
   ...);
  return x;
}
constexpr int kEvictFunctions = 256;  // about 100 KiB: past a 32-64 KiB L1 instruction cache
template <int... K>
std::uint64_t evictAll(std::uint64_t x, std::integer_sequence<int, K...>) {
  ((x = evictStep<K>(x, std::make_integer_sequence<int, 32>{})), ...);
  return x;
}
// Runs all of them once: afterwards little of the code called before is
// left in the L1 instruction cache (it still is in L2).
void evictInstructionCache() {
  static volatile std::uint64_t sink = 1;
  sink = evictAll(sink, std::make_integer_sequence<int, kEvictFunctions>{});
}
using bench::clobber;
using bench::envNumber;
using bench::loadAverage;
using bench::Timed;
using bench::timeInterleaved;

constexpr double kTolerance = 1e-9;

// The peer's table as a Pinocchio model: joints in table order (parents
// first), a revolute about its axis or a free flyer, one body each.
pinocchio::Model pinocchioModel(const PeerModel& peer) {
  pinocchio::Model model;
  model.gravity.linear(Eigen::Vector3d(peer.gravity[0], peer.gravity[1], peer.gravity[2]));
  std::vector<pinocchio::JointIndex> ids;
  for (const PeerBody& b : peer.bodies) {
    const pinocchio::JointIndex parent = b.parent < 0 ? 0 : ids[static_cast<std::size_t>(b.parent)];
    const pinocchio::SE3 placement(Eigen::Matrix3d::Identity(), Eigen::Vector3d(b.r[0], b.r[1], b.r[2]));
    pinocchio::JointIndex id;
    if (b.type == PeerJoint::Revolute) {
      id = model.addJoint(parent, pinocchio::JointModelRevoluteUnaligned(Eigen::Vector3d(b.axis[0], b.axis[1], b.axis[2])),
                          placement, b.joint);
    } else {
      id = model.addJoint(parent, pinocchio::JointModelFreeFlyer(), placement, b.joint);
    }
    Eigen::Matrix3d I;
    I << b.inertia[0], b.inertia[3], b.inertia[4], b.inertia[3], b.inertia[1], b.inertia[5], b.inertia[4], b.inertia[5],
        b.inertia[2];
    model.appendBodyToJoint(id, pinocchio::Inertia(b.mass, Eigen::Vector3d(b.com[0], b.com[1], b.com[2]), I),
                            pinocchio::SE3::Identity());
    model.addJointFrame(id);  // the body frame (= the joint frame): computeFrameJacobian's target
    ids.push_back(id);
  }
  return model;
}

template <class Model>
int indexOf(const auto& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  throw std::runtime_error("no coordinate " + name);
}

// A random state in both layouts; hinge[v]: Pinocchio's dof v -> Capstan's
// u index of the same hinge, or -1 (a free flyer's dofs).
template <class Model>
struct State {
  typename Model::Q q;
  typename Model::U u, udot;
  Eigen::VectorXd pq, pv, pa, ptau;
  std::vector<int> hinge;
};

template <class Model>
State<Model> randomState(const PeerModel& peer, const pinocchio::Model& pm, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  State<Model> s;
  s.pq = Eigen::VectorXd::Zero(pm.nq);
  s.pv = Eigen::VectorXd::Zero(pm.nv);
  s.pa = Eigen::VectorXd::Zero(pm.nv);
  s.ptau = Eigen::VectorXd::Zero(pm.nv);
  s.hinge.assign(static_cast<std::size_t>(pm.nv), -1);
  s.q.setZero();
  s.u.setZero();
  s.udot.setZero();
  for (std::size_t b = 0; b < peer.bodies.size(); ++b) {
    const std::string joint = peer.bodies[b].joint;
    const auto& jm = pm.joints[b + 1];
    const int qa = jm.idx_q(), va = jm.idx_v();
    if (peer.bodies[b].type == PeerJoint::Revolute) {
      const int iq = indexOf<Model>(Model::qNames, joint + ".q[1]"), iu = indexOf<Model>(Model::uNames, joint + ".u[1]");
      s.q[iq] = s.pq[qa] = uniform(rng);
      s.u[iu] = s.pv[va] = uniform(rng);
      s.udot[iu] = s.pa[va] = uniform(rng);
      s.hinge[static_cast<std::size_t>(va)] = iu;
      continue;
    }
    Eigen::Quaterniond quat(uniform(rng), uniform(rng), uniform(rng), uniform(rng));
    quat.normalize();
    const Eigen::Matrix3d R = quat.toRotationMatrix();
    Eigen::Vector3d p, w, v, dw, dv;
    for (Eigen::Vector3d* x : {&p, &w, &v, &dw, &dv})
      for (int k = 0; k < 3; ++k) (*x)[k] = uniform(rng);
    const double c[4] = {quat.w(), quat.x(), quat.y(), quat.z()};
    for (int k = 0; k < 4; ++k) s.q[indexOf<Model>(Model::qNames, joint + ".q[" + std::to_string(k + 1) + "]")] = c[k];
    for (int k = 0; k < 3; ++k) {
      s.q[indexOf<Model>(Model::qNames, joint + ".q[" + std::to_string(k + 5) + "]")] = p[k];
      s.u[indexOf<Model>(Model::uNames, joint + ".u[" + std::to_string(k + 1) + "]")] = w[k];
      s.u[indexOf<Model>(Model::uNames, joint + ".u[" + std::to_string(k + 4) + "]")] = v[k];
    }
    // Pinocchio: q = (p, quaternion x, y, z, w), v = (v_Bo, w) in the body frame.
    s.pq.template segment<3>(qa) = p;
    s.pq.template segment<4>(qa + 3) << quat.x(), quat.y(), quat.z(), quat.w();
    s.pv.template segment<3>(va) = R.transpose() * v;
    s.pv.template segment<3>(va + 3) = R.transpose() * w;
    // Capstan's udot = 0 (d/dt of w and v_Bo in World) is, in Pinocchio's body-frame
    // velocity (v_B = R^T v, w_B = R^T w), d/dt v_B = -w_B x v_B and d/dt w_B = 0: the same
    // motion, so inverse dynamics is evaluated at the same acceleration. (Only the hinge
    // block is compared.)
    s.pa.template segment<3>(va) = -(R.transpose() * w).cross(R.transpose() * v);
  }
  return s;
}

// max |a - b| / max(1e-300, max |b|) over the hinge entries (upper triangle
// only where `upper`).
template <class A>
double compare(const A& ours, const Eigen::MatrixXd& theirs, const std::vector<int>& hinge, bool upper) {
  double worst = 0, scale = 0;
  for (int r = 0; r < theirs.rows(); ++r)
    for (int c = upper ? r : 0; c < theirs.cols(); ++c) {
      const int ir = hinge[static_cast<std::size_t>(r)], ic = hinge[static_cast<std::size_t>(c)];
      if (ir < 0 || ic < 0) continue;
      worst = std::max(worst, std::abs(ours(ir, ic) - theirs(r, c)));
      scale = std::max(scale, std::abs(theirs(r, c)));
    }
  return worst / std::max(scale, 1e-300);
}

template <class Model>
void run(const char* name, int rounds, double batch) {
  const PeerModel& peer = peerModel(name);
  const pinocchio::Model pm = pinocchioModel(peer);
  pinocchio::Data pd(pm);
  std::mt19937_64 rng(20261128);
  const State<Model> s = randomState<Model>(peer, pm, rng);
  Model model;
  typename Model::MassMatrix dq, du, dtau, tq, tu, M;
  model.forwardDynamicsDerivatives(0.0, s.q, s.u, dq, du, dtau);
  model.inverseDynamicsDerivatives(0.0, s.q, s.u, s.udot, tq, tu, M);
  pinocchio::computeABADerivatives(pm, pd, s.pq, s.pv, s.ptau);
  const double fd = std::max({compare(dq, pd.ddq_dq, s.hinge, false), compare(du, pd.ddq_dv, s.hinge, false),
                              compare(dtau, pd.Minv, s.hinge, true)});
  pinocchio::computeRNEADerivatives(pm, pd, s.pq, s.pv, s.pa);
  const double id = std::max({compare(tq, pd.dtau_dq, s.hinge, false), compare(tu, pd.dtau_dv, s.hinge, false),
                              compare(M, pd.M, s.hinge, true)});
  // Forward dynamics: the hinges' accelerations (Pinocchio's free-flyer ddq is
  // in its body frame). Frame Jacobian of the last body at its origin:
  // Capstan's rows are (w; v) in World, Pinocchio's LOCAL_WORLD_ALIGNED (v; w).
  typename Model::U udot;
  model.forwardDynamics(0.0, s.q, s.u, udot);
  pinocchio::aba(pm, pd, s.pq, s.pv, s.ptau);
  double fwd = 0, fwdScale = 0;
  for (int v = 0; v < pm.nv; ++v) {
    const int iu = s.hinge[static_cast<std::size_t>(v)];
    if (iu < 0) continue;
    fwd = std::max(fwd, std::abs(udot[iu] - pd.ddq[v]));
    fwdScale = std::max(fwdScale, std::abs(pd.ddq[v]));
  }
  fwd /= std::max(fwdScale, 1e-300);
  const std::string lastBody = peer.bodies.back().name;
  const int frame = Model::frameIndex(lastBody + ".body");
  const pinocchio::FrameIndex pframe = pm.getFrameId(peer.bodies.back().joint);
  if (frame < 0 || pframe >= pm.frames.size()) throw std::runtime_error(std::string(name) + ": no frame " + lastBody);
  typename Model::FrameJacobian J;
  model.frameJacobian(frame, s.q, J);
  Eigen::MatrixXd pJ = Eigen::MatrixXd::Zero(6, pm.nv);
  pinocchio::computeFrameJacobian(pm, pd, s.pq, pframe, pinocchio::LOCAL_WORLD_ALIGNED, pJ);
  Eigen::MatrixXd swapped(6, pm.nv);
  swapped << pJ.bottomRows(3), pJ.topRows(3);
  Eigen::MatrixXd ourJ = Eigen::MatrixXd::Zero(6, pm.nv);
  for (int v = 0; v < pm.nv; ++v) {
    const int iu = s.hinge[static_cast<std::size_t>(v)];
    if (iu >= 0) ourJ.col(v) = J.col(iu);
    else swapped.col(v).setZero();  // a free flyer's columns are in another velocity basis
  }
  const double jac = (ourJ - swapped).cwiseAbs().maxCoeff() / std::max(swapped.cwiseAbs().maxCoeff(), 1e-300);
  const bool agree = fd <= kTolerance && id <= kTolerance && fwd <= kTolerance && jac <= kTolerance;
  std::printf("\n%s (nv = %d): max relative difference to Pinocchio, forward derivatives %.1e, inverse derivatives "
              "%.1e, forward dynamics %.1e, frame Jacobian (%s) %.1e%s\n",
              name, static_cast<int>(pm.nv), fd, id, fwd, lastBody.c_str(), jac, agree ? "" : " DISAGREE");
  if (!agree) return;
#ifdef PEERS_MUJOCO
  // MuJoCo (MUJOCO_PREFIX): the same model as MJCF (mujoco_peer.cpp), set to
  // the same state in the canonical layout of peers.hpp; its udot against
  // Capstan's, every entry (the free joint's too: the engine converts).
  std::vector<double> cq(static_cast<std::size_t>(peer.nq())), cu(static_cast<std::size_t>(peer.nu()));
  std::vector<int> canonicalU(static_cast<std::size_t>(peer.nu()));
  for (std::size_t b = 0; b < peer.bodies.size(); ++b) {
    const std::string joint = peer.bodies[b].joint;
    const bool free = peer.bodies[b].type == PeerJoint::Free;
    for (int k = 0; k < (free ? 7 : 1); ++k)
      cq[static_cast<std::size_t>(peer.qOffset(static_cast<int>(b)) + k)] =
          s.q[indexOf<Model>(Model::qNames, joint + ".q[" + std::to_string(k + 1) + "]")];
    for (int k = 0; k < (free ? 6 : 1); ++k) {
      const auto c = static_cast<std::size_t>(peer.uOffset(static_cast<int>(b)) + k);
      canonicalU[c] = indexOf<Model>(Model::uNames, joint + ".u[" + std::to_string(k + 1) + "]");
      cu[c] = s.u[canonicalU[c]];
    }
  }
  const std::unique_ptr<peers::Engine> mjForward = peers::makeMujoco(peer, false), mjMinimal = peers::makeMujoco(peer, true);
  double mj = 0, mjScale = 0;
  for (peers::Engine* e : {mjForward.get(), mjMinimal.get()}) {
    e->setState(cq, cu);
    const std::vector<double> theirs = e->udot();
    for (std::size_t c = 0; c < theirs.size(); ++c) {
      mj = std::max(mj, std::abs(udot[canonicalU[c]] - theirs[c]));
      mjScale = std::max(mjScale, std::abs(theirs[c]));
    }
  }
  mj /= std::max(mjScale, 1e-300);
  // MuJoCo turns `fullinertia` into principal axes at load, which costs it
  // digits (docs/performance.md: up to 4.5e-10 relative on arm7).
  const bool mjAgree = mj <= 1e-8;
  std::printf("%s: max relative difference of MuJoCo %s's forward dynamics to Capstan's %.1e%s\n", name,
              mj_versionString(), mj, mjAgree ? "" : " DISAGREE (its rows are not timed)");
#endif
  std::printf("\n");
  const typename Model::Q* volatile qSource = &s.q;
  const typename Model::U* volatile uSource = &s.u;
  const typename Model::U* volatile aSource = &s.udot;
  const Eigen::VectorXd* volatile pqSource = &s.pq;
  const Eigen::VectorXd* volatile pvSource = &s.pv;
  const Eigen::VectorXd* volatile paSource = &s.pa;
  typename Model::Q q;
  typename Model::U u, a;
  Eigen::VectorXd pq, pv, pa;
  const Eigen::VectorXd* volatile ptauSource = &s.ptau;
  Eigen::VectorXd ptau;
  auto aba = [&](pinocchio::Convention convention) {
    return [&, convention] {
      pq = *pqSource;
      pv = *pvSource;
      ptau = *ptauSource;
      pinocchio::aba(pm, pd, pq, pv, ptau, convention);
      clobber(pd.ddq);
    };
  };
  // The products both forward derivatives end with, d udot / dq = -M^-1
  // d tau / dq and d udot / du = -M^-1 d tau / du (2 nu^3 multiply-adds),
  // alone: Capstan's in its fixed-size matrices, Pinocchio's as
  // computeABADerivatives writes them (dynamic size). No faster method
  // forms these dense results, so they bound what either can reach.
  // Each call reloads one entry of M^-1 (from a volatile source), so that
  // the products are not hoisted out of the timing loop; both the same way.
  const typename Model::MassMatrix* volatile minvSource = &dtau;
  Eigen::MatrixXd pMinv = dtau, pdq = tq, pdu = tu, pOutQ(pm.nv, pm.nv), pOutU(pm.nv, pm.nv);
  typename Model::MassMatrix minv = dtau;
  auto productsAlone = [&](auto& Minv, const auto& dtau_dq, const auto& dtau_du, auto& outQ, auto& outU) {
    return [&minvSource, Z = &Minv, A = &dtau_dq, B = &dtau_du, P = &outQ, Q = &outU] {
      (*Z)(0, 0) = (*minvSource)(0, 0);
      P->noalias() = -*Z * *A;
      Q->noalias() = -*Z * *B;
      clobber(*P);
      clobber(*Q);
    };
  };
  // Each Pinocchio row is compared with the Capstan row at reference[k].
  std::vector<std::size_t> reference = {0, 0, 2, 2, 4, 4, 4, 7, 7, 9, 10};
  std::vector<Timed> timed = {
      {"Capstan forwardDynamicsDerivatives", [&] {
         q = *qSource;
         u = *uSource;
         model.forwardDynamicsDerivatives(0.0, q, u, dq, du, dtau);
         clobber(dq);
         clobber(du);
         clobber(dtau);
       }},
      {"Pinocchio computeABADerivatives", [&] {
         pq = *pqSource;
         pv = *pvSource;
         pinocchio::computeABADerivatives(pm, pd, pq, pv, s.ptau);
         clobber(pd.ddq_dq);
       }},
      {"Capstan inverseDynamicsDerivatives", [&] {
         q = *qSource;
         u = *uSource;
         a = *aSource;
         model.inverseDynamicsDerivatives(0.0, q, u, a, tq, tu, M);
         clobber(tq);
         clobber(tu);
         clobber(M);
       }},
      {"Pinocchio computeRNEADerivatives", [&] {
         pq = *pqSource;
         pv = *pvSource;
         pa = *paSource;
         pinocchio::computeRNEADerivatives(pm, pd, pq, pv, pa);
         clobber(pd.dtau_dq);
       }},
      {"Capstan forwardDynamics", [&] {
         q = *qSource;
         u = *uSource;
         model.forwardDynamics(0.0, q, u, a);
         clobber(a);
       }},
      {"Pinocchio aba (LOCAL)", aba(pinocchio::Convention::LOCAL)},
      {"Pinocchio aba (WORLD)", aba(pinocchio::Convention::WORLD)},
      {"Capstan frameJacobian (" + lastBody + ")", [&] {
         q = *qSource;
         model.frameJacobian(frame, q, J);
         clobber(J);
       }},
      {"Pinocchio computeFrameJacobian (LOCAL_WORLD_ALIGNED)", [&] {
         pq = *pqSource;
         pinocchio::computeFrameJacobian(pm, pd, pq, pframe, pinocchio::LOCAL_WORLD_ALIGNED, pJ);
         clobber(pJ);
       }},
      {"the two products -M^-1 d tau alone, fixed size (Capstan's)", productsAlone(minv, tq, tu, dq, du)},
      {"the two products -M^-1 d tau alone, dynamic size (Pinocchio's)", productsAlone(pMinv, pdq, pdu, pOutQ, pOutU)},
  };
#ifdef PEERS_MUJOCO
  if (mjAgree) {  // compared with Capstan's forwardDynamics (row 4)
    timed.emplace_back(std::string("MuJoCo ") + mj_versionString() + " mj_forward", [&] {
      double sum = mjForward->run(1);
      clobber(sum);
    });
    timed.emplace_back(std::string("MuJoCo ") + mj_versionString() + " minimal (kinematics ... solveM)", [&] {
      double sum = mjMinimal->run(1);
      clobber(sum);
    });
    reference.push_back(4);
    reference.push_back(4);
  }
#endif
  timeInterleaved(timed, rounds, batch);
  std::printf("| engine | us per call | peer / Capstan (the Capstan row above) |\n|---|---|---|\n");
  for (std::size_t k = 0; k < timed.size(); ++k) {
    const double capstan = timed[reference[k]].median();
    std::printf("| %s | %.2f | %s |\n", timed[k].name.c_str(), timed[k].median(),
                reference[k] == k ? "" : (std::to_string(timed[k].median() / capstan).substr(0, 4) + "x").c_str());
  }
  // The forward-dynamics target is against the fastest peer: of
  // the libraries' forward-dynamics calls (aba, mj_forward), and of every
  // row, MuJoCo's minimal sequence of stages included.
  std::size_t call = 5, any = 5;
  for (std::size_t k = 6; k < timed.size(); ++k) {
    if (reference[k] != 4) continue;
    if (timed[k].median() < timed[any].median()) any = k;
    if (timed[k].name.find("minimal") == std::string::npos && timed[k].median() < timed[call].median()) call = k;
  }
  std::printf("\nforwardDynamics against the fastest peer call, %s: %.2fx; against the fastest row, %s: %.2fx\n",
              timed[call].name.c_str(), timed[call].median() / timed[4].median(), timed[any].name.c_str(),
              timed[any].median() / timed[4].median());
  if (envNumber("PEERS_COLD", 0) != 0) {
    // The first seven rows again, each call after evictInstructionCache();
    // its own time (the first row) is taken off.
    std::vector<Timed> cold = {{"instruction-cache eviction alone", evictInstructionCache}};
    for (std::size_t k = 0; k < 7; ++k) {
      cold.emplace_back(timed[k].name, [call = timed[k].call] {
        evictInstructionCache();
        call();
      });
    }
    timeInterleaved(cold, rounds, batch);
    const double evict = cold[0].median();
    std::printf("\ncold (each call after %.2f us of other code, %d functions, that evicts the L1 instruction cache; "
                "that time taken off):\n| engine | us per call, cold | against hot | Pinocchio / Capstan |\n|---|---|---|---|\n",
                evict, kEvictFunctions);
    for (std::size_t k = 1; k < cold.size(); ++k) {
      const double us = cold[k].median() - evict, capstan = cold[reference[k - 1] + 1].median() - evict;
      std::printf("| %s | %.2f | %.2fx | %s |\n", cold[k].name.c_str(), us, us / timed[k - 1].median(),
                  reference[k - 1] == k - 1 ? "" : (std::to_string(us / capstan).substr(0, 4) + "x").c_str());
    }
  }
  // What a forward-derivatives target of 3x computeABADerivatives leaves
  // beside the products, against what Pinocchio spends beside its own.
  const double pinocchioFdd = timed[1].median(), products = timed[9].median(), theirRest = pinocchioFdd - timed[10].median();
  const double left = pinocchioFdd / 3 - products;
  std::printf("\n3x computeABADerivatives is %.2f us: %.2f us beside Capstan's products, against Pinocchio's "
              "%.2f us beside its own (%s)\n",
              pinocchioFdd / 3, left, theirRest,
              left > 0 ? ("that rest " + std::to_string(theirRest / left).substr(0, 4) + "x faster").c_str()
                       : "not reachable: the products alone take longer");
}

}  // namespace

int main() {
  const int rounds = static_cast<int>(envNumber("PEERS_ROUNDS", 31));
  const double batch = envNumber("PEERS_BATCH_US", 2000);
  std::printf("pinocchio_derivatives_bench: Pinocchio %s, %d rounds, batches of >= %.0f us thread CPU time; load "
              "average at start %.2f\n",
              PINOCCHIO_VERSION, rounds, batch, loadAverage());
#ifdef PEERS_ARM7
  run<capstan_models::Arm7>("arm7", rounds, batch);
#endif
#ifdef PEERS_CHAIN20
  run<capstan_models::Chain20>("chain20", rounds, batch);
#endif
#ifdef PEERS_CHAIN50
  run<capstan_models::Chain50>("chain50", rounds, batch);
#endif
#ifdef PEERS_HUMANOID
  run<capstan_models::Humanoid>("humanoid", rounds, batch);
#endif
  std::printf("\nload average at end %.2f\n", loadAverage());
  return 0;
}
