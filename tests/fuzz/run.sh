#!/usr/bin/env bash
# Builds the libFuzzer targets with clang++ (ASan + UBSan) in their own
# build directory and fuzzes them for a bounded time: the parser for two
# thirds of it, STATE.json and reference CSVs (files_fuzz) for the rest.
# The parser runs in the background beside the others (files_fuzz, then
# the importers), each on a core of its own, so that the whole takes about
# the parser's share of the time; its output follows theirs.
# Exit status is non-zero
# on any crash, sanitizer report, leak, timeout or out-of-memory; the input
# that caused it is left in $BUILD/fuzz-artifacts/.
#
#   tests/fuzz/run.sh [SECONDS]      # default 60: the parser and the STATE.json/CSV readers together,
#                                    # then the URDF and SDFormat importers for CAPSTAN_IMPORT_FUZZ_SECONDS (default 15)
#   env: CAPSTAN_FUZZ_BUILD_DIR (default build-fuzz), CAPSTAN_FUZZ_JOBS (default 1)
#   To reproduce a crash: $BUILD/tests/fuzz/parse_fuzz $BUILD/fuzz-artifacts/crash-...
#   (files_fuzz: $BUILD/fuzz-artifacts/files/crash-...)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:-60}"
build="${CAPSTAN_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${CAPSTAN_FUZZ_JOBS:-1}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCAPSTAN_BUILD_FUZZ=ON >/dev/null
ninja -C "$build" parse_fuzz files_fuzz import_fuzz

# The working corpus grows across runs; the seeds are the repository's .cap
# files and the hand-made inputs in tests/fuzz/corpus/.
corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$corpus" "$artifacts"
while IFS= read -r -d '' f; do
  cp "$f" "$corpus/seed-$(printf '%s' "$f" | md5sum | cut -c1-16).cap"
done < <(find "$root/examples" "$root/stdlib" "$root/tests/errors" "$root/tests/fuzz/corpus" \
              -type f \( -name '*.cap' -o -path '*/tests/fuzz/corpus/*' \) -print0 2>/dev/null)

# files_fuzz's inputs: a first byte (0: STATE.json, 1: a CSV, 2: an STL, 3: an OBJ), then
# the file. Seeds: the golden tests' states, the examples' references and
# tests/fuzz/files_corpus/.
files_corpus="$build/fuzz-corpus-files"
mkdir -p "$files_corpus" "$artifacts/files"
sed -n 's|^// STATE: ||p' "$root"/tests/errors/*/*.cap | while IFS= read -r line; do
  printf '0%s' "$line" > "$files_corpus/seed-$(printf '%s' "$line" | md5sum | cut -c1-16).in"
done
while IFS= read -r -d '' f; do
  { printf '1'; head -c 4000 "$f"; } > "$files_corpus/seed-$(printf '%s' "$f" | md5sum | cut -c1-16).in"
done < <(find "$root/examples" -name '*.ref.csv' -print0)
cp "$root"/tests/fuzz/files_corpus/* "$files_corpus/"

status=0
parse_log="$build/parse_fuzz.log"
"$build/tests/fuzz/parse_fuzz" "$corpus" \
  -dict="$root/tests/fuzz/cap.dict" \
  -max_total_time="$((seconds - seconds / 3))" -timeout=5 -rss_limit_mb=2048 -max_len=16384 \
  $([ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs") \
  -artifact_prefix="$artifacts/" -print_final_stats=1 >"$parse_log" 2>&1 &
parse_pid=$!
# Stops the background parser if this script is interrupted or fails.
trap 'kill "$parse_pid" 2>/dev/null || true' EXIT
"$build/tests/fuzz/files_fuzz" "$files_corpus" \
  -max_total_time="$((seconds / 3 > 0 ? seconds / 3 : 1))" -timeout=5 -rss_limit_mb=2048 -max_len=16384 \
  $([ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs") \
  -artifact_prefix="$artifacts/files/" -print_final_stats=1 || status=$?
if [ "$status" -ne 0 ]; then
  echo "files_fuzz failed (exit $status); inputs in $artifacts/files/" >&2
  ls -l "$artifacts/files" >&2 || true
fi

# The robot importers, one target that reads `<sdf` input as SDFormat and
# the rest as URDF, seeded with the repository's robots and error cases: two
# thirds of CAPSTAN_IMPORT_FUZZ_SECONDS on the URDF seeds, the rest on the
# SDFormat ones (a libsdformat read takes some 50 ms, a URDF read 1 ms, so
# one corpus would starve the URDF reader).
import_seconds="${CAPSTAN_IMPORT_FUZZ_SECONDS:-15}"
for format in urdf sdf; do
  import_corpus="$build/fuzz-corpus-import-$format"
  mkdir -p "$import_corpus"
  while IFS= read -r -d '' f; do
    cp "$f" "$import_corpus/seed-$(printf '%s' "$f" | md5sum | cut -c1-16).$format"
  done < <(find "$root/examples/urdf" "$root/tests/import/urdf" "$root/tests/import/sdf" "$root/tests/errors/import" -type f \
                -name "*.$format" -print0 2>/dev/null)
  if [ "$format" = urdf ]; then
    budget=$((import_seconds - import_seconds / 3))
  else
    budget=$((import_seconds / 3 > 0 ? import_seconds / 3 : 1))
  fi
  "$build/tests/fuzz/import_fuzz" "$import_corpus" \
    -max_total_time="$budget" -timeout=5 -rss_limit_mb=2048 -max_len=16384 \
    -artifact_prefix="$artifacts/import-" -print_final_stats=1 || {
    status=$?
    echo "import_fuzz failed on the $format corpus (exit $status); inputs in $artifacts/" >&2
  }
done

parse_status=0
wait "$parse_pid" || parse_status=$?
trap - EXIT
echo "--- parse_fuzz (ran beside the above) ---"
cat "$parse_log"
if [ "$parse_status" -ne 0 ]; then
  echo "parse_fuzz failed (exit $parse_status); inputs in $artifacts/" >&2
  ls -l "$artifacts" >&2 || true
  status=$parse_status
fi
exit "$status"
