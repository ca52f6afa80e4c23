// Importing a robot description: a URDF file read with urdfdom (and its XML
// with tinyxml2 first, for the line of each element), checked, and written as
// a model in the language, the kind a person would write: one component per
// link and joint, the file's names kept (identifiers by the reversible rule of
// urdfIdentifier), the source element cited in a comment. The mapping of
// every element is docs/import.md's table.
//
//   capstan::syntax::SourceManager sources;
//   capstan::syntax::DiagnosticEngine diags;
//   std::optional<std::string> cap = importUrdf("ur5.urdf", text, {}, sources, diags);
//
// The URDF text is added to `sources`, so the diagnostics (compiler/
// diagnostics/import.def) point at its lines.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "syntax/diagnostics.hpp"

namespace capstan::import {

struct UrdfOptions {
  std::string modelName;                              // --model; default: the robot's name as an identifier
  bool floatingBase = false;                          // --floating-base: a Free joint between world and the root link
  bool noMimic = false;                               // --no-mimic: mimicking joints independent, without a warning
  std::vector<std::filesystem::path> packagePaths;    // --package-path: where `package://NAME/...` meshes are found
};

// The model's text, or nullopt when an error was reported. `path` names the
// file in diagnostics and resolves relative mesh paths.
std::optional<std::string> importUrdf(const std::filesystem::path& path, const std::string& text,
                                      const UrdfOptions& options, syntax::SourceManager& sources,
                                      syntax::DiagnosticEngine& diags);

// The identifier of a URDF name (docs/import.md, "Names"): the name itself
// when it is an identifier, not a reserved word, and does not begin with
// `x_`; otherwise `x_` followed by the name with every byte other than a
// letter or digit written `_hh` (its two lower-case hex digits). The rule is
// reversible: urdfName(urdfIdentifier(n)) == n.
std::string urdfIdentifier(const std::string& name);
std::string urdfName(const std::string& identifier);

}  // namespace capstan::import
