// Bushings per simulation step, side by side in one run: Capstan's
// generated code vs Simbody 3.7's Force::LinearBushing on the same models
// (docs/performance.md, "Force elements"; issue 10's target: Capstan >= 5x
// faster per step).
//
//   mount  examples/bushing.cap: an engine block (2 kg) on a Free joint,
//          held by one bushing to a World-fixed support.
//   beam   bushing_beam.cap: a 1 m aluminium cantilever as 10 segments on
//          Free joints, each held by a bushing to the one before, the first
//          to World (torsion G J / L, bending E I / L, 500 Hz translational
//          penalty, 2 % damping).
//
// Engines, all fixed step, the same step h per model:
//   Capstan RK4      the generated forwardDynamics and qdot in the runtime's
//                    capstan::rk4 (capstan/integrators.hpp), as `capstan
//                    simulate --integrator rk4` runs them, without its
//                    gimbal-lock check;
//   + gimbal check   the same with the check `capstan simulate` makes before
//                    every evaluation (gimbalLock(), Drake's error near
//                    pitch +-90 degrees; it evaluates the bushings again);
//   Simbody RK4      the same classical RK4, step for step, over Simbody's
//                    realize(Acceleration) (simbody_bushings.cpp);
//   Simbody RKM      Simbody's RungeKuttaMersonIntegrator, setFixedStepSize(h).
//
// Agreement first: Capstan RK4 and Simbody RK4 from the same state, with
// the same step, must give the same trajectory up to the difference between
// the two bushings' angle conventions (Drake's roll-pitch-yaw, R_AC =
// Rz Ry Rx, against Simbody's body-fixed x-y-z, R_FM = Rx Ry Rz; and
// Drake's translational rate and point of application at the halfway frame
// B, where Simbody uses Mo and the rate of p_FM in F). Both agree to first
// order in the rotation, so the relative difference of the trajectories
// shrinks at least in proportion to the motion: it is measured at two
// amplitudes (initial velocities and gravity scaled by 1 and 1/2), must
// shrink by kMinShrink or more, and stay under kAgreement at full amplitude.
//
// Timing: rounds of one batch per engine, interleaved so that load changes
// hit all engines alike; a batch restarts from the same state (untimed) and
// takes enough steps for >= 3 ms of thread CPU time; per engine, the median
// over rounds of CPU time per step. Env: ELEMENTS_ROUNDS (default 21).
#include <capstan/integrators.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "BushingBeam.hpp"
#include "BushingMount.hpp"
#include "steppers.hpp"
#include "timing.hpp"

namespace {

using bench::envNumber;
using bench::threadMicroseconds;
using elements::BushingModel;
using elements::Stepper;

// Relative difference of the trajectories at full amplitude (see above).
constexpr double kAgreement = 0.05;
// Halving the motion must shrink the relative difference at least this much
// (first order in the motion: 2; second order: 4).
constexpr double kMinShrink = 1.5;

// Capstan's generated model in capstan::rk4 with fixed-size vectors, as the
// generated `capstan simulate` driver runs it (compiler/templates/
// capstan_driver.cpp, MechanicalModel); kGimbalCheck: with its gimbal-lock
// check before every evaluation.
template <class Model, bool kGimbalCheck>
class CapstanRk4 final : public Stepper {
 public:
  // joints: the Free joint of each table body, in table order.
  CapstanRk4(const std::vector<std::string>& joints, double h, double gravityScale) : h_(h), firstOrder_(system_) {
    for (double& g : model_.params.world_gravity) g *= gravityScale;
    for (const std::string& joint : joints) {
      for (int k = 1; k <= 7; ++k) qIndex_.push_back(find(Model::qNames, joint + ".q[" + std::to_string(k) + "]"));
      for (int k = 1; k <= 6; ++k) uIndex_.push_back(find(Model::uNames, joint + ".u[" + std::to_string(k) + "]"));
    }
    if (static_cast<int>(qIndex_.size()) != Model::nq || static_cast<int>(uIndex_.size()) != Model::nu)
      throw std::runtime_error("the table's joints do not cover the model's state");
  }

  void start(const std::vector<double>& q, const std::vector<double>& u) override {
    for (std::size_t i = 0; i < q.size(); ++i) x_[qIndex_[i]] = q[i];
    for (std::size_t i = 0; i < u.size(); ++i) x_[Model::nq + uIndex_[i]] = u[i];
    t_ = 0.0;
  }

  void advance(long steps) override {
    capstan::IntegratorSettings settings;
    settings.stepSize = h_;
    const double t1 = t_ + static_cast<double>(steps) * h_;
    const capstan::IntegrationStatus status = capstan::rk4(firstOrder_, t_, t1, x_, settings);
    if (!status.ok || status.steps != steps) throw std::runtime_error("capstan::rk4: " + status.message);
    t_ = t1;
  }

  void state(std::vector<double>& q, std::vector<double>& u) const override {
    q.resize(qIndex_.size());
    u.resize(uIndex_.size());
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = x_[qIndex_[i]];
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = x_[Model::nq + uIndex_[i]];
  }

  double evaluationsPerStep() const override { return 4; }

 private:
  struct System {
    using VectorQ = typename Model::Q;
    using VectorU = typename Model::U;
    const Model& model;
    int nq() const { return Model::nq; }
    int nu() const { return Model::nu; }
    void qdot(const VectorQ& q, const VectorU& u, VectorQ& qd) const { model.qdot(q, u, qd); }
    void udot(double t, const VectorQ& q, const VectorU& u, VectorU& ud) const {
      if constexpr (kGimbalCheck) {
        double pitch = 0.0;
        if (model.gimbalLock(q, u, pitch) >= 0) throw std::runtime_error("a bushing is at gimbal lock");
      }
      model.forwardDynamics(t, q, u, ud);
    }
    void normalize(VectorQ& q) const { Model::normalizeQuaternions(q); }
  };
  using X = Eigen::Matrix<double, Model::nq + Model::nu, 1>;

  static int find(const auto& names, const std::string& name) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    throw std::runtime_error("no coordinate " + name);
  }

  Model model_;
  double h_, t_ = 0.0;
  System system_{model_};
  capstan::FirstOrder<System, X> firstOrder_;
  X x_ = X::Zero();
  std::vector<int> qIndex_, uIndex_;  // canonical index -> Capstan index
};

// ---------------------------------------------------------------- models
// As examples/bushing.cap: k = m wn^2 = 800 N/m, d = 2 zeta sqrt(m k) = 8 N.s/m.
BushingModel mountTable() {
  const double m = 2.0, k = m * 20.0 * 20.0, d = 2 * 0.1 * std::sqrt(m * k);
  BushingModel model{"mount", {0, -9.81, 0}, {}, {}};
  model.bodies.push_back({{0, 0, 0}, m, {0, 0, 0}, {0.02, 0.03, 0.04}});
  model.bushings.push_back({-1, 0, {0, 1, 0}, {0, 0.1, 0}, {50, 50, 50, k, k, k}, {0.5, 0.5, 0.5, d, d, d}});
  return model;
}

// As bushing_beam.cap.
BushingModel beamTable() {
  const int n = 10;
  const double L = 0.1, a = 0.01, rho = 2700, E = 70e9, G = 26e9, zeta = 0.02, pi = 3.141592653589793;
  const double m = rho * a * a * L, Iend = m * L * L / 3;
  const double kTorsion = G * 0.1406 * std::pow(a, 4) / L, kBending = E * std::pow(a, 4) / 12 / L;
  const double kJoint = m * std::pow(2 * pi * 500, 2);
  const double dT = 2 * zeta * std::sqrt(Iend * kTorsion), dB = 2 * zeta * std::sqrt(Iend * kBending),
               dJ = 2 * zeta * std::sqrt(m * kJoint);
  BushingModel model{"beam", {0, -9.81, 0}, {}, {}};
  for (int i = 0; i < n; ++i) {
    model.bodies.push_back(
        {{L * i, 0, 0}, m, {L / 2, 0, 0}, {m * a * a / 6, m * (L * L + a * a) / 12, m * (L * L + a * a) / 12}});
    model.bushings.push_back({i - 1, i, {i == 0 ? 0.0 : L, 0, 0}, {0, 0, 0},
                              {kTorsion, kBending, kBending, kJoint, kJoint, kJoint}, {dT, dB, dB, dJ, dJ, dJ}});
  }
  return model;
}

// The initial state, motion scaled by s: the mount hangs at its unstretched
// position and spins a little about all three axes; the beam starts straight
// (gravity bends it) with a sideways swing about World's y axis and a twist
// growing along it.
void initialState(const BushingModel& model, double s, std::vector<double>& q, std::vector<double>& u) {
  q.assign(static_cast<std::size_t>(model.nq()), 0.0);
  u.assign(static_cast<std::size_t>(model.nu()), 0.0);
  for (std::size_t b = 0; b < model.bodies.size(); ++b) q[7 * b] = 1.0;
  if (model.bodies.size() == 1) {
    q[5] = 0.9;
    const double u0[6] = {0.8, -0.5, 0.6, 0.05, 0.0, 0.03};
    for (int i = 0; i < 6; ++i) u[static_cast<std::size_t>(i)] = s * u0[i];
    return;
  }
  const double wy = 0.5, twist = 2.0;  // rad/s; twist: rad/s per m along the beam
  for (std::size_t b = 0; b < model.bodies.size(); ++b) {
    const double x = model.bodies[b].p_WF[0];
    u[6 * b + 0] = s * twist * (x + 0.05);
    u[6 * b + 1] = s * wy;
    u[6 * b + 5] = -s * wy * x;  // v = w x p of the segment's left end
  }
}

struct Case {
  BushingModel table;
  std::vector<std::string> joints;
  double h;                  // s
  long agreementSteps;       // steps compared
};

template <class Model>
std::unique_ptr<Stepper> makeCapstan(const Case& c, bool gimbalCheck, double gravityScale) {
  if (gimbalCheck) return std::make_unique<CapstanRk4<Model, true>>(c.joints, c.h, gravityScale);
  return std::make_unique<CapstanRk4<Model, false>>(c.joints, c.h, gravityScale);
}

// Relative difference of two trajectories: positions (max |p_C - p_S| over
// bodies and samples, over the largest |p_C(t) - p_C(0)|) and rotations (the
// largest angle between the two orientations, over the largest angle Capstan's
// turns from its initial one).
struct Difference {
  double position = 0, rotation = 0, motion = 0, turn = 0;
};

Difference compare(const Case& c, Stepper& a, Stepper& b, double s) {
  std::vector<double> q0, u0, qa, ua, qb, ub;
  initialState(c.table, s, q0, u0);
  a.start(q0, u0);
  b.start(q0, u0);
  Difference d;
  double dp = 0, dr = 0;
  const long every = std::max(1L, c.agreementSteps / 200);
  for (long k = 0; k < c.agreementSteps; k += every) {
    a.advance(every);
    b.advance(every);
    a.state(qa, ua);
    b.state(qb, ub);
    for (std::size_t body = 0; body < c.table.bodies.size(); ++body) {
      const double* ea = &qa[7 * body];
      const double* eb = &qb[7 * body];
      const double* e0 = &q0[7 * body];
      double dot = 0, dot0 = 0;
      for (int i = 0; i < 4; ++i) {
        dot += ea[i] * eb[i];
        dot0 += ea[i] * e0[i];
      }
      dr = std::max(dr, 2 * std::acos(std::min(1.0, std::abs(dot))));
      d.turn = std::max(d.turn, 2 * std::acos(std::min(1.0, std::abs(dot0))));
      double gap = 0, moved = 0;
      for (int i = 4; i < 7; ++i) {
        gap += (ea[i] - eb[i]) * (ea[i] - eb[i]);
        moved += (ea[i] - e0[i]) * (ea[i] - e0[i]);
      }
      dp = std::max(dp, std::sqrt(gap));
      d.motion = std::max(d.motion, std::sqrt(moved));
    }
  }
  d.position = dp / d.motion;
  d.rotation = dr / d.turn;
  return d;
}

BushingModel scaledGravity(BushingModel model, double s) {
  for (double& g : model.gravity) g *= s;
  return model;
}

// Steps per batch for >= 3 ms of thread CPU time.
long calibrate(Stepper& e, const std::vector<double>& q, const std::vector<double>& u) {
  for (long steps = 8;; steps *= 2) {
    e.start(q, u);
    const double t0 = threadMicroseconds();
    e.advance(steps);
    if (threadMicroseconds() - t0 > 3000.0) return steps;
  }
}

// Prints the agreement and the timings, and appends the table row to `rows`;
// false if the two engines disagree.
template <class Model>
bool runCase(const Case& c, int rounds, std::string& rows) {
  // Agreement.
  Difference diff[2];
  for (int k = 0; k < 2; ++k) {
    const double s = k == 0 ? 1.0 : 0.5;
    auto ours = makeCapstan<Model>(c, false, s);
    auto theirs = elements::makeSimbodyRk4(scaledGravity(c.table, s), c.h);
    diff[k] = compare(c, *ours, *theirs, s);
  }
  const double halvingP = diff[0].position / diff[1].position, halvingR = diff[0].rotation / diff[1].rotation;
  const bool agree = diff[0].position < kAgreement && diff[0].rotation < kAgreement &&
                     halvingP > kMinShrink && halvingR > kMinShrink;
  std::printf("%s: Capstan RK4 vs Simbody RK4 over %ld steps of %g s: positions differ by %.2e of the motion "
              "(%.3g m), rotations by %.2e of the turn (%.3g rad); at half the motion %.2e and %.2e "
              "(ratios %.2f, %.2f; first order: 2, second: 4)%s\n",
              c.table.name, c.agreementSteps, c.h, diff[0].position, diff[0].motion, diff[0].rotation, diff[0].turn,
              diff[1].position, diff[1].rotation, halvingP, halvingR, agree ? "" : ": DISAGREE");
  if (!agree) return false;

  // Timing.
  std::vector<double> q0, u0;
  initialState(c.table, 1.0, q0, u0);
  const char* names[4] = {"Capstan RK4", "Capstan RK4 + gimbal check", "Simbody RK4", "Simbody RKM"};
  std::unique_ptr<Stepper> engines[4] = {makeCapstan<Model>(c, false, 1.0), makeCapstan<Model>(c, true, 1.0),
                                         elements::makeSimbodyRk4(c.table, c.h),
                                         elements::makeSimbodyMerson(c.table, c.h)};
  long steps[4];
  for (int e = 0; e < 4; ++e) steps[e] = calibrate(*engines[e], q0, u0);
  std::vector<double> samples[4];
  for (int r = 0; r < rounds; ++r) {
    for (int e = 0; e < 4; ++e) {
      engines[e]->start(q0, u0);
      const double t0 = threadMicroseconds();
      engines[e]->advance(steps[e]);
      samples[e].push_back((threadMicroseconds() - t0) / static_cast<double>(steps[e]));
    }
  }
  double median[4];
  for (int e = 0; e < 4; ++e) {
    median[e] = bench::median(samples[e]);
    std::printf("%s: %-27s %9.3f us/step (%ld steps a batch, %.3g evaluations a step)\n", c.table.name, names[e],
                median[e], steps[e], engines[e]->evaluationsPerStep());
  }
  char row[256];
  std::snprintf(row, sizeof row, "| %s (nq %d, nu %d, h = %g s) | %.3f | %.3f | %.2f | %.2f | %.1f | %.1f |\n",
                c.table.name, c.table.nq(), c.table.nu(), c.h, median[0], median[1], median[2], median[3],
                median[2] / median[0], median[3] / median[0]);
  rows += row;
  return true;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress as it comes
  const int rounds = static_cast<int>(envNumber("ELEMENTS_ROUNDS", 21));
  double load[1] = {-1};
  getloadavg(load, 1);
  std::printf("elements_peers_bench: %d rounds, load average %.2f at the start\n", rounds, load[0]);
  const Case mount{mountTable(), {"float"}, 1e-3, 500};
  std::vector<std::string> segments;
  for (int i = 1; i <= 10; ++i) segments.push_back("seg" + std::to_string(i) + ".joint");
  const Case beam{beamTable(), segments, 2.5e-5, 4000};
  std::string rows;
  bool ok = true;
  try {
    ok = runCase<capstan_models::BushingMount>(mount, rounds, rows);
    ok = runCase<capstan_models::BushingBeam>(beam, rounds, rows) && ok;
  } catch (const std::exception& e) {  // a non-finite state, gimbal lock, a rejected Simbody step
    std::printf("elements_peers_bench: %s\n", e.what());
    return 1;
  }
  std::printf("| model | Capstan RK4 us/step | + gimbal check | Simbody RK4 us/step | Simbody RKM us/step | "
              "Simbody RK4 / Capstan | Simbody RKM / Capstan |\n|---|---|---|---|---|---|---|\n%s", rows.c_str());
  getloadavg(load, 1);
  std::printf("load average %.2f at the end\n", load[0]);
  return ok ? 0 : 1;
}
