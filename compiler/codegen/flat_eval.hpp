// Translation of flat expressions (sema::FlatExpr) into values of a Scalar:
// `double` for the reference interpreter, `symbolic::Expr` for tracing. The
// caller supplies the leaves (variables and `time`); arithmetic, matrix
// products and `if` are here, once, for both uses; the built-in functions
// are the table's one implementation (sema/builtins.hpp), which compile-time
// evaluation runs too.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "sema/flat.hpp"
#include "symbolic/expr.hpp"

namespace capstan::codegen {

// A scalar, vector or matrix of Scalar, row-major (as sema::Value).
template <class Scalar>
using Tensor = sema::Tensor<Scalar>;

// Thrown for a flat expression code generation cannot translate (an
// external function, a frame quantity, ...): a user-facing message.
struct UnsupportedExpression : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Branch-free building blocks that differ between double and Expr.
template <class Scalar>
struct ScalarOps;

template <>
struct ScalarOps<double> {
  static double compare(sema::FlatOp op, double a, double b) {
    using sema::FlatOp;
    switch (op) {
      case FlatOp::Eq: return a == b ? 1.0 : 0.0;
      case FlatOp::Ne: return a != b ? 1.0 : 0.0;
      case FlatOp::Lt: return a < b ? 1.0 : 0.0;
      case FlatOp::Le: return a <= b ? 1.0 : 0.0;
      case FlatOp::Gt: return a > b ? 1.0 : 0.0;
      case FlatOp::Ge: return a >= b ? 1.0 : 0.0;
      case FlatOp::And: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
      case FlatOp::Or: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
      default: throw std::logic_error("not a comparison");
    }
  }
  static double logicalNot(double a) { return a != 0.0 ? 0.0 : 1.0; }
  static double choose(double cond, double a, double b) { return cond != 0.0 ? a : b; }
};

template <>
struct ScalarOps<symbolic::Expr> {
  using E = symbolic::Expr;
  static E compare(sema::FlatOp op, const E& a, const E& b) {
    using sema::FlatOp;
    switch (op) {
      case FlatOp::Eq: return symbolic::apply(symbolic::Fn::Eq, a, b);
      case FlatOp::Ne: return symbolic::apply(symbolic::Fn::Ne, a, b);
      case FlatOp::Lt: return symbolic::apply(symbolic::Fn::Lt, a, b);
      case FlatOp::Le: return symbolic::apply(symbolic::Fn::Le, a, b);
      case FlatOp::Gt: return symbolic::apply(symbolic::Fn::Lt, b, a);
      case FlatOp::Ge: return symbolic::apply(symbolic::Fn::Le, b, a);
      case FlatOp::And: return symbolic::apply(symbolic::Fn::And, a, b);
      case FlatOp::Or: return symbolic::apply(symbolic::Fn::Or, a, b);
      default: throw std::logic_error("not a comparison");
    }
  }
  static E logicalNot(const E& a) { return symbolic::apply(symbolic::Fn::Not, a); }
  static E choose(const E& cond, const E& a, const E& b) { return symbolic::apply(symbolic::Fn::Select, cond, a, b); }
};

// A call to an external function (FlatModel::functions[function]) that
// threw while the interpreter evaluated it: where, and what it said.
struct ExternalCallFailed : std::runtime_error {
  ExternalCallFailed(int function, sema::SourceRange call, const std::string& what)
      : std::runtime_error(what), function(function), call(call) {}
  int function;            // index into FlatModel::functions
  sema::SourceRange call;  // the call in the model
};

// The one form of `external "C++"` function code generation calls: scalar
// Real (or Integer, Boolean) inputs, one scalar Real output returned by the
// C++ function, the call's arguments naming inputs. The C++ arguments, as
// indexes into `f.inputs`, in call order; an empty optional and `why` if
// the function has another form.
inline std::optional<std::vector<int>> externalCallOrder(const sema::FlatFunction& f, std::string& why) {
  for (const auto& a : f.inputs) {
    if (!a.shape.empty() || a.type == sema::ValueType::String) {
      why = "the external function `" + f.name + "` with a non-scalar or String input `" + a.name + "`";
      return std::nullopt;
    }
  }
  if (f.outputs.size() != 1 || !f.outputs[0].shape.empty() || f.outputs[0].type != sema::ValueType::Real) {
    why = "the external function `" + f.name + "` without exactly one scalar Real output";
    return std::nullopt;
  }
  std::vector<int> order;
  for (const std::string& name : f.callArgs) {
    int k = 0;
    while (k < static_cast<int>(f.inputs.size()) && f.inputs[static_cast<std::size_t>(k)].name != name) ++k;
    if (k == static_cast<int>(f.inputs.size())) {
      why = "the external call of `" + f.name + "` with an argument that is not one of its inputs";
      return std::nullopt;
    }
    order.push_back(k);
  }
  return order;
}

// Modelica's derivative annotation: the C++ arguments of the derivative
// function g = model.functions[f.derivative] of external function f, for
// f's C++ arguments `args` and their differentials `dargs` (f's call
// order). g's inputs (in declaration order) are f's inputs, then the
// differentials of f's Real inputs; the result is in g's call order.
template <class Scalar>
std::vector<Scalar> derivativeCallArgs(const sema::FlatModel& model, const sema::FlatFunction& f,
                                       std::span<const Scalar> args, std::span<const Scalar> dargs) {
  const sema::FlatFunction& g = model.functions.at(static_cast<std::size_t>(f.derivative));
  std::string why;
  const std::optional<std::vector<int>> order = externalCallOrder(f, why), gOrder = externalCallOrder(g, why);
  if (!order || !gOrder) throw UnsupportedExpression(why);
  std::vector<Scalar> inputs(f.inputs.size(), Scalar(0.0)), differentials(f.inputs.size(), Scalar(0.0));
  for (std::size_t k = 0; k < order->size(); ++k) {
    inputs.at(static_cast<std::size_t>((*order)[k])) = args[k];
    differentials.at(static_cast<std::size_t>((*order)[k])) = dargs[k];
  }
  for (std::size_t i = 0; i < f.inputs.size(); ++i)
    if (f.inputs[i].type == sema::ValueType::Real) inputs.push_back(differentials[i]);
  std::vector<Scalar> out;
  for (const int k : *gOrder) out.push_back(inputs.at(static_cast<std::size_t>(k)));
  return out;
}

template <class Scalar>
class FlatTranslator {
 public:
  // The value of element `element` (flat, 0-based) of variable `variable`.
  using Leaf = std::function<Scalar(int variable, int element)>;
  // The result of external function `function` (index into
  // FlatModel::functions) for its C++ arguments, in call order. Without
  // one, Scalar = symbolic::Expr makes an opaque call node of the C++ name
  // (what the generated code calls), and double refuses the call.
  using External = std::function<Scalar(int function, const std::vector<Scalar>& args)>;

  // `time` is read at each translation (it may change between calls).
  FlatTranslator(const sema::FlatModel& model, Leaf leaf, const Scalar& time, External external = {})
      : model_(model), leaf_(std::move(leaf)), time_(time), external_(std::move(external)) {}

  Tensor<Scalar> operator()(const sema::FlatExpr& e) const { return translate(e); }

  // The whole value of a variable through the leaf callback.
  Tensor<Scalar> variable(int v) const {
    const sema::FlatVariable& fv = model_.variables.at(static_cast<std::size_t>(v));
    Tensor<Scalar> t;
    t.shape = fv.shape;
    std::size_t n = 1;
    for (int d : fv.shape) n *= static_cast<std::size_t>(d);
    for (std::size_t k = 0; k < n; ++k) t.data.push_back(leaf_(v, static_cast<int>(k)));
    return t;
  }

 private:
  Tensor<Scalar> translate(const sema::FlatExpr& e) const {
    using K = sema::FlatExprKind;
    switch (e.kind) {
      case K::Constant: {
        if (e.value.type == sema::ValueType::String || e.value.type == sema::ValueType::Reference)
          throw UnsupportedExpression("a string or reference value in an expression");
        Tensor<Scalar> t;
        t.shape = e.value.shape;
        for (double x : e.value.numbers) t.data.push_back(Scalar(x));
        return t;
      }
      case K::Time: return Tensor<Scalar>::scalar(time_);
      case K::Variable: {
        if (e.element >= 0) return Tensor<Scalar>::scalar(leaf_(e.variable, e.element));
        return variable(e.variable);
      }
      case K::Index: {
        const Tensor<Scalar> a = translate(*e.args.at(0));
        std::vector<int> rest(a.shape.begin() + static_cast<long>(e.indices.size()), a.shape.end());
        std::size_t n = 1, offset = 0;
        for (int d : rest) n *= static_cast<std::size_t>(d);
        for (std::size_t k = 0; k < e.indices.size(); ++k) {
          std::size_t below = 1;
          for (std::size_t d = k + 1; d < a.shape.size(); ++d) below *= static_cast<std::size_t>(a.shape[d]);
          offset += static_cast<std::size_t>(e.indices[k]) * below;
        }
        Tensor<Scalar> r;
        r.shape = rest;
        for (std::size_t k = 0; k < n; ++k) r.data.push_back(a.data.at(offset + k));
        return r;
      }
      case K::Array: {
        Tensor<Scalar> r;
        r.shape = {static_cast<int>(e.args.size())};
        bool first = true;
        for (const auto& arg : e.args) {
          Tensor<Scalar> v = translate(*arg);
          if (first) r.shape.insert(r.shape.end(), v.shape.begin(), v.shape.end());
          first = false;
          r.data.insert(r.data.end(), v.data.begin(), v.data.end());
        }
        return r;
      }
      case K::If: {
        const Tensor<Scalar> c = translate(*e.args.at(0));
        Tensor<Scalar> a = translate(*e.args.at(1));
        const Tensor<Scalar> b = translate(*e.args.at(2));
        for (std::size_t k = 0; k < a.data.size(); ++k)
          a.data[k] = ScalarOps<Scalar>::choose(c.data.at(0), a.data[k], b.data.at(k));
        return a;
      }
      case K::Unary: {
        Tensor<Scalar> a = translate(*e.args.at(0));
        for (Scalar& x : a.data) {
          if (e.op == sema::FlatOp::Neg) x = -x;
          else if (e.op == sema::FlatOp::Not) x = ScalarOps<Scalar>::logicalNot(x);
        }
        return a;
      }
      case K::Binary: return binary(e);
      case K::Call: return call(e);
    }
    throw std::logic_error("unknown flat expression kind");
  }

  Tensor<Scalar> binary(const sema::FlatExpr& e) const {
    using sema::FlatOp;
    const Tensor<Scalar> a = translate(*e.args.at(0));
    const Tensor<Scalar> b = translate(*e.args.at(1));
    if (e.op == FlatOp::Mul && !a.shape.empty() && !b.shape.empty()) {
      const int m = a.shape.size() == 2 ? a.shape[0] : 1;
      const int n = a.shape.back();
      const int p = b.shape.size() == 2 ? b.shape[1] : 1;
      Tensor<Scalar> r;
      r.shape = e.shape;
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < p; ++j) {
          Scalar s(0.0);
          for (int k = 0; k < n; ++k)
            s += a.data[static_cast<std::size_t>(i * n + k)] * b.data[static_cast<std::size_t>(k * p + j)];
          r.data.push_back(s);
        }
      }
      return r;
    }
    const std::size_t na = a.size(), nb = b.size(), n = std::max(na, nb);
    Tensor<Scalar> r;
    r.shape = na >= nb ? a.shape : b.shape;
    for (std::size_t k = 0; k < n; ++k) {
      const Scalar& x = a.data[na == 1 ? 0 : k];
      const Scalar& y = b.data[nb == 1 ? 0 : k];
      switch (e.op) {
        case FlatOp::Add: r.data.push_back(x + y); break;
        case FlatOp::Sub: r.data.push_back(x - y); break;
        case FlatOp::Mul: case FlatOp::ElemMul: r.data.push_back(x * y); break;
        case FlatOp::Div: r.data.push_back(x / y); break;
        case FlatOp::Pow: {
          using std::pow;
          r.data.push_back(pow(x, y));
          break;
        }
        default: r.data.push_back(ScalarOps<Scalar>::compare(e.op, x, y)); break;
      }
    }
    return r;
  }

  Tensor<Scalar> call(const sema::FlatExpr& e) const {
    if (!e.builtin) return externalCall(e);
    if (!sema::builtins::hasImplementation(*e.builtin))
      throw UnsupportedExpression("a call to the function `" + e.function + "`");
    std::vector<Tensor<Scalar>> a;
    for (const auto& arg : e.args) a.push_back(translate(*arg));
    return sema::builtins::apply(*e.builtin, a);
  }

  // `e.args` are the inputs in declaration order (sema); the C++ function
  // takes them in the order of the `external` clause.
  Tensor<Scalar> externalCall(const sema::FlatExpr& e) const {
    int index = 0;
    while (index < static_cast<int>(model_.functions.size()) &&
           model_.functions[static_cast<std::size_t>(index)].name != e.function)
      ++index;
    if (index == static_cast<int>(model_.functions.size()))
      throw UnsupportedExpression("a call to the unknown function `" + e.function + "`");
    const sema::FlatFunction& f = model_.functions[static_cast<std::size_t>(index)];
    std::string why;
    const std::optional<std::vector<int>> order = externalCallOrder(f, why);
    if (!order) throw UnsupportedExpression(why);
    std::vector<Scalar> inputs;
    for (const auto& arg : e.args) inputs.push_back(translate(*arg).data.at(0));
    std::vector<Scalar> args;
    for (int k : *order) args.push_back(inputs.at(static_cast<std::size_t>(k)));
    if (external_) {
      try {
        return Tensor<Scalar>::scalar(external_(index, args));
      } catch (const ExternalCallFailed&) {
        throw;
      } catch (const UnsupportedExpression&) {
        throw;
      } catch (const std::exception& x) {
        throw ExternalCallFailed(index, e.range, x.what());
      }
    }
    if constexpr (std::is_same_v<Scalar, symbolic::Expr>) {
      return Tensor<Scalar>::scalar(symbolic::call(f.cppName, std::span<const symbolic::Expr>(args)));
    } else {
      throw UnsupportedExpression("a call to the external function `" + e.function + "` (no compiled C++ functions)");
    }
  }

  const sema::FlatModel& model_;
  Leaf leaf_;
  const Scalar& time_;
  External external_;
};

}  // namespace capstan::codegen
