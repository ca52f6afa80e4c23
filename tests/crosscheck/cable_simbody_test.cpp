// capstan::cable against Simbody 3.7's CablePath (Debian libsimbody-dev) on
// the same mechanism: a cable from a point on Ground over a sphere or a
// cylinder carried by a free body to a point on a pendulum, at several
// states (poses and velocities of both bodies). Length and length rate are
// compared, and our length against the closed form as well.
//
// How Simbody is driven. Its CablePath starts Newton from contact-point
// hints (setContactPointHints) and warm starts from the previous solution
// only through its auto-update discrete variables; with a single surface
// Debian's build (asserts on) aborts inside calcPathErrorJacobian on the
// second, warm solve. So every state gets a fresh system whose hints are
// our solution's contact points: Simbody converges from them onto its own
// solution. Its geodesics are integrated at its hard-coded accuracy 1e-6,
// which leaves its length ~5e-8 m from the closed form (measured below);
// its length rate, from the contact points' velocities, is far more
// accurate. Simbody prints its iterations to std::cout; muted here.
#pragma GCC diagnostic ignored "-Warray-bounds"
#include "simbody_cxx20.hpp"  // <Simbody.h>; first: it clears NDEBUG

#include <capstan/cable_path.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <iostream>
#include <sstream>

namespace cc = capstan::cable;
namespace cg = capstan::geometry;
using cc::Matrix3;
using cc::Motion;
using cc::Vector3;

namespace {

// Relative differences, ours vs Simbody. Simbody integrates its geodesics at
// a fixed accuracy of 1e-6; against the closed forms its lengths are off by
// 1e-8 to 2e-8 (sphere) and 6e-8 to 1.5e-7 (cylinder, helices), while ours
// are within kOursVsClosedForm. Its contact points, and so its length rate,
// are exact to round-off on the sphere (great circles integrate exactly) and
// off by up to ~1.2e-7 on the cylinder's helices.
constexpr double kLengthAgreement = 2e-7;
constexpr double kSphereRateAgreement = 1e-8;    // scale 1 m/s
constexpr double kCylinderRateAgreement = 2e-7;  // scale 1 m/s
constexpr double kOursVsClosedForm = 1e-12;      // our length against tangent lines plus arc

SimTK::Vec3 sim(const Vector3& v) { return SimTK::Vec3(v.x(), v.y(), v.z()); }
Vector3 cap(const SimTK::Vec3& v) { return Vector3(v[0], v[1], v[2]); }
Matrix3 cap(const SimTK::Rotation& R) {
  Matrix3 m;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m(i, j) = R.asMat33()(i, j);
  return m;
}

struct MuteCout {
  std::ostringstream sink;
  std::streambuf* old = std::cout.rdbuf(sink.rdbuf());
  ~MuteCout() { std::cout.rdbuf(old); }
};

// One mechanism state: the free body's pose and twist, the pendulum's angle and rate.
struct MechanismState {
  SimTK::Quaternion quaternion;
  SimTK::Vec3 position, angularVelocity, linearVelocity;  // in Ground (= the Free joint's F)
  double angle, rate;                                    // pendulum, about Ground z
};

constexpr double kPendulumLength = 1.0;  // m: pivot at (1.6, 1, 0), termination point at its tip

struct Lengths {
  double length, lengthDot;
};

// Simbody's length and rate at `s` for a cable O -> surface -> T, Newton
// started from the hints (S = the free body's frame).
Lengths simbodyCable(const SimTK::ContactGeometry& geometry, const Vector3& O, const Vector3& T_pendulum,
                     const MechanismState& s, const Vector3& hintP, const Vector3& hintQ) {
  using namespace SimTK;
  MultibodySystem system;
  SimbodyMatterSubsystem matter(system);
  CableTrackerSubsystem cables(system);
  const Body::Rigid body(MassProperties(1.0, Vec3(0), Inertia(1)));
  MobilizedBody::Free carrier(matter.Ground(), Transform(), body, Transform());
  MobilizedBody::Pin pendulum(matter.Ground(), Transform(Vec3(1.6, 1, 0)), body, Transform(Vec3(0, kPendulumLength, 0)));
  CablePath path(cables, matter.Ground(), sim(O), pendulum, sim(T_pendulum));
  CableObstacle::Surface obstacle(path, carrier, Transform(), geometry);
  obstacle.setContactPointHints(sim(hintP), sim(hintQ));
  MuteCout mute;
  system.realizeTopology();
  State state = system.getDefaultState();
  carrier.setQToFitTransform(state, Transform(Rotation(s.quaternion), s.position));
  carrier.setUToFitVelocity(state, SpatialVec(s.angularVelocity, s.linearVelocity));
  pendulum.setOneQ(state, 0, s.angle);
  pendulum.setOneU(state, 0, s.rate);
  system.realize(state, Stage::Velocity);
  return {path.getCableLength(state), path.getCableLengthDot(state)};
}

// Our frames for the same state: Ground, the free body, the pendulum.
std::vector<Motion> ourFrames(const MechanismState& s) {
  std::vector<Motion> f(3);
  f[1].R_WF = cap(SimTK::Rotation(s.quaternion));
  f[1].p_WF = cap(s.position);
  f[1].w_WF = cap(s.angularVelocity);
  f[1].v_WF = cap(s.linearVelocity);
  // Pendulum body frame: origin at the pivot minus R (0, L, 0) (Simbody's
  // M frame sits L above the body origin), rotating about z.
  const Vector3 pivot(1.6, 1, 0);
  f[2].R_WF = Eigen::AngleAxisd(s.angle, Vector3::UnitZ()).toRotationMatrix();
  f[2].p_WF = pivot - f[2].R_WF * Vector3(0, kPendulumLength, 0);
  f[2].w_WF = Vector3(0, 0, s.rate);
  f[2].v_WF = f[2].w_WF.cross(f[2].p_WF - pivot);
  return f;
}

const MechanismState kStates[] = {
    {SimTK::Quaternion(1, 0, 0, 0), SimTK::Vec3(0, 0, 0), SimTK::Vec3(0.3, -0.2, 0.5), SimTK::Vec3(0.1, 0.2, -0.3), 0.2,
     0.7},
    {SimTK::Quaternion(0.9, 0.1, -0.2, 0.3), SimTK::Vec3(0.05, -0.1, 0.08), SimTK::Vec3(-0.4, 0.1, 0.2),
     SimTK::Vec3(0.3, -0.1, 0.2), -0.1, -0.5},
    {SimTK::Quaternion(0.7, -0.3, 0.4, 0.2), SimTK::Vec3(-0.1, 0.05, -0.05), SimTK::Vec3(0.6, 0.3, -0.1),
     SimTK::Vec3(-0.2, 0.3, 0.1), 0.35, 1.2},
    {SimTK::Quaternion(0.9, 0.3, 0.1, 0.2), SimTK::Vec3(0.02, 0.12, 0.1), SimTK::Vec3(0, 0, 1.0),
     SimTK::Vec3(0, 0.4, 0), 0.0, -0.9},
};

// The frames a time h later (earlier for h < 0) at constant twists: a
// central difference over +-h is the derivative along the velocities.
std::vector<Motion> advanced(std::vector<Motion> f, double h) {
  for (Motion& m : f) {
    const double angle = m.w_WF.norm() * h;
    if (angle != 0) m.R_WF = Eigen::AngleAxisd(angle, m.w_WF.normalized()).toRotationMatrix() * m.R_WF;
    m.p_WF += m.v_WF * h;
  }
  return f;
}

constexpr double kClosedFormStep = 1e-5;  // s, central difference of the closed form

// closedForm(frames, O_W, T_W): the length from the closed form.
template <class Surface, class ClosedForm>
void crossCheck(const Surface& ours, const SimTK::ContactGeometry& theirs, const Vector3& O, const Vector3& T_pendulum,
                double rateAgreement, ClosedForm closedForm) {
  cc::CablePath path = cc::makeCablePath(O, T_pendulum);
  cc::addWrap(path, ours);
  cc::CablePathState st;
  double worstLength = 0, worstRate = 0, worstClosed = 0, worstClosedRate = 0;
  int compared = 0;
  for (const MechanismState& s : kStates) {
    const std::vector<Motion> frames = ourFrames(s);
    const cc::CableResult res = cc::solveForInitialCablePath(path, frames, st);
    REQUIRE_MESSAGE(res.ok(), res.message());
    REQUIRE(st.obstacles[1].active);
    // Hints: our contact points in the body frame (= S).
    const Vector3 hintP = frames[1].R_WF.transpose() * (st.obstacles[1].P.p_W - frames[1].p_WF);
    const Vector3 hintQ = frames[1].R_WF.transpose() * (st.obstacles[1].Q.p_W - frames[1].p_WF);
    const Lengths theirsNow = simbodyCable(theirs, O, T_pendulum, s, hintP, hintQ);
    const double dL = std::abs(theirsNow.length - st.length) / st.length;
    const double dRate = std::abs(theirsNow.lengthDot - st.lengthDot) / std::max(1.0, std::abs(st.lengthDot));
    const auto closedAt = [&](const std::vector<Motion>& f) {
      return closedForm(f, Vector3(f[0].p_WF + f[0].R_WF * O), Vector3(f[2].p_WF + f[2].R_WF * T_pendulum));
    };
    const double closed = std::abs(closedAt(frames) - st.length) / st.length;
    const double closedRate =
        (closedAt(advanced(frames, kClosedFormStep)) - closedAt(advanced(frames, -kClosedFormStep))) / (2 * kClosedFormStep);
    CHECK(std::abs(closedRate - st.lengthDot) <= kSphereRateAgreement * std::max(1.0, std::abs(st.lengthDot)));
    worstClosedRate = std::max(worstClosedRate, std::abs(closedRate - st.lengthDot) / std::max(1.0, std::abs(st.lengthDot)));
    MESSAGE("state " << compared << ": length " << st.length << " vs Simbody " << theirsNow.length << " (rel " << dL
                      << "), rate " << st.lengthDot << " vs " << theirsNow.lengthDot << " (rel " << dRate << ")");
    CHECK_MESSAGE(dL <= kLengthAgreement, "length ours " << st.length << " Simbody " << theirsNow.length);
    CHECK_MESSAGE(dRate <= rateAgreement, "rate ours " << st.lengthDot << " Simbody " << theirsNow.lengthDot);
    CHECK(closed <= kOursVsClosedForm);
    worstLength = std::max(worstLength, dL);
    worstRate = std::max(worstRate, dRate);
    worstClosed = std::max(worstClosed, closed);
    ++compared;
  }
  CHECK(compared == 4);
  MESSAGE("relative differences, ours vs Simbody: length " << worstLength << ", rate " << worstRate
                                                             << "; ours vs closed form: length " << worstClosed
                                                             << ", rate (central difference) " << worstClosedRate);
}

// Tangent lines plus arc in the plane through O, T and the centre c.
double sphereLength(const Vector3& O, const Vector3& T, const Vector3& c, double r) {
  const Vector3 a = O - c, b = T - c;
  const double la = a.norm(), lb = b.norm();
  const double angle = std::acos(std::clamp(a.dot(b) / (la * lb), -1.0, 1.0));
  return std::sqrt(la * la - r * r) + std::sqrt(lb * lb - r * r) + r * (angle - std::acos(r / la) - std::acos(r / lb));
}

constexpr double kSphereRadius = 0.5, kCylinderRadius = 0.3;

}  // namespace

TEST_CASE("cable over a sphere carried by a free body: length and rate vs Simbody's CablePath") {
  const Vector3 O(-1, 0.2, 0), T(0, 0, 0.1);  // T at the pendulum's tip
  crossCheck(cg::Sphere<double>{kSphereRadius}, SimTK::ContactGeometry::Sphere(kSphereRadius), O, T,
             kSphereRateAgreement, [](const std::vector<Motion>& f, const Vector3& o, const Vector3& t) {
               return sphereLength(o, t, f[1].p_WF, kSphereRadius);
             });
}

TEST_CASE("cable over a cylinder carried by a free body: length and rate vs Simbody's CablePath") {
  const Vector3 O(-1, 0.1, -0.2), T(0, 0, 0.15);
  crossCheck(cg::Cylinder<double>{kCylinderRadius}, SimTK::ContactGeometry::Cylinder(kCylinderRadius), O, T,
             kCylinderRateAgreement, [](const std::vector<Motion>& f, const Vector3& oW, const Vector3& tW) {
               // Unroll: in the cylinder's frame the path is planar in (x, y)
               // with z growing linearly with the planar length.
               const Matrix3 R = f[1].R_WF;
               const Vector3 o = R.transpose() * (oW - f[1].p_WF);
               const Vector3 t = R.transpose() * (tW - f[1].p_WF);
               const double planar = sphereLength(Vector3(o.x(), o.y(), 0), Vector3(t.x(), t.y(), 0), Vector3::Zero(),
                                                  kCylinderRadius);
               return std::hypot(planar, t.z() - o.z());
             });
}
