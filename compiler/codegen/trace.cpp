#include "codegen/trace.hpp"

#include <capstan/dynamics.hpp>

#include <filesystem>
#include <set>
#include <sstream>

#include "codegen/assemble.hpp"
#include "symbolic/printer.hpp"

namespace capstan::codegen {
namespace {

using symbolic::Assignment;
using symbolic::CppPrinter;
using symbolic::Expr;
using json = nlohmann::json;

std::string index(const std::string& base, int i) { return base + "[" + std::to_string(i) + "]"; }
std::string index2(const std::string& base, int r, int c) {
  return base + "(" + std::to_string(r) + ", " + std::to_string(c) + ")";
}

// One generated member function: its signature, local declarations, blocks
// of straight-line statements (each headed by the model element it came
// from) and closing statements.
class FunctionBuilder {
 public:
  FunctionBuilder(std::string name, std::string returnType, std::string params, std::vector<std::string> doc)
      : printer_(CppPrinter::Options{}) {
    fn_["name"] = std::move(name);
    fn_["return_type"] = std::move(returnType);
    fn_["params"] = std::move(params);
    fn_["doc"] = std::move(doc);
    fn_["prologue"] = json::array();
    fn_["blocks"] = json::array();
    fn_["epilogue"] = json::array();
  }

  void local(const std::string& declaration) { fn_["prologue"].push_back(declaration); }
  void closing(const std::string& statement) { fn_["epilogue"].push_back(statement); }

  // Prints `outputs` as one block; later blocks refer to its targets by name.
  void block(const std::string& comment, const std::vector<Assignment>& outputs) {
    if (outputs.empty()) return;
    const CppPrinter::Block b = printer_.block(outputs, "t", "    ");
    for (const Assignment& a : outputs) {
      if (a.value.isConstant() || a.value.isSymbol() || !named_.insert(a.value.id()).second) continue;
      printer_.name(a.value, a.target);
    }
    ops_ += b.ops;
    fn_["blocks"].push_back({{"comment", comment}, {"code", b.code}});
  }

  void set(const std::string& key, json value) { fn_[key] = std::move(value); }
  const symbolic::OpCount& ops() const { return ops_; }

  json finish() {
    fn_["operations"] = std::to_string(ops_.adds) + " adds, " + std::to_string(ops_.muls) + " muls, " +
                         std::to_string(ops_.divs) + " divs, " + std::to_string(ops_.funcs) + " calls, " +
                         std::to_string(ops_.other) + " other";
    return fn_;
  }

 private:
  CppPrinter printer_;
  json fn_;
  std::set<std::uint32_t> named_;
  symbolic::OpCount ops_;
};

class Tracer {
 public:
  Tracer(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
         const syntax::SourceManager& sources, const TraceOptions& options)
      : model_(model), mech_(mech), layout_(layout), sources_(sources), options_(options) {}

  json run() {
    symbolic::Pool pool;
    symbolic::PoolScope scope(pool);
    const int nq = layout_.nq, nu = layout_.nu;
    q_.resize(nq);
    u_.resize(nu);
    for (int i = 0; i < nq; ++i) q_[i] = Expr::symbol(index("q", i));
    for (int i = 0; i < nu; ++i) u_[i] = Expr::symbol(index("u", i));
    Sources<Expr> src;
    src.parameter = [this](int p, int e) {
      const RuntimeParameter& rp = layout_.parameters.at(static_cast<std::size_t>(p));
      const std::string base = "params." + rp.ident;
      return Expr::symbol(rp.shape.empty() ? base : index(base, e));
    };
    src.input = [this](int k) { return Expr::symbol("inputs." + layout_.inputs.at(static_cast<std::size_t>(k)).ident); };
    src.q = q_;
    src.u = u_;
    src.time = Expr::symbol("time");
    Environment<Expr> env(model_, mech_, layout_, src);
    mechanism_ = env.mechanism();

    json ir = header();
    json functions = json::array();
    functions.push_back(massMatrix());
    functions.push_back(bias());
    functions.push_back(appliedForces(env));
    functions.push_back(forwardDynamics(env));
    functions.push_back(qdot());
    functions.push_back(bodyPoses());
    functions.push_back(bodyVelocities());
    functions.push_back(kineticEnergy());
    functions.push_back(potentialEnergy());
    functions.push_back(outputs(env));
    functions.push_back(initialState(env));
    ir["functions"] = std::move(functions);
    return ir;
  }

 private:
  // `joint 'elbow' (arm.cap:14)`
  std::string where(const std::string& what, const std::string& name, syntax::SourceRange range) const {
    std::string s = what + " '" + name + "'";
    if (range.valid() && range.file < sources_.size()) {
      const syntax::SourceFile& f = sources_.file(range.file);
      s += " (" + std::filesystem::path(f.path()).filename().string() + ":" +
           std::to_string(f.lineColumn(range.begin).line) + ")";
    }
    return s;
  }
  const sema::FlatComponent& component(int c) const { return model_.components.at(static_cast<std::size_t>(c)); }
  std::string jointComment(const JointLayout& j) const {
    const BodyLayout& b = layout_.bodies.at(static_cast<std::size_t>(j.body));
    return where("joint", j.name, component(j.component).range) + " -> body '" + b.name + "'";
  }

  json header() const {
    json ir;
    ir["ir_version"] = kIrVersion;
    ir["generator"] = "capstan " + options_.capstanVersion;
    ir["source"] = {{"file", options_.sourceName}, {"model", model_.name}};
    ir["class_name"] = layout_.className;
    ir["nq"] = layout_.nq;
    ir["nu"] = layout_.nu;
    ir["nb"] = static_cast<int>(layout_.bodies.size());
    json joints = json::array();
    std::vector<std::string> qNames, uNames;
    json quaternions = json::array();
    for (const JointLayout& j : layout_.joints) {
      joints.push_back({{"name", j.name},
                        {"type", mechanics::jointTypeName(j.type)},
                        {"body", j.body},
                        {"parent", j.parent},
                        {"q_index", j.qIndex},
                        {"u_index", j.uIndex},
                        {"nq", j.nq},
                        {"nu", j.nu},
                        {"reversed", j.reversed},
                        {"q_names", j.qNames},
                        {"u_names", j.uNames}});
      qNames.insert(qNames.end(), j.qNames.begin(), j.qNames.end());
      uNames.insert(uNames.end(), j.uNames.begin(), j.uNames.end());
      if (j.type == mechanics::JointType::Ball || j.type == mechanics::JointType::Free) quaternions.push_back(j.qIndex);
    }
    ir["joints"] = joints;
    ir["q_names"] = qNames;
    ir["u_names"] = uNames;
    ir["quaternions"] = quaternions;
    json bodies = json::array();
    for (std::size_t b = 0; b < layout_.bodies.size(); ++b)
      bodies.push_back({{"name", layout_.bodies[b].name}, {"ident", layout_.bodies[b].ident}, {"index", b}});
    ir["bodies"] = bodies;

    json params = json::array();
    for (const RuntimeParameter& p : layout_.parameters) {
      json slots = json::array();
      std::string init;
      if (p.shape.empty()) {
        init = symbolic::formatDouble(p.defaults.at(0));
        slots.push_back({{"name", p.name}, {"lvalue", "params." + p.ident}});
      } else {
        for (std::size_t k = 0; k < p.size(); ++k) {
          init += (k ? ", " : "") + symbolic::formatDouble(p.defaults[k]);
          std::string sub;
          if (p.shape.size() == 2) {
            sub = std::to_string(k / static_cast<std::size_t>(p.shape[1]) + 1) + "," +
                  std::to_string(k % static_cast<std::size_t>(p.shape[1]) + 1);
          } else {
            sub = std::to_string(k + 1);
          }
          slots.push_back({{"name", p.name + "[" + sub + "]"}, {"lvalue", index("params." + p.ident, static_cast<int>(k))}});
        }
        init = "{" + init + "}";
      }
      params.push_back({{"name", p.name},
                        {"ident", p.ident},
                        {"cpp_type", p.shape.empty() ? "double" : "std::array<double, " + std::to_string(p.size()) + ">"},
                        {"initializer", init},
                        {"shape", p.shape},
                        {"default", p.defaults},
                        {"unit", p.unit},
                        {"description", p.description},
                        {"slots", slots}});
    }
    ir["parameters"] = params;
    json inputs = json::array(), outputs = json::array();
    for (const IoVariable& v : layout_.inputs)
      inputs.push_back({{"name", v.name}, {"ident", v.ident}, {"unit", v.unit}, {"description", v.description}});
    for (const IoVariable& v : layout_.outputs)
      outputs.push_back({{"name", v.name}, {"ident", v.ident}, {"unit", v.unit}, {"description", v.description}});
    ir["inputs"] = inputs;
    ir["outputs"] = outputs;
    return ir;
  }

  // Position kinematics blocks: one per joint, into locals R_W<Body>, p_W<Body>
  // (or into `poses[i]` when `intoPoses`).
  void poseBlocks(FunctionBuilder& fn, const Data<Expr>& data, bool intoPoses) {
    for (const JointLayout& j : layout_.joints) {
      const BodyLayout& b = layout_.bodies.at(static_cast<std::size_t>(j.body));
      std::string R = "R_W" + b.ident, p = "p_W" + b.ident;
      if (intoPoses) {
        R = "poses[" + std::to_string(j.body) + "].R_WB";
        p = "poses[" + std::to_string(j.body) + "].p_WB";
      } else {
        fn.local("Eigen::Matrix3d " + R + ";  // R_WB of '" + b.name + "'");
        fn.local("Eigen::Vector3d " + p + ";  // p_WoBo_W of '" + b.name + "'");
      }
      const Transform<Expr>& X = data.X_WB[static_cast<std::size_t>(j.body)];
      std::vector<Assignment> out;
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) out.push_back({index2(R, r, c), X.R(r, c)});
      for (int r = 0; r < 3; ++r) out.push_back({index(p, r), X.p[r]});
      fn.block(jointComment(j), out);
    }
  }

  // Velocity kinematics blocks: w_W<Body>, v_W<Body> (or `velocities[i]`).
  void velocityBlocks(FunctionBuilder& fn, const Data<Expr>& data, bool intoVelocities) {
    for (const JointLayout& j : layout_.joints) {
      const BodyLayout& b = layout_.bodies.at(static_cast<std::size_t>(j.body));
      std::string w = "w_W" + b.ident, v = "v_W" + b.ident;
      if (intoVelocities) {
        w = "velocities[" + std::to_string(j.body) + "].w_WB";
        v = "velocities[" + std::to_string(j.body) + "].v_WB";
      } else {
        fn.local("Eigen::Vector3d " + w + ";  // w_WB of '" + b.name + "'");
        fn.local("Eigen::Vector3d " + v + ";  // v_WBo of '" + b.name + "'");
      }
      const Vec6<Expr>& V = data.V_WB[static_cast<std::size_t>(j.body)];
      std::vector<Assignment> out;
      for (int r = 0; r < 3; ++r) out.push_back({index(w, r), V[r]});
      for (int r = 0; r < 3; ++r) out.push_back({index(v, r), V[3 + r]});
      fn.block(jointComment(j) + ": velocity", out);
    }
  }

  std::vector<Assignment> matrixOutputs(const std::string& name, const MatrixX<Expr>& M) const {
    std::vector<Assignment> out;
    for (int r = 0; r < M.rows(); ++r)
      for (int c = 0; c < M.cols(); ++c) out.push_back({index2(name, r, c), M(r, c)});
    return out;
  }
  std::vector<Assignment> vectorOutputs(const std::string& name, const VectorX<Expr>& v) const {
    std::vector<Assignment> out;
    for (int r = 0; r < v.size(); ++r) out.push_back({index(name, r), v[r]});
    return out;
  }

  json massMatrix() {
    FunctionBuilder fn("massMatrix", "void", "[[maybe_unused]] const Q& q, MassMatrix& M",
                       {"M(q) (nu x nu), symmetric positive definite, by the composite-rigid-body algorithm."});
    Data<Expr> data(mechanism_);
    crba(mechanism_, data, q_);
    poseBlocks(fn, data, false);
    fn.block("mass matrix (composite rigid body)", matrixOutputs("M", data.M));
    return fn.finish();
  }

  json bias() {
    FunctionBuilder fn("bias", "void", "[[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, U& C",
                       {"C(q, u) (nu): Coriolis, centrifugal and gravity generalized forces, so that",
                        "M udot = tau - C; by recursive Newton-Euler."});
    Data<Expr> data(mechanism_);
    nonlinearEffects(mechanism_, data, q_, u_);
    poseBlocks(fn, data, false);
    velocityBlocks(fn, data, false);
    fn.block("bias (recursive Newton-Euler with udot = 0, gravity included)", vectorOutputs("C", data.C));
    return fn.finish();
  }

  void forceLawBlocks(FunctionBuilder& fn, Environment<Expr>& env, const std::string& target) {
    for (const ForceLawLayout& fl : layout_.forceLaws) {
      const sema::FlatForceLaw& law = model_.forceLaws.at(static_cast<std::size_t>(fl.law));
      fn.block(where("force law", fl.name, law.range), {{index(target, fl.uIndex), env.forceLaw(fl)}});
    }
  }

  json appliedForces(Environment<Expr>& env) {
    FunctionBuilder fn("appliedForces", "void",
                       "[[maybe_unused]] double time, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, U& tau",
                       {"tau (nu): the generalized forces of the model's force laws (`joint.tau = ...`)."});
    fn.local("tau.setZero();");
    forceLawBlocks(fn, env, "tau");
    return fn.finish();
  }

  // Weighted cost of straight-line code: a division (or a call) counts as
  // about four multiplications.
  static double weightedCost(const symbolic::OpCount& ops) {
    return static_cast<double>(ops.adds + ops.muls + ops.other) + 4.0 * static_cast<double>(ops.divs + ops.funcs);
  }
  static json opsJson(const symbolic::OpCount& ops) {
    return {{"adds", ops.adds}, {"muls", ops.muls}, {"divs", ops.divs}, {"calls", ops.funcs},
            {"other", ops.other}, {"weighted", weightedCost(ops)}};
  }

  // Traces forward dynamics both ways, composite rigid body + tree-sparse
  // L^T D L (the runtime's forwardDynamics) and the articulated-body
  // algorithm (the runtime's aba), prints each and emits the one whose
  // printed code has the smaller weighted operation count (ties go to
  // CRBA + L^T D L). The IR records both counts: as printed (`emitted`, what
  // decides) and of the simplified DAG computed once (`dag`, countOperations).
  json forwardDynamics(Environment<Expr>& env) {
    const VectorX<Expr> tau = env.appliedForces();
    Data<Expr> crbaData(mechanism_);
    capstan::forwardDynamics(mechanism_, crbaData, q_, u_, tau);
    Data<Expr> abaData(mechanism_);
    capstan::aba(mechanism_, abaData, q_, u_, tau);

    auto emit = [&](bool useAba) {
      const Data<Expr>& data = useAba ? abaData : crbaData;
      FunctionBuilder fn("forwardDynamics", "void",
                         "[[maybe_unused]] double time, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, U& udot",
                         {});
      poseBlocks(fn, data, false);
      velocityBlocks(fn, data, false);
      if (!useAba) {
        fn.local("MassMatrix M;");
        fn.local("U C;");
      }
      fn.local(layout_.forceLaws.empty() ? "[[maybe_unused]] U tau = U::Zero();  // no force laws" : "U tau = U::Zero();");
      if (useAba) {
        forceLawBlocks(fn, env, "tau");
        fn.block("udot by the articulated-body algorithm", vectorOutputs("udot", data.udot));
      } else {
        fn.block("mass matrix (composite rigid body)", matrixOutputs("M", data.M));
        fn.block("bias (recursive Newton-Euler with udot = 0, gravity included)", vectorOutputs("C", data.C));
        forceLawBlocks(fn, env, "tau");
        fn.block("udot = M^-1 (tau - C) by the tree-sparse L^T D L factorization", vectorOutputs("udot", data.udot));
      }
      return fn;
    };
    FunctionBuilder crbaFn = emit(false);
    FunctionBuilder abaFn = emit(true);
    const bool useAba = weightedCost(abaFn.ops()) < weightedCost(crbaFn.ops());
    FunctionBuilder& fn = useAba ? abaFn : crbaFn;

    auto roots = [](const VectorX<Expr>& v) { return std::vector<Expr>(v.data(), v.data() + v.size()); };
    auto counts = [&](const FunctionBuilder& f, const VectorX<Expr>& udot) {
      return json{{"emitted", opsJson(f.ops())}, {"dag", opsJson(symbolic::countOperations(roots(udot)))}};
    };
    fn.set("method", {{"chosen", useAba ? "aba" : "crba_ltdl"},
                      {"weights", {{"add", 1}, {"mul", 1}, {"other", 1}, {"div", 4}, {"call", 4}}},
                      {"crba_ltdl", counts(crbaFn, crbaData.udot)},
                      {"aba", counts(abaFn, abaData.udot)}});
    auto brief = [](const symbolic::OpCount& ops) {
      return std::to_string(ops.adds) + " adds, " + std::to_string(ops.muls) + " muls, " + std::to_string(ops.divs) +
             " divs (weighted " + symbolic::formatDouble(weightedCost(ops)) + ")";
    };
    std::vector<std::string> doc;
    if (useAba) {
      doc = {"udot (nu) = M^-1 (tau - C) by the articulated-body algorithm (Featherstone), force laws",
             "as joint forces, all unrolled."};
    } else {
      doc = {"udot (nu) = M^-1 (tau - C): composite-rigid-body mass matrix, Newton-Euler bias,",
             "force laws and the tree-sparse L^T D L solve, all unrolled."};
    }
    doc.push_back(std::string("Method: ") + (useAba ? "ABA" : "CRBA + L^T D L") +
                  ", the cheaper as traced (a division or call weighs 4 multiplies):");
    doc.push_back("  CRBA + L^T D L " + brief(crbaFn.ops()) + "; ABA " + brief(abaFn.ops()) + ".");
    fn.set("doc", doc);
    return fn.finish();
  }

  json qdot() {
    FunctionBuilder fn("qdot", "void", "[[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, Q& qd",
                       {"qdot (nq) = N(q) u."});
    VectorX<Expr> qd;
    qdotFromU(mechanism_, q_, u_, qd);
    for (const JointLayout& j : layout_.joints) {
      std::vector<Assignment> out;
      for (int k = 0; k < j.nq; ++k) out.push_back({index("qd", j.qIndex + k), qd[j.qIndex + k]});
      fn.block(where("joint", j.name, component(j.component).range), out);
    }
    return fn.finish();
  }

  json bodyPoses() {
    FunctionBuilder fn("bodyPoses", "void", "[[maybe_unused]] const Q& q, BodyPoses& poses",
                       {"X_WB of every body (its `frame_a`) in World."});
    Data<Expr> data(mechanism_);
    forwardKinematics(mechanism_, data, q_);
    poseBlocks(fn, data, true);
    return fn.finish();
  }

  json bodyVelocities() {
    FunctionBuilder fn("bodyVelocities", "void",
                       "[[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, BodyVelocities& velocities",
                       {"w_WB and v_WBo of every body, in World."});
    Data<Expr> data(mechanism_);
    forwardKinematics(mechanism_, data, q_, u_);
    poseBlocks(fn, data, false);
    velocityBlocks(fn, data, true);
    return fn.finish();
  }

  json kineticEnergy() {
    FunctionBuilder fn("kineticEnergy", "double", "[[maybe_unused]] const Q& q, [[maybe_unused]] const U& u",
                       {"Kinetic energy 1/2 u^T M u (J)."});
    Data<Expr> data(mechanism_);
    forwardKinematics(mechanism_, data, q_, u_);
    poseBlocks(fn, data, false);
    velocityBlocks(fn, data, false);
    fn.local("double ke = 0.0;");
    fn.block("kinetic energy", {{"ke", capstan::kineticEnergy(mechanism_, data)}});
    fn.closing("return ke;");
    return fn.finish();
  }

  json potentialEnergy() {
    FunctionBuilder fn("potentialEnergy", "double", "[[maybe_unused]] const Q& q",
                       {"Gravitational potential energy -sum m g . p_WoBcm (J), zero at the World origin."});
    Data<Expr> data(mechanism_);
    forwardKinematics(mechanism_, data, q_);
    poseBlocks(fn, data, false);
    fn.local("double pe = 0.0;");
    fn.block("potential energy (gravity)", {{"pe", capstan::potentialEnergy(mechanism_, data)}});
    fn.closing("return pe;");
    return fn.finish();
  }

  json outputs(Environment<Expr>& env) {
    FunctionBuilder fn("outputs", "void",
                       "[[maybe_unused]] double time, [[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, "
                       "[[maybe_unused]] Outputs& out",
                       {"The model's `output` variables."});
    for (std::size_t k = 0; k < layout_.outputs.size(); ++k) {
      const IoVariable& o = layout_.outputs[k];
      const sema::FlatVariable& fv = model_.variables.at(static_cast<std::size_t>(o.variable));
      fn.block(where("output", o.name, fv.range), {{"out." + o.ident, env.output(static_cast<int>(k))}});
    }
    return fn.finish();
  }

  json initialState(Environment<Expr>& env) {
    FunctionBuilder fn("initialState", "void", "Q& q, U& u",
                       {"The initial state from the joints' q0 and u0 parameters (quaternions normalized)."});
    VectorX<Expr> q0, u0;
    env.initialState(q0, u0);
    for (const JointLayout& j : layout_.joints) {
      std::vector<Assignment> out;
      for (int k = 0; k < j.nq; ++k) out.push_back({index("q", j.qIndex + k), q0[j.qIndex + k]});
      for (int k = 0; k < j.nu; ++k) out.push_back({index("u", j.uIndex + k), u0[j.uIndex + k]});
      fn.block(where("joint", j.name, component(j.component).range), out);
    }
    fn.closing("normalizeQuaternions(q);");
    return fn.finish();
  }

  const sema::FlatModel& model_;
  const mechanics::Mechanism& mech_;
  const ModelLayout& layout_;
  const syntax::SourceManager& sources_;
  const TraceOptions& options_;
  Mechanism<Expr> mechanism_;
  VectorX<Expr> q_, u_;
};

}  // namespace

nlohmann::json traceModel(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
                          const syntax::SourceManager& sources, const TraceOptions& options) {
  return Tracer(model, mech, layout, sources, options).run();
}

}  // namespace capstan::codegen
