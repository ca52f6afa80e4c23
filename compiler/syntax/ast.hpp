// The abstract syntax tree of a Capstan (.cap) file: the Modelica subset of
// SPEC.md §2-§4. The parser builds it; sema reads it (const) and never
// changes it. Every node carries the SourceRange it was parsed from.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "syntax/source.hpp"

namespace capstan::syntax {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// One identifier of a dotted name with optional subscripts: `link[i+1]`.
struct NamePart {
  std::string name;
  std::vector<ExprPtr> subscripts;  // empty when not subscripted
  SourceRange range;                // the identifier and its subscripts
};

// A dotted name `a.b[2].c` (component reference) or type name `Capstan.Body`.
struct Name {
  std::vector<NamePart> parts;
  SourceRange range;
  bool global = false;  // written with a leading dot: `.Capstan.Body`

  // "a.b.c" without subscripts; for messages and lookups.
  std::string dotted() const;
};

enum class ExprKind {
  Number,      // number, isInteger
  String,      // text
  Boolean,     // boolean
  Ref,         // name (a component reference; also `time`, `pi`)
  Unary,       // op, args[0]
  Binary,      // op, args[0], args[1]
  If,          // args = {cond1, value1, cond2, value2, ..., elseValue}
  Call,        // name (function), args (positional), namedArgs
  Array,       // args = elements of `{a, b, c}`
  Range,       // args = {start, stop} or {start, step, stop}
  End,         // `end` inside a subscript
  Colon,       // `:` as a whole-dimension subscript
};

enum class Op {
  Add, Sub, Mul, Div, Pow,          // + - * / ^
  ElemAdd, ElemSub, ElemMul, ElemDiv, ElemPow,  // .+ .- .* ./ .^
  Eq, Ne, Lt, Le, Gt, Ge,           // == <> < <= > >=
  And, Or, Not,                     // and or not
  Neg, Plus,                        // unary - and +
};

const char* opSpelling(Op op);

struct NamedArg {
  std::string name;
  SourceRange nameRange;
  ExprPtr value;
};

struct Expr {
  ExprKind kind = ExprKind::Number;
  SourceRange range;
  double number = 0.0;
  bool isInteger = false;  // the literal had no '.', 'e' or 'E'
  bool boolean = false;
  std::string text;        // String literal contents (escapes resolved)
  Op op = Op::Add;
  Name name;               // Ref, Call
  std::vector<ExprPtr> args;
  std::vector<NamedArg> namedArgs;
};

// A modification `x = 1`, `x(y = 2)`, `each x = 3`, `final x = 4`, or the
// dotted short form `body.mass = 2`. Both `value` and `nested` may be set:
// `x(unit = "m") = 2`.
struct Modification;
using ClassModification = std::vector<Modification>;

struct Modification {
  SourceRange range;
  bool each = false;
  bool isFinal = false;
  Name target;                 // the modified element; more than one part for `a.b = ...`
  ClassModification nested;    // `(...)` after the name
  ExprPtr value;               // `= expr`, may be null
  std::string description;     // rare: `x = 1 "why"`
};

// `annotation(...)`: kept as a class modification. Known annotations
// (experiment, Evaluate, Include, IncludeDirectory, __capstan) are read by
// sema; unknown ones are kept and ignored.
struct Annotation {
  SourceRange range;
  ClassModification mods;
  bool present() const { return range.valid(); }
};

enum class Variability { Continuous, Parameter, Constant };
enum class Causality { None, Input, Output };

struct ComponentDecl {
  SourceRange range;      // whole declaration
  SourceRange nameRange;  // the component's identifier
  Variability variability = Variability::Continuous;
  Causality causality = Causality::None;
  bool isFinal = false;
  bool isProtected = false;  // declared in a `protected` section
  Name typeName;             // `Real`, `Capstan.Body`, `Robots.Link`
  std::vector<ExprPtr> typeDims;  // `Real[3]`: {3}
  std::string name;
  std::vector<ExprPtr> dims;      // `link[n]`: {n}
  ClassModification mods;         // `(mass = 2, ...)`
  ExprPtr binding;                // `= expr`
  std::string description;
  Annotation annotation;
};

struct ExtendsClause {
  SourceRange range;
  Name base;
  ClassModification mods;
  Annotation annotation;
};

struct ImportClause {
  SourceRange range;
  Name path;                // `Capstan` for `import Capstan.*;`, `Capstan.Body` otherwise
  bool wildcard = false;    // `import A.B.*;`
  std::string alias;        // `import R = Capstan.Revolute;`
};

struct Equation;
using EquationPtr = std::unique_ptr<Equation>;

enum class EquationKind {
  Connect,  // connect(lhs, rhs)
  Assign,   // lhs = rhs (a force law, an output binding, ...)
  For,      // for iterator in range loop body end for;
};

struct Equation {
  EquationKind kind = EquationKind::Assign;
  SourceRange range;
  ExprPtr lhs;                     // Connect: first connector (a Ref); Assign: the target
  ExprPtr rhs;                     // Connect: second connector; Assign: the value
  std::string iterator;            // For
  SourceRange iteratorRange;       // For
  ExprPtr iterRange;               // For: usually a Range expression
  std::vector<EquationPtr> body;   // For
  std::string description;
  Annotation annotation;
};

// A statement of a function's `algorithm` section: `lhs := rhs;` or a for loop.
struct Statement;
using StatementPtr = std::unique_ptr<Statement>;
struct Statement {
  SourceRange range;
  bool isFor = false;
  ExprPtr lhs;                      // a Ref, possibly subscripted
  ExprPtr rhs;
  std::string iterator;             // isFor
  SourceRange iteratorRange;        // isFor
  ExprPtr iterRange;                // isFor
  std::vector<StatementPtr> body;   // isFor
};

// `external "C++" out = name(args) annotation(Include = ..., IncludeDirectory = ...);`
struct ExternalClause {
  SourceRange range;
  std::string language;      // "C++", "C", "builtin"
  SourceRange languageRange;
  ExprPtr output;            // the Ref left of `=`, may be null
  std::string functionName;  // as written, e.g. "mylib::friction"
  SourceRange functionRange;
  std::vector<ExprPtr> args;
  Annotation annotation;
};

enum class ClassKind { Model, Package, Function, Record, Connector, Block, Type, Class };

const char* classKindName(ClassKind k);

struct ClassDef;
using ClassDefPtr = std::unique_ptr<ClassDef>;

struct ClassDef {
  ClassKind kind = ClassKind::Model;
  SourceRange range;      // whole definition, `model` .. `end X;`
  SourceRange nameRange;  // the name after the keyword
  std::string name;
  std::string description;
  bool isPartial = false;
  bool isEncapsulated = false;
  // Short class definition `type Angle = Real(unit = "rad");` or
  // `model A = B(...)`: `shortBase` is set and the body is empty.
  std::optional<Name> shortBase;
  std::vector<ExprPtr> shortDims;
  ClassModification shortMods;

  std::vector<ImportClause> imports;
  std::vector<ExtendsClause> extends;
  std::vector<ComponentDecl> components;
  std::vector<ClassDefPtr> classes;       // nested classes
  std::vector<EquationPtr> equations;
  std::vector<StatementPtr> algorithm;    // functions
  std::optional<ExternalClause> external; // functions
  Annotation annotation;                  // class annotation(s), merged in order
  SourceRange endNameRange;               // the name after `end`
};

// One parsed file.
struct StoredDefinition {
  FileId file = 0;
  std::optional<Name> within;
  std::vector<ClassDefPtr> classes;
};

}  // namespace capstan::syntax
