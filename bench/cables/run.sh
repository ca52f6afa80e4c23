#!/bin/sh
# Builds cables_bench at -O2 (RelWithDebInfo: -O2 -g -DNDEBUG) in its own
# build folder and runs it; prints JSON (see docs/performance.md#cables).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build="${BUILD_DIR:-$root/build-bench-cables}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCAPSTAN_BUILD_BENCH=ON -DCAPSTAN_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" cables_bench >/dev/null
"$build/bench/cables/cables_bench"
