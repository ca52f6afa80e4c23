#include "codegen/citations.hpp"

#include <filesystem>

namespace capstan::codegen {

std::string Citations::line(syntax::SourceRange range) const {
  if (!range.valid() || range.file >= sources_.size()) return "";
  const syntax::SourceFile& f = sources_.file(range.file);
  return std::filesystem::path(f.path()).filename().string() + ":" + std::to_string(f.lineColumn(range.begin).line);
}

std::string Citations::where(const std::string& what, const std::string& name, syntax::SourceRange range) const {
  const std::string at = line(range);
  return what + " '" + name + "'" + (at.empty() ? "" : " (" + at + ")");
}

std::string Citations::where(const std::string& what, int component) const {
  const sema::FlatComponent& fc = model_.components.at(static_cast<std::size_t>(component));
  if (fc.levels.size() <= 1) return where(what, fc.path, fc.range);
  std::string s = what + " '" + fc.path + "' (" + line(fc.levels.front().range);
  for (std::size_t k = 1; k < fc.levels.size(); ++k) {
    const sema::FlatComponent::Level& l = fc.levels[k];
    s += ", " + l.inClass + " " + l.name + " at " + line(l.range);
  }
  return s + ")";
}

std::string Citations::joint(const JointLayout& j) const {
  const BodyLayout& b = layout_.bodies.at(static_cast<std::size_t>(j.body));
  return where("joint", j.component()) + " -> body '" + b.name + "'";
}

}  // namespace capstan::codegen
