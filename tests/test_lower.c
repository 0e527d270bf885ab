/* test_lower.c - lowering graphs to execution plans (codegen/lower.c, emit_*.c,
 * buffers.c), without a GPU.
 *
 * Every case is a small graph (built as text, parsed and verified) lowered for
 * both targets (sm_90 and host). For each plan:
 *   structure  every kernel passes kir_verify; host kernels are plain ITEMS
 *              loops; buffers have the right kinds, types and sizes; every
 *              output and every TEMP is written; launches bind buffers only
 *              while they are live; no two simultaneously live TEMP buffers
 *              overlap (all pairs; an in-place pair must share exactly);
 *              arena_bytes >= arena_lower_bound.
 *   values     the plan runs on the host evaluator of lower_eval.h (BLOCKS
 *              groups in lockstep, TEMP buffers at their arena offsets,
 *              bounds-checked) on fresh random inputs and is compared with the
 *              interpreter under the per-dtype tolerances of the brief.
 *   code       the sm_90 plan is printed as CUDA C, compiled with NVRTC and
 *              its PTX accepted by ptxas; the LLVM NVPTX path likewise.
 * The random seed is printed on failure (GRAPHC_TEST_SEED reproduces a run).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/emit.h"
#include "codegen/lower.h"
#include "tests/cuda_testutil.h"
#include "tests/lower_eval.h"
#include "tests/plan_compile.h"
#include "tests/testutil.h"

static uint64_t g_seed;

static const char *const FLOATS[] = {"f32", "f16", "bf16", "f64"};
static const char *const NUMERIC[] = {"f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8"};
static const char *const ALL[] = {"f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool"};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- graph builder ------------------------------------------------------------------------ */

/* A graph under construction: args (with data kinds), statements, returns. */
typedef struct gb {
  gc_sbuf args, body, rets, rtys;
  char kinds[64];
  int na, nr;
} gb;

/* Argument %name: type, random data of `kind` (see cuda_testutil.h). */
static void gb_arg(gb *b, const char *name, const char *type, char kind) {
  gc_sbuf_printf(&b->args, "%s%%%s: %s", b->na ? ", " : "", name, type);
  b->kinds[b->na++] = kind;
}

/* One statement (printf-style, without the trailing ';'). */
static void gb_op(gb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gc_sbuf_puts(&b->body, "  ");
  gc_sbuf_vprintf(&b->body, fmt, ap);
  gc_sbuf_puts(&b->body, ";\n");
  va_end(ap);
}

/* Return %val of type `type`. */
static void gb_ret(gb *b, const char *val, const char *type) {
  gc_sbuf_printf(&b->rets, "%s%%%s", b->nr ? ", " : "", val);
  gc_sbuf_printf(&b->rtys, "%s%s", b->nr ? ", " : "", type);
  b->nr++;
}

/* The whole text (malloc'd); frees the builder's buffers. */
static char *gb_text(gb *b) {
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
static int kernel_writes(const kir_kernel *k, int buf) {
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
    case KIR_E_CAST: return expr_gpu_only(e->u.op.a);
    case KIR_E_BINARY: return expr_gpu_only(e->u.op.a) || expr_gpu_only(e->u.op.b);
    case KIR_E_SELECT: return expr_gpu_only(e->u.op.a) || expr_gpu_only(e->u.op.b) || expr_gpu_only(e->u.op.c);
    case KIR_E_LOAD: return e->u.mem.space == KIR_SHARED || expr_gpu_only(e->u.mem.index);
    default: return 0;
  }
}

/* Host kernels: no barriers, shuffles, specials or shared memory anywhere. */
static int block_gpu_only(const kir_block *b) {
  for (const kir_stmt *s = b->head; s; s = s->next) {
    switch (s->kind) {
      case KIR_S_BARRIER: case KIR_S_CP_ASYNC: case KIR_S_CP_COMMIT: case KIR_S_CP_WAIT:
      case KIR_S_LDMATRIX: case KIR_S_MMA: return 1;
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
static size_t slot(const gc_plan_buffer *b) { return (b->bytes + 255) / 256 * 256; }

/* Every structural property of a plan for graph g. */
static void check_plan(const gc_plan *p, const gc_graph *g, kir_target_kind tk) {
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
static gc_module *parse_ok(const char *text) {
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

/* Tensor-core tile forced on CUDA targets (kir_target.tc_bm / tc_bn; 0: the heuristic). */
static int g_tc_tile[2];
/* Host plans: kir_target.simd_bytes (0: the default), and run_case_w on the fused host
 * plan only, which must use scratch arrays (the packed matmul). */
static int g_host_simd, g_host_packed;

/* Lower for target t, fusion on or off; fails with diagnostics when lowering fails. */
static gc_plan *lower_ok_f(const gc_graph *g, const gc_safetensors *w, kir_target_kind tk, int fuse) {
  kir_target t;
  if (tk == KIR_TARGET_CUDA) {
    kir_target_cuda(&t, 90);
    t.tc_bm = g_tc_tile[0];
    t.tc_bn = g_tc_tile[1];
  } else {
    kir_target_host(&t, 4);
    if (g_host_simd) t.simd_bytes = g_host_simd;
  }
  gc_diags d;
  gc_diags_init(&d, "case.graph", NULL, 0);
  gc_plan *p = gc_lower_opts(g, w, &t, fuse, &d);
  if (!p) {
    char *r = gc_diags_render(&d);
    ck_abort_msg("lowering failed: %s", r ? r : "");
  }
  gc_diags_free(&d);
  return p;
}

/* Lower with fusion on (what gc_lower does). */
static gc_plan *lower_ok(const gc_graph *g, const gc_safetensors *w, kir_target_kind tk) {
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
static void run_case_w(char *text, int chain, int64_t irange, const gc_safetensors *w, gb *b_kinds) {
  gc_module *m = parse_ok(text);
  gc_graph *g = m->graphs[0];
  graphc_tensor_t *in = calloc((size_t)g->n_args + 1, sizeof *in);
  graphc_tensor_t *ref = calloc((size_t)g->n_outputs + 1, sizeof *ref);
  unsigned char **got_in = calloc((size_t)g->n_args + 1, sizeof *got_in);
  unsigned char **got = calloc((size_t)g->n_outputs + 1, sizeof *got);
  uint64_t seed = g_seed;
  for (int i = 0; i < g->n_args; i++) {
    const gc_type *t = &g->args[i]->type;
    in[i].dtype = t->dtype;
    in[i].rank = t->rank;
    memcpy(in[i].dims, t->dims, sizeof in[i].dims);
    in[i].nbytes = (size_t)gc_type_numel(t) * graphc_dtype_size(t->dtype);
    in[i].data = malloc(in[i].nbytes + 1);
    tu_fill(in[i].data, t->dtype, gc_type_numel(t), b_kinds->kinds[i], irange, &seed);
    got_in[i] = in[i].data;
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const gc_type *t = &g->outputs[i]->type;
    ref[i].dtype = t->dtype;
    ref[i].rank = t->rank;
    memcpy(ref[i].dims, t->dims, sizeof ref[i].dims);
    ref[i].nbytes = (size_t)gc_type_numel(t) * graphc_dtype_size(t->dtype);
    ref[i].data = calloc(1, ref[i].nbytes + 1);
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
    if (tk == KIR_TARGET_CUDA) pc_compile_plan(p, "cuda plan");
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
static void run_gb(gb *b, int chain, int64_t irange) {
  gb kinds = {0};
  memcpy(kinds.kinds, b->kinds, sizeof kinds.kinds);
  run_case_w(gb_text(b), chain, irange, NULL, &kinds);
}

/* "f32[dims]" in a static ring (for building texts). */
static const char *ty(const char *dt, const char *dims) {
  static char ring[32][96];
  static int k;
  char *s = ring[k++ & 31];
  snprintf(s, 96, "%s[%s]", dt, dims);
  return s;
}

/* f32 f16 bf16 f64 */
static int is_float_name(const char *dt) { return dt[0] == 'f' || (dt[0] == 'b' && dt[1] == 'f'); }


/* ---- elementwise --------------------------------------------------------------------------------- */

static const char *const SHAPES[] = {"1", "3", "17", "1023", "4097", "4096", "2, 3, 5"};
#define VEC_SHAPE 5

/* Every float unary op on an awkward shape and on a vectorizable one. */
START_TEST(test_unary_float) {
  const char *T = FLOATS[_i];
  static const char *const ops[] = {"neg",  "abs",     "relu", "exp",  "log",   "sqrt",
                                    "rsqrt", "tanh",   "sigmoid", "gelu", "gelu_tanh", "silu",
                                    "erf",  "sin",     "cos",  "floor", "ceil"};
  gb b = {0};
  for (int s = 0; s < COUNT(SHAPES); s++) {
    char n[16];
    snprintf(n, sizeof n, "x%d", s);
    gb_arg(&b, n, ty(T, SHAPES[s]), 'x');
    snprintf(n, sizeof n, "p%d", s);
    gb_arg(&b, n, ty(T, SHAPES[s]), 'p');
  }
  int r = 0;
  for (int o = 0; o < COUNT(ops); o++) {
    int shapes[2] = {o % COUNT(SHAPES), VEC_SHAPE};
    for (int j = 0; j < 2; j++) {
      int s = shapes[j];
      int pos = !strcmp(ops[o], "log") || !strcmp(ops[o], "sqrt") || !strcmp(ops[o], "rsqrt");
      const char *name = !strcmp(ops[o], "gelu_tanh") ? "gelu" : ops[o];
      const char *attr = !strcmp(ops[o], "gelu_tanh") ? ", approximate=\"tanh\"" : "";
      gb_op(&b, "%%r%d = %s(%%%c%d%s)", r, name, pos ? 'p' : 'x', s, attr);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty(T, SHAPES[s]));
    }
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* neg/abs/relu/clamp on ints (extremes wrap), clamp on floats (NaN passes through). */
START_TEST(test_unary_numeric) {
  const char *T = NUMERIC[_i];
  int fl = is_float_name(T);
  gb b = {0};
  gb_arg(&b, "a", ty(T, "17"), fl ? 'n' : 'x');
  gb_arg(&b, "b", ty(T, "4096"), fl ? 'n' : 'x');
  gb_arg(&b, "c", ty(T, "2, 3, 5"), fl ? 'n' : 'x');
  static const char *const args[] = {"a", "b", "c"};
  static const char *const shapes[] = {"17", "4096", "2, 3, 5"};
  const char *clamps_f[] = {"clamp(%%%s, min=-1.0)", "clamp(%%%s, max=2.0)", "clamp(%%%s, min=-1.5, max=0.5)"};
  const char *clamps_i[] = {"clamp(%%%s, min=-3, max=7)", "clamp(%%%s, min=0)", "clamp(%%%s, max=5)"};
  int r = 0;
  for (int a = 0; a < 3; a++) {
    static const char *const ops[] = {"neg", "abs", "relu"};
    for (int o = 0; o < 3; o++) {
      gb_op(&b, "%%r%d = %s(%%%s)", r, ops[o], args[a]);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty(T, shapes[a]));
    }
    char call[96];
    snprintf(call, sizeof call, fl ? clamps_f[a] : clamps_i[a], args[a]);
    gb_op(&b, "%%r%d = %s", r, call);
    char v[16];
    snprintf(v, sizeof v, "r%d", r++);
    gb_ret(&b, v, ty(T, shapes[a]));
  }
  run_gb(&b, 0, 0);
}
END_TEST

/* Broadcast pairs: a, b and the result shape. */
static const char *const PAIRS[][3] = {
    {"4, 17", "17", "4, 17"}, {"3, 1, 5", "1, 4, 1", "3, 4, 5"}, {"", "7", "7"},
    {"1023", "1023", "1023"}, {"4096", "4096", "4096"},         {"2, 3", "2, 1", "2, 3"},
    {"5, 1", "", "5, 1"}};
#define VEC_PAIR 4

/* Arithmetic with numpy broadcasting for every numeric dtype. */
START_TEST(test_binary) {
  const char *T = NUMERIC[_i];
  int fl = is_float_name(T);
  static const char *const ops[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow"};
  gb b = {0};
  for (int k = 0; k < COUNT(PAIRS); k++) {
    char n[16];
    snprintf(n, sizeof n, "a%d", k);
    gb_arg(&b, n, ty(T, PAIRS[k][0]), fl ? 'n' : 'x');
    snprintf(n, sizeof n, "b%d", k);
    gb_arg(&b, n, ty(T, PAIRS[k][1]), fl ? 'x' : 'd');
    if (fl) {
      snprintf(n, sizeof n, "pa%d", k);
      gb_arg(&b, n, ty(T, PAIRS[k][0]), 'p');
      snprintf(n, sizeof n, "pb%d", k);
      gb_arg(&b, n, ty(T, PAIRS[k][1]), 'e');
    }
  }
  int r = 0;
  for (int o = 0; o < COUNT(ops) - !fl; o++) {
    int pairs[2] = {o % COUNT(PAIRS), VEC_PAIR};
    for (int j = 0; j < 2; j++) {
      int k = pairs[j];
      int pw = !strcmp(ops[o], "pow");
      gb_op(&b, "%%r%d = %s(%%%sa%d, %%%sb%d)", r, ops[o], pw ? "p" : "", k, pw ? "p" : "", k);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty(T, PAIRS[k][2]));
    }
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* Comparisons for every dtype (small values: many ties; floats with NaN). */
START_TEST(test_compare) {
  const char *T = ALL[_i];
  static const char *const ops[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  gb b = {0};
  for (int k = 0; k < COUNT(PAIRS); k++) {
    char n[16];
    snprintf(n, sizeof n, "a%d", k);
    gb_arg(&b, n, ty(T, PAIRS[k][0]), 's');
    snprintf(n, sizeof n, "b%d", k);
    gb_arg(&b, n, ty(T, PAIRS[k][1]), 's');
  }
  int r = 0;
  for (int o = 0; o < COUNT(ops); o++) {
    int pairs[2] = {o % COUNT(PAIRS), VEC_PAIR};
    for (int j = 0; j < 2; j++) {
      gb_op(&b, "%%r%d = %s(%%a%d, %%b%d)", r, ops[o], pairs[j], pairs[j]);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty("bool", PAIRS[pairs[j]][2]));
    }
  }
  run_gb(&b, 0, 0);
}
END_TEST

/* select with three-way broadcasting, and the bool ops. */
START_TEST(test_select_logic) {
  const char *T = ALL[_i];
  gb b = {0};
  gb_arg(&b, "c0", "bool[4, 1]", 'x');
  gb_arg(&b, "a0", ty(T, "4, 5"), 'x');
  gb_arg(&b, "b0", ty(T, "5"), 'x');
  gb_arg(&b, "c1", "bool[4096]", 'x');
  gb_arg(&b, "a1", ty(T, "4096"), 'x');
  gb_arg(&b, "b1", ty(T, "4096"), 'x');
  gb_arg(&b, "c2", "bool[]", 'x');
  gb_arg(&b, "a2", ty(T, "3"), 'x');
  gb_arg(&b, "b2", ty(T, "2, 1"), 'x');
  gb_arg(&b, "c3", "bool[2, 3]", 'x');
  gb_arg(&b, "a3", ty(T, ""), 'x');
  gb_arg(&b, "b3", ty(T, ""), 'x');
  gb_op(&b, "%%s0 = select(%%c0, %%a0, %%b0)");
  gb_op(&b, "%%s1 = select(%%c1, %%a1, %%b1)");
  gb_op(&b, "%%s2 = select(%%c2, %%a2, %%b2)");
  gb_op(&b, "%%s3 = select(%%c3, %%a3, %%b3)");
  gb_ret(&b, "s0", ty(T, "4, 5"));
  gb_ret(&b, "s1", ty(T, "4096"));
  gb_ret(&b, "s2", ty(T, "2, 3"));
  gb_ret(&b, "s3", ty(T, "2, 3"));
  if (!strcmp(T, "bool")) {
    gb_op(&b, "%%l0 = and(%%a0, %%b0)");
    gb_op(&b, "%%l1 = or(%%a1, %%b1)");
    gb_op(&b, "%%l2 = not(%%a2)");
    gb_op(&b, "%%l3 = not(%%a1)");
    gb_ret(&b, "l0", "bool[4, 5]");
    gb_ret(&b, "l1", "bool[4096]");
    gb_ret(&b, "l2", "bool[3]");
    gb_ret(&b, "l3", "bool[4096]");
  }
  run_gb(&b, 0, 0);
}
END_TEST

/* cast from one dtype to all nine, on special values (NaN, inf, out of range). */
START_TEST(test_cast) {
  const char *S = ALL[_i];
  gb b = {0};
  gb_arg(&b, "x", ty(S, "17"), 'c');
  gb_arg(&b, "y", ty(S, "1024"), 'c');
  int r = 0;
  for (int d = 0; d < COUNT(ALL); d++) {
    gb_op(&b, "%%r%d = cast(%%x, to=%s)", r, ALL[d]);
    char v[16];
    snprintf(v, sizeof v, "r%d", r++);
    gb_ret(&b, v, ty(ALL[d], "17"));
    gb_op(&b, "%%r%d = cast(%%y, to=%s)", r, ALL[d]);
    snprintf(v, sizeof v, "r%d", r++);
    gb_ret(&b, v, ty(ALL[d], "1024"));
  }
  run_gb(&b, 0, 0);
}
END_TEST

/* ---- reductions ------------------------------------------------------------------------------------ */

/* Reductions over every axes pattern: rows (BLOCKS), columns, scattered axes, unit dims, all. */
START_TEST(test_reduce) {
  const char *T = NUMERIC[_i];
  int fl = is_float_name(T);
  gb b = {0};
  static const char *const shp[] = {"17", "3, 1023", "2, 3, 4, 5", "5, 1, 7", "4097", "300, 3, 20"};
  for (int s = 0; s < 6; s++) {
    char n[16];
    snprintf(n, sizeof n, "p%d", s);
    gb_arg(&b, n, ty(T, shp[s]), fl ? 'p' : 'x');
    snprintf(n, sizeof n, "n%d", s);
    gb_arg(&b, n, ty(T, shp[s]), fl ? 'n' : 'x');
  }
  /* arg index, attributes, result dims */
  static const struct { int arg; const char *attrs, *out; } cases[] = {
      {0, "", ""},
      {1, ", axes=[1]", "3"},
      {1, ", axes=[0], keepdims=true", "1, 1023"},
      {2, ", axes=[1, 3]", "2, 4"},
      {2, ", axes=[0, 2], keepdims=true", "1, 3, 1, 5"},
      {2, ", axes=[-1]", "2, 3, 4"},
      {3, ", axes=[1]", "5, 7"},
      {3, ", axes=[0, 1]", "7"},
      {4, "", ""},
      {2, ", axes=[0, 1, 2, 3]", ""},
      {2, ", axes=[2, 3]", "2, 3"},
      /* column kernels on CUDA: long reduced runs over few contiguous outputs */
      {5, ", axes=[0]", "3, 20"},
      {5, ", axes=[0, 1]", "20"},
  };
  static const char *const ops[] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_mean"};
  int r = 0;
  for (int o = 0; o < 4 - !fl; o++)
    for (int k = 0; k < COUNT(cases); k++) {
      char arg = (o == 1 || o == 2) ? 'n' : 'p';
      gb_op(&b, "%%r%d = %s(%%%c%d%s)", r, ops[o], arg, cases[k].arg, cases[k].attrs);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty(T, cases[k].out));
    }
  run_gb(&b, 1, 0);
}
END_TEST

/* argmax: first index of the maximum (ties and NaN), rows and columns. */
START_TEST(test_argmax) {
  const char *T = NUMERIC[_i];
  gb b = {0};
  gb_arg(&b, "a", ty(T, "17"), 's');
  gb_arg(&b, "b", ty(T, "3, 1023"), 's');
  gb_arg(&b, "c", ty(T, "2, 3, 4"), 's');
  gb_arg(&b, "e", ty(T, "4097"), 's');
  gb_arg(&b, "f", ty(T, "5, 1"), 's');
  gb_op(&b, "%%r0 = argmax(%%a)");
  gb_op(&b, "%%r1 = argmax(%%b, axis=1)");
  gb_op(&b, "%%r2 = argmax(%%b, axis=0)");
  gb_op(&b, "%%r3 = argmax(%%c, axis=1, keepdims=true)");
  gb_op(&b, "%%r4 = argmax(%%e, axis=0)");
  gb_op(&b, "%%r5 = argmax(%%f, axis=-1)");
  gb_op(&b, "%%r6 = argmax(%%c, axis=-1)");
  gb_ret(&b, "r0", "i64[]");
  gb_ret(&b, "r1", "i64[3]");
  gb_ret(&b, "r2", "i64[1023]");
  gb_ret(&b, "r3", "i64[2, 1, 4]");
  gb_ret(&b, "r4", "i64[]");
  gb_ret(&b, "r5", "i64[5]");
  gb_ret(&b, "r6", "i64[2, 3]");
  run_gb(&b, 0, 0);
}
END_TEST

/* softmax and log_softmax on rows (BLOCKS) and inner axes (ITEMS). */
START_TEST(test_softmax) {
  const char *T = FLOATS[_i];
  gb b = {0};
  static const struct { const char *shape, *axis; } cases[] = {
      {"3, 1023", "-1"}, {"4, 17, 3", "1"}, {"4097", "0"}, {"1", "0"}, {"2, 1", "1"}, {"2, 5, 33", "2"},
      /* 16-byte row loads and stores on CUDA: whole and partial last vectors per block */
      {"3, 1024", "-1"}, {"2, 1032", "-1"}};
  for (int k = 0; k < COUNT(cases); k++) {
    char n[16];
    snprintf(n, sizeof n, "x%d", k);
    gb_arg(&b, n, ty(T, cases[k].shape), 'x');
    for (int l = 0; l < 2; l++) {
      gb_op(&b, "%%%c%d = %s(%%x%d, axis=%s)", l ? 'l' : 's', k, l ? "log_softmax" : "softmax", k,
            cases[k].axis);
      snprintf(n, sizeof n, "%c%d", l ? 'l' : 's', k);
      gb_ret(&b, n, ty(T, cases[k].shape));
    }
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* layernorm over trailing dims (incl. several) and rmsnorm. */
START_TEST(test_norms) {
  const char *T = FLOATS[_i];
  gb b = {0};
  gb_arg(&b, "x0", ty(T, "3, 1023"), 'x');
  gb_arg(&b, "g0", ty(T, "1023"), 'x');
  gb_arg(&b, "b0", ty(T, "1023"), 'x');
  gb_arg(&b, "x1", ty(T, "2, 3, 17"), 'x');
  gb_arg(&b, "g1", ty(T, "3, 17"), 'x');
  gb_arg(&b, "b1", ty(T, "3, 17"), 'x');
  gb_arg(&b, "x2", ty(T, "4, 1"), 'x');
  gb_arg(&b, "g2", ty(T, "1"), 'x');
  gb_arg(&b, "b2", ty(T, "1"), 'x');
  gb_arg(&b, "x3", ty(T, "2, 4097"), 'x');
  gb_arg(&b, "g3", ty(T, "4097"), 'x');
  gb_op(&b, "%%n0 = layernorm(%%x0, %%g0, %%b0)");
  gb_op(&b, "%%n1 = layernorm(%%x1, %%g1, %%b1, axis=1, eps=0.001)");
  gb_op(&b, "%%n2 = layernorm(%%x2, %%g2, %%b2, axis=-1)");
  gb_arg(&b, "g4", ty(T, "17"), 'x');
  gb_op(&b, "%%m0 = rmsnorm(%%x1, %%g4)");
  gb_op(&b, "%%m1 = rmsnorm(%%x3, %%g3, eps=0.0001)");
  gb_op(&b, "%%m2 = rmsnorm(%%x2, %%g2)");
  gb_ret(&b, "n0", ty(T, "3, 1023"));
  gb_ret(&b, "n1", ty(T, "2, 3, 17"));
  gb_ret(&b, "n2", ty(T, "4, 1"));
  gb_ret(&b, "m0", ty(T, "2, 3, 17"));
  gb_ret(&b, "m1", ty(T, "2, 4097"));
  gb_ret(&b, "m2", ty(T, "4, 1"));
  /* rows read and written 16 bytes at a time on CUDA (a partial last vector per block) */
  gb_arg(&b, "x5", ty(T, "3, 1032"), 'x');
  gb_arg(&b, "g5", ty(T, "1032"), 'x');
  gb_arg(&b, "b5", ty(T, "1032"), 'x');
  gb_op(&b, "%%n5 = layernorm(%%x5, %%g5, %%b5)");
  gb_op(&b, "%%m5 = rmsnorm(%%x5, %%g5)");
  gb_ret(&b, "n5", ty(T, "3, 1032"));
  gb_ret(&b, "m5", ty(T, "3, 1032"));
  run_gb(&b, 1, 0);
}
END_TEST

/* ---- contractions ---------------------------------------------------------------------------------- */

/* matmul: tile edges, K not a multiple of the tile, batch broadcasting, transposes. */
START_TEST(test_matmul) {
  const char *T = NUMERIC[_i];
  int fl = is_float_name(T);
  static const struct { const char *a, *b, *attrs, *out; } cases[] = {
      {"1, 1", "1, 1", "", "1, 1"},
      {"3, 17", "17, 5", "", "3, 5"},
      {"33, 65", "65, 31", "", "33, 31"},
      {"2, 3, 4, 5", "5, 6", "", "2, 3, 4, 6"},
      {"2, 1, 4, 5", "3, 5, 6", "", "2, 3, 4, 6"},
      {"17, 3", "17, 5", ", transpose_a=true", "3, 5"},
      {"3, 17", "5, 17", ", transpose_b=true", "3, 5"},
      {"65, 33", "31, 65", ", transpose_a=true, transpose_b=true", "33, 31"},
      {"40, 64", "64, 70", "", "40, 70"},
      {"4, 5", "2, 5, 6", "", "2, 4, 6"},
      {"2, 7, 3", "2, 4, 7", ", transpose_a=true, transpose_b=true", "2, 3, 4"},
  };
  gb b = {0};
  for (int k = 0; k < COUNT(cases); k++) {
    char n[16];
    snprintf(n, sizeof n, "a%d", k);
    gb_arg(&b, n, ty(T, cases[k].a), fl ? 'x' : 'k');
    snprintf(n, sizeof n, "b%d", k);
    gb_arg(&b, n, ty(T, cases[k].b), fl ? 'x' : 'k');
    gb_op(&b, "%%m%d = matmul(%%a%d, %%b%d%s)", k, k, k, cases[k].attrs);
    snprintf(n, sizeof n, "m%d", k);
    gb_ret(&b, n, ty(T, cases[k].out));
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* The packed host matmul (emit_linalg.c, mm_use_packed) on the evaluator, fused host plan
 * only (its scratch reads are bounds-checked and poisoned before every item), with 16- and
 * 32-wide register tiles: tails in M (9 = 8 + 1), N (520) and K (3600 = 14 x 256 + 16), a
 * transposed A, and a bias + relu epilogue. */
START_TEST(test_matmul_packed) {
  g_host_simd = _i ? 64 : 16;
  g_host_packed = 1;
  gb b = {0};
  /* positive operands: a sum over K = 3600 without cancellation stays within the
   * per-element f32 tolerance for any seed */
  gb_arg(&b, "a", ty("f32", "3600, 9"), 'p');
  gb_arg(&b, "w", ty("f32", "3600, 520"), 'p');
  gb_arg(&b, "c", ty("f32", "520"), 'x');
  gb_op(&b, "%%m = matmul(%%a, %%w, transpose_a=true)");
  gb_op(&b, "%%z = add(%%m, %%c)");
  gb_op(&b, "%%r = relu(%%z)");
  gb_ret(&b, "r", ty("f32", "9, 520"));
  run_gb(&b, 1, 0);
  g_host_simd = g_host_packed = 0;
}
END_TEST

/* Does any kernel of the plan use the tensor cores? */
static int plan_uses_tc(const gc_plan *p) {
  for (int i = 0; i < p->kir->n_kernels; i++)
    if (kir_uses_tensor_cores(p->kir->kernels[i])) return 1;
  return 0;
}

/* Tensor-core matmuls (f16, bf16 on sm_90): tails in M, N and K, both B layouts,
 * broadcast batches, operands that are inline views (a head split), fused
 * epilogues; each case also checks that it took (or, for a transposed A, did
 * not take) the tensor-core kernel. The evaluator runs mma.sync / ldmatrix /
 * cp.async with their PTX semantics. */
START_TEST(test_matmul_tensor_core) {
  const char *T = _i == 0 ? "f16" : "bf16";
  static const struct { const char *body; int tc; } cases[] = {
      {"(%a: T[2, 200, 72], %b: T[72, 136], %c: T[136]) -> (T[2, 200, 136]) {\n"
       "  %y = matmul(%a, %b);\n  %z = add(%y, %c);\n  %r = relu(%z);\n  return %r;\n}\n", 1},
      {"(%a: T[130, 64], %b: T[96, 64]) -> (T[130, 96]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 1},
      {"(%a: T[2, 1, 70, 40], %b: T[3, 40, 72]) -> (T[2, 3, 70, 72]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 1},
      {"(%x: T[1, 80, 128], %k: T[1, 80, 128]) -> (T[1, 2, 80, 80]) {\n"
       "  %x4 = reshape(%x, shape=[1, 80, 2, 64]);\n  %xh = transpose(%x4, perm=[0, 2, 1, 3]);\n"
       "  %k4 = reshape(%k, shape=[1, 80, 2, 64]);\n  %kh = transpose(%k4, perm=[0, 2, 1, 3]);\n"
       "  %s = matmul(%xh, %kh, transpose_b=true);\n  return %s;\n}\n", 1},
      /* staged through the element generator: transposed A, a head merge, a cast prologue */
      {"(%a: T[72, 96], %b: T[72, 64]) -> (T[96, 64]) {\n"
       "  %y = matmul(%a, %b, transpose_a=true);\n  return %y;\n}\n", 1},
      {"(%c: T[2, 2, 72, 64], %w: T[128, 64]) -> (T[2, 72, 64]) {\n"
       "  %t = transpose(%c, perm=[0, 2, 1, 3]);\n  %m = reshape(%t, shape=[2, 72, 128]);\n"
       "  %y = matmul(%m, %w);\n  return %y;\n}\n", 1},
      {"(%a: f32[80, 48], %b: T[64, 48]) -> (T[80, 64]) {\n"
       "  %h = cast(%a, to=T);\n  %y = matmul(%h, %b, transpose_b=true);\n  return %y;\n}\n", 1},
      {"(%a: T[72, 40], %b: T[40, 24]) -> (T[72, 24]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 0},
      /* N below a 64-wide tile (a conv over 7x7 pixels: N 49), M 40 */
      {"(%a: T[40, 72], %b: T[2, 72, 49]) -> (T[2, 40, 49]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 1},
      /* K not a multiple of 8 (a 7x7 conv over 3 channels): both operands staged, tails zero */
      {"(%a: T[80, 147], %b: T[147, 72]) -> (T[80, 72]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 1},
      {"(%a: T[72, 21], %b: T[66, 21]) -> (T[72, 66]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 1},
      /* convs as the conv-gemm pass writes them: B an im2col staged along the output
       * pixels (tc_stage_im2col): a pixel count that is no multiple of 8, rows shorter
       * than a chunk (OW 6), stride + dilation + uneven padding, an inline producer of
       * the image, a 7x7 stride-2 stem (K 147) */
      {"(%x: T[2, 8, 9, 10], %w: T[64, 72]) -> (T[2, 64, 90]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1]);\n  %y = matmul(%w, %c);\n  return %y;\n}\n", 1},
      {"(%x: T[2, 8, 12, 6], %w: T[40, 72]) -> (T[2, 40, 72]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1]);\n  %y = matmul(%w, %c);\n  return %y;\n}\n", 1},
      {"(%x: T[1, 8, 17, 19], %w: T[64, 72]) -> (T[1, 64, 70]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], stride=[2, 2], dilation=[2, 2], padding=[1, 2, 0, 3]);\n"
       "  %y = matmul(%w, %c);\n  return %y;\n}\n", 1},
      {"(%x: T[1, 8, 10, 10], %w: T[64, 72], %b: T[64, 1]) -> (T[1, 64, 100]) {\n"
       "  %r = relu(%x);\n  %c = im2col(%r, kernel=[3, 3], padding=[1, 1]);\n  %y = matmul(%w, %c);\n"
       "  %z = add(%y, %b);\n  return %z;\n}\n", 1},
      {"(%x: T[1, 3, 20, 20], %w: T[64, 147]) -> (T[1, 64, 100]) {\n"
       "  %c = im2col(%x, kernel=[7, 7], stride=[2, 2], padding=[3, 3]);\n  %y = matmul(%w, %c);\n  return %y;\n}\n", 1},
      /* OW a multiple of 8: every chunk inside one output row, no row-wrap selects
       * (stride 1 and 2, a materialized and an inline image) */
      {"(%x: T[2, 8, 8, 16], %w: T[64, 72]) -> (T[2, 64, 128]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1]);\n  %y = matmul(%w, %c);\n  return %y;\n}\n", 1},
      {"(%x: T[1, 8, 17, 32], %w: T[40, 72]) -> (T[1, 40, 144]) {\n"
       "  %r = relu(%x);\n  %c = im2col(%r, kernel=[3, 3], stride=[2, 2], padding=[1, 1]);\n"
       "  %y = matmul(%w, %c);\n  return %y;\n}\n", 1},
  };
  for (int k = 0; k < COUNT(cases); k++) {
    gc_sbuf sb = {0};
    gc_sbuf_puts(&sb, "version 1;\ngraph @g");
    for (const char *q = cases[k].body; *q; q++) {
      if (*q == 'T' && (q[1] == '[' || q[1] == ')'))
        gc_sbuf_puts(&sb, T);
      else
        gc_sbuf_putc(&sb, *q);
    }
    char *text = gc_sbuf_take(&sb);
    /* every output tile (the heuristic picks 64x64 for these small grids on 132 SMs) */
    static const int tiles[][2] = {{0, 0}, {128, 128}, {128, 64}, {64, 128}};
    /* the im2col cases (the last seven): the heuristic's tile and 128x128 (each tile
     * costs a ptxas run per dtype) */
    int conv = k >= COUNT(cases) - 7;
    for (int ti = 0; ti < COUNT(tiles) && (ti == 0 || cases[k].tc) && (!conv || ti < 2); ti++) {
      g_tc_tile[0] = tiles[ti][0];
      g_tc_tile[1] = tiles[ti][1];
      gc_module *m = parse_ok(text);
      gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
      ck_assert_msg(plan_uses_tc(p) == cases[k].tc, "case %d (%s, tile %dx%d): tensor cores %s expected\n%s", k,
                    T, tiles[ti][0], tiles[ti][1], cases[k].tc ? "" : "not", text);
      gc_plan_free(p);
      gc_module_free(m);
      gb kinds = {0};
      for (int i = 0; i < 8; i++) kinds.kinds[i] = 'x';
      run_case_w(strdup(text), 1, 0, NULL, &kinds);  /* takes its text */
    }
    g_tc_tile[0] = g_tc_tile[1] = 0;
    free(text);
  }
  /* the heuristic: 128x128 while that grid covers the 132 SMs, smaller tiles below */
  static const struct { const char *sig; int64_t blocks; } grids[] = {
      {"(%a: T[127, 4096], %b: T[4096, 4096]) -> (T[127, 4096])", 2 * 64},      /* 64x64 */
      {"(%a: T[2048, 512], %b: T[512, 2048]) -> (T[2048, 2048])", 16 * 16},     /* 128x128 */
      {"(%a: T[1024, 512], %b: T[512, 2048]) -> (T[1024, 2048])", 8 * 32},      /* 128x64 */
      {"(%a: T[8, 256, 512], %b: T[512, 2048]) -> (T[8, 256, 2048])", 8 * 2 * 16},  /* 128x128 */
      {"(%a: T[64, 576], %b: T[64, 576, 3136]) -> (T[64, 64, 3136])", 64 * 1 * 25}}; /* 64x128: M 64 */
  for (int gi = 0; gi < COUNT(grids); gi++) {
    gc_sbuf sb = {0};
    gc_sbuf_puts(&sb, "version 1;\ngraph @g");
    for (const char *q = grids[gi].sig; *q; q++)
      if (*q == 'T' && q[1] == '[')
        gc_sbuf_puts(&sb, T);
      else
        gc_sbuf_putc(&sb, *q);
    gc_sbuf_puts(&sb, " {\n  %y = matmul(%a, %b);\n  return %y;\n}\n");
    char *text = gc_sbuf_take(&sb);
    gc_module *m = parse_ok(text);
    gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
    ck_assert_int_eq(p->kir->n_kernels, 1);
    ck_assert_msg(kir_uses_tensor_cores(p->kir->kernels[0]), "%s", text);
    ck_assert_msg(p->kir->kernels[0]->launch.n == grids[gi].blocks, "%s: %lld blocks, expected %lld", text,
                  (long long)p->kir->kernels[0]->launch.n, (long long)grids[gi].blocks);
    gc_plan_free(p);
    gc_module_free(m);
    free(text);
  }
}
END_TEST

/* tf32 tensor cores for f32 matmuls (kir_target.tf32, opt-in): the same layouts as
 * above; the results carry tf32's 10-bit mantissa, so they are compared by relative
 * L2 error and by the largest error relative to the largest output. */
START_TEST(test_matmul_tf32) {
  static const char *const cases[] = {
      "(%a: f32[2, 200, 72], %b: f32[72, 136], %c: f32[136]) -> (f32[2, 200, 136]) {\n"
      "  %y = matmul(%a, %b);\n  %z = add(%y, %c);\n  %r = relu(%z);\n  return %r;\n}\n",
      "(%a: f32[130, 64], %b: f32[96, 64]) -> (f32[130, 96]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n",
      "(%a: f32[2, 1, 70, 44], %b: f32[3, 44, 72]) -> (f32[2, 3, 70, 72]) {\n"
      "  %y = matmul(%a, %b);\n  return %y;\n}\n",
      "(%x: f32[1, 80, 128], %k: f32[1, 80, 128]) -> (f32[1, 2, 80, 80]) {\n"
      "  %x4 = reshape(%x, shape=[1, 80, 2, 64]);\n  %xh = transpose(%x4, perm=[0, 2, 1, 3]);\n"
      "  %k4 = reshape(%k, shape=[1, 80, 2, 64]);\n  %kh = transpose(%k4, perm=[0, 2, 1, 3]);\n"
      "  %s = matmul(%xh, %kh, transpose_b=true);\n  return %s;\n}\n",
      "(%a: f32[72, 96], %b: f32[72, 68]) -> (f32[96, 68]) {\n"
      "  %y = matmul(%a, %b, transpose_a=true);\n  return %y;\n}\n",
  };
  for (int ci = 0; ci < COUNT(cases); ci++) {
    char text[2048];
    snprintf(text, sizeof text, "version 1;\ngraph @g%s", cases[ci]);
    gc_module *m = parse_ok(text);
    gc_graph *g = m->graphs[0];
    kir_target t;
    kir_target_cuda(&t, 90);
    t.tf32 = 1;
    gc_diags d;
    gc_diags_init(&d, "case.graph", NULL, 0);
    gc_plan *p = gc_lower_opts(g, NULL, &t, 1, &d);
    ck_assert_msg(p != NULL, "lowering failed");
    gc_diags_free(&d);
    ck_assert_msg(plan_uses_tc(p), "case %d: no tensor cores\n%s", ci, text);
    pc_compile_plan(p, "cuda plan");
    graphc_tensor_t in[4], ref[1];
    unsigned char *ins[4], *got[1];
    uint64_t seed = g_seed + (uint64_t)ci;
    for (int i = 0; i < g->n_args; i++) {
      const gc_type *ty_ = &g->args[i]->type;
      memset(&in[i], 0, sizeof in[i]);
      in[i].dtype = ty_->dtype;
      in[i].rank = ty_->rank;
      memcpy(in[i].dims, ty_->dims, sizeof in[i].dims);
      in[i].nbytes = (size_t)gc_type_numel(ty_) * 4;
      in[i].data = malloc(in[i].nbytes);
      tu_fill(in[i].data, ty_->dtype, gc_type_numel(ty_), 'x', 0, &seed);
      ins[i] = in[i].data;
    }
    const gc_type *ot = &g->outputs[0]->type;
    int64_t n = gc_type_numel(ot);
    memset(&ref[0], 0, sizeof ref[0]);
    ref[0].dtype = ot->dtype;
    ref[0].rank = ot->rank;
    memcpy(ref[0].dims, ot->dims, sizeof ref[0].dims);
    ref[0].nbytes = (size_t)n * 4;
    ref[0].data = calloc(1, ref[0].nbytes);
    got[0] = calloc(1, ref[0].nbytes);
    gc_diags_init(&d, "case.graph", text, strlen(text));
    ck_assert_int_eq(gc_interp_run(g, NULL, in, g->n_args, ref, 1, &d), GRAPHC_STATUS_OK);
    gc_diags_free(&d);
    const char *err = ev_run_plan(p, ins, got);
    ck_assert_msg(err == NULL, "case %d: %s", ci, err ? err : "");
    const float *rf = ref[0].data, *gf = (const float *)got[0];
    double e2 = 0, r2 = 0, emax = 0, rmax = 0;
    for (int64_t i = 0; i < n; i++) {
      double e = (double)gf[i] - (double)rf[i];
      e2 += e * e;
      r2 += (double)rf[i] * rf[i];
      emax = fmax(emax, fabs(e));
      rmax = fmax(rmax, fabs((double)rf[i]));
    }
    ck_assert_msg(sqrt(e2) <= 4e-3 * sqrt(r2) && emax <= 1e-2 * rmax && emax > 0,
                  "case %d: rel L2 %.3g, max error %.3g of %.3g (seed %llu)\n%s", ci, sqrt(e2 / r2), emax, rmax,
                  (unsigned long long)g_seed, text);
    for (int i = 0; i < g->n_args; i++) free(in[i].data);
    free(ref[0].data);
    free(got[0]);
    gc_plan_free(p);
    gc_module_free(m);
  }
}
END_TEST

/* conv2d: padding forms, stride, dilation, groups, 1x1. */
START_TEST(test_conv) {
  const char *T = FLOATS[_i];
  static const struct { const char *x, *w, *attrs, *out; } cases[] = {
      {"1, 3, 9, 9", "4, 3, 3, 3", ", padding=[1, 1]", "1, 4, 9, 9"},
      {"2, 4, 8, 8", "6, 2, 3, 3", ", stride=[2, 2], groups=2", "2, 6, 3, 3"},
      {"1, 2, 7, 7", "3, 2, 3, 3", ", dilation=[2, 2], padding=[0, 1, 2, 3]", "1, 3, 5, 7"},
      {"1, 5, 4, 4", "2, 5, 1, 1", "", "1, 2, 4, 4"},
      {"1, 1, 5, 6", "1, 1, 2, 3", ", stride=[2, 1], padding=[1, 0]", "1, 1, 3, 4"},
  };
  gb b = {0};
  for (int k = 0; k < COUNT(cases); k++) {
    char n[16];
    snprintf(n, sizeof n, "x%d", k);
    gb_arg(&b, n, ty(T, cases[k].x), 'x');
    snprintf(n, sizeof n, "w%d", k);
    gb_arg(&b, n, ty(T, cases[k].w), 'x');
    gb_op(&b, "%%c%d = conv2d(%%x%d, %%w%d%s)", k, k, k, cases[k].attrs);
    snprintf(n, sizeof n, "c%d", k);
    gb_ret(&b, n, ty(T, cases[k].out));
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* max/avg pools: default stride, padding (max reads -inf, avg counts only real taps). */
START_TEST(test_pool) {
  const char *T = FLOATS[_i];
  static const struct { const char *attrs, *out; } cases[] = {
      {"kernel=[2, 2]", "1, 2, 4, 4"},
      {"kernel=[3, 3], stride=[2, 2], padding=[1, 1]", "1, 2, 4, 4"},
      {"kernel=[3, 2], stride=[1, 2], padding=[0, 1, 2, 0]", "1, 2, 8, 4"},
  };
  gb b = {0};
  gb_arg(&b, "x", ty(T, "1, 2, 8, 8"), 'n');
  for (int k = 0; k < COUNT(cases); k++)
    for (int m = 0; m < 2; m++) {
      gb_op(&b, "%%%c%d = %s(%%x, %s)", m ? 'a' : 'm', k, m ? "avg_pool2d" : "max_pool2d", cases[k].attrs);
      char n[16];
      snprintf(n, sizeof n, "%c%d", m ? 'a' : 'm', k);
      gb_ret(&b, n, ty(T, cases[k].out));
    }
  run_gb(&b, 1, 0);
}
END_TEST

/* ---- data movement ----------------------------------------------------------------------------------- */

static const char *const MOVE_TYPES[] = {"f32", "f16", "i64", "u8", "bool", "f64"};

/* reshape views, transposes (incl. ones that are plain copies), broadcasts. */
START_TEST(test_reshape_transpose_broadcast) {
  const char *T = MOVE_TYPES[_i];
  gb b = {0};
  gb_arg(&b, "x", ty(T, "2, 3, 5"), 'x');
  gb_arg(&b, "y", ty(T, "17, 33"), 'x');
  gb_arg(&b, "z", ty(T, "4096"), 'x');
  gb_arg(&b, "u", ty(T, "2, 1, 3"), 'x');
  gb_arg(&b, "v", ty(T, "17"), 'x');
  gb_arg(&b, "w", ty(T, "3, 1"), 'x');
  gb_arg(&b, "s", ty(T, ""), 'x');
  gb_op(&b, "%%r = reshape(%%x, shape=[6, 5])");
  gb_op(&b, "%%rt = transpose(%%r, perm=[1, 0])");
  gb_op(&b, "%%t0 = transpose(%%x, perm=[2, 0, 1])");
  gb_op(&b, "%%t1 = transpose(%%y, perm=[1, 0])");
  gb_op(&b, "%%t2 = transpose(%%z, perm=[0])");
  gb_op(&b, "%%t3 = transpose(%%u, perm=[1, 0, 2])");
  gb_op(&b, "%%b0 = broadcast(%%v, shape=[3, 17])");
  gb_op(&b, "%%b1 = broadcast(%%w, shape=[2, 3, 4])");
  gb_op(&b, "%%b2 = broadcast(%%s, shape=[5])");
  gb_op(&b, "%%b3 = broadcast(%%y, shape=[17, 33])");
  gb_op(&b, "%%rr = reshape(%%t1, shape=[3, 11, 17])");
  gb_op(&b, "%%r2 = reshape(%%rr, shape=[561])");
  gb_ret(&b, "r", ty(T, "6, 5"));
  gb_ret(&b, "rt", ty(T, "5, 6"));
  gb_ret(&b, "t0", ty(T, "5, 2, 3"));
  gb_ret(&b, "t1", ty(T, "33, 17"));
  gb_ret(&b, "t2", ty(T, "4096"));
  gb_ret(&b, "t3", ty(T, "1, 2, 3"));
  gb_ret(&b, "b0", ty(T, "3, 17"));
  gb_ret(&b, "b1", ty(T, "2, 3, 4"));
  gb_ret(&b, "b2", ty(T, "5"));
  gb_ret(&b, "b3", ty(T, "17, 33"));
  gb_ret(&b, "r2", ty(T, "561"));
  run_gb(&b, 0, 0);
}
END_TEST

/* concat along every axis kind, slice with negative/clamped bounds and steps, pad. */
START_TEST(test_concat_slice_pad) {
  const char *T = MOVE_TYPES[_i];
  const char *pv = !strcmp(T, "bool") ? "true" : is_float_name(T) ? "1.5" : "7";
  gb b = {0};
  gb_arg(&b, "a", ty(T, "2, 3"), 'x');
  gb_arg(&b, "b", ty(T, "2, 5"), 'x');
  gb_arg(&b, "c", ty(T, "2, 1"), 'x');
  gb_arg(&b, "d", ty(T, "3, 4"), 'x');
  gb_arg(&b, "e", ty(T, "1, 4"), 'x');
  gb_arg(&b, "f", ty(T, "2, 3, 4"), 'x');
  gb_arg(&b, "g", ty(T, "2, 3, 1"), 'x');
  gb_arg(&b, "h", ty(T, "10, 7"), 'x');
  gb_arg(&b, "k", ty(T, "5"), 'x');
  gb_op(&b, "%%c0 = concat(%%a, %%b, %%c, axis=1)");
  gb_op(&b, "%%c1 = concat(%%d, %%e, axis=0)");
  gb_op(&b, "%%c2 = concat(%%f, %%g, axis=-1)");
  gb_op(&b, "%%c3 = concat(%%a, axis=0)");
  gb_op(&b, "%%s0 = slice(%%h, start=[1, -5], end=[9, 7], step=[2, 1])");
  gb_op(&b, "%%s1 = slice(%%h, start=[-100, 0], end=[100, 7])");
  gb_op(&b, "%%s2 = slice(%%h, start=[0, 6], end=[10, 7], step=[3, 1])");
  gb_op(&b, "%%s3 = slice(%%h, start=[2, 1], end=[3, 6], step=[1, 2])");
  gb_op(&b, "%%p0 = pad(%%d, pads=[1, 0, 2, 3])");
  gb_op(&b, "%%p1 = pad(%%k, pads=[0, 2], value=%s)", pv);
  gb_op(&b, "%%p2 = pad(%%f, pads=[0, 1, 0, 0, 0, 2])");
  gb_ret(&b, "c0", ty(T, "2, 9"));
  gb_ret(&b, "c1", ty(T, "4, 4"));
  gb_ret(&b, "c2", ty(T, "2, 3, 5"));
  gb_ret(&b, "c3", ty(T, "2, 3"));
  gb_ret(&b, "s0", ty(T, "4, 5"));
  gb_ret(&b, "s1", ty(T, "10, 7"));
  gb_ret(&b, "s2", ty(T, "4, 1"));
  gb_ret(&b, "s3", ty(T, "1, 3"));
  gb_ret(&b, "p0", ty(T, "6, 7"));
  gb_ret(&b, "p1", ty(T, "7"));
  gb_ret(&b, "p2", ty(T, "2, 4, 6"));
  run_gb(&b, 0, 0);
}
END_TEST

/* gather with negative indices (i32 and i64 index types), and split. */
START_TEST(test_gather_split) {
  const char *T = MOVE_TYPES[_i];
  static const struct { const char *x, *ind, *axis, *out; int64_t range; } cases[] = {
      {"5, 4", "i64[3]", "0", "3, 4", 5},
      {"2, 7, 3", "i32[2, 2]", "1", "2, 2, 2, 3", 7},
      {"6", "i64[]", "0", "", 6},
      {"4, 6", "i32[9]", "-1", "4, 9", 6},
  };
  for (int k = 0; k < COUNT(cases); k++) {
    gb b = {0};
    gb_arg(&b, "x", ty(T, cases[k].x), 'x');
    gb_arg(&b, "i", cases[k].ind, 'i');
    gb_op(&b, "%%g = gather(%%x, %%i, axis=%s)", cases[k].axis);
    gb_ret(&b, "g", ty(T, cases[k].out));
    run_gb(&b, 0, cases[k].range);
  }
  gb b = {0};
  gb_arg(&b, "x", ty(T, "2, 6"), 'x');
  gb_arg(&b, "y", ty(T, "7, 3"), 'x');
  gb_op(&b, "%%a, %%b, %%c = split(%%x, axis=1, sizes=[1, 2, 3])");
  gb_op(&b, "%%d, %%e = split(%%y, axis=0, sizes=[3, 4])");
  gb_op(&b, "%%f = split(%%y, axis=-1, sizes=[3])");
  gb_ret(&b, "a", ty(T, "2, 1"));
  gb_ret(&b, "b", ty(T, "2, 2"));
  gb_ret(&b, "c", ty(T, "2, 3"));
  gb_ret(&b, "e", ty(T, "4, 3"));
  gb_ret(&b, "d", ty(T, "3, 3"));
  gb_ret(&b, "f", ty(T, "7, 3"));
  run_gb(&b, 0, 0);
}
END_TEST

/* const (scalar fills, lists converted at compile time) and iota. */
START_TEST(test_const_iota) {
  gb b = {0};
  gb_arg(&b, "x", "f32[3, 4]", 'x');
  gb_op(&b, "%%c0 = const(value=1.5)");
  gb_op(&b, "%%c1 = const(value=2.5, shape=[3, 4], dtype=f16)");
  gb_op(&b, "%%c2 = const(value=7, shape=[4096], dtype=i32)");
  gb_op(&b, "%%c3 = const(value=true, shape=[5])");
  gb_op(&b, "%%c4 = const(value=[1.0, 2.5, -3.0, 4.0, 5.5, 6.0], shape=[2, 3])");
  gb_op(&b, "%%c5 = const(value=[1, -2, 3], dtype=i8)");
  gb_op(&b, "%%c6 = const(value=0.1, shape=[17], dtype=bf16)");
  gb_op(&b, "%%c7 = const(value=[0.1, 65519.0, 1e-08], dtype=f16)");
  gb_op(&b, "%%c8 = const(value=-2.7, shape=[3], dtype=i32)");
  gb_op(&b, "%%c9 = const(value=[true, false, true])");
  gb_op(&b, "%%s = add(%%x, %%c0)");
  gb_op(&b, "%%i0 = iota(shape=[3, 4], axis=1)");
  gb_op(&b, "%%i1 = iota(shape=[3, 4], axis=0, dtype=f32)");
  gb_op(&b, "%%i2 = iota(shape=[2, 3, 5], axis=1, dtype=i32)");
  gb_op(&b, "%%i3 = iota(shape=[4096], dtype=f16)");
  gb_op(&b, "%%i4 = iota(shape=[7], dtype=u8)");
  gb_op(&b, "%%i5 = iota(shape=[2, 3, 5], axis=-1, dtype=bf16)");
  gb_ret(&b, "c0", "f32[]");
  gb_ret(&b, "c1", "f16[3, 4]");
  gb_ret(&b, "c2", "i32[4096]");
  gb_ret(&b, "c3", "bool[5]");
  gb_ret(&b, "c4", "f32[2, 3]");
  gb_ret(&b, "c5", "i8[3]");
  gb_ret(&b, "c6", "bf16[17]");
  gb_ret(&b, "c7", "f16[3]");
  gb_ret(&b, "c8", "i32[3]");
  gb_ret(&b, "c9", "bool[3]");
  gb_ret(&b, "s", "f32[3, 4]");
  gb_ret(&b, "i0", "i64[3, 4]");
  gb_ret(&b, "i1", "f32[3, 4]");
  gb_ret(&b, "i2", "i32[2, 3, 5]");
  gb_ret(&b, "i3", "f16[4096]");
  gb_ret(&b, "i4", "u8[7]");
  gb_ret(&b, "i5", "bf16[2, 3, 5]");
  run_gb(&b, 0, 0);
}
END_TEST

/* ---- params, outputs, in-place ------------------------------------------------------------------- */

/* Params are CONST buffers on the weights' data; a returned param is copied. */
START_TEST(test_params) {
  static float w[17 * 5], bias[5];
  uint64_t seed = g_seed;
  tu_fill(w, GRAPHC_DTYPE_F32, 17 * 5, 'x', 0, &seed);
  tu_fill(bias, GRAPHC_DTYPE_F32, 5, 'x', 0, &seed);
  gc_st_tensor ts[2] = {{"fc.w", GRAPHC_DTYPE_F32, 2, {17, 5}, w, sizeof w},
                        {"fc.b", GRAPHC_DTYPE_F32, 1, {5}, bias, sizeof bias}};
  gc_safetensors st = {2, ts, NULL, 0, (char *)"mem"};
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[3, 17]) -> (f32[3, 5], f32[5], f32[17, 5]) {\n"
      "  param %w: f32[17, 5] = \"fc.w\";\n"
      "  param %b: f32[5] = \"fc.b\";\n"
      "  %m = matmul(%x, %w);\n"
      "  %y = add(%m, %b);\n"
      "  return %y, %b, %w;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  gc_plan *p = lower_ok(m->graphs[0], &st, KIR_TARGET_CUDA);
  int n_const = 0;
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].kind == GC_BUF_CONST) {
      const gc_plan_const *c = &p->consts[p->buffers[b].index];
      ck_assert(c->data == (const void *)w || c->data == (const void *)bias);
      ck_assert_str_eq(c->data == (const void *)w ? "fc.w" : "fc.b", c->name);
      n_const++;
    }
  ck_assert_int_eq(n_const, 2);
  ck_assert_int_eq(p->n_consts, 2);
  gc_plan_free(p);
  /* without weights (code generation only) params have no data but lower fine */
  p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
  for (int i = 0; i < p->n_consts; i++) ck_assert_ptr_null(p->consts[i].data);
  gc_plan_free(p);
  gc_module_free(m);
  gb kinds = {0};
  kinds.kinds[0] = 'x';
  run_case_w(strdup(text), 1, 0, &st, &kinds);
}
END_TEST

/* Number of TEMP buffers of a plan. */
static int temp_buffers(const gc_plan *p) {
  int n = 0;
  for (int b = 0; b < p->n_buffers; b++) n += p->buffers[b].kind == GC_BUF_TEMP;
  return n;
}

/* The name of the kernel that writes OUTPUT index i. */
static const char *output_writer(const gc_plan *p, int i) {
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].kind == GC_BUF_OUTPUT && p->buffers[b].index == i)
      for (int l = 0; l < p->n_launches; l++)
        if (kernel_writes(p->kir->kernels[p->launches[l]], b)) return p->kir->kernels[p->launches[l]]->name;
  return "";
}

/* Outputs that alias args, views, consts or each other get copies; others are written in place. */
START_TEST(test_output_aliases) {
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[17], %y: f32[4, 17]) -> (f32[17], f32[17], f32[17], f32[1, 17], f32[4, 17], "
      "f32[3], f32[17], f32[1, 17]) {\n"
      "  %a = exp(%x);\n"
      "  %r = reshape(%a, shape=[1, 17]);\n"
      "  %c = const(value=[1.0, 2.0, 3.0]);\n"
      "  %n = neg(%x);\n"
      "  %v = reshape(%x, shape=[1, 17]);\n"
      "  %z = add(%v, %r);\n"
      "  return %x, %a, %a, %r, %y, %c, %n, %z;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  /* one kernel per op: a reshape is a view of its operand's buffer, so returning it copies */
  gc_plan *p = lower_ok_f(m->graphs[0], NULL, KIR_TARGET_CUDA, 0);
  ck_assert_str_eq(output_writer(p, 0), "copy_out0");
  ck_assert_str_eq(output_writer(p, 1), "exp_0");
  ck_assert_str_eq(output_writer(p, 2), "copy_out2");
  ck_assert_str_eq(output_writer(p, 3), "copy_out3");
  ck_assert_str_eq(output_writer(p, 4), "copy_out4");
  ck_assert_str_eq(output_writer(p, 5), "copy_out5");
  ck_assert_str_eq(output_writer(p, 6), "neg_3");
  ck_assert_str_eq(output_writer(p, 7), "add_5");
  ck_assert_int_eq(p->n_consts, 1);
  ck_assert_str_eq(p->consts[0].name, "const.2");
  gc_plan_free(p);
  /* fused: exp and the reshape are computed by add's kernel and written there
   * too (extra outputs at the same index); args, consts and repeats still copy */
  p = lower_ok_f(m->graphs[0], NULL, KIR_TARGET_CUDA, 1);
  ck_assert_str_eq(output_writer(p, 0), "copy_out0");
  ck_assert_str_eq(output_writer(p, 1), "fusion_5");
  ck_assert_str_eq(output_writer(p, 2), "copy_out2");
  ck_assert_str_eq(output_writer(p, 3), "fusion_5");
  ck_assert_str_eq(output_writer(p, 4), "copy_out4");
  ck_assert_str_eq(output_writer(p, 5), "copy_out5");
  ck_assert_str_eq(output_writer(p, 6), "neg_3");
  ck_assert_str_eq(output_writer(p, 7), "fusion_5");
  ck_assert_int_eq(temp_buffers(p), 0);
  gc_plan_free(p);
  gc_module_free(m);
  gb kinds = {0};
  strcpy(kinds.kinds, "xx");
  run_case_w(strdup(text), 0, 0, NULL, &kinds);
}
END_TEST

/* A chain of elementwise ops reuses one slot in place; a value read later does not give its slot away. */
START_TEST(test_inplace) {
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[4096], %y: f32[4096]) -> (f32[4096], f32[4096]) {\n"
      "  %a = add(%x, %y);\n"
      "  %b = exp(%a);\n"
      "  %c = mul(%b, %b);\n"
      "  %d = neg(%c);\n"
      "  %e = sub(%a, %x);\n"
      "  %f = sigmoid(%e);\n"
      "  %g = add(%f, %a);\n"
      "  return %d, %g;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  for (int ti = 0; ti < 2; ti++) {
    /* one kernel per op (fusion would leave no TEMP at all, see below) */
    gc_plan *p = lower_ok_f(m->graphs[0], NULL, ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA, 0);
    check_plan(p, m->graphs[0], ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA);
    /* TEMPs in creation order: a, b, c, e, f */
    int t[8], n = 0;
    for (int b = 0; b < p->n_buffers; b++)
      if (p->buffers[b].kind == GC_BUF_TEMP) t[n++] = b;
    ck_assert_int_eq(n, 5);
    const gc_plan_buffer *a = &p->buffers[t[0]], *bb = &p->buffers[t[1]], *c = &p->buffers[t[2]];
    const gc_plan_buffer *e = &p->buffers[t[3]], *f = &p->buffers[t[4]];
    ck_assert_uint_ne(bb->offset, a->offset);  /* a is read again by e and g */
    ck_assert_uint_eq(c->offset, bb->offset);  /* c = b * b takes over b */
    ck_assert_uint_eq(f->offset, e->offset);   /* f = sigmoid(e) takes over e */
    /* a lives throughout; b/c, then e/f share the second slot */
    ck_assert_uint_eq(e->offset, bb->offset);
    ck_assert_uint_eq(p->arena_bytes, 2 * 16384);
    ck_assert_uint_eq(p->arena_lower_bound, 2 * 16384);
    /* the launch of c reads b through a param that no longer promises readonly */
    const kir_kernel *kc = p->kir->kernels[p->launches[c->first_use]];
    for (int i = 0; i < kc->n_params; i++)
      if (kc->params[i].binding == t[1]) ck_assert_int_eq(kc->params[i].readonly, 0);
    gc_plan_free(p);
    /* fused: both outputs from one kernel (a duplicated into both chains, the
     * two roots merged as siblings reading x and y), nothing in the arena */
    p = lower_ok_f(m->graphs[0], NULL, ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA, 1);
    check_plan(p, m->graphs[0], ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA);
    ck_assert_int_eq(p->kir->n_kernels, 1);
    ck_assert_str_eq(p->kir->kernels[0]->name, "fusion_3");
    ck_assert_int_eq(temp_buffers(p), 0);
    ck_assert_uint_eq(p->arena_bytes, 0);
    gc_plan_free(p);
  }
  gc_module_free(m);
  gb kinds = {0};
  strcpy(kinds.kinds, "xx");
  run_case_w(strdup(text), 1, 0, NULL, &kinds);
}
END_TEST

/* Buffer assignment on random lifetimes: never overlaps live buffers, 256-aligned,
 * deterministic, and the lower bound is the exact peak of live bytes. */
START_TEST(test_assign_random) {
  uint64_t s = g_seed;
  for (int iter = 0; iter < 300; iter++) {
    int nl = 1 + (int)tu_int(&s, 0, 39), nb = 1 + (int)tu_int(&s, 0, 59);
    gc_plan p;
    memset(&p, 0, sizeof p);
    p.n_launches = nl;
    p.launches = calloc((size_t)nl, sizeof *p.launches);
    p.n_buffers = nb;
    p.buffers = calloc((size_t)nb, sizeof *p.buffers);
    for (int b = 0; b < nb; b++) {
      gc_plan_buffer *pb = &p.buffers[b];
      pb->kind = tu_int(&s, 0, 9) == 0 ? GC_BUF_INPUT : GC_BUF_TEMP;
      pb->type.dtype = GRAPHC_DTYPE_U8;
      pb->type.rank = 1;
      pb->type.dims[0] = tu_int(&s, 1, 3) == 1 ? tu_int(&s, 1, 300) : tu_int(&s, 1, 20000);
      pb->bytes = (size_t)pb->type.dims[0];
      pb->first_use = (int)tu_int(&s, 0, nl - 1);
      pb->last_use = pb->first_use + (int)tu_int(&s, 0, nl - 1 - pb->first_use);
    }
    gc_assign_buffers(&p, NULL);
    size_t *off = malloc((size_t)nb * sizeof *off);
    for (int b = 0; b < nb; b++) off[b] = p.buffers[b].offset;
    size_t arena = p.arena_bytes, bound = p.arena_lower_bound;
    gc_assign_buffers(&p, NULL);
    ck_assert_uint_eq(arena, p.arena_bytes);
    size_t peak = 0;
    for (int l = 0; l < nl; l++) {
      size_t live = 0;
      for (int b = 0; b < nb; b++) {
        const gc_plan_buffer *x = &p.buffers[b];
        ck_assert_uint_eq(off[b], x->offset);
        if (x->kind == GC_BUF_TEMP && x->first_use <= l && l <= x->last_use) live += slot(x);
      }
      if (live > peak) peak = live;
    }
    ck_assert_uint_eq(bound, peak);
    ck_assert_uint_ge(arena, bound);
    for (int a = 0; a < nb; a++) {
      const gc_plan_buffer *x = &p.buffers[a];
      if (x->kind != GC_BUF_TEMP) continue;
      ck_assert_uint_eq(x->offset % 256, 0);
      ck_assert_uint_le(x->offset + slot(x), arena);
      for (int b = a + 1; b < nb; b++) {
        const gc_plan_buffer *y = &p.buffers[b];
        if (y->kind != GC_BUF_TEMP) continue;
        int live = x->first_use <= y->last_use && y->first_use <= x->last_use;
        int mem = x->offset < y->offset + slot(y) && y->offset < x->offset + slot(x);
        ck_assert_msg(!(live && mem), "iteration %d: buffers %d and %d overlap (seed %llu)", iter, a, b,
                      (unsigned long long)g_seed);
      }
    }
    free(off);
    free(p.launches);
    free(p.buffers);
  }
}
END_TEST

/* ---- errors, stats, determinism --------------------------------------------------------------------- */

/* Lowering errors: missing or mismatched weights at the param, unbound dims at the argument. */
START_TEST(test_errors) {
  static float w[10];
  gc_st_tensor ts[1] = {{"w", GRAPHC_DTYPE_F32, 2, {5, 2}, w, sizeof w}};
  gc_safetensors st = {1, ts, NULL, 0, (char *)"mem.safetensors"};
  static const struct { const char *text; graphc_status_t status; int line; const char *msg; } cases[] = {
      {"version 1;\ngraph @t(%x: f32[2]) -> (f32[2]) {\n  param %w: f32[2] = \"nope\";\n"
       "  %y = add(%x, %w);\n  return %y;\n}\n",
       GRAPHC_STATUS_WEIGHTS_ERROR, 3, "\"nope\" not found"},
      {"version 1;\ngraph @t(%x: f32[2, 5]) -> (f32[2, 5]) {\n  param %w: f32[2, 5] = \"w\";\n"
       "  %y = add(%x, %w);\n  return %y;\n}\n",
       GRAPHC_STATUS_WEIGHTS_ERROR, 3, "f32[5, 2]"},
      {"version 1;\ngraph @t<B>(%x: f32[B, 4]) -> (f32[B, 4]) {\n  %y = neg(%x);\n  return %y;\n}\n",
       GRAPHC_STATUS_INVALID_ARGUMENT, 2, "symbolic"},
  };
  for (int k = 0; k < COUNT(cases); k++) {
    gc_module *m = parse_ok(cases[k].text);
    kir_target t;
    kir_target_cuda(&t, 90);
    gc_diags d;
    gc_diags_init(&d, "case.graph", cases[k].text, strlen(cases[k].text));
    gc_plan *p = gc_lower(m->graphs[0], &st, &t, &d);
    ck_assert_ptr_null(p);
    ck_assert_int_ge(d.n_errors, 1);
    ck_assert_int_eq(d.status, cases[k].status);
    ck_assert_int_eq(d.items[0].loc.line, cases[k].line);
    ck_assert_msg(strstr(d.items[0].msg, cases[k].msg) != NULL, "message: %s", d.items[0].msg);
    gc_diags_free(&d);
    gc_module_free(m);
  }
}
END_TEST

/* --stats summary: kernels with their model, consts, arena against its bound. */
START_TEST(test_stats) {
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[8, 64]) -> (f32[8, 10]) {\n"
      "  %w = const(value=0.5, shape=[64, 10]);\n"
      "  %m = matmul(%x, %w);\n"
      "  %c = const(value=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]);\n"
      "  %y = add(%m, %c);\n"
      "  %r = relu(%y);\n"
      "  return %r;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  for (int fu = 0; fu < 2; fu++) {
    gc_plan *p = lower_ok_f(m->graphs[0], NULL, KIR_TARGET_CUDA, fu);
    gc_sbuf b = {0};
    gc_plan_stats(&b, p);
    char *st = gc_sbuf_take(&b);
    /* unfused: every op its kernel; fused: the splat is read by the matmul, bias
     * and relu run in its epilogue: one kernel, no TEMP */
    static const char *const want0[] = {"4 kernels, 4 launches", "fusion: off, 4 ops -> 4 kernels",
                                        "const_0", "matmul_1", "add_3", "relu_4", "10240",
                                        "consts: 1 tensors, 40 B", "arena:", "lower bound"};
    static const char *const want1[] = {"1 kernels, 1 launches", "fusion: on, 4 ops -> 1 kernels",
                                        "fusion_1", "const %w, matmul %m, add %y, relu %r", "10240",
                                        "consts: 1 tensors, 40 B", "arena: 0 bytes (lower bound 0, 0 temps)"};
    const char *const *want = fu ? want1 : want0;
    int nw = fu ? COUNT(want1) : COUNT(want0);
    for (int i = 0; i < nw; i++)
      ck_assert_msg(strstr(st, want[i]) != NULL, "stats lack \"%s\":\n%s", want[i], st);
    const kir_kernel *mm = NULL;
    for (int i = 0; i < p->kir->n_kernels; i++)
      if (!strcmp(p->kir->kernels[i]->name, fu ? "fusion_1" : "matmul_1")) mm = p->kir->kernels[i];
    ck_assert_ptr_nonnull(mm);
    ck_assert_double_eq(mm->flops, 2.0 * 8 * 64 * 10);
    /* reads of the group's inputs + writes of its outputs */
    ck_assert_double_eq(mm->bytes_moved, fu ? 4.0 * (8 * 64 + 10 + 8 * 10) : 4.0 * (8 * 64 + 64 * 10 + 8 * 10));
    free(st);
    gc_plan_free(p);
  }
  gc_module_free(m);
}
END_TEST

/* Same graph, same plan and same CUDA C; every op (unfused) or group (fused)
 * gets a kernel named <op>_<id> (one op) or fusion_<root id>. */
START_TEST(test_determinism) {
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[4, 33], %g: f32[33]) -> (f32[4, 33], i64[4], f32[4, 33]) {\n"
      "  %a = layernorm(%x, %g, %g);\n"
      "  %s = softmax(%a);\n"
      "  %i = argmax(%s);\n"
      "  %t = transpose(%s, perm=[1, 0]);\n"
      "  %u = reshape(%t, shape=[4, 33]);\n"
      "  %v = mul(%u, %s);\n"
      "  return %v, %i, %a;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  for (int fu = 0; fu < 2; fu++) {
    char *src[2];
    for (int r = 0; r < 2; r++) {
      gc_plan *p = lower_ok_f(m->graphs[0], NULL, KIR_TARGET_CUDA, fu);
      static const char *const names0[] = {"layernorm_0", "softmax_1", "argmax_2", "transpose_3", "mul_5"};
      static const char *const names1[] = {"layernorm_0", "softmax_1", "argmax_2", "fusion_5"};
      const char *const *names = fu ? names1 : names0;
      int nn = fu ? COUNT(names1) : COUNT(names0);
      ck_assert_int_eq(p->kir->n_kernels, nn);
      for (int i = 0; i < nn; i++) ck_assert_str_eq(p->kir->kernels[p->launches[i]]->name, names[i]);
      gc_sbuf b = {0};
      gc_cuda_c_print(&b, p->kir);
      src[r] = gc_sbuf_take(&b);
      gc_plan_free(p);
    }
    ck_assert_str_eq(src[0], src[1]);
    free(src[0]);
    free(src[1]);
  }
  gc_module_free(m);
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------------------ */

/* One test per dtype; one tcase per op family (CK_RUN_CASE=matmul runs one). */
static Suite *lower_suite(void) {
  Suite *s = suite_create("lower");
  const struct { const char *name; const TTest *test; int n; } fams[] = {
      {"unary", test_unary_float, COUNT(FLOATS)},
      {"unary", test_unary_numeric, COUNT(NUMERIC)},
      {"binary", test_binary, COUNT(NUMERIC)},
      {"binary", test_compare, COUNT(ALL)},
      {"binary", test_select_logic, COUNT(ALL)},
      {"cast", test_cast, COUNT(ALL)},
      {"reduce", test_reduce, COUNT(NUMERIC)},
      {"reduce", test_argmax, COUNT(NUMERIC)},
      {"norm", test_softmax, COUNT(FLOATS)},
      {"norm", test_norms, COUNT(FLOATS)},
      {"matmul", test_matmul, COUNT(NUMERIC)},
      {"matmul", test_matmul_tensor_core, 2},
      {"matmul", test_matmul_tf32, 1},
      {"matmul", test_matmul_packed, 2},
      {"conv", test_conv, COUNT(FLOATS)},
      {"conv", test_pool, COUNT(FLOATS)},
      {"move", test_reshape_transpose_broadcast, COUNT(MOVE_TYPES)},
      {"move", test_concat_slice_pad, COUNT(MOVE_TYPES)},
      {"move", test_gather_split, COUNT(MOVE_TYPES)},
      {"move", test_const_iota, 1},
  };
  TCase *tc = NULL;
  for (int i = 0; i < COUNT(fams); i++) {
    if (!tc || strcmp(fams[i - 1].name, fams[i].name) != 0) {
      tc = tcase_create(fams[i].name);
      tcase_set_timeout(tc, 600);
      suite_add_tcase(s, tc);
    }
    tcase_add_loop_test(tc, fams[i].test, 0, fams[i].n);
  }
  TCase *tp = tcase_create("plan");
  tcase_set_timeout(tp, 600);
  tcase_add_test(tp, test_params);
  tcase_add_test(tp, test_output_aliases);
  tcase_add_test(tp, test_inplace);
  tcase_add_test(tp, test_assign_random);
  tcase_add_test(tp, test_errors);
  tcase_add_test(tp, test_stats);
  tcase_add_test(tp, test_determinism);
  suite_add_tcase(s, tp);
  return s;
}

/* Seed once per run (printed), then the suite. */
int main(void) {
  g_seed = tu_seed();
  printf("test_lower: seed %llu (set GRAPHC_TEST_SEED to reproduce)\n", (unsigned long long)g_seed);
  fflush(stdout);
  return tu_run_suite(lower_suite());
}
