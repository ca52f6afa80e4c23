// Rewrites of the traced model that change the generated code, not the
// results.
#pragma once

#include <capstan/mechanism.hpp>

#include "symbolic/expr.hpp"

namespace capstan::codegen {

// Turns each Revolute, Prismatic and Cylindrical joint with a tilted axis
// (not a coordinate axis) so that it moves about and along z, and each
// Universal with perpendicular tilted axes so that they are x and y: F and
// M are both turned by the constant R (X_PF R, X_BM R), which leaves every
// body pose, q and u as they were, while X_FM(q) becomes a rotation about a
// coordinate axis, mostly zeros when traced (Rodrigues about a tilted axis
// fills all nine entries). Ball and Free joints are left alone: their q is
// the quaternion of R_FM itself. Used for generated code only; the
// interpreter keeps the model's frames, so --interpret checks this too.
void alignJointAxes(Mechanism<symbolic::Expr>& mechanism);

}  // namespace capstan::codegen
