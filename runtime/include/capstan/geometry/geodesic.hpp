#pragma once
// A geodesic curve on a smooth surface, as the solvers return it, and the
// options that control them.
//
// The curve runs from P (index 0) to Q (last index); everything is expressed
// in the surface frame S. At each stored point i:
//   points[i]      p_SX, on the surface                                  m
//   tangents[i]    unit tangent t, pointing from P towards Q
//   normals[i]     outward unit surface normal n
//   binormals[i]   b = t x n (so (b, t, n) is right handed, as in Simbody)
//   arcLengths[i]  s, arc length from P                                  m
//   jacobiPtoQ[i]  (j, dj/ds) of the directional Jacobi field from P:
//                  rotating the start tangent by dtheta towards bP,
//                  t(theta) = cos(theta) tP + sin(theta) bP, moves the point
//                  at s by j(s) dtheta along b(s); j(0) = 0, j'(0) = 1.   (m, 1)
//   jacobiTransPtoQ[i]  (j, dj/ds) of the positional field: moving P by d
//                  along bP (start tangent parallel-transported) moves the
//                  point at s by j(s) d along b(s); j(0) = 1, j'(0) = 0.
//   jacobiQtoP[i], jacobiTransQtoP[i]  the same fields seen from Q, with
//                  sigma = L - s as the parameter and (j, dj/dsigma) stored;
//                  filled by calcGeodesicReverseSensitivity.
// Both fields obey j'' + K j = 0 with K the Gaussian curvature.

#include <capstan/geometry/types.hpp>

#include <string_view>
#include <vector>

namespace capstan::geometry {

enum class GeodesicStatus {
  Ok,                 // converged to the requested tolerances
  NotConverged,       // point-to-point iteration stopped above tolerance
  MaxStepsExceeded,   // integrator hit options.maxSteps
  StepSizeUnderflow,  // integrator step fell below round-off
  PlaneNotHit,        // shooting reached options.maxLength without crossing the plane
  InvalidInput,       // a start direction along the normal, a non-finite input, ...
  SingularJacobian,   // Newton matrix singular (e.g. Q conjugate to P, antipodes on a sphere)
};

constexpr std::string_view statusName(GeodesicStatus s) {
  switch (s) {
    case GeodesicStatus::Ok: return "Ok";
    case GeodesicStatus::NotConverged: return "NotConverged";
    case GeodesicStatus::MaxStepsExceeded: return "MaxStepsExceeded";
    case GeodesicStatus::StepSizeUnderflow: return "StepSizeUnderflow";
    case GeodesicStatus::PlaneNotHit: return "PlaneNotHit";
    case GeodesicStatus::InvalidInput: return "InvalidInput";
    case GeodesicStatus::SingularJacobian: return "SingularJacobian";
  }
  return "?";
}

template <class Scalar = double> struct GeodesicOptions {
  // Integrator: local error per step, absolute on positions (m) and tangents
  // (rad), relative to 1 + |j| on the Jacobi fields.
  Scalar accuracy = Scalar(1e-10);
  // Point-to-point solvers: |x_end - Q| at convergence, m.
  Scalar pointTolerance = Scalar(1e-9);
  Scalar initialStepSize = Scalar(0);  // m; 0 means estimate from curvature
  Scalar maxLength = Scalar(100);      // m; the plane-hit search gives up here
  int maxSteps = 100000;               // integrator steps per shot
  int maxIterations = 50;              // Newton iterations of point-to-point solvers
  bool storeInteriorPoints = true;     // false keeps only P and Q
  bool preferAnalytic = true;          // sphere, cylinder: closed forms
  int analyticPoints = 17;             // points stored by the closed forms (>= 2)
  // P and Q closer than this fraction of the local radius of curvature are
  // joined by a straight line (length error ~ (fraction)^2 / 24 relative).
  Scalar straightLineFraction = Scalar(1e-5);
};

template <class Scalar = double> struct Geodesic {
  std::vector<Vec3<Scalar>> points, tangents, normals, binormals;
  std::vector<Scalar> arcLengths;
  std::vector<Vec2<Scalar>> jacobiPtoQ, jacobiTransPtoQ;
  std::vector<Vec2<Scalar>> jacobiQtoP, jacobiTransQtoP;

  GeodesicStatus status = GeodesicStatus::InvalidInput;
  int iterations = 0;           // Newton iterations (point-to-point) or 0
  Scalar residual = 0;          // m: |x_end - Q| (point-to-point), plane distance, ...
  int stepsTaken = 0;           // accepted integrator steps, all shots together
  int stepsRejected = 0;
  int shots = 0;                // geodesics integrated to produce this one
  bool isAnalytic = false;
  bool isStraightLine = false;
  bool lengthJumped = false;    // continueGeodesic: length changed more than the ends moved
  bool flipped = false;         // continueGeodesic: P and Q swapped order along the line
  Scalar initialStepSizeHint = 0;  // m, the step to start a shot from (nearly) the same P with
  // rad: the integral of the normal curvature kn = -t' H t / |g| from P to Q,
  // how far the tangent turns about the binormal (a cable's wrap angle).
  // Numeric shots integrate it with the step's own quadrature (seventh
  // order); closed forms and chords give kn L; a linear finish adds
  // kn(Q) dL and leaves out the change from turning the start direction.
  Scalar turningAngle = 0;
  // continueGeodesic's higher-order term: how far the converged start angle
  // (rad) and length (m) were from its first-order prediction, and the end
  // motion |dP| + |dQ| (m) of that update, and the same of the update before
  // it; extrapolated into the next one.
  Vec2<Scalar> continuationCorrection = Vec2<Scalar>::Zero();
  Scalar continuationMotion = 0;
  Vec2<Scalar> continuationCorrectionBefore = Vec2<Scalar>::Zero();
  Scalar continuationMotionBefore = 0;

  bool ok() const { return status == GeodesicStatus::Ok; }
  int numPoints() const { return static_cast<int>(points.size()); }
  Scalar length() const { return arcLengths.empty() ? Scalar(0) : arcLengths.back(); }
  const Vec3<Scalar>& pointP() const { return points.front(); }
  const Vec3<Scalar>& pointQ() const { return points.back(); }
  const Vec3<Scalar>& tangentP() const { return tangents.front(); }
  const Vec3<Scalar>& tangentQ() const { return tangents.back(); }
  const Vec3<Scalar>& normalP() const { return normals.front(); }
  const Vec3<Scalar>& normalQ() const { return normals.back(); }
  const Vec3<Scalar>& binormalP() const { return binormals.front(); }
  const Vec3<Scalar>& binormalQ() const { return binormals.back(); }
  Scalar jacobiQ() const { return jacobiPtoQ.back().x(); }        // m/rad
  Scalar jacobiQDot() const { return jacobiPtoQ.back().y(); }
  Scalar jacobiTransQ() const { return jacobiTransPtoQ.back().x(); }
  Scalar jacobiTransQDot() const { return jacobiTransPtoQ.back().y(); }
  // dL/dt from end-point velocities (first variation of arc length).
  Scalar calcLengthDot(const Vec3<Scalar>& v_P, const Vec3<Scalar>& v_Q) const {
    return v_Q.dot(tangentQ()) - v_P.dot(tangentP());
  }

  void clear() {
    points.clear(); tangents.clear(); normals.clear(); binormals.clear(); arcLengths.clear();
    jacobiPtoQ.clear(); jacobiTransPtoQ.clear(); jacobiQtoP.clear(); jacobiTransQtoP.clear();
    status = GeodesicStatus::InvalidInput;
    iterations = stepsTaken = stepsRejected = shots = 0;
    residual = initialStepSizeHint = turningAngle = continuationMotion = continuationMotionBefore = Scalar(0);
    continuationCorrection.setZero();
    continuationCorrectionBefore.setZero();
    isAnalytic = isStraightLine = lengthJumped = flipped = false;
  }
  void reserve(std::size_t n) {
    points.reserve(n); tangents.reserve(n); normals.reserve(n); binormals.reserve(n); arcLengths.reserve(n);
    jacobiPtoQ.reserve(n); jacobiTransPtoQ.reserve(n);
  }
  void addPoint(const Vec3<Scalar>& x, const Vec3<Scalar>& t, const Vec3<Scalar>& n, Scalar s,
                const Vec2<Scalar>& jd, const Vec2<Scalar>& jp) {
    points.push_back(x);
    tangents.push_back(t);
    normals.push_back(n);
    binormals.push_back(t.cross(n));
    arcLengths.push_back(s);
    jacobiPtoQ.push_back(jd);
    jacobiTransPtoQ.push_back(jp);
  }
};

// The options for a shot from (nearly) the start of `prev`: its first step
// is the one prev's controller settled on there, not the curvature estimate
// (closed forms and chords leave the estimate).
template <class Scalar>
GeodesicOptions<Scalar> startingFrom(GeodesicOptions<Scalar> opt, const Geodesic<Scalar>& prev) {
  if (prev.initialStepSizeHint > Scalar(0)) opt.initialStepSize = prev.initialStepSizeHint;
  return opt;
}

}  // namespace capstan::geometry
