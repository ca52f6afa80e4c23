#include "codegen/header.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>

#include "codegen/render.hpp"
#include "cppheader/format.hpp"

namespace capstan::codegen {
namespace fs = std::filesystem;

namespace {

// Placeholders for the code blocks of the IR's functions (and of their
// parts): a statement `CAPSTAN_BLOCK_k;` each, which formats like any
// statement of its scope.
constexpr std::string_view kBlockMark = "CAPSTAN_BLOCK_";

// Replaces each function block's `code` in `ir` with its placeholder and
// returns the codes, k-th for placeholder k.
std::vector<std::string> holdBlocks(ir::Model& ir) {
  std::vector<std::string> codes;
  auto hold = [&](std::vector<ir::Block>& blocks) {
    for (ir::Block& b : blocks) {
      codes.push_back(std::move(b.code));
      b.code = std::string(kBlockMark) + std::to_string(codes.size() - 1) + ";\n";
    }
  };
  for (ir::Function& f : ir.functions) {
    hold(f.blocks);
    for (ir::Part& p : f.parts) hold(p.blocks);
  }
  return codes;
}

// `header` with each placeholder line replaced by its block, re-indented:
// the block's own least indentation becomes the placeholder's. Each block
// is released once it is in (a 300-link chain's are 170 MB).
std::string restoreBlocks(const std::string& header, std::vector<std::string>& codes) {
  std::size_t size = header.size();
  for (const std::string& c : codes) size += c.size();
  std::string out;
  out.reserve(size);  // re-indenting may add a little
  std::size_t begin = 0;
  while (begin < header.size()) {
    std::size_t end = header.find('\n', begin);
    end = end == std::string::npos ? header.size() : end + 1;
    const std::string_view line(header.data() + begin, end - begin);
    const std::size_t indent = line.find_first_not_of(' ');
    std::size_t k = 0;
    const bool mark = indent != std::string_view::npos && line.substr(indent, kBlockMark.size()) == kBlockMark &&
                      std::sscanf(std::string(line.substr(indent + kBlockMark.size())).c_str(), "%zu;", &k) == 1 &&
                      k < codes.size();
    if (!mark) {
      out += line;
    } else {
      std::string code = std::move(codes[k]);
      std::size_t base = std::string::npos;  // the block's least indentation
      for (std::size_t at = 0; at < code.size();) {
        const std::size_t eol = std::min(code.find('\n', at), code.size());
        const std::size_t first = code.find_first_not_of(' ', at);
        if (first < eol) base = std::min(base, first - at);
        at = eol + 1;
      }
      for (std::size_t at = 0; at < code.size();) {
        const std::size_t eol = std::min(code.find('\n', at), code.size());
        if (eol > at + base) out.append(indent, ' ').append(code, at + base, eol - at - base);
        out += '\n';
        at = eol + 1;
      }
    }
    begin = end;
  }
  return out;
}

bool readText(const fs::path& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

}  // namespace

fs::path styleFile(const fs::path& templateDir) {
  std::error_code ec;
  for (const fs::path& dir : {templateDir, defaultTemplateDir()})
    if (fs::is_regular_file(dir / ".clang-format", ec)) return dir / ".clang-format";
  return {};
}

bool emitHeader(ir::Model& ir, const fs::path& templateDir, std::string& header, std::string& error) {
  // The blocks are most of a large header (13 MB for a 50-link chain) and
  // already laid out one statement to a line by the printer: formatting
  // them too would triple the time of `compile` for no change. They move
  // from the IR into the header, never copied.
  std::vector<std::string> blocks = holdBlocks(ir);
  if (!renderModel(nlohmann::json(ir), templateDir, header, error)) return false;
  if (const fs::path style = styleFile(templateDir); !style.empty()) {
    std::string yaml;
    if (!readText(style, yaml)) {
      error = "cannot read `" + style.string() + "`";
      return false;
    }
    if (!cppheader::formatCpp(header, yaml, error)) {
      error += " (style `" + style.string() + "`)";
      return false;
    }
  }
  header = restoreBlocks(header, blocks);
  return true;
}

}  // namespace capstan::codegen
