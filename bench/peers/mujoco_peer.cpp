// The MuJoCo engine: the same mechanism as MJCF (built as a string, loaded
// through MuJoCo's virtual file system), one <body> per body with a hinge or
// free joint and an explicit <inertial>; no geoms, so nothing to collide.
//
// What run() times, per call: copying qpos and qvel into mjData, then either
//  * mj_forward(m, d) with <flag contact="disable" constraint="disable"/>
//    (the whole pipeline: also tendons, transmission, passive forces,
//    actuation, sensors, all empty here), or
//  * "minimal": mj_kinematics, mj_comPos, mj_crb, mj_factorM, mj_comVel,
//    mj_rne (bias, no acceleration term), mj_solveM on -bias: the least
//    MuJoCo must do to get qacc.
// udot is d->qacc (or the mj_solveM result).
#include "peers.hpp"

#include <mujoco/mujoco.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace peers {
namespace {

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

std::string triple(const double v[3]) { return num(v[0]) + " " + num(v[1]) + " " + num(v[2]); }

void writeBody(std::ostringstream& xml, const PeerModel& peer, int b, int depth) {
  const PeerBody& body = peer.bodies[static_cast<std::size_t>(b)];
  const std::string indent(static_cast<std::size_t>(2 * depth), ' ');
  xml << indent << "<body name=\"" << body.name << "\" pos=\"" << triple(body.r) << "\">\n";
  if (body.type == PeerJoint::Revolute) {
    xml << indent << "  <joint name=\"" << body.joint << "\" type=\"hinge\" axis=\"" << triple(body.axis) << "\"/>\n";
  } else {
    xml << indent << "  <joint name=\"" << body.joint << "\" type=\"free\"/>\n";
  }
  const double* I = body.inertia;
  xml << indent << "  <inertial pos=\"" << triple(body.com) << "\" mass=\"" << num(body.mass) << "\" fullinertia=\""
      << num(I[0]) << " " << num(I[1]) << " " << num(I[2]) << " " << num(I[3]) << " " << num(I[4]) << " " << num(I[5])
      << "\"/>\n";
  for (std::size_t c = 0; c < peer.bodies.size(); ++c) {
    if (peer.bodies[c].parent == b) writeBody(xml, peer, static_cast<int>(c), depth + 1);
  }
  xml << indent << "</body>\n";
}

}  // namespace

std::string mujocoXml(const PeerModel& peer) {
  std::ostringstream xml;
  xml << "<mujoco model=\"" << peer.name << "\">\n"
      << "  <option gravity=\"" << triple(peer.gravity) << "\">\n"
      << "    <flag contact=\"disable\" constraint=\"disable\"/>\n"
      << "  </option>\n  <worldbody>\n";
  for (std::size_t b = 0; b < peer.bodies.size(); ++b) {
    if (peer.bodies[b].parent < 0) writeBody(xml, peer, static_cast<int>(b), 2);
  }
  xml << "  </worldbody>\n</mujoco>\n";
  return xml.str();
}

namespace {

class MujocoEngine final : public Engine {
 public:
  MujocoEngine(const PeerModel& peer, bool minimal) : peer_(peer), minimal_(minimal) {
    const std::string xml = mujocoXml(peer);
    auto vfs = std::make_unique<mjVFS>();
    mj_defaultVFS(vfs.get());
#if mjVERSION_HEADER >= 300
    // MuJoCo 3 (built by hand outside the repository, bench/peers/pinocchio.sh's MUJOCO_PREFIX).
    if (mj_addBufferVFS(vfs.get(), "model.xml", xml.data(), static_cast<int>(xml.size())) != 0) {
      throw std::runtime_error("VFS");
    }
#else
    // MuJoCo 2.2 (Debian's libmujoco-dev).
    if (mj_makeEmptyFileVFS(vfs.get(), "model.xml", static_cast<int>(xml.size())) != 0) throw std::runtime_error("VFS");
    const int f = mj_findFileVFS(vfs.get(), "model.xml");
    std::memcpy(vfs->filedata[f], xml.data(), xml.size());
#endif
    char error[1000] = "";
    m_ = mj_loadXML("model.xml", vfs.get(), error, sizeof error);
    mj_deleteVFS(vfs.get());
    if (!m_) throw std::runtime_error(std::string("MuJoCo: ") + error + "\n" + xml);
    d_ = mj_makeData(m_);
    if (m_->nv != peer.nu() || m_->nq != peer.nq()) throw std::runtime_error("MuJoCo: nq/nv differ from the table");
    qpos_.assign(static_cast<std::size_t>(m_->nq), 0.0);
    qvel_.assign(static_cast<std::size_t>(m_->nv), 0.0);
    rhs_.assign(static_cast<std::size_t>(m_->nv), 0.0);
  }
  ~MujocoEngine() override {
    mj_deleteData(d_);
    mj_deleteModel(m_);
  }

  // Free joints: MuJoCo's qpos is (p, quaternion), qvel is (v of the body
  // origin in World, w in the body frame); canonical is (quaternion, p) and
  // (w in World, v in World).
  void setState(const std::vector<double>& q, const std::vector<double>& u) override {
    for (std::size_t b = 0; b < peer_.bodies.size(); ++b) {
      const int j = jointId(b);
      const int qa = m_->jnt_qposadr[j], va = m_->jnt_dofadr[j];
      const auto cq = static_cast<std::size_t>(peer_.qOffset(static_cast<int>(b)));
      const auto cu = static_cast<std::size_t>(peer_.uOffset(static_cast<int>(b)));
      if (peer_.bodies[b].type == PeerJoint::Revolute) {
        qpos_[static_cast<std::size_t>(qa)] = q[cq];
        qvel_[static_cast<std::size_t>(va)] = u[cu];
      } else {
        mjtNum R[9];
        mju_quat2Mat(R, &q[cq]);
        for (int k = 0; k < 3; ++k) qpos_[static_cast<std::size_t>(qa + k)] = q[cq + 4 + static_cast<std::size_t>(k)];
        for (int k = 0; k < 4; ++k) qpos_[static_cast<std::size_t>(qa + 3 + k)] = q[cq + static_cast<std::size_t>(k)];
        for (int k = 0; k < 3; ++k) qvel_[static_cast<std::size_t>(va + k)] = u[cu + 3 + static_cast<std::size_t>(k)];
        mju_mulMatTVec(&qvel_[static_cast<std::size_t>(va + 3)], R, &u[cu], 3, 3);  // w_B = R^T w_W
      }
    }
    qSource_ = qpos_.data();
    vSource_ = qvel_.data();
  }

  std::vector<double> udot() override {
    evaluate();
    const mjtNum* qacc = minimal_ ? rhs_.data() : d_->qacc;
    std::vector<double> out(static_cast<std::size_t>(peer_.nu()));
    for (std::size_t b = 0; b < peer_.bodies.size(); ++b) {
      const int va = m_->jnt_dofadr[jointId(b)];
      const auto cu = static_cast<std::size_t>(peer_.uOffset(static_cast<int>(b)));
      if (peer_.bodies[b].type == PeerJoint::Revolute) {
        out[cu] = qacc[va];
      } else {
        for (int k = 0; k < 3; ++k) out[cu + 3 + static_cast<std::size_t>(k)] = qacc[va + k];
        // dw_W/dt = R dw_B/dt (w x w = 0), R from the quaternion in qpos.
        mjtNum R[9];
        mju_quat2Mat(R, d_->qpos + m_->jnt_qposadr[jointId(b)] + 3);
        mju_mulMatVec(&out[cu], R, qacc + va + 3, 3, 3);
      }
    }
    return out;
  }

  double run(long calls) override {
    double sum = 0.0;
    for (long k = 0; k < calls; ++k) {
      evaluate();
      sum += minimal_ ? rhs_[static_cast<std::size_t>(m_->nv - 1)] : d_->qacc[m_->nv - 1];
    }
    return sum;
  }

 private:
  int jointId(std::size_t b) const { return mj_name2id(m_, mjOBJ_JOINT, peer_.bodies[b].joint); }

  void evaluate() {
    mju_copy(d_->qpos, qSource_, m_->nq);
    mju_copy(d_->qvel, vSource_, m_->nv);
    if (!minimal_) {
      mj_forward(m_, d_);
      return;
    }
    mj_kinematics(m_, d_);
    mj_comPos(m_, d_);
    mj_crb(m_, d_);
    mj_factorM(m_, d_);
    mj_comVel(m_, d_);
    mj_rne(m_, d_, 0, d_->qfrc_bias);
    for (int i = 0; i < m_->nv; ++i) rhs_[static_cast<std::size_t>(i)] = -d_->qfrc_bias[i];
    mj_solveM(m_, d_, rhs_.data(), rhs_.data(), 1);
  }

  const PeerModel& peer_;
  bool minimal_;
  mjModel* m_ = nullptr;
  mjData* d_ = nullptr;
  std::vector<mjtNum> qpos_, qvel_, rhs_;
  const mjtNum* volatile qSource_ = nullptr;
  const mjtNum* volatile vSource_ = nullptr;
};

}  // namespace

std::unique_ptr<Engine> makeMujoco(const PeerModel& model, bool minimal) {
  return std::make_unique<MujocoEngine>(model, minimal);
}

}  // namespace peers
