// libFuzzer entry: lex and parse arbitrary bytes, render the diagnostics, and
// check the invariants every consumer relies on: each source range of the
// AST and of the diagnostics lies inside the file, and the parser reports no
// more errors than the engine keeps. Any violation traps, so the fuzzer keeps
// the input as a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "syntax/diagnostics.hpp"
#include "syntax/parser.hpp"

namespace {

using namespace capstan::syntax;

std::size_t gSize = 0;
FileId gFile = 0;

void checkRange(SourceRange r) {
  if (!r.valid()) return;  // an absent optional range
  if (r.file != gFile || r.begin > r.end || r.end > gSize) __builtin_trap();
}

void checkExpr(const Expr* e);

void checkName(const Name& n) {
  checkRange(n.range);
  for (const NamePart& p : n.parts) {
    checkRange(p.range);
    for (const ExprPtr& s : p.subscripts) checkExpr(s.get());
  }
}

void checkExpr(const Expr* e) {
  if (!e) return;
  checkRange(e->range);
  checkName(e->name);
  for (const ExprPtr& a : e->args) {
    if (!a) __builtin_trap();  // operands are never null
    checkExpr(a.get());
  }
  for (const NamedArg& a : e->namedArgs) {
    checkRange(a.nameRange);
    if (!a.value) __builtin_trap();
    checkExpr(a.value.get());
  }
  if ((e->kind == ExprKind::Binary && e->args.size() != 2) || (e->kind == ExprKind::Unary && e->args.size() != 1)) {
    __builtin_trap();
  }
}

void checkMods(const ClassModification& mods) {
  for (const Modification& m : mods) {
    checkRange(m.range);
    checkName(m.target);
    checkMods(m.nested);
    checkExpr(m.value.get());
  }
}

void checkEquation(const Equation& eq) {
  checkRange(eq.range);
  checkExpr(eq.lhs.get());
  checkExpr(eq.rhs.get());
  checkExpr(eq.iterRange.get());
  checkMods(eq.annotation.mods);
  for (const EquationPtr& b : eq.body) checkEquation(*b);
}

void checkStatement(const Statement& st) {
  checkRange(st.range);
  checkExpr(st.lhs.get());
  checkExpr(st.rhs.get());
  checkExpr(st.iterRange.get());
  for (const StatementPtr& b : st.body) checkStatement(*b);
}

void checkClass(const ClassDef& c) {
  checkRange(c.range);
  checkRange(c.nameRange);
  checkRange(c.endNameRange);
  if (c.shortBase) checkName(*c.shortBase);
  for (const ExprPtr& d : c.shortDims) checkExpr(d.get());
  checkMods(c.shortMods);
  for (const ImportClause& i : c.imports) checkName(i.path);
  for (const ExtendsClause& e : c.extends) {
    checkName(e.base);
    checkMods(e.mods);
  }
  for (const ComponentDecl& d : c.components) {
    checkRange(d.range);
    checkRange(d.nameRange);
    checkName(d.typeName);
    for (const ExprPtr& e : d.typeDims) checkExpr(e.get());
    for (const ExprPtr& e : d.dims) checkExpr(e.get());
    checkMods(d.mods);
    checkExpr(d.binding.get());
    checkMods(d.annotation.mods);
  }
  for (const ClassDefPtr& n : c.classes) checkClass(*n);
  for (const EquationPtr& e : c.equations) checkEquation(*e);
  for (const StatementPtr& s : c.algorithm) checkStatement(*s);
  if (c.external) {
    checkRange(c.external->range);
    checkExpr(c.external->output.get());
    for (const ExprPtr& a : c.external->args) checkExpr(a.get());
  }
  checkMods(c.annotation.mods);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  SourceManager sources;
  DiagnosticEngine diags;
  gSize = size;
  gFile = sources.add("fuzz.cap", std::string(reinterpret_cast<const char*>(data), size));
  const StoredDefinition def = parse(sources, gFile, diags);
  for (const ClassDefPtr& c : def.classes) checkClass(*c);
  if (def.within) checkName(*def.within);
  for (const Diagnostic& d : diags.diagnostics()) {
    checkRange(d.range);
    for (const Note& n : d.notes) checkRange(n.range);
  }
  if (diags.diagnostics().size() > DiagnosticEngine::kErrorLimit + 200) __builtin_trap();
  const std::string text = renderAll(diags, sources, RenderOptions{true, true});
  if (diags.hasErrors() && text.empty()) __builtin_trap();
  return 0;
}
