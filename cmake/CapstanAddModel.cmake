# capstan_add_model(<target> MODEL file.cap [MODEL_NAME name] [OUTPUT_DIR dir]
#                   [TEMPLATES dir] [LIBRARY_PATH dirs...] [CXX_INCLUDE_DIRS dirs...]
#                   [DERIVATIVES])
#
# Generates the C++ header of a Capstan model at build time and makes the
# INTERFACE target <target>: linking it puts the header's folder (and
# CXX_INCLUDE_DIRS) on the include path and links Capstan::runtime (Eigen).
#
#   MODEL             the model file; a relative path is relative to
#                     CMAKE_CURRENT_SOURCE_DIR
#   MODEL_NAME        the model to compile (`Pkg.Name`); default: the last
#                     top-level model in MODEL, found when CMake configures
#   OUTPUT_DIR        where the header goes (relative to CMAKE_CURRENT_BINARY_DIR);
#                     default ${CMAKE_CURRENT_BINARY_DIR}/capstan/<target>
#   TEMPLATES         a folder of code templates replacing the installed ones
#   LIBRARY_PATH      model library roots (what `-I` is to `capstan`)
#                     (these folders, TEMPLATES and CXX_INCLUDE_DIRS are
#                     relative to CMAKE_CURRENT_SOURCE_DIR)
#   CXX_INCLUDE_DIRS  more C++ include folders for `external "C++"` headers
#                     (each external function's IncludeDirectory is added
#                     without it, found when CMake configures)
#   DERIVATIVES       also generate forwardDynamicsDerivatives (`capstan
#                     compile --derivatives`): what <capstan/cvode.hpp>
#                     (Capstan::cvode) needs for the exact Jacobian
#
# The header is OUTPUT_DIR/<Class>.hpp, <Class> being the last part of the
# model's name (the variable <target>_HEADER holds its path). `capstan
# compile --depfile` lists every file the header was made from (the model,
# each library file that lookup read, the stdlib, the templates, external
# headers in their IncludeDirectory), so a change to any of them, or to the
# capstan program, regenerates it, and nothing else does. A new file in a
# library folder is not seen until one of those changes.
#
# Generated code is meant to be optimized: the first capstan_add_model() of
# a build whose CMAKE_BUILD_TYPE is empty (CMake's default) or Debug warns
# once, with what that costs (docs/embedding.md, "Build type").
include_guard(GLOBAL)

function(_capstan_warn_unoptimized)
  # -O0 against -O2 (docs/embedding.md, "Build type", says how it was measured).
  set(factor 15)
  get_property(generator_is_multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  get_property(warned GLOBAL PROPERTY _CAPSTAN_WARNED_BUILD_TYPE)
  if(generator_is_multi_config OR warned)
    return()
  endif()
  string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type)
  if(build_type STREQUAL "" OR build_type STREQUAL "DEBUG")
    if(build_type STREQUAL "")
      set(what "no CMAKE_BUILD_TYPE (CMake's default: no optimization)")
    else()
      set(what "CMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}")
    endif()
    message(WARNING "capstan_add_model(): this build has ${what}. Generated models run about "
                    "${factor} times slower unoptimized than with -O2; configure with "
                    "-DCMAKE_BUILD_TYPE=Release or RelWithDebInfo for simulation (docs/embedding.md, \"Build type\").")
    set_property(GLOBAL PROPERTY _CAPSTAN_WARNED_BUILD_TYPE TRUE)
  endif()
endfunction()

function(capstan_add_model target)
  cmake_policy(PUSH)
  cmake_policy(SET CMP0116 NEW)  # DEPFILE paths relative to the build tree
  cmake_parse_arguments(PARSE_ARGV 1 arg "DERIVATIVES" "MODEL;MODEL_NAME;OUTPUT_DIR;TEMPLATES" "LIBRARY_PATH;CXX_INCLUDE_DIRS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "capstan_add_model(${target}): unknown arguments `${arg_UNPARSED_ARGUMENTS}`")
  endif()
  if(NOT arg_MODEL)
    message(FATAL_ERROR "capstan_add_model(${target}): MODEL file.cap is required")
  endif()
  if(NOT TARGET Capstan::capstan OR NOT TARGET Capstan::runtime)
    message(FATAL_ERROR "capstan_add_model(${target}): Capstan::capstan and Capstan::runtime are not defined; "
                        "call find_package(Capstan CONFIG REQUIRED) first")
  endif()
  _capstan_warn_unoptimized()
  get_filename_component(model "${arg_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "capstan_add_model(${target}): no model file `${model}`")
  endif()
  set(outdir "${CMAKE_CURRENT_BINARY_DIR}/capstan/${target}")
  if(arg_OUTPUT_DIR)
    get_filename_component(outdir "${arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  set(library_args "")
  foreach(dir IN LISTS arg_LIBRARY_PATH)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND library_args -I "${dir}")
  endforeach()
  set(cxx_dirs "")
  foreach(dir IN LISTS arg_CXX_INCLUDE_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND cxx_dirs "${dir}")
  endforeach()
  set(derivative_args "")
  if(arg_DERIVATIVES)
    set(derivative_args --derivatives)
  endif()
  set(template_args "")
  if(arg_TEMPLATES)
    get_filename_component(templates "${arg_TEMPLATES}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(template_args --templates "${templates}")
  endif()

  # The model's full name fixes the header's name; without MODEL_NAME the
  # compiler says which model the file holds. The build passes the name
  # back with --model, so a renamed model fails the build with a message
  # rather than writing a header no one includes.
  # The check also gives the external functions' IncludeDirectory folders,
  # which consumers need on their include path.
  set(name "${arg_MODEL_NAME}")
  set(model_arg "")
  if(name)
    set(model_arg --model "${name}")
  endif()
  get_target_property(capstan Capstan::capstan LOCATION)
  execute_process(COMMAND "${capstan}" check "${model}" --json --no-color ${model_arg} ${library_args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE diagnostics)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "capstan_add_model(${target}): `capstan check ${arg_MODEL}` failed:\n${diagnostics}")
  endif()
  if(NOT name)
    string(JSON name GET "${json}" model)
  endif()
  string(JSON nexternal ERROR_VARIABLE no_externals LENGTH "${json}" external_functions)
  if(NOT no_externals AND nexternal GREATER 0)
    math(EXPR last "${nexternal} - 1")
    foreach(i RANGE ${last})
      string(JSON dir GET "${json}" external_functions ${i} include_directory)
      if(dir)
        list(APPEND cxx_dirs "${dir}")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES cxx_dirs)
  endif()
  string(REGEX REPLACE "^.*\\." "" class "${name}")
  set(header "${outdir}/${class}.hpp")
  set(depfile "${CMAKE_CURRENT_BINARY_DIR}/capstan/${target}.d")
  # Ninja creates the folders of a rule's outputs; Make creates none, and
  # `capstan compile` creates only -o's. Both folders exist from here on.
  file(MAKE_DIRECTORY "${outdir}" "${CMAKE_CURRENT_BINARY_DIR}/capstan")
  file(RELATIVE_PATH shown "${CMAKE_BINARY_DIR}" "${header}")

  add_custom_command(
    OUTPUT "${header}"
    COMMAND Capstan::capstan compile "${model}" --model "${name}" -o "${outdir}" --depfile "${depfile}" --no-color
            ${library_args} ${template_args} ${derivative_args}
    DEPENDS "${model}" "$<TARGET_FILE:Capstan::capstan>"
    DEPFILE "${depfile}"
    COMMENT "Generating ${shown} from ${arg_MODEL}"
    VERBATIM)
  add_custom_target(${target}_generate DEPENDS "${header}")
  add_library(${target} INTERFACE)
  target_include_directories(${target} INTERFACE "${outdir}" ${cxx_dirs})
  target_link_libraries(${target} INTERFACE Capstan::runtime)
  add_dependencies(${target} ${target}_generate)
  set(${target}_HEADER "${header}" PARENT_SCOPE)
  cmake_policy(POP)
endfunction()
