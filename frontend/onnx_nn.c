/* onnx_nn.c - ONNX op mappings for contractions, convolution, pooling,
 * softmax and normalizations: Gemm MatMul Conv MaxPool AveragePool
 * Global*Pool Softmax LogSoftmax Hardmax LayerNormalization
 * BatchNormalization InstanceNormalization GroupNormalization
 * RMSNormalization LpNormalization MeanVarianceNormalization CumSum.
 *
 * 1-D convolution and pooling run as 2-D with a height of 1. Normalizations
 * use graphc's layernorm / rmsnorm where the axes fit, else arithmetic.
 */
#include <math.h>
#include <string.h>

#include "frontend/onnx_internal.h"

/* Set output 0; -1 when v is NULL (its error was reported). */
static int out1(ox *x, gc_value *v) {
  x->out_v[0] = v;
  return v ? 0 : -1;
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

/* Reshape a per-channel vector [C] to broadcast against [N, C, ...] of rank r. */
static gc_value *per_channel(ox *x, gc_value *v, int r, gc_dtype t) {
  if (!v) return NULL;
  int64_t d[GC_MAX_RANK];
  int64_t c = gc_type_numel(&v->type);
  for (int i = 0; i < r; i++) d[i] = i == 1 ? c : 1;
  return ox_reshape(x, ox_cast(x, v, t), r, d);
}

/* A constant of `v`'s dtype broadcast to dims[lo..rank) of t. */
static gc_value *filled(ox *x, gc_dtype dt, double val, const gc_type *t, int lo) {
  ox_attrs at = {0};
  at_scalar(x, &at, "value", dt, val);
  at_ints(x, &at, "shape", t->dims + lo, t->rank - lo);
  at_dtype(x, &at, "dtype", dt);
  return ox_op(x, GC_OP_CONST, 0, NULL, &at);
}

/* ---- contractions --------------------------------------------------------------------------------- */

/* Gemm: alpha * op(A) op(B) + beta * C. */
int ox_gemm(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *b = ox_in(x, 1);
  if (!a || !b) return -1;
  if (a->type.rank != 2 || b->type.rank != 2)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "A and B must be 2-D");
  double alpha = ox_attr_float(x, "alpha", 1.0), beta = ox_attr_float(x, "beta", 1.0);
  ox_attrs at = {0};
  if (ox_attr_int(x, "transA", 0)) at_bool(x, &at, "transpose_a", 1);
  if (ox_attr_int(x, "transB", 0)) at_bool(x, &at, "transpose_b", 1);
  gc_value *in[2] = {a, b};
  gc_value *y = ox_op(x, GC_OP_MATMUL, 2, in, &at);
  if (alpha != 1.0) y = ox_binc(x, GC_OP_MUL, y, alpha);
  if (ox_has_in(x, 2) && beta != 0.0) {
    gc_value *c = ox_in(x, 2);
    if (beta != 1.0) c = ox_binc(x, GC_OP_MUL, c, beta);
    y = ox_bin(x, GC_OP_ADD, y, c);
  }
  return out1(x, y);
}

/* MatMul with numpy's rules for 1-D operands. */
int ox_matmul(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *b = ox_in(x, 1);
  if (!a || !b) return -1;
  return out1(x, ox_matmul_values(x, a, b));
}

/* matmul of values with numpy's rules for 1-D operands (see onnx_internal.h). */
gc_value *ox_matmul_values(ox *x, gc_value *a, gc_value *b) {
  if (!a || !b) return NULL;
  int ra = a->type.rank, rb = b->type.rank;
  if (ra == 0 || rb == 0) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "scalar operand");
    return NULL;
  }
  if (ra == 1) a = ox_reshape(x, a, 2, (int64_t[]){1, a->type.dims[0]});
  if (rb == 1) b = ox_reshape(x, b, 2, (int64_t[]){b->type.dims[0], 1});
  gc_value *y = ox_bin(x, GC_OP_MATMUL, a, b);
  if (!y || (ra > 1 && rb > 1)) return y;
  gc_type t = y->type;
  int64_t d[GC_MAX_RANK];
  int n = 0;
  for (int i = 0; i < t.rank; i++) {
    if (ra == 1 && i == t.rank - 2) continue;
    if (rb == 1 && i == t.rank - 1) continue;
    d[n++] = t.dims[i];
  }
  return ox_reshape(x, y, n, d);
}

/* ---- convolution and pooling ------------------------------------------------------------------------- */

typedef struct spat {
  int s;                               /* spatial dims: 1, 2 or 3 */
  int64_t k[3], st[3], dil[3], pb[3], pe[3];
} spat;

/* strides / dilations / pads / auto_pad of Conv and pools for input type t. */
static int spatial(ox *x, const gc_type *t, spat *p) {
  int s = p->s;
  int64_t v[8];
  for (int i = 0; i < s; i++) p->st[i] = p->dil[i] = 1, p->pb[i] = p->pe[i] = 0;
  int n = ox_attr_ints(x, "strides", v, 8);
  if (n >= 0 && n != s) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "strides has %d entries", n);
  for (int i = 0; i < n; i++) p->st[i] = v[i];
  n = ox_attr_ints(x, "dilations", v, 8);
  if (n >= 0 && n != s) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "dilations has %d entries", n);
  for (int i = 0; i < n; i++) p->dil[i] = v[i];
  const char *ap = ox_attr_str(x, "auto_pad", "NOTSET");
  if (strcmp(ap, "NOTSET") == 0) {
    n = ox_attr_ints(x, "pads", v, 8);
    if (n >= 0 && n != 2 * s) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "pads has %d entries", n);
    for (int i = 0; i < n / 2; i++) p->pb[i] = v[i], p->pe[i] = v[s + i];
  } else if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
    for (int i = 0; i < s; i++) {
      int64_t in = t->dims[2 + i];
      if (GC_DIM_IS_SYM(in)) return ox_unsup(x, "auto_pad on a symbolic dim; bind it");
      int64_t out = (in + p->st[i] - 1) / p->st[i];
      int64_t tot = (out - 1) * p->st[i] + (p->k[i] - 1) * p->dil[i] + 1 - in;
      if (tot < 0) tot = 0;
      int64_t small = tot / 2, big = tot - small;
      p->pb[i] = ap[5] == 'U' ? small : big;
      p->pe[i] = ap[5] == 'U' ? big : small;
    }
  } else if (strcmp(ap, "VALID") != 0) {
    return ox_unsup(x, "auto_pad '%s'", ap);
  }
  for (int i = 0; i < s; i++)
    if (p->st[i] < 1 || p->dil[i] < 1 || p->pb[i] < 0 || p->pe[i] < 0)
      return ox_unsup(x, "strides/dilations must be >= 1 and pads >= 0");
  return 0;
}

/* Lift a 1-D NCL tensor to NC1L. */
static gc_value *lift(ox *x, gc_value *v) {
  if (!v) return NULL;
  int64_t d[4] = {v->type.dims[0], v->type.dims[1], 1, v->type.dims[2]};
  return ox_reshape(x, v, 4, d);
}

/* Drop the height of 1 again. */
static gc_value *lower(ox *x, gc_value *v) {
  if (!v) return NULL;
  int64_t d[3] = {v->type.dims[0], v->type.dims[1], v->type.dims[3]};
  return ox_reshape(x, v, 3, d);
}

/* 2-D attribute lists from spatial params (1-D gets a leading unit dim). */
static void two_d(const spat *p, int64_t *k, int64_t *st, int64_t *dil, int64_t *pad) {
  int o = p->s == 1;
  k[0] = 1, st[0] = 1, dil[0] = 1, pad[0] = pad[2] = 0;
  for (int i = 0; i < p->s; i++) {
    k[i + o] = p->k[i], st[i + o] = p->st[i], dil[i + o] = p->dil[i];
    pad[i + o] = p->pb[i], pad[2 + i + o] = p->pe[i];
  }
}

/* Conv (1-D or 2-D), with group, dilations, auto_pad and a bias. */
int ox_conv(ox *x, int arg) {
  gc_value *a = in_float(x, 0), *w = ox_in(x, 1);
  if (!a || !w) return -1;
  return out1(x, ox_conv_values(x, a, w, ox_has_in(x, 2) ? ox_in(x, 2) : NULL));
}

/* Conv of values (see onnx_internal.h). */
gc_value *ox_conv_values(ox *x, gc_value *a, gc_value *w, gc_value *bias) {
  int r = a->type.rank;
  if (r != 3 && r != 4) {
    ox_unsup(x, "%d-D convolution (graphc has 1-D and 2-D)", r - 2);
    return NULL;
  }
  if (w->type.rank != r) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "weight rank differs");
    return NULL;
  }
  spat p = {.s = r - 2};
  for (int i = 0; i < p.s; i++) p.k[i] = w->type.dims[2 + i];
  int64_t ks[8];
  int nk = ox_attr_ints(x, "kernel_shape", ks, 8);
  for (int i = 0; i < nk && i < p.s; i++)
    if (ks[i] != p.k[i]) {
      ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "kernel_shape disagrees with W");
      return NULL;
    }
  if (spatial(x, &a->type, &p) != 0) return NULL;
  int64_t k[2], st[2], dil[2], pad[4];
  two_d(&p, k, st, dil, pad);
  if (p.s == 1) a = lift(x, a), w = lift(x, w);
  ox_attrs at = {0};
  at_ints(x, &at, "stride", st, 2);
  at_ints(x, &at, "padding", pad, 4);
  at_ints(x, &at, "dilation", dil, 2);
  at_int(x, &at, "groups", ox_attr_int(x, "group", 1));
  gc_value *in[2] = {a, w};
  gc_value *y = ox_op(x, GC_OP_CONV2D, 2, in, &at);
  if (bias && y) y = ox_bin(x, GC_OP_ADD, y, per_channel(x, bias, 4, y->type.dtype));
  return p.s == 1 ? lower(x, y) : y;
}

/* One 2-D pooling over the last two dims of a rank-4 value: explicit zero
 * padding when padded elements count (AveragePool count_include_pad, LpPool). */
static gc_value *pool_stage(ox *x, gc_value *a, int mode, int incl, const int64_t *k,
                            const int64_t *st, int64_t *pad) {
  if (!a) return NULL;
  if (incl && (pad[0] || pad[1] || pad[2] || pad[3])) {
    int64_t pads[8] = {0, 0, pad[0], pad[1], 0, 0, pad[2], pad[3]};
    ox_attrs pa = {0};
    at_ints(x, &pa, "pads", pads, 8);
    at_float(x, &pa, "value", 0.0);
    a = ox_op(x, GC_OP_PAD, 1, &a, &pa);
    memset(pad, 0, sizeof(int64_t) * 4);
  }
  for (int i = 0; i < 2; i++)
    if (pad[i] >= k[i] || pad[2 + i] >= k[i]) {
      ox_unsup(x, "padding not smaller than the kernel");
      return NULL;
    }
  ox_attrs at = {0};
  at_ints(x, &at, "kernel", k, 2);
  at_ints(x, &at, "stride", st, 2);
  at_ints(x, &at, "padding", pad, 4);
  return ox_op(x, mode ? GC_OP_AVG_POOL2D : GC_OP_MAX_POOL2D, 1, &a, &at);
}

/* Dilated pooling: one strided slice of the padded input per kernel offset,
 * combined with maximum or sum; averages divide by the count of real (or,
 * with incl, all) elements, found by slicing a padded mask the same way. */
static gc_value *pool_by_slices(ox *x, gc_value *a, int mode, int incl, const spat *p,
                                const int64_t *extra) {
  int r = a->type.rank, s = p->s;
  int64_t kk = 1, out[3], pads[2 * GC_MAX_RANK] = {0}, ones_d[GC_MAX_RANK];
  for (int i = 0; i < s; i++) kk *= p->k[i];
  if (kk > 256) {
    ox_unsup(x, "a dilated pooling window of %lld elements", (long long)kk);
    return NULL;
  }
  if (!gc_type_is_concrete(&a->type)) {
    ox_unsup(x, "dilated pooling with symbolic dims; bind them first");
    return NULL;
  }
  for (int i = 0; i < r; i++) ones_d[i] = i < 2 ? 1 : a->type.dims[i];
  for (int i = 0; i < s; i++) {
    pads[2 + i] = p->pb[i], pads[r + 2 + i] = p->pe[i];
    int64_t ke = (p->k[i] - 1) * p->dil[i] + 1;
    out[i] = (a->type.dims[2 + i] + p->pb[i] + p->pe[i] - ke) / p->st[i] + 1;
    if (out[i] < 1) {
      ox_unsup(x, "an empty pooling output");
      return NULL;
    }
  }
  gc_dtype t = a->type.dtype;
  ox_attrs pa = {0};
  at_ints(x, &pa, "pads", pads, 2 * r);
  at_float(x, &pa, "value", mode == 0 ? -INFINITY : 0.0);
  gc_value *xp = ox_op(x, GC_OP_PAD, 1, &a, &pa);
  gc_value *mp = NULL;
  int any_extra = 0;
  for (int i = 0; i < s; i++) any_extra |= extra[i] > 0;
  if (mode == 1 && (!incl || any_extra)) {
    /* 1 where an element counts: real ones, or (incl) real and explicit padding,
     * never the extra padding ceil_mode adds */
    int64_t mpads[2 * GC_MAX_RANK] = {0};
    for (int i = 0; i < s; i++) {
      if (incl) ones_d[2 + i] += p->pb[i] + p->pe[i] - extra[i], mpads[r + 2 + i] = extra[i];
      else mpads[2 + i] = p->pb[i], mpads[r + 2 + i] = p->pe[i];
    }
    ox_attrs ma = {0};
    at_ints(x, &ma, "pads", mpads, 2 * r);
    gc_value *ones = ox_broadcast(x, ox_scalar(x, t, 1), r, ones_d);
    mp = ox_op(x, GC_OP_PAD, 1, &ones, &ma);
  }
  gc_value *acc = NULL, *cnt = NULL;
  for (int64_t j = 0; j < kk && xp; j++) {
    int64_t st[GC_MAX_RANK] = {0}, en[GC_MAX_RANK], sp[GC_MAX_RANK], rem = j;
    for (int i = 0; i < r; i++) en[i] = xp->type.dims[i], sp[i] = 1;
    for (int i = s - 1; i >= 0; i--) {
      int64_t off = rem % p->k[i];
      rem /= p->k[i];
      st[2 + i] = off * p->dil[i];
      en[2 + i] = st[2 + i] + (out[i] - 1) * p->st[i] + 1;
      sp[2 + i] = p->st[i];
    }
    ox_attrs sa = {0};
    at_ints(x, &sa, "start", st, r);
    at_ints(x, &sa, "end", en, r);
    at_ints(x, &sa, "step", sp, r);
    gc_value *v = ox_op(x, GC_OP_SLICE, 1, &xp, &sa);
    acc = !acc ? v : ox_bin(x, mode == 0 ? GC_OP_MAXIMUM : GC_OP_ADD, acc, v);
    if (mp) {
      en[0] = en[1] = 1;
      ox_attrs sm = {0};
      at_ints(x, &sm, "start", st, r);
      at_ints(x, &sm, "end", en, r);
      at_ints(x, &sm, "step", sp, r);
      gc_value *c = ox_op(x, GC_OP_SLICE, 1, &mp, &sm);
      cnt = cnt ? ox_bin(x, GC_OP_ADD, cnt, c) : c;
    }
  }
  if (mode == 1) acc = mp ? ox_bin(x, GC_OP_DIV, acc, cnt) : ox_binc(x, GC_OP_DIV, acc, (double)kk);
  if (mode == 2) acc = ox_binc(x, GC_OP_DIV, acc, (double)kk); /* the caller multiplies back */
  return acc;
}

/* MaxPool (mode 0), AveragePool (1), LpPool (2); 1-D, 2-D or 3-D, with
 * ceil_mode. LpPool is (sum |x|^p)^(1/p): an average of |x|^p over zero-padded
 * windows times the window size. 3-D pooling runs as a 2-D pooling over
 * (H, W) and one over D: box windows are separable for max and for averages
 * (the count of a window is the product of its per-dim counts). */
int ox_pool(ox *x, int mode) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  /* 8-bit max pooling: exact in f32. */
  gc_dtype orig = a->type.dtype;
  if (mode == 0 && (orig == GRAPHC_DTYPE_I8 || orig == GRAPHC_DTYPE_U8)) a = ox_cast(x, a, GRAPHC_DTYPE_F32);
  else if (!(a = in_float(x, 0))) return -1;
  int r = a->type.rank;
  if (r < 3 || r > 5) return ox_unsup(x, "%d-D pooling (graphc has 1-D to 3-D)", r - 2);
  for (int i = 2; i < r; i++)
    if (GC_DIM_IS_SYM(a->type.dims[i])) return ox_unsup(x, "pooling over a symbolic dim; bind it first");
  if (ox_want_out(x, 1)) return ox_unsup(x, "the Indices output of MaxPool");
  if (ox_attr_int(x, "storage_order", 0)) return ox_unsup(x, "storage_order=1");
  spat p = {.s = r - 2};
  int64_t ks[8];
  if (ox_attr_ints(x, "kernel_shape", ks, 8) != p.s)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "kernel_shape needs %d entries", p.s);
  for (int i = 0; i < p.s; i++) p.k[i] = ks[i];
  if (spatial(x, &a->type, &p) != 0) return -1;
  int dilated = 0;
  int64_t extra[3] = {0, 0, 0};
  for (int i = 0; i < p.s; i++) dilated |= p.dil[i] != 1;
  int incl = mode == 2 || (mode == 1 && ox_attr_int(x, "count_include_pad", 0));
  if (ox_attr_int(x, "ceil_mode", 0)) {
    for (int i = 0; i < p.s; i++) {
      int64_t in = a->type.dims[2 + i], ke = (p.k[i] - 1) * p.dil[i] + 1;
      int64_t span = in + p.pb[i] + p.pe[i] - ke;
      int64_t out = (span + p.st[i] - 1) / p.st[i] + 1;
      if ((out - 1) * p.st[i] >= in + p.pb[i]) out--;
      extra[i] = (out - 1) * p.st[i] + ke - (in + p.pb[i] + p.pe[i]);
      if (extra[i] < 0) extra[i] = 0;
      if (extra[i] > 0 && mode == 1 && incl) dilated = 1; /* counts need the slice form */
      p.pe[i] += extra[i];
    }
  }
  double pw = (double)ox_attr_int(x, "p", 2);
  if (mode == 2)
    a = pw == 1 ? ox_un(x, GC_OP_ABS, a) : pw == 2 ? ox_bin(x, GC_OP_MUL, a, a)
        : ox_bin(x, GC_OP_POW, ox_un(x, GC_OP_ABS, a), ox_scalar(x, a->type.dtype, pw));
  if (!a) return -1;
  int64_t *d = a->type.dims, kk = 1, y_dims[5];
  for (int i = 0; i < p.s; i++) kk *= p.k[i];
  gc_value *y;
  if (dilated) {
    y = pool_by_slices(x, a, mode, incl, &p, extra);
  } else if (p.s == 1) {
    int64_t k[2] = {1, p.k[0]}, st[2] = {1, p.st[0]}, pad[4] = {0, p.pb[0], 0, p.pe[0]};
    y = lower(x, pool_stage(x, lift(x, a), mode, incl, k, st, pad));
  } else if (p.s == 2) {
    int64_t k[2] = {p.k[0], p.k[1]}, st[2] = {p.st[0], p.st[1]};
    int64_t pad[4] = {p.pb[0], p.pb[1], p.pe[0], p.pe[1]};
    y = pool_stage(x, a, mode, incl, k, st, pad);
  } else {
    int64_t v4[4] = {d[0], d[1] * d[2], d[3], d[4]};
    int64_t k[2] = {p.k[1], p.k[2]}, st[2] = {p.st[1], p.st[2]};
    int64_t pad[4] = {p.pb[1], p.pb[2], p.pe[1], p.pe[2]};
    y = pool_stage(x, ox_reshape(x, a, 4, v4), mode, incl, k, st, pad);
    if (!y) return -1;
    int64_t h = y->type.dims[2], w = y->type.dims[3];
    int64_t u4[4] = {d[0], d[1], d[2], h * w};
    int64_t k2[2] = {p.k[0], 1}, st2[2] = {p.st[0], 1}, pad2[4] = {p.pb[0], 0, p.pe[0], 0};
    y = pool_stage(x, ox_reshape(x, y, 4, u4), mode, incl, k2, st2, pad2);
    if (!y) return -1;
    y_dims[0] = d[0], y_dims[1] = d[1], y_dims[2] = y->type.dims[2], y_dims[3] = h, y_dims[4] = w;
    y = ox_reshape(x, y, 5, y_dims);
  }
  if (mode == 2) {
    y = ox_binc(x, GC_OP_MUL, y, (double)kk);
    y = pw == 1 ? y : pw == 2 ? ox_un(x, GC_OP_SQRT, y) : ox_binc(x, GC_OP_POW, y, 1.0 / pw);
  }
  return out1(x, ox_cast(x, y, orig));
}

/* ConvTranspose (1-D or 2-D) as a convolution of the zero-stuffed input with
 * the flipped, in/out-swapped kernel. */
int ox_conv_transpose(ox *x, int arg) {
  gc_value *a = in_float(x, 0), *w = ox_in(x, 1);
  if (!a || !w) return -1;
  int r = a->type.rank;
  if (r != 3 && r != 4) return ox_unsup(x, "%d-D transposed convolution (graphc has 1-D and 2-D)", r - 2);
  if (!gc_type_is_concrete(&a->type)) return ox_unsup(x, "symbolic dims; bind them first");
  if (w->type.rank != r) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "weight rank differs");
  int s = r - 2;
  int64_t g = ox_attr_int(x, "group", 1), C = w->type.dims[0], Og = w->type.dims[1];
  int64_t k[2], st[2] = {1, 1}, dil[2] = {1, 1}, pb[2] = {0, 0}, pe[2] = {0, 0}, op[2] = {0, 0}, v[8];
  for (int i = 0; i < s; i++) k[i] = w->type.dims[2 + i];
  int n = ox_attr_ints(x, "strides", v, 8);
  for (int i = 0; i < n && i < s; i++) st[i] = v[i];
  n = ox_attr_ints(x, "dilations", v, 8);
  for (int i = 0; i < n && i < s; i++) dil[i] = v[i];
  n = ox_attr_ints(x, "output_padding", v, 8);
  for (int i = 0; i < n && i < s; i++) op[i] = v[i];
  n = ox_attr_ints(x, "pads", v, 8);
  for (int i = 0; i < n / 2 && i < s; i++) pb[i] = v[i], pe[i] = v[s + i];
  /* Checked before any arithmetic on them (found by fuzz_onnx: group=0 divided
   * by zero); sizes are bounded so no product below can overflow. */
  if (!gc_type_is_concrete(&w->type)) return ox_unsup(x, "a weight with symbolic dims");
  if (g < 1 || g > C || C % g) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "group must divide the channels");
  const int64_t lim = INT64_C(1) << 16, big = INT64_C(1) << 31;
  for (int i = 0; i < s; i++) {
    if (st[i] < 1 || dil[i] < 1 || op[i] < 0)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                     "strides and dilations must be positive, output_padding not negative");
    if (st[i] > lim || dil[i] > lim || op[i] > lim || pb[i] < -lim || pb[i] > lim ||
        pe[i] < -lim || pe[i] > lim || k[i] > big || a->type.dims[2 + i] > big)
      return ox_unsup(x, "strides, dilations or pads over 2^16 or sizes over 2^31");
  }
  const char *ap = ox_attr_str(x, "auto_pad", "NOTSET");
  int64_t osh[8];
  int nos = ox_attr_ints(x, "output_shape", osh, 8);
  for (int i = 0; i < nos; i++)
    if (osh[i] < 0 || osh[i] > big) return ox_unsup(x, "output_shape values over 2^31");
  int same = strncmp(ap, "SAME", 4) == 0;
  if (nos >= s || same) {
    for (int i = 0; i < s; i++) {
      int64_t in = a->type.dims[2 + i], want = nos >= s ? osh[nos - s + i] : in * st[i];
      int64_t tot = st[i] * (in - 1) + op[i] + (k[i] - 1) * dil[i] + 1 - want;
      int64_t half = tot >= 0 ? tot / 2 : -((-tot + 1) / 2); /* floor, as ONNX's reference */
      if (strcmp(ap, "SAME_UPPER") == 0) pb[i] = half, pe[i] = tot - half;
      else pb[i] = tot - half, pe[i] = half;
    }
  } else if (strcmp(ap, "VALID") == 0) {
    pb[0] = pb[1] = pe[0] = pe[1] = 0;
  }
  if (s == 1) { /* 1-D: a leading unit dim */
    k[1] = k[0], st[1] = st[0], dil[1] = dil[0], pb[1] = pb[0], pe[1] = pe[0], op[1] = op[0];
    k[0] = st[0] = dil[0] = 1, pb[0] = pe[0] = op[0] = 0;
    a = lift(x, a), w = lift(x, w);
  }
  if (!a || !w) return -1;
  int64_t *d = a->type.dims, N = d[0], H = d[2], W = d[3];
  /* zero-stuff: [N, C, H, 1, W, 1] padded to [N, C, H, sh, W, sw] */
  if (st[0] > 1 || st[1] > 1) {
    int64_t s6[6] = {N, d[1], H, 1, W, 1}, pads[12] = {0};
    pads[6 + 3] = st[0] - 1, pads[6 + 5] = st[1] - 1;
    ox_attrs pa = {0};
    at_ints(x, &pa, "pads", pads, 12);
    gc_value *z = ox_reshape(x, a, 6, s6);
    z = ox_op(x, GC_OP_PAD, 1, &z, &pa);
    int64_t s4[4] = {N, d[1], H * st[0], W * st[1]};
    a = ox_reshape(x, z, 4, s4);
    if (!a) return -1;
  }
  /* borders: left d(k-1) - pb; right d(k-1) - pe + output_padding, minus the stuffed tail */
  int64_t lo[2], hi[2], cs[4] = {0, 0, 0, 0}, ce[4];
  int crop = 0;
  memcpy(ce, a->type.dims, sizeof ce);
  for (int i = 0; i < 2; i++) {
    lo[i] = dil[i] * (k[i] - 1) - pb[i];
    hi[i] = dil[i] * (k[i] - 1) - pe[i] + op[i] - (st[i] - 1);
    if (lo[i] < 0) cs[2 + i] = -lo[i], lo[i] = 0, crop = 1;
    if (hi[i] < 0) ce[2 + i] += hi[i], hi[i] = 0, crop = 1;
  }
  if (crop) {
    ox_attrs sa = {0};
    at_ints(x, &sa, "start", cs, 4);
    at_ints(x, &sa, "end", ce, 4);
    a = ox_op(x, GC_OP_SLICE, 1, &a, &sa);
  }
  /* kernel: [C, O/g, kh, kw] -> [O, C/g, kh, kw], flipped spatially */
  int64_t w5[5] = {g, C / g, Og, k[0], k[1]}, p5[5] = {0, 2, 1, 3, 4}, w4[4] = {g * Og, C / g, k[0], k[1]};
  gc_value *wf = ox_reshape(x, ox_transpose(x, ox_reshape(x, ox_cast(x, w, a ? a->type.dtype : GRAPHC_DTYPE_F32), 5, w5), p5), 4, w4);
  for (int i = 0; i < 2 && wf; i++) {
    if (k[i] == 1) continue;
    ox_const *rev = ox_const_new(x, GRAPHC_DTYPE_I64, 1, &k[i]);
    if (!rev) return -1;
    for (int64_t j = 0; j < k[i]; j++) ox_const_seti(rev, j, k[i] - 1 - j);
    ox_attrs ga = {0};
    at_int(x, &ga, "axis", 2 + i);
    gc_value *in2[2] = {wf, ox_materialize(x, rev, NULL)};
    wf = ox_op(x, GC_OP_GATHER, 2, in2, &ga);
  }
  ox_attrs at = {0};
  int64_t one[2] = {1, 1}, pad[4] = {lo[0], lo[1], hi[0], hi[1]};
  at_ints(x, &at, "stride", one, 2);
  at_ints(x, &at, "padding", pad, 4);
  at_ints(x, &at, "dilation", dil, 2);
  at_int(x, &at, "groups", g);
  gc_value *in2[2] = {a, wf};
  gc_value *y = ox_op(x, GC_OP_CONV2D, 2, in2, &at);
  if (ox_has_in(x, 2) && y) y = ox_bin(x, GC_OP_ADD, y, per_channel(x, ox_in(x, 2), 4, y->type.dtype));
  return out1(x, s == 1 ? lower(x, y) : y);
}

/* GlobalAveragePool (arg 0) / GlobalMaxPool (arg 1): reduce the spatial dims, kept. */
int ox_global_pool(ox *x, int is_max) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int64_t axes[GC_MAX_RANK];
  int n = 0;
  for (int i = 2; i < a->type.rank; i++) axes[n++] = i;
  if (!n) return out1(x, a);
  return out1(x, ox_reduce(x, is_max ? GC_OP_REDUCE_MAX : GC_OP_REDUCE_MEAN, a, axes, n, 1));
}

/* ---- softmax family ------------------------------------------------------------------------------------ */

/* Apply fn along `axis` with ONNX's pre-13 semantics when needed: flatten to
 * [prod(:axis), prod(axis:)], work on the last axis, reshape back. */
static gc_value *coerced(ox *x, gc_value *a, int64_t *ax, int *flat) {
  int r = a->type.rank;
  int64_t def = x->opset >= 13 ? -1 : 1;
  if (ox_axis(x, ox_attr_int(x, "axis", def), r ? r : 1, ax) != 0) return NULL;
  *flat = 0;
  if (x->opset >= 13 || *ax == r - 1 || r == 0) return a;
  int64_t d[2] = {ox_dims_prod(&a->type, 0, (int)*ax), ox_dims_prod(&a->type, (int)*ax, r)};
  if (d[0] == -2 || d[1] == -2) {
    ox_unsup(x, "opset < 13 flattening needs concrete dims; bind them");
    return NULL;
  }
  *flat = 1;
  *ax = 1;
  return ox_reshape(x, a, 2, d);
}

/* Softmax (arg 0) / LogSoftmax (arg 1). */
int ox_softmax(ox *x, int is_log) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  int64_t ax;
  int flat;
  gc_value *v = coerced(x, a, &ax, &flat);
  ox_attrs at = {0};
  at_int(x, &at, "axis", ax);
  v = ox_op(x, is_log ? GC_OP_LOG_SOFTMAX : GC_OP_SOFTMAX, 1, &v, &at);
  return out1(x, flat ? ox_reshape(x, v, a->type.rank, a->type.dims) : v);
}

/* Hardmax: 1 at the first maximum along the axis, else 0. */
int ox_hardmax(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int64_t ax;
  int flat;
  gc_value *v = coerced(x, a, &ax, &flat);
  if (!v) return -1;
  ox_attrs at = {0};
  at_int(x, &at, "axis", ax);
  at_bool(x, &at, "keepdims", 1);
  gc_value *am = ox_op(x, GC_OP_ARGMAX, 1, &v, &at);
  gc_value *io = ox_iota(x, v->type.rank, v->type.dims, (int)ax, GRAPHC_DTYPE_I64);
  gc_value *h = ox_cast(x, ox_bin(x, GC_OP_EQ, io, am), a->type.dtype);
  return out1(x, flat ? ox_reshape(x, h, a->type.rank, a->type.dims) : h);
}

/* ---- normalizations -------------------------------------------------------------------------------------- */

/* LayerNormalization; Mean and InvStdDev outputs computed in the stash type. */
int ox_layernorm(ox *x, int arg) {
  gc_value *a = in_float(x, 0), *sc = ox_in(x, 1);
  if (!a || !sc) return -1;
  int r = a->type.rank;
  int64_t ax;
  if (ox_axis(x, ox_attr_int(x, "axis", -1), r, &ax) != 0) return -1;
  double eps = ox_attr_float(x, "epsilon", 1e-5);
  gc_dtype t = a->type.dtype;
  int n = r - (int)ax;
  gc_value *g = ox_broadcast(x, ox_cast(x, sc, t), n, a->type.dims + ax);
  gc_value *b = ox_has_in(x, 2) ? ox_broadcast(x, ox_cast(x, ox_in(x, 2), t), n, a->type.dims + ax)
                                : filled(x, t, 0, &a->type, (int)ax);
  ox_attrs at = {0};
  at_int(x, &at, "axis", ax);
  at_float(x, &at, "eps", eps);
  gc_value *in[3] = {a, g, b};
  x->out_v[0] = ox_op(x, GC_OP_LAYERNORM, 3, in, &at);
  if (ox_want_out(x, 1) || ox_want_out(x, 2)) {
    gc_dtype st;
    if (ox_dtype(x, (int)ox_attr_int(x, "stash_type", 1), &st) != 0) return -1;
    int64_t axes[GC_MAX_RANK];
    for (int i = 0; i < n; i++) axes[i] = ax + i;
    gc_value *xs = ox_cast(x, a, st);
    gc_value *mean = ox_reduce(x, GC_OP_REDUCE_MEAN, xs, axes, n, 1);
    gc_value *d = ox_bin(x, GC_OP_SUB, xs, mean);
    gc_value *var = ox_reduce(x, GC_OP_REDUCE_MEAN, ox_bin(x, GC_OP_MUL, d, d), axes, n, 1);
    x->out_v[1] = mean;
    x->out_v[2] = ox_un(x, GC_OP_RSQRT, ox_binc(x, GC_OP_ADD, var, eps));
  }
  return x->out_v[0] ? 0 : -1;
}

/* BatchNormalization at inference: y = x * s + b with s, b per channel. */
int ox_batchnorm(ox *x, int arg) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  if (ox_attr_int(x, "training_mode", 0) || ox_want_out(x, 1) || ox_want_out(x, 2))
    return ox_unsup(x, "training mode (running statistics outputs)");
  if (x->opset < 9 && !ox_attr_int(x, "spatial", 1)) return ox_unsup(x, "spatial=0");
  int r = a->type.rank;
  if (r < 2) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "rank < 2");
  gc_dtype t = a->type.dtype;
  double eps = ox_attr_float(x, "epsilon", 1e-5);
  gc_value *sc = ox_cast(x, ox_in(x, 1), t), *bias = ox_cast(x, ox_in(x, 2), t);
  gc_value *mean = ox_cast(x, ox_in(x, 3), t), *var = ox_cast(x, ox_in(x, 4), t);
  gc_value *s = ox_bin(x, GC_OP_DIV, sc, ox_un(x, GC_OP_SQRT, ox_binc(x, GC_OP_ADD, var, eps)));
  gc_value *b = ox_bin(x, GC_OP_SUB, bias, ox_bin(x, GC_OP_MUL, mean, s));
  gc_value *y = ox_bin(x, GC_OP_MUL, a, per_channel(x, s, r, t));
  return out1(x, ox_bin(x, GC_OP_ADD, y, per_channel(x, b, r, t)));
}

/* InstanceNormalization: layernorm over the spatial dims, then scale and bias per channel. */
int ox_instancenorm(ox *x, int arg) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  if (r < 3) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "rank < 3");
  gc_dtype t = a->type.dtype;
  ox_attrs at = {0};
  at_int(x, &at, "axis", 2);
  at_float(x, &at, "eps", ox_attr_float(x, "epsilon", 1e-5));
  gc_value *in[3] = {a, filled(x, t, 1, &a->type, 2), filled(x, t, 0, &a->type, 2)};
  gc_value *y = ox_op(x, GC_OP_LAYERNORM, 3, in, &at);
  y = ox_bin(x, GC_OP_MUL, y, per_channel(x, ox_in(x, 1), r, t));
  return out1(x, ox_bin(x, GC_OP_ADD, y, per_channel(x, ox_in(x, 2), r, t)));
}

/* GroupNormalization (opset 21: scale and bias per channel). */
int ox_groupnorm(ox *x, int arg) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  int64_t G = ox_attr_int(x, "num_groups", 0), C = a->type.dims[1];
  if (r < 3 || !gc_type_is_concrete(&a->type)) return ox_unsup(x, "needs rank >= 3 and concrete dims");
  if (G < 1 || C % G) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "num_groups must divide C");
  gc_dtype t = a->type.dtype;
  int64_t d3[3] = {a->type.dims[0], G, gc_type_numel(&a->type) / (a->type.dims[0] * G)};
  gc_value *v = ox_reshape(x, a, 3, d3);
  if (!v) return -1;
  ox_attrs at = {0};
  at_int(x, &at, "axis", 2);
  at_float(x, &at, "eps", ox_attr_float(x, "epsilon", 1e-5));
  gc_value *in[3] = {v, filled(x, t, 1, &v->type, 2), filled(x, t, 0, &v->type, 2)};
  gc_value *y = ox_reshape(x, ox_op(x, GC_OP_LAYERNORM, 3, in, &at), r, a->type.dims);
  y = ox_bin(x, GC_OP_MUL, y, per_channel(x, ox_in(x, 1), r, t));
  return out1(x, ox_bin(x, GC_OP_ADD, y, per_channel(x, ox_in(x, 2), r, t)));
}

/* RMSNormalization: graphc rmsnorm over the last axis, arithmetic otherwise. */
int ox_rmsnorm(ox *x, int arg) {
  gc_value *a = in_float(x, 0), *sc = ox_in(x, 1);
  if (!a || !sc) return -1;
  int r = a->type.rank;
  int64_t ax;
  if (ox_axis(x, ox_attr_int(x, "axis", -1), r, &ax) != 0) return -1;
  double eps = ox_attr_float(x, "epsilon", 1e-5);
  gc_dtype t = a->type.dtype;
  sc = ox_cast(x, sc, t);
  if (ax == r - 1 && sc && sc->type.rank <= 1) {
    ox_attrs at = {0};
    at_float(x, &at, "eps", eps);
    gc_value *in[2] = {a, ox_broadcast(x, sc, 1, a->type.dims + r - 1)};
    return out1(x, ox_op(x, GC_OP_RMSNORM, 2, in, &at));
  }
  int64_t axes[GC_MAX_RANK];
  int n = 0;
  for (int i = (int)ax; i < r; i++) axes[n++] = i;
  gc_value *ms = ox_reduce(x, GC_OP_REDUCE_MEAN, ox_bin(x, GC_OP_MUL, a, a), axes, n, 1);
  gc_value *y = ox_bin(x, GC_OP_MUL, a, ox_un(x, GC_OP_RSQRT, ox_binc(x, GC_OP_ADD, ms, eps)));
  return out1(x, ox_bin(x, GC_OP_MUL, y, sc));
}

/* LpNormalization (p = 1 or 2) along one axis. */
int ox_lpnorm(ox *x, int arg) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  int64_t ax, p = ox_attr_int(x, "p", 2);
  if (ox_axis(x, ox_attr_int(x, "axis", -1), a->type.rank, &ax) != 0) return -1;
  gc_value *n;
  if (p == 1) n = ox_reduce(x, GC_OP_REDUCE_SUM, ox_un(x, GC_OP_ABS, a), &ax, 1, 1);
  else if (p == 2) n = ox_un(x, GC_OP_SQRT, ox_reduce(x, GC_OP_REDUCE_SUM, ox_bin(x, GC_OP_MUL, a, a), &ax, 1, 1));
  else return ox_unsup(x, "p=%lld", (long long)p);
  /* A zero norm gives 0, not NaN (ONNX's reference). */
  gc_value *zero = ox_scalar(x, a->type.dtype, 0);
  return out1(x, ox_sel(x, ox_bin(x, GC_OP_EQ, n, zero), zero, ox_bin(x, GC_OP_DIV, a, n)));
}

/* MeanVarianceNormalization over `axes` (default [0, 2, 3]). */
int ox_mvn(ox *x, int arg) {
  gc_value *a = in_float(x, 0);
  if (!a) return -1;
  int64_t axes[GC_MAX_RANK] = {0, 2, 3};
  int n = ox_attr_ints(x, "axes", axes, GC_MAX_RANK);
  if (n < 0) n = 3;
  for (int i = 0; i < n; i++)
    if (ox_axis(x, axes[i], a->type.rank, &axes[i]) != 0) return -1;
  gc_value *mean = ox_reduce(x, GC_OP_REDUCE_MEAN, a, axes, n, 1);
  gc_value *d = ox_bin(x, GC_OP_SUB, a, mean);
  gc_value *var = ox_reduce(x, GC_OP_REDUCE_MEAN, ox_bin(x, GC_OP_MUL, d, d), axes, n, 1);
  return out1(x, ox_bin(x, GC_OP_DIV, d, ox_binc(x, GC_OP_ADD, ox_un(x, GC_OP_SQRT, var), 1e-9)));
}

/* CumSum: a matmul with a triangular 0/1 matrix along the axis. */
int ox_cumsum(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  int64_t axv[1];
  if (!a || ox_in_ints(x, 1, "axis", axv, 1) < 0) return -1;
  int r = a->type.rank;
  int64_t ax;
  if (ox_axis(x, axv[0], r, &ax) != 0) return -1;
  int64_t n = a->type.dims[ax];
  if (a->type.dtype == GRAPHC_DTYPE_BOOL) return ox_unsup(x, "bool input");
  int excl = (int)ox_attr_int(x, "exclusive", 0), rev = (int)ox_attr_int(x, "reverse", 0);
  int64_t perm[GC_MAX_RANK], inv[GC_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++)
    if (i != ax) perm[k++] = i;
  perm[r - 1] = ax;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  gc_value *v = r == 1 ? ox_reshape(x, a, 2, (int64_t[]){1, n}) : ox_transpose(x, a, perm);
  /* m[j][i] = 1 when source j adds into destination i */
  int64_t nn[2] = {n, n};
  gc_opcode cmp = rev ? (excl ? GC_OP_GT : GC_OP_GE) : (excl ? GC_OP_LT : GC_OP_LE);
  gc_value *m = ox_bin(x, cmp, ox_iota(x, 2, nn, 0, GRAPHC_DTYPE_I64), ox_iota(x, 2, nn, 1, GRAPHC_DTYPE_I64));
  gc_value *y = ox_bin(x, GC_OP_MATMUL, v, ox_cast(x, m, a->type.dtype));
  return out1(x, r == 1 ? ox_reshape(x, y, 1, &n) : ox_transpose(x, y, inv));
}
