// `capstan compile FILE -o DIR [--templates DIR] [--ir] [--depfile FILE]`.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "cli/files.hpp"
#include "cli/generate.hpp"
#include "codegen/flat_eval.hpp"
#include "codegen/interpret.hpp"
#include "codegen/header.hpp"
#include "codegen/render.hpp"
#include "codegen/trace.hpp"
#include "sema/classes.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;

codegen::ModelLayout layoutOrExit(const Options& opts, const Loaded& loaded) {
  std::vector<codegen::Unsupported> unsupported;
  codegen::ModelLayout layout = codegen::makeLayout(*loaded.flat, *loaded.mech, unsupported);
  if (unsupported.empty()) unsupported = codegen::untranslatable(*loaded.flat, *loaded.mech, layout);
  if (unsupported.empty()) return layout;
  syntax::DiagnosticEngine diags;  // the check's own diagnostics were printed already
  for (const auto& u : unsupported) diags.report(syntax::DiagKind::NotYetGenerated, u.range, u.message, opts.command);
  std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
  std::exit(1);
}

namespace {
// --templates, else the installed or source templates.
fs::path templateDir(const Options& opts) {
  return opts.templates.empty() ? codegen::defaultTemplateDir() : fs::path(opts.templates);
}
}  // namespace

std::optional<std::pair<std::string, double>> cableWrapWithFriction(const codegen::ModelLayout& layout,
                                                                    const codegen::Interpreter& interp) {
  for (std::size_t c = 0; c < layout.cables.size(); ++c) {
    const capstan::cable::ModelCable& cable = interp.cableModels().at(c);
    for (std::size_t i = 0; i < cable.path.obstacles.size(); ++i) {
      const double mu = cable.path.obstacles[i].friction;
      if (cable.path.obstacles[i].kind == capstan::cable::ObstacleKind::Surface && mu != 0)
        return std::pair{layout.cables[c].obstacles.at(i).name, mu};
    }
  }
  return std::nullopt;
}

void requireFrictionlessCables(const codegen::ModelLayout& layout, const codegen::Interpreter& interp) {
  if (const auto wrap = cableWrapWithFriction(layout, interp))
    fail(syntax::DiagKind::DerivativesWithCables, wrap->first, wrap->second);
}

Generated generate(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout, HeaderUse use,
                   bool dependencies) {
  if (opts.derivatives && !layout.cables.empty()) {
    std::vector<std::vector<double>> defaults;
    for (const codegen::RuntimeParameter& p : layout.parameters) defaults.push_back(p.defaults);
    requireFrictionlessCables(layout, codegen::Interpreter(*loaded.flat, *loaded.mech, layout, defaults));
  }
  codegen::TraceOptions to;
  to.capstanVersion = CAPSTAN_VERSION;
  to.sourceName = fs::path(opts.file).filename().string();
  to.derivatives = opts.derivatives;
  to.symbolicDerivatives = opts.symbolicDerivatives;
  if (!opts.quadratic.empty())
    to.quadratic = opts.quadratic == "compact" ? codegen::TraceOptions::Quadratic::Compact
                                               : codegen::TraceOptions::Quadratic::Unrolled;
  if (!opts.recursions.empty())
    to.recursions = opts.recursions == "loops" ? codegen::TraceOptions::Recursions::Loops
                                               : codegen::TraceOptions::Recursions::Unrolled;
  if (!opts.massInverse.empty())
    to.massInverse = opts.massInverse == "loops"          ? codegen::TraceOptions::MassInverse::Loops
                     : opts.massInverse == "gauss-jordan" ? codegen::TraceOptions::MassInverse::GaussJordan
                                                          : codegen::TraceOptions::MassInverse::Unrolled;
  if (opts.derivativeUdot == "call") to.forwardDynamicsCall = codegen::TraceOptions::ForwardDynamicsCall::Call;
  to.dependencies = dependencies;
  Generated g;
  codegen::ir::Model ir;
  try {
    ir = codegen::traceModel(*loaded.flat, *loaded.mech, layout, loaded.sources, to);
  } catch (const codegen::UnsupportedExpression& e) {
    fail(syntax::DiagKind::NotYetGenerated, std::string(e.what()), opts.command);
  }
  if (opts.ir) g.irJson = nlohmann::json(ir).dump(2) + "\n";
  g.dependencies = ir.dependencies;
  if (use == HeaderUse::Driver)
    for (codegen::ir::Parameter& p : ir.parameters) p.initializer = "{}";
  // The header's layout is the templates' .clang-format's (the shipped one
  // when a --templates folder has none), whatever whitespace they leave.
  std::string error;
  if (!codegen::emitHeader(ir, templateDir(opts), g.header, error))
    fail(syntax::DiagKind::TemplateFailed, templateDir(opts).string(), error);
  g.fileName = layout.className + ".hpp";
  g.constraints = layout.constraintRows > 0;
  for (const sema::FlatFunction& f : loaded.flat->functions) {
    const std::string& dir = f.includeDirectory;
    if (!dir.empty() && std::find(g.includeDirectories.begin(), g.includeDirectories.end(), dir) == g.includeDirectories.end())
      g.includeDirectories.push_back(dir);
    const fs::path header = externalHeader(f.include, dir);
    if (!header.empty()) g.externalHeaders.push_back(header.string());
  }
  return g;
}

namespace {

// A value as written after `=`: a number or a brace literal of numbers
// (`{{1,0,0},{0,1,0},{0,0,1}}`), into row-major numbers and a shape; nullopt
// unless every number is finite and the literal is rectangular.
class LiteralParser {
 public:
  explicit LiteralParser(const std::string& text) : text_(text) {}

  std::optional<sema::Value> parse() {
    sema::Value v;
    v.type = sema::ValueType::Real;
    if (!item(v, 0)) return std::nullopt;
    skipSpace();
    if (pos_ != text_.size() || static_cast<long>(v.shape.size()) != leafDepth_) return std::nullopt;
    return v;
  }

 private:
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool at(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  // One element at nesting `depth`: the first list at each depth fixes that
  // dimension and the first number the depth of numbers.
  bool item(sema::Value& v, std::size_t depth) {
    if (at('{')) {
      int count = 0;
      do {
        if (!item(v, depth + 1)) return false;
        ++count;
      } while (at(','));
      if (!at('}')) return false;
      if (v.shape.size() <= depth) v.shape.resize(depth + 1, -1);
      if (v.shape[depth] < 0) v.shape[depth] = count;
      return v.shape[depth] == count;
    }
    skipSpace();
    const char* begin = text_.c_str() + pos_;
    char* end = nullptr;
    const double x = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(x)) return false;
    pos_ += static_cast<std::size_t>(end - begin);
    if (leafDepth_ < 0) leafDepth_ = static_cast<long>(depth);
    if (leafDepth_ != static_cast<long>(depth)) return false;  // ragged: `{1, {2}}`
    v.numbers.push_back(x);
    return true;
  }

  const std::string& text_;
  std::size_t pos_ = 0;
  long leafDepth_ = -1;
};

std::string shapeText(const std::vector<int>& shape) {
  if (shape.empty()) return "a scalar";
  std::string s = "an array [";
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? "," : "") + std::to_string(shape[d]);
  return s + "]";
}

// `b.inertia[1,2]` of a variable of `shape`: the 0-based flat element.
std::size_t flatElement(const std::string& where, const std::string& base, const std::string& sub,
                        const std::vector<int>& shape) {
  std::vector<long> idx;
  std::size_t pos = 0;
  while (pos <= sub.size()) {
    const auto comma = std::min(sub.find(',', pos), sub.size());
    const std::string part = sub.substr(pos, comma - pos);
    char* e = nullptr;
    const long k = std::strtol(part.c_str(), &e, 10);
    if (part.empty() || *e != '\0') fail(syntax::DiagKind::SettingBadSubscript, where, sub);
    idx.push_back(k);
    pos = comma + 1;
  }
  if (shape.empty()) fail(syntax::DiagKind::SettingSubscriptOfScalar, where, base);
  if (idx.size() != shape.size()) fail(syntax::DiagKind::SettingSubscriptCount, where, base, shape.size());
  std::size_t element = 0;
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (idx[d] < 1 || idx[d] > shape[d])
      fail(syntax::DiagKind::SettingSubscriptRange, where, idx[d], shape[d]);
    element = element * static_cast<std::size_t>(shape[d]) + static_cast<std::size_t>(idx[d] - 1);
  }
  return element;
}

}  // namespace

sema::ParameterOverride parseOverride(const std::string& option, const std::string& text,
                                      const sema::FlatModel& model, int& variable) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) fail(syntax::DiagKind::SettingSyntax, option, text);
  const std::string name = text.substr(0, eq), valueText = text.substr(eq + 1);
  const std::string where = option.rfind("STATE.json", 0) == 0 ? option : "`" + option + " " + name + "`";
  std::string base = name, sub;
  const bool indexed = name.back() == ']' && name.find('[') != std::string::npos;
  if (indexed) {
    base = name.substr(0, name.rfind('['));  // the last: `bob[1].inertia[3,3]`
    sub = name.substr(base.size() + 1, name.size() - base.size() - 2);
  }
  variable = model.findVariable(base);
  if (variable < 0) {
    std::vector<std::string> parameters;
    for (const sema::FlatVariable& v : model.variables)
      if (v.kind == sema::VarKind::Parameter) parameters.push_back(v.path);
    fail(syntax::DiagKind::SettingUnknownParameter, where, base, sema::didYouMean(base, parameters));
  }
  const sema::FlatVariable& fv = model.variables[static_cast<std::size_t>(variable)];
  if (fv.kind != sema::VarKind::Parameter) fail(syntax::DiagKind::SettingNotAParameter, where, base);
  // A Boolean parameter also takes `true` and `false`, as the language writes them.
  const bool boolean = fv.type == sema::ValueType::Boolean && (valueText == "true" || valueText == "false");
  const std::optional<sema::Value> value = LiteralParser(boolean ? (valueText == "true" ? "1" : "0") : valueText).parse();
  if (!value)
    fail(syntax::DiagKind::SettingValue, where, valueText,
         fv.type == sema::ValueType::Boolean ? ", nor `true` or `false`" : "");
  // An Integer takes whole numbers only: 2.5 is a mistake, not 2.
  if (fv.type == sema::ValueType::Integer)
    for (const double x : value->numbers)
      if (x != std::trunc(x) || std::abs(x) > 2147483647.0) fail(syntax::DiagKind::SettingNotWhole, where, base, valueText);
  sema::ParameterOverride o;
  o.path = base;
  o.value = *value;
  if (indexed) {
    o.element = static_cast<int>(flatElement(where, base, sub, fv.shape));
    if (!value->shape.empty()) fail(syntax::DiagKind::SettingElementShape, where, shapeText(value->shape));
  } else if (value->shape != fv.shape) {
    fail(syntax::DiagKind::SettingShape, where, base, shapeText(fv.shape), shapeText(value->shape));
  }
  return o;
}

namespace {

// `--set J.armature` where the model gives joint J no armature: the folded
// parameter's error, with a note at the declaration in the model that would
// give it one: `armature = ...`, `joint(armature = ...)` for a joint inside
// a composite, with `each` inside an array's modifiers (`each armature = ...`).
[[noreturn]] void failArmatureNotGiven(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout,
                                       const std::string& where, int var, int joint) {
  const sema::FlatComponent& c = loaded.flat->components.at(static_cast<std::size_t>(joint));
  std::vector<std::string> segments;  // one per level: `link[2]`, `joint`
  for (std::size_t begin = 0, dot = 0; dot != std::string::npos; begin = dot + 1) {
    dot = c.path.find('.', begin);
    segments.push_back(c.path.substr(begin, dot == std::string::npos ? dot : dot - begin));
  }
  std::string modification = "armature = ...";
  for (std::size_t k = c.levels.size(); k-- > 0;) {
    if (segments.size() == c.levels.size() && segments[k].find('[') != std::string::npos)
      modification = "each " + modification;
    if (k > 0) modification = c.levels[k].name + "(" + modification + ")";
  }
  syntax::DiagnosticEngine diags;
  const std::string& path = loaded.flat->variables.at(static_cast<std::size_t>(var)).path;
  diags.report(syntax::DiagKind::SettingFoldedParameter, syntax::SourceRange{}, where, path,
               layout.foldReason(*loaded.flat, var))
      .note(syntax::DiagKind::NoteGiveArmature, c.levels.empty() ? c.range : c.levels.front().range, c.path,
            modification);
  std::cerr << syntax::renderAll(diags, loaded.sources, {opts.color, true});
  std::exit(1);
}

}  // namespace

std::vector<std::pair<std::string, double>> parseSettings(const Options& opts, const Loaded& loaded,
                                                          const codegen::ModelLayout& layout,
                                                          std::vector<std::vector<double>>& values,
                                                          const std::vector<std::string>& fromState) {
  values.clear();
  for (const auto& p : layout.parameters) values.push_back(p.defaults);
  std::vector<std::pair<std::string, bool>> all;  // (NAME=VALUE, from STATE.json)
  for (const std::string& s : opts.settings) all.emplace_back(s, false);
  for (const std::string& s : fromState) all.emplace_back(s, true);  // as before: the file's values win
  if (all.empty()) return {};
  std::vector<sema::ParameterOverride> overrides = parseOverrides(opts, *loaded.flat);
  std::vector<int> changed;  // runtime parameters set
  for (const auto& [s, isState] : all) {
    const std::string name = s.substr(0, s.find('='));
    const std::string option = isState ? "STATE.json: `parameters." + name + "`" : "--set";
    const std::string where = isState ? option : "`--set " + name + "`";
    int var = -1;
    sema::ParameterOverride o = parseOverride(option, s, *loaded.flat, var);
    const int p = layout.parameterOfVariable.at(static_cast<std::size_t>(var));
    if (p < 0) {
      switch (layout.roles[static_cast<std::size_t>(var)]) {
        case codegen::VariableRole::Dependent:
          fail(syntax::DiagKind::SettingComputedParameter, where, o.path);
        case codegen::VariableRole::Folded:
          if (const int joint = codegen::armatureNotGiven(*loaded.flat, var); joint >= 0)
            failArmatureNotGiven(opts, loaded, layout, where, var, joint);
          fail(syntax::DiagKind::SettingFoldedParameter, where, o.path, layout.foldReason(*loaded.flat, var));
        default: fail(syntax::DiagKind::SettingNotAParameter, where, o.path);
      }
    }
    changed.push_back(p);
    overrides.push_back(std::move(o));
  }
  // The model as these values make it, checked as `check` checks a model:
  // a value that breaks a parameter's bounds, an inertia or a mass is
  // refused with the same diagnostic.
  const std::unique_ptr<Loaded> set = load(opts, overrides, "with the values of `--set`");
  if (!set) std::exit(1);
  std::vector<std::pair<std::string, double>> out;
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  for (int p : changed) {
    const codegen::RuntimeParameter& rp = layout.parameters[static_cast<std::size_t>(p)];
    const int v = set->flat->findVariable(rp.name);
    const sema::FlatVariable* fv = v < 0 ? nullptr : &set->flat->variables[static_cast<std::size_t>(v)];
    if (!fv || !fv->value || fv->value->numbers.size() != rp.size())
      throw std::logic_error("parameter `" + rp.name + "` has no value with `--set`");
    values[static_cast<std::size_t>(p)] = fv->value->numbers;
    for (std::size_t k = 0; k < rp.size(); ++k) out.emplace_back(rp.elementName(k), fv->value->numbers[k]);
  }
  return out;
}

namespace {

// A path in a Make/Ninja depfile: spaces and `#` escaped with `\`, `$` doubled.
std::string depfilePath(const fs::path& path) {
  std::string out;
  for (const char c : path.string()) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

// `HEADER: DEP...` (Make syntax, absolute paths): every source file the model
// was read from (the model file, every library file that lookup loaded,
// the stdlib's among them), the templates (`*.j2`) and the style they are
// formatted with (`.clang-format`), and each `external "C++"`
// function's header where its IncludeDirectory holds it. A build system that
// reads it (CMake's add_custom_command(DEPFILE), Ninja, Make) regenerates
// the header when any of them changes, and only then.
std::string dependencies(const Loaded& loaded, const fs::path& header, const fs::path& templates,
                         const fs::path& style) {
  std::vector<fs::path> deps;
  std::error_code ec;
  auto add = [&](const fs::path& p) {
    if (fs::is_regular_file(p, ec)) deps.push_back(fs::absolute(p, ec).lexically_normal());
  };
  for (syntax::FileId id = 1; id < loaded.sources.size(); ++id) add(loaded.sources.file(id).path());
  for (const auto& entry : fs::directory_iterator(templates, ec)) {
    if (entry.path().extension() == ".j2") add(entry.path());
  }
  if (!style.empty()) add(style);
  for (const auto& f : loaded.flat->functions) add(externalHeader(f.include, f.includeDirectory));
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  std::string text = depfilePath(fs::absolute(header, ec).lexically_normal()) + ":";
  for (const auto& d : deps) text += " \\\n  " + depfilePath(d);
  return text + "\n";
}

}  // namespace

int compile(const Options& opts) {
  if (opts.output.empty()) usageError(syntax::DiagKind::UsageMissing, "compile", "an output folder: `-o DIR`");
  const auto loaded = load(opts);
  if (!loaded) return 1;
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  const Generated g = generate(opts, *loaded, layout);
  std::error_code ec;
  fs::create_directories(opts.output, ec);
  if (ec) fail(syntax::DiagKind::CannotCreateFolder, "", opts.output, ec.message());
  const fs::path header = fs::path(opts.output) / g.fileName;
  // Whole or not at all: a header that does not fit leaves the last good one.
  writeOrFail(header, g.header);
  if (!opts.depfile.empty())
    writeOrFail(opts.depfile, dependencies(*loaded, header, templateDir(opts), codegen::styleFile(templateDir(opts))));
  if (opts.ir) writeOrFail(fs::path(opts.output) / (layout.className + ".ir.json"), g.irJson);
  std::cerr << "wrote " << header.string() << "\n";
  return 0;
}

}  // namespace capstan::cli
