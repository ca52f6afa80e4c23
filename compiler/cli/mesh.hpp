// The meshes a `Visual` names (`shape = "mesh"`), read for `capstan view`'s
// pages: STL, binary or ASCII, and Wavefront OBJ (its `v` and `f` lines;
// polygons as fans). Fuzzed by tests/fuzz/files_fuzz.cpp.
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace capstan::cli {

enum class MeshFormat { Stl, Obj };

// The format a mesh file's extension names (`.stl`, `.obj`, any case), or
// none: what `capstan view` draws, and what the importer makes a `Visual`.
inline std::optional<MeshFormat> meshFormat(const std::filesystem::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".stl") return MeshFormat::Stl;
  if (ext == ".obj") return MeshFormat::Obj;
  return std::nullopt;
}

// The triangles of `data`, x, y, z per corner in the file's units; empty
// with the reason in `error` when the data is not a mesh of that format or
// holds a coordinate that is not finite. An ASCII STL solid may have no facets.
std::vector<float> parseMesh(const std::string& data, MeshFormat format, std::string& error);

}  // namespace capstan::cli
