// The numbers of a mechanism, over any Scalar: one assembly, three uses.
//
// The builder (builder.cpp) decides the topology: which frames are joined
// rigidly into which body, the path of fixed components from each body frame
// B to each of its frames F, the spanning tree and the cuts. What that
// topology's numbers are — the pose of a fixed component's frame_b in its
// frame_a, X_BF of every frame, each body's merged mass properties — is
// computed here, once, from the components' parameters as a ParameterValues
// function gives them:
//   double, compile-time values   the builder's checks, `check`'s summary and JSON
//   double, run-time values       the reference interpreter (codegen/assemble.hpp)
//   symbolic::Expr                the tracer: run-time parameters as symbols
//
// Fixed components (SPEC §4), X_ab = pose of frame_b in frame_a:
//   FixedTranslation  X_ab = (1, r)
//   FixedFrame        X_ab = (R, r)        R = R_ab
//   Weld              X_ab = 1
// Along a frame's path B = F0 -> F1 -> ... -> Fn = F, each step through a
// fixed component forwards (frame_a -> frame_b: X_ab) or backwards (X_ab^-1):
//   X_BF = X_{F0 F1} X_{F1 F2} ... X_{Fn-1 Fn}
//
// A body B merges the `Body` components rigidly attached to it, component k
// with mass m_k, center of mass c_k and central inertia I_k in its own
// frame_a K (X_BK = framePose of that frame):
//   m        = sum m_k                                     (kg)
//   p_BoBcm  = sum m_k (X_BK c_k) / m                      (m, in B)
//   I_Bcm_B  = sum R_BK I_k R_BK^T + m_k (|d_k|^2 1 - d_k d_k^T),
//              d_k = X_BK c_k - p_BoBcm                     (kg m^2, in B)
// With one component the sums are that component's values, with no m/m
// round trip (the traced code stays as short as the model is).
#pragma once

#include <capstan/mechanism.hpp>
#include <capstan/spatial.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mechanics/builtins.hpp"
#include "mechanics/mechanism.hpp"
#include "sema/flat.hpp"

namespace capstan::mechanics {

// The row-major elements of parameter `name` of component `component`, or
// nullopt when the component has no such parameter (or no value for it).
template <class Scalar>
using ParameterValues = std::function<std::optional<std::vector<Scalar>>(int component, const std::string& name)>;

template <class Scalar>
class Assembly {
 public:
  Assembly(const sema::FlatModel& model, const Mechanism& mech, ParameterValues<Scalar> values)
      : model_(model), mech_(mech), values_(std::move(values)) {}

  // A component's parameter, or `fallback` where it has none.
  Scalar scalar(int component, const std::string& name, double fallback) const {
    const auto v = values_(component, name);
    return v && v->size() == 1 ? (*v)[0] : Scalar(fallback);
  }
  capstan::Vec3<Scalar> vec3(int component, const std::string& name, const capstan::Vec3<double>& fallback) const {
    const auto v = values_(component, name);
    if (!v || v->size() != 3) return fallback.template cast<Scalar>();
    return capstan::Vec3<Scalar>((*v)[0], (*v)[1], (*v)[2]);
  }
  capstan::Mat3<Scalar> mat3(int component, const std::string& name, const capstan::Mat3<double>& fallback) const {
    const auto v = values_(component, name);
    if (!v || v->size() != 9) return fallback.template cast<Scalar>();
    capstan::Mat3<Scalar> m;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) m(r, c) = (*v)[static_cast<std::size_t>(3 * r + c)];
    return m;
  }

  // X_ab of a fixed component (FixedTranslation, FixedFrame, Weld).
  capstan::Transform<Scalar> fixedStep(int component) const {
    const std::optional<ComponentKind> kind = componentKind(model_.components.at(static_cast<std::size_t>(component)).kind);
    capstan::Transform<Scalar> X_ab;
    if (kind == ComponentKind::FixedTranslation || kind == ComponentKind::FixedFrame)
      X_ab.p = vec3(component, "r", capstan::Vec3<double>::Zero());
    if (kind == ComponentKind::FixedFrame) X_ab.R = mat3(component, "R", capstan::Mat3<double>::Identity());
    return X_ab;
  }

  // X_BF of a frame, along its path of fixed components from its body frame.
  capstan::Transform<Scalar> framePose(int frame) const {
    capstan::Transform<Scalar> X;
    for (const FixedStep& step : mech_.frames.at(static_cast<std::size_t>(frame)).path) {
      const capstan::Transform<Scalar> X_ab = fixedStep(step.component);
      X = X * (step.forward ? X_ab : X_ab.inverse());
    }
    return X;
  }

  // The merged mass properties of body `body` (an index into mech.bodies),
  // in its body frame.
  capstan::Body<Scalar> massProperties(int body) const {
    const BodyInfo& bi = mech_.bodies.at(static_cast<std::size_t>(body));
    capstan::Body<Scalar> out;
    out.name = bi.name;
    struct Part {
      Scalar m;
      capstan::Vec3<Scalar> c;  // X_BK c_k
      capstan::Mat3<Scalar> I;  // R_BK I_k R_BK^T
    };
    std::vector<Part> parts;
    for (int c : bi.bodyComponents) {
      const capstan::Transform<Scalar> X = framePose(mech_.findFrame(c, "frame_a"));
      parts.push_back({scalar(c, "mass", 0.0), X * vec3(c, "com", capstan::Vec3<double>::Zero()),
                       X.R * mat3(c, "inertia", capstan::Mat3<double>::Zero()) * X.R.transpose()});
    }
    if (parts.size() == 1) {
      out.mass = parts[0].m;
      out.p_BoBcm_B = parts[0].c;
      out.I_Bcm_B = parts[0].I;
      return out;
    }
    if (parts.empty()) return out;
    Scalar m(0.0);
    capstan::Vec3<Scalar> first = capstan::Vec3<Scalar>::Zero();
    for (const Part& p : parts) {
      m += p.m;
      first += p.c * p.m;
    }
    out.mass = m;
    out.p_BoBcm_B = first / m;
    capstan::Mat3<Scalar> I = capstan::Mat3<Scalar>::Zero();
    for (const Part& p : parts) {
      const capstan::Vec3<Scalar> d = p.c - out.p_BoBcm_B;
      I += p.I + (capstan::Mat3<Scalar>::Identity() * d.dot(d) - d * d.transpose()) * p.m;
    }
    out.I_Bcm_B = I;
    return out;
  }

 private:
  const sema::FlatModel& model_;
  const Mechanism& mech_;
  ParameterValues<Scalar> values_;
};

// The compile-time values of the flat model (FlatVariable::value).
inline ParameterValues<double> compileTimeValues(const sema::FlatModel& model) {
  return [&model](int component, const std::string& name) -> std::optional<std::vector<double>> {
    const sema::FlatComponent& c = model.components.at(static_cast<std::size_t>(component));
    const auto it = c.parameters.find(name);
    if (it == c.parameters.end() || it->second < 0) return std::nullopt;
    const sema::FlatVariable& v = model.variables.at(static_cast<std::size_t>(it->second));
    if (!v.value) return std::nullopt;
    return v.value->numbers;
  };
}

}  // namespace capstan::mechanics
