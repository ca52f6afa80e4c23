// Shared by peers_bench's translation units: the models as tables (from
// make_models.py) and the interface each engine implements.
//
// Canonical state, in table order (parents before children), per body:
//   Revolute: q = angle, u = angle rate;
//   Free (always a root here): q = (quaternion w, x, y, z of R_WB; p_WB),
//     u = (w_WB in World; v_WBo in World).
// udot uses the layout of u. Each engine converts to and from its own.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace peers {

enum class PeerJoint { Revolute, Free };

struct PeerBody {
  const char* name;   // body name (MuJoCo body name)
  const char* joint;  // capstan's joint path (q/u names are "<joint>.q[k]")
  int parent;         // index into bodies, -1 for World
  PeerJoint type;
  double axis[3];     // Revolute axis, in the parent-side joint frame (= body frame at q = 0)
  double r[3];        // joint position in the parent's body frame (World for roots); no rotation
  double mass;
  double com[3];      // in the body frame
  double inertia[6];  // about the com, in the body frame: xx, yy, zz, xy, xz, yz
};

struct PeerModel {
  std::string name;
  double gravity[3];
  std::vector<PeerBody> bodies;
  int nq() const;
  int nu() const;
  int qOffset(int body) const;  // canonical offsets
  int uOffset(int body) const;
};

const std::vector<PeerModel>& peerModels();
// The model of that name; throws std::runtime_error if there is none.
const PeerModel& peerModel(const std::string& name);

class Engine {
 public:
  virtual ~Engine() = default;
  // Sets the state (canonical layout) that udot() and run() evaluate at.
  virtual void setState(const std::vector<double>& q, const std::vector<double>& u) = 0;
  // One forward-dynamics evaluation at the state; canonical layout.
  virtual std::vector<double> udot() = 0;
  // `calls` forward-dynamics evaluations, each from the state copied in
  // afresh (so nothing can be cached or hoisted); returns a checksum.
  virtual double run(long calls) = 0;
};

using EngineFactory = std::function<std::unique_ptr<Engine>(const PeerModel&)>;

// Capstan's generated models register themselves here by model name.
std::map<std::string, EngineFactory>& capstanRegistry();

std::unique_ptr<Engine> makeSimbody(const PeerModel& model);
// minimal = false: mj_forward (contacts and constraints disabled); true: only
// the stages forward dynamics needs (kinematics, comPos, crb, factorM,
// comVel, rne, solveM).
std::unique_ptr<Engine> makeMujoco(const PeerModel& model, bool minimal);
// The model as MJCF: one <body> per body with a hinge or free joint and an
// explicit <inertial>, no geoms, contacts and constraints disabled.
std::string mujocoXml(const PeerModel& model);

}  // namespace peers
