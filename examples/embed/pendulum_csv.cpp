// The pendulum's trajectory as `capstan simulate` writes it, from a user's
// program: the generated class run by the runtime's one simulation loop
// (capstan/sim/simulate.hpp), the same rows, the same columns. Writes the
// CSV to standard output; what stopped a failed run goes to stderr.
//
//   build/pendulum_csv 2.0 0.01 > pendulum.csv    # t-end and dt (s)
#include <Pendulum.hpp>

#include <capstan/sim/simulate.hpp>

#include <unistd.h>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  const double tEnd = argc > 1 ? std::atof(argv[1]) : 2.0, dt = argc > 2 ? std::atof(argv[2]) : 0.01;

  capstan_models::Pendulum model;
  capstan::sim::Request request;  // dopri5 at a tolerance of 1e-8
  request.loop.tEnd = tEnd;
  request.loop.dt = dt;
  capstan::sim::RowWriter csv(STDOUT_FILENO);
  const capstan::sim::Result result = capstan::sim::simulate(model, request, csv);

  std::cerr << capstan::sim::report(result, "standard output");
  return capstan::sim::exitStatus(result);
}
