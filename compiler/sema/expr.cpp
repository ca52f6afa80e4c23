// Expressions: name resolution through the instance tree, translation of
// syntax expressions to FlatExprs with their type, shape and unit, and the
// checks that go with them (operand types and shapes, units, what a binding
// may read). Function calls are in functions.cpp.
#include <algorithm>
#include <cmath>

#include "sema/instance.hpp"

namespace capstan::sema {

using syntax::DiagKind;
using syntax::ExprKind;
using syntax::Op;

std::string shapeString(const std::vector<int>& shape) {
  if (shape.empty()) return "scalar";
  std::string s = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? "," : "") + (shape[k] < 0 ? std::string(":") : std::to_string(shape[k]));
  return s + "]";
}

std::string typeString(ValueType t, const std::vector<int>& shape) {
  return std::string(valueTypeName(t)) + (shape.empty() ? "" : shapeString(shape));
}

Value scalarValue(double x, ValueType t) {
  Value v;
  v.type = t;
  v.numbers = {x};
  return v;
}

FlatExprPtr makeConstant(Value v, SourceRange r) {
  auto e = std::make_shared<FlatExpr>();
  e->kind = FlatExprKind::Constant;
  e->range = r;
  e->shape = v.shape;
  e->value = std::move(v);
  return e;
}

std::string formatValue(const Value& v) {
  if (v.isScalar()) {
    if (v.type == ValueType::String || v.type == ValueType::Reference) return v.strings.empty() ? "" : v.strings[0];
    if (v.type == ValueType::Boolean) return v.numbers.at(0) != 0 ? "true" : "false";
    return formatNumber(v.numbers.at(0));
  }
  std::string s = "{";
  for (std::size_t k = 0; k < v.size(); ++k) {
    s += k ? ", " : "";
    s += (v.type == ValueType::String || v.type == ValueType::Reference) ? v.strings[k] : formatNumber(v.numbers[k]);
  }
  return s + "}";
}

std::string countOf(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

namespace {

const char* purposeText(Purpose p) {
  switch (p) {
    case Purpose::Binding: return "a parameter binding";
    case Purpose::Structural: return "an array size, subscript or `for` range";
    case Purpose::Dynamic: return "an expression";
  }
  return "an expression";
}

const char* kindText(VarKind k) {
  switch (k) {
    case VarKind::Parameter: return "a parameter";
    case VarKind::Constant: return "a constant";
    case VarKind::Input: return "an input";
    case VarKind::Output: return "an output";
    case VarKind::Continuous: return "time-varying";
  }
  return "a variable";
}

bool isNumeric(ValueType t) { return t == ValueType::Real || t == ValueType::Integer; }

std::shared_ptr<FlatExpr> makeNode(FlatExprKind kind, SourceRange r, std::vector<FlatExprPtr> args, std::vector<int> shape) {
  auto e = std::make_shared<FlatExpr>();
  e->kind = kind;
  e->range = r;
  e->args = std::move(args);
  e->shape = std::move(shape);
  return e;
}

std::string refText(const syntax::Expr& e) { return e.name.dotted(); }

constexpr const char* kSlicesUnsupported =
    "slices (`v[2:3]`, `v[end]`, `v[:]`) are not supported; subscript one element at a time";

}  // namespace

std::optional<long> Flattener::evalInteger(const syntax::Expr& e, const Env& env) {
  if (e.kind == ExprKind::Range) {
    // `v[2:3]`: a slice, like `v[:]` and `v[end]` (reported by translate()).
    diags_.report(DiagKind::EvaluationFailed, e.range, kSlicesUnsupported);
    return std::nullopt;
  }
  Env s = env;
  s.purpose = Purpose::Structural;
  const Typed t = translate(e, s);
  if (!t.ok) return std::nullopt;
  if (t.type != ValueType::Integer || !t.shape.empty()) {
    diags_.report(DiagKind::TypeMismatch, e.range,
                  std::string("a ") + typeString(t.type, t.shape), "array size or subscript", "Integer");
    return std::nullopt;
  }
  std::optional<Value> v = evaluate(*t.e, e.range);
  if (!v) return std::nullopt;
  return static_cast<long>(v->scalar());
}

std::optional<int> Flattener::checkedDimension(const syntax::Expr& d, const Env& env) {
  std::optional<long> n = evalInteger(d, env);
  if (!n) return std::nullopt;
  if (*n < 0 || *n > kMaxArraySize) {
    diags_.report(DiagKind::InvalidArraySize, d.range, *n);
    return std::nullopt;
  }
  return static_cast<int>(*n);
}

Flattener::Resolved Flattener::resolve(const syntax::Expr& ref, const Env& env, bool quiet) {
  Resolved r;
  const auto& parts = ref.name.parts;
  if (parts.empty() || !env.inst) return r;
  if (ref.name.global) {
    // `.a.b` names a top-level class, never a component of this model; callers
    // reach here only when `a` is also a component name, so say so rather than
    // dropping the reference (e.g. a whole `connect`) silently.
    if (!quiet) {
      diags_.report(DiagKind::UnsupportedSyntax, ref.range,
                    "component references with a leading `.` (global names denote classes; write `" +
                     ref.name.dotted().substr(1) + "`)");
    }
    return r;
  }
  Instance* cur = env.inst;
  Node* n = node(*cur, parts[0].name);
  if (!n) return r;
  std::string path = cur->child(parts[0].name);
  auto subscripts = [&](const syntax::NamePart& p, const std::vector<int>& shape, std::vector<int>& out) -> bool {
    if (p.subscripts.size() > shape.size()) {
      if (!quiet) {
        diags_.report(DiagKind::SubscriptCount, p.range,
                      path, countOf(shape.size(), "dimension"), countOf(p.subscripts.size(), "subscript"));
      }
      return false;
    }
    for (std::size_t k = 0; k < p.subscripts.size(); ++k) {
      std::optional<long> v = evalInteger(*p.subscripts[k], env);
      if (!v) return false;
      if (*v < 1 || *v > shape[k]) {
        if (!quiet) {
          diags_.report(DiagKind::IndexOutOfRange, p.subscripts[k]->range,
                        *v, k + 1, path, shape[k]);
        }
        return false;
      }
      out.push_back(static_cast<int>(*v - 1));
    }
    return true;
  };
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const syntax::NamePart& p = parts[i];
    const bool last = i + 1 == parts.size();
    switch (n->kind) {
      case NodeKind::Pending:
      case NodeKind::Completing:
        if (!quiet) diags_.report(DiagKind::CyclicBinding, p.range, path);
        return r;
      case NodeKind::Invalid: return r;
      case NodeKind::Variable: {
        const FlatVariable& v = out_.variables[static_cast<std::size_t>(n->var)];
        std::vector<int> idx;
        if (!subscripts(p, v.shape, idx)) return r;
        if (!last) {
          if (!quiet) diags_.report(DiagKind::UnknownMember, parts[i + 1].range, path, parts[i + 1].name, "");
          return r;
        }
        r.kind = Resolved::Kind::Variable;
        r.var = n->var;
        r.node = n;
        r.inst = cur;
        r.indices = std::move(idx);
        return r;
      }
      case NodeKind::ForceInput: {
        std::vector<int> idx;
        if (!subscripts(p, n->inputShape, idx)) return r;
        if (!last) {
          if (!quiet) diags_.report(DiagKind::UnknownMember, parts[i + 1].range, path, parts[i + 1].name, "");
          return r;
        }
        r.kind = Resolved::Kind::ForceInput;
        r.node = n;
        r.inst = cur;
        r.indices = std::move(idx);
        return r;
      }
      case NodeKind::Connector: {
        if (!p.subscripts.empty()) {
          if (!quiet) diags_.report(DiagKind::SubscriptCount, p.range, path, countOf(0, "dimension"), countOf(p.subscripts.size(), "subscript"));
          return r;
        }
        if (last) {
          r.kind = Resolved::Kind::Connector;
          r.connector = n->connector;
          r.inst = cur;
          r.node = n;
          return r;
        }
        Instance* q = connectorQuantities(n->connector);
        if (!q) {
          if (!quiet) {
            diags_.report(DiagKind::EvaluationFailed, p.range,
                          "connector `" + path + "` is not connected to the frame of any component");
          }
          return r;
        }
        Node* next = node(*q, parts[i + 1].name);
        if (!next) {
          if (!quiet) {
            std::vector<std::string> names;
            for (const Node& m : q->nodes) names.push_back(m.name);
            diags_.report(DiagKind::UnknownMember, parts[i + 1].range,
                          path, parts[i + 1].name, didYouMean(parts[i + 1].name, names));
          }
          return r;
        }
        cur = q;
        n = next;
        path += "." + parts[i + 1].name;
        continue;
      }
      case NodeKind::Component: {
        Instance* elem = nullptr;
        if (p.subscripts.empty() && !n->dims.empty()) {
          if (!last) {
            if (!quiet) {
              diags_.report(DiagKind::SubscriptCount, p.range,
                            path, countOf(n->dims.size(), "dimension"), countOf(0, "subscript"));
            }
            return r;
          }
          r.kind = Resolved::Kind::Component;
          r.componentDims = n->dims;
          for (auto& e : n->elems) r.components.push_back(e.get());
          r.node = n;
          return r;
        }
        std::vector<int> idx;
        if (p.subscripts.size() != n->dims.size()) {
          if (!quiet) {
            diags_.report(DiagKind::SubscriptCount, p.range,
                          path, countOf(n->dims.size(), "dimension"), countOf(p.subscripts.size(), "subscript"));
          }
          return r;
        }
        if (!subscripts(p, n->dims, idx)) return r;
        std::size_t flat = 0;
        for (std::size_t k = 0; k < idx.size(); ++k) flat = flat * static_cast<std::size_t>(n->dims[k]) + static_cast<std::size_t>(idx[k]);
        if (flat >= n->elems.size()) return r;
        elem = n->elems[flat].get();
        if (last) {
          r.kind = Resolved::Kind::Component;
          r.inst = elem;
          r.node = n;
          r.components = {elem};
          return r;
        }
        Node* next = node(*elem, parts[i + 1].name);
        if (!next) {
          if (!quiet) {
            std::vector<std::string> names;
            for (const Node& m : elem->nodes) {
              if (!m.decl->isProtected) names.push_back(m.name);
            }
            diags_.report(DiagKind::UnknownMember, parts[i + 1].range,
                          elem->path, parts[i + 1].name, didYouMean(parts[i + 1].name, names));
          }
          return r;
        }
        cur = elem;
        n = next;
        path = elem->child(parts[i + 1].name);
        continue;
      }
    }
  }
  return r;
}

// Every recursion of translation passes here: operands, subscripts,
// arguments, inlined function bodies and the bindings of the parameters an
// expression reads before they have a value. The parser bounds one
// expression's depth; this bounds their sum, which the passes after
// translation (units, evaluation, code generation) then walk recursively.
Typed Flattener::translate(const syntax::Expr& e, const Env& env) {
  if (translateDepth_ >= kMaxTranslateDepth) {
    diags_.report(DiagKind::NestingTooDeep, e.range, kMaxTranslateDepth);
    return {};
  }
  ++translateDepth_;
  Typed t = translateNode(e, env);
  --translateDepth_;
  return t;
}

Typed Flattener::translateNode(const syntax::Expr& e, const Env& env) {
  Typed t;
  switch (e.kind) {
    case ExprKind::Number: {
      t.type = e.isInteger ? ValueType::Integer : ValueType::Real;
      t.e = makeConstant(scalarValue(e.number, t.type), e.range);
      t.unit = Unit::literal();
      t.ok = true;
      return t;
    }
    case ExprKind::Boolean: {
      t.type = ValueType::Boolean;
      t.e = makeConstant(scalarValue(e.boolean ? 1 : 0, t.type), e.range);
      t.unit = Unit::literal();
      t.ok = true;
      return t;
    }
    case ExprKind::String: {
      Value v;
      v.type = ValueType::String;
      v.strings = {e.text};
      t.type = ValueType::String;
      t.e = makeConstant(std::move(v), e.range);
      t.ok = true;
      return t;
    }
    case ExprKind::Ref: return translateRef(e, env);
    case ExprKind::Unary: {
      Typed a = translate(*e.args[0], env);
      if (!a.ok) return t;
      if (e.op == Op::Not) {
        if (a.type != ValueType::Boolean) {
          diags_.report(DiagKind::InvalidOperands, e.range, "not", typeString(a.type, a.shape), "nothing");
          return t;
        }
      } else if (!isNumeric(a.type)) {
        diags_.report(DiagKind::InvalidOperands, e.range, syntax::opSpelling(e.op), typeString(a.type, a.shape), "nothing");
        return t;
      }
      if (e.op == Op::Plus) return a;
      auto n = makeNode(FlatExprKind::Unary, e.range, {a.e}, a.shape);
      n->op = e.op == Op::Not ? FlatOp::Not : FlatOp::Neg;
      a.e = fold(n);
      return a;
    }
    case ExprKind::Binary: return translateBinary(e, env);
    case ExprKind::If: {
      // args = {c1, v1, c2, v2, ..., else}: fold from the back.
      if (e.args.empty()) return t;
      Typed acc = translate(*e.args.back(), env);
      for (std::size_t k = e.args.size() - 1; k >= 2; k -= 2) {
        Typed c = translate(*e.args[k - 2], env);
        Typed v = translate(*e.args[k - 1], env);
        if (!c.ok || !v.ok || !acc.ok) return t;
        if (c.type != ValueType::Boolean || !c.shape.empty()) {
          diags_.report(DiagKind::TypeMismatch, e.args[k - 2]->range,
                        std::string("a ") + typeString(c.type, c.shape), "if-condition", "Boolean");
          return t;
        }
        if (v.shape != acc.shape || (v.type != acc.type && !(isNumeric(v.type) && isNumeric(acc.type)))) {
          diags_.report(DiagKind::InvalidOperands, e.range,
                        "if", typeString(v.type, v.shape), typeString(acc.type, acc.shape));
          return t;
        }
        bool unitsOk = true;
        Unit u = unitJoin(v.unit, acc.unit, unitsOk);
        if (!unitsOk) {
          diags_.report(DiagKind::IncompatibleUnits, e.range, "if", v.unit.str(), acc.unit.str());
        }
        Typed r;
        r.type = v.type == acc.type ? v.type : ValueType::Real;
        r.shape = v.shape;
        r.unit = u;
        if (c.e->kind == FlatExprKind::Constant) {
          r.e = c.e->value.numbers.at(0) != 0 ? v.e : acc.e;
        } else {
          r.e = makeNode(FlatExprKind::If, e.range, {c.e, v.e, acc.e}, v.shape);
        }
        r.ok = true;
        acc = std::move(r);
        if (k < 2) break;
      }
      return acc;
    }
    case ExprKind::Call: return translateCall(e, env);
    case ExprKind::Array: {
      std::vector<FlatExprPtr> args;
      std::vector<int> elemShape;
      ValueType type = ValueType::Integer;
      Unit unit = Unit::literal();
      bool first = true;
      for (const auto& a : e.args) {
        Typed x = translate(*a, env);
        if (!x.ok) return t;
        if (first) {
          elemShape = x.shape;
          type = x.type;
        } else if (x.shape != elemShape) {
          diags_.report(DiagKind::ShapeMismatch, a->range, shapeString(x.shape), "array element", shapeString(elemShape));
          return t;
        } else if (x.type != type) {
          if (isNumeric(x.type) && isNumeric(type)) {
            type = ValueType::Real;
          } else {
            diags_.report(DiagKind::InvalidOperands, a->range, "{}", typeString(type, {}), typeString(x.type, {}));
            return t;
          }
        }
        bool ok = true;
        const Unit joined = unitJoin(unit, x.unit, ok);
        if (!ok) diags_.report(DiagKind::IncompatibleUnits, a->range, "{}", unit.str(), x.unit.str());
        unit = joined;
        first = false;
        args.push_back(x.e);
      }
      std::vector<int> shape{static_cast<int>(args.size())};
      shape.insert(shape.end(), elemShape.begin(), elemShape.end());
      t.e = fold(makeNode(FlatExprKind::Array, e.range, std::move(args), shape));
      t.type = type;
      t.shape = std::move(shape);
      t.unit = unit;
      t.ok = true;
      return t;
    }
    case ExprKind::Range: {
      std::vector<long> bounds;
      for (const auto& a : e.args) {
        std::optional<long> v = evalInteger(*a, env);
        if (!v) return t;
        bounds.push_back(*v);
      }
      const long start = bounds.front(), stop = bounds.back();
      const long step = bounds.size() == 3 ? bounds[1] : 1;
      Value v;
      v.type = ValueType::Integer;
      if (step == 0) {
        diags_.report(DiagKind::EvaluationFailed, e.range, "range step is zero");
        return t;
      }
      // The element count, computed without overflow, must be a valid array size.
      const long double count =
          (step > 0 ? stop < start : stop > start)
              ? 0.0L
              : std::floor((static_cast<long double>(stop) - start) / step) + 1.0L;
      if (count > static_cast<long double>(kMaxArraySize)) {
        diags_.report(DiagKind::InvalidArraySize, e.range, static_cast<long long>(count));
        return t;
      }
      const long n = static_cast<long>(count);
      v.numbers.reserve(static_cast<std::size_t>(n));
      for (long k = 0; k < n; ++k) v.numbers.push_back(static_cast<double>(start) + static_cast<double>(k) * step);
      v.shape = {static_cast<int>(v.numbers.size())};
      t.shape = v.shape;
      t.type = ValueType::Integer;
      t.e = makeConstant(std::move(v), e.range);
      t.unit = Unit::literal();
      t.ok = true;
      return t;
    }
    case ExprKind::End:
    case ExprKind::Colon:
      diags_.report(DiagKind::EvaluationFailed, e.range, kSlicesUnsupported);
      return t;
  }
  return t;
}

Typed Flattener::translateRef(const syntax::Expr& e, const Env& env) {
  Typed t;
  const auto& parts = e.name.parts;
  if (parts.empty()) return t;
  const std::string& first = parts[0].name;
  // Iterators and function locals shadow elements.
  if (parts.size() == 1 && !e.name.global) {
    if (env.iterators) {
      for (auto it = env.iterators->rbegin(); it != env.iterators->rend(); ++it) {
        if (it->first != first) continue;
        if (!parts[0].subscripts.empty()) {
          diags_.report(DiagKind::SubscriptCount, parts[0].range, first, countOf(0, "dimension"), countOf(parts[0].subscripts.size(), "subscript"));
          return t;
        }
        t.type = ValueType::Integer;
        t.e = makeConstant(scalarValue(it->second, ValueType::Integer), e.range);
        t.unit = Unit::literal();
        t.ok = true;
        return t;
      }
    }
    if (env.locals) {
      auto it = env.locals->find(first);
      if (it != env.locals->end()) return readLocal(e, it->second, env);
    }
  }
  if (env.inst && !e.name.global && env.inst->byName.count(first)) {
    Resolved r = resolve(e, env);
    switch (r.kind) {
      case Resolved::Kind::None: return t;
      case Resolved::Kind::Variable: return variableRef(e, r, env);
      case Resolved::Kind::Component:
      case Resolved::Kind::Connector:
        diags_.report(DiagKind::NotEvaluable, e.range,
                      refText(e), r.kind == Resolved::Kind::Connector ? "a connector" : "a component", purposeText(env.purpose));
        return t;
      case Resolved::Kind::ForceInput:
        diags_.report(DiagKind::ForceInputNotReadable, e.range, refText(e));
        return t;
      default: return t;
    }
  }
  if (parts.size() == 1 && parts[0].subscripts.empty()) {
    if (first == "time") {
      if (env.purpose != Purpose::Dynamic) {
        diags_.report(DiagKind::NotEvaluable, e.range, "time", "time-varying", purposeText(env.purpose));
        return t;
      }
      t.e = makeNode(FlatExprKind::Time, e.range, {}, {});
      t.type = ValueType::Real;
      Unit s;
      std::string err;
      t.unit = *parseUnit("s", err);
      t.ok = true;
      return t;
    }
    if (first == "pi") {
      t.e = makeConstant(scalarValue(M_PI), e.range);
      t.unit = Unit::literal();
      t.ok = true;
      return t;
    }
  }
  // Nothing by that name.
  std::vector<std::string> names;
  if (env.inst) {
    for (const Node& n : env.inst->nodes) names.push_back(n.name);
  }
  if (env.iterators) {
    for (const auto& [n, v] : *env.iterators) names.push_back(n);
  }
  if (env.locals) {
    for (const auto& [n, v] : *env.locals) names.push_back(n);
  }
  names.push_back("time");
  names.push_back("pi");
  diags_.report(DiagKind::UnknownName, parts[0].range, first, didYouMean(first, names));
  return t;
}

Typed Flattener::variableRef(const syntax::Expr& e, const Resolved& r, const Env& env) {
  Typed t;
  FlatVariable& v = out_.variables[static_cast<std::size_t>(r.var)];
  const bool timeVarying = v.kind == VarKind::Continuous || v.kind == VarKind::Output || v.kind == VarKind::Input;
  if (timeVarying && env.purpose != Purpose::Dynamic) {
    diags_.report(DiagKind::NotEvaluable, e.range, refText(e), kindText(v.kind), purposeText(env.purpose));
    return t;
  }
  if (v.type == ValueType::Reference && env.purpose != Purpose::Binding) {
    diags_.report(DiagKind::NotEvaluable, e.range, refText(e), "a reference", purposeText(env.purpose));
    return t;
  }
  v.used = true;
  if (env.purpose == Purpose::Structural) v.structural = true;
  std::vector<int> shape = v.shape;
  auto ref = std::make_shared<FlatExpr>();
  ref->kind = FlatExprKind::Variable;
  ref->range = e.range;
  ref->variable = r.var;
  ref->shape = shape;
  FlatExprPtr result = ref;
  if (!r.indices.empty()) {
    if (r.indices.size() == shape.size()) {
      int flat = 0;
      for (std::size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + r.indices[k];
      ref->element = flat;
      ref->shape.clear();
      shape.clear();
    } else {
      shape.erase(shape.begin(), shape.begin() + static_cast<long>(r.indices.size()));
      auto ix = makeNode(FlatExprKind::Index, e.range, {ref}, shape);
      ix->indices = r.indices;
      result = ix;
    }
  }
  t.e = result;
  t.type = v.type;
  t.shape = shape;
  t.unit = info_[static_cast<std::size_t>(r.var)].unit;
  if (!t.unit.known() && v.type == ValueType::Real && v.unit.empty()) t.unit = Unit::unknown();
  t.ok = true;
  return t;
}

namespace {

// The flat operator of a binary syntax operator: element-wise forms merge
// with the plain ones (sema has checked the shapes), `*` keeps its meaning
// of a matrix product when both operands are arrays.
FlatOp flatOp(Op op) {
  switch (op) {
    case Op::Add: case Op::ElemAdd: return FlatOp::Add;
    case Op::Sub: case Op::ElemSub: return FlatOp::Sub;
    case Op::Mul: return FlatOp::Mul;
    case Op::ElemMul: return FlatOp::ElemMul;
    case Op::Div: case Op::ElemDiv: return FlatOp::Div;
    case Op::Pow: case Op::ElemPow: return FlatOp::Pow;
    case Op::Eq: return FlatOp::Eq;
    case Op::Ne: return FlatOp::Ne;
    case Op::Lt: return FlatOp::Lt;
    case Op::Le: return FlatOp::Le;
    case Op::Gt: return FlatOp::Gt;
    case Op::Ge: return FlatOp::Ge;
    case Op::And: return FlatOp::And;
    case Op::Or: return FlatOp::Or;
    case Op::Not: return FlatOp::Not;
    case Op::Neg: case Op::Plus: break;
  }
  return FlatOp::Neg;  // unreachable: unary operators are not binary
}

}  // namespace

Typed Flattener::translateBinary(const syntax::Expr& e, const Env& env) {
  Typed t;
  Typed a = translate(*e.args[0], env);
  Typed b = translate(*e.args[1], env);
  if (!a.ok || !b.ok) return t;
  const char* op = syntax::opSpelling(e.op);
  auto invalid = [&]() {
    diags_.report(DiagKind::InvalidOperands, e.range, op, typeString(a.type, a.shape), typeString(b.type, b.shape));
    return Typed{};
  };
  std::vector<int> shape;
  ValueType type = ValueType::Real;
  Unit unit;
  switch (e.op) {
    case Op::And:
    case Op::Or:
      if (a.type != ValueType::Boolean || b.type != ValueType::Boolean || !a.shape.empty() || !b.shape.empty()) return invalid();
      type = ValueType::Boolean;
      unit = Unit::literal();
      break;
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: {
      if (!a.shape.empty() || !b.shape.empty()) return invalid();
      const bool numeric = isNumeric(a.type) && isNumeric(b.type);
      const bool same = a.type == b.type && (a.type == ValueType::Boolean || a.type == ValueType::String);
      if (!numeric && !(same && (e.op == Op::Eq || e.op == Op::Ne))) return invalid();
      bool ok = true;
      unitJoin(a.unit, b.unit, ok);
      if (!ok) diags_.report(DiagKind::IncompatibleUnits, e.range, op, a.unit.str(), b.unit.str());
      type = ValueType::Boolean;
      unit = Unit::literal();
      break;
    }
    case Op::Add: case Op::Sub: case Op::ElemAdd: case Op::ElemSub: {
      if (!isNumeric(a.type) || !isNumeric(b.type)) return invalid();
      const bool elem = e.op == Op::ElemAdd || e.op == Op::ElemSub;
      if (a.shape == b.shape) shape = a.shape;
      else if (elem && a.shape.empty()) shape = b.shape;
      else if (elem && b.shape.empty()) shape = a.shape;
      else return invalid();
      type = a.type == ValueType::Integer && b.type == ValueType::Integer ? ValueType::Integer : ValueType::Real;
      bool ok = true;
      unit = unitJoin(a.unit, b.unit, ok);
      if (!ok) diags_.report(DiagKind::IncompatibleUnits, e.range, op, a.unit.str(), b.unit.str());
      break;
    }
    case Op::Mul: case Op::ElemMul: {
      if (!isNumeric(a.type) || !isNumeric(b.type)) return invalid();
      if (a.shape.empty()) shape = b.shape;
      else if (b.shape.empty()) shape = a.shape;
      else if (e.op == Op::ElemMul) {
        if (a.shape != b.shape) return invalid();
        shape = a.shape;
      } else if (a.shape.size() == 1 && b.shape.size() == 1 && a.shape[0] == b.shape[0]) {
        shape = {};
      } else if (a.shape.size() == 2 && b.shape.size() == 1 && a.shape[1] == b.shape[0]) {
        shape = {a.shape[0]};
      } else if (a.shape.size() == 1 && b.shape.size() == 2 && a.shape[0] == b.shape[0]) {
        shape = {b.shape[1]};
      } else if (a.shape.size() == 2 && b.shape.size() == 2 && a.shape[1] == b.shape[0]) {
        shape = {a.shape[0], b.shape[1]};
      } else {
        return invalid();
      }
      type = a.type == ValueType::Integer && b.type == ValueType::Integer ? ValueType::Integer : ValueType::Real;
      unit = unitMul(a.unit, b.unit);
      break;
    }
    case Op::Div: case Op::ElemDiv: {
      if (!isNumeric(a.type) || !isNumeric(b.type)) return invalid();
      if (b.shape.empty()) shape = a.shape;
      else if (e.op == Op::ElemDiv && (a.shape == b.shape || a.shape.empty())) shape = b.shape;
      else return invalid();
      type = ValueType::Real;
      unit = unitDiv(a.unit, b.unit);
      break;
    }
    case Op::Pow: case Op::ElemPow: {
      if (!isNumeric(a.type) || !isNumeric(b.type)) return invalid();
      if (e.op == Op::Pow && (!a.shape.empty() || !b.shape.empty())) return invalid();
      if (e.op == Op::ElemPow) {
        if (!b.shape.empty() && a.shape != b.shape) return invalid();
        shape = a.shape;
      }
      type = ValueType::Real;
      if (a.unit.known() && !a.unit.isDimensionless()) {
        if (b.e->kind == FlatExprKind::Constant && b.shape.empty()) unit = unitPow(a.unit, b.e->value.numbers[0]);
        else unit = Unit::unknown();
      } else {
        unit = a.unit.kind == Unit::Kind::Unknown ? Unit::unknown() : a.unit;
      }
      break;
    }
    default: return invalid();
  }
  auto n = makeNode(FlatExprKind::Binary, e.range, {a.e, b.e}, shape);
  n->op = flatOp(e.op);
  t.e = fold(n);
  t.type = type;
  t.shape = std::move(shape);
  t.unit = unit;
  t.ok = true;
  return t;
}

Typed Flattener::referenceValue(const syntax::Expr& e, const Env& env, const std::vector<std::string>& kinds,
                                const std::string& target) {
  Typed t;
  std::string expected;
  if (kinds.empty()) {
    expected = "a component";
  } else if (kinds.size() == 1) {
    expected = "a `" + kinds[0] + "`";
  } else {
    expected = "one of ";
    for (std::size_t k = 0; k < kinds.size(); ++k) expected += (k ? ", `" : "`") + kinds[k] + "`";
  }
  Value v;
  v.type = ValueType::Reference;
  bool ok = true;
  auto one = [&](const syntax::Expr& x) {
    if (x.kind != ExprKind::Ref) {
      diags_.report(DiagKind::ReferenceNotComponent, x.range, "this expression", target, expected);
      ok = false;
      return;
    }
    Resolved r = env.inst && env.inst->byName.count(x.name.parts[0].name) ? resolve(x, env) : Resolved{};
    if (r.kind == Resolved::Kind::None && !(env.inst && env.inst->byName.count(x.name.parts[0].name))) {
      std::vector<std::string> names;
      if (env.inst) {
        for (const Node& n : env.inst->nodes) names.push_back(n.name);
      }
      diags_.report(DiagKind::UnknownName, x.name.parts[0].range,
                    x.name.parts[0].name, didYouMean(x.name.parts[0].name, names));
      ok = false;
      return;
    }
    if (r.kind == Resolved::Kind::None) {
      ok = false;
      return;
    }
    if (r.kind != Resolved::Kind::Component) {
      diags_.report(DiagKind::ReferenceNotComponent, x.range, refText(x), target, expected);
      ok = false;
      return;
    }
    for (Instance* c : r.components) {
      if (c->component < 0 ||
          (!kinds.empty() &&
           std::find(kinds.begin(), kinds.end(), out_.components[static_cast<std::size_t>(c->component)].kind) == kinds.end())) {
        const std::string kind = c->component >= 0 ? out_.components[static_cast<std::size_t>(c->component)].kind
                                                   : c->cls->fullName;
        auto& d = diags_.report(DiagKind::ReferenceWrongKind, x.range, c->path, kind, target, expected);
        if (c->decl) d.note(DiagKind::NoteDeclaredHere, c->decl->nameRange, c->path);
        ok = false;
        return;
      }
      v.strings.push_back(c->path);
    }
    if (r.components.size() != 1 || !r.componentDims.empty()) {
      v.shape.push_back(static_cast<int>(r.components.size()));
    }
  };
  if (e.kind == ExprKind::Array) {
    for (const auto& a : e.args) {
      const std::size_t before = v.strings.size();
      one(*a);
      if (ok && v.strings.size() != before + 1) {
        diags_.report(DiagKind::ShapeMismatch, a->range, "array", target + " element", "scalar");
        ok = false;
      }
      if (!ok) return t;
    }
    v.shape = {static_cast<int>(v.strings.size())};
  } else {
    one(e);
    if (!ok) return t;
  }
  t.type = ValueType::Reference;
  t.shape = v.shape;
  t.e = makeConstant(std::move(v), e.range);
  t.ok = true;
  return t;
}

}  // namespace capstan::sema
