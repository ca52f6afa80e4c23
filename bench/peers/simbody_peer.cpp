// The Simbody engine: the same mechanism as MobilizedBody::Pin / ::Free.
//
// Timed at Simbody's fastest documented usage: the state is written once
// (setState), and each call invalidates the cache from Stage::Position on
// (state.invalidateAllCacheAtOrAbove) and realizes Stage::Acceleration, which
// recomputes kinematics, velocities, the gravity forces and the forward
// dynamics (Simbody's O(n) articulated-body solve); udot is then
// state.getUDot(). Gravity is Force::Gravity, which Simbody computes in one
// pass over the bodies and caches per configuration; the older
// Force::UniformGravity, which this harness used before, goes through the
// generic force path and made Simbody 3-4x slower here (docs/performance.md).
#include "../../tests/crosscheck/simbody_cxx20.hpp"  // <Simbody.h>; first: it clears NDEBUG

#include "peers.hpp"

#include <cmath>

namespace peers {
namespace {

// A rotation whose z column is `a` (unit): Simbody's Pin turns about z of its
// F and M frames, so both are turned by it to put the axis along `a`.
SimTK::Rotation zAlong(const double a[3]) {
  return SimTK::Rotation(SimTK::UnitVec3(a[0], a[1], a[2]), SimTK::ZAxis);
}

class SimbodyEngine final : public Engine {
 public:
  explicit SimbodyEngine(const PeerModel& peer) {
    SimTK::Force::Gravity(forces_, matter_, SimTK::Vec3(peer.gravity[0], peer.gravity[1], peer.gravity[2]));
    for (const PeerBody& b : peer.bodies) {
      const SimTK::Vec3 com(b.com[0], b.com[1], b.com[2]);
      const SimTK::Inertia I_cm(SimTK::Vec3(b.inertia[0], b.inertia[1], b.inertia[2]),
                                SimTK::Vec3(b.inertia[3], b.inertia[4], b.inertia[5]));
      const SimTK::Body::Rigid info(SimTK::MassProperties(b.mass, com, I_cm.shiftFromMassCenter(-com, b.mass)));
      SimTK::MobilizedBody& parent = b.parent < 0 ? matter_.updGround() : mobods_[static_cast<std::size_t>(b.parent)];
      const SimTK::Vec3 r(b.r[0], b.r[1], b.r[2]);
      if (b.type == PeerJoint::Revolute) {
        const SimTK::Rotation R_FFs = zAlong(b.axis);
        mobods_.push_back(SimTK::MobilizedBody::Pin(parent, SimTK::Transform(R_FFs, r), info, SimTK::Transform(R_FFs)));
      } else {
        mobods_.push_back(SimTK::MobilizedBody::Free(parent, SimTK::Transform(r), info, SimTK::Transform()));
      }
    }
    state_ = system_.realizeTopology();
    system_.realizeModel(state_);
    for (std::size_t b = 0; b < mobods_.size(); ++b) {
      const int q0 = mobods_[b].getFirstQIndex(state_), u0 = mobods_[b].getFirstUIndex(state_);
      const int nq = peer.bodies[b].type == PeerJoint::Free ? 7 : 1, nu = peer.bodies[b].type == PeerJoint::Free ? 6 : 1;
      for (int k = 0; k < nq; ++k) qIndex_.push_back(q0 + k);
      for (int k = 0; k < nu; ++k) uIndex_.push_back(u0 + k);
    }
  }

  void setState(const std::vector<double>& q, const std::vector<double>& u) override {
    SimTK::Vector qs(state_.getNQ()), us(state_.getNU());
    for (std::size_t i = 0; i < q.size(); ++i) qs[qIndex_[i]] = q[i];
    for (std::size_t i = 0; i < u.size(); ++i) us[uIndex_[i]] = u[i];
    state_.updQ() = qs;
    state_.updU() = us;
  }

  std::vector<double> udot() override {
    system_.realize(state_, SimTK::Stage::Acceleration);
    const SimTK::Vector& udot = state_.getUDot();
    std::vector<double> out(uIndex_.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = udot[uIndex_[i]];
    return out;
  }

  double run(long calls) override {
    double sum = 0.0;
    for (long k = 0; k < calls; ++k) {
      state_.invalidateAllCacheAtOrAbove(SimTK::Stage::Position);
      system_.realize(state_, SimTK::Stage::Acceleration);
      sum += state_.getUDot()[state_.getNU() - 1];
    }
    return sum;
  }

 private:
  SimTK::MultibodySystem system_;
  SimTK::SimbodyMatterSubsystem matter_{system_};
  SimTK::GeneralForceSubsystem forces_{system_};
  std::vector<SimTK::MobilizedBody> mobods_;
  SimTK::State state_;
  std::vector<int> qIndex_, uIndex_;
};

}  // namespace

std::unique_ptr<Engine> makeSimbody(const PeerModel& model) { return std::make_unique<SimbodyEngine>(model); }

}  // namespace peers
