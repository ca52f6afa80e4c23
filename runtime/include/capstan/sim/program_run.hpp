// The definitions of capstan/sim/program.hpp (which says what they do):
// included by the one translation unit that compiles them, with
// CAPSTAN_CABLE_COMPILED_APART defined (the cable types, not the path
// solver, which the model's own unit links).
#pragma once

#include <fcntl.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capstan/cable/model.hpp"
#include "capstan/sim/any_model.hpp"
#include "capstan/sim/evaluate.hpp"
#include "capstan/sim/guard.hpp"
#include "capstan/sim/program.hpp"
#include "capstan/sim/request.hpp"

static_assert(capstan::sim::Model<capstan::sim::AnyModel> && capstan::sim::HasBushings<capstan::sim::AnyModel> &&
              capstan::sim::HasCables<capstan::sim::AnyModel> && capstan::sim::HasConstraints<capstan::sim::AnyModel> &&
              capstan::sim::HasDerivatives<capstan::sim::AnyModel>);

namespace capstan::sim {

namespace program_detail {

inline bool settingsApplied(AnyModel& model, const std::vector<std::pair<std::string, double>>& settings) {
  const std::string unknown = capstan::sim::applySettings(model, settings);
  if (!unknown.empty()) std::cerr << "capstan: error: unknown parameter setting `" << unknown << "`\n";
  return unknown.empty();
}

inline volatile std::sig_atomic_t g_stop = 0;

extern "C" inline void onStop(int sig) { g_stop = sig; }

// SIGINT/SIGTERM stop the run at the next row. On Linux the program also
// goes when capstan goes, however capstan ended (even SIGKILL).
inline void stopOnSignals() {
  struct sigaction sa {};
  sa.sa_handler = onStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
#if defined(__linux__)
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) g_stop = SIGTERM;  // capstan was already gone
#endif
}

inline int simulate(AnyModel& model, int argc, char** argv) {
  std::string error;
  const auto request = fromArguments(std::vector<std::string_view>(argv + 2, argv + argc), error);
  if (!request) {
    std::cerr << "capstan: error: " << error << "\n";
    return 1;
  }
  if (!settingsApplied(model, request->settings)) return 1;
  if (request->run.columns.constraintErrors && model.constraintInfo.empty()) {
    std::cerr << "capstan: error: the model has no constraints\n";
    return 1;
  }
  Request run = request->run;
  stopOnSignals();
  run.loop.stop = &g_stop;
  const std::string& output = request->output;
  const int fd = output == "-" ? STDOUT_FILENO : ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::cerr << "capstan: error: cannot write `" << output << "`: " << std::strerror(errno) << "\n";
    return 1;
  }
  int lastPercent = -1;
  const auto progress = [&](double fraction) {
    const int percent = static_cast<int>(fraction * 100);
    if (!request->progress || percent == lastPercent) return;
    lastPercent = percent;
    const int width = 40, filled = percent * width / 100;
    std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), percent);
    std::fflush(stderr);
  };
  Result result;
  {
    RowWriter out(fd);
    // A crash in the model's code (an external C++ function): the complete
    // rows go to disk, then the signal takes its course and capstan says
    // what it was. exit() from it, or a step that never returns past the
    // time limit: the rows, and this program says so.
    GuardOptions guarded;
    guarded.wallClockLimit = run.wallClockLimit;
    guarded.crashStateFile = request->faultFile;  // where capstan finds the call that crashed
    const RunGuard guard(out, std::move(guarded));
    result = capstan::sim::simulate(model, run, out, progress);
  }
  if (fd != STDOUT_FILENO) ::close(fd);
  if (request->progress) std::fprintf(stderr, "\n");
  if (request->stats && !result.status.statistics.empty())
    std::cerr << statisticsText(run.loop.integrator, result.status);
  // Where capstan looks for the force law that was not finite or the call
  // that threw (as eval's state file), and then says what it found; an
  // exception it cannot locate, it reports with the program's words.
  if (result.thrown && writeFaultFile(request->faultFile, result)) return exitStatus(result);
  std::cerr << report(result, output);
  writeFaultFile(request->faultFile, result);
  return exitStatus(result);
}

// Every record of capstan::sim::evaluate at the state, one `KEY[#ELEMENT]
// v...` line each (full precision); with the external forces when the
// state has them.
inline int eval(AnyModel& model, int argc, char** argv) {
  if (!applySettingArguments(model, argc, argv, 3)) return 1;
  AnyModel::Q q;
  AnyModel::U u;
  model.initialState(q, u);
  double t = 0;
  AnyModel::ExternalForces fext(std::size_t(model.nb), AnyModel::SpatialVector::Zero());
  bool external = false;
  if (!readStateFile(argv[2], t, q, u, &fext, &external)) return 1;
  try {
    evaluate(model, t, q, u, external ? &fext : nullptr, true,
             [](std::string_view key, int element, const std::vector<double>& values) {
               std::printf("%s", evalKey(key, element).c_str());
               for (double v : values) std::printf(" %.17g", v);
               std::printf("\n");
             });
  } catch (const ModelStopped& e) {
    std::cerr << "capstan: error: " << e.message << "\n";
    return 1;
  }
  return 0;
}

}  // namespace program_detail

bool applySettingArguments(AnyModel& model, int argc, char** argv, int first) {
  std::vector<std::pair<std::string, double>> settings;
  std::string error;
  for (int i = first; i < argc; ++i) {
    auto setting = parseSetting(argv[i], error);
    if (!setting) {
      std::cerr << "capstan: error: " << error << "\n";
      return false;
    }
    settings.push_back(std::move(*setting));
  }
  return program_detail::settingsApplied(model, settings);
}

bool readStateFile(const char* path, double& t, AnyModel::Q& q, AnyModel::U& u, AnyModel::ExternalForces* fext,
                   bool* external) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "capstan: error: cannot read `" << path << "`\n";
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string key;
    ss >> key;
    if (key == "time") ss >> t;
    if (key == "q")
      for (Eigen::Index i = 0; i < q.size(); ++i) ss >> q[i];
    if (key == "u")
      for (Eigen::Index i = 0; i < u.size(); ++i) ss >> u[i];
    if (key == "fext" && fext && external) {
      for (auto& F : *fext)
        for (int k = 0; k < 6; ++k) ss >> F[k];
      *external = true;
    }
  }
  return true;
}

Result simulateInto(AnyModel& model, const Request& run, RowTable& table, const std::function<void(double)>& progress) {
  return capstan::sim::simulate(model, run, table, [&](double fraction) {
    if (progress) progress(fraction);
  });
}

void accelerations(AnyModel& model, double t, const AnyModel::Q& q, const AnyModel::U& u,
                   const AnyModel::ExternalForces* fext, AnyModel::U& udot) {
  if (fext) model.forwardDynamics(t, q, u, *fext, udot);
  else model.forwardDynamics(t, q, u, udot);
  if (model.constraintInfo.empty()) return;
  ConstraintSolver<AnyModel> solver(model, constraintRowRanges(model));
  AnyModel::ConstraintVector lambda;
  solver.correct(q, u, udot, lambda);
}

Result advanceModel(AnyModel& model, AnyModel::Q& q, AnyModel::U& u, const Request& request) {
  return capstan::sim::advance(model, q, u, request);
}

std::string assembleModel(AnyModel& model, AnyModel::Q& q, AnyModel::U& u, const Request& request) {
  try {
    System<AnyModel> system(model);
    system.constrain(q, u, request);
  } catch (const ModelStopped& e) {
    return e.message;
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> columnList(const AnyModel& model, const ColumnOptions& options) {
  std::vector<std::pair<std::string, std::string>> out;
  columnNames(model, options,
              [&](std::string_view name, std::string_view unit) { out.emplace_back(std::string(name), std::string(unit)); });
  return out;
}

std::vector<double> columnRow(const AnyModel& model, double t, const AnyModel::Q& q, const AnyModel::U& u,
                              const ColumnOptions& options) {
  std::vector<double> out;
  columnValues(Sample<AnyModel>{model, t, q, u}, options, [&](double v) { out.push_back(v); });
  return out;
}

void evaluateRecords(AnyModel& model, double t, const AnyModel::Q& q, const AnyModel::U& u,
                     const AnyModel::ExternalForces* fext, bool derivatives,
                     const std::function<void(std::string_view key, int element, const std::vector<double>& values)>& emit) {
  evaluate(model, t, q, u, fext, derivatives,
           [&](std::string_view key, int element, const std::vector<double>& values) { emit(key, element, values); });
}

int runProgram(AnyModel& model, int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  // An exception out of the model (an external C++ function threw): a
  // message and status 1, never std::terminate.
  try {
    if (mode == "simulate") return program_detail::simulate(model, argc, argv);
    if (mode == "eval" && argc >= 3) return program_detail::eval(model, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "capstan: error: a C++ function that the model calls threw an exception: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: driver simulate [REQUEST]... | eval STATE "
               "[NAME=VALUE]... | bench STATE SECONDS [NAME=VALUE]...\n";
  return 2;
}

}  // namespace capstan::sim
