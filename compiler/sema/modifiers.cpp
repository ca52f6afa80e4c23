// Modifications: building them from the syntax, merging (outer overrides
// inner, nested modifications merge element by element, `final` forbids
// overriding), distributing them over component arrays (`each`), and
// collecting a class's elements (own and inherited) with their merged
// modifications.
#include "sema/instance.hpp"

namespace capstan::sema {

using syntax::DiagKind;

namespace {

// Adds `m` to `into`'s subs, combining two modifications of the same
// element written in one modification list (`x(unit = "m"), x = 2` is
// fine; `x = 1, x = 2` is not).
void addSub(syntax::DiagnosticEngine& diags, Mod& into, const std::string& name, std::shared_ptr<Mod> m) {
  for (auto& [n, existing] : into.subs) {
    if (n != name) continue;
    auto combined = std::make_shared<Mod>(*existing);
    if (m->value && combined->value) {
      diags.report(DiagKind::DuplicateModifier, m->nameRange, name)
          .note(DiagKind::NotePreviousModifier, existing->nameRange);
      return;
    }
    if (m->value) {
      combined->value = m->value;
      combined->scope = m->scope;
      combined->lexical = m->lexical;
      combined->range = m->range;
      combined->valueRange = m->valueRange;
      combined->each = m->each;
    }
    combined->isFinal = combined->isFinal || m->isFinal;
    if (m->isFinal) combined->finalRange = m->finalRange;
    for (auto& [sn, sm] : m->subs) addSub(diags, *combined, sn, std::make_shared<Mod>(*sm));
    existing = std::move(combined);
    return;
  }
  into.subs.emplace_back(name, std::move(m));
}

}  // namespace

ModPtr Flattener::modFromClassMod(const syntax::ClassModification& mods, Instance* scope, ClassNode* lexical) {
  if (mods.empty()) return nullptr;
  auto root = std::make_shared<Mod>();
  root->scope = scope;
  root->lexical = lexical;
  for (const syntax::Modification& m : mods) {
    if (m.target.parts.empty()) continue;
    auto leaf = std::make_shared<Mod>();
    leaf->value = m.value.get();
    leaf->scope = scope;
    leaf->lexical = lexical;
    leaf->range = m.range;
    leaf->nameRange = m.target.parts.back().range;
    leaf->valueRange = m.value ? m.value->range : m.range;
    leaf->each = m.each;
    leaf->isFinal = m.isFinal;
    leaf->finalRange = m.range;
    if (ModPtr nested = modFromClassMod(m.nested, scope, lexical)) leaf->subs = nested->subs;
    // `a.b.c = v` is `a(b(c = v))`.
    std::shared_ptr<Mod> cur = leaf;
    for (std::size_t i = m.target.parts.size() - 1; i > 0; --i) {
      auto outer = std::make_shared<Mod>();
      outer->scope = scope;
      outer->lexical = lexical;
      outer->range = m.range;
      outer->nameRange = m.target.parts[i - 1].range;
      outer->subs.emplace_back(m.target.parts[i].name, cur);
      cur = outer;
    }
    addSub(diags_, *root, m.target.parts[0].name, cur);
  }
  return root;
}

ModPtr Flattener::modFromDecl(const syntax::ComponentDecl& decl, Instance* scope, ClassNode* lexical) {
  auto m = std::make_shared<Mod>();
  if (ModPtr nested = modFromClassMod(decl.mods, scope, lexical)) m->subs = nested->subs;
  m->value = decl.binding.get();
  m->scope = scope;
  m->lexical = lexical;
  m->range = decl.binding ? decl.binding->range : decl.nameRange;
  m->valueRange = m->range;
  m->isFinal = decl.isFinal;
  m->finalRange = decl.nameRange;
  return m;
}

ModPtr Flattener::merge(const ModPtr& outer, const ModPtr& inner, const std::string& name) {
  if (!outer) return inner;
  if (!inner) return outer;
  if (inner->isFinal && (outer->value || !outer->subs.empty())) {
    // Report at the outer value or, for a nested change, at its first sub.
    SourceRange at = outer->value ? outer->valueRange : outer->range;
    diags_.report(DiagKind::FinalModified, at, name).note(DiagKind::NoteFinalHere, inner->finalRange);
    return inner;
  }
  auto m = std::make_shared<Mod>(*inner);
  if (outer->value) {
    m->value = outer->value;
    m->scope = outer->scope;
    m->lexical = outer->lexical;
    m->select = outer->select;
    m->range = outer->range;
    m->valueRange = outer->valueRange;
    m->nameRange = outer->nameRange;
    m->each = outer->each;
    m->eachApplied = outer->eachApplied;
  }
  if (outer->isFinal) {
    m->isFinal = true;
    m->finalRange = outer->finalRange;
  }
  for (const auto& [subName, sub] : outer->subs) {
    bool found = false;
    for (auto& [n, existing] : m->subs) {
      if (n != subName) continue;
      existing = merge(sub, existing, subName);
      found = true;
      break;
    }
    if (!found) m->subs.emplace_back(subName, sub);
  }
  return m;
}

ModPtr Flattener::selectElement(const ModPtr& mod, int index, int extent) {
  if (!mod) return mod;
  if (mod->each) {
    if (mod->eachApplied) return mod;
    auto m = std::make_shared<Mod>(*mod);
    m->eachApplied = true;
    return m;
  }
  auto m = std::make_shared<Mod>(*mod);
  if (m->value) m->select.push_back(Selection{index, extent});
  for (auto& [n, sub] : m->subs) sub = selectElement(sub, index, extent);
  return m;
}

void Flattener::collect(Instance& inst, ClassNode* cls, const ModPtr& mod, int depth) {
  if (!cls || !cls->def || depth > 64) return;
  lib_.resolve(cls);
  const syntax::ClassDef& def = *cls->def;
  if (cls->shortBase) {
    collect(inst, cls->shortBase, merge(mod, modFromClassMod(def.shortMods, &inst, cls->parent)), depth + 1);
  }
  for (const BaseClass& b : cls->bases) {
    if (!b.cls) continue;
    collect(inst, b.cls, merge(mod, modFromClassMod(b.clause->mods, &inst, cls)), depth + 1);
  }
  for (const syntax::ComponentDecl& decl : def.components) {
    auto [it, inserted] = inst.byName.emplace(decl.name, static_cast<int>(inst.nodes.size()));
    if (!inserted) {
      const Node& prev = inst.nodes[static_cast<std::size_t>(it->second)];
      diags_.report(DiagKind::DuplicateDeclaration, decl.nameRange, decl.name, inst.cls->fullName)
          .note(DiagKind::NotePreviousDeclaration, prev.decl->nameRange);
      continue;
    }
    Node n;
    n.name = decl.name;
    n.decl = &decl;
    n.lexical = cls;
    n.mod = merge(mod ? mod->findPtr(decl.name) : nullptr, modFromDecl(decl, &inst, cls), decl.name);
    inst.nodes.push_back(std::move(n));
  }
  for (const auto& eq : def.equations) inst.equations.emplace_back(eq.get(), cls);
}

void Flattener::checkModifierTargets(const ModPtr& mod, Instance& inst, const std::string& what) {
  if (!mod) return;
  for (const auto& [name, sub] : mod->subs) {
    if (inst.byName.count(name)) continue;
    std::vector<std::string> names;
    names.reserve(inst.nodes.size());
    for (const Node& n : inst.nodes) {
      if (!n.decl->isProtected) names.push_back(n.name);
    }
    diags_.report(DiagKind::UnknownModifier, sub->nameRange.valid() ? sub->nameRange : sub->range,
                  name, what, didYouMean(name, names))
        .note(DiagKind::NoteDefinedHere, inst.cls->nameRange(), inst.cls->fullName);
  }
}

}  // namespace capstan::sema
