// Walks over expression DAGs without recursion (traced DAGs can be deep).
#pragma once

#include <functional>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "symbolic/expr.hpp"

namespace capstan::symbolic {

// Every node reachable from `roots`, each once, children before parents, in
// a deterministic order (depth first, arguments left to right, roots in
// order). Nodes for which `stop` returns true are listed but not entered.
std::vector<const Node*> postOrder(std::span<const Expr> roots,
                                   const std::function<bool(const Node*)>& stop = {});

// Per root, the positions in `symbols` of the symbols it reaches (its
// structural dependencies), ascending: one walk over the DAG, a bit set
// per node. The expression `x - x` is zero before it is built, so a
// listed dependency is one the expression's structure does not cancel.
std::vector<std::vector<int>> symbolDependencies(std::span<const Expr> roots, std::span<const Expr> symbols);

// The node `node` with its arguments replaced by `args` (as many as it has),
// built with the simplifying constructors: an Add keeps its constant and
// coefficients, a Mul its exponents, a Func its function. Rewrites (the
// parameter hoisting of code generation) call it bottom-up over postOrder.
Expr rebuild(const Node* node, std::span<const Expr> args);

// Each of `roots` with the nodes that are keys of `values` (node ids)
// replaced by their values, rebuilt bottom-up with rebuild().
std::vector<Expr> substitute(std::span<const Expr> roots, const std::unordered_map<std::uint32_t, Expr>& values);

}  // namespace capstan::symbolic
