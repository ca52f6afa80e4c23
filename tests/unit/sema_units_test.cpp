// Unit strings and the unit algebra.
#include <doctest/doctest.h>

#include "sema/units.hpp"

namespace capstan::sema {
namespace {

Unit parse(const char* text) {
  std::string error;
  std::optional<Unit> u = parseUnit(text, error);
  REQUIRE_MESSAGE(u.has_value(), text << ": " << error);
  return *u;
}

TEST_CASE("Modelica unit strings parse into base dimensions") {
  CHECK(parse("N.m").sameAs(parse("J")));
  CHECK(parse("kg.m2").exps == std::array<double, 7>{2, 1, 0, 0, 0, 0, 0});
  CHECK(parse("m/s2").exps == std::array<double, 7>{1, 0, -2, 0, 0, 0, 0});
  CHECK(parse("N.m.s/rad").sameAs(parse("kg.m2/s")));
  CHECK(parse("kg/(m.s)").exps == std::array<double, 7>{-1, 1, -1, 0, 0, 0, 0});
  CHECK(parse("s-1").sameAs(parse("Hz")));
  CHECK(parse("rad").isDimensionless());
  CHECK(parse("1").isDimensionless());
  CHECK(parse("1/s").sameAs(parse("rad/s")));
  CHECK(parse("mm").scale == doctest::Approx(1e-3));
  CHECK_FALSE(parse("mm").sameAs(parse("m")));
}

TEST_CASE("bad unit strings are rejected with a reason") {
  std::string error;
  CHECK_FALSE(parseUnit("meter", error));
  CHECK(error == "unknown unit symbol `meter`");
  CHECK_FALSE(parseUnit("kg.", error));
  CHECK_FALSE(parseUnit("m/(s", error));
  CHECK(error == "missing `)`");
  CHECK_FALSE(parseUnit("", error));
}

TEST_CASE("products, quotients and powers combine exponents") {
  const Unit m = parse("m"), kg = parse("kg"), s = parse("s");
  CHECK(unitMul(kg, unitPow(m, 2)).sameAs(parse("kg.m2")));
  CHECK(unitDiv(m, unitMul(s, s)).sameAs(parse("m/s2")));
  CHECK(unitPow(parse("m2"), 0.5).sameAs(m));
  CHECK(unitMul(kg, Unit::unknown()).kind == Unit::Kind::Unknown);
  // A number scales a unit, softly: it might carry a unit of its own.
  const Unit scaled = unitMul(Unit::literal(), m);
  CHECK(scaled.known());
  CHECK(scaled.soft);
  CHECK_FALSE(scaled.certain());
  CHECK(unitMul(Unit::literal(), Unit::literal()).kind == Unit::Kind::Literal);
}

TEST_CASE("sums need equal units") {
  bool ok = true;
  unitJoin(parse("kg"), parse("m"), ok);
  CHECK_FALSE(ok);
  ok = true;
  CHECK(unitJoin(parse("N.m"), parse("J"), ok).sameAs(parse("J")));
  CHECK(ok);
  ok = true;
  CHECK(unitJoin(Unit::literal(), parse("m"), ok).sameAs(parse("m")));
  CHECK(ok);
  ok = true;
  unitJoin(unitMul(Unit::literal(), parse("kg")), parse("m"), ok);
  CHECK(ok);
}

TEST_CASE("inferred units print canonically; declared ones as written") {
  CHECK(unitMul(parse("kg"), unitPow(parse("m"), 2)).str() == "kg.m2");
  CHECK(unitDiv(parse("m"), unitPow(parse("s"), 2)).str() == "m/s2");
  CHECK(unitDiv(parse("kg"), unitMul(parse("m"), parse("s"))).str() == "kg/(m.s)");
  CHECK(parse("N.m").str() == "N.m");
}

}  // namespace
}  // namespace capstan::sema
