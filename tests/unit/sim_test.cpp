// capstan::sim (runtime/include/capstan/sim/): the one simulation loop and
// column table, on small hand-written models with closed-form motion, and
// the request that travels to the driver program.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <capstan/sim/request.hpp>
#include <capstan/sim/simulate.hpp>

namespace {

constexpr double kTolerance = 1e-9;  // dopri5 at --tol 1e-12 against the closed form

// A unit harmonic oscillator, x'' = -x (q = x, u = x'), x(0) = 1: x = cos t.
// One output, x^2, and the energies 1/2 u^2 and 1/2 q^2. Its force turns
// NaN after `nanAfter` (s).
struct Oscillator {
  static constexpr int nq = 1, nu = 1;
  using Q = Eigen::Matrix<double, 1, 1>;
  using U = Eigen::Matrix<double, 1, 1>;
  using MassMatrix = Eigen::Matrix<double, 1, 1>;
  using OutputValues = std::array<double, 1>;
  static constexpr std::array<std::string_view, 1> qNames = {"spring.q[0]"};
  static constexpr std::array<std::string_view, 1> uNames = {"spring.u[0]"};
  static constexpr std::array<std::string_view, 1> outputNames = {"x2"};
  static constexpr std::array<std::string_view, 1> qUnits = {"m"};
  static constexpr std::array<std::string_view, 1> uUnits = {"m/s"};
  static constexpr std::array<std::string_view, 1> outputUnits = {"m2"};
  double nanAfter = std::numeric_limits<double>::infinity();
  double* parameter(std::string_view name) { return name == "nanAfter" ? &nanAfter : nullptr; }

  void initialState(Q& q, U& u) const {
    q[0] = 1.0;
    u[0] = 0.0;
  }
  void qdot(const Q&, const U& u, Q& qd) const { qd = u; }
  void forwardDynamics(double t, const Q& q, const U&, U& udot) const {
    udot[0] = t > nanAfter ? std::numeric_limits<double>::quiet_NaN() : -q[0];
  }
  static void normalizeQuaternions(Q&) {}
  double kineticEnergy(const Q&, const U& u) const { return 0.5 * u[0] * u[0]; }
  double potentialEnergy(const Q& q) const { return 0.5 * q[0] * q[0]; }
  void outputValues(double, const Q& q, const U&, OutputValues& v) const { v[0] = q[0] * q[0]; }
};
static_assert(capstan::sim::Model<Oscillator>);
static_assert(!capstan::sim::HasCables<Oscillator> && !capstan::sim::HasBushings<Oscillator>);

// The oscillator with a bushing that locks where x < -0.5, and a cable whose
// path is lost where x < 0 (when told to).
struct Faulty : Oscillator {
  using ExternalForces = std::array<Eigen::Matrix<double, 6, 1>, 1>;
  struct CableValues {
    double length = 0, lengthDot = 0, tension = 0;
  };
  static constexpr std::array<std::string_view, 1> bushingNames = {"mount"};
  static constexpr std::array<std::string_view, 1> cableNames = {"rope"};
  static constexpr int ncables = 1;
  bool bushing = false, cable = false;
  double speedLimit = std::numeric_limits<double>::infinity();  // the path is lost where |u| > it, too
  mutable int failed = -1, failures = 0;
  mutable CableValues values;

  int gimbalLock(const Q& q, const U&, double& pitch) const {
    pitch = 1.5;
    return bushing && q[0] < -0.5 ? 0 : -1;
  }
  int updateCables(double, const Q& q, const U& u, ExternalForces&) const {
    failed = (cable && q[0] < 0) || std::abs(u[0]) > speedLimit ? 0 : -1;
    failures += failed >= 0;
    values = {2.0 + q[0], u[0], 10.0};
    return failed;
  }
  void forwardDynamics(double t, const Q& q, const U& u, U& udot) const {
    ExternalForces f;
    if (updateCables(t, q, u, f) >= 0) {
      udot.setConstant(std::numeric_limits<double>::quiet_NaN());
      return;
    }
    Oscillator::forwardDynamics(t, q, u, udot);
  }
  int cableFailure() const { return failed; }
  const CableValues& cableValues(int) const { return values; }
  std::string cableFailureMessage(double t) const { return "cable `rope` lost at t = " + std::to_string(t); }
};
static_assert(capstan::sim::HasCables<Faulty> && capstan::sim::HasBushings<Faulty>);

// The rows of a CSV file, each split at commas.
std::vector<std::vector<std::string>> readCsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::FILE* f = std::fopen(path.c_str(), "r");
  REQUIRE(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream cellStream(line);
    for (std::string cell; std::getline(cellStream, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  CHECK((text.empty() || text.back() == '\n'));  // whole rows only
  return rows;
}

struct TempCsv {
  std::string path;
  int fd;
  TempCsv() {
    char name[] = "/tmp/capstan_sim_testXXXXXX";
    fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    path = name;
  }
  ~TempCsv() {
    ::close(fd);
    ::unlink(path.c_str());
  }
};

template <class M>
capstan::sim::Result run(const M& model, const capstan::sim::Request& request, TempCsv& csv) {
  capstan::sim::RowWriter out(csv.fd);
  return capstan::sim::simulate(model, request, out);
}

capstan::sim::Request request(double tEnd, double dt, capstan::sim::Integrator integrator) {
  capstan::sim::Request r;
  r.loop.tEnd = tEnd;
  r.loop.dt = dt;
  r.loop.integrator = integrator;
  r.loop.tolerance = 1e-12;
  return r;
}

}  // namespace

TEST_CASE("the column table: header from the model, rows on the output grid, the closed form") {
  TempCsv csv;
  const capstan::sim::Result r = run(Oscillator{}, request(1.05, 0.1, capstan::sim::Integrator::dopri5), csv);
  CHECK(r.ok());
  CHECK(capstan::sim::report(r, csv.path).empty());
  CHECK(capstan::sim::exitStatus(r) == 0);
  const auto rows = readCsv(csv.path);
  REQUIRE(rows.size() == 13);  // header, t = 0, 0.1, ..., 1.0, 1.05
  CHECK(rows[0] == std::vector<std::string>{"time", "spring.q[0]", "spring.u[0]", "x2", "kinetic_energy",
                                            "potential_energy"});
  CHECK(r.rows == 12);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const double t = std::stod(rows[i][0]);
    CHECK(t == doctest::Approx(i < 12 ? 0.1 * double(i - 1) : 1.05).epsilon(1e-14));
    CHECK(std::abs(std::stod(rows[i][1]) - std::cos(t)) < kTolerance);
    CHECK(std::abs(std::stod(rows[i][2]) + std::sin(t)) < kTolerance);
    CHECK(std::abs(std::stod(rows[i][3]) - std::cos(t) * std::cos(t)) < kTolerance);
    CHECK(std::abs(std::stod(rows[i][4]) + std::stod(rows[i][5]) - 0.5) < kTolerance);
  }
  // The names alone, with units, as any other consumer takes them.
  std::vector<std::string> units;
  capstan::sim::columnNames(Oscillator{}, {}, [&](std::string_view, std::string_view unit) { units.emplace_back(unit); });
  CHECK(units == std::vector<std::string>{"s", "m", "m/s", "m2", "J", "J"});
}

TEST_CASE("the column table in memory: the CSV's names and rows, the doubles themselves") {
  TempCsv csv;
  const capstan::sim::Request req = request(1.05, 0.1, capstan::sim::Integrator::dopri5);
  run(Oscillator{}, req, csv);
  const auto rows = readCsv(csv.path);
  capstan::sim::RowTable table;
  const capstan::sim::Result r = capstan::sim::simulate(Oscillator{}, req, table);
  CHECK(r.ok());
  CHECK(r.rows == 12);
  CHECK(table.rows() == 12);
  CHECK(table.names() == rows[0]);
  REQUIRE(table.values().size() == 12 * rows[0].size());
  for (std::size_t i = 1; i < rows.size(); ++i)
    for (std::size_t c = 0; c < rows[0].size(); ++c) {
      const double v = table.values()[(i - 1) * rows[0].size() + c];
      CHECK(std::abs(v - std::stod(rows[i][c])) <= 1e-14 * std::max(1.0, std::abs(v)));  // the CSV's %.15g
    }
}

TEST_CASE("a request without --dt: the default interval, 500 rows") {
  std::string error;
  const auto r = capstan::sim::fromArguments({"--t-end=2"}, error);
  REQUIRE(r);
  CHECK(r->run.loop.dt == capstan::sim::defaultInterval(2.0));
  CHECK(capstan::sim::defaultInterval(2.0) == 2.0 / 500);
  CHECK(capstan::sim::requestProblem(r->run).empty());
  capstan::sim::Request bad = r->run;
  bad.loop.tolerance = 1e-20;
  CHECK(capstan::sim::requestProblem(bad).find("below what dopri5 can meet") != std::string::npos);
  bad = r->run;
  bad.loop.tEnd = -1;
  CHECK(!capstan::sim::requestProblem(bad).empty());
}

TEST_CASE("parameters by name: one way to set them, the first unknown name returned") {
  Oscillator m;
  CHECK(capstan::sim::setParameter(m, "nanAfter", 0.5));
  CHECK(m.nanAfter == 0.5);
  CHECK(capstan::sim::applySettings(m, {{"nanAfter", 2.0}, {"stiffness", 1.0}}) == "stiffness");
  CHECK(m.nanAfter == 2.0);
}

TEST_CASE("every integrator runs through the one loop") {
  for (const capstan::sim::IntegratorInfo& i : capstan::sim::kIntegrators) {
    if (!capstan::sim::builtWith(i.integrator)) continue;
    CAPTURE(i.name);
    TempCsv csv;
    const capstan::sim::Result r = run(Oscillator{}, request(0.5, 0.01, i.integrator), csv);
    CHECK(r.ok());
    CHECK(r.rows == 51);
    CHECK(!r.status.statistics.empty());
    const auto rows = readCsv(csv.path);
    const double error = i.integrator == capstan::sim::Integrator::euler ? 1e-2 : 1e-6;  // euler: first order
    CHECK(std::abs(std::stod(rows.back()[1]) - std::cos(0.5)) < error);
  }
}

TEST_CASE("a stop request ends the run on a whole row, with the signal") {
  TempCsv csv;
  capstan::sim::Request r = request(10.0, 0.1, capstan::sim::Integrator::rk4);
  volatile std::sig_atomic_t stop = 15;
  r.loop.stop = &stop;
  const capstan::sim::Result result = run(Oscillator{}, r, csv);
  CHECK(result.status.signal == 15);
  CHECK(result.rows == 1);
  CHECK(capstan::sim::exitStatus(result) == 143);
  CHECK(capstan::sim::report(result, csv.path) == "capstan: interrupted at t = 0; 1 row written\n");
}

TEST_CASE("a non-finite udot fails the run and keeps its first state and the rows before it") {
  TempCsv csv;
  Oscillator model;
  model.nanAfter = 0.33;
  const capstan::sim::Result r = run(model, request(1.0, 0.1, capstan::sim::Integrator::rk4), csv);
  CHECK(!r.ok());
  CHECK(capstan::sim::exitStatus(r) == 1);
  REQUIRE(r.nonFinite);
  CHECK(r.nonFinite->t > 0.33);
  CHECK(r.nonFinite->t <= 0.4);
  CHECK(r.nonFinite->q.size() == 1);
  CHECK(r.rows == 4);  // t = 0, 0.1, 0.2, 0.3
  CHECK(readCsv(csv.path).size() == 5);
  CHECK(capstan::sim::report(r, csv.path).find("non-finite state") != std::string::npos);
}

TEST_CASE("the model stops the run: a bushing at gimbal lock, a cable path lost") {
  {
    TempCsv csv;
    Faulty model;
    model.bushing = true;
    const capstan::sim::Result r = run(model, request(3.0, 0.1, capstan::sim::Integrator::rk4), csv);
    CHECK(r.stopped.find("bushing `mount` is at gimbal lock") != std::string::npos);
    CHECK(r.rows == 21);  // cos t >= -0.5 up to t = 2.0944
    const auto rows = readCsv(csv.path);
    CHECK(rows[0][4] == "rope.length");  // after the outputs
    CHECK(rows[0][6] == "rope.tension");
    CHECK(std::stod(rows[1][4]) == 3.0);
  }
  {
    TempCsv csv;
    Faulty model;
    model.cable = true;
    const capstan::sim::Result r = run(model, request(3.0, 0.1, capstan::sim::Integrator::dopri5), csv);
    CHECK(r.stopped.find("cable `rope` lost") != std::string::npos);
    CHECK(r.rows == 16);  // cos t >= 0 up to t = 1.5708
    CHECK(capstan::sim::report(r, csv.path).find("; 16 rows written") != std::string::npos);
  }
}

TEST_CASE("a write that fails says why and how many rows went out") {
  const int fd = ::open("/dev/full", O_WRONLY);
  if (fd < 0) return;  // no /dev/full here
  capstan::sim::Result r;
  {
    capstan::sim::RowWriter out(fd);
    r = capstan::sim::simulate(Oscillator{}, request(1.0, 0.1, capstan::sim::Integrator::rk4), out);
  }
  ::close(fd);
  CHECK(!r.ok());
  CHECK(r.rows == 0);
  CHECK(capstan::sim::report(r, "/dev/full") ==
        "capstan: error: cannot write `/dev/full`: No space left on device; 0 rows written\n");
}

TEST_CASE("a write cut short by a file size limit leaves the file on a whole row") {
  TempCsv csv;
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  const rlimit small{100, old.rlim_max};
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  long rows = 0;
  bool written = true;
  {
    capstan::sim::RowWriter out(csv.fd, 40);  // flushes once 40 bytes of rows are buffered
    out.text("time,spring.q[0]");
    out.endRow(false);
    for (int k = 0; k < 20; ++k) {
      out.number(0.125 * k);
      out.number(1.0 / 3.0);
      out.endRow();
    }
    written = out.flush();
    rows = out.rowsWritten();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  CHECK(!written);
  const auto lines = readCsv(csv.path);  // checks that the file ends on a whole row
  REQUIRE(lines.size() >= 2);
  CHECK(long(lines.size()) - 1 == rows);
  for (std::size_t i = 1; i < lines.size(); ++i) CHECK(lines[i].size() == 2);
}

TEST_CASE("the integrators' names: one table") {
  CHECK(capstan::sim::integratorList() == "rk4, euler, dopri5 or cvode");
  for (const capstan::sim::IntegratorInfo& i : capstan::sim::kIntegrators)
    CHECK(capstan::sim::parseIntegrator(i.name) == i.integrator);
  CHECK(!capstan::sim::parseIntegrator("rk45"));
}

TEST_CASE("a simulate request travels to the driver exactly") {
  capstan::sim::SimulateRequest r;
  r.run.loop.tEnd = 0.1 + 0.2;
  r.run.loop.dt = 1.0 / 3.0;
  r.run.loop.integrator = capstan::sim::Integrator::euler;
  r.run.loop.tolerance = 1e-9;
  r.run.columns.constraintErrors = true;
  r.run.baumgarte = 0.05;
  r.run.exactJacobian = false;
  r.output = "out dir/traj.csv";
  r.stats = true;
  r.faultFile = "/tmp/fault.txt";
  r.settings = {{"world.gravity[1]", -9.80665}, {"L", 1e-300}};
  const std::vector<std::string> args = capstan::sim::toArguments(r);
  std::string error;
  const auto back = capstan::sim::fromArguments(std::vector<std::string_view>(args.begin(), args.end()), error);
  REQUIRE(back);
  CHECK(back->run.loop.tEnd == r.run.loop.tEnd);
  CHECK(back->run.loop.dt == r.run.loop.dt);
  CHECK(back->run.loop.integrator == r.run.loop.integrator);
  CHECK(back->run.loop.tolerance == r.run.loop.tolerance);
  CHECK(back->run.columns.constraintErrors);
  CHECK(back->run.baumgarte == r.run.baumgarte);
  CHECK(back->run.constraintTolerance == 0.0);
  CHECK(!back->run.exactJacobian);
  CHECK(back->output == r.output);
  CHECK(back->stats);
  CHECK(!back->progress);
  CHECK(back->faultFile == r.faultFile);
  CHECK(back->settings == r.settings);

  CHECK(!capstan::sim::fromArguments({"--integrator=rk45"}, error));
  CHECK(error == "unknown integrator `rk45`; use rk4, euler, dopri5 or cvode");
  CHECK(!capstan::sim::fromArguments({"--dt=0.1x"}, error));
  CHECK(error == "`--dt=0.1x` is not a number");
  CHECK(!capstan::sim::fromArguments({"--frobnicate"}, error));
  CHECK(error == "unknown argument `--frobnicate`");
}

TEST_CASE("a state refused in a trial step shortens the step, not the run") {
  // The path is lost where |u| > 1.02, which long trial steps reach and
  // the solution (|u| <= 1) never does.
  TempCsv csv;
  Faulty model;
  model.speedLimit = 1.02;
  capstan::sim::Request r = request(20.0, 1.0, capstan::sim::Integrator::dopri5);
  r.loop.tolerance = 1e-3;  // long steps, whose stages overshoot
  const capstan::sim::Result result = run(model, r, csv);
  CHECK(model.failures > 0);  // else this test tests nothing
  CHECK(result.ok());
  CHECK(result.stopped.empty());
  CHECK(result.rows == 21);
}

TEST_CASE("a position too large to move at the tolerance is refused before the run") {
  TempCsv csv;
  capstan::sim::RowWriter out(csv.fd);
  Oscillator::Q q;
  Oscillator::U u;
  q[0] = 1e308;
  u[0] = 0.0;
  const capstan::sim::Result r = capstan::sim::simulate(Oscillator{}, q, u, request(1.0, 0.1, capstan::sim::Integrator::rk4), out);
  CHECK(!r.ok());
  CHECK(r.rows == 0);
  CHECK(r.stopped.find("coordinate `spring.q[0]` starts at 1e+308, where double precision resolves only steps of 2.2e+292") !=
        std::string::npos);
  q[0] = 1e6;  // 2.2e-10 resolution: fine at the tolerance 1e-8
  capstan::sim::Request loose = request(0.1, 0.1, capstan::sim::Integrator::rk4);
  loose.loop.tolerance = 1e-8;
  CHECK(capstan::sim::simulate(Oscillator{}, q, u, loose, out).ok());
}

TEST_CASE("a wall-clock limit stops the run at a model evaluation, its rows kept") {
  TempCsv csv;
  capstan::sim::Request r = request(1e9, 1.0, capstan::sim::Integrator::rk4);
  r.wallClockLimit = 0.2;
  const auto start = std::chrono::steady_clock::now();
  const capstan::sim::Result result = run(Oscillator{}, r, csv);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(took < 5.0);
  CHECK(capstan::sim::exitStatus(result) == 1);
  CHECK(result.stopped.find("the simulation ran longer than 0.2 s (`--timeout`) and was stopped at t = ") == 0);
  CHECK(result.rows > 1);
  CHECK(static_cast<long>(readCsv(csv.path).size()) == result.rows + 1);
}
