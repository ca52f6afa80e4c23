#!/bin/sh
# Builds geometry_bench at -O2 (RelWithDebInfo: -O2 -g -DNDEBUG) in its own
# build folder and runs it; prints JSON (see docs/performance.md#geodesics).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build="${BUILD_DIR:-$root/build-bench-geometry}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCAPSTAN_BUILD_BENCH=ON -DCAPSTAN_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" geometry_bench >/dev/null
"$build/bench/geometry/geometry_bench"
