// `capstan test`: golden-output regression testing of users' models
// (SPEC §6, docs/testing.md). Finds the models with an `experiment`
// annotation, simulates each with `capstan simulate` (a child process: the
// same code path and compile cache, isolated from the others' crashes, in
// parallel), and compares every signal with the stored reference through the
// tolerance tube of cli/tube.hpp.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "cli/driver.hpp"
#include "cli/files.hpp"
#include "cli/options.hpp"
#include "cli/process.hpp"
#include "cli/tube.hpp"
#include "sema/classes.hpp"

namespace capstan::cli {

std::vector<std::filesystem::path> libraryRoots(const Options& opts);

namespace {

namespace fs = std::filesystem;
using syntax::DiagKind;
using syntax::Expr;
using syntax::ExprKind;
using syntax::SourceRange;

// ---------------------------------------------------------------- settings
// annotation(__capstan_test(relTol = .., absTol = .., timeTol = ..,
//                           ignore = {"NAME", ...},
//                           signals = {signal("NAME", relTol = .., absTol = .., timeTol = ..), ...}))
struct NamedSetting {
  std::string name;
  SourceRange range;  // the name's string literal
  Tolerances tol;
  unsigned given = 0;  // which of tol's fields the annotation set (kRel, kAbs, kTime)
};
constexpr unsigned kRel = 1, kAbs = 2, kTime = 4;

struct TestSettings {
  Tolerances tol;
  std::vector<NamedSetting> ignore, signals;
};

// A number literal, possibly negated.
std::optional<double> literalNumber(const Expr& e) {
  if (e.kind == ExprKind::Number) return e.number;
  if (e.kind == ExprKind::Unary && e.op == syntax::Op::Neg && e.args[0]->kind == ExprKind::Number) return -e.args[0]->number;
  return std::nullopt;
}

// relTol/absTol/timeTol = VALUE into `tol`; false (with a diagnostic) when bad.
bool readTolerance(const std::string& key, const Expr& value, SourceRange range, Tolerances& tol,
                   syntax::DiagnosticEngine& diags, unsigned* given = nullptr) {
  double* slot = key == "relTol" ? &tol.rel : key == "absTol" ? &tol.abs : key == "timeTol" ? &tol.time : nullptr;
  if (!slot) return false;
  if (given) *given |= key == "relTol" ? kRel : key == "absTol" ? kAbs : kTime;
  const std::optional<double> v = literalNumber(value);
  if (!v || !(*v >= 0) || !std::isfinite(*v)) {
    diags.report(DiagKind::TestSettingValue, range, key, "a number >= 0");
    return true;
  }
  *slot = *v;
  return true;
}

TestSettings readSettings(const syntax::ClassDef& def, syntax::DiagnosticEngine& diags) {
  TestSettings s;
  const syntax::Modification* ann = sema::findModification(def.annotation.mods, "__capstan_test");
  if (!ann) return s;
  const std::string modelKeys = "relTol, absTol, timeTol, ignore or signals";
  const std::string signalKeys = "relTol, absTol or timeTol";
  const std::string signalShape = "an array of `signal(\"NAME\", relTol = .., absTol = .., timeTol = ..)`";
  for (const syntax::Modification& m : ann->nested) {
    const std::string key = m.target.parts.size() == 1 ? m.target.parts[0].name : m.target.dotted();
    if (!m.value || !m.nested.empty()) {
      diags.report(DiagKind::TestSettingUnknown, m.range, key, modelKeys);
      continue;
    }
    const Expr& v = *m.value;
    if (readTolerance(key, v, v.range, s.tol, diags)) continue;
    if (key == "ignore") {
      if (v.kind != ExprKind::Array) {
        diags.report(DiagKind::TestSettingValue, v.range, key, "an array of signal names");
        continue;
      }
      for (const auto& item : v.args) {
        if (item->kind != ExprKind::String)
          diags.report(DiagKind::TestSettingValue, item->range, key, "an array of signal names");
        else
          s.ignore.push_back({item->text, item->range, {}});
      }
    } else if (key == "signals") {
      if (v.kind != ExprKind::Array) {
        diags.report(DiagKind::TestSettingValue, v.range, key, signalShape);
        continue;
      }
      for (const auto& item : v.args) {
        if (item->kind != ExprKind::Call || item->name.dotted() != "signal" || item->args.size() != 1 ||
            item->args[0]->kind != ExprKind::String) {
          diags.report(DiagKind::TestSettingValue, item->range, key, signalShape);
          continue;
        }
        NamedSetting one{item->args[0]->text, item->args[0]->range, {}, 0};
        for (const syntax::NamedArg& a : item->namedArgs)
          if (!readTolerance(a.name, *a.value, a.value->range, one.tol, diags, &one.given))
            diags.report(DiagKind::TestSettingUnknown, a.nameRange, a.name, signalKeys);
        s.signals.push_back(std::move(one));
      }
    } else {
      diags.report(DiagKind::TestSettingUnknown, m.target.range, key, modelKeys);
    }
  }
  // What a signal's entry leaves out comes from the model's settings.
  for (NamedSetting& one : s.signals) {
    if (!(one.given & kRel)) one.tol.rel = s.tol.rel;
    if (!(one.given & kAbs)) one.tol.abs = s.tol.abs;
    if (!(one.given & kTime)) one.tol.time = s.tol.time;
  }
  return s;
}

// ---------------------------------------------------------------- discovery
struct Case {
  fs::path file;
  std::string model;     // full name within the file: `Pkg.Model`
  std::string key;       // its folder in the report
  TestSettings settings;
  bool settingsOk = true;
  fs::path reference;    // where the reference is, or would be written
  bool hasReference = false;
  // The run.
  ChildResult run;
  double seconds = 0;
  fs::path resultCsv, log;
  // The outcome.
  bool pass = false;
  bool updated = false;
  std::string summary;                 // after PASS/FAIL and the name
  std::vector<std::string> details;    // one line each
  struct Signal {
    std::string name;
    std::string status;  // "pass", "fail", "ignored", "not in the reference", "not in the result"
    std::string plot;    // relative to the report folder
    std::string detail;
  };
  std::vector<Signal> signals;
  std::string view;  // a failing model's page (`capstan view`), relative to the report folder
};

struct Discovered {
  std::vector<Case> cases;
  std::vector<std::string> broken;  // files that did not parse
};

void collectModels(const syntax::ClassDef& def, const std::string& prefix, const fs::path& file,
                   syntax::DiagnosticEngine& diags, std::vector<Case>& out) {
  const std::string name = prefix.empty() ? def.name : prefix + "." + def.name;
  if (def.kind == syntax::ClassKind::Model && !def.isPartial && sema::findModification(def.annotation.mods, "experiment")) {
    Case c;
    c.file = file;
    c.model = name;
    const std::size_t before = diags.errorCount();
    c.settings = readSettings(def, diags);
    c.settingsOk = diags.errorCount() == before;
    out.push_back(std::move(c));
  }
  for (const auto& nested : def.classes) collectModels(*nested, name, file, diags, out);
}

Discovered discover(const Options& opts, syntax::SourceManager& sources, syntax::DiagnosticEngine& diags,
                    std::vector<std::unique_ptr<sema::Library>>& libraries) {
  std::vector<fs::path> files;
  const std::vector<std::string> paths = opts.paths.empty() ? std::vector<std::string>{"."} : opts.paths;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
           !ec && it != end; it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".cap") found.push_back(it->path().lexically_normal());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(fs::path(p).lexically_normal());
    } else {
      fail(syntax::DiagKind::TestPathNotFound, p);
    }
  }
  Discovered d;
  std::set<fs::path> seen;
  for (const fs::path& file : files) {
    std::error_code ec;
    if (!seen.insert(fs::weakly_canonical(file, ec)).second) continue;
    // Each file on its own: two files may hold models of the same name.
    libraries.push_back(std::make_unique<sema::Library>(sources, diags, libraryRoots(opts)));
    const std::size_t before = diags.errorCount();
    const syntax::StoredDefinition* def = libraries.back()->addFile(file);
    if (!def || diags.errorCount() != before) {
      d.broken.push_back(file.string());
      continue;
    }
    for (const auto& cls : def->classes) collectModels(*cls, "", file, diags, d.cases);
  }
  return d;
}

// `<Model>.ref.csv` beside the model file, else in `references/` beside it;
// the first when neither exists.
void locateReference(Case& c) {
  const fs::path dir = c.file.parent_path();
  const std::string name = c.model + ".ref.csv";
  std::error_code ec;
  for (const fs::path& p : {dir / name, dir / "references" / name}) {
    if (fs::exists(p, ec)) {
      c.reference = p;
      c.hasReference = true;
      return;
    }
  }
  c.reference = dir / name;
}

// A file name made of `s`: its letters, digits, `.`, `-` and `_`, others as
// `_`; a long one cut to fit any file system's 255 bytes, with a hash of the
// whole to keep it apart from others that start alike.
std::string safeName(const std::string& s) {
  constexpr std::size_t kLongest = 120;
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_') ? ch : '_';
  if (out.size() <= kLongest) return out;
  char hash[20];
  std::snprintf(hash, sizeof hash, "-%016llx", static_cast<unsigned long long>(fnv1a(s)));
  return out.substr(0, kLongest) + hash;
}


std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string readText(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ---------------------------------------------------------------- running
// The runs in order of discovery on a pool of -j threads; each case's
// `finished` is set (under `lock`, then `changed` notified) when its run ends.
struct Runs {
  std::mutex lock;
  std::condition_variable changed;
  std::vector<char> finished;
  std::vector<std::thread> pool;
  void wait(std::size_t i) {
    std::unique_lock<std::mutex> hold(lock);
    changed.wait(hold, [&] { return finished[i] != 0; });
  }
  ~Runs() {
    for (auto& t : pool) t.join();
  }
};

void startRuns(std::vector<Case>& cases, const Options& opts, Runs& runs) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const std::string program = ec ? "capstan" : self.string();
  int jobs = opts.jobs > 0 ? opts.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(cases.size()));
  runs.finished.assign(cases.size(), 0);
  auto next = std::make_shared<std::atomic<std::size_t>>(0);
  auto worker = [&cases, &opts, &runs, program, next] {
    for (std::size_t i = (*next)++; i < cases.size(); i = (*next)++) {
      Case& c = cases[i];
      auto finish = [&] {
        {
          std::lock_guard<std::mutex> hold(runs.lock);
          runs.finished[i] = 1;
        }
        runs.changed.notify_all();
      };
      if (!c.settingsOk || interruptSignal()) {
        finish();
        continue;
      }
      std::vector<std::string> argv = {program, "simulate", c.file.string(), "--model", c.model,
                                       "-o", c.resultCsv.string(), "--no-color"};
      for (const auto& dir : opts.includes) argv.insert(argv.end(), {"-I", dir.string()});
      if (opts.timeout) {
        char b[32];
        std::snprintf(b, sizeof b, "%.17g", *opts.timeout);
        argv.insert(argv.end(), {"--timeout", b});
      }
      // The run has --timeout; building has a generous limit of its own.
      const double limit = opts.timeout ? *opts.timeout + 600 : 0;
      const auto start = std::chrono::steady_clock::now();
      c.run = runChild(argv, {c.log.string(), limit});
      c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      finish();
    }
  };
  for (int j = 0; j < jobs; ++j) runs.pool.emplace_back(worker);
}

// ---------------------------------------------------------------- comparing
// Every signal the annotation names must be one the result has.
bool checkNames(const Case& c, const Csv& result, syntax::DiagnosticEngine& diags) {
  bool ok = true;
  auto known = [&](const NamedSetting& s) {
    if (result.column(s.name) >= 0) return;
    diags.report(DiagKind::TestSignalUnknown, s.range, s.name, c.model);
    ok = false;
  };
  for (const auto& s : c.settings.ignore) known(s);
  for (const auto& s : c.settings.signals) known(s);
  return ok;
}

void compare(Case& c, const Csv& result, const fs::path& report) {
  std::string error;
  const std::optional<Csv> reference = readCsv(c.reference.string(), error, true);
  if (!reference) {
    c.summary = "cannot read the reference: " + error;
    return;
  }
  const double slack = 1e-9 * std::max(1.0, std::abs(reference->time.back()));
  const double dtEnds = c.settings.tol.time * (reference->time.back() - reference->time.front()) + slack;
  if (std::abs(result.time.front() - reference->time.front()) > dtEnds ||
      std::abs(result.time.back() - reference->time.back()) > dtEnds) {
    c.summary = "the result covers t = " + num(result.time.front()) + " .. " + num(result.time.back()) +
                "; the reference t = " + num(reference->time.front()) + " .. " + num(reference->time.back());
    c.details.push_back("after an intended change, update the reference with `--update`");
    return;
  }
  int failing = 0, compared = 0;
  for (std::size_t r = 0; r < result.names.size(); ++r) {
    const std::string& name = result.names[r];
    Case::Signal sig{name, "pass", "", ""};
    bool ignored = false;
    for (const auto& s : c.settings.ignore) ignored = ignored || s.name == name;
    const int f = reference->column(name);
    if (ignored) {
      sig.status = "ignored";
    } else if (f < 0) {
      sig.status = "not in the reference";
      sig.detail = name + ": not in the reference";
      ++failing;
    } else {
      Tolerances tol = c.settings.tol;
      for (const auto& s : c.settings.signals)
        if (s.name == name) tol = s.tol;
      const SignalComparison cmp = compareSignal(result, static_cast<int>(r), *reference, f, tol);
      ++compared;
      if (!cmp.pass) {
        ++failing;
        sig.status = "fail";
        sig.detail = name + ": leaves the tube at t = " + num(cmp.firstExit) + " (" + num(cmp.firstValue) +
                     "; reference " + num(cmp.firstReference) + ", tube " + num(cmp.firstLow) + " .. " +
                     num(cmp.firstHigh) + "); worst deviation " + num(cmp.worst) + " beyond the tube at t = " +
                     num(cmp.worstTime);
        // Aside and renamed like the other report files: never half a plot.
        sig.plot = c.key + "/" + safeName(name) + ".svg";
        const std::string reason = writeAtomically(
            report / sig.plot, plotSvg(xmlEscape(c.model + ": " + name), result, static_cast<int>(r), *reference, f, cmp));
        if (!reason.empty()) {
          sig.detail += "; its plot cannot be written: " + reason;
          sig.plot.clear();
        }
      }
    }
    if (!sig.detail.empty()) c.details.push_back(sig.detail);
    c.signals.push_back(std::move(sig));
  }
  for (const std::string& name : reference->names) {
    if (result.column(name) >= 0) continue;
    ++failing;
    c.signals.push_back({name, "not in the result", "", name + ": in the reference, not in the result"});
    c.details.push_back(c.signals.back().detail);
  }
  if (failing == 0) {
    c.pass = true;
    c.summary = std::to_string(compared) + (compared == 1 ? " signal" : " signals");
  } else {
    c.summary = std::to_string(failing) + " of " + std::to_string(c.signals.size()) + " signals differ";
  }
}

// The lines of the child's output worth showing: its errors, else its tail.
std::vector<std::string> logLines(const fs::path& log) {
  std::vector<std::string> lines;
  std::istringstream in(readText(log));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.find('\r') == std::string::npos && !isBuildProgress(line)) lines.push_back(line);
  constexpr std::size_t kMax = 12;
  if (lines.size() > kMax) lines.erase(lines.begin(), lines.end() - static_cast<long>(kMax));
  return lines;
}

// ---------------------------------------------------------------- reports
void writeJunit(const std::string& path, const std::vector<Case>& cases, double seconds) {
  std::size_t failures = 0;
  for (const Case& c : cases) failures += c.pass ? 0 : 1;
  std::ostringstream f;
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", std::gmtime(&now));
  f << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  f << "<testsuites name=\"capstan test\" tests=\"" << cases.size() << "\" failures=\"" << failures
    << "\" errors=\"0\" time=\"" << num(seconds) << "\">\n";
  f << "  <testsuite name=\"capstan test\" tests=\"" << cases.size() << "\" failures=\"" << failures
    << "\" errors=\"0\" skipped=\"0\" time=\"" << num(seconds) << "\" timestamp=\"" << stamp << "\">\n";
  for (const Case& c : cases) {
    std::string classname = c.file.lexically_normal().replace_extension().generic_string();
    std::replace(classname.begin(), classname.end(), '/', '.');
    f << "    <testcase name=\"" << xmlEscape(c.model) << "\" classname=\"" << xmlEscape(classname) << "\" file=\""
      << xmlEscape(c.file.generic_string()) << "\" time=\"" << num(c.seconds) << "\"";
    if (c.pass) {
      f << "/>\n";
      continue;
    }
    std::string text = c.summary + "\n";
    for (const std::string& d : c.details) text += d + "\n";
    f << ">\n      <failure type=\"capstan.test\" message=\"" << xmlEscape(c.summary) << "\">" << xmlEscape(text)
      << "</failure>\n    </testcase>\n";
  }
  f << "  </testsuite>\n</testsuites>\n";
  writeOrFail(path, f.str());
}

// Each failing model with rows to show (a run that completed, or the rows
// of one that stopped) gets its page, by `capstan view` in a child process:
// a page that cannot be written leaves the report without it (its messages
// in view.log), never stops the report.
void writeViews(std::vector<Case>& cases, const Options& opts, const fs::path& report) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const std::string program = ec ? "capstan" : self.string();
  for (Case& c : cases) {
    if (c.pass || interruptSignal() || !c.settingsOk || fs::file_size(c.resultCsv, ec) == 0 || ec) continue;
    const std::string page = c.key + "/view.html";
    std::vector<std::string> argv = {program, "view", c.file.string(), c.resultCsv.string(), "--model", c.model,
                                     "-o", (report / page).string(), "--no-color"};
    for (const auto& dir : opts.includes) argv.insert(argv.end(), {"-I", dir.string()});
    if (runChild(argv, {(report / c.key / "view.log").string(), 300}).status == 0) c.view = page;
  }
}

void writeIndex(const fs::path& report, const std::vector<Case>& cases, std::size_t passed, std::size_t failed) {
  std::ostringstream f;
  f << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>capstan test</title>\n"
       "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
       ".pass{color:#2a7d2a}.fail{color:#c62828;font-weight:bold}img{max-width:100%}</style></head><body>\n";
  f << "<h1>capstan test: " << passed << " passed, " << failed << " failed</h1>\n";
  for (const Case& c : cases) {
    f << "<h2 class=\"" << (c.pass ? "pass" : "fail") << "\">" << (c.pass ? "PASS " : "FAIL ") << xmlEscape(c.model)
      << "</h2>\n<p>" << xmlEscape(c.file.generic_string()) << ": " << xmlEscape(c.summary) << "</p>\n";
    if (!c.view.empty())
      f << "<p><a href=\"" << xmlEscape(c.view) << "\">the motion and every signal of this run</a> (capstan view)</p>\n";
    if (!c.pass && c.signals.empty() && !c.details.empty()) {
      f << "<pre>";
      for (const std::string& d : c.details) f << xmlEscape(d) << "\n";
      f << "</pre>\n";
    }
    if (c.signals.empty()) continue;
    f << "<table><tr><th>signal</th><th>result</th><th>details</th></tr>\n";
    for (const Case::Signal& s : c.signals) {
      const bool bad = s.status != "pass" && s.status != "ignored";
      f << "<tr><td>" << xmlEscape(s.name) << "</td><td class=\"" << (bad ? "fail" : "pass") << "\">" << s.status
        << "</td><td>" << xmlEscape(s.detail);
      if (!s.plot.empty()) f << "<br><a href=\"" << s.plot << "\"><img src=\"" << s.plot << "\" alt=\"plot\"></a>";
      f << "</td></tr>\n";
    }
    f << "</table>\n";
  }
  f << "</body></html>\n";
  writeOrFail(report / "index.html", f.str());
}

}  // namespace

int test(const Options& opts) {
  syntax::SourceManager sources;
  syntax::DiagnosticEngine diags;
  const syntax::RenderOptions render{opts.color, true};
  std::vector<std::unique_ptr<sema::Library>> libraries;
  Discovered found = discover(opts, sources, diags, libraries);
  std::cerr << syntax::renderAll(diags, sources, render);
  syntax::DiagnosticEngine late;  // found while comparing
  std::vector<Case>& cases = found.cases;
  if (cases.empty() && found.broken.empty()) fail(syntax::DiagKind::TestNoModels);

  const auto started = std::chrono::steady_clock::now();
  const fs::path report = opts.report.empty() ? fs::path("capstan-test-report") : fs::path(opts.report);
  std::error_code ec;
  fs::create_directories(report, ec);
  if (ec) fail(syntax::DiagKind::CannotCreateFolder, "the report folder ", report.string(), ec.message());
  std::map<std::string, int> keys;
  for (Case& c : cases) {
    locateReference(c);
    const std::string base = safeName(c.model);
    const int n = ++keys[base];
    c.key = n == 1 ? base : base + "-" + std::to_string(n);
    const fs::path dir = report / c.key;
    fs::create_directories(dir, ec);
    if (ec) fail(syntax::DiagKind::CannotCreateFolder, "", dir.string(), ec.message());
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".svg" || entry.path().extension() == ".html")
        fs::remove(entry.path(), ec);  // plots and pages of an earlier run
    c.resultCsv = dir / "result.csv";
    c.log = dir / "simulate.log";
    fs::remove(c.resultCsv, ec);
  }

  // Results in order of discovery, each as soon as its run and those
  // before it have ended.
  Runs runs;
  startRuns(cases, opts, runs);
  std::size_t passed = 0, failed = found.broken.size();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    runs.wait(i);
    if (interruptSignal()) break;
    Case& c = cases[i];
    const std::string where = c.file.generic_string();
    std::optional<Csv> result;
    bool namesOk = true;
    if (!c.settingsOk) {
      c.summary = "invalid `__capstan_test` annotation (see the diagnostics)";
    } else if (c.run.status != 0) {
      c.summary = c.run.status == -1 ? "cannot run `capstan simulate`" : "the simulation failed";
      for (const std::string& line : logLines(c.log)) c.details.push_back(line);
    } else if (std::string error; !(result = readCsv(c.resultCsv.string(), error))) {
      c.summary = "cannot read the result: " + error;
    } else if (!(namesOk = checkNames(c, *result, late))) {
      c.summary = "`__capstan_test` names signals the result does not have (see the diagnostics)";
    } else if (!c.hasReference && !opts.update) {
      c.summary = "no reference `" + c.reference.generic_string() + "`";
      c.details.push_back("create it from this result with `capstan test " + where + " --update`");
    } else if (c.hasReference) {
      compare(c, *result, report);
    }
    if (opts.update && result && namesOk && !c.pass) {
      // The result becomes the reference: missing or differing ones only.
      if (!c.reference.parent_path().empty()) fs::create_directories(c.reference.parent_path(), ec);
      // Whole or not at all: a full disk keeps the old reference.
      const std::string reason = writeAtomically(c.reference, readText(c.resultCsv));
      c.details.clear();
      c.signals.clear();
      if (!reason.empty()) {
        c.summary = "cannot write the reference `" + c.reference.generic_string() + "`: " + reason;
      } else {
        c.pass = true;
        c.updated = true;
        c.summary = "wrote " + c.reference.generic_string();
      }
    }
    (c.pass ? passed : failed) += 1;
    std::cout << (c.updated ? "UPDATED " : c.pass ? "PASS " : "FAIL ") << c.model << " (" << where << "): " << c.summary
              << "\n";
    for (const std::string& d : c.details) std::cout << "  " << d << "\n";
    std::cout.flush();
  }
  if (interruptSignal()) {
    for (std::size_t i = 0; i < cases.size(); ++i) runs.wait(i);
    std::cerr << "capstan: interrupted; the simulations were stopped\n";
    return 128 + interruptSignal();
  }
  for (const std::string& file : found.broken) std::cout << "FAIL " << file << ": does not parse (see the diagnostics)\n";
  // Diagnostics found while comparing (signal names in the annotation).
  std::cerr << syntax::renderAll(late, sources, render);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!opts.junit.empty()) {
    std::vector<Case> all = cases;
    for (const std::string& file : found.broken) {
      Case b;
      b.file = file;
      b.model = fs::path(file).stem().string();
      b.summary = "does not parse";
      all.push_back(std::move(b));
    }
    writeJunit(opts.junit, all, seconds);
  }
  writeViews(cases, opts, report);
  writeIndex(report, cases, passed, failed);
  if (failed > 0) std::cout << "report: " << (report / "index.html").generic_string() << "\n";
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed > 0 ? 1 : 0;
}

}  // namespace capstan::cli
