/* test_interp2.c - the reference interpreter, part 2: reductions, argmax,
 * softmax, norms, matmul, conv2d, pools, data movement, gather errors, and the
 * driver (outputs that repeat values or are arguments, dead values, symbolic
 * dims, bad calls, out of memory). Expected numbers are written out by hand.
 */
#include "interp_harness.h"

#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* Let a huge calloc return NULL under ASan instead of aborting (t_out_of_memory). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

/* Begin a one-op graph: `%y = BODY : TY` over args ARGS. */
static void op_begin(it_run *r, const char *args, const char *body, const char *ty) {
  char src[1024];
  snprintf(src, sizeof src, "graph @g(%s) -> (%s) {\n  %%y = %s : %s;\n  return %%y;\n}\n", args,
           ty, body, ty);
  it_begin(r, src);
}

/* ---- reductions ----------------------------------------------------------------- */

/* reduce_sum over axes, keepdims, negative axes, double/int64 accumulation. */
START_TEST(t_reduce_sum) {
  it_run r;
  op_begin(&r, "%x: f32[2, 3]", "reduce_sum(%x, axes=[1])", "f32[2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 6, 15);
  it_end(&r);
  op_begin(&r, "%x: f32[2, 3]", "reduce_sum(%x, axes=[1], keepdims=true)", "f32[2, 1]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 6, 15);
  it_end(&r);
  op_begin(&r, "%x: f64[2, 3]", "reduce_sum(%x, axes=[-2])", "f64[3]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 5, 7, 9);
  it_end(&r);
  op_begin(&r, "%x: f32[2, 3]", "reduce_sum(%x)", "f32[]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 21);
  it_end(&r);
  op_begin(&r, "%x: bf16[2, 3]", "reduce_sum(%x, keepdims=true)", "bf16[1, 1]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 21);
  it_end(&r);
  /* x[i][j][k] = 4i + 2j + k; over i and k: j=0 {0,1,4,5}, j=1 {2,3,6,7} */
  op_begin(&r, "%x: f32[2, 2, 2]", "reduce_sum(%x, axes=[0, 2], keepdims=true)", "f32[1, 2, 1]");
  IN_F(&r, 0, 1, 2, 3, 4, 5, 6, 7);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 10, 18);
  it_end(&r);
  /* f16 accumulates in double: 2048 + 1 + 1 = 2050 (per-step f16 would give 2048) */
  op_begin(&r, "%x: f16[3]", "reduce_sum(%x, axes=[0])", "f16[]");
  IN_F(&r, 2048, 1, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 2050);
  it_end(&r);
  /* integer sums wrap to the dtype */
  op_begin(&r, "%x: i8[2, 2]", "reduce_sum(%x, axes=[1])", "i8[2]");
  IN_I(&r, 100, 100, -100, -29);
  it_exec(&r);
  EXPECT_I(&r, 0, -56, 127);
  it_end(&r);
  op_begin(&r, "%x: u8[2]", "reduce_sum(%x)", "u8[]");
  IN_I(&r, 200, 100);
  it_exec(&r);
  EXPECT_I(&r, 0, 44);
  it_end(&r);
  op_begin(&r, "%x: i32[2]", "reduce_sum(%x)", "i32[]");
  IN_I(&r, INT32_MAX, 1);
  it_exec(&r);
  EXPECT_I(&r, 0, INT32_MIN);
  it_end(&r);
  op_begin(&r, "%x: i64[3]", "reduce_sum(%x)", "i64[]");
  IN_I(&r, INT64_C(9007199254740993), INT64_C(9007199254740993), 1);
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_C(18014398509481987));
  it_end(&r);
}
END_TEST

/* reduce_max/min propagate NaN; reduce_mean divides by the count. */
START_TEST(t_reduce_max_min_mean) {
  it_run r;
  op_begin(&r, "%x: f32[3, 3]", "reduce_max(%x, axes=[1])", "f32[3]");
  IN_F(&r, 1, NAN, 3, 4, 5, -INFINITY, -7, -2, -9);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, NAN, 5, -2);
  it_end(&r);
  op_begin(&r, "%x: f32[3, 3]", "reduce_min(%x, axes=[-1])", "f32[3]");
  IN_F(&r, 1, NAN, 3, 4, 5, -INFINITY, -7, -2, -9);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, NAN, -INFINITY, -9);
  it_end(&r);
  op_begin(&r, "%x: bf16[2, 2]", "reduce_max(%x, axes=[0], keepdims=true)", "bf16[1, 2]");
  IN_F(&r, -1, 8, -3, 2);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, -1, 8);
  it_end(&r);
  op_begin(&r, "%x: i32[3]", "reduce_max(%x)", "i32[]");
  IN_I(&r, -5, -3, -9);
  it_exec(&r);
  EXPECT_I(&r, 0, -3);
  it_end(&r);
  op_begin(&r, "%x: u8[3]", "reduce_min(%x)", "u8[]");
  IN_I(&r, 200, 7, 255);
  it_exec(&r);
  EXPECT_I(&r, 0, 7);
  it_end(&r);
  op_begin(&r, "%x: i64[2]", "reduce_max(%x)", "i64[]");
  IN_I(&r, INT64_C(9007199254740993), INT64_C(9007199254740992));
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_C(9007199254740993));
  it_end(&r);
  op_begin(&r, "%x: f32[2, 3]", "reduce_mean(%x, axes=[1])", "f32[2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 2, 5);
  it_end(&r);
  op_begin(&r, "%x: f64[2, 3]", "reduce_mean(%x, keepdims=true)", "f64[1, 1]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 3.5);
  it_end(&r);
  op_begin(&r, "%x: f16[3]", "reduce_mean(%x)", "f16[]");
  IN_F(&r, 2048, 1, 2);  /* 2051 / 3 = 683.666.. -> f16 683.5 (ulp 0.5) */
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 683.5);
  it_end(&r);
}
END_TEST

/* argmax: first maximum, NaN wins, keepdims, ints. */
START_TEST(t_argmax) {
  it_run r;
  op_begin(&r, "%x: f32[3, 3]", "argmax(%x)", "i64[3]");
  IN_F(&r, 1, 3, 3, 2, NAN, 7, -INFINITY, -INFINITY, -5);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 1, 2);  /* first maximum; a NaN wins */
  it_end(&r);
  op_begin(&r, "%x: f16[2, 2]", "argmax(%x, axis=0, keepdims=true)", "i64[1, 2]");
  IN_F(&r, 1, 5, 4, 5);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 0);
  it_end(&r);
  op_begin(&r, "%x: i32[1, 3]", "argmax(%x, axis=-1, keepdims=true)", "i64[1, 1]");
  IN_I(&r, -3, -1, -2);
  it_exec(&r);
  EXPECT_I(&r, 0, 1);
  it_end(&r);
  op_begin(&r, "%x: u8[3]", "argmax(%x)", "i64[]");
  IN_I(&r, 3, 200, 100);
  it_exec(&r);
  EXPECT_I(&r, 0, 1);
  it_end(&r);
  op_begin(&r, "%x: i64[2]", "argmax(%x)", "i64[]");
  IN_I(&r, INT64_C(9007199254740992), INT64_C(9007199254740993));
  it_exec(&r);
  EXPECT_I(&r, 0, 1);
  it_end(&r);
}
END_TEST

/* ---- softmax and norms -------------------------------------------------------------- */

/* softmax/log_softmax along an axis, stable for large inputs. */
START_TEST(t_softmax) {
  it_run r;
  op_begin(&r, "%x: f32[2, 3]", "softmax(%x)", "f32[2, 3]");
  IN_F(&r, 1, 2, 3, 1000, 1001, 1002);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-7, 0.09003057317038046, 0.24472847105479764, 0.6652409557748218,
           0.09003057317038046, 0.24472847105479764, 0.6652409557748218);
  it_end(&r);
  op_begin(&r, "%x: f64[2, 2]", "softmax(%x, axis=0)", "f64[2, 2]");
  IN_F(&r, 1, 3, 1, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-15, 0.5, 0.8807970779778823, 0.5, 0.11920292202211755);
  it_end(&r);
  op_begin(&r, "%x: f32[3]", "log_softmax(%x, axis=-1)", "f32[3]");
  IN_F(&r, 1, 2, 3);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-7, -2.4076059644443806, -1.4076059644443804, -0.4076059644443804);
  it_end(&r);
  op_begin(&r, "%x: f64[2]", "log_softmax(%x)", "f64[2]");
  IN_F(&r, 1000, 1001);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-15, -1.3132616875182228, -0.31326168751822286);
  it_end(&r);
  op_begin(&r, "%x: f16[2]", "softmax(%x)", "f16[2]");
  IN_F(&r, 1000, 1001);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-3, 0.2689414213699951, 0.7310585786300049);
  it_end(&r);
  op_begin(&r, "%x: bf16[3]", "softmax(%x)", "bf16[3]");
  IN_F(&r, 1, -INFINITY, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 0.5, 0, 0.5);
  it_end(&r);
  op_begin(&r, "%x: f32[2]", "softmax(%x)", "f32[2]");
  IN_F(&r, 1, NAN);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, NAN, NAN);
  it_end(&r);
}
END_TEST

/* layernorm over [axis, rank) with gamma, beta and eps. */
START_TEST(t_layernorm) {
  it_run r;
  /* rows [1,3] and [0,4]: normalized to [-1, 1]; gamma [1, 2], beta [0.5, 0] */
  op_begin(&r, "%x: f32[2, 2], %g: f32[2], %b: f32[2]", "layernorm(%x, %g, %b, eps=0.0)", "f32[2, 2]");
  IN_F(&r, 1, 3, 0, 4);
  IN_F(&r, 1, 2);
  IN_F(&r, 0.5, 0);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-7, -0.5, 2, -0.5, 2);
  it_end(&r);
  /* default eps 1e-5: variance 1 and 4 */
  op_begin(&r, "%x: f64[2, 2], %g: f64[2], %b: f64[2]", "layernorm(%x, %g, %b, axis=-1)", "f64[2, 2]");
  IN_F(&r, 1, 3, 0, 4);
  IN_F(&r, 1, 2);
  IN_F(&r, 0.5, 0);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-14, -0.49999500003749975, 1.9999900000749995, -0.49999875000234373,
           1.9999975000046875);
  it_end(&r);
  /* over the last two dims: mean 2.5, variance 1.25 */
  op_begin(&r, "%x: f32[1, 2, 2], %g: f32[2, 2], %b: f32[2, 2]",
           "layernorm(%x, %g, %b, axis=1, eps=0.0)", "f32[1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4);
  IN_F(&r, 1, 1, 1, 1);
  IN_F(&r, 0, 0, 0, 0);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-7, -1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
           1.3416407864998738);
  it_end(&r);
  op_begin(&r, "%x: f16[2, 2], %g: f16[2], %b: f16[2]", "layernorm(%x, %g, %b)", "f16[2, 2]");
  IN_F(&r, 1, 3, 0, 4);
  IN_F(&r, 1, 2);
  IN_F(&r, 0.5, 0);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-3, -0.5, 2, -0.5, 2);
  it_end(&r);
}
END_TEST

/* rmsnorm over the last dim with eps. */
START_TEST(t_rmsnorm) {
  it_run r;
  op_begin(&r, "%x: f64[2, 2], %g: f64[2]", "rmsnorm(%x, %g, eps=0.0)", "f64[2, 2]");
  IN_F(&r, 3, 4, 1, -1);
  IN_F(&r, 1, 2);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-15, 0.848528137423857, 2.262741699796952, 1, -2);
  it_end(&r);
  op_begin(&r, "%x: f64[2, 2], %g: f64[2]", "rmsnorm(%x, %g)", "f64[2, 2]");  /* eps 1e-6 */
  IN_F(&r, 3, 4, 1, -1);
  IN_F(&r, 1, 2);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-15, 0.8485281034827336, 2.2627416092872896, 0.999999500000375,
           -1.99999900000075);
  it_end(&r);
  op_begin(&r, "%x: bf16[1, 2], %g: bf16[2]", "rmsnorm(%x, %g)", "bf16[1, 2]");
  IN_F(&r, 3, 4);
  IN_F(&r, 1, 2);
  it_exec(&r);
  EXPECT_F(&r, 0, 8e-3, 0.848528137423857, 2.262741699796952);
  it_end(&r);
}
END_TEST

/* ---- matmul ------------------------------------------------------------------------------ */

/* matmul in all four transpose combinations. */
START_TEST(t_matmul) {
  /* [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]] in every layout */
  static const char *cases[4][3] = {
      {"%a: f32[2, 3], %b: f32[3, 2]", "matmul(%a, %b)", "1"},
      {"%a: f32[2, 3], %b: f32[2, 3]", "matmul(%a, %b, transpose_b=true)", "b"},
      {"%a: f32[3, 2], %b: f32[3, 2]", "matmul(%a, %b, transpose_a=true)", "a"},
      {"%a: f32[3, 2], %b: f32[2, 3]", "matmul(%a, %b, transpose_a=true, transpose_b=true)", "ab"},
  };
  for (int k = 0; k < 4; k++) {
    it_run r;
    op_begin(&r, cases[k][0], cases[k][1], "f32[2, 2]");
    if (strchr(cases[k][2], 'a'))
      IN_F(&r, 1, 4, 2, 5, 3, 6);
    else
      IN_F(&r, 1, 2, 3, 4, 5, 6);
    if (strchr(cases[k][2], 'b'))
      IN_F(&r, 7, 9, 11, 8, 10, 12);
    else
      IN_F(&r, 7, 8, 9, 10, 11, 12);
    it_exec(&r);
    EXPECT_F(&r, 0, 0, 58, 64, 139, 154);
    it_end(&r);
  }
}
END_TEST

/* batched matmul with broadcast batch dims and transposes. */
START_TEST(t_matmul_batch) {
  it_run r;
  /* batch dims [2, 1] x [3] -> [2, 3]: out[i][j] = a_i . b_j */
  op_begin(&r, "%a: f32[2, 1, 1, 2], %b: f32[3, 2, 1]", "matmul(%a, %b)", "f32[2, 3, 1, 1]");
  IN_F(&r, 1, 2, 3, 4);
  IN_F(&r, 1, 0, 0, 1, 1, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 2, 3, 3, 4, 7);
  it_end(&r);
  /* a batch of [I, 2I] times one matrix */
  op_begin(&r, "%a: f64[2, 2, 2], %b: f64[2, 2]", "matmul(%a, %b)", "f64[2, 2, 2]");
  IN_F(&r, 1, 0, 0, 1, 2, 0, 0, 2);
  IN_F(&r, 1, 2, 3, 4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 2, 3, 4, 2, 4, 6, 8);
  it_end(&r);
  /* one matrix times a batch, transposed b: b_k^T with b_0 = [[1,2]], b_1 = [[3,4]] */
  op_begin(&r, "%a: bf16[2, 2], %b: bf16[2, 1, 2]", "matmul(%a, %b, transpose_b=true)",
           "bf16[2, 2, 1]");
  IN_F(&r, 1, 1, 0, 1);
  IN_F(&r, 1, 2, 3, 4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 3, 2, 7, 4);
  it_end(&r);
  /* batch with transpose_a: a_k^T; a_0 = [[1],[2]] -> [[1, 2]] */
  op_begin(&r, "%a: f32[2, 2, 1], %b: f32[1, 2, 1]", "matmul(%a, %b, transpose_a=true)",
           "f32[2, 1, 1]");
  IN_F(&r, 1, 2, 3, 4);
  IN_F(&r, 10, 100);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 210, 430);
  it_end(&r);
}
END_TEST

/* matmul in f16 (double accumulation) and wrapping ints. */
START_TEST(t_matmul_dtypes) {
  it_run r;
  op_begin(&r, "%a: f16[1, 3], %b: f16[3, 1]", "matmul(%a, %b)", "f16[1, 1]");
  IN_F(&r, 2048, 1, 1);
  IN_F(&r, 1, 1, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 2050);  /* double accumulation, one rounding */
  it_end(&r);
  op_begin(&r, "%a: i32[1, 2], %b: i32[2, 1]", "matmul(%a, %b)", "i32[1, 1]");
  IN_I(&r, 65536, 1);
  IN_I(&r, 65536, 5);
  it_exec(&r);
  EXPECT_I(&r, 0, 5);  /* 2^32 + 5 wraps */
  it_end(&r);
  op_begin(&r, "%a: i64[1, 2], %b: i64[2, 1]", "matmul(%a, %b)", "i64[1, 1]");
  IN_I(&r, INT64_C(9007199254740993), 1);
  IN_I(&r, 1, 2);
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_C(9007199254740995));
  it_end(&r);
  /* two 8-bit integers give i32 (ir/infer.c: as MatMulInteger and the integer tensor cores) */
  op_begin(&r, "%a: u8[1, 2], %b: u8[2, 2]", "matmul(%a, %b)", "i32[1, 2]");
  IN_I(&r, 200, 100);
  IN_I(&r, 1, 2, 1, 0);
  it_exec(&r);
  EXPECT_I(&r, 0, 300, 400);
  it_end(&r);
  op_begin(&r, "%a: i8[2, 1], %b: i8[1, 2]", "matmul(%a, %b)", "i32[2, 2]");
  IN_I(&r, -1, 127);
  IN_I(&r, -128, 2);
  it_exec(&r);
  EXPECT_I(&r, 0, 128, -2, -16256, 254);
  it_end(&r);
  op_begin(&r, "%a: u8[1, 2], %b: i8[2, 1]", "matmul(%a, %b)", "i32[1, 1]");
  IN_I(&r, 255, 255);
  IN_I(&r, -128, -128);
  it_exec(&r);
  EXPECT_I(&r, 0, -65280);  /* mixed: u8 x i8 */
  it_end(&r);
}
END_TEST

/* ---- conv2d ------------------------------------------------------------------------------- */

/* conv2d with stride, symmetric and 4-value padding, dilation. */
START_TEST(t_conv2d) {
  static const char *x33 = "%x: f32[1, 1, 3, 3], %w: f32[1, 1, 2, 2]";
  it_run r;
  op_begin(&r, x33, "conv2d(%x, %w)", "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  IN_F(&r, 1, 0, 0, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 6, 8, 12, 14);
  it_end(&r);
  op_begin(&r, x33, "conv2d(%x, %w, stride=[2, 2], padding=[1, 1])", "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  IN_F(&r, 1, 0, 0, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 3, 7, 14);
  it_end(&r);
  op_begin(&r, x33, "conv2d(%x, %w, dilation=[2, 2])", "f32[1, 1, 1, 1]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  IN_F(&r, 1, 0, 0, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 10);
  it_end(&r);
  /* [top, left, bottom, right] = [1, 0, 0, 0]: a zero row on top */
  op_begin(&r, "%x: f64[1, 1, 2, 2], %w: f64[1, 1, 1, 1]", "conv2d(%x, %w, padding=[1, 0, 0, 0])",
           "f64[1, 1, 3, 2]");
  IN_F(&r, 1, 2, 3, 4);
  IN_F(&r, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 0, 0, 1, 2, 3, 4);
  it_end(&r);
  /* stride [1, 2] */
  op_begin(&r, "%x: f32[1, 1, 2, 3], %w: f32[1, 1, 1, 1]", "conv2d(%x, %w, stride=[1, 2])",
           "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  IN_F(&r, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 3, 4, 6);
  it_end(&r);
  op_begin(&r, x33, "conv2d(%x, %w, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1)",
           "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  IN_F(&r, 0.5, 0.25, -1, 2);
  it_exec(&r);
  /* out[0][0] = 0.5*1 + 0.25*2 - 4 + 2*5 = 7; each step right +1.75, down +5.25 */
  EXPECT_F(&r, 0, 0, 7, 8.75, 12.25, 14);
  it_end(&r);
}
END_TEST

/* conv2d with batches, several channels and groups. */
START_TEST(t_conv2d_channels) {
  it_run r;
  /* N=2, C=2, O=2, 1x2 kernels: o0 picks c0[0] + c1[1], o1 sums everything */
  op_begin(&r, "%x: f32[2, 2, 1, 2], %w: f32[2, 2, 1, 2]", "conv2d(%x, %w)", "f32[2, 2, 1, 1]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8);
  IN_F(&r, 1, 0, 0, 1, 1, 1, 1, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 5, 10, 13, 26);
  it_end(&r);
  /* depthwise: groups = C = O = 2, weights 2 and 3 */
  op_begin(&r, "%x: f32[1, 2, 2, 2], %w: f32[2, 1, 1, 1]", "conv2d(%x, %w, groups=2)",
           "f32[1, 2, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8);
  IN_F(&r, 2, 3);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 2, 4, 6, 8, 15, 18, 21, 24);
  it_end(&r);
  /* groups=1 sums the channels */
  op_begin(&r, "%x: f32[1, 2, 2, 2], %w: f32[1, 2, 1, 1]", "conv2d(%x, %w)", "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8);
  IN_F(&r, 1, 1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 6, 8, 10, 12);
  it_end(&r);
  /* groups=2 with 2 channels per group: o0 = c0 + c1, o1 = c2 - c3 */
  op_begin(&r, "%x: f16[1, 4, 1, 1], %w: f16[2, 2, 1, 1]", "conv2d(%x, %w, groups=2)",
           "f16[1, 2, 1, 1]");
  IN_F(&r, 1, 2, 3, 4);
  IN_F(&r, 1, 1, 1, -1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 3, -1);
  it_end(&r);
  op_begin(&r, "%x: bf16[1, 1, 3, 3], %w: bf16[1, 1, 2, 2]", "conv2d(%x, %w, padding=[1, 1])",
           "bf16[1, 1, 4, 4]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  IN_F(&r, 1, 1, 1, 1);
  it_exec(&r);
  /* 2x2 window sums of the zero-padded input */
  EXPECT_F(&r, 0, 0, 1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9);
  it_end(&r);
}
END_TEST

/* ---- pools ----------------------------------------------------------------------------------- */

/* max_pool2d: default stride, -inf padding, NaN, 4-value padding. */
START_TEST(t_max_pool) {
  it_run r;
  op_begin(&r, "%x: f32[1, 1, 4, 4]", "max_pool2d(%x, kernel=[2, 2])", "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 6, 8, 14, 16);
  it_end(&r);
  op_begin(&r, "%x: f32[1, 1, 3, 3]", "max_pool2d(%x, kernel=[2, 2], stride=[2, 2], padding=[1, 1])",
           "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 3, 7, 9);
  it_end(&r);
  /* padding is -inf, never 0 */
  op_begin(&r, "%x: f16[1, 1, 3, 3]", "max_pool2d(%x, kernel=[2, 2], stride=[2, 2], padding=[1, 1])",
           "f16[1, 1, 2, 2]");
  IN_F(&r, -1, -2, -3, -4, -5, -6, -7, -8, -9);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, -1, -2, -4, -5);
  it_end(&r);
  op_begin(&r, "%x: f32[1, 2, 2, 2]", "max_pool2d(%x, kernel=[2, 2])", "f32[1, 2, 1, 1]");
  IN_F(&r, 1, NAN, 3, 4, -1, -2, -3, -4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, NAN, -1);
  it_end(&r);
  /* [top, left, bottom, right] = [1, 1, 0, 0], stride 1 */
  op_begin(&r, "%x: bf16[1, 1, 2, 2]",
           "max_pool2d(%x, kernel=[2, 2], stride=[1, 1], padding=[1, 1, 0, 0])", "bf16[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 2, 3, 4);
  it_end(&r);
  /* layout="nhwc": channels innermost, each pooled alone (channel 1 = -channel 0) */
  op_begin(&r, "%x: f32[1, 3, 3, 2]",
           "max_pool2d(%x, kernel=[2, 2], stride=[2, 2], padding=[1, 1], layout=\"nhwc\")",
           "f32[1, 2, 2, 2]");
  IN_F(&r, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8, 9, -9);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, -1, 3, -2, 7, -4, 9, -5);
  it_end(&r);
  /* stride 1 over [2, 3, 2, 1] images: kernel [2, 1], padding bottom 1 */
  op_begin(&r, "%x: f16[2, 3, 2, 1]",
           "max_pool2d(%x, kernel=[2, 1], stride=[1, 1], padding=[0, 0, 1, 0], layout=\"nhwc\")",
           "f16[2, 3, 2, 1]");
  IN_F(&r, 1, 6, 5, 2, 3, 4, 0, 0, -1, -2, -3, -4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 5, 6, 5, 4, 3, 4, 0, 0, -1, -2, -3, -4);
  it_end(&r);
}
END_TEST

/* avg_pool2d divides by the non-padding count. */
START_TEST(t_avg_pool) {
  it_run r;
  op_begin(&r, "%x: f32[1, 1, 4, 4]", "avg_pool2d(%x, kernel=[2, 2])", "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 3.5, 5.5, 11.5, 13.5);
  it_end(&r);
  /* padding excluded from the count */
  op_begin(&r, "%x: f64[1, 1, 3, 3]", "avg_pool2d(%x, kernel=[2, 2], stride=[2, 2], padding=[1, 1])",
           "f64[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 2.5, 5.5, 7);
  it_end(&r);
  op_begin(&r, "%x: f32[1, 1, 2, 2]", "avg_pool2d(%x, kernel=[3, 3], stride=[1, 1], padding=[1, 1])",
           "f32[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 2.5, 2.5, 2.5, 2.5);
  it_end(&r);
  op_begin(&r, "%x: f16[1, 1, 2, 2]",
           "avg_pool2d(%x, kernel=[2, 2], stride=[1, 1], padding=[1, 1, 0, 0])", "f16[1, 1, 2, 2]");
  IN_F(&r, 1, 2, 3, 4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 1.5, 2, 2.5);
  it_end(&r);
  op_begin(&r, "%x: bf16[2, 1, 1, 2]", "avg_pool2d(%x, kernel=[1, 2])", "bf16[2, 1, 1, 1]");
  IN_F(&r, 1, 2, 10, 20);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1.5, 15);
  it_end(&r);
  /* layout="nhwc": the same padding count, per channel */
  op_begin(&r, "%x: f32[1, 3, 3, 2]",
           "avg_pool2d(%x, kernel=[2, 2], stride=[2, 2], padding=[1, 1], layout=\"nhwc\")",
           "f32[1, 2, 2, 2]");
  IN_F(&r, 1, -10, 2, -20, 3, -30, 4, -40, 5, -50, 6, -60, 7, -70, 8, -80, 9, -90);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, -10, 2.5, -25, 5.5, -55, 7, -70);
  it_end(&r);
}
END_TEST

/* ---- data movement ----------------------------------------------------------------------------- */

/* reshape, transpose and broadcast move elements as defined. */
START_TEST(t_reshape_transpose_broadcast) {
  it_run r;
  op_begin(&r, "%x: f32[2, 3]", "reshape(%x, shape=[3, 2])", "f32[3, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 2, 3, 4, 5, 6);
  it_end(&r);
  op_begin(&r, "%x: i64[1, 1]", "reshape(%x, shape=[])", "i64[]");
  IN_I(&r, INT64_C(9007199254740993));
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_C(9007199254740993));
  it_end(&r);
  op_begin(&r, "%x: f32[2, 3]", "transpose(%x, perm=[1, 0])", "f32[3, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 4, 2, 5, 3, 6);
  it_end(&r);
  /* x[a][b][c] = 4a + 2b + c; out[i][j][k] = x[j][k][i] */
  op_begin(&r, "%x: i32[2, 2, 2]", "transpose(%x, perm=[2, 0, 1])", "i32[2, 2, 2]");
  IN_I(&r, 0, 1, 2, 3, 4, 5, 6, 7);
  it_exec(&r);
  EXPECT_I(&r, 0, 0, 2, 4, 6, 1, 3, 5, 7);
  it_end(&r);
  op_begin(&r, "%x: f16[1, 3]", "transpose(%x, perm=[1, 0])", "f16[3, 1]");
  IN_F(&r, 0.5, 1.5, -2);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 0.5, 1.5, -2);
  it_end(&r);
  op_begin(&r, "%x: f32[3]", "broadcast(%x, shape=[2, 3])", "f32[2, 3]");
  IN_F(&r, 1, 2, 3);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 2, 3, 1, 2, 3);
  it_end(&r);
  op_begin(&r, "%x: u8[2, 1]", "broadcast(%x, shape=[2, 3])", "u8[2, 3]");
  IN_I(&r, 1, 200);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 1, 1, 200, 200, 200);
  it_end(&r);
  op_begin(&r, "%x: bool[]", "broadcast(%x, shape=[2, 2])", "bool[2, 2]");
  IN_I(&r, 1);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 1, 1, 1);
  it_end(&r);
}
END_TEST

/* concat of several operands; split into several results. */
START_TEST(t_concat_split) {
  it_run r;
  op_begin(&r, "%a: f32[1, 2], %b: f32[2, 2]", "concat(%a, %b, axis=0)", "f32[3, 2]");
  IN_F(&r, 1, 2);
  IN_F(&r, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 2, 3, 4, 5, 6);
  it_end(&r);
  op_begin(&r, "%a: i8[2, 1], %b: i8[2, 2], %c: i8[2, 1]", "concat(%a, %b, %c, axis=-1)", "i8[2, 4]");
  IN_I(&r, 1, 2);
  IN_I(&r, 3, 4, 5, 6);
  IN_I(&r, 7, -8);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 3, 4, 7, 2, 5, 6, -8);
  it_end(&r);
  op_begin(&r, "%a: bf16[2]", "concat(%a, %a, axis=0)", "bf16[4]");
  IN_F(&r, 0.5, -1);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 0.5, -1, 0.5, -1);
  it_end(&r);

  it_begin(&r,
           "graph @g(%x: f32[2, 4]) -> (f32[2, 1], f32[2, 3], i64[1, 2], i64[1, 2]) {\n"
           "  %a, %b = split(%x, axis=1, sizes=[1, 3]) : f32[2, 1], f32[2, 3];\n"
           "  %i = iota(shape=[2, 2]) : i64[2, 2];\n"
           "  %c, %d = split(%i, axis=-2, sizes=[1, 1]) : i64[1, 2], i64[1, 2];\n"
           "  return %a, %b, %c, %d;\n"
           "}\n");
  IN_F(&r, 0, 1, 2, 3, 4, 5, 6, 7);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 0, 4);
  EXPECT_F(&r, 1, 0, 1, 2, 3, 5, 6, 7);
  EXPECT_I(&r, 2, 0, 0);
  EXPECT_I(&r, 3, 1, 1);
  it_end(&r);
}
END_TEST

/* slice with negative/clamped bounds and steps; pad with a value. */
START_TEST(t_slice_pad) {
  it_run r;
  op_begin(&r, "%x: f32[5]", "slice(%x, start=[1], end=[4], step=[2])", "f32[2]");
  IN_F(&r, 0, 10, 20, 30, 40);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 10, 30);
  it_end(&r);
  op_begin(&r, "%x: f32[5]", "slice(%x, start=[-2], end=[5])", "f32[2]");
  IN_F(&r, 0, 10, 20, 30, 40);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 30, 40);
  it_end(&r);
  op_begin(&r, "%x: i64[5]", "slice(%x, start=[-10], end=[100], step=[3])", "i64[2]");
  IN_I(&r, 0, 10, 20, 30, 40);
  it_exec(&r);
  EXPECT_I(&r, 0, 0, 30);
  it_end(&r);
  op_begin(&r, "%x: f16[3, 4]", "slice(%x, start=[1, -3], end=[3, 4], step=[1, 2])", "f16[2, 2]");
  IN_F(&r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 5, 7, 9, 11);
  it_end(&r);
  op_begin(&r, "%x: f32[2, 2]", "pad(%x, pads=[1, 0, 0, 1], value=9.0)", "f32[3, 3]");
  IN_F(&r, 1, 2, 3, 4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 9, 9, 9, 1, 2, 9, 3, 4, 9);
  it_end(&r);
  op_begin(&r, "%x: i32[1, 2]", "pad(%x, pads=[0, 1, 0, 1])", "i32[1, 4]");
  IN_I(&r, -1, 2);
  it_exec(&r);
  EXPECT_I(&r, 0, 0, -1, 2, 0);
  it_end(&r);
  op_begin(&r, "%x: bf16[1]", "pad(%x, pads=[1, 2], value=0.5)", "bf16[4]");
  IN_F(&r, -3);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 0.5, -3, 0.5, 0.5);
  it_end(&r);
  op_begin(&r, "%x: f32[1]", "pad(%x, pads=[1, 0], value=-inf)", "f32[2]");
  IN_F(&r, 2);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, -INFINITY, 2);
  it_end(&r);
  op_begin(&r, "%x: i64[1]", "pad(%x, pads=[0, 1], value=-9007199254740993)", "i64[2]");
  IN_I(&r, 1);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, INT64_C(-9007199254740993));
  it_end(&r);
}
END_TEST

/* gather along an axis with negative and multi-dim indices. */
START_TEST(t_gather) {
  it_run r;
  op_begin(&r, "%x: f32[3, 2], %i: i64[3]", "gather(%x, %i)", "f32[3, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  IN_I(&r, 2, -1, 0);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 5, 6, 5, 6, 1, 2);
  it_end(&r);
  op_begin(&r, "%x: f32[3, 2], %i: i32[1, 2]", "gather(%x, %i, axis=1)", "f32[3, 1, 2]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  IN_I(&r, 1, -2);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 2, 1, 4, 3, 6, 5);
  it_end(&r);
  op_begin(&r, "%x: i64[3, 2], %i: i64[]", "gather(%x, %i, axis=-2)", "i64[2]");
  IN_I(&r, 1, 2, 3, INT64_C(9007199254740993), 5, 6);
  IN_I(&r, 1);
  it_exec(&r);
  EXPECT_I(&r, 0, 3, INT64_C(9007199254740993));
  it_end(&r);
  op_begin(&r, "%x: bf16[4], %i: i32[2, 2]", "gather(%x, %i)", "bf16[2, 2]");
  IN_F(&r, 0.5, 1, 2, 4);
  IN_I(&r, 3, -4, 0, 0);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 4, 0.5, 0.5, 0.5);
  it_end(&r);
}
END_TEST

/* an out-of-range gather index is a run-time error at the op. */
START_TEST(t_gather_out_of_range) {
  static const int64_t bad[2] = {3, -4};
  for (int k = 0; k < 2; k++) {
    it_run r;
    it_begin(&r,
             "graph @g(%x: f32[3, 2], %i: i64[2]) -> (f32[2, 2]) {\n"
             "  %y = gather(%x, %i, axis=0) : f32[2, 2];\n"
             "  return %y;\n"
             "}\n");
    IN_F(&r, 1, 2, 3, 4, 5, 6);
    IN_I(&r, 0, bad[k]);
    ck_assert_int_eq(it_exec_status(&r), GRAPHC_STATUS_RUNTIME_ERROR);
    ck_assert_int_eq(r.d.n_errors, 1);
    ck_assert_int_eq(r.d.status, GRAPHC_STATUS_RUNTIME_ERROR);
    char want[128];
    snprintf(want, sizeof want, "gather index %lld is out of range for axis 0 of size 3",
             (long long)bad[k]);
    ck_assert_str_eq(r.d.items[0].msg, want);
    ck_assert_int_eq(r.d.items[0].loc.line, 3);
    ck_assert_int_eq(r.d.items[0].loc.col, 3);
    char *s = gc_diags_render(&r.d);
    ck_assert_ptr_nonnull(strstr(s, "t.graph:3:3: error: gather index"));
    free(s);
    it_end(&r);
  }
}
END_TEST

/* ---- the driver ------------------------------------------------------------------------------ */

/* outputs that repeat a value or are arguments; dead values. */
START_TEST(t_outputs_alias) {
  it_run r;
  it_begin(&r,
           "graph @g(%x: f32[2], %u: i32[1]) -> (f32[2], f32[2], f32[2], f32[2]) {\n"
           "  %dead = exp(%x) : f32[2];\n"
           "  %y = neg(%x) : f32[2];\n"
           "  %z = add(%y, %y) : f32[2];\n"
           "  return %y, %x, %z, %y;\n"
           "}\n");
  IN_F(&r, 1.5, -2);
  IN_I(&r, 7);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, -1.5, 2);
  EXPECT_F(&r, 1, 0, 1.5, -2);
  EXPECT_F(&r, 2, 0, -3, 4);
  EXPECT_F(&r, 3, 0, -1.5, 2);
  it_end(&r);
}
END_TEST

/* A small MLP with weights: relu(x @ w1 + b1) @ w2, then softmax. */
START_TEST(t_mlp) {
  it_run r;
  it_begin(&r,
           "graph @mlp(%x: f32[2, 2]) -> (f32[2, 2], f32[2, 2]) {\n"
           "  param %w1: f32[2, 3] = \"fc1.weight\";\n"
           "  param %b1: f32[3] = \"fc1.bias\";\n"
           "  param %w2: f32[3, 2] = \"fc2.weight\";\n"
           "  %h = matmul(%x, %w1) : f32[2, 3];\n"
           "  %hb = add(%h, %b1) : f32[2, 3];\n"
           "  %a = relu(%hb) : f32[2, 3];\n"
           "  %o = matmul(%a, %w2) : f32[2, 2];\n"
           "  %s = softmax(%o) : f32[2, 2];\n"
           "  return %o, %s;\n"
           "}\n");
  it_weight(&r, "fc1.weight", F32, 2, (int64_t[]){2, 3}, 6, (double[]){1, -1, 0, 2, 0, 1});
  it_weight(&r, "fc1.bias", F32, 1, (int64_t[]){3}, 3, (double[]){0, 1, -10});
  it_weight(&r, "fc2.weight", F32, 2, (int64_t[]){3, 2}, 6, (double[]){1, 0, 0, 1, 1, 1});
  IN_F(&r, 1, 1, -1, 3);
  it_exec(&r);
  /* h = [[3, -1, 1], [5, 1, 3]]; + b1 = [[3, 0, -9], [5, 2, -7]]; relu = [[3, 0, 0], [5, 2, 0]];
   * o = [[3, 0], [5, 2]]; softmax rows: [e^3, 1]/(e^3+1), [e^3, 1]/(e^3+1) */
  EXPECT_F(&r, 0, 0, 3, 0, 5, 2);
  EXPECT_F(&r, 1, 1e-7, 0.9525741268224334, 0.04742587317756678, 0.9525741268224334,
           0.04742587317756678);
  it_end(&r);
}
END_TEST

/* symbolic dims: refused unbound, run after specialization. */
START_TEST(t_symbolic) {
  it_run r;
  it_begin(&r,
           "graph @g<B>(%x: f32[B, 2]) -> (f32[B, 1]) {\n"
           "  %y = reduce_sum(%x, axes=[1], keepdims=true) : f32[B, 1];\n"
           "  return %y;\n"
           "}\n");
  /* not specialized: refused, no crash */
  graphc_tensor_t in = {.dtype = F32, .data = (float[6]){0}, .nbytes = 24};
  graphc_tensor_t out = {.dtype = F32, .data = (float[3]){0}, .nbytes = 12};
  ck_assert_int_eq(gc_interp_run(r.g, NULL, &in, 1, &out, 1, &r.d), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(r.d.items[0].msg, "concrete"));
  it_end(&r);

  it_begin(&r,
           "graph @g<B>(%x: f32[B, 2]) -> (f32[B, 1]) {\n"
           "  %y = reduce_sum(%x, axes=[1], keepdims=true) : f32[B, 1];\n"
           "  return %y;\n"
           "}\n");
  r.g->sym_values[0] = 3;
  ck_assert_int_eq(gc_graph_specialize(r.g, &r.d), 0);
  free(r.out[0].data);
  r.out[0].nbytes = 12;
  r.out[0].data = calloc(3, 4);
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 3, 7, 11);
  it_end(&r);
}
END_TEST

/* wrong input count and short buffers are reported. */
START_TEST(t_bad_calls) {
  it_run r;
  op_begin(&r, "%x: f32[2]", "neg(%x)", "f32[2]");
  IN_F(&r, 1, 2);
  ck_assert_int_eq(gc_interp_run(r.g, NULL, r.in, 0, r.out, 1, &r.d), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(r.d.n_errors, 1);
  r.in[0].nbytes = 4;  /* too small */
  ck_assert_int_eq(gc_interp_run(r.g, NULL, r.in, 1, r.out, 1, &r.d), GRAPHC_STATUS_INVALID_ARGUMENT);
  r.in[0].nbytes = 8;
  r.out[0].nbytes = 4;
  ck_assert_int_eq(gc_interp_run(r.g, NULL, r.in, 1, r.out, 1, &r.d), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(r.d.n_errors, 3);
  it_end(&r);
}
END_TEST

/* an allocation that cannot succeed reports out of memory at the op. */
START_TEST(t_out_of_memory) {
  it_run r;
  /* 2^60 floats cannot be allocated anywhere */
  it_begin(&r,
           "graph @g() -> (f32[]) {\n"
           "  %c = const(value=1.0, shape=[1073741824, 1073741824]) : f32[1073741824, 1073741824];\n"
           "  %s = reduce_sum(%c) : f32[];\n"
           "  return %s;\n"
           "}\n");
  ck_assert_int_eq(it_exec_status(&r), GRAPHC_STATUS_OUT_OF_MEMORY);
  ck_assert_int_eq(r.d.items[0].loc.line, 3);
  ck_assert_ptr_nonnull(strstr(r.d.items[0].msg, "out of memory"));
  it_end(&r);
}
END_TEST

/* Properties on fresh random data (seed printed on failure): matmul equals a
 * double dot product and its transposed form; softmax rows sum to 1 and
 * log_softmax = log(softmax); concat(split(x)) = x; layernorm rows have mean 0
 * and variance 1. */
START_TEST(t_random_properties) {
  uint64_t seed = (uint64_t)time(NULL) * 1000003u + (uint64_t)getpid(), s = seed;
  it_run r;
  it_begin(&r,
           "graph @g(%a: f32[3, 5], %b: f32[5, 4]) -> (f32[3, 4], f32[3, 4], f32[3, 5], f32[3, 5], "
           "f32[3, 5], f32[3, 5]) {\n"
           "  %m = matmul(%a, %b) : f32[3, 4];\n"
           "  %at = transpose(%a, perm=[1, 0]) : f32[5, 3];\n"
           "  %bt = transpose(%b, perm=[1, 0]) : f32[4, 5];\n"
           "  %m2 = matmul(%at, %bt, transpose_a=true, transpose_b=true) : f32[3, 4];\n"
           "  %s = softmax(%a) : f32[3, 5];\n"
           "  %ls = log_softmax(%a) : f32[3, 5];\n"
           "  %p, %q = split(%a, axis=1, sizes=[2, 3]) : f32[3, 2], f32[3, 3];\n"
           "  %c = concat(%p, %q, axis=1) : f32[3, 5];\n"
           "  %one = const(value=1.0, shape=[5]) : f32[5];\n"
           "  %zero = const(value=0.0, shape=[5]) : f32[5];\n"
           "  %ln = layernorm(%a, %one, %zero, eps=0.0) : f32[3, 5];\n"
           "  return %m, %m2, %s, %ls, %c, %ln;\n"
           "}\n");
  double a[15], b[20];
  for (int i = 0; i < 35; i++) {
    s = s * 6364136223846793005u + 1442695040888963407u;        /* LCG, top bits */
    double u = (double)(s >> 40) / (double)(1u << 24) * 4.0 - 2.0;  /* [-2, 2), 24 bits: exact f32 */
    if (i < 15) a[i] = u; else b[i - 15] = u;
  }
  a[0] = 1.5;  /* never all zero */
  it_in_f(&r, 15, a);
  it_in_f(&r, 20, b);
  it_exec(&r);
  float *m = r.out[0].data, *m2 = r.out[1].data, *sm = r.out[2].data, *ls = r.out[3].data;
  float *c = r.out[4].data, *ln = r.out[5].data;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      double dot = 0;
      for (int k = 0; k < 5; k++) dot += a[i * 5 + k] * b[k * 4 + j];
      ck_assert_msg(fabs(m[i * 4 + j] - dot) <= 1e-6 * (1 + fabs(dot)), "seed %llu", (unsigned long long)seed);
      ck_assert_msg(m[i * 4 + j] == m2[i * 4 + j], "seed %llu", (unsigned long long)seed);
    }
  for (int i = 0; i < 3; i++) {
    double sum = 0, mean = 0, sq = 0;
    for (int j = 0; j < 5; j++) {
      sum += sm[i * 5 + j];
      ck_assert_msg(fabs(ls[i * 5 + j] - log(sm[i * 5 + j])) <= 1e-5, "seed %llu", (unsigned long long)seed);
      ck_assert_msg(c[i * 5 + j] == (float)a[i * 5 + j], "seed %llu", (unsigned long long)seed);
      mean += ln[i * 5 + j] / 5.0;
      sq += ln[i * 5 + j] * ln[i * 5 + j] / 5.0;
    }
    ck_assert_msg(fabs(sum - 1) <= 1e-6, "seed %llu: softmax row sums to %g", (unsigned long long)seed, sum);
    ck_assert_msg(fabs(mean) <= 1e-6 && fabs(sq - 1) <= 1e-5, "seed %llu: layernorm mean %g, var %g",
                  (unsigned long long)seed, mean, sq);
  }
  it_end(&r);
}
END_TEST

/* Suite of part 2. */
static Suite *interp2_suite(void) {
  Suite *s = suite_create("interp2");
  TCase *tc = tcase_create("nn_and_movement");
  tcase_add_test(tc, t_reduce_sum);
  tcase_add_test(tc, t_reduce_max_min_mean);
  tcase_add_test(tc, t_argmax);
  tcase_add_test(tc, t_softmax);
  tcase_add_test(tc, t_layernorm);
  tcase_add_test(tc, t_rmsnorm);
  tcase_add_test(tc, t_matmul);
  tcase_add_test(tc, t_matmul_batch);
  tcase_add_test(tc, t_matmul_dtypes);
  tcase_add_test(tc, t_conv2d);
  tcase_add_test(tc, t_conv2d_channels);
  tcase_add_test(tc, t_max_pool);
  tcase_add_test(tc, t_avg_pool);
  tcase_add_test(tc, t_reshape_transpose_broadcast);
  tcase_add_test(tc, t_concat_split);
  tcase_add_test(tc, t_slice_pad);
  tcase_add_test(tc, t_gather);
  tcase_add_test(tc, t_gather_out_of_range);
  tcase_add_test(tc, t_outputs_alias);
  tcase_add_test(tc, t_mlp);
  tcase_add_test(tc, t_symbolic);
  tcase_add_test(tc, t_bad_calls);
  tcase_add_test(tc, t_out_of_memory);
  tcase_add_test(tc, t_random_properties);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(interp2_suite()); }
