// `capstan compile FILE -o DIR [--templates DIR] [--ir] [--depfile FILE]`.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/generate.hpp"
#include "codegen/flat_eval.hpp"
#include "codegen/render.hpp"
#include "codegen/trace.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;

codegen::ModelLayout layoutOrExit(const Options& opts, const Loaded& loaded) {
  std::vector<codegen::Unsupported> unsupported;
  codegen::ModelLayout layout = codegen::makeLayout(*loaded.flat, *loaded.mech, unsupported);
  if (unsupported.empty()) return layout;
  syntax::DiagnosticEngine diags;  // the check's own diagnostics were printed already
  for (const auto& u : unsupported) diags.report(syntax::DiagKind::NotYetGenerated, u.range, {u.message, opts.command});
  std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
  std::exit(1);
}

namespace {
// --templates, else the installed or source templates.
fs::path templateDir(const Options& opts) {
  return opts.templates.empty() ? codegen::defaultTemplateDir() : fs::path(opts.templates);
}
}  // namespace

Generated generate(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout) {
  codegen::TraceOptions to;
  to.capstanVersion = CAPSTAN_VERSION;
  to.sourceName = fs::path(opts.file).filename().string();
  Generated g;
  try {
    g.ir = codegen::traceModel(*loaded.flat, *loaded.mech, layout, loaded.sources, to);
  } catch (const codegen::UnsupportedExpression& e) {
    fail(std::string(e.what()) + " is not supported by code generation yet");
  }
  std::string error;
  if (!codegen::renderModel(g.ir, templateDir(opts), g.header, error)) fail(error);
  g.fileName = layout.className + ".hpp";
  return g;
}

std::vector<std::pair<std::string, double>> parseSettings(const Options& opts, const Loaded& loaded,
                                                          const codegen::ModelLayout& layout,
                                                          std::vector<std::vector<double>>& values,
                                                          const std::vector<std::string>& fromState) {
  values.clear();
  for (const auto& p : layout.parameters) values.push_back(p.defaults);
  std::vector<std::pair<std::string, double>> out;
  std::vector<std::pair<std::string, bool>> all;  // (NAME=VALUE, from STATE.json)
  for (const std::string& s : opts.settings) all.emplace_back(s, false);
  for (const std::string& s : fromState) all.emplace_back(s, true);  // as before: the file's values win
  for (const auto& [s, isState] : all) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) fail("`--set " + s + "`: expected NAME=VALUE");
    const std::string name = s.substr(0, eq), text = s.substr(eq + 1);
    // Where a message points: the option or the STATE.json entry.
    const std::string where = isState ? "STATE.json: `parameters." + name + "`" : "`--set " + name + "`";
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(v))
      fail(where + ": the value `" + text + "` is not a finite number");
    // NAME or NAME[i] / NAME[i,j] (1-based).
    std::string base = name;
    std::size_t element = 0;
    bool indexed = false;
    if (const auto br = name.find('['); br != std::string::npos && name.back() == ']') {
      base = name.substr(0, br);
      indexed = true;
    }
    const int p = layout.findParameter(base);
    if (p < 0) {
      const int var = loaded.flat->findVariable(base);
      if (var < 0) fail(where + ": the model has no parameter `" + base + "`");
      const auto& fv = loaded.flat->variables[static_cast<std::size_t>(var)];
      switch (layout.roles[static_cast<std::size_t>(var)]) {
        case codegen::VariableRole::Dependent:
          fail(where + ": parameter `" + base + "` is computed from other parameters by its binding; set those instead");
        case codegen::VariableRole::Folded:
          fail(where + ": parameter `" + base + "` is " +
               (fv.structural ? "structural (it sizes arrays or bounds loops)"
                              : "fixed at compile time (a constant, `Evaluate = true`, a joint axis or not Real)") +
               "; change it in the model and recompile");
        default: fail(where + ": `" + base + "` is not a parameter");
      }
    }
    const auto& rp = layout.parameters[static_cast<std::size_t>(p)];
    if (rp.shape.empty() && indexed) fail(where + ": parameter `" + base + "` is a scalar");
    if (!rp.shape.empty()) {
      if (!indexed) fail(where + ": parameter `" + base + "` is an array; set one element, e.g. `" + base + "[1]=...`");
      const std::string sub = name.substr(base.size() + 1, name.size() - base.size() - 2);
      std::vector<long> idx;
      std::size_t pos = 0;
      while (pos <= sub.size()) {
        const auto comma = std::min(sub.find(',', pos), sub.size());
        const std::string part = sub.substr(pos, comma - pos);
        char* e2 = nullptr;
        const long k = std::strtol(part.c_str(), &e2, 10);
        if (part.empty() || *e2 != '\0') fail(where + ": bad subscript `" + sub + "`");
        idx.push_back(k);
        pos = comma + 1;
      }
      if (idx.size() != rp.shape.size()) fail(where + ": `" + base + "` needs " + std::to_string(rp.shape.size()) + " subscripts");
      for (std::size_t d = 0; d < idx.size(); ++d) {
        if (idx[d] < 1 || idx[d] > rp.shape[d]) fail(where + ": subscript " + std::to_string(idx[d]) + " is out of range 1.." + std::to_string(rp.shape[d]));
        element = element * static_cast<std::size_t>(rp.shape[d]) + static_cast<std::size_t>(idx[d] - 1);
      }
    }
    values[static_cast<std::size_t>(p)][element] = v;
    std::string slot = rp.name;
    if (!rp.shape.empty()) {
      slot += "[";
      if (rp.shape.size() == 2) {
        slot += std::to_string(element / static_cast<std::size_t>(rp.shape[1]) + 1) + "," +
                std::to_string(element % static_cast<std::size_t>(rp.shape[1]) + 1);
      } else {
        slot += std::to_string(element + 1);
      }
      slot += "]";
    }
    out.emplace_back(slot, v);
  }
  return out;
}

namespace {

// A path in a Make/Ninja depfile: spaces and `#` escaped with `\`, `$` doubled.
std::string depfilePath(const fs::path& path) {
  std::string out;
  for (const char c : path.string()) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

// `HEADER: DEP...` (Make syntax, absolute paths): every source file the model
// was read from (the model file, every library file that lookup loaded,
// the stdlib's among them), the templates (`*.j2`), and each `external "C++"`
// function's header where its IncludeDirectory holds it. A build system that
// reads it (CMake's add_custom_command(DEPFILE), Ninja, Make) regenerates
// the header when any of them changes, and only then.
std::string dependencies(const Loaded& loaded, const fs::path& header, const fs::path& templates) {
  std::vector<fs::path> deps;
  std::error_code ec;
  auto add = [&](const fs::path& p) {
    if (fs::is_regular_file(p, ec)) deps.push_back(fs::absolute(p, ec).lexically_normal());
  };
  for (syntax::FileId id = 1; id < loaded.sources.size(); ++id) add(loaded.sources.file(id).path());
  for (const auto& entry : fs::directory_iterator(templates, ec)) {
    if (entry.path().extension() == ".j2") add(entry.path());
  }
  for (const auto& f : loaded.flat->functions) {
    // `#include "friction.hpp"` or `#include <friction.hpp>`: the name between the delimiters.
    const auto open = f.include.find_first_of("\"<");
    const auto close = open == std::string::npos ? open : f.include.find_first_of("\">", open + 1);
    if (f.includeDirectory.empty() || close == std::string::npos) continue;
    add(fs::path(f.includeDirectory) / f.include.substr(open + 1, close - open - 1));
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  std::string text = depfilePath(fs::absolute(header, ec).lexically_normal()) + ":";
  for (const auto& d : deps) text += " \\\n  " + depfilePath(d);
  return text + "\n";
}

}  // namespace

int compile(const Options& opts) {
  if (opts.output.empty()) usageError("`compile` needs an output folder: `-o DIR`");
  const auto loaded = load(opts);
  if (!loaded) return 1;
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  const Generated g = generate(opts, *loaded, layout);
  std::error_code ec;
  fs::create_directories(opts.output, ec);
  if (ec) fail("cannot create `" + opts.output + "`: " + ec.message());
  const fs::path header = fs::path(opts.output) / g.fileName;
  auto write = [](const fs::path& path, const std::string& text) {
    std::ofstream f(path);
    f << text;
    f.close();
    if (!f) fail("cannot write `" + path.string() + "`");
  };
  write(header, g.header);
  if (!opts.depfile.empty()) write(opts.depfile, dependencies(*loaded, header, templateDir(opts)));
  if (opts.ir) write(fs::path(opts.output) / (layout.className + ".ir.json"), g.ir.dump(2) + "\n");
  std::cerr << "wrote " << header.string() << "\n";
  return 0;
}

}  // namespace capstan::cli
