#pragma once
// From the raw coordinates q to the tangent space of the speeds u.
//
// qdot = N(q) u. A derivative by u_j along q + eps N(q) e_j (the generated
// derivatives' dudot_dq) becomes one by the raw q (a quaternion's four
// numbers) through N's pseudo-inverse: a change dq moves the state by
// du = N^+ dq, and a quaternion's scaling direction, which N never
// produces, by nothing (the dynamics read a quaternion through its
// rotation). N's columns are orthogonal (one joint's quaternion columns
// are 1/2 Q(q) e_k; other joints' are unit vectors), so
//   row j of N^+ = (N e_j)^T / |N e_j|^2.

#include <Eigen/Core>

namespace capstan {

// N^+ (nu x nq) into pinvN, with columnOfN(j, out) writing N e_j (nq) into
// `out` (a model's qdot(q, e_j, out)).
template <class ColumnOfN, class Column, class Matrix>
void tangentFromRaw(int nu, ColumnOfN&& columnOfN, Column& column, Matrix& pinvN) {
  for (int j = 0; j < nu; ++j) {
    columnOfN(j, column);
    pinvN.row(j) = column.transpose() / column.squaredNorm();
  }
}

}  // namespace capstan
