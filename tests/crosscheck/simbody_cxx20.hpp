// Includes <Simbody.h> in a C++20, possibly NDEBUG, translation unit.
// Include it first, before any other header.
//
// Debian's Simbody is built with asserts on, and some of its inline header
// classes (StateImpl) differ in layout under NDEBUG: a test built with
// -DNDEBUG (RelWithDebInfo) crashes inside realizeTopology(). So NDEBUG is
// cleared here, for the whole translation unit.
//
// Simbody 3.7's index types (SimTK_DEFINE_UNIQUE_INDEX_TYPE) compare through
// a member operator==(int) plus an implicit conversion to int; C++20's
// reversed comparison candidates make `a == b` between two such indices
// ambiguous, so g++ 12 rejects Simbody's own headers under -std=c++20. An
// exact-match comparison for exactly those types (the ones with
// isValidExtended()), declared before Simbody's headers, is preferred over
// both candidates and restores the C++17 meaning.
#pragma once

#undef NDEBUG

namespace SimTK {
template <class Index>
  requires requires(const Index& i) { i.isValidExtended(); }
bool operator==(const Index& a, const Index& b) {
  return static_cast<int>(a) == static_cast<int>(b);
}
template <class Index>
  requires requires(const Index& i) { i.isValidExtended(); }
bool operator!=(const Index& a, const Index& b) {
  return static_cast<int>(a) != static_cast<int>(b);
}
}  // namespace SimTK

#include <Simbody.h>
