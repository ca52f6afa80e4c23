// A header-only consumer of two generated models in one translation unit,
// built with nothing but Eigen, the runtime headers and the two headers
// (tests/embed/header_only_test.cmake compiles it with g++ and clang++ at
// -O3 -Wall -Wextra -Wpedantic -Werror and runs it). Every member of the
// generated API is used, so a clash or a warning anywhere in either header
// fails the build; the checks below fail the run.
#include <Chain.hpp>
#include <ServoArm.hpp>
#include <capstan/integrators.hpp>
#include <capstan/sim/simulate.hpp>

#include <cmath>
#include <cstdio>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

// Every evaluation function, and forwardDynamics against M udot = tau - C.
template <class Model>
void exercise(Model& model, const char* name) {
  typename Model::Q q;
  typename Model::U u;
  model.initialState(q, u);
  u.setConstant(0.3);
  typename Model::MassMatrix M;
  typename Model::U C, tau, udot, qd;
  model.massMatrix(q, M);
  model.bias(q, u, C);
  model.appliedForces(0.0, q, u, tau);
  model.forwardDynamics(0.0, q, u, udot);
  model.qdot(q, u, qd);
  check(((M * udot) - (tau - C)).norm() < 1e-9 * (1 + (tau - C).norm()), name);
  check(M.isApprox(M.transpose()), name);
  typename Model::BodyPoses poses;
  typename Model::BodyVelocities velocities;
  model.bodyPoses(q, poses);
  model.bodyVelocities(q, u, velocities);
  check((poses.back().R_WB.transpose() * poses.back().R_WB - Eigen::Matrix3d::Identity()).norm() < 1e-12, name);
  // Kinetic energy from the mass matrix and from the generated function.
  check(std::abs(model.kineticEnergy(q, u) - 0.5 * u.dot(M * u)) < 1e-12 * (1 + u.dot(M * u)), name);
  check(std::isfinite(model.potentialEnergy(q)), name);
  typename Model::Outputs out;
  model.outputs(0.0, q, u, out);
  for (std::size_t i = 0; i < Model::outputNames.size(); ++i) check(std::isfinite(out.*Model::outputFields[i]), name);
  check(Model::qNames.size() == Model::nq && Model::bodyNames.size() == Model::nb, name);
}

}  // namespace

int main() {
  capstan_models::Chain chain;
  capstan_models::ServoArm arm;
  exercise(chain, "Chain");
  exercise(arm, "ServoArm");

  // Parameters by name, per instance: another instance keeps its defaults.
  double* damping = chain.parameter("damping");
  check(damping && *damping == 2.0 && !chain.parameter("no_such_parameter"), "Chain::parameter");
  *damping = 0.0;
  check(capstan_models::Chain().params.damping == 2.0, "parameters are per instance");

  // Inputs and outputs: the motor torque drives the arm.
  arm.inputs.torque = 0.5;
  capstan::sim::System<capstan_models::ServoArm> armSystem(arm);
  capstan_models::ServoArm::Q q;
  capstan_models::ServoArm::U u;
  arm.initialState(q, u);
  capstan::IntegratorSettings settings;
  settings.stepSize = 1e-3;
  check(capstan::semiImplicitEuler(armSystem, 0.0, 0.2, q, u, settings).ok, "ServoArm: semi-implicit Euler");
  capstan_models::ServoArm::Outputs out;
  arm.outputs(0.2, q, u, out);
  check(out.angle > 0 && out.rate > 0 && out.angle == q[0] && out.rate == u[0], "ServoArm: outputs follow the input");

  // The chain, undamped now, conserves energy under RK4.
  capstan::sim::System<capstan_models::Chain> chainSystem(chain);
  using ChainState = Eigen::Matrix<double, capstan_models::Chain::nq + capstan_models::Chain::nu, 1>;
  capstan::FirstOrder<capstan::sim::System<capstan_models::Chain>, ChainState> chainOde(chainSystem);
  capstan_models::Chain::Q cq;
  capstan_models::Chain::U cu;
  chain.initialState(cq, cu);
  cu.setConstant(0.5);
  ChainState x;
  x << cq, cu;
  const double e0 = chain.kineticEnergy(cq, cu) + chain.potentialEnergy(cq);
  check(capstan::rk4(chainOde, 0.0, 0.5, x, settings).ok, "Chain: RK4");
  cq = x.head<capstan_models::Chain::nq>();
  cu = x.tail<capstan_models::Chain::nu>();
  check(std::abs(chain.kineticEnergy(cq, cu) + chain.potentialEnergy(cq) - e0) < 1e-8, "Chain: energy conserved");

  std::printf("%s\n", failures ? "two_models: FAILED" : "two_models: ok");
  return failures ? 1 : 0;
}
