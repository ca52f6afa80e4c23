#!/usr/bin/env bash
# Installs what Capstan needs from Debian 12's packages (as root, or through
# sudo), then configures and builds into build/: the targets given as
# arguments (`scripts/setup.sh capstan`: the compiler alone), else everything
# (the compiler, the test programs). Safe to run again: it only installs
# what is missing and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache git python3
  clang libclang-rt-14-dev          # the parser fuzz target (libFuzzer)
  libeigen3-dev nlohmann-json3-dev doctest-dev
  python3-jinja2                    # code-generation templates
  libclang-cpp14-dev libclang-14-dev llvm-14-dev  # checking `external "C++"` headers, formatting
  libsimbody-dev                    # cross-check tests
  libsundials-dev                   # `--integrator cvode` (capstan/cvode.hpp); ~140 packages, ~2 min
  liburdfdom-dev libtinyxml2-dev    # `capstan import` of URDF robots (compiler/import/)
  libsdformat-dev                   # `capstan import` of SDFormat robots (compiler/import/sdf.cpp)
  libdart-dev libdart-utils-urdf-dev  # the importer's cross-check (tests/import/)
  pybind11-dev python3-dev python3-numpy  # the Python module (python/, docs/python.md)
  python3-distributed python3-pytest      # its sweeps on Dask, and its tests (tests/python/)
  libjs-three                       # three.js, which `capstan view` embeds in its pages
  chromium                          # the pages' test in a real browser (tests/view/)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's python3 has jinja2; a python3 earlier on PATH (pyenv, venv) may not.
# Warnings are errors in the project's own builds and CI (off for users).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DCAPSTAN_WARNINGS_AS_ERRORS=ON >/dev/null
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build build -j "$(nproc)" "${targets[@]}"
