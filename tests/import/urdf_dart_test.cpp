// The URDF importer against DART, an independent reader (its own URDF
// loader over urdfdom) and solver: the robots of examples/urdf/ imported
// into models, run by the interpreter (no C++ build), and loaded by DART;
// mass matrix, forward dynamics and link poses agree to 1e-9 at random
// states, with a fixed and with a floating base. And the SDFormat importer
// against the URDF one: tests/import/sdf/ holds the arm and the quadruped
// written in SDFormat with its frames (relative poses, nested models, an
// axis expressed in another frame, a joint frame away from its child link);
// each imports to the dynamics of its URDF twin, to 1e-12.
//
// DART's conventions, mapped joint by joint (by the URDF joint's name):
//   - a revolute or prismatic joint: the same q and u;
//   - the floating base (DART's FreeJoint; Capstan's Free under the root):
//     DART's positions are (log of R_WB, p_WB); its velocities (w, v) are
//     the spatial velocity expressed in the link frame B, where Capstan's
//     u = (w, v) is expressed in World: u_dart = T u with T = diag(R^T, R^T).
//     Then M = T^T M_dart T and udot_dart = T udot - (0, w_B x v_B).
//   - links without <inertial>: Capstan gives them no mass, DART a default
//     inertia, set here to none.
//   - DART damps implicitly over a time step dt (its articulated inertias
//     gain d dt); with dt = 1e-12 that is 1e-12 of the damping, and its
//     damping is the explicit -d u of the model's force law.
#include <doctest/doctest.h>

#include <dart/dynamics/BodyNode.hpp>
#include <dart/dynamics/FreeJoint.hpp>
#include <dart/dynamics/Joint.hpp>
#include <dart/dynamics/Skeleton.hpp>
#include <dart/utils/urdf/DartLoader.hpp>

#include <Eigen/Dense>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "codegen/interpret.hpp"
#include "codegen/layout.hpp"
#include "import/sdf.hpp"
#include "import/urdf.hpp"
#include "mechanics/mechanism.hpp"
#include "sema/sema.hpp"

namespace {

namespace fs = std::filesystem;
using capstan::codegen::InterpretedModel;
using capstan::codegen::Interpreter;
using capstan::codegen::ModelLayout;

const fs::path kSource = CAPSTAN_SOURCE_DIR;

std::string readText(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The robot imported and checked, with its interpreter.
struct Imported {
  capstan::syntax::SourceManager sources;
  capstan::syntax::DiagnosticEngine diags;
  std::optional<capstan::sema::FlatModel> flat;
  std::optional<capstan::mechanics::Mechanism> mech;
  std::optional<ModelLayout> layout;
  std::unique_ptr<Interpreter> interp;
};

std::unique_ptr<Imported> importRobot(const fs::path& urdf, bool floating) {
  auto m = std::make_unique<Imported>();
  capstan::import::ImportOptions options;
  options.floatingBase = floating;
  const std::optional<std::string> text =
      urdf.extension() == ".sdf" ? capstan::import::importSdf(urdf, readText(urdf), options, m->sources, m->diags)
                                 : capstan::import::importUrdf(urdf, readText(urdf), options, m->sources, m->diags);
  REQUIRE(text);
  capstan::sema::Library lib(m->sources, m->diags, {kSource / "stdlib"});
  const auto* def = lib.addText(urdf.string() + ".cap", *text);
  REQUIRE(def);
  m->flat = capstan::sema::flatten(lib, lib.defaultModel(*def)->name);
  REQUIRE(m->flat);
  m->mech = capstan::mechanics::build(*m->flat, m->diags);
  REQUIRE(m->mech);
  REQUIRE_FALSE(m->diags.hasErrors());
  std::vector<capstan::codegen::Unsupported> unsupported;
  m->layout = capstan::codegen::makeLayout(*m->flat, *m->mech, unsupported);
  REQUIRE(unsupported.empty());
  m->interp = std::make_unique<Interpreter>(*m->flat, *m->mech, *m->layout);
  return m;
}

dart::dynamics::SkeletonPtr loadDart(const fs::path& urdf, bool floating) {
  // DART warns of every massless link (and of the zero default inertia) on
  // std::cerr; the check is ours.
  std::ostringstream quiet;
  std::streambuf* const cerr = std::cerr.rdbuf(quiet.rdbuf());
  dart::utils::DartLoader::Options options;
  options.mDefaultRootJointType =
      floating ? dart::utils::DartLoader::RootJointType::FLOATING : dart::utils::DartLoader::RootJointType::FIXED;
  options.mDefaultInertia = dart::dynamics::Inertia(0.0, Eigen::Vector3d::Zero(), Eigen::Matrix3d::Zero());
  dart::utils::DartLoader loader(options);
  dart::dynamics::SkeletonPtr skel = loader.parseSkeleton(dart::common::Uri::createFromPath(urdf.string()));
  std::cerr.rdbuf(cerr);
  REQUIRE(skel);
  skel->setGravity(Eigen::Vector3d(0, 0, -9.81));
  skel->setTimeStep(1e-12);
  return skel;
}

void crossCheck(const std::string& file, bool floating) {
  const fs::path urdf = kSource / "examples/urdf" / file;
  CAPTURE(file);
  CAPTURE(floating);
  const std::unique_ptr<Imported> m = importRobot(urdf, floating);
  const dart::dynamics::SkeletonPtr skel = loadDart(urdf, floating);
  const InterpretedModel model(*m->interp);
  const ModelLayout& layout = *m->layout;
  REQUIRE(static_cast<int>(skel->getNumDofs()) == model.nu);

  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  for (int trial = 0; trial < 5; ++trial) {
    Eigen::VectorXd q(model.nq), u(model.nu);
    for (int i = 0; i < model.nq; ++i) q[i] = uni(rng);
    for (int i = 0; i < model.nu; ++i) u[i] = uni(rng);
    model.normalizeQuaternions(q);

    // u_dart = T u, and the state DART is given.
    Eigen::MatrixXd T = Eigen::MatrixXd::Zero(model.nu, model.nu);
    Eigen::VectorXd qd = Eigen::VectorXd::Zero(model.nu), correction = Eigen::VectorXd::Zero(model.nu);
    for (const auto& j : layout.joints) {
      const bool isFree = j.type() == capstan::mechanics::JointType::Free;
      const std::string urdfJoint = isFree ? "" : capstan::import::robotName(j.name);
      dart::dynamics::Joint* dj = isFree ? skel->getRootJoint() : skel->getJoint(urdfJoint);
      REQUIRE_MESSAGE(dj, j.name);
      const int d = static_cast<int>(dj->getIndexInSkeleton(0));
      if (!isFree) {
        REQUIRE(dj->getNumDofs() == 1);
        qd[d] = q[j.qIndex()];
        T(d, j.uIndex()) = 1;
        continue;
      }
      const Eigen::Quaterniond quat(q[j.qIndex()], q[j.qIndex() + 1], q[j.qIndex() + 2], q[j.qIndex() + 3]);
      Eigen::Isometry3d X = Eigen::Isometry3d::Identity();
      X.linear() = quat.toRotationMatrix();
      X.translation() = q.segment<3>(j.qIndex() + 4);
      qd.segment<6>(d) = dart::dynamics::FreeJoint::convertToPositions(X);
      const Eigen::Matrix3d Rt = X.linear().transpose();
      T.block<3, 3>(d, j.uIndex()) = Rt;
      T.block<3, 3>(d + 3, j.uIndex() + 3) = Rt;
      const Eigen::Vector3d wB = Rt * u.segment<3>(j.uIndex()), vB = Rt * u.segment<3>(j.uIndex() + 3);
      correction.segment<3>(d + 3) = -wB.cross(vB);
    }
    skel->setPositions(qd);
    skel->setVelocities(T * u);
    skel->setForces(Eigen::VectorXd::Zero(model.nu));

    InterpretedModel::MassMatrix M;
    model.massMatrix(q, M);
    const Eigen::MatrixXd Md = T.transpose() * skel->getMassMatrix() * T;
    CHECK((M - Md).cwiseAbs().maxCoeff() < 1e-9);

    skel->computeForwardDynamics();
    Eigen::VectorXd udot(model.nu);
    model.forwardDynamics(0.0, q, u, udot);
    const Eigen::VectorXd udotDart = skel->getAccelerations() - correction;
    CHECK((T * udot - udotDart).cwiseAbs().maxCoeff() < 1e-9);

    // The pose of every link that is a body of the model.
    InterpretedModel::BodyPoses poses;
    model.bodyPoses(q, poses);
    int compared = 0;
    for (std::size_t b = 0; b < layout.bodies.size(); ++b) {
      const dart::dynamics::BodyNode* node = skel->getBodyNode(capstan::import::robotName(layout.bodies[b].name));
      if (!node) continue;
      const Eigen::Isometry3d X = node->getWorldTransform();
      CHECK((poses[b].R_WB - X.linear()).cwiseAbs().maxCoeff() < 1e-9);
      CHECK((poses[b].p_WB - X.translation()).cwiseAbs().maxCoeff() < 1e-9);
      ++compared;
    }
    CHECK(compared > 0);
  }
}

}  // namespace

TEST_CASE("an arm with offsets, rotated inertials and damping agrees with DART") { crossCheck("arm.urdf", false); }

TEST_CASE("continuous and prismatic joints and a fixed-joint chain agree with DART") {
  crossCheck("slider.urdf", false);
}

TEST_CASE("a quadruped agrees with DART, with a fixed and with a floating base") {
  crossCheck("quadruped.urdf", false);
  crossCheck("quadruped.urdf", true);
}

TEST_CASE("the arm with a floating base agrees with DART") { crossCheck("arm.urdf", true); }

namespace {

// The SDFormat robot and its URDF twin, imported, at the same random
// states: the same mass matrix and forward dynamics (the state orders agree:
// depth-first, children in the file's order).
void sameAsUrdf(const std::string& sdf, const std::string& urdf, bool floating) {
  CAPTURE(sdf);
  CAPTURE(floating);
  const std::unique_ptr<Imported> a = importRobot(kSource / "tests/import/sdf" / sdf, floating);
  const std::unique_ptr<Imported> b = importRobot(kSource / "examples/urdf" / urdf, floating);
  const InterpretedModel ma(*a->interp), mb(*b->interp);
  REQUIRE(ma.nq == mb.nq);
  REQUIRE(ma.nu == mb.nu);
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  for (int trial = 0; trial < 5; ++trial) {
    Eigen::VectorXd q(ma.nq), u(ma.nu), ua(ma.nu), ub(mb.nu);
    for (int i = 0; i < ma.nq; ++i) q[i] = uni(rng);
    for (int i = 0; i < ma.nu; ++i) u[i] = uni(rng);
    ma.normalizeQuaternions(q);
    InterpretedModel::MassMatrix Ma, Mb;
    ma.massMatrix(q, Ma);
    mb.massMatrix(q, Mb);
    CHECK((Ma - Mb).cwiseAbs().maxCoeff() < 1e-12);
    ma.forwardDynamics(0.0, q, u, ua);
    mb.forwardDynamics(0.0, q, u, ub);
    CHECK((ua - ub).cwiseAbs().maxCoeff() < 1e-12);
  }
}

}  // namespace

TEST_CASE("the SDFormat arm (frames, a nested model, expressed_in) has the URDF arm's dynamics") {
  sameAsUrdf("arm.sdf", "arm.urdf", false);
  sameAsUrdf("arm.sdf", "arm.urdf", true);
}

TEST_CASE("the SDFormat quadruped (nested legs, a joint away from its link) has the URDF quadruped's dynamics") {
  sameAsUrdf("quadruped.sdf", "quadruped.urdf", false);
  sameAsUrdf("quadruped.sdf", "quadruped.urdf", true);
}
