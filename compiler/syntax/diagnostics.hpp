// Diagnostics as values: every kind is declared once in the registry
// (compiler/diagnostics/*.def, one file per phase), raised next to the code
// that detects it with typed positional arguments, collected by a
// DiagnosticEngine that lets the phase keep going, and rendered like a C++
// compiler's messages:
//
//   model.cap:14:9: error: joint `elbow` connects body `upper` to itself [JointSelfLoop]
//      14 |   Revolute elbow;
//         |            ^~~~~
//   model.cap:9:3: note: body `upper` declared here [NoteDeclaredHere]
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "syntax/source.hpp"

namespace capstan::syntax {

enum class Severity { Error, Warning, Note };

// CAPSTAN_DIAG(Name, Severity, "format"): the format is lower case, names code
// in backticks, states what was observed first and a hint after `;`, and uses
// {0:kind}, {1:kind}, ... for its arguments. The kind says what an argument is
// and which C++ type a report must pass for it (checked at compile time, see
// DiagFor below):
//   name    a name in the model or on the command line (text)
//   type    a type or shape as the language writes it (text)
//   unit    a unit expression (text)
//   path    a file or folder (text)
//   text    any other words: a reason, a list, an OS error (text)
//   number  a real number (double; printed by formatNumber)
//   count   a whole number (an integer type)
enum class DiagKind : std::uint16_t {
#define CAPSTAN_DIAG(name, severity, format) name,
#include "diagnostics/all.def"
#undef CAPSTAN_DIAG
};

enum class ArgKind : std::uint8_t { Name, Type, Unit, Path, Text, Number, Count };

struct DiagInfo {
  DiagKind kind;
  std::string_view name;
  Severity severity;
  std::string_view format;
  std::string_view phase;
};

inline constexpr DiagInfo kDiagRegistry[] = {
#define CAPSTAN_DIAG(name, severity, format) {DiagKind::name, #name, Severity::severity, format, CAPSTAN_PHASE},
#include "diagnostics/all.def"
#undef CAPSTAN_DIAG
};

constexpr const DiagInfo& diagInfo(DiagKind kind) { return kDiagRegistry[static_cast<std::size_t>(kind)]; }
std::span<const DiagInfo> allDiagKinds();
std::string_view severityName(Severity s);

// The placeholders of a format: how many arguments it takes and the kind of
// each. `ok` is false for a placeholder with an unknown kind, a gap in the
// numbering or one number used with two kinds.
struct Placeholders {
  static constexpr std::size_t kMax = 10;
  std::size_t count = 0;
  ArgKind kinds[kMax]{};
  bool ok = true;
};

constexpr bool parseArgKind(std::string_view word, ArgKind& kind) {
  constexpr std::pair<std::string_view, ArgKind> kNames[] = {
      {"name", ArgKind::Name}, {"type", ArgKind::Type},     {"unit", ArgKind::Unit}, {"path", ArgKind::Path},
      {"text", ArgKind::Text}, {"number", ArgKind::Number}, {"count", ArgKind::Count}};
  for (const auto& [n, k] : kNames)
    if (n == word) {
      kind = k;
      return true;
    }
  return false;
}

// A placeholder at `at` in `format`: `{D}` or `{D:kind}` with one digit D;
// its length, or 0 where `at` starts none (a brace literal `{1, 0, 0}`).
constexpr std::size_t placeholderAt(std::string_view format, std::size_t at) {
  if (at + 2 >= format.size() || format[at] != '{' || format[at + 1] < '0' || format[at + 1] > '9') return 0;
  if (format[at + 2] == '}') return 3;
  if (format[at + 2] != ':') return 0;
  const std::size_t close = format.find('}', at);
  return close == std::string_view::npos ? 0 : close - at + 1;
}

constexpr Placeholders placeholders(std::string_view format) {
  Placeholders p;
  bool seen[Placeholders::kMax]{};
  for (std::size_t i = 0; i < format.size(); ++i) {
    const std::size_t n = placeholderAt(format, i);
    if (n == 0) continue;
    const auto k = static_cast<std::size_t>(format[i + 1] - '0');
    ArgKind kind{};
    if (n == 3 || !parseArgKind(format.substr(i + 3, n - 4), kind) || (seen[k] && p.kinds[k] != kind)) p.ok = false;
    seen[k] = true;
    p.kinds[k] = kind;
    p.count = k + 1 > p.count ? k + 1 : p.count;
    i += n - 1;
  }
  for (std::size_t k = 0; k < p.count; ++k) p.ok = p.ok && seen[k];
  return p;
}

// Which C++ types an argument of each kind takes.
template <class T>
constexpr bool argTakes(ArgKind kind) {
  using U = std::remove_cvref_t<T>;
  switch (kind) {
    case ArgKind::Number: return std::is_floating_point_v<U>;
    case ArgKind::Count:
      return std::is_integral_v<U> && !std::is_same_v<U, bool> && !std::is_same_v<U, char>;
    default: return std::is_convertible_v<const T&, std::string_view>;
  }
}

namespace detail {
// Called only where a report does not fit its format: the compiler names the
// function in its error ("call to non-constexpr function ...").
void diagnostic_format_has_a_bad_placeholder();
void diagnostic_argument_count_differs_from_its_format();
void diagnostic_argument_type_does_not_fit_its_placeholder_kind();
}  // namespace detail

// A diagnostic kind checked against the arguments a report passes with it,
// at compile time (as std::format_string checks a format): the count must be
// the format's and each argument's type must fit its placeholder's kind.
template <class... A>
struct DiagFor {
  DiagKind kind;
  template <class K>
    requires std::same_as<K, DiagKind>
  consteval DiagFor(K k) : kind(k) {  // NOLINT(google-explicit-constructor): written as a DiagKind
    const Placeholders p = placeholders(diagInfo(k).format);
    if (!p.ok) detail::diagnostic_format_has_a_bad_placeholder();
    if (p.count != sizeof...(A)) detail::diagnostic_argument_count_differs_from_its_format();
    std::size_t i = 0;
    const bool fits = (argTakes<A>(p.kinds[i++]) && ... && true);
    if (!fits) detail::diagnostic_argument_type_does_not_fit_its_placeholder_kind();
  }
};
template <class... A>
using DiagKindFor = DiagFor<std::type_identity_t<A>...>;

// A number as messages print it: whole numbers in full, others to 6 digits.
std::string formatNumber(double x);

inline std::string argText(std::string_view s) { return std::string(s); }
inline std::string argText(double x) { return formatNumber(x); }
template <std::integral I>
std::string argText(I n) {
  return std::to_string(n);
}

// Substitutes {0}, {1:kind}, ... in `format`.
std::string formatMessage(std::string_view format, std::span<const std::string> args);

// The message of `kind` with `args` substituted (checked as report's are).
template <class... A>
std::string diagMessage(DiagKindFor<A...> kind, const A&... args) {
  const std::vector<std::string> texts{argText(args)...};
  return formatMessage(diagInfo(kind.kind).format, texts);
}

struct Note {
  DiagKind kind;
  SourceRange range;
  std::string message;
};

struct Diagnostic {
  DiagKind kind;
  Severity severity;
  SourceRange range;
  std::string message;
  std::vector<Note> notes;
  // The same mistake reported again at the same place (each iteration of a
  // `for` loop, each element of a component array): counted here, said once
  // in the message, never stored or counted as an error of its own.
  int repeats = 0;

  // Attaches a note (a kind of Severity::Note) pointing at a related place.
  template <class... A>
  Diagnostic& note(DiagKindFor<A...> kind, SourceRange range, const A&... args) {
    return addNote(kind.kind, range, diagMessage<A...>(kind, args...));
  }
  Diagnostic& addNote(DiagKind kind, SourceRange range, std::string message);
};

class DiagnosticEngine {
 public:
  // After this many errors further errors are counted but not stored, and
  // phases should stop early (see tooManyErrors()).
  static constexpr std::size_t kErrorLimit = 50;

  template <class... A>
  Diagnostic& report(DiagKindFor<A...> kind, SourceRange range, const A&... args) {
    return add(kind.kind, range, diagMessage<A...>(kind, args...));
  }
  // A diagnostic whose message is already formatted (by diagMessage()).
  Diagnostic& add(DiagKind kind, SourceRange range, std::string message);

  const std::deque<Diagnostic>& diagnostics() const { return diagnostics_; }
  std::size_t errorCount() const { return errors_; }
  std::size_t warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ > 0; }
  bool tooManyErrors() const { return errors_ >= kErrorLimit; }

 private:
  std::deque<Diagnostic> diagnostics_;
  Diagnostic overflow_{};  // target of reports past the limit, and of repeats; never rendered
  std::size_t errors_ = 0;
  std::size_t warnings_ = 0;
};

struct RenderOptions {
  bool color = false;
  bool showKindName = true;
};

// Renders one diagnostic with its source line, a caret/underline and notes.
std::string render(const Diagnostic& d, const SourceManager& sources, RenderOptions opts = {});
// Renders every stored diagnostic, then "N errors generated." style totals.
std::string renderAll(const DiagnosticEngine& engine, const SourceManager& sources,
                      RenderOptions opts = {});

}  // namespace capstan::syntax
