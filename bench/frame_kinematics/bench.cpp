// Frame Jacobians of a generated class, unrolled against compact, and from
// kinematics computed once (docs/performance.md, "compact frame Jacobians
// and mass matrix"). Built by run.sh with -DHEADER, -DCLS, -DMODEL, -DMODE.
#include HEADER
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

using Model = capstan_models::CLS;

// Best of 7 rounds of 20,000 calls, us per call.
template <class F>
double timeit(F&& f) {
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const int n = 20000;
    for (int i = 0; i < n; ++i) f(i);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
  }
  return best;
}

int main() {
  Model m;
  Model::Q q;
  Model::U u;
  m.initialState(q, u);
  for (int i = 0; i < Model::nq; ++i) q[i] += 0.4 * std::sin(1.3 * i + 0.2);
  Model::normalizeQuaternions(q);
  for (int i = 0; i < Model::nu; ++i) u[i] = std::cos(0.7 * i + 0.1);
  const int end = Model::nb - 1;  // the last body
  Model::FrameJacobian J;
  Model::SpatialVector a;
  Model::FrameKinematics k;
  volatile double sink = 0;
  // q moves by round-off between calls, so that nothing is hoisted out of the loop.
  auto touch = [&](int i) { q[0] += 1e-9 * (i & 1); };
  const double jEnd = timeit([&](int i) { touch(i); m.frameJacobian(end, q, J); sink = sink + J(0, 0); });
  const double aEnd = timeit([&](int i) { touch(i); m.frameJacobianDotU(end, q, u, a); sink = sink + a[0]; });
  const double pairEnd = timeit([&](int i) {
    touch(i);
    m.frameKinematics(q, k);
    m.frameJacobian(end, k, J);
    sink = sink + J(0, 0);
  });
  const double jAll = timeit([&](int i) {
    touch(i);
    for (int b = 0; b < Model::nb; ++b) {
      m.frameJacobian(b, q, J);
      sink = sink + J(0, 0);
    }
  });
  const double pairAll = timeit([&](int i) {
    touch(i);
    m.frameKinematics(q, k);
    for (int b = 0; b < Model::nb; ++b) {
      m.frameJacobian(b, k, J);
      sink = sink + J(0, 0);
    }
  });
  std::printf("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n", MODEL, MODE, jEnd, aEnd, pairEnd, jAll, pairAll);
}
