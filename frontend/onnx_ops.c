/* onnx_ops.c - ONNX op mappings: the op table, elementwise ops, activations,
 * reductions and constants. Movement ops are in onnx_shape.c, contractions
 * and normalizations in onnx_nn.c.
 *
 * A mapping reads the node being translated through the ox_ accessors, builds
 * graphc ops with ox_op() (types inferred, constants folded) and stores its
 * outputs in x->out_v[i] (a value) or x->out_k[i] (constant data). It returns
 * 0, or -1 after reporting an error that names the node.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_internal.h"

/* Mappings defined in onnx_shape.c and onnx_nn.c. */
int ox_reshape_op(ox *x, int arg);
int ox_flatten(ox *x, int arg);
int ox_transpose_op(ox *x, int arg);
int ox_concat(ox *x, int arg);
int ox_slice(ox *x, int arg);
int ox_gather(ox *x, int arg);
int ox_gather_elements(ox *x, int arg);
int ox_unsqueeze(ox *x, int arg);
int ox_squeeze(ox *x, int arg);
int ox_expand(ox *x, int arg);
int ox_split(ox *x, int arg);
int ox_tile(ox *x, int arg);
int ox_pad(ox *x, int arg);
int ox_depth_to_space(ox *x, int arg);
int ox_space_to_depth(ox *x, int arg);
int ox_trilu(ox *x, int arg);
int ox_shape(ox *x, int arg);
int ox_size(ox *x, int arg);
int ox_range(ox *x, int arg);
int ox_constant_of_shape(ox *x, int arg);
int ox_eye_like(ox *x, int arg);
int ox_one_hot(ox *x, int arg);
int ox_gemm(ox *x, int arg);
int ox_matmul(ox *x, int arg);
int ox_conv(ox *x, int arg);
int ox_pool(ox *x, int arg);
int ox_global_pool(ox *x, int arg);
int ox_softmax(ox *x, int arg);
int ox_hardmax(ox *x, int arg);
int ox_layernorm(ox *x, int arg);
int ox_batchnorm(ox *x, int arg);
int ox_instancenorm(ox *x, int arg);
int ox_groupnorm(ox *x, int arg);
int ox_rmsnorm(ox *x, int arg);
int ox_lpnorm(ox *x, int arg);
int ox_mvn(ox *x, int arg);
int ox_cumsum(ox *x, int arg);
int ox_window(ox *x, int arg);
int ox_attention(ox *x, int arg);
int ox_nll_loss(ox *x, int arg);
int ox_sce_loss(ox *x, int arg);
int ox_resize(ox *x, int arg);
int ox_conv_transpose(ox *x, int arg);
int ox_center_crop_pad(ox *x, int arg);
int ox_einsum(ox *x, int arg);
int ox_topk(ox *x, int arg);
int ox_gather_nd(ox *x, int arg);
int ox_reverse_sequence(ox *x, int arg);
int ox_lrn(ox *x, int arg);
int ox_scatter_elements(ox *x, int arg);
int ox_scatter_nd(ox *x, int arg);
int ox_quantize_linear(ox *x, int arg);
int ox_dequantize_linear(ox *x, int arg);
int ox_dynamic_quantize_linear(ox *x, int arg);
int ox_matmul_integer(ox *x, int arg);
int ox_conv_integer(ox *x, int arg);
int ox_qlinear_matmul(ox *x, int arg);
int ox_qlinear_conv(ox *x, int arg);

/* Set output 0; -1 when v is NULL (its error was reported). */
static int out1(ox *x, gc_value *v) {
  x->out_v[0] = v;
  return v ? 0 : -1;
}

/* dtype of input i, or -1. */
static int in_dtype(ox *x, int i) {
  gc_type t;
  return ox_in_type(x, i, &t) == 0 ? (int)t.dtype : -1;
}

/* Require a float input. */
static gc_value *in_float(ox *x, int i) {
  gc_value *v = ox_in(x, i);
  if (v && !gc_dtype_is_float(v->type.dtype)) {
    ox_unsup(x, "input %d has type %s; graphc computes this op on float types only", i,
             graphc_dtype_name(v->type.dtype));
    return NULL;
  }
  return v;
}

/* ---- elementwise ---------------------------------------------------------------------------------- */

/* Unary op that maps to one graphc op. */
static int op_unary(ox *x, int opc) { return out1(x, ox_un(x, (gc_opcode)opc, ox_in(x, 0))); }

/* Binary op that maps to one graphc op (numpy broadcasting on both sides). */
static int op_binary(ox *x, int opc) {
  return out1(x, ox_bin(x, (gc_opcode)opc, ox_in(x, 0), ox_in(x, 1)));
}

/* Xor on bools: a != b. */
static int op_xor(ox *x, int arg) { return out1(x, ox_bin(x, GC_OP_NE, ox_in(x, 0), ox_in(x, 1))); }

/* Pow: float base (the exponent is cast to it); integer bases go through f64. */
static int op_pow(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *b = ox_in(x, 1);
  if (!a || !b) return -1;
  gc_dtype t = a->type.dtype;
  if (gc_dtype_is_float(t)) return out1(x, ox_bin(x, GC_OP_POW, a, ox_cast(x, b, t)));
  if (t == GRAPHC_DTYPE_BOOL) return ox_unsup(x, "Pow on bool");
  gc_value *r = ox_bin(x, GC_OP_POW, ox_cast(x, a, GRAPHC_DTYPE_F64), ox_cast(x, b, GRAPHC_DTYPE_F64));
  return out1(x, ox_cast(x, r, t));
}

/* Max / Min / Sum / Mean over any number of inputs: a chain of binary ops. */
static int op_variadic(ox *x, int kind) {
  int n = ox_n_in(x);
  gc_opcode opc = kind == 'M' ? GC_OP_MAXIMUM : kind == 'm' ? GC_OP_MINIMUM : GC_OP_ADD;
  gc_value *acc = ox_in(x, 0);
  for (int i = 1; i < n && acc; i++) acc = ox_bin(x, opc, acc, ox_in(x, i));
  if (kind == 'a' && acc && n > 1) acc = ox_binc(x, GC_OP_DIV, acc, n);
  return out1(x, acc);
}

/* 1/x. */
static int op_reciprocal(ox *x, int arg) { return out1(x, ox_cbin(x, GC_OP_DIV, 1, ox_in(x, 0))); }

/* Sign: 1, -1 or 0 by comparisons. */
static int op_sign(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  gc_dtype t = a->type.dtype;
  gc_value *zero = ox_scalar(x, t, 0);
  gc_value *pos = ox_sel(x, ox_bin(x, GC_OP_GT, a, zero), ox_scalar(x, t, 1), zero);
  if (t == GRAPHC_DTYPE_U8) return out1(x, pos);
  return out1(x, ox_sel(x, ox_bin(x, GC_OP_LT, a, zero), ox_scalar(x, t, -1), pos));
}

/* IsNaN: x != x. */
static int op_isnan(ox *x, int arg) {
  gc_value *a = in_float(x, 0);
  return out1(x, ox_bin(x, GC_OP_NE, a, a));
}

/* IsInf with detect_positive / detect_negative. */
static int op_isinf(ox *x, int arg) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  int pos = (int)ox_attr_int(x, "detect_positive", 1), neg = (int)ox_attr_int(x, "detect_negative", 1);
  gc_value *p = ox_bin(x, GC_OP_EQ, a, ox_scalar(x, a->type.dtype, INFINITY));
  gc_value *m = ox_bin(x, GC_OP_EQ, a, ox_scalar(x, a->type.dtype, -INFINITY));
  if (pos && neg) return out1(x, ox_bin(x, GC_OP_OR, p, m));
  if (pos) return out1(x, p);
  if (neg) return out1(x, m);
  return out1(x, ox_bin(x, GC_OP_AND, p, m)); /* never both: all false */
}

/* Round half to even: floor, then fix the exact halves by parity. */
static int op_round(ox *x, int arg) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  return out1(x, ox_round_even(x, a));
}

/* a (float) rounded to the nearest integer, ties to even (np.rint). */
gc_value *ox_round_even(ox *x, gc_value *a) {
  gc_value *f = ox_un(x, GC_OP_FLOOR, a);
  gc_value *d = ox_bin(x, GC_OP_SUB, a, f);
  gc_value *f1 = ox_binc(x, GC_OP_ADD, f, 1);
  /* odd = f - 2*floor(f/2), 1 for odd f, 0 for even */
  gc_value *odd = ox_bin(x, GC_OP_SUB, f, ox_binc(x, GC_OP_MUL, ox_un(x, GC_OP_FLOOR, ox_binc(x, GC_OP_MUL, f, 0.5)), 2));
  gc_value *half = ox_bin(x, GC_OP_ADD, f, odd);
  gc_value *r = ox_sel(x, ox_binc(x, GC_OP_GT, d, 0.5), f1, f);
  return ox_sel(x, ox_binc(x, GC_OP_EQ, d, 0.5), half, r);
}

/* Mod: fmod=1 is C's fmod (sign of the dividend); fmod=0 is Python's (sign of the divisor). */
static int op_mod(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *b = ox_in(x, 1);
  if (!a || !b) return -1;
  int fm = (int)ox_attr_int(x, "fmod", 0);
  gc_dtype t = a->type.dtype;
  gc_value *r;
  if (gc_dtype_is_float(t)) {
    /* fmod=1: a - trunc(a/b)*b; fmod=0 (opset 28): a - floor(a/b)*b */
    gc_value *q = ox_bin(x, GC_OP_DIV, a, b);
    gc_value *tq = fm ? ox_sel(x, ox_binc(x, GC_OP_LT, q, 0), ox_un(x, GC_OP_CEIL, q), ox_un(x, GC_OP_FLOOR, q))
                      : ox_un(x, GC_OP_FLOOR, q);
    r = ox_bin(x, GC_OP_SUB, a, ox_bin(x, GC_OP_MUL, tq, b));
    /* finite a, infinite b: a (fmod=1, or same signs / a = 0), else b */
    gc_value *binf = ox_binc(x, GC_OP_EQ, ox_un(x, GC_OP_ABS, b), INFINITY);
    gc_value *afin = ox_binc(x, GC_OP_LT, ox_un(x, GC_OP_ABS, a), INFINITY);
    gc_value *keep_a = ox_bin(x, GC_OP_EQ, ox_binc(x, GC_OP_LT, a, 0), ox_binc(x, GC_OP_LT, b, 0));
    keep_a = ox_bin(x, GC_OP_OR, keep_a, ox_binc(x, GC_OP_EQ, a, 0));
    gc_value *special = fm ? a : ox_sel(x, keep_a, a, b);
    return out1(x, ox_sel(x, ox_bin(x, GC_OP_AND, binf, afin), special, r));
  }
  if (t == GRAPHC_DTYPE_BOOL) return ox_unsup(x, "Mod on bool");
  r = ox_bin(x, GC_OP_SUB, a, ox_bin(x, GC_OP_MUL, ox_bin(x, GC_OP_DIV, a, b), b));
  if (fm || t == GRAPHC_DTYPE_U8) return out1(x, r);
  /* Python: a nonzero remainder takes the divisor's sign. */
  gc_value *fix = ox_bin(x, GC_OP_AND, ox_binc(x, GC_OP_NE, r, 0),
                         ox_bin(x, GC_OP_NE, ox_binc(x, GC_OP_LT, r, 0), ox_binc(x, GC_OP_LT, b, 0)));
  return out1(x, ox_sel(x, fix, ox_bin(x, GC_OP_ADD, r, b), r));
}

/* Where(cond, a, b). */
static int op_where(ox *x, int arg) { return out1(x, ox_sel(x, ox_in(x, 0), ox_in(x, 1), ox_in(x, 2))); }

/* Clip: constant bounds become clamp attributes, others maximum/minimum. */
static int op_clip(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  gc_dtype t = a->type.dtype;
  ox_attrs at = {0};
  gc_value *r = a;
  if (x->opset < 11) {
    at_scalar(x, &at, "min", t, ox_attr_float(x, "min", -INFINITY));
    at_scalar(x, &at, "max", t, ox_attr_float(x, "max", INFINITY));
    return out1(x, ox_op(x, GC_OP_CLAMP, 1, &a, &at));
  }
  for (int i = 1; i <= 2; i++) {
    if (!ox_has_in(x, i)) continue;
    ox_const *k = ox_in_const(x, i);
    if (k && k->numel == 1) {
      at_scalar(x, &at, i == 1 ? "min" : "max", t, ox_const_get(k, 0));
    } else if (!k) {
      r = ox_bin(x, i == 1 ? GC_OP_MAXIMUM : GC_OP_MINIMUM, r, ox_in(x, i));
    } else {
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "Clip bound must be a scalar");
    }
  }
  if (at.n) r = ox_op(x, GC_OP_CLAMP, 1, &r, &at);
  return out1(x, r);
}

/* A cast with the node's `saturate` (opset 19+; it only changes casts to fp8). */
static gc_value *cast_sat(ox *x, gc_value *a, gc_dtype t) {
  if (!a || !gc_dtype_is_f8(t) || ox_attr_int(x, "saturate", 1) || a->type.dtype == t)
    return ox_cast(x, a, t);
  ox_attrs at = {0};
  at_dtype(x, &at, "to", t);
  at_bool(x, &at, "saturate", 0);
  return ox_op(x, GC_OP_CAST, 1, &a, &at);
}

/* Cast(to=...). */
static int op_cast(ox *x, int arg) {
  gc_dtype t;
  if (ox_dtype(x, (int)ox_attr_int(x, "to", 0), &t) != 0) return -1;
  int src = in_dtype(x, 0);
  if (src < 0) return -1;
  ox_const *k = ox_in_const(x, 0);
  if (k && k->numel == 0) { /* empty constants stay constant */
    x->out_k[0] = ox_const_new(x, t, k->rank, k->dims);
    return x->out_k[0] ? 0 : -1;
  }
  return out1(x, cast_sat(x, ox_in(x, 0), t));
}

/* CastLike(x, like): cast to like's dtype. */
static int op_castlike(ox *x, int arg) {
  int t = in_dtype(x, 1);
  if (t < 0) return -1;
  return out1(x, cast_sat(x, ox_in(x, 0), (gc_dtype)t));
}

/* Identity (and inference-time Dropout output 0): the input itself. */
static int op_identity(ox *x, int arg) {
  if (!ox_has_in(x, 0))   /* a node without its input (found by fuzz_onnx) */
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "input 0 is missing");
  ox_val *v = ox_lookup(x, x->node->inputs[0]);
  if (!v) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "input 0 is not defined");
  x->out_v[0] = v->v;
  x->out_k[0] = v->k;
  return 0;
}

/* Dropout at inference: identity; the mask is all true. */
static int op_dropout(ox *x, int arg) {
  if (ox_has_in(x, 2)) {
    ox_const *k = ox_in_need(x, 2);
    double ratio = 0.5;
    if (ox_has_in(x, 1) && ox_in_scalar(x, 1, "ratio", &ratio) != 0) return -1;
    if (!k) return ox_unsup(x, "training_mode must be a constant");
    if (ox_const_get(k, 0) != 0 && ratio != 0)
      return ox_unsup(x, "training-mode dropout is random; only inference is supported");
  }
  if (op_identity(x, 0) != 0) return -1;
  if (ox_want_out(x, 1)) {
    gc_type t;
    if (ox_in_type(x, 0, &t) != 0) return -1;
    ox_const *m = ox_const_new(x, GRAPHC_DTYPE_BOOL, t.rank, t.dims);
    if (!m) return -1;
    memset(m->data, 1, (size_t)m->numel);
    x->out_k[1] = m;
  }
  return 0;
}

/* ---- activations ------------------------------------------------------------------------------------- */

/* Activations composed of elementwise ops; arg picks which. */
enum { A_HARDSIGMOID, A_HARDSWISH, A_LEAKYRELU, A_ELU, A_SELU, A_CELU, A_THRELU, A_SOFTPLUS,
       A_SOFTSIGN, A_MISH, A_SWISH, A_SHRINK, A_TAN, A_SINH, A_COSH, A_ASINH, A_ACOSH, A_ATANH,
       A_GELU, A_PRELU, A_ATAN, A_ASIN, A_ACOS };

/* atan by three argument halvings, atan(x) = 2 atan(x / (1 + sqrt(1 + x^2))),
 * down to |t| < 0.2, then its odd series to t^15 (error below 1e-13). With
 * `half` the first halving is the asin one: asin(x) = 2 atan(x / (1 + sqrt(1 - x^2))). */
static gc_value *atan_of(ox *x, gc_value *a, int asin) {
  gc_value *t = a;
  for (int i = 0; i < 3; i++) {
    gc_value *sq = ox_bin(x, GC_OP_MUL, t, t);
    sq = i == 0 && asin ? ox_cbin(x, GC_OP_SUB, 1, sq) : ox_binc(x, GC_OP_ADD, sq, 1);
    t = ox_bin(x, GC_OP_DIV, t, ox_binc(x, GC_OP_ADD, ox_un(x, GC_OP_SQRT, sq), 1));
  }
  gc_value *t2 = ox_bin(x, GC_OP_MUL, t, t), *acc = NULL;
  for (int k = 7; k >= 0; k--) { /* Horner in t^2: sum (-1)^k t^(2k+1) / (2k+1) */
    double c = (k % 2 ? -1.0 : 1.0) / (2 * k + 1);
    acc = acc ? ox_binc(x, GC_OP_ADD, ox_bin(x, GC_OP_MUL, acc, t2), c) : ox_scalar(x, a->type.dtype, c);
  }
  return ox_binc(x, GC_OP_MUL, ox_bin(x, GC_OP_MUL, acc, t), 8);
}

/* Activations and trigonometric ops composed of elementwise graphc ops. */
static int op_act(ox *x, int kind) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  /* f16 / bf16: compute the composition in f32 and round once at the end. */
  gc_dtype orig = a->type.dtype;
  int up = (orig == GRAPHC_DTYPE_F16 || orig == GRAPHC_DTYPE_BF16) && kind != A_GELU;
  if (up) a = ox_cast(x, a, GRAPHC_DTYPE_F32);
  if (!a) return -1;
  gc_dtype t = a->type.dtype;
  gc_value *zero = ox_scalar(x, t, 0), *r = NULL;
  switch (kind) {
    case A_HARDSIGMOID:
    case A_HARDSWISH: {
      double al = kind == A_HARDSWISH ? 1.0 / 6 : ox_attr_float(x, "alpha", 0.2);
      double be = kind == A_HARDSWISH ? 0.5 : ox_attr_float(x, "beta", 0.5);
      gc_value *v = ox_binc(x, GC_OP_ADD, ox_binc(x, GC_OP_MUL, a, al), be);
      ox_attrs at = {0};
      at_float(x, &at, "min", 0.0);
      at_float(x, &at, "max", 1.0);
      r = ox_op(x, GC_OP_CLAMP, 1, &v, &at);
      if (kind == A_HARDSWISH) r = ox_bin(x, GC_OP_MUL, a, r);
      break;
    }
    case A_LEAKYRELU:
      r = ox_sel(x, ox_bin(x, GC_OP_LT, a, zero), ox_binc(x, GC_OP_MUL, a, ox_attr_float(x, "alpha", 0.01)), a);
      break;
    case A_PRELU:
      r = ox_sel(x, ox_bin(x, GC_OP_LT, a, zero), ox_bin(x, GC_OP_MUL, a, ox_cast(x, ox_in(x, 1), t)), a);
      break;
    case A_ELU: {
      gc_value *e = ox_binc(x, GC_OP_MUL, ox_binc(x, GC_OP_SUB, ox_un(x, GC_OP_EXP, a), 1),
                            ox_attr_float(x, "alpha", 1.0));
      r = ox_sel(x, ox_bin(x, GC_OP_LT, a, zero), e, a);
      break;
    }
    case A_SELU: {
      double al = ox_attr_float(x, "alpha", 1.67326319217681884765625);
      double ga = ox_attr_float(x, "gamma", 1.05070102214813232421875);
      gc_value *e = ox_binc(x, GC_OP_SUB, ox_binc(x, GC_OP_MUL, ox_un(x, GC_OP_EXP, a), al), al);
      r = ox_binc(x, GC_OP_MUL, ox_sel(x, ox_bin(x, GC_OP_LE, a, zero), e, a), ga);
      break;
    }
    case A_CELU: {
      double al = ox_attr_float(x, "alpha", 1.0);
      gc_value *e = ox_binc(x, GC_OP_MUL, ox_binc(x, GC_OP_SUB, ox_un(x, GC_OP_EXP, ox_binc(x, GC_OP_DIV, a, al)), 1), al);
      r = ox_bin(x, GC_OP_ADD, ox_un(x, GC_OP_RELU, a), ox_bin(x, GC_OP_MINIMUM, zero, e));
      break;
    }
    case A_THRELU:
      r = ox_sel(x, ox_binc(x, GC_OP_GT, a, ox_attr_float(x, "alpha", 1.0)), a, zero);
      break;
    case A_SOFTPLUS:
    case A_MISH:
      r = ox_un(x, GC_OP_LOG, ox_binc(x, GC_OP_ADD, ox_un(x, GC_OP_EXP, a), 1));
      if (kind == A_MISH) r = ox_bin(x, GC_OP_MUL, a, ox_un(x, GC_OP_TANH, r));
      break;
    case A_SOFTSIGN:
      r = ox_bin(x, GC_OP_DIV, a, ox_binc(x, GC_OP_ADD, ox_un(x, GC_OP_ABS, a), 1));
      break;
    case A_SWISH:
      r = ox_bin(x, GC_OP_MUL, a, ox_un(x, GC_OP_SIGMOID, ox_binc(x, GC_OP_MUL, a, ox_attr_float(x, "alpha", 1.0))));
      break;
    case A_SHRINK: {
      double l = ox_attr_float(x, "lambd", 0.5), b = ox_attr_float(x, "bias", 0.0);
      gc_value *hi = ox_sel(x, ox_binc(x, GC_OP_GT, a, l), ox_binc(x, GC_OP_SUB, a, b), zero);
      r = ox_sel(x, ox_binc(x, GC_OP_LT, a, -l), ox_binc(x, GC_OP_ADD, a, b), hi);
      break;
    }
    case A_ATAN: r = atan_of(x, a, 0); break;
    case A_ASIN: r = atan_of(x, a, 1); break;
    case A_ACOS: r = ox_cbin(x, GC_OP_SUB, 1.57079632679489661923, atan_of(x, a, 1)); break;
    case A_TAN: r = ox_bin(x, GC_OP_DIV, ox_un(x, GC_OP_SIN, a), ox_un(x, GC_OP_COS, a)); break;
    case A_SINH:
    case A_COSH: {
      gc_value *e = ox_un(x, GC_OP_EXP, a), *m = ox_un(x, GC_OP_EXP, ox_un(x, GC_OP_NEG, a));
      r = ox_binc(x, GC_OP_MUL, ox_bin(x, kind == A_SINH ? GC_OP_SUB : GC_OP_ADD, e, m), 0.5);
      break;
    }
    case A_ASINH:
    case A_ACOSH: {
      gc_value *s = ox_un(x, GC_OP_SQRT, ox_binc(x, kind == A_ASINH ? GC_OP_ADD : GC_OP_SUB,
                                                 ox_bin(x, GC_OP_MUL, a, a), 1));
      r = ox_un(x, GC_OP_LOG, ox_bin(x, GC_OP_ADD, a, s));
      break;
    }
    case A_ATANH:
      r = ox_binc(x, GC_OP_MUL, ox_un(x, GC_OP_LOG, ox_bin(x, GC_OP_DIV, ox_cbin(x, GC_OP_ADD, 1, a), ox_cbin(x, GC_OP_SUB, 1, a))), 0.5);
      break;
    case A_GELU: {
      const char *ap = ox_attr_str(x, "approximate", "none");
      if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
        return ox_unsup(x, "approximate='%s'", ap);
      ox_attrs at = {0};
      at_str(x, &at, "approximate", ap);
      r = ox_op(x, GC_OP_GELU, 1, &a, &at);
      break;
    }
    default: GC_ASSERT(0);
  }
  return out1(x, up ? ox_cast(x, r, orig) : r);
}

/* ---- reductions --------------------------------------------------------------------------------------- */

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LOGSUMEXP, R_PROD };

/* Reduce* ops: axes from the attribute (old opsets) or the second input. */
static int op_reduce(ox *x, int kind) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  int64_t axes[GC_MAX_RANK * 2];
  int n = -1;
  int axes_input = kind == R_SUM ? x->opset >= 13 : x->opset >= 18;
  if (axes_input) {
    n = ox_has_in(x, 1) ? ox_in_ints(x, 1, "axes", axes, GC_MAX_RANK) : 0;
    if (n < 0) return -1;
  } else {
    n = ox_attr_ints(x, "axes", axes, GC_MAX_RANK);
    if (n < 0) n = 0;
  }
  int keep = (int)ox_attr_int(x, "keepdims", 1);
  int noop = (int)ox_attr_int(x, "noop_with_empty_axes", 0);
  gc_dtype t = a->type.dtype;
  if (n == 0 && noop) {
    /* No reduction: the elementwise part still applies. */
    switch (kind) {
      case R_L1: return out1(x, ox_un(x, GC_OP_ABS, a));
      case R_SUMSQ: return out1(x, ox_bin(x, GC_OP_MUL, a, a));
      case R_LOGSUM: return out1(x, ox_un(x, GC_OP_LOG, a));
      default: return out1(x, a);
    }
  }
  if (n == 0) {
    for (int i = 0; i < r; i++) axes[i] = i;
    n = r;
  }
  uint8_t seen[GC_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) {
    if (ox_axis(x, axes[i], r, &axes[i]) != 0) return -1;
    if (seen[axes[i]]++) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "repeated axis");
  }
  int64_t cnt = 1;
  for (int i = 0; i < n; i++) cnt *= a->type.dims[axes[i]];
  gc_value *v = NULL;
  switch (kind) {
    case R_SUM: v = ox_reduce(x, GC_OP_REDUCE_SUM, a, axes, n, keep); break;
    case R_MAX: case R_MIN: {
      gc_opcode opc = kind == R_MAX ? GC_OP_REDUCE_MAX : GC_OP_REDUCE_MIN;
      if (t == GRAPHC_DTYPE_BOOL)
        v = ox_cast(x, ox_reduce(x, opc, ox_cast(x, a, GRAPHC_DTYPE_U8), axes, n, keep), t);
      else
        v = ox_reduce(x, opc, a, axes, n, keep);
      break;
    }
    case R_MEAN:
      if (gc_dtype_is_float(t)) v = ox_reduce(x, GC_OP_REDUCE_MEAN, a, axes, n, keep);
      else v = ox_binc(x, GC_OP_DIV, ox_reduce(x, GC_OP_REDUCE_SUM, a, axes, n, keep), (double)cnt);
      break;
    case R_L1: v = ox_reduce(x, GC_OP_REDUCE_SUM, ox_un(x, GC_OP_ABS, a), axes, n, keep); break;
    case R_SUMSQ: v = ox_reduce(x, GC_OP_REDUCE_SUM, ox_bin(x, GC_OP_MUL, a, a), axes, n, keep); break;
    case R_L2: {
      gc_value *s = ox_reduce(x, GC_OP_REDUCE_SUM, ox_bin(x, GC_OP_MUL, a, a), axes, n, keep);
      if (gc_dtype_is_float(t)) v = ox_un(x, GC_OP_SQRT, s);
      else v = ox_cast(x, ox_un(x, GC_OP_SQRT, ox_cast(x, s, GRAPHC_DTYPE_F64)), t);
      break;
    }
    case R_PROD: {
      /* sign from the parity of the negatives, magnitude exp(sum(log|x|)); ints via f64, rounded */
      gc_value *af = gc_dtype_is_float(t) ? a : ox_cast(x, a, GRAPHC_DTYPE_F64);
      if (!af) return -1;
      gc_dtype ft = af->type.dtype;
      gc_value *mag = ox_un(x, GC_OP_EXP, ox_reduce(x, GC_OP_REDUCE_SUM, ox_un(x, GC_OP_LOG, ox_un(x, GC_OP_ABS, af)), axes, n, keep));
      gc_value *neg = ox_reduce(x, GC_OP_REDUCE_SUM, ox_cast(x, ox_binc(x, GC_OP_LT, af, 0), ft), axes, n, keep);
      gc_value *odd = ox_bin(x, GC_OP_SUB, neg, ox_binc(x, GC_OP_MUL, ox_un(x, GC_OP_FLOOR, ox_binc(x, GC_OP_MUL, neg, 0.5)), 2));
      v = ox_bin(x, GC_OP_MUL, mag, ox_cbin(x, GC_OP_SUB, 1, ox_binc(x, GC_OP_MUL, odd, 2)));
      if (!gc_dtype_is_float(t)) v = ox_cast(x, ox_un(x, GC_OP_FLOOR, ox_binc(x, GC_OP_ADD, v, 0.5)), t);
      break;
    }
    case R_LOGSUM: v = ox_un(x, GC_OP_LOG, ox_reduce(x, GC_OP_REDUCE_SUM, a, axes, n, keep)); break;
    case R_LOGSUMEXP: {
      /* log(sum(exp(x - m))) + m with m the max: the same value, no overflow. */
      gc_value *m = ox_reduce(x, GC_OP_REDUCE_MAX, a, axes, n, 1);
      gc_value *s = ox_reduce(x, GC_OP_REDUCE_SUM, ox_un(x, GC_OP_EXP, ox_bin(x, GC_OP_SUB, a, m)), axes, n, keep);
      gc_value *mk = m;
      if (!keep && m) mk = ox_reshape(x, m, s ? s->type.rank : 0, s ? s->type.dims : NULL);
      v = s ? ox_bin(x, GC_OP_ADD, ox_un(x, GC_OP_LOG, s), mk) : NULL;
      break;
    }
    default: return ox_unsup(x, "this reduction has no graphc mapping");
  }
  return out1(x, v);
}

/* ArgMax / ArgMin with axis, keepdims and select_last_index. */
static int op_argmax(ox *x, int is_min) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  int64_t ax;
  if (ox_axis(x, ox_attr_int(x, "axis", 0), r, &ax) != 0) return -1;
  int keep = (int)ox_attr_int(x, "keepdims", 1), last = (int)ox_attr_int(x, "select_last_index", 0);
  gc_dtype t = a->type.dtype;
  if (t == GRAPHC_DTYPE_BOOL) return ox_unsup(x, "bool input");
  int64_t dim = a->type.dims[ax];
  if (GC_DIM_IS_SYM(dim) && last) return ox_unsup(x, "select_last_index on a symbolic dim");
  if (is_min) a = t == GRAPHC_DTYPE_U8 ? ox_cbin(x, GC_OP_SUB, 255, a) : ox_un(x, GC_OP_NEG, a);
  if (last) { /* reverse along the axis, then map the index back */
    ox_const *k = ox_const_new(x, GRAPHC_DTYPE_I64, 1, &dim);
    if (!k) return -1;
    for (int64_t i = 0; i < dim; i++) ox_const_seti(k, i, dim - 1 - i);
    ox_attrs at = {0};
    at_int(x, &at, "axis", ax);
    gc_value *in[2] = {a, ox_materialize(x, k, NULL)};
    a = ox_op(x, GC_OP_GATHER, 2, in, &at);
  }
  ox_attrs at = {0};
  at_int(x, &at, "axis", ax);
  at_bool(x, &at, "keepdims", keep);
  gc_value *v = ox_op(x, GC_OP_ARGMAX, 1, &a, &at);
  if (last) v = ox_cbin(x, GC_OP_SUB, (double)(dim - 1), v);
  return out1(x, v);
}

/* ---- constants -------------------------------------------------------------------------------------- */

/* Constant: value (tensor) or value_float(s) / value_int(s). */
static int op_constant(ox *x, int arg) {
  const gc_onnx_node *n = x->node;
  for (int i = 0; i < n->n_attrs; i++) {
    const gc_onnx_attr *a = &n->attrs[i];
    ox_const *k = NULL;
    if (strcmp(a->name, "value") == 0 && a->t) {
      k = ox_tensor_const(x, a->t, 1);
    } else if (strcmp(a->name, "value_float") == 0 || strcmp(a->name, "value_int") == 0) {
      int fl = a->name[6] == 'f';
      k = ox_const_new(x, fl ? GRAPHC_DTYPE_F32 : GRAPHC_DTYPE_I64, 0, NULL);
      if (k && fl) ox_const_set(k, 0, a->f);
      else if (k) ox_const_seti(k, 0, a->i);
    } else if (strcmp(a->name, "value_floats") == 0 || strcmp(a->name, "value_ints") == 0) {
      int fl = a->name[6] == 'f';
      int64_t len = fl ? a->n_floats : a->n_ints;
      k = ox_const_new(x, fl ? GRAPHC_DTYPE_F32 : GRAPHC_DTYPE_I64, 1, &len);
      for (int64_t j = 0; k && j < len; j++) {
        if (fl) ox_const_set(k, j, a->floats[j]);
        else ox_const_seti(k, j, a->ints[j]);
      }
    } else {
      return ox_unsup(x, "attribute '%s' is not supported", a->name);
    }
    if (!k) return -1;
    x->out_k[0] = k;
    return 0;
  }
  return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "Constant without a value");
}

/* ---- the table ---------------------------------------------------------------------------------------- */

#define U(name, opc) {name, op_unary, GC_OP_##opc, 1, 28}
#define B(name, opc) {name, op_binary, GC_OP_##opc, 7, 28}
#define ACT(name, k, lo) {name, op_act, k, lo, 28}
#define RED(name, k, hi) {name, op_reduce, k, 1, hi}

/* By name. min/max: the opsets the mapping is written for. */
static const ox_opdef defs[] = {
    U("Abs", ABS),
    ACT("Acos", A_ACOS, 7),
    ACT("Acosh", A_ACOSH, 9),
    B("Add", ADD),
    B("And", AND),
    {"ArgMax", op_argmax, 0, 1, 28},
    {"ArgMin", op_argmax, 1, 1, 28},
    ACT("Asin", A_ASIN, 7),
    ACT("Asinh", A_ASINH, 9),
    ACT("Atan", A_ATAN, 7),
    ACT("Atanh", A_ATANH, 9),
    {"Attention", ox_attention, 0, 23, 28},
    {"AveragePool", ox_pool, 1, 7, 28},
    {"BatchNormalization", ox_batchnorm, 0, 9, 28},
    {"BlackmanWindow", ox_window, 2, 17, 28},
    {"Cast", op_cast, 0, 6, 28},
    {"CenterCropPad", ox_center_crop_pad, 0, 18, 28},
    {"CastLike", op_castlike, 0, 15, 28},
    U("Ceil", CEIL),
    ACT("Celu", A_CELU, 12),
    {"Clip", op_clip, 0, 6, 28},
    {"Concat", ox_concat, 0, 4, 28},
    {"Constant", op_constant, 0, 1, 28},
    {"ConstantOfShape", ox_constant_of_shape, 0, 9, 28},
    {"Conv", ox_conv, 0, 1, 28},
    {"ConvTranspose", ox_conv_transpose, 0, 1, 28},
    {"ConvInteger", ox_conv_integer, 0, 10, 28},
    U("Cos", COS),
    ACT("Cosh", A_COSH, 9),
    {"CumSum", ox_cumsum, 0, 11, 28},
    {"DepthToSpace", ox_depth_to_space, 0, 11, 28},
    {"DequantizeLinear", ox_dequantize_linear, 0, 10, 28},
    B("Div", DIV),
    {"Dropout", op_dropout, 0, 7, 28},
    {"DynamicQuantizeLinear", ox_dynamic_quantize_linear, 0, 11, 28},
    {"Einsum", ox_einsum, 0, 12, 28},
    ACT("Elu", A_ELU, 6),
    B("Equal", EQ),
    U("Erf", ERF),
    U("Exp", EXP),
    {"Expand", ox_expand, 0, 8, 28},
    {"EyeLike", ox_eye_like, 0, 9, 28},
    {"Flatten", ox_flatten, 0, 9, 28},
    U("Floor", FLOOR),
    {"Gather", ox_gather, 0, 1, 28},
    {"GatherElements", ox_gather_elements, 0, 11, 28},
    {"GatherND", ox_gather_nd, 0, 11, 28},
    ACT("Gelu", A_GELU, 20),
    {"Gemm", ox_gemm, 0, 7, 28},
    {"GlobalAveragePool", ox_global_pool, 0, 1, 28},
    {"GlobalMaxPool", ox_global_pool, 1, 1, 28},
    B("Greater", GT),
    B("GreaterOrEqual", GE),
    {"GroupNormalization", ox_groupnorm, 0, 21, 28},
    ACT("HardSigmoid", A_HARDSIGMOID, 6),
    ACT("HardSwish", A_HARDSWISH, 14),
    {"HammingWindow", ox_window, 1, 17, 28},
    {"HannWindow", ox_window, 0, 17, 28},
    {"Hardmax", ox_hardmax, 0, 1, 28},
    {"Identity", op_identity, 0, 1, 28},
    {"InstanceNormalization", ox_instancenorm, 0, 6, 28},
    {"IsInf", op_isinf, 0, 10, 28},
    {"IsNaN", op_isnan, 0, 9, 28},
    {"LRN", ox_lrn, 0, 1, 28},
    {"LayerNormalization", ox_layernorm, 0, 17, 28},
    ACT("LeakyRelu", A_LEAKYRELU, 6),
    B("Less", LT),
    B("LessOrEqual", LE),
    U("Log", LOG),
    {"LogSoftmax", ox_softmax, 1, 1, 28},
    {"LpNormalization", ox_lpnorm, 0, 1, 28},
    {"LpPool", ox_pool, 2, 2, 28},
    {"MatMul", ox_matmul, 0, 1, 28},
    {"MatMulInteger", ox_matmul_integer, 0, 10, 28},
    {"Max", op_variadic, 'M', 8, 28},
    {"MaxPool", ox_pool, 0, 8, 28},
    {"Mean", op_variadic, 'a', 8, 28},
    {"MeanVarianceNormalization", ox_mvn, 0, 9, 28},
    {"Min", op_variadic, 'm', 8, 28},
    ACT("Mish", A_MISH, 18),
    {"Mod", op_mod, 0, 10, 28},
    B("Mul", MUL),
    U("Neg", NEG),
    {"NegativeLogLikelihoodLoss", ox_nll_loss, 0, 12, 28},
    U("Not", NOT),
    {"OneHot", ox_one_hot, 0, 11, 28},
    B("Or", OR),
    ACT("PRelu", A_PRELU, 7),
    {"Pad", ox_pad, 0, 2, 28},
    {"Pow", op_pow, 0, 7, 28},
    {"QLinearConv", ox_qlinear_conv, 0, 10, 28},
    {"QLinearMatMul", ox_qlinear_matmul, 0, 10, 28},
    {"QuantizeLinear", ox_quantize_linear, 0, 10, 28},
    {"RMSNormalization", ox_rmsnorm, 0, 23, 28},
    {"Range", ox_range, 0, 11, 28},
    {"Reciprocal", op_reciprocal, 0, 1, 28},
    RED("ReduceL1", R_L1, 28),
    RED("ReduceL2", R_L2, 28),
    RED("ReduceLogSum", R_LOGSUM, 28),
    RED("ReduceLogSumExp", R_LOGSUMEXP, 28),
    RED("ReduceMax", R_MAX, 28),
    RED("ReduceMean", R_MEAN, 28),
    RED("ReduceMin", R_MIN, 28),
    RED("ReduceProd", R_PROD, 28),
    RED("ReduceSum", R_SUM, 28),
    RED("ReduceSumSquare", R_SUMSQ, 28),
    U("Relu", RELU),
    {"Reshape", ox_reshape_op, 0, 5, 28},
    {"Resize", ox_resize, 0, 11, 28},
    {"ReverseSequence", ox_reverse_sequence, 0, 10, 28},
    {"Round", op_round, 0, 11, 28},
    {"Scatter", ox_scatter_elements, 0, 9, 10},
    {"ScatterElements", ox_scatter_elements, 0, 11, 28},
    {"ScatterND", ox_scatter_nd, 0, 11, 28},
    ACT("Selu", A_SELU, 6),
    {"Shape", ox_shape, 0, 1, 28},
    ACT("Shrink", A_SHRINK, 9),
    U("Sigmoid", SIGMOID),
    {"Sign", op_sign, 0, 9, 28},
    U("Sin", SIN),
    ACT("Sinh", A_SINH, 9),
    {"Size", ox_size, 0, 1, 28},
    {"Slice", ox_slice, 0, 1, 28},
    {"Softmax", ox_softmax, 0, 1, 28},
    ACT("Softplus", A_SOFTPLUS, 1),
    ACT("Softsign", A_SOFTSIGN, 1),
    {"SoftmaxCrossEntropyLoss", ox_sce_loss, 0, 12, 28},
    {"SpaceToDepth", ox_space_to_depth, 0, 1, 28},
    {"Split", ox_split, 0, 2, 28},
    U("Sqrt", SQRT),
    {"Squeeze", ox_squeeze, 0, 1, 28},
    B("Sub", SUB),
    {"Sum", op_variadic, 's', 8, 28},
    ACT("Swish", A_SWISH, 24),
    ACT("Tan", A_TAN, 7),
    U("Tanh", TANH),
    ACT("ThresholdedRelu", A_THRELU, 10),
    {"Tile", ox_tile, 0, 6, 28},
    {"TopK", ox_topk, 0, 10, 28},
    {"Transpose", ox_transpose_op, 0, 1, 28},
    {"Trilu", ox_trilu, 0, 14, 28},
    {"Unsqueeze", ox_unsqueeze, 0, 1, 28},
    {"Upsample", ox_resize, 1, 7, 9},
    {"Where", op_where, 0, 9, 28},
    {"Xor", op_xor, 0, 7, 28},
};

/* Mapping of an ai.onnx op type, or NULL. */
const ox_opdef *ox_find_op(const char *name) {
  for (size_t i = 0; i < sizeof defs / sizeof *defs; i++)
    if (strcmp(defs[i].name, name) == 0) return &defs[i];
  return NULL;
}
