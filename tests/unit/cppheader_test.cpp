// Checking `external "C++"` declarations against their header
// (compiler/cppheader/check.hpp). Each case writes a small header into a
// fresh temporary folder and parses it with the real Clang and libstdc++.
#include "cppheader/check.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using capstan::cppheader::Check;
using capstan::cppheader::checkHeader;
using capstan::cppheader::Kind;
using capstan::cppheader::Signature;
using capstan::cppheader::Verdict;

namespace {

constexpr Kind R = Kind::Real;
constexpr Kind I = Kind::Integer;
constexpr Kind B = Kind::Boolean;

// A temporary include directory, removed with its headers at scope exit.
class IncludeDir {
 public:
  IncludeDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("capstan_cppheader_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~IncludeDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  IncludeDir(const IncludeDir&) = delete;
  IncludeDir& operator=(const IncludeDir&) = delete;

  void write(const std::string& name, const std::string& text) const { std::ofstream(path_ / name) << text; }
  std::string str() const { return path_.string(); }

  // Checks `signatures` against `#include "name"` after writing `text` there.
  std::vector<Check> check(const std::string& name, const std::string& text,
                           const std::vector<Signature>& signatures) const {
    write(name, text);
    return checkHeader("#include \"" + name + "\"", {str()}, signatures);
  }
  Check checkOne(const std::string& name, const std::string& text, const Signature& signature) const {
    return check(name, text, {signature}).at(0);
  }

 private:
  std::filesystem::path path_;
};

std::string verdict(const Check& check) { return std::string(capstan::cppheader::name(check.verdict)); }

}  // namespace

TEST_CASE("a matching function is Ok and reported as declared") {
  IncludeDir dir;
  const Check c = dir.checkOne("friction.hpp",
                               "#pragma once\n"
                               "namespace mylib {\n"
                               "double friction(double w, double mu);\n"
                               "}\n",
                               {"mylib::friction", {R, R}, R});
  INFO(c.detail);
  CHECK(verdict(c) == "Ok");
  REQUIRE(c.candidates.size() == 1);
  CHECK(c.candidates[0].declaration == "double mylib::friction(double w, double mu)");
  CHECK(c.candidates[0].file == dir.str() + "/friction.hpp");
  CHECK(c.candidates[0].line == 3);
  CHECK(c.candidates[0].mismatch.empty());
  CHECK(c.detail.empty());
}

TEST_CASE("the type rules for Real, Integer and Boolean parameters and results") {
  IncludeDir dir;
  const std::string header =
      "using Real = double;\n"
      "typedef Real scalar_t;\n"
      "Real byAlias(const scalar_t& x, const float y, long double z);\n"  // 3
      "float shortResult(double x);\n"
      "const double& refResult(double x);\n"
      "long count(int n, double x, unsigned char c);\n"  // Integer takes floating too
      "bool flag(const bool& b);\n"
      "double writes(double& x);\n"                        // 8
      "double pointer(const double* x);\n"
      "double moves(double&& x);\n"
      "double notBool(bool b);\n"
      "double boolIsNoInteger(bool n);\n"
      "enum Mode { slow, fast };\n"
      "double noEnum(Mode m);\n"
      "void nothing(double x);\n"
      "bool boolResult(double x);\n"
      "double realForBool(double x);\n"
      "double& mutableResult(double x);\n"
      "int intResult(double x);\n";
  const std::vector<Check> c = dir.check("rules.hpp", header,
                                         {
                                             {"byAlias", {R, R, R}, R},       // 0
                                             {"shortResult", {R}, R},         // 1
                                             {"refResult", {R}, R},           // 2
                                             {"count", {I, I, I}, I},         // 3
                                             {"flag", {B}, B},                // 4
                                             {"writes", {R}, R},              // 5
                                             {"pointer", {R}, R},             // 6
                                             {"moves", {R}, R},               // 7
                                             {"notBool", {R}, R},             // 8
                                             {"boolIsNoInteger", {I}, R},     // 9
                                             {"noEnum", {I}, R},              // 10
                                             {"nothing", {R}, R},             // 11
                                             {"boolResult", {R}, I},          // 12
                                             {"realForBool", {R}, B},         // 13
                                             {"mutableResult", {R}, R},       // 14
                                             {"intResult", {R}, R},           // 15
                                             {"intResult", {R}, I},           // 16
                                         });
  REQUIRE(c.size() == 17);
  for (int i : {0, 1, 2, 3, 4, 16}) {
    INFO(i << ": " << c[i].detail);
    CHECK(verdict(c[i]) == "Ok");
  }
  for (int i : {5, 6, 7, 8, 9, 10}) {
    INFO(i << ": " << c[i].detail);
    CHECK(verdict(c[i]) == "WrongParameterType");
    CHECK(c[i].parameter == 0);
  }
  CHECK(c[5].detail.find("non-const reference") != std::string::npos);
  CHECK(c[7].detail.find("rvalue reference") != std::string::npos);
  CHECK(c[5].candidates.at(0).mismatch.find("`double &`") != std::string::npos);
  for (int i : {11, 12, 13, 14, 15}) {
    INFO(i << ": " << c[i].detail);
    CHECK(verdict(c[i]) == "WrongResultType");
    CHECK(c[i].parameter == -1);
  }
  CHECK(c[11].detail == "`nothing` cannot be called as (Real) -> Real: it returns `void`, not a Real; "
                        "expected `double`, `float` or `long double`, by value or `const&`");
}

TEST_CASE("the parameter index names the C++ parameter that does not fit") {
  IncludeDir dir;
  const Check c = dir.checkOne("second.hpp", "double law(double w, double* mu, double k);\n", {"law", {R, R, R}, R});
  CHECK(verdict(c) == "WrongParameterType");
  CHECK(c.parameter == 1);
  CHECK(c.detail.find("parameter 2 `mu`") != std::string::npos);
}

TEST_CASE("arity, default arguments and C variadic functions") {
  IncludeDir dir;
  const std::vector<Check> c = dir.check("arity.hpp",
                                         "double two(double a, double b);\n"
                                         "double defaulted(double a, double b = 0.5, double c = 2);\n"
                                         "double varargs(double a, ...);\n",
                                         {
                                             {"two", {R}, R},                   // 0
                                             {"two", {R, R, R}, R},             // 1
                                             {"defaulted", {R}, R},             // 2
                                             {"defaulted", {R, R, R}, R},       // 3
                                             {"defaulted", {}, R},              // 4
                                             {"varargs", {R}, R},               // 5
                                             {"varargs", {R, R}, R},            // 6
                                         });
  REQUIRE(c.size() == 7);
  CHECK(verdict(c[0]) == "WrongArity");
  CHECK(c[0].detail == "`two` cannot be called as (Real) -> Real: it takes 2 arguments, 1 given");
  CHECK(verdict(c[1]) == "WrongArity");
  CHECK(verdict(c[2]) == "Ok");
  CHECK(verdict(c[3]) == "Ok");
  CHECK(verdict(c[4]) == "WrongArity");
  CHECK(c[4].detail.find("takes 1 to 3 arguments, 0 given") != std::string::npos);
  CHECK(c[2].candidates.at(0).declaration == "double defaulted(double a, double b = 0.5, double c = 2)");
  CHECK(verdict(c[5]) == "Ok");
  CHECK(c[5].candidates.at(0).declaration == "double varargs(double a, ...)");
  CHECK(verdict(c[6]) == "WrongArity");
  CHECK(c[6].detail.find("`...`") != std::string::npos);
}

TEST_CASE("names: namespaces, inline namespaces, aliases, extern \"C\", leading ::") {
  IncludeDir dir;
  const std::vector<Check> c = dir.check("names.hpp",
                                         "namespace a { namespace b { double f(double); } }\n"
                                         "namespace a::b { double g(double); }\n"  // reopened
                                         "namespace lib { inline namespace v2 { double h(double); } }\n"
                                         "namespace short_name = a::b;\n"
                                         "extern \"C\" { double c_law(double x); }\n"
                                         "namespace wrap { extern \"C\" double c_wrapped(double x); }\n"
                                         "namespace detail { double hidden(double); }\n"
                                         "namespace api { using namespace detail; using detail::hidden; }\n"
                                         "double global(double);\n",
                                         {
                                             {"a::b::f", {R}, R},             // 0
                                             {"::a::b::g", {R}, R},           // 1
                                             {"lib::h", {R}, R},              // 2
                                             {"lib::v2::h", {R}, R},          // 3
                                             {"short_name::f", {R}, R},       // 4
                                             {"c_law", {R}, R},               // 5
                                             {"::c_law", {R}, R},             // 6
                                             {"wrap::c_wrapped", {R}, R},     // 7
                                             {"api::hidden", {R}, R},         // 8
                                             {"global", {R}, R},              // 9
                                             {" a :: b :: f ", {R}, R},       // 10
                                         });
  REQUIRE(c.size() == 11);
  for (std::size_t i = 0; i < c.size(); ++i) {
    INFO(i << ": " << c[i].detail);
    CHECK(verdict(c[i]) == "Ok");
    CHECK(c[i].candidates.size() == 1);
  }
  CHECK(c[2].candidates.at(0).declaration == "double lib::v2::h(double)");
  CHECK(c[5].candidates.at(0).line == 5);
}

TEST_CASE("names that find nothing callable") {
  IncludeDir dir;
  const std::vector<Check> c = dir.check("missing.hpp",
                                         "namespace mylib { double friction(double); extern double gain; }\n",
                                         {
                                             {"mylib::drag", {R}, R},
                                             {"other::friction", {R}, R},
                                             {"mylib::gain", {R}, R},
                                             {"mylib::friction<double>", {R}, R},
                                             {"friction", {R}, R},
                                         });
  REQUIRE(c.size() == 5);
  for (const Check& each : c) {
    INFO(each.detail);
    CHECK(verdict(each) == "NotFound");
    CHECK(each.candidates.empty());
  }
  CHECK(c[0].detail == "no `mylib::drag` in the header");
  CHECK(c[1].detail == "no namespace or class `other` in the header");
  CHECK(c[2].detail == "`mylib::gain` names a variable, not a function");
  CHECK(c[3].detail == "`mylib::friction<double>` is not a C++ qualified name");
}

TEST_CASE("static member functions are found; other members never fit") {
  IncludeDir dir;
  const std::vector<Check> c = dir.check("members.hpp",
                                         "namespace mylib {\n"
                                         "struct Base { static double inherited(double w); };\n"
                                         "class Friction : public Base {\n"
                                         " public:\n"
                                         "  static double eval(double w, double mu);\n"
                                         "  double member(double w) const;\n"
                                         " private:\n"
                                         "  static double secret(double w);\n"
                                         "};\n"
                                         "using Alias = Friction;\n"
                                         "}\n",
                                         {
                                             {"mylib::Friction::eval", {R, R}, R},       // 0
                                             {"mylib::Alias::eval", {R, R}, R},          // 1
                                             {"mylib::Friction::inherited", {R}, R},     // 2
                                             {"mylib::Friction::member", {R}, R},        // 3
                                             {"mylib::Friction::secret", {R}, R},        // 4
                                         });
  REQUIRE(c.size() == 5);
  for (int i : {0, 1, 2}) {
    INFO(i << ": " << c[i].detail);
    CHECK(verdict(c[i]) == "Ok");
  }
  CHECK(c[0].candidates.at(0).declaration == "double mylib::Friction::eval(double w, double mu)");
  CHECK(c[0].candidates.at(0).line == 5);
  CHECK(verdict(c[3]) == "NoMatchingOverload");
  CHECK(c[3].detail.find("non-static member function") != std::string::npos);
  CHECK(verdict(c[4]) == "NoMatchingOverload");
  CHECK(c[4].detail.find("private") != std::string::npos);
}

TEST_CASE("overload sets: one fits, none fits, two fit") {
  IncludeDir dir;
  const std::vector<Check> c = dir.check("overloads.hpp",
                                         "namespace ov {\n"
                                         "double one(double x);\n"
                                         "double one(bool x);\n"
                                         "double one(double x, double y);\n"
                                         "double none(double* x);\n"
                                         "double none(double x, double y);\n"
                                         "double two(double x);\n"
                                         "double two(float x);\n"
                                         "}\n",
                                         {
                                             {"ov::one", {R}, R},
                                             {"ov::one", {B}, R},
                                             {"ov::none", {R}, R},
                                             {"ov::two", {R}, R},
                                         });
  REQUIRE(c.size() == 4);
  CHECK(verdict(c[0]) == "Ok");
  REQUIRE(c[0].candidates.size() == 3);
  CHECK(c[0].candidates[0].mismatch.empty());
  CHECK(!c[0].candidates[1].mismatch.empty());
  CHECK(!c[0].candidates[2].mismatch.empty());
  CHECK(verdict(c[1]) == "Ok");
  CHECK(c[1].candidates[1].mismatch.empty());

  CHECK(verdict(c[2]) == "NoMatchingOverload");
  CHECK(c[2].detail == "none of the 2 declarations of `ov::none` can be called as (Real) -> Real");
  REQUIRE(c[2].candidates.size() == 2);
  CHECK(c[2].candidates[0].declaration == "double ov::none(double *x)");
  CHECK(c[2].candidates[0].line == 5);
  CHECK(c[2].candidates[1].line == 6);
  CHECK(c[2].candidates[1].mismatch == "it takes 2 arguments, 1 given");

  CHECK(verdict(c[3]) == "AmbiguousOverload");
  CHECK(c[3].candidates.size() == 2);
  CHECK(c[3].detail.find("2 declarations") == 0);
}

TEST_CASE("using-directives: functions from two namespaces overload; a clash is ambiguous") {
  IncludeDir dir;
  const std::vector<Check> c = dir.check("directives.hpp",
                                         "namespace x { double f(double); double g(double); }\n"
                                         "namespace y { double f(bool); int g; }\n"
                                         "namespace api { using namespace x; using namespace y; }\n",
                                         {{"api::f", {R}, R}, {"api::f", {B}, R}, {"api::g", {R}, R}});
  REQUIRE(c.size() == 3);
  CHECK(verdict(c[0]) == "Ok");
  CHECK(c[0].candidates.size() == 2);
  CHECK(verdict(c[1]) == "Ok");
  CHECK(verdict(c[2]) == "AmbiguousOverload");
  CHECK(c[2].detail == "`api::g` is ambiguous in C++: it names declarations in more than one scope");
}

TEST_CASE("function templates are found but not supported") {
  IncludeDir dir;
  const std::vector<Check> c = dir.check("templates.hpp",
                                         "namespace t {\n"
                                         "template <typename T> T law(T x) { return x; }\n"
                                         "double mixed(double x);\n"
                                         "template <typename T> double mixed(T x, T y);\n"
                                         "}\n",
                                         {{"t::law", {R}, R}, {"t::mixed", {R}, R}});
  REQUIRE(c.size() == 2);
  CHECK(verdict(c[0]) == "NoMatchingOverload");
  REQUIRE(c[0].candidates.size() == 1);
  CHECK(c[0].candidates[0].declaration == "template <typename T> T t::law(T x)");
  CHECK(c[0].candidates[0].line == 2);
  CHECK(c[0].detail.find("function template") != std::string::npos);
  // Next to a plain overload that fits, the template is just another candidate.
  CHECK(verdict(c[1]) == "Ok");
  CHECK(c[1].candidates.size() == 2);
}

TEST_CASE("a header that is missing is a HeaderError for every signature") {
  IncludeDir dir;
  const std::vector<Check> c =
      checkHeader("#include \"absent.hpp\"", {dir.str()}, {{"f", {R}, R}, {"g", {R}, R}});
  REQUIRE(c.size() == 2);
  for (const Check& each : c) {
    CHECK(verdict(each) == "HeaderError");
    CHECK(each.detail == "'absent.hpp' file not found");
  }
}

TEST_CASE("a header with a C++ error is a HeaderError naming its line") {
  IncludeDir dir;
  dir.write("inner.hpp", "#pragma once\nint fine();\nint broken(double x;\n");
  const Check c = dir.checkOne("outer.hpp", "#include \"inner.hpp\"\ndouble f(double);\n", {"f", {R}, R});
  CHECK(verdict(c) == "HeaderError");
  INFO(c.detail);
  CHECK(c.detail.find(dir.str() + "/inner.hpp:3:") == 0);
  CHECK(c.detail.find("expected") != std::string::npos);
}

TEST_CASE("headers that use the C++ standard library parse (libstdc++ and Clang's own headers are found)") {
  IncludeDir dir;
  const Check c = dir.checkOne("stdlib.hpp",
                               "#pragma once\n"
                               "#include <cmath>\n"
                               "#include <cstddef>\n"
                               "#include <stdexcept>\n"
                               "#include <string>\n"
                               "namespace mylib {\n"
                               "inline double friction(double w, double mu) {\n"
                               "  if (mu < 0) throw std::invalid_argument(\"mu < 0\");\n"
                               "  return mu * std::tanh(w / 1e-3);\n"
                               "}\n"
                               "}\n",
                               {"mylib::friction", {R, R}, R});
  INFO(c.detail);
  CHECK(verdict(c) == "Ok");
}

TEST_CASE("several lines of Include annotation and several include directories") {
  IncludeDir first;
  IncludeDir second;
  first.write("a.hpp", "double fa(double);\n");
  second.write("b.hpp", "double fb(double);\n");
  const std::vector<Check> c = checkHeader("#include \"a.hpp\"\n#include \"b.hpp\"", {first.str(), second.str()},
                                           {{"fa", {R}, R}, {"fb", {R}, R}});
  REQUIRE(c.size() == 2);
  CHECK(verdict(c[0]) == "Ok");
  CHECK(verdict(c[1]) == "Ok");
}

TEST_CASE("time to parse a header (printed, not asserted)") {
  IncludeDir dir;
  dir.write("small.hpp", "double f(double);\n");
  dir.write("stdlib.hpp", "#include <cmath>\n#include <stdexcept>\n#include <string>\ndouble f(double);\n");
  for (const std::string header : {"small.hpp", "stdlib.hpp"}) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Check> c = checkHeader("#include \"" + header + "\"", {dir.str()}, {{"f", {R}, R}});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    CHECK(verdict(c.at(0)) == "Ok");
    MESSAGE("parse and check of " << header << ": " << ms << " ms");
  }
}
