// The C++ friction law that models/wheel.cap calls (`external "C++"`).
#pragma once

#include <cmath>

namespace mylib {

// Coulomb-viscous friction torque (N.m) at joint speed w (rad/s): a Coulomb
// part of magnitude mu, smoothed over |w| ~ 0.05 rad/s, and a viscous part.
inline double friction(double w, double mu) { return mu * std::tanh(w / 0.05) + 0.02 * w; }

}  // namespace mylib
