// A simulation asked of another process: what `capstan simulate` sends the
// driver program it builds around a generated header
// (compiler/templates/capstan_driver.cpp), encoded as command-line
// arguments by toArguments() and decoded by fromArguments(), in one place:
//
//   driver simulate --t-end=T --dt=H --integrator=NAME --tol=X --output=PATH
//                   [--progress] [--stats] [--constraint-errors] [--baumgarte=T]
//                   [--constraint-tol=X] [--quotient-jacobian] [--fault-file=PATH]
//                   [--wall-clock-limit=S]
//                   [NAME=VALUE]...
//
// Without --dt, the interval is defaultInterval(T); without --integrator
// and --tol, dopri5 at 1e-8 (LoopOptions).
//
// Numbers travel as %.17g, so they arrive exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capstan/sim/simulate.hpp"

namespace capstan::sim {

struct SimulateRequest {
  Request run;
  std::string output = "-";   // the CSV's path; `-`: standard output
  bool progress = false;      // a progress bar on stderr
  bool stats = false;         // the integrator's statistics on stderr after the run
  std::string faultFile;      // where a failed run leaves the state capstan locates its fault at (simulate.hpp, writeFaultFile)
  std::vector<std::pair<std::string, double>> settings;  // runtime parameter elements: (name, value)
};

namespace request_detail {
inline std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
// The value of `--key=value` if `arg` is that option.
inline std::optional<std::string_view> option(std::string_view arg, std::string_view key) {
  if (arg.size() > key.size() + 2 && arg.substr(0, 2) == "--" && arg.substr(2, key.size()) == key &&
      arg[key.size() + 2] == '=')
    return arg.substr(key.size() + 3);
  return std::nullopt;
}
inline bool toNumber(std::string_view text, double& value) {
  const std::string s(text);
  char* end = nullptr;
  value = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}
}  // namespace request_detail

// The output interval of a run of tEnd seconds whose model and caller give
// none: 500 rows.
inline double defaultInterval(double tEnd) { return std::max(tEnd / 500.0, 1e-6); }

// An adaptive integrator's error estimate is itself rounded to about 1e-16
// of the state: a tolerance near it cannot be met by any step, and the run
// would end in "the problem may be stiff" after millions of steps.
inline constexpr double kSmallestTolerance = 1e-14;

// Why `run` cannot be run ("" when it can): a negative end time, an
// interval or tolerance that is not positive, or a tolerance an adaptive
// integrator cannot meet. `capstan simulate` says the same with its own
// diagnostics; this is for the model library's callers.
inline std::string requestProblem(const Request& run) {
  const LoopOptions& l = run.loop;
  if (!(l.tEnd >= 0) || !std::isfinite(l.tEnd)) return "the end time must be a finite number >= 0";
  if (!(l.dt > 0) || !std::isfinite(l.dt)) return "the output interval must be a finite number > 0";
  if (!(l.tolerance > 0)) return "the tolerance must be > 0";
  if (l.tolerance < kSmallestTolerance && (l.integrator == Integrator::dopri5 || l.integrator == Integrator::cvode)) {
    char text[160];
    std::snprintf(text, sizeof text, "the tolerance %g is below what %s can meet in double precision (%g)",
                  l.tolerance, std::string(name(l.integrator)).c_str(), kSmallestTolerance);
    return text;
  }
  return {};
}

// `NAME=VALUE`: a runtime parameter element set for the driver program, the
// value exact (%.17g).
inline std::string settingArgument(const std::string& name, double value) {
  return name + "=" + request_detail::number(value);
}

// The name and value of a `NAME=VALUE` argument; nullopt, with `error`, if
// it is not one.
inline std::optional<std::pair<std::string, double>> parseSetting(std::string_view arg, std::string& error) {
  const auto eq = arg.find('=');
  double value = 0;
  if (eq == std::string_view::npos || eq == 0 || arg.substr(0, 2) == "--") {
    error = "unknown argument `" + std::string(arg) + "`";
    return std::nullopt;
  }
  if (!request_detail::toNumber(arg.substr(eq + 1), value)) {
    error = "`" + std::string(arg) + "` is not a number";
    return std::nullopt;
  }
  return std::pair{std::string(arg.substr(0, eq)), value};
}

// Sets the runtime parameter elements `settings` on `model` (setParameter,
// model.hpp): the driver program and the interpreter alike. The first name
// the model does not have, or "" when every one was set.
template <Model M>
std::string applySettings(M& model, const std::vector<std::pair<std::string, double>>& settings) {
  for (const auto& [name, value] : settings)
    if (!setParameter(model, name, value)) return name;
  return "";
}

inline std::vector<std::string> toArguments(const SimulateRequest& r) {
  using request_detail::number;
  const Request& run = r.run;
  std::vector<std::string> args = {"--t-end=" + number(run.loop.tEnd), "--dt=" + number(run.loop.dt),
                                   "--integrator=" + std::string(name(run.loop.integrator)),
                                   "--tol=" + number(run.loop.tolerance), "--output=" + r.output};
  if (r.progress) args.emplace_back("--progress");
  if (r.stats) args.emplace_back("--stats");
  if (run.columns.constraintErrors) args.emplace_back("--constraint-errors");
  if (run.baumgarte > 0) args.push_back("--baumgarte=" + number(run.baumgarte));
  if (run.constraintTolerance > 0) args.push_back("--constraint-tol=" + number(run.constraintTolerance));
  if (!run.exactJacobian) args.emplace_back("--quotient-jacobian");
  if (run.wallClockLimit > 0) args.push_back("--wall-clock-limit=" + number(run.wallClockLimit));
  if (!r.faultFile.empty()) args.push_back("--fault-file=" + r.faultFile);
  for (const auto& [setting, value] : r.settings) args.push_back(settingArgument(setting, value));
  return args;
}

// The request in args, or nullopt with `error` saying which argument is wrong.
inline std::optional<SimulateRequest> fromArguments(const std::vector<std::string_view>& args, std::string& error) {
  using request_detail::option;
  SimulateRequest r;
  Request& run = r.run;
  const auto numberOf = [&](std::string_view arg, std::string_view text, double& value) {
    if (request_detail::toNumber(text, value)) return true;
    error = "`" + std::string(arg) + "` is not a number";
    return false;
  };
  bool interval = false;
  for (std::string_view a : args) {
    if (auto v = option(a, "t-end")) {
      if (!numberOf(a, *v, run.loop.tEnd)) return std::nullopt;
    } else if (auto v = option(a, "dt")) {
      if (!numberOf(a, *v, run.loop.dt)) return std::nullopt;
      interval = true;
    } else if (auto v = option(a, "tol")) {
      if (!numberOf(a, *v, run.loop.tolerance)) return std::nullopt;
    } else if (auto v = option(a, "integrator")) {
      const auto integrator = parseIntegrator(*v);
      if (!integrator) {
        error = "unknown integrator `" + std::string(*v) + "`; use " + integratorList();
        return std::nullopt;
      }
      run.loop.integrator = *integrator;
    } else if (auto v = option(a, "output")) {
      r.output = *v;
    } else if (auto v = option(a, "baumgarte")) {
      if (!numberOf(a, *v, run.baumgarte)) return std::nullopt;
    } else if (auto v = option(a, "constraint-tol")) {
      if (!numberOf(a, *v, run.constraintTolerance)) return std::nullopt;
    } else if (auto v = option(a, "wall-clock-limit")) {
      if (!numberOf(a, *v, run.wallClockLimit)) return std::nullopt;
    } else if (auto v = option(a, "fault-file")) {
      r.faultFile = *v;
    } else if (a == "--progress") {
      r.progress = true;
    } else if (a == "--stats") {
      r.stats = true;
    } else if (a == "--constraint-errors") {
      run.columns.constraintErrors = true;
    } else if (a == "--quotient-jacobian") {
      run.exactJacobian = false;
    } else if (auto setting = parseSetting(a, error)) {
      r.settings.push_back(std::move(*setting));
    } else {
      return std::nullopt;
    }
  }
  if (!interval) run.loop.dt = defaultInterval(run.loop.tEnd);
  return r;
}

}  // namespace capstan::sim
