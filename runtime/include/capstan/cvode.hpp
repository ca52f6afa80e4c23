// SUNDIALS CVODE for Capstan's first-order systems: variable-order BDF
// (orders 1-5) with a Newton iteration and a dense direct linear solver,
// using the system's exact Jacobian df/dx when it has one (a mechanical
// system with generated derivatives, through FirstOrder in
// capstan/integrators.hpp), else CVODE's own difference quotients.
//
// This is the one runtime header that needs SUNDIALS (Debian:
// libsundials-dev, version 6; link -lsundials_cvode, or the CMake target
// capstan::cvode / Capstan::cvode). Nothing else includes it, so code that
// does not use CVODE never depends on SUNDIALS.
//
// First-order system (as for rk4 and dormandPrince, integrators.hpp):
//   void derivative(double t, const Vector& x, Vector& xdot);     required
//   void jacobian(double t, const Vector& x, Eigen::Ref<Eigen::MatrixXd> J);
//                                        optional: J = df/dx (n x n), every entry
//   void project(Vector& x);             optional: quaternion normalization,
//                                        after each step (CVODE's projection)
//   std::string coordinateName(int i);   optional: used in error messages
//
// As the other integrators: a non-finite state is never returned silently
// (the status names the time and the coordinates), observations before a
// failure stay observed, and an exception thrown by the system (a model
// that stops the run) passes through, with CVODE's memory freed.
#pragma once

#include <cvode/cvode.h>
#include <cvode/cvode_proj.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sundials/sundials_version.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <utility>

#include "capstan/integrators.hpp"

#if !defined(SUNDIALS_VERSION_MAJOR) || SUNDIALS_VERSION_MAJOR != 6
#error "capstan/cvode.hpp is written for SUNDIALS 6 (Debian 12's libsundials-dev 6.4)"
#endif

namespace capstan {

// Where CVODE's Newton iteration gets its Jacobian.
enum class CvodeJacobian {
  Exact,              // the system's jacobian() (required then)
  DifferenceQuotient  // CVODE's own: one derivative evaluation per column
};

// A step this small relative to max(1, |t|) is negligible: the run fails.
inline constexpr double kNegligibleStep = 1e-12;

struct CvodeSettings {
  double relativeTolerance = 1e-8;   // CVODE's scalar rtol
  double absoluteTolerance = 1e-10;  // and atol (>= 0)
  double outputInterval = 0.0;       // s; > 0: observe at t0 + k * outputInterval
                                     // (CVODE's interpolant, then project()); 0: after every step
  double maxStepSize = std::numeric_limits<double>::infinity();  // s
  long maxSteps = 100'000'000;       // internal steps over the whole run
  // Exact when the system has jacobian(), else difference quotients;
  // DifferenceQuotient forces CVODE's own (for comparison).
  CvodeJacobian jacobian = CvodeJacobian::Exact;
};

// CVODE's counters after a run (CVodeGetNum...).
struct CvodeStatistics {
  long steps = 0;                      // internal steps taken
  long rhsEvaluations = 0;             // f(t, x) for the Newton iteration and the error test
  long rhsEvaluationsForJacobian = 0;  // f(t, x) for difference-quotient Jacobians (0 with the exact one)
  long jacobianEvaluations = 0;
  long newtonIterations = 0;
  long newtonConvergenceFailures = 0;
  long errorTestFailures = 0;
  long linearSolverSetups = 0;         // factorizations of I - gamma J
  long projections = 0;                // quaternion normalizations (CVODE's projection)
  int lastOrder = 0;                   // BDF order of the last step
  double lastStepSize = 0.0;           // s
  bool exactJacobian = false;          // which Jacobian was used
};

namespace detail {

// Owners of CVODE's objects, freed in reverse order of creation.
struct CvodeObjects {
  SUNContext context = nullptr;
  N_Vector y = nullptr;
  SUNMatrix A = nullptr;
  SUNLinearSolver solver = nullptr;
  void* memory = nullptr;
  CvodeObjects() = default;
  CvodeObjects(const CvodeObjects&) = delete;
  CvodeObjects& operator=(const CvodeObjects&) = delete;
  ~CvodeObjects() {
    if (memory) CVodeFree(&memory);
    if (solver) SUNLinSolFree(solver);
    if (A) SUNMatDestroy(A);
    if (y) N_VDestroy(y);
    if (context) SUNContext_Free(&context);
  }
};

// What CVODE's callbacks share with the driving loop.
template <class System, class Vector>
struct CvodeCallbackData {
  System& system;
  Vector x, xdot, projected;         // scratch in the system's vector type
  std::exception_ptr thrown;         // an exception of the system, passed through after CVode returns
  bool nonFiniteSeen = false;        // the last non-finite derivative (the state CVODE was trying)
  double nonFiniteTime = 0.0;
  Vector nonFiniteRate;
  std::string message;               // CVODE's last error message
};

template <class Vector>
void copyIn(N_Vector v, Vector& x) {
  x = Eigen::Map<const Eigen::VectorXd>(N_VGetArrayPointer(v), static_cast<Eigen::Index>(N_VGetLength(v)));
}

template <class Vector>
void copyOut(const Vector& x, N_Vector v) {
  Eigen::Map<Eigen::VectorXd>(N_VGetArrayPointer(v), static_cast<Eigen::Index>(N_VGetLength(v))) = x;
}

// CVODE's return values: 0 success, > 0 recoverable (CVODE retries with a
// smaller step), < 0 unrecoverable.
template <class System, class Vector>
int cvodeRhs(realtype t, N_Vector y, N_Vector ydot, void* userData) {
  auto& data = *static_cast<CvodeCallbackData<System, Vector>*>(userData);
  try {
    copyIn(y, data.x);
    derivative(data.system, t, data.x, data.xdot);
  } catch (...) {
    data.thrown = std::current_exception();
    return -1;
  }
  if (firstNonFinite(data.xdot) >= 0) {
    data.nonFiniteSeen = true;
    data.nonFiniteTime = t;
    data.nonFiniteRate = data.xdot;
    return 1;
  }
  copyOut(data.xdot, ydot);
  return 0;
}

template <class System, class Vector>
int cvodeJacobian(realtype t, N_Vector y, N_Vector, SUNMatrix J, void* userData, N_Vector, N_Vector, N_Vector) {
  auto& data = *static_cast<CvodeCallbackData<System, Vector>*>(userData);
  const auto n = static_cast<Eigen::Index>(SUNDenseMatrix_Rows(J));
  // SUNDIALS' dense matrices are column-major with leading dimension n, as
  // Eigen's default.
  Eigen::Map<Eigen::MatrixXd> jacobian(SUNDenseMatrix_Data(J), n, n);
  try {
    copyIn(y, data.x);
    data.system.jacobian(t, data.x, Eigen::Ref<Eigen::MatrixXd>(jacobian));
  } catch (...) {
    data.thrown = std::current_exception();
    return -1;
  }
  return jacobian.allFinite() ? 0 : 1;
}

// CVODE's projection (cvode_proj.h): corr = project(y) - y. The error
// estimate is left as it is (CVodeSetProjErrEst off), since a generic
// system says nothing about its constraint's tangent space.
template <class System, class Vector>
int cvodeProjection(realtype, N_Vector y, N_Vector corr, realtype, N_Vector, void* userData) {
  auto& data = *static_cast<CvodeCallbackData<System, Vector>*>(userData);
  try {
    copyIn(y, data.x);
    data.projected = data.x;
    project(data.system, data.projected);
  } catch (...) {
    data.thrown = std::current_exception();
    return -1;
  }
  Eigen::Map<Eigen::VectorXd>(N_VGetArrayPointer(corr), static_cast<Eigen::Index>(N_VGetLength(corr))) =
      data.projected - data.x;
  return 0;
}

template <class System, class Vector>
void cvodeErrorHandler(int, const char*, const char* function, char* message, void* userData) {
  auto& data = *static_cast<CvodeCallbackData<System, Vector>*>(userData);
  data.message = std::string(function) + ": " + message;
}

}  // namespace detail

// Integrates x from t0 to t1 with CVODE (BDF, Newton, dense LU), observing
// at t0 and then per settings.outputInterval (or after every internal
// step), and at t1. On return x is the state at status.time (t1 on
// success; on a failure, CVODE's last successful step). `statistics`, when
// given, receives CVODE's counters, also after a failure.
template <class System, class Vector, class Observer = NoObserver>
IntegrationStatus cvode(System& system, double t0, double t1, Vector& x, const CvodeSettings& settings,
                        Observer observe = {}, CvodeStatistics* statistics = nullptr) {
  const double rtol = settings.relativeTolerance, atol = settings.absoluteTolerance;
  if (!(rtol > 0.0) || !(atol >= 0.0) || !std::isfinite(rtol) || !std::isfinite(atol))
    return detail::badSettings("relative tolerance must be positive and absolute tolerance non-negative", t0);
  if (!(settings.maxStepSize > 0.0)) return detail::badSettings("maximum step size must be positive", t0);
  if (!(t1 >= t0)) return detail::badSettings("end time is before start time", t0);
  constexpr bool kHasJacobian = requires(System& s, double t, const Vector& v, Eigen::Ref<Eigen::MatrixXd> J) {
    s.jacobian(t, v, J);
  };
  constexpr bool kHasProjection = requires(System& s, Vector& v) { s.project(v); };
  const bool exact = kHasJacobian && settings.jacobian == CvodeJacobian::Exact;
  if (statistics) {
    *statistics = {};
    statistics->exactJacobian = exact;
  }
  IntegrationStatus status;
  status.time = t0;
  if (detail::firstNonFinite(x) >= 0) return detail::nonFinite(system, status, t0, t0, x, "initial state");
  const auto n = static_cast<sunindextype>(x.size());
  if (n == 0) {  // nothing to integrate (CVODE needs a state): the grid alone
    observe(t0, std::as_const(x));
    for (long k = 1; settings.outputInterval > 0.0; ++k) {
      const double t = t0 + static_cast<double>(k) * settings.outputInterval;
      if (t1 - t <= 16 * std::numeric_limits<double>::epsilon() * std::max({1.0, std::abs(t0), std::abs(t1)})) break;
      observe(t, std::as_const(x));
    }
    if (t1 > t0) observe(t1, std::as_const(x));
    status.time = t1;
    return status;
  }
  using Data = detail::CvodeCallbackData<System, Vector>;
  Data data{system, x, x, x, nullptr, false, 0.0, x, {}};

  detail::CvodeObjects cv;
  auto failed = [&](const char* what) {
    return detail::badSettings(std::string("CVODE: cannot set up (") + what + ")" +
                                   (data.message.empty() ? "" : ": " + data.message),
                               t0);
  };
  if (SUNContext_Create(nullptr, &cv.context) != 0) return failed("SUNContext_Create");
  cv.y = N_VNew_Serial(n, cv.context);
  if (!cv.y) return failed("N_VNew_Serial");
  detail::copyOut(x, cv.y);
  cv.memory = CVodeCreate(CV_BDF, cv.context);
  if (!cv.memory) return failed("CVodeCreate");
  CVodeSetErrHandlerFn(cv.memory, detail::cvodeErrorHandler<System, Vector>, &data);
  if (CVodeInit(cv.memory, detail::cvodeRhs<System, Vector>, t0, cv.y) != CV_SUCCESS) return failed("CVodeInit");
  if (CVodeSetUserData(cv.memory, &data) != CV_SUCCESS) return failed("CVodeSetUserData");
  if (CVodeSStolerances(cv.memory, rtol, atol) != CV_SUCCESS) return failed("CVodeSStolerances");
  cv.A = SUNDenseMatrix(n, n, cv.context);
  cv.solver = cv.A ? SUNLinSol_Dense(cv.y, cv.A, cv.context) : nullptr;
  if (!cv.solver) return failed("SUNLinSol_Dense");
  if (CVodeSetLinearSolver(cv.memory, cv.solver, cv.A) != CV_SUCCESS) return failed("CVodeSetLinearSolver");
  if constexpr (kHasJacobian) {
    if (exact && CVodeSetJacFn(cv.memory, detail::cvodeJacobian<System, Vector>) != CV_SUCCESS)
      return failed("CVodeSetJacFn");
  }
  if constexpr (kHasProjection) {
    if (CVodeSetProjFn(cv.memory, detail::cvodeProjection<System, Vector>) != CV_SUCCESS) return failed("CVodeSetProjFn");
    if (CVodeSetProjErrEst(cv.memory, SUNFALSE) != CV_SUCCESS) return failed("CVodeSetProjErrEst");
  }
  if (std::isfinite(settings.maxStepSize) && CVodeSetMaxStep(cv.memory, settings.maxStepSize) != CV_SUCCESS)
    return failed("CVodeSetMaxStep");
  if (CVodeSetStopTime(cv.memory, t1) != CV_SUCCESS) return failed("CVodeSetStopTime");
  // A negligible step fails, as dopri5's does: without a minimum CVODE may
  // step on with |h| ~ 1e-17 where t + h == t (a derivative that stops
  // being finite right after t), a hundred million times.
  if (CVodeSetMinStep(cv.memory, kNegligibleStep * std::max({1.0, std::abs(t0), std::abs(t1)})) != CV_SUCCESS)
    return failed("CVodeSetMinStep");

  auto collect = [&] {
    long steps = 0, nfe = 0, nfeLS = 0, nje = 0, nni = 0, nncf = 0, netf = 0, nsetups = 0, nproj = 0;
    CVodeGetNumSteps(cv.memory, &steps);
    CVodeGetNumRhsEvals(cv.memory, &nfe);
    CVodeGetNumLinRhsEvals(cv.memory, &nfeLS);
    CVodeGetNumJacEvals(cv.memory, &nje);
    CVodeGetNumNonlinSolvIters(cv.memory, &nni);
    CVodeGetNumNonlinSolvConvFails(cv.memory, &nncf);
    CVodeGetNumErrTestFails(cv.memory, &netf);
    CVodeGetNumLinSolvSetups(cv.memory, &nsetups);
    if constexpr (kHasProjection) CVodeGetNumProjEvals(cv.memory, &nproj);
    status.steps = steps;
    status.rejectedSteps = netf + nncf;
    status.derivativeEvaluations = nfe + nfeLS;
    if (!statistics) return;
    statistics->steps = steps;
    statistics->rhsEvaluations = nfe;
    statistics->rhsEvaluationsForJacobian = nfeLS;
    statistics->jacobianEvaluations = nje;
    statistics->newtonIterations = nni;
    statistics->newtonConvergenceFailures = nncf;
    statistics->errorTestFailures = netf;
    statistics->linearSolverSetups = nsetups;
    statistics->projections = nproj;
    CVodeGetLastOrder(cv.memory, &statistics->lastOrder);
    CVodeGetLastStep(cv.memory, &statistics->lastStepSize);
  };

  observe(t0, std::as_const(x));
  const double tiny = 16 * std::numeric_limits<double>::epsilon() * std::max({1.0, std::abs(t0), std::abs(t1)});
  const bool evenly = settings.outputInterval > 0.0;
  double t = t0;
  for (long k = 1; t1 - t > tiny; ++k) {
    const double tout = evenly ? std::min(t0 + static_cast<double>(k) * settings.outputInterval, t1) : t1;
    long steps = 0;
    CVodeGetNumSteps(cv.memory, &steps);
    // CVODE's limit is per call: what is left of the run's.
    CVodeSetMaxNumSteps(cv.memory, std::max(1L, settings.maxSteps - steps));
    realtype reached = t;
    data.nonFiniteSeen = false;
    const int flag = CVode(cv.memory, tout, cv.y, &reached, evenly ? CV_NORMAL : CV_ONE_STEP);
    if (data.thrown) std::rethrow_exception(data.thrown);
    if (flag < 0) {
      collect();
      // CVODE returns its last successful step's state and time.
      detail::copyIn(cv.y, data.x);
      if (reached >= t && detail::firstNonFinite(data.x) < 0) {
        detail::project(system, data.x);
        x = data.x;
        t = reached;
      }
      status.time = t;
      // A derivative that was not finite in the attempts after the last
      // successful step is why CVODE gave up (it retries such steps smaller).
      if (data.nonFiniteSeen && data.nonFiniteTime >= t) {
        return detail::nonFinite(system, status, t, data.nonFiniteTime, data.nonFiniteRate, "state");
      }
      char* name = CVodeGetReturnFlagName(flag);
      status.ok = false;
      status.message = "CVODE failed after t = " + detail::formatTime(t) + " (" + std::string(name ? name : "?") +
                       ")" + (data.message.empty() ? "" : ": " + data.message) + "; the state at t = " +
                       detail::formatTime(t) + " is returned";
      std::free(name);
      return status;
    }
    detail::copyIn(cv.y, data.x);
    if (detail::firstNonFinite(data.x) >= 0) {
      collect();
      return detail::nonFinite(system, status, t, reached, data.x, "state");
    }
    // CVODE's interpolant between steps is not projected: project what is observed.
    detail::project(system, data.x);
    x = data.x;
    t = evenly ? tout : reached;
    status.time = t;
    observe(t, std::as_const(x));
  }
  collect();
  return status;
}

}  // namespace capstan
