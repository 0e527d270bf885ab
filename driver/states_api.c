/* states_api.c - the executable's states (graphc.h, "states"): making the store when a
 * graph declares states, sharing it between executables, reading, writing and zeroing
 * states; and the interpreter backend's state binding.
 *
 * The store (runtime/states.h) is made by the backend (host or device memory) right
 * after prepare and bound to the executable; sharing binds dst to src's store (adding
 * dst's states there) and drops dst's old one.
 */
#include <stdlib.h>
#include <string.h>

#include "driver/exec.h"
#include "interp/interp.h"
#include "runtime/states.h"

static const gc_loc noloc = {0, 0};

/* The plan-independent description of state op `op`. */
static gc_lp_state op_state(const gc_op *op) {
  gc_lp_state s;
  memset(&s, 0, sizeof s);
  const gc_type *t = &op->results[0]->type;
  s.name = gc_op_attr_str(op, "name", "");
  s.dtype = t->dtype;
  s.rank = t->rank;
  memcpy(s.dims, t->dims, sizeof s.dims);
  s.bytes = (uint64_t)gc_type_numel(t) * graphc_dtype_size(t->dtype);
  return s;
}

/* Number of state ops of the executable's graph; op i of them through *op when asked. */
static size_t graph_states(const gc_exec *exe, size_t want, const gc_op **op) {
  size_t n = 0;
  for (const gc_op *o = exe->graph ? exe->graph->first : NULL; o; o = o->next)
    if (o->opcode == GC_OP_STATE) {
      if (op && n == want) *op = o;
      n++;
    }
  return n;
}

/* ---- the interpreter's states ---------------------------------------------------------------- */
typedef struct interp_states {
  int n;
  gc_interp_state *v;
} interp_states;

gc_states *gc_interp_states_new(gc_exec *exe, gc_diags *d) {
  (void)exe;
  return gc_states_new(NULL, NULL, d);
}

graphc_status_t gc_interp_bind_states(gc_exec *exe, gc_states *s, gc_diags *d) {
  if (strcmp(gc_states_kind(s), "host") != 0) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc,
                "the states are %s memory; this executable runs on the host", gc_states_kind(s));
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  size_t n = graph_states(exe, 0, NULL);
  interp_states *is = calloc(1, sizeof *is);
  gc_interp_state *v = calloc(n + 1, sizeof *v);
  if (!is || !v) {
    free(is);
    free(v);
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < n; i++) {
    const gc_op *op = NULL;
    graph_states(exe, i, &op);
    gc_lp_state want = op_state(op);
    uint64_t a = 0;
    if (gc_states_get(s, &want, &a, d)) {
      free(is);
      free(v);
      return GRAPHC_STATUS_INVALID_ARGUMENT;
    }
    v[i] = (gc_interp_state){want.name, (void *)(uintptr_t)a, (size_t)want.bytes};
  }
  is->n = (int)n;
  is->v = v;
  gc_interp_states_free(exe);
  exe->state = is;
  return GRAPHC_STATUS_OK;
}

void gc_interp_states_free(gc_exec *exe) {
  interp_states *is = exe->state;
  if (!is) return;
  free(is->v);
  free(is);
  exe->state = NULL;
}

graphc_status_t gc_interp_states_run(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                     gc_diags *d) {
  const interp_states *is = exe->state;
  return gc_interp_run_states(exe->graph, exe->weights, is ? is->v : NULL, is ? is->n : 0, in,
                              (int)exe->n_inputs, out, (int)exe->n_outputs, d);
}

/* ---- after prepare ----------------------------------------------------------------------------- */
graphc_status_t gc_exec_states_init(gc_exec *exe, gc_diags *d) {
  if (!graph_states(exe, 0, NULL)) return GRAPHC_STATUS_OK;
  if (!exe->backend->states_new || !exe->backend->bind_states) {
    gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, noloc, "the %s backend does not run graphs with states",
                exe->backend->name);
    return GRAPHC_STATUS_UNSUPPORTED;
  }
  exe->states = exe->backend->states_new(exe, d);
  if (!exe->states) return d->n_errors ? GRAPHC_STATUS_OUT_OF_MEMORY : GRAPHC_STATUS_INTERNAL;
  return exe->backend->bind_states(exe, exe->states, d);
}

/* ---- the API ----------------------------------------------------------------------------------- */
graphc_status_t graphc_executable_share_states(graphc_executable_t *dst, graphc_executable_t *src,
                                               graphc_error_t *err) {
  if (!dst || !src)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_executable_share_states: NULL executable");
  if (!dst->states || !src->states)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_executable_share_states: the %s executable declares no states",
                        !dst->states ? "destination" : "source");
  if (dst->states == src->states) return GRAPHC_STATUS_OK;
  if (dst->kind != src->kind)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_executable_share_states: the executables run on different backends "
                        "(%s and %s)", graphc_backend_name(dst->kind), graphc_backend_name(src->kind));
  gc_diags d;
  gc_diags_init(&d, dst->file, dst->source, dst->source_len);
  graphc_status_t st = dst->backend->bind_states(dst, src->states, &d);
  if (st == GRAPHC_STATUS_OK) {
    gc_states_ref(src->states);
    gc_states_unref(dst->states);
    dst->states = src->states;
  }
  return gc_api_finish(dst->ctx, &d, err);
}

size_t graphc_executable_num_states(const graphc_executable_t *exe) {
  return exe && exe->states ? graph_states(exe, 0, NULL) : 0;
}

graphc_status_t graphc_executable_state_info(const graphc_executable_t *exe, size_t i,
                                             graphc_tensor_info_t *info) {
  const gc_op *op = NULL;
  if (!exe || !info || i >= graph_states(exe, 0, NULL)) return GRAPHC_STATUS_INVALID_ARGUMENT;
  graph_states(exe, i, &op);
  gc_lp_state s = op_state(op);
  memset(info, 0, sizeof *info);
  info->name = s.name;
  info->dtype = s.dtype;
  info->rank = s.rank;
  memcpy(info->dims, s.dims, sizeof info->dims);
  info->nbytes = (size_t)s.bytes;
  return GRAPHC_STATUS_OK;
}

/* The state op named `name` of exe, or NULL. */
static const gc_op *find_state(const gc_exec *exe, const char *name) {
  for (const gc_op *o = exe->graph ? exe->graph->first : NULL; o; o = o->next)
    if (o->opcode == GC_OP_STATE && strcmp(gc_op_attr_str(o, "name", ""), name) == 0) return o;
  return NULL;
}

/* Common checks of read_state / write_state: the state, and a host tensor of its type. */
static graphc_status_t state_io(graphc_executable_t *exe, const char *name, const graphc_tensor_t *t,
                                int write, graphc_error_t *err) {
  const char *fn = write ? "graphc_executable_write_state" : "graphc_executable_read_state";
  if (!exe || !name || !t || !t->data) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s: NULL argument", fn);
  const gc_op *op = exe->states ? find_state(exe, name) : NULL;
  if (!op) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s: the executable has no state \"%s\"", fn, name);
  gc_lp_state s = op_state(op);
  int same = t->dtype == s.dtype && t->rank == s.rank && t->nbytes >= s.bytes;
  for (int i = 0; same && i < s.rank; i++) same = t->dims[i] == s.dims[i];
  if (!same) {
    gc_sbuf b = {0};
    const gc_type ty = op->results[0]->type;
    gc_type_print(&b, &ty, NULL);
    graphc_status_t st = gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                                      "%s: state \"%s\" is %s (%llu bytes); the tensor differs", fn, name,
                                      b.data ? b.data : "?", (unsigned long long)s.bytes);
    gc_sbuf_free(&b);
    return st;
  }
  gc_diags d;
  gc_diags_init(&d, exe->file, exe->source, exe->source_len);
  if (write)
    gc_states_write(exe->states, name, t->data, (size_t)s.bytes, &d);
  else
    gc_states_read(exe->states, name, t->data, (size_t)s.bytes, &d);
  return gc_api_finish(exe->ctx, &d, err);
}

graphc_status_t graphc_executable_read_state(graphc_executable_t *exe, const char *name,
                                             graphc_tensor_t *out, graphc_error_t *err) {
  return state_io(exe, name, out, 0, err);
}

graphc_status_t graphc_executable_write_state(graphc_executable_t *exe, const char *name,
                                              const graphc_tensor_t *in, graphc_error_t *err) {
  return state_io(exe, name, in, 1, err);
}

graphc_status_t graphc_executable_reset_states(graphc_executable_t *exe, graphc_error_t *err) {
  if (!exe) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_executable_reset_states: NULL executable");
  if (!exe->states) return GRAPHC_STATUS_OK;
  gc_diags d;
  gc_diags_init(&d, exe->file, exe->source, exe->source_len);
  gc_states_zero(exe->states, &d);
  return gc_api_finish(exe->ctx, &d, err);
}
