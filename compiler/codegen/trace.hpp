// Tracing: runs the runtime's multibody algorithms with Scalar =
// symbolic::Expr over the model's runtime Mechanism and prints the results as
// straight-line C++ blocks, one per model element. The result is the JSON IR
// (docs/ir.md, codegen/ir.hpp) that the templates render into the model
// header.
#pragma once

#include <string>

#include "codegen/ir.hpp"
#include "codegen/layout.hpp"
#include "mechanics/mechanism.hpp"
#include "sema/flat.hpp"
#include "syntax/source.hpp"

namespace capstan::codegen {

inline constexpr int kIrVersion = 10;

struct TraceOptions {
  std::string capstanVersion;  // "0.1.0"
  std::string sourceName;      // the model file as shown in the banner: `double_pendulum.cap`
  // Also the functions emitted only on request (GeneratedFunction::onRequest):
  // forwardDynamicsDerivatives.
  bool derivatives = false;
  // forwardDynamicsDerivatives by symbolic differentiation of the traced
  // forward dynamics instead of the analytical recursions: the test oracle
  // (`compile --derivatives=symbolic`).
  bool symbolicDerivatives = false;
  // How the results that grow with the square of the model are emitted
  // (every body's frameJacobian<Body> and frameJacobianDotU<Body>,
  // massMatrix, and the derivative functions' pair terms): unrolled, traced
  // functions (the fastest for small models, but their code grows with the
  // sum of the bodies' depths, quadratically along a chain), or compact:
  // O(n) traced kinematics (frameKinematics, massMatrixKinematics) and
  // loops over the tree in the template, and the derivatives' pair factors
  // (local::DerivativePairs) traced and summed in a loop over the dof tree
  // (forwardDynamicsDerivatives only with its M^-1 in loops). Auto:
  // unrolled while that sum is at most kMaxUnrolledQuadraticColumns, and
  // the pair terms while the pairs are at most kMaxUnrolledDerivativePairs.
  enum class Quadratic { Auto, Unrolled, Compact };
  Quadratic quadratic = Quadratic::Auto;
  // How the O(n) tree recursions are emitted (bodyPoses, bodyVelocities,
  // the energies, bias, inverseDynamics, forwardDynamics and its overloads,
  // frameKinematics, and massMatrix where it is compact): unrolled, traced
  // straight-line functions (the fastest), or loops: one traced O(n)
  // function of each joint's own kinematics (jointKinematics) and the
  // recursions written once in the template as loops over the tree, so
  // that a model of hundreds of bodies compiles in seconds rather than
  // minutes. Not for models with cables. Auto: loops past
  // kMaxUnrolledRecursionBodies bodies.
  enum class Recursions { Auto, Unrolled, Loops };
  Recursions recursions = Recursions::Auto;
  // forwardDynamicsDerivatives' M^-1: unrolled (traced: the L^T D L factor
  // and ltdlInverse, which also give udot, so no ABA), or loops at run time
  // over a table of the dofs' parents (udot from ABA). Auto: unrolled while
  // the factor and inverse take at most kMaxTracedInverseWork products (an
  // 18-dof chain), except that from kComposedDerivativesMinSpeeds, where
  // inverseDynamicsDerivatives is shared steps, the function is composed of
  // it and M^-1 alone traced. A dynamic-size mass matrix always takes the
  // loops. GaussJordan: composed, M^-1 by Gauss-Jordan elimination over
  // columns padded to whole SIMD registers, the tree's zeros ignored; Auto
  // takes it for chains of kMinGaussJordanSpeeds to kMaxGaussJordanSpeeds
  // speeds (16 to 40), whose M is dense.
  enum class MassInverse { Auto, Unrolled, Loops, GaussJordan };
  MassInverse massInverse = MassInverse::Auto;
  // Where forwardDynamicsDerivatives is composed and inverseDynamicsDerivatives
  // is shared steps: udot from the function's own M^-1 (Fused: the steps
  // before the column steps at udot = 0, then udot = M^-1 (tau - C) and
  // the column steps at it; no ABA), or from a forwardDynamics call (Call:
  // the form before, for comparison).
  enum class ForwardDynamicsCall { Fused, Call };
  ForwardDynamicsCall forwardDynamicsCall = ForwardDynamicsCall::Fused;
  // Also the IR's `dependencies`: what udot, the outputs and the energies
  // read of (q, u, time), for an FMU's ModelStructure.
  bool dependencies = false;
};

// Auto's limit on the sum over bodies of the dofs between each body and
// World: the dof columns the unrolled per-body frame Jacobians hold
// together, and the mass matrix's entries on and below the diagonal that
// the tree does not leave zero (for one-dof joints).
inline constexpr int kMaxUnrolledQuadraticColumns = 400;

// Auto's limit on the pairs (k, j) of dofs on one path to World, dof k
// with itself included (n (n + 1) / 2 for an n-dof chain), up to which the
// derivative functions' pair terms are traced; past it their factors are
// traced and their sum is a loop over the dof tree at run time
// (docs/generated-code.md, "Compact pair terms"): from a 16-link chain
// up, where the loop is the faster and its code O(nu) rather than O(nu^2)
// (docs/performance.md, "The pair terms in a loop from 16 links").
inline constexpr int kMaxUnrolledDerivativePairs = 120;

// The mean depth of a dof (the pairs (k, j) per dof, (n + 1) / 2 along an
// n-dof chain) from which the derivative functions' pair loop sums by
// columns rather than by paths, where every dof's subtree is a block of
// consecutive dofs: four rows at a time pay for their set-up on long
// columns only (paired, clang++ -O2 -march=native: inverseDynamicsDerivatives
// 1.05x on a 30-link chain, 1.10x on 40, 1.15x on 50; 0.96-1.04x on 20
// and 0.82-0.93x on the 30-dof humanoid, mean depth about 9;
// docs/performance.md, "The pairs' loop by columns").
inline constexpr int kMinPairColumnsMeanDepth = 15;

// Auto's limit on the bodies of a model whose tree recursions are unrolled
// (TraceOptions::recursions): a 64-link chain's unrolled header is about
// 100,000 lines, which g++ -O2 takes about a minute over.
inline constexpr int kMaxUnrolledRecursionBodies = 64;

// The IR of a model whose layout has no Unsupported entries. Throws
// UnsupportedExpression for an expression it cannot translate.
ir::Model traceModel(const sema::FlatModel& model, const mechanics::Mechanism& mech, const ModelLayout& layout,
                     const syntax::SourceManager& sources, const TraceOptions& options);

}  // namespace capstan::codegen
