// `capstan simulate` and `capstan eval`: generate the model header, build a
// small driver around it with the system C++ compiler (cached by content
// hash), run it; or, with --interpret, run the reference interpreter. Also
// the driver building and state reading that `capstan bench` shares
// (cli/driver.hpp).
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

#include <capstan/sim/evaluate.hpp>
#include <capstan/sim/request.hpp>
#include "cli/constraints.hpp"
#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "cli/generate.hpp"
#include "cli/process.hpp"
#include "codegen/flat_eval.hpp"
#include "codegen/interpret.hpp"
#include "codegen/render.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::string readFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::uint64_t fnv1a(const std::string& text, std::uint64_t h) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

fs::path cacheRoot() {
  if (const char* env = std::getenv("CAPSTAN_CACHE_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "capstan";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "capstan";
  return fs::temp_directory_path() / "capstan-cache";
}

std::string cxx() {
  if (const char* env = std::getenv("CXX"); env && *env) return env;
  return "c++";
}

const std::vector<std::string>& simulateFlags() {
  static const std::vector<std::string> flags = {"-std=c++20", "-O2"};
  return flags;
}

const std::vector<std::string>& evalFlags() {
  static const std::vector<std::string> flags = {"-std=c++20", "-O0"};
  return flags;
}

const std::vector<std::string>& benchFlags() {
  static const std::vector<std::string> flags = [] {
    std::vector<std::string> f = {"-std=c++20"};
    const char* env = std::getenv("CAPSTAN_BENCH_CXXFLAGS");
    std::istringstream words(env && *env ? env : "-O3 -march=native -DNDEBUG");
    for (std::string w; words >> w;) f.push_back(w);
    return f;
  }();
  return flags;
}

namespace {

// The runtime headers the driver includes: installed beside the program
// (../include), else the source tree's runtime/include.
fs::path runtimeIncludeDir() {
  std::error_code ec;
  const fs::path installed = fs::read_symlink("/proc/self/exe", ec).parent_path() / "../include";
  if (!ec && fs::exists(installed / "capstan/integrators.hpp", ec)) return installed;
  return CAPSTAN_RUNTIME_INCLUDE;
}

}  // namespace

// The driver executable for the generated header and these flags, built once
// per content hash (header, driver sources, the runtime headers it includes,
// compiler, flags). The cache folder holds every source it was built from.
fs::path buildDriver(const Generated& g, const std::string& className, const std::vector<std::string>& extraFlags,
                     const std::vector<std::string>& libraries) {
  const fs::path support = codegen::defaultTemplateDir();
  const std::string driverSource = readFile(support / "capstan_driver.cpp");
  if (driverSource.empty()) fail("cannot read the driver sources in `" + support.string() + "`");
  // The runtime headers the driver includes, directly or through the model
  // header (the cable solver's tree of headers when the model has cables):
  // the closure of their `#include <capstan/...>` lines, and nothing else,
  // is copied beside the sources and hashed into the key.
  const fs::path runtime = runtimeIncludeDir();
  std::vector<std::pair<std::string, std::string>> runtimeSources;
  std::vector<std::string> pending;
  const auto scan = [&](const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t at = line.find_first_not_of(" \t");
      if (at == std::string::npos || line.compare(at, 8, "#include") != 0) continue;
      const std::size_t open = line.find_first_of("<\"", at + 8);
      if (open == std::string::npos || line.compare(open + 1, 8, "capstan/") != 0) continue;
      const std::size_t close = line.find_first_of(">\"", open + 1);
      if (close != std::string::npos) pending.push_back(line.substr(open + 1, close - open - 1));
    }
  };
  scan(g.header);
  scan(driverSource);
  std::set<std::string> seen;
  while (!pending.empty()) {
    const std::string header = pending.back();
    pending.pop_back();
    if (!seen.insert(header).second) continue;
    std::string text = readFile(runtime / header);
    if (text.empty()) fail("cannot read the runtime's `" + header + "` in `" + runtime.string() + "`");
    scan(text);
    runtimeSources.emplace_back(header, std::move(text));
  }
  std::sort(runtimeSources.begin(), runtimeSources.end());
  std::vector<std::string> flags = extraFlags;
  flags.push_back("-DCAPSTAN_MODEL_CLASS=" + className);
  if (g.constraints) flags.push_back("-DCAPSTAN_CONSTRAINTS");
  // The external functions' IncludeDirectory folders, and their headers'
  // text in the key (an edited header rebuilds).
  for (const std::string& dir : g.includeDirectories) flags.insert(flags.end(), {"-I", dir});
  std::string externalHeaders;
  for (const std::string& header : g.externalHeaders) externalHeaders += readFile(header);
  std::string key = g.header + externalHeaders + driverSource + cxx() + CAPSTAN_VERSION;
  for (const auto& [header, text] : runtimeSources) key += text;
  for (const auto& f : flags) key += "\n" + f;
  for (const auto& l : libraries) key += "\n" + l;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  const fs::path dir = cacheRoot() / hex;
  const fs::path exe = dir / "driver";
  std::error_code ec;
  if (fs::exists(exe, ec)) return exe;
  fs::create_directories(dir / "capstan", ec);
  if (ec) fail("cannot create the cache folder `" + dir.string() + "`: " + ec.message());
  // One build per folder: another capstan (`capstan test -j`, parallel
  // CTest runs) building the same sources holds the lock until its driver
  // is in place, and this one then takes it instead of compiling it again.
  // The lock goes with the descriptor when this process ends, however it ends.
  const int lock = ::open((dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock >= 0) {
    while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
      if (interruptSignal() != 0) {
        std::cerr << "capstan: interrupted while waiting for another capstan to build the generated code\n";
        std::exit(128 + interruptSignal());
      }
    }
  }
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock};
  if (fs::exists(exe, ec)) return exe;
  // Written aside and renamed into place: another capstan (`capstan test -j`,
  // parallel CTest runs) may be compiling the same sources from this folder.
  auto put = [&](const fs::path& path, const std::string& text) {
    const fs::path aside = path.string() + ".tmp" + std::to_string(getpid());
    std::ofstream(aside) << text;
    fs::rename(aside, path, ec);
    if (ec) fail("cannot write `" + path.string() + "`: " + ec.message());
  };
  put(dir / g.fileName, g.header);
  put(dir / "capstan_driver.cpp", driverSource);
  for (const auto& [header, text] : runtimeSources) {
    fs::create_directories((dir / header).parent_path(), ec);
    put(dir / header, text);
  }
  const fs::path tmp = dir / ("driver.tmp" + std::to_string(getpid()));
  const fs::path logFile = dir / ("build.log" + std::to_string(getpid()));
  std::vector<std::string> argv = {cxx()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-isystem", CAPSTAN_EIGEN_INCLUDE, "-I", dir.string(), "-include", (dir / g.fileName).string(),
                           (dir / "capstan_driver.cpp").string(), "-o", tmp.string()});
  argv.insert(argv.end(), libraries.begin(), libraries.end());  // after the sources that need them
  const ChildResult built = runChild(argv, {logFile.string(), 0});
  const std::string log = readFile(logFile);
  fs::remove(logFile, ec);
  if (built.status != 0 || built.interrupted) {
    fs::remove(tmp, ec);
    if (built.interrupted) {
      std::cerr << "capstan: interrupted while building the generated code\n";
      std::exit(128 + interruptSignal());
    }
    fail("building the generated code failed (" + cxx() + ", in " + dir.string() + "):\n" + log);
  }
  fs::rename(tmp, exe, ec);
  if (ec) fail("cannot install `" + exe.string() + "`: " + ec.message());
  return exe;
}

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
  else fail("no stop time: pass `--t-end T` or give the model `annotation(experiment(StopTime = ...))`");
  if (e.tEnd < 0) fail("`--t-end` must not be negative");
  e.dt = opts.dt ? *opts.dt : (ex && ex->interval ? *ex->interval : std::max(e.tEnd / 500.0, 1e-6));
  if (!(e.dt > 0)) fail("`--dt` must be positive");
  e.tol = opts.tolerance ? *opts.tolerance : (ex && ex->tolerance ? *ex->tolerance : 1e-8);
  if (!(e.tol > 0)) fail("`--tol` must be positive");
  const std::string integrator =
      !opts.integrator.empty() ? opts.integrator : ex && ex->integrator ? *ex->integrator : "dopri5";
  if (const auto known = capstan::sim::parseIntegrator(integrator)) {
    e.integrator = *known;
  } else {
    if (opts.integrator.empty()) {  // the annotation's: at its place in the model
      syntax::DiagnosticEngine diags;
      diags.report(syntax::DiagKind::ExperimentIntegratorUnknown, ex->integratorRange, {integrator});
      std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
      std::exit(1);
    }
    fail("unknown integrator `" + integrator + "`; use " + capstan::sim::integratorList());
  }
  if (!opts.jacobian.empty() && e.integrator != capstan::sim::Integrator::cvode)
    fail("`--jacobian` is for `cvode`, not `" + integrator + "`");
#ifndef CAPSTAN_CVODE
  if (e.integrator == capstan::sim::Integrator::cvode)
    fail("`cvode` needs SUNDIALS, which this capstan was built without; install libsundials-dev "
         "(scripts/setup.sh does) and rebuild capstan");
#endif
  return e;
}

// A force law that evaluated to NaN or infinity: which (index into
// FlatModel::forceLaws), its value and when.
struct NonFiniteLaw {
  int law = -1;
  double value = 0, time = 0;
};

// The first force law that is not finite at (t, q, u), if any.
std::optional<NonFiniteLaw> nonFiniteForceLaw(codegen::Interpreter& model, double t, const Eigen::VectorXd& q,
                                              const Eigen::VectorXd& u) {
  for (const auto& [law, value] : model.forceLawValues(t, q, u))
    if (!std::isfinite(value)) return NonFiniteLaw{law, value, t};
  return std::nullopt;
}

std::string timeText(double t) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", t);
  return b;
}

// Located errors at run time: a force law that is not finite, an external
// function that threw.
void reportNonFinite(const Options& opts, const Loaded& loaded, const NonFiniteLaw& n) {
  const sema::FlatForceLaw& law = loaded.flat->forceLaws.at(static_cast<std::size_t>(n.law));
  syntax::DiagnosticEngine diags;
  diags.report(syntax::DiagKind::NonFiniteForceLaw, law.rhs ? law.rhs->range : law.range,
               {codegen::forceLawName(*loaded.flat, n.law), std::isnan(n.value) ? "not a number (NaN)" : (n.value > 0 ? "+infinity" : "-infinity"),
                timeText(n.time)});
  std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
}

void reportCallFailed(const Options& opts, const Loaded& loaded, const codegen::ExternalCallFailed& e, double t) {
  const sema::FlatFunction& f = loaded.flat->functions.at(static_cast<std::size_t>(e.function));
  syntax::DiagnosticEngine diags;
  diags.report(syntax::DiagKind::ExternalCallFailed, e.call, {f.cppName, timeText(t), e.what()})
      .note(syntax::DiagKind::NoteDeclaredHere, f.externalRange, {f.name});
  std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
}

// Whether `cvode` gets the exact Jacobian: unless `--jacobian quotients`
// asks for CVODE's difference quotients; not through an external C++
// function, which brings no derivatives; and not with constraints, whose
// udot comes from the constraint solver while the generated derivatives
// are those of the unconstrained forwardDynamics; and not with cables,
// whose path solver brings no derivatives (difference quotients then,
// with a note).
bool exactJacobian(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout) {
  return opts.jacobian != "quotients" && loaded.flat->functions.empty() && layout.constraintRows == 0 &&
         layout.cables.empty();
}
void noteWithoutDerivatives(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout) {
  if (opts.jacobian == "quotients") return;
  if (!loaded.flat->functions.empty())
    std::cerr << "capstan: note: the model calls external C++ functions, which bring no derivatives: CVODE "
                 "approximates its Jacobian by difference quotients\n";
  else if (layout.constraintRows > 0)
    std::cerr << "capstan: note: the model has constraints, whose solver the generated derivatives do not cover: "
                 "CVODE approximates its Jacobian by difference quotients\n";
  else if (!layout.cables.empty())
    std::cerr << "capstan: note: the model has cables, whose path solver brings no derivatives: CVODE "
                 "approximates its Jacobian by difference quotients\n";
}

// The constraint solver's settings from the command line.
capstan::ConstraintSettings constraintSettings(const Options& opts) {
  capstan::ConstraintSettings s;
  if (opts.baumgarte) s.baumgarteTimeConstant = *opts.baumgarte;
  if (opts.constraintTolerance) s.tolerance = *opts.constraintTolerance;
  return s;
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
  r.run.exactJacobian = exactJacobian(opts, loaded, layout);
  r.output = output;
  r.stats = opts.stats;
  return r;
}

// After a run that failed in a step: the force law that made udot not
// finite, located in the model, from the first such state (if there was one).
void locateNonFinite(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                     const capstan::sim::FaultState& fault) {
  const Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(fault.q.data(), Eigen::Index(fault.q.size()));
  const Eigen::VectorXd u = Eigen::Map<const Eigen::VectorXd>(fault.u.data(), Eigen::Index(fault.u.size()));
  try {
    if (const auto n = nonFiniteForceLaw(interp, fault.t, q, u)) reportNonFinite(opts, loaded, *n);
  } catch (const codegen::ExternalCallFailed& x) {
    reportCallFailed(opts, loaded, x, fault.t);
  }
}

// "`friction` (capstan_friction), `drag` (drag_model)": the model's external functions.
std::string externalNames(const Loaded& loaded) {
  std::string names;
  for (const sema::FlatFunction& f : loaded.flat->functions)
    names += (names.empty() ? "`" : ", `") + f.name + "` (" + f.cppName + ")";
  return names;
}

bool failedInStep(const capstan::sim::Result& r) {
  return !r.status.ok && r.status.signal == 0 && r.stopped.empty() && r.writeError.empty();
}

int simulateInterpreted(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                        std::vector<std::vector<double>> values, const capstan::sim::SimulateRequest& request) {
  codegen::Interpreter interp(*loaded.flat, *loaded.mech, layout, std::move(values), {},
                              loadExternalFunctions(opts, loaded));
  Eigen::VectorXd q, u;
  interp.initialState(q, u);
  if (layout.constraintRows > 0) {
    if (!assemble(opts, loaded, layout, interp, constraintSettings(opts), q, u)) return 1;
    warnRedundantRows(opts, loaded, layout, interp, q, "the assembled initial state");
  }
  if (request.run.loop.integrator == capstan::sim::Integrator::cvode) noteWithoutDerivatives(opts, loaded, layout);
  const codegen::InterpretedModel model(interp);
  std::cout.flush();
  const std::string& output = request.output;
  const int fd = output == "-" ? STDOUT_FILENO : ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail("cannot write `" + output + "`: " + std::strerror(errno));
  capstan::sim::Request run = request.run;
  run.loop.stop = interruptFlag();
  capstan::sim::Result result;
  {
    capstan::sim::RowWriter out(fd);  // the rows written so far stay, however the run ends
    try {
      result = capstan::sim::simulate(model, q, u, run, out);
    } catch (const codegen::ExternalCallFailed& x) {
      out.flush();
      if (fd != STDOUT_FILENO) ::close(fd);
      reportCallFailed(opts, loaded, x, model.lastTime());
      return 1;
    }
  }
  if (fd != STDOUT_FILENO) ::close(fd);
  if (request.stats && !result.status.statistics.empty())
    std::cerr << capstan::sim::statisticsText(run.loop.integrator, result.status);
  std::cerr << capstan::sim::report(result, output);
  if (failedInStep(result) && result.nonFinite) locateNonFinite(opts, loaded, interp, *result.nonFinite);
  return capstan::sim::exitStatus(result);
}

// The driver for `cvode`: built with CVODE and SUNDIALS (found when capstan
// was configured), and, unless the model calls external C++ functions or
// has constraints, or `--jacobian quotients` is asked for, generated with
// forwardDynamicsDerivatives, whose derivatives make CVODE's exact Jacobian.
void cvodeBuild([[maybe_unused]] const Loaded& loaded, [[maybe_unused]] const codegen::ModelLayout& layout,
                [[maybe_unused]] Options& generateOptions,
                [[maybe_unused]] std::vector<std::string>& flags, [[maybe_unused]] std::vector<std::string>& libraries) {
#ifdef CAPSTAN_CVODE
  flags.push_back("-DCAPSTAN_CVODE");
  // Not -isystem /usr/include, which would reorder the compiler's own system folders.
  if (const std::string include = CAPSTAN_SUNDIALS_INCLUDE; include != "/usr/include") flags.insert(flags.end(), {"-isystem", include});
  libraries.push_back(CAPSTAN_SUNDIALS_CVODE_LIBRARY);
  if (exactJacobian(generateOptions, loaded, layout)) {
    generateOptions.derivatives = true;
    flags.push_back("-DCAPSTAN_DERIVATIVES");
  }
  noteWithoutDerivatives(generateOptions, loaded, layout);
#endif
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
    fail("the model has no constraints: `--constraint-errors`, `--baumgarte` and `--constraint-tol` are for models "
         "with cut joints or contacts");
  capstan::sim::SimulateRequest request = simulateRequest(opts, *loaded, layout, e, output);
  if (opts.interpret) return simulateInterpreted(opts, *loaded, layout, std::move(values), request);
  if (layout.constraintRows > 0) {
    // Assembled here first, for located diagnostics; the driver assembles
    // the same way with the generated code.
    codegen::Interpreter interp(*loaded->flat, *loaded->mech, layout, values);
    Eigen::VectorXd q, u;
    interp.initialState(q, u);
    if (!assemble(opts, *loaded, layout, interp, constraintSettings(opts), q, u)) return 1;
    warnRedundantRows(opts, *loaded, layout, interp, q, "the assembled initial state");
  }
  // Headers and calls checked, located, before the driver is built.
  const codegen::ExternalFunctions external = loadExternalFunctions(opts, *loaded);
  std::vector<std::string> flags = simulateFlags(), libraries;
  Options generateOptions = opts;
  if (e.integrator == capstan::sim::Integrator::cvode) cvodeBuild(*loaded, layout, generateOptions, flags, libraries);
  const Generated g = generate(generateOptions, *loaded, layout);
  const fs::path exe = buildDriver(g, layout.className, flags, libraries);
  request.progress = isatty(STDERR_FILENO);
  request.settings = settings;
  // Where the driver writes the first state whose udot was not finite, if
  // the run fails: the interpreter then finds the force law, at its line.
  const fs::path faultFile = fs::temp_directory_path() / ("capstan-fault-" + std::to_string(getpid()) + ".txt");
  request.faultFile = faultFile.string();
  std::vector<std::string> argv = {exe.string(), "simulate"};
  for (std::string& a : capstan::sim::toArguments(request)) argv.push_back(std::move(a));
  std::cout.flush();
  const ChildResult run = runChild(argv, {"", opts.timeout ? *opts.timeout : 0.0});
  if (std::ifstream fault{faultFile}; fault && run.status == 1) {
    capstan::sim::FaultState state;
    state.q.resize(static_cast<std::size_t>(layout.nq));
    state.u.resize(static_cast<std::size_t>(layout.nu));
    std::string word;
    fault >> word >> state.t >> word;
    for (double& v : state.q) fault >> v;
    fault >> word;
    for (double& v : state.u) fault >> v;
    if (fault) {
      codegen::Interpreter interp(*loaded->flat, *loaded->mech, layout, values, {}, external);
      locateNonFinite(opts, *loaded, interp, state);
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
  if (run.status == -1) std::cerr << "capstan: error: cannot run the simulation program `" << exe.string() << "`\n";
  else if (run.status > 128) {
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

namespace {

double finiteNumber(const json& v, const std::string& where) {
  if (!v.is_number()) fail("STATE.json: " + where + " must be a number, not " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail("STATE.json: " + where + " is not finite");
  return x;
}

// The numbers of a (nested) JSON array, row-major.
void flattenNumbers(const json& v, const std::string& where, std::vector<double>& out) {
  if (!v.is_array()) {
    out.push_back(finiteNumber(v, where));
    return;
  }
  for (const json& item : v) flattenNumbers(item, where, out);
}

// STATE.json's `external_forces`: {"BODY": [nx, ny, nz, fx, fy, fz], ...},
// body names as eval's `bodies`, into one spatial force per body (zero for
// the bodies it leaves out).
capstan::ExternalForces<double> readExternalForces(const json& value, const codegen::ModelLayout& layout) {
  if (!value.is_object())
    fail("STATE.json: `external_forces` must be an object of body names to [nx, ny, nz, fx, fy, fz] "
         "(N*m, N; about the body origin, in World)");
  capstan::ExternalForces<double> fext(layout.bodies.size(), capstan::Vec6<double>::Zero());
  for (const auto& [body, arr] : value.items()) {
    std::size_t b = 0;
    while (b < layout.bodies.size() && layout.bodies[b].name != body) ++b;
    if (b == layout.bodies.size()) {
      std::string names;
      for (const auto& bl : layout.bodies) names += (names.empty() ? "`" : ", `") + bl.name + "`";
      fail("STATE.json: `external_forces` names `" + body + "`, which is not a body of the model; its bodies are " +
           (names.empty() ? "none" : names));
    }
    const std::string where = "`external_forces." + body + "`";
    const std::size_t n = arr.is_array() ? arr.size() : 1;
    if (!arr.is_array() || n != 6)
      fail("STATE.json: " + where + " has " + std::to_string(n) + (n == 1 ? " value" : " values") +
           "; a spatial force has 6: [nx, ny, nz, fx, fy, fz], the moment about the body origin, then the force, "
           "in World");
    for (std::size_t k = 0; k < 6; ++k)
      fext[b][static_cast<Eigen::Index>(k)] = finiteNumber(arr[k], "`external_forces." + body + "[" + std::to_string(k + 1) + "]`");
  }
  return fext;
}

// Reads STATE.json into q, u (starting from the initial state), time, --set
// style settings and, when `fext` is given, the external forces.
void readState(const Options& opts, const codegen::ModelLayout& layout, Eigen::VectorXd& q, Eigen::VectorXd& u,
               double& time, std::vector<std::string>& settings, capstan::ExternalForces<double>* fext = nullptr) {
  std::ifstream f(opts.state);
  if (!f) fail("cannot read `" + opts.state + "`");
  std::stringstream text;
  text << f.rdbuf();
  json s;
  try {
    s = json::parse(text.str());
  } catch (const json::exception& e) {
    // JSON has no NaN or Infinity, and numbers too large for a double (1e999) overflow.
    constexpr int kNumberOverflow = 406;
    const bool nonFinite = e.id == kNumberOverflow || text.str().find("NaN") != std::string::npos ||
                           text.str().find("Infinity") != std::string::npos;
    fail("`" + opts.state + "` is not valid JSON: " + e.what() +
         (nonFinite ? "; every number must be finite (JSON has no NaN or Infinity)" : ""));
  }
  if (!s.is_object()) fail("STATE.json must be an object with `time`, `q`, `u` and `parameters`");
  for (const auto& [key, value] : s.items()) {
    if (key == "time") {
      time = finiteNumber(value, "`time`");
    } else if (key == "q" || key == "u") {
      if (!value.is_object()) fail("STATE.json: `" + key + "` must be an object of joint names to arrays");
      for (const auto& [joint, arr] : value.items()) {
        const codegen::JointLayout* j = nullptr;
        for (const auto& jl : layout.joints)
          if (jl.name == joint) j = &jl;
        if (!j) fail("STATE.json: `" + key + "` names `" + joint + "`, which is not a joint with coordinates in the model");
        const int n = key == "q" ? j->nq() : j->nu();
        const json items = arr.is_array() ? arr : json::array({arr});
        if (static_cast<int>(items.size()) != n)
          fail("STATE.json: `" + key + "." + joint + "` has " + std::to_string(items.size()) + " values; joint `" + joint +
               "` has " + std::to_string(n));
        for (int k = 0; k < n; ++k) {
          const double x = finiteNumber(items[static_cast<std::size_t>(k)], "`" + key + "." + joint + "[" + std::to_string(k + 1) + "]`");
          (key == "q" ? q[j->qIndex() + k] : u[j->uIndex() + k]) = x;
        }
      }
    } else if (key == "parameters") {
      if (!value.is_object()) fail("STATE.json: `parameters` must be an object of names to values");
      for (const auto& [name, v] : value.items()) {
        const std::string where = "`parameters." + name + "`";
        char b[64];
        if (!v.is_array()) {
          std::snprintf(b, sizeof b, "%.17g", finiteNumber(v, where));
          settings.push_back(name + "=" + b);
          continue;
        }
        std::vector<double> flat;  // row-major
        flattenNumbers(v, where, flat);
        const int p = layout.findParameter(name);
        if (p < 0) {  // not a runtime parameter: parseSettings says what it is
          settings.push_back(name + "=0");
          continue;
        }
        const std::vector<int>& shape = layout.parameters[static_cast<std::size_t>(p)].shape;
        if (shape.empty()) fail("STATE.json: " + where + " is an array; parameter `" + name + "` is a scalar");
        std::size_t count = 1;
        for (int d : shape) count *= static_cast<std::size_t>(d);
        if (flat.size() != count)
          fail("STATE.json: " + where + " has " + std::to_string(flat.size()) + " values; parameter `" + name + "` has " +
               std::to_string(count));
        for (std::size_t k = 0; k < count; ++k) {
          std::string subscripts;
          std::size_t rest = k;
          for (std::size_t d = shape.size(); d-- > 0;) {
            const auto extent = static_cast<std::size_t>(shape[d]);
            subscripts = std::to_string(rest % extent + 1) + (subscripts.empty() ? "" : ",") + subscripts;
            rest /= extent;
          }
          std::snprintf(b, sizeof b, "%.17g", flat[k]);
          settings.push_back(name + "[" + subscripts + "]=" + b);
        }
      }
    } else if (key == "external_forces") {
      const capstan::ExternalForces<double> forces = readExternalForces(value, layout);
      if (fext) *fext = forces;
    } else {
      fail("STATE.json: unknown key `" + key + "`; expected `time`, `q`, `u`, `parameters` or `external_forces`");
    }
  }
}

json perJoint(const codegen::ModelLayout& layout, const std::vector<double>& v, bool isU) {
  json out = json::object();
  for (const auto& j : layout.joints) {
    const int n = isU ? j.nu() : j.nq(), at = isU ? j.uIndex() : j.qIndex();
    json a = json::array();
    for (int k = 0; k < n; ++k) a.push_back(v.at(static_cast<std::size_t>(at + k)));
    out[j.name] = a;
  }
  return out;
}

}  // namespace

EvalState resolveState(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout) {
  EvalState st;
  // Parameters first (the initial state depends on them), then the state.
  std::vector<std::string> fromFile;
  if (!opts.state.empty()) {
    Eigen::VectorXd q0 = Eigen::VectorXd::Zero(layout.nq), u0 = Eigen::VectorXd::Zero(layout.nu);
    double t0 = 0;
    readState(opts, layout, q0, u0, t0, fromFile);
  }
  st.settings = parseSettings(opts, loaded, layout, st.values, fromFile);
  codegen::Interpreter interp(*loaded.flat, *loaded.mech, layout, st.values);
  interp.initialState(st.q, st.u);
  if (!opts.state.empty()) {
    std::vector<std::string> ignored;
    readState(opts, layout, st.q, st.u, st.time, ignored, &st.externalForces);
  }
  return st;
}

fs::path writeStateFile(const EvalState& st) {
  const fs::path path = fs::temp_directory_path() / ("capstan-state-" + std::to_string(getpid()) + ".txt");
  std::ofstream f(path);
  f.precision(17);
  f << "time " << st.time << "\nq";
  for (int i = 0; i < st.q.size(); ++i) f << " " << st.q[i];
  f << "\nu";
  for (int i = 0; i < st.u.size(); ++i) f << " " << st.u[i];
  f << "\n";
  if (!st.externalForces.empty()) {
    f << "fext";
    for (const auto& F : st.externalForces)
      for (int k = 0; k < 6; ++k) f << " " << F[k];
    f << "\n";
  }
  if (!f) fail("cannot write the state file `" + path.string() + "`");
  return path;
}

std::vector<std::string> settingArguments(const std::vector<std::pair<std::string, double>>& settings) {
  std::vector<std::string> args;
  for (const auto& [name, v] : settings) {
    char vb[64];
    std::snprintf(vb, sizeof vb, "%.17g", v);
    args.push_back(name + "=" + vb);
  }
  return args;
}

std::string runDriver(const fs::path& exe, const std::string& mode, const EvalState& state,
                      const std::vector<std::string>& extra) {
  const fs::path stateFile = writeStateFile(state);
  std::vector<std::string> argv = {exe.string(), mode, stateFile.string()};
  for (const auto& a : extra) argv.push_back(a);
  for (const auto& a : settingArguments(state.settings)) argv.push_back(a);
  const fs::path logFile = stateFile.string() + ".out";
  const ChildResult run = runChild(argv, {logFile.string(), 0});
  const std::string log = readFile(logFile);
  std::error_code ec;
  fs::remove(stateFile, ec);
  fs::remove(logFile, ec);
  if (run.interrupted) {
    std::cerr << "capstan: interrupted\n";
    std::exit(128 + interruptSignal());
  }
  if (run.status != 0) fail("the generated code failed (exit status " + std::to_string(run.status) + "):\n" + log);
  return log;
}

namespace {

// eval's "constraints" (SPEC §6): per constraint, its rows of the solved
// values; a contact's velocity and acceleration errors and multipliers as
// Simbody's Vec3s (x, y, z) in its frame C, x and y zero without rolling.
json constraintsJson(const codegen::ModelLayout& layout, std::map<std::string, std::vector<double>>& rows) {
  json out = json::object();
  int contact = 0;
  for (const codegen::ConstraintLayout& c : layout.constraints) {
    auto take = [&](const std::string& key, bool holonomicOnly) {
      const std::vector<double>& v = rows[key];
      std::vector<double> x;
      for (int r = c.holonomicRow; r < c.holonomicRow + c.holonomic; ++r) x.push_back(v.at(static_cast<std::size_t>(r)));
      if (!holonomicOnly)
        for (int r = c.nonholonomicRow; r < c.nonholonomicRow + c.nonholonomic; ++r)
          x.push_back(v.at(static_cast<std::size_t>(r)));
      return x;
    };
    json entry;
    entry["position_error"] = take("position_errors", true);
    if (c.kind != mechanics::ConstraintKind::SphereOnSphere) {
      entry["velocity_error"] = take("velocity_errors", false);
      entry["acceleration_error"] = take("acceleration_errors", false);
      entry["multipliers"] = take("multipliers", false);
      out[c.name] = entry;
      continue;
    }
    // Rows (normal, then x, y when rolling) to (x, y, z).
    auto xyz = [&](const std::string& key) {
      const std::vector<double> v = take(key, false);
      return v.size() == 3 ? std::vector<double>{v[1], v[2], v[0]} : std::vector<double>{0.0, 0.0, v.at(0)};
    };
    const std::string k = "#" + std::to_string(contact++);
    const std::vector<double> lambda = xyz("multipliers");
    const std::vector<double>& R = rows["contact_R" + k];  // row-major R_WC
    std::vector<double> force(3, 0.0);
    for (int r = 0; r < 3; ++r)
      for (int j = 0; j < 3; ++j) force[static_cast<std::size_t>(r)] -= R.at(static_cast<std::size_t>(3 * r + j)) * lambda[static_cast<std::size_t>(j)];
    entry["velocity_error"] = xyz("velocity_errors");
    entry["acceleration_error"] = xyz("acceleration_errors");
    entry["multipliers"] = lambda;
    entry["force_on_B_in_G"] = force;
    entry["contact_frame_in_G"] = {{"R", R}, {"p", rows["contact_p" + k]}};
    entry["separation"] = rows["separation" + k].at(0);
    out[c.name] = entry;
  }
  return out;
}

}  // namespace

int eval(const Options& opts) {
  if (opts.state.empty()) usageError("`eval` needs `--state STATE.json`");
  const auto loaded = load(opts);
  if (!loaded) return 1;
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  if (opts.derivatives && layout.constraintRows > 0)
    fail("`--derivatives` gives the derivatives of the tree's forward dynamics (forwardDynamicsDerivatives); "
         "the model has constraints, and the derivatives of the constrained accelerations are not available yet");
  EvalState st = resolveState(opts, *loaded, layout);
  // Compiled for the interpreter; for generated code, it checks headers and
  // calls with located errors before the driver is built, and locates a
  // force law that is not finite.
  codegen::Interpreter interp(*loaded->flat, *loaded->mech, layout, st.values, {},
                              loadExternalFunctions(opts, *loaded));
  if (opts.assemble) {
    if (layout.constraintRows == 0) fail("the model has no constraints: `--assemble` is for models with cut joints or contacts");
    if (!assemble(opts, *loaded, layout, interp, constraintSettings(opts), st.q, st.u)) return 1;
  }
  const Eigen::VectorXd& q = st.q;
  const Eigen::VectorXd& u = st.u;
  const double time = st.time;
  if (layout.constraintRows > 0) warnRedundantRows(opts, *loaded, layout, interp, q, "the state evaluated");

  std::map<std::string, std::vector<double>> rows;  // capstan::sim::evaluate's records: key[#element] -> values
  if (opts.derivatives && !layout.cables.empty())
    fail("`--derivatives` is not available for a model with cables: the cable path solver brings no derivative");
  try {
    if (opts.interpret) {
      const codegen::InterpretedModel model(interp);
      try {
        capstan::sim::evaluate(model, time, q, u, st.externalForces.empty() ? nullptr : &st.externalForces,
                               opts.derivatives,
                               [&](std::string_view key, int element, std::vector<double> values) {
                                 rows[capstan::sim::evalKey(key, element)] = std::move(values);
                               });
      } catch (const capstan::sim::ModelStopped& e) {
        fail(e.message);
      } catch (const codegen::UnsupportedExpression& e) {
        fail(std::string(e.what()) + " is not available: an external C++ function brings no derivative");
      }
    } else {
      // An external function that throws stops the driver; the interpreter
      // finds which call, at its place in the model (ExternalCallFailed).
      if (!loaded->flat->functions.empty()) {
        interp.forceLawValues(time, q, u);
        interp.outputs(time, q, u);
      }
      const Generated g = generate(opts, *loaded, layout);
      // One driver for an eval with external forces and one without: it
      // has both forwardDynamics overloads (compiler/templates/capstan_driver.cpp).
      std::vector<std::string> flags = evalFlags();
      // And only one for --derivatives calls forwardDynamicsDerivatives,
      // which the header then has (generate: TraceOptions::derivatives).
      if (opts.derivatives) flags.push_back("-DCAPSTAN_DERIVATIVES");
      const fs::path exe = buildDriver(g, layout.className, flags);
      std::istringstream in(runDriver(exe, "eval", st));
      for (std::string line; std::getline(in, line);) {  // `key[#element] v...`
        std::istringstream ls(line);
        std::string key;
        ls >> key;
        std::vector<double>& v = rows[key];
        for (std::string number; ls >> number;) v.push_back(std::strtod(number.c_str(), nullptr));
      }
    }
    const auto finite = [](const std::vector<double>& v) {
      return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
    };
    if (!finite(rows["udot"])) {
      if (const auto n = nonFiniteForceLaw(interp, time, q, u)) {
        reportNonFinite(opts, *loaded, *n);
        return 1;
      }
    }
  } catch (const codegen::ExternalCallFailed& x) {
    reportCallFailed(opts, *loaded, x, time);
    return 1;
  }
  json out;
  out["nq"] = layout.nq;
  out["nu"] = layout.nu;
  out["q"] = perJoint(layout, rows["q"], false);
  out["u"] = perJoint(layout, rows["u"], true);
  out["qdot"] = perJoint(layout, rows["qdot"], false);
  out["udot"] = perJoint(layout, rows["udot"], true);
  out["kinetic_energy"] = rows["kinetic_energy"].at(0);
  out["potential_energy"] = rows["potential_energy"].at(0);
  json M = json::array();
  for (int r = 0; r < layout.nu; ++r) {
    json row = json::array();
    for (int c = 0; c < layout.nu; ++c) row.push_back(rows["mass_matrix"].at(static_cast<std::size_t>(r * layout.nu + c)));
    M.push_back(row);
  }
  out["mass_matrix"] = M;
  json bodies = json::object();
  for (std::size_t b = 0; b < layout.bodies.size(); ++b) {
    const std::string k = "#" + std::to_string(b);
    bodies[layout.bodies[b].name] = {{"R_WB", rows["R_WB" + k]}, {"p_WB", rows["p_WB" + k]}, {"w_WB", rows["w_WB" + k]},
                                     {"v_WB", rows["v_WB" + k]}};
  }
  out["bodies"] = bodies;
  json jacobians = json::object(), jacobianDotU = json::object();
  for (std::size_t f = 0; f < layout.jacobianFrames.size(); ++f) {
    const std::string k = "#" + std::to_string(f);
    const std::vector<double>& J = rows["J" + k];
    json rowsJ = json::array();
    for (std::size_t r = 0; r < 6; ++r) {
      json row = json::array();
      for (std::size_t c = 0; c < static_cast<std::size_t>(layout.nu); ++c) row.push_back(J.at(r * static_cast<std::size_t>(layout.nu) + c));
      rowsJ.push_back(row);
    }
    jacobians[layout.jacobianFrames[f].name] = rowsJ;
    jacobianDotU[layout.jacobianFrames[f].name] = rows["JdotU" + k];
  }
  out["jacobians"] = jacobians;
  json bushingsOut = json::object();
  std::size_t bushing = 0;
  for (const codegen::ForceElementLayout& e : layout.forceElements) {
    if (e.kind != mechanics::ForceKind::Bushing) continue;
    const std::string k = "#" + std::to_string(bushing++);
    bushingsOut[e.name] = {{"F_A_A", rows["F_A_A" + k]}, {"F_C_C", rows["F_C_C" + k]}};
  }
  if (!bushingsOut.empty()) out["bushings"] = bushingsOut;
  // SPEC section 6 "cables", plus what users inspect of the solved path:
  // its power, generalized forces and, per obstacle, contact points and
  // wrap angles (docs/user-guide.md#cables).
  json cablesOut = json::object();
  for (std::size_t k = 0; k < layout.cables.size(); ++k) {
    const codegen::CableLayout& c = layout.cables[k];
    const std::string at = "#" + std::to_string(k);
    const std::vector<double>& v = rows["cable" + at];
    const std::vector<double>& forces = rows["cable_forces" + at];
    json bodyForces = json::object();
    for (const codegen::CableObstacleLayout& o : c.obstacles) {
      if (o.body < 0) continue;
      const auto b = static_cast<std::size_t>(o.body);
      bodyForces[layout.bodies.at(b).name] = std::vector<double>(forces.begin() + static_cast<long>(6 * b),
                                                                 forces.begin() + static_cast<long>(6 * b + 6));
    }
    json obstacles = json::array();
    for (std::size_t i = 0; i < c.obstacles.size(); ++i) {
      const codegen::CableObstacleLayout& o = c.obstacles[i];
      const std::vector<double>& r = rows["cable_obstacle#" + std::to_string(c.firstFrame + static_cast<int>(i))];
      json ob = {{"name", o.name},
                 {"kind", o.kind == codegen::CableObstacleKind::EndPoint   ? (i == 0 ? "origin" : "termination")
                          : o.kind == codegen::CableObstacleKind::ViaPoint ? "via_point"
                                                                           : "surface"}};
      if (o.kind == codegen::CableObstacleKind::Surface) {
        ob["in_contact"] = r.at(0) != 0.0;
        if (r.at(0) != 0.0) {
          ob["P"] = std::vector<double>(r.begin() + 1, r.begin() + 4);
          ob["Q"] = std::vector<double>(r.begin() + 4, r.begin() + 7);
          ob["arc_length"] = r.at(7);
          ob["wrap_angle"] = r.at(8);
        } else if (std::isfinite(r.at(9))) {
          ob["separation"] = r.at(9);
        }
      } else {
        ob["point"] = std::vector<double>(r.begin() + 1, r.begin() + 4);
      }
      obstacles.push_back(ob);
    }
    rows.erase("cable_obstacle#" + std::to_string(c.firstFrame));  // separation may be infinite
    for (std::size_t i = 1; i < c.obstacles.size(); ++i) rows.erase("cable_obstacle#" + std::to_string(c.firstFrame + static_cast<int>(i)));
    cablesOut[c.name] = {{"length", v.at(0)},        {"length_dot", v.at(1)},  {"tension", v.at(2)},
                         {"energy", v.at(3)},        {"power", v.at(4)},       {"body_forces", bodyForces},
                         {"generalized_forces", rows["cable_tau" + at]}, {"obstacles", obstacles}};
  }
  if (!cablesOut.empty()) out["cables"] = cablesOut;
  out["jacobian_dot_u"] = jacobianDotU;
  if (layout.constraintRows > 0) out["constraints"] = constraintsJson(layout, rows);
  if (opts.derivatives) {
    // Row i = udot[i], from the row-major values.
    auto matrix = [&](const std::string& key) {
      const std::vector<double>& m = rows[key];
      const auto n = static_cast<std::size_t>(layout.nu);
      json rowsOut = json::array();
      for (std::size_t r = 0; r < n; ++r) {
        json row = json::array();
        for (std::size_t c = 0; c < n; ++c) row.push_back(m.at(r * n + c));
        rowsOut.push_back(row);
      }
      return rowsOut;
    };
    out["derivatives"] = {{"dudot_dq", matrix("dudot_dq")}, {"dudot_du", matrix("dudot_du")},
                          {"dudot_dtau", matrix("dudot_dtau")}};
  }
  // A non-finite output is an error, generated and interpreted alike: the
  // built-in functions compute the same IEEE value in both (sema/builtins.hpp).
  syntax::DiagnosticEngine nonFinite;
  for (std::size_t k = 0; k < layout.outputs.size(); ++k) {
    const double y = rows["outputs"].at(k);
    if (std::isfinite(y)) continue;
    const sema::FlatVariable& fv = loaded->flat->variables.at(static_cast<std::size_t>(layout.outputs[k].variable));
    char t[32];
    std::snprintf(t, sizeof t, "%.17g", time);
    nonFinite.report(syntax::DiagKind::NonFiniteOutput, fv.binding ? fv.binding->range : fv.range,
                     {fv.path, std::isnan(y) ? "not a number (NaN)" : (y > 0 ? "+infinity" : "-infinity"), t});
  }
  if (nonFinite.hasErrors()) {
    std::cerr << syntax::renderAll(nonFinite, loaded->sources, {opts.color, true});
    return 1;
  }
  for (const auto& [key, values] : rows) {
    for (double x : values) {
      if (std::isfinite(x)) continue;
      char t[32];
      std::snprintf(t, sizeof t, "%.17g", time);
      fail("`" + key.substr(0, key.find('#')) + "` is not finite at t = " + t +
           "; a force law computed NaN or infinity (a built-in function outside its domain, or an overflow)");
    }
  }
  json outputs = json::object();
  for (std::size_t k = 0; k < layout.outputs.size(); ++k) outputs[layout.outputs[k].name] = rows["outputs"].at(k);
  out["outputs"] = outputs;
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace capstan::cli
