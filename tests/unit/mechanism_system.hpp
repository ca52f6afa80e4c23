// MechanismSystem: a Mechanism<double> with its workspace and an applied
// generalized-force law, as the mechanical system the integrators
// (integrators.hpp) advance: the integrators' tests run bare mechanisms
// with it. (Models run through capstan::sim, whose System<Model> is the one
// adapter between a model and the integrators.)
#pragma once

#include "capstan/dynamics.hpp"
#include "capstan/integrators.hpp"

#include <string>

namespace capstan {

// The force law applying no generalized force.
struct NoForces {
  void operator()(double, const VectorX<double>&, const VectorX<double>&, VectorX<double>&) const {}
};

enum class ForwardDynamicsMethod {
  ArticulatedBody,  // aba(): fastest in the interpreter at every size measured
  CompositeBody,    // forwardDynamics(): CRBA + tree-sparse L^T D L, as generated code
};

// ForceLaw: void(double t, const VectorXd& q, const VectorXd& u, VectorXd& tau),
// adding applied generalized forces to tau (nu), which arrives zeroed.
template <class ForceLaw = NoForces>
struct MechanismSystem {
  const Mechanism<double>& model;
  Data<double> data;
  ForceLaw force;
  VectorX<double> tau;  // (nu) scratch
  ForwardDynamicsMethod method = ForwardDynamicsMethod::ArticulatedBody;  // docs/runtime.md

  explicit MechanismSystem(const Mechanism<double>& m, ForceLaw f = {})
      : model(m), data(m), force(std::move(f)), tau(VectorX<double>::Zero(m.nu)) {}

  int nq() const { return model.nq; }
  int nu() const { return model.nu; }

  void qdot(const VectorX<double>& q, const VectorX<double>& u, VectorX<double>& qdot) {
    qdotFromU(model, q, u, qdot);
  }

  void udot(double t, const VectorX<double>& q, const VectorX<double>& u, VectorX<double>& udot) {
    tau.setZero();
    force(t, q, u, tau);
    udot = method == ForwardDynamicsMethod::ArticulatedBody ? aba(model, data, q, u, tau)
                                                            : forwardDynamics(model, data, q, u, tau);
  }

  void normalize(VectorX<double>& q) { normalizeQuaternions(model, q); }

  // "JOINT.q[k]" for i < nq, else "JOINT.u[k]" (0-based k, as in C++).
  std::string coordinateName(int i) const {
    const bool isQ = i < model.nq;
    const int index = isQ ? i : i - model.nq;
    for (const auto& joint : model.joints) {
      const int offset = isQ ? joint.qOffset : joint.uOffset;
      const int count = isQ ? joint.nq() : joint.nu();
      if (index >= offset && index < offset + count) {
        return joint.name + (isQ ? ".q[" : ".u[") + std::to_string(index - offset) + "]";
      }
    }
    return (isQ ? "q[" : "u[") + std::to_string(index) + "]";
  }

  // Kinetic plus gravitational potential energy (J).
  double energy(const VectorX<double>& q, const VectorX<double>& u) {
    forwardKinematics(model, data, q, u);
    return kineticEnergy(model, data, u) + potentialEnergy(model, data);
  }
};

}  // namespace capstan
