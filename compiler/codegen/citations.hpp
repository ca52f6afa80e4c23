// How generated code cites the model: the block comments name the element a
// block comes from as the user wrote it, with its file and line(s).
#pragma once

#include <string>

#include "codegen/layout.hpp"
#include "sema/flat.hpp"
#include "syntax/source.hpp"

namespace capstan::codegen {

class Citations {
 public:
  Citations(const sema::FlatModel& model, const ModelLayout& layout, const syntax::SourceManager& sources)
      : model_(model), layout_(layout), sources_(sources) {}

  // `arm.cap:14`, or "" for a range without a file.
  std::string line(syntax::SourceRange range) const;
  // `force law 'elbow.tau' (arm.cap:14)`
  std::string where(const std::string& what, const std::string& name, syntax::SourceRange range) const;
  // A component as the user wrote it: its path, then the line of each level
  // of the path, outermost first: `joint 'link2.joint' (arm7.cap:31,
  // Parts.Segment joint at arm7.cap:12)`.
  std::string where(const std::string& what, int component) const;
  // `joint 'link2.joint' (...) -> body 'link2.body'`
  std::string joint(const JointLayout& j) const;

 private:
  const sema::FlatModel& model_;
  const ModelLayout& layout_;
  const syntax::SourceManager& sources_;
};

}  // namespace capstan::codegen
