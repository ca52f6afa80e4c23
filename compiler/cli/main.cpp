// `capstan`: the command-line driver (SPEC §6).
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "cli/options.hpp"
#include "cli/process.hpp"
#include "cli/view.hpp"
#include "mechanics/mechanism.hpp"
#include "sema/sema.hpp"
#include "syntax/diagnostics.hpp"

namespace fs = std::filesystem;
using capstan::syntax::DiagKind;

namespace {

constexpr const char* kUsage = R"(usage: capstan <command> [options]

commands:
  check FILE [--model NAME] [-I DIR]... [--json]
      check a model and print a summary (or, with --json, the flattened
      mechanism as JSON)
  compile FILE -o DIR [--templates DIR] [--ir] [--depfile FILE] [--derivatives]
                [--quadratic unrolled|compact] [--mass-inverse unrolled|loops|gauss-jordan]
                [--derivative-udot fused|call] [--recursions unrolled|loops]
      write the model's C++ header (and with --ir the JSON IR) into DIR;
      --depfile writes every file the header depends on, in Make syntax;
      --quadratic: every body's frame Jacobians, the mass matrix and the
      derivatives' pair terms unrolled, or as loops over values computed
      once, code linear in the model's size (the default picks by the
      model's size);
      --mass-inverse: forwardDynamicsDerivatives' M^-1 unrolled, as loops
      over the tree at run time, or by Gauss-Jordan elimination at run time
      (the default picks by the model's size and shape);
      --derivative-udot: where forwardDynamicsDerivatives is composed of
      inverseDynamicsDerivatives' steps, udot from its own M^-1 (fused, the
      default) or from a forwardDynamics call;
      --recursions: the tree recursions (poses, velocities, energies, bias,
      inverse and forward dynamics, frame kinematics) unrolled, or as loops
      over the tree, for models of hundreds of bodies (the default picks by
      the model's size; not with cables);
      --derivatives adds forwardDynamicsDerivatives (d udot / d(q, u, tau))
      and inverseDynamicsDerivatives (d tau / d(q, u, udot)), from the analytical
      recursions; --symbolic-derivatives the same with forwardDynamicsDerivatives
      by symbolic differentiation of the traced forward dynamics (a test oracle)
  simulate FILE [--t-end T] [--dt H] [--integrator rk4|euler|dopri5|cvode] [--tol TOL]
                [--set NAME=VALUE]... [-o traj.csv] [--interpret] [--timeout S] [--stats]
                [--jacobian exact|quotients]
                [--constraint-errors] [--baumgarte T] [--constraint-tol X] [--view PAGE.html]
      generate, build (cached) and run; CSV on stdout or in -o (with
      --view and no -o, only the page, as `capstan view` writes it); defaults
      from the model's annotation(experiment(...)); cvode: SUNDIALS' BDF
      with the exact Jacobian, for stiff models (--jacobian quotients:
      CVODE's difference quotients instead, without generating the
      derivatives); --stats prints the integrator's statistics (steps,
      right-hand-side evaluations, ...); a model with constraints is
      assembled first and projected onto them after every step (or, with
      --baumgarte T, stabilized with time constant T); --constraint-errors
      adds each constraint's largest error to the CSV
  eval FILE --state STATE.json [--set NAME=VALUE]... [--interpret] [--derivatives] [--assemble]
      evaluate one state and print JSON; --derivatives adds d udot / d(q, u, tau);
      --assemble first moves the state onto the model's constraints, as
      simulate does with the initial state
  bench FILE [--state STATE.json] [--seconds S] [--set NAME=VALUE]...
      build with optimization and print JSON with the median microseconds
      per call of forward dynamics, mass matrix and kinematics
  import ROBOT.urdf|ROBOT.sdf [-o MODEL.cap] [--model NAME] [--floating-base] [--package-path DIR]... [--no-mimic]
      write the robot as a model (on stdout without -o); check, compile,
      simulate, eval and bench also take ROBOT.urdf or ROBOT.sdf directly, with the same
      options (docs/import.md)
  library FILE [-o LIB.so] [--set NAME=VALUE]... [--derivatives] [--json] [--no-build]
      build (cached) the model as a shared library with a C interface
      (capstan/model_library.h: what Python's `capstan` module loads);
      -o copies it out; --json prints where it is, its parameters and its
      experiment (docs/embedding.md); --no-build only checks the settings
  view FILE [TRAJ.csv] -o PAGE.html [simulate's options]
      write one self-contained HTML page (three.js inside; opens offline)
      that animates the model along TRAJ.csv, or along a run made as
      `simulate` would, with its columns plotted beside (docs/view.md)
  fmu FILE -o MODEL.fmu [--interface me,cs] [--fmi 2|3] [--derivatives] [--set NAME=VALUE]...
      write the model as an FMI 2.0 (or 3.0) FMU: modelDescription.xml, the binary
      (Model Exchange and Co-Simulation; a model with constraints
      Co-Simulation only) and its sources (docs/fmi.md); --derivatives:
      Model Exchange's directional derivatives from the generated derivatives
  sweep FILE --param NAME=START:STOP:COUNT... [--output COLUMN]... [--reduce final|max|min|mean]
        [--scheduler ADDRESS] [--workers N] [--t-end T] -o results.csv
      run the model once per point of the parameter grid on a Dask cluster
      (a local one unless --scheduler is given): one CSV row per point
      (docs/python.md; needs the Python module)
  test [PATH...] [--update] [--junit FILE] [--report DIR] [--timeout S] [-j N]
      simulate every model with an experiment annotation in the files and
      folders (default: .) and compare each signal with its reference CSV
  prepare
      compile the runtime's parts that every model's program links (the
      simulation engine, the cable path solver) into the cache now, so that
      a first simulate compiles only the model; capstan's build does it once

options:
  --model NAME   the model to use (default: the last top-level model in FILE)
  -I DIR         add DIR to the library path (also CAPSTAN_PATH, a colon list)
  --json         print the checked mechanism as JSON on stdout
  --no-color     never color diagnostics (also NO_COLOR=1)
  --list-diagnostics   print the name of every diagnostic kind
  --version      print the version
  --set NAME=VALUE       a runtime parameter's value for this run (no
                 recompiling); VALUE is a number or, for an array, a brace
                 literal `{{1,0,0},{0,1,0},{0,0,1}}`; NAME[i] sets one element
  --override NAME=VALUE  any parameter's value, as if the model's binding
                 said so: the model is recompiled with it (check, compile,
                 simulate, eval, bench)
)";

using capstan::cli::Options;
using capstan::cli::usageError;

bool gColor = false;
std::string gCommand;  // the command, once the command line has named it

// The usage lines of `command` in kUsage: its synopsis without the
// description; empty for a command kUsage does not list.
std::string synopsis(const std::string& command) {
  const std::string_view usage = kUsage;
  const std::string head = "\n  " + command + " ";
  std::size_t at = usage.find(head);
  if (command.empty() || at == std::string_view::npos) return "";
  std::string out;
  for (++at; at < usage.size();) {
    const std::size_t end = usage.find('\n', at);
    const std::string_view line = usage.substr(at, end - at);
    const bool continues = line.find_first_not_of(' ') != std::string_view::npos &&
                           line[line.find_first_not_of(' ')] == '[';
    if (!out.empty() && !continues) break;
    out += std::string(out.empty() ? "usage: capstan " : "         ") +
           std::string(line.substr(line.find_first_not_of(' '))) + "\n";
    at = end + 1;
  }
  return out;
}

std::string renderWithoutPlace(capstan::syntax::DiagKind kind, const std::string& message) {
  capstan::syntax::DiagnosticEngine diags;
  const capstan::syntax::SourceManager none;
  return capstan::syntax::render(diags.add(kind, {}, message), none, {gColor, true});
}

}  // namespace

namespace capstan::cli {

void setDiagnosticColor(bool color) { gColor = color; }

[[noreturn]] void usageErrorWith(syntax::DiagKind kind, const std::string& message) {
  std::cerr << renderWithoutPlace(kind, message) << synopsis(gCommand)
            << "run `capstan --help` for every command and option\n";
  std::exit(2);
}

[[noreturn]] void failWith(syntax::DiagKind kind, const std::string& message, const std::string& after) {
  std::cerr << renderWithoutPlace(kind, message) << after;
  if (!after.empty() && after.back() != '\n') std::cerr << "\n";
  std::cerr << "1 error generated.\n";
  std::exit(1);
}

void warnWith(syntax::DiagKind kind, const std::string& message) { std::cerr << renderWithoutPlace(kind, message); }

double number(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v)) usageError(syntax::DiagKind::UsageNotANumber, option, text);
  return v;
}

}  // namespace capstan::cli

namespace {

using capstan::cli::number;

Options parseArgs(int argc, char** argv) {
  Options opts;
  opts.color = isatty(STDERR_FILENO) && !std::getenv("NO_COLOR");
  gColor = opts.color;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) usageError(DiagKind::UsageOptionNeedsValue, a);
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--version") {
      std::cout << "capstan " << CAPSTAN_VERSION << "\n";
      std::exit(0);
    } else if (a == "--list-diagnostics") {
      for (const auto& info : capstan::syntax::allDiagKinds()) std::cout << info.name << "\n";
      std::exit(0);
    } else if (a == "--model") {
      opts.model = value();
    } else if (a == "-I") {
      opts.includes.emplace_back(value());
    } else if (a.rfind("-I", 0) == 0 && a.size() > 2) {
      opts.includes.emplace_back(a.substr(2));
    } else if (a == "--json") {
      opts.json = true;
    } else if (a == "--no-color") {
      opts.color = gColor = false;
    } else if (a == "-o") {
      opts.output = value();
    } else if (a == "--templates") {
      opts.templates = value();
    } else if (a == "--ir") {
      opts.ir = true;
    } else if (a == "--depfile") {
      opts.depfile = value();
    } else if (a == "--t-end") {
      opts.tEnd = number(a, value());
    } else if (a == "--dt") {
      opts.dt = number(a, value());
    } else if (a == "--tol") {
      opts.tolerance = number(a, value());
    } else if (a == "--integrator") {
      opts.integrator = value();
    } else if (a == "--set") {
      opts.settings.push_back(value());
    } else if (a == "--override") {
      opts.overrides.push_back(value());
    } else if (a == "--interpret") {
      opts.interpret = true;
    } else if (a == "--stats") {
      opts.stats = true;
    } else if (a == "--jacobian") {
      opts.jacobian = value();
      if (opts.jacobian != "exact" && opts.jacobian != "quotients")
        usageError(DiagKind::UsageOptionValue, "--jacobian", "`exact` or `quotients`");
    } else if (a == "--mass-inverse") {
      opts.massInverse = value();
      if (opts.massInverse != "unrolled" && opts.massInverse != "loops" && opts.massInverse != "gauss-jordan")
        usageError(DiagKind::UsageOptionValue, "--mass-inverse", "`unrolled`, `loops` or `gauss-jordan`");
    } else if (a == "--derivative-udot") {
      opts.derivativeUdot = value();
      if (opts.derivativeUdot != "fused" && opts.derivativeUdot != "call")
        usageError(DiagKind::UsageOptionValue, "--derivative-udot", "`fused` or `call`");
    } else if (a == "--recursions") {
      opts.recursions = value();
      if (opts.recursions != "unrolled" && opts.recursions != "loops")
        usageError(DiagKind::UsageOptionValue, "--recursions", "`unrolled` or `loops`");
    } else if (a == "--quadratic") {
      opts.quadratic = value();
      if (opts.quadratic != "unrolled" && opts.quadratic != "compact")
        usageError(DiagKind::UsageOptionValue, "--quadratic", "`unrolled` or `compact`");
    } else if (a == "--derivatives") {
      opts.derivatives = true;
    } else if (a == "--symbolic-derivatives") {
      opts.derivatives = true;
      opts.symbolicDerivatives = true;
    } else if (a == "--constraint-errors") {
      opts.constraintErrors = true;
    } else if (a == "--assemble") {
      opts.assemble = true;
    } else if (a == "--baumgarte") {
      opts.baumgarte = number(a, value());
      if (!(*opts.baumgarte > 0)) usageError(DiagKind::UsageOptionValue, "--baumgarte", "a positive time constant (s)");
    } else if (a == "--constraint-tol") {
      opts.constraintTolerance = number(a, value());
      if (!(*opts.constraintTolerance > 0)) usageError(DiagKind::UsageOptionValue, "--constraint-tol", "positive");
    } else if (a == "--state") {
      opts.state = value();
    } else if (a == "--seconds") {
      opts.seconds = number(a, value());
    } else if (a == "--timeout") {
      opts.timeout = number(a, value());
      if (!(*opts.timeout > 0)) usageError(DiagKind::UsageOptionValue, "--timeout", "positive");
    } else if (a == "--floating-base") {
      opts.floatingBase = true;
    } else if (a == "--no-mimic") {
      opts.noMimic = true;
    } else if (a == "--package-path") {
      opts.packagePaths.emplace_back(value());
    } else if (a == "--view") {
      opts.view = value();
    } else if (a == "--fmi") {
      opts.fmiVersion = value();
    } else if (a == "--interface") {
      opts.fmiInterfaces = value();
    } else if (a == "--no-build") {
      opts.noBuild = true;
    } else if (a == "--update") {
      opts.update = true;
    } else if (a == "--junit") {
      opts.junit = value();
    } else if (a == "--report") {
      opts.report = value();
    } else if (a == "-j" || (a.rfind("-j", 0) == 0 && a.size() > 2)) {
      const std::string n = a == "-j" ? value() : a.substr(2);
      const double jobs = number("-j", n);
      if (jobs < 1 || jobs > 256 || jobs != std::floor(jobs)) usageError(DiagKind::UsageOptionValue, "-j", "a whole number of jobs from 1 to 256");
      opts.jobs = static_cast<int>(jobs);
    } else if (!a.empty() && a[0] == '-') {
      usageError(DiagKind::UsageUnknownOption, a);
    } else if (opts.command.empty()) {
      opts.command = a;
      gCommand = a;
    } else if (opts.command == "test") {
      opts.paths.push_back(a);
    } else if (opts.file.empty()) {
      opts.file = a;
    } else if (opts.command == "view" && opts.trajectory.empty()) {
      opts.trajectory = a;
    } else {
      usageError(DiagKind::UsageUnexpectedArgument, a);
    }
  }
  if (opts.command.empty()) usageError(DiagKind::UsageNoCommand);
  return opts;
}

// `capstan prepare`: takes no FILE.
int prepare(const Options& opts) {
  if (!opts.file.empty()) usageError(DiagKind::UsageUnexpectedArgument, opts.file);
  for (const fs::path& object : capstan::cli::prepareRuntimeObjects()) std::cout << "ready: " << object.string() << "\n";
  return 0;
}

int check(const Options& opts) {
  const std::unique_ptr<capstan::cli::Loaded> loaded = capstan::cli::load(opts);
  if (!loaded) return 1;
  if (opts.json) {
    std::cout << capstan::mechanics::toJson(*loaded->flat, *loaded->mech).dump(2) << "\n";
  } else {
    std::cout << capstan::mechanics::summary(*loaded->flat, *loaded->mech);
  }
  return 0;
}

}  // namespace

namespace {

int run(const Options& opts) {
  // The commands that run children stop them on SIGINT/SIGTERM and exit 128 + signal.
  if (opts.command == "simulate" || opts.command == "test" || opts.command == "eval" || opts.command == "bench" ||
      opts.command == "prepare" || opts.command == "library" || opts.command == "fmu" || opts.command == "view")
    capstan::cli::installInterruptHandlers();
  if (opts.command == "prepare") return prepare(opts);
  if (opts.command == "check") return check(opts);
  if (opts.command == "compile") return capstan::cli::compile(opts);
  if (opts.command == "simulate") return opts.view.empty() ? capstan::cli::simulate(opts) : capstan::cli::simulateWithView(opts);
  if (opts.command == "view") return capstan::cli::view(opts);
  if (opts.command == "test") return capstan::cli::test(opts);
  if (opts.command == "eval") return capstan::cli::eval(opts);
  if (opts.command == "bench") return capstan::cli::bench(opts);
  if (opts.command == "import") return capstan::cli::importCommand(opts);
  if (opts.command == "library") return capstan::cli::library(opts);
  if (opts.command == "fmu") return capstan::cli::fmu(opts);
  usageError(DiagKind::UsageUnknownCommand, opts.command);
}

}  // namespace

int main(int argc, char** argv) {
  // Its options are the Python module's (python/capstan/sweep.py), passed on as given.
  if (argc > 1 && std::string_view(argv[1]) == "sweep") capstan::cli::sweepCommand(argc, argv);
  const Options opts = parseArgs(argc, argv);
  capstan::cli::setDiagnosticColor(opts.color);
  int status = 0;
  try {
    status = run(opts);
  } catch (const std::exception& e) {
    // Only internal bugs throw; user errors are diagnostics.
    std::cerr << "capstan: internal error: " << e.what() << "\n";
    return 3;
  }
  // What went to standard output (check --json, eval's JSON, test's lines)
  // must have arrived: a full disk or a closed stdout is an error, not a
  // silent exit 0.
  errno = 0;
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "capstan: error: cannot write the standard output" << (errno ? ": " : "")
              << (errno ? std::strerror(errno) : "") << "\n";
    return status == 0 ? 1 : status;
  }
  return status;
}
