#!/bin/sh
# Forward dynamics against peers (docs/performance.md): installs
# MuJoCo if missing, builds peers_bench (RelWithDebInfo: -O2 -g1 -DNDEBUG) in
# build-bench/, runs it, then times `capstan compile` and g++ -O2 on the
# chain headers. Env: BUILD_DIR, CAPSTAN (a capstan executable to use
# instead of building the in-tree one), PEERS_SKIP_MODELS (models not built
# into peers_bench, a CMake list; default none), PEERS_ROUNDS,
# PEERS_MODELS, COMPILE_REPS, SKIP_COMPILE_TIMES=1.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build="${BUILD_DIR:-$root/build-bench}"

if [ ! -f /usr/include/mujoco/mujoco.h ] || [ ! -f /usr/include/simbody/Simbody.h ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "run.sh: libmujoco-dev / libsimbody-dev missing; run as root to install them" >&2
    exit 2
  fi
  apt-get update -qq
  apt-get install -y libmujoco-dev libsimbody-dev >/dev/null
fi

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCAPSTAN_BUILD_BENCH=ON -DCAPSTAN_BUILD_TESTS=OFF -DPEERS_CAPSTAN="${CAPSTAN:-}" \
  -DPEERS_SKIP_MODELS="${PEERS_SKIP_MODELS-}" >/dev/null
quiet_ninja() {  # the build log only when the build fails
  ninja -C "$build" "$@" >"$build/peers_build.log" 2>&1 || { cat "$build/peers_build.log" >&2; exit 1; }
}
quiet_ninja peers_bench
if [ -n "$CAPSTAN" ]; then capstan="$CAPSTAN"; else quiet_ninja capstan; capstan="$build/compiler/capstan"; fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "compiler: $(${CXX:-g++} --version | head -1); MuJoCo $(dpkg-query -W -f='${Version}' libmujoco-dev 2>/dev/null); Simbody $(dpkg-query -W -f='${Version}' libsimbody-dev 2>/dev/null)"
"$build/bench/peers/peers_bench"
if [ -z "$SKIP_COMPILE_TIMES" ]; then
  python3 "$root/bench/peers/compile_times.py" --capstan "$capstan" --reps "${COMPILE_REPS:-3}" --chains 5,10,20,50
fi
