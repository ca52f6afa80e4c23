# Generated headers need nothing but Eigen and the runtime headers, and two of
# them live in one translation unit: generates Chain.hpp (examples/chain.cap)
# and ServoArm.hpp (examples/embed/models/arm.cap), then compiles
# tests/embed/two_models.cpp with g++ and clang++ at -O3 -Wall -Wextra
# -Wpedantic -Werror against only those, links and runs it.
# Arguments: ROOT (source tree), BIN (scratch folder), CAPSTAN, EIGEN (Eigen's include folder).
file(REMOVE_RECURSE "${BIN}")
file(MAKE_DIRECTORY "${BIN}/generated")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "header-only consumer: ${what} failed (${rc})")
  endif()
endfunction()

run("capstan compile chain.cap" "${CAPSTAN}" compile "${ROOT}/examples/chain.cap" -o "${BIN}/generated" --no-color)
run("capstan compile arm.cap" "${CAPSTAN}" compile "${ROOT}/examples/embed/models/arm.cap"
    -I "${ROOT}/examples/embed/models" -o "${BIN}/generated" --no-color)

foreach(cxx g++ clang++)
  find_program(compiler_${cxx} ${cxx})
  if(NOT compiler_${cxx})
    message(FATAL_ERROR "header-only consumer: ${cxx} not found; both g++ and clang++ are needed")
  endif()
  run("${cxx}" "${compiler_${cxx}}" -std=c++20 -O3 -Wall -Wextra -Wpedantic -Werror
      -isystem "${EIGEN}" -I "${ROOT}/runtime/include" -I "${BIN}/generated"
      "${ROOT}/tests/embed/two_models.cpp" -o "${BIN}/two_models_${cxx}")
  run("two_models built by ${cxx}" "${BIN}/two_models_${cxx}")
endforeach()
