// The one table of output columns: what a simulation records at every
// output time, in order (SPEC section 6's CSV). The CSV header and every
// row are made from it, for generated code and the interpreter alike, and
// so are the columns any other consumer shows.
//
// Each entry is a group of columns (one struct below) that says which
// columns it has for a model (`names`: name and unit of each) and computes
// their values at a sample (`values`, in the same order), side by side;
// ColumnTable lists the groups in CSV order. Adding a column is adding it to
// one group, or one group to ColumnTable.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

#include "capstan/sim/model.hpp"

namespace capstan::sim {

// The model stopped the run at `t` (a bushing at gimbal lock, a cable path
// lost, a projection that failed): the rows recorded before it stay.
struct ModelStopped {
  std::string message;
  int bushing = -1;  // the bushing at gimbal lock (index in bushingNames), when that is what stopped it
};

struct ColumnOptions {
  bool constraintErrors = false;  // each constraint's largest position and velocity error
};

// One sample: the time and state the columns are computed at.
template <class M>
struct Sample {
  const M& model;
  double t;                 // s
  const typename M::Q& q;   // (nq)
  const typename M::U& u;   // (nu)
};

// `time` (s).
struct TimeColumn {
  template <class M, class Emit>
  static void names(const M&, const ColumnOptions&, Emit&& emit) {
    emit("time", "s");
  }
  template <class M, class Emit>
  static void values(const Sample<M>& s, const ColumnOptions&, Emit&& emit) {
    emit(s.t);
  }
};

// `JOINT.q[i]` then `JOINT.u[i]`: the state x = [q; u] (rad or m, rad/s or
// m/s, as each joint's coordinates are; quaternion components `1`: the
// joint types' qUnits and uUnits).
struct StateColumns {
  template <class M, class Emit>
  static void names(const M& m, const ColumnOptions&, Emit&& emit) {
    for (int i = 0; i < int(m.nq); ++i) emit(m.qNames[std::size_t(i)], m.qUnits[std::size_t(i)]);
    for (int i = 0; i < int(m.nu); ++i) emit(m.uNames[std::size_t(i)], m.uUnits[std::size_t(i)]);
  }
  template <class M, class Emit>
  static void values(const Sample<M>& s, const ColumnOptions&, Emit&& emit) {
    for (int i = 0; i < int(s.model.nq); ++i) emit(s.q[i]);
    for (int i = 0; i < int(s.model.nu); ++i) emit(s.u[i]);
  }
};

// The model's outputs (`output Real NAME = ...`), in declaration order,
// in the units they were declared with.
struct OutputColumns {
  template <class M, class Emit>
  static void names(const M& m, const ColumnOptions&, Emit&& emit) {
    for (std::size_t i = 0; i < m.outputNames.size(); ++i) emit(m.outputNames[i], m.outputUnits[i]);
  }
  template <class M, class Emit>
  static void values(const Sample<M>& s, const ColumnOptions&, Emit&& emit) {
    typename M::OutputValues v;
    s.model.outputValues(s.t, s.q, s.u, v);
    for (std::size_t i = 0; i < s.model.outputNames.size(); ++i) emit(v[i]);
  }
};

// Per cable: `NAME.length` (m), `NAME.length_dot` (m/s), `NAME.tension`
// (N), each path solved at the sample by continuation from its last
// solution; a path that cannot be found stops the run.
struct CableColumns {
  template <class M, class Emit>
  static void names([[maybe_unused]] const M& m, const ColumnOptions&, [[maybe_unused]] Emit&& emit) {
    if constexpr (HasCables<M>) {
      for (int c = 0; c < int(m.ncables); ++c) {
        const std::string name(m.cableNames[std::size_t(c)]);
        emit(name + ".length", "m");
        emit(name + ".length_dot", "m/s");
        emit(name + ".tension", "N");
      }
    }
  }
  template <class M, class Emit>
  static void values([[maybe_unused]] const Sample<M>& s, const ColumnOptions&, [[maybe_unused]] Emit&& emit) {
    if constexpr (HasCables<M>) {
      if (int(s.model.ncables) == 0) return;
      typename M::ExternalForces fext;
      if (s.model.updateCables(s.t, s.q, s.u, fext) >= 0)
        throw ModelStopped{std::string(s.model.cableFailureMessage(s.t))};
      for (int c = 0; c < int(s.model.ncables); ++c) {
        const auto& v = s.model.cableValues(c);
        emit(v.length);
        emit(v.lengthDot);
        emit(v.tension);
      }
    }
  }
};

// `kinetic_energy` and `potential_energy` (J; gravity's potential is zero
// at the World origin, cable springs' at their rest length).
struct EnergyColumns {
  template <class M, class Emit>
  static void names(const M&, const ColumnOptions&, Emit&& emit) {
    emit("kinetic_energy", "J");
    emit("potential_energy", "J");
  }
  template <class M, class Emit>
  static void values(const Sample<M>& s, const ColumnOptions&, Emit&& emit) {
    emit(s.model.kineticEnergy(s.q, s.u));
    emit(s.model.potentialEnergy(s.q));
  }
};

// With ColumnOptions::constraintErrors, per constraint
// `NAME.position_error` (m or rad: its holonomic rows' largest |phi_p|) and
// `NAME.velocity_error` (m/s or rad/s: all its rows' largest |phi_v|). A
// constraint's rows mix lengths and angles (a cut joint's 3 + 3), so these
// two columns have no single unit: their unit is empty.
struct ConstraintErrorColumns {
  template <class M, class Emit>
  static void names([[maybe_unused]] const M& m, const ColumnOptions& o, [[maybe_unused]] Emit&& emit) {
    if constexpr (HasConstraints<M>) {
      if (!o.constraintErrors) return;
      for (const auto& c : m.constraintInfo) {
        const std::string name(c.name);
        emit(name + ".position_error", "");
        emit(name + ".velocity_error", "");
      }
    }
  }
  template <class M, class Emit>
  static void values([[maybe_unused]] const Sample<M>& s, const ColumnOptions& o, [[maybe_unused]] Emit&& emit) {
    if constexpr (HasConstraints<M>) {
      if (!o.constraintErrors || s.model.constraintInfo.size() == 0) return;
      typename M::PositionErrors perr;
      typename M::ConstraintVector verr;
      s.model.constraintPositionErrors(s.q, perr);
      s.model.constraintVelocityErrors(s.q, s.u, verr);
      const auto largest = [](const auto& v, int first, int count) {
        return count > 0 ? v.segment(first, count).cwiseAbs().maxCoeff() : 0.0;
      };
      for (const auto& c : s.model.constraintInfo) {
        emit(largest(perr, c.holonomicRow, c.holonomic));
        emit(std::max(largest(verr, c.holonomicRow, c.holonomic), largest(verr, c.nonholonomicRow, c.nonholonomic)));
      }
    }
  }
};

// The table, in CSV order.
using ColumnTable = std::tuple<TimeColumn, StateColumns, OutputColumns, CableColumns, EnergyColumns,
                            ConstraintErrorColumns>;

// emit(name, unit) for every column of `model`, in CSV order.
template <class M, class Emit>
void columnNames(const M& model, const ColumnOptions& options, Emit&& emit) {
  std::apply([&](auto... group) { (decltype(group)::names(model, options, emit), ...); }, ColumnTable{});
}

// emit(value) for every column at the sample, in CSV order; throws
// ModelStopped where the model cannot be evaluated there.
template <class M, class Emit>
void columnValues(const Sample<M>& sample, const ColumnOptions& options, Emit&& emit) {
  std::apply([&](auto... group) { (decltype(group)::values(sample, options, emit), ...); }, ColumnTable{});
}

}  // namespace capstan::sim
