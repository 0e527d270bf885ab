/* test_interp.c - the reference interpreter, part 1: element loads and stores
 * (the f16/bf16 rounding itself is tested in test_dtype.c), sources (param,
 * const, iota), unary and binary elementwise ops, cast, clamp, select.
 * Expected numbers are written out by hand (transcendental values are the
 * usual constants to 16+ digits). Part 2 is test_interp2.c.
 */
#include "interp_harness.h"

#include <stdint.h>

/* gc_store_f64 rounds once from double; int stores saturate. */
START_TEST(t_load_store) {
  unsigned char buf[64];
  /* double -> f16 rounds once from the double: 1 + 2^-11 + 2^-40 is above the
   * tie (rounding through float first would give 1.0) */
  gc_store_f64(buf, F16, 0, 1.0 + 0x1p-11 + 0x1p-40);
  ck_assert_double_eq(gc_load_f64(buf, F16, 0), 1.0 + 0x1p-10);
  gc_store_f64(buf, BF16, 1, 1.0 + 0x1p-8 + 0x1p-40);
  ck_assert_double_eq(gc_load_f64(buf, BF16, 1), 1.0 + 0x1p-7);
  gc_store_f64(buf, F32, 1, 1.0 + 0x1p-24 + 0x1p-50);
  ck_assert_double_eq(gc_load_f64(buf, F32, 1), 1.0 + 0x1p-23);
  gc_store_f64(buf, F64, 1, -0.1);
  ck_assert_double_eq(gc_load_f64(buf, F64, 1), -0.1);
  /* float -> int stores truncate and saturate, NaN -> 0 */
  gc_store_f64(buf, U8, 3, 300.0);
  ck_assert_double_eq(gc_load_f64(buf, U8, 3), 255);
  gc_store_f64(buf, U8, 3, -3.0);
  ck_assert_double_eq(gc_load_f64(buf, U8, 3), 0);
  gc_store_f64(buf, I8, 3, -7.9);
  ck_assert_double_eq(gc_load_f64(buf, I8, 3), -7);
  gc_store_f64(buf, I32, 1, -1e30);
  ck_assert_double_eq(gc_load_f64(buf, I32, 1), INT32_MIN);
  gc_store_f64(buf, I32, 1, NAN);
  ck_assert_double_eq(gc_load_f64(buf, I32, 1), 0);
  gc_store_f64(buf, I64, 1, 1e300);
  int64_t v;
  memcpy(&v, buf + 8, 8);
  ck_assert(v == INT64_MAX);
  gc_store_f64(buf, BOOL, 5, 0.25);
  ck_assert_int_eq(buf[5], 1);
  gc_store_f64(buf, BOOL, 5, -0.0);
  ck_assert_int_eq(buf[5], 0);
  buf[7] = 0xff;
  ck_assert_double_eq(gc_load_f64(buf, I8, 7), -1);
  ck_assert_double_eq(gc_load_f64(buf, U8, 7), 255);
}
END_TEST

/* ---- sources ------------------------------------------------------------------- */

/* params borrow weights tensors; a param can be an output. */
START_TEST(t_param) {
  it_run r;
  it_begin(&r,
           "graph @g(%x: f32[2, 2]) -> (f32[2, 2], f32[2, 2], bf16[3]) {\n"
           "  param %w: f32[2, 2] = \"layer.w\";\n"
           "  param %b: bf16[3] = \"bias\";\n"
           "  %y = add(%x, %w) : f32[2, 2];\n"
           "  return %y, %w, %b;\n"
           "}\n");
  it_weight(&r, "bias", BF16, 1, (int64_t[]){3}, 3, (double[]){0.5, -1.0, 3.0});
  it_weight(&r, "layer.w", F32, 2, (int64_t[]){2, 2}, 4, (double[]){10, 20, 30, 40});
  IN_F(&r, 1, 2, 3, 4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 11, 22, 33, 44);
  EXPECT_F(&r, 1, 0, 10, 20, 30, 40);
  EXPECT_F(&r, 2, 0, 0.5, -1.0, 3.0);
  it_end(&r);
}
END_TEST

/* a missing weights tensor is reported at the param. */
START_TEST(t_param_missing) {
  it_run r;
  it_begin(&r,
           "graph @g() -> (f32[2]) {\n"
           "  param %w: f32[2] = \"nope\";\n"
           "  return %w;\n"
           "}\n");
  it_weight(&r, "other", F32, 1, (int64_t[]){2}, 2, (double[]){1, 2});
  ck_assert_int_eq(it_exec_status(&r), GRAPHC_STATUS_WEIGHTS_ERROR);
  ck_assert_int_eq(r.d.n_errors, 1);
  ck_assert_int_eq(r.d.items[0].loc.line, 3);
  ck_assert_ptr_nonnull(strstr(r.d.items[0].msg, "\"nope\""));
  it_end(&r);
}
END_TEST

/* const: scalars broadcast, lists, default and explicit dtypes, inf/nan, big i64. */
START_TEST(t_const) {
  it_run r;
  it_begin(&r,
           "graph @g() -> (f32[2, 2], i64[3], bool[], f16[], bf16[], f64[2, 2], i8[3], f32[2], "
           "i64[]) {\n"
           "  %a = const(value=1.5, shape=[2, 2]) : f32[2, 2];\n"
           "  %b = const(value=[1, -2, 3]) : i64[3];\n"
           "  %c = const(value=true) : bool[];\n"
           "  %d = const(value=0.1, dtype=f16) : f16[];\n"
           "  %e = const(value=0.1, dtype=bf16) : bf16[];\n"
           "  %f = const(value=[1.5, -2.0, 3.0, 4.25], shape=[2, 2], dtype=f64) : f64[2, 2];\n"
           "  %h = const(value=-7, shape=[3], dtype=i8) : i8[3];\n"
           "  %i = const(value=[-inf, nan], dtype=f32) : f32[2];\n"
           "  %j = const(value=9007199254740993) : i64[];\n"
           "  return %a, %b, %c, %d, %e, %f, %h, %i, %j;\n"
           "}\n");
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1.5, 1.5, 1.5, 1.5);
  EXPECT_I(&r, 1, 1, -2, 3);
  EXPECT_I(&r, 2, 1);
  EXPECT_F(&r, 3, 0, 0.0999755859375);
  ck_assert_int_eq(it_bits16(&r, 3, 0), 0x2e66);
  EXPECT_F(&r, 4, 0, 0.10009765625);
  EXPECT_F(&r, 5, 0, 1.5, -2.0, 3.0, 4.25);
  EXPECT_I(&r, 6, -7, -7, -7);
  EXPECT_F(&r, 7, 0, -INFINITY, NAN);
  EXPECT_I(&r, 8, INT64_C(9007199254740993));
  it_end(&r);
}
END_TEST

/* iota along an axis, negative axes, several dtypes. */
START_TEST(t_iota) {
  it_run r;
  it_begin(&r,
           "graph @g() -> (i64[2, 3], f32[2, 3], i32[2, 3], f16[4], u8[3, 1]) {\n"
           "  %a = iota(shape=[2, 3], axis=1) : i64[2, 3];\n"
           "  %b = iota(shape=[2, 3], dtype=f32) : f32[2, 3];\n"
           "  %c = iota(shape=[2, 3], axis=-2, dtype=i32) : i32[2, 3];\n"
           "  %d = iota(shape=[4], dtype=f16) : f16[4];\n"
           "  %e = iota(shape=[3, 1], dtype=u8) : u8[3, 1];\n"
           "  return %a, %b, %c, %d, %e;\n"
           "}\n");
  it_exec(&r);
  EXPECT_I(&r, 0, 0, 1, 2, 0, 1, 2);
  EXPECT_F(&r, 1, 0, 0, 0, 0, 1, 1, 1);
  EXPECT_I(&r, 2, 0, 0, 0, 1, 1, 1);
  EXPECT_F(&r, 3, 0, 0, 1, 2, 3);
  EXPECT_I(&r, 4, 0, 1, 2);
  it_end(&r);
}
END_TEST

/* ---- unary elementwise ------------------------------------------------------------ */

/* Run `%y = OP(%x ATTRS)` on dtype DT[n] and compare with `want` (tolerance tol). */
static void check_unary_f(const char *op, const char *attrs, const char *dt, int n,
                          const double *x, const double *want, double tol) {
  char src[512];
  snprintf(src, sizeof src,
           "graph @g(%%x: %s[%d]) -> (%s[%d]) {\n  %%y = %s(%%x%s) : %s[%d];\n  return %%y;\n}\n",
           dt, n, dt, n, op, attrs, dt, n);
  it_run r;
  it_begin(&r, src);
  it_in_f(&r, n, x);
  it_exec(&r);
  it_expect_f(&r, 0, tol, n, want);
  it_end(&r);
}

/* The same for exact integer/bool ops; the result dtype may differ (cast). */
static void check_unary_i(const char *op, const char *attrs, const char *dt, const char *rdt,
                          int n, const int64_t *x, const int64_t *want) {
  char src[512];
  snprintf(src, sizeof src,
           "graph @g(%%x: %s[%d]) -> (%s[%d]) {\n  %%y = %s(%%x%s) : %s[%d];\n  return %%y;\n}\n",
           dt, n, rdt, n, op, attrs, rdt, n);
  it_run r;
  it_begin(&r, src);
  it_in_i(&r, n, x);
  it_exec(&r);
  it_expect_i(&r, 0, n, want);
  it_end(&r);
}

/* Inputs shared by the transcendental tests: exact in every float dtype. */
static const double XS[6] = {-2.0, -0.5, 0.0, 0.5, 1.0, 3.0};

/* One float unary op checked in all four float dtypes with per-dtype tolerance
 * (the result is rounded once into the dtype). */
static void check_unary_all(const char *op, const char *attrs, const double *x, const double *want) {
  check_unary_f(op, attrs, "f64", 6, x, want, 1e-15);
  check_unary_f(op, attrs, "f32", 6, x, want, 1e-7);
  check_unary_f(op, attrs, "f16", 6, x, want, 1e-3);
  check_unary_f(op, attrs, "bf16", 6, x, want, 8e-3);
}

/* every float unary op in all four float dtypes, plus special values. */
START_TEST(t_unary_float) {
  check_unary_all("neg", "", XS, (double[]){2.0, 0.5, -0.0, -0.5, -1.0, -3.0});
  check_unary_all("abs", "", XS, (double[]){2.0, 0.5, 0.0, 0.5, 1.0, 3.0});
  check_unary_all("relu", "", XS, (double[]){0, 0, 0, 0.5, 1.0, 3.0});
  check_unary_all("exp", "", XS,
                  (double[]){0.1353352832366127, 0.6065306597126334, 1.0, 1.6487212707001282,
                             2.718281828459045, 20.085536923187668});
  check_unary_all("tanh", "", XS,
                  (double[]){-0.9640275800758169, -0.46211715726000974, 0.0, 0.46211715726000974,
                             0.7615941559557649, 0.9950547536867305});
  check_unary_all("sigmoid", "", XS,
                  (double[]){0.11920292202211755, 0.3775406687981454, 0.5, 0.6224593312018546,
                             0.7310585786300049, 0.9525741268224334});
  check_unary_all("silu", "", XS,
                  (double[]){-0.2384058440442351, -0.1887703343990727, 0.0, 0.3112296656009273,
                             0.7310585786300049, 2.8577223804672998});
  check_unary_all("erf", "", XS,
                  (double[]){-0.9953222650189527, -0.5204998778130465, 0.0, 0.5204998778130465,
                             0.8427007929497149, 0.9999779095030014});
  check_unary_all("gelu", "", XS,
                  (double[]){-0.04550026389635842, -0.15426876936299344, 0.0, 0.34573123063700656,
                             0.8413447460685429, 2.99595030590511});
  check_unary_all("gelu", ", approximate=\"none\"", XS,
                  (double[]){-0.04550026389635842, -0.15426876936299344, 0.0, 0.34573123063700656,
                             0.8413447460685429, 2.99595030590511});
  check_unary_all("gelu", ", approximate=\"tanh\"", XS,
                  (double[]){-0.04540230591222494, -0.15428599017485606, 0.0, 0.34571400982514394,
                             0.8411919906082768, 2.996362607918227});
  check_unary_all("sin", "", XS,
                  (double[]){-0.9092974268256817, -0.479425538604203, 0.0, 0.479425538604203,
                             0.8414709848078965, 0.1411200080598672});
  check_unary_all("cos", "", XS,
                  (double[]){-0.4161468365471424, 0.8775825618903728, 1.0, 0.8775825618903728,
                             0.5403023058681398, -0.9899924966004454});
  static const double ys[6] = {0.25, 1.0, 2.0, 4.0, 10.0, 0.0};
  check_unary_all("log", "", ys,
                  (double[]){-1.3862943611198906, 0.0, 0.6931471805599453, 1.3862943611198906,
                             2.302585092994046, -INFINITY});
  check_unary_all("sqrt", "", ys,
                  (double[]){0.5, 1.0, 1.4142135623730951, 2.0, 3.1622776601683795, 0.0});
  check_unary_all("rsqrt", "", ys,
                  (double[]){2.0, 1.0, 0.7071067811865475, 0.5, 0.31622776601683794, INFINITY});
  static const double zs[6] = {-1.5, -0.25, 0.0, 0.75, 2.0, 2.5};
  check_unary_all("floor", "", zs, (double[]){-2, -1, 0, 0, 2, 2});
  check_unary_all("ceil", "", zs, (double[]){-1, -0.0, 0, 1, 2, 3});
  /* special values */
  check_unary_f("log", "", "f32", 2, (double[]){-1.0, INFINITY}, (double[]){NAN, INFINITY}, 0);
  check_unary_f("sqrt", "", "f64", 1, (double[]){-4.0}, (double[]){NAN}, 0);
  check_unary_f("exp", "", "f32", 3, (double[]){100.0, -INFINITY, NAN}, (double[]){INFINITY, 0, NAN}, 0);
  check_unary_f("exp", "", "f16", 1, (double[]){12.0}, (double[]){INFINITY}, 0); /* 162755 > 65504 */
  check_unary_f("sigmoid", "", "f32", 2, (double[]){-INFINITY, INFINITY}, (double[]){0, 1}, 0);
  check_unary_f("relu", "", "f32", 2, (double[]){NAN, -INFINITY}, (double[]){0, 0}, 0);
  check_unary_f("tanh", "", "bf16", 2, (double[]){INFINITY, -20}, (double[]){1, -1}, 0);
  /* exact f16/bf16 rounding of a result: e = 2.718281828... -> 2.71875 in both */
  check_unary_f("exp", "", "f16", 1, (double[]){1.0}, (double[]){2.71875}, 0);
  check_unary_f("exp", "", "bf16", 1, (double[]){1.0}, (double[]){2.71875}, 0);
}
END_TEST

/* neg/abs/relu wrap on ints, not on bool. */
START_TEST(t_unary_int) {
  check_unary_i("neg", "", "i8", "i8", 4, (int64_t[]){-128, 127, 0, -5},
                (int64_t[]){-128, -127, 0, 5});
  check_unary_i("neg", "", "u8", "u8", 3, (int64_t[]){5, 0, 255}, (int64_t[]){251, 0, 1});
  check_unary_i("neg", "", "i64", "i64", 2, (int64_t[]){INT64_MIN, INT64_C(9007199254740993)},
                (int64_t[]){INT64_MIN, INT64_C(-9007199254740993)});
  check_unary_i("abs", "", "i32", "i32", 4, (int64_t[]){INT32_MIN, -7, 7, 0},
                (int64_t[]){INT32_MIN, 7, 7, 0});
  check_unary_i("abs", "", "u8", "u8", 2, (int64_t[]){200, 3}, (int64_t[]){200, 3});
  check_unary_i("abs", "", "i64", "i64", 1, (int64_t[]){INT64_MIN}, (int64_t[]){INT64_MIN});
  check_unary_i("relu", "", "i32", "i32", 3, (int64_t[]){-3, 0, 4}, (int64_t[]){0, 0, 4});
  check_unary_i("relu", "", "u8", "u8", 2, (int64_t[]){200, 0}, (int64_t[]){200, 0});
  check_unary_i("relu", "", "i8", "i8", 2, (int64_t[]){-128, 127}, (int64_t[]){0, 127});
  check_unary_i("not", "", "bool", "bool", 2, (int64_t[]){1, 0}, (int64_t[]){0, 1});
}
END_TEST

/* clamp with one or both bounds; NaN propagates. */
START_TEST(t_clamp) {
  check_unary_f("clamp", ", min=0.0, max=1.0", "f32", 5, (double[]){-1, 0.5, 2, NAN, INFINITY},
                (double[]){0, 0.5, 1, NAN, 1}, 0);
  check_unary_f("clamp", ", max=6", "f16", 3, (double[]){-1, 7, 6}, (double[]){-1, 6, 6}, 0);
  check_unary_f("clamp", ", min=-0.5", "bf16", 2, (double[]){-1, 7}, (double[]){-0.5, 7}, 0);
  check_unary_f("clamp", ", min=0.1", "f64", 2, (double[]){0, 7}, (double[]){0.1, 7}, 0);
  check_unary_i("clamp", ", min=-2", "i32", "i32", 3, (int64_t[]){-5, -2, 9}, (int64_t[]){-2, -2, 9});
  check_unary_i("clamp", ", min=10, max=20", "u8", "u8", 3, (int64_t[]){5, 15, 250},
                (int64_t[]){10, 15, 20});
  check_unary_i("clamp", ", min=-9007199254740993, max=9007199254740993", "i64", "i64", 3,
                (int64_t[]){INT64_MIN, INT64_C(9007199254740995), 5},
                (int64_t[]){INT64_C(-9007199254740993), INT64_C(9007199254740993), 5});
}
END_TEST

/* ---- cast ------------------------------------------------------------------------------- */

/* cast from a float dtype given as doubles. */
static void cast_f(const char *from, const char *to, int n, const double *x, const double *want) {
  char attrs[32];
  snprintf(attrs, sizeof attrs, ", to=%s", to);
  char src[512];
  snprintf(src, sizeof src,
           "graph @g(%%x: %s[%d]) -> (%s[%d]) {\n  %%y = cast(%%x%s) : %s[%d];\n  return %%y;\n}\n",
           from, n, to, n, attrs, to, n);
  it_run r;
  it_begin(&r, src);
  it_in_f(&r, n, x);
  it_exec(&r);
  it_expect_f(&r, 0, 0, n, want);
  it_end(&r);
}

/* float -> int truncates, saturates, NaN -> 0. */
START_TEST(t_cast_float_to_int) {
  cast_f("f32", "i8", 9, (double[]){300.7, -300, -1.9, NAN, 1.9, 127.9, -128.9, INFINITY, -INFINITY},
         (double[]){127, -128, -1, 0, 1, 127, -128, 127, -128});
  cast_f("f32", "u8", 6, (double[]){-5, 255.9, 256, 3.99, -0.5, NAN}, (double[]){0, 255, 255, 3, 0, 0});
  cast_f("f32", "i32", 4, (double[]){3e9, -3e9, 2147483520.0, -2.5},
         (double[]){INT32_MAX, INT32_MIN, 2147483520.0, -2});
  cast_f("f16", "i8", 2, (double[]){300, -0.75}, (double[]){127, 0});
  cast_f("bf16", "u8", 2, (double[]){-1e30, 1e30}, (double[]){0, 255});
  /* i64 results checked exactly (above 2^53) */
  it_run r;
  it_begin(&r, "graph @g(%x: f64[5]) -> (i64[5]) {\n  %y = cast(%x, to=i64) : i64[5];\n  return %y;\n}\n");
  IN_F(&r, 1e19, -1e19, NAN, 4.6e18, -9.99);
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_MAX, INT64_MIN, 0, INT64_C(4600000000000000000), -9);
  it_end(&r);
}
END_TEST

/* int -> int wraps; to bool is x != 0; bool -> number is 0/1. */
START_TEST(t_cast_int) {
  check_unary_i("cast", ", to=i8", "i32", "i8", 4, (int64_t[]){200, -129, 256, 127},
                (int64_t[]){-56, 127, 0, 127});
  check_unary_i("cast", ", to=i32", "i64", "i32", 3,
                (int64_t[]){INT64_C(4294967301), -1, INT64_C(2147483648)},
                (int64_t[]){5, -1, INT32_MIN});
  check_unary_i("cast", ", to=i8", "u8", "i8", 2, (int64_t[]){200, 127}, (int64_t[]){-56, 127});
  check_unary_i("cast", ", to=u8", "i8", "u8", 2, (int64_t[]){-1, -128}, (int64_t[]){255, 128});
  check_unary_i("cast", ", to=i64", "i8", "i64", 2, (int64_t[]){-1, -128}, (int64_t[]){-1, -128});
  check_unary_i("cast", ", to=i64", "u8", "i64", 1, (int64_t[]){255}, (int64_t[]){255});
  /* to bool is x != 0, not truncation */
  check_unary_i("cast", ", to=bool", "i32", "bool", 3, (int64_t[]){0, -7, 256}, (int64_t[]){0, 1, 1});
  check_unary_i("cast", ", to=i32", "bool", "i32", 2, (int64_t[]){1, 0}, (int64_t[]){1, 0});
  check_unary_i("cast", ", to=u8", "bool", "u8", 2, (int64_t[]){1, 0}, (int64_t[]){1, 0});
}
END_TEST

/* int -> float: rounded once, to nearest even, from the exact integer. */
START_TEST(t_cast_int_to_float) {
  it_run r;
  it_begin(&r,
           "graph @g(%x: i64[3], %h: i32[5], %b: bool[2]) -> (f32[3], f64[3], bf16[3], f16[5], "
           "f32[2]) {\n"
           "  %a = cast(%x, to=f32) : f32[3];\n"
           "  %c = cast(%x, to=f64) : f64[3];\n"
           "  %d = cast(%x, to=bf16) : bf16[3];\n"
           "  %e = cast(%h, to=f16) : f16[5];\n"
           "  %f = cast(%b, to=f32) : f32[2];\n"
           "  return %a, %c, %d, %e, %f;\n"
           "}\n");
  IN_I(&r, 16777217, -16777219, INT64_C(9007199254740993));
  IN_I(&r, 2049, 2051, 65519, 65520, 100000);
  IN_I(&r, 1, 0);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 16777216, -16777220, 9007199254740992.0);
  EXPECT_F(&r, 1, 0, 16777217, -16777219, 9007199254740992.0); /* 2^53+1 ties to 2^53 */
  EXPECT_F(&r, 2, 0, 16777216, -16777216, 9007199254740992.0);
  EXPECT_F(&r, 3, 0, 2048, 2052, 65504, INFINITY, INFINITY);    /* 2049 ties to 2048 */
  EXPECT_F(&r, 4, 0, 1, 0);
  it_end(&r);
  /* bf16 has 8 significant bits: 257 ties to 256, 259 ties to 260 */
  it_begin(&r, "graph @g(%x: i64[3]) -> (bf16[3]) {\n  %y = cast(%x, to=bf16) : bf16[3];\n  return %y;\n}\n");
  IN_I(&r, 257, 259, -259);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 256, 260, -260);
  it_end(&r);
  it_begin(&r, "graph @g(%x: i32[5]) -> (f16[5]) {\n  %y = cast(%x, to=f16) : f16[5];\n  return %y;\n}\n");
  IN_I(&r, 2049, 2051, 65519, 65520, -100000);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 2048, 2052, 65504, INFINITY, -INFINITY);
  it_end(&r);
}
END_TEST

/* float -> float rounds once; float -> bool is x != 0. */
START_TEST(t_cast_float_to_float) {
  cast_f("f32", "f16", 6, (double[]){65519, 65520, 1e-8, 3e-8, 0.1, -65536},
         (double[]){65504, INFINITY, 0, 5.960464477539063e-08, 0.0999755859375, -INFINITY});
  cast_f("f32", "bf16", 4, (double[]){1.00390625, 1.01171875, 3.4028234663852886e38, NAN},
         (double[]){1, 1.015625, INFINITY, NAN});
  cast_f("f16", "f32", 3, (double[]){0.0999755859375, 65504, 5.960464477539063e-08},
         (double[]){0.0999755859375, 65504, 5.960464477539063e-08});
  cast_f("bf16", "f16", 3, (double[]){1.0078125, 65536, -INFINITY}, (double[]){1.0078125, INFINITY, -INFINITY});
  cast_f("f64", "f16", 2, (double[]){1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11},
         (double[]){1.0009765625, 1.0}); /* rounded once from the double */
  cast_f("f64", "f32", 2, (double[]){0.1, 1e39}, (double[]){0.100000001490116119384765625, INFINITY});
  cast_f("f32", "f64", 1, (double[]){0.1f}, (double[]){0.100000001490116119384765625});
  cast_f("f32", "bool", 5, (double[]){0, -0.0, 0.5, NAN, -INFINITY}, (double[]){0, 0, 1, 1, 1});
  cast_f("f16", "bool", 2, (double[]){5.960464477539063e-08, 0}, (double[]){1, 0});
}
END_TEST

/* ---- binary elementwise -------------------------------------------------------------- */

/* Build and run `%y = OP(%a, %b)` with shapes/dtypes given as text. */
static void bin_begin(it_run *r, const char *op, const char *ta, const char *tb, const char *ty) {
  char src[512];
  snprintf(src, sizeof src,
           "graph @g(%%a: %s, %%b: %s) -> (%s) {\n  %%y = %s(%%a, %%b) : %s;\n  return %%y;\n}\n",
           ta, tb, ty, op, ty);
  it_begin(r, src);
}

/* float add/sub/mul/div/pow with broadcasting and rounding to the dtype. */
START_TEST(t_binary_float) {
  it_run r;
  bin_begin(&r, "add", "f32[2, 3]", "f32[3]", "f32[2, 3]");
  IN_F(&r, 1, 2, 3, 4, 5, 6);
  IN_F(&r, 10, 20, 30);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 11, 22, 33, 14, 25, 36);
  it_end(&r);

  bin_begin(&r, "sub", "f64[2, 1]", "f64[1, 3]", "f64[2, 3]");
  IN_F(&r, 10, 20);
  IN_F(&r, 1, 2, 3);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 9, 8, 7, 19, 18, 17);
  it_end(&r);

  bin_begin(&r, "mul", "f16[]", "f16[3]", "f16[3]");
  IN_F(&r, 0.5);
  IN_F(&r, 2, 3, 65504);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 1.5, 32752);
  it_end(&r);

  bin_begin(&r, "mul", "bf16[2]", "bf16[2]", "bf16[2]");
  IN_F(&r, 3, 1e38);
  IN_F(&r, 0.5, 10);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1.5, INFINITY);
  it_end(&r);

  bin_begin(&r, "div", "f32[5]", "f32[5]", "f32[5]");
  IN_F(&r, 1, -1, 0, 7, 1);
  IN_F(&r, 0, 0, 0, 2, 3);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-7, INFINITY, -INFINITY, NAN, 3.5, 0.3333333333333333);
  it_end(&r);

  /* f16 add rounds the exact sum once: 1 + 2^-11 ties to 1, 1 + 1.5*2^-11 goes up */
  bin_begin(&r, "add", "f16[2]", "f16[2]", "f16[2]");
  IN_F(&r, 1, 1);
  IN_F(&r, 0x1p-11, 0x3p-12);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 1.0009765625);
  it_end(&r);

  bin_begin(&r, "add", "bf16[2]", "bf16[]", "bf16[2]");
  IN_F(&r, 1, 256);
  IN_F(&r, 0x1p-8);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1, 256);
  it_end(&r);

  bin_begin(&r, "pow", "f32[5]", "f32[5]", "f32[5]");
  IN_F(&r, 2, 4, 2, -8, 0);
  IN_F(&r, 10, 0.5, -1, 0.5, 0);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 1024, 2, 0.5, NAN, 1);
  it_end(&r);

  bin_begin(&r, "pow", "f64[2]", "f64[]", "f64[2]");
  IN_F(&r, 2, 10);
  IN_F(&r, 0.5);
  it_exec(&r);
  EXPECT_F(&r, 0, 1e-15, 1.4142135623730951, 3.1622776601683795);
  it_end(&r);

  bin_begin(&r, "add", "f32[]", "f32[]", "f32[]");
  IN_F(&r, 1.5);
  IN_F(&r, -4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, -2.5);
  it_end(&r);
}
END_TEST

/* maximum/minimum propagate NaN; ints compare exactly (u8 unsigned). */
START_TEST(t_maximum_minimum) {
  it_run r;
  bin_begin(&r, "maximum", "f32[5]", "f32[5]", "f32[5]");
  IN_F(&r, 1, NAN, 2, -1, -INFINITY);
  IN_F(&r, NAN, 1, 3, -1.5, -5);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, NAN, NAN, 3, -1, -5);
  it_end(&r);
  bin_begin(&r, "minimum", "bf16[5]", "bf16[5]", "bf16[5]");
  IN_F(&r, 1, NAN, 2, -1, -INFINITY);
  IN_F(&r, NAN, 1, 3, -1.5, -5);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, NAN, NAN, 2, -1.5, -INFINITY);
  it_end(&r);
  bin_begin(&r, "maximum", "f16[2, 2]", "f16[2]", "f16[2, 2]");
  IN_F(&r, 1, 5, NAN, -3);
  IN_F(&r, 2, 4);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, 2, 5, NAN, 4);
  it_end(&r);
  bin_begin(&r, "maximum", "i32[2]", "i32[2]", "i32[2]");
  IN_I(&r, -5, 7);
  IN_I(&r, 3, -9);
  it_exec(&r);
  EXPECT_I(&r, 0, 3, 7);
  it_end(&r);
  bin_begin(&r, "maximum", "u8[2]", "u8[2]", "u8[2]");  /* unsigned compare */
  IN_I(&r, 200, 3);
  IN_I(&r, 100, 250);
  it_exec(&r);
  EXPECT_I(&r, 0, 200, 250);
  it_end(&r);
  bin_begin(&r, "minimum", "i64[2]", "i64[]", "i64[2]");
  IN_I(&r, INT64_C(9007199254740993), INT64_C(-9007199254740993));
  IN_I(&r, INT64_C(9007199254740992));
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_C(9007199254740992), INT64_C(-9007199254740993));
  it_end(&r);
}
END_TEST

/* integer add/sub/mul wrap in every width. */
START_TEST(t_binary_int_wrap) {
  it_run r;
  bin_begin(&r, "add", "i8[3]", "i8[3]", "i8[3]");
  IN_I(&r, 127, -128, 100);
  IN_I(&r, 1, -1, 100);
  it_exec(&r);
  EXPECT_I(&r, 0, -128, 127, -56);
  it_end(&r);
  bin_begin(&r, "sub", "u8[2]", "u8[2]", "u8[2]");
  IN_I(&r, 0, 5);
  IN_I(&r, 1, 3);
  it_exec(&r);
  EXPECT_I(&r, 0, 255, 2);
  it_end(&r);
  bin_begin(&r, "mul", "i32[3]", "i32[3]", "i32[3]");
  IN_I(&r, 65536, -3, 65537);
  IN_I(&r, 65536, 5, 65537);
  it_exec(&r);
  EXPECT_I(&r, 0, 0, -15, 131073);  /* 65537^2 = 2^32 + 2^17 + 1 */
  it_end(&r);
  bin_begin(&r, "add", "i64[3]", "i64[3]", "i64[3]");
  IN_I(&r, INT64_MAX, INT64_C(9007199254740993), INT64_MIN);
  IN_I(&r, 1, 2, -1);
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_MIN, INT64_C(9007199254740995), INT64_MAX);
  it_end(&r);
  bin_begin(&r, "mul", "i64[2]", "i64[2]", "i64[2]");
  IN_I(&r, 3037000499, INT64_C(4611686018427387904));
  IN_I(&r, 3037000499, 4);
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_C(9223372030926249001), 0);
  it_end(&r);
  bin_begin(&r, "sub", "i64[1]", "i64[1]", "i64[1]");
  IN_I(&r, INT64_MIN);
  IN_I(&r, 1);
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_MAX);
  it_end(&r);
}
END_TEST

/* integer division truncates; x/0 = 0; MIN/-1 wraps. */
START_TEST(t_div_int) {
  it_run r;
  bin_begin(&r, "div", "i32[7]", "i32[7]", "i32[7]");
  IN_I(&r, 7, -7, 7, -7, 5, INT32_MIN, 0);
  IN_I(&r, 2, 2, -2, -2, 0, -1, 0);
  it_exec(&r);
  EXPECT_I(&r, 0, 3, -3, -3, 3, 0, INT32_MIN, 0);
  it_end(&r);
  bin_begin(&r, "div", "i64[3]", "i64[3]", "i64[3]");
  IN_I(&r, INT64_MIN, INT64_C(9007199254740993), -1);
  IN_I(&r, -1, 1, 0);
  it_exec(&r);
  EXPECT_I(&r, 0, INT64_MIN, INT64_C(9007199254740993), 0);
  it_end(&r);
  bin_begin(&r, "div", "u8[3]", "u8[]", "u8[3]");
  IN_I(&r, 255, 7, 0);
  IN_I(&r, 2);
  it_exec(&r);
  EXPECT_I(&r, 0, 127, 3, 0);
  it_end(&r);
  bin_begin(&r, "div", "i8[3]", "i8[3]", "i8[3]");
  IN_I(&r, -128, -128, 9);
  IN_I(&r, -1, 0, -4);
  it_exec(&r);
  EXPECT_I(&r, 0, -128, 0, -2);
  it_end(&r);
}
END_TEST

/* comparisons for floats (NaN), exact i64, bool, u8, with broadcasting. */
START_TEST(t_compare) {
  static const char *ops[6] = {"eq", "ne", "lt", "le", "gt", "ge"};
  static const int64_t want[6][4] = {
      {0, 1, 0, 0}, {1, 0, 1, 1}, {1, 0, 0, 0}, {1, 1, 0, 0}, {0, 0, 0, 1}, {0, 1, 0, 1}};
  static const char *fdts[4] = {"f32", "f64", "f16", "bf16"};
  for (int d = 0; d < 4; d++)
    for (int k = 0; k < 6; k++) {
      char ta[16];
      snprintf(ta, sizeof ta, "%s[4]", fdts[d]);
      it_run r;
      bin_begin(&r, ops[k], ta, ta, "bool[4]");
      IN_F(&r, 1, 2, NAN, 3);
      IN_F(&r, 2, 2, NAN, 1);
      it_exec(&r);
      it_expect_i(&r, 0, 4, want[k]);
      it_end(&r);
    }
  /* i64 beyond 2^53: exact, never through double */
  static const int64_t want64[6] = {0, 1, 0, 0, 1, 1};
  for (int k = 0; k < 6; k++) {
    it_run r;
    bin_begin(&r, ops[k], "i64[1]", "i64[1]", "bool[1]");
    IN_I(&r, INT64_C(9007199254740993));
    IN_I(&r, INT64_C(9007199254740992));
    it_exec(&r);
    it_expect_i(&r, 0, 1, &want64[k]);
    it_end(&r);
  }
  it_run r;
  bin_begin(&r, "eq", "bool[4]", "bool[4]", "bool[4]");
  IN_I(&r, 1, 0, 1, 0);
  IN_I(&r, 1, 1, 0, 0);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 0, 0, 1);
  it_end(&r);
  bin_begin(&r, "lt", "bool[2]", "bool[2]", "bool[2]");
  IN_I(&r, 0, 1);
  IN_I(&r, 1, 0);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 0);
  it_end(&r);
  bin_begin(&r, "lt", "u8[2]", "u8[2]", "bool[2]");
  IN_I(&r, 200, 1);
  IN_I(&r, 100, 2);
  it_exec(&r);
  EXPECT_I(&r, 0, 0, 1);
  it_end(&r);
  bin_begin(&r, "ge", "i8[2, 1]", "i8[2]", "bool[2, 2]");
  IN_I(&r, -1, 5);
  IN_I(&r, -1, 6);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 0, 1, 0);
  it_end(&r);
}
END_TEST

/* and/or on bools with broadcasting. */
START_TEST(t_and_or_not) {
  it_run r;
  bin_begin(&r, "and", "bool[4]", "bool[4]", "bool[4]");
  IN_I(&r, 1, 1, 0, 0);
  IN_I(&r, 1, 0, 1, 0);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 0, 0, 0);
  it_end(&r);
  bin_begin(&r, "or", "bool[2, 2]", "bool[2]", "bool[2, 2]");
  IN_I(&r, 1, 0, 0, 0);
  IN_I(&r, 0, 1);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 1, 0, 1);
  it_end(&r);
}
END_TEST

/* select broadcasts cond, a and b together. */
START_TEST(t_select) {
  it_run r;
  it_begin(&r,
           "graph @g(%c: bool[2, 1], %a: i64[3], %b: i64[]) -> (i64[2, 3]) {\n"
           "  %y = select(%c, %a, %b) : i64[2, 3];\n"
           "  return %y;\n"
           "}\n");
  IN_I(&r, 1, 0);
  IN_I(&r, 1, 2, INT64_C(9007199254740993));
  IN_I(&r, 9);
  it_exec(&r);
  EXPECT_I(&r, 0, 1, 2, INT64_C(9007199254740993), 9, 9, 9);
  it_end(&r);
  it_begin(&r,
           "graph @g(%c: bool[3], %a: f16[3], %b: f16[3]) -> (f16[3]) {\n"
           "  %y = select(%c, %a, %b) : f16[3];\n"
           "  return %y;\n"
           "}\n");
  IN_I(&r, 0, 1, 0);
  IN_F(&r, 0.5, 1.5, 2.5);
  IN_F(&r, -1, NAN, -3);
  it_exec(&r);
  EXPECT_F(&r, 0, 0, -1, 1.5, -3);
  it_end(&r);
  it_begin(&r,
           "graph @g(%c: bool[], %a: bool[2], %b: bool[1, 2]) -> (bool[1, 2]) {\n"
           "  %y = select(%c, %a, %b) : bool[1, 2];\n"
           "  return %y;\n"
           "}\n");
  IN_I(&r, 0);
  IN_I(&r, 1, 1);
  IN_I(&r, 0, 1);
  it_exec(&r);
  EXPECT_I(&r, 0, 0, 1);
  it_end(&r);
}
END_TEST

/* Suite of part 1. */
static Suite *interp_suite(void) {
  Suite *s = suite_create("interp");
  TCase *tc = tcase_create("elementwise");
  tcase_add_test(tc, t_load_store);
  tcase_add_test(tc, t_param);
  tcase_add_test(tc, t_param_missing);
  tcase_add_test(tc, t_const);
  tcase_add_test(tc, t_iota);
  tcase_add_test(tc, t_unary_float);
  tcase_add_test(tc, t_unary_int);
  tcase_add_test(tc, t_clamp);
  tcase_add_test(tc, t_cast_float_to_int);
  tcase_add_test(tc, t_cast_int);
  tcase_add_test(tc, t_cast_int_to_float);
  tcase_add_test(tc, t_cast_float_to_float);
  tcase_add_test(tc, t_binary_float);
  tcase_add_test(tc, t_maximum_minimum);
  tcase_add_test(tc, t_binary_int_wrap);
  tcase_add_test(tc, t_div_int);
  tcase_add_test(tc, t_compare);
  tcase_add_test(tc, t_and_or_not);
  tcase_add_test(tc, t_select);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(interp_suite()); }
