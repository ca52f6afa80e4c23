#include "codegen/derived.hpp"

#include <algorithm>
#include <regex>
#include <set>

#include "codegen/function_builder.hpp"
#include "symbolic/traverse.hpp"

namespace capstan::codegen {

using json = nlohmann::json;
using symbolic::Assignment;
using symbolic::Expr;
using symbolic::Kind;
using symbolic::Node;

namespace {

// The array of hoistParameterOnly()'s entries.
constexpr const char* kHoisted = "hoisted";

bool cheap(const Expr& e) {
  const Node* n = e.node();
  return e.isConstant() || e.isSymbol() || (n->isScaled() && n->args[0]->kind == Kind::Symbol);
}

}  // namespace

Expr DerivedValues::derive(const Expr& e, std::size_t array, int element) {
  if (cheap(e)) return e;
  if (auto it = derivedSymbol_.find(e.id()); it != derivedSymbol_.end()) return it->second;
  DerivedArray& a = derived_.at(array);
  if (element < 0) element = a.size++;
  const std::string target = "derived_." + index(a.name, element);
  const Expr symbol = Expr::symbol(target);
  derivedSymbol_.emplace(e.id(), symbol);
  a.values.push_back({target, e});
  return symbol;
}

std::size_t DerivedValues::derivedArray(const std::string& name, int size, const std::string& comment) {
  auto [it, added] = derivedIndex_.emplace(name, derived_.size());
  if (added) derived_.push_back({name, size, comment, {}});
  return it->second;
}

Expr DerivedValues::lift(const Expr& e) {
  if (cheap(e) || e.node()->isBoolean()) return e;
  return derive(e, derivedArray(kHoisted, 0, "parameter-only subexpressions of the functions below"), -1);
}

void DerivedValues::hoist(local::Data<Expr>& data) {
  for (const JointLayout& j : layout_.joints) {
    const auto b = static_cast<std::size_t>(j.body);
    const BodyLayout& body = layout_.bodies.at(b);
    const std::string who = cite_.joint(j);
    const std::size_t X =
        derivedArray("X_PF" + body.ident, 12, "X_PF (R row-major, then p) of " + who + ": F in the parent's joint frame");
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) data.X_PF[b].R(r, c) = derive(data.X_PF[b].R(r, c), X, 3 * r + c);
    for (int k = 0; k < 3; ++k) data.X_PF[b].p[k] = derive(data.X_PF[b].p[k], X, 9 + k);
    const std::size_t I =
        derivedArray("I_K" + body.ident, 13, "I_K (mass, h, I row-major) of " + who + ": spatial inertia about K");
    SpatialInertia<Expr>& inertia = data.I_K[b];
    inertia.mass = derive(inertia.mass, I, 0);
    for (int k = 0; k < 3; ++k) inertia.h[k] = derive(inertia.h[k], I, 1 + k);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) inertia.I_P(r, c) = derive(inertia.I_P(r, c), I, 4 + 3 * r + c);
  }
}

void DerivedValues::hoistParameterOnly(std::vector<Expr>& values) {
  const std::vector<const Node*> order = symbolic::postOrder(values);
  // By node id: whether it reads parameters only, and its rewritten form
  // (for nodes that read the state).
  std::unordered_map<std::uint32_t, bool> parametric;
  std::unordered_map<std::uint32_t, Expr> rewritten;
  auto isParametric = [&](const Node* n) { return parametric.at(n->id); };
  for (const Node* n : order) {
    bool p = true;
    if (n->kind == Kind::Symbol) {
      p = n->name.starts_with("params.") || n->name.starts_with("derived_.");
    } else {
      for (std::uint32_t i = 0; i < n->size; ++i) p = p && isParametric(n->args[i]);
    }
    parametric[n->id] = p;
    if (p) continue;
    auto arg = [&](std::uint32_t i) {
      const Node* a = n->args[i];
      return isParametric(a) ? lift(Expr(a)) : rewritten.at(a->id);
    };
    Expr result;
    if (n->kind == Kind::Add || n->kind == Kind::Mul) {
      // The parametric operands as one cached value, then the others.
      const bool sum = n->kind == Kind::Add;
      Expr group(sum ? n->value : 1.0), rest(sum ? 0.0 : 1.0);
      for (std::uint32_t i = 0; i < n->size; ++i) {
        const Node* a = n->args[i];
        if (sum) {
          if (isParametric(a)) group += n->coeffs[i] * Expr(a);
          else rest += n->coeffs[i] * rewritten.at(a->id);
        } else {
          const Expr exponent(n->coeffs[i]);
          if (isParametric(a)) group *= pow(Expr(a), exponent);
          else rest *= pow(rewritten.at(a->id), exponent);
        }
      }
      result = sum ? lift(group) + rest : lift(group) * rest;
    } else {
      std::vector<Expr> args;
      for (std::uint32_t i = 0; i < n->size; ++i) args.push_back(arg(i));
      result = symbolic::rebuild(n, args);
    }
    rewritten.emplace(n->id, result);
  }
  for (Expr& v : values) v = isParametric(v.node()) ? lift(v) : rewritten.at(v.id());
}

json DerivedValues::finish(json& functions) {
  // Only what the emitted functions read is cached (the variants not
  // chosen were traced and hoisted too).
  std::string emitted;
  for (json& f : functions) {
    const std::string text = f.dump();
    emitted += text;
    if (text.find("derived_.") == std::string::npos) continue;
    f["opening"].insert(f["opening"].begin(), "refreshDerived();  // the parameter-only values, if params changed");
  }
  // Read by the emitted code, or by a value kept (hoisted values read the
  // parameter stage's entries), to a fixed point.
  std::set<std::string> read;
  for (bool grew = true; grew;) {
    grew = false;
    for (const DerivedArray& a : derived_) {
      for (const Assignment& v : a.values) {
        if (read.count(v.target) || emitted.find(v.target) == std::string::npos) continue;
        read.insert(v.target);
        grew = true;
        const Expr roots[] = {v.value};
        for (const Node* n : symbolic::postOrder(roots)) {
          if (n->kind == Kind::Symbol && n->name.starts_with("derived_.")) emitted += " " + std::string(n->name);
        }
      }
    }
  }
  for (DerivedArray& a : derived_) {
    std::erase_if(a.values, [&](const Assignment& v) { return !read.count(v.target); });
  }
  std::erase_if(derived_, [](const DerivedArray& a) { return a.values.empty(); });
  // The hoisted entries kept, renumbered densely in order.
  if (auto it = std::find_if(derived_.begin(), derived_.end(), [](const DerivedArray& a) { return a.name == kHoisted; });
      it != derived_.end()) {
    std::map<std::string, std::string> renamed;
    for (std::size_t k = 0; k < it->values.size(); ++k) {
      const std::string target = "derived_." + index(kHoisted, static_cast<int>(k));
      renamed[it->values[k].target] = target;
      it->values[k].target = target;
    }
    it->size = static_cast<int>(it->values.size());
    static const std::regex entry(R"(derived_\.hoisted\[\d+\])");
    auto rename = [&](const std::string& text) {
      std::string out;
      std::size_t at = 0;
      for (std::sregex_iterator m(text.begin(), text.end(), entry), end; m != end; ++m) {
        out += text.substr(at, static_cast<std::size_t>(m->position()) - at) + renamed.at(m->str());
        at = static_cast<std::size_t>(m->position() + m->length());
      }
      return out + text.substr(at);
    };
    for (json& f : functions) f = json::parse(rename(f.dump()));
    // The values themselves read other hoisted entries only through the
    // expressions, never by name, so they need no renaming.
  }
  // Hoisted values read the parameter stage's entries: computed last.
  std::stable_partition(derived_.begin(), derived_.end(), [](const DerivedArray& a) { return a.name != kHoisted; });
  json ir = json::array();
  if (derived_.empty()) return ir;
  FunctionBuilder fn("updateDerived", "void", "",
                     {"Recomputes the parameter-only values (Derived) from params; every evaluation",
                      "calls it through refreshDerived() when params changed, so there is no need to."});
  for (DerivedArray& a : derived_) fn.block(a.comment, a.values);
  fn.closing("derivedFor_ = params;");
  fn.closing("derivedValid_ = true;");
  functions.push_back(fn.finish());
  for (const DerivedArray& a : derived_) ir.push_back({{"name", a.name}, {"size", a.size}, {"comment", a.comment}});
  return ir;
}

}  // namespace capstan::codegen
