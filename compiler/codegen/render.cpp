#include "codegen/render.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace capstan::codegen {
namespace fs = std::filesystem;

namespace {

// argv: templates dir, IR file, output file. Strict: an undefined name in a
// template is an error, not an empty string.
constexpr const char* kRenderScript = R"(import json, sys
import jinja2
env = jinja2.Environment(loader=jinja2.FileSystemLoader(sys.argv[1]), undefined=jinja2.StrictUndefined,
                         trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
with open(sys.argv[2], encoding='utf-8') as f:
    ir = json.load(f)
text = env.get_template('model.hpp.j2').render(**ir)
with open(sys.argv[3], 'w', encoding='utf-8') as f:
    f.write(text)
)";

fs::path executableDir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self.parent_path();
}

}  // namespace

std::string pythonInterpreter() {
  if (const char* env = std::getenv("CAPSTAN_PYTHON"); env && *env) return env;
  return CAPSTAN_PYTHON;
}

fs::path defaultTemplateDir() {
  if (const char* env = std::getenv("CAPSTAN_TEMPLATES"); env && *env) return env;
  std::error_code ec;
  const fs::path installed = executableDir() / "../share/capstan/templates";
  if (fs::exists(installed / "model.hpp.j2", ec)) return fs::weakly_canonical(installed, ec);
  return CAPSTAN_SOURCE_TEMPLATES;
}

int runProcess(const std::vector<std::string>& argv, std::string* captured) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int pipefd[2] = {-1, -1};
  if (captured && pipe(pipefd) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  if (captured) {
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  }
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (captured) {
    close(pipefd[1]);
    if (rc == 0) {
      char buf[4096];
      ssize_t n;
      while ((n = read(pipefd[0], buf, sizeof buf)) > 0) captured->append(buf, static_cast<std::size_t>(n));
    }
    close(pipefd[0]);
  }
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;  // e.g. ECHILD: never spin
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

bool renderModel(const nlohmann::json& ir, const fs::path& templateDir, std::string& out, std::string& error) {
  std::error_code ec;
  if (!fs::exists(templateDir / "model.hpp.j2", ec)) {
    error = "no `model.hpp.j2` in template folder `" + templateDir.string() + "`";
    return false;
  }
  const fs::path dir = fs::temp_directory_path() / ("capstan-render-" + std::to_string(getpid()));
  fs::create_directories(dir, ec);
  const fs::path irPath = dir / "ir.json", outPath = dir / "model.hpp";
  {
    // A write cut short (a full disk, a file size limit) is said as such,
    // not left for the renderer to trip over half a file.
    std::ofstream f(irPath);
    f << ir.dump(1);
    f.close();
    if (!f) {
      error = "cannot write the IR for the templates to `" + irPath.string() + "`: " + std::strerror(errno);
      fs::remove_all(dir, ec);
      return false;
    }
  }
  std::string log;
  const std::string python = pythonInterpreter();
  const int status = runProcess({python, "-c", kRenderScript, templateDir.string(), irPath.string(), outPath.string()}, &log);
  if (status != 0) {
    error = status < 0 ? "cannot run the Python interpreter `" + python + "` (set CAPSTAN_PYTHON to one that can import jinja2)"
                       : "template rendering failed (" + python + "):\n" + log;
    fs::remove_all(dir, ec);
    return false;
  }
  std::ifstream f(outPath);
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  fs::remove_all(dir, ec);
  return true;
}

}  // namespace capstan::codegen
