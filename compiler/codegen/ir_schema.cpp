#include "codegen/ir_schema.hpp"

#include "codegen/function_builder.hpp"
#include "mechanics/builtins.hpp"
#include "symbolic/printer.hpp"

namespace capstan::codegen {

ir::Model irHeader(const sema::FlatModel& model, const ModelLayout& layout, const TraceOptions& options,
                   bool massMatrixDynamic) {
  ir::Model ir;
  ir.ir_version = kIrVersion;
  ir.generator = "capstan " + options.capstanVersion;
  ir.source = {options.sourceName, model.name};
  ir.class_name = layout.className;
  ir.nq = layout.nq;
  ir.nu = layout.nu;
  ir.mass_matrix_dynamic = massMatrixDynamic;
  ir.derivatives = options.derivatives;
  ir.nb = static_cast<int>(layout.bodies.size());
  for (const JointLayout& j : layout.joints) {
    ir.joints.push_back({j.name, mechanics::jointTypeName(j.type()), j.body, j.parent, j.qIndex(), j.uIndex(), j.nq(),
                         j.nu(), j.reversed(), j.qNames, j.uNames});
    ir.q_names.insert(ir.q_names.end(), j.qNames.begin(), j.qNames.end());
    ir.u_names.insert(ir.u_names.end(), j.uNames.begin(), j.uNames.end());
    for (const std::string_view unit : capstan::jointQUnits(j.type())) ir.q_units.emplace_back(unit);
    for (const std::string_view unit : capstan::jointUUnits(j.type())) ir.u_units.emplace_back(unit);
    if (capstan::hasQuaternion(j.type())) ir.quaternions.push_back(j.qIndex());
  }
  for (std::size_t b = 0; b < layout.bodies.size(); ++b)
    ir.bodies.push_back({layout.bodies[b].name, layout.bodies[b].ident, b});

  for (const RuntimeParameter& p : layout.parameters) {
    std::vector<ir::ParameterSlot> slots;
    std::string init;
    if (p.shape.empty()) {
      init = symbolic::formatDouble(p.defaults.at(0));
      slots.push_back({p.name, "params." + p.ident});
    } else {
      for (std::size_t k = 0; k < p.size(); ++k) {
        init += (k ? ", " : "") + symbolic::formatDouble(p.defaults[k]);
        slots.push_back({p.elementName(k), index("params." + p.ident, static_cast<int>(k))});
      }
      init = "{" + init + "}";
    }
    ir.parameters.push_back({p.name, p.ident,
                             p.shape.empty() ? "double" : "std::array<double, " + std::to_string(p.size()) + ">", init,
                             p.shape, p.defaults, p.unit, p.description, std::move(slots)});
  }
  for (const IoVariable& v : layout.inputs) ir.inputs.push_back({v.name, v.ident, v.unit, v.description});
  for (const IoVariable& v : layout.outputs) ir.outputs.push_back({v.name, v.ident, v.unit, v.description});
  return ir;
}

}  // namespace capstan::codegen
