#!/usr/bin/env bash
# The main job on the bundled examples: set up, build, then check every
# example model and print its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for model in examples/*.cap; do
  echo "== capstan check $model"
  build/compiler/capstan check "$model"
done
