// Constrained dynamics on top of a model's constraint rows (constraints.hpp,
// or a generated class's constraintPositionErrors, constraintVelocityErrors,
// constraintJacobian and constraintBias): accelerations and multipliers from
// the KKT system, Baumgarte stabilization, coordinate projection and
// assembly. Over double; fixed-size when the model's types are.
//
// The equations (SPEC §5 signs: lambda is the negative of the constraint force):
//   M udot + G^T lambda = tau - C        (M udot0 = tau - C: forwardDynamics)
//   G udot              = gamma*
// solved by the range-space (Schur complement) method, which keeps the
// model's own forward dynamics and needs only M's Cholesky factor:
//   Y = M^-1 G^T,  A = G Y,  A lambda = G udot0 - gamma*,  udot = udot0 - Y lambda.
// A is factored rank-revealing (complete orthogonal decomposition), so
// redundant rows (a planar loop's out-of-plane rows) or disabled
// constraints (rows zeroed) give the minimum-norm multipliers, not a crash;
// rank() says how many rows are independent.
//
// gamma* is gamma, exact (the default, with coordinate projection after each
// step, as Simbody), or with Baumgarte's terms for time constant T (RBDL's
// setBaumgarteTimeConstant): holonomic rows gamma - 2/T phi_v - 1/T^2 phi_p,
// nonholonomic rows gamma - 1/T phi_v.
//
// Projection: q by Gauss-Newton steps of minimum norm in u-space,
//   du = -Gp^+ phi_p(q),  q <- normalize(q + N(q) du),
// until max |phi_p| <= tolerance; then u <- u - G^+ phi_v (exact: phi_v is
// linear in u). Started from the model's q0 this is the initial assembly: the
// nearest configuration (to first order) satisfying the position constraints.
//
// The Model interface (a generated class, or an adapter of the interpreter):
//   types Q, U, MassMatrix, ConstraintVector (rows), PositionErrors
//   (holonomic rows), ConstraintJacobian (rows x nu); functions
//   forwardDynamics(t, q, u, udot), massMatrix(q, M), qdot(q, u, qd),
//   normalizeQuaternions(q), constraintPositionErrors(q, e),
//   constraintVelocityErrors(q, u, e), constraintJacobian(q, G),
//   constraintBias(q, u, gamma).
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/QR>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace capstan {

struct ConstraintSettings {
  double baumgarteTimeConstant = 0.0;  // s; > 0: Baumgarte stabilization (then projection is usually off)
  bool project = true;                 // coordinate projection after each step
  double tolerance = 1e-10;            // projection: max |phi_p| (m, or rad) and |phi_v| left
  int maxIterations = 25;              // projection: Gauss-Newton steps
  double rankThreshold = 1e-10;        // relative pivot below which a row counts as dependent
};

// A constraint's rows (ConstraintVector indices): its holonomic rows, then
// its nonholonomic rows.
struct ConstraintRowRange {
  int holonomic = 0, holonomicCount = 0;
  int nonholonomic = 0, nonholonomicCount = 0;
};

// Projection or assembly did not converge.
struct ProjectionFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class Model>
class ConstraintSolver {
 public:
  using Q = typename Model::Q;
  using U = typename Model::U;
  using MassMatrix = typename Model::MassMatrix;
  using Vector = typename Model::ConstraintVector;
  using PositionErrors = typename Model::PositionErrors;
  using Jacobian = typename Model::ConstraintJacobian;

  // `rows`: each constraint's rows (disable() takes an index into it).
  ConstraintSolver(const Model& model, std::vector<ConstraintRowRange> rows, ConstraintSettings settings = {})
      : model_(model), rows_(std::move(rows)), enabled_(rows_.size(), true), settings_(settings) {}

  ConstraintSettings& settings() { return settings_; }
  // Disabled constraints exert no force and are not projected (Simbody's
  // Constraint::disable); their errors are still reported.
  void enable(std::size_t constraint, bool on = true) { enabled_.at(constraint) = on; }
  bool enabled(std::size_t constraint) const { return enabled_.at(constraint); }
  // Independent rows in the last accelerations() (< rows(): redundant).
  int rank() const { return rank_; }
  int rowCount() const { return static_cast<int>(gamma_.size()); }

  // udot and lambda at (t, q, u).
  void accelerations(double t, const Q& q, const U& u, U& udot, Vector& lambda) {
    model_.forwardDynamics(t, q, u, udot);
    model_.massMatrix(q, M_);
    model_.constraintJacobian(q, G_);
    model_.constraintBias(q, u, gamma_);
    if (gamma_.size() == 0) {  // no rows (only Free cuts): the tree's own motion
      rank_ = 0;
      lambda = Vector::Zero(0);
      return;
    }
    if (settings_.baumgarteTimeConstant > 0) stabilize(q, u);
    maskDisabled(G_, &gamma_);
    llt_.compute(M_);
    Y_ = llt_.solve(G_.transpose());
    A_ = G_ * Y_;
    cod_.setThreshold(settings_.rankThreshold);
    cod_.compute(A_);
    rank_ = static_cast<int>(cod_.rank());
    lambda = cod_.solve(Vector(G_ * udot - gamma_));
    udot -= Y_ * lambda;
  }

  // The largest |phi_p| of the enabled constraints at q.
  double positionError(const Q& q) {
    model_.constraintPositionErrors(q, perr_);
    maskDisabled(perr_);
    return perr_.size() > 0 ? perr_.cwiseAbs().maxCoeff() : 0.0;
  }

  // Moves q onto the position constraints (see the header); throws
  // ProjectionFailure naming the constraint with the largest error left.
  void projectPositions(Q& q) {
    for (int iteration = 0;; ++iteration) {
      const double error = positionError(q);
      if (!(error > settings_.tolerance)) {
        if (std::isfinite(error)) return;
        throw ProjectionFailure("the constraint errors are not finite");
      }
      if (iteration == settings_.maxIterations) {
        Eigen::Index worst = 0;
        perr_.cwiseAbs().maxCoeff(&worst);
        std::ostringstream message;  // not std::to_string: it prints a 1e-10 tolerance as 0.000000
        message << "no configuration satisfies the position constraints within " << settings_.tolerance << " after "
                << iteration << " Gauss-Newton steps: row " << worst << " is still off by " << perr_[worst];
        throw ProjectionFailure(message.str());
      }
      model_.constraintJacobian(q, G_);
      maskDisabled(G_);
      const auto Gp = G_.topRows(perr_.size());
      codG_.setThreshold(settings_.rankThreshold);
      codG_.compute(Gp);
      du_ = codG_.solve(PositionErrors(-perr_));
      model_.qdot(q, du_, dq_);
      q += dq_;
      model_.normalizeQuaternions(q);
    }
  }

  // u <- u - G^+ phi_v at q (after projectPositions).
  void projectVelocities(const Q& q, U& u) {
    model_.constraintVelocityErrors(q, u, verr_);
    maskDisabled(verr_);
    if (!(verr_.size() > 0 && verr_.cwiseAbs().maxCoeff() > settings_.tolerance * 1e-3)) return;
    model_.constraintJacobian(q, G_);
    maskDisabled(G_);
    codV_.setThreshold(settings_.rankThreshold);
    codV_.compute(G_);
    u -= codV_.solve(verr_);
  }

  // Both, then the quaternions normalized: after each step and at assembly.
  void project(Q& q, U& u) {
    model_.normalizeQuaternions(q);
    projectPositions(q);
    projectVelocities(q, u);
  }

 private:
  // gamma* with Baumgarte's terms (see the header).
  void stabilize(const Q& q, const U& u) {
    const double T = settings_.baumgarteTimeConstant;
    model_.constraintPositionErrors(q, perr_);
    model_.constraintVelocityErrors(q, u, verr_);
    const Eigen::Index mp = perr_.size();
    for (Eigen::Index i = 0; i < gamma_.size(); ++i)
      gamma_[i] -= i < mp ? 2.0 / T * verr_[i] + perr_[i] / (T * T) : verr_[i] / T;
  }

  // Zeroes the rows of disabled constraints in `m` (and `v`).
  template <class Matrix>
  void maskDisabled(Matrix& m, Vector* v = nullptr) {
    for (std::size_t k = 0; k < rows_.size(); ++k) {
      if (enabled_[k]) continue;
      const ConstraintRowRange& r = rows_[k];
      for (const auto& [first, count] : {std::pair{r.holonomic, r.holonomicCount}, std::pair{r.nonholonomic, r.nonholonomicCount}}) {
        for (int i = first; i < first + count; ++i) {
          if (i >= m.rows()) continue;
          m.row(i).setZero();
          if (v) (*v)[i] = 0.0;
        }
      }
    }
  }

  const Model& model_;
  std::vector<ConstraintRowRange> rows_;
  std::vector<bool> enabled_;
  ConstraintSettings settings_;
  MassMatrix M_;
  Jacobian G_;
  Eigen::Matrix<double, Jacobian::ColsAtCompileTime, Jacobian::RowsAtCompileTime> Y_;
  Eigen::Matrix<double, Jacobian::RowsAtCompileTime, Jacobian::RowsAtCompileTime> A_;
  Vector gamma_, verr_;
  PositionErrors perr_;
  U du_;
  Q dq_;
  Eigen::LLT<MassMatrix> llt_;
  Eigen::CompleteOrthogonalDecomposition<decltype(A_)> cod_;
  Eigen::CompleteOrthogonalDecomposition<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>> codG_, codV_;
  int rank_ = 0;
};

}  // namespace capstan
