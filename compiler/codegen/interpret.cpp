#include "codegen/interpret.hpp"

#include <algorithm>
#include <limits>

#include <capstan/dynamics.hpp>
#include <capstan/local_dynamics.hpp>

#include "codegen/assemble.hpp"
#include "codegen/dual.hpp"
#include "codegen/functions.hpp"
#include "mechanics/builtins.hpp"

namespace capstan::codegen {

Interpreter::Interpreter(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
                         std::vector<std::vector<double>> parameters, std::vector<double> inputs,
                         ExternalFunctions external)
    : parameters_(std::move(parameters)), inputs_(std::move(inputs)), model_(model), mech_(mech), layout_(layout),
      external_(external) {
  parameters_.resize(layout.parameters.size());
  for (std::size_t k = 0; k < layout.parameters.size(); ++k)
    if (parameters_[k].empty()) parameters_[k] = layout.parameters[k].defaults;
  inputs_.resize(layout.inputs.size(), 0.0);
  build();
}

bool Interpreter::setParameter(std::string_view name, double value) {
  for (std::size_t p = 0; p < layout_.parameters.size(); ++p) {
    for (std::size_t k = 0; k < layout_.parameters[p].size(); ++k) {
      if (layout_.parameters[p].elementName(k) != name) continue;
      parameters_[p][k] = value;
      build();
      return true;
    }
  }
  return false;
}

void Interpreter::build() {
  const ModelLayout& layout = layout_;
  const sema::FlatModel& model = model_;
  const mechanics::Mechanism& mech = mech_;
  dual_.reset();
  Sources<double> src;
  src.parameter = [this](int p, int e) {
    return parameters_.at(static_cast<std::size_t>(p)).at(static_cast<std::size_t>(e));
  };
  src.input = [this](int k) { return inputs_.at(static_cast<std::size_t>(k)); };
  src.q = Eigen::VectorXd::Zero(layout.nq);
  src.u = Eigen::VectorXd::Zero(layout.nu);
  src.external = external_;
  env_ = std::make_unique<Environment<double>>(model, mech, layout, std::move(src));
  mechanism_ = env_->mechanism();
  env_->useMechanism(&mechanism_);
  // The cables' constants from the parameters' values, as the generated
  // class's refreshCables (obstacles at their frames' origins).
  std::vector<capstan::cable::ModelCable> cables;
  for (const CableLayout& c : layout.cables) {
    capstan::cable::ModelCable cable;
    cable.path = capstan::cable::makeCablePath(Eigen::Vector3d::Zero(), Eigen::Vector3d::Zero());
    for (const CableObstacleLayout& o : c.obstacles) {
      cable.body.push_back(o.body);
      if (o.kind == CableObstacleKind::ViaPoint) capstan::cable::addViaPoint(cable.path, Eigen::Vector3d::Zero());
      if (o.kind != CableObstacleKind::Surface) continue;
      const auto kind = mechanics::componentKind(model.components.at(static_cast<std::size_t>(o.surface)).kind);
      const mechanics::ParameterReader<double, Eigen::Vector3d> read{
          [&](const char* name) { return env_->scalarParameter(o.surface, name); },
          [&](const char* name) { return env_->vectorParameter(o.surface, name); }};
      capstan::cable::Surface surface;
      if (kind) {
        mechanics::visitSurface(*kind, [&](auto traits) {
          using Geometry = typename decltype(traits)::Geometry;
          surface = std::apply([](const auto&... a) { return Geometry{a...}; }, decltype(traits)::arguments(read));
        });
      }
      capstan::cable::addWrap(cable.path, surface, Eigen::Matrix3d::Identity(), Eigen::Vector3d::Zero(),
                              capstan::cable::nearHint(env_->vectorParameter(o.component, "near")),
                              env_->scalarParameter(o.component, "friction"));
    }
    for (const int s : c.springs)
      cable.springs.push_back({env_->scalarParameter(s, "stiffness"), env_->scalarParameter(s, "slackLength"),
                               env_->scalarParameter(s, "dissipation")});
    cables.push_back(std::move(cable));
  }
  cables_ = std::move(cables);
  cableStates_.assign(cables_.size(), {});
}

capstan::ExternalForces<double> Interpreter::cableForces(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                                         double* energy, std::vector<CableEvaluation>* each) {
  if (cables_.empty()) return {};
  const FunctionValues<double> v = run(FunctionId::CableFrames, t, q, u);
  capstan::ExternalForces<double> fext(layout_.bodies.size(), capstan::Vec6<double>::Zero());
  for (std::size_t k = 0; k < cables_.size(); ++k) {
    const CableLayout& c = layout_.cables[k];
    const auto first = static_cast<std::size_t>(c.firstFrame), count = c.obstacles.size();
    CableEvaluation e;
    e.F_Bo_W.assign(layout_.bodies.size(), capstan::Vec6<double>::Zero());
    const capstan::cable::CableResult r = capstan::cable::evaluateModelCable(
        cables_[k], std::span(v.cableFrames).subspan(first, count), std::span(v.cableOffsets).subspan(first, count),
        cableStates_[k], e.values, e.F_Bo_W,
        std::span(v.cableTensions).subspan(static_cast<std::size_t>(c.firstActuator), c.actuators.size()));
    if (!r.ok()) {
      std::vector<std::string_view> names;
      for (const CableObstacleLayout& o : c.obstacles) names.push_back(o.name);
      throw CableFailed(c, r, capstan::cable::cableFailureMessage(c.name, t, r, names));
    }
    for (std::size_t b = 0; b < fext.size(); ++b) fext[b] += e.F_Bo_W[b];
    if (energy) *energy += e.values.energy;
    if (each) {
      e.path = cableStates_[k];
      each->push_back(std::move(e));
    }
  }
  return fext;
}

std::vector<CableEvaluation> Interpreter::cables(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  std::vector<CableEvaluation> each;
  cableForces(t, q, u, nullptr, &each);
  return each;
}

struct Interpreter::DualModel {
  std::unique_ptr<Environment<Dual>> env;
  capstan::Mechanism<Dual> mechanism;
};

Interpreter::~Interpreter() = default;

Interpreter::DualModel& Interpreter::dual() {
  if (!dual_) {
    dual_ = std::make_unique<DualModel>();
    Sources<Dual> src;
    src.parameter = [this](int p, int e) {
      return Dual(parameters_.at(static_cast<std::size_t>(p)).at(static_cast<std::size_t>(e)));
    };
    src.input = [this](int k) { return Dual(inputs_.at(static_cast<std::size_t>(k))); };
    src.q = VectorX<Dual>::Zero(layout_.nq);
    src.u = VectorX<Dual>::Zero(layout_.nu);
    if (external_) {
      // The derivative through the function its derivative annotation
      // names: df = f_der(x, dx).
      src.external = [this](int function, const std::vector<Dual>& args) {
        std::vector<double> values, differentials;
        for (const Dual& a : args) {
          values.push_back(a.v);
          differentials.push_back(a.d);
        }
        const sema::FlatFunction& f = model_.functions.at(static_cast<std::size_t>(function));
        if (std::all_of(differentials.begin(), differentials.end(), [](double d) { return d == 0.0; }))
          return Dual(external_(function, values));
        if (f.derivative < 0)
          throw UnsupportedExpression("the derivative of the external function `" + f.name + "`");
        return Dual(external_(function, values),
                    external_(f.derivative, derivativeCallArgs<double>(model_, f, values, differentials)));
      };
    }
    dual_->env = std::make_unique<Environment<Dual>>(model_, mech_, layout_, std::move(src));
    dual_->mechanism = dual_->env->mechanism();
    dual_->env->useMechanism(&dual_->mechanism);
  }
  return *dual_;
}

ForceDerivatives<double> Interpreter::forceDerivatives(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  DualModel& dm = dual();
  const int nu = layout_.nu;
  const bool laws = !layout_.forceLaws.empty(), elements = !layout_.forceElements.empty();
  const Eigen::MatrixXd N = nMatrix(mechanism_, q);  // (nq x nu)
  ForceDerivatives<double> out;
  if (laws) {
    out.dtau_dq.resize(nu, nu);
    out.dtau_du.resize(nu, nu);
  }
  for (int j = 0; j < 2 * nu; ++j) {
    const bool alongQ = j < nu;
    const int col = alongQ ? j : j - nu;
    VectorX<Dual> qd(q.size()), ud(nu);
    for (int i = 0; i < q.size(); ++i) qd[i] = Dual(q[i], alongQ ? N(i, col) : 0.0);
    for (int i = 0; i < nu; ++i) ud[i] = Dual(u[i], !alongQ && i == col ? 1.0 : 0.0);
    dm.env->setState(Dual(t), qd, ud);
    if (laws) {
      const VectorX<Dual> tau = dm.env->appliedForces();
      for (int i = 0; i < nu; ++i) (alongQ ? out.dtau_dq : out.dtau_du)(i, col) = tau[i].d;
    }
    if (elements) {
      ExternalForces<double> dF;
      for (const Vec6<Dual>& F : dm.env->elementForces().fext) {
        Vec6<double> d;
        for (int k = 0; k < 6; ++k) d[k] = F[k].d;
        dF.push_back(d);
      }
      (alongQ ? out.dF_dq : out.dF_du).push_back(std::move(dF));
    }
  }
  return out;
}

FunctionValues<double> Interpreter::derivatives(FunctionId id, double t, const Eigen::VectorXd& q,
                                                const Eigen::VectorXd& u, const Eigen::VectorXd& udot,
                                                const capstan::ExternalForces<double>& fext) {
  FunctionValues<double> v;
  v.time = t;
  v.q = q;
  v.u = u;
  v.udot = udot;
  v.fext = fext;
  FunctionEvaluator<double> ev(mechanism_, *env_);
  ev.forceDerivatives = [&](const FunctionValues<double>&, const VectorX<double>&, const std::vector<Vec6<double>>&) {
    return forceDerivatives(t, q, u);
  };
  ev.run(id, v);
  return v;
}

DynamicsDerivatives Interpreter::forwardDynamicsDerivatives(double t, const Eigen::VectorXd& q,
                                                            const Eigen::VectorXd& u) {
  if (cables_.empty()) {
    FunctionValues<double> v = derivatives(FunctionId::ForwardDynamicsDerivatives, t, q, u, {});
    return {v.dudot_dq, v.dudot_du, v.dudot_dtau};
  }
  // As the generated class: at the cables' forces held fixed, plus
  // M^-1 times their generalized forces' change.
  std::vector<CableEvaluation> each;
  const capstan::ExternalForces<double> fext = cableForces(t, q, u, nullptr, &each);
  FunctionValues<double> v = derivatives(FunctionId::ForwardDynamicsDerivativesExternal, t, q, u, {}, fext);
  const int nu = layout_.nu;
  Eigen::MatrixXd dtau_dq = Eigen::MatrixXd::Zero(nu, nu), dtau_du = Eigen::MatrixXd::Zero(nu, nu);
  cableForceDerivatives(t, q, u, each, dtau_dq, dtau_du);
  v.dudot_dq += v.dudot_dtau * dtau_dq;
  v.dudot_du += v.dudot_dtau * dtau_du;
  return {v.dudot_dq, v.dudot_du, v.dudot_dtau};
}

void Interpreter::cableForceDerivatives(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                        const std::vector<CableEvaluation>& each, Eigen::MatrixXd& dtau_dq,
                                        Eigen::MatrixXd& dtau_du) {
  DualModel& dm = dual();
  const int nu = layout_.nu;
  const Eigen::MatrixXd N = nMatrix(mechanism_, q);  // (nq x nu)
  const FunctionValues<double> frames = run(FunctionId::CableFrames, t, q, u);
  // Per cable, its rows as cableFrameDerivatives lays them out: six per
  // obstacle (w_WF, v_WF), then one per actuator.
  std::vector<Eigen::MatrixXd> Gq, Gu;
  for (const CableLayout& c : layout_.cables) {
    const auto rows = static_cast<Eigen::Index>(6 * c.obstacles.size() + c.actuators.size());
    Gq.emplace_back(rows, nu);
    Gu.emplace_back(rows, nu);
  }
  for (int j = 0; j < 2 * nu; ++j) {
    const bool alongQ = j < nu;
    const int col = alongQ ? j : j - nu;
    FunctionValues<Dual> w;
    w.time = Dual(t);
    w.q.resize(q.size());
    w.u.resize(nu);
    for (int i = 0; i < q.size(); ++i) w.q[i] = Dual(q[i], alongQ ? N(i, col) : 0.0);
    for (int i = 0; i < nu; ++i) w.u[i] = Dual(u[i], !alongQ && i == col ? 1.0 : 0.0);
    FunctionEvaluator<Dual>(dm.mechanism, *dm.env).run(FunctionId::CableFrames, w);
    for (std::size_t k = 0; k < layout_.cables.size(); ++k) {
      const CableLayout& c = layout_.cables[k];
      Eigen::MatrixXd& G = alongQ ? Gq[k] : Gu[k];
      for (std::size_t i = 0; i < c.obstacles.size(); ++i) {
        const FrameMotion<Dual>& m = w.cableFrames.at(static_cast<std::size_t>(c.firstFrame) + i);
        for (int r = 0; r < 3; ++r) {
          G(static_cast<Eigen::Index>(6 * i) + r, col) = m.w_WF[r].d;
          G(static_cast<Eigen::Index>(6 * i) + 3 + r, col) = m.v_WF[r].d;
        }
      }
      for (std::size_t a = 0; a < c.actuators.size(); ++a)
        G(static_cast<Eigen::Index>(6 * c.obstacles.size() + a), col) =
            w.cableTensions.at(static_cast<std::size_t>(c.firstActuator) + a).d;
    }
  }
  for (std::size_t k = 0; k < layout_.cables.size(); ++k) {
    const CableLayout& c = layout_.cables[k];
    const auto first = static_cast<std::size_t>(c.firstFrame), count = c.obstacles.size();
    Eigen::MatrixXd dvalues_dq(4, nu), dvalues_du(4, nu);
    if (!capstan::cable::evaluateModelCableDerivatives(
            cables_[k], std::span(frames.cableFrames).subspan(first, count),
            std::span(frames.cableOffsets).subspan(first, count), cableStates_[k], each.at(k).values,
            std::span(frames.cableTensions).subspan(static_cast<std::size_t>(c.firstActuator), c.actuators.size()),
            Gq[k], Gu[k], dvalues_dq, dvalues_du, dtau_dq, dtau_du))
      throw UnsupportedExpression("the derivatives of cable `" + c.name + "` over a wrap with friction");
  }
}

InverseDynamicsDerivatives Interpreter::inverseDynamicsDerivatives(double t, const Eigen::VectorXd& q,
                                                                   const Eigen::VectorXd& u,
                                                                   const Eigen::VectorXd& udot) {
  FunctionValues<double> v = derivatives(FunctionId::InverseDynamicsDerivatives, t, q, u, udot);
  return {v.dtau_dq, v.dtau_du, v.M};
}

DynamicsDerivatives Interpreter::forwardDynamicsDerivativesByDuals(double t, const Eigen::VectorXd& q,
                                                                   const Eigen::VectorXd& u) {
  dual();
  const int nu = layout_.nu;
  const Eigen::MatrixXd N = nMatrix(mechanism_, q);  // (nq x nu)
  // udot's derivative along (dq, du, dtau).
  auto derivative = [&](const Eigen::VectorXd& dq, const Eigen::VectorXd& du, const Eigen::VectorXd& dtau) {
    FunctionValues<Dual> v;
    v.time = Dual(t);
    v.q.resize(q.size());
    v.u.resize(nu);
    v.dtau.resize(nu);
    for (int i = 0; i < q.size(); ++i) v.q[i] = Dual(q[i], dq[i]);
    for (int i = 0; i < nu; ++i) v.u[i] = Dual(u[i], du[i]);
    for (int i = 0; i < nu; ++i) v.dtau[i] = Dual(0.0, dtau[i]);
    FunctionEvaluator<Dual>(dual_->mechanism, *dual_->env)
        .run(FunctionId::ForwardDynamicsDerivatives, v, {.analyticDerivatives = false});
    Eigen::VectorXd d(nu);
    for (int i = 0; i < nu; ++i) d[i] = v.udot[i].d;
    return d;
  };
  DynamicsDerivatives out;
  out.dudot_dq.resize(nu, nu);
  out.dudot_du.resize(nu, nu);
  out.dudot_dtau.resize(nu, nu);
  const Eigen::VectorXd zeroQ = Eigen::VectorXd::Zero(q.size()), zeroU = Eigen::VectorXd::Zero(nu);
  for (int j = 0; j < nu; ++j) {
    const Eigen::VectorXd e = Eigen::VectorXd::Unit(nu, j);
    out.dudot_dq.col(j) = derivative(N.col(j), zeroU, zeroU);
    out.dudot_du.col(j) = derivative(zeroQ, e, zeroU);
    out.dudot_dtau.col(j) = derivative(zeroQ, zeroU, e);
  }
  return out;
}

// Every function runs the table's one implementation (functions.hpp), as
// the generated code does: the dynamics in the production family, ABA in
// joint frames (local_dynamics.hpp); the World-frame family is the tests'
// oracle.
FunctionValues<double> Interpreter::run(FunctionId id, double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  FunctionValues<double> v;
  v.time = t;
  v.q = q;
  v.u = u;
  FunctionEvaluator<double>(mechanism_, *env_).run(id, v);
  return v;
}

void Interpreter::initialState(Eigen::VectorXd& q, Eigen::VectorXd& u) {
  FunctionValues<double> v = run(FunctionId::InitialState, 0.0, {}, {});
  q = v.q;
  u = v.u;
  normalizeQuaternions(q);
}

Eigen::MatrixXd Interpreter::massMatrix(const Eigen::VectorXd& q) { return run(FunctionId::MassMatrix, 0.0, q, {}).M; }

Eigen::VectorXd Interpreter::bias(const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  return run(FunctionId::Bias, 0.0, q, u).C;
}

Eigen::VectorXd Interpreter::appliedForces(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  return run(FunctionId::AppliedForces, t, q, u).tau;
}

std::vector<std::pair<int, double>> Interpreter::forceLawValues(double t, const Eigen::VectorXd& q,
                                                                 const Eigen::VectorXd& u) {
  env_->setState(t, q, u);
  std::vector<std::pair<int, double>> values;
  for (const int law : env_->layout().evaluatedForceLaws()) values.emplace_back(law, env_->lawValue(law));
  return values;
}

Eigen::VectorXd Interpreter::forwardDynamics(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  if (!cables_.empty()) return forwardDynamics(t, q, u, capstan::ExternalForces<double>(layout_.bodies.size(), capstan::Vec6<double>::Zero()));
  return run(FunctionId::ForwardDynamics, t, q, u).udot;
}

Eigen::VectorXd Interpreter::inverseDynamics(const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                             const Eigen::VectorXd& udot) {
  FunctionValues<double> v;
  v.q = q;
  v.u = u;
  v.udot = udot;
  FunctionEvaluator<double>(mechanism_, *env_).run(FunctionId::InverseDynamics, v);
  return v.tau;
}

Eigen::VectorXd Interpreter::forwardDynamics(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                                             const capstan::ExternalForces<double>& fext) {
  FunctionValues<double> v;
  v.time = t;
  v.q = q;
  v.u = u;
  v.fext = fext;
  if (!cables_.empty()) {  // besides the cables' forces
    const capstan::ExternalForces<double> cable = cableForces(t, q, u);
    for (std::size_t b = 0; b < v.fext.size(); ++b) v.fext[b] += cable.at(b);
  }
  FunctionEvaluator<double>(mechanism_, *env_).run(FunctionId::ForwardDynamicsExternal, v);
  return v.udot;
}

Eigen::VectorXd Interpreter::qdot(const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  return run(FunctionId::Qdot, 0.0, q, u).qdot;
}

double Interpreter::kineticEnergy(const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  return run(FunctionId::KineticEnergy, 0.0, q, u).energy;
}

double Interpreter::potentialEnergy(const Eigen::VectorXd& q) {
  double energy = run(FunctionId::PotentialEnergy, 0.0, q, {}).energy;
  if (!cables_.empty()) cableForces(0.0, q, Eigen::VectorXd::Zero(layout_.nu), &energy);
  return energy;
}

void Interpreter::bodyStates(const Eigen::VectorXd& q, const Eigen::VectorXd& u,
                             std::vector<capstan::Transform<double>>& X_WB, std::vector<capstan::Vec6<double>>& V_WB) {
  X_WB = run(FunctionId::BodyPoses, 0.0, q, u).X_WB;
  V_WB = run(FunctionId::BodyVelocities, 0.0, q, u).V_WB;
}

namespace {

// Function `id` for frame `frame` of the layout: its body and origin.
FunctionValues<double> frameValues(Environment<double>& env, int frame) {
  const JacobianFrame& jf = env.layout().jacobianFrames.at(static_cast<std::size_t>(frame));
  FunctionValues<double> v;
  v.body = jf.body;
  if (jf.frame >= 0) v.point = env.framePose(jf.frame).p;
  return v;
}

}  // namespace

Eigen::MatrixXd Interpreter::frameJacobian(int frame, const Eigen::VectorXd& q) {
  FunctionValues<double> v = frameValues(*env_, frame);
  v.q = q;
  FunctionEvaluator<double>(mechanism_, *env_).run(FunctionId::FrameJacobian, v);
  return v.J;
}

capstan::Vec6<double> Interpreter::frameJacobianDotU(int frame, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  FunctionValues<double> v = frameValues(*env_, frame);
  v.q = q;
  v.u = u;
  FunctionEvaluator<double>(mechanism_, *env_).run(FunctionId::FrameJacobianDotU, v);
  return v.JdotU;
}

std::vector<capstan::BushingForces<double>> Interpreter::bushingStates(double t, const Eigen::VectorXd& q,
                                                                     const Eigen::VectorXd& u) {
  return run(FunctionId::BushingStates, t, q, u).bushings;
}

std::vector<double> Interpreter::outputs(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  return run(FunctionId::Outputs, t, q, u).outputs;
}

capstan::ConstraintRows<double> Interpreter::constraintRows(const Eigen::VectorXd& q, const Eigen::VectorXd& u) {
  return run(FunctionId::ConstraintBias, 0.0, q, u).constraints;
}

void Interpreter::normalizeQuaternions(Eigen::VectorXd& q) const { capstan::normalizeQuaternions(mechanism_, q); }

namespace {

template <class T, class F>
std::vector<std::string> namesOf(const std::vector<T>& items, F&& name) {
  std::vector<std::string> names;
  for (const T& item : items) name(item, names);
  return names;
}

}  // namespace

InterpretedModel::InterpretedModel(Interpreter& interpreter)
    : nq(interpreter.nq()),
      nu(interpreter.nu()),
      nb(static_cast<int>(interpreter.layout().bodies.size())),
      nf(static_cast<int>(interpreter.layout().jacobianFrames.size())),
      ncables(static_cast<int>(interpreter.layout().cables.size())),
      qNames(namesOf(interpreter.layout().joints,
                     [](const JointLayout& j, auto& out) { out.insert(out.end(), j.qNames.begin(), j.qNames.end()); })),
      uNames(namesOf(interpreter.layout().joints,
                     [](const JointLayout& j, auto& out) { out.insert(out.end(), j.uNames.begin(), j.uNames.end()); })),
      outputNames(namesOf(interpreter.layout().outputs, [](const IoVariable& o, auto& out) { out.push_back(o.name); })),
      bushingNames(namesOf(interpreter.layout().forceElements,
                           [](const ForceElementLayout& e, auto& out) {
                             if (e.kind == mechanics::ForceKind::Bushing) out.push_back(e.name);
                           })),
      cableNames(namesOf(interpreter.layout().cables, [](const CableLayout& c, auto& out) { out.push_back(c.name); })),
      qUnits(namesOf(interpreter.layout().joints,
                     [](const JointLayout& j, auto& out) {
                       for (const std::string_view unit : capstan::jointQUnits(j.type())) out.emplace_back(unit);
                     })),
      uUnits(namesOf(interpreter.layout().joints,
                     [](const JointLayout& j, auto& out) {
                       for (const std::string_view unit : capstan::jointUUnits(j.type())) out.emplace_back(unit);
                     })),
      outputUnits(namesOf(interpreter.layout().outputs, [](const IoVariable& o, auto& out) { out.push_back(o.unit); })),
      constraintInfo([&] {
        std::vector<ConstraintInfo> info;
        for (const ConstraintLayout& c : interpreter.layout().constraints)
          info.push_back({c.name, c.holonomicRow, c.holonomic, c.nonholonomicRow, c.nonholonomic});
        return info;
      }()),
      interp_(interpreter),
      lastCables_(static_cast<std::size_t>(ncables)) {}

template <class Evaluate>
bool InterpretedModel::solvingCables(Evaluate&& evaluate) const {
  failedCable_ = -1;
  try {
    evaluate();
    return true;
  } catch (const CableFailed& e) {
    failedCable_ = static_cast<int>(e.cable - interp_.layout().cables.data());
    cableFailure_ = e.what();
    return false;
  }
}

void InterpretedModel::forwardDynamics(double t, const Q& q, const U& u, U& udot) const {
  if (!solvingCables([&] { udot = interp_.forwardDynamics(t, q, u); }))
    udot = Eigen::VectorXd::Constant(nu, std::numeric_limits<double>::quiet_NaN());
}

void InterpretedModel::forwardDynamics(double t, const Q& q, const U& u, const ExternalForces& fext, U& udot) const {
  if (!solvingCables([&] { udot = interp_.forwardDynamics(t, q, u, fext); }))
    udot = Eigen::VectorXd::Constant(nu, std::numeric_limits<double>::quiet_NaN());
}

void InterpretedModel::bodyPoses(const Q& q, BodyPoses& poses) const {
  std::vector<capstan::Transform<double>> X;
  std::vector<capstan::Vec6<double>> V;
  interp_.bodyStates(q, Eigen::VectorXd::Zero(nu), X, V);
  poses.resize(X.size());
  for (std::size_t b = 0; b < X.size(); ++b) poses[b] = {X[b].R, X[b].p};
}

void InterpretedModel::bodyVelocities(const Q& q, const U& u, BodyVelocities& velocities) const {
  std::vector<capstan::Transform<double>> X;
  std::vector<capstan::Vec6<double>> V;
  interp_.bodyStates(q, u, X, V);
  velocities.resize(V.size());
  for (std::size_t b = 0; b < V.size(); ++b) velocities[b] = {V[b].head<3>(), V[b].tail<3>()};
}

void InterpretedModel::cableForces(int c, double t, const Q& q, const U& u, ExternalForces& fext) const {
  fext = interp_.cables(t, q, u).at(static_cast<std::size_t>(c)).F_Bo_W;
}

void InterpretedModel::forwardDynamicsDerivatives(double t, const Q& q, const U& u, MassMatrix& dudot_dq,
                                                  MassMatrix& dudot_du, MassMatrix& dudot_dtau) const {
  DynamicsDerivatives d = interp_.forwardDynamicsDerivatives(t, q, u);
  dudot_dq = std::move(d.dudot_dq);
  dudot_du = std::move(d.dudot_du);
  dudot_dtau = std::move(d.dudot_dtau);
}

void InterpretedModel::inverseDynamicsDerivatives(double t, const Q& q, const U& u, const U& udot, MassMatrix& dtau_dq,
                                                  MassMatrix& dtau_du, MassMatrix& M) const {
  InverseDynamicsDerivatives d = interp_.inverseDynamicsDerivatives(t, q, u, udot);
  dtau_dq = std::move(d.dtau_dq);
  dtau_du = std::move(d.dtau_du);
  M = std::move(d.M);
}

int InterpretedModel::gimbalLock(const Q& q, const U& u, double& pitch) const {
  if (bushingNames.empty()) return -1;
  try {
    interp_.bushingStates(0.0, q, u);  // (a bushing's angles depend on q only)
  } catch (const GimbalLock& e) {
    pitch = e.pitch;
    for (std::size_t k = 0; k < bushingNames.size(); ++k)
      if (bushingNames[k] == e.element->name) return static_cast<int>(k);
  }
  return -1;
}

int InterpretedModel::updateCables(double t, const Q& q, const U& u, ExternalForces& fext) const {
  fext.clear();
  solvingCables([&] { lastCables_ = interp_.cables(t, q, u); });
  return failedCable_;
}

std::vector<Unsupported> untranslatable(const sema::FlatModel& model, const mechanics::Mechanism& mech,
                                        const ModelLayout& layout) {
  std::vector<Unsupported> out;
  for (const sema::FlatFunction& f : model.functions) {
    std::string why;
    if (!externalCallOrder(f, why)) out.push_back({f.externalRange, why});
  }
  if (!out.empty()) return out;
  // Translation only: an external call's value does not matter here.
  Interpreter interp(model, mech, layout, {}, {}, [](int, const std::vector<double>&) { return 0.0; });
  Eigen::VectorXd q, u;
  interp.initialState(q, u);
  Environment<double>& env = interp.environment();
  env.setState(0.0, q, u);
  for (const int law : layout.evaluatedForceLaws()) {
    try {
      env.lawValue(law);
    } catch (const UnsupportedExpression& e) {
      out.push_back({model.forceLaws.at(static_cast<std::size_t>(law)).range,
                     std::string(e.what()) + " in the force law for `" + forceLawName(model, law) + "`"});
    }
  }
  for (std::size_t k = 0; k < layout.outputs.size(); ++k) {
    try {
      env.output(static_cast<int>(k));
    } catch (const UnsupportedExpression& e) {
      const IoVariable& o = layout.outputs[k];
      out.push_back({model.variables.at(static_cast<std::size_t>(o.variable)).range,
                     std::string(e.what()) + " in output `" + o.name + "`"});
    }
  }
  return out;
}

}  // namespace capstan::codegen
