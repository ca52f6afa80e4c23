// Warm-started cable path updates: capstan::cable vs Simbody's CablePath on
// the same models, in the same run.
//
// Models: a cable from a point on Ground over N = 1, 3, 6 surfaces, each
// carried by its own free body, to a point on Ground; the surfaces cycle
// sphere, cylinder, ellipsoid, torus, alternately below and above the
// cable (frameHeight), each with a `near` hint. Every body follows a smooth
// trajectory (translation and rotation) moving the contact points ~1 mm
// per step; 300 steps.
//
// Per model: CPU time per update (median of batches, each batch the whole
// trajectory from the same start), timed only after the path is checked:
// every surface stays wrapped, and each solver's length along the
// trajectory agrees with a reference (ours at geodesic accuracy and
// tolerance 1e-13) to kOurAgreement, Simbody's to kSimbodyAgreement; a
// case that fails stops the run (exit status 1). Ours at two settings: tolerance and integrator accuracy 1e-10
// (the default), and integrator accuracy 1e-6 with tolerance 1e-9
// (Simbody's fixed integrator accuracy and its Newton tolerance). Simbody's
// time is that of realizing Velocity with its cable tracker minus the same
// without it (same bodies, same state changes). Prints JSON.
// Reproduce: bench/cables/run.sh
#pragma GCC diagnostic ignored "-Warray-bounds"
#ifdef NDEBUG
#define CAPSTAN_BENCH_NDEBUG
#endif
#include "../../tests/crosscheck/simbody_cxx20.hpp"  // <Simbody.h> under C++20; first
// simbody_cxx20.hpp clears NDEBUG for Simbody's headers; restored here so
// that Capstan and Eigen are timed as built (-DNDEBUG), without asserts.
#ifdef CAPSTAN_BENCH_NDEBUG
#define NDEBUG
#include <cassert>
#endif

#include <capstan/cable_path.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <streambuf>
#include <vector>

#include "timing.hpp"

namespace cc = capstan::cable;
namespace cg = capstan::geometry;
using cc::Matrix3;
using cc::Motion;
using cc::Vector3;

namespace {

// Median over batches of the CPU time of f(), in microseconds.
template <class F> double medianBatch(F&& f, int batches = 7) {
  std::vector<double> t;
  for (int b = 0; b < batches; ++b) {
    const double t0 = bench::threadMicroseconds();
    f();
    t.push_back(bench::threadMicroseconds() - t0);
  }
  return bench::median(t);
}

// Simbody's CablePath prints every solve to std::cout: discarded here.
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};
struct MuteCout {
  NullBuffer sink;
  std::streambuf* old = std::cout.rdbuf(&sink);
  ~MuteCout() { std::cout.rdbuf(old); }
};

volatile double gSink = 0;

constexpr int kSteps = 300;
constexpr double kDt = 0.01;      // s per step
constexpr double kSpacing = 1.0;  // m between obstacle bodies along x
// Largest length difference from the reference path (ours at 1e-13) over
// the trajectory for a case to be timed: ours at either setting, and
// Simbody, whose geodesics are integrated to its fixed accuracy 1e-6.
constexpr double kOurAgreement = 1e-8;      // m
constexpr double kSimbodyAgreement = 1e-6;  // m

enum class Shape { Sphere, Cylinder, Ellipsoid, Torus };
const char* shapeName(Shape s) {
  switch (s) {
    case Shape::Sphere: return "sphere";
    case Shape::Cylinder: return "cylinder";
    case Shape::Ellipsoid: return "ellipsoid";
    case Shape::Torus: return "torus";
  }
  return "?";
}
Shape shapeOf(int i) { return static_cast<Shape>(i % 4); }

// The surfaces alternate below and above the cable's line y = 0.05 (even
// i below, odd above), each reaching 0.07 m across it, so the cable zig-zags
// and every surface keeps a wrap angle of about 0.25 rad while the bodies
// move (with all of them below, the cable runs straight from one top to the
// next and lifts off a lower one: the 6-obstacle torus never touched). The
// torus is a ring in the xy plane: its top tube is crossed from above when
// it is below the line, its bottom tube from below when above.
double reachOf(int i) { return shapeOf(i) == Shape::Torus ? 0.42 : 0.2; }  // centre to the extreme in y
double frameHeight(int i) {
  const double below = 0.05 + 0.07 - reachOf(i);  // its top at 0.12
  return i % 2 == 0 ? below : 0.1 - below;         // mirrored about y = 0.05
}
// The side to wrap, as a user would hint it: the surface's extreme towards
// the line (in S).
Vector3 nearOf(int i) { return Vector3(0, i % 2 == 0 ? reachOf(i) : -reachOf(i), 0); }

// Body i's pose and twist at time t: a slow oscillation, ~1 mm per step.
struct Pose {
  Matrix3 R;
  Vector3 p, w, v;
};
Pose poseAt(int i, double t) {
  const double a = 0.05, om = 2.0, ph = 0.7 * i;
  Pose x;
  x.p = Vector3(kSpacing * i + a * std::sin(om * t + ph), frameHeight(i) + 0.5 * a * std::sin(1.3 * om * t + ph),
                a * std::sin(0.8 * om * t + 2 * ph));
  x.v = Vector3(a * om * std::cos(om * t + ph), 0.5 * a * 1.3 * om * std::cos(1.3 * om * t + ph),
                a * 0.8 * om * std::cos(0.8 * om * t + 2 * ph));
  const Vector3 axis = Vector3(0.3, 0.5, 1.0).normalized();
  const double angle = 0.2 * std::sin(om * t + ph);
  x.R = Eigen::AngleAxisd(angle, axis).toRotationMatrix();
  x.w = axis * 0.2 * om * std::cos(om * t + ph);
  return x;
}

cc::Surface ourSurface(Shape s) {
  switch (s) {
    case Shape::Sphere: return cg::Sphere<double>{0.2};
    case Shape::Cylinder: return cg::Cylinder<double>{0.2};
    case Shape::Ellipsoid: return cg::Ellipsoid<double>{Vector3(0.25, 0.2, 0.22)};
    case Shape::Torus: return cg::Torus<double>{0.3, 0.12};
  }
  return cg::Sphere<double>{0.2};
}
SimTK::ContactGeometry simbodySurface(Shape s) {
  switch (s) {
    case Shape::Sphere: return SimTK::ContactGeometry::Sphere(0.2);
    case Shape::Cylinder: return SimTK::ContactGeometry::Cylinder(0.2);
    case Shape::Ellipsoid: return SimTK::ContactGeometry::Ellipsoid(SimTK::Vec3(0.25, 0.2, 0.22));
    case Shape::Torus: return SimTK::ContactGeometry::Torus(0.3, 0.12);
  }
  return SimTK::ContactGeometry::Sphere(0.2);
}

const Vector3 kOrigin(-1.0, 0.05, 0.0);
Vector3 termination(int n) { return Vector3(kSpacing * n, 0.05, 0.02); }

cc::CablePath ourPath(int n, double accuracy, double tolerance) {
  cc::CablePath path = cc::makeCablePath(kOrigin, termination(n));
  path.options.geodesic.accuracy = accuracy;
  path.options.tolerance = tolerance;
  for (int i = 0; i < n; ++i)
    cc::addWrap(path, ourSurface(shapeOf(i)), Matrix3::Identity(), Vector3::Zero(), nearOf(i));
  return path;
}

std::vector<Motion> framesAt(int n, double t) {
  std::vector<Motion> f(static_cast<std::size_t>(n + 2));
  for (int i = 0; i < n; ++i) {
    const Pose x = poseAt(i, t);
    auto& m = f[static_cast<std::size_t>(i + 1)];
    m.R_WF = x.R;
    m.p_WF = x.p;
    m.w_WF = x.w;
    m.v_WF = x.v;
  }
  return f;
}

// Our lengths along the trajectory (and the shots per update).
struct OurRun {
  std::vector<double> lengths;
  double shotsPerUpdate = 0;
  bool ok = true;
  cc::CablePathState start;
};

OurRun runOurs(const cc::CablePath& path, int n) {
  OurRun run;
  {
    const cc::CableResult res = cc::solveForInitialCablePath(path, framesAt(n, 0), run.start);
    if (!res.ok()) {
      std::fprintf(stderr, "initial path, N = %d: %s\n", n, res.message().c_str());
      run.ok = false;
      return run;
    }
  }
  cc::CablePathState st = run.start;
  long shots = 0;
  for (int k = 1; k <= kSteps; ++k) {
    const cc::CableResult res = cc::updateCablePath(path, framesAt(n, k * kDt), st);
    shots += res.shots;
    int lifted = 0;
    for (int i = n; i >= 1; --i)
      if (!st.obstacles[static_cast<std::size_t>(i)].active) lifted = i;
    if (!res.ok() || lifted) {
      if (run.ok) std::fprintf(stderr, "N = %d, step %d: %s; first wrap off: %d\n", n, k, res.message().c_str(), lifted);
      run.ok = false;
    }
    run.lengths.push_back(st.length);
  }
  run.shotsPerUpdate = static_cast<double>(shots) / kSteps;
  return run;
}

// Simbody's model: the same bodies and cable; hints from our start.
struct SimbodyModel {
  SimTK::MultibodySystem system;
  SimTK::SimbodyMatterSubsystem matter{system};
  SimTK::CableTrackerSubsystem cables{system};
  std::vector<SimTK::MobilizedBody::Free> bodies;
  std::unique_ptr<SimTK::CablePath> path;
  std::vector<SimTK::CableObstacle::Surface> obstacles;
  SimTK::State state;
  double lengthDot = 0;

  SimbodyModel(int n, bool withCable, const cc::CablePathState& hints) {
    using namespace SimTK;
    const Body::Rigid body(MassProperties(1.0, Vec3(0), Inertia(1)));
    for (int i = 0; i < n; ++i) bodies.emplace_back(matter.Ground(), Transform(), body, Transform());
    if (withCable) {
      const Vector3 T = termination(n);
      path = std::make_unique<CablePath>(cables, matter.Ground(), Vec3(kOrigin.x(), kOrigin.y(), kOrigin.z()),
                                         matter.Ground(), Vec3(T.x(), T.y(), T.z()));
      const std::vector<cc::Motion> f0 = framesAt(n, 0);
      for (int i = 0; i < n; ++i) {
        obstacles.emplace_back(*path, bodies[static_cast<std::size_t>(i)], Transform(), simbodySurface(shapeOf(i)));
        const auto& o = hints.obstacles[static_cast<std::size_t>(i + 1)];
        const cc::Motion& F = f0[static_cast<std::size_t>(i + 1)];
        const Vector3 P = F.R_WF.transpose() * (o.P.p_W - F.p_WF), Q = F.R_WF.transpose() * (o.Q.p_W - F.p_WF);
        obstacles.back().setContactPointHints(Vec3(P.x(), P.y(), P.z()), Vec3(Q.x(), Q.y(), Q.z()));
      }
    }
    MuteCout mute;
    system.realizeTopology();
    state = system.getDefaultState();
  }

  void setTime(int n, double t) {
    using namespace SimTK;
    for (int i = 0; i < n; ++i) {
      const Pose x = poseAt(i, t);
      Mat33 R;
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) R(r, c) = x.R(r, c);
      bodies[static_cast<std::size_t>(i)].setQToFitTransform(state, Transform(Rotation(R, true), Vec3(x.p.x(), x.p.y(), x.p.z())));
      bodies[static_cast<std::size_t>(i)].setUToFitVelocity(
          state, SpatialVec(Vec3(x.w.x(), x.w.y(), x.w.z()), Vec3(x.v.x(), x.v.y(), x.v.z())));
    }
  }
  // One step as an integrator ends it: realize, read, commit the path as
  // the next step's previous solution. (Debian's Simbody then needs its
  // Instance stage re-realized: its update cache entry is otherwise left
  // uninitialized by the swap and the next solve aborts on an assert.)
  double step(int n, double t) {
    setTime(n, t);
    system.realize(state, SimTK::Stage::Velocity);
    const double L = path ? path->getCableLength(state) : 0;
    lengthDot = path ? path->getCableLengthDot(state) : 0;
    state.autoUpdateDiscreteVariables();
    state.invalidateAllCacheAtOrAbove(SimTK::Stage::Instance);
    return L;
  }
};

struct Row {
  int n;
  double ours, oursMatched, simbody, oursShots, oursMatchedShots;
  double oursErr, oursMatchedErr, simbodyErr;
  bool ok;
};

Row benchmark(int n) {
  Row row{};
  row.n = n;
  const cc::CablePath reference = ourPath(n, 1e-13, 1e-13);
  const cc::CablePath fast = ourPath(n, 1e-10, 1e-10);
  const cc::CablePath matched = ourPath(n, 1e-6, 1e-9);
  const OurRun ref = runOurs(reference, n), a = runOurs(fast, n), b = runOurs(matched, n);
  row.ok = ref.ok && a.ok && b.ok;
  const auto worst = [&](const std::vector<double>& L) {
    double e = 0;
    for (std::size_t k = 0; k < L.size() && k < ref.lengths.size(); ++k) e = std::max(e, std::abs(L[k] - ref.lengths[k]));
    return e;
  };
  row.oursErr = worst(a.lengths);
  row.oursMatchedErr = worst(b.lengths);
  row.oursShots = a.shotsPerUpdate;
  row.oursMatchedShots = b.shotsPerUpdate;

  // Simbody's lengths along the same trajectory.
  SimbodyModel withCable(n, true, ref.start), without(n, false, ref.start);
  {
    MuteCout mute;
    std::vector<double> L;
    withCable.step(n, 0);
    for (int k = 1; k <= kSteps; ++k) L.push_back(withCable.step(n, k * kDt));
    row.simbodyErr = L.size() == ref.lengths.size() ? worst(L) : INFINITY;
  }
  // Nothing is timed unless all three solvers follow the same path.
  row.ok = row.ok && row.oursErr <= kOurAgreement && row.oursMatchedErr <= kOurAgreement &&
           row.simbodyErr <= kSimbodyAgreement;
  if (!row.ok) {
    std::fprintf(stderr, "N = %d: the paths disagree (length errors: ours %.2g, ours at Simbody's accuracy %.2g, Simbody %.2g m)\n",
                 n, row.oursErr, row.oursMatchedErr, row.simbodyErr);
    return row;
  }

  const auto timeOurs = [&](const cc::CablePath& path, const OurRun& run) {
    // Frames precomputed: the update alone is timed.
    std::vector<std::vector<Motion>> frames;
    for (int k = 1; k <= kSteps; ++k) frames.push_back(framesAt(n, k * kDt));
    return medianBatch([&] {
             cc::CablePathState st = run.start;
             for (const auto& f : frames) {
               cc::updateCablePath(path, f, st);
               gSink = gSink + st.length;
             }
           }) /
           kSteps;
  };
  row.ours = timeOurs(fast, a);
  row.oursMatched = timeOurs(matched, b);
  const int simbodySteps = 60;  // Simbody is slow: a shorter stretch of the same trajectory
  const auto timeSimbody = [&](SimbodyModel& m) {
    MuteCout mute;
    return medianBatch(
               [&] {
                 for (int k = 1; k <= simbodySteps; ++k) gSink = gSink + m.step(n, k * kDt);
               },
               5) /
           simbodySteps;
  };
  row.simbody = timeSimbody(withCable) - timeSimbody(without);
  return row;
}

}  // namespace

int main() {
  std::vector<Row> rows;
  for (const int n : {1, 3, 6}) {
    rows.push_back(benchmark(n));
    if (!rows.back().ok) return 1;  // a timing of different paths means nothing
  }
  std::printf("{\n  \"steps\": %d,\n  \"models\": [\n", kSteps);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& x = rows[r];
    std::printf("    {\"obstacles\": %d, \"shapes\": \"", x.n);
    for (int i = 0; i < x.n; ++i) std::printf("%s%s", i ? "," : "", shapeName(shapeOf(i)));
    std::printf("\", \"checked\": %s,\n", x.ok ? "true" : "false");
    std::printf("     \"capstan_us\": %.3g, \"capstan_shots_per_update\": %.3g, \"capstan_length_error_m\": %.2g,\n", x.ours,
                x.oursShots, x.oursErr);
    std::printf("     \"capstan_simbody_accuracy_us\": %.3g, \"capstan_simbody_accuracy_shots_per_update\": %.3g, "
                "\"capstan_simbody_accuracy_length_error_m\": %.2g,\n",
                x.oursMatched, x.oursMatchedShots, x.oursMatchedErr);
    std::printf("     \"simbody_us\": %.4g, \"simbody_length_error_m\": %.2g,\n", x.simbody, x.simbodyErr);
    std::printf("     \"ratio_simbody_over_capstan\": %.3g, \"ratio_simbody_over_capstan_simbody_accuracy\": %.3g}%s\n",
                x.simbody / x.ours, x.simbody / x.oursMatched, r + 1 < rows.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
  return 0;
}
