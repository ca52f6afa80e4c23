// Internal to the parser, shared by parser.cpp (classes, declarations,
// equations, statements, error recovery) and parser_expressions.cpp
// (expressions). Not part of the syntax API: include syntax/parser.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "syntax/ast.hpp"
#include "syntax/diagnostics.hpp"
#include "syntax/lexer.hpp"

namespace capstan::syntax::detail {

constexpr int kMaxDepth = 200;             // nested expressions, modifiers, classes, loops
// The deepest path of one expression tree, counting every node: sema, unit
// checking, evaluation and code generation walk expressions recursively, and
// a chain `1 + 1 + ... + 1` of n operands is n nodes deep (n - 1 operators
// and the first operand). At this depth the deepest of those walks stays well
// inside the default 8 MiB stack.
constexpr std::size_t kMaxHeight = 1000;
constexpr std::size_t kMaxChain = kMaxHeight;  // operands of one left-associative chain

// Tokens that never occur inside a declaration, equation or expression, so
// recovery may stop before them at any nesting.
bool isHardStop(Tok t);

// One row of a binary-operator table: the token and the operator it spells.
struct BinaryOperator {
  Tok tok;
  Op op;
};

class Parser {
 public:
  Parser(const SourceManager& sources, FileId file, DiagnosticEngine& diags)
      : file_(file), text_(sources.file(file).text()), diags_(diags) {
    LexResult lexed = lex(sources, file, diags);
    toks_ = std::move(lexed.tokens);
    lexEofError_ = lexed.eofAfterError;
    lexErrors_ = std::move(lexed.errorOffsets);
  }

  StoredDefinition run();

 private:
  // ---- tokens ----------------------------------------------------------------
  const Token& cur() const { return toks_[pos_]; }
  const Token& peekTok(std::size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  Tok kind() const { return cur().kind; }
  bool at(Tok k) const { return cur().kind == k; }
  Token advance() {
    const Token t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    if (t.kind != Tok::Eof) prevEnd_ = t.end;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    advance();
    return true;
  }
  SourceRange rng(std::uint32_t b, std::uint32_t e) const { return {file_, b, std::max(b, e)}; }
  SourceRange tokRange(const Token& t) const { return {file_, t.begin, t.end}; }
  std::string_view textOf(const Token& t) const { return text_.substr(t.begin, t.end - t.begin); }
  std::string describe(const Token& t) const { return describeToken(t, text_); }
  static std::string quote(std::string_view s) { return "`" + std::string(s) + "`"; }
  bool newlineBefore(const Token& t) const {
    if (t.begin <= prevEnd_) return false;
    return text_.substr(prevEnd_, t.begin - prevEnd_).find('\n') != std::string_view::npos;
  }
  // `end` closing a block: `end Name;`, `end;`, `end for;` (not `x[end]`).
  bool atBlockEnd() const {
    if (!at(Tok::KwEnd)) return false;
    const Tok n = peekTok().kind;
    return n == Tok::Ident || n == Tok::Semicolon || n == Tok::KwFor || n == Tok::KwIf ||
           n == Tok::KwWhen || n == Tok::KwWhile || n == Tok::Eof;
  }

  // ---- diagnostics -------------------------------------------------------------
  template <class... A>
  Diagnostic* error(syntax::DiagKindFor<A...> k, SourceRange r, const A&... args) {
    return errorMessage(k.kind, r, syntax::diagMessage<A...>(k, args...));
  }
  Diagnostic* errorMessage(DiagKind k, SourceRange r, std::string message);
  bool lexerErrorSince(std::uint32_t begin, std::uint32_t end) const;
  template <class... A>
  Diagnostic* softError(syntax::DiagKindFor<A...> k, SourceRange r, const A&... args) {
    return softErrorMessage(k.kind, r, syntax::diagMessage<A...>(k, args...));
  }
  Diagnostic* softErrorMessage(DiagKind k, SourceRange r, std::string message);
  void checkErrorLimit();
  void abort();

  struct DepthGuard {
    Parser& p;
    bool ok;
    DepthGuard(Parser& parser, SourceRange where) : p(parser), ok(++parser.depth_ <= kMaxDepth) {
      if (!ok) p.tooDeep(where);
    }
    ~DepthGuard() { --p.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
  };
  void tooDeep(SourceRange where, std::size_t limit = kMaxDepth);
  bool expect(Tok k, std::string_view what);
  bool expectSemi(std::string_view context);
  void recoverElement();
  void recoverTopLevel();
  bool recoverInList(Tok closer);

  // Parses `elem (, elem)* closer` after the opener was consumed.
  template <class F>
  void parseList(const Token& opener, Tok closer, F elem) {
    const std::string closeSpelling = quote(tokSpelling(closer));
    if (accept(closer)) return;
    while (true) {
      if (at(Tok::Eof) || aborted_) break;
      const std::size_t before = pos_;
      elem();
      if (panic_ && !recoverInList(closer)) return;
      if (accept(Tok::Comma)) continue;
      if (at(closer)) break;
      if (Diagnostic* d = error(DiagKind::ExpectedToken, tokRange(cur()),
                                "`,` or " + closeSpelling, describe(cur()))) {
        d->note(DiagKind::NoteOpenedHere, tokRange(opener), quote(textOf(opener)));
      }
      if (pos_ == before && !at(Tok::Eof) && !at(Tok::Semicolon) && !isHardStop(kind())) advance();
      if (!recoverInList(closer)) return;
      if (accept(Tok::Comma)) continue;
      break;
    }
    if (!accept(closer)) {
      if (Diagnostic* d = error(DiagKind::ExpectedToken, tokRange(cur()), closeSpelling, describe(cur()))) {
        d->note(DiagKind::NoteOpenedHere, tokRange(opener), quote(textOf(opener)));
      }
    }
  }

  // ---- names and comments ---------------------------------------------------------
  std::string identText(const Token& t) const { return std::string(textOf(t)); }

  Name parseTypeName(std::string_view what);
  Name parseComponentRef();
  void parseSubscripts(std::vector<ExprPtr>& out);
  void parseDescription(std::string& out);
  void parseAnnotation(Annotation& a);

  // ---- modifications ---------------------------------------------------------------
  void parseClassMod(ClassModification& out);
  void parseArgument(ClassModification& out);

  // ---- classes ----------------------------------------------------------------------
  ClassDefPtr parseClass(std::uint32_t begin, bool /*isFinal*/);
  void skipUnnamedClass();
  void parseShortClass(ClassDef& cls);
  void parseComposition(ClassDef& cls);
  bool parseEnd(ClassDef& cls);
  void parseImport(ClassDef& cls);
  void parseExtends(ClassDef& cls);
  void parseElement(ClassDef& cls, bool isProtected);

  // ---- equations ----------------------------------------------------------------------
  void parseEquations(ClassDef& cls, std::vector<EquationPtr>& out, bool isProtected, const Token* forTok);

  std::size_t looksLikeEquation() const;
  bool looksLikeDeclaration() const;
  bool endsSection(bool statements, const Token* forTok);
  EquationPtr parseEquation(ClassDef& cls, bool isProtected);
  ExprPtr parseRefExpr(std::string_view what);
  bool parseForHeader(std::string& iter, SourceRange& iterRange, ExprPtr& range);
  void skipForHeader();
  bool parseEndFor(const Token& forTok);
  void skipBlock(Tok kw);

  // ---- algorithms ----------------------------------------------------------------------
  void parseStatements(std::vector<StatementPtr>& out, const Token* forTok);
  StatementPtr parseStatement();
  void parseExternal(ClassDef& cls);
  void parseExternalCall(ExternalClause& ext);

  // ---- expressions ------------------------------------------------------------------------
  ExprPtr leaf(ExprKind k, SourceRange r);
  ExprPtr errorExpr();
  ExprPtr binary(Op op, ExprPtr a, ExprPtr b);
  ExprPtr unary(Op op, std::uint32_t begin, ExprPtr a);
  bool chainTooLong(std::size_t& n);
  void checkHeight(const Expr& root);
  ExprPtr parseBinaryChain(ExprPtr first, std::span<const BinaryOperator> ops, ExprPtr (Parser::*operand)());

  ExprPtr parseExpression();
  ExprPtr parseIfExpression();
  ExprPtr parseSimpleExpression();
  ExprPtr parseLogicalOr();
  ExprPtr parseLogicalAnd();
  ExprPtr parseLogicalNot();
  static bool relOp(Tok t, Op& op);
  ExprPtr parseRelation();
  ExprPtr parseArithmetic();
  ExprPtr parseTerm();
  ExprPtr parseFactor();
  ExprPtr parseFactorTail();
  ExprPtr parseOperand();
  ExprPtr parsePrimary();
  void skipBrackets();
  ExprPtr parseNameOrCall();

  // ---- state ------------------------------------------------------------------------------
  FileId file_;
  std::string_view text_;
  DiagnosticEngine& diags_;
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  std::uint32_t prevEnd_ = 0;
  bool lexEofError_ = false;
  std::vector<std::uint32_t> lexErrors_;
  std::uint32_t constructStart_ = 0;  // first byte of the declaration/equation being parsed
  bool panic_ = false;
  bool aborted_ = false;
  int depth_ = 0;
  int expressionDepth_ = 0;  // parseExpression() calls open: 1 in an outermost expression
  int subscriptDepth_ = 0;
  std::vector<ClassDef*> openClasses_;
};

}  // namespace capstan::syntax::detail
