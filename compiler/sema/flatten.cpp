// Flattening one model: instantiate it, walk the equations of every instance
// (unrolling `for` loops), resolve connects to primitive frames (through
// the connectors of composites, Modelica's connection sets), turn
// assignments into force laws and output bindings, evaluate every parameter
// and read the model's annotations.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <capstan/sim/integrator.hpp>

#include "sema/instance.hpp"

namespace capstan::sema {

using syntax::DiagKind;
using syntax::ExprKind;

std::string Flattener::describeNode(const Node& n) const {
  switch (n.kind) {
    case NodeKind::Variable:
      switch (out_.variables[static_cast<std::size_t>(n.var)].kind) {
        case VarKind::Parameter: return "a parameter";
        case VarKind::Constant: return "a constant";
        case VarKind::Input: return "an input";
        case VarKind::Output: return "an output";
        case VarKind::Continuous: return "a state of the component";
      }
      return "a variable";
    case NodeKind::Component: return "a component";
    case NodeKind::Connector: return "a connector";
    case NodeKind::ForceInput: return "a force input";
    default: return "not assignable";
  }
}

void Flattener::processEquations(Instance& root) {
  std::vector<Instance*> stack{&root};
  while (!stack.empty()) {
    Instance* inst = stack.back();
    stack.pop_back();
    for (const auto& [eq, cls] : inst->equations) {
      std::vector<std::pair<std::string, int>> iters;
      processEquation(*eq, Env{inst, cls, Purpose::Dynamic, nullptr, nullptr, 0}, iters);
      if (diags_.tooManyErrors()) return;
    }
    // Children in declaration order (the stack reverses them).
    for (auto it = inst->nodes.rbegin(); it != inst->nodes.rend(); ++it) {
      if (it->kind != NodeKind::Component) continue;
      for (auto e = it->elems.rbegin(); e != it->elems.rend(); ++e) stack.push_back(e->get());
    }
  }
}

void Flattener::processEquation(const syntax::Equation& eq, Env env, std::vector<std::pair<std::string, int>>& iters) {
  env.iterators = &iters;
  switch (eq.kind) {
    case syntax::EquationKind::For: {
      Env r = env;
      r.purpose = Purpose::Structural;
      const Typed range = translate(*eq.iterRange, r);
      if (!range.ok) return;
      if (range.type != ValueType::Integer || range.shape.size() != 1) {
        diags_.report(DiagKind::TypeMismatch, eq.iterRange->range,
                      std::string("a ") + typeString(range.type, range.shape), "for range", "Integer[:]");
        return;
      }
      std::optional<Value> v = evaluate(*range.e, eq.iterRange->range);
      if (!v) return;
      for (double x : v->numbers) {
        iters.emplace_back(eq.iterator, static_cast<int>(x));
        for (const auto& b : eq.body) processEquation(*b, env, iters);
        iters.pop_back();
      }
      return;
    }
    case syntax::EquationKind::Connect: {
      int ends[2] = {-1, -1};
      const syntax::Expr* sides[2] = {eq.lhs.get(), eq.rhs.get()};
      for (int k = 0; k < 2; ++k) {
        const syntax::Expr* s = sides[k];
        if (!s) return;
        if (s->kind != ExprKind::Ref) {
          diags_.report(DiagKind::ConnectNotConnector, s->range, "this expression");
          return;
        }
        if (!env.inst->byName.count(s->name.parts[0].name)) {
          std::vector<std::string> names;
          for (const Node& n : env.inst->nodes) names.push_back(n.name);
          diags_.report(DiagKind::UnknownName, s->name.parts[0].range,
                        s->name.parts[0].name, didYouMean(s->name.parts[0].name, names));
          return;
        }
        Resolved r = resolve(*s, env);
        if (r.kind == Resolved::Kind::None) return;
        if (r.kind != Resolved::Kind::Connector) {
          auto& d = diags_.report(DiagKind::ConnectNotConnector, s->range, s->name.dotted());
          if (r.node && r.node->decl) d.note(DiagKind::NoteDeclaredHere, r.node->decl->nameRange, r.node->name);
          return;
        }
        ends[k] = r.connector;
      }
      const ConnectorInfo& a = connectors_[static_cast<std::size_t>(ends[0])];
      const ConnectorInfo& b = connectors_[static_cast<std::size_t>(ends[1])];
      if (a.cls != b.cls) {
        diags_.report(DiagKind::ConnectMismatch, eq.range,
                      eq.lhs->name.dotted(), a.cls->fullName, eq.rhs->name.dotted(), b.cls->fullName);
        return;
      }
      connectPairs_.push_back({ends[0], ends[1], eq.lhs->range, eq.rhs->range, eq.range});
      return;
    }
    case syntax::EquationKind::Assign: {
      const syntax::Expr* lhs = eq.lhs.get();
      if (!lhs || !eq.rhs) return;
      if (lhs->kind != ExprKind::Ref) {
        diags_.report(DiagKind::NotAForceInput, lhs->range, "this expression", "not a name");
        return;
      }
      if (!env.inst->byName.count(lhs->name.parts[0].name)) {
        std::vector<std::string> names;
        for (const Node& n : env.inst->nodes) names.push_back(n.name);
        diags_.report(DiagKind::UnknownName, lhs->name.parts[0].range,
                      lhs->name.parts[0].name, didYouMean(lhs->name.parts[0].name, names));
        return;
      }
      Resolved r = resolve(*lhs, env);
      if (r.kind == Resolved::Kind::None) return;
      const bool output = r.kind == Resolved::Kind::Variable && r.node && r.inst && r.inst->component < 0 &&
                          out_.variables[static_cast<std::size_t>(r.var)].kind == VarKind::Output;
      if (r.kind != Resolved::Kind::ForceInput && !output) {
        std::string what = r.kind == Resolved::Kind::Variable ? describeNode(*r.node)
                           : r.kind == Resolved::Kind::Connector ? "a connector"
                                                                 : "a component";
        if (r.kind == Resolved::Kind::Variable && r.inst && r.inst->component >= 0 &&
            out_.variables[static_cast<std::size_t>(r.var)].kind == VarKind::Continuous) {
          what = "a state of `" + r.inst->path + "`";
        }
        auto& d = diags_.report(DiagKind::NotAForceInput, lhs->range, lhs->name.dotted(), what);
        if (r.node && r.node->decl) d.note(DiagKind::NoteDeclaredHere, r.node->decl->nameRange, r.node->name);
        return;
      }
      if (output && !r.indices.empty()) {
        diags_.report(DiagKind::NotAForceInput, lhs->range, lhs->name.dotted(), "an element of an output; assign the whole output");
        return;
      }
      PendingForceLaw p;
      p.lhs = lhs;
      p.rhs = eq.rhs.get();
      p.env = env;
      p.iterators = iters;
      p.target = r.inst;
      p.node = r.node;
      p.range = eq.range;
      if (r.kind == Resolved::Kind::ForceInput && !r.indices.empty()) p.element = r.indices[0];
      forceLaws_.push_back(std::move(p));
      return;
    }
  }
}

namespace {
// A reference as written, subscripts included where they are names or
// numbers (`j[i].u`, `b[2].mass`); `...` for any other subscript.
std::string writtenRef(const syntax::Name& name) {
  std::string text;
  for (const syntax::NamePart& part : name.parts) {
    if (!text.empty()) text += ".";
    text += part.name;
    if (part.subscripts.empty()) continue;
    text += "[";
    for (std::size_t k = 0; k < part.subscripts.size(); ++k) {
      const syntax::Expr* sub = part.subscripts[k].get();
      if (k > 0) text += ", ";
      if (sub && sub->kind == syntax::ExprKind::Ref && sub->name.parts.size() == 1 &&
          sub->name.parts[0].subscripts.empty())
        text += sub->name.parts[0].name;
      else if (sub && sub->kind == syntax::ExprKind::Number && sub->isInteger)
        text += std::to_string(static_cast<long>(sub->number));
      else
        text += "...";
    }
    text += "]";
  }
  return text;
}
}  // namespace

void Flattener::noteUnitsRead(syntax::Diagnostic& d, const syntax::Expr& e, const Env& env) {
  constexpr std::size_t kMostNotes = 3;
  std::set<std::string> seen;  // `v<index>` for a model variable, `l<name>` for a function's local
  const auto noted = [](const Unit& u) { return u.known() && !u.spelling.empty() && !u.isDimensionless(); };
  const std::function<void(const syntax::Expr&)> walk = [&](const syntax::Expr& x) {
    if (seen.size() >= kMostNotes) return;
    const bool named = x.kind == syntax::ExprKind::Ref && !x.name.global && !x.name.parts.empty();
    if (named && env.locals && env.locals->count(x.name.parts[0].name)) {
      // An input or local of a function being inlined, at its declaration.
      const std::string& name = x.name.parts[0].name;
      const LocalValue& lv = env.locals->at(name);
      if (noted(lv.unit) && seen.insert("l" + name).second)
        d.note(DiagKind::NoteUnitDeclared, lv.declared, writtenRef(x.name), lv.unit.spelling);
    } else if (named && env.inst && env.inst->byName.count(x.name.parts[0].name)) {
      const Resolved r = resolve(x, env, /*quiet=*/true);
      if (r.kind == Resolved::Kind::Variable && r.var >= 0) {
        const VarInfo& vi = info_[static_cast<std::size_t>(r.var)];
        if (noted(vi.unit) && seen.insert("v" + std::to_string(r.var)).second)
          d.note(DiagKind::NoteUnitDeclared, out_.variables[static_cast<std::size_t>(r.var)].range,
                 writtenRef(x.name), vi.unit.spelling);
      }
    }
    for (const syntax::ExprPtr& a : x.args)
      if (a) walk(*a);
    for (const syntax::NamedArg& n : x.namedArgs)
      if (n.value) walk(*n.value);
  };
  walk(e);
}

void Flattener::finishForceLaw(PendingForceLaw& p) {
  Env env = p.env;
  env.iterators = &p.iterators;
  env.purpose = Purpose::Dynamic;
  Typed r = translate(*p.rhs, env);
  if (!r.ok) return;
  const SourceRange valueRange = p.rhs->range;
  if (!distribute(r, p.select, *p.rhs, valueRange, p.target ? p.target->child(p.node->name) : p.node->name)) return;
  if (r.type != ValueType::Real && r.type != ValueType::Integer) {
    diags_.report(DiagKind::TypeMismatch, valueRange,
                  std::string("a ") + valueTypeName(r.type), p.lhs ? p.lhs->name.dotted() : p.node->name, "Real");
    return;
  }
  if (p.node->kind == NodeKind::Variable) {
    // An output defined by an equation.
    const int var = p.node->var;
    FlatVariable& fv = out_.variables[static_cast<std::size_t>(var)];
    VarInfo& vi = info_[static_cast<std::size_t>(var)];
    ensureBinding(var);
    if (fv.binding || (vi.mod && vi.mod->value)) {
      auto& d = diags_.report(DiagKind::DuplicateAssignment, p.lhs->range, fv.path);
      d.note(DiagKind::NotePreviousAssignment, vi.mod && vi.mod->value ? vi.mod->valueRange : fv.range);
      return;
    }
    if (r.shape != fv.shape) {
      diags_.report(DiagKind::ShapeMismatch, valueRange, shapeString(r.shape), fv.path, shapeString(fv.shape));
      return;
    }
    if (vi.unit.known() && r.unit.certain() && !vi.unit.sameAs(r.unit)) {
      auto& d = diags_.report(DiagKind::UnitMismatch, valueRange, r.unit.str(), fv.path, vi.unit.str());
      noteUnitsRead(d, *p.rhs, env);
    }
    fv.binding = r.e;
    return;
  }
  // A force input of a primitive.
  const Node& n = *p.node;
  const std::string path = p.target->child(n.name);
  std::vector<int> shape = n.inputShape;
  if (p.element >= 0) shape.clear();
  if (r.shape != shape) {
    diags_.report(DiagKind::ShapeMismatch, valueRange, shapeString(r.shape), path, shapeString(shape));
    return;
  }
  if (n.inputUnit.known() && r.unit.certain() && !n.inputUnit.sameAs(r.unit)) {
    auto& d = diags_.report(DiagKind::UnitMismatch, valueRange, r.unit.str(), path, n.inputUnit.str());
    noteUnitsRead(d, *p.rhs, env);
  }
  std::vector<std::pair<int, FlatExprPtr>> parts;
  if (shape.empty()) {
    parts.emplace_back(p.element, r.e);
  } else {
    const auto elems = scalarElements(r.e, shape);
    for (std::size_t k = 0; k < elems.size(); ++k) parts.emplace_back(static_cast<int>(k), elems[k]);
  }
  const SourceRange at = p.lhs ? p.lhs->range : p.range;
  for (auto& [element, rhs] : parts) {
    // A scalar input is element -1; a vector input's elements are 0-based.
    const int key = n.inputShape.empty() ? -1 : element;
    auto [it, inserted] = assigned_.emplace(std::make_tuple(p.target->component, n.name, key), at);
    if (!inserted) {
      std::string what = path;
      if (key >= 0) what += "[" + std::to_string(key + 1) + "]";
      diags_.report(DiagKind::DuplicateAssignment, at, what).note(DiagKind::NotePreviousAssignment, it->second);
      return;
    }
    FlatForceLaw law;
    law.component = p.target->component;
    law.input = n.name;
    law.element = key;
    law.rhs = rhs;
    law.range = p.range;
    out_.forceLaws.push_back(std::move(law));
  }
}

void Flattener::addImplicitWorld(ClassNode* model) {
  for (const FlatComponent& c : out_.components) {
    if (c.kind == "World") return;
  }
  if (root_->byName.count("world")) return;  // the user's own `world`, whatever it is
  ClassNode* capstan = lib_.findTopLevel("Capstan");
  ClassNode* world = capstan ? lib_.findMemberClass(capstan, "World") : nullptr;
  if (!world) return;
  lib_.resolve(world);
  if (world->builtin != "World") return;
  // `Capstan.World world;`, declared at the model's name.
  auto decl = std::make_unique<syntax::ComponentDecl>();
  decl->range = model->nameRange();
  decl->nameRange = model->nameRange();
  decl->name = "world";
  for (const char* part : {"Capstan", "World"}) {
    syntax::NamePart p;
    p.name = part;
    p.range = model->nameRange();
    decl->typeName.parts.push_back(std::move(p));
  }
  decl->typeName.range = model->nameRange();
  decl->description = "the implicit World";
  Node n;
  n.kind = NodeKind::Component;
  n.name = decl->name;
  n.decl = decl.get();
  n.lexical = model;
  n.type = world;
  n.elems.push_back(instantiate(world, nullptr, "world", root_.get(), decl.get()));
  root_->byName.emplace(n.name, static_cast<int>(root_->nodes.size()));
  root_->nodes.push_back(std::move(n));
  implicitWorld_ = std::move(decl);
}

std::optional<FlatModel> Flattener::run(ClassNode* model) {
  lib_.resolve(model);
  out_.name = model->fullName;
  out_.range = model->def ? model->def->range : SourceRange{};
  root_ = std::make_unique<Instance>();
  root_->cls = model;
  if (!model->builtin.empty()) {
    FlatComponent c;
    c.path = model->name;
    c.kind = model->builtin;
    c.range = model->nameRange();
    c.instantiatedAt = c.range;
    root_->component = 0;
    out_.components.push_back(std::move(c));
  }
  collect(*root_, model, nullptr, 0);
  // Room for the implicit `world`, so that adding it moves no Node.
  root_->nodes.reserve(root_->nodes.size() + 1);
  for (Node& n : root_->nodes) complete(*root_, n);
  if (diags_.tooManyErrors()) return std::nullopt;
  if (model->builtin.empty()) addImplicitWorld(model);
  processEquations(*root_);

  // Connection sets: union-find over every connect; connects between two
  // primitive frames are kept as written, and frames joined only through
  // composite connectors are chained to the first primitive frame of the set.
  for (const ConnectPair& c : connectPairs_) {
    const int ra = findRoot(c.a), rb = findRoot(c.b);
    if (ra != rb) connectors_[static_cast<std::size_t>(ra)].parent = rb;
  }
  std::vector<int> direct(connectors_.size());
  for (std::size_t k = 0; k < direct.size(); ++k) direct[k] = static_cast<int>(k);
  auto findDirect = [&](int x) {
    while (direct[static_cast<std::size_t>(x)] != x) x = direct[static_cast<std::size_t>(x)] = direct[static_cast<std::size_t>(direct[static_cast<std::size_t>(x)])];
    return x;
  };
  auto ref = [&](int c, SourceRange r) {
    const ConnectorInfo& ci = connectors_[static_cast<std::size_t>(c)];
    return ConnectorRef{ci.owner->component, ci.name, r};
  };
  std::map<int, SourceRange> viaComposite;  // set root -> a connect that involves a composite
  for (const ConnectPair& c : connectPairs_) {
    const bool pa = connectors_[static_cast<std::size_t>(c.a)].primitive;
    const bool pb = connectors_[static_cast<std::size_t>(c.b)].primitive;
    if (pa && pb) {
      out_.connects.push_back({ref(c.a, c.rangeA), ref(c.b, c.rangeB), c.range});
      direct[static_cast<std::size_t>(findDirect(c.a))] = findDirect(c.b);
    } else {
      viaComposite.emplace(findRoot(c.a), c.range);
    }
  }
  if (!viaComposite.empty()) {
    std::map<int, int> firstPrimitive;
    for (std::size_t k = 0; k < connectors_.size(); ++k) {
      if (!connectors_[k].primitive) continue;
      const int root = findRoot(static_cast<int>(k));
      auto site = viaComposite.find(root);
      if (site == viaComposite.end()) continue;
      auto [it, first] = firstPrimitive.emplace(root, static_cast<int>(k));
      if (first) continue;
      if (findDirect(it->second) == findDirect(static_cast<int>(k))) continue;
      out_.connects.push_back({ref(it->second, site->second), ref(static_cast<int>(k), site->second), site->second});
      direct[static_cast<std::size_t>(findDirect(it->second))] = findDirect(static_cast<int>(k));
    }
  }

  // A model checked on its own may have connectors of its own (a composite
  // such as `Robots.Link`): the frames joined to them connect to nothing
  // here, which mechanics will report; say why first.
  for (std::size_t k = 0; k < connectors_.size(); ++k) {
    if (connectors_[k].owner != root_.get() || connectors_[k].primitive) continue;
    const int root = findRoot(static_cast<int>(k));
    for (std::size_t j = 0; j < connectors_.size(); ++j) {
      if (!connectors_[j].primitive || findRoot(static_cast<int>(j)) != root) continue;
      diags_.report(DiagKind::OpenConnector, connectors_[k].declRange, connectors_[k].name, model->fullName);
      break;
    }
  }

  for (PendingForceLaw& p : forceLaws_) {
    if (diags_.tooManyErrors()) break;
    finishForceLaw(p);
  }

  // Every variable's binding and every parameter's value. (The list grows
  // when a binding reads a frame quantity for the first time.)
  for (std::size_t i = 0; i < out_.variables.size() && !diags_.tooManyErrors(); ++i) {
    const VarKind k = out_.variables[i].kind;
    if (k == VarKind::Parameter || k == VarKind::Constant ||
        (k == VarKind::Input && info_[i].mod && info_[i].mod->value)) {
      ensureValue(static_cast<int>(i), out_.variables[i].range);
    } else {
      ensureBinding(static_cast<int>(i));
    }
  }

  if (model->def) out_.experiment = readExperiment(*model);

  // Unused parameters, unless errors may have hidden their uses.
  for (std::size_t i = 0; i < out_.variables.size() && !diags_.hasErrors(); ++i) {
    const FlatVariable& v = out_.variables[i];
    if (info_[i].rootLevel && v.kind == VarKind::Parameter && !v.used) {
      diags_.report(DiagKind::UnusedParameter, v.range, v.path);
    }
  }
  out_.buildIndex();
  return std::move(out_);
}

// annotation(experiment(StartTime = .., StopTime = .., Interval = .., Tolerance = ..,
//                       __capstan_integrator = "cvode")): the defaults of
// `simulate` and `capstan test`, checked here so that `check` reports a bad
// one where it is written. Simulations start at t = 0, so a StartTime other
// than 0 is refused rather than dropped. Another tool's vendor settings
// (`__Dymola_...`) are ignored without a word, as Modelica asks.
std::optional<Experiment> Flattener::readExperiment(ClassNode& model) {
  const syntax::Modification* exp = nullptr;
  for (const syntax::Modification& m : model.def->annotation.mods) {
    if (m.target.parts.size() != 1 || m.target.parts[0].name != "experiment") continue;
    if (!exp) {
      exp = &m;
      continue;
    }
    diags_.report(DiagKind::ExperimentDuplicate, m.target.range)
        .note(DiagKind::NotePreviousModifier, exp->target.range);
  }
  if (!exp) return std::nullopt;
  Experiment x;
  x.range = exp->range;
  const Env env{root_.get(), &model, Purpose::Binding, nullptr, nullptr, 0};
  static const std::vector<std::string> kSettings{"StartTime", "StopTime", "Interval", "Tolerance",
                                                  "__capstan_integrator"};
  std::map<std::string, const syntax::Modification*> seen;
  std::map<std::string, SourceRange> valueAt;
  for (const syntax::Modification& m : exp->nested) {
    const std::string key = m.target.dotted();
    if (std::find(kSettings.begin(), kSettings.end(), key) == kSettings.end()) {
      if (!key.starts_with("__")) {
        diags_.report(DiagKind::ExperimentSettingUnknown, m.target.range, key, didYouMean(key, kSettings));
      }
      continue;
    }
    if (const auto [it, first] = seen.emplace(key, &m); !first) {
      diags_.report(DiagKind::DuplicateModifier, m.target.range, key)
          .note(DiagKind::NotePreviousModifier, it->second->target.range);
      continue;
    }
    if (!m.value) continue;
    if (key == "__capstan_integrator") {  // a string literal, as Modelica's vendor annotations
      if (m.value->kind == syntax::ExprKind::String) {
        if (capstan::sim::parseIntegrator(m.value->text)) {
          x.integrator = m.value->text;
          x.integratorRange = m.value->range;
        } else {
          diags_.report(DiagKind::ExperimentIntegratorUnknown, m.value->range,
                        m.value->text, capstan::sim::integratorList("\""));
        }
        continue;
      }
      const Typed t = translate(*m.value, env);
      if (t.ok) diags_.report(DiagKind::TypeMismatch, m.value->range, std::string("a ") + typeString(t.type, t.shape), key, "String");
      continue;
    }
    std::optional<double>* slot = key == "StartTime" ? &x.startTime
                                  : key == "StopTime" ? &x.stopTime
                                  : key == "Interval" ? &x.interval
                                                      : &x.tolerance;
    const Typed t = translate(*m.value, env);
    if (!t.ok) continue;
    if (!t.shape.empty() || (t.type != ValueType::Real && t.type != ValueType::Integer)) {
      diags_.report(DiagKind::TypeMismatch, m.value->range, std::string("a ") + typeString(t.type, t.shape), key, "Real");
      continue;
    }
    if (std::optional<Value> v = evaluate(*t.e, m.value->range)) {
      *slot = v->scalar();
      valueAt[key] = m.value->range;
    }
  }

  // The values: each finite, the interval and tolerance positive, the run
  // from 0 to StopTime. Reported, then dropped, so `simulate` never sees them.
  auto refuse = [&](const char* key, std::optional<double>& value, const std::string& must) {
    diags_.report(DiagKind::ExperimentValue, valueAt[key], key, *value, must);
    value.reset();
  };
  for (auto [key, slot] : {std::pair{"StartTime", &x.startTime}, std::pair{"StopTime", &x.stopTime},
                           std::pair{"Interval", &x.interval}, std::pair{"Tolerance", &x.tolerance}}) {
    if (*slot && !std::isfinite(**slot)) refuse(key, *slot, "a finite number");
  }
  if (x.startTime && *x.startTime != 0) {
    diags_.report(DiagKind::ExperimentStartTime, valueAt["StartTime"], *x.startTime);
  }
  if (x.stopTime && *x.stopTime < x.startTime.value_or(0.0)) {
    refuse("StopTime", x.stopTime, "at least `StartTime`, " + formatNumber(x.startTime.value_or(0.0)));
  }
  if (x.interval && !(*x.interval > 0)) refuse("Interval", x.interval, "positive");
  if (x.tolerance && !(*x.tolerance > 0)) refuse("Tolerance", x.tolerance, "positive");
  return x;
}

std::optional<FlatModel> flatten(Library& lib, const std::string& modelName,
                                 const std::vector<ParameterOverride>& overrides) {
  Library::Impl& impl = lib.impl();
  ClassNode* cls = nullptr;
  std::size_t start = 0;
  while (start <= modelName.size()) {
    const std::size_t dot = modelName.find('.', start);
    const std::string part = modelName.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    cls = cls ? impl.findMemberClass(cls, part) : impl.findTopLevel(part);
    if (!cls || dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!cls) {
    lib.diags().report(DiagKind::ModelNotFound, {}, modelName);
    return std::nullopt;
  }
  const syntax::ClassKind k = cls->kind();
  impl.resolve(cls);
  if (!cls->builtin.empty()) {  // `Capstan.Body`: a part of a model, with nothing to connect it to
    lib.diags().report(DiagKind::NotAModel, cls->nameRange(), cls->fullName, "built-in component of the library");
    return std::nullopt;
  }
  if (!cls->def || k == syntax::ClassKind::Package || k == syntax::ClassKind::Function ||
      k == syntax::ClassKind::Connector || k == syntax::ClassKind::Type || k == syntax::ClassKind::Record) {
    lib.diags().report(DiagKind::NotAModel, cls->nameRange(), cls->fullName, cls->def ? syntax::classKindName(k) : "type");
    return std::nullopt;
  }
  Flattener f(impl, lib.diags(), overrides);
  return f.run(cls);
}

}  // namespace capstan::sema
