/* interp_nn.c - interpreter kernels for reductions, softmax, normalizations,
 * matmul, conv2d and pooling. Everything accumulates in double (int64 for
 * integer sums and products, wrapping) in plain nested loops, and rounds once
 * into the result dtype.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

/* Product of dims [from, to) of a type. */
static int64_t dims_prod(const gc_type *t, int from, int to) {
  int64_t p = 1;
  for (int k = from; k < to; k++) p *= t->dims[k];
  return p;
}

/* ---- reductions ---------------------------------------------------------------- */

/* reduce_sum/max/min/mean over `axes` (default all). keepdims does not change
 * the element order, so the result is the kept dims in row-major order. */
graphc_status_t interp_reduce(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *it = in[0].type;
  int r = it->rank, reduced[GC_MAX_RANK];
  int64_t axes[GC_MAX_RANK];
  const gc_attr *aa = gc_op_attr(op, "axes");
  for (int k = 0; k < r; k++) reduced[k] = aa == NULL;
  if (aa) {
    int n = gc_attr_ints(aa, axes, GC_MAX_RANK);
    GC_ASSERT(n >= 0);
    for (int j = 0; j < n; j++) reduced[interp_axis(axes[j], r)] = 1;
  }
  /* Strides of each input dim in the result (0 for reduced dims). */
  int64_t st[1][GC_MAX_RANK], idx[GC_MAX_RANK] = {0}, o = 0, s = 1;
  for (int k = r - 1; k >= 0; k--) {
    st[0][k] = reduced[k] ? 0 : s;
    if (!reduced[k]) s *= it->dims[k];
  }
  int64_t n_out = out[0].numel, count = in[0].numel / n_out, i = 0;
  gc_dtype t = it->dtype;
  gc_opcode opc = op->opcode;
  if (gc_dtype_is_float(t)) {
    double *acc = interp_alloc(cx, op, (size_t)n_out, sizeof *acc);
    if (!acc) return GRAPHC_STATUS_OUT_OF_MEMORY;
    double init = opc == GC_OP_REDUCE_MAX ? -INFINITY : opc == GC_OP_REDUCE_MIN ? INFINITY : 0.0;
    for (int64_t j = 0; j < n_out; j++) acc[j] = init;
    do {
      double x = gc_load_f64(in[0].data, t, i++);
      if (opc == GC_OP_REDUCE_MAX)
        acc[o] = interp_fmax(acc[o], x);
      else if (opc == GC_OP_REDUCE_MIN)
        acc[o] = interp_fmin(acc[o], x);
      else
        acc[o] += x;
    } while (interp_next(r, it->dims, idx, 1, &o, st));
    for (int64_t j = 0; j < n_out; j++)
      gc_store_f64(out[0].data, t, j, opc == GC_OP_REDUCE_MEAN ? acc[j] / (double)count : acc[j]);
    free(acc);
    return GRAPHC_STATUS_OK;
  }
  int64_t *acc = interp_alloc(cx, op, (size_t)n_out, sizeof *acc);
  if (!acc) return GRAPHC_STATUS_OUT_OF_MEMORY;
  int64_t init = opc == GC_OP_REDUCE_MAX ? INT64_MIN : opc == GC_OP_REDUCE_MIN ? INT64_MAX : 0;
  for (int64_t j = 0; j < n_out; j++) acc[j] = init;
  do {
    int64_t x = gc_load_i64(in[0].data, t, i++);
    if (opc == GC_OP_REDUCE_MAX)
      acc[o] = x > acc[o] ? x : acc[o];
    else if (opc == GC_OP_REDUCE_MIN)
      acc[o] = x < acc[o] ? x : acc[o];
    else
      acc[o] = (int64_t)((uint64_t)acc[o] + (uint64_t)x); /* wraps */
  } while (interp_next(r, it->dims, idx, 1, &o, st));
  for (int64_t j = 0; j < n_out; j++) gc_store_i64(out[0].data, t, j, acc[j]);
  free(acc);
  return GRAPHC_STATUS_OK;
}

/* argmax along `axis`: the first index of the maximum (a NaN counts as the
 * maximum, so the first NaN wins). */
graphc_status_t interp_argmax(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *it = in[0].type;
  int axis = interp_axis(gc_op_attr_int(op, "axis", -1), it->rank);
  int64_t outer = dims_prod(it, 0, axis), dim = it->dims[axis];
  int64_t inner = dims_prod(it, axis + 1, it->rank);
  gc_dtype t = it->dtype;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t r = 0; r < inner; r++) {
      int64_t best = 0, base = o * dim * inner + r;
      if (gc_dtype_is_float(t)) {
        double bv = gc_load_f64(in[0].data, t, base);
        for (int64_t j = 1; j < dim && !isnan(bv); j++) {
          double x = gc_load_f64(in[0].data, t, base + j * inner);
          if (isnan(x) || x > bv) bv = x, best = j;
        }
      } else {
        int64_t bv = gc_load_i64(in[0].data, t, base);
        for (int64_t j = 1; j < dim; j++) {
          int64_t x = gc_load_i64(in[0].data, t, base + j * inner);
          if (x > bv) bv = x, best = j;
        }
      }
      gc_store_i64(out[0].data, out[0].type->dtype, o * inner + r, best);
    }
  return GRAPHC_STATUS_OK;
}

/* ---- row-wise normalizations ----------------------------------------------------- */

/* softmax / log_softmax along `axis`, with the row maximum subtracted. */
graphc_status_t interp_softmax(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *it = in[0].type;
  int axis = interp_axis(gc_op_attr_int(op, "axis", -1), it->rank);
  int64_t outer = dims_prod(it, 0, axis), dim = it->dims[axis];
  int64_t inner = dims_prod(it, axis + 1, it->rank);
  gc_dtype t = it->dtype;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t r = 0; r < inner; r++) {
      int64_t base = o * dim * inner + r;
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < dim; j++) m = interp_fmax(m, gc_load_f64(in[0].data, t, base + j * inner));
      for (int64_t j = 0; j < dim; j++) sum += exp(gc_load_f64(in[0].data, t, base + j * inner) - m);
      for (int64_t j = 0; j < dim; j++) {
        double x = gc_load_f64(in[0].data, t, base + j * inner) - m;
        double y = op->opcode == GC_OP_LOG_SOFTMAX ? x - log(sum) : exp(x) / sum;
        gc_store_f64(out[0].data, t, base + j * inner, y);
      }
    }
  return GRAPHC_STATUS_OK;
}

/* layernorm over dims [axis, rank): (x - mean) / sqrt(var + eps) * gamma + beta
 * with the biased variance computed in a second pass. */
graphc_status_t interp_layernorm(interp_ctx *cx, const gc_op *op, const itensor *in,
                                 itensor *out) {
  const gc_type *it = in[0].type;
  int axis = interp_axis(gc_op_attr_int(op, "axis", -1), it->rank);
  double eps = gc_op_attr_float(op, "eps", 1e-5);
  int64_t n = dims_prod(it, axis, it->rank), rows = in[0].numel / n;
  gc_dtype t = it->dtype;
  for (int64_t row = 0; row < rows; row++) {
    int64_t base = row * n;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; j++) mean += gc_load_f64(in[0].data, t, base + j);
    mean /= (double)n;
    for (int64_t j = 0; j < n; j++) {
      double dx = gc_load_f64(in[0].data, t, base + j) - mean;
      var += dx * dx;
    }
    var /= (double)n;
    double inv = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < n; j++) {
      double x = gc_load_f64(in[0].data, t, base + j);
      double y = (x - mean) * inv * gc_load_f64(in[1].data, t, j) + gc_load_f64(in[2].data, t, j);
      gc_store_f64(out[0].data, t, base + j, y);
    }
  }
  return GRAPHC_STATUS_OK;
}

/* rmsnorm over the last dim: x / sqrt(mean(x^2) + eps) * gamma. */
graphc_status_t interp_rmsnorm(interp_ctx *cx, const gc_op *op, const itensor *in,
                               itensor *out) {
  const gc_type *it = in[0].type;
  double eps = gc_op_attr_float(op, "eps", 1e-6);
  int64_t n = it->rank ? it->dims[it->rank - 1] : 1, rows = in[0].numel / n;
  gc_dtype t = it->dtype;
  for (int64_t row = 0; row < rows; row++) {
    int64_t base = row * n;
    double ss = 0;
    for (int64_t j = 0; j < n; j++) {
      double x = gc_load_f64(in[0].data, t, base + j);
      ss += x * x;
    }
    double inv = 1.0 / sqrt(ss / (double)n + eps);
    for (int64_t j = 0; j < n; j++) {
      double y = gc_load_f64(in[0].data, t, base + j) * inv * gc_load_f64(in[1].data, t, j);
      gc_store_f64(out[0].data, t, base + j, y);
    }
  }
  return GRAPHC_STATUS_OK;
}

/* ---- contractions ------------------------------------------------------------------- */

/* Strides (in elements) of an operand's matrices over the result's batch dims:
 * right-aligned, 0 where the operand lacks the dim or has size 1. */
static void batch_strides(const gc_type *t, int nb, int64_t mat, int64_t *st) {
  int tb = t->rank - 2, shift = nb - tb;
  int64_t s = mat;
  for (int k = nb - 1; k >= 0; k--) {
    int j = k - shift;
    st[k] = (j < 0 || t->dims[j] == 1) ? 0 : s;
    if (j >= 0) s *= t->dims[j];
  }
}

/* Copy one operand matrix (at element offset `off`) into rows[R][K] with K
 * contiguous: element (r, k) sits at src[off + (kr ? k*R + r : r*K + k)],
 * where kr says the stored layout is [K, R]. */
static void matrix_rows_f(const itensor *t, int64_t off, int64_t R, int64_t K, int kr, double *rows) {
  for (int64_t r = 0; r < R; r++)
    for (int64_t k = 0; k < K; k++)
      rows[r * K + k] = gc_load_f64(t->data, t->type->dtype, off + (kr ? k * R + r : r * K + k));
}

/* The same for integer operands, exact. */
static void matrix_rows_i(const itensor *t, int64_t off, int64_t R, int64_t K, int kr, int64_t *rows) {
  for (int64_t r = 0; r < R; r++)
    for (int64_t k = 0; k < K; k++)
      rows[r * K + k] = gc_load_i64(t->data, t->type->dtype, off + (kr ? k * R + r : r * K + k));
}

/* matmul: batched [.., M, K] x [.., K, N] (either side optionally transposed),
 * batch dims broadcast. Per batch, A's rows and B's columns are copied into
 * K-contiguous scratch, then out[m][n] = sum over k ascending of a[m][k]*b[k][n]
 * in double (floats) or wrapping int64 (ints). */
graphc_status_t interp_matmul(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *at = in[0].type, *bt = in[1].type, *ot = out[0].type;
  int ta = gc_op_attr_bool(op, "transpose_a", 0), tb = gc_op_attr_bool(op, "transpose_b", 0);
  int nb = ot->rank - 2;
  int64_t M = ot->dims[ot->rank - 2], N = ot->dims[ot->rank - 1];
  int64_t K = ta ? at->dims[at->rank - 2] : at->dims[at->rank - 1];
  int64_t st[2][GC_MAX_RANK], idx[GC_MAX_RANK] = {0}, offs[2] = {0, 0}, c = 0;
  batch_strides(at, nb, M * K, st[0]);
  batch_strides(bt, nb, K * N, st[1]);
  int isf = gc_dtype_is_float(at->dtype);
  size_t es = isf ? sizeof(double) : sizeof(int64_t);
  void *arows = interp_alloc(cx, op, (size_t)(M * K), es);
  void *brows = arows ? interp_alloc(cx, op, (size_t)(N * K), es) : NULL;
  if (!brows) {
    free(arows);
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  do {
    if (isf) {
      double *a = arows, *b = brows;
      matrix_rows_f(&in[0], offs[0], M, K, ta, a);   /* a[m][k] */
      matrix_rows_f(&in[1], offs[1], N, K, !tb, b);  /* b[n][k] */
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++, c++) {
          double acc = 0;
          for (int64_t k = 0; k < K; k++) acc += a[m * K + k] * b[n * K + k];
          gc_store_f64(out[0].data, ot->dtype, c, acc);
        }
    } else {
      int64_t *a = arows, *b = brows;
      matrix_rows_i(&in[0], offs[0], M, K, ta, a);
      matrix_rows_i(&in[1], offs[1], N, K, !tb, b);
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++, c++) {
          uint64_t acc = 0;  /* wraps */
          for (int64_t k = 0; k < K; k++) acc += (uint64_t)a[m * K + k] * (uint64_t)b[n * K + k];
          gc_store_i64(out[0].data, ot->dtype, c, (int64_t)acc);
        }
    }
  } while (interp_next(nb, ot->dims, idx, 2, offs, st));
  free(arows);
  free(brows);
  return GRAPHC_STATUS_OK;
}

/* Read an ints attribute of 1 or 2 entries as a pair (default d, d). */
static void attr_pair(const gc_op *op, const char *name, int64_t d, int64_t *p) {
  int64_t v[2];
  const gc_attr *a = gc_op_attr(op, name);
  int n = a ? gc_attr_ints(a, v, 2) : 0;
  p[0] = n >= 1 ? v[0] : d;
  p[1] = n == 2 ? v[1] : n == 1 ? v[0] : d;
}

/* Read `padding` as [top, left, bottom, right] from 1, 2 or 4 entries. */
static void attr_padding(const gc_op *op, int64_t *p) {
  int64_t v[4] = {0, 0, 0, 0};
  const gc_attr *a = gc_op_attr(op, "padding");
  int n = a ? gc_attr_ints(a, v, 4) : 0;
  if (n == 1) v[1] = v[2] = v[3] = v[0];
  if (n == 2) v[2] = v[0], v[3] = v[1];
  memcpy(p, v, sizeof v);
}

/* conv2d, NCHW x OIHW, with stride, padding, dilation and groups; layout="nhwc": x
 * [N, H, W, C] and the result [N, OH, OW, O] (w still OIHW). */
graphc_status_t interp_conv2d(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *xt = in[0].type, *wt = in[1].type, *ot = out[0].type;
  int64_t stride[2], dil[2], pad[4];
  attr_pair(op, "stride", 1, stride);
  attr_pair(op, "dilation", 1, dil);
  attr_padding(op, pad);
  int64_t groups = gc_op_attr_int(op, "groups", 1);
  int nhwc = strcmp(gc_op_attr_str(op, "layout", ""), "nhwc") == 0;
  int64_t N = xt->dims[0], C = xt->dims[nhwc ? 3 : 1], H = xt->dims[nhwc ? 1 : 2], W = xt->dims[nhwc ? 2 : 3];
  int64_t O = wt->dims[0], Cg = wt->dims[1], KH = wt->dims[2], KW = wt->dims[3];
  int64_t OH = ot->dims[nhwc ? 1 : 2], OW = ot->dims[nhwc ? 2 : 3], Og = O / groups;
  /* element strides of n, c, h, w in x and in the result */
  int64_t sc = nhwc ? 1 : H * W, sh = nhwc ? W * C : W, sw = nhwc ? C : 1;
  int64_t osc = nhwc ? 1 : OH * OW, osh = nhwc ? OW * O : OW, osw = nhwc ? O : 1;
  double *x = interp_to_f64(cx, op, &in[0]);
  double *w = x ? interp_to_f64(cx, op, &in[1]) : NULL;
  if (!w) {
    free(x);
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++) {
      int64_t c0 = (o / Og) * Cg;   /* first input channel of o's group */
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = 0;
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t kh = 0; kh < KH; kh++) {
              int64_t ih = oh * stride[0] - pad[0] + kh * dil[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; kw++) {
                int64_t iw = ow * stride[1] - pad[1] + kw * dil[1];
                if (iw < 0 || iw >= W) continue;
                acc += x[n * C * H * W + (c0 + c) * sc + ih * sh + iw * sw] *
                       w[((o * Cg + c) * KH + kh) * KW + kw];
              }
            }
          gc_store_f64(out[0].data, ot->dtype, n * O * OH * OW + o * osc + oh * osh + ow * osw, acc);
        }
    }
  free(x);
  free(w);
  return GRAPHC_STATUS_OK;
}

/* im2col: out[n, (c*KH + kh)*KW + kw, oh*OW + ow] = x[n, c, ih, iw] inside the
 * input, 0 in the padding (the output buffer starts zeroed); layout="nhwc": see
 * ir/ops.def. Bytes are copied. */
graphc_status_t interp_im2col(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  (void)cx;
  const gc_type *xt = in[0].type;
  int64_t kern[2], stride[2], dil[2], pad[4];
  attr_pair(op, "kernel", 1, kern);
  attr_pair(op, "stride", 1, stride);
  attr_pair(op, "dilation", 1, dil);
  attr_padding(op, pad);
  const gc_attr *la = gc_op_attr(op, "layout");
  int nhwc = la && la->kind == GC_ATTR_STR && strcmp(la->u.s, "nhwc") == 0;
  int64_t N = xt->dims[0], C = xt->dims[nhwc ? 3 : 1], H = xt->dims[nhwc ? 1 : 2], W = xt->dims[nhwc ? 2 : 3];
  int64_t OH = (H + pad[0] + pad[2] - dil[0] * (kern[0] - 1) - 1) / stride[0] + 1;
  int64_t OW = (W + pad[1] + pad[3] - dil[1] * (kern[1] - 1) - 1) / stride[1] + 1;
  size_t es = graphc_dtype_size(xt->dtype);
  const unsigned char *x = in[0].data;
  unsigned char *o = out[0].data;
  if (nhwc) {  /* out[(n*OH + oh)*OW + ow, (kh*KW + kw)*C + c] = x[n, ih, iw, c] */
    int64_t KC = kern[0] * kern[1] * C;
    for (int64_t n = 0; n < N; n++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++)
          for (int64_t kh = 0; kh < kern[0]; kh++) {
            int64_t ih = oh * stride[0] - pad[0] + kh * dil[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < kern[1]; kw++) {
              int64_t iw = ow * stride[1] - pad[1] + kw * dil[1];
              if (iw < 0 || iw >= W) continue;
              memcpy(o + (size_t)((((n * OH + oh) * OW + ow) * KC) + (kh * kern[1] + kw) * C) * es,
                     x + (size_t)(((n * H + ih) * W + iw) * C) * es, (size_t)C * es);
            }
          }
    return GRAPHC_STATUS_OK;
  }
  int64_t row = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t kh = 0; kh < kern[0]; kh++)
        for (int64_t kw = 0; kw < kern[1]; kw++, row++)
          for (int64_t oh = 0; oh < OH; oh++) {
            int64_t ih = oh * stride[0] - pad[0] + kh * dil[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t ow = 0; ow < OW; ow++) {
              int64_t iw = ow * stride[1] - pad[1] + kw * dil[1];
              if (iw < 0 || iw >= W) continue;
              memcpy(o + (size_t)((row * OH + oh) * OW + ow) * es,
                     x + (size_t)(((n * C + c) * H + ih) * W + iw) * es, es);
            }
          }
  return GRAPHC_STATUS_OK;
}

/* max_pool2d (padding is -inf, NaN propagates) and avg_pool2d (divides by the
 * number of non-padding elements in the window); layout="nhwc": x [N, H, W, C],
 * out [N, OH, OW, C]. */
graphc_status_t interp_pool2d(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  (void)cx;
  const gc_type *xt = in[0].type, *ot = out[0].type;
  int64_t kern[2], stride[2], pad[4];
  attr_pair(op, "kernel", 1, kern);
  attr_pair(op, "stride", 0, stride);
  if (!gc_op_attr(op, "stride")) stride[0] = kern[0], stride[1] = kern[1];
  attr_padding(op, pad);
  int nhwc = strcmp(gc_op_attr_str(op, "layout", ""), "nhwc") == 0;
  int is_max = op->opcode == GC_OP_MAX_POOL2D;
  int64_t N = xt->dims[0], C = xt->dims[nhwc ? 3 : 1], H = xt->dims[nhwc ? 1 : 2], W = xt->dims[nhwc ? 2 : 3];
  int64_t OH = ot->dims[nhwc ? 1 : 2], OW = ot->dims[nhwc ? 2 : 3];
  /* element (n, c, h, w) of x, and of out, at n*sn + c*sc + h*sh + w*sw */
  int64_t sn = C * H * W, sc = nhwc ? 1 : H * W, sh = nhwc ? W * C : W, sw = nhwc ? C : 1;
  int64_t osn = C * OH * OW, osc = nhwc ? 1 : OH * OW, osh = nhwc ? OW * C : OW, osw = nhwc ? C : 1;
  gc_dtype t = xt->dtype;
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = is_max ? -INFINITY : 0.0;
          int64_t count = 0;
          for (int64_t kh = 0; kh < kern[0]; kh++) {
            int64_t ih = oh * stride[0] - pad[0] + kh;
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < kern[1]; kw++) {
              int64_t iw = ow * stride[1] - pad[1] + kw;
              if (iw < 0 || iw >= W) continue;
              double x = gc_load_f64(in[0].data, t, n * sn + c * sc + ih * sh + iw * sw);
              acc = is_max ? interp_fmax(acc, x) : acc + x;
              count++;
            }
          }
          gc_store_f64(out[0].data, t, n * osn + c * osc + oh * osh + ow * osw,
                       is_max ? acc : acc / (double)count);
        }
  return GRAPHC_STATUS_OK;
}
