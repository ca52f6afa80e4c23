// Symbolic differentiation: known formulas and central finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "symbolic/diff.hpp"
#include "symbolic/evaluate.hpp"
#include "symbolic/expr.hpp"
#include "symbolic/printer.hpp"
#include "symbolic/traverse.hpp"

namespace {

using namespace capstan::symbolic;

constexpr double kFdStep = 1e-6;
constexpr double kFdRelTol = 1e-6;

bool close(double a, double b, double tol) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}

// d f / d var at the point in `eval`, by central differences of Expr
// evaluation.
double finiteDifference(const Expr& f, const Expr& var, double at, Evaluator& eval) {
  eval.bind(var, at + kFdStep);
  double plus = eval(f);
  eval.bind(var, at - kFdStep);
  double minus = eval(f);
  eval.bind(var, at);
  return (plus - minus) / (2.0 * kFdStep);
}

}  // namespace

TEST_CASE("derivatives of elementary expressions have the textbook form") {
  Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  CHECK(diff(x, x).isOne());
  CHECK(diff(y, x).isZero());
  CHECK(diff(Expr(3.0), x).isZero());
  CHECK(diff(x * x * x, x).identical(3.0 * x * x));
  CHECK(diff(x * y, x).identical(y));
  CHECK(diff(3.0 * x + 2.0 * y + 1.0, x).isConstant(3.0));
  CHECK(diff(sin(x), x).identical(cos(x)));
  CHECK(diff(cos(x), x).identical(-sin(x)));
  CHECK(diff(exp(2.0 * x), x).identical(2.0 * exp(2.0 * x)));
  CHECK(diff(log(x), x).identical(1.0 / x));
  CHECK(diff(sqrt(x), x).identical(0.5 / sqrt(x)));
  CHECK(diff(1.0 / x, x).identical(-1.0 / (x * x)));
  CHECK(diff(sin(y) * x, y).identical(x * cos(y)));
  // d/dq (sin^2 q + cos^2 q) folds to 0 at construction.
  Expr q = Expr::symbol("q");
  CHECK(diff(sin(q) * sin(q) + cos(q) * cos(q) + q, q).isOne());
  CHECK(diff(sin(q) * sin(q) - cos(q) * cos(q), q).identical(4.0 * sin(q) * cos(q)));
}

TEST_CASE("derivatives match finite differences") {
  Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  Evaluator eval;
  eval.bind(x, 0.41);
  eval.bind(y, 1.3);
  std::vector<Expr> fs = {
      sin(x * y) + cos(x) / y,
      tan(x) * exp(-x * y),
      asin(x / 2.0) + acos(x / 3.0) + atan(x * y),
      atan2(y, x) + atan2(x - 1.0, y),
      sqrt(x * x + y * y) * log(y + x),
      pow(x, y) + pow(y, x) + pow(x + 1.0, 2.5) + pow(x, 7.0) + pow(x, -2.0),
      abs(x - y) * x + min(x * x, y) + max(x, 0.5 * y),
      select(x < y, x * x, y * y * x),
      (x * y - 1.0) / (x * x + y + 2.0),
  };
  for (std::size_t i = 0; i < fs.size(); ++i) {
    CAPTURE(i);
    for (const Expr& var : {x, y}) {
      double at = eval(var);
      double exact = eval(diff(fs[i], var));
      double fd = finiteDifference(fs[i], var, at, eval);
      CHECK(close(exact, fd, kFdRelTol));
    }
  }
}

TEST_CASE("Jacobian of a rotated vector matches the known formula") {
  Expr q = Expr::symbol("q"), r = Expr::symbol("r");
  Expr c = cos(q), s = sin(q);
  Eigen::Matrix<Expr, 3, 3> R;
  R << c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0;
  Eigen::Matrix<Expr, 3, 1> p = R * Eigen::Matrix<Expr, 3, 1>(r, Expr(0.5), Expr(2.0));
  std::vector<Expr> f(p.data(), p.data() + 3);
  std::vector<Expr> vars = {q, r};
  auto J = jacobian(f, vars);
  REQUIRE(J.rows() == 3);
  REQUIRE(J.cols() == 2);
  // d/dq R p = [-s r - 0.5 c; c r - 0.5 s; 0], d/dr = [c; s; 0]
  Evaluator eval;
  eval.bind(q, 0.7);
  eval.bind(r, 1.5);
  double cv = std::cos(0.7), sv = std::sin(0.7);
  CHECK(close(eval(J(0, 0)), -sv * 1.5 - 0.5 * cv, 1e-14));
  CHECK(close(eval(J(1, 0)), cv * 1.5 - 0.5 * sv, 1e-14));
  CHECK(J(2, 0).isZero());
  CHECK(J(0, 1).identical(c));
  CHECK(J(1, 1).identical(s));
  CHECK(J(2, 1).isZero());
}

TEST_CASE("differentiation is memoized and handles deep DAGs") {
  Pool pool;
  PoolScope scope(pool);
  Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  // A chain 20,000 deep: x_{k+1} = 0.5*sin(x_k) + y*x_k. Every node is used
  // twice, so without memoization the work would double at every level.
  Expr f = x;
  for (int k = 0; k < 20000; ++k) f = 0.5 * sin(f) + 0.999 * y * f;
  std::size_t before = pool.size();
  Differentiator d(y);
  Expr df = d(f);
  std::size_t created = pool.size() - before;
  MESSAGE("chain of " << before << " nodes, derivative created " << created);
  CHECK(created < 20 * before);
  CHECK(d(f).identical(df));  // memoized: no new work, same node
  CHECK(pool.size() - before == created);

  Evaluator eval;
  eval.bind(x, 0.3);
  eval.bind(y, 0.9);
  double fd = finiteDifference(f, y, 0.9, eval);
  CHECK(close(eval(df), fd, 1e-5));
}

TEST_CASE("derivatives of unrelated expressions are exactly zero") {
  Expr x = Expr::symbol("x"), u = Expr::symbol("u");
  Expr g = sin(u) * cos(u) + select(u < 1.0, u, 2.0 * u);
  CHECK(diff(g, x).isZero());
  CHECK(diff(sign(x), x).isZero());
  CHECK(diff((x < u).expr(), x).isZero());
}

TEST_CASE("differentiation refuses an opaque call unless its arguments are constant in the variable") {
  Pool pool;
  PoolScope scope(pool);
  const Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  const Expr f = call("mylib::friction", {x, 2.0});
  const std::vector<Expr> g = call("geo::solve", std::vector<Expr>{y}, 2);
  CHECK_THROWS_WITH_AS(diff(x * f, x), doctest::Contains("cannot differentiate through the opaque call `mylib::friction`"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(diff(g[1] * x, y), doctest::Contains("`geo::solve`"), std::invalid_argument);
  // Where the arguments do not depend on the variable, a call is a constant factor.
  const Expr fy = call("mylib::friction", {y, 2.0});
  CHECK(diff(x * x * fy + g[1] * x, x).identical(2.0 * x * fy + g[1]));
  CHECK(diff(fy + g[0], x).isZero());
}

TEST_CASE("a CallDerivativeScope differentiates an opaque call as the call its hook names: df = f_der(x, dx)") {
  Pool pool;
  PoolScope scope(pool);
  const Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  const Expr f = call("mylib::friction", {x * y, 2.0});
  {
    const CallDerivativeScope derivatives([](const Node* node, std::span<const Expr> dargs) -> std::optional<Expr> {
      if (node->name != "mylib::friction") return std::nullopt;
      return call("mylib::frictionDifferential", {Expr(node->args[0]), Expr(node->args[1]), dargs[0], dargs[1]});
    });
    CHECK(diff(f, x).identical(call("mylib::frictionDifferential", {x * y, 2.0, y, 0.0})));
    CHECK(diff(3.0 * f, y).identical(3.0 * call("mylib::frictionDifferential", {x * y, 2.0, x, 0.0})));
    // A call the hook does not know is still refused.
    CHECK_THROWS_AS(diff(call("other", {x}), x), std::invalid_argument);
  }
  // Outside the scope, refused again.
  CHECK_THROWS_WITH_AS(diff(f, x), doctest::Contains("`mylib::friction`"), std::invalid_argument);
}

TEST_CASE("gradient by reverse accumulation equals the Jacobian's row") {
  Pool pool;
  PoolScope scope(pool);
  const Expr x = Expr::symbol("x"), y = Expr::symbol("y"), z = Expr::symbol("z");
  Evaluator eval;
  eval.bind(x, 0.41);
  eval.bind(y, 1.3);
  eval.bind(z, -0.7);
  const std::vector<Expr> fs = {
      sin(x * y) + cos(x) / y * z,
      tan(x) * exp(-x * y) + z * z * z,
      asin(x / 2.0) + acos(x / 3.0) + atan(x * y * z),
      atan2(y, x) + atan2(x - 1.0, y * z),
      sqrt(x * x + y * y) * log(y + x),
      pow(x, y) + pow(y, x) + pow(x + 1.0, 2.5) + pow(x, 7.0) + pow(x * z, -2.0),
      abs(x - y) * x + min(x * x, y) + max(x, 0.5 * y) + sign(z) * z,
      select(x < y, x * x * z, y * y * x),
      (x * y - 1.0) / (x * x + y + 2.0) * sin(z),
      Expr(3.0) + 0.0 * x,
  };
  const std::vector<Expr> variables = {x, y, z};
  for (std::size_t i = 0; i < fs.size(); ++i) {
    CAPTURE(i);
    const std::vector<Expr> g = gradient(fs[i], variables);
    const auto J = jacobian(std::span<const Expr>(&fs[i], 1), variables);
    REQUIRE(g.size() == variables.size());
    for (std::size_t j = 0; j < variables.size(); ++j) {
      CAPTURE(j);
      CHECK(close(eval(g[j]), eval(J(0, static_cast<Eigen::Index>(j))), 1e-14));
      CHECK(close(eval(g[j]), finiteDifference(fs[i], variables[j], eval(variables[j]), eval), kFdRelTol));
    }
  }
  // A variable f does not reach: exactly zero.
  CHECK(gradient(sin(x) * y, std::vector<Expr>{z})[0].isZero());
}

TEST_CASE("gradient of a chain's energy grows like the chain, the Jacobian like its square") {
  // A planar chain of n links: link k at the sum of the first k angles;
  // its height y_k = sum_j sin(phi_j). V = sum_k y_k depends on angle j
  // through every link from j on.
  auto sizes = [](int n) {
    Pool pool;
    PoolScope scope(pool);
    std::vector<Expr> theta;
    Expr phi, height, energy;
    for (int k = 0; k < n; ++k) {
      theta.push_back(Expr::symbol("q[" + std::to_string(k) + "]"));
      phi += theta.back();
      height += sin(phi);
      energy += height;
    }
    const std::vector<Expr> g = gradient(energy, theta);
    const auto J = jacobian(std::span<const Expr>(&energy, 1), theta);
    std::vector<Expr> row(J.data(), J.data() + J.size());
    // Numerically the same.
    Evaluator eval;
    for (int k = 0; k < n; ++k) eval.bind(theta[static_cast<std::size_t>(k)], 0.1 * k - 0.7);
    for (int k = 0; k < n; ++k) CHECK(close(eval(g[static_cast<std::size_t>(k)]), eval(row[static_cast<std::size_t>(k)]), 1e-12));
    return std::pair{postOrder(g).size(), postOrder(row).size()};
  };
  const auto [g20, j20] = sizes(20);
  const auto [g80, j80] = sizes(80);
  MESSAGE("gradient nodes " << g20 << " -> " << g80 << ", Jacobian row nodes " << j20 << " -> " << j80);
  CHECK(static_cast<double>(g80) < 5.0 * static_cast<double>(g20));   // linear: about 4x
  CHECK(static_cast<double>(j80) > 10.0 * static_cast<double>(j20));  // quadratic: about 16x
}

TEST_CASE("gradient refuses an opaque call as diff does, and asks a CallDerivativeScope per argument") {
  Pool pool;
  PoolScope scope(pool);
  const Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  const Expr f = call("mylib::friction", {x * y, 2.0});
  const std::vector<Expr> xy = {x, y};
  CHECK_THROWS_WITH_AS(gradient(x * f, xy), doctest::Contains("`mylib::friction`"), std::invalid_argument);
  const std::vector<Expr> g = call("geo::solve", std::vector<Expr>{y}, 2);
  CHECK_THROWS_WITH_AS(gradient(g[1] * x, xy), doctest::Contains("`geo::solve`"), std::invalid_argument);
  // A call of constants is a constant factor.
  const std::vector<Expr> gx = gradient(x * x * call("mylib::friction", {y, 2.0}), std::vector<Expr>{x});
  CHECK(gx[0].identical(2.0 * x * call("mylib::friction", {y, 2.0})));
  const CallDerivativeScope derivatives([](const Node* node, std::span<const Expr> dargs) -> std::optional<Expr> {
    if (node->name != "mylib::friction") return std::nullopt;
    return call("mylib::frictionDifferential", {Expr(node->args[0]), Expr(node->args[1]), dargs[0], dargs[1]});
  });
  const std::vector<Expr> d = gradient(3.0 * f, xy);
  CHECK(d[0].identical(3.0 * y * call("mylib::frictionDifferential", {x * y, 2.0, 1.0, 0.0})));
  CHECK(d[1].identical(3.0 * x * call("mylib::frictionDifferential", {x * y, 2.0, 1.0, 0.0})));
}
