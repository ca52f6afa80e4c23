// Shared by elements_peers_bench's translation units: a bushing model as a
// table (from which simbody_bushings.cpp builds the Simbody version) and the
// interface each time stepper implements. Simbody's translation unit is
// compiled apart because its header must clear NDEBUG
// (tests/crosscheck/simbody_cxx20.hpp), which would turn Eigen's asserts on
// in Capstan's generated code.
//
// State layout (Capstan's, for models whose joints are all Free): q = per
// body (quaternion w, x, y, z of R_FM; p_FM in F), u = per body (w_FM in F;
// v_FMo in F), bodies in table order. Every joint's F frame here is World
// translated by `p_WF`, so "in F" is "in World".
#pragma once

#include <memory>
#include <vector>

namespace elements {

struct FreeBody {
  double p_WF[3];     // m; the Free joint's F frame origin in World (F parallel to World)
  double mass;        // kg
  double com[3];      // m; in the body frame
  double inertia[3];  // kg*m^2; principal moments about the com, along the body axes
};

// A bushing from frame A on body `a` to frame C on body `c`; both frames
// parallel to their bodies' frames. Constants in Simbody's order: the three
// rotational ones (roll, pitch, yaw; about x, y, z), then x, y, z.
struct BushingTable {
  int a, c;             // index into bodies; -1 = World
  double p_BaAo[3];     // m; A's origin in body a's frame (in World for -1)
  double p_BcCo[3];     // m; C's origin in body c's frame
  double stiffness[6];  // N*m/rad x 3, N/m x 3
  double damping[6];    // N*m*s/rad x 3, N*s/m x 3
};

struct BushingModel {
  const char* name;
  double gravity[3];  // m/s^2, in World
  std::vector<FreeBody> bodies;
  std::vector<BushingTable> bushings;
  int nq() const { return 7 * static_cast<int>(bodies.size()); }
  int nu() const { return 6 * static_cast<int>(bodies.size()); }
};

// A fixed-step integrator of one model: start() sets the state at t = 0
// (untimed set-up), advance() takes `steps` steps of size h (the part that
// is timed), state() reads the state back.
class Stepper {
 public:
  virtual ~Stepper() = default;
  virtual void start(const std::vector<double>& q, const std::vector<double>& u) = 0;
  virtual void advance(long steps) = 0;
  virtual void state(std::vector<double>& q, std::vector<double>& u) const = 0;
  // Force-function evaluations per step (what one step costs in calls).
  virtual double evaluationsPerStep() const = 0;
};

// Simbody with Force::LinearBushing: classical RK4 written out here over
// Simbody's derivatives (realize(Acceleration), then getQDot and getUDot),
// step for step the method of capstan::rk4, quaternions normalized after
// each step.
std::unique_ptr<Stepper> makeSimbodyRk4(const BushingModel& model, double h);
// Simbody's own RungeKuttaMersonIntegrator (4th order, 5 evaluations a step,
// Simbody's projection after each step) at a fixed step h.
std::unique_ptr<Stepper> makeSimbodyMerson(const BushingModel& model, double h);

}  // namespace elements
