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

// The differential of stribeck: d tau for the differentials dw, dcoulomb,
// ... of its arguments (the chain rule written out by hand). friction.cap
// names it in Modelica's `derivative` annotation, so that the generated
// derivatives (`capstan compile --derivatives`, an FMU's directional
// derivatives) go through the law exactly.
inline double stribeckDifferential(double w, double coulomb, double breakaway, double stribeckSpeed,
                                   double viscous, double smoothingSpeed, double dw, double dcoulomb,
                                   double dbreakaway, double dstribeckSpeed, double dviscous,
                                   double dsmoothingSpeed) {
  const double x = w / stribeckSpeed;
  const double dx = dw / stribeckSpeed - w * dstribeckSpeed / (stribeckSpeed * stribeckSpeed);
  const double e = std::exp(-x * x);
  const double dry = coulomb + (breakaway - coulomb) * e;
  const double ddry = dcoulomb + (dbreakaway - dcoulomb) * e - (breakaway - coulomb) * e * 2 * x * dx;
  const double s = std::tanh(w / smoothingSpeed);
  const double ds = (1 - s * s) * (dw / smoothingSpeed - w * dsmoothingSpeed / (smoothingSpeed * smoothingSpeed));
  return ddry * s + dry * ds + dviscous * w + viscous * dw;
}

}  // namespace friction_law
