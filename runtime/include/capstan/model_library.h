/* A model library's C interface: what `capstan library MODEL.cap` builds
 * (a shared library: the generated class, the simulation engine, and these
 * functions), and what Python's `capstan` module, or a C program through
 * dlopen, calls. C, so that the caller needs neither the compiler nor the
 * C++ library the model was built with.
 *
 * One capstan_model is one instance of the model (its own parameters, its
 * own scratch state); instances are independent, so threads may each use
 * their own at once. One instance must not be used by two threads at once.
 *
 * Vectors are arrays of double: q (nq), u (nu), udot (nu); external forces
 * 6 per body ([n; f] about the body origin, in World, N*m and N); matrices
 * row-major. Functions that can fail return 0 on success and non-zero on
 * failure, with capstan_model_error() saying why; none throws, none
 * exits. Sizes and names: capstan_model_shape(), a JSON object (see
 * docs/embedding.md, "The model library").
 */
#ifndef CAPSTAN_MODEL_LIBRARY_H
#define CAPSTAN_MODEL_LIBRARY_H

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface; capstan_library_version() returns it. */
#define CAPSTAN_LIBRARY_VERSION 1

typedef struct capstan_model capstan_model;

/* A record of evaluate (capstan eval's numbers): its key (`udot`,
 * `mass_matrix`, `R_WB`, ...), the element it belongs to (a body, frame,
 * bushing, contact, cable or obstacle index; -1 for the model), its
 * values. */
typedef void (*capstan_record_fn)(void* context, const char* key, int element, const double* values, int count);

/* Called after each row with the fraction of the run done; returning
 * non-zero stops the run after that row (as SIGINT stops `capstan
 * simulate`). */
typedef int (*capstan_progress_fn)(void* context, double fraction);

int capstan_library_version(void);

/* A new instance with the parameters the library was built with; NULL if
 * memory ran out. */
capstan_model* capstan_model_new(void);
void capstan_model_free(capstan_model* model);

/* Why the last call on `model` failed ("" after one that succeeded). */
const char* capstan_model_error(const capstan_model* model);

/* {"model": NAME, "nq": .., "nu": .., "nb": .., "q_names": [..],
 * "u_names": [..], "output_names": [..], "body_names": [..],
 * "bushing_names": [..], "cable_names": [..], "constraints": [..],
 * "derivatives": true|false}: valid while the instance lives. */
const char* capstan_model_shape(const capstan_model* model);

/* Sets a runtime parameter element (`link[2].body.mass`, `J[0,1]`); no
 * bounds are checked here (capstan does that: docs/embedding.md). */
int capstan_model_set_parameter(capstan_model* model, const char* name, double value);

int capstan_model_initial_state(const capstan_model* model, double* q, double* u);

/* udot at (t, q, u) as `capstan eval` gives it: the forward dynamics with
 * the external forces (NULL: none) and, for a model with constraints, the
 * constraint solver's exact solution. */
int capstan_model_forward_dynamics(capstan_model* model, double t, const double* q, const double* u,
                                   const double* external_forces, double* udot);

/* d udot / dq, d udot / du, d udot / dtau (each nu x nu, row-major), from
 * the generated analytical derivatives: a library built with
 * `--derivatives` only. */
int capstan_model_derivatives(capstan_model* model, double t, const double* q, const double* u, double* dudot_dq,
                              double* dudot_du, double* dudot_dtau);

/* Every record of `capstan eval` at (t, q, u), to `record`. */
int capstan_model_evaluate(capstan_model* model, double t, const double* q, const double* u,
                           const double* external_forces, int derivatives, capstan_record_fn record, void* context);

/* Runs a simulation from the initial state: argv is `capstan simulate`'s
 * request as the driver program takes it (`--t-end=T`, `--dt=H`,
 * `--integrator=NAME`, `--tol=X`, `--constraint-errors`, `--baumgarte=T`,
 * `--constraint-tol=X`, `--wall-clock-limit=S`, `NAME=VALUE`...). The rows
 * are kept in the instance (capstan_model_table). Returns 0 for a completed
 * run; 1 for one that failed part way, whose rows are kept and whose
 * reason capstan_model_error() gives; 2 for a request it cannot take;
 * 128 + 2 for a run that progress stopped. */
int capstan_model_simulate(capstan_model* model, int argc, const char* const* argv, capstan_progress_fn progress,
                           void* context);

/* The last simulation's table: its rows and columns and the values,
 * row-major, valid until the next simulation or capstan_model_free. */
int capstan_model_table(const capstan_model* model, long* rows, int* columns, const double** values);
const char* capstan_model_column_name(const capstan_model* model, int column);

#ifdef __cplusplus
}
#endif

#endif /* CAPSTAN_MODEL_LIBRARY_H */
