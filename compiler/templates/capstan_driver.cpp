// The program `capstan simulate` and `capstan eval` build around a generated
// model header. Compiled with -DCAPSTAN_MODEL_CLASS=Name -include model.hpp.
//
//   driver simulate T_END DT INTEGRATOR TOL OUT.csv PROGRESS [NAME=VALUE]...
//   driver eval STATE.txt [NAME=VALUE]...
//
// STATE.txt (written by capstan): `time T`, `q v...`, `u v...`, optional
// `initial` (use the model's q0/u0 for what follows being absent). Eval prints
// `key v...` lines (full precision) that capstan turns into JSON.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "capstan_sim_loop.hpp"

namespace {

using Model = capstan_models::CAPSTAN_MODEL_CLASS;

bool applySettings(Model& model, int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    double* slot = eq == std::string::npos ? nullptr : model.parameter(a.substr(0, eq));
    if (!slot) {
      std::cerr << "error: unknown parameter setting `" << a << "`\n";
      return false;
    }
    *slot = std::strtod(a.c_str() + eq + 1, nullptr);
  }
  return true;
}

struct System {
  Model& model;
  int size() const { return Model::nq + Model::nu; }
  void derivative(double t, const capstan_sim::Vec& x, capstan_sim::Vec& xdot) {
    const Model::Q q = x.head<Model::nq>();
    const Model::U u = x.tail<Model::nu>();
    Model::Q qd;
    Model::U ud;
    model.qdot(q, u, qd);
    model.forwardDynamics(t, q, u, ud);
    xdot.resize(size());
    xdot << qd, ud;
  }
  void project(capstan_sim::Vec& x) {
    Model::Q q = x.head<Model::nq>();
    Model::normalizeQuaternions(q);
    x.head<Model::nq>() = q;
  }
};

void printRow(std::FILE* out, const char* key, const double* v, int n) {
  std::fprintf(out, "%s", key);
  for (int i = 0; i < n; ++i) std::fprintf(out, " %.17g", v[i]);
  std::fprintf(out, "\n");
}

int simulate(Model& model, int argc, char** argv) {
  capstan_sim::LoopOptions opt;
  opt.tEnd = std::strtod(argv[2], nullptr);
  opt.dt = std::strtod(argv[3], nullptr);
  opt.integrator = argv[4];
  opt.tolerance = std::strtod(argv[5], nullptr);
  const std::string outPath = argv[6];
  const bool progress = std::string(argv[7]) == "1";
  if (!applySettings(model, argc, argv, 8)) return 2;
  std::FILE* out = outPath == "-" ? stdout : std::fopen(outPath.c_str(), "w");
  if (!out) {
    std::cerr << "error: cannot write `" << outPath << "`\n";
    return 1;
  }
  std::fprintf(out, "time");
  for (auto n : Model::qNames) std::fprintf(out, ",%.*s", static_cast<int>(n.size()), n.data());
  for (auto n : Model::uNames) std::fprintf(out, ",%.*s", static_cast<int>(n.size()), n.data());
  for (auto n : Model::outputNames) std::fprintf(out, ",%.*s", static_cast<int>(n.size()), n.data());
  std::fprintf(out, ",kinetic_energy,potential_energy\n");
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  capstan_sim::Vec x(Model::nq + Model::nu);
  x << q, u;
  System sys{model};
  int lastPercent = -1;
  try {
    capstan_sim::simulate(
        sys, x, opt,
        [&](double t, const capstan_sim::Vec& state) {
          const Model::Q qs = state.head<Model::nq>();
          const Model::U us = state.tail<Model::nu>();
          Model::Outputs o;
          model.outputs(t, qs, us, o);
          std::fprintf(out, "%.15g", t);
          for (int i = 0; i < state.size(); ++i) std::fprintf(out, ",%.15g", state[i]);
          const double* ov = reinterpret_cast<const double*>(&o);
          for (std::size_t i = 0; i < Model::outputNames.size(); ++i) std::fprintf(out, ",%.15g", ov[i]);
          std::fprintf(out, ",%.15g,%.15g\n", model.kineticEnergy(qs, us), model.potentialEnergy(qs));
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
  } catch (const std::exception& e) {
    if (progress) std::fprintf(stderr, "\n");
    std::cerr << "error: " << e.what() << "\n";
    if (out != stdout) std::fclose(out);
    return 1;
  }
  if (progress) std::fprintf(stderr, "\n");
  if (out != stdout) std::fclose(out);
  return 0;
}

int eval(Model& model, int argc, char** argv) {
  if (!applySettings(model, argc, argv, 3)) return 2;
  Model::Q q;
  Model::U u;
  model.initialState(q, u);
  double t = 0;
  std::ifstream in(argv[2]);
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
  }
  Model::Q qd;
  Model::U ud;
  Model::MassMatrix M;
  Model::BodyPoses poses;
  Model::BodyVelocities vel;
  Model::Outputs o;
  model.qdot(q, u, qd);
  model.forwardDynamics(t, q, u, ud);
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
  const Eigen::Matrix<double, Model::nu, Model::nu, Eigen::RowMajor> Mr = M;
  printRow(out, "mass_matrix", Mr.data(), Model::nu * Model::nu);
  for (int b = 0; b < Model::nb; ++b) {
    const auto& X = poses[static_cast<std::size_t>(b)];
    const Eigen::Matrix<double, 3, 3, Eigen::RowMajor> R = X.R_WB;
    printRow(out, "R_WB", R.data(), 9);
    printRow(out, "p_WB", X.p_WB.data(), 3);
    printRow(out, "w_WB", vel[static_cast<std::size_t>(b)].w_WB.data(), 3);
    printRow(out, "v_WB", vel[static_cast<std::size_t>(b)].v_WB.data(), 3);
  }
  const double* ov = reinterpret_cast<const double*>(&o);
  printRow(out, "outputs", ov, static_cast<int>(Model::outputNames.size()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Model model;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "simulate" && argc >= 8) return simulate(model, argc, argv);
  if (mode == "eval" && argc >= 3) return eval(model, argc, argv);
  std::cerr << "usage: driver simulate T_END DT INTEGRATOR TOL OUT PROGRESS [NAME=VALUE]... | eval STATE [NAME=VALUE]...\n";
  return 2;
}
