// A C++ function that crashes the program calling it once `t` passes
// `after` (tests/cli/models/crash.cap): a null pointer written through,
// as a faulty library would.
#pragma once

namespace crashlib {

inline double crashAfter(double t, double after) {
  if (t > after) {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  }
  return t;
}

}  // namespace crashlib
