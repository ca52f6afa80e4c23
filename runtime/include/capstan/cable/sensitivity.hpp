#pragma once
// How a solved cable path and its forces change with the obstacle frames:
// the pieces of a cable model's exact derivatives.
//
// A FrameVariation of each frame F says how it changes: its pose by the
// small rotation `rotation` and the origin displacement `origin`, its
// velocities (frames[i].w_WF, v_WF) by `angularVelocity` and `velocity`,
// all in World. Along a motion in time these are the frame's w, v, dw/dt
// and dv/dt; for a derivative by a generalized coordinate at fixed speeds,
// the frame's Jacobian columns and the change of its velocities.
//
//   calcContactPointVariations  each contact point's change: its frame's
//                               material motion plus its sliding over the
//                               surface as the path re-solves
//   calcLengthVariation         dL (the first variation: sliding cancels)
//   calcLengthRateVariation     d(L') with L' = sum e . (vB - vA), the
//                               material velocities at the contact points
//   calcBodyForceVariations     the change of applyBodyForces' spatial
//                               forces for the tension's change (no friction)
//
// Units and frames as in capstan/cable/types.hpp. `st` must hold the path
// solved at these frames (updateCablePath succeeded).

#include <capstan/cable/forces.hpp>
#include <capstan/cable/path.hpp>
#include <capstan/cable/types.hpp>

#include <limits>
#include <span>
#include <vector>

namespace capstan::cable {

struct FrameVariation {
  Vector3 rotation = Vector3::Zero();         // rad: the pose's small rotation, World
  Vector3 origin = Vector3::Zero();           // m: the origin's displacement
  Vector3 angularVelocity = Vector3::Zero();  // rad/s: the change of w_WF
  Vector3 velocity = Vector3::Zero();         // m/s: the change of v_WF (the origin's)
};

namespace detail {
// The change of a point fixed in frame F (at p, World) when F's pose varies by d.
inline Vector3 materialVariation(const Motion& F, const FrameVariation& d, const Vector3& p) {
  return d.origin + d.rotation.cross(p - F.p_WF);
}
}  // namespace detail

// Each active obstacle's contact points' changes dP[i], dQ[i] (zero for
// inactive surfaces). At a solved path the tangency residual r(x, frames)
// = 0 (x: each active wrap's natural variations); at fixed x, r changes
// with the frames only through the segments' ends:
//   d(e . n) = de . n + e . (theta x n),  de = (I - e e') (dP - dA) / l,
// n fixed in the surface's frame, which turns by theta; so
// dx = -r_x^-1 dr, r_x the Newton system's Jacobian (evalJacobian), and P
// moves by R_WS dP_dx dx besides its material change. What depends on the
// solved path alone (r_x, each wrap's dP_dx and dQ_dx) is built once, for
// any number of variations (a derivative's columns).
class ContactPointSensitivity {
 public:
  ContactPointSensitivity(const CablePath& path, std::span<const Motion> frames, const CablePathState& st)
      : st_(st), active_(activeOf(path, st)), view_{path, frames, active_}, blocks_(surfaceBlocks(view_)) {
    if (blocks_.empty()) return;
    evalJacobian(view_, blocks_, st.wraps, J_);
    for (const int a : blocks_) {
      const int i = active_[static_cast<std::size_t>(a)];
      wraps_.push_back(detail::visitSurface(view_.obstacle(i),
                                    [&](const auto& s) { return calcWrapVariation(s, st.wraps[static_cast<std::size_t>(i)]); }));
    }
  }

  void apply(std::span<const FrameVariation> d, std::vector<Vector3>& dP, std::vector<Vector3>& dQ) const {
    using namespace detail;
    const auto m = static_cast<std::size_t>(view_.path.numObstacles());
    dP.assign(m, Vector3::Zero());
    dQ.assign(m, Vector3::Zero());
    for (const int i : active_) {
      const auto k = static_cast<std::size_t>(i);
      dP[k] = materialVariation(view_.frame(i), d[k], view_.entry(i, st_.wraps));
      dQ[k] = materialVariation(view_.frame(i), d[k], view_.exit(i, st_.wraps));
    }
    if (blocks_.empty()) return;
    Eigen::VectorXd dr(J_.rows());
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const auto a = static_cast<std::size_t>(blocks_[b]);
      const auto i = static_cast<std::size_t>(active_[a]);
      const auto before = static_cast<std::size_t>(active_[a - 1]), after = static_cast<std::size_t>(active_[a + 1]);
      const WrapGeodesic& w = st_.wraps[i];
      const SurfacePose X = surfacePose(view_.obstacle(active_[a]), view_.frame(active_[a]));
      const BlockSegments g = blockSegments(view_, a, st_.wraps, X);
      const Vector3& theta = d[i].rotation;
      const double lIn = g.in.norm(), lOut = g.out.norm();
      const Vector3 eIn = g.in / lIn, eOut = g.out / lOut;
      const Vector3 in = dP[i] - dQ[before], out = dP[after] - dQ[i];
      const Vector3 deIn = (in - eIn * eIn.dot(in)) / lIn, deOut = (out - eOut * eOut.dot(out)) / lOut;
      const Vector3 nP = X.R_WS * w.nP, bP = X.R_WS * w.bP, nQ = X.R_WS * w.nQ, bQ = X.R_WS * w.bQ;
      dr.segment<4>(4 * static_cast<Eigen::Index>(b)) << deIn.dot(nP) + eIn.dot(theta.cross(nP)),
          deIn.dot(bP) + eIn.dot(theta.cross(bP)), deOut.dot(nQ) + eOut.dot(theta.cross(nQ)),
          deOut.dot(bQ) + eOut.dot(theta.cross(bQ));
    }
    Eigen::VectorXd dx = -dr;
    Eigen::MatrixXd J = J_;  // solved in place: a copy per variation (4 rows per wrap)
    if (!solveLinearInPlace(J, dx)) dx.setConstant(std::numeric_limits<double>::quiet_NaN());  // singular: no variation
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const int i = active_[static_cast<std::size_t>(blocks_[b])];
      const auto k = static_cast<std::size_t>(i);
      const SurfacePose X = surfacePose(view_.obstacle(i), view_.frame(i));
      const Eigen::Vector4d step = dx.segment<4>(4 * static_cast<Eigen::Index>(b));
      dP[k] += X.R_WS * (wraps_[b].dP * step);
      dQ[k] += X.R_WS * (wraps_[b].dQ * step);
    }
  }

 private:
  static std::vector<int> activeOf(const CablePath& path, const CablePathState& st) {
    std::vector<int> active;
    detail::collectActive(path, st, active);
    return active;
  }
  const CablePathState& st_;
  const std::vector<int> active_;
  const detail::PathView view_;
  const std::vector<int> blocks_;
  Eigen::MatrixXd J_;
  std::vector<WrapVariation> wraps_;  // per block
};

inline void calcContactPointVariations(const CablePath& path, std::span<const Motion> frames, const CablePathState& st,
                                       std::span<const FrameVariation> d, std::vector<Vector3>& dP,
                                       std::vector<Vector3>& dQ) {
  ContactPointSensitivity(path, frames, st).apply(d, dP, dQ);
}

// dL = sum over segments e . (dB - dA) with the contact points' material
// changes (the first variation: their sliding changes the geodesics'
// lengths by as much as the segments', with the opposite sign).
inline double calcLengthVariation(std::span<const Motion> frames, const CablePathState& st,
                                  std::span<const FrameVariation> d) {
  double dL = 0;
  for (const Segment& s : st.segments) {
    const auto from = static_cast<std::size_t>(s.from), to = static_cast<std::size_t>(s.to);
    dL += s.e_W.dot(detail::materialVariation(frames[to], d[to], st.obstacles[to].P.p_W) -
                    detail::materialVariation(frames[from], d[from], st.obstacles[from].Q.p_W));
  }
  return dL;
}

// d(L'): L' = sum e . (vB - vA), vA the material velocity of A's frame at
// the contact point A (which slides), so
//   d(L') = sum de . (vB - vA) + e . (dvB - dvA),
//   dvA = dv_F + dw_F x (A - p_F) + w_F x (dA - dp_F),
// dA the contact point's whole change (calcContactPointVariations, given as
// dP and dQ by a caller that has them).
inline double calcLengthRateVariation(std::span<const Motion> frames, const CablePathState& st,
                                      std::span<const FrameVariation> d, const std::vector<Vector3>& dP,
                                      const std::vector<Vector3>& dQ) {
  const auto velocityChange = [&](std::size_t i, const Vector3& p, const Vector3& dp) {
    const Motion& F = frames[i];
    return Vector3(d[i].velocity + d[i].angularVelocity.cross(p - F.p_WF) + F.w_WF.cross(dp - d[i].origin));
  };
  double dLdot = 0;
  for (const Segment& s : st.segments) {
    const auto from = static_cast<std::size_t>(s.from), to = static_cast<std::size_t>(s.to);
    const Vector3 A = st.obstacles[from].Q.p_W, B = st.obstacles[to].P.p_W;
    const Vector3 vA = detail::materialVelocity(frames[from], A), vB = detail::materialVelocity(frames[to], B);
    const Vector3 moved = dP[to] - dQ[from];
    const Vector3 de = (moved - s.e_W * s.e_W.dot(moved)) / s.length;
    dLdot += de.dot(vB - vA) + s.e_W.dot(velocityChange(to, B, dP[to]) - velocityChange(from, A, dQ[from]));
  }
  return dLdot;
}
inline double calcLengthRateVariation(const CablePath& path, std::span<const Motion> frames, const CablePathState& st,
                                      std::span<const FrameVariation> d) {
  std::vector<Vector3> dP, dQ;
  calcContactPointVariations(path, frames, st, d, dP, dQ);
  return calcLengthRateVariation(frames, st, d, dP, dQ);
}

// The change of the spatial forces applyBodyForces adds (F_Fo_W, about
// each frame's origin, World) for the tension T and its change dT, added
// into dF: per segment f = T e on `from` at A and -f on `to` at B, so
//   df = dT e + T de,  d((A - p_F) x f) = (dA - dp_F) x f + (A - p_F) x df.
// Without friction only (every segment carries T): false, and dF
// unchanged, if a wrap has friction. Nothing when T <= 0 (slack). dP, dQ:
// the contact points' changes (calcContactPointVariations).
inline void calcBodyForceVariations(std::span<const Motion> frames, const CablePathState& st,
                                    std::span<const FrameVariation> d, double tension, double dTension,
                                    const std::vector<Vector3>& dP, const std::vector<Vector3>& dQ,
                                    std::span<SpatialForce> dF) {
  if (!(tension > 0)) return;
  for (const Segment& s : st.segments) {
    const auto from = static_cast<std::size_t>(s.from), to = static_cast<std::size_t>(s.to);
    const Vector3 A = st.obstacles[from].Q.p_W, B = st.obstacles[to].P.p_W;
    const Vector3 moved = dP[to] - dQ[from];
    const Vector3 de = (moved - s.e_W * s.e_W.dot(moved)) / s.length;
    const Vector3 f = tension * s.e_W, df = dTension * s.e_W + tension * de;
    dF[from].head<3>() += (dQ[from] - d[from].origin).cross(f) + (A - frames[from].p_WF).cross(df);
    dF[from].tail<3>() += df;
    dF[to].head<3>() -= (dP[to] - d[to].origin).cross(f) + (B - frames[to].p_WF).cross(df);
    dF[to].tail<3>() -= df;
  }
}
inline bool calcBodyForceVariations(const CablePath& path, std::span<const Motion> frames, const CablePathState& st,
                                    std::span<const FrameVariation> d, double tension, double dTension,
                                    std::span<SpatialForce> dF) {
  if (hasFriction(path)) return false;
  std::vector<Vector3> dP, dQ;
  if (tension > 0) calcContactPointVariations(path, frames, st, d, dP, dQ);
  calcBodyForceVariations(frames, st, d, tension, dTension, dP, dQ, dF);
  return true;
}

}  // namespace capstan::cable
