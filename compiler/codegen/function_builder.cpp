#include "codegen/function_builder.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

namespace capstan::codegen {

using json = nlohmann::json;
using symbolic::Assignment;
using symbolic::CppPrinter;
using symbolic::Expr;

namespace {

// The columns a line of a block's code may take, its indentation included
// (the template indents blocks as the printer does, 4 spaces, or 6 in a
// part), before wrapLines() breaks it.
constexpr std::size_t kLineLimit = 100;

// `code` with each statement longer than kLineLimit broken after a binary
// `+` or `-` (the printer spaces those, and only those): of the breaks that
// leave a line between half and all of the limit, the one least deep in
// parentheses, the later of equals; continuation lines are indented 4 more
// than the statement. Comments stay as they are.
// `limit` is kLineLimit less what the template indents a block by beyond
// the printer's 4 (a part's, 2 more).
std::string wrapLines(const std::string& code, std::size_t limit = kLineLimit) {
  std::string out;
  std::istringstream in(code);
  for (std::string line; std::getline(in, line);) {
    const std::size_t indent = line.find_first_not_of(' ');
    if (line.size() <= limit || indent == std::string::npos || line.compare(indent, 2, "//") == 0) {
      out += line + "\n";
      continue;
    }
    // Each break (the space before the operator) and its depth.
    std::vector<std::pair<std::size_t, int>> breaks;
    int depth = 0;
    for (std::size_t i = 0; i + 2 < line.size(); ++i) {
      depth += line[i] == '(' ? 1 : line[i] == ')' ? -1 : 0;
      if (i > indent && line[i] == ' ' && (line[i + 1] == '+' || line[i + 1] == '-') && line[i + 2] == ' ')
        breaks.emplace_back(i, depth);
    }
    const std::string continuation(indent + 4, ' ');
    std::size_t start = 0, prefix = 0;  // the piece's start in `line`, and what indents it
    auto next = breaks.begin();
    while (prefix + line.size() - start > limit) {
      // A piece ends after the operator: `a +`.
      auto width = [&](std::size_t at) { return prefix + at + 2 - start; };
      while (next != breaks.end() && next->first <= start) ++next;
      auto cut = breaks.end();
      for (auto it = next; it != breaks.end() && width(it->first) <= limit; ++it) {
        if (2 * width(it->first) < limit) continue;
        if (cut == breaks.end() || it->second <= cut->second) cut = it;
      }
      if (cut == breaks.end()) {  // none fits well: the last that fits, else the first past
        for (auto it = next; it != breaks.end(); ++it) {
          if (cut != breaks.end() && width(it->first) > limit) break;
          cut = it;
          if (width(it->first) > limit) break;
        }
      }
      if (cut == breaks.end()) break;
      out += (prefix ? continuation : "") + line.substr(start, cut->first + 2 - start) + "\n";
      start = cut->first + 3;
      prefix = continuation.size();
    }
    out += (prefix ? continuation : "") + line.substr(start) + "\n";
  }
  return out;
}

// The parameter types whose entries zeroRuns() may set as a segment: the
// generated class's Eigen vectors (its `using` declarations).
bool eigenVector(const std::string& type) {
  static const std::set<std::string> vectors = {"Q", "U", "PositionErrors", "ConstraintVector", "SpatialVector"};
  return vectors.count(type) > 0;
}

// `code` with each matrix entry `X(r, c)` (index2's spelling, which the
// builder's passes read) spelled `X.coeff(r, c)`, or `X.coeffRef(r, c)`
// where a statement stores into it. Same value, same code; but Eigen's
// operator() also takes index lists for slicing, and resolving that
// overload for each of a large header's tens of thousands of entries was
// half the time g++ took to parse it (the 50-link chain's header with
// derivatives: -fsyntax-only 60 s, 29 s with coeff; docs/performance.md).
// The indices are constants within the matrix by construction, so the
// bounds assertion that operator() adds and coeff() leaves out checked
// nothing.
std::string eigenCoefficients(const std::string& code) {
  auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == ']'; };
  auto digits = [&](std::size_t at) {
    std::size_t end = at;
    while (end < code.size() && std::isdigit(static_cast<unsigned char>(code[end]))) ++end;
    return end;
  };
  std::string out;
  out.reserve(code.size() + code.size() / 8);
  std::size_t lineStart = 0, copied = 0;
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '\n') {
      lineStart = i + 1;
      continue;
    }
    if (code[i] != '(' || i == 0 || !word(code[i - 1])) continue;
    const std::size_t row = digits(i + 1);
    if (row == i + 1 || code.compare(row, 2, ", ") != 0) continue;
    const std::size_t col = digits(row + 2);
    if (col == row + 2 || col >= code.size() || code[col] != ')') continue;
    // A store: the entry begins its line's statement and `=` follows it.
    std::size_t name = i;
    while (name > lineStart && (word(code[name - 1]) || code[name - 1] == '.' || code[name - 1] == '[')) --name;
    const bool store = code.find_first_not_of(' ', lineStart) == name && code.compare(col + 1, 3, " = ") == 0;
    out.append(code, copied, i - copied);
    out += store ? ".coeffRef" : ".coeff";
    copied = i;
  }
  out.append(code, copied, std::string::npos);
  return out;
}

// `code` with each run of stores of 0.0 into consecutive entries of an
// output vector (`perr[2] = 0.0;` ... `perr[4] = 0.0;`: rows known to be
// zero) set as one segment (`perr.segment<3>(2).setZero();`). `params` is
// the function's parameter list, which says which outputs are Eigen vectors.
std::string zeroRuns(const std::string& code, const std::string& params) {
  static const std::regex parameter(R"((?:^|,)\s*(?:\[\[maybe_unused\]\]\s*)?(?:const\s+)?(\w+)&\s*(\w+))");
  static const std::regex zero(R"(^(\s*)(\w+)\[(\d+)\] = 0\.0;$)");
  std::set<std::string> vectors;
  for (std::sregex_iterator m(params.begin(), params.end(), parameter), end; m != end; ++m)
    if (eigenVector((*m)[1].str())) vectors.insert((*m)[2].str());
  if (vectors.empty()) return code;
  std::vector<std::string> lines;
  std::istringstream in(code);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = 0; i < lines.size();) {
    std::smatch m;
    std::size_t n = 1;
    if (std::regex_match(lines[i], m, zero) && vectors.count(m[2].str())) {
      const std::string indent = m[1].str(), name = m[2].str();
      const int first = std::stoi(m[3].str());
      for (std::smatch next; i + n < lines.size() && std::regex_match(lines[i + n], next, zero) &&
                             next[2].str() == name && std::stoi(next[3].str()) == first + static_cast<int>(n);)
        ++n;
      if (n > 1) {
        out += indent + name + ".segment<" + std::to_string(n) + ">(" + std::to_string(first) + ").setZero();\n";
        i += n;
        continue;
      }
    }
    out += lines[i] + "\n";
    i += n;
  }
  return out;
}

}  // namespace

std::vector<std::string> sinCosTableLines(int size) {
  const std::string n = std::to_string(size);
  return {"capstan_models::SinCos " + std::string(kSinCosTable) + "[" + n + "];  // sin and cos of q[0] ... q[" +
              std::to_string(size - 1) + "], all at once",
          "capstan_models::sinCosTable<" + n + ">(q.data(), " + kSinCosTable + ");"};
}

FunctionBuilder::FunctionBuilder(std::string name, std::string returnType, std::string params,
                                 std::vector<std::string> doc) {
  fn_["name"] = std::move(name);
  fn_["return_type"] = std::move(returnType);
  fn_["params"] = std::move(params);
  fn_["doc"] = std::move(doc);
  fn_["opening"] = json::array();
  fn_["prologue"] = json::array();
  fn_["epilogue"] = json::array();
  parts_.push_back(json::array());
}

void FunctionBuilder::local(const std::string& declaration) {
  std::string head = declaration.substr(0, declaration.find(';'));
  head = head.substr(0, head.find(" ="));
  locals_.emplace_back(head.substr(head.find_last_of(' ') + 1), declaration);
  pendingLocals_.insert(locals_.back().first);
}

void FunctionBuilder::block(const std::string& comment, std::vector<Assignment> outputs) {
  if (outputs.empty()) return;
  pending_.push_back({comment, std::move(outputs)});
}

const symbolic::OpCount& FunctionBuilder::ops() {
  print();
  return ops_;
}

json FunctionBuilder::finish() {
  print();
  dropUnreadLines();
  fn_["operations"] = operationsText(ops_);
  fn_["parts"] = json::array();
  fn_["work"] = json::array();
  const int table = std::max(tableRead_ ? tableSize_ : 0, tableRequired_);
  if (table > 0)
    for (const std::string& line : sinCosTableLines(table)) fn_["opening"].push_back(line);
  const bool split = parts_.size() > 1;
  if (!returned_.empty()) fn_["epilogue"].push_back("return " + std::string(split ? "w." : "") + returned_ + ";");
  static const std::regex localMarker(R"(\$(\w+))");
  for (auto& line : fn_["epilogue"]) line = std::regex_replace(line.get<std::string>(), localMarker, split ? "w.$1" : "$1");
  if (!split) {
    fn_["blocks"] = parts_.front();
    return fn_;
  }
  fn_["blocks"] = json::array();
  splitIntoParts();
  return fn_;
}

void FunctionBuilder::splitIntoParts() {
  std::set<std::string> later;  // read by a part after the current one
  std::set<std::string> carried;
  for (std::size_t k = parts_.size(); k-- > 0;) {
    for (std::size_t i = 0; i < parts_[k].size(); ++i) {
      json& block = parts_[k][i];
      std::string code = block["code"];
      for (const CppPrinter::Temporary& t : declared_[k][i]) {
        if (!later.count(t.name)) continue;
        const std::string declaration = "const " + t.type + " " + t.name + " = ";
        const std::size_t at = code.find(declaration);
        if (at == std::string::npos) continue;  // dropped as unread (dropUnreadLines)
        code.replace(at, declaration.size(), t.name + " = ");
        carried.insert(t.name);
      }
      block["code"] = code;
    }
    later.insert(reused_[k].begin(), reused_[k].end());
  }
  json work = fn_["prologue"];
  // Temporaries one part computes and a later one reads, in print order.
  for (const char* type : {"double", "bool"}) {
    std::string names;
    for (const auto& part : declared_) {
      for (const auto& block : part) {
        for (const CppPrinter::Temporary& t : block) {
          if (t.type == type && carried.count(t.name)) names += (names.empty() ? "" : ", ") + t.name;
        }
      }
    }
    if (!names.empty()) work.push_back(std::string(type) + " " + names + ";  // computed in one part, read in a later one");
  }
  fn_["work"] = work;
  fn_["prologue"] = json::array();
  // An overload's workspace is named after its key (functions.hpp), so
  // two split functions of one name do not declare one struct twice.
  const std::string name = fn_.value("key", fn_["name"].get<std::string>());
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    fn_["parts"].push_back({{"name", "part" + std::to_string(k + 1)}, {"blocks", parts_[k]}});
  }
  // The parts take the function's parameters, each maybe unused there.
  std::string partParams, args;
  std::istringstream params(fn_["params"].get<std::string>());
  for (std::string param; std::getline(params, param, ',');) {
    param = param.substr(param.find_first_not_of(' '));
    const std::string unused = "[[maybe_unused]] ";
    if (param.rfind(unused, 0) == 0) param = param.substr(unused.size());
    partParams += (partParams.empty() ? "" : ", ") + unused + param;
    args += (args.empty() ? "" : ", ") + param.substr(param.find_last_of(" &") + 1);
  }
  if (tableRead_) {
    partParams += std::string(", [[maybe_unused]] const capstan_models::SinCos* ") + kSinCosTable;
    args += std::string(", ") + kSinCosTable;
  }
  fn_["part_params"] = partParams;
  fn_["args"] = args;
  fn_["work_type"] = std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])))) +
                     name.substr(1) + "Work";
}

void FunctionBuilder::layOut(json& function) {
  const std::string params = function.at("params").get<std::string>();
  auto lay = [&](json& blocks, std::size_t limit) {
    for (json& block : blocks)
      block["code"] = wrapLines(eigenCoefficients(zeroRuns(block.at("code").get<std::string>(), params)), limit);
  };
  if (function.contains("blocks")) lay(function["blocks"], kLineLimit);
  if (function.contains("kernels"))
    for (json& kernel : function["kernels"]) kernel["code"] = wrapLines(kernel.at("code").get<std::string>());
  if (function.contains("parts"))
    for (json& part : function["parts"]) lay(part.at("blocks"), kLineLimit - 2);  // in the workspace struct
  // A split function's temporaries carried between parts: one declaration
  // per line of at most kLineLimit columns.
  json work = json::array();
  // `double t7, t11, ...;  // comment` (no std::regex: its matcher recurses
  // once per character, and a list of a 132-dof model's temporaries
  // overflows the stack).
  for (const json& line : function.value("work", json::array())) {
    const std::string text = line.get<std::string>();
    const std::string type = text.starts_with("double ") ? "double" : text.starts_with("bool ") ? "bool" : "";
    const std::size_t end = text.rfind(";  // ");
    if (text.size() <= kLineLimit || type.empty() || end == std::string::npos || end < type.size() + 1) {
      work.push_back(text);
      continue;
    }
    const std::string comment = text.substr(end + 6);
    work.push_back("// " + comment + ":");
    std::string names;
    std::istringstream list(text.substr(type.size() + 1, end - type.size() - 1));
    for (std::string name; std::getline(list, name, ',');) {
      name = name.substr(name.find_first_not_of(' '));
      if (!names.empty() && type.size() + names.size() + name.size() + 10 > kLineLimit) {
        work.push_back(type + " " + names + ";");
        names.clear();
      }
      names += (names.empty() ? "" : ", ") + name;
    }
    if (!names.empty()) work.push_back(type + " " + names + ";");
  }
  if (function.contains("work")) function["work"] = work;
  // A statement whose trailing comment would pass the style's column limit
  // (where clang-format would break the statement to make room): the
  // comment on the line above.
  for (const char* key : {"opening", "prologue", "work"}) {
    if (!function.contains(key)) continue;
    json lines = json::array();
    for (const json& line : function[key]) {
      const std::string text = line.get<std::string>();
      const std::size_t at = text.find(";  // ");
      if (at == std::string::npos || text.size() + 4 <= kLineLimit) {
        lines.push_back(text);
        continue;
      }
      lines.push_back("// " + text.substr(at + 6));
      lines.push_back(text.substr(0, at + 1));
    }
    function[key] = lines;
  }
}

std::string FunctionBuilder::localOf(const std::string& target) const {
  const std::string base = target.substr(0, target.find_first_of("([ "));
  if (pendingLocals_.count(base) && base != returned_ && !readAtEnd_.count(base)) return base;
  return "";
}

void FunctionBuilder::dropUnreadLines() {
  static const std::regex entry(R"((\w+)(\[\d+\]|\(\d+, \d+\)))");
  static const std::regex word(R"(\b[A-Za-z_]\w*\b)");
  static const std::regex store(R"(^\s*(\w+)(\[\d+\]|\(\d+, \d+\)) = (.*)$)");
  static const std::regex temporary(R"(^\s*const (?:double|bool) (\w+) = (.*)$)");
  std::set<std::string> readEntries, readWords, stored;
  auto reads = [&](const std::string& text) {
    for (std::sregex_iterator it(text.begin(), text.end(), entry), end; it != end; ++it) readEntries.insert(it->str());
    for (std::sregex_iterator it(text.begin(), text.end(), word), end; it != end; ++it) readWords.insert(it->str());
  };
  for (const auto& line : fn_["epilogue"]) reads(line.get<std::string>());
  for (std::size_t k = parts_.size(); k-- > 0;) {
    for (std::size_t b = parts_[k].size(); b-- > 0;) {
      json& block = parts_[k][b];
      std::vector<std::string> lines;
      std::istringstream in(block["code"].get<std::string>());
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      // The block's temporaries that later lines read, before its own
      // lines add to readWords: the roots of its statements' order.
      std::set<std::string, std::less<>> readLater;
      for (const std::string& line : lines) {
        const std::size_t eq = line.find(" = ");
        const std::size_t first = line.find_first_not_of(' ');
        if (eq == std::string::npos || first == std::string::npos || line.compare(first, 6, "const ") != 0) continue;
        std::string name = line.substr(line.rfind(' ', eq - 1) + 1, eq - line.rfind(' ', eq - 1) - 1);
        if (readWords.count(name)) readLater.insert(std::move(name));
      }
      std::vector<const std::string*> kept;  // from the last line back
      for (std::size_t i = lines.size(); i-- > 0;) {
        std::smatch m;
        bool keep = true;
        if (std::regex_match(lines[i], m, store) && localNames_.count(m[1].str()) && !readAtEnd_.count(m[1].str())) {
          keep = readEntries.count(m[1].str() + m[2].str()) > 0;
          if (keep) {
            reads(m[3].str());
            stored.insert(m[1].str());
          }
        } else if (std::regex_match(lines[i], m, temporary)) {
          keep = readWords.count(m[1].str()) > 0;
          if (keep) reads(m[2].str());
        } else {
          reads(lines[i]);
        }
        if (keep) kept.push_back(&lines[i]);
      }
      std::string code;
      for (auto line = kept.rbegin(); line != kept.rend(); ++line) code += **line + "\n";
      block["code"] =
          symbolic::scheduleStatements(code, [&](std::string_view name) { return readLater.count(name) > 0; });
    }
  }
  // Locals no line writes any more, temporaries the split bookkeeping
  // knows of that are gone now, and blocks left empty.
  json prologue = json::array();
  for (const auto& declaration : fn_["prologue"]) {
    std::string head = declaration.get<std::string>();
    head = head.substr(0, head.find(';'));
    head = head.substr(0, head.find(" ="));
    const std::string name = head.substr(head.find_last_of(' ') + 1);
    if (!localNames_.count(name) || stored.count(name) || name == returned_ || readAtEnd_.count(name))
      prologue.push_back(declaration);
  }
  fn_["prologue"] = prologue;
  for (std::size_t k = 0; k < parts_.size() && k < declared_.size(); ++k) {
    for (auto& temps : declared_[k]) {
      temps.erase(std::remove_if(temps.begin(), temps.end(),
                                 [&](const CppPrinter::Temporary& t) { return !readWords.count(t.name); }),
                  temps.end());
    }
    for (std::size_t b = parts_[k].size(); b-- > 0;) {
      if (!parts_[k][b]["code"].get<std::string>().empty()) continue;
      parts_[k].erase(b);
      declared_[k].erase(declared_[k].begin() + static_cast<long>(b));
    }
  }
}

std::vector<std::vector<Expr>> FunctionBuilder::pendingRoots() const {
  std::vector<std::vector<Expr>> roots;
  for (const Pending& p : pending_) {
    roots.emplace_back();
    for (const Assignment& a : p.outputs) roots.back().push_back(a.value);
  }
  return roots;
}

std::unordered_map<std::uint32_t, std::size_t> FunctionBuilder::lastUses() const {
  return symbolic::lastUses(pendingRoots());
}

void FunctionBuilder::dropDeadStores() {
  // One pass from the last block back: a store into a local is dead when no
  // value kept in a later block reads its value (a constant or a symbol,
  // which later blocks print as themselves, never counts as read). What a
  // kept value reads is marked as it is kept, so a dropped store never
  // keeps anything alive and one pass finds what repeating lastUses() until
  // nothing more drops found (quadratic in a long chain's blocks).
  std::unordered_set<std::uint32_t> readLater;
  std::vector<const symbolic::Node*> stack;
  const auto markRead = [&](const Expr& value) {
    stack.push_back(value.node());
    while (!stack.empty()) {
      const symbolic::Node* n = stack.back();
      stack.pop_back();
      if (!readLater.insert(n->id).second) continue;
      for (std::uint32_t i = 0; i < n->size; ++i) stack.push_back(n->args[i]);
    }
  };
  for (std::size_t k = pending_.size(); k-- > 0;) {
    auto& outputs = pending_[k].outputs;
    const auto dead = [&](const Assignment& a) {
      if (localOf(a.target).empty()) return false;
      if (a.value.isConstant() || a.value.isSymbol()) return true;
      return !readLater.count(a.value.id());
    };
    outputs.erase(std::remove_if(outputs.begin(), outputs.end(), dead), outputs.end());
    for (const Assignment& a : outputs) markRead(a.value);
  }
  std::set<std::string> written;
  for (const Pending& p : pending_)
    for (const Assignment& a : p.outputs) written.insert(localOf(a.target));
  for (const auto& [name, declaration] : locals_) {
    if (written.count(name) || name == returned_ || readAtEnd_.count(name)) fn_["prologue"].push_back(declaration);
    localNames_.insert(name);
  }
  locals_.clear();
  pendingLocals_.clear();
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& p) { return p.outputs.empty(); }),
                 pending_.end());
}

void FunctionBuilder::print() {
  if (pending_.empty() && locals_.empty()) return;
  if (rewrite_) {
    std::vector<Expr> values;
    std::vector<ValueSite> sites;
    for (const Pending& p : pending_) {
      for (const Assignment& a : p.outputs) {
        values.push_back(a.value);
        sites.push_back({fn_["name"].get<std::string>(), p.comment, a.target});
      }
    }
    rewrite_(values, sites);
    std::size_t k = 0;
    for (Pending& p : pending_)
      for (Assignment& a : p.outputs) a.value = values.at(k++);
  }
  dropDeadStores();
  if (pending_.empty()) return;
  if (tableSize_ < 0) {  // decided once, by the first blocks printed
    const std::vector<int> angles = symbolic::sinCosCoordinates(pendingRoots());
    const int size = angles.empty() ? 0 : angles.back() + 1;
    const auto count = static_cast<int>(angles.size());
    tableSize_ = tableCoordinates_ > 0 && size <= tableCoordinates_ && count >= 2 &&
                         count * kSinCosTableDensity >= size
                     ? size
                     : 0;
    if (tableSize_ > 0) printer_ = CppPrinter(sinCosOptions(tableSize_));
  }
  const auto last = lastUses();
  const auto partners = symbolic::sinCosPartners(pendingRoots());
  auto partner = [&](const symbolic::Node* n) -> const symbolic::Node* {
    const auto it = partners.find(n->id);
    return it == partners.end() ? nullptr : it->second;
  };
  for (std::size_t k = 0; k < pending_.size(); ++k) {
    if (partBudget_ > 0 && !parts_.back().empty() && weightedCost(partOps_) >= partBudget_) {
      parts_.push_back(json::array());
      partOps_ = {};
    }
    auto usedLater = [&](const symbolic::Node* n) {
      const auto it = last.find(n->id);
      return it != last.end() && it->second > k;
    };
    if (declared_.size() < parts_.size()) {
      declared_.emplace_back();
      reused_.emplace_back();
    }
    const CppPrinter::Block b = printer_.block(pending_[k].outputs, "t", "    ", usedLater, partner);
    tableRead_ = tableRead_ || b.readsTable;
    declared_.back().push_back(b.declared);
    reused_.back().insert(b.reused.begin(), b.reused.end());
    for (const Assignment& a : pending_[k].outputs) {
      if (a.value.isConstant() || a.value.isSymbol() || !named_.insert(a.value.id()).second) continue;
      printer_.name(a.value, a.target);
    }
    ops_ += b.ops;
    partOps_ += b.ops;
    parts_.back().push_back({{"comment", pending_[k].comment}, {"code", b.code}});
  }
  pending_.clear();
}

}  // namespace capstan::codegen
