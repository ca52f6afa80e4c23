// capstan::sim::simulate: the one way a model runs, from a time 0 state to
// tEnd, recording the column table (columns.hpp) at every output time.
// `capstan simulate` (the driver program built around a generated header),
// `capstan simulate --interpret` (the interpreter's adapter, in process) and
// embedding programs all call it:
//
//   capstan_models::Pendulum model;
//   capstan::sim::Request request;    // dopri5 at 1e-8, rows every 0.01 s
//   request.loop.tEnd = 2.0;
//   capstan::sim::RowWriter csv(STDOUT_FILENO);
//   capstan::sim::Result r = capstan::sim::simulate(model, request, csv);
//
// Around the integration loop (loop.hpp) it assembles a constrained model's
// initial state, projects onto the constraints after every step (or
// stabilizes by Baumgarte's terms), stops at a bushing's gimbal lock or a
// lost cable path, keeps the first state whose udot was not finite, and
// stops at a row boundary when asked to. Everything it finds comes back in
// the Result, as values; report() and exitStatus() say it the way
// `capstan simulate` does.
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capstan/constraint_solver.hpp"
#include "capstan/force_elements.hpp"
#include "capstan/sim/columns.hpp"
#include "capstan/sim/csv.hpp"
#include "capstan/sim/evaluating.hpp"
#include "capstan/sim/loop.hpp"
#include "capstan/sim/model.hpp"
#include "capstan/sim/table.hpp"

namespace capstan::sim {

struct Request {
  LoopOptions loop;
  ColumnOptions columns;
  double baumgarte = 0.0;            // s; > 0: Baumgarte stabilization with this time constant
                                     // instead of projection after each step (constraints)
  double constraintTolerance = 0.0;  // m or rad; > 0: the projection's tolerance, else the solver's default
  bool exactJacobian = true;         // cvode: the model's derivatives where it has them and they
                                     // cover udot (no constraints; a cable wrap with friction has
                                     // none: set false, as `capstan simulate` does); else difference
                                     // quotients
  double wallClockLimit = 0.0;       // s; > 0: the run stops at the first evaluation of the model after
                                     // this much wall-clock time (`--timeout`), its rows kept
};

// The first finite state whose udot was not finite (an integrator may
// reject that step and go on): where a caller looks for the force law that
// made it, if the run fails.
struct FaultState {
  double t = 0.0;
  std::vector<double> q, u;
};

// An exception out of the model's code (an external C++ function that
// threw) ends the run: the state the model was evaluated at, and what was
// thrown. A caller that can evaluate the model again at that state (capstan,
// with its interpreter) finds the call that threw.
struct Thrown {
  FaultState state;
  std::string what;                // the exception's what(), if it is a std::exception
  std::exception_ptr exception;   // rethrow it to look at its type
};

struct Result {
  LoopStatus status;                    // the integrator's: ok, message, time, signal, statistics
  std::string stopped;                  // why the model stopped the run, if it did
  int gimbalLock = -1;                  // the bushing (index in bushingNames) whose gimbal lock stopped it
  std::optional<FaultState> nonFinite;  // the first non-finite udot's state, if any
  std::optional<Thrown> thrown;         // the exception that ended the run, if one did
  long rows = 0;                        // data rows written
  std::string writeError;               // the system's reason, if writing the rows failed
  bool ok() const { return status.ok && stopped.empty() && !thrown && writeError.empty(); }
};

// The state (t, q, u) as a FaultState.
template <class Q, class U>
FaultState faultState(double t, const Q& q, const U& u) {
  return FaultState{t, {q.data(), q.data() + q.size()}, {u.data(), u.data() + u.size()}};
}

using capstan::constraintRowRanges;

// The constraint solver and multipliers of a constrained model (none for
// a model that cannot have constraints).
template <class T>
struct Constrained {
  using Solver = int;
  using Lambda = int;
};
template <class T>
  requires HasConstraints<T>
struct Constrained<T> {
  using Solver = ConstraintSolver<T>;
  using Lambda = typename T::ConstraintVector;
};

// The model as the runtime integrators' mechanical system
// (capstan/integrators.hpp), with the model's faults turned into
// ModelStopped and, with `Derivatives`, CVODE's exact Jacobian.
template <Model M, bool Derivatives = false>
class System {
 public:
  using VectorQ = typename M::Q;
  using VectorU = typename M::U;

  explicit System(const M& model) : model_(model) {}

  int nq() const { return int(model_.nq); }
  int nu() const { return int(model_.nu); }
  void qdot(const VectorQ& q, const VectorU& u, VectorQ& qd) const { model_.qdot(q, u, qd); }
  void udot(double t, const VectorQ& q, const VectorU& u, VectorU& ud) {
    // A stage state made of an earlier non-finite udot (kept in nonFinite):
    // NaN again, for the integrator to reject the step, rather than a
    // cable path or a bushing asked to make sense of it.
    if (!q.allFinite() || !u.allFinite()) {
      ud.resize(u.size());
      ud.setConstant(std::numeric_limits<double>::quiet_NaN());
      return;
    }
    lastTime_ = t;
    if (limit_ > 0 && std::chrono::steady_clock::now() > deadline_) {
      char text[96];
      std::snprintf(text, sizeof text, "the simulation ran longer than %g s (`--timeout`) and was stopped at t = %.6g",
                    limit_, t);
      throw ModelStopped{text};
    }
    if constexpr (HasBushings<M>) {
      double pitch = 0.0;
      if (const int k = model_.gimbalLock(q, u, pitch); k >= 0)
        return refuse(t, gimbalLockMessage(model_.bushingNames[std::size_t(k)], pitch, t), ud, k);
    }
    // A crash in the model's code (an external C++ function) reports this state (guard.hpp).
    Evaluating state{t, q.data(), u.data(), int(q.size()), int(u.size())};
    const EvaluatingScope evaluatingNow(state);
    try {
      if constexpr (HasConstraints<M>) {
        if (solver_) {
          solver_->accelerations(t, q, u, ud, lambda_);
        } else {
          model_.forwardDynamics(t, q, u, ud);
        }
      } else {
        model_.forwardDynamics(t, q, u, ud);
      }
    } catch (...) {
      threwAt_ = faultState(t, q, u);  // simulate() makes it the Result's `thrown`
      throw;
    }
    if constexpr (HasCables<M>) {
      if (int(model_.ncables) > 0 && model_.cableFailure() >= 0)
        return refuse(t, std::string(model_.cableFailureMessage(t)), ud);
    }
    if (!nonFinite_ && !ud.allFinite()) nonFinite_ = faultState(t, q, u);
  }
  // After each step: quaternions normalized and, for a constrained model
  // unless Baumgarte stabilizes instead, q and u projected onto the constraints.
  void project(VectorQ& q, VectorU& u) {
    model_.normalizeQuaternions(q);
    if constexpr (HasConstraints<M>) {
      if (!solver_ || !projecting_) return;
      try {
        solver_->project(q, u);
      } catch (const ProjectionFailure& e) {
        char t[32];
        std::snprintf(t, sizeof t, "%.17g", lastTime_);
        throw ModelStopped{"projecting onto the constraints failed after the step to t = " + std::string(t) +
                           ": constraint `" + constraintOfRow(e.row) + "`: " + e.what()};
      }
    } else {
      (void)u;
    }
  }
  using MatrixU = typename M::MassMatrix;
  // d udot / dq (along the tangent space) and d udot / du: CVODE's Jacobian.
  void udotDerivatives(double t, const VectorQ& q, const VectorU& u, MatrixU& dudot_dq, MatrixU& dudot_du)
    requires Derivatives
  {
    MatrixU dudot_dtau;
    model_.forwardDynamicsDerivatives(t, q, u, dudot_dq, dudot_du, dudot_dtau);
  }
  // The CSV column of state entry i (x = [q; u]).
  std::string coordinateName(int i) const {
    return std::string(i < nq() ? std::string_view(model_.qNames[std::size_t(i)])
                                : std::string_view(model_.uNames[std::size_t(i - nq())]));
  }

  const std::optional<FaultState>& nonFinite() const { return nonFinite_; }
  // The state of the evaluation that threw, if one did.
  const std::optional<FaultState>& threwAt() const { return threwAt_; }
  // From now, at most `seconds` of wall-clock time (> 0).
  void limitWallClock(double seconds) {
    limit_ = seconds;
    if (seconds > 0)
      deadline_ = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  }
  // The last state the model refused (a bushing at gimbal lock, a cable
  // path lost): its time and why. udot is NaN there, so an adaptive
  // integrator rejects the step and tries a shorter one -- a trial step
  // may reach far past where the model holds -- and a fixed-step one
  // stops. When the run then fails at or before that time, this is why.
  // A solution that hugs the edge of what the model allows (a cable's end
  // settling onto its surface) would have the integrator creep along it,
  // refused again and again: after kRefusalsPerRow refusals between two
  // rows the run stops with the model's reason.
  struct Refusal {
    double t = 0.0;
    std::string message;
    int bushing = -1;  // at gimbal lock (index in bushingNames), if that was the reason
  };
  static constexpr long kRefusalsPerRow = 100;
  const std::optional<Refusal>& refused() const { return refused_; }
  void rowRecorded() { refusalsAtRow_ = refusals_; }

  // Constrained models: assembles (q, u) onto the constraints and from then
  // on solves udot with them. Throws ModelStopped if it cannot.
  void constrain([[maybe_unused]] VectorQ& q, [[maybe_unused]] VectorU& u, [[maybe_unused]] const Request& request) {
    if constexpr (HasConstraints<M>) {
      if (model_.constraintInfo.size() == 0) return;
      ConstraintSettings settings;
      if (request.baumgarte > 0) settings.baumgarteTimeConstant = request.baumgarte;
      if (request.constraintTolerance > 0) settings.tolerance = request.constraintTolerance;
      solver_.emplace(model_, constraintRowRanges(model_), settings);
      projecting_ = !(request.baumgarte > 0);
      // Assembly: the nearest state (to first order) that satisfies the
      // constraints, from the given one.
      try {
        solver_->project(q, u);
      } catch (const ProjectionFailure& e) {
        throw ModelStopped{"the initial state cannot be assembled: constraint `" + constraintOfRow(e.row) +
                           "`: " + e.what()};
      }
    }
  }

 private:
  void refuse(double t, std::string message, VectorU& ud, int bushing = -1) {
    if (++refusals_ - refusalsAtRow_ > kRefusalsPerRow)
      throw ModelStopped{message + " (refused in " + std::to_string(kRefusalsPerRow) +
                             " trial steps since the last row: the solution keeps reaching it)",
                         bushing};
    refused_ = Refusal{t, std::move(message), bushing};
    ud.resize(int(model_.nu));
    ud.setConstant(std::numeric_limits<double>::quiet_NaN());
  }
  // The name of the constraint that owns position-error row `row`.
  std::string constraintOfRow([[maybe_unused]] int row) const {
    if constexpr (HasConstraints<M>) {
      for (const auto& c : model_.constraintInfo)
        if (row >= c.holonomicRow && row < c.holonomicRow + c.holonomic) return std::string(c.name);
    }
    return "?";
  }
  const M& model_;
  std::optional<typename Constrained<M>::Solver> solver_;
  typename Constrained<M>::Lambda lambda_{};
  bool projecting_ = true;
  double lastTime_ = 0.0;
  std::optional<FaultState> nonFinite_, threwAt_;
  std::optional<Refusal> refused_;
  long refusals_ = 0, refusalsAtRow_ = 0;
  double limit_ = 0.0;
  std::chrono::steady_clock::time_point deadline_{};
};

// Why the run cannot start from q: a coordinate so large that double
// precision resolves it more coarsely than the tolerance (|q| eps > tol),
// so that steps smaller than that would leave it where it is while its
// velocity changes (q0 = 1e308); empty when there is none.
template <Model M>
std::string unresolvablePosition(const M& model, const typename M::Q& q, double tolerance) {
  constexpr double eps = std::numeric_limits<double>::epsilon();
  for (int i = 0; i < int(model.nq); ++i) {
    if (!(std::abs(q[i]) * eps > tolerance) || !std::isfinite(q[i])) continue;
    char text[160];
    std::snprintf(text, sizeof text, "starts at %.6g, where double precision resolves only steps of %.2g, coarser "
                  "than the tolerance %.2g: it could not move by less", q[i], std::abs(q[i]) * eps, tolerance);
    return "coordinate `" + std::string(model.qNames[std::size_t(i)]) + "` " + text +
           "; start it nearer zero (an angle repeats every 2 pi)";
  }
  return {};
}

struct NoProgress {
  void operator()(double) const {}
};

namespace simulate_detail {

// The run from (q, u) over request.loop's [tStart, tEnd] that simulate and
// advance share: the model as an integrator's system (with CVODE's exact
// Jacobian where it has one), assembled onto its constraints, integrated
// with record(t, x) at each output time; what stops it goes into `result`.
// `rowThrewAt`: set by `record` when the row's outputs threw.
template <Model M, class Record, class Progress>
void run(const M& model, typename M::Q& q, typename M::U& u, const Request& request, Record&& record,
         Progress&& progress, const std::optional<FaultState>& rowThrewAt, Result& result) {
  result.stopped = unresolvablePosition(model, q, request.loop.tolerance);
  const auto run = [&](auto& system) {
    if (!result.stopped.empty()) return;
    system.limitWallClock(request.wallClockLimit);
    try {
      system.constrain(q, u, request);
      const auto recordRow = [&](double t, const auto& x) {
        record(t, x);
        system.rowRecorded();
      };
      result.status = integrate(system, q, u, request.loop, recordRow, progress);
      // A refusal in a trial step that the integrator then shortened is
      // behind it; one at or after the last state it kept is why it failed.
      if (const auto& r = system.refused(); r && !result.status.ok && result.status.signal == 0 &&
                                            r->t >= result.status.time) {
        result.stopped = r->message;
        result.gimbalLock = r->bushing;
      }
    } catch (const ModelStopped& e) {
      result.stopped = e.message;
      result.gimbalLock = e.bushing;
    } catch (...) {
      // Thrown by the model's code at a state we know: the run ends there,
      // its rows kept. Anything else is not the model's: it propagates.
      const std::optional<FaultState>& at = rowThrewAt ? rowThrewAt : system.threwAt();
      if (!at) throw;
      result.thrown = Thrown{*at, {}, std::current_exception()};
      try {
        throw;
      } catch (const std::exception& e) {
        result.thrown->what = e.what();
      } catch (...) {
        result.thrown->what = "an exception that is no std::exception";
      }
      result.status.time = at->t;
    }
    if (result.stopped.empty() && !result.thrown) result.nonFinite = system.nonFinite();
  };
  bool exact = false;
  if constexpr (HasDerivatives<M>) {
    exact = request.exactJacobian && request.loop.integrator == Integrator::cvode && derivativesAvailable(model);
    if constexpr (HasConstraints<M>) exact = exact && model.constraintInfo.size() == 0;
    if (exact) {
      System<M, true> system(model);
      run(system);
    }
  }
  if (!exact) {
    System<M, false> system(model);
    run(system);
  }
}

}  // namespace simulate_detail

// Writes the column table's header, then integrates from (q, u) at t = 0
// (after assembly, for a constrained model) to request.loop.tEnd, writing
// one row per output time into `out`: a RowWriter (csv.hpp, a CSV file)
// or a RowTable (table.hpp, in memory). Every row written stays written,
// whatever stops the run; an exception out of the model (an external C++
// function that threw) propagates, with the rows before it flushed by
// `out`'s owner. progress(fraction of tEnd) after each row.
template <Model M, class Rows, class Progress = NoProgress>
Result simulate(const M& model, typename M::Q q, typename M::U u, const Request& request, Rows& out,
                Progress&& progress = {}) {
  Result result;
  columnNames(model, request.columns, [&](std::string_view name, std::string_view) { out.text(name); });
  out.endRow(false);
  std::optional<FaultState> rowThrewAt;  // the row whose outputs threw, if one did
  const auto record = [&](double t, const auto& x) {
    const typename M::Q qs = x.head(int(model.nq));
    const typename M::U us = x.segment(int(model.nq), int(model.nu));
    Evaluating state{t, qs.data(), us.data(), int(qs.size()), int(us.size())};  // a crash in an output reports it
    const EvaluatingScope evaluatingNow(state);
    try {
      columnValues(Sample<M>{model, t, qs, us}, request.columns, [&](double v) { out.number(v); });
    } catch (const ModelStopped&) {
      throw;
    } catch (...) {
      rowThrewAt = faultState(t, qs, us);  // the row stays unfinished: never written
      throw;
    }
    out.endRow();
  };
  simulate_detail::run(model, q, u, request, record, progress, rowThrewAt, result);
  if (!out.flush()) result.writeError = out.error();
  result.rows = out.rowsWritten();
  return result;
}

// Advances (q, u) from request.loop.tStart to tEnd as simulate does between
// two rows -- its integrator, step (euler, rk4: dt) and tolerance, assembly and projection onto
// the constraints, the model's faults as values -- and records nothing: a
// co-simulation step (an FMU's doStep). On return (q, u) is the state at
// tEnd, or, when the Result is not ok, the last state the integrator kept.
template <Model M>
Result advance(const M& model, typename M::Q& q, typename M::U& u, const Request& request) {
  Result result;
  Request step = request;
  // A fixed-step integrator steps by dt (its step and its output interval
  // both), kept where it is finer than the span, so that a step of an FMU
  // takes simulate's steps; an adaptive one records the end only.
  const double span = request.loop.tEnd - request.loop.tStart;
  const bool fixed = request.loop.integrator == Integrator::euler || request.loop.integrator == Integrator::rk4;
  if (!(fixed && request.loop.dt > 0 && request.loop.dt < span)) step.loop.dt = std::max(span, 1e-300);
  const std::optional<FaultState> none;
  typename M::Q qEnd = q;
  typename M::U uEnd = u;
  const auto keep = [&](double, const auto& x) {
    qEnd = x.head(int(model.nq));
    uEnd = x.segment(int(model.nq), int(model.nu));
  };
  simulate_detail::run(model, q, u, step, keep, NoProgress{}, none, result);
  q = qEnd;
  u = uEnd;
  return result;
}

// The same from the model's initial state (its joints' q0 and u0).
template <Model M, class Rows, class Progress = NoProgress>
Result simulate(const M& model, const Request& request, Rows& out, Progress&& progress = {}) {
  typename M::Q q;
  typename M::U u;
  model.initialState(q, u);
  return simulate(model, std::move(q), std::move(u), request, out, std::forward<Progress>(progress));
}

// What capstan says of an exception out of the model that it cannot place
// at a call in the model.
inline std::string thrownReport(double time, std::string_view what, long rows) {
  char t[32];
  std::snprintf(t, sizeof t, "%.17g", time);
  return "capstan: error: a C++ function that the model calls threw an exception at t = " + std::string(t) + ": " +
         std::string(what) + "; " + rowCount(rows) + " written\n";
}

// What `capstan simulate` says of a run on stderr (empty for a completed
// one), e.g. `capstan: interrupted at t = 7.13; 71,332 rows written`;
// `output` names the CSV in a write error.
inline std::string report(const Result& r, std::string_view output) {
  char t[32];
  std::snprintf(t, sizeof t, "%.6g", r.status.time);
  if (r.status.signal != 0)
    return "capstan: interrupted at t = " + std::string(t) + "; " + rowCount(r.rows) + " written\n";
  if (!r.writeError.empty())
    return "capstan: error: cannot write `" + std::string(output) + "`: " + r.writeError + "; " + rowCount(r.rows) +
           " written\n";
  if (!r.stopped.empty()) return "capstan: error: " + r.stopped + "; " + rowCount(r.rows) + " written\n";
  if (r.thrown) return thrownReport(r.thrown->state.t, r.thrown->what, r.rows);
  if (!r.status.ok) return "capstan: error: " + r.status.message + "\n";
  return {};
}

// The fault file (the driver's request's faultFile): how a driver program
// hands capstan the state where its run failed -- the first non-finite
// udot, or the evaluation that threw -- for capstan's interpreter to find
// the force law or the call at that state, at its line in the model:
//
//   nonfinite|threw
//   time T
//   q q1 q2 ...
//   u u1 u2 ...
//   rows N
//   what TEXT...           (threw: the exception's what(), to the end of the file)
//
// or the bushing whose gimbal lock stopped the run, for capstan to point
// at its declaration:
//
//   gimbal K               (K: its index in bushingNames)
struct FaultReport {
  FaultState state;
  std::optional<std::string> thrown;  // the exception's what(), if the model threw
  long rows = 0;                      // the data rows written before it
  int gimbalLock = -1;                // the bushing at gimbal lock (a `gimbal` file: nothing else is set)
  int crashSignal = 0;                // the model's code crashed with it at `state` (guard.hpp writes it)
};

// Writes the Result's fault, if it has one a caller can locate; false if
// it has none or the file cannot be written.
inline bool writeFaultFile(const std::string& path, const Result& r) {
  if (r.gimbalLock >= 0 && !path.empty()) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return false;
    std::fprintf(f, "gimbal %d\n", r.gimbalLock);
    return std::fclose(f) == 0;
  }
  const bool failedInStep = !r.status.ok && r.status.signal == 0 && r.stopped.empty() && !r.thrown;
  const FaultState* s = r.thrown ? &r.thrown->state : failedInStep && r.nonFinite ? &*r.nonFinite : nullptr;
  if (!s || path.empty()) return false;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "%s\ntime %.17g\nq", r.thrown ? "threw" : "nonfinite", s->t);
  for (double v : s->q) std::fprintf(f, " %.17g", v);
  std::fprintf(f, "\nu");
  for (double v : s->u) std::fprintf(f, " %.17g", v);
  std::fprintf(f, "\nrows %ld\n", r.rows);
  if (r.thrown) std::fprintf(f, "what %s", r.thrown->what.c_str());
  return std::fclose(f) == 0;
}

// Reads a fault file of a model with nq coordinates and nu speeds;
// nullopt if there is none or it is not whole.
inline std::optional<FaultReport> readFaultFile(const std::string& path, std::size_t nq, std::size_t nu) {
  std::ifstream in(path);
  FaultReport r;
  std::string kind, word;
  in >> kind;
  if (kind == "gimbal") {
    in >> r.gimbalLock;
    if (!in || r.gimbalLock < 0) return std::nullopt;
    return r;
  }
  r.state.q.resize(nq);
  r.state.u.resize(nu);
  if (kind == "crashed") {
    // Written by a signal handler: each number as the hexadecimal bits of its double.
    const auto number = [&](double& v) {
      std::string bits;
      in >> bits;
      std::uint64_t b = 0;
      const auto [end, error] = std::from_chars(bits.data(), bits.data() + bits.size(), b, 16);
      if (error != std::errc() || end != bits.data() + bits.size()) in.setstate(std::ios::failbit);
      std::memcpy(&v, &b, sizeof v);
    };
    std::size_t n = 0, m = 0;
    in >> r.crashSignal >> word;
    number(r.state.t);
    in >> word >> n;
    for (double& v : r.state.q) number(v);
    in >> word >> m;
    for (double& v : r.state.u) number(v);
    in >> word >> r.rows;
    if (!in || n != nq || m != nu || r.crashSignal <= 0) return std::nullopt;
    return r;
  }
  in >> word >> r.state.t >> word;
  for (double& v : r.state.q) in >> v;
  in >> word;
  for (double& v : r.state.u) in >> v;
  in >> word >> r.rows;
  if (!in || (kind != "threw" && kind != "nonfinite")) return std::nullopt;
  if (kind == "threw") {
    in >> word;
    in.get();  // the space after `what`
    r.thrown = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return r;
}

// 0 for a completed run, 128 + the signal for an interrupted one, else 1.
inline int exitStatus(const Result& r) {
  if (r.status.signal != 0) return 128 + r.status.signal;
  return r.ok() ? 0 : 1;
}

}  // namespace capstan::sim
