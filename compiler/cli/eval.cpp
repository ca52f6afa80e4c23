// `capstan eval`: STATE.json read against the model, then every record of
// capstan::sim::evaluate — from the driver program or, with --interpret, in
// process — turned into SPEC section 6's JSON.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <capstan/sim/evaluate.hpp>
#include <capstan/sim/request.hpp>
#include "cli/constraints.hpp"
#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "cli/faults.hpp"
#include "cli/generate.hpp"
#include "cli/process.hpp"
#include "cli/state_file.hpp"
#include "codegen/flat_eval.hpp"
#include "codegen/interpret.hpp"
#include "codegen/render.hpp"
#include "sema/classes.hpp"
#include "syntax/numbers.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// STATE.json's `external_forces` (body names as eval's `bodies`) into one
// spatial force per body (zero for the bodies it leaves out).
capstan::ExternalForces<double> externalForces(const std::vector<StateFile::Entry>& entries,
                                               const codegen::ModelLayout& layout) {
  capstan::ExternalForces<double> fext(layout.bodies.size(), capstan::Vec6<double>::Zero());
  for (const StateFile::Entry& e : entries) {
    std::size_t b = 0;
    while (b < layout.bodies.size() && layout.bodies[b].name != e.name) ++b;
    if (b == layout.bodies.size()) {
      std::string names;
      for (const auto& bl : layout.bodies) names += (names.empty() ? "`" : ", `") + bl.name + "`";
      fail(syntax::DiagKind::StateUnknownBody, e.name, names.empty() ? "none" : names);
    }
    for (std::size_t k = 0; k < 6; ++k) fext[b][static_cast<Eigen::Index>(k)] = e.values.at(k);
  }
  return fext;
}

// Reads STATE.json into q, u (starting from the initial state), time, --set
// style settings and, when `fext` is given, the external forces.
void readState(const Options& opts, const codegen::ModelLayout& layout, Eigen::VectorXd& q, Eigen::VectorXd& u,
               double& time, std::vector<std::string>& settings, capstan::ExternalForces<double>* fext = nullptr) {
  std::ifstream f(opts.state);
  if (!f) fail(syntax::DiagKind::FileNotReadable, opts.state, std::strerror(errno));
  std::stringstream text;
  text << f.rdbuf();
  const StateFile state = parseStateFile(text.str(), opts.state);
  if (state.time) time = *state.time;
  for (const bool isQ : {true, false}) {
    const std::string key = isQ ? "q" : "u";
    std::vector<std::string> given;
    for (const StateFile::Entry& e : isQ ? state.q : state.u) {
      const codegen::JointLayout* j = nullptr;
      std::vector<std::string> names;
      for (const auto& jl : layout.joints) {
        if (jl.name == e.name) j = &jl;
        names.push_back(jl.name);
      }
      if (!j) fail(syntax::DiagKind::StateUnknownJoint, key, e.name, sema::didYouMean(e.name, names));
      const int n = isQ ? j->nq() : j->nu();
      if (!e.array) {
        const std::string what = n == 1 ? (isQ ? "1 coordinate" : "1 speed")
                                        : std::to_string(n) + (isQ ? " coordinates" : " speeds");
        std::string example = syntax::exactNumber(e.values.at(0));
        for (int k = 1; k < n; ++k) example += ", 0";
        fail(syntax::DiagKind::StateNotArray, key + "." + e.name, "a number", e.name, what, "[" + example + "]");
      }
      given.push_back(e.name);
      if (static_cast<int>(e.values.size()) != n)
        fail(syntax::DiagKind::StateLength, key + "." + e.name, e.values.size(), "joint", e.name, n);
      for (int k = 0; k < n; ++k)
        (isQ ? q[j->qIndex() + k] : u[j->uIndex() + k]) = e.values[static_cast<std::size_t>(k)];
    }
    // Joints left out start where the model starts them: said once (the
    // file is read twice, the second time with `fext`), and not for a file
    // that gives no joint at all.
    std::vector<std::string> left;
    for (const auto& jl : layout.joints)
      if (std::find(given.begin(), given.end(), jl.name) == given.end()) left.push_back("`" + jl.name + "`");
    if (fext && !given.empty() && !left.empty()) {
      std::string list = left.size() == 1 ? "joint " : "joints ";
      for (std::size_t k = 0; k < left.size(); ++k)
        list += (k == 0 ? "" : k + 1 == left.size() ? " and " : ", ") + left[k];
      const std::string start = isQ ? "`q0`" : "`u0`";
      warn(syntax::DiagKind::StateJointsLeftOut, key, list,
           (left.size() == 1 ? "it starts from its " : "they start from their ") + start);
    }
  }
  for (const StateFile::Entry& e : state.parameters) {
    const std::string& name = e.name;
    char b[64];
    if (!e.array) {
      std::snprintf(b, sizeof b, "%.17g", e.values.at(0));
      settings.push_back(name + "=" + b);
      continue;
    }
    const int p = layout.findParameter(name);
    if (p < 0) {  // not a runtime parameter: parseSettings says what it is
      settings.push_back(name + "=0");
      continue;
    }
    const std::string where = "parameters." + name;
    const std::vector<int>& shape = layout.parameters[static_cast<std::size_t>(p)].shape;
    if (shape.empty()) fail(syntax::DiagKind::StateArrayForScalar, where, name);
    std::size_t count = 1;
    for (int d : shape) count *= static_cast<std::size_t>(d);
    if (e.values.size() != count) fail(syntax::DiagKind::StateLength, where, e.values.size(), "parameter", name, count);
    for (std::size_t k = 0; k < count; ++k) {
      std::snprintf(b, sizeof b, "%.17g", e.values[k]);
      settings.push_back(layout.parameters[static_cast<std::size_t>(p)].elementName(k) + "=" + b);
    }
  }
  if (state.externalForces) {
    const capstan::ExternalForces<double> forces = externalForces(*state.externalForces, layout);
    if (fext) *fext = forces;
  }
}

json perJoint(const codegen::ModelLayout& layout, const std::vector<double>& v, bool isU) {
  json out = json::object();
  for (const auto& j : layout.joints) {
    const int n = isU ? j.nu() : j.nq(), at = isU ? j.uIndex() : j.qIndex();
    json a = json::array();
    for (int k = 0; k < n; ++k) a.push_back(v.at(static_cast<std::size_t>(at + k)));
    out[j.name] = a;
  }
  return out;
}

}  // namespace

EvalState resolveState(const Options& opts, const Loaded& loaded, const codegen::ModelLayout& layout) {
  EvalState st;
  // Parameters first (the initial state depends on them), then the state.
  std::vector<std::string> fromFile;
  if (!opts.state.empty()) {
    Eigen::VectorXd q0 = Eigen::VectorXd::Zero(layout.nq), u0 = Eigen::VectorXd::Zero(layout.nu);
    double t0 = 0;
    readState(opts, layout, q0, u0, t0, fromFile);
  }
  parseSettings(opts, loaded, layout, st.values, fromFile);
  codegen::Interpreter interp(*loaded.flat, *loaded.mech, layout, st.values);
  interp.initialState(st.q, st.u);
  if (!opts.state.empty()) {
    std::vector<std::string> ignored;
    readState(opts, layout, st.q, st.u, st.time, ignored, &st.externalForces);
  }
  return st;
}

namespace {

// eval's "constraints" (SPEC §6): per constraint, its rows of the solved
// values; a contact's velocity and acceleration errors and multipliers as
// Simbody's Vec3s (x, y, z) in its frame C, x and y zero without rolling.
json constraintsJson(const codegen::ModelLayout& layout, std::map<std::string, std::vector<double>>& rows) {
  json out = json::object();
  int contact = 0;
  for (const codegen::ConstraintLayout& c : layout.constraints) {
    auto take = [&](const std::string& key, bool holonomicOnly) {
      const std::vector<double>& v = rows[key];
      std::vector<double> x;
      for (int r = c.holonomicRow; r < c.holonomicRow + c.holonomic; ++r) x.push_back(v.at(static_cast<std::size_t>(r)));
      if (!holonomicOnly)
        for (int r = c.nonholonomicRow; r < c.nonholonomicRow + c.nonholonomic; ++r)
          x.push_back(v.at(static_cast<std::size_t>(r)));
      return x;
    };
    json entry;
    entry["position_error"] = take("position_errors", true);
    if (c.kind != mechanics::ConstraintKind::SphereOnSphere) {
      entry["velocity_error"] = take("velocity_errors", false);
      entry["acceleration_error"] = take("acceleration_errors", false);
      entry["multipliers"] = take("multipliers", false);
      out[c.name] = entry;
      continue;
    }
    // Rows (normal, then x, y when rolling) to (x, y, z).
    auto xyz = [&](const std::string& key) {
      const std::vector<double> v = take(key, false);
      return v.size() == 3 ? std::vector<double>{v[1], v[2], v[0]} : std::vector<double>{0.0, 0.0, v.at(0)};
    };
    const std::string k = "#" + std::to_string(contact++);
    const std::vector<double> lambda = xyz("multipliers");
    const std::vector<double>& R = rows["contact_R" + k];  // row-major R_WC
    std::vector<double> force(3, 0.0);
    for (int r = 0; r < 3; ++r)
      for (int j = 0; j < 3; ++j) force[static_cast<std::size_t>(r)] -= R.at(static_cast<std::size_t>(3 * r + j)) * lambda[static_cast<std::size_t>(j)];
    entry["velocity_error"] = xyz("velocity_errors");
    entry["acceleration_error"] = xyz("acceleration_errors");
    entry["multipliers"] = lambda;
    entry["force_on_B_in_G"] = force;
    entry["contact_frame_in_G"] = {{"R", R}, {"p", rows["contact_p" + k]}};
    entry["separation"] = rows["separation" + k].at(0);
    out[c.name] = entry;
  }
  return out;
}

}  // namespace

int eval(const Options& opts) {
  if (opts.state.empty()) usageError(syntax::DiagKind::UsageMissing, "eval", "`--state STATE.json`");
  const auto loaded = load(opts);
  if (!loaded) return 1;
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  if (opts.derivatives && layout.constraintRows > 0)
    fail(syntax::DiagKind::DerivativesWithConstraints);
  EvalState st = resolveState(opts, *loaded, layout);
  // Compiled for the interpreter; for generated code, it checks headers and
  // calls with located errors before the driver is built, and locates a
  // force law that is not finite.
  codegen::Interpreter interp(*loaded->flat, *loaded->mech, layout, st.values, {},
                              loadExternalFunctions(opts, *loaded));
  if (opts.assemble) {
    if (layout.constraintRows == 0) fail(syntax::DiagKind::NoConstraintsForOption, "`--assemble` is");
    if (!assemble(opts, *loaded, layout, interp, constraintSettings(opts), st.q, st.u)) return 1;
  }
  const Eigen::VectorXd& q = st.q;
  const Eigen::VectorXd& u = st.u;
  const double time = st.time;
  if (layout.constraintRows > 0) warnRedundantRows(opts, *loaded, layout, interp, q, "the state evaluated");

  // A state without a cable path (an end point inside a wrapped surface)
  // has no dynamics to evaluate: said here for both paths, as the
  // interpreter finds it (the driver would print NaN).
  if (!layout.cables.empty()) {
    try {
      interp.cables(time, q, u);
    } catch (const codegen::CableFailed& x) {
      fail(syntax::DiagKind::CableStateInvalid, opts.state, std::string(x.what()));
    }
  }
  std::map<std::string, std::vector<double>> rows;  // capstan::sim::evaluate's records: key[#element] -> values
  if (opts.derivatives) requireFrictionlessCables(layout, interp);
  // A bushing at gimbal lock: at its declaration, for generated code and
  // the interpreter alike (capstan::sim::evaluate would stop unlocated).
  {
    const codegen::InterpretedModel model(interp);
    double pitch = 0.0;
    if (const int k = model.gimbalLock(q, u, pitch); k >= 0) {
      reportGimbalLock(opts, *loaded, layout, k,
                       capstan::gimbalLockMessage(model.bushingNames.at(static_cast<std::size_t>(k)), pitch, time));
      return 1;
    }
  }
  try {
    if (opts.interpret) {
      const codegen::InterpretedModel model(interp);
      try {
        capstan::sim::evaluate(model, time, q, u, st.externalForces.empty() ? nullptr : &st.externalForces,
                               opts.derivatives,
                               [&](std::string_view key, int element, std::vector<double> values) {
                                 rows[capstan::sim::evalKey(key, element)] = std::move(values);
                               });
      } catch (const capstan::sim::ModelStopped& e) {
        fail(syntax::DiagKind::RunStopped, e.message);
      } catch (const codegen::UnsupportedExpression& e) {
        fail(syntax::DiagKind::DerivativesOfExternal, std::string(e.what()));
      }
    } else {
      // An external function that throws stops the driver; the interpreter
      // finds which call, at its place in the model (ExternalCallFailed).
      if (!loaded->flat->functions.empty()) {
        interp.forceLawValues(time, q, u);
        interp.outputs(time, q, u);
      }
      // The one build of the model (cli/driver.hpp): it has both
      // forwardDynamics overloads, with external forces and without
      // (compiler/templates/capstan_driver.cpp); --derivatives asks for the
      // build with forwardDynamicsDerivatives.
      DriverRequest build;
      build.purpose = "eval";
      build.derivatives = opts.derivatives;
      const fs::path exe = buildDriver(opts, *loaded, layout, build);
      std::istringstream in(runDriver(exe, "eval", layout, st));
      for (std::string line; std::getline(in, line);) {  // `key[#element] v...`
        std::istringstream ls(line);
        std::string key;
        ls >> key;
        std::vector<double>& v = rows[key];
        for (std::string number; ls >> number;) v.push_back(std::strtod(number.c_str(), nullptr));
      }
    }
    const auto finite = [](const std::vector<double>& v) {
      return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
    };
    if (!finite(rows["udot"])) {
      if (const auto n = nonFiniteForceLaw(interp, time, q, u)) {
        reportNonFinite(opts, *loaded, *n);
        return 1;
      }
    }
  } catch (const codegen::ExternalCallFailed& x) {
    reportCallFailed(opts, *loaded, x, time);
    return 1;
  }
  json out;
  out["nq"] = layout.nq;
  out["nu"] = layout.nu;
  out["q"] = perJoint(layout, rows["q"], false);
  out["u"] = perJoint(layout, rows["u"], true);
  out["qdot"] = perJoint(layout, rows["qdot"], false);
  out["udot"] = perJoint(layout, rows["udot"], true);
  out["kinetic_energy"] = rows["kinetic_energy"].at(0);
  out["potential_energy"] = rows["potential_energy"].at(0);
  json M = json::array();
  for (int r = 0; r < layout.nu; ++r) {
    json row = json::array();
    for (int c = 0; c < layout.nu; ++c) row.push_back(rows["mass_matrix"].at(static_cast<std::size_t>(r * layout.nu + c)));
    M.push_back(row);
  }
  out["mass_matrix"] = M;
  json bodies = json::object();
  for (std::size_t b = 0; b < layout.bodies.size(); ++b) {
    const std::string k = "#" + std::to_string(b);
    bodies[layout.bodies[b].name] = {{"R_WB", rows["R_WB" + k]}, {"p_WB", rows["p_WB" + k]}, {"w_WB", rows["w_WB" + k]},
                                     {"v_WB", rows["v_WB" + k]}};
  }
  out["bodies"] = bodies;
  json jacobians = json::object(), jacobianDotU = json::object();
  for (std::size_t f = 0; f < layout.jacobianFrames.size(); ++f) {
    const std::string k = "#" + std::to_string(f);
    const std::vector<double>& J = rows["J" + k];
    json rowsJ = json::array();
    for (std::size_t r = 0; r < 6; ++r) {
      json row = json::array();
      for (std::size_t c = 0; c < static_cast<std::size_t>(layout.nu); ++c) row.push_back(J.at(r * static_cast<std::size_t>(layout.nu) + c));
      rowsJ.push_back(row);
    }
    jacobians[layout.jacobianFrames[f].name] = rowsJ;
    jacobianDotU[layout.jacobianFrames[f].name] = rows["JdotU" + k];
  }
  out["jacobians"] = jacobians;
  json bushingsOut = json::object();
  std::size_t bushing = 0;
  for (const codegen::ForceElementLayout& e : layout.forceElements) {
    if (e.kind != mechanics::ForceKind::Bushing) continue;
    const std::string k = "#" + std::to_string(bushing++);
    bushingsOut[e.name] = {{"F_A_A", rows["F_A_A" + k]}, {"F_C_C", rows["F_C_C" + k]}};
  }
  if (!bushingsOut.empty()) out["bushings"] = bushingsOut;
  // SPEC section 6 "cables", plus what users inspect of the solved path:
  // its power, generalized forces and, per obstacle, contact points and
  // wrap angles (docs/user-guide.md#cables).
  json cablesOut = json::object();
  for (std::size_t k = 0; k < layout.cables.size(); ++k) {
    const codegen::CableLayout& c = layout.cables[k];
    const std::string at = "#" + std::to_string(k);
    const std::vector<double>& v = rows["cable" + at];
    const std::vector<double>& forces = rows["cable_forces" + at];
    json bodyForces = json::object();
    for (const codegen::CableObstacleLayout& o : c.obstacles) {
      if (o.body < 0) continue;
      const auto b = static_cast<std::size_t>(o.body);
      bodyForces[layout.bodies.at(b).name] = std::vector<double>(forces.begin() + static_cast<long>(6 * b),
                                                                 forces.begin() + static_cast<long>(6 * b + 6));
    }
    json obstacles = json::array();
    for (std::size_t i = 0; i < c.obstacles.size(); ++i) {
      const codegen::CableObstacleLayout& o = c.obstacles[i];
      const std::vector<double>& r = rows["cable_obstacle#" + std::to_string(c.firstFrame + static_cast<int>(i))];
      json ob = {{"name", o.name},
                 {"kind", o.kind == codegen::CableObstacleKind::EndPoint   ? (i == 0 ? "origin" : "termination")
                          : o.kind == codegen::CableObstacleKind::ViaPoint ? "via_point"
                                                                           : "surface"}};
      if (o.kind == codegen::CableObstacleKind::Surface) {
        ob["in_contact"] = r.at(0) != 0.0;
        if (r.at(0) != 0.0) {
          ob["P"] = std::vector<double>(r.begin() + 1, r.begin() + 4);
          ob["Q"] = std::vector<double>(r.begin() + 4, r.begin() + 7);
          ob["arc_length"] = r.at(7);
          ob["wrap_angle"] = r.at(8);
        } else if (std::isfinite(r.at(9))) {
          ob["separation"] = r.at(9);
        }
      } else {
        ob["point"] = std::vector<double>(r.begin() + 1, r.begin() + 4);
      }
      obstacles.push_back(ob);
    }
    rows.erase("cable_obstacle#" + std::to_string(c.firstFrame));  // separation may be infinite
    for (std::size_t i = 1; i < c.obstacles.size(); ++i) rows.erase("cable_obstacle#" + std::to_string(c.firstFrame + static_cast<int>(i)));
    cablesOut[c.name] = {{"length", v.at(0)},        {"length_dot", v.at(1)},  {"tension", v.at(2)},
                         {"energy", v.at(3)},        {"power", v.at(4)},       {"body_forces", bodyForces},
                         {"generalized_forces", rows["cable_tau" + at]}, {"obstacles", obstacles}};
  }
  if (!cablesOut.empty()) out["cables"] = cablesOut;
  out["jacobian_dot_u"] = jacobianDotU;
  if (layout.constraintRows > 0) out["constraints"] = constraintsJson(layout, rows);
  if (opts.derivatives) {
    // Row i = udot[i], from the row-major values.
    auto matrix = [&](const std::string& key) {
      const std::vector<double>& m = rows[key];
      const auto n = static_cast<std::size_t>(layout.nu);
      json rowsOut = json::array();
      for (std::size_t r = 0; r < n; ++r) {
        json row = json::array();
        for (std::size_t c = 0; c < n; ++c) row.push_back(m.at(r * n + c));
        rowsOut.push_back(row);
      }
      return rowsOut;
    };
    out["derivatives"] = {{"dudot_dq", matrix("dudot_dq")}, {"dudot_du", matrix("dudot_du")},
                          {"dudot_dtau", matrix("dudot_dtau")}};
    for (const char* key : {"dtau_dq", "dtau_du", "dtau_dudot"})
      if (rows.count(key) != 0) out["derivatives"][key] = matrix(key);
    if (opts.interpret && layout.cables.empty()) {
      // The oracle: forward dynamics run with dual numbers, one direction at
      // a time (not through a cable's path solver: without cables).
      const codegen::DynamicsDerivatives d = interp.forwardDynamicsDerivativesByDuals(time, q, u);
      auto rowsOf = [](const Eigen::MatrixXd& m) {
        json r = json::array();
        for (int i = 0; i < m.rows(); ++i) {
          json row = json::array();
          for (int j = 0; j < m.cols(); ++j) row.push_back(m(i, j));
          r.push_back(row);
        }
        return r;
      };
      out["derivatives_by_duals"] = {{"dudot_dq", rowsOf(d.dudot_dq)}, {"dudot_du", rowsOf(d.dudot_du)},
                                     {"dudot_dtau", rowsOf(d.dudot_dtau)}};
    }
  }
  // A non-finite output is an error, generated and interpreted alike: the
  // built-in functions compute the same IEEE value in both (sema/builtins.hpp).
  syntax::DiagnosticEngine nonFinite;
  for (std::size_t k = 0; k < layout.outputs.size(); ++k) {
    const double y = rows["outputs"].at(k);
    if (std::isfinite(y)) continue;
    const sema::FlatVariable& fv = loaded->flat->variables.at(static_cast<std::size_t>(layout.outputs[k].variable));
    char t[32];
    std::snprintf(t, sizeof t, "%.17g", time);
    nonFinite.report(syntax::DiagKind::NonFiniteOutput, fv.binding ? fv.binding->range : fv.range,
                     fv.path, std::isnan(y) ? "not a number (NaN)" : (y > 0 ? "+infinity" : "-infinity"), t);
  }
  if (nonFinite.hasErrors()) {
    std::cerr << syntax::renderAll(nonFinite, loaded->sources, {opts.color, true});
    return 1;
  }
  for (const auto& [key, values] : rows) {
    for (double x : values) {
      if (std::isfinite(x)) continue;
      char t[32];
      std::snprintf(t, sizeof t, "%.17g", time);
      if (const auto n = nonFiniteForceLaw(interp, time, q, u)) {
        reportNonFinite(opts, *loaded, *n);
        return 1;
      }
      // No force law to blame: the state itself is too large (u = 1e200
      // squares to infinity in the kinetic energy).
      double largest = 0;
      for (double x : q) largest = std::max(largest, std::abs(x));
      for (double x : u) largest = std::max(largest, std::abs(x));
      for (const auto& F : st.externalForces) largest = std::max(largest, F.cwiseAbs().maxCoeff());
      fail(syntax::DiagKind::NonFiniteResult, key.substr(0, key.find('#')), std::string(t), largest);
    }
  }
  json outputs = json::object();
  for (std::size_t k = 0; k < layout.outputs.size(); ++k) outputs[layout.outputs[k].name] = rows["outputs"].at(k);
  out["outputs"] = outputs;
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace capstan::cli
