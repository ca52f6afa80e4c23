#pragma once

// Formatting of emitted C++ with Clang's Format library, in process, so that
// a generated header looks the same whatever whitespace its templates leave
// (SPEC §7: readable generated code). The style is a `.clang-format` file
// shipped with the templates (compiler/templates/.clang-format); a user's
// template folder may carry its own.
//
// Only format.cpp sees Clang; this interface is plain standard types.

#include <string>

namespace capstan::cppheader {

// `code` formatted with the style `styleYaml` (the text of a .clang-format
// file). On a style that does not parse, or code Clang cannot reformat,
// returns false with `error` set and leaves `code` unchanged.
bool formatCpp(std::string& code, const std::string& styleYaml, std::string& error);

}  // namespace capstan::cppheader
