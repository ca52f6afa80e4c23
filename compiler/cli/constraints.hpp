// Shared by simulate and eval for models with constraints: assembling the
// initial state with the reference interpreter, and finding rows that are
// redundant at a state, both reported as located diagnostics.
#pragma once

#include <Eigen/Core>

#include "cli/options.hpp"
#include "codegen/interpret.hpp"
#include "codegen/layout.hpp"

namespace capstan::cli {

// The constraint solver's settings from the command line (`--baumgarte`,
// `--constraint-tol`).
capstan::ConstraintSettings constraintSettings(const Options& opts);

// Moves (q, u) onto the constraints (the nearest state, to first order, as
// the driver does before it integrates). Reports AssemblyFailed at the
// constraint left with the largest error and returns false when it cannot.
bool assemble(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
              codegen::Interpreter& interp, const capstan::ConstraintSettings& settings, Eigen::VectorXd& q,
              Eigen::VectorXd& u);

// Warns (AssemblyMovedStart, at the modifier) for each coordinate or speed
// whose start value the model sets (`q0`, `u0`) and the assembly moved
// from (q0, u0) to (q, u) by more than kMovedStartTolerance (relative, or
// absolute below 1): the run starts elsewhere than the model says.
inline constexpr double kMovedStartTolerance = 1e-3;
void warnMovedStart(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                    const Eigen::VectorXd& q0, const Eigen::VectorXd& u0, const Eigen::VectorXd& q,
                    const Eigen::VectorXd& u);

// Warns (RedundantConstraints, a note per constraint with dependent rows)
// when the rows of G(q) are not independent: a planar loop's out-of-plane
// rows, two constraints that repeat each other. `at` says where ("the
// initial state", "t = 0.5").
void warnRedundantRows(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                       codegen::Interpreter& interp, const Eigen::VectorXd& q, const std::string& at);

}  // namespace capstan::cli
