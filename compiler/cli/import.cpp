// `capstan import ROBOT.urdf` (or ROBOT.sdf), and the in-memory import
// behind every other command given a .urdf or .sdf file. The importer is compiler/import/; this file
// only reads the file and writes the model.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/files.hpp"
#include "cli/options.hpp"
#include "import/sdf.hpp"
#include "import/urdf.hpp"

namespace capstan::cli {

bool isRobotDescription(const std::string& file) {
  const std::string ext = std::filesystem::path(file).extension().string();
  return ext == ".urdf" || ext == ".URDF" || ext == ".sdf" || ext == ".SDF";
}

std::optional<std::string> importRobot(const Options& opts, syntax::SourceManager& sources,
                                       syntax::DiagnosticEngine& diags) {
  std::ifstream in(opts.file, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    diags.report(syntax::DiagKind::FileNotReadable, {}, opts.file, std::string(std::strerror(errno)));
    return std::nullopt;
  }
  import::ImportOptions options;
  options.modelName = opts.model;
  options.floatingBase = opts.floatingBase;
  options.noMimic = opts.noMimic;
  options.packagePaths = opts.packagePaths;
  // Meshes are named relative to where the model is: the file -o names, else
  // (standard output) the current folder; imported in memory, the robot's.
  options.modelDir = opts.command == "import" ? std::filesystem::path(opts.output).parent_path()
                                              : std::filesystem::path(opts.file).parent_path();
  const std::string ext = std::filesystem::path(opts.file).extension().string();
  if (ext == ".sdf" || ext == ".SDF") return import::importSdf(opts.file, text.str(), options, sources, diags);
  return import::importUrdf(opts.file, text.str(), options, sources, diags);
}

int importCommand(const Options& opts) {
  if (opts.file.empty()) usageError(syntax::DiagKind::UsageMissing, opts.command, "a robot description (ROBOT.urdf or ROBOT.sdf)");
  syntax::SourceManager sources;
  syntax::DiagnosticEngine diags;
  const std::optional<std::string> model = importRobot(opts, sources, diags);
  std::cerr << syntax::renderAll(diags, sources, {opts.color, true});
  if (!model) return 1;
  if (opts.output.empty()) {
    std::cout << *model;
  } else {
    writeOrFail(opts.output, *model);
    std::cerr << "wrote " << opts.output << "\n";
  }
  return 0;
}

}  // namespace capstan::cli
