// Lexer: every token kind with its byte range, comments, numbers, strings,
// quoted identifiers, and diagnostics for bad input; any bytes lex.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "syntax/lexer.hpp"

using namespace capstan::syntax;

namespace {

struct Lexed {
  SourceManager sources;
  DiagnosticEngine diags;
  FileId file = 0;
  LexResult result;

  explicit Lexed(std::string text) {
    file = sources.add("lex.cap", std::move(text));
    result = lex(sources, file, diags);
  }
  // "kind:text" per token, without the final Eof.
  std::vector<std::string> tokens() const {
    std::vector<std::string> out;
    const std::string_view text = sources.file(file).text();
    for (const Token& t : result.tokens) {
      if (t.kind == Tok::Eof) break;
      std::string k;
      switch (t.kind) {
        case Tok::Ident: k = "id"; break;
        case Tok::Integer: k = "int"; break;
        case Tok::Real: k = "real"; break;
        case Tok::String: k = "str"; break;
        default: k = isKeyword(t.kind) ? "kw" : "op"; break;
      }
      out.push_back(k + ":" + std::string(text.substr(t.begin, t.end - t.begin)));
    }
    return out;
  }
  std::vector<std::string> errors() const {
    std::vector<std::string> out;
    for (const Diagnostic& d : diags.diagnostics()) {
      const LineColumn lc = sources.file(file).lineColumn(d.range.begin);
      out.push_back(std::string(diagInfo(d.kind).name) + "@" + std::to_string(lc.line) + ":" +
                    std::to_string(lc.column) + ": " + d.message);
    }
    return out;
  }
};

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("identifiers, keywords and quoted identifiers") {
  Lexed l("model _x1 Body end 'a b\\'c' der endx");
  CHECK(l.tokens() == V{"kw:model", "id:_x1", "id:Body", "kw:end", "id:'a b\\'c'", "id:der", "id:endx"});
  CHECK(l.errors().empty());
  CHECK(l.result.tokens.back().kind == Tok::Eof);
  CHECK(l.result.tokens.back().begin == 36);
  CHECK(l.result.tokens[1].begin == 6);
  CHECK(l.result.tokens[1].end == 9);
}

TEST_CASE("every keyword spelling maps to its token and back") {
  for (int k = static_cast<int>(Tok::KwAlgorithm); k <= static_cast<int>(Tok::KwWithin); ++k) {
    const Tok t = static_cast<Tok>(k);
    CHECK(isKeyword(t));
    CHECK(keywordKind(tokSpelling(t)) == t);
  }
  CHECK(keywordKind("Model") == Tok::Ident);
  CHECK(keywordKind("time") == Tok::Ident);
  CHECK(keywordKind("x") == Tok::Ident);
  CHECK_FALSE(isKeyword(Tok::Semicolon));
}

TEST_CASE("numbers: integer and real") {
  Lexed l("1 2.5 1e-3 .5 3. 2E+10 1.*x 7.e2 0012");
  CHECK(l.tokens() == V{"int:1", "real:2.5", "real:1e-3", "real:.5", "real:3.", "real:2E+10", "int:1",
                        "op:.*", "id:x", "real:7.e2", "int:0012"});
  CHECK(l.errors().empty());
}

TEST_CASE("malformed numbers are reported") {
  Lexed l("x = 2e;\ny = 3x;\n");
  CHECK(l.errors() == V{"InvalidNumber@1:5: malformed number `2e`: the exponent has no digits",
                        "InvalidNumber@2:5: malformed number `3x`: a number cannot be followed by `x`; names "
                        "start with a letter or `_`"});
  CHECK(l.tokens() == V{"id:x", "op:=", "real:2e", "op:;", "id:y", "op:=", "int:3x", "op:;"});
}

TEST_CASE("operators including element-wise ones") {
  Lexed l("( ) [ ] { } , ; : . := = + - * / ^ .+ .- .* ./ .^ == <> < <= > >=");
  const V expect{"op:(", "op:)", "op:[", "op:]", "op:{", "op:}", "op:,", "op:;", "op::", "op:.", "op::=",
                 "op:=", "op:+", "op:-", "op:*", "op:/", "op:^", "op:.+", "op:.-", "op:.*", "op:./", "op:.^",
                 "op:==", "op:<>", "op:<", "op:<=", "op:>", "op:>="};
  CHECK(l.tokens() == expect);
  CHECK(l.errors().empty());
  Lexed m("a.b.*c::d");
  CHECK(m.tokens() == V{"id:a", "op:.", "id:b", "op:.*", "id:c", "op::", "op::", "id:d"});
}

TEST_CASE("strings and escapes") {
  Lexed l(R"("plain" "esc \" \\ \n \t \' \?" "multi
line")");
  CHECK(l.tokens().size() == 3);
  CHECK(l.errors().empty());
  const std::string_view text = l.sources.file(l.file).text();
  auto value = [&](std::size_t i) {
    const Token& t = l.result.tokens[i];
    return decodeString(text.substr(t.begin, t.end - t.begin));
  };
  CHECK(value(0) == "plain");
  CHECK(value(1) == "esc \" \\ \n \t ' ?");
  CHECK(value(2) == "multi\nline");
  Lexed bad(R"(x = "a\qb";)");
  CHECK(bad.errors() ==
        V{"InvalidEscape@1:7: unknown escape sequence `\\q` in string literal; write `\\\\` for a backslash"});
  CHECK(bad.tokens() == V{"id:x", "op:=", R"(str:"a\qb")", "op:;"});
}

TEST_CASE("escapeString is decodeString's inverse and keeps a comment on its line") {
  const std::string value = "robot \"q\"\n  <druped\r\t\\ \a\b\f\v ? ' \x01 \xe2\x80\x9c";
  CHECK(decodeString("\"" + escapeString(value) + "\"") == value);
  const std::string literal = "\"" + escapeString(value) + "\"";
  Lexed l(literal + " // " + escapeString(value) + "\nx");
  CHECK(l.errors().empty());
  CHECK(l.tokens() == V{"str:" + literal, "id:x"});
}

TEST_CASE("comments") {
  Lexed l("a // line comment ; b\nc /* block\n ; */ d /**/ e");
  CHECK(l.tokens() == V{"id:a", "id:c", "id:d", "id:e"});
  CHECK(l.errors().empty());
  CHECK_FALSE(l.result.eofAfterError);
}

TEST_CASE("unterminated strings, comments and quoted identifiers") {
  Lexed c("model M /* no end\n");
  CHECK(c.errors() == V{"UnterminatedComment@1:9: unterminated `/*` comment; it runs to the end of the file"});
  CHECK(c.result.eofAfterError);
  Lexed s("x = \"abc\nend M;\n");
  CHECK(s.errors() == V{"UnterminatedString@1:5: unterminated string literal; add a closing `\"`"});
  CHECK(s.result.eofAfterError);
  CHECK(s.tokens().back() == "str:\"abc\nend M;\n");
  Lexed q("x = 'abc\ny;");
  CHECK(q.errors() == V{"InvalidQuotedIdent@1:5: invalid quoted identifier: it has no closing `'` on its line"});
  CHECK(q.tokens() == V{"id:x", "op:=", "id:'abc", "id:y", "op:;"});
  Lexed e("''");
  CHECK(e.errors() == V{"InvalidQuotedIdent@1:1: invalid quoted identifier: it is empty"});
  Lexed b("\"abc\\");
  CHECK(b.errors().size() == 1);
}

TEST_CASE("invalid characters are reported once per run and skipped") {
  Lexed l("a @ b $# c \xC3\xA9 d \xFF\xFE e !");
  CHECK(l.tokens() == V{"id:a", "id:b", "id:c", "id:d", "id:e"});
  CHECK(l.errors() == V{"InvalidCharacter@1:3: invalid character `@` in source",
                        "InvalidCharacter@1:7: invalid character `$` in source",
                        "InvalidCharacter@1:12: invalid character U+00E9 `\xC3\xA9` in source",
                        "InvalidCharacter@1:17: invalid character byte 0xFF in source",
                        "InvalidCharacter@1:22: invalid character `!` in source"});
  CHECK(l.diags.diagnostics()[1].range.end - l.diags.diagnostics()[1].range.begin == 2);
  Lexed n(std::string("a\0b", 3));
  CHECK(n.errors() == V{"InvalidCharacter@1:2: invalid character U+0000 in source"});
  CHECK(n.tokens() == V{"id:a", "id:b"});
}

TEST_CASE("token descriptions for messages") {
  Lexed l("end x 2.5 \"s\" ; ");
  const std::string_view text = l.sources.file(l.file).text();
  CHECK(describeToken(l.result.tokens[0], text) == "keyword `end`");
  CHECK(describeToken(l.result.tokens[1], text) == "identifier `x`");
  CHECK(describeToken(l.result.tokens[2], text) == "number `2.5`");
  CHECK(describeToken(l.result.tokens[3], text) == "string literal");
  CHECK(describeToken(l.result.tokens[4], text) == "`;`");
  CHECK(describeToken(l.result.tokens[5], text) == "end of file");
}

TEST_CASE("any bytes lex, and the error limit stops the lexer") {
  std::string all;
  for (int rep = 0; rep < 4; ++rep) {
    for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  }
  Lexed l(all);
  CHECK(l.result.tokens.back().kind == Tok::Eof);
  for (const Token& t : l.result.tokens) CHECK(t.end <= all.size());
  std::string junk;
  for (int i = 0; i < 1000; ++i) junk += "a @ ";
  Lexed j(junk);
  CHECK(j.diags.errorCount() == DiagnosticEngine::kErrorLimit);
  CHECK(j.result.tokens.back().kind == Tok::Eof);
}
