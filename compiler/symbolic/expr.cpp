// Construction with simplification. Every builder returns a node in
// canonical form (docs/symbolic.md):
//   - Add: constant + sum c_i*T_i, terms sorted by id, no term a constant,
//     no term an Add of at most kFlattenLimit terms (those are merged), no
//     zero coefficient; k*T alone is the scaled form Add{0, [(k, T)]}.
//   - Mul: prod B_i^e_i with integer e_i != 0, bases sorted by id, no base a
//     constant, a scaled form or a small Mul; the numeric factor lives outside
//     as a scaled form.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "symbolic/expr.hpp"

#include "symbolic/evaluate.hpp"

namespace capstan::symbolic {
namespace {

// Sums and products with more operands than this are kept as single terms
// when they meet another sum or product: flattening them copies their
// operands into every sum or product that uses them, which makes
// incremental accumulation quadratic and undoes the sharing of common
// subexpressions (a World position p_i = p_parent + R r, flattened, repeats
// all of p_parent's terms). Two keeps `2*(a+b) - 2*a = 2*b` and x - x = 0
// for any x; measured against the former 32 (docs/performance.md, "Flatten
// limit"), generated forward dynamics runs 11-16 % faster from 20 dofs up
// and the derivative recursions trace 20-25 % fewer operations.
constexpr std::uint32_t kFlattenLimit = 2;

struct Term {
  const Node* node;
  double coef;  // coefficient (Add) or exponent (Mul)
};

Pool& pool() { return Pool::current(); }

const Node* constantNode(double v) {
  return pool().intern(Pool::Key{Kind::Constant, Fn::None, v, nullptr, nullptr, 0, {}});
}

const Node* internTerms(Kind kind, double value, const std::vector<Term>& terms, bool find = false) {
  std::vector<const Node*> args(terms.size());
  std::vector<double> coeffs(terms.size());
  for (std::size_t i = 0; i < terms.size(); ++i) {
    args[i] = terms[i].node;
    coeffs[i] = terms[i].coef;
  }
  Pool::Key key{kind, Fn::None, value, args.data(), coeffs.data(),
                static_cast<std::uint32_t>(terms.size()), {}};
  return find ? pool().find(key) : pool().intern(key);
}

const Node* funcNode(Fn fn, std::initializer_list<const Node*> args) {
  return pool().intern(Pool::Key{Kind::Func, fn, 0.0, args.begin(), nullptr,
                                 static_cast<std::uint32_t>(args.size()), {}});
}

// k*T without distributing k over a sum.
const Node* scaled(double k, const Node* t) {
  if (k == 0.0) return pool().zero();
  if (t->isConstant()) return constantNode(k * t->value);
  if (t->isScaled()) {
    k *= t->coeffs[0];
    t = t->args[0];
  }
  if (k == 1.0) return t;
  Term term{t, k};
  return internTerms(Kind::Add, 0.0, {term});
}

// Sorts by node id and merges equal nodes by adding their coef.
void combine(std::vector<Term>& terms) {
  std::sort(terms.begin(), terms.end(),
            [](const Term& a, const Term& b) { return canonicalLess(a.node, b.node); });
  std::size_t out = 0;
  for (std::size_t i = 0; i < terms.size();) {
    Term t = terms[i++];
    while (i < terms.size() && terms[i].node == t.node) t.coef += terms[i++].coef;
    if (t.coef != 0.0) terms[out++] = t;
  }
  terms.resize(out);
}

const Node* makeProduct(double coef, const std::vector<Term>& factors);

// c*sin(a)^2*R + c*cos(a)^2*R = c*R, for pairs present in the same sum.
bool applyPythagoras(std::vector<Term>& terms) {
  bool changed = false;
  auto isSinSquared = [](const Node* f, double e) {
    return e == 2.0 && f->kind == Kind::Func && f->fn == Fn::Sin;
  };
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const Node* t = terms[i].node;
    if (t->kind != Kind::Mul || t->size > kFlattenLimit) continue;
    bool candidate = false;
    for (std::uint32_t j = 0; j < t->size && !candidate; ++j) candidate = isSinSquared(t->args[j], t->coeffs[j]);
    if (!candidate) continue;
    // The factors of t, and which of them is sin(a)^2.
    std::vector<Term> factors;
    for (std::uint32_t j = 0; j < t->size; ++j) factors.push_back({t->args[j], t->coeffs[j]});
    for (std::size_t j = 0; j < factors.size(); ++j) {
      const Node* f = factors[j].node;
      if (!isSinSquared(f, factors[j].coef)) continue;
      const Node* cosine = pool().find(Pool::Key{Kind::Func, Fn::Cos, 0.0, f->args, nullptr, 1, {}});
      if (!cosine) continue;
      std::vector<Term> companion = factors;
      companion[j].node = cosine;
      combine(companion);
      const Node* partner = companion.size() == 1 && companion[0].coef == 1.0
                                ? companion[0].node
                                : internTerms(Kind::Mul, 0.0, companion, /*find=*/true);
      if (!partner) continue;
      auto it = std::find_if(terms.begin(), terms.end(),
                             [&](const Term& u) { return u.node == partner; });
      if (it == terms.end() || it->coef != terms[i].coef) continue;
      double c = terms[i].coef;
      std::vector<Term> rest = factors;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(j));
      it->coef = 0.0;
      terms[i] = Term{makeProduct(1.0, rest), c};
      changed = true;
      break;
    }
  }
  return changed;
}

void expandTerm(double c, const Node* t, double& constant, std::vector<Term>& out) {
  if (t->isConstant()) {
    constant += c * t->value;
  } else if (t->kind == Kind::Add && t->size <= kFlattenLimit) {
    constant += c * t->value;
    for (std::uint32_t i = 0; i < t->size; ++i) expandTerm(c * t->coeffs[i], t->args[i], constant, out);
  } else {
    out.push_back({t, c});
  }
}

const Node* makeSum(std::initializer_list<Term> operands) {
  double constant = 0.0;
  std::vector<Term> terms;
  for (const Term& op : operands) expandTerm(op.coef, op.node, constant, terms);
  combine(terms);
  while (terms.size() >= 2 && applyPythagoras(terms)) {
    std::vector<Term> again;
    for (const Term& t : terms) expandTerm(t.coef, t.node, constant, again);
    terms.swap(again);
    combine(terms);
  }
  if (terms.empty()) return constantNode(constant);
  if (constant == 0.0 && terms.size() == 1) return scaled(terms[0].coef, terms[0].node);
  return internTerms(Kind::Add, constant, terms);
}

void expandFactor(const Node* b, double e, double& coef, std::vector<Term>& out) {
  if (b->isConstant()) {
    coef *= integerPower(b->value, e);
  } else if (b->isScaled()) {
    coef *= integerPower(b->coeffs[0], e);
    expandFactor(b->args[0], e, coef, out);
  } else if (b->kind == Kind::Mul && b->size <= kFlattenLimit) {
    for (std::uint32_t i = 0; i < b->size; ++i) expandFactor(b->args[i], e * b->coeffs[i], coef, out);
  } else {
    out.push_back({b, e});
  }
}

// sqrt(a)^(2k+r) = a^k * sqrt(a)^r. Returns whether anything changed.
bool reduceSquareRoots(std::vector<Term>& factors) {
  bool changed = false;
  std::size_t n = factors.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Node* b = factors[i].node;
    double e = factors[i].coef;
    if (b->kind != Kind::Func || b->fn != Fn::Sqrt || std::abs(e) < 2.0) continue;
    double half = std::trunc(e / 2.0);
    factors[i].coef = e - 2.0 * half;
    factors.push_back({b->args[0], half});
    changed = true;
  }
  return changed;
}

const Node* makeProduct(double coef, const std::vector<Term>& operands) {
  std::vector<Term> factors;
  for (const Term& op : operands) expandFactor(op.node, op.coef, coef, factors);
  if (coef == 0.0) return pool().zero();
  combine(factors);
  while (reduceSquareRoots(factors)) {
    std::vector<Term> again;
    for (const Term& f : factors) expandFactor(f.node, f.coef, coef, again);
    factors.swap(again);
    combine(factors);
  }
  if (factors.empty()) return constantNode(coef);
  const Node* body = factors.size() == 1 && factors[0].coef == 1.0
                         ? factors[0].node
                         : internTerms(Kind::Mul, 0.0, factors);
  return scaled(coef, body);
}

bool isInteger(double v) { return std::isfinite(v) && v == std::trunc(v) && std::abs(v) < 1e9; }

double fold(Fn fn, double a, double b, double c) {
  switch (fn) {
    case Fn::Sin: return std::sin(a);
    case Fn::Cos: return std::cos(a);
    case Fn::Tan: return std::tan(a);
    case Fn::Asin: return std::asin(a);
    case Fn::Acos: return std::acos(a);
    case Fn::Atan: return std::atan(a);
    case Fn::Sqrt: return std::sqrt(a);
    case Fn::Exp: return std::exp(a);
    case Fn::Log: return std::log(a);
    case Fn::Abs: return std::fabs(a);
    case Fn::Sign: return a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : 0.0);
    case Fn::Atan2: return std::atan2(a, b);
    case Fn::Min: return std::min(a, b);
    case Fn::Max: return std::max(a, b);
    case Fn::Select: return a != 0.0 ? b : c;
    case Fn::Lt: return a < b ? 1.0 : 0.0;
    case Fn::Le: return a <= b ? 1.0 : 0.0;
    case Fn::Eq: return a == b ? 1.0 : 0.0;
    case Fn::Ne: return a != b ? 1.0 : 0.0;
    case Fn::And: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
    case Fn::Or: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
    case Fn::Not: return a == 0.0 ? 1.0 : 0.0;
    case Fn::None: break;
  }
  throw std::logic_error("symbolic: fold of Fn::None");
}

// A boolean view of x: comparisons and logic stay, anything else is x != 0.
const Node* truth(const Node* x) {
  if (x->isBoolean() || x->isConstant()) return x->isConstant() ? constantNode(x->value != 0.0) : x;
  return funcNode(Fn::Ne, {x, pool().zero()});
}

bool isNegative(const Node* x) { return x->isScaled() && x->coeffs[0] < 0.0; }
const Node* negate(const Node* x) { return scaled(-1.0, x); }

const Node* makeFunc(Fn fn, const Node* a, const Node* b, const Node* c) {
  int arity = fnArity(fn);
  bool allConstant = a->isConstant() && (arity < 2 || b->isConstant()) && (arity < 3 || c->isConstant());
  if (allConstant) {
    return constantNode(fold(fn, a->value, arity > 1 ? b->value : 0.0, arity > 2 ? c->value : 0.0));
  }
  switch (fn) {
    case Fn::Sin:
    case Fn::Tan:
    case Fn::Asin:
    case Fn::Atan:
    case Fn::Sign:  // odd functions: f(-x) = -f(x)
      if (isNegative(a)) return negate(makeFunc(fn, negate(a), b, c));
      break;
    case Fn::Cos:
    case Fn::Abs:  // even functions
      if (isNegative(a)) return makeFunc(fn, negate(a), b, c);
      if (fn == Fn::Abs && (a->kind == Kind::Func && (a->fn == Fn::Abs || a->fn == Fn::Sqrt ||
                                                      a->fn == Fn::Exp)))
        return a;
      break;
    case Fn::Log:
      if (a->kind == Kind::Func && a->fn == Fn::Exp) return a->args[0];
      break;
    case Fn::Min:
    case Fn::Max:
      if (a == b) return a;
      if (canonicalLess(b, a)) std::swap(a, b);
      break;
    case Fn::Select:
      a = truth(a);
      if (a->isConstant()) return a->value != 0.0 ? b : c;
      if (b == c) return b;
      if (a->fn == Fn::Not) return makeFunc(Fn::Select, a->args[0], c, b);
      break;
    case Fn::Lt:
      if (a == b) return pool().zero();
      break;
    case Fn::Le:
    case Fn::Eq:
      if (a == b) return pool().one();
      if (fn == Fn::Eq && canonicalLess(b, a)) std::swap(a, b);
      if (fn == Fn::Eq && a->isConstant() && a->value == 0.0 && b->isBoolean()) return makeFunc(Fn::Not, b, pool().zero(), pool().zero());
      break;
    case Fn::Ne:
      if (a == b) return pool().zero();
      if (canonicalLess(b, a)) std::swap(a, b);
      // A condition used as a number and compared with zero is the condition
      // (`if` in a model becomes select(cond != 0, ...)).
      if (a->isConstant() && a->value == 0.0 && b->isBoolean()) return b;
      break;
    case Fn::And:
    case Fn::Or: {
      a = truth(a);
      b = truth(b);
      bool isAnd = fn == Fn::And;
      for (int k = 0; k < 2; ++k, std::swap(a, b)) {
        if (!a->isConstant()) continue;
        bool v = a->value != 0.0;
        if (v == isAnd) return b;          // true && b, false || b
        return constantNode(isAnd ? 0.0 : 1.0);  // false && b, true || b
      }
      if (a == b) return a;
      if (canonicalLess(b, a)) std::swap(a, b);
      break;
    }
    case Fn::Not:
      a = truth(a);
      if (a->isConstant()) return constantNode(a->value == 0.0);
      switch (a->fn) {
        case Fn::Not: return a->args[0];
        case Fn::Lt: return funcNode(Fn::Le, {a->args[1], a->args[0]});
        case Fn::Le: return funcNode(Fn::Lt, {a->args[1], a->args[0]});
        case Fn::Eq: return funcNode(Fn::Ne, {a->args[0], a->args[1]});
        case Fn::Ne: return funcNode(Fn::Eq, {a->args[0], a->args[1]});
        default: break;
      }
      break;
    default:
      break;
  }
  switch (arity) {
    case 1: return funcNode(fn, {a});
    case 2: return funcNode(fn, {a, b});
    default: return funcNode(fn, {a, b, c});
  }
}

const Node* makePow(const Node* b, const Node* e) {
  if (e->isConstant()) {
    double k = e->value;
    if (k == 0.0) return pool().one();
    if (k == 1.0) return b;
    if (b->isConstant()) return constantNode(std::pow(b->value, k));
    if (isInteger(k)) return makeProduct(1.0, {Term{b, k}});
    if (k == 0.5) return makeFunc(Fn::Sqrt, b, nullptr, nullptr);
    if (k == -0.5) return makeProduct(1.0, {Term{makeFunc(Fn::Sqrt, b, nullptr, nullptr), -1.0}});
  } else if (b->isConstant() && b->value == 1.0) {
    return pool().one();
  }
  const Node* args[2] = {b, e};
  return pool().intern(Pool::Key{Kind::Pow, Fn::None, 0.0, args, nullptr, 2, {}});
}

}  // namespace

namespace {

// Compares names with digit runs as numbers, so q[2] sorts before q[10].
int naturalCompare(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0') ++i0;
      while (j0 < b.size() && b[j0] == '0') ++j0;
      std::size_t i1 = i0, j1 = j0;
      while (i1 < a.size() && digit(a[i1])) ++i1;
      while (j1 < b.size() && digit(b[j1])) ++j1;
      if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0 ? -1 : 1;
      if (int c = a.substr(i0, i1 - i0).compare(b.substr(j0, j1 - j0))) return c;
      i = i1;
      j = j1;
    } else {
      if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
      ++i;
      ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j ? -1 : 1;
  return a.compare(b);  // "q01" vs "q1": fall back to the plain order
}

int rank(const Node* n) { return n->kind == Kind::Constant ? 0 : n->kind == Kind::Symbol ? 1 : 2; }

}  // namespace

bool canonicalLess(const Node* a, const Node* b) {
  if (a == b) return false;
  if (rank(a) != rank(b)) return rank(a) < rank(b);
  switch (rank(a)) {
    case 0:
      if (a->value != b->value) return a->value < b->value;
      break;
    case 1:
      if (int c = naturalCompare(a->name, b->name)) return c < 0;
      break;
    default:
      if (a->height != b->height) return a->height < b->height;
      if (a->hash != b->hash) return a->hash < b->hash;
      break;
  }
  return a->id < b->id;  // a hash collision: still deterministic in one program
}

std::string_view fnName(Fn fn) {
  switch (fn) {
    case Fn::None: return "none";
    case Fn::Sin: return "sin";
    case Fn::Cos: return "cos";
    case Fn::Tan: return "tan";
    case Fn::Asin: return "asin";
    case Fn::Acos: return "acos";
    case Fn::Atan: return "atan";
    case Fn::Sqrt: return "sqrt";
    case Fn::Exp: return "exp";
    case Fn::Log: return "log";
    case Fn::Abs: return "fabs";
    case Fn::Sign: return "sign";
    case Fn::Atan2: return "atan2";
    case Fn::Min: return "min";
    case Fn::Max: return "max";
    case Fn::Select: return "select";
    case Fn::Lt: return "<";
    case Fn::Le: return "<=";
    case Fn::Eq: return "==";
    case Fn::Ne: return "!=";
    case Fn::And: return "&&";
    case Fn::Or: return "||";
    case Fn::Not: return "!";
  }
  return "?";
}

int fnArity(Fn fn) {
  if (fn == Fn::Select) return 3;
  if (fn == Fn::Not || fn < Fn::Atan2) return 1;
  return 2;
}

Expr::Expr() : node_(Pool::current().zero()) {}

Expr Expr::constant(double value) { return Expr(constantNode(value)); }

Expr Expr::symbol(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("symbolic: a symbol needs a name");
  return Expr(pool().intern(Pool::Key{Kind::Symbol, Fn::None, 0.0, nullptr, nullptr, 0, name}));
}

Expr& Expr::operator+=(const Expr& rhs) { return *this = *this + rhs; }
Expr& Expr::operator-=(const Expr& rhs) { return *this = *this - rhs; }
Expr& Expr::operator*=(const Expr& rhs) { return *this = *this * rhs; }
Expr& Expr::operator/=(const Expr& rhs) { return *this = *this / rhs; }

Expr operator+(const Expr& a, const Expr& b) {
  if (b.isZero()) return a;
  if (a.isZero()) return b;
  return Expr(makeSum({Term{a.node(), 1.0}, Term{b.node(), 1.0}}));
}

Expr operator-(const Expr& a, const Expr& b) {
  if (b.isZero()) return a;
  return Expr(makeSum({Term{a.node(), 1.0}, Term{b.node(), -1.0}}));
}

Expr operator-(const Expr& a) { return Expr(scaled(-1.0, a.node())); }

Expr operator*(const Expr& a, const Expr& b) {
  if (a.isZero() || b.isZero()) return Expr();
  if (a.isOne()) return b;
  if (b.isOne()) return a;
  if (a.isConstant()) return Expr(scaled(a.value(), b.node()));
  if (b.isConstant()) return Expr(scaled(b.value(), a.node()));
  return Expr(makeProduct(1.0, {Term{a.node(), 1.0}, Term{b.node(), 1.0}}));
}

Expr operator/(const Expr& a, const Expr& b) {
  if (b.isOne()) return a;
  if (b.isConstant()) return Expr(scaled(1.0 / b.value(), a.node()));
  if (a.isZero()) return a;
  return Expr(makeProduct(1.0, {Term{a.node(), 1.0}, Term{b.node(), -1.0}}));
}

Cond operator<(const Expr& a, const Expr& b) { return Cond(apply(Fn::Lt, a, b)); }
Cond operator<=(const Expr& a, const Expr& b) { return Cond(apply(Fn::Le, a, b)); }
Cond operator>(const Expr& a, const Expr& b) { return Cond(apply(Fn::Lt, b, a)); }
Cond operator>=(const Expr& a, const Expr& b) { return Cond(apply(Fn::Le, b, a)); }
Cond operator==(const Expr& a, const Expr& b) { return Cond(apply(Fn::Eq, a, b)); }
Cond operator!=(const Expr& a, const Expr& b) { return Cond(apply(Fn::Ne, a, b)); }
Cond operator!(const Cond& c) { return Cond(apply(Fn::Not, c.expr())); }
Cond operator&&(const Cond& a, const Cond& b) { return Cond(apply(Fn::And, a.expr(), b.expr())); }
Cond operator||(const Cond& a, const Cond& b) { return Cond(apply(Fn::Or, a.expr(), b.expr())); }

Expr select(const Cond& cond, const Expr& a, const Expr& b) { return apply(Fn::Select, cond.expr(), a, b); }

Expr apply(Fn fn, const Expr& a, const Expr& b, const Expr& c) {
  if (fn == Fn::None) throw std::invalid_argument("symbolic: apply needs a function");
  return Expr(makeFunc(fn, a.node(), b.node(), c.node()));
}

Expr sin(const Expr& x) { return apply(Fn::Sin, x); }
Expr cos(const Expr& x) { return apply(Fn::Cos, x); }
Expr tan(const Expr& x) { return apply(Fn::Tan, x); }
Expr asin(const Expr& x) { return apply(Fn::Asin, x); }
Expr acos(const Expr& x) { return apply(Fn::Acos, x); }
Expr atan(const Expr& x) { return apply(Fn::Atan, x); }
Expr sqrt(const Expr& x) { return apply(Fn::Sqrt, x); }
Expr exp(const Expr& x) { return apply(Fn::Exp, x); }
Expr log(const Expr& x) { return apply(Fn::Log, x); }
Expr abs(const Expr& x) { return apply(Fn::Abs, x); }
Expr fabs(const Expr& x) { return apply(Fn::Abs, x); }
Expr sign(const Expr& x) { return apply(Fn::Sign, x); }
Expr atan2(const Expr& y, const Expr& x) { return apply(Fn::Atan2, y, x); }
Expr min(const Expr& a, const Expr& b) { return apply(Fn::Min, a, b); }
Expr max(const Expr& a, const Expr& b) { return apply(Fn::Max, a, b); }
Expr pow(const Expr& base, const Expr& exponent) { return Expr(makePow(base.node(), exponent.node())); }

namespace {

const Node* callNode(std::string_view function, std::span<const Expr> args, int results) {
  if (function.empty()) throw std::invalid_argument("symbolic: an opaque call needs a function name");
  if (results < 1) throw std::invalid_argument("symbolic: an opaque call has at least one result");
  std::vector<const Node*> nodes;
  nodes.reserve(args.size());
  for (const Expr& a : args) nodes.push_back(a.node());
  // Never folded, even on constant arguments: the engine cannot compute it.
  return pool().intern(Pool::Key{Kind::Call, Fn::None, static_cast<double>(results), nodes.data(), nullptr,
                                 static_cast<std::uint32_t>(nodes.size()), function});
}

}  // namespace

Expr call(std::string_view function, std::span<const Expr> args) { return Expr(callNode(function, args, 1)); }

Expr callResult(const Expr& call, int k) {
  if (!call.node()->isMultiCall() || k < 0 || k >= call.node()->results())
    throw std::invalid_argument("symbolic: no result " + std::to_string(k) + " of that node");
  const Node* a[1] = {call.node()};
  return Expr(pool().intern(Pool::Key{Kind::Result, Fn::None, static_cast<double>(k), a, nullptr, 1, {}}));
}

std::vector<Expr> call(std::string_view function, std::span<const Expr> args, int results) {
  const Node* c = callNode(function, args, results);
  if (results == 1) return {Expr(c)};
  std::vector<Expr> out;
  for (int k = 0; k < results; ++k) out.push_back(callResult(Expr(c), k));
  return out;
}

}  // namespace capstan::symbolic
