#!/usr/bin/env bash
# The whole test suite: set up, build, run every CTest test (unit, golden
# diagnostics, cross-checks against Simbody), then fuzz the parser for a
# bounded time. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600
if [ -x tests/fuzz/run.sh ]; then
  tests/fuzz/run.sh "${CAPSTAN_FUZZ_SECONDS:-45}"  # then 15 s for the URDF and SDFormat importers
fi
