// The simulation loop shared by `capstan simulate` (compiled into the
// generated driver) and `capstan simulate --interpret` (compiled into
// capstan): fixed-step euler and rk4, and adaptive Dormand-Prince 5(4) with
// output on the requested grid. A System provides
//   int size() const;                                      // nq + nu
//   void derivative(double t, const Vec& x, Vec& xdot);    // x = [q; u]
//   void project(Vec& x);                                  // normalize quaternions
// Depends only on Eigen and the standard library.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace capstan_sim {

using Vec = Eigen::VectorXd;

struct LoopOptions {
  double tEnd = 1.0;
  double dt = 0.01;             // output interval (and the step of euler / rk4)
  std::string integrator = "dopri5";
  double tolerance = 1e-8;      // dopri5: relative and absolute error per step
};

template <class System>
void eulerStep(System& sys, double t, double h, Vec& x, Vec& k1) {
  sys.derivative(t, x, k1);
  x += h * k1;
  sys.project(x);
}

template <class System>
void rk4Step(System& sys, double t, double h, Vec& x, Vec (&k)[5]) {
  sys.derivative(t, x, k[0]);
  k[4] = x + 0.5 * h * k[0];
  sys.derivative(t + 0.5 * h, k[4], k[1]);
  k[4] = x + 0.5 * h * k[1];
  sys.derivative(t + 0.5 * h, k[4], k[2]);
  k[4] = x + h * k[2];
  sys.derivative(t + h, k[4], k[3]);
  x += (h / 6.0) * (k[0] + 2.0 * k[1] + 2.0 * k[2] + k[3]);
  sys.project(x);
}

// Integrates from (0, x) to tEnd, calling record(t, x) at t = 0, dt, 2 dt, ...
// and tEnd, and progress(fraction) now and then.
template <class System, class Record, class Progress>
void simulate(System& sys, Vec x, const LoopOptions& opt, Record&& record, Progress&& progress) {
  if (!(opt.tEnd >= 0) || !(opt.dt > 0)) throw std::invalid_argument("t-end must be >= 0 and dt > 0");
  const long steps = static_cast<long>(std::ceil(opt.tEnd / opt.dt - 1e-9));
  const int n = sys.size();
  record(0.0, x);
  Vec k[7], r[5];
  for (Vec& v : k) v.setZero(n);
  for (Vec& v : r) v.setZero(n);
  double hAdaptive = std::min(opt.dt, 1e-3);
  for (long s = 1; s <= steps; ++s) {
    const double t0 = static_cast<double>(s - 1) * opt.dt;
    const double t1 = std::min(static_cast<double>(s) * opt.dt, opt.tEnd);
    if (opt.integrator == "euler") {
      eulerStep(sys, t0, t1 - t0, x, k[0]);
    } else if (opt.integrator == "rk4") {
      rk4Step(sys, t0, t1 - t0, x, r);
    } else if (opt.integrator == "dopri5") {
      double t = t0;
      while (t < t1 - 1e-14 * std::max(1.0, std::abs(t1))) {
        const double h = std::min(hAdaptive, t1 - t);
        // Dormand-Prince 5(4) tableau.
        sys.derivative(t, x, k[0]);
        Vec y = x + h * (1.0 / 5) * k[0];
        sys.derivative(t + h / 5, y, k[1]);
        y = x + h * (3.0 / 40 * k[0] + 9.0 / 40 * k[1]);
        sys.derivative(t + 3 * h / 10, y, k[2]);
        y = x + h * (44.0 / 45 * k[0] - 56.0 / 15 * k[1] + 32.0 / 9 * k[2]);
        sys.derivative(t + 4 * h / 5, y, k[3]);
        y = x + h * (19372.0 / 6561 * k[0] - 25360.0 / 2187 * k[1] + 64448.0 / 6561 * k[2] - 212.0 / 729 * k[3]);
        sys.derivative(t + 8 * h / 9, y, k[4]);
        y = x + h * (9017.0 / 3168 * k[0] - 355.0 / 33 * k[1] + 46732.0 / 5247 * k[2] + 49.0 / 176 * k[3] -
                     5103.0 / 18656 * k[4]);
        sys.derivative(t + h, y, k[5]);
        const Vec x5 = x + h * (35.0 / 384 * k[0] + 500.0 / 1113 * k[2] + 125.0 / 192 * k[3] -
                                2187.0 / 6784 * k[4] + 11.0 / 84 * k[5]);
        sys.derivative(t + h, x5, k[6]);
        const Vec err = h * ((35.0 / 384 - 5179.0 / 57600) * k[0] + (500.0 / 1113 - 7571.0 / 16695) * k[2] +
                             (125.0 / 192 - 393.0 / 640) * k[3] + (-2187.0 / 6784 + 92097.0 / 339200) * k[4] +
                             (11.0 / 84 - 187.0 / 2100) * k[5] - 1.0 / 40 * k[6]);
        double e = 0;
        for (int i = 0; i < n; ++i) {
          const double sc = opt.tolerance * (1.0 + std::max(std::abs(x[i]), std::abs(x5[i])));
          e = std::max(e, std::abs(err[i]) / sc);
        }
        if (!std::isfinite(e)) throw std::runtime_error("the state became non-finite at t = " + std::to_string(t));
        if (e <= 1.0) {
          t += h;
          x = x5;
          sys.project(x);
        }
        const double factor = e == 0 ? 5.0 : std::clamp(0.9 * std::pow(e, -0.2), 0.2, 5.0);
        hAdaptive = std::max(h * factor, 1e-14);
        if (e <= 1.0 && h < t1 - t + h && hAdaptive > opt.dt) hAdaptive = opt.dt;
      }
    } else {
      throw std::invalid_argument("unknown integrator `" + opt.integrator + "`; use rk4, euler or dopri5");
    }
    if (!x.allFinite()) throw std::runtime_error("the state became non-finite at t = " + std::to_string(t1));
    record(t1, x);
    progress(t1 / std::max(opt.tEnd, 1e-300));
  }
}

}  // namespace capstan_sim
