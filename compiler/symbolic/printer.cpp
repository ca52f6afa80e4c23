#include "symbolic/printer.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <set>
#include <string_view>
#include <unordered_map>
#include <ostream>
#include <vector>

#include "symbolic/traverse.hpp"

namespace capstan::symbolic {
namespace {

// C++ precedence, loosest first.
enum Prec : int {
  kTernary = 0,
  kOr,
  kAnd,
  kEquality,
  kRelational,
  kAdditive,
  kMultiplicative,
  kUnary,
  kPostfix,
};

int absExponent(double e) { return static_cast<int>(std::abs(e)); }

// The node B^e (e >= 2) if the pool holds it, else null: a product with
// the factor B^e spells it by that node's name where it has one, so that
// `q[3]*q[3]` is computed once and `q[3]*q[3]*t4` reads it.
const Node* powerNode(const Node* b, int e) {
  const double exponent = e;
  const Node* const args[1] = {b};
  return Pool::current().find(Pool::Key{Kind::Mul, Fn::None, 0.0, args, &exponent, 1, {}});
}

// One operand of a sum or product as printed: a node and its coefficient
// (Add) or exponent (Mul). A node's operands are its arguments, or, where
// the printer reads two of them as one shared node (block(), "Shared
// pairs"), that node in the first one's place.
struct Operand {
  const Node* node;
  double coef;
};
using Operands = std::vector<Operand>;

Operands argumentsOf(const Node* n) {
  Operands out;
  out.reserve(n->size);
  for (std::uint32_t i = 0; i < n->size; ++i) out.push_back({n->args[i], n->coeffs ? n->coeffs[i] : 1.0});
  return out;
}

// Operations of one node, its operands taken as already computed.
// `inverted(base)`: the base has a shared reciprocal (see reciprocalBases),
// so a product multiplies by it instead of dividing.
using Inverted = std::function<bool(const Node*)>;

OpCount ownOps(const Node* n, const Operands& operands, int maxPower, const Inverted& inverted = {}) {
  OpCount ops;
  switch (n->kind) {
    case Kind::Constant:
    case Kind::Symbol:
      break;
    case Kind::Add:
      if (n->isScaled()) {
        if (n->coeffs[0] != -1.0) ops.muls = 1;
        break;
      }
      ops.adds = operands.size() - 1 + (n->value != 0.0 ? 1 : 0);
      for (const Operand& o : operands) ops.muls += std::abs(o.coef) != 1.0;
      break;
    case Kind::Mul: {
      std::size_t num = 0, den = 0;
      for (const Operand& o : operands) {
        int e = absExponent(o.coef);
        if (e <= maxPower) ops.muls += static_cast<std::size_t>(e - 1);
        else ops.funcs += 1;
        const bool divides = o.coef < 0.0 && !(inverted && inverted(o.node));
        (divides ? den : num) += 1;
      }
      if (num > 1) ops.muls += num - 1;
      if (den > 1) ops.muls += den - 1;
      if (den > 0) ops.divs += 1;
      break;
    }
    case Kind::Pow:
    case Kind::Call:
      ops.funcs = 1;
      break;
    case Kind::Result:  // reads a result of its call
      break;
    case Kind::Func:
      if (n->fn == Fn::Sign) ops.other = 2;  // two comparisons
      else if (n->fn < Fn::Select) ops.funcs = 1;
      else ops.other = 1;
      break;
  }
  return ops;
}

OpCount ownOps(const Node* n, int maxPower, const Inverted& inverted = {}) {
  return ownOps(n, n->kind == Kind::Add || n->kind == Kind::Mul ? argumentsOf(n) : Operands{}, maxPower, inverted);
}

// How many times `parent` spells its operand `o` in generated code.
std::size_t operandUses(const Node* parent, const Operand& o, int maxPower) {
  if (parent->kind == Kind::Mul) {
    int e = absExponent(o.coef);
    return e <= maxPower ? static_cast<std::size_t>(e) : 1;
  }
  if (parent->kind == Kind::Func && parent->fn == Fn::Sign) return 2;
  return 1;
}

// Reciprocal sharing: a base that is a denominator of two or more products
// (the pivots of an unrolled factorization, a shared length) is inverted
// once, `1.0/B`, and the products multiply by it: one division per base
// instead of one per product. Returns, per base id, how many of the
// products among `order` (skipping those `skip` says are already available)
// divide by it.
std::unordered_map<std::uint32_t, std::size_t> denominatorUsers(
    const std::vector<const Node*>& order, const std::function<bool(const Node*)>& skip,
    const std::function<Operands(const Node*)>& operands = argumentsOf) {
  std::unordered_map<std::uint32_t, std::size_t> users;
  for (const Node* n : order) {
    if (n->kind != Kind::Mul || (skip && skip(n))) continue;
    for (const Operand& o : operands(n)) {
      if (o.coef < 0.0 && o.node->kind != Kind::Constant) users[o.node->id] += 1;
    }
  }
  return users;
}

// Shared pairs: a sum of three or more terms (a product of three or more
// factors, counted with their powers) that holds two terms (factors) whose
// sum (product) is a node of the pool reads that node instead, where it is
// computed anyway (in the block, or a temporary or name already) or where
// two or more such sums (products) of the block read it; then it is
// computed once, just before its first reader. The engine merges small
// sums into larger ones (kFlattenLimit), so `a*b*c` and `a*b*d` hold a*b
// twice, and `x + y - z` repeats an `x + y` computed elsewhere: each read
// saves one operation.
struct SharedPair {
  const Node* pair;     // the node the two operands form
  std::uint32_t first;  // the operands' argument indices, first < second
  std::uint32_t second;
  double coef;          // pair's coefficient in the sum (+1 or -1); 1 in a product
};

// The sign of a product's exponent: the power of a factor a pair takes.
double unitExponent(double e) { return e < 0.0 ? -1.0 : 1.0; }

// The node of the pool for operands i and j of `n` read as one, and its
// coefficient in n, or null: for a sum c_i a_i + c_j a_j itself or its
// negation; for a product, a_i^s_i a_j^s_j with s the exponents' signs (a
// square keeps one factor: U_k^2/D reads U_k/D, times U_k).
std::pair<const Node*, double> pairNode(const Node* n, std::uint32_t i, std::uint32_t j) {
  const Node* const args[2] = {n->args[i], n->args[j]};
  if (n->kind == Kind::Mul) {
    if (absExponent(n->coeffs[i]) > 2 || absExponent(n->coeffs[j]) > 2) return {nullptr, 0.0};
    const double exponents[2] = {unitExponent(n->coeffs[i]), unitExponent(n->coeffs[j])};
    return {Pool::current().find(Pool::Key{Kind::Mul, Fn::None, 0.0, args, exponents, 2, {}}), 1.0};
  }
  for (double sign : {1.0, -1.0}) {
    const double coeffs[2] = {sign * n->coeffs[i], sign * n->coeffs[j]};
    if (const Node* p = Pool::current().find(Pool::Key{Kind::Add, Fn::None, 0.0, args, coeffs, 2, {}}))
      return {p, sign};
  }
  return {nullptr, 0.0};
}

// Readers whose pairs are looked for: past 32 operands (rare: the engine
// keeps sums and products of more than two operands whole where they are
// used) the pairs' lookups would cost more than the one operation they save.
constexpr std::uint32_t kMaxPairReaderSize = 32;

bool pairCandidate(const Node* n) {
  if (n->size > kMaxPairReaderSize) return false;
  if (n->kind == Kind::Add) return !n->isScaled() && n->size >= 3;
  if (n->kind != Kind::Mul || n->size < 2) return false;
  int factors = 0;  // with multiplicity
  for (std::uint32_t i = 0; i < n->size; ++i) factors += absExponent(n->coeffs[i]);
  return factors >= 3;
}

Operands sharedOperands(const Node* n, const SharedPair& s) {
  Operands out;
  out.reserve(n->size + 1);
  for (std::uint32_t i = 0; i < n->size; ++i) {
    if (i == s.first) out.push_back({s.pair, s.coef});
    if (i != s.first && i != s.second) {
      out.push_back({n->args[i], n->coeffs[i]});
    } else if (n->kind == Kind::Mul && absExponent(n->coeffs[i]) > 1) {
      out.push_back({n->args[i], n->coeffs[i] - unitExponent(n->coeffs[i])});  // what the pair leaves
    }
  }
  return out;
}

std::string cppFunction(Fn fn) {
  switch (fn) {
    case Fn::Abs: return "std::fabs";
    default: return "std::" + std::string(fnName(fn));
  }
}

}  // namespace

OpCount& OpCount::operator+=(const OpCount& o) {
  adds += o.adds;
  muls += o.muls;
  divs += o.divs;
  funcs += o.funcs;
  other += o.other;
  return *this;
}

OpCount countOperations(std::span<const Expr> roots, int maxMultiplyPower) {
  OpCount total;
  const std::vector<const Node*> order = postOrder(roots);
  const auto users = denominatorUsers(order, {});
  auto inverted = [&](const Node* b) {
    auto it = users.find(b->id);
    return it != users.end() && it->second >= 2;
  };
  for (const auto& [id, count] : users) total.divs += count >= 2 ? 1 : 0;  // the reciprocals
  for (const Node* n : order) total += ownOps(n, maxMultiplyPower, inverted);
  return total;
}

std::string str(const OpCount& ops) {
  auto part = [](std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return part(ops.adds, "add", "adds") + ", " + part(ops.muls, "mul", "muls") + ", " +
         part(ops.divs, "div", "divs") + ", " + part(ops.funcs, "func", "funcs") + ", " +
         std::to_string(ops.other) + " other";
}

std::string formatDouble(double v) {
  if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v)) return v > 0 ? "std::numeric_limits<double>::infinity()"
                                  : "-std::numeric_limits<double>::infinity()";
  if (v == 0.0) return "0.0";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip
  std::string s(buf, result.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// A rendered expression and the precedence of its outermost operator.
struct CppPrinter::Rendered {
  std::string text;
  int prec;
};

class CppPrinter::Renderer {
 public:
  using Lookup = std::function<const std::string*(const Node*)>;
  // For a node spelled through sinCos (Options::pairSinCos): its pair's
  // temporary and part, "tsc3.sin"; else empty.
  using PairLookup = std::function<std::string(const Node*)>;
  // A sum's or product's operands as printed (block()'s shared pairs).
  using OperandLookup = std::function<Operands(const Node*)>;
  Renderer(Lookup spelled, int maxPower, Lookup reciprocal = {}, PairLookup paired = {},
           OperandLookup operands = argumentsOf)
      : spelled_(std::move(spelled)), reciprocal_(std::move(reciprocal)), paired_(std::move(paired)),
        operands_(std::move(operands)), maxPower_(maxPower) {}

  // `n` as a numeric (double) expression, parenthesized if looser than `min`.
  std::string numeric(const Node* n, int min) const { return wrap(numericRendering(n), min); }
  // `n` as a bool expression.
  std::string boolean(const Node* n, int min) const { return wrap(booleanRendering(n), min); }

 private:
  static std::string wrap(const Rendered& r, int min) {
    return r.prec < min ? "(" + r.text + ")" : r.text;
  }

  Rendered numericRendering(const Node* n) const {
    if (n->isBoolean()) return {boolean(n, kOr) + " ? 1.0 : 0.0", kTernary};
    if (const std::string* s = spelled_(n)) return {*s, kPostfix};
    switch (n->kind) {
      case Kind::Constant: {
        std::string s = formatDouble(n->value);
        return {s, s[0] == '-' ? kAdditive : kPostfix};
      }
      case Kind::Symbol:
        return {std::string(n->name), kPostfix};
      case Kind::Add:
        return sum(n);
      case Kind::Mul:
        return product(n);
      case Kind::Pow:
        return {"std::pow(" + numeric(n->args[0], kTernary) + ", " + numeric(n->args[1], kTernary) + ")",
                kPostfix};
      case Kind::Call:
        return {callText(n), kPostfix};
      case Kind::Result: {
        // A call with several results has a temporary (block()); without
        // one (expression()), the call is spelled in place.
        const Node* c = n->args[0];
        const std::string* s = spelled_(c);
        return {"std::get<" + std::to_string(static_cast<int>(n->value)) + ">(" + (s ? *s : callText(c)) + ")",
                kPostfix};
      }
      case Kind::Func:
        break;
    }
    const Node* a = n->args[0];
    switch (n->fn) {
      case Fn::Sign: {
        std::string x = numeric(a, kAdditive);
        return {x + " > 0.0 ? 1.0 : (" + x + " < 0.0 ? -1.0 : 0.0)", kTernary};
      }
      case Fn::Select:
        return {boolean(a, kOr) + " ? " + numeric(n->args[1], kOr) + " : " + numeric(n->args[2], kOr),
                kTernary};
      default:
        break;
    }
    if (std::string part = paired_ ? paired_(n) : std::string(); !part.empty()) return {part, kPostfix};
    std::string call = cppFunction(n->fn) + "(" + numeric(a, kTernary);
    for (std::uint32_t i = 1; i < n->size; ++i) call += ", " + numeric(n->args[i], kTernary);
    return {call + ")", kPostfix};
  }

  // `name(a, b, ...)` of an opaque call.
  std::string callText(const Node* n) const {
    std::string text = std::string(n->name) + "(";
    for (std::uint32_t i = 0; i < n->size; ++i) text += (i ? ", " : "") + numeric(n->args[i], kTernary);
    return text + ")";
  }

  Rendered booleanRendering(const Node* n) const {
    if (n->isConstant()) return {n->value != 0.0 ? "true" : "false", kPostfix};
    if (!n->isBoolean()) return {numeric(n, kRelational) + " != 0.0", kEquality};
    if (const std::string* s = spelled_(n)) return {*s, kPostfix};
    auto binary = [&](const char* op, int prec, bool logical) -> Rendered {
      int operandMin = logical ? kEquality : prec + 1;
      auto side = [&](const Node* x) { return logical ? boolean(x, operandMin) : numeric(x, operandMin); };
      return {side(n->args[0]) + " " + op + " " + side(n->args[1]), prec};
    };
    switch (n->fn) {
      case Fn::Lt: return binary("<", kRelational, false);
      case Fn::Le: return binary("<=", kRelational, false);
      case Fn::Eq: return binary("==", kEquality, false);
      case Fn::Ne: return binary("!=", kEquality, false);
      case Fn::And: return binary("&&", kAnd, true);
      case Fn::Or: return binary("||", kOr, true);
      case Fn::Not: return {"!" + boolean(n->args[0], kUnary), kUnary};
      default: break;
    }
    return {numeric(n, kRelational) + " != 0.0", kEquality};
  }

  // c*T inside a sum: the magnitude part; the sign is written by the caller.
  std::string term(double c, const Node* t, int min) const {
    double mag = std::abs(c);
    if (mag == 1.0) return numeric(t, min);
    return formatDouble(mag) + "*" + numeric(t, kMultiplicative);
  }

  Rendered sum(const Node* n) const {
    if (n->isScaled()) {
      double c = n->coeffs[0];
      std::string body = term(c, n->args[0], kMultiplicative);
      if (c < 0.0) return {"-" + body, kAdditive};
      return {body, kMultiplicative};
    }
    std::string s;
    const Operands operands = operands_(n);
    for (std::size_t i = 0; i < operands.size(); ++i) {
      double c = operands[i].coef;
      // The first term may be a sum itself (left associativity keeps the
      // evaluation order); later ones are parenthesized.
      int min = (i == 0 && c > 0.0) ? kAdditive : kMultiplicative;
      std::string body = term(c, operands[i].node, min);
      if (i == 0) s = c < 0.0 ? "-" + body : body;
      else s += (c < 0.0 ? " - " : " + ") + body;
    }
    if (n->value != 0.0) s += (n->value < 0.0 ? " - " : " + ") + formatDouble(std::abs(n->value));
    return {s, kAdditive};
  }

  // B^e as factors for a product (e > 0); `spelledBase` replaces B's
  // rendering when given (a reciprocal's name).
  std::string power(const Node* b, int e, std::size_t& factors, const std::string* spelledBase = nullptr) const {
    if (e > maxPower_) {
      ++factors;
      return "std::pow(" + (spelledBase ? *spelledBase : numeric(b, kTernary)) + ", " + formatDouble(e) + ")";
    }
    if (const Node* named = spelledBase || e < 2 || !spelled_ ? nullptr : powerNode(b, e)) {
      if (const std::string* s = spelled_(named)) {
        ++factors;
        return *s;
      }
    }
    std::string base = spelledBase ? *spelledBase : numeric(b, kUnary);
    std::string s = base;
    for (int k = 1; k < e; ++k) s += "*" + base;
    factors += static_cast<std::size_t>(e);
    return s;
  }

  Rendered product(const Node* n) const {
    std::string num, den;
    std::size_t numFactors = 0, denFactors = 0;
    for (const Operand& o : operands_(n)) {
      double e = o.coef;
      const std::string* inv = e < 0.0 && reciprocal_ ? reciprocal_(o.node) : nullptr;
      const bool numerator = e > 0.0 || inv != nullptr;
      std::string& side = numerator ? num : den;
      std::string p = power(o.node, absExponent(e), numerator ? numFactors : denFactors, inv);
      side += side.empty() ? p : "*" + p;
    }
    if (num.empty()) num = "1.0";
    if (den.empty()) return {num, kMultiplicative};
    return {num + "/" + (denFactors > 1 ? "(" + den + ")" : den), kMultiplicative};
  }

  Lookup spelled_;
  Lookup reciprocal_;  // the name of 1/B for a base B, if it has one
  PairLookup paired_;
  OperandLookup operands_;
  int maxPower_;
};

CppPrinter::CppPrinter() : CppPrinter(Options{}) {}

CppPrinter::CppPrinter(Options options) : options_(options) {}

void CppPrinter::name(const Expr& e, std::string spelling) { names_[e.id()] = std::move(spelling); }

std::string CppPrinter::expression(const Expr& e) const {
  Renderer r(
      [&](const Node* n) -> const std::string* {
        auto it = names_.find(n->id);
        return it == names_.end() ? nullptr : &it->second;
      },
      options_.maxMultiplyPower);
  return r.numeric(e.node(), kTernary);
}

std::unordered_map<std::uint32_t, std::size_t> lastUses(const std::vector<std::vector<Expr>>& blockRoots) {
  // From the last block back: a node first reached from block k is used by
  // no later block, and its cone has been reached before it (or now).
  std::unordered_map<std::uint32_t, std::size_t> last;
  std::vector<const Node*> stack;
  for (std::size_t k = blockRoots.size(); k-- > 0;) {
    for (const Expr& root : blockRoots[k]) stack.push_back(root.node());
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      if (!last.emplace(n->id, k).second) continue;
      for (std::uint32_t i = 0; i < n->size; ++i) stack.push_back(n->args[i]);
    }
  }
  return last;
}

namespace {

bool isSinOrCos(const Node* n) { return n->kind == Kind::Func && (n->fn == Fn::Sin || n->fn == Fn::Cos); }

// The (sin x, cos x) pairs among `nodes` (those that hold both of one x),
// in no particular order.
std::vector<std::pair<const Node*, const Node*>> sinCosPairs(const std::vector<const Node*>& nodes) {
  std::unordered_map<std::uint32_t, std::pair<const Node*, const Node*>> byArgument;  // (sin, cos)
  for (const Node* n : nodes) {
    if (!isSinOrCos(n)) continue;
    auto& [sine, cosine] = byArgument[n->args[0]->id];
    (n->fn == Fn::Sin ? sine : cosine) = n;
  }
  std::vector<std::pair<const Node*, const Node*>> pairs;
  for (const auto& [argument, pair] : byArgument)
    if (pair.first && pair.second) pairs.push_back(pair);
  return pairs;
}

}  // namespace

int coordinateIndex(const Node* n) {
  if (n->kind != Kind::Symbol) return -1;
  const std::string_view name = n->name;
  if (name.size() < 4 || !name.starts_with("q[") || name.back() != ']') return -1;
  int i = 0;
  for (const char c : name.substr(2, name.size() - 3)) {
    if (c < '0' || c > '9') return -1;
    i = 10 * i + (c - '0');
  }
  return i;
}

std::vector<int> sinCosCoordinates(const std::vector<std::vector<Expr>>& blockRoots) {
  std::vector<Expr> roots;
  for (const std::vector<Expr>& block : blockRoots) roots.insert(roots.end(), block.begin(), block.end());
  std::set<int> found;
  for (const Node* n : postOrder(roots))
    if (isSinOrCos(n) && coordinateIndex(n->args[0]) >= 0) found.insert(coordinateIndex(n->args[0]));
  return {found.begin(), found.end()};
}

bool readsCoordinatesOtherwise(const std::vector<Expr>& roots) {
  for (const Expr& r : roots)
    if (coordinateIndex(r.node()) >= 0) return true;
  for (const Node* n : postOrder(roots)) {
    if (isSinOrCos(n)) continue;
    for (std::uint32_t k = 0; k < n->size; ++k)
      if (coordinateIndex(n->args[k]) >= 0) return true;
  }
  return false;
}

std::string scheduleStatements(std::string_view code, const std::function<bool(std::string_view)>& readLater) {
  // One statement a line: `const T name = ...;` declares `name`; anything
  // else assigns an output.
  struct Statement {
    std::string_view line;  // with its '\n'
    std::string_view name;  // empty for an output
    bool root;
  };
  std::vector<Statement> statements;
  for (std::size_t at = 0; at < code.size();) {
    std::size_t end = code.find('\n', at);
    end = end == std::string_view::npos ? code.size() : end + 1;
    const std::string_view line = code.substr(at, end - at);
    at = end;
    // Anything but one statement a line (a loop, a scope, a statement over
    // two lines) is left as it is.
    if (line.find_last_not_of(" \n") == std::string_view::npos || line[line.find_last_not_of(" \n")] != ';') {
      return std::string(code);
    }
    const std::size_t first = line.find_first_not_of(' ');
    const std::size_t eq = line.find(" = ");
    std::string_view name;
    if (first != std::string_view::npos && line.substr(first).starts_with("const ") && eq != std::string_view::npos) {
      const std::size_t space = line.rfind(' ', eq - 1);
      name = line.substr(space + 1, eq - space - 1);
    }
    statements.push_back({line, name, name.empty() || readLater(name)});
  }
  const std::size_t n = statements.size();
  std::unordered_map<std::string_view, std::size_t> byName;
  for (std::size_t k = 0; k < n; ++k)
    if (!statements[k].name.empty()) byName.emplace(statements[k].name, k);
  // Operands: the block's temporaries a line reads right of its " = ".
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::vector<std::vector<std::size_t>> operands(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::string_view line = statements[k].line;
    const std::size_t eq = line.find(" = ");
    std::set<std::size_t> found;
    for (std::size_t i = eq == std::string_view::npos ? line.size() : eq + 3; i < line.size();) {
      if (!word(line[i]) || word(line[i - 1]) || line[i - 1] == '.') {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < line.size() && word(line[j])) ++j;
      if (auto it = byName.find(line.substr(i, j - i)); it != byName.end() && it->second < k) found.insert(it->second);
      i = j;
    }
    operands[k].assign(found.begin(), found.end());
  }
  std::vector<std::size_t> need(n, 1);
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<std::size_t> needs;
    for (std::size_t o : operands[k]) needs.push_back(need[o]);
    std::sort(needs.rbegin(), needs.rend());
    for (std::size_t r = 0; r < needs.size(); ++r) need[k] = std::max(need[k], needs[r] + r);
  }
  for (auto& ops : operands)
    std::stable_sort(ops.begin(), ops.end(), [&](std::size_t a, std::size_t b) { return need[a] > need[b]; });
  // Depth first from each root in turn, then whatever no root reached (in
  // their order), without recursion: chains of operands can be thousands
  // of statements long.
  std::string out;
  out.reserve(code.size());
  std::vector<bool> done(n, false);
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (statement, operands visited)
  auto visit = [&](std::size_t start) {
    if (done[start]) return;
    done[start] = true;
    stack.emplace_back(start, 0);
    while (!stack.empty()) {
      auto& [k, next] = stack.back();
      if (next < operands[k].size()) {
        const std::size_t o = operands[k][next++];
        if (!done[o]) {
          done[o] = true;
          stack.emplace_back(o, 0);
        }
        continue;
      }
      out += statements[k].line;
      stack.pop_back();
    }
  };
  for (std::size_t k = 0; k < n; ++k)
    if (statements[k].root) visit(k);
  for (std::size_t k = 0; k < n; ++k) visit(k);
  return out;
}

std::unordered_map<std::uint32_t, const Node*> sinCosPartners(const std::vector<std::vector<Expr>>& blockRoots) {
  std::vector<Expr> roots;
  for (const auto& block : blockRoots) roots.insert(roots.end(), block.begin(), block.end());
  std::unordered_map<std::uint32_t, const Node*> partners;
  for (const auto& [sine, cosine] : sinCosPairs(postOrder(roots))) {
    partners[sine->id] = cosine;
    partners[cosine->id] = sine;
  }
  return partners;
}

CppPrinter::Block CppPrinter::block(std::span<const Assignment> outputs, std::string_view tempPrefix,
                                    std::string_view indent, const std::function<bool(const Node*)>& usedLater,
                                    const std::function<const Node*(const Node*)>& partner) {
  std::unordered_map<std::uint32_t, std::string> local;  // this block's temporaries
  auto known = [&](const Node* n) -> const std::string* {
    if (auto it = names_.find(n->id); it != names_.end()) return &it->second;
    if (auto it = local.find(n->id); it != local.end()) return &it->second;
    if (auto it = temporaries_.find(n->id); it != temporaries_.end()) return &it->second;
    return nullptr;
  };
  auto leaf = [&](const Node* n) {
    return n->kind == Kind::Constant || n->kind == Kind::Symbol || known(n) != nullptr;
  };
  // A result of a call with several results reads the call's temporary.
  std::function<bool(const Node*)> cheap = [&](const Node* n) {
    return leaf(n) || n->kind == Kind::Result || (n->isScaled() && n->coeffs[0] == -1.0 && cheap(n->args[0]));
  };

  std::vector<Expr> roots;
  roots.reserve(outputs.size());
  for (const Assignment& a : outputs) roots.push_back(a.value);
  std::vector<const Node*> order = postOrder(roots, leaf);

  // Shared pairs (SharedPair): per reader, the pair it reads.
  std::unordered_map<std::uint32_t, SharedPair> shared;
  {
    std::unordered_map<std::uint32_t, std::size_t> position;
    for (std::size_t k = 0; k < order.size(); ++k) position[order[k]->id] = k;
    // Computed anyway: a name, an earlier block's temporary, or a node of
    // this block (one that comes after the reader moves before it: its two
    // operands are the reader's, which come before the reader).
    auto available = [&](const Node* p) { return known(p) || position.count(p->id) > 0; };
    // Each reader's candidates, and for each pair the block does not
    // compute, how many readers could read it.
    std::vector<std::pair<const Node*, std::vector<SharedPair>>> readers;
    std::unordered_map<std::uint32_t, std::size_t> wanted;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const Node* n = order[k];
      if (leaf(n) || !pairCandidate(n)) continue;
      // A square the block computes as a node of its own is read in one
      // multiply (Renderer::power): not split for a pair.
      auto squareComputed = [&](std::uint32_t f) {
        if (n->kind != Kind::Mul || absExponent(n->coeffs[f]) != 2) return false;
        const Node* square = powerNode(n->args[f], 2);
        return square && available(square);
      };
      std::vector<SharedPair> found;
      for (std::uint32_t i = 0; i < n->size; ++i) {
        for (std::uint32_t j = i + 1; j < n->size; ++j) {
          if (squareComputed(i) || squareComputed(j)) continue;
          if (auto [p, coef] = pairNode(n, i, j); p) found.push_back({p, i, j, coef});
        }
      }
      for (const SharedPair& f : found) {
        if (!available(f.pair)) wanted[f.pair->id] += 1;
      }
      if (!found.empty()) readers.emplace_back(n, std::move(found));
    }
    // A pair computed anyway first, else the one most readers want.
    std::unordered_map<std::uint32_t, std::size_t> readersOfNew;
    std::set<std::uint32_t> moved;  // pairs of the block a reader before them reads
    for (const auto& [n, found] : readers) {
      const SharedPair* best = nullptr;
      std::size_t most = 1;
      for (const SharedPair& f : found) {
        if (available(f.pair)) {
          best = &f;
          most = 0;
          auto it = position.find(f.pair->id);
          if (it != position.end() && it->second > position.at(n->id)) moved.insert(f.pair->id);
          break;
        }
        auto it = wanted.find(f.pair->id);
        if (it != wanted.end() && it->second > most) {
          best = &f;
          most = it->second;
        }
      }
      if (!best) continue;
      shared[n->id] = *best;
      if (most > 0) readersOfNew[best->pair->id] += 1;
    }
    // A new pair that one reader reads saves nothing.
    std::erase_if(shared, [&](const auto& entry) {
      auto it = readersOfNew.find(entry.second.pair->id);
      return it != readersOfNew.end() && it->second < 2;
    });
    // New pairs, and pairs of the block a reader before them reads, are
    // computed just before their first reader (after both of their
    // operands, which come before it).
    std::set<std::uint32_t> placed;
    std::vector<const Node*> extended;
    extended.reserve(order.size() + readersOfNew.size());
    for (const Node* n : order) {
      if (moved.count(n->id) && placed.count(n->id)) continue;  // computed earlier now
      if (auto it = shared.find(n->id); it != shared.end()) {
        const Node* p = it->second.pair;
        if ((readersOfNew.count(p->id) || moved.count(p->id)) && placed.insert(p->id).second) extended.push_back(p);
      }
      extended.push_back(n);
    }
    order.swap(extended);
  }
  auto operandsOf = [&](const Node* n) -> Operands {
    if (auto it = shared.find(n->id); it != shared.end()) return sharedOperands(n, it->second);
    return argumentsOf(n);
  };

  const int maxPower = options_.maxMultiplyPower;
  // Bases inverted once: those with a reciprocal from an earlier block, and
  // those two or more of this block's products divide by.
  std::unordered_map<std::uint32_t, std::size_t> denUsers = denominatorUsers(order, leaf, operandsOf);
  std::unordered_map<std::uint32_t, std::string> localReciprocals;  // this block's, by base id
  auto later = [&](const Node* n) { return usedLater && usedLater(n); };
  auto inverted = [&](const Node* b) {
    if (reciprocals_.count(b->id)) return true;
    auto it = denUsers.find(b->id);
    return it != denUsers.end() && (it->second >= 2 || later(b));
  };
  auto fresh = [&](const Node* b) { return !reciprocals_.count(b->id) && inverted(b); };
  // The partner of a sin or cos computed here (cos or sin of the same
  // argument) that a later block needs is computed here too, so the pair
  // is one call (Options::pairSinCos).
  if (options_.pairSinCos && partner) {
    std::set<std::uint32_t> present;
    for (const Node* n : order) present.insert(n->id);
    std::vector<const Node*> extended;
    extended.reserve(order.size());
    for (const Node* n : order) {
      extended.push_back(n);
      if (leaf(n) || !isSinOrCos(n)) continue;
      const Node* p = partner(n);
      if (p && !present.count(p->id) && !known(p) && later(p)) {
        extended.push_back(p);
        present.insert(p->id);
      }
    }
    order.swap(extended);
  }

  // A product's factor B^e is a use of the node B^e where that comes
  // earlier (or has a name): it is then computed once and read.
  std::unordered_map<std::uint32_t, std::size_t> uses;
  std::set<std::uint32_t> before;  // the nodes of `order` passed
  auto sharedPower = [&](const Node* n, const Operand& o) -> const Node* {
    const int e = absExponent(o.coef);
    if (n->kind != Kind::Mul || e < 2 || e > maxPower) return nullptr;
    const Node* p = powerNode(o.node, e);
    return p && p != n && (before.count(p->id) || known(p)) ? p : nullptr;
  };
  for (const Node* n : order) {
    if (fresh(n)) uses[n->id] += 1;  // its reciprocal spells it once
    if (leaf(n)) continue;
    for (const Operand& o : operandsOf(n)) {
      if (n->kind == Kind::Mul && o.coef < 0.0 && inverted(o.node)) continue;
      if (const Node* p = sharedPower(n, o)) {
        uses[p->id] += 1;
        continue;
      }
      uses[o.node->id] += operandUses(n, o, maxPower);
    }
    before.insert(n->id);
  }
  for (const Expr& r : roots) uses[r.id()] += 1;
  for (const Node* n : order) {
    if (!leaf(n) && later(n)) uses[n->id] += 1;
  }

  // Options::sinCosTable serves x.
  auto tabled = [&](const Node* x) {
    const int i = options_.sinCosTable.empty() ? -1 : coordinateIndex(x);
    return i >= 0 && i < options_.sinCosTableSize;
  };
  // sin(x) and cos(x) both computed here (Options::pairSinCos): each gets a
  // temporary, and the two are spelled as one call's parts.
  std::unordered_map<std::uint32_t, const char*> paired;  // by node id: "sin" or "cos"
  if (options_.pairSinCos) {
    std::vector<const Node*> computed;
    std::copy_if(order.begin(), order.end(), std::back_inserter(computed), [&](const Node* n) { return !leaf(n); });
    for (const auto& [sine, cosine] : sinCosPairs(computed)) {
      paired[sine->id] = "sin";
      paired[cosine->id] = "cos";
    }
    // A coordinate's sine or cosine alone, where the table has both.
    if (!options_.sinCosTable.empty()) {
      for (const Node* n : computed)
        if (isSinOrCos(n) && tabled(n->args[0])) paired[n->id] = n->fn == Fn::Sin ? "sin" : "cos";
    }
  }

  // Children come first, so a node's inline cost can add its children's.
  Block result;
  std::vector<std::pair<const Node*, bool>> temps;  // (node, is the reciprocal of the node)
  std::unordered_map<std::uint32_t, std::size_t> inlineCost;
  for (const Node* n : order) {
    const bool newReciprocal = fresh(n);
    if (newReciprocal) result.ops.divs += 1;
    if (cheap(n)) {
      if (newReciprocal) temps.emplace_back(n, true);
      continue;
    }
    const Operands operands = operandsOf(n);
    OpCount own = ownOps(n, operands, maxPower, inverted);
    // A power with a name already is read, not multiplied out (Renderer::power).
    for (const Operand& o : operands) {
      const int e = absExponent(o.coef);
      if (n->kind != Kind::Mul || e < 2 || e > maxPower || (o.coef < 0.0 && inverted(o.node))) continue;
      const Node* p = powerNode(o.node, e);
      if (p && p != n && known(p)) own.muls -= static_cast<std::size_t>(e - 1);
    }
    result.ops += own;
    std::size_t cost = own.total();
    for (const Operand& o : operands) {
      auto it = inlineCost.find(o.node->id);
      if (it != inlineCost.end()) cost += it->second;
    }
    // A call with several results is made once, into a temporary its
    // results read.
    if (uses[n->id] >= 2 || cost > static_cast<std::size_t>(options_.maxInlineOps) || n->isMultiCall() ||
        paired.count(n->id)) {
      temps.emplace_back(n, false);
      local[n->id] = "";  // a leaf for the renderer from now on; named below
    } else {
      inlineCost[n->id] = cost;
    }
    if (newReciprocal) temps.emplace_back(n, true);  // after its base, before any product using it
  }

  // Names are given in emission order; a temporary is rendered before any
  // node that uses it is named, so `known` sees exactly the earlier ones.
  local.clear();
  auto reciprocal = [&](const Node* b) -> const std::string* {
    if (auto it = reciprocals_.find(b->id); it != reciprocals_.end()) return &it->second;
    if (auto it = localReciprocals.find(b->id); it != localReciprocals.end()) return &it->second;
    return nullptr;
  };
  // What the rendered code reads of earlier blocks' temporaries.
  std::set<std::string> reused;
  auto spelled = [&](const Node* n) -> const std::string* {
    const std::string* s = known(n);
    if (auto it = temporaries_.find(n->id); s && it != temporaries_.end() && s == &it->second) reused.insert(*s);
    return s;
  };
  auto reciprocalSpelled = [&](const Node* b) -> const std::string* {
    const std::string* s = reciprocal(b);
    if (auto it = reciprocals_.find(b->id); s && it != reciprocals_.end() && s == &it->second) reused.insert(*s);
    return s;
  };
  // Each pair's call, by its argument's id: the temporary holding both.
  std::unordered_map<std::uint32_t, std::string> pairCalls;
  Renderer renderer(
      spelled, maxPower, reciprocalSpelled,
      [&](const Node* n) -> std::string {
        auto it = paired.find(n->id);
        return it == paired.end() ? std::string() : pairCalls.at(n->args[0]->id) + "." + it->second;
      },
      operandsOf);
  std::string prefix(tempPrefix);
  const std::string inversePrefix = prefix + "inv";
  std::string& code = result.code;
  for (const auto& [n, isReciprocal] : temps) {
    if (isReciprocal) {
      std::string tempName = inversePrefix + std::to_string(nextIndex_[inversePrefix]++);
      code += std::string(indent) + "const double " + tempName + " = 1.0/" + renderer.numeric(n, kUnary) + ";\n";
      localReciprocals[n->id] = tempName;
      result.declared.push_back({tempName, "double"});
      continue;
    }
    // The first of a sin/cos pair makes the call both read: one call, its
    // argument read once (a store between two calls could alias it).
    if (paired.count(n->id) && !pairCalls.count(n->args[0]->id)) {
      const std::string pairPrefix = prefix + "sc";
      const std::string name = pairPrefix + std::to_string(nextIndex_[pairPrefix]++);
      const int coordinate = tabled(n->args[0]) ? coordinateIndex(n->args[0]) : -1;
      code += std::string(indent) + "const capstan_models::SinCos " + name + " = " +
              (coordinate >= 0 ? options_.sinCosTable + "[" + std::to_string(coordinate) + "]"
                               : "capstan_models::sinCos(" + renderer.numeric(n->args[0], kTernary) + ")") +
              ";\n";
      result.readsTable = result.readsTable || coordinate >= 0;
      pairCalls[n->args[0]->id] = name;
      result.declared.push_back({name, "capstan_models::SinCos"});
    }
    std::string rhs = n->isBoolean() ? renderer.boolean(n, kTernary) : renderer.numeric(n, kTernary);
    std::string tempName = prefix + std::to_string(nextIndex_[prefix]++);
    // The results of a call with several results: whatever std::get reads
    // (std::array, std::tuple, std::pair).
    const std::string type = n->isBoolean() ? "bool" : n->isMultiCall() ? "auto" : "double";
    code += std::string(indent) + "const " + type + " " + tempName + " = " + rhs + ";\n";
    local[n->id] = tempName;
    result.declared.push_back({tempName, type});
  }
  for (const Assignment& a : outputs) {
    code += std::string(indent) + a.target + " = " + renderer.numeric(a.value.node(), kTernary) + ";\n";
  }
  result.reused.assign(reused.begin(), reused.end());
  if (options_.reuseTemporaries) {
    temporaries_.merge(local);
    reciprocals_.merge(localReciprocals);
  }
  return result;
}

std::string str(const Expr& e) { return CppPrinter().expression(e); }

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << str(e); }

}  // namespace capstan::symbolic
