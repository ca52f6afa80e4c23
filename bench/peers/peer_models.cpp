// The peer models as tables (peer_models.inc, from make_models.py), shared
// by peers_bench, derivatives_peers_bench and pinocchio_derivatives_bench.
#include "peers.hpp"

#include <stdexcept>

namespace peers {

int PeerModel::nq() const {
  int n = 0;
  for (const PeerBody& b : bodies) n += b.type == PeerJoint::Free ? 7 : 1;
  return n;
}
int PeerModel::nu() const {
  int n = 0;
  for (const PeerBody& b : bodies) n += b.type == PeerJoint::Free ? 6 : 1;
  return n;
}
int PeerModel::qOffset(int body) const {
  int n = 0;
  for (int b = 0; b < body; ++b) n += bodies[static_cast<std::size_t>(b)].type == PeerJoint::Free ? 7 : 1;
  return n;
}
int PeerModel::uOffset(int body) const {
  int n = 0;
  for (int b = 0; b < body; ++b) n += bodies[static_cast<std::size_t>(b)].type == PeerJoint::Free ? 6 : 1;
  return n;
}

const std::vector<PeerModel>& peerModels() {
  static const std::vector<PeerModel> models = {
#include "peer_models.inc"
  };
  return models;
}

const PeerModel& peerModel(const std::string& name) {
  for (const PeerModel& m : peerModels())
    if (m.name == name) return m;
  throw std::runtime_error("no peer model " + name);
}

std::map<std::string, EngineFactory>& capstanRegistry() {
  static std::map<std::string, EngineFactory> registry;
  return registry;
}

}  // namespace peers
