#include "codegen/ir_schema.hpp"

#include "codegen/function_builder.hpp"
#include "mechanics/builtins.hpp"
#include "symbolic/printer.hpp"

namespace capstan::codegen {

using json = nlohmann::json;

json irHeader(const sema::FlatModel& model, const ModelLayout& layout, const TraceOptions& options,
            bool massMatrixDynamic) {
  json ir;
  ir["ir_version"] = kIrVersion;
  ir["generator"] = "capstan " + options.capstanVersion;
  ir["source"] = {{"file", options.sourceName}, {"model", model.name}};
  ir["class_name"] = layout.className;
  ir["nq"] = layout.nq;
  ir["nu"] = layout.nu;
  ir["mass_matrix_dynamic"] = massMatrixDynamic;
  ir["nb"] = static_cast<int>(layout.bodies.size());
  json joints = json::array();
  std::vector<std::string> qNames, uNames;
  json quaternions = json::array();
  for (const JointLayout& j : layout.joints) {
    joints.push_back({{"name", j.name},
                      {"type", mechanics::jointTypeName(j.type())},
                      {"body", j.body},
                      {"parent", j.parent},
                      {"q_index", j.qIndex()},
                      {"u_index", j.uIndex()},
                      {"nq", j.nq()},
                      {"nu", j.nu()},
                      {"reversed", j.reversed()},
                      {"q_names", j.qNames},
                      {"u_names", j.uNames}});
    qNames.insert(qNames.end(), j.qNames.begin(), j.qNames.end());
    uNames.insert(uNames.end(), j.uNames.begin(), j.uNames.end());
    if (j.type() == mechanics::JointType::Ball || j.type() == mechanics::JointType::Free) quaternions.push_back(j.qIndex());
  }
  ir["joints"] = joints;
  ir["q_names"] = qNames;
  ir["u_names"] = uNames;
  ir["quaternions"] = quaternions;
  json bodies = json::array();
  for (std::size_t b = 0; b < layout.bodies.size(); ++b)
    bodies.push_back({{"name", layout.bodies[b].name}, {"ident", layout.bodies[b].ident}, {"index", b}});
  ir["bodies"] = bodies;

  json params = json::array();
  for (const RuntimeParameter& p : layout.parameters) {
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
  for (const IoVariable& v : layout.inputs)
    inputs.push_back({{"name", v.name}, {"ident", v.ident}, {"unit", v.unit}, {"description", v.description}});
  for (const IoVariable& v : layout.outputs)
    outputs.push_back({{"name", v.name}, {"ident", v.ident}, {"unit", v.unit}, {"description", v.description}});
  ir["inputs"] = inputs;
  ir["outputs"] = outputs;
  return ir;
}

}  // namespace capstan::codegen
