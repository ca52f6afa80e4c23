#include "syntax/lexer.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

namespace capstan::syntax {
namespace {

struct KeywordEntry {
  std::string_view word;
  Tok kind;
};

constexpr KeywordEntry kKeywords[] = {
#define CAPSTAN_X(name, spelling) {spelling, Tok::name},
    CAPSTAN_KEYWORDS(CAPSTAN_X)
#undef CAPSTAN_X
};

constexpr std::string_view kSpellings[] = {
    "", "", "", "", "",
#define CAPSTAN_X(name, spelling) spelling,
    CAPSTAN_PUNCTUATION(CAPSTAN_X) CAPSTAN_KEYWORDS(CAPSTAN_X)
#undef CAPSTAN_X
};

bool isIdentStart(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(unsigned char c) { return isIdentStart(c) || isDigit(c); }
bool isSpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Length of the UTF-8 sequence starting at `p` (1 for an invalid lead byte or
// a truncated/invalid sequence) and its code point (or -1 when invalid).
std::pair<std::size_t, long> decodeUtf8(std::string_view s, std::size_t p) {
  const auto c = static_cast<unsigned char>(s[p]);
  std::size_t n = 0;
  long cp = 0;
  if (c < 0x80) return {1, c};
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return {1, -1};
  if (p + n > s.size()) return {1, -1};
  for (std::size_t i = 1; i < n; ++i) {
    const auto d = static_cast<unsigned char>(s[p + i]);
    if ((d & 0xC0) != 0x80) return {1, -1};
    cp = (cp << 6) | (d & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return {1, -1};
  }
  return {n, cp};
}

// "`@`", "U+00E9 `é`" or "byte 0xFF" for the message of InvalidCharacter.
std::string describeChar(std::string_view s, std::size_t p, std::size_t len, long cp) {
  const auto c = static_cast<unsigned char>(s[p]);
  char buf[32];
  if (cp < 0) {
    std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
    return buf;
  }
  if (cp >= 0x21 && cp < 0x7F) return "`" + std::string(1, static_cast<char>(cp)) + "`";
  std::snprintf(buf, sizeof buf, "U+%04lX", static_cast<unsigned long>(cp));
  if (cp >= 0xA0) return std::string(buf) + " `" + std::string(s.substr(p, len)) + "`";
  return buf;
}

class Lexer {
 public:
  Lexer(const SourceFile& f, FileId id, DiagnosticEngine& diags)
      : text_(f.text()), file_(id), diags_(diags) {}

  LexResult run() {
    LexResult out;
    out.tokens.reserve(text_.size() / 4 + 16);
    while (true) {
      skipTrivia();
      if (pos_ >= text_.size()) break;
      if (diags_.tooManyErrors()) break;
      Token t = next();
      if (t.kind != Tok::Eof) out.tokens.push_back(t);
    }
    const auto n = static_cast<std::uint32_t>(text_.size());
    out.tokens.push_back({Tok::Eof, n, n});
    out.eofAfterError = eofAfterError_;
    out.errorOffsets = std::move(errorOffsets_);
    return out;
  }

 private:
  SourceRange range(std::size_t b, std::size_t e) const {
    return {file_, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(e)};
  }
  template <class... A>
  void report(DiagKindFor<A...> k, SourceRange r, const A&... args) {
    errorOffsets_.push_back(r.begin);
    diags_.report<A...>(k, r, args...);
  }
  unsigned char at(std::size_t p) const { return p < text_.size() ? static_cast<unsigned char>(text_[p]) : 0; }

  void skipTrivia() {
    while (pos_ < text_.size()) {
      const unsigned char c = at(pos_);
      if (isSpace(c)) {
        ++pos_;
      } else if (c == '/' && at(pos_ + 1) == '/') {
        const std::size_t nl = text_.find('\n', pos_);
        pos_ = nl == std::string_view::npos ? text_.size() : nl + 1;
      } else if (c == '/' && at(pos_ + 1) == '*') {
        const std::size_t close = text_.find("*/", pos_ + 2);
        if (close == std::string_view::npos) {
          report(DiagKind::UnterminatedComment, range(pos_, pos_ + 2));
          eofAfterError_ = true;
          pos_ = text_.size();
        } else {
          pos_ = close + 2;
        }
      } else {
        return;
      }
    }
  }

  Token make(Tok k, std::size_t b) const {
    return {k, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(pos_)};
  }

  Token next() {
    const std::size_t b = pos_;
    const unsigned char c = at(pos_);
    if (isIdentStart(c)) {
      while (isIdentChar(at(pos_))) ++pos_;
      return make(keywordKind(text_.substr(b, pos_ - b)), b);
    }
    if (isDigit(c) || (c == '.' && isDigit(at(pos_ + 1)))) return number();
    if (c == '"') return string();
    if (c == '\'') return quotedIdent();
    ++pos_;
    switch (c) {
      case '(': return make(Tok::LParen, b);
      case ')': return make(Tok::RParen, b);
      case '[': return make(Tok::LBracket, b);
      case ']': return make(Tok::RBracket, b);
      case '{': return make(Tok::LBrace, b);
      case '}': return make(Tok::RBrace, b);
      case ',': return make(Tok::Comma, b);
      case ';': return make(Tok::Semicolon, b);
      case '+': return make(Tok::Plus, b);
      case '-': return make(Tok::Minus, b);
      case '*': return make(Tok::Star, b);
      case '/': return make(Tok::Slash, b);
      case '^': return make(Tok::Caret, b);
      case ':':
        if (at(pos_) == '=') return ++pos_, make(Tok::Assign, b);
        return make(Tok::Colon, b);
      case '=':
        if (at(pos_) == '=') return ++pos_, make(Tok::EqEq, b);
        return make(Tok::Equals, b);
      case '<':
        if (at(pos_) == '=') return ++pos_, make(Tok::LessEq, b);
        if (at(pos_) == '>') return ++pos_, make(Tok::NotEq, b);
        return make(Tok::Less, b);
      case '>':
        if (at(pos_) == '=') return ++pos_, make(Tok::GreaterEq, b);
        return make(Tok::Greater, b);
      case '.':
        switch (at(pos_)) {
          case '+': return ++pos_, make(Tok::DotPlus, b);
          case '-': return ++pos_, make(Tok::DotMinus, b);
          case '*': return ++pos_, make(Tok::DotStar, b);
          case '/': return ++pos_, make(Tok::DotSlash, b);
          case '^': return ++pos_, make(Tok::DotCaret, b);
          default: return make(Tok::Dot, b);
        }
      default: break;
    }
    pos_ = b;
    invalidRun();
    return {Tok::Eof, 0, 0};
  }

  // A run of invalid characters is one diagnostic (binary garbage would
  // otherwise exhaust the error limit on its first line).
  void invalidRun() {
    const std::size_t b = pos_;
    auto [len, cp] = decodeUtf8(text_, pos_);
    const std::string first = describeChar(text_, pos_, len, cp);
    pos_ += len;
    while (pos_ < text_.size()) {
      const unsigned char c = at(pos_);
      if (isSpace(c) || isIdentChar(c) || (c >= 0x20 && c < 0x7F && c != '!' && c != '#' && c != '$' &&
                                           c != '?' && c != '@' && c != '&' && c != '|' && c != '~' &&
                                           c != '`' && c != '%' && c != '\\')) {
        break;
      }
      pos_ += decodeUtf8(text_, pos_).first;
    }
    report(DiagKind::InvalidCharacter, range(b, pos_), first);
  }

  Token number() {
    const std::size_t b = pos_;
    bool real = false;
    while (isDigit(at(pos_))) ++pos_;
    if (at(pos_) == '.') {
      // `1.*x` is `1 .* x`; `1.` alone is the real 1.0.
      const unsigned char n = at(pos_ + 1);
      if (n != '+' && n != '-' && n != '*' && n != '/' && n != '^') {
        real = true;
        ++pos_;
        while (isDigit(at(pos_))) ++pos_;
      }
    }
    if (at(pos_) == 'e' || at(pos_) == 'E') {
      std::size_t p = pos_ + 1;
      if (at(p) == '+' || at(p) == '-') ++p;
      if (isDigit(at(p))) {
        real = true;
        pos_ = p;
        while (isDigit(at(pos_))) ++pos_;
      } else {
        // `2e` or `2e+`: an exponent without digits.
        pos_ = p;
        report(DiagKind::InvalidNumber, range(b, pos_),
                      std::string(text_.substr(b, pos_ - b)), "the exponent has no digits");
        real = true;
      }
    }
    if (isIdentStart(at(pos_))) {
      const std::size_t s = pos_;
      while (isIdentChar(at(pos_))) ++pos_;
      report(DiagKind::InvalidNumber, range(b, pos_),
                    std::string(text_.substr(b, pos_ - b)), "a number cannot be followed by `" + std::string(text_.substr(s, pos_ - s)) +
                         "`; names start with a letter or `_`");
    }
    return make(real ? Tok::Real : Tok::Integer, b);
  }

  Token string() {
    const std::size_t b = pos_++;
    while (pos_ < text_.size()) {
      const unsigned char c = at(pos_);
      if (c == '"') {
        ++pos_;
        return make(Tok::String, b);
      }
      if (c == '\\') {
        const unsigned char e = at(pos_ + 1);
        if (pos_ + 1 >= text_.size()) break;
        switch (e) {
          case '\'': case '"': case '?': case '\\': case 'a': case 'b': case 'f': case 'n':
          case 'r': case 't': case 'v':
            break;
          default: {
            const std::size_t len = decodeUtf8(text_, pos_ + 1).first;
            report(DiagKind::InvalidEscape, range(pos_, pos_ + 1 + len),
                          std::string(text_.substr(pos_, 1 + len)));
            pos_ += len - 1;
          }
        }
        pos_ += 2;
        continue;
      }
      ++pos_;
    }
    pos_ = text_.size();
    report(DiagKind::UnterminatedString, range(b, b + 1));
    eofAfterError_ = true;
    return make(Tok::String, b);
  }

  Token quotedIdent() {
    const std::size_t b = pos_++;
    while (pos_ < text_.size()) {
      const unsigned char c = at(pos_);
      if (c == '\'') {
        ++pos_;
        if (pos_ - b == 2) {
          report(DiagKind::InvalidQuotedIdent, range(b, pos_), "it is empty");
        }
        return make(Tok::Ident, b);
      }
      if (c == '\n' || c == '\r') break;
      if (c == '\\' && pos_ + 1 < text_.size() && at(pos_ + 1) != '\n') ++pos_;
      ++pos_;
    }
    report(DiagKind::InvalidQuotedIdent, range(b, b + 1),
                  "it has no closing `'` on its line");
    return make(Tok::Ident, b);
  }

  std::string_view text_;
  FileId file_;
  DiagnosticEngine& diags_;
  std::size_t pos_ = 0;
  bool eofAfterError_ = false;
  std::vector<std::uint32_t> errorOffsets_;
};

}  // namespace

std::string_view tokSpelling(Tok t) { return kSpellings[static_cast<std::size_t>(t)]; }

bool isKeyword(Tok t) { return t >= Tok::KwAlgorithm; }

Tok keywordKind(std::string_view word) {
  // Keywords are 2..12 lower-case letters; most identifiers fail these tests.
  if (word.size() < 2 || word.size() > 12 || word[0] < 'a' || word[0] > 'w') return Tok::Ident;
  const auto* it = std::lower_bound(std::begin(kKeywords), std::end(kKeywords), word,
                                    [](const KeywordEntry& e, std::string_view w) { return e.word < w; });
  if (it != std::end(kKeywords) && it->word == word) return it->kind;
  return Tok::Ident;
}

std::string describeToken(const Token& t, std::string_view fileText) {
  const std::string_view text = fileText.substr(std::min<std::size_t>(t.begin, fileText.size()),
                                                t.end >= t.begin ? t.end - t.begin : 0);
  constexpr std::size_t kMax = 40;
  auto clip = [&](std::string_view s) {
    return s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
  };
  switch (t.kind) {
    case Tok::Eof: return "end of file";
    case Tok::Ident: return "identifier `" + clip(text) + "`";
    case Tok::Integer:
    case Tok::Real: return "number `" + clip(text) + "`";
    case Tok::String: return "string literal";
    default: break;
  }
  if (isKeyword(t.kind)) return "keyword `" + std::string(tokSpelling(t.kind)) + "`";
  return "`" + std::string(tokSpelling(t.kind)) + "`";
}

namespace {
// The control characters a string literal writes as a letter escape: `\n`
// for a line feed, ... (the lexer's string() accepts these letters).
constexpr std::pair<char, char> kLetterEscapes[] = {
    {'\a', 'a'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}, {'\v', 'v'}};
}  // namespace

std::string decodeString(std::string_view s) {
  if (!s.empty() && s.front() == '"') s.remove_prefix(1);
  if (!s.empty() && s.back() == '"') s.remove_suffix(1);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    if (e == '\'' || e == '"' || e == '?' || e == '\\') {
      out += e;
      continue;
    }
    const auto* letter = std::find_if(std::begin(kLetterEscapes), std::end(kLetterEscapes),
                                      [e](const auto& p) { return p.second == e; });
    if (letter != std::end(kLetterEscapes)) {
      out += letter->first;
    } else {
      out += '\\';
      out += e;
    }
  }
  return out;
}

std::string escapeString(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    const auto* letter = std::find_if(std::begin(kLetterEscapes), std::end(kLetterEscapes),
                                      [c](const auto& p) { return p.first == c; });
    if (letter != std::end(kLetterEscapes)) {
      out += '\\';
      out += letter->second;
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out;
}

LexResult lex(const SourceManager& sources, FileId file, DiagnosticEngine& diags) {
  return Lexer(sources.file(file), file, diags).run();
}

}  // namespace capstan::syntax
