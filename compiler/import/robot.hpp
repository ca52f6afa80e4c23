// The robot description every importer reads into, and the one writer of
// the model (docs/import.md). A front end (urdf.cpp: URDF with urdfdom;
// sdf.cpp: SDFormat with libsdformat) fills a Robot from its file: links
// with their inertials and visuals, joints with their origins and axes, each
// element's line; then checkTree (the links form a tree), and writeModel
// (the bodies are sound; the model, one component per link and joint, the
// file's names kept by the rule of robotIdentifier).
//
//   SourceText source(path, text, sources);
//   Robot robot = ...;                       // the front end's reading
//   if (checkTree(robot, source, diags)) cap = writeModel(robot, source, options, diags);
#pragma once

#include <Eigen/Dense>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "syntax/diagnostics.hpp"

namespace capstan::import {

// What the user asks of an import (`capstan import` and every command given
// a robot description).
struct ImportOptions {
  std::string modelName;                              // --model; default: the robot's name as an identifier
  bool floatingBase = false;                          // --floating-base: a Free joint between world and the root link
  bool noMimic = false;                               // --no-mimic: mimicking joints independent, without a warning
  std::vector<std::filesystem::path> packagePaths;    // --package-path: where `package://NAME/...` meshes are found
  std::filesystem::path modelDir;                     // where the model is written: its meshes' paths are relative to it
};

// An element of the file: its line (1-based; 0 when unknown) and its tag,
// which a diagnostic underlines where it opens on that line (`<tag`).
struct Where {
  int line = 0;
  std::string tag;
};

// A pose as the file writes it: p_PF = xyz (m), R_PF = rpy(roll, pitch, yaw)
// (rad; roll about x, then pitch about y, then yaw about z, all of P).
struct Origin {
  Eigen::Vector3d xyz = Eigen::Vector3d::Zero();
  Eigen::Vector3d rpy = Eigen::Vector3d::Zero();
  bool identity() const { return xyz.isZero(0) && rpy.isZero(0); }
};

struct Inertial {
  double mass = 0;                                           // kg
  Eigen::Vector3d com = Eigen::Vector3d::Zero();             // p_BoBcm_B (m), B the link frame
  Eigen::Vector3d rpy = Eigen::Vector3d::Zero();             // of R_BC, as written (rad)
  Eigen::Matrix3d R_BC = Eigen::Matrix3d::Identity();        // the reader's rotation for rpy
  Eigen::Matrix3d I_C = Eigen::Matrix3d::Zero();             // about the center of mass in C (kg.m2), as written
  std::string note;                                          // said in the model's comment (SDFormat's defaults)
  Where where, inertiaWhere;                                 // <inertial>, <inertia>
};

struct Visual {
  std::string shape;                                         // "box size {..}", ...; empty for a mesh
  std::string kind;                                          // the `Visual`'s shape: box, sphere, cylinder; "" for none
  Eigen::Vector3d size = Eigen::Vector3d::Zero();            // the `Visual`'s size (m): edges, diameters, length
  std::optional<Eigen::Vector4d> rgba;                       // the material's color, 0 to 1
  std::string mesh;                                          // the mesh's reference as written
  Eigen::Vector3d scale = Eigen::Vector3d::Ones();
  Origin origin;                                             // in the link frame
  Where where;                                               // the <mesh>
};

struct Link {
  std::string name;
  Where where;
  std::optional<Inertial> inertial;
  std::vector<Visual> visuals;
  int collisions = 0;
  // Set by checkTree and writeModel:
  std::string id;
  int parentJoint = -1;
  std::vector<int> childJoints;                              // the file's order
  bool massive = false;                                      // an inertial with a positive mass
  double subtreeMass = 0;
};

struct Joint {
  // "revolute", "continuous", "prismatic", "fixed", "floating", "planar",
  // "ball", "universal".
  std::string name, type, parent, child;
  bool fromWorld = false;                                    // the parent is the world (SDFormat's `world`)
  Where where, parentWhere, childWhere, axisWhere;
  Origin origin;                                             // the joint frame J in the parent link's frame
  Origin toChild;                                            // the child link's frame in J (SDFormat), else identity
  Eigen::Vector3d axis = Eigen::Vector3d::UnitX();           // in J; universal: the first
  Eigen::Vector3d axis2 = Eigen::Vector3d::UnitY();          // universal: the second, in J at q = 0
  bool positionLimits = false;                               // lower and upper written
  double lower = 0, upper = 0;                               // rad or m
  bool rateLimits = false;                                   // effort and velocity written
  double effort = 0, velocity = 0;
  double damping = 0, friction = 0;                          // of a one-degree-of-freedom joint
  std::string unimported;                                    // what the joint has that is not imported, said in a comment
  struct Mimic {
    std::string joint;
    double multiplier = 1, offset = 0;
    Where where;
  };
  std::optional<Mimic> mimic;
  // Set by writeModel:
  std::string id;
};

struct Robot {
  std::string format;                                        // "URDF", "SDFormat"
  std::string name;
  Where where;
  std::vector<Link> links;
  std::vector<Joint> joints;
  Origin rootPose;                                           // the root link in the world (SDFormat's poses)
  std::string rootNote;                                      // said in the comment above the base
  std::string gravityNote;                                   // why z is up
  // Set by checkTree: the root link without a parent joint (-1: none, the
  // joints from the world carry the links).
  int root = -1;
};

// The file's text as the diagnostics see it: its id in `sources` and where
// each line starts.
class SourceText {
 public:
  SourceText(const std::filesystem::path& path, const std::string& text, syntax::SourceManager& sources);
  syntax::SourceRange at(int line, std::uint32_t length = 1) const;
  // The element's `<tag` on its line; the line's start when not found there.
  syntax::SourceRange at(const Where& where) const;
  // "robot.urdf:12", for the model's comments.
  std::string cite(const Where& where) const;
  const std::filesystem::path& path() const { return path_; }
  const std::string& text() const { return text_; }
  syntax::FileId file() const { return file_; }

 private:
  std::filesystem::path path_;
  const std::string& text_;
  syntax::FileId file_ = 0;
  std::vector<std::uint32_t> lineStarts_;
};

// The links as a tree: each joint's child gets its parent, each link its
// children; one root link (or none when joints from the world carry them),
// every link reached. Reports unknown links, second parents, several roots
// and loops; false after an error.
bool checkTree(Robot& robot, const SourceText& source, syntax::DiagnosticEngine& diags);

// After checkTree: the bodies checked (inertias, masses moved by joints,
// axes, meshes) and the model written; nullopt after an error.
std::optional<std::string> writeModel(Robot& robot, const SourceText& source, const ImportOptions& options,
                                      syntax::DiagnosticEngine& diags);

// The identifier of a name in the file (docs/import.md, "Names"): the name
// itself when it is an identifier, not a reserved word, and does not begin
// with `x_`; otherwise `x_` followed by the name with every byte other than
// a letter or digit written `_hh` (its two lower-case hex digits). The rule
// is reversible: robotName(robotIdentifier(n)) == n.
std::string robotIdentifier(const std::string& name);
std::string robotName(const std::string& identifier);

// The shortest text that reads back as `x`.
std::string num(double x);

}  // namespace capstan::import
