// C++ functions that misbehave once `t` passes `after`, as faulty
// libraries do: one crashes (a null pointer written through; crash.cap),
// one never returns (hang.cap), one calls exit(0) (exits.cap).
#pragma once

#include <cstdlib>

namespace crashlib {

inline double crashAfter(double t, double after) {
  if (t > after) {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  }
  return t;
}

}  // namespace crashlib

namespace crashlib {

// Never returns once `t` passes `after` (tests/cli/models/hang.cap).
inline double hangAfter(double t, double after) {
  if (t > after) {
    for (volatile long spin = 0;; spin = spin + 1) {
    }
  }
  return t;
}

}  // namespace crashlib

namespace crashlib {

// Ends the program, status 0, once `t` passes `after`, as a library that
// "handles" an error by exiting would (tests/cli/models/exits.cap).
inline double exitAfter(double t, double after) {
  if (t > after) std::exit(0);
  return t;
}

}  // namespace crashlib
