// A header with a C++ error (a missing semicolon), for ExternalHeaderError.
#pragma once

namespace broken {
inline double law(double x) { return 2.0 * x }
}  // namespace broken
