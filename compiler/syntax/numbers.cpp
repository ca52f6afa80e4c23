#include "syntax/numbers.hpp"

#include <cstdio>
#include <cstdlib>

namespace capstan::syntax {

std::string exactNumber(double x) {
  char buf[32];
  for (int digits = 6; digits < 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x) return buf;
  }
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace capstan::syntax
