// A control loop over two generated models in one translation unit: a PD
// controller with gravity compensation drives the servo arm to a setpoint
// at 100 Hz (set the input, read the outputs, step the runtime's RK4 over
// one period), while a double pendulum is simulated alongside. Half way,
// the arm picks up a payload: a parameter changed at run time, no
// recompiling. Exits 1 if the arm does not settle or the pendulum's energy
// drifts.
#include <Pendulum.hpp>
#include <ServoArm.hpp>

#include <capstan/sim/simulate.hpp>

#include <cmath>
#include <cstdio>

namespace {

using Arm = capstan_models::ServoArm;
using Pendulum = capstan_models::Pendulum;

template <class Model>
using State = Eigen::Matrix<double, Model::nq + Model::nu, 1>;

template <class Model>
State<Model> initialState(const Model& model) {
  typename Model::Q q;
  typename Model::U u;
  model.initialState(q, u);
  State<Model> x;
  x << q, u;
  return x;
}

template <class Model>
double energy(const Model& model, const State<Model>& x) {
  const typename Model::Q q = x.template head<Model::nq>();
  const typename Model::U u = x.template tail<Model::nu>();
  return model.kineticEnergy(q, u) + model.potentialEnergy(q);
}

}  // namespace

int main() {
  Arm arm;
  Pendulum pendulum;
  capstan::sim::System<Arm> armSystem(arm);  // the integrators' mechanical systems
  capstan::sim::System<Pendulum> pendulumSystem(pendulum);
  capstan::FirstOrder<capstan::sim::System<Arm>, State<Arm>> armOde(armSystem);
  capstan::FirstOrder<capstan::sim::System<Pendulum>, State<Pendulum>> pendulumOde(pendulumSystem);
  State<Arm> xa = initialState(arm);
  State<Pendulum> xp = initialState(pendulum);
  const double pendulumEnergy0 = energy(pendulum, xp);

  capstan::IntegratorSettings settings;
  settings.stepSize = 1e-3;                  // s: RK4 steps inside one control period
  const double period = 0.01;                // s: 100 Hz control
  const double kp = 20.0, kd = 2.0;          // N.m/rad, N.m.s/rad
  const double g = -arm.params.world_gravity[1];
  double setpoint = 1.0;                     // rad
  double worstSettledError = 0.0;            // rad, over the last 0.5 s of each half
  Arm::Outputs out;
  for (int k = 0; k < 500; ++k) {
    const double t = k * period;
    if (k == 250) {
      arm.params.link_m = 1.2;  // the payload: the model and the controller both see it
      setpoint = -0.5;
    }
    arm.outputs(t, xa.head<Arm::nq>(), xa.tail<Arm::nu>(), out);
    const double m = arm.params.link_m, half = arm.params.link_L / 2;
    arm.inputs.torque = kp * (setpoint - out.angle) - kd * out.rate + m * g * half * std::sin(out.angle);
    if (!capstan::rk4(armOde, t, t + period, xa, settings).ok || !capstan::rk4(pendulumOde, t, t + period, xp, settings).ok) {
      std::fprintf(stderr, "integration failed at t = %g\n", t);
      return 1;
    }
    if (k % 50 == 49) {
      std::printf("t = %4.2f s  %s = %+.5f rad  torque = %+.4f N.m  %s = %+.4f rad\n", t + period,
                  Arm::outputNames[0].data(), out.angle, arm.inputs.torque, Pendulum::qNames[1].data(), xp[1]);
    }
    if (k % 250 >= 200) worstSettledError = std::max(worstSettledError, std::abs(out.angle - setpoint));
  }
  const double drift = std::abs(energy(pendulum, xp) - pendulumEnergy0);
  std::printf("arm: worst error once settled %.2e rad; pendulum: energy drift %.2e J\n", worstSettledError, drift);
  return worstSettledError < 1e-3 && drift < 1e-6 ? 0 : 1;
}
