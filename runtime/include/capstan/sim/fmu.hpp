// The FMU of one generated class, whatever the FMI version: its instance,
// variables, modes, steps, states and derivatives, over the simulation
// engine compiled once (program_run.hpp) -- the same loop, integrators and
// constraint projection `capstan simulate` runs. capstan/sim/fmu2.hpp and
// fmu3.hpp put FMI 2.0's and 3.0's functions over it; `capstan fmu` builds
// one of them into the FMU's binary (compiler/templates/capstan_fmu.cpp),
// whose unit names the class and includes the variables capstan wrote for
// the FMU first:
//
//   #define CAPSTAN_FMU_CLASS capstan_models::Chain
//   #include "capstan_fmu_variables.hpp"   // namespace capstan::fmu_model
//   #include <capstan/sim/fmu2.hpp>        // or fmu3.hpp
//
// Value references (modelDescription.xml lists each with its name):
//
//   [0, P)               the runtime parameters' elements (tunable), in the manifest's order
//   [P, P + nq)          q      } the continuous states x = [q; u]
//   [P + nq, P + n)      u      }   (n = nq + nu)
//   [P + n, P + 2n)      der(q) = qdot, der(u) = udot
//   [P + 2n, P + 2n + K) outputs: the column table's columns after time, q and u
//   P + 2n + K           time (FMI 3.0's independent variable)
//
// Model Exchange: the derivatives are [qdot; udot] at (t, x): the forward
// dynamics. Co-Simulation: a step integrates with the model's integrator
// and tolerance (the experiment's tolerance where the importer gives one),
// projecting a constrained model onto its constraints after every step, as
// simulate does. No event indicators; no discrete states. Directional
// derivatives (Model Exchange) where the FMU was written with
// `--derivatives`.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "capstan/integrators.hpp"
#include "capstan/sim/any_model.hpp"
#include "capstan/sim/program.hpp"
#include "capstan/sim/request.hpp"

#if !defined(CAPSTAN_FMU_CLASS)
#error "define CAPSTAN_FMU_CLASS and include the FMU's variables before capstan/sim/fmu.hpp"
#endif

namespace capstan::fmu {

using Generated = CAPSTAN_FMU_CLASS;
using sim::AnyModel;
namespace vars = capstan::fmu_model;

// Both standards' statuses, in their order (fmi2OK ... fmi2Fatal, fmi3OK ... fmi3Fatal).
enum class Status { OK, Warning, Discard, Error, Fatal };

enum class Mode { Instantiated, Initialization, ContinuousTime, Event, StepComplete, StepFailed, Terminated };

// What an FMU state copies and restores.
struct Snapshot {
  double t = 0.0;
  AnyModel::Q q;
  AnyModel::U u;
  std::vector<double> parameters;
  Mode mode = Mode::Instantiated;
  bool statesSet = false;
};

class Instance {
 public:
  // `log(status, message)`: the importer's logger, in the version's form.
  Instance(bool modelExchange, std::function<void(Status, const std::string&)> log, bool logging)
      : model(generated), modelExchange(modelExchange), logging(logging), log_(std::move(log)) {
    if (const auto integrator = sim::parseIntegrator(vars::kIntegrator)) this->integrator = *integrator;
    setDefaults();
  }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  Generated generated;
  sim::Erased<Generated> model;
  const bool modelExchange;
  bool logging = false;
  Snapshot s;
  double tolerance = vars::kTolerance;
  sim::Integrator integrator = sim::Integrator::dopri5;

  long P() const { return long(vars::kParameters.size()); }
  long nq() const { return model.nq; }
  long n() const { return model.nq + model.nu; }
  long outputsEnd() const { return P() + 2 * n() + long(vars::kOutputs); }
  long timeReference() const { return outputsEnd(); }
  // FMI 3.0's event-indicator variables follow the time (FMI 2.0 has none:
  // its indicators are only fmi2GetEventIndicators').
  long indicatorsEnd() const { return timeReference() + 1 + long(vars::kEventIndicators); }

  // Says `message` through the importer's logger (errors always, the rest
  // with logging on); returns `status`.
  Status say(Status status, const std::string& message) const {
    if (log_ && (logging || status != Status::OK)) log_(status, message);
    return status;
  }
  Status wrongMode(const char* function) const {
    return say(Status::Error, std::string(function) + " may not be called in this state of the FMU");
  }

  // The parameters' start values and the start state they give.
  void setDefaults() {
    s.parameters.clear();
    for (const auto& p : vars::kParameters) {
      s.parameters.push_back(p.start);
      model.setParameter(p.name, p.start);
    }
    model.initialState(s.q, s.u);
    s.t = 0.0;
    s.statesSet = false;
    s.mode = Mode::Instantiated;
    tolerance = vars::kTolerance;
  }

  // Whether the binary's columns are those modelDescription.xml lists.
  bool columnsMatch() const { return sim::columnList(model, {}).size() == std::size_t(1 + n()) + vars::kOutputs; }

  Status setupExperiment(const char* f, bool toleranceDefined, double tol, double startTime) {
    if (toleranceDefined) {
      if (!(tol >= sim::kSmallestTolerance)) return say(Status::Error, std::string(f) + ": the tolerance must be at least 1e-14");
      tolerance = tol;
    }
    if (!std::isfinite(startTime)) return say(Status::Error, std::string(f) + ": the start time is not finite");
    s.t = startTime;
    return Status::OK;
  }

  // The start state from the parameters as set (q0 and u0 are
  // parameters), unless the importer set the states; then onto the
  // constraints, as simulate assembles it.
  Status exitInitialization(const char* f, Mode next) {
    if (!s.statesSet) {
      const double t = s.t;
      model.initialState(s.q, s.u);
      s.t = t;
    }
    const std::string failed = sim::assembleModel(model, s.q, s.u, stepRequest(s.t));
    if (!failed.empty()) return say(Status::Error, std::string(f) + ": " + failed);
    s.mode = next;
    return Status::OK;
  }

  void derivatives(AnyModel::Q& qdot, AnyModel::U& udot) {
    model.qdot(s.q, s.u, qdot);
    sim::accelerations(model, s.t, s.q, s.u, nullptr, udot);
  }

  // An importer's null array where it gives a count: refused, not followed.
  Status arrays(const char* f, std::size_t n, const void* a, const void* b = reinterpret_cast<const void*>(1)) const {
    if (n == 0 || (a && b)) return Status::OK;
    return say(Status::Error, std::string(f) + ": a null array for " + std::to_string(n) + " values");
  }

  Status get(const char* f, const std::uint32_t vr[], std::size_t nvr, double value[]) {
    if (arrays(f, nvr, vr, value) != Status::OK) return Status::Error;
    AnyModel::Q qdot;
    AnyModel::U udot;
    std::vector<double> row, indicators;  // computed once, where asked for
    bool haveDerivatives = false;
    for (std::size_t k = 0; k < nvr; ++k) {
      const long r = long(vr[k]);
      if (r < P()) {
        value[k] = s.parameters[std::size_t(r)];
      } else if (r < P() + nq()) {
        value[k] = s.q[r - P()];
      } else if (r < P() + n()) {
        value[k] = s.u[r - P() - nq()];
      } else if (r < P() + 2 * n()) {
        if (!haveDerivatives) derivatives(qdot, udot);
        haveDerivatives = true;
        const long d = r - P() - n();
        value[k] = d < nq() ? qdot[d] : udot[d - nq()];
      } else if (r < outputsEnd()) {
        if (row.empty()) row = sim::columnRow(model, s.t, s.q, s.u, {});
        value[k] = row.at(std::size_t(1 + n() + (r - P() - 2 * n())));
      } else if (r == timeReference()) {
        value[k] = s.t;
      } else if (r < indicatorsEnd() && vars::kFmiVersion == 3) {
        if (indicators.empty()) model.eventIndicators(s.t, s.q, s.u, indicators);
        value[k] = indicators.at(std::size_t(r - timeReference() - 1));
      } else {
        return say(Status::Error, std::string(f) + ": no variable has value reference " + std::to_string(r));
      }
    }
    return Status::OK;
  }

  Status set(const char* f, const std::uint32_t vr[], std::size_t nvr, const double value[]) {
    if (arrays(f, nvr, vr, value) != Status::OK) return Status::Error;
    for (std::size_t k = 0; k < nvr; ++k) {
      const long r = long(vr[k]);
      if (!std::isfinite(value[k]))
        return say(Status::Error, std::string(f) + ": value reference " + std::to_string(r) + ": the value is not finite");
      if (r < P()) {
        if (s.mode == Mode::ContinuousTime || s.mode == Mode::Terminated)
          return say(Status::Error, std::string(f) + ": the tunable parameter `" +
                                        std::string(vars::kParameters[std::size_t(r)].name) +
                                        "` changes in event mode or between steps, not here");
        s.parameters[std::size_t(r)] = value[k];
        model.setParameter(vars::kParameters[std::size_t(r)].name, value[k]);
      } else if (r < P() + n()) {
        if (s.mode != Mode::Instantiated && s.mode != Mode::Initialization)
          return say(Status::Error, std::string(f) + ": the states are set before initialization ends"
                                                      " (Model Exchange: with the function that sets the continuous states)");
        (r < P() + nq() ? s.q[r - P()] : s.u[r - P() - nq()]) = value[k];
        s.statesSet = true;
      } else if (r < indicatorsEnd()) {
        return say(Status::Error, std::string(f) + ": value reference " + std::to_string(r) +
                                      " is a derivative, an output or the time: computed, not set");
      } else {
        return say(Status::Error, std::string(f) + ": no variable has value reference " + std::to_string(r));
      }
    }
    return Status::OK;
  }

  // ------------------------------------------------------- Model Exchange

  Status checkStates(const char* f, std::size_t nx, const void* x = reinterpret_cast<const void*>(1)) const {
    if (nx == std::size_t(n())) return arrays(f, nx, x);
    return say(Status::Error, std::string(f) + ": " + std::to_string(nx) + " states asked for; the FMU has " +
                                  std::to_string(n()));
  }
  Status setTime(const char* f, double time) {
    if (!std::isfinite(time)) return say(Status::Error, std::string(f) + ": the time is not finite");
    s.t = time;
    return Status::OK;
  }
  Status setStates(const char* f, const double x[], std::size_t nx) {
    if (checkStates(f, nx, x) != Status::OK) return Status::Error;
    for (long k = 0; k < n(); ++k)
      if (!std::isfinite(x[k])) return say(Status::Error, std::string(f) + ": state " + std::to_string(k) + " is not finite");
    for (long k = 0; k < nq(); ++k) s.q[k] = x[k];
    for (long k = 0; k < model.nu; ++k) s.u[k] = x[nq() + k];
    s.statesSet = true;
    return Status::OK;
  }
  Status getStates(const char* f, double x[], std::size_t nx) const {
    if (checkStates(f, nx, x) != Status::OK) return Status::Error;
    for (long k = 0; k < nq(); ++k) x[k] = s.q[k];
    for (long k = 0; k < model.nu; ++k) x[nq() + k] = s.u[k];
    return Status::OK;
  }
  Status getDerivatives(const char* f, double dx[], std::size_t nx) {
    if (checkStates(f, nx, dx) != Status::OK) return Status::Error;
    AnyModel::Q qdot;
    AnyModel::U udot;
    derivatives(qdot, udot);
    for (long k = 0; k < nq(); ++k) dx[k] = qdot[k];
    for (long k = 0; k < model.nu; ++k) dx[nq() + k] = udot[k];
    for (long k = 0; k < n(); ++k)
      if (!std::isfinite(dx[k]))
        return say(Status::Error, std::string(f) + ": derivative " + std::to_string(k) + " is not finite at t = " +
                                      std::to_string(s.t));
    return Status::OK;
  }

  // The event indicators at the current state (the generated eventIndicators:
  // the compliant contacts' depths, the cables' contact and stretch).
  Status eventIndicators(const char* f, double z[], std::size_t ni) {
    if (ni != vars::kEventIndicators)
      return say(Status::Error, std::string(f) + ": " + std::to_string(ni) + " event indicators asked for; the FMU has " +
                                    std::to_string(vars::kEventIndicators));
    if (arrays(f, ni, z) != Status::OK) return Status::Error;
    std::vector<double> values;
    model.eventIndicators(s.t, s.q, s.u, values);
    if (values.size() != ni)
      return say(Status::Error, std::string(f) + ": the model gives " + std::to_string(values.size()) + " indicators");
    for (std::size_t k = 0; k < ni; ++k) {
      if (!std::isfinite(values[k]))
        return say(Status::Error, std::string(f) + ": event indicator " + std::to_string(k) + " (`" +
                                      model.eventIndicatorNames[k] + "`) is not finite at t = " + std::to_string(s.t) +
                                      (model.cableFailure() >= 0 ? "; " + std::string(model.cableFailureMessage(s.t)) : ""));
      z[k] = values[k];
    }
    return Status::OK;
  }

  // Where the FMU was written with `--derivatives`: the knowns are the
  // continuous states x = [q; u] (q raw: a quaternion's four numbers).
  // The derivatives' from J = d[qdot; udot]/dx, the one raw-coordinate
  // Jacobian CVODE's exact Jacobian uses too (FirstOrder::jacobian,
  // integrators.hpp): qdot's rows exactly, udot's from the generated
  // analytical derivatives (exact; along a quaternion's scaling direction
  // zero, as the dynamics read a quaternion through its rotation). The
  // outputs' from the generated outputDerivatives (exact).
  Status directionalDerivative(const char* f, const std::uint32_t unknowns[], std::size_t nUnknown,
                               const std::uint32_t knowns[], std::size_t nKnown, const double seed[], double sensitivity[]) {
    if (!vars::kDirectionalDerivatives || !modelExchange)
      return say(Status::Error, std::string(f) + ": not provided by this FMU (write it with `capstan fmu --derivatives`; "
                                                 "Model Exchange only)");
    if (arrays(f, nKnown, knowns, seed) != Status::OK || arrays(f, nUnknown, unknowns, sensitivity) != Status::OK)
      return Status::Error;
    Eigen::VectorXd dx = Eigen::VectorXd::Zero(n());
    for (std::size_t k = 0; k < nKnown; ++k) {
      const long r = long(knowns[k]);
      if (r < P() || r >= P() + n())
        return say(Status::Error, std::string(f) + ": known " + std::to_string(r) +
                                      " is not a continuous state (their value references are " + std::to_string(P()) +
                                      " to " + std::to_string(P() + n() - 1) + ")");
      dx[r - P()] += seed[k];
    }
    bool derivativesAsked = false, outputs = false;
    for (std::size_t k = 0; k < nUnknown; ++k) {
      const long r = long(unknowns[k]);
      if (r < P() + n() || r >= outputsEnd())
        return say(Status::Error, std::string(f) + ": unknown " + std::to_string(r) + " is neither a derivative nor an output");
      derivativesAsked = derivativesAsked || r < P() + 2 * n();
      outputs = outputs || r >= P() + 2 * n();
    }
    Eigen::VectorXd dxdot = Eigen::VectorXd::Zero(n());
    if (derivativesAsked) {
      sim::System<AnyModel, true> system(model);
      FirstOrder<sim::System<AnyModel, true>> first(system);
      Eigen::VectorXd x(n());
      x << s.q, s.u;
      Eigen::MatrixXd J(n(), n());
      first.jacobian(s.t, x, J);
      dxdot = J * dx;
    }
    // The outputs of a model with derivatives are the generated
    // outputDerivatives' rows: the model's outputs, each cable's three
    // columns, then the energies (the column table's order; such a model
    // has no constraint columns).
    Eigen::VectorXd dy;
    if (outputs) {
      Eigen::MatrixXd dy_dq, dy_du;
      model.outputDerivatives(s.t, s.q, s.u, dy_dq, dy_du);
      dy = dy_dq * dx.head(nq()) + dy_du * dx.tail(model.nu);
      if (dy.size() != long(vars::kOutputs))
        return say(Status::Error, std::string(f) + ": the model's output derivatives have " + std::to_string(dy.size()) +
                                      " rows for the FMU's " + std::to_string(vars::kOutputs) + " outputs");
    }
    for (std::size_t k = 0; k < nUnknown; ++k) {
      const long d = long(unknowns[k]) - P() - n();  // into [qdot; udot; outputs]
      sensitivity[k] = d < n() ? dxdot[d] : dy[d - n()];
      if (!std::isfinite(sensitivity[k]))
        return say(Status::Error, std::string(f) + ": the derivative of unknown " + std::to_string(unknowns[k]) +
                                      " is not finite at t = " + std::to_string(s.t) +
                                      (model.cableFailure() >= 0 ? "; " + std::string(model.cableFailureMessage(s.t)) : ""));
    }
    return Status::OK;
  }

  // -------------------------------------------------------- Co-Simulation

  // One step from t to t + h; on success the FMU's time is t + h.
  Status doStep(const char* f, double t, double h) {
    const double tolerance = 1e-9 * std::max(1.0, std::abs(s.t));
    if (!(std::abs(t - s.t) <= tolerance))
      return say(Status::Error, std::string(f) + ": the communication point " + std::to_string(t) +
                                    " is not the FMU's time " + std::to_string(s.t));
    if (!(h >= 0) || !std::isfinite(h)) return say(Status::Error, std::string(f) + ": the step size must be a finite number >= 0");
    if (h == 0) return Status::OK;
    const sim::Result r = sim::advanceModel(model, s.q, s.u, stepRequest(t + h));
    if (!r.ok()) {
      s.mode = Mode::StepFailed;
      const std::string why = r.thrown ? "a C++ function that the model calls threw: " + r.thrown->what
                              : !r.stopped.empty() ? r.stopped
                                                   : r.status.message;
      return say(Status::Error, std::string(f) + ": the step from t = " + std::to_string(s.t) + " failed: " + why);
    }
    s.t = t + h;
    return Status::OK;
  }

  // --------------------------------------------------------------- states

  // An FMU state is a Snapshot behind the importer's opaque pointer
  // `*slot`: filled in place when the importer hands one back, else new.
  static void keep(const Snapshot& state, void** slot) {
    if (auto* s = static_cast<Snapshot*>(*slot)) *s = state;
    else *slot = new Snapshot(state);
  }
  Status getState(const char* f, void** slot) const {
    if (!slot) return say(Status::Error, std::string(f) + ": no place for the state");
    keep(s, slot);
    return Status::OK;
  }
  Status setState(const char* f, const void* state) {
    if (!state) return say(Status::Error, std::string(f) + ": no state");
    s = *static_cast<const Snapshot*>(state);
    for (std::size_t p = 0; p < s.parameters.size(); ++p) model.setParameter(vars::kParameters[p].name, s.parameters[p]);
    return Status::OK;
  }
  static Status freeState(void** slot) {
    if (slot) {
      delete static_cast<Snapshot*>(*slot);
      *slot = nullptr;
    }
    return Status::OK;
  }
  Status stateSize(const char* f, const void* state, std::size_t* size) const {
    if (!state || !size) return say(Status::Error, std::string(f) + ": no state");
    *size = serializedSize(*static_cast<const Snapshot*>(state));
    return Status::OK;
  }
  static std::size_t serializedSize(const Snapshot& state) {
    return sizeof kStateTag + 3 * sizeof(std::int64_t) +
           sizeof(double) * std::size_t(1 + state.q.size() + state.u.size() + Eigen::Index(state.parameters.size())) +
           2 * sizeof(std::int64_t);
  }
  Status serialize(const char* f, const void* opaque, char bytes[], std::size_t size) const {
    if (!opaque || !bytes) return say(Status::Error, std::string(f) + ": no state or no buffer");
    const Snapshot& state = *static_cast<const Snapshot*>(opaque);
    if (size < serializedSize(state)) return say(Status::Error, std::string(f) + ": the buffer is too small");
    char* at = bytes;
    const auto put = [&](const void* data, std::size_t count) {
      std::memcpy(at, data, count);
      at += count;
    };
    put(kStateTag, sizeof kStateTag);
    const std::int64_t sizes[3] = {state.q.size(), state.u.size(), std::int64_t(state.parameters.size())};
    put(sizes, sizeof sizes);
    put(&state.t, sizeof state.t);
    put(state.q.data(), sizeof(double) * std::size_t(state.q.size()));
    put(state.u.data(), sizeof(double) * std::size_t(state.u.size()));
    put(state.parameters.data(), sizeof(double) * state.parameters.size());
    const std::int64_t flags[2] = {std::int64_t(state.mode), state.statesSet ? 1 : 0};
    put(flags, sizeof flags);
    return Status::OK;
  }
  Status deserialize(const char* f, const char bytes[], std::size_t size, void** slot) const {
    if (!bytes || !slot) return say(Status::Error, std::string(f) + ": no bytes or no place for the state");
    Snapshot state;
    const char* at = bytes;
    const char* end = bytes + size;
    const auto take = [&](void* data, std::size_t count) {
      if (std::size_t(end - at) < count) return false;
      std::memcpy(data, at, count);
      at += count;
      return true;
    };
    char tag[sizeof kStateTag];
    std::int64_t sizes[3] = {}, flags[2] = {};
    if (!take(tag, sizeof tag) || std::memcmp(tag, kStateTag, sizeof tag) != 0 || !take(sizes, sizeof sizes) ||
        sizes[0] != model.nq || sizes[1] != model.nu || sizes[2] != P())
      return say(Status::Error, std::string(f) + ": the bytes are not a state of this FMU");
    state.q.resize(model.nq);
    state.u.resize(model.nu);
    state.parameters.resize(std::size_t(P()));
    if (!take(&state.t, sizeof state.t) || !take(state.q.data(), sizeof(double) * std::size_t(state.q.size())) ||
        !take(state.u.data(), sizeof(double) * std::size_t(state.u.size())) ||
        !take(state.parameters.data(), sizeof(double) * state.parameters.size()) || !take(flags, sizeof flags) ||
        flags[0] < 0 || flags[0] > std::int64_t(Mode::Terminated))
      return say(Status::Error, std::string(f) + ": the bytes are cut short or damaged");
    state.mode = Mode(flags[0]);
    state.statesSet = flags[1] != 0;
    keep(state, slot);
    return Status::OK;
  }

 private:
  // A state's bytes: this tag, the sizes, then t, q, u, the parameters and the mode.
  static constexpr char kStateTag[8] = {'C', 'A', 'P', 'S', 'F', 'M', 'U', '1'};

  // The Request of a co-simulation step (or of the assembly) from the
  // instance's time to `tEnd`.
  sim::Request stepRequest(double tEnd) const {
    sim::Request r;
    r.loop.tStart = s.t;
    r.loop.tEnd = tEnd;
    r.loop.integrator = integrator;
    r.loop.tolerance = tolerance;
    r.loop.dt = vars::kInterval;  // euler's and rk4's step: the experiment's Interval (0: the whole step)
    return r;
  }

  std::function<void(Status, const std::string&)> log_;
};

// body(instance) for an instance that may be null, with C++ exceptions (an
// external C++ function that threw) as an Error and its message.
template <class Body>
Status guarded(void* instance, const char* function, Body&& body) {
  auto* c = static_cast<Instance*>(instance);
  if (!c) return Status::Error;
  try {
    return body(*c);
  } catch (const sim::ModelStopped& e) {
    return c->say(Status::Error, std::string(function) + ": " + e.message);
  } catch (const std::exception& e) {
    return c->say(Status::Error, std::string(function) + ": a C++ function that the model calls threw: " + e.what());
  } catch (...) {
    return c->say(Status::Error, std::string(function) + ": a C++ function that the model calls threw");
  }
}

// An instance, or null with the reason logged by `refused`: the token must
// be this FMU's, and Model Exchange must be one of its interfaces.
template <class Refused>
Instance* instantiate(const char* token, bool modelExchange, std::function<void(Status, const std::string&)> log,
                      bool logging, const char* function, Refused&& refused) {
  if (!token || std::string(token) != vars::kGuid)
    return refused(std::string(function) + ": the token `" + (token ? token : "(null)") + "` is not this FMU's `" +
                   vars::kGuid + "`"),
           nullptr;
  if (modelExchange && !vars::kModelExchange)
    return refused(std::string(function) + ": this FMU has no Model Exchange interface: " + vars::kNoModelExchange), nullptr;
  try {
    auto* c = new Instance(modelExchange, std::move(log), logging);
    if (!c->columnsMatch()) {
      delete c;
      return refused(std::string(function) + ": the model's columns do not match modelDescription.xml; build the FMU again"),
             nullptr;
    }
    return c;
  } catch (const std::exception& e) {
    return refused(std::string(function) + ": " + e.what()), nullptr;
  }
}

}  // namespace capstan::fmu
