// CVODE through capstan/cvode.hpp on stiff ODEs with exact solutions: the
// Prothero-Robinson equation, a linear system with eigenvalues -1 and -1e6,
// and a stiff attraction to the unit circle (projection). Accuracy against
// the exact solution, the exact Jacobian against difference quotients,
// observation times, statistics, bad settings, non-finite states and
// exceptions passing through.
#include <capstan/cvode.hpp>
#include <capstan/integrators.hpp>

#include <Eigen/Dense>
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace capstan;

// Prothero-Robinson: y' = lambda (y - g(t)) + g'(t), g = sin: the exact
// solution from y(0) = g(0) is y = sin t for every lambda; lambda = -1e6
// makes it stiff (an explicit method needs h < ~3 / |lambda|).
struct ProtheroRobinson {
  double lambda = -1e6;
  long evaluations = 0, jacobians = 0;
  void derivative(double t, const Eigen::VectorXd& y, Eigen::VectorXd& ydot) {
    ++evaluations;
    ydot.resize(1);
    ydot[0] = lambda * (y[0] - std::sin(t)) + std::cos(t);
  }
  void jacobian(double, const Eigen::VectorXd&, Eigen::Ref<Eigen::MatrixXd> J) {
    ++jacobians;
    J(0, 0) = lambda;
  }
};

// The same without jacobian(): CVODE's difference quotients.
struct ProtheroRobinsonNoJacobian {
  double lambda = -1e6;
  void derivative(double t, const Eigen::VectorXd& y, Eigen::VectorXd& ydot) {
    ydot.resize(1);
    ydot[0] = lambda * (y[0] - std::sin(t)) + std::cos(t);
  }
};

// y' = A y, A = V diag(-1, -1e6) V^-1 with V = [1 1; 1 -1]: exact
// y(t) = V diag(e^-t, e^-1e6 t) V^-1 y0. Fixed-size vectors, as generated code.
struct StiffLinear {
  using Vector = Eigen::Vector2d;
  Eigen::Matrix2d A;
  StiffLinear() {
    Eigen::Matrix2d V;
    V << 1, 1, 1, -1;
    A = V * Eigen::Vector2d(-1.0, -1e6).asDiagonal() * V.inverse();
  }
  void derivative(double, const Vector& y, Vector& ydot) { ydot = A * y; }
  void jacobian(double, const Vector&, Eigen::Ref<Eigen::MatrixXd> J) { J = A; }
  Vector exact(double t, const Vector& y0) const {
    Eigen::Matrix2d V;
    V << 1, 1, 1, -1;
    return V * Eigen::Vector2d(std::exp(-t), std::exp(-1e6 * t)).asDiagonal() * V.inverse() * y0;
  }
};

// Rotation at 1 rad/s plus a stiff pull (rate 1e5) to the unit circle:
// from (1, 0) the exact solution is (cos t, sin t). project() puts the state
// back on the circle after each step.
struct Circle {
  long projections = 0;
  void derivative(double, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
    const double pull = -1e5 * (x.squaredNorm() - 1.0);
    xdot.resize(2);
    xdot << -x[1] + pull * x[0], x[0] + pull * x[1];
  }
  void jacobian(double, const Eigen::VectorXd& x, Eigen::Ref<Eigen::MatrixXd> J) {
    const double pull = -1e5 * (x.squaredNorm() - 1.0);
    J << pull - 2e5 * x[0] * x[0], -1.0 - 2e5 * x[0] * x[1],  //
        1.0 - 2e5 * x[0] * x[1], pull - 2e5 * x[1] * x[1];
  }
  void project(Eigen::VectorXd& x) {
    ++projections;
    x.normalize();
  }
};

struct Observations {
  std::vector<double> times;
  std::vector<Eigen::VectorXd> states;
  template <class Vector>
  void operator()(double t, const Vector& x) {
    times.push_back(t);
    states.emplace_back(x);
  }
};

TEST_CASE("CVODE follows the stiff Prothero-Robinson equation to its tolerance with few evaluations") {
  CvodeSettings settings;
  settings.relativeTolerance = 1e-8;
  settings.absoluteTolerance = 1e-8;
  settings.outputInterval = 0.1;
  ProtheroRobinson exact;
  Eigen::VectorXd y = Eigen::VectorXd::Zero(1);
  Observations seen;
  CvodeStatistics stats;
  const IntegrationStatus status = cvode(exact, 0.0, 10.0, y, settings, std::ref(seen), &stats);
  REQUIRE(status.ok);
  CHECK(status.time == 10.0);
  REQUIRE(seen.times.size() == 101);
  double worst = 0;
  for (std::size_t k = 0; k < seen.times.size(); ++k) {
    CHECK(seen.times[k] == doctest::Approx(0.1 * static_cast<double>(k)).epsilon(1e-14));
    worst = std::max(worst, std::abs(seen.states[k][0] - std::sin(seen.times[k])));
  }
  // The global error of a tolerance-1e-8 run: a few times the tolerance.
  constexpr double kGlobalErrorBound = 1e-7;
  CHECK(worst < kGlobalErrorBound);
  CHECK(stats.exactJacobian);
  CHECK(stats.rhsEvaluationsForJacobian == 0);
  CHECK(stats.jacobianEvaluations == exact.jacobians);
  CHECK(stats.jacobianEvaluations >= 1);
  CHECK(stats.rhsEvaluations == exact.evaluations);
  CHECK(status.derivativeEvaluations == exact.evaluations);
  CHECK(status.steps == stats.steps);
  // An explicit method needs h < ~3e-6 here: some 3 million steps for 10 s.
  // BDF's step follows sin t alone.
  constexpr long kMaxEvaluations = 5000;
  CHECK(stats.rhsEvaluations < kMaxEvaluations);
  MESSAGE("Prothero-Robinson, 10 s: ", stats.steps, " steps, ", stats.rhsEvaluations, " evaluations, ",
          stats.jacobianEvaluations, " Jacobians, max error ", worst);

  // Dormand-Prince at the same tolerance, for scale: stability, not
  // accuracy, limits its step.
  IntegratorSettings explicitSettings;
  explicitSettings.relativeTolerance = 1e-8;
  explicitSettings.absoluteTolerance = 1e-8;
  explicitSettings.stepSize = 0.0;
  ProtheroRobinson forDopri;
  Eigen::VectorXd z = Eigen::VectorXd::Zero(1);
  REQUIRE(dormandPrince(forDopri, 0.0, 0.1, z, explicitSettings).ok);
  CHECK(forDopri.evaluations > 20 * stats.rhsEvaluations);  // in a hundredth of the time
}

TEST_CASE("CVODE's difference-quotient Jacobian gives the same solution, at the price of evaluations") {
  CvodeSettings settings;
  settings.relativeTolerance = 1e-8;
  settings.absoluteTolerance = 1e-8;
  settings.outputInterval = 0.5;
  ProtheroRobinsonNoJacobian none;
  ProtheroRobinson forced;
  Eigen::VectorXd a = Eigen::VectorXd::Zero(1), b = Eigen::VectorXd::Zero(1);
  CvodeStatistics withoutJacobian, differenceQuotients;
  REQUIRE(cvode(none, 0.0, 5.0, a, settings, NoObserver{}, &withoutJacobian).ok);
  settings.jacobian = CvodeJacobian::DifferenceQuotient;
  REQUIRE(cvode(forced, 0.0, 5.0, b, settings, NoObserver{}, &differenceQuotients).ok);
  CHECK_FALSE(withoutJacobian.exactJacobian);
  CHECK_FALSE(differenceQuotients.exactJacobian);
  CHECK(forced.jacobians == 0);
  CHECK(withoutJacobian.rhsEvaluationsForJacobian == withoutJacobian.jacobianEvaluations);  // one column
  CHECK(differenceQuotients.rhsEvaluationsForJacobian > 0);
  CHECK(std::abs(a[0] - std::sin(5.0)) < 1e-7);
  CHECK(std::abs(b[0] - std::sin(5.0)) < 1e-7);
}

TEST_CASE("CVODE on a fixed-size stiff linear system matches the exact solution after the fast transient") {
  StiffLinear system;
  CvodeSettings settings;
  settings.relativeTolerance = 1e-9;
  settings.absoluteTolerance = 1e-12;
  settings.outputInterval = 0.25;
  const Eigen::Vector2d y0(1.0, 3.0);
  Eigen::Vector2d y = y0;
  Observations seen;
  CvodeStatistics stats;
  REQUIRE(cvode(system, 0.0, 3.0, y, settings, std::ref(seen), &stats).ok);
  REQUIRE(seen.times.size() == 13);
  for (std::size_t k = 0; k < seen.times.size(); ++k) {
    const Eigen::Vector2d expected = system.exact(seen.times[k], y0);
    CHECK((seen.states[k] - expected).norm() < 1e-7 * (1.0 + expected.norm()));
  }
  CHECK((y - system.exact(3.0, y0)).norm() < 1e-7);
  CHECK(stats.lastOrder >= 2);  // BDF raised its order on the smooth part
}

TEST_CASE("CVODE projects after each step, and observations are projected too") {
  Circle circle;
  CvodeSettings settings;
  settings.relativeTolerance = 1e-8;
  settings.absoluteTolerance = 1e-10;
  settings.outputInterval = 0.05;
  Eigen::VectorXd x(2);
  x << 1.0, 0.0;
  Observations seen;
  CvodeStatistics stats;
  REQUIRE(cvode(circle, 0.0, 2.0, x, settings, std::ref(seen), &stats).ok);
  CHECK(stats.projections > 0);
  CHECK(circle.projections >= stats.projections);
  for (std::size_t k = 0; k < seen.times.size(); ++k) {
    CHECK(std::abs(seen.states[k].norm() - 1.0) < 1e-14);
    CHECK(std::abs(seen.states[k][0] - std::cos(seen.times[k])) < 1e-6);
    CHECK(std::abs(seen.states[k][1] - std::sin(seen.times[k])) < 1e-6);
  }
}

TEST_CASE("CVODE observes after every step when there is no output interval, and ends at t1") {
  ProtheroRobinson system;
  CvodeSettings settings;
  Eigen::VectorXd y = Eigen::VectorXd::Zero(1);
  Observations seen;
  CvodeStatistics stats;
  REQUIRE(cvode(system, 0.0, 1.0, y, settings, std::ref(seen), &stats).ok);
  CHECK(static_cast<long>(seen.times.size()) == stats.steps + 1);
  CHECK(seen.times.back() == 1.0);
  for (std::size_t k = 1; k < seen.times.size(); ++k) CHECK(seen.times[k] > seen.times[k - 1]);
}

TEST_CASE("a system without a state is observed on the grid, and CVODE is not started") {
  auto none = [](double, const Eigen::VectorXd&, Eigen::VectorXd&) { FAIL("no derivative to evaluate"); };
  Eigen::VectorXd x(0);
  CvodeSettings settings;
  settings.outputInterval = 0.25;
  Observations seen;
  const IntegrationStatus status = cvode(none, 0.0, 1.0, x, settings, std::ref(seen));
  CHECK(status.ok);
  CHECK(seen.times == std::vector<double>{0.0, 0.25, 0.5, 0.75, 1.0});
}

TEST_CASE("CVODE refuses bad settings before it starts") {
  ProtheroRobinson system;
  Eigen::VectorXd y = Eigen::VectorXd::Zero(1);
  for (const auto& [rtol, atol] : std::vector<std::pair<double, double>>{
           {0.0, 1e-8}, {-1e-6, 1e-8}, {std::nan(""), 1e-8}, {1e-6, -1.0}, {INFINITY, 1e-8}}) {
    CvodeSettings settings;
    settings.relativeTolerance = rtol;
    settings.absoluteTolerance = atol;
    const IntegrationStatus status = cvode(system, 0.0, 1.0, y, settings);
    CHECK_FALSE(status.ok);
    CHECK(status.message == "relative tolerance must be positive and absolute tolerance non-negative");
  }
  CvodeSettings settings;
  CHECK(cvode(system, 1.0, 0.0, y, settings).message == "end time is before start time");
  settings.maxStepSize = 0.0;
  CHECK(cvode(system, 0.0, 1.0, y, settings).message == "maximum step size must be positive");
  CHECK(system.evaluations == 0);
}

// A rate that is not finite from t = 0.45 on (a force law outside its domain).
struct Singular {
  void derivative(double t, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
    xdot.resize(2);
    xdot << x[1], -1e4 * x[0] - 100.0 * x[1] + (t < 0.45 ? 1.0 : std::nan(""));
  }
  void jacobian(double, const Eigen::VectorXd&, Eigen::Ref<Eigen::MatrixXd> J) { J << 0, 1, -1e4, -100; }
  std::string coordinateName(int i) const { return i == 0 ? "slider.q[1]" : "slider.u[1]"; }
};

TEST_CASE("a non-finite derivative stops CVODE with the time and coordinate named, observations kept") {
  Singular system;
  CvodeSettings settings;
  settings.outputInterval = 0.1;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
  Observations seen;
  const IntegrationStatus status = cvode(system, 0.0, 1.0, x, settings, std::ref(seen));
  REQUIRE_FALSE(status.ok);
  MESSAGE(status.message);
  CHECK(status.message.find("non-finite state in the step from t = 0.4") == 0);
  CHECK(status.message.find("coordinate 1 (`slider.u[1]`)") != std::string::npos);
  CHECK(status.message.find("coordinate 0") == std::string::npos);
  // The state returned is CVODE's last step before 0.45.
  CHECK(status.time >= 0.4);
  CHECK(status.time < 0.45);
  REQUIRE(seen.times.size() == 5);  // 0, 0.1, ..., 0.4
  CHECK(seen.times.back() == doctest::Approx(0.4));
  CHECK(x.allFinite());

  Eigen::VectorXd bad(2);
  bad << 0.0, std::nan("");
  const IntegrationStatus initial = cvode(system, 0.0, 1.0, bad, settings);
  CHECK_FALSE(initial.ok);
  CHECK(initial.message.find("non-finite initial state") == 0);
}

TEST_CASE("a non-finite derivative at the start is an error at t0, not a spin") {
  Singular system;
  CvodeSettings settings;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
  const IntegrationStatus status = cvode(system, 0.75, 1.0, x, settings);
  REQUIRE_FALSE(status.ok);
  CHECK(status.message.find("non-finite state in the step from t = 0.75 to t = 0.75") == 0);
}

// A rate that is finite up to t = 0.45 and not after it (sqrt of a
// negative number): CVODE's steps shrink onto 0.45 from below, where the
// rate at the step's start is finite and every stage past it is not.
struct RootSingular {
  long evaluations = 0;
  void derivative(double t, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
    ++evaluations;
    xdot.resize(2);
    xdot << x[1], -1e4 * x[0] - 100.0 * x[1] + std::sqrt(0.45 - t);
  }
  void jacobian(double, const Eigen::VectorXd&, Eigen::Ref<Eigen::MatrixXd> J) { J << 0, 1, -1e4, -100; }
};

TEST_CASE("a rate that stops being finite right after a time fails there, at a negligible step, not in a spin") {
  RootSingular system;
  CvodeSettings settings;
  settings.outputInterval = 0.1;
  // Without a minimum step CVODE would go on with steps where t + h == t
  // (each "succeeds": the rate at t is finite) up to this limit.
  settings.maxSteps = 1'000'000;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
  Observations seen;
  const IntegrationStatus status = cvode(system, 0.0, 1.0, x, settings, std::ref(seen));
  REQUIRE_FALSE(status.ok);
  MESSAGE(status.message);
  CHECK(status.message.find("non-finite state in the step from t = 0.4") == 0);
  CHECK(status.time <= 0.45);
  CHECK(status.time > 0.45 - 1e-9);
  CHECK(status.steps < 10'000);
  CHECK(system.evaluations < 100'000);
  CHECK(seen.times.size() == 5);  // 0, 0.1, ..., 0.4
  CHECK(x.allFinite());
}

struct Throws {
  void derivative(double t, const Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
    if (t > 0.3) throw std::runtime_error("stopped by the model");
    xdot = -x;
  }
};

TEST_CASE("an exception of the system passes through CVODE") {
  Throws system;
  Eigen::VectorXd x = Eigen::VectorXd::Ones(3);
  CvodeSettings settings;
  settings.outputInterval = 0.1;
  Observations seen;
  CHECK_THROWS_WITH_AS(cvode(system, 0.0, 1.0, x, settings, std::ref(seen)), "stopped by the model",
                       std::runtime_error);
  CHECK(seen.times.size() >= 3);
  // And the observer's own exception (an interrupt) too.
  struct Interrupt {};
  ProtheroRobinson smooth;
  Eigen::VectorXd y = Eigen::VectorXd::Zero(1);
  int observed = 0;
  CHECK_THROWS_AS(cvode(smooth, 0.0, 1.0, y, settings,
                        [&](double, const Eigen::VectorXd&) {
                          if (++observed == 4) throw Interrupt{};
                        }),
                  Interrupt);
}

}  // namespace
