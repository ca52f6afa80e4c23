// The SDFormat front end (sdf.hpp) onto the robot description (robot.hpp):
//   1. tinyxml2 reads the XML (xml.hpp): a malformed file is located, and the
//      top element must be <sdf>;
//   2. libsdformat reads and validates the file (its frame graphs included);
//      its first error is reported at its line, or at the element it names;
//   3. one model (the file's, or one of its worlds') is read: links,
//      joints and nested models, every pose resolved by libsdformat's frame
//      graph (SemanticPose::Resolve, JointAxis::ResolveXyz) into the frames
//      the writer wants: a joint's frame J in its parent link's frame, the
//      child link's frame in J, the axis in J, the root link in the world.
//      Nested models are flattened, their names scoped (`arm::link`), as
//      libsdformat names their frames; a pose across nesting levels is the
//      product of the poses each level resolves;
//   4. checkTree and writeModel, as for URDF.
#include "import/sdf.hpp"

#include "import/xml.hpp"

#ifdef CAPSTAN_HAVE_SDFORMAT
#include <sdf/sdf.hh>

#include <cmath>
#include <map>
#include <regex>
#endif

using capstan::syntax::DiagKind;

namespace capstan::import {

#ifdef CAPSTAN_HAVE_SDFORMAT

namespace {

using ignition::math::Pose3d;

// Round-off of the frame graph's products (1e-17 where the file's values
// give 0) as 0.
Eigen::Vector3d clean(const Eigen::Vector3d& v) {
  return v.unaryExpr([](double x) { return std::abs(x) < 1e-15 ? 0.0 : x; });
}

Eigen::Vector3d toEigen(const ignition::math::Vector3d& v) { return clean({v.X(), v.Y(), v.Z()}); }

Origin originOf(const Pose3d& p) { return {toEigen(p.Pos()), toEigen(p.Rot().Euler())}; }

Where whereOf(const sdf::ElementPtr& el) {
  if (!el) return {};
  const std::optional<int> line = el->LineNumber();
  return {line ? *line : 0, el->GetName()};
}

sdf::ElementPtr child(const sdf::ElementPtr& el, const std::string& name) {
  return el && el->HasElement(name) ? el->GetElementImpl(name) : nullptr;
}

class SdfReader {
 public:
  SdfReader(const SourceText& source, ImportOptions& options, syntax::DiagnosticEngine& diags)
      : src_(source), options_(options), diags_(diags) {}

  std::optional<Robot> run() {
    if (!parseXml(doc_, src_, diags_)) return std::nullopt;
    const tinyxml2::XMLElement* top = doc_.RootElement();
    if (!top || std::string(top->Name()) != "sdf") {
      diags_.report(DiagKind::ImportTopElement, src_.at(import::whereOf(top)), std::string(top ? top->Name() : ""),
                    std::string("SDFormat"), std::string("sdf"));
      return std::nullopt;
    }
    sdf::Console::Instance()->SetQuiet(true);
    sdf::Root root;
    const sdf::Errors errors = root.LoadSdfString(src_.text(), sdf::ParserConfig());
    if (!errors.empty()) {
      diags_.report(DiagKind::SdfRejected, locate(errors.front(), top), errors.front().Message());
      return std::nullopt;
    }
    const sdf::Model* model = chooseModel(root, top);
    if (!model) return std::nullopt;

    robot_.format = "SDFormat";
    robot_.name = model->Name();
    robot_.where = whereOf(model->Element());
    robot_.gravityNote = "SDFormat's convention: z up";
    if (model->Static()) {
      if (options_.floatingBase)
        diags_.report(DiagKind::SdfStaticFloating, src_.at(robot_.where), model->Name());
      options_.floatingBase = false;
    }
    Pose3d X_WM;
    if (!model->SemanticPose().Resolve(X_WM).empty()) X_WM = model->RawPose();
    readModel(*model, "", X_WM);
    if (diags_.hasErrors() || !checkTree(robot_, src_, diags_)) return std::nullopt;
    if (robot_.root >= 0) {
      robot_.rootPose = originOf(linkPoses_.at(robot_.links[static_cast<std::size_t>(robot_.root)].name));
      robot_.rootNote = "the root link's pose in the world";
    }
    return std::move(robot_);
  }

 private:
  // An error's line, when libsdformat gives one; else the first element
  // whose name the message quotes (`name[base]`); else the top element.
  syntax::SourceRange locate(const sdf::Error& error, const tinyxml2::XMLElement* top) const {
    if (error.LineNumber() && *error.LineNumber() > 0) return src_.at(*error.LineNumber());
    static const std::regex kName(R"(name\s*\[([^\]]*)\])");
    const std::string message = error.Message();
    for (std::sregex_iterator it(message.begin(), message.end(), kName), end; it != end; ++it) {
      std::string name = (*it)[1];
      if (name.rfind("::") != std::string::npos) name = name.substr(name.rfind("::") + 2);
      if (const tinyxml2::XMLElement* el = named(top, name)) return src_.at(import::whereOf(el));
    }
    return src_.at(import::whereOf(top));
  }

  static const tinyxml2::XMLElement* named(const tinyxml2::XMLElement* el, const std::string& name) {
    for (const auto* c = el ? el->FirstChildElement() : nullptr; c; c = c->NextSiblingElement()) {
      if (attribute(c, "name") == name) return c;
      if (const auto* found = named(c, name)) return found;
    }
    return nullptr;
  }

  // The file's model; in a file of worlds, the one model of its worlds, or
  // the one --model names.
  const sdf::Model* chooseModel(const sdf::Root& root, const tinyxml2::XMLElement* top) {
    if (root.Model()) return root.Model();
    std::vector<const sdf::Model*> models;
    for (uint64_t w = 0; w < root.WorldCount(); ++w)
      for (uint64_t m = 0; m < root.WorldByIndex(w)->ModelCount(); ++m)
        models.push_back(root.WorldByIndex(w)->ModelByIndex(m));
    for (const sdf::Model* m : models)
      if (m->Name() == options_.modelName) return m;
    if (models.size() == 1) return models.front();
    std::string names;
    for (const sdf::Model* m : models) names += (names.empty() ? "`" : "`, `") + m->Name();
    const tinyxml2::XMLElement* at = top->FirstChildElement("world") ? top->FirstChildElement("world") : top;
    if (models.empty())
      diags_.report(DiagKind::SdfNoModel, src_.at(import::whereOf(at)), std::string("the file holds no `<model>`"),
                    std::string());
    else
      diags_.report(DiagKind::SdfNoModel, src_.at(import::whereOf(at)),
                    "the file's worlds hold " + std::to_string(models.size()) + " models (" + names + "`)",
                    std::string(": name one with `--model NAME`"));
    return nullptr;
  }

  // The links and joints of `model` and of its nested models, their names
  // prefixed with `scope`; X_WM: the model's frame in the world.
  void readModel(const sdf::Model& model, const std::string& scope, const Pose3d& X_WM) {
    for (uint64_t i = 0; i < model.LinkCount(); ++i) readLink(*model.LinkByIndex(i), scope, X_WM);
    for (uint64_t i = 0; i < model.JointCount(); ++i) readJoint(*model.JointByIndex(i), scope, X_WM);
    for (uint64_t i = 0; i < model.ModelCount(); ++i) {
      const sdf::Model& nested = *model.ModelByIndex(i);
      Pose3d X_MN;
      resolve(nested.SemanticPose(), "__model__", X_MN, nested.Element());
      readModel(nested, scope + nested.Name() + "::", X_WM * X_MN);
    }
  }

  // The pose resolved in frame `to`; a failure (which validation has
  // excluded) reported at the element.
  void resolve(const sdf::SemanticPose& pose, const std::string& to, Pose3d& out, const sdf::ElementPtr& el) {
    const sdf::Errors errors = pose.Resolve(out, to);
    if (!errors.empty()) diags_.report(DiagKind::SdfRejected, src_.at(whereOf(el)), errors.front().Message());
  }

  void readLink(const sdf::Link& link, const std::string& scope, const Pose3d& X_WM) {
    Link l;
    l.name = scope + link.Name();
    l.where = whereOf(link.Element());
    Pose3d X_ML;
    resolve(link.SemanticPose(), "__model__", X_ML, link.Element());
    linkPoses_[l.name] = X_WM * X_ML;

    const ignition::math::Inertiald& in = link.Inertial();
    const ignition::math::MassMatrix3d& mm = in.MassMatrix();
    const sdf::ElementPtr inertialEl = child(link.Element(), "inertial");
    Inertial i;
    i.mass = mm.Mass();
    const Origin c = originOf(in.Pose());
    i.com = c.xyz;
    i.rpy = c.rpy;
    const ignition::math::Quaterniond& q = in.Pose().Rot();
    i.R_BC = Eigen::Quaterniond(q.W(), q.X(), q.Y(), q.Z()).normalized().toRotationMatrix();
    i.I_C << mm.Ixx(), mm.Ixy(), mm.Ixz(), mm.Ixy(), mm.Iyy(), mm.Iyz(), mm.Ixz(), mm.Iyz(), mm.Izz();
    i.where = whereOf(inertialEl ? inertialEl : link.Element());
    i.inertiaWhere = whereOf(child(inertialEl, "inertia"));
    if (!inertialEl) i.note = "no <inertial>: SDFormat's default, 1 kg and unit moments of inertia";
    l.inertial = i;

    for (uint64_t k = 0; k < link.VisualCount(); ++k) {
      const sdf::Visual& v = *link.VisualByIndex(k);
      const sdf::Geometry* g = v.Geom();
      if (!g) continue;
      Visual out;
      auto v3 = [](const ignition::math::Vector3d& x) {
        const Eigen::Vector3d e = toEigen(x);
        return "{" + num(e.x()) + ", " + num(e.y()) + ", " + num(e.z()) + "}";
      };
      switch (g->Type()) {
        case sdf::GeometryType::BOX:
          out.shape = "box size " + v3(g->BoxShape()->Size());
          out.kind = "box";
          out.size = toEigen(g->BoxShape()->Size());
          break;
        case sdf::GeometryType::SPHERE:
          out.shape = "sphere radius " + num(g->SphereShape()->Radius());
          out.kind = "sphere";
          out.size = Eigen::Vector3d::Constant(2 * g->SphereShape()->Radius());
          break;
        case sdf::GeometryType::CYLINDER:
          out.shape = "cylinder radius " + num(g->CylinderShape()->Radius()) + " length " +
                      num(g->CylinderShape()->Length());
          out.kind = "cylinder";
          out.size = {2 * g->CylinderShape()->Radius(), 2 * g->CylinderShape()->Radius(), g->CylinderShape()->Length()};
          break;
        case sdf::GeometryType::MESH:
          out.mesh = g->MeshShape()->Uri();
          out.scale = toEigen(g->MeshShape()->Scale());
          out.where = whereOf(child(g->Element(), "mesh"));
          break;
        default: out.shape = g->Element() && g->Element()->GetFirstElement() ? g->Element()->GetFirstElement()->GetName() + " (not described)" : "empty"; break;
      }
      if (const sdf::Material* m = v.Material())
        out.rgba = Eigen::Vector4d(m->Diffuse().R(), m->Diffuse().G(), m->Diffuse().B(), m->Diffuse().A());
      Pose3d X_LV;
      resolve(v.SemanticPose(), "", X_LV, v.Element());
      out.origin = originOf(X_LV);
      l.visuals.push_back(out);
    }
    l.collisions = static_cast<int>(link.CollisionCount());
    robot_.links.push_back(l);
  }

  void readJoint(const sdf::Joint& joint, const std::string& scope, const Pose3d& X_WM) {
    Joint j;
    j.name = scope + joint.Name();
    j.where = whereOf(joint.Element());
    j.parentWhere = whereOf(child(joint.Element(), "parent"));
    j.childWhere = whereOf(child(joint.Element(), "child"));
    switch (joint.Type()) {
      case sdf::JointType::REVOLUTE: j.type = "revolute"; break;
      case sdf::JointType::CONTINUOUS: j.type = "continuous"; break;
      case sdf::JointType::PRISMATIC: j.type = "prismatic"; break;
      case sdf::JointType::FIXED: j.type = "fixed"; break;
      case sdf::JointType::BALL: j.type = "ball"; break;
      case sdf::JointType::UNIVERSAL: j.type = "universal"; break;
      default: {
        const sdf::ParamPtr type = joint.Element() ? joint.Element()->GetAttribute("type") : nullptr;
        diags_.report(DiagKind::SdfUnsupportedJoint, src_.at(j.where), j.name,
                      type ? type->GetAsString() : std::string("?"));
        return;
      }
    }
    std::string parent, childLink;
    joint.ResolveParentLink(parent);
    joint.ResolveChildLink(childLink);
    j.fromWorld = parent == "world";
    j.parent = j.fromWorld ? "" : scope + parent;
    j.child = scope + childLink;

    // J in the parent link's frame (in the world for a joint from it), and
    // the child link's frame C in J.
    Pose3d X_PJ, X_CJ;
    if (j.fromWorld) {
      resolve(joint.SemanticPose(), "__model__", X_PJ, joint.Element());
      X_PJ = X_WM * X_PJ;
    } else {
      resolve(joint.SemanticPose(), parent, X_PJ, joint.Element());
    }
    resolve(joint.SemanticPose(), childLink, X_CJ, joint.Element());
    j.origin = originOf(X_PJ);
    j.toChild = originOf(X_CJ.Inverse());
    if (j.type == "fixed") {  // one offset: C in P
      j.origin = originOf(X_PJ * X_CJ.Inverse());
      j.toChild = {};
    }

    const sdf::JointAxis* axis = joint.Axis(0);
    if (axis && j.type != "fixed" && j.type != "ball") {
      j.axisWhere = whereOf(axis->Element());
      ignition::math::Vector3d xyz;
      if (!axis->ResolveXyz(xyz).empty()) xyz = axis->Xyz();
      j.axis = toEigen(xyz);
      const sdf::ElementPtr limit = child(axis->Element(), "limit");
      j.positionLimits = (j.type == "revolute" || j.type == "prismatic") && limit && child(limit, "lower") &&
                         child(limit, "upper") && std::abs(axis->Lower()) < 1e16 && std::abs(axis->Upper()) < 1e16;
      j.lower = axis->Lower();
      j.upper = axis->Upper();
      j.rateLimits = limit && (child(limit, "effort") || child(limit, "velocity"));
      j.effort = axis->Effort();
      j.velocity = axis->MaxVelocity();
      j.damping = axis->Damping();
      j.friction = axis->Friction();
      if (const sdf::JointAxis* second = j.type == "universal" ? joint.Axis(1) : nullptr) {
        if (!second->ResolveXyz(xyz).empty()) xyz = second->Xyz();
        j.axis2 = toEigen(xyz);
        if (j.damping != 0 || j.friction != 0 || second->Damping() != 0 || second->Friction() != 0)
          j.unimported = "<dynamics> of a universal joint: not imported";
      }
    }
    robot_.joints.push_back(j);
  }

  const SourceText& src_;
  ImportOptions& options_;
  syntax::DiagnosticEngine& diags_;
  tinyxml2::XMLDocument doc_;
  Robot robot_;
  std::map<std::string, Pose3d> linkPoses_;  // X_WL
};

}  // namespace

std::optional<std::string> importSdf(const std::filesystem::path& path, const std::string& text,
                                     const ImportOptions& options, syntax::SourceManager& sources,
                                     syntax::DiagnosticEngine& diags) {
  const SourceText source(path, text, sources);
  ImportOptions effective = options;
  std::optional<Robot> robot = SdfReader(source, effective, diags).run();
  if (!robot) return std::nullopt;
  return writeModel(*robot, source, effective, diags);
}

#else  // without libsdformat

std::optional<std::string> importSdf(const std::filesystem::path& path, const std::string& text,
                                     const ImportOptions&, syntax::SourceManager& sources,
                                     syntax::DiagnosticEngine& diags) {
  const SourceText source(path, text, sources);
  diags.report(DiagKind::SdfUnavailable, source.at(1), path.string());
  return std::nullopt;
}

#endif

}  // namespace capstan::import
