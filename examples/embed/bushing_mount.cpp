// A payload on a compliant wrist (models/mount.cap: a Ball joint and a
// roll-pitch-yaw Bushing), stepped by the program's own loop rather than
// the runtime's: semi-implicit Euler over forwardDynamics and qdot.
//
// A bushing's roll-pitch-yaw torques divide by cos(pitch): near pitch = +-90
// degrees (gimbal lock) they grow without bound, and at it they are not
// numbers. capstan::sim (and `capstan simulate`) stops there by itself; a
// loop of one's own must ask the model, after every step, with
// gimbalLock(q, u, pitch): the index of the first bushing within 0.458
// degrees of the lock (Drake's tolerance), or -1. Here the mount first
// rings down from its start values; then a knock of 20 rad/s about the
// pitch axis drives it through the lock, which the check must catch before
// any non-finite value appears. Exits 1 if it does not.
#include <Mount.hpp>

#include <capstan/force_elements.hpp>  // capstan::gimbalLockMessage

#include <cstdio>
#include <string>

namespace {

using Model = capstan_models::Mount;

// Steps (q, u) from t to tEnd by h; the time the check stopped it, or -1.
double run(const Model& model, double t, double tEnd, double h, Model::Q& q, Model::U& u) {
  Model::U udot;
  Model::Q qdot;
  for (; t < tEnd; t += h) {
    model.forwardDynamics(t, q, u, udot);
    u += h * udot;
    model.qdot(q, u, qdot);
    q += h * qdot;
    model.normalizeQuaternions(q);
    double pitch = 0.0;  // rad
    if (const int k = model.gimbalLock(q, u, pitch); k >= 0) {
      const std::string why = capstan::gimbalLockMessage(Model::bushingNames[std::size_t(k)], pitch, t + h);
      std::printf("stopped: %s\n", why.c_str());
      return t + h;
    }
    if (!q.allFinite() || !u.allFinite()) {
      std::printf("non-finite state at t = %g before the check caught the lock\n", t + h);
      return -2;
    }
  }
  return -1;
}

}  // namespace

int main() {
  Model model;
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  const double h = 1e-4;  // s
  if (run(model, 0.0, 1.0, h, q, u) != -1) return 1;  // small swings: no lock
  std::printf("t = 1 s: rings down, |w| = %.4f rad/s, no gimbal lock\n", u.norm());
  u << 0.0, 20.0, 0.0;  // a knock about the pitch axis (w_FM in F, rad/s)
  const double stopped = run(model, 1.0, 2.0, h, q, u);
  return stopped > 1.0 ? 0 : 1;
}
