// Sema's view of the class tree: one ClassNode per class definition found in
// the user's files and the library roots, with nested classes (including
// package members that live in separate files of a package folder), resolved
// `extends` clauses and the Capstan-specific class annotations. Built by
// Library (library.cpp); read by lookup, instantiation and flattening.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sema/sema.hpp"
#include "syntax/ast.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::sema {

// The predefined types and special built-in classes.
enum class BasicType { None, Real, Integer, Boolean, String, Reference };

struct ClassNode;

struct BaseClass {
  const syntax::ExtendsClause* clause = nullptr;
  ClassNode* cls = nullptr;  // null when the base could not be resolved
};

struct ClassNode {
  std::string name;
  std::string fullName;                   // `Capstan.Body`
  const syntax::ClassDef* def = nullptr;  // null for predefined types and the root scope
  ClassNode* parent = nullptr;            // lexically enclosing class (nullptr at top level)
  BasicType basic = BasicType::None;      // Real, Integer, ... and types derived from them
  // Own nested classes by name, including members from separate files of a
  // package folder.
  std::unordered_map<std::string, ClassNode*> members;
  std::filesystem::path directory;        // directory of the defining file ("" if none)

  // Filled by Library::resolve(): bases of long definitions, or the base of
  // a short definition (`type Length = Real(unit = "m")`).
  enum class State { Unresolved, Resolving, Resolved } state = State::Unresolved;
  std::vector<BaseClass> bases;
  ClassNode* shortBase = nullptr;
  // `annotation(__capstan(builtin = "Body"))`: the built-in primitive this
  // class declares ("" for ordinary classes).
  std::string builtin;
  // `annotation(__capstan(kinds = {"Sphere"}))` on a Reference-typed element
  // is read per element (see instantiation); nothing stored here.

  syntax::ClassKind kind() const { return def ? def->kind : syntax::ClassKind::Type; }
  SourceRange nameRange() const { return def ? def->nameRange : SourceRange{}; }
};

const char* basicTypeName(BasicType t);

// Finds `name` in `mods` (an annotation or modification list): the last
// modification whose single-part target is `name`, or nullptr.
const syntax::Modification* findModification(const syntax::ClassModification& mods,
                                             std::string_view name);

// The Levenshtein-closest of `candidates` to `name`, if it is close enough to
// be a likely typo; "" otherwise.
std::string closestName(const std::string& name, const std::vector<std::string>& candidates);
// "; did you mean `x`?" or "".
std::string didYouMean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace capstan::sema

// The library's state, shared by the sema translation units.
namespace capstan::sema {

struct Library::Impl {
  syntax::SourceManager& sources;
  syntax::DiagnosticEngine& diags;
  std::vector<std::filesystem::path> roots;

  std::vector<std::unique_ptr<syntax::StoredDefinition>> files;
  std::vector<std::unique_ptr<ClassNode>> nodes;
  // Top-level classes of the user's files, then those loaded from roots.
  std::unordered_map<std::string, ClassNode*> topLevel;
  std::unordered_map<std::string, bool> rootSearched;  // name -> already looked up in roots
  std::unordered_map<std::string, ClassNode*> predefined;  // Real, Integer, Boolean, String
  std::unordered_map<const syntax::ClassDef*, ClassNode*> byDef;

  Impl(syntax::SourceManager& s, syntax::DiagnosticEngine& d, std::vector<std::filesystem::path> r);

  const syntax::StoredDefinition* parseFile(const std::filesystem::path& path, bool report);
  const syntax::StoredDefinition* parseText(std::string path, std::string text);
  ClassNode* addClass(const syntax::ClassDef& def, ClassNode* parent, const std::filesystem::path& dir);
  void loadFolder(ClassNode* pkg, const std::filesystem::path& dir);

  // A top-level class by name: the user's files first, then the roots.
  ClassNode* findTopLevel(const std::string& name);
  // A member class of `cls` (own or inherited), or nullptr.
  ClassNode* findMemberClass(ClassNode* cls, const std::string& name);
  // Resolves extends clauses and short bases (diagnosing cycles) once.
  void resolve(ClassNode* cls);
  // Looks up a (possibly dotted) class name written inside `scope`:
  // lexical scopes outwards with their imports and inherited classes, then
  // top level. Reports UnknownClass unless `quiet`.
  ClassNode* lookupClass(ClassNode* scope, const syntax::Name& name, bool quiet = false);
  // The first part of a name, searched in `scope` and its lexical parents.
  ClassNode* lookupFirst(ClassNode* scope, const std::string& name);
  // Basic type of a class after following short definitions.
  BasicType basicOf(ClassNode* cls);
  // Candidate names visible from `scope` (for "did you mean").
  std::vector<std::string> visibleClassNames(ClassNode* scope);

 private:
  ClassNode* findInImports(ClassNode* scope, const std::string& name);
};

}  // namespace capstan::sema
