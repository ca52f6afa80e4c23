// The built-in functions of SPEC §2, once: for each, its name, arity, the
// rules for the shape, type and unit of its result, the domain on which it is
// defined, and ONE implementation templated on Scalar. Sema checks calls with
// the rules (functions.cpp), evaluates them at compile time with
// Scalar = double (eval.cpp), and code generation translates them with
// Scalar = double for the interpreter and Scalar = symbolic::Expr for the
// tracer (codegen/flat_eval.hpp) — so the three cannot disagree.
//
// Header only and free of syntax/ and symbolic/: the Scalar's functions are
// found by argument-dependent lookup (`using std::sin; sin(x)`), as in the
// runtime's algorithms.
//
// Values outside a function's domain (sqrt(-1), log(0), acos(2),
// normalize({0,0,0})) and non-finite results: at compile time a located
// `EvaluationFailed` error; at run time the implementation below computes the
// same IEEE value (NaN or ±inf) in the interpreter and in generated code, and
// `capstan eval` reports a non-finite output as an error naming the output
// and its declaration (docs/language.md, "Built-in functions").
#pragma once

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace capstan::sema {

// A scalar, vector or matrix of Scalar, row-major (as sema::Value).
template <class Scalar>
struct Tensor {
  std::vector<int> shape;
  std::vector<Scalar> data;

  static Tensor scalar(Scalar s) { return Tensor{{}, {std::move(s)}}; }
  std::size_t size() const { return data.size(); }
  const Scalar& operator[](std::size_t k) const { return data.at(k); }
};

namespace builtins {

enum class Id {
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Sqrt, Exp, Log, Log10, Abs, Sign,
  Atan2, Min, Max, Sum, Cross, Norm, Normalize, Transpose, Diagonal, Skew,
  Identity, Zeros, Ones, Fill, Size,
};

// Arguments -> result shape (arguments are numeric unless stated).
enum class ShapeRule {
  Elementwise,  // (x) any shape -> the shape of x
  TwoScalars,   // (y, x) scalars -> scalar
  MinMax,       // (a, b) scalars, or (v) a non-scalar array -> scalar
  Reduce,       // (v) a non-scalar array -> scalar
  Cross,        // ([3], [3]) -> [3]
  Norm,         // ([n]) -> scalar
  Normalize,    // ([n]) -> [n]
  Transpose,    // ([m, n]) -> [n, m]
  Diagonal,     // ([n]) -> [n, n]
  Skew,         // ([3]) -> [3, 3]
  Constructor,  // sizes known at compile time -> a constant array (identity, zeros, ones, fill)
  Size,         // size(A), size(A, k): Integer constants from the shape of A
};

enum class TypeRule {
  Real,     // always Real
  Numeric,  // Integer when every argument is Integer, else Real
};

enum class UnitRule {
  None,         // dimensionless
  SqrtOf,       // the unit of x to the power 1/2
  Same,         // the unit of the (first) argument
  Common,       // the arguments' units must agree; that unit
  CommonNone,   // the arguments' units must agree; dimensionless (atan2)
  Product,      // the product of the arguments' units (cross)
};

// Where the function is defined (checked at compile time).
enum class Domain {
  All,
  UnitInterval,  // every element in [-1, 1]
  NonNegative,   // every element >= 0
  Positive,      // every element > 0
  NonZero,       // a vector with a non-zero norm
  NonEmpty,      // an array with at least one element
};

struct Builtin {
  Id id;
  std::string_view name;
  int minArgs, maxArgs;
  ShapeRule shape;
  TypeRule type;
  UnitRule unit;
  Domain domain;
};

inline constexpr Builtin kTable[] = {
    {Id::Sin, "sin", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Cos, "cos", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Tan, "tan", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Asin, "asin", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::UnitInterval},
    {Id::Acos, "acos", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::UnitInterval},
    {Id::Atan, "atan", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Sinh, "sinh", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Cosh, "cosh", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Tanh, "tanh", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Sqrt, "sqrt", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::SqrtOf, Domain::NonNegative},
    {Id::Exp, "exp", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Log, "log", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::Positive},
    {Id::Log10, "log10", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::Positive},
    {Id::Abs, "abs", 1, 1, ShapeRule::Elementwise, TypeRule::Numeric, UnitRule::Same, Domain::All},
    {Id::Sign, "sign", 1, 1, ShapeRule::Elementwise, TypeRule::Real, UnitRule::None, Domain::All},
    {Id::Atan2, "atan2", 2, 2, ShapeRule::TwoScalars, TypeRule::Real, UnitRule::CommonNone, Domain::All},
    {Id::Min, "min", 1, 2, ShapeRule::MinMax, TypeRule::Numeric, UnitRule::Common, Domain::NonEmpty},
    {Id::Max, "max", 1, 2, ShapeRule::MinMax, TypeRule::Numeric, UnitRule::Common, Domain::NonEmpty},
    {Id::Sum, "sum", 1, 1, ShapeRule::Reduce, TypeRule::Numeric, UnitRule::Same, Domain::All},
    {Id::Cross, "cross", 2, 2, ShapeRule::Cross, TypeRule::Real, UnitRule::Product, Domain::All},
    {Id::Norm, "norm", 1, 1, ShapeRule::Norm, TypeRule::Real, UnitRule::Same, Domain::All},
    {Id::Normalize, "normalize", 1, 1, ShapeRule::Normalize, TypeRule::Real, UnitRule::None, Domain::NonZero},
    {Id::Transpose, "transpose", 1, 1, ShapeRule::Transpose, TypeRule::Numeric, UnitRule::Same, Domain::All},
    {Id::Diagonal, "diagonal", 1, 1, ShapeRule::Diagonal, TypeRule::Numeric, UnitRule::Same, Domain::All},
    {Id::Skew, "skew", 1, 1, ShapeRule::Skew, TypeRule::Real, UnitRule::Same, Domain::All},
    {Id::Identity, "identity", 1, 1, ShapeRule::Constructor, TypeRule::Numeric, UnitRule::None, Domain::All},
    {Id::Zeros, "zeros", 1, 8, ShapeRule::Constructor, TypeRule::Numeric, UnitRule::None, Domain::All},
    {Id::Ones, "ones", 1, 8, ShapeRule::Constructor, TypeRule::Numeric, UnitRule::None, Domain::All},
    {Id::Fill, "fill", 2, 9, ShapeRule::Constructor, TypeRule::Numeric, UnitRule::Same, Domain::All},
    {Id::Size, "size", 1, 2, ShapeRule::Size, TypeRule::Numeric, UnitRule::None, Domain::All},
};

// The built-in called `name`, or null.
inline const Builtin* find(std::string_view name) {
  for (const Builtin& b : kTable) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

// True when the function has a run-time implementation (apply below); the
// others (constructors, size) are always constants after sema.
inline bool hasImplementation(const Builtin& f) {
  return f.shape != ShapeRule::Constructor && f.shape != ShapeRule::Size;
}

// -1, 0 or 1 for doubles; symbolic::Expr brings its own `sign` (found by
// argument-dependent lookup), printed as the same comparisons.
inline double sign(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0); }

// f(args) for arguments whose shapes sema has checked against f's rules.
// The one implementation: used with double (compile time, interpreter) and
// symbolic::Expr (tracer).
template <class Scalar>
Tensor<Scalar> apply(const Builtin& f, const std::vector<Tensor<Scalar>>& a) {
  using std::abs, std::acos, std::asin, std::atan, std::atan2, std::cos, std::exp, std::log, std::max, std::min,
      std::sin, std::sqrt, std::tan;
  auto map = [&](auto fn) {
    Tensor<Scalar> r = a.at(0);
    for (Scalar& x : r.data) x = fn(x);
    return r;
  };
  switch (f.id) {
    case Id::Sin: return map([](const Scalar& x) { return sin(x); });
    case Id::Cos: return map([](const Scalar& x) { return cos(x); });
    case Id::Tan: return map([](const Scalar& x) { return tan(x); });
    case Id::Asin: return map([](const Scalar& x) { return asin(x); });
    case Id::Acos: return map([](const Scalar& x) { return acos(x); });
    case Id::Atan: return map([](const Scalar& x) { return atan(x); });
    // The hyperbolic functions through exp: the symbolic engine has no node
    // for them, and compile time must compute what generated code computes.
    case Id::Sinh: return map([](const Scalar& x) { return Scalar((exp(x) - exp(-x)) / Scalar(2.0)); });
    case Id::Cosh: return map([](const Scalar& x) { return Scalar((exp(x) + exp(-x)) / Scalar(2.0)); });
    // 1 - 2 / (e^2x + 1): exactly ±1 where e^2x overflows or underflows.
    case Id::Tanh: return map([](const Scalar& x) { return Scalar(1.0 - 2.0 / (exp(2.0 * x) + 1.0)); });
    case Id::Sqrt: return map([](const Scalar& x) { return sqrt(x); });
    case Id::Exp: return map([](const Scalar& x) { return exp(x); });
    case Id::Log: return map([](const Scalar& x) { return log(x); });
    case Id::Log10: return map([](const Scalar& x) { return Scalar(log(x) / log(Scalar(10.0))); });
    case Id::Abs: return map([](const Scalar& x) { return abs(x); });
    case Id::Sign: return map([](const Scalar& x) { return Scalar(sign(x)); });
    case Id::Atan2: return Tensor<Scalar>::scalar(atan2(a.at(0)[0], a.at(1)[0]));
    case Id::Min:
    case Id::Max: {
      std::vector<Scalar> xs;
      for (const auto& t : a) xs.insert(xs.end(), t.data.begin(), t.data.end());
      Scalar r = xs.at(0);
      for (std::size_t k = 1; k < xs.size(); ++k) r = f.id == Id::Min ? Scalar(min(r, xs[k])) : Scalar(max(r, xs[k]));
      return Tensor<Scalar>::scalar(r);
    }
    case Id::Sum: {
      Scalar s(0.0);
      for (const Scalar& x : a.at(0).data) s += x;
      return Tensor<Scalar>::scalar(s);
    }
    case Id::Cross: {
      const auto& x = a.at(0).data;
      const auto& y = a.at(1).data;
      return Tensor<Scalar>{{3}, {x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]}};
    }
    case Id::Norm:
    case Id::Normalize: {
      Scalar s(0.0);
      for (const Scalar& x : a.at(0).data) s += x * x;
      s = sqrt(s);
      if (f.id == Id::Norm) return Tensor<Scalar>::scalar(s);
      Tensor<Scalar> r = a.at(0);
      for (Scalar& x : r.data) x = x / s;  // 0/0 = NaN for a zero vector (see the file comment)
      return r;
    }
    case Id::Transpose: {
      const int m = a.at(0).shape.at(0), n = a.at(0).shape.at(1);
      Tensor<Scalar> r{{n, m}, std::vector<Scalar>(static_cast<std::size_t>(m * n), Scalar(0.0))};
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
          r.data[static_cast<std::size_t>(j * m + i)] = a.at(0).data[static_cast<std::size_t>(i * n + j)];
      return r;
    }
    case Id::Diagonal: {
      const int n = a.at(0).shape.at(0);
      Tensor<Scalar> r{{n, n}, std::vector<Scalar>(static_cast<std::size_t>(n * n), Scalar(0.0))};
      for (int i = 0; i < n; ++i) r.data[static_cast<std::size_t>(i * n + i)] = a.at(0).data[static_cast<std::size_t>(i)];
      return r;
    }
    case Id::Skew: {
      const auto& x = a.at(0).data;
      const Scalar z(0.0);
      return Tensor<Scalar>{{3, 3}, {z, -x[2], x[1], x[2], z, -x[0], -x[1], x[0], z}};
    }
    case Id::Identity:
    case Id::Zeros:
    case Id::Ones:
    case Id::Fill:
    case Id::Size: break;
  }
  throw std::logic_error("built-in `" + std::string(f.name) + "` has no run-time implementation");
}

// The arguments' elements that lie outside f's domain: the index of the
// offending argument element, or -1 when all are inside. For NonZero and
// NonEmpty, 0 means "the whole first argument". Compile time only.
inline int domainViolation(const Builtin& f, const std::vector<Tensor<double>>& a) {
  switch (f.domain) {
    case Domain::All: return -1;
    case Domain::UnitInterval:
    case Domain::NonNegative:
    case Domain::Positive:
      for (std::size_t k = 0; k < a.at(0).data.size(); ++k) {
        const double x = a[0].data[k];
        const bool inside = f.domain == Domain::UnitInterval ? (x >= -1.0 && x <= 1.0)
                            : f.domain == Domain::NonNegative ? x >= 0.0
                                                              : x > 0.0;
        if (!inside) return static_cast<int>(k);
      }
      return -1;
    case Domain::NonZero: {
      double s = 0.0;
      for (double x : a.at(0).data) s += x * x;
      return s > 0.0 ? -1 : 0;
    }
    case Domain::NonEmpty: {
      std::size_t n = 0;
      for (const auto& t : a) n += t.data.size();
      return n > 0 ? -1 : 0;
    }
  }
  return -1;
}

}  // namespace builtins
}  // namespace capstan::sema
