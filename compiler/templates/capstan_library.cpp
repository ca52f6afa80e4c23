// The model library `capstan library` builds around a generated model
// header: this unit, compiled with -DCAPSTAN_MODEL_CLASS=Name -include
// model.hpp -fPIC, linked -shared with the simulation engine that capstan
// compiles once (capstan/sim/program_run.hpp) and, for a model with
// cables, the cable path solver. It defines the C interface of
// capstan/model_library.h for the model (capstan/sim/library.hpp); Python's
// `capstan` module loads it.
#define CAPSTAN_LIBRARY_STRING(x) #x
#define CAPSTAN_LIBRARY_QUOTED(x) CAPSTAN_LIBRARY_STRING(x)
#define CAPSTAN_LIBRARY_CLASS capstan_models::CAPSTAN_MODEL_CLASS
#define CAPSTAN_LIBRARY_NAME CAPSTAN_LIBRARY_QUOTED(CAPSTAN_MODEL_CLASS)
#include "capstan/sim/library.hpp"
