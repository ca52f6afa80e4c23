// FMI 2.0's functions (Model Exchange and Co-Simulation) over the FMU of
// one generated class (capstan/sim/fmu.hpp: its variables, modes, steps
// and states): what `capstan fmu --fmi 2` builds into the FMU's binary
// (compiler/templates/capstan_fmu.cpp with CAPSTAN_FMI_VERSION 2).
#pragma once

#include <cstdarg>
#include <new>
#include <string>

#include "capstan/fmi/fmi2.h"
#include "capstan/sim/fmu.hpp"

namespace capstan::fmu2 {

using fmu::Instance;
using fmu::Mode;

inline fmi2Status status(fmu::Status s) { return fmi2Status(int(s)); }

template <class Body>
fmi2Status guarded(fmi2Component c, const char* function, Body&& body) {
  return status(fmu::guarded(c, function, std::forward<Body>(body)));
}

// The importer's logger, in FMI 2.0's form; `text` with each % doubled,
// since the logger takes a format.
inline std::function<void(fmu::Status, const std::string&)> logger(const std::string& name,
                                                                    const fmi2CallbackFunctions& callbacks) {
  if (!callbacks.logger) return {};
  return [name, callbacks](fmu::Status s, const std::string& text) {
    std::string literal;
    for (const char c : text) {
      literal += c;
      if (c == '%') literal += '%';
    }
    callbacks.logger(callbacks.componentEnvironment, name.c_str(), status(s),
                     s == fmu::Status::OK ? "logAll" : "logStatusError", literal.c_str());
  };
}

// Integer, Boolean and String: the FMU has none.
inline fmi2Status none(fmi2Component c, const char* function, size_t nvr, const char* type) {
  return guarded(c, function, [&](Instance& i) {
    return nvr == 0 ? fmu::Status::OK
                    : i.say(fmu::Status::Error, std::string(function) + ": this FMU has no " + type + " variables");
  });
}

}  // namespace capstan::fmu2

extern "C" {

using capstan::fmu::Instance;
using capstan::fmu::Mode;
using capstan::fmu2::guarded;
using Status = capstan::fmu::Status;

const char* fmi2GetTypesPlatform(void) { return "default"; }
const char* fmi2GetVersion(void) { return "2.0"; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t, const fmi2String[]) {
  return guarded(c, "fmi2SetDebugLogging", [&](Instance& i) {
    i.logging = loggingOn != fmi2False;
    return Status::OK;
  });
}

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID, fmi2String,
                              const fmi2CallbackFunctions* functions, fmi2Boolean, fmi2Boolean loggingOn) {
  const fmi2CallbackFunctions callbacks = functions ? *functions : fmi2CallbackFunctions{};
  const auto log = capstan::fmu2::logger(instanceName ? instanceName : "", callbacks);
  if (fmuType != fmi2ModelExchange && fmuType != fmi2CoSimulation) {
    if (log) log(Status::Error, "fmi2Instantiate: unknown fmuType");
    return nullptr;
  }
  return capstan::fmu::instantiate(fmuGUID, fmuType == fmi2ModelExchange, log, loggingOn != fmi2False, "fmi2Instantiate",
                                   [&](const std::string& why) {
                                     if (log) log(Status::Error, why);
                                   });
}

void fmi2FreeInstance(fmi2Component c) { delete static_cast<Instance*>(c); }

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance, fmi2Real startTime,
                               fmi2Boolean, fmi2Real) {
  return guarded(c, "fmi2SetupExperiment", [&](Instance& i) {
    if (i.s.mode != Mode::Instantiated) return i.wrongMode("fmi2SetupExperiment");
    return i.setupExperiment("fmi2SetupExperiment", toleranceDefined != fmi2False, tolerance, startTime);
  });
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
  return guarded(c, "fmi2EnterInitializationMode", [&](Instance& i) {
    if (i.s.mode != Mode::Instantiated) return i.wrongMode("fmi2EnterInitializationMode");
    i.s.mode = Mode::Initialization;
    return Status::OK;
  });
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  return guarded(c, "fmi2ExitInitializationMode", [&](Instance& i) {
    if (i.s.mode != Mode::Initialization) return i.wrongMode("fmi2ExitInitializationMode");
    return i.exitInitialization("fmi2ExitInitializationMode", i.modelExchange ? Mode::Event : Mode::StepComplete);
  });
}

fmi2Status fmi2Terminate(fmi2Component c) {
  return guarded(c, "fmi2Terminate", [&](Instance& i) {
    i.s.mode = Mode::Terminated;
    return Status::OK;
  });
}

fmi2Status fmi2Reset(fmi2Component c) {
  return guarded(c, "fmi2Reset", [&](Instance& i) {
    i.setDefaults();
    return Status::OK;
  });
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[]) {
  return guarded(c, "fmi2GetReal", [&](Instance& i) { return i.get("fmi2GetReal", vr, nvr, value); });
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[]) {
  return guarded(c, "fmi2SetReal", [&](Instance& i) { return i.set("fmi2SetReal", vr, nvr, value); });
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference[], size_t nvr, fmi2Integer[]) {
  return capstan::fmu2::none(c, "fmi2GetInteger", nvr, "Integer");
}
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference[], size_t nvr, fmi2Boolean[]) {
  return capstan::fmu2::none(c, "fmi2GetBoolean", nvr, "Boolean");
}
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference[], size_t nvr, fmi2String[]) {
  return capstan::fmu2::none(c, "fmi2GetString", nvr, "String");
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2Integer[]) {
  return capstan::fmu2::none(c, "fmi2SetInteger", nvr, "Integer");
}
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2Boolean[]) {
  return capstan::fmu2::none(c, "fmi2SetBoolean", nvr, "Boolean");
}
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2String[]) {
  return capstan::fmu2::none(c, "fmi2SetString", nvr, "String");
}

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* state) {
  return guarded(c, "fmi2GetFMUstate", [&](Instance& i) { return i.getState("fmi2GetFMUstate", state); });
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
  return guarded(c, "fmi2SetFMUstate", [&](Instance& i) { return i.setState("fmi2SetFMUstate", state); });
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* state) {
  return guarded(c, "fmi2FreeFMUstate", [&](Instance&) { return Instance::freeState(state); });
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t* size) {
  return guarded(c, "fmi2SerializedFMUstateSize", [&](Instance& i) { return i.stateSize("fmi2SerializedFMUstateSize", state, size); });
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
  return guarded(c, "fmi2SerializeFMUstate", [&](Instance& i) {
    return i.serialize("fmi2SerializeFMUstate", state, bytes, size);
  });
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size, fmi2FMUstate* state) {
  return guarded(c, "fmi2DeSerializeFMUstate", [&](Instance& i) {
    return i.deserialize("fmi2DeSerializeFMUstate", bytes, size, state);
  });
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown[], size_t nUnknown,
                                        const fmi2ValueReference vKnown[], size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[]) {
  return guarded(c, "fmi2GetDirectionalDerivative", [&](Instance& i) {
    return i.directionalDerivative("fmi2GetDirectionalDerivative", vUnknown, nUnknown, vKnown, nKnown, dvKnown,
                                   dvUnknown);
  });
}

// ------------------------------------------------------------ Model Exchange

fmi2Status fmi2EnterEventMode(fmi2Component c) {
  return guarded(c, "fmi2EnterEventMode", [&](Instance& i) {
    if (!i.modelExchange || (i.s.mode != Mode::ContinuousTime && i.s.mode != Mode::Event))
      return i.wrongMode("fmi2EnterEventMode");
    i.s.mode = Mode::Event;
    return Status::OK;
  });
}

fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* info) {
  return guarded(c, "fmi2NewDiscreteStates", [&](Instance& i) {
    if (!i.modelExchange || i.s.mode != Mode::Event) return i.wrongMode("fmi2NewDiscreteStates");
    if (info) *info = fmi2EventInfo{fmi2False, fmi2False, fmi2False, fmi2False, fmi2False, 0.0};
    return Status::OK;
  });
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
  return guarded(c, "fmi2EnterContinuousTimeMode", [&](Instance& i) {
    if (!i.modelExchange || i.s.mode != Mode::Event) return i.wrongMode("fmi2EnterContinuousTimeMode");
    i.s.mode = Mode::ContinuousTime;
    return Status::OK;
  });
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean, fmi2Boolean* enterEventMode,
                                       fmi2Boolean* terminateSimulation) {
  return guarded(c, "fmi2CompletedIntegratorStep", [&](Instance& i) {
    if (!i.modelExchange || i.s.mode != Mode::ContinuousTime) return i.wrongMode("fmi2CompletedIntegratorStep");
    if (enterEventMode) *enterEventMode = fmi2False;
    if (terminateSimulation) *terminateSimulation = fmi2False;
    return Status::OK;
  });
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time) {
  return guarded(c, "fmi2SetTime", [&](Instance& i) {
    if (!i.modelExchange) return i.wrongMode("fmi2SetTime");
    return i.setTime("fmi2SetTime", time);
  });
}

fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
  return guarded(c, "fmi2SetContinuousStates", [&](Instance& i) {
    if (!i.modelExchange) return i.wrongMode("fmi2SetContinuousStates");
    return i.setStates("fmi2SetContinuousStates", x, nx);
  });
}

fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t nx) {
  return guarded(c, "fmi2GetDerivatives", [&](Instance& i) {
    if (!i.modelExchange) return i.wrongMode("fmi2GetDerivatives");
    return i.getDerivatives("fmi2GetDerivatives", dx, nx);
  });
}

fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t ni) {
  return guarded(c, "fmi2GetEventIndicators", [&](Instance& i) { return i.eventIndicators("fmi2GetEventIndicators", z, ni); });
}

fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
  return guarded(c, "fmi2GetContinuousStates", [&](Instance& i) { return i.getStates("fmi2GetContinuousStates", x, nx); });
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real nominal[], size_t nx) {
  return guarded(c, "fmi2GetNominalsOfContinuousStates", [&](Instance& i) {
    if (i.checkStates("fmi2GetNominalsOfContinuousStates", nx, nominal) != Status::OK) return Status::Error;
    std::fill(nominal, nominal + nx, 1.0);
    return Status::OK;
  });
}

// ------------------------------------------------------------ Co-Simulation

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2Integer[],
                                       const fmi2Real[]) {
  return guarded(c, "fmi2SetRealInputDerivatives", [&](Instance& i) {
    return nvr == 0 ? Status::OK : i.say(Status::Error, "fmi2SetRealInputDerivatives: this FMU has no inputs");
  });
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference[], size_t nvr, const fmi2Integer[],
                                        fmi2Real[]) {
  return guarded(c, "fmi2GetRealOutputDerivatives", [&](Instance& i) {
    return nvr == 0 ? Status::OK
                    : i.say(Status::Error, "fmi2GetRealOutputDerivatives: not provided (maxOutputDerivativeOrder=\"0\")");
  });
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize, fmi2Boolean) {
  return guarded(c, "fmi2DoStep", [&](Instance& i) {
    if (i.modelExchange || i.s.mode != Mode::StepComplete) return i.wrongMode("fmi2DoStep");
    return i.doStep("fmi2DoStep", currentCommunicationPoint, communicationStepSize);
  });
}

fmi2Status fmi2CancelStep(fmi2Component c) {
  return guarded(c, "fmi2CancelStep", [&](Instance& i) {
    return i.say(Status::Error, "fmi2CancelStep: steps run synchronously; there is none to cancel");
  });
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind, fmi2Status* value) {
  return guarded(c, "fmi2GetStatus", [&](Instance& i) {
    if (value) *value = i.s.mode == Mode::StepFailed ? fmi2Error : fmi2OK;
    return Status::OK;
  });
}
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Real* value) {
  return guarded(c, "fmi2GetRealStatus", [&](Instance& i) {
    if (kind != fmi2LastSuccessfulTime || !value)
      return i.say(Status::Discard, "fmi2GetRealStatus: only fmi2LastSuccessfulTime");
    *value = i.s.t;
    return Status::OK;
  });
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind, fmi2Integer*) {
  return guarded(c, "fmi2GetIntegerStatus", [&](Instance& i) { return i.say(Status::Discard, "fmi2GetIntegerStatus: none"); });
}
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Boolean* value) {
  return guarded(c, "fmi2GetBooleanStatus", [&](Instance& i) {
    if (kind != fmi2Terminated || !value) return i.say(Status::Discard, "fmi2GetBooleanStatus: only fmi2Terminated");
    *value = fmi2False;
    return Status::OK;
  });
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind, fmi2String*) {
  return guarded(c, "fmi2GetStringStatus", [&](Instance& i) { return i.say(Status::Discard, "fmi2GetStringStatus: none"); });
}

}  // extern "C"
