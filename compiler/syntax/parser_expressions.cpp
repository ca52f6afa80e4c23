// Expressions of the Modelica subset: the precedence climb from
// `if` expressions and ranges down to primaries. The grammar decisions taken
// here (non-associative `^`, unary minus after an operator, `if` as a
// primary) are listed at the top of parser.cpp.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "syntax/parser_impl.hpp"

namespace capstan::syntax::detail {
namespace {

constexpr BinaryOperator kAdditive[] = {
    {Tok::Plus, Op::Add}, {Tok::Minus, Op::Sub}, {Tok::DotPlus, Op::ElemAdd}, {Tok::DotMinus, Op::ElemSub}};
constexpr BinaryOperator kMultiplicative[] = {
    {Tok::Star, Op::Mul}, {Tok::Slash, Op::Div}, {Tok::DotStar, Op::ElemMul}, {Tok::DotSlash, Op::ElemDiv}};

}  // namespace

ExprPtr Parser::leaf(ExprKind k, SourceRange r) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->range = r;
  return e;
}

// Stand-in for an expression that could not be parsed (an error was reported).
ExprPtr Parser::errorExpr() {
  auto e = leaf(ExprKind::Number, rng(cur().begin, cur().begin));
  e->isInteger = true;
  return e;
}

ExprPtr Parser::binary(Op op, ExprPtr a, ExprPtr b) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Binary;
  e->op = op;
  e->range = SourceRange::join(a->range, b->range);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return e;
}

ExprPtr Parser::unary(Op op, std::uint32_t begin, ExprPtr a) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Unary;
  e->op = op;
  e->range = rng(begin, a->range.end);
  e->args.push_back(std::move(a));
  return e;
}

bool Parser::chainTooLong(std::size_t& n) {
  if (++n <= kMaxChain) return false;
  tooDeep(tokRange(cur()), kMaxHeight);
  return true;
}

// Refuses an expression deeper than kMaxHeight, at its first node that is
// too deep. Chains within chains (`(1 + ... + 1) * ... * (1 + ... + 1)` or
// `f(1 + ... + 1) + ...`) pass chainTooLong() one by one; their sum does not.
void Parser::checkHeight(const Expr& root) {
  std::vector<std::pair<const Expr*, std::size_t>> pending{{&root, 1}};  // node, depth
  while (!pending.empty()) {
    const auto [e, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxHeight) {
      tooDeep(e->range, kMaxHeight);
      return;
    }
    for (const ExprPtr& a : e->args) {
      if (a) pending.emplace_back(a.get(), depth + 1);
    }
    for (const NamedArg& a : e->namedArgs) {
      if (a.value) pending.emplace_back(a.value.get(), depth + 1);
    }
    for (const NamePart& part : e->name.parts) {
      for (const ExprPtr& s : part.subscripts) {
        if (s) pending.emplace_back(s.get(), depth + 1);
      }
    }
  }
}

// `first op operand op operand ...`, left-associative, for the operators in
// `ops`; ends at the first token that is not one of them.
ExprPtr Parser::parseBinaryChain(ExprPtr first, std::span<const BinaryOperator> ops, ExprPtr (Parser::*operand)()) {
  ExprPtr a = std::move(first);
  std::size_t n = 0;
  while (!chainTooLong(n)) {
    const auto row = std::find_if(ops.begin(), ops.end(), [&](const BinaryOperator& o) { return at(o.tok); });
    if (row == ops.end()) return a;
    advance();
    a = binary(row->op, std::move(a), (this->*operand)());
  }
  return a;
}

ExprPtr Parser::parseExpression() {
  DepthGuard guard(*this, tokRange(cur()));
  if (!guard.ok) return errorExpr();
  ++expressionDepth_;
  ExprPtr e = at(Tok::KwIf) ? parseIfExpression() : parseSimpleExpression();
  if (--expressionDepth_ == 0 && e) checkHeight(*e);
  return e;
}

ExprPtr Parser::parseIfExpression() {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::If;
  const std::uint32_t begin = advance().begin;
  while (true) {
    e->args.push_back(parseExpression());
    if (!expect(Tok::KwThen, "`then` after the condition")) break;
    e->args.push_back(parseExpression());
    if (accept(Tok::KwElseif)) continue;
    if (!expect(Tok::KwElse, "`else` or `elseif` in `if` expression")) break;
    e->args.push_back(parseExpression());
    break;
  }
  e->range = rng(begin, prevEnd_);
  return e;
}

// `a`, `a:b`, `a:b:c`
ExprPtr Parser::parseSimpleExpression() {
  ExprPtr a = parseLogicalOr();
  if (!at(Tok::Colon) || panic_) return a;
  if (at(Tok::Colon) && subscriptDepth_ > 0 &&
      (peekTok().kind == Tok::Comma || peekTok().kind == Tok::RBracket)) {
    return a;
  }
  auto r = std::make_unique<Expr>();
  r->kind = ExprKind::Range;
  r->args.push_back(std::move(a));
  advance();
  r->args.push_back(parseLogicalOr());
  if (at(Tok::Colon)) {
    advance();
    r->args.push_back(parseLogicalOr());
  }
  r->range = SourceRange::join(r->args.front()->range, r->args.back()->range);
  return r;
}

ExprPtr Parser::parseLogicalOr() {
  ExprPtr a = parseLogicalAnd();
  std::size_t n = 0;
  while (at(Tok::KwOr) && !chainTooLong(n)) {
    advance();
    a = binary(Op::Or, std::move(a), parseLogicalAnd());
  }
  return a;
}

ExprPtr Parser::parseLogicalAnd() {
  ExprPtr a = parseLogicalNot();
  std::size_t n = 0;
  while (at(Tok::KwAnd) && !chainTooLong(n)) {
    advance();
    a = binary(Op::And, std::move(a), parseLogicalNot());
  }
  return a;
}

ExprPtr Parser::parseLogicalNot() {
  if (!at(Tok::KwNot)) return parseRelation();
  DepthGuard guard(*this, tokRange(cur()));
  if (!guard.ok) return errorExpr();
  const std::uint32_t begin = advance().begin;
  return unary(Op::Not, begin, parseLogicalNot());
}

bool Parser::relOp(Tok t, Op& op) {
  switch (t) {
    case Tok::EqEq: op = Op::Eq; return true;
    case Tok::NotEq: op = Op::Ne; return true;
    case Tok::Less: op = Op::Lt; return true;
    case Tok::LessEq: op = Op::Le; return true;
    case Tok::Greater: op = Op::Gt; return true;
    case Tok::GreaterEq: op = Op::Ge; return true;
    default: return false;
  }
}

ExprPtr Parser::parseRelation() {
  ExprPtr a = parseArithmetic();
  Op op;
  std::size_t n = 0;
  bool first = true;
  while (relOp(kind(), op) && !chainTooLong(n)) {
    const Token t = advance();
    if (!first) {
      softError(DiagKind::ChainedOperator, tokRange(t),
                std::string(textOf(t)), "(a < b) and (b < c)");
    }
    first = false;
    a = binary(op, std::move(a), parseArithmetic());
  }
  return a;
}

ExprPtr Parser::parseArithmetic() {
  ExprPtr a;
  if (at(Tok::Minus) || at(Tok::Plus)) {
    const Token t = advance();
    ExprPtr term = parseTerm();
    a = unary(t.kind == Tok::Minus ? Op::Neg : Op::Plus, t.begin, std::move(term));
  } else {
    a = parseTerm();
  }
  return parseBinaryChain(std::move(a), kAdditive, &Parser::parseTerm);
}

ExprPtr Parser::parseTerm() {
  return parseBinaryChain(parseFactor(), kMultiplicative, &Parser::parseFactor);
}

// `a ^ b`; `a^b^c` is reported and parsed as `a^(b^c)`.
ExprPtr Parser::parseFactor() {
  ExprPtr a = parseOperand();
  if (!at(Tok::Caret) && !at(Tok::DotCaret)) return a;
  const Token t = advance();
  ExprPtr b = parseOperand();
  if (at(Tok::Caret) || at(Tok::DotCaret)) {
    softError(DiagKind::ChainedOperator, tokRange(cur()), std::string(textOf(cur())), "(a^b)^c");
    DepthGuard guard(*this, tokRange(cur()));
    if (!guard.ok) return a;
    const Token t2 = advance();
    b = binary(t2.kind == Tok::Caret ? Op::Pow : Op::ElemPow, std::move(b), parseFactorTail());
  }
  return binary(t.kind == Tok::Caret ? Op::Pow : Op::ElemPow, std::move(a), std::move(b));
}

// The rest of a chained power after the error was reported.
ExprPtr Parser::parseFactorTail() {
  ExprPtr a = parseOperand();
  if (!at(Tok::Caret) && !at(Tok::DotCaret)) return a;
  DepthGuard guard(*this, tokRange(cur()));
  if (!guard.ok) return a;
  const Token t = advance();
  return binary(t.kind == Tok::Caret ? Op::Pow : Op::ElemPow, std::move(a), parseFactorTail());
}

// A primary, or `-`/`+` before one (after a binary operator: `a * -b`).
ExprPtr Parser::parseOperand() {
  if (at(Tok::Minus) || at(Tok::Plus)) {
    DepthGuard guard(*this, tokRange(cur()));
    if (!guard.ok) return errorExpr();
    const Token t = advance();
    return unary(t.kind == Tok::Minus ? Op::Neg : Op::Plus, t.begin, parseFactor());
  }
  return parsePrimary();
}

ExprPtr Parser::parsePrimary() {
  const Token t = cur();
  switch (t.kind) {
    case Tok::Integer:
    case Tok::Real: {
      advance();
      auto e = leaf(ExprKind::Number, tokRange(t));
      e->isInteger = t.kind == Tok::Integer;
      const std::string_view s = textOf(t);
      double v = 0;
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc::result_out_of_range) {
        // Underflow to zero is harmless; overflow is not.
        const bool tiny = s.find_first_of("eE") != std::string_view::npos &&
                          s.find("-", s.find_first_of("eE")) != std::string_view::npos;
        if (!tiny) {
          softError(DiagKind::InvalidNumber, tokRange(t), std::string(s), "it is too large for a double");
          v = HUGE_VAL;
        } else {
          v = 0;
        }
      }
      (void)ptr;
      e->number = v;
      return e;
    }
    case Tok::String: {
      advance();
      auto e = leaf(ExprKind::String, tokRange(t));
      e->text = decodeString(textOf(t));
      return e;
    }
    case Tok::KwTrue:
    case Tok::KwFalse: {
      advance();
      auto e = leaf(ExprKind::Boolean, tokRange(t));
      e->boolean = t.kind == Tok::KwTrue;
      return e;
    }
    case Tok::KwEnd:
      if (subscriptDepth_ > 0) {
        advance();
        return leaf(ExprKind::End, tokRange(t));
      }
      break;
    case Tok::KwIf:
      return parseIfExpression();
    case Tok::Ident:
    case Tok::Dot:
      if (t.kind == Tok::Dot && peekTok().kind != Tok::Ident) break;
      return parseNameOrCall();
    case Tok::LParen: {
      advance();
      ExprPtr inner = parseExpression();
      if (!panic_ && !accept(Tok::RParen)) {
        if (Diagnostic* d = error(DiagKind::ExpectedToken, tokRange(cur()), "`)`", describe(cur()))) {
          d->note(DiagKind::NoteOpenedHere, tokRange(t), "`(`");
        }
      }
      inner->range = rng(t.begin, prevEnd_);
      return inner;
    }
    case Tok::LBrace: {
      advance();
      auto e = leaf(ExprKind::Array, tokRange(t));
      parseList(t, Tok::RBrace, [&] {
        e->args.push_back(parseExpression());
        if (at(Tok::KwFor)) {
          error(DiagKind::UnsupportedSyntax, tokRange(cur()), "array comprehensions `{e for i in r}`");
        }
      });
      e->range = rng(t.begin, prevEnd_);
      return e;
    }
    case Tok::LBracket:
      error(DiagKind::UnsupportedSyntax, tokRange(t), "matrix constructors `[a, b; c, d]`");
      skipBrackets();
      return errorExpr();
    default:
      break;
  }
  error(DiagKind::ExpectedExpression, tokRange(t), describe(t));
  return errorExpr();
}

// Skips a bracketed `[...]`, `;` included, to its matching `]`.
void Parser::skipBrackets() {
  int depth = 0;
  while (!at(Tok::Eof) && !isHardStop(kind()) && !atBlockEnd()) {
    if (at(Tok::LBracket)) ++depth;
    if (at(Tok::RBracket) && --depth == 0) {
      advance();
      return;
    }
    advance();
  }
}

ExprPtr Parser::parseNameOrCall() {
  auto e = std::make_unique<Expr>();
  e->name = parseComponentRef();
  e->kind = ExprKind::Ref;
  if (at(Tok::LParen) && !panic_) {
    e->kind = ExprKind::Call;
    const Token open = advance();
    const int savedSubscripts = subscriptDepth_;
    subscriptDepth_ = 0;
    parseList(open, Tok::RParen, [&] {
      if (at(Tok::Ident) && peekTok().kind == Tok::Equals) {
        const Token id = advance();
        advance();
        e->namedArgs.push_back({identText(id), tokRange(id), parseExpression()});
      } else {
        e->args.push_back(parseExpression());
      }
      if (at(Tok::KwFor)) {
        error(DiagKind::UnsupportedSyntax, tokRange(cur()), "reduction expressions `f(e for i in r)`");
      }
    });
    subscriptDepth_ = savedSubscripts;
  }
  e->range = rng(e->name.range.begin, prevEnd_);
  return e;
}

}  // namespace capstan::syntax::detail
