// Shared by simulate, eval and bench: building the generated code into the
// driver program (compiler/templates/capstan_driver.cpp), cached by content
// hash, and the state it evaluates.
#pragma once

#include <Eigen/Core>

#include <capstan/dynamics.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/generate.hpp"

namespace capstan::cli {

// $CXX, else `c++`.
std::string cxx();
// Where compiled artefacts are cached: $CAPSTAN_CACHE_DIR, else
// $XDG_CACHE_HOME/capstan, else ~/.cache/capstan.
std::filesystem::path cacheRoot();
// A file's bytes ("" if it cannot be read).
std::string readFile(const std::filesystem::path& path);
// The 64-bit FNV-1a hash of `text`, the cache's key.
std::uint64_t fnv1a(const std::string& text, std::uint64_t h = 1469598103934665603ull);
// The flags of the one build that `simulate`, `eval`, `bench` and `capstan
// test` share: -std=c++20 -O1. -O2 makes the dynamics no faster (the code
// is straight-line already) and costs 20 to 40 % more compile time; only
// the cable path solver runs about 1.3x slower at -O1.
const std::vector<std::string>& driverFlags();
// $CAPSTAN_BENCH_CXXFLAGS, when it asks `bench` for a build of its own
// (`-O3 -march=native`, a peer's flags): after -std=c++20, these words;
// empty when unset.
std::vector<std::string> benchFlagsAsked();

// What a driver is built with beyond the model and driverFlags().
struct DriverRequest {
  // forwardDynamicsDerivatives in the header: CVODE's exact Jacobian,
  // `eval --derivatives`. A build with them serves every request without
  // them too, so at most two builds of a model ever exist, and one once
  // the derivatives were asked for.
  bool derivatives = false;
  // Replaces driverFlags() (bench with $CAPSTAN_BENCH_CXXFLAGS): a build of
  // its own.
  std::vector<std::string> flags;
  // What the build is for, in the progress line: `simulate`, `eval`, `bench`.
  std::string purpose;
  // What is built around the model: the program (`driver`); the model
  // library (capstan/model_library.h; `capstan library`, Python's
  // capstan.compile: libmodel.so); an FMU's binary (`capstan fmu`: fmu2.so
  // or fmu3.so, FMI `fmiVersion`). Each in a folder of its own, built the
  // same way.
  enum class Product { Program, Library, Fmu };
  Product product = Product::Program;
  int fmiVersion = 2;
  // More files for the build's folder (name, text), in its key: the FMU's
  // variables. Their `#include <capstan/...>` lines bring those headers too.
  std::vector<std::pair<std::string, std::string>> extraFiles;
};

// The driver program for the model: from the cache ($CAPSTAN_CACHE_DIR,
// else $XDG_CACHE_HOME/capstan, else ~/.cache/capstan) or compiled into it,
// with a progress line on stderr (what is compiled, the elapsed time, an
// estimate from the model's last build). The build's identity is the
// model's structure: the generated code without its comments (which cite
// file names and lines) and without the parameters' default values, which
// the driver always receives as settings (settingsForDriver); so editing a
// default, a comment or a start value, or switching the integrator, reuses
// the build. Exits with a message on failure. Each build is appended to
// `builds.log` in the cache folder (time, model, seconds, folder).
std::filesystem::path buildDriver(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                                  const DriverRequest& request);

// `capstan prepare`: the runtime's parts that models' programs link -- the
// simulation engine (every model) and the cable path solver (models with
// cables) -- from the cache or compiled into it now, with the flags of
// simulate's builds; their paths. capstan's own build runs it into a folder
// of its own, which capstan then reads as well as the cache (prebuilt
// objects, never written there), so that a first simulate compiles only
// the model. Exits with a message on failure.
std::vector<std::filesystem::path> prepareRuntimeObjects();

// Whether `line` is one of a build's progress lines on stderr ("capstan:
// compiling ...", "capstan: compiled ..."): what `capstan test` leaves out
// when it quotes a failed simulation's output.
bool isBuildProgress(std::string_view line);

// Every runtime parameter element as a (name, value) setting, `values`
// (per runtime parameter, as parseSettings fills it) in layout order: what
// a driver is always given, since its build does not hold the defaults.
std::vector<std::pair<std::string, double>> settingsForDriver(const codegen::ModelLayout& layout,
                                                              const std::vector<std::vector<double>>& values);

// One state to evaluate: STATE.json (`--state`, optional) over the model's
// initial state, its parameters and --set applied. Errors exit 1.
struct EvalState {
  Eigen::VectorXd q, u;
  double time = 0;
  std::vector<std::vector<double>> values;  // per runtime parameter: --set, STATE.json's, else the default
  // STATE.json's `external_forces`: one [n; f] per body (layout.bodies
  // order; N*m, N; about the body origin, in World); empty when it has none.
  capstan::ExternalForces<double> externalForces;
};
EvalState resolveState(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout);

// The state as the driver reads it (`time T`, `q ...`, `u ...`, and `fext ...`
// when there are external forces), in a temporary file the caller removes.
std::filesystem::path writeStateFile(const EvalState& state);
// `NAME=VALUE` arguments for the driver.
std::vector<std::string> settingArguments(const std::vector<std::pair<std::string, double>>& settings);

// Runs the driver `exe` in `mode` (`eval`, `bench`) at `state`: the state
// file, then `extra`, then every parameter (settingsForDriver) as arguments. Returns what it
// printed; exits with that output when it fails. Removes the state file.
std::string runDriver(const std::filesystem::path& exe, const std::string& mode, const codegen::ModelLayout& layout,
                      const EvalState& state, const std::vector<std::string>& extra = {});

}  // namespace capstan::cli
