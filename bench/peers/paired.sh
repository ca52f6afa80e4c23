#!/bin/sh
# A change to the generated code, measured in one program (docs/performance.md,
# "Paired: two versions of one model's code in one program"): each model of
# bench/peers/models compiled by two capstans, or by one with two sets of
# options, `capstan compile --derivatives`; the second header's class renamed
# (Chain50 -> Chain50B); both included in paired_bench.cpp, built with $CXX
# (clang++) -O2 -march=native -DNDEBUG, which times forwardDynamics and both
# derivative functions of the two, interleaved, and compares their results.
#
# Env: CAPSTAN_A and CAPSTAN_B (each default build/compiler/capstan), FLAGS_A and FLAGS_B (more `capstan compile` options for each,
# e.g. FLAGS_B="--quadratic unrolled"), OUT_DIR (default build-bench/paired),
# CXX, PAIRED_ROUNDS (default 31), PAIRED_BATCH_US (default 2000), MODELS_DIR
# (default bench/peers/models); arguments: the models (default chain20
# chain50 humanoid). For a change against main: capstan of main built in
# its own tree (a `git worktree`, or a clone) as CAPSTAN_A, this tree's as B.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
capstan_a="${CAPSTAN_A:-$root/build/compiler/capstan}"
capstan_b="${CAPSTAN_B:-$root/build/compiler/capstan}"
out="${OUT_DIR:-$root/build-bench/paired}"
models_dir="${MODELS_DIR:-$root/bench/peers/models}"
models="${*:-chain20 chain50 humanoid}"
if [ "$capstan_a" = "$capstan_b" ] && [ "${FLAGS_A:-}" = "${FLAGS_B:-}" ]; then
  echo "paired.sh: A and B are the same capstan with the same options (set CAPSTAN_B, FLAGS_A or FLAGS_B)" >&2
  exit 2
fi
mkdir -p "$out/a" "$out/b"
echo "A: $capstan_a ${FLAGS_A:-}"
echo "B: $capstan_b ${FLAGS_B:-}"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "compiler: $(${CXX:-clang++} --version | head -1)"
for m in $models; do
  cls=$(echo "$m" | sed 's/^./\U&/')
  # shellcheck disable=SC2086
  "$capstan_a" compile "$models_dir/$m.cap" -o "$out/a" --derivatives ${FLAGS_A:-} >/dev/null
  # shellcheck disable=SC2086
  "$capstan_b" compile "$models_dir/$m.cap" -o "$out/b" --derivatives ${FLAGS_B:-} >/dev/null
  # The class renamed as a whole word: its name, its constructors' and its
  # own uses of it; nothing else in a header spells it.
  sed "s/\\b$cls\\b/${cls}B/g" "$out/b/$cls.hpp" >"$out/b/${cls}B.hpp"
  ${CXX:-clang++} -std=c++20 -O2 -march=native -DNDEBUG -g0 -isystem /usr/include/eigen3 -I"$root/bench/common" \
    -DPAIRED_A_HEADER="\"$out/a/$cls.hpp\"" -DPAIRED_B_HEADER="\"$out/b/${cls}B.hpp\"" \
    -DPAIRED_CLASS_A="$cls" -DPAIRED_CLASS_B="${cls}B" -DPAIRED_MODEL="\"$m\"" \
    "$root/bench/peers/paired_bench.cpp" -o "$out/paired_$m"
  echo
  "$out/paired_$m"
done
echo
echo "load average at end $(cut -d' ' -f1 /proc/loadavg)"
