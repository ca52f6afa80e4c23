#include "cli/state_file.hpp"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/options.hpp"

namespace capstan::cli {
using json = nlohmann::json;

namespace {

double finiteNumber(const json& v, const std::string& where) {
  // (The JSON parser refuses NaN, Infinity and overflow already.)
  if (!v.is_number() || !std::isfinite(v.get<double>())) fail(syntax::DiagKind::StateNotNumber, where, v.dump());
  return v.get<double>();
}

// The numbers of a (nested) JSON array, row-major.
void flattenNumbers(const json& v, const std::string& where, std::vector<double>& out) {
  if (!v.is_array()) {
    out.push_back(finiteNumber(v, where));
    return;
  }
  for (const json& item : v) flattenNumbers(item, where, out);
}

json parseJson(const std::string& text, const std::string& path) {
  try {
    // JSON allows a key twice in an object and the parser keeps the last
    // value: say so, the first one may be the one meant.
    std::vector<std::set<std::string>> keys;  // of each object open at this point
    std::vector<std::string> names;           // the key being read in each
    return json::parse(text, [&](int, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) {
        keys.emplace_back();
        names.emplace_back();
      } else if (event == json::parse_event_t::object_end && !keys.empty()) {
        keys.pop_back();
        names.pop_back();
      } else if (event == json::parse_event_t::key && !keys.empty()) {
        names.back() = parsed.get<std::string>();
        static std::set<std::string> warned;  // STATE.json is read twice (the state, then its parameters)
        if (!keys.back().insert(names.back()).second) {
          std::string dotted;
          for (const std::string& n : names) dotted += (dotted.empty() ? "" : ".") + n;
          if (warned.insert(dotted).second) warn(syntax::DiagKind::StateDuplicateKey, dotted);
        }
      }
      return true;
    });
  } catch (const json::exception& e) {
    // JSON has no NaN or Infinity, and numbers too large for a double (1e999) overflow.
    constexpr int kNumberOverflow = 406;
    const bool nonFinite = e.id == kNumberOverflow || text.find("NaN") != std::string::npos ||
                           text.find("Infinity") != std::string::npos;
    fail(syntax::DiagKind::StateNotJson, path,
         e.what() + std::string(nonFinite ? "; every number must be finite (JSON has no NaN or Infinity)" : ""));
  }
}

}  // namespace

StateFile parseStateFile(const std::string& text, const std::string& path) {
  const json s = parseJson(text, path);
  if (!s.is_object()) fail(syntax::DiagKind::StateNotObject);
  StateFile state;
  for (const auto& [key, value] : s.items()) {
    if (key == "time") {
      state.time = finiteNumber(value, "time");
    } else if (key == "q" || key == "u") {
      if (!value.is_object()) fail(syntax::DiagKind::StateEntryNotObject, key, "joint names to arrays");
      for (const auto& [joint, arr] : value.items()) {
        StateFile::Entry e{joint, {}, arr.is_array()};
        const json items = arr.is_array() ? arr : json::array({arr});
        for (std::size_t k = 0; k < items.size(); ++k)
          e.values.push_back(finiteNumber(items[k], key + "." + joint + "[" + std::to_string(k + 1) + "]"));
        (key == "q" ? state.q : state.u).push_back(std::move(e));
      }
    } else if (key == "parameters") {
      if (!value.is_object()) fail(syntax::DiagKind::StateEntryNotObject, key, "names to values");
      for (const auto& [name, v] : value.items()) {
        StateFile::Entry e{name, {}, v.is_array()};
        flattenNumbers(v, "parameters." + name, e.values);
        state.parameters.push_back(std::move(e));
      }
    } else if (key == "external_forces") {
      if (!value.is_object())
        fail(syntax::DiagKind::StateEntryNotObject, "external_forces",
             "body names to [nx, ny, nz, fx, fy, fz] (N*m, N; about the body origin, in World)");
      state.externalForces.emplace();
      for (const auto& [body, arr] : value.items()) {
        const std::size_t n = arr.is_array() ? arr.size() : 1;
        if (!arr.is_array() || n != 6) fail(syntax::DiagKind::StateSpatialForceLength, "external_forces." + body, n);
        StateFile::Entry e{body, {}, true};
        for (std::size_t k = 0; k < 6; ++k)
          e.values.push_back(finiteNumber(arr[k], "external_forces." + body + "[" + std::to_string(k + 1) + "]"));
        state.externalForces->push_back(std::move(e));
      }
    } else {
      fail(syntax::DiagKind::StateUnknownKey, key);
    }
  }
  return state;
}

}  // namespace capstan::cli
