/* test_cpu_backend.c - the cpu backend (LLVM host JIT) against the interpreter.
 *
 *   examples     every examples/<name>.graph, small bound dims, random weights
 *                (graphc_model_write_random_weights) and inputs
 *   ops          every op of ir/ops.def (the loop index is the opcode; an op
 *                with no case below fails) x the dtypes the brief allows, with
 *                shapes 1, 3, 17, 1023, 4097, broadcasts and scalars; large
 *                matmuls for the packed host kernel (tails, transposes, epilogue)
 *   pool         the thread pool directly (ranges contiguous, each item once,
 *                n not divisible by the thread count, many back-to-back jobs),
 *                a JIT'd kernel split over 3 threads, and a big graph through
 *                the public API with GRAPHC_CPU_THREADS=3
 *   errors       a compile error (bad pass pipeline; a host-incompatible
 *                kernel), a bad GRAPHC_CPU_THREADS, misaligned and
 *                overlapping I/O buffers, repeated runs, stats
 *
 * Inputs are fresh random data (tests/cuda_testutil.h kinds); the seed is
 * printed at start and in every failure; GRAPHC_TEST_SEED=N reproduces.
 * Tolerances are the brief's per dtype (tu_tolerance).
 */
#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "codegen/kir.h"
#include "ir/ir.h"
#include "frontend/parser.h"
#include "driver/cpu_backend.h"
#include "driver/exec.h"
#include "runtime/threadpool.h"

/* The run's seed (tu_seed), printed at start and in failures. */
static uint64_t g_seed;

/* ---- graph builder: statements -> a verified .graph text ------------------------------ */
#define GB_MAX_ARGS 64

typedef struct gb {
  gc_sbuf args, body, rets;
  char kinds[GB_MAX_ARGS + 1];    /* data kind per argument (cuda_testutil.h) */
  int64_t ranges[GB_MAX_ARGS];    /* index range for kind 'i' */
  int n_args, n_rets;
} gb;

/* Short dtype name. */
static const char *dtn(gc_dtype t) { return graphc_dtype_name(t); }

/* New argument `%aN: T[dims]` with a data kind; returns "%aN" (ring of names). */
static const char *gb_arg(gb *b, char kind, int64_t range, gc_dtype t, const char *dims) {
  static char ring[16][16];
  static int k;
  ck_assert_int_lt(b->n_args, GB_MAX_ARGS);
  char *name = ring[k++ & 15];
  snprintf(name, 16, "%%a%d", b->n_args);
  gc_sbuf_printf(&b->args, "%s%s: %s[%s]", b->n_args ? ", " : "", name, dtn(t), dims);
  b->kinds[b->n_args] = kind;
  b->ranges[b->n_args] = range;
  b->n_args++;
  return name;
}

/* Statement with `n` results `%rK = <expr>;`, all of them returned. */
static void gb_ret_n(gb *b, int n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void gb_ret_n(gb *b, int n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gc_sbuf_puts(&b->body, "  ");
  for (int i = 0; i < n; i++) {
    gc_sbuf_printf(&b->body, "%s%%r%d", i ? ", " : "", b->n_rets);
    gc_sbuf_printf(&b->rets, "%s%%r%d", b->n_rets ? ", " : "", b->n_rets);
    b->n_rets++;
  }
  gc_sbuf_puts(&b->body, " = ");
  gc_sbuf_vprintf(&b->body, fmt, ap);
  gc_sbuf_puts(&b->body, ";\n");
  va_end(ap);
}
#define gb_ret(b, ...) gb_ret_n((b), 1, __VA_ARGS__)

/* Free the builder's buffers. */
static void gb_free(gb *b) {
  gc_sbuf_free(&b->args);
  gc_sbuf_free(&b->body);
  gc_sbuf_free(&b->rets);
}

/* The graph with its real signature: result types come from shape inference
 * and the printer writes the module. malloc'd; aborts when the case is wrong. */
static char *gb_text(gb *b, const char *label) {
  gc_sbuf src = {0};
  gc_sbuf_printf(&src, "version 1;\ngraph @t(%s) -> (", b->args.data ? b->args.data : "");
  for (int i = 0; i < b->n_rets; i++) gc_sbuf_printf(&src, "%sbool[]", i ? ", " : "");
  gc_sbuf_printf(&src, ") {\n%s  return %s;\n}\n", b->body.data ? b->body.data : "",
                 b->rets.data ? b->rets.data : "");
  gc_diags d;
  gc_diags_init(&d, label, src.data, src.len);
  gc_module *m = gc_parse(label, src.data, src.len, &d);
  ck_assert_msg(m != NULL, "%s: case does not parse: %s\n%s", label, d.n ? d.items[0].msg : "?",
                src.data);
  gc_graph *g = m->graphs[0];
  for (gc_op *op = g->first; op; op = op->next) {
    gc_type types[16];
    ck_assert_int_le(op->n_results, 16);
    ck_assert_msg(gc_infer_op(g, op, types, &d), "%s: shape inference rejects the case: %s\n%s",
                  label, d.n ? d.items[0].msg : "?", src.data);
    for (int i = 0; i < op->n_results; i++) op->results[i]->type = types[i];
  }
  gc_type *rt = gc_arena_alloc(&g->arena, sizeof *rt * (size_t)(g->n_outputs + 1));
  ck_assert_ptr_nonnull(rt);
  for (int i = 0; i < g->n_outputs; i++) rt[i] = g->outputs[i]->type;
  g->result_types = rt;
  g->n_result_types = g->n_outputs;
  gc_sbuf out = {0};
  gc_print_module(&out, m);
  char *text = gc_sbuf_take(&out);
  gc_module_free(m);
  gc_diags_free(&d);
  gc_sbuf_free(&src);
  return text;
}

/* ---- running a model on cpu and interp ------------------------------------------------- */
/* Compile m for backend `be` (optimize: 1 default, 0 for -O0); aborts with the
 * diagnostics on failure. */
static graphc_executable_t *compile_opt(graphc_context_t *ctx, graphc_model_t *m,
                                        graphc_backend_t be, int optimize, const char *label) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  o.optimize = optimize;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_compile(m, &o, &exe, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: compile for %s failed: %s: %s\n%.4000s", label,
                graphc_backend_name(be), graphc_status_string(st), err.message,
                graphc_context_diagnostics(ctx));
  return exe;
}
#define compile_or_die(ctx, m, be, label) compile_opt((ctx), (m), (be), 1, (label))

/* Host tensors for exe's inputs (filled per kinds/ranges, NULL: 'x') and outputs. */
static void make_io(graphc_executable_t *exe, const char *kinds, const int64_t *ranges,
                    uint64_t *seed, graphc_tensor_t **in, graphc_tensor_t **out) {
  size_t ni = graphc_executable_num_inputs(exe), no = graphc_executable_num_outputs(exe);
  *in = calloc(ni + 1, sizeof **in);
  *out = calloc(no + 1, sizeof **out);
  ck_assert(*in && *out);
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < (pass ? no : ni); i++) {
      graphc_tensor_info_t info;
      if (pass)
        graphc_executable_output_info(exe, i, &info);
      else
        graphc_executable_input_info(exe, i, &info);
      graphc_tensor_t *t = pass ? &(*out)[i] : &(*in)[i];
      t->dtype = info.dtype;
      t->rank = info.rank;
      memcpy(t->dims, info.dims, sizeof t->dims);
      t->nbytes = info.nbytes;
      t->data = calloc(1, info.nbytes ? info.nbytes : 1);
      ck_assert_ptr_nonnull(t->data);
      if (!pass)
        tu_fill(t->data, info.dtype, (int64_t)(info.nbytes / graphc_dtype_size(info.dtype)),
                kinds && kinds[i] ? kinds[i] : 'x', ranges ? ranges[i] : 4, seed);
    }
}

/* Compare every output of `got` with `ref`; returns failures, messages to fails. */
static int compare_outputs(const char *label, graphc_executable_t *exe, const graphc_tensor_t *ref,
                           const graphc_tensor_t *got, int chain, gc_sbuf *fails) {
  int bad = 0;
  for (size_t i = 0; i < graphc_executable_num_outputs(exe); i++) {
    double atol, rtol;
    tu_tolerance(ref[i].dtype, chain, &atol, &rtol);
    int64_t n = (int64_t)(ref[i].nbytes / graphc_dtype_size(ref[i].dtype));
    tu_cmp c = tu_compare(ref[i].data, got[i].data, ref[i].dtype, n, atol, rtol);
    if (ref[i].dtype == GRAPHC_DTYPE_BOOL)  /* bools are bytes 0/1 exactly */
      for (int64_t k = 0; k < n; k++) {
        unsigned char r = ((const unsigned char *)ref[i].data)[k];
        unsigned char g = ((const unsigned char *)got[i].data)[k];
        if (r == g) continue;
        if (!c.n_bad++) c.first_bad = k, c.ref_bad = r, c.got_bad = g;
      }
    if (!c.n_bad) continue;
    graphc_tensor_info_t info;
    graphc_executable_output_info(exe, i, &info);
    gc_type ty = {.dtype = info.dtype, .rank = info.rank};
    memcpy(ty.dims, info.dims, sizeof ty.dims);
    gc_sbuf tb = {0};
    gc_type_print(&tb, &ty, NULL);
    gc_sbuf_printf(fails,
                   "%s: output %zu (%%%s: %s): %lld of %lld differ, first at [%lld]: interp %.9g "
                   "cpu %.9g (atol %g rtol %g)\n",
                   label, i, info.name, tb.data ? tb.data : "?", (long long)c.n_bad, (long long)n,
                   (long long)c.first_bad, c.ref_bad, c.got_bad, atol, rtol);
    gc_sbuf_free(&tb);
    bad++;
  }
  return bad;
}

/* Load `text`, compile for interp and cpu, run both on the same random inputs
 * and compare. `weights`: a path to use, or "" to write random weights when
 * the graph has params. Returns the number of failing outputs (details in fails). */
static int cpu_vs_interp(const char *label, const char *text, const char *kinds,
                         const int64_t *ranges, int chain, uint64_t seed, gc_sbuf *fails) {
  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_msg(graphc_model_load_string(ctx, label, text, strlen(text), &m, &err) == GRAPHC_STATUS_OK,
                "%s: load: %s\n%s\n%s", label, err.message, graphc_context_diagnostics(ctx), text);
  if (strstr(text, "param ")) {
    char wpath[4200];
    snprintf(wpath, sizeof wpath, "%s/w-%d.safetensors", tu_tmpdir(), (int)getpid());
    ck_assert_int_eq(graphc_model_write_random_weights(m, wpath, seed, &err), GRAPHC_STATUS_OK);
    ck_assert_int_eq(graphc_model_set_weights(m, wpath, &err), GRAPHC_STATUS_OK);
  }
  graphc_executable_t *ref = compile_or_die(ctx, m, GRAPHC_BACKEND_INTERP, label);
  graphc_executable_t *cpu = compile_or_die(ctx, m, GRAPHC_BACKEND_CPU, label);
  ck_assert_int_eq(graphc_executable_backend(cpu), GRAPHC_BACKEND_CPU);
  graphc_tensor_t *in, *rout, *cout, *unused;
  uint64_t s = seed;
  make_io(ref, kinds, ranges, &s, &in, &rout);
  size_t ni = graphc_executable_num_inputs(ref), no = graphc_executable_num_outputs(ref);
  ck_assert_int_eq(graphc_executable_num_inputs(cpu), ni);
  ck_assert_int_eq(graphc_executable_num_outputs(cpu), no);
  make_io(cpu, NULL, NULL, &s, &unused, &cout);
  tu_free_tensors(unused, ni);
  for (size_t i = 0; i < no; i++) memset(cout[i].data, 0xa5, cout[i].nbytes);  /* poison */
  graphc_status_t st = graphc_executable_run(ref, in, ni, rout, no, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: interp run: %s", label, err.message);
  st = graphc_executable_run(cpu, in, ni, cout, no, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: cpu run: %s", label, err.message);
  int bad = compare_outputs(label, cpu, rout, cout, chain, fails);
  tu_free_tensors(in, ni);
  tu_free_tensors(rout, no);
  tu_free_tensors(cout, no);
  graphc_executable_destroy(ref);
  graphc_executable_destroy(cpu);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return bad;
}

/* ---- dtype classes (the brief's op semantics) ------------------------------------------ */
#include "dtype_masks.h"

/* A scalar literal of dtype t for attributes (float, int or bool spelled right). */
static const char *lit(gc_dtype t, int which) {
  static const char *const f[] = {"1.5", "-1.25", "2.25", "0.5"};
  static const char *const i[] = {"7", "-2", "30", "3"};
  static const char *const u[] = {"7", "2", "200", "3"};
  static const char *const b[] = {"true", "false", "true", "false"};
  which &= 3;
  if (t == GRAPHC_DTYPE_BOOL) return b[which];
  if (t == GRAPHC_DTYPE_U8) return u[which];
  return gc_dtype_is_float(t) ? f[which] : i[which];
}

static const char *const k_shapes[] = {"1", "3", "17", "1023", "4097", "17, 33", ""};
#define N_SHAPES (int)(sizeof k_shapes / sizeof k_shapes[0])

/* `op(x<attrs>)` for each of the unary shapes. */
static void fam_unary(gb *b, const char *op, const char *attrs, gc_dtype t, char kind) {
  for (int i = 0; i < N_SHAPES; i++) gb_ret(b, "%s(%s%s)", op, gb_arg(b, kind, 0, t, k_shapes[i]), attrs);
}

/* `op(a, b)` over equal shapes, broadcasts and scalars. */
static void fam_binary(gb *b, const char *op, gc_dtype t, char ka, char kb) {
  static const char *const sh[][2] = {{"1", "1"},        {"3", "3"},         {"17", "17"},
                                      {"1023", "1023"},  {"4097", "4097"},   {"17, 33", "33"},
                                      {"3, 1, 5", "4, 1"}, {"", "17"},       {"1023, 1", "1, 3"},
                                      {"4097", ""}};
  for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
    char x[16];
    snprintf(x, sizeof x, "%s", gb_arg(b, ka, 0, t, sh[i][0]));
    gb_ret(b, "%s(%s, %s)", op, x, gb_arg(b, kb, 0, t, sh[i][1]));
  }
}

/* A reduction over many shapes, axes and keepdims. */
static void fam_reduce(gb *b, const char *op, gc_dtype t, char kind) {
  static const char *const sh[][2] = {
      {"1", ""},     {"4097", ""},         {"17, 33", ", axes=[1]"},
      {"17, 33", ", axes=[0], keepdims=true"}, {"3, 4, 5", ", axes=[0, 2]"},
      {"3, 4, 5", ", axes=[-1], keepdims=true"}, {"1023, 3", ", axes=[0]"}, {"3, 1023", ""}};
  for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++)
    gb_ret(b, "%s(%s%s)", op, gb_arg(b, kind, 0, t, sh[i][0]), sh[i][1]);
}

/* Fill b with the case of `op` for dtype t; sets the dtypes the brief allows
 * (*mask) and whether f32 results get the looser "chain" tolerance. Returns -1
 * when the op has no case (a new op in ir/ops.def: add one here). */
static int gen_case(gc_opcode op, gc_dtype t, gb *b, unsigned *mask, int *chain) {
  const char *name = gc_op_infos[op].name;
  gc_kind kind = gc_op_infos[op].kind;
  *chain = kind == GC_KIND_REDUCE || kind == GC_KIND_NORM || kind == GC_KIND_MATMUL ||
           kind == GC_KIND_CONV || kind == GC_KIND_POOL;
  char x[16], y[16];
  switch (op) {
    case GC_OP_PARAM:
      *mask = MS;
      gc_sbuf_printf(&b->body, "  param %%w0: %s[17, 3] = \"w0\";\n", dtn(t));
      gc_sbuf_printf(&b->body, "  param %%w1: %s[4097] = \"w1\";\n", dtn(t));
      gc_sbuf_printf(&b->rets, "%%w0");
      b->n_rets = 1;
      if (gc_dtype_is_f8(t))  /* fp8 is storage only: no comparisons */
        gb_ret(b, "concat(%%w1, %s, axis=0)", gb_arg(b, 'x', 0, t, "4097"));
      else
        gb_ret(b, "eq(%%w1, %s)", gb_arg(b, 'x', 0, t, "4097"));
      return 0;
    case GC_OP_STATE:  /* zero on a fresh executable */
      *mask = MS;
      gc_sbuf_printf(&b->body, "  state %%s0: %s[17, 3] = \"s0\";\n", dtn(t));
      gc_sbuf_printf(&b->rets, "%%s0");
      b->n_rets = 1;
      return 0;
    case GC_OP_CACHE_WRITE:  /* positions in [-9, 9): some rows fall outside T = 10 */
      *mask = MS;
      gc_sbuf_printf(&b->body, "  state %%s0: %s[3, 10, 5] = \"s0\";\n", dtn(t));
      snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, "2, 4, 5"));
      gb_ret(b, "cache_write(%%s0, %s, %s, axis=1)", x, gb_arg(b, 'i', 9, GRAPHC_DTYPE_I32, "2"));
      return 0;
    case GC_OP_CONST:
      *mask = MS;
      gb_ret(b, "const(value=%s, shape=[17, 3], dtype=%s)", lit(t, 0), dtn(t));
      gb_ret(b, "const(value=%s, dtype=%s)", lit(t, 1), dtn(t));
      gb_ret(b, "const(value=[%s, %s, %s, %s, %s, %s], shape=[2, 3], dtype=%s)", lit(t, 3),
             lit(t, 2), lit(t, 1), lit(t, 0), lit(t, 1), lit(t, 2), dtn(t));
      gc_sbuf_printf(&b->body, "  %%c0 = const(value=%s, shape=[4097], dtype=%s);\n", lit(t, 3),
                     dtn(t));
      if (gc_dtype_is_f8(t))
        gb_ret(b, "concat(%s, %%c0, axis=0)", gb_arg(b, 's', 0, t, "4097"));
      else
        gb_ret(b, "eq(%s, %%c0)", gb_arg(b, 's', 0, t, "4097"));
      return 0;
    case GC_OP_IOTA: {
      *mask = MN;
      int small = t == GRAPHC_DTYPE_I8 || t == GRAPHC_DTYPE_U8;
      gb_ret(b, "iota(shape=[17, 33], axis=1, dtype=%s)", dtn(t));
      gb_ret(b, "iota(shape=[%d], dtype=%s)", small ? 100 : 4097, dtn(t));
      gb_ret(b, "iota(shape=[3, 4, 5], axis=0, dtype=%s)", dtn(t));
      gb_ret(b, "iota(shape=[1], dtype=%s)", dtn(t));
      return 0;
    }
    case GC_OP_NEG: case GC_OP_ABS: case GC_OP_RELU:
      *mask = MN;
      fam_unary(b, name, "", t, 'n');
      return 0;
    case GC_OP_EXP: case GC_OP_LOG: case GC_OP_SQRT: case GC_OP_RSQRT: case GC_OP_TANH:
    case GC_OP_SIGMOID: case GC_OP_SILU: case GC_OP_ERF: case GC_OP_SIN: case GC_OP_COS:
    case GC_OP_FLOOR: case GC_OP_CEIL:
      *mask = MF;
      *chain = op != GC_OP_FLOOR && op != GC_OP_CEIL;
      fam_unary(b, name, "", t, op == GC_OP_LOG || op == GC_OP_SQRT || op == GC_OP_RSQRT ? 'p' : 'x');
      return 0;
    case GC_OP_GELU:
      *mask = MF;
      *chain = 1;
      fam_unary(b, name, "", t, 'x');
      fam_unary(b, name, ", approximate=\"tanh\"", t, 'x');
      return 0;
    case GC_OP_NOT:
      *mask = MB;
      fam_unary(b, name, "", t, 'x');
      return 0;
    case GC_OP_CLAMP:
      *mask = MN;
      for (int i = 0; i < N_SHAPES; i++) {
        const char *a = gb_arg(b, 'x', 0, t, k_shapes[i]);
        if (i % 3 == 0) gb_ret(b, "clamp(%s, min=%s, max=%s)", a, lit(t, 1), lit(t, 2));
        if (i % 3 == 1) gb_ret(b, "clamp(%s, min=%s)", a, lit(t, 1));
        if (i % 3 == 2) gb_ret(b, "clamp(%s, max=%s)", a, lit(t, 2));
      }
      return 0;
    case GC_OP_CAST:
      *mask = MS;
      for (int to = 0; to < GRAPHC_DTYPE_COUNT_; to++) {
        char k = gc_dtype_is_float(t) ? 'c' : 'x';
        gb_ret(b, "cast(%s, to=%s)", gb_arg(b, k, 0, t, "1023"), dtn((gc_dtype)to));
        gb_ret(b, "cast(%s, to=%s)", gb_arg(b, k, 0, t, to % 2 ? "3" : ""), dtn((gc_dtype)to));
      }
      gb_ret(b, "cast(%s, to=f32)", gb_arg(b, 'x', 0, t, "4097"));
      return 0;
    case GC_OP_ADD: case GC_OP_SUB: case GC_OP_MUL:
      *mask = MN;
      fam_binary(b, name, t, 'x', 'x');
      return 0;
    case GC_OP_MAXIMUM: case GC_OP_MINIMUM:
      *mask = MN;
      fam_binary(b, name, t, 'n', 'n');
      return 0;
    case GC_OP_DIV:
      *mask = MN;
      fam_binary(b, name, t, 'd', 'd');
      return 0;
    case GC_OP_POW:
      *mask = MF;
      *chain = 1;
      fam_binary(b, name, t, 'p', 'e');
      return 0;
    case GC_OP_EQ: case GC_OP_NE: case GC_OP_LT: case GC_OP_LE: case GC_OP_GT: case GC_OP_GE:
      *mask = MA;
      fam_binary(b, name, t, 's', 's');
      return 0;
    case GC_OP_AND: case GC_OP_OR:
      *mask = MB;
      fam_binary(b, name, t, 'x', 'x');
      return 0;
    case GC_OP_HASH_UNIFORM: {
      *mask = M(GRAPHC_DTYPE_I64) | M(GRAPHC_DTYPE_I32);
      static const char *const sh[][2] = {{"17, 1", "1, 33"}, {"4097", "4097"}, {"", "1023"}};
      for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, sh[i][0]));
        gb_ret(b, "hash_uniform(%s, %s)", x, gb_arg(b, 'x', 0, i % 2 ? GRAPHC_DTYPE_I32 : t, sh[i][1]));
      }
      return 0;
    }
    case GC_OP_SELECT: {
      *mask = MA;
      static const char *const sh[][3] = {{"17, 1", "17, 33", "33"}, {"4097", "4097", "4097"},
                                          {"", "3", "1"},           {"3, 1, 5", "4, 1", ""},
                                          {"1023", "", "1023"}};
      for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, GRAPHC_DTYPE_BOOL, sh[i][0]));
        snprintf(y, sizeof y, "%s", gb_arg(b, 'x', 0, t, sh[i][1]));
        gb_ret(b, "select(%s, %s, %s)", x, y, gb_arg(b, 'x', 0, t, sh[i][2]));
      }
      return 0;
    }
    case GC_OP_REDUCE_SUM: case GC_OP_REDUCE_MEAN:
      *mask = op == GC_OP_REDUCE_MEAN ? MF : MN;
      fam_reduce(b, name, t, gc_dtype_is_float(t) ? 'k' : 'x');
      return 0;
    case GC_OP_REDUCE_MAX: case GC_OP_REDUCE_MIN:
      *mask = MN;
      fam_reduce(b, name, t, 'x');
      return 0;
    case GC_OP_ARGMAX: {
      *mask = MN;
      char k = gc_dtype_is_float(t) ? 'x' : 's';  /* ints: ties, the first index wins */
      gb_ret(b, "argmax(%s)", gb_arg(b, k, 0, t, "4097"));
      gb_ret(b, "argmax(%s, axis=0, keepdims=true)", gb_arg(b, k, 0, t, "17, 33"));
      gb_ret(b, "argmax(%s, axis=1)", gb_arg(b, k, 0, t, "3, 1023"));
      gb_ret(b, "argmax(%s)", gb_arg(b, k, 0, t, "1"));
      gb_ret(b, "argmax(%s, axis=1)", gb_arg(b, k, 0, t, "3, 4, 5"));
      return 0;
    }
    case GC_OP_SOFTMAX: case GC_OP_LOG_SOFTMAX:
      *mask = MF;
      gb_ret(b, "%s(%s)", name, gb_arg(b, 'x', 0, t, "1"));
      gb_ret(b, "%s(%s)", name, gb_arg(b, 'x', 0, t, "17, 33"));
      gb_ret(b, "%s(%s, axis=0)", name, gb_arg(b, 'x', 0, t, "17, 3"));
      gb_ret(b, "%s(%s, axis=-1)", name, gb_arg(b, 'x', 0, t, "3, 1023"));
      gb_ret(b, "%s(%s)", name, gb_arg(b, 'x', 0, t, "4097"));
      gb_ret(b, "%s(%s, axis=1)", name, gb_arg(b, 'x', 0, t, "3, 4, 5"));
      return 0;
    case GC_OP_LAYERNORM: {
      *mask = MF;
      static const char *const sh[][3] = {{"17, 33", "33", ""},
                                          {"3, 4, 5", "4, 5", ", axis=1"},
                                          {"2, 1023", "1023", ", eps=0.001"},
                                          {"4097", "4097", ""}};
      for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, sh[i][0]));
        snprintf(y, sizeof y, "%s", gb_arg(b, 'x', 0, t, sh[i][1]));
        gb_ret(b, "layernorm(%s, %s, %s%s)", x, y, gb_arg(b, 'x', 0, t, sh[i][1]), sh[i][2]);
      }
      return 0;
    }
    case GC_OP_RMSNORM: {
      *mask = MF;
      static const char *const sh[][3] = {
          {"17, 33", "33", ""}, {"3, 1023", "1023", ", eps=1e-05"}, {"4097", "4097", ""}, {"1", "1", ""}};
      for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, sh[i][0]));
        gb_ret(b, "rmsnorm(%s, %s%s)", x, gb_arg(b, 'x', 0, t, sh[i][1]), sh[i][2]);
      }
      return 0;
    }
    case GC_OP_MATMUL: {
      *mask = MN;
      static const char *const sh[][3] = {
          {"1, 1", "1, 1", ""},
          {"17, 33", "33, 5", ""},
          {"33, 17", "33, 5", ", transpose_a=true"},
          {"17, 33", "5, 33", ", transpose_b=true"},
          {"33, 17", "5, 33", ", transpose_a=true, transpose_b=true"},
          {"3, 17, 8", "8, 5", ""},
          {"2, 1, 4, 6", "3, 6, 5", ""},
          {"3, 1023", "1023, 17", ""},
          {"64, 129", "129, 65", ""}};
      for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        snprintf(x, sizeof x, "%s", gb_arg(b, 'k', 0, t, sh[i][0]));
        gb_ret(b, "matmul(%s, %s%s)", x, gb_arg(b, 'k', 0, t, sh[i][1]), sh[i][2]);
      }
      return 0;
    }
    case GC_OP_CONV2D: {
      *mask = MF;
      static const char *const sh[][3] = {
          {"1, 1, 1, 1", "1, 1, 1, 1", ""},
          {"2, 3, 9, 9", "4, 3, 3, 3", ""},
          {"2, 3, 9, 9", "4, 3, 3, 3", ", stride=[2, 2], padding=[1, 1]"},
          {"2, 3, 9, 9", "4, 3, 3, 3", ", dilation=[2, 2]"},
          {"2, 3, 9, 9", "4, 3, 3, 2", ", stride=[1, 2], padding=[1, 0, 2, 1]"},
          {"1, 4, 7, 7", "6, 2, 3, 3", ", groups=2"},
          /* conv-gemm: 1x1 as a reshape, 1x1 strided through im2col, and one big
           * enough for the packed host matmul (O 40, OH*OW 196, C*KH*KW 72) */
          {"2, 16, 9, 9", "24, 16, 1, 1", ""},
          {"1, 8, 9, 9", "16, 8, 1, 1", ", stride=[2, 2]"},
          {"2, 8, 14, 14", "40, 8, 3, 3", ", padding=[1, 1]"}};
      for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        snprintf(x, sizeof x, "%s", gb_arg(b, 'k', 0, t, sh[i][0]));
        gb_ret(b, "conv2d(%s, %s%s)", x, gb_arg(b, 'k', 0, t, sh[i][1]), sh[i][2]);
      }
      return 0;
    }
    case GC_OP_IM2COL:
      *mask = MS;
      gb_ret(b, "im2col(%s, kernel=[3, 3], padding=[1, 1])", gb_arg(b, 'x', 0, t, "2, 3, 7, 7"));
      gb_ret(b, "im2col(%s, kernel=[3, 2], stride=[2, 1], padding=[1, 0, 0, 1], dilation=[1, 2])",
             gb_arg(b, 'x', 0, t, "1, 2, 9, 8"));
      gb_ret(b, "im2col(%s, kernel=[1, 1])", gb_arg(b, 'x', 0, t, "1, 1, 1, 1"));
      gb_ret(b, "im2col(%s, kernel=[3, 3], padding=[1, 1], layout=\"nhwc\")", gb_arg(b, 'x', 0, t, "2, 7, 7, 3"));
      gb_ret(b, "im2col(%s, kernel=[3, 2], stride=[2, 1], padding=[1, 0, 0, 1], dilation=[1, 2], layout=\"nhwc\")",
             gb_arg(b, 'x', 0, t, "1, 9, 8, 2"));
      return 0;
    case GC_OP_MAX_POOL2D: case GC_OP_AVG_POOL2D:
      *mask = MF;
      gb_ret(b, "%s(%s, kernel=[2, 2])", name, gb_arg(b, 'x', 0, t, "2, 3, 9, 9"));
      gb_ret(b, "%s(%s, kernel=[3, 3], stride=[2, 2], padding=[1, 1])", name,
             gb_arg(b, 'x', 0, t, "2, 3, 9, 9"));
      gb_ret(b, "%s(%s, kernel=[2, 3], stride=[1, 2], padding=[0, 1, 1, 0])", name,
             gb_arg(b, 'x', 0, t, "1, 2, 9, 9"));
      gb_ret(b, "%s(%s, kernel=[1, 1])", name, gb_arg(b, 'x', 0, t, "1, 1, 1, 1"));
      /* layout="nhwc": [N, H, W, C], odd sizes, padding, stride != kernel */
      gb_ret(b, "%s(%s, kernel=[3, 3], stride=[2, 2], padding=[1, 1], layout=\"nhwc\")", name,
             gb_arg(b, 'x', 0, t, "2, 9, 7, 5"));
      gb_ret(b, "%s(%s, kernel=[2, 3], stride=[1, 2], padding=[0, 1, 1, 0], layout=\"nhwc\")", name,
             gb_arg(b, 'x', 0, t, "1, 5, 9, 17"));
      gb_ret(b, "%s(%s, kernel=[2, 2], layout=\"nhwc\")", name, gb_arg(b, 'x', 0, t, "3, 8, 8, 16"));
      return 0;
    case GC_OP_RESHAPE:
      *mask = MS;
      gb_ret(b, "reshape(%s, shape=[33, 17])", gb_arg(b, 'x', 0, t, "17, 33"));
      gb_ret(b, "reshape(%s, shape=[-1, 5])", gb_arg(b, 'x', 0, t, "3, 4, 5"));
      gb_ret(b, "reshape(%s, shape=[1, 4097, 1])", gb_arg(b, 'x', 0, t, "4097"));
      gb_ret(b, "reshape(%s, shape=[])", gb_arg(b, 'x', 0, t, "1"));
      return 0;
    case GC_OP_TRANSPOSE:
      *mask = MS;
      gb_ret(b, "transpose(%s, perm=[2, 0, 1])", gb_arg(b, 'x', 0, t, "3, 4, 5"));
      gb_ret(b, "transpose(%s, perm=[1, 0])", gb_arg(b, 'x', 0, t, "17, 33"));
      gb_ret(b, "transpose(%s, perm=[0, 2, 1, 3])", gb_arg(b, 'x', 0, t, "2, 3, 4, 5"));
      gb_ret(b, "transpose(%s, perm=[1, 0])", gb_arg(b, 'x', 0, t, "1023, 3"));
      gb_ret(b, "transpose(%s, perm=[0])", gb_arg(b, 'x', 0, t, "4097"));
      return 0;
    case GC_OP_BROADCAST:
      *mask = MS;
      gb_ret(b, "broadcast(%s, shape=[17, 33])", gb_arg(b, 'x', 0, t, "33"));
      gb_ret(b, "broadcast(%s, shape=[2, 3, 5])", gb_arg(b, 'x', 0, t, "3, 1"));
      gb_ret(b, "broadcast(%s, shape=[4097])", gb_arg(b, 'x', 0, t, ""));
      gb_ret(b, "broadcast(%s, shape=[1023])", gb_arg(b, 'x', 0, t, "1"));
      return 0;
    case GC_OP_CONCAT:
      *mask = MS;
      snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, "17, 3"));
      gb_ret(b, "concat(%s, %s, axis=1)", x, gb_arg(b, 'x', 0, t, "17, 5"));
      snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, "3"));
      gb_ret(b, "concat(%s, %s, axis=0)", x, gb_arg(b, 'x', 0, t, "1023"));
      snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, "2, 3"));
      snprintf(y, sizeof y, "%s", gb_arg(b, 'x', 0, t, "4, 3"));
      gb_ret(b, "concat(%s, %s, %s, axis=0)", x, y, gb_arg(b, 'x', 0, t, "1, 3"));
      snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, "17, 33"));
      gb_ret(b, "concat(%s, %s, axis=-1)", x, x);
      gb_ret(b, "concat(%s, axis=0)", gb_arg(b, 'x', 0, t, "4097"));
      return 0;
    case GC_OP_SLICE:
      *mask = MS;
      gb_ret(b, "slice(%s, start=[1, 2], end=[16, -1], step=[2, 3])", gb_arg(b, 'x', 0, t, "17, 33"));
      gb_ret(b, "slice(%s, start=[-100], end=[4097])", gb_arg(b, 'x', 0, t, "4097"));
      gb_ret(b, "slice(%s, start=[0, 1, 0], end=[3, 3, 5])", gb_arg(b, 'x', 0, t, "3, 4, 5"));
      gb_ret(b, "slice(%s, start=[5], end=[100])", gb_arg(b, 'x', 0, t, "17"));
      gb_ret(b, "slice(%s, start=[0], end=[1023], step=[7])", gb_arg(b, 'x', 0, t, "1023"));
      return 0;
    case GC_OP_PAD:
      *mask = MS;
      gb_ret(b, "pad(%s, pads=[1, 2, 3, 4], value=%s)", gb_arg(b, 'x', 0, t, "17, 33"), lit(t, 0));
      gb_ret(b, "pad(%s, pads=[0, 5])", gb_arg(b, 'x', 0, t, "3"));
      gb_ret(b, "pad(%s, pads=[1, 1], value=%s)", gb_arg(b, 'x', 0, t, "4097"), lit(t, 1));
      gb_ret(b, "pad(%s, pads=[0, 1, 2, 1, 0, 3])", gb_arg(b, 'x', 0, t, "2, 3, 4"));
      return 0;
    case GC_OP_GATHER: {
      *mask = MS;
      static const struct { const char *x, *idx, *attr; int range; gc_dtype it; } g[] = {
          {"17, 33", "5", "", 17, GRAPHC_DTYPE_I64},
          {"17, 33", "2, 3", ", axis=1", 33, GRAPHC_DTYPE_I32},
          {"4097", "1023", "", 4097, GRAPHC_DTYPE_I64},
          {"3, 4, 5", "", ", axis=-1", 5, GRAPHC_DTYPE_I32}};
      for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        snprintf(x, sizeof x, "%s", gb_arg(b, 'x', 0, t, g[i].x));
        gb_ret(b, "gather(%s, %s%s)", x, gb_arg(b, 'i', g[i].range, g[i].it, g[i].idx), g[i].attr);
      }
      return 0;
    }
    case GC_OP_SPLIT:
      *mask = MS;
      gb_ret_n(b, 2, "split(%s, axis=1, sizes=[10, 23])", gb_arg(b, 'x', 0, t, "17, 33"));
      gb_ret_n(b, 3, "split(%s, axis=0, sizes=[1, 4000, 96])", gb_arg(b, 'x', 0, t, "4097"));
      gb_ret_n(b, 2, "split(%s, axis=-1, sizes=[2, 3])", gb_arg(b, 'x', 0, t, "3, 4, 5"));
      return 0;
    default:
      return -1;
  }
}

/* Every dtype the brief allows for one op (the loop index is the opcode). */
START_TEST(op_cpu_vs_interp) {
  gc_opcode op = (gc_opcode)_i;
  const char *name = gc_op_infos[op].name;
  gc_sbuf fails = {0};
  int n_fail = 0, n_ran = 0;
  for (int t = 0; t < GRAPHC_DTYPE_COUNT_; t++) {
    gb b;
    memset(&b, 0, sizeof b);
    unsigned mask = 0;
    int chain = 0;
    if (gen_case(op, (gc_dtype)t, &b, &mask, &chain) < 0) {
      gb_free(&b);
      ck_abort_msg("op '%s' has no case in tests/test_cpu_backend.c (gen_case): every op in "
                   "ir/ops.def needs one", name);
    }
    if (!(mask & M(t))) {
      gb_free(&b);
      continue;
    }
    char label[64];
    snprintf(label, sizeof label, "%s/%s", name, dtn((gc_dtype)t));
    char *text = gb_text(&b, label);
    uint64_t seed = g_seed ^ ((uint64_t)op * 1000003u + (uint64_t)t * 7919u);
    n_fail += cpu_vs_interp(label, text, b.kinds, b.ranges, chain, seed, &fails);
    n_ran++;
    free(text);
    gb_free(&b);
  }
  char first[1500];
  snprintf(first, sizeof first, "%.1400s", fails.data ? fails.data : "");
  if (n_fail) fprintf(stderr, "%s", fails.data);
  gc_sbuf_free(&fails);
  ck_assert_msg(n_ran > 0, "op %s: no dtype ran", name);
  ck_assert_msg(n_fail == 0, "op %s: %d outputs differ (seed %llu, GRAPHC_TEST_SEED=%llu reproduces):\n%s",
                name, n_fail, (unsigned long long)g_seed, (unsigned long long)g_seed, first);
}
END_TEST

/* Fail (after printing every failure) when n_fail cases of `what` differed; frees fails. */
static void report_fails(int n_fail, const char *what, gc_sbuf *fails) {
  if (n_fail) fprintf(stderr, "%s", fails->data);
  char first[1500];
  snprintf(first, sizeof first, "%.1400s", fails->data ? fails->data : "");
  gc_sbuf_free(fails);
  ck_assert_msg(n_fail == 0, "%d %s differ (GRAPHC_TEST_SEED=%llu reproduces):\n%s", n_fail, what,
                (unsigned long long)g_seed, first);
}

/* ---- the packed host matmul ------------------------------------------------------------------ */
/* Matmuls big enough for the packed path of codegen/emit_linalg.c (mm_use_packed): tails in
 * M (below and above one register tile), N and K (K blocks of 256), both transpose flags, a
 * transpose producer read through the generator, batch broadcasting, f16 operands, and a
 * fused bias + relu epilogue. */
START_TEST(matmul_packed_cpu_vs_interp) {
  static const struct {
    const char *t, *a, *b, *attrs;
    int bias;          /* bias [N] + relu fused into the epilogue */
    int tprod;         /* B given as [N, K] and transposed by a transpose op */
  } cs[] = {
      {"f32", "131, 300", "300, 530", "", 1, 0},
      {"f32", "300, 131", "530, 300", ", transpose_a=true, transpose_b=true", 1, 0},
      {"f32", "131, 300", "530, 300", "", 0, 1},
      {"f32", "9, 1900", "1900, 1030", "", 0, 0},
      {"f32", "2, 1, 33, 600", "3, 600, 900", "", 1, 0},
      {"f16", "70, 520", "520, 515", "", 0, 0},
  };
  gc_sbuf fails = {0};
  int n_fail = 0;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    gb b;
    memset(&b, 0, sizeof b);
    gc_dtype t = strcmp(cs[i].t, "f16") == 0 ? GRAPHC_DTYPE_F16 : GRAPHC_DTYPE_F32;
    char a[16], w[16];
    /* positive operands: sums over K up to 1900 without cancellation, so f32 rounding
     * stays within the per-element tolerance for any seed */
    snprintf(a, sizeof a, "%s", gb_arg(&b, 'p', 0, t, cs[i].a));
    snprintf(w, sizeof w, "%s", gb_arg(&b, 'p', 0, t, cs[i].b));
    if (cs[i].tprod) {
      gc_sbuf_printf(&b.body, "  %%bt = transpose(%s, perm=[1, 0]);\n", w);
      snprintf(w, sizeof w, "%%bt");
    }
    if (cs[i].bias) {
      const char *n = strrchr(cs[i].b, ' ') + 1;  /* N: B's last dim */
      if (strstr(cs[i].attrs, "transpose_b")) n = cs[i].b;
      char nd[16];
      snprintf(nd, sizeof nd, "%.*s", (int)strcspn(n, ","), n);
      const char *bias = gb_arg(&b, 'k', 0, t, nd);
      gc_sbuf_printf(&b.body, "  %%mm = matmul(%s, %s%s);\n  %%mb = add(%%mm, %s);\n", a, w, cs[i].attrs, bias);
      gb_ret(&b, "relu(%%mb)");
    } else {
      gb_ret(&b, "matmul(%s, %s%s)", a, w, cs[i].attrs);
    }
    char label[96];
    snprintf(label, sizeof label, "packed matmul %zu: %s [%s] x [%s]%s", i, cs[i].t, cs[i].a, cs[i].b, cs[i].attrs);
    char *text = gb_text(&b, label);
    n_fail += cpu_vs_interp(label, text, b.kinds, b.ranges, 1, g_seed ^ (uint64_t)(i * 7919u + 17u), &fails);
    free(text);
    gb_free(&b);
  }
  report_fails(n_fail, "packed matmuls", &fails);
}
END_TEST

/* ---- grouped and depthwise convs ------------------------------------------------------------ */
/* codegen/emit_dwconv.c on the host: depthwise 3x3 / 5x5 / 7x7 over widths of several
 * SIMD tiles (interior items, edge items, ragged last tiles), stride 2, dilation,
 * padding forms, channel multiplier 2, groups of several channels, an NHWC conv, odd
 * channel counts, a widely dilated window, f32 / f16 / bf16, each with a bias + relu
 * epilogue. */
START_TEST(dwconv_cpu_vs_interp) {
  static const struct { const char *x, *w, *attrs, *bias; } cs[] = {
      {"2, 12, 11, 40", "12, 1, 3, 3", ", padding=[1, 1], groups=12", "12, 1, 1"},
      {"1, 6, 14, 21", "6, 1, 7, 7", ", padding=[3, 3], groups=6", "6, 1, 1"},
      {"1, 5, 13, 19", "10, 1, 5, 5", ", stride=[2, 2], padding=[2, 2], dilation=[1, 2], groups=5", "10, 1, 1"},
      {"1, 8, 9, 30", "12, 2, 3, 3", ", stride=[1, 2], padding=[1, 0, 2, 1], groups=4", "12, 1, 1"},
      {"2, 7, 16, 17", "7, 1, 3, 3", ", stride=[2, 2], padding=[1, 1], groups=7", "7, 1, 1"},
      {"1, 9, 20, 12", "12, 1, 3, 3", ", padding=[1, 1], groups=12, layout=\"nhwc\"", "12"},
      /* a dilated window spanning 81 columns: one pixel per item */
      {"1, 3, 4, 90", "3, 1, 1, 5", ", dilation=[1, 20], groups=3", "3, 1, 1"},
      /* rows of 32 or more at stride 2: multiplier 2 with asymmetric padding (dw_host_direct),
       * and groups of 2 channels (dw_host_rows) */
      {"1, 4, 9, 70", "8, 1, 3, 3", ", stride=[2, 2], padding=[1, 0, 1, 2], groups=4", "8, 1, 1"},
      {"1, 8, 7, 80", "8, 2, 3, 3", ", stride=[2, 2], padding=[1, 1], groups=4", "8, 1, 1"},
      /* every tap in registers (dw_host_direct): bands of rows, a map of 8 columns, the
       * stride's phases (2 with multiplier 2, a 4 x 2 window, dilation, a row stride of 3 and
       * asymmetric padding; 3) */
      {"1, 3, 90, 64", "3, 1, 3, 3", ", padding=[1, 1], groups=3", "3, 1, 1"},
      {"2, 4, 8, 8", "4, 1, 3, 3", ", padding=[1, 1], groups=4", "4, 1, 1"},
      {"1, 2, 21, 80", "4, 1, 4, 2", ", stride=[3, 2], padding=[0, 1, 2, 3], dilation=[2, 2], groups=2", "4, 1, 1"},
      {"2, 3, 12, 100", "3, 1, 5, 5", ", stride=[3, 3], padding=[2, 2], groups=3", "3, 1, 1"},
      /* planes (dw_host_plane): groups of 2 channels with multiplier 3; stride 3 with dilation */
      {"2, 6, 10, 12", "9, 2, 3, 3", ", padding=[1, 1], groups=3", "9, 1, 1"},
      {"1, 4, 16, 17", "4, 1, 3, 3", ", stride=[3, 3], padding=[2, 2], dilation=[2, 2], groups=4", "4, 1, 1"},
  };
  static const gc_dtype ts[] = {GRAPHC_DTYPE_F32, GRAPHC_DTYPE_F16, GRAPHC_DTYPE_BF16};
  gc_sbuf fails = {0};
  int n_fail = 0;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
    for (size_t d = 0; d < sizeof ts / sizeof ts[0]; d++) {
      gb b;
      memset(&b, 0, sizeof b);
      char x[16], w[16];
      snprintf(x, sizeof x, "%s", gb_arg(&b, 'k', 0, ts[d], cs[i].x));
      snprintf(w, sizeof w, "%s", gb_arg(&b, 'k', 0, ts[d], cs[i].w));
      const char *bias = gb_arg(&b, 'k', 0, ts[d], cs[i].bias);
      gc_sbuf_printf(&b.body, "  %%cv = conv2d(%s, %s%s);\n  %%cb = add(%%cv, %s);\n", x, w, cs[i].attrs, bias);
      gb_ret(&b, "relu(%%cb)");
      char label[160];
      snprintf(label, sizeof label, "dwconv %zu: %s [%s] * [%s]%s", i, dtn(ts[d]), cs[i].x, cs[i].w, cs[i].attrs);
      char *text = gb_text(&b, label);
      n_fail += cpu_vs_interp(label, text, b.kinds, b.ranges, 1, g_seed ^ (uint64_t)(i * 7919u + d * 31u + 5u), &fails);
      free(text);
      gb_free(&b);
    }
  report_fails(n_fail, "grouped convs", &fails);
}
END_TEST

/* ---- host kernel forms -------------------------------------------------------------------------- */
/* The host forms of emit_linalg.c and emit_elementwise.c, against the interpreter:
 *   - convs through im2col whose B panel an item packs once (mm_items_bpack): a CNN's first
 *     conv with a HardSwish written as exporters do (one epilogue with it, fusion.c), row
 *     and column edges of the register tiles, dilation, K of several hundred;
 *   - loop groups with a broadcast or transposed input (host_rows_kernel): a channel bias
 *     and silu, a bias along the last dim, a transposed operand over small trailing dims,
 *     a broadcast of both operands;
 *   - batched matmuls with one A whose batches' columns share panels (mm_items_bcols).
 * Arguments are %a0, %a1, ... in order. */
START_TEST(host_forms_cpu_vs_interp) {
  static const struct { const char *args[3], *body; } cs[] = {
      {{"2, 3, 17, 23", "13, 3, 3, 3", "1, 13, 1, 1"},
       "  %cv = conv2d(%a0, %a1, stride=[2, 2], padding=[1, 1, 1, 1]);\n  %y = add(%cv, %a2);\n"
       "  %c6 = const(value=0.1666666716337204, dtype=DT);\n  %t6 = mul(%y, %c6);\n"
       "  %c5 = const(value=0.5, dtype=DT);\n  %t8 = add(%t6, %c5);\n  %t9 = clamp(%t8, min=0.0, max=1.0);\n"
       "  %r0 = mul(%y, %t9);\n"},
      {{"1, 5, 9, 40", "16, 5, 3, 3", "1, 16, 1, 1"},
       "  %cv = conv2d(%a0, %a1, padding=[1, 1, 1, 1]);\n  %y = add(%cv, %a2);\n  %r0 = silu(%y);\n"},
      {{"1, 2, 6, 7", "7, 2, 5, 5", "1, 7, 1, 1"},
       "  %cv = conv2d(%a0, %a1, padding=[4, 4, 4, 4], dilation=[2, 2]);\n  %r0 = add(%cv, %a2);\n"},
      {{"1, 40, 12, 12", "9, 40, 3, 3", "1, 9, 1, 1"},
       "  %cv = conv2d(%a0, %a1, stride=[1, 2], padding=[0, 1, 2, 0]);\n  %r0 = add(%cv, %a2);\n"},
      {{"2, 5, 7, 9", "1, 5, 1, 1", NULL}, "  %y = add(%a0, %a1);\n  %r0 = silu(%y);\n"},
      {{"3, 70", "70", NULL}, "  %y = mul(%a0, %a1);\n  %r0 = tanh(%y);\n"},
      {{"2, 3, 4, 6, 5", "2, 3, 4, 5, 6", NULL},
       "  %t = transpose(%a1, perm=[0, 1, 2, 4, 3]);\n  %r0 = sub(%a0, %t);\n"},
      {{"5, 1, 1, 1", "1, 1, 1, 200", NULL}, "  %r0 = mul(%a0, %a1);\n"},
      /* batched matmuls with one A and ragged columns, the batches' columns in one row
       * (mm_items_bcols): 1x1 convs over 7 x 7 (rows past a multiple of 8), 14 x 14 (two
       * blocks of rows), 5 x 4 (three runs of one batch a panel); a 2-D A times a batched B
       * with a residual, and with B transposed */
      {{"3, 24, 7, 7", "20, 24, 1, 1", "1, 20, 1, 1"}, "  %cv = conv2d(%a0, %a1);\n  %y = add(%cv, %a2);\n  %r0 = silu(%y);\n"},
      {{"2, 16, 14, 14", "400, 16, 1, 1", "1, 400, 1, 1"}, "  %cv = conv2d(%a0, %a1);\n  %y = add(%cv, %a2);\n  %r0 = relu(%y);\n"},
      {{"4, 8, 5, 4", "9, 8, 1, 1", NULL}, "  %r0 = conv2d(%a0, %a1);\n"},
      {{"12, 10", "3, 10, 50", "3, 12, 50"}, "  %m = matmul(%a0, %a1);\n  %r0 = add(%m, %a2);\n"},
      {{"16, 6", "2, 40, 6", NULL}, "  %r0 = matmul(%a0, %a1, transpose_b=true);\n"},
  };
  static const gc_dtype ts[] = {GRAPHC_DTYPE_F32, GRAPHC_DTYPE_F16};
  gc_sbuf fails = {0};
  int n_fail = 0;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
    for (size_t d = 0; d < sizeof ts / sizeof ts[0]; d++) {
      gb b;
      memset(&b, 0, sizeof b);
      for (int a = 0; a < 3 && cs[i].args[a]; a++) gb_arg(&b, 'k', 0, ts[d], cs[i].args[a]);
      /* the body with DT as the case's dtype */
      const char *dt = dtn(ts[d]);
      for (const char *q = cs[i].body; *q;) {
        const char *hit = strstr(q, "DT");
        size_t n = hit ? (size_t)(hit - q) : strlen(q);
        gc_sbuf_printf(&b.body, "%.*s%s", (int)n, q, hit ? dt : "");
        q += n + (hit ? 2 : 0);
      }
      gc_sbuf_printf(&b.rets, "%%r0");
      b.n_rets = 1;
      char label[160];
      snprintf(label, sizeof label, "host form %zu: %s [%s]", i, dt, cs[i].args[0]);
      char *text = gb_text(&b, label);
      n_fail += cpu_vs_interp(label, text, b.kinds, b.ranges, 1, g_seed ^ (uint64_t)(i * 7919u + d * 31u + 9u), &fails);
      free(text);
      gb_free(&b);
    }
  report_fails(n_fail, "host forms", &fails);
}
END_TEST

/* ---- the examples ------------------------------------------------------------------------ */
/* Symbol names of the first graph in text ("<B, S>"), at most max. */
static int graph_syms(const char *text, char names[][32], int max) {
  const char *p = strstr(text, "graph @");
  if (!p) return 0;
  p += 7;
  while (*p && *p != '<' && *p != '(') p++;
  if (*p != '<') return 0;
  int n = 0;
  for (p++; *p && *p != '>' && n < max;) {
    while (*p == ' ' || *p == ',') p++;
    int len = 0;
    while ((p[len] >= 'A' && p[len] <= 'Z') || (p[len] >= 'a' && p[len] <= 'z') ||
           (p[len] >= '0' && p[len] <= '9') || p[len] == '_')
      len++;
    if (!len) break;
    snprintf(names[n++], 32, "%.*s", len, p);
    p += len;
  }
  return n;
}

/* Every example with small bound dims, random weights and inputs, cpu vs interp. */
START_TEST(examples_cpu_vs_interp) {
  DIR *dir = opendir(tu_src("examples"));
  ck_assert_ptr_nonnull(dir);
  static const int64_t vals[] = {2, 5, 3, 2};
  gc_sbuf fails = {0};
  int n_fail = 0, n_ran = 0;
  struct dirent *e;
  while ((e = readdir(dir))) {
    size_t len = strlen(e->d_name);
    if (len < 7 || strcmp(e->d_name + len - 6, ".graph") != 0) continue;
    char rel[512];
    snprintf(rel, sizeof rel, "examples/%s", e->d_name);
    char *text = tu_read_file(tu_src(rel), NULL);
    ck_assert_ptr_nonnull(text);
    graphc_context_t *ctx;
    graphc_model_t *m = NULL;
    graphc_error_t err;
    ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
    ck_assert_msg(graphc_model_load_file(ctx, tu_src(rel), &m, &err) == GRAPHC_STATUS_OK, "%s: %s",
                  rel, err.message);
    char syms[4][32];
    int ns = graph_syms(text, syms, 4);
    for (int i = 0; i < ns; i++)
      ck_assert_msg(graphc_model_bind(m, syms[i], vals[i], &err) == GRAPHC_STATUS_OK, "%s: bind %s: %s",
                    rel, syms[i], err.message);
    char wpath[4200];
    snprintf(wpath, sizeof wpath, "%s/%s.safetensors", tu_tmpdir(), e->d_name);
    uint64_t seed = g_seed ^ (uint64_t)len;
    ck_assert_int_eq(graphc_model_specialize(m, &err), GRAPHC_STATUS_OK);
    ck_assert_msg(graphc_model_write_random_weights(m, wpath, seed, &err) == GRAPHC_STATUS_OK, "%s: %s",
                  rel, err.message);
    ck_assert_int_eq(graphc_model_set_weights(m, wpath, &err), GRAPHC_STATUS_OK);
    graphc_executable_t *ref = compile_or_die(ctx, m, GRAPHC_BACKEND_INTERP, rel);
    graphc_tensor_t *in, *rout;
    uint64_t s = seed;
    make_io(ref, NULL, NULL, &s, &in, &rout);
    size_t ni = graphc_executable_num_inputs(ref), no = graphc_executable_num_outputs(ref);
    ck_assert_int_eq(graphc_executable_run(ref, in, ni, rout, no, &err), GRAPHC_STATUS_OK);
    for (int opt = 1; opt >= 0; opt--) {  /* fused, then -O0 (one kernel per op) */
      char label[600];
      snprintf(label, sizeof label, "%s%s", rel, opt ? "" : " -O0");
      graphc_executable_t *cpu = compile_opt(ctx, m, GRAPHC_BACKEND_CPU, opt, label);
      graphc_tensor_t *cout, *unused;
      make_io(cpu, NULL, NULL, &s, &unused, &cout);
      tu_free_tensors(unused, ni);
      ck_assert_msg(graphc_executable_run(cpu, in, ni, cout, no, &err) == GRAPHC_STATUS_OK, "%s: %s",
                    label, err.message);
      n_fail += compare_outputs(label, cpu, rout, cout, 1, &fails);
      tu_free_tensors(cout, no);
      graphc_executable_destroy(cpu);
    }
    n_ran++;
    tu_free_tensors(in, ni);
    tu_free_tensors(rout, no);
    graphc_executable_destroy(ref);
    graphc_model_destroy(m);
    graphc_context_destroy(ctx);
    free(text);
  }
  closedir(dir);
  char first[1500];
  snprintf(first, sizeof first, "%.1400s", fails.data ? fails.data : "");
  gc_sbuf_free(&fails);
  ck_assert_int_ge(n_ran, 3);
  ck_assert_msg(n_fail == 0, "examples: %d outputs differ (seed %llu):\n%s", n_fail,
                (unsigned long long)g_seed, first);
}
END_TEST

/* ---- the thread pool ------------------------------------------------------------------- */
typedef struct pool_probe {
  _Atomic int n_ranges;
  int64_t begin[64], end[64];
  unsigned char *hits;           /* per item: times visited */
} pool_probe;

/* Record a range and mark its items. */
static void probe_range(void *arg, int64_t begin, int64_t end) {
  pool_probe *p = arg;
  int k = atomic_fetch_add(&p->n_ranges, 1);
  if (k < 64) {
    p->begin[k] = begin;
    p->end[k] = end;
  }
  for (int64_t i = begin; i < end; i++) p->hits[i]++;
}

/* Run one job and check: `want` ranges, contiguous cover of [0, n), sizes within 1. */
static void check_job(gc_threadpool *pool, int64_t n, int chunks, int want) {
  pool_probe p;
  memset(&p, 0, sizeof p);
  p.hits = calloc((size_t)n + 1, 1);
  ck_assert_ptr_nonnull(p.hits);
  gc_threadpool_run(pool, probe_range, &p, n, chunks);
  int nr = atomic_load(&p.n_ranges);
  ck_assert_msg(nr == want, "n=%lld chunks=%d: %d ranges, want %d", (long long)n, chunks, nr, want);
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(p.hits[i] == 1, "n=%lld chunks=%d: item %lld visited %d times", (long long)n,
                  chunks, (long long)i, p.hits[i]);
  int64_t lo = INT64_MAX, hi = 0;
  for (int k = 0; k < nr; k++) {
    int64_t sz = p.end[k] - p.begin[k];
    lo = sz < lo ? sz : lo;
    hi = sz > hi ? sz : hi;
  }
  ck_assert_msg(hi - lo <= 1, "n=%lld chunks=%d: range sizes from %lld to %lld", (long long)n, chunks,
                (long long)lo, (long long)hi);
  free(p.hits);
}

/* The pool splits [0, n) into contiguous, balanced ranges, each item exactly once. */
START_TEST(threadpool_ranges) {
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_threadpool *pool = gc_threadpool_create(3, &d);
  ck_assert_ptr_nonnull(pool);
  ck_assert_int_eq(gc_threadpool_size(pool), 3);
  check_job(pool, 1000003, 3, 3);   /* not divisible by 3 */
  check_job(pool, 4097, 3, 3);
  check_job(pool, 2, 3, 2);         /* fewer items than threads */
  check_job(pool, 1, 3, 1);
  check_job(pool, 100, 1, 1);       /* inline */
  check_job(pool, 100, 64, 3);      /* clamped to the pool */
  uint64_t s = g_seed;
  for (int it = 0; it < 3000; it++) {  /* back-to-back jobs: generations never mix */
    int64_t n = tu_int(&s, 1, 300);
    int c = (int)tu_int(&s, 1, 4), want = c < 3 ? c : 3;
    check_job(pool, n, c, n < want ? (int)n : want);
  }
  gc_threadpool_destroy(pool);
  pool = gc_threadpool_create(1, &d);
  ck_assert_ptr_nonnull(pool);
  check_job(pool, 1000, 8, 1);
  gc_threadpool_destroy(pool);
  gc_threadpool_destroy(NULL);
  ck_assert_int_eq(d.n_errors, 0);
  gc_diags_free(&d);
}
END_TEST

/* ---- the JIT directly: a hand-built kernel ------------------------------------------- */
/* Kernel `fill` (ITEMS, n): out[item] = item * k + 1, with k an I64 parameter. */
static kir_module *fill_module(int64_t n, int64_t k_val, kir_launch_kind kind, int block) {
  kir_module *m = kir_module_new();
  ck_assert_ptr_nonnull(m);
  kir_kernel *k = kir_kernel_new(m, "fill", (kir_launch){kind, n, block});
  int out = kir_add_param(m, k, "out", KIR_PARAM_BUFFER, GRAPHC_DTYPE_I64, 0, 0);
  int kp = kir_add_param(m, k, "k", KIR_PARAM_I64, GRAPHC_DTYPE_I64, 0, (int)k_val);
  kir_expr *v = kir_binary(m, KIR_ADD,
                           kir_binary(m, KIR_MUL, kir_var_ref(m, k, k->item_var), kir_param_ref(m, k, kp)),
                           kir_const_i(m, GRAPHC_DTYPE_I64, 1));
  kir_emit_store(m, &k->body, KIR_GLOBAL, out, kir_var_ref(m, k, k->item_var), v);
  return m;
}

typedef struct fill_task {
  gc_cpu_kernel_fn fn;
  void *args[2];
} fill_task;

/* Pool callback: the JIT'd kernel over [begin, end). */
static void fill_range(void *arg, int64_t begin, int64_t end) {
  fill_task *t = arg;
  t->fn(t->args, begin, end);
}

/* A hand-built kernel through the JIT, split over 3 threads (n not divisible by 3). */
START_TEST(jit_kernel_split_over_threads) {
  const int64_t n = 1000003;
  kir_module *m = fill_module(n, 7, KIR_LAUNCH_ITEMS, 256);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_sbuf times = {0};
  gc_cpu_jit *j = gc_cpu_jit_compile(m, NULL, &times, &d);
  ck_assert_msg(j != NULL, "%s", d.n ? d.items[0].msg : "?");
  ck_assert_ptr_nonnull(strstr(times.data, "jit"));
  ck_assert_ptr_nonnull(strstr(times.data, "default<O2>"));  /* a memory-bound kernel */
  int64_t *out = malloc((size_t)(n + 64) * sizeof *out);
  ck_assert_ptr_nonnull(out);
  for (int64_t i = 0; i < n + 64; i++) out[i] = -5;
  gc_threadpool *pool = gc_threadpool_create(3, &d);
  ck_assert_ptr_nonnull(pool);
  fill_task t = {gc_cpu_jit_kernel(j, 0), {out, (void *)(intptr_t)7}};
  gc_threadpool_run(pool, fill_range, &t, n, 3);
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(out[i] == i * 7 + 1, "out[%lld] = %lld", (long long)i, (long long)out[i]);
  /* end beyond launch.n is clamped by the kernel itself. */
  t.args[1] = (void *)(intptr_t)3;
  t.fn(t.args, n - 5, n + 64);
  for (int64_t i = n - 5; i < n; i++) ck_assert_int_eq(out[i], i * 3 + 1);
  for (int64_t i = n; i < n + 64; i++) ck_assert_int_eq(out[i], -5);
  ck_assert_int_eq(out[n - 6], (n - 6) * 7 + 1);
  gc_threadpool_destroy(pool);
  gc_cpu_jit_free(j);
  kir_module_free(m);
  free(out);
  gc_sbuf_free(&times);
  ck_assert_int_eq(d.n_errors, 0);
  gc_diags_free(&d);
}
END_TEST

/* Compile errors carry LLVM's message and status COMPILE_ERROR; nothing leaks. */
START_TEST(jit_compile_errors) {
  /* A pass pipeline LLVM does not know. */
  kir_module *m = fill_module(100, 1, KIR_LAUNCH_ITEMS, 256);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_ptr_null(gc_cpu_jit_compile(m, "no-such-pass<O9>", NULL, &d));
  ck_assert_int_eq(d.status, GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_msg(d.n && strstr(d.items[0].msg, "no-such-pass"), "%s", d.n ? d.items[0].msg : "");
  gc_diags_free(&d);
  kir_module_free(m);
  /* A BLOCKS kernel of 4 cooperating threads cannot run on the host. */
  m = fill_module(100, 1, KIR_LAUNCH_BLOCKS, 4);
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_ptr_null(gc_cpu_jit_compile(m, NULL, NULL, &d));
  ck_assert_int_eq(d.status, GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_msg(d.n && strstr(d.items[0].msg, "host"), "%s", d.n ? d.items[0].msg : "");
  gc_diags_free(&d);
  kir_module_free(m);
  gc_cpu_jit_free(NULL);
}
END_TEST

/* ---- through the public API ------------------------------------------------------------ */
static const char *const big_src =
    "version 1;\n"
    "graph @big(%x: f32[1000003], %y: f32[1000003]) -> (f32[1000003], f32[]) {\n"
    "  %m = mul(%x, %y);\n"
    "  %a = add(%m, %x);\n"
    "  %e = tanh(%a);\n"
    "  %s = reduce_max(%e);\n"
    "  return %e, %s;\n"
    "}\n";

/* Load text into a fresh context/model (aborts on failure). */
static graphc_model_t *load(graphc_context_t **ctx, const char *text) {
  graphc_error_t err;
  graphc_model_t *m = NULL;
  ck_assert_int_eq(graphc_context_create(ctx), GRAPHC_STATUS_OK);
  ck_assert_msg(graphc_model_load_string(*ctx, "t.graph", text, strlen(text), &m, &err) ==
                    GRAPHC_STATUS_OK, "%s", err.message);
  return m;
}

/* A big graph through the public API on 3 threads matches the interpreter. */
START_TEST(public_api_three_threads) {
  setenv("GRAPHC_CPU_THREADS", "3", 1);
  gc_sbuf fails = {0};
  int bad = cpu_vs_interp("big", big_src, "xx", NULL, 1, g_seed, &fails);
  ck_assert_msg(bad == 0, "seed %llu: %s", (unsigned long long)g_seed, fails.data);
  gc_sbuf_free(&fails);
  graphc_context_t *ctx;
  graphc_model_t *m = load(&ctx, big_src);
  graphc_executable_t *e = compile_or_die(ctx, m, GRAPHC_BACKEND_CPU, "big");
  ck_assert_msg(strstr(graphc_executable_stats(e), "3 threads"), "%s", graphc_executable_stats(e));
  graphc_executable_destroy(e);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  unsetenv("GRAPHC_CPU_THREADS");
}
END_TEST

/* A failing compile through the API (GRAPHC_CPU_PASSES); a bad thread count warns. */
START_TEST(public_api_compile_error) {
  graphc_context_t *ctx;
  graphc_model_t *m = load(&ctx, big_src);
  setenv("GRAPHC_CPU_PASSES", "bogus-pipeline", 1);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CPU;
  graphc_executable_t *e = (graphc_executable_t *)1;
  graphc_error_t err;
  ck_assert_int_eq(graphc_compile(m, &o, &e, &err), GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_ptr_null(e);
  ck_assert_int_eq(err.code, GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_msg(strstr(err.message, "bogus-pipeline"), "%s", err.message);
  ck_assert_ptr_nonnull(strstr(graphc_context_diagnostics(ctx), "bogus-pipeline"));
  unsetenv("GRAPHC_CPU_PASSES");
  /* A bad thread count is a warning, not an error. */
  setenv("GRAPHC_CPU_THREADS", "many", 1);
  ck_assert_int_eq(graphc_compile(m, &o, &e, &err), GRAPHC_STATUS_OK);
  ck_assert_ptr_nonnull(strstr(graphc_context_diagnostics(ctx), "GRAPHC_CPU_THREADS"));
  graphc_executable_destroy(e);
  unsetenv("GRAPHC_CPU_THREADS");
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

static const char *const tr_src =
    "version 1;\n"
    "graph @tr(%x: f32[64, 64], %b: f32[64]) -> (f32[64, 64], f32[64, 64]) {\n"
    "  %t = transpose(%x, perm=[1, 0]);\n"
    "  %y = add(%t, %b);\n"
    "  %z = mul(%x, %x);\n"
    "  return %y, %z;\n"
    "}\n";

/* Run exe on (x, b) with outputs at (y, z); compare with the interpreter's ref. */
static void run_and_check(graphc_executable_t *exe, void *x, void *b, void *y, void *z,
                          const graphc_tensor_t *ref, const char *what) {
  graphc_tensor_t in[2] = {{GRAPHC_DTYPE_F32, 2, {64, 64}, x, 64 * 64 * 4},
                           {GRAPHC_DTYPE_F32, 1, {64}, b, 64 * 4}};
  graphc_tensor_t out[2] = {{GRAPHC_DTYPE_F32, 2, {64, 64}, y, 64 * 64 * 4},
                            {GRAPHC_DTYPE_F32, 2, {64, 64}, z, 64 * 64 * 4}};
  graphc_error_t err;
  ck_assert_msg(graphc_executable_run(exe, in, 2, out, 2, &err) == GRAPHC_STATUS_OK, "%s: %s", what,
                err.message);
  for (int o = 0; o < 2; o++) {
    tu_cmp c = tu_compare(ref[o].data, out[o].data, GRAPHC_DTYPE_F32, 64 * 64, 1e-5, 1e-5);
    ck_assert_msg(c.n_bad == 0, "%s: output %d: %lld differ, first [%lld] interp %g cpu %g (seed %llu)",
                  what, o, (long long)c.n_bad, (long long)c.first_bad, c.ref_bad, c.got_bad,
                  (unsigned long long)g_seed);
  }
}

/* Misaligned and overlapping I/O buffers and repeated runs give the interpreter's results. */
START_TEST(io_misaligned_overlapping_repeated) {
  graphc_context_t *ctx;
  graphc_model_t *m = load(&ctx, tr_src);
  graphc_executable_t *ref = compile_or_die(ctx, m, GRAPHC_BACKEND_INTERP, "tr");
  graphc_executable_t *cpu = compile_or_die(ctx, m, GRAPHC_BACKEND_CPU, "tr");
  uint64_t s = g_seed;
  for (int round = 0; round < 3; round++) {  /* fresh data each round: the slots rebind */
    graphc_tensor_t *in, *rout;
    make_io(ref, NULL, NULL, &s, &in, &rout);
    graphc_error_t err;
    ck_assert_int_eq(graphc_executable_run(ref, in, 2, rout, 2, &err), GRAPHC_STATUS_OK);
    const size_t nx = 64 * 64 * 4;
    /* plain buffers */
    char *y = malloc(nx), *z = malloc(nx);
    ck_assert(y && z);
    run_and_check(cpu, in[0].data, in[1].data, y, z, rout, "aligned");
    /* misaligned input and outputs (offset by one byte) */
    char *raw = malloc(4 * nx + 64);
    ck_assert_ptr_nonnull(raw);
    char *x1 = raw + 1, *y1 = raw + nx + 17, *z1 = raw + 2 * nx + 33;
    memcpy(x1, in[0].data, nx);
    run_and_check(cpu, x1, in[1].data, y1, z1, rout, "misaligned");
    /* in place: both outputs in the input's buffer (z = x*x elementwise, y = x^T + b) */
    char *xy = malloc(nx);
    ck_assert_ptr_nonnull(xy);
    memcpy(xy, in[0].data, nx);
    run_and_check(cpu, xy, in[1].data, xy, z, rout, "y in x's buffer");
    memcpy(xy, in[0].data, nx);
    run_and_check(cpu, xy, in[1].data, y, xy, rout, "z in x's buffer");
    ck_assert_mem_eq(x1, in[0].data, nx);  /* inputs are never written */
    free(xy);
    free(raw);
    free(y);
    free(z);
    tu_free_tensors(in, 2);
    tu_free_tensors(rout, 2);
  }
  graphc_executable_destroy(ref);
  graphc_executable_destroy(cpu);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

/* Threads of this process (entries of /proc/self/task). */
static int thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* Stats name the stages; without a GPU the default backend is cpu; the pool's
 * threads are gone after destroy. */
START_TEST(stats_and_default_backend) {
  setenv("GRAPHC_CPU_THREADS", "4", 1);
  int threads_before = thread_count();
  graphc_context_t *ctx;
  graphc_model_t *m = load(&ctx, tr_src);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CPU;
  o.time_passes = 1;
  graphc_executable_t *e = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_compile(m, &o, &e, &err), GRAPHC_STATUS_OK);
  const char *st = graphc_executable_stats(e);
  static const char *const want[] = {"plan:", "cpu: lower", "llvm emit", "O3 without DSE", "jit",
                                     "threads", "arena"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    ck_assert_msg(strstr(st, want[i]), "stats lack '%s':\n%s", want[i], st);
  ck_assert_int_eq(thread_count(), threads_before + 3);  /* 3 workers + this thread */
  graphc_executable_destroy(e);
  ck_assert_int_eq(thread_count(), threads_before);
  unsetenv("GRAPHC_CPU_THREADS");
  if (!gc_cuda_available(tu_rt_settings())) {  /* no GPU: the default is the cpu backend */
    o.backend = GRAPHC_BACKEND_DEFAULT;
    ck_assert_int_eq(graphc_compile(m, &o, &e, &err), GRAPHC_STATUS_OK);
    ck_assert_int_eq(graphc_executable_backend(e), GRAPHC_BACKEND_CPU);
    graphc_executable_destroy(e);
  }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

/* Launches that read only weights (a reduction of a param and the add after it) are the
 * plan's prologue (codegen/prologue.c) on the cpu backend too: they run in the first run
 * only, and the runs after it, on new inputs, still match the interpreter. */
START_TEST(prologue_runs_once) {
  static const char *const text =
      "version 1;\n"
      "graph @t(%x: f32[5, 40]) -> (f32[5, 40]) {\n"
      "  param %w: f32[6, 40] = \"w\";\n"
      "  param %b: f32[40] = \"b\";\n"
      "  %s = reduce_max(%w, axes=[0]);\n"
      "  %t = add(%s, %b);\n"
      "  %y = mul(%x, %t);\n"
      "  %z = add(%y, %x);\n"
      "  return %z;\n"
      "}\n";
  graphc_context_t *ctx;
  graphc_model_t *m = load(&ctx, text);
  graphc_error_t err;
  char wpath[4200];
  snprintf(wpath, sizeof wpath, "%s/pw-%d.safetensors", tu_tmpdir(), (int)getpid());
  ck_assert_int_eq(graphc_model_write_random_weights(m, wpath, g_seed, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_weights(m, wpath, &err), GRAPHC_STATUS_OK);
  graphc_executable_t *ref = compile_or_die(ctx, m, GRAPHC_BACKEND_INTERP, "prologue");
  graphc_executable_t *cpu = compile_or_die(ctx, m, GRAPHC_BACKEND_CPU, "prologue");
  const char *st = graphc_executable_stats(cpu);
  ck_assert_msg(strstr(st, "read only weights: run once per weights"), "%s", st);
  gc_sbuf fails = {0};
  for (int run = 0; run < 3; run++) {
    graphc_tensor_t *in, *rout, *cout, *unused;
    uint64_t s = g_seed + 7 * (uint64_t)run;
    make_io(ref, NULL, NULL, &s, &in, &rout);
    make_io(cpu, NULL, NULL, &s, &unused, &cout);
    tu_free_tensors(unused, 1);
    memset(cout[0].data, 0xa5, cout[0].nbytes);
    ck_assert_int_eq(graphc_executable_run(ref, in, 1, rout, 1, &err), GRAPHC_STATUS_OK);
    ck_assert_int_eq(graphc_executable_run(cpu, in, 1, cout, 1, &err), GRAPHC_STATUS_OK);
    ck_assert_msg(compare_outputs("prologue", cpu, rout, cout, 0, &fails) == 0, "run %d: %s", run, fails.data);
    tu_free_tensors(in, 1);
    tu_free_tensors(rout, 1);
    tu_free_tensors(cout, 1);
  }
  gc_sbuf_free(&fails);
  graphc_executable_destroy(ref);
  graphc_executable_destroy(cpu);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  remove(wpath);
}
END_TEST

/* Distance of got from the f64 value ref in f32 ulps at ref (0 when both are the same
 * infinity or both NaN). */
static double ulps_f32(float got, double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0 : INFINITY;
  float r = (float)ref;
  if (isinf(r) || isinf(got)) return r == got ? 0 : INFINITY;
  double u = fabs((double)nextafterf(fabsf(r), INFINITY) - fabs((double)r));
  return fabs((double)got - ref) / u;
}

/* The host's inline f32 exp, tanh and erf (codegen/llvm_hostmath.c; sigmoid and silu use
 * exp) against libm in f64 on a sweep, random points and the special values: within 3 ulps,
 * NaN and the infinities exact, overflow to inf and underflow to 0 or subnormals. */
START_TEST(host_math_ulps) {
  enum { N = 8192 };
  static const char *const text =
      "version 1;\n"
      "graph @t(%x: f32[8192]) -> (f32[8192], f32[8192], f32[8192], f32[8192]) {\n"
      "  %e = exp(%x);\n"
      "  %t = tanh(%x);\n"
      "  %f = erf(%x);\n"
      "  %s = sigmoid(%x);\n"
      "  return %e, %t, %f, %s;\n"
      "}\n";
  static const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-7f, -3e-5f, 0.624999f, 0.625f, 1.0f,
                                  -1.0f, 3.9999f, 4.0f, 9.0f, 88.72f, 88.73f, 89.5f, 1000.0f,
                                  -87.3f, -100.0f, -103.9f, -104.5f, -1000.0f, INFINITY, -INFINITY, NAN};
  const int ns = (int)(sizeof special / sizeof special[0]);
  float *x = malloc(N * sizeof *x), *y[4];
  ck_assert_ptr_nonnull(x);
  uint64_t s = g_seed;
  for (int i = 0; i < N; i++) {
    if (i < ns) x[i] = special[i];
    else if (i < 4096) x[i] = -110.0f + 200.0f * (float)(i - ns) / (float)(4096 - ns);  /* sweep */
    else if (i < 6144) x[i] = (float)(tu_unit(&s) * 12.0 - 6.0);
    else x[i] = ldexpf((i & 1) ? -1.0f : 1.0f, -(i % 40)) * (1.0f + (float)(i % 97) / 97.0f);  /* small |x| */
  }
  graphc_context_t *ctx;
  graphc_model_t *m = load(&ctx, text);
  graphc_executable_t *cpu = compile_or_die(ctx, m, GRAPHC_BACKEND_CPU, "host math");
  graphc_tensor_t in = {GRAPHC_DTYPE_F32, 1, {N}, x, N * sizeof(float)}, out[4];
  for (int o = 0; o < 4; o++) {
    y[o] = malloc(N * sizeof(float));
    ck_assert_ptr_nonnull(y[o]);
    out[o] = (graphc_tensor_t){GRAPHC_DTYPE_F32, 1, {N}, y[o], N * sizeof(float)};
  }
  graphc_error_t err;
  ck_assert_int_eq(graphc_executable_run(cpu, &in, 1, out, 4, &err), GRAPHC_STATUS_OK);
  static const char *const names[] = {"exp", "tanh", "erf", "sigmoid"};
  for (int i = 0; i < N; i++) {
    double v = x[i], ref[4] = {exp(v), tanh(v), erf(v), 1.0 / (1.0 + exp(-v))};
    for (int o = 0; o < 4; o++) {
      /* sigmoid: 1 / (1 + e^-x) adds the rounding of the sum and the division */
      double tol = o == 3 ? 4.0 : 3.0;
      if (o == 3 && ref[3] < 1e-30) continue;  /* e^-x overflows first: 1/inf = 0 against a tiny value */
      ck_assert_msg(ulps_f32(y[o][i], ref[o]) <= tol, "%s(%.9g) = %.9g, libm %.9g (%.2f ulps)", names[o], v,
                    y[o][i], ref[o], ulps_f32(y[o][i], ref[o]));
    }
  }
  ck_assert(y[0][ns - 3] == INFINITY && y[0][ns - 2] == 0.0f && isnan(y[0][ns - 1]));
  ck_assert(y[1][ns - 3] == 1.0f && y[1][ns - 2] == -1.0f && isnan(y[1][ns - 1]));
  ck_assert(y[2][ns - 3] == 1.0f && y[2][ns - 2] == -1.0f && isnan(y[2][ns - 1]));
  /* sigmoid's reciprocal estimate (codegen/emit_expr.c) keeps the ends and NaN */
  ck_assert(y[3][ns - 3] == 1.0f && y[3][ns - 2] == 0.0f && isnan(y[3][ns - 1]));
  for (int i = 0; i < N; i++) ck_assert(isnan(x[i]) || (y[3][i] >= 0.0f && y[3][i] <= 1.0f));
  ck_assert(signbit(y[1][1]) && signbit(y[2][1]));  /* tanh(-0) = erf(-0) = -0 */
  for (int o = 0; o < 4; o++) free(y[o]);
  free(x);
  graphc_executable_destroy(cpu);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

int main(void) {
  g_seed = tu_seed();
  printf("test_cpu_backend: seed %llu (GRAPHC_TEST_SEED=%llu reproduces)\n",
         (unsigned long long)g_seed, (unsigned long long)g_seed);
  fflush(stdout);
  unsetenv("GRAPHC_CPU_PASSES");
  Suite *s = suite_create("cpu_backend");
  TCase *tp = tcase_create("pool");
  tcase_add_test(tp, threadpool_ranges);
  tcase_add_test(tp, jit_kernel_split_over_threads);
  tcase_add_test(tp, public_api_three_threads);
  tcase_set_timeout(tp, 600);
  suite_add_tcase(s, tp);
  TCase *te = tcase_create("errors");
  tcase_add_test(te, jit_compile_errors);
  tcase_add_test(te, public_api_compile_error);
  tcase_add_test(te, io_misaligned_overlapping_repeated);
  tcase_add_test(te, stats_and_default_backend);
  tcase_add_test(te, prologue_runs_once);
  suite_add_tcase(s, te);
  TCase *tx = tcase_create("examples");
  tcase_add_test(tx, examples_cpu_vs_interp);
  tcase_set_timeout(tx, 600);
  suite_add_tcase(s, tx);
  TCase *to = tcase_create("ops");
  tcase_add_loop_test(to, op_cpu_vs_interp, 0, GC_OP_COUNT_);
  tcase_add_test(to, matmul_packed_cpu_vs_interp);
  tcase_add_test(to, dwconv_cpu_vs_interp);
  tcase_add_test(to, host_forms_cpu_vs_interp);
  tcase_add_test(to, host_math_ulps);
  tcase_set_timeout(to, 1200);
  suite_add_tcase(s, to);
  return tu_run_suite(s);
}
