#include "cppheader/format.hpp"

#include <clang/Basic/LLVM.h>
#include <clang/Format/Format.h>
#include <clang/Tooling/Core/Replacement.h>
#include <llvm/Support/Error.h>

namespace capstan::cppheader {

bool formatCpp(std::string& code, const std::string& styleYaml, std::string& error) {
  clang::format::FormatStyle style = clang::format::getLLVMStyle(clang::format::FormatStyle::LK_Cpp);
  // The file's own keys override LLVM's defaults; its `Language` must be Cpp.
  if (const std::error_code ec = clang::format::parseConfiguration(styleYaml, &style)) {
    error = "the .clang-format style does not parse: " + ec.message();
    return false;
  }
  const clang::tooling::Range whole(0, static_cast<unsigned>(code.size()));
  const clang::tooling::Replacements replacements = clang::format::reformat(style, code, {whole}, "model.hpp");
  llvm::Expected<std::string> formatted = clang::tooling::applyAllReplacements(code, replacements);
  if (!formatted) {
    error = "formatting the generated code failed: " + llvm::toString(formatted.takeError());
    return false;
  }
  code = std::move(*formatted);
  return true;
}

}  // namespace capstan::cppheader
