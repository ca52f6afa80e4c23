// Constraint rows (constraints.hpp) and the constraint solver
// (constraint_solver.hpp) against Simbody: Constraint::SphereOnSphereContact
// with and without rolling on a free ball against a sphere fixed on Ground,
// a ball on a moving ball, and random trees with a contact between two of
// their bodies; Constraint::Ball and Constraint::Weld against cut joints of
// those types on random trees; a Coupler against
// Constraint::CoordinateCoupler with a linear function.
//
// Simbody projects each state onto its constraints (positions, then
// velocities); both then compute udot and the multipliers at that state.
// Compared for contact: udot, the normal multiplier, the force on B in
// Ground (Simbody's findForceOnSphereBInG; ours -R_WC lambda), the position
// error, the velocity errors (normal, and the slip as a vector in Ground:
// its x/y measure numbers depend on each one's arbitrary choice of Cx, Cy),
// the separation, the contact frame's origin and z axis, and the constraint
// forces on the bodies. All of it also before projection, where the
// constraints are violated: there the rolling rows' gamma differ by design
// (ours hold the tangents fixed in F, Simbody turns them with the normal;
// see gammaWithSimbodysTangents), so there udot and the multipliers are
// compared with that one difference put into ours. For Ball and Weld (whose
// rows differ from Simbody's by a change of basis, so only assembled states
// compare): udot and the forces on the bodies.
#include "simbody_mechanism.hpp"  // <Simbody.h> first: it clears NDEBUG

#include "../unit/constrained_mechanism.hpp"
#include "../unit/multibody_fixtures.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using capstan::BodyFrame;
using capstan::ConstraintRows;
using capstan::JointType;
using capstan::Mat3;
using capstan::Mechanism;
using capstan::Transform;
using capstan::Vec3;
using capstan::Vec6;
using capstan::VectorX;
using capstan::testing::ConstrainedMechanism;
using capstan::testing::cutJoint;
using capstan::testing::randomBody;
using capstan::testing::randomConfiguration;
using capstan::testing::randomJoint;
using capstan::testing::randomTransform;
using capstan::testing::randomTree;
using capstan::testing::randomVector;
using capstan::testing::randomVectorX;
using capstan::testing::relativeError;
using capstan::testing::Rng;
using capstan::testing::SimbodyModel;
using capstan::testing::sphereContact;
using capstan::testing::toSimbody;
using capstan::testing::uniform;

using Solver = capstan::ConstraintSolver<ConstrainedMechanism>;

constexpr double kAgreement = 1e-9;    // relative, Simbody vs capstan
constexpr double kProjection = 1e-12;  // Simbody's projection accuracy
constexpr double kPerturbation = 1e-3; // how far from assembled the states start (rad, m)
constexpr double kDistinct = 1e-6;     // relative: far above rounding, what a real difference exceeds

Vec3<double> fromSimbody(const SimTK::Vec3& v) { return Vec3<double>(v[0], v[1], v[2]); }

SimTK::MobilizedBody& mobilizedBody(SimbodyModel& simbody, int body) {
  return body < 0 ? static_cast<SimTK::MobilizedBody&>(simbody.matter.updGround())
                  : simbody.mobods[static_cast<std::size_t>(body)];
}

double relativeDifference(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

// The largest relative difference seen by each kind of comparison.
struct Worst {
  double udot = 0, multiplier = 0, force = 0, errors = 0, geometry = 0, bodyForces = 0;
  int states = 0;
};

// Our udot against Simbody's at its realized state: the relative difference.
double udotDifference(const SimbodyModel& simbody, const VectorX<double>& udot) {
  VectorX<double> theirs(udot.size());
  for (Eigen::Index k = 0; k < udot.size(); ++k) theirs[k] = simbody.state.getUDot()[static_cast<int>(k)];
  return relativeError(udot, theirs);
}

// Copies Simbody's q and u (after its projection).
void stateFromSimbody(const SimbodyModel& simbody, VectorX<double>& q, VectorX<double>& u) {
  for (int k = 0; k < q.size(); ++k) q[k] = simbody.state.getQ()[k];
  for (int k = 0; k < u.size(); ++k) u[k] = simbody.state.getU()[k];
}

// The constraint forces on the bodies, Simbody's (ours is the negative:
// Simbody reports them with the multipliers' sign) against
// constraintBodyForces, about each body origin, in Ground.
double compareBodyForces(const SimbodyModel& simbody, const SimTK::Constraint& constraint,
                         const std::vector<Vec6<double>>& ours) {
  const SimTK::Vector_<SimTK::SpatialVec> theirs = constraint.getConstrainedBodyForcesAsVector(simbody.state);
  double worst = 0.0;
  int bodies = 0;
  for (int i = 0; i < constraint.getNumConstrainedBodies(); ++i) {
    const SimTK::MobilizedBody& body = constraint.getMobilizedBodyFromConstrainedBody(SimTK::ConstrainedBodyIndex(i));
    const int index = static_cast<int>(body.getMobilizedBodyIndex()) - 1;  // mobods[b] is index b + 1; Ground is 0
    if (index < 0) continue;
    REQUIRE(static_cast<int>(simbody.mobods[static_cast<std::size_t>(index)].getMobilizedBodyIndex()) == index + 1);
    const SimTK::SpatialVec& F = theirs[i];
    const Vec6<double> expected = -capstan::spatialVector<double>(fromSimbody(F[0]), fromSimbody(F[1]));
    const double error = relativeError(ours[static_cast<std::size_t>(index)], expected);
    CHECK(error < kAgreement);
    worst = std::max(worst, error);
    ++bodies;
  }
  CHECK(bodies >= 1);
  return worst;
}

// ---------------------------------------------------------------- contact

// Where the rolling rows' definitions part. Ours hold the tangents Cx, Cy
// fixed in F while differentiating the slip v (constraints.hpp). Simbody's
// implementation turns them with the normal, without spin about it relative
// to F: measured in F, Cx' = -CzF' x Cy and Cy' = CzF' x Cx, with
// CzF' = Cz' - w_F x Cz and Cz' = (pdot - (pdot . Cz) Cz) / |p|. Its rolling
// rows' bias is then larger by (Cx' . v, Cy' . v): zero on the velocity
// constraints (v = 0), not off them. This is our gamma with that term.
VectorX<double> gammaWithSimbodysTangents(const Mechanism<double>& model, const capstan::Constraint<double>& c,
                                          const VectorX<double>& q, const VectorX<double>& u,
                                          const ConstraintRows<double>& rows) {
  capstan::Data<double> data(model);
  capstan::forwardKinematics(model, data, q, u);
  struct Motion {
    Vec3<double> p, v, w;
  };
  auto motion = [&](const BodyFrame<double>& f) -> Motion {
    if (f.body < 0) return {f.X_BF.p, Vec3<double>::Zero(), Vec3<double>::Zero()};
    const auto b = static_cast<std::size_t>(f.body);
    const Vec3<double> p = data.X_WB[b] * f.X_BF.p, w = data.V_WB[b].head<3>();
    return {p, Vec3<double>(data.V_WB[b].tail<3>() + w.cross(Vec3<double>(p - data.X_WB[b].p))), w};
  };
  const Motion Sf = motion(c.F), Sb = motion(c.M);
  const Vec3<double> p = Sb.p - Sf.p, pdot = Sb.v - Sf.v, Cz = p.normalized();
  const Vec3<double> Co = Sf.p + c.radiusF / (c.radiusF + c.radiusB) * p;
  const Vec3<double> slip = (Sb.v + Sb.w.cross(Vec3<double>(Co - Sb.p))) - (Sf.v + Sf.w.cross(Vec3<double>(Co - Sf.p)));
  const Vec3<double> CzdF = (pdot - pdot.dot(Cz) * Cz) / p.norm() - Sf.w.cross(Cz);
  const Vec3<double> Cx = rows.contacts[0].R_WC.col(0), Cy = rows.contacts[0].R_WC.col(1);
  VectorX<double> gamma = rows.gamma;
  const auto mp = rows.positionErrors.size();
  gamma[mp] -= Vec3<double>(-CzdF.cross(Cy)).dot(slip);
  gamma[mp + 1] -= Vec3<double>(CzdF.cross(Cx)).dot(slip);
  return gamma;
}

// udot and lambda from the whole KKT system [M G^T; G 0] [udot; lambda] =
// [tau - C; gamma], by a dense LU: independent of the solver's range-space
// method.
void solveKkt(const Mechanism<double>& model, const VectorX<double>& q, const VectorX<double>& u,
              const VectorX<double>& tau, const capstan::MatrixX<double>& G, const VectorX<double>& gamma,
              VectorX<double>& udot, VectorX<double>& lambda) {
  capstan::Data<double> data(model);
  const auto nu = static_cast<Eigen::Index>(model.nu), m = G.rows();
  capstan::MatrixX<double> K = capstan::MatrixX<double>::Zero(nu + m, nu + m);
  K.topLeftCorner(nu, nu) = capstan::crba(model, data, q);
  K.topRightCorner(nu, m) = G.transpose();
  K.bottomLeftCorner(m, nu) = G;
  VectorX<double> rhs(nu + m);
  rhs << tau - capstan::nonlinearEffects(model, data, q, u), gamma;
  const VectorX<double> x = K.fullPivLu().solve(rhs);
  udot = x.head(nu);
  lambda = x.tail(m);
}


// Compares one sphere contact on `model` at (q, u, tau): first the geometry
// and errors at the state as given, then, after Simbody's projection,
// everything.
void compareContact(const Mechanism<double>& model, const capstan::Constraint<double>& c, VectorX<double> q,
                    VectorX<double> u, const VectorX<double>& tau, Worst& worst) {
  SimbodyModel simbody(model);
  SimTK::Constraint::SphereOnSphereContact contact(mobilizedBody(simbody, c.F.body), toSimbody(c.F.X_BF.p), c.radiusF,
                                                   mobilizedBody(simbody, c.M.body), toSimbody(c.M.X_BF.p), c.radiusB,
                                                   c.rolling);
  ConstrainedMechanism mech(model, {c});
  mech.tau() = tau;
  Solver solver(mech, mech.rowRanges());
  simbody.setState(q, u, tau);
  for (bool projected : {false, true}) {
    CAPTURE(projected);
    if (projected) {
      simbody.system.project(simbody.state, kProjection);
      simbody.system.realize(simbody.state, SimTK::Stage::Acceleration);
      stateFromSimbody(simbody, q, u);
    }
    const SimTK::State& state = simbody.state;
    const ConstraintRows<double> rows = mech.rows(q, u);
    const capstan::ContactGeometry<double>& C = rows.contacts[0];
    // Geometry and errors.
    const SimTK::Transform X_GC = contact.findContactFrameInG(state);
    const double geometry = std::max({relativeError(C.p_WC, fromSimbody(X_GC.p())),
                                      relativeError(Vec3<double>(C.R_WC.col(2)), fromSimbody(X_GC.R().z())),
                                      relativeDifference(C.separation, contact.findSeparation(state))});
    CHECK(geometry < kAgreement);
    worst.geometry = std::max(worst.geometry, geometry);
    const SimTK::Vec3 verr = contact.getVelocityErrors(state);
    double errors = std::max(relativeDifference(rows.positionErrors[0], contact.getPositionError(state)),
                             relativeDifference(rows.velocityErrors[0], verr[2]));
    if (c.rolling) {
      const Vec3<double> slip = C.R_WC * Vec3<double>(rows.velocityErrors[1], rows.velocityErrors[2], 0.0);
      const Vec3<double> slipSimbody = fromSimbody(X_GC.R() * SimTK::Vec3(verr[0], verr[1], 0.0));
      errors = std::max(errors, relativeError(slip, slipSimbody));
    }
    CHECK(errors < kAgreement);
    worst.errors = std::max(worst.errors, errors);
    if (!projected && c.rolling) CHECK(rows.velocityErrors.tail<2>().norm() > kPerturbation);  // the raw state slips
    if (projected) CHECK(std::abs(rows.positionErrors[0]) < 1e3 * kProjection);
    // Accelerations, multipliers, forces: the solver's; off the velocity
    // constraints with rolling, the KKT system's with Simbody's tangent
    // transport (and on them, that transport must change nothing).
    VectorX<double> udot, lambda;
    solver.accelerations(0.0, q, u, udot, lambda);
    REQUIRE(solver.rank() == rows.G.rows());
    if (c.rolling) {
      VectorX<double> udotKkt, lambdaKkt;
      solveKkt(model, q, u, tau, rows.G, gammaWithSimbodysTangents(model, c, q, u, rows), udotKkt, lambdaKkt);
      if (projected) {
        CHECK(relativeError(udotKkt, udot) < kAgreement);
      } else {
        CHECK(relativeError(udotKkt, udot) > kDistinct);  // the definitions do part here
        udot = udotKkt;
        lambda = lambdaKkt;
      }
    }
    const SimTK::Vector& udotSimbody = state.getUDot();
    VectorX<double> theirs(udot.size());
    for (int k = 0; k < udot.size(); ++k) theirs[k] = udotSimbody[k];
    const double udotError = relativeError(udot, theirs);
    CHECK(udotError < kAgreement);
    worst.udot = std::max(worst.udot, udotError);
    const SimTK::Vec3 multipliers = contact.getMultipliers(state);
    const double multiplierError = relativeDifference(lambda[0], multipliers[2]);
    CHECK(multiplierError < kAgreement);
    worst.multiplier = std::max(worst.multiplier, multiplierError);
    const Vec3<double> l(c.rolling ? lambda[1] : 0.0, c.rolling ? lambda[2] : 0.0, lambda[0]);
    const double forceError =
        relativeError(Vec3<double>(-(C.R_WC * l)), fromSimbody(contact.findForceOnSphereBInG(state)));
    CHECK(forceError < kAgreement);
    worst.force = std::max(worst.force, forceError);
    worst.bodyForces = std::max(
        worst.bodyForces, compareBodyForces(simbody, contact, capstan::constraintBodyForces(model, rows, lambda)));
    ++worst.states;
  }
}

// Moves a Free root joint's translation so that the World point p_WP of its
// body goes to `target` (its orientation unchanged).
void placeFreeBody(const Mechanism<double>& model, int body, const Vec3<double>& p_WP, const Vec3<double>& target,
                   VectorX<double>& q) {
  const capstan::Joint<double>& joint = model.joints[static_cast<std::size_t>(body)];
  REQUIRE(joint.type == JointType::Free);
  REQUIRE(joint.parent == -1);
  q.segment<3>(joint.qOffset + 4) += joint.X_PF.R.transpose() * (target - p_WP);
}

Vec3<double> worldPoint(const Mechanism<double>& model, const VectorX<double>& q, const BodyFrame<double>& f) {
  if (f.body < 0) return f.X_BF.p;
  capstan::Data<double> data(model);
  capstan::forwardKinematics(model, data, q);
  return data.X_WB[static_cast<std::size_t>(f.body)] * f.X_BF.p;
}

void report(const std::string& what, const Worst& w) {
  MESSAGE(what << " (" << w.states << " states): worst relative differences udot " << w.udot << ", normal multiplier "
               << w.multiplier << ", force on B " << w.force << ", errors " << w.errors << ", geometry " << w.geometry
               << ", body forces " << w.bodyForces);
}

// A free ball B near a sphere F: F on `parentOfF` (-1: Ground) at a random
// station, B's sphere at a random station of a body on a Free joint from
// World, started kPerturbation from touching.
void ballNearSphere(Rng& rng, Mechanism<double> model, int bodyF, bool rolling, Worst& worst) {
  const int ball = model.addBody(randomBody(rng, "ball"), randomJoint(rng, JointType::Free, -1, "free"));
  const capstan::Constraint<double> c =
      sphereContact({bodyF, randomTransform(rng, 0.4)}, uniform(rng, 0.2, 0.6), {ball, randomTransform(rng, 0.4)},
                    uniform(rng, 0.1, 0.4), rolling);
  VectorX<double> q = randomConfiguration(rng, model);
  const Vec3<double> p_WSf = worldPoint(model, q, c.F), p_WSb = worldPoint(model, q, c.M);
  const Vec3<double> n = capstan::testing::randomUnitVector(rng);
  placeFreeBody(model, ball, p_WSb, p_WSf + (c.radiusF + c.radiusB + kPerturbation) * n, q);
  compareContact(model, c, q, randomVectorX(rng, model.nu, 1.0), randomVectorX(rng, model.nu, 3.0), worst);
}

TEST_CASE("SphereOnSphereContact: a free ball against a sphere fixed on Ground") {
  Rng rng(501);
  for (bool rolling : {false, true}) {
    CAPTURE(rolling);
    Worst worst;
    for (int trial = 0; trial < 10; ++trial) {
      Mechanism<double> model;
      model.gravity = randomVector(rng, 10.0);
      ballNearSphere(rng, model, -1, rolling, worst);
    }
    CHECK(worst.states == 2 * 10);
    report(rolling ? "ball on a fixed sphere, rolling" : "ball on a fixed sphere", worst);
  }
}

TEST_CASE("SphereOnSphereContact: a ball on a moving ball (a Pin or a Free mobilizer)") {
  Rng rng(502);
  for (JointType type : {JointType::Revolute, JointType::Free}) {
    for (bool rolling : {false, true}) {
      const std::string typeName = jointTypeName(type);
      CAPTURE(typeName);
      CAPTURE(rolling);
      Worst worst;
      for (int trial = 0; trial < 8; ++trial) {
        Mechanism<double> model;
        model.gravity = randomVector(rng, 10.0);
        model.addBody(randomBody(rng, "moving ball"), randomJoint(rng, type, -1, "mover"));
        ballNearSphere(rng, model, 0, rolling, worst);
      }
      CHECK(worst.states == 2 * 8);
      report("ball on a ball on " + typeName + (rolling ? ", rolling" : ""), worst);
    }
  }
}

TEST_CASE("SphereOnSphereContact between two bodies of random trees with every joint type") {
  Rng rng(503);
  for (bool rolling : {false, true}) {
    CAPTURE(rolling);
    Worst worst;
    int trees = 0;
    while (trees < 12) {
      const Mechanism<double> model = randomTree(rng, 8);
      const int bodyF = std::uniform_int_distribution<int>(-1, 6)(rng);
      const int bodyB = std::uniform_int_distribution<int>(bodyF + 1, 7)(rng);
      capstan::Constraint<double> c =
          sphereContact({bodyF, randomTransform(rng, 0.4)}, 0.0, {bodyB, randomTransform(rng, 0.4)}, 0.0, rolling);
      const VectorX<double> q = randomConfiguration(rng, model);
      const double d = (worldPoint(model, q, c.M) - worldPoint(model, q, c.F)).norm();
      if (d < 0.3) continue;
      // Radii that make the spheres touch at q, then a state nearby.
      c.radiusF = d * uniform(rng, 0.3, 0.7);
      c.radiusB = d - c.radiusF;
      // Only where the contact's rows are independent (otherwise the
      // multipliers are not unique, and neither solver's choice is wrong).
      const ConstraintRows<double> rows = ConstrainedMechanism(model, {c}).rows(q, VectorX<double>::Zero(model.nu));
      const Eigen::JacobiSVD<capstan::MatrixX<double>> svd(rows.G);
      const auto sigma = svd.singularValues();
      if (sigma.size() < rows.G.rows() || !(sigma.minCoeff() > 1e-2 * sigma.maxCoeff())) continue;  // also G = 0
      compareContact(model, c, VectorX<double>(q + randomVectorX(rng, model.nq, kPerturbation)),
                     randomVectorX(rng, model.nu, 1.0), randomVectorX(rng, model.nu, 3.0), worst);
      ++trees;
    }
    CHECK(worst.states == 2 * 12);
    report(rolling ? "random trees, rolling contact" : "random trees, contact", worst);
  }
}

// ---------------------------------------------------------- Ball and Weld

TEST_CASE("Ball and Weld cuts against Constraint::Ball and Constraint::Weld on random trees") {
  Rng rng(504);
  for (JointType type : {JointType::Ball, JointType::Weld}) {
    const std::string typeName = jointTypeName(type);
    CAPTURE(typeName);
    double worstUdot = 0.0, worstForces = 0.0;
    int states = 0;
    for (int trial = 0; trial < 12; ++trial) {
      CAPTURE(trial);
      // M on a body on a Free joint (independent rows), or, every other
      // trial, on any other body of the tree (udot only: its rows may be
      // redundant, and then the multipliers are not unique).
      Mechanism<double> model = randomTree(rng, 7);
      const bool independent = trial % 2 == 0;
      int bodyM =
          model.addBody(randomBody(rng, "floater"),
                        randomJoint(rng, JointType::Free, std::uniform_int_distribution<int>(-1, 6)(rng), "free"));
      const int bodyF = std::uniform_int_distribution<int>(-1, 6)(rng);
      if (!independent) {
        do bodyM = std::uniform_int_distribution<int>(0, 6)(rng);
        while (bodyM == bodyF);
      }
      // Satisfied at q: M's frame (Ball: point) where F's is.
      const VectorX<double> q = randomConfiguration(rng, model);
      capstan::Data<double> data(model);
      capstan::forwardKinematics(model, data, q);
      const Transform<double> X_BF = randomTransform(rng, 0.5);
      const Transform<double> X_WF = bodyF < 0 ? X_BF : data.X_WB[static_cast<std::size_t>(bodyF)] * X_BF;
      Transform<double> X_BM = data.X_WB[static_cast<std::size_t>(bodyM)].inverse() * X_WF;
      if (type == JointType::Ball) X_BM.R = capstan::testing::randomRotation(rng);
      const capstan::Constraint<double> cut = cutJoint(type, {bodyF, X_BF}, {bodyM, X_BM}, capstan::Joint<double>{});

      SimbodyModel simbody(model);
      SimTK::Constraint constraint;
      if (type == JointType::Ball) {
        constraint = SimTK::Constraint::Ball(mobilizedBody(simbody, bodyF), toSimbody(X_BF.p),
                                             mobilizedBody(simbody, bodyM), toSimbody(X_BM.p));
      } else {
        constraint = SimTK::Constraint::Weld(mobilizedBody(simbody, bodyF), toSimbody(X_BF),
                                             mobilizedBody(simbody, bodyM), toSimbody(X_BM));
      }
      const VectorX<double> tau = randomVectorX(rng, model.nu, 3.0);
      simbody.setState(q, randomVectorX(rng, model.nu, 1.0), tau);
      simbody.system.project(simbody.state, kProjection);
      simbody.system.realize(simbody.state, SimTK::Stage::Acceleration);
      VectorX<double> qs = q, us(model.nu);
      stateFromSimbody(simbody, qs, us);

      ConstrainedMechanism mech(model, {cut});
      mech.tau() = tau;
      const ConstraintRows<double> rows = mech.rows(qs, us);
      CHECK(rows.positionErrors.cwiseAbs().maxCoeff() < 1e3 * kProjection);
      CHECK(rows.velocityErrors.cwiseAbs().maxCoeff() < 1e3 * kProjection);
      Solver solver(mech, mech.rowRanges());
      VectorX<double> udot, lambda;
      solver.accelerations(0.0, qs, us, udot, lambda);
      const double udotError = udotDifference(simbody, udot);
      CHECK(udotError < kAgreement);
      worstUdot = std::max(worstUdot, udotError);
      if (independent) {
        REQUIRE(solver.rank() == rows.G.rows());
        worstForces = std::max(
            worstForces, compareBodyForces(simbody, constraint, capstan::constraintBodyForces(model, rows, lambda)));
      }
      ++states;
    }
    CHECK(states == 12);
    MESSAGE(typeName << " cut vs Simbody: worst relative difference udot " << worstUdot << ", body forces "
                     << worstForces);
  }
}

TEST_CASE("Coupler against Constraint::CoordinateCoupler with a linear function on random trees") {
  Rng rng(731);
  double worstUdot = 0.0, worstMultiplier = 0.0;
  for (int trial = 0; trial < 12; ++trial) {
    CAPTURE(trial);
    // A random tree and two more bodies on one-coordinate joints (revolute
    // or prismatic, either way round): q_f = r q_l + o.
    Mechanism<double> model = randomTree(rng, 6);
    int joints[2];
    for (int k = 0; k < 2; ++k) {
      const JointType type = uniform(rng, 0.0, 1.0) < 0.5 ? JointType::Revolute : JointType::Prismatic;
      joints[k] = model.addBody(randomBody(rng, "coupled" + std::to_string(k)),
                                randomJoint(rng, type, std::uniform_int_distribution<int>(-1, 5 + k)(rng),
                                            "coupled" + std::to_string(k)));
    }
    const bool swap = trial % 2 == 1;
    const capstan::Joint<double>& follower = model.joints[static_cast<std::size_t>(joints[swap ? 1 : 0])];
    const capstan::Joint<double>& leader = model.joints[static_cast<std::size_t>(joints[swap ? 0 : 1])];
    capstan::Constraint<double> coupler;
    coupler.type = capstan::ConstraintType::Coupler;
    coupler.name = "coupler";
    coupler.qFollower = follower.qOffset;
    coupler.uFollower = follower.uOffset;
    coupler.qLeader = leader.qOffset;
    coupler.uLeader = leader.uOffset;
    coupler.ratio = uniform(rng, -2.0, 2.0);
    coupler.offset = uniform(rng, -0.5, 0.5);

    SimbodyModel simbody(model);
    SimTK::Vector coefficients(3);
    coefficients[0] = 1.0;
    coefficients[1] = -coupler.ratio;
    coefficients[2] = -coupler.offset;
    SimTK::Array_<SimTK::MobilizedBodyIndex> bodies;
    SimTK::Array_<SimTK::MobilizerQIndex> coordinates;
    for (const capstan::Joint<double>* j : {&follower, &leader}) {
      const int body = static_cast<int>(j - model.joints.data());
      bodies.push_back(simbody.mobods[static_cast<std::size_t>(body)].getMobilizedBodyIndex());
      coordinates.push_back(SimTK::MobilizerQIndex(0));
    }
    SimTK::Constraint::CoordinateCoupler constraint(simbody.matter, new SimTK::Function::Linear(coefficients), bodies,
                                                    coordinates);
    const VectorX<double> tau = randomVectorX(rng, model.nu, 3.0);
    simbody.setState(randomConfiguration(rng, model), randomVectorX(rng, model.nu, 1.0), tau);
    simbody.system.project(simbody.state, kProjection);
    simbody.system.realize(simbody.state, SimTK::Stage::Acceleration);
    VectorX<double> q(model.nq), u(model.nu);
    stateFromSimbody(simbody, q, u);

    ConstrainedMechanism mech(model, {coupler});
    mech.tau() = tau;
    const ConstraintRows<double> rows = mech.rows(q, u);
    CHECK(std::abs(rows.positionErrors[0]) < 1e3 * kProjection);
    CHECK(std::abs(rows.velocityErrors[0]) < 1e3 * kProjection);
    CHECK(std::abs(rows.positionErrors[0] - constraint.getPositionErrorsAsVector(simbody.state)[0]) < 1e-12);
    Solver solver(mech, mech.rowRanges());
    VectorX<double> udot, lambda;
    solver.accelerations(0.0, q, u, udot, lambda);
    const double udotError = udotDifference(simbody, udot);
    CHECK(udotError < kAgreement);
    worstUdot = std::max(worstUdot, udotError);
    const double multiplierError = relativeDifference(lambda[0], constraint.getMultipliersAsVector(simbody.state)[0]);
    CHECK(multiplierError < kAgreement);
    worstMultiplier = std::max(worstMultiplier, multiplierError);
    // The generalized forces -G^T lambda: on the two coupled coordinates only.
    const VectorX<double> generalized = -rows.G.transpose() * lambda;
    for (int k = 0; k < model.nu; ++k)
      if (k != coupler.uFollower && k != coupler.uLeader) CHECK(generalized[k] == 0.0);
  }
  MESSAGE("Coupler vs Simbody's CoordinateCoupler: worst relative difference udot " << worstUdot << ", multiplier "
                                                                                       << worstMultiplier);
}

}  // namespace
