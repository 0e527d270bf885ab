/* test_dtype.c - the scalar conversions of ir/dtype.c: f16/bf16 rounding and
 * widening, int64 -> f16/bf16, integer ranges.
 *
 * Hand-written edge cases (ties to even, subnormals, overflow to infinity, NaN)
 * for both formats in both directions, then sweeps against references that
 * share no code with ir/dtype.c: a nearest-pattern search over each format's
 * ordered bit patterns in long double (exact for every double and int64), and
 * the compiler's _Float16 conversions where it has them.
 */
#include <check.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ir/dtype.h"
#include "testutil.h"

/* ---- references (no code shared with ir/dtype.c) ------------------------------------ */

/* A 16-bit format: `mant` fraction bits, exponent bias `bias`. */
typedef struct fmt16 { int mant, bias; } fmt16;
static const fmt16 F16 = {10, 15}, BF16 = {7, 127};

/* Exact value of a positive pattern (no sign bit); the infinity pattern counts as the
 * value one step past the largest finite, 2^(emax+1), so that rounding to it is a tie
 * decision like any other. */
static long double ref_value(fmt16 f, unsigned bits) {
  int ebits = 15 - f.mant;
  unsigned e = bits >> f.mant, m = bits & ((1u << f.mant) - 1);
  if (e == (1u << ebits) - 1) return ldexpl(1.0L, (int)e - f.bias);
  if (e == 0) return ldexpl((long double)m, 1 - f.bias - f.mant);
  return ldexpl((long double)(m | (1u << f.mant)), (int)e - f.bias - f.mant);
}

/* Nearest pattern to x (not NaN), ties to the even pattern: binary search for the
 * last pattern whose value is <= |x|, then pick it or the next one. */
static unsigned ref_round(fmt16 f, long double x) {
  unsigned sign = signbit(x) ? 0x8000u : 0;
  long double a = fabsl(x);
  unsigned inf = ((1u << (15 - f.mant)) - 1) << f.mant;
  if (a >= ref_value(f, inf)) return sign | inf;
  unsigned lo = 0, hi = inf;  /* value(lo) <= a < value(hi) */
  while (hi - lo > 1) {
    unsigned mid = lo + (hi - lo) / 2;
    if (ref_value(f, mid) <= a) lo = mid; else hi = mid;
  }
  long double dlo = a - ref_value(f, lo), dhi = ref_value(f, hi) - a;
  unsigned pick = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1) ? hi : lo;
  return sign | pick;
}

/* Exact value of any non-NaN pattern, sign included. */
static long double ref_decode(fmt16 f, unsigned bits) {
  unsigned inf = ((1u << (15 - f.mant)) - 1) << f.mant;
  long double v = (bits & 0x7fffu) == inf ? INFINITY : ref_value(f, bits & 0x7fffu);
  return (bits & 0x8000u) ? -v : v;
}

/* Is a pattern a NaN? */
static int ref_is_nan(fmt16 f, unsigned bits) {
  unsigned inf = ((1u << (15 - f.mant)) - 1) << f.mant;
  return (bits & inf) == inf && (bits & ((1u << f.mant) - 1)) != 0;
}

/* The library's conversions for a format. */
static unsigned to16(fmt16 f, double x) { return f.mant == 10 ? gc_f64_to_f16(x) : gc_f64_to_bf16(x); }
static unsigned i64_to16(fmt16 f, int64_t v) { return f.mant == 10 ? gc_i64_to_f16(v) : gc_i64_to_bf16(v); }
static double from16(fmt16 f, uint16_t h) { return f.mant == 10 ? gc_f16_to_f64(h) : gc_bf16_to_f64(h); }

/* splitmix64, for the sweeps. */
static uint64_t next64(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* A double from raw bits. */
static double bits_f64(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

/* ---- hand-written cases ----------------------------------------------------------------- */

/* float -> binary16: ties to even, subnormals, overflow, NaN. */
START_TEST(t_half_from_float) {
  static const struct { float f; uint16_t h; } cases[] = {
      {0.0f, 0x0000},        {-0.0f, 0x8000},       {1.0f, 0x3c00},
      {-2.0f, 0xc000},       {65504.0f, 0x7bff},    {65519.0f, 0x7bff},  /* below the halfway point */
      {65520.0f, 0x7c00},    /* halfway to 65536 ties to even = inf */
      {1e6f, 0x7c00},        {-1e6f, 0xfc00},       {INFINITY, 0x7c00},  {-INFINITY, 0xfc00},
      {0x1p-14f, 0x0400},    /* smallest normal */
      {0x1p-24f, 0x0001},    /* smallest subnormal */
      {0x1p-25f, 0x0000},    /* half of it: tie to even 0 */
      {0x1.8p-25f, 0x0001},  /* above the tie */
      {0x3p-25f, 0x0002},    /* 1.5 ulp: tie to even 2 */
      {0x5p-25f, 0x0002},    /* 2.5 ulp: tie to even 2 */
      {0x7fep-25f, 0x03ff},  /* 1023 ulp: the largest subnormal */
      {0x7ffp-25f, 0x0400},  /* 1023.5 ulp: tie, rounds up to the smallest normal */
      {0x1p-30f, 0x0000},    {-0x1p-30f, 0x8000},
      {0x1.002p0f, 0x3c00},  /* 1 + 2^-11: tie, even is 1 */
      {0x1.006p0f, 0x3c02},  /* 1 + 3*2^-11: tie, even is 1 + 2^-9 */
      {0x1.0021p0f, 0x3c01}, /* just above the tie */
      {0.1f, 0x2e66},        {-0.333333343f, 0xb555},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    ck_assert_msg(gc_f64_to_f16(cases[i].f) == cases[i].h, "case %zu: %a -> 0x%04x, want 0x%04x",
                  i, (double)cases[i].f, gc_f64_to_f16(cases[i].f), cases[i].h);
  uint16_t n = gc_f64_to_f16(NAN);
  ck_assert((n & 0x7c00) == 0x7c00 && (n & 0x03ff) != 0);
  n = gc_f64_to_f16(-NAN);
  ck_assert((n & 0xfc00) == 0xfc00 && (n & 0x03ff) != 0);
}
END_TEST

/* binary16 -> double, and every finite half round-trips. */
START_TEST(t_half_to_float) {
  ck_assert(gc_f16_to_f64(0x0000) == 0.0f && !signbit(gc_f16_to_f64(0x0000)));
  ck_assert(gc_f16_to_f64(0x8000) == 0.0f && signbit(gc_f16_to_f64(0x8000)));
  ck_assert(gc_f16_to_f64(0x3c00) == 1.0f);
  ck_assert(gc_f16_to_f64(0xc000) == -2.0f);
  ck_assert(gc_f16_to_f64(0x7bff) == 65504.0f);
  ck_assert(gc_f16_to_f64(0x0001) == 0x1p-24f);
  ck_assert(gc_f16_to_f64(0x03ff) == 0x3ffp-24f);
  ck_assert(gc_f16_to_f64(0x0400) == 0x1p-14f);
  ck_assert(gc_f16_to_f64(0x3555) == 0x1.554p-2f);
  ck_assert(gc_f16_to_f64(0x7c00) == INFINITY);
  ck_assert(gc_f16_to_f64(0xfc00) == -INFINITY);
  ck_assert(isnan(gc_f16_to_f64(0x7e00)));
  ck_assert(isnan(gc_f16_to_f64(0x7c01)));
  /* every finite half survives half -> double -> half */
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
    ck_assert_msg(gc_f64_to_f16(gc_f16_to_f64((uint16_t)h)) == h, "0x%04x", h);
  }
}
END_TEST

/* float <-> bfloat16 edge cases. */
START_TEST(t_bf16) {
  static const struct { float f; uint16_t b; } cases[] = {
      {0.0f, 0x0000},          {-0.0f, 0x8000},          {1.0f, 0x3f80},
      {-1.5f, 0xbfc0},         {0x1.01p0f, 0x3f80},      /* 1 + 2^-8: tie, even is 1 */
      {0x1.03p0f, 0x3f82},     /* 1 + 3*2^-8: tie, even is 1 + 2^-6 */
      {0x1.0101p0f, 0x3f81},   /* just above the tie */
      {0.1f, 0x3dcd},          {3.3895313892515355e38f, 0x7f7f}, /* largest finite */
      {3.4028234663852886e38f, 0x7f80}, /* FLT_MAX is past the halfway point: inf */
      {INFINITY, 0x7f80},      {-INFINITY, 0xff80},
      {0x1p-126f, 0x0080},     /* smallest normal */
      {0x1p-133f, 0x0001},     /* smallest subnormal */
      {0x1p-134f, 0x0000},     /* tie to even 0 */
      {0x1p-149f, 0x0000},     {0x3p-134f, 0x0002},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    ck_assert_msg(gc_f64_to_bf16(cases[i].f) == cases[i].b, "case %zu: %a -> 0x%04x, want 0x%04x",
                  i, (double)cases[i].f, gc_f64_to_bf16(cases[i].f), cases[i].b);
  uint16_t n = gc_f64_to_bf16(NAN);
  ck_assert((n & 0x7f80) == 0x7f80 && (n & 0x7f) != 0);
  ck_assert(gc_bf16_to_f64(0x3f80) == 1.0f);
  ck_assert(gc_bf16_to_f64(0xc040) == -3.0f);
  ck_assert(gc_bf16_to_f64(0x0001) == 0x1p-133f);
  ck_assert(gc_bf16_to_f64(0x7f80) == INFINITY);
  ck_assert(isnan(gc_bf16_to_f64(0x7fc0)));
  ck_assert(signbit(gc_bf16_to_f64(0x8000)));
}
END_TEST

/* double -> f16/bf16 rounds once, straight from the double (never through float),
 * including the double-only corners: double subnormals, values past float's range. */
START_TEST(t_from_double) {
  static const struct { double x; uint16_t h, b; } cases[] = {
      /* 1 + 2^-11 + 2^-40 / 1 + 2^-8 + 2^-40: above the tie, though float would round
       * them onto it (and then to even, down) */
      {1.0 + 0x1p-11 + 0x1p-40, 0x3c01, 0x3f80},
      {1.0 + 0x1p-8 + 0x1p-40, 0x3c04, 0x3f81},
      {65519.999999, 0x7bff, 0x4780},          /* just below f16's halfway point */
      {-65520.0, 0xfc00, 0xc780},              /* f16: a tie that rounds to -inf */
      {0x1.fep127, 0x7c00, 0x7f7f},            /* bf16's largest finite */
      {0x1.feffffffffffp127, 0x7c00, 0x7f7f},  /* just below bf16's halfway point */
      {0x1.ffp127, 0x7c00, 0x7f80},            /* bf16: the tie rounds to inf */
      {-0x1.ffp127, 0xfc00, 0xff80},
      {1e300, 0x7c00, 0x7f80},                 /* far past float's range */
      {0x1p-134, 0x0000, 0x0000},              /* bf16: half the smallest subnormal: tie to 0 */
      {0x1.0000000000001p-134, 0x0000, 0x0001},/* just above that tie */
      {0x3p-134, 0x0000, 0x0002},              /* bf16 1.5 ulp: tie to even 2 */
      {0x1p-25 + 0x1p-60, 0x0001, 0x3300},     /* f16: just above half the smallest subnormal */
      {-0x1p-1074, 0x8000, 0x8000},            /* the smallest double subnormal: -0 */
      {0x1p-1022, 0x0000, 0x0000},             /* the smallest double normal: 0 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(gc_f64_to_f16(cases[i].x) == cases[i].h, "f16 case %zu: %a -> 0x%04x, want 0x%04x",
                  i, cases[i].x, gc_f64_to_f16(cases[i].x), cases[i].h);
    ck_assert_msg(gc_f64_to_bf16(cases[i].x) == cases[i].b, "bf16 case %zu: %a -> 0x%04x, want 0x%04x",
                  i, cases[i].x, gc_f64_to_bf16(cases[i].x), cases[i].b);
  }
}
END_TEST

/* NaN: the sign and the top fraction bits are kept, the quiet bit set; widening keeps them. */
START_TEST(t_nan) {
  ck_assert_uint_eq(gc_f64_to_f16(bits_f64(UINT64_C(0x7ff8000000000000))), 0x7e00);
  ck_assert_uint_eq(gc_f64_to_f16(bits_f64(UINT64_C(0xfff8000000000000))), 0xfe00);
  ck_assert_uint_eq(gc_f64_to_bf16(bits_f64(UINT64_C(0x7ff8000000000000))), 0x7fc0);
  ck_assert_uint_eq(gc_f64_to_bf16(bits_f64(UINT64_C(0xfff8000000000000))), 0xffc0);
  /* a signalling NaN with payload in the top fraction bits: quieted, payload kept */
  ck_assert_uint_eq(gc_f64_to_f16(bits_f64(UINT64_C(0x7ff0040000000000))), 0x7e01);
  ck_assert_uint_eq(gc_f64_to_bf16(bits_f64(UINT64_C(0x7ff0200000000000))), 0x7fc1);
  /* a payload only below the kept bits still gives a NaN, never infinity */
  ck_assert_uint_eq(gc_f64_to_f16(bits_f64(UINT64_C(0x7ff0000000000001))), 0x7e00);
  ck_assert_uint_eq(gc_f64_to_bf16(bits_f64(UINT64_C(0xfff0000000000001))), 0xffc0);
  /* widening: every NaN pattern stays a NaN of the same sign, and quiet NaNs round-trip */
  for (uint32_t h = 0; h < 0x10000; h++) {
    if (ref_is_nan(F16, h)) {
      double d = gc_f16_to_f64((uint16_t)h);
      ck_assert_msg(isnan(d) && !!signbit(d) == !!(h & 0x8000), "f16 0x%04x", h);
      ck_assert_uint_eq(gc_f64_to_f16(d), h | 0x0200);
    }
    if (ref_is_nan(BF16, h)) {
      double d = gc_bf16_to_f64((uint16_t)h);
      ck_assert_msg(isnan(d) && !!signbit(d) == !!(h & 0x8000), "bf16 0x%04x", h);
      ck_assert_uint_eq(gc_f64_to_bf16(d), h | 0x0040);
    }
  }
}
END_TEST

/* int64 -> f16/bf16 rounds once from the exact integer, even past 2^53. */
START_TEST(t_from_int) {
  static const struct { int64_t v; uint16_t h, b; } cases[] = {
      {0, 0x0000, 0x0000},          {1, 0x3c00, 0x3f80},           {-3, 0xc200, 0xc040},
      {2049, 0x6800, 0x4500},       /* f16: tie, even is 2048 */
      {2051, 0x6802, 0x4500},       /* f16: tie, even is 2052 */
      {257, 0x5c04, 0x4380},        /* bf16: tie, even is 256 */
      {259, 0x5c0c, 0x4382},        /* bf16: tie, even is 260 */
      {65504, 0x7bff, 0x4780},      {65519, 0x7bff, 0x4780},
      {65520, 0x7c00, 0x4780},      /* f16: the halfway point rounds to inf */
      {-65520, 0xfc00, 0xc780},
      {INT64_MAX, 0x7c00, 0x5f00},  {INT64_MIN, 0xfc00, 0xdf00},
      /* 2^61 + 2^53 + 1: above bf16's tie at 2^61 + 2^53, though the double nearest
       * to it is the tie itself (which rounds to even, down) */
      {(INT64_C(1) << 61) + (INT64_C(1) << 53) + 1, 0x7c00, 0x5e01},
      {(INT64_C(1) << 61) + (INT64_C(1) << 53), 0x7c00, 0x5e00},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(gc_i64_to_f16(cases[i].v) == cases[i].h, "f16 case %zu: %lld -> 0x%04x, want 0x%04x",
                  i, (long long)cases[i].v, gc_i64_to_f16(cases[i].v), cases[i].h);
    ck_assert_msg(gc_i64_to_bf16(cases[i].v) == cases[i].b, "bf16 case %zu: %lld -> 0x%04x, want 0x%04x",
                  i, (long long)cases[i].v, gc_i64_to_bf16(cases[i].v), cases[i].b);
  }
}
END_TEST

/* ---- sweeps against the references ---------------------------------------------------- */

/* Widening: every non-NaN pattern of both formats decodes exactly. */
START_TEST(t_widen_all) {
  const fmt16 fs[2] = {F16, BF16};
  for (int k = 0; k < 2; k++)
    for (uint32_t h = 0; h < 0x10000; h++) {
      if (ref_is_nan(fs[k], h)) continue;
      double d = from16(fs[k], (uint16_t)h);
      ck_assert_msg((long double)d == ref_decode(fs[k], h) && !!signbit(d) == !!(h & 0x8000),
                    "%s 0x%04x -> %a", k ? "bf16" : "f16", h, d);
    }
}
END_TEST

/* Every tie: for each pair of adjacent positive patterns (the largest finite and the
 * infinity pattern included), the midpoint and the doubles just either side of it,
 * both signs. */
START_TEST(t_ties_all) {
  const fmt16 fs[2] = {F16, BF16};
  for (int k = 0; k < 2; k++) {
    unsigned inf = ((1u << (15 - fs[k].mant)) - 1) << fs[k].mant;
    for (unsigned p = 0; p < inf; p++) {
      double mid = (double)((ref_value(fs[k], p) + ref_value(fs[k], p + 1)) / 2);  /* exact */
      double xs[3] = {nextafter(mid, 0), mid, nextafter(mid, INFINITY)};
      for (int j = 0; j < 3; j++)
        for (int s = 0; s < 2; s++) {
          double x = s ? -xs[j] : xs[j];
          unsigned want = ref_round(fs[k], x), got = to16(fs[k], x);
          ck_assert_msg(got == want, "%s(%a) = 0x%04x, want 0x%04x", k ? "bf16" : "f16", x, got, want);
        }
    }
  }
}
END_TEST

/* Random doubles over and around each format's range, and random int64s of every size. */
START_TEST(t_random_sweep) {
  const fmt16 fs[2] = {F16, BF16};
  uint64_t s = 12345;
  for (int i = 0; i < 200000; i++) {
    uint64_t r = next64(&s);
    int e = (int)(r % 300) - 160;  /* 2^-160 .. 2^139 */
    uint64_t bits = (next64(&s) & ((UINT64_C(1) << 52) - 1)) | ((uint64_t)(e + 1023) << 52) |
                    (r >> 63 << 63);
    double x = bits_f64(bits);
    uint64_t u = next64(&s) >> (r >> 8) % 64;  /* an int64 of any size */
    int64_t v = (int64_t)((r >> 16) & 1 ? 0 - u : u);
    for (int k = 0; k < 2; k++) {
      unsigned want = ref_round(fs[k], x), got = to16(fs[k], x);
      ck_assert_msg(got == want, "%s(%a) = 0x%04x, want 0x%04x", k ? "bf16" : "f16", x, got, want);
#if LDBL_MANT_DIG >= 64  /* long double holds every int64 exactly */
      want = ref_round(fs[k], (long double)v), got = i64_to16(fs[k], v);
      ck_assert_msg(got == want, "%s(%lld) = 0x%04x, want 0x%04x", k ? "bf16" : "f16", (long long)v,
                    got, want);
#endif
    }
#ifdef __FLT16_MAX__
    /* the compiler's own double -> _Float16 conversion, a second reference */
    _Float16 c = (_Float16)x;
    uint16_t cb;
    memcpy(&cb, &c, 2);
    ck_assert_msg(gc_f64_to_f16(x) == cb, "f16(%a) = 0x%04x, _Float16 gives 0x%04x", x,
                  gc_f64_to_f16(x), cb);
#endif
  }
}
END_TEST

/* The results do not depend on the FPU's rounding mode. */
START_TEST(t_rounding_mode) {
  static const double xs[] = {1.0 + 0x1p-11, 1.0 + 0x3p-11, 0x1p-25, 0x3p-134, 65519.99, 0x1.ffp127,
                              -0.1, 1e-6};
  enum { N = sizeof xs / sizeof xs[0] };
  uint16_t h[N], b[N];
  double hv[N], bv[N];
  for (int i = 0; i < N; i++) {
    h[i] = gc_f64_to_f16(xs[i]), b[i] = gc_f64_to_bf16(xs[i]);
    hv[i] = gc_f16_to_f64(h[i]), bv[i] = gc_bf16_to_f64(b[i]);
  }
  const int modes[3] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  for (int m = 0; m < 3; m++) {
    fesetround(modes[m]);
    int ok = 1;
    for (int i = 0; i < N; i++)
      ok &= gc_f64_to_f16(xs[i]) == h[i] && gc_f64_to_bf16(xs[i]) == b[i] &&
            gc_f16_to_f64(h[i]) == hv[i] && gc_bf16_to_f64(b[i]) == bv[i];
    fesetround(FE_TONEAREST);
    ck_assert_msg(ok, "rounding mode %d changes a result", m);
  }
}
END_TEST

/* ---- integer ranges ---------------------------------------------------------------------- */

/* Each int dtype's range (bool: 0..1). */
START_TEST(t_int_range) {
  static const struct { gc_dtype t; int64_t lo, hi; } cases[] = {
      {GRAPHC_DTYPE_I64, INT64_MIN, INT64_MAX}, {GRAPHC_DTYPE_I32, INT32_MIN, INT32_MAX},
      {GRAPHC_DTYPE_I8, -128, 127},             {GRAPHC_DTYPE_U8, 0, 255},
      {GRAPHC_DTYPE_BOOL, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t lo, hi;
    gc_int_range(cases[i].t, &lo, &hi);
    ck_assert_int_eq(lo, cases[i].lo);
    ck_assert_int_eq(hi, cases[i].hi);
  }
}
END_TEST

/* The suite. */
static Suite *dtype_suite(void) {
  Suite *s = suite_create("dtype");
  TCase *tc = tcase_create("conversions");
  tcase_add_test(tc, t_half_from_float);
  tcase_add_test(tc, t_half_to_float);
  tcase_add_test(tc, t_bf16);
  tcase_add_test(tc, t_from_double);
  tcase_add_test(tc, t_nan);
  tcase_add_test(tc, t_from_int);
  tcase_add_test(tc, t_widen_all);
  tcase_add_test(tc, t_ties_all);
  tcase_add_test(tc, t_random_sweep);
  tcase_add_test(tc, t_rounding_mode);
  tcase_add_test(tc, t_int_range);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(dtype_suite()); }
