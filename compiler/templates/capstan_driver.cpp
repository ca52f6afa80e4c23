// The program `capstan simulate`, `capstan eval` and `capstan bench` build
// around a generated model header. Compiled with
// -DCAPSTAN_MODEL_CLASS=Name -include model.hpp; needs Eigen and the runtime's
// capstan/integrators.hpp.
//
//   driver simulate T_END DT INTEGRATOR TOL OUT.csv PROGRESS [OPTION|NAME=VALUE]...
//   driver eval STATE.txt [NAME=VALUE]...
//   driver bench STATE.txt SECONDS [NAME=VALUE]...
//
// INTEGRATOR `cvode` needs a driver built with -DCAPSTAN_CVODE (and SUNDIALS:
// -lsundials_cvode); with -DCAPSTAN_DERIVATIVES too (and no constraints),
// CVODE gets the exact Jacobian from forwardDynamicsDerivatives.
//
// A model with constraints is built with -DCAPSTAN_CONSTRAINTS (and
// capstan/constraint_solver.hpp): udot and the multipliers then come from
// the constraint solver, the initial state is assembled, and simulate
// projects q and u onto the constraints after every step. Simulate's
// OPTIONs: --stats (the integrator's statistics on stderr after the run),
// --constraint-errors (CSV columns NAME.position_error and
// NAME.velocity_error: each constraint's largest |error|), --baumgarte=T
// (Baumgarte stabilization with time constant T instead of projection),
// --constraint-tol=X (projection tolerance).
//
// STATE.txt (written by capstan): `time T`, `q v...`, `u v...`; what is absent
// keeps the model's q0/u0. `fext v...` (6 per body: [n; f] about the body
// origin, in World) makes eval call forwardDynamics with these external
// forces; without it eval calls forwardDynamics without them. Both overloads
// are in every driver, so that an eval with forces and one without share one
// build. Eval and bench print `key v...` lines (full precision) that capstan
// turns into JSON. Errors: `capstan: error: ...` on
// stderr, exit status 1. SIGINT or SIGTERM during `simulate` ends the run on a
// whole row: `capstan: interrupted at t = ...; N rows written` on stderr,
// exit status 128 + the signal.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <csignal>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capstan/force_elements.hpp"
#include "capstan_sim_loop.hpp"
#ifdef CAPSTAN_CONSTRAINTS
#include "capstan/constraint_solver.hpp"
#endif

namespace {

using Model = capstan_models::CAPSTAN_MODEL_CLASS;

// Sets the NAME=VALUE parameter arguments (options, `--...`, are read elsewhere).
bool applySettings(Model& model, int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) == 0) continue;
    const auto eq = a.find('=');
    double* slot = eq == std::string::npos ? nullptr : model.parameter(a.substr(0, eq));
    if (!slot) {
      std::cerr << "capstan: error: unknown parameter setting `" << a << "`\n";
      return false;
    }
    *slot = std::strtod(a.c_str() + eq + 1, nullptr);
  }
  return true;
}

void printRow(std::FILE* out, const char* key, const double* v, int n) {
  std::fprintf(out, "%s", key);
  for (int i = 0; i < n; ++i) std::fprintf(out, " %.17g", v[i]);
  std::fprintf(out, "\n");
}

// A bushing within about 0.458 degrees of gimbal lock: the evaluation stops
// as Drake's LinearBushingRollPitchYaw does (thrown through the integrator).
struct GimbalLock {
  std::string message;
};

// Throws GimbalLock if a bushing of the model is at gimbal lock (a template,
// so that models without bushings need not have gimbalLock()).
template <class M>
void checkGimbalLock([[maybe_unused]] const M& model, [[maybe_unused]] double t, [[maybe_unused]] const typename M::Q& q,
                     [[maybe_unused]] const typename M::U& u) {
  if constexpr (requires { M::nbushings; }) {
    double pitch = 0.0;
    const int k = model.gimbalLock(q, u, pitch);
    if (k >= 0) throw GimbalLock{capstan::gimbalLockMessage(M::bushingNames[static_cast<std::size_t>(k)], pitch, t)};
  }
}

// A cable whose path could not be found: the run stops, as at gimbal lock
// (thrown through the integrator), with the rows written so far kept.
struct CableFailure {
  std::string message;
};

template <class M>
constexpr bool kHasCables = requires { M::ncables; };

// Throws CableFailure if the last evaluation of the model could not solve a
// cable's path: when, which cable and obstacle, the solver's residual.
template <class M>
void checkCables([[maybe_unused]] const M& model, [[maybe_unused]] double t) {
  if constexpr (kHasCables<M>) {
    if (model.cableFailure() >= 0) throw CableFailure{model.cableFailureMessage(t)};
  }
}

// eval's cable rows, per cable: `cable length lengthDot tension energy power`,
// `cable_forces` (6 per body: [n; f] about the body origin, in World),
// `cable_tau` (nu: the generalized forces, sum_B J_WB^T F_B with the
// generated body Jacobians), then per obstacle `cable_obstacle active P[3]
// Q[3] arcLength wrapAngle separation`.
template <class M>
int printCables([[maybe_unused]] std::FILE* out, [[maybe_unused]] const M& model, [[maybe_unused]] double t,
                [[maybe_unused]] const typename M::Q& q, [[maybe_unused]] const typename M::U& u) {
  if constexpr (kHasCables<M>) {
    typename M::ExternalForces all;
    model.updateCables(t, q, u, all);
    try {
      checkCables(model, t);
    } catch (const CableFailure& e) {
      std::cerr << "capstan: error: " << e.message << "\n";
      return 1;
    }
    for (int c = 0; c < M::ncables; ++c) {
      const typename M::CableValues& v = model.cableValues(c);
      const double row[5] = {v.length, v.lengthDot, v.tension, v.energy, v.power};
      printRow(out, "cable", row, 5);
      typename M::ExternalForces fext;
      model.cableForces(c, t, q, u, fext);
      std::vector<double> forces;
      typename M::U tau = M::U::Zero();
      for (int b = 0; b < M::nb; ++b) {
        const auto& F = fext[static_cast<std::size_t>(b)];
        forces.insert(forces.end(), F.data(), F.data() + 6);
        typename M::FrameJacobian J;
        model.frameJacobian(b, q, J);  // frames 0 .. nb-1 are the bodies
        tau += J.transpose() * F;
      }
      printRow(out, "cable_forces", forces.data(), static_cast<int>(forces.size()));
      printRow(out, "cable_tau", tau.data(), M::nu);
      for (const auto& o : model.cablePath(c).obstacles) {
        const double r[10] = {o.active ? 1.0 : 0.0, o.P.p_W[0], o.P.p_W[1], o.P.p_W[2], o.Q.p_W[0], o.Q.p_W[1],
                              o.Q.p_W[2], o.arcLength, o.wrapAngle, o.separation};
        printRow(out, "cable_obstacle", r, 10);
      }
    }
  }
  return 0;
}

// eval's `F_A_A` and `F_C_C` rows, one pair per bushing.
template <class M>
void printBushings(std::FILE* out, [[maybe_unused]] const M& model, [[maybe_unused]] const typename M::Q& q,
                   [[maybe_unused]] const typename M::U& u) {
  if constexpr (requires { M::nbushings; }) {
    typename M::BushingStates states;
    model.bushingStates(q, u, states);
    for (const auto& b : states) {
      printRow(out, "F_A_A", b.F_A_A.data(), 6);
      printRow(out, "F_C_C", b.F_C_C.data(), 6);
    }
  } else {
    (void)out;
  }
}

#ifdef CAPSTAN_CONSTRAINTS
using Solver = capstan::ConstraintSolver<Model>;

// Each constraint's rows, as the solver takes them (enable/disable by index).
std::vector<capstan::ConstraintRowRange> constraintRowRanges() {
  std::vector<capstan::ConstraintRowRange> rows;
  for (const auto& c : Model::constraintInfo) rows.push_back({c.holonomicRow, c.holonomic, c.nonholonomicRow, c.nonholonomic});
  return rows;
}

// The name of the constraint that owns position-error row `row`.
std::string constraintOfRow(int row) {
  for (const auto& c : Model::constraintInfo)
    if (row >= c.holonomicRow && row < c.holonomicRow + c.holonomic) return std::string(c.name);
  return "?";
}

// eval's `contact_R`, `contact_p` and `separation` rows, one set per
// contact (a template, so that models without contacts need not have
// contactFrames()).
template <class M>
void printContacts([[maybe_unused]] std::FILE* out, [[maybe_unused]] const M& model,
                   [[maybe_unused]] const typename M::Q& q) {
  if constexpr (requires { M::ncontacts; }) {
    typename M::ContactFrames frames;
    model.contactFrames(q, frames);
    for (const auto& f : frames) {
      const Eigen::Matrix<double, 3, 3, Eigen::RowMajor> R = f.R_WC;
      printRow(out, "contact_R", R.data(), 9);
      printRow(out, "contact_p", f.p_WC.data(), 3);
      printRow(out, "separation", &f.separation, 1);
    }
  }
}

// A projection that failed, with the time it happened at.
struct ProjectionStopped {
  std::string message;
};
#endif

// The generated model as the runtime integrators' mechanical system
// (capstan/integrators.hpp), with fixed-size q and u.
struct MechanicalModel {
  using VectorQ = Model::Q;
  using VectorU = Model::U;
  explicit MechanicalModel(const Model& m) : model(m) {}
  const Model& model;
  int nq() const { return Model::nq; }
  int nu() const { return Model::nu; }
  void qdot(const VectorQ& q, const VectorU& u, VectorQ& qd) const { model.qdot(q, u, qd); }
  void udot(double t, const VectorQ& q, const VectorU& u, VectorU& ud) const {
    // A stage state made of an earlier non-finite udot (recorded in
    // `fault`): NaN again, for the integrator to reject the step, rather
    // than a cable path or a bushing asked to make sense of it.
    if (!q.allFinite() || !u.allFinite()) {
      ud.setConstant(std::numeric_limits<double>::quiet_NaN());
      return;
    }
    checkGimbalLock(model, t, q, u);
    lastTime = t;
#ifdef CAPSTAN_CONSTRAINTS
    solver->accelerations(t, q, u, ud, lambda);
#else
    model.forwardDynamics(t, q, u, ud);
#endif
    checkCables(model, t);
    if (!fault.seen && !ud.allFinite() && q.allFinite() && u.allFinite()) fault = {true, t, q, u};
  }
#ifdef CAPSTAN_CONSTRAINTS
  // After each step: the quaternions normalized and, unless Baumgarte
  // stabilizes instead, q and u projected onto the constraints.
  void project(VectorQ& q, VectorU& u) const {
    Model::normalizeQuaternions(q);
    if (!projecting) return;
    try {
      solver->project(q, u);
    } catch (const capstan::ProjectionFailure& e) {
      char t[32];
      std::snprintf(t, sizeof t, "%.17g", lastTime);
      throw ProjectionStopped{"projecting onto the constraints failed after the step to t = " + std::string(t) +
                              ": constraint `" + constraintOfRow(e.row) + "`: " + e.what()};
    }
  }
  Solver* solver = nullptr;
  bool projecting = true;
  mutable Model::ConstraintVector lambda;
#else
  void normalize(VectorQ& q) const { Model::normalizeQuaternions(q); }
#endif
  mutable double lastTime = 0.0;
  // The first finite state whose udot was not (an integrator may reject
  // that step and go on): where capstan looks for the force law that made
  // it, if the run fails ($CAPSTAN_FAULT_FILE).
  struct Fault {
    bool seen = false;
    double t = 0;
    VectorQ q;
    VectorU u;
  };
  mutable Fault fault;
#if defined(CAPSTAN_CVODE) && defined(CAPSTAN_DERIVATIVES) && !defined(CAPSTAN_CONSTRAINTS)
  // CVODE's exact Jacobian (capstan/integrators.hpp, FirstOrder::jacobian):
  // d udot / dq along the tangent space and d udot / du, generated (those
  // of the unconstrained dynamics: not with constraints).
  using MatrixU = Model::MassMatrix;
  // Once per Jacobian evaluation, not per step: its M^-1 is a local.
  void udotDerivatives(double t, const VectorQ& q, const VectorU& u, MatrixU& dudot_dq, MatrixU& dudot_du) const {
    MatrixU dudot_dtau;
    model.forwardDynamicsDerivatives(t, q, u, dudot_dq, dudot_du, dudot_dtau);
  }
#endif
  // The CSV column of state entry i (x = [q; u]).
  std::string coordinateName(int i) const {
    const auto name = i < Model::nq ? Model::qNames[static_cast<std::size_t>(i)]
                                    : Model::uNames[static_cast<std::size_t>(i - Model::nq)];
    return std::string(name);
  }
};


// The CSV's cable columns (SPEC section 6): per cable `NAME.length` (m),
// `NAME.length_dot` (m/s) and `NAME.tension` (N), after the outputs.
template <class M>
void cableColumns([[maybe_unused]] capstan_sim::RowWriter& out) {
  if constexpr (kHasCables<M>) {
    for (std::string_view n : M::cableNames)
      for (const char* what : {".length", ".length_dot", ".tension"}) {
        const std::string column = std::string(n) + what;
        out.text(column.data(), column.size());
      }
  }
}
// Their values at a recorded state (each path solved there, continuing
// from the last solution; a failure stops the run like one in the dynamics).
template <class M>
void cableValues([[maybe_unused]] capstan_sim::RowWriter& out, [[maybe_unused]] const M& model,
                 [[maybe_unused]] double t, [[maybe_unused]] const typename M::Q& q,
                 [[maybe_unused]] const typename M::U& u) {
  if constexpr (kHasCables<M>) {
    typename M::ExternalForces fext;
    model.updateCables(t, q, u, fext);
    checkCables(model, t);
    for (int c = 0; c < M::ncables; ++c) {
      const typename M::CableValues& v = model.cableValues(c);
      out.number(v.length);
      out.number(v.lengthDot);
      out.number(v.tension);
    }
  }
}

volatile std::sig_atomic_t g_stop = 0;

extern "C" void onStop(int sig) { g_stop = sig; }

// SIGINT/SIGTERM stop the run at the next row. On Linux the driver also goes
// when capstan goes, however capstan ended (even SIGKILL).
void stopOnSignals() {
  struct sigaction sa {};
  sa.sa_handler = onStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
#if defined(__linux__)
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) g_stop = SIGTERM;  // capstan was already gone
#endif
}

int simulate(Model& model, int argc, char** argv) {
  capstan_sim::LoopOptions opt;
  opt.tEnd = std::strtod(argv[2], nullptr);
  opt.dt = std::strtod(argv[3], nullptr);
  opt.integrator = argv[4];
  opt.tolerance = std::strtod(argv[5], nullptr);
  const std::string outPath = argv[6];
  const bool progress = std::string(argv[7]) == "1";
  if (!applySettings(model, argc, argv, 8)) return 1;
  bool stats = false, constraintErrors = false;
  [[maybe_unused]] double baumgarte = 0.0, constraintTolerance = 0.0;
  for (int i = 8; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--stats") stats = true;
    else if (a == "--constraint-errors") constraintErrors = true;
    else if (a.rfind("--baumgarte=", 0) == 0) baumgarte = std::strtod(a.c_str() + 12, nullptr);
    else if (a.rfind("--constraint-tol=", 0) == 0) constraintTolerance = std::strtod(a.c_str() + 17, nullptr);
    else if (a.rfind("--", 0) == 0) {
      std::cerr << "capstan: error: unknown driver option `" << a << "`\n";
      return 1;
    }
  }
  stopOnSignals();
  opt.stop = &g_stop;
  const int fd = outPath == "-" ? STDOUT_FILENO : ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::cerr << "capstan: error: cannot write `" << outPath << "`\n";
    return 1;
  }
  capstan_sim::RowWriter out(fd);
  out.text("time", 4);
  for (auto n : Model::qNames) out.text(n.data(), n.size());
  for (auto n : Model::uNames) out.text(n.data(), n.size());
  for (auto n : Model::outputNames) out.text(n.data(), n.size());
  cableColumns<Model>(out);
  out.text("kinetic_energy", 14);
  out.text("potential_energy", 16);
#ifdef CAPSTAN_CONSTRAINTS
  if (constraintErrors) {
    for (const auto& c : Model::constraintInfo) {
      const std::string name(c.name);
      for (const char* what : {".position_error", ".velocity_error"}) {
        const std::string column = name + what;
        out.text(column.data(), column.size());
      }
    }
  }
#else
  if (constraintErrors) {
    std::cerr << "capstan: error: the model has no constraints\n";
    return 1;
  }
#endif
  out.endRow(false);
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  MechanicalModel system(model);
#ifdef CAPSTAN_CONSTRAINTS
  capstan::ConstraintSettings settings;
  if (baumgarte > 0) settings.baumgarteTimeConstant = baumgarte;
  if (constraintTolerance > 0) settings.tolerance = constraintTolerance;
  Solver solver(model, constraintRowRanges(), settings);
  system.solver = &solver;
  system.projecting = !(baumgarte > 0);
  // Assembly: the nearest state (to first order) that satisfies the
  // constraints, from the model's q0 and u0.
  try {
    solver.project(q, u);
  } catch (const capstan::ProjectionFailure& e) {
    std::cerr << "capstan: error: the initial state cannot be assembled: constraint `" << constraintOfRow(e.row)
              << "`: " << e.what() << "\n";
    return 1;
  }
  Model::PositionErrors perr;
  Model::ConstraintVector verr;
#endif
  int lastPercent = -1;
  capstan_sim::LoopStatus status;
  std::string stopped;  // why the model stopped the run
  try {
    status = capstan_sim::simulate(
        system, q, u, opt,
        [&](double t, const auto& state) {
          const Model::Q qs = state.template head<Model::nq>();
          const Model::U us = state.template segment<Model::nu>(Model::nq);
          Model::Outputs o;
          model.outputs(t, qs, us, o);
          out.number(t);
          for (int i = 0; i < Model::nq + Model::nu; ++i) out.number(state[i]);
          for (double Model::Outputs::*field : Model::outputFields) out.number(o.*field);
          cableValues(out, model, t, qs, us);
          out.number(model.kineticEnergy(qs, us));
          out.number(model.potentialEnergy(qs));
#ifdef CAPSTAN_CONSTRAINTS
          if (constraintErrors) {
            model.constraintPositionErrors(qs, perr);
            model.constraintVelocityErrors(qs, us, verr);
            for (const auto& c : Model::constraintInfo) {
              out.number(c.holonomic > 0 ? perr.segment(c.holonomicRow, c.holonomic).cwiseAbs().maxCoeff() : 0.0);
              double v = c.holonomic > 0 ? verr.segment(c.holonomicRow, c.holonomic).cwiseAbs().maxCoeff() : 0.0;
              if (c.nonholonomic > 0) v = std::max(v, verr.segment(c.nonholonomicRow, c.nonholonomic).cwiseAbs().maxCoeff());
              out.number(v);
            }
          }
#endif
          out.endRow();
        },
        [&](double fraction) {
          const int percent = static_cast<int>(fraction * 100);
          if (!progress || percent == lastPercent) return;
          lastPercent = percent;
          const int width = 40, filled = percent * width / 100;
          std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                       std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), percent);
          std::fflush(stderr);
        });
  } catch (const GimbalLock& e) {
    stopped = e.message;
  } catch (const CableFailure& e) {
    stopped = e.message;
  }
#ifdef CAPSTAN_CONSTRAINTS
  catch (const ProjectionStopped& e) {
    stopped = e.message;
  }
#endif
  if (progress) std::fprintf(stderr, "\n");
  if (stats && !status.statistics.empty()) std::cerr << capstan_sim::statisticsText(opt.integrator, status);
  // The rows written so far stay: flushed and closed before reporting.
  const bool written = out.flush();
  if (fd != STDOUT_FILENO) ::close(fd);
  if (status.signal != 0) {
    std::cerr << "capstan: " << capstan_sim::interruptedMessage(status.time, out.rowsWritten()) << "\n";
    return 128 + status.signal;
  }
  if (!written) {
    std::cerr << "capstan: error: cannot write `" << outPath << "`\n";
    return 1;
  }
  if (!stopped.empty()) {
    std::cerr << "capstan: error: " << stopped << "; " << out.rowsWritten() << " rows written\n";
    return 1;
  }
  if (!status.ok) {
    std::cerr << "capstan: error: " << status.message << "\n";
    const char* faultFile = std::getenv("CAPSTAN_FAULT_FILE");
    if (system.fault.seen && faultFile && *faultFile) {  // as the state file of `eval`
      if (std::FILE* f = std::fopen(faultFile, "w")) {
        std::fprintf(f, "time %.17g\nq", system.fault.t);
        for (int i = 0; i < Model::nq; ++i) std::fprintf(f, " %.17g", system.fault.q[i]);
        std::fprintf(f, "\nu");
        for (int i = 0; i < Model::nu; ++i) std::fprintf(f, " %.17g", system.fault.u[i]);
        std::fprintf(f, "\n");
        std::fclose(f);
      }
    }
    return 1;
  }
  return 0;
}

// Reads STATE.txt into t, q, u (which hold the initial state on entry) and,
// when it has them, the external forces (`external` set).
bool readState(const char* path, double& t, Model::Q& q, Model::U& u, Model::ExternalForces* fext = nullptr,
               bool* external = nullptr) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "capstan: error: cannot read `" << path << "`\n";
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string key;
    ss >> key;
    if (key == "time") ss >> t;
    if (key == "q")
      for (int i = 0; i < Model::nq; ++i) ss >> q[i];
    if (key == "u")
      for (int i = 0; i < Model::nu; ++i) ss >> u[i];
    if (key == "fext" && fext && external) {
      for (auto& F : *fext)
        for (int k = 0; k < 6; ++k) ss >> F[k];
      *external = true;
    }
  }
  return true;
}

int eval(Model& model, int argc, char** argv) {
  if (!applySettings(model, argc, argv, 3)) return 1;
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  double t = 0;
  Model::ExternalForces fext{};
  bool external = false;
  if (!readState(argv[2], t, q, u, &fext, &external)) return 1;
  try {
    checkGimbalLock(model, t, q, u);
  } catch (const GimbalLock& e) {
    std::cerr << "capstan: error: " << e.message << "\n";
    return 1;
  }
  Model::Q qd;
  Model::U ud;
  Model::MassMatrix M;
  Model::BodyPoses poses;
  Model::BodyVelocities vel;
  Model::Outputs o;
  model.qdot(q, u, qd);
  if (external)
    model.forwardDynamics(t, q, u, fext, ud);
  else
    model.forwardDynamics(t, q, u, ud);
#ifdef CAPSTAN_CONSTRAINTS
  // The exact acceleration-level solution (no Baumgarte terms, no projection).
  Solver solver(model, constraintRowRanges());
  Model::ConstraintVector lambda;
  solver.correct(q, u, ud, lambda);
#endif
  model.massMatrix(q, M);
  model.bodyPoses(q, poses);
  model.bodyVelocities(q, u, vel);
  model.outputs(t, q, u, o);
  std::FILE* out = stdout;
  printRow(out, "q", q.data(), Model::nq);
  printRow(out, "u", u.data(), Model::nu);
  printRow(out, "qdot", qd.data(), Model::nq);
  printRow(out, "udot", ud.data(), Model::nu);
  const double ke = model.kineticEnergy(q, u), pe = model.potentialEnergy(q);
  printRow(out, "kinetic_energy", &ke, 1);
  printRow(out, "potential_energy", &pe, 1);
  // Row-major; dynamic size, since a large model's M exceeds Eigen's
  // fixed-size limit.
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Mr = M;
  printRow(out, "mass_matrix", Mr.data(), Model::nu * Model::nu);
  for (int b = 0; b < Model::nb; ++b) {
    const auto& X = poses[static_cast<std::size_t>(b)];
    const Eigen::Matrix<double, 3, 3, Eigen::RowMajor> R = X.R_WB;
    printRow(out, "R_WB", R.data(), 9);
    printRow(out, "p_WB", X.p_WB.data(), 3);
    printRow(out, "w_WB", vel[static_cast<std::size_t>(b)].w_WB.data(), 3);
    printRow(out, "v_WB", vel[static_cast<std::size_t>(b)].v_WB.data(), 3);
  }
  for (int f = 0; f < Model::nf; ++f) {
    Model::FrameJacobian J;
    Model::SpatialVector a;
    model.frameJacobian(f, q, J);
    model.frameJacobianDotU(f, q, u, a);
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Jr = J;  // (6 x nu, any nu)
    printRow(out, "J", Jr.data(), 6 * Model::nu);
    printRow(out, "JdotU", a.data(), 6);
  }
  printBushings(out, model, q, u);
#ifdef CAPSTAN_CONSTRAINTS
  {
    Model::PositionErrors perr;
    Model::ConstraintVector verr, gamma;
    Model::ConstraintJacobian G;
    model.constraintPositionErrors(q, perr);
    model.constraintVelocityErrors(q, u, verr);
    model.constraintJacobian(q, G);
    model.constraintBias(q, u, gamma);
    const Model::ConstraintVector aerr = G * ud - gamma;
    printRow(out, "position_errors", perr.data(), Model::mp);
    printRow(out, "velocity_errors", verr.data(), Model::m);
    printRow(out, "acceleration_errors", aerr.data(), Model::m);
    printRow(out, "multipliers", lambda.data(), Model::m);
    const double rank = solver.rank();
    printRow(out, "constraint_rank", &rank, 1);
    printContacts(out, model, q);
  }
#endif
  if (printCables(out, model, t, q, u) != 0) return 1;
#ifdef CAPSTAN_DERIVATIVES
  {
    // Only a header compiled with --derivatives has forwardDynamicsDerivatives.
    Model::MassMatrix dq, du, dtau;
    model.forwardDynamicsDerivatives(t, q, u, dq, du, dtau);
    for (const auto& [name, m] : {std::pair{"dudot_dq", &dq}, std::pair{"dudot_du", &du}, std::pair{"dudot_dtau", &dtau}}) {
      const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r = *m;
      printRow(out, name, r.data(), Model::nu * Model::nu);
    }
  }
#endif
  std::array<double, Model::outputFields.size()> ov{};
  for (std::size_t i = 0; i < ov.size(); ++i) ov[i] = o.*Model::outputFields[i];
  printRow(out, "outputs", ov.data(), static_cast<int>(ov.size()));
  return 0;
}

// ---------------------------------------------------------------- bench
// Tells the optimizer that `value` may be read and changed here, so a call
// that depends on it can neither be hoisted out of a loop nor deleted
// (Google Benchmark's DoNotOptimize/ClobberMemory).
template <class T>
inline void clobber(T& value) {
  asm volatile("" : : "r"(&value) : "memory");
}

// CPU time of this thread (s): unlike wall time, it does not count the time
// the thread waits while other processes run.
double threadSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Timing {
  double medianMicroseconds = 0;
  long callsPerBatch = 0;
  long batches = 0;
};

// Median time per call of `call` (µs) over batches of calls: the batch size
// is doubled until a batch takes >= 0.2 ms (well above the clock's
// resolution); then a warm-up of a tenth of the budget; then batches until
// `seconds` are spent (at least kMinBatches).
template <class Call>
Timing timeCalls(Call&& call, double seconds) {
  constexpr double kMinBatchSeconds = 2e-4;
  constexpr long kMinBatches = 11;
  auto batch = [&](long n) {
    const double start = threadSeconds();
    for (long i = 0; i < n; ++i) call();
    return threadSeconds() - start;
  };
  Timing timing;
  timing.callsPerBatch = 1;
  while (batch(timing.callsPerBatch) < kMinBatchSeconds && timing.callsPerBatch < (1L << 30)) timing.callsPerBatch *= 2;
  for (const double warmEnd = threadSeconds() + 0.1 * seconds; threadSeconds() < warmEnd;) batch(timing.callsPerBatch);
  std::vector<double> perCall;
  const double end = threadSeconds() + 0.9 * seconds;
  while (static_cast<long>(perCall.size()) < kMinBatches || threadSeconds() < end)
    perCall.push_back(batch(timing.callsPerBatch) / static_cast<double>(timing.callsPerBatch));
  std::nth_element(perCall.begin(), perCall.begin() + static_cast<long>(perCall.size() / 2), perCall.end());
  timing.medianMicroseconds = 1e6 * perCall[perCall.size() / 2];
  timing.batches = static_cast<long>(perCall.size());
  return timing;
}

template <class M>
constexpr bool kHasBushings = requires { M::nbushings; };

// The bushings' evaluation (bushingStates: their forces, angles and rates
// from q and u), for models that have bushings (SPEC §6: `bushing_us`).
template <class M>
void timeBushings([[maybe_unused]] const M& model, [[maybe_unused]] typename M::Q& q, [[maybe_unused]] typename M::U& u,
                  [[maybe_unused]] double seconds, [[maybe_unused]] std::vector<std::pair<const char*, Timing>>& results) {
  if constexpr (kHasBushings<M>) {
    typename M::BushingStates states;
    results.emplace_back("bushing", timeCalls(
                                        [&] {
                                          clobber(q);
                                          clobber(u);
                                          model.bushingStates(q, u, states);
                                          clobber(states);
                                        },
                                        seconds));
  }
}

// The cables' evaluation (updateCables: every path continued from its
// last solution, tensions and body forces), for models that have cables
// (SPEC section 6: `cable_us`). At one state, so each call continues from
// its own solution: the cost of a converged update, no motion between calls.
template <class M>
bool timeCables([[maybe_unused]] const M& model, [[maybe_unused]] double t, [[maybe_unused]] typename M::Q& q,
                [[maybe_unused]] typename M::U& u, [[maybe_unused]] double seconds,
                [[maybe_unused]] std::vector<std::pair<const char*, Timing>>& results) {
  if constexpr (kHasCables<M>) {
    typename M::ExternalForces fext;
    if (model.updateCables(t, q, u, fext) >= 0) {
      std::cerr << "capstan: error: " << model.cableFailureMessage(t) << "\n";
      return false;
    }
    results.emplace_back("cable", timeCalls(
                                      [&] {
                                        clobber(q);
                                        clobber(u);
                                        model.updateCables(t, q, u, fext);
                                        clobber(fext);
                                      },
                                      seconds));
  }
  return true;
}

int bench(Model& model, int argc, char** argv) {
  const double seconds = std::strtod(argv[3], nullptr);
  if (!applySettings(model, argc, argv, 4)) return 1;
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  double t = 0;
  if (!readState(argv[2], t, q, u)) return 1;
  Model::U udot;
  Model::MassMatrix M;
  Model::BodyPoses poses;
#ifdef CAPSTAN_CONSTRAINTS
  constexpr int kConstraintTimings = 2;
#else
  constexpr int kConstraintTimings = 0;
#endif
  const double share = seconds / (3 + (kHasBushings<Model> ? 1 : 0) + (kHasCables<Model> ? 1 : 0) + kConstraintTimings);
  const Timing fd = timeCalls(
      [&] {
        clobber(q);
        clobber(u);
        model.forwardDynamics(t, q, u, udot);
        clobber(udot);
      },
      share);
  const Timing mm = timeCalls(
      [&] {
        clobber(q);
        model.massMatrix(q, M);
        clobber(M);
      },
      share);
  const Timing kin = timeCalls(
      [&] {
        clobber(q);
        model.bodyPoses(q, poses);
        clobber(poses);
      },
      share);
  std::vector<std::pair<const char*, Timing>> results = {{"forward_dynamics", fd}, {"mass_matrix", mm}, {"kinematics", kin}};
  timeBushings(model, q, u, share, results);
  if (!timeCables(model, t, q, u, share, results)) return 1;
#ifdef CAPSTAN_CONSTRAINTS
  {
    // The constraint rows (G and gamma), and the constrained forward
    // dynamics (udot and multipliers) at the assembled state.
    Solver solver(model, constraintRowRanges());
    try {
      solver.project(q, u);
    } catch (const capstan::ProjectionFailure& e) {
      std::cerr << "capstan: error: the state cannot be assembled: " << e.what() << "\n";
      return 1;
    }
    Model::ConstraintJacobian G;
    Model::ConstraintVector gamma, lambda;
    results.emplace_back("constraint", timeCalls(
                                           [&] {
                                             clobber(q);
                                             clobber(u);
                                             model.constraintJacobian(q, G);
                                             model.constraintBias(q, u, gamma);
                                             clobber(G);
                                             clobber(gamma);
                                           },
                                           share));
    results.emplace_back("constrained_forward_dynamics", timeCalls(
                                                             [&] {
                                                               clobber(q);
                                                               clobber(u);
                                                               solver.accelerations(t, q, u, udot, lambda);
                                                               clobber(udot);
                                                               clobber(lambda);
                                                             },
                                                             share));
  }
#endif
  for (const auto& [key, timing] : results) {
    std::printf("%s_us %.17g\n", key, timing.medianMicroseconds);
    std::printf("%s_calls_per_batch %ld\n", key, timing.callsPerBatch);
    std::printf("%s_batches %ld\n", key, timing.batches);
  }
#if defined(__clang__)
  std::printf("compiler clang++ %s\n", __clang_version__);
#elif defined(__GNUC__)
  std::printf("compiler g++ %s\n", __VERSION__);
#else
  std::printf("compiler unknown\n");
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Model model;
  const std::string mode = argc > 1 ? argv[1] : "";
  // An exception out of the model (an external C++ function threw): a
  // message and status 1, never std::terminate.
  try {
    if (mode == "simulate" && argc >= 8) return simulate(model, argc, argv);
    if (mode == "eval" && argc >= 3) return eval(model, argc, argv);
    if (mode == "bench" && argc >= 4) return bench(model, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "capstan: error: a C++ function that the model calls threw an exception: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: driver simulate T_END DT INTEGRATOR TOL OUT PROGRESS [OPTION|NAME=VALUE]... | eval STATE "
               "[NAME=VALUE]... | bench STATE SECONDS [NAME=VALUE]...\n";
  return 2;
}
