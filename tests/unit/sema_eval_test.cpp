// Evaluation: built-ins, stdlib functions inlined, references, force laws,
// outputs, external functions and annotations.
#include <cmath>

#include "sema_test_util.hpp"

namespace capstan::sema::test {
namespace {

using syntax::DiagKind;

std::vector<double> matrix(const FlatModel& m, const std::string& path) {
  const int v = m.findVariable(path);
  REQUIRE(v >= 0);
  REQUIRE(m.variables[static_cast<std::size_t>(v)].value);
  return m.variables[static_cast<std::size_t>(v)].value->numbers;
}

TEST_CASE("Capstan.Frames functions evaluate to rotation matrices") {
  Session s;
  auto m = s.flatten(R"(
model M
  import Capstan.Frames.*;
  parameter Real a(unit = "rad") = 0.3;
  Capstan.FixedFrame z(R = axisRotation({0, 0, 2}, pi / 2));
  Capstan.FixedFrame r(R = rpy(0.1, 0.2, a));
  Capstan.FixedFrame q(R = quaternion(2, 0, 0, 2));
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  const auto z = matrix(*m, "z.R");
  const double expectedZ[9] = {0, -1, 0, 1, 0, 0, 0, 0, 1};
  for (int k = 0; k < 9; ++k) CHECK(z[k] == doctest::Approx(expectedZ[k]).epsilon(1e-12));
  // R = Rz(yaw) Ry(pitch) Rx(roll), built here from the elementary rotations.
  const double r0 = 0.1, p0 = 0.2, y0 = 0.3;
  const double Rx[9] = {1, 0, 0, 0, std::cos(r0), -std::sin(r0), 0, std::sin(r0), std::cos(r0)};
  const double Ry[9] = {std::cos(p0), 0, std::sin(p0), 0, 1, 0, -std::sin(p0), 0, std::cos(p0)};
  const double Rz[9] = {std::cos(y0), -std::sin(y0), 0, std::sin(y0), std::cos(y0), 0, 0, 0, 1};
  double RyRx[9] = {}, R[9] = {};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) RyRx[i * 3 + j] += Ry[i * 3 + k] * Rx[k * 3 + j];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) R[i * 3 + j] += Rz[i * 3 + k] * RyRx[k * 3 + j];
  const auto r = matrix(*m, "r.R");
  for (int k = 0; k < 9; ++k) CHECK(r[k] == doctest::Approx(R[k]).epsilon(1e-12));
  // The binding still refers to the parameter `a` (runtime-changeable).
  const FlatVariable& rr = m->variables[static_cast<std::size_t>(m->findVariable("r.R"))];
  REQUIRE(rr.binding);
  CHECK(rr.binding->kind == FlatExprKind::Array);
  // quaternion (2,0,0,2) normalizes to a 90 degree turn about z.
  const auto q = matrix(*m, "q.R");
  for (int k = 0; k < 9; ++k) CHECK(q[k] == doctest::Approx(expectedZ[k]).epsilon(1e-12));
}

TEST_CASE("built-in functions and matrix products") {
  Session s;
  auto m = s.flatten(R"(
model M
  parameter Real A[3, 3] = {{1, 2, 0}, {0, 1, 0}, {0, 0, 1}};
  parameter Real v[3] = {1, 1, 1};
  parameter Real Av[3] = A * v;
  parameter Real AtA[3, 3] = transpose(A) * A;
  parameter Real c[3] = cross({1, 0, 0}, {0, 1, 0});
  parameter Real n = norm({3, 4, 0});
  parameter Real d = v * v;
  parameter Real w = if n > 4 then max(1, 2) else atan2(1, 1);
  parameter Integer k = size(A, 1) + integerPart;
  parameter Integer integerPart = 2;
  output Real sum3 = sum(Av) + d + w + k + AtA[1, 2] + c[3];
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(matrix(*m, "Av") == std::vector<double>{3, 1, 1});
  CHECK(matrix(*m, "AtA")[1] == 2.0);
  CHECK(matrix(*m, "AtA")[4] == 5.0);
  CHECK(matrix(*m, "c") == std::vector<double>{0, 0, 1});
  CHECK(value(*m, "n") == 5.0);
  CHECK(value(*m, "d") == 3.0);
  CHECK(value(*m, "w") == 2.0);
  CHECK(value(*m, "k") == 5.0);
  const FlatVariable& out = m->variables[static_cast<std::size_t>(m->findVariable("sum3"))];
  CHECK(out.kind == VarKind::Output);
  CHECK(out.binding);
}

TEST_CASE("references hold component paths and are checked") {
  Session s;
  auto m = s.flatten(R"(
model Ballish
  Capstan.Sphere s(radius = 1);
end Ballish;
model M
  Ballish b[2];
  Capstan.ViaPoint via[2];
  Capstan.Cylinder drum(radius = 0.1);
  Capstan.Wrap wrap(surface = drum);
  Capstan.Cable cable(path = {via[1], wrap, via[2]});
  Capstan.CableSpring spring(cable = cable, stiffness = 10, slackLength = 1);
  Capstan.SphereOnSphereContact c(sphereF = b[1].s, sphereB = b[2].s, rolling = true);
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  const FlatComponent& c = m->components[static_cast<std::size_t>(m->findComponent("c"))];
  const Value& f = m->parameter(c, "sphereF");
  CHECK(f.type == ValueType::Reference);
  CHECK(f.strings == std::vector<std::string>{"b[1].s"});
  const Value& path = m->parameter(m->components[static_cast<std::size_t>(m->findComponent("cable"))], "path");
  CHECK(path.shape == std::vector<int>{3});
  CHECK(path.strings == std::vector<std::string>{"via[1]", "wrap", "via[2]"});
  CHECK(m->parameter(c, "rolling").scalar() == 1.0);
}

TEST_CASE("force laws: vector inputs, modifiers, frame quantities, outputs") {
  Session s;
  auto m = s.flatten(R"(
model Pendulum
  Capstan.Composites.PendulumLink link(L = 2);
  Capstan.Frame tipFrame;
equation
  connect(link.frame_b, tipFrame);
end Pendulum;
model M
  parameter Real d(unit = "N.m.s/rad") = 0.5;
  input Real motor(unit = "N.m");
  Capstan.World world;
  Capstan.Ball ball;
  Pendulum p;
  Capstan.Cylinder drum(radius = 0.1);
  Capstan.Wrap wrap(surface = drum);
  Capstan.Cable cable(path = {wrap});
  Capstan.CableActuator act(cable = cable, tension = 10 + 2 * time);
  output Real height(unit = "m") = p.tipFrame.r[2];
  output Real twice(unit = "m");
equation
  connect(world.frame_b, ball.frame_a);
  connect(ball.frame_b, p.link.frame_a);
  ball.tau = -d * ball.u + {0, motor, 0};
  twice = 2 * height;
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  int ballLaws = 0;
  bool tension = false;
  for (const FlatForceLaw& law : m->forceLaws) {
    const std::string& path = m->components[static_cast<std::size_t>(law.component)].path;
    if (path == "ball") {
      CHECK(law.element == ballLaws);
      ++ballLaws;
    }
    if (path == "act") {
      tension = true;
      CHECK(law.input == "tension");
      CHECK(law.element == -1);
    }
  }
  CHECK(ballLaws == 3);
  CHECK(tension);
  // The composite's connector stands for the tip frame of the link.
  const int r = m->findVariable("p.link.tip.frame_b.r");
  REQUIRE(r >= 0);
  CHECK(m->variables[static_cast<std::size_t>(r)].kind == VarKind::Continuous);
  CHECK(m->variables[static_cast<std::size_t>(r)].component == m->findComponent("p.link.tip"));
  const FlatVariable& h = m->variables[static_cast<std::size_t>(m->findVariable("height"))];
  REQUIRE(h.binding);
  CHECK(h.binding->kind == FlatExprKind::Variable);
  CHECK(h.binding->variable == r);
  CHECK(h.binding->element == 1);
  CHECK(m->variables[static_cast<std::size_t>(m->findVariable("twice"))].binding);
  CHECK(m->variables[static_cast<std::size_t>(m->findVariable("motor"))].kind == VarKind::Input);
}

TEST_CASE("external functions are recorded; usable in force laws only") {
  Session s;
  auto m = s.flatten(R"(
function friction "Coulomb-viscous friction"
  input Real w;
  input Real mu;
  output Real tau;
external "C++" tau = mylib::friction(w, mu)
  annotation(Include = "#include \"friction.hpp\"", IncludeDirectory = "include");
end friction;
model M
  parameter Real mu = 0.2;
  Capstan.World world;
  Capstan.Revolute joint;
equation
  connect(world.frame_b, joint.frame_a);
  joint.tau = friction(joint.u, mu);
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  REQUIRE(m->functions.size() == 1);
  const FlatFunction& f = m->functions[0];
  CHECK(f.name == "friction");
  CHECK(f.cppName == "mylib::friction");
  CHECK(f.include == "#include \"friction.hpp\"");
  CHECK(f.includeDirectory == "include");
  CHECK(f.inputs.size() == 2);
  CHECK(f.outputs.size() == 1);
  CHECK(f.callArgs == std::vector<std::string>{"w", "mu"});
  REQUIRE(m->forceLaws.size() == 1);
  CHECK(m->forceLaws[0].rhs->kind == FlatExprKind::Call);
  CHECK(m->forceLaws[0].rhs->function == "friction");
}

TEST_CASE("experiment and Evaluate annotations; constants fold") {
  Session s;
  auto m = s.flatten(R"(
model M
  constant Real g = 9.81;
  parameter Real k = 2 annotation(Evaluate = true);
  parameter Real L(unit = "m") = 1;
  Capstan.World world(gravity = {0, -g, 0});
  Capstan.FixedTranslation t(r = {k * L, 0, 0});
  annotation(experiment(StartTime = 0, StopTime = 10, Interval = 0.01, Tolerance = 1e-8));
end M;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  REQUIRE(m->experiment);
  CHECK(*m->experiment->stopTime == 10.0);
  CHECK(*m->experiment->interval == 0.01);
  CHECK(*m->experiment->tolerance == 1e-8);
  CHECK(*m->experiment->startTime == 0.0);
  CHECK(m->variables[static_cast<std::size_t>(m->findVariable("g"))].evaluate);
  CHECK(m->variables[static_cast<std::size_t>(m->findVariable("k"))].evaluate);
  CHECK_FALSE(m->variables[static_cast<std::size_t>(m->findVariable("L"))].evaluate);
  CHECK(value(*m, "t.r") == 2.0);
}

TEST_CASE("unit errors name both units") {
  Session s;
  s.flatten(R"(
model M
  parameter Real L(unit = "m") = 0.5;
  Capstan.Body body(mass = L, inertia = identity(3));
end M;
)");
  CHECK(s.has(DiagKind::UnitMismatch));
  CHECK(s.rendered().find("value in `m` for `body.mass` in `kg`") != std::string::npos);
}

TEST_CASE("the unused-parameter warning") {
  Session s;
  auto m = s.flatten(R"(
model M
  parameter Real unused = 1;
  parameter Real used = 1;
  Capstan.Sphere sp(radius = used);
end M;
)");
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(s.diags.warningCount() == 1);
  CHECK(s.rendered().find("parameter `unused` is never used") != std::string::npos);
}

TEST_CASE("translation depth is bounded across bindings and inlined functions") {
  // Each parameter reads the next, declared after it, so translating `p0`
  // translates every binding below it first: 10000 of them overflowed the
  // stack; now the translation stops at kMaxTranslateDepth, located.
  for (int n : {400, 10000}) {
    std::string text = "model M\n  Capstan.Sphere sp(radius = p0);\n";
    for (int i = 0; i + 1 < n; ++i) text += "  parameter Real p" + std::to_string(i) + " = p" + std::to_string(i + 1) + " + 1;\n";
    text += "  parameter Real p" + std::to_string(n - 1) + " = 1;\nend M;\n";
    Session s;
    auto m = s.flatten(text);
    INFO(n);
    if (n == 400) {
      REQUIRE(m);
      CHECK_FALSE(s.diags.hasErrors());
      continue;
    }
    CHECK(s.has(DiagKind::NestingTooDeep));
    CHECK(s.diags.errorCount() == 1);
  }
  // A function whose body is a chain of 600 operands, called at the bottom of
  // another chain of 600: each expression is within the parser's limit, their
  // sum is not.
  std::string body = "x", call = "f(1)";
  for (int i = 1; i < 600; ++i) {
    body += " + x";
    call += " + 1";
  }
  Session s;
  s.flatten("function f\n  input Real x;\n  output Real y;\nalgorithm\n  y := " + body +
            ";\nend f;\nmodel M\n  parameter Real r = " + call + ";\n  Capstan.Sphere sp(radius = r);\nend M;\n");
  CHECK(s.has(DiagKind::NestingTooDeep));
}

}  // namespace
}  // namespace capstan::sema::test
