// Hash-consed symbolic expressions, usable as an Eigen scalar.
//
// An `Expr` is a pointer-sized handle to an immutable node interned in a
// `Pool`: two structurally identical expressions built in the same pool are
// the same node, so common subexpressions are shared by construction and
// `identical()` is a pointer comparison. Construction simplifies (constant
// folding, 0*x = 0, 1*x = x, like terms, sin^2 + cos^2 = 1, ...); see
// docs/symbolic.md for the canonical forms and the rules.
//
// Comparison operators (`<`, `==`, ...) build symbolic conditions (`Cond`),
// which cannot be converted to bool: code traced with Scalar = Expr cannot
// branch on values, and must use `select(cond, a, b)` instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

namespace capstan::symbolic {

enum class Kind : std::uint8_t {
  Constant,  // value
  Symbol,    // name
  Add,       // value + sum_i coeffs[i] * args[i]
  Mul,       // prod_i args[i] ^ coeffs[i]   (integer exponents)
  Pow,       // args[0] ^ args[1]            (non-integer or symbolic exponent)
  Func,      // fn(args[0], ...)
  // Opaque calls: a function the tracer cannot see into (an `external "C++"`
  // function, a runtime routine that branches on values). The engine knows
  // only its name and arguments; evaluation asks the caller (Evaluator::
  // setCalls), differentiation refuses it, the printer spells it as a call.
  Call,      // name(args[0], ...) with value = the number of results; one
             // result: the node is that result, else see Result
  Result,    // result number `value` (0-based) of the Call args[0]
};

enum class Fn : std::uint8_t {
  None,
  // numeric, one argument
  Sin, Cos, Tan, Asin, Acos, Atan, Sqrt, Exp, Log, Abs, Sign,
  // numeric, two arguments
  Atan2, Min, Max,
  // select(cond, a, b)
  Select,
  // boolean results (evaluate to 1 or 0): comparisons and logic
  Lt, Le, Eq, Ne, And, Or, Not,
};

// The C++ spelling of a function ("sin"), for printers and messages.
std::string_view fnName(Fn fn);
// The number of arguments `fn` takes.
int fnArity(Fn fn);

// One interned node. Nodes live as long as their pool and never change.
struct Node {
  Kind kind;
  Fn fn;
  std::uint32_t size;  // number of args (and coeffs for Add and Mul)
  std::uint32_t id;    // creation index in the pool: dense, for side tables
  std::uint32_t height;  // 0 for leaves, else 1 + the highest argument
  std::uint64_t hash;    // structural: the same for the same expression in any pool
  double value;        // Constant: the value; Add: the constant term
  const Node* const* args;
  const double* coeffs;  // Add: coefficients; Mul: exponents; else null
  std::string_view name;  // Symbol: its name; Call: the function's C++ name

  bool isConstant() const { return kind == Kind::Constant; }
  // True for comparisons and logic (the node's value is 0 or 1).
  bool isBoolean() const { return kind == Kind::Func && fn >= Fn::Lt; }
  // k*T is stored as an Add with a zero constant and one term: the scaled form.
  bool isScaled() const { return kind == Kind::Add && size == 1 && value == 0.0; }
  // An opaque call with several results (not a number itself: its Result
  // nodes are).
  bool isMultiCall() const { return kind == Kind::Call && value != 1.0; }
  int results() const { return kind == Kind::Call ? static_cast<int>(value) : 1; }
};

// The canonical order of operands (of sums, products, min, ...): constants,
// then symbols by name (digit runs compared as numbers: q[2] < q[10]), then
// the rest by height and structural hash. It depends only on structure,
// never on creation order, so output is stable across compilers and runs.
bool canonicalLess(const Node* a, const Node* b);

class Pool;

class Expr {
 public:
  Expr();  // the constant 0 of the current pool
  template <class T>
    requires std::is_arithmetic_v<T>
  Expr(T value) : Expr(constant(static_cast<double>(value))) {}  // NOLINT: implicit on purpose
  explicit Expr(const Node* node) : node_(node) {}

  static Expr constant(double value);
  // A named input (q[3], u[0], p.link_2_body_mass, time, ...). The name is
  // the identity: the same name is the same symbol.
  static Expr symbol(std::string_view name);

  const Node* node() const { return node_; }
  Kind kind() const { return node_->kind; }
  std::uint32_t id() const { return node_->id; }
  bool isConstant() const { return node_->kind == Kind::Constant; }
  bool isSymbol() const { return node_->kind == Kind::Symbol; }
  bool isConstant(double v) const { return isConstant() && node_->value == v; }
  bool isZero() const { return isConstant(0.0); }
  bool isOne() const { return isConstant(1.0); }
  // Only for constants.
  double value() const { return node_->value; }
  // Only for symbols.
  std::string_view name() const { return node_->name; }
  // Same interned node (structural identity, not numeric equality).
  bool identical(const Expr& other) const { return node_ == other.node_; }

  Expr& operator+=(const Expr& rhs);
  Expr& operator-=(const Expr& rhs);
  Expr& operator*=(const Expr& rhs);
  Expr& operator/=(const Expr& rhs);

 private:
  const Node* node_;
};

// A symbolic truth value, produced by comparisons; deliberately not
// convertible to bool.
class Cond {
 public:
  explicit Cond(Expr e) : e_(e) {}
  const Expr& expr() const { return e_; }
  // Constant-folded to true / false?
  bool isTrue() const { return e_.isConstant() && e_.value() != 0.0; }
  bool isFalse() const { return e_.isZero(); }

 private:
  Expr e_;
};

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
inline Expr operator+(const Expr& a) { return a; }
inline Expr operator+(const Expr& a, double b) { return a + Expr(b); }
inline Expr operator+(double a, const Expr& b) { return Expr(a) + b; }
inline Expr operator-(const Expr& a, double b) { return a - Expr(b); }
inline Expr operator-(double a, const Expr& b) { return Expr(a) - b; }
inline Expr operator*(const Expr& a, double b) { return a * Expr(b); }
inline Expr operator*(double a, const Expr& b) { return Expr(a) * b; }
inline Expr operator/(const Expr& a, double b) { return a / Expr(b); }
inline Expr operator/(double a, const Expr& b) { return Expr(a) / b; }

// Symbolic comparisons (see Cond). a > b is stored as b < a.
Cond operator<(const Expr& a, const Expr& b);
Cond operator<=(const Expr& a, const Expr& b);
Cond operator>(const Expr& a, const Expr& b);
Cond operator>=(const Expr& a, const Expr& b);
Cond operator==(const Expr& a, const Expr& b);
Cond operator!=(const Expr& a, const Expr& b);
#define CAPSTAN_SYMBOLIC_CMP_DOUBLE(op)                                  \
  inline Cond operator op(const Expr& a, double b) { return a op Expr(b); } \
  inline Cond operator op(double a, const Expr& b) { return Expr(a) op b; }
CAPSTAN_SYMBOLIC_CMP_DOUBLE(<)
CAPSTAN_SYMBOLIC_CMP_DOUBLE(<=)
CAPSTAN_SYMBOLIC_CMP_DOUBLE(>)
CAPSTAN_SYMBOLIC_CMP_DOUBLE(>=)
CAPSTAN_SYMBOLIC_CMP_DOUBLE(==)
CAPSTAN_SYMBOLIC_CMP_DOUBLE(!=)
#undef CAPSTAN_SYMBOLIC_CMP_DOUBLE
Cond operator!(const Cond& c);
Cond operator&&(const Cond& a, const Cond& b);
Cond operator||(const Cond& a, const Cond& b);

// cond ? a : b, evaluated lazily in generated code.
Expr select(const Cond& cond, const Expr& a, const Expr& b);

// Functions found by argument-dependent lookup (write `using std::sin;
// sin(x)` in code templated on Scalar).
Expr sin(const Expr& x);
Expr cos(const Expr& x);
Expr tan(const Expr& x);
Expr asin(const Expr& x);
Expr acos(const Expr& x);
Expr atan(const Expr& x);
Expr sqrt(const Expr& x);
Expr exp(const Expr& x);
Expr log(const Expr& x);
Expr abs(const Expr& x);
Expr fabs(const Expr& x);
Expr sign(const Expr& x);  // -1, 0 or 1
Expr atan2(const Expr& y, const Expr& x);
Expr pow(const Expr& base, const Expr& exponent);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
inline Expr atan2(const Expr& y, double x) { return atan2(y, Expr(x)); }
inline Expr atan2(double y, const Expr& x) { return atan2(Expr(y), x); }
inline Expr pow(const Expr& b, double e) { return pow(b, Expr(e)); }
inline Expr pow(double b, const Expr& e) { return pow(Expr(b), e); }
inline Expr min(const Expr& a, double b) { return min(a, Expr(b)); }
inline Expr min(double a, const Expr& b) { return min(Expr(a), b); }
inline Expr max(const Expr& a, double b) { return max(a, Expr(b)); }
inline Expr max(double a, const Expr& b) { return max(Expr(a), b); }
// The generic builder behind the named functions (checks the arity).
Expr apply(Fn fn, const Expr& a, const Expr& b = Expr(), const Expr& c = Expr());

// Opaque calls (Kind::Call). `function` is the C++ name the generated code
// calls (`mylib::friction`); the same function of the same arguments is the
// same node, so it is evaluated once. call() of one result gives the value;
// with `results` > 1, the values are Result nodes of one call node, in
// order (the generated code calls once and reads each result).
Expr call(std::string_view function, std::span<const Expr> args);
std::vector<Expr> call(std::string_view function, std::span<const Expr> args, int results);
// Result `k` of `call`, a call node with several results.
Expr callResult(const Expr& call, int k);
inline Expr call(std::string_view function, std::initializer_list<Expr> args) {
  return call(function, std::span<const Expr>(args.begin(), args.size()));
}

// A readable one-line rendering for tests and messages (not the C++ printer).
std::string str(const Expr& e);
std::ostream& operator<<(std::ostream& os, const Expr& e);

struct ExprHash {
  std::size_t operator()(const Expr& e) const { return static_cast<std::size_t>(e.node()->hash); }
};
struct ExprIdentical {
  bool operator()(const Expr& a, const Expr& b) const { return a.identical(b); }
};

// Owns interned nodes. Every thread has a current pool (a process-wide
// default unless a PoolScope is active); expressions from different pools
// must not be mixed, and an Expr dies with its pool.
class Pool {
 public:
  Pool();
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  static Pool& current();

  std::size_t size() const;   // number of nodes
  std::size_t bytes() const;  // memory held by nodes and the table

  struct Key {
    Kind kind;
    Fn fn;
    double value;
    const Node* const* args;
    const double* coeffs;
    std::uint32_t size;
    std::string_view name;
  };
  // The node for `key`, created if absent.
  const Node* intern(const Key& key);
  // The node for `key` or null; never creates.
  const Node* find(const Key& key) const;

  const Node* zero() const { return zero_; }
  const Node* one() const { return one_; }

 private:
  struct Impl;
  Impl* impl_;
  const Node* zero_;
  const Node* one_;
  friend class PoolScope;
};

// Makes `pool` the current pool of this thread for the scope's lifetime.
class PoolScope {
 public:
  explicit PoolScope(Pool& pool);
  ~PoolScope();
  PoolScope(const PoolScope&) = delete;
  PoolScope& operator=(const PoolScope&) = delete;

 private:
  Pool* previous_;
};

}  // namespace capstan::symbolic

namespace Eigen {

template <>
struct NumTraits<capstan::symbolic::Expr> {
  using Real = capstan::symbolic::Expr;
  using NonInteger = capstan::symbolic::Expr;
  using Literal = capstan::symbolic::Expr;
  using Nested = capstan::symbolic::Expr;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = 1,
    AddCost = 1,
    MulCost = 1,
  };
  static Real epsilon() { return Real(std::numeric_limits<double>::epsilon()); }
  static Real dummy_precision() { return Real(1e-12); }
  static Real highest() { return Real(std::numeric_limits<double>::max()); }
  static Real lowest() { return Real(std::numeric_limits<double>::lowest()); }
  static Real infinity() { return Real(std::numeric_limits<double>::infinity()); }
  static Real quiet_NaN() { return Real(std::numeric_limits<double>::quiet_NaN()); }
  static int digits10() { return std::numeric_limits<double>::digits10; }
  static int digits() { return std::numeric_limits<double>::digits; }
};

// Matrices of doubles combine with matrices of Expr (constant geometry times
// symbolic motion); the result is symbolic.
template <typename BinaryOp>
struct ScalarBinaryOpTraits<capstan::symbolic::Expr, double, BinaryOp> {
  using ReturnType = capstan::symbolic::Expr;
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<double, capstan::symbolic::Expr, BinaryOp> {
  using ReturnType = capstan::symbolic::Expr;
};

}  // namespace Eigen
