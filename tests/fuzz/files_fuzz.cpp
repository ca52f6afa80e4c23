// libFuzzer entry for the files a user hands `capstan` besides models: the
// first byte chooses STATE.json (`eval --state`, cli/state_file.cpp), a
// reference CSV (`capstan test`, cli/tube.cpp) or a Visual's STL or OBJ mesh
// (cli/mesh.cpp); the rest is the file. Each
// reader must return or refuse the file with a message (cli's fail(), here
// an exception) -- never crash, hang or accept what it promises to refuse:
// a state's numbers and a reference's values are finite, its times ordered,
// a mesh whole triangles of finite numbers.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "cli/mesh.hpp"
#include "cli/options.hpp"
#include "cli/state_file.hpp"
#include "cli/tube.hpp"

namespace capstan::cli {

// cli's main.cpp ends the process with the message; the fuzzer needs the
// call back.
struct Refused {};
[[noreturn]] void failWith(syntax::DiagKind, const std::string& message, const std::string&) {
  if (message.empty()) __builtin_trap();  // every refusal says why
  throw Refused{};
}
[[noreturn]] void usageErrorWith(syntax::DiagKind, const std::string&) { __builtin_trap(); }  // no usage here
void warnWith(syntax::DiagKind, const std::string& message) {
  if (message.empty()) __builtin_trap();
}

}  // namespace capstan::cli

namespace {

using namespace capstan::cli;

void checkFinite(const StateFile::Entry& e) {
  if (e.values.empty() && !e.array) __builtin_trap();  // a scalar is one value
  for (double v : e.values)
    if (!std::isfinite(v)) __builtin_trap();
}

void state(const std::string& text) {
  try {
    const StateFile s = parseStateFile(text, "state.json");
    if (s.time && !std::isfinite(*s.time)) __builtin_trap();
    for (const auto* entries : {&s.q, &s.u, &s.parameters})
      for (const StateFile::Entry& e : *entries) checkFinite(e);
    if (s.externalForces) {
      for (const StateFile::Entry& e : *s.externalForces) {
        if (e.values.size() != 6) __builtin_trap();
        checkFinite(e);
      }
    }
  } catch (const Refused&) {
  }
}

void reference(const std::string& text) {
  std::istringstream in(text);
  std::string error;
  const auto csv = readCsv(in, "reference.csv", error, true);
  if (!csv) {
    if (error.rfind("reference.csv:", 0) != 0) __builtin_trap();  // located at a line
    return;
  }
  if (csv->time.empty() || csv->columns.size() != csv->names.size()) __builtin_trap();
  for (std::size_t i = 0; i < csv->time.size(); ++i)
    if (!std::isfinite(csv->time[i]) || (i > 0 && csv->time[i] < csv->time[i - 1])) __builtin_trap();
  for (const auto& column : csv->columns) {
    if (column.size() != csv->time.size()) __builtin_trap();
    for (double v : column)
      if (!std::isfinite(v)) __builtin_trap();
  }
}

// A mesh a `Visual` names (cli/mesh.cpp): triangles, nine finite numbers
// each, or a reason.
void mesh(const std::string& text, MeshFormat format) {
  std::string error;
  const std::vector<float> corners = parseMesh(text, format, error);
  if (!error.empty()) {
    if (!corners.empty()) __builtin_trap();
    return;
  }
  if (corners.size() % 9 != 0) __builtin_trap();
  for (float v : corners)
    if (!std::isfinite(v)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {  // the seeds' first bytes: '0' a state, '1' a CSV, '2' an STL, '3' an OBJ
    case 0: state(text); break;
    case 1: reference(text); break;
    case 2: mesh(text, MeshFormat::Stl); break;
    default: mesh(text, MeshFormat::Obj); break;
  }
  return 0;
}
