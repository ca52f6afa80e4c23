// Function calls: the built-in functions of SPEC §2 (checked here by the
// rules of their entries in sema/builtins.hpp, which also holds their one
// implementation), functions written in the language (inlined by
// executing their `algorithm` symbolically, element by element, so a binding
// that calls `Capstan.Frames.rpy(roll, 0, 0)` still refers to `roll`), and
// external "C++" functions (recorded in FlatModel::functions, callable only
// where the value is computed at run time).
#include <algorithm>
#include <cmath>

#include "sema/instance.hpp"

namespace capstan::sema {

using syntax::DiagKind;
using syntax::ExprKind;

namespace {

bool isNumeric(ValueType t) { return t == ValueType::Real || t == ValueType::Integer; }

std::size_t count(const std::vector<int>& shape) {
  std::size_t n = 1;
  for (int d : shape) n *= static_cast<std::size_t>(std::max(d, 0));
  return n;
}

}  // namespace

std::vector<FlatExprPtr> scalarElements(const FlatExprPtr& e, const std::vector<int>& shape) {
  std::vector<FlatExprPtr> out;
  if (shape.empty()) {
    out.push_back(e);
    return out;
  }
  if (e->kind == FlatExprKind::Constant) {
    for (std::size_t k = 0; k < e->value.size(); ++k) {
      Value v;
      v.type = e->value.type;
      if (!e->value.numbers.empty()) v.numbers = {e->value.numbers[k]};
      if (!e->value.strings.empty()) v.strings = {e->value.strings[k]};
      out.push_back(makeConstant(std::move(v), e->range));
    }
    return out;
  }
  const std::vector<int> sub(shape.begin() + 1, shape.end());
  if (e->kind == FlatExprKind::Array) {
    for (const auto& a : e->args) {
      auto part = scalarElements(a, sub);
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }
  const std::size_t n = count(shape);
  for (std::size_t k = 0; k < n; ++k) {
    if (e->kind == FlatExprKind::Variable && e->element < 0) {
      auto v = std::make_shared<FlatExpr>(*e);
      v->element = static_cast<int>(k);
      v->shape.clear();
      out.push_back(v);
      continue;
    }
    std::vector<int> idx(shape.size());
    std::size_t rest = k;
    for (std::size_t d = shape.size(); d-- > 0;) {
      idx[d] = static_cast<int>(rest % static_cast<std::size_t>(shape[d]));
      rest /= static_cast<std::size_t>(shape[d]);
    }
    auto ix = std::make_shared<FlatExpr>();
    ix->kind = FlatExprKind::Index;
    ix->range = e->range;
    ix->args = {e};
    ix->indices = idx;
    out.push_back(ix);
  }
  return out;
}

// Rebuilds a (nested) Array from scalar elements.
static FlatExprPtr assemble(Flattener& f, const std::vector<FlatExprPtr>& elems, std::size_t offset,
                            const std::vector<int>& shape, std::size_t dim, SourceRange r) {
  if (dim == shape.size()) return elems[offset];
  std::size_t stride = 1;
  for (std::size_t d = dim + 1; d < shape.size(); ++d) stride *= static_cast<std::size_t>(shape[d]);
  auto a = std::make_shared<FlatExpr>();
  a->kind = FlatExprKind::Array;
  a->range = r;
  a->shape.assign(shape.begin() + static_cast<long>(dim), shape.end());
  for (int k = 0; k < shape[dim]; ++k) {
    a->args.push_back(assemble(f, elems, offset + static_cast<std::size_t>(k) * stride, shape, dim + 1, r));
  }
  return f.fold(a);
}

Typed Flattener::translateCall(const syntax::Expr& e, const Env& env) {
  const std::string name = e.name.dotted();
  if (e.name.parts.size() == 1 && !e.name.global) {
    if (const builtins::Builtin* b = builtins::find(name)) {
      // A user function of a built-in's name would never be called: say so
      // rather than call the built-in in its place.
      if (ClassNode* user = lib_.lookupClass(env.lexical, e.name, true);
          user && user->def && user->kind() == syntax::ClassKind::Function) {
        diags_.report(DiagKind::BuiltinNameRedefined, e.name.range, name, user->fullName)
            .note(DiagKind::NoteDefinedHere, user->nameRange(), user->fullName);
        return Typed{};
      }
      return translateBuiltin(e, *b, env);
    }
  }
  Typed t;
  ClassNode* fn = lib_.lookupClass(env.lexical, e.name);
  if (!fn) return t;
  lib_.resolve(fn);
  if (fn->kind() != syntax::ClassKind::Function) {
    diags_.report(DiagKind::NotAFunction, e.name.range, fn->fullName, fn->def ? syntax::classKindName(fn->kind()) : "type")
        .note(DiagKind::NoteDefinedHere, fn->nameRange(), fn->fullName);
    return t;
  }
  return callFunction(fn, e, env);
}

// A call of a built-in function: arity, argument shapes and types, the
// result's shape, type and unit, by the rules of its entry in
// sema/builtins.hpp. Constructors and `size` become constants here.
Typed Flattener::translateBuiltin(const syntax::Expr& e, const builtins::Builtin& f, const Env& env) {
  using builtins::ShapeRule;
  using builtins::UnitRule;
  const std::string name(f.name);
  Typed t;
  if (!e.namedArgs.empty()) {
    diags_.report(DiagKind::UnknownArgument, e.namedArgs[0].nameRange, name, e.namedArgs[0].name);
    return t;
  }
  auto arity = [&](std::size_t lo, std::size_t hi) {
    if (e.args.size() >= lo && e.args.size() <= hi) return true;
    diags_.report(DiagKind::ArgumentCount, e.range,
                  name, e.args.size(), lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi));
    return false;
  };
  const auto lo = static_cast<std::size_t>(f.minArgs), hi = static_cast<std::size_t>(f.maxArgs);
  // Array constructors with sizes known at compile time.
  if (f.shape == ShapeRule::Constructor) {
    const bool isFill = f.id == builtins::Id::Fill, isIdentity = f.id == builtins::Id::Identity;
    const std::size_t first = isFill ? 1 : 0;
    if (!arity(lo, hi)) return t;
    std::vector<int> shape;
    for (std::size_t k = first; k < e.args.size(); ++k) {
      std::optional<int> n = checkedDimension(*e.args[k], env);
      if (!n) return t;
      shape.push_back(*n);
    }
    if (isIdentity) shape.push_back(shape[0]);
    if (isFill) {
      Typed v = translate(*e.args[0], env);
      if (!v.ok) return t;
      if (!v.shape.empty()) {
        diags_.report(DiagKind::ShapeMismatch, e.args[0]->range, shapeString(v.shape), "fill value", "scalar");
        return t;
      }
      std::vector<FlatExprPtr> elems(count(shape), v.e);
      t.e = assemble(*this, elems, 0, shape, 0, e.range);
      t.type = v.type;
      t.unit = v.unit;
    } else {
      Value v;
      v.type = ValueType::Integer;
      v.shape = shape;
      v.numbers.assign(count(shape), f.id == builtins::Id::Ones ? 1.0 : 0.0);
      if (isIdentity) {
        for (int k = 0; k < shape[0]; ++k) v.numbers[static_cast<std::size_t>(k * shape[0] + k)] = 1.0;
      }
      t.e = makeConstant(std::move(v), e.range);
      t.type = ValueType::Integer;
      t.unit = Unit::literal();
    }
    t.shape = shape;
    t.ok = true;
    return t;
  }
  std::vector<Typed> a;
  for (const auto& arg : e.args) {
    a.push_back(translate(*arg, env));
    if (!a.back().ok) return t;
  }
  if (!arity(lo, hi)) return t;
  auto bad = [&](std::size_t k) {
    diags_.report(DiagKind::InvalidOperands, e.args[k]->range,
                  name, typeString(a[k].type, a[k].shape), k + 1 < a.size() ? typeString(a[k + 1].type, a[k + 1].shape) : "nothing");
    return Typed{};
  };
  if (f.shape == ShapeRule::Size) {
    Value v;
    v.type = ValueType::Integer;
    if (a.size() == 2) {
      std::optional<long> d = evalInteger(*e.args[1], env);
      if (!d) return Typed{};
      if (*d < 1 || static_cast<std::size_t>(*d) > a[0].shape.size()) {
        diags_.report(DiagKind::IndexOutOfRange, e.args[1]->range,
                      *d, 1, "size", a[0].shape.size());
        return Typed{};
      }
      v.numbers = {static_cast<double>(a[0].shape[static_cast<std::size_t>(*d - 1)])};
    } else {
      for (int d : a[0].shape) v.numbers.push_back(d);
      v.shape = {static_cast<int>(a[0].shape.size())};
    }
    t.type = ValueType::Integer;
    t.shape = v.shape;
    t.unit = Unit::literal();
    t.e = makeConstant(std::move(v), e.range);
    t.ok = true;
    return t;
  }
  // Argument shapes -> result shape.
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (!isNumeric(a[k].type)) return bad(k);
  }
  const std::vector<int>& s0 = a[0].shape;
  switch (f.shape) {
    case ShapeRule::Elementwise: t.shape = s0; break;
    case ShapeRule::TwoScalars:
      for (std::size_t k = 0; k < a.size(); ++k) {
        if (!a[k].shape.empty()) return bad(k);
      }
      break;
    case ShapeRule::MinMax:
    case ShapeRule::Reduce:
      if (a.size() == 2) {
        for (std::size_t k = 0; k < 2; ++k) {
          if (!a[k].shape.empty()) return bad(k);
        }
      } else if (s0.empty()) {
        return bad(0);
      }
      break;
    case ShapeRule::Cross:
      for (std::size_t k = 0; k < 2; ++k) {
        if (a[k].shape != std::vector<int>{3}) return bad(k);
      }
      t.shape = {3};
      break;
    case ShapeRule::Norm:
    case ShapeRule::Normalize:
    case ShapeRule::Diagonal:
      if (s0.size() != 1) return bad(0);
      if (f.shape == ShapeRule::Normalize) t.shape = s0;
      if (f.shape == ShapeRule::Diagonal) t.shape = {s0[0], s0[0]};
      break;
    case ShapeRule::Skew:
      if (s0 != std::vector<int>{3}) return bad(0);
      t.shape = {3, 3};
      break;
    case ShapeRule::Transpose:
      if (s0.size() != 2) return bad(0);
      t.shape = {s0[1], s0[0]};
      break;
    case ShapeRule::Constructor:
    case ShapeRule::Size: return Typed{};  // handled above
  }
  // Type.
  t.type = ValueType::Real;
  if (f.type == builtins::TypeRule::Numeric &&
      std::all_of(a.begin(), a.end(), [](const Typed& x) { return x.type == ValueType::Integer; }))
    t.type = ValueType::Integer;
  // Unit.
  const auto none = [](const Unit& u) { return u.kind == Unit::Kind::Unknown ? Unit::unknown() : Unit::literal(); };
  switch (f.unit) {
    case UnitRule::None: t.unit = none(a[0].unit); break;
    case UnitRule::SqrtOf: t.unit = unitPow(a[0].unit, 0.5); break;
    case UnitRule::Same: t.unit = a[0].unit; break;
    case UnitRule::Product: t.unit = unitMul(a[0].unit, a[1].unit); break;
    case UnitRule::Common:
    case UnitRule::CommonNone: {
      Unit u = a[0].unit;
      if (a.size() == 2) {
        bool ok = true;
        u = unitJoin(a[0].unit, a[1].unit, ok);
        if (!ok) diags_.report(DiagKind::IncompatibleUnits, e.range, name, a[0].unit.str(), a[1].unit.str());
      }
      t.unit = f.unit == UnitRule::CommonNone ? none(u) : u;
      break;
    }
  }
  if (f.shape == ShapeRule::Elementwise) t.unit.spelling.clear();
  auto c = std::make_shared<FlatExpr>();
  c->kind = FlatExprKind::Call;
  c->range = e.range;
  c->function = name;
  c->builtin = &f;
  for (const Typed& x : a) c->args.push_back(x.e);
  c->shape = t.shape;
  t.e = fold(c);
  t.ok = true;
  return t;
}

int Flattener::externalFunction(ClassNode* fn) {
  auto it = externalIndex_.find(fn->fullName);
  if (it != externalIndex_.end()) return it->second;
  const syntax::ClassDef& def = *fn->def;
  const syntax::ExternalClause& ext = *def.external;
  FlatFunction f;
  f.name = fn->fullName;
  f.cppName = ext.functionName;
  f.range = def.nameRange;
  f.externalRange = ext.range;
  const Env env{nullptr, fn, Purpose::Structural, nullptr, nullptr, 0};
  for (const auto& c : def.components) {
    if (c.causality == syntax::Causality::None) continue;
    FlatFunction::Arg arg;
    arg.name = c.name;
    ClassNode* type = lib_.lookupClass(fn, c.typeName, true);
    switch (lib_.basicOf(type)) {
      case BasicType::Integer: arg.type = ValueType::Integer; break;
      case BasicType::Boolean: arg.type = ValueType::Boolean; break;
      case BasicType::String: arg.type = ValueType::String; break;
      default: arg.type = ValueType::Real; break;
    }
    for (const auto* dims : {&c.dims, &c.typeDims}) {
      for (const auto& d : *dims) {
        std::optional<int> n = d->kind == ExprKind::Colon ? std::optional<int>(-1) : checkedDimension(*d, env);
        arg.shape.push_back(n ? *n : -1);
      }
    }
    (c.causality == syntax::Causality::Input ? f.inputs : f.outputs).push_back(std::move(arg));
  }
  for (const auto& a : ext.args) f.callArgs.push_back(a->kind == ExprKind::Ref ? a->name.dotted() : std::string());
  auto stringAnnotation = [&](std::string_view key) -> std::string {
    for (const syntax::Annotation* ann : {&ext.annotation, &def.annotation}) {
      const syntax::Modification* m = findModification(ann->mods, key);
      if (m && m->value && m->value->kind == ExprKind::String) return m->value->text;
    }
    return {};
  };
  f.include = stringAnnotation("Include");
  const std::string dir = stringAnnotation("IncludeDirectory");
  if (!dir.empty()) {
    std::filesystem::path p(dir);
    if (p.is_relative() && !fn->directory.empty()) p = fn->directory / p;
    f.includeDirectory = p.lexically_normal().string();
  }
  const int index = static_cast<int>(out_.functions.size());
  out_.functions.push_back(std::move(f));
  externalIndex_[fn->fullName] = index;
  for (const syntax::Annotation* ann : {&def.annotation, &ext.annotation})
    if (const syntax::Modification* m = findModification(ann->mods, "derivative")) {
      const int derivative = derivativeFunction(fn, *m);  // may add functions: index afterwards
      out_.functions[static_cast<std::size_t>(index)].derivative = derivative;
    }
  return index;
}

// `annotation(derivative = NAME)` of external function `fn`: NAME's index
// in FlatModel::functions once it is checked to be an external function of
// fn's inputs, then the differential of each Real input, returning one
// Real (Modelica's derivative annotation, first order); else a diagnostic
// and -1.
int Flattener::derivativeFunction(ClassNode* fn, const syntax::Modification& m) {
  const int f = externalIndex_.at(fn->fullName);
  auto mismatch = [&](const std::string& name, const std::string& why, const ClassNode* at) {
    syntax::Diagnostic& d = diags_.report(DiagKind::ExternalDerivativeMismatch, m.value ? m.value->range : m.range, name, fn->fullName, why);
    if (at && at->def) d.note(DiagKind::NoteDefinedHere, at->def->nameRange, at->fullName);
    return -1;
  };
  if (!m.value || m.value->kind != ExprKind::Ref) return mismatch("derivative", "the annotation does not name a function", nullptr);
  const std::string name = m.value->name.dotted();
  ClassNode* d = lib_.lookupClass(fn, m.value->name, true);
  if (!d) return mismatch(name, "no class of that name is in scope", nullptr);
  if (!d->def || d->kind() != syntax::ClassKind::Function) return mismatch(name, "it is not a function", d);
  if (!d->def->external || (d->def->external->language != "C++" && d->def->external->language != "C"))
    return mismatch(name, "it is not an `external \"C++\"` function", d);
  const int index = externalFunction(d);
  const FlatFunction& primal = out_.functions[static_cast<std::size_t>(f)];
  const FlatFunction& derivative = out_.functions[static_cast<std::size_t>(index)];
  std::vector<FlatFunction::Arg> expected = primal.inputs;
  for (const FlatFunction::Arg& a : primal.inputs)
    if (a.type == ValueType::Real) expected.push_back({"d" + a.name, ValueType::Real, a.shape});
  const auto inputs = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " input" : " inputs"); };
  if (derivative.inputs.size() != expected.size())
    return mismatch(name, "it takes " + inputs(derivative.inputs.size()) + ", not " + std::to_string(expected.size()) +
                              " (`" + fn->fullName + "`'s " + inputs(primal.inputs.size()) +
                              ", then a differential per Real input)", d);
  for (std::size_t k = 0; k < expected.size(); ++k)
    if (derivative.inputs[k].type != expected[k].type || derivative.inputs[k].shape != expected[k].shape)
      return mismatch(name, "its input `" + derivative.inputs[k].name + "` (number " + std::to_string(k + 1) +
                                ") is not of the type of " +
                                (k < primal.inputs.size() ? "input `" + primal.inputs[k].name + "`"
                                                          : "the differential it stands for"), d);
  if (derivative.outputs.size() != 1 || derivative.outputs[0].type != ValueType::Real || primal.outputs.size() != 1 ||
      derivative.outputs[0].shape != primal.outputs[0].shape)
    return mismatch(name, "it does not return one Real, the differential of the output", d);
  return index;
}

Typed Flattener::callFunction(ClassNode* fn, const syntax::Expr& e, const Env& env) {
  Typed t;
  const syntax::ClassDef& def = *fn->def;
  if (env.depth > 16) {
    diags_.report(DiagKind::EvaluationFailed, e.range, "calls of `" + fn->fullName + "` nest too deeply");
    return t;
  }
  std::vector<const syntax::ComponentDecl*> inputs, outputs, others;
  for (const auto& c : def.components) {
    (c.causality == syntax::Causality::Input ? inputs : c.causality == syntax::Causality::Output ? outputs : others)
        .push_back(&c);
  }
  if (outputs.empty()) {
    diags_.report(DiagKind::EvaluationFailed, e.range, "function `" + fn->fullName + "` has no output");
    return t;
  }
  if (e.args.size() > inputs.size()) {
    diags_.report(DiagKind::ArgumentCount, e.range,
                  fn->fullName, e.args.size(), std::to_string(inputs.size()))
        .note(DiagKind::NoteDefinedHere, def.nameRange, fn->fullName);
    return t;
  }
  std::vector<std::optional<Typed>> bound(inputs.size());
  std::vector<const syntax::Expr*> written(inputs.size(), nullptr);  // each argument as the caller wrote it
  bool ok = true;
  for (std::size_t k = 0; k < e.args.size(); ++k) {
    bound[k] = translate(*e.args[k], env);
    written[k] = e.args[k].get();
    ok = ok && bound[k]->ok;
  }
  for (const syntax::NamedArg& na : e.namedArgs) {
    auto it = std::find_if(inputs.begin(), inputs.end(), [&](const auto* c) { return c->name == na.name; });
    if (it == inputs.end()) {
      std::vector<std::string> names;
      for (const auto* c : inputs) names.push_back(c->name);
      diags_.report(DiagKind::UnknownArgument, na.nameRange, fn->fullName, na.name + didYouMean(na.name, names));
      ok = false;
      continue;
    }
    bound[static_cast<std::size_t>(it - inputs.begin())] = translate(*na.value, env);
    written[static_cast<std::size_t>(it - inputs.begin())] = na.value.get();
    ok = ok && bound[static_cast<std::size_t>(it - inputs.begin())]->ok;
  }
  if (!ok) return t;

  std::map<std::string, LocalValue> locals;
  std::vector<std::pair<std::string, int>> iters;
  Env fenv{nullptr, fn, env.purpose == Purpose::Dynamic ? Purpose::Dynamic : Purpose::Binding, &iters, &locals, env.depth + 1};
  auto declare = [&](const syntax::ComponentDecl& c, LocalValue& lv) -> bool {
    lv.declared = c.nameRange;
    ClassNode* type = lib_.lookupClass(fn, c.typeName);
    if (!type) return false;
    switch (lib_.basicOf(type)) {
      case BasicType::Integer: lv.type = ValueType::Integer; break;
      case BasicType::Boolean: lv.type = ValueType::Boolean; break;
      case BasicType::String: lv.type = ValueType::String; break;
      case BasicType::Real: lv.type = ValueType::Real; break;
      default:
        diags_.report(DiagKind::InvalidComponentType, c.typeName.range, type->fullName, syntax::classKindName(type->kind()));
        return false;
    }
    for (const auto* dims : {&c.dims, &c.typeDims}) {
      for (const auto& d : *dims) {
        if (d->kind == ExprKind::Colon) {
          lv.shape.push_back(-1);
          continue;
        }
        std::optional<int> n = checkedDimension(*d, fenv);
        if (!n) return false;
        lv.shape.push_back(*n);
      }
    }
    if (const syntax::Modification* u = findModification(c.mods, "unit"); u && u->value && u->value->kind == ExprKind::String) {
      std::string error;
      if (auto unit = parseUnit(u->value->text, error)) lv.unit = *unit;
    }
    return true;
  };
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const syntax::ComponentDecl& c = *inputs[k];
    LocalValue lv;
    if (!declare(c, lv)) return t;
    if (!bound[k]) {
      if (!c.binding) {
        diags_.report(DiagKind::ArgumentCount, e.range,
                      fn->fullName, e.args.size() + e.namedArgs.size(), std::to_string(inputs.size()))
            .note(DiagKind::NoteDeclaredHere, c.nameRange, c.name);
        return t;
      }
      bound[k] = translate(*c.binding, fenv);
      if (!bound[k]->ok) return t;
    }
    const Typed& a = *bound[k];
    const bool typeOk = a.type == lv.type || (lv.type == ValueType::Real && a.type == ValueType::Integer);
    if (!typeOk) {
      diags_.report(DiagKind::TypeMismatch, a.e->range,
                    std::string("a ") + valueTypeName(a.type), fn->fullName + "." + c.name, valueTypeName(lv.type));
      return t;
    }
    bool shapeOk = a.shape.size() == lv.shape.size();
    for (std::size_t d = 0; shapeOk && d < lv.shape.size(); ++d) {
      if (lv.shape[d] < 0) lv.shape[d] = a.shape[d];
      shapeOk = lv.shape[d] == a.shape[d];
    }
    if (!shapeOk) {
      diags_.report(DiagKind::ShapeMismatch, a.e->range, shapeString(a.shape), fn->fullName + "." + c.name, shapeString(lv.shape));
      return t;
    }
    if (lv.unit.known() && a.unit.certain() && !lv.unit.sameAs(a.unit)) {
      auto& d = diags_.report(DiagKind::UnitMismatch, a.e->range, a.unit.str(), fn->fullName + "." + c.name,
                              lv.unit.str());
      if (written[k]) noteUnitsRead(d, *written[k], env);  // a default reads the inputs before it
      else if (c.binding) noteUnitsRead(d, *c.binding, fenv);
    }
    if (!lv.unit.known()) lv.unit = a.unit;
    lv.elems = scalarElements(a.e, a.shape);
    locals[c.name] = std::move(lv);
  }

  if (def.external) {
    if (def.external->language != "C++" && def.external->language != "C") {
      diags_.report(DiagKind::UnsupportedExternal, def.external->languageRange, def.external->language);
      return t;
    }
    if (env.purpose != Purpose::Dynamic) {
      diags_.report(DiagKind::ExternalCallAtCompileTime, e.range, fn->fullName)
          .note(DiagKind::NoteDefinedHere, def.nameRange, fn->fullName);
      return t;
    }
    externalFunction(fn);
    LocalValue out;
    if (!declare(*outputs[0], out)) return t;
    auto c = std::make_shared<FlatExpr>();
    c->kind = FlatExprKind::Call;
    c->range = e.range;
    c->function = fn->fullName;
    for (std::size_t k = 0; k < inputs.size(); ++k) c->args.push_back(bound[k]->e);
    c->shape = out.shape;
    t.e = c;
    t.type = out.type;
    t.shape = out.shape;
    t.unit = out.unit.known() ? out.unit : Unit::unknown();
    t.ok = true;
    return t;
  }

  for (const auto* group : {&outputs, &others}) {
    for (const syntax::ComponentDecl* c : *group) {
      LocalValue lv;
      if (!declare(*c, lv)) return t;
      lv.elems.assign(count(lv.shape), nullptr);
      locals[c->name] = std::move(lv);
      if (c->binding) {
        Typed b = translate(*c->binding, fenv);
        if (!b.ok) return t;
        LocalValue& l = locals[c->name];
        if (b.shape != l.shape) {
          diags_.report(DiagKind::ShapeMismatch, c->binding->range, shapeString(b.shape), c->name, shapeString(l.shape));
          return t;
        }
        l.elems = scalarElements(b.e, b.shape);
        if (!l.unit.known()) l.unit = b.unit;
      }
    }
  }
  for (const auto& s : def.algorithm) {
    if (!execute(*s, fenv, iters, fn)) return t;
  }
  LocalValue& result = locals[outputs[0]->name];
  for (const auto& el : result.elems) {
    if (!el) {
      diags_.report(DiagKind::UnassignedOutput, e.range, outputs[0]->name, fn->fullName)
          .note(DiagKind::NoteDeclaredHere, outputs[0]->nameRange, outputs[0]->name);
      return t;
    }
  }
  t.e = assemble(*this, result.elems, 0, result.shape, 0, e.range);
  t.type = result.type;
  t.shape = result.shape;
  t.unit = result.unit;
  t.unit.spelling.clear();
  t.ok = true;
  return t;
}

bool Flattener::execute(const syntax::Statement& s, Env& env, std::vector<std::pair<std::string, int>>& iters,
                        ClassNode* fn) {
  if (s.isFor) {
    Env r = env;
    r.purpose = Purpose::Structural;
    const Typed range = translate(*s.iterRange, r);
    if (!range.ok) return false;
    std::optional<Value> v = evaluate(*range.e, s.iterRange->range);
    if (!v) return false;
    if (range.type != ValueType::Integer || range.shape.size() > 1) {
      diags_.report(DiagKind::TypeMismatch, s.iterRange->range, std::string("a ") + typeString(range.type, range.shape), "for range", "Integer[:]");
      return false;
    }
    for (double x : v->numbers) {
      iters.emplace_back(s.iterator, static_cast<int>(x));
      for (const auto& b : s.body) {
        if (!execute(*b, env, iters, fn)) {
          iters.pop_back();
          return false;
        }
      }
      iters.pop_back();
    }
    return true;
  }
  if (!s.lhs || s.lhs->kind != ExprKind::Ref || s.lhs->name.parts.size() != 1) {
    diags_.report(DiagKind::NotAForceInput, s.lhs ? s.lhs->range : s.range, "this expression", "not a variable of the function");
    return false;
  }
  const syntax::NamePart& part = s.lhs->name.parts[0];
  auto it = env.locals->find(part.name);
  if (it == env.locals->end()) {
    std::vector<std::string> names;
    for (const auto& [n, v] : *env.locals) names.push_back(n);
    diags_.report(DiagKind::UnknownName, part.range, part.name, didYouMean(part.name, names));
    return false;
  }
  LocalValue& target = it->second;
  const bool isInput = [&] {
    for (const auto& c : fn->def->components) {
      if (c.name == part.name) return c.causality == syntax::Causality::Input;
    }
    return false;
  }();
  if (isInput) {
    diags_.report(DiagKind::NotAForceInput, s.lhs->range, part.name, "an input of the function");
    return false;
  }
  std::vector<int> idx;
  if (part.subscripts.size() > target.shape.size()) {
    diags_.report(DiagKind::SubscriptCount, part.range,
                  part.name, countOf(target.shape.size(), "dimension"), countOf(part.subscripts.size(), "subscript"));
    return false;
  }
  for (std::size_t k = 0; k < part.subscripts.size(); ++k) {
    std::optional<long> v = evalInteger(*part.subscripts[k], env);
    if (!v) return false;
    if (*v < 1 || *v > target.shape[k]) {
      diags_.report(DiagKind::IndexOutOfRange, part.subscripts[k]->range,
                    *v, k + 1, part.name, target.shape[k]);
      return false;
    }
    idx.push_back(static_cast<int>(*v - 1));
  }
  const Typed rhs = translate(*s.rhs, env);
  if (!rhs.ok) return false;
  const std::vector<int> rest(target.shape.begin() + static_cast<long>(idx.size()), target.shape.end());
  if (rhs.shape != rest) {
    diags_.report(DiagKind::ShapeMismatch, s.rhs->range, shapeString(rhs.shape), part.name, shapeString(rest));
    return false;
  }
  if (!(rhs.type == target.type || (target.type == ValueType::Real && rhs.type == ValueType::Integer))) {
    diags_.report(DiagKind::TypeMismatch, s.rhs->range, std::string("a ") + valueTypeName(rhs.type), part.name, valueTypeName(target.type));
    return false;
  }
  if (target.unit.known() && rhs.unit.certain() && !target.unit.sameAs(rhs.unit)) {
    auto& d = diags_.report(DiagKind::UnitMismatch, s.rhs->range, rhs.unit.str(), part.name, target.unit.str());
    noteUnitsRead(d, *s.rhs, env);
  }
  if (!target.unit.known()) target.unit = rhs.unit;
  std::size_t offset = 0, stride = count(rest);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    std::size_t below = 1;
    for (std::size_t d = k + 1; d < target.shape.size(); ++d) below *= static_cast<std::size_t>(target.shape[d]);
    offset += static_cast<std::size_t>(idx[k]) * below;
  }
  const auto elems = scalarElements(rhs.e, rhs.shape);
  for (std::size_t k = 0; k < stride; ++k) target.elems[offset + k] = elems[k];
  return true;
}

Typed Flattener::readLocal(const syntax::Expr& e, LocalValue& local, const Env& env) {
  Typed t;
  const syntax::NamePart& part = e.name.parts[0];
  if (part.subscripts.size() > local.shape.size()) {
    diags_.report(DiagKind::SubscriptCount, part.range,
                  part.name, countOf(local.shape.size(), "dimension"), countOf(part.subscripts.size(), "subscript"));
    return t;
  }
  std::size_t offset = 0;
  for (std::size_t k = 0; k < part.subscripts.size(); ++k) {
    std::optional<long> v = evalInteger(*part.subscripts[k], env);
    if (!v) return t;
    if (*v < 1 || *v > local.shape[k]) {
      diags_.report(DiagKind::IndexOutOfRange, part.subscripts[k]->range,
                    *v, k + 1, part.name, local.shape[k]);
      return t;
    }
    std::size_t below = 1;
    for (std::size_t d = k + 1; d < local.shape.size(); ++d) below *= static_cast<std::size_t>(local.shape[d]);
    offset += static_cast<std::size_t>(*v - 1) * below;
  }
  const std::vector<int> rest(local.shape.begin() + static_cast<long>(part.subscripts.size()), local.shape.end());
  const std::size_t n = count(rest);
  std::vector<FlatExprPtr> elems(local.elems.begin() + static_cast<long>(offset),
                                 local.elems.begin() + static_cast<long>(offset + n));
  for (const auto& el : elems) {
    if (!el) {
      diags_.report(DiagKind::EvaluationFailed, e.range, "`" + part.name + "` is used before it is assigned");
      return t;
    }
  }
  t.e = assemble(*this, elems, 0, rest, 0, e.range);
  t.type = local.type;
  t.shape = rest;
  t.unit = local.unit;
  t.ok = true;
  return t;
}

}  // namespace capstan::sema
