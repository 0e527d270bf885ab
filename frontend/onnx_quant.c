/* onnx_quant.c - ONNX quantization ops as compositions of graphc ops.
 *
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
 * QLinearMatMul and QLinearConv follow ONNX's reference step by step, with every step
 * exact in graphc's ops:
 *   quantize    x / scale in x's dtype (f32 if x and scale differ), np.rint as
 *               ox_round_even, + zero point and the clip in f64 (exact for every
 *               integer-valued input), cast to i8/u8; fp8 targets: cast with `saturate`
 *   dequantize  (f32(x) - f32(zero point)) * f32(scale), cast to the scale's (or
 *               output_dtype's) dtype
 *   integer     matmuls in i32 (exact with wrapping, like the reference's int32);
 *   ops         convolutions in f64 (integer products summed exactly below 2^53)
 *   requantize  the reference's f64 arithmetic: acc * (sa * sb / sy) + zp, rint, clip
 * Scales and zero points are per tensor (rank 0 or one element), per axis (1-D along
 * `axis`) or blocked (`block_size`: x's rank, ceil(D / block) along `axis`); each is
 * expanded to broadcast against x. Shape mismatches, non-finite or zero constant
 * quantization scales and non-zero fp8 zero points are errors that name the node.
 */
#include <math.h>
#include <string.h>

#include "frontend/onnx_internal.h"
#include "ir/dtype.h"

/* Set output 0; -1 when v is NULL (its error was reported). */
static int out1(ox *x, gc_value *v) {
  x->out_v[0] = v;
  return v ? 0 : -1;
}

/* Optional input i: NULL when absent; *bad set when present but not buildable. */
static gc_value *opt_in(ox *x, int i, int *bad) {
  if (!ox_has_in(x, i)) return NULL;
  gc_value *v = ox_in(x, i);
  if (!v) *bad = 1;
  return v;
}

/* v's element count (-1 when symbolic). */
static int64_t numel(const gc_value *v) {
  return gc_type_is_concrete(&v->type) ? gc_type_numel(&v->type) : -1;
}

/* Repeat v `block` times along `axis` and cut it to `d` elements there (blocked
 * quantization: element i of the axis takes block i / block). */
static gc_value *repeat_blocks(ox *x, gc_value *v, int axis, int64_t block, int64_t d) {
  const gc_type *t = &v->type;
  int64_t d1[GC_MAX_RANK + 1], d2[GC_MAX_RANK + 1], d3[GC_MAX_RANK];
  int r = t->rank;
  if (r + 1 > GC_MAX_RANK) {
    ox_unsup(x, "blocked quantization of rank %d", r);
    return NULL;
  }
  for (int i = 0, k = 0; i < r; i++) {
    d1[k] = d2[k] = t->dims[i];
    k++;
    if (i == axis) d1[k] = 1, d2[k] = block, k++;
  }
  for (int i = 0; i < r; i++) d3[i] = i == axis ? t->dims[i] * block : t->dims[i];
  v = ox_reshape(x, v, r + 1, d1);
  v = ox_broadcast(x, v, r + 1, d2);
  v = ox_reshape(x, v, r, d3);
  if (!v || d3[axis] == d) return v;
  int64_t st[GC_MAX_RANK] = {0}, en[GC_MAX_RANK], sp[GC_MAX_RANK];
  for (int i = 0; i < r; i++) en[i] = i == axis ? d : d3[i], sp[i] = 1;
  ox_attrs at = {0};
  at_ints(x, &at, "start", st, r);
  at_ints(x, &at, "end", en, r);
  at_ints(x, &at, "step", sp, r);
  return ox_op(x, GC_OP_SLICE, 1, &v, &at);
}

/* A scale or zero point `v` made broadcastable against xt: per tensor, per axis or
 * blocked (see the file comment). NULL after an error naming `what`. */
static gc_value *qparam(ox *x, gc_value *v, const gc_type *xt, int64_t axis_attr, int64_t block,
                        const char *what) {
  if (!v) return NULL;
  const gc_type *t = &v->type;
  int64_t n = numel(v), axis;
  if (n < 0) {
    ox_unsup(x, "%s with symbolic dims", what);
    return NULL;
  }
  if (block < 0) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "block_size must be >= 0, got %lld", (long long)block);
    return NULL;
  }
  if (!block && (t->rank == 0 || (t->rank == 1 && n == 1))) return ox_reshape(x, v, 0, NULL);
  if (ox_axis(x, axis_attr, xt->rank, &axis) != 0) return NULL;
  int64_t d = xt->dims[axis];
  if (GC_DIM_IS_SYM(d)) {
    ox_unsup(x, "quantization along a symbolic axis");
    return NULL;
  }
  if (!block) {
    if (t->rank != 1 || t->dims[0] != d) {
      ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
              "%s has %d dims and %lld elements; per-axis quantization along axis %lld needs a "
              "1-D tensor of %lld (or one element)", what, t->rank, (long long)n, (long long)axis,
              (long long)d);
      return NULL;
    }
    int64_t dims[GC_MAX_RANK];
    for (int i = 0; i < xt->rank; i++) dims[i] = i == axis ? d : 1;
    return ox_reshape(x, v, xt->rank, dims);
  }
  int ok = t->rank == xt->rank;
  for (int i = 0; ok && i < t->rank; i++)
    ok = i == axis ? t->dims[i] == (d + block - 1) / block : t->dims[i] == xt->dims[i];
  if (!ok) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
            "%s of blocked quantization must have x's shape with ceil(%lld / block_size %lld) = "
            "%lld along axis %lld", what, (long long)d, (long long)block,
            (long long)((d + block - 1) / block), (long long)axis);
    return NULL;
  }
  return repeat_blocks(x, v, (int)axis, block, d);
}

/* A constant scale must be finite and non-zero (a quantization divides by it). */
static int check_scale(ox *x, int i, const char *what) {
  ox_const *k = ox_in_const(x, i);
  for (int64_t e = 0; k && e < k->numel; e++) {
    double s = ox_const_get(k, e);
    if (!isfinite(s) || s == 0)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                     "%s element %lld is %g; a quantization scale must be finite and non-zero",
                     what, (long long)e, s);
  }
  return 0;
}

/* A constant fp8 zero point must be 0 (ONNX: fp8 quantization has no zero point). */
static int check_f8_zero(ox *x, int i) {
  ox_const *k = ox_in_const(x, i);
  for (int64_t e = 0; k && e < k->numel; e++)
    if (ox_const_get(k, e) != 0)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                     "the zero point of an fp8 quantization must be 0 (element %lld is %g)",
                     (long long)e, ox_const_get(k, e));
  return 0;
}

/* Quantized dtypes graphc has. */
static int quant_dtype(gc_dtype t) {
  return t == GRAPHC_DTYPE_I8 || t == GRAPHC_DTYPE_U8 || gc_dtype_is_f8(t);
}

/* rint(v) + zp clipped to t's range and cast to t (v float, zp broadcastable or NULL);
 * the add and the clip in f64, exact for every integer-valued v. */
static gc_value *requantize_int(ox *x, gc_value *r, gc_value *zp, gc_dtype t) {
  r = ox_cast(x, ox_round_even(x, r), GRAPHC_DTYPE_F64);
  if (zp) r = ox_bin(x, GC_OP_ADD, r, ox_cast(x, zp, GRAPHC_DTYPE_F64));
  int64_t lo, hi;
  gc_int_range(t, &lo, &hi);
  ox_attrs at = {0};
  at_float(x, &at, "min", (double)lo);
  at_float(x, &at, "max", (double)hi);
  if (r) r = ox_op(x, GC_OP_CLAMP, 1, &r, &at);
  return ox_cast(x, r, t);
}

/* The common float dtype of x and its scale: theirs when equal, else f32 (f64 if either is). */
static gc_dtype common_float(gc_dtype a, gc_dtype b) {
  if (a == b) return a;
  return a == GRAPHC_DTYPE_F64 || b == GRAPHC_DTYPE_F64 ? GRAPHC_DTYPE_F64 : GRAPHC_DTYPE_F32;
}

static int is_real_float(gc_dtype t) { return gc_dtype_is_float(t) && !gc_dtype_is_f8(t); }

/* QuantizeLinear(x, y_scale, y_zero_point?; axis, block_size, saturate, output_dtype). */
int ox_quantize_linear(ox *x, int arg) {
  int bad = 0;
  gc_value *a = ox_in(x, 0), *s = ox_in(x, 1), *zp = opt_in(x, 2, &bad);
  if (!a || !s || bad) return -1;
  if (!is_real_float(a->type.dtype) || !is_real_float(s->type.dtype))
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "x and y_scale must be floats, got %s and %s",
                   graphc_dtype_name(a->type.dtype), graphc_dtype_name(s->type.dtype));
  gc_dtype t = GRAPHC_DTYPE_U8;
  int64_t od = ox_attr_int(x, "output_dtype", 0);
  if (od && ox_dtype(x, (int)od, &t) != 0) return -1;
  if (zp) {
    if (od && zp->type.dtype != t)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "output_dtype %s differs from the zero point's %s",
                     graphc_dtype_name(t), graphc_dtype_name(zp->type.dtype));
    t = zp->type.dtype;
  }
  if (!quant_dtype(t)) return ox_unsup(x, "quantization to %s", graphc_dtype_name(t));
  if (check_scale(x, 1, "y_scale") != 0) return -1;
  int64_t axis = ox_attr_int(x, "axis", 1), block = ox_attr_int(x, "block_size", 0);
  gc_value *sb = qparam(x, s, &a->type, axis, block, "y_scale");
  if (!sb) return -1;
  gc_dtype ct = common_float(a->type.dtype, s->type.dtype);
  gc_value *q = ox_bin(x, GC_OP_DIV, ox_cast(x, a, ct), ox_cast(x, sb, ct));
  if (gc_dtype_is_f8(t)) {
    if (zp && check_f8_zero(x, 2) != 0) return -1;
    if (!q || ox_attr_int(x, "saturate", 1)) return out1(x, ox_cast(x, q, t));
    ox_attrs at = {0};
    at_dtype(x, &at, "to", t);
    at_bool(x, &at, "saturate", 0);
    return out1(x, ox_op(x, GC_OP_CAST, 1, &q, &at));
  }
  gc_value *zb = zp ? qparam(x, zp, &a->type, axis, block, "y_zero_point") : NULL;
  if (zp && !zb) return -1;
  return out1(x, requantize_int(x, q, zb, t));
}

/* DequantizeLinear(x, x_scale, x_zero_point?; axis, block_size, output_dtype). */
int ox_dequantize_linear(ox *x, int arg) {
  int bad = 0;
  gc_value *a = ox_in(x, 0), *s = ox_in(x, 1), *zp = opt_in(x, 2, &bad);
  if (!a || !s || bad) return -1;
  gc_dtype xt = a->type.dtype;
  if (!quant_dtype(xt) && xt != GRAPHC_DTYPE_I32)
    return ox_unsup(x, "dequantization of %s", graphc_dtype_name(xt));
  if (!is_real_float(s->type.dtype))
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "x_scale must be a float, got %s",
                   graphc_dtype_name(s->type.dtype));
  gc_dtype t = s->type.dtype;
  int64_t od = ox_attr_int(x, "output_dtype", 0);
  if (od && ox_dtype(x, (int)od, &t) != 0) return -1;
  int64_t axis = ox_attr_int(x, "axis", 1), block = ox_attr_int(x, "block_size", 0);
  gc_value *sb = qparam(x, s, &a->type, axis, block, "x_scale");
  if (!sb) return -1;
  gc_value *dx = ox_cast(x, a, GRAPHC_DTYPE_F32);
  if (zp && gc_dtype_is_f8(xt)) {
    if (check_f8_zero(x, 2) != 0) return -1;
  } else if (zp) {
    if (zp->type.dtype != xt)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "x_zero_point has dtype %s, x has %s",
                     graphc_dtype_name(zp->type.dtype), graphc_dtype_name(xt));
    gc_value *zb = qparam(x, zp, &a->type, axis, block, "x_zero_point");
    if (!zb) return -1;
    dx = ox_bin(x, GC_OP_SUB, dx, ox_cast(x, zb, GRAPHC_DTYPE_F32));
  }
  gc_value *y = ox_bin(x, GC_OP_MUL, dx, ox_cast(x, sb, GRAPHC_DTYPE_F32));
  return out1(x, ox_cast(x, y, t));
}

/* DynamicQuantizeLinear(x) -> y (u8), y_scale, y_zero_point: the range of x and 0 mapped
 * onto [0, 255], in f32 as the reference. */
int ox_dynamic_quantize_linear(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  if (a->type.dtype != GRAPHC_DTYPE_F32)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "x must be f32, got %s", graphc_dtype_name(a->type.dtype));
  int64_t axes[GC_MAX_RANK];
  for (int i = 0; i < a->type.rank; i++) axes[i] = i;
  int r = a->type.rank;
  gc_value *mx = ox_bin(x, GC_OP_MAXIMUM, ox_reduce(x, GC_OP_REDUCE_MAX, a, axes, r, 0), ox_scalar(x, GRAPHC_DTYPE_F32, 0));
  gc_value *mn = ox_bin(x, GC_OP_MINIMUM, ox_reduce(x, GC_OP_REDUCE_MIN, a, axes, r, 0), ox_scalar(x, GRAPHC_DTYPE_F32, 0));
  gc_value *range = ox_sel(x, ox_bin(x, GC_OP_EQ, mx, mn), ox_scalar(x, GRAPHC_DTYPE_F32, 1), ox_bin(x, GC_OP_SUB, mx, mn));
  gc_value *scale = ox_binc(x, GC_OP_DIV, range, 255.0);
  gc_value *izp = ox_un(x, GC_OP_NEG, ox_bin(x, GC_OP_DIV, mn, scale));
  ox_attrs at = {0};
  at_float(x, &at, "min", 0.0);
  at_float(x, &at, "max", 255.0);
  gc_value *zp = izp ? ox_op(x, GC_OP_CLAMP, 1, &izp, &at) : NULL;
  zp = ox_round_even(x, zp);
  gc_value *q = ox_bin(x, GC_OP_ADD, ox_round_even(x, ox_bin(x, GC_OP_DIV, a, scale)), zp);
  gc_value *y = q ? ox_op(x, GC_OP_CLAMP, 1, &q, &at) : NULL;
  x->out_v[0] = ox_cast(x, y, GRAPHC_DTYPE_U8);
  x->out_v[1] = scale;
  x->out_v[2] = ox_cast(x, zp, GRAPHC_DTYPE_U8);
  return x->out_v[0] && x->out_v[1] && x->out_v[2] ? 0 : -1;
}

/* v (i8/u8) minus its zero point zp (scalar or 1-D along `axis` of v, NULL: none) in
 * dtype t (i32 for matmuls, f64 for convolutions). */
static gc_value *centered(ox *x, gc_value *v, gc_value *zp, int axis, gc_dtype t, const char *what) {
  if (!v) return NULL;
  if (v->type.dtype != GRAPHC_DTYPE_I8 && v->type.dtype != GRAPHC_DTYPE_U8) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "%s must be i8 or u8, got %s", what,
            graphc_dtype_name(v->type.dtype));
    return NULL;
  }
  gc_value *c = ox_cast(x, v, t);
  if (!zp) return c;
  if (zp->type.dtype != v->type.dtype) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "the zero point of %s has dtype %s, %s has %s", what,
            graphc_dtype_name(zp->type.dtype), what, graphc_dtype_name(v->type.dtype));
    return NULL;
  }
  gc_value *zb = qparam(x, zp, &v->type, axis, 0, "zero point");
  return zb ? ox_bin(x, GC_OP_SUB, c, ox_cast(x, zb, t)) : NULL;
}

/* Is optional input i absent, or a constant of zeros? */
static int no_zero_point(ox *x, int i) {
  if (!ox_has_in(x, i)) return 1;
  ox_const *k = ox_in_const(x, i);
  for (int64_t e = 0; k && e < k->numel; e++)
    if (ox_const_get(k, e) != 0) return 0;
  return k != NULL;
}

/* MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> i32: per-row A and per-column B
 * zero points; an exact i32 matmul. Without zero points (or with constant zeros) the 8-bit
 * operands go to graphc's matmul as they are (two 8-bit integers give i32, ir/infer.c: the
 * integer tensor cores), the same wrapping sum; likewise an A with a per-tensor zero point
 * (a constant, or DynamicQuantizeLinear's computed one) against a 2-D i8 B without one:
 *   (a - za) b = a' b + (off - za) colsum(b),   a' = a - off as i8 (off 128 for a u8 A)
 * equal modulo 2^32 to the reference's int32 sum (one kind for both tensor-core operands;
 * colsum(b) reads the weights alone: computed once per weights). */
int ox_matmul_integer(ox *x, int arg) {
  int bad = 0;
  gc_value *a = ox_in(x, 0), *b = ox_in(x, 1), *za = opt_in(x, 2, &bad), *zb = opt_in(x, 3, &bad);
  if (!a || !b || bad) return -1;
  int a8 = a->type.dtype == GRAPHC_DTYPE_I8 || a->type.dtype == GRAPHC_DTYPE_U8;
  int b8 = b->type.dtype == GRAPHC_DTYPE_I8 || b->type.dtype == GRAPHC_DTYPE_U8;
  if (a8 && b8 && (!za || za->type.dtype == a->type.dtype) && (!zb || zb->type.dtype == b->type.dtype) &&
      no_zero_point(x, 2) && no_zero_point(x, 3))
    return out1(x, ox_matmul_values(x, a, b));
  if (a8 && b->type.dtype == GRAPHC_DTYPE_I8 && b->type.rank == 2 && za && za->type.dtype == a->type.dtype &&
      numel(za) == 1 && no_zero_point(x, 3) && a->type.rank >= 2) {
    int64_t off = a->type.dtype == GRAPHC_DTYPE_U8 ? 128 : 0, k0 = 0;
    gc_value *ai = off ? ox_cast(x, ox_binc(x, GC_OP_SUB, ox_cast(x, a, GRAPHC_DTYPE_I32), (double)off), GRAPHC_DTYPE_I8)
                       : a;
    gc_value *m = ai ? ox_matmul_values(x, ai, b) : NULL;
    gc_value *zs = ox_reshape(x, ox_cast(x, za, GRAPHC_DTYPE_I32), 0, NULL);
    gc_value *cs = ox_reduce(x, GC_OP_REDUCE_SUM, ox_cast(x, b, GRAPHC_DTYPE_I32), &k0, 1, 0);
    gc_value *corr = zs && cs ? ox_bin(x, GC_OP_MUL, cs, ox_cbin(x, GC_OP_SUB, (double)off, zs)) : NULL;
    return out1(x, m && corr ? ox_bin(x, GC_OP_ADD, m, corr) : NULL);
  }
  gc_value *ac = centered(x, a, za, a->type.rank >= 2 ? a->type.rank - 2 : 0, GRAPHC_DTYPE_I32, "A");
  gc_value *bc = centered(x, b, zb, b->type.rank - 1, GRAPHC_DTYPE_I32, "B");
  if (!ac || !bc) return -1;
  return out1(x, ox_matmul_values(x, ac, bc));
}

/* ConvInteger(x, w, x_zero_point?, w_zero_point?) -> i32: the convolution of the centered
 * operands in f64 (exact), per-output-channel w zero points. */
int ox_conv_integer(ox *x, int arg) {
  int bad = 0;
  gc_value *a = ox_in(x, 0), *w = ox_in(x, 1), *za = opt_in(x, 2, &bad), *zw = opt_in(x, 3, &bad);
  if (!a || !w || bad) return -1;
  gc_value *ac = centered(x, a, za, 1, GRAPHC_DTYPE_F64, "x");
  gc_value *wc = centered(x, w, zw, 0, GRAPHC_DTYPE_F64, "w");
  if (!ac || !wc) return -1;
  return out1(x, ox_cast(x, ox_conv_values(x, ac, wc, NULL), GRAPHC_DTYPE_I32));
}

/* acc (exact integers) * (sa * sb / sy) + zy, rint, clip, cast to zy's dtype: the
 * reference's requantization (scale arithmetic in the scales' dtype, the rest in f64).
 * sb_axis: the axis of acc along which a 1-D sb runs. */
static gc_value *requantize(ox *x, gc_value *acc, int isa, int isb, int isy, int izy, int sb_axis) {
  gc_value *sa = ox_in(x, isa), *sb = ox_in(x, isb), *sy = ox_in(x, isy), *zy = ox_in(x, izy);
  if (!acc || !sa || !sb || !sy || !zy) return NULL;
  if (check_scale(x, isy, "y_scale") != 0) return NULL;
  if (!quant_dtype(zy->type.dtype) || gc_dtype_is_f8(zy->type.dtype)) {
    ox_unsup(x, "requantization to %s", graphc_dtype_name(zy->type.dtype));
    return NULL;
  }
  gc_value *pa = qparam(x, sa, &acc->type, acc->type.rank >= 2 ? acc->type.rank - 2 : 0, 0, "a scale");
  gc_value *pb = qparam(x, sb, &acc->type, sb_axis, 0, "b scale");
  gc_value *py = qparam(x, sy, &acc->type, 0, 0, "y_scale");
  gc_value *pz = qparam(x, zy, &acc->type, 0, 0, "y_zero_point");
  if (!pa || !pb || !py || !pz) return NULL;
  gc_dtype st = common_float(sa->type.dtype, common_float(sb->type.dtype, sy->type.dtype));
  gc_value *f = ox_bin(x, GC_OP_DIV, ox_bin(x, GC_OP_MUL, ox_cast(x, pa, st), ox_cast(x, pb, st)), ox_cast(x, py, st));
  gc_value *r = ox_bin(x, GC_OP_MUL, ox_cast(x, acc, GRAPHC_DTYPE_F64), ox_cast(x, f, GRAPHC_DTYPE_F64));
  return requantize_int(x, r, pz, zy->type.dtype);
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp). */
int ox_qlinear_matmul(ox *x, int arg) {
  int bad = 0;
  gc_value *a = ox_in(x, 0), *b = ox_in(x, 3), *za = opt_in(x, 2, &bad), *zb = opt_in(x, 5, &bad);
  if (!a || !b || bad) return -1;
  gc_value *ac = centered(x, a, za, a->type.rank >= 2 ? a->type.rank - 2 : 0, GRAPHC_DTYPE_I32, "a");
  gc_value *bc = centered(x, b, zb, b->type.rank - 1, GRAPHC_DTYPE_I32, "b");
  gc_value *acc = ox_matmul_values(x, ac, bc);
  if (!acc) return -1;
  return out1(x, requantize(x, acc, 1, 4, 6, 7, acc->type.rank - 1));
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?): B is i32 added to
 * the accumulator; w_scale per output channel. */
int ox_qlinear_conv(ox *x, int arg) {
  int bad = 0;
  gc_value *a = ox_in(x, 0), *w = ox_in(x, 3), *za = opt_in(x, 2, &bad), *zw = opt_in(x, 5, &bad);
  gc_value *bias = opt_in(x, 8, &bad);
  if (!a || !w || bad) return -1;
  gc_value *ac = centered(x, a, za, 1, GRAPHC_DTYPE_F64, "x");
  gc_value *wc = centered(x, w, zw, 0, GRAPHC_DTYPE_F64, "w");
  if (!ac || !wc) return -1;
  gc_value *acc = ox_conv_values(x, ac, wc, bias ? ox_cast(x, bias, GRAPHC_DTYPE_F64) : NULL);
  if (!acc) return -1;
  return out1(x, requantize(x, acc, 1, 4, 6, 7, 1));
}
