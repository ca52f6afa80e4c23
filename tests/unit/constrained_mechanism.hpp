// The interpreter's side of ConstraintSolver's Model interface
// (constraint_solver.hpp's header comment), and the constraints the
// constraint tests build: a Mechanism<double>, its constraints
// (constraints.hpp) and applied joint forces tau, evaluated with the
// World-frame algorithms (dynamics.hpp, kinematics.hpp). Shared by
// constraints_test, constraint_solver_test and
// crosscheck/constraints_simbody_test.
#pragma once

#include <capstan/constraint_solver.hpp>
#include <capstan/constraints.hpp>
#include <capstan/dynamics.hpp>

#include <Eigen/Dense>

#include <utility>
#include <vector>

namespace capstan::testing {

// Each constraint's rows in evaluateConstraints' order: every holonomic row
// first, in constraint order, then every nonholonomic row.
inline std::vector<ConstraintRowRange> constraintRowRanges(const std::vector<Constraint<double>>& constraints) {
  std::vector<ConstraintRowRange> ranges;
  int holonomic = 0, nonholonomic = holonomicRows(constraints);
  for (const Constraint<double>& c : constraints) {
    ranges.push_back({holonomic, c.holonomic(), nonholonomic, c.nonholonomic()});
    holonomic += c.holonomic();
    nonholonomic += c.nonholonomic();
  }
  return ranges;
}

// ConstraintSolver's Model over a Mechanism<double>. The solver calls const
// functions on a const reference, so the kinematics workspace is mutable;
// each call re-runs forward kinematics at its own (q, u).
class ConstrainedMechanism {
 public:
  using Q = VectorX<double>;
  using U = VectorX<double>;
  using MassMatrix = MatrixX<double>;
  using ConstraintVector = VectorX<double>;
  using PositionErrors = VectorX<double>;
  using ConstraintJacobian = MatrixX<double>;

  ConstrainedMechanism(Mechanism<double> model, std::vector<Constraint<double>> constraints)
      : model_(std::move(model)),
        constraints_(std::move(constraints)),
        tau_(VectorX<double>::Zero(model_.nu)),
        data_(model_) {}

  const Mechanism<double>& model() const { return model_; }
  const std::vector<Constraint<double>>& constraints() const { return constraints_; }
  std::vector<ConstraintRowRange> rowRanges() const { return constraintRowRanges(constraints_); }
  VectorX<double>& tau() { return tau_; }  // (nu) applied joint forces
  const VectorX<double>& tau() const { return tau_; }

  // Every row at (q, u).
  ConstraintRows<double> rows(const Q& q, const U& u) const {
    forwardKinematics(model_, data_, q, u);
    return evaluateConstraints(model_, data_, constraints_, &q, &u);
  }

  void forwardDynamics(double /*t*/, const Q& q, const U& u, U& udot) const {
    udot = capstan::forwardDynamics(model_, data_, q, u, tau_);
  }
  void massMatrix(const Q& q, MassMatrix& M) const { M = crba(model_, data_, q); }
  void qdot(const Q& q, const U& u, Q& qd) const { qdotFromU(model_, q, u, qd); }
  void normalizeQuaternions(Q& q) const { capstan::normalizeQuaternions(model_, q); }
  void constraintPositionErrors(const Q& q, PositionErrors& e) const { e = rows(q, zeroU()).positionErrors; }
  void constraintVelocityErrors(const Q& q, const U& u, ConstraintVector& e) const { e = rows(q, u).velocityErrors; }
  void constraintJacobian(const Q& q, ConstraintJacobian& G) const { G = rows(q, zeroU()).G; }
  void constraintBias(const Q& q, const U& u, ConstraintVector& gamma) const { gamma = rows(q, u).gamma; }

 private:
  U zeroU() const { return U::Zero(model_.nu); }

  Mechanism<double> model_;
  std::vector<Constraint<double>> constraints_;
  VectorX<double> tau_;
  mutable Data<double> data_;
};

// A loop-closing cut joint of `type` from F to M, with the axes of `axes`
// (a Joint's axis, axis_a and axis_b, in F).
inline Constraint<double> cutJoint(JointType type, const BodyFrame<double>& F, const BodyFrame<double>& M,
                                   const Joint<double>& axes) {
  Constraint<double> c;
  c.type = ConstraintType::LoopJoint;
  c.name = std::string("cut ") + jointTypeName(type);
  c.F = F;
  c.M = M;
  c.rows = loopClosureRows(type, axes.axis, axes.axis_a, axes.axis_b);
  return c;
}

// Simbody's SphereOnSphereContact: sphere centers Sf (frame F's origin,
// radius rf) and Sb (M's origin, radius rb).
inline Constraint<double> sphereContact(const BodyFrame<double>& Sf, double rf, const BodyFrame<double>& Sb,
                                        double rb, bool rolling) {
  Constraint<double> c;
  c.type = ConstraintType::SphereOnSphere;
  c.name = rolling ? "rolling sphere contact" : "sphere contact";
  c.F = Sf;
  c.M = Sb;
  c.radiusF = rf;
  c.radiusB = rb;
  c.rolling = rolling;
  return c;
}

// P = 1 - G^+ G, the projector onto G's null space (the motions every row
// allows).
inline MatrixX<double> nullSpaceProjector(const MatrixX<double>& G) {
  if (G.rows() == 0) return MatrixX<double>::Identity(G.cols(), G.cols());
  const Eigen::CompleteOrthogonalDecomposition<MatrixX<double>> cod(G);
  return MatrixX<double>::Identity(G.cols(), G.cols()) - cod.pseudoInverse() * G;
}

}  // namespace capstan::testing
