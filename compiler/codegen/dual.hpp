// Forward-mode dual numbers over double: x = v + d eps with eps^2 = 0, so
// that f(x) = f(v) + f'(v) d eps. The reference interpreter runs the
// generated functions' one implementation (functions.hpp) with Scalar =
// Dual to get derivatives exact to round-off, one direction per run
// (Interpreter::forwardDynamicsDerivatives): the independent check of the
// generated code's symbolic derivatives. Branches (`if`, min, max, abs,
// sign) take the value's side, as the generated code does.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "codegen/flat_eval.hpp"

namespace capstan::codegen {

struct Dual {
  double v = 0.0;  // the value
  double d = 0.0;  // its derivative along the seeded direction

  Dual() = default;
  Dual(double value, double derivative = 0.0) : v(value), d(derivative) {}  // NOLINT: implicit, as a double

  Dual& operator+=(const Dual& b) { return *this = Dual(v + b.v, d + b.d); }
  Dual& operator-=(const Dual& b) { return *this = Dual(v - b.v, d - b.d); }
  Dual& operator*=(const Dual& b) { return *this = Dual(v * b.v, d * b.v + v * b.d); }
  Dual& operator/=(const Dual& b) { return *this = Dual(v / b.v, (d * b.v - v * b.d) / (b.v * b.v)); }
};

inline Dual operator+(Dual a, const Dual& b) { return a += b; }
inline Dual operator-(Dual a, const Dual& b) { return a -= b; }
inline Dual operator*(Dual a, const Dual& b) { return a *= b; }
inline Dual operator/(Dual a, const Dual& b) { return a /= b; }
inline Dual operator-(const Dual& a) { return {-a.v, -a.d}; }
inline Dual operator+(const Dual& a) { return a; }
inline bool operator==(const Dual& a, const Dual& b) { return a.v == b.v; }
inline bool operator!=(const Dual& a, const Dual& b) { return a.v != b.v; }
inline bool operator<(const Dual& a, const Dual& b) { return a.v < b.v; }
inline bool operator<=(const Dual& a, const Dual& b) { return a.v <= b.v; }
inline bool operator>(const Dual& a, const Dual& b) { return a.v > b.v; }
inline bool operator>=(const Dual& a, const Dual& b) { return a.v >= b.v; }

inline Dual sin(const Dual& x) { return {std::sin(x.v), std::cos(x.v) * x.d}; }
inline Dual cos(const Dual& x) { return {std::cos(x.v), -std::sin(x.v) * x.d}; }
inline Dual tan(const Dual& x) {
  const double t = std::tan(x.v);
  return {t, (1.0 + t * t) * x.d};
}
inline Dual asin(const Dual& x) { return {std::asin(x.v), x.d / std::sqrt(1.0 - x.v * x.v)}; }
inline Dual acos(const Dual& x) { return {std::acos(x.v), -x.d / std::sqrt(1.0 - x.v * x.v)}; }
inline Dual atan(const Dual& x) { return {std::atan(x.v), x.d / (1.0 + x.v * x.v)}; }
inline Dual atan2(const Dual& y, const Dual& x) {
  return {std::atan2(y.v, x.v), (x.v * y.d - y.v * x.d) / (x.v * x.v + y.v * y.v)};
}
inline Dual sqrt(const Dual& x) {
  const double r = std::sqrt(x.v);
  return {r, x.d / (2.0 * r)};
}
inline Dual exp(const Dual& x) {
  const double e = std::exp(x.v);
  return {e, e * x.d};
}
inline Dual log(const Dual& x) { return {std::log(x.v), x.d / x.v}; }
inline Dual abs(const Dual& x) { return x.v < 0.0 ? -x : x; }
inline Dual sign(const Dual& x) { return {x.v > 0.0 ? 1.0 : (x.v < 0.0 ? -1.0 : 0.0), 0.0}; }
inline Dual min(const Dual& a, const Dual& b) { return b.v < a.v ? b : a; }
inline Dual max(const Dual& a, const Dual& b) { return a.v < b.v ? b : a; }
// x^y; with a constant exponent d(x^y) = y x^(y-1) dx (finite at x = 0).
inline Dual pow(const Dual& x, const Dual& y) {
  const double p = std::pow(x.v, y.v);
  double d = x.d == 0.0 ? 0.0 : y.v * std::pow(x.v, y.v - 1.0) * x.d;
  if (y.d != 0.0) d += p * std::log(x.v) * y.d;
  return {p, d};
}
inline bool isfinite(const Dual& x) { return std::isfinite(x.v) && std::isfinite(x.d); }

// `if`, comparisons and logic on the values (flat_eval.hpp).
template <>
struct ScalarOps<Dual> {
  static Dual compare(sema::FlatOp op, const Dual& a, const Dual& b) { return ScalarOps<double>::compare(op, a.v, b.v); }
  static Dual logicalNot(const Dual& a) { return ScalarOps<double>::logicalNot(a.v); }
  static Dual choose(const Dual& cond, const Dual& a, const Dual& b) { return cond.v != 0.0 ? a : b; }
};

}  // namespace capstan::codegen

namespace Eigen {

template <>
struct NumTraits<capstan::codegen::Dual> : GenericNumTraits<double> {
  using Real = capstan::codegen::Dual;
  using NonInteger = capstan::codegen::Dual;
  using Literal = capstan::codegen::Dual;
  using Nested = capstan::codegen::Dual;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 0,
    ReadCost = 2,
    AddCost = 2,
    MulCost = 3,
  };
  static Real epsilon() { return Real(std::numeric_limits<double>::epsilon()); }
  static Real dummy_precision() { return Real(1e-12); }
  static Real highest() { return Real(std::numeric_limits<double>::max()); }
  static Real lowest() { return Real(std::numeric_limits<double>::lowest()); }
  static Real infinity() { return Real(std::numeric_limits<double>::infinity()); }
  static Real quiet_NaN() { return Real(std::numeric_limits<double>::quiet_NaN()); }
  static int digits10() { return std::numeric_limits<double>::digits10; }
  static int digits() { return std::numeric_limits<double>::digits; }
};

template <typename BinaryOp>
struct ScalarBinaryOpTraits<capstan::codegen::Dual, double, BinaryOp> {
  using ReturnType = capstan::codegen::Dual;
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<double, capstan::codegen::Dual, BinaryOp> {
  using ReturnType = capstan::codegen::Dual;
};

}  // namespace Eigen
