// libFuzzer entry for the robot importers (compiler/import/): arbitrary
// bytes as a robot description, read as SDFormat when they hold `<sdf` (so
// the SDFormat seeds and their mutations reach libsdformat's reader) and as
// URDF otherwise. Invariants, each a trap when broken: every
// diagnostic's range lies inside the file; an import that reports no error
// writes a model the language's parser reads without a syntax error; and the
// name rule reads back (robotName(robotIdentifier(n)) == n).
#include <cstddef>
#include <cstdint>
#include <string>

#include "import/sdf.hpp"
#include "import/urdf.hpp"
#include "syntax/diagnostics.hpp"
#include "syntax/parser.hpp"

using namespace capstan::syntax;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (capstan::import::robotName(capstan::import::robotIdentifier(text)) != text) __builtin_trap();
  SourceManager sources;
  DiagnosticEngine diags;
  const bool sdf = text.find("<sdf") != std::string::npos;
  const auto model = sdf ? capstan::import::importSdf("fuzz.sdf", text, {}, sources, diags)
                         : capstan::import::importUrdf("fuzz.urdf", text, {}, sources, diags);
  for (const Diagnostic& d : diags.diagnostics()) {
    if (d.range.valid() && (d.range.file != 1 || d.range.end > size)) __builtin_trap();
    for (const Note& n : d.notes)
      if (n.range.valid() && (n.range.file != 1 || n.range.end > size)) __builtin_trap();
  }
  if (model.has_value() == diags.hasErrors()) __builtin_trap();
  if (!model) return 0;
  DiagnosticEngine parsed;
  const FileId file = sources.add("fuzz.cap", *model);
  (void)parse(sources, file, parsed);
  if (parsed.hasErrors()) __builtin_trap();
  return 0;
}
