// A stiff model with SUNDIALS' CVODE (capstan/cvode.hpp, Capstan::cvode)
// and the exact Jacobian from the generated forwardDynamicsDerivatives
// (capstan_add_model(... DERIVATIVES)), against the runtime's explicit
// dopri5 at the same tolerance: the same swing, with a small fraction of
// the right-hand-side evaluations.
#include <StiffSpring.hpp>

#include <capstan/cvode.hpp>
#include <capstan/sim/simulate.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>


int main() {
  using Model = capstan_models::StiffSpring;
  using State = Eigen::Matrix<double, Model::nq + Model::nu, 1>;
  Model model;
  // The model as the integrators' mechanical system, with its derivatives
  // (`true`): what FirstOrder::jacobian builds CVODE's df/dx from (d udot/dq
  // along the tangent space, d udot/du).
  capstan::sim::System<Model, true> mechanical(model);
  capstan::FirstOrder<capstan::sim::System<Model, true>, State> system(mechanical);
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  State x0;
  x0 << q, u;
  constexpr double kTolerance = 1e-8, kEnd = 2.0;

  State stiff = x0;
  capstan::CvodeSettings cvodeSettings;
  cvodeSettings.relativeTolerance = cvodeSettings.absoluteTolerance = kTolerance;
  capstan::CvodeStatistics counts;
  const capstan::IntegrationStatus cv = capstan::cvode(system, 0.0, kEnd, stiff, cvodeSettings, {}, &counts);

  State explicitRun = x0;
  capstan::IntegratorSettings settings;
  settings.stepSize = 0.0;  // adaptive
  settings.relativeTolerance = settings.absoluteTolerance = kTolerance;
  const capstan::IntegrationStatus dp = capstan::dormandPrince(system, 0.0, kEnd, explicitRun, settings);
  if (!cv.ok || !dp.ok) {
    std::fprintf(stderr, "simulation failed: %s%s\n", cv.message.c_str(), dp.message.c_str());
    return 1;
  }
  const double difference = (stiff - explicitRun).cwiseAbs().maxCoeff();
  const long evaluations = counts.rhsEvaluations + counts.rhsEvaluationsForJacobian;
  std::printf("cvode (%s Jacobian): %ld steps, %ld right-hand sides, %ld Jacobians, %ld Newton iterations\n",
              counts.exactJacobian ? "exact" : "difference-quotient", counts.steps, evaluations,
              counts.jacobianEvaluations, counts.newtonIterations);
  std::printf("dopri5: %ld steps, %ld right-hand sides (%.0fx as many); at t = %g s %s = %+.6f, the two differ "
              "by %.1e\n",
              dp.steps, dp.derivativeEvaluations, static_cast<double>(dp.derivativeEvaluations) / evaluations, kEnd,
              Model::qNames[0].data(), stiff[0], difference);
  // The exact Jacobian was used (no evaluations spent on quotients), CVODE
  // took far fewer evaluations, and the two agree well within their
  // global errors (~100x the tolerance for CVODE here).
  const bool ok = counts.exactJacobian && counts.rhsEvaluationsForJacobian == 0 && counts.jacobianEvaluations > 0 &&
                  10 * evaluations < dp.derivativeEvaluations && difference < 1e3 * kTolerance;
  return ok ? 0 : 1;
}
