// The flattened model: what sema hands to mechanics and code generation.
// Every package, import, extends, modifier and component array has been
// resolved; what is left is a list of primitive (built-in) component
// instances with full paths (`link[2].body`), the flat variables (parameters,
// constants, inputs, outputs) with their evaluated values and their binding
// expressions, the connections between frames and the force-law equations.
// It is immutable once built.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sema/builtins.hpp"
#include "syntax/source.hpp"

namespace capstan::sema {

using syntax::SourceRange;

enum class ValueType { Real, Integer, Boolean, String, Reference };

const char* valueTypeName(ValueType t);

// An evaluated value: a scalar or an array (row-major), of one type.
// References hold component paths in `strings` ("ball1", "wrap[2]").
struct Value {
  ValueType type = ValueType::Real;
  std::vector<int> shape;            // {} scalar, {3} vector, {3,3} matrix
  std::vector<double> numbers;       // Real, Integer, Boolean (0/1)
  std::vector<std::string> strings;  // String, Reference

  std::size_t size() const;          // number of elements
  bool isScalar() const { return shape.empty(); }
  double scalar() const { return numbers.at(0); }
};

// A flat expression: variables are indices into FlatModel::variables, with
// constant, 0-based element indices already applied (`link[2].L` is variable
// 17; `body.com[2]` is {variable, element 1}).
struct FlatExpr;
using FlatExprPtr = std::shared_ptr<const FlatExpr>;

enum class FlatExprKind {
  Constant,   // value
  Variable,   // variable, element (-1: the whole variable)
  Time,       // `time`
  Unary,      // op (Neg, Not), args[0]
  Binary,     // op, args[0], args[1]
  If,         // args = {cond, then, else}
  Call,       // builtin (sin, cos, ..., cross, norm, ...) or an external `function`, args
  Array,      // args, shape
  Index,      // args[0] indexed by constant 0-based `indices`
};

// The operators of flat expressions (the parser's `.+`, `.-`, unary `+` are
// gone: sema has resolved them). Booleans are 0 and 1.
enum class FlatOp {
  Neg, Not,                      // unary
  Add, Sub,                      // element by element, a scalar broadcast
  Mul,                           // a scalar times anything; with two arrays the matrix product ([n]*[n]: dot)
  ElemMul, Div, Pow,             // element by element, a scalar broadcast
  Eq, Ne, Lt, Le, Gt, Ge,        // numeric scalars
  And, Or,                       // Boolean scalars
};

struct FlatExpr {
  FlatExprKind kind = FlatExprKind::Constant;
  SourceRange range;
  Value value;                  // Constant
  int variable = -1;            // Variable
  int element = -1;             // Variable: flat element index, -1 for all
  FlatOp op = FlatOp::Add;      // Unary, Binary
  const builtins::Builtin* builtin = nullptr;  // Call of a built-in function
  std::string function;         // Call: the function's name (an external's full name)
  std::vector<FlatExprPtr> args;
  std::vector<int> shape;       // result shape
  std::vector<int> indices;     // Index
};

enum class VarKind { Parameter, Constant, Input, Output, Continuous };

struct FlatVariable {
  std::string path;              // `link[2].body.mass`
  VarKind kind = VarKind::Parameter;
  ValueType type = ValueType::Real;
  std::vector<int> shape;
  std::string unit;              // as declared or inferred, "" if none
  std::string description;
  SourceRange range;             // the declaration (or the modifier that set it)
  FlatExprPtr binding;           // null for a parameter with no binding
  std::optional<Value> value;    // evaluated value (parameters, constants)
  bool evaluate = false;         // constant or annotation(Evaluate = true): fold
  bool structural = false;       // an Integer that sizes arrays or bounds loops
  // Its `min` and `max` as evaluated (one number, or one per element);
  // empty where it has none.
  std::vector<double> min, max;
  bool modified = false;         // its value is given by a modification (`j(x = 2)`,
                                 //   `extends C(x = 2)`), not by its declaration's binding
  int component = -1;            // owning primitive component, -1 if a model-level variable
  bool used = true;              // referenced anywhere (for the unused-parameter warning)
};

// A primitive component instance: one of SPEC §4's built-in components.
struct FlatComponent {
  std::string path;              // `link[2].body`
  std::string kind;              // `Body`, `Revolute`, ... (the built-in's name)
  SourceRange range;             // its declaration
  SourceRange instantiatedAt;    // the outermost declaration that created it (for notes)
  // The declaration at each level of its path, outermost first: for
  // `link2.joint`, `link2` in the model, then `joint` in `Parts.Segment`.
  struct Level {
    std::string inClass;         // the class whose instance declares it (`Parts.Segment`)
    std::string name;            // the declared name (`joint`)
    SourceRange range;           // its name in that declaration
  };
  std::vector<Level> levels;
  // Its parameters by name (`mass`, `axis`, `sphereF`) -> variable index.
  std::map<std::string, int> parameters;
  // Its continuous variables by name (a joint's `q`, `u`) -> variable index.
  std::map<std::string, int> continuous;
  // Its connectors (`frame_a`, `frame_b`) and force inputs (`tau`,
  // `tension`) with their sizes (1 for a scalar).
  std::vector<std::string> connectors;
  std::map<std::string, int> inputs;
};

// One end of a connect(): a connector (frame) of a primitive component.
struct ConnectorRef {
  int component = -1;            // index into FlatModel::components
  std::string connector;         // `frame_a`, `frame_b`
  SourceRange range;             // where it was written
};

struct FlatConnect {
  ConnectorRef a, b;
  SourceRange range;             // the connect equation
};

// `joint[1].tau = -2.0 * joint[1].u;`: an applied generalized force, or
// another explicit assignment to a component input (e.g. CableActuator.tension).
struct FlatForceLaw {
  int component = -1;            // the component whose input is set
  std::string input;             // `tau`, `tension`
  int element = -1;              // 0-based element for vector inputs, -1 for a scalar
  FlatExprPtr rhs;
  SourceRange range;
};

// A function written in C++ (`external "C++"`), called from force laws and
// outputs as FlatExprKind::Call with `function` = `name`.
struct FlatFunction {
  struct Arg {
    std::string name;
    ValueType type = ValueType::Real;
    std::vector<int> shape;
  };
  std::string name;              // the Capstan function's full name: `Robots.friction`
  std::string cppName;           // as written after `external "C++"`: `mylib::friction`
  std::string include;           // the Include annotation, e.g. `#include "friction.hpp"`
  std::string includeDirectory;  // the IncludeDirectory annotation, made absolute
                                 // relative to the defining file's directory ("" if none)
  std::vector<Arg> inputs;       // in declaration order
  std::vector<Arg> outputs;
  std::vector<std::string> callArgs;  // the external call's arguments as input names, in order
  // Modelica's `annotation(derivative = NAME)`: the function (index into
  // FlatModel::functions, -1 for none) that takes these inputs, then the
  // differential of each Real input (declaration order), and returns the
  // differential of the output: df = NAME(x, dx).
  int derivative = -1;
  SourceRange range;             // the function definition
  SourceRange externalRange;     // the `external` clause
};

struct Experiment {
  std::optional<double> startTime, stopTime, interval, tolerance;
  // Capstan's vendor setting `__capstan_integrator = "cvode"`: the name as
  // written (`simulate` checks it) and where.
  std::optional<std::string> integrator;
  SourceRange integratorRange;
  SourceRange range;
};

struct FlatModel {
  std::string name;              // the model's full name
  SourceRange range;             // its definition
  std::vector<FlatVariable> variables;
  std::vector<FlatComponent> components;
  std::vector<FlatConnect> connects;
  std::vector<FlatForceLaw> forceLaws;
  std::optional<Experiment> experiment;
  std::vector<FlatFunction> functions;  // external functions used by the model

  // Lookups by full path; -1 if absent. Constant time once buildIndex() has
  // run (flatten() calls it last); a model assembled by hand, or one whose
  // lists changed length since, falls back to a linear scan, so the answer
  // is always the first element with that path.
  int findVariable(const std::string& path) const;
  int findComponent(const std::string& path) const;
  // (Re)builds the path indexes; call it after changing `variables` or
  // `components` of a model that will be searched in a loop.
  void buildIndex();
  // The evaluated value of a component's parameter (throws std::out_of_range
  // if the component has no such parameter: an internal error).
  const Value& parameter(const FlatComponent& c, const std::string& name) const;

 private:
  // path -> index into `variables` / `components` (the first with that path).
  std::unordered_map<std::string, int> variableIndex_;
  std::unordered_map<std::string, int> componentIndex_;
  std::size_t indexedVariables_ = 0, indexedComponents_ = 0;  // list sizes when indexed
  bool indexed_ = false;
};

}  // namespace capstan::sema
