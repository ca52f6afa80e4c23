// Exact symbolic derivatives. Results are built with the same simplifying
// constructors, so derivatives of traced code stay shared and sparse.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include <Eigen/Core>

#include "symbolic/expr.hpp"

namespace capstan::symbolic {

// How to differentiate through an opaque call (Kind::Call, one result):
// given the call and the differentials of its arguments by the variable
// (one per argument, in order), the differential of its result, or nullopt
// where the call has no known derivative. Installed for a scope, on this
// thread, like the pool (code generation installs one for external
// functions with Modelica's derivative annotation); without one, a call
// whose arguments vary is refused (std::invalid_argument).
using CallDerivative = std::function<std::optional<Expr>(const Node* call, std::span<const Expr> dargs)>;

class CallDerivativeScope {
 public:
  explicit CallDerivativeScope(CallDerivative derivative);
  ~CallDerivativeScope();
  CallDerivativeScope(const CallDerivativeScope&) = delete;
  CallDerivativeScope& operator=(const CallDerivativeScope&) = delete;
  // The innermost scope's, or null.
  static const CallDerivative* current();

 private:
  CallDerivative derivative_;
  const CallDerivative* previous_;
};

// d(.)/d(variable), memoized over the DAG: differentiating many expressions
// that share subexpressions with one Differentiator does each node once.
// An opaque call (Kind::Call) whose arguments depend on the variable has no
// known derivative unless the current CallDerivativeScope gives one:
// std::invalid_argument naming the function.
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

// d f / d variables[j], every j, by reverse accumulation: one sweep over
// f's DAG from f down, each node passing its adjoint (d f / d node) times
// its local partials to its arguments. For one function of many variables
// this costs a small multiple of f, where differentiating by each variable
// in turn (jacobian) repeats the work below each variable: a chain's
// kinetic energy depends on each joint's angle through every body below
// it, so n forward passes are O(n^2) and one reverse sweep O(n). Opaque
// calls as for Differentiator (the hook asked once per varying argument,
// with that argument's differential 1 and the others' 0).
std::vector<Expr> gradient(const Expr& f, std::span<const Expr> variables);

// J(i, j) = d f[i] / d variables[j].
Eigen::Matrix<Expr, Eigen::Dynamic, Eigen::Dynamic> jacobian(std::span<const Expr> f,
                                                              std::span<const Expr> variables);

}  // namespace capstan::symbolic
