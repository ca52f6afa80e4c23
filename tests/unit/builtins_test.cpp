// The built-in function table (sema/builtins.hpp): every entry evaluated at
// compile time (sema), by the interpreter (FlatTranslator<double>) and by the
// tracer (FlatTranslator<symbolic::Expr>, evaluated numerically the way
// generated code computes), on the same arguments, edge cases included: the
// same value, or the same error (a located EvaluationFailed at compile time,
// a non-finite value at run time, which `capstan eval` reports; see
// tests/cli/run.py `builtins` for the generated code itself).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/flat_eval.hpp"
#include "sema/sema.hpp"
#include "symbolic/evaluate.hpp"

namespace {

using namespace capstan;

struct Case {
  std::string decls;   // parameter declarations: the arguments, as runtime parameters
  std::string call;    // the call, reading those parameters
  std::string shape;   // the result's dimensions, "" or "[3]" or "[3, 3]"
  std::string error;   // "" for a value; else part of the compile-time message
};

// `decls` declares parameters; the call is written twice: as the binding of
// a parameter (evaluated at compile time) and of an output (computed at run
// time: its arguments are runtime parameters, so nothing folds).
std::string modelText(const Case& c, bool compileTime) {
  std::string s = "model T\n" + c.decls + "\n";
  if (compileTime) s += "  parameter Real r" + c.shape + " = " + c.call + ";\n";
  else s += "  output Real r" + c.shape + " = " + c.call + ";\n";
  return s + "end T;\n";
}

struct Flat {
  syntax::SourceManager sources;
  syntax::DiagnosticEngine diags;
  std::optional<sema::FlatModel> model;
};

std::unique_ptr<Flat> flatten(const std::string& text) {
  auto f = std::make_unique<Flat>();
  sema::Library lib(f->sources, f->diags, {});
  const auto* def = lib.addText("t.cap", text);
  REQUIRE(def);
  f->model = sema::flatten(lib, "T");
  return f;
}

std::string messages(const Flat& f) {
  std::string s;
  for (const auto& d : f.diags.diagnostics()) s += d.message + "\n";
  return s;
}

bool finite(const std::vector<double>& xs) {
  for (double x : xs)
    if (!std::isfinite(x)) return false;
  return true;
}

void checkCase(const Case& c) {
  INFO(c.call);
  // Compile time.
  const auto ct = flatten(modelText(c, true));
  std::vector<double> compileValue;
  if (c.error.empty()) {
    INFO(messages(*ct));
    REQUIRE_FALSE(ct->diags.hasErrors());
    const sema::FlatVariable& r = ct->model->variables.at(static_cast<std::size_t>(ct->model->findVariable("r")));
    REQUIRE(r.value);
    CHECK(r.value->type == sema::ValueType::Real);
    compileValue = r.value->numbers;
  } else {
    REQUIRE(ct->diags.hasErrors());
    const auto& d = ct->diags.diagnostics().front();
    CHECK(d.kind == syntax::DiagKind::EvaluationFailed);
    CHECK(d.message.find(c.error) != std::string::npos);
    CHECK(d.range.valid());  // located: at the call
  }

  // Run time: the interpreter and the tracer on the same parameter values.
  const auto rt = flatten(modelText(c, false));
  INFO(messages(*rt));
  REQUIRE_FALSE(rt->diags.hasErrors());
  const sema::FlatModel& m = *rt->model;
  const sema::FlatVariable& out = m.variables.at(static_cast<std::size_t>(m.findVariable("r")));
  REQUIRE(out.kind == sema::VarKind::Output);
  REQUIRE(out.binding);
  auto value = [&](int v, int e) {
    const sema::FlatVariable& fv = m.variables.at(static_cast<std::size_t>(v));
    REQUIRE(fv.value);
    return fv.value->numbers.at(static_cast<std::size_t>(e));
  };
  const double time = 0.0;
  codegen::FlatTranslator<double> interpret(m, value, time);
  const std::vector<double> interpreted = interpret(*out.binding).data;

  symbolic::Pool pool;
  symbolic::PoolScope scope(pool);
  symbolic::Evaluator evaluator;
  auto symbol = [&](int v, int e) {
    const symbolic::Expr s = symbolic::Expr::symbol("p" + std::to_string(v) + "_" + std::to_string(e));
    evaluator.bind(s, value(v, e));
    return s;
  };
  const symbolic::Expr t = symbolic::Expr::symbol("time");
  evaluator.bind(t, time);
  codegen::FlatTranslator<symbolic::Expr> trace(m, symbol, t);
  const codegen::Tensor<symbolic::Expr> traced = trace(*out.binding);
  const std::vector<double> generated = evaluator(traced.data);

  REQUIRE(interpreted.size() == generated.size());
  if (c.error.empty()) {
    REQUIRE(compileValue.size() == interpreted.size());
    for (std::size_t k = 0; k < interpreted.size(); ++k) {
      CHECK(interpreted[k] == compileValue[k]);  // the same implementation on the same doubles
      CHECK(generated[k] == doctest::Approx(compileValue[k]).epsilon(1e-14));
    }
  } else {
    CHECK_FALSE(finite(interpreted));
    CHECK_FALSE(finite(generated));
  }
}

const std::string x = "  parameter Real x = ";
const std::string v3 = "  parameter Real v[3] = {3, -1, 2};\n  parameter Real w[3] = {0.5, 4, -1};";

std::vector<Case> cases() {
  return {
      {x + "0.7;", "sin(x)", "", ""},
      {x + "0.7;", "cos(x)", "", ""},
      {x + "0.7;", "tan(x)", "", ""},
      {x + "0.5;", "asin(x)", "", ""},
      {x + "-1;", "asin(x)", "", ""},
      {x + "1.5;", "asin(x)", "", "`asin` of 1.5 is undefined"},
      {x + "1;", "acos(x)", "", ""},
      {x + "-1.0000001;", "acos(x)", "", "`acos` of -1.0000001 is undefined"},
      {x + "2;", "atan(x)", "", ""},
      {x + "0.3;", "sinh(x)", "", ""},
      {x + "-2;", "cosh(x)", "", ""},
      {x + "0.5;", "tanh(x)", "", ""},
      {x + "800;", "tanh(x)", "", ""},
      {x + "-800;", "tanh(x)", "", ""},
      {x + "710;", "sinh(x)", "", "`sinh` of 710 is not a finite number"},
      {x + "4;", "sqrt(x)", "", ""},
      {x + "0;", "sqrt(x)", "", ""},
      {x + "-1;", "sqrt(x)", "", "`sqrt` of -1 is undefined"},
      {x + "1;", "exp(x)", "", ""},
      {x + "1000;", "exp(x)", "", "`exp` of 1000 is not a finite number"},
      {x + "2.5;", "log(x)", "", ""},
      {x + "0;", "log(x)", "", "`log` of 0 is undefined"},
      {x + "-1;", "log(x)", "", "`log` of -1 is undefined"},
      {x + "1000;", "log10(x)", "", ""},
      {x + "-2;", "abs(x)", "", ""},
      {x + "-3;", "sign(x)", "", ""},
      {x + "0;", "sign(x)", "", ""},
      {x + "2.5;", "sign(x)", "", ""},
      {x + "1;\n  parameter Real y = -1;", "atan2(x, y)", "", ""},
      {x + "0;\n  parameter Real y = 0;", "atan2(x, y)", "", ""},
      {x + "2;\n  parameter Real y = 3;", "min(x, y)", "", ""},
      {x + "2;\n  parameter Real y = 3;", "max(x, y)", "", ""},
      {v3, "min(v)", "", ""},
      {v3, "max(w)", "", ""},
      {v3, "sum(v)", "", ""},
      {v3, "cross(v, w)", "[3]", ""},
      {v3, "norm(v)", "", ""},
      {"  parameter Real v[3] = {0, 0, 0};", "norm(v)", "", ""},
      {v3, "normalize(v)", "[3]", ""},
      {"  parameter Real v[3] = {0, 0, 0};", "normalize(v)", "[3]", "`normalize` of a zero vector"},
      {"  parameter Real M[2, 3] = {{1, 2, 3}, {4, 5, 6}};", "transpose(M)", "[3, 2]", ""},
      {v3, "diagonal(v)", "[3, 3]", ""},
      {v3, "skew(v)", "[3, 3]", ""},
      // Constructors and size: constants once sema has checked them.
      {v3, "identity(3) * v", "[3]", ""},
      {v3, "zeros(3) + v", "[3]", ""},
      {v3, "ones(2, 3) * v", "[2]", ""},
      {x + "1.5;", "fill(x, 2)", "[2]", ""},
      {v3, "size(v, 1) * v", "[3]", ""},
  };
}

}  // namespace

TEST_CASE("every built-in: the same value or the same error at compile time, interpreted and traced") {
  std::set<std::string> covered;
  for (const Case& c : cases()) {
    checkCase(c);
    covered.insert(c.call.substr(0, c.call.find('(')));
  }
  for (const auto& f : sema::builtins::kTable) {
    INFO(f.name);
    CHECK(covered.count(std::string(f.name)) == 1);
  }
}

TEST_CASE("sign is Real everywhere") {
  const auto f = flatten("model T\n  parameter Integer k = sign(-3);\nend T;\n");
  CHECK(f->diags.hasErrors());  // a Real does not bind an Integer
  const auto g = flatten("model T\n  parameter Real s = sign(-3);\nend T;\n");
  REQUIRE_FALSE(g->diags.hasErrors());
  const auto& s = g->model->variables.at(static_cast<std::size_t>(g->model->findVariable("s")));
  REQUIRE(s.value);
  CHECK(s.value->type == sema::ValueType::Real);
  CHECK(s.value->scalar() == -1.0);
}

TEST_CASE("a built-in call in the flat model carries its table entry, not a name to look up") {
  const auto f = flatten("model T\n  parameter Real x = 2;\n  output Real y = sqrt(x) + 1;\nend T;\n");
  REQUIRE_FALSE(f->diags.hasErrors());
  const auto& y = f->model->variables.at(static_cast<std::size_t>(f->model->findVariable("y")));
  REQUIRE(y.binding);
  REQUIRE(y.binding->kind == sema::FlatExprKind::Binary);
  CHECK(y.binding->op == sema::FlatOp::Add);
  const auto& call = *y.binding->args.at(0);
  REQUIRE(call.kind == sema::FlatExprKind::Call);
  REQUIRE(call.builtin);
  CHECK(call.builtin->id == sema::builtins::Id::Sqrt);
}

TEST_CASE("docs/language.md lists every built-in of the table") {
  std::ifstream in(std::string(CAPSTAN_SOURCE_DIR) + "/docs/language.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const auto begin = doc.find("## Built-in functions and constants");
  REQUIRE(begin != std::string::npos);
  const std::string section = doc.substr(begin, doc.find("\n## ", begin + 1) - begin);
  for (const auto& f : sema::builtins::kTable) {
    INFO(f.name);
    const std::string name(f.name);
    // In the table's first column: `name(`, or a name in a backquoted list.
    CHECK((section.find("`" + name + "(") != std::string::npos || section.find(" " + name + " ") != std::string::npos ||
           section.find("`" + name + " ") != std::string::npos || section.find(" " + name + "`") != std::string::npos));
  }
}
