// Node storage: a bump arena for nodes and their argument arrays, and an
// open-addressing hash table (linear probing, power-of-two capacity) that
// interns them. Hashes are structural (computed from the children's hashes,
// never from addresses or ids), so they also serve as a canonical order.
#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <vector>

#include "symbolic/expr.hpp"

namespace capstan::symbolic {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 29;
  return h;
}

std::uint64_t bitsOf(double v) {
  if (v == 0.0) v = 0.0;  // -0 and +0 intern together
  return std::bit_cast<std::uint64_t>(v);
}

std::uint64_t hashKey(const Pool::Key& k) {
  std::uint64_t h = mix(static_cast<std::uint64_t>(k.kind) << 8 | static_cast<std::uint64_t>(k.fn),
                        bitsOf(k.value));
  h = mix(h, k.size);
  for (std::uint32_t i = 0; i < k.size; ++i) {
    h = mix(h, k.args[i]->hash);  // structural: independent of creation order
    if (k.coeffs) h = mix(h, bitsOf(k.coeffs[i]));
  }
  for (char c : k.name) h = mix(h, static_cast<unsigned char>(c));
  return h;
}

bool matches(const Node* n, const Pool::Key& k, std::uint64_t hash) {
  if (n->hash != hash || n->kind != k.kind || n->fn != k.fn || n->size != k.size) return false;
  if (bitsOf(n->value) != bitsOf(k.value) || n->name != k.name) return false;
  for (std::uint32_t i = 0; i < k.size; ++i) {
    if (n->args[i] != k.args[i]) return false;
    if (k.coeffs && bitsOf(n->coeffs[i]) != bitsOf(k.coeffs[i])) return false;
  }
  return true;
}

// Allocates 8-byte aligned storage in large blocks; frees all at once.
class Arena {
 public:
  void* allocate(std::size_t bytes) {
    bytes = (bytes + 7) & ~std::size_t{7};
    if (bytes > left_) {
      std::size_t block = bytes > kBlock / 4 ? bytes : kBlock;
      blocks_.push_back(std::make_unique<std::uint64_t[]>(block / 8));
      next_ = reinterpret_cast<std::byte*>(blocks_.back().get());
      left_ = block;
      total_ += block;
      if (block != kBlock) {  // an oversized request gets a block of its own
        left_ = 0;
        return next_;
      }
    }
    void* p = next_;
    next_ += bytes;
    left_ -= bytes;
    return p;
  }
  std::size_t bytes() const { return total_; }

 private:
  static constexpr std::size_t kBlock = 1 << 20;
  std::vector<std::unique_ptr<std::uint64_t[]>> blocks_;
  std::byte* next_ = nullptr;
  std::size_t left_ = 0;
  std::size_t total_ = 0;
};

Pool& defaultPool() {
  static Pool pool;
  return pool;
}

thread_local Pool* currentPool = nullptr;

}  // namespace

struct Pool::Impl {
  Arena arena;
  std::vector<const Node*> table = std::vector<const Node*>(1024, nullptr);
  std::uint32_t count = 0;

  std::size_t slotFor(const Key& key, std::uint64_t hash) const {
    std::size_t mask = table.size() - 1;
    std::size_t i = hash & mask;
    while (table[i] && !matches(table[i], key, hash)) i = (i + 1) & mask;
    return i;
  }

  void grow() {
    std::vector<const Node*> bigger(table.size() * 2, nullptr);
    std::size_t mask = bigger.size() - 1;
    for (const Node* n : table) {
      if (!n) continue;
      std::size_t i = n->hash & mask;
      while (bigger[i]) i = (i + 1) & mask;
      bigger[i] = n;
    }
    table.swap(bigger);
  }
};

Pool::Pool() : impl_(new Impl) {
  zero_ = intern(Key{Kind::Constant, Fn::None, 0.0, nullptr, nullptr, 0, {}});
  one_ = intern(Key{Kind::Constant, Fn::None, 1.0, nullptr, nullptr, 0, {}});
}

Pool::~Pool() { delete impl_; }

Pool& Pool::current() { return currentPool ? *currentPool : defaultPool(); }

std::size_t Pool::size() const { return impl_->count; }

std::size_t Pool::bytes() const {
  return impl_->arena.bytes() + impl_->table.size() * sizeof(const Node*);
}

const Node* Pool::find(const Key& key) const {
  std::uint64_t hash = hashKey(key);
  return impl_->table[impl_->slotFor(key, hash)];
}

const Node* Pool::intern(const Key& key) {
  std::uint64_t hash = hashKey(key);
  std::size_t slot = impl_->slotFor(key, hash);
  if (const Node* found = impl_->table[slot]) return found;

  Arena& arena = impl_->arena;
  auto* node = static_cast<Node*>(arena.allocate(sizeof(Node)));
  const Node** args = nullptr;
  double* coeffs = nullptr;
  if (key.size) {
    args = static_cast<const Node**>(arena.allocate(key.size * sizeof(const Node*)));
    std::memcpy(args, key.args, key.size * sizeof(const Node*));
  }
  if (key.coeffs) {
    coeffs = static_cast<double*>(arena.allocate(key.size * sizeof(double)));
    std::memcpy(coeffs, key.coeffs, key.size * sizeof(double));
  }
  std::string_view name;
  if (!key.name.empty()) {
    auto* chars = static_cast<char*>(arena.allocate(key.name.size()));
    std::memcpy(chars, key.name.data(), key.name.size());
    name = std::string_view(chars, key.name.size());
  }
  double value = key.value == 0.0 ? 0.0 : key.value;
  std::uint32_t height = 0;
  for (std::uint32_t i = 0; i < key.size; ++i) height = std::max(height, key.args[i]->height + 1);
  new (node) Node{key.kind, key.fn, key.size, impl_->count++, height, hash, value, args, coeffs, name};

  impl_->table[slot] = node;
  if (impl_->count * 2 > impl_->table.size()) impl_->grow();
  return node;
}

PoolScope::PoolScope(Pool& pool) : previous_(currentPool) { currentPool = &pool; }

PoolScope::~PoolScope() { currentPool = previous_; }

}  // namespace capstan::symbolic
