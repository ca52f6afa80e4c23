// Small dense factorizations for the constraint solver
// (constraint_solver.hpp): Cholesky, triangular solves, and Householder QR
// with column pivoting. Written as plain loops over any Eigen matrix type
// (fixed-size in generated code, dynamic for the interpreter) for two
// reasons: they allocate nothing after the first call, and they cost the
// compiler little. Eigen's own decompositions instantiate many expression
// and kernel templates per fixed size; a driver that used LLT, ColPivHouseholderQR and
// CompleteOrthogonalDecomposition for one four-bar took 34 s of g++ time at
// -O0, ten times the rest of it. The sizes here are a model's dofs and
// constraint rows (tens), where blocked algorithms buy nothing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace capstan::dense {

// Eigen's index type.
using Index = std::ptrdiff_t;

// A = L L^T for symmetric positive definite A: L overwrites A's lower
// triangle (the strict upper triangle is left as it was). False if a pivot
// is not positive (A not positive definite to working precision).
template <class Matrix>
bool cholesky(Matrix& A) {
  const auto n = A.rows();
  for (Index j = 0; j < n; ++j) {
    double d = A(j, j);
    for (Index k = 0; k < j; ++k) d -= A(j, k) * A(j, k);
    if (!(d > 0.0)) return false;
    d = std::sqrt(d);
    A(j, j) = d;
    for (auto i = j + 1; i < n; ++i) {
      double s = A(i, j);
      for (Index k = 0; k < j; ++k) s -= A(i, k) * A(j, k);
      A(i, j) = s / d;
    }
  }
  return true;
}

// x <- L^-1 x, L the lower triangle of `L` (n x n); x any vector of length n.
template <class Matrix, class Vector>
void solveLower(const Matrix& L, Vector& x) {
  const auto n = L.rows();
  for (Index i = 0; i < n; ++i) {
    double s = x[i];
    for (Index k = 0; k < i; ++k) s -= L(i, k) * x[k];
    x[i] = s / L(i, i);
  }
}

// X <- L^-1 X, column by column (X: n x any).
template <class Matrix, class Columns>
void solveLowerColumns(const Matrix& L, Columns& X) {
  for (Index j = 0; j < X.cols(); ++j) {
    for (Index i = 0; i < L.rows(); ++i) {
      double s = X(i, j);
      for (Index k = 0; k < i; ++k) s -= L(i, k) * X(k, j);
      X(i, j) = s / L(i, i);
    }
  }
}

// x <- L^-T x.
template <class Matrix, class Vector>
void solveLowerTransposed(const Matrix& L, Vector& x) {
  for (auto i = L.rows() - 1; i >= 0; --i) {
    double s = x[i];
    for (auto k = i + 1; k < L.rows(); ++k) s -= L(k, i) * x[k];
    x[i] = s / L(i, i);
  }
}

// y <- L^T y (lower triangle of L).
template <class Matrix, class Vector>
void multiplyLowerTransposed(const Matrix& L, Vector& y) {
  for (Index i = 0; i < L.rows(); ++i) {
    double s = 0.0;
    for (auto k = i; k < L.rows(); ++k) s += L(k, i) * y[k];
    y[i] = s;
  }
}

// Householder QR with column pivoting (Businger and Golub) of an n x m
// matrix A: A P = Q R, Q = H_0 H_1 ... H_{k-1} (n x n orthogonal, k =
// min(n, m)), R upper triangular with |R_00| >= |R_11| >= ..., P a
// permutation. rank() counts the pivots above threshold * |R_00|, so the
// first rank() columns of A P are independent and span its range. Matrix
// is A's type; after compute(), R is its upper triangle, the Householder
// vectors v_i (v_i[i] = 1, implied) are below its diagonal.
template <class Matrix>
class PivotedQR {
 public:
  void compute(const Matrix& A, double threshold) {
    qr_ = A;
    const auto n = qr_.rows(), m = qr_.cols();
    const auto k = std::min(n, m);
    permutation_.resize(m);
    tau_.resize(k);
    for (Index j = 0; j < m; ++j) permutation_[j] = static_cast<int>(j);
    rank_ = 0;
    double first = 0.0;
    bool dependent = false;
    for (Index i = 0; i < k; ++i) {
      // The remaining column of largest norm (below row i), exactly.
      Index pivot = i;
      double largest = -1.0;
      for (auto j = i; j < m; ++j) {
        double s = 0.0;
        for (auto r = i; r < n; ++r) s += qr_(r, j) * qr_(r, j);
        if (s > largest) largest = s, pivot = j;
      }
      if (pivot != i) {
        for (Index r = 0; r < n; ++r) std::swap(qr_(r, i), qr_(r, pivot));
        std::swap(permutation_[i], permutation_[pivot]);
      }
      // The reflection H = I - tau v v^T (v_i = 1) with H x = alpha e_i.
      const double norm = std::sqrt(largest);
      const double x0 = qr_(i, i);
      if (norm == 0.0) {
        tau_[i] = 0.0;
      } else {
        const double alpha = x0 > 0 ? -norm : norm;
        const double v0 = x0 - alpha;
        for (auto r = i + 1; r < n; ++r) qr_(r, i) /= v0;
        tau_[i] = (alpha - x0) / alpha;
        qr_(i, i) = alpha;
        for (auto j = i + 1; j < m; ++j) {
          double s = qr_(i, j);
          for (auto r = i + 1; r < n; ++r) s += qr_(r, i) * qr_(r, j);
          s *= tau_[i];
          qr_(i, j) -= s;
          for (auto r = i + 1; r < n; ++r) qr_(r, j) -= s * qr_(r, i);
        }
      }
      if (i == 0) first = std::abs(qr_(0, 0));
      if (!dependent && std::abs(qr_(i, i)) > threshold * first && first > 0.0) {
        ++rank_;
      } else {
        dependent = true;
      }
    }
  }

  int rank() const { return rank_; }
  // P: column j of A P is column permutation(j) of A.
  int permutation(int j) const { return permutation_[static_cast<std::size_t>(j)]; }
  const Matrix& matrixQR() const { return qr_; }

  // y <- Q^T y (length n).
  template <class Vector>
  void applyQTransposed(Vector& y) const {
    for (Index i = 0; i < static_cast<Index>(tau_.size()); ++i) reflect(i, y);
  }
  // y <- Q y.
  template <class Vector>
  void applyQ(Vector& y) const {
    for (auto i = static_cast<Index>(tau_.size()) - 1; i >= 0; --i) reflect(i, y);
  }
  // The minimum-norm z with A^T z = b for A^T in the range of this
  // factorization's rank (b consistent; otherwise its first rank() pivoted
  // equations are met): z = Q_k R11^-T (P^T b)_k. b has A's column count,
  // z its row count.
  template <class Rhs, class Solution>
  void solveTransposedMinimumNorm(const Rhs& b, Solution& z) const {
    for (Index i = 0; i < z.size(); ++i) z[i] = i < rank_ ? b[permutation_[static_cast<std::size_t>(i)]] : 0.0;
    solveRTransposed(z, rank_);
    applyQ(z);
  }

  // x[0..r) <- R11^-1 x[0..r), R11 the leading r x r block of R.
  template <class Vector>
  void solveR(Vector& x, int r) const {
    for (int i = r - 1; i >= 0; --i) {
      double s = x[i];
      for (int k = i + 1; k < r; ++k) s -= qr_(i, k) * x[k];
      x[i] = s / qr_(i, i);
    }
  }
  // x[0..r) <- R11^-T x[0..r).
  template <class Vector>
  void solveRTransposed(Vector& x, int r) const {
    for (int i = 0; i < r; ++i) {
      double s = x[i];
      for (int k = 0; k < i; ++k) s -= qr_(k, i) * x[k];
      x[i] = s / qr_(i, i);
    }
  }

 private:
  template <class Vector>
  void reflect(Index i, Vector& y) const {
    if (tau_[static_cast<std::size_t>(i)] == 0.0) return;
    double s = y[i];
    for (auto r = i + 1; r < qr_.rows(); ++r) s += qr_(r, i) * y[r];
    s *= tau_[static_cast<std::size_t>(i)];
    y[i] -= s;
    for (auto r = i + 1; r < qr_.rows(); ++r) y[r] -= s * qr_(r, i);
  }

  Matrix qr_;
  std::vector<int> permutation_;
  std::vector<double> tau_;
  int rank_ = 0;
};

}  // namespace capstan::dense
