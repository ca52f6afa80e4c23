#pragma once
// The definition of evaluateModelCable (capstan/cable/model.hpp, which
// declares it and says what it does): the path solved by continuation, the
// tensions, the spatial forces on the bodies. Included by model.hpp unless
// CAPSTAN_CABLE_COMPILED_APART, then by the one translation unit that
// compiles it.

#include <capstan/cable/forces.hpp>
#include <capstan/cable/model.hpp>
#include <capstan/cable/path.hpp>
#include <capstan/cable/sensitivity.hpp>
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

CAPSTAN_CABLE_SOLVE bool evaluateModelCableDerivatives(
    const ModelCable& c, std::span<const Motion> frames, std::span<const Vector3> p_BoFo_W,
    const CablePathState& state, const ModelCableValues& values, std::span<const double> actuatorTensions,
    const Eigen::Ref<const Eigen::MatrixXd>& Gq, const Eigen::Ref<const Eigen::MatrixXd>& Gu,
    Eigen::Ref<Eigen::MatrixXd> dvalues_dq, Eigen::Ref<Eigen::MatrixXd> dvalues_du, Eigen::Ref<Eigen::MatrixXd> dtau_dq,
    Eigen::Ref<Eigen::MatrixXd> dtau_du) {
  if (hasFriction(c.path)) return false;
  const auto m = static_cast<std::size_t>(c.path.numObstacles());
  const auto nu = static_cast<int>(Gq.cols());
  const double T = values.tension;
  // The forces at the frames' origins, for the change of their moments
  // about the body origins as the offsets p_BoFo_W turn.
  std::vector<SpatialForce> F(m, SpatialForce::Zero()), dF(m);
  applyBodyForces(c.path, state, T, frames, F);
  std::vector<FrameVariation> d(m);
  const ContactPointSensitivity sensitivity(c.path, frames, state);
  std::vector<Vector3> dP, dQ;
  const auto rows = [](const auto& G, std::size_t i, int k, int j) {
    return Vector3(G.template block<3, 1>(6 * static_cast<Eigen::Index>(i) + k, j));
  };
  // Columns 0 .. nu-1 along q + eps N(q) e_j (the poses move by Gu's
  // column, the velocities change by Gq's), then by u_j (the velocities
  // change by Gu's column).
  for (int col = 0; col < 2 * nu; ++col) {
    const bool byQ = col < nu;
    const int j = byQ ? col : col - nu;
    const Eigen::Ref<const Eigen::MatrixXd>& G = byQ ? Gq : Gu;
    for (std::size_t i = 0; i < m; ++i) {
      d[i].rotation = byQ ? rows(Gu, i, 0, j) : Vector3::Zero();
      d[i].origin = byQ ? rows(Gu, i, 3, j) : Vector3::Zero();
      d[i].angularVelocity = rows(G, i, 0, j);
      d[i].velocity = rows(G, i, 3, j);
    }
    sensitivity.apply(d, dP, dQ);
    const double dL = calcLengthVariation(frames, state, d);
    const double dLdot = calcLengthRateVariation(frames, state, d, dP, dQ);
    double dT = 0, dE = 0;
    for (const ModelCableSpring& s : c.springs) {
      const CableSpringVariation v = cableSpringVariation(state.length, state.lengthDot, s.stiffness, s.slackLength,
                                                          s.dissipation, dL, dLdot);
      dT += v.tension;
      dE += v.energy;
    }
    for (std::size_t a = 0; a < actuatorTensions.size(); ++a)
      if (actuatorTensions[a] > 0) dT += G(6 * static_cast<Eigen::Index>(m) + static_cast<Eigen::Index>(a), j);
    (byQ ? dvalues_dq : dvalues_du).col(j) << dL, dLdot, dT, dE;
    for (SpatialForce& x : dF) x.setZero();
    calcBodyForceVariations(frames, state, d, T, dT, dP, dQ, dF);
    // sum_B J_WB^T dF_Bo_W over the frames on bodies, dF_Bo_W = [dn +
    // d(p_BoFo_W) x f + p_BoFo_W x df; df] with d(p_BoFo_W) = theta x
    // p_BoFo_W: J_WB^T dF_Bo_W = J_w^T (dn + d(p_BoFo_W) x f) + J_vFo^T df,
    // J_vFo = J_vBo - [p_BoFo_W]x J_w (Gu's rows of F).
    auto tau = (byQ ? dtau_dq : dtau_du).col(j);
    for (std::size_t i = 0; i < m; ++i) {
      if (c.body[i] < 0) continue;
      const auto r = 6 * static_cast<Eigen::Index>(i);
      const Vector3 moment = dF[i].head<3>() + d[i].rotation.cross(p_BoFo_W[i]).cross(Vector3(F[i].tail<3>()));
      tau += Gu.middleRows<3>(r).transpose() * moment + Gu.middleRows<3>(r + 3).transpose() * dF[i].tail<3>();
    }
  }
  return true;
}

}  // namespace capstan::cable
