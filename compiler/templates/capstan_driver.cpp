// The program `capstan simulate`, `capstan eval` and `capstan bench` build
// around a generated model header. Compiled with
// -DCAPSTAN_MODEL_CLASS=Name -include model.hpp; needs Eigen and the runtime
// (capstan/sim/).
//
//   driver simulate [REQUEST]...     (capstan/sim/request.hpp: the one encoding)
//   driver eval STATE.txt [NAME=VALUE]...
//   driver bench STATE.txt SECONDS [NAME=VALUE]...
//
// `simulate` decodes its request and runs capstan::sim::simulate
// (capstan/sim/simulate.hpp), the loop `capstan simulate --interpret` and
// embedding programs run too. INTEGRATOR `cvode` needs a driver built with
// -DCAPSTAN_CVODE (and SUNDIALS: -lsundials_cvode); with a header generated
// with --derivatives (and no constraints), CVODE gets the exact Jacobian
// from forwardDynamicsDerivatives.
//
// `eval` prints every record of capstan::sim::evaluate (capstan/sim/evaluate.hpp),
// the function `capstan eval --interpret` calls in process. A model with
// constraints is built with -DCAPSTAN_CONSTRAINTS for bench's constraint timings.
//
// STATE.txt (written by capstan): `time T`, `q v...`, `u v...`; what is absent
// keeps the model's q0/u0. `fext v...` (6 per body: [n; f] about the body
// origin, in World) makes eval call forwardDynamics with these external
// forces; without it eval calls forwardDynamics without them. Both overloads
// are in every driver, so that an eval with forces and one without share one
// build. Eval and bench print `key v...` lines (full precision; eval's
// `key#element` for one body's, frame's, ...) that capstan turns into JSON. Errors: `capstan: error: ...` on
// stderr, exit status 1. SIGINT or SIGTERM during `simulate` ends the run on a
// whole row: `capstan: interrupted at t = ...; N rows written` on stderr,
// exit status 128 + the signal.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <csignal>
#include <cstring>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capstan/force_elements.hpp"
#include "capstan/sim/evaluate.hpp"
#include "capstan/sim/guard.hpp"
#include "capstan/sim/request.hpp"
#ifdef CAPSTAN_CONSTRAINTS
#include "capstan/constraint_solver.hpp"
#endif

namespace {

using Model = capstan_models::CAPSTAN_MODEL_CLASS;

// Sets runtime parameter elements, (name, value) pairs.
bool applySettings(Model& model, const std::vector<std::pair<std::string, double>>& settings) {
  const std::string unknown = capstan::sim::applySettings(model, settings);
  if (!unknown.empty()) std::cerr << "capstan: error: unknown parameter setting `" << unknown << "`\n";
  return unknown.empty();
}

// The same from `NAME=VALUE` arguments argv[first..] (request.hpp's encoding).
bool applySettings(Model& model, int argc, char** argv, int first) {
  std::vector<std::pair<std::string, double>> settings;
  std::string error;
  for (int i = first; i < argc; ++i) {
    auto setting = capstan::sim::parseSetting(argv[i], error);
    if (!setting) {
      std::cerr << "capstan: error: " << error << "\n";
      return false;
    }
    settings.push_back(std::move(*setting));
  }
  return applySettings(model, settings);
}

template <class M>
constexpr bool kHasCables = requires { M::ncables; };

#ifdef CAPSTAN_CONSTRAINTS
using Solver = capstan::ConstraintSolver<Model>;
#endif

volatile std::sig_atomic_t g_stop = 0;

extern "C" void onStop(int sig) { g_stop = sig; }

// SIGINT/SIGTERM stop the run at the next row. On Linux the driver also goes
// when capstan goes, however capstan ended (even SIGKILL).
void stopOnSignals() {
  struct sigaction sa {};
  sa.sa_handler = onStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
#if defined(__linux__)
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) g_stop = SIGTERM;  // capstan was already gone
#endif
}

int simulate(Model& model, int argc, char** argv) {
  std::string error;
  const auto request = capstan::sim::fromArguments(std::vector<std::string_view>(argv + 2, argv + argc), error);
  if (!request) {
    std::cerr << "capstan: error: " << error << "\n";
    return 1;
  }
  if (!applySettings(model, request->settings)) return 1;
  if (request->run.columns.constraintErrors && !capstan::sim::HasConstraints<Model>) {
    std::cerr << "capstan: error: the model has no constraints\n";
    return 1;
  }
  capstan::sim::Request run = request->run;
  stopOnSignals();
  run.loop.stop = &g_stop;
  const std::string& output = request->output;
  const int fd = output == "-" ? STDOUT_FILENO : ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::cerr << "capstan: error: cannot write `" << output << "`: " << std::strerror(errno) << "\n";
    return 1;
  }
  int lastPercent = -1;
  const auto progress = [&](double fraction) {
    const int percent = static_cast<int>(fraction * 100);
    if (!request->progress || percent == lastPercent) return;
    lastPercent = percent;
    const int width = 40, filled = percent * width / 100;
    std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), percent);
    std::fflush(stderr);
  };
  capstan::sim::Result result;
  {
    capstan::sim::RowWriter out(fd);
    // A crash in the model's code (an external C++ function): the complete
    // rows go to disk, then the signal takes its course and capstan says
    // what it was. exit() from it, or a step that never returns past the
    // time limit: the rows, and this program says so.
    capstan::sim::GuardOptions guarded;
    guarded.wallClockLimit = run.wallClockLimit;
    const capstan::sim::RunGuard guard(out, std::move(guarded));
    result = capstan::sim::simulate(model, run, out, progress);
  }
  if (fd != STDOUT_FILENO) ::close(fd);
  if (request->progress) std::fprintf(stderr, "\n");
  if (request->stats && !result.status.statistics.empty())
    std::cerr << capstan::sim::statisticsText(run.loop.integrator, result.status);
  // Where capstan looks for the force law that was not finite or the call
  // that threw (as eval's state file), and then says what it found; an
  // exception it cannot locate, it reports with the driver's words.
  if (result.thrown && capstan::sim::writeFaultFile(request->faultFile, result)) return capstan::sim::exitStatus(result);
  std::cerr << capstan::sim::report(result, output);
  capstan::sim::writeFaultFile(request->faultFile, result);
  return capstan::sim::exitStatus(result);
}

// Reads STATE.txt into t, q, u (which hold the initial state on entry) and,
// when it has them, the external forces (`external` set).
bool readState(const char* path, double& t, Model::Q& q, Model::U& u, Model::ExternalForces* fext = nullptr,
               bool* external = nullptr) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "capstan: error: cannot read `" << path << "`\n";
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string key;
    ss >> key;
    if (key == "time") ss >> t;
    if (key == "q")
      for (int i = 0; i < Model::nq; ++i) ss >> q[i];
    if (key == "u")
      for (int i = 0; i < Model::nu; ++i) ss >> u[i];
    if (key == "fext" && fext && external) {
      for (auto& F : *fext)
        for (int k = 0; k < 6; ++k) ss >> F[k];
      *external = true;
    }
  }
  return true;
}

// Every record of capstan::sim::evaluate at the state, one `KEY[#ELEMENT]
// v...` line each (full precision), which capstan turns into JSON; with
// the external forces when the state has them.
int eval(Model& model, int argc, char** argv) {
  if (!applySettings(model, argc, argv, 3)) return 1;
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  double t = 0;
  Model::ExternalForces fext{};
  bool external = false;
  if (!readState(argv[2], t, q, u, &fext, &external)) return 1;
  try {
    capstan::sim::evaluate(model, t, q, u, external ? &fext : nullptr, true,
                           [](std::string_view key, int element, const std::vector<double>& values) {
                             std::printf("%s", capstan::sim::evalKey(key, element).c_str());
                             for (double v : values) std::printf(" %.17g", v);
                             std::printf("\n");
                           });
  } catch (const capstan::sim::ModelStopped& e) {
    std::cerr << "capstan: error: " << e.message << "\n";
    return 1;
  }
  return 0;
}

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

template <class M>
constexpr bool kHasBushings = requires { M::nbushings; };

// The bushings' evaluation (bushingStates: their forces, angles and rates
// from q and u), for models that have bushings (SPEC §6: `bushing_us`).
template <class M>
void timeBushings([[maybe_unused]] const M& model, [[maybe_unused]] typename M::Q& q, [[maybe_unused]] typename M::U& u,
                  [[maybe_unused]] double seconds, [[maybe_unused]] std::vector<std::pair<const char*, Timing>>& results) {
  if constexpr (kHasBushings<M>) {
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
  if constexpr (kHasCables<M>) {
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

int bench(Model& model, int argc, char** argv) {
  const double seconds = std::strtod(argv[3], nullptr);
  if (!applySettings(model, argc, argv, 4)) return 1;
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  double t = 0;
  if (!readState(argv[2], t, q, u)) return 1;
  Model::U udot;
  Model::MassMatrix M;
  Model::BodyPoses poses;
#ifdef CAPSTAN_CONSTRAINTS
  constexpr int kConstraintTimings = 2;
#else
  constexpr int kConstraintTimings = 0;
#endif
  const double share = seconds / (3 + (kHasBushings<Model> ? 1 : 0) + (kHasCables<Model> ? 1 : 0) + kConstraintTimings);
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
    Solver solver(model, capstan::sim::constraintRowRanges(model));
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
  const std::string mode = argc > 1 ? argv[1] : "";
  // An exception out of the model (an external C++ function threw): a
  // message and status 1, never std::terminate.
  try {
    if (mode == "simulate") return simulate(model, argc, argv);
    if (mode == "eval" && argc >= 3) return eval(model, argc, argv);
    if (mode == "bench" && argc >= 4) return bench(model, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "capstan: error: a C++ function that the model calls threw an exception: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: driver simulate [REQUEST]... | eval STATE "
               "[NAME=VALUE]... | bench STATE SECONDS [NAME=VALUE]...\n";
  return 2;
}
