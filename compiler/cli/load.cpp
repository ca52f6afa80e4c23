// Loading a model: the file and its libraries parsed, checked, flattened
// and turned into a mechanism, with diagnostics rendered on stderr. Every
// command that reads a model starts here.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/external.hpp"
#include "cli/options.hpp"
#include "mechanics/mechanism.hpp"
#include "sema/sema.hpp"
#include "syntax/diagnostics.hpp"

namespace fs = std::filesystem;
using capstan::syntax::DiagKind;

namespace {

// The directory of the running executable, for finding the standard library.
fs::path executableDir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self.parent_path();
}

// The stdlib: installed beside the program (../share/capstan/stdlib), in the
// source tree next to a build folder (../../stdlib), or where it was built
// from. CAPSTAN_STDLIB overrides all of them.
fs::path findStdlib() {
  if (const char* env = std::getenv("CAPSTAN_STDLIB")) return env;
  const fs::path dir = executableDir();
  for (const fs::path& candidate : {dir / "../share/capstan/stdlib", dir / "../../stdlib", dir / "../stdlib"}) {
    std::error_code ec;
    if (fs::is_directory(candidate / "Capstan", ec)) return fs::weakly_canonical(candidate, ec);
  }
  return CAPSTAN_SOURCE_STDLIB;
}

}  // namespace

namespace capstan::cli {

std::vector<fs::path> libraryRoots(const Options& opts) {
  std::vector<fs::path> roots{findStdlib()};
  for (const auto& dir : opts.includes) roots.push_back(dir);
  if (const char* env = std::getenv("CAPSTAN_PATH")) {
    std::string list = env;
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t end = std::min(list.find(':', start), list.size());
      if (end > start) roots.emplace_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  return roots;
}

std::vector<capstan::sema::ParameterOverride> parseOverrides(const Options& opts, const capstan::sema::FlatModel& model) {
  std::vector<capstan::sema::ParameterOverride> out;
  for (const std::string& s : opts.overrides) {
    int variable = -1;
    out.push_back(parseOverride("--override", s, model, variable));
  }
  return out;
}

std::unique_ptr<Loaded> load(const Options& opts) {
  std::unique_ptr<Loaded> plain = load(opts, {}, "");
  if (!plain || opts.overrides.empty()) return plain;
  return load(opts, parseOverrides(opts, *plain->flat), "with the values of `--override`");
}

std::unique_ptr<Loaded> load(const Options& opts, const std::vector<capstan::sema::ParameterOverride>& overrides,
                             const std::string& context) {
  if (opts.file.empty()) usageError(syntax::DiagKind::UsageMissing, opts.command, "a model file");
  auto loaded = std::make_unique<Loaded>();
  auto& diags = loaded->diags;
  auto& sources = loaded->sources;
  const capstan::syntax::RenderOptions render{opts.color, true};
  auto finish = [&]() {
    // A reload with overrides repeats the plain load's warnings: say only
    // what the new values break.
    if (context.empty() || diags.hasErrors()) {
      if (!context.empty()) std::cerr << "capstan: note: checking `" << opts.file << "` " << context << "\n";
      std::cerr << capstan::syntax::renderAll(diags, sources, render);
    }
    return diags.hasErrors();
  };
  capstan::sema::Library lib(sources, diags, libraryRoots(opts));
  const capstan::syntax::StoredDefinition* file = nullptr;
  if (isRobotDescription(opts.file)) {
    // Imported in memory: the model's diagnostics point into the imported
    // text, named FILE.cap (`capstan import FILE -o FILE.cap` writes it out).
    if (std::optional<std::string> text = importRobot(opts, sources, diags))
      file = lib.addText(opts.file + ".cap", std::move(*text));
  } else {
    file = lib.addFile(opts.file);
  }
  if (!file || diags.hasErrors()) {
    finish();
    return nullptr;
  }
  std::string modelName = opts.model;
  if (modelName.empty()) {
    const capstan::syntax::ClassDef* model = lib.defaultModel(*file);
    if (!model) {
      diags.report(DiagKind::NoModelInFile, {}, opts.file);
      finish();
      return nullptr;
    }
    modelName = model->name;
  }
  loaded->flat = capstan::sema::flatten(lib, modelName, overrides);
  if (!loaded->flat || diags.hasErrors()) {
    finish();
    return nullptr;
  }
  // External C++ functions against their headers (Clang); a reload with
  // overrides has the same functions and headers.
  if (context.empty()) capstan::cli::checkExternalHeaders(*loaded->flat, sources, diags);
  loaded->mech = capstan::mechanics::build(*loaded->flat, diags);
  if (finish() || !loaded->mech) return nullptr;
  return loaded;
}

}  // namespace capstan::cli
