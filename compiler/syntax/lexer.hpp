// The lexer: bytes of one file -> tokens with byte-offset ranges. It accepts
// any byte sequence: invalid characters, unterminated strings and comments
// are reported to the DiagnosticEngine and lexing goes on, so the parser
// always gets a token stream that ends with exactly one Tok::Eof.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "syntax/diagnostics.hpp"
#include "syntax/source.hpp"

namespace capstan::syntax {

// CAPSTAN_TOKEN(Name, "spelling") for punctuation, CAPSTAN_KEYWORD(Name, "word").
#define CAPSTAN_PUNCTUATION(X)                                                                    \
  X(LParen, "(") X(RParen, ")") X(LBracket, "[") X(RBracket, "]") X(LBrace, "{") X(RBrace, "}")   \
  X(Comma, ",") X(Semicolon, ";") X(Colon, ":") X(Dot, ".") X(Assign, ":=") X(Equals, "=")        \
  X(Plus, "+") X(Minus, "-") X(Star, "*") X(Slash, "/") X(Caret, "^")                             \
  X(DotPlus, ".+") X(DotMinus, ".-") X(DotStar, ".*") X(DotSlash, "./") X(DotCaret, ".^")         \
  X(EqEq, "==") X(NotEq, "<>") X(Less, "<") X(LessEq, "<=") X(Greater, ">") X(GreaterEq, ">=")

// Keywords of Capstan and the Modelica keywords it reserves (so that `when`
// gets a clear "not supported" message rather than a confusing parse error).
#define CAPSTAN_KEYWORDS(X)                                                                       \
  X(KwAlgorithm, "algorithm") X(KwAnd, "and") X(KwAnnotation, "annotation") X(KwBlock, "block")   \
  X(KwBreak, "break") X(KwClass, "class") X(KwConnect, "connect") X(KwConnector, "connector")     \
  X(KwConstant, "constant") X(KwDiscrete, "discrete") X(KwEach, "each") X(KwElse, "else")         \
  X(KwElseif, "elseif") X(KwElsewhen, "elsewhen") X(KwEncapsulated, "encapsulated")               \
  X(KwEnd, "end") X(KwEquation, "equation") X(KwExpandable, "expandable")                         \
  X(KwExtends, "extends") X(KwExternal, "external") X(KwFalse, "false") X(KwFinal, "final")       \
  X(KwFlow, "flow") X(KwFor, "for") X(KwFunction, "function") X(KwIf, "if") X(KwImport, "import") \
  X(KwImpure, "impure") X(KwIn, "in") X(KwInner, "inner") X(KwInput, "input") X(KwLoop, "loop")   \
  X(KwModel, "model") X(KwNot, "not") X(KwOperator, "operator") X(KwOr, "or")                     \
  X(KwOuter, "outer") X(KwOutput, "output") X(KwPackage, "package") X(KwParameter, "parameter")   \
  X(KwPartial, "partial") X(KwProtected, "protected") X(KwPublic, "public") X(KwPure, "pure")     \
  X(KwRecord, "record") X(KwRedeclare, "redeclare") X(KwReplaceable, "replaceable")               \
  X(KwReturn, "return") X(KwStream, "stream") X(KwThen, "then") X(KwTrue, "true")                 \
  X(KwType, "type") X(KwWhen, "when") X(KwWhile, "while") X(KwWithin, "within")

enum class Tok : std::uint8_t {
  Eof,
  Ident,    // `foo` or a quoted identifier `'foo bar'` (quotes kept in the text)
  Integer,  // `12`
  Real,     // `2.5`, `1e-3`, `.5`, `1.`
  String,   // `"..."` (text() includes the quotes; see decodeString)
#define CAPSTAN_X(name, spelling) name,
  CAPSTAN_PUNCTUATION(CAPSTAN_X) CAPSTAN_KEYWORDS(CAPSTAN_X)
#undef CAPSTAN_X
};

struct Token {
  Tok kind = Tok::Eof;
  std::uint32_t begin = 0;  // byte offsets into the file
  std::uint32_t end = 0;
};

// The fixed spelling of a punctuation or keyword token ("" for the others).
std::string_view tokSpelling(Tok t);
bool isKeyword(Tok t);
// How a token is named in messages: "`;`", "keyword `end`", "identifier `x`",
// "number `2.5`", "string literal", "end of file".
std::string describeToken(const Token& t, std::string_view fileText);

// The keyword spelled `word`, or Tok::Ident.
Tok keywordKind(std::string_view word);

// The value of a string literal token (quotes removed, escapes resolved).
// Invalid escapes were already reported by the lexer; here they are kept as
// written.
std::string decodeString(std::string_view tokenText);

// The inverse: `value` spelled for between a string literal's quotes (`"`,
// `\` and the control characters with an escape written as one), so that
// decodeString("\"" + escapeString(v) + "\"") == v. Also how outside text
// (a robot's names) goes into a line comment: it then holds no line break.
std::string escapeString(std::string_view value);

struct LexResult {
  std::vector<Token> tokens;  // ends with one Tok::Eof
  // True when an unterminated string or comment ran into the end of the
  // file: the parser then does not report "found end of file" errors, which
  // would only repeat the lexer's diagnostic.
  bool eofAfterError = false;
  // Where the lexer reported errors (begin offsets, ascending): the parser
  // stays silent about a construct that contains one.
  std::vector<std::uint32_t> errorOffsets;
};

LexResult lex(const SourceManager& sources, FileId file, DiagnosticEngine& diags);

}  // namespace capstan::syntax
