// Two generated headers of one model in one program (bench/peers/paired.sh):
// the same class from two capstan builds, or from one capstan with two sets
// of compile options, the second renamed. Times forwardDynamics,
// inverseDynamicsDerivatives and forwardDynamicsDerivatives of both at the
// same random state, in rounds interleaved (bench::timeInterleaved, thread
// CPU time), and prints each function's median and best per call, the ratio
// A / B of the medians (above 1: B is faster) and the largest difference of
// B's results from A's, relative to A's largest entry; then A's
// forwardDynamicsDerivatives in parts (its calls, the products, the rest).
//
// A change to the generated code is measured here rather than across two
// programs: both versions share the machine's load of the same minutes, the
// compiler, the flags and the random state, so what differs is the code.
// (Placement still differs: two functions never sit at the same addresses,
// so differences of a few per cent are within what placement alone moves.)
//
// Built by paired.sh with -DPAIRED_A_HEADER="..." -DPAIRED_B_HEADER="..."
// -DPAIRED_CLASS_A=Name -DPAIRED_CLASS_B=NameB -DPAIRED_MODEL="name".
#include PAIRED_A_HEADER
#include PAIRED_B_HEADER

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "timing.hpp"

namespace {

using A = capstan_models::PAIRED_CLASS_A;
using B = capstan_models::PAIRED_CLASS_B;
static_assert(A::nq == B::nq && A::nu == B::nu, "the two headers are of one model");

// The largest |b - a| over the largest |a| (the absolute difference where a
// is zero everywhere).
template <class X, class Y>
double relativeDifference(const X& a, const Y& b) {
  const double scale = a.cwiseAbs().maxCoeff();
  const double diff = (a - b).cwiseAbs().maxCoeff();
  return scale > 0.0 ? diff / scale : diff;
}

double best(const bench::Timed& t) { return *std::min_element(t.samples.begin(), t.samples.end()); }

void report(const char* function, const bench::Timed& a, const bench::Timed& b, double difference) {
  std::printf("| %s | %.3f (%.3f) | %.3f (%.3f) | %.3fx | %.1e |\n", function, a.median(), best(a), b.median(),
              best(b), a.median() / b.median(), difference);
}

}  // namespace

int main() {
  const int rounds = static_cast<int>(bench::envNumber("PAIRED_ROUNDS", 31));
  const double batch = bench::envNumber("PAIRED_BATCH_US", 2000.0);
  A a;
  B b;
  // A random state about the model's initial one: coordinates moved by up
  // to 0.3 (quaternions normalized again), speeds and accelerations in
  // [-1, 1].
  A::Q q;
  A::U u, udot;
  a.initialState(q, u);
  std::mt19937_64 rng(20261201);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (double& x : q) x += 0.3 * uniform(rng);
  A::normalizeQuaternions(q);
  for (double& x : u) x = uniform(rng);
  for (double& x : udot) x = uniform(rng);
  const B::Q qb = q;
  const B::U ub = u, udotb = udot;

  A::U udotA;
  B::U udotB;
  A::MassMatrix a1, a2, a3;
  B::MassMatrix b1, b2, b3;
  std::printf("%s (nu = %d), %d rounds, batches of >= %.0f us thread CPU time, load average %.2f\n\n", PAIRED_MODEL,
              A::nu, rounds, batch, bench::loadAverage());
  std::printf("| function | A us, median (best) | B us, median (best) | A / B | B's largest difference |\n");
  std::printf("|---|---|---|---|---|\n");

  std::vector<bench::Timed> fd{{"A", [&] { a.forwardDynamics(0.0, q, u, udotA); bench::clobber(udotA); }},
                               {"B", [&] { b.forwardDynamics(0.0, qb, ub, udotB); bench::clobber(udotB); }}};
  bench::timeInterleaved(fd, rounds, batch);
  a.forwardDynamics(0.0, q, u, udotA);
  b.forwardDynamics(0.0, qb, ub, udotB);
  report("forwardDynamics", fd[0], fd[1], relativeDifference(udotA, udotB));

  std::vector<bench::Timed> idd{
      {"A", [&] { a.inverseDynamicsDerivatives(0.0, q, u, udot, a1, a2, a3); bench::clobber(a1); }},
      {"B", [&] { b.inverseDynamicsDerivatives(0.0, qb, ub, udotb, b1, b2, b3); bench::clobber(b1); }}};
  bench::timeInterleaved(idd, rounds, batch);
  a.inverseDynamicsDerivatives(0.0, q, u, udot, a1, a2, a3);
  b.inverseDynamicsDerivatives(0.0, qb, ub, udotb, b1, b2, b3);
  report("inverseDynamicsDerivatives", idd[0], idd[1],
         std::max({relativeDifference(a1, b1), relativeDifference(a2, b2), relativeDifference(a3, b3)}));

  std::vector<bench::Timed> fdd{
      {"A", [&] { a.forwardDynamicsDerivatives(0.0, q, u, a1, a2, a3); bench::clobber(a1); }},
      {"B", [&] { b.forwardDynamicsDerivatives(0.0, qb, ub, b1, b2, b3); bench::clobber(b1); }}};
  bench::timeInterleaved(fdd, rounds, batch);
  a.forwardDynamicsDerivatives(0.0, q, u, a1, a2, a3);
  b.forwardDynamicsDerivatives(0.0, qb, ub, b1, b2, b3);
  report("forwardDynamicsDerivatives", fdd[0], fdd[1],
         std::max({relativeDifference(a1, b1), relativeDifference(a2, b2), relativeDifference(a3, b3)}));

  // A's forwardDynamicsDerivatives in parts, where it is composed:
  // forwardDynamics, inverseDynamicsDerivatives at its udot, the two
  // products -M^-1 d tau as Eigen's (the function's own from 32 speeds;
  // below, its products a column at a time are faster, and the rest is
  // understated by the difference), and the rest by difference (M's factor
  // and M^-1, and the copies).
  const A::MassMatrix Minv = a3;
  A::MassMatrix r1, r2, r3, p1, p2;
  a.forwardDynamics(0.0, q, u, udotA);
  a.inverseDynamicsDerivatives(0.0, q, u, udotA, r1, r2, r3);
  std::vector<bench::Timed> products{{"A", [&] {
    p1.noalias() = -Minv * r1;
    p2.noalias() = -Minv * r2;
    bench::clobber(p1);
    bench::clobber(p2);
  }}};
  bench::timeInterleaved(products, rounds, batch);
  const double rest = fdd[0].median() - fd[0].median() - idd[0].median() - products[0].median();
  std::printf("\nA's forwardDynamicsDerivatives, %.3f us (medians): forwardDynamics %.3f + inverseDynamicsDerivatives "
              "%.3f + Eigen's two products %.3f + the rest (M's factor and M^-1 where composed) %.3f\n",
              fdd[0].median(), fd[0].median(), idd[0].median(), products[0].median(), rest);
  return 0;
}
