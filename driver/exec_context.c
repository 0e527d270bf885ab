/* exec_context.c - execution contexts of an executable (graphc.h):
 * graphc_exec_context_create / run / run_device / enqueue / destroy.
 *
 * A context is the working memory of one run in flight. On the CUDA backend it
 * is a gc_cu_ctx (runtime/cuda_context.c): its own arena, I/O buffers, kernel
 * arguments, tensor maps, CUDA graph and stream, sharing the module and the
 * weights with the executable and its other contexts, so runs on different
 * contexts overlap on the device and need no lock between them. Backends without
 * contexts of their own (cpu, interp) get handles that run the executable itself:
 * their runs take turns, and each cpu run already uses every core.
 *
 * The executable lists its contexts; graphc_executable_destroy frees those still
 * alive (each waits for its work first).
 */
#include <stdlib.h>
#include <string.h>

#include "driver/exec.h"
#include "include/graphc/graphc.h"

struct graphc_exec_context {
  gc_exec *exe;
  void *state;                        /* the backend's (NULL: the executable's own) */
  struct graphc_exec_context *next;
};

graphc_status_t graphc_exec_context_create(graphc_executable_t *exe, graphc_exec_context_t **out,
                                           graphc_error_t *err) {
  if (out) *out = NULL;
  if (!exe || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_exec_context_create: NULL %s", exe ? "out" : "executable");
  if (exe->states)  /* contexts share the states: runs on two of them would race on them */
    return gc_set_error(err, GRAPHC_STATUS_UNSUPPORTED,
                        "graphc_exec_context_create: the executable has states, which its contexts "
                        "would share; run it directly (one run at a time)");
  graphc_exec_context_t *c = calloc(1, sizeof *c);
  if (!c) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  c->exe = exe;
  if (exe->backend->ctx_new) {
    gc_diags d;
    gc_diags_init(&d, exe->file, exe->source, exe->source_len);
    c->state = exe->backend->ctx_new(exe, &d);
    if (!c->state) {
      if (!d.n_errors)
        gc_error_at(&d, GRAPHC_STATUS_DEVICE_ERROR, (gc_loc){0, 0}, "%s backend: cannot make a context",
                    exe->backend->name);
      free(c);
      return gc_api_finish(exe->ctx, &d, err);
    }
    gc_diags_free(&d);
  }
  pthread_mutex_lock(&exe->contexts_mu);
  c->next = exe->contexts;
  exe->contexts = c;
  pthread_mutex_unlock(&exe->contexts_mu);
  if (err) memset(err, 0, sizeof *err);
  *out = c;
  return GRAPHC_STATUS_OK;
}

/* Free c's backend state and the handle. */
static void context_free(graphc_exec_context_t *c) {
  if (c->state) c->exe->backend->ctx_free(c->exe, c->state);
  free(c);
}

void graphc_exec_context_destroy(graphc_exec_context_t *c) {
  if (!c) return;
  gc_exec *exe = c->exe;
  pthread_mutex_lock(&exe->contexts_mu);
  for (graphc_exec_context_t **pp = &exe->contexts; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  pthread_mutex_unlock(&exe->contexts_mu);
  context_free(c);
}

void gc_exec_contexts_free(gc_exec *exe) {
  while (exe->contexts) {
    graphc_exec_context_t *c = exe->contexts;
    exe->contexts = c->next;
    context_free(c);
  }
}

/* The three runs: host tensors (kind 0), device tensors (1), enqueue on `stream` (2). */
static graphc_status_t context_run(graphc_exec_context_t *c, const char *call, int kind,
                                   const graphc_tensor_t *inputs, size_t n_inputs,
                                   graphc_tensor_t *outputs, size_t n_outputs, void *stream,
                                   graphc_error_t *err) {
  if (!c) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s: NULL context", call);
  gc_exec *exe = c->exe;
  if (!c->state) {  /* the executable's own working memory */
    if (kind == 0) return graphc_executable_run(exe, inputs, n_inputs, outputs, n_outputs, err);
    if (kind == 1) return graphc_executable_run_device(exe, inputs, n_inputs, outputs, n_outputs, err);
    return graphc_executable_enqueue(exe, inputs, n_inputs, outputs, n_outputs, stream, err);
  }
  graphc_status_t st = gc_api_check_io(exe, inputs, n_inputs, outputs, n_outputs, err);
  if (st != GRAPHC_STATUS_OK) return st;
  gc_diags d;
  gc_diags_init(&d, exe->file, exe->source, exe->source_len);
  st = exe->backend->ctx_run(exe, c->state, kind, inputs, outputs, stream, &d);
  if (st != GRAPHC_STATUS_OK && !d.n_errors)
    gc_error_at(&d, st, (gc_loc){0, 0}, "%s backend: %s failed", exe->backend->name, call);
  return gc_api_finish(exe->ctx, &d, err);
}

graphc_status_t graphc_exec_context_run(graphc_exec_context_t *c, const graphc_tensor_t *inputs,
                                        size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                        graphc_error_t *err) {
  return context_run(c, "graphc_exec_context_run", 0, inputs, n_inputs, outputs, n_outputs, NULL, err);
}

graphc_status_t graphc_exec_context_run_device(graphc_exec_context_t *c, const graphc_tensor_t *inputs,
                                               size_t n_inputs, graphc_tensor_t *outputs,
                                               size_t n_outputs, graphc_error_t *err) {
  return context_run(c, "graphc_exec_context_run_device", 1, inputs, n_inputs, outputs, n_outputs, NULL,
                     err);
}

graphc_status_t graphc_exec_context_enqueue(graphc_exec_context_t *c, const graphc_tensor_t *inputs,
                                            size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                            void *stream, graphc_error_t *err) {
  return context_run(c, "graphc_exec_context_enqueue", 2, inputs, n_inputs, outputs, n_outputs, stream,
                     err);
}
