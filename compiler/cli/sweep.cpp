// `capstan sweep`: parameter sweeps on Dask, which live in the Python
// module (python/capstan/sweep.py): this command runs `python3 -m capstan
// sweep` with the package capstan was built or installed with on
// PYTHONPATH, and every argument after `sweep` as it was given.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/options.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;

namespace {

// The folder holding the `capstan` package: $CAPSTAN_PYTHON_PACKAGES where
// set (and only there); beside an installed capstan,
// P/lib/pythonX.Y/dist-packages; in the build tree, build/python.
std::string packageFolder() {
  std::error_code ec;
  if (const char* env = std::getenv("CAPSTAN_PYTHON_PACKAGES"); env && *env)
    return fs::exists(fs::path(env) / "capstan/__init__.py", ec) ? std::string(env) : std::string();
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const auto& entry : fs::directory_iterator(exe.parent_path() / "../lib", ec)) {
      const fs::path dir = entry.path() / "dist-packages";
      if (entry.path().filename().string().starts_with("python3") && fs::exists(dir / "capstan/__init__.py", ec))
        return fs::canonical(dir, ec).string();
    }
  }
#ifdef CAPSTAN_PYTHON_BUILD_DIR
  if (fs::exists(fs::path(CAPSTAN_PYTHON_BUILD_DIR) / "capstan/__init__.py", ec)) return CAPSTAN_PYTHON_BUILD_DIR;
#endif
  return {};
}

}  // namespace

void sweepCommand(int argc, char** argv) {
  const std::string folder = packageFolder();
  if (folder.empty())
    fail(syntax::DiagKind::PythonModuleMissing, std::string("sweep"));
  const char* env = std::getenv("CAPSTAN_PYTHON");
  const std::string python = env && *env ? env : CAPSTAN_PYTHON_INTERPRETER;
  const char* path = std::getenv("PYTHONPATH");
  const std::string pythonPath = folder + (path && *path ? ":" + std::string(path) : "");
  ::setenv("PYTHONPATH", pythonPath.c_str(), 1);
  // The package runs this capstan, whichever one is first on PATH.
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && !std::getenv("CAPSTAN")) ::setenv("CAPSTAN", self.c_str(), 1);
  std::vector<std::string> args = {python, "-m", "capstan", "sweep"};
  for (int i = 2; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  ::execvp(cargs[0], cargs.data());
  fail(syntax::DiagKind::PythonNotRunnable, python, std::string(std::strerror(errno)));
}

}  // namespace capstan::cli
