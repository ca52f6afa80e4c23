#include "cli/constraints.hpp"

#include <Eigen/QR>

#include <capstan/sim/simulate.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace capstan::cli {

namespace {

// The constraint that owns row `row` (a PositionErrors or ConstraintVector
// index), or nullptr.
const codegen::ConstraintLayout* constraintOfRow(const codegen::ModelLayout& layout, int row) {
  for (const codegen::ConstraintLayout& c : layout.constraints) {
    if (row >= c.holonomicRow && row < c.holonomicRow + c.holonomic) return &c;
    if (row >= c.nonholonomicRow && row < c.nonholonomicRow + c.nonholonomic) return &c;
  }
  return nullptr;
}

syntax::SourceRange rangeOf(const Loaded& loaded, const codegen::ConstraintLayout& c) {
  return loaded.flat->components.at(static_cast<std::size_t>(c.component)).range;
}

}  // namespace

capstan::ConstraintSettings constraintSettings(const Options& opts) {
  capstan::ConstraintSettings s;
  if (opts.baumgarte) s.baumgarteTimeConstant = *opts.baumgarte;
  if (opts.constraintTolerance) s.tolerance = *opts.constraintTolerance;
  return s;
}

bool assemble(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
              codegen::Interpreter& interp, const capstan::ConstraintSettings& settings, Eigen::VectorXd& q,
              Eigen::VectorXd& u) {
  const codegen::InterpretedModel model(interp);
  capstan::ConstraintSolver<codegen::InterpretedModel> solver(model, capstan::sim::constraintRowRanges(model), settings);
  try {
    solver.project(q, u);
    return true;
  } catch (const capstan::ProjectionFailure& e) {
    const codegen::ConstraintLayout* c = constraintOfRow(layout, e.row);
    if (!c) throw;
    const Eigen::VectorXd perr = interp.constraintRows(q, u).positionErrors;
    char off[32];
    std::snprintf(off, sizeof off, "%.3g", e.row < perr.size() ? perr[e.row] : 0.0);
    syntax::DiagnosticEngine diags;
    diags.report(syntax::DiagKind::AssemblyFailed, rangeOf(loaded, *c), c->name, off);
    std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
    return false;
  }
}

void warnMovedStart(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                    const Eigen::VectorXd& q0, const Eigen::VectorXd& u0, const Eigen::VectorXd& q,
                    const Eigen::VectorXd& u) {
  syntax::DiagnosticEngine diags;
  for (const codegen::JointLayout& j : layout.joints) {
    // The start value as the model sets it: a modifier, not the built-in's
    // default (bound in the same file as the joint's `q` is declared).
    const auto variable = [&](const std::string& name) -> const sema::FlatVariable* {
      const int v = loaded.flat->findVariable(j.name + "." + name);
      return v < 0 ? nullptr : &loaded.flat->variables[static_cast<std::size_t>(v)];
    };
    const sema::FlatVariable* coordinate = variable("q");
    for (const bool speeds : {false, true}) {
      const sema::FlatVariable* start = variable(speeds ? "u0" : "q0");
      if (!start || !coordinate || !start->binding || start->binding->range.file == coordinate->range.file) continue;
      const int n = speeds ? j.nu() : j.nq(), at = speeds ? j.uIndex() : j.qIndex();
      const Eigen::VectorXd& before = speeds ? u0 : q0;
      const Eigen::VectorXd& after = speeds ? u : q;
      for (int k = 0; k < n; ++k) {
        const double from = before[at + k], to = after[at + k];
        if (!(std::abs(to - from) > kMovedStartTolerance * std::max(1.0, std::abs(from)))) continue;
        const std::vector<std::string>& names = speeds ? j.uNames : j.qNames;
        diags.report(syntax::DiagKind::AssemblyMovedStart, start->binding->range, names.at(static_cast<std::size_t>(k)), from, to,
                     start->path);
      }
    }
  }
  if (!diags.diagnostics().empty()) std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
}

void warnRedundantRows(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                       codegen::Interpreter& interp, const Eigen::VectorXd& q, const std::string& at) {
  const Eigen::MatrixXd G = interp.constraintRows(q, Eigen::VectorXd::Zero(layout.nu)).G;
  if (G.rows() == 0) return;
  // Rows of G taken greedily by a column-pivoted QR of G^T: the first
  // rank() pivots are independent rows, the others depend on them.
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(G.transpose());
  qr.setThreshold(capstan::ConstraintSettings{}.rankThreshold);
  const auto rank = static_cast<int>(qr.rank());
  if (rank == G.rows()) return;
  std::vector<int> dependent(layout.constraints.size(), 0), vanishing(layout.constraints.size(), 0);
  const double scale = std::max(1.0, G.cwiseAbs().maxCoeff());
  for (Eigen::Index k = rank; k < G.rows(); ++k) {
    const int row = qr.colsPermutation().indices()[k];
    const codegen::ConstraintLayout* c = constraintOfRow(layout, row);
    if (!c) continue;
    const auto i = static_cast<std::size_t>(c - layout.constraints.data());
    ++dependent[i];
    if (G.row(row).cwiseAbs().maxCoeff() <= capstan::ConstraintSettings{}.rankThreshold * scale) ++vanishing[i];
  }
  syntax::DiagnosticEngine diags;
  // At the first constraint with dependent rows; a note for each.
  syntax::Diagnostic* warning = nullptr;
  for (std::size_t i = 0; i < layout.constraints.size(); ++i) {
    if (dependent[i] == 0) continue;
    const codegen::ConstraintLayout& c = layout.constraints[i];
    if (!warning) {
      warning = &diags.report(syntax::DiagKind::RedundantConstraints, rangeOf(loaded, c),
                              rank, G.rows(), at);
    }
    const std::string why =
        vanishing[i] == dependent[i] ? " (they vanish here: the loop moves in a plane, or the rows' directions have no motion to forbid)" : "";
    warning->note(syntax::DiagKind::NoteDependentRows, rangeOf(loaded, c),
                  dependent[i], c.holonomic + c.nonholonomic, c.name, why);
  }
  if (warning) std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
}

}  // namespace capstan::cli
