#pragma once

// Checks `external "C++"` function declarations against the C++ header their
// Include annotation names, by parsing that header with Clang in process, so
// that a mismatch is reported at the model's line rather than as a C++ error
// in generated code later (SPEC §3, "Functions").
//
// Only check.cpp sees Clang; this interface is plain standard types so that
// its users compile quickly and need no Clang headers.
//
// What fits. A Capstan value is passed to, or received from, a C++ function
// only where C++ would convert it without surprise:
//   parameter  Real     `double`, `float`, `long double`
//              Integer  any integer type but `bool`, or a floating type
//              Boolean  `bool`
//     each by value (cv-qualified or not) or as `const T&`; a non-const
//     reference (the function could write to the caller's value), an rvalue
//     reference or a pointer does not fit.
//   result     Real     a floating type; Integer an integer type but `bool`;
//              Boolean `bool`; each by value or as `const T&`.
// Types are compared after typedefs and `using` aliases are resolved.
//
// Arity. A call with k arguments fits a function with n parameters of which
// the last n - m have default arguments when m <= k <= n: the defaults fill
// the rest. A C variadic function is checked on its named parameters only and
// fits only when the call passes nothing through `...` (Capstan never does:
// a callee reading va_arg would have to guess the promoted types).
//
// Names. The name is looked up as C++ qualified lookup would from the global
// scope: namespaces (reopened, inline, aliased, and through `using`
// directives and declarations), classes (a public static member function such
// as `mylib::Friction::eval`, also one inherited from a base), and functions
// declared in `extern "C"` blocks. A leading `::` is allowed. Function
// templates, non-static member functions and deleted, private or protected
// functions are found but never fit.
//
// Overloads. A name with one declaration gets the precise verdict
// (WrongArity, WrongParameterType, WrongResultType); a name with several gets
// Ok when exactly one fits, NoMatchingOverload when none does and
// AmbiguousOverload when more than one does. A lone function template or
// uncallable function is NoMatchingOverload, with the reason in `detail`. A
// name C++ lookup finds ambiguous (a function and a variable brought in by
// two using-directives) is AmbiguousOverload whatever fits.

#include <string>
#include <string_view>
#include <vector>

namespace capstan::cppheader {

// The Capstan side of a parameter or result.
enum class Kind { Real, Integer, Boolean };

struct Signature {
  std::string qualifiedName;  // as written after `external "C++"`: `mylib::friction`
  std::vector<Kind> params;   // the call's arguments, in C++ call order
  Kind result = Kind::Real;
};

// A C++ function, or function template, declared under the looked-up name.
struct Found {
  std::string declaration;  // e.g. `double mylib::friction(double w, double mu = 0.5)`,
                            // parameter and result types as written
  std::string file;         // the header as Clang opened it (include directory + name)
  unsigned line = 0;        // 1-based line of its first declaration
  std::string mismatch;     // why it does not fit the signature; empty when it fits
};

enum class Verdict {
  Ok,
  HeaderError,         // the include does not parse (missing header, C++ error)
  NotFound,            // no function of that name
  WrongArity,          // the one function takes a different number of arguments
  WrongParameterType,  // ... a parameter does not fit (see `parameter`)
  WrongResultType,     // ... its result does not fit
  NoMatchingOverload,  // no candidate fits (or the only one cannot be called)
  AmbiguousOverload,   // more than one candidate fits
};

struct Check {
  Verdict verdict = Verdict::Ok;
  std::vector<Found> candidates;  // every declaration found under the name, in
                                  // lookup order; on Ok exactly one has no mismatch
  int parameter = -1;             // WrongParameterType: the 0-based C++ parameter
  std::string detail;             // why, in words, for every verdict but Ok;
                                  // HeaderError: Clang's first error,
                                  // `file:line:col: message` (no location when the
                                  // error is in the include line itself)
};

// Parses `includeLine` (the Include annotation, e.g. `#include "friction.hpp"`;
// several lines are fine) once, as C++20 with `includeDirs` as -I directories
// and the system's libstdc++, and checks each signature against it. Returns
// one Check per signature, in order; when the include does not parse, every
// one is HeaderError with the same detail. Nothing is printed.
std::vector<Check> checkHeader(const std::string& includeLine, const std::vector<std::string>& includeDirs,
                               const std::vector<Signature>& signatures);

std::string_view name(Kind kind);        // `Real`, `Integer`, `Boolean`
std::string_view name(Verdict verdict);  // the enumerator's name, `WrongArity`

}  // namespace capstan::cppheader
