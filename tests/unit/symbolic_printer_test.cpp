// C++ printer: literals, golden output, determinism, and generated code
// compiled with the system compiler and compared to Expr evaluation.
#include <doctest/doctest.h>

#include <Eigen/Geometry>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "symbolic/evaluate.hpp"
#include "symbolic/expr.hpp"
#include "symbolic/printer.hpp"

namespace {

using namespace capstan::symbolic;

constexpr double kRelTol = 1e-12;

bool close(double a, double b, double tol = kRelTol) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}

// Outputs of a small kinematic computation, built in the current pool.
std::vector<Assignment> planarArm() {
  Expr q0 = Expr::symbol("q[0]"), q1 = Expr::symbol("q[1]");
  Expr l0 = Expr::symbol("p.l0"), l1 = Expr::symbol("p.l1");
  Expr x = l0 * cos(q0) + l1 * cos(q0 + q1);
  Expr y = l0 * sin(q0) + l1 * sin(q0 + q1);
  return {{"out[0]", x}, {"out[1]", y}, {"out[2]", x * x + y * y}};
}

}  // namespace

TEST_CASE("double literals are exact and read as doubles") {
  CHECK(formatDouble(2.0) == "2.0");
  CHECK(formatDouble(0.5) == "0.5");
  CHECK(formatDouble(-3.25) == "-3.25");
  CHECK(formatDouble(0.1) == "0.1");
  CHECK(formatDouble(1e-7) == "1e-07");
  CHECK(formatDouble(1e300) == "1e+300");
  CHECK(formatDouble(-0.0) == "0.0");
  CHECK(formatDouble(1.0 / 3.0) == "0.3333333333333333");
  CHECK(formatDouble(HUGE_VAL) == "std::numeric_limits<double>::infinity()");
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> dist(-1e6, 1e6);
  for (int i = 0; i < 1000; ++i) {
    double v = dist(rng) * std::pow(10.0, static_cast<double>(i % 40) - 20.0);
    CHECK(std::strtod(formatDouble(v).c_str(), nullptr) == v);
  }
}

TEST_CASE("expressions print infix with minimal parentheses") {
  Expr a = Expr::symbol("a"), b = Expr::symbol("b"), c = Expr::symbol("c");
  CHECK(str(a + b) == "a + b");
  CHECK(str(a - 2.0 * b + 1.5) == "a - 2.0*b + 1.5");
  CHECK(str(-a) == "-a");
  CHECK(str(-a - b) == "-a - b");
  CHECK(str(a * (b + c)) == "a*(b + c)");
  CHECK(str(a * b / c) == "a*b/c");
  CHECK(str(a / (b * c)) == "a/(b*c)");
  CHECK(str(1.0 / a) == "1.0/a");
  CHECK(str(a * a * a) == "a*a*a");
  CHECK(str(pow(a, 5.0)) == "std::pow(a, 5.0)");
  CHECK(str(pow(a, b)) == "std::pow(a, b)");
  CHECK(str(pow(a + b, 2.0)) == "(a + b)*(a + b)");
  CHECK(str(sin(a + b) * 3.0) == "3.0*std::sin(a + b)");
  CHECK(str(abs(a) + atan2(a, b)) == "std::atan2(a, b) + std::fabs(a)");
  CHECK(str(a - (b + c) * 2.0) == "a - 2.0*b - 2.0*c");
  CHECK(str(select(a < b, a, b + c)) == "a < b ? a : b + c");
  CHECK(str(select(a < b && b <= c, a, b)) == "b <= c && a < b ? a : b");
  CHECK(str(a * select(a == b, a, b)) == "a*(a == b ? a : b)");
  CHECK(str(a + (a < b).expr()) == "a + (a < b ? 1.0 : 0.0)");
}

TEST_CASE("a block prints shared subexpressions as temporaries (golden)") {
  Pool pool;
  PoolScope scope(pool);
  std::vector<Assignment> outputs = planarArm();
  CppPrinter printer;
  printer.name(Expr::symbol("p.l0"), "p.link_0_length");
  CppPrinter::Block block = printer.block(outputs, "t", "  ");
  const char* expected =
      "  const double t0 = q[0] + q[1];\n"
      "  const double t1 = p.link_0_length*std::cos(q[0]) + p.l1*std::cos(t0);\n"
      "  const double t2 = p.link_0_length*std::sin(q[0]) + p.l1*std::sin(t0);\n"
      "  out[0] = t1;\n"
      "  out[1] = t2;\n"
      "  out[2] = t2*t2 + t1*t1;\n";
  CHECK(block.code == expected);
  CHECK(block.declared.size() == 3);
  CHECK((block.ops == OpCount{4, 6, 0, 4, 0}));
  std::vector<Expr> values = {outputs[0].value, outputs[1].value, outputs[2].value};
  CHECK((countOperations(values) == block.ops));
}

TEST_CASE("later blocks reuse earlier temporaries, or not") {
  Pool pool;
  PoolScope scope(pool);
  Expr q = Expr::symbol("q"), u = Expr::symbol("u");
  Expr s = sin(q), c = cos(q);
  std::vector<Assignment> first = {{"a", s * u}, {"b", c * u + s}};
  std::vector<Assignment> second = {{"d", s * c * u}};

  CppPrinter sharing;
  CHECK(sharing.block(first, "k").code ==
        "const double k0 = std::sin(q);\n"
        "a = u*k0;\n"
        "b = k0 + u*std::cos(q);\n");
  CHECK(sharing.block(second, "k").code == "d = u*k0*std::cos(q);\n");
  sharing.endScope();
  CHECK(sharing.block(second, "k").code == "d = u*std::sin(q)*std::cos(q);\n");

  CppPrinter::Options options;
  options.reuseTemporaries = false;
  CppPrinter separate(options);
  separate.block(first, "k");
  CHECK(separate.block(second, "m").code == "d = u*std::sin(q)*std::cos(q);\n");

  // Naming a value computed elsewhere makes blocks use it.
  CppPrinter named;
  named.name(c * u + s, "b");
  std::vector<Assignment> third = {{"e", q * (c * u + s)}};
  CHECK(named.block(third, "t").code == "e = q*b;\n");
}

TEST_CASE("values later blocks use get temporaries (usedLater, lastUses)") {
  Pool pool;
  PoolScope scope(pool);
  Expr q = Expr::symbol("q"), u = Expr::symbol("u"), d = Expr::symbol("d");
  Expr c = cos(q);
  std::vector<Assignment> first = {{"a", c * u}};
  std::vector<Assignment> second = {{"b", c * d}, {"e", u / (d + u)}};
  std::vector<Assignment> third = {{"f", q / (d + u)}};

  const auto last = lastUses({{c * u}, {c * d, u / (d + u)}, {q / (d + u)}});
  CHECK(last.at(c.id()) == 1);
  CHECK(last.at((d + u).id()) == 2);
  CHECK(last.at((c * u).id()) == 0);
  CHECK(last.at(q.id()) == 2);

  // Without the hook, cos(q) is inlined in the first block and computed
  // again in the second; 1/(d + u) is divided by twice.
  CppPrinter blind;
  CHECK(blind.block(first, "k").code == "a = u*std::cos(q);\n");
  CHECK(blind.block(second, "k").code == "b = d*std::cos(q);\ne = u/(d + u);\n");
  CHECK(blind.block(third, "k").code == "f = q/(d + u);\n");

  CppPrinter seeing;
  std::size_t k = 0;
  auto usedLater = [&](const Node* n) {
    const auto it = last.find(n->id);
    return it != last.end() && it->second > k;
  };
  CHECK(seeing.block(first, "k", "", usedLater).code == "const double k0 = std::cos(q);\na = u*k0;\n");
  k = 1;
  const CppPrinter::Block b = seeing.block(second, "k", "", usedLater);
  CHECK(b.code == "const double k1 = d + u;\nconst double kinv0 = 1.0/k1;\nb = d*k0;\ne = u*kinv0;\n");
  CHECK(b.ops.divs == 1);
  // What each block declares and reads of earlier ones (for splitting a
  // function into parts).
  REQUIRE(b.declared.size() == 2);
  CHECK(b.declared[0].name == "k1");
  CHECK(b.declared[1].name == "kinv0");
  CHECK(b.declared[1].type == "double");
  CHECK(b.reused == std::vector<std::string>{"k0"});
  k = 2;
  const CppPrinter::Block c3 = seeing.block(third, "k", "", usedLater);
  CHECK(c3.code == "f = q*kinv0;\n");
  CHECK(c3.ops.divs == 0);
  CHECK(c3.declared.empty());
  CHECK(c3.reused == std::vector<std::string>{"kinv0"});
}

TEST_CASE("sin and cos of one angle are one call (pairSinCos, sinCosPartners)") {
  Pool pool;
  PoolScope scope(pool);
  Expr q = Expr::symbol("q"), r = Expr::symbol("r"), u = Expr::symbol("u");
  std::vector<Assignment> both = {{"a", u * sin(q)}, {"b", cos(q) + sin(r)}};
  // Off (the default): std::sin and std::cos as before.
  CHECK(CppPrinter().block(both, "k").code == "a = u*std::sin(q);\nb = std::sin(r) + std::cos(q);\n");
  // On: the pair in one block shares a call, its argument read once (a
  // store between two calls could alias it); sin(r), alone, stays std::sin.
  CppPrinter paired(CppPrinter::Options{.pairSinCos = true});
  CHECK(paired.block(both, "k").code ==
        "const capstan_models::SinCos ksc0 = capstan_models::sinCos(q);\n"
        "const double k0 = ksc0.sin;\n"
        "const double k1 = ksc0.cos;\n"
        "a = u*k0;\n"
        "b = std::sin(r) + k1;\n");

  // Across blocks: cos(q) is needed first, sin(q) only by the third block;
  // with the partners, the first block computes both, and the third reads it.
  std::vector<std::vector<Expr>> roots = {{u * cos(q)}, {u * r}, {r * sin(q)}};
  const auto partners = sinCosPartners(roots);
  REQUIRE(partners.size() == 2);
  CHECK(partners.at(cos(q).id()) == sin(q).node());
  CHECK(partners.at(sin(q).id()) == cos(q).node());
  CHECK(sinCosPartners({{sin(q)}, {cos(r)}}).empty());
  const auto last = lastUses(roots);
  std::size_t k = 0;
  auto usedLater = [&](const Node* n) {
    const auto it = last.find(n->id);
    return it != last.end() && it->second > k;
  };
  auto partner = [&](const Node* n) -> const Node* {
    const auto it = partners.find(n->id);
    return it == partners.end() ? nullptr : it->second;
  };
  CppPrinter session(CppPrinter::Options{.pairSinCos = true});
  const std::vector<Assignment> first = {{"a", u * cos(q)}}, second = {{"b", u * r}}, third = {{"c", r * sin(q)}};
  CHECK(session.block(first, "k", "", usedLater, partner).code ==
        "const capstan_models::SinCos ksc0 = capstan_models::sinCos(q);\n"
        "const double k0 = ksc0.cos;\n"
        "const double k1 = ksc0.sin;\n"
        "a = u*k0;\n");
  k = 1;
  CHECK(session.block(second, "k", "", usedLater, partner).code == "b = r*u;\n");
  k = 2;
  const CppPrinter::Block b3 = session.block(third, "k", "", usedLater, partner);
  CHECK(b3.code == "c = r*k1;\n");
  CHECK(b3.reused == std::vector<std::string>{"k1"});
}

TEST_CASE("sin and cos of coordinates are read from the table (sinCosTable, sinCosCoordinates, readsCoordinatesOtherwise)") {
  Pool pool;
  PoolScope scope(pool);
  Expr q0 = Expr::symbol("q[0]"), q3 = Expr::symbol("q[3]"), q7 = Expr::symbol("q[7]");
  Expr r = Expr::symbol("r"), u = Expr::symbol("u");
  CHECK(coordinateIndex(q3.node()) == 3);
  CHECK(coordinateIndex(r.node()) == -1);
  CHECK(coordinateIndex(Expr::symbol("q[x]").node()) == -1);
  CHECK(coordinateIndex(Expr::symbol("dq[1]").node()) == -1);
  CHECK(coordinateIndex((q3 + u).node()) == -1);
  const std::vector<Assignment> out = {{"a", u * sin(q3) + cos(q3)}, {"b", sin(q0) + sin(r)}, {"c", u * cos(q7)}};
  std::vector<Expr> values;
  for (const Assignment& a : out) values.push_back(a.value);
  CHECK(sinCosCoordinates({values}) == std::vector<int>{0, 3, 7});
  CHECK(sinCosCoordinates({{u * q3}}).empty());
  // q[3] read as itself too (a prismatic coordinate, say) needs q; under
  // sin and cos alone it does not.
  CHECK_FALSE(readsCoordinatesOtherwise(values));
  CHECK(readsCoordinatesOtherwise({u * sin(q3), u * q3}));
  CHECK(readsCoordinatesOtherwise({q0}));
  CHECK_FALSE(readsCoordinatesOtherwise({u * r}));
  // The pair of q[3] and sin(q[0]) alone from the table; sin(r) and, past
  // the table's size, cos(q[7]) as before.
  CppPrinter::Options options;
  options.pairSinCos = true;
  options.sinCosTable = "trig";
  options.sinCosTableSize = 4;
  const CppPrinter::Block b = CppPrinter(options).block(out, "k");
  CHECK(b.readsTable);
  CHECK(b.code ==
        "const capstan_models::SinCos ksc0 = trig[3];\n"
        "const double k0 = ksc0.cos;\n"
        "const double k1 = ksc0.sin;\n"
        "const capstan_models::SinCos ksc1 = trig[0];\n"
        "const double k2 = ksc1.sin;\n"
        "a = k0 + u*k1;\n"
        "b = std::sin(r) + k2;\n"
        "c = u*std::cos(q[7]);\n");
  options.sinCosTableSize = 0;
  CHECK_FALSE(CppPrinter(options).block(out, "k").readsTable);
}

TEST_CASE("a condition compared with zero is the condition, not a 0/1 round trip") {
  Pool pool;
  PoolScope scope(pool);
  Expr x = Expr::symbol("x"), y = Expr::symbol("y");
  Expr c = apply(Fn::Lt, x, y);
  CHECK(apply(Fn::Ne, c, Expr(0.0)).identical(c));
  CHECK(apply(Fn::Eq, Expr(0.0), c).identical(apply(Fn::Not, c)));
  CHECK(apply(Fn::Ne, x, Expr(0.0)).node()->fn == Fn::Ne);  // a number stays compared
  // What a model's `if x < y then x else y` becomes.
  CppPrinter printer;
  const std::vector<Assignment> out = {{"r", apply(Fn::Select, apply(Fn::Ne, c, Expr(0.0)), x, y)}};
  const CppPrinter::Block b = printer.block(out);
  CHECK(b.code.find("1.0 : 0.0") == std::string::npos);
  CHECK(b.ops.other == 2);  // the comparison and the select
}

TEST_CASE("products sharing a denominator multiply by one reciprocal") {
  Pool pool;
  PoolScope scope(pool);
  Expr a = Expr::symbol("a"), b = Expr::symbol("b"), c = Expr::symbol("c"), d = Expr::symbol("d");
  Expr D = d + c;
  std::vector<Assignment> first = {{"x", a / D}, {"y", b * c / D}, {"z", a / (D * D) + b / c}};
  CppPrinter printer;
  CppPrinter::Block block = printer.block(first, "t");
  CHECK(block.code ==
        "const double tinv0 = 1.0/(c + d);\n"
        "const double t0 = a*tinv0;\n"
        "x = t0;\n"
        "y = b*c*tinv0;\n"
        "z = b/c + t0*tinv0;\n");
  CHECK(block.ops.divs == 2);  // 1/(c + d) once, and b/c (its only use)
  // z reads x's a/(c + d) for one factor of its square (shared pairs): one
  // multiply fewer than the DAG's count.
  std::vector<Expr> values = {first[0].value, first[1].value, first[2].value};
  OpCount dag = countOperations(values);
  CHECK(dag.muls == block.ops.muls + 1);
  dag.muls -= 1;
  CHECK((dag == block.ops));
  // A later block reuses the reciprocal even for a single product.
  CHECK(printer.block(std::vector<Assignment>{{"w", b / D}}, "t").code == "w = b*tinv0;\n");
  // One-expression printing is unchanged.
  CHECK(str(a / D) == "a/(c + d)");
}

TEST_CASE("a product reads a power computed elsewhere in the block (q[3]*q[3] once)") {
  Pool pool;
  PoolScope scope(pool);
  Expr q = Expr::symbol("q[3]"), r = Expr::symbol("r"), s = Expr::symbol("s");
  // q^2 is a node of its own in `a`, and a factor of the flat product `b`.
  std::vector<Assignment> outputs = {{"a", q * q + r}, {"b", q * q * s}, {"c", q * q * q * s}};
  CppPrinter printer;
  CppPrinter::Block block = printer.block(outputs, "t");
  CHECK(block.code ==
        "const double t0 = q[3]*q[3];\n"
        "a = r + t0;\n"
        "b = t0*s;\n"
        "c = q[3]*q[3]*q[3]*s;\n");
  CHECK(block.ops.muls == 5);  // q^2 once, b's one, c's three (q^3 has no node of its own)
  // A later block reads the temporary too.
  CHECK(printer.block(std::vector<Assignment>{{"d", q * q * r}}, "t").code == "d = t0*r;\n");
}

TEST_CASE("sums and products read a pair of their operands computed once (shared pairs)") {
  Pool pool;
  PoolScope scope(pool);
  Expr a = Expr::symbol("a"), b = Expr::symbol("b"), c = Expr::symbol("c"), d = Expr::symbol("d");
  Expr e = Expr::symbol("e"), f = Expr::symbol("f");
  // The engine merges a*b into a*b*c and c + d into c + d - e: the pair is
  // computed for p and s anyway, so q and r read it.
  // a*d and e + f are nodes of the pool, but no output is one: w and x both
  // hold a*d, y and z both e + f, so each is computed once before w and y.
  // b*e is a node too, read by v only: v multiplies out.
  const Expr ad = a * d, ef = e + f, be = b * e;
  std::vector<Assignment> outputs = {{"p", a * b},     {"q", a * b * c},     {"s", c + d},
                                     {"r", c + d - e}, {"v", be * f},        {"w", ad * c},
                                     {"x", ad * e},    {"y", ef + a - 2.0 * b}, {"z", c - ef - d}};
  CppPrinter printer;
  CppPrinter::Block block = printer.block(outputs, "t");
  CHECK(block.code ==
        "const double t0 = a*b;\n"
        "const double t1 = c + d;\n"
        "const double t2 = a*d;\n"
        "const double t3 = e + f;\n"
        "p = t0;\n"
        "q = t0*c;\n"
        "s = t1;\n"
        "r = t1 - e;\n"
        "v = b*e*f;\n"
        "w = t2*c;\n"
        "x = t2*e;\n"
        "y = -2.0*b + (a + t3);\n"
        "z = -d + (c - t3);\n");
  // Multiplied out: 1 (a*b) + 1 (q) + 2 (v) + 1 (a*d) + 1 + 1 (w, x) + 1 (2.0*b) = 8;
  // adds: 1 (c + d) + 1 (r) + 1 (e + f) + 2 (y) + 2 (z) = 7. (The engine
  // keeps a + e + f, three terms, as one term of y, and c - e - f of z.)
  CHECK(block.ops.muls == 8);
  CHECK(block.ops.adds == 7);
  // The DAG's count (no pairs read) is the upper bound.
  std::vector<Expr> values;
  for (const Assignment& o : outputs) values.push_back(o.value);
  const OpCount dag = countOperations(values);
  CHECK(dag.muls == 8 + 2);
  CHECK(dag.adds == 7 + 2);
  // A later block reads the earlier block's pair.
  CHECK(printer.block(std::vector<Assignment>{{"u", a * b * f}}, "t").code == "u = t0*f;\n");
  // A pair the block computes after its reader is computed before it.
  Expr g = Expr::symbol("g"), h = Expr::symbol("h"), k = Expr::symbol("k");
  CppPrinter second;
  CHECK(second.block(std::vector<Assignment>{{"m", g * h * k}, {"n", g * h}}, "t").code ==
        "const double t0 = g*h;\n"
        "m = t0*k;\n"
        "n = t0;\n");
  // A square gives one factor to a pair (U*U/D reads U/D, times U: the
  // articulated inertia's update), unless the block computes the square.
  Expr U = Expr::symbol("U"), W = Expr::symbol("W"), D = Expr::symbol("D");
  CppPrinter third;
  CHECK(third.block(std::vector<Assignment>{{"x", U / D}, {"y", W / D}, {"z", U * U / D}}, "s").code ==
        "const double sinv0 = 1.0/D;\n"
        "const double s0 = sinv0*U;\n"
        "x = s0;\n"
        "y = sinv0*W;\n"
        "z = s0*U;\n");
  CppPrinter fourth;
  CHECK(fourth.block(std::vector<Assignment>{{"x", U / D}, {"w", U * U + W}, {"z", U * U / D}}, "s").code ==
        "const double sinv0 = 1.0/D;\n"
        "const double s0 = U*U;\n"
        "x = sinv0*U;\n"
        "w = W + s0;\n"
        "z = sinv0*s0;\n");
}

TEST_CASE("a block's statements are ordered for registers (scheduleStatements)") {
  // Post-order holds t2 while t3 is computed; depth first from the output,
  // the operand that needs more registers first (t3: 2, t4: 1) leaves one
  // value fewer live. t0 and t5 are read by a later block: roots, taken in
  // their order with the outputs; t6 and the sin/cos pair only by t7,
  // computed just before it.
  const std::string code =
      "  const double t0 = a*b;\n"
      "  const double t1 = c*d;\n"
      "  const double t2 = e*f;\n"
      "  const double t3 = t0 + t1;\n"
      "  const double t4 = t2*g;\n"
      "  const double t5 = h + 1.0;\n"
      "  const double t6 = p.t0*q[2];\n"
      "  const capstan_models::SinCos tsc0 = capstan_models::sinCos(q[1]);\n"
      "  out[0] = t3*t4;\n"
      "  const double t7 = t6 - tsc0.sin;\n"
      "  out[1] = t7*t5;\n";
  const std::set<std::string, std::less<>> later = {"t5", "out", "t0"};
  CHECK(scheduleStatements(code, [&](std::string_view w) { return later.count(w) > 0; }) ==
        "  const double t0 = a*b;\n"
        "  const double t5 = h + 1.0;\n"
        "  const double t1 = c*d;\n"
        "  const double t3 = t0 + t1;\n"
        "  const double t2 = e*f;\n"
        "  const double t4 = t2*g;\n"
        "  out[0] = t3*t4;\n"
        "  const double t6 = p.t0*q[2];\n"
        "  const capstan_models::SinCos tsc0 = capstan_models::sinCos(q[1]);\n"
        "  const double t7 = t6 - tsc0.sin;\n"
        "  out[1] = t7*t5;\n");
  // Nothing to reorder: the same text back, and an empty block.
  auto none = [](std::string_view) { return false; };
  CHECK(scheduleStatements("  out[0] = a;\n  out[1] = b;\n", none) == "  out[0] = a;\n  out[1] = b;\n");
  CHECK(scheduleStatements("", none).empty());
  // A block that is not one statement a line is left as it is.
  const std::string loop = "  const double t0 = a*b;\n  for (int i = 0; i < 3; ++i) {\n    out[i] = t0;\n  }\n";
  CHECK(scheduleStatements(loop, none) == loop);
}

TEST_CASE("long single-use chains are broken into temporaries") {
  Pool pool;
  PoolScope scope(pool);
  Expr acc = Expr::symbol("x");
  for (int i = 0; i < 40; ++i) acc = sin(acc) * Expr::symbol("k" + std::to_string(i)) + 1.0;
  CppPrinter::Options options;
  options.maxInlineOps = 10;
  CppPrinter printer(options);
  std::vector<Assignment> out = {{"y", acc}};
  CppPrinter::Block block = printer.block(out, "t");
  CHECK(block.declared.size() >= 8);
  std::istringstream lines(block.code);
  for (std::string line; std::getline(lines, line);) CHECK(line.size() < 200);
}

TEST_CASE("printing is deterministic across pools and heap layouts") {
  std::string texts[2];
  std::vector<std::vector<int>> noise;
  for (int run = 0; run < 2; ++run) {
    noise.emplace_back(1000 + 7777 * run);  // shift later allocations
    Pool pool;
    PoolScope scope(pool);
    CppPrinter printer;
    texts[run] = printer.block(planarArm(), "t").code;
  }
  CHECK(texts[0] == texts[1]);
}

TEST_CASE("printed code compiled by the system compiler matches evaluation") {
  Pool pool;
  PoolScope scope(pool);
  std::vector<Expr> q;
  for (int i = 0; i < 4; ++i) q.push_back(Expr::symbol("q[" + std::to_string(i) + "]"));
  Expr m = Expr::symbol("p.mass");
  // A spatial-style computation with every kind of node.
  Eigen::Matrix<Expr, 3, 3> R;
  R << cos(q[0]), -sin(q[0]), 0.0, sin(q[0]), cos(q[0]), 0.0, 0.0, 0.0, 1.0;
  Eigen::Matrix<Expr, 3, 1> v(q[1], q[2] * q[3], 2.0);
  Eigen::Matrix<Expr, 3, 1> w = R * v;
  Eigen::Matrix<Expr, 3, 1> c = w.cross(v);
  std::vector<Assignment> outputs;
  for (int i = 0; i < 3; ++i) {
    outputs.push_back({"out[" + std::to_string(i) + "]", m * c(i) / (1.0 + w.squaredNorm())});
  }
  outputs.push_back({"out[3]", sqrt(w.squaredNorm()) + atan2(w(1), w(0)) + pow(q[1], q[2]) + exp(-q[3])});
  outputs.push_back({"out[4]", select(q[0] < q[1], tan(q[2]), asin(q[3] / 4.0)) + sign(q[2] - q[1]) +
                                   min(q[0], q[3]) * max(q[1], q[2]) + abs(q[2] - 3.0) + log(q[1])});
  outputs.push_back({"out[5]", pow(q[0] + q[1], 6.0) - 1.0 / (q[2] * q[2] * q[3])});
  outputs.push_back({"out[6]", select((q[0] < q[1]) || !(q[2] < q[3]), acos(q[3] / 5.0), atan(q[1]))});
  // Opaque calls: one result, and two results read by both blocks.
  const std::vector<Expr> polar = call("ext::polar", std::vector<Expr>{q[0] + q[1], q[2]}, 2);
  outputs.push_back({"out[7]", call("ext::fric", {q[1] * q[2], m}) + polar[0]});
  outputs.push_back({"out[8]", polar[1] * call("ext::fric", {q[1] * q[2], m})});
  outputs.push_back({"out[9]", polar[0] - polar[1]});

  CppPrinter printer;
  printer.name(m, "p.mass");
  CppPrinter::Block first = printer.block(std::span(outputs).first(3), "a", "  ");
  CppPrinter::Block second = printer.block(std::span(outputs).subspan(3, 5), "b", "  ");
  CppPrinter::Block third = printer.block(std::span(outputs).subspan(8), "c", "  ");

  std::vector<double> qv = {0.3, 1.7, 0.6, 2.2};
  double massValue = 1.25;
  Evaluator eval;
  for (int i = 0; i < 4; ++i) eval.bind(q[static_cast<std::size_t>(i)], qv[static_cast<std::size_t>(i)]);
  eval.bind(m, massValue);
  // The same functions as the generated program's (below).
  eval.setCalls([](std::string_view f, std::span<const double> a, std::span<double> r) {
    if (f == "ext::fric") {
      r[0] = a[1] * std::tanh(a[0]) + 0.25 * a[0];
    } else {
      r[0] = std::hypot(a[0], a[1]);
      r[1] = std::atan2(a[1], a[0]);
    }
  });

  // The blocks as FunctionBuilder emits them: each block's statements
  // ordered for registers, the words later blocks read as its roots.
  auto words = [](const std::string& text) {
    std::set<std::string, std::less<>> found;
    for (std::size_t i = 0; i < text.size();) {
      std::size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      if (j > i) found.insert(text.substr(i, j - i));
      i = j > i ? j : i + 1;
    }
    return found;
  };
  const auto laterWords = [&](const std::string& later) {
    return [found = words(later)](std::string_view w) { return found.count(w) > 0; };
  };
  const std::string scheduled = scheduleStatements(first.code, laterWords(second.code + third.code)) +
                                scheduleStatements(second.code, laterWords(third.code)) +
                                scheduleStatements(third.code, laterWords(""));
  CHECK(scheduled.size() == first.code.size() + second.code.size() + third.code.size());

  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("capstan_symbolic_printer_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream src(dir / "generated.cpp");
    src << "#include <algorithm>\n#include <cmath>\n#include <cstdio>\n#include <limits>\n"
        << "#include <array>\n#include <tuple>\n"
        << "namespace ext {\n"
        << "double fric(double w, const double& mu) { return mu*std::tanh(w) + 0.25*w; }\n"
        << "std::array<double, 2> polar(double x, double y) { return {std::hypot(x, y), std::atan2(y, x)}; }\n"
        << "}  // namespace ext\n"
        << "struct Params { double mass; };\n"
        << "static void compute(const double* q, const Params& p, double* out) {\n"
        << scheduled << "}\n"
        << "int main() {\n  const double q[4] = {" << qv[0] << ", " << qv[1] << ", " << qv[2] << ", " << qv[3]
        << "};\n  const Params p{" << formatDouble(massValue) << "};\n  double out[10];\n"
        << "  compute(q, p, out);\n"
        << "  for (double v : out) std::printf(\"%.17g\\n\", v);\n}\n";
  }
  std::string cmd = "c++ -std=c++17 -O1 -Wall -Wextra -Werror -o " + (dir / "generated").string() + " " +
                    (dir / "generated.cpp").string() + " 2> " + (dir / "errors.txt").string();
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream errors(dir / "errors.txt");
    std::stringstream text;
    text << errors.rdbuf();
    FAIL_CHECK("generated code does not compile:\n" << scheduled << text.str());
  }
  REQUIRE(rc == 0);
  std::string run = (dir / "generated").string() + " > " + (dir / "values.txt").string();
  REQUIRE(std::system(run.c_str()) == 0);
  std::ifstream values(dir / "values.txt");
  for (const Assignment& a : outputs) {
    double printed = 0.0;
    REQUIRE(static_cast<bool>(values >> printed));
    CAPTURE(a.target);
    CHECK(close(printed, eval(a.value)));
  }
  fs::remove_all(dir);
}

TEST_CASE("an opaque call is printed as one call, counted as one, and shared") {
  Pool pool;
  PoolScope scope(pool);
  const Expr w = Expr::symbol("u[0]"), mu = Expr::symbol("p.mu");
  const Expr f = call("mylib::friction", {2.0 * w, mu});
  CHECK(f.identical(call("mylib::friction", {2.0 * w, mu})));   // hash-consed
  CHECK(!f.identical(call("mylib::friction", {mu, 2.0 * w})));  // argument order matters
  CHECK(!f.identical(call("other::friction", {2.0 * w, mu})));
  CHECK(!call("k", {Expr(1.0)}).isConstant());                   // never folded

  // Used twice: one temporary, one call.
  std::vector<Assignment> outputs = {{"tau[0]", -f}, {"y[0]", f * f + 1.0}};
  CppPrinter printer;
  printer.name(mu, "params.mu");
  CppPrinter::Block block = printer.block(outputs, "t", "");
  CHECK(block.code ==
        "const double t0 = mylib::friction(2.0*u[0], params.mu);\n"
        "tau[0] = -t0;\n"
        "y[0] = t0*t0 + 1.0;\n");
  CHECK((block.ops == OpCount{1, 2, 0, 1, 0}));
  std::vector<Expr> values = {outputs[0].value, outputs[1].value};
  CHECK((countOperations(values) == block.ops));

  // Several results: one call into a temporary, results read from it.
  const std::vector<Expr> r = call("geo::solve", std::vector<Expr>{w, mu}, 3);
  REQUIRE(r.size() == 3);
  CHECK(r[1].identical(call("geo::solve", std::vector<Expr>{w, mu}, 3)[1]));
  CHECK(!r[0].identical(r[2]));
  std::vector<Assignment> several = {{"a", r[0] + r[2]}, {"b", r[1]}};
  CppPrinter::Block b2 = CppPrinter().block(several, "s", "");
  CHECK(b2.code ==
        "const auto s0 = geo::solve(u[0], p.mu);\n"
        "a = std::get<0>(s0) + std::get<2>(s0);\n"
        "b = std::get<1>(s0);\n");
  CHECK(b2.ops.funcs == 1);
  CHECK(b2.ops.adds == 1);
  CHECK(str(r[1]) == "std::get<1>(geo::solve(u[0], p.mu))");
}
