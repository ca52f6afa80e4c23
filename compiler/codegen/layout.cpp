#include "codegen/layout.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "mechanics/builtins.hpp"

namespace capstan::codegen {

std::string RuntimeParameter::elementName(std::size_t k) const {
  if (shape.empty()) return name;
  std::string sub;
  std::size_t rest = k;
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<std::size_t>(shape[d]);
    sub = std::to_string(rest % extent + 1) + (sub.empty() ? "" : ",") + sub;
    rest /= extent;
  }
  return name + "[" + sub + "]";
}
namespace {

using mechanics::JointType;
using sema::FlatExpr;
using sema::FlatExprKind;
using sema::VarKind;

bool refersToVariables(const FlatExpr& e) {
  if (e.kind == FlatExprKind::Variable) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const auto& a) { return a && refersToVariables(*a); });
}

// Every variable `e` reads.
void variablesOf(const FlatExpr& e, std::vector<int>& out) {
  if (e.kind == FlatExprKind::Variable) out.push_back(e.variable);
  for (const auto& a : e.args) {
    if (a) variablesOf(*a, out);
  }
}

bool isJointKind(const std::string& kind) { return mechanics::jointType(kind).has_value(); }

const std::set<std::string>& cppKeywords() {
  static const std::set<std::string> kKeywords = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "export",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
      "namespace", "new", "not", "operator", "or", "private", "protected", "public", "register", "return",
      "short", "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try",
      "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor"};
  return kKeywords;
}

std::string unique(std::string ident, std::set<std::string>& taken) {
  std::string candidate = ident;
  for (int k = 2; taken.count(candidate); ++k) candidate = ident + "_" + std::to_string(k);
  taken.insert(candidate);
  return candidate;
}

std::vector<std::string> dofNames(const std::string& joint, const char* which, int n) {
  std::vector<std::string> names;
  for (int k = 1; k <= n; ++k) names.push_back(joint + "." + which + "[" + std::to_string(k) + "]");
  return names;
}

}  // namespace

std::string cppIdentifier(const std::string& path) {
  std::string out;
  for (char c : path) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (ok) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out.front()))) out = "v_" + out;
  if (cppKeywords().count(out)) out += "_";
  return out;
}

std::string monogramIdentifier(const std::string& path) {
  std::string out;
  bool upper = true;
  for (char c : path) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    } else {
      upper = true;
    }
  }
  return out.empty() ? std::string("Body") : out;
}

int ModelLayout::findParameter(const std::string& name) const {
  for (std::size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string forceLawName(const sema::FlatModel& model, int law) {
  const sema::FlatForceLaw& l = model.forceLaws.at(static_cast<std::size_t>(law));
  return model.components.at(static_cast<std::size_t>(l.component)).path + "." + l.input +
         (l.element >= 0 ? "[" + std::to_string(l.element + 1) + "]" : "");
}

int ModelLayout::compliantContacts() const {
  return static_cast<int>(std::count_if(forceElements.begin(), forceElements.end(), [](const ForceElementLayout& e) {
    return e.kind == mechanics::ForceKind::HuntCrossley;
  }));
}

std::vector<ModelLayout::EventIndicator> ModelLayout::eventIndicators(const sema::FlatModel& model) const {
  std::vector<EventIndicator> out;
  for (const ForceElementLayout& e : forceElements)
    if (e.kind == mechanics::ForceKind::HuntCrossley)
      out.push_back({e.name + ".depth", "the penetration depth of contact `" + e.name + "`, > 0 in contact"});
  for (const CableLayout& c : cables) {
    for (const CableObstacleLayout& o : c.obstacles)
      if (o.kind == CableObstacleKind::Surface)
        out.push_back({c.name + "." + o.name + ".contact",
                       "cable `" + c.name + "` over `" + o.name +
                           "`: the wrap's length while it touches (> 0), minus the clearance while it does not"});
    for (const int s : c.springs) {
      const std::string& spring = model.components.at(static_cast<std::size_t>(s)).path;
      out.push_back({spring + ".stretch", "cable spring `" + spring + "`: L - L0, > 0 while taut, < 0 while slack"});
    }
  }
  return out;
}

std::string ModelLayout::foldReason(const sema::FlatModel& model, int v) const {
  auto path = [&](int k) { return "`" + model.variables.at(static_cast<std::size_t>(k)).path + "`"; };
  std::vector<int> readers;  // from the nearest reader to the root of the folding
  int root = v;
  while (foldedFor.at(static_cast<std::size_t>(root)) >= 0) {
    root = foldedFor[static_cast<std::size_t>(root)];
    readers.push_back(root);
  }
  const sema::FlatVariable& fv = model.variables.at(static_cast<std::size_t>(root));
  std::string why;
  if (armatureNotGiven(model, root) >= 0) {
    why = "a joint's armature that the model does not give (left at its default 0, its term is "
          "left out of the generated code)";
  } else if (fv.structural) {
    why = "structural (it sizes arrays or bounds loops)";
  } else if (fv.kind == VarKind::Constant) {
    why = "a constant";
  } else if (fv.evaluate) {
    why = "marked `Evaluate = true`";
  } else if (fv.type != sema::ValueType::Real) {
    why = std::string("of type ") + sema::valueTypeName(fv.type);
  } else {
    why = "a joint axis (axes are compiled in: their zeros shape the generated code)";
  }
  if (readers.empty()) return why;
  std::string s = "fixed at compile time: " + path(root) + " depends on it";
  if (readers.size() > 1) {
    s += " (through ";
    for (std::size_t k = 0; k + 1 < readers.size(); ++k) s += (k ? ", " : "") + path(readers[k]);
    s += ")";
  }
  return s + " and is " + why;
}

int armatureNotGiven(const sema::FlatModel& model, int v) {
  const sema::FlatVariable& fv = model.variables.at(static_cast<std::size_t>(v));
  if (fv.component < 0 || fv.modified) return -1;
  const sema::FlatComponent& c = model.components.at(static_cast<std::size_t>(fv.component));
  if (!isJointKind(c.kind)) return -1;
  const auto it = c.parameters.find("armature");
  return it != c.parameters.end() && it->second == v ? fv.component : -1;
}

ModelLayout makeLayout(const sema::FlatModel& model, const mechanics::Mechanism& mech,
                       std::vector<Unsupported>& unsupported) {
  ModelLayout L;
  const std::size_t nv = model.variables.size();
  L.roles.assign(nv, VariableRole::Other);
  L.parameterOfVariable.assign(nv, -1);
  L.inputOfVariable.assign(nv, -1);
  L.stateOf.assign(nv, {-1, false});
  L.frameOf.assign(nv, {});
  std::string cls = monogramIdentifier(model.name.substr(model.name.rfind('.') == std::string::npos ? 0 : model.name.rfind('.') + 1));
  L.className = cls;
  auto comp = [&](int c) -> const sema::FlatComponent& { return model.components.at(static_cast<std::size_t>(c)); };

  // Joint axes fold: they fix the joint's motion subspace, whose structural
  // zeros are what makes the generated code short (docs/generated-code.md).
  // So does an armature the model does not give: its default 0 vanishes
  // from the mass matrix, and a model without rotors pays nothing for them.
  // Folding is by dependency: whatever a folded binding reads is folded with
  // it, transitively (through composites' parameters, as Modelica tools
  // evaluate structural parameters), so no runtime field is left that the
  // generated code never reads.
  std::vector<char> foldedByRole(nv, 0);
  L.foldedFor.assign(nv, -1);
  std::vector<int> work;
  for (const auto& c : model.components) {
    if (!isJointKind(c.kind)) continue;
    for (const char* name : {"axis", "axis_a", "axis_b", "cut"}) {
      auto it = c.parameters.find(name);
      if (it == c.parameters.end()) continue;
      foldedByRole[static_cast<std::size_t>(it->second)] = 1;
      work.push_back(it->second);
    }
    if (auto it = c.parameters.find("armature"); it != c.parameters.end() && armatureNotGiven(model, it->second) >= 0)
      foldedByRole[static_cast<std::size_t>(it->second)] = 1;
  }
  auto foldBinding = [&](int v) {
    const sema::FlatVariable& fv = model.variables.at(static_cast<std::size_t>(v));
    if (!fv.binding) return;
    std::vector<int> reads;
    variablesOf(*fv.binding, reads);
    for (int r : reads) {
      const auto ri = static_cast<std::size_t>(r);
      const VarKind k = model.variables.at(ri).kind;
      if (foldedByRole[ri] || (k != VarKind::Parameter && k != VarKind::Constant)) continue;
      foldedByRole[ri] = 1;
      L.foldedFor[ri] = v;
      work.push_back(r);
    }
  };
  // Folded for other reasons (constants, Evaluate = true, structural,
  // non-Real): their bindings are folded with them too.
  for (std::size_t v = 0; v < nv; ++v) {
    const sema::FlatVariable& fv = model.variables[v];
    if ((fv.kind == VarKind::Parameter || fv.kind == VarKind::Constant) &&
        (fv.kind == VarKind::Constant || fv.evaluate || fv.structural || fv.type != sema::ValueType::Real)) {
      work.push_back(static_cast<int>(v));
    }
  }
  while (!work.empty()) {
    const int v = work.back();
    work.pop_back();
    foldBinding(v);
  }

  std::set<std::string> paramIdents{"params", "inputs"}, inputIdents, outputIdents;
  for (std::size_t v = 0; v < nv; ++v) {
    const sema::FlatVariable& fv = model.variables[v];
    switch (fv.kind) {
      case VarKind::Parameter:
      case VarKind::Constant: {
        const bool folded = fv.kind == VarKind::Constant || fv.evaluate || fv.structural ||
                            fv.type != sema::ValueType::Real || foldedByRole[v];
        if (folded) {
          L.roles[v] = VariableRole::Folded;
        } else if (fv.binding && refersToVariables(*fv.binding)) {
          L.roles[v] = VariableRole::Dependent;
        } else {
          L.roles[v] = VariableRole::Runtime;
          RuntimeParameter p;
          p.variable = static_cast<int>(v);
          p.name = fv.path;
          p.ident = unique(cppIdentifier(fv.path), paramIdents);
          p.shape = fv.shape;
          std::size_t n = 1;
          for (int d : fv.shape) n *= static_cast<std::size_t>(d);
          p.defaults.assign(n, 0.0);
          if (fv.value && fv.value->numbers.size() == n) p.defaults = fv.value->numbers;
          p.unit = fv.unit;
          p.description = fv.description;
          L.parameterOfVariable[v] = static_cast<int>(L.parameters.size());
          L.parameters.push_back(std::move(p));
        }
        break;
      }
      case VarKind::Input:
        L.roles[v] = VariableRole::Input;
        if (fv.type != sema::ValueType::Real || !fv.shape.empty()) {
          unsupported.push_back({fv.range, "input `" + fv.path + "` of a type other than a Real scalar"});
        }
        L.inputOfVariable[v] = static_cast<int>(L.inputs.size());
        L.inputs.push_back({static_cast<int>(v), fv.path, unique(cppIdentifier(fv.path), inputIdents), fv.unit, fv.description});
        break;
      case VarKind::Output:
        L.roles[v] = VariableRole::Output;
        if (!fv.binding || !fv.shape.empty()) {
          unsupported.push_back({fv.range, "output `" + fv.path + "` must be a Real scalar with a binding"});
        } else {
          L.outputs.push_back({static_cast<int>(v), fv.path, unique(cppIdentifier(fv.path), outputIdents), fv.unit, fv.description});
        }
        break;
      case VarKind::Continuous: {
        // `<component>.<connector>.<r|R|v|w>` of a Frame connector.
        if (fv.component < 0) break;
        const sema::FlatComponent& c = comp(fv.component);
        const std::size_t dot = fv.path.rfind('.');
        if (dot == std::string::npos || fv.path.rfind(c.path + ".", 0) != 0 || dot <= c.path.size()) break;
        const std::string connector = fv.path.substr(c.path.size() + 1, dot - c.path.size() - 1);
        const std::string which = fv.path.substr(dot + 1);
        const int frame = mech.findFrame(fv.component, connector);
        if (frame < 0) break;
        FrameQuantityRef ref{frame, FrameQuantity::r};
        if (which == "R") {
          ref.quantity = FrameQuantity::R;
        } else if (which == "v") {
          ref.quantity = FrameQuantity::v;
        } else if (which == "w") {
          ref.quantity = FrameQuantity::w;
        } else if (which != "r") {
          break;
        }
        L.roles[v] = VariableRole::Frame;
        L.frameOf[v] = ref;
        break;
      }
    }
  }
  if (mech.worldComponent >= 0) {
    auto it = comp(mech.worldComponent).parameters.find("gravity");
    if (it != comp(mech.worldComponent).parameters.end()) L.worldGravity = it->second;
  }

  // Tree joints in tree order; each one's child is the next runtime body.
  L.runtimeBody.assign(mech.bodies.size(), -1);
  std::set<std::string> bodyIdents;
  for (std::size_t j = 0; j < mech.joints.size(); ++j) {
    const mechanics::JointInfo& ji = mech.joints[j];
    if (ji.cut) continue;
    const sema::FlatComponent& c = comp(ji.component);
    JointLayout jl;
    jl.info = &ji;
    jl.mechJoint = static_cast<int>(j);
    jl.name = c.path;
    jl.body = static_cast<int>(L.joints.size());
    jl.parent = ji.parentBody == 0 ? -1 : L.runtimeBody.at(static_cast<std::size_t>(ji.parentBody));
    jl.qNames = dofNames(c.path, "q", ji.nq);
    jl.uNames = dofNames(c.path, "u", ji.nu);
    if (ji.qIndex != L.nq || ji.uIndex != L.nu) {
      unsupported.push_back({c.range, "joint `" + c.path + "` has state offsets out of tree order"});
    }
    if (ji.reversed && !capstan::jointReversible(ji.type)) {
      unsupported.push_back({c.range, std::string("reversed ") + mechanics::jointTypeName(ji.type) + " joint `" + c.path +
                                          "` (its `frame_b` is on the inboard side); swap its `frame_a` and `frame_b` connections"});
    }
    L.nq += ji.nq;
    L.nu += ji.nu;
    L.runtimeBody[static_cast<std::size_t>(ji.childBody)] = jl.body;
    const mechanics::BodyInfo& bi = mech.bodies.at(static_cast<std::size_t>(ji.childBody));
    L.bodies.push_back({ji.childBody, bi.name, unique(monogramIdentifier(bi.name), bodyIdents)});
    for (const char* which : {"q", "u"}) {
      auto it = c.continuous.find(which);
      if (it != c.continuous.end()) {
        L.roles[static_cast<std::size_t>(it->second)] = VariableRole::State;
        L.stateOf[static_cast<std::size_t>(it->second)] = {static_cast<int>(L.joints.size()), which[0] == 'u'};
      }
    }
    L.joints.push_back(std::move(jl));
  }

  std::set<std::string> frameNames;
  for (std::size_t b = 0; b < L.bodies.size(); ++b) {
    L.jacobianFrames.push_back({L.bodies[b].name, static_cast<int>(b), -1});
    frameNames.insert(L.bodies[b].name);
  }
  for (std::size_t f = 0; f < mech.frames.size(); ++f) {
    const mechanics::FrameInfo& fi = mech.frames[f];
    if (fi.body <= 0 || fi.component < 0) continue;
    const int body = L.runtimeBody.at(static_cast<std::size_t>(fi.body));
    if (body < 0 || mech.bodies.at(static_cast<std::size_t>(fi.body)).referenceFrame == static_cast<int>(f)) continue;
    const std::string name = comp(fi.component).path + "." + fi.connector;
    if (frameNames.insert(name).second) L.jacobianFrames.push_back({name, body, static_cast<int>(f)});
  }

  auto bodyOfFrame = [&](int frame) {
    const int b = mech.frames.at(static_cast<std::size_t>(frame)).body;
    return b <= 0 ? -1 : L.runtimeBody.at(static_cast<std::size_t>(b));
  };
  for (const mechanics::ConstraintInfo& con : mech.constraints) {
    ConstraintLayout cl;
    cl.kind = con.kind;
    cl.name = con.name;
    cl.component = con.component;
    if (con.kind == mechanics::ConstraintKind::LoopJoint) {
      const mechanics::JointInfo& ji = mech.joints.at(static_cast<std::size_t>(con.joint));
      cl.joint = con.joint;
      cl.frameF = ji.frameA;
      cl.frameM = ji.frameB;
    } else if (con.kind == mechanics::ConstraintKind::Coupler) {
      cl.joint = con.joint;
      cl.leader = con.leader;
    } else {
      cl.sphereF = con.sphereF;
      cl.sphereB = con.sphereB;
      cl.frameF = mech.findFrame(con.sphereF, "frame_a");
      cl.frameM = mech.findFrame(con.sphereB, "frame_a");
      cl.rolling = con.nonholonomic > 0;
    }
    cl.bodyF = cl.frameF < 0 ? -1 : bodyOfFrame(cl.frameF);
    cl.bodyM = cl.frameM < 0 ? -1 : bodyOfFrame(cl.frameM);
    cl.holonomic = con.holonomic;
    cl.nonholonomic = con.nonholonomic;
    cl.holonomicRow = L.holonomicRows;
    L.holonomicRows += cl.holonomic;
    L.constraints.push_back(std::move(cl));
  }
  L.constraintRows = L.holonomicRows;
  for (ConstraintLayout& cl : L.constraints) {
    cl.nonholonomicRow = L.constraintRows;
    L.constraintRows += cl.nonholonomic;
  }
  for (const auto& f : mech.forces) {
    if (f.kind == mechanics::ForceKind::JointForceLaw) continue;
    if (f.kind == mechanics::ForceKind::Spring || f.kind == mechanics::ForceKind::Bushing ||
        f.kind == mechanics::ForceKind::HuntCrossley) {
      L.forceElements.push_back({f.kind, f.name, f.component, f.frameA, f.frameB, bodyOfFrame(f.frameA),
                                 bodyOfFrame(f.frameB), f.surfaceA, f.surfaceB});
      continue;
    }
    // CableSpring, CableActuator: with its cable, below.
  }
  // Cables: each obstacle's frame and body; their springs.
  auto runtimeBodyOf = [&](int frame) {
    const int b = mech.frames.at(static_cast<std::size_t>(frame)).body;
    return b <= 0 ? -1 : L.runtimeBody.at(static_cast<std::size_t>(b));
  };
  for (std::size_t k = 0; k < mech.cables.size(); ++k) {
    const mechanics::CableInfo& ci = mech.cables[k];
    CableLayout cl;
    cl.name = ci.name;
    cl.component = ci.component;
    cl.firstFrame = L.cableFrameCount;
    auto add = [&](CableObstacleKind kind, const std::string& name, int component, int surface, int frame) {
      if (frame < 0) return false;
      cl.obstacles.push_back({kind, name, component, surface, frame, runtimeBodyOf(frame)});
      return true;
    };
    bool complete = add(CableObstacleKind::EndPoint, ci.name + ".frame_a", ci.component, -1, ci.origin);
    for (const mechanics::CableElement& e : ci.path) {
      if (e.isWrap) {
        complete = add(CableObstacleKind::Surface, comp(e.component).path, e.component, e.surface,
                       mech.findFrame(e.surface, "frame_a")) && complete;
      } else {
        complete = add(CableObstacleKind::ViaPoint, comp(e.component).path, e.component, -1,
                       mech.findFrame(e.component, "frame_a")) && complete;
      }
    }
    complete = add(CableObstacleKind::EndPoint, ci.name + ".frame_b", ci.component, -1, ci.termination) && complete;
    if (!complete) {
      unsupported.push_back({comp(ci.component).range, "cable `" + ci.name + "` with an unconnected frame"});
      continue;
    }
    cl.firstActuator = L.cableActuatorCount;
    for (const auto& f : mech.forces) {
      if (f.cable != static_cast<int>(k)) continue;
      if (f.kind == mechanics::ForceKind::CableSpring) cl.springs.push_back(f.component);
      if (f.kind == mechanics::ForceKind::CableActuator) cl.actuators.push_back({f.component, -1});
    }
    L.cableFrameCount += static_cast<int>(cl.obstacles.size());
    L.cableActuatorCount += static_cast<int>(cl.actuators.size());
    L.cables.push_back(std::move(cl));
  }

  for (std::size_t k = 0; k < model.forceLaws.size(); ++k) {
    const sema::FlatForceLaw& law = model.forceLaws[k];
    const sema::FlatComponent& c = comp(law.component);
    ForceLawLayout fl;
    fl.law = static_cast<int>(k);
    fl.name = forceLawName(model, fl.law);
    if (law.input == "tension" && mechanics::componentKind(c.kind) == mechanics::ComponentKind::CableActuator) {
      // Read by the cable it pulls on (cableFrames' tensions).
      for (CableLayout& cl : L.cables)
        for (CableLayout::Actuator& a : cl.actuators)
          if (a.component == law.component) a.law = static_cast<int>(k);
      continue;
    }
    if (law.input != "tau") {
      unsupported.push_back({law.range, "the force law for `" + fl.name + "`"});
      continue;
    }
    for (const JointLayout& jl : L.joints) {
      if (jl.component() == law.component) fl.uIndex = jl.uIndex() + std::max(law.element, 0);
    }
    if (fl.uIndex < 0) continue;  // on a cut joint: mechanics reported it
    L.forceLaws.push_back(std::move(fl));
  }
  return L;
}

}  // namespace capstan::codegen
