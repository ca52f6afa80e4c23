// Constraint rows (constraints.hpp) for every cut joint type and for
// sphere-on-sphere contact with and without rolling, on random trees with
// every joint type at random states, checked as RBDL's Constraint
// documentation advises:
//   - the rows' own identities: G u = phi_v; G = d(phi_p)/dq N(q) (central
//     differences); d/dt phi_v = G udot - gamma along the motion (central
//     differences, the rolling tangents held fixed in F);
//   - body forces: their power is -lambda^T G u, their generalized forces
//     -G^T lambda, and they are internal (action and reaction cancel);
//   - known errors: zero at a state built to satisfy the constraint, then the
//     exact value after a known position or velocity violation;
//   - workless: the solver's multipliers do no work, and the energy of a
//     conservative constrained system is constant along the motion;
//   - the equivalent joint model: a body on joint T and the same body on a
//     Free joint closed by a cut of type T accelerate alike, and the cut's
//     force is the force joint T transmits;
//   - static equilibrium, computed by hand.
#include "constrained_mechanism.hpp"
#include "multibody_fixtures.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

namespace {

using namespace capstan;
using capstan::testing::ConstrainedMechanism;
using capstan::testing::cutJoint;
using capstan::testing::kAllJointTypes;
using capstan::testing::nullSpaceProjector;
using capstan::testing::randomBody;
using capstan::testing::randomConfiguration;
using capstan::testing::randomJoint;
using capstan::testing::randomTransform;
using capstan::testing::randomTree;
using capstan::testing::randomUnitVector;
using capstan::testing::randomVectorX;
using capstan::testing::relativeError;
using capstan::testing::Rng;
using capstan::testing::sphereContact;
using capstan::testing::uniform;

constexpr double kRoundoff = 1e-10;          // relative: identities that hold to rounding
constexpr double kDifferenceStep = 1e-5;     // central differences: O(h^2) truncation ...
constexpr double kFiniteDifference = 1e-7;   // ... + O(eps/h) rounding, relative
constexpr double kAgreement = 1e-9;          // relative: two models of one mechanism
constexpr double kDistinct = 1e-3;           // relative: what a wrong definition must at least change
constexpr int kTrials = 12;                  // random trees per kind of constraint
constexpr int kTreeBodies = 7;               // randomTree cycles through all 7 joint types

// ------------------------------------------------------------- scenarios

// A kind of constraint: a cut joint of `cut`, or sphere contact.
struct Kind {
  std::string name;
  bool sphere = false;
  JointType cut = JointType::Weld;
  bool rolling = false;
};

std::vector<Kind> allKinds() {
  std::vector<Kind> kinds;
  for (JointType type : kAllJointTypes)
    kinds.push_back({std::string("cut ") + jointTypeName(type), false, type, false});
  kinds.push_back({"sphere contact", true, JointType::Weld, false});
  kinds.push_back({"rolling sphere contact", true, JointType::Weld, true});
  return kinds;
}

// A random tree with every joint type, plus a body on a Free joint (the
// floater, last) whose motion relative to any other body is unrestricted;
// one constraint of `kind` from F on a tree body or World to M on the
// floater or (floaterM false) on another tree body.
struct Scenario {
  Mechanism<double> model;
  Constraint<double> constraint;
  Joint<double> axes;  // a cut's axis, axis_a, axis_b (in F)
  int floater = -1;
};

Scenario randomScenario(Rng& rng, const Kind& kind, bool floaterM) {
  Scenario s;
  s.model = randomTree(rng, kTreeBodies);
  const int parent = std::uniform_int_distribution<int>(-1, kTreeBodies - 1)(rng);
  s.floater = s.model.addBody(randomBody(rng, "floater"), randomJoint(rng, JointType::Free, parent, "floating"));
  const int bodyF = std::uniform_int_distribution<int>(-1, kTreeBodies - 1)(rng);
  int bodyM = s.floater;
  if (!floaterM) {
    do bodyM = std::uniform_int_distribution<int>(0, kTreeBodies - 1)(rng);
    while (bodyM == bodyF);
  }
  const BodyFrame<double> F{bodyF, randomTransform(rng, 0.5)}, M{bodyM, randomTransform(rng, 0.5)};
  if (kind.sphere) {
    s.constraint = sphereContact(F, uniform(rng, 0.1, 0.5), M, uniform(rng, 0.1, 0.5), kind.rolling);
  } else {
    s.axes = randomJoint(rng, kind.cut, -1, "axes");
    s.constraint = cutJoint(kind.cut, F, M, s.axes);
  }
  return s;
}

// The motion of a frame fixed on a body (World: body -1), from body
// kinematics alone: R_WF, p_WFo, w_WF, v_WFo.
struct FrameMotion {
  Mat3<double> R;
  Vec3<double> p, w, v;
};

FrameMotion frameMotion(const Data<double>& data, const BodyFrame<double>& f) {
  if (f.body < 0) return {f.X_BF.R, f.X_BF.p, Vec3<double>::Zero(), Vec3<double>::Zero()};
  const auto b = static_cast<std::size_t>(f.body);
  const Transform<double> X_WF = data.X_WB[b] * f.X_BF;
  const Vec3<double> w = data.V_WB[b].head<3>();
  const Vec3<double> v = data.V_WB[b].tail<3>() + w.cross(Vec3<double>(X_WF.p - data.X_WB[b].p));
  return {X_WF.R, X_WF.p, w, v};
}

// The slip of a sphere contact (B's material point at Co relative to F's)
// along the tangents t_F, held fixed in F's frame: the rolling rows'
// velocity errors as their derivative (gamma) is defined.
Eigen::Vector2d frozenSlip(const Mechanism<double>& model, const Constraint<double>& c, const VectorX<double>& q,
                           const VectorX<double>& u, const Vec3<double>& tx_F, const Vec3<double>& ty_F) {
  Data<double> data(model);
  forwardKinematics(model, data, q, u);
  const FrameMotion F = frameMotion(data, c.F), M = frameMotion(data, c.M);
  const Vec3<double> Co = F.p + c.radiusF / (c.radiusF + c.radiusB) * (M.p - F.p);
  const Vec3<double> slip = (M.v + M.w.cross(Vec3<double>(Co - M.p))) - (F.v + F.w.cross(Vec3<double>(Co - F.p)));
  return Eigen::Vector2d((F.R * tx_F).dot(slip), (F.R * ty_F).dot(slip));
}

// A body's spatial acceleration about Bo in World from udot, through its
// Jacobian: A_WB = J_WB udot + Jdot_WB u. Needs velocity kinematics.
Vec6<double> bodyAcceleration(const Mechanism<double>& model, const Data<double>& data, int body,
                              const VectorX<double>& udot) {
  MatrixX<double> J;
  bodyJacobian(model, data, body, J);
  return J * udot + frameJacobianDotU(model, data, body, Vec3<double>(Vec3<double>::Zero()));
}

double infinityNorm(const Eigen::Ref<const VectorX<double>>& v) { return v.size() > 0 ? v.cwiseAbs().maxCoeff() : 0.0; }

// Calls check(kind, s) on kTrials random scenarios s of every kind, M on the
// floater in every other trial, with the kind's name captured.
template <class Check>
void forEachScenario(Rng& rng, Check&& check) {
  for (const Kind& kind : allKinds()) {
    CAPTURE(kind.name);
    for (int trial = 0; trial < kTrials; ++trial) check(kind, randomScenario(rng, kind, trial % 2 == 0));
  }
}

// A random state (q, u) and acceleration udot of a scenario, the rows there
// and qdot = N(q) u: a motion to differentiate the velocity errors along.
struct RandomMotion {
  VectorX<double> q, u, udot, qdot;
  ConstraintRows<double> rows;
};

RandomMotion randomMotion(Rng& rng, const Scenario& s, const ConstrainedMechanism& mech) {
  RandomMotion m;
  m.q = randomConfiguration(rng, s.model);
  m.u = randomVectorX(rng, s.model.nu, 1.0);
  m.udot = randomVectorX(rng, s.model.nu, 3.0);
  m.rows = mech.rows(m.q, m.u);
  qdotFromU(s.model, m.q, m.u, m.qdot);
  return m;
}

// d/dt phi_v along q' = qdot, u' = udot by central differences, the rolling
// rows' tangents recomputed at each end.
VectorX<double> velocityErrorRate(const ConstrainedMechanism& mech, const RandomMotion& m) {
  return (mech.rows(m.q + kDifferenceStep * m.qdot, m.u + kDifferenceStep * m.udot).velocityErrors -
          mech.rows(m.q - kDifferenceStep * m.qdot, m.u - kDifferenceStep * m.udot).velocityErrors) /
         (2 * kDifferenceStep);
}

// ------------------------------------------------------------ row counts

TEST_CASE("row counts: a cut joint forbids the 6 - nu motions its type does not allow; contact 1, rolling 3") {
  Rng rng(301);
  int checked = 0;
  for (const Kind& kind : allKinds()) {
    CAPTURE(kind.name);
    const Scenario s = randomScenario(rng, kind, true);
    const int holonomic = kind.sphere ? 1 : 6 - jointNu(kind.cut);
    const int nonholonomic = kind.rolling ? 2 : 0;
    CHECK(s.constraint.holonomic() == holonomic);
    CHECK(s.constraint.nonholonomic() == nonholonomic);
    const ConstrainedMechanism mech(s.model, {s.constraint});
    const VectorX<double> q = randomConfiguration(rng, s.model), u = randomVectorX(rng, s.model.nu, 1.0);
    const ConstraintRows<double> rows = mech.rows(q, u);
    CHECK(rows.positionErrors.size() == holonomic);
    CHECK(rows.velocityErrors.size() == holonomic + nonholonomic);
    CHECK(rows.G.rows() == holonomic + nonholonomic);
    CHECK(rows.G.cols() == s.model.nu);
    CHECK(rows.gamma.size() == holonomic + nonholonomic);
    CHECK(rows.cF_B.size() == static_cast<std::size_t>(holonomic + nonholonomic));
    CHECK(rows.contacts.size() == (kind.sphere ? 1u : 0u));
    ++checked;
  }
  CHECK(checked == 9);
}

TEST_CASE("row order: every constraint's holonomic rows, then every nonholonomic row, each as evaluated alone") {
  // All nine kinds at once on one tree, against each evaluated alone.
  Rng rng(302);
  Mechanism<double> model = randomTree(rng, kTreeBodies);
  const VectorX<double> q = randomConfiguration(rng, model), u = randomVectorX(rng, model.nu, 1.0);
  std::vector<Constraint<double>> all;
  for (const Kind& kind : allKinds()) {
    const int bodyF = std::uniform_int_distribution<int>(-1, kTreeBodies - 2)(rng);
    const int bodyM = std::uniform_int_distribution<int>(bodyF + 1, kTreeBodies - 1)(rng);
    const BodyFrame<double> F{bodyF, randomTransform(rng, 0.5)}, M{bodyM, randomTransform(rng, 0.5)};
    all.push_back(kind.sphere ? sphereContact(F, 0.3, M, 0.2, kind.rolling)
                              : cutJoint(kind.cut, F, M, randomJoint(rng, kind.cut, -1, "axes")));
  }
  const ConstrainedMechanism together(model, all);
  const ConstraintRows<double> rows = together.rows(q, u);
  const int mp = holonomicRows(all);
  CHECK(mp == 6 + 5 + 5 + 4 + 4 + 3 + 0 + 1 + 1);
  CHECK(constraintRows(all) == mp + 2);
  int compared = 0;
  const std::vector<ConstraintRowRange> ranges = together.rowRanges();
  for (std::size_t k = 0; k < all.size(); ++k) {
    CAPTURE(all[k].name);
    const ConstraintRows<double> alone = ConstrainedMechanism(model, {all[k]}).rows(q, u);
    const ConstraintRowRange& r = ranges[k];
    for (int i = 0; i < r.holonomicCount + r.nonholonomicCount; ++i) {
      const int row = i < r.holonomicCount ? r.holonomic + i : r.nonholonomic + i - r.holonomicCount;
      if (i < r.holonomicCount) CHECK(rows.positionErrors[row] == alone.positionErrors[i]);
      CHECK(rows.velocityErrors[row] == alone.velocityErrors[i]);
      CHECK(rows.gamma[row] == alone.gamma[i]);
      CHECK(relativeError(rows.G.row(row), alone.G.row(i)) == 0.0);
      ++compared;
    }
  }
  CHECK(compared == constraintRows(all));
}

// --------------------------------------------------------- row identities

TEST_CASE("G u equals the velocity errors") {
  Rng rng(303);
  forEachScenario(rng, [&](const Kind&, const Scenario& s) {
    const VectorX<double> q = randomConfiguration(rng, s.model), u = randomVectorX(rng, s.model.nu, 1.0);
    const ConstraintRows<double> rows = ConstrainedMechanism(s.model, {s.constraint}).rows(q, u);
    CHECK(relativeError(VectorX<double>(rows.G * u), rows.velocityErrors) < kRoundoff);
  });
}

TEST_CASE("G is the derivative of the position errors along q' = N(q) u (central differences)") {
  Rng rng(304);
  double worst = 0.0;
  int columns = 0;
  forEachScenario(rng, [&](const Kind&, const Scenario& s) {
    const ConstrainedMechanism mech(s.model, {s.constraint});
    const VectorX<double> q = randomConfiguration(rng, s.model), zero = VectorX<double>::Zero(s.model.nu);
    const ConstraintRows<double> rows = mech.rows(q, zero);
    const int mp = s.constraint.holonomic();
    const MatrixX<double> N = nMatrix(s.model, q);
    const double scale = std::max(1.0, rows.G.size() > 0 ? rows.G.cwiseAbs().maxCoeff() : 0.0);
    for (int c = 0; c < s.model.nu; ++c) {
      const VectorX<double> dq = kDifferenceStep * N.col(c);
      const VectorX<double> difference =
          (mech.rows(q + dq, zero).positionErrors - mech.rows(q - dq, zero).positionErrors) / (2 * kDifferenceStep);
      const double error = infinityNorm(difference - rows.G.col(c).head(mp)) / scale;
      worst = std::max(worst, error);
      CHECK(error < kFiniteDifference);
      ++columns;
    }
  });
  CHECK(columns > 9 * kTrials * 10);
  MESSAGE("G vs d(phi_p)/dq N: worst relative difference " << worst);
}

TEST_CASE("gamma: d/dt phi_v = G udot - gamma along q' = N u, u' = udot (rolling tangents fixed in F)") {
  Rng rng(305);
  double worst = 0.0;
  int rowsChecked = 0;
  forEachScenario(rng, [&](const Kind& kind, const Scenario& s) {
    const ConstrainedMechanism mech(s.model, {s.constraint});
    const RandomMotion m = randomMotion(rng, s, mech);
    VectorX<double> rate = velocityErrorRate(mech, m);
    if (kind.rolling) {
      // The tangents of this pose, held fixed in F (not recomputed from the
      // moved normal).
      Data<double> data(s.model);
      forwardKinematics(s.model, data, m.q, m.u);
      const Mat3<double> R_FW = frameMotion(data, s.constraint.F).R.transpose();
      const Vec3<double> tx_F = R_FW * m.rows.contacts[0].R_WC.col(0), ty_F = R_FW * m.rows.contacts[0].R_WC.col(1);
      const VectorX<double> qp = m.q + kDifferenceStep * m.qdot, qm = m.q - kDifferenceStep * m.qdot;
      const VectorX<double> up = m.u + kDifferenceStep * m.udot, um = m.u - kDifferenceStep * m.udot;
      rate.tail<2>() = (frozenSlip(s.model, s.constraint, qp, up, tx_F, ty_F) -
                        frozenSlip(s.model, s.constraint, qm, um, tx_F, ty_F)) /
                       (2 * kDifferenceStep);
      // The frozen slip is the rolling rows' velocity error at the pose itself.
      CHECK(relativeError(frozenSlip(s.model, s.constraint, m.q, m.u, tx_F, ty_F), m.rows.velocityErrors.tail<2>()) <
            kRoundoff);
    }
    const VectorX<double> expected = m.rows.G * m.udot - m.rows.gamma;
    const double error = relativeError(rate, expected);
    worst = std::max(worst, error);
    CHECK(error < kFiniteDifference);
    rowsChecked += static_cast<int>(m.rows.gamma.size());
  });
  CHECK(rowsChecked == kTrials * (6 + 5 + 5 + 4 + 4 + 3 + 0 + 1 + 3));
  MESSAGE("d/dt phi_v vs G udot - gamma: worst relative difference " << worst);
}

TEST_CASE("the rolling rows' gamma is defined with tangents fixed in F: recomputing them changes d/dt phi_v") {
  // The check above can tell: with the tangents recomputed from the moved
  // normal the derivative differs (the contact point's slip is not zero).
  Rng rng(306);
  const Kind rolling{"rolling sphere contact", true, JointType::Weld, true};
  int distinct = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const Scenario s = randomScenario(rng, rolling, true);
    const ConstrainedMechanism mech(s.model, {s.constraint});
    const RandomMotion m = randomMotion(rng, s, mech);
    const VectorX<double> recomputed = velocityErrorRate(mech, m);
    const VectorX<double> expected = m.rows.G * m.udot - m.rows.gamma;
    if (relativeError(recomputed.tail<2>(), expected.tail<2>()) > kDistinct) ++distinct;
  }
  CHECK(distinct == kTrials);
}

// ----------------------------------------------------------- body forces

TEST_CASE("body forces from multipliers: power -lambda^T G u, generalized forces -G^T lambda, action = reaction") {
  Rng rng(307);
  int internal = 0;
  forEachScenario(rng, [&](const Kind&, const Scenario& s) {
    const ConstrainedMechanism mech(s.model, {s.constraint});
    const VectorX<double> q = randomConfiguration(rng, s.model), u = randomVectorX(rng, s.model.nu, 1.0);
    const ConstraintRows<double> rows = mech.rows(q, u);
    const VectorX<double> lambda = randomVectorX(rng, static_cast<int>(rows.gamma.size()), 10.0);
    const std::vector<Vec6<double>> forces = constraintBodyForces(s.model, rows, lambda);
    REQUIRE(forces.size() == s.model.bodies.size());
    Data<double> data(s.model);
    forwardKinematics(s.model, data, q, u);
    double power = 0.0;
    VectorX<double> generalized = VectorX<double>::Zero(s.model.nu);
    Vec6<double> aboutWo = Vec6<double>::Zero();
    MatrixX<double> J;
    for (int b = 0; b < s.model.numBodies(); ++b) {
      const auto i = static_cast<std::size_t>(b);
      power += forces[i].dot(data.V_WB[i]);
      bodyJacobian(s.model, data, b, J);
      generalized += J.transpose() * forces[i];
      aboutWo += shiftForce(forces[i], data.X_WB[i].p);
    }
    const double expectedPower = -lambda.dot(rows.G * u);
    CHECK(std::abs(power - expectedPower) / std::max(1.0, std::abs(expectedPower)) < kRoundoff);
    CHECK(relativeError(generalized, VectorX<double>(-rows.G.transpose() * lambda)) < kRoundoff);
    // Between two bodies the forces are internal: about one point they cancel.
    if (s.constraint.F.body >= 0 && s.constraint.M.body >= 0) {
      CHECK(infinityNorm(aboutWo) / std::max(1.0, infinityNorm(lambda)) < kRoundoff);
      ++internal;
    }
  });
  CHECK(internal > 9 * kTrials / 2);
}

// ---------------------------------------------------------- known errors

// A random tree with the floater; the constraint's M frame chosen on the
// floater so that at q it coincides with F (loops), or so that the spheres
// are `gap` apart along a random direction (contact); u in G's null space.
struct Satisfied {
  Scenario s;
  VectorX<double> q, u;
  Vec3<double> n;  // contact: the normal (World)
};

Satisfied satisfiedScenario(Rng& rng, const Kind& kind, double gap = 0.0) {
  Satisfied out{randomScenario(rng, kind, true), {}, {}, Vec3<double>::Zero()};
  Scenario& s = out.s;
  out.q = randomConfiguration(rng, s.model);
  Data<double> data(s.model);
  forwardKinematics(s.model, data, out.q);
  const FrameMotion F = frameMotion(data, s.constraint.F);
  const Transform<double> X_WF(F.R, F.p);
  const Transform<double> X_BW = data.X_WB[static_cast<std::size_t>(s.floater)].inverse();
  if (kind.sphere) {
    out.n = randomUnitVector(rng);
    const Vec3<double> p_WSb = X_WF.p + (s.constraint.radiusF + s.constraint.radiusB + gap) * out.n;
    s.constraint.M.X_BF.p = X_BW * p_WSb;
  } else {
    s.constraint.M.X_BF = X_BW * X_WF;
  }
  const ConstrainedMechanism mech(s.model, {s.constraint});
  const VectorX<double> zero = VectorX<double>::Zero(s.model.nu);
  out.u = nullSpaceProjector(mech.rows(out.q, zero).G) * randomVectorX(rng, s.model.nu, 1.0);
  return out;
}

// The floater's u that adds the spatial velocity [dw; dv_P] (in World, dv
// the velocity of the World point P moving with it) to its motion.
VectorX<double> floaterTwist(const Scenario& s, const VectorX<double>& q, const Vec3<double>& p_WP,
                             const Vec3<double>& dw, const Vec3<double>& dv) {
  Data<double> data(s.model);
  forwardKinematics(s.model, data, q);
  const auto b = static_cast<std::size_t>(s.floater);
  const Joint<double>& joint = s.model.joints[b];
  const Vec3<double> p_WMo = data.X_WB[b] * joint.X_BM.p;  // the Free joint's M origin
  const Mat3<double> R_FW = data.R_WF[b].transpose();
  VectorX<double> du = VectorX<double>::Zero(s.model.nu);
  du.segment<3>(joint.uOffset) = R_FW * dw;
  du.segment<3>(joint.uOffset + 3) = R_FW * (dv + dw.cross(Vec3<double>(p_WMo - p_WP)));
  return du;
}

TEST_CASE("known errors of cut joints: zero when the frames coincide, exact after a known offset or rotation") {
  Rng rng(308);
  constexpr double kOffset = 0.01;  // m
  constexpr double kAngle = 0.02;   // rad
  int rowsChecked = 0;
  for (JointType type : kAllJointTypes) {
    const Kind kind{jointTypeName(type), false, type, false};
    CAPTURE(kind.name);
    for (int trial = 0; trial < kTrials / 2; ++trial) {
      const Satisfied sat = satisfiedScenario(rng, kind);
      const Constraint<double>& cut = sat.s.constraint;
      const VectorX<double> zero = VectorX<double>::Zero(sat.s.model.nu);
      const ConstraintRows<double> rows = ConstrainedMechanism(sat.s.model, {cut}).rows(sat.q, sat.u);
      CHECK(infinityNorm(rows.positionErrors) < kRoundoff);
      CHECK(infinityNorm(rows.velocityErrors) < kRoundoff);
      // In F's axes e_k: M moved by kOffset e_k, or turned by kAngle about
      // e_k. Translation rows read d . offset; perpendicular rows
      // x . R(e_k, angle) y - rest, both in F (where F and M coincide).
      for (int k = 0; k < 3; ++k) {
        const Vec3<double> e = Vec3<double>::Unit(k);
        for (bool turn : {false, true}) {
          Constraint<double> moved = cut;
          const Mat3<double> R = turn ? axisAngleRotation<double>(e, kAngle) : Mat3<double>::Identity();
          moved.M.X_BF = cut.M.X_BF * Transform<double>(R, turn ? Vec3<double>::Zero() : Vec3<double>(kOffset * e));
          const VectorX<double> phi = ConstrainedMechanism(sat.s.model, {moved}).rows(sat.q, zero).positionErrors;
          for (std::size_t i = 0; i < cut.rows.size(); ++i) {
            const LoopRow& row = cut.rows[i];
            const double expected = row.kind == LoopRowKind::Translation
                                        ? (turn ? 0.0 : kOffset * row.inF.dot(e))
                                        : row.inF.dot(R * row.inM) - row.rest;
            CHECK(std::abs(phi[static_cast<Eigen::Index>(i)] - expected) < kRoundoff);
            ++rowsChecked;
          }
          // Hand values: a Weld's (or Prismatic's) k-th perpendicular row
          // reads -sin(angle) for a turn about e_k, the others zero.
          if (turn && (type == JointType::Weld || type == JointType::Prismatic)) {
            const int first = type == JointType::Weld ? 3 : 2;
            for (int j = 0; j < 3; ++j) {
              CHECK(std::abs(phi[first + j] - (j == k ? -std::sin(kAngle) : 0.0)) < kRoundoff);
            }
          }
        }
      }
      // Motions the type allows leave every row at zero: turns about the
      // axis (Revolute, Cylindrical), slides along it (Prismatic,
      // Cylindrical), turns about axis_a then axis_b (Universal), any turn
      // (Ball), anything (Free).
      const Joint<double>& j = sat.s.axes;
      const double angle = uniform(rng, -1.0, 1.0), slide = uniform(rng, -0.5, 0.5);
      Transform<double> allowed;
      switch (type) {
        case JointType::Weld: break;
        case JointType::Revolute: allowed.R = axisAngleRotation<double>(j.axis, angle); break;
        case JointType::Prismatic: allowed.p = slide * j.axis; break;
        case JointType::Cylindrical:
          allowed = Transform<double>(axisAngleRotation<double>(j.axis, angle), slide * j.axis);
          break;
        case JointType::Universal:
          allowed.R = axisAngleRotation<double>(j.axis_a, angle) * axisAngleRotation<double>(j.axis_b, slide);
          break;
        case JointType::Ball: allowed.R = capstan::testing::randomRotation(rng); break;
        case JointType::Free: allowed = randomTransform(rng, 1.0); break;
      }
      Constraint<double> moved = cut;
      moved.M.X_BF = cut.M.X_BF * allowed;
      CHECK(infinityNorm(ConstrainedMechanism(sat.s.model, {moved}).rows(sat.q, zero).positionErrors) < kRoundoff);
      // Velocity: the floater (M) given [dw; dv] about M's origin, in F's axes.
      Data<double> data(sat.s.model);
      forwardKinematics(sat.s.model, data, sat.q);
      const FrameMotion F = frameMotion(data, cut.F);
      for (int k = 0; k < 3; ++k) {
        const Vec3<double> e = Vec3<double>::Unit(k);
        const double dw = 0.3, dv = 0.7;
        const VectorX<double> du =
            floaterTwist(sat.s, sat.q, F.p, F.R * (dw * e), F.R * (dv * Vec3<double>::Unit((k + 1) % 3)));
        const VectorX<double> phiv =
            ConstrainedMechanism(sat.s.model, {cut}).rows(sat.q, VectorX<double>(sat.u + du)).velocityErrors;
        for (std::size_t i = 0; i < cut.rows.size(); ++i) {
          const LoopRow& row = cut.rows[i];
          const double expected = row.kind == LoopRowKind::Translation
                                      ? dv * row.inF.dot(Vec3<double>::Unit((k + 1) % 3))
                                      : dw * e.dot(row.inM.cross(row.inF));
          CHECK(std::abs(phiv[static_cast<Eigen::Index>(i)] - expected) < kRoundoff);
          ++rowsChecked;
        }
      }
    }
  }
  CHECK(rowsChecked == (kTrials / 2) * 9 * (6 + 5 + 5 + 4 + 4 + 3 + 0));
}

TEST_CASE("known errors of sphere contact: zero when touching, the separation, the normal velocity and the slip") {
  Rng rng(309);
  constexpr double kGap = 0.013;                      // m
  constexpr double kNormal = 0.4, kSlip = 0.6, kSpin = 1.7;  // m/s, m/s, rad/s
  int checked = 0;
  for (bool rolling : {false, true}) {
    const Kind kind{rolling ? "rolling sphere contact" : "sphere contact", true, JointType::Weld, rolling};
    CAPTURE(kind.name);
    for (int trial = 0; trial < kTrials; ++trial) {
      // Apart by kGap: the separation is kGap, the contact point divides the
      // center line in the ratio of the radii, Cz is the center line.
      const Satisfied apart = satisfiedScenario(rng, kind, kGap);
      const Constraint<double>& c = apart.s.constraint;
      const ConstraintRows<double> rowsApart = ConstrainedMechanism(apart.s.model, {c}).rows(apart.q, apart.u);
      CHECK(std::abs(rowsApart.positionErrors[0] - kGap) < kRoundoff);
      CHECK(std::abs(rowsApart.contacts[0].separation - kGap) < kRoundoff);
      CHECK(relativeError(Vec3<double>(rowsApart.contacts[0].R_WC.col(2)), apart.n) < kRoundoff);

      // Touching, with u in G's null space: every error is zero.
      const Satisfied sat = satisfiedScenario(rng, kind);
      const Constraint<double>& touching = sat.s.constraint;
      const ConstrainedMechanism mech(sat.s.model, {touching});
      const ConstraintRows<double> rows = mech.rows(sat.q, sat.u);
      CHECK(std::abs(rows.positionErrors[0]) < kRoundoff);
      CHECK(infinityNorm(rows.velocityErrors) < kRoundoff);
      const ContactGeometry<double>& C = rows.contacts[0];
      Data<double> data(sat.s.model);
      forwardKinematics(sat.s.model, data, sat.q);
      const Vec3<double> p_WSf = frameMotion(data, touching.F).p, p_WSb = frameMotion(data, touching.M).p;
      CHECK(relativeError(C.p_WC, Vec3<double>(p_WSf + touching.radiusF * sat.n)) < kRoundoff);
      CHECK(relativeError(C.p_WC, Vec3<double>(p_WSb - touching.radiusB * sat.n)) < kRoundoff);
      const Vec3<double> Cx = C.R_WC.col(0), Cy = C.R_WC.col(1), Cz = C.R_WC.col(2);
      const double rb = touching.radiusB;

      // The floater (B) moved about Sb: along the normal, along Cx, spun
      // about Cy (B's point at Co = Sb - rb Cz then slips along -Cx at rb
      // times the spin), spun about the normal (no slip).
      struct Push {
        Vec3<double> dw, dv;
        double normal, slipX, slipY;
      };
      const Push pushes[] = {{Vec3<double>::Zero(), kNormal * Cz, kNormal, 0.0, 0.0},
                             {Vec3<double>::Zero(), kSlip * Cx, 0.0, kSlip, 0.0},
                             {kSpin * Cy, Vec3<double>::Zero(), 0.0, -rb * kSpin, 0.0},
                             {kSpin * Cz, Vec3<double>::Zero(), 0.0, 0.0, 0.0}};
      for (const Push& push : pushes) {
        const VectorX<double> du = floaterTwist(sat.s, sat.q, p_WSb, push.dw, push.dv);
        const VectorX<double> phiv = mech.rows(sat.q, VectorX<double>(sat.u + du)).velocityErrors;
        CHECK(std::abs(phiv[0] - push.normal) < kRoundoff);
        if (rolling) {
          CHECK(std::abs(phiv[1] - push.slipX) < kRoundoff);
          CHECK(std::abs(phiv[2] - push.slipY) < kRoundoff);
        }
        ++checked;
      }
    }
  }
  CHECK(checked == 2 * kTrials * 4);
}

TEST_CASE("the contact frame: right-handed, z from Sf to Sb, x and y fixed on F, defined when the centers coincide") {
  Rng rng(310);
  for (int trial = 0; trial < kTrials; ++trial) {
    const Scenario s = randomScenario(rng, {"rolling sphere contact", true, JointType::Weld, true}, true);
    const VectorX<double> q = randomConfiguration(rng, s.model), u = randomVectorX(rng, s.model.nu, 1.0);
    const ConstraintRows<double> rows = ConstrainedMechanism(s.model, {s.constraint}).rows(q, u);
    const Mat3<double>& R_WC = rows.contacts[0].R_WC;
    CHECK(relativeError(Mat3<double>(R_WC.transpose() * R_WC), Mat3<double>::Identity()) < kRoundoff);
    CHECK(std::abs(R_WC.determinant() - 1.0) < kRoundoff);
    Data<double> data(s.model);
    forwardKinematics(s.model, data, q);
    const FrameMotion F = frameMotion(data, s.constraint.F), M = frameMotion(data, s.constraint.M);
    const Vec3<double> p = M.p - F.p;
    CHECK(relativeError(Vec3<double>(R_WC.col(2)), Vec3<double>(p.normalized())) < kRoundoff);
    CHECK(std::abs(rows.contacts[0].separation - (p.norm() - s.constraint.radiusF - s.constraint.radiusB)) < kRoundoff);
    // x and y depend only on the normal in F's frame: turning the whole
    // scene (both sphere frames together) turns the contact frame with it.
    const Mat3<double> R = capstan::testing::randomRotation(rng);
    Constraint<double> onWorld = s.constraint;
    onWorld.F = {-1, Transform<double>(R * F.R, R * F.p)};
    onWorld.M = {-1, Transform<double>(R * M.R, R * M.p)};
    const ConstraintRows<double> turned = ConstrainedMechanism(s.model, {onWorld}).rows(q, u);
    CHECK(relativeError(turned.contacts[0].R_WC, Mat3<double>(R * R_WC)) < kRoundoff);
  }
  // Coincident centers: no center line; Cz is F's z axis and nothing divides by zero.
  Mechanism<double> model = randomTree(rng, 2);
  const Mat3<double> R_WF = capstan::testing::randomRotation(rng);
  const Constraint<double> coincident =
      sphereContact({-1, Transform<double>(R_WF, Vec3<double>(0.1, 0.2, 0.3))}, 0.3,
                    {-1, Transform<double>(Mat3<double>::Identity(), Vec3<double>(0.1, 0.2, 0.3))}, 0.2, true);
  const ConstraintRows<double> rows = ConstrainedMechanism(model, {coincident})
                                          .rows(randomConfiguration(rng, model), randomVectorX(rng, model.nu, 1.0));
  CHECK(rows.G.allFinite());
  CHECK(rows.gamma.allFinite());
  CHECK(std::abs(rows.positionErrors[0] + 0.5) < kRoundoff);
  CHECK(relativeError(Vec3<double>(rows.contacts[0].R_WC.col(2)), Vec3<double>(R_WF.col(2))) < kRoundoff);
}

// ------------------------------------------------------------- workless

TEST_CASE("workless: with u in G's null space the solver's constraint forces do no work and energy is constant") {
  Rng rng(311);
  double worstEnergyRate = 0.0;
  int checked = 0;
  for (const Kind& kind : allKinds()) {
    CAPTURE(kind.name);
    for (int trial = 0; trial < kTrials / 2; ++trial) {
      const Satisfied sat = satisfiedScenario(rng, kind);
      ConstrainedMechanism mech(sat.s.model, {sat.s.constraint});
      ConstraintSolver<ConstrainedMechanism> solver(mech, mech.rowRanges());
      VectorX<double> udot, lambda;
      solver.accelerations(0.0, sat.q, sat.u, udot, lambda);
      const ConstraintRows<double> rows = mech.rows(sat.q, sat.u);
      const double power = -lambda.dot(rows.G * sat.u);
      const double scale = std::max(1.0, infinityNorm(lambda) * infinityNorm(sat.u));
      CHECK(std::abs(power) / scale < kRoundoff);
      // The body forces' power.
      const std::vector<Vec6<double>> forces = constraintBodyForces(sat.s.model, rows, lambda);
      Data<double> data(sat.s.model);
      forwardKinematics(sat.s.model, data, sat.q, sat.u);
      double bodyPower = 0.0;
      for (std::size_t b = 0; b < forces.size(); ++b) bodyPower += forces[b].dot(data.V_WB[b]);
      CHECK(std::abs(bodyPower) / scale < kRoundoff);
      // Energy along the motion (no applied joint forces): d/dt (T + V) = 0
      // by central differences along q' = N u, u' = udot.
      auto energy = [&](const VectorX<double>& q, const VectorX<double>& u) {
        forwardKinematics(sat.s.model, data, q, u);
        return kineticEnergy(sat.s.model, data) + potentialEnergy(sat.s.model, data);
      };
      VectorX<double> qdot;
      qdotFromU(sat.s.model, sat.q, sat.u, qdot);
      const double rate = (energy(sat.q + kDifferenceStep * qdot, sat.u + kDifferenceStep * udot) -
                           energy(sat.q - kDifferenceStep * qdot, sat.u - kDifferenceStep * udot)) /
                          (2 * kDifferenceStep);
      Data<double> kin(sat.s.model);
      const MatrixX<double> M = crba(sat.s.model, kin, sat.q);
      const double kineticPower = std::abs(sat.u.dot(M * udot));
      const double energyRate = std::abs(rate) / std::max(1.0, kineticPower);
      worstEnergyRate = std::max(worstEnergyRate, energyRate);
      CHECK(energyRate < kFiniteDifference);
      ++checked;
    }
  }
  CHECK(checked == 9 * (kTrials / 2));
  MESSAGE("energy rate along constrained motion: worst relative " << worstEnergyRate);
}

// ------------------------------------------------ equivalent joint model

// Body k on joint `type` from `parent` (with a child of its own) against
// the same body on a Free joint with the same frames, closed by a cut of
// `type` from the parent's F to k's M.
void checkEquivalentJointModel(JointType type, Rng& rng, double& worst) {
  Mechanism<double> tree = randomTree(rng, 5), cut = tree;
  const int parent = std::uniform_int_distribution<int>(-1, 4)(rng);
  const Joint<double> joint = randomJoint(rng, type, parent, "k");
  Joint<double> free = joint;
  free.type = JointType::Free;
  const Body<double> body = randomBody(rng, "k");
  const int k = tree.addBody(body, joint);
  cut.addBody(body, free);
  const JointType childType = kAllJointTypes[std::uniform_int_distribution<int>(1, 6)(rng)];
  const Joint<double> child = randomJoint(rng, childType, k, "child");
  const Body<double> childBody = randomBody(rng, "child");
  tree.addBody(childBody, child);
  cut.addBody(childBody, child);
  ConstrainedMechanism mech(cut, {cutJoint(type, {parent, joint.X_PF}, {k, joint.X_BM}, joint)});

  // The same state: joint k's X_FM and V_FM (in F) as the Free joint's q, u.
  const VectorX<double> qTree = randomConfiguration(rng, tree), uTree = randomVectorX(rng, tree.nu, 1.0);
  VectorX<double> tauTree = randomVectorX(rng, tree.nu, 3.0);
  tauTree.segment(tree.joints[static_cast<std::size_t>(k)].uOffset, joint.nu()).setZero();
  Data<double> dataTree(tree);
  forwardKinematics(tree, dataTree, qTree, uTree);
  VectorX<double> qCut(cut.nq), uCut(cut.nu), tauCut(cut.nu);
  for (std::size_t b = 0; b < tree.joints.size(); ++b) {
    const Joint<double>& jt = tree.joints[b];
    const Joint<double>& jc = cut.joints[b];
    if (static_cast<int>(b) == k) {
      const Transform<double>& X_FM = dataTree.X_FM[b];
      qCut.segment<4>(jc.qOffset) = quaternionFromRotation(X_FM.R);
      qCut.segment<3>(jc.qOffset + 4) = X_FM.p;
      uCut.segment<6>(jc.uOffset) = dataTree.H_FM_F[b] * uTree.segment(jt.uOffset, jt.nu());
      tauCut.segment<6>(jc.uOffset).setZero();
    } else {
      qCut.segment(jc.qOffset, jc.nq()) = qTree.segment(jt.qOffset, jt.nq());
      uCut.segment(jc.uOffset, jc.nu()) = uTree.segment(jt.uOffset, jt.nu());
      tauCut.segment(jc.uOffset, jc.nu()) = tauTree.segment(jt.uOffset, jt.nu());
    }
  }
  mech.tau() = tauCut;
  const ConstraintRows<double> rows = mech.rows(qCut, uCut);
  REQUIRE(rows.G.rows() == 6 - joint.nu());
  CHECK(infinityNorm(rows.positionErrors) < kRoundoff);
  CHECK(infinityNorm(rows.velocityErrors) < kRoundoff);

  const VectorX<double> udotTree = forwardDynamics(tree, dataTree, qTree, uTree, tauTree);
  ConstraintSolver<ConstrainedMechanism> solver(mech, mech.rowRanges());
  VectorX<double> udotCut, lambda;
  solver.accelerations(0.0, qCut, uCut, udotCut, lambda);
  CHECK(solver.rank() == 6 - joint.nu());

  Data<double> dataCut(cut);
  forwardKinematics(tree, dataTree, qTree, uTree);
  forwardKinematics(cut, dataCut, qCut, uCut);
  for (int b = 0; b < tree.numBodies(); ++b) {
    CAPTURE(b);
    const Vec6<double> A_tree = bodyAcceleration(tree, dataTree, b, udotTree);
    const Vec6<double> A_cut = bodyAcceleration(cut, dataCut, b, udotCut);
    const double error = relativeError(A_cut, A_tree);
    worst = std::max(worst, error);
    CHECK(error < kAgreement);
  }
  // The cut's force on body k is the force joint k transmits to it.
  rnea(tree, dataTree, qTree, uTree, udotTree);
  const std::vector<Vec6<double>> forces = constraintBodyForces(cut, rows, lambda);
  CHECK(relativeError(forces[static_cast<std::size_t>(k)], dataTree.F_Bo_W[static_cast<std::size_t>(k)]) < kAgreement);
}

TEST_CASE("equivalent joint model: a Free joint closed by a cut of type T moves as joint T, for every T") {
  Rng rng(312);
  double worst = 0.0;
  int models = 0;
  for (JointType type : kAllJointTypes) {
    const std::string typeName = jointTypeName(type);
    CAPTURE(typeName);
    for (int trial = 0; trial < kTrials / 2; ++trial) {
      checkEquivalentJointModel(type, rng, worst);
      ++models;
    }
  }
  CHECK(models == 7 * (kTrials / 2));
  MESSAGE("body accelerations, joint vs Free + cut: worst relative difference " << worst);
}

// ---------------------------------------------------- static equilibrium

constexpr double kG = 9.81;  // m/s^2

// A ball (mass m, radius rb, uniform: I = 2/5 m rb^2) on a Free joint from
// World, its center at `center` at rest, touching a sphere of radius rf
// fixed at World's origin; gravity -kG y.
struct BallOnSphere {
  Mechanism<double> model;
  VectorX<double> q, u;
};

BallOnSphere ballOnSphere(double m, double rb, const Vec3<double>& center) {
  BallOnSphere out;
  out.model.gravity = Vec3<double>(0, -kG, 0);
  Joint<double> free;
  free.name = "free";
  free.type = JointType::Free;
  out.model.addBody(Body<double>{"ball", m, Vec3<double>::Zero(), Mat3<double>::Identity() * (0.4 * m * rb * rb)},
                    free);
  out.q = neutralConfiguration(out.model);
  out.q.segment<3>(4) = center;
  out.u = VectorX<double>::Zero(out.model.nu);
  return out;
}

TEST_CASE("static equilibrium: a ball resting on top of a fixed sphere is held by its weight, -m g along the normal") {
  const double m = 1.7, rf = 0.8, rb = 0.3;
  for (bool rolling : {false, true}) {
    CAPTURE(rolling);
    const BallOnSphere ball = ballOnSphere(m, rb, Vec3<double>(0, rf + rb, 0));
    ConstrainedMechanism mech(ball.model, {sphereContact({-1, {}}, rf, {0, {}}, rb, rolling)});
    ConstraintSolver<ConstrainedMechanism> solver(mech, mech.rowRanges());
    VectorX<double> udot, lambda;
    solver.accelerations(0.0, ball.q, ball.u, udot, lambda);
    CHECK(infinityNorm(udot) < kRoundoff);
    CHECK(std::abs(lambda[0] - (-m * kG)) < kRoundoff * m * kG);
    if (rolling) CHECK(infinityNorm(lambda.tail<2>()) < kRoundoff);
    // The support force on the ball: up, its weight.
    const ConstraintRows<double> rows = mech.rows(ball.q, ball.u);
    const Vec3<double> f_B =
        -(rows.contacts[0].R_WC * Vec3<double>(rolling ? lambda[1] : 0.0, rolling ? lambda[2] : 0.0, lambda[0]));
    CHECK(relativeError(f_B, Vec3<double>(0, m * kG, 0)) < kRoundoff);
  }
}

TEST_CASE("static equilibrium off the top: a ball at angle theta slides at g sin(theta), or rolls at 5/7 of it") {
  // At rest at angle theta from the top, tangent e downhill, normal n:
  // frictionless, the center accelerates at g sin(theta) along e and the
  // ball does not turn; rolling, m a = m g sin - f and I alpha = rb f give
  // a = 5/7 g sin(theta), friction 2/7 m g sin(theta) uphill, alpha = a / rb
  // about n x e. Either way the normal force is m g cos(theta).
  const double m = 2.3, rf = 0.6, rb = 0.25, theta = 0.4;
  const Vec3<double> n(std::sin(theta), std::cos(theta), 0), e(std::cos(theta), -std::sin(theta), 0);
  for (bool rolling : {false, true}) {
    CAPTURE(rolling);
    const BallOnSphere ball = ballOnSphere(m, rb, Vec3<double>((rf + rb) * n));
    ConstrainedMechanism mech(ball.model, {sphereContact({-1, {}}, rf, {0, {}}, rb, rolling)});
    ConstraintSolver<ConstrainedMechanism> solver(mech, mech.rowRanges());
    VectorX<double> udot, lambda;
    solver.accelerations(0.0, ball.q, ball.u, udot, lambda);
    const double a = rolling ? 5.0 / 7.0 * kG * std::sin(theta) : kG * std::sin(theta);
    const Vec3<double> alpha = rolling ? Vec3<double>(a / rb * n.cross(e)) : Vec3<double>::Zero();
    CHECK(relativeError(Vec3<double>(udot.head<3>()), alpha) < kRoundoff);
    CHECK(relativeError(Vec3<double>(udot.tail<3>()), Vec3<double>(a * e)) < kRoundoff);
    CHECK(std::abs(lambda[0] - (-m * kG * std::cos(theta))) < kRoundoff * m * kG);
    const ConstraintRows<double> rows = mech.rows(ball.q, ball.u);
    const Vec3<double> l(rolling ? lambda[1] : 0.0, rolling ? lambda[2] : 0.0, lambda[0]);
    const Vec3<double> f_B = -(rows.contacts[0].R_WC * l);
    const Vec3<double> friction =
        rolling ? Vec3<double>(-2.0 / 7.0 * m * kG * std::sin(theta) * e) : Vec3<double>::Zero();
    CHECK(relativeError(f_B, Vec3<double>(m * kG * std::cos(theta) * n + friction)) < kRoundoff);
  }
}

TEST_CASE(
    "static equilibrium: a horizontal rod pinned at one end and held by a Ball cut at the other carries half its "
    "weight there") {
  // Rod along x, length L, hinged about z at World's origin (a tree
  // Revolute), its far end held by a Ball cut to World. Only the vertical
  // row can act on the one dof (rank 1): lambda = (0, -m g / 2, 0), and the
  // cut's force on the rod is m g / 2 up at x = L.
  const double m = 3.0, L = 1.2;
  Mechanism<double> model;
  model.gravity = Vec3<double>(0, -kG, 0);
  Joint<double> hinge;
  hinge.name = "hinge";
  hinge.type = JointType::Revolute;
  hinge.axis = Vec3<double>::UnitZ();
  Mat3<double> I = Mat3<double>::Zero();
  I(1, 1) = I(2, 2) = m * L * L / 12;
  model.addBody(Body<double>{"rod", m, Vec3<double>(L / 2, 0, 0), I}, hinge);
  const Transform<double> atEnd(Mat3<double>::Identity(), Vec3<double>(L, 0, 0));
  ConstrainedMechanism mech(model, {cutJoint(JointType::Ball, {-1, atEnd}, {0, atEnd}, Joint<double>{})});
  ConstraintSolver<ConstrainedMechanism> solver(mech, mech.rowRanges());
  const VectorX<double> q = VectorX<double>::Zero(1), u = VectorX<double>::Zero(1);
  VectorX<double> udot, lambda;
  solver.accelerations(0.0, q, u, udot, lambda);
  CHECK(solver.rank() == 1);
  CHECK(std::abs(udot[0]) < kRoundoff);
  CHECK(relativeError(lambda, Vec3<double>(0, -m * kG / 2, 0)) < kRoundoff);
  const std::vector<Vec6<double>> forces = constraintBodyForces(model, mech.rows(q, u), lambda);
  const Vec6<double> expected =
      spatialVector<double>(Vec3<double>(0, 0, m * kG * L / 2), Vec3<double>(0, m * kG / 2, 0));
  CHECK(relativeError(forces[0], expected) < kRoundoff);
}

TEST_CASE("static equilibrium: a body welded to World by a Weld cut is held by its weight and its moment") {
  // A free body, its center of mass at c from its origin, welded there to
  // World: the translation rows carry -lambda = m kG up, the perpendicular
  // rows (e2,e3), (e3,e1), (e1,e2) a torque lambda_4..6 about e1, e2, e3
  // (their (y x x) coefficients are -e1, -e2, -e3) balancing gravity's
  // moment c x (-m kG y): lambda_rot = (-m kG c_z, 0, m kG c_x).
  const double m = 1.4;
  const Vec3<double> c(0.2, -0.3, 0.5);
  Mechanism<double> model;
  model.gravity = Vec3<double>(0, -kG, 0);
  Joint<double> free;
  free.name = "free";
  free.type = JointType::Free;
  model.addBody(Body<double>{"body", m, c, Mat3<double>::Identity() * 0.1}, free);
  ConstrainedMechanism mech(model, {cutJoint(JointType::Weld, {-1, {}}, {0, {}}, Joint<double>{})});
  ConstraintSolver<ConstrainedMechanism> solver(mech, mech.rowRanges());
  const VectorX<double> q = neutralConfiguration(model), u = VectorX<double>::Zero(6);
  VectorX<double> udot, lambda;
  solver.accelerations(0.0, q, u, udot, lambda);
  CHECK(solver.rank() == 6);
  CHECK(infinityNorm(udot) < kRoundoff);
  Vec6<double> expected;
  expected << 0, -m * kG, 0, -m * kG * c.z(), 0, m * kG * c.x();
  CHECK(relativeError(lambda, expected) < kRoundoff);
}

}  // namespace
