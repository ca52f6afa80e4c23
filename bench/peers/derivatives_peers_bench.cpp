// Frame Jacobians and dynamics derivatives, side by side in one run
// (docs/performance.md, "Jacobians and derivatives vs MuJoCo"): Capstan's
// generated code (`capstan compile --derivatives`) against MuJoCo 2.2.2 on
// the peer models arm7 and humanoid (the same tables as peers_bench).
//
//   frame Jacobian of arm7's end effector (body link7, at its origin):
//     Capstan  frameJacobian(f, q, J): J_WF (6 x nu) from q
//     MuJoCo   mj_kinematics + mj_comPos + mj_jac (what a controller with a
//              new q runs), and mj_jac alone (kinematics already done)
//   d udot / dq, d udot / du (and M^-1) of arm7 and the humanoid:
//     Capstan  forwardDynamicsDerivatives (exact)
//     MuJoCo   mjd_transitionFD(m, d, 1e-6, centered, A, 0, 0, 0): finite
//              differences of mj_step (Euler, 2 nv + 1 steps forward,
//              4 nv + 1 centered), A = d x_next / d x (2 nv square)
//
// Before timing, the results are compared: the Jacobians to 1e-12; the
// derivatives through A's velocity rows, which for Euler are
// h d udot/dq (tangent) and I + h d udot/du: on hinge joints (rows and
// columns; a Free joint's MuJoCo velocity is in the body frame) to
// DERIVATIVE_TOLERANCE (finite differences). Per call: the median over
// rounds of thread CPU time, engines interleaved. Env: PEERS_ROUNDS (31),
// PEERS_BATCH_US (2000).
#include "Arm7.hpp"
#include "Humanoid.hpp"
#include "peers.hpp"
#include "timing.hpp"

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace peers;
using bench::clobber;
using bench::envNumber;
using bench::loadAverage;
using bench::Timed;
using bench::timeInterleaved;

constexpr double kJacobianTolerance = 1e-12;
// Forward differences with eps = 1e-6 of mj_step: relative error ~1e-5 on
// these models; a wrong derivative would be off by order one.
constexpr double kDerivativeTolerance = 1e-3;

volatile double sink = 0.0;

// MuJoCo's model of a peer, through its virtual file system.
struct Mujoco {
  mjModel* m = nullptr;
  mjData* d = nullptr;
  explicit Mujoco(const PeerModel& peer) {
    const std::string xml = mujocoXml(peer);
    auto vfs = std::make_unique<mjVFS>();
    mj_defaultVFS(vfs.get());
    if (mj_makeEmptyFileVFS(vfs.get(), "model.xml", static_cast<int>(xml.size())) != 0) throw std::runtime_error("VFS");
    std::memcpy(vfs->filedata[mj_findFileVFS(vfs.get(), "model.xml")], xml.data(), xml.size());
    char error[1000] = "";
    m = mj_loadXML("model.xml", vfs.get(), error, sizeof error);
    mj_deleteVFS(vfs.get());
    if (!m) throw std::runtime_error(std::string("MuJoCo: ") + error);
    d = mj_makeData(m);
  }
  ~Mujoco() {
    mj_deleteData(d);
    mj_deleteModel(m);
  }
  Mujoco(const Mujoco&) = delete;
  Mujoco& operator=(const Mujoco&) = delete;
};

// A random canonical state (as peers_bench), into MuJoCo's qpos/qvel and
// Capstan's q/u; hinge[i]: MuJoCo dof index -> Capstan u index of the same
// hinge, or -1 (a Free joint's dofs).
template <class Model>
struct States {
  typename Model::Q q;
  typename Model::U u;
  std::vector<mjtNum> qpos, qvel;
  std::vector<int> hinge;
};

template <class Model>
int capstanIndex(const auto& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  throw std::runtime_error("no coordinate " + name);
}

template <class Model>
States<Model> randomState(const PeerModel& peer, const Mujoco& mj, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  States<Model> s;
  s.qpos.assign(static_cast<std::size_t>(mj.m->nq), 0.0);
  s.qvel.assign(static_cast<std::size_t>(mj.m->nv), 0.0);
  s.hinge.assign(static_cast<std::size_t>(mj.m->nv), -1);
  for (const PeerBody& b : peer.bodies) {
    const int j = mj_name2id(mj.m, mjOBJ_JOINT, b.joint);
    const int qa = mj.m->jnt_qposadr[j], va = mj.m->jnt_dofadr[j];
    const std::string joint = b.joint;
    if (b.type == PeerJoint::Revolute) {
      const double angle = uniform(rng), rate = uniform(rng);
      s.qpos[static_cast<std::size_t>(qa)] = angle;
      s.qvel[static_cast<std::size_t>(va)] = rate;
      const int iq = capstanIndex<Model>(Model::qNames, joint + ".q[1]");
      const int iu = capstanIndex<Model>(Model::uNames, joint + ".u[1]");
      s.q[iq] = angle;
      s.u[iu] = rate;
      s.hinge[static_cast<std::size_t>(va)] = iu;
      continue;
    }
    double quat[4], norm = 0;
    for (double& c : quat) {
      c = uniform(rng);
      norm += c * c;
    }
    for (double& c : quat) c /= std::sqrt(norm);
    double p[3], w[3], v[3];
    for (double& c : p) c = uniform(rng);
    for (double& c : w) c = uniform(rng);
    for (double& c : v) c = uniform(rng);
    mjtNum R[9];
    mju_quat2Mat(R, quat);
    for (int k = 0; k < 3; ++k) s.qpos[static_cast<std::size_t>(qa + k)] = p[k];
    for (int k = 0; k < 4; ++k) s.qpos[static_cast<std::size_t>(qa + 3 + k)] = quat[k];
    for (int k = 0; k < 3; ++k) s.qvel[static_cast<std::size_t>(va + k)] = v[k];
    mju_mulMatTVec(&s.qvel[static_cast<std::size_t>(va + 3)], R, w, 3, 3);  // w_B = R^T w_W
    for (int k = 0; k < 4; ++k) s.q[capstanIndex<Model>(Model::qNames, joint + ".q[" + std::to_string(k + 1) + "]")] = quat[k];
    for (int k = 0; k < 3; ++k) {
      s.q[capstanIndex<Model>(Model::qNames, joint + ".q[" + std::to_string(k + 5) + "]")] = p[k];
      s.u[capstanIndex<Model>(Model::uNames, joint + ".u[" + std::to_string(k + 1) + "]")] = w[k];
      s.u[capstanIndex<Model>(Model::uNames, joint + ".u[" + std::to_string(k + 4) + "]")] = v[k];
    }
  }
  return s;
}

void frameJacobian(int rounds, double batch) {
  using Model = capstan_models::Arm7;
  const PeerModel& peer = peerModel("arm7");
  Mujoco mj(peer);
  std::mt19937_64 rng(20240611);
  const States<Model> s = randomState<Model>(peer, mj, rng);
  Model model;
  const int frame = Model::frameIndex("link7.body");
  const int body = mj_name2id(mj.m, mjOBJ_BODY, "link7");
  if (frame < 0 || body < 0) throw std::runtime_error("arm7: no link7");
  // Agreement: MuJoCo's jacr/jacp (3 x nv each, row-major) at the body origin.
  Model::FrameJacobian J;
  model.frameJacobian(frame, s.q, J);
  mju_copy(mj.d->qpos, s.qpos.data(), mj.m->nq);
  mj_kinematics(mj.m, mj.d);
  mj_comPos(mj.m, mj.d);
  std::vector<mjtNum> jacp(static_cast<std::size_t>(3 * mj.m->nv)), jacr(jacp.size());
  mj_jac(mj.m, mj.d, jacp.data(), jacr.data(), mj.d->xpos + 3 * body, body);
  double worst = 0;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < mj.m->nv; ++c) {
      const int iu = s.hinge[static_cast<std::size_t>(c)];
      worst = std::max({worst, std::abs(J(r, iu) - jacr[static_cast<std::size_t>(r * mj.m->nv + c)]),
                        std::abs(J(3 + r, iu) - jacp[static_cast<std::size_t>(r * mj.m->nv + c)])});
    }
  std::printf("\nFrame Jacobian of arm7's end effector (body link7 at its origin), 6 x 7; max |Capstan - MuJoCo| "
              "= %.1e%s\n\n",
              worst, worst <= kJacobianTolerance ? "" : " DISAGREE");
  if (worst > kJacobianTolerance) return;
  const Model::Q* volatile qSource = &s.q;
  const mjtNum* volatile qposSource = s.qpos.data();
  Model::Q q;
  std::vector<Timed> timed = {
      {"Capstan frameJacobian", [&] {
         q = *qSource;
         model.frameJacobian(frame, q, J);
         clobber(J);
       }},
      {"MuJoCo mj_kinematics + mj_comPos + mj_jac", [&] {
         mju_copy(mj.d->qpos, qposSource, mj.m->nq);
         mj_kinematics(mj.m, mj.d);
         mj_comPos(mj.m, mj.d);
         mj_jac(mj.m, mj.d, jacp.data(), jacr.data(), mj.d->xpos + 3 * body, body);
         sink = sink + jacp[0];
       }},
      {"MuJoCo mj_jac alone (kinematics done)", [&] {
         mj_jac(mj.m, mj.d, jacp.data(), jacr.data(), mj.d->xpos + 3 * body, body);
         sink = sink + jacp[0];
       }},
  };
  timeInterleaved(timed, rounds, batch);
  std::printf("| engine | us per call | / Capstan |\n|---|---|---|\n");
  const double capstan = timed[0].median();
  for (Timed& t : timed) std::printf("| %s | %.3f | %.1f |\n", t.name.c_str(), t.median(), t.median() / capstan);
}

template <class Model>
void derivatives(const char* name, int rounds, double batch) {
  const PeerModel& peer = peerModel(name);
  Mujoco mj(peer);
  std::mt19937_64 rng(20240612);
  const States<Model> s = randomState<Model>(peer, mj, rng);
  Model model;
  typename Model::MassMatrix dq, du, dtau;
  model.forwardDynamicsDerivatives(0.0, s.q, s.u, dq, du, dtau);
  const int nv = mj.m->nv;
  const double h = mj.m->opt.timestep;
  std::vector<mjtNum> A(static_cast<std::size_t>(4 * nv * nv));
  auto load = [&] {
    mju_copy(mj.d->qpos, s.qpos.data(), mj.m->nq);
    mju_copy(mj.d->qvel, s.qvel.data(), nv);
  };
  load();
  mjd_transitionFD(mj.m, mj.d, 1e-6, 0, A.data(), nullptr, nullptr, nullptr);
  // A (2 nv x 2 nv, row-major): x = (dq tangent, qvel); rows nv.. are qvel_next.
  double worst = 0, scale = 0;
  for (int r = 0; r < nv; ++r) {
    const int ir = s.hinge[static_cast<std::size_t>(r)];
    if (ir < 0) continue;
    for (int c = 0; c < nv; ++c) {
      const int ic = s.hinge[static_cast<std::size_t>(c)];
      if (ic < 0) continue;
      const double aq = A[static_cast<std::size_t>((nv + r) * 2 * nv + c)] / h;
      const double av = (A[static_cast<std::size_t>((nv + r) * 2 * nv + nv + c)] - (r == c ? 1.0 : 0.0)) / h;
      worst = std::max({worst, std::abs(aq - dq(ir, ic)), std::abs(av - du(ir, ic))});
      scale = std::max({scale, std::abs(dq(ir, ic)), std::abs(du(ir, ic))});
    }
  }
  const double relative = worst / std::max(scale, 1e-300);
  std::printf("\nd udot / dq, d udot / du of %s (nv = %d): hinge block vs MuJoCo's (A - I) / h, max relative "
              "difference %.1e%s\n\n",
              name, nv, relative, relative <= kDerivativeTolerance ? "" : " DISAGREE");
  if (relative > kDerivativeTolerance) return;
  const typename Model::Q* volatile qSource = &s.q;
  const typename Model::U* volatile uSource = &s.u;
  typename Model::Q q;
  typename Model::U u;
  std::vector<Timed> timed = {
      {"Capstan forwardDynamicsDerivatives (exact; also M^-1)", [&] {
         q = *qSource;
         u = *uSource;
         model.forwardDynamicsDerivatives(0.0, q, u, dq, du, dtau);
         clobber(dq);
         clobber(du);
         clobber(dtau);
       }},
      {"MuJoCo mjd_transitionFD, forward differences", [&] {
         load();
         mjd_transitionFD(mj.m, mj.d, 1e-6, 0, A.data(), nullptr, nullptr, nullptr);
         sink = sink + A[0];
       }},
      {"MuJoCo mjd_transitionFD, centered differences", [&] {
         load();
         mjd_transitionFD(mj.m, mj.d, 1e-6, 1, A.data(), nullptr, nullptr, nullptr);
         sink = sink + A[0];
       }},
  };
  timeInterleaved(timed, rounds, batch);
  std::printf("| engine | us per call | / Capstan |\n|---|---|---|\n");
  const double capstan = timed[0].median();
  for (Timed& t : timed) std::printf("| %s | %.2f | %.1f |\n", t.name.c_str(), t.median(), t.median() / capstan);
}

}  // namespace

int main() {
  const int rounds = static_cast<int>(envNumber("PEERS_ROUNDS", 31));
  const double batch = envNumber("PEERS_BATCH_US", 2000);
  std::printf("derivatives_peers_bench: MuJoCo %s, %d rounds, batches of >= %.0f us thread CPU time; load average "
              "at start %.2f\n",
              mj_versionString(), rounds, batch, loadAverage());
  frameJacobian(rounds, batch);
  derivatives<capstan_models::Arm7>("arm7", rounds, batch);
  derivatives<capstan_models::Humanoid>("humanoid", rounds, batch);
  std::printf("\nload average at end %.2f\n", loadAverage());
  return 0;
}
