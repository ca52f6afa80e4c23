// External C++ functions (`external "C++"`, SPEC §3) on the command line:
// where their headers are, and the reference interpreter's compiled copy of
// them (a small shared library per function, built with $CXX and cached
// like the driver, loaded with dlopen).
#pragma once

#include <filesystem>
#include <string>

#include "cli/options.hpp"
#include "codegen/interpret.hpp"

namespace capstan::cli {

// The file an `Include` annotation names (`#include "friction.hpp"` or
// `<friction.hpp>`) in `includeDirectory`, if it is there; empty otherwise.
std::filesystem::path externalHeader(const std::string& include, const std::string& includeDirectory);

// The model's external functions, compiled for the interpreter (an empty
// function when the model has none). A header missing from its
// IncludeDirectory, or a call that does not compile, is a diagnostic at the
// function's `external` clause, printed with the compiler's messages; then
// capstan exits 1.
codegen::ExternalFunctions loadExternalFunctions(const Options& opts, const Loaded& loaded);

}  // namespace capstan::cli
