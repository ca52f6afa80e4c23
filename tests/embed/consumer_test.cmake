# examples/embed as a user builds it: installs this build tree into a fresh
# prefix, then configures, builds and runs a copy of the consumer project
# against that prefix only (find_package(Capstan), capstan_add_model; with
# Capstan::cvode and DERIVATIVES where Capstan has SUNDIALS), and
# checks with `ninja -n` that a touched model file regenerates and rebuilds
# exactly what depends on it.
# Arguments: ROOT (source tree), BUILD (this build tree), BIN (scratch folder), NINJA, PYTHON.
set(NAME "examples/embed")
include("${CMAKE_CURRENT_LIST_DIR}/install_prefix.cmake")
# A copy, so that touching its models leaves the source tree alone.
file(COPY "${ROOT}/examples/embed/" DESTINATION "${src}")
run("configure" "${CMAKE_COMMAND}" -S "${src}" -B "${build}" -G Ninja "-DCMAKE_MAKE_PROGRAM=${NINJA}"
    "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
file(STRINGS "${build}/CMakeCache.txt" capstan_dir REGEX "^Capstan_DIR:")
if(NOT capstan_dir STREQUAL "Capstan_DIR:PATH=${prefix}/lib/cmake/Capstan")
  message(FATAL_ERROR "examples/embed: found the package elsewhere than the install: ${capstan_dir}")
endif()
run("build" "${NINJA}" -C "${build}")
message("${output}")
run("controller" "${build}/controller")
message("${output}")
run("pendulum_energy" "${build}/pendulum_energy")
message("${output}")
# The same trajectory from the user's program (capstan::sim over the
# generated class) and from `capstan simulate`, row for row.
execute_process(COMMAND "${build}/pendulum_csv" 1.0 0.01 OUTPUT_FILE "${BIN}/embedded.csv" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "examples/embed: pendulum_csv failed (${rc})")
endif()
run("capstan simulate" "${prefix}/bin/capstan" simulate "${src}/models/pendulum.cap" -I "${src}/models"
    --t-end 1 --dt 0.01 --integrator dopri5 -o "${BIN}/simulated.csv")
run("compare" "${PYTHON}" "${ROOT}/tests/embed/same_rows.py" "${BIN}/embedded.csv" "${BIN}/simulated.csv")
message("${output}")
run("wheel_brake" "${build}/wheel_brake")  # an external C++ function, its include folder from the model
message("${output}")
run("bushing_mount" "${build}/bushing_mount")  # its own loop catches the gimbal lock a knock causes
message("${output}")
# Where the install has Capstan::cvode (Capstan built with SUNDIALS): CVODE
# with the exact Jacobian, from a header generated with DERIVATIVES (without
# it forwardDynamicsDerivatives does not exist and stiff_spring does not build).
file(READ "${prefix}/lib/cmake/Capstan/CapstanTargets.cmake" exported)
if(exported MATCHES "Capstan::cvode")
  run("stiff_spring" "${build}/stiff_spring")
  message("${output}")
endif()

# The installed Python module (where capstan was built with it): it runs the
# installed capstan, and its run of the pendulum is capstan simulate's.
file(GLOB python_packages "${prefix}/lib/python3*/dist-packages")
if(python_packages AND EXISTS "${python_packages}/capstan/__init__.py")
  run("the installed Python module" "${CMAKE_COMMAND}" -E env --unset=CAPSTAN "PYTHONPATH=${python_packages}"
      "${PYTHON}" -c "
import sys, numpy as np, capstan
prefix, model, models, csv = sys.argv[1:]
assert capstan.capstan_executable() == prefix + '/bin/capstan', capstan.capstan_executable()
r = capstan.compile(model, include=[models]).simulate(1.0, dt=0.01, integrator='dopri5')
expected = np.loadtxt(csv, delimiter=',', skiprows=1)
assert r.values.shape == expected.shape, (r.values.shape, expected.shape)
assert np.allclose(r.values, expected, rtol=1e-12, atol=1e-12)
print('the installed Python module: the same', r.rows, 'rows as capstan simulate')
" "${prefix}" "${src}/models/pendulum.cap" "${src}/models" "${BIN}/simulated.csv")
  message("${output}")
endif()

# The installed capstan read the installed stdlib and templates, nothing of
# the source tree. (Paths in a depfile escape spaces: BIN has one.)
file(READ "${build}/capstan/servo_arm.d" depfile)
string(REPLACE "\\ " " " depfile "${depfile}")
foreach(needed "${prefix}/share/capstan/stdlib/Capstan/Joints.cap" "${prefix}/share/capstan/templates/model.hpp.j2"
               "${src}/models/arm.cap" "${src}/models/Rig/Link.cap")
  string(FIND "${depfile}" "${needed}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "examples/embed: the depfile does not list ${needed}:\n${depfile}")
  endif()
endforeach()
foreach(source "${ROOT}/stdlib/" "${ROOT}/compiler/" "${ROOT}/examples/")
  string(FIND "${depfile}" "${source}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "examples/embed: the installed capstan read ${source}:\n${depfile}")
  endif()
endforeach()

# What `ninja -n` would do after touching `file`: its `[i/n] description` lines.
function(after_touching file expected)
  file(TOUCH "${src}/${file}")
  run("ninja -n" "${NINJA}" -C "${build}" -n)
  string(REGEX MATCHALL "\\[[0-9]+/[0-9]+\\] [^\n]*" steps "${output}")
  list(TRANSFORM steps REPLACE "^\\[[0-9]+/[0-9]+\\] " "")
  list(SORT steps)
  set(want ${expected} ${ARGN})
  list(SORT want)
  if(NOT steps STREQUAL want)
    string(REPLACE ";" "\n  " steps "${steps}")
    string(REPLACE ";" "\n  " want "${want}")
    message(FATAL_ERROR "examples/embed: after touching ${file}, ninja would run\n  ${steps}\nand not\n  ${want}")
  endif()
  message("touching ${file}: ok")
endfunction()

set(arm "Generating capstan/servo_arm/ServoArm.hpp from models/arm.cap")
set(pendulum "Generating capstan/pendulum/Pendulum.hpp from models/pendulum.cap")
set(controller "Building CXX object CMakeFiles/controller.dir/controller.cpp.o" "Linking CXX executable controller")
set(energy "Building CXX object CMakeFiles/pendulum_energy.dir/pendulum_energy.cpp.o"
           "Linking CXX executable pendulum_energy"
           "Building CXX object CMakeFiles/pendulum_csv.dir/pendulum_csv.cpp.o" "Linking CXX executable pendulum_csv")
after_touching(models/arm.cap "${arm}" ${controller})
# Really rebuild: the header is regenerated and nothing is left to do.
run("rebuild" "${NINJA}" -C "${build}")
string(FIND "${output}" "${arm}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "examples/embed: the rebuild did not regenerate ServoArm.hpp:\n${output}")
endif()
run("ninja -n" "${NINJA}" -C "${build}" -n)
if(NOT output MATCHES "no work to do")
  message(FATAL_ERROR "examples/embed: work left after the rebuild:\n${output}")
endif()
after_touching(models/pendulum.cap "${pendulum}" ${controller} ${energy})
# A file of the imported library package: both models.
after_touching(models/Rig/Link.cap "${arm}" "${pendulum}" ${controller} ${energy})
