// The tolerance tube of `capstan test` (compiler/cli/tube.hpp).
#include "cli/tube.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

using capstan::cli::compareSignal;
using capstan::cli::Csv;
using capstan::cli::readCsv;
using capstan::cli::Tolerances;

namespace {

// One signal `y` sampled at t = 0, h, 2h, ..., tEnd.
template <class F>
Csv sampled(double h, double tEnd, F&& f) {
  Csv c;
  c.names = {"y"};
  c.columns.resize(1);
  const int n = static_cast<int>(std::lround(tEnd / h));
  for (int k = 0; k <= n; ++k) {
    const double t = k * h;
    c.time.push_back(t);
    c.columns[0].push_back(f(t));
  }
  return c;
}

std::filesystem::path writeTemp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("tube: a result equal to its reference passes, on any grid") {
  auto f = [](double t) { return std::sin(3 * t); };
  const Csv reference = sampled(0.03, 3.0, f);
  const Csv result = sampled(0.01, 3.0, f);
  const auto cmp = compareSignal(result, 0, reference, 0, Tolerances{});
  CHECK(cmp.pass);
  // dy = relTol * max|y| (max |sin| on the 0.03 grid is just under 1).
  CHECK(cmp.valueTolerance == doctest::Approx(1e-3).epsilon(1e-3));
  CHECK(cmp.timeTolerance == doctest::Approx(3e-3));
}

TEST_CASE("tube: an offset beyond dy fails where it starts, with the worst deviation") {
  const Csv reference = sampled(0.01, 1.0, [](double) { return 2.0; });
  const Csv result = sampled(0.01, 1.0, [](double t) { return t >= 0.5 ? 2.01 : 2.0; });
  const auto cmp = compareSignal(result, 0, reference, 0, Tolerances{});
  CHECK_FALSE(cmp.pass);
  CHECK(cmp.firstExit == doctest::Approx(0.5));
  CHECK(cmp.firstValue == doctest::Approx(2.01));
  CHECK(cmp.firstLow == doctest::Approx(1.998));
  CHECK(cmp.firstHigh == doctest::Approx(2.002));
  CHECK(cmp.worst == doctest::Approx(0.008));
}

TEST_CASE("tube: absTol is the least half-width of a signal near zero") {
  const Csv reference = sampled(0.1, 1.0, [](double) { return 0.0; });
  const Csv inside = sampled(0.1, 1.0, [](double) { return 5e-7; });
  const Csv outside = sampled(0.1, 1.0, [](double) { return 2e-6; });
  CHECK(compareSignal(inside, 0, reference, 0, Tolerances{}).pass);
  CHECK_FALSE(compareSignal(outside, 0, reference, 0, Tolerances{}).pass);
  Tolerances loose;
  loose.abs = 1e-5;
  CHECK(compareSignal(outside, 0, reference, 0, loose).pass);
}

TEST_CASE("tube: a shift in time within timeTol passes; a larger one fails") {
  // Flat, then a ramp from t = 0.3 (+ shift): the ends of the run are alike.
  auto ramp = [](double shift) { return [shift](double t) { return 10 * std::max(0.0, t - 0.3 - shift); }; };
  const Csv reference = sampled(0.01, 1.0, ramp(0));
  Tolerances tol;
  tol.rel = 0;
  tol.abs = 1e-9;
  tol.time = 0.005;  // 5 ms of a 1 s run
  CHECK(compareSignal(sampled(0.01, 1.0, ramp(0.004)), 0, reference, 0, tol).pass);
  CHECK_FALSE(compareSignal(sampled(0.01, 1.0, ramp(0.006)), 0, reference, 0, tol).pass);
}

TEST_CASE("tube: a step between the samples of a coarser reference grid stays inside") {
  auto step = [](double at) { return [at](double t) { return t > at ? 1.0 : 0.0; }; };
  const Csv reference = sampled(0.05, 1.0, step(0.505));  // the step between 0.5 and 0.55
  const Csv result = sampled(0.01, 1.0, step(0.505));     // the step between 0.50 and 0.51
  CHECK(compareSignal(result, 0, reference, 0, Tolerances{}).pass);
  // A step a whole reference segment later does not.
  const auto late = compareSignal(sampled(0.01, 1.0, step(0.605)), 0, reference, 0, Tolerances{});
  CHECK_FALSE(late.pass);
  CHECK(late.firstExit == doctest::Approx(0.56));
}

TEST_CASE("tube: a non-finite value is outside") {
  const Csv reference = sampled(0.1, 1.0, [](double t) { return t; });
  Csv result = reference;
  result.columns[0][4] = std::numeric_limits<double>::quiet_NaN();
  const auto cmp = compareSignal(result, 0, reference, 0, Tolerances{});
  CHECK_FALSE(cmp.pass);
  CHECK(cmp.firstExit == doctest::Approx(0.4));
  CHECK(std::isinf(cmp.worst));
}

TEST_CASE("readCsv: capstan's CSV, and located errors for others") {
  std::string error;
  const auto ok = readCsv(writeTemp("capstan_tube_ok.csv", "time,a,b\n0,1,2\n0.5,3,4\r\n").string(), error);
  REQUIRE(ok);
  CHECK(ok->names == std::vector<std::string>{"a", "b"});
  CHECK(ok->time == std::vector<double>{0, 0.5});
  CHECK(ok->columns[1] == std::vector<double>{2, 4});
  CHECK(ok->column("b") == 1);
  CHECK(ok->column("c") == -1);

  const auto path = writeTemp("capstan_tube_bad.csv", "time,a\n0,1\n1,x\n");
  CHECK_FALSE(readCsv(path.string(), error));
  CHECK(error == path.string() + ":3: `x` is not a number");
  CHECK_FALSE(readCsv(writeTemp("capstan_tube_short.csv", "time,a\n0,1,2\n").string(), error));
  CHECK(error.find(":2: has 3 values; the header has 2") != std::string::npos);
  CHECK_FALSE(readCsv(writeTemp("capstan_tube_back.csv", "time,a\n1,1\n0,1\n").string(), error));
  CHECK(error.find(":3: the time goes back") != std::string::npos);
  CHECK_FALSE(readCsv(writeTemp("capstan_tube_header.csv", "t,a\n0,1\n").string(), error));
  CHECK(error.find(":1: the header must start with `time`") != std::string::npos);
  // A reference's values must be finite; a result's may not be (the tube fails them).
  const auto nan = writeTemp("capstan_tube_nan.csv", "time,a\n0,1\n1,nan\n2,inf\n");
  CHECK(readCsv(nan.string(), error));
  CHECK_FALSE(readCsv(nan.string(), error, true));
  CHECK(error == nan.string() + ":3: `nan` is not a finite number");
  CHECK_FALSE(readCsv("/nonexistent/capstan.csv", error));
  CHECK(error == "cannot read `/nonexistent/capstan.csv`");
}
