// Shared by constraints_bench's translation units: a constrained model as a
// table (from which simbody_constrained.cpp builds the Simbody version; the
// .cap files say the same for Capstan) and the interfaces each engine
// implements. Simbody's translation unit is compiled apart because its
// header must clear NDEBUG (tests/crosscheck/simbody_cxx20.hpp), which would
// turn Eigen's asserts on in Capstan's generated code.
//
// Canonical state layout, in table order (parents before children), per
// body: Pin: q = angle, u = its rate; Ball: q = quaternion (w, x, y, z) of
// R_FM, u = w_FM expressed in F. Both engines use these coordinates (only
// their order may differ), so converting is a permutation.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cbench {

enum class Mobilizer { Pin, Ball };

// A body and the joint from its parent. The joint's F frame is the parent's
// body frame translated to p_PF (no rotation); its M frame is the body
// frame. Pin turns about z of F.
struct TreeBody {
  const char* joint;  // Capstan's joint path: its q and u are "<joint>.q[k]", "<joint>.u[k]"
  const char* body;   // Capstan's body name (bodyNames)
  int parent;         // index into bodies; -1 = World
  Mobilizer type;
  double p_PF[3];     // m; in the parent's body frame (World for -1)
  double mass;        // kg
  double com[3];      // m; in the body frame
  double inertia[3];  // kg*m^2; principal moments about the com, along the body axes
};

enum class ConstraintKind { PinCut, SphereContact };

// PinCut: a revolute joint about z closing a loop, between the point p_F of
// body F and p_M of body M (frames parallel to the bodies'). SphereContact:
// Simbody's SphereOnSphereContact between a sphere of radius radiusF
// centered at p_F on F and one of radius radiusM at p_M on M.
struct ConstraintTable {
  const char* name;  // Capstan's constraint (component path)
  ConstraintKind kind;
  int bodyF, bodyM;                 // index into bodies; -1 = World
  double p_F[3];                    // m; in F's body frame
  double p_M[3];                    // m; in M's body frame
  double radiusF = 0, radiusM = 0;  // m; contact
  bool rolling = false;             // contact
};

struct ConstrainedModel {
  std::string name;          // as printed
  std::string capstanClass;  // the generated class (capstan compile's model name)
  double gravity[3];         // m/s^2, in World
  std::vector<TreeBody> bodies;
  std::vector<ConstraintTable> constraints;
  int nq() const;
  int nu() const;
  int qOffset(int body) const;
  int uOffset(int body) const;
};

// What one constrained forward dynamics gives, canonical layout.
struct Evaluation {
  std::vector<double> udot;  // (nu)
  // Per table body: the spatial force all constraints apply to it, [n; f]
  // with the moment about the body origin, in World.
  std::vector<std::array<double, 6>> bodyForces;
  // Per SphereContact constraint, in table order: the force on sphere M's
  // body at the contact point, in World (Simbody's findForceOnSphereBInG).
  std::vector<std::array<double, 3>> contactForces;
  int rank = -1;  // Capstan: independent rows found by the solver
};

// Where Capstan's constrained forward dynamics spends its time: what
// ConstraintSolver::accelerations calls (the generated functions, and the
// solver's dense factorizations (dense.hpp) done alone with its types), the
// whole call, and forwardDynamics for comparison (accelerations does not
// call it). Microseconds per call.
struct Parts {
  double massMatrix = 0, bias = 0, appliedForces = 0, constraintJacobian = 0, constraintBias = 0;
  double cholesky = 0;       // dense::cholesky of M
  double jacobianSolve = 0;  // B^T = L^-1 G^T
  double qr = 0;             // dense::PivotedQR of B^T
  double accelerations = 0;  // as the solver chooses (ConstraintSettings::Method::Auto)
  double rangeSpace = 0;     // the whole call by the range-space method (Method::RangeSpace)
  // The whole call by the articulated-body path (Method::ArticulatedBody),
  // forwardDynamics keeping its factor, and one solveMassMatrix of a vector:
  // 0 where the generated class has no articulated factor.
  double articulatedBody = 0, forwardDynamicsFactor = 0, solveMassMatrix = 0;
  double forwardDynamics = 0;
  // What the parts of the range-space method leave of its call: the
  // triangular solves with vectors, Q's reflectors applied, copies and
  // bookkeeping.
  double rest() const {
    return rangeSpace -
           (massMatrix + bias + appliedForces + constraintJacobian + constraintBias + cholesky + jacobianSolve + qr);
  }
};

// Constrained forward dynamics (udot and multipliers) at a state.
class Engine {
 public:
  virtual ~Engine() = default;
  // Sets the state (canonical layout) that evaluate() and run() use.
  virtual void setState(const std::vector<double>& q, const std::vector<double>& u) = 0;
  virtual Evaluation evaluate() = 0;
  // `calls` evaluations at the state, each recomputing everything; returns a
  // checksum.
  virtual double run(long calls) = 0;
};

// A fixed-step integrator with projection: start() sets the state at t = 0
// (untimed set-up), advance() takes `steps` steps (timed), state() reads it.
class Stepper {
 public:
  virtual ~Stepper() = default;
  virtual void start(const std::vector<double>& q, const std::vector<double>& u) = 0;
  virtual void advance(long steps) = 0;
  virtual void state(std::vector<double>& q, std::vector<double>& u) const = 0;
  // Constrained forward-dynamics evaluations per step.
  virtual double evaluationsPerStep() const = 0;
  // Steps taken since start() (an error-controlled integrator chooses them).
  virtual long stepsTaken() const = 0;
};

// The Capstan side of one model (capstan_model.cpp.in, one translation unit
// per generated class).
class CapstanModel {
 public:
  virtual ~CapstanModel() = default;
  virtual std::unique_ptr<Engine> engine() const = 0;
  // Assembly: (q, u) projected onto the constraints to `tolerance`, in place.
  virtual void assemble(std::vector<double>& q, std::vector<double>& u, double tolerance) const = 0;
  // The model's initial state (its q0, u0), not assembled.
  virtual void initialState(std::vector<double>& q, std::vector<double>& u) const = 0;
  // The parts of one constrained forward dynamics at (q, u), each timed
  // alone (median microseconds per call over batches, `seconds` in all).
  virtual Parts parts(const std::vector<double>& q, const std::vector<double>& u, double seconds) const = 0;
  // Fixed-step RK4 with projection after every step (as `capstan simulate
  // --integrator rk4`), step h, projection tolerance `tolerance`.
  virtual std::unique_ptr<Stepper> rk4(double h, double tolerance) const = 0;
  // Dormand-Prince 5(4) with error control at `accuracy` (relative and
  // absolute, as `capstan simulate`'s default integrator), projection after
  // every accepted step to `tolerance`; advance(steps) integrates over
  // `steps` * h of time.
  virtual std::unique_ptr<Stepper> dopri5(double h, double accuracy, double tolerance) const = 0;
};

using CapstanFactory = std::function<std::unique_ptr<CapstanModel>(const ConstrainedModel&)>;
// Capstan's generated models register themselves here by class name.
std::map<std::string, CapstanFactory>& capstanRegistry();

// How Simbody closes a revolute cut: Constraint::Ball and two
// Constraint::ConstantAngle (Capstan's five rows), or, for planar loops
// only, the Ball alone (the angles' rows are redundant there).
enum class CutModel { BallAndAngles, BallOnly };

std::unique_ptr<Engine> makeSimbodyEngine(const ConstrainedModel& model, CutModel cuts);
// Classical RK4 written out over Simbody's derivatives (realize
// Acceleration), step for step capstan::rk4, then System::project(state,
// tolerance) after every step.
std::unique_ptr<Stepper> makeSimbodyRk4(const ConstrainedModel& model, CutModel cuts, double h, double tolerance);
// Simbody's RungeKuttaMersonIntegrator: fixed step h (accuracy <= 0), or
// error-controlled at `accuracy`, advancing `steps` * h of time; constraint
// tolerance `tolerance`.
std::unique_ptr<Stepper> makeSimbodyMerson(const ConstrainedModel& model, CutModel cuts, double h, double accuracy,
                                           double tolerance);

}  // namespace cbench
