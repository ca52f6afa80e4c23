#!/usr/bin/env bash
# The main job on the bundled examples: set up and build `capstan` (only: the
# test programs are scripts/test.sh's), check every example model (printing
# its summary), then simulate the double pendulum and write its trajectory
# to build/double_pendulum.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh capstan
for model in examples/*.cap; do
  echo "== capstan check $model"
  build/compiler/capstan check "$model"
done
echo "== capstan simulate examples/double_pendulum.cap -o build/double_pendulum.csv"
build/compiler/capstan simulate examples/double_pendulum.cap -o build/double_pendulum.csv
echo "wrote build/double_pendulum.csv ($(($(wc -l < build/double_pendulum.csv) - 1)) samples); first rows:"
head -4 build/double_pendulum.csv
