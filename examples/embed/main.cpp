// Embedding generated code: simulate the double pendulum with the runtime's
// Dormand-Prince integrator, change a parameter at run time, and check that
// energy is conserved (the model has no damping).
#include <DoublePendulum.hpp>
#include <capstan/integrators.hpp>

#include <cmath>
#include <cstdio>

namespace {

using Model = capstan_models::DoublePendulum;

// The integrators' "mechanical system" interface over the generated class.
struct Pendulum {
  using VectorQ = Model::Q;
  using VectorU = Model::U;
  Model model;

  int nq() const { return Model::nq; }
  int nu() const { return Model::nu; }
  void qdot(const VectorQ& q, const VectorU& u, VectorQ& qd) const { model.qdot(q, u, qd); }
  void udot(double t, const VectorQ& q, const VectorU& u, VectorU& ud) const { model.forwardDynamics(t, q, u, ud); }
  void normalize(VectorQ& q) const { Model::normalizeQuaternions(q); }
};

double energy(const Model& m, const Model::Q& q, const Model::U& u) {
  return m.kineticEnergy(q, u) + m.potentialEnergy(q);
}

}  // namespace

int main() {
  Pendulum pendulum;
  pendulum.model.params.m2 = 0.9;  // a runtime parameter: no recompilation

  Model::Q q;
  Model::U u;
  pendulum.model.initialState(q, u);
  using State = Eigen::Matrix<double, Model::nq + Model::nu, 1>;
  State x;
  x << q, u;
  const double e0 = energy(pendulum.model, q, u);

  capstan::FirstOrder<Pendulum, State> system(pendulum);
  capstan::IntegratorSettings settings;
  settings.relativeTolerance = settings.absoluteTolerance = 1e-10;
  settings.outputInterval = 0.5;
  const capstan::IntegrationStatus status =
      capstan::dormandPrince(system, 0.0, 5.0, x, settings, [&](double t, const State& s) {
        std::printf("t = %4.1f  %s = %+.6f  %s = %+.6f\n", t, Model::qNames[0].data(), s[0],
                    Model::qNames[1].data(), s[1]);
      });
  if (!status.ok) {
    std::fprintf(stderr, "simulation failed: %s\n", status.message.c_str());
    return 1;
  }
  const double drift = std::abs(energy(pendulum.model, x.head<Model::nq>(), x.tail<Model::nu>()) - e0);
  std::printf("%ld steps; energy drift %.2e J\n", status.steps, drift);
  return drift < 1e-6 ? 0 : 1;
}
