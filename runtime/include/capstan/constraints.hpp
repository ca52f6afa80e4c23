// Constraint rows over Scalar: loop-closing (cut) joints and Simbody's
// Constraint::SphereOnSphereContact, as the four things a constraint solver
// needs (RBDL's calcPositionError, calcVelocityError, calcConstraintJacobian,
// calcGamma):
//   phi_p(q)    position errors of the holonomic rows (m, or dimensionless)
//   phi_v(q,u)  velocity errors of every row; = G u
//   G(q)        the constraint Jacobian (rows x nu)
//   gamma(q,u)  the right-hand side of G udot = gamma: minus the rows'
//               acceleration at udot = 0 (the bias, -Gdot u)
// Row order: every constraint's holonomic rows, in model order, then every
// constraint's nonholonomic rows (as Simbody orders its multipliers).
// Multipliers follow Simbody's sign: M udot = tau - C - G^T lambda, so lambda
// is the negative of the constraint force (SPEC §5).
//
// Every row is built from the motion of frames fixed on bodies
// (FrameKinematics, World for body -1): R_WF, p_WFo, w_WF, v_WFo, the bias
// accelerations dw, a (their values at udot = 0) and J_WF (6 x nu).
//
// Loop closure. A cut joint with frames F (frame_a) and M (frame_b) leaves
// the motion its type allows and forbids the rest with rows of two kinds,
// every direction fixed in its frame (d, x in F; y in M):
//   translation     phi = d . p,        d = R_WF d_F, p = p_WMo - p_WFo
//     phi_v = d . pdot + ddot . p,      ddot = w_F x d, pdot = v_Mo - v_Fo
//     G     = d^T (Jv_M - Jv_F) + (d x p)^T Jw_F
//     phi_a = d . (a_M - a_F) + 2 ddot . pdot + (dw_F x d + w_F x ddot) . p
//   perpendicular   phi = X . Y - c0,   X = R_WF x_F, Y = R_WM y_M
//     phi_v = (w_M - w_F) . (Y x X)
//     G     = (Y x X)^T (Jw_M - Jw_F)
//     phi_a = Xddot . Y + 2 Xdot . Ydot + X . Yddot,  Xdot = w_F x X,
//             Xddot = dw_F x X + w_F x Xdot (and so for Y with M)
// and gamma = -phi_a at the bias accelerations. Minimal rows per cut joint
// type, as each type's JointTraits::loopClosure (mechanism.hpp) asks for
// them (axis a in F, b and c completing a right-handed basis, e_i F's axes):
//   Weld         translation e1 e2 e3; perpendicular (e2,e3) (e3,e1) (e1,e2)   6
//   Revolute     translation e1 e2 e3; perpendicular (b,a) (c,a)               5
//   Prismatic    translation b c;      perpendicular (e2,e3) (e3,e1) (e1,e2)   5
//   Cylindrical  translation b c;      perpendicular (b,a) (c,a)               4
//   Universal    translation e1 e2 e3; perpendicular (axis_a, axis_b) - c0    4
//   Ball         translation e1 e2 e3                                          3
//   Free         none                                                          0
//
// Sphere on sphere (Simbody's semantics). Sphere centers Sf on body F and Sb
// on body B, radii rf and rb; p = p_WSb - p_WSf, d = |p|, n = p / d:
//   holonomic    phi = d - (rf + rb)   (the signed separation)
//     phi_v = n . pdot,  G = n^T (Jv_Sb - Jv_Sf),
//     phi_a = n . (a_Sb - a_Sf) + (|pdot|^2 - (n . pdot)^2) / d
//   contact point Co = p_WSf + rf / (rf + rb) p; contact frame C with z = n
//   and x, y fixed on F for the pose: from n expressed in Sf's frame, the
//   branch-free orthonormal basis of Duff et al. (JCGT 6(1), 2017).
//   rolling (optional), t = Cx, Cy:  phi_v = t . (v_B(Co) - v_F(Co)), the
//   slip of B's material point at Co relative to F's;
//     G = t^T (Jv_Sb - Jv_Sf) + ((Co - p_Sb) x t)^T Jw_B - ((Co - p_Sf) x t)^T Jw_F
//     phi_a = (w_F x t) . v_rel + t . (dv_B - dv_F),  with Codot = v_Sf + k pdot,
//       dv_B = a_Sb + dw_B x (Co - p_Sb) + w_B x (Codot - v_Sb), F alike, k = rf/(rf+rb).
// Multipliers lambda = (lx, ly, lz) are the negative of the force on B at
// Co, in C: F_B = -(lx Cx + ly Cy + lz Cz), and F's is opposite.
//
// Coupler (Drake's coupler constraint; Simbody's CoordinateCoupler with a
// linear function; URDF's <mimic>). Tree joints f (the follower) and l (the
// leader) of one coordinate each, with u = qdot, ratio r and offset o:
//   holonomic    phi = q_f - r q_l - o   (rad or m, the follower's)
//     phi_v = u_f - r u_l,  G = e_f - r e_l (unit rows of u),  gamma = 0
// Its multiplier is a generalized force: -lambda on the follower's
// coordinate and r lambda on the leader's. It applies no force at a body
// frame of its own (constraintBodyForces leaves it out; -G^T lambda holds it).
//
// Traceable with a symbolic Scalar: the only value-dependent choice (the
// sign in the contact basis) goes through selectNonNegative().
#pragma once

#include "capstan/kinematics.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace capstan {

// A frame fixed on a body: X_BF, its pose in the body frame; body -1 is
// World (X_BF is then X_WF).
template <class Scalar>
struct BodyFrame {
  int body = -1;
  Transform<Scalar> X_BF;
};

// The motion of a frame F in World at (q, u).
template <class Scalar>
struct FrameKinematics {
  Mat3<Scalar> R = Mat3<Scalar>::Identity();  // R_WF
  Vec3<Scalar> p = Vec3<Scalar>::Zero();      // p_WoFo_W (m)
  Vec3<Scalar> w = Vec3<Scalar>::Zero();      // w_WF_W (rad/s)
  Vec3<Scalar> v = Vec3<Scalar>::Zero();      // v_WFo_W (m/s)
  Vec3<Scalar> dw = Vec3<Scalar>::Zero();     // angular acceleration at udot = 0 (rad/s^2)
  Vec3<Scalar> a = Vec3<Scalar>::Zero();      // acceleration of Fo at udot = 0 (m/s^2)
  MatrixX<Scalar> J;                          // J_WF (6 x nu): angular rows, then linear
};

// Needs velocity kinematics (forwardKinematics with u) in `data`.
template <class Scalar>
FrameKinematics<Scalar> frameKinematics(const Mechanism<Scalar>& model, const Data<Scalar>& data,
                                        const BodyFrame<Scalar>& f) {
  FrameKinematics<Scalar> k;
  if (f.body < 0) {
    k.R = f.X_BF.R;
    k.p = f.X_BF.p;
    k.J = MatrixX<Scalar>::Zero(6, model.nu);
    return k;
  }
  const auto b = static_cast<std::size_t>(f.body);
  const Transform<Scalar>& X_WB = data.X_WB[b];
  k.R = X_WB.R * f.X_BF.R;
  k.p = X_WB * f.X_BF.p;
  const Vec3<Scalar> w_WB = data.V_WB[b].template head<3>();
  k.w = w_WB;
  k.v = data.V_WB[b].template tail<3>() + cross(w_WB, Vec3<Scalar>(X_WB.R * f.X_BF.p));
  const Vec6<Scalar> A = frameJacobianDotU(model, data, f.body, f.X_BF.p);
  k.dw = A.template head<3>();
  k.a = A.template tail<3>();
  frameJacobian(model, data, f.body, f.X_BF.p, k.J);
  return k;
}

// copysign(1, x), with +1 at x = 0; a symbolic Scalar supplies
// select(condition, a, b) (found by argument-dependent lookup).
template <class Scalar>
Scalar selectNonNegative(const Scalar& x, const Scalar& ifNonNegative, const Scalar& ifNegative) {
  if constexpr (std::is_arithmetic_v<Scalar>) {
    return x >= Scalar(0) ? ifNonNegative : ifNegative;
  } else if constexpr (requires { select(x >= Scalar(0), ifNonNegative, ifNegative); }) {
    return select(x >= Scalar(0), ifNonNegative, ifNegative);
  } else {
    return x >= Scalar(0) ? ifNonNegative : ifNegative;  // e.g. dual numbers: their value decides
  }
}

// A right-handed orthonormal basis (x, y, n) for the unit vector n, without
// branches (Duff et al., "Building an Orthonormal Basis, Revisited", 2017).
template <class Scalar>
void basisFromNormal(const Vec3<Scalar>& n, Vec3<Scalar>& x, Vec3<Scalar>& y) {
  const Scalar s = selectNonNegative(n[2], Scalar(1), Scalar(-1));
  const Scalar a = Scalar(-1) / (s + n[2]);
  const Scalar b = n[0] * n[1] * a;
  x = Vec3<Scalar>(Scalar(1) + s * n[0] * n[0] * a, s * b, -s * n[0]);
  y = Vec3<Scalar>(b, s + n[1] * n[1] * a, -n[1]);
}

// ----------------------------------------------------------- loop closure

enum class LoopRowKind { Translation, Perpendicular };

// One row of a cut joint: a translation along inF (fixed in F), or the
// perpendicularity of inF (fixed in F) and inM (fixed in M), less `rest`
// (their dot product at q = 0).
struct LoopRow {
  LoopRowKind kind = LoopRowKind::Translation;
  Eigen::Vector3d inF = Eigen::Vector3d::UnitX();
  Eigen::Vector3d inM = Eigen::Vector3d::UnitX();
  double rest = 0.0;
};

// The rows JointTraits::loopClosure asks for, in its order. Axes are unit
// vectors, in F (axis_b: its components in F at q = 0, fixed in M); b and c
// complete `axis` to a right-handed basis (axis, b, c).
struct LoopRowBuilder {
  using V = Eigen::Vector3d;
  V axis, axis_a, axis_b, b, c;
  std::vector<LoopRow> rows;

  LoopRowBuilder(const V& axis_, const V& axis_a_, const V& axis_b_) : axis(axis_), axis_a(axis_a_), axis_b(axis_b_) {
    basisFromNormal<double>(axis, b, c);
  }
  void translation(const V& d) { rows.push_back({LoopRowKind::Translation, d, d, 0.0}); }
  void perpendicular(const V& x, const V& y) { rows.push_back({LoopRowKind::Perpendicular, x, y, x.dot(y)}); }
  void allTranslations() {
    translation(V::UnitX());
    translation(V::UnitY());
    translation(V::UnitZ());
  }
  void allRotations() {
    perpendicular(V::UnitY(), V::UnitZ());
    perpendicular(V::UnitZ(), V::UnitX());
    perpendicular(V::UnitX(), V::UnitY());
  }
};

// The minimal independent rows of a cut joint (the table above).
inline std::vector<LoopRow> loopClosureRows(JointType type, const Eigen::Vector3d& axis,
                                            const Eigen::Vector3d& axis_a, const Eigen::Vector3d& axis_b) {
  LoopRowBuilder builder(axis, axis_a, axis_b);
  visitJointType(type, [&](auto traits) { decltype(traits)::loopClosure(builder); });
  return std::move(builder.rows);
}

// ------------------------------------------------------------ constraints

enum class ConstraintType { LoopJoint, SphereOnSphere, Coupler };

template <class Scalar>
struct Constraint {
  ConstraintType type = ConstraintType::LoopJoint;
  std::string name;
  // LoopJoint: the cut joint's F (frame_a) and M (frame_b).
  // SphereOnSphere: the sphere centers Sf (F) and Sb (M), their frames.
  BodyFrame<Scalar> F, M;
  std::vector<LoopRow> rows;                         // LoopJoint
  Scalar radiusF = Scalar(0), radiusB = Scalar(0);   // SphereOnSphere (m)
  bool rolling = false;                              // SphereOnSphere
  int qFollower = -1, uFollower = -1;                // Coupler: the joints' coordinates in q and u
  int qLeader = -1, uLeader = -1;
  Scalar ratio = Scalar(1), offset = Scalar(0);      // Coupler

  int holonomic() const { return type == ConstraintType::LoopJoint ? static_cast<int>(rows.size()) : 1; }
  int nonholonomic() const { return type == ConstraintType::SphereOnSphere && rolling ? 2 : 0; }
};

// A sphere-on-sphere contact's geometry at a pose (Simbody's
// findContactFrameInG, findSeparation).
template <class Scalar>
struct ContactGeometry {
  Mat3<Scalar> R_WC = Mat3<Scalar>::Identity();  // columns Cx, Cy, Cz (Cz from Sf towards Sb)
  Vec3<Scalar> p_WC = Vec3<Scalar>::Zero();      // Co (m)
  Scalar separation = Scalar(0);                 // d - (rf + rb) (m): > 0 apart, < 0 penetrating
};

template <class Scalar>
struct ConstraintRows {
  VectorX<Scalar> positionErrors;  // (holonomic rows)
  VectorX<Scalar> velocityErrors;  // (rows)
  MatrixX<Scalar> G;               // (rows x nu)
  VectorX<Scalar> gamma;           // (rows)
  // Per row: its constraint's F and M bodies (-1: World) and the row's
  // coefficients about those bodies' origins Bo, in World, so that
  //   G_row = cF_B^T J_WBf + cM_B^T J_WBm   (J of each body at its origin)
  // and multiplier lambda_row applies -lambda_row cF_B to body F and
  // -lambda_row cM_B to body M ([torque; force], torque about Bo).
  std::vector<int> bodyF, bodyM;
  std::vector<Vec6<Scalar>> cF_B, cM_B;
  std::vector<ContactGeometry<Scalar>> contacts;  // per SphereOnSphere constraint, in order
};

template <class Scalar>
int holonomicRows(const std::vector<Constraint<Scalar>>& constraints) {
  int n = 0;
  for (const auto& c : constraints) n += c.holonomic();
  return n;
}
template <class Scalar>
int constraintRows(const std::vector<Constraint<Scalar>>& constraints) {
  int n = 0;
  for (const auto& c : constraints) n += c.holonomic() + c.nonholonomic();
  return n;
}

namespace detail {

// A row at the frames F and M: cF and cM are the coefficients of the
// frames' spatial velocities [w; v at the frame origin] (G_row u = cF . V_F +
// cM . V_M), velocity its error (= G_row u), bias the row's acceleration at
// udot = 0 (gamma = -bias).
template <class Scalar>
struct Row {
  Vec6<Scalar> cF, cM;
  Scalar velocity, bias;
};

template <class Scalar>
Vec6<Scalar> spatial(const Vec3<Scalar>& angular, const Vec3<Scalar>& linear) {
  return spatialVector<Scalar>(angular, linear);
}

}  // namespace detail

// Evaluates every constraint's rows at the state of `data` (velocity
// kinematics at (q, u): forwardKinematics(model, data, q, u)); a Coupler
// reads q and u themselves.
template <class Scalar>
ConstraintRows<Scalar> evaluateConstraints(const Mechanism<Scalar>& model, const Data<Scalar>& data,
                                           const std::vector<Constraint<Scalar>>& constraints,
                                           const VectorX<Scalar>* q = nullptr, const VectorX<Scalar>* u = nullptr) {
  using detail::spatial;
  const int mp = holonomicRows(constraints), m = constraintRows(constraints);
  const auto rowsCount = static_cast<std::size_t>(m);
  ConstraintRows<Scalar> out;
  out.positionErrors = VectorX<Scalar>::Zero(mp);
  out.velocityErrors = VectorX<Scalar>::Zero(m);
  out.G = MatrixX<Scalar>::Zero(m, model.nu);
  out.gamma = VectorX<Scalar>::Zero(m);
  out.bodyF.assign(rowsCount, -1);
  out.bodyM.assign(rowsCount, -1);
  out.cF_B.assign(rowsCount, Vec6<Scalar>::Zero());
  out.cM_B.assign(rowsCount, Vec6<Scalar>::Zero());
  const Scalar two(2);
  const Vec3<Scalar> zero = Vec3<Scalar>::Zero();
  int holo = 0, nonholo = mp;
  for (const Constraint<Scalar>& c : constraints) {
    if (c.type == ConstraintType::Coupler) {
      if (!q || !u) throw std::logic_error("capstan::evaluateConstraints: a Coupler needs q and u");
      out.positionErrors[holo] = (*q)[c.qFollower] - c.ratio * (*q)[c.qLeader] - c.offset;
      out.velocityErrors[holo] = (*u)[c.uFollower] - c.ratio * (*u)[c.uLeader];
      out.G(holo, c.uFollower) = Scalar(1);
      out.G(holo, c.uLeader) = -c.ratio;
      ++holo;  // gamma 0, no body frames
      continue;
    }
    const FrameKinematics<Scalar> F = frameKinematics(model, data, c.F);
    const FrameKinematics<Scalar> M = frameKinematics(model, data, c.M);
    // From each body's origin to its frame's origin (World: none).
    const Vec3<Scalar> p_BoFo = c.F.body < 0 ? zero : Vec3<Scalar>(F.p - data.X_WB[static_cast<std::size_t>(c.F.body)].p);
    const Vec3<Scalar> p_BoMo = c.M.body < 0 ? zero : Vec3<Scalar>(M.p - data.X_WB[static_cast<std::size_t>(c.M.body)].p);
    auto write = [&](int row, const Scalar* position, const detail::Row<Scalar>& r) {
      const auto i = static_cast<std::size_t>(row);
      if (position) out.positionErrors[row] = *position;
      out.velocityErrors[row] = r.velocity;
      out.G.row(row) = r.cF.transpose() * F.J + r.cM.transpose() * M.J;
      out.gamma[row] = -r.bias;
      out.bodyF[i] = c.F.body;
      out.bodyM[i] = c.M.body;
      out.cF_B[i] = shiftForce(r.cF, p_BoFo);
      out.cM_B[i] = shiftForce(r.cM, p_BoMo);
    };
    const Vec3<Scalar> p = M.p - F.p;
    const Vec3<Scalar> pdot = M.v - F.v;
    if (c.type == ConstraintType::LoopJoint) {
      for (const LoopRow& lr : c.rows) {
        if (lr.kind == LoopRowKind::Translation) {
          const Vec3<Scalar> d = F.R * lr.inF.cast<Scalar>();
          const Vec3<Scalar> ddot = cross(F.w, d);
          const Scalar phi = dot(d, p);
          const detail::Row<Scalar> r{spatial<Scalar>(cross(d, p), -d), spatial<Scalar>(zero, d),
                                      dot(d, pdot) + dot(ddot, p),
                                      dot(d, Vec3<Scalar>(M.a - F.a)) + two * dot(ddot, pdot) +
                                          dot(Vec3<Scalar>(cross(F.dw, d) + cross(F.w, ddot)), p)};
          write(holo++, &phi, r);
        } else {
          const Vec3<Scalar> X = F.R * lr.inF.cast<Scalar>(), Y = M.R * lr.inM.cast<Scalar>();
          const Vec3<Scalar> Xdot = cross(F.w, X), Ydot = cross(M.w, Y);
          const Vec3<Scalar> Xddot = cross(F.dw, X) + cross(F.w, Xdot), Yddot = cross(M.dw, Y) + cross(M.w, Ydot);
          const Vec3<Scalar> YxX = cross(Y, X);
          const Scalar phi = dot(X, Y) - Scalar(lr.rest);
          const detail::Row<Scalar> r{spatial<Scalar>(-YxX, zero), spatial<Scalar>(YxX, zero),
                                      dot(Vec3<Scalar>(M.w - F.w), YxX),
                                      dot(Xddot, Y) + two * dot(Xdot, Ydot) + dot(X, Yddot)};
          write(holo++, &phi, r);
        }
      }
      continue;
    }
    // Sphere on sphere: F and M are the sphere centers Sf and Sb. Coincident
    // centers (d = 0) have no center line: Cz is then F's z axis, as
    // arbitrary as Simbody's choice, and never a division by zero.
    using std::sqrt;
    const Scalar d = sqrt(dot(p, p));
    const Scalar dSafe = selectNonNegative(Scalar(-d), Scalar(1), d);
    const Vec3<Scalar> Fz = F.R.col(2);
    Vec3<Scalar> n;
    for (int k = 0; k < 3; ++k) n[k] = selectNonNegative(Scalar(-d), Fz[k], Scalar(p[k] / dSafe));
    const Scalar ndot = dot(n, pdot);
    const Scalar separation = d - (c.radiusF + c.radiusB);
    write(holo++, &separation,
          {spatial<Scalar>(zero, -n), spatial<Scalar>(zero, n), ndot,
           dot(n, Vec3<Scalar>(M.a - F.a)) + (dot(pdot, pdot) - ndot * ndot) / dSafe});
    // The contact frame: x, y from n in Sf's frame (fixed on F), so C is
    // fixed on F for this pose.
    Vec3<Scalar> xF, yF;
    basisFromNormal<Scalar>(Vec3<Scalar>(F.R.transpose() * n), xF, yF);
    ContactGeometry<Scalar> geometry;
    const Scalar k = c.radiusF / (c.radiusF + c.radiusB);
    geometry.R_WC.col(0) = F.R * xF;
    geometry.R_WC.col(1) = F.R * yF;
    geometry.R_WC.col(2) = n;
    geometry.p_WC = F.p + k * p;
    geometry.separation = separation;
    if (c.rolling) {
      // The slip of B's material point at Co relative to F's, along Cx and
      // Cy held fixed on F; Co moves along the center line.
      const Vec3<Scalar> Co = geometry.p_WC;
      const Vec3<Scalar> rB = Co - M.p, rF = Co - F.p;  // from each center to Co
      const Vec3<Scalar> vRel = (M.v + cross(M.w, rB)) - (F.v + cross(F.w, rF));
      const Vec3<Scalar> Codot = F.v + k * pdot;
      const Vec3<Scalar> dvB = M.a + cross(M.dw, rB) + cross(M.w, Vec3<Scalar>(Codot - M.v));
      const Vec3<Scalar> dvF = F.a + cross(F.dw, rF) + cross(F.w, Vec3<Scalar>(Codot - F.v));
      for (int axis = 0; axis < 2; ++axis) {
        const Vec3<Scalar> t = geometry.R_WC.col(axis);
        write(nonholo++, nullptr,
              {spatial<Scalar>(-cross(rF, t), -t), spatial<Scalar>(cross(rB, t), t), dot(t, vRel),
               dot(Vec3<Scalar>(cross(F.w, t)), vRel) + dot(t, Vec3<Scalar>(dvB - dvF))});
      }
    }
    out.contacts.push_back(geometry);
  }
  return out;
}

// The spatial forces that multipliers lambda (rows) apply to the bodies
// (Simbody's calcConstraintForcesFromMultipliers): per body (nb, runtime
// order), [torque about Bo; force], in World. The generalized forces are
// -G^T lambda; both are what M udot = tau - C - G^T lambda adds.
template <class Scalar>
std::vector<Vec6<Scalar>> constraintBodyForces(const Mechanism<Scalar>& model, const ConstraintRows<Scalar>& rows,
                                               const VectorX<Scalar>& lambda) {
  std::vector<Vec6<Scalar>> forces(static_cast<std::size_t>(model.numBodies()), Vec6<Scalar>::Zero());
  for (std::size_t i = 0; i < rows.cF_B.size(); ++i) {
    const Scalar l = lambda[static_cast<Eigen::Index>(i)];
    if (rows.bodyF[i] >= 0) forces[static_cast<std::size_t>(rows.bodyF[i])] -= l * rows.cF_B[i];
    if (rows.bodyM[i] >= 0) forces[static_cast<std::size_t>(rows.bodyM[i])] -= l * rows.cM_B[i];
  }
  return forces;
}

}  // namespace capstan
