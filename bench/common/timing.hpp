// Timing helpers of the benchmark programs in bench/, one copy for all of
// them (each target has bench/common on its include path). Not for
// generated code: the driver of `capstan simulate`
// (compiler/templates/capstan_driver.cpp) stays self-contained.
//
// Every time here is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a
// shared, loaded machine it leaves out the time the thread waits for a core
// while other processes run.
#pragma once

#include <stdlib.h>  // getloadavg
#include <time.h>    // clock_gettime, CLOCK_THREAD_CPUTIME_ID

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// This thread's CPU time since an arbitrary origin, in microseconds (us).
inline double threadMicroseconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

// The same in seconds (s).
inline double threadSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Makes the compiler assume that `value` is read and written here, so that
// a timed computation that fills it, or reads it, is neither dropped nor
// hoisted out of the timing loop (Google Benchmark's DoNotOptimize and
// ClobberMemory in one); emits no instruction.
template <class T>
inline void clobber(T& value) {
  asm volatile("" : : "r"(&value) : "memory");
}

// The median of `samples` (non-empty), in their unit: the middle one in
// sorted order, the upper of the two middle ones for an even count.
inline double median(std::vector<double> samples) {
  const auto middle = samples.begin() + static_cast<long>(samples.size() / 2);
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

// The median over `batches` batches of the thread CPU time per call of f(),
// in microseconds per call (us). Every batch makes the same number of calls:
// the first power of two whose batch took more than minBatchMicroseconds
// (us) of thread CPU time.
template <class F>
double medianMicrosecondsPerCall(F&& f, int batches, double minBatchMicroseconds) {
  long calls = 1;
  for (;;) {
    const double start = threadMicroseconds();
    for (long k = 0; k < calls; ++k) f();
    if (threadMicroseconds() - start > minBatchMicroseconds) break;
    calls *= 2;
  }
  std::vector<double> samples;
  for (int b = 0; b < batches; ++b) {
    const double start = threadMicroseconds();
    for (long k = 0; k < calls; ++k) f();
    samples.push_back((threadMicroseconds() - start) / static_cast<double>(calls));
  }
  return median(samples);
}

// The number in the environment variable `name` (std::atof: 0 for text that
// is not a number), or `fallback` where it is not set: a run's settings
// (rounds, batch lengths, tolerances).
inline double envNumber(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v ? std::atof(v) : fallback;
}

// The system's load average over the last minute (runnable processes), or
// -1 where it cannot be read: printed with the timings, which a loaded
// machine makes noisier.
inline double loadAverage() {
  double load[1] = {0.0};
  return getloadavg(load, 1) == 1 ? load[0] : -1.0;
}

// One engine's calls, timed in rounds interleaved with the others'
// (timeInterleaved): `calls` per batch, one sample (us per call) per round.
struct Timed {
  Timed(std::string n, std::function<void()> c) : name(std::move(n)), call(std::move(c)) {}
  std::string name;
  std::function<void()> call;
  long calls = 1;
  std::vector<double> samples;
  double median() const { return bench::median(samples); }
};

// Sizes each engine's batch to at least `batchMicroseconds`, then times
// `rounds` rounds, each engine once per round in turn.
inline void timeInterleaved(std::vector<Timed>& timed, int rounds, double batchMicroseconds) {
  for (Timed& t : timed) {
    for (;;) {
      const double start = threadMicroseconds();
      for (long k = 0; k < t.calls; ++k) t.call();
      if (threadMicroseconds() - start >= batchMicroseconds) break;
      t.calls *= 2;
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (Timed& t : timed) {
      const double start = threadMicroseconds();
      for (long k = 0; k < t.calls; ++k) t.call();
      t.samples.push_back((threadMicroseconds() - start) / static_cast<double>(t.calls));
    }
  }
}

}  // namespace bench
