// Geodesics on the ellipsoid (0.5, 0.3, 0.2): capstan::geometry vs Simbody's
// ContactGeometry on the same inputs, in the same run.
//
//   shoot   shootGeodesicInDirectionUntilLengthReached, length 1
//   cold    point-to-point from scratch (orthogonal method, chord guess)
//   warm    continueGeodesic along a path of end points moving ~1 mm a step
//
// For each: CPU time per call (median of batches), end-point error against a
// reference (our integrator at accuracy 1e-14 for shots; |x_end - Q| for
// point-to-point; for warm starts also the length and the Jacobi field at Q
// against a 1e-14 solve), and the ratio Simbody time / Capstan time. Prints JSON.
// Reproduce: bench/geometry/run.sh
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

#include <capstan/geometry/geometry.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <vector>

#include "timing.hpp"

namespace cg = capstan::geometry;
using Vec3 = cg::Vec3<double>;

namespace {

SimTK::Vec3 sim(const Vec3& v) { return SimTK::Vec3(v.x(), v.y(), v.z()); }
Vec3 cap(const SimTK::Vec3& v) { return Vec3(v[0], v[1], v[2]); }

// Median over batches of the mean CPU time per call, in microseconds.
template <class F> double timePerCall(F&& f, int callsPerBatch, int batches = 7) {
  std::vector<double> t;
  for (int b = 0; b < batches; ++b) {
    const double t0 = bench::threadMicroseconds();
    for (int i = 0; i < callsPerBatch; ++i) f(i);
    t.push_back((bench::threadMicroseconds() - t0) / callsPerBatch);
  }
  return bench::median(t);
}

// Simbody's continueGeodesic and orthogonal method print to std::cout.
struct MuteCout {
  std::ostringstream sink;
  std::streambuf* old = std::cout.rdbuf(sink.rdbuf());
  ~MuteCout() { std::cout.rdbuf(old); }
};

volatile double gSink = 0;  // keeps results alive

}  // namespace

int main() {
  const cg::Ellipsoid<double> ell{Vec3(0.5, 0.3, 0.2)};
  const SimTK::ContactGeometry::Ellipsoid sEll(SimTK::Vec3(0.5, 0.3, 0.2));
  sEll.setPlane(SimTK::Plane(SimTK::Vec3(1, 0, 0), 1e9));  // see tests/crosscheck/geometry_simbody_test.cpp
  const SimTK::GeodesicOptions sOpt;
  std::mt19937 rng(2026);
  std::normal_distribution<double> nd(0, 1);
  const auto randomUnit = [&] { return Vec3(nd(rng), nd(rng), nd(rng)).normalized(); };

  // ---------------------------------------------------------------- shoot
  constexpr int kShots = 32;
  std::vector<Vec3> P(kShots), T(kShots), ref(kShots);
  cg::GeodesicOptions<double> refOpt;
  refOpt.accuracy = 1e-14;
  for (int i = 0; i < kShots; ++i) {
    P[i] = cg::findNearestPoint(ell, randomUnit()).point;
    T[i] = cg::frameFromNormalAndHint(cg::calcSurfaceUnitNormal(ell, P[i]), randomUnit()).col(0);
    ref[i] = cg::shootGeodesicInDirectionUntilLengthReached(ell, P[i], T[i], 1.0, refOpt).pointQ();
  }
  const auto shotError = [&](const cg::GeodesicOptions<double>& opt) {
    double worst = 0;
    for (int i = 0; i < kShots; ++i)
      worst = std::max(worst, (cg::shootGeodesicInDirectionUntilLengthReached(ell, P[i], T[i], 1.0, opt).pointQ() - ref[i]).norm());
    return worst;
  };
  // The loosest integrator accuracy whose worst end-point error is <= 1e-10.
  cg::GeodesicOptions<double> shootOpt;
  for (const double acc : {2e-8, 1e-8, 5e-9, 2e-9, 1e-9, 5e-10, 2e-10, 1e-10, 5e-11, 2e-11, 1e-11, 1e-12}) {
    shootOpt.accuracy = acc;
    if (shotError(shootOpt) <= 1e-10) break;
  }
  const double oursShootErr = shotError(shootOpt);
  double simbodyShootErr = 0;
  for (int i = 0; i < kShots; ++i) {
    SimTK::Geodesic g;
    sEll.shootGeodesicInDirectionUntilLengthReached(sim(P[i]), SimTK::UnitVec3(sim(T[i])), 1.0, sOpt, g);
    simbodyShootErr = std::max(simbodyShootErr, (cap(g.getPointQ()) - ref[i]).norm());
  }
  int steps = 0;
  for (int i = 0; i < kShots; ++i) steps += cg::shootGeodesicInDirectionUntilLengthReached(ell, P[i], T[i], 1.0, shootOpt).stepsTaken;
  const double oursShoot = timePerCall(
      [&](int i) {
        gSink = gSink + cg::shootGeodesicInDirectionUntilLengthReached(ell, P[i % kShots], T[i % kShots], 1.0, shootOpt).pointQ().x();
      },
      2000);
  cg::GeodesicOptions<double> endsOnly = shootOpt;
  endsOnly.storeInteriorPoints = false;
  const double oursShootEnds = timePerCall(
      [&](int i) {
        gSink = gSink + cg::shootGeodesicInDirectionUntilLengthReached(ell, P[i % kShots], T[i % kShots], 1.0, endsOnly).pointQ().x();
      },
      2000);
  // The loosest accuracy whose error is still no worse than Simbody's.
  cg::GeodesicOptions<double> matchedOpt;
  for (const double acc : {1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7, 3e-8, 1e-8}) {
    matchedOpt.accuracy = acc;
    if (shotError(matchedOpt) <= simbodyShootErr) break;
  }
  const double matchedShootErr = shotError(matchedOpt);
  const double oursShootMatched = timePerCall(
      [&](int i) {
        gSink = gSink + cg::shootGeodesicInDirectionUntilLengthReached(ell, P[i % kShots], T[i % kShots], 1.0, matchedOpt).pointQ().x();
      },
      2000);
  const double simbodyShoot = timePerCall(
      [&](int i) {
        SimTK::Geodesic g;
        sEll.shootGeodesicInDirectionUntilLengthReached(sim(P[i % kShots]), SimTK::UnitVec3(sim(T[i % kShots])), 1.0, sOpt, g);
        gSink = gSink + g.getPointQ()[0];
      },
      200);

  // ---------------------------------------------------------------- cold point-to-point
  constexpr int kPairs = 32;
  std::vector<Vec3> A(kPairs), B(kPairs);
  for (int i = 0; i < kPairs; ++i) {
    A[i] = cg::findNearestPoint(ell, randomUnit()).point;
    B[i] = cg::findNearestPoint(ell, Vec3(A[i] + 0.4 * randomUnit())).point;
  }
  cg::GeodesicOptions<double> p2pOpt = shootOpt;
  p2pOpt.pointTolerance = 1e-10;
  double oursColdErr = 0, simbodyColdErr = 0;
  int oursColdOk = 0, simbodyColdOk = 0;
  {
    MuteCout mute;
    for (int i = 0; i < kPairs; ++i) {
      const auto g = cg::calcGeodesicUsingOrthogonalMethod(ell, A[i], B[i], p2pOpt);
      if (g.ok()) {
        ++oursColdOk;
        oursColdErr = std::max(oursColdErr, (g.pointQ() - B[i]).norm());
      }
      SimTK::Geodesic sg;
      sEll.calcGeodesicUsingOrthogonalMethod(sim(A[i]), sim(B[i]), sg);
      const double e = (cap(sg.getPointQ()) - B[i]).norm();
      if (e < 1e-6) {
        ++simbodyColdOk;
        simbodyColdErr = std::max(simbodyColdErr, e);
      }
    }
  }
  const double oursCold = timePerCall(
      [&](int i) { gSink = gSink + cg::calcGeodesicUsingOrthogonalMethod(ell, A[i % kPairs], B[i % kPairs], p2pOpt).length(); },
      500);
  double simbodyCold;
  {
    MuteCout mute;
    simbodyCold = timePerCall(
        [&](int i) {
          SimTK::Geodesic sg;
          sEll.calcGeodesicUsingOrthogonalMethod(sim(A[i % kPairs]), sim(B[i % kPairs]), sg);
          gSink = gSink + sg.getLength();
        },
        20, 5);
  }

  // ---------------------------------------------------------------- warm start
  constexpr int kPath = 400;
  std::vector<Vec3> pathP(kPath), pathQ(kPath);
  const Vec3 P0 = cg::findNearestPoint(ell, Vec3(0.4, 0.2, 0.1)).point;
  const Vec3 Q0 = cg::findNearestPoint(ell, Vec3(-0.2, 0.25, 0.1)).point;
  for (int k = 0; k < kPath; ++k) {
    const double a = 1e-3 * k;  // ~1 mm per step
    pathP[k] = cg::findNearestPoint(ell, Vec3(P0 + Vec3(0, a, -a))).point;
    pathQ[k] = cg::findNearestPoint(ell, Vec3(Q0 + Vec3(a, 0, a))).point;
  }
  const cg::Geodesic<double> start = cg::initGeodesic(ell, pathP[0], pathQ[0], std::nullopt, p2pOpt);
  // Every 20th update is also compared with a reference solve (accuracy
  // 1e-14, miss 1e-13, started from the update's own answer): the length
  // and the directional Jacobi field at Q (m/rad).
  double oursWarmErr = 0, oursWarmLengthErr = 0, oursWarmJacobiErr = 0;
  int oursWarmOk = 0, oursWarmShots = 0;
  {
    cg::GeodesicOptions<double> refP2p = refOpt;
    refP2p.pointTolerance = 1e-13;
    cg::Geodesic<double> g = start;
    for (int k = 1; k < kPath; ++k) {
      g = cg::continueGeodesic(ell, pathP[k], pathQ[k], g, p2pOpt);
      oursWarmOk += g.ok();
      oursWarmShots += g.shots;
      oursWarmErr = std::max(oursWarmErr, (g.pointQ() - pathQ[k]).norm());
      if (k % 20 == 0) {
        const auto r = cg::calcGeodesicUsingOrthogonalMethod(ell, pathP[k], pathQ[k], g.tangentP(), g.length(), refP2p);
        oursWarmLengthErr = std::max(oursWarmLengthErr, std::abs(r.length() - g.length()));
        oursWarmJacobiErr = std::max(oursWarmJacobiErr, std::abs(r.jacobiQ() - g.jacobiQ()));
      }
    }
  }
  cg::Geodesic<double> warm = start;
  const double oursWarm = timePerCall(
      [&](int i) {
        const int k = 1 + i % (kPath - 1);
        if (k == 1) warm = start;
        warm = cg::continueGeodesic(ell, pathP[k], pathQ[k], warm, p2pOpt);
        gSink = gSink + warm.length();
      },
      kPath - 1);
  // The same path at Simbody's accuracy (shots no worse than Simbody's, Q to 1e-7).
  cg::GeodesicOptions<double> matchedP2p = matchedOpt;
  matchedP2p.pointTolerance = 1e-7;
  double matchedWarmErr = 0;
  int matchedWarmOk = 0;
  {
    cg::Geodesic<double> g = start;
    for (int k = 1; k < kPath; ++k) {
      g = cg::continueGeodesic(ell, pathP[k], pathQ[k], g, matchedP2p);
      matchedWarmOk += g.ok();
      matchedWarmErr = std::max(matchedWarmErr, (g.pointQ() - pathQ[k]).norm());
    }
  }
  const double oursWarmMatched = timePerCall(
      [&](int i) {
        const int k = 1 + i % (kPath - 1);
        if (k == 1) warm = start;
        warm = cg::continueGeodesic(ell, pathP[k], pathQ[k], warm, matchedP2p);
        gSink = gSink + warm.length();
      },
      kPath - 1);
  // Sphere of radius 0.4, closed-form shots: the same kind of path.
  const cg::Sphere<double> sphere{0.4};
  std::vector<Vec3> sphP(kPath), sphQ(kPath);
  for (int k = 0; k < kPath; ++k) {
    sphP[k] = cg::findNearestPoint(sphere, Vec3(pathP[k] * 0.8)).point;
    sphQ[k] = cg::findNearestPoint(sphere, Vec3(pathQ[k] * 0.8)).point;
  }
  const cg::Geodesic<double> sphStart = cg::initGeodesic(sphere, sphP[0], sphQ[0], std::nullopt, p2pOpt);
  cg::Geodesic<double> sphWarm = sphStart;
  const double oursWarmSphere = timePerCall(
      [&](int i) {
        const int k = 1 + i % (kPath - 1);
        if (k == 1) sphWarm = sphStart;
        sphWarm = cg::continueGeodesic(sphere, sphP[k], sphQ[k], sphWarm, p2pOpt);
        gSink = gSink + sphWarm.length();
      },
      kPath - 1);
  double simbodyWarm, simbodyWarmErr = 0;
  int simbodyWarmOk = 0;
  {
    MuteCout mute;
    SimTK::Geodesic sStart;
    sEll.calcGeodesicUsingOrthogonalMethod(sim(pathP[0]), sim(pathQ[0]), sStart);
    SimTK::Geodesic sPrev = sStart;
    for (int k = 1; k < kPath; ++k) {
      SimTK::Geodesic sg;
      sEll.continueGeodesic(sim(pathP[k]), sim(pathQ[k]), sPrev, sOpt, sg);
      const double e = (cap(sg.getPointQ()) - pathQ[k]).norm();
      simbodyWarmErr = std::max(simbodyWarmErr, e);
      simbodyWarmOk += e < 1e-6;
      sPrev = sg;
    }
    SimTK::Geodesic sWarm = sStart;
    simbodyWarm = timePerCall(
        [&](int i) {
          const int k = 1 + i % (kPath - 1);
          if (k == 1) sWarm = sStart;
          SimTK::Geodesic sg;
          sEll.continueGeodesic(sim(pathP[k]), sim(pathQ[k]), sWarm, sOpt, sg);
          sWarm = sg;
          gSink = gSink + sg.getLength();
        },
        kPath - 1, 3);
  }

  std::printf("{\n");
  std::printf("  \"surface\": \"ellipsoid (0.5, 0.3, 0.2)\",\n");
  std::printf("  \"shoot_length_1\": {\"capstan_us\": %.3f, \"simbody_us\": %.3f, \"ratio\": %.1f,\n", oursShoot,
              simbodyShoot, simbodyShoot / oursShoot);
  std::printf("    \"capstan_accuracy_option\": %.0e, \"capstan_steps_per_shot\": %.1f,\n", shootOpt.accuracy,
              double(steps) / kShots);
  std::printf("    \"capstan_max_end_error_m\": %.2e, \"simbody_max_end_error_m\": %.2e,\n", oursShootErr, simbodyShootErr);
  std::printf("    \"capstan_ends_only_us\": %.3f, \"ratio_ends_only\": %.1f,\n", oursShootEnds, simbodyShoot / oursShootEnds);
  std::printf("    \"capstan_at_simbody_accuracy_us\": %.3f, \"accuracy_option\": %.0e, \"max_end_error_m\": %.2e, \"ratio\": %.1f},\n",
              oursShootMatched, matchedOpt.accuracy, matchedShootErr, simbodyShoot / oursShootMatched);
  std::printf("  \"point_to_point_cold\": {\"capstan_us\": %.3f, \"simbody_us\": %.3f, \"ratio\": %.1f,\n", oursCold,
              simbodyCold, simbodyCold / oursCold);
  std::printf("    \"capstan_converged\": \"%d/%d\", \"simbody_converged\": \"%d/%d\",\n", oursColdOk, kPairs,
              simbodyColdOk, kPairs);
  std::printf("    \"capstan_max_miss_m\": %.2e, \"simbody_max_miss_m\": %.2e},\n", oursColdErr, simbodyColdErr);
  std::printf("  \"continue_geodesic_warm\": {\"capstan_us\": %.3f, \"simbody_us\": %.3f, \"ratio\": %.1f,\n", oursWarm,
              simbodyWarm, simbodyWarm / oursWarm);
  std::printf("    \"capstan_ok\": \"%d/%d\", \"capstan_shots_per_update\": %.2f, \"simbody_ok\": \"%d/%d\",\n",
              oursWarmOk, kPath - 1, double(oursWarmShots) / (kPath - 1), simbodyWarmOk, kPath - 1);
  std::printf("    \"capstan_max_miss_m\": %.2e, \"simbody_max_miss_m\": %.2e,\n", oursWarmErr, simbodyWarmErr);
  std::printf("    \"capstan_max_length_error_m\": %.2e, \"capstan_max_jacobi_q_error_m\": %.2e,\n", oursWarmLengthErr,
              oursWarmJacobiErr);
  std::printf("    \"capstan_at_simbody_accuracy_us\": %.3f, \"ok\": \"%d/%d\", \"max_miss_m\": %.2e, \"ratio\": %.1f},\n",
              oursWarmMatched, matchedWarmOk, kPath - 1, matchedWarmErr, simbodyWarm / oursWarmMatched);
  std::printf("  \"continue_geodesic_warm_sphere_closed_form\": {\"capstan_us\": %.3f}\n", oursWarmSphere);
  std::printf("}\n");
  return 0;
}
