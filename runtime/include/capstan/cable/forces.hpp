#pragma once
// What a solved cable does to the frames it touches, at a given tension.
//
// Tension. `tension` (N) is the tension of the first straight segment, at
// the origin. Without friction every segment carries it. A wrap with
// capstan friction mu and wrap angle theta (the turning of the cable over
// it, the integral of the normal curvature) changes it from the segment
// before to the segment after by
//   T_out = T_in exp(-mu theta sigma(v)),  sigma(v) = v / sqrt(v^2 + v_s^2),
// v the slip of the cable over the surface towards the origin (m/s),
//   v = 1/2 (Ldot(O..P) - Ldot(Q..T)),
// the rates of the path lengths before P and after Q (sums of segment
// rates): positive when the origin side lengthens and the termination side
// shortens, so the cable slides towards O and the origin side pulls
// (T_in > T_out). sigma is the sign smoothed over the slip velocity
// v_s = options.frictionSlipVelocity: at zero slip no friction acts, at
// |v| >> v_s the full factor e^(-+mu theta) (the capstan equation).
//
// Forces. A straight segment from A (exit point of obstacle a) to B (entry
// point of obstacle b) with unit direction e and tension T pulls A's frame
// by +T e at A and B's frame by -T e at B. A wrapped surface therefore gets
// -T_in e_in at P and +T_out e_out at Q, the resultant of the pressure and
// friction of the cable over it (the massless cable between P and Q is in
// equilibrium). Spatial forces are [torque; force] about each frame's origin,
// in World. The forces and moments of all frames sum to zero about any point.
//
// Power. The forces' power on the frames is -sum_k T_k Ldot_k (segment
// rates with material-point velocities); without friction -T Ldot.

#include <capstan/cable/types.hpp>

#include <algorithm>
#include <cmath>
#include <span>

namespace capstan::cable {

namespace detail {

// Calls f(k, T_k) for every segment k in order.
template <class F> void forEachSegmentTension(const CablePath& path, const CablePathState& st, double tension, F&& f) {
  double total = 0;
  for (const Segment& s : st.segments) total += s.lengthDot;
  double before = 0, T = tension;
  for (std::size_t k = 0; k < st.segments.size(); ++k) {
    const Segment& s = st.segments[k];
    if (k > 0) {
      const Obstacle& o = path.obstacles[static_cast<std::size_t>(s.from)];
      if (o.kind == ObstacleKind::Surface && o.friction > 0) {
        const double slip = 0.5 * (before - (total - before));
        const double vs = path.options.frictionSlipVelocity;
        const double sigma = slip / std::sqrt(slip * slip + vs * vs);
        T *= std::exp(-o.friction * st.obstacles[static_cast<std::size_t>(s.from)].wrapAngle * sigma);
      }
    }
    f(k, T);
    before += s.lengthDot;
  }
}

}  // namespace detail

// Tension (N) of every straight segment, origin first, for `tension` at the
// origin. `out` must have st.segments.size() entries.
inline void calcSegmentTensions(const CablePath& path, const CablePathState& st, double tension,
                                std::span<double> out) {
  detail::forEachSegmentTension(path, st, tension, [&](std::size_t k, double T) { out[k] = T; });
}

// Adds the cable's spatial forces F_Fo_W (about each obstacle frame's
// origin, World) into F_Fo_W[i], i = 0..m+1. Nothing when tension <= 0
// (slack). Needs a solved state.
inline void applyBodyForces(const CablePath& path, const CablePathState& st, double tension,
                            std::span<const Motion> frames, std::span<SpatialForce> F_Fo_W) {
  if (!(tension > 0)) return;
  detail::forEachSegmentTension(path, st, tension, [&](std::size_t k, double T) {
    const Segment& s = st.segments[k];
    const Vector3 f = T * s.e_W;  // on `from` at its exit point; -f on `to` at its entry point
    const auto a = static_cast<std::size_t>(s.from), b = static_cast<std::size_t>(s.to);
    const Vector3 A = st.obstacles[a].Q.p_W, B = st.obstacles[b].P.p_W;
    F_Fo_W[a].head<3>() += (A - frames[a].p_WF).cross(f);
    F_Fo_W[a].tail<3>() += f;
    F_Fo_W[b].head<3>() -= (B - frames[b].p_WF).cross(f);
    F_Fo_W[b].tail<3>() -= f;
  });
}

// Power (W) the cable's forces deliver to the frames: -sum_k T_k Ldot_k
// (-tension * lengthDot without friction). Negative while the cable
// lengthens under tension. 0 when slack.
inline double calcCablePower(const CablePath& path, const CablePathState& st, double tension) {
  if (!(tension > 0)) return 0;
  double power = 0;
  detail::forEachSegmentTension(path, st, tension,
                                [&](std::size_t k, double T) { power -= T * st.segments[k].lengthDot; });
  return power;
}

// Simbody's CableSpring (SPEC section 4): with x = max(0, L - L0), xdot = Ldot,
//   f_stretch = k x,  f_rate = max(-f_stretch, f_stretch c xdot),
//   tension = f_stretch + f_rate = k x (1 + c xdot) clamped at 0,
//   energy = 1/2 k x^2,  powerLoss = f_rate xdot (>= 0).
// k in N/m, L0 in m, c in s/m.
inline CableSpringForce cableSpring(double length, double lengthDot, double stiffness, double slackLength,
                                    double dissipation) {
  CableSpringForce out;
  out.stretch = std::max(0.0, length - slackLength);
  const double fStretch = stiffness * out.stretch;
  const double fRate = std::max(-fStretch, fStretch * dissipation * lengthDot);
  out.tension = fStretch + fRate;
  out.energy = 0.5 * stiffness * out.stretch * out.stretch;
  out.powerLoss = fRate * lengthDot;
  return out;
}

// cableSpring's tension and energy changed by dLength and dLengthDot (its
// first-order change; at a kink, L = L0 or f_rate = -f_stretch, the side
// cableSpring takes there: slack, and the undamped side of the clamp):
//   d f_stretch = k dL (x > 0),  d f_rate = c (d f_stretch xdot + f_stretch d xdot),
//   dE = k x dL.
struct CableSpringVariation {
  double tension = 0;  // N
  double energy = 0;   // J
};
inline CableSpringVariation cableSpringVariation(double length, double lengthDot, double stiffness,
                                                 double slackLength, double dissipation, double dLength,
                                                 double dLengthDot) {
  CableSpringVariation out;
  const double stretch = std::max(0.0, length - slackLength);
  if (!(stretch > 0)) return out;
  const double fStretch = stiffness * stretch, dStretch = stiffness * dLength;
  const bool damped = fStretch * dissipation * lengthDot > -fStretch;
  const double dRate = damped ? dissipation * (dStretch * lengthDot + fStretch * dLengthDot) : -dStretch;
  out.tension = dStretch + dRate;
  out.energy = fStretch * dLength;
  return out;
}

}  // namespace capstan::cable
