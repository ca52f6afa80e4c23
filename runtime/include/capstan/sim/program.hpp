// The model program's modes that do not depend on the model: what `capstan
// simulate` and `capstan eval` run in the program capstan builds around a
// generated header (compiler/templates/capstan_driver.cpp), for any model,
// through capstan::sim::AnyModel (any_model.hpp).
//
// Declared here; defined in capstan/sim/program_run.hpp, which one
// translation unit includes: capstan compiles that unit once per runtime,
// compiler and flags (with CAPSTAN_CABLE_COMPILED_APART, and with
// CAPSTAN_CVODE and SUNDIALS where capstan has them) and links it to every
// model's program, so that a model's program compiles only the model.
//
//   program simulate [REQUEST]...     (request.hpp: the one encoding)
//   program eval STATE.txt [NAME=VALUE]...
//
// STATE.txt (written by capstan): `time T`, `q v...`, `u v...`; what is
// absent keeps the model's q0/u0. `fext v...` (6 per body: [n; f] about
// the body origin, in World) makes eval call forwardDynamics with these
// external forces. Eval prints every record of capstan::sim::evaluate
// (evaluate.hpp) as a `key[#element] v...` line (full precision), which
// capstan turns into JSON. Errors: `capstan: error: ...` on stderr, exit
// status 1. SIGINT or SIGTERM during `simulate` ends the run on a whole row:
// `capstan: interrupted at t = ...; N rows written` on stderr, exit status
// 128 + the signal.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "capstan/sim/any_model.hpp"
#include "capstan/sim/simulate.hpp"
#include "capstan/sim/table.hpp"

namespace capstan::sim {

// Runs mode argv[1] (`simulate` or `eval`) of the program for `model`;
// the exit status. Any other mode: a usage message, status 2.
int runProgram(AnyModel& model, int argc, char** argv);

// Sets the runtime parameters of `model` from `NAME=VALUE` arguments
// argv[first..] (request.hpp's encoding); false, with a message on stderr,
// for one that is malformed or that the model does not have.
bool applySettingArguments(AnyModel& model, int argc, char** argv, int first);

// Reads STATE.txt into t, q, u (which hold the initial state on entry)
// and, when it has them and `fext` is given, the external forces (fext
// sized nb on entry; `external` set). False, with a message on stderr, if
// it cannot be read.
bool readStateFile(const char* path, double& t, AnyModel::Q& q, AnyModel::U& u,
                   AnyModel::ExternalForces* fext = nullptr, bool* external = nullptr);

// The engine for a caller in the same process (the model library's C
// interface, library.hpp): simulate.hpp's simulate into `table` from the
// model's initial state, progress(fraction of tEnd) after each row. An
// exception out of the model ends the run as simulate says (Result's
// `thrown`); the caller reports it.
Result simulateInto(AnyModel& model, const Request& run, RowTable& table, const std::function<void(double)>& progress);

// udot at (t, q, u) as `capstan eval` gives it: the forward dynamics with
// the external forces `fext` when given and, for a model with
// constraints, the constraint solver's exact acceleration-level solution.
void accelerations(AnyModel& model, double t, const AnyModel::Q& q, const AnyModel::U& u,
                   const AnyModel::ExternalForces* fext, AnyModel::U& udot);

// simulate.hpp's advance: (q, u) from request.loop.tStart to tEnd, a
// co-simulation step (the FMU's doStep).
Result advanceModel(AnyModel& model, AnyModel::Q& q, AnyModel::U& u, const Request& request);

// A constrained model's state moved onto its constraints, as simulate
// assembles its start state (request's constraint settings); "" when it
// could, else why not. Nothing for a model without constraints.
std::string assembleModel(AnyModel& model, AnyModel::Q& q, AnyModel::U& u, const Request& request);

// The column table's names and units, and one row's values (columns.hpp).
std::vector<std::pair<std::string, std::string>> columnList(const AnyModel& model, const ColumnOptions& options);
std::vector<double> columnRow(const AnyModel& model, double t, const AnyModel::Q& q, const AnyModel::U& u,
                              const ColumnOptions& options);

// evaluate.hpp's records at (t, q, u), with the external forces `fext`
// (one per body) when given; with `derivatives` where the model has them.
void evaluateRecords(AnyModel& model, double t, const AnyModel::Q& q, const AnyModel::U& u,
                     const AnyModel::ExternalForces* fext, bool derivatives,
                     const std::function<void(std::string_view key, int element, const std::vector<double>& values)>& emit);

}  // namespace capstan::sim
