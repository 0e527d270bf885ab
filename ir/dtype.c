/* dtype.c - scalar conversions between dtypes: f16/bf16 rounding and widening,
 * integer ranges. The rounding rule is stated once, in ir/dtype.h.
 */
#include <math.h>
#include <string.h>

#include "ir/dtype.h"

/* Round the magnitude m * 2^e2 (m > 0) to a binary format with `mant` fraction
 * bits and normal exponents [emin, emax], nearest even. Returns the format's
 * exponent|fraction bits; overflow gives the infinity pattern. */
static uint32_t round_magnitude(uint64_t m, int e2, int mant, int emin, int emax) {
  uint32_t inf_bits = (uint32_t)(emax - emin + 2) << mant;
  if (m == 0) return 0;
  int e = 63 - __builtin_clzll(m) + e2; /* value is in [2^e, 2^(e+1)) */
  if (e > emax) return inf_bits;
  int eff = e < emin ? emin : e;
  int s = eff - mant - e2;              /* low bits of m below the last kept bit */
  uint64_t q;
  if (s <= 0) {
    q = m << -s;                        /* exact: fits in mant+1 bits */
  } else if (s > 64) {
    q = 0;                              /* below half the smallest subnormal */
  } else {
    uint64_t rem, half;
    if (s == 64) {
      q = 0, rem = m, half = UINT64_C(1) << 63;
    } else {
      q = m >> s;
      rem = m & ((UINT64_C(1) << s) - 1);
      half = UINT64_C(1) << (s - 1);
    }
    if (rem > half || (rem == half && (q & 1))) q++;
  }
  /* Subnormals have eff == emin and q < 2^mant; a carry out of the fraction
   * lands in the exponent field, which is the right answer in both cases. */
  uint64_t bits = ((uint64_t)(eff - emin) << mant) + q;
  return bits >= inf_bits ? inf_bits : (uint32_t)bits;
}

/* Split a finite double into sign, integer significand and exponent. */
static void f64_parts(double x, int *neg, uint64_t *m, int *e2) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  *neg = (int)(b >> 63);
  int ex = (int)((b >> 52) & 0x7ff);
  uint64_t frac = b & ((UINT64_C(1) << 52) - 1);
  *m = ex ? frac | (UINT64_C(1) << 52) : frac;
  *e2 = ex ? ex - 1075 : -1074;
}

/* double -> IEEE binary16 bits, round to nearest even; NaN stays a quiet NaN. */
uint16_t gc_f64_to_f16(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
  if (isnan(x)) return (uint16_t)(sign | 0x7e00 | ((b >> 42) & 0x3ff));
  if (isinf(x)) return (uint16_t)(sign | 0x7c00);
  int neg, e2;
  uint64_t m;
  f64_parts(x, &neg, &m, &e2);
  return (uint16_t)(sign | round_magnitude(m, e2, 10, -14, 15));
}

/* double -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN. */
uint16_t gc_f64_to_bf16(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
  if (isnan(x)) return (uint16_t)(sign | 0x7fc0 | ((b >> 45) & 0x7f));
  if (isinf(x)) return (uint16_t)(sign | 0x7f80);
  int neg, e2;
  uint64_t m;
  f64_parts(x, &neg, &m, &e2);
  return (uint16_t)(sign | round_magnitude(m, e2, 7, -126, 127));
}

/* |v| of an int64 as an unsigned magnitude (INT64_MIN included). */
static uint64_t i64_magnitude(int64_t v) {
  return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* int64 -> binary16 bits, rounded once from the exact integer. */
uint16_t gc_i64_to_f16(int64_t v) {
  uint16_t sign = v < 0 ? 0x8000 : 0;
  return (uint16_t)(sign | round_magnitude(i64_magnitude(v), 0, 10, -14, 15));
}

/* int64 -> bfloat16 bits, rounded once from the exact integer. */
uint16_t gc_i64_to_bf16(int64_t v) {
  uint16_t sign = v < 0 ? 0x8000 : 0;
  return (uint16_t)(sign | round_magnitude(i64_magnitude(v), 0, 7, -126, 127));
}

/* binary16 bits -> double (exact). */
double gc_f16_to_f64(uint16_t h) {
  int sign = h >> 15, ex = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v;
  if (ex == 0x1f) {
    if (frac == 0) return sign ? -INFINITY : INFINITY;
    uint32_t fb = ((uint32_t)sign << 31) | 0x7f800000u | ((uint32_t)frac << 13);
    float f;
    memcpy(&f, &fb, sizeof f);
    return f;                                  /* NaN with the payload kept */
  }
  v = ex == 0 ? ldexp(frac, -24) : ldexp(1024 + frac, ex - 25);
  return sign ? -v : v;
}

/* bfloat16 bits -> double: the top half of a float (exact). */
double gc_bf16_to_f64(uint16_t h) {
  uint32_t fb = (uint32_t)h << 16;
  float f;
  memcpy(&f, &fb, sizeof f);
  return f;
}

/* ---- fp8 -------------------------------------------------------------------------- */

/* The fp8 formats: fraction bits, exponent range of normals, and the first magnitude
 * pattern past the largest finite value (e4m3: S.1111.111 is NaN, no inf; e5m2: S.11111.00
 * is inf; the fnuz pair: every magnitude is finite, 0x80 (-0) is the one NaN). */
typedef struct f8_format { int mant, emin, emax; uint8_t max_bits, over_bits; int fnuz; } f8_format;
static const f8_format k_e4m3 = {3, -6, 8, 0x7e, 0x7f, 0};
static const f8_format k_e5m2 = {2, -14, 15, 0x7b, 0x7c, 0};
static const f8_format k_e4m3fnuz = {3, -7, 7, 0x7f, 0x80, 1};
static const f8_format k_e5m2fnuz = {2, -15, 15, 0x7f, 0x80, 1};

static const f8_format *f8_format_of(gc_dtype t) {
  switch (t) {
    case GRAPHC_DTYPE_F8E4M3: return &k_e4m3;
    case GRAPHC_DTYPE_F8E5M2: return &k_e5m2;
    case GRAPHC_DTYPE_F8E4M3FNUZ: return &k_e4m3fnuz;
    default: return &k_e5m2fnuz;
  }
}

/* double -> fp8 bits (see dtype.h). */
static uint8_t f64_to_f8(double x, const f8_format *f, int saturate) {
  uint8_t sign = signbit(x) ? 0x80 : 0;
  if (f->fnuz) {  /* one NaN, no inf, no -0 */
    if (isnan(x) || (isinf(x) && !saturate)) return 0x80;
    if (isinf(x)) return (uint8_t)(sign | f->max_bits);
  } else {
    if (isnan(x)) return (uint8_t)(sign | (f == &k_e4m3 ? 0x7f : 0x7e));
    if (isinf(x)) return (uint8_t)(sign | (saturate ? f->max_bits : f->over_bits));
  }
  int neg, e2;
  uint64_t m;
  f64_parts(x, &neg, &m, &e2);
  uint32_t bits = round_magnitude(m, e2, f->mant, f->emin, f->emax);
  if (bits > f->max_bits) {
    if (f->fnuz && !saturate) return 0x80;
    bits = saturate ? f->max_bits : f->over_bits;
  }
  if (f->fnuz && bits == 0) return 0;
  return (uint8_t)(sign | bits);
}

uint8_t gc_f64_to_f8e4m3(double x, int saturate) { return f64_to_f8(x, &k_e4m3, saturate); }
uint8_t gc_f64_to_f8e5m2(double x, int saturate) { return f64_to_f8(x, &k_e5m2, saturate); }

/* fp8 bits -> double (exact). */
static double f8_to_f64(uint8_t b, const f8_format *f) {
  int sign = b >> 7, ex = (b & 0x7f) >> f->mant, frac = b & ((1 << f->mant) - 1);
  if (f->fnuz && b == 0x80) return NAN;
  if ((b & 0x7f) > f->over_bits || (f == &k_e4m3 && (b & 0x7f) == f->over_bits))
    return sign ? -NAN : NAN;
  if ((b & 0x7f) == f->over_bits) return sign ? -INFINITY : INFINITY;
  double v = ex == 0 ? ldexp(frac, f->emin - f->mant)
                     : ldexp((1 << f->mant) + frac, ex - 1 + f->emin - f->mant);
  return sign ? -v : v;
}

double gc_f8e4m3_to_f64(uint8_t b) { return f8_to_f64(b, &k_e4m3); }
double gc_f8e5m2_to_f64(uint8_t b) { return f8_to_f64(b, &k_e5m2); }

uint8_t gc_f64_to_f8(gc_dtype t, double x, int saturate) {
  GC_ASSERT(gc_dtype_is_f8(t));
  return f64_to_f8(x, f8_format_of(t), saturate);
}

double gc_f8_to_f64(gc_dtype t, uint8_t b) {
  GC_ASSERT(gc_dtype_is_f8(t));
  return f8_to_f64(b, f8_format_of(t));
}

/* Smallest and largest value of an int (or bool) dtype. */
void gc_int_range(gc_dtype t, int64_t *lo, int64_t *hi) {
  switch (t) {
    case GRAPHC_DTYPE_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case GRAPHC_DTYPE_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case GRAPHC_DTYPE_U8: *lo = 0, *hi = UINT8_MAX; break;
    case GRAPHC_DTYPE_BOOL: *lo = 0, *hi = 1; break;
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
  }
}

/* ---- element loads and stores ------------------------------------------------------ */

/* Truncate toward zero and saturate to [lo, hi]; NaN -> 0. */
int64_t gc_f64_to_int_sat(double v, int64_t lo, int64_t hi) {
  if (isnan(v)) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;  /* (double)INT64_MAX is 2^63: still correct */
  return (int64_t)v;               /* truncates toward zero, in range */
}

/* Element i of any dtype as a double (i64 beyond 2^53 rounds). */
double gc_load_f64(const void *base, gc_dtype t, int64_t i) {
  const unsigned char *p = base;
  switch (t) {
    case GRAPHC_DTYPE_F64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case GRAPHC_DTYPE_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case GRAPHC_DTYPE_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return gc_f16_to_f64(h); }
    case GRAPHC_DTYPE_BF16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return gc_bf16_to_f64(h); }
    case GRAPHC_DTYPE_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    case GRAPHC_DTYPE_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case GRAPHC_DTYPE_I8: return (int8_t)p[i];
    case GRAPHC_DTYPE_U8: return p[i];
    case GRAPHC_DTYPE_BOOL: return p[i] != 0;
    case GRAPHC_DTYPE_F8E4M3:
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: return gc_f8_to_f64(t, p[i]);
    default: GC_ASSERT(!"bad dtype"); return 0;
  }
}

/* Store a double: floats round once, ints truncate and saturate, bool is v != 0. */
void gc_store_f64(void *base, gc_dtype t, int64_t i, double v) {
  unsigned char *p = base;
  switch (t) {
    case GRAPHC_DTYPE_F64: memcpy(p + 8 * i, &v, 8); return;
    case GRAPHC_DTYPE_F32: { float f = (float)v; memcpy(p + 4 * i, &f, 4); return; }
    case GRAPHC_DTYPE_F16: { uint16_t h = gc_f64_to_f16(v); memcpy(p + 2 * i, &h, 2); return; }
    case GRAPHC_DTYPE_BF16: { uint16_t h = gc_f64_to_bf16(v); memcpy(p + 2 * i, &h, 2); return; }
    case GRAPHC_DTYPE_BOOL: p[i] = v != 0; return;  /* NaN != 0: true */
    case GRAPHC_DTYPE_F8E4M3:  /* a store keeps infinities (inf, or NaN for e4m3 and fnuz) */
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: p[i] = gc_f64_to_f8(t, v, !isinf(v)); return;
    default: {
      int64_t lo, hi;
      gc_int_range(t, &lo, &hi);
      gc_store_i64(base, t, i, gc_f64_to_int_sat(v, lo, hi));
      return;
    }
  }
}

/* Element i as an exact int64 (floats convert like cast). */
int64_t gc_load_i64(const void *base, gc_dtype t, int64_t i) {
  const unsigned char *p = base;
  switch (t) {
    case GRAPHC_DTYPE_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
    case GRAPHC_DTYPE_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case GRAPHC_DTYPE_I8: return (int8_t)p[i];
    case GRAPHC_DTYPE_U8: return p[i];
    case GRAPHC_DTYPE_BOOL: return p[i] != 0;
    default: return gc_f64_to_int_sat(gc_load_f64(base, t, i), INT64_MIN, INT64_MAX);
  }
}

/* Store an exact int64: ints wrap, bool is v != 0, floats round once. */
void gc_store_i64(void *base, gc_dtype t, int64_t i, int64_t v) {
  unsigned char *p = base;
  switch (t) {
    case GRAPHC_DTYPE_I64: memcpy(p + 8 * i, &v, 8); return;
    case GRAPHC_DTYPE_I32: { uint32_t w = (uint32_t)(uint64_t)v; memcpy(p + 4 * i, &w, 4); return; }
    case GRAPHC_DTYPE_I8:
    case GRAPHC_DTYPE_U8: p[i] = (unsigned char)(uint64_t)v; return;
    case GRAPHC_DTYPE_BOOL: p[i] = v != 0; return;
    case GRAPHC_DTYPE_F64: { double d = (double)v; memcpy(p + 8 * i, &d, 8); return; }
    case GRAPHC_DTYPE_F32: { float f = (float)v; memcpy(p + 4 * i, &f, 4); return; }
    case GRAPHC_DTYPE_F16: { uint16_t h = gc_i64_to_f16(v); memcpy(p + 2 * i, &h, 2); return; }
    case GRAPHC_DTYPE_BF16: { uint16_t h = gc_i64_to_bf16(v); memcpy(p + 2 * i, &h, 2); return; }
    case GRAPHC_DTYPE_F8E4M3:  /* far past the largest finite value beyond 2^53: exact */
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: gc_store_f64(base, t, i, (double)v); return;
    default: GC_ASSERT(!"bad dtype"); return;
  }
}


/* Float buffer -> float buffer, as cast (see dtype.h). */
void gc_convert_floats(void *dst, gc_dtype to, const void *src, gc_dtype from, int64_t n, int saturate) {
  GC_ASSERT(gc_dtype_is_float(to) && gc_dtype_is_float(from));
  if (to == from) {  /* a cast to its own dtype is the identity (fp8 NaNs included) */
    memmove(dst, src, (size_t)n * graphc_dtype_size(to));
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    double v = gc_load_f64(src, from, i);
    if (gc_dtype_is_f8(to))
      ((uint8_t *)dst)[i] = gc_f64_to_f8(to, v, saturate);
    else
      gc_store_f64(dst, to, i, v);
  }
}
