#include "codegen/derived.hpp"

#include <algorithm>
#include <cctype>
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

// `text` as an identifier: its runs of letters, digits and underscores
// joined by `_` (`M(0, 1)`: `M_0_1`; `link[2].body`: `link_2_body`).
std::string identifier(const std::string& text) {
  std::string out;
  bool gap = false;
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      if (gap && !out.empty()) out += '_';
      out += c;
      gap = false;
    } else {
      gap = true;
    }
  }
  return out;
}

// A hoisted entry's field: the model element its block is headed by (the
// first quoted name of the block's comment), then the quantity it is a
// part of (`crankCoupler_M_0_1`); `_b`, `_c`, ... where that is taken.
std::string fieldName(const FunctionBuilder::ValueSite& site, std::set<std::string>& taken) {
  std::string base = identifier(site.target);
  const std::size_t open = site.comment.find('\'');
  const std::size_t close = open == std::string::npos ? open : site.comment.find('\'', open + 1);
  if (close != std::string::npos) base = identifier(site.comment.substr(open + 1, close - open - 1)) + "_" + base;
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "value_" + base;
  std::string name = base;
  for (int k = 1; !taken.insert(name).second; ++k) {
    name = base + "_";
    for (int n = k; n >= 0; n = n / 26 - 1) name.insert(base.size() + 1, 1, static_cast<char>('a' + n % 26));
  }
  return name;
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
  const Expr symbol = derive(e, derivedArray(kHoisted, 0, "parameter-only subexpressions of the functions below"), -1);
  if (site_ >= 0 && symbol.isSymbol() && symbol.node()->name.starts_with("derived_.hoisted[")) {
    auto& sites = hoistedSites_[std::string(symbol.node()->name)];
    const std::pair<std::size_t, std::size_t> here{calls_.size() - 1, static_cast<std::size_t>(site_)};
    if (sites.empty() || sites.back() != here) sites.push_back(here);
  }
  return symbol;
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

void DerivedValues::hoistParameterOnly(std::vector<Expr>& values, const std::vector<FunctionBuilder::ValueSite>& sites) {
  const std::vector<const Node*> order = symbolic::postOrder(values);
  // postOrder() walks the roots in turn, so a node belongs to the first
  // value not yet walked when it comes: what it lifts is named after that
  // value's site.
  calls_.push_back(sites);
  std::size_t owner = 0;
  std::unordered_map<std::uint32_t, bool> walked;
  // By node id: whether it reads parameters only, and its rewritten form
  // (for nodes that read the state).
  std::unordered_map<std::uint32_t, bool> parametric;
  std::unordered_map<std::uint32_t, Expr> rewritten;
  auto isParametric = [&](const Node* n) { return parametric.at(n->id); };
  for (const Node* n : order) {
    site_ = owner < sites.size() ? static_cast<long>(owner) : -1;
    walked[n->id] = true;
    while (owner < values.size() && walked.count(values[owner].id())) ++owner;
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
  for (std::size_t k = 0; k < values.size(); ++k) {
    site_ = k < sites.size() ? static_cast<long>(k) : -1;
    values[k] = isParametric(values[k].node()) ? lift(values[k]) : rewritten.at(values[k].id());
  }
  site_ = -1;
}

std::map<std::string, FunctionBuilder::ValueSite> DerivedValues::namingSites(const json& functions) const {
  // The variants not chosen were hoisted too, and maybe first: a site is
  // taken from the block that reads the entry in the emitted code, matched
  // by function and comment, else by comment (a function renamed after
  // tracing), else by function; else the first site.
  static const std::regex entry(R"(derived_\.hoisted\[\d+\])");
  std::map<std::string, FunctionBuilder::ValueSite> out;
  auto visit = [&](const std::string& function, const json& blocks) {
    for (const json& block : blocks) {
      const std::string code = block.at("code").get<std::string>(), comment = block.at("comment").get<std::string>();
      for (std::sregex_iterator m(code.begin(), code.end(), entry), end; m != end; ++m) {
        const std::string target = m->str();
        const auto recorded = hoistedSites_.find(target);
        if (out.count(target) || recorded == hoistedSites_.end() || recorded->second.empty()) continue;
        const FunctionBuilder::ValueSite* best = nullptr;
        int rank = 4;
        for (const auto& [call, k] : recorded->second) {
          const FunctionBuilder::ValueSite& s = calls_.at(call).at(k);
          const int r = s.comment == comment ? (s.function == function ? 0 : 1) : s.function == function ? 2 : 3;
          if (r < rank) {
            best = &s;
            rank = r;
          }
        }
        out.emplace(target, *best);
      }
    }
  };
  for (const json& f : functions) {
    const std::string name = f.at("name").get<std::string>();
    if (f.contains("blocks")) visit(name, f["blocks"]);
    if (f.contains("parts"))
      for (const json& part : f["parts"]) visit(name, part.at("blocks"));
  }
  return out;
}

json DerivedValues::finish(json& functions) {
  // Only what the emitted functions read is cached (the variants not
  // chosen were traced and hoisted too).
  // Every entry `derived_.NAME[k]` the emitted functions name, found in one
  // pass over each function's text (a search per entry would be quadratic:
  // a 300-link chain has thousands of entries and 170 MB of code).
  std::set<std::string> mentioned;
  const auto identifierChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (json& f : functions) {
    const std::string text = f.dump();
    constexpr std::string_view kPrefix = "derived_.";
    bool reads = false;
    for (std::size_t at = text.find(kPrefix); at != std::string::npos; at = text.find(kPrefix, at + 1)) {
      reads = true;
      if (at > 0 && identifierChar(text[at - 1])) continue;
      std::size_t end = at + kPrefix.size();
      while (end < text.size() && identifierChar(text[end])) ++end;
      if (end < text.size() && text[end] == '[') {
        const std::size_t close = text.find(']', end);
        if (close != std::string::npos) end = close + 1;
      }
      mentioned.insert(text.substr(at, end - at));
    }
    if (reads)
      f["opening"].insert(f["opening"].begin(), "refreshDerived();  // the parameter-only values, if params changed");
  }
  // Read by the emitted code, or by a value kept (hoisted values read the
  // parameter stage's entries), to a fixed point.
  std::set<std::string> read;
  for (bool grew = true; grew;) {
    grew = false;
    for (const DerivedArray& a : derived_) {
      for (const Assignment& v : a.values) {
        if (read.count(v.target) || !mentioned.count(v.target)) continue;
        read.insert(v.target);
        grew = true;
        const Expr roots[] = {v.value};
        for (const Node* n : symbolic::postOrder(roots)) {
          if (n->kind == Kind::Symbol && n->name.starts_with("derived_.")) mentioned.emplace(n->name);
        }
      }
    }
  }
  for (DerivedArray& a : derived_) {
    std::erase_if(a.values, [&](const Assignment& v) { return !read.count(v.target); });
  }
  std::erase_if(derived_, [](const DerivedArray& a) { return a.values.empty(); });
  // The hoisted entries kept, each a field named after its site.
  std::vector<json> named;  // the IR's entries of the hoisted fields
  if (auto it = std::find_if(derived_.begin(), derived_.end(), [](const DerivedArray& a) { return a.name == kHoisted; });
      it != derived_.end()) {
    std::set<std::string> taken;
    for (const DerivedArray& a : derived_) taken.insert(a.name);
    std::map<std::string, std::string> renamed;
    const std::map<std::string, FunctionBuilder::ValueSite> sites = namingSites(functions);
    for (Assignment& v : it->values) {
      const auto site = sites.find(v.target);
      const FunctionBuilder::ValueSite where =
          site != sites.end() ? site->second : FunctionBuilder::ValueSite{"", "", "value"};
      const std::string field = fieldName(where, taken);
      std::string comment = "part of " + where.target;
      if (!where.function.empty()) comment += " in " + where.function;
      if (!where.comment.empty()) comment += ": " + where.comment;
      named.push_back({{"name", field}, {"size", 1}, {"comment", comment}, {"scalar", true}});
      renamed[v.target] = "derived_." + field;
      v.target = "derived_." + field;
    }
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
  // The parameters each call of a shared step reads (codegen/steps.hpp),
  // computed once per change of params, after every entry they read (so
  // last).
  std::vector<json> sites;
  for (json& f : functions) {
    if (!f.contains("parameter_sites")) continue;
    for (const json& site : f["parameter_sites"]) {
      const std::string name = site.at("name");
      const std::vector<std::string> entries = site.at("entries");
      DerivedArray a{name, static_cast<int>(entries.size()), site.at("comment"), {}};
      for (std::size_t k = 0; k < entries.size(); ++k)
        a.values.push_back({"derived_." + name + "[" + std::to_string(k) + "]", Expr::symbol(entries[k])});
      sites.push_back({{"name", a.name}, {"size", a.size}, {"comment", a.comment}, {"scalar", false}});
      derived_.push_back(std::move(a));
    }
    f.erase("parameter_sites");
  }
  json ir = json::array();
  if (derived_.empty()) return ir;
  FunctionBuilder fn("updateDerived", "void", "",
                     {"Recomputes the parameter-only values (Derived) from params; every evaluation",
                      "calls it through refreshDerived() when params changed, so there is no need to."});
  for (DerivedArray& a : derived_) fn.block(a.comment, a.values);
  fn.closing("derivedFor_ = params;");
  fn.closing("derivedValid_ = true;");
  functions.push_back(fn.finish());
  // The IR's entries: the arrays (the call sites' last), then the
  // hoisted fields.
  for (std::size_t k = 0; k + sites.size() < derived_.size(); ++k) {
    const DerivedArray& a = derived_[k];
    if (a.name != kHoisted) ir.push_back({{"name", a.name}, {"size", a.size}, {"comment", a.comment}, {"scalar", false}});
  }
  for (json& entry : named) ir.push_back(std::move(entry));
  for (json& entry : sites) ir.push_back(std::move(entry));
  return ir;
}

}  // namespace capstan::codegen
