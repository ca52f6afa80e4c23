#pragma once
// The vocabulary of capstan::cable (docs/cables.md): the constant cable
// model, the persistent per-cable state that carries warm starts, the solved
// path users inspect, and failures as values.
//
// Notation (Simbody's CablePath): obstacle 0 is the origin O, obstacles
// 1..m are via points and wrapping surfaces in path order, obstacle m+1 is
// the termination T. Every obstacle i has two contact points Pi and Qi
// (equal for points); straight segments run from Q(i-1) to P(i) between
// consecutive *active* obstacles; over an active surface the cable follows
// a geodesic from P to Q.
//
// Frames and points:
//   W    World.
//   F    the frame an obstacle is fixed in (frames[i] of the caller: a body
//        frame or any frame the kinematics computes); FrameMotion gives
//        R_WF, p_WF, w_WF, v_WF in World.
//   S    a surface's own frame, posed in F by (R_FS, p_FS); every geodesic
//        quantity is expressed in S (capstan::geometry's convention).
//   P, Q contact points; at each: unit tangent t (along the cable from O
//        towards T), outward surface normal n, binormal b = t x n.
// Units: m, m/s, N, rad; residuals are dimensionless (sines of angles).

#include <capstan/force_elements.hpp>
#include <capstan/geometry/geodesic.hpp>
#include <capstan/geometry/surfaces.hpp>

#include <Eigen/Core>
#include <Eigen/Geometry>  // cross products

#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace capstan::cable {

using Vector3 = Eigen::Vector3d;
using Matrix3 = Eigen::Matrix3d;
using SpatialForce = Vec6<double>;  // [torque; force]
using Motion = FrameMotion<double>;

// The smooth shapes a cable wraps over (capstan::geometry, f > 0 inside).
using Surface = std::variant<geometry::Sphere<double>, geometry::Cylinder<double>, geometry::Ellipsoid<double>,
                             geometry::Torus<double>>;

enum class ObstacleKind {
  EndPoint,  // the origin (obstacle 0) or the termination (obstacle m+1)
  ViaPoint,  // the cable slides through a point fixed in F
  Surface,   // the cable wraps over a surface fixed in F, or clears it
};

struct Obstacle {
  ObstacleKind kind = ObstacleKind::ViaPoint;
  Vector3 p_FP = Vector3::Zero();  // end and via points: the point in F (m)
  // Surfaces: the shape in S, the pose of S in F, an optional hint point in
  // S (the initial path runs nearest to it: Simbody's near point), and the
  // capstan friction coefficient over this wrap (0: frictionless).
  Surface surface = geometry::Sphere<double>{1.0};
  Matrix3 R_FS = Matrix3::Identity();
  Vector3 p_FS = Vector3::Zero();  // m
  std::optional<Vector3> near_S;   // m
  double friction = 0;             // mu, dimensionless
};

struct CableOptions {
  // Newton on the tangency conditions stops when every residual (the sines
  // of the kink angles at the contact points) is at most this.
  double tolerance = 1e-10;
  int maxIterations = 12;         // per continuation (updateCablePath)
  int maxInitialIterations = 80;  // per candidate path (solveForInitialCablePath)
  // Numeric geodesics (ellipsoid, torus): integrator accuracy and the rest
  // of capstan::geometry's options. Sphere and cylinder use closed forms.
  geometry::GeodesicOptions<double> geodesic = [] {
    geometry::GeodesicOptions<double> o;
    o.accuracy = 1e-10;
    return o;
  }();
  // Capstan friction: the sign of the slip velocity v is smoothed as
  // v / sqrt(v^2 + frictionSlipVelocity^2) (m/s).
  double frictionSlipVelocity = 1e-3;
};

// The constant model: obstacles[0] is O, obstacles.back() is T.
struct CablePath {
  std::vector<Obstacle> obstacles;
  CableOptions options;
  int numObstacles() const { return static_cast<int>(obstacles.size()); }
};

// Whether a wrap of the path has capstan friction (its tension then
// changes over the wrap: the sensitivities do not cover it).
inline bool hasFriction(const CablePath& path) {
  for (const Obstacle& o : path.obstacles)
    if (o.kind == ObstacleKind::Surface && o.friction > 0) return true;
  return false;
}

// A straight cable O -> T between points fixed in frames 0 and 1; obstacles
// are inserted before T by addViaPoint / addWrap (which return their index).
inline CablePath makeCablePath(const Vector3& p_FO, const Vector3& p_FT, const CableOptions& options = {}) {
  CablePath path;
  path.options = options;
  // Built in place: copying an Obstacle whose near_S is unset makes g++ 12
  // at -O1 warn `maybe-uninitialized` (a false positive in std::optional).
  path.obstacles.resize(2);
  path.obstacles[0].kind = path.obstacles[1].kind = ObstacleKind::EndPoint;
  path.obstacles[0].p_FP = p_FO;
  path.obstacles[1].p_FP = p_FT;
  return path;
}

inline int addViaPoint(CablePath& path, const Vector3& p_FV) {
  Obstacle o;
  o.kind = ObstacleKind::ViaPoint;
  o.p_FP = p_FV;
  path.obstacles.insert(path.obstacles.end() - 1, o);
  return path.numObstacles() - 2;
}

inline int addWrap(CablePath& path, const Surface& surface, const Matrix3& R_FS = Matrix3::Identity(),
                   const Vector3& p_FS = Vector3::Zero(), const std::optional<Vector3>& near_S = std::nullopt,
                   double friction = 0) {
  Obstacle o;
  o.kind = ObstacleKind::Surface;
  o.surface = surface;
  o.R_FS = R_FS;
  o.p_FS = p_FS;
  o.near_S = near_S;
  o.friction = friction;
  path.obstacles.insert(path.obstacles.end() - 1, o);
  return path.numObstacles() - 2;
}

// A geodesic with a signed length, reduced to what the path solver needs,
// in S. L < 0 is the geodesic continued backwards from P (the liftoff
// witness, as Simbody's): t still points from O towards T at both ends.
// The Jacobi values are those of capstan::geometry at Q (s = L):
//   jd, jdDot  rotating tP by dtheta towards bP moves Q by jd dtheta along bQ
//              and turns tQ by jdDot dtheta towards bQ          (m/rad, 1)
//   jp, jpDot  moving P by dv along bP (tangent transported) moves Q by
//              jp dv along bQ and turns tQ by jpDot dv towards bQ   (1, 1/m)
struct WrapGeodesic {
  Vector3 P = Vector3::Zero(), Q = Vector3::Zero();  // m
  Vector3 tP = Vector3::UnitX(), nP = Vector3::UnitZ(), bP = -Vector3::UnitY();
  Vector3 tQ = Vector3::UnitX(), nQ = Vector3::UnitZ(), bQ = -Vector3::UnitY();
  double length = 0;  // m, signed
  double jd = 0, jdDot = 1, jp = 1, jpDot = 0;
  double wrapAngle = 0;  // rad, integral of the normal curvature along t
  geometry::Geodesic<double> curve;  // the shot (P to Q; for L < 0 the backward one)
  geometry::GeodesicStatus status = geometry::GeodesicStatus::Ok;
  bool ok() const { return status == geometry::GeodesicStatus::Ok; }
};

// Per obstacle, persistent between updates (the warm start) and refreshed
// by each update (the solved path, in World).
struct ContactFrame {
  Vector3 p_W = Vector3::Zero();  // the contact point (m)
  Vector3 t_W = Vector3::Zero();  // unit tangent along the cable, O towards T
  Vector3 n_W = Vector3::Zero();  // outward surface normal (points: zero)
  Vector3 b_W = Vector3::Zero();  // t x n (points: zero)
};

struct ObstacleState {
  bool active = true;          // points: always; surfaces: the cable wraps it
  Vector3 p_SC = Vector3::Zero();  // inactive surface: tracked closest point to the straight segment (S)
  bool tracked = false;        // p_SC is valid
  // Solved path, World:
  ContactFrame P, Q;           // entry and exit (points: P == Q, t_in and t_out)
  double arcLength = 0;        // m, over the surface (0 for points)
  double wrapAngle = 0;        // rad, turning of the cable over the surface
  double separation = std::numeric_limits<double>::infinity();  // inactive surface: clearance (m)
  bool separationWithin = false;   // ... measured at a point strictly inside the segment
  Vector3 p_WC = Vector3::Zero();  // inactive surface: its point closest to the segment
  // Surfaces: the contact's event indicator (m), continuous through liftoff
  // and touchdown and > 0 exactly while the cable wraps the surface: while
  // wrapped, the geodesic's length (liftoff where it would turn negative);
  // while clear, minus the straight segment's clearance (touchdown where it
  // would turn negative), or minus the surface's smallest radius of curvature (lengthScale)
  // where the segment has no witness point (nearest the surface at an end,
  // or no closest point found: it passes far from the surface). 0 for points.
  double contactIndicator = 0;
};

// A straight segment from obstacle `from` (its Q) to obstacle `to` (its P).
struct Segment {
  int from = 0, to = 0;
  double length = 0;     // m
  double lengthDot = 0;  // m/s, e . (v_P - v_Q) with material point velocities
  Vector3 e_W = Vector3::UnitX();  // unit direction from Q(from) to P(to)
};

enum class CableStatus {
  Ok,
  InvalidInput,          // wrong number of frames, a non-finite pose
  PointInsideSurface,    // an end or via point lies inside a wrapping surface
  NoInitialPath,         // solveForInitialCablePath found no wrap over a penetrated surface
  NotConverged,          // Newton stopped above tolerance
  GeodesicFailed,        // a geodesic shot failed (geodesicStatus says why)
  SingularJacobian,      // the tangency conditions are degenerate
  NotShortest,           // a wrap passes a conjugate point: it is not a shortest path
};

constexpr std::string_view statusName(CableStatus s) {
  switch (s) {
    case CableStatus::Ok: return "Ok";
    case CableStatus::InvalidInput: return "InvalidInput";
    case CableStatus::PointInsideSurface: return "PointInsideSurface";
    case CableStatus::NoInitialPath: return "NoInitialPath";
    case CableStatus::NotConverged: return "NotConverged";
    case CableStatus::GeodesicFailed: return "GeodesicFailed";
    case CableStatus::SingularJacobian: return "SingularJacobian";
    case CableStatus::NotShortest: return "NotShortest";
  }
  return "?";
}

// Failure as a value: what, where (obstacle index in Simbody's numbering,
// -1 when none applies) and how far from a solution.
struct CableResult {
  CableStatus status = CableStatus::Ok;
  int obstacle = -1;
  int otherObstacle = -1;   // PointInsideSurface: the surface
  double residual = 0;      // largest tangency residual at the end (dimensionless)
  int iterations = 0;       // Newton iterations, all solves of this call
  int shots = 0;            // geodesics integrated or evaluated in closed form
  geometry::GeodesicStatus geodesicStatus = geometry::GeodesicStatus::Ok;
  bool ok() const { return status == CableStatus::Ok; }

  // One line, lower case, what was observed first and the hint after ';'.
  std::string message() const {
    char b[400];
    switch (status) {
      case CableStatus::Ok:
        std::snprintf(b, sizeof b, "cable path solved: residual %.3g after %d iterations", residual, iterations);
        break;
      case CableStatus::InvalidInput:
        std::snprintf(b, sizeof b, "cable path: invalid input at obstacle %d; frames must be finite, one per obstacle",
                      obstacle);
        break;
      case CableStatus::PointInsideSurface:
        std::snprintf(b, sizeof b,
                      "cable path: point of obstacle %d lies inside the surface of obstacle %d; move the point or "
                      "the surface",
                      obstacle, otherObstacle);
        break;
      case CableStatus::NoInitialPath:
        std::snprintf(b, sizeof b,
                      "cable path: no wrap found over the surface of obstacle %d (best residual %.3g after %d "
                      "iterations); give it a `near` point on the side the cable should pass",
                      obstacle, residual, iterations);
        break;
      case CableStatus::NotConverged:
        std::snprintf(b, sizeof b,
                      "cable path did not converge at obstacle %d: residual %.3g after %d iterations; the motion "
                      "since the last solution may be too large (smaller steps)",
                      obstacle, residual, iterations);
        break;
      case CableStatus::GeodesicFailed:
        std::snprintf(b, sizeof b, "cable path: geodesic over obstacle %d failed (%.*s)", obstacle,
                      static_cast<int>(geometry::statusName(geodesicStatus).size()),
                      geometry::statusName(geodesicStatus).data());
        break;
      case CableStatus::SingularJacobian:
        std::snprintf(b, sizeof b,
                      "cable path: tangency conditions are singular at obstacle %d (residual %.3g)", obstacle,
                      residual);
        break;
      case CableStatus::NotShortest:
        std::snprintf(b, sizeof b,
                      "cable path: the wrap over obstacle %d passes a conjugate point, so it is not a shortest "
                      "path (the cable would slip off); give a `near` point or shorten the wrap",
                      obstacle);
        break;
    }
    return b;
  }
};

// The continuation's higher-order term (updateCablePath). Per update, the
// converged variation minus the first Newton step, stacked per active
// surface as (du, dv, dtheta, dL) (m, m, rad, m), divided by the square of
// the first step's norm m: on a smooth motion the first step's error is
// about c m^2 with c drifting slowly. The next update adds
// (2 c_last - c_before) m^2, the coefficient extrapolated linearly from the
// last two updates (c_last alone after one), to its first step.
// Each is used only when measured on a first step within a factor 2 of the
// current one (not, say, on a finite-difference probe's tiny one).
struct CableContinuation {
  std::vector<int> active;       // the active obstacles both were measured on
  Eigen::VectorXd last, before;  // c of the last two updates (4 per active surface); empty: none
  double lastStep = 0, beforeStep = 0;  // their first steps' norms m
};

// The Newton system of one solve (solver.hpp), kept to avoid reallocating.
struct NewtonWorkspace {
  Eigen::MatrixXd jacobian, factor;  // factor: the Jacobian's LU factors
  Eigen::VectorXd residual, step;
};

// Everything one cable keeps between calls: the warm start, the solved
// path, and the solver's workspace. Copyable: a caller that rejects an
// integrator step can keep the state of the last accepted one.
struct CablePathState {
  bool initialized = false;
  std::vector<ObstacleState> obstacles;  // one per obstacle, Simbody's numbering
  std::vector<WrapGeodesic> wraps;       // one per obstacle: an active surface's geodesic, in S
  std::vector<Segment> segments;         // the straight segments, O to T
  double length = 0;                     // m
  double lengthDot = 0;                  // m/s
  CableResult last;                      // the last solve's report
  CableContinuation continuation;        // the last updates' higher-order term
  // Workspace (sized once): the active obstacles in order and the Newton system.
  std::vector<int> active;
  NewtonWorkspace newton;
};

// Forces a cable applies at a given tension (see applyBodyForces).
struct CableSpringForce {
  double stretch = 0;    // x = max(0, L - L0), m
  double tension = 0;    // N, >= 0
  double energy = 0;     // 1/2 k x^2, J
  double powerLoss = 0;  // dissipated power f_rate * xdot, W (>= 0)
};

}  // namespace capstan::cable
