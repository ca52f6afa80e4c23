// A model file of the repository checked and built into its mechanism, for
// the code generation unit tests.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "mechanics/mechanism.hpp"
#include "sema/sema.hpp"

namespace capstan::testing {

struct BuiltModel {
  syntax::SourceManager sources;
  syntax::DiagnosticEngine diags;
  std::optional<sema::FlatModel> flat;
  std::optional<mechanics::Mechanism> mech;
};

// `file` relative to the source tree; REQUIREs that it checks clean.
inline std::unique_ptr<BuiltModel> buildModel(const std::string& file) {
  auto b = std::make_unique<BuiltModel>();
  sema::Library lib(b->sources, b->diags, {std::filesystem::path(CAPSTAN_SOURCE_DIR) / "stdlib"});
  const auto* def = lib.addFile(std::string(CAPSTAN_SOURCE_DIR) + "/" + file);
  REQUIRE(def);
  b->flat = sema::flatten(lib, lib.defaultModel(*def)->name);
  REQUIRE(b->flat);
  b->mech = mechanics::build(*b->flat, b->diags);
  REQUIRE(b->mech);
  REQUIRE_FALSE(b->diags.hasErrors());
  return b;
}

}  // namespace capstan::testing
