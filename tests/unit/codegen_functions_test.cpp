// The table of generated functions (codegen/functions.hpp): its signatures,
// and its one implementation giving the same values over double (the
// interpreter) and over traced expressions (the generated code), in every
// dynamics method the tracer may choose.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "codegen/functions.hpp"
#include "codegen/interpret.hpp"
#include "mechanics/mechanism.hpp"
#include "sema/sema.hpp"
#include "symbolic/evaluate.hpp"
#include "built_model.hpp"

namespace {

using namespace capstan;
using codegen::FunctionId;
using symbolic::Expr;

struct Built {
  std::unique_ptr<testing::BuiltModel> model;
  codegen::ModelLayout layout;
};

std::unique_ptr<Built> build(const std::string& file) {
  auto b = std::make_unique<Built>();
  b->model = testing::buildModel(file);
  std::vector<codegen::Unsupported> unsupported;
  b->layout = codegen::makeLayout(*b->model->flat, *b->model->mech, unsupported);
  REQUIRE(unsupported.empty());
  return b;
}

}  // namespace

TEST_CASE("generated functions: one table, unique keys, C++ signatures from typed arguments") {
  std::set<std::string> keys;
  for (const codegen::GeneratedFunction& f : codegen::generatedFunctions()) {
    CHECK(keys.insert(f.key()).second);
    CHECK(&codegen::generatedFunction(f.id) == &f);
  }
  const auto& mm = codegen::generatedFunction(FunctionId::MassMatrix);
  CHECK(mm.parameters() == "[[maybe_unused]] const Q& q, MassMatrix& M");
  CHECK(mm.returnType() == "void");
  const auto& fd = codegen::generatedFunction(FunctionId::ForwardDynamics);
  CHECK(fd.parameters() == "[[maybe_unused]] double time, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, U& udot");
  // The overload with external forces: the same name, its own key.
  const auto& fdExternal = codegen::generatedFunction(FunctionId::ForwardDynamicsExternal);
  CHECK(std::string(fdExternal.name) == fd.name);
  CHECK(fdExternal.key() == "forwardDynamicsExternal");
  CHECK(fdExternal.parameters() == "[[maybe_unused]] double time, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, "
                                   "[[maybe_unused]] const ExternalForces& fext, U& udot");
  const auto& ke = codegen::generatedFunction(FunctionId::KineticEnergy);
  CHECK(ke.returnType() == "double");
  CHECK(ke.parameters() == "[[maybe_unused]] const Q& q, [[maybe_unused]] const U& u");
  CHECK(codegen::generatedFunction(FunctionId::Outputs).parameters().ends_with("[[maybe_unused]] Outputs& out"));
  CHECK(codegen::generatedFunction(FunctionId::InitialState).parameters() == "Q& q, U& u");
  // Emitted only with --derivatives; nu x nu results of the MassMatrix type.
  const auto& fdd = codegen::generatedFunction(FunctionId::ForwardDynamicsDerivatives);
  CHECK(fdd.onRequest);
  CHECK(fdd.parameters() == "[[maybe_unused]] double time, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, "
                            "MassMatrix& dudot_dq, MassMatrix& dudot_du, MassMatrix& dudot_dtau");
  for (const codegen::GeneratedFunction& f : codegen::generatedFunctions())
    CHECK(f.onRequest == (f.id == FunctionId::ForwardDynamicsDerivatives ||
                          f.id == FunctionId::InverseDynamicsDerivatives || f.id == FunctionId::OutputDerivatives ||
                          f.id == FunctionId::ForwardDynamicsDerivativesExternal ||
                          f.id == FunctionId::CableFrameDerivatives));
}

TEST_CASE("generated functions: the same implementation traced and over double, every dynamics method") {
  for (const char* file : {"examples/chain.cap", "bench/peers/models/humanoid.cap", "tests/codegen/models/sensors.cap"}) {
    CAPTURE(file);
    const auto b = build(file);
    const codegen::ModelLayout& layout = b->layout;
    codegen::Interpreter interp(*b->model->flat, *b->model->mech, layout);
    Eigen::VectorXd q, u;
    interp.initialState(q, u);
    for (int i = 0; i < layout.nq; ++i) q[i] += 0.1 * std::sin(1.0 + i);
    interp.normalizeQuaternions(q);
    for (int i = 0; i < layout.nu; ++i) u[i] = 0.3 * std::cos(2.0 + i);
    const double t = 0.25;

    symbolic::Pool pool;
    symbolic::PoolScope scope(pool);
    symbolic::Evaluator eval;
    codegen::Sources<Expr> src;
    src.parameter = [&](int p, int e) {
      const auto& rp = layout.parameters.at(static_cast<std::size_t>(p));
      const std::string name = "params." + rp.ident + (rp.shape.empty() ? "" : "[" + std::to_string(e) + "]");
      eval.bind(name, rp.defaults.at(static_cast<std::size_t>(e)));
      return Expr::symbol(name);
    };
    src.input = [&](int k) {
      const std::string name = "inputs." + layout.inputs.at(static_cast<std::size_t>(k)).ident;
      eval.bind(name, 0.0);
      return Expr::symbol(name);
    };
    codegen::FunctionValues<Expr> args;
    args.time = Expr::symbol("time");
    eval.bind("time", t);
    args.q.resize(layout.nq);
    args.u.resize(layout.nu);
    for (int i = 0; i < layout.nq; ++i) {
      args.q[i] = Expr::symbol("q[" + std::to_string(i) + "]");
      eval.bind(args.q[i], q[i]);
    }
    for (int i = 0; i < layout.nu; ++i) {
      args.u[i] = Expr::symbol("u[" + std::to_string(i) + "]");
      eval.bind(args.u[i], u[i]);
    }
    src.q = args.q;
    src.u = args.u;
    src.time = args.time;
    codegen::Environment<Expr> env(*b->model->flat, *b->model->mech, layout, src);
    const Mechanism<Expr> mechanism = env.mechanism();
    env.useMechanism(&mechanism);
    codegen::FunctionEvaluator<Expr> traced(mechanism, env);

    // External forces: symbols fext[b][k], bound to random values.
    capstan::ExternalForces<double> fext;
    for (std::size_t b = 0; b < layout.bodies.size(); ++b) {
      Vec6<Expr> F;
      Vec6<double> value;
      for (int k = 0; k < 6; ++k) {
        F[k] = Expr::symbol("fext[" + std::to_string(b) + "][" + std::to_string(k) + "]");
        value[k] = (k < 3 ? 2.0 : 10.0) * std::sin(3.0 * static_cast<double>(b) + k + 0.5);
        eval.bind(F[k], value[k]);
      }
      args.fext.push_back(F);
      fext.push_back(value);
    }

    auto near = [](double a, double b) { return std::abs(a - b) <= 1e-10 * (1.0 + std::abs(b)); };
    const Eigen::MatrixXd M = interp.massMatrix(q);
    const Eigen::VectorXd udot = interp.forwardDynamics(t, q, u);
    const Eigen::VectorXd udotExternal = interp.forwardDynamics(t, q, u, fext);
    // The forces matter (or the comparisons below prove nothing about them).
    CHECK((udotExternal - udot).cwiseAbs().maxCoeff() > 1e-6);
    for (bool jointFrames : {true, false}) {
      codegen::FunctionValues<Expr> v = args;
      traced.run(FunctionId::MassMatrix, v, {.aba = true, .jointFrames = jointFrames});
      for (int r = 0; r < layout.nu; ++r)
        for (int c = 0; c < layout.nu; ++c) CHECK(near(eval(v.M(r, c)), M(r, c)));
      for (bool aba : {true, false}) {
        CAPTURE(aba);
        CAPTURE(jointFrames);
        traced.run(FunctionId::ForwardDynamics, v, {.aba = aba, .jointFrames = jointFrames});
        for (int i = 0; i < layout.nu; ++i) CHECK(near(eval(v.udot[i]), udot[i]));
        traced.run(FunctionId::ForwardDynamicsExternal, v, {.aba = aba, .jointFrames = jointFrames});
        for (int i = 0; i < layout.nu; ++i) CHECK(near(eval(v.udot[i]), udotExternal[i]));
      }
    }
    codegen::FunctionValues<Expr> v = args;
    // Inverse dynamics undoes forward dynamics: M udot + C = the force laws' tau.
    const Eigen::VectorXd tau = interp.appliedForces(t, q, u);
    const Eigen::VectorXd id = interp.inverseDynamics(q, u, udot);
    for (int i = 0; i < layout.nu; ++i) CHECK(std::abs(id[i] - tau[i]) <= 1e-10 * (1.0 + M.cwiseAbs().maxCoeff()));
    v.udot.resize(layout.nu);
    for (int i = 0; i < layout.nu; ++i) {
      v.udot[i] = Expr::symbol("udot[" + std::to_string(i) + "]");
      eval.bind(v.udot[i], udot[i]);
    }
    traced.run(FunctionId::InverseDynamics, v);
    for (int i = 0; i < layout.nu; ++i) CHECK(near(eval(v.tau[i]), id[i]));
    traced.run(FunctionId::KineticEnergy, v);
    CHECK(near(eval(v.energy), interp.kineticEnergy(q, u)));
    traced.run(FunctionId::Outputs, v);
    const std::vector<double> outputs = interp.outputs(t, q, u);
    REQUIRE(v.outputs.size() == outputs.size());
    for (std::size_t k = 0; k < outputs.size(); ++k) CHECK(near(eval(v.outputs[k]), outputs[k]));
    // A wrong state would show: udot depends on u.
    Eigen::VectorXd u2 = u;
    u2[0] += 1.0;
    CHECK_FALSE(near(interp.forwardDynamics(t, q, u2)[layout.nu - 1], udot[layout.nu - 1]));
  }
}
