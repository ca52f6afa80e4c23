// Constrained dynamics, side by side in one run: Capstan's generated code
// with its constraint solver vs Simbody 3.7 on the same models and states
// (docs/performance.md, "Constraints"; issue 9's target: Capstan >= 5x
// faster, per constrained forward dynamics and per simulation step).
//
//   fourbar        examples/fourbar.cap: one planar loop (revolute cut, 5
//                  rows of which 2 independent), nu = 3.
//   chain          contact_chain.cap: 10 links on ball joints, three of
//                  them against fixed spheres (SphereOnSphereContact, 3
//                  rows), nq = 40, nu = 30.
//   chain rolling  the same with rolling contacts (9 rows).
//   three-loop     three_loop.cap: three four-bars in a row sharing their
//                  rockers (3 revolute cuts, 15 rows of which 6
//                  independent), nu = 7.
//
// 1. Constrained forward dynamics (udot and multipliers) at assembled
//    states: Capstan's ConstraintSolver::accelerations on the generated
//    class against Simbody's realize(Stage::Acceleration) after
//    invalidating its cache from Stage::Position on (simbody_constrained.cpp).
//    The states: the model's q0, u0 and kStates - 1 random perturbations of
//    it, each assembled by Capstan's projection to kAssembly. Agreement
//    first, at every state: udot, the constraint forces on every body and
//    the contact forces must agree to kAgreement (normwise relative) or the
//    model is not timed.
// 2. Per simulation step with projection on the four-bar: Capstan's rk4 and
//    projection after every step, as `capstan simulate --integrator rk4`,
//    against the same classical RK4 written over Simbody's derivatives with
//    System::project after every step, and Simbody's own
//    RungeKuttaMersonIntegrator at the same fixed step; then, at the same
//    error tolerance, Capstan's dopri5 (`capstan simulate`'s default)
//    against Simbody's Merson with error control. The two RK4 trajectories
//    must agree to kTrajectoryAgreement first.
// 3. Where Capstan's time goes: each generated function accelerations()
//    calls, and the solver's dense factorizations, timed alone (Parts).
//
// Timing: rounds of one batch per engine, interleaved so that load changes
// hit all engines alike; a batch lasts >= 2 ms of thread CPU time; per
// engine, the median over rounds. Env: CBENCH_ROUNDS (default 21).
#include "constrained.hpp"
#include "timing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace cbench {

int ConstrainedModel::nq() const { return qOffset(static_cast<int>(bodies.size())); }
int ConstrainedModel::nu() const { return uOffset(static_cast<int>(bodies.size())); }
int ConstrainedModel::qOffset(int body) const {
  int n = 0;
  for (int b = 0; b < body; ++b) n += bodies[static_cast<std::size_t>(b)].type == Mobilizer::Ball ? 4 : 1;
  return n;
}
int ConstrainedModel::uOffset(int body) const {
  int n = 0;
  for (int b = 0; b < body; ++b) n += bodies[static_cast<std::size_t>(b)].type == Mobilizer::Ball ? 3 : 1;
  return n;
}

std::map<std::string, CapstanFactory>& capstanRegistry() {
  static std::map<std::string, CapstanFactory> registry;
  return registry;
}

}  // namespace cbench

namespace {

using namespace cbench;
using bench::envNumber;
using bench::loadAverage;
using bench::median;
using bench::threadMicroseconds;

constexpr double kAgreement = 1e-9;            // udot, forces: Capstan vs Simbody, normwise relative
constexpr double kTrajectoryAgreement = 1e-8;  // the two RK4 runs' states after the agreement steps
constexpr double kAssembly = 1e-13;            // projection tolerance of the compared states (m, rad)
constexpr double kProjection = 1e-10;          // projection tolerance while simulating (both)
constexpr int kStates = 5;
constexpr double kBatchMicroseconds = 2000.0;

volatile double sink = 0.0;

// ---------------------------------------------------------------- models
// Each as its .cap file says (the names are Capstan's component paths).

// examples/fourbar.cap: a = 1, r = 0.4, c = 1.2, b = 0.9 m, 2 kg/m bars
// along their x axes, pivots about z.
ConstrainedModel fourBar() {
  const double a = 1.0, r = 0.4, c = 1.2, b = 0.9, rho = 2.0;
  auto bar = [&](double L) { return std::array<double, 3>{1e-5, rho * L * L * L / 12, rho * L * L * L / 12}; };
  ConstrainedModel m{"fourbar", "FourBar", {0, -9.81, 0}, {}, {}};
  const auto Ir = bar(r), Ic = bar(c), Ib = bar(b);
  m.bodies.push_back(
      {"crankPivot", "crank", -1, Mobilizer::Pin, {0, 0, 0}, rho * r, {r / 2, 0, 0}, {Ir[0], Ir[1], Ir[2]}});
  m.bodies.push_back(
      {"crankCoupler", "coupler", 0, Mobilizer::Pin, {r, 0, 0}, rho * c, {c / 2, 0, 0}, {Ic[0], Ic[1], Ic[2]}});
  m.bodies.push_back(
      {"rockerPivot", "rocker", -1, Mobilizer::Pin, {a, 0, 0}, rho * b, {b / 2, 0, 0}, {Ib[0], Ib[1], Ib[2]}});
  m.constraints.push_back({"couplerRocker", ConstraintKind::PinCut, 1, 2, {c, 0, 0}, {b, 0, 0}});
  return m;
}

// contact_chain.cap: 10 links of L = 0.3 m, 1 kg along -y on ball joints;
// tip spheres r = 0.05 m on links 4, 7, 10 against World spheres R = 0.2 m.
ConstrainedModel contactChain(bool rolling) {
  const double L = 0.3, mass = 1.0, R = 0.2, r = 0.05;
  ConstrainedModel m{
      rolling ? "chain rolling" : "chain", rolling ? "ContactChainRolling" : "ContactChain", {0, -9.81, 0}, {}, {}};
  static const char* joints[10] = {"link1.joint", "link2.joint", "link3.joint", "link4.joint", "link5.joint",
                                   "link6.joint", "link7.joint", "link8.joint", "link9.joint", "link10.joint"};
  static const char* bodies[10] = {"link1.body", "link2.body", "link3.body", "link4.body", "link5.body",
                                   "link6.body", "link7.body", "link8.body", "link9.body", "link10.body"};
  for (int i = 0; i < 10; ++i) {
    m.bodies.push_back({joints[i],
                        bodies[i],
                        i - 1,
                        Mobilizer::Ball,
                        {0, i == 0 ? 0.0 : -L, 0},
                        mass,
                        {0, -L / 2, 0},
                        {mass * L * L / 12, 0.0002, mass * L * L / 12}});
  }
  const char* names[3] = {"contact1", "contact2", "contact3"};
  const int link[3] = {3, 6, 9};
  const double at[3][3] = {{R + r, -1.2, 0}, {0, -2.1, R + r}, {-(R + r), -3.0, 0}};
  for (int k = 0; k < 3; ++k) {
    m.constraints.push_back({names[k],
                             ConstraintKind::SphereContact,
                             -1,
                             link[k],
                             {at[k][0], at[k][1], at[k][2]},
                             {0, -L, 0},
                             R,
                             r,
                             rolling});
  }
  return m;
}

// three_loop.cap: bars of 2 kg/m; crank 0.4, couplers 1.2, 1.1, 1.05,
// rockers 0.9, 0.8, 0.75 m; ground pivots 1 m apart.
ConstrainedModel threeLoop() {
  const double a = 1.0, rho = 2.0;
  ConstrainedModel m{"three-loop", "ThreeLoop", {0, -9.81, 0}, {}, {}};
  auto bar = [&](const char* joint, const char* body, int parent, double x, double L) {
    m.bodies.push_back({joint,
                        body,
                        parent,
                        Mobilizer::Pin,
                        {x, 0, 0},
                        rho * L,
                        {L / 2, 0, 0},
                        {1e-5, rho * L * L * L / 12, rho * L * L * L / 12}});
  };
  // In Capstan's tree order (depth first from World, connections in order).
  bar("crank.joint", "crank.body", -1, 0, 0.4);
  bar("coupler1.joint", "coupler1.body", 0, 0.4, 1.2);
  bar("rocker1.joint", "rocker1.body", -1, a, 0.9);
  bar("coupler2.joint", "coupler2.body", 2, 0.9, 1.1);
  bar("rocker2.joint", "rocker2.body", -1, 2 * a, 0.8);
  bar("coupler3.joint", "coupler3.body", 4, 0.8, 1.05);
  bar("rocker3.joint", "rocker3.body", -1, 3 * a, 0.75);
  m.constraints.push_back({"close1", ConstraintKind::PinCut, 1, 2, {1.2, 0, 0}, {0.9, 0, 0}});
  m.constraints.push_back({"close2", ConstraintKind::PinCut, 3, 4, {1.1, 0, 0}, {0.8, 0, 0}});
  m.constraints.push_back({"close3", ConstraintKind::PinCut, 5, 6, {1.05, 0, 0}, {0.75, 0, 0}});
  return m;
}

// ---------------------------------------------------------------- states

// kStates assembled states: the model's q0, u0, then random perturbations
// of it (q by up to ~0.05 rad, u by ~1 rad/s), each projected onto the
// constraints by Capstan.
std::vector<std::pair<std::vector<double>, std::vector<double>>> assembledStates(const CapstanModel& capstan) {
  std::mt19937 rng(9);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> q0, u0;
  capstan.initialState(q0, u0);
  std::vector<std::pair<std::vector<double>, std::vector<double>>> states;
  for (int k = 0; k < kStates; ++k) {
    std::vector<double> q = q0, u = u0;
    if (k > 0) {
      for (double& x : q) x += 0.05 * normal(rng);
      for (double& x : u) x += normal(rng);
    }
    capstan.assemble(q, u, kAssembly);
    states.emplace_back(q, u);
  }
  return states;
}

// max |a - b| / max |b| over the entries.
template <class Rows>
double normwise(const Rows& a, const Rows& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t k = 0; k < std::size(a[i]); ++k) {
      diff = std::max(diff, std::abs(a[i][k] - b[i][k]));
      scale = std::max(scale, std::abs(b[i][k]));
    }
  }
  return scale > 0 ? diff / scale : diff;
}

double normwise(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

// Calls per batch for >= kBatchMicroseconds of thread CPU time.
long calibrate(Engine& e) {
  for (long calls = 1;; calls *= 2) {
    const double t0 = threadMicroseconds();
    sink = sink + e.run(calls);
    if (threadMicroseconds() - t0 > kBatchMicroseconds) return calls;
  }
}

bool hasPinCuts(const ConstrainedModel& table) {
  for (const ConstraintTable& c : table.constraints)
    if (c.kind == ConstraintKind::PinCut) return true;
  return false;
}

// Agreement at every state, then timing at the last; appends the table row.
// Simbody's engines: the cut revolutes as Ball plus two ConstantAngle (the
// same rows as Capstan's), and, for the planar models with cut revolutes,
// as the Ball alone.
bool forwardDynamicsCase(const ConstrainedModel& table, int rounds, std::string& rows, std::string& partsRows) {
  const auto factory = capstanRegistry().find(table.capstanClass);
  if (factory == capstanRegistry().end()) throw std::runtime_error("no Capstan model " + table.capstanClass);
  const std::unique_ptr<CapstanModel> capstan = factory->second(table);
  const auto states = assembledStates(*capstan);
  std::vector<std::unique_ptr<Engine>> engines;
  engines.push_back(capstan->engine());
  engines.push_back(makeSimbodyEngine(table, CutModel::BallAndAngles));
  if (hasPinCuts(table)) engines.push_back(makeSimbodyEngine(table, CutModel::BallOnly));
  const std::size_t n = engines.size();
  double worstUdot = 0, worstBody = 0, worstContact = 0;
  int rank = -1;
  for (const auto& [q, u] : states) {
    for (auto& e : engines) e->setState(q, u);
    const Evaluation a = engines[0]->evaluate();
    rank = a.rank;
    for (std::size_t e = 1; e < n; ++e) {
      const Evaluation b = engines[e]->evaluate();
      worstUdot = std::max(worstUdot, normwise(a.udot, b.udot));
      worstBody = std::max(worstBody, normwise(a.bodyForces, b.bodyForces));
      if (!a.contactForces.empty()) worstContact = std::max(worstContact, normwise(a.contactForces, b.contactForces));
    }
  }
  const int rowCount = [&] {
    int count = 0;
    for (const ConstraintTable& c : table.constraints)
      count += c.kind == ConstraintKind::PinCut ? 5 : (c.rolling ? 3 : 1);
    return count;
  }();
  const bool agree = worstUdot < kAgreement && worstBody < kAgreement && worstContact < kAgreement;
  std::printf(
      "%s (nq %d, nu %d, %d rows, rank %d): at %d assembled states, Capstan vs Simbody (%s) differ by at "
      "most %.1e (udot), %.1e (constraint forces on the bodies), %.1e (contact forces), normwise relative%s\n",
      table.name.c_str(), table.nq(), table.nu(), rowCount, rank, kStates,
      n == 3 ? "both cut models" : "SphereOnSphereContact", worstUdot, worstBody, worstContact,
      agree ? "" : ": DISAGREE");
  if (!agree) return false;

  // Timing, at the last state.
  const auto& [q, u] = states.back();
  std::vector<long> calls(n);
  for (std::size_t e = 0; e < n; ++e) {
    engines[e]->setState(q, u);
    calls[e] = calibrate(*engines[e]);
  }
  std::vector<std::vector<double>> samples(n);
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t e = 0; e < n; ++e) {
      const double t0 = threadMicroseconds();
      sink = sink + engines[e]->run(calls[e]);
      samples[e].push_back((threadMicroseconds() - t0) / static_cast<double>(calls[e]));
    }
  }
  std::vector<double> us(n);
  for (std::size_t e = 0; e < n; ++e) us[e] = median(samples[e]);
  std::printf("%s: Capstan %.3f us, Simbody %.3f us (%.1fx)", table.name.c_str(), us[0], us[1], us[1] / us[0]);
  if (n == 3) std::printf(", Simbody with Ball-only cuts %.3f us (%.1fx)", us[2], us[2] / us[0]);
  std::printf(" per constrained forward dynamics\n");
  char row[320];
  char ballOnly[64] = "- | -";
  if (n == 3) std::snprintf(ballOnly, sizeof ballOnly, "%.3f | %.1f", us[2], us[2] / us[0]);
  std::snprintf(row, sizeof row, "| %s | %d | %d | %d (%d) | %.1e | %.3f | %.3f | %.1f | %s |\n", table.name.c_str(),
                table.nq(), table.nu(), rowCount, rank, std::max({worstUdot, worstBody, worstContact}), us[0], us[1],
                us[1] / us[0], ballOnly);
  rows += row;

  // Where Capstan's time goes.
  const Parts p = capstan->parts(q, u, 1.0);
  char line[640];
  char articulated[96] = "- | - | -";
  if (p.articulatedBody > 0)
    std::snprintf(articulated, sizeof articulated, "%.3f | %.3f | %.3f", p.forwardDynamicsFactor, p.solveMassMatrix,
                  p.articulatedBody);
  std::snprintf(line, sizeof line,
                "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %.3f | %.3f |\n",
                table.name.c_str(), p.massMatrix, p.bias, p.appliedForces, p.constraintJacobian, p.constraintBias,
                p.cholesky, p.jacobianSolve, p.qr, p.rest(), p.rangeSpace, articulated, p.accelerations,
                p.forwardDynamics);
  partsRows += line;
  return true;
}

// ---------------------------------------------------------------- stepping

// Steps per batch for >= kBatchMicroseconds of thread CPU time.
long calibrate(Stepper& s, const std::vector<double>& q, const std::vector<double>& u) {
  for (long steps = 4;; steps *= 2) {
    s.start(q, u);
    const double t0 = threadMicroseconds();
    s.advance(steps);
    if (threadMicroseconds() - t0 > kBatchMicroseconds) return steps;
  }
}

struct StepTiming {
  double perStep = 0, perSecond = 0;  // us per step taken; us per simulated second
  double stepsPerSecond = 0, evaluationsPerStep = 0;
};

// Interleaved rounds over the steppers, each batch from (q, u).
std::vector<StepTiming> timeSteppers(const std::vector<Stepper*>& steppers, double h, const std::vector<double>& q,
                                     const std::vector<double>& u, int rounds) {
  const std::size_t n = steppers.size();
  std::vector<long> steps(n);
  for (std::size_t e = 0; e < n; ++e) steps[e] = calibrate(*steppers[e], q, u);
  std::vector<std::vector<double>> perStep(n), perSecond(n);
  std::vector<StepTiming> out(n);
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t e = 0; e < n; ++e) {
      steppers[e]->start(q, u);
      const double t0 = threadMicroseconds();
      steppers[e]->advance(steps[e]);
      const double us = threadMicroseconds() - t0;
      const double simulated = static_cast<double>(steps[e]) * h;
      perStep[e].push_back(us / static_cast<double>(steppers[e]->stepsTaken()));
      perSecond[e].push_back(us / simulated);
      out[e].stepsPerSecond = static_cast<double>(steppers[e]->stepsTaken()) / simulated;
      out[e].evaluationsPerStep = steppers[e]->evaluationsPerStep();
    }
  }
  for (std::size_t e = 0; e < n; ++e) {
    out[e].perStep = median(perStep[e]);
    out[e].perSecond = median(perSecond[e]);
  }
  return out;
}

bool steppingCase(const ConstrainedModel& table, int rounds, std::string& rows) {
  const std::unique_ptr<CapstanModel> capstan = capstanRegistry().at(table.capstanClass)(table);
  std::vector<double> q0, u0;
  capstan->initialState(q0, u0);
  capstan->assemble(q0, u0, kAssembly);
  const double h = 1e-3, accuracy = 1e-8;
  const long agreementSteps = 1000;

  // Agreement: the same method, step and projection in both (and with
  // Simbody's Ball-only cut).
  for (const CutModel cuts : {CutModel::BallAndAngles, CutModel::BallOnly}) {
    std::unique_ptr<Stepper> ours = capstan->rk4(h, kProjection), theirs = makeSimbodyRk4(table, cuts, h, kProjection);
    std::vector<double> qa, ua, qb, ub;
    ours->start(q0, u0);
    theirs->start(q0, u0);
    ours->advance(agreementSteps);
    theirs->advance(agreementSteps);
    ours->state(qa, ua);
    theirs->state(qb, ub);
    const double dq = normwise(qa, qb), du = normwise(ua, ub);
    const bool agree = dq < kTrajectoryAgreement && du < kTrajectoryAgreement;
    std::printf(
        "%s: Capstan RK4 vs Simbody RK4%s, both projecting to %g after every step, over %ld steps of %g s: "
        "q differs by %.1e, u by %.1e (normwise relative)%s\n",
        table.name.c_str(), cuts == CutModel::BallOnly ? " (Ball-only cut)" : "", kProjection, agreementSteps, h, dq,
        du, agree ? "" : ": DISAGREE");
    if (!agree) return false;
  }

  struct Entry {
    const char* name;
    std::unique_ptr<Stepper> stepper;
  };
  Entry engines[] = {
      {"Capstan RK4 + projection", capstan->rk4(h, kProjection)},
      {"Simbody RK4 + project()", makeSimbodyRk4(table, CutModel::BallAndAngles, h, kProjection)},
      {"  the same, Ball-only cut", makeSimbodyRk4(table, CutModel::BallOnly, h, kProjection)},
      {"Simbody RKM, fixed step", makeSimbodyMerson(table, CutModel::BallAndAngles, h, 0.0, kProjection)},
      {"  the same, Ball-only cut", makeSimbodyMerson(table, CutModel::BallOnly, h, 0.0, kProjection)},
      {"Capstan dopri5, tolerance 1e-8", capstan->dopri5(h, accuracy, kProjection)},
      {"Simbody RKM, accuracy 1e-8", makeSimbodyMerson(table, CutModel::BallAndAngles, h, accuracy, kProjection)},
      {"  the same, Ball-only cut", makeSimbodyMerson(table, CutModel::BallOnly, h, accuracy, kProjection)},
  };
  std::vector<Stepper*> all;
  for (Entry& e : engines) all.push_back(e.stepper.get());
  const std::vector<StepTiming> t = timeSteppers(all, h, q0, u0, rounds);
  for (std::size_t e = 0; e < t.size(); ++e) {
    std::printf("%s: %-31s %9.3f us/step, %9.1f us per simulated second (%.0f steps/s, %.2f evaluations a step)\n",
                table.name.c_str(), engines[e].name, t[e].perStep, t[e].perSecond, t[e].stepsPerSecond,
                t[e].evaluationsPerStep);
  }
  auto row = [&](const char* what, std::size_t ours, std::size_t theirs, std::size_t ballOnly) {
    char line[320];
    std::snprintf(line, sizeof line,
                  "| %s | %.3f (%.0f steps/s) | %.3f / %.3f (%.0f steps/s) | %.1f / %.1f | %.1f / %.1f |\n", what,
                  t[ours].perStep, t[ours].stepsPerSecond, t[theirs].perStep, t[ballOnly].perStep,
                  t[theirs].stepsPerSecond, t[theirs].perStep / t[ours].perStep, t[ballOnly].perStep / t[ours].perStep,
                  t[theirs].perSecond / t[ours].perSecond, t[ballOnly].perSecond / t[ours].perSecond);
    rows += line;
  };
  row("RK4, h = 1 ms (Simbody: RK4 written out + project())", 0, 1, 2);
  row("Simbody RKM, h = 1 ms (Capstan: RK4)", 0, 3, 4);
  row("error control 1e-8 (Capstan dopri5, Simbody RKM)", 5, 6, 7);
  return true;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress as it comes
  const int rounds = static_cast<int>(envNumber("CBENCH_ROUNDS", 21));
  std::printf("constraints_bench: %d rounds, load average %.2f at the start\n", rounds, loadAverage());
  std::string rows, partsRows, stepRows;
  bool ok = true;
  try {
    for (const ConstrainedModel& m : {fourBar(), contactChain(false), contactChain(true), threeLoop()})
      ok = forwardDynamicsCase(m, rounds, rows, partsRows) && ok;
    ok = steppingCase(fourBar(), rounds, stepRows) && ok;
  } catch (const std::exception& e) {  // a failed projection, a rejected Simbody step
    std::printf("constraints_bench: %s\n", e.what());
    return 1;
  }
  std::printf(
      "\n| model | nq | nu | rows (rank) | max rel. diff vs Simbody | Capstan us | Simbody us | "
      "Simbody / Capstan | Simbody, Ball-only cuts, us | Simbody (Ball-only) / Capstan |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n%s",
      rows.c_str());
  std::printf(
      "\nWhere Capstan's time goes (us per call, each part timed alone). The range-space method: the\n"
      "parts it calls, the rest, the whole call; the articulated-body path (models with few rows):\n"
      "forwardDynamics keeping its factor, one solveMassMatrix of a vector, the whole call; then\n"
      "accelerations as the solver chooses, and forwardDynamics alone:\n"
      "| model | massMatrix | bias | appliedForces | constraintJacobian | constraintBias | Cholesky of M | "
      "L^-1 G^T | pivoted QR | the rest | range space | forwardDynamics(..., k) | solveMassMatrix | "
      "articulated body | accelerations | forwardDynamics |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n%s",
      partsRows.c_str());
  std::printf(
      "\n| fourbar, per step | Capstan us/step | Simbody us/step (same rows / Ball-only cut) | "
      "Simbody / Capstan per step | per simulated second |\n|---|---|---|---|---|\n%s",
      stepRows.c_str());
  std::printf("load average %.2f at the end\n", loadAverage());
  return ok ? 0 : 1;
}
