#include "codegen/trace.hpp"

#include <capstan/dynamics.hpp>
#include <capstan/local_dynamics.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "codegen/assemble.hpp"
#include "codegen/citations.hpp"
#include "codegen/derived.hpp"
#include "codegen/functions.hpp"
#include "codegen/ir_schema.hpp"
#include "codegen/rewrites.hpp"
#include "codegen/steps.hpp"
#include "codegen/function_builder.hpp"
#include "mechanics/builtins.hpp"
#include "symbolic/diff.hpp"
#include "symbolic/printer.hpp"
#include "symbolic/traverse.hpp"

namespace capstan::codegen {
namespace {
// The IR's (and the generated ConstraintInfo's) word for a constraint's kind.
const char* constraintKindName(mechanics::ConstraintKind kind) {
  switch (kind) {
    case mechanics::ConstraintKind::LoopJoint: return "loop joint";
    case mechanics::ConstraintKind::SphereOnSphere: return "SphereOnSphereContact";
    case mechanics::ConstraintKind::Coupler: return "coupler";
  }
  return "";
}
}  // namespace

namespace {

using symbolic::Assignment;
using symbolic::CppPrinter;
using symbolic::Expr;
using json = nlohmann::json;

// CRBA + L^T D L is traced for forwardDynamics only while the factor's work
// (sum over dofs of the squared number of ancestor dofs) is at most this:
// a 31-dof chain. Beyond, ABA wins by 2x or more on every model measured
// (docs/runtime.md) and tracing the factor costs cubic time and memory.
constexpr std::size_t kMaxLtdlWork = 10000;

// forwardDynamicsDerivatives traces M^-1 (the L^T D L factor, then
// ltdlInverse) as straight-line code while the two take at most this many
// products (an 18-dof chain takes 2,907, a 20-dof one 3,990, the bench's
// humanoid 5,047); beyond, they run in loops at run time over the
// dof-parent table and the function is composed of forwardDynamics and
// inverseDynamicsDerivatives, whose pair terms are a loop there
// (kMaxUnrolledDerivativePairs): from 20 dofs up a call within 3 % of the
// traced one's under clang++ (6 % on the humanoid under g++), its unit
// compiled in two thirds of the time, and code that does not grow as
// nu^3 (docs/performance.md, "forwardDynamicsDerivatives composed from 20
// dofs"). Below it the function is traced whole, or, where
// inverseDynamicsDerivatives is shared steps (kComposedDerivativesMinSpeeds),
// composed all the same with M^-1 traced alone (massInverseKernel), whose
// loops cost more to set up than their arithmetic on small trees.
// --mass-inverse overrides it.
constexpr std::size_t kMaxTracedInverseWork = 3500;

// forwardDynamicsDerivatives' closing products -M^-1 dr_dq and -M^-1 dr_du
// (M^-1 whole) below this many speeds are a column at a time, each result
// column a sum of -M^-1's columns padded to a multiple of four rows (whole
// SIMD registers; negatedProducts), not Eigen's fixed-size products, which
// split 7- or 10-row columns into partial packets. The two products alone
// (clang++ 14 and g++ 12, -O2, with and without -march=native): 1.9-5.7x
// as fast at 7 dofs, 1.6-2.5x at 10 and 14, 0.98-1.36x at 20, 1.15-1.56x
// at 30, and 0.68-0.94x at 50, where Eigen's blocked products win
// (docs/performance.md, "Small products").
constexpr int kMinEigenProductSpeeds = 32;

// forwardDynamicsDerivatives of a chain (every dof's parent the dof
// before it, so M is dense) of kMinGaussJordanSpeeds to
// kMaxGaussJordanSpeeds speeds is composed with M^-1 by Gauss-Jordan
// elimination over columns padded to whole SIMD registers, two pivots at
// a time (massInverseGaussJordan): nu^2 kPad multiply-adds, each column
// loaded and stored once per two pivots, against the tree-sparse factor
// and inverse's nu^3 / 2 in short dependent steps. Paired against those,
// the whole function 1.09-1.16x as fast on chains of 16 to 31 dofs, 1.07x
// at 36, 1.03x at 40 (clang++ -O2 -march=native with AVX-512; g++ 1.07-
// 1.17x; with AVX2 alone 1.02-1.04x), within the noise at 12 to 15 and at
// 50 (docs/performance.md, "M^-1 of a chain by Gauss-Jordan").
constexpr int kMinGaussJordanSpeeds = 16;
constexpr int kMaxGaussJordanSpeeds = 40;

// Eigen's default EIGEN_STACK_ALLOCATION_LIMIT (bytes): no fixed-size
// matrix may be larger.
constexpr std::size_t kEigenFixedSizeLimit = 128 * 1024;
const char* const kResizeMassMatrix = "M.resize(nu, nu);  // dynamic size: allocates only if M is not nu x nu yet";

// Which of the pairs' sums a loop emits (forwardDynamicsDerivatives
// without forwardDynamics needs M before the column steps, the rest
// after), and whether it declares the dof tables it reads (the first
// loop of two).
struct PairParts {
  bool mass = true, tau = true, tables = true;
};

class Tracer {
 public:
  Tracer(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
         const syntax::SourceManager& sources, const TraceOptions& options)
      : model_(model), mech_(mech), layout_(layout), cite_(model, layout, sources), options_(options),
        quadraticUnrolled_(decideQuadratic()), pairsUnrolled_(decidePairs()), recursionLoops_(decideRecursions()) {}

  ir::Model run() {
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
    alignJointAxes(mechanism_);
    env.useMechanism(&mechanism_);

    ir::Model ir = irHeader(model_, layout_, options_, massMatrixDynamic());
    // external "C++" functions: what the header includes and calls
    for (const sema::FlatFunction& f : model_.functions)
      ir.externals.push_back({f.name, f.cppName, f.include, cite_.line(f.externalRange)});
    env_ = &env;
    FunctionEvaluator<Expr> evaluator(mechanism_, env);
    evaluator.prepare = [this](local::Data<Expr>& data) { derived_.hoist(data); };
    json functions = json::array();
    for (const GeneratedFunction& f : generatedFunctions()) {
      if (f.id == FunctionId::BushingStates && bushings().empty()) continue;
      if (isConstraintFunction(f.id) && layout_.constraintRows == 0) continue;
      if (f.id == FunctionId::ContactFrames && contactCount() == 0) continue;
      if (f.id == FunctionId::ForwardDynamicsFactor && (layout_.constraintRows == 0 || !layout_.cables.empty()))
        continue;
      if (f.id == FunctionId::CableFrames && layout_.cables.empty()) continue;
      if (f.id == FunctionId::EventIndicators && contactForces().empty()) continue;
      if (f.onRequest && !options_.derivatives) continue;
      // With cables, forwardDynamicsDerivatives and outputDerivatives are the
      // template's: the traced derivatives at fixed cable forces and the
      // traced cable frames' derivatives, then the path's sensitivity
      // (capstan/cable/model.hpp's evaluateModelCableDerivatives).
      const bool cableDerivative = f.id == FunctionId::ForwardDynamicsDerivativesExternal ||
                                   f.id == FunctionId::CableFrameDerivatives;
      if (cableDerivative && layout_.cables.empty()) continue;
      if (f.id == FunctionId::ForwardDynamicsDerivatives && !layout_.cables.empty()) {
        if (options_.symbolicDerivatives)
          throw UnsupportedExpression("the symbolic oracle of forward dynamics' derivatives with cables");
        continue;
      }
      // With cables, forwardDynamics(time, q, u, udot) and potentialEnergy(q)
      // solve the cable paths first (the template's, over the traced
      // cableFrames and forwardDynamics with external forces): the traced
      // potential energy is renamed, the forces-free forward dynamics left out.
      if (f.id == FunctionId::ForwardDynamics && !layout_.cables.empty()) continue;
      // The tree recursions as loops: the template's, over jointKinematics
      // (and elementForces, with force elements).
      if (recursionLoops_ ? isRecursion(f.id) : isRecursionInput(f.id)) continue;
      if (f.id == FunctionId::ElementForces && layout_.forceElements.empty()) continue;
      if (f.id == FunctionId::MassMatrix && !quadraticUnrolled()) continue;  // the template's, over:
      if (f.id == FunctionId::MassMatrixKinematics && quadraticUnrolled()) continue;
      if (f.perBody) {
        if (!quadraticUnrolled()) continue;
        for (std::size_t b = 0; b < layout_.bodies.size(); ++b) functions.push_back(traceForBody(f, evaluator, b));
        continue;
      }
      // The constraint functions together, after the kinematics they share.
      if (isConstraintFunction(f.id)) {
        if (f.id == FunctionId::ConstraintPositionErrors)
          for (json& c : constraintFunctions(evaluator)) functions.push_back(std::move(c));
        continue;
      }
      json traced = trace(f, evaluator);
      if (f.id == FunctionId::InverseDynamicsDerivatives && !fusedKernels_.is_null() &&
          traced.value("kernels", json()) != fusedKernels_)
        throw std::logic_error("forwardDynamicsDerivatives calls shared steps that inverseDynamicsDerivatives lacks");
      if (f.id == FunctionId::ForwardDynamicsExternal && !layout_.cables.empty()) traced["name"] = "forwardDynamicsWithoutCables";
      if (f.id == FunctionId::ForwardDynamicsDerivativesExternal) traced["name"] = "forwardDynamicsDerivativesWithoutCables";
      if (f.id == FunctionId::OutputDerivatives && !layout_.cables.empty()) {
        traced["name"] = "outputDerivativesWithoutCables";
        traced["doc"] = {"outputDerivatives' rows but the cables': the model's outputs (outputNames order), then,",
                         "after each cable's three rows (left zero here), the kinetic energy and the potential energy",
                         "without the cable springs' (potentialEnergyWithoutCables); by the raw q and by u. Exact:",
                         "the traced outputs and energies differentiated symbolically."};
      }
      if (f.id == FunctionId::EventIndicators && !layout_.cables.empty()) {
        traced["name"] = "eventIndicatorsWithoutCables";
        traced["doc"] = {"The compliant contacts' event indicators, the first event_indicators_traced of z: each one's",
                         "penetration depth (m), > 0 where its surfaces touch. eventIndicators(time, q, u, z) adds",
                         "the cables'."};
      }
      if (f.id == FunctionId::PotentialEnergy && !layout_.cables.empty()) {
        traced["name"] = "potentialEnergyWithoutCables";
        traced["doc"] = {"Gravitational potential energy -sum m g . p_WoBcm (J), zero at the World origin, plus the",
                         "springs' and bushings' elastic energy; potentialEnergy(q) adds the cable springs'."};
      }
      if (f.id == FunctionId::InverseDynamics && !layout_.cables.empty()) {
        traced["doc"] = {"tau (nu) = M(q) udot + C(q, u): the generalized forces that give the accelerations udot",
                         "(recursive Newton-Euler in joint frames). Neither the model's force laws nor its cables'",
                         "forces are subtracted: for udot = forwardDynamics(time, q, u), inverseDynamics(q, u, udot)",
                         "= appliedForces(time, q, u) + sum_B J_WB^T fext[B], fext from updateCables(time, q, u, fext)."};
      }
      functions.push_back(std::move(traced));
    }
    if (options_.dependencies) ir.dependencies = dependencies(evaluator);
    ir.frames = jacobianFrames(env);
    ir.quadratic = quadraticUnrolled() ? "unrolled" : "compact";
    ir.recursions = recursionLoops_ ? "loops" : "unrolled";
    ir.cables = cables(env);
    ir.cable_obstacle_count = layout_.cableFrameCount;
    ir.cable_actuator_count = layout_.cableActuatorCount;
    for (const ForceElementLayout* e : bushings()) ir.bushings.push_back(e->name);
    for (const ModelLayout::EventIndicator& e : layout_.eventIndicators(model_)) ir.event_indicators.push_back(e.name);
    ir.event_indicators_traced = layout_.compliantContacts();
    ir.constraints = constraints();
    ir.constraint_kinematics = constraintKinematics_;
    // The function builders write JSON; reading it into the structs checks
    // that every key is one the IR declares (codegen/ir.hpp). Each function
    // is laid out for a reader after Derived's renames of its text.
    // One function's text at a time is in both forms (the functions of a
    // 300-link chain hold 170 MB of it).
    ir.derived = derived_.finish(functions).get<std::vector<ir::Derived>>();
    ir.functions.reserve(functions.size());
    for (json& f : functions) {
      FunctionBuilder::layOut(f);
      ir.functions.push_back(f.get<ir::Function>());
      f = nullptr;
    }
    ir::summarize(ir);
    return ir;
  }

 private:
  // A function whose values read the Derived cache where they can.
  FunctionBuilder function(const GeneratedFunction& f) {
    FunctionBuilder fn(f.name, f.returnType(), f.parameters(), f.doc);
    if (*f.overload) fn.set("key", f.key());
    // The table of sines and cosines reads the argument q (sinCosTableLines).
    const auto readsQ = [](const FunctionArgument& a) { return a.type == ValueType::Q && a.name == std::string_view("q"); };
    if (std::any_of(f.arguments.begin(), f.arguments.end(), readsQ)) fn.allowSinCosTable(layout_.nq);
    fn.rewriteValues([this](std::vector<Expr>& values, const std::vector<FunctionBuilder::ValueSite>& sites) {
      derived_.hoistParameterOnly(values, sites);
    });
    return fn;
  }

  // Whether the results that grow with the square of the model are traced
  // (TraceOptions::quadratic): the per-body frameJacobian<Body> and
  // frameJacobianDotU<Body>, and massMatrix.
  bool quadraticUnrolled() const { return quadraticUnrolled_; }
  bool decideQuadratic() const {
    using Q = TraceOptions::Quadratic;
    if (options_.quadratic != Q::Auto) return options_.quadratic == Q::Unrolled;
    return pathSums().columns <= kMaxUnrolledQuadraticColumns;
  }
  // Whether the derivative functions' pair terms are traced
  // (TraceOptions::quadratic; Auto: up to kMaxUnrolledDerivativePairs),
  // else summed by a loop over the dof tree (pairLoop).
  bool pairsUnrolled() const { return pairsUnrolled_; }
  bool decidePairs() const {
    using Q = TraceOptions::Quadratic;
    if (options_.quadratic != Q::Auto) return options_.quadratic == Q::Unrolled;
    return pathSums().pairs <= kMaxUnrolledDerivativePairs;
  }
  // inverseDynamicsDerivatives as shared steps (kSharedDerivativeStepsMinSpeeds;
  // not with force elements or cables), which sum the pair terms in the
  // loop: where --quadratic leaves the choice (Auto), the steps decide it.
  bool inverseSteps() const {
    return layout_.nu >= kSharedDerivativeStepsMinSpeeds && layout_.forceElements.empty() &&
           layout_.cables.empty() && options_.quadratic != TraceOptions::Quadratic::Unrolled;
  }
  // Whether inverseDynamicsDerivatives' pair terms are the loop.
  bool inversePairsCompact() const { return !pairsUnrolled() || inverseSteps(); }
  // Sums over the tree's paths to World: `columns`, over bodies, of the
  // dofs between each body and World (kMaxUnrolledQuadraticColumns);
  // `pairs`, over dofs k, of the dofs on k's path, k included: the pairs
  // (k, j) of the derivatives' pair terms (kMaxUnrolledDerivativePairs).
  struct PathSums {
    int columns = 0, pairs = 0;
  };
  PathSums pathSums() const {
    std::vector<int> depth(layout_.bodies.size(), 0);  // dofs between each body and World
    PathSums sums;
    for (const JointLayout& j : layout_.joints) {  // tree order: parents first
      const int above = j.parent < 0 ? 0 : depth.at(static_cast<std::size_t>(j.parent));
      depth.at(static_cast<std::size_t>(j.body)) = above + j.nu();
      sums.columns += above + j.nu();
      sums.pairs += j.nu() * above + j.nu() * (j.nu() + 1) / 2;
    }
    return sums;
  }

  // Whether the tree recursions are the template's loops
  // (TraceOptions::recursions).
  bool decideRecursions() const {
    using R = TraceOptions::Recursions;
    if (options_.recursions == R::Unrolled) return false;
    if (options_.recursions == R::Loops) {
      if (!layout_.cables.empty()) throw UnsupportedExpression("the tree recursions as loops (--recursions loops) with cables");
      return true;
    }
    return layout_.cables.empty() && static_cast<int>(layout_.bodies.size()) > kMaxUnrolledRecursionBodies;
  }
  // The functions the template writes as loops where the recursions are
  // loops: massMatrix only where it is compact (else traced, as unrolled),
  // the potential energy only without force elements (their elastic
  // energy is traced with it).
  bool isRecursion(FunctionId id) const {
    switch (id) {
      case FunctionId::BodyPoses:
      case FunctionId::BodyVelocities:
      case FunctionId::KineticEnergy:
      case FunctionId::Bias:
      case FunctionId::InverseDynamics:
      case FunctionId::ForwardDynamics:
      case FunctionId::ForwardDynamicsExternal:
      case FunctionId::ForwardDynamicsFactor:
      case FunctionId::FrameKinematics:
      case FunctionId::FrameKinematicsVelocities:
      case FunctionId::MassMatrixKinematics: return true;
      case FunctionId::MassMatrix: return !quadraticUnrolled();
      case FunctionId::PotentialEnergy: return layout_.forceElements.empty();
      default: return false;
    }
  }
  // What the loops read, traced only for them.
  static bool isRecursionInput(FunctionId id) {
    return id == FunctionId::JointKinematics || id == FunctionId::JointConstants || id == FunctionId::ElementForces;
  }

  // Whether MassMatrix is dynamic-size: nu x nu doubles past Eigen's
  // fixed-size limit (EIGEN_STACK_ALLOCATION_LIMIT, 128 KiB: nu > 128),
  // which Eigen refuses to instantiate.
  bool massMatrixDynamic() const {
    return static_cast<std::size_t>(layout_.nu) * static_cast<std::size_t>(layout_.nu) * sizeof(double) >
           kEigenFixedSizeLimit;
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
      fn.block(cite_.joint(j), out);
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
      fn.block(cite_.joint(j) + ": velocity", out);
    }
  }

  // The entries of M's block (rows, then cols) that are not the constant
  // zero, appended to `out` as `name(r, c)`; returns whether some were zero.
  static bool nonzeroEntries(const std::string& name, const MatrixX<Expr>& M, int row, int rows, int col, int cols,
                             std::vector<Assignment>& out) {
    bool zeros = false;
    for (int r = row; r < row + rows; ++r) {
      for (int c = col; c < col + cols; ++c) {
        if (M(r, c).isZero()) {
          zeros = true;
        } else {
          out.push_back({index2(name, r, c), M(r, c)});
        }
      }
    }
    return zeros;
  }
  // Joint j's speeds' columns of `H` (6 x nu) into `target`, column by
  // column (nonzeroEntries).
  static bool columnOutputs(const std::string& target, const MatrixX<Expr>& H, const JointLayout& j,
                            std::vector<Assignment>& out) {
    bool zeros = false;
    for (int c = j.uIndex(); c < j.uIndex() + j.nu(); ++c) zeros = nonzeroEntries(target, H, 0, 6, c, 1, out) || zeros;
    return zeros;
  }

  // frameKinematics' blocks, one per joint: its body's pose into k.R_WB[b]
  // and k.p_WB[b], its speeds' columns into k.H_W (the constant zeros are
  // zeroed once), and with `velocities` its body's k.V_WB[b] and
  // k.Abias_WB[b].
  void frameKinematicsBlocks(FunctionBuilder& fn, const FunctionValues<Expr>& v, bool velocities) {
    bool zeros = false;
    for (const JointLayout& j : layout_.joints) {
      const auto b = static_cast<std::size_t>(j.body);
      const std::string at = "[" + std::to_string(j.body) + "]";
      std::vector<Assignment> out;
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) out.push_back({index2("k.R_WB" + at, r, c), v.X_WB[b].R(r, c)});
      for (int r = 0; r < 3; ++r) out.push_back({index("k.p_WB" + at, r), v.X_WB[b].p[r]});
      zeros = columnOutputs("k.H_W", v.H_W, j, out) || zeros;
      if (velocities) {
        for (int r = 0; r < 6; ++r) out.push_back({index("k.V_WB" + at, r), v.V_WB[b][r]});
        for (int r = 0; r < 6; ++r) out.push_back({index("k.Abias_WB" + at, r), v.Abias_WB[b][r]});
      }
      fn.block(cite_.joint(j), out);
    }
    if (zeros) fn.opening("k.H_W.setZero();  // the entries its joints' axes leave zero");
  }

  // jointKinematics' blocks, one per joint: its frame K in its parent's
  // (k.R_PK[b], k.p_PK[b]), its speeds' columns of S (the constant zeros
  // zeroed once) and its k.cJ[b].
  void jointKinematicsBlocks(FunctionBuilder& fn, const local::Data<Expr>& data, const FunctionValues<Expr>& v) {
    bool zeros = false;
    for (const JointLayout& j : layout_.joints) {
      const auto b = static_cast<std::size_t>(j.body);
      const std::string at = "[" + std::to_string(j.body) + "]";
      std::vector<Assignment> out = matrixOutputs("k.R_PK" + at, MatrixX<Expr>(data.R_PK[b]));
      for (const Assignment& a : vectorOutputs("k.p_PK" + at, VectorX<Expr>(data.p_PK[b]))) out.push_back(a);
      for (int c = 0; c < j.nu(); ++c) {
        for (int r = 0; r < 6; ++r) {
          const Expr& x = data.S[b](r, c);
          if (x.isZero()) zeros = true;
          else out.push_back({index2("k.S", r, j.uIndex() + c), x});
        }
      }
      for (const Assignment& a : vectorOutputs("k.cJ" + at, VectorX<Expr>(v.cJ.at(b)))) out.push_back(a);
      fn.block(cite_.joint(j), out);
    }
    if (zeros) fn.opening("k.S.setZero();  // the entries its joints' axes leave zero");
  }

  // jointConstants' blocks, one per joint: what depends on the parameters
  // only, from them (the template keeps the results until params change,
  // so they are not in the Derived cache): its body's inertia about Ko in K
  // (c.mass[b], c.h[b], c.I_Ko[b]), its body frame in K (c.R_KB[b],
  // c.p_KB[b]) and its speeds' armature. Last, gravity.
  void jointConstantsBlocks(FunctionBuilder& fn, const local::Data<Expr>& data) {
    // Most bodies' frames are their joint frames and most joints have no
    // armature: those entries are set once, and only the others stored.
    fn.opening("for (Eigen::Matrix3d& R : c.R_KB) R.setIdentity();  // B = K but where set below");
    fn.opening("for (Eigen::Vector3d& p : c.p_KB) p.setZero();");
    fn.opening("c.armature.setZero();");
    // `all` but the entries equal to their default: the identity's for a
    // 3 x 3 matrix's nine entries (`identity`), else zero.
    auto unlessDefault = [](std::vector<Assignment> all, bool identity, std::vector<Assignment>& out) {
      for (std::size_t i = 0; i < all.size(); ++i) {
        const double fallback = identity && i % 4 == 0 ? 1.0 : 0.0;  // row-major 3 x 3: (0,0), (1,1), (2,2)
        if (!all[i].value.isConstant(fallback)) out.push_back(std::move(all[i]));
      }
    };
    for (const JointLayout& j : layout_.joints) {
      const auto b = static_cast<std::size_t>(j.body);
      const std::string at = "[" + std::to_string(j.body) + "]";
      const Joint<Expr>& joint = mechanism_.joints.at(b);
      const SpatialInertia<Expr>& I = data.I_K[b];
      std::vector<Assignment> out = {{"c.mass" + at, I.mass}};
      for (const Assignment& a : vectorOutputs("c.h" + at, VectorX<Expr>(I.h))) out.push_back(a);
      for (const Assignment& a : matrixOutputs("c.I_Ko" + at, MatrixX<Expr>(I.I_P))) out.push_back(a);
      const Transform<Expr> X_MB = joint.X_BM.inverse();
      unlessDefault(matrixOutputs("c.R_KB" + at, MatrixX<Expr>(X_MB.R)), true, out);
      unlessDefault(vectorOutputs("c.p_KB" + at, VectorX<Expr>(X_MB.p)), false, out);
      std::vector<Assignment> armature;
      for (int k = 0; k < j.nu(); ++k) armature.push_back({index("c.armature", j.uIndex() + k), joint.armature});
      unlessDefault(std::move(armature), false, out);
      fn.block(cite_.joint(j), out);
    }
    fn.block("gravity", vectorOutputs("c.gravity", VectorX<Expr>(mechanism_.gravity)));
  }

  // massMatrixKinematics' blocks, one per joint: its body's origin into
  // k.p_WB[b], its speeds' columns into k.H_W and their unit forces into
  // k.F_W, its armature into k.armature.
  void massMatrixKinematicsBlocks(FunctionBuilder& fn, const FunctionValues<Expr>& v) {
    bool zeros = false;
    for (const JointLayout& j : layout_.joints) {
      const auto b = static_cast<std::size_t>(j.body);
      std::vector<Assignment> out;
      for (int r = 0; r < 3; ++r) out.push_back({index("k.p_WB[" + std::to_string(j.body) + "]", r), v.X_WB[b].p[r]});
      zeros = columnOutputs("k.H_W", v.H_W, j, out) || zeros;
      zeros = columnOutputs("k.F_W", v.F_W, j, out) || zeros;
      for (int c = 0; c < j.nu(); ++c) out.push_back({index("k.armature", j.uIndex() + c), v.armature[j.uIndex() + c]});
      fn.block(cite_.joint(j), out);
    }
    if (zeros) {
      fn.opening("k.H_W.setZero();  // the entries its joints' axes leave zero");
      fn.opening("k.F_W.setZero();");
    }
  }

  std::vector<Assignment> matrixOutputs(const std::string& name, const MatrixX<Expr>& M) const {
    std::vector<Assignment> out;
    for (int r = 0; r < M.rows(); ++r)
      for (int c = 0; c < M.cols(); ++c) out.push_back({index2(name, r, c), M(r, c)});
    return out;
  }
  // The entries of M that are not the constant zero.
  static std::vector<Assignment> nonzeroOutputs(const std::string& name, const MatrixX<Expr>& M) {
    std::vector<Assignment> out;
    nonzeroEntries(name, M, 0, static_cast<int>(M.rows()), 0, static_cast<int>(M.cols()), out);
    return out;
  }
  std::vector<Assignment> vectorOutputs(const std::string& name, const VectorX<Expr>& v) const {
    std::vector<Assignment> out;
    for (int r = 0; r < v.size(); ++r) out.push_back({index(name, r), v[r]});
    return out;
  }

  // Blocks of the joint-frame algorithms (local_dynamics.hpp), one per
  // joint and pass, naming each body's quantities in its joint frame K:
  // v_K<Body> its spatial velocity, a_K<Body> its acceleration, and for ABA
  // IAS_K<Body>, Dinv_K<Body>, tauA_K<Body> (docs/notation.md).
  std::string declareLocal(FunctionBuilder& fn, const std::string& kind, const JointLayout& j, int rows, int cols,
                           const std::string& what) {
    const BodyLayout& b = layout_.bodies.at(static_cast<std::size_t>(j.body));
    const std::string name = kind + "_K" + b.ident;
    fn.local("Eigen::Matrix<double, " + std::to_string(rows) + ", " + std::to_string(cols) + "> " + name + ";  // " +
             what + " of '" + b.name + "'");
    return name;
  }
  std::vector<Assignment> segmentOutputs(const std::string& name, const VectorX<Expr>& v, int start, int size) const {
    std::vector<Assignment> out;
    for (int k = 0; k < size; ++k) out.push_back({index(name, start + k), v[start + k]});
    return out;
  }

  void jointFrameVelocityBlocks(FunctionBuilder& fn, const local::Data<Expr>& data) {
    for (const JointLayout& j : layout_.joints) {
      const std::string v = declareLocal(fn, "v", j, 6, 1, "spatial velocity in the joint frame");
      fn.block(cite_.joint(j) + ": velocity in the joint frame",
               vectorOutputs(v, data.v[static_cast<std::size_t>(j.body)]));
    }
  }

  // Accelerations with udot = 0 (gravity as World's), then C joint by joint
  // from the leaves (Newton-Euler's backward pass).
  void jointFrameBiasBlocks(FunctionBuilder& fn, const local::Data<Expr>& data) {
    jointFrameNewtonEulerBlocks(fn, data, "C", "bias acceleration", "acceleration with udot = 0", "bias");
  }
  // Newton-Euler's passes in joint frames: accelerations a_K<Body> from the
  // root, then `target`'s entries joint by joint from the leaves.
  void jointFrameNewtonEulerBlocks(FunctionBuilder& fn, const local::Data<Expr>& data, const std::string& target,
                                   const std::string& acceleration, const std::string& forward,
                                   const std::string& backward) {
    for (const JointLayout& j : layout_.joints) {
      const std::string a = declareLocal(fn, "a", j, 6, 1, acceleration + " in the joint frame");
      fn.block(cite_.joint(j) + ": " + forward, vectorOutputs(a, data.a[static_cast<std::size_t>(j.body)]));
    }
    for (auto j = layout_.joints.rbegin(); j != layout_.joints.rend(); ++j) {
      fn.block(cite_.joint(*j) + ": " + backward, segmentOutputs(target, data.C, j->uIndex(), j->nu()));
    }
  }

  // M column by column: each joint's columns, down to its ancestors' rows.
  // Returns whether entries are left unassigned (those between different
  // branches of the tree, zero; L^T D L never reads them). `lowerOnly`:
  // only the lower triangle and the diagonal, for a reader that never
  // reads the rest (Eigen's LLT<M, Lower>).
  bool jointFrameMassMatrixBlocks(FunctionBuilder& fn, const local::Data<Expr>& data, bool lowerOnly = false) {
    std::size_t assigned = 0;
    std::vector<int> parentJoint(layout_.bodies.size(), -1);  // by body
    for (std::size_t k = 0; k < layout_.joints.size(); ++k) {
      parentJoint.at(static_cast<std::size_t>(layout_.joints[k].body)) = static_cast<int>(k);
    }
    for (const JointLayout& j : layout_.joints) {
      if (j.nu() == 0) continue;
      std::vector<Assignment> out;
      auto store = [&](int row, int column) {
        if (!lowerOnly || row >= column) out.push_back({index2("M", row, column), data.M(row, column)});
      };
      auto entries = [&](const JointLayout& row) {
        for (int r = 0; r < row.nu(); ++r) {
          for (int c = 0; c < j.nu(); ++c) {
            store(row.uIndex() + r, j.uIndex() + c);
            if (&row != &j) store(j.uIndex() + c, row.uIndex() + r);
          }
        }
      };
      entries(j);
      for (int p = j.parent; p >= 0;) {
        const int k = parentJoint.at(static_cast<std::size_t>(p));
        if (k < 0) break;
        const JointLayout& ancestor = layout_.joints.at(static_cast<std::size_t>(k));
        entries(ancestor);
        p = ancestor.parent;
      }
      assigned += out.size();
      fn.block(cite_.joint(j) + ": mass matrix column", out);
    }
    return assigned < static_cast<std::size_t>(layout_.nu) * static_cast<std::size_t>(layout_.nu);
  }

  // ABA: the backward pass from the leaves (U, D^-1, u per joint), then the
  // forward pass (accelerations and udot).
  void jointFrameAbaBlocks(FunctionBuilder& fn, const local::Data<Expr>& data) {
    for (auto j = layout_.joints.rbegin(); j != layout_.joints.rend(); ++j) {
      if (j->nu() == 0) continue;
      const auto b = static_cast<std::size_t>(j->body);
      const std::string U = declareLocal(fn, "IAS", *j, 6, j->nu(), "articulated inertia times S");
      const std::string Dinv = declareLocal(fn, "Dinv", *j, j->nu(), j->nu(), "(S^T IA S)^-1");
      const std::string uu = declareLocal(fn, "tauA", *j, j->nu(), 1,
                                          local::floatingBase(mechanism_.joints[b], data)
                                              ? "a floating base: its acceleration less A (abaBackwardStep)"
                                              : "tau - S^T pA");
      std::vector<Assignment> out = matrixOutputs(U, MatrixX<Expr>(data.U[b]));
      for (const Assignment& a : matrixOutputs(Dinv, MatrixX<Expr>(data.Dinv[b]))) out.push_back(a);
      for (const Assignment& a : vectorOutputs(uu, VectorX<Expr>(data.uu[b]))) out.push_back(a);
      fn.block(cite_.joint(*j) + ": articulated inertia", out);
    }
    for (const JointLayout& j : layout_.joints) {
      const std::string a = declareLocal(fn, "a", j, 6, 1, "spatial acceleration in the joint frame");
      std::vector<Assignment> out = segmentOutputs("udot", data.udot, j.uIndex(), j.nu());
      for (const Assignment& x : vectorOutputs(a, data.a[static_cast<std::size_t>(j.body)])) out.push_back(x);
      fn.block(cite_.joint(j) + ": acceleration", out);
    }
  }

  // The symbolic arguments of every function: q[i], u[i], udot[i], time,
  // fext[b][k].
  FunctionValues<Expr> arguments() const {
    FunctionValues<Expr> v;
    v.time = Expr::symbol("time");
    v.q = q_;
    v.u = u_;
    v.udot.resize(layout_.nu);  // inverseDynamics' argument
    for (int i = 0; i < layout_.nu; ++i) v.udot[i] = Expr::symbol(index("udot", i));
    for (std::size_t b = 0; b < layout_.bodies.size(); ++b) {  // forwardDynamics' with external forces
      Vec6<Expr> F;
      for (int k = 0; k < 6; ++k) F[k] = Expr::symbol(index(index("fext", static_cast<int>(b)), k));
      v.fext.push_back(F);
    }
    return v;
  }

  // A function of the table, traced and cut into blocks; where the
  // dynamics can be computed in more than one way, each is traced and the
  // one whose printed code costs least is emitted.
  json trace(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    switch (f.id) {
      case FunctionId::MassMatrix: return massMatrix(f, ev);
      case FunctionId::Bias: return bias(f, ev);
      case FunctionId::ForwardDynamics:
      case FunctionId::ForwardDynamicsExternal: return forwardDynamics(f, ev);
      case FunctionId::ForwardDynamicsFactor: return forwardDynamicsFactor(f, ev);
      case FunctionId::ForwardDynamicsDerivatives:
        return options_.symbolicDerivatives ? symbolicForwardDynamicsDerivatives(f, ev) : analyticDerivatives(f, ev);
      case FunctionId::InverseDynamicsDerivatives:
      case FunctionId::ForwardDynamicsDerivativesExternal: return analyticDerivatives(f, ev);
      case FunctionId::OutputDerivatives: return outputDerivatives(f, ev);
      case FunctionId::CableFrameDerivatives: return cableFrameDerivatives(f, ev);
      default: break;
    }
    // initialState and jointConstants compute from the parameters once (at
    // the start, and per change of params): no Derived cache.
    const bool uncached = f.id == FunctionId::InitialState || f.id == FunctionId::JointConstants;
    FunctionBuilder fn = uncached ? FunctionBuilder(f.name, f.returnType(), f.parameters(), f.doc) : function(f);
    FunctionValues<Expr> v = arguments();
    ev.run(f.id, v);
    switch (f.id) {
      case FunctionId::AppliedForces:
        fn.opening("tau.setZero();");
        forceLawBlocks(fn, v.tau, "tau");
        break;
      case FunctionId::InverseDynamics:
        jointFrameVelocityBlocks(fn, ev.joint);
        forceElementBlocks(fn, v);
        jointFrameNewtonEulerBlocks(fn, ev.joint, "tau", "spatial acceleration", "acceleration",
                                    "generalized force");
        break;
      case FunctionId::Qdot:
        for (const JointLayout& j : layout_.joints) {
          std::vector<Assignment> out;
          for (int k = 0; k < j.nq(); ++k) out.push_back({index("qd", j.qIndex() + k), v.qdot[j.qIndex() + k]});
          fn.block(cite_.where("joint", j.component()), out);
        }
        break;
      case FunctionId::BodyPoses:
        poseBlocks(fn, ev.world, true);
        break;
      case FunctionId::BodyVelocities:
        poseBlocks(fn, ev.world, false);
        velocityBlocks(fn, ev.world, true);
        break;
      case FunctionId::FrameKinematics:
      case FunctionId::FrameKinematicsVelocities:
        frameKinematicsBlocks(fn, v, f.id == FunctionId::FrameKinematicsVelocities);
        break;
      case FunctionId::MassMatrixKinematics:
        fn.set("access", "private");
        massMatrixKinematicsBlocks(fn, v);
        break;
      case FunctionId::JointKinematics:
        fn.set("access", "private");
        jointKinematicsBlocks(fn, ev.joint, v);
        break;
      case FunctionId::JointConstants:
        // The parameter stage as the parameters give it (ev.joint's is
        // the cache's symbols).
        fn.set("access", "private");
        jointConstantsBlocks(fn, local::Data<Expr>(mechanism_));
        break;
      case FunctionId::ElementForces: {
        fn.set("access", "private");
        fn.opening("for (SpatialVector& F : fext) F.setZero();  // bodies no element acts on");
        for (const JointLayout& j : layout_.joints) {
          std::vector<Assignment> out;
          nonzeroEntries("fext[" + std::to_string(j.body) + "]", MatrixX<Expr>(v.fext.at(static_cast<std::size_t>(j.body))),
                         0, 6, 0, 1, out);
          if (!out.empty()) fn.block(cite_.joint(j) + ": the force elements' force on its body", out);
        }
        break;
      }
      case FunctionId::KineticEnergy:
        poseBlocks(fn, ev.world, false);
        velocityBlocks(fn, ev.world, false);
        fn.local("double ke = 0.0;");
        fn.block("kinetic energy", {{"ke", v.energy}});
        fn.returns("ke");
        break;
      case FunctionId::PotentialEnergy:
        poseBlocks(fn, ev.world, false);
        fn.local("double pe = 0.0;");
        fn.block("potential energy (gravity)", {{"pe", v.energy}});
        fn.returns("pe");
        break;
      case FunctionId::Outputs:
        for (std::size_t k = 0; k < layout_.outputs.size(); ++k) {
          const IoVariable& o = layout_.outputs[k];
          const sema::FlatVariable& fv = model_.variables.at(static_cast<std::size_t>(o.variable));
          fn.block(cite_.where("output", o.name, fv.range), {{"out." + o.ident, v.outputs.at(k)}});
        }
        break;
      case FunctionId::BushingStates: {
        std::size_t k = 0;
        for (const ForceElementLayout* e : bushings()) {
          const BushingForces<Expr>& b = v.bushings.at(k);
          const std::string at = "out[" + std::to_string(k++) + "].";
          std::vector<Assignment> out;
          for (const Assignment& a : vectorOutputs(at + "F_A_A", VectorX<Expr>(b.F_A_A))) out.push_back(a);
          for (const Assignment& a : vectorOutputs(at + "F_C_C", VectorX<Expr>(b.F_C_C))) out.push_back(a);
          for (const Assignment& a : vectorOutputs(at + "rpy", VectorX<Expr>(b.q))) out.push_back(a);
          for (const Assignment& a : vectorOutputs(at + "rpyDot", VectorX<Expr>(b.qdot))) out.push_back(a);
          out.push_back({at + "cosPitch", b.cosPitch});
          fn.block(cite_.where("bushing", e->component), out);
        }
        break;
      }
      case FunctionId::EventIndicators: {
        const std::vector<const ForceElementLayout*> contacts = contactForces();
        for (std::size_t k = 0; k < contacts.size(); ++k)
          fn.block(cite_.where("contact", contacts[k]->component) + ": its penetration depth",
                   {{index("z", static_cast<int>(k)), v.indicators.at(k)}});
        break;
      }
      case FunctionId::CableFrames: {
        std::size_t k = 0;
        for (const CableLayout& c : layout_.cables) {
          for (const CableObstacleLayout& o : c.obstacles) {
            const std::string at = "frames.motion[" + std::to_string(k) + "].";
            const FrameMotion<Expr>& m = v.cableFrames.at(k);
            std::vector<Assignment> out;
            for (int r = 0; r < 3; ++r)
              for (int col = 0; col < 3; ++col) out.push_back({index2(at + "R_WF", r, col), m.R_WF(r, col)});
            for (const auto& [name, x] : {std::pair{"p_WF", m.p_WF}, std::pair{"w_WF", m.w_WF}, std::pair{"v_WF", m.v_WF}})
              for (int r = 0; r < 3; ++r) out.push_back({index(at + name, r), x[r]});
            for (int r = 0; r < 3; ++r)
              out.push_back({index("frames.p_BoFo_W[" + std::to_string(k) + "]", r), v.cableOffsets.at(k)[r]});
            fn.block(cite_.where("cable", c.component) + ": obstacle " + std::to_string(k - static_cast<std::size_t>(c.firstFrame)) +
                         " `" + o.name + "`, its frame",
                     out);
            ++k;
          }
          for (std::size_t a = 0; a < c.actuators.size(); ++a) {
            const auto at = static_cast<std::size_t>(c.firstActuator) + a;
            fn.block(cite_.where("cable actuator", c.actuators[a].component) + ": its tension",
                     {{index("frames.actuatorTension", static_cast<int>(at)), v.cableTensions.at(at)}});
          }
        }
        break;
      }
      case FunctionId::InitialState:
        for (const JointLayout& j : layout_.joints) {
          std::vector<Assignment> out;
          for (int k = 0; k < j.nq(); ++k) out.push_back({index("q", j.qIndex() + k), v.q[j.qIndex() + k]});
          for (int k = 0; k < j.nu(); ++k) out.push_back({index("u", j.uIndex() + k), v.u[j.uIndex() + k]});
          fn.block(cite_.where("joint", j.component()), out);
        }
        fn.closing("normalizeQuaternions(q);");
        break;
      default:
        throw std::logic_error("trace: no blocks for generated function " + std::string(f.name));
    }
    return fn.finish();
  }

  // A per-body function of the table (frame Jacobians): `name<Body>`, for
  // a frame of that body whose origin is its argument p_BoFo_B.
  json traceForBody(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev, std::size_t b) {
    const BodyLayout& body = layout_.bodies.at(b);
    FunctionBuilder fn = function(f);
    fn.set("name", f.name + body.ident);
    std::vector<std::string> doc = f.doc;
    doc.insert(doc.begin(), "Body '" + body.name + "':");
    fn.set("doc", doc);
    FunctionValues<Expr> v = arguments();
    v.body = static_cast<int>(b);
    for (int k = 0; k < 3; ++k) v.point[k] = Expr::symbol(index("p_BoFo_B", k));
    ev.run(f.id, v);
    poseBlocks(fn, ev.world, false);
    switch (f.id) {
      case FunctionId::FrameJacobian: {
        const std::vector<Assignment> entries = nonzeroOutputs("J", v.J);
        if (entries.size() < static_cast<std::size_t>(v.J.size())) {
          fn.opening("J.setZero();  // the columns of joints not between this body and World");
        }
        fn.block("J_WF: the joints from World to '" + body.name + "', each shifted to Fo", entries);
        break;
      }
      case FunctionId::FrameJacobianDotU:
        velocityBlocks(fn, ev.world, false);
        fn.block("Jdot_WF u: the acceleration of Fo at udot = 0", vectorOutputs("JdotU", VectorX<Expr>(v.JdotU)));
        break;
      default:
        throw std::logic_error("traceForBody: no blocks for generated function " + std::string(f.name));
    }
    return fn.finish();
  }

  int contactCount() const {
    int n = 0;
    for (const ConstraintLayout& c : layout_.constraints) n += c.kind == mechanics::ConstraintKind::SphereOnSphere;
    return n;
  }

  // The IR's "constraints": each constraint's name, kind and rows (empty
  // when the model has no constraint rows: no constraint API).
  std::vector<ir::Constraint> constraints() const {
    std::vector<ir::Constraint> out;
    if (layout_.constraintRows == 0) return out;
    int contact = 0;
    for (const ConstraintLayout& c : layout_.constraints) {
      const bool isContact = c.kind == mechanics::ConstraintKind::SphereOnSphere;
      out.push_back({c.name, constraintKindName(c.kind), c.holonomicRow, c.holonomic, c.nonholonomicRow,
                     c.nonholonomic, isContact ? contact++ : -1});
    }
    return out;
  }

  // The kinematics the constraint functions share (ConstraintKinematics),
  // field by field in the order constraintPoses and constraintVelocities
  // compute them: each body's R_WB and p_WoBo_W, each contact's frame R_WC
  // and origin p_WC, then each body's w_WB and v_WBo; `entries` holds each
  // entry's target (`k.R_WCrank(0, 0)`) and traced value.
  struct KinematicsField {
    std::string type, name, what, comment;  // comment: the model element of its block
    bool velocity = false;
    std::vector<Assignment> entries;
  };
  std::vector<KinematicsField> kinematicsLayout(const Data<Expr>& world,
                                                const std::vector<ContactGeometry<Expr>>& contacts) const {
    std::vector<KinematicsField> out;
    auto add = [&](const char* type, const std::string& name, const std::string& what, const std::string& comment,
                   bool velocity, auto&& value, int rows, int cols) {
      KinematicsField f{type, name, what, comment, velocity, {}};
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          f.entries.push_back({cols > 1 ? index2("k." + name, r, c) : index("k." + name, r), value(r, c)});
      out.push_back(std::move(f));
    };
    for (const JointLayout& j : layout_.joints) {
      const BodyLayout& b = layout_.bodies.at(static_cast<std::size_t>(j.body));
      const Transform<Expr>& X = world.X_WB[static_cast<std::size_t>(j.body)];
      const std::string of = " of '" + b.name + "'";
      add("Eigen::Matrix3d", "R_W" + b.ident, "R_WB" + of, cite_.joint(j), false,
          [&](int r, int c) { return X.R(r, c); }, 3, 3);
      add("Eigen::Vector3d", "p_W" + b.ident, "p_WoBo_W" + of, cite_.joint(j), false,
          [&](int r, int) { return X.p[r]; }, 3, 1);
    }
    std::size_t next = 0;
    for (const ConstraintLayout& c : layout_.constraints) {
      if (c.kind != mechanics::ConstraintKind::SphereOnSphere) continue;
      const ContactGeometry<Expr>& g = contacts.at(next++);
      const std::string ident = monogramIdentifier(c.name), of = " of contact '" + c.name + "'";
      const std::string comment = cite_.where("contact", c.component) + ": its frame";
      add("Eigen::Matrix3d", "R_WC" + ident, "R_WC" + of, comment, false, [&](int r, int col) { return g.R_WC(r, col); },
          3, 3);
      add("Eigen::Vector3d", "p_WC" + ident, "p_WCo" + of, comment, false, [&](int r, int) { return g.p_WC[r]; }, 3, 1);
    }
    for (const JointLayout& j : layout_.joints) {
      const BodyLayout& b = layout_.bodies.at(static_cast<std::size_t>(j.body));
      const Vec6<Expr>& V = world.V_WB[static_cast<std::size_t>(j.body)];
      const std::string of = " of '" + b.name + "'";
      add("Eigen::Vector3d", "w_W" + b.ident, "w_WB" + of, cite_.joint(j) + ": velocity", true,
          [&](int r, int) { return V[r]; }, 3, 1);
      add("Eigen::Vector3d", "v_W" + b.ident, "v_WBo" + of, cite_.joint(j) + ": velocity", true,
          [&](int r, int) { return V[3 + r]; }, 3, 1);
    }
    return out;
  }

  // The fields' entries (with `velocities`, the velocity fields' too) that
  // are neither a constant nor a symbol, as their fields' symbols, by node:
  // the first field of a value names it; then a negated value not itself
  // an entry (a sum negated is its terms negated: another node) is the
  // negated field.
  static std::unordered_map<std::uint32_t, Expr> kinematicsFields(const std::vector<KinematicsField>& layout,
                                                                  bool velocities) {
    std::vector<std::pair<Expr, Expr>> entries;  // (value, field)
    for (const KinematicsField& f : layout) {
      if (f.velocity && !velocities) continue;
      for (const Assignment& a : f.entries)
        if (!a.value.isConstant() && !a.value.isSymbol()) entries.emplace_back(a.value, Expr::symbol(a.target));
    }
    std::unordered_map<std::uint32_t, Expr> out;
    for (const auto& [value, symbol] : entries) out.emplace(value.id(), symbol);
    for (const auto& [value, symbol] : entries) out.emplace((-value).id(), -symbol);
    return out;
  }

  // The values of `blocks` with the kinematics' entries replaced by the
  // fields that hold them (kinematicsFields); the fields they read are
  // added to `read`.
  static void readKinematics(std::vector<std::pair<std::string, std::vector<Assignment>>>& blocks,
                             const std::unordered_map<std::uint32_t, Expr>& fields, std::set<std::string>& read) {
    std::vector<Expr> values;
    for (const auto& [comment, outputs] : blocks)
      for (const Assignment& a : outputs) values.push_back(a.value);
    values = symbolic::substitute(values, fields);
    for (const symbolic::Node* n : symbolic::postOrder(values))
      if (n->kind == symbolic::Kind::Symbol && n->name.starts_with("k.")) read.emplace(n->name);
    std::size_t k = 0;
    for (auto& [comment, outputs] : blocks)
      for (Assignment& a : outputs) a.value = values.at(k++);
  }

  // The constraint functions (capstan/constraints.hpp), each one block per
  // constraint with its rows' entries (or its contact frame;
  // constraintForces the multipliers' forces), reading the World
  // kinematics from one prologue they share: constraintPoses (R_WB,
  // p_WoBo_W) and constraintVelocities (w_WB, v_WBo), private, into a
  // ConstraintKinematics whose fields are the entries some row reads.
  std::vector<json> constraintFunctions(FunctionEvaluator<Expr>& ev) {
    std::set<std::string> read;
    std::vector<json> functions;
    std::vector<KinematicsField> layout;
    for (const GeneratedFunction& f : generatedFunctions()) {
      if (!isConstraintFunction(f.id) || (f.id == FunctionId::ContactFrames && contactCount() == 0)) continue;
      functions.push_back(constraintFunction(f, ev, read, f.id == FunctionId::ConstraintBias ? &layout : nullptr));
    }
    // Each helper's blocks: its fields' entries some row reads, a block per
    // model element. The velocities first: they read the poses' fields too.
    const auto blocksOf = [&](bool velocity) {
      std::vector<std::pair<std::string, std::vector<Assignment>>> blocks;
      for (const KinematicsField& f : layout) {
        if (f.velocity != velocity) continue;
        if (blocks.empty() || blocks.back().first != f.comment) blocks.emplace_back(f.comment, std::vector<Assignment>{});
        for (const Assignment& a : f.entries)
          if (read.count(a.target)) blocks.back().second.push_back(a);
      }
      std::erase_if(blocks, [](const auto& block) { return block.second.empty(); });
      return blocks;
    };
    std::vector<std::pair<std::string, std::vector<Assignment>>> velocities = blocksOf(true);
    readKinematics(velocities, kinematicsFields(layout, false), read);
    std::vector<std::pair<std::string, std::vector<Assignment>>> poses = blocksOf(false);
    // The fields some function reads.
    for (const KinematicsField& f : layout)
      if (std::any_of(f.entries.begin(), f.entries.end(), [&](const Assignment& a) { return read.count(a.target); }))
        constraintKinematics_.push_back(f.type + " " + f.name + ";  // " + f.what);
    std::vector<json> out;
    auto helper = [&](const std::string& name, const std::string& params, std::vector<std::string> doc,
                      std::vector<std::pair<std::string, std::vector<Assignment>>>& blocks) {
      FunctionBuilder fn(name, "void", params, std::move(doc));
      fn.rewriteValues([this](std::vector<Expr>& values, const std::vector<FunctionBuilder::ValueSite>& sites) {
        derived_.hoistParameterOnly(values, sites);
      });
      for (auto& [comment, outputs] : blocks) fn.block(comment, std::move(outputs));
      json f = fn.finish();
      f["access"] = "private";
      out.push_back(std::move(f));
    };
    if (!read.empty())
      helper("constraintPoses", "[[maybe_unused]] const Q& q, ConstraintKinematics& k",
             {"The constraint functions' kinematics: R_WB and p_WoBo_W (m) of the bodies they reach and",
              "each contact's frame C (R_WC, p_WCo), only the entries some constraint row reads."},
             poses);
    if (!velocities.empty())
      helper("constraintVelocities", "[[maybe_unused]] const Q& q, [[maybe_unused]] const U& u, ConstraintKinematics& k",
             {"w_WB (rad/s) and v_WBo (m/s) of the bodies the constraint rows reach, in World, from",
              "constraintPoses' fields of `k`."},
             velocities);
    for (json& f : functions) out.push_back(std::move(f));
    return out;
  }

  // One constraint function: the blocks of its rows, over the shared
  // kinematics' fields (the entries it reads added to `read`).
  // With `layout`, the shared kinematics' fields at this function's trace
  // (its velocities included) go there.
  json constraintFunction(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev, std::set<std::string>& read,
                          std::vector<KinematicsField>* layout) {
    FunctionBuilder fn = function(f);
    FunctionValues<Expr> v = arguments();
    v.lambda.resize(layout_.constraintRows);
    for (int i = 0; i < layout_.constraintRows; ++i) v.lambda[i] = Expr::symbol(index("lambda", i));
    ev.run(f.id, v);
    const ConstraintRows<Expr>& rows = v.constraints;
    const bool velocityLevel = f.id == FunctionId::ConstraintVelocityErrors || f.id == FunctionId::ConstraintBias;
    std::vector<std::pair<std::string, std::vector<Assignment>>> blocks;
    if (f.id == FunctionId::ConstraintJacobian) {
      const std::vector<Assignment> all = nonzeroOutputs("G", rows.G);
      if (all.size() < static_cast<std::size_t>(rows.G.size())) {
        fn.opening("G.setZero();  // structural zeros: the columns of joints a constraint does not reach");
      }
    }
    if (f.id == FunctionId::ConstraintForces) {
      std::vector<Assignment> forces;
      for (std::size_t b = 0; b < v.bodyForces.size(); ++b) {
        for (int k = 0; k < 6; ++k) {
          const Expr& x = v.bodyForces[b][k];
          if (!x.isZero()) forces.push_back({index(index("bodyForces", static_cast<int>(b)), k), x});
        }
      }
      if (forces.size() < 6 * v.bodyForces.size()) {
        fn.opening("for (SpatialVector& F : bodyForces) F.setZero();  // bodies no constraint acts on");
      }
      blocks.emplace_back("the multipliers' spatial forces on the bodies, about their origins, in World",
                          std::move(forces));
      std::vector<Assignment> tau;
      for (int i = 0; i < v.tau.size(); ++i)
        if (!v.tau[i].isZero()) tau.push_back({index("tau", i), v.tau[i]});
      if (tau.size() < static_cast<std::size_t>(v.tau.size())) fn.opening("tau.setZero();  // dofs no constraint reaches");
      blocks.emplace_back("generalized forces tau = -G^T lambda", std::move(tau));
    }
    int contact = 0;
    for (const ConstraintLayout& c : layout_.constraints) {
      if (f.id == FunctionId::ConstraintForces) break;
      const std::string where = cite_.where(c.kind == mechanics::ConstraintKind::SphereOnSphere ? "contact"
                                            : c.kind == mechanics::ConstraintKind::Coupler      ? "coupler"
                                                                                                : "cut joint",
                                            c.component);
      std::vector<int> rowIndices;
      for (int r = c.holonomicRow; r < c.holonomicRow + c.holonomic; ++r) rowIndices.push_back(r);
      const std::vector<int> holonomic = rowIndices;
      for (int r = c.nonholonomicRow; r < c.nonholonomicRow + c.nonholonomic; ++r) rowIndices.push_back(r);
      std::vector<Assignment> out;
      switch (f.id) {
        case FunctionId::ConstraintPositionErrors:
          for (int r : holonomic) out.push_back({index("perr", r), rows.positionErrors[r]});
          break;
        case FunctionId::ConstraintVelocityErrors:
          for (int r : rowIndices) out.push_back({index("verr", r), rows.velocityErrors[r]});
          break;
        case FunctionId::ConstraintBias:
          for (int r : rowIndices) out.push_back({index("gamma", r), rows.gamma[r]});
          break;
        case FunctionId::ConstraintJacobian:
          for (int r : rowIndices)
            for (int col = 0; col < layout_.nu; ++col)
              if (!rows.G(r, col).isZero()) out.push_back({index2("G", r, col), rows.G(r, col)});
          break;
        case FunctionId::ContactFrames: {
          if (c.kind != mechanics::ConstraintKind::SphereOnSphere) continue;
          const ContactGeometry<Expr>& g = rows.contacts.at(static_cast<std::size_t>(contact));
          const std::string at = "frames[" + std::to_string(contact++) + "].";
          for (const Assignment& a : matrixOutputs(at + "R_WC", MatrixX<Expr>(g.R_WC))) out.push_back(a);
          for (const Assignment& a : vectorOutputs(at + "p_WC", VectorX<Expr>(g.p_WC))) out.push_back(a);
          out.push_back({at + "separation", g.separation});
          break;
        }
        default:
          throw std::logic_error("constraintFunction: not a constraint function");
      }
      if (!out.empty()) blocks.emplace_back(where, std::move(out));
    }
    std::set<std::string> reads;
    std::vector<KinematicsField> fields = kinematicsLayout(ev.world, rows.contacts);
    readKinematics(blocks, kinematicsFields(fields, velocityLevel), reads);
    if (layout) *layout = std::move(fields);
    if (!reads.empty()) {
      fn.opening("ConstraintKinematics k;  // the World kinematics the rows read");
      fn.opening("constraintPoses(q, k);");
      const bool moving = std::any_of(reads.begin(), reads.end(),
                                      [](const std::string& r) { return r.starts_with("k.w_") || r.starts_with("k.v_"); });
      if (moving) fn.opening("constraintVelocities(q, u, k);");
    }
    read.insert(reads.begin(), reads.end());
    for (auto& [comment, outputs] : blocks) fn.block(comment, std::move(outputs));
    return fn.finish();
  }

  // The compliant (Hunt-Crossley) contacts, in layout order: the event
  // indicators'.
  std::vector<const ForceElementLayout*> contactForces() const {
    std::vector<const ForceElementLayout*> out;
    for (const ForceElementLayout& e : layout_.forceElements)
      if (e.kind == mechanics::ForceKind::HuntCrossley) out.push_back(&e);
    return out;
  }

  std::vector<const ForceElementLayout*> bushings() const {
    std::vector<const ForceElementLayout*> out;
    for (const ForceElementLayout& e : layout_.forceElements)
      if (e.kind == mechanics::ForceKind::Bushing) out.push_back(&e);
    return out;
  }

  // The IR's "cables": per cable its obstacles (kind, body, the surface's
  // C++ constructor and near point) and springs, each value a C++
  // expression of constants and parameters (as "frames"' points), so the
  // template builds capstan::cable::ModelCable from the current params.
  std::vector<ir::Cable> cables(Environment<Expr>& env) const {
    std::vector<ir::Cable> out;
    symbolic::CppPrinter printer;
    auto values = [&](int component, const char* name) {
      const Tensor<Expr> t = env.parameter(component, name, Tensor<Expr>{});
      std::vector<std::string> text;
      for (const Expr& x : t.data) text.push_back(printer.expression(x));
      return text;
    };
    auto one = [&](int component, const char* name) {
      const std::vector<std::string> t = values(component, name);
      if (t.size() != 1) throw UnsupportedExpression(std::string("parameter `") + name + "` has no scalar value");
      return t[0];
    };
    auto vec3 = [&](int component, const char* name) {
      const std::vector<std::string> t = values(component, name);
      if (t.size() != 3) throw UnsupportedExpression(std::string("parameter `") + name + "` has no 3-vector value");
      return "Eigen::Vector3d(" + t[0] + ", " + t[1] + ", " + t[2] + ")";
    };
    for (const CableLayout& c : layout_.cables) {
      ir::Cable cable{c.name, cite_.where("cable", c.component), c.firstFrame, c.firstActuator, {}, {}, {}};
      for (const CableObstacleLayout& o : c.obstacles) {
        ir::CableObstacle ob{o.name,
                             o.kind == CableObstacleKind::EndPoint   ? "end_point"
                             : o.kind == CableObstacleKind::ViaPoint ? "via_point"
                                                                     : "surface",
                             o.body, std::nullopt};
        if (o.kind == CableObstacleKind::Surface) {
          const auto kind = mechanics::componentKind(model_.components.at(static_cast<std::size_t>(o.surface)).kind);
          const mechanics::ParameterReader<std::string, std::string> read{
              [&](const char* name) { return one(o.surface, name); },
              [&](const char* name) { return vec3(o.surface, name); }};
          std::string surface;  // C++ text: `Type{arguments}`
          if (kind) {
            mechanics::visitSurface(*kind, [&](auto traits) {
              std::string arguments;
              std::apply([&](const auto&... a) { ((arguments += (arguments.empty() ? "" : ", ") + a), ...); },
                         decltype(traits)::arguments(read));
              surface = std::string(decltype(traits)::cppType) + "{" + arguments + "}";
            });
          }
          ob.surface = ir::CableSurface{surface, model_.components.at(static_cast<std::size_t>(o.surface)).path,
                                        vec3(o.component, "near"), one(o.component, "friction")};
        }
        cable.obstacles.push_back(std::move(ob));
      }
      for (const int s : c.springs) {
        cable.springs.push_back({model_.components.at(static_cast<std::size_t>(s)).path,
                                 cite_.where("cable spring", s), one(s, "stiffness"), one(s, "slackLength"),
                                 one(s, "dissipation")});
      }
      for (const CableLayout::Actuator& a : c.actuators)
        cable.actuators.push_back({model_.components.at(static_cast<std::size_t>(a.component)).path,
                                   cite_.where("cable actuator", a.component)});
      out.push_back(std::move(cable));
    }
    return out;
  }

  // The IR's "frames": each frame with a Jacobian, its body and its origin
  // in the body frame as three C++ expressions (constants or parameters).
  std::vector<ir::Frame> jacobianFrames(Environment<Expr>& env) const {
    std::vector<ir::Frame> frames;
    symbolic::CppPrinter printer;
    for (const JacobianFrame& jf : layout_.jacobianFrames) {
      const Vec3<Expr> p = jf.frame < 0 ? Vec3<Expr>(Vec3<Expr>::Zero()) : env.framePose(jf.frame).p;
      std::vector<std::string> point;
      for (int k = 0; k < 3; ++k) point.push_back(printer.expression(p[k]));
      frames.push_back({jf.name, jf.body, layout_.bodies.at(static_cast<std::size_t>(jf.body)).ident, point});
    }
    return frames;
  }

  json massMatrix(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    FunctionValues<Expr> v = arguments();
    ev.run(f.id, v, {.jointFrames = false});
    FunctionBuilder world = function(f);
    if (massMatrixDynamic()) world.opening(kResizeMassMatrix);
    poseBlocks(world, ev.world, false);
    const std::vector<Assignment> entries = nonzeroOutputs("M", v.M);
    if (entries.size() < static_cast<std::size_t>(v.M.size())) {
      world.opening("M.setZero();  // entries between different branches of the tree stay zero");
    }
    world.block("mass matrix (composite rigid body, in World)", entries);
    ev.run(f.id, v);
    FunctionBuilder joint = function(f);
    if (massMatrixDynamic()) joint.opening(kResizeMassMatrix);
    if (jointFrameMassMatrixBlocks(joint, ev.joint)) {
      joint.opening("M.setZero();  // entries between different branches of the tree stay zero");
    }
    return cheaper(world, joint).finish();
  }

  json bias(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    FunctionValues<Expr> v = arguments();
    ev.run(f.id, v, {.jointFrames = false});
    FunctionBuilder world = function(f);
    poseBlocks(world, ev.world, false);
    velocityBlocks(world, ev.world, false);
    world.block("bias (recursive Newton-Euler with udot = 0, gravity included, in World)", vectorOutputs("C", v.C));
    ev.run(f.id, v);
    FunctionBuilder joint = function(f);
    jointFrameVelocityBlocks(joint, ev.joint);
    jointFrameBiasBlocks(joint, ev.joint);
    return cheaper(world, joint).finish();
  }

  // One block per force element: the spatial forces it applies at the
  // origins of its frames, in World, as locals F_Ao<Element> and
  // F_Co<Element> that the dynamics' blocks then read.
  void forceElementBlocks(FunctionBuilder& fn, const FunctionValues<Expr>& v) {
    if (layout_.forceElements.empty()) return;
    env_->setState(v.time, v.q, v.u);
    for (const ForceElementLayout& e : layout_.forceElements) {
      const auto f = env_->elementForce(e);
      const std::string ident = monogramIdentifier(e.name);
      std::vector<Assignment> out;
      for (const auto& [name, F] : {std::pair{"F_Ao" + ident, f.F_Ao_W}, std::pair{"F_Co" + ident, f.F_Co_W}}) {
        fn.local("Eigen::Matrix<double, 6, 1> " + name + ";  // [torque; force] at the frame origin, in World");
        for (const Assignment& a : vectorOutputs(name, VectorX<Expr>(F))) out.push_back(a);
      }
      const std::string noun = e.kind == mechanics::ForceKind::Spring    ? "spring"
                               : e.kind == mechanics::ForceKind::Bushing ? "bushing"
                                                                         : "compliant contact";
      fn.block(cite_.where(noun, e.component) + ": forces at its frames' origins", out);
    }
  }

  // One block per force law: tau's entry (the others stay zero).
  void forceLawBlocks(FunctionBuilder& fn, const VectorX<Expr>& tau, const std::string& target) {
    for (const ForceLawLayout& fl : layout_.forceLaws) {
      const sema::FlatForceLaw& law = model_.forceLaws.at(static_cast<std::size_t>(fl.law));
      fn.block(cite_.where("force law", fl.name, law.range), {{index(target, fl.uIndex), tau[fl.uIndex]}});
    }
  }

  // `N adds, N muls, N divs (weighted W)`, for a function's doc.
  static std::string brief(const symbolic::OpCount& ops) {
    return std::to_string(ops.adds) + " adds, " + std::to_string(ops.muls) + " muls, " + std::to_string(ops.divs) +
           " divs (weighted " + symbolic::formatDouble(weightedCost(ops)) + ")";
  }
  static json opsJson(const symbolic::OpCount& ops) {
    return {{"adds", ops.adds}, {"muls", ops.muls}, {"divs", ops.divs}, {"calls", ops.funcs},
            {"other", ops.other}, {"weighted", weightedCost(ops)}};
  }

  // The one of two printed versions of a function with the smaller weighted
  // operation count (ties go to the first).
  static FunctionBuilder& cheaper(FunctionBuilder& a, FunctionBuilder& b) {
    return weightedCost(b.ops()) < weightedCost(a.ops()) ? b : a;
  }

  // Traces forward dynamics four ways, composite rigid body + tree-sparse
  // L^T D L (forwardDynamics) or the articulated-body algorithm (aba), each
  // about body origins in World (dynamics.hpp) or in joint frames
  // (local_dynamics.hpp), prints each and emits the one whose printed code
  // has the smallest weighted operation count (ties go to the earlier in
  // that order). The IR records all four counts: as printed (`emitted`, what
  // decides) and of the simplified DAG computed once (`dag`,
  // countOperations).
  // forwardDynamics' code by one method, its udot left in v: the
  // articulated-body algorithm (useAba) or CRBA + L^T D L, in joint frames
  // or in World. forwardDynamics traces each and keeps the cheapest;
  // forwardDynamicsFactor takes ABA in joint frames.
  FunctionBuilder forwardDynamicsCode(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev, FunctionValues<Expr>& v,
                                      bool useAba, bool jointFrames) {
    const bool external = f.id == FunctionId::ForwardDynamicsExternal;
    const std::string solve = external ? "udot = M^-1 (tau - C + sum_B J_WB^T fext_B) by the tree-sparse L^T D L factorization"
                                       : "udot = M^-1 (tau - C) by the tree-sparse L^T D L factorization";
    v = arguments();
    ev.run(f.id, v, {.aba = useAba, .jointFrames = jointFrames});
    FunctionBuilder fn = function(f);
    fn.splitAt(kForwardDynamicsPartBudget);
    if (layout_.nu >= kFusedMinSpeeds) fn.set("fused", true);
    if (!useAba) {
      fn.local("MassMatrix M;");
      fn.local("U C;");
    }
    // The force laws' entries, by name; the others are zero and folded.
    if (!layout_.forceLaws.empty()) fn.local("U tau;");
    if (jointFrames) {
      jointFrameVelocityBlocks(fn, ev.joint);
      forceLawBlocks(fn, v.tau, "tau");
      forceElementBlocks(fn, v);
      if (useAba) {
        jointFrameAbaBlocks(fn, ev.joint);
      } else {
        jointFrameMassMatrixBlocks(fn, ev.joint);
        jointFrameBiasBlocks(fn, ev.joint);
        fn.block(solve, vectorOutputs("udot", v.udot));
      }
    } else {
      poseBlocks(fn, ev.world, false);
      velocityBlocks(fn, ev.world, false);
      forceLawBlocks(fn, v.tau, "tau");
      forceElementBlocks(fn, v);
      if (useAba) {
        fn.block("udot by the articulated-body algorithm, in World", vectorOutputs("udot", v.udot));
      } else {
        // Zero entries are never read (L^T D L folds them), so never set.
        fn.block("mass matrix (composite rigid body, in World)", nonzeroOutputs("M", ev.world.M));
        fn.block(external || !layout_.forceElements.empty()
                     ? "bias less the external forces' generalized forces, C - sum_B J_WB^T fext_B "
                            "(recursive Newton-Euler with udot = 0, gravity included, in World)"
                          : "bias (recursive Newton-Euler with udot = 0, gravity included, in World)",
                 vectorOutputs("C", ev.world.C));
        fn.block(solve, vectorOutputs("udot", v.udot));
      }
    }
    return fn;
  }

  json forwardDynamics(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    struct Variant {
      const char* key;    // IR name
      const char* title;  // in the doc comment
      bool aba;
      bool jointFrames;
      VectorX<Expr> udot;
      FunctionBuilder fn;
    };
    // L^T D L costs about sum over dofs of (dof depth)^2 products; past
    // kMaxLtdlWork CRBA cannot win (ABA is linear in the bodies), and
    // tracing it would take time and memory cubic in a chain's length.
    const std::vector<int> dofParent = Data<Expr>::dofParents(mechanism_);
    std::size_t ltdlWork = 0;
    for (std::size_t k = 0; k < dofParent.size(); ++k) {
      std::size_t depth = 0;
      for (int i = dofParent[k]; i >= 0; i = dofParent[static_cast<std::size_t>(i)]) ++depth;
      ltdlWork += depth * depth;
    }
    // A dynamic-size M would allocate on every call.
    const bool traceCrba = ltdlWork <= kMaxLtdlWork && !massMatrixDynamic();
    // The overload with external forces (fext[b] about Bo, in World) traces
    // the same four ways: its cheapest method may differ, since the
    // joint-frame versions must turn each force into its joint frame.
    const bool external = f.id == FunctionId::ForwardDynamicsExternal;
    auto emit = [&](const char* key, const char* title, bool useAba, bool jointFrames) {
      FunctionValues<Expr> v;
      FunctionBuilder fn = forwardDynamicsCode(f, ev, v, useAba, jointFrames);
      return Variant{key, title, useAba, jointFrames, v.udot, std::move(fn)};
    };
    std::vector<Variant> variants;
    if (traceCrba) variants.push_back(emit("crba_ltdl", "CRBA + L^T D L in World", false, false));
    variants.push_back(emit("aba", "ABA in World", true, false));
    if (traceCrba) variants.push_back(emit("crba_ltdl_joint_frames", "CRBA + L^T D L in joint frames", false, true));
    variants.push_back(emit("aba_joint_frames", "ABA in joint frames", true, true));
    std::size_t best = 0;
    for (std::size_t k = 1; k < variants.size(); ++k) {
      if (weightedCost(variants[k].fn.ops()) < weightedCost(variants[best].fn.ops())) best = k;
    }
    Variant& chosen = variants[best];
    FunctionBuilder& fn = chosen.fn;

    auto roots = [](const VectorX<Expr>& v) { return std::vector<Expr>(v.data(), v.data() + v.size()); };
    json method = {{"chosen", chosen.aba ? "aba" : "crba_ltdl"},
                   {"frames", chosen.jointFrames ? "joint" : "world"},
                   {"weights", {{"add", 1}, {"mul", 1}, {"other", 1}, {"div", 4}, {"call", 4}}}};
    for (Variant& v : variants) {
      method[v.key] = {{"emitted", opsJson(v.fn.ops())}, {"dag", opsJson(symbolic::countOperations(roots(v.udot)))}};
    }
    const std::string skipped =
        massMatrixDynamic() ? "not traced: M (nu x nu) is too large for a fixed-size local"
                            : "not traced: L^T D L work " + std::to_string(ltdlWork) + " > " +
                                  std::to_string(kMaxLtdlWork) + " (sum of squared dof depths)";
    if (!traceCrba) method["crba_ltdl"] = method["crba_ltdl_joint_frames"] = {{"skipped", skipped}};

    fn.set("method", method);
    std::vector<std::string> doc;
    if (chosen.aba) {
      doc = {"udot (nu) = M^-1 (tau - C) by the articulated-body algorithm (Featherstone), force laws",
             "as joint forces, all unrolled."};
    } else {
      doc = {"udot (nu) = M^-1 (tau - C): composite-rigid-body mass matrix, Newton-Euler bias,",
             "force laws and the tree-sparse L^T D L solve, all unrolled."};
    }
    if (external) {
      doc.push_back("With external spatial forces on the bodies, fext[b] = [n; f] (N*m, N) on body b");
      doc.push_back("(bodyNames[b]): the moment about its origin, then the force, both in World. They");
      doc.push_back("add sum_B J_WB^T fext_B to tau (virtual work); a force f at a point Q of a body is");
      doc.push_back("[p_BoQ_W x f; f].");
    }
    doc.push_back(std::string("Method: ") + chosen.title + ", the cheapest of " +
                  (variants.size() == 4 ? "four" : variants.size() == 2 ? "two" : "one") +
                  " as traced (a division or call weighs 4 multiplies):");
    for (Variant& v : variants) doc.push_back("  " + std::string(v.title) + ": " + brief(v.fn.ops()) + ";");
    if (!traceCrba) doc.push_back("  CRBA + L^T D L: " + skipped + ";");
    doc.back().back() = '.';
    // ABA in joint frames (traced last, so ev.joint holds its Data) as
    // shared steps (codegen/steps.hpp).
    const bool steps = chosen.aba && chosen.jointFrames && &chosen == &variants.back() && !external &&
                       layout_.nu >= kSharedStepsMinSpeeds && layout_.forceElements.empty() &&
                       layout_.cables.empty();
    if (!steps) {
      fn.set("doc", doc);
      return fn.finish();
    }
    const SharedSteps shared = sharedAbaSteps(
        mechanism_, ev.joint, layout_, [this](const JointLayout& j) { return cite_.joint(j); }, f.key());
    doc.push_back("Emitted as " + std::to_string(shared.blocks.size()) + " calls of " +
                  std::to_string(shared.kernels.size()) + " shared steps, each kind of body's step once (" +
                  brief(shared.ops) + " in all).");
    method["steps"] = {{"kernels", shared.kernels.size()}, {"calls", shared.blocks.size()},
                       {"emitted", opsJson(shared.ops)}};
    fn.set("method", method);
    fn.set("doc", doc);
    fn.requireSinCosTable(shared.sinCosTable);
    json j = fn.finish();
    // The force laws' entries of tau first, traced on their own.
    json blocks = json::array(), prologue = json::array();
    symbolic::OpCount lawOps;
    if (!layout_.forceLaws.empty()) {
      FunctionValues<Expr> v = arguments();
      env_->setState(v.time, v.q, v.u);
      FunctionBuilder laws = function(f);
      laws.splitAt(0);  // one part: its blocks go before the steps
      laws.allowSinCosTable(0);  // its opening is not kept
      laws.local("U tau;");
      laws.readAtEnd("tau");  // the steps read it
      forceLawBlocks(laws, env_->appliedForces(), "tau");
      lawOps = laws.ops();
      const json traced = laws.finish();
      blocks = traced.at("blocks");
      prologue = traced.at("prologue");
    }
    for (const json& b : shared.blocks) blocks.push_back(b);
    for (const std::string& line : shared.prologue) prologue.push_back(line);
    j["blocks"] = blocks;
    j["parts"] = json::array();
    j["work"] = json::array();
    for (const char* key : {"work_type", "part_params", "args"}) j.erase(key);
    j["prologue"] = prologue;
    j["kernels"] = shared.kernels;
    j["parameter_sites"] = shared.parameterSites;
    symbolic::OpCount ops = shared.ops;
    ops += lawOps;
    j["operations"] = operationsText(ops);
    return j;
  }

  // forwardDynamics(time, q, u, udot, k): ABA in joint frames as
  // forwardDynamics' "aba_joint_frames", then what the articulated-body
  // passes leave for the template's solveMassMatrix(k, x), per joint: its
  // frame K in the parent's (R_PK, p_PK) and its dofs' columns of S, U =
  // IA S and D^-1 = (S^T IA S)^-1 (k.Dinv's column of a dof holds its
  // column of the joint's D^-1 in the first nu_j rows).
  json forwardDynamicsFactor(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    FunctionValues<Expr> v;
    FunctionBuilder fn = forwardDynamicsCode(f, ev, v, /*useAba=*/true, /*jointFrames=*/true);
    for (const JointLayout& j : layout_.joints) {
      const auto b = static_cast<std::size_t>(j.body);
      const std::string at = "[" + std::to_string(j.body) + "]";
      std::vector<Assignment> out = matrixOutputs("k.R_PK" + at, MatrixX<Expr>(ev.joint.R_PK[b]));
      for (const Assignment& a : vectorOutputs("k.p_PK" + at, VectorX<Expr>(ev.joint.p_PK[b]))) out.push_back(a);
      for (int c = 0; c < j.nu(); ++c) {
        for (int r = 0; r < 6; ++r) {
          out.push_back({index2("k.S", r, j.uIndex() + c), ev.joint.S[b](r, c)});
          out.push_back({index2("k.U", r, j.uIndex() + c), ev.joint.U[b](r, c)});
        }
        for (int r = 0; r < j.nu(); ++r) out.push_back({index2("k.Dinv", r, j.uIndex() + c), ev.joint.Dinv[b](r, c)});
      }
      fn.block(cite_.joint(j) + ": articulated factor", out);
    }
    return fn.finish();
  }

  // A * B, skipping the structural zeros.
  static MatrixX<Expr> sparseProduct(const MatrixX<Expr>& A, const MatrixX<Expr>& B) {
    MatrixX<Expr> C = MatrixX<Expr>::Constant(A.rows(), B.cols(), Expr(0.0));
    for (int i = 0; i < A.rows(); ++i)
      for (int j = 0; j < B.cols(); ++j)
        for (int k = 0; k < A.cols(); ++k)
          if (!A(i, k).isZero() && !B(k, j).isZero()) C(i, j) = C(i, j) + A(i, k) * B(k, j);
    return C;
  }

  // The force laws' applied tau and the force elements' external forces
  // differentiated symbolically (small expressions: each law's, each
  // element's), q along N(q).
  ForceDerivatives<Expr> forceDerivatives(const VectorX<Expr>& tau, const std::vector<Vec6<Expr>>& fext) const {
    ForceDerivatives<Expr> d;
    const int nu = layout_.nu;
    const std::vector<Expr> qs(q_.data(), q_.data() + q_.size()), us(u_.data(), u_.data() + u_.size());
    const MatrixX<Expr> N = nMatrix(mechanism_, q_);
    try {
      if (!layout_.forceLaws.empty()) {
        const std::vector<Expr> t(tau.data(), tau.data() + tau.size());
        d.dtau_dq = sparseProduct(symbolic::jacobian(t, qs), N);
        d.dtau_du = symbolic::jacobian(t, us);
      }
      if (!fext.empty()) {
        std::vector<Expr> flat;
        for (const Vec6<Expr>& F : fext)
          for (int k = 0; k < 6; ++k) flat.push_back(F[k]);
        const MatrixX<Expr> dq = sparseProduct(symbolic::jacobian(flat, qs), N);
        const MatrixX<Expr> du = symbolic::jacobian(flat, us);
        for (int j = 0; j < nu; ++j) {
          ExternalForces<Expr> a, b;
          for (std::size_t body = 0; body < fext.size(); ++body) {
            Vec6<Expr> x, y;
            for (int k = 0; k < 6; ++k) {
              x[k] = dq(static_cast<int>(6 * body) + k, j);
              y[k] = du(static_cast<int>(6 * body) + k, j);
            }
            a.push_back(x);
            b.push_back(y);
          }
          d.dF_dq.push_back(std::move(a));
          d.dF_du.push_back(std::move(b));
        }
      }
    } catch (const std::invalid_argument& e) {
      // An opaque call (an external C++ function) of q or u.
      throw UnsupportedExpression(std::string("the derivative of an external C++ function (") + e.what() + ")");
    }
    return d;
  }

  // One block per joint with its columns of `m`, stored into `name`
  // (the structural zeros left out).
  void columnBlocks(FunctionBuilder& fn, const std::string& name, const MatrixX<Expr>& m, const std::string& what) {
    for (const JointLayout& j : layout_.joints) {
      std::vector<Assignment> out;
      for (int c = j.uIndex(); c < j.uIndex() + j.nu(); ++c)
        for (int row = 0; row < m.rows(); ++row)
          if (!m(row, c).isZero()) out.push_back({index2(name, row, c), m(row, c)});
      if (!out.empty()) fn.block(cite_.joint(j) + ": " + what + ", its columns", out);
    }
  }
  // The products ltdlFactor and ltdlInverse take for a tree of these dof
  // parents: sum over dofs k of the ancestors' (depth + 1) for the factor,
  // sum over dofs a of depth(a) (a + 1) for the inverse.
  static std::size_t inverseWork(const std::vector<int>& dofParent) {
    std::vector<std::size_t> depth(dofParent.size(), 0);
    std::size_t work = 0;
    for (std::size_t k = 0; k < dofParent.size(); ++k) {
      const int p = dofParent[k];
      if (p >= 0) depth[k] = depth[static_cast<std::size_t>(p)] + 1;
      for (int i = p; i >= 0; i = dofParent[static_cast<std::size_t>(i)]) work += depth[static_cast<std::size_t>(i)] + 1;
      work += depth[k] * (k + 1);
    }
    return work;
  }
  static bool hasZeros(const MatrixX<Expr>& m) {
    for (int i = 0; i < m.size(); ++i)
      if (m.data()[i].isZero()) return true;
    return false;
  }
  static bool hasNonzero(const MatrixX<Expr>& m) {
    for (int i = 0; i < m.size(); ++i)
      if (!m.data()[i].isZero()) return true;
    return false;
  }

  static std::string dofTable(const std::string& name, const std::vector<int>& values) {
    std::string list;
    for (const int v : values) list += (list.empty() ? "" : ", ") + std::to_string(v);
    return "static constexpr std::array<int, nu> " + name + "{{" + list + "}};";
  }
  // `static constexpr std::array<int, nu> kDofParent`: Data::dofParents.
  std::string dofParentTable() const { return dofTable("kDofParent", Data<Expr>::dofParents(mechanism_)); }
  // kRunStart[j]: the first dof of the run of consecutive dofs, each the
  // parent of the next, that ends at j (j itself when its parent is not
  // j - 1): a dof's ancestors are a few such runs, each a contiguous block.
  // kLastDescendant[k]: the last dof below k (k when none).
  std::string dofRunTable(bool lastDescendant) const {
    const std::vector<int> parent = Data<Expr>::dofParents(mechanism_);
    return lastDescendant ? dofTable("kLastDescendant", lastDescendants(parent)) : dofTable("kRunStart", runStarts(parent));
  }
  // kRunStart's values, from the dofs' parents.
  static std::vector<int> runStarts(const std::vector<int>& parent) {
    std::vector<int> runStart(parent.size());
    for (std::size_t j = 0; j < parent.size(); ++j)
      runStart[j] = j > 0 && parent[j] == static_cast<int>(j) - 1 ? runStart[j - 1] : static_cast<int>(j);
    return runStart;
  }
  // The last dof below each dof (itself when none), from the dofs' parents
  // (parents first).
  static std::vector<int> lastDescendants(const std::vector<int>& parent) {
    std::vector<int> last(parent.size());
    for (std::size_t j = 0; j < parent.size(); ++j) last[j] = static_cast<int>(j);
    for (std::size_t d = parent.size(); d-- > 0;) {
      if (parent[d] < 0) continue;
      int& up = last[static_cast<std::size_t>(parent[d])];
      up = std::max(up, last[d]);
    }
    return last;
  }

  // The derivative functions' nu x nu results, sized first where MassMatrix
  // is dynamic.
  void resizeResults(FunctionBuilder& fn, const std::vector<std::string>& results) const {
    if (!massMatrixDynamic()) return;
    for (const std::string& m : results)
      fn.opening(m + ".resize(nu, nu);  // dynamic size: allocates only if not nu x nu yet");
  }

  // What a pairs' loop emitted (pairLoop): kDofParent (by paths and by
  // columns), and whether it sums by columns, which also declares kRunStart
  // and kLastDescendant, or by blocks (the IR's method.pairLoop says which
  // form).
  struct PairTables {
    bool parent = false, columns = false, blocks = false;
    const char* form() const { return blocks ? "blocks" : columns ? "columns" : "paths"; }
  };
  // Whether the pairs' loop goes by the tree's blocks (pairBlocks; the
  // shared steps then write S and F transposed): M of fixed size and four
  // dofs at least, which the tiles of four rows need (a tile ends at row
  // nu - 1 at the latest); below that, paths.
  bool pairsByBlocks() const { return !massMatrixDynamic() && layout_.nu >= 4; }
  // Whether the pairs' loop stores every entry of the results (nothing
  // zeroed first): on a chain, where no step writes into them before it (no
  // joint's own block, `ownBlocks`; no armature in M's traced part `M`) and
  // the loop's form stores (by columns or by blocks).
  bool pairsStoreAll(bool ownBlocks, const MatrixX<Expr>& M) const {
    const bool chain = entriesOnPaths() == static_cast<long>(layout_.nu) * layout_.nu;
    return chain && (pairsByColumns() || pairsByBlocks()) && !ownBlocks && !hasNonzero(M);
  }
  // Whether the pairs' loop sums by columns (pairColumns): every dof's
  // subtree a block of consecutive dofs, k ... kLastDescendant[k] (the dofs
  // numbered depth first, as a chain's and the usual trees' are), and a
  // dof's mean depth at least kMinPairColumnsMeanDepth.
  bool pairsByColumns() const {
    return subtreesContiguous() && pathSums().pairs >= kMinPairColumnsMeanDepth * layout_.nu;
  }
  // How many of the nu x nu entries pair two dofs on one path to the root
  // (one in the other's subtree; subtrees blocks of consecutive dofs):
  // where a derivative's result can be nonzero. All of them on one chain.
  long entriesOnPaths() const {
    const std::vector<int> last = lastDescendants(Data<Expr>::dofParents(mechanism_));
    long entries = 0;
    for (std::size_t j = 0; j < last.size(); ++j) entries += 2 * (last[j] - static_cast<int>(j)) + 1;
    return entries;
  }
  bool subtreesContiguous() const {
    const std::vector<int> parent = Data<Expr>::dofParents(mechanism_);
    const std::vector<int> last = lastDescendants(parent);
    std::vector<int> size(parent.size(), 1);  // the dofs of each dof's subtree
    for (std::size_t d = parent.size(); d-- > 0;)
      if (parent[d] >= 0) size[static_cast<std::size_t>(parent[d])] += size[d];
    for (std::size_t j = 0; j < parent.size(); ++j)
      if (last[j] - static_cast<int>(j) + 1 != size[j]) return false;
    return true;
  }

  // Zp, a copy of the nu x nu matrix `from` over columns of kPad rows (kPad
  // declared before), the rows past nu zero: whole SIMD registers.
  static std::vector<std::string> paddedColumns(const std::string& from, const std::string& comment) {
    return {"Eigen::Matrix<double, kPad, nu> Zp;  // " + comment, "Zp.topRows<nu>() = " + from + ";",
            "Zp.bottomRows<kPad - nu>().setZero();"};
  }

  // forwardDynamicsDerivatives' closing products dudot_dq = -M^-1 dr_dq and
  // dudot_du = -M^-1 dr_du, M^-1 whole in dudot_dtau: below
  // kMinEigenProductSpeeds (fixed size) a column at a time over rows padded
  // to a multiple of four (M^-1 copied only where nu is not a multiple of
  // four), else
  // Eigen's products. paddedInverse: kPad and Zp, M^-1 over kPad rows, are
  // declared already (massInverseGaussJordan).
  std::vector<std::string> negatedProducts(bool paddedInverse = false) const {
    const int nu = layout_.nu;
    if (nu >= kMinEigenProductSpeeds || massMatrixDynamic())
      return {"dudot_dq.noalias() = -dudot_dtau * $dr_dq;", "dudot_du.noalias() = -dudot_dtau * $dr_du;"};
    const int pad = (nu + 3) / 4 * 4;
    if (paddedInverse)
      return withProductLambda({"// dudot_dq = -M^-1 dr_dq and dudot_du = -M^-1 dr_du a column at a time: column c minus the sum",
                                "// over k of M^-1's column k (Zp's, above) times dr(k, c)."});
    std::vector<std::string> lines = {
        "// dudot_dq = -M^-1 dr_dq and dudot_du = -M^-1 dr_du a column at a time: column c minus the sum",
        "// over k of M^-1's column k times dr(k, c), down kPad rows (whole SIMD registers: " +
            std::string(pad > nu ? "M^-1's rows" : "faster"),
        pad > nu ? "// padded with zeros; Eigen's fixed-size products split " + std::to_string(nu) +
                       "-row columns into partial ones)."
                 : "// than Eigen's fixed-size products at these sizes)."};
    lines.push_back("constexpr int kPad = " + std::to_string(pad) + ";");
    if (pad > nu) {
      for (std::string& line : paddedColumns("dudot_dtau", "M^-1, then zero rows")) lines.push_back(std::move(line));
    } else {
      lines.push_back("const MassMatrix& Zp = dudot_dtau;  // M^-1");
    }
    return withProductLambda(std::move(lines));
  }

  // `lines`, then the products of negatedProducts over Zp's kPad rows.
  static std::vector<std::string> withProductLambda(std::vector<std::string> lines) {
    for (const std::string& line : std::vector<std::string>{
             "const auto product = [&Zp](const MassMatrix& dr, MassMatrix& out) {",
             "  for (int c = 0; c < nu; ++c) {",
             "    Eigen::Matrix<double, kPad, 1> s = Zp.col(0) * dr(0, c);",
             "    for (int k = 1; k < nu; ++k) s += Zp.col(k) * dr(k, c);",
             "    out.col(c) = -s.head<nu>();",
             "  }",
             "};",
             "product($dr_dq, dudot_dq);",
             "product($dr_du, dudot_du);"})
      lines.push_back(line);
    return lines;
  }

  // forwardDynamicsDerivatives' closing statements where M^-1 is Gauss-Jordan
  // elimination at run time (MassInverse::GaussJordan): M (whole, symmetric
  // positive definite, so no pivoting) copied into Zp, columns of kPad rows
  // (a multiple of the SIMD register's doubles where the header is compiled,
  // the rows past nu zero and staying zero), inverted in place two pivots at
  // a time (each column loaded and stored once for both), copied into
  // dudot_dtau; then the two products read Zp.
  std::vector<std::string> massInverseGaussJordan(bool products = true) const {
    std::vector<std::string> lines = {
        "// At run time: M^-1 by Gauss-Jordan elimination in place (M is symmetric positive definite:",
        "// no pivoting), whole columns of kPad rows in SIMD registers (kLanes doubles each, eight where",
        "// Eigen aligns for AVX-512; the rows past nu zero, and they stay zero): nu^2 kPad multiply-adds,",
        "// against the tree-sparse factor and inverse's nu^3 / 2 in short dependent steps, for a chain,",
        "// whose M is dense. Two pivots k, l = k + 1 at a time, so that each column is loaded and",
        "// stored once for both, in the order of the two single pivots (s = 1 / Zp(k, k), t = 1 / the",
        "// second pivot; c1, c2: the pivots' columns, rows k and l zero, c2 after pivot k): every other",
        "// column j takes Zp.col(j) -= c1 a + c2 b (a its row k, b its row l after pivot k) and",
        "// x = P (Zp(k, j), Zp(l, j)) into rows k and l, P the inverse of the 2 x 2 block (k, l); columns",
        "// k and l become cs c2 - c1 and -c2, with P in rows k and l. (The block's inverse applied to the",
        "// columns as they stood lost a digit on an 18-link chain; an explicit 2 x 2 inverse, two.) With",
        "// nu odd, the last pivot alone.",
        "constexpr int kLanes = EIGEN_MAX_STATIC_ALIGN_BYTES >= 64 ? 8 : 4;",
        "constexpr int kPad = (nu + kLanes - 1) / kLanes * kLanes;",
        "using Column = Eigen::Matrix<double, kPad, 1>;"};
    for (std::string& line : paddedColumns("$M", "M, then M^-1")) lines.push_back(std::move(line));
    for (const char* line : {"for (int k = 0; k + 1 < nu; k += 2) {",
                             "  const int l = k + 1;",
                             "  const double s = 1.0 / Zp(k, k), cs = Zp(l, k) * s, sb = s * Zp(k, l);",
                             "  const double t = 1.0 / (Zp(l, l) - cs * Zp(k, l));  // 1 / the second pivot",
                             "  const double p11 = t, p01 = -sb * t, p10 = -t * cs, p00 = s - p01 * cs;",
                             "  Column ck = Zp.col(k), cl = Zp.col(l);",
                             "  ck[k] = ck[l] = cl[k] = cl[l] = 0.0;",
                             "  const Column c1 = ck * s, c2 = (cl - ck * sb) * t;  // the two pivots' columns",
                             "  for (int j = 0; j < nu; ++j) {",
                             "    if (j == k || j == l) continue;",
                             "    const double a = Zp(k, j), b = Zp(l, j) - cs * a;  // row l after pivot k",
                             "    const double x1 = t * b, x0 = s * a - sb * x1;",
                             "    Zp.col(j) -= c1 * a + c2 * b;",
                             "    Zp(k, j) = x0;",
                             "    Zp(l, j) = x1;",
                             "  }",
                             "  Zp.col(k) = c2 * cs - c1;",
                             "  Zp.col(l) = -c2;",
                             "  Zp(k, k) = p00;",
                             "  Zp(k, l) = p01;",
                             "  Zp(l, k) = p10;",
                             "  Zp(l, l) = p11;",
                             "}",
                             "if (nu % 2 == 1) {  // the last pivot alone",
                             "  constexpr int k = nu - 1;",
                             "  const double pivot = 1.0 / Zp(k, k);",
                             "  Column c = Zp.col(k) * pivot;",
                             "  c[k] = 0.0;",
                             "  for (int j = 0; j < k; ++j) {",
                             "    const double r = Zp(k, j);",
                             "    Zp.col(j) -= c * r;",
                             "    Zp(k, j) = r * pivot;",
                             "  }",
                             "  Zp.col(k) = -c;",
                             "  Zp(k, k) = pivot;",
                             "}",
                             "dudot_dtau = Zp.topRows<nu>();"})
      lines.emplace_back(line);
    if (products)
      for (const std::string& line : negatedProducts(/*paddedInverse=*/layout_.nu < kMinEigenProductSpeeds)) lines.push_back(line);
    return lines;
  }

  // forwardDynamicsDerivatives' closing statements where M^-1 runs in
  // loops: M = U^T D U factored in place (the local M), M^-1 into
  // dudot_dtau, then the two products with dr_dq and dr_du. Each inner
  // step sums weighted columns over a contiguous block of dofs, a block of
  // rows (up to 8) at a time in Eigen's fixed-size arrays (vectorized by
  // g++ and clang++ alike), in four running sums so that the multiply-adds
  // do not wait on each other: not a walk up the parent table, whose
  // dependent loads made the first version of these loops 6x slower on a
  // 50-link chain, nor an update of one column segment at a time, nor
  // Eigen's matrix-vector products, whose call overhead dominated at these
  // sizes (the factor and M^-1 each 1.04-1.2x slower alone on chain20, the
  // humanoid and chain50, the whole function 2-7 %; docs/performance.md).
  // tables: the dof tables the loops read that the function has not
  // declared yet (a pairs' loop before them declares some: PairTables);
  // lowerOnly: M holds its lower triangle only (the traced forward
  // derivatives' M), mirrored first; inverseDynamicsDerivatives' M, which
  // the composed function factors, is whole.
  // sparseProducts: the two products over dr's rows on each column's path
  // only (treeSparseProducts), else negatedProducts.
  // products: the two products too (else loopProducts, later).
  std::vector<std::string> massInverseLoops(PairTables declared, bool lowerOnly, bool sparseProducts = false,
                                            bool products = true) const {
    const std::string rows = std::to_string(std::min(layout_.nu, 8));
    std::vector<std::string> lines = {
        "// At run time: M = U^T D U in place on its upper triangle (F: U = L^T, unit, above the diagonal",
        lowerOnly ? "// and D on it; M's lower triangle mirrored first), tree-sparse (kDofParent[k]: dof k's parent"
                  : "// and D on it), tree-sparse (kDofParent[k]: dof k's parent",
        "// dof, -1 at a root; no fill-in: the entries off a dof's path are zero and stay zero), from the",
        "// last dof up: U(0:k, k) D(k) = M(0:k, k) - sum_d U(0:k, d) D(d) U(k, d) over k's descendants",
        "// d, a weighted sum of the columns k + 1 ... kLastDescendant[k] (U(k, d) = 0 for those of them",
        "// not below k); then Z = M^-1 by columns from the root, Z(0:a, a) = -sum over a's ancestors j",
        "// of Z(0:a, j) U(j, a), one weighted sum per run of consecutive ancestors (kRunStart[j]: the",
        "// run's first dof), and Z(a, a) = 1/D(a) - U(0:a, a) . Z(0:a, a), row a = column a; then",
        "// dudot_dq = -M^-1 dr_dq and dudot_du = -M^-1 dr_du (below).",
        declared.parent ? "" : dofParentTable(),
        declared.columns ? "" : dofRunTable(/*lastDescendant=*/false),
        declared.columns ? "" : dofRunTable(/*lastDescendant=*/true),
        "// The weighted sums by blocks of kRows rows of a column (X: nu rows, column-major),",
        "// sum over d = b ... e of X(r : r + kRows, d) w[d], in four running sums (SIMD, and",
        "// multiply-adds that do not wait on each other). A column's rows 0 ... h - 1 are the blocks",
        "// from row 0 by kRows and a last one ending at row h - 1 (overlapping the one before), or rows",
        "// 0 ... kRows - 1 when h < kRows: rows past h are scratch (below F's diagonal, or rows of",
        "// M^-1 that a later row overwrites) and their sums touch only rows past h.",
        "constexpr int kRows = " + rows + ";",
        "using Rows = Eigen::Array<double, kRows, 1>;",
        "const auto weighted = [](const double* X, int r, const double* w, int b, int e) {",
        "  Rows s0 = Rows::Zero(), s1 = Rows::Zero(), s2 = Rows::Zero(), s3 = Rows::Zero();",
        "  int d = b;",
        "  for (; d + 3 <= e; d += 4) {",
        "    s0 += Eigen::Map<const Rows>(X + r + d * nu) * w[d];",
        "    s1 += Eigen::Map<const Rows>(X + r + (d + 1) * nu) * w[d + 1];",
        "    s2 += Eigen::Map<const Rows>(X + r + (d + 2) * nu) * w[d + 2];",
        "    s3 += Eigen::Map<const Rows>(X + r + (d + 3) * nu) * w[d + 3];",
        "  }",
        "  for (; d <= e; ++d) s0 += Eigen::Map<const Rows>(X + r + d * nu) * w[d];",
        "  return Rows((s0 + s1) + (s2 + s3));",
        "};",
        "MassMatrix& F = $M;  // M, then its factor",
        lowerOnly ? "for (int j = 1; j < nu; ++j)" : "",
        lowerOnly ? "  for (int i = 0; i < j; ++i) F(i, j) = F(j, i);" : "",
        "U DU = U::Zero(nu);  // D(d) U(k, d) for k's descendants d",
        "for (int k = nu - 1; k >= 0; --k) {",
        "  const int e = kLastDescendant[k];",
        "  if (e > k) {",
        "    DU.segment(k + 1, e - k) =",
        "        F.diagonal().segment(k + 1, e - k).cwiseProduct(F.row(k).segment(k + 1, e - k).transpose());",
        "    double* y = F.col(k).data();",
        "    const int last = k + 1 > kRows ? k + 1 - kRows : 0;  // the last block's first row",
        "    const Rows tail = Eigen::Map<Rows>(y + last) - weighted(F.data(), last, DU.data(), k + 1, e);",
        "    for (int r = 0; r < last; r += kRows)",
        "      Eigen::Map<Rows>(y + r) -= weighted(F.data(), r, DU.data(), k + 1, e);",
        "    Eigen::Map<Rows>(y + last) = tail;  // after the block it overlaps, from the same values",
        "  }",
        "  if (k > 0) F.col(k).head(k) *= 1.0 / F(k, k);",
        "}",
        "for (int a = 0; a < nu; ++a) {",
        "  const auto block = [&](int r) {  // Z(r : r + kRows, a)",
        "    Rows s = Rows::Zero();",
        "    for (int j = kDofParent[a]; j >= 0; j = kDofParent[kRunStart[j]])",
        "      s += weighted(dudot_dtau.data(), r, F.col(a).data(), kRunStart[j], j);",
        "    Eigen::Map<Rows>(dudot_dtau.col(a).data() + r) = -s;",
        "  };",
        "  if (a > 0) {",
        "    const int last = a > kRows ? a - kRows : 0;  // the last block's first row",
        "    for (int r = 0; r < last; r += kRows) block(r);",
        "    block(last);",
        "  }",
        "  dudot_dtau(a, a) = 1.0 / F(a, a) - F.col(a).head(a).dot(dudot_dtau.col(a).head(a));",
        "  dudot_dtau.row(a).head(a) = dudot_dtau.col(a).head(a).transpose();",
        "}"};
    if (products)
      for (std::string& line : loopProducts(sparseProducts)) lines.push_back(std::move(line));
    return lines;
  }

  // massInverseLoops' two products (after its M^-1, whose kRows and Rows
  // they use): over each column's path (sparseProducts) or negatedProducts.
  std::vector<std::string> loopProducts(bool sparseProducts) const {
    std::vector<std::string> lines;
    if (!sparseProducts) return negatedProducts();
    // Up to four blocks of rows at a time (eight running sums): with all
    // seven of a 50-dof column at once, g++ -O2 -march=native ran the
    // products slower than Eigen's.
    const int group = std::min(4, (layout_.nu + 7) / 8);
    std::string sums;
    for (int b = 0; b < group; ++b) {
      const std::string i = std::to_string(b);
      sums += (b ? ", " : "") + std::string("q") + i + " = Rows::Zero(), u" + i + " = Rows::Zero()";
    }
    for (const std::string& line : std::vector<std::string>{
             "// Then dudot_dq = -M^-1 dr_dq and dudot_du = -M^-1 dr_du over dr's rows on each column's",
             "// path only: column c of dr is zero off c's path (c's ancestors, runs of consecutive dofs,",
             "// and its subtree c ... kLastDescendant[c]), and the columns of a run of dofs, each the only",
             "// child of the one before, share those rows. Each result column by kGroup blocks of kRows",
             "// rows at a time, held in registers, the last block ending at row nu - 1 (overlapping the",
             "// one before); both products at once.",
             "constexpr int kGroup = " + std::to_string(group) + ";",
             "std::array<int, 2 * nu + 2> runs;  // the rows: first and last dof of each run",
             "for (int s = 0, e = 0; s < nu; s = e + 1) {",
             "  for (e = s; e + 1 < nu && kDofParent[e + 1] == e && kLastDescendant[e + 1] == kLastDescendant[e]; ++e) {",
             "  }",
             "  int n = 0;",
             "  runs[n++] = s;",
             "  runs[n++] = kLastDescendant[s];",
             "  for (int j = kDofParent[s]; j >= 0; j = kDofParent[kRunStart[j]]) {",
             "    runs[n++] = kRunStart[j];",
             "    runs[n++] = j;",
             "  }",
             "  for (int c = s; c <= e; ++c) {",
             "    for (int r = 0; r < nu; r += kGroup * kRows) {",
             "      int at[kGroup];  // the blocks' first rows",
             "      for (int b = 0; b < kGroup; ++b) at[b] = r + b * kRows < nu - kRows ? r + b * kRows : nu - kRows;",
             "      Rows " + sums + ";",
             "      for (int g = 0; g < n; g += 2) {",
             "        for (int k = runs[g]; k <= runs[g + 1]; ++k) {",
             "          const double* z = dudot_dtau.col(k).data();",
             "          const double wq = $dr_dq(k, c), wu = $dr_du(k, c);"}) {
      lines.push_back(line);
    }
    for (int b = 0; b < group; ++b) {
      const std::string i = std::to_string(b);
      lines.push_back("          {");
      lines.push_back("            const Rows x = Eigen::Map<const Rows>(z + at[" + i + "]);");
      lines.push_back("            q" + i + " -= x * wq;");
      lines.push_back("            u" + i + " -= x * wu;");
      lines.push_back("          }");
    }
    lines.push_back("        }");
    lines.push_back("      }");
    for (int b = 0; b < group; ++b) {
      const std::string i = std::to_string(b);
      lines.push_back("      Eigen::Map<Rows>(dudot_dq.col(c).data() + at[" + i + "]) = q" + i + ";");
      lines.push_back("      Eigen::Map<Rows>(dudot_du.col(c).data() + at[" + i + "]) = u" + i + ";");
    }
    lines.push_back("    }");
    lines.push_back("  }");
    lines.push_back("}");
    return lines;
  }

  // Whether forwardDynamicsDerivatives' products -M^-1 dr may skip dr's
  // entries off each column's path: dr is inverse dynamics' (no force
  // elements or cables, which couple branches) less force laws' entries
  // on paths (`laws`: their (row, column)), the subtrees are blocks of
  // consecutive dofs, and at most three quarters of the entries are on
  // paths. On a chain (every entry on a path) the products over all rows
  // stay (negatedProducts): the blocks beat Eigen's with AVX (clang++ and
  // g++, -march=native) but not with SSE2 alone (1.2x slower at 20 and 40
  // dofs); on the humanoid they win with either (1.4-2.8x;
  // docs/performance.md).
  bool treeSparseProducts(const std::vector<std::pair<int, int>>& laws) const {
    if (!layout_.forceElements.empty() || !layout_.cables.empty() || !subtreesContiguous()) return false;
    const std::vector<int> last = lastDescendants(Data<Expr>::dofParents(mechanism_));
    const auto onPath = [&](int i, int j) { return (i >= j && i <= last[j]) || (j >= i && j <= last[i]); };
    for (const auto& [row, column] : laws)
      if (!onPath(row, column)) return false;
    return 4 * entriesOnPaths() <= 3 * static_cast<long>(layout_.nu) * layout_.nu;
  }

  // The derivatives' pair terms in the compact form: their factors
  // (local::DerivativePairs) traced into locals, one block per joint, then
  // local::addDerivativePairs as a loop over the dof tree adding them to
  // dq, du and M (names as closing statements spell them; lowerOnly: M's
  // entries on and below the diagonal only, as its factor reads them).
  // Without `p`, the factors' locals are only declared (zero), for shared
  // steps to write.
  struct PairFactor {
    const char* name;
    MatrixX<Expr> local::DerivativePairs<Expr>::*value;
    bool sixRows;  // else 12 (18 with external forces)
    const char* what;
  };
  static constexpr PairFactor kPairFactors[] = {
      {"pairSw", &local::DerivativePairs<Expr>::Sw, true, "the pairs' factors: S in World"},
      {"pairF", &local::DerivativePairs<Expr>::F, false, "the pairs' factors: F = [Ic S; B^T S; T^T S]"},
      {"pairWq", &local::DerivativePairs<Expr>::Wq, false, "the pairs' factors: W along q"},
      {"pairWu", &local::DerivativePairs<Expr>::Wu, false, "the pairs' factors: W along u"},
      {"pairGq", &local::DerivativePairs<Expr>::Gq, true, "the pairs' factors: g along q"},
      {"pairGu", &local::DerivativePairs<Expr>::Gu, true, "the pairs' factors: g along u"},
  };
  // assign: every entry of dq, du and M is the loop's alone (a serial
  // chain, nothing written into them before it; by columns or the chain's
  // groups only: pairsStoreAll), so the loop stores its sums instead of
  // adding them to zeros.
  // parts: the sums emitted (all by default); into: where the loop's lines
  // go, else the function's closing statements. stepRows: without `p`,
  // the rows of F the shared steps write (SharedSteps::pairRows).
  PairTables pairLoop(FunctionBuilder& fn, const local::DerivativePairs<Expr>* p, const std::string& dq,
                      const std::string& du, const std::string& M, bool lowerOnly, json* declared = nullptr,
                      bool assign = false, PairParts parts = {}, std::vector<std::string>* into = nullptr,
                      int stepRows = 12) {
    const int rows = p != nullptr ? static_cast<int>(p->F.rows()) : 12;  // of F and W
    // The blocks read S and F transposed, as the steps then write them
    // (sharedDerivativeSteps' transposedFactors).
    const bool blocks = !lowerOnly && p == nullptr && pairsByBlocks();
    for (const PairFactor& f : kPairFactors) {
      const std::string r = std::to_string(f.sixRows ? 6 : rows);
      const bool transposed = blocks && (f.value == &local::DerivativePairs<Expr>::Sw ||
                                        f.value == &local::DerivativePairs<Expr>::F);
      const std::string type = massMatrixDynamic() ? "Eigen::Matrix<double, " + r + ", Eigen::Dynamic>"
                               : transposed        ? "Eigen::Matrix<double, nu, " + r + ">"
                                                   : "Eigen::Matrix<double, " + r + ", nu>";
      const std::string zero = massMatrixDynamic() ? " = " + type + "::Zero(" + r + ", nu);" : " = " + type + "::Zero();";
      if (p == nullptr) {
        declared->push_back(type + " " + f.name + zero + "  // " + f.what);
        continue;
      }
      const MatrixX<Expr>& value = p->*f.value;
      fn.local(type + " " + f.name + (hasZeros(value) || massMatrixDynamic() ? zero : std::string(";")));
      fn.readAtEnd(f.name);
      columnBlocks(fn, f.name, value, f.what);
    }
    std::string first;
    for (const int k : local::firstDofs(mechanism_)) first += (first.empty() ? "" : ", ") + std::to_string(k);
    // By columns for M whole only (the inverse derivatives; the cable
    // models' traced forward ones, whose M is its lower triangle, by paths).
    const bool columns = !blocks && !lowerOnly && pairsByColumns();
    const std::vector<std::string> lines = blocks    ? pairBlocks(stepRows, dq, du, M, first, assign, parts)
                                           : columns ? pairColumns(rows, dq, du, M, first, assign, parts)
                                                     : pairPaths(dq, du, M, lowerOnly, first, parts);
    for (const std::string& line : lines) {
      if (line.empty()) continue;
      if (into != nullptr) {
        into->push_back(line);
      } else {
        fn.closing(line);
      }
    }
    return PairTables{!blocks, columns, blocks};
  }

  // The first line of a pairs' loop's comment, of the parts it sums, ending
  // in `then` (": for", " by", ...).
  static std::string pairsHeading(PairParts parts, const std::string& then) {
    const std::string what = parts.mass && parts.tau ? "" : parts.mass ? " of M" : " of dtau_dq and dtau_du";
    return "// At run time, the pairs' terms" + what + " (capstan/dynamics_derivatives.hpp's addDerivativePairs)" + then;
  }
  // The lanes of kBelow: `rows` rows d of `width` lanes, zero before lane d
  // and one from it, as an initializer list.
  static std::string belowMask(int rows, int width) {
    std::string mask;
    for (int d = 0; d < rows; ++d)
      for (int l = 0; l < width; ++l) mask += std::string(mask.empty() ? "" : ", ") + (l < d ? "0" : "1");
    return mask;
  }

  // The pairs' loop by paths (local::addDerivativePairs' order): for every
  // dof k, each dof j on its path to the root, one pair at a time.
  std::vector<std::string> pairPaths(const std::string& dq, const std::string& du, const std::string& M,
                                     bool lowerOnly, const std::string& first, PairParts parts = {}) const {
    const bool mass = parts.mass, tau = parts.tau;
    return {pairsHeading(parts, ": for"),
            "// every dof k and each dof j on its path to the root (kDofParent), F_k . W_j into (k, j) and",
            "// into (j, k) F_j . W_k if j is of k's joint (kFirstDof[k]: its first dof), else S_j . g_k;",
            "// M_kj = M_jk = F_k's first six . S_j.",
            parts.tables ? dofParentTable() : "",
            parts.tables ? "static constexpr std::array<int, nu> kFirstDof{{" + first + "}};" : "",
            "for (int k = 0; k < nu; ++k) {",
            "  for (int j = k; j >= 0; j = kDofParent[j]) {",
            mass ? "    const double m = $pairF.col(k).head<6>().dot($pairSw.col(j));" : "",
            mass ? "    " + M + "(k, j) += m;" : "",
            mass && !lowerOnly ? "    if (j != k) " + M + "(j, k) += m;" : "",
            tau ? "    " + dq + "(k, j) += $pairF.col(k).dot($pairWq.col(j));" : "",
            tau ? "    " + du + "(k, j) += $pairF.col(k).dot($pairWu.col(j));" : "",
            tau ? "    if (j == k) continue;" : "",
            tau ? "    if (j >= kFirstDof[k]) {" : "",
            tau ? "      " + dq + "(j, k) += $pairF.col(j).dot($pairWq.col(k));" : "",
            tau ? "      " + du + "(j, k) += $pairF.col(j).dot($pairWu.col(k));" : "",
            tau ? "    } else {" : "",
            tau ? "      " + dq + "(j, k) += $pairSw.col(j).dot($pairGq.col(k));" : "",
            tau ? "      " + du + "(j, k) += $pairSw.col(j).dot($pairGu.col(k));" : "",
            tau ? "    }" : "",
            "  }",
            "}"};
  }

  // One weighted sum per term over the first rows of a factor transposed
  // across the dofs (row r's lanes at `table` + r `stride` + `at`), as the
  // pairs' loop by columns emits them: row 0 loaded into
  // `first` and each term's sum set from it (declared here, or assigned
  // with `assign`), then each further row loaded into `load`, in a block of
  // its own, added to the terms that take it. Lines indented by `pad`.
  struct LaneTerm {
    bool part;                                // emitted at all
    std::string sum;                          // its running sum
    std::function<std::string(int)> weight;   // the scalar weighting row r
    int rows;                                 // the rows it takes
  };
  static void laneSums(std::vector<std::string>& out, const std::string& pad, const std::string& table,
                       const std::string& stride, const std::string& at, const std::string& first,
                       const std::string& load, bool assign, const std::vector<LaneTerm>& terms) {
    out.push_back(pad + "const Lanes " + first + " = Eigen::Map<const Lanes>(" + table + " + " + at + ");");
    std::string declared;
    int rows = 0;
    for (const LaneTerm& t : terms) {
      if (!t.part) continue;
      rows = std::max(rows, t.rows);
      const std::string set = t.sum + " = " + first + " * " + t.weight(0);
      if (assign) {
        out.push_back(pad + set + ";");
      } else {
        declared += (declared.empty() ? "" : ", ") + set;
      }
    }
    if (!assign) out.push_back(pad + "Lanes " + declared + ";");
    for (int r = 1; r < rows; ++r) {
      const std::string rs = std::to_string(r);
      out.push_back(pad + "{");
      out.push_back(pad + "  const Lanes " + load + " = Eigen::Map<const Lanes>(" + table + " + " + rs + " * " + stride +
                    " + " + at + ");");
      for (const LaneTerm& t : terms)
        if (t.part && r < t.rows) out.push_back(pad + "  " + t.sum + " += " + load + " * " + t.weight(r) + ";");
      out.push_back(pad + "}");
    }
  }
  // LaneTerm's weight: `name`[r], or with `stride` name[r * stride] (name[0] at row 0).
  static std::function<std::string(int)> weights(const std::string& name, const std::string& stride = "") {
    return [name, stride](int r) {
      return name + "[" + std::to_string(r) + (stride.empty() || r == 0 ? "" : " * " + stride) + "]";
    };
  }

  // The blocks of the pairs' terms on a tree (pairBlocks), each rows
  // [row0, row1) x columns [col0, col1): the tree's segments are its runs
  // of dofs, each the parent of the next (kRunStart's runs, whole); every
  // segment A gives its own block A x A and, for each run C of its first
  // dof's ancestors (a run's tail up to the parent it hangs from), A x C
  // (rows below the columns) and C x A (above): every pair once, nothing
  // off the paths.
  struct PairBlock {
    int row0, row1, col0, col1;
  };
  std::vector<PairBlock> pairBlockList() const {
    const std::vector<int> parent = Data<Expr>::dofParents(mechanism_);
    const std::vector<int> start = runStarts(parent);  // each dof's segment's first dof
    const int nu = layout_.nu;
    const auto at = [](const std::vector<int>& v, int k) { return v[static_cast<std::size_t>(k)]; };
    std::vector<PairBlock> blocks;
    for (int a = 0; a < nu; ++a) {
      if (at(start, a) != a) continue;
      int e = a + 1;  // one past the segment
      while (e < nu && at(start, e) == a) ++e;
      blocks.push_back({a, e, a, e});
      for (int p = at(parent, a); p >= 0; p = at(parent, at(start, p))) {
        blocks.push_back({a, e, at(start, p), p + 1});
        blocks.push_back({at(start, p), p + 1, a, e});
      }
    }
    return blocks;
  }

  // The pairs' sums by the tree's blocks (pairBlockList; a serial chain is
  // one): each block's rows in tiles of eight lanes (four where it has
  // four rows or fewer, or the model fewer than 8 dofs: the 7-dof arm's
  // inverse derivatives were 0.87x as fast as by paths in tiles of 4, 2
  // and 1 added, 1.09x in fours), the last ending at row nu - 1 at the latest, F's
  // and S's rows of the tile loaded once and held for all the block's
  // columns. In column j, rows from kFirstDof[j] on take F_k . Wq_j and
  // F_k . Wu_j (below the column, or of its own joint), rows above
  // S_k . gq_j and S_k . gu_j; M's F1_k . S_j from row j on and S_k . F1_j
  // above; a tile across the line takes both, blended by lanes (kBelow).
  // Adding (to zeros, each joint's own block, M's armature), a tile's
  // lanes outside its block add zeros; storing (`assign`: a chain, every
  // entry a pair's, nothing written before), a tile that starts before its
  // rows stores the rows before again, the same. S and F transposed (the
  // steps write them so: sharedDerivativeSteps' transposedFactors), so each
  // term is an array of lanes times a broadcast scalar. The tile is a
  // generic lambda forced inline, one instance per width
  // (docs/performance.md, "The pairs' loop by blocks").
  std::vector<std::string> pairBlocks(int rows, const std::string& dq, const std::string& du, const std::string& M,
                                      const std::string& first, bool assign, PairParts parts) const {
    const bool mass = parts.mass, tau = parts.tau;
    const int fRows = tau ? rows : 6;  // F's rows read
    const std::string R = std::to_string(fRows);
    const std::vector<PairBlock> list = pairBlockList();
    std::string table;
    for (const PairBlock& b : list)
      table += std::string(table.empty() ? "" : ", ") + "{" + std::to_string(b.row0) + ", " + std::to_string(b.row1) +
               ", " + std::to_string(b.col0) + ", " + std::to_string(b.col1) + "}";
    const std::string mask = belowMask(9, 8);  // kBelow, d = 0 ... 8
    std::vector<std::string> out;
    const auto add = [&out](bool part, const std::string& line) {
      if (part) out.push_back(line);
    };
    add(true, pairsHeading(parts, " by"));
    for (const std::string& line :
         {std::string("// the tree's blocks (kPairBlocks: rows [r0, r1) x columns [c0, c1)): each segment of dofs,"),
          std::string("// each the parent of the next, by itself, and below and above each run of its ancestors."),
          std::string("// In column j, rows from kFirstDof[j] on take F_k . Wq_j and F_k . Wu_j, rows above"),
          std::string("// S_k . gq_j and S_k . gu_j; M's F1_k . S_j from row j on, S_k . F1_j above (F's first " + R),
          std::string(layout_.nu >= 8
                          ? "// rows: the steps write no others). A block's rows in tiles of eight lanes (four where it"
                          : "// rows: the steps write no others). A block's rows in tiles of four lanes (fewer than 8"),
          std::string(layout_.nu >= 8 ? "// has four rows or fewer), F's and S's rows loaded once for all its columns, each"
                                      : "// dofs), F's and S's rows loaded once for all its columns, each"),
          std::string(assign ? "// entry stored (on this chain, where every entry is a pair's, a tile past the block stores"
                             : "// entry added once (lanes past the block add zeros); S and F transposed (the steps write"),
          std::string(assign ? "// the rows before it again, the same); S and F transposed (the steps write them so):"
                             : "// them so): FT[r * nu + k] = F(r, k)."),
          std::string(assign ? "// FT[r * nu + k] = F(r, k)." : "")})
      add(true, line);
    add(parts.tables, "static constexpr std::array<int, nu> kFirstDof{{" + first + "}};");
    add(parts.tables, "static constexpr int kPairBlocks[" + std::to_string(list.size()) + "][4] = {" + table + "};");
    for (const std::string& line : std::vector<std::string>{
             "{",
             "  const double* const FT = $pairF.data();",
             "  const double* const ST = $pairSw.data();",
             "  // kBelow + 8 d: lanes d ... 7 one, those before zero (d = 0 ... 8)",
             "  static constexpr double kBelow[72] = {" + mask + "};",
             "  const auto below = [](int d) { return kBelow + 8 * (d < 0 ? 0 : d < 8 ? d : 8); };",
             "  // rows k ... e - 1 (e - k <= W, W the tile's lanes) of columns c0 ... c1 - 1, from row",
             std::string(assign ? "  // r0 = k, or nu - W where fewer than W rows are left (the rows before k stored again);"
                                : "  // r0 = k, or nu - W where fewer than W rows are left (lanes outside k ... e - 1 add zeros);"),
             "  // F's and S's rows there loaded once for all the columns",
             std::string("  const auto tile = [&](auto lanes, int k, int ") + (assign ? "/*e*/" : "e") +
                 ", int c0, int c1) __attribute__((always_inline)) {",
             "    constexpr int W = decltype(lanes)::value;",
             "    using Lanes = Eigen::Array<double, W, 1>;",
             "    const int r0 = k + W <= nu ? k : nu - W;"})
      add(true, line);
    add(!assign, "    const Lanes in = Eigen::Map<const Lanes>(below(k - r0)) * (1.0 - Eigen::Map<const Lanes>(below(e - r0)));");
    for (int r = 0; r < fRows; ++r)
      add(true, "    const Lanes f" + std::to_string(r) + " = Eigen::Map<const Lanes>(FT + " +
                    (r == 0 ? std::string() : std::to_string(r) + " * nu + ") + "r0);");
    for (int r = 0; r < 6; ++r)
      add(true, "    const Lanes s" + std::to_string(r) + " = Eigen::Map<const Lanes>(ST + " +
                    (r == 0 ? std::string() : std::to_string(r) + " * nu + ") + "r0);");
    // The sum over rows r < n of `lanes`r times weight(r), as one expression.
    const auto sum = [](const std::string& lanes, const std::function<std::string(int)>& weight, int n) {
      std::string e;
      for (int r = 0; r < n; ++r) e += (r == 0 ? "" : " + ") + lanes + std::to_string(r) + " * " + weight(r);
      return e;
    };
    add(true, "    for (int j = c0; j < c1; ++j) {");
    add(tau, "      const double* const wq = $pairWq.col(j).data();");
    add(tau, "      const double* const wu = $pairWu.col(j).data();");
    add(mass, "      const double* const sj = ST + j;  // S_j: sj[r * nu]");
    add(tau, "      const double* const gq = $pairGq.col(j).data();");
    add(tau, "      const double* const gu = $pairGu.col(j).data();");
    add(mass, "      const double* const fj = FT + j;  // F1_j: fj[r * nu]");
    std::string zeros;
    for (const auto& [part, name] : {std::pair{tau, "a"}, std::pair{tau, "b"}, std::pair{mass, "m"}})
      if (part) zeros += std::string(zeros.empty() ? "" : ", ") + name + " = Lanes::Zero()";
    add(true, "      Lanes " + zeros + ";  // F's sums");
    add(true, "      if (r0 + W > kFirstDof[j]) {");
    add(tau, "        a = " + sum("f", weights("wq"), rows) + ";");
    add(tau, "        b = " + sum("f", weights("wu"), rows) + ";");
    add(mass, "        m = " + sum("f", weights("sj", "nu"), 6) + ";");
    add(true, "      }");
    add(true, "      if (r0 < j) {  // rows above the column's joint or dof");
    add(tau, "        const Lanes c = " + sum("s", weights("gq"), 6) + ";");
    add(tau, "        const Lanes d = " + sum("s", weights("gu"), 6) + ";");
    add(mass, "        const Lanes n = " + sum("s", weights("fj", "nu"), 6) + ";");
    add(tau, "        const Lanes w = Eigen::Map<const Lanes>(below(kFirstDof[j] - r0));");
    add(tau, "        a = c + w * (a - c);");
    add(tau, "        b = d + w * (b - d);");
    add(mass, "        const Lanes v = Eigen::Map<const Lanes>(below(j - r0));");
    add(mass, "        m = n + v * (m - n);");
    add(true, "      }");
    const std::string op = assign ? ")) = " : ")) += ", in = assign ? ";" : " * in;";
    add(tau, "      Eigen::Map<Lanes>(&" + dq + "(r0, j" + op + "a" + in);
    add(tau, "      Eigen::Map<Lanes>(&" + du + "(r0, j" + op + "b" + in);
    add(mass, "      Eigen::Map<Lanes>(&" + M + "(r0, j" + op + "m" + in);
    for (const char* line : {"    }", "  };", "  for (const auto& block : kPairBlocks) {"}) add(true, line);
    // Below 8 dofs every tile has four lanes (a tile ends at row nu - 1 at the latest).
    const bool eights = layout_.nu >= 8;
    add(eights, "    if (block[1] - block[0] <= 4) {");
    add(eights, "      tile(std::integral_constant<int, 4>(), block[0], block[1], block[2], block[3]);");
    add(eights, "      continue;");
    add(eights, "    }");
    const std::string W = eights ? "8" : "4";
    for (const std::string& line :
         {"    for (int k = block[0]; k < block[1]; k += " + W + ")",
          "      tile(std::integral_constant<int, " + W + ">(), k, k + " + W + " < block[1] ? k + " + W +
              " : block[1], block[2],",
          std::string("           block[3]);"),
          std::string("  }"), std::string("}")})
      add(true, line);
    return out;
  }

  // The same sums by columns, where every dof's subtree is a block of
  // consecutive dofs (subtreesContiguous): each result column a few
  // contiguous segments, four rows at a time (Eigen's 4-arrays, so SIMD
  // under either compiler). Column j below the diagonal, k in j's
  // subtree (j ... kLastDescendant[j]): F_k . Wq_j, F_k . Wu_j and
  // F1_k . S_j, with F transposed (a row of it across the dofs, padded by
  // three zero columns for the last, partial four); column k above it, j
  // on k's path above its joint (runs of consecutive dofs, kRunStart):
  // S_j . gq_k, S_j . gu_k and S_j . F1_k, with S transposed; j of k's
  // own joint: F_j . W_k and M's. Where it is emitted: pairsByColumns
  // (docs/performance.md, "The pairs' loop by columns").
  std::vector<std::string> pairColumns(int rows, const std::string& dq, const std::string& du,
                                       const std::string& M, const std::string& first, bool assign,
                                       PairParts parts = {}) const {
    const std::string R = std::to_string(parts.tau ? rows : 6);  // F's rows read
    const std::string op = assign ? " = " : " += ";  // store, or add to what the steps wrote
    const bool mass = parts.mass, tau = parts.tau;
    // The lines that are the parts' asked for (`line` if the part's).
    std::vector<std::string> out;
    const auto add = [&out](bool part, const std::string& line) {
      if (part) out.push_back(line);
    };
    // Four rows' sums (row, ...) of column `col` stored (or added) into the
    // results, the last rows up to `end` one at a time: dq's sum `x`, du's
    // `y`, M's `m`.
    const auto stores = [&](const std::string& pad, const std::string& row, const std::string& col,
                            const std::string& end, const std::string& x, const std::string& y) {
      add(true, pad + "if (" + row + " + 3 <= " + end + ") {");
      add(tau, pad + "  Eigen::Map<Lanes>(&" + dq + "(" + row + ", " + col + "))" + op + x + ";");
      add(tau, pad + "  Eigen::Map<Lanes>(&" + du + "(" + row + ", " + col + "))" + op + y + ";");
      add(mass, pad + "  Eigen::Map<Lanes>(&" + M + "(" + row + ", " + col + "))" + op + "m;");
      add(true, pad + "} else {");
      add(true, pad + "  for (int l = 0; " + row + " + l <= " + end + "; ++l) {");
      add(tau, pad + "    " + dq + "(" + row + " + l, " + col + ")" + op + x + "[l];");
      add(tau, pad + "    " + du + "(" + row + " + l, " + col + ")" + op + y + "[l];");
      add(mass, pad + "    " + M + "(" + row + " + l, " + col + ")" + op + "m[l];");
      add(true, pad + "  }");
      add(true, pad + "}");
    };
    add(true, pairsHeading(parts, " by"));
    for (const char* line :
         {"// columns, every dof's subtree being the dofs k ... kLastDescendant[k]: below the diagonal,",
          "// (k, j) for k in j's subtree, F_k . Wq_j, F_k . Wu_j and M's F1_k . S_j; above it, (j, k) for",
          "// j on k's path above k's joint (kFirstDof[k]: its first dof; runs of consecutive dofs from",
          "// kRunStart), S_j . g_k and M's S_j . F1_k, and for j of k's joint F_j . W_k. Four rows at a",
          "// time; F and S transposed into pairT first (three zero columns after the last dof)."})
      add(true, line);
    add(parts.tables, dofParentTable());
    add(parts.tables, dofRunTable(/*lastDescendant=*/false));
    add(parts.tables, dofRunTable(/*lastDescendant=*/true));
    add(parts.tables, "static constexpr std::array<int, nu> kFirstDof{{" + first + "}};");
    for (const std::string& line : std::vector<std::string>{
             "{",
             "  using Lanes = Eigen::Array<double, 4, 1>;",
             "  constexpr int ld = nu + 3;",
             "  std::array<double, (" + R + " + 6) * ld> pairT;  // F's rows, then S's, across the dofs",
             "  double* const FT = pairT.data();",
             "  double* const ST = pairT.data() + " + R + " * ld;",
             "  for (int k = 0; k < ld; ++k) {",
             "    for (int r = 0; r < " + R + "; ++r) FT[r * ld + k] = k < nu ? $pairF(r, k) : 0.0;",
             "    for (int r = 0; r < 6; ++r) ST[r * ld + k] = k < nu ? $pairSw(r, k) : 0.0;",
             "  }",
             "  for (int j = 0; j < nu; ++j) {"})
      add(true, line);
    add(tau, "    const double* const wq = $pairWq.col(j).data();");
    add(tau, "    const double* const wu = $pairWu.col(j).data();");
    add(mass, "    const double* const s = $pairSw.col(j).data();");
    add(true, "    const int last = kLastDescendant[j];");
    add(true, "    for (int k = j; k <= last; k += 4) {");
    laneSums(out, "      ", "FT", "ld", "k", "f0", "f", /*assign=*/false,
             {{tau, "a", weights("wq"), rows}, {tau, "b", weights("wu"), rows}, {mass, "m", weights("s"), 6}});
    stores("      ", "k", "j", "last", "a", "b");
    for (const char* line : {"    }", "  }", "  for (int k = 0; k < nu; ++k) {",
                             "    for (int j = kFirstDof[k]; j < k; ++j) {  // k's own joint"})
      add(true, line);
    add(mass, "      " + M + "(j, k)" + op + "$pairSw.col(j).dot($pairF.col(k).head<6>());");
    add(tau, "      " + dq + "(j, k)" + op + "$pairF.col(j).dot($pairWq.col(k));");
    add(tau, "      " + du + "(j, k)" + op + "$pairF.col(j).dot($pairWu.col(k));");
    add(true, "    }");
    add(tau, "    const double* const gq = $pairGq.col(k).data();");
    add(tau, "    const double* const gu = $pairGu.col(k).data();");
    add(mass, "    const double* const f1 = $pairF.col(k).data();");
    add(true, "    for (int e = kDofParent[kFirstDof[k]]; e >= 0; e = kDofParent[kRunStart[e]]) {");
    add(true, "      for (int j = kRunStart[e]; j <= e; j += 4) {");
    laneSums(out, "        ", "ST", "ld", "j", "s0", "s", /*assign=*/false,
             {{tau, "c", weights("gq"), 6}, {tau, "d", weights("gu"), 6}, {mass, "m", weights("f1"), 6}});
    stores("        ", "j", "k", "e", "c", "d");
    for (const char* line : {"      }", "    }", "  }", "}"}) add(true, line);
    return out;
  }

  // forwardDynamicsDerivatives and inverseDynamicsDerivatives from the
  // analytical recursions (dynamics_derivatives.hpp), traced: inverse
  // dynamics' d tau / dq, d tau / du (one block per joint with its columns,
  // the tree's structural zeros left out) and M (composite rigid body),
  // the force laws' and elements' own derivatives added (differentiated
  // symbolically, forceDerivatives). Forward dynamics needs the residual's
  // derivatives dr = d(inverse dynamics - applied forces) at its udot, and
  // M^-1: up to kMaxTracedInverseWork, M^-1 is traced (L^T D L factor,
  // ltdlInverse) and gives udot too (no ABA); past it, M's tree-sparse
  // factor and M^-1 run at run time in loops over a table of the dofs'
  // parents, and forwardDynamicsDerivatives is composed of the class's
  // functions (composedForwardDynamicsDerivatives): what is traced here
  // then is the cable models' forwardDynamicsDerivativesWithoutCables,
  // whose udot comes from ABA in joint frames. Either way the products
  // d udot / dx = -M^-1 dr/dx are Eigen's, at run time.
  json analyticDerivatives(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    const bool forward = f.id != FunctionId::InverseDynamicsDerivatives;
    FunctionValues<Expr> v = arguments();
    ev.forceDerivatives = [this](const FunctionValues<Expr>&, const VectorX<Expr>& tau,
                                 const std::vector<Vec6<Expr>>& fext) { return forceDerivatives(tau, fext); };
    // Forward dynamics: while M^-1 is traced, udot comes from it (no ABA).
    const std::vector<int> dofParent = Data<Expr>::dofParents(mechanism_);
    using MassInverse = TraceOptions::MassInverse;
    // Where inverseDynamicsDerivatives is shared steps, forwardDynamicsDerivatives
    // is composed of it (Auto), M^-1 traced on its own while it is small.
    const bool smallInverse = !massMatrixDynamic() && inverseWork(dofParent) <= kMaxTracedInverseWork;
    const bool composeSmall = inverseSteps() && layout_.nu >= kComposedDerivativesMinSpeeds;
    const bool traceInverse = forward && !massMatrixDynamic() &&
                              (options_.massInverse == MassInverse::Auto ? smallInverse && !composeSmall
                                                                         : options_.massInverse == MassInverse::Unrolled);
    if (f.id == FunctionId::ForwardDynamicsDerivatives && !traceInverse) {
      ComposedInverse inverse = ComposedInverse::Loops;  // also for a dynamic-size M
      if (massMatrixDynamic()) {
        // the loops
      } else if (options_.massInverse == MassInverse::GaussJordan) {
        inverse = ComposedInverse::GaussJordan;
      } else if (options_.massInverse == MassInverse::Auto) {
        inverse = gaussJordanChain(dofParent) ? ComposedInverse::GaussJordan
                  : smallInverse              ? ComposedInverse::Traced
                                              : ComposedInverse::Loops;
      }
      if (inverseSteps() && !massMatrixDynamic() && options_.forwardDynamicsCall == TraceOptions::ForwardDynamicsCall::Fused)
        return fusedForwardDynamicsDerivatives(f, inverse, ev);
      return composedForwardDynamicsDerivatives(f, inverse);
    }
    // The pair terms (local::DerivativePairs): traced with the rest, or,
    // past kMaxUnrolledDerivativePairs, only their factors traced and their
    // sum a loop at run time (code O(nu), not O(nu^2)); not while M^-1 is
    // traced, which needs the whole M (and which the loop's d tau terms
    // did not make faster: docs/performance.md).
    const bool compactPairs = !traceInverse && (forward ? !pairsUnrolled() : inversePairsCompact());
    // inverseDynamicsDerivatives' recursions as shared steps (codegen/steps.hpp).
    const bool steps = !forward && inverseSteps();
    ev.udotFromMassMatrix = traceInverse;
    ev.derivativePairs = compactPairs;
    ev.run(f.id, v);
    ev.udotFromMassMatrix = false;
    ev.derivativePairs = false;
    ev.forceDerivatives = nullptr;
    FunctionBuilder fn = function(f);
    const std::vector<std::string> results =
        forward ? std::vector<std::string>{"dudot_dq", "dudot_du", "dudot_dtau"}
                : std::vector<std::string>{"dtau_dq", "dtau_du", "M"};
    resizeResults(fn, results);
    PairTables loop;  // what the pairs' loop, if any, emits
    const MatrixX<Expr>& dq = forward ? v.dr_dq : v.dtau_dq;
    const MatrixX<Expr>& du = forward ? v.dr_du : v.dtau_du;
    if (forward) {
      fn.local("U udot;");
      if (!layout_.forceLaws.empty()) fn.local("U tau;");
      jointFrameVelocityBlocks(fn, traceInverse ? ev.derivative : ev.joint);
      forceLawBlocks(fn, v.tau, "tau");
      forceElementBlocks(fn, v);
      if (traceInverse) {
        for (const JointLayout& j : layout_.joints) {
          if (j.nu() == 0) continue;
          fn.block(cite_.joint(j) + ": udot = M^-1 (tau - C), M from the composite inertias",
                   segmentOutputs("udot", v.udot, j.uIndex(), j.nu()));
        }
      } else {
        jointFrameAbaBlocks(fn, ev.joint);
      }
      // M's entries between branches and above the diagonal stay zero: the
      // factor reads the tree's lower triangle only.
      const std::string zero = massMatrixDynamic() ? " = MassMatrix::Zero(nu, nu);" : " = MassMatrix::Zero();";
      fn.local("MassMatrix dr_dq" + (hasZeros(dq) || massMatrixDynamic() ? zero : std::string(";")));
      fn.local("MassMatrix dr_du" + (hasZeros(du) || massMatrixDynamic() ? zero : std::string(";")));
      for (const char* m : {"dr_dq", "dr_du"}) fn.readAtEnd(m);
      if (!traceInverse) {
        fn.local("MassMatrix M" + zero);
        fn.readAtEnd("M");
        if (compactPairs) {
          columnBlocks(fn, "M", v.M, "M's armature (the rest in the pairs' loop)");
        } else {
          jointFrameMassMatrixBlocks(fn, ev.derivative, /*lowerOnly=*/true);
        }
      }
      const std::string rest = compactPairs ? " (what the pairs' loop does not add)" : "";
      columnBlocks(fn, "dr_dq", dq, "d(inverse dynamics - applied forces) / dq along N(q) at udot" + rest);
      columnBlocks(fn, "dr_du", du, "d(inverse dynamics - applied forces) / du at udot" + rest);
      if (compactPairs) loop = pairLoop(fn, &v.pairs, "$dr_dq", "$dr_du", "$M", /*lowerOnly=*/true);
      if (traceInverse) {
        // M^-1 traced (the recursions' L^T D L factor, then ltdlInverse).
        fn.readAtEnd("dudot_dtau");
        columnBlocks(fn, "dudot_dtau", v.dudot_dtau, "d udot / d tau = M^-1 (L^T D L factor, then ltdlInverse)");
        fn.closing("// At run time, the products dudot_dq = -M^-1 dr_dq and dudot_du = -M^-1 dr_du.");
        for (const std::string& line : negatedProducts()) fn.closing(line);
      } else {
        for (const std::string& line : massInverseLoops(loop, /*lowerOnly=*/true)) {
          if (!line.empty()) fn.closing(line);
        }
      }
    } else if (steps) {
      return derivativeSteps(f, fn, v, ev);
    } else if (compactPairs) {
      forceElementBlocks(fn, v);
      fn.opening("dtau_dq.setZero();  // then what the pairs' loop does not add, then the loop");
      fn.opening("dtau_du.setZero();");
      fn.opening("M.setZero();");
      columnBlocks(fn, "M", v.M, "M's armature (the rest in the pairs' loop)");
      columnBlocks(fn, "dtau_dq", dq, "d tau / dq along N(q) (what the pairs' loop does not add)");
      columnBlocks(fn, "dtau_du", du, "d tau / du (what the pairs' loop does not add)");
      loop = pairLoop(fn, &v.pairs, "dtau_dq", "dtau_du", "M", /*lowerOnly=*/false);
    } else {
      forceElementBlocks(fn, v);
      if (hasZeros(dq) || hasZeros(du)) {
        fn.opening("dtau_dq.setZero();  // entries that are the constant zero (dofs on different branches)");
        fn.opening("dtau_du.setZero();");
      }
      if (jointFrameMassMatrixBlocks(fn, ev.derivative)) {
        fn.opening("M.setZero();  // entries between different branches of the tree stay zero");
      }
      columnBlocks(fn, "dtau_dq", dq, "d tau / dq along N(q)");
      columnBlocks(fn, "dtau_du", du, "d tau / du");
    }
    std::vector<std::string> doc = f.doc;
    const std::string pairs = compactPairs ? "; then the pairs' terms in a loop" : "";
    doc.push_back("Traced: " + brief(fn.ops()) +
                  (!forward        ? pairs + "."
                   : traceInverse ? " (udot and M^-1 too); then two products."
                                  : pairs + "; then the factor and solves in loops."));
    fn.set("doc", doc);
    json method = {{"chosen", "analytic"}, {"pairs", compactPairs ? "loop" : "unrolled"}, {"traced", opsJson(fn.ops())}};
    if (compactPairs) method["pairLoop"] = loop.form();
    fn.set("method", method);
    return fn.finish();
  }

  // inverseDynamicsDerivatives as shared steps: M's armature traced, the
  // steps' calls (the pair factors and each joint's own block of dtau_dq),
  // then the pairs' loop. `v`, `ev`: the compact trace's (its Data's
  // parameter stage as the Derived cache holds it).
  json derivativeSteps(const GeneratedFunction& f, FunctionBuilder& fn, const FunctionValues<Expr>& v,
                       FunctionEvaluator<Expr>& ev) {
    const SharedSteps shared = sharedDerivativeSteps(
        mechanism_, ev.derivative, layout_, [this](const JointLayout& j) { return cite_.joint(j); }, f.key(),
        /*transposedFactors=*/pairsByBlocks());
    // On a chain every entry of the results is one pair's, so where nothing
    // is written before the loop (no joint's own block, no armature) the
    // loop by columns stores them and nothing is zeroed.
    const bool assign = pairsStoreAll(shared.ownBlocks, v.M);
    if (assign) {
      fn.opening("// every entry of dtau_dq, dtau_du and M is one pair's: the pairs' loop stores them");
    } else {
      fn.opening("dtau_dq.setZero();  // then each joint's own block (the steps), then the pairs' loop");
      fn.opening("dtau_du.setZero();");
      fn.opening("M.setZero();");
      columnBlocks(fn, "M", v.M, "M's armature (the rest in the pairs' loop)");
    }
    json declared = json::array();
    const PairTables pairs =
        pairLoop(fn, nullptr, "dtau_dq", "dtau_du", "M", /*lowerOnly=*/false, &declared, assign, {}, nullptr,
                 shared.pairRows);
    symbolic::OpCount ops = shared.ops;
    ops += fn.ops();
    std::vector<std::string> doc = f.doc;
    doc.push_back("Emitted as " + std::to_string(shared.blocks.size()) + " calls of " +
                  std::to_string(shared.kernels.size()) + " shared steps, each kind of body's step once (" +
                  brief(ops) + " in all); then the pairs' terms in a loop.");
    fn.set("doc", doc);
    fn.set("method", {{"chosen", "analytic"},
                      {"pairs", "loop"},
                      {"pairLoop", pairs.form()},
                      {"steps", {{"kernels", shared.kernels.size()}, {"calls", shared.blocks.size()},
                                 {"emitted", opsJson(shared.ops)}}},
                      {"traced", opsJson(ops)}});
    fn.requireSinCosTable(shared.sinCosTable);
    json j = fn.finish();
    for (const json& b : shared.blocks) j["blocks"].push_back(b);
    for (const std::string& line : shared.prologue) declared.push_back(line);
    for (const json& line : j["prologue"]) declared.push_back(line);
    j["prologue"] = declared;
    j["kernels"] = shared.kernels;
    j["parameter_sites"] = shared.parameterSites;
    j["operations"] = operationsText(ops);
    return j;
  }

  // forwardDynamicsDerivatives where M^-1 runs in loops: composed from the
  // class's own functions. udot from forwardDynamics; d tau / dq, d tau /
  // du and M from inverseDynamicsDerivatives at that udot, which
  // differentiates the force elements' forces itself; the residual's dr/dx
  // is that less the force laws' d tau / dx, the only part traced here
  // (symbolically, as in the traced form). The traced form repeated
  // inverseDynamicsDerivatives' recursion with ABA beside it: a unit
  // calling both functions compiled it twice, and on the 50-link chain it
  // was no faster (docs/performance.md).
  // A chain (each dof's parent the dof before it: M dense) of
  // kMinGaussJordanSpeeds to kMaxGaussJordanSpeeds speeds, whose composed
  // forwardDynamicsDerivatives takes M^-1 by Gauss-Jordan.
  bool gaussJordanChain(const std::vector<int>& dofParent) const {
    const int nu = layout_.nu;
    if (nu < kMinGaussJordanSpeeds || nu > kMaxGaussJordanSpeeds) return false;
    for (int k = 0; k < nu; ++k)
      if (dofParent[static_cast<std::size_t>(k)] != k - 1) return false;
    return true;
  }

  enum class ComposedInverse { Traced, Loops, GaussJordan };
  json composedForwardDynamicsDerivatives(const GeneratedFunction& f, ComposedInverse inverse) {
    const bool tracedInverse = inverse == ComposedInverse::Traced;
    FunctionBuilder fn = function(f);
    resizeResults(fn, {"dudot_dq", "dudot_du", "dudot_dtau"});
    fn.local("U udot;");
    fn.readAtEnd("udot");
    for (const char* m : {"dr_dq", "dr_du", "M"}) {
      fn.local(std::string("MassMatrix ") + m + ";  // inverseDynamicsDerivatives sets every entry");
      fn.readAtEnd(m);
    }
    std::vector<std::pair<int, int>> lawEntries;  // (row, column) of each
    const std::vector<std::string> laws = forceLawDerivatives(fn, lawEntries);
    fn.closing("// udot, then inverse dynamics' derivatives there: d tau / dx and M.");
    fn.closing("forwardDynamics(time, q, u, $udot);");
    fn.closing("inverseDynamicsDerivatives(time, q, u, $udot, $dr_dq, $dr_du, $M);");
    for (const std::string& line : laws) fn.closing(line);
    const bool sparseProducts = inverse == ComposedInverse::Loops && treeSparseProducts(lawEntries);
    json kernel;
    if (tracedInverse) {
      kernel = massInverseKernel(f.key() + "Inverse");
      fn.closing("// M^-1 from M's factor, traced (" + kernel.at("operations").get<std::string>() + "), then the");
      fn.closing("// products dudot_dq = -M^-1 dr_dq and dudot_du = -M^-1 dr_du.");
      fn.closing(kernel.at("name").get<std::string>() + "($M.data(), dudot_dtau.data());");
      for (const std::string& line : negatedProducts()) fn.closing(line);
    } else if (inverse == ComposedInverse::GaussJordan) {
      for (const std::string& line : massInverseGaussJordan()) fn.closing(line);
    } else {
      for (const std::string& line : massInverseLoops(PairTables{}, /*lowerOnly=*/false, sparseProducts)) {
        if (!line.empty()) fn.closing(line);
      }
    }
    std::vector<std::string> doc = f.doc;
    doc.push_back("Composed: forwardDynamics' udot, inverseDynamicsDerivatives there" +
                  std::string(laws.empty() ? "" : " less the force laws' traced derivatives") +
                  (inverse == ComposedInverse::GaussJordan ? ", then M^-1 by" : ", then M's factor and"));
    doc.push_back(tracedInverse ? "M^-1 traced (" + kernel.at("name").get<std::string>() + "), then two products."
                  : inverse == ComposedInverse::GaussJordan ? "Gauss-Jordan elimination, then two products."
                                                            : "M^-1 in loops and two products.");
    fn.set("doc", doc);
    fn.set("method", {{"chosen", "analytic"},
                      {"composed", true},
                      {"pairs", inversePairsCompact() ? "loop" : "unrolled"},
                      {"inverse", tracedInverse                              ? "traced"
                                  : inverse == ComposedInverse::GaussJordan ? "gauss-jordan"
                                                                            : "loops"},
                      {"products", sparseProducts ? "paths" : "whole"},
                      {"traced", opsJson(fn.ops())}});
    json j = fn.finish();
    if (tracedInverse) {
      kernel.erase("operations");
      j["kernels"] = json::array({kernel});
    }
    return j;
  }

  // forwardDynamicsDerivatives without forwardDynamics, where
  // inverseDynamicsDerivatives is shared steps (the runtime's
  // inverseDynamicsDerivativesAtForwardDynamics; steps.hpp's SharedSteps
  // bias and correction): its steps' calls with udot zero up to the
  // column steps (the kernels inverseDynamicsDerivatives emits), C = S^T f
  // from the backward steps' arrays, M from the pairs' loop, M^-1 (as
  // `inverse`), udot = M^-1 (tau - C), the accelerations and forces the
  // column steps read moved to that udot, the column steps, the rest of
  // the pairs' loop, the force laws' derivatives subtracted, the products.
  // ABA's work is saved: M^-1, which the derivatives need, gives udot.
  json fusedForwardDynamicsDerivatives(const GeneratedFunction& f, ComposedInverse inverse,
                                       FunctionEvaluator<Expr>& ev) {
    const bool tracedInverse = inverse == ComposedInverse::Traced;
    // The steps as inverseDynamicsDerivatives traces them (analyticDerivatives).
    const GeneratedFunction& inverseDynamics = generatedFunction(FunctionId::InverseDynamicsDerivatives);
    FunctionValues<Expr> v = arguments();
    ev.forceDerivatives = [this](const FunctionValues<Expr>&, const VectorX<Expr>& tau,
                                 const std::vector<Vec6<Expr>>& fext) { return forceDerivatives(tau, fext); };
    ev.derivativePairs = true;
    ev.run(inverseDynamics.id, v);
    ev.derivativePairs = false;
    ev.forceDerivatives = nullptr;
    const SharedSteps shared = sharedDerivativeSteps(
        mechanism_, ev.derivative, layout_, [this](const JointLayout& j) { return cite_.joint(j); },
        inverseDynamics.key(), /*transposedFactors=*/pairsByBlocks());
    fusedKernels_ = shared.kernels;

    FunctionBuilder fn = function(f);
    resizeResults(fn, {"dudot_dq", "dudot_du", "dudot_dtau"});
    fn.local("U udot = U::Zero();  // zero for the steps before the column steps, then forward dynamics'");
    fn.local("U C;  // Newton-Euler's S^T f at udot = 0: the bias");
    for (const char* m : {"udot", "C"}) fn.readAtEnd(m);
    const bool laws = !layout_.forceLaws.empty();
    if (laws) {
      fn.local("U tau = U::Zero();  // the force laws' generalized forces");
      fn.readAtEnd("tau");
      env_->setState(v.time, v.q, v.u);
      forceLawBlocks(fn, env_->appliedForces(), "tau");
    }
    std::vector<std::pair<int, int>> lawEntries;
    std::vector<std::string> lawLines = forceLawDerivatives(fn, lawEntries);
    // As inverseDynamicsDerivatives (derivativeSteps): on a chain with no
    // joint's own block and no armature, the pairs' loops store every entry;
    // else they add to zeros, M's armature, each joint's own block.
    const bool assign = pairsStoreAll(shared.ownBlocks, v.M);
    for (const char* m : {"dr_dq", "dr_du", "M"}) {
      fn.local(std::string("MassMatrix ") + m + (assign ? ";  // the pairs' loops set every entry" : " = MassMatrix::Zero();"));
      fn.readAtEnd(m);
    }
    if (!assign) columnBlocks(fn, "M", v.M, "M's armature (the rest in the pairs' loop)");
    json declared = json::array();
    std::vector<std::string> middle;  // M, M^-1 and udot, between the backward and the column steps
    const PairTables tables = pairLoop(fn, nullptr, "dr_dq", "dr_du", "M", /*lowerOnly=*/false, &declared,
                                       assign, PairParts{true, false, true}, &middle, shared.pairRows);
    const std::size_t massLinesEnd = middle.size();
    json unused = json::array();
    pairLoop(fn, nullptr, "dr_dq", "dr_du", "M", /*lowerOnly=*/false, &unused, assign,
             PairParts{false, true, false}, nullptr, shared.pairRows);
    for (const std::string& line : lawLines) fn.closing(line);
    const bool sparseProducts = inverse == ComposedInverse::Loops && treeSparseProducts(lawEntries);
    json kernel;
    std::vector<std::string> products;
    if (tracedInverse) {
      kernel = massInverseKernel(f.key() + "Inverse");
      middle.push_back("// M^-1 from M's factor, traced (" + kernel.at("operations").get<std::string>() + ").");
      middle.push_back(kernel.at("name").get<std::string>() + "($M.data(), dudot_dtau.data());");
      products = negatedProducts();
    } else if (inverse == ComposedInverse::GaussJordan) {
      for (std::string& line : massInverseGaussJordan(/*products=*/false)) middle.push_back(std::move(line));
      products = negatedProducts(/*paddedInverse=*/layout_.nu < kMinEigenProductSpeeds);
    } else {
      for (std::string& line : massInverseLoops(tables, /*lowerOnly=*/false, sparseProducts, /*products=*/false))
        if (!line.empty()) middle.push_back(std::move(line));
      products = loopProducts(sparseProducts);
    }
    // udot, refined once: the product with the explicit inverse is not
    // backward stable, and its error grows with M's condition number
    // (1e-11 on codegen.steps' 36-dof chain of every joint type, where
    // ABA's udot is good to 1e-15 and the test asks 1e-12); one step of
    // refinement with the residual against M (2 nu^2 multiply-adds; one
    // step in the same precision makes a solve componentwise backward
    // stable, Skeel 1980) passes it. The loops factor M in place: a copy
    // of M first.
    const bool copy = inverse == ComposedInverse::Loops;
    if (copy)
      middle.insert(middle.begin() + static_cast<std::ptrdiff_t>(massLinesEnd),
                    "const MassMatrix Mcopy = $M;  // M, for udot's residual (the loops factor M in place)");
    for (const std::string& line : std::vector<std::string>{
             "// udot = M^-1 (tau - C), refined once: udot += M^-1 (tau - C - M udot).",
             std::string("U rhs = ") + (laws ? "$tau - $C;" : "-$C;"),
             "$udot.noalias() = dudot_dtau * rhs;",
             std::string("rhs.noalias() -= ") + (copy ? "Mcopy" : "$M") + " * $udot;",
             "$udot.noalias() += dudot_dtau * rhs;"})
      middle.push_back(line);
    for (const std::string& line : products) fn.closing(line);
    fn.requireSinCosTable(shared.sinCosTable);
    symbolic::OpCount ops = shared.ops;
    ops += fn.ops();
    ops += shared.biasOps;
    ops += shared.correctionOps;
    std::vector<std::string> doc = f.doc;
    doc.push_back("inverseDynamicsDerivatives' " + std::to_string(shared.blocks.size()) +
                  " calls of shared steps, the ones before the column steps at udot = 0 (" + brief(ops) +
                  " in all);");
    doc.push_back(std::string("M, then M^-1 ") +
                  (tracedInverse                               ? "traced"
                   : inverse == ComposedInverse::GaussJordan ? "by Gauss-Jordan elimination"
                                                             : "in loops") +
                  ", gives udot = M^-1 (tau - C) (no forwardDynamics call); the column steps at that udot,");
    doc.push_back("the pairs' terms" + std::string(laws ? ", the force laws' traced derivatives" : "") +
                  " and two products.");
    fn.set("doc", doc);
    fn.set("method", {{"chosen", "analytic"},
                      {"composed", true},
                      {"udot", "fused"},
                      {"pairs", "loop"},
                      {"pairLoop", tables.form()},
                      {"inverse", tracedInverse                              ? "traced"
                                  : inverse == ComposedInverse::GaussJordan ? "gauss-jordan"
                                                                            : "loops"},
                      {"products", sparseProducts ? "paths" : "whole"},
                      {"traced", opsJson(ops)}});
    json j = fn.finish();
    // The blocks: the function's own (the force laws'), the steps up to the
    // column steps, C, M, M^-1 and udot, the correction, the column steps.
    static const std::regex localMarker(R"(\$(\w+))");
    std::string code;
    for (const std::string& line : middle)
      if (!line.empty()) code += "    " + std::regex_replace(line, localMarker, "$1") + "\n";
    json blocks = j["blocks"];
    for (std::size_t b = 0; b <= shared.blocks.size(); ++b) {
      if (b == shared.columnsAt) {
        blocks.push_back({{"comment", "the bias C = S^T f at udot = 0, from the backward steps' arrays"},
                          {"code", shared.bias}});
        blocks.push_back({{"comment", "M, M^-1 and forward dynamics' udot"}, {"code", code}});
        blocks.push_back({{"comment",
                           "the accelerations and forces the column steps read, at udot: da = da_parent + S udot, "
                           "df = Y da + the children's"},
                          {"code", shared.correction}});
      }
      if (b == shared.blocks.size()) break;
      // The column steps write each joint's own block into the residual's.
      json block = shared.blocks[b];
      std::string call = block["code"];
      if (const std::size_t at = call.find("dtau_dq.data()"); at != std::string::npos) call.replace(at, 7, "dr_dq");
      block["code"] = call;
      blocks.push_back(block);
    }
    j["blocks"] = blocks;
    for (const std::string& line : shared.prologue) declared.push_back(line);
    for (const json& line : j["prologue"]) declared.push_back(line);
    j["prologue"] = declared;
    j["operations"] = operationsText(ops);
    if (tracedInverse) {
      kernel.erase("operations");
      j["kernels"] = json::array({kernel});
    }
    return j;
  }

  // The force laws' derivatives for forwardDynamicsDerivatives' residual:
  // their nonzero entries traced into the local dlaws (blocks of `fn`),
  // and the closing statements that subtract them from $dr_dq and $dr_du
  // entry by entry (a force law reaches a few dofs; no nu x nu
  // temporaries); `lawEntries` gets each one's (row, column).
  std::vector<std::string> forceLawDerivatives(FunctionBuilder& fn, std::vector<std::pair<int, int>>& lawEntries) {
    std::vector<std::string> laws;
    if (!layout_.forceLaws.empty()) {
      const FunctionValues<Expr> v = arguments();
      env_->setState(v.time, v.q, v.u);
      const ForceDerivatives<Expr> d = forceDerivatives(env_->appliedForces(), {});
      for (const auto& [dr, value, along] : {std::tuple{"dr_dq", &d.dtau_dq, "q along N(q)"},
                                             std::tuple{"dr_du", &d.dtau_du, "u"}}) {
        for (const JointLayout& j : layout_.joints) {
          std::vector<Assignment> out;
          for (int c = j.uIndex(); c < j.uIndex() + j.nu(); ++c) {
            for (int row = 0; row < value->rows(); ++row) {
              if ((*value)(row, c).isZero()) continue;
              const std::string entry = "dlaws[" + std::to_string(laws.size()) + "]";
              out.push_back({entry, (*value)(row, c)});
              lawEntries.emplace_back(row, c);
              laws.push_back("$" + std::string(dr) + ".coeffRef(" + std::to_string(row) + ", " + std::to_string(c) +
                             ") -= $" + entry + ";");
            }
          }
          fn.block(cite_.joint(j) + ": d(force laws' tau) / d" + along + ", its columns", out);
        }
      }
      if (!laws.empty()) {
        fn.local("Eigen::Matrix<double, " + std::to_string(laws.size()) +
                 ", 1> dlaws;  // the force laws' nonzero derivatives, subtracted below");
        fn.readAtEnd("dlaws");
        laws.insert(laws.begin(), "// The residual less the force laws' derivatives.");
      }
    }
    return laws;
  }

  // M^-1 of a mass matrix of this model's tree as straight-line code, a
  // kernel `name(M, Z)` of the composed forwardDynamicsDerivatives: M's
  // lower triangle read (column-major, nu x nu), ltdlFactor and
  // ltdlInverse traced on it (the tree's zeros folded), Z = M^-1 written
  // whole. For small trees, where the loops of massInverseLoops cost more
  // in their set-up than in their arithmetic (docs/performance.md,
  // "Steps below 20 dofs").
  json massInverseKernel(const std::string& name) const {
    const int n = layout_.nu;
    const std::vector<int> dofParent = Data<Expr>::dofParents(mechanism_);
    MatrixX<Expr> A(n, n), Z(n, n);
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < n; ++r) A(r, c) = r >= c ? Expr::symbol(index("M", r + c * n)) : Expr(0.0);
    ltdlFactor(A, dofParent);
    ltdlInverse(A, dofParent, Z);
    std::vector<Assignment> out;
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < n; ++r) out.push_back({index("Z", r + c * n), Z(r, c)});
    symbolic::CppPrinter printer;
    const symbolic::CppPrinter::Block block = printer.block(out, "t", "    ");
    const std::string code = symbolic::scheduleStatements(block.code, [](std::string_view) { return false; });
    return {{"name", name},
            {"params", "const double* __restrict M, double* __restrict Z"},
            {"inline", false},
            {"doc", json::array({"Z = M^-1 (both nu x nu, column-major; M's lower triangle read) by the tree-sparse",
                                 "L^T D L factor and its inverse (capstan/dynamics.hpp's ltdlFactor and ltdlInverse),",
                                 "traced for this model's tree: " + brief(block.ops) + "."})},
            {"code", code},
            {"operations", brief(block.ops)}};
  }

  // TraceOptions::dependencies: the symbols of q, u and time that the
  // traced qdot, udot, outputs and energies reach.
  ir::Dependencies dependencies(FunctionEvaluator<Expr>& ev) {
    std::vector<Expr> symbols(q_.data(), q_.data() + q_.size());
    symbols.insert(symbols.end(), u_.data(), u_.data() + u_.size());
    symbols.push_back(Expr::symbol("time"));
    const int n = layout_.nq + layout_.nu;
    auto of = [&](const std::vector<Expr>& roots) {
      std::vector<ir::Dependency> out;
      for (std::vector<int>& reached : symbolic::symbolDependencies(roots, symbols)) {
        ir::Dependency d;
        d.time = !reached.empty() && reached.back() == n;
        if (d.time) reached.pop_back();
        d.states = std::move(reached);
        out.push_back(std::move(d));
      }
      return out;
    };
    // Each from fresh arguments: a run may overwrite them (the potential
    // energy's sets u = 0). Without the parameter hoisting, which would
    // record these runs' values for the Derived struct: the header stays
    // the one `capstan compile` writes.
    auto run = [&](FunctionId id) {
      FunctionValues<Expr> v = arguments();
      const auto prepare = std::exchange(ev.prepare, nullptr);
      ev.run(id, v);
      ev.prepare = prepare;
      return v;
    };
    auto list = [](const VectorX<Expr>& x) { return std::vector<Expr>(x.data(), x.data() + x.size()); };
    ir::Dependencies d;
    d.qdot = of(list(run(FunctionId::Qdot).qdot));
    d.outputs = of(run(FunctionId::Outputs).outputs);
    d.kinetic_energy = of({run(FunctionId::KineticEnergy).energy}).at(0);
    if (layout_.cables.empty()) {
      d.potential_energy = of({run(FunctionId::PotentialEnergy).energy}).at(0);
      if (layout_.constraintRows == 0) d.udot = of(list(run(FunctionId::ForwardDynamics).udot));
    }
    return d;
  }

  // outputDerivatives: the traced outputs and energies differentiated by
  // the symbols q[i] and u[j], a block per row (its model element); the
  // entries that are the constant zero are zeroed once. Each row is one
  // reverse sweep (symbolic::gradient): a few rows of many columns, where
  // differentiating by each coordinate in turn made the 50-link chain's
  // kinetic energy row alone 136 k lines (its energy depends on each angle
  // through every body below it).
  json outputDerivatives(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    using Matrix = Eigen::Matrix<Expr, Eigen::Dynamic, Eigen::Dynamic>;
    FunctionValues<Expr> v = arguments();
    ev.run(f.id, v);
    const auto rows = static_cast<Eigen::Index>(v.columns.size());
    Matrix dq(rows, q_.size()), du(rows, u_.size());
    std::vector<Expr> variables(q_.data(), q_.data() + q_.size());
    variables.insert(variables.end(), u_.data(), u_.data() + u_.size());
    try {
      for (Eigen::Index r = 0; r < rows; ++r) {
        const std::vector<Expr> g = symbolic::gradient(v.columns[static_cast<std::size_t>(r)], variables);
        for (Eigen::Index c = 0; c < dq.cols(); ++c) dq(r, c) = g[static_cast<std::size_t>(c)];
        for (Eigen::Index c = 0; c < du.cols(); ++c) du(r, c) = g[static_cast<std::size_t>(dq.cols() + c)];
      }
    } catch (const std::invalid_argument& e) {
      throw UnsupportedExpression(std::string("the derivative of an external C++ function (") + e.what() + ")");
    }
    // With cables, their rows (each cable's length, length rate and
    // tension, the column table's order) come between the outputs and the
    // energies; the template's outputDerivatives fills them.
    const auto nout = static_cast<int>(layout_.outputs.size());
    const auto cableRows = static_cast<int>(3 * layout_.cables.size());
    auto withCableRows = [&](const Matrix& m) {
      Matrix out = Matrix::Constant(m.rows() + cableRows, m.cols(), Expr(0.0));
      out.topRows(nout) = m.topRows(nout);
      out.bottomRows(m.rows() - nout) = m.bottomRows(m.rows() - nout);
      return out;
    };
    if (cableRows > 0) {
      dq = withCableRows(dq);
      du = withCableRows(du);
    }
    FunctionBuilder fn = function(f);
    bool zeros = cableRows > 0;
    for (int r = 0; r < dq.rows(); ++r) {
      if (r >= nout && r < nout + cableRows) continue;
      std::vector<Assignment> out;
      zeros = nonzeroEntries("dy_dq", dq, r, 1, 0, static_cast<int>(dq.cols()), out) || zeros;
      zeros = nonzeroEntries("dy_du", du, r, 1, 0, static_cast<int>(du.cols()), out) || zeros;
      std::string what = r == dq.rows() - 2 ? "kinetic energy" : "potential energy";
      if (r < nout) {
        const IoVariable& o = layout_.outputs.at(static_cast<std::size_t>(r));
        const sema::FlatVariable& fv = model_.variables.at(static_cast<std::size_t>(o.variable));
        what = cite_.where("output", o.name, fv.range);
      }
      fn.block(what + ": its derivatives", out);
    }
    if (zeros) {
      fn.opening("dy_dq.setZero();  // the entries that do not depend on their coordinate");
      fn.opening("dy_du.setZero();");
    }
    return fn.finish();
  }

  // cableFrameDerivatives: the traced cable frames' w_WF and v_WF and the
  // actuators' tensions differentiated symbolically, by q along N(q) and by
  // u; a block per obstacle and per actuator. The rows go cable by cable:
  // its obstacles' six, then its actuators'.
  json cableFrameDerivatives(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    FunctionValues<Expr> v = arguments();
    ev.run(f.id, v);
    std::vector<Expr> rows;
    for (const CableLayout& c : layout_.cables) {
      for (std::size_t i = 0; i < c.obstacles.size(); ++i) {
        const FrameMotion<Expr>& m = v.cableFrames.at(static_cast<std::size_t>(c.firstFrame) + i);
        for (const Vec3<Expr>& x : {m.w_WF, m.v_WF})
          for (int r = 0; r < 3; ++r) rows.push_back(x[r]);
      }
      for (std::size_t a = 0; a < c.actuators.size(); ++a)
        rows.push_back(v.cableTensions.at(static_cast<std::size_t>(c.firstActuator) + a));
    }
    MatrixX<Expr> dq, du;
    try {
      dq = sparseProduct(symbolic::jacobian(rows, std::vector<Expr>(q_.data(), q_.data() + q_.size())),
                         nMatrix(mechanism_, q_));
      du = symbolic::jacobian(rows, std::vector<Expr>(u_.data(), u_.data() + u_.size()));
    } catch (const std::invalid_argument& e) {
      throw UnsupportedExpression(std::string("the derivative of an external C++ function (") + e.what() + ")");
    }
    FunctionBuilder fn = function(f);
    bool zeros = false;
    const int nu = layout_.nu;
    int row = 0;
    auto block = [&](const std::string& what, int count) {
      std::vector<Assignment> out;
      zeros = nonzeroEntries("d.dq", dq, row, count, 0, nu, out) || zeros;
      zeros = nonzeroEntries("d.du", du, row, count, 0, nu, out) || zeros;
      fn.block(what, out);
      row += count;
    };
    for (const CableLayout& c : layout_.cables) {
      for (std::size_t i = 0; i < c.obstacles.size(); ++i)
        block(cite_.where("cable", c.component) + ": obstacle " + std::to_string(i) + " `" + c.obstacles[i].name +
                  "`, its frame's velocities' derivatives",
              6);
      for (const CableLayout::Actuator& a : c.actuators)
        block(cite_.where("cable actuator", a.component) + ": its tension's derivatives", 1);
    }
    if (zeros) {
      fn.opening("d.dq.setZero();  // the entries that do not depend on their coordinate");
      fn.opening("d.du.setZero();");
    }
    return fn.finish();
  }

  // The test oracle (TraceOptions::symbolicDerivatives): d udot / d(q, u,
  // tau), traced two ways and the cheaper emitted (as
  // printed, like forwardDynamics):
  // - "direct": symbolic differentiation of the traced forward dynamics (ABA
  //   in joint frames) by q, u and an extra generalized force dtau;
  // - "inverse dynamics": the same d udot / d tau = M^-1, and d udot / dx =
  //   -M^-1 dr/dx for x = q, u, where r(q, u, udot) = inverseDynamics -
  //   appliedForces = 0 is differentiated at fixed udot (udot symbols, then
  //   replaced by ABA's udot): Newton-Euler's derivatives hold no
  //   articulated inertias, at the price of two dense nu x nu products.
  // Both start with the blocks of udot, whose locals the derivatives read,
  // then one block per joint and matrix with that joint's columns.
  // When the inverse-dynamics way is the cheaper and M is fixed-size, its
  // dense part (M^-1 and the two products, about 2 nu^3 of the operations:
  // a third of chain20's) is left to Eigen at run time: the traced code
  // stores M (the composite-rigid-body blocks) and dr/dq, dr/du, and the
  // function ends with a Cholesky factorization, M^-1 and the products.
  // Run time is about the same (the same dense work, in loops); g++'s time
  // and memory, which grow with the straight-line code, shrink.
  // dudot_dq = (d udot / d q) N(q), N(q) = d qdot / d u (nMatrix), so
  // column j is the derivative along q + eps N(q) e_j; udot is linear in
  // dtau, so its derivative holds no dtau.
  json symbolicForwardDynamicsDerivatives(const GeneratedFunction& f, FunctionEvaluator<Expr>& ev) {
    using Matrix = Eigen::Matrix<Expr, Eigen::Dynamic, Eigen::Dynamic>;
    const int nu = layout_.nu;
    auto list = [](const VectorX<Expr>& x) { return std::vector<Expr>(x.data(), x.data() + x.size()); };
    const DynamicsMethod method{.aba = true, .jointFrames = true, .analyticDerivatives = false};
    FunctionValues<Expr> v = arguments();
    ev.run(f.id, v, method);
    const local::Data<Expr> aba = ev.joint;
    const std::vector<Expr> udot = list(v.udot);

    FunctionValues<Expr> w = arguments();
    VectorX<Expr> dtau(nu);
    for (int i = 0; i < nu; ++i) dtau[i] = Expr::symbol(index("dtau", i));
    w.dtau = dtau;
    ev.run(f.id, w, method);

    // The inverse-dynamics residual r(q, u, udot) with udot as symbols.
    FunctionValues<Expr> id = arguments();
    ev.run(FunctionId::InverseDynamics, id);
    FunctionValues<Expr> applied = arguments();
    ev.run(FunctionId::AppliedForces, applied);
    const VectorX<Expr> r = id.tau - applied.tau;
    std::unordered_map<std::uint32_t, Expr> udotValues;
    for (int i = 0; i < nu; ++i) udotValues.emplace(id.udot[i].id(), udot[static_cast<std::size_t>(i)]);
    // M in joint frames (composite rigid body), for the dense part at run time.
    FunctionValues<Expr> mass = arguments();
    ev.run(FunctionId::MassMatrix, mass);
    const local::Data<Expr> crba = ev.joint;

    const Matrix N = nMatrix(mechanism_, q_);  // (nq x nu)
    // A * B, skipping the structural zeros.
    auto product = [](const Matrix& A, const Matrix& B) {
      Matrix C = Matrix::Constant(A.rows(), B.cols(), Expr(0.0));
      for (int i = 0; i < A.rows(); ++i)
        for (int j = 0; j < B.cols(); ++j)
          for (int k = 0; k < A.cols(); ++k)
            if (!A(i, k).isZero() && !B(k, j).isZero()) C(i, j) = C(i, j) + A(i, k) * B(k, j);
      return C;
    };
    Matrix dt, dqDirect, duDirect, drdq, drdu, dqInverse, duInverse;
    try {
      dt = symbolic::jacobian(list(w.udot), list(dtau));
      dqDirect = product(symbolic::jacobian(udot, list(q_)), N);
      duDirect = symbolic::jacobian(udot, list(u_));
      const std::vector<Expr> residual = list(r);
      drdq = product(symbolic::jacobian(residual, list(q_)), N);
      drdu = symbolic::jacobian(residual, list(u_));
      for (Matrix* m : {&drdq, &drdu}) {
        std::vector<Expr> entries(m->data(), m->data() + m->size());
        entries = symbolic::substitute(entries, udotValues);
        for (int k = 0; k < m->size(); ++k) m->data()[k] = entries[static_cast<std::size_t>(k)];
      }
      dqInverse = product(dt, Matrix(-drdq));
      duInverse = product(dt, Matrix(-drdu));
    } catch (const std::invalid_argument& e) {
      // An opaque call (an external C++ function) of q or u.
      throw UnsupportedExpression(std::string("the derivative of an external C++ function (") + e.what() + ")");
    }

    // The blocks of udot (ABA), which the derivatives read.
    auto start = [&]() {
      FunctionBuilder fn = function(f);
      if (massMatrixDynamic()) {
        for (const char* m : {"dudot_dq", "dudot_du", "dudot_dtau"})
          fn.opening(std::string(m) + ".resize(nu, nu);  // dynamic size: allocates only if not nu x nu yet");
      }
      fn.local("U udot;");
      if (!layout_.forceLaws.empty()) fn.local("U tau;");
      jointFrameVelocityBlocks(fn, aba);
      forceLawBlocks(fn, v.tau, "tau");
      forceElementBlocks(fn, v);
      jointFrameAbaBlocks(fn, aba);
      return fn;
    };
    // One block per joint with its columns of `m`, stored into `name`.
    auto columns = [&](FunctionBuilder& fn, const char* name, const Matrix& m, const char* what) {
      for (const JointLayout& j : layout_.joints) {
        std::vector<Assignment> out;
        for (int c = j.uIndex(); c < j.uIndex() + j.nu(); ++c)
          for (int row = 0; row < nu; ++row)
            if (!m(row, c).isZero()) out.push_back({index2(name, row, c), m(row, c)});
        if (!out.empty()) fn.block(cite_.joint(j) + ": " + what + ", its columns", out);
      }
    };
    auto hasZeros = [](const Matrix& m) {
      for (int i = 0; i < m.size(); ++i)
        if (m.data()[i].isZero()) return true;
      return false;
    };
    auto emit = [&](const Matrix& dq, const Matrix& du) {
      const Matrix& minv = dt;
      FunctionBuilder fn = start();
      if (hasZeros(dq) || hasZeros(du) || hasZeros(minv)) {
        fn.opening("dudot_dq.setZero();  // entries that are the constant zero");
        fn.opening("dudot_du.setZero();");
        fn.opening("dudot_dtau.setZero();");
      }
      columns(fn, "dudot_dtau", minv, "d udot / d tau = M^-1");
      columns(fn, "dudot_dq", dq, "d udot / d q along N(q)");
      columns(fn, "dudot_du", du, "d udot / d u");
      return fn;
    };
    // The inverse-dynamics way with its dense part at run time.
    auto emitDenseAtRunTime = [&]() {
      FunctionBuilder fn = start();
      // Entries between branches of the tree and above the diagonal stay
      // zero: LLT reads only the lower triangle (and copies M whole).
      fn.local("MassMatrix M = MassMatrix::Zero();");
      fn.local(std::string("MassMatrix dr_dq") + (hasZeros(drdq) ? " = MassMatrix::Zero();" : ";"));
      fn.local(std::string("MassMatrix dr_du") + (hasZeros(drdu) ? " = MassMatrix::Zero();" : ";"));
      for (const char* m : {"M", "dr_dq", "dr_du"}) fn.readAtEnd(m);
      jointFrameMassMatrixBlocks(fn, crba, /*lowerOnly=*/true);
      columns(fn, "dr_dq", drdq, "d(inverse dynamics - applied forces) / d q along N(q) at udot");
      columns(fn, "dr_du", drdu, "d(inverse dynamics - applied forces) / d u at udot");
      fn.closing("// The dense part, by Eigen: M = L L^T from M's lower triangle (M is symmetric positive");
      fn.closing("// definite), M^-1,");
      fn.closing("// and d udot / dx = -M^-1 dr/dx at fixed udot.");
      fn.closing("const Eigen::LLT<MassMatrix> llt($M);");
      fn.closing("dudot_dtau = llt.solve(MassMatrix::Identity());");
      for (const std::string& line : negatedProducts()) fn.closing(line);
      fn.set("includes", json::array({"<Eigen/Cholesky>"}));
      return fn;
    };
    FunctionBuilder direct = emit(dqDirect, duDirect);
    FunctionBuilder inverse = emit(dqInverse, duInverse);
    const bool useInverse = weightedCost(inverse.ops()) < weightedCost(direct.ops());
    // Not for a dynamic-size M, whose factorization would allocate per call.
    const bool denseAtRunTime = useInverse && !massMatrixDynamic();
    std::optional<FunctionBuilder> dense;
    if (denseAtRunTime) dense.emplace(emitDenseAtRunTime());
    FunctionBuilder& fn = denseAtRunTime ? *dense : useInverse ? inverse : direct;
    std::vector<std::string> doc = f.doc;
    doc.push_back(std::string("Method: ") +
                  (useInverse ? "-M^-1 d(inverse dynamics - applied forces) at fixed udot"
                              : "ABA in joint frames differentiated") +
                  ", the cheaper of two as traced:");
    doc.push_back("  ABA in joint frames differentiated: " + brief(direct.ops()) + ";");
    doc.push_back("  -M^-1 d(inverse dynamics - applied forces): " + brief(inverse.ops()) + ".");
    if (denseAtRunTime) {
      doc.push_back("Its dense part (M^-1 and the products with it) runs in Eigen: traced, M and dr/dq, dr/du");
      doc.push_back("take " + brief(dense->ops()) + "; then about " + std::to_string(10 * nu * nu * nu / 3) +
                    " multiply-adds in loops (Cholesky nu^3/3, M^-1 nu^3, the products 2 nu^3).");
    }
    fn.set("doc", doc);
    json chosen = {{"chosen", useInverse ? "inverse_dynamics" : "direct"},
                   {"direct", opsJson(direct.ops())},
                   {"inverse_dynamics", opsJson(inverse.ops())},
                   {"dense_at_run_time", denseAtRunTime}};
    if (denseAtRunTime) chosen["traced_with_dense_at_run_time"] = opsJson(dense->ops());
    fn.set("method", chosen);
    return fn.finish();
  }

  const sema::FlatModel& model_;
  const mechanics::Mechanism& mech_;
  const ModelLayout& layout_;
  const Citations cite_;
  DerivedValues derived_{layout_, cite_};
  // The shared steps' kernels forwardDynamicsDerivatives calls without
  // emitting them (fusedForwardDynamicsDerivatives): inverseDynamicsDerivatives'
  // own, which must come out the same (checked when it is traced). Null: none.
  json fusedKernels_;
  std::vector<std::string> constraintKinematics_;  // ConstraintKinematics' fields (constraintFunctions)
  const TraceOptions& options_;
  const bool quadraticUnrolled_;  // decideQuadratic(), once
  const bool pairsUnrolled_;      // decidePairs(), once
  const bool recursionLoops_;     // decideRecursions(), once
  Mechanism<Expr> mechanism_;
  Environment<Expr>* env_ = nullptr;  // run()'s
  VectorX<Expr> q_, u_;
};

}  // namespace

ir::Model traceModel(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
                     const syntax::SourceManager& sources, const TraceOptions& options) {
  // Through an external call, a derivative where the function's derivative
  // annotation gives one: df = f_der(x, dx), itself an opaque call.
  const symbolic::CallDerivativeScope derivatives(
      [&model](const symbolic::Node* call, std::span<const Expr> dargs) -> std::optional<Expr> {
        for (const sema::FlatFunction& f : model.functions) {
          if (f.cppName != call->name || f.derivative < 0) continue;
          std::vector<Expr> args;
          for (std::uint32_t i = 0; i < call->size; ++i) args.emplace_back(call->args[i]);
          const sema::FlatFunction& g = model.functions.at(static_cast<std::size_t>(f.derivative));
          return symbolic::call(g.cppName, derivativeCallArgs<Expr>(model, f, args, dargs));
        }
        return std::nullopt;
      });
  return Tracer(model, mech, layout, sources, options).run();
}

}  // namespace capstan::codegen
