// Name lookup: packages, nested classes, imports, extends and modifiers.
#include "sema_test_util.hpp"

namespace capstan::sema::test {
namespace {

using syntax::DiagKind;

TEST_CASE("imports: qualified, wildcard and alias") {
  Session s;
  auto m = s.flatten(R"(
model M
  import Capstan.Sphere;
  import G = Capstan;
  import Capstan.Units.*;
  parameter Length r = 0.5;
  Sphere a(radius = r);
  G.Sphere b(radius = 2 * r);
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(value(*m, "a.radius") == 0.5);
  CHECK(value(*m, "b.radius") == 1.0);
  // The unit comes from the type `Capstan.Units.Length`.
  CHECK(m->variables[static_cast<std::size_t>(m->findVariable("r"))].unit == "m");
}

TEST_CASE("nested classes are found from inside their package") {
  Session s;
  auto m = s.flatten(R"(
package P
  model Inner
    parameter Real k = 3;
    Capstan.Sphere s(radius = k);
  end Inner;
  model Outer
    Inner i(k = 4);
  end Outer;
end P;
model M
  P.Outer o;
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(value(*m, "o.i.s.radius") == 4.0);
}

TEST_CASE("extends: inherited elements, extends modifiers, outer modifiers win") {
  Session s;
  auto m = s.flatten(R"(
model Base
  parameter Real r = 1;
  parameter Real h = 10;
  Capstan.Sphere ball(radius = r);
end Base;
model Derived
  extends Base(r = 2);
  Capstan.Sphere other(radius = h);
end Derived;
model M
  Derived d1;
  Derived d2(r = 3, h = 5);
  Derived d3(ball(radius = 7));
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(value(*m, "d1.ball.radius") == 2.0);
  CHECK(value(*m, "d2.ball.radius") == 3.0);
  CHECK(value(*m, "d2.other.radius") == 5.0);
  CHECK(value(*m, "d3.ball.radius") == 7.0);
  CHECK(value(*m, "d3.r") == 2.0);
}

TEST_CASE("a class extending a primitive is that primitive") {
  Session s;
  auto m = s.flatten(R"(
model Ball10 "a sphere of radius 10"
  extends Capstan.Sphere(radius = 10);
end Ball10;
model M
  Ball10 b;
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  REQUIRE(m->components.size() == 2);  // `b` and the implicit `world`
  const int b = m->findComponent("b");
  REQUIRE(b >= 0);
  CHECK(m->components[static_cast<std::size_t>(b)].kind == "Sphere");
  CHECK(value(*m, "b.radius") == 10.0);
}

TEST_CASE("cyclic extends is reported once with the chain") {
  Session s;
  s.flatten(R"(
model A extends B; end A;
model B extends C; end B;
model C extends A; end C;
model M A a; end M;
)");
  REQUIRE(s.has(DiagKind::CyclicExtends));
  const auto& d = s.diags.diagnostics().front();
  CHECK(d.kind == DiagKind::CyclicExtends);
  CHECK(d.notes.size() == 3);
}

TEST_CASE("nested modifiers, `each` and array distribution") {
  Session s;
  auto m = s.flatten(R"(
model Link
  parameter Real L = 1;
  Capstan.FixedTranslation tip(r = {0, -L, 0});
end Link;
model M
  Link a[3](L = {1, 2, 3});
  Link b[2](each L = 5);
  Link c[2](tip(each r = {1, 0, 0}));
  Capstan.Revolute j[2](axis = {{1, 0, 0}, {0, 1, 0}});
  Link d(tip.r = {0, 0, 9});
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(value(*m, "a[2].L") == 2.0);
  CHECK(value(*m, "a[3].tip.r", 1) == -3.0);
  CHECK(value(*m, "b[2].L") == 5.0);
  CHECK(value(*m, "c[2].tip.r", 0) == 1.0);
  CHECK(value(*m, "j[2].axis", 1) == 1.0);
  CHECK(value(*m, "d.tip.r", 2) == 9.0);
}

TEST_CASE("errors keep going: several are reported in one run") {
  Session s;
  s.flatten(R"(
model M
  Capstan.Sphere a(radius = -1);
  Capstan.Sphere b(radus = 1);
  Capstan.Sphre c;
end M;
)");
  CHECK(s.has(DiagKind::ValueBelowMin));
  CHECK(s.has(DiagKind::UnknownModifier));
  CHECK(s.has(DiagKind::UnknownClass));
  CHECK(s.rendered().find("did you mean `Sphere`?") != std::string::npos);
}

TEST_CASE("a missing library file is reported, not thrown") {
  Session s;
  CHECK(s.lib.addFile("/nonexistent/model.cap") == nullptr);
  CHECK(s.has(DiagKind::FileNotReadable));
}

}  // namespace
}  // namespace capstan::sema::test
