// Evaluation of FlatExprs at compile time (parameter values, array sizes,
// subscripts, for ranges) and constant folding while translating.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "sema/instance.hpp"
#include "syntax/numbers.hpp"

namespace capstan::sema {

using syntax::DiagKind;
using syntax::exactNumber;

namespace {

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
  if (e->kind == FlatExprKind::Call && !e->builtin) return e;
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
    if (quiet_) return std::nullopt;
    auto& d = diags_.report(DiagKind::EvaluationFailed, e.range.valid() ? e.range : at, message);
    // Inside a function's body (`normalize` in Capstan.Frames.axisRotation):
    // also point at the value the user wrote.
    const bool inside = e.range.file == at.file && e.range.begin >= at.begin && e.range.end <= at.end;
    if (e.range.valid() && at.valid() && !inside) d.note(DiagKind::NoteEvaluatedHere, at);
    return std::nullopt;
  };
  switch (e.kind) {
    case FlatExprKind::Constant: return e.value;
    case FlatExprKind::Time:
      if (!quiet_) diags_.report(DiagKind::NotEvaluable, e.range, "time", "time-varying", "a value needed at compile time");
      return std::nullopt;
    case FlatExprKind::Variable: {
      if (quiet_) return std::nullopt;
      const FlatVariable& fv = out_.variables[static_cast<std::size_t>(e.variable)];
      if (fv.kind != VarKind::Parameter && fv.kind != VarKind::Constant) {
        diags_.report(DiagKind::NotEvaluable, e.range,
                      fv.path, fv.kind == VarKind::Input ? "an input" : "time-varying", "a value needed at compile time");
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
        if (e.op == FlatOp::Neg) x = -x;
        else if (e.op == FlatOp::Not) x = x != 0 ? 0 : 1;
      }
      return a;
    }
    case FlatExprKind::Binary: {
      std::optional<Value> a = evaluate(*e.args[0], at);
      if (!a) return std::nullopt;
      std::optional<Value> b = evaluate(*e.args[1], at);
      if (!b) return std::nullopt;
      const bool ints = a->type == ValueType::Integer && b->type == ValueType::Integer;
      if (e.op == FlatOp::Eq || e.op == FlatOp::Ne) {
        if (a->type == ValueType::String) {
          const bool eq = a->strings == b->strings;
          return numeric({}, {(e.op == FlatOp::Eq) == eq ? 1.0 : 0.0}, ValueType::Boolean);
        }
      }
      const FlatOp op = e.op;
      if (op == FlatOp::Mul && !a->shape.empty() && !b->shape.empty()) {
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
          case FlatOp::Add: z = x + y; break;
          case FlatOp::Sub: z = x - y; break;
          case FlatOp::Mul: case FlatOp::ElemMul: z = x * y; break;
          case FlatOp::Div:
            if (y == 0) return fail("division by zero");
            z = x / y;
            type = ValueType::Real;
            break;
          case FlatOp::Pow:
            z = std::pow(x, y);
            if (!std::isfinite(z)) return fail(formatNumber(x) + " ^ " + formatNumber(y) + " is not a finite number");
            type = ValueType::Real;
            break;
          case FlatOp::Eq: z = x == y; type = ValueType::Boolean; break;
          case FlatOp::Ne: z = x != y; type = ValueType::Boolean; break;
          case FlatOp::Lt: z = x < y; type = ValueType::Boolean; break;
          case FlatOp::Le: z = x <= y; type = ValueType::Boolean; break;
          case FlatOp::Gt: z = x > y; type = ValueType::Boolean; break;
          case FlatOp::Ge: z = x >= y; type = ValueType::Boolean; break;
          case FlatOp::And: z = (x != 0) && (y != 0); type = ValueType::Boolean; break;
          case FlatOp::Or: z = (x != 0) || (y != 0); type = ValueType::Boolean; break;
          default: return fail("unsupported operator");
        }
        r[k] = z;
      }
      return numeric(na >= nb ? a->shape : b->shape, std::move(r), type);
    }
    case FlatExprKind::Call: {
      if (!e.builtin) {
        if (!quiet_) diags_.report(DiagKind::ExternalCallAtCompileTime, e.range, e.function);
        return std::nullopt;
      }
      // The table's implementation (sema/builtins.hpp), the one that the
      // interpreter and the tracer run too; its domain checked first.
      const builtins::Builtin& f = *e.builtin;
      std::vector<Tensor<double>> a;
      bool ints = true;
      for (const auto& arg : e.args) {
        std::optional<Value> v = evaluate(*arg, at);
        if (!v) return std::nullopt;
        if (v->type != ValueType::Integer) ints = false;
        a.push_back(Tensor<double>{v->shape, v->numbers});
      }
      const std::string name = "`" + std::string(f.name) + "`";
      if (const int k = builtins::domainViolation(f, a); k >= 0) {
        switch (f.domain) {
          case builtins::Domain::NonZero: return fail(name + " of a zero vector");
          case builtins::Domain::NonEmpty: return fail(name + " of an empty array");
          default: return fail(name + " of " + exactNumber(a[0].data[static_cast<std::size_t>(k)]) + " is undefined");
        }
      }
      Tensor<double> r = builtins::apply(f, a);
      for (std::size_t k = 0; k < r.data.size(); ++k) {
        if (!std::isfinite(r.data[k])) {
          std::string args;
          for (const auto& t : a) {
            if (t.data.size() != 1) {
              args.clear();
              break;
            }
            args += (args.empty() ? "" : ", ") + exactNumber(t.data[0]);
          }
          return fail(name + (args.empty() ? "" : " of " + args) + " is not a finite number");
        }
      }
      return numeric(std::move(r.shape), std::move(r.data),
                     f.type == builtins::TypeRule::Numeric && ints ? ValueType::Integer : ValueType::Real);
    }
  }
  return std::nullopt;
}

}  // namespace capstan::sema
