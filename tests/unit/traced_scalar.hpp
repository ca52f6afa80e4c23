// Traced: a Scalar that stands in for the compiler's symbolic Expr in tests.
// It carries a double so results can be compared, counts the operations
// performed on it (a proxy for the size of traced straight-line code), and
// deliberately has no comparison operators and no conversion to double: an
// algorithm that branches on a Scalar value does not compile with it. Its
// math functions live in its namespace and are found only by ADL.
#pragma once

#include <Eigen/Core>

#include <cmath>

namespace capstan::testing {

struct OperationCounts {
  long add = 0;  // + and -
  long mul = 0;
  long div = 0;
  long fn = 0;  // sin, cos, sqrt, atan2
  long total() const { return add + mul + div + fn; }
};

inline OperationCounts& operationCounts() {
  static OperationCounts counts;
  return counts;
}

struct Traced {
  double value = 0.0;
  Traced() = default;
  Traced(double v) : value(v) {}  // NOLINT: implicit, like a symbolic constant

  Traced& operator+=(const Traced& o) { return *this = *this + o; }
  Traced& operator-=(const Traced& o) { return *this = *this - o; }
  Traced& operator*=(const Traced& o) { return *this = *this * o; }
  Traced& operator/=(const Traced& o) { return *this = *this / o; }

  friend Traced operator+(const Traced& a, const Traced& b) {
    ++operationCounts().add;
    return Traced(a.value + b.value);
  }
  friend Traced operator-(const Traced& a, const Traced& b) {
    ++operationCounts().add;
    return Traced(a.value - b.value);
  }
  friend Traced operator*(const Traced& a, const Traced& b) {
    ++operationCounts().mul;
    return Traced(a.value * b.value);
  }
  friend Traced operator/(const Traced& a, const Traced& b) {
    ++operationCounts().div;
    return Traced(a.value / b.value);
  }
  friend Traced operator-(const Traced& a) { return Traced(-a.value); }
  friend Traced operator+(const Traced& a) { return a; }
};

inline Traced sin(const Traced& x) {
  ++operationCounts().fn;
  return Traced(std::sin(x.value));
}
inline Traced cos(const Traced& x) {
  ++operationCounts().fn;
  return Traced(std::cos(x.value));
}
inline Traced sqrt(const Traced& x) {
  ++operationCounts().fn;
  return Traced(std::sqrt(x.value));
}
inline Traced atan2(const Traced& y, const Traced& x) {
  ++operationCounts().fn;
  return Traced(std::atan2(y.value, x.value));
}

// The double values of a Traced matrix.
template <class Derived>
Eigen::Matrix<double, Derived::RowsAtCompileTime, Derived::ColsAtCompileTime> values(
    const Eigen::MatrixBase<Derived>& m) {
  return m.unaryExpr([](const Traced& x) { return x.value; });
}

}  // namespace capstan::testing

namespace Eigen {
template <>
struct NumTraits<capstan::testing::Traced> : GenericNumTraits<double> {
  using Real = capstan::testing::Traced;
  using NonInteger = capstan::testing::Traced;
  using Nested = capstan::testing::Traced;
  using Literal = capstan::testing::Traced;
  enum { IsComplex = 0, IsInteger = 0, IsSigned = 1, RequireInitialization = 1, ReadCost = 1, AddCost = 1, MulCost = 1 };
};
}  // namespace Eigen
