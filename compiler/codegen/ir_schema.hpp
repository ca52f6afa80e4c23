// The IR's model description (docs/ir.md): everything but the functions
// and the Derived cache, which tracing adds.
#pragma once

#include "codegen/ir.hpp"
#include "codegen/layout.hpp"
#include "codegen/trace.hpp"
#include "sema/flat.hpp"

namespace capstan::codegen {

// `massMatrixDynamic`: whether MassMatrix is dynamic-size (trace.cpp).
ir::Model irHeader(const sema::FlatModel& model, const ModelLayout& layout, const TraceOptions& options,
                   bool massMatrixDynamic);

}  // namespace capstan::codegen
