// One evaluation of the generated class: its header was generated and found.
#include <StiffSpring.hpp>

#include <cstdio>

int main() {
  capstan_models::StiffSpring model;
  capstan_models::StiffSpring::Q q;
  capstan_models::StiffSpring::U u, udot;
  model.initialState(q, u);
  model.forwardDynamics(0.0, q, u, udot);
  std::printf("udot = %g %g\n", udot[0], udot[1]);
  return udot.allFinite() ? 0 : 1;
}
