/* kir_f8.c - fp8 conversions (f8e4m3, f8e5m2) written as Kernel IR integer and float
 * arithmetic, so that both printers (CUDA C, LLVM IR) and every target get the same exact
 * conversion with nothing but a bit reinterpretation (KIR_E_BITCAST) to support.
 *
 * The rule is ir/dtype.h's: round once to nearest even, subnormals kept, saturate or not
 * (the cast's `saturate`), NaN keeps its sign. Narrowing reads the source's bits: f64
 * sources as i64 (no double rounding through f32), everything else first widened or
 * converted to f32 (f16/bf16 exactly; an integer beyond 2^24 is past every fp8 range,
 * where the f32 rounding cannot change the saturated or overflowed result).
 * The shifts are multiplications and divisions of non-negative values by powers of two.
 */
#include <math.h>

#include "codegen/kir.h"

/* A format: fraction bits, smallest normal exponent, largest finite magnitude bits, the
 * magnitude bits that mean "overflow" when not saturating (NaN for e4m3, inf for e5m2),
 * and the NaN magnitude bits written for a NaN. */
typedef struct f8_fmt { int mant, emin; int64_t max_bits, over_bits, nan_bits; int fnuz; } f8_fmt;

static f8_fmt fmt_of(gc_dtype t) {
  switch (t) {
    case GRAPHC_DTYPE_F8E4M3: return (f8_fmt){3, -6, 0x7e, 0x7f, 0x7f, 0};
    case GRAPHC_DTYPE_F8E5M2: return (f8_fmt){2, -14, 0x7b, 0x7c, 0x7e, 0};
    /* fnuz: every magnitude finite, 0x80 the one NaN, no -0 */
    case GRAPHC_DTYPE_F8E4M3FNUZ: return (f8_fmt){3, -7, 0x7f, 0x80, 0x80, 1};
    default: return (f8_fmt){2, -15, 0x7f, 0x80, 0x80, 1};
  }
}

static kir_expr *ci(kir_module *m, gc_dtype t, int64_t v) { return kir_const_i(m, t, v); }
static kir_expr *bin(kir_module *m, kir_op op, kir_expr *a, kir_expr *b) { return kir_binary(m, op, a, b); }

/* fp8 bits (an f8-typed value) -> f32, exact. */
static kir_expr *f8_to_f32(kir_module *m, gc_dtype from, kir_expr *a) {
  const gc_dtype I = GRAPHC_DTYPE_I32, F = GRAPHC_DTYPE_F32;
  f8_fmt f = fmt_of(from);
  kir_expr *u = kir_cast(m, I, kir_bitcast(m, GRAPHC_DTYPE_U8, a));
  kir_expr *mag = bin(m, KIR_AND, u, ci(m, I, 0x7f));
  kir_expr *ex = bin(m, KIR_DIV, mag, ci(m, I, 1 << f.mant));
  kir_expr *fr = bin(m, KIR_AND, mag, ci(m, I, (1 << f.mant) - 1));
  /* normal: the magnitude bits moved to f32's fraction, the exponent rebiased */
  int64_t rebias = (int64_t)(127 - (1 - f.emin)) << 23;
  kir_expr *nbits = bin(m, KIR_ADD, bin(m, KIR_MUL, mag, ci(m, I, INT64_C(1) << (23 - f.mant))), ci(m, I, rebias));
  kir_expr *sub = bin(m, KIR_MUL, kir_cast(m, F, fr), kir_const_f(m, F, ldexp(1.0, f.emin - f.mant)));
  kir_expr *v = kir_select(m, bin(m, KIR_EQ, ex, ci(m, I, 0)), sub, kir_bitcast(m, F, nbits));
  if (f.fnuz) {  /* 0x80 (what would be -0) is the one NaN, a positive one */
    v = kir_select(m, bin(m, KIR_GE, u, ci(m, I, 128)), kir_unary(m, KIR_NEG, v), v);
    return kir_select(m, bin(m, KIR_EQ, u, ci(m, I, 0x80)), kir_const_f(m, F, NAN), v);
  }
  if (from == GRAPHC_DTYPE_F8E4M3) {
    v = kir_select(m, bin(m, KIR_EQ, mag, ci(m, I, f.over_bits)), kir_const_f(m, F, NAN), v);
  } else {
    v = kir_select(m, bin(m, KIR_EQ, mag, ci(m, I, f.over_bits)), kir_const_f(m, F, INFINITY), v);
    v = kir_select(m, bin(m, KIR_GT, mag, ci(m, I, f.over_bits)), kir_const_f(m, F, NAN), v);
  }
  return kir_select(m, bin(m, KIR_GE, u, ci(m, I, 128)), kir_unary(m, KIR_NEG, v), v);
}

/* f32 or f64 value x -> fp8 bits (an f8-typed value). saturate: 1 every overflow to the
 * largest finite value, 0 to NaN / inf, -1 (a store) finite overflow saturates and an
 * infinity stays inf (e5m2) or becomes NaN (e4m3), as ir/dtype.h says. */
static kir_expr *float_to_f8(kir_module *m, gc_dtype to, kir_expr *x, int saturate) {
  const int dbl = x->type == GRAPHC_DTYPE_F64;
  const gc_dtype I = dbl ? GRAPHC_DTYPE_I64 : GRAPHC_DTYPE_I32, F = x->type;
  const int fm = dbl ? 52 : 23, fbias = dbl ? 1023 : 127;
  f8_fmt f = fmt_of(to);
  kir_expr *bits = kir_bitcast(m, I, x);
  kir_expr *neg = bin(m, KIR_LT, bits, ci(m, I, 0));
  kir_expr *a = bin(m, KIR_AND, bits, ci(m, I, dbl ? INT64_MAX : INT32_MAX));
  kir_expr *isnan_ = bin(m, KIR_GT, a, ci(m, I, (int64_t)(2 * fbias + 1) << fm));
  /* normal range: drop s fraction bits, nearest even, rebias (a carry moves the exponent) */
  int s = fm - f.mant;
  kir_expr *q = bin(m, KIR_DIV, a, ci(m, I, INT64_C(1) << s));
  kir_expr *rem = bin(m, KIR_AND, a, ci(m, I, (INT64_C(1) << s) - 1));
  kir_expr *half = ci(m, I, INT64_C(1) << (s - 1));
  kir_expr *odd = bin(m, KIR_EQ, bin(m, KIR_AND, q, ci(m, I, 1)), ci(m, I, 1));
  kir_expr *up = bin(m, KIR_OR, bin(m, KIR_GT, rem, half), bin(m, KIR_AND, bin(m, KIR_EQ, rem, half), odd));
  kir_expr *qn = bin(m, KIR_ADD, q, kir_cast(m, I, up));
  qn = bin(m, KIR_SUB, qn, ci(m, I, (int64_t)(fbias - (1 - f.emin)) << f.mant));
  /* below the smallest normal: |x| in units of the subnormal step, split exactly into an
   * integer and a fraction, nearest even */
  kir_expr *y = bin(m, KIR_MUL, kir_bitcast(m, F, a), kir_const_f(m, F, ldexp(1.0, f.mant - f.emin)));
  kir_expr *fl = kir_unary(m, KIR_FLOOR, y);
  kir_expr *fr = bin(m, KIR_SUB, y, fl);
  kir_expr *fli = kir_cast(m, I, fl);
  kir_expr *hf = kir_const_f(m, F, 0.5);
  kir_expr *fodd = bin(m, KIR_EQ, bin(m, KIR_AND, fli, ci(m, I, 1)), ci(m, I, 1));
  kir_expr *sup = bin(m, KIR_OR, bin(m, KIR_GT, fr, hf), bin(m, KIR_AND, bin(m, KIR_EQ, fr, hf), fodd));
  kir_expr *qs = bin(m, KIR_ADD, fli, kir_cast(m, I, sup));
  kir_expr *subn = bin(m, KIR_LT, a, ci(m, I, (int64_t)(fbias + f.emin) << fm));
  kir_expr *r = kir_select(m, subn, qs, qn);
  /* overflow (infinities included): the largest finite value, or NaN / inf */
  kir_expr *over = bin(m, KIR_GT, r, ci(m, I, f.max_bits));
  if (f.fnuz) {  /* NaN (and what does not saturate) is 0x80; zero has no sign */
    kir_expr *isinf_ = bin(m, KIR_EQ, a, ci(m, I, (int64_t)(2 * fbias + 1) << fm));
    kir_expr *nan_ = isnan_;
    if (saturate == 0) nan_ = bin(m, KIR_OR, nan_, over);
    if (saturate < 0) nan_ = bin(m, KIR_OR, nan_, isinf_);
    r = kir_select(m, over, ci(m, I, f.max_bits), r);
    r = kir_select(m, bin(m, KIR_AND, neg, bin(m, KIR_GT, r, ci(m, I, 0))), bin(m, KIR_ADD, r, ci(m, I, 0x80)), r);
    r = kir_select(m, nan_, ci(m, I, 0x80), r);
    return kir_bitcast(m, to, kir_cast(m, GRAPHC_DTYPE_U8, r));
  }
  r = kir_select(m, over, ci(m, I, saturate ? f.max_bits : f.over_bits), r);
  if (saturate < 0)
    r = kir_select(m, bin(m, KIR_EQ, a, ci(m, I, (int64_t)(2 * fbias + 1) << fm)), ci(m, I, f.over_bits), r);
  r = kir_select(m, isnan_, ci(m, I, f.nan_bits), r);
  r = kir_select(m, neg, bin(m, KIR_ADD, r, ci(m, I, 0x80)), r);
  return kir_bitcast(m, to, kir_cast(m, GRAPHC_DTYPE_U8, r));
}

/* A cast that involves an fp8 type on either side, built from exact steps. */
kir_expr *kir_f8_cast(kir_module *m, gc_dtype to, kir_expr *a, int saturate) {
  if (!a) return NULL;
  if (gc_dtype_is_f8(a->type)) {
    kir_expr *v = f8_to_f32(m, a->type, a);
    return gc_dtype_is_f8(to) ? float_to_f8(m, to, v, saturate) : kir_cast(m, to, v);
  }
  GC_ASSERT(gc_dtype_is_f8(to));
  if (a->type != GRAPHC_DTYPE_F64) a = kir_cast(m, GRAPHC_DTYPE_F32, a);
  /* sm_89+: the saturating conversion is one instruction, the same result (measured on the
   * H100, 2026-12-08: the integer steps held a layernorm writing fp8 to a third of its f16
   * speed and an fp8 GEMM epilogue to half) */
  if (m->f8_cvt && saturate != 0 && a->type == GRAPHC_DTYPE_F32 &&
      (to == GRAPHC_DTYPE_F8E4M3 || to == GRAPHC_DTYPE_F8E5M2)) {
    kir_expr *r = kir_f8_hw(m, to, a);
    if (saturate == 1) return r;
    /* a store (-1): finite overflow saturates as above, but an infinity stays inf (e5m2) or
     * becomes NaN (e4m3), with its sign, where satfinite would give the largest finite value */
    const gc_dtype I = GRAPHC_DTYPE_I32;
    kir_expr *bits = kir_bitcast(m, I, a);
    kir_expr *inf = bin(m, KIR_EQ, bin(m, KIR_AND, bits, ci(m, I, INT32_MAX)), ci(m, I, 0x7f800000));
    int64_t over = fmt_of(to).over_bits;
    kir_expr *fix = kir_select(m, bin(m, KIR_LT, bits, ci(m, I, 0)), ci(m, I, over + 0x80), ci(m, I, over));
    kir_expr *ri = kir_select(m, inf, fix, kir_cast(m, I, kir_bitcast(m, GRAPHC_DTYPE_U8, r)));
    return kir_bitcast(m, to, kir_cast(m, GRAPHC_DTYPE_U8, ri));
  }
  return float_to_f8(m, to, a, saturate);
}
