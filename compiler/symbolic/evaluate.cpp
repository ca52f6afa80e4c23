#include "symbolic/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "symbolic/traverse.hpp"

namespace capstan::symbolic {

double integerPower(double x, double e) {
  double n = std::abs(e);
  double p;
  if (n <= 4.0) {
    p = x;
    for (double k = 1.0; k < n; k += 1.0) p *= x;
  } else {
    p = std::pow(x, n);
  }
  return e < 0.0 ? 1.0 / p : p;
}

void Evaluator::bind(const Expr& symbol, double value) {
  if (!symbol.isSymbol()) throw std::invalid_argument("symbolic: bind needs a symbol");
  std::size_t id = symbol.id();
  if (symbolValue_.size() <= id) {
    symbolValue_.resize(id + 1, 0.0);
    bound_.resize(id + 1, 0);
  }
  symbolValue_[id] = value;
  bound_[id] = 1;
  ++generation_;  // cached values may depend on the old value
}

double Evaluator::operator()(const Expr& e) {
  evaluate(std::span<const Expr>(&e, 1));
  return value_[e.id()];
}

std::vector<double> Evaluator::operator()(std::span<const Expr> outputs) {
  evaluate(outputs);
  std::vector<double> result;
  result.reserve(outputs.size());
  for (const Expr& e : outputs) result.push_back(value_[e.id()]);
  return result;
}

void Evaluator::evaluate(std::span<const Expr> roots) {
  std::size_t n = Pool::current().size();
  if (value_.size() < n) {
    value_.resize(n, 0.0);
    stamp_.resize(n, 0);
  }
  auto done = [&](const Node* node) { return stamp_[node->id] == generation_; };
  for (const Node* node : postOrder(roots, done)) {
    if (done(node)) continue;
    auto arg = [&](std::uint32_t i) { return value_[node->args[i]->id]; };
    double v = 0.0;
    switch (node->kind) {
      case Kind::Constant:
        v = node->value;
        break;
      case Kind::Symbol:
        if (node->id >= bound_.size() || !bound_[node->id])
          throw std::invalid_argument("symbolic: symbol `" + std::string(node->name) + "` is not bound");
        v = symbolValue_[node->id];
        break;
      case Kind::Add: {
        // Same order as printed: terms, then the constant.
        for (std::uint32_t i = 0; i < node->size; ++i) {
          double c = node->coeffs[i];
          double t = arg(i);
          double term = (c == 1.0 || c == -1.0) ? t : std::abs(c) * t;
          v = i == 0 ? (c < 0.0 ? -term : term) : (c < 0.0 ? v - term : v + term);
        }
        if (node->value != 0.0) v += node->value;
        break;
      }
      case Kind::Mul: {
        double num = 1.0;
        double den = 1.0;
        bool anyNum = false;
        bool anyDen = false;
        for (std::uint32_t i = 0; i < node->size; ++i) {
          double e = node->coeffs[i];
          double p = integerPower(arg(i), std::abs(e));
          if (e > 0.0) {
            num = anyNum ? num * p : p;
            anyNum = true;
          } else {
            den = anyDen ? den * p : p;
            anyDen = true;
          }
        }
        v = anyDen ? num / den : num;
        break;
      }
      case Kind::Pow:
        v = std::pow(arg(0), arg(1));
        break;
      case Kind::Call: {
        if (!calls_)
          throw std::invalid_argument("symbolic: no evaluator for the opaque call `" + std::string(node->name) + "`");
        std::vector<double> args(node->size);
        for (std::uint32_t i = 0; i < node->size; ++i) args[i] = arg(i);
        std::vector<double> results(static_cast<std::size_t>(node->results()),
                                    std::numeric_limits<double>::quiet_NaN());
        calls_(node->name, args, results);
        if (node->isMultiCall()) {
          v = std::numeric_limits<double>::quiet_NaN();  // not a number; its Result nodes are
          callResults_[node->id] = std::move(results);
        } else {
          v = results[0];
        }
        break;
      }
      case Kind::Result:
        v = callResults_.at(node->args[0]->id).at(static_cast<std::size_t>(node->value));
        break;
      case Kind::Func: {
        double a = arg(0);
        switch (node->fn) {
          case Fn::Sin: v = std::sin(a); break;
          case Fn::Cos: v = std::cos(a); break;
          case Fn::Tan: v = std::tan(a); break;
          case Fn::Asin: v = std::asin(a); break;
          case Fn::Acos: v = std::acos(a); break;
          case Fn::Atan: v = std::atan(a); break;
          case Fn::Sqrt: v = std::sqrt(a); break;
          case Fn::Exp: v = std::exp(a); break;
          case Fn::Log: v = std::log(a); break;
          case Fn::Abs: v = std::fabs(a); break;
          case Fn::Sign: v = a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : 0.0); break;
          case Fn::Atan2: v = std::atan2(a, arg(1)); break;
          case Fn::Min: v = std::min(a, arg(1)); break;
          case Fn::Max: v = std::max(a, arg(1)); break;
          case Fn::Select: v = a != 0.0 ? arg(1) : arg(2); break;
          case Fn::Lt: v = a < arg(1); break;
          case Fn::Le: v = a <= arg(1); break;
          case Fn::Eq: v = a == arg(1); break;
          case Fn::Ne: v = a != arg(1); break;
          case Fn::And: v = a != 0.0 && arg(1) != 0.0; break;
          case Fn::Or: v = a != 0.0 || arg(1) != 0.0; break;
          case Fn::Not: v = a == 0.0; break;
          case Fn::None: throw std::logic_error("symbolic: function node without a function");
        }
        break;
      }
    }
    value_[node->id] = v;
    stamp_[node->id] = generation_;
  }
}

}  // namespace capstan::symbolic
