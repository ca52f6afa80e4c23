// The URDF front end (urdf.hpp) onto the robot description (robot.hpp):
//   1. tinyxml2 reads the XML (xml.hpp): each <link> and <joint> element
//      keeps its line, and the tree (names, types, parents, children) is
//      checked here (checkTree), where each error can point at its element;
//   2. urdfdom reads the robot (masses, inertias, axes, limits, dynamics,
//      mimic, visuals); what it still rejects is reported with its words;
//   3. writeModel checks the bodies and writes the model.
#include "import/urdf.hpp"

#include <console_bridge/console.h>
#include <urdf_parser/urdf_parser.h>

#include <set>
#include <sstream>

#include "import/xml.hpp"

using capstan::syntax::DiagKind;

namespace capstan::import {

namespace {

Eigen::Vector3d toEigen(const urdf::Vector3& v) { return {v.x, v.y, v.z}; }

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

Origin originOf(const tinyxml2::XMLElement* el) {
  const tinyxml2::XMLElement* o = el ? el->FirstChildElement("origin") : nullptr;
  return {attributeVector(o, "xyz"), attributeVector(o, "rpy")};
}

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

class UrdfReader {
 public:
  UrdfReader(const SourceText& source, syntax::DiagnosticEngine& diags) : src_(source), diags_(diags) {}

  std::optional<Robot> run() {
    if (!parseXml(doc_, src_, diags_)) return std::nullopt;
    const tinyxml2::XMLElement* top = doc_.RootElement();
    if (!top || std::string(top->Name()) != "robot") {
      diags_.report(DiagKind::ImportTopElement, src_.at(whereOf(top)), std::string(top ? top->Name() : ""),
                    std::string("URDF"), std::string("robot"));
      return std::nullopt;
    }
    robot_.format = "URDF";
    robot_.name = attribute(top, "name");
    robot_.where = whereOf(top);
    robot_.gravityNote = "URDF's convention: z up";
    readTree(top);
    if (diags_.hasErrors() || !checkTree(robot_, src_, diags_)) return std::nullopt;
    {
      Capture capture;
      model_ = urdf::parseURDF(src_.text());
      if (!model_) {
        diags_.report(DiagKind::UrdfRejected, src_.at(robot_.where),
                      capture.first.empty() ? std::string("no reason given") : capture.first);
        return std::nullopt;
      }
    }
    if (robot_.root < 0) {
      diags_.report(DiagKind::UrdfRejected, src_.at(robot_.where), std::string("the robot has no link"));
      return std::nullopt;
    }
    for (std::size_t i = 0; i < robot_.links.size(); ++i) readLink(robot_.links[i], linkEls_[i]);
    for (std::size_t i = 0; i < robot_.joints.size(); ++i) readJoint(robot_.joints[i], jointEls_[i]);
    return std::move(robot_);
  }

 private:
  // Pass 1: names, types, parents and children, from the XML.
  void readTree(const tinyxml2::XMLElement* top) {
    static const std::set<std::string> kTypes = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"};
    for (const auto* el = top->FirstChildElement("link"); el; el = el->NextSiblingElement("link")) {
      Link l;
      l.name = attribute(el, "name");
      l.where = whereOf(el);
      robot_.links.push_back(l);
      linkEls_.push_back(el);
    }
    for (const auto* el = top->FirstChildElement("joint"); el; el = el->NextSiblingElement("joint")) {
      Joint j;
      j.name = attribute(el, "name");
      j.type = attribute(el, "type");
      j.parent = attribute(el->FirstChildElement("parent"), "link");
      j.child = attribute(el->FirstChildElement("child"), "link");
      j.where = whereOf(el);
      j.parentWhere = whereOf(el->FirstChildElement("parent"));
      j.childWhere = whereOf(el->FirstChildElement("child"));
      if (!j.name.empty() && !j.type.empty() && !kTypes.count(j.type)) {
        diags_.report(DiagKind::UrdfUnknownJointType, src_.at(j.where), j.name, j.type);
        continue;
      }
      robot_.joints.push_back(j);
      jointEls_.push_back(el);
    }
  }

  // Pass 2: urdfdom's values.
  void readLink(Link& l, const tinyxml2::XMLElement* el) {
    const urdf::LinkConstSharedPtr link = model_->getLink(l.name);
    if (!link) return;
    if (const auto& in = link->inertial) {
      const tinyxml2::XMLElement* inertialEl = el->FirstChildElement("inertial");
      Inertial i;
      i.mass = in->mass;
      i.com = toEigen(in->origin.position);
      i.rpy = originOf(inertialEl).rpy;
      const urdf::Rotation& r = in->origin.rotation;
      i.R_BC = Eigen::Quaterniond(r.w, r.x, r.y, r.z).normalized().toRotationMatrix();
      i.I_C << in->ixx, in->ixy, in->ixz, in->ixy, in->iyy, in->iyz, in->ixz, in->iyz, in->izz;
      i.where = whereOf(inertialEl);
      i.inertiaWhere = whereOf(inertialEl ? inertialEl->FirstChildElement("inertia") : nullptr);
      l.inertial = i;
    }
    const auto* visualEl = el->FirstChildElement("visual");
    for (const auto& v : link->visual_array) {
      const tinyxml2::XMLElement* geometryEl = visualEl ? visualEl->FirstChildElement("geometry") : nullptr;
      if (visualEl) visualEl = visualEl->NextSiblingElement("visual");
      if (!v || !v->geometry) continue;
      Visual out;
      const urdf::Geometry* g = v->geometry.get();
      if (const auto* s = dynamic_cast<const urdf::Sphere*>(g)) {
        out.shape = "sphere radius " + num(s->radius);
        out.kind = "sphere";
        out.size = Eigen::Vector3d::Constant(2 * s->radius);
      }
      if (const auto* b = dynamic_cast<const urdf::Box*>(g)) {
        out.shape = "box size {" + num(b->dim.x) + ", " + num(b->dim.y) + ", " + num(b->dim.z) + "}";
        out.kind = "box";
        out.size = toEigen(b->dim);
      }
      if (const auto* c = dynamic_cast<const urdf::Cylinder*>(g)) {
        out.shape = "cylinder radius " + num(c->radius) + " length " + num(c->length);
        out.kind = "cylinder";
        out.size = {2 * c->radius, 2 * c->radius, c->length};
      }
      if (v->material)
        out.rgba = Eigen::Vector4d(v->material->color.r, v->material->color.g, v->material->color.b, v->material->color.a);
      if (const auto* m = dynamic_cast<const urdf::Mesh*>(g)) {
        out.mesh = m->filename;
        out.scale = toEigen(m->scale);
        out.where = whereOf(geometryEl ? geometryEl->FirstChildElement("mesh") : nullptr);
      }
      out.origin.xyz = toEigen(v->origin.position);
      v->origin.rotation.getRPY(out.origin.rpy.x(), out.origin.rpy.y(), out.origin.rpy.z());
      l.visuals.push_back(out);
    }
    l.collisions = static_cast<int>(link->collision_array.size());
  }

  void readJoint(Joint& j, const tinyxml2::XMLElement* el) {
    const urdf::JointConstSharedPtr joint = model_->getJoint(j.name);
    if (!joint) return;
    j.origin = originOf(el);
    j.axis = toEigen(joint->axis);
    j.axisWhere = whereOf(el->FirstChildElement("axis"));
    const bool oneDof = j.type == "revolute" || j.type == "continuous" || j.type == "prismatic";
    if (joint->limits) {
      j.positionLimits = j.type == "revolute" || j.type == "prismatic";
      j.lower = joint->limits->lower;
      j.upper = joint->limits->upper;
      j.rateLimits = oneDof;
      j.effort = joint->limits->effort;
      j.velocity = joint->limits->velocity;
    }
    if (joint->mimic) {
      j.mimic = Joint::Mimic{joint->mimic->joint_name, joint->mimic->multiplier, joint->mimic->offset,
                             whereOf(el->FirstChildElement("mimic"))};
    }
    if (joint->dynamics && oneDof) {
      j.damping = joint->dynamics->damping;
      j.friction = joint->dynamics->friction;
    }
  }

  const SourceText& src_;
  syntax::DiagnosticEngine& diags_;
  tinyxml2::XMLDocument doc_;
  Robot robot_;
  std::vector<const tinyxml2::XMLElement*> linkEls_, jointEls_;
  urdf::ModelInterfaceSharedPtr model_;
};

}  // namespace

std::optional<std::string> importUrdf(const std::filesystem::path& path, const std::string& text,
                                      const ImportOptions& options, syntax::SourceManager& sources,
                                      syntax::DiagnosticEngine& diags) {
  const SourceText source(path, text, sources);
  std::optional<Robot> robot = UrdfReader(source, diags).run();
  if (!robot) return std::nullopt;
  return writeModel(*robot, source, options, diags);
}

}  // namespace capstan::import
