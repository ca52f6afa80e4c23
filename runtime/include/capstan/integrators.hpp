// Time integrators for the interpreter and for generated code: fixed-step
// RK4, semi-implicit (symplectic) Euler and adaptive Dormand-Prince 5(4)
// with error control and dense output at evenly spaced output times.
//
// Systems are duck-typed (C++20 requires-expressions), with any Eigen column
// vector type (dynamic for the interpreter, fixed-size in generated code):
//
// First-order system (rk4, dormandPrince): a callable
//   void(double t, const Vector& x, Vector& xdot)
// or an object with
//   void derivative(double t, const Vector& x, Vector& xdot);     required
//   void project(Vector& x);             optional: after each accepted step
//                                        (quaternion normalization)
//   std::string coordinateName(int i);   optional: used in error messages
//
// Mechanical system (semiImplicitEuler; FirstOrder<> adapts it to the above
// with x = [q; u]):
//   int nq() const; int nu() const;
//   void qdot(const Vector& q, const Vector& u, Vector& qdot);    qdot = N(q) u
//   void udot(double t, const Vector& q, const Vector& u, Vector& udot);
//   void normalize(Vector& q);           optional
//   void project(Vector& q, Vector& u);  optional: after each accepted step
//                                        instead of normalize (constraint
//                                        projection, constraint_solver.hpp)
//   std::string coordinateName(int i);   optional, i in [0, nq + nu)
//   using VectorQ = ...; using VectorU = ...;   optional: q and u types
//                                        (default Eigen::VectorXd)
//   void udotDerivatives(double t, const Vector& q, const Vector& u,
//                        MatrixU& dudot_dq, MatrixU& dudot_du);
//                                        optional: d udot / dq along the tangent
//                                        space (column j along q + eps N(q) e_j) and
//                                        d udot / du, each nu x nu, as generated
//                                        forwardDynamicsDerivatives gives them; then
//                                        FirstOrder<> has jacobian() (df/dx, for cvode)
//   using MatrixU = ...;                 optional: their type (default Eigen::MatrixXd)
//
// Every integrator returns an IntegrationStatus; a non-finite state is never
// returned silently: the status names the time and the coordinate.
// Integrators allocate their stage vectors once per call, never per step.
#pragma once

#include <Eigen/Core>

#include <capstan/tangent.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

namespace capstan {

struct IntegrationStatus {
  bool ok = true;
  double time = 0.0;              // s; the time the returned state belongs to
  long steps = 0;                 // accepted steps
  long rejectedSteps = 0;         // adaptive only
  long derivativeEvaluations = 0;
  std::string message;            // empty when ok
};

struct IntegratorSettings {
  double stepSize = 1e-3;           // s; fixed-step methods: the step (shortened to fit
                                    // output times); adaptive: the first trial step (<= 0: automatic)
  double outputInterval = 0.0;      // s; > 0: observe at t0 + k * outputInterval; 0: after every step
  double relativeTolerance = 1e-8;  // adaptive only
  double absoluteTolerance = 1e-10; // adaptive only
  double maxStepSize = std::numeric_limits<double>::infinity();  // s, adaptive only
  long maxSteps = 100'000'000;      // accepted plus rejected
};

// The default observer: ignores every output.
struct NoObserver {
  template <class Vector>
  void operator()(double, const Vector&) const {}
};

namespace detail {

inline std::string formatTime(double t) {
  std::ostringstream out;
  out.precision(17);
  out << t;
  return out.str();
}

template <class System>
std::string coordinateLabel(System& system, int i) {
  if constexpr (requires { { system.coordinateName(i) } -> std::convertible_to<std::string>; }) {
    return "coordinate " + std::to_string(i) + " (`" + std::string(system.coordinateName(i)) + "`)";
  } else {
    return "coordinate " + std::to_string(i);
  }
}

template <class System, class Vector>
void derivative(System& system, double t, const Vector& x, Vector& xdot) {
  if constexpr (requires { system.derivative(t, x, xdot); }) {
    system.derivative(t, x, xdot);
  } else {
    system(t, x, xdot);
  }
}

template <class System, class Vector>
void project(System& system, Vector& x) {
  if constexpr (requires { system.project(x); }) system.project(x);
}

// Index of the first non-finite entry, or -1.
template <class Vector>
int firstNonFinite(const Vector& x) {
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    if (!std::isfinite(x[i])) return i;
  }
  return -1;
}

// The failure status for a non-finite `x` in the step from t0 to t1, naming
// up to four offending coordinates.
template <class System, class Vector>
IntegrationStatus nonFinite(System& system, IntegrationStatus status, double t0, double t1, const Vector& x,
                            const char* what) {
  constexpr int kMaxNamed = 4;
  std::string names;
  int count = 0;
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    if (std::isfinite(x[i])) continue;
    if (count < kMaxNamed) names += (count > 0 ? ", " : "") + coordinateLabel(system, i);
    ++count;
  }
  if (count > kMaxNamed) names += " and " + std::to_string(count - kMaxNamed) + " more";
  status.ok = false;
  status.time = t0;
  status.message = std::string("non-finite ") + what + " in the step from t = " + formatTime(t0) + " to t = " +
                   formatTime(t1) + ": " + names + "; the state at t = " + formatTime(t0) + " is returned";
  return status;
}

// Evenly spaced fixed steps: the step is shortened so that a whole number
// fits each output interval; returns (step, steps per output).
inline std::pair<double, long> fixedStepGrid(const IntegratorSettings& settings) {
  if (settings.outputInterval <= 0.0) return {settings.stepSize, 1};
  const long perOutput = std::max(1L, static_cast<long>(std::ceil(settings.outputInterval / settings.stepSize - 1e-9)));
  return {settings.outputInterval / static_cast<double>(perOutput), perOutput};
}

inline IntegrationStatus badSettings(const std::string& message, double t0) {
  IntegrationStatus status;
  status.ok = false;
  status.time = t0;
  status.message = message;
  return status;
}

// Drives a fixed-step method `step(t, h, x) -> evaluations` from t0 to t1.
template <class System, class Vector, class Step, class Observer>
IntegrationStatus fixedStepLoop(System& system, double t0, double t1, Vector& x, const IntegratorSettings& settings,
                                Observer& observe, Step&& step) {
  if (!(settings.stepSize > 0.0)) return badSettings("step size must be positive", t0);
  if (!(t1 >= t0)) return badSettings("end time is before start time", t0);
  IntegrationStatus status;
  status.time = t0;
  if (firstNonFinite(x) >= 0) return nonFinite(system, status, t0, t0, x, "initial state");
  const auto [h, perOutput] = fixedStepGrid(settings);
  observe(t0, std::as_const(x));
  Vector saved = x;
  for (long k = 0;; ++k) {
    const double tk = t0 + static_cast<double>(k) * h;
    if (tk >= t1 - 1e-12 * std::max(1.0, std::abs(t1))) break;
    const double tnext = std::min(t0 + static_cast<double>(k + 1) * h, t1);
    saved = x;
    status.derivativeEvaluations += step(tk, tnext - tk, x);
    if (firstNonFinite(x) >= 0) {
      const IntegrationStatus failed = nonFinite(system, status, tk, tnext, x, "state");
      x = saved;
      return failed;
    }
    ++status.steps;
    status.time = tnext;
    if ((k + 1) % perOutput == 0 || settings.outputInterval <= 0.0 || tnext == t1) observe(tnext, std::as_const(x));
  }
  return status;
}

}  // namespace detail

// Classical fourth-order Runge-Kutta with a fixed step; `x` is advanced from
// t0 to t1 in place; the system's project() runs after every step.
template <class System, class Vector, class Observer = NoObserver>
IntegrationStatus rk4(System& system, double t0, double t1, Vector& x, const IntegratorSettings& settings,
                      Observer observe = {}) {
  Vector k1 = x, k2 = x, k3 = x, k4 = x, tmp = x;
  return detail::fixedStepLoop(system, t0, t1, x, settings, observe, [&](double t, double h, Vector& y) {
    detail::derivative(system, t, y, k1);
    tmp = y + (h / 2) * k1;
    detail::derivative(system, t + h / 2, tmp, k2);
    tmp = y + (h / 2) * k2;
    detail::derivative(system, t + h / 2, tmp, k3);
    tmp = y + h * k3;
    detail::derivative(system, t + h, tmp, k4);
    y += (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4);
    detail::project(system, y);
    return 4L;
  });
}

// The q and u vector types of a mechanical system: its nested VectorQ and
// VectorU when it declares them (fixed-size generated code), else VectorXd.
template <class Mechanical>
struct MechanicalVectors {
  using Q = Eigen::VectorXd;
  using U = Eigen::VectorXd;
};
template <class Mechanical>
  requires requires { typename Mechanical::VectorQ; typename Mechanical::VectorU; }
struct MechanicalVectors<Mechanical> {
  using Q = typename Mechanical::VectorQ;
  using U = typename Mechanical::VectorU;
};

// The nu x nu matrix type of a mechanical system's udotDerivatives(): its
// nested MatrixU when it declares one, else MatrixXd.
template <class Mechanical>
struct MechanicalMatrix {
  using U = Eigen::MatrixXd;
};
template <class Mechanical>
  requires requires { typename Mechanical::MatrixU; }
struct MechanicalMatrix<Mechanical> {
  using U = typename Mechanical::MatrixU;
};

template <class Mechanical>
concept HasUdotDerivatives =
    requires(Mechanical& s, double t, const typename MechanicalVectors<Mechanical>::Q& q,
             const typename MechanicalVectors<Mechanical>::U& u, typename MechanicalMatrix<Mechanical>::U& d) {
      s.udotDerivatives(t, q, u, d, d);
    };

// x = [q; u] view of a mechanical system for the first-order integrators.
// Vector is the type of x.
template <class Mechanical, class Vector = Eigen::VectorXd>
struct FirstOrder {
  using Q = typename MechanicalVectors<Mechanical>::Q;
  using U = typename MechanicalVectors<Mechanical>::U;
  using MatrixU = typename MechanicalMatrix<Mechanical>::U;
  Mechanical& system;
  Q q, qdot;  // scratch, sized once
  U u, udot;

  explicit FirstOrder(Mechanical& s) : system(s), q(s.nq()), qdot(s.nq()), u(s.nu()), udot(s.nu()) {}

  // J = df/dx (nq + nu square, into J) of f(x) = [N(q) u; udot(q, u)] at
  // x = [q; u], with q the raw coordinates (a quaternion's four numbers):
  //
  //   J = [ d(N(q) u)/dq    N(q)   ]
  //       [ D_q N^+         D_u    ]
  //
  // - N(q) u is linear in u, so column j of N is qdot(q, e_j); and it is
  //   affine in q for every joint type (a quaternion's rate is linear in the
  //   quaternion, every other rate is u itself), so column i of
  //   d(N(q) u)/dq is qdot(e_i, u) - qdot(0, u), exactly.
  // - D_q = (d udot/dq) N(q) is udotDerivatives' tangent-space derivative.
  //   The raw derivative G = d udot/dq (nu x nq) has G N = D_q, and G r = 0
  //   for every r orthogonal to the columns of N: those are the directions
  //   that scale a quaternion (N's columns for a quaternion are orthogonal
  //   to it), and the dynamics read a quaternion only through its rotation,
  //   which does not change when it is scaled (rotationFromQuaternion
  //   divides by |q|^2). So G = D_q N^+, with N^+ = (N^T N)^-1 N^T; N's
  //   columns are mutually orthogonal (identity columns, and a quaternion's
  //   three rate columns of length |q|/2 each), so N^T N is diagonal and
  //   N^+ has rows N e_j / |N e_j|^2. A force law that reads a quaternion's
  //   numbers directly makes G's scaling direction approximate; the
  //   integrator's projection (quaternion normalization) removes that
  //   direction's drift after each step, so Newton's iteration converges
  //   all the same.
  // Called once per Jacobian evaluation (not per step); with dynamic sizes
  // (the interpreter) it allocates a few vectors per call.
  void jacobian(double t, const Vector& x, Eigen::Ref<Eigen::MatrixXd> J)
    requires HasUdotDerivatives<Mechanical>
  {
    const int nq = system.nq(), nu = system.nu();
    q = x.head(nq);
    u = x.segment(nq, nu);
    dudotDq_.resize(nu, nu);
    dudotDu_.resize(nu, nu);
    N_.resize(nq, nu);
    pinvN_.resize(nu, nq);
    system.udotDerivatives(t, q, u, dudotDq_, dudotDu_);
    U e = U::Zero(nu);
    const auto columnOfN = [&](int j, Q& column) {
      e[j] = 1.0;
      system.qdot(q, e, column);
      e[j] = 0.0;
      N_.col(j) = column;
    };
    tangentFromRaw(nu, columnOfN, qdot, pinvN_);
    Q unit = Q::Zero(nq);
    system.qdot(unit, u, qdot);
    const Q rateAtZero = qdot;
    for (int i = 0; i < nq; ++i) {
      unit[i] = 1.0;
      system.qdot(unit, u, qdot);
      J.col(i).head(nq) = qdot - rateAtZero;
      unit[i] = 0.0;
    }
    J.topRightCorner(nq, nu) = N_;
    J.bottomLeftCorner(nu, nq).noalias() = dudotDq_ * pinvN_;
    J.bottomRightCorner(nu, nu) = dudotDu_;
  }

  void derivative(double t, const Vector& x, Vector& xdot) {
    const int nq = system.nq(), nu = system.nu();
    q = x.head(nq);
    u = x.segment(nq, nu);
    system.qdot(q, u, qdot);
    system.udot(t, q, u, udot);
    xdot.head(nq) = qdot;
    xdot.segment(nq, nu) = udot;
  }
  void project(Vector& x) {
    if constexpr (requires { system.project(q, u); }) {
      q = x.head(system.nq());
      u = x.segment(system.nq(), system.nu());
      system.project(q, u);
      x.head(system.nq()) = q;
      x.segment(system.nq(), system.nu()) = u;
    } else if constexpr (requires { system.normalize(q); }) {
      q = x.head(system.nq());
      system.normalize(q);
      x.head(system.nq()) = q;
    }
  }
  std::string coordinateName(int i) {
    if constexpr (requires { { system.coordinateName(i) } -> std::convertible_to<std::string>; }) {
      return system.coordinateName(i);
    } else {
      return (i < system.nq() ? "q[" + std::to_string(i) : "u[" + std::to_string(i - system.nq())) + "]";
    }
  }

 private:
  MatrixU dudotDq_, dudotDu_;   // jacobian()'s scratch
  Eigen::MatrixXd N_, pinvN_;  // (nq x nu), (nu x nq)
};

// Semi-implicit (symplectic) Euler with a fixed step:
//   u+ = u + h udot(t, q, u),  q+ = q + h N(q) u+,  then normalize(q+).
// First order; for a separable Hamiltonian system it is symplectic, so the
// energy error stays bounded instead of drifting. The observer sees
// x = [q; u] as an Eigen::VectorXd.
template <class Mechanical, class VectorQ, class VectorU, class Observer = NoObserver>
IntegrationStatus semiImplicitEuler(Mechanical& system, double t0, double t1, VectorQ& q, VectorU& u,
                                    const IntegratorSettings& settings, Observer observe = {}) {
  using Vector = Eigen::VectorXd;
  const int nq = system.nq(), nu = system.nu();
  Vector x(nq + nu);
  // Not `x << q, u`: for a fixed 1-vector q (a one-dof model) GCC 12 -O3
  // inlines the comma initializer's 2-D block copy and flags its 16-byte
  // packet load from q under -Warray-bounds, on a path that runs only for
  // blocks of two or more rows. Segment copies take a 1-D path it does not
  // flag. (Same result; tested by "fixed-size systems integrate exactly like
  // dynamic ones" in tests/unit/integrators_test.cpp.)
  x.head(nq) = q;
  x.tail(nu) = u;
  VectorQ qdot = q, qs = q;
  VectorU udot = u, us = u;
  FirstOrder<Mechanical, Vector> names(system);
  const IntegrationStatus status =
      detail::fixedStepLoop(names, t0, t1, x, settings, observe, [&](double t, double h, Vector& y) {
        qs = y.head(nq);
        us = y.segment(nq, nu);
        system.udot(t, qs, us, udot);
        us += h * udot;
        system.qdot(qs, us, qdot);
        qs += h * qdot;
        if constexpr (requires { system.project(qs, us); }) {
          system.project(qs, us);
        } else if constexpr (requires { system.normalize(qs); }) {
          system.normalize(qs);
        }
        y.head(nq) = qs;
        y.segment(nq, nu) = us;
        return 2L;
      });
  q = x.head(nq);
  u = x.segment(nq, nu);
  return status;
}

// Adaptive Dormand-Prince 5(4) (Hairer, Norsett & Wanner, "Solving ODEs I",
// II.5) with local extrapolation, first-same-as-last, the standard
// step-size controller on the RMS of err_i / (atol + rtol max(|x_i|, |x+_i|)),
// and Hairer's fourth-order dense output for evenly spaced observations.
// A non-finite trial state is rejected like a too-large step; it fails only
// when the step would have to become negligibly small.
template <class System, class Vector, class Observer = NoObserver>
IntegrationStatus dormandPrince(System& system, double t0, double t1, Vector& x, const IntegratorSettings& settings,
                                Observer observe = {}) {
  // Butcher tableau.
  constexpr double c2 = 1.0 / 5, c3 = 3.0 / 10, c4 = 4.0 / 5, c5 = 8.0 / 9;
  constexpr double a21 = 1.0 / 5;
  constexpr double a31 = 3.0 / 40, a32 = 9.0 / 40;
  constexpr double a41 = 44.0 / 45, a42 = -56.0 / 15, a43 = 32.0 / 9;
  constexpr double a51 = 19372.0 / 6561, a52 = -25360.0 / 2187, a53 = 64448.0 / 6561, a54 = -212.0 / 729;
  constexpr double a61 = 9017.0 / 3168, a62 = -355.0 / 33, a63 = 46732.0 / 5247, a64 = 49.0 / 176,
                   a65 = -5103.0 / 18656;
  constexpr double a71 = 35.0 / 384, a73 = 500.0 / 1113, a74 = 125.0 / 192, a75 = -2187.0 / 6784, a76 = 11.0 / 84;
  // Error coefficients: fifth- minus fourth-order weights.
  constexpr double e1 = 71.0 / 57600, e3 = -71.0 / 16695, e4 = 71.0 / 1920, e5 = -17253.0 / 339200,
                   e6 = 22.0 / 525, e7 = -1.0 / 40;
  // Dense output.
  constexpr double d1 = -12715105075.0 / 11282082432, d3 = 87487479700.0 / 32700410799,
                   d4 = -10690763975.0 / 1880347072, d5 = 701980252875.0 / 199316789632,
                   d6 = -1453857185.0 / 822651844, d7 = 69997945.0 / 29380423;
  constexpr double kSafety = 0.9, kMinFactor = 0.2, kMaxFactor = 10.0;

  const double rtol = settings.relativeTolerance, atol = settings.absoluteTolerance;
  // atol = 0 is pure relative tolerance; scaledNorm handles the zero scale it gives.
  if (!(rtol > 0.0) || !(atol >= 0.0))
    return detail::badSettings("relative tolerance must be positive and absolute tolerance non-negative", t0);
  if (!(settings.maxStepSize > 0.0)) return detail::badSettings("maximum step size must be positive", t0);
  if (!(t1 >= t0)) return detail::badSettings("end time is before start time", t0);
  IntegrationStatus status;
  status.time = t0;
  if (detail::firstNonFinite(x) >= 0) return detail::nonFinite(system, status, t0, t0, x, "initial state");
  const long n = static_cast<long>(x.size());
  Vector k1 = x, k2 = x, k3 = x, k4 = x, k5 = x, k6 = x, k7 = x, y = x, err = x;
  Vector r1 = x, r2 = x, r3 = x, r4 = x, r5 = x, dense = x;
  auto scaledNorm = [&](const Vector& e, const Vector& a, const Vector& b) {
    double sum = 0.0;
    for (long i = 0; i < n; ++i) {
      const double sc = atol + rtol * std::max(std::abs(a[i]), std::abs(b[i]));
      // With atol = 0 a coordinate that is exactly 0 in both states has no scale:
      // no error there is no error (not 0/0), any error there rejects the step.
      if (sc == 0.0) {
        if (e[i] != 0.0) return std::numeric_limits<double>::infinity();
        continue;
      }
      sum += (e[i] / sc) * (e[i] / sc);
    }
    return n > 0 ? std::sqrt(sum / static_cast<double>(n)) : 0.0;
  };

  detail::derivative(system, t0, x, k1);
  ++status.derivativeEvaluations;
  // k1 feeds every step (and the first-step heuristic): a NaN here would make
  // h NaN, every comparison false, and the loop spin until maxSteps.
  if (detail::firstNonFinite(k1) >= 0) return detail::nonFinite(system, status, t0, t0, k1, "derivative");
  double h = settings.stepSize;
  if (!(h > 0.0)) {  // Hairer's starting step heuristic
    const double d0 = scaledNorm(x, x, x), dd = scaledNorm(k1, x, x);
    h = (d0 < 1e-5 || dd < 1e-5) ? 1e-6 : 0.01 * d0 / dd;
  }
  h = std::min({h, settings.maxStepSize, std::max(t1 - t0, 0.0)});
  // A first step that is not a usable number (e.g. 0 from an infinite scaled
  // derivative norm with atol = 0) would stall the loop; start small and let
  // the controller adapt.
  if (t1 > t0 && (!(h > 0.0) || !std::isfinite(h))) h = std::min(1e-6, t1 - t0);

  const bool evenly = settings.outputInterval > 0.0;
  long nextOutput = 1;
  observe(t0, std::as_const(x));
  double t = t0;
  const double tiny = 16 * std::numeric_limits<double>::epsilon() * std::max(std::abs(t0), std::abs(t1));
  while (t1 - t > tiny) {
    if (status.steps + status.rejectedSteps >= settings.maxSteps) {
      status.ok = false;
      status.message = "maximum number of steps (" + std::to_string(settings.maxSteps) + ") reached at t = " +
                       detail::formatTime(t);
      return status;
    }
    if (t + h > t1 || t1 - (t + h) < tiny) h = t1 - t;
    y = x + h * (a21 * k1);
    detail::derivative(system, t + c2 * h, y, k2);
    y = x + h * (a31 * k1 + a32 * k2);
    detail::derivative(system, t + c3 * h, y, k3);
    y = x + h * (a41 * k1 + a42 * k2 + a43 * k3);
    detail::derivative(system, t + c4 * h, y, k4);
    y = x + h * (a51 * k1 + a52 * k2 + a53 * k3 + a54 * k4);
    detail::derivative(system, t + c5 * h, y, k5);
    y = x + h * (a61 * k1 + a62 * k2 + a63 * k3 + a64 * k4 + a65 * k5);
    detail::derivative(system, t + h, y, k6);
    y = x + h * (a71 * k1 + a73 * k3 + a74 * k4 + a75 * k5 + a76 * k6);
    detail::derivative(system, t + h, y, k7);
    status.derivativeEvaluations += 6;
    err = h * (e1 * k1 + e3 * k3 + e4 * k4 + e5 * k5 + e6 * k6 + e7 * k7);
    const int bad = std::max(detail::firstNonFinite(y), detail::firstNonFinite(k7));
    const double errorNorm = bad >= 0 ? std::numeric_limits<double>::infinity() : scaledNorm(err, x, y);

    if (!(errorNorm <= 1.0)) {  // reject (also for a non-finite trial)
      ++status.rejectedSteps;
      if (h < 1e-12 * std::max(1.0, std::abs(t))) {
        if (bad >= 0) return detail::nonFinite(system, status, t, t + h, detail::firstNonFinite(y) >= 0 ? y : k7, "state");
        status.ok = false;
        status.message = "step size became negligible at t = " + detail::formatTime(t) + "; the problem may be stiff";
        return status;
      }
      h *= bad >= 0 ? 0.25 : std::max(kMinFactor, kSafety * std::pow(errorNorm, -0.2));
      continue;
    }

    // Accepted: dense-output coefficients, then observations in (t, t + h].
    const double tnew = t + h;
    if (evenly) {
      r1 = x;
      r2 = y - x;
      r3 = h * k1 - r2;
      r4 = r2 - h * k7 - r3;
      r5 = h * (d1 * k1 + d3 * k3 + d4 * k4 + d5 * k5 + d6 * k6 + d7 * k7);
      for (;;) {
        const double tout = t0 + static_cast<double>(nextOutput) * settings.outputInterval;
        if (tout > tnew + tiny || tout > t1 + tiny) break;
        const double theta = (tout - t) / h, theta1 = 1.0 - theta;
        dense = r1 + theta * (r2 + theta1 * (r3 + theta * (r4 + theta1 * r5)));
        detail::project(system, dense);
        observe(tout, std::as_const(dense));
        ++nextOutput;
      }
    }
    x = y;
    detail::project(system, x);
    t = tnew;
    k1 = k7;  // first same as last (projection changes x by O(tolerance) only)
    ++status.steps;
    status.time = t;
    if (!evenly) observe(t, std::as_const(x));
    const double factor = errorNorm == 0.0 ? kMaxFactor
                                           : std::min(kMaxFactor, std::max(kMinFactor, kSafety * std::pow(errorNorm, -0.2)));
    h = std::min(h * factor, settings.maxStepSize);
  }
  status.time = t1;
  return status;
}

}  // namespace capstan
