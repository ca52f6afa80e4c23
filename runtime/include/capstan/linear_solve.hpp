#pragma once
// A x = b for a small square A by Gaussian elimination with partial
// pivoting, written as plain loops over any Eigen matrix and vector type
// (fixed-size 3x3 and 4x4 in the geometry's Newton solvers, dynamic 4k x 4k
// in the cable path solver). Eigen's PartialPivLU would do the same
// arithmetic, but it instantiates its blocked kernels and expression
// templates once per matrix type: in a generated driver that includes the
// cable solver its three sizes cost about 8 s of compiler time at -O0 for
// sizes where blocking buys nothing.
#include <cmath>
#include <cstddef>
#include <utility>

namespace capstan {

// Overwrites A with its LU factors and b with x = A^-1 b. False (b then
// unspecified) when a pivot is zero or not finite: A is singular to
// working precision or holds a NaN; the caller decides what that means.
template <class Matrix, class Vector>
bool solveLinearInPlace(Matrix& A, Vector& b) {
  using std::abs;
  using std::isfinite;
  using Index = std::ptrdiff_t;
  const auto n = static_cast<Index>(A.rows());
  for (Index k = 0; k < n; ++k) {
    Index pivot = k;
    for (Index i = k + 1; i < n; ++i)
      if (abs(A(i, k)) > abs(A(pivot, k))) pivot = i;
    if (!(abs(A(pivot, k)) > 0) || !isfinite(A(pivot, k))) return false;
    if (pivot != k) {
      for (Index j = k; j < n; ++j) std::swap(A(k, j), A(pivot, j));
      std::swap(b[k], b[pivot]);
    }
    const auto inverse = 1 / A(k, k);
    for (Index i = k + 1; i < n; ++i) {
      const auto l = A(i, k) * inverse;
      A(i, k) = l;
      if (l == 0) continue;
      for (Index j = k + 1; j < n; ++j) A(i, j) -= l * A(k, j);
      b[i] -= l * b[k];
    }
  }
  for (Index i = n - 1; i >= 0; --i) {
    auto s = b[i];
    for (Index j = i + 1; j < n; ++j) s -= A(i, j) * b[j];
    b[i] = s / A(i, i);
  }
  return true;
}

}  // namespace capstan
