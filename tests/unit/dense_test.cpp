// dense.hpp's factorizations against Eigen's (the reference they replace in
// the constraint solver): Cholesky and the triangular solves on random
// positive definite matrices, and the pivoted QR's rank, R and minimum-norm
// solutions on random matrices of known rank, fixed and dynamic sizes.
#include <capstan/dense.hpp>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/QR>
#include <Eigen/SVD>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

struct Random {
  std::mt19937 engine{20261126};
  MatrixXd matrix(int rows, int cols) {
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    MatrixXd A(rows, cols);
    for (int j = 0; j < cols; ++j)
      for (int i = 0; i < rows; ++i) A(i, j) = d(engine);
    return A;
  }
};

double relative(const MatrixXd& a, const MatrixXd& b) { return (a - b).norm() / std::max(1.0, b.norm()); }

TEST_CASE("cholesky and the triangular solves agree with Eigen's LLT") {
  Random rng;
  for (int n : {1, 2, 5, 12, 30}) {
    CAPTURE(n);
    const MatrixXd X = rng.matrix(n, n);
    const MatrixXd A = X * X.transpose() + 0.1 * MatrixXd::Identity(n, n);
    MatrixXd L = A;
    REQUIRE(capstan::dense::cholesky(L));
    const MatrixXd reference = A.llt().matrixL();
    CHECK(relative(MatrixXd(L.triangularView<Eigen::Lower>()), reference) < 1e-13);

    const VectorXd b = rng.matrix(n, 1);
    VectorXd x = b;
    capstan::dense::solveLower(L, x);
    CHECK(relative(reference * x, b) < 1e-13);
    x = b;
    capstan::dense::solveLowerTransposed(L, x);
    CHECK(relative(reference.transpose() * x, b) < 1e-13);
    x = b;
    capstan::dense::multiplyLowerTransposed(L, x);
    CHECK(relative(x, reference.transpose() * b) < 1e-13);
    MatrixXd B = rng.matrix(n, 3), X3 = B;
    capstan::dense::solveLowerColumns(L, X3);
    CHECK(relative(reference * X3, B) < 1e-13);
  }
}

TEST_CASE("cholesky refuses a matrix that is not positive definite") {
  Eigen::Matrix2d A;
  A << 1.0, 2.0, 2.0, 1.0;  // eigenvalues 3 and -1
  CHECK_FALSE(capstan::dense::cholesky(A));
  Eigen::Matrix2d nan = Eigen::Matrix2d::Constant(std::nan(""));
  CHECK_FALSE(capstan::dense::cholesky(nan));
}

TEST_CASE("pivoted QR: rank, A P = Q R, and the minimum-norm solution of A^T z = b") {
  Random rng;
  struct Shape {
    int n, m, rank;
  };
  for (Shape s : {Shape{6, 3, 3}, Shape{6, 6, 6}, Shape{8, 5, 3}, Shape{4, 7, 4}, Shape{12, 9, 6}, Shape{3, 3, 1}}) {
    CAPTURE(s.n);
    CAPTURE(s.m);
    CAPTURE(s.rank);
    const MatrixXd A = rng.matrix(s.n, s.rank) * rng.matrix(s.rank, s.m);  // n x m of rank `rank`
    capstan::dense::PivotedQR<MatrixXd> qr;
    qr.compute(A, 1e-10);
    CHECK(qr.rank() == s.rank);

    // Q R = A P, column by column: Q applied to R's columns.
    const MatrixXd R = qr.matrixQR().triangularView<Eigen::Upper>();
    for (int j = 0; j < s.m; ++j) {
      VectorXd column = R.col(j);
      qr.applyQ(column);
      CHECK(relative(column, A.col(qr.permutation(j))) < 1e-12);
      VectorXd back = column;
      qr.applyQTransposed(back);
      CHECK(relative(back, R.col(j)) < 1e-12);
    }
    // |R_00| >= |R_11| >= ... over the rank.
    for (int i = 1; i < qr.rank(); ++i) CHECK(std::abs(R(i, i)) <= std::abs(R(i - 1, i - 1)) * (1 + 1e-12));

    // A consistent right-hand side b = A^T z0: the solution is the
    // pseudo-inverse's, which has the least norm.
    const VectorXd b = A.transpose() * rng.matrix(s.n, 1);
    VectorXd z(s.n);
    qr.solveTransposedMinimumNorm(b, z);
    CHECK(relative(A.transpose() * z, b) < 1e-10);
    const VectorXd reference = A.transpose().completeOrthogonalDecomposition().pseudoInverse() * b;
    CHECK(relative(z, reference) < 1e-9);
  }
}

TEST_CASE("pivoted QR of fixed-size matrices and of zero") {
  Random rng;
  const Eigen::Matrix<double, 5, 2> A = rng.matrix(5, 2);
  capstan::dense::PivotedQR<Eigen::Matrix<double, 5, 2>> qr;
  qr.compute(A, 1e-12);
  CHECK(qr.rank() == 2);
  Eigen::Matrix<double, 5, 1> z;
  const Eigen::Vector2d b(0.3, -0.7);
  qr.solveTransposedMinimumNorm(b, z);
  CHECK((A.transpose() * z - b).norm() < 1e-13);

  capstan::dense::PivotedQR<Eigen::Matrix3d> zero;
  zero.compute(Eigen::Matrix3d::Zero(), 1e-12);
  CHECK(zero.rank() == 0);
  Eigen::Vector3d y(1, 2, 3), x = y;
  zero.applyQ(x);
  CHECK(x == y);
}

}  // namespace
