// `capstan library`: the model library (capstan/model_library.h) built
// into the cache like simulate's program (cli/driver.hpp) and, with -o,
// copied out; with --json, what a caller in another language needs to use
// it: where it is, the settings to give it, the model's parameters and its
// experiment. Python's `capstan` module runs this command (with
// --no-build to check settings only).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/driver.hpp"
#include "cli/files.hpp"
#include "cli/generate.hpp"
#include "cli/options.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// A number, or null for one the model does not give.
json optionalNumber(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json manifest(const Loaded& loaded, const codegen::ModelLayout& layout,
              const std::vector<std::vector<double>>& values, const fs::path& library, bool derivatives) {
  json out;
  out["format"] = "capstan-library";
  out["version"] = 1;
  out["library"] = library.empty() ? json(nullptr) : json(fs::absolute(library).string());
  out["model"] = layout.className;
  out["derivatives"] = derivatives;
  out["nq"] = layout.nq;
  out["nu"] = layout.nu;
  json settings = json::array();
  for (const auto& [name, value] : settingsForDriver(layout, values)) settings.push_back(json::array({name, value}));
  out["settings"] = settings;
  json parameters = json::array();
  for (std::size_t p = 0; p < layout.parameters.size(); ++p) {
    const codegen::RuntimeParameter& rp = layout.parameters[p];
    json elements = json::array();
    for (std::size_t k = 0; k < rp.size(); ++k) elements.push_back(rp.elementName(k));
    // Its bounds per element (null where it has none), as `check` checks them.
    const sema::FlatVariable& fv = loaded.flat->variables.at(static_cast<std::size_t>(rp.variable));
    const auto bound = [&](const std::vector<double>& b) {
      if (b.empty()) return json(nullptr);
      json out = json::array();
      for (std::size_t k = 0; k < rp.size(); ++k) out.push_back(b.size() == 1 ? b[0] : b.at(std::min(k, b.size() - 1)));
      return out;
    };
    parameters.push_back({{"name", rp.name},
                          {"unit", rp.unit},
                          {"shape", rp.shape},
                          {"elements", elements},
                          {"value", values.at(p)},
                          {"min", bound(fv.min)},
                          {"max", bound(fv.max)},
                          {"description", rp.description}});
  }
  out["parameters"] = parameters;
  // As the model's annotation(experiment(...)) gives them: what `capstan
  // simulate` uses where its options say nothing.
  const auto& ex = loaded.flat->experiment;
  json experiment = json::object();
  const double start = ex && ex->startTime ? *ex->startTime : 0.0;
  experiment["t_end"] = ex && ex->stopTime ? json(*ex->stopTime - start) : json(nullptr);
  experiment["dt"] = optionalNumber(ex ? ex->interval : std::nullopt);
  experiment["tol"] = optionalNumber(ex ? ex->tolerance : std::nullopt);
  experiment["integrator"] = ex && ex->integrator ? json(*ex->integrator) : json(nullptr);
  out["experiment"] = experiment;
  return out;
}

}  // namespace

int library(const Options& opts) {
  const auto loaded = load(opts);
  if (!loaded) return 1;
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  std::vector<std::vector<double>> values;
  parseSettings(opts, *loaded, layout, values);  // refused as simulate refuses them
  fs::path built;
  if (!opts.noBuild) {
    DriverRequest request;
    request.derivatives = opts.derivatives;
    request.product = DriverRequest::Product::Library;
    request.purpose = "library";
    built = buildDriver(opts, *loaded, layout, request);
    if (!opts.output.empty()) {
      // Whole or not at all, as every file capstan writes.
      const std::string bytes = readFile(built);
      if (bytes.empty()) fail(syntax::DiagKind::CannotWriteFile, built.string(), std::string("empty"));
      writeOrFail(opts.output, bytes);
      std::error_code ec;
      fs::permissions(opts.output, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add, ec);
      built = opts.output;
    }
  }
  if (opts.json) {
    std::cout << manifest(*loaded, layout, values, built, opts.derivatives).dump(2) << "\n";
  } else if (!built.empty()) {
    std::cerr << "wrote " << built.string() << "\n";
  }
  return 0;
}

}  // namespace capstan::cli
