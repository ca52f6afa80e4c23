// The parser: text of one file -> StoredDefinition. Errors go to the engine;
// the parser recovers at declaration and equation boundaries and always
// returns what it could build. It never throws on bad input, never recurses
// without bound (nesting depth is limited) and accepts any bytes.
#pragma once

#include "syntax/ast.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::syntax {

StoredDefinition parse(const SourceManager& sources, FileId file, DiagnosticEngine& diags);

}  // namespace capstan::syntax
