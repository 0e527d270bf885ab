/* interp.c - the reference interpreter's driver and attribute stores.
 *
 * gc_interp_run walks the ops in program order. Each result gets a fresh,
 * zeroed buffer in its own dtype; the op's kernel (interp_<EVAL>, picked from
 * the table that ops.def expands into) fills it. Uses are counted up front so
 * an intermediate is freed right after its last reader; graph outputs are
 * copied into the caller's buffers as soon as they are produced.
 *
 * Elements are loaded and stored through ir/dtype.c's conversions: a double
 * (or an exact int64) is rounded to f16/bf16 exactly once (nearest even), so
 * values stored here never suffer double rounding through float.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"
#include "ir/dtype.h"

/* ---- element loads and stores -------------------------------------------------- */

/* Store a numeric attribute: INT and BOOL exact, FLOAT like cast. */
void interp_store_attr(void *base, gc_dtype t, int64_t i, const gc_attr *a) {
  switch (a->kind) {
    case GC_ATTR_INT: gc_store_i64(base, t, i, a->u.i); return;
    case GC_ATTR_BOOL: gc_store_i64(base, t, i, a->u.b != 0); return;
    case GC_ATTR_FLOAT: gc_store_f64(base, t, i, a->u.f); return;
    default: GC_ASSERT(!"attribute is not a number"); return;
  }
}

/* ---- kernel helpers ---------------------------------------------------------------- */

/* Zeroed allocation; out of memory is reported at the op. */
void *interp_alloc(interp_ctx *cx, const gc_op *op, size_t count, size_t size) {
  if (count == 0) count = 1;
  if (size && count > SIZE_MAX / size) {
    gc_error_at(cx->d, GRAPHC_STATUS_OUT_OF_MEMORY, op->loc,
                "out of memory: %zu x %zu bytes overflow in '%s'", count, size,
                gc_op_infos[op->opcode].name);
    return NULL;
  }
  void *p = calloc(count, size);
  if (!p)
    gc_error_at(cx->d, GRAPHC_STATUS_OUT_OF_MEMORY, op->loc,
                "out of memory allocating %zu bytes in '%s'", count * size,
                gc_op_infos[op->opcode].name);
  return p;
}

/* A tensor widened to doubles (malloc'd). */
double *interp_to_f64(interp_ctx *cx, const gc_op *op, const itensor *t) {
  double *v = interp_alloc(cx, op, (size_t)t->numel, sizeof *v);
  if (!v) return NULL;
  for (int64_t i = 0; i < t->numel; i++) v[i] = gc_load_f64(t->data, t->type->dtype, i);
  return v;
}

/* A negative axis counts from the end. */
int interp_axis(int64_t axis, int rank) {
  return (int)(axis < 0 ? axis + rank : axis);
}

/* Row-major element strides of a type. */
void interp_strides(const gc_type *t, int64_t *strides) {
  int64_t s = 1;
  for (int k = t->rank - 1; k >= 0; k--) {
    strides[k] = s;
    s *= t->dims[k];
  }
}

/* Strides of `in` read through numpy broadcasting to `out`. */
void interp_bcast_strides(const gc_type *in, const gc_type *out, int64_t *strides) {
  int64_t own[GC_MAX_RANK];
  interp_strides(in, own);
  int shift = out->rank - in->rank;
  GC_ASSERT(shift >= 0);
  for (int k = 0; k < out->rank; k++) {
    int j = k - shift;
    strides[k] = (j < 0 || in->dims[j] == 1) ? 0 : own[j];
  }
}

/* Odometer step over dims, moving n offsets along; 0 after the last element. */
int interp_next(int rank, const int64_t *dims, int64_t *idx, int n, int64_t *offs,
                int64_t (*strides)[GC_MAX_RANK]) {
  for (int k = rank - 1; k >= 0; k--) {
    if (++idx[k] < dims[k]) {
      for (int j = 0; j < n; j++) offs[j] += strides[j][k];
      return 1;
    }
    for (int j = 0; j < n; j++) offs[j] -= strides[j][k] * (dims[k] - 1);
    idx[k] = 0;
  }
  return 0;
}

/* ---- the driver ----------------------------------------------------------------------- */

static const interp_eval_fn evals[GC_OP_COUNT_] = {
#define OP(ID, NAME, MIN_IN, MAX_IN, N_OUT, ATTRS, RULE, EVAL, KIND) [GC_OP_##ID] = interp_##EVAL,
#include "ir/ops.def"
#undef OP
};

/* Run-time state of one value. */
typedef struct islot {
  void *data;
  int owned;       /* data is ours to free (args and params are borrowed) */
  int uses;        /* operand uses not yet executed */
} islot;

/* Bytes of a concrete type, or report and return -1 (symbolic or huge). */
static int64_t value_bytes(interp_ctx *cx, const gc_value *v, int64_t *numel) {
  int64_t n = gc_type_numel(&v->type);
  size_t es = graphc_dtype_size(v->type.dtype);
  if (n < 0 || es == 0 || (uint64_t)n > (uint64_t)INT64_MAX / es) {
    gc_error_at(cx->d, GRAPHC_STATUS_INVALID_ARGUMENT, v->loc,
                "interpreter needs a concrete type for %%%s; bind its symbolic dims", v->name);
    return -1;
  }
  *numel = n;
  return n * (int64_t)es;
}

/* Copy a freshly available value into every output slot that returns it. */
static graphc_status_t emit_outputs(interp_ctx *cx, const gc_value *v, const void *data,
                                    graphc_tensor_t *outputs) {
  for (int j = 0; j < cx->g->n_outputs; j++) {
    if (cx->g->outputs[j] != v) continue;
    int64_t numel, nb = value_bytes(cx, v, &numel);
    if (nb < 0) return GRAPHC_STATUS_INVALID_ARGUMENT;
    if ((!outputs[j].data && nb) || outputs[j].nbytes < (size_t)nb) {  /* empty: no buffer needed */
      gc_error_at(cx->d, GRAPHC_STATUS_INVALID_ARGUMENT, cx->g->ret_loc,
                  "output %d needs %lld bytes, buffer has %zu", j, (long long)nb,
                  outputs[j].data ? outputs[j].nbytes : 0);
      return GRAPHC_STATUS_INVALID_ARGUMENT;
    }
    if (nb) memmove(outputs[j].data, data, (size_t)nb);
  }
  return GRAPHC_STATUS_OK;
}

/* Ops whose result borrows memory instead of owning a fresh buffer: a param read in
 * place from the weights (one with `from` owns its converted copy), a state (its memory)
 * and cache_write (the state it updates in place). */
static int borrows_result(const gc_op *op) {
  if (op->opcode == GC_OP_PARAM) return gc_param_file_dtype(op) == op->results[0]->type.dtype;
  return op->opcode == GC_OP_STATE || op->opcode == GC_OP_CACHE_WRITE;
}

/* Ops that point their results at memory themselves (their kernels: a param at the
 * weights or at its converted copy, a state at its memory, cache_write at the state). */
static int sets_own_result(const gc_op *op) {
  return op->opcode == GC_OP_PARAM || op->opcode == GC_OP_STATE || op->opcode == GC_OP_CACHE_WRITE;
}

/* Execute one op: allocate its results, run its kernel, publish the results,
 * and release operands whose last use this was. */
static graphc_status_t run_op(interp_ctx *cx, const gc_op *op, islot *vals,
                              graphc_tensor_t *outputs) {
  const gc_op_info *info = &gc_op_infos[op->opcode];
  GC_ASSERT(op->n_operands >= info->min_in && (info->max_in < 0 || op->n_operands <= info->max_in));
  itensor *in = interp_alloc(cx, op, (size_t)op->n_operands + (size_t)op->n_results, sizeof *in);
  if (!in) return GRAPHC_STATUS_OUT_OF_MEMORY;
  itensor *out = in + op->n_operands;
  graphc_status_t st = GRAPHC_STATUS_OK;
  for (int i = 0; i < op->n_operands; i++) {
    const gc_value *v = op->operands[i];
    GC_ASSERT(v && vals[v->id].data);
    in[i].type = &v->type;
    in[i].data = vals[v->id].data;
    in[i].numel = gc_type_numel(&v->type);
  }
  for (int r = 0; r < op->n_results && st == GRAPHC_STATUS_OK; r++) {
    const gc_value *v = op->results[r];
    int64_t numel, nb = value_bytes(cx, v, &numel);
    if (nb < 0) {
      st = GRAPHC_STATUS_INVALID_ARGUMENT;
      break;
    }
    out[r].type = &v->type;
    out[r].numel = numel;
    if (!sets_own_result(op)) {
      out[r].data = interp_alloc(cx, op, (size_t)nb, 1);
      if (!out[r].data) st = GRAPHC_STATUS_OUT_OF_MEMORY;
    }
  }
  if (st == GRAPHC_STATUS_OK) st = evals[op->opcode](cx, op, in, out);
  if (st != GRAPHC_STATUS_OK) {
    if (!borrows_result(op))
      for (int r = 0; r < op->n_results; r++) free(out[r].data);
    free(in);
    return st;
  }
  for (int r = 0; r < op->n_results; r++) {
    islot *s = &vals[op->results[r]->id];
    s->data = out[r].data;
    s->owned = !borrows_result(op);
    if (st == GRAPHC_STATUS_OK) st = emit_outputs(cx, op->results[r], s->data, outputs);
    if (s->uses == 0 && s->owned) {   /* dead or output-only: done with it */
      free(s->data);
      s->data = NULL;
      s->owned = 0;
    }
  }
  for (int i = 0; i < op->n_operands; i++) {
    islot *s = &vals[op->operands[i]->id];
    if (--s->uses == 0 && s->owned) {
      free(s->data);
      s->data = NULL;
      s->owned = 0;
    }
  }
  free(in);
  return st;
}

/* Run the graph op by op in program order; see interp.h. */
graphc_status_t gc_interp_run(const gc_graph *g, const gc_safetensors *weights,
                              const graphc_tensor_t *inputs, int n_inputs,
                              graphc_tensor_t *outputs, int n_outputs, gc_diags *d) {
  return gc_interp_run_states(g, weights, NULL, 0, inputs, n_inputs, outputs, n_outputs, d);
}

graphc_status_t gc_interp_run_states(const gc_graph *g, const gc_safetensors *weights,
                                     const gc_interp_state *states, int n_states,
                                     const graphc_tensor_t *inputs, int n_inputs,
                                     graphc_tensor_t *outputs, int n_outputs, gc_diags *d) {
  interp_ctx cx = {g, weights, d, states, n_states};
  if (n_inputs != g->n_args || n_outputs != g->n_outputs) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, g->loc,
                "graph @%s takes %d inputs and returns %d outputs; got %d and %d", g->name,
                g->n_args, g->n_outputs, n_inputs, n_outputs);
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  islot *vals = calloc((size_t)(g->next_value_id ? g->next_value_id : 1), sizeof *vals);
  if (!vals) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, g->loc, "out of memory starting the interpreter");
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  for (const gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++) vals[op->operands[i]->id].uses++;

  graphc_status_t st = GRAPHC_STATUS_OK;
  for (int i = 0; i < g->n_args && st == GRAPHC_STATUS_OK; i++) {
    const gc_value *v = g->args[i];
    int64_t numel, nb = value_bytes(&cx, v, &numel);
    if (nb < 0) {
      st = GRAPHC_STATUS_INVALID_ARGUMENT;
    } else if ((!inputs[i].data && nb) || inputs[i].nbytes < (size_t)nb) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, v->loc,
                  "input %d (%%%s) needs %lld bytes, buffer has %zu", i, v->name, (long long)nb,
                  inputs[i].data ? inputs[i].nbytes : 0);
      st = GRAPHC_STATUS_INVALID_ARGUMENT;
    } else {
      vals[v->id].data = inputs[i].data;
      st = emit_outputs(&cx, v, inputs[i].data, outputs);
    }
  }
  for (const gc_op *op = g->first; op && st == GRAPHC_STATUS_OK; op = op->next)
    st = run_op(&cx, op, vals, outputs);

  for (int i = 0; i < g->next_value_id; i++)
    if (vals[i].owned) free(vals[i].data);
  free(vals);
  return st;
}
