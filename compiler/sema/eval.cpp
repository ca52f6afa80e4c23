// Evaluation of FlatExprs at compile time (parameter values, array sizes,
// subscripts, for ranges) and constant folding while translating.
#include <algorithm>
#include <cmath>

#include "sema/instance.hpp"

namespace capstan::sema {

using syntax::DiagKind;
using syntax::Op;

namespace {

bool isBuiltinName(const std::string& f) {
  static const char* const names[] = {"sin",   "cos",   "tan",  "asin",  "acos",     "atan",      "sqrt",
                                      "exp",   "log",   "abs",  "sign",  "log10",    "sinh",      "cosh",
                                      "tanh",  "atan2", "min",  "max",   "cross",    "norm",      "normalize",
                                      "transpose", "diagonal", "sum", "skew"};
  for (const char* n : names) {
    if (f == n) return true;
  }
  return false;
}

Value numeric(std::vector<int> shape, std::vector<double> numbers, ValueType t = ValueType::Real) {
  Value v;
  v.type = t;
  v.shape = std::move(shape);
  v.numbers = std::move(numbers);
  return v;
}

}  // namespace

FlatExprPtr Flattener::fold(FlatExprPtr e) {
  if (e->kind == FlatExprKind::Constant || e->kind == FlatExprKind::Variable || e->kind == FlatExprKind::Time) return e;
  if (e->kind == FlatExprKind::Call && !isBuiltinName(e->function)) return e;
  if (e->args.empty() && e->kind != FlatExprKind::Array) return e;
  for (const auto& a : e->args) {
    if (a->kind != FlatExprKind::Constant) return e;
  }
  quiet_ = true;
  std::optional<Value> v = evaluate(*e, e->range);
  quiet_ = false;
  if (!v) return e;
  return makeConstant(std::move(*v), e->range);
}

std::optional<Value> Flattener::evaluate(const FlatExpr& e, SourceRange at) {
  auto fail = [&](const std::string& message) -> std::optional<Value> {
    if (!quiet_) diags_.report(DiagKind::EvaluationFailed, e.range.valid() ? e.range : at, {message});
    return std::nullopt;
  };
  switch (e.kind) {
    case FlatExprKind::Constant: return e.value;
    case FlatExprKind::Time:
      if (!quiet_) diags_.report(DiagKind::NotEvaluable, e.range, {"time", "time-varying", "a value needed at compile time"});
      return std::nullopt;
    case FlatExprKind::Variable: {
      if (quiet_) return std::nullopt;
      const FlatVariable& fv = out_.variables[static_cast<std::size_t>(e.variable)];
      if (fv.kind != VarKind::Parameter && fv.kind != VarKind::Constant) {
        diags_.report(DiagKind::NotEvaluable, e.range,
                      {fv.path, fv.kind == VarKind::Input ? "an input" : "time-varying", "a value needed at compile time"});
        return std::nullopt;
      }
      const Value* v = ensureValue(e.variable, e.range);
      if (!v) return std::nullopt;
      if (e.element < 0) return *v;
      Value s;
      s.type = v->type;
      if (!v->numbers.empty()) s.numbers = {v->numbers.at(static_cast<std::size_t>(e.element))};
      if (!v->strings.empty()) s.strings = {v->strings.at(static_cast<std::size_t>(e.element))};
      return s;
    }
    case FlatExprKind::Index: {
      std::optional<Value> a = evaluate(*e.args[0], at);
      if (!a) return std::nullopt;
      std::size_t offset = 0;
      std::vector<int> rest(a->shape.begin() + static_cast<long>(e.indices.size()), a->shape.end());
      std::size_t n = 1;
      for (int d : rest) n *= static_cast<std::size_t>(d);
      for (std::size_t k = 0; k < e.indices.size(); ++k) {
        std::size_t below = 1;
        for (std::size_t d = k + 1; d < a->shape.size(); ++d) below *= static_cast<std::size_t>(a->shape[d]);
        offset += static_cast<std::size_t>(e.indices[k]) * below;
      }
      Value r;
      r.type = a->type;
      r.shape = rest;
      if (!a->numbers.empty()) r.numbers.assign(a->numbers.begin() + static_cast<long>(offset), a->numbers.begin() + static_cast<long>(offset + n));
      if (!a->strings.empty()) r.strings.assign(a->strings.begin() + static_cast<long>(offset), a->strings.begin() + static_cast<long>(offset + n));
      return r;
    }
    case FlatExprKind::Array: {
      Value r;
      r.shape = {static_cast<int>(e.args.size())};
      r.type = ValueType::Integer;
      bool first = true;
      for (const auto& a : e.args) {
        std::optional<Value> v = evaluate(*a, at);
        if (!v) return std::nullopt;
        if (first) {
          r.shape.insert(r.shape.end(), v->shape.begin(), v->shape.end());
          r.type = v->type;
          first = false;
        } else if (v->type != r.type) {
          r.type = ValueType::Real;
        }
        r.numbers.insert(r.numbers.end(), v->numbers.begin(), v->numbers.end());
        r.strings.insert(r.strings.end(), v->strings.begin(), v->strings.end());
      }
      if (e.args.empty()) r.type = ValueType::Real;
      return r;
    }
    case FlatExprKind::If: {
      std::optional<Value> c = evaluate(*e.args[0], at);
      if (!c) return std::nullopt;
      return evaluate(*e.args[c->scalar() != 0 ? 1 : 2], at);
    }
    case FlatExprKind::Unary: {
      std::optional<Value> a = evaluate(*e.args[0], at);
      if (!a) return std::nullopt;
      for (double& x : a->numbers) {
        if (e.op == Op::Neg) x = -x;
        else if (e.op == Op::Not) x = x != 0 ? 0 : 1;
      }
      return a;
    }
    case FlatExprKind::Binary: {
      std::optional<Value> a = evaluate(*e.args[0], at);
      if (!a) return std::nullopt;
      std::optional<Value> b = evaluate(*e.args[1], at);
      if (!b) return std::nullopt;
      const bool ints = a->type == ValueType::Integer && b->type == ValueType::Integer;
      if (e.op == Op::Eq || e.op == Op::Ne) {
        if (a->type == ValueType::String) {
          const bool eq = a->strings == b->strings;
          return numeric({}, {(e.op == Op::Eq) == eq ? 1.0 : 0.0}, ValueType::Boolean);
        }
      }
      const Op op = e.op;
      if (op == Op::Mul && !a->shape.empty() && !b->shape.empty()) {
        // Matrix products: [n]*[n] dot, [m,n]*[n], [n]*[n,p], [m,n]*[n,p].
        const int m = a->shape.size() == 2 ? a->shape[0] : 1;
        const int n = a->shape.back();
        const int p = b->shape.size() == 2 ? b->shape[1] : 1;
        std::vector<double> r(static_cast<std::size_t>(m * p), 0.0);
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < p; ++j) {
            double s = 0;
            for (int k = 0; k < n; ++k) s += a->numbers[static_cast<std::size_t>(i * n + k)] * b->numbers[static_cast<std::size_t>(k * p + j)];
            r[static_cast<std::size_t>(i * p + j)] = s;
          }
        }
        return numeric(e.shape, std::move(r), ints ? ValueType::Integer : ValueType::Real);
      }
      const std::size_t na = a->numbers.size(), nb = b->numbers.size();
      const std::size_t n = std::max(na, nb);
      std::vector<double> r(n);
      ValueType type = ints ? ValueType::Integer : ValueType::Real;
      for (std::size_t k = 0; k < n; ++k) {
        const double x = a->numbers[na == 1 ? 0 : k], y = b->numbers[nb == 1 ? 0 : k];
        double z = 0;
        switch (op) {
          case Op::Add: case Op::ElemAdd: z = x + y; break;
          case Op::Sub: case Op::ElemSub: z = x - y; break;
          case Op::Mul: case Op::ElemMul: z = x * y; break;
          case Op::Div: case Op::ElemDiv:
            if (y == 0) return fail("division by zero");
            z = x / y;
            type = ValueType::Real;
            break;
          case Op::Pow: case Op::ElemPow:
            z = std::pow(x, y);
            if (!std::isfinite(z)) return fail(formatNumber(x) + " ^ " + formatNumber(y) + " is not a finite number");
            type = ValueType::Real;
            break;
          case Op::Eq: z = x == y; type = ValueType::Boolean; break;
          case Op::Ne: z = x != y; type = ValueType::Boolean; break;
          case Op::Lt: z = x < y; type = ValueType::Boolean; break;
          case Op::Le: z = x <= y; type = ValueType::Boolean; break;
          case Op::Gt: z = x > y; type = ValueType::Boolean; break;
          case Op::Ge: z = x >= y; type = ValueType::Boolean; break;
          case Op::And: z = (x != 0) && (y != 0); type = ValueType::Boolean; break;
          case Op::Or: z = (x != 0) || (y != 0); type = ValueType::Boolean; break;
          default: return fail("unsupported operator");
        }
        r[k] = z;
      }
      return numeric(na >= nb ? a->shape : b->shape, std::move(r), type);
    }
    case FlatExprKind::Call: {
      if (!isBuiltinName(e.function)) {
        if (!quiet_) diags_.report(DiagKind::ExternalCallAtCompileTime, e.range, {e.function});
        return std::nullopt;
      }
      std::vector<Value> a;
      for (const auto& arg : e.args) {
        std::optional<Value> v = evaluate(*arg, at);
        if (!v) return std::nullopt;
        a.push_back(std::move(*v));
      }
      const std::string& f = e.function;
      auto unary = [&](double (*fn)(double), bool (*domain)(double)) -> std::optional<Value> {
        Value r = a[0];
        r.type = ValueType::Real;
        for (double& x : r.numbers) {
          if (domain && !domain(x)) return fail("`" + f + "` of " + formatNumber(x) + " is undefined");
          x = fn(x);
        }
        return r;
      };
      if (f == "sin") return unary([](double x) { return std::sin(x); }, nullptr);
      if (f == "cos") return unary([](double x) { return std::cos(x); }, nullptr);
      if (f == "tan") return unary([](double x) { return std::tan(x); }, nullptr);
      if (f == "asin") return unary([](double x) { return std::asin(x); }, [](double x) { return x >= -1 && x <= 1; });
      if (f == "acos") return unary([](double x) { return std::acos(x); }, [](double x) { return x >= -1 && x <= 1; });
      if (f == "atan") return unary([](double x) { return std::atan(x); }, nullptr);
      if (f == "sinh") return unary([](double x) { return std::sinh(x); }, nullptr);
      if (f == "cosh") return unary([](double x) { return std::cosh(x); }, nullptr);
      if (f == "tanh") return unary([](double x) { return std::tanh(x); }, nullptr);
      if (f == "sqrt") return unary([](double x) { return std::sqrt(x); }, [](double x) { return x >= 0; });
      if (f == "exp") return unary([](double x) { return std::exp(x); }, nullptr);
      if (f == "log") return unary([](double x) { return std::log(x); }, [](double x) { return x > 0; });
      if (f == "log10") return unary([](double x) { return std::log10(x); }, [](double x) { return x > 0; });
      if (f == "abs") {
        Value r = a[0];
        for (double& x : r.numbers) x = std::abs(x);
        return r;
      }
      if (f == "sign") {
        Value r = a[0];
        r.type = ValueType::Integer;
        for (double& x : r.numbers) x = x > 0 ? 1 : x < 0 ? -1 : 0;
        return r;
      }
      if (f == "atan2") return numeric({}, {std::atan2(a[0].scalar(), a[1].scalar())});
      if (f == "min" || f == "max") {
        std::vector<double> xs;
        for (const Value& v : a) xs.insert(xs.end(), v.numbers.begin(), v.numbers.end());
        if (xs.empty()) return fail("`" + f + "` of an empty array");
        const double r = f == "min" ? *std::min_element(xs.begin(), xs.end()) : *std::max_element(xs.begin(), xs.end());
        const bool ints = std::all_of(a.begin(), a.end(), [](const Value& v) { return v.type == ValueType::Integer; });
        return numeric({}, {r}, ints ? ValueType::Integer : ValueType::Real);
      }
      if (f == "sum") {
        double s = 0;
        for (double x : a[0].numbers) s += x;
        return numeric({}, {s}, a[0].type);
      }
      if (f == "cross") {
        const auto& x = a[0].numbers;
        const auto& y = a[1].numbers;
        return numeric({3}, {x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]});
      }
      if (f == "norm" || f == "normalize") {
        double s = 0;
        for (double x : a[0].numbers) s += x * x;
        s = std::sqrt(s);
        if (f == "norm") return numeric({}, {s});
        if (s == 0) return fail("`normalize` of a zero vector");
        Value r = a[0];
        r.type = ValueType::Real;
        for (double& x : r.numbers) x /= s;
        return r;
      }
      if (f == "transpose") {
        const int m = a[0].shape[0], n = a[0].shape[1];
        std::vector<double> r(static_cast<std::size_t>(m * n));
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < n; ++j) r[static_cast<std::size_t>(j * m + i)] = a[0].numbers[static_cast<std::size_t>(i * n + j)];
        }
        return numeric({n, m}, std::move(r), a[0].type);
      }
      if (f == "diagonal") {
        const int n = a[0].shape[0];
        std::vector<double> r(static_cast<std::size_t>(n * n), 0.0);
        for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i * n + i)] = a[0].numbers[static_cast<std::size_t>(i)];
        return numeric({n, n}, std::move(r), a[0].type);
      }
      if (f == "skew") {
        const auto& x = a[0].numbers;
        return numeric({3, 3}, {0, -x[2], x[1], x[2], 0, -x[0], -x[1], x[0], 0});
      }
      return fail("cannot evaluate `" + f + "`");
    }
  }
  return std::nullopt;
}

}  // namespace capstan::sema
