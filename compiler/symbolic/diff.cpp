#include "symbolic/diff.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "symbolic/traverse.hpp"

namespace capstan::symbolic {

namespace {
thread_local const CallDerivative* currentCallDerivative = nullptr;
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
  Expr a = arg(0);
  Expr da = d(0);
  switch (node->fn) {
    case Fn::Sin: return cos(a) * da;
    case Fn::Cos: return -sin(a) * da;
    case Fn::Tan: return (1.0 + Expr(node) * Expr(node)) * da;
    case Fn::Asin: return da / sqrt(1.0 - a * a);
    case Fn::Acos: return -da / sqrt(1.0 - a * a);
    case Fn::Atan: return da / (1.0 + a * a);
    case Fn::Sqrt: return da / (2.0 * Expr(node));
    case Fn::Exp: return Expr(node) * da;
    case Fn::Log: return da / a;
    case Fn::Abs: return sign(a) * da;
    case Fn::Sign: return Expr();
    case Fn::Atan2: {  // atan2(y, x)' = (x y' - y x') / (x^2 + y^2)
      Expr x = arg(1), dx = d(1);
      return (x * da - a * dx) / (x * x + a * a);
    }
    case Fn::Min: return select(a <= arg(1), da, d(1));
    case Fn::Max: return select(a >= arg(1), da, d(1));
    case Fn::Select: return select(Cond(a), d(1), d(2));
    case Fn::Lt:
    case Fn::Le:
    case Fn::Eq:
    case Fn::Ne:
    case Fn::And:
    case Fn::Or:
    case Fn::Not:
      return Expr();
    case Fn::None:
      break;
  }
  throw std::logic_error("symbolic: function node without a function");
}

Expr diff(const Expr& f, const Expr& variable) { return Differentiator(variable)(f); }

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
