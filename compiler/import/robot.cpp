// The robot description's checks and the one writer of the model
// (robot.hpp). The model is written in the tree's depth-first order from the
// root, children in the file's order, which is also the order of the
// model's states.
#include "import/robot.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "cli/mesh.hpp"
#include "syntax/lexer.hpp"

namespace fs = std::filesystem;
using capstan::syntax::DiagKind;
using capstan::syntax::SourceRange;

namespace capstan::import {

namespace {

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
      "time",          "pi",        "world", "Capstan", "Frames", "Body",   "Revolute",  "Prismatic",
      "Free",          "FixedFrame", "FixedTranslation", "World", "Real",  "Integer", "Boolean", "String",
      "frictionSpeed", "Ball",      "Universal"};
  return syntax::isKeyword(syntax::keywordKind(s)) || kWords.count(s) > 0;
}

std::string vec(const Eigen::Vector3d& v) { return "{" + num(v.x()) + ", " + num(v.y()) + ", " + num(v.z()) + "}"; }

std::string mat(const Eigen::Matrix3d& m) {
  std::string out = "{";
  for (int i = 0; i < 3; ++i) out += (i ? ", " : "") + vec(m.row(i).transpose());
  return out + "}";
}

class Writer {
 public:
  Writer(Robot& robot, const SourceText& source, const ImportOptions& options, syntax::DiagnosticEngine& diags)
      : r_(robot), src_(source), options_(options), diags_(diags) {}

  std::optional<std::string> run() {
    checkBodies();
    if (diags_.hasErrors()) return std::nullopt;
    return write();
  }

 private:
  Link& link(const std::string& name) { return r_.links[index_.at(name)]; }

  // Depth-first from the root link and from each joint from the world.
  template <class F>
  void visitAll(F&& f) {
    if (r_.root >= 0) visit(r_.root, f);
    for (const Joint& j : r_.joints)
      if (j.fromWorld) visit(static_cast<int>(index_.at(j.child)), f);
  }
  template <class F>
  void visit(int l, F&& f) {
    f(l);
    for (int j : r_.links[static_cast<std::size_t>(l)].childJoints)
      visit(static_cast<int>(index_.at(r_.joints[static_cast<std::size_t>(j)].child)), f);
  }

  void checkBodies() {
    for (std::size_t i = 0; i < r_.links.size(); ++i) index_[r_.links[i].name] = i;
    for (Link& l : r_.links) {
      if (!l.inertial) continue;
      const Inertial& in = *l.inertial;
      const Eigen::Vector3d moments = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(in.I_C).eigenvalues();
      if (in.mass < 0) {
        diags_.report(DiagKind::ImportInertiaNotPositive, src_.at(in.where), l.name,
                      "the mass " + num(in.mass) + " kg is negative");
      } else if (in.mass > 0 && !(moments.minCoeff() > 0)) {
        diags_.report(DiagKind::ImportInertiaNotPositive, src_.at(in.inertiaWhere.line ? in.inertiaWhere : in.where),
                      l.name,
                      "the inertia's principal moments are " + num(moments[0]) + ", " + num(moments[1]) + " and " +
                          num(moments[2]) + " kg.m2");
      }
      l.massive = in.mass > 0;
    }
    // Masses beyond each link, leaves first.
    std::vector<int> order;
    visitAll([&](int l) { order.push_back(l); });
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Link& l = r_.links[static_cast<std::size_t>(*it)];
      l.subtreeMass += l.massive ? l.inertial->mass : 0;
      const Joint* up = l.parentJoint >= 0 ? &r_.joints[static_cast<std::size_t>(l.parentJoint)] : nullptr;
      if (up && !up->fromWorld) link(up->parent).subtreeMass += l.subtreeMass;
    }
    for (const Joint& j : r_.joints) {
      const Link& child = link(j.child);
      const bool moving = j.type != "fixed";
      if (moving && child.subtreeMass <= 0)
        diags_.report(DiagKind::ImportMasslessLink, src_.at(child.where), child.name, j.type, j.name);
      const bool axial = moving && j.type != "floating" && j.type != "ball";
      if (axial && (j.axis.norm() == 0 || (j.type == "universal" && j.axis2.norm() == 0)))
        diags_.report(DiagKind::ImportAxisZero, src_.at(j.axisWhere.line ? j.axisWhere : j.where), j.name, j.type);
    }
    for (const Link& l : r_.links)
      for (const Visual& v : l.visuals) {
        if (v.mesh.empty()) continue;
        std::string where, package;
        if (resolveMesh(v.mesh, where, package).empty())
          diags_.report(DiagKind::ImportMeshNotFound, src_.at(v.where.line ? v.where : l.where), v.mesh, l.name, where,
                        package);
      }
  }

  // The file a mesh reference names: `package://P/rest` or `model://P/rest`
  // under each --package-path (DIR/P/rest), `file://ABS`, or a path relative
  // to the file's folder. Empty if none exists; `where` lists what was tried.
  std::string resolveMesh(const std::string& ref, std::string& where, std::string& package) const {
    std::vector<fs::path> candidates;
    const std::string file = "file://";
    const std::size_t scheme = ref.find("://");
    const std::string kind = scheme == std::string::npos ? "" : ref.substr(0, scheme);
    if (kind == "package" || kind == "model") {
      const std::string rest = ref.substr(scheme + 3);
      package = rest.substr(0, rest.find('/'));
      for (const fs::path& dir : options_.packagePaths) candidates.push_back(dir / rest);
    } else if (ref.rfind(file, 0) == 0) {
      candidates.emplace_back(ref.substr(file.size()));
    } else {
      candidates.push_back(src_.path().parent_path() / ref);
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

  // ---- the model ----
  // A fresh identifier for `base`: the rule's, unless taken.
  std::string fresh(const std::string& base) {
    std::string id = base;
    for (int n = 2; used_.count(id); ++n) id = base + "_" + std::to_string(n);
    used_.insert(id);
    return id;
  }

  // The file's text (a name, a path) in a comment or between a string's
  // quotes: on one line, its quotes and backslashes escaped.
  static std::string shown(const std::string& text) { return syntax::escapeString(text); }
  void decl(const std::string& line) { decls_ += "  " + line + "\n"; }
  void eq(const std::string& line) { eqs_ += "  " + line + "\n"; }
  void connect(const std::string& a, const std::string& b) { eq("connect(" + a + ", " + b + ");"); }

  // `FixedTranslation`/`FixedFrame` `id` for an origin; "" for the identity.
  std::string offset(const std::string& id, const Origin& o, bool always, const std::string& comment = "") {
    const std::string c = comment.empty() ? "" : " \"" + comment + "\"";
    if (o.rpy.isZero(0)) {
      if (o.xyz.isZero(0) && !always) return "";
      decl("FixedTranslation " + id + "(r = " + vec(o.xyz) + ")" + c + ";");
    } else {
      decl("FixedFrame " + id + "(r = " + vec(o.xyz) + ", R = Frames.rpy(" + num(o.rpy.x()) + ", " + num(o.rpy.y()) +
           ", " + num(o.rpy.z()) + "))" + c + ";");
    }
    return id;
  }

  // Connects `from` through the offset (when there is one); the frame after.
  std::string through(const std::string& from, const std::string& id, const Origin& o, const std::string& comment = "") {
    const std::string made = offset(id, o, false, comment);
    if (made.empty()) {
      used_.erase(id);
      return from;
    }
    connect(from, made + ".frame_a");
    return made + ".frame_b";
  }

  void writeLink(int index, const std::string& frame) {
    Link& l = r_.links[static_cast<std::size_t>(index)];
    std::string here = frame;
    if (l.massive) {
      const Inertial& in = *l.inertial;
      Eigen::Matrix3d I_B = in.rpy.isZero(0) ? in.I_C : Eigen::Matrix3d(in.R_BC * in.I_C * in.R_BC.transpose());
      I_B = (0.5 * (I_B + I_B.transpose())).eval();
      // Round-off of the turn (1e-18 where the file's values give 0) printed as 0.
      const double scale = I_B.cwiseAbs().maxCoeff();
      I_B = I_B.unaryExpr([scale](double v) { return std::abs(v) < 1e-15 * scale ? 0.0 : v; }).eval();
      decl("// link `" + shown(l.name) + "` (" + src_.cite(l.where) + ")" + (in.note.empty() ? "" : ": " + in.note));
      if (!in.rpy.isZero(0))
        decl("//   <inertia> " + mat(in.I_C) + " in the <inertial> " + (r_.format == "URDF" ? "origin" : "pose") +
             "'s frame, rpy " + vec(in.rpy) +
             ", turned into the link frame:");
      decl("Body " + l.id + "(mass = " + num(in.mass) + ", com = " + vec(in.com) + ", inertia = " + mat(I_B) + ");");
      connect(frame, l.id + ".frame_a");
      here = l.id + ".frame_a";
    } else {
      decl("// link `" + shown(l.name) + "` (" + src_.cite(l.where) + "): no mass; its frame is `" + here + "`");
      const Joint* up = l.parentJoint >= 0 ? &r_.joints[static_cast<std::size_t>(l.parentJoint)] : nullptr;
      if (l.childJoints.empty() && up)
        diags_.report(DiagKind::ImportMasslessLeafMerged, src_.at(l.where), l.name,
                      up->fromWorld ? std::string("world") : up->parent, here);
    }
    writeVisuals(l, here);
    decls_ += "\n";
    for (int j : l.childJoints) writeJoint(j, here);
  }

  // Each visual as a `Visual` at its origin in the link frame `frame` (a
  // mesh that is not STL or OBJ stays a comment: `capstan view` draws those).
  void writeVisuals(const Link& l, const std::string& frame) {
    for (const Visual& v : l.visuals) {
      std::string shape = v.shape, kind = v.kind, file;
      if (!v.mesh.empty()) {
        std::string where, package;
        const std::string found = resolveMesh(v.mesh, where, package);
        shape = "mesh \"" + shown(found) + "\" scale " + vec(v.scale);
        if (!found.empty() && cli::meshFormat(found)) {
          kind = "mesh";
          std::error_code ec;
          const fs::path here = fs::current_path(ec);
          const auto absolute = [&](const fs::path& p) { return (p.is_absolute() ? p : here / p).lexically_normal(); };
          file = absolute(found).lexically_relative(absolute(options_.modelDir)).generic_string();
        }
      }
      decl("//   visual: " + shape + " at xyz " + vec(v.origin.xyz) + " rpy " + vec(v.origin.rpy) +
           (kind.empty() ? " (not drawn: capstan view draws boxes, spheres, cylinders, STL and OBJ meshes)" : ""));
      if (kind.empty()) continue;
      const std::string id = fresh(l.id + "_visual");
      std::string args = "shape = \"" + kind + "\"";
      if (kind == "mesh") args += ", file = \"" + syntax::escapeString(file) + "\", scale = " + vec(v.scale);
      else args += ", size = " + vec(v.size);
      if (v.rgba)
        args += ", color = " + vec(v.rgba->head<3>().cwiseMax(0.0).cwiseMin(1.0).eval()) +
                ", opacity = " + num(std::clamp((*v.rgba)[3], 0.0, 1.0));
      decl("Visual " + id + "(" + args + ");");
      connect(through(frame, fresh(id + "_origin"), v.origin), id + ".frame_a");
    }
    if (l.collisions > 0)
      decl("//   (" + std::to_string(l.collisions) + " <collision> element(s) not imported)");
  }

  // A `<mimic>`: a Coupler (q = multiplier q_leader + offset) between two
  // one-coordinate joints; else, or with --no-mimic, a comment (and, without
  // --no-mimic, a warning): an independent degree of freedom.
  void writeMimic(const Joint& j) {
    const std::string as = "<mimic joint=\"" + shown(j.mimic->joint) + "\" multiplier=\"" + num(j.mimic->multiplier) +
                           "\" offset=\"" + num(j.mimic->offset) + "\">";
    const Joint* leader = nullptr;
    for (const Joint& k : r_.joints)
      if (k.name == j.mimic->joint) leader = &k;
    const auto moves = [](const Joint& k) { return k.type == "revolute" || k.type == "continuous" || k.type == "prismatic"; };
    std::string why;
    if (!leader) why = "which is not a joint of the file";
    else if (leader == &j) why = "which is the joint itself";
    else if (!moves(j) || !moves(*leader)) why = "but a coupler joins two revolute, continuous or prismatic joints";
    if (options_.noMimic || !why.empty()) {
      decl("//   " + as + ": imported as an independent degree of freedom");
      if (!options_.noMimic)
        diags_.report(DiagKind::UrdfMimicIgnored, src_.at(j.mimic->where.line ? j.mimic->where : j.where), j.name,
                      j.mimic->joint, why);
      return;
    }
    decl("//   " + as + ": a coupler");
    decl("Coupler " + fresh(j.id + "_mimic") + "(follower = " + j.id + ", leader = " + leader->id +
         ", ratio = " + num(j.mimic->multiplier) + ", offset = " + num(j.mimic->offset) + ");");
  }

  void writeJoint(int index, const std::string& parentFrame) {
    Joint& j = r_.joints[static_cast<std::size_t>(index)];
    decl("// joint `" + shown(j.name) + "`, " + j.type + ", `" + shown(j.fromWorld ? std::string("world") : j.parent) +
         "` -> `" + shown(j.child) + "` (" + src_.cite(j.where) + ")");
    std::string out;
    if (j.type == "fixed") {
      offset(j.id, j.origin, true);
      connect(parentFrame, j.id + ".frame_a");
      out = j.id + ".frame_b";
    } else {
      std::string in = through(parentFrame, fresh(j.id + "_origin"), j.origin);
      if (j.type == "revolute" || j.type == "continuous") {
        decl("Revolute " + j.id + "(axis = " + vec(j.axis) + ");");
      } else if (j.type == "prismatic") {
        decl("Prismatic " + j.id + "(axis = " + vec(j.axis) + ");");
      } else if (j.type == "floating") {
        decl("Free " + j.id + ";");
      } else if (j.type == "ball") {
        decl("Ball " + j.id + ";");
      } else if (j.type == "universal") {
        decl("Universal " + j.id + "(axis_a = " + vec(j.axis) + ", axis_b = " + vec(j.axis2) + ");");
      } else {  // planar: along two directions of the plane normal to the axis, then about it
        const Eigen::Vector3d n = j.axis.normalized();
        const Eigen::Vector3d t1 = n.unitOrthogonal(), t2 = n.cross(t1);
        const std::string a = fresh(j.id + "_u"), b = fresh(j.id + "_v");
        decl("Prismatic " + a + "(axis = " + vec(t1) + ") \"planar: first direction in the plane\";");
        decl("Prismatic " + b + "(axis = " + vec(t2) + ") \"planar: second direction in the plane\";");
        decl("Revolute " + j.id + "(axis = " + vec(j.axis) + ") \"planar: rotation about the normal\";");
        connect(in, a + ".frame_a");
        connect(a + ".frame_b", b + ".frame_a");
        in = b + ".frame_b";
      }
      connect(in, j.id + ".frame_a");
      out = through(j.id + ".frame_b", fresh(j.id + "_child"), j.toChild,
                    "the child link's frame in the joint frame");
      writeJointLaws(j);
    }
    writeLink(static_cast<int>(index_.at(j.child)), out);
  }

  void writeJointLaws(const Joint& j) {
    const bool linear = j.type == "prismatic";
    const bool oneDof = j.type == "revolute" || j.type == "continuous" || linear;
    if (j.positionLimits) {
      const char* unit = linear ? "m" : "rad";
      decl("constant Real " + fresh(j.id + "_lower") + "(unit = \"" + unit + "\") = " + num(j.lower) +
           " \"<limit lower>\";");
      decl("constant Real " + fresh(j.id + "_upper") + "(unit = \"" + unit + "\") = " + num(j.upper) +
           " \"<limit upper>\";");
    }
    if (j.rateLimits && oneDof)
      decl("//   <limit effort=\"" + num(j.effort) + "\" velocity=\"" + num(j.velocity) + "\">: not enforced");
    if (!j.unimported.empty()) decl("//   " + j.unimported);
    if (j.mimic) writeMimic(j);
    if (!oneDof) return;
    std::string law;
    if (j.damping != 0) {
      const std::string d = fresh(j.id + "_damping");
      decl("parameter Real " + d + "(unit = \"" + (linear ? "N.s/m" : "N.m.s/rad") + "\") = " + num(j.damping) +
           " \"<dynamics damping>\";");
      law = "-" + d + " * " + j.id + ".u";
    }
    if (j.friction != 0) {
      const std::string f = fresh(j.id + "_friction");
      decl("parameter Real " + f + "(unit = \"" + (linear ? "N" : "N.m") + "\") = " + num(j.friction) +
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
    for (Link& l : r_.links) l.id = fresh(robotIdentifier(l.name));
    for (Joint& j : r_.joints) j.id = fresh(robotIdentifier(j.name));
    const std::string robot = r_.name.empty() ? "robot" : r_.name;
    const std::string model = options_.modelName.empty() ? robotIdentifier(robot) : options_.modelName;
    used_.insert(model);

    decl("World world(gravity = {0, 0, -9.81}) \"" + r_.gravityNote + "\";");
    std::string base = "world.frame_b";
    if (r_.root >= 0) {
      if (options_.floatingBase) {
        const std::string free = fresh("floating_base");
        std::string q0;
        if (!r_.rootPose.identity()) {
          const Eigen::Quaterniond q = Eigen::AngleAxisd(r_.rootPose.rpy.z(), Eigen::Vector3d::UnitZ()) *
                                       Eigen::AngleAxisd(r_.rootPose.rpy.y(), Eigen::Vector3d::UnitY()) *
                                       Eigen::AngleAxisd(r_.rootPose.rpy.x(), Eigen::Vector3d::UnitX());
          q0 = "(q0 = {" + num(q.w()) + ", " + num(q.x()) + ", " + num(q.y()) + ", " + num(q.z()) + ", " +
               num(r_.rootPose.xyz.x()) + ", " + num(r_.rootPose.xyz.y()) + ", " + num(r_.rootPose.xyz.z()) + "})";
        }
        decl("Free " + free + q0 + " \"--floating-base: the root link moves freely" +
             (q0.empty() ? "" : ", from its pose in the file") + "\";");
        connect(base, free + ".frame_a");
        base = free + ".frame_b";
      } else {
        base = through(base, fresh("root_pose"), r_.rootPose, r_.rootNote);
      }
    }
    decls_ += "\n";
    if (r_.root >= 0) writeLink(r_.root, base);
    for (std::size_t j = 0; j < r_.joints.size(); ++j)
      if (r_.joints[j].fromWorld) writeJoint(static_cast<int>(j), "world.frame_b");
    if (friction_)
      decls_ = "  parameter Real frictionSpeed = 0.01 \"speed (rad/s, m/s) over which <dynamics friction> "
               "reaches its value: -friction * tanh(u / frictionSpeed)\";\n" + decls_;

    std::string out;
    out += "// Imported by `capstan import` from " + shown(src_.path().filename().string()) + " (robot `" + shown(robot) +
           "`): " + std::to_string(r_.links.size()) + " links, " + std::to_string(r_.joints.size()) + " joints.\n";
    out += "// Names are the file's; docs/import.md gives the rule for the others and the mapping of each element.\n";
    out += "model " + model + " \"robot `" + shown(robot) + "`\"\n";
    out += "  import Capstan.*;\n";
    while (decls_.size() >= 2 && decls_.substr(decls_.size() - 2) == "\n\n") decls_.pop_back();
    out += decls_;
    out += "equation\n" + eqs_;
    // So that `capstan simulate robot.urdf` runs without --t-end.
    out += "  // One second from the file's pose, every joint at rest: change StopTime (s) for a longer run.\n";
    out += "  annotation(experiment(StopTime = 1));\n";
    out += "end " + model + ";\n";
    return out;
  }

  Robot& r_;
  const SourceText& src_;
  const ImportOptions& options_;
  syntax::DiagnosticEngine& diags_;
  std::map<std::string, std::size_t> index_;
  std::set<std::string> used_;
  std::string decls_, eqs_;
  bool friction_ = false;
};

}  // namespace

// ---- the file's text ------------------------------------------------------------

SourceText::SourceText(const fs::path& path, const std::string& text, syntax::SourceManager& sources)
    : path_(path), text_(text) {
  file_ = sources.add(path.string(), text);
  lineStarts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') lineStarts_.push_back(static_cast<std::uint32_t>(i + 1));
}

SourceRange SourceText::at(int line, std::uint32_t length) const {
  if (line < 1 || static_cast<std::size_t>(line) > lineStarts_.size()) return {file_, 0, 0};
  const std::uint32_t b = lineStarts_[static_cast<std::size_t>(line - 1)];
  return {file_, b, std::min<std::uint32_t>(b + length, static_cast<std::uint32_t>(text_.size()))};
}

SourceRange SourceText::at(const Where& where) const {
  if (where.line < 1) return {file_, 0, 0};
  SourceRange r = at(where.line);
  const std::string tag = "<" + where.tag;
  const std::size_t end = static_cast<std::size_t>(where.line) < lineStarts_.size()
                              ? lineStarts_[static_cast<std::size_t>(where.line)]
                              : text_.size();
  const std::size_t found = where.tag.empty() ? std::string::npos : text_.find(tag, r.begin);
  if (found != std::string::npos && found < end) {
    r.begin = static_cast<std::uint32_t>(found);
    r.end = static_cast<std::uint32_t>(found + tag.size());
  }
  return r;
}

std::string SourceText::cite(const Where& where) const {
  return syntax::escapeString(path_.filename().string()) + ":" + std::to_string(where.line);
}

// ---- the tree ---------------------------------------------------------------------

bool checkTree(Robot& robot, const SourceText& source, syntax::DiagnosticEngine& diags) {
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < robot.links.size(); ++i)
    if (!index.count(robot.links[i].name)) index[robot.links[i].name] = static_cast<int>(i);
  auto linkAt = [&](const std::string& name) -> Link& { return robot.links[static_cast<std::size_t>(index.at(name))]; };
  for (std::size_t k = 0; k < robot.joints.size(); ++k) {
    const Joint& j = robot.joints[k];
    if (!j.fromWorld && !j.parent.empty() && !index.count(j.parent))
      diags.report(DiagKind::ImportUnknownLink, source.at(j.parentWhere.line ? j.parentWhere : j.where), j.name,
                   std::string("the parent"), j.parent);
    if (!j.child.empty() && !index.count(j.child))
      diags.report(DiagKind::ImportUnknownLink, source.at(j.childWhere.line ? j.childWhere : j.where), j.name,
                   std::string("the child"), j.child);
    if (j.child.empty() || !index.count(j.child) || (!j.fromWorld && !index.count(j.parent))) continue;
    Link& child = linkAt(j.child);
    if (child.parentJoint >= 0) {
      const Joint& first = robot.joints[static_cast<std::size_t>(child.parentJoint)];
      diags.report(DiagKind::ImportSecondParent, source.at(j.where), j.child, first.name, j.name)
          .note(DiagKind::NoteImportFirstParent, source.at(first.where), first.name);
      continue;
    }
    child.parentJoint = static_cast<int>(k);
    if (!j.fromWorld) linkAt(j.parent).childJoints.push_back(static_cast<int>(k));
  }
  if (diags.hasErrors()) return false;
  // One root; every link reached from it or from a joint from the world (a
  // link on a loop has a parent and is not reached).
  for (std::size_t i = 0; i < robot.links.size(); ++i) {
    if (robot.links[i].parentJoint >= 0) continue;
    if (robot.root < 0) {
      robot.root = static_cast<int>(i);
    } else {
      diags.report(DiagKind::ImportSeveralRoots, source.at(robot.links[i].where),
                   robot.links[static_cast<std::size_t>(robot.root)].name, robot.links[i].name);
      return false;
    }
  }
  std::vector<bool> reached(robot.links.size(), false);
  std::vector<int> stack;
  if (robot.root >= 0) stack.push_back(robot.root);
  for (const Joint& j : robot.joints)
    if (j.fromWorld && index.count(j.child)) stack.push_back(index.at(j.child));
  while (!stack.empty()) {
    const int l = stack.back();
    stack.pop_back();
    reached[static_cast<std::size_t>(l)] = true;
    for (int c : robot.links[static_cast<std::size_t>(l)].childJoints)
      stack.push_back(index.at(robot.joints[static_cast<std::size_t>(c)].child));
  }
  for (std::size_t i = 0; i < robot.links.size(); ++i) {
    if (reached[i]) continue;
    // Walk up the parents from link i until a link repeats: the loop.
    std::vector<int> path;
    int l = static_cast<int>(i);
    auto up = [&](int link) -> const Joint& {
      return robot.joints[static_cast<std::size_t>(robot.links[static_cast<std::size_t>(link)].parentJoint)];
    };
    while (std::find(path.begin(), path.end(), l) == path.end()) {
      path.push_back(l);
      l = index.at(up(l).parent);
    }
    std::string cycle;
    for (auto it = std::find(path.begin(), path.end(), l); it != path.end(); ++it)
      cycle += (cycle.empty() ? "" : " <- ") + up(*it).name;
    diags.report(DiagKind::ImportLoop, source.at(up(l).where), robot.links[static_cast<std::size_t>(l)].name, cycle);
    return false;
  }
  return true;
}

std::optional<std::string> writeModel(Robot& robot, const SourceText& source, const ImportOptions& options,
                                      syntax::DiagnosticEngine& diags) {
  return Writer(robot, source, options, diags).run();
}

// ---- names and numbers ----------------------------------------------------------

std::string robotIdentifier(const std::string& name) {
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

std::string robotName(const std::string& identifier) {
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

}  // namespace capstan::import
