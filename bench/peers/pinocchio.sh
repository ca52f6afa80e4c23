#!/bin/sh
# Dynamics derivatives against Pinocchio (docs/performance.md, "Derivatives
# vs Pinocchio"): generates arm7, chain20, chain50 and the humanoid with
# `capstan compile --derivatives`, times g++ -O2 on a translation unit that
# calls both derivative functions of each header, then builds
# pinocchio_derivatives_bench.cpp with $CXX (clang++) -O2 -march=native
# -DNDEBUG, prints the size of each generated function's machine code in it
# and runs it. Pinocchio is not built here: PINOCCHIO_PREFIX names
# an installation made by hand (its headers under include/); without it the
# script says so and exits 0. Env: PINOCCHIO_PREFIX, CAPSTAN (default
# build/compiler/capstan), OUT_DIR (default build-bench/pinocchio), CXX,
# SKIP_COMPILE_TIMES=1, MUJOCO_PREFIX (a MuJoCo 3 installation made by hand,
# include/mujoco/mujoco.h and lib/libmujoco.so: forwardDynamics is timed
# against it too), PEERS_ROUNDS, PEERS_BATCH_US, PEERS_COLD=1 (the rows timed again
# cold, each call after code that evicts the L1 instruction cache), MODELS_DIR (default
# bench/peers/models; `bench/peers/make_models.py --folded DIR` writes the
# same models with their parameters folded into the code); arguments: the
# models (arm7 chain20 chain50 humanoid, the default all four).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "$PINOCCHIO_PREFIX" ] || [ ! -f "$PINOCCHIO_PREFIX/include/pinocchio/config.hpp" ]; then
  echo "pinocchio.sh: PINOCCHIO_PREFIX is not set to a Pinocchio installation: skipped"
  exit 0
fi
capstan="${CAPSTAN:-$root/build/compiler/capstan}"
out="${OUT_DIR:-$root/build-bench/pinocchio}"
models_dir="${MODELS_DIR:-$root/bench/peers/models}"
mkdir -p "$out"
models="${*:-arm7 chain20 chain50 humanoid}"
defines=""
classes=""
for m in $models; do
  cls=$(echo "$m" | sed 's/^./\U&/')
  "$capstan" compile "$models_dir/$m.cap" -o "$out" --derivatives >/dev/null
  defines="$defines -DPEERS_$(echo "$m" | tr a-z A-Z)"
  classes="$classes $cls"
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "$SKIP_COMPILE_TIMES" ]; then
  for cls in $classes; do
    cat >"$out/use_$cls.cpp" <<EOT
#include "$cls.hpp"
using M = capstan_models::$cls;
void fdd(const M& m, const M::Q& q, const M::U& u, M::MassMatrix& a, M::MassMatrix& b, M::MassMatrix& c) {
  m.forwardDynamicsDerivatives(0.0, q, u, a, b, c);
}
void idd(const M& m, const M::Q& q, const M::U& u, const M::U& udot, M::MassMatrix& a, M::MassMatrix& b,
         M::MassMatrix& c) {
  m.inverseDynamicsDerivatives(0.0, q, u, udot, a, b, c);
}
EOT
    lines=$(wc -l <"$out/$cls.hpp")
    bytes=$(wc -c <"$out/$cls.hpp")
    /usr/bin/time -f "%U %S %e %M" -o "$out/time_$cls.txt" g++ -std=c++20 -O2 -isystem /usr/include/eigen3 \
      -I"$root/runtime/include" -c "$out/use_$cls.cpp" -o "$out/use_$cls.o"
    read -r user sys wall rss <"$out/time_$cls.txt"
    echo "$cls.hpp: $lines lines, $bytes bytes; g++ -O2 (both derivative functions): CPU $(echo "$user + $sys" | bc) s, wall $wall s, peak RSS $((rss / 1024)) MiB"
  done
fi
mujoco=""
if [ -n "$MUJOCO_PREFIX" ]; then
  if [ ! -f "$MUJOCO_PREFIX/include/mujoco/mujoco.h" ]; then
    echo "pinocchio.sh: MUJOCO_PREFIX has no include/mujoco/mujoco.h" >&2
    exit 2
  fi
  mujoco="-DPEERS_MUJOCO $root/bench/peers/mujoco_peer.cpp -lmujoco"
  if [ "$MUJOCO_PREFIX" != /usr ]; then  # /usr: Debian's MuJoCo 2.2, in the default paths
    mujoco="$mujoco -isystem $MUJOCO_PREFIX/include -L$MUJOCO_PREFIX/lib -Wl,-rpath,$MUJOCO_PREFIX/lib"
  fi
fi
# shellcheck disable=SC2086
${CXX:-clang++} -std=c++20 -O2 -march=native -DNDEBUG -g0 $defines -I"$out" -I"$root/bench/peers" -I"$root/bench/common" \
  -I"$root/runtime/include" -isystem /usr/include/eigen3 -isystem "$PINOCCHIO_PREFIX/include" \
  "$root/bench/peers/pinocchio_derivatives_bench.cpp" "$root/bench/peers/peer_models.cpp" $mujoco \
  -o "$out/pinocchio_derivatives_bench"
echo "compiler: $(${CXX:-clang++} --version | head -1)"
# The machine code of each generated function as the bench program holds it
# (nm -S; a function's parts and workspace members counted with it): straight-line
# code past the first-level instruction cache is fetched from L2 on every call,
# which slows it by a third to a half (docs/performance.md, "The instruction
# cache").
l1i=""
for d in /sys/devices/system/cpu/cpu0/cache/index*; do
  if [ "$(cat "$d/level" 2>/dev/null)" = 1 ] && [ "$(cat "$d/type" 2>/dev/null)" = Instruction ]; then
    l1i=$(cat "$d/size")
  fi
done
echo "machine code, bytes (L1 instruction cache: ${l1i:-unknown}):"
for cls in $classes; do
  nm -S -C --defined-only "$out/pinocchio_derivatives_bench" | awk -v c="capstan_models::$cls::" -v cls="$cls" '
    function hex(s,  v, i) {  # nm prints sizes in hexadecimal; POSIX awk has no strtonum
      v = 0
      for (i = 1; i <= length(s); ++i) v = 16 * v + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
      return v
    }
    index($0, c) {
      name = substr($0, index($0, c) + length(c))
      f = ""
      if (name ~ /^forwardDynamics(Step[0-9]+)?\(/ || name ~ /^ForwardDynamicsWork::/) f = "forwardDynamics"
      else if (name ~ /^forwardDynamicsDerivatives\(/ || name ~ /^ForwardDynamicsDerivativesWork::/) f = "forwardDynamicsDerivatives"
      else if (name ~ /^inverseDynamicsDerivatives(Step[0-9]+)?\(/ || name ~ /^InverseDynamicsDerivativesWork::/) f = "inverseDynamicsDerivatives"
      else if (name ~ /^updateDerived\(/) f = "updateDerived"
      if (f != "") bytes[f] += hex($2)
    }
    END {
      line = ""
      n = split("forwardDynamics forwardDynamicsDerivatives inverseDynamicsDerivatives updateDerived", order, " ")
      for (i = 1; i <= n; ++i) if (order[i] in bytes) line = line sprintf(" %s %d,", order[i], bytes[order[i]])
      sub(/,$/, "", line)
      print "  " cls ":" line
    }'
done
"$out/pinocchio_derivatives_bench"
