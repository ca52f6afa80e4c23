// Helpers for the sema unit tests: a library over the source tree's stdlib,
// models given as text, and the rendered diagnostics.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>

#include "sema/sema.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::sema::test {

struct Session {
  syntax::SourceManager sources;
  syntax::DiagnosticEngine diags;
  Library lib{sources, diags, {std::filesystem::path(CAPSTAN_SOURCE_DIR) / "stdlib"}};

  // Adds `text` as test.cap and flattens `model` (default: the last model).
  std::optional<FlatModel> flatten(const std::string& text, std::string model = "") {
    const syntax::StoredDefinition* sd = lib.addText("test.cap", text);
    if (model.empty()) {
      const syntax::ClassDef* def = lib.defaultModel(*sd);
      REQUIRE(def != nullptr);
      model = def->name;
    }
    return sema::flatten(lib, model);
  }

  std::string rendered() const { return syntax::renderAll(diags, sources, {false, true}); }

  bool has(syntax::DiagKind kind) const {
    for (const auto& d : diags.diagnostics()) {
      if (d.kind == kind) return true;
    }
    return false;
  }
};

inline double value(const FlatModel& m, const std::string& path, std::size_t element = 0) {
  const int v = m.findVariable(path);
  REQUIRE_MESSAGE(v >= 0, "no variable " << path);
  const auto& var = m.variables[static_cast<std::size_t>(v)];
  REQUIRE_MESSAGE(var.value.has_value(), "no value for " << path);
  return var.value->numbers.at(element);
}

}  // namespace capstan::sema::test
