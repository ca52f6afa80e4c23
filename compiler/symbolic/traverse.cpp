#include "symbolic/traverse.hpp"

#include <cstdint>
#include <stdexcept>
#include <utility>

namespace capstan::symbolic {

std::vector<const Node*> postOrder(std::span<const Expr> roots,
                                   const std::function<bool(const Node*)>& stop) {
  std::vector<const Node*> order;
  std::vector<std::uint8_t> seen(Pool::current().size(), 0);
  std::vector<std::pair<const Node*, std::uint32_t>> stack;
  for (const Expr& root : roots) {
    if (seen[root.id()]) continue;
    seen[root.id()] = 1;
    stack.push_back({root.node(), 0});
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      bool enter = next == 0 ? !(stop && stop(node)) : true;
      if (enter && next < node->size) {
        const Node* child = node->args[next++];
        if (!seen[child->id]) {
          seen[child->id] = 1;
          stack.push_back({child, 0});
        }
        continue;
      }
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

Expr rebuild(const Node* node, std::span<const Expr> args) {
  if (args.size() != node->size) throw std::invalid_argument("symbolic::rebuild: wrong number of arguments");
  switch (node->kind) {
    case Kind::Constant:
    case Kind::Symbol:
      return Expr(node);
    case Kind::Add: {
      Expr sum(node->value);
      for (std::uint32_t i = 0; i < node->size; ++i) sum += node->coeffs[i] * args[i];
      return sum;
    }
    case Kind::Mul: {
      Expr product(1.0);
      for (std::uint32_t i = 0; i < node->size; ++i) product *= pow(args[i], Expr(node->coeffs[i]));
      return product;
    }
    case Kind::Pow:
      return pow(args[0], args[1]);
    case Kind::Func:
      return apply(node->fn, args[0], node->size > 1 ? args[1] : Expr(), node->size > 2 ? args[2] : Expr());
    case Kind::Call: {
      if (!node->isMultiCall()) return call(node->name, args);
      // The call node itself: that of its first result.
      return Expr(call(node->name, args, node->results())[0].node()->args[0]);
    }
    case Kind::Result:
      return callResult(args[0], static_cast<int>(node->value));
  }
  throw std::logic_error("symbolic::rebuild: unknown node kind");
}

}  // namespace capstan::symbolic
