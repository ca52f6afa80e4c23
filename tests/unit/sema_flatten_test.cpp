// Flattening SPEC §3's Chain and friends: paths, values, connects, force laws.
#include <chrono>

#include "sema_test_util.hpp"

namespace capstan::sema::test {
namespace {

const char* kChain = R"(
package Robots "description"
  model Link "one link of a chain"
    parameter Real L(unit = "m", min = 0) = 1.0 "length";
    parameter Real m(unit = "kg") = 1.0;
    Capstan.Body body(mass = m, com = {0, -L/2, 0},
                      inertia = diagonal({m*L^2/12, 1e-4, m*L^2/12}));
    Capstan.FixedTranslation tip(r = {0, -L, 0});
  equation
    connect(body.frame_a, tip.frame_a);
  end Link;
end Robots;

model Chain
  import Capstan.*;
  parameter Integer n = 5;
  World world(gravity = {0, -9.81, 0});
  Robots.Link link[n](each L = 0.5);
  Revolute joint[n](each axis = {0, 0, 1});
equation
  connect(world.frame_b, joint[1].frame_a);
  for i in 1:n loop
    connect(joint[i].frame_b, link[i].body.frame_a);
  end for;
  for i in 1:n-1 loop
    connect(link[i].tip.frame_b, joint[i+1].frame_a);
  end for;
  joint[1].tau = -2.0 * joint[1].u;           // a force law: explicit, causal
end Chain;
)";

TEST_CASE("the Chain of SPEC §3 flattens to primitives with full paths") {
  Session s;
  auto m = s.flatten(kChain);
  REQUIRE(m);
  INFO(s.rendered());
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(m->name == "Chain");
  // world, 5 x (body, tip), 5 joints
  CHECK(m->components.size() == 16);
  REQUIRE(m->findComponent("link[2].body") >= 0);
  const FlatComponent& body = m->components[static_cast<std::size_t>(m->findComponent("link[2].body"))];
  CHECK(body.kind == "Body");
  CHECK(m->parameter(body, "mass").scalar() == doctest::Approx(1.0));
  const Value& com = m->parameter(body, "com");
  REQUIRE(com.shape == std::vector<int>{3});
  CHECK(com.numbers[1] == doctest::Approx(-0.25));
  const Value& inertia = m->parameter(body, "inertia");
  REQUIRE(inertia.shape == std::vector<int>{3, 3});
  CHECK(inertia.numbers[0] == doctest::Approx(0.25 / 12));
  CHECK(inertia.numbers[4] == doctest::Approx(1e-4));
  CHECK(inertia.numbers[1] == 0.0);
  CHECK(value(*m, "link[5].tip.r", 1) == doctest::Approx(-0.5));
  CHECK(value(*m, "joint[3].axis", 2) == 1.0);
  CHECK(value(*m, "world.gravity", 1) == doctest::Approx(-9.81));
  // Defaults from the stdlib.
  CHECK(value(*m, "joint[3].q0") == 0.0);

  // Bindings refer to other flat variables, so parameters can change later.
  const FlatVariable& mass = m->variables[static_cast<std::size_t>(m->findVariable("link[2].body.mass"))];
  REQUIRE(mass.binding);
  CHECK(mass.binding->kind == FlatExprKind::Variable);
  CHECK(m->variables[static_cast<std::size_t>(mass.binding->variable)].path == "link[2].m");
  CHECK(mass.unit == "kg");
  CHECK(mass.component == m->findComponent("link[2].body"));

  // n sizes an array and bounds loops: structural.
  const FlatVariable& n = m->variables[static_cast<std::size_t>(m->findVariable("n"))];
  CHECK(n.structural);
  CHECK(n.type == ValueType::Integer);
  CHECK(n.component == -1);

  // Connects: world-joint1, 5 joint-link, 4 link-joint, 5 body-tip inside links.
  CHECK(m->connects.size() == 15);
  bool found = false;
  for (const FlatConnect& c : m->connects) {
    const std::string a = m->components[static_cast<std::size_t>(c.a.component)].path + "." + c.a.connector;
    const std::string b = m->components[static_cast<std::size_t>(c.b.component)].path + "." + c.b.connector;
    if (a == "link[1].tip.frame_b" && b == "joint[2].frame_a") found = true;
  }
  CHECK(found);

  // The force law.
  REQUIRE(m->forceLaws.size() == 1);
  const FlatForceLaw& law = m->forceLaws[0];
  CHECK(m->components[static_cast<std::size_t>(law.component)].path == "joint[1]");
  CHECK(law.input == "tau");
  CHECK(law.element == -1);
  REQUIRE(law.rhs);
  // Modelica's grammar reads `-2.0 * u` as `-(2.0 * u)`.
  REQUIRE(law.rhs->kind == FlatExprKind::Unary);
  REQUIRE(law.rhs->args[0]->kind == FlatExprKind::Binary);
  const FlatExpr& u = *law.rhs->args[0]->args[1];
  CHECK(u.kind == FlatExprKind::Variable);
  CHECK(m->variables[static_cast<std::size_t>(u.variable)].path == "joint[1].u");
  CHECK(m->variables[static_cast<std::size_t>(u.variable)].kind == VarKind::Continuous);
  const FlatComponent& j1 = m->components[static_cast<std::size_t>(law.component)];
  CHECK(j1.continuous.at("u") == u.variable);
  CHECK(j1.inputs.at("tau") == 1);
}

TEST_CASE("a 1000-link chain flattens well under a second") {
  std::string text = kChain;
  text.replace(text.find("n = 5"), 5, "n = 1000");
  Session s;
  const auto start = std::chrono::steady_clock::now();
  auto m = s.flatten(text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(m->components.size() == 3001);
  CHECK(m->connects.size() == 3000);
  MESSAGE("1000-link chain: " << seconds << " s");
  CHECK(seconds < 1.0);
}

}  // namespace
}  // namespace capstan::sema::test
