// STL and OBJ meshes for `capstan view` (cli/mesh.hpp).
#include "cli/mesh.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace capstan::cli {

namespace {

bool allFinite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

std::vector<float> stl(const std::string& data, std::string& error) {
  std::vector<float> out;
  // Binary: an 80-byte header, a little-endian count, then 50 bytes per
  // triangle: its normal, three corners (floats), two attribute bytes.
  if (data.size() >= 84) {
    std::uint32_t count = 0;
    std::memcpy(&count, data.data() + 80, 4);
    if (data.size() == 84 + 50ull * count) {
      out.resize(9ull * count);
      for (std::uint32_t t = 0; t < count; ++t) std::memcpy(&out[9ull * t], data.data() + 84 + 50ull * t + 12, 36);
      return out;
    }
  }
  // ASCII: `vertex x y z`, three per facet.
  std::istringstream in(data);
  for (std::string word; in >> word;) {
    if (word != "vertex") continue;
    float x, y, z;
    if (!(in >> x >> y >> z)) {
      error = "a `vertex` without three numbers";
      return {};
    }
    out.insert(out.end(), {x, y, z});
  }
  const bool solid = data.compare(0, 5, "solid") == 0 && data.find("endsolid") != std::string::npos;
  if (out.size() % 9 != 0 || (out.empty() && !solid)) {
    error = "it is neither a binary STL nor an ASCII STL with whole facets";
    return {};
  }
  return out;
}

std::vector<float> obj(const std::string& data, std::string& error) {
  std::vector<float> out;
  std::vector<std::array<float, 3>> vertices;
  std::istringstream in(data);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    if (tag == "v") {
      std::array<float, 3> v{};
      if (!(ls >> v[0] >> v[1] >> v[2])) {
        error = "a `v` line without three numbers";
        return {};
      }
      vertices.push_back(v);
    } else if (tag == "f") {  // corners `i`, `i/t`, `i/t/n` or `i//n`: 1-based, or negative from the last
      std::vector<std::size_t> corners;
      for (std::string c; ls >> c;) {
        char* end = nullptr;
        const long long i = std::strtoll(c.c_str(), &end, 10);
        const long long n = static_cast<long long>(vertices.size());
        const long long k = i > 0 ? i - 1 : n + i;
        if (end == c.c_str() || i == 0 || k < 0 || k >= n) {
          error = "a face refers to vertex `" + c + "` of " + std::to_string(n);
          return {};
        }
        corners.push_back(static_cast<std::size_t>(k));
      }
      for (std::size_t j = 2; j < corners.size(); ++j)
        for (std::size_t k : {corners[0], corners[j - 1], corners[j]})
          out.insert(out.end(), vertices[k].begin(), vertices[k].end());
    }
  }
  if (out.empty()) error = "it has no faces";
  return out;
}

}  // namespace

std::vector<float> parseMesh(const std::string& data, MeshFormat format, std::string& error) {
  error.clear();
  std::vector<float> out = format == MeshFormat::Stl ? stl(data, error) : obj(data, error);
  if (error.empty() && !allFinite(out)) error = "it holds a coordinate that is not finite";
  if (!error.empty()) out.clear();
  return out;
}

}  // namespace capstan::cli
