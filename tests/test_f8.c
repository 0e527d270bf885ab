/* test_f8.c - the fp8 dtypes (f8e4m3 = ONNX FLOAT8E4M3FN, f8e5m2 = FLOAT8E5M2, and the fnuz
 * pair f8e4m3fnuz / f8e5m2fnuz = FLOAT8E4M3FNUZ / FLOAT8E5M2FNUZ).
 *
 * ir/dtype.c's conversions against a reference that shares no code with it (the
 * formats' values built from their bit fields, nearest-pattern search with ties to the
 * even pattern), every bit pattern in both directions, the saturate rule at the edges;
 * then the cast op on the interpreter and the cpu backend (Kernel IR's fp8 expansion,
 * codegen/kir_f8.c, through the LLVM host path) bit for bit on every f16 value, random
 * f32 and f64 values and every fp8 pattern. Parser/printer round trip of the names. The fnuz
 * formats (no inf, no -0, 0x80 the one NaN) the same way: their own reference, every pattern,
 * a sweep, ml_dtypes' bytes for ONNX Cast's edge cases, the cast op on interp and cpu.
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

/* Sweep value h: every f16 value (h < 65536), then random doubles of either sign over 2^-30..2^18. */
static double sweep_value(unsigned h, uint64_t *s) {
  if (h < 65536) return gc_f16_to_f64((uint16_t)h);
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return ldexp((double)(*s >> 11) * 0x1p-53 + 0.5, (int)((*s >> 3) % 48) - 30) * ((*s & 1) ? -1 : 1);
}

/* Every f16 value and random doubles against the nearest-pattern reference. */
START_TEST(t_sweep) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < 2; k++) {
    fmt8 f = k ? E5M2 : E4M3;
    for (unsigned h = 0; h < 65536 + 200000; h++) {
      double x = sweep_value(h, &s);
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

/* ---- the fnuz formats ---------------------------------------------------------------------- */

typedef struct fmtz { int mant, bias; gc_dtype t; } fmtz;
static const fmtz E4M3Z = {3, 8, GRAPHC_DTYPE_F8E4M3FNUZ}, E5M2Z = {2, 16, GRAPHC_DTYPE_F8E5M2FNUZ};

/* Value of pattern b: 0x80 is NaN, every other pattern finite. */
static double refz_decode(fmtz f, unsigned b) {
  if (b == 0x80) return NAN;
  int ebits = 7 - f.mant;
  unsigned e = (b >> f.mant) & ((1u << ebits) - 1), m = b & ((1u << f.mant) - 1);
  double v = e == 0 ? ldexp(m, 1 - f.bias - f.mant) : ldexp(m | (1u << f.mant), (int)e - f.bias - f.mant);
  return (b & 0x80) ? -v : v;
}

/* Nearest pattern, ties to even; past the largest value by half a step (a tie counts: the
 * largest pattern 0x7f is odd) saturates or is NaN; a zero result is +0. */
static unsigned refz_encode(fmtz f, double x, int saturate) {
  if (isnan(x)) return 0x80;
  unsigned sign = signbit(x) ? 0x80 : 0;
  if (isinf(x)) return saturate ? sign | 0x7f : 0x80;
  double a = fabs(x), maxv = refz_decode(f, 0x7f);
  unsigned best = 0;
  for (unsigned b = 0; b <= 0x7f; b++)
    if (refz_decode(f, b) <= a) best = b;
  unsigned r;
  if (best == 0x7f) {
    double mid = maxv + (maxv - refz_decode(f, 0x7e)) / 2;
    if (a >= mid) return saturate ? sign | 0x7f : 0x80;
    r = 0x7f;
  } else {
    double lo = refz_decode(f, best), hi = refz_decode(f, best + 1);
    r = a - lo < hi - a ? best : a - lo > hi - a ? best + 1 : (best & 1) ? best + 1 : best;
  }
  return r ? sign | r : 0;
}

START_TEST(t_fnuz) {
  for (int k = 0; k < 2; k++) {
    fmtz f = k ? E5M2Z : E4M3Z;
    for (unsigned b = 0; b < 256; b++) {  /* every pattern both ways */
      double r = refz_decode(f, b), g = gc_f8_to_f64(f.t, (uint8_t)b);
      ck_assert_msg(isnan(r) ? isnan(g) : g == r, "fnuz %d pattern 0x%02x: %g vs %g", k, b, g, r);
      if (!isnan(r)) ck_assert_uint_eq(gc_f64_to_f8(f.t, g, 0), b == 0x80 ? 0x80 : b);
    }
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (unsigned h = 0; h < 65536 + 100000; h++) {
      double x = sweep_value(h, &s);
      for (int sat = 0; sat < 2; sat++)
        ck_assert_msg(refz_encode(f, x, sat) == gc_f64_to_f8(f.t, x, sat), "fnuz %d sat %d x=%a: ref 0x%02x got 0x%02x",
                      k, sat, x, refz_encode(f, x, sat), gc_f64_to_f8(f.t, x, sat));
    }
  }
  /* ONNX Cast's edge cases, bytes from ml_dtypes (saturate: clipped first) */
  const double x[12] = {0, -0.0, 1e-9, -1e-9, 250, 1e6, -1e6, INFINITY, -INFINITY, NAN, 0.3, -17.3};
  const unsigned e4s[12] = {0, 0, 0, 0, 127, 127, 255, 127, 255, 128, 50, 225};
  const unsigned e5s[12] = {0, 0, 0, 0, 96, 127, 255, 127, 255, 128, 57, 208};
  const unsigned e4n[12] = {0, 0, 0, 0, 128, 128, 128, 128, 128, 128, 50, 225};
  for (int i = 0; i < 12; i++) {
    ck_assert_uint_eq(gc_f64_to_f8(GRAPHC_DTYPE_F8E4M3FNUZ, x[i], 1), e4s[i]);
    ck_assert_uint_eq(gc_f64_to_f8(GRAPHC_DTYPE_F8E5M2FNUZ, x[i], 1), e5s[i]);
    ck_assert_uint_eq(gc_f64_to_f8(GRAPHC_DTYPE_F8E4M3FNUZ, x[i], 0), e4n[i]);
  }
  ck_assert(refz_decode(E4M3Z, 0x7f) == 240 && refz_decode(E5M2Z, 0x7f) == 57344);
  /* a store (any op but cast) saturates finite values; an infinity is NaN */
  unsigned char b[2];
  gc_store_f64(b, GRAPHC_DTYPE_F8E4M3FNUZ, 0, -INFINITY);
  gc_store_f64(b, GRAPHC_DTYPE_F8E4M3FNUZ, 1, -1e6);
  ck_assert_uint_eq(b[0], 0x80);
  ck_assert_uint_eq(b[1], 0xff);
}
END_TEST

/* The cast op to and from fnuz on the interpreter and the cpu backend (Kernel IR's expansion),
 * bit for bit against the reference: every f16 value as f32, saturating and not, f64 values
 * just past them, every pattern widened to f32 and narrowed to the other fp8 formats. */
START_TEST(t_fnuz_cast_cpu_vs_interp) {
  static const char *text =
      "version 1;\n"
      "graph @g(%x: f32[65536], %w: f64[65536], %p: f8e4m3fnuz[256], %q: f8e5m2fnuz[256]) -> (\n"
      "    f8e4m3fnuz[65536], f8e4m3fnuz[65536], f8e5m2fnuz[65536], f8e5m2fnuz[65536], f8e4m3fnuz[65536],\n"
      "    f32[256], f32[256], f8e4m3[256], f8e5m2fnuz[256]) {\n"
      "  %a = cast(%x, to=f8e4m3fnuz);\n"
      "  %b = cast(%x, to=f8e4m3fnuz, saturate=false);\n"
      "  %c = cast(%x, to=f8e5m2fnuz);\n"
      "  %d = cast(%x, to=f8e5m2fnuz, saturate=false);\n"
      "  %e = cast(%w, to=f8e4m3fnuz, saturate=false);\n"
      "  %g = cast(%p, to=f32);\n"
      "  %h = cast(%q, to=f32);\n"
      "  %i = cast(%p, to=f8e4m3);\n"
      "  %j = cast(%p, to=f8e5m2fnuz, saturate=false);\n"
      "  return %a, %b, %c, %d, %e, %g, %h, %i, %j;\n"
      "}\n";
  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_msg(graphc_model_load_string(ctx, "z.graph", text, strlen(text), &m, &err) == GRAPHC_STATUS_OK, "%s",
                err.message);
  float *x = malloc(sizeof(float) * 65536);
  double *w = malloc(sizeof(double) * 65536);
  uint8_t p[256], q[256];
  for (int i = 0; i < 65536; i++) {
    double v = gc_f16_to_f64((uint16_t)i);
    x[i] = (float)v;
    w[i] = v + ldexp(v, -40);
  }
  for (int i = 0; i < 256; i++) p[i] = q[i] = (uint8_t)i;
  graphc_tensor_t in[4] = {{GRAPHC_DTYPE_F32, 1, {65536}, x, sizeof(float) * 65536},
                           {GRAPHC_DTYPE_F64, 1, {65536}, w, sizeof(double) * 65536},
                           {GRAPHC_DTYPE_F8E4M3FNUZ, 1, {256}, p, 256},
                           {GRAPHC_DTYPE_F8E5M2FNUZ, 1, {256}, q, 256}};
  for (int be = 0; be < 2; be++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = be ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP;
    graphc_executable_t *exe = NULL;
    ck_assert_msg(graphc_compile(m, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
    graphc_tensor_t out[9];
    for (int i = 0; i < 9; i++) {
      graphc_tensor_info_t info;
      graphc_executable_output_info(exe, (size_t)i, &info);
      out[i] = (graphc_tensor_t){info.dtype, info.rank, {0}, malloc(info.nbytes), info.nbytes};
      memcpy(out[i].dims, info.dims, sizeof info.dims);
    }
    ck_assert_msg(graphc_executable_run(exe, in, 4, out, 9, &err) == GRAPHC_STATUS_OK, "%s", err.message);
    const char *bn = be ? "cpu" : "interp";
    for (int i = 0; i < 65536; i++) {
      const uint8_t *o8[5] = {out[0].data, out[1].data, out[2].data, out[3].data, out[4].data};
      ck_assert_msg(o8[0][i] == refz_encode(E4M3Z, x[i], 1), "%s e4 sat %a: 0x%02x", bn, x[i], o8[0][i]);
      ck_assert_msg(o8[1][i] == refz_encode(E4M3Z, x[i], 0), "%s e4 %a: 0x%02x", bn, x[i], o8[1][i]);
      ck_assert_msg(o8[2][i] == refz_encode(E5M2Z, x[i], 1), "%s e5 sat %a: 0x%02x", bn, x[i], o8[2][i]);
      ck_assert_msg(o8[3][i] == refz_encode(E5M2Z, x[i], 0), "%s e5 %a: 0x%02x", bn, x[i], o8[3][i]);
      ck_assert_msg(o8[4][i] == refz_encode(E4M3Z, w[i], 0), "%s e4 f64 %a: 0x%02x", bn, w[i], o8[4][i]);
    }
    for (int i = 0; i < 256; i++) {
      double a = refz_decode(E4M3Z, (unsigned)i), b = refz_decode(E5M2Z, (unsigned)i);
      float ga = ((float *)out[5].data)[i], gb = ((float *)out[6].data)[i];
      ck_assert_msg(isnan(a) ? isnan(ga) : ga == a, "%s widen e4 0x%02x: %g", bn, i, ga);
      ck_assert_msg(isnan(b) ? isnan(gb) : gb == b, "%s widen e5 0x%02x: %g", bn, i, gb);
      unsigned want = isnan(a) ? 0x7f : gc_f64_to_f8e4m3(a, 1);
      ck_assert_msg(((uint8_t *)out[7].data)[i] == want, "%s fnuz->e4m3 0x%02x", bn, i);
      ck_assert_msg(((uint8_t *)out[8].data)[i] == refz_encode(E5M2Z, a, 0), "%s e4z->e5z 0x%02x", bn, i);
    }
    for (int i = 0; i < 9; i++) free(out[i].data);
    graphc_executable_destroy(exe);
  }
  free(x);
  free(w);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
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
  tcase_add_test(tc, t_fnuz);
  tcase_add_test(tc, t_fnuz_cast_cpu_vs_interp);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
