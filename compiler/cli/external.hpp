// External C++ functions (`external "C++"`, SPEC §3) on the command line:
// where their headers are, their check against those headers with Clang
// (every command, `check` included), and the reference interpreter's
// compiled copy of them (a small shared library per function, built with
// $CXX and cached like the driver, loaded with dlopen).
#pragma once

#include <filesystem>
#include <string>

#include "cli/options.hpp"
#include "codegen/interpret.hpp"
#include "sema/flat.hpp"
#include "syntax/diagnostics.hpp"

namespace capstan::cli {

// The file an `Include` annotation names (`#include "friction.hpp"` or
// `<friction.hpp>`) in `includeDirectory`, if it is there; empty otherwise.
std::filesystem::path externalHeader(const std::string& include, const std::string& includeDirectory);

// Checks each external function of `flat` against the header its Include
// annotation names, parsed by Clang in process (cppheader::checkHeader, one
// parse per distinct Include and IncludeDirectory), and reports at the
// function's `external` clause: a header missing from its IncludeDirectory,
// a header that does not compile, no function of that name, or one whose
// arity, parameter or result types do not fit the Capstan declaration. Each
// C++ declaration found gets a note at its line in the header (added to
// `sources` for that), saying why it does not fit.
void checkExternalHeaders(const sema::FlatModel& flat, syntax::SourceManager& sources,
                          syntax::DiagnosticEngine& diags);

// The model's external functions, compiled for the interpreter (an empty
// function when the model has none). A header missing from its
// IncludeDirectory, or a call that does not compile, is a diagnostic at the
// function's `external` clause, printed with the compiler's messages; then
// capstan exits 1.
// The signal with which the last external call crashed (its exception says
// so too), 0 if none did.
int externalCrashSignal();
codegen::ExternalFunctions loadExternalFunctions(const Options& opts, const Loaded& loaded);

}  // namespace capstan::cli
