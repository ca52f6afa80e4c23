#include "codegen/steps.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "codegen/function_builder.hpp"
#include "symbolic/traverse.hpp"

namespace capstan::codegen {
namespace {

using json = nlohmann::json;
using symbolic::Assignment;
using symbolic::Expr;

// A kernel of fewer statements may be inlined at its calls (a velocity or
// acceleration step: about 100-300 bytes each, where a call's overhead
// would cost what sharing saves); larger ones are called (the
// articulated-inertia steps, 1.5-2 KB each). Chain20 (clang++ -O2
// -march=native, AMD EPYC, one program): every kernel called 1.17 us, the
// small ones inlined 1.06 us, the unrolled function 1.16 us; chain50 3.03
// and 2.85 us (docs/performance.md, "Shared steps").
constexpr std::size_t kInlineStatements = 40;

// What one step of one body passes on: per entry (in the step's order), a
// constant, or a slot of the body's array for that step.
struct Record {
  std::string array;               // `vel3`: empty when every entry is a constant
  std::vector<Expr> constant;      // by entry: the constant (unused where stored)
  std::vector<int> slot;           // by entry: the slot, or -1 for a constant
};

// What traces and emits steps, whatever the algorithm: the step's
// sources, parameters, the kernels found so far and the calls.
class StepTracer {
 public:
  StepTracer(const Mechanism<Expr>& mechanism, const ModelLayout& layout,
             const std::function<std::string(const JointLayout&)>& comment, std::string function)
      : mechanism_(mechanism), layout_(layout), comment_(comment), function_(std::move(function)) {
    children_.resize(layout_.joints.size());
    for (const JointLayout& j : layout_.joints)
      if (j.parent >= 0) children_.at(static_cast<std::size_t>(j.parent)).push_back(j.body);
    // The children in the order the runtime's backward passes add them (descending index).
    for (auto& c : children_) std::sort(c.rbegin(), c.rend());
  }

 protected:
  // One step being traced: its sources (A0, A1, ... in a fixed order) and
  // its parameters (P).
  struct Step {
    std::vector<const Record*> sources;
    bool named = false;  // sources' entries read as the function's arrays (`dfw3[12]`), not A0[12]
    std::vector<Expr> parameters;                     // this call's values of P's entries
    std::unordered_map<std::uint32_t, int> parameterOf;  // by value's node id
  };

  // What a step writes besides its record: `name[index]` for each entry,
  // the kernel's parameter `name` pointing at `arg`. `zeroed`: the
  // function set the destination to zero, so constant zeros are not stored.
  struct Output {
    std::string name, arg;
    std::vector<std::pair<int, Expr>> entries;
    bool zeroed = false;
  };

  static Expr symbol(const std::string& name) { return Expr::symbol(name); }

  // Entry `entry` of source `source` of the step: its constant, or A<source>[slot].
  static Expr input(const Step& step, std::size_t source, std::size_t entry) {
    const Record& r = *step.sources.at(source);
    if (r.slot.at(entry) < 0) return r.constant.at(entry);
    return symbol((step.named ? r.array : "A" + std::to_string(source)) + "[" + std::to_string(r.slot[entry]) + "]");
  }
  // A parameter-stage value of the body: itself if constant, else a P entry.
  static Expr parameter(Step& step, const Expr& value) {
    if (value.isConstant()) return value;
    const auto [it, fresh] = step.parameterOf.emplace(value.id(), static_cast<int>(step.parameters.size()));
    if (fresh) step.parameters.push_back(value);
    return symbol("P[" + std::to_string(it->second) + "]");
  }
  // The traced inertia `I` with its non-constant entries as P entries (I_P's
  // upper triangle, mirrored).
  static SpatialInertia<Expr> parameterInertia(Step& step, const SpatialInertia<Expr>& I) {
    SpatialInertia<Expr> Ig;
    Ig.mass = parameter(step, I.mass);
    for (int i = 0; i < 3; ++i) Ig.h[i] = parameter(step, I.h[i]);
    for (int r = 0; r < 3; ++r) {
      for (int c = r; c < 3; ++c) {
        Ig.I_P(r, c) = parameter(step, I.I_P(r, c));
        Ig.I_P(c, r) = Ig.I_P(r, c);
      }
    }
    return Ig;
  }
  // The traced X_PF with its non-constant entries as P entries.
  static Transform<Expr> parameterTransform(Step& step, const Transform<Expr>& X) {
    Transform<Expr> Xg;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) Xg.R(r, c) = parameter(step, X.R(r, c));
    for (int i = 0; i < 3; ++i) Xg.p[i] = parameter(step, X.p[i]);
    return Xg;
  }

  // The joint's q, u and udot entries as q[0], q[1], ..., u[0], ... and
  // udot[0], ... (the rest zero).
  struct Coordinates {
    VectorX<Expr> q, u, udot;
  };
  Coordinates coordinates(const JointLayout& j) const {
    Coordinates x{VectorX<Expr>::Constant(layout_.nq, Expr(0.0)), VectorX<Expr>::Constant(layout_.nu, Expr(0.0)),
                  VectorX<Expr>::Constant(layout_.nu, Expr(0.0))};
    for (int i = 0; i < j.nq(); ++i) x.q[j.qIndex() + i] = symbol("q[" + std::to_string(i) + "]");
    for (int i = 0; i < j.nu(); ++i) {
      x.u[j.uIndex() + i] = symbol("u[" + std::to_string(i) + "]");
      x.udot[j.uIndex() + i] = symbol("udot[" + std::to_string(i) + "]");
    }
    return x;
  }

  // A record's entries in a fixed order, collected from the generic
  // workspaces or read back into them as a step's inputs: one list of
  // fields serves both (velocityFields, forwardFields, ...).
  class Fields {
   public:
    Fields() = default;  // collects into `values`
    // Reads source `source`'s entries, from entry `first` on.
    Fields(const Step& step, std::size_t source, std::size_t first = 0)
        : step_(&step), source_(source), next_(first) {}
    void operator()(Expr& e) {
      if (step_ != nullptr) e = input(*step_, source_, next_++);
      else values.push_back(e);
    }
    template <class Matrix>
    void matrix(Matrix& m) {
      for (Eigen::Index c = 0; c < m.cols(); ++c)
        for (Eigen::Index r = 0; r < m.rows(); ++r) (*this)(m(r, c));
    }
    void inertia(SpatialInertia<Expr>& I) {
      (*this)(I.mass);
      matrix(I.h);
      for (int r = 0; r < 3; ++r) {
        for (int c = r; c < 3; ++c) {
          (*this)(I.I_P(r, c));
          I.I_P(c, r) = I.I_P(r, c);
        }
      }
    }
    std::vector<Expr> values;

   private:
    const Step* step_ = nullptr;
    std::size_t source_ = 0, next_ = 0;
  };

  // What reads P entries and constants only (a leaf's D^-1 from its
  // inertia, a product of lengths, the parameter-only terms of a sum or
  // factors of a product), each largest such subexpression, is a P entry
  // of its own, computed per call site when params change, as the unrolled
  // code's Derived cache would (derived.hpp). A constant, a P entry and a
  // constant times one stay (they cost a load or a multiply either way).
  static void hoistParameterOnly(Step& step, std::vector<Expr>& roots) {
    using symbolic::Kind;
    using symbolic::Node;
    std::unordered_map<std::uint32_t, bool> only;  // by node id: reads P entries and constants only
    const std::vector<const Node*> order = symbolic::postOrder(roots);
    for (const Node* n : order) {
      bool p = n->kind != Kind::Symbol || n->name.starts_with("P[");
      for (std::uint32_t i = 0; i < n->size && p; ++i) p = only.at(n->args[i]->id);
      only.emplace(n->id, p);
    }
    auto cheap = [](const Node* n) {
      return n->kind == Kind::Constant || n->kind == Kind::Symbol ||
             (n->isScaled() && n->args[0]->kind == Kind::Symbol);
    };
    const std::size_t given = step.parameters.size();
    std::vector<Expr> hoisted;                           // in P's order after the given entries
    std::unordered_map<std::uint32_t, Expr> entryOf;     // by hoisted expression's node id
    auto entry = [&](const Expr& e) {
      const auto [it, fresh] = entryOf.emplace(e.id(), Expr());
      if (fresh) {
        it->second = symbol("P[" + std::to_string(given + hoisted.size()) + "]");
        hoisted.push_back(e);
      }
      return it->second;
    };
    std::unordered_map<std::uint32_t, Expr> done;  // by node id: the node rewritten
    auto operand = [&](const Node* a) { return only.at(a->id) && !cheap(a) ? entry(Expr(a)) : done.at(a->id); };
    for (const Node* n : order) {
      if (only.at(n->id)) {
        done.emplace(n->id, Expr(n));
        continue;
      }
      const bool sum = n->kind == Kind::Add, product = n->kind == Kind::Mul;
      std::size_t grouped = 0;
      if (sum || product)
        for (std::uint32_t i = 0; i < n->size; ++i) grouped += only.at(n->args[i]->id);
      if (grouped >= 2 || (product && grouped == 1)) {
        // The group as one entry (a product's one factor too: its
        // exponent, a reciprocal, goes with it).
        Expr group = sum ? Expr(0.0) : Expr(1.0), rest = sum ? Expr(n->value) : Expr(1.0);
        for (std::uint32_t i = 0; i < n->size; ++i) {
          const Expr a(n->args[i]);
          const bool p = only.at(n->args[i]->id);
          const Expr term = sum ? n->coeffs[i] * (p ? a : done.at(a.id()))
                                : symbolic::pow(p ? a : done.at(a.id()), Expr(n->coeffs[i]));
          Expr& into = p ? group : rest;
          into = sum ? into + term : into * term;
        }
        const Expr e = cheap(group.node()) ? group : entry(group);
        done.emplace(n->id, sum ? rest + e : rest * e);
        continue;
      }
      std::vector<Expr> args;
      for (std::uint32_t i = 0; i < n->size; ++i) args.push_back(operand(n->args[i]));
      done.emplace(n->id, symbolic::rebuild(n, args));
    }
    for (Expr& r : roots) r = only.at(r.id()) && !cheap(r.node()) ? entry(r) : done.at(r.id());
    if (hoisted.empty()) return;
    // Their values at this call: the P entries replaced by theirs.
    std::unordered_map<std::uint32_t, Expr> actual;
    for (std::size_t k = 0; k < given; ++k) actual.emplace(symbol("P[" + std::to_string(k) + "]").id(), step.parameters[k]);
    for (const Expr& v : symbolic::substitute(hoisted, actual)) step.parameters.push_back(v);
  }

  // Prints a traced step as a kernel (or finds the kernel of its kind) and
  // calls it; `record` learns where its entries are.
  void emit(const JointLayout& j, const std::string& what, Step& step, const std::vector<Expr>& entries,
            const std::vector<Output>& outputs, Record& record, const std::string& prefix) {
    const auto b = static_cast<std::size_t>(j.body);
    // Any other symbol the step read (a parameter the runtime step takes
    // from the mechanism: armature, gravity) becomes a P entry too.
    std::vector<Expr> roots = entries;
    for (const Output& out : outputs)
      for (const auto& e : out.entries) roots.push_back(e.second);
    std::unordered_map<std::uint32_t, Expr> replaced;
    for (const symbolic::Node* n : symbolic::postOrder(roots)) {
      if (n->kind != symbolic::Kind::Symbol) continue;
      const std::string_view name = n->name;
      const bool generic = name.starts_with("P[") || name.starts_with("q[") || name.starts_with("u[") ||
                           name.starts_with("tau[") || name.starts_with("udot[") ||
                           (name.size() > 1 && name[0] == 'A' && name[1] >= '0' && name[1] <= '9');
      if (!generic) replaced.emplace(n->id, parameter(step, Expr(n)));
    }
    if (!replaced.empty()) roots = symbolic::substitute(roots, replaced);
    hoistParameterOnly(step, roots);
    // The stored entries and their slots.
    record.array = prefix + std::to_string(b + 1);
    record.constant.assign(entries.size(), Expr());
    record.slot.assign(entries.size(), -1);
    std::vector<Assignment> assignments;
    int slots = 0;
    for (std::size_t k = 0; k < entries.size(); ++k) {
      if (roots[k].isConstant()) {
        record.constant[k] = roots[k];
        continue;
      }
      record.slot[k] = slots;
      assignments.push_back({"o[" + std::to_string(slots++) + "]", roots[k]});
    }
    if (slots == 0) record.array.clear();
    std::vector<const Output*> written;  // the outputs this call stores into
    std::size_t root = entries.size();
    for (const Output& out : outputs) {
      bool any = false;
      for (const auto& entry : out.entries) {
        const Expr& v = roots[root++];
        if (out.zeroed && v.isZero()) continue;
        assignments.push_back({out.name + "[" + std::to_string(entry.first) + "]", v});
        any = true;
      }
      if (any) written.push_back(&out);
    }
    if (assignments.empty()) return;
    // Which pointers the code reads.
    std::set<std::string> used;
    std::vector<Expr> values;
    for (const Assignment& a : assignments) values.push_back(a.value);
    for (const symbolic::Node* n : symbolic::postOrder(values)) {
      if (n->kind != symbolic::Kind::Symbol) continue;
      used.insert(std::string(n->name.substr(0, n->name.find('['))));
    }
    std::vector<std::string> params, args;
    for (std::size_t s = 0; s < step.sources.size(); ++s) {
      const std::string name = "A" + std::to_string(s);
      if (!used.count(name)) continue;
      params.push_back("const double* __restrict " + name);
      args.push_back(step.sources[s]->array);
    }
    std::string site;
    if (used.count("P")) {
      params.push_back("const double* __restrict P");
      site = function_ + "Params" + std::to_string(out_.parameterSites.size() + 1);
      args.push_back("derived_." + site + ".data()");
    }
    auto pointer = [&](const char* name, int first) {
      if (!used.count(name)) return;
      params.push_back(std::string("const double* __restrict ") + name);
      args.push_back(std::string(name) + ".data()" + (first ? " + " + std::to_string(first) : ""));
    };
    // The joint's angles' sines and cosines from the function's table; q
    // itself only where the code reads a coordinate otherwise.
    const bool trig = !symbolic::sinCosCoordinates({values}).empty();
    if (trig) {
      if (!symbolic::readsCoordinatesOtherwise(values)) used.erase("q");
      params.push_back(std::string("const capstan_models::SinCos* __restrict ") + kSinCosTable);
      args.push_back(std::string(kSinCosTable) + (j.qIndex() ? " + " + std::to_string(j.qIndex()) : ""));
      out_.sinCosTable = std::max(out_.sinCosTable, j.qIndex() + j.nq());
    }
    pointer("q", j.qIndex());
    pointer("u", j.uIndex());
    pointer("tau", j.uIndex());
    pointer("udot", j.uIndex());
    if (slots > 0) {
      params.push_back("double* __restrict o");
      args.push_back(record.array);
      out_.prologue.push_back("double " + record.array + "[" + std::to_string(slots) + "];  // " + what +
                              " step of " + comment_(j));
    }
    for (const Output* out : written) {
      params.push_back("double* __restrict " + out->name);
      args.push_back(out->arg);
    }
    // The kernel's code.
    symbolic::CppPrinter printer{sinCosOptions(j.nq())};
    const auto partners = symbolic::sinCosPartners({values});
    const symbolic::CppPrinter::Block block = printer.block(
        assignments, "t", "    ", [](const symbolic::Node*) { return false; },
        [&](const symbolic::Node* n) -> const symbolic::Node* {
          const auto it = partners.find(n->id);
          return it == partners.end() ? nullptr : it->second;
        });
    if (block.readsTable != trig) throw std::logic_error("shared steps: the sin/cos table read unlike foreseen");
    const std::string code = symbolic::scheduleStatements(block.code, [](std::string_view) { return false; });
    std::string signature;
    for (const std::string& p : params) signature += (signature.empty() ? "" : ", ") + p;
    const auto [it, fresh] = kernelOf_.emplace(signature + "\n" + code, out_.kernels.size());
    const std::string name = function_ + "Step" + std::to_string(it->second + 1);
    if (fresh) {
      const auto statements = static_cast<std::size_t>(std::count(code.begin(), code.end(), '\n'));
      out_.kernels.push_back({{"name", name},
                              {"params", signature},
                              {"inline", statements < kInlineStatements},
                              {"doc", json::array({"The " + what + " step of " + comment_(j) + ",",
                                                   "and of every body of its kind (docs/generated-code.md, "
                                                   "\"Shared steps\")."})},
                              {"code", code}});
    }
    out_.ops += block.ops;
    if (!site.empty()) {
      symbolic::CppPrinter spelling;
      json entries = json::array();
      for (const Expr& p : step.parameters) entries.push_back(spelling.expression(p));
      out_.parameterSites.push_back(
          {{"name", site}, {"comment", "the parameters " + name + " reads for " + comment_(j)}, {"entries", entries}});
    }
    std::string call = name + "(";
    for (std::size_t k = 0; k < args.size(); ++k) call += (k ? ", " : "") + args[k];
    out_.blocks.push_back({{"comment", comment_(j) + ": " + what}, {"code", "    " + call + ");\n"}});
  }

  const Mechanism<Expr>& mechanism_;
  const ModelLayout& layout_;
  const std::function<std::string(const JointLayout&)>& comment_;
  std::string function_;
  std::vector<std::vector<int>> children_;       // by body, descending
  std::map<std::string, std::size_t> kernelOf_;  // by signature and code
  SharedSteps out_;
};

// The articulated-body algorithm's three steps per body (local_dynamics.hpp).
class AbaSteps : StepTracer {
 public:
  AbaSteps(const Mechanism<Expr>& mechanism, const local::Data<Expr>& traced, const ModelLayout& layout,
           const std::function<std::string(const JointLayout&)>& comment, std::string function)
      : StepTracer(mechanism, layout, comment, std::move(function)), traced_(traced), generic_(mechanism) {
    const auto nb = layout_.joints.size();
    velocity_.resize(nb);
    backward_.resize(nb);
    forward_.resize(nb);
  }

  SharedSteps run() {
    for (const JointLayout& j : layout_.joints) velocityStep(j);
    for (auto j = layout_.joints.rbegin(); j != layout_.joints.rend(); ++j) backwardStep(*j);
    for (const JointLayout& j : layout_.joints) forwardStep(j);
    return std::move(out_);
  }

 private:
  // The velocity step's entries: R_PK (by rows), p_PK, S, v, c.
  void velocityFields(Fields& x, std::size_t b) {
    local::Data<Expr>& d = generic_;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) x(d.R_PK[b](r, c));
    x.matrix(d.p_PK[b]);
    x.matrix(d.S[b]);
    x.matrix(d.v[b]);
    x.matrix(d.c[b]);
  }

  void velocityStep(const JointLayout& j) {
    const auto b = static_cast<std::size_t>(j.body);
    Step step;
    if (j.parent >= 0) step.sources.push_back(&velocity_.at(static_cast<std::size_t>(j.parent)));
    local::Data<Expr>& d = generic_;
    d.X_PF[b] = parameterTransform(step, traced_.X_PF[b]);
    if (j.parent >= 0) {
      const auto p = static_cast<std::size_t>(j.parent);
      const std::size_t first = 12 + 6 * static_cast<std::size_t>(d.S[p].cols());  // v in the parent's entries
      for (int i = 0; i < 6; ++i) d.v[p][i] = input(step, 0, first + static_cast<std::size_t>(i));
    }
    const Coordinates x = coordinates(j);
    local::positionStep(mechanism_, d, b, x.q);
    local::velocityStep(mechanism_, d, b, x.u);
    Fields entries;
    velocityFields(entries, b);
    emit(j, "velocity", step, entries.values, {}, velocity_[b], "vel");
  }

  void backwardStep(const JointLayout& j) {
    const auto b = static_cast<std::size_t>(j.body);
    Step step;
    step.sources.push_back(&velocity_[b]);
    for (int c : children_[b]) step.sources.push_back(&backward_.at(static_cast<std::size_t>(c)));
    local::Data<Expr>& d = generic_;
    Fields velocity(step, 0);
    velocityFields(velocity, b);
    const SpatialInertia<Expr> Ig = parameterInertia(step, traced_.I_K[b]);
    d.IA[b] = Ig.matrix();
    d.pA[b] = crossForce(d.v[b], Ig * d.v[b]);
    const int nu_j = j.nu();
    for (std::size_t s = 1; s < step.sources.size(); ++s) {  // the children's contributions
      const Record& child = *step.sources[s];
      const std::size_t first = child.slot.size() - 27;  // its IA upper triangle (21), then pA (6)
      std::size_t e = first;
      for (int r = 0; r < 6; ++r) {
        for (int c = r; c < 6; ++c) {
          const Expr x = input(step, s, e++);
          d.IA[b](r, c) = d.IA[b](r, c) + x;
          if (c != r) d.IA[b](c, r) = d.IA[b](r, c);
        }
      }
      for (int i = 0; i < 6; ++i) d.pA[b][i] = d.pA[b][i] + input(step, s, e++);
    }
    if (j.parent >= 0) {
      const auto p = static_cast<std::size_t>(j.parent);
      d.IA[p].setConstant(Expr(0.0));
      d.pA[p].setConstant(Expr(0.0));
    }
    // The joint's generalized forces that force laws set, tau[0], ...
    // (the rest zero): the function computes them before the steps.
    VectorX<Expr> tau = VectorX<Expr>::Constant(layout_.nu, Expr(0.0));
    for (const ForceLawLayout& law : layout_.forceLaws) {
      const int i = law.uIndex - j.uIndex();
      if (i >= 0 && i < nu_j) tau[law.uIndex] = symbol("tau[" + std::to_string(i) + "]");
    }
    local::abaBackwardStep(mechanism_, d, b, tau);
    std::vector<Expr> e;
    for (int c = 0; c < nu_j; ++c)
      for (int r = 0; r < 6; ++r) e.push_back(d.U[b](r, c));
    for (int c = 0; c < nu_j; ++c)
      for (int r = 0; r < nu_j; ++r) e.push_back(d.Dinv[b](r, c));
    for (int i = 0; i < nu_j; ++i) e.push_back(d.uu[b][i]);
    if (j.parent >= 0) {
      const auto p = static_cast<std::size_t>(j.parent);
      for (int r = 0; r < 6; ++r)
        for (int c = r; c < 6; ++c) e.push_back(d.IA[p](r, c));
      for (int i = 0; i < 6; ++i) e.push_back(d.pA[p][i]);
    }
    emit(j, "articulated inertia", step, e, {}, backward_[b], "art");
  }

  void forwardStep(const JointLayout& j) {
    const auto b = static_cast<std::size_t>(j.body);
    Step step;
    local::Data<Expr>& d = generic_;
    if (j.parent >= 0) {
      const auto p = static_cast<std::size_t>(j.parent);
      step.sources.push_back(&forward_.at(p));
      for (int i = 0; i < 6; ++i) d.a[p][i] = input(step, 0, static_cast<std::size_t>(i));
    }
    const std::size_t vel = step.sources.size();
    step.sources.push_back(&velocity_[b]);
    Fields velocity(step, vel);
    velocityFields(velocity, b);
    const std::size_t art = step.sources.size();
    step.sources.push_back(&backward_[b]);
    const int nu_j = j.nu();
    std::size_t k = 0;
    for (int c = 0; c < nu_j; ++c)
      for (int r = 0; r < 6; ++r) d.U[b](r, c) = input(step, art, k++);
    for (int c = 0; c < nu_j; ++c)
      for (int r = 0; r < nu_j; ++r) d.Dinv[b](r, c) = input(step, art, k++);
    for (int i = 0; i < nu_j; ++i) d.uu[b][i] = input(step, art, k++);
    local::abaForwardStep(mechanism_, d, b);
    std::vector<Expr> e;
    if (!children_[b].empty())
      for (int i = 0; i < 6; ++i) e.push_back(d.a[b][i]);
    Output udot{"udot", "udot.data()" + (j.uIndex() ? " + " + std::to_string(j.uIndex()) : std::string()), {}};
    for (int i = 0; i < nu_j; ++i) udot.entries.emplace_back(i, d.udot[j.uIndex() + i]);
    emit(j, "acceleration", step, e, {udot}, forward_[b], "acc");
  }

  const local::Data<Expr>& traced_;
  local::Data<Expr> generic_;  // the steps' entries, overwritten step by step
  std::vector<Record> velocity_, backward_, forward_;
};

// inverseDynamicsDerivatives' three steps per body (dynamics_derivatives.hpp:
// derivativeForwardStep, derivativeBackwardStep, derivativeColumnStep),
// without external forces; the pair factors into the function's locals
// pairSw, pairF, pairWq, pairWu, pairGq, pairGu and each joint's own block
// of dtau_dq into dtau_dq (both zero before the steps).
class DerivativeSteps : StepTracer {
 public:
  DerivativeSteps(const Mechanism<Expr>& mechanism, const local::Data<Expr>& traced, const ModelLayout& layout,
                  const std::function<std::string(const JointLayout&)>& comment, std::string function,
                  bool transposedFactors)
      : StepTracer(mechanism, layout, comment, std::move(function)),
        traced_(traced),
        transposedFactors_(transposedFactors),
        d_(mechanism),
        w_(mechanism),
        P_(local::zeroDerivativePairs<Expr>(layout.nu, /*turns=*/false)),
        dq_(MatrixX<Expr>::Constant(layout.nu, layout.nu, Expr(0.0))) {
    const auto nb = layout_.joints.size();
    forward_.resize(nb);
    backward_.resize(nb);
  }

  SharedSteps run() {
    for (const JointLayout& j : layout_.joints) forwardStep(j);
    for (auto j = layout_.joints.rbegin(); j != layout_.joints.rend(); ++j) backwardStep(*j);
    out_.columnsAt = out_.blocks.size();
    atForwardDynamics();
    for (const JointLayout& j : layout_.joints) columnStep(j);
    return std::move(out_);
  }

 private:
  // The forward step's entries (all in World): what the body's backward
  // step reads (S, its own Y, B and f), its column step (R, p; S in K; v,
  // vJ) and, unless it is a leaf, its children's steps (R, p, v, a).
  void forwardFields(Fields& x, std::size_t b) {
    x.matrix(w_.R[b]);
    x.matrix(w_.p[b]);
    x.matrix(w_.Sw[b]);
    x.inertia(w_.Ic[b]);
    x.matrix(w_.B[b]);
    x.matrix(w_.f[b]);
    x.matrix(d_.S[b]);
    x.matrix(w_.v[b]);
    x.matrix(w_.vJ[b]);
    if (!children_[b].empty()) x.matrix(w_.a[b]);
  }
  // The backward step's entries: the subtree's Ic and B (what the parent
  // adds and the body's column step reads; not a root's) and f.
  void backwardFields(Fields& x, std::size_t b) {
    if (layout_.joints[b].parent >= 0) {
      x.inertia(w_.Ic[b]);
      x.matrix(w_.B[b]);
    }
    x.matrix(w_.f[b]);
  }

  // forwardDynamicsDerivatives without forwardDynamics (the runtime's
  // inverseDynamicsDerivativesAtForwardDynamics): it runs the forward and
  // backward steps at udot = 0, where each body's backward array holds
  // Newton-Euler's force f_b on its subtree, so C = S^T f (the bias, the
  // armature's part zero); M from the pairs' loop, M^-1, udot = M^-1 (tau -
  // C); then the column steps, which read the parent's acceleration a_p and
  // f_b, need them at udot: in World a body's acceleration grows by
  //   da_b = da_parent + Sw_b udot_b
  // and the force on its subtree by the sum of Y_i da_i over it,
  //   df_b = Y_b da_b + sum over the children c of df_c
  // (Y_b its own inertia in World, from its forward array), added in place
  // to the arrays' entries (an entry that is a constant does not depend on
  // udot: its change is zero). Printed from the records: `bias` and
  // `correction`, each in braces (their temporaries their own).
  void atForwardDynamics() {
    const std::size_t nb = layout_.joints.size();
    std::vector<Assignment> bias, correction;
    std::vector<Vec6<Expr>> da(nb), df(nb);
    std::vector<SpatialInertia<Expr>> Y(nb);
    // The last six entries of `record` take `change` in place.
    const auto patch = [&correction](const Record& record, const Vec6<Expr>& change) {
      const std::size_t first = record.slot.size() - 6;
      for (std::size_t i = 0; i < 6; ++i) {
        const int slot = record.slot[first + i];
        if (change[static_cast<Eigen::Index>(i)].isZero()) continue;
        if (slot < 0) {
          throw std::logic_error("shared steps: a constant entry that depends on udot");
        }
        const std::string entry = record.array + "[" + std::to_string(slot) + "]";
        correction.push_back({entry, symbol(entry) + change[static_cast<Eigen::Index>(i)]});
      }
    };
    for (const JointLayout& j : layout_.joints) {  // parents first
      const auto b = static_cast<std::size_t>(j.body);
      Step step;
      step.named = true;
      step.sources = {&forward_[b], &backward_[b]};
      Fields own(step, 0);
      forwardFields(own, b);
      Y[b] = w_.Ic[b];
      da[b] = j.parent >= 0 ? da[static_cast<std::size_t>(j.parent)] : Vec6<Expr>(Vec6<Expr>::Constant(Expr(0.0)));
      for (int c = 0; c < j.nu(); ++c)
        da[b] += Vec6<Expr>(w_.Sw[b].col(c)) * symbol("udot[" + std::to_string(j.uIndex() + c) + "]");
      if (!children_[b].empty()) patch(forward_[b], da[b]);
      const Mat6X<Expr> Sw = w_.Sw[b];
      Fields sums(step, 1);
      backwardFields(sums, b);
      for (int c = 0; c < j.nu(); ++c)
        bias.push_back({"C[" + std::to_string(j.uIndex() + c) + "]", Vec6<Expr>(Sw.col(c)).dot(w_.f[b])});
    }
    for (auto j = layout_.joints.rbegin(); j != layout_.joints.rend(); ++j) {  // children first
      const auto b = static_cast<std::size_t>(j->body);
      df[b] = Y[b] * da[b];
      for (int c : children_[b]) df[b] += df[static_cast<std::size_t>(c)];
      patch(backward_[b], df[b]);
    }
    const auto print = [](const std::vector<Assignment>& statements, symbolic::OpCount& ops) {
      symbolic::CppPrinter printer;
      const symbolic::CppPrinter::Block block = printer.block(statements, "t", "      ");
      ops = block.ops;
      return "    {\n" + block.code + "    }\n";
    };
    out_.bias = print(bias, out_.biasOps);
    out_.correction = print(correction, out_.correctionOps);
  }

  // The joint's columns of a pair factor into the local `name` (rows x
  // nu, column-major), or with `transposed` its rows (nu x rows: entry
  // (r, k) at r nu + k).
  Output columns(const JointLayout& j, const std::string& name, const MatrixX<Expr>& value,
                 bool transposed = false) const {
    const auto rows = static_cast<int>(value.rows());
    const int nu = layout_.nu;
    Output out{name.substr(4), name + ".data() + " + std::to_string((transposed ? 1 : rows) * j.uIndex()), {},
               /*zeroed=*/true};
    for (int c = 0; c < j.nu(); ++c)
      for (int r = 0; r < rows; ++r)
        out.entries.emplace_back(transposed ? r * nu + c : r + rows * c, value(r, j.uIndex() + c));
    return out;
  }

  void forwardStep(const JointLayout& j) {
    const auto b = static_cast<std::size_t>(j.body);
    Step step;
    if (j.parent >= 0) {
      step.sources.push_back(&forward_.at(static_cast<std::size_t>(j.parent)));
      Fields parent(step, 0);
      forwardFields(parent, static_cast<std::size_t>(j.parent));
    }
    d_.X_PF[b] = parameterTransform(step, traced_.X_PF[b]);
    d_.I_K[b] = parameterInertia(step, traced_.I_K[b]);
    const Coordinates x = coordinates(j);
    local::derivativeForwardStep<Expr>(mechanism_, d_, w_, b, x.q, x.u, x.udot, nullptr);
    Fields entries;
    forwardFields(entries, b);
    emit(j, "derivatives' forward", step, entries.values, {}, forward_[b], "dfw");
  }

  void backwardStep(const JointLayout& j) {
    const auto b = static_cast<std::size_t>(j.body);
    Step step;
    step.sources.push_back(&forward_[b]);
    Fields own(step, 0);
    forwardFields(own, b);
    for (int c : children_[b]) {  // the children's Ic, B and force
      step.sources.push_back(&backward_.at(static_cast<std::size_t>(c)));
      Fields child(step, step.sources.size() - 1);
      SpatialInertia<Expr> Ic;
      Mat6<Expr> B;
      Vec6<Expr> f;
      child.inertia(Ic);
      child.matrix(B);
      child.matrix(f);
      w_.Ic[b] += Ic;
      w_.B[b] += B;
      w_.f[b] += f;
    }
    if (j.parent >= 0) {
      const auto p = static_cast<std::size_t>(j.parent);
      w_.f[p].setConstant(Expr(0.0));
      w_.Ic[p] = SpatialInertia<Expr>();
      w_.B[p].setConstant(Expr(0.0));
    }
    local::derivativeBackwardStep(mechanism_, d_, w_, b, /*turns=*/false, P_);
    for (int c = j.uIndex(); c < j.uIndex() + j.nu(); ++c)
      for (int r = 0; r < static_cast<int>(P_.F.rows()); ++r)
        if (!P_.F(r, c).isZero()) out_.pairRows = std::max(out_.pairRows, r + 1);
    Fields entries;
    backwardFields(entries, b);
    emit(j, "derivatives' backward", step, entries.values,
         {columns(j, "pairSw", P_.Sw, transposedFactors_), columns(j, "pairF", P_.F, transposedFactors_)},
         backward_[b], "dbw");
  }

  void columnStep(const JointLayout& j) {
    const auto b = static_cast<std::size_t>(j.body);
    if (j.nu() == 0) return;
    Step step;
    step.sources.push_back(&forward_[b]);
    Fields own(step, 0);
    forwardFields(own, b);
    step.sources.push_back(&backward_[b]);
    Fields sums(step, 1);
    backwardFields(sums, b);
    if (j.parent >= 0) {
      step.sources.push_back(&forward_.at(static_cast<std::size_t>(j.parent)));
      Fields parent(step, 2);
      forwardFields(parent, static_cast<std::size_t>(j.parent));
    }
    for (int r = 0; r < j.nu(); ++r)
      for (int c = 0; c < j.nu(); ++c) dq_(j.uIndex() + r, j.uIndex() + c) = Expr(0.0);
    const Coordinates x = coordinates(j);
    local::derivativeColumnStep(mechanism_, d_, w_, b, x.u, x.udot, /*turns=*/false, P_, dq_);
    const int nu = layout_.nu, first = j.uIndex() * nu + j.uIndex();
    Output dq{"dq", "dtau_dq.data() + " + std::to_string(first), {}, /*zeroed=*/true};
    for (int c = 0; c < j.nu(); ++c) {
      for (int r = 0; r < j.nu(); ++r) {
        const Expr& entry = dq_(j.uIndex() + r, j.uIndex() + c);
        dq.entries.emplace_back(r + c * nu, entry);
        out_.ownBlocks = out_.ownBlocks || !entry.isZero();
      }
    }
    emit(j, "derivatives' columns", step, {},
         {columns(j, "pairWq", P_.Wq), columns(j, "pairWu", P_.Wu), columns(j, "pairGq", P_.Gq),
          columns(j, "pairGu", P_.Gu), dq},
         column_, "dcol");
  }

  const local::Data<Expr>& traced_;
  const bool transposedFactors_;       // pairSw and pairF nu x 6 and nu x 12 (sharedDerivativeSteps)
  local::Data<Expr> d_;                // the steps' joint-frame entries, overwritten step by step
  local::DerivativeData<Expr> w_;      // and World entries
  local::DerivativePairs<Expr> P_;     // the pair factors the steps write
  MatrixX<Expr> dq_;                   // each joint's own block of dtau_dq
  std::vector<Record> forward_, backward_;
  Record column_;                      // (the column steps store nothing)
};

}  // namespace

SharedSteps sharedAbaSteps(const Mechanism<Expr>& mechanism, const local::Data<Expr>& traced, const ModelLayout& layout,
                           const std::function<std::string(const JointLayout&)>& comment,
                           const std::string& function) {
  return AbaSteps(mechanism, traced, layout, comment, function).run();
}

SharedSteps sharedDerivativeSteps(const Mechanism<Expr>& mechanism, const local::Data<Expr>& traced,
                                  const ModelLayout& layout,
                                  const std::function<std::string(const JointLayout&)>& comment,
                                  const std::string& function, bool transposedFactors) {
  return DerivativeSteps(mechanism, traced, layout, comment, function, transposedFactors).run();
}

}  // namespace capstan::codegen
