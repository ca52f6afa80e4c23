// A stiff integrator, side by side in one run (docs/performance.md, "A stiff
// integrator"): for each model, from its initial state to its end time at
// one tolerance,
//   dopri5                Dormand-Prince 5(4) (capstan/integrators.hpp)
//   cvode, exact          CVODE with the Jacobian from the generated
//                         forwardDynamicsDerivatives (FirstOrder::jacobian)
//   cvode, quotients      CVODE with its own difference-quotient Jacobian
//                         (nq + nu right-hand sides per Jacobian)
// and both cvode runs again at a 100x tighter tolerance. Per run: steps,
// error-test failures, right-hand-side evaluations (those for Jacobians
// included), Jacobians, LU factorizations, Newton iterations, the median
// thread CPU time over STIFF_REPEATS runs (default 5), and the distance to
// a dopri5 reference at 1e-4 x the
// tolerance (max over the output grid of |x - x_ref| / max(1, max |x_ref|)
// per coordinate, as tests/cli's `stiff`). Then the cost of one
// right-hand side and of one exact Jacobian. Never a timed test.
#include "StiffChain.hpp"
#include "StiffChain10.hpp"
#include "StiffFreeBody.hpp"
#include "timing.hpp"

#include <capstan/cvode.hpp>
#include <capstan/integrators.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using bench::clobber;
using bench::threadSeconds;

// The generated model as a mechanical system with its derivatives, as the
// driver of `capstan simulate --integrator cvode` has it.
template <class Model>
struct Mechanical {
  using VectorQ = typename Model::Q;
  using VectorU = typename Model::U;
  using MatrixU = typename Model::MassMatrix;
  const Model& model;
  int nq() const { return Model::nq; }
  int nu() const { return Model::nu; }
  void qdot(const VectorQ& q, const VectorU& u, VectorQ& qd) const { model.qdot(q, u, qd); }
  void udot(double t, const VectorQ& q, const VectorU& u, VectorU& ud) const { model.forwardDynamics(t, q, u, ud); }
  void normalize(VectorQ& q) const { Model::normalizeQuaternions(q); }
  void udotDerivatives(double t, const VectorQ& q, const VectorU& u, MatrixU& dq, MatrixU& du) const {
    MatrixU dtau;
    model.forwardDynamicsDerivatives(t, q, u, dq, du, dtau);
  }
};

struct Result {
  std::string name;
  double tolerance = 0;
  long steps = 0, evaluations = 0, jacobians = 0, newton = 0, factorizations = 0, errorTests = 0;
  double cpu = 0, error = 0;
};

template <class Model>
void benchModel(const char* name, double tEnd, double dt, double tolerance, int repeats) {
  using Sys = Mechanical<Model>;
  using X = Eigen::Matrix<double, Model::nq + Model::nu, 1>;
  Model model;
  typename Model::Q q0;
  typename Model::U u0;
  model.initialState(q0, u0);
  Sys system{model};
  capstan::FirstOrder<Sys, X> ode(system);
  X x0;
  x0 << q0, u0;
  std::vector<X> reference;
  auto grid = [&](std::vector<X>& out) {
    return [&out](double, const X& x) { out.push_back(x); };
  };
  {
    capstan::IntegratorSettings s;
    s.stepSize = 0.0;
    s.outputInterval = dt;
    s.relativeTolerance = s.absoluteTolerance = 1e-4 * tolerance;
    X x = x0;
    const auto status = capstan::dormandPrince(ode, 0.0, tEnd, x, s, grid(reference));
    if (!status.ok) std::printf("reference failed: %s\n", status.message.c_str());
  }
  auto distance = [&](const std::vector<X>& run) {
    double worst = 0;
    for (int i = 0; i < x0.size(); ++i) {
      double scale = 1.0;
      for (const X& r : reference) scale = std::max(scale, std::abs(r[i]));
      for (std::size_t k = 0; k < std::min(run.size(), reference.size()); ++k)
        worst = std::max(worst, std::abs(run[k][i] - reference[k][i]) / scale);
    }
    return run.size() == reference.size() ? worst : INFINITY;
  };
  std::vector<Result> results;
  // `integrate(trajectory, result)` runs once; timed `repeats` times.
  auto measure = [&](Result r, auto integrate) {
    std::vector<double> times;
    for (int k = 0; k < repeats; ++k) {
      std::vector<X> trajectory;
      const double start = threadSeconds();
      integrate(trajectory, r);
      times.push_back(threadSeconds() - start);
      if (k == 0) r.error = distance(trajectory);
    }
    r.cpu = bench::median(times);
    results.push_back(r);
  };
  measure(Result{"dopri5", tolerance}, [&](std::vector<X>& out, Result& r) {
    capstan::IntegratorSettings s;
    s.stepSize = 0.0;
    s.outputInterval = dt;
    s.relativeTolerance = s.absoluteTolerance = tolerance;
    X x = x0;
    const auto status = capstan::dormandPrince(ode, 0.0, tEnd, x, s, grid(out));
    r.steps = status.steps;
    r.evaluations = status.derivativeEvaluations;
    r.errorTests = status.rejectedSteps;
  });
  for (double tol : {tolerance, tolerance / 100}) {
    for (const auto jacobian : {capstan::CvodeJacobian::Exact, capstan::CvodeJacobian::DifferenceQuotient}) {
      const bool exact = jacobian == capstan::CvodeJacobian::Exact;
      measure(Result{exact ? "cvode, exact Jacobian" : "cvode, difference quotients", tol},
              [&](std::vector<X>& out, Result& r) {
                capstan::CvodeSettings s;
                s.outputInterval = dt;
                s.relativeTolerance = s.absoluteTolerance = tol;
                s.jacobian = jacobian;
                capstan::CvodeStatistics counts;
                X x = x0;
                const auto status = capstan::cvode(ode, 0.0, tEnd, x, s, grid(out), &counts);
                if (!status.ok) std::printf("%s failed: %s\n", r.name.c_str(), status.message.c_str());
                r.steps = counts.steps;
                r.evaluations = counts.rhsEvaluations + counts.rhsEvaluationsForJacobian;
                r.jacobians = counts.jacobianEvaluations;
                r.newton = counts.newtonIterations;
                r.factorizations = counts.linearSolverSetups;
                r.errorTests = counts.errorTestFailures;
              });
    }
  }
  std::printf("\n%s (nq = %d, nu = %d, %g s, output every %g s):\n\n", name, Model::nq, Model::nu, tEnd, dt);
  std::printf("| integrator | --tol | steps | rejected (error test) | right-hand sides | Jacobians | LU "
              "factorizations | Newton iterations | CPU ms | vs dopri5 at %g | distance to reference |\n",
              tolerance);
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  const Result& explicitRun = results.front();
  for (const Result& r : results) {
    std::printf("| %s | %g | %ld | %ld | %ld | %ld | %ld | %ld | %.2f | %.1fx fewer evaluations, %.1fx less CPU | "
                "%.1e |\n",
                r.name.c_str(), r.tolerance, r.steps, r.errorTests, r.evaluations, r.jacobians, r.factorizations,
                r.newton, 1e3 * r.cpu,
                static_cast<double>(explicitRun.evaluations) / static_cast<double>(r.evaluations),
                explicitRun.cpu / r.cpu, r.error);
  }
  // One right-hand side, one exact Jacobian (derivatives and assembly).
  X x = x0, xdot;
  Eigen::MatrixXd J(x0.size(), x0.size());
  auto perCall = [&](auto call) {
    long n = 1;
    for (;;) {
      const double start = threadSeconds();
      for (long k = 0; k < n; ++k) call();
      const double took = threadSeconds() - start;
      if (took > 0.2) return 1e6 * took / static_cast<double>(n);
      n *= 2;
    }
  };
  const double rhs = perCall([&] {
    clobber(x);
    ode.derivative(0.0, x, xdot);
    clobber(xdot);
  });
  const double jac = perCall([&] {
    clobber(x);
    ode.jacobian(0.0, x, J);
    clobber(J);
  });
  std::printf("\none right-hand side %.3f us; one exact Jacobian %.2f us (%.1f right-hand sides; difference "
              "quotients take %d)\n",
              rhs, jac, jac / rhs, Model::nq + Model::nu);
}

}  // namespace

int main() {
  const char* env = std::getenv("STIFF_REPEATS");
  const int repeats = env && *env ? std::max(1, std::atoi(env)) : 5;
#if defined(__clang__)
  std::printf("compiler: clang++ %s", __clang_version__);
#elif defined(__GNUC__)
  std::printf("compiler: g++ %s", __VERSION__);
#endif
  std::printf("; SUNDIALS %s; median of %d runs, thread CPU time\n", SUNDIALS_VERSION, repeats);
  benchModel<capstan_models::StiffChain>("examples/stiff_chain.cap", 2.0, 0.01, 1e-6, repeats);
  benchModel<capstan_models::StiffFreeBody>("tests/cli/models/stiff_free_body.cap", 1.0, 0.01, 1e-6, repeats);
  benchModel<capstan_models::StiffChain10>("examples/stiff_chain.cap with n = 10 (bench/stiff/CMakeLists.txt)", 2.0,
                                           0.01, 1e-6, repeats);
  return 0;
}
