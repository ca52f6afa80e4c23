// `capstan view FILE [TRAJ.csv] -o page.html` and `capstan simulate ...
// --view page.html`: one self-contained HTML page (docs/view.md) that
// animates the model along a trajectory with three.js and plots its
// columns.
//
// The page is compiler/templates/view.html with three things put in: Debian's
// three.js (libjs-three: three.min.js and its OrbitControls), and the
// scene as JSON. The scene is computed here, with the interpreter, from the
// trajectory's joint coordinates, so the page does no kinematics:
//   shapes   per body, in its body frame B: each `Visual`, each piece of
//            geometry (Sphere, Cylinder, Ellipsoid, Torus, HalfSpace) and
//            each cable via point as it is; a body with neither, the box of
//            its inertia (the solid box with the body's mass and principal
//            moments, centered at its center of mass);
//   frames   the animation: X_WB of every moving body at up to kMaxFrames
//            rows of the trajectory (every row of a shorter one), every
//            cable's path in World, its straight segments and the geodesics
//            over the surfaces it wraps (the path solver's own points), and
//            each bushing's halfway frame B (markers);
//   plots    every column of the trajectory in its unit (the engine's column
//            table), at most kMaxPlotPoints points each: a longer column
//            keeps, for each of kMaxPlotPoints / 2 runs of rows, its
//            smallest and largest value (display only: peaks stay).
// The same model and trajectory give the same page, byte for byte.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>
#include <nlohmann/json.hpp>

#include <capstan/sim/columns.hpp>
#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "cli/files.hpp"
#include "cli/generate.hpp"
#include "cli/mesh.hpp"
#include "cli/options.hpp"
#include "cli/tube.hpp"
#include "cli/view.hpp"
#include "codegen/interpret.hpp"
#include "codegen/render.hpp"
#include "mechanics/assembly.hpp"
#include "mechanics/builtins.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;
using json = nlohmann::json;
using mechanics::ComponentKind;
using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
using Pose = capstan::Transform<double>;

namespace {

constexpr std::size_t kMaxFrames = 2000;       // animation frames in a page
constexpr std::size_t kMaxPlotPoints = 4000;   // points per plotted column

// A number as the page keeps it: 9 significant digits (display only, and
// the same digits on every machine).
double shortNumber(double x) {
  if (!std::isfinite(x)) return 0.0;
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x);
  return std::strtod(text, nullptr);
}
json numbers(const double* v, std::size_t n) {
  json out = json::array();
  for (std::size_t i = 0; i < n; ++i) out.push_back(shortNumber(v[i]));
  return out;
}
json vec(const Vec3& v) { return numbers(v.data(), 3); }
// A pose as the page uses it: position, then quaternion x, y, z, w (three.js's order).
void appendPose(json& out, const Pose& X) {
  const Eigen::Quaterniond q(X.R);
  for (double v : {X.p.x(), X.p.y(), X.p.z(), q.x(), q.y(), q.z(), q.w()}) out.push_back(shortNumber(v));
}
json pose(const Pose& X) {
  json out = json::array();
  appendPose(out, X);
  return out;
}

// The three.js files the page embeds: CAPSTAN_THREE_JS, else Debian's libjs-three.
fs::path threeDir() {
  if (const char* env = std::getenv("CAPSTAN_THREE_JS"); env && *env) return env;
  return CAPSTAN_THREE_JS_DIR;
}

// Text put inside <script>: `</script` would end it early.
std::string scriptSafe(std::string text) {
  for (std::size_t at = 0; (at = text.find("</", at)) != std::string::npos; at += 3) text.replace(at, 2, "<\\/");
  return text;
}

// ---- the scene ----------------------------------------------------------------

struct SceneBuilder {
  const Loaded& loaded;
  const mechanics::Mechanism& mech;
  mechanics::Assembly<double> assembly;
  std::vector<json> bodyShapes;  // per mechanism body
  double scale = 1.0;            // the model's size (m): default sizes

  SceneBuilder(const Loaded& l)
      : loaded(l), mech(*l.mech), assembly(*l.flat, *l.mech, mechanics::compileTimeValues(*l.flat)),
        bodyShapes(l.mech->bodies.size(), json::array()) {
    double extent = 0.0;
    for (const mechanics::FrameInfo& f : mech.frames) extent = std::max(extent, f.X_BF.p.norm());
    for (const mechanics::BodyInfo& b : mech.bodies) extent = std::max(extent, b.p_BoBcm_B.norm());
    if (extent > 0.0) scale = extent;
  }

  const sema::FlatComponent& component(int c) const { return loaded.flat->components.at(std::size_t(c)); }
  std::string text(int c, const std::string& name, const std::string& fallback) const {
    const auto& params = component(c).parameters;
    const auto it = params.find(name);
    if (it == params.end() || it->second < 0) return fallback;
    const auto& value = loaded.flat->variables.at(std::size_t(it->second)).value;
    return value && !value->strings.empty() ? value->strings.front() : fallback;
  }

  // Shape `kind` of component `c` at its frame_a.
  void add(int c, const std::string& kind, json shape) { addAt(mech.findFrame(c, "frame_a"), component(c).path, kind, std::move(shape)); }
  void addAt(int f, const std::string& of, const std::string& kind, json shape) {
    if (f < 0) return;
    const mechanics::FrameInfo& frame = mech.frames.at(std::size_t(f));
    if (frame.body < 0) return;
    shape["kind"] = kind;
    shape["of"] = of;
    shape["pose"] = pose(frame.X_BF);
    bodyShapes.at(std::size_t(frame.body)).push_back(std::move(shape));
  }

  static json look(const std::array<double, 3>& color, double opacity) {
    return {{"color", numbers(color.data(), 3)}, {"opacity", shortNumber(opacity)}};
  }

  void visual(int c) {
    const std::string shape = text(c, "shape", "box");
    const Vec3 color = assembly.vec3(c, "color", Vec3(0.62, 0.64, 0.68));
    json s = look({color.x(), color.y(), color.z()}, assembly.scalar(c, "opacity", 1.0));
    if (shape == "mesh") {
      const fs::path model = loaded.sources.file(component(c).range.file).path();
      const fs::path file = model.parent_path() / text(c, "file", "");
      std::string error;
      const std::optional<MeshFormat> format = meshFormat(file);
      const std::string data = readFile(file);
      std::vector<float> triangles;
      if (data.empty()) error = fs::exists(file) ? "it is empty or cannot be read" : "no such file";
      else if (!format) error = "the file is not `.stl` or `.obj`";
      else triangles = parseMesh(data, *format, error);
      if (!error.empty()) fail(syntax::DiagKind::ViewMeshUnreadable, file.string(), component(c).path, error);
      const Vec3 k = assembly.vec3(c, "scale", Vec3::Ones());
      json corners = json::array();
      for (std::size_t i = 0; i < triangles.size(); ++i) corners.push_back(shortNumber(double(triangles[i]) * k[int(i % 3)]));
      s["triangles"] = std::move(corners);
    } else {
      s["size"] = vec(assembly.vec3(c, "size", Vec3::Constant(0.1)));
    }
    add(c, shape, std::move(s));
  }

  static constexpr std::array<double, 3> kGeometry{0.85, 0.55, 0.25};

  void geometry(int c, ComponentKind kind) {
    json s = look(kGeometry, 0.85);
    switch (kind) {
      case ComponentKind::Sphere: {
        const double d = 2 * assembly.scalar(c, "radius", 0.1);
        s["size"] = {d, d, d};
        return add(c, "sphere", std::move(s));
      }
      case ComponentKind::Ellipsoid:
        s["size"] = vec(2 * assembly.vec3(c, "semiAxes", Vec3::Constant(0.1)));
        return add(c, "sphere", std::move(s));
      case ComponentKind::Cylinder: {  // infinite: drawn 4 radii (at least a tenth of the model) long
        const double r = assembly.scalar(c, "radius", 0.1);
        s["size"] = {2 * r, 2 * r, shortNumber(std::max(4 * r, 0.1 * scale))};
        s["opacity"] = 0.6;
        return add(c, "cylinder", std::move(s));
      }
      case ComponentKind::Torus:
        s["size"] = {shortNumber(assembly.scalar(c, "majorRadius", 0.2)), shortNumber(assembly.scalar(c, "minorRadius", 0.05)), 0};
        return add(c, "torus", std::move(s));
      case ComponentKind::HalfSpace:  // its boundary, the y-z plane; the solid is x > 0
        s = look({0.55, 0.6, 0.65}, 0.35);
        s["size"] = {shortNumber(0.001 * scale), shortNumber(4 * scale), shortNumber(4 * scale)};
        s["ground"] = true;  // left out of what the camera frames
        return add(c, "box", std::move(s));
      case ComponentKind::ViaPoint: {
        const double d = 0.03 * scale;
        json v = look({0.2, 0.2, 0.2}, 1.0);
        v["size"] = {shortNumber(d), shortNumber(d), shortNumber(d)};
        return add(c, "sphere", std::move(v));
      }
      default: return;
    }
  }

  // The solid box with the body's mass and central principal moments:
  // I1 = m (b^2 + c^2) / 12, ... so a^2 = 6 (I2 + I3 - I1) / m. A massless
  // body (a frame between two joints) is a small ball at its origin.
  void inertiaBox(std::size_t b) {
    const mechanics::BodyInfo& body = mech.bodies[b];
    if (!(body.mass > 0.0)) {
      const double d = 0.02 * scale;
      json s = look({0.45, 0.47, 0.5}, 1.0);
      s["kind"] = "sphere";
      s["of"] = body.name;
      s["size"] = {shortNumber(d), shortNumber(d), shortNumber(d)};
      s["pose"] = pose(Pose());
      bodyShapes[b].push_back(std::move(s));
      return;
    }
    Eigen::SelfAdjointEigenSolver<Mat3> eig(0.5 * (body.I_Bcm_B + body.I_Bcm_B.transpose()));
    const Vec3 I = eig.eigenvalues();
    Vec3 edge;
    for (int i = 0; i < 3; ++i)
      edge[i] = std::sqrt(std::max(0.0, 6.0 * (I[(i + 1) % 3] + I[(i + 2) % 3] - I[i]) / body.mass));
    const double least = std::max(0.04 * edge.maxCoeff(), 0.02 * scale);
    for (int i = 0; i < 3; ++i) edge[i] = std::max(edge[i], least);
    Mat3 R = eig.eigenvectors();
    if (R.determinant() < 0) R.col(2) = -R.col(2);
    json s = look({0.36, 0.52, 0.78}, 1.0);
    s["kind"] = "box";
    s["of"] = body.name;
    s["size"] = vec(edge);
    s["pose"] = pose(Pose(R, body.p_BoBcm_B));
    bodyShapes[b].push_back(std::move(s));
  }

  void build() {
    std::vector<bool> drawn(mech.bodies.size(), false);
    for (int c = 0; c < static_cast<int>(loaded.flat->components.size()); ++c) {
      const std::optional<ComponentKind> kind = mechanics::componentKind(component(c).kind);
      if (!kind) continue;
      const std::size_t n = shapesOn(c);
      if (*kind == ComponentKind::Visual) visual(c);
      else geometry(c, *kind);
      if (shapesOn(c) > n && *kind != ComponentKind::ViaPoint) drawn[std::size_t(bodyOf(c))] = true;
    }
    for (std::size_t b = 1; b < mech.bodies.size(); ++b)
      if (!drawn[b]) inertiaBox(b);
    // A bushing's frames A and C, as axes (x red, y green, z blue).
    for (const mechanics::ForceInfo& f : mech.forces) {
      if (f.kind != mechanics::ForceKind::Bushing) continue;
      for (const auto& [frame, which] : {std::pair{f.frameA, ".frame_a"}, std::pair{f.frameB, ".frame_b"}}) {
        json axes = look({0, 0, 0}, 1.0);
        axes["size"] = {shortNumber(0.25 * scale), 0, 0};
        addAt(frame, f.name + which, "axes", std::move(axes));
      }
    }
  }

  int bodyOf(int c) const {
    const int f = mech.findFrame(c, "frame_a");
    return f < 0 ? -1 : mech.frames[std::size_t(f)].body;
  }
  std::size_t shapesOn(int c) const {
    const int b = bodyOf(c);
    return b < 0 ? 0 : bodyShapes[std::size_t(b)].size();
  }
};

// ---- the trajectory -------------------------------------------------------------

// Rows 0, ..., n - 1 thinned to at most `most`, first and last kept.
std::vector<std::size_t> sampleRows(std::size_t n, std::size_t most) {
  std::vector<std::size_t> rows;
  if (n <= most) {
    for (std::size_t i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  for (std::size_t k = 0; k < most; ++k) rows.push_back((k * (n - 1) + (most - 1) / 2) / (most - 1));
  return rows;
}

json plots(const Csv& csv, const std::map<std::string, std::string>& units) {
  const std::size_t n = csv.time.size();
  json out;
  json columns = json::array();
  const bool whole = n <= kMaxPlotPoints;
  if (whole) out["t"] = numbers(csv.time.data(), n);
  for (std::size_t k = 0; k < csv.names.size(); ++k) {
    const std::vector<double>& y = csv.columns[k];
    json c;
    c["name"] = csv.names[k];
    const auto unit = units.find(csv.names[k]);
    c["unit"] = unit == units.end() ? "" : unit->second;
    if (whole) {
      c["y"] = numbers(y.data(), n);
    } else {
      json t = json::array(), v = json::array();
      const std::size_t runs = kMaxPlotPoints / 2;
      for (std::size_t r = 0; r < runs; ++r) {
        const std::size_t b = r * n / runs, e = std::max(b + 1, (r + 1) * n / runs);
        std::size_t lo = b, hi = b;
        for (std::size_t i = b; i < e; ++i) {
          if (y[i] < y[lo]) lo = i;
          if (y[i] > y[hi]) hi = i;
        }
        for (std::size_t i : {std::min(lo, hi), std::max(lo, hi)}) {
          t.push_back(shortNumber(csv.time[i]));
          v.push_back(shortNumber(y[i]));
          if (lo == hi) break;
        }
      }
      c["t"] = std::move(t);
      c["y"] = std::move(v);
    }
    columns.push_back(std::move(c));
  }
  out["columns"] = std::move(columns);
  json shown = json::array();
  for (const std::string& name : csv.names)
    if (name == "kinetic_energy" || name == "potential_energy" || name.ends_with(".position_error") ||
        name.ends_with(".velocity_error"))
      shown.push_back(name);
  out["shown"] = std::move(shown);
  return out;
}

}  // namespace

namespace {

// What every page embeds: three.js, its orbit controls and the page itself.
struct PageParts {
  std::string threeJs, orbitJs, page;
};
PageParts pageParts() {
  const fs::path three = threeDir();
  PageParts parts{readFile(three / "three.min.js"), readFile(three / "examples/js/controls/OrbitControls.js"),
                  readFile(codegen::defaultTemplateDir() / "view.html")};
  if (parts.threeJs.empty() || parts.orbitJs.empty()) fail(syntax::DiagKind::ViewThreeMissing, three.string());
  if (parts.page.empty()) fail(syntax::DiagKind::InstallationIncomplete, "view.html", codegen::defaultTemplateDir().string());
  return parts;
}

std::string writeViewFrom(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout, const Csv* csv,
                          const std::string& csvPath) {
  const PageParts parts = pageParts();

  if (csv->time.empty()) fail(syntax::DiagKind::ViewTrajectoryEmpty, csvPath);

  codegen::Interpreter interp(*loaded.flat, *loaded.mech, layout, {}, {}, loadExternalFunctions(opts, loaded));
  codegen::InterpretedModel model(interp);
  std::map<std::string, std::string> units;
  capstan::sim::columnNames(model, capstan::sim::ColumnOptions{true},
                            [&](std::string_view name, std::string_view unit) { units[std::string(name)] = unit; });
  // The joint coordinates place the bodies; the speeds, where the CSV has
  // them, give the cables' length rates (nothing drawn depends on them).
  std::vector<int> qColumn(std::size_t(model.nq)), uColumn(std::size_t(model.nu));
  for (int i = 0; i < model.nq; ++i) {
    qColumn[std::size_t(i)] = csv->column(model.qNames[std::size_t(i)]);
    if (qColumn[std::size_t(i)] < 0) fail(syntax::DiagKind::ViewColumnMissing, csvPath, model.qNames[std::size_t(i)]);
  }
  for (int i = 0; i < model.nu; ++i) uColumn[std::size_t(i)] = csv->column(model.uNames[std::size_t(i)]);

  SceneBuilder scene(loaded);
  scene.build();
  const mechanics::Mechanism& mech = *loaded.mech;
  // Runtime body of each mechanism body (-1: world).
  std::vector<int> runtimeBody(mech.bodies.size(), -1);
  for (std::size_t b = 0; b < layout.bodies.size(); ++b)
    if (layout.bodies[b].mechBody >= 0) runtimeBody[std::size_t(layout.bodies[b].mechBody)] = int(b);

  json data;
  data["model"] = loaded.flat->name;
  data["source"] = fs::path(opts.file).filename().string();
  data["trajectory"] = fs::path(csvPath).filename().string();
  const Vec3 g(mech.gravity.x(), mech.gravity.y(), mech.gravity.z());
  data["up"] = g.norm() > 0 ? vec(-g.normalized()) : json{0, 1, 0};
  data["scale"] = shortNumber(scene.scale);
  data["world"] = scene.bodyShapes[0];
  json bodies = json::array();
  for (std::size_t b = 1; b < mech.bodies.size(); ++b)
    bodies.push_back({{"name", mech.bodies[b].name}, {"shapes", scene.bodyShapes[b]}});

  const std::vector<std::size_t> rows = sampleRows(csv->time.size(), kMaxFrames);
  json times = json::array();
  std::vector<json> poses(mech.bodies.size(), json::array());
  std::vector<json> cablePoints(mech.cables.size(), json::array());
  std::vector<const mechanics::ForceInfo*> bushings;
  for (const mechanics::ForceInfo& f : mech.forces)
    if (f.kind == mechanics::ForceKind::Bushing) bushings.push_back(&f);
  std::vector<json> halfway(bushings.size(), json::array());
  Eigen::VectorXd q(model.nq), u = Eigen::VectorXd::Zero(model.nu);
  codegen::InterpretedModel::BodyPoses X;
  std::size_t lostPaths = 0;
  for (std::size_t r : rows) {
    bool finite = true;
    for (int i = 0; i < model.nq; ++i) {
      q[i] = csv->columns[std::size_t(qColumn[std::size_t(i)])][r];
      finite = finite && std::isfinite(q[i]);
    }
    if (!finite) continue;  // a failed run's last row: the page ends before it
    for (int i = 0; i < model.nu; ++i)
      if (uColumn[std::size_t(i)] >= 0) u[i] = csv->columns[std::size_t(uColumn[std::size_t(i)])][r];
    const double t = csv->time[r];
    times.push_back(shortNumber(t));
    model.bodyPoses(q, X);
    auto X_WB = [&](int mechBody) {
      const int rb = runtimeBody[std::size_t(mechBody)];
      return rb < 0 ? Pose() : Pose(X[std::size_t(rb)].R_WB, X[std::size_t(rb)].p_WB);
    };
    for (std::size_t b = 1; b < mech.bodies.size(); ++b) appendPose(poses[b], X_WB(int(b)));
    // Each bushing's frame B halfway between A and C, as Drake's
    // LinearBushingRollPitchYaw defines it: Bo at the midpoint of Ao and Co,
    // R_AB the half of R_AC's rotation (so R_AB = R_BC).
    for (std::size_t k = 0; k < bushings.size(); ++k) {
      const mechanics::FrameInfo& A = mech.frames.at(std::size_t(bushings[k]->frameA));
      const mechanics::FrameInfo& C = mech.frames.at(std::size_t(bushings[k]->frameB));
      const Pose X_WA = X_WB(A.body) * A.X_BF, X_WC = X_WB(C.body) * C.X_BF;
      const Eigen::AngleAxisd R_AC(Mat3(X_WA.R.transpose() * X_WC.R));
      appendPose(halfway[k], Pose(X_WA.R * Eigen::AngleAxisd(0.5 * R_AC.angle(), R_AC.axis()).toRotationMatrix(),
                                  0.5 * (X_WA.p + X_WC.p)));
    }
    if (mech.cables.empty()) continue;
    codegen::InterpretedModel::ExternalForces fext;
    const bool solved = model.updateCables(t, q, u, fext) < 0;
    for (std::size_t c = 0; c < mech.cables.size(); ++c) {
      json points = json::array();
      if (!solved) {
        ++lostPaths;
        cablePoints[c].push_back(std::move(points));
        continue;
      }
      const capstan::cable::CablePathState& path = model.cablePath(int(c));
      const std::size_t m = path.obstacles.size();
      for (std::size_t i = 0; i < m; ++i) {
        const capstan::cable::ObstacleState& o = path.obstacles[i];
        if (!o.active) continue;
        const bool wrap = i > 0 && i + 1 < m && mech.cables[c].path[i - 1].isWrap;
        const std::vector<Vec3>* curve = wrap && i < path.wraps.size() ? &path.wraps[i].curve.points : nullptr;
        if (curve && curve->size() >= 2) {
          // The geodesic, in the surface's frame S = its frame_a.
          const int f = mech.findFrame(mech.cables[c].path[i - 1].surface, "frame_a");
          const mechanics::FrameInfo& F = mech.frames.at(std::size_t(f));
          const Pose X_WS = X_WB(F.body) * F.X_BF;
          const bool forward = (X_WS * curve->front() - o.P.p_W).norm() <= (X_WS * curve->back() - o.P.p_W).norm();
          for (std::size_t k = 0; k < curve->size(); ++k) {
            const Vec3 p = X_WS * (*curve)[forward ? k : curve->size() - 1 - k];
            for (int d = 0; d < 3; ++d) points.push_back(shortNumber(p[d]));
          }
        } else {
          for (const Vec3& p : {o.P.p_W, o.Q.p_W})
            for (int d = 0; d < 3; ++d) points.push_back(shortNumber(p[d]));
        }
      }
      cablePoints[c].push_back(std::move(points));
    }
  }
  if (times.empty()) fail(syntax::DiagKind::ViewTrajectoryEmpty, csvPath);
  for (std::size_t b = 1; b < mech.bodies.size(); ++b) bodies[b - 1]["poses"] = std::move(poses[b]);
  data["bodies"] = std::move(bodies);
  data["times"] = std::move(times);
  json cables = json::array();
  for (std::size_t c = 0; c < mech.cables.size(); ++c)
    cables.push_back({{"name", mech.cables[c].name}, {"paths", std::move(cablePoints[c])}});
  data["cables"] = std::move(cables);
  json markers = json::array();  // frames that move with no one body: axes
  for (std::size_t k = 0; k < bushings.size(); ++k)
    markers.push_back({{"name", bushings[k]->name + " B (halfway)"}, {"size", shortNumber(0.2 * scene.scale)},
                       {"poses", std::move(halfway[k])}});
  data["markers"] = std::move(markers);
  data["plots"] = plots(*csv, units);
  if (lostPaths > 0) warn(syntax::DiagKind::ViewCablePathLost, static_cast<int>(lostPaths));

  std::string html = parts.page;
  auto put = [&](const std::string& mark, const std::string& text) {
    const std::size_t at = html.find(mark);
    if (at == std::string::npos) fail(syntax::DiagKind::InstallationIncomplete, "view.html's " + mark, codegen::defaultTemplateDir().string());
    html.replace(at, mark.size(), text);
  };
  put("/*@THREE@*/", scriptSafe(parts.threeJs));
  put("/*@ORBIT@*/", scriptSafe(parts.orbitJs));
  put("/*@SCENE@*/", scriptSafe(data.dump()));
  return html;
}

// The page of `csvPath`'s trajectory, written to `page`.
void writeView(const Options& opts, const std::string& csvPath, const Csv& csv, const std::string& page) {
  const auto loaded = load(opts);
  if (!loaded) std::exit(1);
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  writeOrFail(page, writeViewFrom(opts, *loaded, layout, &csv, csvPath));
  std::cerr << "wrote " << page << "\n";
}

}  // namespace

int view(const Options& opts) {
  if (opts.output.empty()) usageError(syntax::DiagKind::UsageMissing, "view", "an output file: `-o page.html`");
  (void)pageParts();  // refused before a run, not after
  if (opts.trajectory.empty()) {  // `capstan simulate` with the same options makes one
    Options run = opts;
    run.command = "simulate";
    run.output.clear();
    run.view = opts.output;
    return simulateWithView(run);
  }
  std::string error;
  const std::optional<Csv> csv = readCsv(opts.trajectory, error);
  if (!csv) failWith(syntax::DiagKind::ViewTrajectoryUnreadable, error);
  writeView(opts, opts.trajectory, *csv, opts.output);
  return 0;
}

int simulateWithView(const Options& opts) {
  // Without -o the rows go to a temporary file, read back and removed
  // before the page is written.
  (void)pageParts();
  Options run = opts;
  run.view.clear();
  const bool temporary = opts.output.empty() || opts.output == "-";
  if (temporary) run.output = (fs::temp_directory_path() / ("capstan-view-" + std::to_string(::getpid()) + ".csv")).string();
  const int status = simulate(run);
  std::string error;
  const std::optional<Csv> csv = fs::exists(run.output) ? readCsv(run.output, error) : std::nullopt;
  if (temporary) {
    std::error_code ec;
    fs::remove(run.output, ec);
  }
  // A run that stopped early is drawn up to where it stopped.
  if (csv && !csv->time.empty()) writeView(opts, temporary ? "the run's rows" : run.output, *csv, opts.view);
  return status;
}

}  // namespace capstan::cli
