#pragma once
// Cable paths (docs/cables.md): a cable from an origin point over via
// points and wrapping surfaces to a termination point, with the semantics
// of Simbody's CablePath. Header-only, over double: the solver branches on
// values, so generated code calls it as an opaque function with the frames
// its kinematics computed.
//
//   cable/types.hpp   model (CablePath, Obstacle), state, solved path, errors
//   cable/wrap.hpp    one surface: signed-length geodesics, natural variations,
//                     wrap angle, shortest-path guard, touchdown tracking
//   cable/solver.hpp  Newton on all active wraps together (Jacobi-field Jacobian)
//   cable/path.hpp    solveForInitialCablePath, updateCablePath
//   cable/forces.hpp  segment tensions (capstan friction), applyBodyForces,
//                     calcCablePower, cableSpring
//   cable/sensitivity.hpp  how the path (its contact points' sliding
//                     included), its length, length rate and forces change
//                     with the frames: pieces of exact derivatives
//   cable/model.hpp   a model's cable: path, springs and the forces on its
//                     bodies, as generated code and the interpreter use it
#include <capstan/cable/forces.hpp>
#include <capstan/cable/model.hpp>
#include <capstan/cable/path.hpp>
#include <capstan/cable/sensitivity.hpp>
#include <capstan/cable/solver.hpp>
#include <capstan/cable/types.hpp>
#include <capstan/cable/wrap.hpp>
