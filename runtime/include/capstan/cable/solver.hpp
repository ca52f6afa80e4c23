#pragma once
// The path solver: all active wraps of a cable together, by Newton on the
// natural geodesic variations of every wrapped surface (wrap.hpp).
//
// Unknowns: x_i = (du, dv, dtheta, dL) per active surface i.
// Conditions: the straight segments meet each geodesic tangentially,
//   r_i = (e_in . nP, e_in . bP, e_out . nQ, e_out . bQ) = 0,
//   e_in = (P_i - A)/|P_i - A|,  e_out = (B - Q_i)/|B - Q_i|,
// A the exit point of the previous active obstacle, B the entry point of the
// next (both in World; n, b of the geodesic rotated by R_WS). With
// Pi_e = I - e e' and de = Pi_e (d(end) - d(start)) / l the Jacobian is
//   d r0 = (Pi_in nP / l_in)' (dP - dA) + e_in' dnP
//   d r1 = (Pi_in bP / l_in)' (dP - dA) + e_in' dbP
//   d r2 = (Pi_out nQ / l_out)' (dB - dQ) + e_out' dnQ
//   d r3 = (Pi_out bQ / l_out)' (dB - dQ) + e_out' dbQ
// block tridiagonal (dA is the previous surface's dQ, dB the next one's dP),
// from the Jacobi fields: no finite differences. Each iteration shoots one
// geodesic per active surface from its varied (P, tP, L); a step small
// enough that its second-order term is below the tolerance is applied
// through the Jacobi fields instead (applyLinearVariation). A warm update
// takes its first step with the higher-order term of the previous updates
// added (CableContinuation), so that the second is usually that small: one
// shot per surface.

#include <capstan/cable/types.hpp>
#include <capstan/cable/wrap.hpp>
#include <capstan/linear_solve.hpp>


#include <algorithm>
#include <cmath>
#include <span>

namespace capstan::cable {

namespace detail {

struct SurfacePose {
  Matrix3 R_WS;
  Vector3 p_WS;
};

inline SurfacePose surfacePose(const Obstacle& o, const Motion& F) {
  return {F.R_WF * o.R_FS, F.p_WF + F.R_WF * o.p_FS};
}

inline Vector3 pointInWorld(const Obstacle& o, const Motion& F) { return F.p_WF + F.R_WF * o.p_FP; }

// Velocity of the material point of F at p_W.
inline Vector3 materialVelocity(const Motion& F, const Vector3& p_W) {
  return F.v_WF + F.w_WF.cross(p_W - F.p_WF);
}

template <class F> decltype(auto) visitSurface(const Obstacle& o, F&& f) { return std::visit(f, o.surface); }

// One solve's view of the path: the model, the frames and, per obstacle,
// the geodesic currently assumed (only active surfaces' are read).
struct PathView {
  const CablePath& path;
  std::span<const Motion> frames;
  const std::vector<int>& active;  // active obstacles, in order (O first, T last)

  const Obstacle& obstacle(int i) const { return path.obstacles[static_cast<std::size_t>(i)]; }
  const Motion& frame(int i) const { return frames[static_cast<std::size_t>(i)]; }
  bool isSurface(int i) const { return obstacle(i).kind == ObstacleKind::Surface; }
  Vector3 entry(int i, const std::vector<WrapGeodesic>& wraps) const {
    if (!isSurface(i)) return pointInWorld(obstacle(i), frame(i));
    const SurfacePose X = surfacePose(obstacle(i), frame(i));
    return X.p_WS + X.R_WS * wraps[static_cast<std::size_t>(i)].P;
  }
  Vector3 exit(int i, const std::vector<WrapGeodesic>& wraps) const {
    if (!isSurface(i)) return pointInWorld(obstacle(i), frame(i));
    const SurfacePose X = surfacePose(obstacle(i), frame(i));
    return X.p_WS + X.R_WS * wraps[static_cast<std::size_t>(i)].Q;
  }
};

// Positions in `active` of the surfaces (one Newton block each).
inline std::vector<int> surfaceBlocks(const PathView& v) {
  std::vector<int> blocks;
  for (int a = 0; a < static_cast<int>(v.active.size()); ++a)
    if (v.isSurface(v.active[static_cast<std::size_t>(a)])) blocks.push_back(a);
  return blocks;
}

// The two segments at the surface v.active[a], in World: from the previous
// obstacle's exit A to the entry P (in) and from the exit Q to the next
// obstacle's entry B (out), with P and Q of the surface posed at X.
struct BlockSegments {
  Vector3 P, Q, in, out;  // m
};
inline BlockSegments blockSegments(const PathView& v, std::size_t a, const std::vector<WrapGeodesic>& wraps,
                                   const SurfacePose& X) {
  const WrapGeodesic& w = wraps[static_cast<std::size_t>(v.active[a])];
  BlockSegments g;
  g.P = X.p_WS + X.R_WS * w.P;
  g.Q = X.p_WS + X.R_WS * w.Q;
  g.in = g.P - v.exit(v.active[a - 1], wraps);
  g.out = v.entry(v.active[a + 1], wraps) - g.Q;
  return g;
}

// The tangency residual of every block; false if a segment has zero length.
CAPSTAN_FLATTEN inline bool evalResidual(const PathView& v, const std::vector<int>& blocks, const std::vector<WrapGeodesic>& wraps,
                         Eigen::VectorXd& r) {
  r.resize(4 * static_cast<Eigen::Index>(blocks.size()));
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const auto a = static_cast<std::size_t>(blocks[k]);
    const int i = v.active[a];
    const WrapGeodesic& w = wraps[static_cast<std::size_t>(i)];
    const SurfacePose X = surfacePose(v.obstacle(i), v.frame(i));
    const BlockSegments g = blockSegments(v, a, wraps, X);
    const double lIn = g.in.norm(), lOut = g.out.norm();
    if (!(lIn > 0) || !(lOut > 0)) return false;
    const Vector3 eIn = X.R_WS.transpose() * g.in / lIn, eOut = X.R_WS.transpose() * g.out / lOut;  // in S
    r.segment<4>(4 * static_cast<Eigen::Index>(k)) << eIn.dot(w.nP), eIn.dot(w.bP), eOut.dot(w.nQ), eOut.dot(w.bQ);
  }
  return r.allFinite();
}

// The tangency residual vanishes also where a segment meets the surface
// head-on against the geodesic (e = -t at P or Q): a cusp, which a
// shorter path always cuts off. Returns the first active surface with one
// (Simbody's numbering), or -1 when every segment runs along the path.
inline int firstCusp(const PathView& v, const std::vector<int>& blocks, const std::vector<WrapGeodesic>& wraps) {
  for (const int b : blocks) {
    const auto a = static_cast<std::size_t>(b);
    const int i = v.active[a];
    const WrapGeodesic& w = wraps[static_cast<std::size_t>(i)];
    const SurfacePose X = surfacePose(v.obstacle(i), v.frame(i));
    const BlockSegments g = blockSegments(v, a, wraps, X);
    if (g.in.dot(X.R_WS * w.tP) < 0 || g.out.dot(X.R_WS * w.tQ) < 0) return i;
  }
  return -1;
}

// The Jacobian of evalResidual with respect to the natural variations.
// Each row is a World vector dotted with a World variation R_WS d; both are
// taken in the block's S instead (the vector rotated by R_WS'), so only
// vectors are rotated, never the 3x4 variations.
CAPSTAN_FLATTEN inline void evalJacobian(const PathView& v, const std::vector<int>& blocks, const std::vector<WrapGeodesic>& wraps,
                         Eigen::MatrixXd& J) {
  const auto n = static_cast<Eigen::Index>(blocks.size());
  J.setZero(4 * n, 4 * n);
  std::vector<WrapVariation> dS(blocks.size());  // in S
  std::vector<SurfacePose> poses(blocks.size());
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const int i = v.active[static_cast<std::size_t>(blocks[k])];
    poses[k] = surfacePose(v.obstacle(i), v.frame(i));
    dS[k] = visitSurface(v.obstacle(i), [&](const auto& s) {
      return calcWrapVariation(s, wraps[static_cast<std::size_t>(i)]);
    });
  }
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const auto a = static_cast<std::size_t>(blocks[k]);
    const int i = v.active[a];
    const WrapGeodesic& w = wraps[static_cast<std::size_t>(i)];
    const Matrix3& R = poses[k].R_WS;
    const BlockSegments g = blockSegments(v, a, wraps, poses[k]);
    const double lIn = g.in.norm(), lOut = g.out.norm();
    const Vector3 eIn = R.transpose() * (g.in / lIn), eOut = R.transpose() * (g.out / lOut);  // in S
    // Pi_e x / l = (x - e (e . x)) / l: the change of e per unit move of
    // the segment's far end along x.
    const Vector3 gInN = (w.nP - eIn * eIn.dot(w.nP)) / lIn, gInB = (w.bP - eIn * eIn.dot(w.bP)) / lIn;
    const Vector3 gOutN = (w.nQ - eOut * eOut.dot(w.nQ)) / lOut, gOutB = (w.bQ - eOut * eOut.dot(w.bQ)) / lOut;
    const auto row = 4 * static_cast<Eigen::Index>(k);
    const WrapVariation& d = dS[k];
    J.block<1, 4>(row + 0, row) = gInN.transpose() * d.dP + eIn.transpose() * d.dnP;
    J.block<1, 4>(row + 1, row) = gInB.transpose() * d.dP + eIn.transpose() * d.dbP;
    J.block<1, 4>(row + 2, row) = -gOutN.transpose() * d.dQ + eOut.transpose() * d.dnQ;
    J.block<1, 4>(row + 3, row) = -gOutB.transpose() * d.dQ + eOut.transpose() * d.dbQ;
    if (k > 0 && blocks[k - 1] == blocks[k] - 1) {  // the previous active obstacle is a surface
      const Matrix3 R_AS = poses[k - 1].R_WS.transpose() * R;  // this S in the previous one's
      const Matrix34& dA = dS[k - 1].dQ;
      J.block<1, 4>(row + 0, row - 4) = -(R_AS * gInN).transpose() * dA;
      J.block<1, 4>(row + 1, row - 4) = -(R_AS * gInB).transpose() * dA;
    }
    if (k + 1 < blocks.size() && blocks[k + 1] == blocks[k] + 1) {  // the next one is
      const Matrix3 R_BS = poses[k + 1].R_WS.transpose() * R;
      const Matrix34& dB = dS[k + 1].dP;
      J.block<1, 4>(row + 2, row + 4) = (R_BS * gOutN).transpose() * dB;
      J.block<1, 4>(row + 3, row + 4) = (R_BS * gOutB).transpose() * dB;
    }
  }
}

// Index into blocks of the largest residual component.
inline int worstBlock(const Eigen::VectorXd& r) {
  Eigen::Index at = 0;
  if (r.size() > 0) r.cwiseAbs().maxCoeff(&at);
  return static_cast<int>(at / 4);
}

struct NewtonLimits {
  int maxIterations;
  int maxHalvings;   // backtracking line search
  bool linearFinish;  // allow the last step through the Jacobi fields
};

// Newton on the active set `v.active` starting from `wraps` (updated in
// place). On failure `wraps` holds the best iterate. With `cont` (a warm
// update), the first step is tried with the extrapolated higher-order term
// added (CableContinuation), falling back to the plain Newton step if that
// does not lower the residual; on success `cont` takes this update's term.
//
// Step sizes are measured in the units where the variations stop being
// meaningful: turns in rad, moves in radii of curvature (lengthScale); the
// step is limited to 0.5 of them. With lim.linearFinish, a step of size s
// whose second-order remainder (~ 10 s^2) is below the tolerance is applied
// through the Jacobi fields (applyLinearVariation) instead of a new shot.
inline CableResult solveTangency(const PathView& v, std::vector<WrapGeodesic>& wraps, const NewtonLimits& lim,
                                 NewtonWorkspace& ws, CableContinuation* cont = nullptr) {
  CableResult res;
  const std::vector<int> blocks = surfaceBlocks(v);
  if (blocks.empty()) return res;
  Eigen::MatrixXd& J = ws.jacobian;
  Eigen::VectorXd &r = ws.residual, &dx = ws.step;
  const double tol = v.path.options.tolerance;
  const auto blockObstacle = [&](int k) { return v.active[static_cast<std::size_t>(blocks[static_cast<std::size_t>(k)])]; };
  Eigen::VectorXd firstStep, total;  // the first Newton step and the sum of the steps taken
  const auto forget = [&] {
    if (!cont) return;
    cont->last.resize(0);
    cont->before.resize(0);
  };
  const auto fail = [&](CableStatus s, int k) {
    forget();
    res.status = s;
    res.obstacle = blockObstacle(k);
    res.residual = r.size() > 0 ? r.cwiseAbs().maxCoeff() : 0.0;
    return res;
  };
  const auto succeed = [&] {
    const double m = firstStep.norm();
    if (!cont || res.iterations == 0 || !(m > 0)) {
      forget();
      return res;
    }
    if (cont->active == v.active && cont->last.size() == total.size()) {
      cont->before.swap(cont->last);
      cont->beforeStep = cont->lastStep;
    } else {
      cont->before.resize(0);
    }
    cont->active = v.active;
    cont->last = (total - firstStep) / (m * m);
    cont->lastStep = m;
    return res;
  };
  // The largest block of a step in the units above.
  const auto scaledSize = [&](const Eigen::VectorXd& x) {
    double size = 0;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      const double rho = lengthScale(v.obstacle(blockObstacle(static_cast<int>(k))).surface);
      const Eigen::Vector4d b = x.segment<4>(4 * static_cast<Eigen::Index>(k));
      size = std::max({size, std::abs(b[0]) / rho, std::abs(b[1]) / rho, std::abs(b[2]), std::abs(b[3]) / rho});
    }
    return size;
  };
  const auto finishLinearly = [&](double remainder) {
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      const int i = blockObstacle(static_cast<int>(k));
      visitSurface(v.obstacle(i), [&](const auto& s) {
        applyLinearVariation(s, wraps[static_cast<std::size_t>(i)], Eigen::Vector4d(dx.segment<4>(4 * static_cast<Eigen::Index>(k))));
      });
    }
    total += dx;
    res.residual = remainder;
    return succeed();
  };
  if (!evalResidual(v, blocks, wraps, r)) return fail(CableStatus::SingularJacobian, 0);
  std::vector<WrapGeodesic> trial;
  Eigen::VectorXd rTrial;
  // Shoots every block with the variation `step`; keeps the result if it
  // lowers the residual.
  // (The blocks' wraps are shot anew: only the others are copied.)
  std::vector<char> isBlock(wraps.size(), 0);
  for (std::size_t k = 0; k < blocks.size(); ++k) isBlock[static_cast<std::size_t>(blockObstacle(static_cast<int>(k)))] = 1;
  const auto tryStep = [&](const Eigen::VectorXd& step) {
    trial.resize(wraps.size());
    for (std::size_t i = 0; i < wraps.size(); ++i)
      if (!isBlock[i]) trial[i] = wraps[i];
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      const int i = blockObstacle(static_cast<int>(k));
      const auto ii = static_cast<std::size_t>(i);
      const ShootParameters p = varyShootParameters(wraps[ii], Eigen::Vector4d(step.segment<4>(4 * static_cast<Eigen::Index>(k))));
      const geometry::GeodesicOptions<double> opt = geometry::startingFrom(v.path.options.geodesic, wraps[ii].curve);
      trial[ii] = visitSurface(v.obstacle(i), [&](const auto& s) { return shootWrap(s, p.P, p.t, p.L, opt); });
      ++res.shots;
      if (!trial[ii].ok()) {
        res.geodesicStatus = trial[ii].status;
        res.obstacle = i;
        return false;
      }
    }
    if (!evalResidual(v, blocks, trial, rTrial) || !(rTrial.norm() < r.norm())) return false;
    wraps.swap(trial);
    r = rTrial;
    total += step;
    return true;
  };
  for (int it = 0;; ++it) {
    const double err = r.cwiseAbs().maxCoeff();
    res.residual = err;
    if (err <= tol) return succeed();
    if (it >= lim.maxIterations) return fail(CableStatus::NotConverged, worstBlock(r));
    ++res.iterations;
    evalJacobian(v, blocks, wraps, J);
    ws.factor = J;
    dx = -r;
    if (!solveLinearInPlace(ws.factor, dx) || !dx.allFinite() || !((J * dx + r).norm() <= 1e-6 * (1 + r.norm())))
      return fail(CableStatus::SingularJacobian, worstBlock(r));
    if (it == 0) {
      firstStep = dx;
      total.setZero(dx.size());
    }
    const double scaled = scaledSize(dx);
    if (lim.linearFinish && 10 * scaled * scaled <= tol) return finishLinearly(10 * scaled * scaled);
    double alpha = scaled > 0.5 ? 0.5 / scaled : 1.0;
    bool accepted = false;
    // The continuation's predicted first step, when the last updates' terms
    // were measured on the same active set and a comparable motion.
    if (it == 0 && alpha == 1 && cont && cont->active == v.active && cont->last.size() == dx.size()) {
      const double m = dx.norm();
      const auto comparable = [&](double step) { return m > 0.5 * step && m < 2 * step; };
      if (comparable(cont->lastStep)) {
        const Eigen::VectorXd c = cont->before.size() == dx.size() && comparable(cont->beforeStep)
                                      ? Eigen::VectorXd(2 * cont->last - cont->before)
                                      : cont->last;
        accepted = tryStep(Eigen::VectorXd(dx + (m * m) * c));
      }
    }
    for (int h = 0; h <= lim.maxHalvings && !accepted; ++h, alpha /= 2) accepted = tryStep(Eigen::VectorXd(alpha * dx));
    if (!accepted) {
      if (res.geodesicStatus != geometry::GeodesicStatus::Ok) {
        forget();
        res.status = CableStatus::GeodesicFailed;
        res.residual = r.cwiseAbs().maxCoeff();
        return res;
      }
      return fail(CableStatus::NotConverged, worstBlock(r));
    }
    res.geodesicStatus = geometry::GeodesicStatus::Ok;
    res.obstacle = -1;
  }
}

}  // namespace detail

}  // namespace capstan::cable
