// Exact symbolic derivatives. Results are built with the same simplifying
// constructors, so derivatives of traced code stay shared and sparse.
#pragma once

#include <span>
#include <vector>

#include <Eigen/Core>

#include "symbolic/expr.hpp"

namespace capstan::symbolic {

// d(.)/d(variable), memoized over the DAG: differentiating many expressions
// that share subexpressions with one Differentiator does each node once.
// An opaque call (Kind::Call) whose arguments depend on the variable has no
// known derivative: std::invalid_argument naming the function.
class Differentiator {
 public:
  explicit Differentiator(const Expr& variable);  // variable must be a symbol

  Expr operator()(const Expr& f);
  const Expr& variable() const { return variable_; }

 private:
  Expr derivative(const Node* node);

  Expr variable_;
  std::vector<const Node*> memo_;  // by node id; null where not yet computed
};

Expr diff(const Expr& f, const Expr& variable);

// J(i, j) = d f[i] / d variables[j].
Eigen::Matrix<Expr, Eigen::Dynamic, Eigen::Dynamic> jacobian(std::span<const Expr> f,
                                                              std::span<const Expr> variables);

}  // namespace capstan::symbolic
