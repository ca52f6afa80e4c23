// Flattening SPEC §3's Chain and friends: paths, values, connects, force laws.
#include <ctime>

#include "sema_test_util.hpp"
#include "spec_chain.hpp"

namespace capstan::sema::test {
namespace {

// CPU time of the calling thread, in seconds: reported by the large-input
// cases below (a quadratic pass shows there as seconds), never checked,
// since a timed check fails on a loaded machine; the front end's speed is
// measured in bench/ (bench/peers/compile_times.py times `capstan compile`).
double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

const char* const kChain = capstan::test::kSpecChain;

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

TEST_CASE("a value given by a modification, not by the declaration's binding, is `modified`") {
  // What decides whether a joint's armature is a run-time parameter
  // (codegen's layout): given anywhere (a modification in a composite, one
  // from outside it, through `extends`, even 0), or left at the default.
  Session s;
  auto m = s.flatten(R"(
model Seg
  parameter Real J(unit = "kg.m2") = 0.01;
  Capstan.Revolute driven(armature = J);
  Capstan.Revolute idle;
end Seg;
model Geared
  extends Seg(idle(armature = 0.5));
end Geared;
model Arm
  Seg a;
  Seg b(J = 0.2, idle(armature = 0));
  Geared c;
  Capstan.Revolute top(armature = 0.3);
  Capstan.Revolute plain;
end Arm;
)");
  REQUIRE(m);
  INFO(s.rendered());
  auto modified = [&](const std::string& path) {
    const int v = m->findVariable(path);
    REQUIRE(v >= 0);
    return m->variables[static_cast<std::size_t>(v)].modified;
  };
  CHECK(modified("a.driven.armature"));
  CHECK_FALSE(modified("a.idle.armature"));
  CHECK_FALSE(modified("a.J"));
  CHECK(modified("b.J"));
  CHECK(modified("b.idle.armature"));
  CHECK(modified("c.idle.armature"));
  CHECK(modified("top.armature"));
  CHECK_FALSE(modified("plain.armature"));
  CHECK_FALSE(modified("plain.q0"));
}

TEST_CASE("a 1000-link chain flattens") {
  std::string text = kChain;
  text.replace(text.find("n = 5"), 5, "n = 1000");
  Session s;
  const double start = threadCpuSeconds();
  auto m = s.flatten(text);
  const double seconds = threadCpuSeconds() - start;
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  CHECK(m->components.size() == 3001);
  CHECK(m->connects.size() == 3000);
  MESSAGE("1000-link chain: " << seconds << " s of thread CPU time");
}

TEST_CASE("a model without a World gets an implicit `world`") {
  Session s;
  auto m = s.flatten(R"(
model Pendulum
  Capstan.Revolute joint(axis = {0, 0, 1});
  Capstan.Body body(mass = 1, inertia = identity(3));
equation
  connect(world.frame_b, joint.frame_a);
  connect(joint.frame_b, body.frame_a);
end Pendulum;
)");
  INFO(s.rendered());
  REQUIRE(m);
  CHECK_FALSE(s.diags.hasErrors());
  REQUIRE(m->components.size() == 3);
  const int w = m->findComponent("world");
  REQUIRE(w >= 0);
  const FlatComponent& world = m->components[static_cast<std::size_t>(w)];
  CHECK(world.kind == "World");
  CHECK(world.connectors == std::vector<std::string>{"frame_b"});
  // It stands at the model's name.
  CHECK(world.range.valid());
  CHECK(world.range.begin == m->range.begin + std::string("model ").size());
  CHECK(world.range.end - world.range.begin == std::string("Pendulum").size());
  // Default gravity.
  const Value& g = m->parameter(world, "gravity");
  REQUIRE(g.numbers.size() == 3);
  CHECK(g.numbers[1] == doctest::Approx(-9.81));
  // The connect reached the World's frame.
  REQUIRE(m->connects.size() == 2);
  const FlatConnect& c = m->connects[0];
  CHECK(c.a.component == w);
  CHECK(c.a.connector == "frame_b");
  CHECK(c.b.component == m->findComponent("joint"));
}

TEST_CASE("no implicit `world` where a World is declared, even nested, or the name is taken") {
  {
    Session s;
    auto m = s.flatten(R"(
model Ground
  Capstan.World ground(gravity = {0, 0, -9.81});
  Capstan.Frame frame_b;
equation
  connect(ground.frame_b, frame_b);
end Ground;
model M
  Ground g;
  Capstan.Revolute joint;
equation
  connect(g.frame_b, joint.frame_a);
end M;
)");
    INFO(s.rendered());
    REQUIRE(m);
    CHECK_FALSE(s.diags.hasErrors());
    CHECK(m->findComponent("world") < 0);
    CHECK(m->findComponent("g.ground") >= 0);
    CHECK(m->components.size() == 2);
  }
  {
    Session s;
    auto m = s.flatten(R"(
model M
  Capstan.Sphere world(radius = 1);
end M;
)");
    INFO(s.rendered());
    REQUIRE(m);
    CHECK_FALSE(s.diags.hasErrors());
    REQUIRE(m->components.size() == 1);
    CHECK(m->components[0].kind == "Sphere");
    CHECK(m->components[0].path == "world");
  }
}

TEST_CASE("plain variables and record components are reported, once per declaration") {
  Session s;
  auto m = s.flatten(R"(
model Link
  Capstan.Body body(mass = 1, inertia = identity(3));
  Real energy;
end Link;
model M
  Link link[4];
  Real y = 2;
  output Real h = y;
end M;
)");
  const std::string out = s.rendered();
  INFO(out);
  CHECK(s.diags.errorCount() == 2);
  CHECK(out.find("`energy` is a plain variable") != std::string::npos);
  CHECK(out.find("`y` is a plain variable") != std::string::npos);
  CHECK(out.find("[UnsupportedVariable]") != std::string::npos);

  Session r;
  r.flatten(R"(
record Gains
  parameter Real kp = 1;
end Gains;
model M
  Gains gains;
end M;
)");
  CHECK(r.has(syntax::DiagKind::InvalidComponentType));
  CHECK(r.rendered().find("`Gains` is a record, not a type for a component") != std::string::npos);
}

TEST_CASE("duplicate assignments and modifiers point at the previous one") {
  Session s;
  s.flatten(R"(
model M
  Capstan.Revolute joint(tau = 1);
  Capstan.Sphere sp(radius = 1, radius = 2);
  output Real h = 1;
equation
  connect(world.frame_b, joint.frame_a);
  joint.tau = 2;
  h = 3;
end M;
)");
  const std::string out = s.rendered();
  INFO(out);
  CHECK(s.diags.errorCount() == 3);
  std::size_t assignments = 0, pos = 0;
  while ((pos = out.find("note: previous assignment is here [NotePreviousAssignment]", pos)) != std::string::npos) {
    ++assignments;
    ++pos;
  }
  CHECK(assignments == 2);
  CHECK(out.find("note: previous modifier is here [NotePreviousModifier]") != std::string::npos);
  CHECK(out.find("NotePreviousDeclaration") == std::string::npos);
}

TEST_CASE("a range subscript is reported as an unsupported slice") {
  Session s;
  s.flatten(R"(
model M
  parameter Real v[3] = {1, 2, 3};
  parameter Real w[2] = v[2:3];
  parameter Real x = w[1];
end M;
)");
  const std::string out = s.rendered();
  INFO(out);
  CHECK(s.diags.errorCount() == 1);
  CHECK(out.find("slices (`v[2:3]`, `v[end]`, `v[:]`) are not supported") != std::string::npos);
  CHECK_FALSE(s.has(syntax::DiagKind::TypeMismatch));
}

TEST_CASE("path lookups use the index and agree with a scan") {
  std::string text = kChain;
  text.replace(text.find("n = 5"), 5, "n = 200");
  Session s;
  auto m = s.flatten(text);
  REQUIRE(m);
  for (std::size_t i = 0; i < m->variables.size(); ++i) {
    const int found = m->findVariable(m->variables[i].path);
    REQUIRE(found >= 0);
    CHECK(m->variables[static_cast<std::size_t>(found)].path == m->variables[i].path);
    CHECK(static_cast<std::size_t>(found) <= i);
  }
  for (std::size_t i = 0; i < m->components.size(); ++i) {
    CHECK(m->findComponent(m->components[i].path) == static_cast<int>(i));
  }
  CHECK(m->findVariable("link[201].L") == -1);
  CHECK(m->findComponent("link[0].body") == -1);

  // A copy grown by hand stays correct (the stale index is not trusted),
  // and so does one re-indexed.
  FlatModel copy = *m;
  FlatComponent extra;
  extra.path = "extra";
  extra.kind = "Sphere";
  copy.components.push_back(extra);
  CHECK(copy.findComponent("extra") == static_cast<int>(copy.components.size()) - 1);
  copy.buildIndex();
  CHECK(copy.findComponent("extra") == static_cast<int>(copy.components.size()) - 1);
  CHECK(copy.findComponent("link[7].tip") == m->findComponent("link[7].tip"));

  // Lookups in a loop over a large model are fast: 3 * 2000 + 1 components.
  std::string big = kChain;
  big.replace(big.find("n = 5"), 5, "n = 2000");
  Session b;
  auto large = b.flatten(big);
  REQUIRE(large);
  const double start = threadCpuSeconds();
  std::size_t hits = 0;
  for (const FlatComponent& c : large->components) hits += large->findComponent(c.path) >= 0;
  for (const FlatVariable& v : large->variables) hits += large->findVariable(v.path) >= 0;
  const double seconds = threadCpuSeconds() - start;
  CHECK(hits == large->components.size() + large->variables.size());
  MESSAGE("lookups of every path: " << seconds << " s of thread CPU time");
}

}  // namespace
}  // namespace capstan::sema::test
