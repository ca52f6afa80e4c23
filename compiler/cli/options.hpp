// The command line shared by the driver's commands (SPEC §6).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mechanics/mechanism.hpp"
#include "sema/flat.hpp"
#include "sema/sema.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::cli {

struct Options {
  std::string command;
  std::string file;
  std::string model;
  std::vector<std::filesystem::path> includes;
  bool json = false;
  bool color = false;
  // compile
  std::string output;                 // -o: a folder (compile) or a CSV file (simulate)
  std::string templates;              // --templates
  bool ir = false;                    // --ir
  std::string depfile;                // --depfile: Make-syntax dependencies of the header
  bool derivatives = false;           // --derivatives (compile, eval): forwardDynamicsDerivatives
  bool symbolicDerivatives = false;   // --symbolic-derivatives: the same by symbolic differentiation (test oracle)
  std::string massInverse;            // --mass-inverse unrolled|loops|gauss-jordan (compile); empty: by the model's size
  std::string derivativeUdot;         // --derivative-udot fused|call (compile); empty: fused
  std::string quadratic;              // --quadratic unrolled|compact (compile); empty: by the model's size
  std::string recursions;             // --recursions unrolled|loops (compile); empty: by the model's size
  // simulate / eval
  std::optional<double> tEnd, dt, tolerance;
  std::string integrator;
  std::vector<std::string> settings;  // --set NAME=VALUE (run time)
  std::vector<std::string> overrides; // --override NAME=VALUE (compile time: the model as if its binding said so)
  bool interpret = false;
  bool stats = false;                 // --stats (simulate): the integrator's statistics on stderr
  std::string jacobian;               // --jacobian exact|quotients (simulate, cvode): CVODE's Jacobian
  std::string state;                  // --state
  // simulate, models with constraints
  bool constraintErrors = false;               // --constraint-errors: CSV columns of each constraint's errors
  bool assemble = false;                       // eval --assemble: the state moved onto the constraints first
  std::optional<double> baumgarte;             // --baumgarte T: Baumgarte stabilization (s) instead of projection
  std::optional<double> constraintTolerance;   // --constraint-tol X: projection tolerance
  // bench
  std::optional<double> seconds;      // --seconds
  // simulate, test
  std::optional<double> timeout;      // --timeout: wall-clock limit of a simulation run (s)
  // test
  std::vector<std::string> paths;     // model files and folders
  bool update = false;                // --update
  std::string junit;                  // --junit FILE
  std::string report;                 // --report DIR
  int jobs = 0;                       // -j N (0: the number of processors)
  // import, and every command given a .urdf or .sdf file (docs/import.md)
  bool floatingBase = false;          // --floating-base: a Free joint under the root link
  bool noMimic = false;               // --no-mimic: mimicking joints independent, without a warning
  std::vector<std::filesystem::path> packagePaths;  // --package-path DIR: where package:// meshes are
  // library
  bool noBuild = false;               // --no-build: check the settings and print --json's manifest only
  // view, simulate
  std::string trajectory;             // view: TRAJ.csv (else a run makes one)
  std::string view;                   // simulate --view page.html
  // fmu
  std::string fmiVersion;             // --fmi 2
  std::string fmiInterfaces;          // --interface me,cs
};

// A user error without a source position, a kind of the registry
// (compiler/diagnostics/cli.def) with its arguments checked at compile time:
// `capstan: error: MESSAGE [Kind]`, exit 1. failThen prints `after` (a
// compiler's or a program's messages) below it.
template <class... A>
[[noreturn]] void fail(syntax::DiagKindFor<A...> kind, const A&... args);
template <class... A>
[[noreturn]] void failThen(const std::string& after, syntax::DiagKindFor<A...> kind, const A&... args);
// A wrong command line: the message, the command's usage line and how to get
// help; exit 2.
template <class... A>
[[noreturn]] void usageError(syntax::DiagKindFor<A...> kind, const A&... args);
// A warning without a source position: `capstan: warning: MESSAGE [Kind]`.
template <class... A>
void warn(syntax::DiagKindFor<A...> kind, const A&... args);

[[noreturn]] void failWith(syntax::DiagKind kind, const std::string& message, const std::string& after = "");
[[noreturn]] void usageErrorWith(syntax::DiagKind kind, const std::string& message);
void warnWith(syntax::DiagKind kind, const std::string& message);
// Whether diagnostics without a source position are colored (--no-color).
void setDiagnosticColor(bool color);

template <class... A>
void fail(syntax::DiagKindFor<A...> kind, const A&... args) {
  failWith(kind.kind, syntax::diagMessage<A...>(kind, args...));
}
template <class... A>
void failThen(const std::string& after, syntax::DiagKindFor<A...> kind, const A&... args) {
  failWith(kind.kind, syntax::diagMessage<A...>(kind, args...), after);
}
template <class... A>
void usageError(syntax::DiagKindFor<A...> kind, const A&... args) {
  usageErrorWith(kind.kind, syntax::diagMessage<A...>(kind, args...));
}
template <class... A>
void warn(syntax::DiagKindFor<A...> kind, const A&... args) {
  warnWith(kind.kind, syntax::diagMessage<A...>(kind, args...));
}

// The model, checked: diagnostics printed; nullopt (exit status 1) on errors.
struct Loaded {
  syntax::SourceManager sources;
  syntax::DiagnosticEngine diags;
  std::optional<sema::FlatModel> flat;
  std::optional<mechanics::Mechanism> mech;
};
std::unique_ptr<Loaded> load(const Options& opts);
// The model with `overrides` applied (sema::ParameterOverride), checked;
// diagnostics are printed only when there are errors, after a line naming
// `context` ("with the values of `--set`").
std::unique_ptr<Loaded> load(const Options& opts, const std::vector<sema::ParameterOverride>& overrides,
                             const std::string& context);

// `NAME=VALUE` or `NAME[i,j]=VALUE` (VALUE a number or a brace literal) for
// a parameter of `model`, as an override; `variable` gets its index. Exits
// with a message naming `option` on a bad name, shape or value.
sema::ParameterOverride parseOverride(const std::string& option, const std::string& text,
                                      const sema::FlatModel& model, int& variable);
// Every --override of `opts`, against `model`.
std::vector<sema::ParameterOverride> parseOverrides(const Options& opts, const sema::FlatModel& model);

// Whether `file` is a robot description to import (`.urdf`, `.sdf`) rather than a model.
bool isRobotDescription(const std::string& file);
// The model text imported from the .urdf or .sdf `opts.file` (its diagnostics in
// `diags`, its text in `sources`), or nullopt after an error.
std::optional<std::string> importRobot(const Options& opts, syntax::SourceManager& sources,
                                       syntax::DiagnosticEngine& diags);
int importCommand(const Options& opts);
int compile(const Options& opts);
int simulate(const Options& opts);
int eval(const Options& opts);
int bench(const Options& opts);
int test(const Options& opts);
int library(const Options& opts);
int fmu(const Options& opts);
// `capstan sweep ARGS...`: runs the Python module's sweep with ARGS (argv[2..]) as given.
[[noreturn]] void sweepCommand(int argc, char** argv);

}  // namespace capstan::cli
