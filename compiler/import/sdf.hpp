// Importing an SDFormat robot: the file read with libsdformat (its XML with
// tinyxml2 first, for the line of each element) into the robot description
// (robot.hpp), the same one a URDF file is read into, and written by the
// same writer. Poses are resolved through libsdformat's frame graph
// (SemanticPose, JointAxis::ResolveXyz). The mapping is docs/import.md's.
//
// Without libsdformat at configure time (CAPSTAN_HAVE_SDFORMAT undefined),
// importSdf reports SdfUnavailable.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "import/robot.hpp"

namespace capstan::import {

// The model's text, or nullopt when an error was reported.
std::optional<std::string> importSdf(const std::filesystem::path& path, const std::string& text,
                                     const ImportOptions& options, syntax::SourceManager& sources,
                                     syntax::DiagnosticEngine& diags);

}  // namespace capstan::import
