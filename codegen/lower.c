/* lower.c - the lowering driver: graph -> plan.
 *
 *   fusion.c decides the groups (one kernel each) and their launch order
 *   buffers: args -> INPUT, params and list consts -> CONST, values crossing a
 *       group boundary -> TEMP (or OUTPUT when returned); a lone reshape of a
 *       buffer is a view of it; values computed inside one kernel get none
 *   for each group, in launch order: the emitter of its kind (emit_table) builds
 *       its kernel with the group's members computed inline
 *   outputs that are not written by their own kernel (args, consts, views, a
 *       value returned twice) get a copy kernel into their OUTPUT buffer
 *   buffers.c places TEMP buffers in one arena by liveness over the launches
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

/* The emitter of each group kind (views have no kernel). */
static const gc_emit_fn emit_table[] = {
    [GC_FUSION_VIEW] = NULL,           [GC_FUSION_LOOP] = gc_emit_loop,
    [GC_FUSION_REDUCE] = gc_emit_reduce, [GC_FUSION_NORM] = gc_emit_norm,
    [GC_FUSION_MATMUL] = gc_emit_matmul, [GC_FUSION_CONV] = gc_emit_conv,
    [GC_FUSION_POOL] = gc_emit_pool,   [GC_FUSION_SPLIT] = gc_emit_split,
    [GC_FUSION_ATTENTION] = gc_emit_attention, [GC_FUSION_STATE_WRITE] = gc_emit_cache_write,
};

/* ---- buffers ----------------------------------------------------------------------------- */

/* Count TEMP buffers so each gets a stable ordinal in `index`. */
static int temp_count(const gc_plan *p) {
  int n = 0;
  for (int i = 0; i < p->n_buffers; i++) n += p->buffers[i].kind == GC_BUF_TEMP;
  return n;
}

/* ---- copies ------------------------------------------------------------------------------ */

/* Record the ops kernel ki computes (stats) and, for graph ops, which kernel computes them. */
static void note_kernel(gc_lowerer *c, int ki, const char *ops) {
  gc_plan *p = c->p;
  const char **nk = realloc(p->kernel_ops, ((size_t)ki + 1) * sizeof *nk);
  if (!nk) {
    c->oom = 1;
    return;
  }
  p->kernel_ops = nk;
  p->kernel_ops[ki] = ops ? ops : "";
}

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
  note_kernel(c, c->km->n_kernels - 1, "copy");
  return 0;
}

/* Copy value v into a fresh OUTPUT buffer for output index i. */
static int emit_output_copy(gc_lowerer *c, const gc_value *v, int i) {
  int dst = gc_lower_new_buffer(c, GC_BUF_OUTPUT, i, &c->g->outputs[i]->type);
  if (dst < 0) return -1;
  if (gc_type_numel(&v->type) == 0) return 0;  /* an empty tensor: nothing to copy */
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

/* The buffer a group output writes: OUTPUT for its first return index, else TEMP. */
static int output_buffer(gc_lowerer *c, const gc_value *v) {
  const gc_graph *g = c->g;
  int out = -1;
  for (int i = 0; i < g->n_outputs && out < 0; i++)
    if (g->outputs[i] == v) out = i;
  int bi = out >= 0 ? gc_lower_new_buffer(c, GC_BUF_OUTPUT, out, &v->type)
                    : gc_lower_new_buffer(c, GC_BUF_TEMP, 0, &v->type);
  if (bi >= 0) c->val_buf[v->id] = bi;
  return bi;
}

/* "matmul %q, add %y" for the members of grp (plan arena). */
static const char *group_ops_text(gc_lowerer *c, const gc_fusion_group *grp) {
  gc_sbuf b = {0};
  for (int i = 0; i < grp->n_ops; i++)
    gc_sbuf_printf(&b, "%s%s %%%s", i ? ", " : "", gc_op_infos[grp->ops[i]->opcode].name,
                   grp->ops[i]->results[0]->name);
  const char *s = b.data ? gc_arena_strdup(&c->p->arena, b.data) : "";
  if (b.failed) c->oom = 1;
  gc_sbuf_free(&b);
  return s;
}

/* Emit one group: buffers for its outputs, its kernel, copies for returned aliases. */
static int lower_group(gc_lowerer *c, const gc_fusion_group *grp) {
  if (grp->kind == GC_FUSION_VIEW) {
    const gc_op *op = grp->roots[0];
    c->val_buf[op->results[0]->id] = c->val_buf[op->operands[0]->id];
    return emit_pending_copies(c, op->results[0]);
  }
  if (grp->kind == GC_FUSION_STATE_WRITE) {
    const gc_op *op = grp->roots[0];  /* in place: the result is the state's buffer */
    c->val_buf[op->results[0]->id] = c->val_buf[op->operands[0]->id];
  } else {
    int empty = grp->n_outs > 0;
    for (int i = 0; i < grp->n_outs; i++) {
      if (output_buffer(c, grp->outs[i]) < 0) return -1;
      empty &= gc_type_numel(&grp->outs[i]->type) == 0;
    }
    if (empty) {  /* tensors with a zero dim (passes/empty.c): nothing to compute */
      for (int i = 0; i < grp->n_outs; i++)
        if (emit_pending_copies(c, grp->outs[i]) < 0) return -1;
      return 0;
    }
  }
  for (int i = 0; i < grp->n_ops; i++) c->inl[grp->ops[i]->id] = 1;
  c->kname = grp->name;
  int n_before = c->km->n_kernels;
  int rc = emit_table[grp->kind](c, grp);
  for (int i = 0; i < grp->n_ops; i++) c->inl[grp->ops[i]->id] = 0;
  if (rc < 0 || c->oom || c->km->arena.failed) return -1;
  GC_ASSERT(c->km->n_kernels == n_before + 1);
  note_kernel(c, n_before, group_ops_text(c, grp));
  for (int i = 0; i < grp->n_ops; i++) {
    const gc_op *op = grp->ops[i];
    if (c->p->op_kernel[op->id] < 0 || (grp->roles[i] & GC_FROLE_WRITE)) c->p->op_kernel[op->id] = n_before;
  }
  for (int i = 0; i < grp->n_outs; i++)
    if (emit_pending_copies(c, grp->outs[i]) < 0) return -1;
  return 0;
}

/* Transposes that got no kernel of their own: "%qh (fusion_9), ..." (plan arena). */
static const char *absorbed_text(gc_lowerer *c) {
  gc_sbuf b = {0};
  const gc_fusion *f = c->fz;
  for (int k = 0; k < f->n_groups; k++) {
    const gc_fusion_group *grp = &f->groups[k];
    for (int i = 0; i < grp->n_ops; i++)
      if (grp->ops[i]->opcode == GC_OP_TRANSPOSE && !(grp->roles[i] & GC_FROLE_ROOT))
        gc_sbuf_printf(&b, "%s%%%s (%s)", b.len ? ", " : "", grp->ops[i]->results[0]->name, grp->name);
  }
  const char *s = gc_arena_strdup(&c->p->arena, b.data ? b.data : "");
  if (b.failed) c->oom = 1;
  gc_sbuf_free(&b);
  return s;
}

/* Lower every group in launch order, with output copies right after their source. */
static int lower_graph(gc_lowerer *c) {
  const gc_graph *g = c->g;
  for (int i = 0; i < g->n_args; i++) {
    int bi = gc_lower_new_buffer(c, GC_BUF_INPUT, i, &g->args[i]->type);
    if (bi < 0) return -1;
    c->val_buf[g->args[i]->id] = bi;
  }
  for (int i = 0; i < g->n_args; i++)
    if (emit_pending_copies(c, g->args[i]) < 0) return -1;
  for (const gc_op *op = g->first; op; op = op->next) {
    c->p->n_graph_ops += !gc_fusion_is_buffer_source(op);
    if (!gc_fusion_is_buffer_source(op)) continue;
    if (gc_emit_const_source(c, op) < 0 || c->oom) return -1;
    if (emit_pending_copies(c, op->results[0]) < 0) return -1;
  }
  for (int k = 0; k < c->fz->n_groups; k++)
    if (lower_group(c, &c->fz->groups[k]) < 0) return -1;
  c->p->absorbed = absorbed_text(c);
  return c->oom ? -1 : 0;
}

/* Number TEMP buffers in creation order. */
static void number_temps(gc_plan *p) {
  int n = 0;
  for (int i = 0; i < p->n_buffers; i++)
    if (p->buffers[i].kind == GC_BUF_TEMP) p->buffers[i].index = n++;
}

/* Is `name` an entry of the comma-separated list? */
static int list_has(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    if (k == n && strncmp(p, name, n) == 0) return 1;
    p += k + (e ? 1 : 0);
  }
  return 0;
}

/* Fusion for a compile: on unless -O0 (optimize == 0) or --disable-pass=fusion. */
int gc_lower_fusion_enabled(const graphc_compile_options_t *o) {
  if (!o) return 1;
  return o->optimize && !list_has(o->disable_passes, "fusion");
}

/* Graph -> plan with fusion on. */
gc_plan *gc_lower(const gc_graph *g, const kir_target *t, gc_diags *d) {
  return gc_lower_opts(g, t, 1, d);
}

/* Graph -> plan: fusion decisions, buffers, kernels and launches, then buffer assignment. */
gc_plan *gc_lower_opts(const gc_graph *g, const kir_target *t, int fuse, gc_diags *d) {
  gc_lowerer c;
  memset(&c, 0, sizeof c);
  c.g = g;
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
  if (c.km) c.km->f8_cvt = t->kind == KIR_TARGET_CUDA && t->sm >= 89;
  c.val_buf = malloc((size_t)(g->next_value_id + 1) * sizeof *c.val_buf);
  c.fz = gc_fusion_plan(g, t, fuse);
  c.inl = calloc((size_t)g->next_op_id + 1, 1);
  p->fused = fuse != 0;
  p->n_op_ids = g->next_op_id;
  p->op_kernel = gc_arena_alloc(&p->arena, ((size_t)g->next_op_id + 1) * sizeof *p->op_kernel);
  int ok = c.km && c.val_buf && c.fz && c.inl && p->op_kernel;
  if (ok) {
    for (int i = 0; i <= g->next_value_id; i++) c.val_buf[i] = -1;
    for (int i = 0; i <= g->next_op_id; i++) p->op_kernel[i] = -1;
    int n_err = d ? d->n_errors : 0;
    ok = lower_graph(&c) == 0;
    if (!ok && !c.oom && !(c.km && c.km->arena.failed) && d && d->n_errors == n_err)
      gc_error_at(d, GRAPHC_STATUS_INTERNAL, g->loc, "lowering @%s failed", g->name);
  }
  if (ok && !c.oom && !c.km->arena.failed && !p->arena.failed) {
    number_temps(p);
    if (t->prologue && gc_plan_hoist_prologue(p)) c.oom = 1;
    gc_assign_buffers(p, c.hints);
  }
  int oom = !c.km || !c.val_buf || !c.fz || !c.inl || !p->op_kernel || c.oom || c.km->arena.failed ||
            p->arena.failed;
  if (oom) gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, g->loc, "out of memory lowering @%s", g->name);
  free(c.val_buf);
  free(c.hints);
  free(c.inl);
  gc_fusion_free((gc_fusion *)c.fz);
  if (!ok || oom) {
    gc_plan_free(p);
    return NULL;
  }
  return p;
}

/* Free the plan: its kernels, arrays and arena (bound weights stay the caller's). */
void gc_plan_free(gc_plan *p) {
  if (!p) return;
  if (p->kir) kir_module_free(p->kir);
  free(p->buffers);
  free(p->consts);
  free(p->states);
  free(p->launches);
  free(p->kernel_ops);
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

/* "; 4 weights converted once at load: f32 -> f16 (1.50 MiB in the file)": params whose
 * weights file holds another dtype (`param ... from`), per dtype pair; nothing if none. */
static void put_converted(gc_sbuf *b, const gc_plan *p) {
  enum { N = GRAPHC_DTYPE_COUNT_ };
  int n[N][N] = {{0}};
  double file[N][N] = {{0}};
  for (int i = 0; i < p->n_buffers; i++) {
    const gc_plan_buffer *pb = &p->buffers[i];
    if (pb->kind != GC_BUF_CONST) continue;
    const gc_plan_const *c = &p->consts[pb->index];
    gc_dtype to = pb->type.dtype;
    if (!c->is_param || c->file_dtype == to) continue;
    n[c->file_dtype][to]++;
    file[c->file_dtype][to] += (double)c->bytes / graphc_dtype_size(to) * graphc_dtype_size(c->file_dtype);
  }
  for (int f = 0; f < N; f++)
    for (int t = 0; t < N; t++) {
      if (!n[f][t]) continue;
      gc_sbuf_printf(b, "; %d weight%s converted once at load: %s -> %s (", n[f][t], n[f][t] == 1 ? "" : "s",
                     graphc_dtype_name((gc_dtype)f), graphc_dtype_name((gc_dtype)t));
      put_bytes(b, file[f][t]);
      gc_sbuf_puts(b, " in the file)");
    }
}

/* "consts: N tensors, BYTES[; weights converted]\n". */
void gc_plan_consts_stats(gc_sbuf *b, const gc_plan *p) {
  double cbytes = 0;
  for (int i = 0; i < p->n_consts; i++) cbytes += (double)p->consts[i].bytes;
  gc_sbuf_printf(b, "consts: %d tensors, ", p->n_consts);
  put_bytes(b, cbytes);
  put_converted(b, p);
  gc_sbuf_putc(b, '\n');
}

/* Summary: fusion, one line per launch (model and fused ops), consts, arena. */
void gc_plan_stats(gc_sbuf *b, const gc_plan *p) {
  const kir_module *m = p->kir;
  double tot_bytes = 0, tot_flops = 0;
  gc_sbuf_printf(b, "plan: %d kernels, %d launches, %d buffers\n", m->n_kernels, p->n_launches,
                 p->n_buffers);
  gc_sbuf_printf(b, "fusion: %s, %d ops -> %d kernels\n", p->fused ? "on" : "off", p->n_graph_ops,
                 m->n_kernels);
  if (p->absorbed && *p->absorbed) gc_sbuf_printf(b, "absorbed transposes: %s\n", p->absorbed);
  gc_sbuf_printf(b, "  %-28s %-6s %12s %14s %14s  %s\n", "kernel", "launch", "items", "bytes", "flops",
                 "ops");
  for (int i = 0; i < p->n_launches; i++) {
    int ki = p->launches[i];
    const kir_kernel *k = m->kernels[ki];
    gc_sbuf_printf(b, "  %-28s %-6s %12lld %14.0f %14.0f  %s%s\n", k->name,
                   k->launch.kind == KIR_LAUNCH_BLOCKS ? "blocks" : "items", (long long)k->launch.n,
                   k->bytes_moved, k->flops, i < p->n_prologue ? "[once per weights] " : "",
                   p->kernel_ops ? p->kernel_ops[ki] : "");
    tot_bytes += k->bytes_moved;
    tot_flops += k->flops;
  }
  gc_sbuf_printf(b, "  %-28s %-6s %12s %14.0f %14.0f\n", "total", "", "", tot_bytes, tot_flops);
  gc_plan_consts_stats(b, p);
  gc_sbuf_printf(b, "arena: %zu bytes (lower bound %zu, %d temps)\n", p->arena_bytes,
                 p->arena_lower_bound, temp_count(p));
}
