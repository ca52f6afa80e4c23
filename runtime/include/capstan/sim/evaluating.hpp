// The state whose accelerations are being computed, while they are: what a
// crash handler reports (guard.hpp). System::udot (simulate.hpp) marks each
// evaluation with an EvaluatingScope; outside one, evaluating() is null.
// Per thread, so that simulations on several threads each keep their own.
#pragma once

namespace capstan::sim {

struct Evaluating {
  double t = 0.0;             // s
  const double* q = nullptr;  // nq coordinates
  const double* u = nullptr;  // nu speeds
  int nq = 0, nu = 0;
};

inline Evaluating*& evaluating() noexcept {
  thread_local Evaluating* current = nullptr;
  return current;
}

// Marks `state` as being evaluated for the scope's lifetime.
class EvaluatingScope {
 public:
  explicit EvaluatingScope(Evaluating& state) noexcept : previous_(evaluating()) { evaluating() = &state; }
  ~EvaluatingScope() { evaluating() = previous_; }
  EvaluatingScope(const EvaluatingScope&) = delete;
  EvaluatingScope& operator=(const EvaluatingScope&) = delete;

 private:
  Evaluating* previous_;
};

}  // namespace capstan::sim
