// Sema: from parsed files to a FlatModel.
//
//   Library lib(sources, diags, {stdlibDir, extraDirs...});
//   lib.addFile("model.cap");             // parse a user file (top level)
//   std::optional<FlatModel> m = flatten(lib, "Chain", diags);
//
// The library resolves top-level names first among the user's files, then in
// the roots in order (stdlib first): `Capstan` is found as `ROOT/Capstan.cap`
// or as the folder `ROOT/Capstan/` whose `package.cap` and other `.cap` files
// hold its members. Files are parsed lazily, once.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sema/flat.hpp"
#include "syntax/ast.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::sema {

class Library {
 public:
  Library(syntax::SourceManager& sources, syntax::DiagnosticEngine& diags,
          std::vector<std::filesystem::path> roots);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // Parses a user file; returns nullptr (after a FileNotReadable diagnostic)
  // if it cannot be read. Its classes become top-level names.
  const syntax::StoredDefinition* addFile(const std::filesystem::path& path);
  // Same, from text already in memory (tests, the fuzzer).
  const syntax::StoredDefinition* addText(std::string path, std::string text);

  // The last top-level model of the user's file (SPEC §1), or nullptr.
  const syntax::ClassDef* defaultModel(const syntax::StoredDefinition& file) const;

  syntax::SourceManager& sources() { return sources_; }
  syntax::DiagnosticEngine& diags() { return diags_; }

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  syntax::SourceManager& sources_;
  syntax::DiagnosticEngine& diags_;
  std::unique_ptr<Impl> impl_;
};

// A value given for a parameter from outside the model (`capstan --set`,
// `--override`): it replaces the value the model's binding gives the
// variable at `path` — the whole value, or the element at the 0-based flat
// index `element` — as if the binding said so, before anything reads it.
// Bounds, dependent bindings and the mechanics checks then see the new
// value, so a value that breaks a check gets the diagnostic `check` gives.
// The caller checks that the path names a variable of the right shape.
struct ParameterOverride {
  std::string path;      // `link[2].L`
  int element = -1;      // -1: the whole value
  Value value;           // the whole value (its shape) or one element (a scalar)
};

// Flattens the model with the given (possibly dotted) name. Reports problems
// to the library's engine; returns nullopt if the model could not be
// flattened at all (a partial result is returned when recovery was sound, but
// callers must check diags.hasErrors() before trusting it).
std::optional<FlatModel> flatten(Library& lib, const std::string& modelName,
                                 const std::vector<ParameterOverride>& overrides = {});

}  // namespace capstan::sema
