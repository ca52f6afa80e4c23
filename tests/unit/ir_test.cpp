// codegen/ir.hpp: the IR's JSON (to_json of the structs) has exactly the
// keys docs/ir.md's tables list, object by object; the function entries the
// builders write read back into the structs unchanged, and a key the
// structs do not declare is refused.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "codegen/ir.hpp"

namespace ir = capstan::codegen::ir;
using nlohmann::json;

namespace {

// docs/ir.md's tables: heading "### `path`" -> the keys in the first
// column of the table under it (backticked, several per row allowed).
std::map<std::string, std::set<std::string>> documentedKeys() {
  std::ifstream in(std::string(CAPSTAN_SOURCE_DIR) + "/docs/ir.md");
  REQUIRE(in);
  std::map<std::string, std::set<std::string>> tables;
  const std::regex heading(R"(^### `([^`]+)`\s*$)");
  const std::regex key("`([a-z_]+)`");
  std::string line, current;
  bool header = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, heading)) {
      current = m[1];
      tables[current];
      header = true;
      continue;
    }
    if (current.empty() || line.rfind("| ", 0) != 0) continue;
    if (header) {  // the table's own header row: | key | type | meaning |
      header = false;
      continue;
    }
    const std::string first = line.substr(2, line.find(" |", 2) - 2);
    for (auto it = std::sregex_iterator(first.begin(), first.end(), key); it != std::sregex_iterator(); ++it)
      tables[current].insert((*it)[1]);
  }
  return tables;
}

// A model with one of everything, every optional set.
ir::Model sample() {
  ir::Model m;
  m.joints.resize(1);
  m.bodies.resize(1);
  m.parameters.resize(1);
  m.parameters[0].slots.resize(1);
  m.inputs.resize(1);
  m.outputs.resize(1);
  m.externals.resize(1);
  m.frames.resize(1);
  m.constraints.resize(1);
  m.cables.resize(1);
  m.cables[0].obstacles.resize(1);
  m.cables[0].obstacles[0].surface = ir::CableSurface{};
  m.cables[0].springs.resize(1);
  m.cables[0].actuators.resize(1);
  m.derived.resize(1);
  m.dependencies = ir::Dependencies{};
  ir::Function f;
  f.key = "forwardDynamicsExternal";
  f.work_type = "ForwardDynamicsWork";
  f.part_params = f.args = "";
  f.method = json::object();
  f.includes = std::vector<std::string>{"<Eigen/Cholesky>"};
  f.access = "private";
  f.fused = true;
  f.kernels = std::vector<ir::Kernel>(1);
  f.blocks.resize(1);
  f.parts.resize(1);
  m.functions.push_back(f);
  return m;
}

// The object at `path` (`cables[].obstacles[]`: the first obstacle of the
// first cable) in `root`.
const json& at(const json& root, const std::string& path) {
  if (path == "model") return root;
  const json* node = &root;
  std::stringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '.')) {
    const bool element = part.size() > 2 && part.compare(part.size() - 2, 2, "[]") == 0;
    node = &node->at(element ? part.substr(0, part.size() - 2) : part);
    if (element) node = &node->at(0);
  }
  return *node;
}

// "" when `object`'s keys are `documented`, else what differs.
std::string difference(const json& object, const std::set<std::string>& documented) {
  std::set<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.insert(k);
  std::string out;
  for (const std::string& k : keys)
    if (!documented.count(k)) out += " `" + k + "` is not in docs/ir.md;";
  for (const std::string& k : documented)
    if (!keys.count(k)) out += " `" + k + "` is documented but not written;";
  return out;
}

}  // namespace

TEST_CASE("the IR's JSON has the keys docs/ir.md lists, object by object") {
  const std::map<std::string, std::set<std::string>> docs = documentedKeys();
  const json j = sample();
  // Every object of the IR has its table (the method counts are described
  // in the text: they are not a struct of their own).
  const std::set<std::string> objects = {"model",
                                         "source",
                                         "joints[]",
                                         "bodies[]",
                                         "parameters[]",
                                         "parameters[].slots[]",
                                         "inputs[]",
                                         "outputs[]",
                                         "externals[]",
                                         "frames[]",
                                         "constraints[]",
                                         "cables[]",
                                         "cables[].obstacles[]",
                                         "cables[].springs[]",
                                         "cables[].actuators[]",
                                         "derived[]",
                                         "functions[]",
                                         "functions[].blocks[]",
                                         "functions[].parts[]",
                                         "functions[].kernels[]"};
  std::set<std::string> documented;
  for (const auto& [path, keys] : docs) documented.insert(path);
  CHECK(documented == objects);
  for (const std::string& path : objects) {
    CAPTURE(path);
    REQUIRE(docs.count(path));
    CHECK(difference(at(j, path), docs.at(path)) == "");
  }
}

TEST_CASE("optional keys are left out when unset") {
  ir::Model m;
  m.cables.resize(1);
  m.cables[0].obstacles.resize(1);
  m.functions.resize(1);
  const json j = m;
  for (const char* key : {"surface", "surface_name", "near", "friction"})
    CHECK_FALSE(j.at("cables")[0].at("obstacles")[0].contains(key));
  for (const char* key : {"key", "work_type", "part_params", "args", "method", "includes"})
    CHECK_FALSE(j.at("functions")[0].contains(key));
  CHECK_FALSE(j.contains("dependencies"));
  m.dependencies = ir::Dependencies{};
  m.dependencies->kinetic_energy.states = {1, 3};
  const json d = json(m).at("dependencies");
  CHECK_FALSE(d.contains("udot"));  // not shown by the traced code (cables, constraints)
  CHECK(d.at("kinetic_energy") == json{{"states", {1, 3}}, {"time", false}});
}

TEST_CASE("a function entry reads into the struct and back unchanged; an undeclared key is refused") {
  json fn = {{"name", "forwardDynamics"},
             {"key", "forwardDynamicsExternal"},
             {"return_type", "void"},
             {"params", "const Eigen::VectorXd& q"},
             {"doc", {"one", "two"}},
             {"operations", "1 adds, 2 muls, 0 divs, 0 calls, 0 other"},
             {"opening", json::array()},
             {"prologue", {"double x;"}},
             {"blocks", {{{"comment", "joint 'a'"}, {"code", "    x = 1;\n"}}}},
             {"epilogue", {"return x;"}},
             {"parts", json::array()},
             {"work", json::array()},
             {"method", {{"chosen", "aba"}}}};
  CHECK(json(fn.get<ir::Function>()) == fn);
  fn["colour"] = "blue";
  CHECK_THROWS_AS(fn.get<ir::Function>(), std::logic_error);
}

TEST_CASE("the summaries are computed from the entries") {
  ir::Model m;
  m.externals = {{"f", "a::f", "#include \"a.hpp\"", ""}, {"g", "a::g", "#include \"a.hpp\"", ""}, {"h", "h", "", ""}};
  ir::Function withLlt;
  withLlt.includes = std::vector<std::string>{"<Eigen/Cholesky>"};
  m.functions = {withLlt, ir::Function{}, withLlt};
  m.constraints = {{"cut", "loop joint", 0, 5, 0, 0, -1}, {"contact", "SphereOnSphereContact", 5, 1, 0, 2, 0}};
  ir::summarize(m);
  CHECK(m.external_includes == std::vector<std::string>{"#include \"a.hpp\""});
  CHECK(m.includes == std::vector<std::string>{"<Eigen/Cholesky>"});
  CHECK(m.holonomic_rows == 6);
  CHECK(m.constraint_rows == 8);
  CHECK(m.contact_count == 1);
}
