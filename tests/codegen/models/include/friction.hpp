// C++ functions that tests/codegen/models/external.cap calls from a force
// law and outputs (`external "C++"`, SPEC §3).
#pragma once

#include <cmath>

namespace mylib {

// Coulomb-viscous friction torque (N.m) at joint speed w (rad/s): a Coulomb
// part of magnitude mu, smoothed over |w| ~ 0.05 rad/s, and a viscous part.
inline double friction(double w, double mu) { return mu * std::tanh(w / 0.05) + 0.02 * w; }

// A restoring torque -k sin(q); q by const reference.
inline double spring(double k, const double& q) { return -k * std::sin(q); }

}  // namespace mylib
