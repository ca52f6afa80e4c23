#include "syntax/source.hpp"

#include <algorithm>
#include <stdexcept>

namespace capstan::syntax {

SourceRange SourceRange::join(SourceRange a, SourceRange b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return {a.file, std::min(a.begin, b.begin), std::max(a.end, b.end)};
}

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  lineStarts_.push_back(0);
  for (std::uint32_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') lineStarts_.push_back(i + 1);
  }
}

LineColumn SourceFile::lineColumn(std::uint32_t offset) const {
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  const auto line = static_cast<std::uint32_t>(it - lineStarts_.begin());
  return {line, offset - lineStarts_[line - 1] + 1};
}

std::string_view SourceFile::lineText(std::uint32_t line) const {
  if (line == 0 || line > lineStarts_.size()) return {};
  const std::uint32_t begin = lineStarts_[line - 1];
  std::uint32_t end = line < lineStarts_.size() ? lineStarts_[line] - 1
                                                : static_cast<std::uint32_t>(text_.size());
  if (end > begin && text_[end - 1] == '\r') --end;
  return std::string_view(text_).substr(begin, end - begin);
}

std::string_view SourceFile::slice(SourceRange r) const {
  const auto n = static_cast<std::uint32_t>(text_.size());
  const std::uint32_t b = std::min(r.begin, n), e = std::min(std::max(r.end, b), n);
  return std::string_view(text_).substr(b, e - b);
}

SourceManager::SourceManager() { files_.emplace_back("<built-in>", ""); }

FileId SourceManager::add(std::string path, std::string text) {
  files_.emplace_back(std::move(path), std::move(text));
  return static_cast<FileId>(files_.size() - 1);
}

}  // namespace capstan::syntax
