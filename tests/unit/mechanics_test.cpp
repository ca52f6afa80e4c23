// Unit tests of the mechanics builder on flat models built by hand, so the
// frame graph, tree and checks are tested apart from the front end.
#include <doctest/doctest.h>

#include <algorithm>

#include "mechanics/mechanism.hpp"

using namespace capstan;
using mechanics::JointType;
using sema::Value;
using sema::ValueType;
using syntax::DiagKind;

namespace {

constexpr double kTight = 1e-12;

Value real(double x) { return {ValueType::Real, {}, {x}, {}}; }
Value flag(bool b) { return {ValueType::Boolean, {}, {b ? 1.0 : 0.0}, {}}; }
Value vec(std::initializer_list<double> xs) {
  return {ValueType::Real, {static_cast<int>(xs.size())}, std::vector<double>(xs), {}};
}
Value mat(std::initializer_list<double> xs) { return {ValueType::Real, {3, 3}, std::vector<double>(xs), {}}; }
Value diag(double a, double b, double c) { return mat({a, 0, 0, 0, b, 0, 0, 0, c}); }
Value ref(const std::string& path) { return {ValueType::Reference, {}, {}, {path}}; }

// Builds a FlatModel component by component.
struct Flat {
  sema::FlatModel m;

  int add(const std::string& path, const std::string& kind, std::map<std::string, Value> params = {}) {
    sema::FlatComponent c;
    c.path = path;
    c.kind = kind;
    for (auto& [name, value] : params) {
      sema::FlatVariable v;
      v.path = path + "." + name;
      v.type = value.type;
      v.shape = value.shape;
      v.value = value;
      v.component = static_cast<int>(m.components.size());
      c.parameters[name] = static_cast<int>(m.variables.size());
      m.variables.push_back(v);
    }
    m.components.push_back(c);
    return static_cast<int>(m.components.size()) - 1;
  }
  void connect(int a, const char* ca, int b, const char* cb) {
    m.connects.push_back({{a, ca, {}}, {b, cb, {}}, {}});
  }
  int body(const std::string& path, double mass = 1.0) {
    return add(path, "Body", {{"mass", real(mass)}, {"com", vec({0, -0.5, 0})}, {"inertia", diag(0.1, 0.01, 0.1)}});
  }
  int revolute(const std::string& path, bool cut = false) {
    return add(path, "Revolute", {{"axis", vec({0, 0, 1})}, {"cut", flag(cut)}});
  }
};

struct Result {
  std::optional<mechanics::Mechanism> mech;
  syntax::DiagnosticEngine diags;
  bool has(DiagKind k) const {
    const auto& ds = diags.diagnostics();
    return std::any_of(ds.begin(), ds.end(), [&](const syntax::Diagnostic& d) { return d.kind == k; });
  }
};

std::unique_ptr<Result> build(const Flat& f) {
  auto r = std::make_unique<Result>();
  r->mech = mechanics::build(f.m, r->diags);
  return r;
}

// world -> j1 -> b1 -tip-> j2 -> b2
Flat doublePendulum() {
  Flat f;
  const int world = f.add("world", "World", {{"gravity", vec({0, -9.81, 0})}});
  const int j1 = f.revolute("j1");
  const int b1 = f.body("b1");
  const int tip = f.add("tip", "FixedTranslation", {{"r", vec({0, -1, 0})}});
  const int j2 = f.revolute("j2");
  const int b2 = f.body("b2");
  f.connect(world, "frame_b", j1, "frame_a");
  f.connect(j1, "frame_b", b1, "frame_a");
  f.connect(b1, "frame_a", tip, "frame_a");
  f.connect(tip, "frame_b", j2, "frame_a");
  f.connect(j2, "frame_b", b2, "frame_a");
  return f;
}

}  // namespace

TEST_CASE("a double pendulum becomes two bodies on a chain of revolutes") {
  const auto r = build(doublePendulum());
  REQUIRE(r->mech);
  CHECK_FALSE(r->diags.hasErrors());
  const auto& m = *r->mech;
  CHECK(m.nq == 2);
  CHECK(m.nu == 2);
  REQUIRE(m.bodies.size() == 3);
  CHECK(m.bodies[1].name == "b1");
  CHECK(m.bodies[2].name == "b2");
  REQUIRE(m.joints.size() == 2);
  CHECK(m.joints[0].parentBody == 0);
  CHECK(m.joints[0].childBody == 1);
  CHECK(m.joints[1].parentBody == 1);
  CHECK(m.joints[1].qIndex == 1);
  CHECK_FALSE(m.joints[1].reversed);
  // The elbow's frame_a sits at the tip of b1, one step through `tip`.
  const auto& F = m.frames[static_cast<std::size_t>(m.joints[1].frameA)];
  CHECK(F.body == 1);
  CHECK(F.X_BF.p.isApprox(mechanics::Vec3(0, -1, 0), kTight));
  REQUIRE(F.path.size() == 1);
  CHECK(F.path[0].forward);
  CHECK(m.gravity.isApprox(mechanics::Vec3(0, -9.81, 0)));
}

TEST_CASE("rigidly connected bodies merge with combined mass properties") {
  Flat f;
  const int world = f.add("world", "World");
  const int j = f.revolute("j");
  const int a = f.add("a", "Body", {{"mass", real(2.0)}, {"com", vec({0, 0, 0})}, {"inertia", diag(1, 1, 1)}});
  const int off = f.add("off", "FixedTranslation", {{"r", vec({1, 0, 0})}});
  const int b = f.add("b", "Body", {{"mass", real(1.0)}, {"com", vec({0, 0, 0})}, {"inertia", diag(1, 2, 3)}});
  f.connect(world, "frame_b", j, "frame_a");
  f.connect(j, "frame_b", a, "frame_a");
  f.connect(a, "frame_a", off, "frame_a");
  f.connect(off, "frame_b", b, "frame_a");
  const auto r = build(f);
  REQUIRE(r->mech);
  CHECK_FALSE(r->diags.hasErrors());
  REQUIRE(r->mech->bodies.size() == 2);
  const auto& body = r->mech->bodies[1];
  CHECK(body.name == "a");
  CHECK(body.mass == doctest::Approx(3.0));
  CHECK(body.p_BoBcm_B.isApprox(mechanics::Vec3(1.0 / 3.0, 0, 0), kTight));
  // Parallel axis: masses 2 at x=0 and 1 at x=1, about x = 1/3: m d^2 = 2/9 + 4/9.
  mechanics::Mat3 expected = mechanics::Mat3::Zero();
  expected.diagonal() << 2.0, 3.0 + 2.0 / 3.0, 4.0 + 2.0 / 3.0;
  CHECK(body.I_Bcm_B.isApprox(expected, kTight));
}

TEST_CASE("a four-bar loop is closed by the joint marked cut") {
  Flat f;
  const int world = f.add("world", "World");
  const int p1 = f.revolute("p1");
  const int crank = f.body("crank");
  const int t1 = f.add("t1", "FixedTranslation", {{"r", vec({0.4, 0, 0})}});
  const int p2 = f.revolute("p2");
  const int coupler = f.body("coupler");
  const int t2 = f.add("t2", "FixedTranslation", {{"r", vec({1.2, 0, 0})}});
  const int g = f.add("g", "FixedTranslation", {{"r", vec({1, 0, 0})}});
  const int p4 = f.revolute("p4");
  const int rocker = f.body("rocker");
  const int t3 = f.add("t3", "FixedTranslation", {{"r", vec({0.9, 0, 0})}});
  const int p3 = f.revolute("p3", /*cut=*/true);
  f.connect(world, "frame_b", p1, "frame_a");
  f.connect(p1, "frame_b", crank, "frame_a");
  f.connect(crank, "frame_a", t1, "frame_a");
  f.connect(t1, "frame_b", p2, "frame_a");
  f.connect(p2, "frame_b", coupler, "frame_a");
  f.connect(coupler, "frame_a", t2, "frame_a");
  f.connect(world, "frame_b", g, "frame_a");
  f.connect(g, "frame_b", p4, "frame_a");
  f.connect(p4, "frame_b", rocker, "frame_a");
  f.connect(rocker, "frame_a", t3, "frame_a");
  f.connect(t2, "frame_b", p3, "frame_a");
  f.connect(t3, "frame_b", p3, "frame_b");

  const auto r = build(f);
  REQUIRE(r->mech);
  CHECK_FALSE(r->diags.hasErrors());
  const auto& m = *r->mech;
  CHECK(m.nu == 3);
  CHECK(m.treeJointCount() == 3);
  REQUIRE(m.constraints.size() == 1);
  CHECK(m.constraints[0].name == "p3");
  CHECK(m.constraints[0].holonomic == 5);

  SUBCASE("without a cut flag the depth-first tree closes the loop at the last joint reached") {
    f.m.variables[static_cast<std::size_t>(f.m.components[static_cast<std::size_t>(p3)].parameters["cut"])]
        .value = flag(false);
    const auto r2 = build(f);
    REQUIRE(r2->mech);
    CHECK_FALSE(r2->diags.hasErrors());
    REQUIRE(r2->mech->constraints.size() == 1);
    CHECK(r2->mech->treeJointCount() == 3);
  }
}

TEST_CASE("branches get contiguous coordinates in depth-first order") {
  Flat f;
  const int world = f.add("world", "World");
  const int ja = f.revolute("ja");
  const int a = f.body("a");
  const int jb = f.revolute("jb");
  const int b = f.body("b");
  const int ja2 = f.revolute("ja2");
  const int a2 = f.body("a2");
  f.connect(world, "frame_b", ja, "frame_a");
  f.connect(ja, "frame_b", a, "frame_a");
  f.connect(world, "frame_b", jb, "frame_a");
  f.connect(jb, "frame_b", b, "frame_a");
  f.connect(a, "frame_a", ja2, "frame_a");
  f.connect(ja2, "frame_b", a2, "frame_a");
  const auto r = build(f);
  REQUIRE(r->mech);
  std::vector<std::string> order;
  for (const auto& j : r->mech->joints) order.push_back(f.m.components[static_cast<std::size_t>(j.component)].path);
  CHECK(order == std::vector<std::string>{"ja", "ja2", "jb"});
}

TEST_CASE("a joint connected with frame_b toward world is reversed") {
  Flat f;
  const int world = f.add("world", "World");
  const int j = f.revolute("j");
  const int b = f.body("b");
  f.connect(world, "frame_b", j, "frame_b");
  f.connect(j, "frame_a", b, "frame_a");
  const auto r = build(f);
  REQUIRE(r->mech);
  CHECK_FALSE(r->diags.hasErrors());
  CHECK(r->mech->joints[0].reversed);
}

TEST_CASE("topology errors") {
  SUBCASE("joint connecting a body to itself") {
    Flat f = doublePendulum();
    const int j = f.revolute("loop");
    f.connect(1 + 1, "frame_a", j, "frame_a");  // b1
    f.connect(1 + 1, "frame_a", j, "frame_b");
    CHECK(build(f)->has(DiagKind::JointSelfLoop));
  }
  SUBCASE("a body connected to nothing") {
    Flat f = doublePendulum();
    f.body("lonely");
    CHECK(build(f)->has(DiagKind::UnconnectedComponent));
  }
  SUBCASE("a body with no joint to world") {
    Flat f = doublePendulum();
    const int b = f.body("floating");
    const int s = f.add("s", "Sphere", {{"radius", real(0.1)}});
    f.connect(b, "frame_a", s, "frame_a");
    CHECK(build(f)->has(DiagKind::NotConnectedToWorld));
  }
  SUBCASE("a free joint closing a loop gives a body two parents") {
    Flat f = doublePendulum();
    const int free = f.add("free", "Free", {{"q0", vec({1, 0, 0, 0, 0, 0, 0})}});
    f.connect(0, "frame_b", free, "frame_a");
    f.connect(free, "frame_b", 5, "frame_a");  // b2
    CHECK(build(f)->has(DiagKind::TwoParents));
  }
  SUBCASE("a joint that moves no mass") {
    Flat f = doublePendulum();
    const int j = f.revolute("j3");
    const int off = f.add("off", "FixedTranslation", {{"r", vec({0, -1, 0})}});
    f.connect(5, "frame_a", j, "frame_a");
    f.connect(j, "frame_b", off, "frame_a");
    CHECK(build(f)->has(DiagKind::DofWithoutMass));
  }
  SUBCASE("two worlds") {
    Flat f = doublePendulum();
    f.add("world2", "World");
    CHECK(build(f)->has(DiagKind::MultipleWorlds));
  }
  SUBCASE("rigid loop that places a frame two ways") {
    Flat f = doublePendulum();
    const int a = f.add("a", "FixedTranslation", {{"r", vec({1, 0, 0})}});
    f.connect(2, "frame_a", a, "frame_a");
    f.connect(a, "frame_b", 3, "frame_b");  // tip.frame_b is at (0,-1,0), not (1,0,0)
    CHECK(build(f)->has(DiagKind::RigidLoopInconsistent));
  }
}

TEST_CASE("physical checks") {
  auto withBody = [](Value inertia, double mass = 1.0) {
    Flat f;
    const int world = f.add("world", "World");
    const int j = f.revolute("j");
    const int b = f.add("b", "Body", {{"mass", real(mass)}, {"com", vec({0, 0, 0})}, {"inertia", inertia}});
    f.connect(world, "frame_b", j, "frame_a");
    f.connect(j, "frame_b", b, "frame_a");
    return f;
  };
  CHECK(build(withBody(mat({1, 0.5, 0, 0, 1, 0, 0, 0, 1})))->has(DiagKind::InertiaNotSymmetric));
  CHECK(build(withBody(diag(1, -1, 1)))->has(DiagKind::InertiaNotPositiveDefinite));
  CHECK(build(withBody(diag(1, 1, 3)))->has(DiagKind::InertiaTriangleInequality));
  CHECK_FALSE(build(withBody(diag(1, 1, 2)))->diags.hasErrors());  // a thin disk is legal

  Flat zero = withBody(diag(0, 0, 0), 0.0);
  const auto rz = build(zero);
  CHECK(rz->has(DiagKind::DofWithoutMass));

  Flat f = withBody(diag(1, 1, 1));
  f.add("R", "FixedFrame", {{"r", vec({0, 0, 0})}, {"R", diag(1, 1, 2)}});
  f.connect(0, "frame_b", 3, "frame_a");
  f.connect(3, "frame_b", 2, "frame_a");
  CHECK(build(f)->has(DiagKind::NotARotation));

  Flat g = withBody(diag(1, 1, 1));
  const int t = g.add("t", "Torus", {{"majorRadius", real(0.1)}, {"minorRadius", real(0.2)}});
  g.connect(2, "frame_a", t, "frame_a");
  CHECK(build(g)->has(DiagKind::TorusSelfIntersecting));

  Flat h = withBody(diag(1, 1, 1));
  const int s = h.add("s", "Sphere", {{"radius", real(0.0)}});
  h.connect(2, "frame_a", s, "frame_a");
  CHECK(build(h)->has(DiagKind::NonPositiveSize));
}

TEST_CASE("a sphere-on-sphere contact becomes one holonomic row, three when rolling") {
  Flat f = doublePendulum();
  const int s1 = f.add("s1", "Sphere", {{"radius", real(1.0)}});
  const int s2 = f.add("s2", "Sphere", {{"radius", real(0.2)}});
  f.connect(0, "frame_b", s1, "frame_a");
  f.connect(5, "frame_a", s2, "frame_a");
  f.add("c", "SphereOnSphereContact", {{"sphereF", ref("s1")}, {"sphereB", ref("s2")}, {"rolling", flag(true)}});
  const auto r = build(f);
  REQUIRE(r->mech);
  CHECK_FALSE(r->diags.hasErrors());
  REQUIRE(r->mech->constraints.size() == 1);
  CHECK(r->mech->constraints[0].holonomic == 1);
  CHECK(r->mech->constraints[0].nonholonomic == 2);
  CHECK(r->mech->constraints[0].bodyF == 0);
  CHECK(r->mech->constraints[0].bodyB == 2);
}

TEST_CASE("a long chain builds without recursion") {
  Flat f;
  int parent = f.add("world", "World");
  const char* parentFrame = "frame_b";
  constexpr int kLinks = 5000;
  for (int i = 0; i < kLinks; ++i) {
    const int j = f.revolute("j" + std::to_string(i));
    const int b = f.body("b" + std::to_string(i));
    f.connect(parent, parentFrame, j, "frame_a");
    f.connect(j, "frame_b", b, "frame_a");
    parent = b;
    parentFrame = "frame_a";
  }
  const auto r = build(f);
  REQUIRE(r->mech);
  CHECK(r->mech->nq == kLinks);
  CHECK(r->mech->joints.back().parentBody == kLinks - 1);
}
