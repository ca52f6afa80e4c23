// Source buffers and locations. Spans are stored as byte offsets into a file;
// line and column are computed only when a diagnostic is rendered.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace capstan::syntax {

using FileId = std::uint32_t;

// A half-open byte range [begin, end) in one file.
struct SourceRange {
  FileId file = 0;
  std::uint32_t begin = 0;
  std::uint32_t end = 0;

  bool valid() const { return end >= begin && !(file == 0 && begin == 0 && end == 0); }
  // The smallest range covering both (they must be in the same file).
  static SourceRange join(SourceRange a, SourceRange b);
};

struct LineColumn {
  std::uint32_t line = 1;    // 1-based
  std::uint32_t column = 1;  // 1-based, in bytes
};

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);

  const std::string& path() const { return path_; }
  std::string_view text() const { return text_; }
  LineColumn lineColumn(std::uint32_t offset) const;
  // The text of 1-based line `line`, without its line terminator.
  std::string_view lineText(std::uint32_t line) const;
  std::string_view slice(SourceRange r) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<std::uint32_t> lineStarts_;
};

// Owns every loaded file. FileId 0 is reserved for "no file" (built-in
// entities); real files start at 1. References stay valid as files are added.
class SourceManager {
 public:
  SourceManager();
  FileId add(std::string path, std::string text);
  const SourceFile& file(FileId id) const { return files_.at(id); }
  std::size_t size() const { return files_.size(); }

 private:
  std::deque<SourceFile> files_;
};

}  // namespace capstan::syntax
