// Integrators: orders of convergence, dense output, energy behaviour on
// passive mechanisms, a pendulum's period, and errors on non-finite states.
#include <capstan/integrators.hpp>
#include "mechanism_system.hpp"

#include <doctest/doctest.h>

#include "multibody_fixtures.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace capstan;
using capstan::testing::Rng;

constexpr double kPi = 3.14159265358979323846;

// x'' = -x as x = (position, velocity); exact solution cos t, -sin t.
struct Oscillator {
  int evaluations = 0;
  void derivative(double, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
    ++evaluations;
    xdot.resize(2);
    xdot << x[1], -x[0];
  }
};

// The same as a mechanical system (q = position, u = velocity).
struct MechanicalOscillator {
  int nq() const { return 1; }
  int nu() const { return 1; }
  void qdot(const Eigen::VectorXd&, const Eigen::VectorXd& u, Eigen::VectorXd& qdot) { qdot = u; }
  void udot(double, const Eigen::VectorXd& q, const Eigen::VectorXd&, Eigen::VectorXd& udot) { udot = -q; }
};

Eigen::VectorXd oscillatorStart() { return Eigen::Vector2d(1.0, 0.0); }
double oscillatorError(const Eigen::VectorXd& x, double t) {
  return std::max(std::abs(x[0] - std::cos(t)), std::abs(x[1] + std::sin(t)));
}

TEST_CASE("RK4 converges at fourth order, semi-implicit Euler at first order") {
  constexpr double kT = 2.0;
  std::vector<double> rk4Errors, eulerErrors;
  for (double h : {0.02, 0.01, 0.005}) {
    IntegratorSettings settings;
    settings.stepSize = h;
    Oscillator osc;
    Eigen::VectorXd x = oscillatorStart();
    REQUIRE(rk4(osc, 0.0, kT, x, settings).ok);
    rk4Errors.push_back(oscillatorError(x, kT));
    MechanicalOscillator mech;
    Eigen::VectorXd q = Eigen::VectorXd::Constant(1, 1.0), u = Eigen::VectorXd::Zero(1);
    REQUIRE(semiImplicitEuler(mech, 0.0, kT, q, u, settings).ok);
    eulerErrors.push_back(oscillatorError(Eigen::Vector2d(q[0], u[0]), kT));
  }
  for (std::size_t k = 1; k < rk4Errors.size(); ++k) {
    CHECK(rk4Errors[k - 1] / rk4Errors[k] == doctest::Approx(16.0).epsilon(0.1));
    CHECK(eulerErrors[k - 1] / eulerErrors[k] == doctest::Approx(2.0).epsilon(0.1));
  }
}

// The oscillator with compile-time sizes, as generated code declares it.
struct FixedSizeOscillator {
  using VectorQ = Eigen::Matrix<double, 1, 1>;
  using VectorU = Eigen::Matrix<double, 1, 1>;
  int nq() const { return 1; }
  int nu() const { return 1; }
  void qdot(const VectorQ&, const VectorU& u, VectorQ& qdot) { qdot = u; }
  void udot(double, const VectorQ& q, const VectorU&, VectorU& udot) { udot = -q; }
};

TEST_CASE("fixed-size systems integrate exactly like dynamic ones") {
  IntegratorSettings settings;
  settings.stepSize = 0.01;
  FixedSizeOscillator fixed;
  FirstOrder<FixedSizeOscillator, Eigen::Vector2d> fixedOde(fixed);
  MechanicalOscillator dynamic;
  FirstOrder<MechanicalOscillator> dynamicOde(dynamic);
  Eigen::Vector2d xf(1.0, 0.0);
  Eigen::VectorXd xd = oscillatorStart();
  REQUIRE(rk4(fixedOde, 0.0, 1.0, xf, settings).ok);
  REQUIRE(rk4(dynamicOde, 0.0, 1.0, xd, settings).ok);
  CHECK(xf[0] == xd[0]);
  CHECK(xf[1] == xd[1]);
  xf << 1.0, 0.0;
  xd = oscillatorStart();
  REQUIRE(dormandPrince(fixedOde, 0.0, 1.0, xf, settings).ok);
  REQUIRE(dormandPrince(dynamicOde, 0.0, 1.0, xd, settings).ok);
  CHECK(xf[0] == xd[0]);
  CHECK(xf[1] == xd[1]);
  FixedSizeOscillator::VectorQ q = FixedSizeOscillator::VectorQ::Constant(1.0);
  FixedSizeOscillator::VectorU u = FixedSizeOscillator::VectorU::Zero();
  Eigen::VectorXd qd = Eigen::VectorXd::Constant(1, 1.0), ud = Eigen::VectorXd::Zero(1);
  REQUIRE(semiImplicitEuler(fixed, 0.0, 1.0, q, u, settings).ok);
  REQUIRE(semiImplicitEuler(dynamic, 0.0, 1.0, qd, ud, settings).ok);
  CHECK(q[0] == qd[0]);
  CHECK(u[0] == ud[0]);
}

TEST_CASE("a plain callable is a first-order system") {
  IntegratorSettings settings;
  settings.stepSize = 0.01;
  auto decay = [](double, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) { xdot = -x; };
  Eigen::VectorXd x = Eigen::VectorXd::Ones(3);
  const auto status = dormandPrince(decay, 0.0, 2.0, x, settings);
  REQUIRE(status.ok);
  CHECK(std::abs(x[2] - std::exp(-2.0)) < 1e-7);
  CHECK(status.message.empty());
}

TEST_CASE("semi-implicit Euler keeps the oscillator's energy bounded over many periods") {
  constexpr double kStep = 0.05;
  MechanicalOscillator mech;
  Eigen::VectorXd q = Eigen::VectorXd::Constant(1, 1.0), u = Eigen::VectorXd::Zero(1);
  IntegratorSettings settings;
  settings.stepSize = kStep;
  double worst = 0.0;
  const auto status = semiImplicitEuler(mech, 0.0, 200 * kPi, q, u, settings, [&](double, const Eigen::VectorXd& x) {
    worst = std::max(worst, std::abs(0.5 * (x[0] * x[0] + x[1] * x[1]) - 0.5));
  });
  REQUIRE(status.ok);
  CHECK(worst < kStep);  // O(h), not growing with time: the modified energy is conserved
}

TEST_CASE("fixed-step output lands on the output grid") {
  Oscillator osc;
  Eigen::VectorXd x = oscillatorStart();
  IntegratorSettings settings;
  settings.stepSize = 0.003;
  settings.outputInterval = 0.01;
  std::vector<double> times;
  const auto status = rk4(osc, 0.0, 0.1, x, settings, [&](double t, const Eigen::VectorXd&) { times.push_back(t); });
  REQUIRE(status.ok);
  CHECK(status.steps == 40);  // 0.003 shortened to 0.0025 so that 4 steps fit each output interval
  REQUIRE(times.size() == 11);
  for (std::size_t k = 0; k < times.size(); ++k) CHECK(times[k] == doctest::Approx(0.01 * static_cast<double>(k)));
}

TEST_CASE("Dormand-Prince meets its tolerance, and dense output matches at evenly spaced times") {
  constexpr double kT = 10.0, kInterval = 0.1;
  double previousError = std::numeric_limits<double>::infinity();
  for (double tol : {1e-5, 1e-8, 1e-11}) {
    CAPTURE(tol);
    Oscillator osc;
    Eigen::VectorXd x = oscillatorStart();
    IntegratorSettings settings;
    settings.relativeTolerance = tol;
    settings.absoluteTolerance = tol;
    settings.stepSize = 0.0;  // automatic first step
    settings.outputInterval = kInterval;
    double worstDense = 0.0;
    int outputs = 0;
    const auto status = dormandPrince(osc, 0.0, kT, x, settings, [&](double t, const Eigen::VectorXd& y) {
      CHECK(t == doctest::Approx(kInterval * outputs));
      ++outputs;
      worstDense = std::max(worstDense, oscillatorError(y, t));
    });
    REQUIRE(status.ok);
    CHECK(outputs == 101);
    const double error = oscillatorError(x, kT);
    // Global error over ~1.6 periods: within a modest multiple of the local tolerance.
    CHECK(error < 100 * tol);
    CHECK(worstDense < 100 * tol);
    CHECK(error < previousError);
    previousError = error;
    CHECK(status.steps < 10 * static_cast<long>(std::pow(tol, -0.2)) + 20);  // fifth order: steps ~ tol^(-1/5)
  }
}

Mechanism<double> compoundPendulum(double mass, double d, double Icm) {
  Mechanism<double> model;
  Joint<double> pivot;
  pivot.name = "pivot";
  pivot.type = JointType::Revolute;
  model.addBody(Body<double>{"rod", mass, Vec3<double>(0, -d, 0), Mat3<double>::Identity() * Icm}, pivot);
  return model;
}

TEST_CASE("a compound pendulum's small-angle period is 2 pi sqrt(I_O / (m g d))") {
  constexpr double kMass = 1.5, kD = 0.6, kIcm = 0.02, kTheta0 = 1e-3;
  constexpr double kPeriodTolerance = 1e-6;  // relative; the amplitude correction is theta0^2/16 ~ 6e-8
  const Mechanism<double> model = compoundPendulum(kMass, kD, kIcm);
  const double period = 2 * kPi * std::sqrt((kIcm + kMass * kD * kD) / (kMass * 9.81 * kD));
  MechanismSystem<> system(model);
  FirstOrder<MechanismSystem<>> ode(system);
  Eigen::VectorXd x(2);
  x << kTheta0, 0.0;
  IntegratorSettings settings;
  settings.relativeTolerance = 1e-12;
  settings.absoluteTolerance = 1e-15;
  settings.outputInterval = period / 200;
  // Downward zero crossings of the angle, by linear interpolation between outputs.
  std::vector<double> crossings;
  double tPrev = 0.0, qPrev = kTheta0;
  const auto status = dormandPrince(ode, 0.0, 5.2 * period, x, settings, [&](double t, const Eigen::VectorXd& y) {
    if (qPrev > 0.0 && y[0] <= 0.0) crossings.push_back(tPrev + (t - tPrev) * qPrev / (qPrev - y[0]));
    tPrev = t;
    qPrev = y[0];
  });
  REQUIRE(status.ok);
  REQUIRE(crossings.size() == 5);
  const double measured = (crossings.back() - crossings.front()) / 4.0;
  CHECK(std::abs(measured - period) / period < kPeriodTolerance);
}

TEST_CASE("energy of a passive random tree is conserved within a bound that shrinks with tolerance") {
  Rng rng(31);
  const Mechanism<double> model = capstan::testing::randomTree(rng, 6);
  MechanismSystem<> system(model);
  FirstOrder<MechanismSystem<>> ode(system);
  Eigen::VectorXd x0(model.nq + model.nu);
  x0 << capstan::testing::randomConfiguration(rng, model), capstan::testing::randomVectorX(rng, model.nu, 1.0);
  const double e0 = system.energy(x0.head(model.nq), x0.tail(model.nu));
  constexpr double kEnergyFactor = 100.0;  // drift <= kEnergyFactor * tol * max(1, |E|) over 1 s
  double previousDrift = std::numeric_limits<double>::infinity();
  for (double tol : {1e-6, 1e-8, 1e-10}) {
    CAPTURE(tol);
    Eigen::VectorXd x = x0;
    // Alternate the two forward-dynamics methods: both must conserve energy.
    system.method = tol == 1e-8 ? ForwardDynamicsMethod::CompositeBody : ForwardDynamicsMethod::ArticulatedBody;
    IntegratorSettings settings;
    settings.relativeTolerance = tol;
    settings.absoluteTolerance = tol;
    const auto status = dormandPrince(ode, 0.0, 1.0, x, settings);
    REQUIRE(status.ok);
    const double drift = std::abs(system.energy(x.head(model.nq), x.tail(model.nu)) - e0);
    CHECK(drift < kEnergyFactor * tol * std::max(1.0, std::abs(e0)));
    CHECK(drift < previousDrift);
    previousDrift = drift;
    for (const auto& joint : model.joints) {
      if (hasQuaternion(joint.type)) CHECK(x.segment<4>(joint.qOffset).norm() == doctest::Approx(1.0).epsilon(1e-14));
    }
  }
}

// A random tree (every joint type) with a spring-damper on every coordinate
// that is not a quaternion's, and udotDerivatives() by central differences
// along the tangent space (as generated forwardDynamicsDerivatives defines
// them: column j along q + eps N(q) e_j, with no normalization).
struct TreeWithDerivatives {
  struct SpringDamper {
    const Mechanism<double>* model;
    void operator()(double, const VectorX<double>& q, const VectorX<double>& u, VectorX<double>& tau) const {
      for (const auto& joint : model->joints) {
        if (hasQuaternion(joint.type)) {
          for (int k = 0; k < joint.nu(); ++k) tau[joint.uOffset + k] -= 3.0 * u[joint.uOffset + k];
          continue;
        }
        for (int k = 0; k < joint.nu(); ++k) tau[joint.uOffset + k] -= 40.0 * q[joint.qOffset + k] + 2.0 * u[joint.uOffset + k];
      }
    }
  };
  MechanismSystem<SpringDamper> system;
  explicit TreeWithDerivatives(const Mechanism<double>& model) : system(model, SpringDamper{&model}) {}
  int nq() const { return system.nq(); }
  int nu() const { return system.nu(); }
  void qdot(const Eigen::VectorXd& q, const Eigen::VectorXd& u, Eigen::VectorXd& qd) { system.qdot(q, u, qd); }
  void udot(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u, Eigen::VectorXd& ud) { system.udot(t, q, u, ud); }
  void udotDerivatives(double t, const Eigen::VectorXd& q, const Eigen::VectorXd& u, Eigen::MatrixXd& dq,
                       Eigen::MatrixXd& du) {
    constexpr double h = 1e-6;
    const Eigen::MatrixXd N = nMatrix(system.model, q);
    Eigen::VectorXd plus, minus;
    for (int j = 0; j < nu(); ++j) {
      udot(t, q + h * N.col(j), u, plus);
      udot(t, q - h * N.col(j), u, minus);
      dq.col(j) = (plus - minus) / (2 * h);
      const Eigen::VectorXd e = Eigen::VectorXd::Unit(nu(), j);
      udot(t, q, u + h * e, plus);
      udot(t, q, u - h * e, minus);
      du.col(j) = (plus - minus) / (2 * h);
    }
  }
};

TEST_CASE("a mechanical system's Jacobian in raw coordinates matches difference quotients, quaternions included") {
  Rng rng(12);
  const Mechanism<double> model = capstan::testing::randomTree(rng, 9);
  int quaternions = 0;
  for (const auto& joint : model.joints) quaternions += hasQuaternion(joint.type) ? 1 : 0;
  REQUIRE(quaternions >= 2);  // a Ball and a Free joint at least
  TreeWithDerivatives tree(model);
  FirstOrder<TreeWithDerivatives> ode(tree);
  const int n = model.nq + model.nu;
  // Unit quaternions, then scaled ones (1.3x, as an integrator's stage
  // between normalizations may have): the formula holds for any nonzero q.
  for (double scale : {1.0, 1.3}) {
    CAPTURE(scale);
    Eigen::VectorXd x(n);
    x << capstan::testing::randomConfiguration(rng, model), capstan::testing::randomVectorX(rng, model.nu, 1.0);
    for (const auto& joint : model.joints)
      if (hasQuaternion(joint.type)) x.segment<4>(joint.qOffset) *= scale;
    Eigen::MatrixXd J(n, n);
    ode.jacobian(0.3, x, J);
    // Central differences of f in every raw direction, a quaternion's four
    // numbers separately (no normalization).
    constexpr double h = 1e-6;
    Eigen::MatrixXd expected(n, n);
    Eigen::VectorXd plus(n), minus(n);
    for (int i = 0; i < n; ++i) {
      Eigen::VectorXd xp = x, xm = x;
      xp[i] += h;
      xm[i] -= h;
      ode.derivative(0.3, xp, plus);
      ode.derivative(0.3, xm, minus);
      expected.col(i) = (plus - minus) / (2 * h);
    }
    // Two central differences (the tangent derivative, then this one), each
    // with error ~h^2 |f'''| + eps |f| / h.
    constexpr double kDifferenceTolerance = 1e-6;
    CHECK(capstan::testing::relativeError(J, expected) < kDifferenceTolerance);
    // The top-left block is exact, not approximate: d(N(q) u)/dq.
    const Eigen::MatrixXd top = J.topLeftCorner(model.nq, model.nq);
    CHECK(capstan::testing::relativeError(top, expected.topLeftCorner(model.nq, model.nq)) < 1e-8);
  }
}

// x' = 1 for every coordinate except coordinate 2, which becomes NaN after t = 0.5.
struct PoisonedAfterHalf {
  void derivative(double t, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
    xdot = Eigen::VectorXd::Ones(x.size());
    if (t > 0.5) xdot[2] = std::numeric_limits<double>::quiet_NaN();
  }
  std::string coordinateName(int i) const { return "x" + std::to_string(i); }
};

TEST_CASE("non-finite states stop integration with the time and coordinate named") {
  IntegratorSettings settings;
  settings.stepSize = 0.1;
  {
    PoisonedAfterHalf system;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(4);
    const auto status = rk4(system, 0.0, 1.0, x, settings);
    CHECK_FALSE(status.ok);
    CHECK(status.time == doctest::Approx(0.5));  // the step from 0.5 to 0.6 evaluates at t > 0.5
    CHECK(status.message.find("coordinate 2 (`x2`)") != std::string::npos);
    CHECK(status.message.find("from t = 0.5 to t = 0.6") != std::string::npos);
    CHECK(x.allFinite());
  }
  {
    PoisonedAfterHalf system;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(4);
    const auto status = dormandPrince(system, 0.0, 1.0, x, settings);
    CHECK_FALSE(status.ok);
    CHECK(status.time == doctest::Approx(0.5).epsilon(1e-6));
    CHECK(status.message.find("coordinate 2 (`x2`)") != std::string::npos);
    CHECK(x.allFinite());
  }
  {
    // A mechanism whose force law fails: the message names the joint coordinate.
    const Mechanism<double> model = compoundPendulum(1.0, 0.5, 0.01);
    auto badForce = [](double t, const VectorX<double>&, const VectorX<double>&, VectorX<double>& tau) {
      if (t > 0.25) tau[0] = std::numeric_limits<double>::infinity();
    };
    MechanismSystem<decltype(badForce)> system(model, badForce);
    Eigen::VectorXd q = Eigen::VectorXd::Constant(1, 0.3), u = Eigen::VectorXd::Zero(1);
    const auto status = semiImplicitEuler(system, 0.0, 1.0, q, u, settings);
    CHECK_FALSE(status.ok);
    CAPTURE(status.message);
    CHECK(status.message.find("`pivot.u[0]`") != std::string::npos);
    CHECK(q.allFinite());
  }
}

// x' = NaN in coordinate 1 from the very start (the derivative at t0 is bad).
struct PoisonedAtStart {
  int evaluations = 0;
  void derivative(double, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
    ++evaluations;
    xdot = Eigen::VectorXd::Ones(x.size());
    xdot[1] = std::numeric_limits<double>::quiet_NaN();
  }
  std::string coordinateName(int i) const { return "x" + std::to_string(i); }
};

TEST_CASE("Dormand-Prince reports a non-finite derivative at the start instead of spinning") {
  IntegratorSettings settings;
  settings.stepSize = 0.0;   // automatic first step: a NaN k1 used to make h NaN
  settings.maxSteps = 1000;  // keeps the old behaviour (spin to maxSteps) from hanging the test
  PoisonedAtStart system;
  // A nonzero state so that Hairer's heuristic divides by the (NaN) derivative norm.
  Eigen::VectorXd x = Eigen::VectorXd::Ones(3);
  const auto status = dormandPrince(system, 0.0, 1.0, x, settings);
  CAPTURE(status.message);
  CHECK_FALSE(status.ok);
  CHECK(status.time == 0.0);
  CHECK(status.steps + status.rejectedSteps == 0);
  CHECK(system.evaluations == 1);
  CHECK(status.message.find("non-finite derivative") != std::string::npos);
  CHECK(status.message.find("coordinate 1 (`x1`)") != std::string::npos);
  CHECK(x.allFinite());
}

// x0' = -x0 and x1' = 0 with x1 = 0 throughout: with atol = 0 coordinate 1
// has a zero error scale.
struct DecayAndZero {
  void derivative(double, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
    xdot.resize(2);
    xdot << -x[0], 0.0;
  }
};

TEST_CASE("Dormand-Prince accepts a pure relative tolerance (atol = 0)") {
  for (const double firstStep : {0.0, 0.1}) {
    CAPTURE(firstStep);
    IntegratorSettings settings;
    settings.stepSize = firstStep;
    settings.absoluteTolerance = 0.0;
    settings.relativeTolerance = 1e-9;
    settings.maxSteps = 100000;
    DecayAndZero system;
    Eigen::VectorXd x = Eigen::Vector2d(1.0, 0.0);
    const auto status = dormandPrince(system, 0.0, 1.0, x, settings);
    CAPTURE(status.message);
    REQUIRE(status.ok);
    CHECK(status.steps < 1000);
    CHECK(x[0] == doctest::Approx(std::exp(-1.0)).epsilon(1e-7));
    CHECK(x[1] == 0.0);
  }
  // A coordinate that starts at exactly 0 but moves: still completes.
  {
    IntegratorSettings settings;
    settings.stepSize = 0.0;
    settings.absoluteTolerance = 0.0;
    settings.relativeTolerance = 1e-9;
    settings.maxSteps = 100000;
    Oscillator osc;
    Eigen::VectorXd x = oscillatorStart();  // velocity starts at exactly 0
    const auto status = dormandPrince(osc, 0.0, 1.0, x, settings);
    CAPTURE(status.message);
    REQUIRE(status.ok);
    CHECK(oscillatorError(x, 1.0) < 1e-7);
  }
}

}  // namespace
