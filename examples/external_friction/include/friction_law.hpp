// A joint friction law written in C++ and called from a Capstan model:
// friction.cap declares it as an `external "C++"` function, and the code
// that capstan generates (or its interpreter, with --interpret) calls it at
// every evaluation of the force law and of the output that reports it.
//
// Header-only and free of Capstan: plain `double` in, `double` out, so the
// same function can be unit-tested or reused outside the model.
#pragma once

#include <cmath>

namespace friction_law {

// Friction torque (N*m) in a joint turning at speed w (rad/s): the torque
// that opposes the motion, so the torque applied to the joint is
// -stribeck(w, ...).
//
//   tau(w) = (Tc + (Ts - Tc) exp(-(w/ws)^2)) tanh(w/wt) + b w
//
// with
//   Tc = coulomb         (N*m)        kinetic (Coulomb) torque, |w| >> ws
//   Ts = breakaway       (N*m)        torque to break loose from rest, Ts >= Tc
//   ws = stribeckSpeed   (rad/s)      speed over which the torque falls
//                                     from Ts to Tc (the Stribeck effect)
//   b  = viscous         (N*m*s/rad)  viscous coefficient
//   wt = smoothingSpeed  (rad/s)      speed over which the dry friction
//                                     changes sign; replaces the jump of
//                                     sign(w) so that the right-hand side is
//                                     smooth for an ODE integrator
//
// For Ts >= Tc >= 0, b >= 0 and ws, wt > 0 the law is odd in w and
// w * tau(w) >= 0: it never feeds energy into the joint. The dry part is a
// regularization, not true sticking: held by a load below the breakaway
// torque, the joint creeps at a speed of the order of wt.
inline double stribeck(double w, double coulomb, double breakaway, double stribeckSpeed, double viscous,
                       double smoothingSpeed) {
  const double x = w / stribeckSpeed;
  const double dry = coulomb + (breakaway - coulomb) * std::exp(-x * x);  // N*m, in [Tc, Ts]
  return dry * std::tanh(w / smoothingSpeed) + viscous * w;
}

}  // namespace friction_law
