// `capstan test`'s comparison of a result with its reference (docs/testing.md):
// every signal of the result must stay inside a tube around the reference,
// as Modelica's reference-result tools (csv-compare) check.
//
// The tube at a result sample t is
//
//   [ min y_ref(W) - dy,  max y_ref(W) + dy ],   W = [t - dt, t + dt]
//
// where y_ref is the reference interpolated linearly between its samples (so
// the grids may differ), dy = max(absTol, relTol * max |y_ref|) over the whole
// run, and dt = timeTol * (duration of the reference). Around a step in the
// reference (a segment whose change exceeds dy and 5 times each neighbour's)
// W also covers the whole step segment, so a step that lands one output
// interval earlier or later stays inside.
#pragma once

#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace capstan::cli {

struct Csv {
  std::vector<std::string> names;            // header after `time`
  std::vector<double> time;
  std::vector<std::vector<double>> columns;  // per name, one value per time
  int column(const std::string& name) const;
};

// Reads a CSV as `capstan simulate` writes it: a header starting with `time`,
// then numbers, times nondecreasing; with `finite`, every value finite (a
// reference: `nan` there would make a tube of NaN that nothing fails).
// nullopt and `error` (with the line) when it is not.
std::optional<Csv> readCsv(const std::string& path, std::string& error, bool finite = false);
// The same from a stream; `path` names it in `error`.
std::optional<Csv> readCsv(std::istream& in, const std::string& path, std::string& error, bool finite = false);

struct Tolerances {
  double rel = 1e-3;   // of the signal's largest magnitude in the reference
  double abs = 1e-6;   // the least value half-width
  double time = 1e-3;  // time half-width, of the reference's duration
};

struct SignalComparison {
  bool pass = true;
  double firstExit = 0;          // time the result first leaves the tube
  double firstValue = 0, firstReference = 0, firstLow = 0, firstHigh = 0;
  double worst = 0;              // largest distance outside the tube
  double worstTime = 0;
  double valueTolerance = 0;     // dy
  double timeTolerance = 0;      // dt
  // For the plot: the tube at the result's samples.
  std::vector<double> low, high;
};

// Compares result column `r` of `result` with reference column `f` over the
// times both cover.
SignalComparison compareSignal(const Csv& result, int r, const Csv& reference, int f, const Tolerances& tol);

// An SVG plot of one signal: the tube (shaded), the reference and the result,
// and a marker where the result first leaves the tube.
std::string plotSvg(const std::string& title, const Csv& result, int r, const Csv& reference, int f,
                    const SignalComparison& cmp);

}  // namespace capstan::cli
