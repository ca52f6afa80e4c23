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

#include <cstddef>
#include <deque>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "syntax/source.hpp"

namespace capstan::syntax {

enum class Severity { Error, Warning, Note };

// CAPSTAN_DIAG(Name, Severity, "format"): the format is lower case, names code
// in backticks, states what was observed first and a hint after `;`, and uses
// {0}, {1}, ... for its arguments.
enum class DiagKind : std::uint16_t {
#define CAPSTAN_DIAG(name, severity, format) name,
#include "diagnostics/all.def"
#undef CAPSTAN_DIAG
};

struct DiagInfo {
  DiagKind kind;
  std::string_view name;
  Severity severity;
  std::string_view format;
  std::string_view phase;
};

const DiagInfo& diagInfo(DiagKind kind);
std::span<const DiagInfo> allDiagKinds();
std::string_view severityName(Severity s);

// Substitutes {0}, {1}, ... in `format`.
std::string formatMessage(std::string_view format, std::span<const std::string> args);

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

  // Attaches a note (a kind of Severity::Note) pointing at a related place.
  Diagnostic& note(DiagKind kind, SourceRange range, std::initializer_list<std::string> args = {});
};

class DiagnosticEngine {
 public:
  // After this many errors further errors are counted but not stored, and
  // phases should stop early (see tooManyErrors()).
  static constexpr std::size_t kErrorLimit = 50;

  Diagnostic& report(DiagKind kind, SourceRange range, std::initializer_list<std::string> args = {});

  const std::deque<Diagnostic>& diagnostics() const { return diagnostics_; }
  std::size_t errorCount() const { return errors_; }
  std::size_t warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ > 0; }
  bool tooManyErrors() const { return errors_ >= kErrorLimit; }

 private:
  std::deque<Diagnostic> diagnostics_;
  Diagnostic overflow_{};  // target of reports past the limit; never rendered
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
