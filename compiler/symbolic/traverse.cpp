#include "symbolic/traverse.hpp"

#include <cstdint>
#include <stdexcept>
#include <unordered_map>
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

std::vector<std::vector<int>> symbolDependencies(std::span<const Expr> roots, std::span<const Expr> symbols) {
  const std::size_t words = (symbols.size() + 63) / 64;
  std::unordered_map<const Node*, std::size_t> symbol;  // node -> its position in `symbols`
  for (std::size_t k = 0; k < symbols.size(); ++k) symbol.emplace(symbols[k].node(), k);
  std::unordered_map<const Node*, std::size_t> row;  // node -> its bit set's first word in `bits`
  std::vector<std::uint64_t> bits;
  for (const Node* node : postOrder(roots)) {  // arguments first
    const std::size_t at = bits.size();
    bits.resize(at + words, 0);
    row.emplace(node, at);
    if (const auto it = symbol.find(node); it != symbol.end()) bits[at + it->second / 64] |= std::uint64_t{1} << (it->second % 64);
    for (std::uint32_t i = 0; i < node->size; ++i) {
      const std::size_t from = row.at(node->args[i]);
      for (std::size_t w = 0; w < words; ++w) bits[at + w] |= bits[from + w];
    }
  }
  std::vector<std::vector<int>> out;
  for (const Expr& root : roots) {
    std::vector<int> reached;
    const std::size_t at = row.at(root.node());
    for (std::size_t k = 0; k < symbols.size(); ++k)
      if (bits[at + k / 64] >> (k % 64) & 1) reached.push_back(static_cast<int>(k));
    out.push_back(std::move(reached));
  }
  return out;
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

std::vector<Expr> substitute(std::span<const Expr> roots, const std::unordered_map<std::uint32_t, Expr>& values) {
  std::unordered_map<std::uint32_t, Expr> done;
  for (const Node* n : postOrder(roots)) {
    if (const auto it = values.find(n->id); it != values.end()) {
      done.emplace(n->id, it->second);
      continue;
    }
    std::vector<Expr> args;
    bool changed = false;
    for (std::uint32_t i = 0; i < n->size; ++i) {
      args.push_back(done.at(n->args[i]->id));
      changed = changed || args.back().id() != n->args[i]->id;
    }
    done.emplace(n->id, changed ? rebuild(n, args) : Expr(n));
  }
  std::vector<Expr> out;
  for (const Expr& r : roots) out.push_back(done.at(r.id()));
  return out;
}

}  // namespace capstan::symbolic
