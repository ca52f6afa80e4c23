// The meshes a `Visual` names (`shape = "mesh"`), read for `capstan view`'s
// pages: STL, binary or ASCII, and Wavefront OBJ (its `v` and `f` lines;
// polygons as fans). Fuzzed by tests/fuzz/files_fuzz.cpp.
#pragma once

#include <string>
#include <vector>

namespace capstan::cli {

enum class MeshFormat { Stl, Obj };

// The triangles of `data`, x, y, z per corner in the file's units; empty
// with the reason in `error` when the data is not a mesh of that format or
// holds a coordinate that is not finite. An ASCII STL solid may have no facets.
std::vector<float> parseMesh(const std::string& data, MeshFormat format, std::string& error);

}  // namespace capstan::cli
