// The binary of an FMU that `capstan fmu` builds around a generated model
// header: this unit, compiled with -DCAPSTAN_MODEL_CLASS=Name
// -DCAPSTAN_FMI_VERSION=2 (or 3) -include Name.hpp -fPIC, with the FMU's
// variables beside it (capstan_fmu_variables.hpp: its GUID, parameters and
// start values, as modelDescription.xml lists them), linked -shared with
// the simulation engine (engine.cpp: capstan/sim/program_run.hpp) and, for
// a model with cables, the cable path solver. The functions are FMI 2.0's
// (capstan/sim/fmu2.hpp) or 3.0's (fmu3.hpp), over capstan/sim/fmu.hpp.
#define CAPSTAN_FMU_CLASS capstan_models::CAPSTAN_MODEL_CLASS
#include "capstan_fmu_variables.hpp"
#if CAPSTAN_FMI_VERSION == 3
#include "capstan/sim/fmu3.hpp"
#else
#include "capstan/sim/fmu2.hpp"
#endif
