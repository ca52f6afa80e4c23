// Forward dynamics, side by side on identical states: Capstan's generated
// code vs Simbody vs MuJoCo, for the models in models/ (docs/performance.md).
//
// For each model: three random states (fixed seed); at each, every engine's
// udot must agree with Capstan's to PEERS_TOLERANCE (1e-8, normwise relative)
// before anything is timed, and the timing runs at the last of them. Then
// rounds of one batch per engine, interleaved so that
// load changes hit all engines alike; per engine, the median over rounds of
// thread CPU time per call. Env: PEERS_ROUNDS (default 31), PEERS_BATCH_US
// (default 2000), PEERS_MODELS (comma-separated subset).
#include "peers.hpp"
#include "timing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace peers;
using bench::envNumber;
using bench::loadAverage;
using bench::threadMicroseconds;

volatile double sink = 0.0;

void randomState(const PeerModel& model, std::mt19937_64& rng, std::vector<double>& q, std::vector<double>& u) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  q.clear();
  u.clear();
  for (const PeerBody& b : model.bodies) {
    if (b.type == PeerJoint::Revolute) {
      q.push_back(uniform(rng));
      u.push_back(uniform(rng));
    } else {
      double quat[4], n = 0.0;
      for (double& c : quat) {
        c = uniform(rng);
        n += c * c;
      }
      for (double c : quat) q.push_back(c / std::sqrt(n));
      for (int k = 0; k < 3; ++k) q.push_back(uniform(rng));
      for (int k = 0; k < 6; ++k) u.push_back(uniform(rng));
    }
  }
}

double relativeDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / std::max(scale, 1e-300);
}

struct Timed {
  std::string name;
  Engine* engine;
  long calls = 1;
  std::vector<double> samples;  // microseconds per call, one per round
  double median() const { return bench::median(samples); }
};

}  // namespace

int main() {
  const int rounds = static_cast<int>(envNumber("PEERS_ROUNDS", 31));
  const double batchMicroseconds = envNumber("PEERS_BATCH_US", 2000);
  const double tolerance = envNumber("PEERS_TOLERANCE", 1e-8);
  const char* only = std::getenv("PEERS_MODELS");
  std::printf("peers_bench: %d rounds, batches of >= %.0f us thread CPU time; load average at start %.2f\n", rounds,
              batchMicroseconds, loadAverage());
  std::printf("| model | nq | nu | max rel. diff of udot vs Capstan (Simbody, MuJoCo) | Capstan us | Simbody us | "
              "MuJoCo mj_forward us | MuJoCo minimal us | Simbody/Capstan | MuJoCo fwd/Capstan | MuJoCo min/Capstan |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  bool allAgree = true;
  std::mt19937_64 rng(20240603);
  for (const PeerModel& model : peerModels()) {
    if (only && ("," + std::string(only) + ",").find("," + model.name + ",") == std::string::npos) continue;
    const auto factory = capstanRegistry().find(model.name);
    if (factory == capstanRegistry().end()) {  // left out by -DPEERS_SKIP_MODELS
      std::printf("| %s | %d | %d | not built (PEERS_SKIP_MODELS) | | | | | | | |\n", model.name.c_str(), model.nq(),
                  model.nu());
      continue;
    }
    std::unique_ptr<Engine> capstan = factory->second(model);
    std::unique_ptr<Engine> simbody = makeSimbody(model);
    std::unique_ptr<Engine> mujoco = makeMujoco(model, false);
    std::unique_ptr<Engine> mujocoMin = makeMujoco(model, true);
    std::vector<Timed> timed(4);
    timed[0].name = "capstan", timed[0].engine = capstan.get();
    timed[1].name = "simbody", timed[1].engine = simbody.get();
    timed[2].name = "mujoco", timed[2].engine = mujoco.get();
    timed[3].name = "mujoco_min", timed[3].engine = mujocoMin.get();

    // Agreement on three random states, then time at the last one.
    double worstSimbody = 0.0, worstMujoco = 0.0;
    std::vector<double> q, u;
    for (int s = 0; s < 3; ++s) {
      randomState(model, rng, q, u);
      for (Timed& t : timed) t.engine->setState(q, u);
      const std::vector<double> ref = capstan->udot();
      worstSimbody = std::max(worstSimbody, relativeDifference(simbody->udot(), ref));
      worstMujoco = std::max({worstMujoco, relativeDifference(mujoco->udot(), ref), relativeDifference(mujocoMin->udot(), ref)});
    }
    const bool agree = worstSimbody <= tolerance && worstMujoco <= tolerance;
    allAgree = allAgree && agree;
    if (!agree) {
      std::printf("| %s | %d | %d | %.1e, %.1e DISAGREE (> %.0e): not timed | | | | | | | |\n", model.name.c_str(),
                  model.nq(), model.nu(), worstSimbody, worstMujoco, tolerance);
      continue;
    }

    for (Timed& t : timed) {  // calibrate each engine's batch length
      for (;;) {
        const double start = threadMicroseconds();
        sink = sink + t.engine->run(t.calls);
        if (threadMicroseconds() - start >= batchMicroseconds) break;
        t.calls *= 2;
      }
    }
    for (int r = 0; r < rounds; ++r) {
      for (Timed& t : timed) {
        const double start = threadMicroseconds();
        sink = sink + t.engine->run(t.calls);
        t.samples.push_back((threadMicroseconds() - start) / static_cast<double>(t.calls));
      }
    }
    const double c = timed[0].median(), s = timed[1].median(), m = timed[2].median(), mm = timed[3].median();
    std::printf("| %s | %d | %d | %.1e, %.1e | %.3f | %.3f | %.3f | %.3f | %.1f | %.1f | %.1f |\n", model.name.c_str(),
                model.nq(), model.nu(), worstSimbody, worstMujoco, c, s, m, mm, s / c, m / c, mm / c);
    std::fflush(stdout);
  }
  std::printf("load average at end %.2f\n", loadAverage());
  return allAgree ? 0 : 1;
}
