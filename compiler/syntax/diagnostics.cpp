#include "syntax/diagnostics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace capstan::syntax {
namespace {

// Every format in the registry is well formed (the kinds of its placeholders known).
constexpr bool allFormatsWellFormed() {
  for (const DiagInfo& info : kDiagRegistry)
    if (!placeholders(info.format).ok) return false;
  return true;
}
static_assert(allFormatsWellFormed(), "a diagnostic format has a placeholder without a known kind, or a gap");

struct Style {
  const char* bold;
  const char* error;
  const char* warning;
  const char* note;
  const char* caret;
  const char* reset;
};
constexpr Style kColor{"\033[1m", "\033[1;31m", "\033[1;35m", "\033[1;36m", "\033[1;32m", "\033[0m"};
constexpr Style kPlain{"", "", "", "", "", ""};

std::string location(const SourceManager& sources, SourceRange r) {
  if (r.file == 0 || r.file >= sources.size()) return "capstan";  // no source location
  const SourceFile& f = sources.file(r.file);
  const LineColumn lc = f.lineColumn(r.begin);
  return f.path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column);
}

// Tabs are expanded to single spaces so the caret lines up in any terminal.
std::string printable(std::string_view line) {
  std::string out(line);
  for (char& c : out) {
    if (c == '\t') c = ' ';
    else if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

void renderSnippet(std::string& out, const SourceManager& sources, SourceRange r, const Style& s) {
  if (r.file == 0 || r.file >= sources.size()) return;
  const SourceFile& f = sources.file(r.file);
  const LineColumn lc = f.lineColumn(r.begin);
  std::string_view line = f.lineText(lc.line);
  constexpr std::size_t kMaxShown = 200;  // keep huge one-line inputs readable
  std::size_t col = lc.column - 1;
  std::size_t shift = 0;
  if (col > kMaxShown / 2 && line.size() > kMaxShown) shift = col - kMaxShown / 2;
  std::string shown = printable(line.substr(std::min(shift, line.size()), kMaxShown));
  const std::string number = std::to_string(lc.line);
  const std::string gutter(std::max<std::size_t>(number.size(), 4), ' ');
  out += std::string(gutter.size() - number.size(), ' ') + number + " | " + shown + "\n";
  // Underline to the end of the range or of the line, whichever is first.
  const std::size_t lineEnd = line.size();
  std::size_t width = 1;
  if (r.end > r.begin) {
    const std::size_t rangeEndCol = col + (r.end - r.begin);
    width = std::max<std::size_t>(1, std::min(rangeEndCol, lineEnd) - std::min(col, lineEnd));
  }
  col -= shift;
  width = std::min(width, kMaxShown > col ? kMaxShown - col : 1);
  out += gutter + " | " + std::string(col, ' ') + s.caret + "^" + std::string(width - 1, '~') +
         s.reset + "\n";
}

}  // namespace

std::span<const DiagInfo> allDiagKinds() { return kDiagRegistry; }

std::string_view severityName(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

std::string formatNumber(double x) {
  if (x == std::round(x) && std::abs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string formatMessage(std::string_view format, std::span<const std::string> args) {
  std::string out;
  out.reserve(format.size() + 16);
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (const std::size_t n = placeholderAt(format, i); n > 0) {
      const auto k = static_cast<std::size_t>(format[i + 1] - '0');
      if (k < args.size()) out += args[k];
      i += n - 1;
    } else {
      out += format[i];
    }
  }
  return out;
}

Diagnostic& Diagnostic::addNote(DiagKind k, SourceRange r, std::string message) {
  notes.push_back({k, r, std::move(message)});
  return *this;
}

Diagnostic& DiagnosticEngine::add(DiagKind kind, SourceRange range, std::string message) {
  const DiagInfo& info = diagInfo(kind);
  // One diagnostic per mistake: the same kind at the same place in the
  // model again is a loop's or an array's repeat of it (the first one's
  // message names the first instance).
  if (range.valid() && info.severity != Severity::Note) {
    for (Diagnostic& d : diagnostics_) {
      if (d.kind != kind || d.range.file != range.file || d.range.begin != range.begin || d.range.end != range.end)
        continue;
      static constexpr std::string_view kRepeated = " (the same here in ";
      if (d.repeats > 0) d.message.erase(d.message.rfind(kRepeated));
      ++d.repeats;
      d.message += std::string(kRepeated) + std::to_string(d.repeats) + " more loop iteration" +
                   (d.repeats == 1 ? "" : "s") + " or array element" + (d.repeats == 1 ? "" : "s") + ")";
      overflow_ = Diagnostic{kind, info.severity, range, {}, {}, 0};
      return overflow_;
    }
  }
  if (info.severity == Severity::Error) {
    if (errors_++ >= kErrorLimit) {
      overflow_ = Diagnostic{kind, info.severity, range, {}, {}, 0};
      return overflow_;
    }
  } else if (info.severity == Severity::Warning) {
    ++warnings_;
  }
  diagnostics_.push_back({kind, info.severity, range, std::move(message), {}, 0});
  return diagnostics_.back();
}

std::string render(const Diagnostic& d, const SourceManager& sources, RenderOptions opts) {
  const Style& s = opts.color ? kColor : kPlain;
  auto header = [&](Severity sev, SourceRange r, const std::string& message, DiagKind kind) {
    const char* sevColor = sev == Severity::Error ? s.error : sev == Severity::Warning ? s.warning : s.note;
    std::string line = std::string(s.bold) + location(sources, r) + ": " + s.reset + sevColor +
                       std::string(severityName(sev)) + ":" + s.reset + " " + s.bold + message + s.reset;
    if (opts.showKindName) line += " [" + std::string(diagInfo(kind).name) + "]";
    return line + "\n";
  };
  std::string out = header(d.severity, d.range, d.message, d.kind);
  renderSnippet(out, sources, d.range, s);
  for (const Note& n : d.notes) {
    out += header(Severity::Note, n.range, n.message, n.kind);
    renderSnippet(out, sources, n.range, s);
  }
  return out;
}

std::string renderAll(const DiagnosticEngine& engine, const SourceManager& sources, RenderOptions opts) {
  std::string out;
  for (const Diagnostic& d : engine.diagnostics()) out += render(d, sources, opts);
  auto plural = [](std::size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  };
  if (engine.errorCount() > DiagnosticEngine::kErrorLimit) {
    out += "too many errors; stopped after " + std::to_string(DiagnosticEngine::kErrorLimit) + "\n";
  }
  if (engine.errorCount() > 0 && engine.warningCount() > 0) {
    out += plural(engine.warningCount(), "warning") + " and " + plural(engine.errorCount(), "error") +
           " generated.\n";
  } else if (engine.errorCount() > 0) {
    out += plural(engine.errorCount(), "error") + " generated.\n";
  } else if (engine.warningCount() > 0) {
    out += plural(engine.warningCount(), "warning") + " generated.\n";
  }
  return out;
}

}  // namespace capstan::syntax
