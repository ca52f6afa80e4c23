// The simulation loop shared by `capstan simulate` (compiled into the
// generated driver, fixed-size vectors) and `capstan simulate --interpret`
// (compiled into capstan, dynamic vectors): it maps the command line's
// integrator name, step and tolerance onto the runtime's integrators
// (capstan/integrators.hpp) and observes the state on the output grid.
//
// A Mechanical system as in capstan/integrators.hpp: nq(), nu(),
// qdot(q, u, qdot), udot(t, q, u, udot), normalize(q), coordinateName(i),
// and optionally VectorQ / VectorU (fixed-size q and u types).
// Depends only on Eigen, the standard library, POSIX write() and the
// runtime's integrators.hpp; built with -DCAPSTAN_CVODE, also on
// capstan/cvode.hpp and so SUNDIALS (`cvode`), and then a mechanical system
// with udotDerivatives() gives CVODE its exact Jacobian.
#pragma once

#include <unistd.h>

#include <Eigen/Core>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "capstan/integrators.hpp"
#ifdef CAPSTAN_CVODE
#include "capstan/cvode.hpp"
#endif

namespace capstan_sim {

struct LoopOptions {
  double tEnd = 1.0;                  // s; the run goes from t = 0 to tEnd
  double dt = 0.01;                   // s; output interval, and the step of euler and rk4
  std::string integrator = "dopri5";  // rk4 | euler (semi-implicit) | dopri5 | cvode
  double tolerance = 1e-8;            // dopri5, cvode: relative and absolute tolerance per step
  // Set (to the signal number) by a SIGINT/SIGTERM handler: the run stops
  // after the row being recorded. Null: never.
  const volatile std::sig_atomic_t* stop = nullptr;
};

// The integrators' status, and the signal that stopped the run (0: none).
struct LoopStatus : capstan::IntegrationStatus {
  int signal = 0;
  // What the integrator did (`--stats`): its method, then (name, count)
  // pairs in print order.
  std::string method;
  std::vector<std::pair<std::string, double>> statistics;
};

// `--stats`' block on stderr, e.g.
//   capstan: statistics (cvode: BDF, Newton, dense LU, exact Jacobian):
//     steps                                 412
//     ...
inline std::string statisticsText(const std::string& integrator, const LoopStatus& status) {
  std::string text = "capstan: statistics (" + integrator + (status.method.empty() ? "" : ": " + status.method) + "):\n";
  std::size_t width = 0;
  for (const auto& [name, value] : status.statistics) width = std::max(width, name.size());
  for (const auto& [name, value] : status.statistics) {
    char number[32];
    std::snprintf(number, sizeof number, "%.10g", value);
    text += "  " + name + std::string(width + 2 - name.size(), ' ') + number + "\n";
  }
  return text;
}

// CSV rows, written whole: numbers and text collect in a buffer that goes
// out (write(2)) only at the end of a row, so a file that a signal or a
// crash cuts short ends on a complete row. Numbers as %.15g.
class RowWriter {
 public:
  explicit RowWriter(int fd) : fd_(fd) {}
  ~RowWriter() { flush(); }
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  void text(const char* s, std::size_t n) {
    separate();
    buffer_.append(s, n);
  }
  void number(double v) {
    char b[32];
    const int n = std::snprintf(b, sizeof b, "%.15g", v);
    text(b, static_cast<std::size_t>(n));
  }
  // Ends the row (`data`: a data row, counted; else the header).
  void endRow(bool data = true) {
    buffer_ += '\n';
    fresh_ = true;
    complete_ = buffer_.size();
    if (data) ++pending_;
    if (complete_ >= kChunk) flush();
  }
  // Writes the complete rows buffered so far; false on a write error.
  bool flush() {
    std::size_t done = 0;
    while (done < complete_) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, complete_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed_ = true;
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    buffer_.erase(0, complete_);
    complete_ = 0;
    rows_ += pending_;
    pending_ = 0;
    return !failed_;
  }
  long rowsWritten() const { return rows_; }
  bool failed() const { return failed_; }

 private:
  static constexpr std::size_t kChunk = 1 << 16;
  void separate() {
    if (!fresh_) buffer_ += ',';
    fresh_ = false;
  }
  int fd_;
  std::string buffer_;
  std::size_t complete_ = 0;  // bytes of buffer_ that end a row
  long pending_ = 0, rows_ = 0;
  bool fresh_ = true, failed_ = false;
};

// `interrupted at t = 7.13; 71,332 rows written`
inline std::string interruptedMessage(double t, long rows) {
  std::string count = std::to_string(rows);
  for (int at = static_cast<int>(count.size()) - 3; at > 0; at -= 3) count.insert(static_cast<std::size_t>(at), ",");
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", t);
  return std::string("interrupted at t = ") + b + "; " + count + (rows == 1 ? " row" : " rows") + " written";
}

inline bool knownIntegrator(const std::string& name) {
  return name == "rk4" || name == "euler" || name == "dopri5" || name == "cvode";
}

// Whether this program was built with `name` (cvode needs -DCAPSTAN_CVODE).
inline bool builtWithIntegrator(const std::string& name) {
#ifdef CAPSTAN_CVODE
  return knownIntegrator(name);
#else
  return knownIntegrator(name) && name != "cvode";
#endif
}

// x = [q; u]: fixed-size when q and u are, else dynamic.
template <class Mechanical>
using StateVector = Eigen::Matrix<
    double,
    (capstan::MechanicalVectors<Mechanical>::Q::RowsAtCompileTime == Eigen::Dynamic ||
     capstan::MechanicalVectors<Mechanical>::U::RowsAtCompileTime == Eigen::Dynamic)
        ? Eigen::Dynamic
        // As ints: two different enumerations' sum is deprecated in C++20
        // (an error under -Wpedantic -Werror when nq != nu).
        : int(capstan::MechanicalVectors<Mechanical>::Q::RowsAtCompileTime) +
              int(capstan::MechanicalVectors<Mechanical>::U::RowsAtCompileTime),
    1>;

// Integrates from (t = 0, q, u) to opt.tEnd. record(t, x) (x = [q; u], after
// quaternion normalization) is called at t = 0, dt, 2 dt, ... and at tEnd;
// progress(fraction) after each record. On a failure (a non-finite state, a
// negligible step) the status says what, when and which coordinate; every
// state recorded before it stays recorded. When *opt.stop becomes nonzero
// the run ends after the next record: status.signal = *opt.stop, status.time
// the time of that last record.
template <class Mechanical, class Record, class Progress>
LoopStatus simulate(Mechanical& system, typename capstan::MechanicalVectors<Mechanical>::Q q,
                                    typename capstan::MechanicalVectors<Mechanical>::U u, const LoopOptions& opt,
                                    Record&& record, Progress&& progress) {
  LoopStatus status;
  if (!(opt.tEnd >= 0) || !(opt.dt > 0)) {
    status.ok = false;
    status.message = "t-end must be >= 0 and dt > 0";
    return status;
  }
  if (!knownIntegrator(opt.integrator)) {
    status.ok = false;
    status.message = "unknown integrator `" + opt.integrator + "`; use rk4, euler, dopri5 or cvode";
    return status;
  }
  if (!builtWithIntegrator(opt.integrator)) {
    status.ok = false;
    status.message = "this program was built without `" + opt.integrator + "` (-DCAPSTAN_CVODE and SUNDIALS)";
    return status;
  }
  capstan::IntegratorSettings settings;
  settings.outputInterval = opt.dt;
  settings.stepSize = opt.integrator == "dopri5" ? 0.0 : opt.dt;  // dopri5: automatic first step
  settings.relativeTolerance = opt.tolerance;
  settings.absoluteTolerance = opt.tolerance;

  double lastRecorded = -1.0;
  struct Stopped {};  // thrown out of the integrator at a row boundary
  auto observe = [&](double t, const auto& x) {
    record(t, x);
    lastRecorded = t;
    progress(opt.tEnd > 0 ? t / opt.tEnd : 1.0);
    if (opt.stop && *opt.stop) throw Stopped{};
  };
  using Vector = StateVector<Mechanical>;
  Vector x(q.size() + u.size());
  x << q, u;
  try {
    if (opt.integrator == "euler") {
      static_cast<capstan::IntegrationStatus&>(status) =
          capstan::semiImplicitEuler(system, 0.0, opt.tEnd, q, u, settings, observe);
      x << q, u;
#ifdef CAPSTAN_CVODE
    } else if (opt.integrator == "cvode") {
      capstan::FirstOrder<Mechanical, Vector> firstOrder(system);
      capstan::CvodeSettings cvodeSettings;
      cvodeSettings.outputInterval = opt.dt;
      cvodeSettings.relativeTolerance = opt.tolerance;
      cvodeSettings.absoluteTolerance = opt.tolerance;
      capstan::CvodeStatistics counts;
      static_cast<capstan::IntegrationStatus&>(status) =
          capstan::cvode(firstOrder, 0.0, opt.tEnd, x, cvodeSettings, observe, &counts);
      status.method = std::string("BDF, Newton, dense LU, ") +
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
    } else {
      capstan::FirstOrder<Mechanical, Vector> firstOrder(system);
      static_cast<capstan::IntegrationStatus&>(status) =
          opt.integrator == "rk4" ? capstan::rk4(firstOrder, 0.0, opt.tEnd, x, settings, observe)
                                  : capstan::dormandPrince(firstOrder, 0.0, opt.tEnd, x, settings, observe);
    }
    if (status.statistics.empty()) {
      status.method = opt.integrator == "dopri5" ? "Dormand-Prince 5(4), adaptive" : "fixed step";
      status.statistics = {{"steps", double(status.steps)}};
      if (opt.integrator == "dopri5") status.statistics.emplace_back("rejected steps", double(status.rejectedSteps));
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

}  // namespace capstan_sim
