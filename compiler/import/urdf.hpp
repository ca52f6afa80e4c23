// Importing a URDF robot: the file read with urdfdom (and its XML with
// tinyxml2 first, for the line of each element) into the robot description
// (robot.hpp), checked, and written as a model in the language, the kind a
// person would write: one component per link and joint, the file's names
// kept (identifiers by the reversible rule of robotIdentifier), the source
// element cited in a comment. The mapping of every element is
// docs/import.md's table.
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

#include "import/robot.hpp"

namespace capstan::import {

// The model's text, or nullopt when an error was reported. `path` names the
// file in diagnostics and resolves relative mesh paths.
std::optional<std::string> importUrdf(const std::filesystem::path& path, const std::string& text,
                                      const ImportOptions& options, syntax::SourceManager& sources,
                                      syntax::DiagnosticEngine& diags);

}  // namespace capstan::import
