// The runtime integrators' "mechanical system" interface (capstan/integrators.hpp)
// over any generated model class: x = [q; u], udot from forwardDynamics.
#pragma once

#include <capstan/integrators.hpp>

template <class Model>
struct Mechanical {
  using VectorQ = typename Model::Q;
  using VectorU = typename Model::U;
  Model& model;

  int nq() const { return Model::nq; }
  int nu() const { return Model::nu; }
  void qdot(const VectorQ& q, const VectorU& u, VectorQ& qd) const { model.qdot(q, u, qd); }
  void udot(double t, const VectorQ& q, const VectorU& u, VectorU& ud) const { model.forwardDynamics(t, q, u, ud); }
  void normalize(VectorQ& q) const { Model::normalizeQuaternions(q); }
};
