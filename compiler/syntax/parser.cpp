// Recursive-descent parser for the Modelica subset of SPEC.md §2-§4.
//
// Error handling: the first error inside a declaration, equation or
// statement puts the parser in "panic" mode, in which further errors are not
// reported; the enclosing loop then skips to the next `;` (consumed) or to a
// token that can only start something new (a section or class keyword, a
// block `end`) and resumes. Lists in parentheses and braces recover locally
// at the next `,` or closer, so `Body b(mass = , com = {0, 0, 0});` reports one
// error and keeps `com`. A missing `;` right before a line that starts a new
// declaration is reported and treated as inserted.
//
// Grammar decisions (documented for users in docs/):
// - `^` and `.^` are non-associative as in Modelica: `a^b^c` is an error
//   [ChainedOperator]; it is parsed as `a^(b^c)` to keep going. Likewise a
//   second relational operator `a < b < c`.
// - Unary `-`/`+` is accepted after a binary operator (`a * -b`, `2^-1`),
//   which strict Modelica rejects; a leading `-` applies to the whole first
//   term as in Modelica (`-a*b` is `-(a*b)`, `-a^2` is `-(a^2)`).
// - An `if` expression is accepted wherever a primary is (Modelica needs
//   parentheses around it inside a binary expression).
// - Numbers may start with a dot (`.5`); `1.` is a real.
#include "syntax/parser.hpp"

#include "syntax/parser_impl.hpp"

namespace capstan::syntax {
namespace detail {
namespace {

ExprPtr cloneExpr(const Expr& e);

Name cloneName(const Name& n) {
  Name out;
  out.range = n.range;
  out.global = n.global;
  out.parts.reserve(n.parts.size());
  for (const NamePart& p : n.parts) {
    NamePart q;
    q.name = p.name;
    q.range = p.range;
    for (const ExprPtr& s : p.subscripts) q.subscripts.push_back(cloneExpr(*s));
    out.parts.push_back(std::move(q));
  }
  return out;
}

ExprPtr cloneExpr(const Expr& e) {
  auto out = std::make_unique<Expr>();
  out->kind = e.kind;
  out->range = e.range;
  out->number = e.number;
  out->isInteger = e.isInteger;
  out->boolean = e.boolean;
  out->text = e.text;
  out->op = e.op;
  out->name = cloneName(e.name);
  for (const ExprPtr& a : e.args) out->args.push_back(cloneExpr(*a));
  for (const NamedArg& a : e.namedArgs) out->namedArgs.push_back({a.name, a.nameRange, cloneExpr(*a.value)});
  return out;
}

bool isClassKeyword(Tok t) {
  switch (t) {
    case Tok::KwModel: case Tok::KwPackage: case Tok::KwFunction: case Tok::KwRecord:
    case Tok::KwConnector: case Tok::KwBlock: case Tok::KwType: case Tok::KwClass:
      return true;
    default:
      return false;
  }
}

// Tokens that may begin a class definition (prefixes included).
bool startsClass(Tok t) {
  return isClassKeyword(t) || t == Tok::KwPartial || t == Tok::KwEncapsulated ||
         t == Tok::KwExpandable || t == Tok::KwOperator || t == Tok::KwPure || t == Tok::KwImpure;
}

}  // namespace

bool isHardStop(Tok t) {
  switch (t) {
    case Tok::KwEquation: case Tok::KwAlgorithm: case Tok::KwPublic: case Tok::KwProtected:
    case Tok::KwExternal: case Tok::KwImport: case Tok::KwExtends: case Tok::KwParameter:
    case Tok::KwConstant: case Tok::KwInput: case Tok::KwOutput: case Tok::KwWithin:
    case Tok::KwConnect: case Tok::KwInner: case Tok::KwOuter: case Tok::KwReplaceable:
    case Tok::KwFlow: case Tok::KwStream: case Tok::KwDiscrete: case Tok::KwWhen:
    case Tok::KwWhile:
      return true;
    default:
      return startsClass(t);
  }
}

StoredDefinition Parser::run() {
  StoredDefinition out;
  out.file = file_;
  if (at(Tok::KwWithin)) {
    const Token w = advance();
    Name n;
    if (at(Tok::Ident) || at(Tok::Dot)) n = parseTypeName("a package name after `within`");
    else n.range = tokRange(w);
    out.within = std::move(n);
    expectSemi("after `within` clause");
  }
  while (true) {
    if (panic_) recoverTopLevel();
    if (at(Tok::Eof)) break;
    checkErrorLimit();
    const std::size_t before = pos_;
    constructStart_ = cur().begin;
    if (startsClass(kind()) || at(Tok::KwFinal)) {
      const std::uint32_t begin = cur().begin;
      const bool isFinal = accept(Tok::KwFinal);
      if (ClassDefPtr c = parseClass(begin, isFinal)) out.classes.push_back(std::move(c));
    } else if (at(Tok::KwWithin)) {
      error(DiagKind::ExpectedToken, tokRange(cur()),
            "`within` only as the first clause of the file", describe(cur()));
    } else {
      error(DiagKind::ExpectedClass, tokRange(cur()), describe(cur()));
    }
    if (pos_ == before && panic_) advance();
  }
  return out;
}

// Reports an error unless one was already reported for the current
// construct; enters panic mode. Returns null when suppressed.
Diagnostic* Parser::errorMessage(DiagKind k, SourceRange r, std::string message) {
  if (panic_ || aborted_) return nullptr;
  panic_ = true;
  if (lexEofError_ && r.begin >= text_.size()) return nullptr;
  if (lexerErrorSince(constructStart_, std::max(r.end, cur().end))) return nullptr;
  return &diags_.add(k, r, std::move(message));
}

// True when the lexer reported an error in [begin, end]: a parse error
// there would only be a consequence of it.
bool Parser::lexerErrorSince(std::uint32_t begin, std::uint32_t end) const {
  const auto it = std::lower_bound(lexErrors_.begin(), lexErrors_.end(), begin);
  return it != lexErrors_.end() && *it <= end;
}

// An error that does not disturb parsing (the construct is still understood).
Diagnostic* Parser::softErrorMessage(DiagKind k, SourceRange r, std::string message) {
  if (panic_ || aborted_) return nullptr;
  return &diags_.add(k, r, std::move(message));
}

void Parser::checkErrorLimit() {
  if (diags_.tooManyErrors()) abort();
}

void Parser::abort() {
  aborted_ = true;
  pos_ = toks_.size() - 1;
}

void Parser::tooDeep(SourceRange where, std::size_t limit) {
  if (!aborted_) diags_.report(DiagKind::NestingTooDeep, where, limit);
  abort();
}

bool Parser::expect(Tok k, std::string_view what) {
  if (accept(k)) return true;
  error(DiagKind::ExpectedToken, tokRange(cur()), std::string(what), describe(cur()));
  return false;
}

// The `;` that ends a declaration, equation or statement. When it is
// missing before a line that starts something new, it is treated as
// inserted, so the next line is parsed normally.
bool Parser::expectSemi(std::string_view context) {
  if (accept(Tok::Semicolon)) {
    panic_ = false;  // synchronized
    return true;
  }
  const bool wasPanic = panic_;
  error(DiagKind::ExpectedToken, tokRange(cur()), "`;` " + std::string(context), describe(cur()));
  const Tok k = kind();
  if (!wasPanic && newlineBefore(cur()) &&
      (k == Tok::Ident || isHardStop(k) || atBlockEnd() || k == Tok::KwFor || k == Tok::KwFinal ||
       k == Tok::KwAnnotation)) {
    panic_ = false;
  }
  return false;
}

// Skips to just after the next `;`, or to a token that starts something
// new. Leaves panic mode.
void Parser::recoverElement() {
  while (!at(Tok::Eof)) {
    if (at(Tok::Semicolon)) {
      advance();
      break;
    }
    if (isHardStop(kind()) || atBlockEnd() || at(Tok::KwFor)) break;
    advance();
  }
  panic_ = false;
}

void Parser::recoverTopLevel() {
  while (!at(Tok::Eof) && !startsClass(kind()) && !at(Tok::KwFinal)) advance();
  panic_ = false;
}

// Inside a list opened by `closer`'s partner: skips to the next `,` or
// `closer` at this level (true), or gives up at a `;`, a hard stop or a
// mismatched closer (false, still in panic mode).
bool Parser::recoverInList(Tok closer) {
  std::vector<Tok> stack;
  while (!at(Tok::Eof)) {
    const Tok k = kind();
    if (k == Tok::Semicolon || isHardStop(k) || atBlockEnd()) return false;
    if (stack.empty() && (k == Tok::Comma || k == closer)) {
      panic_ = false;
      return true;
    }
    if (k == Tok::LParen) stack.push_back(Tok::RParen);
    else if (k == Tok::LBracket) stack.push_back(Tok::RBracket);
    else if (k == Tok::LBrace) stack.push_back(Tok::RBrace);
    else if (k == Tok::RParen || k == Tok::RBracket || k == Tok::RBrace) {
      if (stack.empty() || stack.back() != k) return false;
      stack.pop_back();
    }
    advance();
  }
  return false;
}

// `A.B.C` or `.A.B` (no subscripts): type names, modifier targets, imports.
Name Parser::parseTypeName(std::string_view what) {
  Name n;
  const std::uint32_t begin = cur().begin;
  if (at(Tok::Dot) && peekTok().kind == Tok::Ident) {
    advance();
    n.global = true;
  }
  if (!at(Tok::Ident)) {
    error(DiagKind::ExpectedToken, tokRange(cur()), std::string(what), describe(cur()));
    n.parts.push_back({"", {}, rng(cur().begin, cur().begin)});
    n.range = rng(begin, cur().begin);
    return n;
  }
  while (true) {
    const Token id = advance();
    n.parts.push_back({identText(id), {}, tokRange(id)});
    if (at(Tok::Dot) && peekTok().kind == Tok::Ident) {
      advance();
      continue;
    }
    break;
  }
  n.range = rng(begin, prevEnd_);
  return n;
}

// A component reference `a.b[i].c`, `.a`.
Name Parser::parseComponentRef() {
  Name n;
  const std::uint32_t begin = cur().begin;
  if (at(Tok::Dot) && peekTok().kind == Tok::Ident) {
    advance();
    n.global = true;
  }
  while (true) {
    if (!at(Tok::Ident)) {
      error(DiagKind::ExpectedToken, tokRange(cur()), "a name", describe(cur()));
      if (n.parts.empty()) n.parts.push_back({"", {}, rng(cur().begin, cur().begin)});
      break;
    }
    const Token id = advance();
    NamePart part{identText(id), {}, tokRange(id)};
    if (at(Tok::LBracket)) {
      parseSubscripts(part.subscripts);
      part.range = rng(id.begin, prevEnd_);
    }
    n.parts.push_back(std::move(part));
    if (at(Tok::Dot) && peekTok().kind == Tok::Ident) {
      advance();
      continue;
    }
    break;
  }
  n.range = rng(begin, prevEnd_);
  return n;
}

// `[e, :, end-1]` at the current `[`.
void Parser::parseSubscripts(std::vector<ExprPtr>& out) {
  const Token open = advance();
  ++subscriptDepth_;
  parseList(open, Tok::RBracket, [&] {
    if (at(Tok::Colon) && (peekTok().kind == Tok::Comma || peekTok().kind == Tok::RBracket)) {
      const Token c = advance();
      out.push_back(leaf(ExprKind::Colon, tokRange(c)));
    } else {
      out.push_back(parseExpression());
    }
  });
  --subscriptDepth_;
}

// Description strings: `"a"` or `"a" + "b"`.
void Parser::parseDescription(std::string& out) {
  if (!at(Tok::String)) return;
  out += decodeString(textOf(advance()));
  while (at(Tok::Plus) && peekTok().kind == Tok::String) {
    advance();
    out += decodeString(textOf(advance()));
  }
}

void Parser::parseAnnotation(Annotation& a) {
  if (!at(Tok::KwAnnotation)) return;
  const Token kw = advance();
  if (!at(Tok::LParen)) {
    expect(Tok::LParen, "`(` after `annotation`");
    return;
  }
  parseClassMod(a.mods);
  a.range = SourceRange::join(a.range, rng(kw.begin, prevEnd_));
}

// `(arg, arg, ...)` at the current `(`.
void Parser::parseClassMod(ClassModification& out) {
  const Token open = advance();
  parseList(open, Tok::RParen, [&] { parseArgument(out); });
}

void Parser::parseArgument(ClassModification& out) {
  DepthGuard guard(*this, tokRange(cur()));
  if (!guard.ok) return;
  Modification m;
  const std::uint32_t begin = cur().begin;
  while (at(Tok::KwEach) || at(Tok::KwFinal)) {
    if (advance().kind == Tok::KwEach) m.each = true;
    else m.isFinal = true;
  }
  if (at(Tok::KwRedeclare) || at(Tok::KwReplaceable)) {
    error(DiagKind::UnsupportedSyntax, tokRange(cur()), quote(textOf(cur())) + " modifiers");
    return;
  }
  m.target = parseTypeName("a modifier name such as `mass = 2`");
  if (panic_) return;
  if (at(Tok::LParen)) parseClassMod(m.nested);
  if (at(Tok::Equals) || at(Tok::Assign)) {
    advance();
    m.value = parseExpression();
  }
  parseDescription(m.description);
  m.range = rng(begin, prevEnd_);
  out.push_back(std::move(m));
}

ClassDefPtr Parser::parseClass(std::uint32_t begin, bool /*isFinal*/) {
  DepthGuard guard(*this, tokRange(cur()));
  if (!guard.ok) return nullptr;
  auto cls = std::make_unique<ClassDef>();
  while (true) {
    if (accept(Tok::KwEncapsulated)) cls->isEncapsulated = true;
    else if (accept(Tok::KwPartial)) cls->isPartial = true;
    else if (at(Tok::KwExpandable) || at(Tok::KwOperator) || at(Tok::KwPure) || at(Tok::KwImpure)) {
      if (at(Tok::KwOperator) || at(Tok::KwExpandable)) {
        softError(DiagKind::UnsupportedSyntax, tokRange(cur()), quote(textOf(cur())) + " classes");
      }
      advance();
    } else {
      break;
    }
  }
  switch (kind()) {
    case Tok::KwModel: cls->kind = ClassKind::Model; break;
    case Tok::KwPackage: cls->kind = ClassKind::Package; break;
    case Tok::KwFunction: cls->kind = ClassKind::Function; break;
    case Tok::KwRecord: cls->kind = ClassKind::Record; break;
    case Tok::KwConnector: cls->kind = ClassKind::Connector; break;
    case Tok::KwBlock: cls->kind = ClassKind::Block; break;
    case Tok::KwType: cls->kind = ClassKind::Type; break;
    case Tok::KwClass: cls->kind = ClassKind::Class; break;
    default:
      error(DiagKind::ExpectedToken, tokRange(cur()),
            "a class kind such as `model` after the prefixes", describe(cur()));
      return nullptr;
  }
  const Token kw = advance();
  const std::string kindName = classKindName(cls->kind);
  if (at(Tok::KwExtends)) {
    error(DiagKind::UnsupportedSyntax, tokRange(cur()), "class extensions `" + kindName + " extends`");
    return nullptr;
  }
  // `model` + newline + `Real x;`: the name is missing, `Real` is not it.
  const bool nameMissing = newlineBefore(cur()) && (peekTok().kind == Tok::Ident || peekTok().kind == Tok::Dot);
  if (at(Tok::Ident) && !nameMissing) {
    const Token id = advance();
    cls->name = identText(id);
    cls->nameRange = tokRange(id);
  } else {
    error(DiagKind::ExpectedToken, tokRange(cur()), "a name after `" + kindName + "`", describe(cur()));
    cls->nameRange = tokRange(kw);
    if (!at(Tok::String) && !at(Tok::Equals)) {
      // Without a name the body cannot be matched with its `end`; skip it.
      skipUnnamedClass();
      cls->range = rng(begin, prevEnd_);
      return cls;
    }
  }
  if (at(Tok::Equals)) {
    parseShortClass(*cls);
  } else {
    parseDescription(cls->description);
    openClasses_.push_back(cls.get());
    parseComposition(*cls);
    openClasses_.pop_back();
  }
  cls->range = rng(begin, prevEnd_);
  return cls;
}

void Parser::skipUnnamedClass() {
  int depth = 0;
  while (!at(Tok::Eof)) {
    if (isClassKeyword(kind()) && peekTok().kind == Tok::Ident) ++depth;
    if (atBlockEnd() && peekTok().kind == Tok::Ident) {
      advance();
      advance();
      if (depth-- == 0) {
        accept(Tok::Semicolon);
        break;
      }
      continue;
    }
    advance();
  }
}

// `type Angle = Real(unit = "rad") "description" annotation(...);`
void Parser::parseShortClass(ClassDef& cls) {
  advance();  // `=`
  while (at(Tok::KwInput) || at(Tok::KwOutput)) advance();
  if (at(Tok::Ident) && textOf(cur()) == "enumeration" && peekTok().kind == Tok::LParen) {
    error(DiagKind::UnsupportedSyntax, tokRange(cur()), "enumeration types");
    return;
  }
  cls.shortBase = parseTypeName("a base class name after `=`");
  if (panic_) return;
  if (at(Tok::LBracket)) parseSubscripts(cls.shortDims);
  if (at(Tok::LParen)) parseClassMod(cls.shortMods);
  parseDescription(cls.description);
  parseAnnotation(cls.annotation);
  if (!accept(Tok::Semicolon)) expectSemi("after the definition of `" + cls.name + "`");
}

void Parser::parseComposition(ClassDef& cls) {
  bool isProtected = false;
  while (true) {
    if (panic_) recoverElement();
    checkErrorLimit();
    if (at(Tok::Eof)) {
      if (Diagnostic* d = error(DiagKind::MissingEnd, tokRange(cur()), cls.name, "end of file")) {
        d->note(DiagKind::NoteClassBegins, cls.nameRange, classKindName(cls.kind), cls.name);
      }
      return;
    }
    const std::size_t before = pos_;
    constructStart_ = cur().begin;
    switch (kind()) {
      case Tok::KwEnd:
        if (atBlockEnd() && (peekTok().kind == Tok::Ident || peekTok().kind == Tok::Semicolon ||
                             peekTok().kind == Tok::Eof)) {
          if (parseEnd(cls)) return;
          break;
        }
        error(DiagKind::ExpectedDeclaration, tokRange(cur()),
              "`end " + std::string(tokSpelling(peekTok().kind)) + "`");
        if (atBlockEnd()) {
          advance();
          advance();
          accept(Tok::Semicolon);
          panic_ = false;
        }
        break;
      case Tok::KwPublic: advance(); isProtected = false; break;
      case Tok::KwProtected: advance(); isProtected = true; break;
      case Tok::KwEquation: advance(); parseEquations(cls, cls.equations, isProtected, nullptr); break;
      case Tok::KwAlgorithm: advance(); parseStatements(cls.algorithm, nullptr); break;
      case Tok::KwExternal: parseExternal(cls); break;
      case Tok::KwAnnotation:
        parseAnnotation(cls.annotation);
        expectSemi("after the class annotation");
        break;
      case Tok::KwImport: parseImport(cls); break;
      case Tok::KwExtends: parseExtends(cls); break;
      default:
        if (at(Tok::Ident) && textOf(cur()) == "initial" &&
            (peekTok().kind == Tok::KwEquation || peekTok().kind == Tok::KwAlgorithm)) {
          const Token i = advance();
          const Token s = advance();
          softError(DiagKind::UnsupportedSyntax, rng(i.begin, s.end),
                    "`initial " + std::string(tokSpelling(s.kind)) + "` sections");
          std::vector<EquationPtr> eqs;
          std::vector<StatementPtr> stmts;
          if (s.kind == Tok::KwEquation) parseEquations(cls, eqs, isProtected, nullptr);
          else parseStatements(stmts, nullptr);
          break;
        }
        parseElement(cls, isProtected);
    }
    if (pos_ == before && panic_) {
      if (!atBlockEnd() && !isHardStop(kind())) advance();
      else if (pos_ == before) advance();
    }
  }
}

// At `end Name` / `end;`. Returns true when the class is closed (or
// closed by an enclosing class's `end`, which is left for it).
bool Parser::parseEnd(ClassDef& cls) {
  const std::size_t endPos = pos_;
  const Token endTok = advance();
  if (!at(Tok::Ident)) {
    error(DiagKind::ExpectedToken, tokRange(cur()),
          "the class name `" + cls.name + "` after `end`", describe(cur()));
    accept(Tok::Semicolon);
    panic_ = false;
    return true;
  }
  const Token id = advance();
  const std::string name = identText(id);
  cls.endNameRange = tokRange(id);
  if (name != cls.name && !cls.name.empty()) {
    // `end Outer;` while `Inner` is open: `end Inner;` is missing. Leave
    // `end Outer;` to the enclosing class.
    for (std::size_t i = 0; i + 1 < openClasses_.size(); ++i) {
      if (openClasses_[i]->name != name) continue;
      if (Diagnostic* d = error(DiagKind::MissingEnd, rng(endTok.begin, id.end),
                                cls.name, "`end " + name + "`")) {
        d->note(DiagKind::NoteClassBegins, cls.nameRange, classKindName(cls.kind), cls.name);
      }
      panic_ = false;
      cls.endNameRange = {};
      pos_ = endPos;
      prevEnd_ = endPos > 0 ? toks_[endPos - 1].end : 0;
      return true;
    }
    if (Diagnostic* d = softError(DiagKind::EndNameMismatch, tokRange(id),
                                  name, classKindName(cls.kind), cls.name)) {
      d->note(DiagKind::NoteClassBegins, cls.nameRange, classKindName(cls.kind), cls.name);
    }
  }
  if (!accept(Tok::Semicolon)) expectSemi("after `end " + name + "`");
  panic_ = false;
  return true;
}

void Parser::parseImport(ClassDef& cls) {
  ImportClause imp;
  const Token kw = advance();
  if (at(Tok::Ident) && peekTok().kind == Tok::Equals) {
    imp.alias = identText(advance());
    advance();
  }
  imp.path = parseTypeName("a package name after `import`");
  if (imp.alias.empty() && at(Tok::DotStar)) {
    advance();
    imp.wildcard = true;
  } else if (at(Tok::Dot) && peekTok().kind == Tok::LBrace) {
    error(DiagKind::UnsupportedSyntax, rng(cur().begin, peekTok().end),
          "multiple-name imports `import A.{B, C}`");
    return;
  }
  std::string description;
  parseDescription(description);
  Annotation ignored;
  parseAnnotation(ignored);
  imp.range = rng(kw.begin, prevEnd_);
  if (!panic_) cls.imports.push_back(std::move(imp));
  expectSemi("after `import` clause");
}

void Parser::parseExtends(ClassDef& cls) {
  ExtendsClause ext;
  const Token kw = advance();
  ext.base = parseTypeName("a base class name after `extends`");
  if (panic_) return;
  if (at(Tok::LParen)) parseClassMod(ext.mods);
  parseAnnotation(ext.annotation);
  ext.range = rng(kw.begin, prevEnd_);
  cls.extends.push_back(std::move(ext));
  expectSemi("after `extends` clause");
}

// A component clause or a nested class, with its prefixes.
void Parser::parseElement(ClassDef& cls, bool isProtected) {
  const std::uint32_t begin = cur().begin;
  ComponentDecl proto;
  proto.isProtected = isProtected;
  const Token* variabilityTok = nullptr;
  const Token* causalityTok = nullptr;
  Token prefixToks[2];
  bool sawPrefix = false;
  while (true) {
    const Tok k = kind();
    if (k == Tok::KwFinal) {
      proto.isFinal = true;
    } else if (k == Tok::KwParameter || k == Tok::KwConstant) {
      if (variabilityTok) {
        softError(DiagKind::ConflictingPrefix, tokRange(cur()),
                  std::string(textOf(cur())), std::string(textOf(*variabilityTok)));
      }
      proto.variability = k == Tok::KwParameter ? Variability::Parameter : Variability::Constant;
      prefixToks[0] = cur();
      variabilityTok = &prefixToks[0];
    } else if (k == Tok::KwInput || k == Tok::KwOutput) {
      if (causalityTok) {
        softError(DiagKind::ConflictingPrefix, tokRange(cur()),
                  std::string(textOf(cur())), std::string(textOf(*causalityTok)));
      }
      proto.causality = k == Tok::KwInput ? Causality::Input : Causality::Output;
      prefixToks[1] = cur();
      causalityTok = &prefixToks[1];
    } else if (k == Tok::KwInner || k == Tok::KwOuter || k == Tok::KwReplaceable ||
               k == Tok::KwRedeclare || k == Tok::KwFlow || k == Tok::KwStream || k == Tok::KwDiscrete) {
      softError(DiagKind::UnsupportedSyntax, tokRange(cur()), quote(textOf(cur())) + " declarations");
    } else {
      break;
    }
    sawPrefix = true;
    advance();
  }
  if (!sawPrefix && (at(Tok::KwConnect) || looksLikeEquation())) {
    const std::size_t eq = looksLikeEquation();
    const std::string what =
        eq == 0 ? "connect(...)"
                : std::string(text_.substr(cur().begin, toks_[eq - 1].end - cur().begin)) + " = ...";
    softError(DiagKind::EquationOutsideSection, tokRange(cur()), what);
    if (EquationPtr e = parseEquation(cls, isProtected)) cls.equations.push_back(std::move(e));
    return;
  }
  if (startsClass(kind())) {
    if (variabilityTok || causalityTok) {
      const Token& p = variabilityTok ? *variabilityTok : *causalityTok;
      softError(DiagKind::ExpectedToken, tokRange(cur()),
                "a type name after `" + std::string(textOf(p)) + "`", describe(cur()));
    }
    if (ClassDefPtr c = parseClass(begin, proto.isFinal)) cls.classes.push_back(std::move(c));
    return;
  }
  if (!at(Tok::Ident) && !(at(Tok::Dot) && peekTok().kind == Tok::Ident)) {
    if (sawPrefix) {
      error(DiagKind::ExpectedToken, tokRange(cur()), "a type name", describe(cur()));
    } else {
      error(DiagKind::ExpectedDeclaration, tokRange(cur()), describe(cur()));
    }
    return;
  }
  proto.typeName = parseTypeName("a type name");
  if (at(Tok::LBracket)) parseSubscripts(proto.typeDims);
  const std::size_t first = cls.components.size();
  while (!panic_) {
    if (!at(Tok::Ident)) {
      error(DiagKind::ExpectedToken, tokRange(cur()),
            "a component name after type `" +
                 (cls.components.size() == first ? proto.typeName : cls.components[first].typeName).dotted() +
                 "`", describe(cur()));
      break;
    }
    ComponentDecl d;
    d.variability = proto.variability;
    d.causality = proto.causality;
    d.isFinal = proto.isFinal;
    d.isProtected = proto.isProtected;
    if (cls.components.size() == first) {
      d.typeName = std::move(proto.typeName);
      d.typeDims = std::move(proto.typeDims);
    } else {
      d.typeName = cloneName(cls.components[first].typeName);
      for (const ExprPtr& e : cls.components[first].typeDims) d.typeDims.push_back(cloneExpr(*e));
    }
    const Token id = advance();
    d.name = identText(id);
    d.nameRange = tokRange(id);
    if (at(Tok::LBracket)) parseSubscripts(d.dims);
    if (at(Tok::LParen)) parseClassMod(d.mods);
    if (at(Tok::Equals) || at(Tok::Assign)) {
      advance();
      d.binding = parseExpression();
    }
    if (at(Tok::KwIf)) {
      softError(DiagKind::UnsupportedSyntax, tokRange(cur()), "conditional declarations `if cond`");
      advance();
      parseExpression();
    }
    parseDescription(d.description);
    parseAnnotation(d.annotation);
    d.range = rng(begin, prevEnd_);
    cls.components.push_back(std::move(d));
    if (!accept(Tok::Comma)) break;
  }
  expectSemi("after declaration");
  for (std::size_t i = first; i < cls.components.size(); ++i) {
    cls.components[i].range = rng(begin, prevEnd_);
  }
}

// Whether the current token ends an equation (or, with `statements`, an
// algorithm) section: a section keyword or the start of a class; in an
// algorithm also the other hard stops except `when`/`while`, which are
// statements there. Inside a `for` body (`forTok`) that means a missing
// `end for`, which is reported.
bool Parser::endsSection(bool statements, const Token* forTok) {
  const Tok k = kind();
  const bool ends = k == Tok::KwEquation || k == Tok::KwAlgorithm || k == Tok::KwPublic ||
                    k == Tok::KwProtected || k == Tok::KwExternal || k == Tok::KwAnnotation ||
                    k == Tok::KwImport || k == Tok::KwExtends ||
                    (statements ? isHardStop(k) && k != Tok::KwWhen && k != Tok::KwWhile : startsClass(k));
  if (ends && forTok) {
    if (Diagnostic* d = error(DiagKind::MissingEnd, tokRange(cur()), "for", describe(cur()))) {
      d->note(DiagKind::NoteOpenedHere, tokRange(*forTok), "`for`");
    }
  }
  return ends;
}

// Until a section keyword or a block `end`. `forTok` is the enclosing loop.
void Parser::parseEquations(ClassDef& cls, std::vector<EquationPtr>& out, bool isProtected, const Token* forTok) {
  while (true) {
    if (panic_) recoverElement();
    checkErrorLimit();
    if (at(Tok::Eof) || atBlockEnd()) return;
    if (endsSection(/*statements=*/false, forTok)) return;
    const std::size_t before = pos_;
    constructStart_ = cur().begin;
    if (looksLikeDeclaration()) {
      const Token& t = at(Tok::Ident) ? peekTok() : cur();
      std::string name = t.kind == Tok::Ident ? identText(t) : std::string(tokSpelling(t.kind));
      if (at(Tok::Ident)) {
        // `Type name`: find the declared name after a dotted type.
        std::size_t p = pos_;
        while (toks_[p].kind == Tok::Ident && toks_[p + 1].kind == Tok::Dot) p += 2;
        if (toks_[p + 1].kind == Tok::Ident) name = identText(toks_[p + 1]);
      }
      softError(DiagKind::DeclarationInEquations, tokRange(cur()), name);
      parseElement(cls, isProtected);
    } else if (EquationPtr e = parseEquation(cls, isProtected)) {
      out.push_back(std::move(e));
    }
    if (pos_ == before && panic_ && !at(Tok::Eof)) advance();
  }
}

// `a.b[i].c =` or `:=`: an equation where a declaration was expected.
// Returns the index of the `=`, or 0.
std::size_t Parser::looksLikeEquation() const {
  std::size_t p = pos_;
  if (toks_[p].kind != Tok::Ident) return 0;
  const std::size_t last = toks_.size() - 1;
  while (true) {
    p = std::min(p + 1, last);
    if (toks_[p].kind == Tok::LBracket) {
      int depth = 0;
      for (; p < last; ++p) {
        if (toks_[p].kind == Tok::LBracket) ++depth;
        else if (toks_[p].kind == Tok::RBracket && --depth == 0) break;
        else if (toks_[p].kind == Tok::Semicolon) return 0;
      }
      p = std::min(p + 1, last);
    }
    if (toks_[p].kind == Tok::Dot && toks_[std::min(p + 1, last)].kind == Tok::Ident) {
      ++p;
      continue;
    }
    break;
  }
  return toks_[p].kind == Tok::Equals || toks_[p].kind == Tok::Assign ? p : 0;
}

// `Real x;`, `parameter ...`, `A.B c(...)` in an equation section.
bool Parser::looksLikeDeclaration() const {
  const Tok k = kind();
  if (k == Tok::KwParameter || k == Tok::KwConstant || k == Tok::KwInput || k == Tok::KwOutput ||
      k == Tok::KwFinal) {
    return true;
  }
  if (k != Tok::Ident) return false;
  std::size_t p = pos_;
  while (toks_[p].kind == Tok::Ident && toks_[p + 1].kind == Tok::Dot) p += 2;
  return toks_[p].kind == Tok::Ident && toks_[p + 1].kind == Tok::Ident;
}

EquationPtr Parser::parseEquation(ClassDef& cls, bool isProtected) {
  auto eq = std::make_unique<Equation>();
  const std::uint32_t begin = cur().begin;
  switch (kind()) {
    case Tok::KwFor: {
      DepthGuard guard(*this, tokRange(cur()));
      if (!guard.ok) return nullptr;
      const Token forTok = advance();
      eq->kind = EquationKind::For;
      if (!parseForHeader(eq->iterator, eq->iteratorRange, eq->iterRange)) skipForHeader();
      parseEquations(cls, eq->body, isProtected, &forTok);
      if (!parseEndFor(forTok)) return eq->range = rng(begin, prevEnd_), std::move(eq);
      eq->range = rng(begin, prevEnd_);
      return eq;
    }
    case Tok::KwConnect: {
      advance();
      eq->kind = EquationKind::Connect;
      if (!at(Tok::LParen)) {
        expect(Tok::LParen, "`(` after `connect`");
        return nullptr;
      }
      const Token open = advance();
      eq->lhs = parseRefExpr("a connector such as `body.frame_a`");
      if (!panic_) expect(Tok::Comma, "`,` between the two connectors");
      if (!panic_) eq->rhs = parseRefExpr("a connector such as `body.frame_a`");
      if (!panic_ && !accept(Tok::RParen)) {
        if (Diagnostic* d = error(DiagKind::ExpectedToken, tokRange(cur()), "`)`", describe(cur()))) {
          d->note(DiagKind::NoteOpenedHere, tokRange(open), "`(`");
        }
      }
      if (panic_) return nullptr;
      break;
    }
    case Tok::KwIf: case Tok::KwWhen: case Tok::KwWhile: {
      const Token kw = cur();
      error(DiagKind::UnsupportedSyntax, tokRange(kw), quote(textOf(kw)) + " equations");
      skipBlock(kw.kind);
      return nullptr;
    }
    default: {
      eq->kind = EquationKind::Assign;
      eq->lhs = parseSimpleExpression();
      if (eq->lhs) checkHeight(*eq->lhs);
      if (panic_) return nullptr;
      if (at(Tok::Assign)) {
        softError(DiagKind::ColonEqualsInEquation, tokRange(cur()));
        advance();
      } else if (!expect(Tok::Equals, "`=` in equation")) {
        return nullptr;
      }
      eq->rhs = parseExpression();
      if (panic_) return nullptr;
    }
  }
  parseDescription(eq->description);
  parseAnnotation(eq->annotation);
  eq->range = rng(begin, prevEnd_);
  expectSemi("after equation");
  return eq;
}

ExprPtr Parser::parseRefExpr(std::string_view what) {
  if (!at(Tok::Ident) && !(at(Tok::Dot) && peekTok().kind == Tok::Ident)) {
    error(DiagKind::ExpectedToken, tokRange(cur()), std::string(what), describe(cur()));
    return nullptr;
  }
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Ref;
  e->name = parseComponentRef();
  e->range = e->name.range;
  return e;
}

// `i in 1:n loop` after `for`.
bool Parser::parseForHeader(std::string& iter, SourceRange& iterRange, ExprPtr& range) {
  if (!at(Tok::Ident)) {
    error(DiagKind::ExpectedToken, tokRange(cur()), "a loop variable after `for`", describe(cur()));
    return false;
  }
  const Token id = advance();
  iter = identText(id);
  iterRange = tokRange(id);
  if (!expect(Tok::KwIn, "`in` after the loop variable")) return false;
  range = parseExpression();
  if (at(Tok::Comma)) {
    error(DiagKind::UnsupportedSyntax, tokRange(cur()), "`for` loops over several iterators");
    return false;
  }
  if (panic_) return false;
  return accept(Tok::KwLoop) || expect(Tok::KwLoop, "`loop` after the range of `for " + iter + " in`");
}

// After an error in `for i in r loop`: skip to just after `loop` (or to
// the end of the line) and parse the body as usual, so the loop's `end
// for;` still closes it.
void Parser::skipForHeader() {
  const std::size_t start = pos_;
  while (!at(Tok::Eof) && !isHardStop(kind()) && !atBlockEnd()) {
    if (accept(Tok::KwLoop) || accept(Tok::Semicolon)) break;
    if ((pos_ > start || !at(Tok::KwIn)) && newlineBefore(cur())) break;
    advance();
  }
  panic_ = false;
}

bool Parser::parseEndFor(const Token& forTok) {
  if (at(Tok::KwEnd) && peekTok().kind == Tok::KwFor) {
    advance();
    advance();
    expectSemi("after `end for`");
    return true;
  }
  if (Diagnostic* d = error(DiagKind::MissingEnd, tokRange(cur()),
                            "for", at(Tok::KwEnd) && peekTok().kind == Tok::Ident
                                        ? "`end " + identText(peekTok()) + "`"
                                        : describe(cur()))) {
    d->note(DiagKind::NoteOpenedHere, tokRange(forTok), "`for`");
  }
  // Leave `end Name;` for the class; the loop is closed here.
  panic_ = false;
  return false;
}

// Skips an unsupported `if`/`when`/`while` block through its `end kw;`.
void Parser::skipBlock(Tok kw) {
  int depth = 0;
  Tok prev = Tok::Semicolon;
  while (!at(Tok::Eof)) {
    const Tok k = kind();
    if (k == Tok::KwEnd && peekTok().kind == kw) {
      advance();
      advance();
      if (--depth <= 0) {
        accept(Tok::Semicolon);
        break;
      }
      prev = kw;
      continue;
    }
    if (k == kw && (prev == Tok::Semicolon || prev == Tok::KwThen || prev == Tok::KwElse ||
                    prev == Tok::KwLoop)) {
      ++depth;
    }
    if (depth == 0 && (atBlockEnd() || k == Tok::KwEquation || k == Tok::KwAlgorithm ||
                       k == Tok::KwPublic || k == Tok::KwProtected)) {
      break;
    }
    prev = k;
    advance();
  }
  panic_ = false;
}

void Parser::parseStatements(std::vector<StatementPtr>& out, const Token* forTok) {
  while (true) {
    if (panic_) recoverElement();
    checkErrorLimit();
    if (at(Tok::Eof) || atBlockEnd()) return;
    if (endsSection(/*statements=*/true, forTok)) return;
    const std::size_t before = pos_;
    constructStart_ = cur().begin;
    if (StatementPtr s = parseStatement()) out.push_back(std::move(s));
    if (pos_ == before && panic_ && !at(Tok::Eof)) advance();
  }
}

StatementPtr Parser::parseStatement() {
  auto st = std::make_unique<Statement>();
  const std::uint32_t begin = cur().begin;
  switch (kind()) {
    case Tok::KwFor: {
      DepthGuard guard(*this, tokRange(cur()));
      if (!guard.ok) return nullptr;
      const Token forTok = advance();
      st->isFor = true;
      if (!parseForHeader(st->iterator, st->iteratorRange, st->iterRange)) skipForHeader();
      parseStatements(st->body, &forTok);
      parseEndFor(forTok);
      st->range = rng(begin, prevEnd_);
      return st;
    }
    case Tok::KwIf: case Tok::KwWhen: case Tok::KwWhile: {
      const Token kw = cur();
      error(DiagKind::UnsupportedSyntax, tokRange(kw), quote(textOf(kw)) + " statements");
      skipBlock(kw.kind);
      return nullptr;
    }
    case Tok::KwReturn: case Tok::KwBreak:
      error(DiagKind::UnsupportedSyntax, tokRange(cur()), quote(textOf(cur())) + " statements");
      return nullptr;
    default: break;
  }
  if (!at(Tok::Ident) && !(at(Tok::Dot) && peekTok().kind == Tok::Ident)) {
    error(DiagKind::ExpectedToken, tokRange(cur()),
          "a statement such as `y := x;`", describe(cur()));
    return nullptr;
  }
  st->lhs = parseRefExpr("a variable");
  if (at(Tok::LParen)) {
    error(DiagKind::UnsupportedSyntax, tokRange(cur()), "function call statements");
    return nullptr;
  }
  if (at(Tok::Equals)) {
    softError(DiagKind::AssignInAlgorithm, tokRange(cur()));
    advance();
  } else if (!expect(Tok::Assign, "`:=` in assignment")) {
    return nullptr;
  }
  st->rhs = parseExpression();
  if (panic_) return nullptr;
  std::string description;
  parseDescription(description);
  Annotation ignored;
  parseAnnotation(ignored);
  st->range = rng(begin, prevEnd_);
  expectSemi("after statement");
  return st;
}

// `external "C++" out = ns::f(a, b) annotation(...);`
void Parser::parseExternal(ClassDef& cls) {
  ExternalClause ext;
  const Token kw = advance();
  if (at(Tok::String)) {
    const Token s = advance();
    ext.language = decodeString(textOf(s));
    ext.languageRange = tokRange(s);
  }
  if (at(Tok::Ident) || (at(Tok::Dot) && peekTok().kind == Tok::Ident)) {
    // An output `y =` comes before the function's name.
    std::size_t p = pos_;
    int depth = 0;
    for (; p < toks_.size(); ++p) {
      const Tok k = toks_[p].kind;
      if (k == Tok::LBracket) ++depth;
      else if (k == Tok::RBracket) --depth;
      else if (depth == 0 && (k == Tok::LParen || k == Tok::Semicolon || k == Tok::Equals || k == Tok::Eof)) break;
    }
    if (toks_[p].kind == Tok::Equals) {
      ext.output = parseRefExpr("an output variable");
      expect(Tok::Equals, "`=` after the output of `external`");
    }
    if (!panic_) parseExternalCall(ext);
  }
  if (!panic_) parseAnnotation(ext.annotation);
  ext.range = rng(kw.begin, prevEnd_);
  cls.external = std::move(ext);
  expectSemi("after `external` clause");
}

void Parser::parseExternalCall(ExternalClause& ext) {
  if (!at(Tok::Ident)) {
    error(DiagKind::ExpectedToken, tokRange(cur()), "a function name", describe(cur()));
    return;
  }
  const Token first = advance();
  ext.functionName = identText(first);
  while (true) {
    if (at(Tok::Colon) && peekTok().kind == Tok::Colon && peekTok().begin == cur().end &&
        peekTok(2).kind == Tok::Ident) {
      advance();
      advance();
      ext.functionName += "::" + identText(advance());
    } else if (at(Tok::Dot) && peekTok().kind == Tok::Ident) {
      advance();
      ext.functionName += "." + identText(advance());
    } else {
      break;
    }
  }
  ext.functionRange = rng(first.begin, prevEnd_);
  if (!at(Tok::LParen)) {
    expect(Tok::LParen, "`(` after the external function name");
    return;
  }
  const Token open = advance();
  parseList(open, Tok::RParen, [&] { ext.args.push_back(parseExpression()); });
}

}  // namespace detail

StoredDefinition parse(const SourceManager& sources, FileId file, DiagnosticEngine& diags) {
  return detail::Parser(sources, file, diags).run();
}

}  // namespace capstan::syntax
