// The generated bushing of examples/bushing.cap (bushingStates: the engine's
// pose and velocity from q and u, then the bushing) against the same
// computation written by hand with Eigen: the free joint's quaternion to a
// rotation, the mounting frame's motion, and the runtime's capstan::bushing
// over double. Both give Drake's F_A_A and F_C_C; the program checks that
// they agree, then prints the median thread CPU time per call of each and
// the ratio (target: generated <= 0.5x hand-written, issue 10).
#include <capstan/force_elements.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "BushingMount.hpp"
#include "timing.hpp"

namespace {

using bench::clobber;
using capstan_models::BushingMount;

// Each timing: the median over kBatches batches of > kBatchMicroseconds of
// thread CPU time, per call.
constexpr int kBatches = 31;
constexpr double kBatchMicroseconds = 2000.0;  // us

// By hand: A = `support.frame_b`, fixed at (0, 1, 0) in World; C =
// `top.frame_b`, 0.1 m up the engine's y axis; the engine's pose and
// velocity from the Free joint `float` (q = quaternion, p in World; u = w, v
// of the engine origin in World).
capstan::BushingForces<double> handWritten(const BushingMount& model, const BushingMount::Q& q,
                                            const BushingMount::U& u) {
  capstan::FrameMotion<double> A, C;
  A.p_WF = Eigen::Vector3d(0, 1, 0);
  const capstan::Mat3<double> R_WB = capstan::rotationFromQuaternion<double>(q.head<4>());
  const Eigen::Vector3d p_BC = R_WB * Eigen::Vector3d(0, 0.1, 0);
  C.R_WF = R_WB;
  C.p_WF = q.segment<3>(4) + p_BC;
  C.w_WF = u.head<3>();
  C.v_WF = u.tail<3>() + capstan::cross<double>(C.w_WF, p_BC);
  // forceStiffness = {k, k, k} and forceDamping = {d, d, d} with k = m wn^2,
  // d = 2 zeta sqrt(m k) are compiled in (folded); the check in main()
  // catches a difference.
  const double kx = 2.0 * 20.0 * 20.0, dx = 2 * 0.1 * std::sqrt(2.0 * kx);
  capstan::BushingConstants<double> k;
  for (int i = 0; i < 3; ++i) {
    k.k012[i] = model.params.mount_torqueStiffness[static_cast<std::size_t>(i)];
    k.d012[i] = model.params.mount_torqueDamping[static_cast<std::size_t>(i)];
    k.kxyz[i] = kx;
    k.dxyz[i] = dx;
  }
  return capstan::bushing(A, C, k);
}

}  // namespace

int main() {
  BushingMount model;
  BushingMount::Q q;
  BushingMount::U u;
  model.initialState(q, u);
  q << 0.9, 0.1, 0.3, 0.05, 0.1, 0.8, -0.05;
  BushingMount::normalizeQuaternions(q);
  u << 0.5, -1.0, 0.3, 0.2, 0.1, -0.4;

  BushingMount::BushingStates states;
  model.bushingStates(q, u, states);
  const capstan::BushingForces<double> byHand = handWritten(model, q, u);
  double diff = 0;
  for (int i = 0; i < 6; ++i) {
    diff = std::max(diff, std::abs(states[0].F_A_A[i] - byHand.F_A_A[i]) / (1 + std::abs(byHand.F_A_A[i])));
    diff = std::max(diff, std::abs(states[0].F_C_C[i] - byHand.F_C_C[i]) / (1 + std::abs(byHand.F_C_C[i])));
  }
  if (diff > 1e-12) {
    std::printf("elements_bench: generated and hand-written bushings differ by %.3g\n", diff);
    return 1;
  }
  const double generated = bench::medianMicrosecondsPerCall(
      [&] {
        clobber(q);
        clobber(u);
        model.bushingStates(q, u, states);
        clobber(states);
      },
      kBatches, kBatchMicroseconds);
  capstan::BushingForces<double> out;
  const double hand = bench::medianMicrosecondsPerCall(
      [&] {
        clobber(q);
        clobber(u);
        out = handWritten(model, q, u);
        clobber(out);
      },
      kBatches, kBatchMicroseconds);
  std::printf("| bushing (examples/bushing.cap) | generated bushingStates us | hand-written Eigen us | generated/hand |\n");
  std::printf("|---|---|---|---|\n");
  std::printf("| mount (agree to %.1e) | %.4f | %.4f | %.2f |\n", diff, generated, hand, generated / hand);
  return 0;
}
