#pragma once
// How a solved cable path and its forces change along a motion of the
// obstacle frames: the pieces of a cable model's exact derivatives.
//
//   calcContactPointRates   each contact point's rate: material motion
//                           plus sliding over its surface
//   calcLengthAcceleration  d^2 L / dt^2 for the frames' accelerations
//   calcBodyForceRates      the rate of the spatial forces applyBodyForces
//                           gives, for the tension's rate (no friction)
//
// Frames, points and units as in capstan/cable/types.hpp; every rate is in
// World, with the frames' velocities in frames[i] (w_WF, v_WF: v of the
// frame's origin) and, where asked, their accelerations alpha[i] = dw/dt
// and a[i] = dv/dt of the origin. `st` must hold the path solved at these
// frames' poses (updateCablePath succeeded).

#include <capstan/cable/forces.hpp>
#include <capstan/cable/path.hpp>
#include <capstan/cable/types.hpp>

#include <limits>
#include <span>
#include <vector>

namespace capstan::cable {

// The rates of the solved path's contact points, in World, for the
// frames' velocities (frames[i].w_WF, v_WF): each active obstacle's P and
// Q move with their frame and, over a surface, slide as the path re-solves.
// The sliding is the path's sensitivity: at a solved path the tangency
// residual r(x, frames) = 0 (x: each active wrap's natural variations),
// and at fixed x r changes with the frames only through the segments'
// ends, so
//   rdot_frames = d/dt (e . n) at fixed x,  e = (P - A) / l,
//   edot = (I - e e') (Pdot - Adot) / l with material velocities,
//   ndot = w_WS x n (n fixed in S),
// and xdot = -r_x^-1 rdot_frames (r_x: evalJacobian, the Newton system's
// Jacobian); P moves by R_WS dP xdot besides its material velocity. The
// first brick of exact derivatives of a cable's forces. `st` must hold a
// solved path (updateCablePath succeeded at these frames' poses).
// pDot[i], qDot[i]: obstacle i's; zero for inactive surfaces.
inline void calcContactPointRates(const CablePath& path, std::span<const Motion> frames, const CablePathState& st,
                                  std::vector<Vector3>& pDot, std::vector<Vector3>& qDot) {
  using namespace detail;
  const auto m = static_cast<std::size_t>(path.numObstacles());
  pDot.assign(m, Vector3::Zero());
  qDot.assign(m, Vector3::Zero());
  std::vector<int> active;
  collectActive(path, st, active);
  const PathView v{path, frames, active};
  for (const int i : active) {
    const auto k = static_cast<std::size_t>(i);
    pDot[k] = materialVelocity(v.frame(i), v.entry(i, st.wraps));
    qDot[k] = materialVelocity(v.frame(i), v.exit(i, st.wraps));
  }
  const std::vector<int> blocks = surfaceBlocks(v);
  if (blocks.empty()) return;
  Eigen::MatrixXd J;
  evalJacobian(v, blocks, st.wraps, J);
  Eigen::VectorXd rdot(J.rows());
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto a = static_cast<std::size_t>(blocks[b]);
    const int i = active[a], before = active[a - 1], after = active[a + 1];
    const WrapGeodesic& w = st.wraps[static_cast<std::size_t>(i)];
    const SurfacePose X = surfacePose(v.obstacle(i), v.frame(i));
    const BlockSegments g = blockSegments(v, a, st.wraps, X);
    const Vector3& omega = v.frame(i).w_WF;
    const double lIn = g.in.norm(), lOut = g.out.norm();
    const Vector3 eIn = g.in / lIn, eOut = g.out / lOut;
    const Vector3 aDot = qDot[static_cast<std::size_t>(before)], bDot = pDot[static_cast<std::size_t>(after)];
    const Vector3 eInDot = (pDot[static_cast<std::size_t>(i)] - aDot - eIn * eIn.dot(pDot[static_cast<std::size_t>(i)] - aDot)) / lIn;
    const Vector3 eOutDot = (bDot - qDot[static_cast<std::size_t>(i)] - eOut * eOut.dot(bDot - qDot[static_cast<std::size_t>(i)])) / lOut;
    const Vector3 nP = X.R_WS * w.nP, bP = X.R_WS * w.bP, nQ = X.R_WS * w.nQ, bQ = X.R_WS * w.bQ;
    rdot.segment<4>(4 * static_cast<Eigen::Index>(b)) << eInDot.dot(nP) + eIn.dot(omega.cross(nP)),
        eInDot.dot(bP) + eIn.dot(omega.cross(bP)), eOutDot.dot(nQ) + eOut.dot(omega.cross(nQ)),
        eOutDot.dot(bQ) + eOut.dot(omega.cross(bQ));
  }
  Eigen::VectorXd xdot = -rdot;
  if (!solveLinearInPlace(J, xdot)) xdot.setConstant(std::numeric_limits<double>::quiet_NaN());  // singular: no rates
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const int i = active[static_cast<std::size_t>(blocks[b])];
    const auto k = static_cast<std::size_t>(i);
    const SurfacePose X = surfacePose(v.obstacle(i), v.frame(i));
    const WrapVariation d = visitSurface(v.obstacle(i), [&](const auto& s) { return calcWrapVariation(s, st.wraps[k]); });
    const Eigen::Vector4d dx = xdot.segment<4>(4 * static_cast<Eigen::Index>(b));
    pDot[k] += X.R_WS * (d.dP * dx);
    qDot[k] += X.R_WS * (d.dQ * dx);
  }
}

// d^2 L / dt^2: the derivative of L' = sum over segments e . (vB - vA),
// with vA the material velocity at the contact point A of its frame:
//   L'' = sum e' . (vB - vA) + e . (vB' - vA'),
//   e' = (I - e e') (B' - A') / l,
//   vA' = a + alpha x (A - p_F) + w x (A' - v_F),
// A' the contact point's whole rate (calcContactPointRates).
inline double calcLengthAcceleration(const CablePath& path, std::span<const Motion> frames, const CablePathState& st,
                                     std::span<const Vector3> alpha, std::span<const Vector3> a) {
  std::vector<Vector3> pDot, qDot;
  calcContactPointRates(path, frames, st, pDot, qDot);
  double Ldd = 0;
  for (const Segment& s : st.segments) {
    const auto from = static_cast<std::size_t>(s.from), to = static_cast<std::size_t>(s.to);
    const Vector3 A = st.obstacles[from].Q.p_W, B = st.obstacles[to].P.p_W;
    const Motion &FA = frames[from], &FB = frames[to];
    const Vector3 vA = detail::materialVelocity(FA, A), vB = detail::materialVelocity(FB, B);
    const Vector3 d = pDot[to] - qDot[from];
    const Vector3 eDot = (d - s.e_W * s.e_W.dot(d)) / s.length;
    const Vector3 vADot = a[from] + alpha[from].cross(A - FA.p_WF) + FA.w_WF.cross(qDot[from] - FA.v_WF);
    const Vector3 vBDot = a[to] + alpha[to].cross(B - FB.p_WF) + FB.w_WF.cross(pDot[to] - FB.v_WF);
    Ldd += eDot.dot(vB - vA) + s.e_W.dot(vBDot - vADot);
  }
  return Ldd;
}

// The rate of the spatial forces applyBodyForces adds (F_Fo_W, about each
// frame's origin, World) for the tension T and its rate Tdot, added into
// FDot: per segment f = T e on `from` at A and -f on `to` at B, so
//   f' = T' e + T e',  (A - p_F) x f rates to (A' - v_F) x f + (A - p_F) x f'.
// Without friction only (every segment carries T): false, and FDot
// unchanged, if a wrap has friction. Nothing when T <= 0 (slack).
inline bool calcBodyForceRates(const CablePath& path, std::span<const Motion> frames, const CablePathState& st,
                               double tension, double tensionDot, std::span<SpatialForce> FDot) {
  for (const Obstacle& o : path.obstacles)
    if (o.kind == ObstacleKind::Surface && o.friction > 0) return false;
  if (!(tension > 0)) return true;
  std::vector<Vector3> pDot, qDot;
  calcContactPointRates(path, frames, st, pDot, qDot);
  for (const Segment& s : st.segments) {
    const auto from = static_cast<std::size_t>(s.from), to = static_cast<std::size_t>(s.to);
    const Vector3 A = st.obstacles[from].Q.p_W, B = st.obstacles[to].P.p_W;
    const Vector3 d = pDot[to] - qDot[from];
    const Vector3 eDot = (d - s.e_W * s.e_W.dot(d)) / s.length;
    const Vector3 f = tension * s.e_W, fDot = tensionDot * s.e_W + tension * eDot;
    FDot[from].head<3>() += (qDot[from] - frames[from].v_WF).cross(f) + (A - frames[from].p_WF).cross(fDot);
    FDot[from].tail<3>() += fDot;
    FDot[to].head<3>() -= (pDot[to] - frames[to].v_WF).cross(f) + (B - frames[to].p_WF).cross(fDot);
    FDot[to].tail<3>() -= fDot;
  }
  return true;
}

}  // namespace capstan::cable
