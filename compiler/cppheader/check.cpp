#include "cppheader/check.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/FileManager.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Sema/Lookup.h>
#include <clang/Sema/Sema.h>
#include <clang/Sema/SemaConsumer.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <memory>
#include <utility>

#ifndef CAPSTAN_CLANG_RESOURCE_DIR
#error "CAPSTAN_CLANG_RESOURCE_DIR must name Clang's resource directory (set by compiler/CMakeLists.txt)"
#endif

namespace capstan::cppheader {

std::string_view name(Kind kind) {
  switch (kind) {
    case Kind::Real: return "Real";
    case Kind::Integer: return "Integer";
    case Kind::Boolean: return "Boolean";
  }
  return "?";
}

std::string_view name(Verdict verdict) {
  switch (verdict) {
    case Verdict::Ok: return "Ok";
    case Verdict::HeaderError: return "HeaderError";
    case Verdict::NotFound: return "NotFound";
    case Verdict::WrongArity: return "WrongArity";
    case Verdict::WrongParameterType: return "WrongParameterType";
    case Verdict::WrongResultType: return "WrongResultType";
    case Verdict::NoMatchingOverload: return "NoMatchingOverload";
    case Verdict::AmbiguousOverload: return "AmbiguousOverload";
  }
  return "?";
}

namespace {

// The include line is compiled as this in-memory file. Its directory exists
// nowhere, so a quoted include finds headers only through the -I directories,
// as the generated code's own build will.
constexpr std::string_view kMainFile = "/capstan-external-include/include.cpp";

std::string quoted(std::string_view code) { return "`" + std::string(code) + "`"; }

// `a Real`, `an Integer`: for messages.
std::string article(Kind kind) {
  return (kind == Kind::Integer ? "an " : "a ") + std::string(name(kind));
}

// ---------------------------------------------------------------------------
// Diagnostics

// Keeps Clang's first error (a later one is usually a consequence) and prints
// nothing: the caller turns it into a Capstan diagnostic at the model's line.
class FirstError : public clang::DiagnosticConsumer {
 public:
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);  // keeps the counts
    if (level < clang::DiagnosticsEngine::Error || !text_.empty()) return;
    llvm::SmallString<256> message;
    info.FormatDiagnostic(message);
    text_ = location(info) + std::string(message.str());
  }

  const std::string& text() const { return text_; }

 private:
  // `file:line:col: `, or nothing when the error is in the include line (the
  // model's own text, which the caller locates better) or has no location
  // (the driver's errors).
  static std::string location(const clang::Diagnostic& info) {
    if (!info.getLocation().isValid() || !info.hasSourceManager()) return {};
    const clang::SourceManager& sm = info.getSourceManager();
    const clang::PresumedLoc at = sm.getPresumedLoc(sm.getFileLoc(info.getLocation()));
    if (at.isInvalid() || at.getFilename() == kMainFile) return {};
    return std::string(at.getFilename()) + ":" + std::to_string(at.getLine()) + ":" +
           std::to_string(at.getColumn()) + ": ";
  }

  std::string text_;
};

// ---------------------------------------------------------------------------
// Type rules (the table is in check.hpp)

enum class Position { Parameter, Result };

// The builtin type `type` denotes once typedefs are resolved, or null.
const clang::BuiltinType* builtin(clang::QualType type) {
  return llvm::dyn_cast<clang::BuiltinType>(type.getCanonicalType().getTypePtr());
}

bool isFloating(const clang::BuiltinType* type) {
  if (!type) return false;
  // Not _Float16 or __float128: no implicit conversion from double a user
  // would expect to be exact or cheap.
  const auto kind = type->getKind();
  return kind == clang::BuiltinType::Float || kind == clang::BuiltinType::Double ||
         kind == clang::BuiltinType::LongDouble;
}

bool isBool(const clang::BuiltinType* type) { return type && type->getKind() == clang::BuiltinType::Bool; }

// Enumerations are left out: an integer does not convert to one implicitly.
bool isInteger(const clang::BuiltinType* type) { return type && type->isInteger() && !isBool(type); }

std::string expected(Kind kind, Position position) {
  switch (kind) {
    case Kind::Real: return "`double`, `float` or `long double`";
    case Kind::Integer:
      return position == Position::Parameter ? "an integer type other than `bool`, or a floating type"
                                             : "an integer type other than `bool`";
    case Kind::Boolean: return "`bool`";
  }
  return {};
}

// Why `type` cannot take (Parameter) or give (Result) a value of `kind`;
// empty when it can.
std::string typeMismatch(Kind kind, clang::QualType type, Position position, const clang::PrintingPolicy& policy) {
  const std::string written = quoted(type.getAsString(policy));
  const std::string what = position == Position::Parameter ? written + " cannot take " + article(kind)
                                                           : "returns " + written + ", not " + article(kind);
  clang::QualType value = type.getCanonicalType();
  if (const auto* reference = llvm::dyn_cast<clang::ReferenceType>(value.getTypePtr())) {
    const clang::QualType referee = reference->getPointeeType();
    if (!reference->isLValueReferenceType()) return what + ": it is an rvalue reference";
    if (!referee.isConstQualified() || referee.isVolatileQualified())
      return what + ": it is a non-const reference" +
             (position == Position::Parameter ? ", through which the function could write to the argument" : "");
    value = referee;
  }
  const clang::BuiltinType* base = builtin(value.getUnqualifiedType());
  bool fits = false;
  switch (kind) {
    case Kind::Real: fits = isFloating(base); break;
    case Kind::Integer: fits = isInteger(base) || (position == Position::Parameter && isFloating(base)); break;
    case Kind::Boolean: fits = isBool(base); break;
  }
  if (fits) return {};
  return what + "; expected " + expected(kind, position) + ", by value or `const&`";
}

// ---------------------------------------------------------------------------
// Candidates

std::string sourceText(clang::SourceRange range, const clang::ASTContext& context) {
  return clang::Lexer::getSourceText(clang::CharSourceRange::getTokenRange(range), context.getSourceManager(),
                                     context.getLangOpts())
      .str();
}

// `double mylib::friction(double w, double mu = 0.5)`: the types as written,
// the name fully qualified (inline namespaces included, which helps when two
// versions of a library are visible).
std::string declaration(const clang::FunctionDecl& function, const clang::ASTContext& context) {
  const clang::PrintingPolicy& policy = context.getPrintingPolicy();
  std::string text;
  llvm::raw_string_ostream out(text);
  if (const clang::FunctionTemplateDecl* pattern = function.getDescribedFunctionTemplate()) {
    std::string parameters;
    llvm::raw_string_ostream parametersOut(parameters);
    pattern->getTemplateParameters()->print(parametersOut, context, policy);
    out << llvm::StringRef(parameters).rtrim() << ' ';  // Clang leaves a space of its own
  }
  out << function.getReturnType().getAsString(policy) << ' ';
  clang::PrintingPolicy naming = policy;
  naming.SuppressInlineNamespace = false;
  function.printQualifiedName(out, naming);
  out << '(';
  for (unsigned i = 0; i < function.getNumParams(); ++i) {
    const clang::ParmVarDecl& param = *function.getParamDecl(i);
    if (i > 0) out << ", ";
    param.getType().print(out, policy, param.getName());
    if (param.hasDefaultArg() && !param.hasUninstantiatedDefaultArg() && !param.hasUnparsedDefaultArg())
      out << " = " << sourceText(param.getDefaultArgRange(), context);
  }
  if (function.isVariadic()) out << (function.getNumParams() > 0 ? ", ..." : "...");
  out << ')';
  return text;
}

enum class Misfit { None, Uncallable, Arity, Parameter, Result };

struct Fit {
  Misfit misfit = Misfit::None;
  int parameter = -1;  // Misfit::Parameter
  std::string why;     // empty for Misfit::None
};

std::string arguments(std::size_t count) { return std::to_string(count) + (count == 1 ? " argument" : " arguments"); }

Fit fit(const clang::FunctionDecl& function, const Signature& signature, const clang::ASTContext& context) {
  if (function.isDeleted()) return {Misfit::Uncallable, -1, "it is deleted"};
  if (const auto* method = llvm::dyn_cast<clang::CXXMethodDecl>(&function); method && !method->isStatic())
    return {Misfit::Uncallable, -1, "it is a non-static member function, which needs an object"};
  if (function.getAccess() == clang::AS_private || function.getAccess() == clang::AS_protected)
    return {Misfit::Uncallable, -1,
            std::string("it is ") + (function.getAccess() == clang::AS_private ? "private" : "protected")};

  const std::size_t given = signature.params.size();
  const std::size_t most = function.getNumParams();
  const std::size_t least = function.getMinRequiredArguments();
  if (given < least || given > most) {
    std::string takes = least == most ? arguments(most) : std::to_string(least) + " to " + arguments(most);
    if (function.isVariadic()) takes += " before its `...`, which Capstan passes nothing through";
    return {Misfit::Arity, -1, "it takes " + takes + ", " + std::to_string(given) + " given"};
  }

  const clang::PrintingPolicy& policy = context.getPrintingPolicy();
  for (std::size_t i = 0; i < given; ++i) {
    const clang::ParmVarDecl& param = *function.getParamDecl(static_cast<unsigned>(i));
    std::string why = typeMismatch(signature.params[i], param.getType(), Position::Parameter, policy);
    if (!why.empty()) {
      const std::string label = param.getName().empty() ? "" : " " + quoted(param.getName());
      return {Misfit::Parameter, static_cast<int>(i), "parameter " + std::to_string(i + 1) + label + ": " + why};
    }
  }
  std::string why = typeMismatch(signature.result, function.getReturnType(), Position::Result, policy);
  if (!why.empty()) return {Misfit::Result, -1, "it " + why};
  return {};
}

Found describe(const clang::FunctionDecl& function, const clang::ASTContext& context) {
  Found result;
  result.declaration = declaration(function, context);
  // The first declaration is where a reader looks; redeclarations and the
  // definition share its type.
  const clang::Decl* first = function.getCanonicalDecl();
  if (const clang::FunctionTemplateDecl* pattern = function.getDescribedFunctionTemplate())
    first = pattern->getCanonicalDecl();
  const clang::SourceManager& sm = context.getSourceManager();
  const clang::PresumedLoc at = sm.getPresumedLoc(sm.getFileLoc(first->getLocation()));
  if (at.isValid()) {
    result.file = at.getFilename();
    result.line = at.getLine();
  }
  return result;
}

// ---------------------------------------------------------------------------
// Lookup

// `mylib::Friction::eval` -> {mylib, Friction, eval}; empty if it is not a
// (possibly `::`-rooted) sequence of identifiers.
std::vector<std::string> components(std::string_view qualifiedName) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  auto isIdentifier = [](std::string_view s) {
    if (s.empty() || (s.front() >= '0' && s.front() <= '9')) return false;
    for (char c : s)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
  };
  std::string_view rest = trim(qualifiedName);
  if (rest.substr(0, 2) == "::") rest.remove_prefix(2);
  std::vector<std::string> parts;
  while (true) {
    const std::size_t separator = rest.find("::");
    const std::string_view part = trim(rest.substr(0, separator));
    if (!isIdentifier(part)) return {};
    parts.emplace_back(part);
    if (separator == std::string_view::npos) return parts;
    rest.remove_prefix(separator + 2);
  }
}

// The scope a nested-name-specifier component names: a namespace (through an
// alias too) or a complete class (through a typedef too); null otherwise.
clang::DeclContext* scopeOf(clang::NamedDecl* found, clang::ASTContext& context) {
  clang::NamedDecl* decl = found->getUnderlyingDecl();
  if (auto* space = llvm::dyn_cast<clang::NamespaceDecl>(decl)) return space;
  if (auto* alias = llvm::dyn_cast<clang::NamespaceAliasDecl>(decl)) return alias->getNamespace();
  if (auto* type = llvm::dyn_cast<clang::TypeDecl>(decl)) {
    // Qualified lookup into a class needs its definition (Sema asserts it).
    if (clang::CXXRecordDecl* record = context.getTypeDeclType(type)->getAsCXXRecordDecl())
      return record->getDefinition();
  }
  return nullptr;
}

// What a declaration that is not a function is, for "names a ..., not a function".
std::string whatIs(const clang::NamedDecl& decl) {
  if (llvm::isa<clang::VarDecl>(decl) || llvm::isa<clang::FieldDecl>(decl)) return "a variable";
  if (llvm::isa<clang::NamespaceDecl>(decl) || llvm::isa<clang::NamespaceAliasDecl>(decl)) return "a namespace";
  if (llvm::isa<clang::TypeDecl>(decl) || llvm::isa<clang::TemplateDecl>(decl)) return "a type";
  if (llvm::isa<clang::EnumConstantDecl>(decl)) return "an enumerator";
  return "something";
}

// `(Real, Integer) -> Real`
std::string shape(const Signature& signature) {
  std::string text = "(";
  for (std::size_t i = 0; i < signature.params.size(); ++i)
    text += (i > 0 ? ", " : "") + std::string(name(signature.params[i]));
  return text + ") -> " + std::string(name(signature.result));
}

Check check(clang::Sema& sema, const Signature& signature) {
  clang::ASTContext& context = sema.getASTContext();
  const std::string shown = quoted(signature.qualifiedName);
  Check result;
  result.verdict = Verdict::NotFound;

  const std::vector<std::string> parts = components(signature.qualifiedName);
  if (parts.empty()) {
    result.detail = shown + " is not a C++ qualified name";
    return result;
  }
  auto lookup = [&](clang::DeclContext* scope, const std::string& part, clang::Sema::LookupNameKind kind) {
    clang::LookupResult found(sema, clang::DeclarationNameInfo(&context.Idents.get(part), clang::SourceLocation()),
                              kind);
    found.suppressDiagnostics();  // an ambiguity is reported by us, not printed by Sema
    sema.LookupQualifiedName(found, scope);
    return found;
  };

  clang::DeclContext* scope = context.getTranslationUnitDecl();
  std::string prefix;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    prefix += (i > 0 ? "::" : "") + parts[i];
    clang::LookupResult found = lookup(scope, parts[i], clang::Sema::LookupNestedNameSpecifierName);
    scope = found.isSingleResult() ? scopeOf(found.getFoundDecl(), context) : nullptr;
    if (!scope) {
      result.detail = "no namespace or class " + quoted(prefix) + " in the header";
      return result;
    }
  }

  clang::LookupResult found = lookup(scope, parts.back(), clang::Sema::LookupOrdinaryName);
  std::vector<const clang::FunctionDecl*> functions;  // a template as its pattern
  const clang::NamedDecl* other = nullptr;
  for (clang::NamedDecl* each : found) {
    const clang::NamedDecl* decl = each->getUnderlyingDecl();  // through using-declarations
    const clang::FunctionDecl* function = llvm::dyn_cast<clang::FunctionDecl>(decl);
    if (const auto* pattern = llvm::dyn_cast<clang::FunctionTemplateDecl>(decl)) function = pattern->getTemplatedDecl();
    if (!function) {
      other = decl;
      continue;
    }
    // Two using-declarations may bring in the same function.
    const auto same = [&](const clang::FunctionDecl* known) {
      return known->getCanonicalDecl() == function->getCanonicalDecl();
    };
    if (std::none_of(functions.begin(), functions.end(), same)) functions.push_back(function);
  }
  if (functions.empty()) {
    result.detail = other ? shown + " names " + whatIs(*other) + ", not a function" : "no " + shown + " in the header";
    return result;
  }

  std::vector<Fit> fits;
  int fitting = 0;
  for (const clang::FunctionDecl* function : functions) {
    Fit each = function->getDescribedFunctionTemplate()
                   ? Fit{Misfit::Uncallable, -1, "it is a function template, which Capstan cannot instantiate"}
                   : fit(*function, signature, context);
    Found candidate = describe(*function, context);
    candidate.mismatch = each.why;
    result.candidates.push_back(std::move(candidate));
    fitting += each.misfit == Misfit::None ? 1 : 0;
    fits.push_back(std::move(each));
  }

  // Functions of one name from several namespaces (using-directives) are an
  // overload set; anything else alongside them makes the name ambiguous,
  // which C++ would reject at the call whatever fits.
  if (found.isAmbiguous()) {
    result.verdict = Verdict::AmbiguousOverload;
    result.detail = shown + " is ambiguous in C++: it names declarations in more than one scope";
    return result;
  }
  const std::string call = shape(signature);
  if (functions.size() == 1) {
    const Fit& only = fits.front();
    switch (only.misfit) {
      case Misfit::None: result.verdict = Verdict::Ok; return result;
      case Misfit::Uncallable: result.verdict = Verdict::NoMatchingOverload; break;
      case Misfit::Arity: result.verdict = Verdict::WrongArity; break;
      case Misfit::Parameter:
        result.verdict = Verdict::WrongParameterType;
        result.parameter = only.parameter;
        break;
      case Misfit::Result: result.verdict = Verdict::WrongResultType; break;
    }
    result.detail = shown + " cannot be called as " + call + ": " + only.why;
    return result;
  }
  if (fitting == 1) {
    result.verdict = Verdict::Ok;
  } else if (fitting == 0) {
    result.verdict = Verdict::NoMatchingOverload;
    result.detail = "none of the " + std::to_string(functions.size()) + " declarations of " + shown +
                    " can be called as " + call;
  } else {
    result.verdict = Verdict::AmbiguousOverload;
    result.detail = std::to_string(fitting) + " declarations of " + shown + " can be called as " + call +
                    "; Capstan cannot tell which one C++ would choose";
  }
  return result;
}

// ---------------------------------------------------------------------------
// The Clang run

// Checks the signatures once the header has parsed; Sema is needed for C++'s
// qualified lookup (inline namespaces, using-directives, base classes).
class Checker : public clang::SemaConsumer {
 public:
  Checker(const std::vector<Signature>& signatures, std::vector<Check>& checks)
      : signatures_(signatures), checks_(checks) {}

  void InitializeSema(clang::Sema& sema) override { sema_ = &sema; }
  void ForgetSema() override { sema_ = nullptr; }

  void HandleTranslationUnit(clang::ASTContext& context) override {
    // After an error the AST is partial: the caller reports HeaderError.
    if (!sema_ || context.getDiagnostics().hasErrorOccurred()) return;
    for (const Signature& signature : signatures_) checks_.push_back(check(*sema_, signature));
  }

 private:
  const std::vector<Signature>& signatures_;
  std::vector<Check>& checks_;
  clang::Sema* sema_ = nullptr;
};

class CheckAction : public clang::ASTFrontendAction {
 public:
  CheckAction(const std::vector<Signature>& signatures, std::vector<Check>& checks)
      : signatures_(signatures), checks_(checks) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&, llvm::StringRef) override {
    return std::make_unique<Checker>(signatures_, checks_);
  }

 private:
  const std::vector<Signature>& signatures_;
  std::vector<Check>& checks_;
};

}  // namespace

std::vector<Check> checkHeader(const std::string& includeLine, const std::vector<std::string>& includeDirs,
                               const std::vector<Signature>& signatures) {
  // A driver command line, not a cc1 one: the driver finds libstdc++ (the GCC
  // installation) and the target's system directories as `clang++` would.
  // The resource directory (<stddef.h>, <stdarg.h>, ...) must match the
  // linked libclang's version and cannot be derived from argv[0], which is
  // not a real path here.
  // -fno-caret-diagnostics: else Clang prints "N errors generated." to
  // stderr itself, past our diagnostic consumer.
  std::vector<std::string> commandLine = {"clang++", "-std=c++20", "-fsyntax-only", "-fno-caret-diagnostics",
                                          "-x",      "c++",        "-resource-dir", CAPSTAN_CLANG_RESOURCE_DIR};
  for (const std::string& dir : includeDirs)
    if (!dir.empty()) commandLine.push_back("-I" + dir);
  commandLine.emplace_back(kMainFile);

  // The include line lives in memory over the real file system.
  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  memory->addFile(kMainFile, 0, llvm::MemoryBuffer::getMemBufferCopy(includeLine + "\n", kMainFile));
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(memory);
  auto files = llvm::makeIntrusiveRefCnt<clang::FileManager>(clang::FileSystemOptions(), overlay);

  std::vector<Check> checks;
  FirstError errors;
  clang::tooling::ToolInvocation invocation(std::move(commandLine),
                                            std::make_unique<CheckAction>(signatures, checks), files.get());
  invocation.setDiagnosticConsumer(&errors);
  const bool ran = invocation.run();

  if (ran && errors.text().empty() && checks.size() == signatures.size()) return checks;
  Check failed;
  failed.verdict = Verdict::HeaderError;
  failed.detail = errors.text().empty() ? "clang could not parse the include" : errors.text();
  return std::vector<Check>(signatures.size(), failed);
}

}  // namespace capstan::cppheader
