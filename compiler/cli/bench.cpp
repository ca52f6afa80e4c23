// `capstan bench FILE [--state STATE.json] [--seconds S]` (SPEC §6), like
// MuJoCo's testspeed: builds the generated code with optimization (the
// driver's `bench` mode, compiler/templates/capstan_driver.cpp) and prints
// JSON with the median microseconds per call of forward dynamics, the mass
// matrix and position kinematics at one state.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "codegen/render.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr double kDefaultSeconds = 1.0;  // s of timing, shared by the three functions

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

int bench(const Options& opts) {
  const double seconds = opts.seconds.value_or(kDefaultSeconds);
  if (!(seconds > 0)) fail(syntax::DiagKind::SettingNotPositive, "--seconds");
  const auto loaded = load(opts);
  if (!loaded) return 1;
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  const EvalState st = resolveState(opts, *loaded, layout);
  if (!st.externalForces.empty())
    fail(syntax::DiagKind::StateExternalForcesInBench);
  loadExternalFunctions(opts, *loaded);  // headers and calls checked, located, before the driver is built
  // The one build of the model (cli/driver.hpp), unless
  // $CAPSTAN_BENCH_CXXFLAGS asks for a build of its own.
  DriverRequest build;
  build.purpose = "bench";
  build.flags = benchFlagsAsked();
  const fs::path exe = buildDriver(opts, *loaded, layout, build);
  char secondsText[64];
  std::snprintf(secondsText, sizeof secondsText, "%.17g", seconds);
  const std::string log = runDriver(exe, "bench", layout, st, {secondsText});

  std::map<std::string, std::string> rows;  // key -> rest of the line
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(' ');
    if (space != std::string::npos) rows[line.substr(0, space)] = line.substr(space + 1);
  }
  auto number = [&](const std::string& key) {
    const auto it = rows.find(key);
    if (it == rows.end()) failThen(log, syntax::DiagKind::BenchmarkIncomplete, key);
    return std::strtod(it->second.c_str(), nullptr);
  };
  json out;
  out["model"] = layout.className;
  out["nq"] = layout.nq;
  out["nu"] = layout.nu;
  for (const char* f : {"forward_dynamics", "mass_matrix", "kinematics", "bushing", "cable", "constraint",
                        "constrained_forward_dynamics"}) {
    const std::string k = f;
    // Bushings, cables and constraints: only for models that have them.
    if ((k == "bushing" || k == "cable" || k == "constraint" || k == "constrained_forward_dynamics") &&
        !rows.count(k + "_us"))
      continue;
    out[k + "_us"] = number(k + "_us");
    out["calls_per_batch"][k] = static_cast<long>(number(k + "_calls_per_batch"));
    out["batches"][k] = static_cast<long>(number(k + "_batches"));
  }
  out["clock"] = "thread CPU time, median of batches";
  out["seconds"] = seconds;
  out["compiler"] = rows.count("compiler") ? rows["compiler"] : cxx();
  out["cxx"] = cxx();
  out["flags"] = joined(build.flags.empty() ? driverFlags() : build.flags);
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace capstan::cli
