// External spatial forces (dynamics.hpp's ExternalForces: F_B = [n; f] about
// Bo, in World) in both families of algorithms, World frame (dynamics.hpp)
// and joint frames (local_dynamics.hpp), checked against the principle of
// virtual work through the World body Jacobians (kinematics.hpp):
//   M udot + C = tau + sum_B J_WB^T F_B,
// with M and C from the World family without forces. Every forward method
// of both families satisfies it, they agree with each other, and inverse
// dynamics with the same forces gives tau back. The virtual-work check is
// shown to reject forces taken with the wrong sign, about the wrong point or
// in the wrong frame, so it cannot pass by accident.
#include <capstan/local_dynamics.hpp>

#include <doctest/doctest.h>

#include "multibody_fixtures.hpp"

namespace {

using namespace capstan;
using capstan::testing::kAllJointTypes;
using capstan::testing::randomChain;
using capstan::testing::randomConfiguration;
using capstan::testing::randomTree;
using capstan::testing::randomVector;
using capstan::testing::randomVectorX;
using capstan::testing::relativeError;
using capstan::testing::Rng;

constexpr double kRoundoff = 1e-10;  // relative: O(n^2) flops on O(1) data, M's condition number
constexpr double kDistinct = 1e-4;   // relative: what a wrong convention must at least change

ExternalForces<double> randomForces(Rng& rng, const Mechanism<double>& model) {
  ExternalForces<double> fext;
  for (int b = 0; b < model.numBodies(); ++b) {
    fext.push_back(spatialVector<double>(randomVector(rng, 3.0), randomVector(rng, 10.0)));
  }
  return fext;
}

// sum_B J_WB^T F_B, the generalized forces fext is worth.
VectorX<double> generalizedForces(const Mechanism<double>& model, const VectorX<double>& q,
                                  const ExternalForces<double>& fext) {
  Data<double> world(model);
  forwardKinematics(model, world, q);
  VectorX<double> total = VectorX<double>::Zero(model.nu);
  MatrixX<double> J;
  for (int b = 0; b < model.numBodies(); ++b) {
    bodyJacobian(model, world, b, J);
    total += J.transpose() * fext[static_cast<std::size_t>(b)];
  }
  return total;
}

// The conventions a wrong implementation might use instead of [n; f] about
// Bo in World, each as the forces that would be about Bo in World.
enum class Mistake { Sign, AboutWorldOrigin, AboutCenterOfMass, InBodyFrame };

ExternalForces<double> misread(const Mechanism<double>& model, const VectorX<double>& q,
                               const ExternalForces<double>& fext, Mistake mistake) {
  Data<double> world(model);
  forwardKinematics(model, world, q);
  ExternalForces<double> out;
  for (int i = 0; i < model.numBodies(); ++i) {
    const auto b = static_cast<std::size_t>(i);
    const Vec3<double> n = fext[b].head<3>(), f = fext[b].tail<3>();
    const Transform<double>& X_WB = world.X_WB[b];
    Vec3<double> n_Bo = n, f_W = f;
    switch (mistake) {
      case Mistake::Sign:
        n_Bo = -n;
        f_W = -f;
        break;
      case Mistake::AboutWorldOrigin:  // n taken about Wo: about Bo it is n - p_WoBo x f
        n_Bo = n - X_WB.p.cross(f);
        break;
      case Mistake::AboutCenterOfMass:  // n taken about Bcm: about Bo it is n + p_BoBcm x f
        n_Bo = n + (X_WB.R * model.bodies[b].p_BoBcm_B).cross(f);
        break;
      case Mistake::InBodyFrame:  // [n; f] taken as expressed in B
        n_Bo = X_WB.R * n;
        f_W = X_WB.R * f;
        break;
    }
    out.push_back(spatialVector<double>(n_Bo, f_W));
  }
  return out;
}

void checkExternalForces(const Mechanism<double>& model, Rng& rng) {
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> tau = randomVectorX(rng, model.nu, 5.0);
  const ExternalForces<double> fext = randomForces(rng, model);

  Data<double> world(model);
  local::Data<double> joint(model);
  const MatrixX<double> M = crba(model, world, q);
  const VectorX<double> C = nonlinearEffects(model, world, q, u);
  const VectorX<double> Qext = generalizedForces(model, q, fext);
  const VectorX<double> rhs = tau + Qext;
  // How far udot is from satisfying M udot + C = rhs, relative.
  auto residual = [&](const VectorX<double>& udot, const VectorX<double>& target) {
    return relativeError(VectorX<double>(M * udot + C), target);
  };

  const VectorX<double> udotWorldAba = aba(model, world, q, u, tau, fext);
  const VectorX<double> udotWorldCrba = forwardDynamics(model, world, q, u, tau, fext);
  const VectorX<double> udotJointAba = local::aba(model, joint, q, u, tau, fext);
  const VectorX<double> udotJointCrba = local::forwardDynamics(model, joint, q, u, tau, fext);
  CHECK(residual(udotWorldAba, rhs) < kRoundoff);
  CHECK(residual(udotWorldCrba, rhs) < kRoundoff);
  CHECK(residual(udotJointAba, rhs) < kRoundoff);
  CHECK(residual(udotJointCrba, rhs) < kRoundoff);
  CHECK(relativeError(udotWorldCrba, udotWorldAba) < kRoundoff);
  CHECK(relativeError(udotJointAba, udotWorldAba) < kRoundoff);
  CHECK(relativeError(udotJointCrba, udotWorldAba) < kRoundoff);

  // The check rejects each wrong convention: the forces matter, and the
  // computed udot does not satisfy the equations with misread forces. (A
  // moment does no work on a mechanism that can only translate, so there
  // the point of application cannot matter; only the sign and frame can.)
  CHECK(residual(udotWorldAba, tau) > kDistinct);
  bool rotates = false;
  for (const Joint<double>& j : model.joints) rotates = rotates || (j.nu() > 0 && j.type != JointType::Prismatic);
  for (Mistake mistake : {Mistake::Sign, Mistake::AboutWorldOrigin, Mistake::AboutCenterOfMass,
                          Mistake::InBodyFrame}) {
    if (!rotates && (mistake == Mistake::AboutWorldOrigin || mistake == Mistake::AboutCenterOfMass)) continue;
    CAPTURE(static_cast<int>(mistake));
    const VectorX<double> wrongRhs = tau + generalizedForces(model, q, misread(model, q, fext, mistake));
    CHECK(residual(udotWorldAba, wrongRhs) > kDistinct);
    CHECK(residual(udotJointAba, wrongRhs) > kDistinct);
  }

  // C with fext is C - sum J^T F, in both families.
  CHECK(relativeError(VectorX<double>(nonlinearEffects(model, world, q, u, fext)), VectorX<double>(C - Qext)) <
        kRoundoff);
  CHECK(relativeError(VectorX<double>(local::nonlinearEffects(model, joint, q, u, fext)),
                      VectorX<double>(C - Qext)) < kRoundoff);
  // Inverse dynamics with the same forces gives tau back, in both families;
  // and without them, M udot + C.
  CHECK(relativeError(VectorX<double>(rnea(model, world, q, u, udotWorldAba, fext)), tau) < kRoundoff);
  CHECK(relativeError(VectorX<double>(local::inverseDynamics(model, joint, q, u, udotWorldAba, fext)), tau) <
        kRoundoff);
  CHECK(relativeError(VectorX<double>(rnea(model, world, q, u, udotWorldAba)), rhs) < kRoundoff);
  CHECK(relativeError(VectorX<double>(local::inverseDynamics(model, joint, q, u, udotWorldAba)), rhs) < kRoundoff);
}

TEST_CASE("external forces obey virtual work on random trees, in both families") {
  Rng rng(81);
  for (int trial = 0; trial < 20; ++trial) checkExternalForces(randomTree(rng, 8), rng);
}

TEST_CASE("external forces obey virtual work on chains of each joint type, in both families") {
  Rng rng(82);
  for (JointType type : kAllJointTypes) {
    if (type == JointType::Weld) continue;
    const std::string typeName = jointTypeName(type);
    CAPTURE(typeName);
    for (int trial = 0; trial < 3; ++trial) checkExternalForces(randomChain(rng, 4, type), rng);
  }
}

TEST_CASE("a force at a point of a body is [p_BoQ x f; f]") {
  // A free body at rest without gravity pushed by f at a point Q: its
  // centre of mass accelerates at f/m, and it spins up as (p_BcmQ x f)
  // requires about the centre of mass: I_Bcm dw = p_BcmQ x f.
  Rng rng(84);
  Mechanism<double> model = randomChain(rng, 1, JointType::Free);
  model.gravity.setZero();
  const Body<double>& body = model.bodies[0];
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> zero = VectorX<double>::Zero(model.nu);
  Data<double> world(model);
  forwardKinematics(model, world, q);
  const Mat3<double>& R_WB = world.X_WB[0].R;
  const Vec3<double> p_BoQ_W = R_WB * randomVector(rng, 0.5);
  const Vec3<double> f = randomVector(rng, 10.0);
  const ExternalForces<double> fext = {spatialVector<double>(p_BoQ_W.cross(f), f)};
  for (int family = 0; family < 2; ++family) {
    CAPTURE(family);
    local::Data<double> joint(model);
    const VectorX<double> udot =
        family == 0 ? VectorX<double>(aba(model, world, q, zero, zero, fext))
                    : VectorX<double>(local::aba(model, joint, q, zero, zero, fext));
    // The body's spatial acceleration about Bo in World from udot, at rest.
    Data<double> kin(model);
    forwardKinematics(model, kin, q, zero, udot);
    const Vec3<double> dw = kin.A_WB[0].head<3>();
    const Vec3<double> a_Bo = kin.A_WB[0].tail<3>();
    const Vec3<double> p_BoBcm_W = R_WB * body.p_BoBcm_B;
    const Vec3<double> a_Bcm = a_Bo + dw.cross(p_BoBcm_W);  // at rest: no centripetal term
    const Mat3<double> I_Bcm_W = R_WB * body.I_Bcm_B * R_WB.transpose();
    CHECK(relativeError(Vec3<double>(body.mass * a_Bcm), f) < kRoundoff);
    CHECK(relativeError(Vec3<double>(I_Bcm_W * dw), Vec3<double>((p_BoQ_W - p_BoBcm_W).cross(f))) < kRoundoff);
  }
}

TEST_CASE("external forces: one per body or a clear error, in both families") {
  Rng rng(83);
  const Mechanism<double> model = randomTree(rng, 3);
  Data<double> world(model);
  local::Data<double> joint(model);
  const VectorX<double> q = randomConfiguration(rng, model);
  const VectorX<double> u = VectorX<double>::Zero(model.nu);
  const ExternalForces<double> tooFew(2, Vec6<double>::Zero());
  CHECK_THROWS_AS(local::aba(model, joint, q, u, u, tooFew), std::invalid_argument);
  CHECK_THROWS_AS(local::forwardDynamics(model, joint, q, u, u, tooFew), std::invalid_argument);
  CHECK_THROWS_AS(aba(model, world, q, u, u, tooFew), std::invalid_argument);
  CHECK_THROWS_AS(forwardDynamics(model, world, q, u, u, tooFew), std::invalid_argument);
  CHECK_THROWS_AS(rnea(model, world, q, u, u, tooFew), std::invalid_argument);
}

}  // namespace
