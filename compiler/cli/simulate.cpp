// `capstan simulate`: the run the command line asks for, as a
// capstan::sim::SimulateRequest, in the driver program built around the
// generated header or, with --interpret, in process with the interpreter;
// what stops a run reported, a non-finite force law located in the model.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <capstan/sim/evaluate.hpp>
#include <capstan/sim/guard.hpp>
#include <capstan/sim/request.hpp>
#include "cli/constraints.hpp"
#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "cli/faults.hpp"
#include "cli/generate.hpp"
#include "cli/process.hpp"
#include "codegen/flat_eval.hpp"
#include "codegen/interpret.hpp"
#include "codegen/render.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Experiment {
  double tEnd = 0, dt = 0, tol = 0;
  capstan::sim::Integrator integrator = capstan::sim::Integrator::dopri5;
};

Experiment experiment(const Options& opts, const Loaded& loaded) {
  Experiment e;
  const auto& ex = loaded.flat->experiment;
  const double start = ex && ex->startTime ? *ex->startTime : 0.0;
  if (opts.tEnd) e.tEnd = *opts.tEnd;
  else if (ex && ex->stopTime) e.tEnd = *ex->stopTime - start;
  else fail(syntax::DiagKind::NoStopTime);
  if (e.tEnd < 0) fail(syntax::DiagKind::SettingNegative, "--t-end");
  e.dt = opts.dt ? *opts.dt : (ex && ex->interval ? *ex->interval : capstan::sim::defaultInterval(e.tEnd));
  if (!(e.dt > 0)) fail(syntax::DiagKind::SettingNotPositive, "--dt");
  e.tol = opts.tolerance ? *opts.tolerance : (ex && ex->tolerance ? *ex->tolerance : 1e-8);
  if (!(e.tol > 0)) fail(syntax::DiagKind::SettingNotPositive, "--tol");
  // The annotation's name is checked where it is written (sema,
  // ExperimentIntegratorUnknown); the option's here.
  const std::string integrator =
      !opts.integrator.empty() ? opts.integrator : ex && ex->integrator ? *ex->integrator : "dopri5";
  const auto known = capstan::sim::parseIntegrator(integrator);
  if (!known) fail(syntax::DiagKind::IntegratorUnknown, integrator, capstan::sim::integratorList());
  e.integrator = *known;
  if (!opts.jacobian.empty() && e.integrator != capstan::sim::Integrator::cvode)
    fail(syntax::DiagKind::JacobianNotCvode, integrator);
  using capstan::sim::kSmallestTolerance;  // what adaptive integrators can meet (request.hpp)
  if (e.tol < kSmallestTolerance &&
      (e.integrator == capstan::sim::Integrator::dopri5 || e.integrator == capstan::sim::Integrator::cvode))
    fail(syntax::DiagKind::ToleranceTooSmall, e.tol, integrator, kSmallestTolerance);
#ifndef CAPSTAN_CVODE
  if (e.integrator == capstan::sim::Integrator::cvode)
    fail(syntax::DiagKind::CvodeUnavailable);
#endif
  return e;
}

// Whether `cvode` gets the exact Jacobian: unless `--jacobian quotients`
// asks for CVODE's difference quotients; not through an external C++
// function, which brings no derivatives; and not with constraints, whose
// udot comes from the constraint solver while the generated derivatives
// are those of the unconstrained forwardDynamics; and not with a cable
// wrap with friction (`frictionWrap`), whose derivatives the path's
// sensitivities do not cover (difference quotients then, with a note).
bool exactJacobian(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                   const std::optional<std::pair<std::string, double>>& frictionWrap) {
  return opts.jacobian != "quotients" && loaded.flat->functions.empty() && layout.constraintRows == 0 &&
         !frictionWrap;
}
void noteWithoutDerivatives(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                            const std::optional<std::pair<std::string, double>>& frictionWrap) {
  if (opts.jacobian == "quotients") return;
  if (!loaded.flat->functions.empty())
    std::cerr << "capstan: note: the model calls external C++ functions, which bring no derivatives: CVODE "
                 "approximates its Jacobian by difference quotients\n";
  else if (layout.constraintRows > 0)
    std::cerr << "capstan: note: the model has constraints, whose solver the generated derivatives do not cover: "
                 "CVODE approximates its Jacobian by difference quotients\n";
  else if (frictionWrap)
    std::cerr << "capstan: note: the cable wrap `" << frictionWrap->first << "` has capstan friction, whose "
              << "derivatives are not available yet: CVODE approximates its Jacobian by difference quotients\n";
}

// The run the command line asks for, as capstan::sim takes it.
capstan::sim::SimulateRequest simulateRequest(const Options& opts, const Loaded& loaded,
                                              const codegen::ModelLayout& layout, const Experiment& e,
                                              const std::string& output) {
  capstan::sim::SimulateRequest r;
  r.run.loop.tEnd = e.tEnd;
  r.run.loop.dt = e.dt;
  r.run.loop.integrator = e.integrator;
  r.run.loop.tolerance = e.tol;
  r.run.columns.constraintErrors = opts.constraintErrors;
  if (opts.baumgarte) r.run.baumgarte = *opts.baumgarte;
  if (opts.constraintTolerance) r.run.constraintTolerance = *opts.constraintTolerance;
  r.run.exactJacobian = exactJacobian(opts, loaded, layout, std::nullopt);  // and the cables' wraps, below
  if (opts.timeout) r.run.wallClockLimit = *opts.timeout;
  r.output = output;
  r.stats = opts.stats;
  return r;
}

// "`friction` (capstan_friction), `drag` (drag_model)": the model's external functions.
std::string externalNames(const Loaded& loaded) {
  std::string names;
  for (const sema::FlatFunction& f : loaded.flat->functions)
    names += (names.empty() ? "`" : ", `") + f.name + "` (" + f.cppName + ")";
  return names;
}

// Warns (WrapNotTouching, at the Wrap's `near`, or its declaration) for each
// wrap surface a cable does not touch at the start state (q, u): the
// path may be meant to lie on it, and a `near` point on the wrong side, or
// none, has put it in the air (then the wrap does nothing until the
// bodies move the surface into the cable).
void warnWrapsNotTouching(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                          const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  const codegen::ModelLayout& layout = interp.layout();
  if (layout.cables.empty()) return;
  std::vector<codegen::CableEvaluation> cables;
  try {
    cables = interp.cables(0.0, q, u);
  } catch (const codegen::CableFailed&) {
    return;  // the run says why, at its first step
  }
  syntax::DiagnosticEngine diags;
  for (std::size_t c = 0; c < layout.cables.size(); ++c) {
    const codegen::CableLayout& cable = layout.cables[c];
    for (std::size_t i = 0; i < cable.obstacles.size(); ++i) {
      const codegen::CableObstacleLayout& o = cable.obstacles[i];
      const capstan::cable::ObstacleState& state = cables[c].path.obstacles.at(i);
      if (o.kind != codegen::CableObstacleKind::Surface || state.active) continue;
      const sema::FlatComponent& wrap = loaded.flat->components.at(static_cast<std::size_t>(o.component));
      syntax::SourceRange at = wrap.range;
      std::string hint = " (the wrap has no `near` point)";
      if (const auto near = wrap.parameters.find("near"); near != wrap.parameters.end()) {
        const sema::FlatVariable& v = loaded.flat->variables.at(static_cast<std::size_t>(near->second));
        bool given = false;
        if (v.value)
          for (const double x : v.value->numbers) given = given || x != 0.0;
        if (given) {
          at = v.binding ? v.binding->range : v.range;
          hint = "";
        }
      }
      diags.report(syntax::DiagKind::WrapNotTouching, at, cable.name, o.name, state.separation, hint);
    }
  }
  if (!diags.diagnostics().empty()) std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
}

bool failedInStep(const capstan::sim::Result& r) {
  return !r.status.ok && r.status.signal == 0 && r.stopped.empty() && !r.thrown && r.writeError.empty();
}

int simulateInterpreted(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                        const capstan::sim::SimulateRequest& request) {
  codegen::Interpreter interp(*loaded.flat, *loaded.mech, layout, {}, {}, loadExternalFunctions(opts, loaded));
  codegen::InterpretedModel model(interp);
  // The settings as the driver program sets them on the generated class.
  if (const std::string unknown = capstan::sim::applySettings(model, request.settings); !unknown.empty())
    throw std::logic_error("the interpreter has no parameter element `" + unknown + "`");
  Eigen::VectorXd q, u;
  interp.initialState(q, u);
  if (layout.constraintRows > 0) {
    const Eigen::VectorXd q0 = q, u0 = u;
    if (!assemble(opts, loaded, layout, interp, constraintSettings(opts), q, u)) return 1;
    warnMovedStart(opts, loaded, layout, q0, u0, q, u);
    warnRedundantRows(opts, loaded, layout, interp, q, "the assembled initial state");
  }
  warnWrapsNotTouching(opts, loaded, interp, q, u);
  const auto frictionWrap = cableWrapWithFriction(layout, interp);
  if (request.run.loop.integrator == capstan::sim::Integrator::cvode)
    noteWithoutDerivatives(opts, loaded, layout, frictionWrap);
  std::cout.flush();
  const std::string& output = request.output;
  const int fd = output == "-" ? STDOUT_FILENO : ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail(syntax::DiagKind::CannotWriteFile, output, std::strerror(errno));
  capstan::sim::Request run = request.run;
  run.exactJacobian = run.exactJacobian && !frictionWrap;
  run.loop.stop = interruptFlag();
  capstan::sim::Result result;
  {
    capstan::sim::RowWriter out(fd);  // the rows written so far stay, however the run ends
    // exit() called by an external C++ function, or one that does not
    // return past the time limit, ends capstan itself: the rows go to disk
    // first and the message says what happened. (One that crashes comes
    // back to its call, ExternalCallFailed below: cli/external.cpp.)
    capstan::sim::GuardOptions guarded;
    guarded.wallClockLimit = run.wallClockLimit;
    guarded.catchCrashes = false;
    const capstan::sim::RunGuard guard(out, std::move(guarded));
    result = capstan::sim::simulate(model, q, u, run, out);
  }
  if (fd != STDOUT_FILENO) ::close(fd);
  if (result.thrown) {
    // A function that threw (or crashed: cli/external.cpp) is at its call,
    // as the compiled path finds it (locateThrown).
    try {
      std::rethrow_exception(result.thrown->exception);
    } catch (const codegen::ExternalCallFailed& x) {
      reportCallFailed(opts, loaded, x, result.thrown->state.t, RowsKept{result.rows, output});
    } catch (...) {
      std::cerr << capstan::sim::report(result, output);
    }
    return 1;
  }
  if (request.stats && !result.status.statistics.empty())
    std::cerr << capstan::sim::statisticsText(run.loop.integrator, result.status);
  std::cerr << capstan::sim::report(result, output);
  if (result.gimbalLock >= 0) reportGimbalLock(opts, loaded, layout, result.gimbalLock);
  if (failedInStep(result) && result.nonFinite)
    locateNonFinite(opts, loaded, interp, *result.nonFinite, run.loop.integrator, run.loop.dt);
  return capstan::sim::exitStatus(result);
}

}  // namespace

int simulate(const Options& opts) {
  const auto loaded = load(opts);
  if (!loaded) return 1;
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  std::vector<std::vector<double>> values;
  const auto settings = parseSettings(opts, *loaded, layout, values);
  const Experiment e = experiment(opts, *loaded);
  const std::string output = opts.output.empty() ? "-" : opts.output;
  if (layout.constraintRows == 0 && (opts.constraintErrors || opts.baumgarte || opts.constraintTolerance))
    fail(syntax::DiagKind::NoConstraintsForOption, "`--constraint-errors`, `--baumgarte` and `--constraint-tol` are");
  capstan::sim::SimulateRequest request = simulateRequest(opts, *loaded, layout, e, output);
  request.settings = settings;
  if (opts.interpret) return simulateInterpreted(opts, *loaded, layout, request);
  // Headers and calls checked, located, before the driver is built.
  const codegen::ExternalFunctions external = loadExternalFunctions(opts, *loaded);
  std::optional<std::pair<std::string, double>> frictionWrap;  // the first cable wrap with friction
  if (layout.constraintRows > 0 || !layout.cables.empty()) {
    // Assembled here first, for located diagnostics; the driver assembles
    // the same way with the generated code.
    codegen::Interpreter interp(*loaded->flat, *loaded->mech, layout, values, {}, external);
    Eigen::VectorXd q, u;
    interp.initialState(q, u);
    if (layout.constraintRows > 0) {
      const Eigen::VectorXd q0 = q, u0 = u;
      if (!assemble(opts, *loaded, layout, interp, constraintSettings(opts), q, u)) return 1;
      warnMovedStart(opts, *loaded, layout, q0, u0, q, u);
      warnRedundantRows(opts, *loaded, layout, interp, q, "the assembled initial state");
    }
    warnWrapsNotTouching(opts, *loaded, interp, q, u);
    frictionWrap = cableWrapWithFriction(layout, interp);
  }
  // The one build of the model (cli/driver.hpp); with its derivatives when
  // they make CVODE's exact Jacobian.
  DriverRequest build;
  build.purpose = "simulate";
#ifdef CAPSTAN_CVODE
  if (e.integrator == capstan::sim::Integrator::cvode) {
    build.derivatives = exactJacobian(opts, *loaded, layout, frictionWrap);
    request.run.exactJacobian = request.run.exactJacobian && build.derivatives;
    noteWithoutDerivatives(opts, *loaded, layout, frictionWrap);
  }
#endif
  const fs::path exe = buildDriver(opts, *loaded, layout, build);
  // Every parameter: the build does not hold their defaults.
  request.settings = settingsForDriver(layout, values);
  request.progress = isatty(STDERR_FILENO);
  // Where the driver writes the first state whose udot was not finite, or
  // the state where the model's code threw, if the run fails: the
  // interpreter then finds the force law or the call, at its line.
  const fs::path faultFile = fs::temp_directory_path() / ("capstan-fault-" + std::to_string(getpid()) + ".txt");
  request.faultFile = faultFile.string();
  std::vector<std::string> argv = {exe.string(), "simulate"};
  for (std::string& a : capstan::sim::toArguments(request)) argv.push_back(std::move(a));
  std::cout.flush();
  // The driver keeps the time limit itself (the request's wallClockLimit,
  // and its RunGuard a second later); this one is for a driver that does
  // neither.
  const ChildResult run = runChild(argv, {"", opts.timeout ? *opts.timeout + 5.0 : 0.0});
  // A crash in the model's code: the driver left the state it was
  // evaluating; the interpreter runs it again there, catching the crash at
  // the external function's call (cli/external.cpp) to say which, where.
  bool crashLocated = false;
  if (run.status > 128 && !loaded->flat->functions.empty()) {
    const auto fault = capstan::sim::readFaultFile(faultFile.string(), static_cast<std::size_t>(layout.nq),
                                                   static_cast<std::size_t>(layout.nu));
    if (fault && fault->crashSignal > 0) {
      codegen::Interpreter interp(*loaded->flat, *loaded->mech, layout, values, {}, external);
      crashLocated = locateCrash(opts, *loaded, interp, fault->state, RowsKept{fault->rows, output});
    }
  }
  if (run.status == 1) {
    const auto fault = capstan::sim::readFaultFile(faultFile.string(), static_cast<std::size_t>(layout.nq),
                                                   static_cast<std::size_t>(layout.nu));
    if (fault && fault->gimbalLock >= 0) {
      reportGimbalLock(opts, *loaded, layout, fault->gimbalLock);
    } else if (fault) {
      codegen::Interpreter interp(*loaded->flat, *loaded->mech, layout, values, {}, external);
      if (fault->thrown) locateThrown(opts, *loaded, interp, fault->state, *fault->thrown, RowsKept{fault->rows, output});
      else locateNonFinite(opts, *loaded, interp, fault->state, e.integrator, e.dt);
    }
  }
  std::error_code removed;
  fs::remove(faultFile, removed);
  // Interrupted: the driver has said where it stopped.
  if (run.interrupted) {
    if (run.status == -1) std::cerr << "capstan: interrupted before the simulation started\n";
    return 128 + interruptSignal();
  }
  if (run.timedOut) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", *opts.timeout);
    std::cerr << "capstan: error: the simulation ran longer than " << limit << " s (`--timeout`) and was stopped\n";
    return 1;
  }
  // Status 1: the driver has said why (`capstan: error: ...`); anything else is a crash.
  if (crashLocated) {
    // Said above, at the call.
  } else if (run.status == -1) {
    std::cerr << "capstan: error: cannot run the simulation program `" << exe.string() << "`\n";
  } else if (run.status > 128) {
    // Killed by a signal of its own: a crash. The driver wrote its complete
    // rows first (capstan_driver.cpp, onCrash).
    const int sig = run.status - 128;
    std::cerr << "capstan: error: the simulation program crashed (" << ::strsignal(sig) << ", signal " << sig << ")";
    if (!loaded->flat->functions.empty())
      std::cerr << "; the model calls external C++ functions (" << externalNames(*loaded)
                << "): run with `--interpret` under a debugger to see where";
    if (output != "-") std::cerr << "; the rows computed before it are in `" << output << "`";
    std::cerr << "\n";
  } else if (run.status != 0 && run.status != 1)
    std::cerr << "capstan: error: the simulation failed (exit status " << run.status << ")\n";
  return run.status == 0 ? 0 : 1;
}

}  // namespace capstan::cli
