#!/usr/bin/env bash
# Wall time of a user's first `capstan simulate` of each model, compiled
# (an empty driver cache: generate, build, run), again with the build
# cached, and with `--interpret` (no build); then each build's compile time
# (the cache's builds.log). The models share one cache, as a user's do: the
# runtime's cable path solver, compiled once, is paid by the first model
# with cables. docs/performance.md, "First
# simulate: compiled or interpreted", and docs/command-line.md quote it.
#
#   bench/first_run.sh [MODEL.cap...]     (default: the examples named below)
#   CAPSTAN=build/compiler/capstan T_END=... (default: each model's StopTime)
set -euo pipefail
cd "$(dirname "$0")/.."
capstan=${CAPSTAN:-build/compiler/capstan}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(examples/double_pendulum.cap examples/chain.cap examples/bushing.cap examples/fourbar.cap
  examples/pendulum_contact.cap examples/sphere_on_sphere.cap examples/stiff_chain.cap examples/cable.cap)
cache=$(mktemp -d /tmp/capstan-first-run.XXXXXX)
trap 'rm -rf "$cache"' EXIT
export CAPSTAN_CACHE_DIR=$cache
end=()
[ -n "${T_END:-}" ] && end=(--t-end "$T_END")
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'; }
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(c++ --version | head -1)"
printf '%-32s %12s %12s %12s\n' model "first (s)" "cached (s)" "interpret (s)"
for m in "${models[@]}"; do
  first=$(seconds "$capstan" simulate "$m" "${end[@]}" -o /dev/null)
  cached=$(seconds "$capstan" simulate "$m" "${end[@]}" -o /dev/null)
  interp=$(seconds "$capstan" simulate "$m" "${end[@]}" --interpret -o /dev/null)
  printf '%-32s %12.1f %12.2f %12.2f\n' "$m" "$first" "$cached" "$interp"
done
echo "builds (builds.log: time, what, compile seconds, which build, cache folder):"
cat "$cache/builds.log"
