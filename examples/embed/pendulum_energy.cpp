// The pendulum alone, with the runtime's adaptive Dormand-Prince integrator
// and a parameter changed at run time: the model has no damping, so its
// energy must be conserved to the integration tolerance.
#include <Pendulum.hpp>

#include <capstan/sim/simulate.hpp>

#include <cmath>
#include <cstdio>

int main() {
  using Model = capstan_models::Pendulum;
  Model model;
  model.params.lower_m = 0.9;  // a runtime parameter: no recompiling
  capstan::sim::System<Model> mechanical(model);  // the integrators' mechanical system

  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  using State = Eigen::Matrix<double, Model::nq + Model::nu, 1>;
  State x;
  x << q, u;
  const double e0 = model.kineticEnergy(q, u) + model.potentialEnergy(q);

  capstan::FirstOrder<capstan::sim::System<Model>, State> system(mechanical);
  capstan::IntegratorSettings settings;
  settings.relativeTolerance = settings.absoluteTolerance = 1e-10;
  settings.outputInterval = 1.0;
  const capstan::IntegrationStatus status =
      capstan::dormandPrince(system, 0.0, 5.0, x, settings, [&](double t, const State& s) {
        std::printf("t = %3.1f s  %s = %+.6f  %s = %+.6f\n", t, Model::qNames[0].data(), s[0],
                    Model::qNames[1].data(), s[1]);
      });
  if (!status.ok) {
    std::fprintf(stderr, "simulation failed: %s\n", status.message.c_str());
    return 1;
  }
  q = x.head<Model::nq>();
  u = x.tail<Model::nu>();
  const double drift = std::abs(model.kineticEnergy(q, u) + model.potentialEnergy(q) - e0);
  std::printf("%ld steps; energy drift %.2e J\n", status.steps, drift);
  return drift < 1e-6 ? 0 : 1;
}
