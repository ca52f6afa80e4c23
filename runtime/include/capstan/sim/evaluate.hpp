// capstan::sim::evaluate: everything `capstan eval` reports of one state,
// for the generated class (in the driver program) and the interpreter's
// adapter (in `capstan`) alike: one list of keys, each computed in one
// place. `capstan` turns the records into SPEC section 6's JSON.
//
// Each record is a key, the element it belongs to (a body, frame, bushing,
// contact, cable or cable obstacle, numbered in the model's order; -1 for
// the model as a whole) and its numbers, matrices row-major:
//   q, u, qdot, udot (udot with the external forces, and the constraint
//     solver's exact acceleration-level solution), kinetic_energy,
//     potential_energy, mass_matrix (nu x nu), outputs
//   per body: R_WB (3 x 3), p_WB, w_WB, v_WB (World, about the body origin)
//   per frame (frameNames): J (6 x nu, J_WF), JdotU (6)
//   per bushing: F_A_A, F_C_C (Drake's spatial forces)
//   constraints: position_errors, velocity_errors, acceleration_errors,
//     multipliers, constraint_rank; per contact: contact_R, contact_p, separation
//   per cable: cable (length, lengthDot, tension, energy, power),
//     cable_forces (6 per body, World), cable_tau (nu); per obstacle of every
//     cable in turn: cable_obstacle (active, P[3], Q[3], arcLength, wrapAngle,
//     separation)
//   with derivatives: dudot_dq, dudot_du, dudot_dtau (nu x nu); and where the
//   model has inverseDynamicsDerivatives, dtau_dq, dtau_du, dtau_dudot (= M)
//   at a random-free udot: the forward dynamics' without external forces
//
// Beyond capstan::sim::Model it needs the generated class's massMatrix,
// bodyPoses, bodyVelocities, nb, nf, frameJacobian, frameJacobianDotU
// (docs/generated-code.md) and, where the model has them, bushingStates,
// contactFrames, cableForces and cablePath.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "capstan/constraint_solver.hpp"
#include "capstan/force_elements.hpp"
#include "capstan/sim/columns.hpp"
#include "capstan/sim/model.hpp"
#include "capstan/sim/simulate.hpp"

namespace capstan::sim {

// `key`, or `key#element` for one element's.
inline std::string evalKey(std::string_view key, int element) {
  return element < 0 ? std::string(key) : std::string(key) + "#" + std::to_string(element);
}

namespace evaluate_detail {
// Row-major numbers of a matrix (any storage order).
template <class Matrix>
std::vector<double> rowMajor(const Matrix& m) {
  std::vector<double> v;
  v.reserve(static_cast<std::size_t>(m.rows() * m.cols()));
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    for (Eigen::Index c = 0; c < m.cols(); ++c) v.push_back(m(r, c));
  return v;
}
}  // namespace evaluate_detail

// emit(key, element, values) for every record at (t, q, u), with the
// external spatial forces `fext` on the bodies where given ([n; f] about
// each body origin, in World), and the derivatives where asked and the
// model has them. Throws ModelStopped where the model cannot be evaluated
// there (a bushing at gimbal lock, a cable path that cannot be found).
template <Model M, class Emit>
void evaluate(const M& model, double t, const typename M::Q& q, const typename M::U& u,
              const typename M::ExternalForces* fext, bool derivatives, Emit&& emit) {
  using evaluate_detail::rowMajor;
  const auto put = [&](std::string_view key, int element, const auto& values) {
    emit(key, element, std::vector<double>(values.data(), values.data() + values.size()));
  };
  const auto scalar = [&](std::string_view key, double value) { emit(key, -1, std::vector<double>{value}); };
  if constexpr (HasBushings<M>) {
    double pitch = 0.0;
    if (const int k = model.gimbalLock(q, u, pitch); k >= 0)
      throw ModelStopped{gimbalLockMessage(model.bushingNames[std::size_t(k)], pitch, t), k};
  }
  typename M::Q qdot = q;
  typename M::U udot = u;
  model.qdot(q, u, qdot);
  if (fext) model.forwardDynamics(t, q, u, *fext, udot);
  else model.forwardDynamics(t, q, u, udot);
  put("q", -1, q);
  put("u", -1, u);
  put("qdot", -1, qdot);
  if constexpr (HasConstraints<M>) {
    if (model.constraintInfo.size() > 0) {
      // The exact acceleration-level solution (no Baumgarte terms, no projection).
      ConstraintSolver<M> solver(model, constraintRowRanges(model));
      typename M::ConstraintVector lambda, verr, gamma;
      typename M::PositionErrors perr;
      typename M::ConstraintJacobian G;
      solver.correct(q, u, udot, lambda);
      model.constraintPositionErrors(q, perr);
      model.constraintVelocityErrors(q, u, verr);
      model.constraintJacobian(q, G);
      model.constraintBias(q, u, gamma);
      const typename M::ConstraintVector aerr = G * udot - gamma;
      put("position_errors", -1, perr);
      put("velocity_errors", -1, verr);
      put("acceleration_errors", -1, aerr);
      put("multipliers", -1, lambda);
      scalar("constraint_rank", solver.rank());
      if constexpr (HasContacts<M>) {
        typename M::ContactFrames frames;
        model.contactFrames(q, frames);
        for (std::size_t k = 0; k < frames.size(); ++k) {
          emit("contact_R", int(k), rowMajor(frames[k].R_WC));
          put("contact_p", int(k), frames[k].p_WC);
          emit("separation", int(k), std::vector<double>{frames[k].separation});
        }
      }
    }
  }
  put("udot", -1, udot);
  scalar("kinetic_energy", model.kineticEnergy(q, u));
  scalar("potential_energy", model.potentialEnergy(q));
  typename M::MassMatrix massMatrix;
  model.massMatrix(q, massMatrix);
  emit("mass_matrix", -1, rowMajor(massMatrix));
  typename M::BodyPoses poses;
  typename M::BodyVelocities velocities;
  model.bodyPoses(q, poses);
  model.bodyVelocities(q, u, velocities);
  for (int b = 0; b < int(model.nb); ++b) {
    const auto& X = poses[std::size_t(b)];
    emit("R_WB", b, rowMajor(X.R_WB));
    put("p_WB", b, X.p_WB);
    put("w_WB", b, velocities[std::size_t(b)].w_WB);
    put("v_WB", b, velocities[std::size_t(b)].v_WB);
  }
  for (int f = 0; f < int(model.nf); ++f) {
    typename M::FrameJacobian J;
    typename M::SpatialVector JdotU;
    model.frameJacobian(f, q, J);
    model.frameJacobianDotU(f, q, u, JdotU);
    emit("J", f, rowMajor(J));
    put("JdotU", f, JdotU);
  }
  if constexpr (HasBushings<M>) {
    typename M::BushingStates states;
    model.bushingStates(q, u, states);
    for (std::size_t k = 0; k < states.size(); ++k) {
      put("F_A_A", int(k), states[k].F_A_A);
      put("F_C_C", int(k), states[k].F_C_C);
    }
  }
  if constexpr (HasCables<M>) {
    typename M::ExternalForces all;
    if (model.updateCables(t, q, u, all) >= 0) throw ModelStopped{std::string(model.cableFailureMessage(t))};
    int obstacle = 0;
    for (int c = 0; c < int(model.ncables); ++c) {
      const auto& v = model.cableValues(c);
      emit("cable", c, std::vector<double>{v.length, v.lengthDot, v.tension, v.energy, v.power});
      typename M::ExternalForces forces;
      model.cableForces(c, t, q, u, forces);
      std::vector<double> F_W;
      typename M::U tau = u;
      tau.setZero();
      for (int b = 0; b < int(model.nb); ++b) {
        const auto& F = forces[std::size_t(b)];
        F_W.insert(F_W.end(), F.data(), F.data() + 6);
        typename M::FrameJacobian J;
        model.frameJacobian(b, q, J);  // frames 0 .. nb-1 are the bodies
        tau += J.transpose() * F;
      }
      emit("cable_forces", c, F_W);
      put("cable_tau", c, tau);
      for (const auto& o : model.cablePath(c).obstacles)
        emit("cable_obstacle", obstacle++,
             std::vector<double>{o.active ? 1.0 : 0.0, o.P.p_W[0], o.P.p_W[1], o.P.p_W[2], o.Q.p_W[0], o.Q.p_W[1],
                                 o.Q.p_W[2], o.arcLength, o.wrapAngle, o.separation});
    }
  }
  if constexpr (HasDerivatives<M>) {
    if (derivatives && derivativesAvailable(model)) {
      typename M::MassMatrix dq, du, dtau;
      model.forwardDynamicsDerivatives(t, q, u, dq, du, dtau);
      emit("dudot_dq", -1, rowMajor(dq));
      emit("dudot_du", -1, rowMajor(du));
      emit("dudot_dtau", -1, rowMajor(dtau));
      if constexpr (HasInverseDerivatives<M>) {
        if (inverseDerivativesAvailable(model)) {
          typename M::U a = u;
          model.forwardDynamics(t, q, u, a);
          typename M::MassMatrix tq, tu, mass;
          model.inverseDynamicsDerivatives(t, q, u, a, tq, tu, mass);
          emit("dtau_dq", -1, rowMajor(tq));
          emit("dtau_du", -1, rowMajor(tu));
          emit("dtau_dudot", -1, rowMajor(mass));
        }
      }
    }
  } else {
    (void)derivatives;
  }
  typename M::OutputValues outputs;
  model.outputValues(t, q, u, outputs);
  put("outputs", -1, outputs);
}

}  // namespace capstan::sim
