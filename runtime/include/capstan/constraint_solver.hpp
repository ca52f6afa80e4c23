// Constrained dynamics on top of a model's constraint rows (constraints.hpp,
// or a generated class's constraintPositionErrors, constraintVelocityErrors,
// constraintJacobian and constraintBias): accelerations and multipliers from
// the KKT system, Baumgarte stabilization, coordinate projection and
// assembly. Over double; fixed-size when the model's types are.
//
// The equations (SPEC §5 signs: lambda is the negative of the constraint force):
//   M udot + G^T lambda = tau - C        (M udot0 = tau - C: forwardDynamics)
//   G udot              = gamma*
// solved by the range-space method on M's Cholesky factor M = L L^T, in the
// coordinates y = L^T udot where the kinetic metric is Euclidean:
//   B = G L^-T (rows x nu),  y0 = L^T udot0,
//   y = the point nearest y0 with B y = gamma*,  udot = L^-T y,
//   lambda from B^T lambda = y0 - y.
// B^T is factored by Householder QR with column pivoting, B^T P = Q R,
// which reveals its rank k with B's condition number (the Schur complement
// G M^-1 G^T = B B^T would square it): with Q_k the first k columns of Q
// and R11 R's leading k x k block,
//   c = Q_k^T y0 - R11^-T (P^T gamma*)_k,  y = y0 - Q_k c,
//   P^T lambda = (R11^-1 c, 0).
// Rows that depend on others (a planar loop's out-of-plane rows, a
// constraint that repeats another) or belong to disabled constraints (rows
// zeroed) are left out of the solve and get zero multipliers, not a crash;
// rank() says how many rows are independent.
//
// gamma* is gamma, exact (the default, with coordinate projection after each
// step, as Simbody), or with Baumgarte's terms for time constant T (RBDL's
// setBaumgarteTimeConstant): holonomic rows gamma - 2/T phi_v - 1/T^2 phi_p,
// nonholonomic rows gamma - 1/T phi_v.
//
// Projection: q by Gauss-Newton steps of minimum norm in u-space,
//   du = -Gp^+ phi_p(q),  q <- normalize(q + N(q) du),
// until max |phi_p| <= tolerance (damped where a full step does not reduce
// the error: projectPositions); then u <- u - G^+ phi_v (exact: phi_v is
// linear in u). The pseudo-inverses come from the same pivoted QR, of
// Gp^T and G^T. Started from the model's q0 this is the initial assembly:
// the nearest configuration (to first order) satisfying the position
// constraints.
//
// With few rows and a model that keeps its articulated-body factor (a
// generated class of a model without cables: forwardDynamics(t, q, u,
// udot, k) and solveMassMatrix(k, x), docs/generated-code.md), M is
// neither formed nor factored (Featherstone's M^-1 operator, as Simbody
// applies it per constraint row): udot0 from the articulated-body
// algorithm, W = M^-1 G^T one O(n) solve per row, then
//   (G W) lambda = G udot0 - gamma*,  udot = udot0 - W lambda,
// G W = B B^T by Cholesky. Rows that are zero (disabled constraints, a
// planar loop's out-of-plane rows) are left out with zero multipliers, as
// above. The condition of G W is B's squared, so where a row left in is
// dependent or nearly (a pivot below 1e-8 of the largest diagonal entry: a
// constraint that repeats another), accelerations() takes the range-space
// method instead (and for the next 100 calls): the results are the same,
// rank revealed as above.
//
// The factorizations are dense.hpp's plain loops, not Eigen's: they never
// allocate and take a fraction of the compile time (the solver is compiled
// into every constrained model's driver).
//
// The Model interface (a generated class, or an adapter of the interpreter):
//   types Q, U, MassMatrix, ConstraintVector (rows), PositionErrors
//   (holonomic rows), ConstraintJacobian (rows x nu); functions
//   forwardDynamics(t, q, u, udot), massMatrix(q, M), qdot(q, u, qd),
//   normalizeQuaternions(q), constraintPositionErrors(q, e),
//   constraintVelocityErrors(q, u, e), constraintJacobian(q, G),
//   constraintBias(q, u, gamma); optionally bias(q, u, C) and
//   appliedForces(t, q, u, tau), with forwardDynamics = M^-1 (tau - C):
//   accelerations() then uses them instead of forwardDynamics (not with
//   cables, whose forces only forwardDynamics applies).
#pragma once

#include <Eigen/Core>

#include "capstan/dense.hpp"

#include <concepts>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace capstan {

struct ConstraintSettings {
  double baumgarteTimeConstant = 0.0;  // s; > 0: Baumgarte stabilization (the caller then usually
                                       // stops projecting after each step)
  double tolerance = 1e-10;            // projection: max |phi_p| (m, or rad) and |phi_v| left
  int maxIterations = 25;              // projection: Gauss-Newton steps
  double rankThreshold = 1e-10;        // relative pivot below which a row counts as dependent
  // accelerations(): with a model that offers the articulated factor
  // (forwardDynamics(t, q, u, udot, k) and solveMassMatrix(k, x)), whether
  // it may take the path that never forms M (see the header). Auto: for
  // at least articulatedMinSpeeds speeds while the rows are few, 3 rows <=
  // nu. Below 16 speeds the range-space method's dense steps are cheap: on
  // 9-dof models the articulated-body path took 0.84-1.7x its time, on the
  // 30-dof contact chain 0.65x (docs/performance.md, "Constraints").
  enum class Method { Auto, RangeSpace, ArticulatedBody };
  Method method = Method::Auto;
  int articulatedMinSpeeds = 16;
};

// A constraint's rows (ConstraintVector indices): its holonomic rows, then
// its nonholonomic rows.
struct ConstraintRowRange {
  int holonomic = 0, holonomicCount = 0;
  int nonholonomic = 0, nonholonomicCount = 0;
};

// Projection or assembly did not converge: `row` is the position-error row
// (PositionErrors index) left with the largest error.
struct ProjectionFailure : std::runtime_error {
  ProjectionFailure(const std::string& message, int worstRow) : std::runtime_error(message), row(worstRow) {}
  int row = -1;
};

// Each constraint's rows, as the constraint solver takes them (enable and
// disable by index), from a model's constraintInfo (a generated class's,
// capstan::sim's models').
template <class M>
  requires requires(const M& m) { m.constraintInfo[0].holonomicRow; }
std::vector<ConstraintRowRange> constraintRowRanges(const M& model) {
  std::vector<ConstraintRowRange> rows;
  for (const auto& c : model.constraintInfo) rows.push_back({c.holonomicRow, c.holonomic, c.nonholonomicRow, c.nonholonomic});
  return rows;
}

// A model that keeps its articulated-body factor: a generated class's
// forwardDynamics(t, q, u, udot, k) and solveMassMatrix(k, x), x <- M^-1 x
// (docs/generated-code.md), or capstan::sim::AnyModel's, which says at run
// time (hasArticulatedFactor()).
template <class M>
concept HasArticulatedFactor =
    requires { typename M::ArticulatedFactor; } &&
    requires(const M& m, double t, const typename M::Q& q, const typename M::U& u, typename M::U& out,
             typename M::ArticulatedFactor& k) {
      m.forwardDynamics(t, q, u, out, k);
      M::solveMassMatrix(k, out);
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
      : model_(model), rows_(std::move(rows)), enabled_(rows_.size(), true), settings_(settings) {
    for (const ConstraintRowRange& r : rows_) totalRows_ += r.holonomicCount + r.nonholonomicCount;
  }

  ConstraintSettings& settings() { return settings_; }
  // Disabled constraints exert no force and are not projected (Simbody's
  // Constraint::disable); the model's functions still compute their errors,
  // which positionError() and the projection leave out.
  void enable(std::size_t constraint, bool on = true) { enabled_.at(constraint) = on; }
  bool enabled(std::size_t constraint) const { return enabled_.at(constraint); }
  // Independent rows in the last accelerations() (< rows(): redundant).
  int rank() const { return rank_; }
  // Whether the last accelerations() took the articulated-body path.
  bool articulatedLast() const { return articulatedLast_; }
  int rowCount() const { return static_cast<int>(gamma_.size()); }

  // udot and lambda at (t, q, u). A model with bias() and appliedForces()
  // (a generated class: its forwardDynamics is M^-1 of their difference)
  // gives y0 = L^T udot0 = L^-1 (tau - C) from the Cholesky factor the solve
  // needs anyway, without forwardDynamics factoring M (or running the
  // articulated-body passes) a second time.
  void accelerations(double t, const Q& q, const U& u, U& udot, Vector& lambda) {
    articulatedLast_ = false;
    if constexpr (kArticulated) {
      if (articulatedNow()) {
        if (skipArticulated_ > 0) {
          --skipArticulated_;
        } else if (articulatedAccelerations(t, q, u, udot, lambda)) {
          articulatedLast_ = true;
          return;
        } else {
          skipArticulated_ = kArticulatedRetry;
        }
      }
    }
    if constexpr (kSplitDynamics) {
      if (splitNow()) {
        model_.appliedForces(t, q, u, y_);
        model_.bias(q, u, w_);
        y_ -= w_;
        factorMassMatrix(q);
        dense::solveLower(L_, y_);  // y0 = L^-1 (tau - C)
        solve(q, u, udot, lambda);
        return;
      }
    }
    model_.forwardDynamics(t, q, u, udot);
    correct(q, u, udot, lambda);
  }

  // The same from the unconstrained accelerations udot (in: M^-1 (tau - C)
  // with whatever forces the caller applied; out: constrained).
  void correct(const Q& q, const U& u, U& udot, Vector& lambda) {
    factorMassMatrix(q);
    y_ = udot;
    dense::multiplyLowerTransposed(L_, y_);  // y0 = L^T udot0
    solve(q, u, udot, lambda);
  }

  // The largest |phi_p| of the enabled constraints at q.
  double positionError(const Q& q) {
    model_.constraintPositionErrors(q, perr_);
    maskDisabled(perr_);
    return perr_.size() > 0 ? perr_.cwiseAbs().maxCoeff() : 0.0;
  }

  // Moves q onto the position constraints (see the header); throws
  // ProjectionFailure naming the row with the largest error left. A
  // Gauss-Newton step that does not reduce |phi_p| (2-norm) -- far from the
  // constraints, near a singular configuration -- is replaced by damped
  // (Levenberg-Marquardt) steps du = -Gp^T (Gp Gp^T + mu I)^-1 phi_p, mu
  // raised until one does, so that constraints that cannot be met end at
  // the nearest configuration instead of wandering: the error reported is
  // what is left there.
  void projectPositions(Q& q) {
    constexpr int kMaxDampings = 40;
    double error = positionError(q);  // max |phi_p|
    double mu = 0.0;                  // the damping of the last damped step, kept while it works
    for (int iteration = 0;; ++iteration) {
      if (!(error > settings_.tolerance)) {
        if (std::isfinite(error)) return;
        int bad = 0;
        while (bad < perr_.size() && std::isfinite(perr_[bad])) ++bad;
        throw ProjectionFailure("the position errors are not finite", bad);
      }
      if (iteration == settings_.maxIterations) throw stuck("after " + std::to_string(iteration) + " iterations");
      model_.constraintJacobian(q, G_);
      maskDisabled(G_);
      Gp_ = G_.topRows(perr_.size());
      const double norm = perr_.norm();
      qStart_ = q;
      perrStart_ = perr_;
      // Tries q + N(q) du; keeps it if |phi_p| went down.
      auto tryStep = [&] {
        model_.qdot(qStart_, du_, dq_);
        q = qStart_ + dq_;
        model_.normalizeQuaternions(q);
        error = positionError(q);
        return perr_.norm() < norm;
      };
      if (mu == 0.0) {
        Gpt_ = Gp_.transpose();
        qrP_.compute(Gpt_, settings_.rankThreshold);
        du_.resize(Gpt_.rows());
        // du = -Gp^+ phi_p; -perrStart_ is read lazily, entry by entry: no
        // copy, and perrStart_ stays phi_p for the damped steps below.
        qrP_.solveTransposedMinimumNorm(-perrStart_, du_);
        if (tryStep()) continue;
      }
      GGt_ = Gp_ * Gp_.transpose();
      const double scale = std::max(GGt_.diagonal().maxCoeff(), 1e-300);
      if (mu == 0.0) mu = 1e-3 * scale;
      for (int damping = 0;; ++damping) {
        damped_ = GGt_;
        damped_.diagonal().array() += mu;
        dense::cholesky(damped_);  // positive definite: mu > 0
        x_ = perrStart_;
        dense::solveLower(damped_, x_);
        dense::solveLowerTransposed(damped_, x_);
        du_ = -(Gp_.transpose() * x_);
        if (tryStep()) {
          mu = mu > 1e-6 * scale ? mu / 4 : 0.0;  // back to Gauss-Newton once damping is negligible
          break;
        }
        if (damping == kMaxDampings) {
          q = qStart_;
          positionError(q);
          throw stuck("where no step reduces it");
        }
        mu *= 4;
      }
    }
  }

  // u <- u - G^+ phi_v at q (after projectPositions).
  void projectVelocities(const Q& q, U& u) {
    model_.constraintVelocityErrors(q, u, verr_);
    maskDisabled(verr_);
    if (!(verr_.size() > 0 && verr_.cwiseAbs().maxCoeff() > settings_.tolerance)) return;
    model_.constraintJacobian(q, G_);
    maskDisabled(G_);
    Bt_ = G_.transpose();
    qr_.compute(Bt_, settings_.rankThreshold);
    du_.resize(Bt_.rows());
    qr_.solveTransposedMinimumNorm(verr_, du_);  // G^+ phi_v
    u -= du_;
  }

  // Both, then the quaternions normalized: after each step and at assembly.
  void project(Q& q, U& u) {
    model_.normalizeQuaternions(q);
    projectPositions(q);
    projectVelocities(q, u);
  }

 private:
  // Not for a model with cables: its forwardDynamics adds the cable forces,
  // which appliedForces leaves out. A model that says at run time whether
  // its appliedForces and bias are those (splitDynamics(): a type-erased
  // capstan::sim::AnyModel) is taken at its word.
  static constexpr bool kRuntimeSplit = requires(const Model& m) {
    { m.splitDynamics() } -> std::convertible_to<bool>;
  };
  static constexpr bool kSplitDynamics =
      requires(const Model& m, double t, const Q& q, const U& u, U& out) {
        m.appliedForces(t, q, u, out);
        m.bias(q, u, out);
      } && (kRuntimeSplit || !requires { Model::ncables; });
  bool splitNow() const {
    if constexpr (kRuntimeSplit) return model_.splitDynamics();
    return true;
  }

  // The articulated-body path (see the header).
  static constexpr bool kArticulated = HasArticulatedFactor<Model>;
  template <class M>
  struct FactorOf {
    struct type {};
  };
  template <class M>
    requires HasArticulatedFactor<M>
  struct FactorOf<M> {
    using type = typename M::ArticulatedFactor;
  };

  // A type-erased model (capstan::sim::AnyModel) says at run time whether
  // it has the factor.
  static constexpr bool kRuntimeArticulated = requires(const Model& m) {
    { m.hasArticulatedFactor() } -> std::convertible_to<bool>;
  };
  bool articulatedNow() const {
    using Method = ConstraintSettings::Method;
    if (settings_.method == Method::RangeSpace) return false;
    if constexpr (kRuntimeArticulated) {
      if (!model_.hasArticulatedFactor()) return false;
    }
    const int nu = static_cast<int>(model_.nu);
    return settings_.method == Method::ArticulatedBody || (nu >= settings_.articulatedMinSpeeds && 3 * totalRows_ <= nu);
  }

  // udot and lambda by the articulated-body path; false (nothing of udot
  // or lambda to use) where G W is not safely positive definite.
  bool articulatedAccelerations(double t, const Q& q, const U& u, U& udot, Vector& lambda) {
    model_.forwardDynamics(t, q, u, udot, factor_);  // udot0
    model_.constraintJacobian(q, G_);
    model_.constraintBias(q, u, gamma_);
    if (settings_.baumgarteTimeConstant > 0) stabilize(q, u);
    maskDisabled(G_, &gamma_);
    // Zero rows (disabled, or zero by structure) are left out: their
    // multipliers are zero. With none left, udot0 is the answer.
    const Eigen::Index m = gamma_.size();
    lambda.setZero(m);
    rank_ = 0;
    for (Eigen::Index i = 0; i < m; ++i) rank_ += G_.row(i).cwiseAbs().maxCoeff() > 0.0;
    if (rank_ == 0) return true;
    Bt_ = G_.transpose();
    Model::solveMassMatrix(factor_, Bt_);  // W = M^-1 G^T (nu x rows)
    A_.noalias() = G_ * Bt_;
    c_.noalias() = G_ * udot;
    c_ -= gamma_;
    const double largest = A_.diagonal().maxCoeff();
    if (!std::isfinite(largest)) return false;
    for (Eigen::Index i = 0; i < m; ++i) {
      if (A_(i, i) > 0.0) continue;  // G_i M^-1 G_i^T > 0 for every nonzero row
      A_.row(i).setZero();
      A_.col(i).setZero();
      A_(i, i) = largest;
      c_[i] = 0.0;
    }
    if (!dense::cholesky(A_)) return false;
    for (Eigen::Index i = 0; i < m; ++i)
      if (A_(i, i) * A_(i, i) < kArticulatedPivot * largest) return false;
    dense::solveLower(A_, c_);
    dense::solveLowerTransposed(A_, c_);
    lambda = c_;
    udot.noalias() -= Bt_ * lambda;
    return true;
  }
  // The smallest pivot of G W's Cholesky factor, relative to its largest
  // diagonal entry, that the articulated-body path accepts.
  static constexpr double kArticulatedPivot = 1e-8;
  // After the articulated-body path gave way, the calls that go straight to
  // the range-space method: rows that depend on each other usually do so
  // by the model's structure (a constraint stated twice), and trying again
  // on every call would pay forward dynamics twice.
  static constexpr int kArticulatedRetry = 100;

  void factorMassMatrix(const Q& q) {
    model_.massMatrix(q, L_);
    if (!dense::cholesky(L_)) throw std::runtime_error("the mass matrix is not positive definite");
  }

  // udot and lambda from y_ = y0 = L^T udot0, with M's factor in L_.
  void solve(const Q& q, const U& u, U& udot, Vector& lambda) {
    model_.constraintJacobian(q, G_);
    model_.constraintBias(q, u, gamma_);
    if (gamma_.size() == 0) {  // no rows (only Free cuts): the tree's own motion
      rank_ = 0;
      lambda = Vector::Zero(0);
      udot = y_;
      dense::solveLowerTransposed(L_, udot);
      return;
    }
    if (settings_.baumgarteTimeConstant > 0) stabilize(q, u);
    maskDisabled(G_, &gamma_);
    Bt_ = G_.transpose();
    dense::solveLowerColumns(L_, Bt_);  // B^T = L^-1 G^T
    qr_.compute(Bt_, settings_.rankThreshold);
    const int k = rank_ = qr_.rank();
    // c = Q_k^T y0 - R11^-T (P^T gamma)_k, y = y0 - Q_k c.
    w_ = y_;
    qr_.applyQTransposed(w_);
    c_.resize(gamma_.size());
    for (int i = 0; i < k; ++i) c_[i] = gamma_[qr_.permutation(i)];
    qr_.solveRTransposed(c_, k);
    for (Eigen::Index i = 0; i < w_.size(); ++i) w_[i] = i < k ? w_[i] - c_[i] : 0.0;
    for (int i = 0; i < k; ++i) c_[i] = w_[i];
    qr_.applyQ(w_);
    y_ -= w_;
    udot = y_;
    dense::solveLowerTransposed(L_, udot);  // L^-T y
    // P^T lambda = (R11^-1 c, 0).
    qr_.solveR(c_, k);
    lambda.setZero(gamma_.size());
    for (int i = 0; i < k; ++i) lambda[qr_.permutation(i)] = c_[i];
  }

  // The failure at the current perr_: its largest entry, and why.
  ProjectionFailure stuck(const std::string& where) const {
    Eigen::Index worst = 0;
    perr_.cwiseAbs().maxCoeff(&worst);
    char off[32];
    std::snprintf(off, sizeof off, "%.3g", perr_[worst]);
    return ProjectionFailure("the position constraints cannot be satisfied near q: an error of " + std::string(off) +
                                 " is left " + where + " (tolerance " + formatTolerance() + ")",
                             static_cast<int>(worst));
  }

  std::string formatTolerance() const {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", settings_.tolerance);
    return b;
  }

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
  MassMatrix L_;  // M, then its Cholesky factor (lower triangle)
  typename FactorOf<Model>::type factor_;  // the articulated-body path's (kArticulated)
  // G W (rows x rows), then its Cholesky factor: the articulated-body path's
  Eigen::Matrix<double, Jacobian::RowsAtCompileTime, Jacobian::RowsAtCompileTime> A_;
  Jacobian G_;
  // B^T = L^-1 G^T, or G^T (nu x rows), and its pivoted QR; y, Q^T y and
  // Q_k c (nu); c, then R11^-1 c (rows).
  Eigen::Matrix<double, Jacobian::ColsAtCompileTime, Jacobian::RowsAtCompileTime> Bt_;
  dense::PivotedQR<decltype(Bt_)> qr_;
  U y_, w_;
  Vector gamma_, verr_, c_;
  PositionErrors perr_;
  // G's holonomic rows (mp x nu), transposed, and its pivoted QR.
  Eigen::Matrix<double, PositionErrors::RowsAtCompileTime, Jacobian::ColsAtCompileTime> Gp_;
  Eigen::Matrix<double, Jacobian::ColsAtCompileTime, PositionErrors::RowsAtCompileTime> Gpt_;
  dense::PivotedQR<decltype(Gpt_)> qrP_;
  U du_;
  Q dq_, qStart_;
  PositionErrors perrStart_, x_;
  // Gp Gp^T and with the damping added (mp x mp), for damped steps.
  Eigen::Matrix<double, PositionErrors::RowsAtCompileTime, PositionErrors::RowsAtCompileTime> GGt_, damped_;
  int rank_ = 0;
  int totalRows_ = 0;        // all rows of rows_
  int skipArticulated_ = 0;  // calls left before the articulated-body path is tried again
  bool articulatedLast_ = false;
};

}  // namespace capstan
