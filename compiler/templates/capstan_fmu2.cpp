// The binary of an FMI 2.0 FMU that `capstan fmu` builds around a generated
// model header: this unit, compiled with -DCAPSTAN_MODEL_CLASS=Name
// -include Name.hpp -fPIC, with the FMU's variables beside it
// (capstan_fmu_variables.hpp: its GUID, parameters and start values, as
// modelDescription.xml lists them), linked -shared with the simulation
// engine (engine.cpp: capstan/sim/program_run.hpp) and, for a model with
// cables, the cable path solver (capstan/cable/model_solve.hpp). The
// functions are FMI 2.0's (capstan/sim/fmu2.hpp).
#define CAPSTAN_FMU_CLASS capstan_models::CAPSTAN_MODEL_CLASS
#include "capstan_fmu_variables.hpp"
#include "capstan/sim/fmu2.hpp"
