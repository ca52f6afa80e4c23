#pragma once
// The definition of evaluateModelCable (capstan/cable/model.hpp, which
// declares it and says what it does): the path solved by continuation, the
// tensions, the spatial forces on the bodies. Included by model.hpp unless
// CAPSTAN_CABLE_COMPILED_APART, then by the one translation unit that
// compiles it.

#include <capstan/cable/forces.hpp>
#include <capstan/cable/model.hpp>
#include <capstan/cable/path.hpp>
#include <capstan/cable/types.hpp>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace capstan::cable {

CAPSTAN_CABLE_SOLVE CableResult evaluateModelCable(const ModelCable& c, std::span<const Motion> frames,
                                                   std::span<const Vector3> p_BoFo_W, CablePathState& state,
                                                   ModelCableValues& values, std::span<SpatialForce> F_Bo_W,
                                                   std::span<const double> actuatorTensions) {
  values = ModelCableValues{};
  const CableResult r = updateCablePath(c.path, frames, state);
  if (!r.ok()) return r;
  values.length = state.length;
  values.lengthDot = state.lengthDot;
  for (const ModelCableSpring& s : c.springs) {
    const CableSpringForce f =
        cableSpring(state.length, state.lengthDot, s.stiffness, s.slackLength, s.dissipation);
    values.tension += f.tension;
    values.energy += f.energy;
  }
  for (const double T : actuatorTensions) values.tension += T < 0 ? 0.0 : T;
  values.power = calcCablePower(c.path, state, values.tension);
  if (values.tension == 0) return r;
  if (!std::isfinite(values.tension)) {  // the bodies it touches get NaN: the dynamics are not finite
    for (const int b : c.body)
      if (b >= 0) F_Bo_W[static_cast<std::size_t>(b)].setConstant(values.tension);
    return r;
  }
  // F_Fo_W at each obstacle frame's origin, then shifted to its body's origin.
  SpatialForce F_Fo_W[64];
  std::vector<SpatialForce> many;
  const auto n = static_cast<std::size_t>(c.path.numObstacles());
  std::span<SpatialForce> at(F_Fo_W, std::min<std::size_t>(n, 64));
  if (n > 64) {
    many.assign(n, SpatialForce::Zero());
    at = many;
  }
  for (SpatialForce& F : at) F.setZero();
  applyBodyForces(c.path, state, values.tension, frames, at);
  for (std::size_t i = 0; i < n; ++i) {
    const int b = c.body[i];
    if (b < 0) continue;
    SpatialForce& F = F_Bo_W[static_cast<std::size_t>(b)];
    F.head<3>() += at[i].head<3>() + p_BoFo_W[i].cross(Vector3(at[i].tail<3>()));
    F.tail<3>() += at[i].tail<3>();
  }
  return r;
}

}  // namespace capstan::cable
