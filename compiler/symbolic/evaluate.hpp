// Numeric evaluation of expressions for a binding of symbols to doubles
// (tests, and checking traced code against the reference interpreter).
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbolic/expr.hpp"

namespace capstan::symbolic {

// Computes the way generated code does: small integer powers by repeated
// multiplication, the same operand order as the C++ printer.
class Evaluator {
 public:
  void bind(const Expr& symbol, double value);
  void bind(std::string_view symbolName, double value) { bind(Expr::symbol(symbolName), value); }

  // Computes an opaque call (Kind::Call): writes its results (as many as
  // `results.size()`) for `args`. Each call node is computed once per
  // evaluation (and again after a bind). Exceptions pass through.
  using Calls = std::function<void(std::string_view function, std::span<const double> args,
                                   std::span<double> results)>;
  void setCalls(Calls calls) {
    calls_ = std::move(calls);
    ++generation_;
  }

  // Throws std::invalid_argument naming the first unbound symbol reached
  // (or the first opaque call reached without setCalls).
  double operator()(const Expr& e);
  std::vector<double> operator()(std::span<const Expr> outputs);

 private:
  void evaluate(std::span<const Expr> roots);

  std::vector<double> symbolValue_;  // by node id
  std::vector<unsigned char> bound_;
  std::vector<double> value_;        // by node id, valid where stamp_ == generation_
  std::vector<unsigned> stamp_;
  Calls calls_;
  std::unordered_map<std::uint32_t, std::vector<double>> callResults_;  // several results, by call node id
  unsigned generation_ = 1;
};

// The value of x^e for integer e, computed as the printer spells it.
double integerPower(double x, double e);

}  // namespace capstan::symbolic
