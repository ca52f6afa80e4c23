// STATE.json (`eval --state`, SPEC §6) as written, before it is matched with
// a model: the JSON, its keys and its numbers checked. eval.cpp matches the
// names with the model's joints, parameters and bodies.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace capstan::cli {

struct StateFile {
  struct Entry {
    std::string name;            // a joint, parameter or body
    std::vector<double> values;  // finite; a nested array row-major
    bool array = false;          // written as an array (a scalar is one value)
  };
  std::optional<double> time;                       // s
  std::vector<Entry> q, u;                          // per joint
  std::vector<Entry> parameters;                    // per parameter
  std::optional<std::vector<Entry>> externalForces;  // per body: [nx, ny, nz, fx, fy, fz]
};

// Parses STATE.json's text; `path` names the file in messages. What is not
// a state (not JSON, a number that is not finite, an unknown key, an entry
// of the wrong kind) is an error: the message, exit 1 (cli's fail()). A key
// written twice in one object is a warning (the last value counts).
StateFile parseStateFile(const std::string& text, const std::string& path);

}  // namespace capstan::cli
