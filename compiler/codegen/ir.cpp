#include "codegen/ir.hpp"

#include <algorithm>
#include <stdexcept>

namespace capstan::codegen::ir {

using json = nlohmann::json;

namespace {

void addOnce(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

// Every key of `j` is one of `known`; else the writer and the struct disagree.
void onlyKnownKeys(const json& j, const char* what, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
      throw std::logic_error(std::string("IR ") + what + " has key `" + key + "`, which codegen/ir.hpp does not declare");
  }
}

template <class T>
void optional(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

template <class T>
void readOptional(const json& j, const char* key, std::optional<T>& value) {
  if (j.contains(key)) value = j.at(key).get<T>();
}

}  // namespace

void summarize(Model& model) {
  model.external_includes.clear();
  for (const External& e : model.externals)
    if (!e.include.empty()) addOnce(model.external_includes, e.include);
  model.includes.clear();
  for (const Function& f : model.functions)
    if (f.includes)
      for (const std::string& i : *f.includes) addOnce(model.includes, i);
  model.holonomic_rows = model.constraint_rows = model.contact_count = 0;
  for (const Constraint& c : model.constraints) {
    model.holonomic_rows += c.holonomic;
    model.constraint_rows += c.holonomic + c.nonholonomic;
    model.contact_count += c.contact >= 0 ? 1 : 0;
  }
}

void to_json(json& j, const Source& v) { j = {{"file", v.file}, {"model", v.model}}; }

void to_json(json& j, const Joint& v) {
  j = {{"name", v.name},       {"type", v.type}, {"body", v.body},         {"parent", v.parent},
       {"q_index", v.q_index}, {"u_index", v.u_index}, {"nq", v.nq},     {"nu", v.nu},
       {"reversed", v.reversed}, {"q_names", v.q_names}, {"u_names", v.u_names}};
}

void to_json(json& j, const Body& v) { j = {{"name", v.name}, {"ident", v.ident}, {"index", v.index}}; }

void to_json(json& j, const ParameterSlot& v) { j = {{"name", v.name}, {"lvalue", v.lvalue}}; }

void to_json(json& j, const Parameter& v) {
  j = {{"name", v.name},   {"ident", v.ident},         {"cpp_type", v.cpp_type}, {"initializer", v.initializer},
       {"shape", v.shape}, {"default", v.default_values}, {"unit", v.unit},      {"description", v.description},
       {"slots", v.slots}};
}

void to_json(json& j, const Variable& v) {
  j = {{"name", v.name}, {"ident", v.ident}, {"unit", v.unit}, {"description", v.description}};
}

void to_json(json& j, const External& v) {
  j = {{"name", v.name}, {"cpp_name", v.cpp_name}, {"include", v.include}, {"line", v.line}};
}

void to_json(json& j, const Frame& v) {
  j = {{"name", v.name}, {"body", v.body}, {"body_ident", v.body_ident}, {"point", v.point}};
}

void to_json(json& j, const Constraint& v) {
  j = {{"name", v.name},
       {"kind", v.kind},
       {"holonomic_row", v.holonomic_row},
       {"holonomic", v.holonomic},
       {"nonholonomic_row", v.nonholonomic_row},
       {"nonholonomic", v.nonholonomic},
       {"contact", v.contact}};
}

void to_json(json& j, const CableObstacle& v) {
  j = {{"name", v.name}, {"kind", v.kind}, {"body", v.body}};
  if (v.surface) {
    j["surface"] = v.surface->surface;
    j["surface_name"] = v.surface->surface_name;
    j["near"] = v.surface->near;
    j["friction"] = v.surface->friction;
  }
}

void to_json(json& j, const CableSpring& v) {
  j = {{"name", v.name},
       {"line", v.line},
       {"stiffness", v.stiffness},
       {"slack_length", v.slack_length},
       {"dissipation", v.dissipation}};
}

void to_json(json& j, const CableActuator& v) { j = {{"name", v.name}, {"line", v.line}}; }

void to_json(json& j, const Cable& v) {
  j = {{"name", v.name},
       {"line", v.line},
       {"first_frame", v.first_frame},
       {"first_actuator", v.first_actuator},
       {"obstacles", v.obstacles},
       {"springs", v.springs},
       {"actuators", v.actuators}};
}

void to_json(json& j, const Derived& v) {
  j = {{"name", v.name}, {"size", v.size}, {"comment", v.comment}, {"scalar", v.scalar}};
}

void to_json(json& j, const Block& v) { j = {{"comment", v.comment}, {"code", v.code}}; }

void to_json(json& j, const Part& v) { j = {{"name", v.name}, {"blocks", v.blocks}}; }

void to_json(json& j, const Kernel& v) {
  j = {{"name", v.name}, {"params", v.params}, {"doc", v.doc}, {"code", v.code}, {"inline", v.inline_}};
}

void to_json(json& j, const Function& v) {
  j = {{"name", v.name},         {"return_type", v.return_type}, {"params", v.params},
       {"doc", v.doc},           {"operations", v.operations},   {"opening", v.opening},
       {"prologue", v.prologue}, {"blocks", v.blocks},           {"epilogue", v.epilogue},
       {"parts", v.parts},       {"work", v.work}};
  optional(j, "key", v.key);
  optional(j, "work_type", v.work_type);
  optional(j, "part_params", v.part_params);
  optional(j, "args", v.args);
  optional(j, "method", v.method);
  optional(j, "includes", v.includes);
  optional(j, "access", v.access);
  optional(j, "fused", v.fused);
  optional(j, "kernels", v.kernels);
}

void to_json(json& j, const Dependency& v) { j = {{"states", v.states}, {"time", v.time}}; }

void to_json(json& j, const Dependencies& v) {
  j = json::object();
  j["qdot"] = v.qdot;
  optional(j, "udot", v.udot);
  j["outputs"] = v.outputs;
  j["kinetic_energy"] = v.kinetic_energy;
  optional(j, "potential_energy", v.potential_energy);
}

void to_json(json& j, const Model& v) {
  j = json::object();
  j["ir_version"] = v.ir_version;
  j["generator"] = v.generator;
  j["source"] = v.source;
  j["class_name"] = v.class_name;
  j["nq"] = v.nq;
  j["nu"] = v.nu;
  j["nb"] = v.nb;
  j["mass_matrix_dynamic"] = v.mass_matrix_dynamic;
  j["derivatives"] = v.derivatives;
  j["joints"] = v.joints;
  j["q_names"] = v.q_names;
  j["u_names"] = v.u_names;
  j["q_units"] = v.q_units;
  j["u_units"] = v.u_units;
  j["quaternions"] = v.quaternions;
  j["bodies"] = v.bodies;
  j["parameters"] = v.parameters;
  j["inputs"] = v.inputs;
  j["outputs"] = v.outputs;
  j["externals"] = v.externals;
  j["external_includes"] = v.external_includes;
  j["functions"] = v.functions;
  j["includes"] = v.includes;
  j["frames"] = v.frames;
  j["quadratic"] = v.quadratic;
  j["recursions"] = v.recursions;
  j["cables"] = v.cables;
  j["cable_obstacle_count"] = v.cable_obstacle_count;
  j["cable_actuator_count"] = v.cable_actuator_count;
  j["bushings"] = v.bushings;
  j["event_indicators"] = v.event_indicators;
  j["event_indicators_traced"] = v.event_indicators_traced;
  j["constraints"] = v.constraints;
  j["constraint_kinematics"] = v.constraint_kinematics;
  j["holonomic_rows"] = v.holonomic_rows;
  j["constraint_rows"] = v.constraint_rows;
  j["contact_count"] = v.contact_count;
  j["derived"] = v.derived;
  optional(j, "dependencies", v.dependencies);
}

void from_json(const json& j, Block& v) {
  onlyKnownKeys(j, "block", {"comment", "code"});
  j.at("comment").get_to(v.comment);
  j.at("code").get_to(v.code);
}

void from_json(const json& j, Part& v) {
  onlyKnownKeys(j, "part", {"name", "blocks"});
  j.at("name").get_to(v.name);
  j.at("blocks").get_to(v.blocks);
}

void from_json(const json& j, Function& v) {
  onlyKnownKeys(j, "function",
                {"name", "key", "return_type", "params", "doc", "operations", "opening", "prologue", "blocks",
                 "epilogue", "parts", "work", "work_type", "part_params", "args", "method", "includes", "access",
                 "fused", "kernels"});
  j.at("name").get_to(v.name);
  readOptional(j, "key", v.key);
  j.at("return_type").get_to(v.return_type);
  j.at("params").get_to(v.params);
  j.at("doc").get_to(v.doc);
  j.at("operations").get_to(v.operations);
  j.at("opening").get_to(v.opening);
  j.at("prologue").get_to(v.prologue);
  j.at("blocks").get_to(v.blocks);
  j.at("epilogue").get_to(v.epilogue);
  j.at("parts").get_to(v.parts);
  j.at("work").get_to(v.work);
  readOptional(j, "work_type", v.work_type);
  readOptional(j, "part_params", v.part_params);
  readOptional(j, "args", v.args);
  readOptional(j, "method", v.method);
  readOptional(j, "includes", v.includes);
  readOptional(j, "access", v.access);
  readOptional(j, "fused", v.fused);
  readOptional(j, "kernels", v.kernels);
}

void from_json(const json& j, Kernel& v) {
  onlyKnownKeys(j, "kernel", {"name", "params", "doc", "code", "inline"});
  j.at("name").get_to(v.name);
  j.at("params").get_to(v.params);
  j.at("doc").get_to(v.doc);
  j.at("code").get_to(v.code);
  j.at("inline").get_to(v.inline_);
}

void from_json(const json& j, Derived& v) {
  onlyKnownKeys(j, "derived entry", {"name", "size", "comment", "scalar"});
  j.at("name").get_to(v.name);
  j.at("size").get_to(v.size);
  j.at("comment").get_to(v.comment);
  j.at("scalar").get_to(v.scalar);
}

}  // namespace capstan::codegen::ir
