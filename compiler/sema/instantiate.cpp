// Instantiation: classes -> Instances, declarations -> Nodes (variables,
// component instances and arrays of them, connectors, force inputs), lazy
// binding translation and evaluation of variables with cycle detection and
// min/max checks.
#include <cmath>

#include "sema/instance.hpp"

namespace capstan::sema {

using syntax::DiagKind;

namespace {

constexpr const char* kAttributes[] = {"unit", "displayUnit", "quantity", "min", "max", "start",
                                       "fixed", "nominal", "stateSelect"};

bool isAttribute(const std::string& name) {
  for (const char* a : kAttributes) {
    if (name == a) return true;
  }
  return false;
}

ValueType valueTypeOf(BasicType b) {
  switch (b) {
    case BasicType::Integer: return ValueType::Integer;
    case BasicType::Boolean: return ValueType::Boolean;
    case BasicType::String: return ValueType::String;
    case BasicType::Reference: return ValueType::Reference;
    default: return ValueType::Real;
  }
}

// `__capstan(kinds = {"Sphere", "Cylinder"})` on a declaration.
std::vector<std::string> allowedKinds(const syntax::ComponentDecl& decl) {
  std::vector<std::string> out;
  const syntax::Modification* cap = findModification(decl.annotation.mods, "__capstan");
  if (!cap) return out;
  const syntax::Modification* k = findModification(cap->nested, "kinds");
  if (!k || !k->value) return out;
  if (k->value->kind == syntax::ExprKind::String) out.push_back(k->value->text);
  for (const auto& a : k->value->args) {
    if (a->kind == syntax::ExprKind::String) out.push_back(a->text);
  }
  return out;
}

bool evaluateAnnotation(const syntax::ComponentDecl& decl) {
  const syntax::Modification* ev = findModification(decl.annotation.mods, "Evaluate");
  return ev && ev->value && ev->value->kind == syntax::ExprKind::Boolean && ev->value->boolean;
}

std::string subscriptSuffix(const std::vector<int>& dims, std::size_t flat) {
  std::vector<int> idx(dims.size());
  for (std::size_t k = dims.size(); k-- > 0;) {
    idx[k] = static_cast<int>(flat % static_cast<std::size_t>(dims[k])) + 1;
    flat /= static_cast<std::size_t>(dims[k]);
  }
  std::string s = "[";
  for (std::size_t k = 0; k < idx.size(); ++k) s += (k ? "," : "") + std::to_string(idx[k]);
  return s + "]";
}

}  // namespace

std::unique_ptr<Instance> Flattener::instantiate(ClassNode* cls, const ModPtr& mod, std::string path,
                                                 Instance* parent, const syntax::ComponentDecl* decl) {
  auto inst = std::make_unique<Instance>();
  inst->path = std::move(path);
  inst->cls = cls;
  inst->parent = parent;
  inst->decl = decl;
  lib_.resolve(cls);
  if (!cls->builtin.empty() && cls->basic != BasicType::Reference) {
    FlatComponent c;
    c.path = inst->path;
    c.kind = cls->builtin;
    c.range = decl ? decl->nameRange : cls->nameRange();
    const syntax::ComponentDecl* outermost = decl;
    for (const Instance* p = parent; p && p->decl; p = p->parent) outermost = p->decl;
    c.instantiatedAt = outermost ? outermost->nameRange : c.range;
    for (const Instance* p = inst.get(); p && p->decl; p = p->parent) {
      const std::string in = p->parent && p->parent->cls ? p->parent->cls->fullName : std::string();
      c.levels.insert(c.levels.begin(), FlatComponent::Level{in, p->decl->name, p->decl->nameRange});
    }
    inst->component = static_cast<int>(out_.components.size());
    out_.components.push_back(std::move(c));
  }
  collect(*inst, cls, mod, 0);
  checkModifierTargets(mod, *inst, cls->fullName);
  for (Node& n : inst->nodes) complete(*inst, n);
  return inst;
}

// Whether a component `n` of class `type` in `inst` would contain itself:
// `type` is the class of `inst` or of an instance around it, so instantiating
// it would never end. Reports the cycle once per declaration that closes it.
bool Flattener::cyclic(const Instance& inst, const Node& n, const ClassNode* type) {
  const Instance* same = &inst;
  while (same && same->cls != type) same = same->parent;
  if (!same) return false;
  if (!reportedCycles_.insert(n.decl).second) return true;
  std::vector<const Instance*> hops;  // the instances from `same` down to `inst`, outermost first
  for (const Instance* p = &inst; p != same; p = p->parent) hops.insert(hops.begin(), p);
  std::string through;
  for (const Instance* p : hops) through += p->decl->name + ".";
  through += n.decl->name;
  syntax::Diagnostic& d = diags_.report(DiagKind::CyclicComponent, n.decl->typeName.range, type->fullName, through);
  for (const Instance* p : hops) {
    d.note(DiagKind::NoteComponentHere, p->decl->typeName.range,
           p->parent->cls->fullName, p->decl->name, p->cls->fullName);
  }
  return true;
}

Node* Flattener::node(Instance& inst, const std::string& name) {
  auto it = inst.byName.find(name);
  if (it == inst.byName.end()) return nullptr;
  Node& n = inst.nodes[static_cast<std::size_t>(it->second)];
  complete(inst, n);
  return &n;
}

void Flattener::complete(Instance& inst, Node& n) {
  if (n.kind != NodeKind::Pending) return;
  n.kind = NodeKind::Completing;
  const syntax::ComponentDecl& decl = *n.decl;
  ClassNode* type = lib_.lookupClass(n.lexical, decl.typeName);
  if (!type) {
    n.kind = NodeKind::Invalid;
    return;
  }
  lib_.resolve(type);
  n.type = type;
  const Env env{&inst, n.lexical, Purpose::Structural, nullptr, nullptr, 0};

  // Array dimensions: `link[n]`, then `Real[3]`, then the type's own.
  std::vector<int> dims;
  bool colon = false;
  auto addDims = [&](const std::vector<syntax::ExprPtr>& list) {
    for (const auto& d : list) {
      if (d->kind == syntax::ExprKind::Colon) {
        colon = true;
        dims.push_back(-1);
        continue;
      }
      std::optional<int> v = checkedDimension(*d, env);
      dims.push_back(v ? *v : 0);
    }
  };
  addDims(decl.dims);
  addDims(decl.typeDims);

  const bool basic = type->basic != BasicType::None;
  if (basic) {
    // Follow the type's definition to the predefined type, collecting its
    // modifications (`type Length = Real(unit = "m")`) and dimensions.
    ModPtr mod = n.mod;
    for (ClassNode* t = type; t && t->def; t = t->shortBase) {
      lib_.resolve(t);
      if (t->def->shortBase) {
        mod = merge(mod, modFromClassMod(t->def->shortMods, &inst, t->parent));
        addDims(t->def->shortDims);
      }
      for (const BaseClass& b : t->bases) {
        if (b.clause) mod = merge(mod, modFromClassMod(b.clause->mods, &inst, t));
        if (!t->shortBase && b.cls) {
          // A long type definition `type T extends Real(...); end T;`.
          for (ClassNode* bt = b.cls; bt && bt->def && bt->def->shortBase; bt = bt->shortBase) {
            mod = merge(mod, modFromClassMod(bt->def->shortMods, &inst, bt->parent));
          }
        }
      }
    }
    n.mod = mod;
    const bool primitive = inst.component >= 0;
    if (decl.causality == syntax::Causality::Input && primitive) {
      n.kind = NodeKind::ForceInput;
      n.inputShape = dims;
      n.inputSize = 1;
      for (int d : dims) n.inputSize *= std::max(d, 0);
      if (const Mod* u = mod ? mod->find("unit") : nullptr; u && u->value && u->value->kind == syntax::ExprKind::String) {
        std::string error;
        if (auto unit = parseUnit(u->value->text, error)) n.inputUnit = *unit;
      }
      out_.components[static_cast<std::size_t>(inst.component)].inputs[n.name] = n.inputSize;
      if (mod && mod->value) {
        PendingForceLaw p;
        p.rhs = mod->value;
        p.env = Env{mod->scope, mod->lexical, Purpose::Dynamic, nullptr, nullptr, 0};
        p.target = &inst;
        p.node = &n;
        p.select = mod->select;
        p.range = mod->range;
        forceLaws_.push_back(std::move(p));
      }
      return;
    }

    FlatVariable fv;
    fv.path = inst.child(n.name);
    fv.type = valueTypeOf(type->basic);
    fv.shape = dims;
    fv.description = decl.description;
    fv.range = decl.nameRange;
    fv.component = inst.component;
    fv.used = false;
    switch (decl.variability) {
      case syntax::Variability::Constant: fv.kind = VarKind::Constant; break;
      case syntax::Variability::Parameter: fv.kind = VarKind::Parameter; break;
      case syntax::Variability::Continuous:
        fv.kind = decl.causality == syntax::Causality::Input    ? VarKind::Input
                  : decl.causality == syntax::Causality::Output ? VarKind::Output
                                                                : VarKind::Continuous;
        break;
    }
    if (fv.kind == VarKind::Continuous && inst.component < 0) {
      // Only the built-in primitives have continuous variables (a joint's
      // `q`, a frame's `r`): the mechanics defines them. A user's would have
      // no equation that determines it. Reported once per declaration, not
      // per element of a component array.
      if (reportedVariables_.insert(&decl).second) {
        diags_.report(DiagKind::UnsupportedVariable, decl.nameRange, decl.name);
      }
      n.kind = NodeKind::Invalid;
      return;
    }
    fv.evaluate = fv.kind == VarKind::Constant || evaluateAnnotation(decl);
    fv.modified = mod && mod->value && mod->value != decl.binding.get();
    VarInfo vi;
    vi.node = &n;
    vi.owner = &inst;
    vi.mod = mod;
    vi.colonDims = colon;
    vi.rootLevel = &inst == root_.get();
    if (fv.type == ValueType::Reference) vi.allowedKinds = allowedKinds(decl);
    if (mod) {
      for (const auto& [name, sub] : mod->subs) {
        if (!isAttribute(name)) {
          std::vector<std::string> names(std::begin(kAttributes), std::end(kAttributes));
          diags_.report(DiagKind::UnknownModifier, sub->nameRange.valid() ? sub->nameRange : sub->range,
                        name, basicTypeName(type->basic), didYouMean(name, names));
          continue;
        }
        if (sub->each && !sub->eachApplied && dims.empty()) diags_.report(DiagKind::EachOnScalar, sub->range, fv.path);
      }
      if (const Mod* u = mod->find("unit"); u && u->value) {
        if (u->value->kind != syntax::ExprKind::String) {
          diags_.report(DiagKind::TypeMismatch, u->valueRange, "a non-String", "unit", "String");
        } else if (!u->value->text.empty()) {
          std::string error;
          if (auto unit = parseUnit(u->value->text, error)) {
            vi.unit = *unit;
            fv.unit = u->value->text;
          } else {
            diags_.report(DiagKind::InvalidUnit, u->valueRange, u->value->text, error);
          }
        }
      }
    }
    const int index = static_cast<int>(out_.variables.size());
    n.kind = NodeKind::Variable;
    n.var = index;
    out_.variables.push_back(std::move(fv));
    info_.push_back(std::move(vi));
    if (inst.component >= 0) {
      FlatComponent& c = out_.components[static_cast<std::size_t>(inst.component)];
      const FlatVariable& v = out_.variables.back();
      const std::string key = v.path.substr(c.path.size() + 1);
      if (v.kind == VarKind::Parameter || v.kind == VarKind::Constant) c.parameters[key] = index;
      else c.continuous[key] = index;
    }
    if (colon) ensureBinding(index);
    return;
  }

  const syntax::ClassKind kind = type->kind();
  if (kind == syntax::ClassKind::Connector) {
    ConnectorInfo ci;
    ci.owner = &inst;
    ci.name = n.name;
    ci.cls = type;
    ci.declRange = decl.nameRange;
    ci.primitive = inst.component >= 0;
    ci.parent = static_cast<int>(connectors_.size());
    n.kind = NodeKind::Connector;
    n.connector = static_cast<int>(connectors_.size());
    connectors_.push_back(std::move(ci));
    if (inst.component >= 0) out_.components[static_cast<std::size_t>(inst.component)].connectors.push_back(n.name);
    return;
  }
  if (kind == syntax::ClassKind::Package || kind == syntax::ClassKind::Function ||
      kind == syntax::ClassKind::Record) {
    diags_.report(DiagKind::InvalidComponentType, decl.typeName.range,
                  type->fullName, syntax::classKindName(kind))
        .note(DiagKind::NoteDefinedHere, type->nameRange(), type->fullName);
    n.kind = NodeKind::Invalid;
    return;
  }
  if (cyclic(inst, n, type)) {
    n.kind = NodeKind::Invalid;
    return;
  }
  if (type->def && type->def->isPartial) {
    diags_.report(DiagKind::PartialInstance, decl.typeName.range, type->fullName)
        .note(DiagKind::NoteDefinedHere, type->nameRange(), type->fullName);
    n.kind = NodeKind::Invalid;
    return;
  }
  if (dims.empty() && n.mod) {
    for (const auto& [name, sub] : n.mod->subs) {
      if (sub->each && !sub->eachApplied) diags_.report(DiagKind::EachOnScalar, sub->range, inst.child(n.name));
    }
  }
  n.kind = NodeKind::Component;
  n.dims = dims;
  std::size_t count = 1;
  for (int d : dims) count *= static_cast<std::size_t>(std::max(d, 0));
  n.elems.reserve(count);
  const std::string base = inst.child(n.name);
  for (std::size_t k = 0; k < count; ++k) {
    ModPtr m = n.mod;
    std::string path = base;
    if (!dims.empty()) {
      std::size_t rest = k;
      std::vector<int> idx(dims.size());
      for (std::size_t d = dims.size(); d-- > 0;) {
        idx[d] = static_cast<int>(rest % static_cast<std::size_t>(dims[d]));
        rest /= static_cast<std::size_t>(dims[d]);
      }
      for (std::size_t d = 0; d < dims.size(); ++d) m = selectElement(m, idx[d], dims[d]);
      path += subscriptSuffix(dims, k);
    }
    n.elems.push_back(instantiate(type, m, std::move(path), &inst, &decl));
  }
}

bool Flattener::distribute(Typed& t, const std::vector<Selection>& select, const syntax::Expr& value,
                           SourceRange valueRange, const std::string& target) {
  for (const Selection& sel : select) {
    const char* problem = nullptr;
    std::string expected;
    if (t.shape.empty()) {
      problem = "scalar";
      expected = "an array element; add `each` to apply it to every element";
    } else if (t.shape[0] != sel.extent) {
      // `b[3](x = {1, 2})`: element 3 has no value; `{1, 2, 3, 4}` would lose one.
      std::vector<int> want = t.shape;
      want[0] = sel.extent;
      expected = shapeString(want) + " (one element per component)";
    }
    if (!expected.empty()) {
      if (reportedDistribution_.insert(&value).second) {
        // Reported once for the whole array, so name it without subscripts.
        std::string whole;
        int depth = 0;
        for (char c : target) {
          if (c == '[') ++depth;
          else if (c == ']') --depth;
          else if (depth == 0) whole += c;
        }
        diags_.report(DiagKind::ShapeMismatch, valueRange,
                      problem ? std::string(problem) : shapeString(t.shape), whole, expected);
      }
      return false;
    }
    auto ix = std::make_shared<FlatExpr>();
    ix->kind = FlatExprKind::Index;
    ix->range = valueRange;
    ix->args = {t.e};
    ix->indices = {sel.index};
    t.shape.erase(t.shape.begin());
    ix->shape = t.shape;
    if (t.e->kind == FlatExprKind::Array && static_cast<std::size_t>(sel.index) < t.e->args.size()) {
      t.e = t.e->args[static_cast<std::size_t>(sel.index)];
    } else {
      t.e = fold(ix);
    }
  }
  return true;
}

bool Flattener::ensureBinding(int var) {
  VarInfo& vi = info_[static_cast<std::size_t>(var)];
  if (vi.binding == VarInfo::State::Bound) return true;
  if (vi.binding == VarInfo::State::Binding) {
    diags_.report(DiagKind::CyclicBinding, out_.variables[static_cast<std::size_t>(var)].range,
                  out_.variables[static_cast<std::size_t>(var)].path);
    return false;
  }
  vi.binding = VarInfo::State::Binding;
  const Mod* m = vi.mod.get();
  if (!m || !m->value) {
    vi.binding = VarInfo::State::Bound;
    return true;
  }
  const VarKind kind = out_.variables[static_cast<std::size_t>(var)].kind;
  const Purpose purpose =
      kind == VarKind::Output || kind == VarKind::Continuous ? Purpose::Dynamic : Purpose::Binding;
  const Env env{m->scope, m->lexical, purpose, nullptr, nullptr, 0};
  const ValueType type = out_.variables[static_cast<std::size_t>(var)].type;
  const std::string path = out_.variables[static_cast<std::size_t>(var)].path;
  Typed t = type == ValueType::Reference ? referenceValue(*m->value, env, vi.allowedKinds, path)
                                         : translate(*m->value, env);
  FlatVariable& fv = out_.variables[static_cast<std::size_t>(var)];
  if (t.ok) t.ok = distribute(t, m->select, *m->value, m->valueRange, path);
  if (t.ok) {
    const bool typeOk = t.type == fv.type || (fv.type == ValueType::Real && t.type == ValueType::Integer);
    if (!typeOk) {
      diags_.report(DiagKind::TypeMismatch, m->valueRange,
                    std::string("a ") + valueTypeName(t.type), path, valueTypeName(fv.type));
      t.ok = false;
    }
  }
  if (t.ok && vi.colonDims && t.shape.size() == fv.shape.size()) {
    for (std::size_t k = 0; k < fv.shape.size(); ++k) {
      if (fv.shape[k] < 0) fv.shape[k] = t.shape[k];
    }
  }
  if (t.ok && t.shape != fv.shape) {
    diags_.report(DiagKind::ShapeMismatch, m->valueRange, shapeString(t.shape), path, shapeString(fv.shape));
    t.ok = false;
  }
  if (t.ok && vi.unit.known() && t.unit.certain() && !vi.unit.sameAs(t.unit)) {
    auto& d = diags_.report(DiagKind::UnitMismatch, m->valueRange, t.unit.str(), path, vi.unit.str());
    noteUnitsRead(d, *m->value, env);
  }
  if (t.ok) fv.binding = t.e;
  vi.binding = VarInfo::State::Bound;
  return t.ok;
}

const Value* Flattener::ensureValue(int var, SourceRange usedAt) {
  VarInfo& vi = info_[static_cast<std::size_t>(var)];
  FlatVariable& fv = out_.variables[static_cast<std::size_t>(var)];
  switch (vi.eval) {
    case VarInfo::EvalState::Done: return &*fv.value;
    case VarInfo::EvalState::Failed: return nullptr;
    case VarInfo::EvalState::Evaluating:
      diags_.report(DiagKind::CyclicBinding, usedAt, fv.path).note(DiagKind::NoteDeclaredHere, fv.range, fv.path);
      vi.eval = VarInfo::EvalState::Failed;
      return nullptr;
    case VarInfo::EvalState::None: break;
  }
  // Values needed before they are computed nest: `a = b + 1` computes `b`
  // inside `a`. A chain of them is as deep as an expression; reported once,
  // not again for each stretch of the chain that the loop in run() reaches.
  if (valueDepth_ >= kMaxTranslateDepth) {
    if (!reportedValueDepth_) diags_.report(DiagKind::NestingTooDeep, usedAt, kMaxTranslateDepth);
    reportedValueDepth_ = true;
    return nullptr;
  }
  ++valueDepth_;
  const struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{valueDepth_};
  vi.eval = VarInfo::EvalState::Evaluating;
  if (!ensureBinding(var)) {
    vi.eval = VarInfo::EvalState::Failed;
    return nullptr;
  }
  FlatVariable& v = out_.variables[static_cast<std::size_t>(var)];
  if (!v.binding) {
    if (v.kind == VarKind::Parameter || v.kind == VarKind::Constant) {
      auto& d = diags_.report(DiagKind::MissingValue, v.range, v.path);
      const Instance* top = vi.owner;
      while (top && top->parent && top->parent != root_.get()) top = top->parent;
      if (top && top->decl && top->decl->nameRange.begin != v.range.begin) {
        d.note(DiagKind::NoteDeclaredHere, top->decl->nameRange, top->path);
      }
    }
    vi.eval = VarInfo::EvalState::Failed;
    return nullptr;
  }
  std::optional<Value> value = evaluate(*v.binding, vi.mod ? vi.mod->valueRange : v.range);
  if (!value) {
    vi.eval = VarInfo::EvalState::Failed;
    return nullptr;
  }
  FlatVariable& fv2 = out_.variables[static_cast<std::size_t>(var)];
  if (value->type != ValueType::Reference && value->type != ValueType::String) value->type = fv2.type;
  // A value given from outside the model (ParameterOverride) replaces the
  // binding's, before anything reads it.
  if (auto it = overrides_.find(fv2.path); it != overrides_.end()) {
    for (const ParameterOverride& o : it->second) {
      if (o.element < 0 && o.value.numbers.size() == value->numbers.size()) {
        value->numbers = o.value.numbers;
      } else if (o.element >= 0 && static_cast<std::size_t>(o.element) < value->numbers.size() &&
                 o.value.numbers.size() == 1) {
        value->numbers[static_cast<std::size_t>(o.element)] = o.value.numbers[0];
      }
    }
  }
  fv2.value = std::move(value);
  vi.eval = VarInfo::EvalState::Done;

  // Bounds.
  for (const char* bound : {"min", "max"}) {
    const Mod* b = vi.mod ? vi.mod->find(bound) : nullptr;
    if (!b || !b->value || (fv2.type != ValueType::Real && fv2.type != ValueType::Integer)) continue;
    const Typed bt = translate(*b->value, Env{b->scope, b->lexical, Purpose::Binding, nullptr, nullptr, 0});
    if (!bt.ok) continue;
    const Value& val = *out_.variables[static_cast<std::size_t>(var)].value;
    const std::string boundName = out_.variables[static_cast<std::size_t>(var)].path + "." + bound;
    // A bound is a number, or one per element of an array variable.
    if (bt.type != ValueType::Real && bt.type != ValueType::Integer) {
      diags_.report(DiagKind::TypeMismatch, b->valueRange,
                    std::string("a ") + typeString(bt.type, bt.shape), boundName, valueTypeName(fv2.type));
      continue;
    }
    if (!bt.shape.empty() && bt.shape != val.shape) {
      diags_.report(DiagKind::ShapeMismatch, b->valueRange,
                    shapeString(bt.shape), boundName, val.shape.empty() ? shapeString(val.shape) : shapeString({}) + " or " + shapeString(val.shape));
      continue;
    }
    std::optional<Value> bv = evaluate(*bt.e, b->valueRange);
    if (!bv || bv->numbers.empty()) continue;
    (bound[1] == 'i' ? out_.variables[static_cast<std::size_t>(var)].min
                     : out_.variables[static_cast<std::size_t>(var)].max) = bv->numbers;
    for (std::size_t k = 0; k < val.numbers.size(); ++k) {
      const double limit = bv->numbers.size() == 1 ? bv->numbers[0]
                           : k < bv->numbers.size() ? bv->numbers[k]
                                                    : bv->numbers.back();
      const bool isMin = bound[1] == 'i';
      if (isMin ? val.numbers[k] < limit : val.numbers[k] > limit) {
        std::string what = out_.variables[static_cast<std::size_t>(var)].path;
        if (!val.shape.empty()) what += subscriptSuffix(val.shape, k);
        (isMin ? diags_.report(DiagKind::ValueBelowMin, vi.mod->valueRange, what, val.numbers[k], limit)
               : diags_.report(DiagKind::ValueAboveMax, vi.mod->valueRange, what, val.numbers[k], limit))
            .note(DiagKind::NoteBoundHere, b->range, bound);
        break;
      }
    }
  }
  return &*out_.variables[static_cast<std::size_t>(var)].value;
}

int Flattener::findRoot(int c) {
  while (connectors_[static_cast<std::size_t>(c)].parent != c) {
    ConnectorInfo& ci = connectors_[static_cast<std::size_t>(c)];
    ci.parent = connectors_[static_cast<std::size_t>(ci.parent)].parent;
    c = ci.parent;
  }
  return c;
}

Instance* Flattener::connectorQuantities(int connector) {
  // A composite's connector stands for the primitive frame it is connected to.
  int target = connector;
  if (!connectors_[static_cast<std::size_t>(connector)].primitive) {
    const int root = findRoot(connector);
    target = -1;
    for (std::size_t k = 0; k < connectors_.size(); ++k) {
      if (connectors_[k].primitive && findRoot(static_cast<int>(k)) == root) {
        target = static_cast<int>(k);
        break;
      }
    }
    if (target < 0) return nullptr;
  }
  ConnectorInfo& ci = connectors_[static_cast<std::size_t>(target)];
  if (!ci.quantities) {
    auto inst = std::make_unique<Instance>();
    inst->path = ci.owner->child(ci.name);
    inst->cls = ci.cls;
    inst->parent = ci.owner;
    inst->component = ci.owner->component;
    Instance* raw = inst.get();
    ci.quantities = std::move(inst);
    collect(*raw, ci.cls, nullptr, 0);
    for (Node& n : raw->nodes) complete(*raw, n);
  }
  return ci.quantities.get();
}

}  // namespace capstan::sema
