// The instance tree built while flattening one model, and the Flattener that
// owns it. Internal to sema.
//
// Instantiating a class creates an Instance whose elements (Nodes) are its
// own and inherited component declarations, each with its merged
// modification. Nodes are completed lazily, on first use (a binding that
// names a later declaration, an array size), so declaration order does not
// matter and dependency cycles are detected. Variables become
// FlatVariables; instances of built-in primitives (`__capstan(builtin = ..)`)
// become FlatComponents; everything else is a composite that only contributes
// paths.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sema/classes.hpp"
#include "sema/flat.hpp"
#include "sema/units.hpp"

namespace capstan::sema {

struct Instance;

// A (merged) modification: a value with the scope it was written in, and
// nested modifications by element name. Shared and immutable once built.
struct Mod;
using ModPtr = std::shared_ptr<const Mod>;

// One step of array distribution: a modifier on a component array
// `b[extent](x = {...})` gives element `index` (0-based) of its value to the
// element b[index + 1]; the value's leading dimension must equal `extent`.
struct Selection {
  int index = 0;
  int extent = 0;
};

struct Mod {
  const syntax::Expr* value = nullptr;
  Instance* scope = nullptr;      // instance in which `value` (and only it) is evaluated
  ClassNode* lexical = nullptr;   // class in which it was written (class-name lookup)
  std::vector<Selection> select;  // subscripts applied to the value (array distribution)
  SourceRange range;              // the modification, or the declaration's binding
  SourceRange nameRange;          // the modified element's name as written
  SourceRange valueRange;         // the value expression
  bool each = false;
  bool eachApplied = false;       // `each` was used to distribute over an array
  bool isFinal = false;
  SourceRange finalRange;
  std::vector<std::pair<std::string, ModPtr>> subs;

  const Mod* find(const std::string& name) const {
    for (const auto& [n, m] : subs) {
      if (n == name) return m.get();
    }
    return nullptr;
  }
  ModPtr findPtr(const std::string& name) const {
    for (const auto& [n, m] : subs) {
      if (n == name) return m;
    }
    return nullptr;
  }
};

enum class NodeKind { Pending, Completing, Variable, Component, Connector, ForceInput, Invalid };

struct Node {
  NodeKind kind = NodeKind::Pending;
  std::string name;
  const syntax::ComponentDecl* decl = nullptr;
  ClassNode* lexical = nullptr;   // class whose body holds the declaration
  ModPtr mod;                     // merged modification (may be null)
  ClassNode* type = nullptr;
  std::vector<int> dims;          // Component arrays: their dimensions
  std::vector<std::unique_ptr<Instance>> elems;  // Component: row-major elements
  int var = -1;                   // Variable: index into FlatModel::variables
  int connector = -1;             // Connector: index into Flattener::connectors_
  int inputSize = 1;              // ForceInput: number of elements
  std::vector<int> inputShape;    // ForceInput: {} or {n}
  Unit inputUnit;                 // ForceInput
};

struct Instance {
  std::string path;               // "" for the model itself, `link[2]`, `link[2].body`
  ClassNode* cls = nullptr;
  Instance* parent = nullptr;
  const syntax::ComponentDecl* decl = nullptr;  // null for the model itself
  int component = -1;             // FlatComponent index for a primitive
  std::vector<Node> nodes;
  std::unordered_map<std::string, int> byName;
  // Equations of the class and its bases, with the class they were written in.
  std::vector<std::pair<const syntax::Equation*, ClassNode*>> equations;

  std::string child(const std::string& name) const { return path.empty() ? name : path + "." + name; }
};

// What an expression is used for: which variables it may read.
enum class Purpose {
  Binding,     // a parameter or constant binding: parameters and constants only
  Structural,  // array sizes, subscripts, for ranges: evaluated now
  Dynamic,     // force laws and outputs: also time, q, u, frame quantities, inputs
};

// The result of translating an expression.
struct Typed {
  FlatExprPtr e;
  ValueType type = ValueType::Real;
  std::vector<int> shape;
  Unit unit;
  bool ok = false;
};

// Local variables of a function being inlined: each element's expression.
struct LocalValue {
  ValueType type = ValueType::Real;
  std::vector<int> shape;
  std::vector<FlatExprPtr> elems;  // row-major, null while unassigned
  Unit unit;
  syntax::SourceRange declared;  // its name in the function's declaration (unit notes)
};

struct Env {
  Instance* inst = nullptr;
  ClassNode* lexical = nullptr;
  Purpose purpose = Purpose::Binding;
  const std::vector<std::pair<std::string, int>>* iterators = nullptr;  // for-loop values
  std::map<std::string, LocalValue>* locals = nullptr;                  // function inlining
  int depth = 0;                                                         // inlining depth
};

struct VarInfo {
  Node* node = nullptr;
  Instance* owner = nullptr;
  ModPtr mod;
  enum class State { Unbound, Binding, Bound } binding = State::Unbound;
  enum class EvalState { None, Evaluating, Done, Failed } eval = EvalState::None;
  Unit unit;
  std::vector<std::string> allowedKinds;  // Reference variables
  bool colonDims = false;                 // shape taken from the binding
  bool rootLevel = false;
};

struct ConnectorInfo {
  Instance* owner = nullptr;
  std::string name;
  ClassNode* cls = nullptr;
  SourceRange declRange;
  bool primitive = false;
  std::unique_ptr<Instance> quantities;  // lazily created: `r`, `R`, `v`, `w`
  int parent = -1;                       // union-find
};

struct PendingForceLaw {
  const syntax::Expr* lhs = nullptr;     // null for a modifier binding
  const syntax::Expr* rhs = nullptr;
  Env env;
  std::vector<std::pair<std::string, int>> iterators;
  Instance* target = nullptr;
  Node* node = nullptr;
  int element = -1;
  std::vector<Selection> select;
  SourceRange range;
};

class Flattener {
 public:
  Flattener(Library::Impl& lib, syntax::DiagnosticEngine& diags, const std::vector<ParameterOverride>& overrides = {})
      : lib_(lib), diags_(diags) {
    for (const ParameterOverride& o : overrides) overrides_[o.path].push_back(o);
  }
  std::optional<FlatModel> run(ClassNode* model);

  // ---- modifiers.cpp
  ModPtr modFromClassMod(const syntax::ClassModification& mods, Instance* scope, ClassNode* lexical);
  ModPtr modFromDecl(const syntax::ComponentDecl& decl, Instance* scope, ClassNode* lexical);
  ModPtr merge(const ModPtr& outer, const ModPtr& inner, const std::string& name = "");
  ModPtr selectElement(const ModPtr& mod, int index, int extent);
  void collect(Instance& inst, ClassNode* cls, const ModPtr& mod, int depth);
  void checkModifierTargets(const ModPtr& mod, Instance& inst, const std::string& what);

  // ---- instantiate.cpp
  std::unique_ptr<Instance> instantiate(ClassNode* cls, const ModPtr& mod, std::string path,
                                        Instance* parent, const syntax::ComponentDecl* decl);
  Node* node(Instance& inst, const std::string& name);  // completes it; null if absent
  void complete(Instance& inst, Node& n);
  bool cyclic(const Instance& inst, const Node& n, const ClassNode* type);
  bool ensureBinding(int var);
  // Applies array distribution to a modifier's value `t` (written at
  // `valueRange`) for `target`: false, reported once per value, when the value
  // is scalar or its leading dimension differs from the component array's.
  bool distribute(Typed& t, const std::vector<Selection>& select, const syntax::Expr& value,
                  SourceRange valueRange, const std::string& target);
  // An array size from the dimension expression `d` (also `fill(x, n)` etc.):
  // reports InvalidArraySize unless 0 <= n <= kMaxArraySize.
  std::optional<int> checkedDimension(const syntax::Expr& d, const Env& env);
  const Value* ensureValue(int var, SourceRange usedAt);
  Instance* connectorQuantities(int connector);
  int findRoot(int connector);

  // ---- expr.cpp
  Typed translate(const syntax::Expr& e, const Env& env);
  Typed translateNode(const syntax::Expr& e, const Env& env);  // translate() without its depth check
  std::optional<Experiment> readExperiment(ClassNode& model);
  Typed translateRef(const syntax::Expr& e, const Env& env);
  Typed translateBinary(const syntax::Expr& e, const Env& env);
  // Resolves a (possibly subscripted) reference to what it names.
  struct Resolved {
    enum class Kind { None, Variable, Component, Connector, ForceInput, Iterator, Local, Time, Constant } kind =
        Kind::None;
    Instance* inst = nullptr;   // Component: the instance; ForceInput/Variable: owner
    Node* node = nullptr;
    int var = -1;
    std::vector<int> indices;   // constant subscripts applied to a variable / input
    int connector = -1;
    int iteratorValue = 0;
    LocalValue* local = nullptr;
    std::vector<int> componentDims;  // an unsubscripted component array
    std::vector<Instance*> components;
  };
  Resolved resolve(const syntax::Expr& ref, const Env& env, bool quiet = false);
  Typed variableRef(const syntax::Expr& e, const Resolved& r, const Env& env);
  std::optional<long> evalInteger(const syntax::Expr& e, const Env& env);
  Typed referenceValue(const syntax::Expr& e, const Env& env, const std::vector<std::string>& kinds,
                       const std::string& target);

  // ---- functions.cpp
  Typed translateCall(const syntax::Expr& e, const Env& env);
  Typed translateBuiltin(const syntax::Expr& e, const builtins::Builtin& f, const Env& env);
  Typed callFunction(ClassNode* fn, const syntax::Expr& e, const Env& env);
  Typed readLocal(const syntax::Expr& e, LocalValue& local, const Env& env);
  bool execute(const syntax::Statement& s, Env& env, std::vector<std::pair<std::string, int>>& iters,
               ClassNode* fn);
  int externalFunction(ClassNode* fn);
  int derivativeFunction(ClassNode* fn, const syntax::Modification& derivative);

  // ---- eval.cpp
  std::optional<Value> evaluate(const FlatExpr& e, SourceRange at);
  FlatExprPtr fold(FlatExprPtr e);

  // ---- flatten.cpp
  void processEquations(Instance& inst);
  void processEquation(const syntax::Equation& eq, Env env, std::vector<std::pair<std::string, int>>& iters);
  void finishForceLaw(PendingForceLaw& p);
  // Notes at the declarations of the variables with units that `e` reads
  // (the first few), each with its unit as written: where a mismatched
  // value's unit comes from.
  void noteUnitsRead(syntax::Diagnostic& d, const syntax::Expr& e, const Env& env);
  std::string describeNode(const Node& n) const;
  // SPEC §4: a model with no `World` anywhere gets `Capstan.World world`.
  void addImplicitWorld(ClassNode* model);

  Library::Impl& lib_;
  syntax::DiagnosticEngine& diags_;
  FlatModel out_;
  std::vector<VarInfo> info_;
  std::vector<ConnectorInfo> connectors_;
  std::unique_ptr<Instance> root_;
  std::vector<PendingForceLaw> forceLaws_;
  std::map<std::string, std::vector<ParameterOverride>> overrides_;  // by variable path, in order given
  std::vector<struct ConnectPair> connectPairs_;
  std::map<std::string, int> externalIndex_;  // function full name -> FlatModel::functions
  std::map<std::tuple<int, std::string, int>, SourceRange> assigned_;
  int translateDepth_ = 0;  // translate() calls open
  int valueDepth_ = 0;      // ensureValue() calls open
  bool reportedValueDepth_ = false;
  bool quiet_ = false;  // evaluate() without diagnostics (constant folding)
  std::set<const syntax::ComponentDecl*> reportedCycles_;  // CyclicComponent, once per declaration
  std::set<const syntax::ComponentDecl*> reportedVariables_;  // UnsupportedVariable, once per declaration
  std::set<const syntax::Expr*> reportedDistribution_;  // distribute() errors, once per modifier value
  std::unique_ptr<syntax::ComponentDecl> implicitWorld_;  // the declaration `world` stands for
};

struct ConnectPair {
  int a = -1, b = -1;
  SourceRange rangeA, rangeB, range;
};

// Helpers shared by the translation units.
// The largest array size (elements of one dimension, and of a whole component
// array or range) the front end accepts. Every element becomes a flat
// variable or constant held in memory and then generated code, so sizes past
// this are almost surely mistakes (or wrapped integers) and would exhaust
// memory or overflow `int` long before producing a usable model.
inline constexpr long kMaxArraySize = 1000000;
// The deepest nesting of translate() calls, and of ensureValue() calls: the
// parser's limit on one expression (syntax/parser_impl.hpp), here for
// expressions, inlined function bodies and parameter bindings together.
// About 2.5 KiB of stack a level.
inline constexpr int kMaxTranslateDepth = 1000;
std::string shapeString(const std::vector<int>& shape);
std::string typeString(ValueType t, const std::vector<int>& shape);
FlatExprPtr makeConstant(Value v, SourceRange r);
Value scalarValue(double x, ValueType t = ValueType::Real);
using syntax::formatNumber;
std::string formatValue(const Value& v);
// "1 dimension", "2 subscripts".
std::string countOf(std::size_t n, const char* word);
// The scalar elements of an expression of the given shape, row-major.
std::vector<FlatExprPtr> scalarElements(const FlatExprPtr& e, const std::vector<int>& shape);

}  // namespace capstan::sema
