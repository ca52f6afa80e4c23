// Walks over expression DAGs without recursion (traced DAGs can be deep).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "symbolic/expr.hpp"

namespace capstan::symbolic {

// Every node reachable from `roots`, each once, children before parents, in
// a deterministic order (depth first, arguments left to right, roots in
// order). Nodes for which `stop` returns true are listed but not entered.
std::vector<const Node*> postOrder(std::span<const Expr> roots,
                                   const std::function<bool(const Node*)>& stop = {});

}  // namespace capstan::symbolic
