// The driver program that `simulate`, `eval` and `bench` run: the generated
// header and compiler/templates/capstan_driver.cpp built with the system C++
// compiler, cached by content hash; the state file and settings it reads.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <capstan/sim/evaluate.hpp>
#include <capstan/sim/request.hpp>
#include "cli/constraints.hpp"
#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "cli/files.hpp"
#include "cli/generate.hpp"
#include "cli/process.hpp"
#include "codegen/flat_eval.hpp"
#include "codegen/interpret.hpp"
#include "codegen/render.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::string readFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::uint64_t fnv1a(const std::string& text, std::uint64_t h) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

fs::path cacheRoot() {
  if (const char* env = std::getenv("CAPSTAN_CACHE_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "capstan";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "capstan";
  return fs::temp_directory_path() / "capstan-cache";
}

std::string cxx() {
  if (const char* env = std::getenv("CXX"); env && *env) return env;
  return "c++";
}

const std::vector<std::string>& driverFlags() {
  static const std::vector<std::string> flags = {"-std=c++20", "-O1"};
  return flags;
}

std::vector<std::string> benchFlagsAsked() {
  const char* env = std::getenv("CAPSTAN_BENCH_CXXFLAGS");
  if (!env || !*env) return {};
  std::vector<std::string> f = {"-std=c++20"};
  std::istringstream words(env);
  for (std::string w; words >> w;) f.push_back(w);
  return f;
}

std::vector<std::pair<std::string, double>> settingsForDriver(const codegen::ModelLayout& layout,
                                                              const std::vector<std::vector<double>>& values) {
  std::vector<std::pair<std::string, double>> settings;
  for (std::size_t i = 0; i < layout.parameters.size(); ++i) {
    const codegen::RuntimeParameter& p = layout.parameters[i];
    const std::vector<double>& v = i < values.size() ? values[i] : p.defaults;
    for (std::size_t k = 0; k < p.size(); ++k) settings.emplace_back(p.elementName(k), v.at(k));
  }
  return settings;
}

namespace {

// The runtime headers the driver includes: installed beside the program
// (../include), else the source tree's runtime/include.
fs::path runtimeIncludeDir() {
  std::error_code ec;
  const fs::path installed = fs::read_symlink("/proc/self/exe", ec).parent_path() / "../include";
  if (!ec && fs::exists(installed / "capstan/integrators.hpp", ec)) return installed;
  return CAPSTAN_RUNTIME_INCLUDE;
}

// A built product's fingerprint, `SIZE HASH` (bytes, FNV-1a of its bytes),
// kept beside it in `PRODUCT.ok` (`driver.ok`) when it is installed: what
// tells a product that is whole from one a full disk or a crash cut short.
std::string fingerprint(const fs::path& exe) {
  const std::string bytes = readFile(exe);
  char text[48];
  std::snprintf(text, sizeof text, "%zu %016llx", bytes.size(), static_cast<unsigned long long>(fnv1a(bytes)));
  return text;
}

// Whether the cached product (the driver, the cable solver's object) is the
// one that was built: a damaged one (cut short, overwritten) is removed,
// with a note, so that it is built again.
bool cachedIsWhole(const fs::path& exe) {
  std::error_code ec;
  if (!fs::exists(exe, ec)) return false;
  if (readFile(exe.string() + ".ok") == fingerprint(exe)) return true;
  std::cerr << "capstan: note: the cached program `" << exe.string() << "` is damaged; building it again\n";
  fs::remove(exe, ec);
  return false;
}

// Temporaries (`driver.tmpPID`, `build.logPID`, `FILE.tmpPID`) that a capstan
// killed while it built in `dir` left behind: those whose process is gone.
void removeStaleTemporaries(const fs::path& dir) {
  // The process a temporary's name ends with, or 0.
  const auto owner = [](const std::string& name) -> long {
    for (const std::string mark : {".tmp", "build.log"}) {
      const std::size_t at = name.rfind(mark);
      if (at == std::string::npos) continue;
      const std::string digits = name.substr(at + mark.size());
      if (!digits.empty() && digits.size() < 10 && digits.find_first_not_of("0123456789") == std::string::npos)
        return std::stol(digits);
    }
    return 0;
  };
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const long pid = owner(entry.path().filename().string());
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
  }
}

// `text` (C++) without its comments, each run of white space outside
// string and character literals one space: what a build of generated code
// depends on. Its comments cite the model's file and lines, which an edit
// elsewhere in the file moves.
std::string codeOnly(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t close = text.find("*/", i + 2);
      i = close == std::string::npos ? text.size() : close + 2;
      space = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      ++i;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    if (c == '"' || c == '\'') {  // a literal, whole, escapes included
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != c) j += text[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, text.size());
      out.append(text, i, j - i);
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

// Every runtime header (`capstan/...`) in `runtime`, by path, with its text.
std::map<std::string, std::string> runtimeHeaders(const fs::path& runtime) {
  std::map<std::string, std::string> headers;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(runtime / "capstan", ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    headers.emplace(it->path().lexically_relative(runtime).generic_string(), readFile(it->path()));
  }
  return headers;
}

// The runtime headers that `sources` include, directly or in turn (the
// `#include <capstan/...>` lines): what is copied beside the sources.
std::vector<std::string> includedHeaders(const std::vector<const std::string*>& sources,
                                         const std::map<std::string, std::string>& headers) {
  std::vector<std::string> pending;
  const auto scan = [&](const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t at = line.find_first_not_of(" \t");
      if (at == std::string::npos || line.compare(at, 8, "#include") != 0) continue;
      const std::size_t open = line.find_first_of("<\"", at + 8);
      if (open == std::string::npos || line.compare(open + 1, 8, "capstan/") != 0) continue;
      const std::size_t close = line.find_first_of(">\"", open + 1);
      if (close != std::string::npos) pending.push_back(line.substr(open + 1, close - open - 1));
    }
  };
  for (const std::string* text : sources) scan(*text);
  std::set<std::string> seen;
  while (!pending.empty()) {
    const std::string header = pending.back();
    pending.pop_back();
    if (!seen.insert(header).second) continue;
    const auto it = headers.find(header);
    if (it == headers.end()) fail(syntax::DiagKind::InstallationIncomplete, "the runtime's `" + header + "`", runtimeIncludeDir().string());
    scan(it->second);
  }
  return {seen.begin(), seen.end()};
}

// builds.log in the cache folder: a line per build, `TIME MODEL SECONDS
// VARIANT FOLDER` (tab-separated), appended whole.
void logBuild(const std::string& className, double seconds, const std::string& variant, const fs::path& dir) {
  char line[512];
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const int n = std::snprintf(line, sizeof line, "%s\t%s\t%.1f\t%s\t%s\n", when, className.c_str(), seconds,
                              variant.c_str(), dir.filename().c_str());
  const int fd = ::open((cacheRoot() / "builds.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || n <= 0) return;  // a log that cannot be written costs only the estimate
  [[maybe_unused]] const ssize_t written = ::write(fd, line, static_cast<std::size_t>(std::min(n, 511)));
  ::close(fd);
}

// The seconds the last build of `className` took, from builds.log, or 0.
double lastBuildSeconds(const std::string& className) {
  std::istringstream log(readFile(cacheRoot() / "builds.log"));
  double seconds = 0;
  for (std::string line; std::getline(log, line);) {
    std::istringstream fields(line);
    std::string when, model, time;
    if (std::getline(fields, when, '\t') && std::getline(fields, model, '\t') && std::getline(fields, time, '\t') &&
        model == className)
      seconds = std::strtod(time.c_str(), nullptr);
  }
  return seconds;
}

// The progress of a build on stderr: a line when it starts (what, and an
// estimate from the last build of the model), on a terminal the elapsed
// seconds on that line, and a line when it is done.
constexpr std::string_view kCompiling = "capstan: compiling ";
constexpr std::string_view kCompiled = "capstan: compiled ";

class BuildProgress {
 public:
  // `what`: "the generated code of `Chain`"; `name`: the model (or part)
  // whose builds.log entries give the estimate.
  BuildProgress(const std::string& what, const std::string& name)
      : head_(std::string(kCompiling) + what), name_(name), estimate_(lastBuildSeconds(name)),
        terminal_(::isatty(STDERR_FILENO) != 0) {
    if (terminal_) tick(0);
    else std::cerr << head_ << estimateText() << "\n";
  }
  void tick(double elapsed) {
    if (!terminal_) return;
    char text[64];
    std::snprintf(text, sizeof text, ": %.0f s", elapsed);
    std::cerr << "\r" << head_ << text << estimateText() << "\x1b[K" << std::flush;
  }
  void done(double elapsed, const std::string& after) {
    char text[64];
    std::snprintf(text, sizeof text, "%.1f s", elapsed);
    if (terminal_) std::cerr << "\r\x1b[K";
    std::cerr << kCompiled << name_ << " in " << text << after << "\n";
  }
  void failed() {
    if (terminal_) std::cerr << "\n";
  }

 private:
  std::string estimateText() const {
    if (estimate_ <= 0) return "";
    char text[64];
    std::snprintf(text, sizeof text, " (the last build of it took %.0f s)", estimate_);
    return text;
  }
  std::string head_, name_;
  double estimate_;
  bool terminal_;
};

// One build in a cache folder: the files it writes there (paths relative
// to the folder, text), the compiler's arguments after $CXX (OUTPUT stands
// for the file it writes), the product's name in the folder, and what the
// progress line and builds.log call it.
struct CachedBuild {
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> arguments;
  std::string product;  // `driver`, `cable_solver.o`
  std::string what;     // "the generated code of `Chain`"
  std::string name;     // "`Chain`": builds.log's and the estimate's key
  std::string variant;  // builds.log's: `plain`, `derivatives`, `object`
  std::string after;    // said after "compiled NAME in S s"
};

// `dir`/product, from the cache when it is whole, else built there by
// `make()` (called only then) under the folder's lock. Exits with a message
// on failure.
fs::path buildCached(const fs::path& dir, const std::string& product, const std::function<CachedBuild()>& make) {
  const fs::path out = dir / product;
  std::error_code ec;
  if (cachedIsWhole(out)) return out;
  fs::create_directories(dir, ec);
  if (ec) fail(syntax::DiagKind::CannotCreateFolder, "the cache folder ", dir.string(), ec.message());
  // One build per folder: another capstan (`capstan test -j`, parallel
  // CTest runs) building the same sources holds the lock until its product
  // is in place, and this one then takes it instead of compiling it again.
  // The lock goes with the descriptor when this process ends, however it ends.
  const int lock = ::open((dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock >= 0) {
    while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
      if (interruptSignal() != 0) {
        std::cerr << "capstan: interrupted while waiting for another capstan to build the generated code\n";
        std::exit(128 + interruptSignal());
      }
    }
  }
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock};
  if (cachedIsWhole(out)) return out;
  removeStaleTemporaries(dir);
  const CachedBuild build = make();
  // Written aside and renamed into place: another capstan (`capstan test -j`,
  // parallel CTest runs) may be compiling the same sources from this folder.
  for (const auto& [path, text] : build.files) {
    fs::create_directories((dir / path).parent_path(), ec);
    writeOrFail(dir / path, text);
  }
  const fs::path tmp = dir / (product + ".tmp" + std::to_string(getpid()));
  const fs::path logFile = dir / ("build.log" + std::to_string(getpid()));
  std::vector<std::string> argv = {cxx()};
  for (const std::string& a : build.arguments) argv.push_back(a == "OUTPUT" ? tmp.string() : a);
  BuildProgress progress(build.what, build.name);
  ChildOptions child{logFile.string(), 0};
  child.onTick = [&](double elapsed) { progress.tick(elapsed); };
  const auto started = std::chrono::steady_clock::now();
  const ChildResult built = runChild(argv, child);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::string log = readFile(logFile);
  fs::remove(logFile, ec);
  if (built.status != 0 || built.interrupted) {
    progress.failed();
    fs::remove(tmp, ec);
    if (built.interrupted) {
      std::cerr << "capstan: interrupted while building the generated code\n";
      std::exit(128 + interruptSignal());
    }
    failThen(log, syntax::DiagKind::BuildFailed, cxx(), dir.string());
  }
  // The fingerprint first: a product in place is always one that can be checked.
  writeOrFail(dir / (product + ".ok"), fingerprint(tmp));
  fs::rename(tmp, out, ec);
  if (ec) fail(syntax::DiagKind::CannotInstall, out.string(), ec.message());
  progress.done(seconds, build.after);
  logBuild(build.name, seconds, build.variant, dir);
  return out;
}

// The capstan that runs: its executable's size and hash, read once. What
// one generator emits beyond the plain header (the derivative code) is
// keyed by it, so that a capstan whose code generation changed at the same
// project version (a developer's build, a test run on a warm cache) never
// takes an older capstan's build for its own. Empty where the executable
// cannot be read (the key then rests on the project version alone).
const std::string& generatorIdentity() {
  static const std::string identity = [] {
    const std::string bytes = readFile("/proc/self/exe");
    if (bytes.empty()) return std::string();
    char text[48];
    std::snprintf(text, sizeof text, "%zu %016llx", bytes.size(), static_cast<unsigned long long>(fnv1a(bytes)));
    return std::string(text);
  }();
  return identity;
}

// The cache folder of `key`.
fs::path cacheFolder(const std::string& key) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  return cacheRoot() / hex;
}

// Where capstan's own build put the runtime's objects (`capstan prepare`
// run by the build, read only from here): beside an installed capstan,
// ../lib/capstan/objects; in its build tree, the folder the build wrote.
std::vector<fs::path> prebuiltRoots() {
  std::vector<fs::path> roots;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.push_back(exe.parent_path() / "../lib/capstan/objects");
#ifdef CAPSTAN_PREBUILT_OBJECTS
  roots.emplace_back(CAPSTAN_PREBUILT_OBJECTS);
#endif
  return roots;
}

// A part of the runtime compiled apart, once per runtime, compiler and
// flags, and linked to every model's program that needs it: the object of
// `source` (a unit that includes the runtime headers defining it), named
// `product`, described by `what` and `name` in the progress line and
// builds.log. Always with CAPSTAN_CABLE_COMPILED_APART (the declarations
// every unit of a program shares) and `defines`.
fs::path runtimeObject(const std::string& product, const std::string& source, const std::string& what,
                       const std::string& name, const std::map<std::string, std::string>& headers,
                       std::vector<std::string> flags, const std::vector<std::string>& defines) {
  flags.push_back("-DCAPSTAN_CABLE_COMPILED_APART");
  flags.push_back("-fPIC");  // linked to programs and to model libraries (capstan library) alike
  flags.insert(flags.end(), defines.begin(), defines.end());
  std::string key = product + "\n" + source + cxx() + CAPSTAN_VERSION;
  for (const auto& [path, text] : headers) key += "\n" + path + "\n" + text;
  for (const auto& f : flags) key += "\n" + f;
  const fs::path dir = cacheFolder(key);
  // One that capstan's build compiled with the same key, if it is whole (never removed there).
  std::error_code ec;
  for (const fs::path& root : prebuiltRoots()) {
    const fs::path built = root / dir.filename() / product;
    if (fs::exists(built, ec) && readFile(built.string() + ".ok") == fingerprint(built)) return built;
  }
  const std::string unit = fs::path(product).replace_extension(".cpp").string();
  return buildCached(dir, product, [&] {
    CachedBuild b;
    b.files.emplace_back(unit, source);
    for (const std::string& header : includedHeaders({&source}, headers)) b.files.emplace_back(header, headers.at(header));
    b.arguments = flags;
    b.arguments.insert(b.arguments.end(), {"-isystem", CAPSTAN_EIGEN_INCLUDE, "-I", dir.string(), "-c",
                                           (dir / unit).string(), "-o", "OUTPUT"});
    b.product = product;
    b.what = what;
    b.name = name;
    b.variant = "object";
    return b;
  });
}

// The runtime's cable path solver (capstan/cable/model_solve.hpp): most of
// a model with cables' compile time otherwise (30 of 40 s for a cable over
// a cylinder). At -O2 unless `flags` asks otherwise: it runs about 1.3x
// faster than at -O1.
fs::path cableSolverObject(const std::map<std::string, std::string>& headers, const std::vector<std::string>& asked) {
  return runtimeObject("cable_solver.o",
                       "// The cable path solver, compiled apart (capstan/cable/model.hpp).\n"
                       "#include <capstan/cable/model_solve.hpp>\n",
                       "the runtime's cable path solver (once for every model with cables)", "the cable path solver",
                       headers, asked.empty() ? std::vector<std::string>{"-std=c++20", "-O2"} : asked, {});
}

// The simulation engine (capstan/sim/program.hpp: the program's simulate
// and eval modes, the loop, integrators, constraint solver, CVODE's
// adapter and the CSV writer, for any model through capstan::sim::AnyModel):
// what a model's program would otherwise compile again for each model
// (about 12 of 16 s for the double pendulum). With the flags of the
// model's unit: both must agree on Eigen's alignment (-march).
//
// Every engine can run CVODE, where capstan was built with SUNDIALS:
// switching integrator never rebuilds. Its define and include folder (not
// -isystem /usr/include, which would reorder the compiler's own folders)
// are the engine's; the library is linked to every program.
struct EngineParts {
  std::vector<std::string> defines, libraries;
};
EngineParts engineParts() {
  EngineParts parts;
#ifdef CAPSTAN_CVODE
  parts.defines.push_back("-DCAPSTAN_CVODE");
  if (const std::string include = CAPSTAN_SUNDIALS_INCLUDE; include != "/usr/include")
    parts.defines.insert(parts.defines.end(), {"-isystem", include});
  parts.libraries.push_back(CAPSTAN_SUNDIALS_CVODE_LIBRARY);
#endif
  return parts;
}

// `cvode`: with CVODE, where capstan has SUNDIALS; an FMU's engine has
// none, so that the FMU needs no library beyond the C library.
fs::path engineObject(const std::map<std::string, std::string>& headers, const std::vector<std::string>& flags,
                      bool cvode = true) {
  return runtimeObject("engine.o",
                       "// The simulation engine, compiled apart (capstan/sim/program.hpp).\n"
                       "#include <capstan/sim/program_run.hpp>\n",
                       cvode ? "the runtime's simulation engine (once for every model)"
                             : "the runtime's simulation engine for FMUs (once for every FMU)",
                       "the simulation engine", headers, flags,
                       cvode ? engineParts().defines : std::vector<std::string>{});
}

// The runtime's headers, as the programs capstan builds include them; exits
// with a message where they are missing.
std::map<std::string, std::string> runtimeHeadersOrFail() {
  const fs::path runtime = runtimeIncludeDir();
  std::map<std::string, std::string> headers = runtimeHeaders(runtime);
  if (headers.empty()) fail(syntax::DiagKind::InstallationIncomplete, "the runtime headers", runtime.string());
  return headers;
}

}  // namespace

bool isBuildProgress(std::string_view line) {
  // On a terminal the line is rewritten with \r; what a file keeps of it ends in the last version.
  const std::size_t at = line.rfind('\r');
  if (at != std::string_view::npos) line.remove_prefix(at + 1);
  return line.starts_with(kCompiling) || line.starts_with(kCompiled);
}

fs::path buildDriver(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                     const DriverRequest& request) {
  const fs::path support = codegen::defaultTemplateDir();
  // The program's unit, the library's (the same model, behind model_library.h's
  // C interface) or the FMU's (behind FMI 2.0's).
  using Product = DriverRequest::Product;
  const bool shared = request.product != Product::Program;
  const std::string unit = request.product == Product::Library ? "capstan_library.cpp"
                           : request.product == Product::Fmu   ? "capstan_fmu.cpp"
                                                               : "capstan_driver.cpp";
  const std::string product = request.product == Product::Library ? "libmodel.so"
                              : request.product == Product::Fmu   ? "fmu" + std::to_string(request.fmiVersion) + ".so"
                                                                  : "driver";
  const std::string driverSource = readFile(support / unit);
  if (driverSource.empty()) fail(syntax::DiagKind::InstallationIncomplete, "the driver sources", support.string());
  const std::map<std::string, std::string> headers = runtimeHeadersOrFail();
  const std::vector<std::string> engineFlags = request.flags.empty() ? driverFlags() : request.flags;
  std::vector<std::string> flags = engineFlags;
  const bool fmu = request.product == Product::Fmu;
  const std::vector<std::string> libraries = fmu ? std::vector<std::string>{} : engineParts().libraries;
  // The symbolic derivatives are a test oracle, only ever evaluated once
  // (`eval --symbolic-derivatives`): at -O0, which compiles their large
  // code fastest.
  if (request.derivatives && opts.symbolicDerivatives && request.flags.empty()) flags = {"-std=c++20", "-O0"};
  flags.push_back("-DCAPSTAN_MODEL_CLASS=" + layout.className);
  if (request.product == Product::Fmu) flags.push_back("-DCAPSTAN_FMI_VERSION=" + std::to_string(request.fmiVersion));
  if (layout.constraintRows > 0) flags.push_back("-DCAPSTAN_CONSTRAINTS");
  Options plainOptions = opts;
  plainOptions.derivatives = plainOptions.symbolicDerivatives = false;
  Generated g = generate(plainOptions, loaded, layout, HeaderUse::Driver);
  // The external functions' IncludeDirectory folders, and their headers'
  // text in the key (an edited header rebuilds).
  for (const std::string& dir : g.includeDirectories) flags.insert(flags.end(), {"-I", dir});
  std::string key = codeOnly(g.header);
  for (const std::string& header : g.externalHeaders) key += readFile(header);
  // The cache's layout is part of the key: folders of an earlier layout (a
  // driver without its fingerprint, driver.ok) are never taken for damaged ones.
  constexpr const char* kCacheLayout =
      "cache layout 5: driver + driver.ok, builds by structure, engine apart, libraries export their interface only";
  key += driverSource + cxx() + CAPSTAN_VERSION + kCacheLayout + product;
  // The derivative variant's code is not in the plain header the key holds:
  // the template's text (an edited template rebuilds) and, below, the
  // generator's identity stand for it.
  key += readFile((opts.templates.empty() ? codegen::defaultTemplateDir() : fs::path(opts.templates)) / "model.hpp.j2");
  for (const auto& [name, text] : request.extraFiles) key += "\n" + name + "\n" + text;
  for (const auto& [path, text] : headers) key += "\n" + path + "\n" + text;
  for (const auto& f : flags) key += "\n" + f;
  for (const auto& l : libraries) key += "\n" + l;
  // The build with the derivatives is keyed by the plain code too (the
  // model's structure determines both) and by the capstan that generates
  // its derivative code: not generated here unless it is built.
  const std::string derivatives = opts.symbolicDerivatives ? "derivatives, symbolic" : "derivatives";
  const std::string variant = request.derivatives ? derivatives : "plain";
  const auto folder = [&](const std::string& v) {
    return cacheFolder(key + "\nvariant " + v + (v == "plain" ? "" : "\ngenerator " + generatorIdentity()));
  };
  if (!request.derivatives && cachedIsWhole(folder("derivatives") / product))
    return folder("derivatives") / product;
  const fs::path dir = folder(variant);
  return buildCached(dir, product, [&] {
    // Every model links the engine, and a model with cables the path
    // solver, both compiled apart.
    std::vector<std::string> objects = {engineObject(headers, engineFlags, !fmu).string()};
    if (!layout.cables.empty()) objects.push_back(cableSolverObject(headers, request.flags).string());
    if (request.derivatives) {
      Options derivativeOptions = opts;
      derivativeOptions.derivatives = true;
      g = generate(derivativeOptions, loaded, layout, HeaderUse::Driver);
    }
    CachedBuild b;
    b.files = {{g.fileName, g.header}, {unit, driverSource}};
    std::vector<const std::string*> sources = {&g.header, &driverSource};
    for (const auto& file : request.extraFiles) {
      b.files.push_back(file);
      sources.push_back(&file.second);
    }
    for (const std::string& header : includedHeaders(sources, headers))
      b.files.emplace_back(header, headers.at(header));
    b.arguments = flags;
    b.arguments.push_back("-DCAPSTAN_CABLE_COMPILED_APART");
    if (shared) {
      // Only the interface is exported: every other symbol (the engine's,
      // the model's, C++'s unique ones) stays the library's own, so that
      // two models' libraries or FMUs loaded in one process never bind to
      // each other's (an importer loads several FMUs at once).
      b.files.emplace_back("exports.map", fmu ? "{ global: fmi" + std::to_string(request.fmiVersion) + "*; local: *; };\n"
                                              : "{ global: capstan_library_version; capstan_model_*; local: *; };\n");
      b.arguments.insert(b.arguments.end(),
                         {"-fPIC", "-shared", "-Wl,--version-script=" + (dir / "exports.map").string()});
    }
    // An FMU loads with nothing but the C library on the path: C++'s own linked in.
    if (fmu) b.arguments.insert(b.arguments.end(), {"-static-libstdc++", "-static-libgcc"});
    b.arguments.insert(b.arguments.end(), {"-isystem", CAPSTAN_EIGEN_INCLUDE, "-I", dir.string(), "-include",
                                           (dir / g.fileName).string(), (dir / unit).string(),
                                           "-o", "OUTPUT"});
    b.arguments.insert(b.arguments.end(), objects.begin(), objects.end());
    b.arguments.insert(b.arguments.end(), libraries.begin(), libraries.end());  // after the sources that need them
    b.product = product;
    b.what = std::string(request.product == Product::Library ? "the model library of `"
                         : request.product == Product::Fmu   ? "the FMU of `"
                                                             : "the generated code of `") +
             layout.className +
             "`" + (request.derivatives ? " with its derivatives" : "") +
             (request.purpose.empty() ? "" : " for `" + request.purpose + "`");
    b.name = "`" + layout.className + "`";
    b.variant = variant;
    if (!fmu) b.after = "; runs with other parameter values, start values or integrators reuse it";
    return b;
  });
}

std::vector<fs::path> prepareRuntimeObjects() {
  const std::map<std::string, std::string> headers = runtimeHeadersOrFail();
  return {engineObject(headers, driverFlags()), cableSolverObject(headers, {})};
}

fs::path writeStateFile(const EvalState& st) {
  const fs::path path = fs::temp_directory_path() / ("capstan-state-" + std::to_string(getpid()) + ".txt");
  std::ofstream f(path);
  f.precision(17);
  f << "time " << st.time << "\nq";
  for (int i = 0; i < st.q.size(); ++i) f << " " << st.q[i];
  f << "\nu";
  for (int i = 0; i < st.u.size(); ++i) f << " " << st.u[i];
  f << "\n";
  if (!st.externalForces.empty()) {
    f << "fext";
    for (const auto& F : st.externalForces)
      for (int k = 0; k < 6; ++k) f << " " << F[k];
    f << "\n";
  }
  if (!f) fail(syntax::DiagKind::CannotWriteFile, path.string(), std::strerror(errno));
  return path;
}

std::vector<std::string> settingArguments(const std::vector<std::pair<std::string, double>>& settings) {
  std::vector<std::string> args;
  for (const auto& [name, v] : settings) args.push_back(capstan::sim::settingArgument(name, v));
  return args;
}

std::string runDriver(const fs::path& exe, const std::string& mode, const codegen::ModelLayout& layout,
                      const EvalState& state, const std::vector<std::string>& extra) {
  const fs::path stateFile = writeStateFile(state);
  std::vector<std::string> argv = {exe.string(), mode, stateFile.string()};
  for (const auto& a : extra) argv.push_back(a);
  for (const auto& a : settingArguments(settingsForDriver(layout, state.values))) argv.push_back(a);
  const fs::path logFile = stateFile.string() + ".out";
  const ChildResult run = runChild(argv, {logFile.string(), 0});
  const std::string log = readFile(logFile);
  std::error_code ec;
  fs::remove(stateFile, ec);
  fs::remove(logFile, ec);
  if (run.interrupted) {
    std::cerr << "capstan: interrupted\n";
    std::exit(128 + interruptSignal());
  }
  if (run.status != 0) failThen(log, syntax::DiagKind::ProgramFailed, run.status);
  return log;
}

}  // namespace capstan::cli
