// The URDF importer (urdf.hpp). Three passes over one file:
//   1. tinyxml2 reads the XML: a malformed file is located at tinyxml2's
//      line; each <link> and <joint> element keeps its line, and the tree
//      (names, types, parents, children) is checked here, where each error
//      can point at its element;
//   2. urdfdom reads the robot (masses, inertias, axes, limits, dynamics,
//      mimic, visuals); what it still rejects is reported with its words;
//   3. the model is written in the tree's depth-first order, children in
//      the file's order, which is also the order of the model's states.
#include "import/urdf.hpp"

#include <console_bridge/console.h>
#include <tinyxml2.h>
#include <urdf_parser/urdf_parser.h>

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "syntax/lexer.hpp"

namespace fs = std::filesystem;
using capstan::syntax::DiagKind;
using capstan::syntax::SourceRange;

namespace capstan::import {

namespace {

// ---- names ------------------------------------------------------------------

bool isIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Words a component of the written model cannot be called: the language's
// keywords, its built-in constants, and the names the model itself uses.
bool reserved(const std::string& s) {
  static const std::set<std::string> kWords = {
      "time", "pi", "world", "Capstan", "Frames", "Body", "Revolute", "Prismatic", "Free", "FixedFrame",
      "FixedTranslation", "World", "Real", "Integer", "Boolean", "String", "frictionSpeed"};
  return syntax::isKeyword(syntax::keywordKind(s)) || kWords.count(s) > 0;
}

// ---- numbers ----------------------------------------------------------------

// The shortest text that reads back as `x` ("0" for -0): positional
// (`0.0005`) for magnitudes from 1e-5 to 1e15, else with an exponent.
std::string num(double x) {
  if (x == 0) return "0";
  std::array<char, 400> buf{};
  const double a = std::abs(x);
  const auto r = a >= 1e-5 && a < 1e15 ? std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::fixed)
                                       : std::to_chars(buf.data(), buf.data() + buf.size(), x);
  return std::string(buf.data(), r.ptr);
}

std::string vec(const Eigen::Vector3d& v) { return "{" + num(v.x()) + ", " + num(v.y()) + ", " + num(v.z()) + "}"; }

std::string mat(const Eigen::Matrix3d& m) {
  std::string out = "{";
  for (int i = 0; i < 3; ++i) out += (i ? ", " : "") + vec(m.row(i).transpose());
  return out + "}";
}

Eigen::Vector3d toEigen(const urdf::Vector3& v) { return {v.x, v.y, v.z}; }

Eigen::Matrix3d rotationOf(const urdf::Rotation& r) {
  return Eigen::Quaterniond(r.w, r.x, r.y, r.z).normalized().toRotationMatrix();
}

// Three numbers in an attribute, as the file writes them (urdfdom keeps a
// quaternion for rpy; the model writes the file's angles). Missing: zeros.
Eigen::Vector3d attributeVector(const tinyxml2::XMLElement* el, const char* name) {
  Eigen::Vector3d v = Eigen::Vector3d::Zero();
  const char* text = el ? el->Attribute(name) : nullptr;
  if (!text) return v;
  std::istringstream in(text);
  for (int i = 0; i < 3 && (in >> v[i]); ++i) {
  }
  return v;
}

// ---- the file as read ---------------------------------------------------------

struct JointInfo {
  std::string name, type, parent, child, id;
  const tinyxml2::XMLElement* el = nullptr;
  urdf::JointConstSharedPtr joint;
};

struct LinkInfo {
  std::string name, id;
  const tinyxml2::XMLElement* el = nullptr;
  urdf::LinkConstSharedPtr link;
  int parentJoint = -1;
  std::vector<int> childJoints;  // the file's order
  bool massive = false;          // an <inertial> with a positive mass
  double subtreeMass = 0;
};

// Collects urdfdom's messages while it reads (console_bridge prints them on
// stderr otherwise), and restores the previous handler after.
class Capture : public console_bridge::OutputHandler {
 public:
  Capture() { console_bridge::useOutputHandler(this); }
  ~Capture() override { console_bridge::restorePreviousOutputHandler(); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  void log(const std::string& text, console_bridge::LogLevel level, const char*, int) override {
    if (level >= console_bridge::CONSOLE_BRIDGE_LOG_ERROR && first.empty()) first = text;
  }
  std::string first;
};

class Importer {
 public:
  Importer(const fs::path& path, const std::string& text, const UrdfOptions& options,
           syntax::SourceManager& sources, syntax::DiagnosticEngine& diags)
      : path_(path), text_(text), options_(options), diags_(diags) {
    file_ = sources.add(path.string(), text);
    lineStarts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') lineStarts_.push_back(static_cast<std::uint32_t>(i + 1));
  }

  std::optional<std::string> run() {
    if (!readXml() || !checkTree()) return std::nullopt;
    if (!readModel()) return std::nullopt;
    if (root_ < 0) {
      diags_.report(DiagKind::UrdfRejected, at(robot_), std::string("the robot has no link"));
      return std::nullopt;
    }
    checkBodies();
    if (diags_.hasErrors()) return std::nullopt;
    return write();
  }

 private:
  // ---- locations ----
  SourceRange at(int line, std::uint32_t length = 1) const {
    if (line < 1 || static_cast<std::size_t>(line) > lineStarts_.size()) return {file_, 0, 0};
    const std::uint32_t b = lineStarts_[static_cast<std::size_t>(line - 1)];
    return {file_, b, std::min<std::uint32_t>(b + length, static_cast<std::uint32_t>(text_.size()))};
  }
  // The element's `<name`, found on its line (tinyxml2 gives the line only).
  SourceRange at(const tinyxml2::XMLElement* el) const {
    if (!el) return {file_, 0, 0};
    const int line = el->GetLineNum();
    SourceRange r = at(line);
    const std::string tag = std::string("<") + el->Name();
    const std::size_t end = static_cast<std::size_t>(line) < lineStarts_.size()
                                ? lineStarts_[static_cast<std::size_t>(line)]
                                : text_.size();
    const std::size_t found = text_.find(tag, r.begin);
    if (found != std::string::npos && found < end) {
      r.begin = static_cast<std::uint32_t>(found);
      r.end = static_cast<std::uint32_t>(found + tag.size());
    }
    return r;
  }
  std::string cite(const tinyxml2::XMLElement* el) const {
    return path_.filename().string() + ":" + std::to_string(el ? el->GetLineNum() : 0);
  }

  // ---- pass 1: the XML and the tree ----
  bool readXml() {
    doc_.Parse(text_.c_str(), text_.size());
    if (doc_.Error()) {
      diags_.report(DiagKind::UrdfMalformedXml, at(doc_.ErrorLineNum()), xmlError());
      return false;
    }
    robot_ = doc_.RootElement();
    if (!robot_ || std::string(robot_->Name()) != "robot") {
      diags_.report(DiagKind::UrdfNotRobot, at(robot_), std::string(robot_ ? robot_->Name() : ""));
      return false;
    }
    for (const auto* el = robot_->FirstChildElement("link"); el; el = el->NextSiblingElement("link")) {
      LinkInfo l;
      l.name = el->Attribute("name") ? el->Attribute("name") : "";
      l.el = el;
      if (!linkIndex_.count(l.name)) linkIndex_[l.name] = static_cast<int>(links_.size());
      links_.push_back(l);
    }
    for (const auto* el = robot_->FirstChildElement("joint"); el; el = el->NextSiblingElement("joint")) {
      JointInfo j;
      auto attr = [](const tinyxml2::XMLElement* e, const char* n) { return std::string(e && e->Attribute(n) ? e->Attribute(n) : ""); };
      j.name = attr(el, "name");
      j.type = attr(el, "type");
      j.parent = attr(el->FirstChildElement("parent"), "link");
      j.child = attr(el->FirstChildElement("child"), "link");
      j.el = el;
      joints_.push_back(j);
    }
    return true;
  }

  // tinyxml2's error in words: what it found, then its detail (the text
  // after "Line number=N: " in its ErrorStr, such as `XMLElement name=joint`).
  std::string xmlError() const {
    using tinyxml2::XMLError;
    std::string what;
    switch (doc_.ErrorID()) {
      case XMLError::XML_ERROR_MISMATCHED_ELEMENT: what = "an end tag is missing or does not match its element"; break;
      case XMLError::XML_ERROR_PARSING_ELEMENT: what = "an element cannot be read"; break;
      case XMLError::XML_ERROR_PARSING_ATTRIBUTE: what = "an attribute cannot be read"; break;
      case XMLError::XML_ERROR_PARSING_TEXT: what = "text cannot be read"; break;
      case XMLError::XML_ERROR_PARSING_COMMENT: what = "a comment is not closed"; break;
      case XMLError::XML_ERROR_EMPTY_DOCUMENT: what = "the file holds no element"; break;
      default: what = doc_.ErrorName(); break;
    }
    const std::string full = doc_.ErrorStr() ? doc_.ErrorStr() : "";
    const std::size_t colon = full.find(": ", full.find("Line number="));
    if (full.find("Line number=") != std::string::npos && colon != std::string::npos && colon + 2 < full.size())
      what += " (" + full.substr(colon + 2) + ")";
    return what;
  }

  bool checkTree() {
    static const std::set<std::string> kTypes = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"};
    for (std::size_t k = 0; k < joints_.size(); ++k) {
      const JointInfo& j = joints_[k];
      if (!j.name.empty() && !j.type.empty() && !kTypes.count(j.type)) {
        diags_.report(DiagKind::UrdfUnknownJointType, at(j.el), j.name, j.type);
        continue;
      }
      for (const auto& [side, link] : {std::pair<std::string, std::string>{"parent", j.parent}, {"child", j.child}})
        if (!link.empty() && !linkIndex_.count(link))
          diags_.report(DiagKind::UrdfUnknownLink, at(j.el->FirstChildElement(side.c_str())), j.name,
                        "the " + side, link);
      if (j.child.empty() || !linkIndex_.count(j.child) || !linkIndex_.count(j.parent)) continue;
      LinkInfo& child = links_[static_cast<std::size_t>(linkIndex_[j.child])];
      if (child.parentJoint >= 0) {
        const JointInfo& first = joints_[static_cast<std::size_t>(child.parentJoint)];
        diags_.report(DiagKind::UrdfSecondParent, at(j.el), j.child, first.name, j.name)
            .note(DiagKind::NoteUrdfFirstParent, at(first.el), first.name);
        continue;
      }
      child.parentJoint = static_cast<int>(k);
      links_[static_cast<std::size_t>(linkIndex_[j.parent])].childJoints.push_back(static_cast<int>(k));
    }
    if (diags_.hasErrors()) return false;
    // One root; every link reached from it (a link on a loop has a parent
    // and is not reached).
    for (std::size_t i = 0; i < links_.size(); ++i) {
      if (links_[i].parentJoint >= 0) continue;
      if (root_ < 0) {
        root_ = static_cast<int>(i);
      } else {
        diags_.report(DiagKind::UrdfSeveralRoots, at(links_[i].el), links_[static_cast<std::size_t>(root_)].name,
                      links_[i].name);
        return false;
      }
    }
    std::vector<bool> reached(links_.size(), false);
    if (root_ >= 0) visit(root_, [&](int l) { reached[static_cast<std::size_t>(l)] = true; });
    for (std::size_t i = 0; i < links_.size(); ++i) {
      if (reached[i]) continue;
      // Walk up the parents from link i until a link repeats: the loop.
      std::vector<int> path;
      int l = static_cast<int>(i);
      while (std::find(path.begin(), path.end(), l) == path.end()) {
        path.push_back(l);
        l = linkIndex_[joints_[static_cast<std::size_t>(links_[static_cast<std::size_t>(l)].parentJoint)].parent];
      }
      std::string cycle;
      for (auto it = std::find(path.begin(), path.end(), l); it != path.end(); ++it)
        cycle += (cycle.empty() ? "" : " <- ") + joints_[static_cast<std::size_t>(links_[static_cast<std::size_t>(*it)].parentJoint)].name;
      const LinkInfo& on = links_[static_cast<std::size_t>(l)];
      diags_.report(DiagKind::UrdfLoop, at(joints_[static_cast<std::size_t>(on.parentJoint)].el), on.name, cycle);
      return false;
    }
    return root_ >= 0 || links_.empty();
  }

  template <class F>
  void visit(int link, F&& f) const {
    f(link);
    for (int j : links_[static_cast<std::size_t>(link)].childJoints)
      visit(linkIndex_.at(joints_[static_cast<std::size_t>(j)].child), f);
  }

  // ---- pass 2: urdfdom ----
  bool readModel() {
    {
      Capture capture;
      model_ = urdf::parseURDF(text_);
      if (!model_) {
        diags_.report(DiagKind::UrdfRejected, at(robot_),
                      capture.first.empty() ? std::string("no reason given") : capture.first);
        return false;
      }
    }
    for (LinkInfo& l : links_) l.link = model_->getLink(l.name);
    for (JointInfo& j : joints_) j.joint = model_->getJoint(j.name);
    return true;
  }

  void checkBodies() {
    for (LinkInfo& l : links_) {
      const auto& in = l.link ? l.link->inertial : nullptr;
      if (!in) continue;
      const Eigen::Matrix3d I = inertiaAsWritten(*in);
      const Eigen::Vector3d moments = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(I).eigenvalues();
      const auto* inertialEl = l.el->FirstChildElement("inertial");
      if (in->mass < 0) {
        diags_.report(DiagKind::UrdfInertiaNotPositive, at(inertialEl), l.name, "the mass " + num(in->mass) + " kg is negative");
      } else if (in->mass > 0 && !(moments.minCoeff() > 0)) {
        const auto* ie = inertialEl ? inertialEl->FirstChildElement("inertia") : nullptr;
        diags_.report(DiagKind::UrdfInertiaNotPositive, at(ie ? ie : inertialEl), l.name,
                      "the inertia's principal moments are " + num(moments[0]) + ", " + num(moments[1]) + " and " +
                          num(moments[2]) + " kg.m2");
      }
      l.massive = in->mass > 0;
    }
    // Masses beyond each link, leaves first.
    std::vector<int> order;
    visit(root_, [&](int l) { order.push_back(l); });
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      LinkInfo& l = links_[static_cast<std::size_t>(*it)];
      l.subtreeMass += l.massive ? l.link->inertial->mass : 0;
      if (l.parentJoint >= 0)
        links_[static_cast<std::size_t>(linkIndex_[joints_[static_cast<std::size_t>(l.parentJoint)].parent])].subtreeMass +=
            l.subtreeMass;
    }
    for (const JointInfo& j : joints_) {
      const LinkInfo& child = links_[static_cast<std::size_t>(linkIndex_[j.child])];
      const bool moving = j.type != "fixed";
      if (moving && child.subtreeMass <= 0)
        diags_.report(DiagKind::UrdfMasslessLink, at(child.el), child.name, j.type, j.name);
      if (moving && j.type != "floating" && j.joint && toEigen(j.joint->axis).norm() == 0)
        diags_.report(DiagKind::UrdfAxisZero, at(j.el->FirstChildElement("axis") ? j.el->FirstChildElement("axis") : j.el),
                      j.name, j.type);
    }
    for (const LinkInfo& l : links_) {
      if (!l.link) continue;
      const auto* visual = l.el->FirstChildElement("visual");
      for (const auto& v : l.link->visual_array) {
        const auto* mesh = v && v->geometry ? dynamic_cast<const urdf::Mesh*>(v->geometry.get()) : nullptr;
        const tinyxml2::XMLElement* meshEl = visual && visual->FirstChildElement("geometry")
                                                 ? visual->FirstChildElement("geometry")->FirstChildElement("mesh")
                                                 : nullptr;
        if (visual) visual = visual->NextSiblingElement("visual");
        if (!mesh) continue;
        std::string where, package;
        if (resolveMesh(mesh->filename, where, package).empty())
          diags_.report(DiagKind::UrdfMeshNotFound, at(meshEl ? meshEl : l.el), mesh->filename, l.name, where, package);
      }
    }
  }

  // The file a mesh reference names: `package://P/rest` under each
  // --package-path (DIR/P/rest), `file://ABS`, or a path relative to the
  // URDF's folder. Empty if none exists; `where` lists what was tried.
  std::string resolveMesh(const std::string& ref, std::string& where, std::string& package) const {
    std::vector<fs::path> candidates;
    const std::string pkg = "package://", file = "file://";
    if (ref.rfind(pkg, 0) == 0) {
      const std::string rest = ref.substr(pkg.size());
      package = rest.substr(0, rest.find('/'));
      for (const fs::path& dir : options_.packagePaths) candidates.push_back(dir / rest);
    } else if (ref.rfind(file, 0) == 0) {
      candidates.emplace_back(ref.substr(file.size()));
    } else {
      candidates.push_back(path_.parent_path() / ref);
    }
    if (package.empty()) package = "(none)";
    for (const fs::path& c : candidates) {
      where += (where.empty() ? "`" : "`, `") + c.string();
      std::error_code ec;
      if (fs::is_regular_file(c, ec)) return c.string();
    }
    where = where.empty() ? "no folder: no `--package-path` was given" : where + "`";
    return "";
  }

  // I about the center of mass in the link frame: the <inertia> values,
  // given in the <inertial> origin's frame C, turned by its rpy,
  // I_B = R_BC I_C R_BC^T (symmetrized against round-off).
  static Eigen::Matrix3d inertiaAsWritten(const urdf::Inertial& in) {
    Eigen::Matrix3d I;
    I << in.ixx, in.ixy, in.ixz, in.ixy, in.iyy, in.iyz, in.ixz, in.iyz, in.izz;
    return I;
  }

  // ---- pass 3: the model ----
  // A fresh identifier for `name` (plus `suffix`): the rule's, unless taken.
  std::string fresh(const std::string& base) {
    std::string id = base;
    for (int n = 2; used_.count(id); ++n) id = base + "_" + std::to_string(n);
    used_.insert(id);
    return id;
  }

  void decl(const std::string& line) { decls_ += "  " + line + "\n"; }
  void eq(const std::string& line) { eqs_ += "  " + line + "\n"; }
  void connect(const std::string& a, const std::string& b) { eq("connect(" + a + ", " + b + ");"); }

  // `FixedTranslation`/`FixedFrame` `id` for an <origin>; "" for the identity.
  std::string offset(const std::string& id, const tinyxml2::XMLElement* origin, bool always) {
    const Eigen::Vector3d xyz = attributeVector(origin, "xyz"), rpy = attributeVector(origin, "rpy");
    if (rpy.isZero(0)) {
      if (xyz.isZero(0) && !always) return "";
      decl("FixedTranslation " + id + "(r = " + vec(xyz) + ");");
    } else {
      decl("FixedFrame " + id + "(r = " + vec(xyz) + ", R = Frames.rpy(" + num(rpy.x()) + ", " + num(rpy.y()) + ", " +
           num(rpy.z()) + "));");
    }
    return id;
  }

  void writeLink(int index, const std::string& frame) {
    LinkInfo& l = links_[static_cast<std::size_t>(index)];
    std::string here = frame;
    if (l.massive) {
      const urdf::Inertial& in = *l.link->inertial;
      const tinyxml2::XMLElement* inertialEl = l.el->FirstChildElement("inertial");
      const Eigen::Vector3d rpy = attributeVector(inertialEl ? inertialEl->FirstChildElement("origin") : nullptr, "rpy");
      const Eigen::Matrix3d I_C = inertiaAsWritten(in);
      const Eigen::Matrix3d R = rotationOf(in.origin.rotation);
      Eigen::Matrix3d I_B = rpy.isZero(0) ? I_C : Eigen::Matrix3d(R * I_C * R.transpose());
      I_B = (0.5 * (I_B + I_B.transpose())).eval();
      // Round-off of the turn (1e-18 where the file's values give 0) printed as 0.
      const double scale = I_B.cwiseAbs().maxCoeff();
      I_B = I_B.unaryExpr([scale](double v) { return std::abs(v) < 1e-15 * scale ? 0.0 : v; }).eval();
      decl("// link `" + l.name + "` (" + cite(l.el) + ")");
      if (!rpy.isZero(0))
        decl("//   <inertia> " + mat(I_C) + " in the <inertial> origin's frame, rpy " + vec(rpy) +
             ", turned into the link frame:");
      decl("Body " + l.id + "(mass = " + num(in.mass) + ", com = " + vec(toEigen(in.origin.position)) +
           ", inertia = " + mat(I_B) + ");");
      connect(frame, l.id + ".frame_a");
      here = l.id + ".frame_a";
    } else {
      decl("// link `" + l.name + "` (" + cite(l.el) + "): no mass; its frame is `" + here + "`");
      if (l.childJoints.empty() && l.parentJoint >= 0)
        diags_.report(DiagKind::UrdfMasslessLeafMerged, at(l.el), l.name,
                      joints_[static_cast<std::size_t>(l.parentJoint)].parent, here);
    }
    writeVisuals(l);
    decls_ += "\n";
    for (int j : l.childJoints) writeJoint(j, here);
  }

  void writeVisuals(const LinkInfo& l) {
    if (!l.link) return;
    for (const auto& v : l.link->visual_array) {
      if (!v || !v->geometry) continue;
      const urdf::Geometry* g = v->geometry.get();
      std::string shape;
      if (const auto* s = dynamic_cast<const urdf::Sphere*>(g)) shape = "sphere radius " + num(s->radius);
      if (const auto* b = dynamic_cast<const urdf::Box*>(g)) shape = "box size " + vec(toEigen(b->dim));
      if (const auto* c = dynamic_cast<const urdf::Cylinder*>(g))
        shape = "cylinder radius " + num(c->radius) + " length " + num(c->length);
      if (const auto* m = dynamic_cast<const urdf::Mesh*>(g)) {
        std::string where, package;
        shape = "mesh \"" + resolveMesh(m->filename, where, package) + "\" scale " + vec(toEigen(m->scale));
      }
      double r = 0, p = 0, y = 0;
      v->origin.rotation.getRPY(r, p, y);
      decl("//   visual: " + shape + " at xyz " + vec(toEigen(v->origin.position)) + " rpy " +
           vec(Eigen::Vector3d(r, p, y)));
    }
    if (!l.link->collision_array.empty())
      decl("//   (" + std::to_string(l.link->collision_array.size()) + " <collision> element(s) not imported)");
  }

  void writeJoint(int index, const std::string& parentFrame) {
    JointInfo& j = joints_[static_cast<std::size_t>(index)];
    const urdf::Joint& uj = *j.joint;
    const tinyxml2::XMLElement* origin = j.el->FirstChildElement("origin");
    decl("// joint `" + j.name + "`, " + j.type + ", `" + j.parent + "` -> `" + j.child + "` (" + cite(j.el) + ")");
    std::string out;
    const Eigen::Vector3d axis = toEigen(uj.axis);
    if (j.type == "fixed") {
      offset(j.id, origin, true);
      connect(parentFrame, j.id + ".frame_a");
      out = j.id + ".frame_b";
    } else {
      std::string in = parentFrame;
      const std::string o = offset(fresh(j.id + "_origin"), origin, false);
      if (!o.empty()) {
        connect(parentFrame, o + ".frame_a");
        in = o + ".frame_b";
      }
      if (j.type == "revolute" || j.type == "continuous") {
        decl("Revolute " + j.id + "(axis = " + vec(axis) + ");");
      } else if (j.type == "prismatic") {
        decl("Prismatic " + j.id + "(axis = " + vec(axis) + ");");
      } else if (j.type == "floating") {
        decl("Free " + j.id + ";");
      } else {  // planar: along two directions of the plane normal to the axis, then about it
        const Eigen::Vector3d n = axis.normalized();
        const Eigen::Vector3d t1 = n.unitOrthogonal(), t2 = n.cross(t1);
        const std::string a = fresh(j.id + "_u"), b = fresh(j.id + "_v");
        decl("Prismatic " + a + "(axis = " + vec(t1) + ") \"planar: first direction in the plane\";");
        decl("Prismatic " + b + "(axis = " + vec(t2) + ") \"planar: second direction in the plane\";");
        decl("Revolute " + j.id + "(axis = " + vec(axis) + ") \"planar: rotation about the normal\";");
        connect(in, a + ".frame_a");
        connect(a + ".frame_b", b + ".frame_a");
        in = b + ".frame_b";
      }
      connect(in, j.id + ".frame_a");
      out = j.id + ".frame_b";
      writeJointLaws(j);
    }
    writeLink(linkIndex_[j.child], out);
  }

  void writeJointLaws(const JointInfo& j) {
    const urdf::Joint& uj = *j.joint;
    const bool linear = j.type == "prismatic";
    const bool oneDof = j.type == "revolute" || j.type == "continuous" || linear;
    if (uj.limits && (j.type == "revolute" || linear)) {
      const char* unit = linear ? "m" : "rad";
      decl("constant Real " + fresh(j.id + "_lower") + "(unit = \"" + unit + "\") = " + num(uj.limits->lower) +
           " \"<limit lower>\";");
      decl("constant Real " + fresh(j.id + "_upper") + "(unit = \"" + unit + "\") = " + num(uj.limits->upper) +
           " \"<limit upper>\";");
    }
    if (uj.limits && oneDof)
      decl("//   <limit effort=\"" + num(uj.limits->effort) + "\" velocity=\"" + num(uj.limits->velocity) +
           "\">: not enforced");
    if (uj.mimic) {
      decl("//   <mimic joint=\"" + uj.mimic->joint_name + "\" multiplier=\"" + num(uj.mimic->multiplier) +
           "\" offset=\"" + num(uj.mimic->offset) + "\">: imported as an independent degree of freedom");
      if (!options_.noMimic) {
        const tinyxml2::XMLElement* m = j.el->FirstChildElement("mimic");
        diags_.report(DiagKind::UrdfMimicIgnored, at(m ? m : j.el), j.name, uj.mimic->joint_name);
      }
    }
    if (!uj.dynamics || !oneDof) return;
    std::string law;
    if (uj.dynamics->damping != 0) {
      const std::string d = fresh(j.id + "_damping");
      decl("parameter Real " + d + "(unit = \"" + (linear ? "N.s/m" : "N.m.s/rad") + "\") = " +
           num(uj.dynamics->damping) + " \"<dynamics damping>\";");
      law = "-" + d + " * " + j.id + ".u";
    }
    if (uj.dynamics->friction != 0) {
      const std::string f = fresh(j.id + "_friction");
      decl("parameter Real " + f + "(unit = \"" + (linear ? "N" : "N.m") + "\") = " + num(uj.dynamics->friction) +
           " \"<dynamics friction>\";");
      law += (law.empty() ? "-" : " - ") + f + " * tanh(" + j.id + ".u / frictionSpeed)";
      friction_ = true;
    }
    if (!law.empty()) eq(j.id + ".tau = " + law + ";");
  }

  std::string write() {
    used_.insert("world");
    // The rule's identifiers first, so that a derived name (`_origin`) never
    // takes a link's or a joint's own.
    for (LinkInfo& l : links_) l.id = fresh(urdfIdentifier(l.name));
    for (JointInfo& j : joints_) j.id = fresh(urdfIdentifier(j.name));
    const std::string robot = robot_->Attribute("name") ? robot_->Attribute("name") : "robot";
    const std::string model = options_.modelName.empty() ? urdfIdentifier(robot) : options_.modelName;
    used_.insert(model);

    decl("World world(gravity = {0, 0, -9.81}) \"URDF's convention: z up\";");
    std::string base = "world.frame_b";
    if (options_.floatingBase) {
      const std::string free = fresh("floating_base");
      decl("Free " + free + " \"--floating-base: the root link moves freely\";");
      connect(base, free + ".frame_a");
      base = free + ".frame_b";
    }
    decls_ += "\n";
    writeLink(root_, base);
    if (friction_)
      decls_ = "  parameter Real frictionSpeed = 0.01 \"speed (rad/s, m/s) over which <dynamics friction> "
               "reaches its value: -friction * tanh(u / frictionSpeed)\";\n" + decls_;

    std::string out;
    out += "// Imported by `capstan import` from " + path_.filename().string() + " (robot `" + robot + "`): " +
           std::to_string(links_.size()) + " links, " + std::to_string(joints_.size()) + " joints.\n";
    out += "// Names are the file's; docs/import.md gives the rule for the others and the mapping of each element.\n";
    out += "model " + model + " \"robot `" + robot + "`\"\n";
    out += "  import Capstan.*;\n";
    while (decls_.size() >= 2 && decls_.substr(decls_.size() - 2) == "\n\n") decls_.pop_back();
    out += decls_;
    out += "equation\n" + eqs_;
    out += "end " + model + ";\n";
    return out;
  }

  fs::path path_;
  const std::string& text_;
  const UrdfOptions& options_;
  syntax::DiagnosticEngine& diags_;
  syntax::FileId file_ = 0;
  std::vector<std::uint32_t> lineStarts_;
  tinyxml2::XMLDocument doc_;
  const tinyxml2::XMLElement* robot_ = nullptr;
  std::vector<LinkInfo> links_;
  std::vector<JointInfo> joints_;
  std::map<std::string, int> linkIndex_;
  int root_ = -1;
  urdf::ModelInterfaceSharedPtr model_;
  std::set<std::string> used_;
  std::string decls_, eqs_;
  bool friction_ = false;
};

}  // namespace

std::string urdfIdentifier(const std::string& name) {
  if (isIdentifier(name) && !reserved(name) && name.rfind("x_", 0) != 0) return name;
  std::string out = "x_";
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "_%02x", static_cast<unsigned char>(c));
      out += hex;
    }
  }
  return out;
}

std::string urdfName(const std::string& identifier) {
  if (identifier.rfind("x_", 0) != 0) return identifier;
  std::string out;
  for (std::size_t i = 2; i < identifier.size(); ++i) {
    if (identifier[i] == '_' && i + 2 < identifier.size()) {
      out += static_cast<char>(std::stoi(identifier.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += identifier[i];
    }
  }
  return out;
}

std::optional<std::string> importUrdf(const fs::path& path, const std::string& text, const UrdfOptions& options,
                                      syntax::SourceManager& sources, syntax::DiagnosticEngine& diags) {
  return Importer(path, text, options, sources, diags).run();
}

}  // namespace capstan::import
