// The definitions of the model library's C interface (capstan/model_library.h,
// which says what each function does) for one generated class: the unit
// `capstan library` builds (compiler/templates/capstan_library.cpp)
// includes this after naming the class
//
//   #define CAPSTAN_LIBRARY_CLASS capstan_models::Chain
//   #define CAPSTAN_LIBRARY_NAME "Chain"
//   #include <capstan/sim/library.hpp>
//
// and links the simulation engine, compiled once (program_run.hpp): the
// functions here only translate between C's arrays and status codes and
// the engine's AnyModel, Request and Result. No exception leaves them: a
// C++ function the model calls that throws makes the call fail with its
// message.
#pragma once

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "capstan/model_library.h"
#include "capstan/sim/any_model.hpp"
#include "capstan/sim/program.hpp"
#include "capstan/sim/request.hpp"
#include "capstan/sim/table.hpp"

#if !defined(CAPSTAN_LIBRARY_CLASS) || !defined(CAPSTAN_LIBRARY_NAME)
#error "define CAPSTAN_LIBRARY_CLASS and CAPSTAN_LIBRARY_NAME before including capstan/sim/library.hpp"
#endif

namespace capstan::sim::library_detail {

using Generated = CAPSTAN_LIBRARY_CLASS;

// `text` as a JSON string.
inline std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <class Names>
std::string list(const Names& names) {
  std::string out = "[";
  for (const auto& n : names) out += (out.size() > 1 ? ", " : "") + quoted(n);
  return out + "]";
}

inline std::string shapeJson(const AnyModel& m) {
  std::string constraints = "[";
  for (const auto& c : m.constraintInfo)
    constraints += std::string(constraints.size() > 1 ? ", " : "") + "{\"name\": " + quoted(c.name) +
                   ", \"holonomic\": " + std::to_string(c.holonomic) +
                   ", \"nonholonomic\": " + std::to_string(c.nonholonomic) + "}";
  constraints += "]";
  return "{\"model\": " + quoted(CAPSTAN_LIBRARY_NAME) + ", \"nq\": " + std::to_string(m.nq) +
         ", \"nu\": " + std::to_string(m.nu) + ", \"nb\": " + std::to_string(m.nb) +
         ", \"q_names\": " + list(m.qNames) + ", \"u_names\": " + list(m.uNames) +
         ", \"q_units\": " + list(m.qUnits) + ", \"u_units\": " + list(m.uUnits) +
         ", \"output_names\": " + list(m.outputNames) + ", \"output_units\": " + list(m.outputUnits) +
         ", \"body_names\": " + list(Generated::bodyNames) + ", \"bushing_names\": " + list(m.bushingNames) +
         ", \"cable_names\": " + list(m.cableNames) + ", \"constraints\": " + constraints +
         ", \"derivatives\": " + (m.hasDerivatives() ? "true" : "false") + "}";
}

}  // namespace capstan::sim::library_detail

struct capstan_model {
  capstan_model() : erased(generated), shape(capstan::sim::library_detail::shapeJson(erased)) {}
  capstan::sim::library_detail::Generated generated;
  capstan::sim::Erased<capstan::sim::library_detail::Generated> erased;
  std::string shape, error;
  capstan::sim::RowTable table;
};

namespace capstan::sim::library_detail {

using Q = AnyModel::Q;
using U = AnyModel::U;

// call() with `model`'s error cleared; its exception, if it throws, as the
// error and status 1.
template <class Call>
int guarded(capstan_model* model, Call&& call) {
  model->error.clear();
  try {
    return call();
  } catch (const ModelStopped& e) {
    model->error = e.message;
  } catch (const std::exception& e) {
    model->error = std::string("a C++ function that the model calls threw an exception: ") + e.what();
  } catch (...) {
    model->error = "a C++ function that the model calls threw an exception that is no std::exception";
  }
  return 1;
}

inline AnyModel::ExternalForces forces(const AnyModel& m, const double* values) {
  AnyModel::ExternalForces fext(std::size_t(m.nb), AnyModel::SpatialVector::Zero());
  for (std::size_t b = 0; values && b < fext.size(); ++b)
    for (int k = 0; k < 6; ++k) fext[b][k] = values[6 * b + std::size_t(k)];
  return fext;
}

// The first entry of `v` that is not finite, as "udot[3] = nan", or "".
inline std::string nonFinite(std::string_view what, const Eigen::VectorXd& v) {
  for (Eigen::Index i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) {
      char b[64];
      std::snprintf(b, sizeof b, "[%ld] = %g", long(i), v[i]);
      return std::string(what) + b;
    }
  return {};
}

// The Result of a run as capstan simulate's message, without its
// `capstan: error: ` and its line end.
inline std::string message(const Result& r) {
  std::string text = r.thrown ? thrownReport(r.thrown->state.t, r.thrown->what, r.rows) : report(r, "");
  for (const std::string_view prefix : {"capstan: error: ", "capstan: "})
    if (text.starts_with(prefix)) text.erase(0, prefix.size());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace capstan::sim::library_detail

extern "C" {

int capstan_library_version(void) { return CAPSTAN_LIBRARY_VERSION; }

capstan_model* capstan_model_new(void) {
  try {
    return new capstan_model();
  } catch (...) {
    return nullptr;
  }
}

void capstan_model_free(capstan_model* model) { delete model; }

const char* capstan_model_error(const capstan_model* model) { return model->error.c_str(); }

const char* capstan_model_shape(const capstan_model* model) { return model->shape.c_str(); }

int capstan_model_set_parameter(capstan_model* model, const char* name, double value) {
  return capstan::sim::library_detail::guarded(model, [&] {
    if (model->erased.setParameter(name, value)) return 0;
    model->error = "unknown parameter setting `" + std::string(name) + "`";
    return 1;
  });
}

int capstan_model_initial_state(const capstan_model* model, double* q, double* u) {
  capstan::sim::AnyModel::Q qv;
  capstan::sim::AnyModel::U uv;
  model->erased.initialState(qv, uv);
  for (Eigen::Index i = 0; i < qv.size(); ++i) q[i] = qv[i];
  for (Eigen::Index i = 0; i < uv.size(); ++i) u[i] = uv[i];
  return 0;
}

int capstan_model_forward_dynamics(capstan_model* model, double t, const double* q, const double* u,
                                   const double* external_forces, double* udot) {
  using namespace capstan::sim::library_detail;
  return guarded(model, [&] {
    const capstan::sim::AnyModel& m = model->erased;
    const Q qv = Eigen::Map<const Eigen::VectorXd>(q, m.nq);
    const U uv = Eigen::Map<const Eigen::VectorXd>(u, m.nu);
    U ud(m.nu);
    const capstan::sim::AnyModel::ExternalForces fext = forces(m, external_forces);
    capstan::sim::accelerations(model->erased, t, qv, uv, external_forces ? &fext : nullptr, ud);
    Eigen::Map<Eigen::VectorXd>(udot, m.nu) = ud;
    model->error = nonFinite("udot", ud);
    return model->error.empty() ? 0 : 1;
  });
}

int capstan_model_derivatives(capstan_model* model, double t, const double* q, const double* u, double* dudot_dq,
                              double* dudot_du, double* dudot_dtau) {
  using namespace capstan::sim::library_detail;
  return guarded(model, [&] {
    const capstan::sim::AnyModel& m = model->erased;
    if (!m.hasDerivatives()) {
      model->error = "the model library was built without derivatives (`capstan library --derivatives`)";
      return 1;
    }
    capstan::sim::AnyModel::MassMatrix dq, du, dtau;
    m.forwardDynamicsDerivatives(t, Eigen::Map<const Eigen::VectorXd>(q, m.nq), Eigen::Map<const Eigen::VectorXd>(u, m.nu),
                                 dq, du, dtau);
    using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<RowMajor>(dudot_dq, dq.rows(), dq.cols()) = dq;
    Eigen::Map<RowMajor>(dudot_du, du.rows(), du.cols()) = du;
    Eigen::Map<RowMajor>(dudot_dtau, dtau.rows(), dtau.cols()) = dtau;
    return 0;
  });
}

int capstan_model_evaluate(capstan_model* model, double t, const double* q, const double* u,
                           const double* external_forces, int derivatives, capstan_record_fn record, void* context) {
  using namespace capstan::sim::library_detail;
  return guarded(model, [&] {
    capstan::sim::AnyModel& m = model->erased;
    const capstan::sim::AnyModel::ExternalForces fext = forces(m, external_forces);
    capstan::sim::evaluateRecords(
        m, t, Eigen::Map<const Eigen::VectorXd>(q, m.nq), Eigen::Map<const Eigen::VectorXd>(u, m.nu),
        external_forces ? &fext : nullptr, derivatives != 0 && m.hasDerivatives(),
        [&](std::string_view key, int element, const std::vector<double>& values) {
          record(context, std::string(key).c_str(), element, values.data(), int(values.size()));
        });
    return 0;
  });
}

int capstan_model_simulate(capstan_model* model, int argc, const char* const* argv, capstan_progress_fn progress,
                           void* context) {
  using namespace capstan::sim::library_detail;
  model->table.clear();
  volatile std::sig_atomic_t stop = 0;
  const int status = guarded(model, [&] {
    std::vector<std::string_view> args(argv, argv + argc);
    std::string error;
    const auto request = capstan::sim::fromArguments(args, error);
    if (!request) {
      model->error = error;
      return 2;
    }
    const std::string unknown = capstan::sim::applySettings(model->erased, request->settings);
    if (!unknown.empty()) {
      model->error = "unknown parameter setting `" + unknown + "`";
      return 2;
    }
    if (request->run.columns.constraintErrors && model->erased.constraintInfo.empty()) {
      model->error = "the model has no constraints";
      return 2;
    }
    capstan::sim::Request run = request->run;
    if (const std::string problem = capstan::sim::requestProblem(run); !problem.empty()) {
      model->error = problem;
      return 2;
    }
    run.loop.stop = &stop;
    const capstan::sim::Result result =
        capstan::sim::simulateInto(model->erased, run, model->table, [&](double fraction) {
          if (progress && progress(context, fraction) != 0) stop = SIGINT;
        });
    model->error = message(result);
    return capstan::sim::exitStatus(result);
  });
  return status;
}

int capstan_model_table(const capstan_model* model, long* rows, int* columns, const double** values) {
  *rows = model->table.rows();
  *columns = int(model->table.names().size());
  *values = model->table.values().data();
  return 0;
}

const char* capstan_model_column_name(const capstan_model* model, int column) {
  const auto& names = model->table.names();
  return column >= 0 && std::size_t(column) < names.size() ? names[std::size_t(column)].c_str() : nullptr;
}

}  // extern "C"
