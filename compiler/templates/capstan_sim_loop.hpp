// The simulation loop shared by `capstan simulate` (compiled into the
// generated driver, fixed-size vectors) and `capstan simulate --interpret`
// (compiled into capstan, dynamic vectors): it maps the command line's
// integrator name, step and tolerance onto the runtime's integrators
// (capstan/integrators.hpp) and observes the state on the output grid.
//
// A Mechanical system as in capstan/integrators.hpp: nq(), nu(),
// qdot(q, u, qdot), udot(t, q, u, udot), normalize(q), coordinateName(i),
// and optionally VectorQ / VectorU (fixed-size q and u types).
// Depends only on Eigen, the standard library and the runtime's
// integrators.hpp.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <string>

#include "capstan/integrators.hpp"

namespace capstan_sim {

struct LoopOptions {
  double tEnd = 1.0;                  // s; the run goes from t = 0 to tEnd
  double dt = 0.01;                   // s; output interval, and the step of euler and rk4
  std::string integrator = "dopri5";  // rk4 | euler (semi-implicit) | dopri5
  double tolerance = 1e-8;            // dopri5: relative and absolute tolerance per step
};

inline bool knownIntegrator(const std::string& name) {
  return name == "rk4" || name == "euler" || name == "dopri5";
}

// x = [q; u]: fixed-size when q and u are, else dynamic.
template <class Mechanical>
using StateVector = Eigen::Matrix<
    double,
    (capstan::MechanicalVectors<Mechanical>::Q::RowsAtCompileTime == Eigen::Dynamic ||
     capstan::MechanicalVectors<Mechanical>::U::RowsAtCompileTime == Eigen::Dynamic)
        ? Eigen::Dynamic
        : capstan::MechanicalVectors<Mechanical>::Q::RowsAtCompileTime +
              capstan::MechanicalVectors<Mechanical>::U::RowsAtCompileTime,
    1>;

// Integrates from (t = 0, q, u) to opt.tEnd. record(t, x) (x = [q; u], after
// quaternion normalization) is called at t = 0, dt, 2 dt, ... and at tEnd;
// progress(fraction) after each record. On a failure (a non-finite state, a
// negligible step) the status says what, when and which coordinate; every
// state recorded before it stays recorded.
template <class Mechanical, class Record, class Progress>
capstan::IntegrationStatus simulate(Mechanical& system, typename capstan::MechanicalVectors<Mechanical>::Q q,
                                    typename capstan::MechanicalVectors<Mechanical>::U u, const LoopOptions& opt,
                                    Record&& record, Progress&& progress) {
  capstan::IntegrationStatus status;
  if (!(opt.tEnd >= 0) || !(opt.dt > 0)) {
    status.ok = false;
    status.message = "t-end must be >= 0 and dt > 0";
    return status;
  }
  if (!knownIntegrator(opt.integrator)) {
    status.ok = false;
    status.message = "unknown integrator `" + opt.integrator + "`; use rk4, euler or dopri5";
    return status;
  }
  capstan::IntegratorSettings settings;
  settings.outputInterval = opt.dt;
  settings.stepSize = opt.integrator == "dopri5" ? 0.0 : opt.dt;  // dopri5: automatic first step
  settings.relativeTolerance = opt.tolerance;
  settings.absoluteTolerance = opt.tolerance;

  double lastRecorded = -1.0;
  auto observe = [&](double t, const auto& x) {
    record(t, x);
    lastRecorded = t;
    progress(opt.tEnd > 0 ? t / opt.tEnd : 1.0);
  };
  using Vector = StateVector<Mechanical>;
  Vector x(q.size() + u.size());
  x << q, u;
  if (opt.integrator == "euler") {
    status = capstan::semiImplicitEuler(system, 0.0, opt.tEnd, q, u, settings, observe);
    x << q, u;
  } else {
    capstan::FirstOrder<Mechanical, Vector> firstOrder(system);
    status = opt.integrator == "rk4" ? capstan::rk4(firstOrder, 0.0, opt.tEnd, x, settings, observe)
                                     : capstan::dormandPrince(firstOrder, 0.0, opt.tEnd, x, settings, observe);
  }
  // Dense output observes t0 + k dt only; the final time may fall between.
  const double tiny = 1e-12 * std::max(1.0, std::abs(opt.tEnd));
  if (status.ok && lastRecorded < opt.tEnd - tiny) observe(opt.tEnd, x);
  return status;
}

}  // namespace capstan_sim
