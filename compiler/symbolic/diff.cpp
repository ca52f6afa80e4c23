#include "symbolic/diff.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "symbolic/traverse.hpp"

namespace capstan::symbolic {

namespace {
thread_local const CallDerivative* currentCallDerivative = nullptr;

// The derivative rules of the functions (Kind::Func), for both directions:
// d fn(args) / d args[i]. min, max and select follow one argument, which
// `follows` says; comparisons, logic and sign are piecewise constant.
struct FuncRule {
  // The condition under which the result is its first numeric argument
  // (min, max: argument 0; select: argument 1), else its second; null
  // for the functions that follow no argument.
  std::optional<Cond> follows;
  std::uint32_t first = 0;
  // Otherwise each argument's partial derivative (zero: none).
  std::vector<Expr> partials;
};

FuncRule funcRule(const Node* node) {
  auto arg = [&](std::uint32_t i) { return Expr(node->args[i]); };
  const Expr a = arg(0), self(node);
  switch (node->fn) {
    case Fn::Sin: return {{}, 0, {cos(a)}};
    case Fn::Cos: return {{}, 0, {-sin(a)}};
    case Fn::Tan: return {{}, 0, {1.0 + self * self}};
    case Fn::Asin: return {{}, 0, {1.0 / sqrt(1.0 - a * a)}};
    case Fn::Acos: return {{}, 0, {-1.0 / sqrt(1.0 - a * a)}};
    case Fn::Atan: return {{}, 0, {1.0 / (1.0 + a * a)}};
    case Fn::Sqrt: return {{}, 0, {0.5 / self}};
    case Fn::Exp: return {{}, 0, {self}};
    case Fn::Log: return {{}, 0, {1.0 / a}};
    case Fn::Abs: return {{}, 0, {sign(a)}};
    case Fn::Atan2: {  // atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
      const Expr r2 = arg(1) * arg(1) + a * a;
      return {{}, 0, {arg(1) / r2, -a / r2}};
    }
    case Fn::Min: return {a <= arg(1), 0, {}};
    case Fn::Max: return {a >= arg(1), 0, {}};
    case Fn::Select: return {Cond(a), 1, {}};
    case Fn::Sign:
    case Fn::Lt:
    case Fn::Le:
    case Fn::Eq:
    case Fn::Ne:
    case Fn::And:
    case Fn::Or:
    case Fn::Not:
      return {};
    case Fn::None:
      break;
  }
  throw std::logic_error("symbolic: function node without a function");
}
}  // namespace

CallDerivativeScope::CallDerivativeScope(CallDerivative derivative)
    : derivative_(std::move(derivative)), previous_(currentCallDerivative) {
  currentCallDerivative = &derivative_;
}

CallDerivativeScope::~CallDerivativeScope() { currentCallDerivative = previous_; }

const CallDerivative* CallDerivativeScope::current() { return currentCallDerivative; }

Differentiator::Differentiator(const Expr& variable) : variable_(variable) {
  if (!variable.isSymbol()) throw std::invalid_argument("symbolic: differentiate by a symbol only");
}

Expr Differentiator::operator()(const Expr& f) {
  memo_.resize(Pool::current().size(), nullptr);
  auto done = [&](const Node* n) { return n->id < memo_.size() && memo_[n->id] != nullptr; };
  for (const Node* node : postOrder(std::span<const Expr>(&f, 1), done)) {
    if (done(node)) continue;
    Expr d = derivative(node);
    if (memo_.size() <= node->id) memo_.resize(node->id + 1, nullptr);
    memo_[node->id] = d.node();
  }
  return Expr(memo_[f.id()]);
}

Expr Differentiator::derivative(const Node* node) {
  auto d = [&](std::uint32_t i) { return Expr(memo_[node->args[i]->id]); };
  auto arg = [&](std::uint32_t i) { return Expr(node->args[i]); };
  switch (node->kind) {
    case Kind::Constant:
      return Expr();
    case Kind::Symbol:
      return node == variable_.node() ? Expr(1.0) : Expr();
    case Kind::Add: {
      Expr sum;
      for (std::uint32_t i = 0; i < node->size; ++i) {
        Expr di = d(i);
        if (!di.isZero()) sum += node->coeffs[i] * di;
      }
      return sum;
    }
    case Kind::Mul: {
      // sum_i e_i * B_i^(e_i - 1) * B_i' * prod_{j != i} B_j^e_j
      Expr sum;
      for (std::uint32_t i = 0; i < node->size; ++i) {
        Expr di = d(i);
        if (di.isZero()) continue;
        double e = node->coeffs[i];
        Expr term = e * pow(arg(i), e - 1.0) * di;
        for (std::uint32_t j = 0; j < node->size; ++j) {
          if (j != i) term *= pow(arg(j), node->coeffs[j]);
        }
        sum += term;
      }
      return sum;
    }
    case Kind::Pow: {
      Expr b = arg(0), e = arg(1), db = d(0), de = d(1);
      Expr result;
      if (!db.isZero()) result += e * pow(b, e - 1.0) * db;
      if (!de.isZero()) result += Expr(node) * log(b) * de;
      return result;
    }
    case Kind::Call: {
      // An opaque call is constant where its arguments are; through it the
      // engine knows only the derivative the current scope gives.
      std::vector<Expr> dargs;
      int varying = -1;
      for (std::uint32_t i = 0; i < node->size; ++i) {
        dargs.push_back(d(i));
        if (varying < 0 && !dargs.back().isZero()) varying = static_cast<int>(i);
      }
      if (varying < 0) return Expr();
      if (const CallDerivative* derivative = CallDerivativeScope::current(); derivative && !node->isMultiCall())
        if (std::optional<Expr> result = (*derivative)(node, dargs)) return *result;
      throw std::invalid_argument("symbolic: cannot differentiate through the opaque call `" + std::string(node->name) +
                                  "` (its argument " + std::to_string(varying + 1) + " depends on `" +
                                  std::string(variable_.name()) + "`)");
    }
    case Kind::Result:  // its call's arguments do not depend on the variable (above)
      return Expr();
    case Kind::Func:
      break;
  }
  bool varies = false;
  for (std::uint32_t i = 0; i < node->size && !varies; ++i) varies = !d(i).isZero();
  if (!varies) return Expr();  // before the rule builds its partials
  const FuncRule rule = funcRule(node);
  if (rule.follows) return select(*rule.follows, d(rule.first), d(rule.first + 1));
  Expr sum;
  for (std::uint32_t i = 0; i < rule.partials.size(); ++i)
    if (Expr di = d(i); !di.isZero()) sum += rule.partials[i] * di;
  return sum;
}

Expr diff(const Expr& f, const Expr& variable) { return Differentiator(variable)(f); }

namespace {
std::invalid_argument opaque(const Node* call, std::uint32_t argument) {
  return std::invalid_argument("symbolic: cannot differentiate through the opaque call `" + std::string(call->name) +
                               "` (its argument " + std::to_string(argument + 1) + " depends on the variables)");
}
}  // namespace

std::vector<Expr> gradient(const Expr& f, std::span<const Expr> variables) {
  for (const Expr& v : variables)
    if (!v.isSymbol()) throw std::invalid_argument("symbolic: differentiate by a symbol only");
  const std::vector<const Node*> order = postOrder(std::span<const Expr>(&f, 1));
  std::uint32_t ids = 0;
  for (const Node* n : order) ids = std::max(ids, n->id + 1);
  for (const Expr& v : variables) ids = std::max(ids, v.id() + 1);
  // Which nodes vary with a variable: only they pass adjoints on.
  std::vector<char> variable(ids, 0), varying(ids, 0);
  for (const Expr& v : variables) variable[v.id()] = 1;
  for (const Node* n : order) {
    bool v = n->kind == Kind::Symbol && variable[n->id];
    for (std::uint32_t i = 0; i < n->size && !v; ++i) v = varying[n->args[i]->id];
    varying[n->id] = v;
  }
  std::vector<Expr> adjoint(ids, Expr());  // d f / d node, by node id (one zero, copied)
  adjoint[f.id()] = Expr(1.0);
  // Reversed, the post order has every node after all the nodes that use it.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node* n = *it;
    const Expr a = adjoint[n->id];
    if (!varying[n->id] || a.isZero()) continue;
    auto arg = [&](std::uint32_t i) { return Expr(n->args[i]); };
    auto pass = [&](std::uint32_t i, const Expr& partial) {
      if (varying[n->args[i]->id]) adjoint[n->args[i]->id] += a * partial;
    };
    switch (n->kind) {
      case Kind::Constant:
      case Kind::Symbol:
        continue;
      case Kind::Add:
        for (std::uint32_t i = 0; i < n->size; ++i) pass(i, Expr(n->coeffs[i]));
        continue;
      case Kind::Mul:
        // d/dB_i of prod_j B_j^e_j = e_i B_i^(e_i - 1) prod_{j != i} B_j^e_j
        for (std::uint32_t i = 0; i < n->size; ++i) {
          if (!varying[n->args[i]->id]) continue;
          const double e = n->coeffs[i];
          Expr partial = e * pow(arg(i), e - 1.0);
          for (std::uint32_t j = 0; j < n->size; ++j)
            if (j != i) partial *= pow(arg(j), n->coeffs[j]);
          pass(i, partial);
        }
        continue;
      case Kind::Pow:
        if (varying[n->args[0]->id]) pass(0, arg(1) * pow(arg(0), arg(1) - 1.0));
        if (varying[n->args[1]->id]) pass(1, Expr(n) * log(arg(0)));  // no log(b) node for a constant exponent
        continue;
      case Kind::Call: {
        // Asked once per varying argument, with that argument's
        // differential 1 and the others' 0.
        const CallDerivative* derivative = CallDerivativeScope::current();
        for (std::uint32_t i = 0; i < n->size; ++i) {
          if (!varying[n->args[i]->id]) continue;
          std::optional<Expr> partial;
          if (derivative && !n->isMultiCall()) {
            std::vector<Expr> dargs(n->size, Expr());
            dargs[i] = Expr(1.0);
            partial = (*derivative)(n, dargs);
          }
          if (!partial) throw opaque(n, i);
          pass(i, *partial);
        }
        continue;
      }
      case Kind::Result:  // of a call with several results, which has no derivative (as in Differentiator)
        for (std::uint32_t i = 0; i < n->args[0]->size; ++i)
          if (varying[n->args[0]->args[i]->id]) throw opaque(n->args[0], i);
        continue;
      case Kind::Func:
        break;
    }
    const FuncRule rule = funcRule(n);
    if (rule.follows) {
      pass(rule.first, select(*rule.follows, Expr(1.0), Expr()));
      pass(rule.first + 1, select(*rule.follows, Expr(), Expr(1.0)));
    }
    for (std::uint32_t i = 0; i < rule.partials.size(); ++i) pass(i, rule.partials[i]);
  }
  std::vector<Expr> out;
  out.reserve(variables.size());
  for (const Expr& v : variables) out.push_back(adjoint[v.id()]);
  return out;
}

Eigen::Matrix<Expr, Eigen::Dynamic, Eigen::Dynamic> jacobian(std::span<const Expr> f,
                                                              std::span<const Expr> variables) {
  Eigen::Matrix<Expr, Eigen::Dynamic, Eigen::Dynamic> J(static_cast<Eigen::Index>(f.size()),
                                                        static_cast<Eigen::Index>(variables.size()));
  for (std::size_t j = 0; j < variables.size(); ++j) {
    Differentiator dj(variables[j]);
    for (std::size_t i = 0; i < f.size(); ++i)
      J(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = dj(f[i]);
  }
  return J;
}

}  // namespace capstan::symbolic
