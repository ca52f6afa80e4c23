// The timing half of compare_generated.py: the generated forwardDynamics of
// several variants (capstan executables, compilers' outputs) of the same
// models, side by side in one program. compare_generated.py writes
// `entries.inc` (one Entry per variant and model, each compiled in its own
// translation unit) and builds this file beside it.
//
// Per model one random state (fixed seed; quaternions normalized), the same
// for every variant; every variant's udot must agree with the first's to
// kAgreement (relative to max |udot|), or nothing is timed. Then rounds:
// in each, every entry runs one batch of calls (at least kMinBatchSeconds
// of thread CPU time, sized once before the first round), entries in
// forward order in even rounds and backward in odd ones, so a load change
// hits all alike. Printed: the median over the rounds of microseconds per
// call, and the spread (min, max).
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

struct Entry {
  const char* variant;
  const char* model;
  void (*sizes)(int* nq, int* nu);
  void (*normalize)(double* q);                                   // q (nq)
  void (*forwardDynamics)(const double* q, const double* u, double* udot);  // (nq), (nu) -> (nu)
};
#include "entries.inc"

namespace {

constexpr double kAgreement = 1e-12;
constexpr double kMinBatchSeconds = 2e-3;

double threadSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct State {
  std::vector<double> q, u, udot;  // udot: the first variant's
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  constexpr int n = sizeof(kEntries) / sizeof(kEntries[0]);
  std::map<std::string, State> states;  // by model
  std::mt19937 rng(24);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<long> batch(n, 1);
  std::vector<double> udot(1024);
  bool agree = true;
  for (int e = 0; e < n; ++e) {
    int nq = 0, nu = 0;
    kEntries[e].sizes(&nq, &nu);
    State& s = states[kEntries[e].model];
    if (s.q.empty()) {
      s.q.resize(static_cast<std::size_t>(nq));
      s.u.resize(static_cast<std::size_t>(nu));
      for (double& x : s.q) x = uniform(rng);
      for (double& x : s.u) x = uniform(rng);
      kEntries[e].normalize(s.q.data());
    }
    kEntries[e].forwardDynamics(s.q.data(), s.u.data(), udot.data());
    if (s.udot.empty()) s.udot.assign(udot.begin(), udot.begin() + nu);
    double scale = 0, diff = 0;
    for (int i = 0; i < nu; ++i) {
      scale = std::max(scale, std::abs(s.udot[static_cast<std::size_t>(i)]));
      diff = std::max(diff, std::abs(s.udot[static_cast<std::size_t>(i)] - udot[static_cast<std::size_t>(i)]));
    }
    std::printf("# %-10s %-14s udot vs the first variant: %.1e relative\n", kEntries[e].model, kEntries[e].variant,
                diff / scale);
    agree = agree && diff <= kAgreement * scale;
    for (;;) {
      const double start = threadSeconds();
      for (long i = 0; i < batch[e]; ++i) kEntries[e].forwardDynamics(s.q.data(), s.u.data(), udot.data());
      if (threadSeconds() - start >= kMinBatchSeconds) break;
      batch[e] *= 2;
    }
  }
  if (!agree) {
    std::fprintf(stderr, "compare_generated: the variants' udot differ by more than %.0e; nothing timed\n", kAgreement);
    return 1;
  }
  std::vector<std::vector<double>> microseconds(n);
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < n; ++k) {
      const int e = r % 2 == 0 ? k : n - 1 - k;
      State& s = states[kEntries[e].model];
      const double start = threadSeconds();
      for (long i = 0; i < batch[e]; ++i) kEntries[e].forwardDynamics(s.q.data(), s.u.data(), udot.data());
      microseconds[e].push_back(1e6 * (threadSeconds() - start) / static_cast<double>(batch[e]));
    }
  }
  std::printf("%-10s %-14s %10s %10s %10s\n", "model", "variant", "median_us", "min_us", "max_us");
  for (int e = 0; e < n; ++e) {
    std::vector<double> t = microseconds[e];
    std::sort(t.begin(), t.end());
    std::printf("%-10s %-14s %10.4f %10.4f %10.4f\n", kEntries[e].model, kEntries[e].variant, t[t.size() / 2],
                t.front(), t.back());
  }
  return 0;
}
