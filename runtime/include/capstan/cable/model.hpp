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
//
// Header-only by default. The path solver behind evaluateModelCable (the
// geodesics, the Newton iteration: capstan/cable/model_solve.hpp and what
// it includes) is most of the compile time of a model with cables; a
// program may compile it once instead, apart: define
// CAPSTAN_CABLE_COMPILED_APART where this header is included, and compile
// one translation unit that defines it too and includes
// capstan/cable/model_solve.hpp (`capstan simulate` caches such an object
// and links every model with cables against it).

#include <capstan/cable/types.hpp>

#ifdef CAPSTAN_CABLE_COMPILED_APART
#define CAPSTAN_CABLE_SOLVE
#else
#define CAPSTAN_CABLE_SOLVE inline
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
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
// which obstacle and why. Defined in capstan/cable/model_solve.hpp.
CAPSTAN_CABLE_SOLVE CableResult evaluateModelCable(const ModelCable& c, std::span<const Motion> frames,
                                                   std::span<const Vector3> p_BoFo_W, CablePathState& state,
                                                   ModelCableValues& values, std::span<SpatialForce> F_Bo_W,
                                                   std::span<const double> actuatorTensions = {});

// The derivatives of cable `c` at a state evaluateModelCable solved
// (`state`, `values`, with the frames, offsets and actuator tensions it was
// given), from the frames' derivatives there: the generated
// cableFrameDerivatives' rows of this cable, G, with m obstacles:
//   rows 6i .. 6i+2     d w_WF of obstacle i (rad/s), World
//   rows 6i+3 .. 6i+5   d v_WFo (m/s), World
//   row 6m + a          d tension of actuator a (N, before the clamp at 0)
// Gq's column j along q + eps N(q) e_j at fixed u, Gu's by u_j. Gu's columns
// are the frames' Jacobians too: the small rotation and the origin's
// displacement of F along q + eps N(q) e_j, and what makes a force on F a
// generalized force.
// Writes the derivatives of the cable's values, rows length (m), lengthDot
// (m/s), tension (N) and its springs' energy (J), into dvalues_dq and
// dvalues_du (4 x nu), and adds into dtau_dq and dtau_du (nu x nu) the
// change of the generalized forces of its pull, sum_B J_WB^T dF_Bo_W, with
// dF_Bo_W the change of the spatial forces evaluateModelCable adds (the
// change of J_WB at fixed F_Bo_W is the caller's: forward dynamics'
// derivatives at fixed external forces). False, and nothing written, where
// a wrap has friction (capstan/cable/sensitivity.hpp's
// calcBodyForceVariations). Defined in capstan/cable/model_solve.hpp.
CAPSTAN_CABLE_SOLVE bool evaluateModelCableDerivatives(
    const ModelCable& c, std::span<const Motion> frames, std::span<const Vector3> p_BoFo_W,
    const CablePathState& state, const ModelCableValues& values, std::span<const double> actuatorTensions,
    const Eigen::Ref<const Eigen::MatrixXd>& Gq, const Eigen::Ref<const Eigen::MatrixXd>& Gu,
    Eigen::Ref<Eigen::MatrixXd> dvalues_dq, Eigen::Ref<Eigen::MatrixXd> dvalues_du, Eigen::Ref<Eigen::MatrixXd> dtau_dq,
    Eigen::Ref<Eigen::MatrixXd> dtau_du);

// Cable c's event indicators (m) into z, returning how many: each wrapped
// surface's ObstacleState::contactIndicator (> 0 while the cable wraps it),
// in path order, then each spring's L - L0 (> 0 while taut), in the
// springs' order; NaN for all of them unless `solved` (the state and
// values are this evaluation's).
inline std::size_t eventIndicators(const ModelCable& c, const CablePathState& state, const ModelCableValues& values,
                                   bool solved, std::span<double> z) {
  std::size_t k = 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < c.path.obstacles.size(); ++i)
    if (c.path.obstacles[i].kind == ObstacleKind::Surface)
      z[k++] = solved && i < state.obstacles.size() ? state.obstacles[i].contactIndicator : nan;
  for (const ModelCableSpring& s : c.springs) z[k++] = solved ? values.length - s.slackLength : nan;
  return k;
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

#ifndef CAPSTAN_CABLE_COMPILED_APART
#include <capstan/cable/model_solve.hpp>
#endif
