#include "codegen/rewrites.hpp"

#include <cmath>

#include <Eigen/Geometry>

namespace capstan::codegen {

using symbolic::Expr;

namespace {

// The rotation R with R e_z = a for a unit a, chosen so that R is a signed
// permutation when a is a coordinate axis.
Mat3<double> rotationTakingZTo(const Vec3<double>& a) {
  const Vec3<double> helper = std::abs(a[0]) < 0.9 ? Vec3<double>::UnitX() : Vec3<double>::UnitY();
  const Vec3<double> x = (helper - helper.dot(a) * a).normalized();
  Mat3<double> R;
  R << x, a.cross(x), a;
  return R;
}

}  // namespace

void alignJointAxes(Mechanism<Expr>& mechanism) {
  auto constant = [](const Vec3<Expr>& v, Vec3<double>& out) {
    for (int k = 0; k < 3; ++k) {
      if (!v[k].isConstant()) return false;
      out[k] = v[k].value();
    }
    return true;
  };
  auto coordinateAxis = [](const Vec3<double>& v) { return v.cwiseAbs().maxCoeff() == 1.0; };
  auto turn = [](Joint<Expr>& joint, const Mat3<double>& R) {
    const Mat3<Expr> Rx = R.cast<Expr>();
    joint.X_PF.R = joint.X_PF.R * Rx;
    joint.X_BM.R = joint.X_BM.R * Rx;
  };
  for (Joint<Expr>& joint : mechanism.joints) {
    Vec3<double> a, b;
    switch (jointAxes(joint.type)) {
      case JointAxes::Axis:
        if (!constant(joint.axis, a) || coordinateAxis(a) || std::abs(a.norm() - 1.0) > 1e-12) break;
        turn(joint, rotationTakingZTo(a));
        joint.axis = Vec3<Expr>(Expr(0.0), Expr(0.0), Expr(1.0));
        break;
      case JointAxes::Universal:
        if (!constant(joint.axis_a, a) || !constant(joint.axis_b, b) || (coordinateAxis(a) && coordinateAxis(b)) ||
            std::abs(a.dot(b)) > 1e-12 || std::abs(a.norm() - 1.0) > 1e-12 || std::abs(b.norm() - 1.0) > 1e-12) {
          break;
        }
        {
          Mat3<double> R;
          R << a, b, a.cross(b);
          turn(joint, R);
        }
        joint.axis_a = Vec3<Expr>(Expr(1.0), Expr(0.0), Expr(0.0));
        joint.axis_b = Vec3<Expr>(Expr(0.0), Expr(1.0), Expr(0.0));
        break;
      case JointAxes::None:
        break;
    }
  }
}

}  // namespace capstan::codegen
