#pragma once
// A model's cables as the generated code and the interpreter use them: the
// one step from the obstacle frames the kinematics computed to the solved
// paths, the cable springs' tensions and the spatial forces on the bodies.
//
// Frames and points (docs/notation.md):
//   W    World.
//   B    the body an obstacle frame is fixed to (World for a fixed one).
//   F    an obstacle's frame: the cable's frame_a (O) and frame_b (T), a
//        ViaPoint's frame_a, a wrapped surface's frame_a; the obstacle's
//        point or surface sits at Fo with S = F (capstan::geometry's frame).
// Per obstacle the caller gives the motion of F (R_WF, p_WoFo_W, w_WF,
// v_WFo_W) and p_BoFo_W, the offset of Fo from the body origin in World;
// the cable's forces then go to F_Bo_W = [n + p_BoFo_W x f; f] of B.
//
// The path is solved by continuation (updateCablePath) from the state of
// the previous call: a caller that evaluates the dynamics along a trajectory
// keeps one ModelCableState per cable for the whole run (Simbody's
// CablePath keeps its previous solution the same way).

#include <capstan/cable/forces.hpp>
#include <capstan/cable/path.hpp>
#include <capstan/cable/types.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace capstan::cable {

// A cable spring (SPEC section 4 `CableSpring`) on a cable.
struct ModelCableSpring {
  double stiffness = 0;    // k, N/m
  double slackLength = 0;  // L0, m
  double dissipation = 0;  // c, s/m
};

// One cable of a model: the constant path (end and via points at their
// frames' origins, surfaces centered there) and what pulls on it.
struct ModelCable {
  CablePath path;
  std::vector<int> body;  // per obstacle (Simbody's numbering): the runtime body of F, -1 for World
  std::vector<ModelCableSpring> springs;
};

// A near point of all zeros is "no hint" (the stdlib's `Wrap.near` default).
inline std::optional<Vector3> nearHint(const Vector3& near_S) {
  if (near_S.isZero(0.0)) return std::nullopt;
  return near_S;
}

// What one evaluation found for a cable (eval's "cables", the CSV columns).
struct ModelCableValues {
  double length = 0;     // m
  double lengthDot = 0;  // m/s
  double tension = 0;    // N, its springs' and actuators' tensions together (>= 0)
  double energy = 0;     // J, its springs' elastic energy
  double power = 0;      // W, the power its tension delivers to the bodies (-tension * lengthDot)
};

// Solves cable `c`'s path at the frames (continuation from `state`),
// computes its tension, its springs' plus its actuators' (each actuator's
// given tension clamped at 0: a cable pulls, it cannot push; a NaN stays
// NaN, for the caller's check of the dynamics to report), and adds its
// spatial forces about the body origins into F_Bo_W (one per runtime body;
// World's are dropped). On a failure nothing is added and the result says
// which obstacle and why.
inline CableResult evaluateModelCable(const ModelCable& c, std::span<const Motion> frames,
                                      std::span<const Vector3> p_BoFo_W, CablePathState& state,
                                      ModelCableValues& values, std::span<SpatialForce> F_Bo_W,
                                      std::span<const double> actuatorTensions = {}) {
  values = ModelCableValues{};
  const CableResult r = updateCablePath(c.path, frames, state);
  if (!r.ok()) return r;
  values.length = state.length;
  values.lengthDot = state.lengthDot;
  for (const ModelCableSpring& s : c.springs) {
    const CableSpringForce f =
        cableSpring(state.length, state.lengthDot, s.stiffness, s.slackLength, s.dissipation);
    values.tension += f.tension;
    values.energy += f.energy;
  }
  for (const double T : actuatorTensions) values.tension += T < 0 ? 0.0 : T;
  values.power = calcCablePower(c.path, state, values.tension);
  if (values.tension == 0) return r;
  if (!std::isfinite(values.tension)) {  // the bodies it touches get NaN: the dynamics are not finite
    for (const int b : c.body)
      if (b >= 0) F_Bo_W[static_cast<std::size_t>(b)].setConstant(values.tension);
    return r;
  }
  // F_Fo_W at each obstacle frame's origin, then shifted to its body's origin.
  SpatialForce F_Fo_W[64];
  std::vector<SpatialForce> many;
  const auto n = static_cast<std::size_t>(c.path.numObstacles());
  std::span<SpatialForce> at(F_Fo_W, std::min<std::size_t>(n, 64));
  if (n > 64) {
    many.assign(n, SpatialForce::Zero());
    at = many;
  }
  for (SpatialForce& F : at) F.setZero();
  applyBodyForces(c.path, state, values.tension, frames, at);
  for (std::size_t i = 0; i < n; ++i) {
    const int b = c.body[i];
    if (b < 0) continue;
    SpatialForce& F = F_Bo_W[static_cast<std::size_t>(b)];
    F.head<3>() += at[i].head<3>() + p_BoFo_W[i].cross(Vector3(at[i].tail<3>()));
    F.tail<3>() += at[i].tail<3>();
  }
  return r;
}

// "cable `rope` at t = 1.25: <the solver's message>", with the obstacle
// named by its model element where the caller knows it. The solver's
// message gives the residual where there is one (no convergence).
inline std::string cableFailureMessage(std::string_view cable, double t, const CableResult& r,
                                       std::span<const std::string_view> obstacleNames = {}) {
  char time[48];
  std::snprintf(time, sizeof time, "%.17g", t);
  std::string out = "cable `" + std::string(cable) + "` at t = " + time + ": " + r.message();
  if (r.obstacle >= 0 && static_cast<std::size_t>(r.obstacle) < obstacleNames.size())
    out += " (obstacle " + std::to_string(r.obstacle) + " is `" +
           std::string(obstacleNames[static_cast<std::size_t>(r.obstacle)]) + "`)";
  return out;
}

}  // namespace capstan::cable
