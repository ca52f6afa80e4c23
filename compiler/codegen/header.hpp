// Header emission: the model header's text from the IR. The templates
// (Jinja2, render.hpp) render a skeleton around placeholders for the
// printer's code blocks; Clang's Format library lays out the skeleton with
// the templates' .clang-format; then the blocks go back in at their
// placeholders' indentation.
#pragma once

#include <filesystem>
#include <string>

#include "codegen/ir.hpp"

namespace capstan::codegen {

// The templates' .clang-format, else the shipped one (beside
// defaultTemplateDir()); empty if neither is there.
std::filesystem::path styleFile(const std::filesystem::path& templateDir);

// The header text of `ir` rendered with `templateDir`'s model.hpp.j2 and
// laid out with styleFile(templateDir). The functions' code blocks move into
// the header (most of a large one): afterwards each block of `ir` holds a
// placeholder, so a caller that wants the IR whole (`compile --ir`) writes it
// first. Returns false and sets `error` (the renderer's or the formatter's
// message) on failure.
bool emitHeader(ir::Model& ir, const std::filesystem::path& templateDir, std::string& header, std::string& error);

}  // namespace capstan::codegen
