// The runtime's cable path solver (capstan/cable/model_solve.hpp), compiled
// once for the compiler: every other translation unit of capstan_codegen and
// of what links it sees capstan/cable/model.hpp with
// CAPSTAN_CABLE_COMPILED_APART, the declaration of evaluateModelCable only
// (the solver's headers cost each of them seconds of compile time).
#include <capstan/cable/model_solve.hpp>
