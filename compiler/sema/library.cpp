// Library: loading user files and library roots, the class tree, class-name
// lookup (lexical scopes, imports, inherited classes) and `extends`
// resolution with cycle detection.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "sema/classes.hpp"
#include "syntax/parser.hpp"

namespace capstan::sema {

using syntax::ClassDef;
using syntax::DiagKind;

const char* basicTypeName(BasicType t) {
  switch (t) {
    case BasicType::Real: return "Real";
    case BasicType::Integer: return "Integer";
    case BasicType::Boolean: return "Boolean";
    case BasicType::String: return "String";
    case BasicType::Reference: return "Reference";
    case BasicType::None: break;
  }
  return "class";
}

const syntax::Modification* findModification(const syntax::ClassModification& mods,
                                             std::string_view name) {
  const syntax::Modification* found = nullptr;
  for (const auto& m : mods) {
    if (m.target.parts.size() == 1 && m.target.parts[0].name == name) found = &m;
  }
  return found;
}

namespace {

std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string readFile(const std::filesystem::path& path, std::string& error) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) {
    error = "is a directory";
    return {};
  }
  // Opening a named pipe would wait for a writer, perhaps for ever.
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    error = std::filesystem::is_fifo(st) ? "it is a named pipe, not a regular file"
                                         : "it is a device or socket, not a regular file";
    return {};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::filesystem::exists(path, ec) ? "permission denied" : "no such file";
    return {};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Library files are shown relative to the working directory when they lie
// under it (`stdlib/Capstan/Parts.cap`), as compilers show include paths.
std::string displayPath(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.is_relative()) return path.string();
  const std::filesystem::path rel = std::filesystem::relative(path, std::filesystem::current_path(ec), ec);
  if (ec || rel.empty() || *rel.begin() == "..") return path.string();
  return rel.string();
}

// Reads `__capstan(builtin = "Body")` from a class annotation.
std::string builtinOf(const ClassDef& def) {
  const syntax::Modification* cap = findModification(def.annotation.mods, "__capstan");
  if (!cap) return {};
  const syntax::Modification* b = findModification(cap->nested, "builtin");
  if (!b || !b->value || b->value->kind != syntax::ExprKind::String) return {};
  return b->value->text;
}

}  // namespace

std::string closestName(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t bestDist = std::max<std::size_t>(1, name.size() / 3) + 1;
  for (const auto& c : candidates) {
    if (c == name || c.empty()) continue;
    const std::size_t d = editDistance(name, c);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

std::string didYouMean(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string c = closestName(name, candidates);
  return c.empty() ? std::string() : "; did you mean `" + c + "`?";
}

Library::Impl::Impl(syntax::SourceManager& s, syntax::DiagnosticEngine& d,
                    std::vector<std::filesystem::path> r)
    : sources(s), diags(d), roots(std::move(r)) {
  const std::pair<const char*, BasicType> basics[] = {{"Real", BasicType::Real},
                                                      {"Integer", BasicType::Integer},
                                                      {"Boolean", BasicType::Boolean},
                                                      {"String", BasicType::String}};
  for (const auto& [name, type] : basics) {
    auto node = std::make_unique<ClassNode>();
    node->name = node->fullName = name;
    node->basic = type;
    node->state = ClassNode::State::Resolved;
    predefined[name] = node.get();
    nodes.push_back(std::move(node));
  }
}

const syntax::StoredDefinition* Library::Impl::parseText(std::string path, std::string text) {
  const syntax::FileId id = sources.add(std::move(path), std::move(text));
  files.push_back(std::make_unique<syntax::StoredDefinition>(syntax::parse(sources, id, diags)));
  return files.back().get();
}

const syntax::StoredDefinition* Library::Impl::parseFile(const std::filesystem::path& path,
                                                         bool report) {
  std::string error;
  std::string text = readFile(path, error);
  if (!error.empty()) {
    if (report) diags.report(DiagKind::FileNotReadable, {}, path.string(), error);
    return nullptr;
  }
  return parseText(displayPath(path), std::move(text));
}

ClassNode* Library::Impl::addClass(const ClassDef& def, ClassNode* parent,
                                   const std::filesystem::path& dir) {
  auto node = std::make_unique<ClassNode>();
  node->name = def.name;
  node->fullName = parent && !parent->fullName.empty() ? parent->fullName + "." + def.name : def.name;
  node->def = &def;
  node->parent = parent;
  node->directory = dir;
  node->builtin = builtinOf(def);
  if (node->builtin == "Reference") node->basic = BasicType::Reference;
  ClassNode* raw = node.get();
  nodes.push_back(std::move(node));
  byDef[&def] = raw;
  for (const auto& nested : def.classes) {
    ClassNode* child = addClass(*nested, raw, dir);
    auto [it, inserted] = raw->members.emplace(nested->name, child);
    if (!inserted) {
      diags.report(DiagKind::DuplicateDeclaration, nested->nameRange, nested->name, raw->fullName)
          .note(DiagKind::NotePreviousDeclaration, it->second->nameRange());
    }
  }
  return raw;
}

// A package folder: `package.cap` defines the package itself; every other
// `.cap` file and sub-folder holds members.
void Library::Impl::loadFolder(ClassNode* pkg, const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> entries;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const auto& p : entries) {
    if (std::filesystem::is_directory(p, ec)) {
      const std::filesystem::path pkgFile = p / "package.cap";
      if (!std::filesystem::exists(pkgFile, ec)) continue;
      const syntax::StoredDefinition* sd = parseFile(pkgFile, true);
      if (!sd) continue;
      for (const auto& c : sd->classes) {
        if (c->name != p.filename().string()) continue;
        ClassNode* sub = addClass(*c, pkg, p);
        pkg->members.emplace(c->name, sub);
        loadFolder(sub, p);
      }
    } else if (p.extension() == ".cap" && p.filename() != "package.cap") {
      const syntax::StoredDefinition* sd = parseFile(p, true);
      if (!sd) continue;
      for (const auto& c : sd->classes) {
        ClassNode* member = addClass(*c, pkg, dir);
        auto [it, inserted] = pkg->members.emplace(c->name, member);
        if (!inserted) {
          diags.report(DiagKind::DuplicateDeclaration, c->nameRange, c->name, pkg->fullName)
              .note(DiagKind::NotePreviousDeclaration, it->second->nameRange());
        }
      }
    }
  }
}

ClassNode* Library::Impl::findTopLevel(const std::string& name) {
  if (auto it = topLevel.find(name); it != topLevel.end()) return it->second;
  if (rootSearched[name]) return nullptr;
  rootSearched[name] = true;
  std::error_code ec;
  for (const auto& root : roots) {
    const std::filesystem::path file = root / (name + ".cap");
    const std::filesystem::path dir = root / name;
    if (std::filesystem::is_directory(dir, ec) && std::filesystem::exists(dir / "package.cap", ec)) {
      const syntax::StoredDefinition* sd = parseFile(dir / "package.cap", true);
      if (!sd) continue;
      for (const auto& c : sd->classes) {
        if (c->name != name) continue;
        ClassNode* pkg = addClass(*c, nullptr, dir);
        topLevel[name] = pkg;
        loadFolder(pkg, dir);
        return pkg;
      }
    } else if (std::filesystem::exists(file, ec)) {
      const syntax::StoredDefinition* sd = parseFile(file, true);
      if (!sd) continue;
      ClassNode* found = nullptr;
      for (const auto& c : sd->classes) {
        ClassNode* node = addClass(*c, nullptr, root);
        if (c->name == name && !found) found = node;
        topLevel.emplace(c->name, node);
      }
      if (found) return found;
    }
  }
  return nullptr;
}

void Library::Impl::resolve(ClassNode* cls) {
  if (cls->state == ClassNode::State::Resolved || !cls->def) return;
  if (cls->state == ClassNode::State::Resolving) return;  // cycles are reported by the caller
  cls->state = ClassNode::State::Resolving;
  const ClassDef& def = *cls->def;
  // A base is looked up in the enclosing scope, so that a class cannot find
  // names through its own (not yet known) bases.
  ClassNode* scope = cls->parent;
  auto checkCycle = [&](ClassNode* base, SourceRange at) -> bool {
    if (base->state != ClassNode::State::Resolving) return false;
    // Walk the chain of classes being resolved from `base` back to `cls`.
    auto& d = diags.report(DiagKind::CyclicExtends, def.nameRange, cls->fullName);
    d.note(DiagKind::NoteExtendsHere, at, cls->fullName, base->fullName);
    ClassNode* cur = base;
    for (int guard = 0; cur && cur != cls && guard < 64; ++guard) {
      ClassNode* next = nullptr;
      SourceRange where;
      if (cur->def && cur->def->shortBase) {
        next = lookupClass(cur->parent, *cur->def->shortBase, true);
        where = cur->def->shortBase->range;
      } else if (cur->def) {
        for (const auto& e : cur->def->extends) {
          ClassNode* b = lookupClass(cur->parent, e.base, true);
          if (b && b->state == ClassNode::State::Resolving) {
            next = b;
            where = e.base.range;
            break;
          }
        }
      }
      if (!next) break;
      d.note(DiagKind::NoteExtendsHere, where, cur->fullName, next->fullName);
      cur = next;
    }
    return true;
  };
  if (def.shortBase) {
    ClassNode* base = lookupClass(scope, *def.shortBase);
    if (base) {
      resolve(base);
      if (!checkCycle(base, def.shortBase->range)) {
        cls->shortBase = base;
        if (cls->basic == BasicType::None) cls->basic = base->basic;
        if (cls->builtin.empty()) cls->builtin = base->builtin;
      }
    }
  }
  for (const auto& e : def.extends) {
    ClassNode* base = lookupClass(scope, e.base);
    if (!base) {
      cls->bases.push_back({&e, nullptr});
      continue;
    }
    resolve(base);
    if (checkCycle(base, e.base.range)) {
      cls->bases.push_back({&e, nullptr});
      continue;
    }
    const syntax::ClassKind bk = base->kind();
    const bool baseIsType = base->basic != BasicType::None;
    const bool ok = baseIsType ? def.kind == syntax::ClassKind::Type || def.kind == syntax::ClassKind::Connector
                               : (bk != syntax::ClassKind::Function) == (def.kind != syntax::ClassKind::Function) &&
                                     (bk != syntax::ClassKind::Package || def.kind == syntax::ClassKind::Package);
    if (!ok) {
      diags.report(DiagKind::InvalidExtends, e.base.range,
                   base->fullName, baseIsType ? "type" : syntax::classKindName(bk), syntax::classKindName(def.kind))
          .note(DiagKind::NoteDefinedHere, base->nameRange(), base->fullName);
      cls->bases.push_back({&e, nullptr});
      continue;
    }
    if (baseIsType && cls->basic == BasicType::None) cls->basic = base->basic;
    if (cls->builtin.empty() && !base->builtin.empty() && base->builtin != "Reference") {
      // A class extending a primitive is that primitive with more modifiers.
      cls->builtin = base->builtin;
    }
    cls->bases.push_back({&e, base});
  }
  cls->state = ClassNode::State::Resolved;
}

ClassNode* Library::Impl::findMemberClass(ClassNode* cls, const std::string& name) {
  if (!cls) return nullptr;
  if (auto it = cls->members.find(name); it != cls->members.end()) return it->second;
  resolve(cls);
  if (cls->shortBase) return findMemberClass(cls->shortBase, name);
  for (const auto& b : cls->bases) {
    if (!b.cls) continue;
    if (ClassNode* found = findMemberClass(b.cls, name)) return found;
  }
  return nullptr;
}

ClassNode* Library::Impl::findInImports(ClassNode* scope, const std::string& name) {
  if (!scope->def) return nullptr;
  for (const auto& imp : scope->def->imports) {
    if (!imp.wildcard) {
      const std::string local = !imp.alias.empty() ? imp.alias
                                : imp.path.parts.empty() ? std::string()
                                                         : imp.path.parts.back().name;
      if (local != name) continue;
      // Import paths are always fully qualified.
      ClassNode* found = findTopLevel(imp.path.parts.front().name);
      for (std::size_t i = 1; found && i < imp.path.parts.size(); ++i) {
        found = findMemberClass(found, imp.path.parts[i].name);
      }
      if (found) return found;
    } else {
      ClassNode* pkg = imp.path.parts.empty() ? nullptr : findTopLevel(imp.path.parts.front().name);
      for (std::size_t i = 1; pkg && i < imp.path.parts.size(); ++i) {
        pkg = findMemberClass(pkg, imp.path.parts[i].name);
      }
      if (ClassNode* found = findMemberClass(pkg, name)) return found;
    }
  }
  return nullptr;
}

ClassNode* Library::Impl::lookupFirst(ClassNode* scope, const std::string& name) {
  for (ClassNode* s = scope; s; s = s->parent) {
    if (auto it = s->members.find(name); it != s->members.end()) return it->second;
    if (ClassNode* found = findInImports(s, name)) return found;
    if (s->state != ClassNode::State::Resolving) {
      resolve(s);
      for (const auto& b : s->bases) {
        if (ClassNode* found = findMemberClass(b.cls, name)) return found;
      }
    }
    if (s->name == name) return s;
  }
  if (auto it = predefined.find(name); it != predefined.end()) return it->second;
  return findTopLevel(name);
}

ClassNode* Library::Impl::lookupClass(ClassNode* scope, const syntax::Name& name, bool quiet) {
  if (name.parts.empty()) return nullptr;
  ClassNode* cur = name.global ? findTopLevel(name.parts[0].name) : lookupFirst(scope, name.parts[0].name);
  if (!cur) {
    if (!quiet) {
      diags.report(DiagKind::UnknownClass, name.parts[0].range,
                   name.parts[0].name, didYouMean(name.parts[0].name, visibleClassNames(scope)));
    }
    return nullptr;
  }
  for (std::size_t i = 1; i < name.parts.size(); ++i) {
    ClassNode* next = findMemberClass(cur, name.parts[i].name);
    if (!next) {
      if (!quiet) {
        std::vector<std::string> names;
        for (const auto& [n, c] : cur->members) names.push_back(n);
        diags.report(DiagKind::UnknownClass, name.parts[i].range,
                     cur->fullName + "." + name.parts[i].name, didYouMean(name.parts[i].name, names));
      }
      return nullptr;
    }
    cur = next;
  }
  return cur;
}

BasicType Library::Impl::basicOf(ClassNode* cls) {
  if (!cls) return BasicType::None;
  resolve(cls);
  return cls->basic;
}

std::vector<std::string> Library::Impl::visibleClassNames(ClassNode* scope) {
  std::vector<std::string> names;
  for (ClassNode* s = scope; s; s = s->parent) {
    for (const auto& [n, c] : s->members) names.push_back(n);
    if (s->def) {
      for (const auto& imp : s->def->imports) {
        if (!imp.alias.empty()) names.push_back(imp.alias);
        else if (!imp.wildcard && !imp.path.parts.empty()) names.push_back(imp.path.parts.back().name);
        else if (imp.wildcard) {
          ClassNode* pkg = imp.path.parts.empty() ? nullptr : findTopLevel(imp.path.parts.front().name);
          for (std::size_t i = 1; pkg && i < imp.path.parts.size(); ++i) {
            pkg = findMemberClass(pkg, imp.path.parts[i].name);
          }
          if (pkg) {
            for (const auto& [n, c] : pkg->members) names.push_back(n);
          }
        }
      }
    }
  }
  for (const auto& [n, c] : topLevel) names.push_back(n);
  for (const auto& [n, c] : predefined) names.push_back(n);
  std::sort(names.begin(), names.end());
  return names;
}

// ---- Library ----------------------------------------------------------------

Library::Library(syntax::SourceManager& sources, syntax::DiagnosticEngine& diags,
                 std::vector<std::filesystem::path> roots)
    : sources_(sources), diags_(diags), impl_(std::make_unique<Impl>(sources, diags, std::move(roots))) {}

Library::~Library() = default;

namespace {
void addTopLevel(Library::Impl& impl, const syntax::StoredDefinition& sd,
                 const std::filesystem::path& dir) {
  for (const auto& c : sd.classes) {
    ClassNode* node = impl.addClass(*c, nullptr, dir);
    auto [it, inserted] = impl.topLevel.emplace(c->name, node);
    if (!inserted) {
      impl.diags.report(DiagKind::DuplicateDeclaration, c->nameRange, c->name, "the top level")
          .note(DiagKind::NotePreviousDeclaration, it->second->nameRange());
    }
  }
}
}  // namespace

const syntax::StoredDefinition* Library::addFile(const std::filesystem::path& path) {
  const syntax::StoredDefinition* sd = impl_->parseFile(path, true);
  if (sd) addTopLevel(*impl_, *sd, std::filesystem::absolute(path).parent_path());
  return sd;
}

const syntax::StoredDefinition* Library::addText(std::string path, std::string text) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const syntax::StoredDefinition* sd = impl_->parseText(std::move(path), std::move(text));
  addTopLevel(*impl_, *sd, dir);
  return sd;
}

const syntax::ClassDef* Library::defaultModel(const syntax::StoredDefinition& file) const {
  const syntax::ClassDef* last = nullptr;
  for (const auto& c : file.classes) {
    if (c->kind == syntax::ClassKind::Model) last = c.get();
  }
  return last;
}

}  // namespace capstan::sema
