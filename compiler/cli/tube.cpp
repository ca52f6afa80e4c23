#include "cli/tube.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace capstan::cli {

namespace {

std::vector<std::string> splitComma(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// The reference, linear between samples, at t (clamped to its range).
double interpolate(const std::vector<double>& t, const std::vector<double>& y, double at) {
  if (at <= t.front()) return y.front();
  if (at >= t.back()) return y.back();
  const auto k = static_cast<std::size_t>(std::upper_bound(t.begin(), t.end(), at) - t.begin());  // t[k-1] <= at < t[k]
  const double t0 = t[k - 1], t1 = t[k];
  if (t1 == t0) return y[k];
  const double s = (at - t0) / (t1 - t0);
  return y[k - 1] + s * (y[k] - y[k - 1]);
}

}  // namespace

int Csv::column(const std::string& name) const {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

std::optional<Csv> readCsv(const std::string& path, std::string& error, bool finite) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read `" + path + "`";
    return std::nullopt;
  }
  return readCsv(in, path, error, finite);
}

std::optional<Csv> readCsv(std::istream& in, const std::string& path, std::string& error, bool finite) {
  Csv csv;
  std::string line;
  long lineNo = 0;
  auto bad = [&](const std::string& why) {
    error = path + ":" + std::to_string(lineNo) + ": " + why;
    return std::nullopt;
  };
  if (!std::getline(in, line)) {
    lineNo = 1;
    return bad("empty; expected a header starting with `time`");
  }
  lineNo = 1;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> header = splitComma(line);
  if (header.empty() || header[0] != "time") return bad("the header must start with `time`");
  csv.names.assign(header.begin() + 1, header.end());
  csv.columns.resize(csv.names.size());
  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::vector<std::string> cells = splitComma(line);
    if (cells.size() != header.size())
      return bad("has " + std::to_string(cells.size()) + " values; the header has " + std::to_string(header.size()));
    std::vector<double> row;
    for (const std::string& cell : cells) {
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (cell.empty() || *end != '\0') return bad("`" + cell + "` is not a number");
      if (finite && !std::isfinite(v)) return bad("`" + cell + "` is not a finite number");
      row.push_back(v);
    }
    if (!std::isfinite(row[0])) return bad("the time is not finite");
    if (!csv.time.empty() && row[0] < csv.time.back()) return bad("the time goes back");
    csv.time.push_back(row[0]);
    for (std::size_t c = 1; c < row.size(); ++c) csv.columns[c - 1].push_back(row[c]);
  }
  if (csv.time.empty()) return bad("no rows");
  return csv;
}

SignalComparison compareSignal(const Csv& result, int r, const Csv& reference, int f, const Tolerances& tol) {
  SignalComparison cmp;
  const std::vector<double>& tr = reference.time;
  const std::vector<double>& yr = reference.columns[static_cast<std::size_t>(f)];
  const std::vector<double>& y = result.columns[static_cast<std::size_t>(r)];
  const std::size_t n = tr.size();

  double magnitude = 0;
  for (double v : yr)
    if (std::isfinite(v)) magnitude = std::max(magnitude, std::abs(v));
  const double dy = std::max(tol.abs, tol.rel * magnitude);
  const double dt = tol.time * (tr.back() - tr.front());
  cmp.valueTolerance = dy;
  cmp.timeTolerance = dt;

  // Step segments [tr[k], tr[k+1]]: a change above dy and 5 times each
  // neighbouring segment's.
  std::vector<std::size_t> steps;
  auto change = [&](std::size_t k) { return std::abs(yr[k + 1] - yr[k]); };
  for (std::size_t k = 0; k + 1 < n; ++k) {
    const double d = change(k);
    const double before = k > 0 ? change(k - 1) : 0.0, after = k + 2 < n ? change(k + 1) : 0.0;
    if (d > dy && d > 5 * before && d > 5 * after) steps.push_back(k);
  }

  const double slack = 1e-9 * std::max(1.0, std::abs(tr.back()));
  cmp.low.assign(y.size(), std::numeric_limits<double>::quiet_NaN());
  cmp.high.assign(y.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double t = result.time[i];
    if (t < tr.front() - slack || t > tr.back() + slack) continue;
    double a = t - dt, b = t + dt;
    for (std::size_t k : steps) {
      if (tr[k + 1] < a || tr[k] > b) continue;
      a = std::min(a, tr[k]);
      b = std::max(b, tr[k + 1]);
    }
    double lo = std::min(interpolate(tr, yr, a), interpolate(tr, yr, b));
    double hi = std::max(interpolate(tr, yr, a), interpolate(tr, yr, b));
    for (auto k = std::upper_bound(tr.begin(), tr.end(), a); k != tr.end() && *k < b; ++k) {
      const double v = yr[static_cast<std::size_t>(k - tr.begin())];
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    cmp.low[i] = lo - dy;
    cmp.high[i] = hi + dy;
    const double v = y[i];
    if (v >= cmp.low[i] && v <= cmp.high[i]) continue;
    const double distance = std::isfinite(v) ? std::max(cmp.low[i] - v, v - cmp.high[i])
                                             : std::numeric_limits<double>::infinity();
    if (cmp.pass) {
      cmp.pass = false;
      cmp.firstExit = t;
      cmp.firstValue = v;
      cmp.firstReference = interpolate(tr, yr, t);
      cmp.firstLow = cmp.low[i];
      cmp.firstHigh = cmp.high[i];
    }
    if (!(distance <= cmp.worst)) {
      cmp.worst = distance;
      cmp.worstTime = t;
    }
  }
  return cmp;
}

std::string plotSvg(const std::string& title, const Csv& result, int r, const Csv& reference, int f,
                    const SignalComparison& cmp) {
  const std::vector<double>& y = result.columns[static_cast<std::size_t>(r)];
  const std::vector<double>& yr = reference.columns[static_cast<std::size_t>(f)];
  constexpr double W = 860, H = 400, left = 80, right = 20, top = 40, bottom = 50;
  double t0 = std::min(result.time.front(), reference.time.front());
  double t1 = std::max(result.time.back(), reference.time.back());
  double y0 = std::numeric_limits<double>::infinity(), y1 = -y0;
  auto include = [&](double v) {
    if (std::isfinite(v)) {
      y0 = std::min(y0, v);
      y1 = std::max(y1, v);
    }
  };
  for (double v : y) include(v);
  for (double v : yr) include(v);
  for (double v : cmp.low) include(v);
  for (double v : cmp.high) include(v);
  if (!(y0 <= y1)) y0 = -1, y1 = 1;
  if (y1 - y0 < 1e-300) y0 -= 1, y1 += 1;
  if (t1 <= t0) t1 = t0 + 1;
  const double pad = 0.05 * (y1 - y0);
  y0 -= pad;
  y1 += pad;
  auto X = [&](double t) { return left + (t - t0) / (t1 - t0) * (W - left - right); };
  auto Y = [&](double v) { return top + (y1 - v) / (y1 - y0) * (H - top - bottom); };
  auto pt = [&](double t, double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.2f,%.2f ", X(t), Y(std::clamp(v, y0, y1)));
    return std::string(b);
  };
  // At most about 2000 points per curve.
  const std::size_t strideR = std::max<std::size_t>(1, y.size() / 2000), strideF = std::max<std::size_t>(1, yr.size() / 2000);

  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << left << "\" y=\"22\" font-size=\"15\">" << title << "</text>\n";
  s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << W - left - right << "\" height=\"" << H - top - bottom
    << "\" fill=\"none\" stroke=\"#888\"/>\n";
  // Axis labels: the ends of both ranges.
  s << "<text x=\"" << left - 6 << "\" y=\"" << top + 4 << "\" text-anchor=\"end\">" << num(y1) << "</text>\n";
  s << "<text x=\"" << left - 6 << "\" y=\"" << H - bottom + 4 << "\" text-anchor=\"end\">" << num(y0) << "</text>\n";
  s << "<text x=\"" << left << "\" y=\"" << H - bottom + 18 << "\" text-anchor=\"middle\">" << num(t0) << "</text>\n";
  s << "<text x=\"" << W - right << "\" y=\"" << H - bottom + 18 << "\" text-anchor=\"middle\">" << num(t1) << "</text>\n";
  s << "<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">time (s)</text>\n";
  // The tube: its upper edge forward, its lower edge back.
  std::string tube;
  for (std::size_t i = 0; i < y.size(); i += strideR)
    if (std::isfinite(cmp.high[i])) tube += pt(result.time[i], cmp.high[i]);
  for (std::size_t i = y.size(); i-- > 0;)
    if ((i % strideR == 0 || i + 1 == y.size()) && std::isfinite(cmp.low[i])) tube += pt(result.time[i], cmp.low[i]);
  s << "<polygon points=\"" << tube << "\" fill=\"#9ecae1\" fill-opacity=\"0.5\" stroke=\"none\"/>\n";
  std::string ref, res;
  for (std::size_t i = 0; i < yr.size(); i += strideF)
    if (std::isfinite(yr[i])) ref += pt(reference.time[i], yr[i]);
  for (std::size_t i = 0; i < y.size(); i += strideR)
    if (std::isfinite(y[i])) res += pt(result.time[i], y[i]);
  s << "<polyline points=\"" << ref << "\" fill=\"none\" stroke=\"#08519c\" stroke-width=\"1.5\"/>\n";
  s << "<polyline points=\"" << res << "\" fill=\"none\" stroke=\"#e6550d\" stroke-width=\"1.5\"/>\n";
  if (!cmp.pass) {
    const double x = X(cmp.firstExit);
    s << "<line x1=\"" << x << "\" y1=\"" << top << "\" x2=\"" << x << "\" y2=\"" << H - bottom
      << "\" stroke=\"#d62728\" stroke-dasharray=\"4 3\"/>\n";
    s << "<text x=\"" << x + 4 << "\" y=\"" << top + 14 << "\" fill=\"#d62728\">leaves the tube at t = "
      << num(cmp.firstExit) << "</text>\n";
  }
  // Legend.
  const double lx = W - right - 230, ly = top + 12;
  s << "<rect x=\"" << lx << "\" y=\"" << ly - 8 << "\" width=\"16\" height=\"8\" fill=\"#9ecae1\"/>"
    << "<text x=\"" << lx + 22 << "\" y=\"" << ly << "\">tube (±" << num(cmp.valueTolerance) << ", ±"
    << num(cmp.timeTolerance) << " s)</text>\n";
  s << "<line x1=\"" << lx << "\" y1=\"" << ly + 12 << "\" x2=\"" << lx + 16 << "\" y2=\"" << ly + 12
    << "\" stroke=\"#08519c\" stroke-width=\"2\"/><text x=\"" << lx + 22 << "\" y=\"" << ly + 16 << "\">reference</text>\n";
  s << "<line x1=\"" << lx << "\" y1=\"" << ly + 28 << "\" x2=\"" << lx + 16 << "\" y2=\"" << ly + 28
    << "\" stroke=\"#e6550d\" stroke-width=\"2\"/><text x=\"" << lx + 22 << "\" y=\"" << ly + 32 << "\">result</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace capstan::cli
