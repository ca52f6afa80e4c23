/* The types of the Functional Mock-up Interface 2.0 (Modelica Association,
 * "FMI for Model Exchange and Co-Simulation", version 2.0, sections 2.1.2
 * to 2.1.5, 3.2 and 4.2), declared here from the standard's text: what an
 * FMU that capstan exports (capstan/sim/fmu2.hpp) defines its functions
 * with, and what an importer calls them with. The function names are the
 * standard's, without a prefix (a binary FMU's). */
#ifndef CAPSTAN_FMI_FMI2_H
#define CAPSTAN_FMI_FMI2_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void* fmi2Component;             /* an instance of the FMU */
typedef void* fmi2ComponentEnvironment;  /* the importer's, handed back to its callbacks */
typedef void* fmi2FMUstate;              /* a copy of an instance's state */
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char* fmi2String;
typedef char fmi2Byte;

#define fmi2True 1
#define fmi2False 0

typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;

typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment environment, fmi2String instanceName, fmi2Status status,
                                   fmi2String category, fmi2String message, ...);
typedef void* (*fmi2CallbackAllocateMemory)(size_t count, size_t size);
typedef void (*fmi2CallbackFreeMemory)(void* object);
typedef void (*fmi2StepFinished)(fmi2ComponentEnvironment environment, fmi2Status status);

typedef struct {
  fmi2CallbackLogger logger;
  fmi2CallbackAllocateMemory allocateMemory;
  fmi2CallbackFreeMemory freeMemory;
  fmi2StepFinished stepFinished;
  fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

typedef struct {
  fmi2Boolean newDiscreteStatesNeeded;
  fmi2Boolean terminateSimulation;
  fmi2Boolean nominalsOfContinuousStatesChanged;
  fmi2Boolean valuesOfContinuousStatesChanged;
  fmi2Boolean nextEventTimeDefined;
  fmi2Real nextEventTime;
} fmi2EventInfo;

#ifdef __cplusplus
}
#endif

#endif /* CAPSTAN_FMI_FMI2_H */
