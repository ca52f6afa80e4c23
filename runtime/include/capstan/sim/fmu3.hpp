// FMI 3.0's functions (Model Exchange and Co-Simulation; no Scheduled
// Execution) over the FMU of one generated class (capstan/sim/fmu.hpp: its
// variables, modes, steps and states): what `capstan fmu --fmi 3` builds
// into the FMU's binary (compiler/templates/capstan_fmu.cpp with
// CAPSTAN_FMI_VERSION 3). Its variables are Float64; every other type's
// getters and setters, the clocks, the configuration mode and the
// per-element dependencies are there and refuse, as the standard has them
// refuse for an FMU without such variables.
#pragma once

#include <new>
#include <string>

#include "capstan/fmi/fmi3.h"
#include "capstan/sim/fmu.hpp"

namespace capstan::fmu3 {

using fmu::Instance;
using fmu::Mode;
using Status = fmu::Status;

inline fmi3Status status(Status s) { return fmi3Status(int(s)); }

template <class Body>
fmi3Status guarded(fmi3Instance c, const char* function, Body&& body) {
  return status(fmu::guarded(c, function, std::forward<Body>(body)));
}

// The importer's logger, in FMI 3.0's form.
inline std::function<void(Status, const std::string&)> logger(fmi3InstanceEnvironment environment,
                                                              fmi3LogMessageCallback log) {
  if (!log) return {};
  return [environment, log](Status s, const std::string& text) {
    log(environment, status(s), s == Status::OK ? "logAll" : "logStatusError", text.c_str());
  };
}

inline fmi3Instance instantiate(fmi3String token, bool modelExchange, fmi3Boolean loggingOn,
                                fmi3InstanceEnvironment environment, fmi3LogMessageCallback log, const char* function) {
  const auto say = logger(environment, log);
  return fmu::instantiate(token, modelExchange, say, loggingOn, function, [&](const std::string& why) {
    if (say) say(Status::Error, why);
  });
}

// A variable type the FMU has none of.
inline fmi3Status none(fmi3Instance c, const char* function, size_t nvr, const char* type) {
  return guarded(c, function, [&](Instance& i) {
    return nvr == 0 ? Status::OK : i.say(Status::Error, std::string(function) + ": this FMU has no " + type + " variables");
  });
}

// What the FMU does not have: clocks, structural parameters, per-element dependencies.
inline fmi3Status refuse(fmi3Instance c, const char* function, const char* what) {
  return guarded(c, function, [&](Instance& i) { return i.say(Status::Error, std::string(function) + ": " + what); });
}

}  // namespace capstan::fmu3

extern "C" {

using capstan::fmu::Instance;
using capstan::fmu::Mode;
using capstan::fmu3::guarded;
using Status = capstan::fmu::Status;

const char* fmi3GetVersion(void) { return "3.0"; }

fmi3Status fmi3SetDebugLogging(fmi3Instance c, fmi3Boolean loggingOn, size_t, const fmi3String[]) {
  return guarded(c, "fmi3SetDebugLogging", [&](Instance& i) {
    i.logging = loggingOn;
    return Status::OK;
  });
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String, fmi3String instantiationToken, fmi3String, fmi3Boolean,
                                          fmi3Boolean loggingOn, fmi3InstanceEnvironment environment,
                                          fmi3LogMessageCallback log) {
  return capstan::fmu3::instantiate(instantiationToken, true, loggingOn, environment, log, "fmi3InstantiateModelExchange");
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String, fmi3String instantiationToken, fmi3String, fmi3Boolean,
                                         fmi3Boolean loggingOn, fmi3Boolean, fmi3Boolean, const fmi3ValueReference[],
                                         size_t, fmi3InstanceEnvironment environment, fmi3LogMessageCallback log,
                                         fmi3IntermediateUpdateCallback) {
  return capstan::fmu3::instantiate(instantiationToken, false, loggingOn, environment, log, "fmi3InstantiateCoSimulation");
}

fmi3Instance fmi3InstantiateScheduledExecution(fmi3String, fmi3String, fmi3String, fmi3Boolean, fmi3Boolean,
                                               fmi3InstanceEnvironment environment, fmi3LogMessageCallback log,
                                               fmi3ClockUpdateCallback, fmi3LockPreemptionCallback,
                                               fmi3UnlockPreemptionCallback) {
  if (log) log(environment, fmi3Error, "logStatusError", "fmi3InstantiateScheduledExecution: this FMU has no Scheduled Execution interface");
  return nullptr;
}

void fmi3FreeInstance(fmi3Instance c) { delete static_cast<Instance*>(c); }

fmi3Status fmi3EnterInitializationMode(fmi3Instance c, fmi3Boolean toleranceDefined, fmi3Float64 tolerance,
                                       fmi3Float64 startTime, fmi3Boolean, fmi3Float64) {
  return guarded(c, "fmi3EnterInitializationMode", [&](Instance& i) {
    if (i.s.mode != Mode::Instantiated) return i.wrongMode("fmi3EnterInitializationMode");
    if (i.setupExperiment("fmi3EnterInitializationMode", toleranceDefined, tolerance, startTime) != Status::OK)
      return Status::Error;
    i.s.mode = Mode::Initialization;
    return Status::OK;
  });
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance c) {
  return guarded(c, "fmi3ExitInitializationMode", [&](Instance& i) {
    if (i.s.mode != Mode::Initialization) return i.wrongMode("fmi3ExitInitializationMode");
    return i.exitInitialization("fmi3ExitInitializationMode", i.modelExchange ? Mode::Event : Mode::StepComplete);
  });
}

fmi3Status fmi3EnterEventMode(fmi3Instance c) {
  return guarded(c, "fmi3EnterEventMode", [&](Instance& i) {
    if (i.s.mode != Mode::ContinuousTime && i.s.mode != Mode::Event && i.s.mode != Mode::StepComplete)
      return i.wrongMode("fmi3EnterEventMode");
    i.s.mode = Mode::Event;
    return Status::OK;
  });
}

fmi3Status fmi3Terminate(fmi3Instance c) {
  return guarded(c, "fmi3Terminate", [&](Instance& i) {
    i.s.mode = Mode::Terminated;
    return Status::OK;
  });
}

fmi3Status fmi3Reset(fmi3Instance c) {
  return guarded(c, "fmi3Reset", [&](Instance& i) {
    i.setDefaults();
    return Status::OK;
  });
}

fmi3Status fmi3GetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, fmi3Float64 values[],
                          size_t nValues) {
  return guarded(c, "fmi3GetFloat64", [&](Instance& i) {
    if (nValues != nvr) return i.say(Status::Error, "fmi3GetFloat64: the variables are scalars: nValues must be nValueReferences");
    return i.get("fmi3GetFloat64", vr, nvr, values);
  });
}

fmi3Status fmi3SetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, const fmi3Float64 values[],
                          size_t nValues) {
  return guarded(c, "fmi3SetFloat64", [&](Instance& i) {
    if (nValues != nvr) return i.say(Status::Error, "fmi3SetFloat64: the variables are scalars: nValues must be nValueReferences");
    return i.set("fmi3SetFloat64", vr, nvr, values);
  });
}

// Every other type: none.
#define CAPSTAN_FMI3_NONE(Type, CType)                                                                                 \
  fmi3Status fmi3Get##Type(fmi3Instance c, const fmi3ValueReference[], size_t nvr, CType[], size_t) {                 \
    return capstan::fmu3::none(c, "fmi3Get" #Type, nvr, #Type);                                                       \
  }                                                                                                                    \
  fmi3Status fmi3Set##Type(fmi3Instance c, const fmi3ValueReference[], size_t nvr, const CType[], size_t) {           \
    return capstan::fmu3::none(c, "fmi3Set" #Type, nvr, #Type);                                                       \
  }
CAPSTAN_FMI3_NONE(Float32, fmi3Float32)
CAPSTAN_FMI3_NONE(Int8, fmi3Int8)
CAPSTAN_FMI3_NONE(UInt8, fmi3UInt8)
CAPSTAN_FMI3_NONE(Int16, fmi3Int16)
CAPSTAN_FMI3_NONE(UInt16, fmi3UInt16)
CAPSTAN_FMI3_NONE(Int32, fmi3Int32)
CAPSTAN_FMI3_NONE(UInt32, fmi3UInt32)
CAPSTAN_FMI3_NONE(Int64, fmi3Int64)
CAPSTAN_FMI3_NONE(UInt64, fmi3UInt64)
CAPSTAN_FMI3_NONE(Boolean, fmi3Boolean)
CAPSTAN_FMI3_NONE(String, fmi3String)
#undef CAPSTAN_FMI3_NONE

fmi3Status fmi3GetBinary(fmi3Instance c, const fmi3ValueReference[], size_t nvr, size_t[], fmi3Binary[], size_t) {
  return capstan::fmu3::none(c, "fmi3GetBinary", nvr, "Binary");
}
fmi3Status fmi3SetBinary(fmi3Instance c, const fmi3ValueReference[], size_t nvr, const size_t[], const fmi3Binary[],
                         size_t) {
  return capstan::fmu3::none(c, "fmi3SetBinary", nvr, "Binary");
}
fmi3Status fmi3GetClock(fmi3Instance c, const fmi3ValueReference[], size_t nvr, fmi3Clock[]) {
  return capstan::fmu3::none(c, "fmi3GetClock", nvr, "Clock");
}
fmi3Status fmi3SetClock(fmi3Instance c, const fmi3ValueReference[], size_t nvr, const fmi3Clock[]) {
  return capstan::fmu3::none(c, "fmi3SetClock", nvr, "Clock");
}

fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance c, fmi3ValueReference, size_t*) {
  return capstan::fmu3::refuse(c, "fmi3GetNumberOfVariableDependencies",
                               "not provided (providesPerElementDependencies=\"false\")");
}
fmi3Status fmi3GetVariableDependencies(fmi3Instance c, fmi3ValueReference, size_t[], fmi3ValueReference[], size_t[],
                                       fmi3DependencyKind[], size_t) {
  return capstan::fmu3::refuse(c, "fmi3GetVariableDependencies", "not provided (providesPerElementDependencies=\"false\")");
}

fmi3Status fmi3GetFMUState(fmi3Instance c, fmi3FMUState* state) {
  return guarded(c, "fmi3GetFMUState", [&](Instance& i) { return i.getState("fmi3GetFMUState", state); });
}

fmi3Status fmi3SetFMUState(fmi3Instance c, fmi3FMUState state) {
  return guarded(c, "fmi3SetFMUState", [&](Instance& i) { return i.setState("fmi3SetFMUState", state); });
}

fmi3Status fmi3FreeFMUState(fmi3Instance c, fmi3FMUState* state) {
  return guarded(c, "fmi3FreeFMUState", [&](Instance&) { return Instance::freeState(state); });
}

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance c, fmi3FMUState state, size_t* size) {
  return guarded(c, "fmi3SerializedFMUStateSize", [&](Instance& i) { return i.stateSize("fmi3SerializedFMUStateSize", state, size); });
}

fmi3Status fmi3SerializeFMUState(fmi3Instance c, fmi3FMUState state, fmi3Byte bytes[], size_t size) {
  return guarded(c, "fmi3SerializeFMUState", [&](Instance& i) {
    return i.serialize("fmi3SerializeFMUState", state, reinterpret_cast<char*>(bytes), size);
  });
}

fmi3Status fmi3DeserializeFMUState(fmi3Instance c, const fmi3Byte bytes[], size_t size, fmi3FMUState* state) {
  return guarded(c, "fmi3DeserializeFMUState", [&](Instance& i) {
    return i.deserialize("fmi3DeserializeFMUState", reinterpret_cast<const char*>(bytes), size, state);
  });
}

fmi3Status fmi3GetDirectionalDerivative(fmi3Instance c, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                        const fmi3ValueReference knowns[], size_t nKnowns, const fmi3Float64 seed[],
                                        size_t nSeed, fmi3Float64 sensitivity[], size_t nSensitivity) {
  return guarded(c, "fmi3GetDirectionalDerivative", [&](Instance& i) {
    if (nSeed != nKnowns || nSensitivity != nUnknowns)
      return i.say(Status::Error, "fmi3GetDirectionalDerivative: the variables are scalars: nSeed must be nKnowns "
                                  "and nSensitivity nUnknowns");
    return i.directionalDerivative("fmi3GetDirectionalDerivative", unknowns, nUnknowns, knowns, nKnowns, seed, sensitivity);
  });
}

fmi3Status fmi3GetAdjointDerivative(fmi3Instance c, const fmi3ValueReference[], size_t, const fmi3ValueReference[],
                                    size_t, const fmi3Float64[], size_t, fmi3Float64[], size_t) {
  return capstan::fmu3::refuse(c, "fmi3GetAdjointDerivative", "not provided (providesAdjointDerivatives=\"false\")");
}

fmi3Status fmi3EnterConfigurationMode(fmi3Instance c) {
  return capstan::fmu3::refuse(c, "fmi3EnterConfigurationMode", "this FMU has no structural parameters");
}
fmi3Status fmi3ExitConfigurationMode(fmi3Instance c) {
  return capstan::fmu3::refuse(c, "fmi3ExitConfigurationMode", "this FMU has no structural parameters");
}

fmi3Status fmi3GetIntervalDecimal(fmi3Instance c, const fmi3ValueReference[], size_t, fmi3Float64[],
                                  fmi3IntervalQualifier[]) {
  return capstan::fmu3::refuse(c, "fmi3GetIntervalDecimal", "this FMU has no clocks");
}
fmi3Status fmi3GetIntervalFraction(fmi3Instance c, const fmi3ValueReference[], size_t, fmi3UInt64[], fmi3UInt64[],
                                   fmi3IntervalQualifier[]) {
  return capstan::fmu3::refuse(c, "fmi3GetIntervalFraction", "this FMU has no clocks");
}
fmi3Status fmi3GetShiftDecimal(fmi3Instance c, const fmi3ValueReference[], size_t, fmi3Float64[]) {
  return capstan::fmu3::refuse(c, "fmi3GetShiftDecimal", "this FMU has no clocks");
}
fmi3Status fmi3GetShiftFraction(fmi3Instance c, const fmi3ValueReference[], size_t, fmi3UInt64[], fmi3UInt64[]) {
  return capstan::fmu3::refuse(c, "fmi3GetShiftFraction", "this FMU has no clocks");
}
fmi3Status fmi3SetIntervalDecimal(fmi3Instance c, const fmi3ValueReference[], size_t, const fmi3Float64[]) {
  return capstan::fmu3::refuse(c, "fmi3SetIntervalDecimal", "this FMU has no clocks");
}
fmi3Status fmi3SetIntervalFraction(fmi3Instance c, const fmi3ValueReference[], size_t, const fmi3UInt64[],
                                   const fmi3UInt64[]) {
  return capstan::fmu3::refuse(c, "fmi3SetIntervalFraction", "this FMU has no clocks");
}
fmi3Status fmi3SetShiftDecimal(fmi3Instance c, const fmi3ValueReference[], size_t, const fmi3Float64[]) {
  return capstan::fmu3::refuse(c, "fmi3SetShiftDecimal", "this FMU has no clocks");
}
fmi3Status fmi3SetShiftFraction(fmi3Instance c, const fmi3ValueReference[], size_t, const fmi3UInt64[],
                                const fmi3UInt64[]) {
  return capstan::fmu3::refuse(c, "fmi3SetShiftFraction", "this FMU has no clocks");
}

fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance c) {
  return guarded(c, "fmi3EvaluateDiscreteStates", [&](Instance&) { return Status::OK; });
}

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance c, fmi3Boolean* discreteStatesNeedUpdate,
                                    fmi3Boolean* terminateSimulation, fmi3Boolean* nominalsOfContinuousStatesChanged,
                                    fmi3Boolean* valuesOfContinuousStatesChanged, fmi3Boolean* nextEventTimeDefined,
                                    fmi3Float64* nextEventTime) {
  return guarded(c, "fmi3UpdateDiscreteStates", [&](Instance& i) {
    if (i.s.mode != Mode::Event) return i.wrongMode("fmi3UpdateDiscreteStates");
    for (fmi3Boolean* flag : {discreteStatesNeedUpdate, terminateSimulation, nominalsOfContinuousStatesChanged,
                              valuesOfContinuousStatesChanged, nextEventTimeDefined})
      if (flag) *flag = false;
    if (nextEventTime) *nextEventTime = 0.0;
    return Status::OK;
  });
}

// ------------------------------------------------------------ Model Exchange

fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance c) {
  return guarded(c, "fmi3EnterContinuousTimeMode", [&](Instance& i) {
    if (!i.modelExchange || i.s.mode != Mode::Event) return i.wrongMode("fmi3EnterContinuousTimeMode");
    i.s.mode = Mode::ContinuousTime;
    return Status::OK;
  });
}

fmi3Status fmi3CompletedIntegratorStep(fmi3Instance c, fmi3Boolean, fmi3Boolean* enterEventMode,
                                       fmi3Boolean* terminateSimulation) {
  return guarded(c, "fmi3CompletedIntegratorStep", [&](Instance& i) {
    if (!i.modelExchange || i.s.mode != Mode::ContinuousTime) return i.wrongMode("fmi3CompletedIntegratorStep");
    if (enterEventMode) *enterEventMode = false;
    if (terminateSimulation) *terminateSimulation = false;
    return Status::OK;
  });
}

fmi3Status fmi3SetTime(fmi3Instance c, fmi3Float64 time) {
  return guarded(c, "fmi3SetTime", [&](Instance& i) {
    if (!i.modelExchange) return i.wrongMode("fmi3SetTime");
    return i.setTime("fmi3SetTime", time);
  });
}

fmi3Status fmi3SetContinuousStates(fmi3Instance c, const fmi3Float64 x[], size_t nx) {
  return guarded(c, "fmi3SetContinuousStates", [&](Instance& i) {
    if (!i.modelExchange) return i.wrongMode("fmi3SetContinuousStates");
    return i.setStates("fmi3SetContinuousStates", x, nx);
  });
}

fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance c, fmi3Float64 dx[], size_t nx) {
  return guarded(c, "fmi3GetContinuousStateDerivatives", [&](Instance& i) {
    if (!i.modelExchange) return i.wrongMode("fmi3GetContinuousStateDerivatives");
    return i.getDerivatives("fmi3GetContinuousStateDerivatives", dx, nx);
  });
}

fmi3Status fmi3GetEventIndicators(fmi3Instance c, fmi3Float64 z[], size_t ni) {
  return guarded(c, "fmi3GetEventIndicators", [&](Instance& i) { return i.eventIndicators("fmi3GetEventIndicators", z, ni); });
}

fmi3Status fmi3GetContinuousStates(fmi3Instance c, fmi3Float64 x[], size_t nx) {
  return guarded(c, "fmi3GetContinuousStates", [&](Instance& i) { return i.getStates("fmi3GetContinuousStates", x, nx); });
}

fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance c, fmi3Float64 nominal[], size_t nx) {
  return guarded(c, "fmi3GetNominalsOfContinuousStates", [&](Instance& i) {
    if (i.checkStates("fmi3GetNominalsOfContinuousStates", nx, nominal) != Status::OK) return Status::Error;
    std::fill(nominal, nominal + nx, 1.0);
    return Status::OK;
  });
}

fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance c, size_t* n) {
  return guarded(c, "fmi3GetNumberOfEventIndicators", [&](Instance& i) {
    if (!n) return i.say(Status::Error, "fmi3GetNumberOfEventIndicators: no place for the number");
    *n = capstan::fmu_model::kEventIndicators;
    return Status::OK;
  });
}

fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance c, size_t* n) {
  return guarded(c, "fmi3GetNumberOfContinuousStates", [&](Instance& i) {
    if (n) *n = std::size_t(i.n());
    return Status::OK;
  });
}

// ------------------------------------------------------------ Co-Simulation

fmi3Status fmi3EnterStepMode(fmi3Instance c) {
  return guarded(c, "fmi3EnterStepMode", [&](Instance& i) {
    if (i.modelExchange || i.s.mode != Mode::Event) return i.wrongMode("fmi3EnterStepMode");
    i.s.mode = Mode::StepComplete;
    return Status::OK;
  });
}

fmi3Status fmi3GetOutputDerivatives(fmi3Instance c, const fmi3ValueReference[], size_t nvr, const fmi3Int32[],
                                    fmi3Float64[], size_t) {
  return guarded(c, "fmi3GetOutputDerivatives", [&](Instance& i) {
    return nvr == 0 ? Status::OK
                    : i.say(Status::Error, "fmi3GetOutputDerivatives: not provided (maxOutputDerivativeOrder=\"0\")");
  });
}

fmi3Status fmi3DoStep(fmi3Instance c, fmi3Float64 currentCommunicationPoint, fmi3Float64 communicationStepSize,
                      fmi3Boolean, fmi3Boolean* eventHandlingNeeded, fmi3Boolean* terminateSimulation,
                      fmi3Boolean* earlyReturn, fmi3Float64* lastSuccessfulTime) {
  return guarded(c, "fmi3DoStep", [&](Instance& i) {
    if (i.modelExchange || i.s.mode != Mode::StepComplete) return i.wrongMode("fmi3DoStep");
    const Status s = i.doStep("fmi3DoStep", currentCommunicationPoint, communicationStepSize);
    if (eventHandlingNeeded) *eventHandlingNeeded = false;
    if (terminateSimulation) *terminateSimulation = false;
    if (earlyReturn) *earlyReturn = false;
    if (lastSuccessfulTime) *lastSuccessfulTime = i.s.t;
    return s;
  });
}

fmi3Status fmi3ActivateModelPartition(fmi3Instance c, fmi3ValueReference, fmi3Float64) {
  return capstan::fmu3::refuse(c, "fmi3ActivateModelPartition", "this FMU has no Scheduled Execution interface");
}

}  // extern "C"
