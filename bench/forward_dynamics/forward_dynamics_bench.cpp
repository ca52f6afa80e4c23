// Forward dynamics methods compared (docs/runtime.md, "Choosing the forward
// dynamics method"): median time per call in double for the interpreter's
// dynamic-size paths, the factor-and-solve alone at fixed size (what
// generated code does after the traced CRBA), and operation counts of the
// traced algorithms before any symbolic simplification.
#include <capstan/dynamics.hpp>

#include <Eigen/Cholesky>

#include "multibody_fixtures.hpp"
#include "timing.hpp"
#include "traced_scalar.hpp"

#include <cstdio>
#include <string>

namespace {

using namespace capstan;
using capstan::testing::OperationCounts;
using capstan::testing::Rng;
using capstan::testing::Traced;

volatile double sink = 0.0;

// Each timing: the median over kBatches batches of > kBatchMicroseconds of
// thread CPU time, per call (us).
template <class F>
double medianMicroseconds(F&& f) {
  constexpr int kBatches = 21;
  constexpr double kBatchMicroseconds = 5000.0;
  return bench::medianMicrosecondsPerCall(f, kBatches, kBatchMicroseconds);
}

OperationCounts countOperations(auto&& f) {
  capstan::testing::operationCounts() = OperationCounts{};
  f();
  return capstan::testing::operationCounts();
}

void compare(const std::string& name, const Mechanism<double>& model, Rng& rng) {
  Data<double> data(model);
  const VectorX<double> q = capstan::testing::randomConfiguration(rng, model);
  const VectorX<double> u = capstan::testing::randomVectorX(rng, model.nu, 1.0);
  const VectorX<double> tau = capstan::testing::randomVectorX(rng, model.nu, 1.0);
  Eigen::LLT<MatrixX<double>> llt(model.nu);
  const double tLtdl = medianMicroseconds([&] { sink = sink + forwardDynamics(model, data, q, u, tau)[0]; });
  const double tLlt = medianMicroseconds([&] { sink = sink + forwardDynamicsLlt(model, data, q, u, tau, llt)[0]; });
  const double tAba = medianMicroseconds([&] { sink = sink + aba(model, data, q, u, tau)[0]; });
  const double tCrba = medianMicroseconds([&] { sink = sink + crba(model, data, q)(0, 0); });
  const double tBias = medianMicroseconds([&] { sink = sink + nonlinearEffects(model, data, q, u)[0]; });

  const Mechanism<Traced> traced = model.cast<Traced>();
  Data<Traced> tdata(traced);
  const VectorX<Traced> tq = q.cast<Traced>(), tu = u.cast<Traced>(), ttau = tau.cast<Traced>();
  const auto opsLtdl = countOperations([&] { forwardDynamics(traced, tdata, tq, tu, ttau); });
  const auto opsAba = countOperations([&] { aba(traced, tdata, tq, tu, ttau); });
  std::printf("| %-26s | %3d | %7.2f | %7.2f | %7.2f | %7.2f | %7.2f | %7ld | %7ld |\n", name.c_str(), model.nu,
              tLtdl, tLlt, tAba, tCrba, tBias, opsLtdl.total(), opsAba.total());
}

// Factor and solve alone at compile-time size N: Eigen's LLT vs the
// hand-written L^T D L (dense parents), as generated code would call them.
template <int N>
void fixedSizeSolve(Rng& rng) {
  using Mat = Eigen::Matrix<double, N, N>;
  using Vec = Eigen::Matrix<double, N, 1>;
  const Mat B = Mat::NullaryExpr([&](Eigen::Index, Eigen::Index) { return capstan::testing::uniform(rng, -1, 1); });
  const Mat A = B * B.transpose() + Mat::Identity();
  const Vec b = Vec::NullaryExpr([&](Eigen::Index) { return capstan::testing::uniform(rng, -1, 1); });
  std::array<int, N> chain{};
  for (int k = 0; k < N; ++k) chain[static_cast<std::size_t>(k)] = k - 1;
  const double tLlt = medianMicroseconds([&] {
    Eigen::LLT<Mat> llt(A);
    sink = sink + llt.solve(b)[0];
  });
  const double tLtdl = medianMicroseconds([&] {
    Mat LD = A;
    Vec x = b;
    ltdlFactor(LD, chain);
    ltdlSolve(LD, chain, x);
    sink = sink + x[0];
  });
  std::printf("| %2d | %7.3f | %7.3f |\n", N, tLlt, tLtdl);
}

Mechanism<double> humanoidLike(Rng& rng) {
  // A free-floating torso with four 3-link revolute limbs and a 2-dof head.
  Mechanism<double> model;
  const int torso = model.addBody(capstan::testing::randomBody(rng, "torso"),
                                  capstan::testing::randomJoint(rng, JointType::Free, -1, "floating"));
  for (int limb = 0; limb < 4; ++limb) {
    int parent = torso;
    for (int link = 0; link < 3; ++link) {
      const std::string name = "limb" + std::to_string(limb) + "_" + std::to_string(link);
      parent = model.addBody(capstan::testing::randomBody(rng, name),
                             capstan::testing::randomJoint(rng, JointType::Revolute, parent, name));
    }
  }
  model.addBody(capstan::testing::randomBody(rng, "head"),
                capstan::testing::randomJoint(rng, JointType::Universal, torso, "neck"));
  return model;
}

}  // namespace

int main() {
  Rng rng(7);
  std::printf("| model | nu | CRBA+LTDL us | CRBA+LLT us | ABA us | CRBA us | bias us | ops CRBA+LTDL | ops ABA |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int n : {1, 3, 7, 12, 30}) {
    compare("revolute chain n=" + std::to_string(n), capstan::testing::randomChain(rng, n, JointType::Revolute), rng);
  }
  compare("ball chain n=7", capstan::testing::randomChain(rng, 7, JointType::Ball), rng);
  compare("random tree n=10 (all types)", capstan::testing::randomTree(rng, 10), rng);
  compare("humanoid-like (free + 4x3 + 2)", humanoidLike(rng), rng);
  std::printf("\n| N | fixed LLT us | fixed LTDL us |\n|---|---|---|\n");
  fixedSizeSolve<3>(rng);
  fixedSizeSolve<6>(rng);
  fixedSizeSolve<12>(rng);
  fixedSizeSolve<20>(rng);
  fixedSizeSolve<30>(rng);
  return sink == 12345.0 ? 1 : 0;
}
