// What a model must offer to be run by capstan::sim (simulate.hpp): the
// generated class (each generated header static_asserts it) and the
// reference interpreter's adapter (compiler/codegen/interpret.hpp,
// InterpretedModel) both are a capstan::sim::Model.
//
// A Model, for m of type const M (sizes are `static constexpr int` in
// generated code, `const int` members in the interpreter's adapter; name
// lists are arrays of std::string_view or vectors of strings):
//   types Q (nq), U (nu), OutputValues (one double per output)
//   m.nq, m.nu                             coordinates and speeds
//   m.qNames, m.uNames, m.outputNames      SPEC section 6's CSV columns
//   m.qUnits, m.uUnits, m.outputUnits      their units, in the same order
//   m.initialState(q, u)                   the joints' q0 and u0
//   m.qdot(q, u, qd)                       qdot = N(q) u
//   m.forwardDynamics(t, q, u, udot)       udot (NaN where a cable's path is lost)
//   m.normalizeQuaternions(q)
//   m.kineticEnergy(q, u), m.potentialEnergy(q)    (J)
//   m.outputValues(t, q, u, values)        the outputs, in outputNames' order
//   m.parameter(name) or m.setParameter(name, value)
//                                          a runtime parameter element by its
//                                          model name (`L1`, `axis[2]`): the
//                                          generated class gives its address,
//                                          the interpreter sets it (setParameter below)
// and, where the model has them, the capabilities below (each detected on
// its own; a model without bushings need not declare gimbalLock()).
#pragma once

#include <concepts>
#include <string_view>

namespace capstan::sim {

// Runtime parameters by name: where the value lives (generated code), or a
// setter that remakes what depends on it (the interpreter).
template <class M>
concept HasParameterAddresses = requires(M& m, std::string_view name) {
  { m.parameter(name) } -> std::convertible_to<double*>;
};
template <class M>
concept HasParameterSetter = requires(const M& m, std::string_view name, double value) {
  { m.setParameter(name, value) } -> std::convertible_to<bool>;
};

template <class M>
concept Model = (HasParameterAddresses<M> || HasParameterSetter<M>) && requires(const M& m, double t, typename M::Q& q, typename M::U& u,
                         typename M::OutputValues& values) {
  { m.nq } -> std::convertible_to<int>;
  { m.nu } -> std::convertible_to<int>;
  { m.qNames[0] } -> std::convertible_to<std::string_view>;
  { m.uNames[0] } -> std::convertible_to<std::string_view>;
  { m.outputNames.size() } -> std::convertible_to<std::size_t>;
  { m.qUnits[0] } -> std::convertible_to<std::string_view>;
  { m.uUnits[0] } -> std::convertible_to<std::string_view>;
  { m.outputUnits.size() } -> std::convertible_to<std::size_t>;
  m.initialState(q, u);
  m.qdot(q, u, q);
  m.forwardDynamics(t, q, u, u);
  m.normalizeQuaternions(q);
  { m.kineticEnergy(q, u) } -> std::convertible_to<double>;
  { m.potentialEnergy(q) } -> std::convertible_to<double>;
  m.outputValues(t, q, u, values);
};

// Bushings (Drake's LinearBushingRollPitchYaw): the first one within about
// 0.458 degrees of gimbal lock, or -1, and its pitch; their names.
template <class M>
concept HasBushings = requires(const M& m, const typename M::Q& q, const typename M::U& u, double& pitch) {
  { m.gimbalLock(q, u, pitch) } -> std::convertible_to<int>;
  { m.bushingNames[0] } -> std::convertible_to<std::string_view>;
};

// Cables: ncables, cableNames; updateCables(t, q, u, fext) solves every
// path by continuation and returns the first cable whose path is lost, or
// -1 (cableFailure() too, after forwardDynamics); cableValues(c) {length (m), lengthDot (m/s), tension (N)};
// cableFailureMessage(t) says which and why.
template <class M>
concept HasCables = requires(const M& m, double t, const typename M::Q& q, const typename M::U& u,
                             typename M::ExternalForces& fext) {
  { m.ncables } -> std::convertible_to<int>;
  { m.cableNames[0] } -> std::convertible_to<std::string_view>;
  { m.updateCables(t, q, u, fext) } -> std::convertible_to<int>;
  { m.cableFailure() } -> std::convertible_to<int>;
  { m.cableValues(0).length } -> std::convertible_to<double>;
  { m.cableFailureMessage(t) } -> std::convertible_to<std::string_view>;
};

// Constraints (cut joints, contacts): constraintInfo, each with a name and
// its rows (holonomicRow, holonomic, nonholonomicRow, nonholonomic), and
// the rows' functions capstan/constraint_solver.hpp's Model needs.
template <class M>
concept HasConstraints = requires(const M& m, const typename M::Q& q, const typename M::U& u,
                                  typename M::PositionErrors& perr, typename M::ConstraintVector& verr) {
  { m.constraintInfo[0].name } -> std::convertible_to<std::string_view>;
  { m.constraintInfo[0].holonomicRow } -> std::convertible_to<int>;
  m.constraintPositionErrors(q, perr);
  m.constraintVelocityErrors(q, u, verr);
};

// forwardDynamicsDerivatives(t, q, u, dudot_dq, dudot_du, dudot_dtau), each
// nu x nu (a header generated with --derivatives; the interpreter's dual
// numbers): CVODE's exact Jacobian.
template <class M>
concept HasDerivatives = requires(const M& m, double t, const typename M::Q& q, const typename M::U& u,
                                  typename M::MassMatrix& d) {
  m.forwardDynamicsDerivatives(t, q, u, d, d, d);
};

// inverseDynamicsDerivatives(t, q, u, udot, dtau_dq, dtau_du, M): d tau /
// d(q, u, udot) (a header generated with --derivatives).
template <class M>
concept HasInverseDerivatives = requires(const M& m, double t, const typename M::Q& q, const typename M::U& u,
                                         typename M::MassMatrix& d) {
  m.inverseDynamicsDerivatives(t, q, u, u, d, d, d);
};

// outputDerivatives(t, q, u, dy_dq, dy_du): y = [outputs; kinetic energy;
// potential energy] by the raw q and by u (a header generated with
// --derivatives).
template <class M>
concept HasOutputDerivatives = requires(const M& m, double t, const typename M::Q& q, const typename M::U& u,
                                        typename M::OutputDerivativesQ& dq, typename M::OutputDerivativesU& du) {
  m.outputDerivatives(t, q, u, dq, du);
};

// Compliant contacts and cables: eventIndicators(t, q, u, z) (each > 0
// while its force acts: a contact's depth, a cable's wrap contact or
// stretch) and eventIndicatorNames.
template <class M>
concept HasEventIndicators = requires(const M& m, double t, const typename M::Q& q, const typename M::U& u,
                                      typename M::EventIndicators& z) {
  m.eventIndicators(t, q, u, z);
  M::eventIndicatorNames;
};

// Sphere-on-sphere contacts: contactFrames(q, frames), each contact's frame
// and separation.
template <class M>
concept HasContacts = requires(const M& m, const typename M::Q& q, typename M::ContactFrames& frames) {
  m.contactFrames(q, frames);
};

// Whether `model` can give forwardDynamicsDerivatives (and
// inverseDynamicsDerivatives): a model that has the function, unless it
// says otherwise at run time (hasDerivatives(), hasInverseDerivatives(): a
// type-erased AnyModel over a class generated without them).
template <class M>
bool derivativesAvailable(const M& model) {
  if constexpr (!HasDerivatives<M>) {
    return false;
  } else if constexpr (requires { { model.hasDerivatives() } -> std::convertible_to<bool>; }) {
    return model.hasDerivatives();
  } else {
    return true;
  }
}
template <class M>
bool inverseDerivativesAvailable(const M& model) {
  if constexpr (!HasInverseDerivatives<M>) {
    return false;
  } else if constexpr (requires { { model.hasInverseDerivatives() } -> std::convertible_to<bool>; }) {
    return model.hasInverseDerivatives();
  } else {
    return true;
  }
}

// Sets the runtime parameter element `name` (`L1`, `world.gravity[3]`) of
// `model` to `value`; false where the model has no such element.
template <Model M>
bool setParameter(M& model, std::string_view name, double value) {
  if constexpr (HasParameterSetter<M>) {
    return model.setParameter(name, value);
  } else {
    double* slot = model.parameter(name);
    if (!slot) return false;
    *slot = value;
    return true;
  }
}

}  // namespace capstan::sim
