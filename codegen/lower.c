/* lower.c - the lowering driver: graph -> plan.
 *
 *   for each value that needs memory: one gc_plan_buffer
 *       args -> INPUT, returned values -> OUTPUT, params and list consts -> CONST,
 *       reshape -> a view of its operand's buffer, everything else -> TEMP
 *   for each op, in program order: the emitter family picked by the KIND column
 *       of ir/ops.def builds its kernel(s) and launches them
 *   outputs that are not written by their own kernel (args, consts, views, a
 *       value returned twice) get a copy kernel into their OUTPUT buffer
 *   buffers.c places TEMP buffers in one arena by liveness
 */
#include <stdlib.h>
#include <string.h>

#include "emit.h"

/* The emitter family of each op, from the KIND column: adding a kind without an
 * emitter is a compile error here, adding an op needs no edit. */
#define EMIT_SOURCE gc_emit_source
#define EMIT_ELEMENTWISE gc_emit_elementwise
#define EMIT_REDUCE gc_emit_reduce
#define EMIT_NORM gc_emit_norm
#define EMIT_MATMUL gc_emit_matmul
#define EMIT_CONV gc_emit_conv
#define EMIT_POOL gc_emit_pool
#define EMIT_MOVE gc_emit_move
static const gc_emit_fn emit_table[GC_OP_COUNT_] = {
#define OP(ID, NAME, MIN_IN, MAX_IN, N_OUT, ATTRS, RULE, EVAL, KIND) [GC_OP_##ID] = EMIT_##KIND,
#include "../ir/ops.def"
#undef OP
};

/* ---- buffers and consts ------------------------------------------------------------------ */

/* Append a buffer of `kind` for a value of type t; returns its index (-1: out of memory). */
static int new_buffer(gc_lowerer *c, gc_buf_kind kind, int index, const gc_type *t) {
  gc_plan *p = c->p;
  if (p->n_buffers == c->cap_buffers) {
    int cap = c->cap_buffers ? 2 * c->cap_buffers : 16;
    gc_plan_buffer *nb = realloc(p->buffers, (size_t)cap * sizeof *nb);
    gc_buf_hint *nh = nb ? realloc(c->hints, (size_t)cap * sizeof *nh) : NULL;
    if (nb) p->buffers = nb;
    if (!nb || !nh) {
      c->oom = 1;
      return -1;
    }
    c->hints = nh;
    c->cap_buffers = cap;
  }
  int bi = p->n_buffers++;
  gc_plan_buffer *b = &p->buffers[bi];
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->index = index;
  b->type = *t;
  b->bytes = (size_t)gc_type_numel(t) * graphc_dtype_size(t->dtype);
  b->first_use = b->last_use = -1;
  memset(&c->hints[bi], 0, sizeof c->hints[bi]);
  return bi;
}

/* Count TEMP buffers so each gets a stable ordinal in `index`. */
static int temp_count(const gc_plan *p) {
  int n = 0;
  for (int i = 0; i < p->n_buffers; i++) n += p->buffers[i].kind == GC_BUF_TEMP;
  return n;
}

/* A CONST buffer for value v backed by `data` (owned by the weights or the plan arena). */
int gc_lower_const_buffer(gc_lowerer *c, const gc_value *v, const char *name, const void *data,
                          size_t bytes) {
  gc_plan *p = c->p;
  if (p->n_consts == c->cap_consts) {
    int cap = c->cap_consts ? 2 * c->cap_consts : 8;
    gc_plan_const *nc = realloc(p->consts, (size_t)cap * sizeof *nc);
    if (!nc) {
      c->oom = 1;
      return -1;
    }
    p->consts = nc;
    c->cap_consts = cap;
  }
  int ci = p->n_consts++;
  p->consts[ci].name = gc_arena_strdup(&p->arena, name);
  p->consts[ci].data = data;
  p->consts[ci].bytes = bytes;
  int bi = new_buffer(c, GC_BUF_CONST, ci, &v->type);
  if (bi >= 0) c->val_buf[v->id] = bi;
  return bi;
}

/* Params and list-valued consts live in CONST buffers, not in kernels. */
static int is_const_source(const gc_op *op) {
  if (op->opcode == GC_OP_PARAM) return 1;
  if (op->opcode != GC_OP_CONST) return 0;
  const gc_attr *a = gc_op_attr(op, "value");
  return a && a->kind == GC_ATTR_LIST;
}

/* ---- copies ------------------------------------------------------------------------------ */

/* out[i] = in[i] over the whole buffer, 16-byte vectors when they fit. */
int gc_emit_copy(gc_lowerer *c, const char *name, int src, int dst, const gc_type *t) {
  int64_t n = gc_type_numel(t);
  gc_dtype dt = t->dtype;
  int w = gc_ec_vec_width(c, n, &dt, 1);
  kir_launch l = {KIR_LAUNCH_ITEMS, n / w, 256};
  kir_kernel *k = kir_kernel_new(c->km, gc_arena_strdup(&c->km->arena, name), l);
  int pin = gc_ec_param_buf(c, k, "in", src, dt, 1);
  int pout = gc_ec_param_buf(c, k, "out", dst, dt, 0);
  kir_block *b = &k->body;
  if (w > 1) {
    int vars[KIR_MAX_VEC];
    kir_expr *vals[KIR_MAX_VEC];
    for (int i = 0; i < w; i++) vars[i] = gc_ec_var(c, k, "x", dt);
    int base = gc_ec_let(c, k, b, "i", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, w)));
    kir_emit_load_vec(c->km, b, KIR_GLOBAL, pin, ec_v(c, k, base), w, vars);
    for (int i = 0; i < w; i++) vals[i] = ec_v(c, k, vars[i]);
    kir_emit_store_vec(c->km, b, KIR_GLOBAL, pout, ec_v(c, k, base), w, vals);
  } else {
    kir_expr *x = kir_load(c->km, k, KIR_GLOBAL, pin, ec_v(c, k, k->item_var));
    kir_emit_store(c->km, b, KIR_GLOBAL, pout, ec_v(c, k, k->item_var), x);
  }
  k->bytes_moved = 2.0 * gc_ec_bytes(t);
  gc_ec_launch(c, k);
  return 0;
}

/* Copy value v into a fresh OUTPUT buffer for output index i. */
static int emit_output_copy(gc_lowerer *c, const gc_value *v, int i) {
  int dst = new_buffer(c, GC_BUF_OUTPUT, i, &c->g->outputs[i]->type);
  if (dst < 0) return -1;
  char name[32];
  snprintf(name, sizeof name, "copy_out%d", i);
  return gc_emit_copy(c, name, c->val_buf[v->id], dst, &v->type);
}

/* Every output index whose value is v but which v's buffer is not. */
static int emit_pending_copies(gc_lowerer *c, const gc_value *v) {
  const gc_graph *g = c->g;
  for (int i = 0; i < g->n_outputs; i++) {
    if (g->outputs[i] != v) continue;
    const gc_plan_buffer *b = &c->p->buffers[c->val_buf[v->id]];
    if (b->kind == GC_BUF_OUTPUT && b->index == i) continue;
    if (emit_output_copy(c, v, i) < 0) return -1;
  }
  return 0;
}

/* ---- the walk ---------------------------------------------------------------------------- */

/* Codegen needs every dim bound: symbolic dims were replaced by specialization. */
static int check_concrete(gc_lowerer *c) {
  const gc_graph *g = c->g;
  int bad = 0;
  for (int i = 0; i < g->n_args; i++)
    if (!gc_type_is_concrete(&g->args[i]->type)) {
      gc_error_at(c->d, GRAPHC_STATUS_INVALID_ARGUMENT, g->args[i]->loc,
                  "codegen needs concrete shapes: argument %%%s has a symbolic dim; bind it first",
                  g->args[i]->name);
      bad++;
    }
  for (const gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++)
      if (!gc_type_is_concrete(&op->results[i]->type)) {
        gc_error_at(c->d, GRAPHC_STATUS_INVALID_ARGUMENT, op->loc,
                    "codegen needs concrete shapes: %%%s has a symbolic dim; bind it first",
                    op->results[i]->name);
        bad++;
      }
  return bad;
}

/* Buffers of op's results before its emitter runs (const sources make their own). */
static int make_result_buffers(gc_lowerer *c, const gc_op *op) {
  const gc_graph *g = c->g;
  if (is_const_source(op)) return 0;
  for (int r = 0; r < op->n_results; r++) {
    const gc_value *v = op->results[r];
    if (op->opcode == GC_OP_RESHAPE) {
      c->val_buf[v->id] = c->val_buf[op->operands[0]->id];
      continue;
    }
    int out = -1;
    for (int i = 0; i < g->n_outputs && out < 0; i++)
      if (g->outputs[i] == v) out = i;
    int bi = out >= 0 ? new_buffer(c, GC_BUF_OUTPUT, out, &v->type)
                      : new_buffer(c, GC_BUF_TEMP, 0, &v->type);
    if (bi < 0) return -1;
    c->val_buf[v->id] = bi;
  }
  return 0;
}

/* Lower every op in program order, with output copies right after their source. */
static int lower_graph(gc_lowerer *c) {
  const gc_graph *g = c->g;
  for (int i = 0; i < g->n_args; i++) {
    int bi = new_buffer(c, GC_BUF_INPUT, i, &g->args[i]->type);
    if (bi < 0) return -1;
    c->val_buf[g->args[i]->id] = bi;
  }
  for (int i = 0; i < g->n_args; i++)
    if (emit_pending_copies(c, g->args[i]) < 0) return -1;
  for (const gc_op *op = g->first; op; op = op->next) {
    if (make_result_buffers(c, op) < 0) return -1;
    if (emit_table[op->opcode](c, op) < 0) return -1;
    if (c->oom || c->km->arena.failed) return -1;
    for (int r = 0; r < op->n_results; r++)
      if (emit_pending_copies(c, op->results[r]) < 0) return -1;
  }
  return 0;
}

/* Number TEMP buffers in creation order. */
static void number_temps(gc_plan *p) {
  int n = 0;
  for (int i = 0; i < p->n_buffers; i++)
    if (p->buffers[i].kind == GC_BUF_TEMP) p->buffers[i].index = n++;
}

/* Graph -> plan: buffers, kernels and launches, then buffer assignment. */
gc_plan *gc_lower(const gc_graph *g, const gc_safetensors *w, const kir_target *t, gc_diags *d) {
  gc_lowerer c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.w = w;
  c.t = t;
  c.d = d;
  if (check_concrete(&c)) return NULL;
  gc_plan *p = calloc(1, sizeof *p);
  if (!p) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, g->loc, "out of memory lowering @%s", g->name);
    return NULL;
  }
  gc_arena_init(&p->arena);
  c.p = p;
  c.km = p->kir = kir_module_new();
  c.val_buf = malloc((size_t)(g->next_value_id + 1) * sizeof *c.val_buf);
  int ok = c.km && c.val_buf;
  if (ok) {
    for (int i = 0; i <= g->next_value_id; i++) c.val_buf[i] = -1;
    int n_err = d ? d->n_errors : 0;
    ok = lower_graph(&c) == 0;
    if (!ok && !c.oom && !(c.km && c.km->arena.failed) && d && d->n_errors == n_err)
      gc_error_at(d, GRAPHC_STATUS_INTERNAL, g->loc, "lowering @%s failed", g->name);
  }
  if (ok && !c.oom && !c.km->arena.failed && !p->arena.failed) {
    number_temps(p);
    gc_assign_buffers(p, c.hints);
  }
  int oom = !c.km || !c.val_buf || c.oom || c.km->arena.failed || p->arena.failed;
  if (oom) gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, g->loc, "out of memory lowering @%s", g->name);
  free(c.val_buf);
  free(c.hints);
  if (!ok || oom) {
    gc_plan_free(p);
    return NULL;
  }
  return p;
}

/* Free the plan: its kernels, arrays and arena (weights stay the caller's). */
void gc_plan_free(gc_plan *p) {
  if (!p) return;
  if (p->kir) kir_module_free(p->kir);
  free(p->buffers);
  free(p->consts);
  free(p->launches);
  gc_arena_free(&p->arena);
  free(p);
}

/* Human units for byte counts. */
static void put_bytes(gc_sbuf *b, double n) {
  if (n >= 1 << 20)
    gc_sbuf_printf(b, "%.2f MiB", n / (1 << 20));
  else if (n >= 1 << 10)
    gc_sbuf_printf(b, "%.2f KiB", n / (1 << 10));
  else
    gc_sbuf_printf(b, "%.0f B", n);
}

/* One line per launch with its modeled bytes and flops, then consts and arena. */
void gc_plan_stats(gc_sbuf *b, const gc_plan *p) {
  const kir_module *m = p->kir;
  double tot_bytes = 0, tot_flops = 0;
  gc_sbuf_printf(b, "plan: %d kernels, %d launches, %d buffers\n", m->n_kernels, p->n_launches,
                 p->n_buffers);
  gc_sbuf_printf(b, "  %-28s %-6s %12s %14s %14s\n", "kernel", "launch", "items", "bytes", "flops");
  for (int i = 0; i < p->n_launches; i++) {
    const kir_kernel *k = m->kernels[p->launches[i]];
    gc_sbuf_printf(b, "  %-28s %-6s %12lld %14.0f %14.0f\n", k->name,
                   k->launch.kind == KIR_LAUNCH_BLOCKS ? "blocks" : "items", (long long)k->launch.n,
                   k->bytes_moved, k->flops);
    tot_bytes += k->bytes_moved;
    tot_flops += k->flops;
  }
  gc_sbuf_printf(b, "  %-28s %-6s %12s %14.0f %14.0f\n", "total", "", "", tot_bytes, tot_flops);
  double cbytes = 0;
  for (int i = 0; i < p->n_consts; i++) cbytes += (double)p->consts[i].bytes;
  gc_sbuf_printf(b, "consts: %d tensors, ", p->n_consts);
  put_bytes(b, cbytes);
  gc_sbuf_printf(b, "\narena: %zu bytes (lower bound %zu, %d temps)\n", p->arena_bytes,
                 p->arena_lower_bound, temp_count(p));
}
