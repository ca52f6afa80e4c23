// cli/files.hpp: a file capstan writes for the user is replaced whole or
// not at all, here under a file size limit (as a full disk).
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/files.hpp"

namespace fs = std::filesystem;

namespace {

std::string contents(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A folder of its own, removed at the end.
struct Folder {
  fs::path path = fs::temp_directory_path() / ("capstan_files_test" + std::to_string(::getpid()));
  Folder() { fs::create_directories(path); }
  ~Folder() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("a file is replaced whole") {
  Folder folder;
  const fs::path file = folder.path / "Model.hpp";
  CHECK(capstan::cli::writeAtomically(file, "first\n").empty());
  CHECK(contents(file) == "first\n");
  CHECK(capstan::cli::writeAtomically(file, std::string(10000, 'x')).empty());
  CHECK(contents(file) == std::string(10000, 'x'));
  CHECK(std::distance(fs::directory_iterator(folder.path), fs::directory_iterator()) == 1);
}

TEST_CASE("a write that does not fit keeps the file as it was and says why") {
  Folder folder;
  const fs::path file = folder.path / "reference.csv";
  CHECK(capstan::cli::writeAtomically(file, "time,x\n0,1\n").empty());
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  const rlimit small{4096, old.rlim_max};
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string reason = capstan::cli::writeAtomically(file, std::string(100000, 'y'));
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  CHECK(reason == "File too large");
  CHECK(contents(file) == "time,x\n0,1\n");
  CHECK(std::distance(fs::directory_iterator(folder.path), fs::directory_iterator()) == 1);  // no temporary left
}

TEST_CASE("a folder that cannot be written says why") {
  CHECK(capstan::cli::writeAtomically("/nonexistent-folder/x.hpp", "x") == "No such file or directory");
}
