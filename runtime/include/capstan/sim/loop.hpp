// The integration loop under every simulation (capstan::sim::simulate): it
// maps an integrator, an output interval and a tolerance onto the runtime's
// integrators (capstan/integrators.hpp, capstan/cvode.hpp) and observes the
// state on the output grid t = 0, dt, 2 dt, ..., tEnd.
//
// `Mechanical` is a mechanical system as in capstan/integrators.hpp: nq(),
// nu(), qdot(q, u, qdot), udot(t, q, u, udot), normalize(q) or project(q, u),
// coordinateName(i), optionally VectorQ / VectorU (fixed-size q and u) and
// udotDerivatives() (CVODE's exact Jacobian). Built with -DCAPSTAN_CVODE it
// also offers `cvode`, and needs SUNDIALS.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "capstan/integrators.hpp"
#include "capstan/sim/integrator.hpp"
#ifdef CAPSTAN_CVODE
#include "capstan/cvode.hpp"
#endif

namespace capstan::sim {

struct LoopOptions {
  double tStart = 0.0;                      // s; the run goes from tStart (0 but for a co-simulation step)
  double tEnd = 1.0;                        // s; ... to tEnd
  double dt = 0.01;                         // s; output interval, and the step of euler and rk4
  Integrator integrator = Integrator::dopri5;
  double tolerance = 1e-8;                  // dopri5, cvode: relative and absolute tolerance per step
  // Set (to the signal number) by a SIGINT/SIGTERM handler, or by an
  // embedder: the run stops after the row being recorded. Null: never.
  const volatile std::sig_atomic_t* stop = nullptr;
};

// The integrator's status, and the signal that stopped the run (0: none).
struct LoopStatus : IntegrationStatus {
  int signal = 0;
  // What the integrator did (`--stats`): its method, then (name, count)
  // pairs in print order.
  std::string method;
  std::vector<std::pair<std::string, double>> statistics;
};

// `--stats`' block, e.g.
//   capstan: statistics (cvode: BDF, Newton, dense LU, exact Jacobian):
//     steps                                 412
//     ...
inline std::string statisticsText(Integrator integrator, const LoopStatus& status) {
  std::string text = "capstan: statistics (" + std::string(name(integrator)) +
                     (status.method.empty() ? "" : ": " + status.method) + "):\n";
  std::size_t width = 0;
  for (const auto& [label, value] : status.statistics) width = std::max(width, label.size());
  for (const auto& [label, value] : status.statistics) {
    char number[32];
    std::snprintf(number, sizeof number, "%.10g", value);
    text += "  " + label + std::string(width + 2 - label.size(), ' ') + number + "\n";
  }
  return text;
}

// x = [q; u]: fixed-size when q and u are, else dynamic.
template <class Mechanical>
using StateVector = Eigen::Matrix<
    double,
    (MechanicalVectors<Mechanical>::Q::RowsAtCompileTime == Eigen::Dynamic ||
     MechanicalVectors<Mechanical>::U::RowsAtCompileTime == Eigen::Dynamic)
        ? Eigen::Dynamic
        // As ints: two different enumerations' sum is deprecated in C++20
        // (an error under -Wpedantic -Werror when nq != nu).
        : int(MechanicalVectors<Mechanical>::Q::RowsAtCompileTime) +
              int(MechanicalVectors<Mechanical>::U::RowsAtCompileTime),
    1>;

// Integrates from (t = opt.tStart, q, u) to opt.tEnd. record(t, x) (x = [q;
// u], after quaternion normalization or projection) is called at tStart,
// tStart + dt, tStart + 2 dt, ... and at tEnd; progress(fraction) after each record. On a failure (a
// non-finite state, a negligible step) the status says what, when and which
// coordinate; every state recorded before it stays recorded. When
// *opt.stop becomes nonzero the run ends after the next record:
// status.signal = *opt.stop, status.time the time of that last record.
template <class Mechanical, class Record, class Progress>
LoopStatus integrate(Mechanical& system, typename MechanicalVectors<Mechanical>::Q q,
                     typename MechanicalVectors<Mechanical>::U u, const LoopOptions& opt, Record&& record,
                     Progress&& progress) {
  LoopStatus status;
  if (!(opt.tEnd >= opt.tStart) || !(opt.dt > 0)) {
    status.ok = false;
    status.message = "t-end must be >= the start time and dt > 0";
    return status;
  }
  const double t0 = opt.tStart, span = opt.tEnd - opt.tStart;
  if (!builtWith(opt.integrator)) {
    status.ok = false;
    status.message = "this program was built without `" + std::string(name(opt.integrator)) +
                     "` (-DCAPSTAN_CVODE and SUNDIALS)";
    return status;
  }
  IntegratorSettings settings;
  settings.outputInterval = opt.dt;
  settings.stepSize = opt.integrator == Integrator::dopri5 ? 0.0 : opt.dt;  // dopri5: automatic first step
  settings.relativeTolerance = opt.tolerance;
  settings.absoluteTolerance = opt.tolerance;

  double lastRecorded = -1.0;
  struct Stopped {};  // thrown out of the integrator at a row boundary
  auto observe = [&](double t, const auto& x) {
    record(t, x);
    lastRecorded = t;
    progress(span > 0 ? (t - t0) / span : 1.0);
    if (opt.stop && *opt.stop) throw Stopped{};
  };
  using Vector = StateVector<Mechanical>;
  Vector x(q.size() + u.size());
  x << q, u;
  try {
    switch (opt.integrator) {
      case Integrator::euler:
        static_cast<IntegrationStatus&>(status) = semiImplicitEuler(system, t0, opt.tEnd, q, u, settings, observe);
        x << q, u;
        break;
      case Integrator::cvode: {
#ifdef CAPSTAN_CVODE
        FirstOrder<Mechanical, Vector> firstOrder(system);
        CvodeSettings cvodeSettings;
        cvodeSettings.outputInterval = opt.dt;
        cvodeSettings.relativeTolerance = opt.tolerance;
        cvodeSettings.absoluteTolerance = opt.tolerance;
        CvodeStatistics counts;
        static_cast<IntegrationStatus&>(status) = cvode(firstOrder, t0, opt.tEnd, x, cvodeSettings, observe, &counts);
        status.method = std::string(info(Integrator::cvode).method) + ", " +
                        (counts.exactJacobian ? "exact Jacobian" : "difference-quotient Jacobian");
        status.statistics = {{"steps", double(counts.steps)},
                             {"right-hand-side evaluations", double(counts.rhsEvaluations)},
                             {"  for difference-quotient Jacobians", double(counts.rhsEvaluationsForJacobian)},
                             {"Newton iterations", double(counts.newtonIterations)},
                             {"Newton convergence failures", double(counts.newtonConvergenceFailures)},
                             {"Jacobian evaluations", double(counts.jacobianEvaluations)},
                             {"LU factorizations", double(counts.linearSolverSetups)},
                             {"error-test failures", double(counts.errorTestFailures)},
                             {"projections", double(counts.projections)},
                             {"last order", double(counts.lastOrder)},
                             {"last step (s)", counts.lastStepSize}};
#endif
        break;
      }
      case Integrator::rk4:
      case Integrator::dopri5: {
        FirstOrder<Mechanical, Vector> firstOrder(system);
        static_cast<IntegrationStatus&>(status) =
            opt.integrator == Integrator::rk4 ? rk4(firstOrder, t0, opt.tEnd, x, settings, observe)
                                              : dormandPrince(firstOrder, t0, opt.tEnd, x, settings, observe);
        break;
      }
    }
    if (status.statistics.empty()) {
      status.method = info(opt.integrator).method;
      status.statistics = {{"steps", double(status.steps)}};
      if (opt.integrator == Integrator::dopri5) status.statistics.emplace_back("rejected steps", double(status.rejectedSteps));
      status.statistics.emplace_back("right-hand-side evaluations", double(status.derivativeEvaluations));
    }
    // Dense output observes t0 + k dt only; the final time may fall between.
    const double tiny = 1e-12 * std::max(1.0, std::abs(opt.tEnd));
    if (status.ok && lastRecorded < opt.tEnd - tiny) observe(opt.tEnd, x);
  } catch (const Stopped&) {
    status.ok = false;
    status.signal = *opt.stop;
    status.time = lastRecorded;
    status.message = "interrupted";
  }
  return status;
}

}  // namespace capstan::sim
