/* onnx_composite.c - ONNX op mappings built from many graphc ops: Attention
 * (opsets 23 to 25), NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss,
 * the gather helper they share with GatherElements, and Resize / Upsample.
 *
 * Attention follows the ONNX reference step by step: heads split from 3-D
 * inputs, past key/value concatenated, the bias built from the mask, the
 * causal frontier (offset-aware), a sliding window and the padding of
 * nonpad_kv_seqlen; Q and K scaled by sqrt(scale) before the matmul; softcap;
 * softmax in softmax_precision; rows whose bias is all -inf give zeros.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_internal.h"

/* Set output 0; -1 when v is NULL (its error was reported). */
static int out1(ox *x, gc_value *v) {
  x->out_v[0] = v;
  return v ? 0 : -1;
}

/* Row-major offsets into a (of type at) of the elements idx picks along ax
 * (numpy take_along_axis positions); NULL after an error. */
static gc_value *elem_offsets(ox *x, const gc_type *at, gc_value *idx, int ax) {
  if (!idx) return NULL;
  int r = at->rank;
  if (idx->type.rank != r) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "indices rank differs from the data's");
    return NULL;
  }
  if (!gc_type_is_concrete(at)) { /* the indices may have symbolic dims: iota takes them */
    ox_unsup(x, "data with symbolic dims; bind them first");
    return NULL;
  }
  int64_t dim = at->dims[ax], stride = 1;
  gc_value *i64 = ox_cast(x, idx, GRAPHC_DTYPE_I64);
  gc_value *fixed = ox_sel(x, ox_binc(x, GC_OP_LT, i64, 0), ox_binc(x, GC_OP_ADD, i64, (double)dim), i64);
  gc_value *flat = NULL;
  for (int k = r - 1; k >= 0; k--) {
    gc_value *part = k == ax ? fixed : ox_iota(x, r, idx->type.dims, k, GRAPHC_DTYPE_I64);
    if (stride != 1) part = ox_binc(x, GC_OP_MUL, part, (double)stride);
    flat = flat ? ox_bin(x, GC_OP_ADD, flat, part) : part;
    stride *= at->dims[k];
  }
  return flat;
}

/* numpy take_along_axis: one flat gather at the element offsets. */
gc_value *ox_take_elements(ox *x, gc_value *a, gc_value *idx, int ax) {
  if (!a || !idx) return NULL;
  gc_value *flat = elem_offsets(x, &a->type, idx, ax);
  if (!flat) return NULL;
  int64_t n = gc_type_numel(&a->type);
  ox_attrs at = {0};
  at_int(x, &at, "axis", 0);
  gc_value *in[2] = {ox_reshape(x, a, 1, &n), flat};
  return ox_op(x, GC_OP_GATHER, 2, in, &at);
}

/* GatherElements(data, indices, axis). */
int ox_gather_elements(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *idx = ox_in(x, 1);
  if (!a || !idx) return -1;
  int64_t ax;
  if (ox_axis(x, ox_attr_int(x, "axis", 0), a->type.rank, &ax) != 0) return -1;
  return out1(x, ox_take_elements(x, a, idx, (int)ax));
}

/* ---- losses ----------------------------------------------------------------------------------- */

/* NLL of log-probabilities lp [N, C, d...] at labels t [N, d...] with optional
 * class weights w [C], ignore_index and reduction. */
static gc_value *nll(ox *x, gc_value *lp, gc_value *t, gc_value *w) {
  if (!lp || !t) return NULL;
  int r = lp->type.rank;
  if (r < 2 || t->type.rank != r - 1) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "input must be [N, C, ...] and target [N, ...]");
    return NULL;
  }
  const char *red = ox_attr_str(x, "reduction", "mean");
  const gc_onnx_attr *ig = ox_attr(x, "ignore_index");
  gc_value *ti = ox_cast(x, t, GRAPHC_DTYPE_I64), *valid = NULL;
  if (ig) {
    valid = ox_binc(x, GC_OP_NE, ti, (double)ig->i);
    ti = ox_sel(x, valid, ti, ox_scalar(x, GRAPHC_DTYPE_I64, 0));
  }
  int64_t ud[GC_MAX_RANK];
  for (int i = 0, j = 0; i < r; i++) ud[i] = i == 1 ? 1 : t->type.dims[j++];
  gc_value *picked = ox_take_elements(x, lp, ox_reshape(x, ti, r, ud), 1);
  picked = ox_reshape(x, picked, r - 1, t->type.dims);
  gc_dtype dt = lp->type.dtype;
  gc_value *wt;
  if (w) {
    ox_attrs at = {0};
    at_int(x, &at, "axis", 0);
    gc_value *in[2] = {w, ti};
    wt = ox_op(x, GC_OP_GATHER, 2, in, &at);
  } else {
    ox_attrs at = {0};
    at_scalar(x, &at, "value", dt, 1);
    at_ints(x, &at, "shape", t->type.dims, t->type.rank);
    at_dtype(x, &at, "dtype", dt);
    wt = ox_op(x, GC_OP_CONST, 0, NULL, &at);
  }
  if (valid) wt = ox_sel(x, valid, wt, ox_scalar(x, dt, 0));
  gc_value *loss = ox_un(x, GC_OP_NEG, ox_bin(x, GC_OP_MUL, picked, wt));
  if (strcmp(red, "none") == 0) return loss;
  if (!loss) return NULL;
  int64_t axes[GC_MAX_RANK];
  for (int i = 0; i < loss->type.rank; i++) axes[i] = i;
  gc_value *sum = ox_reduce(x, GC_OP_REDUCE_SUM, loss, axes, loss->type.rank, 0);
  if (strcmp(red, "sum") == 0) return sum;
  if (strcmp(red, "mean") != 0) {
    ox_unsup(x, "reduction '%s'", red);
    return NULL;
  }
  return ox_bin(x, GC_OP_DIV, sum, ox_reduce(x, GC_OP_REDUCE_SUM, wt, axes, loss->type.rank, 0));
}

/* NegativeLogLikelihoodLoss(input, target, weight?). */
int ox_nll_loss(ox *x, int arg) {
  gc_value *w = ox_has_in(x, 2) ? ox_in(x, 2) : NULL;
  if (ox_has_in(x, 2) && !w) return -1;
  return out1(x, nll(x, ox_in(x, 0), ox_in(x, 1), w));
}

/* SoftmaxCrossEntropyLoss(scores, labels, weights?): NLL of log_softmax over axis 1. */
int ox_sce_loss(ox *x, int arg) {
  gc_value *s = ox_in(x, 0), *w = ox_has_in(x, 2) ? ox_in(x, 2) : NULL;
  if (!s || (ox_has_in(x, 2) && !w)) return -1;
  if (!gc_dtype_is_float(s->type.dtype)) return ox_unsup(x, "non-float scores");
  ox_attrs at = {0};
  at_int(x, &at, "axis", 1);
  gc_value *lp = ox_op(x, GC_OP_LOG_SOFTMAX, 1, &s, &at);
  x->out_v[1] = lp;
  return out1(x, nll(x, lp, ox_in(x, 1), w));
}

/* ---- attention --------------------------------------------------------------------------------- */

/* [B, S, H*D] -> [B, H, S, D]. */
static gc_value *split_heads(ox *x, gc_value *v, int64_t heads) {
  if (!v) return NULL;
  int64_t *d = v->type.dims;
  if (heads < 1 || d[2] % heads) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "hidden size %lld is not a multiple of %lld heads",
            (long long)d[2], (long long)heads);
    return NULL;
  }
  int64_t s4[4] = {d[0], d[1], heads, d[2] / heads}, p[4] = {0, 2, 1, 3};
  return ox_transpose(x, ox_reshape(x, v, 4, s4), p);
}

/* 0 where allowed, -inf elsewhere, in dtype t. */
static gc_value *bias_of(ox *x, gc_value *allowed, gc_dtype t) {
  return ox_sel(x, allowed, ox_scalar(x, t, 0), ox_scalar(x, t, -INFINITY));
}

/* Add b to a bias that may still be absent. */
static gc_value *add_bias(ox *x, gc_value *acc, gc_value *b) {
  return acc ? ox_bin(x, GC_OP_ADD, acc, b) : b;
}

/* i + offset - j over [Sq, Skv] (offset a scalar) or [B, 1, Sq, Skv] (per batch). */
static gc_value *diag_diff(ox *x, int64_t sq, int64_t skv, gc_value *off_b, int64_t off) {
  int64_t d2[2] = {sq, skv};
  gc_value *i = ox_iota(x, 2, d2, 0, GRAPHC_DTYPE_I64), *j = ox_iota(x, 2, d2, 1, GRAPHC_DTYPE_I64);
  gc_value *diff = ox_bin(x, GC_OP_SUB, i, j);
  if (!off_b) return off ? ox_binc(x, GC_OP_ADD, diff, (double)off) : diff;
  int64_t b4[4] = {off_b->type.dims[0], 1, 1, 1};
  return ox_bin(x, GC_OP_ADD, diff, ox_reshape(x, off_b, 4, b4));
}

/* Attention: see the file comment. */
int ox_attention(ox *x, int arg) {
  gc_value *q = ox_in(x, 0), *k = ox_in(x, 1), *v = ox_in(x, 2);
  if (!q || !k || !v) return -1;
  int r = q->type.rank;
  if (r != 3 && r != 4) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "Q must be 3-D or 4-D");
  if (!gc_dtype_is_float(q->type.dtype)) return ox_unsup(x, "non-float Q");
  /* f16: compute in f32, round the outputs once (bf16 follows the reference's
   * step-by-step bf16 rounding, which its expected outputs were made with). */
  gc_dtype t0 = q->type.dtype, t = t0;
  if (t0 == GRAPHC_DTYPE_F16) {
    t = GRAPHC_DTYPE_F32;
    q = ox_cast(x, q, t), k = ox_cast(x, k, t), v = ox_cast(x, v, t);
  }
  int64_t qh = ox_attr_int(x, "q_num_heads", 0), kvh = ox_attr_int(x, "kv_num_heads", 0);
  if (r == 3) q = split_heads(x, q, qh), k = split_heads(x, k, kvh), v = split_heads(x, v, kvh);
  int has_past = ox_has_in(x, 4);
  int64_t past = 0;
  if (has_past) {
    gc_value *pk = ox_cast(x, ox_in(x, 4), t), *pv = ox_cast(x, ox_in(x, 5), t);
    if (!pk || !pv) return -1;
    past = pk->type.dims[2];
    ox_attrs at = {0};
    at_int(x, &at, "axis", 2);
    gc_value *ck[2] = {pk, k}, *cv[2] = {pv, v};
    k = ox_op(x, GC_OP_CONCAT, 2, ck, &at);
    v = ox_op(x, GC_OP_CONCAT, 2, cv, &at);
  }
  if (!q || !k || !v) return -1;
  x->out_v[1] = ox_cast(x, k, t0);
  x->out_v[2] = ox_cast(x, v, t0);
  if (!gc_type_is_concrete(&q->type) || !gc_type_is_concrete(&k->type))
    return ox_unsup(x, "symbolic dims; bind them first");
  int64_t B = q->type.dims[0], sq = q->type.dims[2], skv = k->type.dims[2], hd = q->type.dims[3];
  /* the bias */
  gc_value *bias = NULL, *mask = NULL, *nonpad = NULL;
  if (ox_has_in(x, 3)) {
    mask = ox_in(x, 3);
    if (!mask) return -1;
    if (mask->type.dtype != GRAPHC_DTYPE_BOOL && !gc_dtype_is_float(mask->type.dtype))
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,   /* an int mask: found by fuzz_onnx */
                     "attn_mask must be bool or a float type, not %s",
                     graphc_dtype_name(mask->type.dtype));
    int mr = mask->type.rank;
    int64_t pad = mr >= 1 ? skv - mask->type.dims[mr - 1] : 0; /* a scalar mask broadcasts */
    if (pad > 0) {
      int64_t pads[2 * GC_MAX_RANK] = {0};
      pads[mr + mr - 1] = pad;
      ox_attrs at = {0};
      at_ints(x, &at, "pads", pads, 2 * mr);
      at_scalar(x, &at, "value", mask->type.dtype, mask->type.dtype == GRAPHC_DTYPE_BOOL ? 0 : -INFINITY);
      mask = ox_op(x, GC_OP_PAD, 1, &mask, &at);
    }
    if (mask && mask->type.dtype == GRAPHC_DTYPE_BOOL) mask = bias_of(x, mask, t);
    else mask = ox_cast(x, mask, t);
    bias = mask;
  }
  if (ox_has_in(x, 6)) {
    if (has_past) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "nonpad_kv_seqlen with a past cache");
    nonpad = ox_cast(x, ox_in(x, 6), GRAPHC_DTYPE_I64);
    if (!nonpad) return -1;
  }
  gc_value *off_b = nonpad ? ox_binc(x, GC_OP_SUB, nonpad, (double)sq) : NULL;
  if (ox_attr_int(x, "is_causal", 0)) /* allowed iff j <= i + offset */
    bias = add_bias(x, bias, bias_of(x, ox_binc(x, GC_OP_GE, diag_diff(x, sq, skv, off_b, past), 0), t));
  int64_t lw = ox_attr_int(x, "left_window_size", -1), rw = ox_attr_int(x, "right_window_size", -1);
  if (lw >= 0 || rw >= 0) {
    gc_value *diff = diag_diff(x, sq, skv, off_b, past), *ok = NULL;
    if (lw >= 0) ok = ox_binc(x, GC_OP_LE, diff, (double)lw);
    if (rw >= 0) {
      gc_value *rr = ox_binc(x, GC_OP_GE, diff, (double)-rw);
      ok = ok ? ox_bin(x, GC_OP_AND, ok, rr) : rr;
    }
    bias = add_bias(x, bias, bias_of(x, ok, t));
  }
  if (nonpad) { /* keys at or past nonpad_kv_seqlen[b] are padding */
    int64_t d1[1] = {skv}, b4[4] = {B, 1, 1, 1}, k4[4] = {1, 1, 1, skv};
    gc_value *j = ox_reshape(x, ox_iota(x, 1, d1, 0, GRAPHC_DTYPE_I64), 4, k4);
    bias = add_bias(x, bias, bias_of(x, ox_bin(x, GC_OP_LT, j, ox_reshape(x, nonpad, 4, b4)), t));
  }
  /* grouped-query attention: repeat each K/V head */
  int64_t nq = q->type.dims[1], nk = k->type.dims[1];
  if (nq != nk) {
    if (nk <= 0 || nq % nk)   /* nk 0: a division by zero (found by fuzz_onnx) */
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "q heads not a multiple of kv heads");
    gc_value *kv[2] = {k, v};
    for (int i = 0; i < 2; i++) {
      int64_t *d = kv[i]->type.dims;
      int64_t s5[5] = {d[0], d[1], 1, d[2], d[3]}, b5[5] = {d[0], d[1], nq / nk, d[2], d[3]};
      int64_t o4[4] = {d[0], nq, d[2], d[3]};
      kv[i] = ox_reshape(x, ox_broadcast(x, ox_reshape(x, kv[i], 5, s5), 5, b5), 4, o4);
    }
    k = kv[0], v = kv[1];
  }
  /* scores */
  const gc_onnx_attr *sa = ox_attr(x, "scale");
  double scale = sa ? (double)sa->f : 1.0 / sqrt((double)hd);
  double s = sqrt(scale);
  ox_attrs mt = {0};
  at_bool(x, &mt, "transpose_b", 1);
  gc_value *qk_in[2] = {ox_binc(x, GC_OP_MUL, q, s), ox_binc(x, GC_OP_MUL, k, s)};
  gc_value *qk = ox_op(x, GC_OP_MATMUL, 2, qk_in, &mt);
  double softcap = ox_attr_float(x, "softcap", 0);
  if (softcap > 0)
    qk = ox_binc(x, GC_OP_MUL, ox_un(x, GC_OP_TANH, ox_binc(x, GC_OP_DIV, qk, softcap)), softcap);
  gc_value *qkb = bias ? ox_bin(x, GC_OP_ADD, qk, bias) : qk;
  int64_t mode = ox_attr_int(x, "qk_matmul_output_mode", 0);
  gc_value *qk_out = mode == 2 ? qkb : qk;
  const gc_onnx_attr *sp = ox_attr(x, "softmax_precision");
  gc_dtype st = t;
  if (sp && ox_dtype(x, (int)sp->i, &st) != 0) return -1;
  if (st == GRAPHC_DTYPE_F16 || st == GRAPHC_DTYPE_BF16) st = t;
  ox_attrs sm = {0};
  at_int(x, &sm, "axis", -1);
  gc_value *sin = ox_cast(x, qkb, st);
  gc_value *prob = ox_op(x, GC_OP_SOFTMAX, 1, &sin, &sm);
  if (bias) { /* rows with nothing to attend to give zeros */
    int64_t last = -1;
    gc_value *bmax = ox_reduce(x, GC_OP_REDUCE_MAX, bias, &last, 1, 1);
    gc_value *dead = ox_binc(x, GC_OP_EQ, bmax, -INFINITY);
    prob = ox_sel(x, dead, ox_scalar(x, st, 0), prob);
  }
  prob = ox_cast(x, prob, t);
  if (mode == 3) qk_out = prob;
  if (ox_want_out(x, 3)) {
    if (!qk_out) return -1;
    int64_t full[4] = {B, nq, sq, skv};
    x->out_v[3] = ox_cast(x, ox_broadcast(x, qk_out, 4, full), t0);
  }
  gc_value *y = ox_bin(x, GC_OP_MATMUL, prob, v);
  if (r == 3 && y) {
    int64_t p[4] = {0, 2, 1, 3}, o3[3] = {B, sq, nq * y->type.dims[3]};
    y = ox_reshape(x, ox_transpose(x, y, p), 3, o3);
  }
  return out1(x, ox_cast(x, y, t0));
}

/* ---- resize ------------------------------------------------------------------------------------- */

/* How one axis is resampled: coefficient function and coordinate mapping. */
typedef struct rsz {
  int mode;            /* 'n' nearest, 'l' linear, 'c' cubic */
  const char *ctm;     /* coordinate_transformation_mode */
  const char *nearest; /* nearest_mode */
  double a;            /* cubic_coeff_a */
  int antialias, exclude;
  double extrap;
} rsz;

/* Interpolation weights at fractional position `ratio` (ONNX's reference). */
static int rsz_coeffs(const rsz *z, double ratio, double scale, double *c) {
  if (z->mode == 'n') {
    const char *m = z->nearest;
    int up = ratio == 1 ? 1
           : strcmp(m, "round_prefer_ceil") == 0 ? ratio >= 0.5
           : strcmp(m, "floor") == 0 ? 0 : strcmp(m, "ceil") == 0 ? 1 : ratio > 0.5;
    c[0] = !up, c[1] = up;
    return 2;
  }
  double s = scale < 1 ? scale : 1, sum = 0;
  int n;
  if (z->mode == 'l' && !z->antialias) {
    c[0] = 1 - ratio, c[1] = ratio;
    return 2;
  }
  if (z->mode == 'c' && !z->antialias) {
    double A = z->a, r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    c[0] = ((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A;
    c[1] = ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1;
    c[2] = ((A + 2) * q - (A + 3)) * q * q + 1;
    c[3] = ((A * q1 - 5 * A) * q1 + 8 * A) * q1 - 4 * A;
    return 4;
  }
  if (z->mode == 'l') {
    int start = (int)floor(-1 / s) + 1;
    n = 2 - 2 * start;
    if (n > 64) return -1;
    for (int k = 0; k < n; k++) {
      double v = 1 - fabs(((double)(start + k) - ratio) * s);
      c[k] = v < 0 ? 0 : v > 1 ? 1 : v;
      sum += c[k];
    }
  } else {
    int i0 = (int)floor(-2 / s) + 1, i1 = 2 - i0;
    n = i1 - i0;
    if (n > 64) return -1;
    for (int i = i0; i < i1; i++) {
      double xx = fabs(s * ((double)i - ratio)), x2 = xx * xx, x3 = xx * x2, A = z->a;
      c[i - i0] = xx <= 1 ? (A + 2) * x3 - (A + 3) * x2 + 1
                : xx < 2 ? A * x3 - 5 * A * x2 + 8 * A * xx - 4 * A : 0;
      sum += c[i - i0];
    }
  }
  for (int k = 0; k < n; k++) c[k] /= sum;
  return n;
}

/* Source coordinate of output position y along an axis; *out set when outside (crop mode). */
static double rsz_coord(const rsz *z, double y, double scale, int64_t in, int64_t out_n,
                        const double *roi, int *outside) {
  double ow = scale * (double)in;
  *outside = 0;
  if (strcmp(z->ctm, "align_corners") == 0) return ow == 1 ? 0 : y * (double)(in - 1) / (ow - 1);
  if (strcmp(z->ctm, "asymmetric") == 0) return y / scale;
  if (strcmp(z->ctm, "tf_crop_and_resize") == 0) {
    double xo = ow == 1 ? (roi[1] - roi[0]) * (double)(in - 1) / 2
                        : y * (roi[1] - roi[0]) * (double)(in - 1) / (ow - 1);
    xo += roi[0] * (double)(in - 1);
    *outside = xo < 0 || xo > (double)(in - 1);
    return xo;
  }
  if (strcmp(z->ctm, "pytorch_half_pixel") == 0) return ow == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (strcmp(z->ctm, "half_pixel_symmetric") == 0) {
    double adj = (double)out_n / ow, center = (double)in / 2;
    return center * (1 - adj) + (y + 0.5) / scale - 0.5;
  }
  return (y + 0.5) / scale - 0.5; /* half_pixel */
}

/* Resample value a (in f64, or its own dtype for nearest) along one axis. */
static gc_value *rsz_axis(ox *x, const rsz *z, gc_value *a, int ax, double scale, int64_t out_n,
                          const double *roi) {
  if (!a) return NULL;
  int64_t in = a->type.dims[ax];
  int r = a->type.rank;
  double c[64];
  int n = rsz_coeffs(z, 0.5, scale, c);
  if (n < 1 || out_n > (INT64_C(1) << 24)) {
    ox_unsup(x, "a resampling filter this wide");
    return NULL;
  }
  int64_t *idx = ox_alloc(x, (size_t)(out_n * n) * sizeof *idx);
  double *w = ox_alloc(x, (size_t)(out_n * n) * sizeof *w);
  unsigned char *outside = ox_alloc(x, (size_t)out_n);
  if (!idx || !w || !outside) return NULL;
  int any_out = 0;
  for (int64_t o = 0; o < out_n; o++) {
    int oo;
    double xo = rsz_coord(z, (double)o, scale, in, out_n, roi, &oo);
    outside[o] = (unsigned char)oo, any_out |= oo;
    double fl = floor(xo), ratio = xo == fl ? 1 : xo - fl;
    if (rsz_coeffs(z, ratio, scale, c) != n) {
      ox_unsup(x, "varying filter width");
      return NULL;
    }
    int pw = (n + 1) / 2;
    double xp = xo + pw, p = floor(xp), fr = xp - p;
    int64_t off = n % 2 == 0 ? (fr == 0 ? -(n / 2) : -(n / 2) + 1)
                             : (fr <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
    double sum = 0;
    for (int t = 0; t < n; t++) {
      int64_t i = (int64_t)p + off + t - pw;
      if (z->exclude && (i < 0 || i >= in)) c[t] = 0;
      sum += c[t];
      idx[o * n + t] = i < 0 ? 0 : i >= in ? in - 1 : i;
    }
    for (int t = 0; t < n; t++) w[o * n + t] = z->exclude ? c[t] / (sum == 0 ? 1 : sum) : c[t];
  }
  ox_attrs at = {0};
  at_int(x, &at, "axis", ax);
  gc_value *y = NULL;
  int64_t wd[GC_MAX_RANK];
  for (int i = 0; i < r; i++) wd[i] = i == ax ? out_n : 1;
  for (int t = 0; t < n; t++) {
    ox_const *ik = ox_const_new(x, GRAPHC_DTYPE_I64, 1, &out_n);
    ox_const *wk = ox_const_new(x, a->type.dtype, r, wd);
    if (!ik || !wk) return NULL;
    int zero = 1, one = 1;
    for (int64_t o = 0; o < out_n; o++) {
      ox_const_seti(ik, o, idx[o * n + t]);
      ox_const_set(wk, o, w[o * n + t]);
      zero &= w[o * n + t] == 0, one &= w[o * n + t] == 1;
    }
    if (zero) continue;
    gc_value *in2[2] = {a, ox_materialize(x, ik, NULL)};
    gc_value *g = ox_op(x, GC_OP_GATHER, 2, in2, &at);
    if (!one) g = ox_bin(x, GC_OP_MUL, g, ox_materialize(x, wk, NULL));
    y = y ? ox_bin(x, GC_OP_ADD, y, g) : g;
  }
  if (!y) { /* every weight zero */
    int64_t od[GC_MAX_RANK];
    memcpy(od, a->type.dims, sizeof od);
    od[ax] = out_n;
    y = ox_broadcast(x, ox_scalar(x, a->type.dtype, 0), r, od);
  }
  if (any_out) {
    ox_const *mk = ox_const_new(x, GRAPHC_DTYPE_BOOL, r, wd);
    if (!mk) return NULL;
    for (int64_t o = 0; o < out_n; o++) ((uint8_t *)mk->data)[o] = outside[o];
    y = ox_sel(x, ox_materialize(x, mk, NULL), ox_scalar(x, a->type.dtype, z->extrap), y);
  }
  return y;
}

/* Resize (opset 11+) and Upsample: separable, one axis at a time, in f64 like
 * ONNX's reference (nearest stays in the input's dtype: it only gathers). */
int ox_resize(ox *x, int upsample) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  if (!gc_type_is_concrete(&a->type)) return ox_unsup(x, "symbolic dims; bind them first");
  rsz z = {0};
  const char *mode = ox_attr_str(x, "mode", "nearest");
  z.mode = strcmp(mode, "nearest") == 0 ? 'n' : strcmp(mode, "linear") == 0 ? 'l'
         : strcmp(mode, "cubic") == 0 ? 'c' : 0;
  if (!z.mode) return ox_unsup(x, "mode '%s'", mode);
  z.ctm = upsample ? "asymmetric" : ox_attr_str(x, "coordinate_transformation_mode", "half_pixel");
  z.nearest = upsample ? "floor" : ox_attr_str(x, "nearest_mode", "round_prefer_floor");
  z.a = ox_attr_float(x, "cubic_coeff_a", -0.75);
  z.antialias = (int)ox_attr_int(x, "antialias", 0);
  z.exclude = (int)ox_attr_int(x, "exclude_outside", 0);
  z.extrap = ox_attr_float(x, "extrapolation_value", 0.0);
  if (z.mode == 'n' && z.antialias) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "antialias with nearest");
  int64_t axes[GC_MAX_RANK];
  int na = ox_attr_ints(x, "axes", axes, GC_MAX_RANK);
  if (na < 0) {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  for (int i = 0; i < na; i++)
    if (ox_axis(x, axes[i], r, &axes[i]) != 0) return -1;
  double scales[GC_MAX_RANK], roi[2 * GC_MAX_RANK];
  int64_t sizes[GC_MAX_RANK];
  int have_sizes = 0;
  int si = upsample ? 1 : x->opset < 11 ? 1 : 2;
  ox_const *sk = ox_has_in(x, si) ? ox_in_need(x, si) : NULL;
  ox_const *zk = !upsample && x->opset >= 11 && ox_has_in(x, 3) ? ox_in_need(x, 3) : NULL;
  if (upsample && x->opset < 9) {
    const gc_onnx_attr *sa = ox_attr(x, "scales");
    if (!sa || sa->n_floats != r) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "scales attribute");
    for (int i = 0; i < r; i++) scales[i] = sa->floats[i];
  } else if (zk && zk->numel) {
    if (zk->numel != na) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "sizes has %lld entries", (long long)zk->numel);
    for (int i = 0; i < na; i++) sizes[i] = ox_const_geti(zk, i);
    have_sizes = 1;
  } else if (sk && sk->numel) {
    if (sk->numel != na) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "scales has %lld entries", (long long)sk->numel);
    for (int i = 0; i < na; i++) scales[i] = ox_const_get(sk, i);
  } else {
    return ox_unsup(x, "scales or sizes must be constants (dynamic Resize is not supported)");
  }
  /* per-axis scale and output size over all dims */
  double sc[GC_MAX_RANK];
  int64_t on[GC_MAX_RANK];
  for (int i = 0; i < r; i++) sc[i] = 1, on[i] = a->type.dims[i];
  if (have_sizes) {
    const char *pol = ox_attr_str(x, "keep_aspect_ratio_policy", "stretch");
    double pick = 0;
    for (int i = 0; i < na; i++) {
      double s = (double)sizes[i] / (double)a->type.dims[axes[i]];
      if (i == 0 || (strcmp(pol, "not_larger") == 0 ? s < pick : s > pick)) pick = s;
      sc[axes[i]] = s, on[axes[i]] = sizes[i];
    }
    if (strcmp(pol, "stretch") != 0)
      for (int i = 0; i < na; i++)
        sc[axes[i]] = pick, on[axes[i]] = ox_f2i(pick * (double)a->type.dims[axes[i]] + 0.5);
  } else {
    for (int i = 0; i < na; i++) {
      int64_t ax = upsample && x->opset < 9 ? i : axes[i];
      sc[ax] = upsample && x->opset < 9 ? scales[i] : scales[i];
      on[ax] = ox_f2i(sc[ax] * (double)a->type.dims[ax]);   /* saturated, not UB */
    }
  }
  for (int i = 0; i < r; i++) roi[i] = 0, roi[r + i] = 1;
  if (strcmp(z.ctm, "tf_crop_and_resize") == 0) {
    ox_const *rk = ox_has_in(x, 1) ? ox_in_need(x, 1) : NULL;
    if (!rk || rk->numel != 2 * na) return ox_unsup(x, "tf_crop_and_resize needs a constant roi");
    for (int i = 0; i < na; i++) roi[axes[i]] = ox_const_get(rk, i), roi[r + axes[i]] = ox_const_get(rk, na + i);
  }
  gc_dtype t = a->type.dtype;
  if (z.mode != 'n') a = ox_cast(x, a, GRAPHC_DTYPE_F64);
  for (int i = 0; i < na && a; i++) {
    int ax = (int)axes[i];
    double rr[2] = {roi[ax], roi[r + ax]};
    if (on[ax] < 1) return ox_unsup(x, "an empty output (graphc has no empty tensors)");
    if (fabs(sc[ax] - 1) < 1e-9 && on[ax] == a->type.dims[ax] && fabs(rr[0]) < 1e-9 && fabs(rr[1] - 1) < 1e-9)
      continue;
    a = rsz_axis(x, &z, a, ax, sc[ax], on[ax], rr);
  }
  if (a && t != a->type.dtype && !gc_dtype_is_float(t)) /* saturate to the integer range */
    a = ox_un(x, GC_OP_FLOOR, ox_binc(x, GC_OP_ADD, a, 0.5));
  return out1(x, ox_cast(x, a, t));
}

/* ---- einsum --------------------------------------------------------------------------------------- */

/* An operand with one letter per dim. */
typedef struct eop {
  gc_value *v;
  char l[64];              /* at most GC_MAX_RANK used */
} eop;

/* Remove repeated letters of one operand by taking diagonals: move the pair
 * last, flatten it and gather the n diagonal elements. */
static int ein_diagonals(ox *x, eop *e) {
  for (;;) {
    int r = (int)strlen(e->l), p = -1, q = -1;
    for (int i = 0; i < r && p < 0; i++)
      for (int j = i + 1; j < r; j++)
        if (e->l[i] == e->l[j]) {
          p = i, q = j;
          break;
        }
    if (p < 0) return 0;
    int64_t n = e->v->type.dims[p], perm[GC_MAX_RANK], d[GC_MAX_RANK];
    if (n != e->v->type.dims[q]) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "diagonal of unequal dims");
    char nl[64];
    int k = 0;
    for (int i = 0; i < r; i++)
      if (i != p && i != q) perm[k] = i, nl[k++] = e->l[i];
    perm[k] = p, perm[k + 1] = q, nl[k] = e->l[p], nl[k + 1] = 0;
    gc_value *t = ox_transpose(x, e->v, perm);
    if (!t) return -1;
    for (int i = 0; i < k; i++) d[i] = t->type.dims[i];
    d[k] = n * n;
    ox_const *ik = ox_const_new(x, GRAPHC_DTYPE_I64, 1, &n);
    if (!ik) return -1;
    for (int64_t i = 0; i < n; i++) ox_const_seti(ik, i, i * (n + 1));
    ox_attrs at = {0};
    at_int(x, &at, "axis", k);
    gc_value *in[2] = {ox_reshape(x, t, k + 1, d), ox_materialize(x, ik, NULL)};
    e->v = ox_op(x, GC_OP_GATHER, 2, in, &at);
    memcpy(e->l, nl, sizeof nl);
    if (!e->v) return -1;
  }
}

/* Sum out the letters of e not in `keep`. */
static int ein_sum_out(ox *x, eop *e, const char *keep) {
  int64_t axes[GC_MAX_RANK];
  int n = 0, k = 0, r = (int)strlen(e->l);
  char nl[64];
  for (int i = 0; i < r; i++) {
    if (strchr(keep, e->l[i])) nl[k++] = e->l[i];
    else axes[n++] = i;
  }
  nl[k] = 0;
  if (!n) return 0;
  e->v = ox_reduce(x, GC_OP_REDUCE_SUM, e->v, axes, n, 0);
  memcpy(e->l, nl, sizeof nl);
  return e->v ? 0 : -1;
}

/* Dim of letter c in e. */
static int64_t ein_dim(const eop *e, char c) { return e->v->type.dims[strchr(e->l, c) - e->l]; }

/* Contract two operands into one with letters `keep` (in a's then b's order). */
static int ein_pair(ox *x, eop *a, eop *b, const char *keep, eop *out) {
  char bat[16] = "", con[16] = "", af[16] = "", bf[16] = "";
  for (const char *c = a->l; *c; c++) {
    char s[2] = {*c, 0};
    if (strchr(b->l, *c)) strcat(strchr(keep, *c) ? bat : con, s);
    else strcat(af, s);
  }
  for (const char *c = b->l; *c; c++)
    if (!strchr(a->l, *c)) {
      char s[2] = {*c, 0};
      strcat(bf, s);
    }
  int64_t pa[GC_MAX_RANK], pb[GC_MAX_RANK], nb = 1, m = 1, k = 1, n = 1;
  int ia = 0, ib = 0;
  for (const char *c = bat; *c; c++) {
    pa[ia++] = strchr(a->l, *c) - a->l, pb[ib++] = strchr(b->l, *c) - b->l, nb *= ein_dim(a, *c);
    if (ein_dim(a, *c) != ein_dim(b, *c)) return ox_unsup(x, "einsum broadcasting");
  }
  for (const char *c = af; *c; c++) pa[ia++] = strchr(a->l, *c) - a->l, m *= ein_dim(a, *c);
  for (const char *c = con; *c; c++) {
    pa[ia++] = strchr(a->l, *c) - a->l, pb[ib++] = strchr(b->l, *c) - b->l, k *= ein_dim(a, *c);
    if (ein_dim(a, *c) != ein_dim(b, *c)) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "dims differ");
  }
  for (const char *c = bf; *c; c++) pb[ib++] = strchr(b->l, *c) - b->l, n *= ein_dim(b, *c);
  int64_t s3a[3] = {nb, m, k}, s3b[3] = {nb, k, n}, od[GC_MAX_RANK];
  gc_value *va = ox_reshape(x, ox_transpose(x, a->v, pa), 3, s3a);
  gc_value *vb = ox_reshape(x, ox_transpose(x, b->v, pb), 3, s3b);
  int r = 0;
  if (strlen(bat) + strlen(af) + strlen(bf) > GC_MAX_RANK) return ox_unsup(x, "einsum rank");
  snprintf(out->l, sizeof out->l, "%s%s%s", bat, af, bf);
  for (const char *c = out->l; *c; c++) od[r++] = strchr(a->l, *c) ? ein_dim(a, *c) : ein_dim(b, *c);
  out->v = ox_reshape(x, ox_bin(x, GC_OP_MATMUL, va, vb), r, od);
  return out->v ? 0 : -1;
}

/* Einsum: diagonals, sums, then pairwise matmuls from the left, then the output order. */
int ox_einsum(ox *x, int arg) {
  const char *eq = ox_attr_str(x, "equation", NULL);
  int n = ox_n_in(x);
  if (!eq || n < 1 || n > 8) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "bad einsum");
  char buf[256], outl[GC_MAX_RANK + 1] = "";
  size_t k = 0;
  for (const char *c = eq; *c && k < sizeof buf - 1; c++)
    if (*c != ' ') buf[k++] = *c;
  buf[k] = 0;
  char *arrow = strstr(buf, "->");
  if (arrow) *arrow = 0;
  eop ops[8];
  char *s = buf;
  int used[128] = {0};
  for (int i = 0; i < n; i++) {
    char *comma = strchr(s, ',');
    if (comma) *comma = 0;
    if (!(ops[i].v = ox_in(x, i))) return -1;
    int r = ops[i].v->type.rank, m = 0;
    char *dots = strstr(s, "...");
    int explicit_n = (int)strlen(s) - (dots ? 3 : 0);
    for (char *c = s; *c; c++) {
      if (c == dots) { /* ellipsis: letters 'A'.. for the leading dims */
        for (int j = 0; j < r - explicit_n && m < GC_MAX_RANK; j++) ops[i].l[m++] = (char)('A' + j + (GC_MAX_RANK - (r - explicit_n)));
        c += 2;
      } else if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')) {
        if (m < GC_MAX_RANK) ops[i].l[m++] = *c;
        used[(int)*c]++;
      } else {
        return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "bad einsum equation '%s'", eq);
      }
    }
    ops[i].l[m] = 0;
    if (m != r) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "equation rank %d for an input of rank %d", m, r);
    if (ein_diagonals(x, &ops[i]) != 0) return -1;
    if (!comma && i < n - 1) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "too few terms");
    s = comma ? comma + 1 : s + strlen(s);
  }
  if (arrow) {
    const char *o = arrow + 2, *dots = strstr(o, "...");
    int m = 0;
    for (const char *c = o; *c && m < GC_MAX_RANK; c++) {
      if (c == dots) {
        for (char L = 'A'; L <= 'Z'; L++) /* the ellipsis letters, in order */
          for (int i = 0; i < n; i++)
            if (strchr(ops[i].l, L) && !strchr(outl, L)) {
              outl[m++] = L, outl[m] = 0;
              break;
            }
        c += 2;
      } else {
        outl[m++] = *c, outl[m] = 0;
      }
    }
  } else { /* implicit: the letters that appear once, sorted */
    int m = 0;
    for (int c = 'a'; c <= 'z'; c++)
      if (used[c] == 1) outl[m++] = (char)c;
    outl[m] = 0;
  }
  /* letters needed after operand i: the output's and those of later operands */
  eop acc = ops[0];
  for (int i = 0; i < n; i++) {
    char keep[64];
    snprintf(keep, sizeof keep, "%s", outl);
    for (int j = i + 1; j < n; j++) strncat(keep, ops[j].l, sizeof keep - strlen(keep) - 1);
    if (i == 0) {
      if (ein_sum_out(x, &acc, n > 1 ? strcat(keep, ops[1].l) : keep) != 0) return -1;
      continue;
    }
    eop b = ops[i];
    char kb[160];
    snprintf(kb, sizeof kb, "%s%s", keep, acc.l);
    if (ein_sum_out(x, &b, kb) != 0) return -1;
    eop r;
    if (ein_pair(x, &acc, &b, keep, &r) != 0) return -1;
    acc = r;
  }
  if (ein_sum_out(x, &acc, outl) != 0) return -1;
  int64_t perm[GC_MAX_RANK];
  int r = (int)strlen(outl);
  if ((int)strlen(acc.l) != r) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "output letters");
  for (int i = 0; i < r; i++) {
    char *p = strchr(acc.l, outl[i]);
    if (!p) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "output letter %c", outl[i]);
    perm[i] = p - acc.l;
  }
  return out1(x, r ? ox_transpose(x, acc.v, perm) : acc.v);
}

/* ---- selection ------------------------------------------------------------------------------------- */

/* TopK by K rounds of argmax, each masking what it took; ties keep the lower index. */
int ox_topk(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  int64_t kv[1];
  if (!a || ox_in_ints(x, 1, "K", kv, 1) < 0) return -1;
  int r = a->type.rank;
  int64_t ax, K = kv[0];
  if (ox_axis(x, ox_attr_int(x, "axis", -1), r, &ax) != 0) return -1;
  if (K < 1 || K > 64) return ox_unsup(x, "K = %lld (1 to 64 supported)", (long long)K);
  if (!gc_type_is_concrete(&a->type)) return ox_unsup(x, "symbolic dims; bind them first");
  gc_dtype t = a->type.dtype;
  if (t == GRAPHC_DTYPE_BOOL) return ox_unsup(x, "bool input");
  int largest = (int)ox_attr_int(x, "largest", 1);
  gc_value *key = largest ? a : t == GRAPHC_DTYPE_U8 ? ox_cbin(x, GC_OP_SUB, 255, a) : ox_un(x, GC_OP_NEG, a);
  double lowest = gc_dtype_is_float(t) ? -INFINITY : t == GRAPHC_DTYPE_I8 ? -128 : t == GRAPHC_DTYPE_U8 ? 0
                : t == GRAPHC_DTYPE_I32 ? -2147483648.0 : -9223372036854775808.0;
  gc_value *io = ox_iota(x, r, a->type.dims, (int)ax, GRAPHC_DTYPE_I64), *taken = NULL;
  gc_value **vals = ox_alloc(x, (size_t)K * sizeof *vals), **idxs = ox_alloc(x, (size_t)K * sizeof *idxs);
  if (!vals || !idxs) return -1;
  ox_attrs am = {0};
  at_int(x, &am, "axis", ax);
  at_bool(x, &am, "keepdims", 1);
  for (int64_t j = 0; j < K; j++) {
    gc_value *cur = taken ? ox_sel(x, taken, ox_scalar(x, t, lowest), key) : key;
    idxs[j] = ox_op(x, GC_OP_ARGMAX, 1, &cur, &am);
    vals[j] = ox_take_elements(x, a, idxs[j], (int)ax);
    gc_value *hit = ox_bin(x, GC_OP_EQ, io, idxs[j]);
    taken = taken ? ox_bin(x, GC_OP_OR, taken, hit) : hit;
    if (!vals[j] || !taken) return -1;
  }
  ox_attrs ca = {0};
  at_int(x, &ca, "axis", ax);
  x->out_v[1] = K == 1 ? idxs[0] : ox_op(x, GC_OP_CONCAT, (int)K, idxs, &ca);
  return out1(x, K == 1 ? vals[0] : ox_op(x, GC_OP_CONCAT, (int)K, vals, &ca));
}

/* GatherND with batch_dims: one flat gather at row-major offsets. */
int ox_gather_nd(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *idx = ox_in(x, 1);
  if (!a || !idx) return -1;
  int r = a->type.rank, q = idx->type.rank, b = (int)ox_attr_int(x, "batch_dims", 0);
  if (q < 1) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "bad indices shape"); /* scalar: fuzz_onnx */
  int64_t k = idx->type.dims[q - 1], *d = a->type.dims;
  if (b < 0 || b + k > r || b >= q) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "bad indices shape");
  /* index grid: idx without its last dim */
  int64_t g[GC_MAX_RANK];
  for (int i = 0; i < q - 1; i++) g[i] = idx->type.dims[i];
  gc_value *ii = ox_cast(x, idx, GRAPHC_DTYPE_I64), *flat = NULL;
  int64_t stride = 1;
  for (int j = (int)k - 1; j >= -b; j--) { /* data dims b..b+k-1 from idx, batch dims from iota */
    int dd = b + j;
    gc_value *part;
    if (j >= 0) {
      int64_t st[GC_MAX_RANK] = {0}, en[GC_MAX_RANK];
      memcpy(en, idx->type.dims, sizeof en);
      st[q - 1] = j, en[q - 1] = j + 1;
      ox_attrs sa = {0};
      at_ints(x, &sa, "start", st, q);
      at_ints(x, &sa, "end", en, q);
      part = ox_reshape(x, ox_op(x, GC_OP_SLICE, 1, &ii, &sa), q - 1, g);
      part = ox_sel(x, ox_binc(x, GC_OP_LT, part, 0), ox_bin(x, GC_OP_ADD, part, ox_dim_value(x, d[dd])),
                    part);
    } else {
      part = ox_iota(x, q - 1, g, dd, GRAPHC_DTYPE_I64);
    }
    if (stride != 1) part = ox_bin(x, GC_OP_MUL, part, ox_dim_value(x, stride)); /* dims may be symbols */
    flat = flat ? ox_bin(x, GC_OP_ADD, flat, part) : part;
    if ((stride = ox_dim_mul(x, stride, d[dd])) < 0) return ox_unsup(x, "the data's size overflows");
  }
  int64_t fd[GC_MAX_RANK], od[GC_MAX_RANK];
  int nf = 0, no = 0;
  fd[nf++] = stride;
  for (int i = b + (int)k; i < r; i++) fd[nf++] = d[i];
  for (int i = 0; i < q - 1; i++) od[no++] = g[i];
  for (int i = b + (int)k; i < r; i++) od[no++] = d[i];
  if (no > GC_MAX_RANK) return ox_unsup(x, "rank %d", no);
  if (q == 1) flat = ox_reshape(x, flat, 0, NULL);
  ox_attrs at = {0};
  at_int(x, &at, "axis", 0);
  gc_value *in[2] = {ox_reshape(x, a, nf, fd), flat};
  return out1(x, ox_reshape(x, ox_op(x, GC_OP_GATHER, 2, in, &at), no, od));
}

/* ReverseSequence: reverse the first len[b] steps of each batch entry. */
int ox_reverse_sequence(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *len = ox_cast(x, ox_in(x, 1), GRAPHC_DTYPE_I64);
  if (!a || !len) return -1;
  int r = a->type.rank;
  int64_t ta, ba, bd[GC_MAX_RANK];
  if (ox_axis(x, ox_attr_int(x, "time_axis", 0), r, &ta) != 0 ||
      ox_axis(x, ox_attr_int(x, "batch_axis", 1), r, &ba) != 0)
    return -1;
  for (int i = 0; i < r; i++) bd[i] = i == ba ? a->type.dims[ba] : 1;
  gc_value *l = ox_reshape(x, len, r, bd), *t = ox_iota(x, r, a->type.dims, (int)ta, GRAPHC_DTYPE_I64);
  gc_value *rev = ox_bin(x, GC_OP_SUB, ox_binc(x, GC_OP_SUB, l, 1), t);
  return out1(x, ox_take_elements(x, a, ox_sel(x, ox_bin(x, GC_OP_LT, t, l), rev, t), (int)ta));
}

/* LRN across channels: x / (bias + alpha/size * sum of squares in the window)^beta. */
int ox_lrn(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  if (a->type.rank < 3 || !gc_type_is_concrete(&a->type) || !gc_dtype_is_float(a->type.dtype))
    return ox_unsup(x, "needs a float input of rank >= 3 with concrete dims");
  int64_t size = ox_attr_int(x, "size", 1), *d = a->type.dims, hw = 1;
  double alpha = ox_attr_float(x, "alpha", 1e-4), beta = ox_attr_float(x, "beta", 0.75);
  double bias = ox_attr_float(x, "bias", 1.0);
  for (int i = 2; i < a->type.rank; i++) hw *= d[i];
  int64_t v4[4] = {d[0], 1, d[1], hw}, pads[8] = {0, 0, (size - 1) / 2, 0, 0, 0, size / 2, 0};
  ox_attrs pa = {0};
  at_ints(x, &pa, "pads", pads, 8);
  gc_value *sq = ox_reshape(x, ox_bin(x, GC_OP_MUL, a, a), 4, v4);
  sq = ox_op(x, GC_OP_PAD, 1, &sq, &pa);
  int64_t k[2] = {size, 1}, one[2] = {1, 1}, z[4] = {0, 0, 0, 0};
  ox_attrs at = {0};
  at_ints(x, &at, "kernel", k, 2);
  at_ints(x, &at, "stride", one, 2);
  at_ints(x, &at, "padding", z, 4);
  gc_value *sum = ox_reshape(x, ox_op(x, GC_OP_AVG_POOL2D, 1, &sq, &at), a->type.rank, d);
  gc_value *den = ox_binc(x, GC_OP_ADD, ox_binc(x, GC_OP_MUL, sum, alpha), bias);
  den = ox_bin(x, GC_OP_POW, den, ox_scalar(x, a->type.dtype, beta));
  return out1(x, ox_bin(x, GC_OP_DIV, a, den));
}

/* ---- scatter ----------------------------------------------------------------------------------------- */

/* Scatter rows of upd [M, S] into data [N, S] at row positions pos [M]: a
 * match matrix [N, M] (so O(N*M) work), then a matmul for the sums or a
 * masked reduction for max / min. `red`: none add max min. */
static gc_value *scatter_rows(ox *x, gc_value *data, gc_value *pos, gc_value *upd, const char *red) {
  if (!data || !pos || !upd) return NULL;
  int64_t N = data->type.dims[0], M = pos->type.dims[0], S = data->type.dims[1];
  if ((double)N * (double)M > 1e8) {
    ox_unsup(x, "scatter of %lld updates into %lld rows (too large for the match matrix)", (long long)M, (long long)N);
    return NULL;
  }
  gc_dtype t = data->type.dtype;
  int64_t n1[2] = {N, 1}, m1[2] = {1, M};
  gc_value *match = ox_bin(x, GC_OP_EQ, ox_iota(x, 2, n1, 0, GRAPHC_DTYPE_I64), ox_reshape(x, pos, 2, m1));
  gc_value *hit = ox_reduce(x, GC_OP_REDUCE_MAX, ox_cast(x, match, GRAPHC_DTYPE_U8), (int64_t[]){1}, 1, 1);
  hit = ox_binc(x, GC_OP_NE, hit, 0);
  gc_value *val;
  if (strcmp(red, "none") == 0 || strcmp(red, "add") == 0) {
    val = ox_bin(x, GC_OP_MATMUL, ox_cast(x, match, t), upd);
    if (red[0] == 'a') val = ox_bin(x, GC_OP_ADD, val, data);
  } else if (strcmp(red, "max") == 0 || strcmp(red, "min") == 0) {
    int mx = red[1] == 'a';
    double lo = gc_dtype_is_float(t) ? (mx ? -INFINITY : INFINITY) : 0;
    if (!gc_dtype_is_float(t)) {
      ox_unsup(x, "reduction '%s' on integers", red);
      return NULL;
    }
    int64_t nm1[3] = {N, M, 1}, ms[3] = {1, M, S};
    gc_value *cand = ox_sel(x, ox_reshape(x, match, 3, nm1), ox_reshape(x, upd, 3, ms), ox_scalar(x, t, lo));
    val = ox_reduce(x, mx ? GC_OP_REDUCE_MAX : GC_OP_REDUCE_MIN, cand, (int64_t[]){1}, 1, 0);
    val = ox_bin(x, mx ? GC_OP_MAXIMUM : GC_OP_MINIMUM, val, data);
  } else {
    ox_unsup(x, "reduction '%s'", red);
    return NULL;
  }
  return ox_sel(x, hit, val, data);
}

/* Bool data scatters as u8. */
static gc_value *scatter_cast(ox *x, gc_value *v) {
  return v && v->type.dtype == GRAPHC_DTYPE_BOOL ? ox_cast(x, v, GRAPHC_DTYPE_U8) : v;
}

/* ScatterElements (and the old Scatter): positions as for GatherElements. */
int ox_scatter_elements(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *idx = ox_in(x, 1), *u = ox_in(x, 2);
  if (!a || !idx || !u) return -1;
  int64_t ax;
  if (ox_axis(x, ox_attr_int(x, "axis", 0), a->type.rank, &ax) != 0) return -1;
  int64_t N = gc_type_numel(&a->type), M = gc_type_numel(&idx->type);
  int64_t n1[2] = {N, 1}, m1[2] = {M, 1};
  gc_value *pos = ox_reshape(x, elem_offsets(x, &a->type, idx, (int)ax), 1, &M);
  gc_dtype t = a->type.dtype;
  gc_value *y = scatter_rows(x, ox_reshape(x, scatter_cast(x, a), 2, n1), pos,
                             ox_reshape(x, scatter_cast(x, u), 2, m1), ox_attr_str(x, "reduction", "none"));
  return out1(x, ox_cast(x, ox_reshape(x, y, a->type.rank, a->type.dims), t));
}

/* ScatterND: indices [..., k] address slices of the last r-k dims. */
int ox_scatter_nd(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *idx = ox_in(x, 1), *u = ox_in(x, 2);
  if (!a || !idx || !u) return -1;
  int r = a->type.rank, q = idx->type.rank;
  if (q < 1) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "indices must have rank 1 or more");
  int64_t k = idx->type.dims[q - 1], *d = a->type.dims, Nk = 1, S = 1, M = 1;
  if (k > r) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "indices address more dims than the data has");
  for (int i = 0; i < r; i++) *(i < k ? &Nk : &S) *= d[i];
  for (int i = 0; i < q - 1; i++) M *= idx->type.dims[i];
  int64_t i2[2] = {M, k};
  gc_value *ii = ox_reshape(x, ox_cast(x, idx, GRAPHC_DTYPE_I64), 2, i2), *pos = NULL;
  int64_t stride = 1;
  for (int j = (int)k - 1; j >= 0; j--) {
    int64_t st[2] = {0, j}, en[2] = {M, j + 1};
    ox_attrs sa = {0};
    at_ints(x, &sa, "start", st, 2);
    at_ints(x, &sa, "end", en, 2);
    gc_value *p = ox_reshape(x, ox_op(x, GC_OP_SLICE, 1, &ii, &sa), 1, &M);
    p = ox_sel(x, ox_binc(x, GC_OP_LT, p, 0), ox_binc(x, GC_OP_ADD, p, (double)d[j]), p);
    if (stride != 1) p = ox_binc(x, GC_OP_MUL, p, (double)stride);
    pos = pos ? ox_bin(x, GC_OP_ADD, pos, p) : p;
    stride *= d[j];
  }
  int64_t ns[2] = {Nk, S}, ms[2] = {M, S};
  gc_dtype t = a->type.dtype;
  gc_value *y = scatter_rows(x, ox_reshape(x, scatter_cast(x, a), 2, ns), pos,
                             ox_reshape(x, scatter_cast(x, u), 2, ms), ox_attr_str(x, "reduction", "none"));
  return out1(x, ox_cast(x, ox_reshape(x, y, r, d), t));
}
