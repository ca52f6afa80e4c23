// The braked wheel: its angular acceleration is the C++ friction law over
// the wheel's moment of inertia about the axle, udot = -friction(u, mu) / Izz.
#include <Wheel.hpp>

#include <cmath>
#include <cstdio>

int main() {
  using Model = capstan_models::Wheel;
  Model model;
  Model::Q q;
  Model::U u, udot;
  model.initialState(q, u);
  model.forwardDynamics(0.0, q, u, udot);
  const double expected = -mylib::friction(u[0], model.params.mu) / 0.25;
  std::printf("wheel: udot = %.17g, friction law / Izz = %.17g\n", udot[0], expected);
  return std::abs(udot[0] - expected) <= 1e-12 * std::abs(expected) ? 0 : 1;
}
