#pragma once
// capstan::geometry: contact surfaces, their differential geometry and
// geodesics (docs/geometry.md). Header-only; needs Eigen only.
#include <capstan/geometry/geodesic.hpp>
#include <capstan/geometry/geodesic_shooting.hpp>
#include <capstan/geometry/geodesic_solvers.hpp>
#include <capstan/geometry/implicit_ops.hpp>
#include <capstan/geometry/surface_queries.hpp>
#include <capstan/geometry/surfaces.hpp>
#include <capstan/geometry/types.hpp>
