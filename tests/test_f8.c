/* test_f8.c - the fp8 dtypes (f8e4m3 = ONNX FLOAT8E4M3FN, f8e5m2 = FLOAT8E5M2).
 *
 * ir/dtype.c's conversions against a reference that shares no code with it (the
 * formats' values built from their bit fields, nearest-pattern search with ties to the
 * even pattern), every bit pattern in both directions, the saturate rule at the edges;
 * then the cast op on the interpreter and the cpu backend (Kernel IR's fp8 expansion,
 * codegen/kir_f8.c, through the LLVM host path) bit for bit on every f16 value, random
 * f32 and f64 values and every fp8 pattern. Parser/printer round trip of the names.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc.h"
#include "ir/dtype.h"
#include "testutil.h"

/* ---- reference ------------------------------------------------------------------------ */

typedef struct fmt8 { int mant, bias, fn; } fmt8;  /* fn: e4m3's finite-only layout */
static const fmt8 E4M3 = {3, 7, 1}, E5M2 = {2, 15, 0};

/* Value of pattern b by the format's definition; NaN for NaN patterns. */
static double ref_decode(fmt8 f, unsigned b) {
  int ebits = 7 - f.mant, sign = b >> 7;
  unsigned e = (b >> f.mant) & ((1u << ebits) - 1), m = b & ((1u << f.mant) - 1);
  double v;
  if (f.fn && e == 15 && m == 7) return NAN;
  if (!f.fn && e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp(m, 1 - f.bias - f.mant);
  else v = ldexp(m | (1u << f.mant), (int)e - f.bias - f.mant);
  return sign ? -v : v;
}

static int ref_isnan_bits(fmt8 f, unsigned b) { return isnan(ref_decode(f, b)); }

/* Nearest finite pattern to x, ties to the even pattern; overflow past the largest finite
 * value by more than half a step (or a tie with an odd largest value) is "over". */
static unsigned ref_encode(fmt8 f, double x, int saturate) {
  unsigned sign = signbit(x) ? 0x80 : 0, maxb = f.fn ? 0x7e : 0x7b;
  if (isnan(x)) return sign | (f.fn ? 0x7f : 0x7e);
  double a = fabs(x), maxv = ref_decode(f, maxb);
  unsigned over = f.fn ? 0x7f : 0x7c;
  if (isinf(a)) return sign | (saturate ? maxb : over);
  unsigned best = 0;
  for (unsigned b = 0; b <= maxb; b++)
    if (ref_decode(f, b) <= a) best = b;
  if (best == maxb) {
    double step = maxv - ref_decode(f, maxb - 1);
    double mid = maxv + step / 2;  /* halfway to the next (non-finite) step */
    if (a > mid || (a == mid && (maxb & 1))) return sign | (saturate ? maxb : over);
    return sign | maxb;
  }
  double lo = ref_decode(f, best), hi = ref_decode(f, best + 1);
  if (a - lo < hi - a) return sign | best;
  if (a - lo > hi - a) return sign | (best + 1);
  return sign | ((best & 1) ? best + 1 : best);
}

static unsigned enc(fmt8 f, double x, int sat) {
  return f.fn ? gc_f64_to_f8e4m3(x, sat) : gc_f64_to_f8e5m2(x, sat);
}
static double dec(fmt8 f, unsigned b) { return f.fn ? gc_f8e4m3_to_f64((uint8_t)b) : gc_f8e5m2_to_f64((uint8_t)b); }

/* ---- ir/dtype.c ------------------------------------------------------------------------ */

/* Every pattern widens to its defined value and narrows back to itself. */
START_TEST(t_all_patterns) {
  for (int k = 0; k < 2; k++) {
    fmt8 f = k ? E5M2 : E4M3;
    for (unsigned b = 0; b < 256; b++) {
      double r = ref_decode(f, b), g = dec(f, b);
      if (isnan(r)) {
        ck_assert_msg(isnan(g) && !!signbit(g) == !!(b & 0x80), "fmt %d pattern 0x%02x", k, b);
        continue;
      }
      ck_assert_msg(g == r && !!signbit(g) == !!signbit(r), "fmt %d pattern 0x%02x: %g vs %g", k, b, g, r);
      unsigned inf = !f.fn && (b & 0x7f) == 0x7c;  /* e5m2 infinities saturate */
      ck_assert_uint_eq(enc(f, g, 1), inf ? (b & 0x80) | 0x7b : b);
      ck_assert_uint_eq(enc(f, g, 0), b);
    }
  }
}
END_TEST

/* Edge cases of the ONNX Cast table (saturate and not) and of rounding. */
START_TEST(t_edges) {
  struct { double x; unsigned e4s, e4n, e5s, e5n; } c[] = {
      {INFINITY, 0x7e, 0x7f, 0x7b, 0x7c}, {-INFINITY, 0xfe, 0xff, 0xfb, 0xfc},
      {448, 0x7e, 0x7e, 0x5f, 0x5f},      {464, 0x7e, 0x7e, 0x5f, 0x5f},  /* tie: even 448 */
      {464.0001, 0x7e, 0x7f, 0x5f, 0x5f}, {480, 0x7e, 0x7f, 0x60, 0x60},
      {1e9, 0x7e, 0x7f, 0x7b, 0x7c},      {57344, 0x7e, 0x7f, 0x7b, 0x7b},
      {61439, 0x7e, 0x7f, 0x7b, 0x7b},    {61440, 0x7e, 0x7f, 0x7b, 0x7c},  /* tie: odd max */
      {0x1p-9, 0x01, 0x01, 0x18, 0x18},   {0x1p-10, 0x00, 0x00, 0x14, 0x14}, /* tie: even 0 */
      {0x1.8p-10, 0x01, 0x01, 0x16, 0x16}, {0x1p-17, 0, 0, 0, 0},          /* tie: even 0 */
      {0x1.0001p-17, 0, 0, 0x01, 0x01},   {-0.0, 0x80, 0x80, 0x80, 0x80},
      {1.0625, 0x38, 0x38, 0x3c, 0x3c},   {1.1875, 0x3a, 0x3a, 0x3d, 0x3d},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    ck_assert_msg(gc_f64_to_f8e4m3(c[i].x, 1) == c[i].e4s, "e4m3 sat %a: 0x%02x", c[i].x, gc_f64_to_f8e4m3(c[i].x, 1));
    ck_assert_msg(gc_f64_to_f8e4m3(c[i].x, 0) == c[i].e4n, "e4m3 %a: 0x%02x", c[i].x, gc_f64_to_f8e4m3(c[i].x, 0));
    ck_assert_msg(gc_f64_to_f8e5m2(c[i].x, 1) == c[i].e5s, "e5m2 sat %a: 0x%02x", c[i].x, gc_f64_to_f8e5m2(c[i].x, 1));
    ck_assert_msg(gc_f64_to_f8e5m2(c[i].x, 0) == c[i].e5n, "e5m2 %a: 0x%02x", c[i].x, gc_f64_to_f8e5m2(c[i].x, 0));
  }
  ck_assert_uint_eq(gc_f64_to_f8e4m3(NAN, 1), 0x7f);
  ck_assert_uint_eq(gc_f64_to_f8e4m3(-NAN, 0), 0xff);
  ck_assert_uint_eq(gc_f64_to_f8e5m2(NAN, 1), 0x7e);
  ck_assert_uint_eq(gc_f64_to_f8e5m2(-NAN, 1), 0xfe);
  /* a store (any op but cast) saturates finite values and keeps infinities */
  unsigned char b[2];
  gc_store_f64(b, GRAPHC_DTYPE_F8E5M2, 0, INFINITY);
  gc_store_f64(b, GRAPHC_DTYPE_F8E5M2, 1, 1e6);
  ck_assert_uint_eq(b[0], 0x7c);
  ck_assert_uint_eq(b[1], 0x7b);
}
END_TEST

/* Every f16 value and random doubles against the nearest-pattern reference. */
START_TEST(t_sweep) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < 2; k++) {
    fmt8 f = k ? E5M2 : E4M3;
    for (unsigned h = 0; h < 65536 + 200000; h++) {
      double x;
      if (h < 65536) {
        x = gc_f16_to_f64((uint16_t)h);
      } else {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = ldexp((double)(s >> 11) * 0x1p-53 + 0.5, (int)((s >> 3) % 48) - 30) * ((s & 1) ? -1 : 1);
      }
      for (int sat = 0; sat < 2; sat++) {
        unsigned r = ref_encode(f, x, sat), g = enc(f, x, sat);
        ck_assert_msg(r == g, "fmt %d sat %d x=%a: ref 0x%02x got 0x%02x", k, sat, x, r, g);
      }
    }
  }
  ck_assert(ref_isnan_bits(E4M3, 0x7f) && !ref_isnan_bits(E5M2, 0x7c));
}
END_TEST

/* ---- the cast op: interpreter and cpu backend, bit for bit ---------------------------- */

#define NX (65536 + 4096)

static const char *k_graph =
    "version 1;\n"
    "graph @g(%x: f32[69632], %w: f64[69632], %p: f8e4m3[256], %q: f8e5m2[256]) -> (\n"
    "    f8e4m3[69632], f8e4m3[69632], f8e5m2[69632], f8e5m2[69632], f8e4m3[69632], f8e5m2[69632],\n"
    "    f32[256], f32[256], f16[256], bf16[256], f64[256], i32[256], f8e5m2[256], f8e4m3[256]) {\n"
    "  %a = cast(%x, to=f8e4m3);\n"
    "  %b = cast(%x, to=f8e4m3, saturate=false);\n"
    "  %c = cast(%x, to=f8e5m2);\n"
    "  %d = cast(%x, to=f8e5m2, saturate=false);\n"
    "  %e = cast(%w, to=f8e4m3, saturate=false);\n"
    "  %f = cast(%w, to=f8e5m2);\n"
    "  %g = cast(%p, to=f32);\n"
    "  %h = cast(%q, to=f32);\n"
    "  %i = cast(%p, to=f16);\n"
    "  %j = cast(%q, to=bf16);\n"
    "  %k = cast(%q, to=f64);\n"
    "  %l = cast(%p, to=i32);\n"
    "  %m = cast(%p, to=f8e5m2, saturate=false);\n"
    "  %n = cast(%q, to=f8e4m3);\n"
    "  return %a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k, %l, %m, %n;\n"
    "}\n";

/* Inputs: every f16 value as f32 / f64, then values near every fp8 rounding boundary. */
static void fill_inputs(float *x, double *w, uint8_t *p, uint8_t *q) {
  uint64_t s = 12345;
  for (int i = 0; i < NX; i++) {
    double v;
    if (i < 65536) {
      v = gc_f16_to_f64((uint16_t)i);
    } else {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      unsigned b = (unsigned)(s >> 56);
      double a = gc_f8e5m2_to_f64((uint8_t)b), c = gc_f8e4m3_to_f64((uint8_t)b);
      double base = (s >> 20) & 1 ? a : c;
      v = isfinite(base) ? base * (1 + ((double)((s >> 24) & 0xff) - 128) * 0x1p-9) : base;
    }
    x[i] = (float)v;
    w[i] = i < 65536 ? v + ldexp(v, -40) : v;  /* f64 only: just past f16 values */
  }
  for (int i = 0; i < 256; i++) p[i] = q[i] = (uint8_t)i;
}

START_TEST(t_cast_cpu_vs_interp) {
  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_msg(graphc_model_load_string(ctx, "f8.graph", k_graph, strlen(k_graph), &m, &err) ==
                    GRAPHC_STATUS_OK, "%s", err.message);
  float *x = malloc(sizeof(float) * NX);
  double *w = malloc(sizeof(double) * NX);
  uint8_t p[256], q[256];
  fill_inputs(x, w, p, q);
  graphc_tensor_t in[4] = {{GRAPHC_DTYPE_F32, 1, {NX}, x, sizeof(float) * NX},
                           {GRAPHC_DTYPE_F64, 1, {NX}, w, sizeof(double) * NX},
                           {GRAPHC_DTYPE_F8E4M3, 1, {256}, p, 256},
                           {GRAPHC_DTYPE_F8E5M2, 1, {256}, q, 256}};
  graphc_executable_t *exe[2];
  graphc_tensor_t out[2][14];
  for (int be = 0; be < 2; be++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = be ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP;
    ck_assert_msg(graphc_compile(m, &o, &exe[be], &err) == GRAPHC_STATUS_OK, "%s", err.message);
    for (int i = 0; i < 14; i++) {
      graphc_tensor_info_t info;
      graphc_executable_output_info(exe[be], (size_t)i, &info);
      out[be][i] = (graphc_tensor_t){info.dtype, info.rank, {0}, calloc(1, info.nbytes), info.nbytes};
      memcpy(out[be][i].dims, info.dims, sizeof info.dims);
      memset(out[be][i].data, 0xa5, info.nbytes);
    }
    ck_assert_msg(graphc_executable_run(exe[be], in, 4, out[be], 14, &err) == GRAPHC_STATUS_OK, "%s",
                  err.message);
  }
  /* the interpreter against the reference */
  const uint8_t *o8[6];
  for (int i = 0; i < 6; i++) o8[i] = out[0][i].data;
  for (int i = 0; i < NX; i++) {
    ck_assert_uint_eq(o8[0][i], ref_encode(E4M3, x[i], 1));
    ck_assert_uint_eq(o8[1][i], ref_encode(E4M3, x[i], 0));
    ck_assert_uint_eq(o8[2][i], ref_encode(E5M2, x[i], 1));
    ck_assert_uint_eq(o8[3][i], ref_encode(E5M2, x[i], 0));
    ck_assert_uint_eq(o8[4][i], ref_encode(E4M3, w[i], 0));
    ck_assert_uint_eq(o8[5][i], ref_encode(E5M2, w[i], 1));
  }
  /* the cpu backend against the interpreter, bit for bit (NaNs: any NaN of that sign) */
  for (int i = 0; i < 14; i++) {
    const unsigned char *r = out[0][i].data, *g = out[1][i].data;
    size_t es = graphc_dtype_size(out[0][i].dtype);
    for (size_t e = 0; e < out[0][i].nbytes / es; e++) {
      if (memcmp(r + e * es, g + e * es, es) == 0) continue;
      double rv = gc_load_f64(r, out[0][i].dtype, (int64_t)e), gv = gc_load_f64(g, out[0][i].dtype, (int64_t)e);
      ck_assert_msg(isnan(rv) && isnan(gv) && !!signbit(rv) == !!signbit(gv),
                    "output %d element %zu: interp %a cpu %a", i, e, rv, gv);
    }
  }
  for (int be = 0; be < 2; be++) {
    for (int i = 0; i < 14; i++) free(out[be][i].data);
    graphc_executable_destroy(exe[be]);
  }
  free(x);
  free(w);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

/* Casts of constants, which the fold pass evaluates at compile time: a non-saturating
 * cast's inf must survive (it has no const spelling, so it is not folded). */
START_TEST(t_const_casts) {
  static const char *text =
      "version 1;\n"
      "graph @g() -> (f32[4], f32[4], f32[4], f32[4]) {\n"
      "  %c = const(value=[inf, 1000000.0, 300.0, -inf], dtype=f32);\n"
      "  %a = cast(%c, to=f8e5m2, saturate=false);\n"
      "  %b = cast(%c, to=f8e5m2);\n"
      "  %d = cast(%c, to=f8e4m3, saturate=false);\n"
      "  %e = cast(%c, to=f8e4m3);\n"
      "  %ra = cast(%a, to=f32);\n"
      "  %rb = cast(%b, to=f32);\n"
      "  %rd = cast(%d, to=f32);\n"
      "  %re = cast(%e, to=f32);\n"
      "  return %ra, %rb, %rd, %re;\n"
      "}\n";
  const float want[4][4] = {{INFINITY, INFINITY, 320, -INFINITY},
                            {57344, 57344, 320, -57344},
                            {NAN, NAN, 288, NAN},
                            {448, 448, 288, -448}};
  for (int be = 0; be < 2; be++)
    for (int opt = 0; opt < 2; opt++) {
      graphc_context_t *ctx = NULL;
      graphc_model_t *m = NULL;
      graphc_executable_t *exe = NULL;
      graphc_error_t err;
      ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
      ck_assert_int_eq(graphc_model_load_string(ctx, "c.graph", text, strlen(text), &m, &err), GRAPHC_STATUS_OK);
      graphc_compile_options_t o;
      graphc_compile_options_init(&o);
      o.backend = be ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP;
      o.optimize = opt;
      ck_assert_msg(graphc_compile(m, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
      float y[4][4];
      graphc_tensor_t out[4];
      for (int i = 0; i < 4; i++) out[i] = (graphc_tensor_t){GRAPHC_DTYPE_F32, 1, {4}, y[i], sizeof y[i]};
      ck_assert_msg(graphc_executable_run(exe, NULL, 0, out, 4, &err) == GRAPHC_STATUS_OK, "%s", err.message);
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
          ck_assert_msg(isnan(want[i][j]) ? isnan(y[i][j]) : y[i][j] == want[i][j],
                        "backend %d -O%d output %d[%d]: %g, expected %g", be, opt, i, j, y[i][j], want[i][j]);
      graphc_executable_destroy(exe);
      graphc_model_destroy(m);
      graphc_context_destroy(ctx);
    }
}
END_TEST

/* Arithmetic on fp8 is refused with a clear message (cast to f32 first). */
START_TEST(t_storage_only) {
  const char *text = "version 1;\ngraph @g(%x: f8e4m3[4]) -> (f8e4m3[4]) {\n  %y = add(%x, %x);\n  return %y;\n}\n";
  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_int_ne(graphc_model_load_string(ctx, "a.graph", text, strlen(text), &m, &err), GRAPHC_STATUS_OK);
  ck_assert_msg(strstr(err.message, "expected a numeric dtype (any but bool and fp8)"), "%s", err.message);
  ck_assert_int_eq(err.line, 3);
  graphc_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("f8");
  TCase *tc = tcase_create("f8");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, t_all_patterns);
  tcase_add_test(tc, t_edges);
  tcase_add_test(tc, t_sweep);
  tcase_add_test(tc, t_cast_cpu_vs_interp);
  tcase_add_test(tc, t_const_casts);
  tcase_add_test(tc, t_storage_only);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
