// The program `capstan simulate`, `capstan eval` and `capstan bench` build
// around a generated model header: this unit, compiled with
// -DCAPSTAN_MODEL_CLASS=Name -include model.hpp (needs Eigen and the
// runtime), linked with the simulation engine that capstan compiles once
// (capstan/sim/program_run.hpp) and, for a model with cables, the cable
// path solver.
//
//   driver simulate [REQUEST]...     (capstan/sim/request.hpp: the one encoding)
//   driver eval STATE.txt [NAME=VALUE]...
//   driver bench STATE.txt SECONDS [NAME=VALUE]...
//
// `simulate` and `eval` are the engine's (capstan/sim/program.hpp says
// what they do): it runs the model through capstan::sim::Erased, the
// generated class behind capstan::sim::AnyModel, in the loop `capstan
// simulate --interpret` and embedding programs run too. INTEGRATOR `cvode`
// needs an engine built with CAPSTAN_CVODE (and SUNDIALS); with a header
// generated with --derivatives (and no constraints), CVODE gets the exact
// Jacobian from forwardDynamicsDerivatives.
//
// `bench` is this unit's: it times the generated class's own functions
// (no virtual calls). A model with constraints is built with
// -DCAPSTAN_CONSTRAINTS for bench's constraint timings. It prints `key
// v...` lines that capstan turns into JSON; errors: `capstan: error: ...`
// on stderr, exit status 1.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "capstan/sim/any_model.hpp"
#include "capstan/sim/program.hpp"
#ifdef CAPSTAN_CONSTRAINTS
#include "capstan/constraint_solver.hpp"
#endif

namespace {

using Model = capstan_models::CAPSTAN_MODEL_CLASS;

#ifdef CAPSTAN_CONSTRAINTS
using Solver = capstan::ConstraintSolver<Model>;
#endif

// ---------------------------------------------------------------- bench
// Tells the optimizer that `value` may be read and changed here, so a call
// that depends on it can neither be hoisted out of a loop nor deleted
// (Google Benchmark's DoNotOptimize/ClobberMemory).
template <class T>
inline void clobber(T& value) {
  asm volatile("" : : "r"(&value) : "memory");
}

// CPU time of this thread (s): unlike wall time, it does not count the time
// the thread waits while other processes run.
double threadSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Timing {
  double medianMicroseconds = 0;
  long callsPerBatch = 0;
  long batches = 0;
};

// Median time per call of `call` (µs) over batches of calls: the batch size
// is doubled until a batch takes >= 0.2 ms (well above the clock's
// resolution); then a warm-up of a tenth of the budget; then batches until
// `seconds` are spent (at least kMinBatches).
template <class Call>
Timing timeCalls(Call&& call, double seconds) {
  constexpr double kMinBatchSeconds = 2e-4;
  constexpr long kMinBatches = 11;
  auto batch = [&](long n) {
    const double start = threadSeconds();
    for (long i = 0; i < n; ++i) call();
    return threadSeconds() - start;
  };
  Timing timing;
  timing.callsPerBatch = 1;
  while (batch(timing.callsPerBatch) < kMinBatchSeconds && timing.callsPerBatch < (1L << 30)) timing.callsPerBatch *= 2;
  for (const double warmEnd = threadSeconds() + 0.1 * seconds; threadSeconds() < warmEnd;) batch(timing.callsPerBatch);
  std::vector<double> perCall;
  const double end = threadSeconds() + 0.9 * seconds;
  while (static_cast<long>(perCall.size()) < kMinBatches || threadSeconds() < end)
    perCall.push_back(batch(timing.callsPerBatch) / static_cast<double>(timing.callsPerBatch));
  std::nth_element(perCall.begin(), perCall.begin() + static_cast<long>(perCall.size() / 2), perCall.end());
  timing.medianMicroseconds = 1e6 * perCall[perCall.size() / 2];
  timing.batches = static_cast<long>(perCall.size());
  return timing;
}

// The bushings' evaluation (bushingStates: their forces, angles and rates
// from q and u), for models that have bushings (SPEC §6: `bushing_us`).
template <class M>
void timeBushings([[maybe_unused]] const M& model, [[maybe_unused]] typename M::Q& q, [[maybe_unused]] typename M::U& u,
                  [[maybe_unused]] double seconds, [[maybe_unused]] std::vector<std::pair<const char*, Timing>>& results) {
  if constexpr (capstan::sim::HasBushings<M>) {
    typename M::BushingStates states;
    results.emplace_back("bushing", timeCalls(
                                        [&] {
                                          clobber(q);
                                          clobber(u);
                                          model.bushingStates(q, u, states);
                                          clobber(states);
                                        },
                                        seconds));
  }
}

// The cables' evaluation (updateCables: every path continued from its
// last solution, tensions and body forces), for models that have cables
// (SPEC section 6: `cable_us`). At one state, so each call continues from
// its own solution: the cost of a converged update, no motion between calls.
template <class M>
bool timeCables([[maybe_unused]] const M& model, [[maybe_unused]] double t, [[maybe_unused]] typename M::Q& q,
                [[maybe_unused]] typename M::U& u, [[maybe_unused]] double seconds,
                [[maybe_unused]] std::vector<std::pair<const char*, Timing>>& results) {
  if constexpr (capstan::sim::HasCables<M>) {
    typename M::ExternalForces fext;
    if (model.updateCables(t, q, u, fext) >= 0) {
      std::cerr << "capstan: error: " << model.cableFailureMessage(t) << "\n";
      return false;
    }
    results.emplace_back("cable", timeCalls(
                                      [&] {
                                        clobber(q);
                                        clobber(u);
                                        model.updateCables(t, q, u, fext);
                                        clobber(fext);
                                      },
                                      seconds));
  }
  return true;
}

int bench(Model& model, capstan::sim::AnyModel& erased, int argc, char** argv) {
  const double seconds = std::strtod(argv[3], nullptr);
  if (!capstan::sim::applySettingArguments(erased, argc, argv, 4)) return 1;
  capstan::sim::AnyModel::Q qx;
  capstan::sim::AnyModel::U ux;
  erased.initialState(qx, ux);
  double t = 0;
  if (!capstan::sim::readStateFile(argv[2], t, qx, ux)) return 1;
  Model::Q q = qx;
  Model::U u = ux;
  Model::U udot;
  Model::MassMatrix M;
  Model::BodyPoses poses;
#ifdef CAPSTAN_CONSTRAINTS
  constexpr int kConstraintTimings = 2;
#else
  constexpr int kConstraintTimings = 0;
#endif
  const double share = seconds / (3 + (capstan::sim::HasBushings<Model> ? 1 : 0) +
                                  (capstan::sim::HasCables<Model> ? 1 : 0) + kConstraintTimings);
  const Timing fd = timeCalls(
      [&] {
        clobber(q);
        clobber(u);
        model.forwardDynamics(t, q, u, udot);
        clobber(udot);
      },
      share);
  const Timing mm = timeCalls(
      [&] {
        clobber(q);
        model.massMatrix(q, M);
        clobber(M);
      },
      share);
  const Timing kin = timeCalls(
      [&] {
        clobber(q);
        model.bodyPoses(q, poses);
        clobber(poses);
      },
      share);
  std::vector<std::pair<const char*, Timing>> results = {{"forward_dynamics", fd}, {"mass_matrix", mm}, {"kinematics", kin}};
  timeBushings(model, q, u, share, results);
  if (!timeCables(model, t, q, u, share, results)) return 1;
#ifdef CAPSTAN_CONSTRAINTS
  {
    // The constraint rows (G and gamma), and the constrained forward
    // dynamics (udot and multipliers) at the assembled state.
    Solver solver(model, capstan::constraintRowRanges(model));
    try {
      solver.project(q, u);
    } catch (const capstan::ProjectionFailure& e) {
      std::cerr << "capstan: error: the state cannot be assembled: " << e.what() << "\n";
      return 1;
    }
    Model::ConstraintJacobian G;
    Model::ConstraintVector gamma, lambda;
    results.emplace_back("constraint", timeCalls(
                                           [&] {
                                             clobber(q);
                                             clobber(u);
                                             model.constraintJacobian(q, G);
                                             model.constraintBias(q, u, gamma);
                                             clobber(G);
                                             clobber(gamma);
                                           },
                                           share));
    results.emplace_back("constrained_forward_dynamics", timeCalls(
                                                             [&] {
                                                               clobber(q);
                                                               clobber(u);
                                                               solver.accelerations(t, q, u, udot, lambda);
                                                               clobber(udot);
                                                               clobber(lambda);
                                                             },
                                                             share));
  }
#endif
  for (const auto& [key, timing] : results) {
    std::printf("%s_us %.17g\n", key, timing.medianMicroseconds);
    std::printf("%s_calls_per_batch %ld\n", key, timing.callsPerBatch);
    std::printf("%s_batches %ld\n", key, timing.batches);
  }
#if defined(__clang__)
  std::printf("compiler clang++ %s\n", __clang_version__);
#elif defined(__GNUC__)
  std::printf("compiler g++ %s\n", __VERSION__);
#else
  std::printf("compiler unknown\n");
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Model model;
  capstan::sim::Erased<Model> erased(model);
  if (argc >= 4 && std::string(argv[1]) == "bench") {
    // An exception out of the model (an external C++ function threw): a
    // message and status 1, never std::terminate.
    try {
      return bench(model, erased, argc, argv);
    } catch (const std::exception& e) {
      std::cerr << "capstan: error: a C++ function that the model calls threw an exception: " << e.what() << "\n";
      return 1;
    }
  }
  return capstan::sim::runProgram(erased, argc, argv);
}
