// From (FlatModel, Mechanism, ModelLayout) to a runtime capstan::Mechanism
// over any Scalar, plus the generalized forces of the force laws, the initial
// state and the outputs. With Scalar = double (the parameter values) this is
// the reference interpreter's model; with Scalar = symbolic::Expr (runtime
// parameters as symbols `params.NAME`, folded values as constants) it is what
// the tracer runs the runtime algorithms on. One function, two uses.
#pragma once

#include <capstan/constraints.hpp>
#include <capstan/force_elements.hpp>
#include <capstan/kinematics.hpp>
#include <capstan/mechanism.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "codegen/flat_eval.hpp"
#include "codegen/layout.hpp"
#include "mechanics/assembly.hpp"
#include "mechanics/builtins.hpp"

namespace capstan::codegen {

// Where the leaves of flat expressions come from.
template <class Scalar>
struct Sources {
  // Element `element` of runtime parameter `parameter` (index into layout.parameters).
  std::function<Scalar(int parameter, int element)> parameter;
  std::function<Scalar(int input)> input;
  VectorX<Scalar> q, u;  // (nq), (nu): the joint coordinates force laws and outputs read
  Scalar time = Scalar(0.0);
  // External C++ functions (FlatTranslator::External): the interpreter's
  // compiled functions; empty for the tracer (opaque call nodes).
  typename FlatTranslator<Scalar>::External external;
};

template <class Scalar>
class Environment {
 public:
  Environment(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
              Sources<Scalar> sources)
      : model_(model),
        mech_(mech),
        layout_(layout),
        sources_(std::move(sources)),
        translate_(model, [this](int v, int e) { return leaf(v, e); }, sources_.time, sources_.external),
        assembly_(model, mech, [this](int c, const std::string& name) { return componentValues(c, name); }) {}

  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  const ModelLayout& layout() const { return layout_; }

  // The state that force laws and outputs read.
  void setState(const Scalar& time, const VectorX<Scalar>& q, const VectorX<Scalar>& u) {
    sources_.time = time;
    sources_.q = q;
    sources_.u = u;
    kinematics_.reset();
  }

  // The mechanism whose kinematics give frame quantities (`tip.frame_b.r`):
  // the tracer's own (its joint axes turned), so that force laws share the
  // dynamics' subexpressions. Without one, the environment builds its own.
  void useMechanism(const Mechanism<Scalar>* mechanism) {
    external_ = mechanism;
    kinematics_.reset();
  }

  // The motion of frame F (a connector frame, mechanics::Mechanism::frames)
  // in World at the current state: p_WoFo_W = p_WoBo_W + R_WB p_BoFo_B,
  // R_WF = R_WB R_BF, w_WF_W = w_WB_W, v_WFo_W = v_WBo_W + w_WB_W x
  // (R_WB p_BoFo_B), with B the body F is fixed to and X_BF rebuilt from the
  // fixed components between them (framePose).
  FrameMotion<Scalar> frameMotion(int frame) {
    const mechanics::FrameInfo& fi = mech_.frames.at(static_cast<std::size_t>(frame));
    const int body = fi.body <= 0 ? -1 : layout_.runtimeBody.at(static_cast<std::size_t>(fi.body));
    Transform<Scalar> X_WB;
    Vec6<Scalar> V_WB = Vec6<Scalar>::Zero();
    if (body >= 0) {
      const Data<Scalar>& data = kinematics();
      X_WB = data.X_WB.at(static_cast<std::size_t>(body));
      V_WB = data.V_WB.at(static_cast<std::size_t>(body));
    }
    const Transform<Scalar> X_BF = framePose(frame);
    const Vec3<Scalar> p_BoFo_W = X_WB.R * X_BF.p;
    FrameMotion<Scalar> m;
    m.R_WF = X_WB.R * X_BF.R;
    m.p_WF = X_WB.p + p_BoFo_W;
    m.w_WF = V_WB.template head<3>();
    m.v_WF = V_WB.template tail<3>() + cross(m.w_WF, p_BoFo_W);
    return m;
  }

  // p_BoFo_W: the origin of frame F from the origin of the body B it is
  // fixed to, in World (the arm that moves a force at Fo to Bo); zero
  // offset from World's origin for a frame fixed in World.
  Vec3<Scalar> frameOffset(int frame) {
    const mechanics::FrameInfo& fi = mech_.frames.at(static_cast<std::size_t>(frame));
    const int body = fi.body <= 0 ? -1 : layout_.runtimeBody.at(static_cast<std::size_t>(fi.body));
    const Transform<Scalar> X_BF = framePose(frame);
    if (body < 0) return X_BF.p;
    return kinematics().X_WB.at(static_cast<std::size_t>(body)).R * X_BF.p;
  }

  // Element `element` of a frame quantity (frameMotion), in World.
  Scalar frameQuantity(const FrameQuantityRef& ref, int element) {
    const FrameMotion<Scalar> m = frameMotion(ref.frame);
    const auto k = static_cast<Eigen::Index>(element);
    switch (ref.quantity) {
      case FrameQuantity::r: return m.p_WF[k];
      case FrameQuantity::R: return m.R_WF(k / 3, k % 3);
      case FrameQuantity::w: return m.w_WF[k];
      case FrameQuantity::v: return m.v_WF[k];
    }
    throw std::logic_error("frameQuantity: unknown quantity");
  }

  // A force element's forces at the current state (its parameters are the
  // component's: SPEC §4).
  SpringForces<Scalar> springForces(const ForceElementLayout& e) {
    return spring(frameMotion(e.frameA), frameMotion(e.frameC), scalarParameter(e.component, "stiffness"),
                  scalarParameter(e.component, "damping"), scalarParameter(e.component, "length0"));
  }
  BushingForces<Scalar> bushingForces(const ForceElementLayout& e) {
    BushingConstants<Scalar> k;
    k.k012 = vectorParameter(e.component, "torqueStiffness");
    k.d012 = vectorParameter(e.component, "torqueDamping");
    k.kxyz = vectorParameter(e.component, "forceStiffness");
    k.dxyz = vectorParameter(e.component, "forceDamping");
    return bushing(frameMotion(e.frameA), frameMotion(e.frameC), k);
  }

  HuntCrossleyForces<Scalar> huntCrossleyForces(const ForceElementLayout& e) {
    HuntCrossleyConstants<Scalar> k;
    k.halfSpace = mechanics::componentKind(model_.components.at(static_cast<std::size_t>(e.surfaceA)).kind) ==
                  mechanics::ComponentKind::HalfSpace;
    if (!k.halfSpace) k.radiusF = scalarParameter(e.surfaceA, "radius");
    k.radiusB = scalarParameter(e.surfaceC, "radius");
    k.stiffness = scalarParameter(e.component, "stiffness");
    k.dissipation = scalarParameter(e.component, "dissipation");
    k.staticFriction = scalarParameter(e.component, "staticFriction");
    k.dynamicFriction = scalarParameter(e.component, "dynamicFriction");
    k.viscousFriction = scalarParameter(e.component, "viscousFriction");
    k.transitionVelocity = scalarParameter(e.component, "transitionVelocity");
    return huntCrossley(frameMotion(e.frameA), frameMotion(e.frameC), k);
  }
  // The spatial forces element `e` applies at its frames' origins (F_Ao_W,
  // F_Co_W) and its elastic energy; `check` (double only) runs on a
  // bushing first.
  struct ElementForce {
    Vec6<Scalar> F_Ao_W, F_Co_W;
    Scalar energy;
  };
  ElementForce elementForce(const ForceElementLayout& e,
                            const std::function<void(const ForceElementLayout&, const BushingForces<Scalar>&)>& check = {}) {
    switch (e.kind) {
      case mechanics::ForceKind::Spring: {
        const SpringForces<Scalar> f = springForces(e);
        return {f.F_Ao_W, f.F_Co_W, f.energy};
      }
      case mechanics::ForceKind::Bushing: {
        const BushingForces<Scalar> f = bushingForces(e);
        if (check) check(e, f);
        return {f.F_Ao_W, f.F_Co_W, f.energy};
      }
      case mechanics::ForceKind::HuntCrossley: {
        const HuntCrossleyForces<Scalar> f = huntCrossleyForces(e);
        return {f.F_Ao_W, f.F_Co_W, f.energy};
      }
      case mechanics::ForceKind::CableSpring:
      case mechanics::ForceKind::CableActuator:
      case mechanics::ForceKind::JointForceLaw: break;
    }
    throw std::logic_error("elementForce: not a force element between two frames");
  }

  // What all force elements apply, as external forces about the body
  // origins in World (local::ExternalForces), and their elastic energy.
  // `check` (double only) runs on each bushing first: the interpreter's
  // gimbal-lock error.
  struct ElementForces {
    std::vector<Vec6<Scalar>> fext;  // per runtime body
    Scalar energy = Scalar(0.0);
  };
  ElementForces elementForces(const std::function<void(const ForceElementLayout&, const BushingForces<Scalar>&)>& check = {}) {
    ElementForces out;
    out.fext.assign(layout_.bodies.size(), Vec6<Scalar>::Zero());
    const Data<Scalar>* data = layout_.forceElements.empty() ? nullptr : &kinematics();
    auto apply = [&](int body, int frame, const Vec6<Scalar>& F_Fo_W) {
      if (body < 0) return;
      const auto b = static_cast<std::size_t>(body);
      const Vec3<Scalar> p_BoFo_W = frameMotion(frame).p_WF - data->X_WB.at(b).p;
      out.fext[b] += shiftForce<Scalar>(F_Fo_W, p_BoFo_W);
    };
    for (const ForceElementLayout& e : layout_.forceElements) {
      const ElementForce f = elementForce(e, check);
      apply(e.bodyA, e.frameA, f.F_Ao_W);
      apply(e.bodyC, e.frameC, f.F_Co_W);
      out.energy += f.energy;
    }
    return out;
  }

  Scalar leaf(int v, int element) {
    const auto vi = static_cast<std::size_t>(v);
    const sema::FlatVariable& fv = model_.variables.at(vi);
    const auto el = static_cast<std::size_t>(std::max(element, 0));
    switch (layout_.roles.at(vi)) {
      case VariableRole::Runtime: return sources_.parameter(layout_.parameterOfVariable[vi], static_cast<int>(el));
      case VariableRole::Folded:
        if (!fv.value || fv.value->numbers.size() <= el)
          throw UnsupportedExpression("parameter `" + fv.path + "` has no value");
        return Scalar(fv.value->numbers[el]);
      case VariableRole::Dependent:
      case VariableRole::Output: return value(v).data.at(el);
      case VariableRole::Input: return sources_.input(layout_.inputOfVariable[vi]);
      case VariableRole::State: {
        const auto [joint, isU] = layout_.stateOf[vi];
        const JointLayout& j = layout_.joints.at(static_cast<std::size_t>(joint));
        return isU ? sources_.u[j.uIndex() + static_cast<int>(el)] : sources_.q[j.qIndex() + static_cast<int>(el)];
      }
      case VariableRole::Frame: return frameQuantity(layout_.frameOf[vi], static_cast<int>(el));
      case VariableRole::Other: break;
    }
    throw UnsupportedExpression("the variable `" + fv.path + "` in an expression");
  }

  // The whole value of a flat variable (bindings translated once, then cached).
  const Tensor<Scalar>& value(int v) {
    auto it = cache_.find(v);
    if (it != cache_.end()) return it->second;
    const sema::FlatVariable& fv = model_.variables.at(static_cast<std::size_t>(v));
    Tensor<Scalar> t;
    const VariableRole role = layout_.roles.at(static_cast<std::size_t>(v));
    if ((role == VariableRole::Dependent || role == VariableRole::Output) && fv.binding) {
      if (!active_.insert(v).second) throw UnsupportedExpression("the binding of `" + fv.path + "` refers to itself");
      t = translate_(*fv.binding);
      active_.erase(v);
      if (t.shape.empty() && !fv.shape.empty()) {  // a scalar binding of an array: broadcast
        std::size_t n = 1;
        for (int d : fv.shape) n *= static_cast<std::size_t>(d);
        t.data.assign(n, t.data.at(0));
        t.shape = fv.shape;
      }
    } else {
      t = translate_.variable(v);
    }
    if (role == VariableRole::Output) {  // depends on the state: never cached
      scratch_ = std::move(t);
      return scratch_;
    }
    return cache_.emplace(v, std::move(t)).first->second;
  }

  // The named parameter of a component as a tensor (`fallback` if it has none).
  Scalar scalarParameter(int component, const std::string& name) {
    const Tensor<Scalar> t = parameter(component, name, Tensor<Scalar>{});
    if (t.size() != 1) throw UnsupportedExpression("parameter `" + name + "` of a force element has no scalar value");
    return t.data[0];
  }
  Vec3<Scalar> vectorParameter(int component, const std::string& name) {
    const Tensor<Scalar> t = parameter(component, name, Tensor<Scalar>{});
    if (t.size() != 3) throw UnsupportedExpression("parameter `" + name + "` of a force element has no 3-vector value");
    return Vec3<Scalar>(t.data[0], t.data[1], t.data[2]);
  }
  Tensor<Scalar> parameter(int component, const std::string& name, Tensor<Scalar> fallback) {
    const sema::FlatComponent& c = model_.components.at(static_cast<std::size_t>(component));
    auto it = c.parameters.find(name);
    if (it == c.parameters.end()) return fallback;
    return value(it->second);
  }
  // X_BF of a frame, rebuilt from the fixed components on its path (the one
  // assembly, mechanics/assembly.hpp, over this environment's values).
  Transform<Scalar> framePose(int frame) { return assembly_.framePose(frame); }

  // The runtime mechanism (bodies in tree order).
  Mechanism<Scalar> mechanism() {
    Mechanism<Scalar> m;
    if (layout_.worldGravity >= 0) {
      const Tensor<Scalar>& g = value(layout_.worldGravity);
      m.gravity = Vec3<Scalar>(g.data.at(0), g.data.at(1), g.data.at(2));
    } else {
      m.gravity = mech_.gravity.template cast<Scalar>();
    }
    for (const JointLayout& jl : layout_.joints) {
      const mechanics::JointInfo& ji = mech_.joints.at(static_cast<std::size_t>(jl.mechJoint));
      const BodyLayout& bl = layout_.bodies.at(static_cast<std::size_t>(jl.body));
      Joint<Scalar> joint;
      joint.name = jl.name;
      joint.type = static_cast<JointType>(static_cast<int>(jl.type()));
      joint.parent = jl.parent;
      joint.X_PF = framePose(jl.reversed() ? ji.frameB : ji.frameA);
      joint.X_BM = framePose(jl.reversed() ? ji.frameA : ji.frameB);
      // Axes are folded (ModelLayout): normalized here, at compile time.
      const double sign = jl.reversed() ? -1.0 : 1.0;
      joint.axis = axis(jl.component(), "axis", Vec3<double>::UnitZ(), sign);
      joint.axis_a = axis(jl.component(), "axis_a", Vec3<double>::UnitX(), 1.0);
      joint.axis_b = axis(jl.component(), "axis_b", Vec3<double>::UnitY(), 1.0);
      // The rotor inertia on each dof: a run-time parameter where the model
      // gives one, else folded at 0 (ModelLayout), so its terms vanish.
      const Tensor<Scalar> armature = parameter(jl.component(), "armature", Tensor<Scalar>{});
      if (armature.size() == 1) joint.armature = armature.data[0];
      capstan::Body<Scalar> body = assembly_.massProperties(bl.mechBody);
      body.name = bl.name;
      m.addBody(std::move(body), joint);
    }
    return m;
  }

  // tau (nu): the generalized forces of the force laws.
  VectorX<Scalar> appliedForces() {
    VectorX<Scalar> tau = VectorX<Scalar>::Constant(layout_.nu, Scalar(0.0));
    for (const ForceLawLayout& fl : layout_.forceLaws) tau[fl.uIndex] += lawValue(fl.law);
    return tau;
  }
  // The value of force law `law` (index into FlatModel::forceLaws): a
  // joint's `tau` element, a cable actuator's `tension`.
  Scalar lawValue(int law) {
    const Tensor<Scalar> t = translate_(*model_.forceLaws.at(static_cast<std::size_t>(law)).rhs);
    return t.data.at(0);
  }

  // The initial state from the joints' q0 and u0 (identity quaternions by default).
  void initialState(VectorX<Scalar>& q, VectorX<Scalar>& u) {
    q = VectorX<Scalar>::Constant(layout_.nq, Scalar(0.0));
    u = VectorX<Scalar>::Constant(layout_.nu, Scalar(0.0));
    for (const JointLayout& jl : layout_.joints) {
      if (capstan::hasQuaternion(jl.type())) q[jl.qIndex()] = Scalar(1.0);
      const Tensor<Scalar> q0 = parameter(jl.component(), "q0", Tensor<Scalar>{});
      const Tensor<Scalar> u0 = parameter(jl.component(), "u0", Tensor<Scalar>{});
      for (int k = 0; k < jl.nq() && static_cast<std::size_t>(k) < q0.size(); ++k) q[jl.qIndex() + k] = q0.data[static_cast<std::size_t>(k)];
      for (int k = 0; k < jl.nu() && static_cast<std::size_t>(k) < u0.size(); ++k) u[jl.uIndex() + k] = u0.data[static_cast<std::size_t>(k)];
    }
  }

  // The model's constraints over Scalar (layout.constraints order): a cut
  // joint's frames and rows, a contact's sphere centers and radii (SPEC §4).
  // They depend on parameters only: built once.
  const std::vector<Constraint<Scalar>>& constraints() {
    if (constraints_) return *constraints_;
    std::vector<Constraint<Scalar>> out;
    for (const ConstraintLayout& cl : layout_.constraints) {
      Constraint<Scalar> c;
      c.name = cl.name;
      if (cl.kind == mechanics::ConstraintKind::Coupler) {
        const mechanics::JointInfo& f = mech_.joints.at(static_cast<std::size_t>(cl.joint));
        const mechanics::JointInfo& l = mech_.joints.at(static_cast<std::size_t>(cl.leader));
        c.type = ConstraintType::Coupler;
        c.qFollower = f.qIndex;
        c.uFollower = f.uIndex;
        c.qLeader = l.qIndex;
        c.uLeader = l.uIndex;
        c.ratio = scalarParameter(cl.component, "ratio");
        c.offset = scalarParameter(cl.component, "offset");
        out.push_back(std::move(c));
        continue;
      }
      c.F = {cl.bodyF, framePose(cl.frameF)};
      c.M = {cl.bodyM, framePose(cl.frameM)};
      if (cl.kind == mechanics::ConstraintKind::LoopJoint) {
        c.type = ConstraintType::LoopJoint;
        const mechanics::JointInfo& ji = mech_.joints.at(static_cast<std::size_t>(cl.joint));
        c.rows = loopClosureRows(static_cast<JointType>(static_cast<int>(ji.type)),
                                 axisValue(cl.component, "axis", Vec3<double>::UnitZ()),
                                 axisValue(cl.component, "axis_a", Vec3<double>::UnitX()),
                                 axisValue(cl.component, "axis_b", Vec3<double>::UnitY()));
      } else {
        c.type = ConstraintType::SphereOnSphere;
        c.radiusF = scalarParameter(cl.sphereF, "radius");
        c.radiusB = scalarParameter(cl.sphereB, "radius");
        c.rolling = cl.rolling;
      }
      out.push_back(std::move(c));
    }
    constraints_ = std::move(out);
    return *constraints_;
  }

  Scalar output(int k) { return value(layout_.outputs.at(static_cast<std::size_t>(k)).variable).data.at(0); }

 private:
  // A joint's axis parameter, unit length (axes are folded: ModelLayout).
  Vec3<double> axisValue(int component, const std::string& name, const Vec3<double>& fallback) const {
    const sema::FlatComponent& c = model_.components.at(static_cast<std::size_t>(component));
    Vec3<double> a = fallback;
    auto it = c.parameters.find(name);
    if (it != c.parameters.end()) {
      const sema::FlatVariable& fv = model_.variables.at(static_cast<std::size_t>(it->second));
      if (fv.value && fv.value->numbers.size() == 3) a = Vec3<double>(fv.value->numbers[0], fv.value->numbers[1], fv.value->numbers[2]);
    }
    if (a.norm() > 0) a.normalize();
    return a;
  }
  Vec3<Scalar> axis(int component, const std::string& name, const Vec3<double>& fallback, double sign) const {
    return (sign * axisValue(component, name, fallback)).template cast<Scalar>();
  }

  // A component parameter's elements as this environment evaluates them
  // (the assembly's ParameterValues).
  std::optional<std::vector<Scalar>> componentValues(int component, const std::string& name) {
    const sema::FlatComponent& c = model_.components.at(static_cast<std::size_t>(component));
    const auto it = c.parameters.find(name);
    if (it == c.parameters.end() || it->second < 0) return std::nullopt;
    return value(it->second).data;
  }

  // Positions and velocities of every body at the current state, once per state.
  const Data<Scalar>& kinematics() {
    if (!kinematics_) {
      if (!external_ && !own_) own_ = std::make_unique<Mechanism<Scalar>>(mechanism());
      const Mechanism<Scalar>& m = external_ ? *external_ : *own_;
      kinematics_.emplace(m);
      forwardKinematics(m, *kinematics_, sources_.q, sources_.u);
    }
    return *kinematics_;
  }

  const sema::FlatModel& model_;
  const mechanics::Mechanism& mech_;
  const ModelLayout& layout_;
  Sources<Scalar> sources_;
  const Mechanism<Scalar>* external_ = nullptr;
  std::unique_ptr<Mechanism<Scalar>> own_;
  std::optional<Data<Scalar>> kinematics_;
  FlatTranslator<Scalar> translate_;
  mechanics::Assembly<Scalar> assembly_;
  std::map<int, Tensor<Scalar>> cache_;
  std::optional<std::vector<Constraint<Scalar>>> constraints_;
  std::set<int> active_;
  Tensor<Scalar> scratch_;
};

}  // namespace capstan::codegen
