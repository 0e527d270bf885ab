/* test_lower_matmul.c - lowering matmuls to execution plans (codegen/lower.c,
 * emit_linalg.c), without a GPU: the generic tiled matmul for every numeric dtype,
 * the tensor-core kernels (f16, bf16; tf32 for f32) and the packed host matmul.
 *
 * Each case goes through run_case_w (lower_common.h) like the cases of test_lower.c:
 * plan structure, values on the host evaluator of lower_eval.h against the
 * interpreter, and the sm_90 plan compiled through NVRTC / LLVM NVPTX and ptxas.
 * The random seed is printed on failure (GRAPHC_TEST_SEED reproduces a run).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lower_common.h"
#include "tests/lower_eval.h"
#include "tests/plan_compile.h"
#include "driver/settings.h"

/* ---- contractions ---------------------------------------------------------------------------------- */

/* run_case_w with every argument of kind `kind` (takes text). */
static void run_case_kind(char *text, int chain, char kind) {
  gb kinds = {0};
  for (int i = 0; i < 8; i++) kinds.kinds[i] = kind;
  run_case_w(text, chain, 0, NULL, &kinds);
}

/* "version 1;\ngraph @g" + body with every dtype placeholder T (before '[' or ')') replaced
 * by the dtype name dt; malloc'd. */
static char *graph_of_type(const char *body, const char *dt) {
  gc_sbuf sb = {0};
  gc_sbuf_puts(&sb, "version 1;\ngraph @g");
  for (const char *q = body; *q; q++) {
    if (*q == 'T' && (q[1] == '[' || q[1] == ')'))
      gc_sbuf_puts(&sb, dt);
    else
      gc_sbuf_putc(&sb, *q);
  }
  return gc_sbuf_take(&sb);
}

/* The one tensor-core kernel the CUDA heuristic gives matmul(%a, %b) of signature sig (dtype
 * placeholders T) has `blocks` groups, and (wg 0 or 1) does or does not use wgmma. */
static void check_mm_grid(const char *sig, const char *T, int wg, int64_t blocks) {
  char body[512];
  snprintf(body, sizeof body, "%s {\n  %%y = matmul(%%a, %%b);\n  return %%y;\n}\n", sig);
  char *text = graph_of_type(body, T);
  gc_module *m = parse_ok(text);
  gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
  ck_assert_int_eq(p->kir->n_kernels, 1);
  const kir_kernel *k0 = p->kir->kernels[0];
  ck_assert_msg(kir_uses_tensor_cores(k0), "%s", text);
  if (wg >= 0) ck_assert_msg(kir_module_uses_wgmma(p->kir) == wg, "%s: wgmma %d expected", text, wg);
  ck_assert_msg(k0->launch.n == blocks, "%s: %lld blocks, expected %lld", text, (long long)k0->launch.n,
                (long long)blocks);
  gc_plan_free(p);
  gc_module_free(m);
  free(text);
}

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
    /* two 8-bit integers give i32 (ir/infer.c) */
    gb_ret(&b, n, ty(strcmp(T, "i8") == 0 || strcmp(T, "u8") == 0 ? "i32" : T, cases[k].out));
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

/* Does a kernel of the plan load an NHWC im2col A operand by cp.async (tc_plan_nhwc /
 * wg_plan_nhwc's per-row window corners) rather than staging it element by element? */
static int plan_loads_nhwc(const gc_plan *p) {
  int found = 0;
  for (int i = 0; i < p->kir->n_kernels && !found; i++) {
    gc_sbuf b = {0};
    kir_print(&b, p->kir->kernels[i]);
    char *t = gc_sbuf_take(&b);
    found = t && strstr(t, "ih0") != NULL;
    free(t);
  }
  return found;
}

/* Tensor-core matmuls (f16, bf16 on sm_90): tails in M, N and K, both B layouts,
 * broadcast batches, operands that are inline views (a head split), fused
 * epilogues; each case also checks that it took (or, for a transposed A, did
 * not take) the tensor-core kernel. The evaluator runs mma.sync / ldmatrix /
 * cp.async with their PTX semantics. */
START_TEST(test_matmul_tensor_core) {
  const char *T = _i == 0 ? "f16" : "bf16";
  /* nhwc: 1 A loads by cp.async (tc_issue_nhwc), -1 staged, 0 not checked */
  static const struct { const char *body; int tc, nhwc; } cases[] = {
      {"(%a: T[2, 200, 72], %b: T[72, 136], %c: T[136]) -> (T[2, 200, 136]) {\n"
       "  %y = matmul(%a, %b);\n  %z = add(%y, %c);\n  %r = relu(%z);\n  return %r;\n}\n", 1, 0},
      {"(%a: T[130, 64], %b: T[96, 64]) -> (T[130, 96]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 1, 0},
      {"(%a: T[2, 1, 70, 40], %b: T[3, 40, 72]) -> (T[2, 3, 70, 72]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 1, 0},
      {"(%x: T[1, 80, 128], %k: T[1, 80, 128]) -> (T[1, 2, 80, 80]) {\n"
       "  %x4 = reshape(%x, shape=[1, 80, 2, 64]);\n  %xh = transpose(%x4, perm=[0, 2, 1, 3]);\n"
       "  %k4 = reshape(%k, shape=[1, 80, 2, 64]);\n  %kh = transpose(%k4, perm=[0, 2, 1, 3]);\n"
       "  %s = matmul(%xh, %kh, transpose_b=true);\n  return %s;\n}\n", 1, 0},
      /* staged through the element generator: transposed A, a head merge, a cast prologue */
      {"(%a: T[72, 96], %b: T[72, 64]) -> (T[96, 64]) {\n"
       "  %y = matmul(%a, %b, transpose_a=true);\n  return %y;\n}\n", 1, 0},
      {"(%c: T[2, 2, 72, 64], %w: T[128, 64]) -> (T[2, 72, 64]) {\n"
       "  %t = transpose(%c, perm=[0, 2, 1, 3]);\n  %m = reshape(%t, shape=[2, 72, 128]);\n"
       "  %y = matmul(%m, %w);\n  return %y;\n}\n", 1, 0},
      {"(%a: f32[80, 48], %b: T[64, 48]) -> (T[80, 64]) {\n"
       "  %h = cast(%a, to=T);\n  %y = matmul(%h, %b, transpose_b=true);\n  return %y;\n}\n", 1, 0},
      {"(%a: T[72, 40], %b: T[40, 24]) -> (T[72, 24]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 0, 0},
      /* N below a 64-wide tile (a conv over 7x7 pixels: N 49), M 40 */
      {"(%a: T[40, 72], %b: T[2, 72, 49]) -> (T[2, 40, 49]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 1, 0},
      /* K not a multiple of 8 (a 7x7 conv over 3 channels): both operands staged, tails zero */
      {"(%a: T[80, 147], %b: T[147, 72]) -> (T[80, 72]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 1, 0},
      {"(%a: T[72, 21], %b: T[66, 21]) -> (T[72, 66]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 1, 0},
      /* convs as the conv-gemm pass writes them: B an im2col staged along the output
       * pixels (tc_stage_im2col): a pixel count that is no multiple of 8, rows shorter
       * than a chunk (OW 6), stride + dilation + uneven padding, an inline producer of
       * the image, a 7x7 stride-2 stem (K 147) */
      {"(%x: T[2, 8, 9, 10], %w: T[64, 72]) -> (T[2, 64, 90]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1]);\n  %y = matmul(%w, %c);\n  return %y;\n}\n", 1, 0},
      {"(%x: T[2, 8, 12, 6], %w: T[40, 72]) -> (T[2, 40, 72]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1]);\n  %y = matmul(%w, %c);\n  return %y;\n}\n", 1, 0},
      {"(%x: T[1, 8, 17, 19], %w: T[64, 72]) -> (T[1, 64, 70]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], stride=[2, 2], dilation=[2, 2], padding=[1, 2, 0, 3]);\n"
       "  %y = matmul(%w, %c);\n  return %y;\n}\n", 1, 0},
      {"(%x: T[1, 8, 10, 10], %w: T[64, 72], %b: T[64, 1]) -> (T[1, 64, 100]) {\n"
       "  %r = relu(%x);\n  %c = im2col(%r, kernel=[3, 3], padding=[1, 1]);\n  %y = matmul(%w, %c);\n"
       "  %z = add(%y, %b);\n  return %z;\n}\n", 1, 0},
      {"(%x: T[1, 3, 20, 20], %w: T[64, 147]) -> (T[1, 64, 100]) {\n"
       "  %c = im2col(%x, kernel=[7, 7], stride=[2, 2], padding=[3, 3]);\n  %y = matmul(%w, %c);\n  return %y;\n}\n", 1, 0},
      /* OW a multiple of 8: every chunk inside one output row, no row-wrap selects
       * (stride 1 and 2, a materialized and an inline image) */
      {"(%x: T[2, 8, 8, 16], %w: T[64, 72]) -> (T[2, 64, 128]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1]);\n  %y = matmul(%w, %c);\n  return %y;\n}\n", 1, 0},
      {"(%x: T[1, 8, 17, 32], %w: T[40, 72]) -> (T[1, 40, 144]) {\n"
       "  %r = relu(%x);\n  %c = im2col(%r, kernel=[3, 3], stride=[2, 2], padding=[1, 1]);\n"
       "  %y = matmul(%w, %c);\n  return %y;\n}\n", 1, 0},
      /* NHWC convs as the layout pass writes them: A an im2col of x [N, H, W, C], a
       * cp.async of 8 channels per chunk (tc_issue_nhwc) when x is materialized and C a
       * multiple of 8: padding, stride + dilation + uneven padding, a bias epilogue;
       * an inline producer and C 3 (K 147) take the element generator */
      {"(%x: T[2, 9, 10, 8], %w: T[72, 64]) -> (T[180, 64]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1], layout=\"nhwc\");\n  %y = matmul(%c, %w);\n"
       "  return %y;\n}\n", 1, 1},
      {"(%x: T[1, 17, 19, 16], %w: T[144, 40]) -> (T[70, 40]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], stride=[2, 2], dilation=[2, 2], padding=[1, 2, 0, 3], layout=\"nhwc\");\n"
       "  %y = matmul(%c, %w);\n  return %y;\n}\n", 1, 1},
      {"(%x: T[2, 8, 8, 16], %w: T[144, 64], %b: T[64]) -> (T[128, 64]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1], layout=\"nhwc\");\n  %y = matmul(%c, %w);\n"
       "  %z = add(%y, %b);\n  %r = relu(%z);\n  return %r;\n}\n", 1, 1},
      {"(%x: T[1, 10, 10, 8], %w: T[72, 64]) -> (T[100, 64]) {\n"
       "  %r = relu(%x);\n  %c = im2col(%r, kernel=[3, 3], padding=[1, 1], layout=\"nhwc\");\n"
       "  %y = matmul(%c, %w);\n  return %y;\n}\n", 1, 0},
      {"(%x: T[1, 20, 20, 3], %w: T[147, 64]) -> (T[100, 64]) {\n"
       "  %c = im2col(%x, kernel=[7, 7], stride=[2, 2], padding=[3, 3], layout=\"nhwc\");\n"
       "  %y = matmul(%c, %w);\n  return %y;\n}\n", 1, -1},
      /* 4 channels, the layout pass's pair form of a stem (N 40: the mma.sync kernel): a
       * chunk is two adjacent pixels, both inside or both in the padding (even window
       * width, stride, left padding and W), one cp.async; with an odd left padding the
       * pixels of a chunk straddle the border: staged */
      {"(%x: T[2, 10, 12, 4], %w: T[48, 40]) -> (T[70, 40]) {\n"
       "  %c = im2col(%x, kernel=[3, 4], stride=[2, 2], padding=[1, 2, 1, 2], layout=\"nhwc\");\n"
       "  %y = matmul(%c, %w);\n  return %y;\n}\n", 1, 1},
      {"(%x: T[1, 11, 12, 4], %w: T[48, 40]) -> (T[36, 40]) {\n"
       "  %c = im2col(%x, kernel=[3, 4], stride=[2, 2], padding=[1, 1, 1, 1], layout=\"nhwc\");\n"
       "  %y = matmul(%c, %w);\n  return %y;\n}\n", 1, -1},
  };
  /* forced tiles compiled (NVRTC, LLVM, ptxas) once each for the plain and the im2col
   * cases, evaluated for every case: the compile was most of the suite's time */
  int compiled[2][4] = {{0}};
  for (int k = 0; k < COUNT(cases); k++) {
    char *text = graph_of_type(cases[k].body, T);
    /* every output tile (the heuristic picks 64x64 for these small grids on 132 SMs) */
    static const int tiles[][2] = {{0, 0}, {128, 128}, {128, 64}, {64, 128}};
    /* the im2col cases (the last fourteen): the heuristic's tile and 128x128 (each tile
     * costs a ptxas run per dtype) */
    /* the NHWC cases after the first: only the heuristic's tile */
    int conv = k >= COUNT(cases) - 14, nhwc = k > COUNT(cases) - 7;
    for (int ti = 0; ti < COUNT(tiles) && (ti == 0 || cases[k].tc) && (!conv || ti < 2) && (!nhwc || ti < 1);
         ti++) {
      g_tc_tile[0] = tiles[ti][0];
      g_tc_tile[1] = tiles[ti][1];
      gc_module *m = parse_ok(text);
      gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
      ck_assert_msg(plan_uses_tc(p) == cases[k].tc, "case %d (%s, tile %dx%d): tensor cores %s expected\n%s", k,
                    T, tiles[ti][0], tiles[ti][1], cases[k].tc ? "" : "not", text);
      ck_assert_msg(!cases[k].nhwc || plan_loads_nhwc(p) == (cases[k].nhwc > 0),
                    "case %d (%s): A %s expected\n%s", k, T, cases[k].nhwc > 0 ? "by cp.async" : "staged", text);
      gc_plan_free(p);
      gc_module_free(m);
      gb kinds = {0};
      for (int i = 0; i < 8; i++) kinds.kinds[i] = 'x';
      g_no_compile = ti > 0 && compiled[conv][ti];
      compiled[conv][ti] = 1;
      run_case_w(strdup(text), 1, 0, NULL, &kinds);  /* takes its text */
      g_no_compile = 0;
    }
    g_tc_tile[0] = g_tc_tile[1] = 0;
    free(text);
  }
  /* the mma.sync kernel's heuristic (without wgmma): 128x128 while that grid covers the
   * 132 SMs, smaller tiles below */
  g_no_wgmma = 1;
  static const struct { const char *sig; int64_t blocks; } grids[] = {
      {"(%a: T[127, 4096], %b: T[4096, 4096]) -> (T[127, 4096])", 2 * 64},      /* 64x64 */
      {"(%a: T[2048, 512], %b: T[512, 2048]) -> (T[2048, 2048])", 16 * 16},     /* 128x128 */
      {"(%a: T[1024, 512], %b: T[512, 2048]) -> (T[1024, 2048])", 8 * 32},      /* 128x64 */
      {"(%a: T[8, 256, 512], %b: T[512, 2048]) -> (T[8, 256, 2048])", 8 * 2 * 16},  /* 128x128 */
      {"(%a: T[64, 576], %b: T[64, 576, 3136]) -> (T[64, 64, 3136])", 64 * 1 * 25}}; /* 64x128: M 64 */
  for (int gi = 0; gi < COUNT(grids); gi++) check_mm_grid(grids[gi].sig, T, -1, grids[gi].blocks);
  g_no_wgmma = 0;
  /* with wgmma: K <= 128 takes the mma.sync kernel, 128x64 tiles first (batched attention
   * shapes: 16 x 8 x 16 blocks of 128 threads); K 192 the wgmma kernel */
  static const struct { const char *sig; int wg; int64_t blocks; } shortk[] = {
      {"(%a: T[16, 1024, 64], %b: T[16, 64, 1024]) -> (T[16, 1024, 1024])", 0, 16 * 8 * 16},
      {"(%a: T[4096, 128], %b: T[128, 4096]) -> (T[4096, 4096])", 0, 32 * 64},
      {"(%a: T[16, 1024, 192], %b: T[16, 192, 1024]) -> (T[16, 1024, 1024])", 1, 16 * 8 * 4}};
  for (int gi = 0; gi < COUNT(shortk); gi++) check_mm_grid(shortk[gi].sig, T, shortk[gi].wg, shortk[gi].blocks);
}
END_TEST

/* The Hopper warpgroup-MMA kernel (emit_wgmma.c) on the evaluator (its shared-memory
 * swizzle and descriptors read as the PTX ISA defines them) and through NVRTC / LLVM and
 * ptxas for sm_90a: B stored K x N (MN-major) and N x K (K-major), tails in M, N and K
 * (K 200 = 3 x 64 + 8), a broadcast batch, a fused bias + relu and residual epilogue, an
 * odd N (scalar stores), and NHWC im2col A operands (the layout pass's convs: padding,
 * stride 2, K 72 = 64 + 8; the pair form of a stem, 4 channels of two pixels per chunk:
 * a 7x8 window with padding [3, 4, 3, 2], K 224 = 3 x 64 + 32, and a 3x4 one); every
 * tile: 64x128 and 64x64 (the small grids on 132 SMs), with 1 SM 128x128 and 128x64,
 * with 2 SMs 128x256. */
/* Cases 0, 1: f16, bf16 with TMA filling the stages (but for NHWC im2cols); 2, 3: with cp.async. */
START_TEST(test_matmul_wgmma) {
  const char *T = _i % 2 ? "bf16" : "f16";
  g_no_tma = _i >= 2;
  static const struct { const char *body; int sms; int64_t blocks; int threads; } cases[] = {
      {"(%a: T[200, 200], %b: T[200, 136], %c: T[136]) -> (T[200, 136]) {\n"
       "  %y = matmul(%a, %b);\n  %z = add(%y, %c);\n  %r = relu(%z);\n  return %r;\n}\n", 0, 8, 128},
      {"(%a: T[130, 64], %b: T[72, 64]) -> (T[130, 72]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 1, 2, 256},
      {"(%a: T[2, 1, 70, 48], %b: T[3, 48, 264], %r: T[2, 3, 70, 264]) -> (T[2, 3, 70, 264]) {\n"
       "  %y = matmul(%a, %b);\n  %z = add(%y, %r);\n  return %z;\n}\n", 2, 12, 256},
      {"(%a: T[128, 96], %b: T[264, 96]) -> (T[128, 264]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 2, 2, 256},
      {"(%a: T[64, 64], %b: T[65, 64]) -> (T[64, 65]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 0, 1, 128},
      {"(%x: T[2, 8, 8, 16], %w: T[144, 64], %b: T[64]) -> (T[128, 64]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], padding=[1, 1], layout=\"nhwc\");\n  %y = matmul(%c, %w);\n"
       "  %z = add(%y, %b);\n  %r = relu(%z);\n  return %r;\n}\n", 1, 1, 256},
      {"(%x: T[1, 20, 19, 8], %w: T[72, 72]) -> (T[100, 72]) {\n"
       "  %c = im2col(%x, kernel=[3, 3], stride=[2, 2], padding=[1, 1], layout=\"nhwc\");\n"
       "  %y = matmul(%c, %w);\n  return %y;\n}\n", 0, 2, 128},
      {"(%x: T[1, 20, 20, 4], %w: T[224, 64], %b: T[64]) -> (T[100, 64]) {\n"
       "  %c = im2col(%x, kernel=[7, 8], stride=[2, 2], padding=[3, 4, 3, 2], layout=\"nhwc\");\n"
       "  %y = matmul(%c, %w);\n  %z = add(%y, %b);\n  %r = relu(%z);\n  return %r;\n}\n", 0, 2, 128},
      {"(%x: T[2, 10, 12, 4], %w: T[48, 72]) -> (T[70, 72]) {\n"
       "  %c = im2col(%x, kernel=[3, 4], stride=[2, 2], padding=[1, 2, 1, 2], layout=\"nhwc\");\n"
       "  %y = matmul(%c, %w);\n  return %y;\n}\n", 0, 2, 128},
  };
  g_wgmma_short_k = 1;  /* most cases have K <= 128, which the heuristic gives mma.sync */
  for (int k = 0; k < COUNT(cases); k++) {
    char *text = graph_of_type(cases[k].body, T);
    g_tc_sms = cases[k].sms;
    gc_module *m = parse_ok(text);
    gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
    ck_assert_msg(kir_module_uses_wgmma(p->kir), "case %d (%s): no wgmma\n%s", k, T, text);
    const kir_kernel *k0 = p->kir->kernels[0];
    ck_assert_msg(k0->launch.n == cases[k].blocks && k0->launch.block == cases[k].threads,
                  "case %d: %lld blocks of %d threads, expected %lld of %d", k, (long long)k0->launch.n,
                  k0->launch.block, (long long)cases[k].blocks, cases[k].threads);
    int tmaps = 0, nhwc = strstr(text, "im2col") != NULL;
    for (int i = 0; i < k0->n_params; i++) tmaps += k0->params[i].kind == KIR_PARAM_TMAP;
    ck_assert_msg(tmaps == (g_no_tma || nhwc ? 0 : 2), "case %d: %d tensor maps", k, tmaps);
    ck_assert_msg(k0->one_pass == (tmaps > 0), "case %d: one_pass %d", k, k0->one_pass);
    if (cases[k].sms == 2) {  /* 128 x 256 tiles: 128 accumulators per thread; TMA: 4 barriers */
      const kir_kernel *kk = p->kir->kernels[0];
      ck_assert_msg(kk->shared_dynamic && kir_shared_bytes(kk) == 4 * (128 * 64 + 64 * 256) * 2 + (tmaps ? 32 : 0) + 1024,
                    "case %d: %lld bytes of shared memory", k, (long long)kir_shared_bytes(kk));
    }
    gc_plan_free(p);
    gc_module_free(m);
    run_case_kind(text, 1, 'x');  /* takes its text */
  }
  g_tc_sms = 0;
  g_wgmma_short_k = 0;
  g_no_tma = 0;
}
END_TEST

/* Attention groups (emit_attn.c: flash attention on mma.sync) on the evaluator and through
 * NVRTC / LLVM and ptxas: the transformer's head split and merge (the kernel writes the
 * merged [B, S, H*D] buffer), query and key counts that are no multiple of the tiles (70,
 * 150 x 90: masked keys, zero-filled rows), K stored D x Sk (transpose_b false: staged, not
 * cp.async), a division by the scale, a broadcast K / V batch (one K/V head for 4 query
 * heads), no scale with D = Dv = 128 (dynamic shared memory), D = 16 and a fused residual
 * epilogue, additive masks (a causal one computed inline, a loaded one with whole key blocks
 * at -inf); f16 and bf16. The kernel keeps the scores in f32 where the graph rounds them to
 * f16 / bf16 (as every flash attention does): q and k are small integers, so that rounding
 * is exact and the comparison is with the reference's tolerances. */
START_TEST(test_matmul_attention) {
  const char *T = _i ? "bf16" : "f16";
  static const char *const cases[] = {
      "(%q: T[2, 70, 128], %k: T[2, 70, 128], %v: T[2, 70, 128]) -> (T[2, 70, 128]) {\n"
      "  %q4 = reshape(%q, shape=[2, 70, 2, 64]);\n  %qh = transpose(%q4, perm=[0, 2, 1, 3]);\n"
      "  %k4 = reshape(%k, shape=[2, 70, 2, 64]);\n  %kh = transpose(%k4, perm=[0, 2, 1, 3]);\n"
      "  %v4 = reshape(%v, shape=[2, 70, 2, 64]);\n  %vh = transpose(%v4, perm=[0, 2, 1, 3]);\n"
      "  %s = matmul(%qh, %kh, transpose_b=true);\n  %c = const(value=0.125, dtype=T);\n"
      "  %x = mul(%s, %c);\n  %p = softmax(%x, axis=-1);\n  %o = matmul(%p, %vh);\n"
      "  %ot = transpose(%o, perm=[0, 2, 1, 3]);\n  %om = reshape(%ot, shape=[2, 70, 128]);\n  return %om;\n}\n",
      "(%q: T[3, 150, 32], %kt: T[3, 32, 90], %v: T[3, 90, 64], %r: T[3, 150, 64]) -> (T[3, 150, 64]) {\n"
      "  %s = matmul(%q, %kt);\n  %c = const(value=4.0, dtype=T);\n  %x = div(%s, %c);\n"
      "  %p = softmax(%x);\n  %o = matmul(%p, %v);\n  %y = add(%o, %r);\n  return %y;\n}\n",
      "(%q: T[2, 4, 40, 16], %k: T[2, 1, 40, 16], %v: T[2, 1, 40, 16]) -> (T[2, 4, 40, 16]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %c = const(value=0.25, dtype=T);\n"
      "  %x = mul(%c, %s);\n  %p = softmax(%x, axis=3);\n  %o = matmul(%p, %v);\n  return %o;\n}\n",
      "(%q: T[1, 65, 128], %k: T[1, 129, 128], %v: T[1, 129, 128]) -> (T[1, 65, 128]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %p = softmax(%s);\n  %o = matmul(%p, %v);\n  return %o;\n}\n",
      /* a causal mask computed inline from iotas (MT = 2: 100 queries) */
      "(%q: T[2, 2, 100, 32], %k: T[2, 2, 100, 32], %v: T[2, 2, 100, 32]) -> (T[2, 2, 100, 32]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %c = const(value=0.125, dtype=T);\n  %x = mul(%s, %c);\n"
      "  %qi = iota(shape=[100, 100], axis=0, dtype=i32);\n  %ki = iota(shape=[100, 100], axis=1, dtype=i32);\n"
      "  %fut = gt(%ki, %qi);\n  %ninf = const(value=-inf, dtype=T);\n  %zero = const(value=0.0, dtype=T);\n"
      "  %m = select(%fut, %ninf, %zero);\n  %xm = add(%x, %m);\n  %p = softmax(%xm, axis=-1);\n"
      "  %o = matmul(%p, %v);\n  return %o;\n}\n",
      /* a loaded bias (broadcast over heads and queries) with the first 70 keys at -inf: the
       * whole first key block is -inf for every row */
      "(%q: T[2, 2, 40, 16], %k: T[2, 2, 130, 16], %v: T[2, 2, 130, 16], %mb: T[2, 1, 1, 130]) -> (T[2, 2, 40, 16]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %ki = iota(shape=[40, 130], axis=1, dtype=i32);\n"
      "  %lim = const(value=70, dtype=i32);\n  %pad = lt(%ki, %lim);\n  %ninf = const(value=-inf, dtype=T);\n"
      "  %m1 = select(%pad, %ninf, %mb);\n  %xm = add(%m1, %s);\n  %p = softmax(%xm);\n  %o = matmul(%p, %v);\n"
      "  return %o;\n}\n",
  };
  for (int ci = 0; ci < COUNT(cases); ci++) {
    char *text = graph_of_type(cases[ci], T);
    gc_module *m = parse_ok(text);
    gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
    int found = 0;
    for (int i = 0; i < p->kir->n_kernels; i++)
      found += strstr(p->kernel_ops[i], "softmax") && strstr(p->kernel_ops[i], "matmul");
    ck_assert_msg(found == 1 && p->kir->n_kernels == 1, "case %d (%s): %d kernels, attention %d\n%s", ci, T,
                  p->kir->n_kernels, found, text);
    if (ci == 3) ck_assert(p->kir->kernels[0]->shared_dynamic);
    gc_plan_free(p);
    gc_module_free(m);
    /* q, k (and a mask or residual) small integers: the scores are exact in f16 / bf16
     * (|s| <= 256), so the kernel's f32 scores match the reference's rounded ones; v any values */
    gb kinds = {0};
    for (int i = 0; i < 8; i++) kinds.kinds[i] = i == 2 ? 'x' : 'i';  /* v any values; masks exact too */
    run_case_w(text, 4, ci == 3 ? 1 : 2, NULL, &kinds);  /* takes its text */
  }
}
END_TEST

/* A [sq, sk] const mask's value and shape attributes: 0 for j <= i + off, `neg` above; entry (bi, bj) set to `bad`
 * when bi >= 0 (a wrong entry). */
static char *causal_const(int64_t sq, int64_t sk, int64_t off, const char *neg, int64_t bi, int64_t bj,
                          const char *bad) {
  gc_sbuf b = {0};
  gc_sbuf_puts(&b, "[");
  for (int64_t i = 0; i < sq; i++)
    for (int64_t j = 0; j < sk; j++)
      gc_sbuf_printf(&b, "%s%s", i || j ? ", " : "", i == bi && j == bj ? bad : j <= i + off ? "0.0" : neg);
  gc_sbuf_printf(&b, "], shape=[%lld, %lld]", (long long)sq, (long long)sk);
  return gc_sbuf_take(&b);
}

/* Causal attention (fusion.c + attn_mask.c mark the group, emit_attn.c computes the mask
 * from indices on the diagonal blocks and skips the key blocks above it): const masks
 * ([S, S] and [1, 1, S, S], -inf and finfo.min) and iota / compare / select forms (gt, le,
 * a bottom-right offset Sk - Sq, torch's top-left is_causal with Sq < Sk), Sq = Sk and Sq <
 * Sk, S off the 64-key tile, D = 64 and 128; f16 and bf16. Negative cases keep the mask
 * from memory (or inline) and must still be right: an upper-triangular mask, a causal
 * const with one wrong entry, one with -1 (no large negative) above the diagonal. Each:
 * the kernel's name and the group's offset, its flops (the visible pairs only), the
 * evaluator against the interpreter (run_case_w: sm_90 NVRTC + LLVM through ptxas), and
 * the plan for sm_80 through both paths and ptxas. */
START_TEST(test_matmul_attention_causal) {
  const char *T = _i ? "bf16" : "f16";
  const char *fmin = _i ? "-3.0e38" : "-65504.0";
  char *m70 = causal_const(70, 70, 0, "-inf", -1, 0, NULL);
  char *m70min = causal_const(70, 70, 0, fmin, -1, 0, NULL);
  char *m70bad = causal_const(70, 70, 0, "-inf", 50, 10, "-inf");
  char *m70one = causal_const(70, 70, 0, "-1.0", -1, 0, NULL);
  char *c0, *c1, *n1, *n2;
  const char *qkv70 = "(%q: T[1, 2, 70, 64], %k: T[1, 2, 70, 64], %v: T[1, 2, 70, 64]) -> (T[1, 2, 70, 64]) {\n"
                      "  %s = matmul(%q, %k, transpose_b=true);\n  %c = const(value=0.125, dtype=T);\n"
                      "  %x = mul(%s, %c);\n";
  const char *tail = "  %xm = add(%x, %m);\n  %p = softmax(%xm, axis=-1);\n  %o = matmul(%p, %v);\n  return %o;\n}\n";
  gc_sbuf b = {0};
  gc_sbuf_printf(&b, "%s  %%m = const(value=%s, dtype=T);\n%s", qkv70, m70, tail);
  c0 = gc_sbuf_take(&b);
  gc_sbuf_printf(&b, "%s  %%m2 = const(value=%s, dtype=T);\n  %%m = reshape(%%m2, shape=[1, 1, 70, 70]);\n%s", qkv70,
                 m70min, tail);
  c1 = gc_sbuf_take(&b);
  gc_sbuf_printf(&b, "%s  %%m = const(value=%s, dtype=T);\n%s", qkv70, m70bad, tail);
  n1 = gc_sbuf_take(&b);
  gc_sbuf_printf(&b, "%s  %%m = const(value=%s, dtype=T);\n%s", qkv70, m70one, tail);
  n2 = gc_sbuf_take(&b);
  const struct { const char *text; int causal; int64_t off; } cases[] = {
      {c0, 1, 0},
      {c1, 1, 0},
      /* bottom-right (HF with past keys): Sq 40, Sk 100, offset 60; D 128; -1e4 */
      {"(%q: T[2, 40, 128], %k: T[2, 100, 128], %v: T[2, 100, 128]) -> (T[2, 40, 128]) {\n"
       "  %s = matmul(%q, %k, transpose_b=true);\n  %c = const(value=0.125, dtype=T);\n  %x = mul(%s, %c);\n"
       "  %qi = iota(shape=[40, 100], axis=0, dtype=i64);\n  %ki = iota(shape=[40, 100], axis=1, dtype=i64);\n"
       "  %d = const(value=60, dtype=i64);\n  %qd = add(%qi, %d);\n  %fut = gt(%ki, %qd);\n"
       "  %neg = const(value=-10000.0, dtype=T);\n  %zero = const(value=0.0, dtype=T);\n"
       "  %m = select(%fut, %neg, %zero);\n  %xm = add(%x, %m);\n  %p = softmax(%xm, axis=-1);\n"
       "  %o = matmul(%p, %v);\n  return %o;\n}\n", 1, 60},
      /* top-left (torch is_causal) with Sq < Sk, the le form, broadcast [1, 1, S, S]; no scale */
      {"(%q: T[1, 2, 40, 64], %k: T[1, 2, 130, 64], %v: T[1, 2, 130, 64]) -> (T[1, 2, 40, 64]) {\n"
       "  %s = matmul(%q, %k, transpose_b=true);\n"
       "  %qi = iota(shape=[40, 130], axis=0, dtype=i32);\n  %ki = iota(shape=[40, 130], axis=1, dtype=i32);\n"
       "  %vis = le(%ki, %qi);\n  %ninf = const(value=-inf, dtype=T);\n  %zero = const(value=0.0, dtype=T);\n"
       "  %m2 = select(%vis, %zero, %ninf);\n  %m = reshape(%m2, shape=[1, 1, 40, 130]);\n"
       "  %xm = add(%m, %s);\n  %p = softmax(%xm, axis=-1);\n  %o = matmul(%p, %v);\n  return %o;\n}\n", 1, 0},
      /* Sq = Sk = 130 (MT 2, three key blocks, the last one partial) */
      {"(%q: T[2, 130, 64], %k: T[2, 130, 64], %v: T[2, 130, 64]) -> (T[2, 130, 64]) {\n"
       "  %s = matmul(%q, %k, transpose_b=true);\n  %c = const(value=0.125, dtype=T);\n  %x = mul(%s, %c);\n"
       "  %qi = iota(shape=[130, 130], axis=0, dtype=i32);\n  %ki = iota(shape=[130, 130], axis=1, dtype=i32);\n"
       "  %fut = gt(%ki, %qi);\n  %ninf = const(value=-inf, dtype=T);\n  %zero = const(value=0.0, dtype=T);\n"
       "  %m = select(%fut, %ninf, %zero);\n  %xm = add(%x, %m);\n  %p = softmax(%xm, axis=-1);\n"
       "  %o = matmul(%p, %v);\n  return %o;\n}\n", 1, 0},
      /* negative: upper triangular (keys before the row masked) */
      {"(%q: T[1, 2, 70, 64], %k: T[1, 2, 70, 64], %v: T[1, 2, 70, 64]) -> (T[1, 2, 70, 64]) {\n"
       "  %s = matmul(%q, %k, transpose_b=true);\n"
       "  %qi = iota(shape=[70, 70], axis=0, dtype=i32);\n  %ki = iota(shape=[70, 70], axis=1, dtype=i32);\n"
       "  %past = lt(%ki, %qi);\n  %ninf = const(value=-inf, dtype=T);\n  %zero = const(value=0.0, dtype=T);\n"
       "  %m = select(%past, %ninf, %zero);\n  %xm = add(%s, %m);\n  %p = softmax(%xm, axis=-1);\n"
       "  %o = matmul(%p, %v);\n  return %o;\n}\n", 0, 0},
      {n1, 0, 0},
      {n2, 0, 0},
  };
  for (int ci = 0; ci < COUNT(cases); ci++) {
    char *text = graph_of_type(cases[ci].text, T);
    gc_module *m = parse_ok(text);
    gc_graph *g = m->graphs[0];
    kir_target t;
    kir_target_cuda(&t, 90);
    gc_fusion *f = gc_fusion_plan(g, &t, 1);
    ck_assert_ptr_nonnull(f);
    int att = -1;
    for (int i = 0; i < f->n_groups; i++)
      if (f->groups[i].kind == GC_FUSION_ATTENTION) att = i;
    ck_assert_msg(att >= 0, "case %d (%s): no attention group\n%s", ci, T, text);
    const gc_fusion_group *grp = &f->groups[att];
    ck_assert_msg(grp->causal == cases[ci].causal && (!grp->causal || grp->causal_off == cases[ci].off),
                  "case %d (%s): causal %d offset %lld\n%s", ci, T, grp->causal, (long long)grp->causal_off, text);
    ck_assert_msg(!strncmp(grp->name, "fusion_causal_", 14) == !!cases[ci].causal, "case %d: %s", ci, grp->name);
    gc_fusion_free(f);
    gc_plan *p = lower_ok(g, NULL, KIR_TARGET_CUDA);
    ck_assert_msg(p->kir->n_kernels == 1, "case %d (%s): %d kernels\n%s", ci, T, p->kir->n_kernels, text);
    const kir_kernel *k0 = p->kir->kernels[0];
    ck_assert_msg(!strncmp(k0->name, "fusion_causal_", 14) == !!cases[ci].causal, "case %d: kernel %s", ci, k0->name);
    if (cases[ci].causal) {  /* flops: the (row, key) pairs each row sees */
      gc_mm_shape s;
      gc_mm_shape_of(g->outputs[0]->def, &s);
      double pairs = 0;
      for (int64_t i = 0; i < s.M; i++) pairs += (double)(i + cases[ci].off + 1 < s.K ? i + cases[ci].off + 1 : s.K);
      double want = 2.0 * (double)s.batch * pairs * (double)(2 * s.N);
      ck_assert_msg(fabs(k0->flops - want) < 0.5, "case %d: flops %g, want %g", ci, k0->flops, want);
    }
    gc_plan_free(p);
    /* sm_80: mma.sync without the Hopper paths, through NVRTC / LLVM and ptxas */
    kir_target_cuda(&t, 80);
    gc_settings_apply_target(tu_settings(), &t);
    gc_diags d;
    gc_diags_init(&d, "case.graph", NULL, 0);
    p = gc_lower_opts(g, &t, 1, &d);
    ck_assert_msg(p && !gc_plan_bind_weights(p, NULL, &d), "case %d: sm_80 lowering failed", ci);
    gc_diags_free(&d);
    ck_assert_msg(p->kir->n_kernels == 1 && !strncmp(p->kir->kernels[0]->name, "fusion_causal_", 14) == !!cases[ci].causal,
                  "case %d: sm_80 plan", ci);
    pc_compile_plan_sm(p, "sm_80 causal attention", 80);
    gc_plan_free(p);
    gc_module_free(m);
    /* q, k small integers (exact f16 / bf16 scores, as in test_matmul_attention); v any values */
    gb kinds = {0};
    for (int i = 0; i < 8; i++) kinds.kinds[i] = i == 2 ? 'x' : 'i';
    run_case_w(text, 4, 2, NULL, &kinds);  /* takes its text */
  }
  free(c0);
  free(c1);
  free(n1);
  free(n2);
  free(m70);
  free(m70min);
  free(m70bad);
  free(m70one);
}
END_TEST

/* Causal attention with a key-padding mask beside the causal one (attn_mask.c,
 * gc_attn_causal_resid): the group is causal (blocks above the diagonal skipped) and the
 * kernel still reads the residual. HF GPT-2's select(and(causal, padding), 0, -inf) with
 * torch SDPA's NaN guard, over Sq = Sk = 130 (a partial last key block), the padding a
 * random bool input whose batch entry 1 is padded entirely (`keep`: every row of it gives
 * 0; in batch 0 the rows before the first kept key do too); the masked_fill form
 * select(or(future, not padding), -inf, 0) with a bottom-right offset (Sq 40, Sk 100, D 128);
 * a sum of additive masks (causal + a loaded bias). Each: the group's offset and residual,
 * the kernel's name and flops (the visible pairs only), sm_80 through both paths and
 * ptxas, and the evaluator against the interpreter (run_case_w). */
START_TEST(test_matmul_attention_causal_padding) {
  const char *T = _i ? "bf16" : "f16";
  const struct { const char *text; int64_t off; int sel; } cases[] = {
      {"(%q: T[2, 2, 130, 64], %k: T[2, 2, 130, 64], %v: T[2, 2, 130, 64], %am: bool[2, 1, 1, 130]) -> (T[2, 2, 130, 64]) {\n"
       "  %s = matmul(%q, %k, transpose_b=true);\n  %c = const(value=0.125, dtype=T);\n  %x = mul(%s, %c);\n"
       "  %keep = const(value=[true, false], shape=[2, 1, 1, 1], dtype=bool);\n  %pad = and(%am, %keep);\n"
       "  %qi = iota(shape=[1, 1, 130, 130], axis=2, dtype=i64);\n  %ki = iota(shape=[1, 1, 130, 130], axis=3, dtype=i64);\n"
       "  %vis = ge(%qi, %ki);\n  %mb = and(%vis, %pad);\n  %zero = const(value=0.0, shape=[1], dtype=T);\n"
       "  %ninf = const(value=-inf, shape=[1], dtype=T);\n  %m = select(%mb, %zero, %ninf);\n  %xm = add(%x, %m);\n"
       "  %p = softmax(%xm, axis=-1);\n  %nan = ne(%p, %p);\n  %g = select(%nan, %zero, %p);\n"
       "  %o = matmul(%g, %v);\n  return %o;\n}\n", 0, 1},
      {"(%q: T[2, 40, 128], %k: T[2, 100, 128], %v: T[2, 100, 128], %am: bool[2, 1, 100]) -> (T[2, 40, 128]) {\n"
       "  %s = matmul(%q, %k, transpose_b=true);\n  %c = const(value=0.125, dtype=T);\n  %x = mul(%s, %c);\n"
       "  %keep = const(value=[true, false], shape=[2, 1, 1], dtype=bool);\n  %pad = and(%am, %keep);\n"
       "  %qi = iota(shape=[40, 100], axis=0, dtype=i32);\n  %ki = iota(shape=[40, 100], axis=1, dtype=i32);\n"
       "  %d = const(value=60, dtype=i32);\n  %qd = add(%qi, %d);\n  %fut = gt(%ki, %qd);\n  %npad = not(%pad);\n"
       "  %h = or(%fut, %npad);\n  %ninf = const(value=-inf, dtype=T);\n  %zero = const(value=0.0, dtype=T);\n"
       "  %m = select(%h, %ninf, %zero);\n  %xm = add(%x, %m);\n  %p = softmax(%xm, axis=-1);\n"
       "  %nan = ne(%p, %p);\n  %g = select(%nan, %zero, %p);\n  %o = matmul(%g, %v);\n  return %o;\n}\n", 60, 1},
      {"(%q: T[2, 2, 70, 64], %k: T[2, 2, 70, 64], %v: T[2, 2, 70, 64], %bias: T[2, 1, 1, 70]) -> (T[2, 2, 70, 64]) {\n"
       "  %s = matmul(%q, %k, transpose_b=true);\n"
       "  %qi = iota(shape=[70, 70], axis=0, dtype=i32);\n  %ki = iota(shape=[70, 70], axis=1, dtype=i32);\n"
       "  %fut = gt(%ki, %qi);\n  %neg = const(value=-10000.0, dtype=T);\n  %zero = const(value=0.0, dtype=T);\n"
       "  %cm = select(%fut, %neg, %zero);\n  %m = add(%bias, %cm);\n  %xm = add(%s, %m);\n"
       "  %p = softmax(%xm, axis=-1);\n  %o = matmul(%p, %v);\n  return %o;\n}\n", 0, 0},
  };
  for (int ci = 0; ci < COUNT(cases); ci++) {
    char *text = graph_of_type(cases[ci].text, T);
    gc_module *m = parse_ok(text);
    gc_graph *g = m->graphs[0];
    kir_target t;
    kir_target_cuda(&t, 90);
    gc_fusion *f = gc_fusion_plan(g, &t, 1);
    ck_assert_ptr_nonnull(f);
    int att = -1;
    for (int i = 0; i < f->n_groups; i++)
      if (f->groups[i].kind == GC_FUSION_ATTENTION) att = i;
    ck_assert_msg(att >= 0, "case %d (%s): no attention group\n%s", ci, T, text);
    const gc_fusion_group *grp = &f->groups[att];
    ck_assert_msg(grp->causal && grp->causal_off == cases[ci].off && grp->resid.v && grp->resid.sel == cases[ci].sel,
                  "case %d (%s): causal %d offset %lld residual %p sel %d\n%s", ci, T, grp->causal,
                  (long long)grp->causal_off, (const void *)grp->resid.v, grp->resid.sel, text);
    ck_assert_msg(!strncmp(grp->name, "fusion_causal_", 14), "case %d: %s", ci, grp->name);
    gc_fusion_free(f);
    gc_plan *p = lower_ok(g, NULL, KIR_TARGET_CUDA);
    int found = -1;
    for (int i = 0; i < p->kir->n_kernels; i++)
      if (!strncmp(p->kir->kernels[i]->name, "fusion_causal_", 14)) found = i;
    ck_assert_msg(found >= 0, "case %d (%s): no causal kernel\n%s", ci, T, text);
    const kir_kernel *k0 = p->kir->kernels[found];
    gc_mm_shape s;
    gc_mm_shape_of(g->outputs[0]->def, &s);
    double pairs = 0;
    for (int64_t i = 0; i < s.M; i++) pairs += (double)(i + cases[ci].off + 1 < s.K ? i + cases[ci].off + 1 : s.K);
    double want = 2.0 * (double)s.batch * pairs * (double)(2 * s.N);
    ck_assert_msg(fabs(k0->flops - want) < 0.5, "case %d: flops %g, want %g", ci, k0->flops, want);
    gc_plan_free(p);
    kir_target_cuda(&t, 80);
    gc_settings_apply_target(tu_settings(), &t);
    gc_diags d;
    gc_diags_init(&d, "case.graph", NULL, 0);
    p = gc_lower_opts(g, &t, 1, &d);
    ck_assert_msg(p && !gc_plan_bind_weights(p, NULL, &d), "case %d: sm_80 lowering failed", ci);
    gc_diags_free(&d);
    pc_compile_plan_sm(p, "sm_80 causal attention with padding", 80);
    gc_plan_free(p);
    gc_module_free(m);
    gb kinds = {0};
    for (int i = 0; i < 8; i++) kinds.kinds[i] = i == 2 ? 'x' : 'i';
    run_case_w(text, 4, 2, NULL, &kinds);  /* takes its text */
  }
}
END_TEST

/* Chains the attention fusion must leave alone (unfused kernels, still correct): a head dim
 * that is no power of two, f32, a softmax over another axis, a scale that is no constant,
 * scores that are returned too, a mask the scores broadcast into; and GRAPHC_FLASH=0. */
START_TEST(test_matmul_attention_declined) {
  static const char *const cases[] = {
      "(%q: f16[2, 40, 48], %k: f16[2, 40, 48], %v: f16[2, 40, 48]) -> (f16[2, 40, 48]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %p = softmax(%s);\n  %o = matmul(%p, %v);\n  return %o;\n}\n",
      "(%q: f32[2, 40, 32], %k: f32[2, 40, 32], %v: f32[2, 40, 32]) -> (f32[2, 40, 32]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %p = softmax(%s);\n  %o = matmul(%p, %v);\n  return %o;\n}\n",
      "(%q: f16[40, 32], %k: f16[40, 32], %v: f16[40, 32]) -> (f16[40, 32]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %p = softmax(%s, axis=0);\n  %o = matmul(%p, %v);\n  return %o;\n}\n",
      "(%q: f16[40, 32], %k: f16[40, 32], %v: f16[40, 32], %c: f16[]) -> (f16[40, 32]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %x = mul(%s, %c);\n  %p = softmax(%x);\n  %o = matmul(%p, %v);\n"
      "  return %o;\n}\n",
      "(%q: f16[40, 32], %k: f16[40, 32], %v: f16[40, 32]) -> (f16[40, 32], f16[40, 40]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %p = softmax(%s);\n  %o = matmul(%p, %v);\n  return %o, %s;\n}\n",
      "(%q: f16[40, 32], %k: f16[40, 32], %v: f16[2, 40, 32], %m: f16[2, 40, 40]) -> (f16[2, 40, 32]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %x = add(%s, %m);\n  %p = softmax(%x);\n  %o = matmul(%p, %v);\n"
      "  return %o;\n}\n",
      /* the canonical chain, with the fusion turned off */
      "(%q: f16[2, 40, 32], %k: f16[2, 40, 32], %v: f16[2, 40, 32]) -> (f16[2, 40, 32]) {\n"
      "  %s = matmul(%q, %k, transpose_b=true);\n  %p = softmax(%s);\n  %o = matmul(%p, %v);\n  return %o;\n}\n",
  };
  for (int ci = 0; ci < COUNT(cases); ci++) {
    int off = ci == COUNT(cases) - 1;
    if (off) setenv("GRAPHC_FLASH", "0", 1);
    char *text = graph_of_type(cases[ci], "f16");
    gc_module *m = parse_ok(text);
    gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
    for (int i = 0; i < p->kir->n_kernels; i++)
      ck_assert_msg(!(strstr(p->kernel_ops[i], "softmax") && strstr(p->kernel_ops[i], "matmul")),
                    "case %d: an attention kernel (%s)\n%s", ci, p->kernel_ops[i], text);
    gc_plan_free(p);
    gc_module_free(m);
    /* q, k, the scale and the mask small integers, as in test_matmul_attention: f16 scores of
     * random reals (|s| ~ 60, an ulp of 0.03) round differently for the kernel's f32 sums than
     * for the reference's f64 ones now and then, and softmax turns one such ulp into a 3% change */
    gb kinds = {0};
    for (int i = 0; i < 8; i++) kinds.kinds[i] = i == 2 ? 'x' : 'i';
    run_case_w(text, 4, 2, NULL, &kinds);  /* takes its text */
    if (off) unsetenv("GRAPHC_FLASH");
  }
}
END_TEST

/* The register-blocked f32 kernel (emit_linalg.c mm_simt: 8x8 or 4x4 accumulators per
 * thread, two shared stages of 8-deep K tiles) on the evaluator: 64-wide tiles (the grid of
 * 128-wide ones would leave SMs idle) with a bias + relu epilogue and K, M, N off the
 * tiles; 128-wide tiles (one SM) with B transposed, without and with a GELU epilogue;
 * a broadcast batch with A transposed (m contiguous); a transposed view of a head split as
 * B. An epilogue goes out through the rows loop that moves the accumulators up. */
START_TEST(test_matmul_simt) {
  static const struct { const char *body; int sms, bm, epi; } cases[] = {
      {"(%a: f32[200, 75], %b: f32[75, 136], %c: f32[136]) -> (f32[200, 136]) {\n"
       "  %y = matmul(%a, %b);\n  %z = add(%y, %c);\n  %r = relu(%z);\n  return %r;\n}\n", 0, 64, 1},
      {"(%a: f32[130, 40], %b: f32[131, 40]) -> (f32[130, 131]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 1, 128, 0},
      {"(%a: f32[130, 40], %b: f32[131, 40]) -> (f32[130, 131]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  %t = gelu(%y, approximate=\"tanh\");\n  return %t;\n}\n", 1,
       128, 1},
      {"(%a: f32[2, 1, 24, 70], %b: f32[3, 24, 66]) -> (f32[2, 3, 70, 66]) {\n"
       "  %y = matmul(%a, %b, transpose_a=true);\n  return %y;\n}\n", 0, 64, 0},
      {"(%x: f32[1, 80, 128], %k: f32[1, 80, 128]) -> (f32[1, 2, 80, 80]) {\n"
       "  %x4 = reshape(%x, shape=[1, 80, 2, 64]);\n  %xh = transpose(%x4, perm=[0, 2, 1, 3]);\n"
       "  %k4 = reshape(%k, shape=[1, 80, 2, 64]);\n  %kh = transpose(%k4, perm=[0, 2, 1, 3]);\n"
       "  %s = matmul(%xh, %kh, transpose_b=true);\n  return %s;\n}\n", 0, 64, 0},
  };
  for (int run = 0; run < 2 * COUNT(cases); run++) {
    /* each case twice: its K tile stepped in a loop (these matmuls are all small), then
     * unrolled (kir_target.simt_unroll_macs 1) */
    const int ci = run / 2, unrolled = run % 2;
    g_simt_unroll_macs = unrolled;
    char *text = malloc(2048);
    snprintf(text, 2048, "version 1;\ngraph @g%s", cases[ci].body);
    g_tc_sms = cases[ci].sms;
    gc_module *m = parse_ok(text);
    gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
    const kir_kernel *k0 = p->kir->kernels[0];
    ck_assert_msg(p->kir->n_kernels == 1 && k0->launch.block == 256 && k0->n_shared == 2 &&
                      k0->shared[0].count == 2 * 8 * cases[ci].bm,
                  "case %d: %d kernels, block %d, %d shared arrays\n%s", ci, p->kir->n_kernels, k0->launch.block,
                  k0->n_shared, text);
    /* an epilogue goes through the rows loop, kept a loop (emit_linalg.c mm_simt) */
    const kir_stmt *last = k0->body.tail;
    int epi = cases[ci].epi;
    ck_assert_msg(last && (last->kind == KIR_S_FOR) == epi && (!epi || last->u.loop.nounroll),
                  "case %d: the epilogue %s a nounroll rows loop", ci, epi ? "is not" : "is");
    /* the K-tile loop: its body holds a nounroll loop of 4 two-deep steps, or none */
    const kir_stmt *kt = NULL;
    for (const kir_stmt *st = k0->body.head; st; st = st->next)
      if (st->kind == KIR_S_FOR && !st->u.loop.nounroll) kt = st;
    ck_assert_msg(kt, "case %d: no K-tile loop", ci);
    const kir_stmt *kq = NULL;
    for (const kir_stmt *st = kt->u.loop.body.head; st; st = st->next)
      if (st->kind == KIR_S_FOR) kq = st;
    ck_assert_msg(unrolled ? !kq : kq && kq->u.loop.nounroll && kq->u.loop.hi->kind == KIR_E_CONST &&
                                       kq->u.loop.hi->u.i == 4,
                  "case %d: the K tile %s a loop of 4 steps", ci, unrolled ? "is" : "is not");
    gc_plan_free(p);
    gc_module_free(m);
    run_case_kind(text, 1, 'x');  /* takes its text */
  }
  g_tc_sms = 0;
  g_wgmma_short_k = 0;
  g_simt_unroll_macs = 0;
}
END_TEST

/* g lowered for sm with tf32 allowed, on `sms` SMs, operands rounded when `round`. */
static gc_plan *lower_tf32(const gc_graph *g, int sm, int sms, int round) {
  kir_target t;
  kir_target_cuda(&t, sm);
  t.tf32 = 1;
  t.tf32_round = round;
  t.num_sms = sms;
  gc_diags d;
  gc_diags_init(&d, "case.graph", NULL, 0);
  gc_plan *p = gc_lower_opts(g, &t, 1, &d);
  ck_assert_msg(p != NULL, "lowering failed");
  gc_diags_free(&d);
  return p;
}

/* tf32 tensor cores for f32 matmuls (kir_target.tf32, opt-in): the same layouts as
 * above; the results carry tf32's 10-bit mantissa, so they are compared by relative
 * L2 error and by the largest error relative to the largest output. _i 0: sm_80 (the
 * mma.sync kernel); 1 and 2: sm_90, the transposed wgmma kernel (emit_wgmma.c: every case
 * but A transposed) on one SM (its largest tiles, 256x128 on the first case: rows and
 * columns past M and N, an odd number of K tiles) and on 132 (its smaller tiles). */
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
      "(%a: f32[96, 40], %b: f32[40, 64], %c: f32[64]) -> (f32[96, 64]) {\n"
      "  %y = matmul(%a, %b);\n  %z = add(%y, %c);\n  %r = gelu(%z);\n  return %r;\n}\n",
      "(%a: f32[64, 36], %b: f32[200, 36]) -> (f16[64, 200]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  %h = cast(%y, to=f16);\n  return %h;\n}\n",
  };
  const int sm = _i ? 90 : 80;
  for (int ci = 0; ci < COUNT(cases); ci++) {
    char text[2048];
    snprintf(text, sizeof text, "version 1;\ngraph @g%s", cases[ci]);
    gc_module *m = parse_ok(text);
    gc_graph *g = m->graphs[0];
    gc_plan *p = lower_tf32(g, sm, _i == 2 ? 132 : 1, 1);
    gc_diags d;
    ck_assert_msg(plan_uses_tc(p), "case %d: no tensor cores\n%s", ci, text);
    int wg_want = sm == 90 && !strstr(cases[ci], "transpose_a");
    ck_assert_msg(kir_module_uses_wgmma(p->kir) == wg_want, "case %d (sm_%d): wgmma %s\n%s", ci, sm,
                  wg_want ? "missing" : "unexpected", text);
    pc_compile_plan(p, "cuda plan");
    graphc_tensor_t in[4], ref[1];
    unsigned char *ins[4], *got[1];
    uint64_t seed = g_seed + (uint64_t)ci;
    for (int i = 0; i < g->n_args; i++) {
      const gc_type *ty_ = &g->args[i]->type;
      memset(&in[i], 0, sizeof in[i]);
      tu_tensor_of_type(&in[i], ty_);
      tu_fill(in[i].data, ty_->dtype, gc_type_numel(ty_), 'x', 0, &seed);
      ins[i] = in[i].data;
    }
    const gc_type *ot = &g->outputs[0]->type;
    int64_t n = gc_type_numel(ot);
    memset(&ref[0], 0, sizeof ref[0]);
    tu_tensor_of_type(&ref[0], ot);
    got[0] = calloc(1, ref[0].nbytes);
    gc_diags_init(&d, "case.graph", text, strlen(text));
    ck_assert_int_eq(gc_interp_run(g, NULL, in, g->n_args, ref, 1, &d), GRAPHC_STATUS_OK);
    gc_diags_free(&d);
    const char *err = ev_run_plan(p, ins, got);
    ck_assert_msg(err == NULL, "case %d: %s", ci, err ? err : "");
    double e2 = 0, r2 = 0, emax = 0, rmax = 0;
    for (int64_t i = 0; i < n; i++) {
      double rv = gc_load_f64(ref[0].data, ot->dtype, i), gv = gc_load_f64(got[0], ot->dtype, i);
      double e = gv - rv;
      e2 += e * e;
      r2 += rv * rv;
      emax = fmax(emax, fabs(e));
      rmax = fmax(rmax, fabs(rv));
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

/* tf32 operands are rounded to nearest (KIR_TF32_ROUND) before the MMA; the evaluator reads
 * tf32 fragments truncated, as the tensor cores do. With every input in [1, 2), truncation
 * shrinks each product by about 6.5e-4 on average, rounding leaves no bias: the mean signed
 * relative error over the outputs is below 1.5e-4 with kir_target.tf32_round, and below
 * -3e-4 without it (so the check can fail). _i 0: sm_80 (mma.sync); 1: sm_90 (the wgmma
 * kernel, A rounded in shared memory, B^T in registers). */
START_TEST(test_matmul_tf32_rounding) {
  static const char *const cases[] = {
      "(%a: f32[128, 512], %b: f32[512, 128]) -> (f32[128, 128]) {\n"
      "  %y = matmul(%a, %b);\n  return %y;\n}\n",
      "(%a: f32[96, 264], %b: f32[64, 264]) -> (f32[96, 64]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n",
  };
  const int sm = _i ? 90 : 80;
  for (int ci = 0; ci < COUNT(cases); ci++) {
    char text[1024];
    snprintf(text, sizeof text, "version 1;\ngraph @g%s", cases[ci]);
    gc_module *m = parse_ok(text);
    gc_graph *g = m->graphs[0];
    graphc_tensor_t in[2], ref[1];
    unsigned char *ins[2], *got[1];
    uint64_t s = (g_seed + (uint64_t)ci) | 1;
    for (int i = 0; i < 2; i++) {
      memset(&in[i], 0, sizeof in[i]);
      tu_tensor_of_type(&in[i], &g->args[i]->type);
      float *p = in[i].data;
      for (int64_t j = 0; j < gc_type_numel(&g->args[i]->type); j++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        p[j] = 1.0f + (float)(s >> 40) / (float)(1 << 24);
      }
      ins[i] = in[i].data;
    }
    const gc_type *ot = &g->outputs[0]->type;
    int64_t n = gc_type_numel(ot);
    memset(&ref[0], 0, sizeof ref[0]);
    tu_tensor_of_type(&ref[0], ot);
    got[0] = calloc(1, ref[0].nbytes);
    gc_diags d;
    gc_diags_init(&d, "case.graph", text, strlen(text));
    ck_assert_int_eq(gc_interp_run(g, NULL, in, 2, ref, 1, &d), GRAPHC_STATUS_OK);
    gc_diags_free(&d);
    for (int round = 1; round >= 0; round--) {
      gc_plan *p = lower_tf32(g, sm, 132, round);
      ck_assert_msg(plan_uses_tc(p) && kir_module_uses_wgmma(p->kir) == (sm == 90), "case %d: kernel\n%s", ci, text);
      if (round) pc_compile_plan(p, "cuda plan");
      const char *err = ev_run_plan(p, ins, got);
      ck_assert_msg(err == NULL, "case %d: %s", ci, err ? err : "");
      double mean = 0;
      for (int64_t i = 0; i < n; i++) {
        double rv = gc_load_f64(ref[0].data, ot->dtype, i), gv = gc_load_f64(got[0], ot->dtype, i);
        mean += (gv - rv) / rv;
      }
      mean /= (double)n;
      ck_assert_msg(round ? fabs(mean) < 1.5e-4 : mean < -3e-4,
                    "case %d (sm_%d, tf32_round %d): mean relative error %.3g (seed %llu)\n%s", ci, sm, round, mean,
                    (unsigned long long)g_seed, text);
      gc_plan_free(p);
    }
    for (int i = 0; i < 2; i++) free(in[i].data);
    free(ref[0].data);
    free(got[0]);
    gc_module_free(m);
  }
}
END_TEST

/* Matmuls of at most 8 rows against a K-contiguous B (emit_gemv.c): on CUDA one kernel of
 * 128-thread blocks without shared memory, on the host an item per column; the values on the evaluator (both targets, fused
 * and not, through run_case_kind) for f32, f16 and bf16 (_i): whole rounds of four vectors per
 * lane and a tail, rows of fewer than 32 vectors (lane groups of 8 or 16 columns a warp),
 * batches with a broadcast, eight rows, A read through the generator (transpose_a), a fused
 * epilogue. */
START_TEST(test_matmul_gemv) {
  static const char *const dts[] = {"f32", "f16", "bf16"};
  static const char *const cases[] = {
      "(%a: T[1, 1024], %b: T[600, 1024]) -> (T[1, 600]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n",
      "(%a: T[5, 40], %b: T[33, 40]) -> (T[5, 33]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n",
      "(%a: T[2, 3, 264], %b: T[2, 70, 264]) -> (T[2, 3, 70]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n",
      "(%a: T[2, 1, 1, 64], %b: T[3, 20, 64]) -> (T[2, 3, 1, 20]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n",
      "(%a: T[8, 520], %b: T[3, 520]) -> (T[8, 3]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n",
      "(%a: T[72, 2], %b: T[9, 72]) -> (T[2, 9]) {\n"
      "  %y = matmul(%a, %b, transpose_a=true, transpose_b=true);\n  return %y;\n}\n",
      "(%a: T[1, 256], %b: T[64, 256], %c: T[64]) -> (T[1, 64]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  %z = add(%y, %c);\n  %g = gelu(%z);\n  return %g;\n}\n",
  };
  for (int ci = 0; ci < COUNT(cases); ci++) {
    char *text = graph_of_type(cases[ci], dts[_i]);
    gc_module *m = parse_ok(text);
    gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
    const kir_kernel *k0 = p->kir->kernels[0];
    ck_assert_msg(p->kir->n_kernels == 1 && k0->launch.kind == KIR_LAUNCH_BLOCKS && k0->launch.block == 128 &&
                      k0->n_shared == 0,
                  "case %d (%s): %d kernels, block %d, %d shared arrays: not the gemv kernel\n%s", ci, dts[_i],
                  p->kir->n_kernels, k0->launch.block, k0->n_shared, text);
    gc_plan_free(p);
    /* the host's: an item per output column of each batch, no scratch (the register-tiled
     * matmul packs panels or tiles rows x columns) */
    gc_mm_shape s;
    gc_mm_shape_of(m->graphs[0]->outputs[0]->def, &s);
    p = lower_ok(m->graphs[0], NULL, KIR_TARGET_HOST);
    k0 = p->kir->kernels[0];
    ck_assert_msg(p->kir->n_kernels == 1 && k0->launch.kind == KIR_LAUNCH_ITEMS && k0->launch.n == s.batch * s.N &&
                      k0->n_scratch == 0,
                  "case %d (%s): host kernel of %lld items, %d scratch arrays: not the gemv kernel\n%s", ci, dts[_i],
                  (long long)k0->launch.n, k0->n_scratch, text);
    gc_plan_free(p);
    gc_module_free(m);
    run_case_kind(text, 1, 'x');  /* takes its text */
  }
}
END_TEST

/* 8-bit matmuls (two f8e4m3 / f8e5m2 operands into f32, two i8 / u8 ones into i32, ir/infer.c):
 * on sm_90 the warpgroup kernel with both operands K-major (B stored N x K), 128 values of K per
 * 128-byte tile row, wgmma.m64nNk32 (A's and B's kinds may differ; i32 accumulators for the
 * integers), TMA or cp.async stages; the scales a dequantization leaves (passes/qdq_fold.c) and a
 * cast in the epilogue. B stored K x N, K not a multiple of 16 or fewer than 64 rows take the
 * CUDA-core kernels, converting on load; the host converts too. _i: e4m3 x e4m3 with TMA, e5m2 x
 * e5m2, e4m3 x e5m2 with cp.async, i8 x i8, u8 x u8 with cp.async (u8 x i8 would need PTX ISA
 * 8.4: CUDA cores, checked in test_backend_ops). Operands in [-3, 3] ('k'; u8 [0, 3]). */
START_TEST(test_matmul_8bit) {
  static const char *const at[] = {"f8e4m3", "f8e5m2", "f8e4m3", "i8", "u8"};
  static const char *const bt[] = {"f8e4m3", "f8e5m2", "f8e5m2", "i8", "u8"};
  const char *rt = _i >= 3 ? "i32" : "f32";
  g_no_tma = _i == 2 || _i == 4;
  static const struct { const char *body; int wgmma; } cases[] = {
      {"(%a: A[128, 96], %b: B[200, 96]) -> (R[128, 200]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 1},
      {"(%a: A[130, 256], %b: B[72, 256], %s: f32[130, 1], %t: f32[72]) -> (f16[130, 72]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  %f = cast(%y, to=f32);\n  %z = mul(%f, %s);\n"
       "  %w = mul(%z, %t);\n  %h = cast(%w, to=f16);\n  return %h;\n}\n", 1},
      {"(%a: A[2, 70, 160], %b: B[2, 136, 160]) -> (R[2, 70, 136]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 1},
      {"(%a: A[64, 64], %b: B[64, 72]) -> (R[64, 72]) {\n"
       "  %y = matmul(%a, %b);\n  return %y;\n}\n", 0},
      {"(%a: A[64, 40], %b: B[64, 40]) -> (R[64, 64]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 0},
      {"(%a: A[4, 128], %b: B[96, 128]) -> (R[4, 96]) {\n"
       "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n", 0},
  };
  for (int ci = 0; ci < COUNT(cases); ci++) {
    gc_sbuf sb = {0};
    gc_sbuf_puts(&sb, "version 1;\ngraph @g");
    for (const char *q = cases[ci].body; *q; q++)
      if ((*q == 'A' || *q == 'B' || *q == 'R') && q[1] == '[')
        gc_sbuf_puts(&sb, *q == 'A' ? at[_i] : *q == 'B' ? bt[_i] : rt);
      else
        gc_sbuf_putc(&sb, *q);
    char *text = gc_sbuf_take(&sb);
    gc_module *m = parse_ok(text);
    gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
    const kir_kernel *k0 = p->kir->kernels[0];
    ck_assert_msg(kir_module_uses_wgmma(p->kir) == cases[ci].wgmma, "case %d (%s x %s): wgmma %d expected\n%s", ci,
                  at[_i], bt[_i], cases[ci].wgmma, text);
    if (cases[ci].wgmma) {
      int tmaps = 0;
      for (int i = 0; i < k0->n_params; i++) tmaps += k0->params[i].kind == KIR_PARAM_TMAP;
      ck_assert_msg(tmaps == (g_no_tma ? 0 : 2), "case %d: %d tensor maps", ci, tmaps);
      ck_assert_msg(p->kir->n_kernels == 1, "case %d: the epilogue not fused (%d kernels)", ci, p->kir->n_kernels);
    }
    gc_plan_free(p);
    gc_module_free(m);
    run_case_kind(text, 1, 'k');  /* takes its text */
  }
  g_no_tma = 0;
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------------------ */

/* One test per dtype, all in tcase "matmul" (CK_RUN_CASE=matmul); GRAPHC_TEST_ONLY=NAME
 * runs only the test named test_matmul_NAME (or test_matmul for "matmul"). */
static int only(const char *name) {
  const char *o = getenv("GRAPHC_TEST_ONLY");
  return !o || !*o || strcmp(o, name) == 0;
}

static Suite *lower_matmul_suite(void) {
  Suite *s = suite_create("lower_matmul");
  TCase *tc = tcase_create("matmul");
  tcase_set_timeout(tc, 600);
  if (only("matmul")) tcase_add_loop_test(tc, test_matmul, 0, COUNT(NUMERIC));
  if (only("tensor_core")) tcase_add_loop_test(tc, test_matmul_tensor_core, 0, 2);
  if (only("wgmma")) tcase_add_loop_test(tc, test_matmul_wgmma, 0, 4);
  if (only("attention")) tcase_add_loop_test(tc, test_matmul_attention, 0, 2);
  if (only("attention_declined")) tcase_add_test(tc, test_matmul_attention_declined);
  if (only("attention_causal")) tcase_add_loop_test(tc, test_matmul_attention_causal, 0, 2);
  if (only("attention_causal_padding")) tcase_add_loop_test(tc, test_matmul_attention_causal_padding, 0, 2);
  if (only("simt")) tcase_add_loop_test(tc, test_matmul_simt, 0, 1);
  if (only("tf32")) tcase_add_loop_test(tc, test_matmul_tf32, 0, 3);
  if (only("tf32_rounding")) tcase_add_loop_test(tc, test_matmul_tf32_rounding, 0, 2);
  if (only("gemv")) tcase_add_loop_test(tc, test_matmul_gemv, 0, 3);
  if (only("8bit")) tcase_add_loop_test(tc, test_matmul_8bit, 0, 5);
  if (only("packed")) tcase_add_loop_test(tc, test_matmul_packed, 0, 2);
  suite_add_tcase(s, tc);
  return s;
}

/* Seed once per run (printed), then the suite. */
int main(void) {
  g_seed = tu_seed();
  printf("test_lower_matmul: seed %llu (set GRAPHC_TEST_SEED to reproduce)\n", (unsigned long long)g_seed);
  fflush(stdout);
  return tu_run_suite(lower_matmul_suite());
}
