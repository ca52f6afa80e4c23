# Shared by the embed tests (-P scripts): a scratch folder BIN with this
# build tree installed into BIN/prefix, and run(WHAT COMMAND...), which stops
# the test with WHAT and the command's output when it fails and otherwise
# leaves that output in `output`. NAME names the test in messages.
# Arguments: BUILD (this build tree), BIN (scratch folder), NAME.
file(REMOVE_RECURSE "${BIN}")
set(prefix "${BIN}/prefix")
set(src "${BIN}/src")
set(build "${BIN}/build")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(output "${out}${err}" PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NAME}: ${what} failed (${rc}):\n${out}${err}")
  endif()
endfunction()

run("install" "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${prefix}")
