// Shared steps: forwardDynamics by the articulated-body algorithm in joint
// frames, and inverseDynamicsDerivatives' recursions, as calls of per-body
// steps, each kind of step emitted once.
//
// Straight-line code runs each instruction once, so past the first-level
// instruction cache (32 KiB) every call streams the function from L2 again
// (docs/performance.md, "The instruction cache": 25-53 % of the time of a
// 32 KiB function, by machine). But a chain's or a limb's bodies repeat.
// So each body's three steps (local_dynamics.hpp's positionStep and
// velocityStep, abaBackwardStep, abaForwardStep; dynamics_derivatives.hpp's
// derivativeForwardStep, derivativeBackwardStep, derivativeColumnStep) are
// traced on their own,
// with what they read of other steps as symbols named by place:
//
//   A0[k]  slot k of another step's array (its parent's velocity, each
//          child's articulated inertia and bias force, ...): only the
//          entries that are not constants are stored, so a constant stays
//          a constant in its readers and is folded there;
//   P[k]   entry k of the call's parameters: the body's parameter stage
//          (X_PF, I_K as the Derived cache holds them) and any other
//          parameter the step reads (armature, gravity), an array per call
//          that updateDerived() fills;
//   q[i], u[i]  the joint's coordinates, through pointers to its first;
//   tau[i]  the generalized forces of its force laws, which the function
//          computes before the steps (as the unrolled code does);
//   udot[i]  (inverseDynamicsDerivatives) the joint's accelerations;
//   o[k], udot[i]  what the step writes: its array, the joint's udot
//          (forwardDynamics), or its columns of the derivatives' pair
//          factors and its own block of dtau_dq (inverseDynamicsDerivatives:
//          Sw[k], F[k], Wq[k], ..., dq[k]).
//
// Hash-consing then makes the steps of one kind of body one expression, so
// steps whose printed code is the same share one kernel: a static member
// function the function calls once per body, in the algorithm's order.
// (The steps cannot be recovered from the unrolled trace: the simplifier
// groups and shares differently along a chain; docs/performance.md,
// "Blocks of one shape do not print alike".)
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <capstan/dynamics_derivatives.hpp>
#include <nlohmann/json.hpp>

#include "codegen/layout.hpp"
#include "symbolic/expr.hpp"
#include "symbolic/printer.hpp"

namespace capstan::codegen {

struct SharedSteps {
  nlohmann::json kernels;              // the IR's Function::kernels: [{name, params, doc, code}]
  std::vector<std::string> prologue;   // the per-body arrays' declarations
  nlohmann::json blocks;               // one call a block, headed by its joint
  nlohmann::json parameterSites;       // [{name, comment, entries}]: Derived arrays (DerivedValues::finish)
  symbolic::OpCount ops;               // of all the calls
  bool ownBlocks = false;              // sharedDerivativeSteps: some joint's own block of dtau_dq is
                                       // written (else dtau_dq is the pairs' loop's alone)
  int pairRows = 0;                    // sharedDerivativeSteps: 1 + the last row of pairF any step
                                       // writes (the rows below it are zero for every dof)
  int sinCosTable = 0;                 // the kernels read sin and cos of q[0] ... q[sinCosTable - 1]
                                       // from the table kSinCosTable, which the function declares
                                       // and fills first (sinCosTableLines); 0: none
  // sharedDerivativeSteps, for forwardDynamicsDerivatives, which makes the
  // same calls with its udot zero until it knows udot (below):
  std::size_t columnsAt = 0;           // blocks[columnsAt ...]: the column steps (after the others)
  std::string bias;                    // statements (in a scope of their own) setting the local
                                       // U C = Newton-Euler's S^T f at udot = 0 from the steps'
                                       // arrays, before the column steps
  std::string correction;              // statements adding what udot (the local, set since)
                                       // changes to the accelerations and forces the column steps
                                       // read: da = da_parent + S udot, df = Y da + the children's
  symbolic::OpCount biasOps, correctionOps;
};

// udot = M^-1 (tau - C) by the articulated-body algorithm in joint frames
// as shared steps, for a model without force elements, external forces or
// cables; tau is the function's local `tau` (its force laws' entries set,
// the others zero and never read). `traced`: the unrolled trace's Data
// (its parameter stage as hoisted into the Derived cache); `comment(j)`:
// the block comment of joint j; `function`: the kernels' prefix
// (`forwardDynamicsStep3`).
SharedSteps sharedAbaSteps(const Mechanism<symbolic::Expr>& mechanism, const local::Data<symbolic::Expr>& traced,
                           const ModelLayout& layout, const std::function<std::string(const JointLayout&)>& comment,
                           const std::string& function);

// inverseDynamicsDerivatives' recursions (dynamics_derivatives.hpp) as
// shared steps, for a model without force elements, external forces or
// cables: the pair factors into the function's locals pairSw, pairF,
// pairWq, pairWu, pairGq, pairGu and each joint's own block of d tau / dq
// into dtau_dq, all set to zero before the calls. `traced`: the trace's
// Data, as for sharedAbaSteps. transposedFactors: pairSw and pairF are
// nu x 6 and nu x 12 (each factor's rows across the dofs, as the pairs'
// loop on a chain reads them), not 6 x nu and 12 x nu.
SharedSteps sharedDerivativeSteps(const Mechanism<symbolic::Expr>& mechanism,
                                  const local::Data<symbolic::Expr>& traced, const ModelLayout& layout,
                                  const std::function<std::string(const JointLayout&)>& comment,
                                  const std::string& function, bool transposedFactors = false);

}  // namespace capstan::codegen
