#include "cli/faults.hpp"

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
  const Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(fault.q.data(), Eigen::Index(fault.q.size()));
  const Eigen::VectorXd u = Eigen::Map<const Eigen::VectorXd>(fault.u.data(), Eigen::Index(fault.u.size()));
  try {
    // The force laws (forwardDynamics), then the outputs: what the run evaluated.
    (void)interp.forwardDynamics(fault.t, q, u);
    (void)interp.outputs(fault.t, q, u);
  } catch (const codegen::ExternalCallFailed& x) {
    reportCallFailed(opts, loaded, x, fault.t, kept);
    return;
  } catch (const std::exception&) {
    // Something else fails there (a cable path): the driver's words below.
  }
  std::cerr << capstan::sim::thrownReport(fault.t, what, kept.rows);
}

void locateNonFinite(const Options& opts, const Loaded& loaded, codegen::Interpreter& interp,
                     const capstan::sim::FaultState& fault) {
  const Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(fault.q.data(), Eigen::Index(fault.q.size()));
  const Eigen::VectorXd u = Eigen::Map<const Eigen::VectorXd>(fault.u.data(), Eigen::Index(fault.u.size()));
  try {
    if (const auto n = nonFiniteForceLaw(interp, fault.t, q, u)) reportNonFinite(opts, loaded, *n);
  } catch (const codegen::ExternalCallFailed& x) {
    reportCallFailed(opts, loaded, x, fault.t);
  }
}

}  // namespace capstan::cli
