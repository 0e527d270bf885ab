/* test_fusion.c - fusion decisions (codegen/fusion.c) and fused plans, without a GPU.
 *
 *   golden     every tests/fusion/NN_name.graph carries the expected decisions
 *              (gc_fusion_print) in its comment block after `# ---- expected ----`;
 *              GRAPHC_REGEN=1 rewrites the blocks (review with git diff).
 *   values     for those files and every examples/ graph (symbolic dims bound
 *              small, params given fresh random weights): the fused plan and the
 *              one-kernel-per-op plan run on the host evaluator (lower_eval.h,
 *              BLOCKS groups in lockstep) for sm_90 and the host target; both
 *              must match the interpreter within the brief's tolerances, and
 *              fused must equal unfused bit for bit (intermediates round through
 *              their dtype, so fusion changes nothing the evaluator can see) --
 *              except in an attention kernel, which keeps its scores in f32
 *              (codegen/emit_attn.c): such plans only meet the tolerances.
 *   code       the fused sm_90 plans print as CUDA C that NVRTC compiles, and as
 *              LLVM IR that the NVPTX backend compiles; ptxas accepts both PTXs.
 *   pinned     the transformer block's groups and kernel count; kernel counts of
 *              the examples; the dot-cluster helper; the stats text.
 *   extra      GRAPHC_FUSION_FILES='<glob>' adds any .graph files (random graphs,
 *              models): fused must equal unfused, the interpreter is advisory.
 * The random seed is printed (GRAPHC_TEST_SEED reproduces a run).
 */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/fusion.h"
#include "codegen/lower.h"
#include "driver/launch_build.h"
#include "frontend/parser.h"
#include "tests/cuda_testutil.h"
#include "tests/lower_eval.h"
#include "tests/plan_compile.h"
#include "tests/testutil.h"

static uint64_t g_seed;
static glob_t g_golden, g_examples;

#define MARKER "# ---- expected ----"

/* ---- loading a case --------------------------------------------------------------------------- */

/* A parsed, bound and verified graph with random weights for its params. */
typedef struct fcase {
  char *text;
  gc_module *m;
  gc_graph *g;
  int n_w;
  gc_st_tensor *ts;
  gc_safetensors w;
} fcase;

/* Value of symbol `name` from a "# bind: B=2, S=3" line, else the default. */
static int64_t bind_value(const char *text, const char *name) {
  const char *b = strstr(text, "# bind:");
  size_t n = strlen(name);
  for (const char *p = b; p && *p && *p != '\n'; p++)
    if (strncmp(p, name, n) == 0 && p[n] == '=' && (p[-1] == ' ' || p[-1] == ',')) return strtoll(p + n + 1, NULL, 10);
  if (!strcmp(name, "S")) return 5;
  return 2;
}

/* Parse `path`, bind its symbols, specialize, verify, make random weights. */
static void fcase_load(fcase *fc, const char *path, uint64_t seed) {
  memset(fc, 0, sizeof *fc);
  size_t len = 0;
  fc->text = tu_read_file(path, &len);
  ck_assert_msg(fc->text != NULL, "cannot read %s", path);
  gc_diags d;
  gc_diags_init(&d, path, fc->text, len);
  fc->m = gc_parse(path, fc->text, len, &d);
  int ok = fc->m && fc->m->n_graphs > 0 && gc_verify_module(fc->m, &d) == 0;
  if (ok) {
    fc->g = fc->m->graphs[0];
    for (int i = 0; i < fc->g->n_syms; i++) fc->g->sym_values[i] = bind_value(fc->text, fc->g->sym_names[i]);
    ok = gc_graph_specialize(fc->g, &d) == 0 && gc_verify_graph(fc->g, &d) == 0;
  }
  if (!ok) {
    char *r = gc_diags_render(&d);
    ck_abort_msg("%s does not load:\n%s", path, r ? r : "");
  }
  gc_diags_free(&d);
  for (const gc_op *op = fc->g->first; op; op = op->next) fc->n_w += op->opcode == GC_OP_PARAM;
  fc->ts = calloc((size_t)fc->n_w + 1, sizeof *fc->ts);
  int i = 0;
  for (const gc_op *op = fc->g->first; op; op = op->next) {
    if (op->opcode != GC_OP_PARAM) continue;
    const gc_type *t = &op->results[0]->type;
    gc_st_tensor *ts = &fc->ts[i];
    ts->name = gc_op_attr_str(op, "name", "");
    ts->dtype = t->dtype;
    ts->rank = t->rank;
    memcpy(ts->dims, t->dims, sizeof ts->dims);
    ts->nbytes = (size_t)gc_type_numel(t) * graphc_dtype_size(t->dtype);
    void *data = malloc(ts->nbytes + 1);
    gc_random_fill(data, t, seed * 131 + (uint64_t)i);
    ts->data = data;
    i++;
  }
  fc->w = (gc_safetensors){.n = fc->n_w, .tensors = fc->ts, .path = (char *)"random"};
}

/* Free everything fcase_load made. */
static void fcase_free(fcase *fc) {
  for (int i = 0; i < fc->n_w; i++) free((void *)fc->ts[i].data);
  free(fc->ts);
  gc_module_free(fc->m);
  free(fc->text);
}

/* Plan for target kind tk, fusion on or off. */
static gc_plan *plan_for(const fcase *fc, kir_target_kind tk, int fuse) {
  kir_target t;
  if (tk == KIR_TARGET_CUDA)
    kir_target_cuda(&t, 90);
  else
    kir_target_host(&t, 4);
  gc_diags d;
  gc_diags_init(&d, "case", NULL, 0);
  gc_plan *p = gc_lower_opts(fc->g, &t, fuse, &d);
  if (p && gc_plan_bind_weights(p, fc->n_w ? &fc->w : NULL, &d)) {
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

/* Fusion decisions as text (sm_90), with a kernel count line first. */
static char *decisions_for(const fcase *fc, kir_target_kind tk) {
  kir_target t;
  if (tk == KIR_TARGET_CUDA)
    kir_target_cuda(&t, 90);
  else
    kir_target_host(&t, 4);
  gc_fusion *f = gc_fusion_plan(fc->g, &t, 1);
  ck_assert_ptr_nonnull(f);
  int n = 0;
  for (int k = 0; k < f->n_groups; k++) n += f->groups[k].kind != GC_FUSION_VIEW;
  gc_sbuf b = {0};
  gc_sbuf_printf(&b, "kernels: %d\n", n);
  gc_fusion_print(&b, fc->g, f);
  gc_fusion_free(f);
  return gc_sbuf_take(&b);
}

/* The fusion decisions for sm_90 (what the golden files pin). */
static char *decisions(const fcase *fc) { return decisions_for(fc, KIR_TARGET_CUDA); }

/* ---- running ---------------------------------------------------------------------------------------- */

/* Structure every plan keeps: kernels verify, host kernels are plain loops,
 * the arena is at least its lower bound, every TEMP written by its first launch. */
static void check_structure(const gc_plan *p, kir_target_kind tk, const char *label) {
  for (int i = 0; i < p->kir->n_kernels; i++) {
    const kir_kernel *k = p->kir->kernels[i];
    kir_verify(k);
    if (tk == KIR_TARGET_HOST)
      ck_assert_msg(k->launch.kind == KIR_LAUNCH_ITEMS && k->n_shared == 0, "%s: host kernel %s", label, k->name);
  }
  ck_assert_uint_ge(p->arena_bytes, p->arena_lower_bound);
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].kind == GC_BUF_TEMP) ck_assert_int_ge(p->buffers[b].first_use, 0);
}

/* Interpreter vs fused vs unfused on both targets; compile the fused sm_90 plan.
 * loose: arbitrary graphs (GRAPHC_FUSION_FILES): a failing interpreter skips the
 * case and differences from it are only printed; fused must still equal unfused. */
static void run_values_mode(const fcase *fc, const char *label, uint64_t seed, int compile, int loose) {
  const gc_graph *g = fc->g;
  graphc_tensor_t *in = calloc((size_t)g->n_args + 1, sizeof *in);
  graphc_tensor_t *ref = calloc((size_t)g->n_outputs + 1, sizeof *ref);
  unsigned char **ins = calloc((size_t)g->n_args + 1, sizeof *ins);
  unsigned char **got[2];
  for (int f = 0; f < 2; f++) got[f] = calloc((size_t)g->n_outputs + 1, sizeof *got[f]);
  uint64_t s = seed;
  for (int i = 0; i < g->n_args; i++) {
    const gc_type *t = &g->args[i]->type;
    tu_tensor_of_type(&in[i], t);
    if (gc_dtype_is_float(t->dtype))
      tu_fill(in[i].data, t->dtype, gc_type_numel(t), 'x', 0, &s);
    else
      gc_random_fill(in[i].data, t, s + (uint64_t)i);  /* ints in [0, 4): valid indices */
    ins[i] = in[i].data;
  }
  for (int i = 0; i < g->n_outputs; i++) {
    tu_tensor_of_type(&ref[i], &g->outputs[i]->type);
    for (int f = 0; f < 2; f++) got[f][i] = malloc(ref[i].nbytes + 1);
  }
  gc_diags d;
  gc_diags_init(&d, label, fc->text, strlen(fc->text));
  graphc_status_t st = gc_interp_run(g, fc->n_w ? &fc->w : NULL, in, g->n_args, ref, g->n_outputs, &d);
  if (st != GRAPHC_STATUS_OK && loose) {
    printf("%s: interpreter refused the inputs, skipped\n", label);
    gc_diags_free(&d);
    goto done;
  }
  if (st != GRAPHC_STATUS_OK) {
    char *r = gc_diags_render(&d);
    ck_abort_msg("%s: interpreter failed (seed %llu):\n%s", label, (unsigned long long)g_seed, r ? r : "");
  }
  gc_diags_free(&d);
  for (int ti = 0; ti < 2; ti++) {
    kir_target_kind tk = ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA;
    const char *tn = ti ? "host" : "sm_90";
    int flash = 0;  /* a flash-attention kernel keeps the scores in f32: not bit-equal to unfused */
    for (int f = 0; f < 2; f++) {
      gc_plan *p = plan_for(fc, tk, f);
      for (int kk = 0; f && kk < p->kir->n_kernels; kk++)
        flash |= strstr(p->kernel_ops[kk], "softmax") && strstr(p->kernel_ops[kk], "matmul");
      check_structure(p, tk, label);
      for (int i = 0; i < g->n_outputs; i++) memset(got[f][i], 0xCD, ref[i].nbytes + 1);
      const char *err = ev_run_plan(p, ins, got[f]);
      ck_assert_msg(err == NULL, "%s (%s, %s): %s", label, tn, f ? "fused" : "unfused", err ? err : "");
      for (int i = 0; i < g->n_outputs; i++) {
        double atol, rtol;
        tu_tolerance(ref[i].dtype, 1, &atol, &rtol);
        /* the interpreter rounds an f16 / bf16 attention's scores, their sum with a mask or
         * bias and the probabilities to the dtype, op by op; a flash-attention kernel keeps
         * them in f32, so the two differ by the scores' rounding (an f16 causal softmax with a
         * loaded bias: 0.0068 at 0.42 for one seed in a few): 4x the tolerance there */
        if (flash && (ref[i].dtype == GRAPHC_DTYPE_F16 || ref[i].dtype == GRAPHC_DTYPE_BF16)) atol *= 4, rtol *= 4;
        int64_t n = gc_type_numel(&g->outputs[i]->type);
        /* Chained f32 contractions cancel: an output near zero carries the rounding
         * of its large terms, so the absolute tolerance scales with the output's
         * largest magnitude (a norm-relative bound; NaN still never passes). */
        if (gc_dtype_is_float(ref[i].dtype)) {
          double mx = 0;
          for (int64_t e = 0; e < n; e++) {
            double v = fabs(gc_load_f64(ref[i].data, ref[i].dtype, e));
            if (v > mx) mx = v;
          }
          if (rtol * mx > atol) atol = rtol * mx;
        }
        tu_cmp c = tu_compare(ref[i].data, got[f][i], ref[i].dtype, n, atol, rtol);
        if (loose && c.n_bad) {
          printf("%s (%s, %s) output %d: %lld of %lld differ from the interpreter (not checked)\n", label, tn,
                 f ? "fused" : "unfused", i, (long long)c.n_bad, (long long)n);
          continue;
        }
        ck_assert_msg(c.n_bad == 0,
                      "%s (%s, %s) output %d (%%%s): %lld of %lld differ from the interpreter, first "
                      "[%lld]: got %.9g want %.9g (seed %llu)",
                      label, tn, f ? "fused" : "unfused", i, g->outputs[i]->name, (long long)c.n_bad,
                      (long long)n, (long long)c.first_bad, c.got_bad, c.ref_bad, (unsigned long long)g_seed);
      }
      if (f && compile && tk == KIR_TARGET_CUDA) pc_compile_plan(p, label);
      gc_plan_free(p);
    }
    for (int i = 0; i < g->n_outputs && !flash; i++) {
      int64_t n = gc_type_numel(&g->outputs[i]->type);
      tu_cmp c = tu_compare(got[0][i], got[1][i], ref[i].dtype, n, 0, 0);
      ck_assert_msg(c.n_bad == 0,
                    "%s (%s) output %d (%%%s): fused differs from unfused in %lld of %lld, first [%lld]: "
                    "%.9g vs %.9g (seed %llu)",
                    label, tn, i, g->outputs[i]->name, (long long)c.n_bad, (long long)n,
                    (long long)c.first_bad, c.got_bad, c.ref_bad, (unsigned long long)g_seed);
    }
  }
done:
  for (int i = 0; i < g->n_args; i++) free(in[i].data);
  for (int i = 0; i < g->n_outputs; i++) {
    free(ref[i].data);
    for (int f = 0; f < 2; f++) free(got[f][i]);
  }
  for (int f = 0; f < 2; f++) free(got[f]);
  free(in);
  free(ref);
  free(ins);
}

/* The strict comparison (golden files, examples). */
static void run_values(const fcase *fc, const char *label, uint64_t seed, int compile) {
  run_values_mode(fc, label, seed, compile, 0);
}

/* ---- golden files ----------------------------------------------------------------------------------- */

/* The decisions as the comment block a golden file carries. */
static char *commented(const char *listing) {
  gc_sbuf b = {0};
  gc_sbuf_puts(&b, MARKER "\n");
  for (const char *p = listing; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    gc_sbuf_printf(&b, "#%s%.*s\n", n ? " " : "", (int)n, p);
    p += n + (e ? 1 : 0);
  }
  return gc_sbuf_take(&b);
}

/* One golden file: decisions equal the expected block (or rewrite it), then values. */
START_TEST(test_golden) {
  const char *path = g_golden.gl_pathv[_i];
  fcase fc;
  uint64_t seed = g_seed + (uint64_t)_i * 7919;
  fcase_load(&fc, path, seed);
  char *got = decisions(&fc);
  char *block = commented(got);
  const char *mk = strstr(fc.text, MARKER);
  const char *regen = getenv("GRAPHC_REGEN");
  if (regen && !strcmp(regen, "1")) {
    size_t keep = mk ? (size_t)(mk - fc.text) : strlen(fc.text);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fwrite(fc.text, 1, keep, f);
    fputs(block, f);
    fclose(f);
    printf("regenerated %s\n", path);
  } else {
    ck_assert_msg(mk != NULL, "%s has no '%s' block (GRAPHC_REGEN=1 writes it)", path, MARKER);
    ck_assert_msg(strcmp(mk, block) == 0, "%s: fusion decisions changed:\n--- expected\n%s--- got\n%s", path, mk,
                  block);
  }
  run_values(&fc, path, seed, 1);
  free(block);
  free(got);
  fcase_free(&fc);
}
END_TEST

/* ---- examples ---------------------------------------------------------------------------------------- */

/* Kernel counts (one per op / fused) of each example, dims bound as fcase_load does. */
static const struct {
  const char *file;
  int unfused, fused;
} k_example_kernels[] = {
    {"cnn.graph", 11, 6},
    {"mlp.graph", 5, 2},
    {"resnet_f16.graph", 22, 9},
    {"transformer_block.graph", 22, 11},
    {"transformer_block_f16.graph", 22, 9},  /* f16 attention: one kernel (emit_attn.c) */
};

/* Every example: kernel counts pinned, values fused == unfused == interpreter, code compiles. */
START_TEST(test_example) {
  const char *path = g_examples.gl_pathv[_i];
  fcase fc;
  uint64_t seed = g_seed + 1000003u * (uint64_t)(_i + 1);
  fcase_load(&fc, path, seed);
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  gc_plan *p0 = plan_for(&fc, KIR_TARGET_CUDA, 0), *p1 = plan_for(&fc, KIR_TARGET_CUDA, 1);
  double bytes[2] = {0, 0}, flops = 0;
  int temps[2] = {0, 0};
  for (int f = 0; f < 2; f++) {
    const gc_plan *p = f ? p1 : p0;
    for (int i = 0; i < p->n_launches; i++) bytes[f] += p->kir->kernels[p->launches[i]]->bytes_moved;
    for (int i = 0; f && i < p->n_launches; i++) flops += p->kir->kernels[p->launches[i]]->flops;
    for (int b = 0; b < p->n_buffers; b++) temps[f] += p->buffers[b].kind == GC_BUF_TEMP;
  }
  printf("%-26s kernels %2d -> %2d, temps %2d -> %2d, modeled bytes %.0f -> %.0f, arena %zu -> %zu\n", base,
         p0->kir->n_kernels, p1->kir->n_kernels, temps[0], temps[1], bytes[0], bytes[1], p0->arena_bytes,
         p1->arena_bytes);
  for (size_t i = 0; i < sizeof k_example_kernels / sizeof k_example_kernels[0]; i++)
    if (!strcmp(base, k_example_kernels[i].file)) {
      ck_assert_int_eq(p0->kir->n_kernels, k_example_kernels[i].unfused);
      ck_assert_int_eq(p1->kir->n_kernels, k_example_kernels[i].fused);
    }
  /* fewer kernels, fewer temporaries, fewer bytes moved (the arena's peak may
   * move either way: fused values can live longer) */
  ck_assert_int_lt(p1->kir->n_kernels, p0->kir->n_kernels);
  ck_assert_int_lt(temps[1], temps[0]);
  ck_assert_double_lt(bytes[1], bytes[0]);
  gc_plan_free(p0);
  gc_plan_free(p1);
  /* Model-sized examples (transformer_block_f16: 25 M weights; resnet_f16: 224x224
   * images, 2 GFLOP at N=2) would take the host evaluator many minutes (hours under
   * ASan); test_examples_gpu runs them on the GPU, test_cpu_backend on the CPU. */
  int64_t nw = 0;
  for (const gc_op *op = fc.g->first; op; op = op->next)
    if (op->opcode == GC_OP_PARAM) nw += gc_type_numel(&op->results[0]->type);
  if (nw <= 4000000 && flops <= 2e8)
    run_values(&fc, path, seed, 1);
  else
    printf("%-26s values not evaluated on the host (%lld weights, %.2g flops; test_examples_gpu runs it)\n",
           base, (long long)nw, flops);
  fcase_free(&fc);
}
END_TEST

/* The transformer block's decisions, pinned: 22 kernels become 11. */
START_TEST(test_transformer_pinned) {
  static const char *const want =
      "kernels: 11\n"
      "  0 norm   layernorm_12: layernorm %h -> %h\n"
      "  1 matmul matmul_13: matmul %q -> %q\n"
      "  2 matmul matmul_14: matmul %k -> %k\n"
      "  3 matmul matmul_15: matmul %v -> %v\n"
      "  4 matmul fusion_22: reshape %q4^, transpose %qh^, reshape %k4^, transpose %kh^, matmul %scores, "
      "const %scale, mul %scaled -> %scaled\n"
      "  5 norm   softmax_25: softmax %p -> %p\n"
      "  6 matmul fusion_26: reshape %v4^, transpose %vh^, matmul %ctx -> %ctx\n"
      "  7 matmul fusion_29: transpose %ct^, reshape %cm^, matmul %attn, add %r1 -> %r1\n"
      "  8 norm   layernorm_31: layernorm %h2 -> %h2\n"
      "  9 matmul fusion_32: matmul %m1, add %m1b, gelu %g -> %g\n"
      " 10 matmul fusion_35: matmul %m2, add %m2b, add %y -> %y\n";
  fcase fc;
  fcase_load(&fc, tu_src("examples/transformer_block.graph"), g_seed);
  char *got = decisions(&fc);
  ck_assert_msg(strcmp(got, want) == 0, "transformer decisions changed:\n--- expected\n%s--- got\n%s", want, got);
  /* the stats name the fused ops and the absorbed transposes */
  gc_plan *p = plan_for(&fc, KIR_TARGET_CUDA, 1);
  gc_sbuf b = {0};
  gc_plan_stats(&b, p);
  char *st = gc_sbuf_take(&b);
  static const char *const wants[] = {"fusion: on, 26 ops -> 11 kernels", "absorbed transposes: %qh", "%kh",
                                      "%vh", "%ct", "matmul %m1, add %m1b, gelu %g"};
  for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++)
    ck_assert_msg(strstr(st, wants[i]) != NULL, "stats lack \"%s\":\n%s", wants[i], st);
  /* graphc dot: one cluster per kernel; the head split sits with its matmul */
  int *grp = malloc((size_t)fc.g->next_op_id * sizeof *grp);
  kir_target t;
  kir_target_cuda(&t, 90);
  ck_assert_int_eq(gc_fusion_groups(fc.g, &t, grp), 11);
  int qh = -1, scores = -1, scale = -1, param = -1;
  for (const gc_op *op = fc.g->first; op; op = op->next) {
    const char *n = op->results[0]->name;
    if (!strcmp(n, "qh")) qh = grp[op->id];
    if (!strcmp(n, "scores")) scores = grp[op->id];
    if (!strcmp(n, "scale")) scale = grp[op->id];
    if (!strcmp(n, "wq")) param = grp[op->id];
  }
  ck_assert_int_ge(scores, 0);
  ck_assert_int_eq(qh, scores);
  ck_assert_int_eq(scale, scores);
  ck_assert_int_eq(param, -1);
  for (int i = 0; i < p->n_op_ids; i++) ck_assert_int_lt(p->op_kernel[i], p->kir->n_kernels);
  free(grp);
  free(st);
  gc_plan_free(p);
  free(got);
  fcase_free(&fc);
}
END_TEST

/* The host's matmuls compute cheap elementwise operand producers inline (fusion.c,
 * GC_FROLE_CHEAP); a transcendental stays a kernel. The values: test_golden. */
START_TEST(test_host_operand_producers) {
  static const char *const want =
      "kernels: 4\n"
      "  0 matmul fusion_1: mul %xs^, matmul %y -> %y\n"
      "  1 matmul fusion_3: add %xa^, matmul %y2 -> %y2\n"
      "  2 loop   sigmoid_4: sigmoid %g -> %g\n"
      "  3 matmul matmul_5: matmul %y3 -> %y3\n";
  fcase fc;
  fcase_load(&fc, tu_src("tests/fusion/23_host_operand_producers.graph"), g_seed);
  char *got = decisions_for(&fc, KIR_TARGET_HOST);
  ck_assert_msg(strcmp(got, want) == 0, "host decisions changed:\n--- expected\n%s--- got\n%s", want, got);
  free(got);
  fcase_free(&fc);
}
END_TEST

/* Fusion off: one kernel per op that needs code (reshapes of buffers are views). */
START_TEST(test_fusion_off) {
  fcase fc;
  fcase_load(&fc, tu_src("examples/transformer_block.graph"), g_seed);
  int n = 0;
  for (const gc_op *op = fc.g->first; op; op = op->next)
    n += op->opcode != GC_OP_PARAM && op->opcode != GC_OP_RESHAPE;
  gc_plan *p = plan_for(&fc, KIR_TARGET_HOST, 0);
  ck_assert_int_eq(p->kir->n_kernels, n);
  for (int i = 0; i < p->kir->n_kernels; i++) ck_assert_msg(strncmp(p->kir->kernels[i]->name, "fusion_", 7) != 0,
                                                            "fusion off made %s", p->kir->kernels[i]->name);
  gc_plan_free(p);
  fcase_free(&fc);
  /* compile options: -O0 and --disable-pass=fusion turn it off */
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  ck_assert_int_eq(gc_lower_fusion_enabled(&o), 1);
  ck_assert_int_eq(gc_lower_fusion_enabled(NULL), 1);
  o.disable_passes = "cse,fusion";
  ck_assert_int_eq(gc_lower_fusion_enabled(&o), 0);
  o.disable_passes = "fusions,dce";
  ck_assert_int_eq(gc_lower_fusion_enabled(&o), 1);
  o.disable_passes = NULL;
  o.optimize = 0;
  ck_assert_int_eq(gc_lower_fusion_enabled(&o), 0);
}
END_TEST

/* GRAPHC_FUSION_FILES=<glob>: any .graph files (e.g. dumped random graphs),
 * fused == unfused on both targets, interpreter differences only printed. */
static glob_t g_extra;

START_TEST(test_extra_file) {
  const char *path = g_extra.gl_pathv[_i];
  fcase fc;
  fcase_load(&fc, path, g_seed + (uint64_t)_i);
  run_values_mode(&fc, path, g_seed + (uint64_t)_i, 0, 1);
  fcase_free(&fc);
}
END_TEST

/* ---- suite -------------------------------------------------------------------------------------------- */

/* Golden files and examples (and GRAPHC_FUSION_FILES when set), one tcase each. */
static Suite *fusion_suite(void) {
  Suite *s = suite_create("fusion");
  TCase *tg = tcase_create("golden");
  tcase_set_timeout(tg, 900);
  tcase_add_loop_test(tg, test_golden, 0, (int)g_golden.gl_pathc);
  suite_add_tcase(s, tg);
  TCase *te = tcase_create("examples");
  tcase_set_timeout(te, 900);
  tcase_add_loop_test(te, test_example, 0, (int)g_examples.gl_pathc);
  tcase_add_test(te, test_transformer_pinned);
  tcase_add_test(te, test_fusion_off);
  tcase_add_test(te, test_host_operand_producers);
  suite_add_tcase(s, te);
  if (g_extra.gl_pathc) {
    TCase *tx = tcase_create("extra");
    tcase_set_timeout(tx, 900);
    tcase_add_loop_test(tx, test_extra_file, 0, (int)g_extra.gl_pathc);
    suite_add_tcase(s, tx);
  }
  return s;
}

/* Seed once per run (printed), the file lists, then the suite. */
int main(void) {
  g_seed = tu_seed();
  printf("test_fusion: seed %llu (set GRAPHC_TEST_SEED to reproduce)\n", (unsigned long long)g_seed);
  fflush(stdout);
  if (glob(tu_src("tests/fusion/*.graph"), 0, NULL, &g_golden) != 0 ||
      glob(tu_src("examples/*.graph"), 0, NULL, &g_examples) != 0) {
    printf("no tests/fusion/*.graph or examples/*.graph\n");
    return 1;
  }
  const char *extra = getenv("GRAPHC_FUSION_FILES");
  if (extra && *extra && glob(extra, 0, NULL, &g_extra) != 0) printf("GRAPHC_FUSION_FILES matched nothing\n");
  int rc = tu_run_suite(fusion_suite());
  if (extra && *extra) globfree(&g_extra);
  globfree(&g_golden);
  globfree(&g_examples);
  return rc;
}
