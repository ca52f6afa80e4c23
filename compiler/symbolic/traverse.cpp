#include "symbolic/traverse.hpp"

#include <cstdint>
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

}  // namespace capstan::symbolic
