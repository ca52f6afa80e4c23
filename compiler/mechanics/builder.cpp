// The mechanics builder: frame graph -> rigid groups (bodies) -> spanning tree
// -> cut joints, constraints, force elements, cables; then physical checks.
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "mechanics/assembly.hpp"
#include "mechanics/builtins.hpp"
#include "mechanics/mechanism.hpp"

namespace capstan::mechanics {
namespace {

using sema::FlatComponent;
using sema::FlatModel;
using sema::Value;
using syntax::DiagKind;
using syntax::DiagnosticEngine;

// Relative tolerances for the physical checks, on quantities of order one
// after scaling by the largest element involved.
constexpr double kSymmetryTolerance = 1e-12;
constexpr double kRotationTolerance = 1e-9;
constexpr double kQuaternionTolerance = 1e-9;
constexpr double kRigidLoopTolerance = 1e-9;
constexpr double kTriangleTolerance = 1e-12;

bool isRotation(const Mat3& R) {
  return R.allFinite() && (R.transpose() * R - Mat3::Identity()).norm() <= kRotationTolerance &&
         std::abs(R.determinant() - 1.0) <= kRotationTolerance;
}

class Builder {
 public:
  Builder(const FlatModel& model, DiagnosticEngine& diags)
      : model_(model), diags_(diags), assembly_(model, mech_, compileTimeValues(model)) {}

  std::optional<Mechanism> run() {
    findWorld();
    makeFrames();
    groupFrames();
    placeFrames();
    collectJoints();
    buildTree();
    mergeMassProperties();
    checkComponents();
    checkMass();
    collectConstraints();
    collectForces();
    collectCables();
    return std::move(mech_);
  }

 private:
  const FlatModel& model_;
  DiagnosticEngine& diags_;
  Mechanism mech_;
  Assembly<double> assembly_;  // the numbers of mech_'s topology, from compile-time values
  std::vector<int> groupOfFrame_;   // union-find parent, then group index
  std::vector<int> frameBody_;      // frame -> body index (after grouping)

  struct Edge {
    int to;
    Transform X;  // pose of `to` in the frame of the edge's source
    FixedStep step;
    bool hasStep;
  };
  std::vector<std::vector<Edge>> rigidEdges_;

  const FlatComponent& comp(int i) const { return model_.components[static_cast<std::size_t>(i)]; }
  // Component i's built-in kind (nothing for a user-defined component).
  std::optional<ComponentKind> kindOf(int i) const { return componentKind(comp(i).kind); }
  bool is(int i, ComponentKind kind) const { return kindOf(i) == kind; }

  const Value* param(int component, const std::string& name) const {
    const auto& params = comp(component).parameters;
    auto it = params.find(name);
    if (it == params.end() || it->second < 0) return nullptr;
    const auto& var = model_.variables[static_cast<std::size_t>(it->second)];
    return var.value ? &*var.value : nullptr;
  }
  // Where a parameter's value was written: the modifier's expression, or the
  // component's declaration when the value is the library default (pointing
  // into the standard library would not help the user). Built-in parameters
  // are declared in the standard library, so a binding in the declaration's
  // own file is its default.
  syntax::SourceRange paramRange(int component, const std::string& name) const {
    const auto& params = comp(component).parameters;
    auto it = params.find(name);
    if (it == params.end() || it->second < 0) return comp(component).range;
    const auto& var = model_.variables[static_cast<std::size_t>(it->second)];
    if (!var.binding || !var.binding->range.valid()) return comp(component).range;
    const syntax::SourceRange b = var.binding->range;
    return b.file == var.range.file ? comp(component).range : b;
  }
  // Parameter values (compile time), through the one assembly.
  double scalar(int component, const std::string& name, double fallback) const {
    return assembly_.scalar(component, name, fallback);
  }
  Vec3 vec3(int component, const std::string& name, const Vec3& fallback) const {
    return assembly_.vec3(component, name, fallback);
  }
  Mat3 mat3(int component, const std::string& name, const Mat3& fallback) const {
    return assembly_.mat3(component, name, fallback);
  }
  // A reference parameter: the referenced component paths.
  std::vector<std::string> refs(int component, const std::string& name) const {
    const Value* v = param(component, name);
    return v ? v->strings : std::vector<std::string>{};
  }

  void declaredHere(syntax::Diagnostic& d, int component) {
    const FlatComponent& c = comp(component);
    if (c.instantiatedAt.valid() && c.instantiatedAt.begin != c.range.begin)
      d.note(DiagKind::NoteDeclaredHere, c.instantiatedAt, c.path);
  }

  // --- frames and rigid groups -------------------------------------------

  void findWorld() {
    for (int i = 0; i < static_cast<int>(model_.components.size()); ++i) {
      if (!is(i, ComponentKind::World)) continue;
      if (mech_.worldComponent >= 0) {
        diags_.report(DiagKind::MultipleWorlds, comp(i).range)
            .note(DiagKind::NoteDeclaredHere, comp(mech_.worldComponent).range,
                  comp(mech_.worldComponent).path);
        continue;
      }
      mech_.worldComponent = i;
      mech_.gravity = vec3(i, "gravity", mech_.gravity);
    }
  }

  void makeFrames() {
    for (int i = 0; i < static_cast<int>(model_.components.size()); ++i) {
      const BuiltinInfo* info = builtinInfo(comp(i).kind);
      if (!info) continue;
      for (const char* connector : info->connectors) {
        mech_.frames.push_back({i, connector, -1, {}, {}});
      }
    }
    groupOfFrame_.resize(mech_.frames.size());
    std::iota(groupOfFrame_.begin(), groupOfFrame_.end(), 0);
    rigidEdges_.resize(mech_.frames.size());
  }

  int find(int f) {
    while (groupOfFrame_[static_cast<std::size_t>(f)] != f) {
      auto& p = groupOfFrame_[static_cast<std::size_t>(f)];
      p = groupOfFrame_[static_cast<std::size_t>(p)];
      f = p;
    }
    return f;
  }
  void addRigid(int a, int b, const Transform& X_ab, std::optional<FixedStep> step) {
    groupOfFrame_[static_cast<std::size_t>(find(a))] = find(b);
    rigidEdges_[static_cast<std::size_t>(a)].push_back({b, X_ab, step.value_or(FixedStep{}), step.has_value()});
    FixedStep back = step.value_or(FixedStep{});
    back.forward = !back.forward;
    rigidEdges_[static_cast<std::size_t>(b)].push_back({a, X_ab.inverse(), back, step.has_value()});
  }

  void groupFrames() {
    for (const auto& c : model_.connects) {
      const int a = mech_.findFrame(c.a.component, c.a.connector);
      const int b = mech_.findFrame(c.b.component, c.b.connector);
      if (a < 0 || b < 0) continue;  // sema reported it
      connected_.insert(a);
      connected_.insert(b);
      addRigid(a, b, Transform{}, std::nullopt);
    }
    for (int i = 0; i < static_cast<int>(model_.components.size()); ++i) {
      const std::optional<ComponentKind> kind = kindOf(i);
      if (kind != ComponentKind::FixedTranslation && kind != ComponentKind::FixedFrame && kind != ComponentKind::Weld)
        continue;
      // A weld marked `cut = true` closes a loop as a constraint (6 rows)
      // instead of merging its frames' bodies.
      if (kind == ComponentKind::Weld && scalar(i, "cut", 0.0) != 0.0) continue;
      Transform X_ab = assembly_.fixedStep(i);
      // A matrix that is not a rotation is reported by checkComponents();
      // placing frames with it would only add a confusing rigid-loop error.
      if (!isRotation(X_ab.R)) X_ab.R = Mat3::Identity();
      addRigid(mech_.findFrame(i, "frame_a"), mech_.findFrame(i, "frame_b"), X_ab, FixedStep{i, true});
    }
  }

  // Chooses each group's body frame and places every frame in it; checks
  // that rigid loops agree.
  void placeFrames() {
    const int n = static_cast<int>(mech_.frames.size());
    std::map<int, std::vector<int>> members;  // root -> frames, in frame order
    for (int f = 0; f < n; ++f) members[find(f)].push_back(f);

    // World first (even when implicit), then groups in order of their first frame.
    mech_.bodies.push_back(BodyInfo{});
    mech_.bodies[0].name = mech_.worldComponent >= 0 ? comp(mech_.worldComponent).path : "world";
    std::vector<std::pair<int, int>> order;  // (first frame, root)
    for (const auto& [root, frames] : members) order.emplace_back(frames.front(), root);
    std::sort(order.begin(), order.end());
    frameBody_.assign(static_cast<std::size_t>(n), -1);
    const int worldFrame = mech_.worldComponent >= 0 ? mech_.findFrame(mech_.worldComponent, "frame_b") : -1;
    for (const auto& [first, root] : order) {
      const auto& frames = members[root];
      const bool isWorld = worldFrame >= 0 && find(worldFrame) == root;
      int bodyIndex = 0;
      if (!isWorld) {
        bodyIndex = static_cast<int>(mech_.bodies.size());
        mech_.bodies.push_back(BodyInfo{});
      }
      BodyInfo& body = mech_.bodies[static_cast<std::size_t>(bodyIndex)];
      int reference = isWorld ? worldFrame : -1;
      for (int f : frames) {
        const int c = mech_.frames[static_cast<std::size_t>(f)].component;
        if (!isWorld && reference < 0 && is(c, ComponentKind::Body)) reference = f;
      }
      if (reference < 0) reference = frames.front();
      body.referenceFrame = reference;
      if (!isWorld) {
        const auto& rf = mech_.frames[static_cast<std::size_t>(reference)];
        body.name = is(rf.component, ComponentKind::Body) ? comp(rf.component).path
                                                          : comp(rf.component).path + "." + rf.connector;
      }
      placeGroup(reference, bodyIndex);
      for (int f : frames) {
        const int c = mech_.frames[static_cast<std::size_t>(f)].component;
        auto& list = body.components;
        if (std::find(list.begin(), list.end(), c) == list.end()) list.push_back(c);
        if (is(c, ComponentKind::Body)) {
          auto& bodies = body.bodyComponents;
          if (std::find(bodies.begin(), bodies.end(), c) == bodies.end()) bodies.push_back(c);
        }
      }
    }
  }

  void placeGroup(int reference, int bodyIndex) {
    std::vector<int> stack{reference};
    std::vector<char> placed(mech_.frames.size(), 0);
    placed[static_cast<std::size_t>(reference)] = 1;
    mech_.frames[static_cast<std::size_t>(reference)].body = bodyIndex;
    frameBody_[static_cast<std::size_t>(reference)] = bodyIndex;
    bool reported = false;
    while (!stack.empty()) {
      const int f = stack.back();
      stack.pop_back();
      const FrameInfo& from = mech_.frames[static_cast<std::size_t>(f)];
      const Transform X_BFrom = from.X_BF;
      const std::vector<FixedStep> pathFrom = from.path;
      for (const Edge& e : rigidEdges_[static_cast<std::size_t>(f)]) {
        FrameInfo& to = mech_.frames[static_cast<std::size_t>(e.to)];
        const Transform X_BTo = X_BFrom * e.X;
        if (placed[static_cast<std::size_t>(e.to)]) {
          const double dp = (to.X_BF.p - X_BTo.p).norm();
          const double dR = Eigen::AngleAxisd(to.X_BF.R.transpose() * X_BTo.R).angle();
          const double scale = std::max(1.0, std::max(to.X_BF.p.norm(), X_BTo.p.norm()));
          if (!reported && (dp > kRigidLoopTolerance * scale || dR > kRigidLoopTolerance)) {
            reported = true;
            diags_.report(DiagKind::RigidLoopInconsistent, comp(to.component).range,
                          frameName(e.to), frameName(f), dp, dR);
          }
          continue;
        }
        placed[static_cast<std::size_t>(e.to)] = 1;
        to.X_BF = X_BTo;
        to.path = pathFrom;
        if (e.hasStep) to.path.push_back(e.step);
        to.body = bodyIndex;
        frameBody_[static_cast<std::size_t>(e.to)] = bodyIndex;
        stack.push_back(e.to);
      }
    }
  }

  std::string frameName(int f) const {
    const FrameInfo& fr = mech_.frames[static_cast<std::size_t>(f)];
    return comp(fr.component).path + "." + fr.connector;
  }
  int bodyOfComponent(int component) const {
    const int f = mech_.findFrame(component, "frame_a");
    return f >= 0 ? mech_.frames[static_cast<std::size_t>(f)].body : -1;
  }

  // --- joints and the spanning tree ---------------------------------------

  std::vector<JointInfo> candidates_;
  std::set<int> connected_;

  void collectJoints() {
    for (int i = 0; i < static_cast<int>(model_.components.size()); ++i) {
      const auto type = jointType(comp(i).kind);
      // Welds were merged rigidly, unless marked as cuts.
      if (!type || (*type == JointType::Weld && scalar(i, "cut", 0.0) == 0.0)) continue;
      JointInfo j;
      j.component = i;
      j.type = *type;
      j.frameA = mech_.findFrame(i, "frame_a");
      j.frameB = mech_.findFrame(i, "frame_b");
      j.nq = jointNq(j.type);
      j.nu = jointNu(j.type);
      j.cut = scalar(i, "cut", 0.0) != 0.0;
      const int a = frameBody_[static_cast<std::size_t>(j.frameA)];
      const int b = frameBody_[static_cast<std::size_t>(j.frameB)];
      if (a == b && connected_.count(j.frameA) && connected_.count(j.frameB)) {
        auto& d = diags_.report(DiagKind::JointSelfLoop, comp(i).range,
                                comp(i).path, mech_.bodies[static_cast<std::size_t>(a)].name);
        declaredHere(d, i);
        continue;
      }
      candidates_.push_back(j);
    }
  }

  // Depth-first from world, children in declaration order, so each subtree's
  // coordinates are contiguous. Joints marked `cut = true` are only used when
  // nothing else reaches their bodies. Iterative: chains may be long.
  void buildTree() {
    const std::size_t nb = mech_.bodies.size();
    std::vector<std::vector<int>> incident(nb);
    for (int k = 0; k < static_cast<int>(candidates_.size()); ++k) {
      const JointInfo& j = candidates_[static_cast<std::size_t>(k)];
      incident[static_cast<std::size_t>(frameBody_[static_cast<std::size_t>(j.frameA)])].push_back(k);
      incident[static_cast<std::size_t>(frameBody_[static_cast<std::size_t>(j.frameB)])].push_back(k);
    }
    std::vector<char> reached(nb, 0), used(candidates_.size(), 0);
    std::vector<int> treeOrder;  // candidate indices
    auto explore = [&](bool allowCut) {
      for (int start = 0; start < static_cast<int>(nb); ++start) {
        if (!reached[static_cast<std::size_t>(start)]) continue;
        std::vector<std::pair<int, std::size_t>> stack{{start, 0}};
        while (!stack.empty()) {
          auto& [body, next] = stack.back();
          const auto& inc = incident[static_cast<std::size_t>(body)];
          if (next >= inc.size()) {
            stack.pop_back();
            continue;
          }
          const int k = inc[next++];
          JointInfo& j = candidates_[static_cast<std::size_t>(k)];
          if (used[static_cast<std::size_t>(k)] || (j.cut && !allowCut)) continue;
          const int a = frameBody_[static_cast<std::size_t>(j.frameA)];
          const int b = frameBody_[static_cast<std::size_t>(j.frameB)];
          const int other = a == body ? b : a;
          if (reached[static_cast<std::size_t>(other)]) continue;
          used[static_cast<std::size_t>(k)] = 1;
          reached[static_cast<std::size_t>(other)] = 1;
          j.parentBody = body;
          j.childBody = other;
          j.reversed = (b == body);
          if (j.cut) {
            diags_.report(DiagKind::CutJointInTree, comp(j.component).range, comp(j.component).path);
            j.cut = false;
          }
          treeOrder.push_back(k);
          stack.emplace_back(other, 0);
        }
      }
    };
    reached[0] = 1;
    explore(false);
    explore(true);

    for (int k : treeOrder) {
      JointInfo j = candidates_[static_cast<std::size_t>(k)];
      j.qIndex = mech_.nq;
      j.uIndex = mech_.nu;
      mech_.nq += j.nq;
      mech_.nu += j.nu;
      mech_.bodies[static_cast<std::size_t>(j.childBody)].parentJoint = static_cast<int>(mech_.joints.size());
      mech_.joints.push_back(j);
    }
    // Joints between two reached bodies that the tree did not use close loops.
    for (int k = 0; k < static_cast<int>(candidates_.size()); ++k) {
      JointInfo j = candidates_[static_cast<std::size_t>(k)];
      const int a = frameBody_[static_cast<std::size_t>(j.frameA)];
      const int b = frameBody_[static_cast<std::size_t>(j.frameB)];
      if (used[static_cast<std::size_t>(k)] || !reached[static_cast<std::size_t>(a)] ||
          !reached[static_cast<std::size_t>(b)]) {
        continue;
      }
      j.cut = true;
      j.parentBody = a;
      j.childBody = b;
      j.nq = j.nu = 0;
      if (j.type == JointType::Free) {
        const BodyInfo& child = mech_.bodies[static_cast<std::size_t>(b)];
        const int other = child.parentJoint >= 0 ? mech_.joints[static_cast<std::size_t>(child.parentJoint)].component : -1;
        auto& d = diags_.report(DiagKind::TwoParents, comp(j.component).range,
                                child.name, other >= 0 ? comp(other).path : std::string("world"), comp(j.component).path);
        if (other >= 0) d.note(DiagKind::NoteOtherParent, comp(other).range, comp(other).path);
        continue;
      }
      mech_.joints.push_back(j);
    }
    // Bodies the tree never reached, clustered through the joints between
    // them: one error per cluster, at its first component.
    std::vector<int> cluster(nb);
    std::iota(cluster.begin(), cluster.end(), 0);
    auto root = [&](int b) {
      while (cluster[static_cast<std::size_t>(b)] != b) b = cluster[static_cast<std::size_t>(b)];
      return b;
    };
    for (const JointInfo& j : candidates_) {
      const int a = frameBody_[static_cast<std::size_t>(j.frameA)];
      const int b = frameBody_[static_cast<std::size_t>(j.frameB)];
      if (!reached[static_cast<std::size_t>(a)] && !reached[static_cast<std::size_t>(b)])
        cluster[static_cast<std::size_t>(root(a))] = root(b);
    }
    std::vector<char> reportedCluster(nb, 0);
    for (int c = 0; c < static_cast<int>(model_.components.size()); ++c) {
      const BuiltinInfo* info = builtinInfo(comp(c).kind);
      if (!info || info->connectors.empty() || info->id == ComponentKind::World) continue;
      bool any = false;
      for (const char* conn : info->connectors) any = any || connected_.count(mech_.findFrame(c, conn));
      if (!any) {
        auto& d = diags_.report(DiagKind::UnconnectedComponent, comp(c).range,
                                info->noun, comp(c).path, info->connectors.front());
        declaredHere(d, c);
        continue;
      }
      for (const char* conn : info->connectors) {
        const int frame = mech_.findFrame(c, conn);
        const int body = frameBody_[static_cast<std::size_t>(frame)];
        if (reached[static_cast<std::size_t>(body)]) continue;
        const int r = root(body);
        if (reportedCluster[static_cast<std::size_t>(r)]) continue;
        reportedCluster[static_cast<std::size_t>(r)] = 1;
        // A connector left dangling (a cable's end, a sensor's frame) while
        // the component's others are connected: the mistake is the missing
        // connect(), not a missing joint.
        auto& d = connected_.count(frame)
                      ? diags_.report(DiagKind::NotConnectedToWorld, comp(c).range, info->noun, comp(c).path)
                      : diags_.report(DiagKind::ConnectorNotConnected, comp(c).range, info->noun, comp(c).path,
                                      conn);
        declaredHere(d, c);
      }
    }
  }

  // --- mass properties ------------------------------------------------------

  void mergeMassProperties() {
    for (std::size_t b = 0; b < mech_.bodies.size(); ++b) {
      const capstan::Body<double> merged = assembly_.massProperties(static_cast<int>(b));
      BodyInfo& body = mech_.bodies[b];
      body.mass = merged.mass;
      body.p_BoBcm_B = merged.p_BoBcm_B;
      body.I_Bcm_B = merged.I_Bcm_B;
    }
  }

  // --- per-component physical checks ---------------------------------------

  void checkFinite(int c) {
    for (const auto& [name, var] : comp(c).parameters) {
      if (var < 0) continue;
      const auto& v = model_.variables[static_cast<std::size_t>(var)];
      if (!v.value) continue;
      for (double x : v.value->numbers) {
        if (!std::isfinite(x)) {
          diags_.report(DiagKind::NonFiniteParameter, paramRange(c, name), v.path, x);
          break;
        }
      }
    }
  }

  void checkPositive(int c, const std::string& name) {
    const Value* v = param(c, name);
    if (!v) return;
    for (double x : v->numbers) {
      if (std::isfinite(x) && x <= 0.0) {
        diags_.report(DiagKind::NonPositiveSize, paramRange(c, name), name, comp(c).path, x);
        return;
      }
    }
  }

  void checkInertia(int c) {
    const Mat3 I = mat3(c, "inertia", Mat3::Zero());
    if (!I.allFinite()) return;
    const double scale = std::max(I.cwiseAbs().maxCoeff(), 1e-300);
    for (int r = 0; r < 3; ++r) {
      for (int k = r + 1; k < 3; ++k) {
        if (std::abs(I(r, k) - I(k, r)) > kSymmetryTolerance * scale) {
          diags_.report(DiagKind::InertiaNotSymmetric, paramRange(c, "inertia"),
                        comp(c).path, std::to_string(r + 1) + "," + std::to_string(k + 1), I(r, k), std::to_string(k + 1) + "," + std::to_string(r + 1), I(k, r));
          return;
        }
      }
    }
    const double mass = scalar(c, "mass", 0.0);
    if (mass == 0.0 && I.isZero(0.0)) return;  // a massless frame
    const Eigen::Vector3d moments = Eigen::SelfAdjointEigenSolver<Mat3>(I, Eigen::EigenvaluesOnly).eigenvalues();
    if (moments.minCoeff() <= 0.0) {
      diags_.report(DiagKind::InertiaNotPositiveDefinite, paramRange(c, "inertia"),
                    comp(c).path, moments.minCoeff());
      return;
    }
    const double tol = kTriangleTolerance * moments.sum();
    if (moments(0) + moments(1) < moments(2) - tol) {
      diags_.report(DiagKind::InertiaTriangleInequality, paramRange(c, "inertia"),
                    comp(c).path, moments(0), moments(1), moments(2));
    }
  }

  void checkQuaternion(int c) {
    const Value* v = param(c, "q0");
    if (!v || v->numbers.size() < 4) return;
    const Eigen::Vector4d q(v->numbers[0], v->numbers[1], v->numbers[2], v->numbers[3]);
    if (!q.allFinite()) return;
    if (q.norm() == 0.0) {
      diags_.report(DiagKind::QuaternionZero, paramRange(c, "q0"), comp(c).path);
    } else if (std::abs(q.norm() - 1.0) > kQuaternionTolerance) {
      diags_.report(DiagKind::QuaternionNotUnit, paramRange(c, "q0"), comp(c).path, q.norm());
    }
  }

  void checkAxis(int c, const std::string& name) {
    const Value* v = param(c, name);
    if (v && v->numbers.size() == 3 && vec3(c, name, Vec3::Ones()).norm() == 0.0)
      diags_.report(DiagKind::JointAxisZero, paramRange(c, name), name, comp(c).path);
  }

  void checkJoint(int c, JointType type) {
    switch (jointAxes(type)) {
      case JointAxes::None: break;
      case JointAxes::Axis: checkAxis(c, "axis"); break;
      case JointAxes::Universal: {
        checkAxis(c, "axis_a");
        checkAxis(c, "axis_b");
        const Vec3 a = vec3(c, "axis_a", Vec3::UnitX()), b = vec3(c, "axis_b", Vec3::UnitY());
        if (a.norm() > 0 && b.norm() > 0 && a.normalized().cross(b.normalized()).norm() < kRotationTolerance)
          diags_.report(DiagKind::UniversalAxesParallel, comp(c).range, comp(c).path);
        break;
      }
    }
    if (hasQuaternion(type)) checkQuaternion(c);
  }

  // Every parameter a cable surface is built from is positive.
  void checkSurface(int c, ComponentKind kind) {
    struct Read {
      Builder* builder;
      int c;
      int scalar(const char* name) { return builder->checkPositive(c, name), 0; }
      int vec3(const char* name) { return builder->checkPositive(c, name), 0; }
    } read{this, c};
    visitSurface(kind, [&](auto traits) { decltype(traits)::arguments(read); });
  }

  // A visual's shape is one `capstan view` draws (kVisualShapes, builtins.hpp);
  // a mesh names its file; the other shapes have a positive size.
  void checkVisual(int c) {
    const std::vector<std::string> shape = refs(c, "shape");
    const std::string name = shape.empty() ? "box" : shape.front();
    if (std::find(std::begin(kVisualShapes), std::end(kVisualShapes), name) == std::end(kVisualShapes)) {
      diags_.report(DiagKind::VisualShapeUnknown, paramRange(c, "shape"), comp(c).path, name);
      return;
    }
    if (name != "mesh") {
      checkPositive(c, "size");
    } else {
      const std::vector<std::string> file = refs(c, "file");
      if (file.empty() || file.front().empty()) diags_.report(DiagKind::VisualMeshWithoutFile, comp(c).range, comp(c).path);
      checkPositive(c, "scale");
    }
  }

  // One case per component kind: a new kind does not compile until it has one.
  void checkComponents() {
    for (int c = 0; c < static_cast<int>(model_.components.size()); ++c) {
      checkFinite(c);
      const std::optional<ComponentKind> kind = kindOf(c);
      if (!kind) continue;
      switch (*kind) {
        case ComponentKind::Body: checkInertia(c); break;
        case ComponentKind::Sphere:
        case ComponentKind::Cylinder:
        case ComponentKind::Ellipsoid: checkSurface(c, *kind); break;
        case ComponentKind::HuntCrossleyContact:
          checkPositive(c, "transitionVelocity");  // friction divides by it
          break;
        case ComponentKind::Torus: {
          checkSurface(c, *kind);
          const double R = scalar(c, "majorRadius", 1.0), r = scalar(c, "minorRadius", 0.0);
          if (r > 0.0 && R > 0.0 && r >= R)
            diags_.report(DiagKind::TorusSelfIntersecting, comp(c).range, comp(c).path, r, R);
          break;
        }
#define CAPSTAN_JOINT_CASE(Name) case ComponentKind::Name:
        CAPSTAN_JOINT_TYPES(CAPSTAN_JOINT_CASE)
#undef CAPSTAN_JOINT_CASE
          checkJoint(c, *builtinInfo(*kind).joint);
          break;
        case ComponentKind::Visual: checkVisual(c); break;
        case ComponentKind::FixedFrame: {
          const Mat3 R = mat3(c, "R", Mat3::Identity());
          if (!R.allFinite()) break;
          if (!isRotation(R))
            diags_.report(DiagKind::NotARotation, paramRange(c, "R"), comp(c).path,
                          (R.transpose() * R - Mat3::Identity()).norm(), R.determinant());
          break;
        }
        // Nothing of their own to check here (their references and frames
        // are checked where they are collected).
        case ComponentKind::World:
        case ComponentKind::FixedTranslation:
        case ComponentKind::HalfSpace:
        case ComponentKind::SphereOnSphereContact:
        case ComponentKind::Bushing:
        case ComponentKind::Spring:
        case ComponentKind::ViaPoint:
        case ComponentKind::Wrap:
        case ComponentKind::Cable:
        case ComponentKind::CableSpring:
        case ComponentKind::CableActuator:
        case ComponentKind::Coupler: break;
      }
    }
  }

  // A tree joint with dofs must move some mass; a zero-mass leaf body is suspicious.
  void checkMass() {
    const std::size_t nb = mech_.bodies.size();
    std::vector<double> subtreeMass(nb, 0.0);
    std::vector<double> subtreeInertia(nb, 0.0);
    std::vector<int> children(nb, 0);
    for (std::size_t b = 0; b < nb; ++b) {
      subtreeMass[b] = mech_.bodies[b].mass;
      subtreeInertia[b] = mech_.bodies[b].I_Bcm_B.trace();
    }
    const int ntree = mech_.treeJointCount();
    for (int k = ntree - 1; k >= 0; --k) {  // children after parents: accumulate backwards
      const JointInfo& j = mech_.joints[static_cast<std::size_t>(k)];
      subtreeMass[static_cast<std::size_t>(j.parentBody)] += subtreeMass[static_cast<std::size_t>(j.childBody)];
      subtreeInertia[static_cast<std::size_t>(j.parentBody)] += subtreeInertia[static_cast<std::size_t>(j.childBody)];
      ++children[static_cast<std::size_t>(j.parentBody)];
    }
    for (int k = 0; k < ntree; ++k) {
      const JointInfo& j = mech_.joints[static_cast<std::size_t>(k)];
      const auto child = static_cast<std::size_t>(j.childBody);
      if (j.nu > 0 && subtreeMass[child] <= 0.0 && subtreeInertia[child] <= 0.0) {
        auto& d = diags_.report(DiagKind::DofWithoutMass, comp(j.component).range, comp(j.component).path);
        declaredHere(d, j.component);
      }
    }
    for (std::size_t b = 1; b < nb; ++b) {
      if (children[b] > 0 || subtreeMass[b] <= 0.0) continue;
      for (int c : mech_.bodies[b].bodyComponents) {
        if (scalar(c, "mass", 1.0) == 0.0) {
          auto& d = diags_.report(DiagKind::MasslessBody, comp(c).range, comp(c).path);
          declaredHere(d, c);
        }
      }
    }
  }

  // --- constraints, forces, cables -------------------------------------------

  // Resolves a reference parameter to a component index of one of `kinds`;
  // sema has already reported references that name no such component.
  int resolve(const std::string& path, const std::vector<ComponentKind>& kinds) const {
    const int target = model_.findComponent(path);
    if (target < 0) return -1;
    for (ComponentKind k : kinds)
      if (is(target, k)) return target;
    return -1;
  }

  void collectConstraints() {
    for (const JointInfo& j : mech_.joints) {
      if (!j.cut) continue;
      ConstraintInfo ci;
      ci.kind = ConstraintKind::LoopJoint;
      ci.name = comp(j.component).path;
      ci.component = j.component;
      ci.joint = static_cast<int>(&j - mech_.joints.data());
      ci.holonomic = 6 - jointNu(j.type);
      mech_.constraints.push_back(ci);
    }
    for (int c = 0; c < static_cast<int>(model_.components.size()); ++c) {
      if (!is(c, ComponentKind::SphereOnSphereContact)) continue;
      ConstraintInfo ci;
      ci.kind = ConstraintKind::SphereOnSphere;
      ci.name = comp(c).path;
      ci.component = c;
      const auto f = refs(c, "sphereF"), b = refs(c, "sphereB");
      if (f.size() != 1 || b.size() != 1) continue;  // sema reported it
      ci.sphereF = resolve(f[0], {ComponentKind::Sphere});
      ci.sphereB = resolve(b[0], {ComponentKind::Sphere});
      if (ci.sphereF < 0 || ci.sphereB < 0) continue;
      ci.bodyF = bodyOfComponent(ci.sphereF);
      ci.bodyB = bodyOfComponent(ci.sphereB);
      if (ci.bodyF >= 0 && ci.bodyF == ci.bodyB) {
        diags_.report(DiagKind::ContactSameBody, comp(c).range,
                      comp(c).path, mech_.bodies[static_cast<std::size_t>(ci.bodyF)].name);
        continue;
      }
      ci.holonomic = 1;
      ci.nonholonomic = scalar(c, "rolling", 0.0) != 0.0 ? 2 : 0;
      mech_.constraints.push_back(ci);
    }
    // Couplers: two different tree joints of one coordinate each.
    for (int c = 0; c < static_cast<int>(model_.components.size()); ++c) {
      if (!is(c, ComponentKind::Coupler)) continue;
      const auto f = refs(c, "follower"), l = refs(c, "leader");
      if (f.size() != 1 || l.size() != 1) continue;  // sema reported it
      auto jointOf = [&](const std::string& path) {
        const int target = resolve(path, {ComponentKind::Revolute, ComponentKind::Prismatic});
        for (const JointInfo& j : mech_.joints)
          if (target >= 0 && j.component == target) return static_cast<int>(&j - mech_.joints.data());
        return -1;
      };
      ConstraintInfo ci;
      ci.kind = ConstraintKind::Coupler;
      ci.name = comp(c).path;
      ci.component = c;
      ci.joint = jointOf(f[0]);
      ci.leader = jointOf(l[0]);
      if (ci.joint < 0 || ci.leader < 0) continue;  // sema reported a wrong kind
      if (ci.joint == ci.leader) {
        diags_.report(DiagKind::CouplerSameJoint, comp(c).range, comp(c).path, f[0]);
        continue;
      }
      bool cut = false;
      for (int j : {ci.joint, ci.leader}) {
        const JointInfo& ji = mech_.joints[static_cast<std::size_t>(j)];
        if (ji.cut && !cut)
          diags_.report(DiagKind::CouplerOnCutJoint, comp(c).range, comp(c).path, comp(ji.component).path);
        cut = cut || ji.cut;
      }
      if (cut) continue;
      ci.holonomic = 1;
      mech_.constraints.push_back(ci);
    }
  }

  void collectForces() {
    for (int c = 0; c < static_cast<int>(model_.components.size()); ++c) {
      const std::optional<ComponentKind> kind = kindOf(c);
      if (kind != ComponentKind::Spring && kind != ComponentKind::Bushing && kind != ComponentKind::HuntCrossleyContact)
        continue;
      ForceInfo fi;
      fi.kind = kind == ComponentKind::Spring    ? ForceKind::Spring
                : kind == ComponentKind::Bushing ? ForceKind::Bushing
                                                 : ForceKind::HuntCrossley;
      fi.name = comp(c).path;
      fi.component = c;
      if (fi.kind == ForceKind::HuntCrossley) {
        // Between the frames of its two surfaces.
        const auto f = refs(c, "surfaceF"), b = refs(c, "sphereB");
        if (f.size() != 1 || b.size() != 1) continue;  // sema reported it
        fi.surfaceA = resolve(f[0], {ComponentKind::Sphere, ComponentKind::HalfSpace});
        fi.surfaceB = resolve(b[0], {ComponentKind::Sphere});
        if (fi.surfaceA < 0 || fi.surfaceB < 0) continue;
        fi.frameA = mech_.findFrame(fi.surfaceA, "frame_a");
        fi.frameB = mech_.findFrame(fi.surfaceB, "frame_a");
      } else {
        fi.frameA = mech_.findFrame(c, "frame_a");
        fi.frameB = mech_.findFrame(c, "frame_b");
      }
      const int a = mech_.frames[static_cast<std::size_t>(fi.frameA)].body;
      const int b = mech_.frames[static_cast<std::size_t>(fi.frameB)].body;
      if (a >= 0 && a == b && connected_.count(fi.frameA) && connected_.count(fi.frameB)) {
        diags_.report(DiagKind::ForceElementSameBody, comp(c).range,
                      builtinInfo(*kind).noun, comp(c).path, mech_.bodies[static_cast<std::size_t>(a)].name);
        continue;
      }
      mech_.forces.push_back(fi);
    }
    for (int k = 0; k < static_cast<int>(model_.forceLaws.size()); ++k) {
      const auto& law = model_.forceLaws[static_cast<std::size_t>(k)];
      if (law.component < 0 || !jointType(comp(law.component).kind)) continue;
      const auto it = std::find_if(mech_.joints.begin(), mech_.joints.end(),
                                   [&](const JointInfo& j) { return j.component == law.component; });
      if (it != mech_.joints.end() && it->cut) {
        diags_.report(DiagKind::ForceOnCutJoint, law.range, comp(law.component).path + "." + law.input, comp(law.component).path);
        continue;
      }
      ForceInfo fi;
      fi.kind = ForceKind::JointForceLaw;
      fi.name = comp(law.component).path + "." + law.input;
      fi.component = law.component;
      fi.forceLaw = k;
      mech_.forces.push_back(fi);
    }
  }

  void collectCables() {
    std::map<int, int> cableIndex;
    for (int c = 0; c < static_cast<int>(model_.components.size()); ++c) {
      if (!is(c, ComponentKind::Cable)) continue;
      CableInfo cable;
      cable.name = comp(c).path;
      cable.component = c;
      cable.origin = mech_.findFrame(c, "frame_a");
      cable.termination = mech_.findFrame(c, "frame_b");
      for (const std::string& path : refs(c, "path")) {
        const int e = resolve(path, {ComponentKind::ViaPoint, ComponentKind::Wrap});
        if (e < 0) continue;
        CableElement el;
        el.component = e;
        el.isWrap = is(e, ComponentKind::Wrap);
        if (el.isWrap) {
          const auto surface = refs(e, "surface");
          if (surface.size() != 1) continue;
          el.surface = resolve(surface[0], surfaceKinds());
          if (el.surface < 0) continue;
          el.body = bodyOfComponent(el.surface);
        } else {
          el.body = bodyOfComponent(e);
        }
        cable.path.push_back(el);
      }
      cableIndex[c] = static_cast<int>(mech_.cables.size());
      mech_.cables.push_back(cable);
    }
    for (int c = 0; c < static_cast<int>(model_.components.size()); ++c) {
      const std::optional<ComponentKind> kind = kindOf(c);
      if (kind != ComponentKind::CableSpring && kind != ComponentKind::CableActuator) continue;
      const auto cable = refs(c, "cable");
      if (cable.size() != 1) continue;
      const int target = resolve(cable[0], {ComponentKind::Cable});
      if (target < 0) continue;
      ForceInfo fi;
      fi.kind = kind == ComponentKind::CableSpring ? ForceKind::CableSpring : ForceKind::CableActuator;
      fi.name = comp(c).path;
      fi.component = c;
      fi.cable = cableIndex[target];
      mech_.forces.push_back(fi);
    }
  }
};

}  // namespace

int Mechanism::treeJointCount() const {
  return static_cast<int>(std::count_if(joints.begin(), joints.end(), [](const JointInfo& j) { return !j.cut; }));
}
int Mechanism::holonomicRows() const {
  int n = 0;
  for (const auto& c : constraints) n += c.holonomic;
  return n;
}
int Mechanism::nonholonomicRows() const {
  int n = 0;
  for (const auto& c : constraints) n += c.nonholonomic;
  return n;
}
int Mechanism::findFrame(int component, const std::string& connector) const {
  // Frames are created component by component, so a binary search on the
  // component finds its (at most two) frames.
  auto it = std::lower_bound(frames.begin(), frames.end(), component,
                             [](const FrameInfo& f, int c) { return f.component < c; });
  for (; it != frames.end() && it->component == component; ++it)
    if (it->connector == connector) return static_cast<int>(it - frames.begin());
  return -1;
}

std::optional<Mechanism> build(const sema::FlatModel& model, syntax::DiagnosticEngine& diags) {
  return Builder(model, diags).run();
}

}  // namespace capstan::mechanics
