// Faults at run time, located in the model: a force law that computed NaN
// or infinity, an external C++ function that threw. Shared by simulate and
// eval, for generated code and the interpreter alike (the interpreter
// re-evaluates the state the run reports).
#pragma once

#include <Eigen/Core>

#include <capstan/sim/simulate.hpp>

#include <optional>

#include "cli/options.hpp"
#include "codegen/flat_eval.hpp"
#include "codegen/interpret.hpp"

namespace capstan::cli {

// A force law that evaluated to NaN or infinity: which (index into
// FlatModel::forceLaws), its value and when.
struct NonFiniteLaw {
  int law = -1;
  double value = 0, time = 0;
};

// The first force law that is not finite at (t, q, u), if any.
std::optional<NonFiniteLaw> nonFiniteForceLaw(codegen::Interpreter& model, double t, const Eigen::VectorXd& q,
                                              const Eigen::VectorXd& u);

// NonFiniteForceLaw at the law's place in the model, on stderr.
void reportNonFinite(const Options& opts, const Loaded& loaded, const NonFiniteLaw& n);
// The rows a run wrote before its fault, and where (`-`: stdout): a note
// under the fault's error.
struct RowsKept {
  long rows = 0;
  std::string output;
};

// ExternalCallFailed (or ExternalCallCrashed) at the call's place in the
// model, on stderr; with `kept`, a note of the rows written before it.
void reportCallFailed(const Options& opts, const Loaded& loaded, const codegen::ExternalCallFailed& e, double t,
                      const std::optional<RowsKept>& kept = std::nullopt);

// After the driver program crashed (or threw) evaluating the model at
// `fault` (its crash state, guard.hpp): the external function that crashes
// or throws there, found by evaluating the model there with the
// interpreter (which catches a crash at the call, cli/external.cpp) and
// reported as reportCallFailed does. False if no call fails there.
bool locateCrash(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                 const capstan::sim::FaultState& fault, const RowsKept& kept);

// After a run that the model's code ended with an exception (`what`) at
// `fault`: the call that threw, found by evaluating the model there with
// the interpreter and reported as reportCallFailed does; the driver's words
// if no call throws there.
void locateThrown(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                  const capstan::sim::FaultState& fault, const std::string& what, const RowsKept& kept);

// After a run that failed in a step: the force law that made udot not
// finite, located in the model, from the first such state. Where no force
// law is at fault the integration itself diverged: NoteNonFiniteStep then
// compares the step `dt` of `integrator` with the fastest mode of the
// linearized dynamics at the start state (q0, u0), where it can be
// estimated, and says what to change.
void locateNonFinite(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                     const capstan::sim::FaultState& fault, capstan::sim::Integrator integrator, double dt);

// A run or an evaluation that a bushing's gimbal lock stopped: NoteGimbalLock
// at the declaration of bushing `bushing` (its index in the generated
// class's bushingNames: the layout's bushings in order), on stderr; under
// RunStopped with `error` (the runtime's words) when it is given, alone
// after a driver that has printed its error.
void reportGimbalLock(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout, int bushing,
                      const std::string& error = "");

}  // namespace capstan::cli
