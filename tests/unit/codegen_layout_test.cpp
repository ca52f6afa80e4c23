// Code generation: identifiers, the parameter layout, and the FlatExpr
// translator giving the same numbers as double and as traced expressions.
#include <doctest/doctest.h>

#include <cmath>

#include "codegen/assemble.hpp"
#include "codegen/interpret.hpp"
#include "codegen/layout.hpp"
#include "mechanics/mechanism.hpp"
#include "sema/sema.hpp"
#include "symbolic/evaluate.hpp"
#include <capstan/sim/request.hpp>

#include "built_model.hpp"

namespace {

using namespace capstan;

using Built = testing::BuiltModel;
const auto build = testing::buildModel;

}  // namespace

TEST_CASE("identifiers") {
  CHECK(codegen::cppIdentifier("link[2].body.mass") == "link_2_body_mass");
  CHECK(codegen::cppIdentifier("class") == "class_");
  CHECK(codegen::monogramIdentifier("link[2].body") == "Link2Body");
}

TEST_CASE("double pendulum layout: runtime, dependent and folded parameters") {
  const auto b = build("examples/double_pendulum.cap");
  std::vector<codegen::Unsupported> unsupported;
  const codegen::ModelLayout layout = codegen::makeLayout(*b->flat, *b->mech, unsupported);
  CHECK(unsupported.empty());
  CHECK(layout.nq == 2);
  CHECK(layout.joints.at(1).qNames.at(0) == "elbow.q[1]");
  CHECK(layout.findParameter("L1") >= 0);
  CHECK(layout.findParameter("upper.mass") < 0);  // dependent: mass = m1
  CHECK(layout.findParameter("shoulder.axis") < 0);  // folded
  const int mass = b->flat->findVariable("upper.mass");
  REQUIRE(mass >= 0);
  CHECK(layout.roles.at(static_cast<std::size_t>(mass)) == codegen::VariableRole::Dependent);
  // An armature the model does not give is folded at 0 (its term vanishes).
  const int armature = b->flat->findVariable("elbow.armature");
  REQUIRE(armature >= 0);
  CHECK(layout.roles.at(static_cast<std::size_t>(armature)) == codegen::VariableRole::Folded);
  CHECK(codegen::armatureNotGiven(*b->flat, armature) == b->flat->findComponent("elbow"));
  CHECK(layout.foldReason(*b->flat, armature).find("armature that the model does not give") != std::string::npos);
  // One the model gives is a run-time parameter.
  const auto geared = build("tests/codegen/models/sensors.cap");
  const codegen::ModelLayout gearedLayout = codegen::makeLayout(*geared->flat, *geared->mech, unsupported);
  CHECK(gearedLayout.findParameter("shoulder.armature") >= 0);
  CHECK(codegen::armatureNotGiven(*geared->flat, geared->flat->findVariable("shoulder.armature")) < 0);
}

TEST_CASE("interpreter uses runtime parameter values") {
  const auto b = build("examples/double_pendulum.cap");
  std::vector<codegen::Unsupported> unsupported;
  const codegen::ModelLayout layout = codegen::makeLayout(*b->flat, *b->mech, unsupported);
  std::vector<std::vector<double>> values;
  for (const auto& p : layout.parameters) values.push_back(p.defaults);
  values.at(static_cast<std::size_t>(layout.findParameter("m2")))[0] = 2.0;
  codegen::Interpreter base(*b->flat, *b->mech, layout);
  codegen::Interpreter heavy(*b->flat, *b->mech, layout, values);
  const Eigen::VectorXd q = Eigen::VectorXd::Zero(2);
  CHECK(base.mechanism().bodies[1].mass == doctest::Approx(0.6));
  CHECK(heavy.mechanism().bodies[1].mass == doctest::Approx(2.0));
  // M(1,1) = m2 L2^2 / 3 about the elbow (slender rod, inertia about z).
  CHECK(heavy.massMatrix(q)(1, 1) == doctest::Approx(2.0 * 0.8 * 0.8 / 3.0));

  // Parameters by name: setParameter equals values given at construction.
  codegen::Interpreter& given = heavy;
  codegen::Interpreter set(*b->flat, *b->mech, layout);
  codegen::InterpretedModel model(set);
  const Eigen::VectorXd q1 = Eigen::VectorXd::Constant(2, 0.3), u = Eigen::VectorXd::Constant(2, -0.2);
  const Eigen::VectorXd before = set.forwardDynamics(0.0, q1, u);
  CHECK(capstan::sim::applySettings(model, {{"m2", 2.0}}).empty());
  CHECK(set.forwardDynamics(0.0, q1, u) == given.forwardDynamics(0.0, q1, u));
  CHECK(set.forwardDynamics(0.0, q1, u) != before);
  // Element names as `--set` takes them; a name that is none is returned.
  const codegen::RuntimeParameter& gravity = layout.parameters.at(static_cast<std::size_t>(layout.findParameter("world.gravity")));
  CHECK(gravity.elementName(1) == "world.gravity[2]");
  CHECK(capstan::sim::applySettings(model, {{"world.gravity[2]", 0.0}, {"m9", 1.0}}) == "m9");
  CHECK(set.potentialEnergy(q1) == 0.0);  // no gravity: no potential
  // Units beside the names, from the joint types' tables.
  CHECK(model.qUnits == std::vector<std::string>{"rad", "rad"});
  CHECK(model.uUnits == std::vector<std::string>{"rad/s", "rad/s"});
}

TEST_CASE("traced mechanism evaluates to the interpreted one") {
  const auto b = build("examples/chain.cap");
  std::vector<codegen::Unsupported> unsupported;
  const codegen::ModelLayout layout = codegen::makeLayout(*b->flat, *b->mech, unsupported);
  REQUIRE(unsupported.empty());
  symbolic::Pool pool;
  symbolic::PoolScope scope(pool);
  codegen::Sources<symbolic::Expr> src;
  src.parameter = [&](int p, int e) {
    const auto& rp = layout.parameters.at(static_cast<std::size_t>(p));
    return symbolic::Expr::symbol("params." + rp.ident + (rp.shape.empty() ? "" : "[" + std::to_string(e) + "]"));
  };
  src.input = [](int) { return symbolic::Expr(0.0); };
  src.q = VectorX<symbolic::Expr>::Constant(layout.nq, symbolic::Expr(0.0));
  src.u = VectorX<symbolic::Expr>::Constant(layout.nu, symbolic::Expr(0.0));
  src.time = symbolic::Expr(0.0);
  for (int i = 0; i < layout.nu; ++i) src.u[i] = symbolic::Expr::symbol("u[" + std::to_string(i) + "]");
  codegen::Environment<symbolic::Expr> env(*b->flat, *b->mech, layout, src);
  const Mechanism<symbolic::Expr> traced = env.mechanism();
  const VectorX<symbolic::Expr> tau = env.appliedForces();
  codegen::Interpreter interp(*b->flat, *b->mech, layout);
  symbolic::Evaluator eval;
  for (const auto& p : layout.parameters) {
    if (p.shape.empty()) eval.bind("params." + p.ident, p.defaults[0]);
    for (std::size_t k = 0; k < p.size() && !p.shape.empty(); ++k)
      eval.bind("params." + p.ident + "[" + std::to_string(k) + "]", p.defaults[k]);
  }
  for (int i = 0; i < layout.nu; ++i) eval.bind("u[" + std::to_string(i) + "]", 0.5 + i);
  for (std::size_t k = 0; k < traced.bodies.size(); ++k) {
    CHECK(eval(traced.bodies[k].mass) == doctest::Approx(interp.mechanism().bodies[k].mass));
    CHECK(eval(traced.joints[k].X_PF.p[1]) == doctest::Approx(interp.mechanism().joints[k].X_PF.p[1]));
  }
  Eigen::VectorXd u(layout.nu);
  for (int i = 0; i < layout.nu; ++i) u[i] = 0.5 + i;
  const Eigen::VectorXd tauD = interp.appliedForces(0.0, Eigen::VectorXd::Zero(layout.nq), u);
  CHECK(eval(tau[0]) == doctest::Approx(tauD[0]));
  CHECK(tauD[0] == doctest::Approx(-2.0 * 0.5));  // joint[1].tau = -damping * joint[1].u
}

TEST_CASE("an external function in a force law: an opaque call traced, a callable interpreted") {
  const auto b = build("tests/codegen/models/external.cap");
  std::vector<codegen::Unsupported> unsupported;
  const codegen::ModelLayout layout = codegen::makeLayout(*b->flat, *b->mech, unsupported);
  REQUIRE(unsupported.empty());
  CHECK(codegen::untranslatable(*b->flat, *b->mech, layout).empty());
  REQUIRE(b->flat->functions.size() == 2);
  symbolic::Pool pool;
  symbolic::PoolScope scope(pool);
  codegen::Sources<symbolic::Expr> src;
  src.parameter = [&](int p, int) {
    return symbolic::Expr::symbol("params." + layout.parameters.at(static_cast<std::size_t>(p)).ident);
  };
  src.input = [](int) { return symbolic::Expr(0.0); };
  src.q = VectorX<symbolic::Expr>::Constant(layout.nq, symbolic::Expr::symbol("q[0]"));
  src.u = VectorX<symbolic::Expr>::Constant(layout.nu, symbolic::Expr::symbol("u[0]"));
  src.time = symbolic::Expr(0.0);
  codegen::Environment<symbolic::Expr> env(*b->flat, *b->mech, layout, src);
  const symbolic::Expr tau = env.appliedForces()[0];
  // -friction(u, mu) + spring(q, k), the spring's C++ arguments in the
  // external clause's order (k, q).
  const symbolic::Expr q = symbolic::Expr::symbol("q[0]"), u = symbolic::Expr::symbol("u[0]");
  const symbolic::Expr mu = symbolic::Expr::symbol("params.mu"), k = symbolic::Expr::symbol("params.k");
  CHECK(tau.identical(-symbolic::call("mylib::friction", {u, mu}) + symbolic::call("mylib::spring", {k, q})));

  // The C++ functions of include/friction.hpp, written out.
  const auto functions = [&](int f, const std::vector<double>& a) {
    const std::string& name = b->flat->functions.at(static_cast<std::size_t>(f)).cppName;
    return name == "mylib::friction" ? a[1] * std::tanh(a[0] / 0.05) + 0.02 * a[0] : -a[0] * std::sin(a[1]);
  };
  codegen::Interpreter interp(*b->flat, *b->mech, layout, {}, {}, functions);
  Eigen::VectorXd qv(1), uv(1);
  qv << 0.4;
  uv << 0.03;
  const double expected = -(0.3 * std::tanh(0.03 / 0.05) + 0.02 * 0.03) - 2.0 * std::sin(0.4);
  CHECK(interp.appliedForces(0.0, qv, uv)[0] == doctest::Approx(expected).epsilon(1e-15));
  symbolic::Evaluator eval;
  eval.bind(q, 0.4);
  eval.bind(u, 0.03);
  eval.bind(mu, 0.3);
  eval.bind(k, 2.0);
  eval.setCalls([](std::string_view name, std::span<const double> a, std::span<double> r) {
    r[0] = name == "mylib::friction" ? a[1] * std::tanh(a[0] / 0.05) + 0.02 * a[0] : -a[0] * std::sin(a[1]);
  });
  CHECK(eval(tau) == doctest::Approx(expected).epsilon(1e-15));

  // Without the compiled functions the interpreter refuses the call; an
  // exception of a function is ExternalCallFailed at the call.
  codegen::Interpreter bare(*b->flat, *b->mech, layout);
  CHECK_THROWS_AS(bare.appliedForces(0.0, qv, uv), codegen::UnsupportedExpression);
  codegen::Interpreter throwing(*b->flat, *b->mech, layout, {}, {}, [](int, const std::vector<double>&) -> double {
    throw std::domain_error("out of the table");
  });
  try {
    throwing.appliedForces(0.0, qv, uv);
    FAIL("no exception");
  } catch (const codegen::ExternalCallFailed& e) {
    CHECK(std::string(e.what()) == "out of the table");
    CHECK(e.function == 0);
    CHECK(b->sources.file(e.call.file).lineColumn(e.call.begin).line == 32);
  }
}
