#include "codegen/interpret.hpp"

#include <capstan/dynamics.hpp>
#include <capstan/local_dynamics.hpp>

#include "codegen/assemble.hpp"

namespace capstan::codegen {

Interpreter::Interpreter(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
                         std::vector<std::vector<double>> parameters, std::vector<double> inputs)
    : parameters_(std::move(parameters)), inputs_(std::move(inputs)) {
  parameters_.resize(layout.parameters.size());
  for (std::size_t k = 0; k < layout.parameters.size(); ++k)
    if (parameters_[k].empty()) parameters_[k] = layout.parameters[k].defaults;
  inputs_.resize(layout.inputs.size(), 0.0);
  Sources<double> src;
  src.parameter = [this](int p, int e) {
    return parameters_.at(static_cast<std::size_t>(p)).at(static_cast<std::size_t>(e));
  };
  src.input = [this](int k) { return inputs_.at(static_cast<std::size_t>(k)); };
  src.q = Eigen::VectorXd::Zero(layout.nq);
  src.u = Eigen::VectorXd::Zero(layout.nu);
  env_ = std::make_unique<Environment<double>>(model, mech, layout, std::move(src));
  mechanism_ = env_->mechanism();
  env_->useMechanism(&mechanism_);
}

Interpreter::~Interpreter() = default;

void Interpreter::initialState(Eigen::VectorXd& q, Eigen::VectorXd& u) {
  env_->initialState(q, u);
  normalizeQuaternions(q);
}

// The dynamics run the production family, in joint frames
// (local_dynamics.hpp); the World-frame family is the tests' oracle.
Eigen::MatrixXd Interpreter::massMatrix(const Eigen::VectorXd& q) {
  local::Data<double> data(mechanism_);
  return local::crba(mechanism_, data, q);
}

Eigen::VectorXd Interpreter::bias(const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  local::Data<double> data(mechanism_);
  return local::nonlinearEffects(mechanism_, data, q, u);
}

Eigen::VectorXd Interpreter::appliedForces(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  env_->setState(t, q, u);
  return env_->appliedForces();
}

Eigen::VectorXd Interpreter::forwardDynamics(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  const Eigen::VectorXd tau = appliedForces(t, q, u);
  local::Data<double> data(mechanism_);
  return local::aba(mechanism_, data, q, u, tau);
}

Eigen::VectorXd Interpreter::forwardDynamics(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                             const capstan::ExternalForces<double>& fext) {
  const Eigen::VectorXd tau = appliedForces(t, q, u);
  local::Data<double> data(mechanism_);
  return local::aba(mechanism_, data, q, u, tau, fext);
}

Eigen::VectorXd Interpreter::qdot(const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  Eigen::VectorXd qd;
  qdotFromU(mechanism_, q, u, qd);
  return qd;
}

double Interpreter::kineticEnergy(const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  Data<double> data(mechanism_);
  forwardKinematics(mechanism_, data, q, u);
  return capstan::kineticEnergy(mechanism_, data);
}

double Interpreter::potentialEnergy(const Eigen::VectorXd& q) {
  Data<double> data(mechanism_);
  forwardKinematics(mechanism_, data, q);
  return capstan::potentialEnergy(mechanism_, data);
}

void Interpreter::bodyStates(const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                             std::vector<capstan::Transform<double>>& X_WB, std::vector<capstan::Vec6<double>>& V_WB) {
  Data<double> data(mechanism_);
  forwardKinematics(mechanism_, data, q, u);
  X_WB = data.X_WB;
  V_WB = data.V_WB;
}

std::vector<double> Interpreter::outputs(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  env_->setState(t, q, u);
  std::vector<double> out;
  for (std::size_t k = 0; k < env_->layout().outputs.size(); ++k) out.push_back(env_->output(static_cast<int>(k)));
  return out;
}

void Interpreter::normalizeQuaternions(Eigen::VectorXd& q) const { capstan::normalizeQuaternions(mechanism_, q); }

std::vector<Unsupported> untranslatable(const sema::FlatModel& model, const mechanics::Mechanism& mech,
                                        const ModelLayout& layout) {
  std::vector<Unsupported> out;
  Interpreter interp(model, mech, layout);
  Eigen::VectorXd q, u;
  interp.initialState(q, u);
  Environment<double>& env = interp.environment();
  env.setState(0.0, q, u);
  for (const ForceLawLayout& fl : layout.forceLaws) {
    try {
      env.forceLaw(fl);
    } catch (const UnsupportedExpression& e) {
      out.push_back({model.forceLaws.at(static_cast<std::size_t>(fl.law)).range,
                     std::string(e.what()) + " in the force law for `" + fl.name + "`"});
    }
  }
  for (std::size_t k = 0; k < layout.outputs.size(); ++k) {
    try {
      env.output(static_cast<int>(k));
    } catch (const UnsupportedExpression& e) {
      const IoVariable& o = layout.outputs[k];
      out.push_back({model.variables.at(static_cast<std::size_t>(o.variable)).range,
                     std::string(e.what()) + " in output `" + o.name + "`"});
    }
  }
  return out;
}

}  // namespace capstan::codegen
