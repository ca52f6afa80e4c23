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
  // simulate / eval
  std::optional<double> tEnd, dt, tolerance;
  std::string integrator;
  std::vector<std::string> settings;  // --set NAME=VALUE
  bool interpret = false;
  std::string state;                  // --state
  // bench
  std::optional<double> seconds;      // --seconds
};

[[noreturn]] void usageError(const std::string& message);
// A user error without a source position: `capstan: error: MESSAGE`, exit 1.
[[noreturn]] void fail(const std::string& message);

// The model, checked: diagnostics printed; nullopt (exit status 1) on errors.
struct Loaded {
  syntax::SourceManager sources;
  syntax::DiagnosticEngine diags;
  std::optional<sema::FlatModel> flat;
  std::optional<mechanics::Mechanism> mech;
};
std::unique_ptr<Loaded> load(const Options& opts);

int compile(const Options& opts);
int simulate(const Options& opts);
int eval(const Options& opts);
int bench(const Options& opts);

}  // namespace capstan::cli
