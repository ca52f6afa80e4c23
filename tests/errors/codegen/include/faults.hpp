// C++ functions for the golden tests of external calls that fail at run time.
#pragma once

#include <cmath>
#include <stdexcept>

namespace faults {

// sqrt that refuses a negative argument with an exception.
inline double checkedRoot(double x) {
  if (x < 0.0) throw std::domain_error("checkedRoot of a negative number");
  return std::sqrt(x);
}

// sqrt that returns NaN for a negative argument.
inline double root(double x) { return std::sqrt(x); }

}  // namespace faults
