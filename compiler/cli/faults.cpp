#include "cli/faults.hpp"

#include <Eigen/Eigenvalues>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/external.hpp"
#include "codegen/layout.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::cli {

namespace {

std::string timeText(double t) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", t);
  return b;
}

// |lambda| of the fastest mode of the dynamics linearized at the start
// state: the largest eigenvalue magnitude of [0 I; dudot/dq dudot/du] (in
// the tangent coordinates of q, which N(q) maps u onto), or 0 where the
// derivatives are not available (constraints, cables, external functions).
double fastestMode(codegen::Interpreter& interp) {
  Eigen::VectorXd q, u;
  interp.initialState(q, u);
  const auto n = static_cast<Eigen::Index>(u.size());
  if (n == 0) return 0.0;
  try {
    const codegen::DynamicsDerivatives d = interp.forwardDynamicsDerivatives(0.0, q, u);
    Eigen::MatrixXd A = Eigen::MatrixXd::Zero(2 * n, 2 * n);
    A.topRightCorner(n, n).setIdentity();
    A.bottomLeftCorner(n, n) = d.dudot_dq;
    A.bottomRightCorner(n, n) = d.dudot_du;
    if (!A.allFinite()) return 0.0;
    return Eigen::EigenSolver<Eigen::MatrixXd>(A, false).eigenvalues().cwiseAbs().maxCoeff();
  } catch (const std::exception&) {
    return 0.0;
  }
}

// NoteNonFiniteStep: the step against the fastest mode, and what to do.
// rk4 is stable for h |lambda| up to about 2.8 on the real and imaginary
// axes, semi-implicit Euler for h omega < 2 on an undamped oscillation.
void noteNonFiniteStep(codegen::Interpreter& interp, capstan::sim::Integrator integrator, double dt) {
  const double lambda = fastestMode(interp);
  const bool fixedStep = integrator == capstan::sim::Integrator::rk4 || integrator == capstan::sim::Integrator::euler;
  const double limit = integrator == capstan::sim::Integrator::rk4 ? 2.8 : 2.0;
  char mode[96] = "";
  if (lambda > 0)
    std::snprintf(mode, sizeof mode, "the fastest mode at the start state has |lambda| = %.3g 1/s", lambda);
  std::string where, todo;
  if (fixedStep) {
    char step[64];
    std::snprintf(step, sizeof step, " at %s's step of %g s", std::string(capstan::sim::name(integrator)).c_str(), dt);
    where = step;
    if (lambda > 0) {
      char stable[160];
      std::snprintf(stable, sizeof stable, " (%s; %s is stable for steps below about %.2g s)", mode,
                    std::string(capstan::sim::name(integrator)).c_str(), limit / lambda);
      where += stable;
      // A round step a little below the limit.
      const double below = std::pow(10.0, std::floor(std::log10(limit / lambda)));
      char use[64];
      std::snprintf(use, sizeof use, "`--dt %g`", below);
      todo = "use " + std::string(use) + " or smaller, or `--integrator cvode` for a stiff model";
    } else {
      todo = "use a smaller `--dt`, or `--integrator cvode` for a stiff model";
    }
  } else {
    if (lambda > 0) where = std::string(" (") + mode + ")";
    todo = integrator == capstan::sim::Integrator::cvode
               ? "check the force laws' signs and sizes, and give the state a physical size"
               : "for a stiff model use `--integrator cvode`; else check the force laws' signs and sizes";
  }
  warn(syntax::DiagKind::NoteNonFiniteStep, where, todo);
}

}  // namespace

std::optional<NonFiniteLaw> nonFiniteForceLaw(codegen::Interpreter& model, double t, const Eigen::VectorXd& q,
                                              const Eigen::VectorXd& u) {
  for (const auto& [law, value] : model.forceLawValues(t, q, u))
    if (!std::isfinite(value)) return NonFiniteLaw{law, value, t};
  return std::nullopt;
}

void reportNonFinite(const Options& opts, const Loaded& loaded, const NonFiniteLaw& n) {
  const sema::FlatForceLaw& law = loaded.flat->forceLaws.at(static_cast<std::size_t>(n.law));
  syntax::DiagnosticEngine diags;
  diags.report(syntax::DiagKind::NonFiniteForceLaw, law.rhs ? law.rhs->range : law.range,
               codegen::forceLawName(*loaded.flat, n.law), std::isnan(n.value) ? "not a number (NaN)" : (n.value > 0 ? "+infinity" : "-infinity"), timeText(n.time));
  std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
}

void reportCallFailed(const Options& opts, const Loaded& loaded, const codegen::ExternalCallFailed& e, double t,
                      const std::optional<RowsKept>& kept) {
  const sema::FlatFunction& f = loaded.flat->functions.at(static_cast<std::size_t>(e.function));
  syntax::DiagnosticEngine diags;
  syntax::Diagnostic& d = externalCrashSignal() != 0
                              ? diags.report(syntax::DiagKind::ExternalCallCrashed, e.call, f.cppName, timeText(t), e.what())
                              : diags.report(syntax::DiagKind::ExternalCallFailed, e.call, f.cppName, timeText(t), e.what());
  d.note(syntax::DiagKind::NoteDeclaredHere, f.externalRange, f.name);
  if (kept)
    d.note(syntax::DiagKind::NoteRowsWritten, syntax::SourceRange{}, capstan::sim::rowCount(kept->rows),
           kept->output == "-" ? std::string() : " in `" + kept->output + "`");
  std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
}

void locateThrown(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                  const capstan::sim::FaultState& fault, const std::string& what, const RowsKept& kept) {
  // Something else fails there (a cable path): the driver's words.
  if (!locateCrash(opts, loaded, interp, fault, kept)) std::cerr << capstan::sim::thrownReport(fault.t, what, kept.rows);
}

bool locateCrash(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                 const capstan::sim::FaultState& fault, const RowsKept& kept) {
  const Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(fault.q.data(), Eigen::Index(fault.q.size()));
  const Eigen::VectorXd u = Eigen::Map<const Eigen::VectorXd>(fault.u.data(), Eigen::Index(fault.u.size()));
  try {
    // The force laws (forwardDynamics), then the outputs: what the run evaluated.
    (void)interp.forwardDynamics(fault.t, q, u);
    (void)interp.outputs(fault.t, q, u);
  } catch (const codegen::ExternalCallFailed& x) {
    reportCallFailed(opts, loaded, x, fault.t, kept);
    return true;
  } catch (const std::exception&) {
  }
  return false;
}

void locateNonFinite(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                     const capstan::sim::FaultState& fault, capstan::sim::Integrator integrator, double dt) {
  const Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(fault.q.data(), Eigen::Index(fault.q.size()));
  const Eigen::VectorXd u = Eigen::Map<const Eigen::VectorXd>(fault.u.data(), Eigen::Index(fault.u.size()));
  try {
    if (const auto n = nonFiniteForceLaw(interp, fault.t, q, u)) {
      reportNonFinite(opts, loaded, *n);
      return;
    }
  } catch (const codegen::ExternalCallFailed& x) {
    reportCallFailed(opts, loaded, x, fault.t);
    return;
  }
  noteNonFiniteStep(interp, integrator, dt);
}

void reportGimbalLock(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout, int bushing,
                      const std::string& error) {
  syntax::DiagnosticEngine diags;
  int k = 0;
  for (const codegen::ForceElementLayout& e : layout.forceElements) {
    if (e.kind != mechanics::ForceKind::Bushing || k++ != bushing) continue;
    const syntax::SourceRange at = loaded.flat->components.at(static_cast<std::size_t>(e.component)).range;
    if (error.empty()) diags.report(syntax::DiagKind::NoteGimbalLock, at, e.name);
    else diags.report(syntax::DiagKind::RunStopped, syntax::SourceRange{}, error).note(syntax::DiagKind::NoteGimbalLock, at, e.name);
    break;
  }
  if (diags.diagnostics().empty() && !error.empty()) diags.report(syntax::DiagKind::RunStopped, syntax::SourceRange{}, error);
  std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
}

}  // namespace capstan::cli
