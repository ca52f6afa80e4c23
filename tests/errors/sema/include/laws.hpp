// C++ functions for the golden tests of `external "C++"` declarations that
// do not fit their header (tests/errors/sema/External*.cap).
#pragma once

#include <cmath>

namespace laws {

// Viscous friction: two parameters.
inline double viscous(double w, double d) { return -d * w; }

// A parameter that the callee could write to: a Real cannot bind to it.
inline double scaled(double& x, double k) { return k * x; }

// An integer result where the model declares a Real output.
inline int sign(double x) { return (x > 0) - (x < 0); }

// Two overloads, neither of which takes (double, double).
inline double clamp(double x) { return std::fmax(-1.0, std::fmin(1.0, x)); }
inline double clamp(double x, double lo, double hi) { return std::fmax(lo, std::fmin(hi, x)); }

// Two overloads that both take (double, double).
inline double blend(double a, float b) { return 0.5 * (a + b); }
inline double blend(float a, double b) { return 0.5 * (a + b); }

// A differential of viscous by w alone: Modelica's derivative function
// also takes dd, the differential of its second input.
inline double viscousDifferential(double w, double d, double dw) { return 0 * w - d * dw; }

}  // namespace laws
