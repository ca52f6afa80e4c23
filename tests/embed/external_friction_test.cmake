# examples/external_friction as a user builds it: installs this build tree
# into a fresh prefix, then configures, builds and runs a copy of the example
# project against that prefix only, runs the same model with the installed
# `capstan simulate`, and checks with `ninja -n` that editing the C++
# friction law regenerates the model's header and rebuilds the program.
# Arguments: ROOT (source tree), BUILD (this build tree), BIN (scratch folder), NINJA.
set(NAME "examples/external_friction")
include("${CMAKE_CURRENT_LIST_DIR}/install_prefix.cmake")
set(ENV{CAPSTAN_CACHE_DIR} "${BIN}/cache")  # `capstan simulate` builds here
# A copy, so that touching its files leaves the source tree alone.
file(COPY "${ROOT}/examples/external_friction/" DESTINATION "${src}")
run("configure" "${CMAKE_COMMAND}" -S "${src}" -B "${build}" -G Ninja "-DCMAKE_MAKE_PROGRAM=${NINJA}"
    "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run("build" "${NINJA}" -C "${build}")
message("${output}")
# The program checks the physics itself and exits non-zero if it fails.
run("friction_pendulum" "${build}/friction_pendulum")
message("${output}")

# Without CMake: the README's `capstan simulate`, which builds the external
# function from its IncludeDirectory and reports the output as a column.
run("capstan simulate" "${prefix}/bin/capstan" simulate "${src}/friction.cap" --t-end 2 -o "${BIN}/friction.csv")
file(STRINGS "${BIN}/friction.csv" rows)
list(GET rows 0 header)
list(GET rows -1 last)
if(NOT header MATCHES ",frictionTorque," OR NOT last MATCHES "^2,")
  message(FATAL_ERROR "examples/external_friction: capstan simulate did not write the frictionTorque column "
                      "up to t = 2:\n${header}\n...\n${last}")
endif()
message("capstan simulate: ok")

# The C++ header is an input of the generated header (capstan compile
# --depfile lists it) and of the program: an edit rebuilds both, nothing else.
file(TOUCH "${src}/include/friction_law.hpp")
run("ninja -n" "${NINJA}" -C "${build}" -n)
string(REGEX MATCHALL "\\[[0-9]+/[0-9]+\\] [^\n]*" steps "${output}")
list(TRANSFORM steps REPLACE "^\\[[0-9]+/[0-9]+\\] " "")
list(SORT steps)
set(want "Building CXX object CMakeFiles/friction_pendulum.dir/main.cpp.o"
         "Generating capstan/friction_model/FrictionPendulum.hpp from friction.cap"
         "Linking CXX executable friction_pendulum")
list(SORT want)
if(NOT steps STREQUAL want)
  string(REPLACE ";" "\n  " steps "${steps}")
  string(REPLACE ";" "\n  " want "${want}")
  message(FATAL_ERROR "examples/external_friction: after touching include/friction_law.hpp, ninja would run\n"
                      "  ${steps}\nand not\n  ${want}")
endif()
message("touching include/friction_law.hpp: ok")
