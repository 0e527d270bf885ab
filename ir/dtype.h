/* dtype.h - scalar conversions between dtypes, written once for every layer.
 *
 * The f16/bf16 rounding rule (ir/dtype.c), used by the interpreter, constant
 * folding, code generation (constant data and literals) and random weights:
 *   - a double (or an exact int64) is rounded ONCE, straight to the 16-bit
 *     format, to nearest with ties to even; never through float first, so
 *     there is no double rounding;
 *   - subnormals are kept (gradual underflow); a magnitude at or below half
 *     the smallest subnormal rounds to a zero of the same sign;
 *   - a finite value at or past the halfway point between the largest finite
 *     value and 2^(emax+1) (65520 for f16, 0x1.ffp127 for bf16) becomes an
 *     infinity of the same sign; infinities stay infinities;
 *   - NaN stays NaN: the sign and the top fraction bits are kept and the quiet
 *     bit is set (double 0x7ff8... gives 0x7e00 / 0x7fc0).
 * Widening (f16/bf16 -> double) is exact, NaN payloads kept.
 * Integer arithmetic only: the result does not depend on the FPU rounding mode.
 */
#ifndef GC_DTYPE_H
#define GC_DTYPE_H

#include <stdint.h>

#include "ir/ir.h"

/* double -> IEEE binary16 / bfloat16 bits by the rule above. */
uint16_t gc_f64_to_f16(double x);
uint16_t gc_f64_to_bf16(double x);
/* Exact int64 -> binary16 / bfloat16 bits, rounded once from the integer. */
uint16_t gc_i64_to_f16(int64_t v);
uint16_t gc_i64_to_bf16(int64_t v);
/* binary16 / bfloat16 bits -> double (exact). */
double gc_f16_to_f64(uint16_t h);
double gc_bf16_to_f64(uint16_t h);

/* fp8 (f8e4m3 = ONNX FLOAT8E4M3FN, f8e5m2 = FLOAT8E5M2): a double is rounded once to
 * nearest even (subnormals kept). A magnitude that rounds past the largest finite value
 * (448, 57344) or an infinity becomes that largest value when `saturate` (ONNX Cast's
 * default, and the rule of `cast`), else NaN for e4m3 (it has no inf) and inf for e5m2.
 * NaN keeps its sign: S.1111.111 (e4m3), S.11111.10 (e5m2). Widening is exact.
 * Storing a result of any other op (gc_store_f64, consts, the backends' stores) saturates
 * finite magnitudes but keeps an infinity infinite (e5m2) or makes it NaN (e4m3): only
 * cast decides to saturate infinities. The fnuz formats (f8e4m3fnuz = FLOAT8E4M3FNUZ, max
 * 240; f8e5m2fnuz = FLOAT8E5M2FNUZ, max 57344; exponent biases 8 and 16) have no infinity
 * and no negative zero: NaN, and an overflow or infinity that does not saturate, is 0x80;
 * a result that rounds to zero is +0. */
uint8_t gc_f64_to_f8e4m3(double x, int saturate);
uint8_t gc_f64_to_f8e5m2(double x, int saturate);
double gc_f8e4m3_to_f64(uint8_t b);
double gc_f8e5m2_to_f64(uint8_t b);
/* The same for any fp8 dtype t. */
uint8_t gc_f64_to_f8(gc_dtype t, double x, int saturate);
double gc_f8_to_f64(gc_dtype t, uint8_t b);

/* Element i of a buffer of dtype t as a double (i64 beyond 2^53 rounds), and a
 * double stored into one (floats round once to nearest even, fp8 as said above, ints truncate
 * and saturate, bool is v != 0). */
double gc_load_f64(const void *base, gc_dtype t, int64_t i);
void gc_store_f64(void *base, gc_dtype t, int64_t i, double v);
/* Element i as an exact int64 (floats convert like cast: truncate, saturate, NaN -> 0),
 * and an exact int64 stored (ints wrap, bool is v != 0, floats round once). */
int64_t gc_load_i64(const void *base, gc_dtype t, int64_t i);
void gc_store_i64(void *base, gc_dtype t, int64_t i, int64_t v);
/* Truncate toward zero and saturate to [lo, hi]; NaN -> 0. */
int64_t gc_f64_to_int_sat(double v, int64_t lo, int64_t hi);

/* n elements of float dtype `from` at src converted to float dtype `to` at dst, as
 * `cast(to=...)` converts them: widening exact, narrowing rounded once by the rule above,
 * fp8 saturating when `saturate` (cast's default); the same dtype copies. Converting
 * weights (param ... from DTYPE) uses it with saturate 1. */
void gc_convert_floats(void *dst, gc_dtype to, const void *src, gc_dtype from, int64_t n, int saturate);

/* Smallest and largest value of an int (or bool) dtype; int64's for any other. */
void gc_int_range(gc_dtype t, int64_t *lo, int64_t *hi);

#endif /* GC_DTYPE_H */
