// The driver program that `simulate`, `eval` and `bench` run: the generated
// header and compiler/templates/capstan_driver.cpp built with the system C++
// compiler, cached by content hash; the state file and settings it reads.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

const std::vector<std::string>& simulateFlags() {
  static const std::vector<std::string> flags = {"-std=c++20", "-O2"};
  return flags;
}

const std::vector<std::string>& evalFlags() {
  static const std::vector<std::string> flags = {"-std=c++20", "-O0"};
  return flags;
}

const std::vector<std::string>& benchFlags() {
  static const std::vector<std::string> flags = [] {
    std::vector<std::string> f = {"-std=c++20"};
    const char* env = std::getenv("CAPSTAN_BENCH_CXXFLAGS");
    std::istringstream words(env && *env ? env : "-O3 -march=native -DNDEBUG");
    for (std::string w; words >> w;) f.push_back(w);
    return f;
  }();
  return flags;
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

// A built driver's fingerprint, `SIZE HASH` (bytes, FNV-1a of its bytes),
// kept beside it in `driver.ok` when it is installed: what tells a driver
// that is whole from one a full disk or a crash cut short.
std::string fingerprint(const fs::path& exe) {
  const std::string bytes = readFile(exe);
  char text[48];
  std::snprintf(text, sizeof text, "%zu %016llx", bytes.size(), static_cast<unsigned long long>(fnv1a(bytes)));
  return text;
}

// Whether the cached driver is the one that was built: a damaged one (cut
// short, overwritten) is removed, with a note, so that it is built again.
bool cachedDriverIsWhole(const fs::path& dir, const fs::path& exe) {
  std::error_code ec;
  if (!fs::exists(exe, ec)) return false;
  if (readFile(dir / "driver.ok") == fingerprint(exe)) return true;
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

}  // namespace

// The driver executable for the generated header and these flags, built once
// per content hash (header, driver sources, the runtime headers it includes,
// compiler, flags). The cache folder holds every source it was built from.
fs::path buildDriver(const Generated& g, const std::string& className, const std::vector<std::string>& extraFlags,
                     const std::vector<std::string>& libraries) {
  const fs::path support = codegen::defaultTemplateDir();
  const std::string driverSource = readFile(support / "capstan_driver.cpp");
  if (driverSource.empty()) fail(syntax::DiagKind::InstallationIncomplete, "the driver sources", support.string());
  // The runtime headers the driver includes, directly or through the model
  // header (the cable solver's tree of headers when the model has cables):
  // the closure of their `#include <capstan/...>` lines, and nothing else,
  // is copied beside the sources and hashed into the key.
  const fs::path runtime = runtimeIncludeDir();
  std::vector<std::pair<std::string, std::string>> runtimeSources;
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
  scan(g.header);
  scan(driverSource);
  std::set<std::string> seen;
  while (!pending.empty()) {
    const std::string header = pending.back();
    pending.pop_back();
    if (!seen.insert(header).second) continue;
    std::string text = readFile(runtime / header);
    if (text.empty()) fail(syntax::DiagKind::InstallationIncomplete, "the runtime's `" + header + "`", runtime.string());
    scan(text);
    runtimeSources.emplace_back(header, std::move(text));
  }
  std::sort(runtimeSources.begin(), runtimeSources.end());
  std::vector<std::string> flags = extraFlags;
  flags.push_back("-DCAPSTAN_MODEL_CLASS=" + className);
  if (g.constraints) flags.push_back("-DCAPSTAN_CONSTRAINTS");
  // The external functions' IncludeDirectory folders, and their headers'
  // text in the key (an edited header rebuilds).
  for (const std::string& dir : g.includeDirectories) flags.insert(flags.end(), {"-I", dir});
  std::string externalHeaders;
  for (const std::string& header : g.externalHeaders) externalHeaders += readFile(header);
  // The cache's layout is part of the key: folders of an earlier layout (a
  // driver without its fingerprint, driver.ok) are never taken for damaged ones.
  constexpr const char* kCacheLayout = "cache layout 2: driver + driver.ok";
  std::string key = g.header + externalHeaders + driverSource + cxx() + CAPSTAN_VERSION + kCacheLayout;
  for (const auto& [header, text] : runtimeSources) key += text;
  for (const auto& f : flags) key += "\n" + f;
  for (const auto& l : libraries) key += "\n" + l;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  const fs::path dir = cacheRoot() / hex;
  const fs::path exe = dir / "driver";
  std::error_code ec;
  if (cachedDriverIsWhole(dir, exe)) return exe;
  fs::create_directories(dir / "capstan", ec);
  if (ec) fail(syntax::DiagKind::CannotCreateFolder, "the cache folder ", dir.string(), ec.message());
  // One build per folder: another capstan (`capstan test -j`, parallel
  // CTest runs) building the same sources holds the lock until its driver
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
  if (cachedDriverIsWhole(dir, exe)) return exe;
  removeStaleTemporaries(dir);
  // Written aside and renamed into place: another capstan (`capstan test -j`,
  // parallel CTest runs) may be compiling the same sources from this folder.
  auto put = [&](const fs::path& path, const std::string& text) { writeOrFail(path, text); };
  put(dir / g.fileName, g.header);
  put(dir / "capstan_driver.cpp", driverSource);
  for (const auto& [header, text] : runtimeSources) {
    fs::create_directories((dir / header).parent_path(), ec);
    put(dir / header, text);
  }
  const fs::path tmp = dir / ("driver.tmp" + std::to_string(getpid()));
  const fs::path logFile = dir / ("build.log" + std::to_string(getpid()));
  std::vector<std::string> argv = {cxx()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-isystem", CAPSTAN_EIGEN_INCLUDE, "-I", dir.string(), "-include", (dir / g.fileName).string(),
                           (dir / "capstan_driver.cpp").string(), "-o", tmp.string()});
  argv.insert(argv.end(), libraries.begin(), libraries.end());  // after the sources that need them
  const ChildResult built = runChild(argv, {logFile.string(), 0});
  const std::string log = readFile(logFile);
  fs::remove(logFile, ec);
  if (built.status != 0 || built.interrupted) {
    fs::remove(tmp, ec);
    if (built.interrupted) {
      std::cerr << "capstan: interrupted while building the generated code\n";
      std::exit(128 + interruptSignal());
    }
    failThen(log, syntax::DiagKind::BuildFailed, cxx(), dir.string());
  }
  // The fingerprint first: a driver in place is always one that can be checked.
  writeOrFail(dir / "driver.ok", fingerprint(tmp));
  fs::rename(tmp, exe, ec);
  if (ec) fail(syntax::DiagKind::CannotInstall, exe.string(), ec.message());
  return exe;
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

std::string runDriver(const fs::path& exe, const std::string& mode, const EvalState& state,
                      const std::vector<std::string>& extra) {
  const fs::path stateFile = writeStateFile(state);
  std::vector<std::string> argv = {exe.string(), mode, stateFile.string()};
  for (const auto& a : extra) argv.push_back(a);
  for (const auto& a : settingArguments(state.settings)) argv.push_back(a);
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
