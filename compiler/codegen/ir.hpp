// The code-generation IR (docs/ir.md) as typed structs: what tracing
// produces and the templates render. Serialized to JSON in one place
// (ir.cpp's to_json); the field names are the JSON keys, and
// tests/unit/ir_test.cpp checks them against docs/ir.md's tables. Values the
// templates would otherwise compute (sums, unions) are fields here, so a
// template only loops and substitutes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace capstan::codegen::ir {

struct Source {
  std::string file;   // the model file as shown in the banner: `double_pendulum.cap`
  std::string model;  // the full model name
};

struct Joint {
  std::string name;
  std::string type;  // JointTraits<...>::name
  int body = 0;      // index of its child body
  int parent = -1;   // body index, -1 World
  int q_index = 0, u_index = 0;
  int nq = 0, nu = 0;
  bool reversed = false;
  std::vector<std::string> q_names, u_names;
};

struct Body {
  std::string name;   // component path of its `Body`
  std::string ident;  // monogram suffix: `X_W<ident>`
  std::size_t index = 0;
};

struct ParameterSlot {
  std::string name;    // as `--set` accepts it: `b.inertia[1,2]`
  std::string lvalue;  // C++: `params.b_inertia[1]`
};

struct Parameter {
  std::string name;         // model path
  std::string ident;        // C++ field
  std::string cpp_type;     // `double` or `std::array<double, N>`
  std::string initializer;  // C++ text
  std::vector<int> shape;
  std::vector<double> default_values;  // key `default`: row-major
  std::string unit, description;
  std::vector<ParameterSlot> slots;
};

struct Variable {  // an input or an output
  std::string name, ident, unit, description;
};

struct External {
  std::string name;      // the Capstan function
  std::string cpp_name;  // what the code calls: `mylib::friction`
  std::string include;   // the `Include` line, may be empty
  std::string line;      // `file.cap:8`
};

struct Frame {
  std::string name;  // `upper`, `tip.frame_b`
  int body = 0;
  std::string body_ident;
  std::vector<std::string> point;  // three C++ expressions
};

struct Constraint {
  std::string name;
  std::string kind;  // `loop joint` or `SphereOnSphereContact`
  int holonomic_row = 0, holonomic = 0;
  int nonholonomic_row = 0, nonholonomic = 0;
  int contact = -1;
};

struct CableSurface {  // the surface fields of an obstacle of kind `surface`
  std::string surface;       // the capstan::geometry constructor (C++)
  std::string surface_name;  // component path
  std::string near;          // C++ `Eigen::Vector3d`
  std::string friction;      // C++ expression
};

struct CableObstacle {
  std::string name;
  std::string kind;  // `end_point`, `via_point`, `surface`
  int body = -1;
  std::optional<CableSurface> surface;  // its keys beside the others
};

struct CableSpring {
  std::string name, line, stiffness, slack_length, dissipation;
};

struct CableActuator {
  std::string name, line;
};

struct Cable {
  std::string name, line;
  int first_frame = 0, first_actuator = 0;
  std::vector<CableObstacle> obstacles;
  std::vector<CableSpring> springs;
  std::vector<CableActuator> actuators;
};

struct Derived {
  std::string name;
  int size = 0;
  std::string comment;
  bool scalar = false;  // one `double` read as derived_.NAME; else std::array<double, size>
};

struct Block {
  std::string comment;  // the model element it comes from
  std::string code;     // straight-line statements, one per line
};

struct Part {
  std::string name;  // `part1`
  std::vector<Block> blocks;
};

// A step several blocks of a function share (codegen/steps.hpp): a static
// member function the blocks call, its values passed through pointers.
struct Kernel {
  std::string name;           // `forwardDynamicsStep1`
  std::string params;         // `const double* __restrict A0, ..., double* __restrict o`
  std::vector<std::string> doc;
  std::string code;           // straight-line statements, one per line
  bool inline_ = false;       // "inline": small, the compiler may inline it at its calls
};

struct Function {
  std::string name;
  std::optional<std::string> key;  // an overload's row name in the function table
  std::string return_type, params;
  std::vector<std::string> doc;
  std::string operations;
  std::vector<std::string> opening, prologue;
  std::vector<Block> blocks;
  std::vector<std::string> epilogue;
  std::vector<Part> parts;
  std::vector<std::string> work;
  std::optional<std::string> work_type, part_params, args;  // split functions
  std::optional<nlohmann::json> method;                     // operation counts (docs/ir.md)
  std::optional<std::vector<std::string>> includes;
  std::optional<std::string> access;  // "private": a helper of other functions, not the class's interface
  std::optional<bool> fused;  // true: clang may fuse multiplies and adds across its statements
  std::optional<std::vector<Kernel>> kernels;  // the steps its blocks share, emitted before it
};

// What a traced result reads of the state and the time: the positions in
// x = [q; u] its code reads, ascending, and whether it reads `time`.
struct Dependency {
  std::vector<int> states;
  bool time = false;
};

// TraceOptions::dependencies: the results' structural dependencies (an
// FMU's ModelStructure). Absent where the traced code does not show them:
// udot with cables (the path solver) or constraints, the potential energy
// with cables.
struct Dependencies {
  std::vector<Dependency> qdot;                 // nq
  std::optional<std::vector<Dependency>> udot;  // nu
  std::vector<Dependency> outputs;              // the model's outputs, in order
  Dependency kinetic_energy;
  std::optional<Dependency> potential_energy;
};

struct Model {
  int ir_version = 0;
  std::string generator;
  Source source;
  std::string class_name;
  int nq = 0, nu = 0, nb = 0;
  bool mass_matrix_dynamic = false;
  bool derivatives = false;  // the derivative functions are traced (TraceOptions::derivatives)
  std::vector<Joint> joints;
  std::vector<std::string> q_names, u_names;
  std::vector<std::string> q_units, u_units;  // each coordinate's and speed's unit, in state order
  std::vector<int> quaternions;
  std::vector<Body> bodies;
  std::vector<Parameter> parameters;
  std::vector<Variable> inputs, outputs;
  std::vector<External> externals;
  std::vector<std::string> external_includes;  // distinct non-empty `include`s, in order
  std::vector<Function> functions;
  std::vector<std::string> includes;  // distinct `includes` of all functions, in order
  std::vector<Frame> frames;
  // "unrolled": frameJacobian<Body>, frameJacobianDotU<Body> and massMatrix
  // are traced functions; "compact": the template writes them, over
  // frameKinematics and massMatrixKinematics (TraceOptions::quadratic).
  std::string quadratic = "unrolled";
  // "unrolled": the tree recursions (bodyPoses, bias, forwardDynamics, ...)
  // are traced functions; "loops": the template writes them as loops over
  // the tree, over jointKinematics (TraceOptions::recursions).
  std::string recursions = "unrolled";
  std::vector<Cable> cables;
  int cable_obstacle_count = 0, cable_actuator_count = 0;
  std::vector<std::string> bushings;
  std::vector<std::string> event_indicators;  // eventIndicators' z, named (ModelLayout::eventIndicators)
  int event_indicators_traced = 0;            // its first ones, the compliant contacts' (traced); the rest the cables'
  std::vector<Constraint> constraints;
  std::vector<std::string> constraint_kinematics;  // ConstraintKinematics' member declarations
  int holonomic_rows = 0, constraint_rows = 0, contact_count = 0;
  std::vector<Derived> derived;
  std::optional<Dependencies> dependencies;  // only when asked for (TraceOptions::dependencies)
};

// Fills the fields computed from others (external_includes, includes,
// holonomic_rows, constraint_rows, contact_count).
void summarize(Model& model);

void to_json(nlohmann::json& j, const Source& v);
void to_json(nlohmann::json& j, const Joint& v);
void to_json(nlohmann::json& j, const Body& v);
void to_json(nlohmann::json& j, const ParameterSlot& v);
void to_json(nlohmann::json& j, const Parameter& v);
void to_json(nlohmann::json& j, const Variable& v);
void to_json(nlohmann::json& j, const External& v);
void to_json(nlohmann::json& j, const Frame& v);
void to_json(nlohmann::json& j, const Constraint& v);
void to_json(nlohmann::json& j, const CableObstacle& v);
void to_json(nlohmann::json& j, const CableSpring& v);
void to_json(nlohmann::json& j, const CableActuator& v);
void to_json(nlohmann::json& j, const Cable& v);
void to_json(nlohmann::json& j, const Derived& v);
void to_json(nlohmann::json& j, const Block& v);
void to_json(nlohmann::json& j, const Part& v);
void to_json(nlohmann::json& j, const Kernel& v);
void to_json(nlohmann::json& j, const Function& v);
void to_json(nlohmann::json& j, const Dependency& v);
void to_json(nlohmann::json& j, const Dependencies& v);
void to_json(nlohmann::json& j, const Model& v);

// The function and Derived entries FunctionBuilder and DerivedValues write
// as JSON, read into the structs; a key the struct does not have throws
// std::logic_error (the schema is the struct's).
void from_json(const nlohmann::json& j, Block& v);
void from_json(const nlohmann::json& j, Part& v);
void from_json(const nlohmann::json& j, Kernel& v);
void from_json(const nlohmann::json& j, Function& v);
void from_json(const nlohmann::json& j, Derived& v);

}  // namespace capstan::codegen::ir
