// An FMI 2.0 FMU's functions (Model Exchange and Co-Simulation) for one
// generated class: what `capstan fmu` builds into the FMU's binary
// (compiler/templates/capstan_fmu2.cpp), over the simulation engine
// compiled once (program_run.hpp) -- the same loop, integrators and
// constraint projection `capstan simulate` runs. The unit names the class
// and includes the variables capstan wrote for this FMU first:
//
//   #define CAPSTAN_FMU_CLASS capstan_models::Chain
//   #include "capstan_fmu_variables.hpp"   // namespace capstan::fmu_model
//   #include <capstan/sim/fmu2.hpp>
//
// Value references (modelDescription.xml lists each with its name):
//
//   [0, P)               the runtime parameters' elements (tunable), in the manifest's order
//   [P, P + nq)          q      } the continuous states x = [q; u]
//   [P + nq, P + n)      u      }   (n = nq + nu)
//   [P + n, P + 2n)      der(q) = qdot, der(u) = udot
//   [P + 2n, P + 2n + K) outputs: the column table's columns after time, q and u
//
// Model Exchange: GetDerivatives is [qdot; udot] at (t, x): the forward
// dynamics. Co-Simulation: DoStep integrates with the model's integrator
// and tolerance (SetupExperiment's tolerance where given), projecting a
// constrained model onto its constraints after every step, as simulate
// does. No event indicators; no discrete states. Directional derivatives
// (Model Exchange) where the FMU was written with `--derivatives`.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "capstan/fmi/fmi2.h"
#include "capstan/sim/any_model.hpp"
#include "capstan/sim/program.hpp"
#include "capstan/sim/request.hpp"

#if !defined(CAPSTAN_FMU_CLASS)
#error "define CAPSTAN_FMU_CLASS and include the FMU's variables before capstan/sim/fmu2.hpp"
#endif

namespace capstan::fmu2 {

using Generated = CAPSTAN_FMU_CLASS;
using sim::AnyModel;
namespace vars = capstan::fmu_model;

enum class Mode { Instantiated, Initialization, ContinuousTime, Event, StepComplete, StepFailed, Terminated };

// What GetFMUstate copies and SetFMUstate restores.
struct Snapshot {
  double t = 0.0;
  AnyModel::Q q;
  AnyModel::U u;
  std::vector<double> parameters;
  Mode mode = Mode::Instantiated;
  bool statesSet = false;
};

struct Instance {
  Instance() : model(generated) {}
  Generated generated;
  sim::Erased<Generated> model;
  std::string name;
  fmi2Type type = fmi2CoSimulation;
  fmi2CallbackFunctions callbacks{};
  bool logging = false;
  Snapshot s;
  double tolerance = vars::kTolerance;
  sim::Integrator integrator = sim::Integrator::dopri5;

  int P() const { return int(vars::kParameters.size()); }
  int n() const { return model.nq + model.nu; }
};

// `text` with each % doubled: the logger takes a format.
inline std::string literal(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

inline fmi2Status say(Instance* c, fmi2Status status, const std::string& message) {
  if (c && c->callbacks.logger && (c->logging || status != fmi2OK))
    c->callbacks.logger(c->callbacks.componentEnvironment, c->name.c_str(), status,
                        status == fmi2OK ? "logAll" : "logStatusError", literal(message).c_str());
  return status;
}

inline void setDefaults(Instance& c) {
  c.s.parameters.clear();
  for (const auto& p : vars::kParameters) {
    c.s.parameters.push_back(p.start);
    c.model.setParameter(p.name, p.start);
  }
  c.model.initialState(c.s.q, c.s.u);
  c.s.t = 0.0;
  c.s.statesSet = false;
  c.s.mode = Mode::Instantiated;
}

// Runs `body` for a component that may be null, with C++ exceptions (an
// external C++ function that threw) as fmi2Error and its message.
template <class Body>
fmi2Status guarded(fmi2Component component, const char* function, Body&& body) {
  auto* c = static_cast<Instance*>(component);
  if (!c) return fmi2Error;
  try {
    return body(*c);
  } catch (const sim::ModelStopped& e) {
    return say(c, fmi2Error, std::string(function) + ": " + e.message);
  } catch (const std::exception& e) {
    return say(c, fmi2Error, std::string(function) + ": a C++ function that the model calls threw: " + e.what());
  } catch (...) {
    return say(c, fmi2Error, std::string(function) + ": a C++ function that the model calls threw");
  }
}

inline fmi2Status wrongMode(Instance& c, const char* function) {
  return say(&c, fmi2Error, std::string(function) + " may not be called in this state of the FMU");
}

inline void derivatives(Instance& c, AnyModel::Q& qdot, AnyModel::U& udot) {
  c.model.qdot(c.s.q, c.s.u, qdot);
  sim::accelerations(c.model, c.s.t, c.s.q, c.s.u, nullptr, udot);
}

// The Request of a co-simulation step from the instance's time to `tEnd`.
inline sim::Request stepRequest(const Instance& c, double tEnd) {
  sim::Request r;
  r.loop.tStart = c.s.t;
  r.loop.tEnd = tEnd;
  r.loop.integrator = c.integrator;
  r.loop.tolerance = c.tolerance;
  return r;
}

// A state's bytes: a tag, the sizes, then t, q, u, the parameters and the mode.
constexpr char kStateTag[8] = {'C', 'A', 'P', 'S', 'F', 'M', 'U', '2'};
inline std::size_t serializedSize(const Snapshot& s) {
  return sizeof kStateTag + 3 * sizeof(std::int64_t) +
         sizeof(double) * std::size_t(1 + s.q.size() + s.u.size() + Eigen::Index(s.parameters.size())) +
         2 * sizeof(std::int64_t);
}

}  // namespace capstan::fmu2

extern "C" {

using namespace capstan::fmu2;

const char* fmi2GetTypesPlatform(void) { return "default"; }
const char* fmi2GetVersion(void) { return "2.0"; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t, const fmi2String[]) {
  return guarded(c, "fmi2SetDebugLogging", [&](Instance& i) {
    i.logging = loggingOn != fmi2False;
    return fmi2OK;
  });
}

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID, fmi2String,
                              const fmi2CallbackFunctions* functions, fmi2Boolean, fmi2Boolean loggingOn) {
  Instance* c = nullptr;
  try {
    c = new Instance();
  } catch (...) {
    return nullptr;
  }
  c->name = instanceName ? instanceName : "";
  c->type = fmuType;
  if (functions) c->callbacks = *functions;
  c->logging = loggingOn != fmi2False;
  const auto refuse = [&](const std::string& why) -> fmi2Component {
    say(c, fmi2Error, "fmi2Instantiate: " + why);
    delete c;
    return nullptr;
  };
  if (!fmuGUID || std::string(fmuGUID) != vars::kGuid)
    return refuse(std::string("the GUID `") + (fmuGUID ? fmuGUID : "(null)") + "` is not this FMU's `" + vars::kGuid + "`");
  if (fmuType == fmi2ModelExchange && !vars::kModelExchange)
    return refuse(std::string("this FMU has no Model Exchange interface: ") + vars::kNoModelExchange);
  if (fmuType != fmi2ModelExchange && fmuType != fmi2CoSimulation) return refuse("unknown fmuType");
  const auto integrator = capstan::sim::parseIntegrator(vars::kIntegrator);
  if (integrator) c->integrator = *integrator;
  try {
    setDefaults(*c);
    // The outputs this binary computes are the ones modelDescription.xml lists.
    const auto columns = capstan::sim::columnList(c->model, {});
    if (columns.size() != std::size_t(1 + c->n()) + vars::kOutputs)
      return refuse("the model's columns do not match modelDescription.xml; build the FMU again");
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  return c;
}

void fmi2FreeInstance(fmi2Component c) { delete static_cast<Instance*>(c); }

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance, fmi2Real startTime,
                               fmi2Boolean, fmi2Real) {
  return guarded(c, "fmi2SetupExperiment", [&](Instance& i) {
    if (i.s.mode != Mode::Instantiated) return wrongMode(i, "fmi2SetupExperiment");
    if (toleranceDefined) {
      if (!(tolerance >= capstan::sim::kSmallestTolerance))
        return say(&i, fmi2Error, "fmi2SetupExperiment: the tolerance must be at least 1e-14");
      i.tolerance = tolerance;
    }
    if (!std::isfinite(startTime)) return say(&i, fmi2Error, "fmi2SetupExperiment: the start time is not finite");
    i.s.t = startTime;
    return fmi2OK;
  });
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
  return guarded(c, "fmi2EnterInitializationMode", [&](Instance& i) {
    if (i.s.mode != Mode::Instantiated) return wrongMode(i, "fmi2EnterInitializationMode");
    i.s.mode = Mode::Initialization;
    return fmi2OK;
  });
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  return guarded(c, "fmi2ExitInitializationMode", [&](Instance& i) {
    if (i.s.mode != Mode::Initialization) return wrongMode(i, "fmi2ExitInitializationMode");
    // The start state from the parameters as set (q0 and u0 are parameters),
    // unless the importer set the states; then onto the constraints.
    if (!i.s.statesSet) {
      const double t = i.s.t;
      i.model.initialState(i.s.q, i.s.u);
      i.s.t = t;
    }
    const std::string failed = capstan::sim::assembleModel(i.model, i.s.q, i.s.u, stepRequest(i, i.s.t));
    if (!failed.empty()) return say(&i, fmi2Error, "fmi2ExitInitializationMode: " + failed);
    i.s.mode = i.type == fmi2ModelExchange ? Mode::Event : Mode::StepComplete;
    return fmi2OK;
  });
}

fmi2Status fmi2Terminate(fmi2Component c) {
  return guarded(c, "fmi2Terminate", [&](Instance& i) {
    i.s.mode = Mode::Terminated;
    return fmi2OK;
  });
}

fmi2Status fmi2Reset(fmi2Component c) {
  return guarded(c, "fmi2Reset", [&](Instance& i) {
    setDefaults(i);
    i.tolerance = vars::kTolerance;
    return fmi2OK;
  });
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[]) {
  return guarded(c, "fmi2GetReal", [&](Instance& i) {
    const int P = i.P(), nq = i.model.nq, n = i.n();
    AnyModel::Q qdot;
    AnyModel::U udot;
    std::vector<double> row;
    bool haveDerivatives = false;
    for (size_t k = 0; k < nvr; ++k) {
      const long r = long(vr[k]);
      if (r < P) {
        value[k] = i.s.parameters[std::size_t(r)];
      } else if (r < P + nq) {
        value[k] = i.s.q[r - P];
      } else if (r < P + n) {
        value[k] = i.s.u[r - P - nq];
      } else if (r < P + 2 * n) {
        if (!haveDerivatives) derivatives(i, qdot, udot);
        haveDerivatives = true;
        const long d = r - P - n;
        value[k] = d < nq ? qdot[d] : udot[d - nq];
      } else if (r < P + 2 * n + long(vars::kOutputs)) {
        if (row.empty()) row = capstan::sim::columnRow(i.model, i.s.t, i.s.q, i.s.u, {});
        value[k] = row.at(std::size_t(1 + n + (r - P - 2 * n)));
      } else {
        return say(&i, fmi2Error, "fmi2GetReal: no variable has value reference " + std::to_string(r));
      }
    }
    return fmi2OK;
  });
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[]) {
  return guarded(c, "fmi2SetReal", [&](Instance& i) {
    const int P = i.P(), nq = i.model.nq, n = i.n();
    for (size_t k = 0; k < nvr; ++k) {
      const long r = long(vr[k]);
      if (!std::isfinite(value[k]))
        return say(&i, fmi2Error, "fmi2SetReal: value reference " + std::to_string(r) + ": the value is not finite");
      if (r < P) {
        if (i.s.mode == Mode::ContinuousTime || i.s.mode == Mode::Terminated)
          return say(&i, fmi2Error, "fmi2SetReal: the tunable parameter `" +
                                        std::string(vars::kParameters[std::size_t(r)].name) +
                                        "` changes in event mode or between steps, not here");
        i.s.parameters[std::size_t(r)] = value[k];
        i.model.setParameter(vars::kParameters[std::size_t(r)].name, value[k]);
      } else if (r < P + n) {
        if (i.s.mode != Mode::Instantiated && i.s.mode != Mode::Initialization)
          return say(&i, fmi2Error, "fmi2SetReal: the states are set before initialization ends"
                                    " (Model Exchange: fmi2SetContinuousStates)");
        (r < P + nq ? i.s.q[r - P] : i.s.u[r - P - nq]) = value[k];
        i.s.statesSet = true;
      } else if (r < P + 2 * n + long(vars::kOutputs)) {
        return say(&i, fmi2Error, "fmi2SetReal: value reference " + std::to_string(r) +
                                      " is a derivative or an output: computed, not set");
      } else {
        return say(&i, fmi2Error, "fmi2SetReal: no variable has value reference " + std::to_string(r));
      }
    }
    return fmi2OK;
  });
}

// This FMU has Real variables only.
fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference[], size_t nvr, fmi2Integer[]) {
  return guarded(c, "fmi2GetInteger", [&](Instance& i) {
    return nvr == 0 ? fmi2OK : say(&i, fmi2Error, "fmi2GetInteger: this FMU has no Integer variables");
  });
}
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference[], size_t nvr, fmi2Boolean[]) {
  return guarded(c, "fmi2GetBoolean", [&](Instance& i) {
    return nvr == 0 ? fmi2OK : say(&i, fmi2Error, "fmi2GetBoolean: this FMU has no Boolean variables");
  });
}
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference[], size_t nvr, fmi2String[]) {
  return guarded(c, "fmi2GetString", [&](Instance& i) {
    return nvr == 0 ? fmi2OK : say(&i, fmi2Error, "fmi2GetString: this FMU has no String variables");
  });
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2Integer[]) {
  return guarded(c, "fmi2SetInteger", [&](Instance& i) {
    return nvr == 0 ? fmi2OK : say(&i, fmi2Error, "fmi2SetInteger: this FMU has no Integer variables");
  });
}
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2Boolean[]) {
  return guarded(c, "fmi2SetBoolean", [&](Instance& i) {
    return nvr == 0 ? fmi2OK : say(&i, fmi2Error, "fmi2SetBoolean: this FMU has no Boolean variables");
  });
}
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2String[]) {
  return guarded(c, "fmi2SetString", [&](Instance& i) {
    return nvr == 0 ? fmi2OK : say(&i, fmi2Error, "fmi2SetString: this FMU has no String variables");
  });
}

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* state) {
  return guarded(c, "fmi2GetFMUstate", [&](Instance& i) {
    if (!state) return say(&i, fmi2Error, "fmi2GetFMUstate: no place for the state");
    auto* s = static_cast<Snapshot*>(*state);
    if (s) *s = i.s;
    else *state = new Snapshot(i.s);
    return fmi2OK;
  });
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
  return guarded(c, "fmi2SetFMUstate", [&](Instance& i) {
    if (!state) return say(&i, fmi2Error, "fmi2SetFMUstate: no state");
    i.s = *static_cast<const Snapshot*>(state);
    for (std::size_t p = 0; p < i.s.parameters.size(); ++p)
      i.model.setParameter(vars::kParameters[p].name, i.s.parameters[p]);
    return fmi2OK;
  });
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* state) {
  return guarded(c, "fmi2FreeFMUstate", [&](Instance&) {
    if (state) {
      delete static_cast<Snapshot*>(*state);
      *state = nullptr;
    }
    return fmi2OK;
  });
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t* size) {
  return guarded(c, "fmi2SerializedFMUstateSize", [&](Instance& i) {
    if (!state || !size) return say(&i, fmi2Error, "fmi2SerializedFMUstateSize: no state");
    *size = serializedSize(*static_cast<const Snapshot*>(state));
    return fmi2OK;
  });
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
  return guarded(c, "fmi2SerializeFMUstate", [&](Instance& i) {
    if (!state || !bytes) return say(&i, fmi2Error, "fmi2SerializeFMUstate: no state");
    const Snapshot& s = *static_cast<const Snapshot*>(state);
    if (size < serializedSize(s)) return say(&i, fmi2Error, "fmi2SerializeFMUstate: the buffer is too small");
    char* at = bytes;
    const auto put = [&](const void* data, std::size_t n) {
      std::memcpy(at, data, n);
      at += n;
    };
    put(kStateTag, sizeof kStateTag);
    const std::int64_t sizes[3] = {s.q.size(), s.u.size(), std::int64_t(s.parameters.size())};
    put(sizes, sizeof sizes);
    put(&s.t, sizeof s.t);
    put(s.q.data(), sizeof(double) * std::size_t(s.q.size()));
    put(s.u.data(), sizeof(double) * std::size_t(s.u.size()));
    put(s.parameters.data(), sizeof(double) * s.parameters.size());
    const std::int64_t flags[2] = {std::int64_t(s.mode), s.statesSet ? 1 : 0};
    put(flags, sizeof flags);
    return fmi2OK;
  });
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size, fmi2FMUstate* state) {
  return guarded(c, "fmi2DeSerializeFMUstate", [&](Instance& i) {
    if (!bytes || !state) return say(&i, fmi2Error, "fmi2DeSerializeFMUstate: no bytes or no place for the state");
    Snapshot s;
    const char* at = bytes;
    const char* end = bytes + size;
    const auto take = [&](void* data, std::size_t n) {
      if (std::size_t(end - at) < n) return false;
      std::memcpy(data, at, n);
      at += n;
      return true;
    };
    char tag[sizeof kStateTag];
    std::int64_t sizes[3] = {}, flags[2] = {};
    if (!take(tag, sizeof tag) || std::memcmp(tag, kStateTag, sizeof tag) != 0 || !take(sizes, sizeof sizes) ||
        sizes[0] != i.model.nq || sizes[1] != i.model.nu || sizes[2] != i.P())
      return say(&i, fmi2Error, "fmi2DeSerializeFMUstate: the bytes are not a state of this FMU");
    s.q.resize(i.model.nq);
    s.u.resize(i.model.nu);
    s.parameters.resize(std::size_t(i.P()));
    if (!take(&s.t, sizeof s.t) || !take(s.q.data(), sizeof(double) * std::size_t(s.q.size())) ||
        !take(s.u.data(), sizeof(double) * std::size_t(s.u.size())) ||
        !take(s.parameters.data(), sizeof(double) * s.parameters.size()) || !take(flags, sizeof flags) ||
        flags[0] < 0 || flags[0] > std::int64_t(Mode::Terminated))
      return say(&i, fmi2Error, "fmi2DeSerializeFMUstate: the bytes are cut short or damaged");
    s.mode = Mode(flags[0]);
    s.statesSet = flags[1] != 0;
    auto* out = static_cast<Snapshot*>(*state);
    if (out) *out = s;
    else *state = new Snapshot(s);
    return fmi2OK;
  });
}

// Model Exchange, where the FMU was written with `--derivatives`: the
// knowns are the continuous states. der(q) = u, so d der(q) = d u; d der(u)
// from the generated analytical derivatives (forwardDynamicsDerivatives),
// exact; an output's by central differences of the column table.
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown[], size_t nUnknown,
                                        const fmi2ValueReference vKnown[], size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[]) {
  return guarded(c, "fmi2GetDirectionalDerivative", [&](Instance& i) {
    if (!vars::kDirectionalDerivatives || i.type != fmi2ModelExchange)
      return say(&i, fmi2Error,
                 "fmi2GetDirectionalDerivative: not provided by this FMU (write it with `capstan fmu --derivatives`; "
                 "Model Exchange only)");
    const long P = i.P(), nq = i.model.nq, nu = i.model.nu, n = i.n();
    const long outputsEnd = P + 2 * n + long(vars::kOutputs);
    Eigen::VectorXd dx = Eigen::VectorXd::Zero(n);
    for (size_t k = 0; k < nKnown; ++k) {
      const long r = long(vKnown[k]);
      if (r < P || r >= P + n)
        return say(&i, fmi2Error, "fmi2GetDirectionalDerivative: known " + std::to_string(r) +
                                      " is not a continuous state (their value references are " + std::to_string(P) +
                                      " to " + std::to_string(P + n - 1) + ")");
      dx[r - P] += dvKnown[k];
    }
    bool speeds = false, outputs = false;
    for (size_t k = 0; k < nUnknown; ++k) {
      const long r = long(vUnknown[k]);
      if (r < P + n || r >= outputsEnd)
        return say(&i, fmi2Error, "fmi2GetDirectionalDerivative: unknown " + std::to_string(r) +
                                      " is neither a derivative nor an output");
      speeds = speeds || (r >= P + n + nq && r < P + 2 * n);
      outputs = outputs || r >= P + 2 * n;
    }
    Eigen::VectorXd dudot = Eigen::VectorXd::Zero(nu);
    if (speeds) {
      AnyModel::MassMatrix dq, du, dtau;
      i.model.forwardDynamicsDerivatives(i.s.t, i.s.q, i.s.u, dq, du, dtau);
      dudot = dq * dx.head(nq) + du * dx.tail(nu);
    }
    std::vector<double> dy;
    if (outputs) {
      const double size = std::max(dx.lpNorm<Eigen::Infinity>(), 1e-300);
      const double scale = std::max({1.0, i.s.q.lpNorm<Eigen::Infinity>(), i.s.u.lpNorm<Eigen::Infinity>()});
      const double h = 1e-6 * scale / size;
      const AnyModel::Q qp = i.s.q + h * dx.head(nq), qm = i.s.q - h * dx.head(nq);
      const AnyModel::U up = i.s.u + h * dx.tail(nu), um = i.s.u - h * dx.tail(nu);
      const std::vector<double> plus = capstan::sim::columnRow(i.model, i.s.t, qp, up, {});
      const std::vector<double> minus = capstan::sim::columnRow(i.model, i.s.t, qm, um, {});
      for (std::size_t k = 0; k < plus.size(); ++k) dy.push_back((plus[k] - minus[k]) / (2 * h));
    }
    for (size_t k = 0; k < nUnknown; ++k) {
      const long d = long(vUnknown[k]) - P - n;  // into [qdot; udot; outputs]
      dvUnknown[k] = d < nq ? dx[nq + d] : d < n ? dudot[d - nq] : dy.at(std::size_t(1 + d));  // the column after time and the states
    }
    return fmi2OK;
  });
}

// ------------------------------------------------------------ Model Exchange

fmi2Status fmi2EnterEventMode(fmi2Component c) {
  return guarded(c, "fmi2EnterEventMode", [&](Instance& i) {
    if (i.type != fmi2ModelExchange || (i.s.mode != Mode::ContinuousTime && i.s.mode != Mode::Event))
      return wrongMode(i, "fmi2EnterEventMode");
    i.s.mode = Mode::Event;
    return fmi2OK;
  });
}

fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* info) {
  return guarded(c, "fmi2NewDiscreteStates", [&](Instance& i) {
    if (i.type != fmi2ModelExchange || i.s.mode != Mode::Event) return wrongMode(i, "fmi2NewDiscreteStates");
    if (info) *info = fmi2EventInfo{fmi2False, fmi2False, fmi2False, fmi2False, fmi2False, 0.0};
    return fmi2OK;
  });
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
  return guarded(c, "fmi2EnterContinuousTimeMode", [&](Instance& i) {
    if (i.type != fmi2ModelExchange || i.s.mode != Mode::Event) return wrongMode(i, "fmi2EnterContinuousTimeMode");
    i.s.mode = Mode::ContinuousTime;
    return fmi2OK;
  });
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean, fmi2Boolean* enterEventMode,
                                       fmi2Boolean* terminateSimulation) {
  return guarded(c, "fmi2CompletedIntegratorStep", [&](Instance& i) {
    if (i.type != fmi2ModelExchange || i.s.mode != Mode::ContinuousTime)
      return wrongMode(i, "fmi2CompletedIntegratorStep");
    if (enterEventMode) *enterEventMode = fmi2False;
    if (terminateSimulation) *terminateSimulation = fmi2False;
    return fmi2OK;
  });
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time) {
  return guarded(c, "fmi2SetTime", [&](Instance& i) {
    if (i.type != fmi2ModelExchange) return wrongMode(i, "fmi2SetTime");
    if (!std::isfinite(time)) return say(&i, fmi2Error, "fmi2SetTime: the time is not finite");
    i.s.t = time;
    return fmi2OK;
  });
}

fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
  return guarded(c, "fmi2SetContinuousStates", [&](Instance& i) {
    if (i.type != fmi2ModelExchange) return wrongMode(i, "fmi2SetContinuousStates");
    if (nx != std::size_t(i.n()))
      return say(&i, fmi2Error, "fmi2SetContinuousStates: nx = " + std::to_string(nx) + ", the FMU has " +
                                    std::to_string(i.n()) + " states");
    for (int k = 0; k < i.n(); ++k)
      if (!std::isfinite(x[k]))
        return say(&i, fmi2Error, "fmi2SetContinuousStates: state " + std::to_string(k) + " is not finite");
    for (int k = 0; k < i.model.nq; ++k) i.s.q[k] = x[k];
    for (int k = 0; k < i.model.nu; ++k) i.s.u[k] = x[i.model.nq + k];
    i.s.statesSet = true;
    return fmi2OK;
  });
}

fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t nx) {
  return guarded(c, "fmi2GetDerivatives", [&](Instance& i) {
    if (i.type != fmi2ModelExchange) return wrongMode(i, "fmi2GetDerivatives");
    if (nx != std::size_t(i.n()))
      return say(&i, fmi2Error, "fmi2GetDerivatives: nx = " + std::to_string(nx) + ", the FMU has " +
                                    std::to_string(i.n()) + " states");
    AnyModel::Q qdot;
    AnyModel::U udot;
    derivatives(i, qdot, udot);
    for (int k = 0; k < i.model.nq; ++k) dx[k] = qdot[k];
    for (int k = 0; k < i.model.nu; ++k) dx[i.model.nq + k] = udot[k];
    for (int k = 0; k < i.n(); ++k)
      if (!std::isfinite(dx[k]))
        return say(&i, fmi2Error, "fmi2GetDerivatives: derivative " + std::to_string(k) +
                                      " is not finite at t = " + std::to_string(i.s.t));
    return fmi2OK;
  });
}

fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real[], size_t ni) {
  return guarded(c, "fmi2GetEventIndicators", [&](Instance& i) {
    return ni == 0 ? fmi2OK : say(&i, fmi2Error, "fmi2GetEventIndicators: this FMU has no event indicators");
  });
}

fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
  return guarded(c, "fmi2GetContinuousStates", [&](Instance& i) {
    if (nx != std::size_t(i.n()))
      return say(&i, fmi2Error, "fmi2GetContinuousStates: nx = " + std::to_string(nx) + ", the FMU has " +
                                    std::to_string(i.n()) + " states");
    for (int k = 0; k < i.model.nq; ++k) x[k] = i.s.q[k];
    for (int k = 0; k < i.model.nu; ++k) x[i.model.nq + k] = i.s.u[k];
    return fmi2OK;
  });
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real nominal[], size_t nx) {
  return guarded(c, "fmi2GetNominalsOfContinuousStates", [&](Instance& i) {
    if (nx != std::size_t(i.n())) return say(&i, fmi2Error, "fmi2GetNominalsOfContinuousStates: wrong nx");
    std::fill(nominal, nominal + nx, 1.0);
    return fmi2OK;
  });
}

// ------------------------------------------------------------ Co-Simulation

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2Integer[],
                                       const fmi2Real[]) {
  return guarded(c, "fmi2SetRealInputDerivatives", [&](Instance& i) {
    return nvr == 0 ? fmi2OK : say(&i, fmi2Error, "fmi2SetRealInputDerivatives: this FMU has no inputs");
  });
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2Integer[],
                                        fmi2Real[]) {
  return guarded(c, "fmi2GetRealOutputDerivatives", [&](Instance& i) {
    return nvr == 0 ? fmi2OK
                    : say(&i, fmi2Error, "fmi2GetRealOutputDerivatives: not provided (maxOutputDerivativeOrder=\"0\")");
  });
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize, fmi2Boolean) {
  return guarded(c, "fmi2DoStep", [&](Instance& i) {
    if (i.type != fmi2CoSimulation || i.s.mode != Mode::StepComplete) return wrongMode(i, "fmi2DoStep");
    const double tolerance = 1e-9 * std::max(1.0, std::abs(i.s.t));
    if (!(std::abs(currentCommunicationPoint - i.s.t) <= tolerance))
      return say(&i, fmi2Error, "fmi2DoStep: the communication point " + std::to_string(currentCommunicationPoint) +
                                    " is not the FMU's time " + std::to_string(i.s.t));
    if (!(communicationStepSize >= 0) || !std::isfinite(communicationStepSize))
      return say(&i, fmi2Error, "fmi2DoStep: the step size must be a finite number >= 0");
    if (communicationStepSize == 0) return fmi2OK;
    const double tEnd = currentCommunicationPoint + communicationStepSize;
    const capstan::sim::Result r = capstan::sim::advanceModel(i.model, i.s.q, i.s.u, stepRequest(i, tEnd));
    if (!r.ok()) {
      i.s.mode = Mode::StepFailed;
      std::string why = r.thrown ? "a C++ function that the model calls threw: " + r.thrown->what
                        : !r.stopped.empty() ? r.stopped
                                             : r.status.message;
      return say(&i, fmi2Error, "fmi2DoStep: the step from t = " + std::to_string(i.s.t) + " failed: " + why);
    }
    i.s.t = tEnd;
    return fmi2OK;
  });
}

fmi2Status fmi2CancelStep(fmi2Component c) {
  return guarded(c, "fmi2CancelStep", [&](Instance& i) {
    return say(&i, fmi2Error, "fmi2CancelStep: steps run synchronously; there is none to cancel");
  });
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind, fmi2Status* value) {
  return guarded(c, "fmi2GetStatus", [&](Instance& i) {
    if (value) *value = i.s.mode == Mode::StepFailed ? fmi2Error : fmi2OK;
    return fmi2OK;
  });
}
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Real* value) {
  return guarded(c, "fmi2GetRealStatus", [&](Instance& i) {
    if (kind != fmi2LastSuccessfulTime || !value) return say(&i, fmi2Discard, "fmi2GetRealStatus: only fmi2LastSuccessfulTime");
    *value = i.s.t;
    return fmi2OK;
  });
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind, fmi2Integer*) {
  return guarded(c, "fmi2GetIntegerStatus", [&](Instance& i) { return say(&i, fmi2Discard, "fmi2GetIntegerStatus: none"); });
}
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Boolean* value) {
  return guarded(c, "fmi2GetBooleanStatus", [&](Instance& i) {
    if (kind != fmi2Terminated || !value) return say(&i, fmi2Discard, "fmi2GetBooleanStatus: only fmi2Terminated");
    *value = fmi2False;
    return fmi2OK;
  });
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind, fmi2String*) {
  return guarded(c, "fmi2GetStringStatus", [&](Instance& i) { return say(&i, fmi2Discard, "fmi2GetStringStatus: none"); });
}

}  // extern "C"
