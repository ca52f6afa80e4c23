// Expr: interning, simplification at construction, Eigen products, evaluation.
#include <doctest/doctest.h>

#include <Eigen/Geometry>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "symbolic/evaluate.hpp"
#include "symbolic/expr.hpp"
#include "symbolic/traverse.hpp"
#include "symbolic/printer.hpp"

namespace {

using namespace capstan::symbolic;

constexpr double kRelTol = 1e-12;

bool close(double a, double b, double tol = kRelTol) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}

template <int R, int C>
using MatE = Eigen::Matrix<Expr, R, C>;

// A matrix of fresh symbols "<prefix>(i,j)", each bound to a random value in
// `eval`, and the same values as doubles in `values`.
template <int R, int C>
MatE<R, C> symbolicMatrix(const std::string& prefix, Evaluator& eval, Eigen::Matrix<double, R, C>& values,
                          std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  MatE<R, C> m;
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < C; ++j) {
      m(i, j) = Expr::symbol(prefix + "(" + std::to_string(i) + "," + std::to_string(j) + ")");
      values(i, j) = dist(rng);
      eval.bind(m(i, j), values(i, j));
    }
  }
  return m;
}

template <int R, int C>
void checkMatrix(Evaluator& eval, const MatE<R, C>& e, const Eigen::Matrix<double, R, C>& expected) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) CHECK(close(eval(e(i, j)), expected(i, j)));
}

}  // namespace

TEST_CASE("identical expressions are one interned node") {
  Expr x = Expr::symbol("x"), y = Expr::symbol("y"), z = Expr::symbol("z");
  CHECK(Expr::symbol("x").identical(x));
  CHECK_FALSE(x.identical(y));
  CHECK((x + y).identical(y + x));
  CHECK(((x + y) + z).identical(x + (y + z)));
  CHECK((x * y).identical(y * x));
  CHECK(((x * y) * z).identical(x * (y * z)));
  CHECK(sin(x * y).identical(sin(y * x)));
  CHECK(Expr(2.5).identical(Expr::constant(2.5)));
  CHECK(Expr(-0.0).identical(Expr(0.0)));
  CHECK_FALSE((x - y).identical(y - x));

  std::size_t before = Pool::current().size();
  Expr again = sin(x * y) + (x + y);
  CHECK(again.identical(sin(y * x) + (y + x)));
  CHECK(Pool::current().size() == before + 1);  // only the new sum was created
}

TEST_CASE("symbolDependencies: the symbols each root reaches, through shared subexpressions") {
  const Expr x = Expr::symbol("x"), y = Expr::symbol("y"), z = Expr::symbol("z"), t = Expr::symbol("t");
  const Expr shared = sin(x * y);
  const std::vector<Expr> roots = {shared + 1.0, shared * z, Expr(2.0), z - z, t};
  const std::vector<std::vector<int>> deps = symbolDependencies(roots, std::vector<Expr>{x, y, z});
  REQUIRE(deps.size() == roots.size());
  CHECK(deps[0] == std::vector<int>{0, 1});
  CHECK(deps[1] == std::vector<int>{0, 1, 2});
  CHECK(deps[2].empty());  // a constant
  CHECK(deps[3].empty());  // z - z is zero when built
  CHECK(deps[4].empty());  // t is not among the symbols asked about
  // More than 64 symbols: the bit sets span several words.
  std::vector<Expr> many;
  Expr sum(0.0);
  for (int k = 0; k < 130; ++k) {
    many.push_back(Expr::symbol("s" + std::to_string(k)));
    if (k % 43 == 0) sum += many.back();
  }
  CHECK(symbolDependencies(std::vector<Expr>{sum}, many).at(0) == std::vector<int>{0, 43, 86, 129});
}

TEST_CASE("constant folding and identities") {
  Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  CHECK((Expr(2.0) + 3.0).isConstant(5.0));
  CHECK((Expr(2.0) * 3.0 - 1.0).isConstant(5.0));
  CHECK(sin(Expr(0.0)).isZero());
  CHECK(cos(Expr(0.0)).isOne());
  CHECK(sqrt(Expr(9.0)).isConstant(3.0));
  CHECK(atan2(Expr(1.0), Expr(1.0)).isConstant(std::atan2(1.0, 1.0)));
  CHECK((0.0 * x).isZero());
  CHECK((x * 0.0).isZero());
  CHECK((Expr() * sin(x)).isZero());
  CHECK((1.0 * x).identical(x));
  CHECK((x * 1.0).identical(x));
  CHECK((x + 0.0).identical(x));
  CHECK((0.0 + x).identical(x));
  CHECK((x - x).isZero());
  CHECK((x / x).isOne());
  CHECK((x / 1.0).identical(x));
  CHECK((-(-x)).identical(x));
  CHECK((2.0 * x + 3.0 * x).identical(5.0 * x));
  CHECK((2.0 * x * y - y * x * 2.0).isZero());
  CHECK((x * x).identical(pow(x, 2.0)));
  CHECK((x * x * x / x).identical(x * x));
  CHECK(pow(x, 0.0).isOne());
  CHECK(pow(x, 1.0).identical(x));
  CHECK(pow(x, 0.5).identical(sqrt(x)));
  CHECK((sqrt(x) * sqrt(x)).identical(x));
  CHECK((2.0 * (x + y) - 2.0 * x).identical(2.0 * y));
  CHECK(((x + y) - (y + x)).isZero());
  CHECK((3.0 * (x - 1.0) - 3.0 * x).isConstant(-3.0));
}

TEST_CASE("sums of a large sum keep it as one term") {
  Expr big;
  for (int i = 0; i < 100; ++i) big += Expr::symbol("s" + std::to_string(i)) * Expr::symbol("k");
  const Expr x = Expr::symbol("x"), y = Expr::symbol("y"), z = Expr::symbol("z"), w = Expr::symbol("w");
  const Expr three = x + y + z;  // sums of two are merged: one sum of three
  CHECK(three.identical(x + (y + z)));
  CHECK(((three + w) - three).identical(w));  // a sum of three is one term where it is used
  CHECK(((big + y) - (big + y)).isZero());
  CHECK((big - big).isZero());
}

TEST_CASE("accumulating a long sum term by term stays linear in memory") {
  Pool pool;
  PoolScope scope(pool);
  Expr k = Expr::symbol("k");
  constexpr int kTerms = 20000;
  Expr sum;
  Evaluator eval;
  eval.bind(k, 0.5);
  double expected = 0.0;
  for (int i = 0; i < kTerms; ++i) {
    Expr s = Expr::symbol("s" + std::to_string(i));
    eval.bind(s, 1.0 + i);
    expected += 0.5 * (1.0 + i);
    sum += k * s;
  }
  // Merging every step would copy the whole sum each time: ~kTerms^2/2
  // operands, gigabytes. Kept as nested terms it is a few nodes per step.
  CHECK(pool.size() < 5 * kTerms);
  CHECK(pool.bytes() < static_cast<std::size_t>(kTerms) * 1000);
  CHECK(close(eval(sum), expected, 1e-12));
}

TEST_CASE("sin^2 + cos^2 = 1") {
  Expr a = Expr::symbol("a"), y = Expr::symbol("y");
  CHECK((sin(a) * sin(a) + cos(a) * cos(a)).isOne());
  CHECK((cos(a) * cos(a) + sin(a) * sin(a)).isOne());
  CHECK((3.0 * y * sin(a) * sin(a) + 3.0 * y * cos(a) * cos(a)).identical(3.0 * y));
  CHECK((y + sin(a) * sin(a) + cos(a) * cos(a)).identical(y + 1.0));
  // Different coefficients are left alone (and stay correct).
  Expr unequal = 2.0 * sin(a) * sin(a) + cos(a) * cos(a);
  Evaluator eval;
  eval.bind(a, 0.3);
  CHECK(close(eval(unequal), 2.0 * std::pow(std::sin(0.3), 2) + std::pow(std::cos(0.3), 2)));
}

TEST_CASE("odd and even functions absorb signs") {
  Expr x = Expr::symbol("x");
  CHECK(sin(-x).identical(-sin(x)));
  CHECK(cos(-x).identical(cos(x)));
  CHECK(abs(-2.0 * x).identical(abs(2.0 * x)));
  CHECK((sin(x) + sin(-x)).isZero());
  CHECK(log(exp(x)).identical(x));
}

TEST_CASE("conditions are symbolic and never bool") {
  static_assert(!std::is_convertible_v<Cond, bool>);
  static_assert(!std::is_constructible_v<bool, Cond>);
  Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  CHECK((Expr(1.0) < 2.0).isTrue());
  CHECK((Expr(3.0) < 2.0).isFalse());
  CHECK((x < x).isFalse());
  CHECK((x <= x).isTrue());
  CHECK((x == x).isTrue());
  CHECK((x > y).expr().identical((y < x).expr()));
  CHECK((!(x < y)).expr().identical((y <= x).expr()));
  CHECK(select(Expr(1.0) < 2.0, x, y).identical(x));
  CHECK(select(x < y, x, x).identical(x));
  CHECK(select(!(x < y), x, y).identical(select(y <= x, x, y)));
  CHECK((((x < y) && (Expr(1.0) < 2.0))).expr().identical((x < y).expr()));
  CHECK((((x < y) || (Expr(1.0) < 2.0))).isTrue());

  Evaluator eval;
  eval.bind(x, 1.0);
  eval.bind(y, 2.0);
  CHECK(eval(select(x < y, x, y)) == 1.0);
  CHECK(eval(select(x > y, x, y)) == 2.0);
  CHECK(eval(min(x, y)) == 1.0);
  CHECK(eval(max(x, y)) == 2.0);
  CHECK(eval(sign(x - y)) == -1.0);
  CHECK(eval((x < y && y < 3.0).expr()) == 1.0);
}

TEST_CASE("rotation about z keeps its structural zeros") {
  Expr q = Expr::symbol("q[0]");
  Expr c = cos(q), s = sin(q);
  MatE<3, 3> R_AB;
  R_AB << c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0;
  MatE<3, 1> v_B(Expr::symbol("v0"), Expr::symbol("v1"), Expr::symbol("v2"));
  MatE<3, 1> v_A = R_AB * v_B;
  CHECK(v_A(2).identical(v_B(2)));
  // c*v0 - s*v1 and s*v0 + c*v1: no multiplication by 0 or 1 survives.
  OpCount ops = countOperations(std::vector<Expr>{v_A(0), v_A(1), v_A(2)});
  CHECK(ops.muls == 4);
  CHECK(ops.adds == 2);
  CHECK(ops.funcs == 2);
  // R^T R is exactly the identity.
  MatE<3, 3> RtR = R_AB.transpose() * R_AB;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) CHECK(RtR(i, j).isConstant(i == j ? 1.0 : 0.0));
}

TEST_CASE("Eigen 3x3 and 6x6 operations agree with doubles") {
  std::mt19937 rng(42);
  Evaluator eval;
  Eigen::Matrix3d A, B;
  Eigen::Matrix<double, 3, 1> a, b;
  MatE<3, 3> As = symbolicMatrix<3, 3>("A", eval, A, rng);
  MatE<3, 3> Bs = symbolicMatrix<3, 3>("B", eval, B, rng);
  MatE<3, 1> as = symbolicMatrix<3, 1>("a", eval, a, rng);
  MatE<3, 1> bs = symbolicMatrix<3, 1>("b", eval, b, rng);

  checkMatrix<3, 3>(eval, As * Bs, A * B);
  checkMatrix<3, 3>(eval, As.transpose() * Bs + As, A.transpose() * B + A);
  checkMatrix<3, 1>(eval, As * bs - 2.0 * as, A * b - 2.0 * a);
  checkMatrix<3, 1>(eval, as.cross(bs), a.cross(b));
  CHECK(close(eval(as.dot(bs)), a.dot(b)));
  CHECK(close(eval(as.squaredNorm()), a.squaredNorm()));
  CHECK(close(eval(as.norm()), a.norm()));
  checkMatrix<2, 2>(eval, (As * Bs).block<2, 2>(1, 0), (A * B).block<2, 2>(1, 0));
  checkMatrix<3, 3>(eval, as * bs.transpose(), a * b.transpose());

  // Constant double matrices mix with symbolic ones.
  Eigen::Matrix3d C = Eigen::Matrix3d::Random();
  checkMatrix<3, 1>(eval, C * bs, C * b);
  checkMatrix<3, 3>(eval, As * C, A * C);

  Eigen::Matrix<double, 6, 6> X, Y;
  MatE<6, 6> Xs = symbolicMatrix<6, 6>("X", eval, X, rng);
  MatE<6, 6> Ys = symbolicMatrix<6, 6>("Y", eval, Y, rng);
  checkMatrix<6, 6>(eval, Xs.transpose() * Ys * Xs, X.transpose() * Y * X);
  MatE<6, 6> Z = MatE<6, 6>::Zero();
  Z.topLeftCorner<3, 3>() = As;
  Z.bottomRightCorner<3, 3>() = As;
  Eigen::Matrix<double, 6, 6> Zd = Eigen::Matrix<double, 6, 6>::Zero();
  Zd.topLeftCorner<3, 3>() = A;
  Zd.bottomRightCorner<3, 3>() = A;
  MatE<6, 6> ZY = Z * Ys;
  checkMatrix<6, 6>(eval, ZY, Zd * Y);
  // The zero blocks contribute nothing: each entry is a 3-term dot product.
  CHECK(countOperations(std::vector<Expr>{ZY(0, 0)}).muls == 3);

  // Dynamic sizes: Eigen's blocked kernels branch on values (a compile
  // error with Expr), the coefficient-based lazy product does not.
  Eigen::Matrix<Expr, Eigen::Dynamic, Eigen::Dynamic> Xd = Xs, Yd = Ys;
  Eigen::Matrix<Expr, Eigen::Dynamic, Eigen::Dynamic> XYd = Xd.lazyProduct(Yd);
  Eigen::Matrix<double, 6, 6> XY = X * Y;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) CHECK(close(eval(XYd(i, j)), XY(i, j)));
}

TEST_CASE("evaluation agrees with double arithmetic for every function") {
  Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  Evaluator eval;
  double xv = 0.37, yv = 1.9;
  eval.bind(x, xv);
  eval.bind("y", yv);
  CHECK(close(eval(sin(x) * cos(y) + tan(x)), std::sin(xv) * std::cos(yv) + std::tan(xv)));
  CHECK(close(eval(asin(x) + acos(x) * atan(y)), std::asin(xv) + std::acos(xv) * std::atan(yv)));
  CHECK(close(eval(atan2(y, x) - sqrt(y) / exp(x)), std::atan2(yv, xv) - std::sqrt(yv) / std::exp(xv)));
  CHECK(close(eval(log(y) * abs(x - y) * sign(x)), std::log(yv) * std::abs(xv - yv)));
  CHECK(close(eval(pow(x, y) + pow(y, 7.0) + pow(x, -3.0)),
              std::pow(xv, yv) + std::pow(yv, 7.0) + std::pow(xv, -3.0)));
  CHECK(close(eval((x + 1.0) / (x * y - 2.0)), (xv + 1.0) / (xv * yv - 2.0)));
  // Rebinding invalidates cached values.
  eval.bind(x, 2.0);
  CHECK(close(eval(x * y), 2.0 * yv));
  Evaluator unbound;
  CHECK_THROWS_AS(unbound(x + y), std::invalid_argument);
}

TEST_CASE("pools are independent and scoped") {
  Pool pool;
  std::size_t outer = Pool::current().size();
  {
    PoolScope scope(pool);
    CHECK(&Pool::current() == &pool);
    CHECK(pool.size() == 2);  // 0 and 1
    Expr x = Expr::symbol("x");
    CHECK(x.id() == 2);
    CHECK((x + 1.0).id() == 3);
    CHECK(Expr().isZero());
  }
  CHECK(&Pool::current() != &pool);
  CHECK(Pool::current().size() == outer);
  CHECK(pool.size() == 4);
}

TEST_CASE("a large random DAG builds and evaluates without pathologies") {
  Pool pool;
  PoolScope scope(pool);
  std::mt19937 rng(7);
  std::vector<Expr> values;
  Evaluator eval;
  std::vector<double> numbers;
  for (int i = 0; i < 50; ++i) {
    values.push_back(Expr::symbol("q[" + std::to_string(i) + "]"));
    numbers.push_back(0.5 + 0.01 * i);
    eval.bind(values.back(), numbers.back());
  }
  auto start = std::chrono::steady_clock::now();
  constexpr int kOps = 400000;
  for (int k = 0; k < kOps; ++k) {
    std::uniform_int_distribution<std::size_t> pick(values.size() > 2000 ? values.size() - 2000 : 0,
                                                    values.size() - 1);
    std::size_t i = pick(rng), j = pick(rng);
    Expr a = values[i], b = values[j];
    double av = numbers[i], bv = numbers[j];
    // Every operation maps values of magnitude <= 2 to values of magnitude <= 2,
    // and the leaves lie in [0.5, 1), so the numbers stay finite however deep
    // the DAG grows and the spot-check below always compares.
    switch (k % 5) {
      case 0: values.push_back((a + b) * 0.5); numbers.push_back((av + bv) * 0.5); break;
      case 1: values.push_back(a * b * 0.5); numbers.push_back(av * bv * 0.5); break;
      case 2: values.push_back((a - 0.25 * b) * 0.8); numbers.push_back((av - 0.25 * bv) * 0.8); break;
      case 3: values.push_back((sin(a) + b) * 0.5); numbers.push_back((std::sin(av) + bv) * 0.5); break;
      default: values.push_back(cos(a) * b); numbers.push_back(std::cos(av) * bv); break;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(kOps << " operations: " << pool.size() << " nodes, " << pool.bytes() / (1 << 20) << " MiB, "
                << seconds << " s");
  CHECK(pool.size() > kOps / 2);
  CHECK(pool.bytes() < pool.size() * 400);  // bounded bytes per node
  // Spot-check the values: the last 20, and every 10000th before them.
  std::size_t checked = 0;
  auto spotCheck = [&](std::size_t i) {
    REQUIRE(std::isfinite(numbers[i]));
    CHECK(std::abs(numbers[i]) <= 2.0);
    CHECK(close(eval(values[i]), numbers[i], 1e-9));
    ++checked;
  };
  for (std::size_t i = 50; i + 20 < values.size(); i += 10000) spotCheck(i);
  for (std::size_t i = values.size() - 20; i < values.size(); ++i) spotCheck(i);
  MESSAGE("values compared: " << checked);
  CHECK(checked > 20);
}

TEST_CASE("opaque calls are evaluated through the caller's callback, once per call node") {
  Pool pool;
  PoolScope scope(pool);
  const Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  const Expr f = call("mylib::f", {x + y, 3.0});
  const std::vector<Expr> g = call("mylib::g", std::vector<Expr>{x, y}, 2);
  const Expr e = f * f + g[0] - 2.0 * g[1] + call("mylib::f", {y + x, 3.0});

  Evaluator eval;
  eval.bind(x, 0.5);
  eval.bind(y, 1.25);
  CHECK_THROWS_WITH_AS(eval(e), doctest::Contains("no evaluator for the opaque call `mylib::"), std::invalid_argument);
  int fCalls = 0, gCalls = 0;
  eval.setCalls([&](std::string_view name, std::span<const double> a, std::span<double> r) {
    if (name == "mylib::f") {
      ++fCalls;
      REQUIRE(a.size() == 2);
      REQUIRE(r.size() == 1);
      r[0] = a[0] * a[1];
    } else {
      ++gCalls;
      REQUIRE(r.size() == 2);
      r[0] = a[0] - a[1];
      r[1] = a[0] / a[1];
    }
  });
  const double fx = 1.75 * 3.0;
  CHECK(eval(e) == doctest::Approx(fx * fx + (0.5 - 1.25) - 2.0 * (0.5 / 1.25) + fx).epsilon(1e-15));
  CHECK(fCalls == 1);  // f(x + y, 3) and f(y + x, 3) are one node
  CHECK(gCalls == 1);  // both results of g from one call
  eval.bind(x, 1.0);
  CHECK(eval(g[1]) == doctest::Approx(1.0 / 1.25).epsilon(1e-15));
  CHECK(gCalls == 2);

  // Exceptions from the callback pass through.
  Evaluator failing;
  failing.bind(x, 0.0);
  failing.bind(y, 0.0);
  failing.setCalls([](std::string_view, std::span<const double>, std::span<double>) {
    throw std::runtime_error("friction table out of range");
  });
  CHECK_THROWS_WITH_AS(failing(f), "friction table out of range", std::runtime_error);
}

TEST_CASE("rebuild keeps opaque calls: one result and several") {
  Pool pool;
  PoolScope scope(pool);
  const Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  const Expr f = call("mylib::f", {x, y});
  const std::vector<Expr> g = call("mylib::g", std::vector<Expr>{x}, 2);
  const std::vector<Expr> swapped = {y, x};
  CHECK(rebuild(f.node(), swapped).identical(call("mylib::f", {y, x})));
  const Expr gCall(g[1].node()->args[0]);
  const std::vector<Expr> one = {y};
  const Expr gy(rebuild(gCall.node(), one));
  CHECK(gy.identical(Expr(call("mylib::g", std::vector<Expr>{y}, 2)[0].node()->args[0])));
  const std::vector<Expr> callArg = {gy};
  CHECK(rebuild(g[1].node(), callArg).identical(call("mylib::g", std::vector<Expr>{y}, 2)[1]));
  CHECK_THROWS_AS(callResult(f, 0), std::invalid_argument);
}
