#pragma once
// Cable path entry points: the initial path and its continuation.
//
//   solveForInitialCablePath(path, frames, state)
//       decides which surfaces the cable wraps, in path order: a surface
//       whose straight segment (between the obstacles decided so far)
//       penetrates it is wrapped on the side that gives the shortest path
//       (candidates start at the segment's deepest point and on the opposite
//       side); a surface with a `near` point is wrapped on whichever
//       candidate (or the straight segment) runs closest to it, which also
//       loops a cable round a pulley the straight line misses. Candidates
//       passing a conjugate point (longest geodesics) are discarded. Then
//       liftoff and touchdown settle the set.
//   updateCablePath(path, frames, state)
//       continuation from the previous solution (the first call solves the
//       initial path): Newton from the previous geodesics, which stay valid
//       in their surface frames; liftoff when a wrap's length turns
//       negative; touchdown when a straight segment penetrates a surface,
//       tracked with the segment's closest point. Never switches sides.
//       The first Newton step adds the higher-order term extrapolated from
//       the previous updates (CableContinuation), so that on a smooth motion
//       the next step is small enough to finish through the Jacobi fields:
//       one shot per wrapped surface per update.
//
// frames[i] is the motion (World) of the frame obstacle i is fixed in,
// i = 0 (O) .. m+1 (T). Both return a CableResult; on success the state
// holds the solved path, its length and its length rate.

#include <capstan/cable/solver.hpp>
#include <capstan/cable/types.hpp>
#include <capstan/cable/wrap.hpp>

#include <cmath>
#include <span>

namespace capstan::cable {

namespace detail {

inline CableResult validate(const CablePath& path, std::span<const Motion> frames) {
  CableResult res;
  if (path.numObstacles() < 2 || path.obstacles.front().kind != ObstacleKind::EndPoint ||
      path.obstacles.back().kind != ObstacleKind::EndPoint) {
    res.status = CableStatus::InvalidInput;
    return res;
  }
  if (static_cast<int>(frames.size()) != path.numObstacles()) {
    res.status = CableStatus::InvalidInput;
    res.obstacle = std::min(static_cast<int>(frames.size()), path.numObstacles() - 1);
    return res;
  }
  for (int i = 0; i < path.numObstacles(); ++i) {
    const Motion& F = frames[static_cast<std::size_t>(i)];
    const Obstacle& o = path.obstacles[static_cast<std::size_t>(i)];
    if (!F.R_WF.allFinite() || !F.p_WF.allFinite() || !F.w_WF.allFinite() || !F.v_WF.allFinite() ||
        !o.p_FP.allFinite() || !o.R_FS.allFinite() || !o.p_FS.allFinite() || !(lengthScale(o.surface) > 0) ||
        !(o.friction >= 0)) {
      res.status = CableStatus::InvalidInput;
      res.obstacle = i;
      return res;
    }
  }
  return res;
}

inline void collectActive(const CablePath& path, const CablePathState& st, std::vector<int>& active) {
  active.clear();
  for (int i = 0; i < path.numObstacles(); ++i)
    if (path.obstacles[static_cast<std::size_t>(i)].kind != ObstacleKind::Surface ||
        st.obstacles[static_cast<std::size_t>(i)].active)
      active.push_back(i);
}

// The active obstacles just before and after obstacle i.
inline std::pair<int, int> neighbours(const std::vector<int>& active, int i) {
  int before = active.front(), after = active.back();
  for (const int a : active) {
    if (a < i) before = a;
    if (a > i) {
      after = a;
      break;
    }
  }
  return {before, after};
}

inline void accumulate(CableResult& into, const CableResult& from) {
  into.iterations += from.iterations;
  into.shots += from.shots;
}

// Newton on the current active set, then liftoff (a wrap of negative length
// leaves its surface) and touchdown (a straight segment penetrating a
// surface wraps it, starting as a zero-length geodesic at the deepest
// point), until the set no longer changes.
// With `cont`, Newton uses and renews the continuation's higher-order term.
inline CableResult settleActiveSet(const CablePath& path, std::span<const Motion> frames, CablePathState& st,
                                   const NewtonLimits& lim, CableContinuation* cont = nullptr) {
  CableResult total;
  const int rounds = 2 * path.numObstacles() + 2;
  for (int round = 0; round < rounds; ++round) {
    collectActive(path, st, st.active);
    const PathView v{path, frames, st.active};
    const CableResult r = solveTangency(v, st.wraps, lim, st.newton, cont);
    accumulate(total, r);
    if (!r.ok()) {
      CableResult out = r;
      out.iterations = total.iterations;
      out.shots = total.shots;
      return out;
    }
    total.residual = r.residual;
    bool changed = false;
    for (const int i : st.active) {
      auto& o = st.obstacles[static_cast<std::size_t>(i)];
      const WrapGeodesic& w = st.wraps[static_cast<std::size_t>(i)];
      if (v.isSurface(i) && w.length < 0) {
        o.active = false;
        o.p_SC = w.P;
        o.tracked = true;
        changed = true;
      }
    }
    if (changed) continue;
    for (int i = 1; i + 1 < path.numObstacles(); ++i) {
      const Obstacle& obs = path.obstacles[static_cast<std::size_t>(i)];
      auto& o = st.obstacles[static_cast<std::size_t>(i)];
      if (obs.kind != ObstacleKind::Surface || o.active) continue;
      const auto [before, after] = neighbours(st.active, i);
      const SurfacePose X = surfacePose(obs, v.frame(i));
      const Vector3 A = X.R_WS.transpose() * (v.exit(before, st.wraps) - X.p_WS);
      const Vector3 B = X.R_WS.transpose() * (v.entry(after, st.wraps) - X.p_WS);
      const bool touched = visitSurface(obs, [&](const auto& s) {
        std::optional<SegmentSeparation> sep;
        if (o.tracked) {
          const SegmentSeparation t = trackSegment(s, A, B, o.p_SC);
          if (t.converged) sep = t;
        }
        if (!sep) sep = findSegmentSeparation(s, A, B);
        if (!sep) {
          o.tracked = false;
          o.separation = std::numeric_limits<double>::infinity();
          o.separationWithin = false;
          return false;
        }
        o.p_SC = sep->pointOnSurface;
        o.tracked = true;
        o.separation = sep->height;
        o.separationWithin = sep->within;
        if (!(sep->height < 0 && sep->within)) return false;
        st.wraps[static_cast<std::size_t>(i)] =
            shootWrap(s, sep->pointOnSurface, Vector3((B - A).normalized()), 0.0, path.options.geodesic);
        ++total.shots;
        return true;
      });
      if (touched) {
        o.active = true;
        changed = true;
      }
    }
    if (!changed) return total;
  }
  total.status = CableStatus::NotConverged;
  return total;
}

// The shortest-path guard over every active wrap.
inline CableResult checkShortest(const CablePath& path, const CablePathState& st) {
  CableResult res;
  for (int i = 1; i + 1 < path.numObstacles(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (path.obstacles[k].kind == ObstacleKind::Surface && st.obstacles[k].active &&
        passesConjugatePoint(st.wraps[k], lengthScale(path.obstacles[k].surface))) {
      res.status = CableStatus::NotShortest;
      res.obstacle = i;
      return res;
    }
  }
  return res;
}

// Total length (m) of the path the state describes.
inline double pathLength(const CablePath& path, std::span<const Motion> frames, CablePathState& st) {
  collectActive(path, st, st.active);
  const PathView v{path, frames, st.active};
  double L = 0;
  for (std::size_t a = 0; a + 1 < st.active.size(); ++a)
    L += (v.entry(st.active[a + 1], st.wraps) - v.exit(st.active[a], st.wraps)).norm();
  for (const int i : st.active)
    if (v.isSurface(i)) L += st.wraps[static_cast<std::size_t>(i)].length;
  return L;
}

// The contact indicator of an active wrap of zero length (a touchdown that
// Newton left where it started, the kink too small to move it): the path
// is the straight segment between its neighbours, so the indicator is that
// segment's depth in the surface, > 0 while it penetrates and < 0 once it
// clears; it changes sign where the cable leaves the surface even while
// the wrap stays active at zero length (0 where no witness point is found).
inline double zeroWrapIndicator(const CablePath& path, const PathView& v, const CablePathState& st, int i) {
  const Obstacle& obs = path.obstacles[static_cast<std::size_t>(i)];
  const auto [before, after] = neighbours(st.active, i);
  const SurfacePose X = surfacePose(obs, v.frame(i));
  const Vector3 A = X.R_WS.transpose() * (v.exit(before, st.wraps) - X.p_WS);
  const Vector3 B = X.R_WS.transpose() * (v.entry(after, st.wraps) - X.p_WS);
  return visitSurface(obs, [&](const auto& s) {
    const SegmentSeparation sep = trackSegment(s, A, B, st.wraps[static_cast<std::size_t>(i)].P);
    return sep.converged ? -sep.height : 0.0;
  });
}

// Fill the solved path in World: contact frames, segments, length and its
// rate dL/dt = sum over segments of e . (v_P - v_Q), with the velocities of
// the material points of the frames at the contact points (the geodesics
// contribute through their ends by the first variation, which cancels the
// sliding of the contact points over their surfaces).
inline void finalize(const CablePath& path, std::span<const Motion> frames, CablePathState& st) {
  collectActive(path, st, st.active);
  const PathView v{path, frames, st.active};
  st.segments.clear();
  st.length = 0;
  st.lengthDot = 0;
  for (std::size_t a = 0; a + 1 < st.active.size(); ++a) {
    const int from = st.active[a], to = st.active[a + 1];
    const Vector3 A = v.exit(from, st.wraps), B = v.entry(to, st.wraps);
    Segment s;
    s.from = from;
    s.to = to;
    s.length = (B - A).norm();
    s.e_W = s.length > 0 ? Vector3((B - A) / s.length) : Vector3::UnitX();
    s.lengthDot = s.e_W.dot(materialVelocity(v.frame(to), B) - materialVelocity(v.frame(from), A));
    st.length += s.length;
    st.lengthDot += s.lengthDot;
    st.segments.push_back(s);
  }
  std::size_t seg = 0;
  for (int i = 0; i < path.numObstacles(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    const Obstacle& obs = path.obstacles[k];
    ObstacleState& o = st.obstacles[k];
    o.arcLength = 0;
    o.wrapAngle = 0;
    if (obs.kind != ObstacleKind::Surface || o.active) {
      const Vector3 eIn = seg > 0 ? st.segments[seg - 1].e_W : st.segments.front().e_W;
      const Vector3 eOut = seg < st.segments.size() ? st.segments[seg].e_W : st.segments.back().e_W;
      if (obs.kind != ObstacleKind::Surface) {
        const Vector3 p = pointInWorld(obs, v.frame(i));
        o.P = {p, eIn, Vector3::Zero(), Vector3::Zero()};
        o.Q = {p, eOut, Vector3::Zero(), Vector3::Zero()};
      } else {
        const SurfacePose X = surfacePose(obs, v.frame(i));
        const WrapGeodesic& w = st.wraps[k];
        o.P = {X.p_WS + X.R_WS * w.P, X.R_WS * w.tP, X.R_WS * w.nP, X.R_WS * w.bP};
        o.Q = {X.p_WS + X.R_WS * w.Q, X.R_WS * w.tQ, X.R_WS * w.nQ, X.R_WS * w.bQ};
        o.arcLength = w.length;
        o.wrapAngle = w.wrapAngle;
        o.separation = 0;
        o.contactIndicator = w.length > 0 ? w.length : zeroWrapIndicator(path, v, st, i);
        st.length += w.length;
      }
      ++seg;
    } else {
      const SurfacePose X = surfacePose(obs, v.frame(i));
      o.P = o.Q = ContactFrame{};
      o.p_WC = X.p_WS + X.R_WS * o.p_SC;
      o.contactIndicator = std::isfinite(o.separation) && o.separationWithin ? -o.separation
                                                                             : -lengthScale(obs.surface);
    }
  }
}

inline void resetState(const CablePath& path, CablePathState& st) {
  const auto n = static_cast<std::size_t>(path.numObstacles());
  st.initialized = false;
  st.obstacles.assign(n, ObstacleState{});
  st.wraps.assign(n, WrapGeodesic{});
  for (std::size_t k = 0; k < n; ++k)
    if (path.obstacles[k].kind == ObstacleKind::Surface) st.obstacles[k].active = false;
  st.segments.clear();
  st.length = st.lengthDot = 0;
  st.continuation = CableContinuation{};
}

// Distance (m) from p to the segment A -> B.
inline double distanceToSegment(const Vector3& p, const Vector3& A, const Vector3& B) {
  const Vector3 d = B - A;
  const double s = std::clamp((p - A).dot(d) / d.squaredNorm(), 0.0, 1.0);
  return (A + s * d - p).norm();
}

// Distance (m) from p to the stored points of a geodesic.
inline double distanceToCurve(const Vector3& p, const geometry::Geodesic<double>& g) {
  double best = std::numeric_limits<double>::infinity();
  for (const Vector3& x : g.points) best = std::min(best, (x - p).norm());
  for (std::size_t k = 0; k + 1 < g.points.size(); ++k)
    best = std::min(best, distanceToSegment(p, g.points[k], g.points[k + 1]));
  return best;
}

}  // namespace detail

inline CableResult solveForInitialCablePath(const CablePath& path, std::span<const Motion> frames,
                                            CablePathState& st) {
  using namespace detail;
  CableResult res = validate(path, frames);
  if (!res.ok()) return st.last = res;
  resetState(path, st);
  const int m2 = path.numObstacles();
  // End and via points must lie outside every surface.
  for (int p = 0; p < m2; ++p) {
    const Obstacle& point = path.obstacles[static_cast<std::size_t>(p)];
    if (point.kind == ObstacleKind::Surface) continue;
    const Vector3 p_W = pointInWorld(point, frames[static_cast<std::size_t>(p)]);
    for (int i = 0; i < m2; ++i) {
      const Obstacle& obs = path.obstacles[static_cast<std::size_t>(i)];
      if (obs.kind != ObstacleKind::Surface) continue;
      const SurfacePose X = surfacePose(obs, frames[static_cast<std::size_t>(i)]);
      if (isInside(obs.surface, X.R_WS.transpose() * (p_W - X.p_WS))) {
        res.status = CableStatus::PointInsideSurface;
        res.obstacle = p;
        res.otherObstacle = i;
        return st.last = res;
      }
    }
  }
  const NewtonLimits lim{path.options.maxInitialIterations, 12, false};
  for (int i = 1; i + 1 < m2; ++i) {
    const Obstacle& obs = path.obstacles[static_cast<std::size_t>(i)];
    if (obs.kind != ObstacleKind::Surface) continue;
    collectActive(path, st, st.active);
    const PathView v{path, frames, st.active};
    const auto [before, after] = neighbours(st.active, i);
    const SurfacePose X = surfacePose(obs, frames[static_cast<std::size_t>(i)]);
    const Vector3 A = X.R_WS.transpose() * (v.exit(before, st.wraps) - X.p_WS);
    const Vector3 B = X.R_WS.transpose() * (v.entry(after, st.wraps) - X.p_WS);
    const Vector3 l = (B - A).normalized();
    // Start points of the candidate wraps (S).
    std::vector<Vector3> starts;
    bool penetrating = false;
    visitSurface(obs, [&](const auto& s) {
      const std::optional<SegmentSeparation> sep = findSegmentSeparation(s, A, B);
      if (sep) {
        auto& o = st.obstacles[static_cast<std::size_t>(i)];
        o.p_SC = sep->pointOnSurface;
        o.tracked = true;
        o.separation = sep->height;
        o.separationWithin = sep->within;
        penetrating = sep->height < 0;
      }
      if (penetrating) {
        starts.push_back(sep->pointOnSurface);
        const Vector3 n = geometry::calcSurfaceUnitNormal(s, sep->pointOnSurface);
        if (const auto hit = geometry::intersectsRay(s, sep->pointOnLine, Vector3(-n)))
          starts.push_back(sep->pointOnLine - n * hit->distance);
      }
      if (obs.near_S) starts.push_back(geometry::findNearestPoint(s, *obs.near_S).point);
    });
    if (starts.empty()) continue;
    std::optional<CablePathState> best;
    double bestScore = std::numeric_limits<double>::infinity();
    CableResult bestFailure;
    bestFailure.residual = std::numeric_limits<double>::infinity();
    bool sawLongest = false;  // a candidate converged onto a wrap past a conjugate point
    for (const Vector3& start : starts) {
      CablePathState trial = st;
      trial.obstacles[static_cast<std::size_t>(i)].active = true;
      trial.wraps[static_cast<std::size_t>(i)] = visitSurface(
          obs, [&](const auto& s) { return shootWrap(s, start, l, 0.0, path.options.geodesic); });
      collectActive(path, trial, trial.active);
      const PathView tv{path, frames, trial.active};
      CableResult r = solveTangency(tv, trial.wraps, lim, trial.newton);
      accumulate(res, r);
      const WrapGeodesic& w = trial.wraps[static_cast<std::size_t>(i)];
      if (r.ok() && !(w.length > 0)) r.status = CableStatus::NoInitialPath;  // the cable clears it here
      // Converged onto a cusp (a segment arriving against the geodesic): not
      // a cable path; the candidate is dropped like one that clears it.
      if (r.ok() && firstCusp(tv, surfaceBlocks(tv), trial.wraps) >= 0) r.status = CableStatus::NoInitialPath;
      if (r.ok() && !checkShortest(path, trial).ok()) r.status = CableStatus::NotShortest;
      if (!r.ok()) {
        sawLongest = sawLongest || r.status == CableStatus::NotShortest;
        if (r.residual < bestFailure.residual || bestFailure.ok()) bestFailure = r;
        continue;
      }
      const double score = obs.near_S ? distanceToCurve(*obs.near_S, w.curve) : pathLength(path, frames, trial);
      if (score < bestScore) {
        bestScore = score;
        best = std::move(trial);
      }
    }
    if (!best) {
      // A wrap was asked for (the segment penetrates, or a near point) and
      // the only ones found are longest geodesics: the cable would slip off.
      if (sawLongest && (penetrating || obs.near_S)) {
        res.status = CableStatus::NotShortest;
        res.obstacle = i;
        return st.last = res;
      }
      if (!penetrating) continue;
      res.status = CableStatus::NoInitialPath;
      res.obstacle = i;
      res.residual = bestFailure.residual;
      return st.last = res;
    }
    if (obs.near_S && !penetrating && distanceToSegment(*obs.near_S, A, B) <= bestScore) continue;
    st = std::move(*best);
  }
  CableResult settled = settleActiveSet(path, frames, st, lim);
  accumulate(settled, res);
  if (settled.ok()) {
    const CableResult guard = checkShortest(path, st);
    if (!guard.ok()) settled.status = guard.status, settled.obstacle = guard.obstacle;
  }
  if (settled.ok()) {
    finalize(path, frames, st);
    st.initialized = true;
  }
  return st.last = settled;
}

inline CableResult updateCablePath(const CablePath& path, std::span<const Motion> frames, CablePathState& st) {
  using namespace detail;
  if (!st.initialized || static_cast<int>(st.obstacles.size()) != path.numObstacles())
    return solveForInitialCablePath(path, frames, st);
  CableResult res = validate(path, frames);
  if (!res.ok()) return st.last = res;
  const NewtonLimits lim{path.options.maxIterations, 4, true};
  res = settleActiveSet(path, frames, st, lim, &st.continuation);
  if (res.ok()) {
    const CableResult guard = checkShortest(path, st);
    if (!guard.ok()) res.status = guard.status, res.obstacle = guard.obstacle;
  }
  if (res.ok()) finalize(path, frames, st);
  return st.last = res;
}

}  // namespace capstan::cable
