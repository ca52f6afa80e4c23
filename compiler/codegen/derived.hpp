// The generated class's Derived cache: what the generated functions compute
// from the runtime parameters alone, computed once by updateDerived() when
// `params` changed and read by every evaluation (docs/generated-code.md,
// "Parameters"). Two sources fill it:
//   - hoist(): the parameter stage of the joint-frame algorithms
//     (local::Data: X_PF, each joint's F frame in its parent's joint frame;
//     I_K, each body's spatial inertia about its joint frame), replaced by
//     cached symbols before an algorithm is traced;
//   - hoistParameterOnly(): every other subexpression of a function's traced
//     values that reads parameters only (a leaf body's articulated inertia,
//     the L^T D L pivots of a constant mass matrix block, a product of
//     lengths), found after tracing, as a compiler hoists loop invariants.
// Entries that are constants or plain parameters stay as they are, so the
// code keeps its structural zeros.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <capstan/local_dynamics.hpp>
#include <nlohmann/json.hpp>

#include "codegen/citations.hpp"
#include "codegen/function_builder.hpp"
#include "codegen/layout.hpp"
#include "symbolic/printer.hpp"

namespace capstan::codegen {

class DerivedValues {
 public:
  using Expr = symbolic::Expr;

  DerivedValues(const ModelLayout& layout, const Citations& cite) : layout_(layout), cite_(cite) {}

  // Replaces the parameter stage of `data` by its cached values.
  void hoist(local::Data<Expr>& data);

  // Rewrites `values` (one function's, all blocks) so that each largest
  // subexpression that reads parameters only, and each parameter-only group
  // of terms of a sum or factors of a product whose other operands read the
  // state, is read from the cache. Whether an expression reads the state is
  // decided by its symbols: `params.` and `derived_.` are parameters;
  // q, u, time and inputs are not.
  // Each entry is named after the site of the value it was first taken
  // out of (finish()).
  void hoistParameterOnly(std::vector<Expr>& values, const std::vector<FunctionBuilder::ValueSite>& sites);

  // Keeps the entries that `functions` (the IR's, as emitted) read, each
  // of hoistParameterOnly()'s a field of its own named after its site
  // (`crankCoupler_M_0_1`: a part of M(0, 1) in the block of joint
  // 'crankCoupler'), a letter added where a name repeats; adds refreshDerived() to the functions that read any
  // and updateDerived() to `functions`. Returns the IR's "derived" list.
  nlohmann::json finish(nlohmann::json& functions);

 private:
  struct DerivedArray {
    std::string name;  // Derived member: `I_KLink2Body`
    int size = 0;
    std::string comment;                       // what it holds, for whom
    std::vector<symbolic::Assignment> values;  // `derived_.I_KLink2Body[4] = ...`
  };

  // `e`, or the Derived entry `array[element]` that caches it (element -1:
  // the array's next).
  Expr derive(const Expr& e, std::size_t array, int element);
  std::size_t derivedArray(const std::string& name, int size, const std::string& comment);
  // `e` if it costs nothing to read (a constant, a symbol, k * symbol), else
  // its cached entry.
  Expr lift(const Expr& e);

  const ModelLayout& layout_;
  const Citations& cite_;
  std::vector<DerivedArray> derived_;
  std::map<std::string, std::size_t> derivedIndex_;
  std::unordered_map<std::uint32_t, Expr> derivedSymbol_;  // by the cached expression's node id
  // The sites of each hoistParameterOnly() call's values; where each
  // hoisted entry (by target) was read, as (call, site) in that order; the
  // site of the value being walked (or -1).
  std::vector<std::vector<FunctionBuilder::ValueSite>> calls_;
  std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> hoistedSites_;
  long site_ = -1;
  // The site a hoisted entry is named after: of the first block of the
  // emitted `functions` that reads it.
  std::map<std::string, FunctionBuilder::ValueSite> namingSites(const nlohmann::json& functions) const;
};

}  // namespace capstan::codegen
