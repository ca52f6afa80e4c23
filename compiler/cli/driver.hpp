// Shared by simulate, eval and bench: building the generated code into the
// driver program (compiler/templates/capstan_driver.cpp), cached by content
// hash, and the state it evaluates.
#pragma once

#include <Eigen/Core>

#include <capstan/dynamics.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
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
// -std=c++20 -O2: simulate.
const std::vector<std::string>& simulateFlags();
// -std=c++20 -O0: eval, which runs the code once. Optimizing straight-line
// code costs g++ 4x the time (105 s against 24 s for a 16-link chain) for
// nothing here.
const std::vector<std::string>& evalFlags();
// -std=c++20 -O3 -march=native -DNDEBUG (after -std, $CAPSTAN_BENCH_CXXFLAGS
// replaces the rest): bench.
const std::vector<std::string>& benchFlags();

// The driver for the generated header built with `flags`, from the cache
// ($CAPSTAN_CACHE_DIR, else $XDG_CACHE_HOME/capstan, else ~/.cache/capstan)
// or compiled into it; `libraries` (`-lsundials_cvode`) go after the
// sources. Exits with a message on failure.
std::filesystem::path buildDriver(const Generated& g, const std::string& className,
                                  const std::vector<std::string>& flags,
                                  const std::vector<std::string>& libraries = {});

// One state to evaluate: STATE.json (`--state`, optional) over the model's
// initial state, its parameters and --set applied. Errors exit 1.
struct EvalState {
  Eigen::VectorXd q, u;
  double time = 0;
  std::vector<std::pair<std::string, double>> settings;  // (slot, value), as for the driver
  std::vector<std::vector<double>> values;               // per runtime parameter
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
// file, then `extra`, then the settings as arguments. Returns what it
// printed; exits with that output when it fails. Removes the state file.
std::string runDriver(const std::filesystem::path& exe, const std::string& mode, const EvalState& state,
                      const std::vector<std::string>& extra = {});

}  // namespace capstan::cli
