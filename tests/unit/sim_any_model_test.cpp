// capstan::sim::Erased: a generated class behind capstan::sim::AnyModel, as
// the simulation engine runs it (capstan/sim/program.hpp), gives what the
// class gives: every record of evaluate and every row of simulate. On two
// golden headers: a four-bar linkage (a cut joint: the constraint solver's
// split dynamics, the constraint rows) and a bushing mount (bushings, the
// gimbal-lock check).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "../golden/bushing/BushingMount.hpp"
#include "../golden/fourbar/FourBar.hpp"

#include <capstan/sim/any_model.hpp>
#include <capstan/sim/evaluate.hpp>
#include <capstan/sim/simulate.hpp>

namespace {

using Records = std::map<std::string, std::vector<double>>;

template <class M>
Records evaluated(const M& model, const typename M::Q& q, const typename M::U& u) {
  Records records;
  capstan::sim::evaluate(model, 0.3, q, u, nullptr, true,
                         [&](std::string_view key, int element, const std::vector<double>& values) {
                           records[capstan::sim::evalKey(key, element)] = values;
                         });
  return records;
}

// The CSV text of a 0.5 s run from the model's initial state.
template <class M>
std::string simulated(const M& model) {
  char name[] = "/tmp/capstan_any_model_testXXXXXX";
  const int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  capstan::sim::Request request;
  request.loop.tEnd = 0.5;
  request.loop.dt = 0.05;
  capstan::sim::Result result;
  {
    capstan::sim::RowWriter out(fd);
    result = capstan::sim::simulate(model, request, out);
  }
  CHECK(result.ok());
  std::string text;
  if (std::FILE* f = std::fopen(name, "r")) {
    for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
    std::fclose(f);
  }
  ::close(fd);
  ::unlink(name);
  return text;
}

// Equal to round-off: the same code, through fixed- or dynamic-size vectors.
void checkSame(const Records& direct, const Records& erased) {
  REQUIRE(direct.size() == erased.size());
  for (const auto& [key, values] : direct) {
    INFO(key);
    REQUIRE(erased.count(key) == 1);
    const std::vector<double>& other = erased.at(key);
    REQUIRE(values.size() == other.size());
    for (std::size_t i = 0; i < values.size(); ++i) CHECK(std::abs(values[i] - other[i]) <= 1e-12 * (1 + std::abs(values[i])));
  }
}

template <class M>
void checkModel(M& model) {
  capstan::sim::Erased<M> erased(model);
  CHECK(erased.nq == M::nq);
  CHECK(erased.nu == M::nu);
  typename M::Q q;
  typename M::U u;
  model.initialState(q, u);
  for (int i = 0; i < M::nu; ++i) u[i] += 0.1 * (i + 1);  // moving, so that the velocity terms count
  const Records direct = evaluated(model, q, u);
  const Records viaErased = evaluated(erased, capstan::sim::AnyModel::Q(q), capstan::sim::AnyModel::U(u));
  CHECK(direct.count("mass_matrix") == 1);
  checkSame(direct, viaErased);
  CHECK(simulated(model) == simulated(erased));
}

}  // namespace

TEST_CASE("a constrained model through AnyModel: the same records and rows") {
  capstan_models::FourBar model;
  capstan::sim::Erased<capstan_models::FourBar> erased(model);
  CHECK(erased.splitDynamics());  // the constraint solver factors M once, as for the class
  CHECK(erased.constraintInfo.size() == capstan_models::FourBar::constraintInfo.size());
  checkModel(model);
}

TEST_CASE("a model with bushings through AnyModel: the same records and rows, the same gimbal lock") {
  capstan_models::BushingMount model;
  checkModel(model);
  capstan::sim::Erased<capstan_models::BushingMount> erased(model);
  REQUIRE(erased.bushingNames.size() == capstan_models::BushingMount::bushingNames.size());
  // A parameter set through the erased model is the class's own.
  const std::string name = "world.gravity[2]";
  REQUIRE(model.parameter(name) != nullptr);
  CHECK(erased.setParameter(name, -3.5));
  CHECK(*model.parameter(name) == -3.5);
  CHECK_FALSE(erased.setParameter("no such parameter", 1.0));
}
