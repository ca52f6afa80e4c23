// FunctionBuilder's layout of a function's code: long statements wrapped,
// zero rows of an output vector set as one segment, matrix entries spelled
// for a quick parse.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "codegen/function_builder.hpp"
#include "symbolic/expr.hpp"

namespace {

using capstan::codegen::FunctionBuilder;
using namespace capstan::symbolic;

std::vector<std::string> lines(const std::string& code) {
  std::vector<std::string> out;
  std::istringstream in(code);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("a statement longer than 100 columns is broken after a + or -, as late as fits") {
  Pool pool;
  PoolScope scope(pool);
  // A sum of single-use products (within the printer's inline budget, so
  // one statement), far longer than a line.
  Expr sum(0.0);
  for (int k = 0; k < 11; ++k) {
    sum += Expr::symbol("params.a_rather_long_parameter_name_" + std::to_string(k)) *
           Expr::symbol("q[" + std::to_string(k) + "]");
  }
  FunctionBuilder fn("f", "void", "[[maybe_unused]] const Q& q, U& out", {"a test"});
  fn.block("one long sum", {{"out[0]", sum}});
  nlohmann::json f = fn.finish();
  FunctionBuilder::layOut(f);
  const std::vector<std::string> code = lines(f["blocks"][0]["code"].get<std::string>());
  REQUIRE(code.size() > 2);
  std::string joined;
  for (std::size_t i = 0; i < code.size(); ++i) {
    CHECK(code[i].size() <= 100);
    if (i == 0) {
      CHECK(code[i].rfind("    out[0] = ", 0) == 0);
      joined = code[i];
    } else {
      // indented 4 more than the statement (a sum nested in the sum in parentheses)
      CHECK(code[i].find_first_not_of(' ') == 8);
      CHECK(code[i].find("params.") <= 9);
      joined += " " + code[i].substr(8);
    }
    if (i + 1 < code.size()) CHECK(code[i].back() == '+');
  }
  // Nothing lost or reordered: one line is what the printer wrote.
  CHECK(joined == "    out[0] = " + CppPrinter().expression(sum) + ";");
}

TEST_CASE("zero rows of an output vector are set as one segment, other zeros stay stores") {
  Pool pool;
  PoolScope scope(pool);
  Expr q0 = Expr::symbol("q[0]");
  FunctionBuilder fn("f", "void", "[[maybe_unused]] const Q& q, PositionErrors& perr, BodyPoses& poses", {"a test"});
  fn.block("rows", {{"perr[0]", sin(q0)},
                    {"perr[1]", Expr(0.0)},
                    {"perr[2]", Expr(0.0)},
                    {"perr[3]", Expr(0.0)},
                    {"perr[4]", cos(q0)},
                    {"perr[5]", Expr(0.0)},
                    {"poses[0].p_WB[0]", Expr(0.0)},
                    {"poses[0].p_WB[1]", Expr(0.0)}});
  nlohmann::json f = fn.finish();
  FunctionBuilder::layOut(f);
  // (Each output's operands just before it: symbolic::scheduleStatements.)
  CHECK(f["blocks"][0]["code"].get<std::string>() ==
        "    const capstan_models::SinCos tsc0 = capstan_models::sinCos(q[0]);\n"
        "    const double t0 = tsc0.sin;\n"
        "    perr[0] = t0;\n"
        "    perr.segment<3>(1).setZero();\n"
        "    const double t1 = tsc0.cos;\n"
        "    perr[4] = t1;\n"
        "    perr[5] = 0.0;\n"
        "    poses[0].p_WB[0] = 0.0;\n"
        "    poses[0].p_WB[1] = 0.0;\n");
}

TEST_CASE("matrix entries are read as coeff(r, c) and stored as coeffRef(r, c)") {
  Pool pool;
  PoolScope scope(pool);
  const Expr q0 = Expr::symbol("q[0]"), q1 = Expr::symbol("q[1]");
  // Entries of a pose (an element of an array of structs) and of a
  // kinematics field are read as symbols.
  const Expr r = Expr::symbol("poses[2].R_WB(1, 0)"), k = Expr::symbol("k.R_WB[3](0, 2)");
  FunctionBuilder fn("f", "void", "[[maybe_unused]] const Q& q, MassMatrix& M, U& out", {"a test"});
  fn.block("entries", {{"M(0, 1)", q0 * q1 + r}, {"M(10, 12)", q0 * k}, {"out[0]", sin(q1) * r * k}});
  nlohmann::json f = fn.finish();
  FunctionBuilder::layOut(f);
  const std::string code = f["blocks"][0]["code"].get<std::string>();
  CHECK(code.find("    M.coeffRef(0, 1) = ") != std::string::npos);
  CHECK(code.find("    M.coeffRef(10, 12) = ") != std::string::npos);
  CHECK(code.find("poses[2].R_WB.coeff(1, 0)") != std::string::npos);
  CHECK(code.find("k.R_WB[3].coeff(0, 2)") != std::string::npos);
  // Nothing else is spelled as a call of two integers, and calls stay calls.
  CHECK(code.find("B(") == std::string::npos);
  CHECK(code.find("M(") == std::string::npos);
  CHECK(code.find("capstan_models::sinCos(q[1])") == std::string::npos);  // a sine alone
  CHECK(code.find("std::sin(q[1])") != std::string::npos);
}
