/* exec.h - the executable handle and the backend interface.
 *
 * A backend is a table of function pointers; the API layer (runtime/api.c)
 * validates arguments and I/O, then calls through the table. Backends:
 * interp (runtime/interp_backend.c), cpu (runtime/cpu_backend.c), cuda
 * (runtime/cuda_backend.c).
 */
#ifndef GC_EXEC_H
#define GC_EXEC_H

#include <pthread.h>

#include "ir/ir.h"
#include "runtime/settings.h"
#include "weights/safetensors.h"

typedef struct graphc_executable gc_exec;

typedef struct gc_backend {
  const char *name;
  /* Required. Generate code, load it, allocate device memory. */
  graphc_status_t (*prepare)(gc_exec *exe, const graphc_compile_options_t *opts, gc_diags *d);
  /* Required. Run with validated host tensors (outputs caller-allocated). */
  graphc_status_t (*run)(gc_exec *exe, const graphc_tensor_t *inputs, graphc_tensor_t *outputs,
                         gc_diags *d);
  /* Optional (NULL: unsupported). Run with caller-owned device pointers. */
  graphc_status_t (*run_device)(gc_exec *exe, const graphc_tensor_t *inputs,
                                graphc_tensor_t *outputs, gc_diags *d);
  /* Optional (NULL: unsupported). Enqueue on the caller's stream (device or pinned
   * host tensors) and return without waiting. */
  graphc_status_t (*enqueue)(gc_exec *exe, const graphc_tensor_t *inputs,
                             graphc_tensor_t *outputs, void *stream, gc_diags *d);
  /* Optional (NULL: the API's execution contexts share the executable's one working
   * memory and take turns). A context with its own working memory; its free waits for
   * its work; a run on it: host tensors (kind 0), device tensors (1), enqueue (2). */
  void *(*ctx_new)(gc_exec *exe, gc_diags *d);
  void (*ctx_free)(gc_exec *exe, void *ctx);
  graphc_status_t (*ctx_run)(gc_exec *exe, void *ctx, int kind, const graphc_tensor_t *inputs,
                             graphc_tensor_t *outputs, void *stream, gc_diags *d);
  /* Optional (NULL: graphs with states are unsupported). A new, empty store for this
   * backend's memory (runtime/states.h), and pointing the executable's states at a store's
   * memory (made zero there when missing); bind again to share another store. */
  struct gc_states *(*states_new)(gc_exec *exe, gc_diags *d);
  graphc_status_t (*bind_states)(gc_exec *exe, struct gc_states *s, gc_diags *d);
  /* Required. Free everything `prepare` made; safe after a failed prepare. */
  void (*release)(gc_exec *exe);
} gc_backend;

extern const gc_backend gc_backend_interp;
extern const gc_backend gc_backend_cuda;   /* runtime/cuda_backend.c */
/* runtime/cpu_backend.c; its .prepare is NULL in builds without a CPU backend. */
extern const gc_backend gc_backend_cpu;

/* A loaded model (driver/api.c; driver/calibrate.c writes calibration into its module). */
struct graphc_model {
  graphc_context_t *ctx;
  char *name;            /* file path or caller's name, for diagnostics */
  char *dir;             /* directory that relative weights paths resolve against */
  char *source;
  size_t source_len;
  gc_module *module;     /* parsed and verified, symbolic dims kept */
  int entry;             /* index of the entry graph */
  char *weights_override;
};

/* graphc_compile with the graph passes run as for backend `target` (DEFAULT: as for
 * the backend compiled for). Ahead-of-time compiles take the interpreter's cheap
 * executable (no device needed) of a graph optimized for cuda or cpu. */
graphc_status_t gc_compile_for(graphc_model_t *m, const graphc_compile_options_t *opts,
                               graphc_backend_t target, graphc_executable_t **out,
                               graphc_error_t *err);

/* driver/ranged.c: the ranged executable of graphc_compile_ranged (exe's module, graph, file and
 * source set; this makes the rest, the backend table included), whether exe is one, and the
 * output infos of a binding (compiled if new). */
graphc_status_t gc_ranged_setup(gc_exec *exe, const graphc_model_t *m, const graphc_compile_options_t *opts,
                                gc_diags *d);
int gc_exec_is_ranged(const gc_exec *exe);
const char *gc_ranged_stats(gc_exec *exe);
graphc_status_t gc_ranged_resolve(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_info_t *out,
                                  gc_diags *d);

/* 1 when the CUDA backend can run here (driver loads and a device exists). s: the
 * runtime settings (which driver library; may be NULL: libcuda.so.1), here and below. */
int gc_cuda_available(const gc_rt_settings *s);
/* A reference to device 0's primary context (NULL when none could be taken: it
 * is only a speed-up), and its release (NULL is fine). A graphc context holds one
 * after its first CUDA executable, so that destroying the last executable does
 * not reset the primary context. */
void *gc_cuda_hold_open(const gc_rt_settings *s);
void gc_cuda_hold_free(void *hold);
/* Open the CUDA driver (cuInit) on a thread while the caller goes on; the
 * handle (NULL when nothing was started) is joined by gc_cuda_prefetch_join. */
void *gc_cuda_prefetch_start(const gc_rt_settings *s);
void gc_cuda_prefetch_join(void *p);

struct graphc_executable {
  graphc_context_t *ctx;
  char *file;                    /* source name, for diagnostics */
  char *source;                  /* source text (run-time errors point into it) */
  size_t source_len;
  gc_module *module;             /* private copy, entry graph specialized */
  gc_graph *graph;               /* verified, all dims concrete */
  gc_safetensors *weights;       /* NULL when the graph has no params */
  graphc_backend_t kind;
  const gc_backend *backend;
  void *state;                   /* the backend's */
  graphc_compile_options_t opts;
  int fuse;                      /* fusion on: not -O0, not --disable-pass=fusion */
  struct gc_tuning *tuning;      /* the tuning file's entries (opts.tuning), or NULL */
  size_t n_inputs, n_outputs;
  graphc_tensor_info_t *inputs, *outputs;
  const char **out_names;        /* the outputs' names as written (graph arena), before passes
                                    could make two outputs one value (cse) or a const (empty) */
  gc_sbuf stats;                 /* appended to by passes and backends */
  struct graphc_exec_context *contexts; /* alive (driver/exec_context.c), freed with it */
  struct gc_states *states;      /* the states' memory (NULL: the graph has none); shared by
                                    graphc_executable_share_states, freed by the last user */
  pthread_mutex_t contexts_mu;
};

/* driver/states_api.c: the store of a graph with states, made and bound after prepare
 * (nothing when it has none); the interpreter backend's state hooks and run. */
graphc_status_t gc_exec_states_init(gc_exec *exe, gc_diags *d);
struct gc_states *gc_interp_states_new(gc_exec *exe, gc_diags *d);
graphc_status_t gc_interp_bind_states(gc_exec *exe, struct gc_states *s, gc_diags *d);
graphc_status_t gc_interp_states_run(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                     gc_diags *d);
void gc_interp_states_free(gc_exec *exe);

/* driver/exec_context.c: free the contexts still alive (graphc_executable_destroy,
 * before the backend's release). */
void gc_exec_contexts_free(gc_exec *exe);
/* driver/api.c: the argument checks and the diagnostics hand-off of every run call. */
graphc_status_t gc_api_check_io(const gc_exec *exe, const graphc_tensor_t *inputs, size_t n_inputs,
                                const graphc_tensor_t *outputs, size_t n_outputs, graphc_error_t *err);
graphc_status_t gc_api_finish(graphc_context_t *ctx, gc_diags *d, graphc_error_t *err);

/* "sm_90" -> 90; 0 when malformed (runtime/api.c). */
int gc_parse_arch(const char *arch);

#endif
