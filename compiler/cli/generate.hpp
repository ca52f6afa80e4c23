// Shared by compile, simulate and eval: the layout, the IR and the header.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/options.hpp"
#include "codegen/ir.hpp"
#include "codegen/layout.hpp"

namespace capstan::codegen {
class Interpreter;
}

namespace capstan::cli {

// The layout of a loaded model; prints "not supported yet" errors and exits 1
// when code generation cannot handle the model.
codegen::ModelLayout layoutOrExit(const Options& opts, const Loaded& loaded);

// The first cable wrap with capstan friction at the interpreter's
// parameters, as (its name, mu), or none: the path's sensitivities, and so
// the derivatives of a model with cables, cover frictionless wraps only.
std::optional<std::pair<std::string, double>> cableWrapWithFriction(const codegen::ModelLayout& layout,
                                                                    const codegen::Interpreter& interp);
// `--derivatives` of a model with cables: exits with DerivativesWithCables
// where a wrap has friction. generate() checks the parameters' defaults; a
// command with --set checks its own values.
void requireFrictionlessCables(const codegen::ModelLayout& layout, const codegen::Interpreter& interp);

// Traces and renders; exits with a message on failure.
struct Generated {
  std::string irJson;     // with --ir: the IR as JSON (docs/ir.md), written before the header took its code
  std::string header;     // Model.hpp text
  std::string fileName;   // `DoublePendulum.hpp`
  // What building it needs besides: the external functions' IncludeDirectory
  // folders (absolute, in order, no repeats) and the headers they hold.
  std::vector<std::string> includeDirectories;
  std::vector<std::string> externalHeaders;
  // The class has constraint rows: the driver is built with the constraint
  // solver (-DCAPSTAN_CONSTRAINTS).
  bool constraints = false;
  // With `dependencies`: what udot, the outputs and the energies read of
  // (q, u, time) (codegen::TraceOptions::dependencies).
  std::optional<codegen::ir::Dependencies> dependencies;
};
// For a driver program (cli/driver.hpp): every runtime parameter's
// initializer is `{}`, since the driver sets every parameter before it runs
// (the header then does not change when a default does).
enum class HeaderUse { User, Driver };
Generated generate(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                   HeaderUse use = HeaderUse::User, bool dependencies = false);

// --set NAME=VALUE against the layout: unknown, dependent, folded or
// structural names are errors (exit 1). `fromState`: STATE.json's
// `parameters` in the same NAME=VALUE form, applied after --set, with
// messages that point at the file. Returns (slot name, value) pairs and
// fills `values` (per runtime parameter, defaults where not set).
std::vector<std::pair<std::string, double>> parseSettings(const Options& opts, const Loaded& loaded,
                                                          const codegen::ModelLayout& layout,
                                                          std::vector<std::vector<double>>& values,
                                                          const std::vector<std::string>& fromState = {});

}  // namespace capstan::cli
