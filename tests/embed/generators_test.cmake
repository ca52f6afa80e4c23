# capstan_add_model() with each generator CMake offers on Linux, Unix
# Makefiles (CMake's default) and Ninja: installs this build tree into a
# fresh prefix, then configures, builds and runs tests/embed/generators (the
# header in an OUTPUT_DIR of its own, so that nothing but
# capstan_add_model() makes the depfile's folder), touches the model and
# checks that the next build regenerates the header. Also: with no build
# type, one warning for two models, saying what it costs; with Release none.
# Arguments: ROOT (source tree), BUILD (this build tree), BIN (scratch folder), NINJA.
set(NAME "embed.generators")
include("${CMAKE_CURRENT_LIST_DIR}/install_prefix.cmake")
file(COPY "${ROOT}/tests/embed/generators/" DESTINATION "${src}")
file(COPY "${ROOT}/examples/embed/models/stiff_spring.cap" DESTINATION "${src}")

foreach(generator "Unix Makefiles" "Ninja")
  string(REPLACE " " "_" dir "${generator}")
  set(b "${build}/${dir}")
  set(extra "")
  if(generator STREQUAL "Ninja")
    set(extra "-DCMAKE_MAKE_PROGRAM=${NINJA}")
  endif()
  run("configure (${generator})" "${CMAKE_COMMAND}" -S "${src}" -B "${b}" -G "${generator}" ${extra}
      "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  string(REGEX MATCHALL "capstan_add_model\\(\\): this build" warnings "${output}")
  list(LENGTH warnings n)
  # (CMake wraps the warning's lines.)
  if(NOT n EQUAL 1 OR NOT output MATCHES "run[ \n]+about[ \n]+[1-9][0-9]*[ \n]+times[ \n]+slower")
    message(FATAL_ERROR "${NAME}: ${generator}: ${n} build-type warnings (one wanted, with its cost):\n${output}")
  endif()
  run("build (${generator})" "${CMAKE_COMMAND}" --build "${b}" --target spring)
  run("spring (${generator})" "${b}/spring")
  message("${generator}: ${output}")
  # A touched model regenerates the header (the model is in the depfile and
  # in DEPENDS); the generation step alone, to spare a second C++ build.
  file(TOUCH "${src}/stiff_spring.cap")
  run("regenerate (${generator})" "${CMAKE_COMMAND}" --build "${b}" --target spring_model_generate)
  if(NOT output MATCHES "Generating generated/headers/StiffSpring.hpp from stiff_spring.cap")
    message(FATAL_ERROR "${NAME}: ${generator}: touching the model did not regenerate the header:\n${output}")
  endif()
  if(NOT EXISTS "${b}/capstan/spring_model.d")
    message(FATAL_ERROR "${NAME}: ${generator}: no depfile ${b}/capstan/spring_model.d")
  endif()
  message("${generator}: built, ran, regenerated: ok")
endforeach()

run("configure (Release)" "${CMAKE_COMMAND}" -S "${src}" -B "${build}/release" -G Ninja "-DCMAKE_MAKE_PROGRAM=${NINJA}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(output MATCHES "capstan_add_model\\(\\): this build")
  message(FATAL_ERROR "${NAME}: a Release build was warned about its build type:\n${output}")
endif()
message("Release: no build-type warning: ok")
