// Translation of flat expressions (sema::FlatExpr) into values of a Scalar:
// `double` for the reference interpreter, `symbolic::Expr` for tracing. The
// caller supplies the leaves (variables and `time`); everything else —
// arithmetic, matrix products, `if`, the built-in functions — is here, once,
// for both uses.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sema/flat.hpp"
#include "symbolic/expr.hpp"

namespace capstan::codegen {

// A scalar, vector or matrix of Scalar, row-major (as sema::Value).
template <class Scalar>
struct Tensor {
  std::vector<int> shape;
  std::vector<Scalar> data;

  static Tensor scalar(Scalar s) { return Tensor{{}, {std::move(s)}}; }
  std::size_t size() const { return data.size(); }
  const Scalar& operator[](std::size_t k) const { return data.at(k); }
};

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
  static double compare(syntax::Op op, double a, double b) {
    switch (op) {
      case syntax::Op::Eq: return a == b ? 1.0 : 0.0;
      case syntax::Op::Ne: return a != b ? 1.0 : 0.0;
      case syntax::Op::Lt: return a < b ? 1.0 : 0.0;
      case syntax::Op::Le: return a <= b ? 1.0 : 0.0;
      case syntax::Op::Gt: return a > b ? 1.0 : 0.0;
      case syntax::Op::Ge: return a >= b ? 1.0 : 0.0;
      case syntax::Op::And: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
      case syntax::Op::Or: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
      default: throw std::logic_error("not a comparison");
    }
  }
  static double logicalNot(double a) { return a != 0.0 ? 0.0 : 1.0; }
  static double choose(double cond, double a, double b) { return cond != 0.0 ? a : b; }
  static double sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }
};

template <>
struct ScalarOps<symbolic::Expr> {
  using E = symbolic::Expr;
  static E compare(syntax::Op op, const E& a, const E& b) {
    switch (op) {
      case syntax::Op::Eq: return symbolic::apply(symbolic::Fn::Eq, a, b);
      case syntax::Op::Ne: return symbolic::apply(symbolic::Fn::Ne, a, b);
      case syntax::Op::Lt: return symbolic::apply(symbolic::Fn::Lt, a, b);
      case syntax::Op::Le: return symbolic::apply(symbolic::Fn::Le, a, b);
      case syntax::Op::Gt: return symbolic::apply(symbolic::Fn::Lt, b, a);
      case syntax::Op::Ge: return symbolic::apply(symbolic::Fn::Le, b, a);
      case syntax::Op::And: return symbolic::apply(symbolic::Fn::And, a, b);
      case syntax::Op::Or: return symbolic::apply(symbolic::Fn::Or, a, b);
      default: throw std::logic_error("not a comparison");
    }
  }
  static E logicalNot(const E& a) { return symbolic::apply(symbolic::Fn::Not, a); }
  static E choose(const E& cond, const E& a, const E& b) { return symbolic::apply(symbolic::Fn::Select, cond, a, b); }
  static E sign(const E& x) { return symbolic::sign(x); }
};

template <class Scalar>
class FlatTranslator {
 public:
  // The value of element `element` (flat, 0-based) of variable `variable`.
  using Leaf = std::function<Scalar(int variable, int element)>;

  // `time` is read at each translation (it may change between calls).
  FlatTranslator(const sema::FlatModel& model, Leaf leaf, const Scalar& time)
      : model_(model), leaf_(std::move(leaf)), time_(time) {}

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
          if (e.op == syntax::Op::Neg) x = -x;
          else if (e.op == syntax::Op::Not) x = ScalarOps<Scalar>::logicalNot(x);
        }
        return a;
      }
      case K::Binary: return binary(e);
      case K::Call: return call(e);
    }
    throw std::logic_error("unknown flat expression kind");
  }

  Tensor<Scalar> binary(const sema::FlatExpr& e) const {
    using syntax::Op;
    const Tensor<Scalar> a = translate(*e.args.at(0));
    const Tensor<Scalar> b = translate(*e.args.at(1));
    if (e.op == Op::Mul && !a.shape.empty() && !b.shape.empty()) {
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
        case Op::Add: case Op::ElemAdd: r.data.push_back(x + y); break;
        case Op::Sub: case Op::ElemSub: r.data.push_back(x - y); break;
        case Op::Mul: case Op::ElemMul: r.data.push_back(x * y); break;
        case Op::Div: case Op::ElemDiv: r.data.push_back(x / y); break;
        case Op::Pow: case Op::ElemPow: {
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
    using std::abs, std::acos, std::asin, std::atan, std::atan2, std::cos, std::exp, std::log, std::sin,
        std::sqrt, std::tan;
    const std::string& f = e.function;
    std::vector<Tensor<Scalar>> a;
    auto args = [&]() {
      for (const auto& arg : e.args) a.push_back(translate(*arg));
    };
    auto map = [&](auto fn) {
      args();
      Tensor<Scalar> r = a.at(0);
      for (Scalar& x : r.data) x = fn(x);
      return r;
    };
    if (f == "sin") return map([](const Scalar& x) { return sin(x); });
    if (f == "cos") return map([](const Scalar& x) { return cos(x); });
    if (f == "tan") return map([](const Scalar& x) { return tan(x); });
    if (f == "asin") return map([](const Scalar& x) { return asin(x); });
    if (f == "acos") return map([](const Scalar& x) { return acos(x); });
    if (f == "atan") return map([](const Scalar& x) { return atan(x); });
    if (f == "sqrt") return map([](const Scalar& x) { return sqrt(x); });
    if (f == "exp") return map([](const Scalar& x) { return exp(x); });
    if (f == "log") return map([](const Scalar& x) { return log(x); });
    if (f == "log10") return map([](const Scalar& x) { return log(x) / log(Scalar(10.0)); });
    if (f == "sinh") return map([](const Scalar& x) { return (exp(x) - exp(-x)) / Scalar(2.0); });
    if (f == "cosh") return map([](const Scalar& x) { return (exp(x) + exp(-x)) / Scalar(2.0); });
    if (f == "tanh") return map([](const Scalar& x) { return (exp(x) - exp(-x)) / (exp(x) + exp(-x)); });
    if (f == "abs") return map([](const Scalar& x) { return abs(x); });
    if (f == "sign") return map([](const Scalar& x) { return ScalarOps<Scalar>::sign(x); });
    args();
    if (f == "atan2") return Tensor<Scalar>::scalar(atan2(a.at(0)[0], a.at(1)[0]));
    if (f == "min" || f == "max") {
      using std::max, std::min;
      std::vector<Scalar> xs;
      for (const auto& t : a) xs.insert(xs.end(), t.data.begin(), t.data.end());
      Scalar r = xs.at(0);
      for (std::size_t k = 1; k < xs.size(); ++k) r = f == "min" ? Scalar(min(r, xs[k])) : Scalar(max(r, xs[k]));
      return Tensor<Scalar>::scalar(r);
    }
    if (f == "sum") {
      Scalar s(0.0);
      for (const Scalar& x : a.at(0).data) s += x;
      return Tensor<Scalar>::scalar(s);
    }
    if (f == "cross") {
      const auto& x = a.at(0).data;
      const auto& y = a.at(1).data;
      return Tensor<Scalar>{{3}, {x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]}};
    }
    if (f == "norm" || f == "normalize") {
      Scalar s(0.0);
      for (const Scalar& x : a.at(0).data) s += x * x;
      s = sqrt(s);
      if (f == "norm") return Tensor<Scalar>::scalar(s);
      Tensor<Scalar> r = a.at(0);
      for (Scalar& x : r.data) x = x / s;
      return r;
    }
    if (f == "transpose") {
      const int m = a.at(0).shape.at(0), n = a.at(0).shape.at(1);
      Tensor<Scalar> r{{n, m}, std::vector<Scalar>(static_cast<std::size_t>(m * n), Scalar(0.0))};
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
          r.data[static_cast<std::size_t>(j * m + i)] = a.at(0).data[static_cast<std::size_t>(i * n + j)];
      return r;
    }
    if (f == "diagonal") {
      const int n = a.at(0).shape.at(0);
      Tensor<Scalar> r{{n, n}, std::vector<Scalar>(static_cast<std::size_t>(n * n), Scalar(0.0))};
      for (int i = 0; i < n; ++i) r.data[static_cast<std::size_t>(i * n + i)] = a.at(0).data[static_cast<std::size_t>(i)];
      return r;
    }
    if (f == "skew") {
      const auto& x = a.at(0).data;
      const Scalar z(0.0);
      return Tensor<Scalar>{{3, 3}, {z, -x[2], x[1], x[2], z, -x[0], -x[1], x[0], z}};
    }
    throw UnsupportedExpression("a call to the external function `" + f + "`");
  }

  const sema::FlatModel& model_;
  Leaf leaf_;
  const Scalar& time_;
};

}  // namespace capstan::codegen
