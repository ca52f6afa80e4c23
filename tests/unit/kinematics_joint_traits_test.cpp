// mechanism.hpp's JointTraits: each joint type's pieces agree with each
// other, so that a new type's specialization is checked as a whole:
// X_FM(q) moves as H u says, H and S are the same motion (S in M, H in F),
// and the rate terms are the derivatives of H and S along the motion.
#include <doctest/doctest.h>

#include <capstan/constraints.hpp>
#include <capstan/kinematics.hpp>
#include <capstan/local_dynamics.hpp>

#include "multibody_fixtures.hpp"

using namespace capstan;
using capstan::testing::Rng;

namespace {

constexpr double kStep = 1e-6;
constexpr double kDifference = 1e-6;  // central differences of smooth functions at step 1e-6

// q after moving for `dt` at speeds u (qdot = N(q) u), as one Euler step of
// a central difference: q + dt N(q) u.
VectorX<double> advanced(const Mechanism<double>& model, const VectorX<double>& q, const VectorX<double>& u,
                         double dt) {
  VectorX<double> qdot;
  qdotFromU(model, q, u, qdot);
  return q + dt * qdot;
}

}  // namespace

TEST_CASE("every joint type's traits agree: X_FM, H, Hdot u, S and its rate") {
  Rng rng(23);
  for (JointType type : kJointTypes) {
    const std::string name = jointTypeName(type);
    CAPTURE(name);
    Mechanism<double> model;
    model.addBody(capstan::testing::randomBody(rng, "b"), capstan::testing::randomJoint(rng, type, -1, "j"));
    const Joint<double>& joint = model.joints[0];
    CHECK(joint.nq() == jointNq(type));
    CHECK(joint.nu() == jointNu(type));
    CHECK(jointNq(type) >= jointNu(type));
    CHECK(jointNq(type) - jointNu(type) == (hasQuaternion(type) ? 1 : 0));
    for (int trial = 0; trial < 3; ++trial) {
      const VectorX<double> q = capstan::testing::randomConfiguration(rng, model);
      const VectorX<double> u = capstan::testing::randomVectorX(rng, model.nu, 1.0);
      Transform<double> X_FM;
      Mat6X<double> H(6, joint.nu());
      detail::jointPosition(joint, q, X_FM, H);
      // V_FM = H u: the motion of M in F, from X_FM at q -/+ dt.
      Transform<double> Xm, Xp;
      Mat6X<double> Hm(6, joint.nu()), Hp(6, joint.nu());
      detail::jointPosition(joint, advanced(model, q, u, -kStep), Xm, Hm);
      detail::jointPosition(joint, advanced(model, q, u, kStep), Xp, Hp);
      const Mat3<double> Rdot = (Xp.R - Xm.R) / (2 * kStep);
      const Mat3<double> w_x = Rdot * X_FM.R.transpose();
      const Vec6<double> V = H * u;
      CHECK((Vec3<double>(w_x(2, 1), w_x(0, 2), w_x(1, 0)) - V.head<3>()).norm() < kDifference);
      CHECK(((Xp.p - Xm.p) / (2 * kStep) - V.tail<3>()).norm() < kDifference);
      // Hdot u: H's rate along the motion, times u.
      const Vec6<double> HdotU = detail::jointHdotU(joint, H, u);
      CHECK((HdotU - (Hp - Hm) * u / (2 * kStep)).norm() < kDifference);
      // S (at Mo, in M) is H re-expressed in M.
      Transform<double> X;
      Mat6X<double> S, Sm, Sp;
      local::detail::jointSubspace(joint, q, X, S);
      Mat6<double> R_MF = Mat6<double>::Zero();
      R_MF.topLeftCorner<3, 3>() = R_MF.bottomRightCorner<3, 3>() = X_FM.R.transpose();
      CHECK((S - R_MF * H).norm() < 1e-12);
      // S's rate in M along the motion, times u.
      local::detail::jointSubspace(joint, advanced(model, q, u, -kStep), X, Sm);
      local::detail::jointSubspace(joint, advanced(model, q, u, kStep), X, Sp);
      const Vec6<double> rate = local::detail::subspaceRate(joint, S, Vec6<double>(S * u), u);
      CHECK((rate - (Sp - Sm) * u / (2 * kStep)).norm() < kDifference);
    }
  }
}

TEST_CASE("a cut joint's rows leave exactly its freedoms") {
  for (JointType type : kJointTypes) {
    CAPTURE(jointTypeName(type));
    const auto rows = loopClosureRows(type, Eigen::Vector3d::UnitZ(), Eigen::Vector3d::UnitX(), Eigen::Vector3d::UnitY());
    CHECK(static_cast<int>(rows.size()) == 6 - jointNu(type));
  }
}
