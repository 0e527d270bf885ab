/* rewrite.c - forwarding map, fresh names and op construction for the
 * rewriting passes. See rewrite.h. */
#include <stdlib.h>
#include <string.h>

#include "passes/rewrite.h"

/* The number a value name spells when it is all digits, else -1. */
static long long numeric_name(const char *s) {
  if (!s || !*s) return -1;
  long long k = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9' || k > (INT64_MAX - 9) / 10) return -1;
    k = k * 10 + (*p - '0');
  }
  return k;
}

/* Allocate the map and seed the name counter with one scan of the graph. */
int gc_rw_init(gc_rewriter *rw, gc_graph *g, gc_diags *d) {
  memset(rw, 0, sizeof *rw);
  rw->g = g;
  rw->d = d;
  rw->n_fwd = g->next_value_id;
  rw->fwd = calloc((size_t)(rw->n_fwd ? rw->n_fwd : 1), sizeof *rw->fwd);
  if (!rw->fwd) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, g->loc, "out of memory in a graph pass");
    return -1;
  }
  long long max = -1;
  for (int i = 0; i < g->n_args; i++) {
    long long k = numeric_name(g->args[i]->name);
    if (k > max) max = k;
  }
  for (gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++) {
      long long k = numeric_name(op->results[i]->name);
      if (k > max) max = k;
    }
  rw->next_name = max + 1;
  return 0;
}

/* Follow the forwarding chain of v (replacements may themselves be replaced). */
static gc_value *resolve(gc_rewriter *rw, gc_value *v) {
  while (v && v->id < rw->n_fwd && rw->fwd[v->id]) v = rw->fwd[v->id];
  return v;
}

/* Point each operand at its current replacement. */
void gc_rw_resolve_operands(gc_rewriter *rw, gc_op *op) {
  for (int i = 0; i < op->n_operands; i++) op->operands[i] = resolve(rw, op->operands[i]);
}

/* Record that uses of `from` now read `to` (resolved when later ops are visited). */
void gc_rw_forward(gc_rewriter *rw, gc_value *from, gc_value *to) {
  to = resolve(rw, to);
  GC_ASSERT(from->id < rw->n_fwd && from != to);
  rw->fwd[from->id] = to;
}

/* Forward op's results and unlink it. */
void gc_rw_replace_op(gc_rewriter *rw, gc_op *op, gc_value *const *to) {
  for (int i = 0; i < op->n_results; i++) gc_rw_forward(rw, op->results[i], to[i]);
  gc_op_remove(rw->g, op);
  rw->changes++;
}

/* Resolve the graph outputs, free the map, report OOM; the change count or -1. */
int gc_rw_finish(gc_rewriter *rw) {
  for (int i = 0; i < rw->g->n_outputs; i++) rw->g->outputs[i] = resolve(rw, rw->g->outputs[i]);
  free(rw->fwd);
  rw->fwd = NULL;
  if (rw->oom || rw->g->arena.failed) {
    gc_error_at(rw->d, GRAPHC_STATUS_OUT_OF_MEMORY, rw->g->loc, "out of memory in a graph pass");
    return -1;
  }
  return rw->changes;
}

/* The next numeric name past every numeric name the graph had. */
const char *gc_rw_fresh_name(gc_rewriter *rw) {
  const char *s = gc_arena_printf(&rw->g->arena, "%lld", rw->next_name++);
  if (!s) rw->oom = 1;
  return s;
}

/* A typed one-result op, placed before `before`. */
gc_op *gc_rw_new_op(gc_rewriter *rw, gc_opcode opc, gc_op *before, int n_operands,
                    gc_value *const *operands, int n_attrs, const gc_named_attr *attrs,
                    const gc_type *type, const char *name, gc_loc loc) {
  if (!name && !(name = gc_rw_fresh_name(rw))) return NULL;
  gc_op *op = gc_op_new(rw->g, opc, n_operands, operands, 1, &name, loc);
  if (!op) {
    rw->oom = 1;
    return NULL;
  }
  /* gc_op_new appends; move the op to its place. */
  gc_op_remove(rw->g, op);
  gc_op_insert_before(rw->g, op, before);
  gc_op_set_attrs(rw->g, op, n_attrs, attrs);
  if (n_attrs && op->n_attrs != n_attrs) rw->oom = 1;
  op->typed = 1;
  op->results[0]->type = *type;
  return op;
}

/* A new op takes over op's place, location and result name. */
gc_op *gc_rw_replace_with_new(gc_rewriter *rw, gc_op *op, gc_opcode opc, int n_operands,
                              gc_value *const *operands, int n_attrs,
                              const gc_named_attr *attrs) {
  GC_ASSERT(op->n_results == 1);
  gc_value *old = op->results[0];
  gc_op *n = gc_rw_new_op(rw, opc, op, n_operands, operands, n_attrs, attrs, &old->type,
                          old->name, op->loc);
  if (!n) return NULL;
  gc_rw_replace_op(rw, op, n->results);
  return n;
}

/* An INT attribute. */
gc_attr gc_rw_attr_int(int64_t v) {
  gc_attr a = {.kind = GC_ATTR_INT};
  a.u.i = v;
  return a;
}

/* A DTYPE attribute. */
gc_attr gc_rw_attr_dtype(gc_dtype t) {
  gc_attr a = {.kind = GC_ATTR_DTYPE};
  a.u.dt = t;
  return a;
}

/* A LIST of INT attributes in the graph's arena. */
gc_attr gc_rw_attr_ints(gc_rewriter *rw, const int64_t *v, int n) {
  gc_attr a = {.kind = GC_ATTR_LIST};
  a.u.list.items = gc_arena_alloc(&rw->g->arena, (size_t)(n ? n : 1) * sizeof(gc_attr));
  if (!a.u.list.items) {
    rw->oom = 1;
    return a;
  }
  for (int i = 0; i < n; i++) a.u.list.items[i] = gc_rw_attr_int(v[i]);
  a.u.list.n = n;
  return a;
}

/* ---- conv2d as a GEMM ------------------------------------------------------------------- */
int gc_conv_gemm_ok(const gc_op *op) {
  return gc_op_attr_int(op, "groups", 1) == 1 && strcmp(gc_op_attr_str(op, "layout", "nchw"), "nchw") == 0 &&
         gc_type_is_concrete(&op->operands[0]->type) &&
         gc_type_is_concrete(&op->operands[1]->type) && gc_type_is_concrete(&op->results[0]->type);
}

/* Is attribute `name` absent or all entries equal to v? */
static int attr_all(const gc_op *op, const char *name, int64_t v) {
  const gc_attr *a = gc_op_attr(op, name);
  int64_t x[4];
  int n = a ? gc_attr_ints(a, x, 4) : 0;
  for (int i = 0; i < n; i++)
    if (x[i] != v) return 0;
  return n >= 0;
}

int gc_conv_is_pointwise(const gc_op *op) {
  const gc_type *wt = &op->operands[1]->type;
  return wt->dims[2] == 1 && wt->dims[3] == 1 && attr_all(op, "stride", 1) && attr_all(op, "padding", 0);
}

int gc_conv_im2col_attrs(gc_rewriter *rw, const gc_op *op, const char *layout, gc_named_attr *at) {
  const gc_type *wt = &op->operands[1]->type;
  int n = 0;
  int64_t kern[2] = {wt->dims[2], wt->dims[3]};
  at[n++] = (gc_named_attr){"kernel", gc_rw_attr_ints(rw, kern, 2)};
  static const char *const copied[] = {"stride", "padding", "dilation"};
  for (int i = 0; i < 3; i++) {
    const gc_attr *v = gc_op_attr(op, copied[i]);
    if (v) at[n++] = (gc_named_attr){copied[i], *v};
  }
  if (layout) at[n++] = (gc_named_attr){"layout", {.kind = GC_ATTR_STR, .u.s = layout}};
  return n;
}

gc_value *gc_rw_reshape(gc_rewriter *rw, gc_op *before, gc_value *v, int rank, const int64_t *dims) {
  gc_type t = {.dtype = v->type.dtype, .rank = rank};
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  gc_named_attr shape = {"shape", gc_rw_attr_ints(rw, dims, rank)};
  gc_op *op = gc_rw_new_op(rw, GC_OP_RESHAPE, before, 1, &v, 1, &shape, &t, NULL, before->loc);
  return op ? op->results[0] : NULL;
}
