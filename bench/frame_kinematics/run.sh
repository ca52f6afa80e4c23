#!/bin/sh
# Frame Jacobians, unrolled against compact (docs/performance.md): for each
# bench/peers model, compiles the class in both forms (--quadratic), builds
# bench.cpp against each with clang++ -O2 -march=native and prints a table
# row, us per call. Env: CAPSTAN (default build/compiler/capstan), MODELS
# (default "arm7 chain20 humanoid").
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
capstan="${CAPSTAN:-$root/build/compiler/capstan}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| model | form | J(end) | JdotU(end) | frameKinematics + J(end) | J of every body, one call each | frameKinematics + J of every body |"
echo "|---|---|---|---|---|---|---|"
for model in ${MODELS:-arm7 chain20 humanoid}; do
  for form in unrolled compact; do
    dir="$out/${model}_$form"
    "$capstan" compile "$root/bench/peers/models/$model.cap" -o "$dir" --quadratic "$form" --ir >/dev/null
    cls=$(python3 -c "import json, glob; print(json.load(open(glob.glob('$dir/*.ir.json')[0]))['class_name'])")
    clang++ -std=c++20 -O2 -march=native -DNDEBUG -isystem /usr/include/eigen3 -I "$dir" \
      -DHEADER="\"$cls.hpp\"" -DCLS="$cls" -DMODEL="\"$model\"" -DMODE="\"$form\"" \
      "$root/bench/frame_kinematics/bench.cpp" -o "$dir/bench"
    "$dir/bench"
  done
done
