// The human summary and the JSON form of a checked mechanism.
#include <nlohmann/json.hpp>
#include <sstream>

#include "mechanics/builtins.hpp"
#include "mechanics/mechanism.hpp"

namespace capstan::mechanics {
namespace {

using nlohmann::json;

json toJson(const Vec3& v) { return json::array({v(0), v(1), v(2)}); }
json toJson(const Mat3& m) {
  json a = json::array();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) a.push_back(m(r, c));
  return a;
}
json toJson(const sema::Value& v) {
  json elems = json::array();
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i) {
    switch (v.type) {
      case sema::ValueType::Real: elems.push_back(v.numbers[i]); break;
      case sema::ValueType::Integer: elems.push_back(static_cast<long long>(v.numbers[i])); break;
      case sema::ValueType::Boolean: elems.push_back(v.numbers[i] != 0.0); break;
      case sema::ValueType::String:
      case sema::ValueType::Reference: elems.push_back(v.strings[i]); break;
    }
  }
  if (v.isScalar()) return elems.empty() ? json() : elems[0];
  return elems;  // row-major, with "shape" beside it
}

const char* varKindName(sema::VarKind k) {
  switch (k) {
    case sema::VarKind::Parameter: return "parameter";
    case sema::VarKind::Constant: return "constant";
    case sema::VarKind::Input: return "input";
    case sema::VarKind::Output: return "output";
    case sema::VarKind::Continuous: return "continuous";
  }
  return "?";
}

const char* forceKindName(ForceKind k) {
  switch (k) {
    case ForceKind::Spring: return "Spring";
    case ForceKind::Bushing: return "Bushing";
    case ForceKind::HuntCrossley: return "HuntCrossleyContact";
    case ForceKind::CableSpring: return "CableSpring";
    case ForceKind::CableActuator: return "CableActuator";
    case ForceKind::JointForceLaw: return "ForceLaw";
  }
  return "?";
}

// "a, b, c and 12 more"
template <class Range, class Name>
std::string listOf(const Range& items, Name name, std::size_t limit = 6) {
  std::string out;
  std::size_t i = 0;
  for (const auto& item : items) {
    if (i == limit) {
      out += ", ... (" + std::to_string(items.size() - limit) + " more)";
      break;
    }
    out += (i ? ", " : "") + name(item);
    ++i;
  }
  return out;
}

}  // namespace

std::string summary(const sema::FlatModel& model, const Mechanism& mech) {
  const auto path = [&](int c) { return model.components[static_cast<std::size_t>(c)].path; };
  std::ostringstream s;
  const int ntree = mech.treeJointCount();
  const std::size_t nbodies = mech.bodies.size() - 1;
  std::size_t nparams = 0, nruntime = 0;
  for (const auto& v : model.variables) {
    if (v.kind != sema::VarKind::Parameter && v.kind != sema::VarKind::Constant) continue;
    ++nparams;
    if (v.kind == sema::VarKind::Parameter && !v.evaluate && !v.structural) ++nruntime;
  }
  std::vector<const JointInfo*> tree, cuts;
  for (const auto& j : mech.joints) (j.cut ? cuts : tree).push_back(&j);
  std::vector<const BodyInfo*> bodies;
  for (std::size_t b = 1; b < mech.bodies.size(); ++b) bodies.push_back(&mech.bodies[b]);

  s << "model " << model.name << ": ok\n";
  s << "  bodies:       " << nbodies;
  if (nbodies) s << " (" << listOf(bodies, [](const BodyInfo* b) { return b->name; }) << ")";
  s << "\n  joints:       " << ntree;
  if (ntree) s << " (" << listOf(tree, [&](const JointInfo* j) {
    return path(j->component) + " " + jointTypeName(j->type);
  }) << ")";
  s << "\n  dofs:         nq = " << mech.nq << ", nu = " << mech.nu << "\n";
  s << "  constraints:  " << mech.constraints.size();
  if (!mech.constraints.empty()) {
    s << " (" << mech.holonomicRows() << " holonomic, " << mech.nonholonomicRows() << " nonholonomic rows: "
      << listOf(mech.constraints, [](const ConstraintInfo& c) { return c.name; }) << ")";
  }
  s << "\n  cut joints:   " << cuts.size();
  if (!cuts.empty()) s << " (" << listOf(cuts, [&](const JointInfo* j) { return path(j->component); }) << ")";
  s << "\n  forces:       " << mech.forces.size();
  if (!mech.forces.empty()) {
    s << " (" << listOf(mech.forces, [](const ForceInfo& f) {
      return f.name + " " + forceKindName(f.kind);
    }) << ")";
  }
  s << "\n  cables:       " << mech.cables.size();
  if (!mech.cables.empty()) s << " (" << listOf(mech.cables, [](const CableInfo& c) { return c.name; }) << ")";
  s << "\n  parameters:   " << nparams << " (" << nruntime << " changeable at run time)\n";
  return s.str();
}

nlohmann::json toJson(const sema::FlatModel& model, const Mechanism& mech) {
  const auto path = [&](int c) -> json {
    if (c < 0) return nullptr;
    return model.components[static_cast<std::size_t>(c)].path;
  };
  json out;
  out["format"] = "capstan-mechanism";
  out["version"] = 1;
  out["model"] = model.name;
  out["nq"] = mech.nq;
  out["nu"] = mech.nu;
  out["gravity"] = toJson(mech.gravity);

  json vars = json::array();
  for (const auto& v : model.variables) {
    if (v.kind == sema::VarKind::Continuous) continue;
    json j{{"path", v.path}, {"kind", varKindName(v.kind)}, {"type", sema::valueTypeName(v.type)},
           {"shape", v.shape}, {"unit", v.unit}};
    if (v.value) j["value"] = toJson(*v.value);
    if (v.evaluate) j["evaluate"] = true;
    if (v.structural) j["structural"] = true;
    if (!v.min.empty()) j["min"] = v.min.size() == 1 ? json(v.min[0]) : json(v.min);
    if (!v.max.empty()) j["max"] = v.max.size() == 1 ? json(v.max[0]) : json(v.max);
    if (!v.description.empty()) j["description"] = v.description;
    vars.push_back(j);
  }
  out["variables"] = vars;

  json comps = json::array();
  for (const auto& c : model.components) comps.push_back({{"path", c.path}, {"kind", c.kind}});
  out["components"] = comps;

  json frames = json::array();
  for (const auto& f : mech.frames) {
    json steps = json::array();
    for (const auto& st : f.path) steps.push_back({{"component", path(st.component)}, {"forward", st.forward}});
    frames.push_back({{"frame", model.components[static_cast<std::size_t>(f.component)].path + "." + f.connector},
                      {"body", f.body},
                      {"R_BF", toJson(f.X_BF.R)},
                      {"p_BF", toJson(f.X_BF.p)},
                      {"path", steps}});
  }
  out["frames"] = frames;

  json bodies = json::array();
  for (const auto& b : mech.bodies) {
    json members = json::array();
    for (int c : b.components) members.push_back(path(c));
    bodies.push_back({{"name", b.name},
                      {"frame", b.referenceFrame},
                      {"parent_joint", b.parentJoint},
                      {"mass", b.mass},
                      {"p_BoBcm_B", toJson(b.p_BoBcm_B)},
                      {"I_Bcm_B", toJson(b.I_Bcm_B)},
                      {"components", members}});
  }
  out["bodies"] = bodies;

  json joints = json::array();
  for (const auto& j : mech.joints) {
    joints.push_back({{"name", path(j.component)},
                      {"type", jointTypeName(j.type)},
                      {"frame_a", j.frameA},
                      {"frame_b", j.frameB},
                      {"parent", j.parentBody},
                      {"child", j.childBody},
                      {"reversed", j.reversed},
                      {"cut", j.cut},
                      {"q_index", j.qIndex},
                      {"u_index", j.uIndex},
                      {"nq", j.nq},
                      {"nu", j.nu}});
  }
  out["joints"] = joints;
  // What building the generated code needs: each external function's header and include folder.
  json externals = json::array();
  for (const sema::FlatFunction& f : model.functions)
    externals.push_back({{"name", f.name}, {"cpp_name", f.cppName}, {"include", f.include},
                         {"include_directory", f.includeDirectory}});
  out["external_functions"] = externals;

  json constraints = json::array();
  for (const auto& c : mech.constraints) {
    json j{{"name", c.name},
           {"kind", c.kind == ConstraintKind::LoopJoint ? "LoopJoint"
                    : c.kind == ConstraintKind::Coupler ? "Coupler"
                                                        : "SphereOnSphereContact"},
           {"holonomic", c.holonomic},
           {"nonholonomic", c.nonholonomic}};
    if (c.kind == ConstraintKind::LoopJoint) j["joint"] = c.joint;
    else if (c.kind == ConstraintKind::Coupler) j.update({{"follower", c.joint}, {"leader", c.leader}});
    else j.update({{"sphereF", path(c.sphereF)}, {"sphereB", path(c.sphereB)}, {"bodyF", c.bodyF}, {"bodyB", c.bodyB}});
    constraints.push_back(j);
  }
  out["constraints"] = constraints;

  json forces = json::array();
  for (const auto& f : mech.forces) {
    json j{{"name", f.name}, {"kind", forceKindName(f.kind)}, {"component", path(f.component)}};
    if (f.frameA >= 0) j["frame_a"] = f.frameA;
    if (f.frameB >= 0) j["frame_b"] = f.frameB;
    if (f.surfaceA >= 0) j["surfaceF"] = path(f.surfaceA);
    if (f.surfaceB >= 0) j["sphereB"] = path(f.surfaceB);
    if (f.cable >= 0) j["cable"] = f.cable;
    if (f.forceLaw >= 0) j["force_law"] = f.forceLaw;
    forces.push_back(j);
  }
  out["forces"] = forces;

  json cables = json::array();
  for (const auto& c : mech.cables) {
    json elems = json::array();
    for (const auto& e : c.path) {
      json je{{"component", path(e.component)}, {"kind", builtinInfo(e.isWrap ? ComponentKind::Wrap : ComponentKind::ViaPoint).kind}, {"body", e.body}};
      if (e.isWrap) je["surface"] = path(e.surface);
      elems.push_back(je);
    }
    cables.push_back({{"name", c.name}, {"origin", c.origin}, {"termination", c.termination}, {"path", elems}});
  }
  out["cables"] = cables;

  if (model.experiment) {
    json e = json::object();
    if (model.experiment->startTime) e["StartTime"] = *model.experiment->startTime;
    if (model.experiment->stopTime) e["StopTime"] = *model.experiment->stopTime;
    if (model.experiment->interval) e["Interval"] = *model.experiment->interval;
    if (model.experiment->tolerance) e["Tolerance"] = *model.experiment->tolerance;
    if (model.experiment->integrator) e["__capstan_integrator"] = *model.experiment->integrator;
    out["experiment"] = e;
  }
  return out;
}

}  // namespace capstan::mechanics
