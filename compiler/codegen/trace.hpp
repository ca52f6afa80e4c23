// Tracing: runs the runtime's multibody algorithms with Scalar =
// symbolic::Expr over the model's runtime Mechanism and prints the results as
// straight-line C++ blocks, one per model element. The result is the JSON IR
// (docs/ir.md, codegen/ir.hpp) that the templates render into the model
// header.
#pragma once

#include <string>

#include "codegen/ir.hpp"
#include "codegen/layout.hpp"
#include "mechanics/mechanism.hpp"
#include "sema/flat.hpp"
#include "syntax/source.hpp"

namespace capstan::codegen {

inline constexpr int kIrVersion = 5;

struct TraceOptions {
  std::string capstanVersion;  // "0.1.0"
  std::string sourceName;      // the model file as shown in the banner: `double_pendulum.cap`
  // Also the functions emitted only on request (GeneratedFunction::onRequest):
  // forwardDynamicsDerivatives.
  bool derivatives = false;
  // forwardDynamicsDerivatives by symbolic differentiation of the traced
  // forward dynamics instead of the analytical recursions: the test oracle
  // (`compile --derivatives=symbolic`).
  bool symbolicDerivatives = false;
};

// The IR of a model whose layout has no Unsupported entries. Throws
// UnsupportedExpression for an expression it cannot translate.
ir::Model traceModel(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
                     const syntax::SourceManager& sources, const TraceOptions& options);

}  // namespace capstan::codegen
