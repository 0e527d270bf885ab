/* lower_common.c - the helpers the lowering suites (test_lower.c, test_lower_matmul.c)
 * share: the graph-text builder, the structural plan checks and the case runner that
 * lowers a graph for both targets, runs the plan on the host evaluator (lower_eval.h),
 * compares with the interpreter and compiles the CUDA module (plan_compile.h).
 */
#include "tests/lower_common.h"
#include "frontend/parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lower_eval.h"
#include "tests/plan_compile.h"
#include "driver/settings.h"

uint64_t g_seed;

/* ---- graph builder ------------------------------------------------------------------------ */

/* Argument %name: type, random data of `kind` (see cuda_testutil.h). */
void gb_arg(gb *b, const char *name, const char *type, char kind) {
  gc_sbuf_printf(&b->args, "%s%%%s: %s", b->na ? ", " : "", name, type);
  b->kinds[b->na++] = kind;
}

/* One statement (printf-style, without the trailing ';'). */
void gb_op(gb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gc_sbuf_puts(&b->body, "  ");
  gc_sbuf_vprintf(&b->body, fmt, ap);
  gc_sbuf_puts(&b->body, ";\n");
  va_end(ap);
}

/* Return %val of type `type`. */
void gb_ret(gb *b, const char *val, const char *type) {
  gc_sbuf_printf(&b->rets, "%s%%%s", b->nr ? ", " : "", val);
  gc_sbuf_printf(&b->rtys, "%s%s", b->nr ? ", " : "", type);
  b->nr++;
}

/* The whole text (malloc'd); frees the builder's buffers. */
char *gb_text(gb *b) {
  gc_sbuf s = {0};
  gc_sbuf_printf(&s, "version 1;\ngraph @t(%s) -> (%s) {\n%s  return %s;\n}\n",
                 b->args.data ? b->args.data : "", b->rtys.data, b->body.data ? b->body.data : "",
                 b->rets.data);
  gc_sbuf_free(&b->args);
  gc_sbuf_free(&b->body);
  gc_sbuf_free(&b->rets);
  gc_sbuf_free(&b->rtys);
  return gc_sbuf_take(&s);
}

/* ---- plan checks ----------------------------------------------------------------------------- */

/* Does block b store (scalar or vector) to global param `param`? */
static int block_stores(const kir_block *b, int param) {
  for (const kir_stmt *s = b->head; s; s = s->next) {
    switch (s->kind) {
      case KIR_S_STORE:
        if (s->u.store.space == KIR_GLOBAL && s->u.store.buf == param) return 1;
        break;
      case KIR_S_STORE_VEC:
        if (s->u.vec.space == KIR_GLOBAL && s->u.vec.buf == param) return 1;
        break;
      case KIR_S_FOR:
        if (block_stores(&s->u.loop.body, param)) return 1;
        break;
      case KIR_S_IF:
        if (block_stores(&s->u.cond.then, param) || block_stores(&s->u.cond.els, param)) return 1;
        break;
      default: break;
    }
  }
  return 0;
}

/* Does kernel k write plan buffer `buf`? */
int kernel_writes(const kir_kernel *k, int buf) {
  for (int i = 0; i < k->n_params; i++)
    if (k->params[i].kind == KIR_PARAM_BUFFER && k->params[i].binding == buf &&
        block_stores(&k->body, i))
      return 1;
  return 0;
}

/* Does kernel k bind plan buffer `buf`? */
static int kernel_binds(const kir_kernel *k, int buf) {
  for (int i = 0; i < k->n_params; i++)
    if (k->params[i].kind == KIR_PARAM_BUFFER && k->params[i].binding == buf) return 1;
  return 0;
}

/* Does e use thread indices, shuffles or shared memory? */
static int expr_gpu_only(const kir_expr *e) {
  if (!e) return 0;
  switch (e->kind) {
    case KIR_E_SPECIAL:
    case KIR_E_SHFL_XOR: return 1;
    case KIR_E_UNARY:
    case KIR_E_CAST:
    case KIR_E_BITCAST: return expr_gpu_only(e->u.op.a);
    case KIR_E_BINARY: return expr_gpu_only(e->u.op.a) || expr_gpu_only(e->u.op.b);
    case KIR_E_SELECT: return expr_gpu_only(e->u.op.a) || expr_gpu_only(e->u.op.b) || expr_gpu_only(e->u.op.c);
    case KIR_E_LOAD: return e->u.mem.space == KIR_SHARED || expr_gpu_only(e->u.mem.index);
    case KIR_E_PACK2: return expr_gpu_only(e->u.pack.lo) || expr_gpu_only(e->u.pack.hi);
    default: return 0;
  }
}

/* Host kernels: no barriers, shuffles, specials or shared memory anywhere. */
static int block_gpu_only(const kir_block *b) {
  for (const kir_stmt *s = b->head; s; s = s->next) {
    switch (s->kind) {
      case KIR_S_BARRIER: case KIR_S_CP_ASYNC: case KIR_S_CP_COMMIT: case KIR_S_CP_WAIT:
      case KIR_S_LDMATRIX: case KIR_S_MMA: case KIR_S_FENCE_ASYNC: case KIR_S_WG_FENCE:
      case KIR_S_WG_COMMIT: case KIR_S_WG_WAIT: case KIR_S_WGMMA: case KIR_S_MBAR_INIT:
      case KIR_S_MBAR_EXPECT: case KIR_S_MBAR_WAIT: case KIR_S_TMA_LOAD: case KIR_S_TMAP_ACQUIRE: return 1;
      case KIR_S_ASSIGN: if (expr_gpu_only(s->u.assign.value)) return 1; break;
      case KIR_S_STORE:
        if (s->u.store.space == KIR_SHARED || expr_gpu_only(s->u.store.value) || expr_gpu_only(s->u.store.index)) return 1;
        break;
      case KIR_S_FOR:
        if (expr_gpu_only(s->u.loop.lo) || expr_gpu_only(s->u.loop.hi) || block_gpu_only(&s->u.loop.body)) return 1;
        break;
      case KIR_S_IF:
        if (expr_gpu_only(s->u.cond.cond) || block_gpu_only(&s->u.cond.then) || block_gpu_only(&s->u.cond.els)) return 1;
        break;
      default: break;
    }
  }
  return 0;
}

/* Bytes a buffer occupies in the arena. */
size_t slot(const gc_plan_buffer *b) { return (b->bytes + 255) / 256 * 256; }

/* Every structural property of a plan for graph g. */
void check_plan(const gc_plan *p, const gc_graph *g, kir_target_kind tk) {
  const kir_module *m = p->kir;
  for (int i = 0; i < m->n_kernels; i++) {
    const kir_kernel *k = m->kernels[i];
    kir_verify(k);
    if (tk == KIR_TARGET_HOST) {
      ck_assert_msg(k->launch.kind == KIR_LAUNCH_ITEMS && k->n_shared == 0 && !block_gpu_only(&k->body),
                    "host kernel %s uses GPU-only features", k->name);
    } else {
      ck_assert_msg(k->n_scratch == 0, "GPU kernel %s uses host scratch arrays", k->name);
    }
    int launched = 0;
    for (int l = 0; l < p->n_launches; l++) launched += p->launches[l] == i;
    ck_assert_msg(launched == 1, "kernel %s launched %d times", k->name, launched);
    /* names: <op>_<id>, fusion_<id> or copy_out<N> */
    const char *us = strncmp(k->name, "copy_out", 8) == 0 ? k->name + 7 : strrchr(k->name, '_');
    ck_assert_msg(us && us[1] >= '0' && us[1] <= '9', "kernel name %s", k->name);
  }
  int n_in = 0, n_out = 0;
  for (int b = 0; b < p->n_buffers; b++) {
    const gc_plan_buffer *pb = &p->buffers[b];
    ck_assert_uint_eq(pb->bytes, (size_t)gc_type_numel(&pb->type) * graphc_dtype_size(pb->type.dtype));
    switch (pb->kind) {
      case GC_BUF_INPUT:
        n_in++;
        ck_assert_int_lt(pb->index, g->n_args);
        ck_assert(gc_type_equal(&pb->type, &g->args[pb->index]->type));
        break;
      case GC_BUF_OUTPUT: {
        n_out++;
        ck_assert_int_lt(pb->index, g->n_outputs);
        ck_assert(gc_type_equal(&pb->type, &g->outputs[pb->index]->type));
        int written = 0;
        for (int l = 0; l < p->n_launches; l++) written |= kernel_writes(m->kernels[p->launches[l]], b);
        ck_assert_msg(written, "output %d is never written", pb->index);
        for (int c = 0; c < b; c++)
          ck_assert(!(p->buffers[c].kind == GC_BUF_OUTPUT && p->buffers[c].index == pb->index));
        break;
      }
      case GC_BUF_CONST:
        ck_assert_int_lt(pb->index, p->n_consts);
        ck_assert_uint_eq(p->consts[pb->index].bytes, pb->bytes);
        break;
      case GC_BUF_STATE:
        ck_assert_int_lt(pb->index, p->n_states);
        ck_assert_uint_eq(p->states[pb->index].bytes, pb->bytes);
        break;
      case GC_BUF_TEMP:
        ck_assert_msg(pb->first_use >= 0, "TEMP buffer %d never used", b);
        ck_assert_msg(kernel_writes(m->kernels[p->launches[pb->first_use]], b),
                      "TEMP buffer %d is not written by its first launch", b);
        ck_assert_uint_eq(pb->offset % 256, 0);
        ck_assert_uint_le(pb->offset + pb->bytes, p->arena_bytes);
        break;
    }
  }
  ck_assert_int_eq(n_in, g->n_args);
  ck_assert_int_eq(n_out, g->n_outputs);
  /* launches bind buffers only inside their live range, with matching dtypes */
  for (int l = 0; l < p->n_launches; l++) {
    const kir_kernel *k = m->kernels[p->launches[l]];
    for (int i = 0; i < k->n_params; i++) {
      if (k->params[i].kind != KIR_PARAM_BUFFER) continue;
      const gc_plan_buffer *pb = &p->buffers[k->params[i].binding];
      ck_assert_int_eq(k->params[i].dtype, pb->type.dtype);
      ck_assert(pb->first_use <= l && l <= pb->last_use);
    }
  }
  /* no two simultaneously live TEMP buffers overlap, unless an in-place pair */
  for (int a = 0; a < p->n_buffers; a++)
    for (int b = a + 1; b < p->n_buffers; b++) {
      const gc_plan_buffer *x = &p->buffers[a], *y = &p->buffers[b];
      if (x->kind != GC_BUF_TEMP || y->kind != GC_BUF_TEMP) continue;
      int live = x->first_use <= y->last_use && y->first_use <= x->last_use;
      int mem = x->offset < y->offset + slot(y) && y->offset < x->offset + slot(x);
      if (!live || !mem) continue;
      int inplace = x->offset == y->offset && x->bytes == y->bytes &&
                    (x->last_use == y->first_use || y->last_use == x->first_use);
      int at = x->last_use == y->first_use ? x->last_use : y->last_use;
      ck_assert_msg(inplace && kernel_binds(m->kernels[p->launches[at]], a) &&
                        kernel_binds(m->kernels[p->launches[at]], b),
                    "TEMP buffers %d [%d,%d]@%zu and %d [%d,%d]@%zu overlap", a, x->first_use,
                    x->last_use, x->offset, b, y->first_use, y->last_use, y->offset);
    }
  ck_assert_uint_ge(p->arena_bytes, p->arena_lower_bound);
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].kind == GC_BUF_TEMP) ck_assert_uint_ge(p->arena_lower_bound, slot(&p->buffers[b]));
}

/* ---- running a case --------------------------------------------------------------------------- */

/* Parse and verify text; fails the test with rendered diagnostics otherwise. */
gc_module *parse_ok(const char *text) {
  gc_diags d;
  gc_diags_init(&d, "case.graph", text, strlen(text));
  gc_module *m = gc_parse("case.graph", text, strlen(text), &d);
  if (m && gc_verify_module(m, &d) != 0) {
    gc_module_free(m);
    m = NULL;
  }
  if (!m) {
    char *r = gc_diags_render(&d);
    ck_abort_msg("case does not verify:\n%s\n%s", text, r ? r : "");
  }
  gc_diags_free(&d);
  return m;
}

/* Tensor-core tile forced on CUDA targets (kir_target.tc_bm / tc_bn; 0: the heuristic;
 * a forced tile is the mma.sync kernel's), g_no_wgmma: sm_90 targets without wgmma, and
 * g_tc_sms: kir_target.num_sms (0: the default 132; small counts pick big tiles on small grids),
 * g_wgmma_short_k: wgmma also for K <= 128 (kir_target.short_k_mma cleared), g_no_tma: the
 * wgmma kernels' stages filled by cp.async, not TMA (kir_target.tma cleared),
 * g_simt_unroll_macs: kir_target.simt_unroll_macs (0: the default; 1: every f32 SIMT matmul
 * unrolls its K tile), g_loop_vecs: kir_target.loop_vecs (vectors an item of a loop kernel;
 * 0: chosen from the size). */
int g_tc_tile[2], g_no_wgmma, g_tc_sms, g_wgmma_short_k, g_no_tma, g_loop_vecs;
int64_t g_simt_unroll_macs;
/* Host plans: kir_target.simd_bytes (0: the default), and run_case_w on the fused host
 * plan only, which must use scratch arrays (the packed matmul). */
int g_host_simd, g_host_packed;
int g_no_compile;

/* Lower for target t, fusion on or off; fails with diagnostics when lowering fails. */
gc_plan *lower_ok_f(const gc_graph *g, const gc_safetensors *w, kir_target_kind tk, int fuse) {
  kir_target t;
  if (tk == KIR_TARGET_CUDA) {
    kir_target_cuda(&t, 90);
    gc_settings_apply_target(tu_settings(), &t);
    t.tc_bm = g_tc_tile[0];
    t.tc_bn = g_tc_tile[1];
    if (g_no_wgmma) t.wgmma = 0;
    if (g_tc_sms) t.num_sms = g_tc_sms;
    if (g_wgmma_short_k) t.short_k_mma = 0;
    if (g_no_tma) t.tma = 0;
    if (g_loop_vecs) t.loop_vecs = g_loop_vecs;
    if (g_simt_unroll_macs) t.simt_unroll_macs = g_simt_unroll_macs;
  } else {
    kir_target_host(&t, 4);
    gc_settings_apply_target(tu_settings(), &t);
    if (g_host_simd) t.simd_bytes = g_host_simd;
  }
  gc_diags d;
  gc_diags_init(&d, "case.graph", NULL, 0);
  gc_plan *p = gc_lower_opts(g, &t, fuse, &d);
  if (p && gc_plan_bind_weights(p, w, &d)) {
    gc_plan_free(p);
    p = NULL;
  }
  if (!p) {
    char *r = gc_diags_render(&d);
    ck_abort_msg("lowering failed: %s", r ? r : "");
  }
  gc_diags_free(&d);
  return p;
}

/* Lower with fusion on (what gc_lower does). */
gc_plan *lower_ok(const gc_graph *g, const gc_safetensors *w, kir_target_kind tk) {
  return lower_ok_f(g, w, tk, 1);
}

/* GRAPHC_LOWER_DUMP=dir writes each case as <hash>_c<chain>.graph plus its inputs
 * (<hash>_c<chain>.in.safetensors), so a GPU machine can run the same cases
 * through `graphc run --backend cuda|interp` and compare. */
static void dump_case(const char *text, int chain, const gc_graph *g, const graphc_tensor_t *in) {
  uint64_t h = 1469598103934665603ull;
  for (const char *c = text; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  char path[1024];
  snprintf(path, sizeof path, "%s/%016llx_c%d.graph", getenv("GRAPHC_LOWER_DUMP"), (unsigned long long)h, chain);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  gc_st_tensor *ts = calloc((size_t)g->n_args + 1, sizeof *ts);
  for (int i = 0; i < g->n_args; i++) {
    ts[i].name = g->args[i]->name;
    ts[i].dtype = in[i].dtype;
    ts[i].rank = in[i].rank;
    memcpy(ts[i].dims, in[i].dims, sizeof ts[i].dims);
    ts[i].data = in[i].data;
    ts[i].nbytes = in[i].nbytes;
  }
  snprintf(path, sizeof path, "%s/%016llx_c%d.in.safetensors", getenv("GRAPHC_LOWER_DUMP"), (unsigned long long)h, chain);
  gc_diags d;
  gc_diags_init(&d, path, NULL, 0);
  ck_assert_int_eq(gc_safetensors_write(path, ts, g->n_args, &d), 0);
  gc_diags_free(&d);
  free(ts);
}

/* Lower `text` for both targets, check structure, compare values with the
 * interpreter, compile the CUDA module. `irange` bounds index ('i') data. */
void run_case_w(char *text, int chain, int64_t irange, const gc_safetensors *w, gb *b_kinds) {
  gc_module *m = parse_ok(text);
  gc_graph *g = m->graphs[0];
  graphc_tensor_t *in = calloc((size_t)g->n_args + 1, sizeof *in);
  graphc_tensor_t *ref = calloc((size_t)g->n_outputs + 1, sizeof *ref);
  unsigned char **got_in = calloc((size_t)g->n_args + 1, sizeof *got_in);
  unsigned char **got = calloc((size_t)g->n_outputs + 1, sizeof *got);
  uint64_t seed = g_seed;
  for (int i = 0; i < g->n_args; i++) {
    const gc_type *t = &g->args[i]->type;
    tu_tensor_of_type(&in[i], t);
    tu_fill(in[i].data, t->dtype, gc_type_numel(t), b_kinds->kinds[i], irange, &seed);
    got_in[i] = in[i].data;
  }
  for (int i = 0; i < g->n_outputs; i++) {
    tu_tensor_of_type(&ref[i], &g->outputs[i]->type);
    got[i] = malloc(ref[i].nbytes + 1);
  }
  gc_diags d;
  gc_diags_init(&d, "case.graph", text, strlen(text));
  graphc_status_t st = gc_interp_run(g, w, in, g->n_args, ref, g->n_outputs, &d);
  if (st != GRAPHC_STATUS_OK) {
    char *r = gc_diags_render(&d);
    ck_abort_msg("interpreter failed (seed %llu):\n%s\n%s", (unsigned long long)g_seed, text, r ? r : "");
  }
  gc_diags_free(&d);
  if (getenv("GRAPHC_LOWER_DUMP") && !w) dump_case(text, chain, g, in);
  /* both targets, fused (fu = 1) and one kernel per op (fu = 0) */
  for (int run = 0; run < 4; run++) {
    int ti = run & 1, fu = !(run >> 1);
    kir_target_kind tk = ti == 0 ? KIR_TARGET_CUDA : KIR_TARGET_HOST;
    if (g_host_packed && (tk != KIR_TARGET_HOST || !fu)) continue;
    gc_plan *p = lower_ok_f(g, w, tk, fu);
    check_plan(p, g, tk);
    if (g_host_packed) {
      int scratch = 0;
      for (int i = 0; i < p->kir->n_kernels; i++) scratch += p->kir->kernels[i]->n_scratch;
      ck_assert_msg(scratch > 0, "the host matmul did not take the packed path\n%s", text);
    }
    for (int i = 0; i < g->n_outputs; i++) memset(got[i], 0xCD, ref[i].nbytes + 1);
    const char *err = ev_run_plan(p, got_in, got);
    ck_assert_msg(err == NULL, "%s target%s: %s\n%s", ti ? "host" : "cuda", fu ? "" : " (unfused)",
                  err ? err : "", text);
    for (int i = 0; i < g->n_outputs; i++) {
      double atol, rtol;
      tu_tolerance(ref[i].dtype, chain, &atol, &rtol);
      int64_t n = gc_type_numel(&g->outputs[i]->type);
      tu_cmp c = tu_compare(ref[i].data, got[i], ref[i].dtype, n, atol, rtol);
      ck_assert_msg(c.n_bad == 0,
                    "%s target%s, output %d (%%%s): %lld of %lld elements differ, first at %lld: "
                    "got %.9g, want %.9g (seed %llu)\n%s",
                    ti ? "host" : "cuda", fu ? "" : " (unfused)", i, g->outputs[i]->name,
                    (long long)c.n_bad, (long long)n,
                    (long long)c.first_bad, c.got_bad, c.ref_bad, (unsigned long long)g_seed, text);
    }
    if (tk == KIR_TARGET_CUDA && !g_no_compile) pc_compile_plan(p, "cuda plan");
    gc_plan_free(p);
  }
  for (int i = 0; i < g->n_args; i++) free(in[i].data);
  for (int i = 0; i < g->n_outputs; i++) {
    free(ref[i].data);
    free(got[i]);
  }
  free(in);
  free(ref);
  free(got_in);
  free(got);
  gc_module_free(m);
  free(text);
}

/* Finish the builder and run it (no weights). */
void run_gb(gb *b, int chain, int64_t irange) {
  gb kinds = {0};
  memcpy(kinds.kinds, b->kinds, sizeof kinds.kinds);
  run_case_w(gb_text(b), chain, irange, NULL, &kinds);
}

/* "f32[dims]" in a static ring (for building texts). */
const char *ty(const char *dt, const char *dims) {
  static char ring[32][96];
  static int k;
  char *s = ring[k++ & 31];
  snprintf(s, 96, "%s[%s]", dt, dims);
  return s;
}

/* f32 f16 bf16 f64 */
int is_float_name(const char *dt) { return dt[0] == 'f' || (dt[0] == 'b' && dt[1] == 'f'); }
