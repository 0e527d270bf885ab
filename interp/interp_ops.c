/* interp_ops.c - interpreter kernels for sources, elementwise ops and data
 * movement. Float math in double, rounded once on store; integer math exact in
 * int64 with two's-complement wraparound. Kernels trust the verifier for
 * shapes and read every size from the values' types.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

/* Bytes per element of a tensor. */
static size_t esize(const itensor *t) { return graphc_dtype_size(t->type->dtype); }

/* ---- sources ------------------------------------------------------------------- */

/* state: the result borrows the state's memory (the caller's, by name). */
graphc_status_t interp_state(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  (void)in;
  const char *name = gc_op_attr_str(op, "name", "");
  size_t need = (size_t)out[0].numel * esize(&out[0]);
  for (int i = 0; i < cx->n_states; i++) {
    if (strcmp(cx->states[i].name, name) != 0) continue;
    if (cx->states[i].nbytes != need) {
      gc_error_at(cx->d, GRAPHC_STATUS_INVALID_ARGUMENT, op->loc,
                  "state \"%s\" has %zu bytes of memory; it needs %zu", name, cx->states[i].nbytes, need);
      return GRAPHC_STATUS_INVALID_ARGUMENT;
    }
    out[0].data = cx->states[i].data;
    return GRAPHC_STATUS_OK;
  }
  gc_error_at(cx->d, GRAPHC_STATUS_INVALID_ARGUMENT, op->loc, "no memory for state \"%s\"", name);
  return GRAPHC_STATUS_INVALID_ARGUMENT;
}

/* cache_write: upd[.., s, ..] of row b into the state at position pos[b] + s on the
 * axis, in place (the result is the state); positions outside [0, T) are dropped. */
graphc_status_t interp_cache_write(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  (void)cx;
  const gc_type *st = in[0].type, *ut = in[1].type, *pt = in[2].type;
  int r = st->rank, axis = interp_axis(gc_op_attr_int(op, "axis", 0), r);
  size_t es = esize(&in[0]);
  int64_t sst[GC_MAX_RANK], idx[GC_MAX_RANK] = {0};
  interp_strides(st, sst);
  out[0].data = in[0].data;
  for (int64_t e = 0; e < in[1].numel; e++) {
    int64_t rem = e;
    for (int i = r - 1; i >= 0; i--) {
      idx[i] = rem % ut->dims[i];
      rem /= ut->dims[i];
    }
    int64_t p = gc_load_i64(in[2].data, pt->dtype, pt->rank ? idx[0] : 0);
    int64_t t = p + idx[axis];
    if (t < 0 || t >= st->dims[axis]) continue;
    int64_t off = 0;
    for (int i = 0; i < r; i++) off += (i == axis ? t : idx[i]) * sst[i];
    memcpy((char *)out[0].data + (size_t)off * es, (const char *)in[1].data + (size_t)e * es, es);
  }
  return GRAPHC_STATUS_OK;
}

/* param: the result borrows the weights tensor named by the `name` attribute; with
 * `from` it is that tensor converted to the param's dtype (a buffer the run owns). */
graphc_status_t interp_param(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const char *name = gc_op_attr_str(op, "name", NULL);
  const gc_st_tensor *t = name && cx->weights ? gc_safetensors_find(cx->weights, name) : NULL;
  if (!name) {
    gc_error_at(cx->d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc, "param has no 'name' attribute");
    return GRAPHC_STATUS_WEIGHTS_ERROR;
  }
  if (!t) {
    gc_error_at(cx->d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc,
                cx->weights ? "weights file has no tensor \"%s\""
                            : "no weights loaded for param \"%s\"",
                name);
    return GRAPHC_STATUS_WEIGHTS_ERROR;
  }
  gc_dtype want = gc_param_file_dtype(op);
  size_t need = (size_t)out[0].numel * graphc_dtype_size(want);
  if (t->dtype != want || t->nbytes != need) {
    gc_error_at(cx->d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc,
                "weights tensor \"%s\" is %s with %zu bytes; param needs %s with %zu bytes", name,
                graphc_dtype_name(t->dtype), t->nbytes, graphc_dtype_name(want), need);
    return GRAPHC_STATUS_WEIGHTS_ERROR;
  }
  if (want == out[0].type->dtype) {
    out[0].data = (void *)t->data;
    return GRAPHC_STATUS_OK;
  }
  /* `from`: converted here, once per run, into a buffer the run owns (interp.c: borrows_result) */
  out[0].data = interp_alloc(cx, op, (size_t)out[0].numel * esize(&out[0]), 1);
  if (!out[0].data) return GRAPHC_STATUS_OUT_OF_MEMORY;
  gc_convert_floats(out[0].data, out[0].type->dtype, t->data, want, out[0].numel, 1);
  return GRAPHC_STATUS_OK;
}

/* Count the scalars of a (possibly nested) list attribute, storing pointers to
 * them in order when `items` is not NULL. */
static int64_t flatten(const gc_attr *a, const gc_attr **items, int64_t n) {
  if (a->kind != GC_ATTR_LIST) {
    if (items) items[n] = a;
    return n + 1;
  }
  for (int i = 0; i < a->u.list.n; i++) n = flatten(&a->u.list.items[i], items, n);
  return n;
}

/* const: a scalar broadcast to the shape, or a flat list in row-major order. */
graphc_status_t interp_const_(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_attr *v = gc_op_attr(op, "value");
  gc_dtype t = out[0].type->dtype;
  if (!v) {
    gc_error_at(cx->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc, "const has no 'value' attribute");
    return GRAPHC_STATUS_VERIFY_ERROR;
  }
  if (v->kind != GC_ATTR_LIST) {
    for (int64_t i = 0; i < out[0].numel; i++) interp_store_attr(out[0].data, t, i, v);
    return GRAPHC_STATUS_OK;
  }
  int64_t n = flatten(v, NULL, 0);
  if (n != out[0].numel && n != 1) {
    gc_error_at(cx->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                "const has %lld values for %lld elements", (long long)n, (long long)out[0].numel);
    return GRAPHC_STATUS_VERIFY_ERROR;
  }
  const gc_attr **items = interp_alloc(cx, op, (size_t)n, sizeof *items);
  if (!items) return GRAPHC_STATUS_OUT_OF_MEMORY;
  flatten(v, items, 0);
  for (int64_t i = 0; i < out[0].numel; i++)
    interp_store_attr(out[0].data, t, i, items[n == 1 ? 0 : i]);
  free(items);
  return GRAPHC_STATUS_OK;
}

/* iota: each element is its index along `axis`. */
graphc_status_t interp_iota(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *ty = out[0].type;
  int64_t strides[GC_MAX_RANK];
  interp_strides(ty, strides);
  int axis = interp_axis(gc_op_attr_int(op, "axis", 0), ty->rank);
  for (int64_t i = 0; i < out[0].numel; i++) {
    int64_t k = ty->rank ? (i / strides[axis]) % ty->dims[axis] : 0;
    gc_store_i64(out[0].data, ty->dtype, i, k);
  }
  return GRAPHC_STATUS_OK;
}

/* ---- unary elementwise ----------------------------------------------------------- */

/* One float unary op in double. */
static double unary_f(gc_opcode opc, double x, int gelu_tanh) {
  switch (opc) {
    case GC_OP_NEG: return -x;
    case GC_OP_ABS: return fabs(x);
    case GC_OP_RELU: return x > 0 ? x : 0.0;
    case GC_OP_EXP: return exp(x);
    case GC_OP_LOG: return log(x);
    case GC_OP_SQRT: return sqrt(x);
    case GC_OP_RSQRT: return 1.0 / sqrt(x);
    case GC_OP_TANH: return tanh(x);
    case GC_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case GC_OP_SILU: return x * (1.0 / (1.0 + exp(-x)));
    case GC_OP_GELU:
      if (gelu_tanh)
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1.0 + erf(x / M_SQRT2));
    case GC_OP_ERF: return erf(x);
    case GC_OP_SIN: return sin(x);
    case GC_OP_COS: return cos(x);
    case GC_OP_FLOOR: return floor(x);
    case GC_OP_CEIL: return ceil(x);
    default: GC_ASSERT(!"not a float unary op"); return 0;
  }
}

/* One integer (or bool) unary op, exact; negation wraps. */
static int64_t unary_i(gc_opcode opc, int64_t x) {
  switch (opc) {
    case GC_OP_NEG: return (int64_t)(UINT64_C(0) - (uint64_t)x);
    case GC_OP_ABS: return x < 0 ? (int64_t)(UINT64_C(0) - (uint64_t)x) : x;
    case GC_OP_RELU: return x > 0 ? x : 0;
    case GC_OP_NOT: return !x;
    default: GC_ASSERT(!"not an integer unary op"); return 0;
  }
}

/* clamp: y = minimum(maximum(x, min), max), either bound optional. */
static graphc_status_t clamp(const gc_op *op, const itensor *in, itensor *out) {
  const gc_attr *lo = gc_op_attr(op, "min"), *hi = gc_op_attr(op, "max");
  gc_dtype t = in[0].type->dtype;
  if (gc_dtype_is_float(t)) {
    for (int64_t i = 0; i < in[0].numel; i++) {
      double x = gc_load_f64(in[0].data, t, i);
      if (lo) x = interp_fmax(x, gc_attr_number(lo));
      if (hi) x = interp_fmin(x, gc_attr_number(hi));
      gc_store_f64(out[0].data, t, i, x);
    }
    return GRAPHC_STATUS_OK;
  }
  /* Integer bounds: an INT attribute is exact; a float one converts like cast. */
  int64_t l = INT64_MIN, h = INT64_MAX;
  if (lo)
    l = lo->kind == GC_ATTR_INT ? lo->u.i
                                : gc_f64_to_int_sat(gc_attr_number(lo), INT64_MIN, INT64_MAX);
  if (hi)
    h = hi->kind == GC_ATTR_INT ? hi->u.i
                                : gc_f64_to_int_sat(gc_attr_number(hi), INT64_MIN, INT64_MAX);
  for (int64_t i = 0; i < in[0].numel; i++) {
    int64_t x = gc_load_i64(in[0].data, t, i);
    if (x < l) x = l;
    if (x > h) x = h;
    gc_store_i64(out[0].data, t, i, x);
  }
  return GRAPHC_STATUS_OK;
}

/* All one-operand elementwise ops, cast and clamp included. */
graphc_status_t interp_unary(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  gc_dtype ti = in[0].type->dtype, to = out[0].type->dtype;
  if (op->opcode == GC_OP_CLAMP) return clamp(op, in, out);
  if (op->opcode == GC_OP_CAST) {
    /* Floats go through double (store truncates/saturates/rounds once); ints
     * and bools stay exact integers (store wraps, tests != 0, or rounds once). */
    int sat = gc_op_attr_bool(op, "saturate", 1);
    if (gc_dtype_is_float(ti) && gc_dtype_is_float(to)) {
      gc_convert_floats(out[0].data, to, in[0].data, ti, in[0].numel, sat);
      return GRAPHC_STATUS_OK;
    }
    for (int64_t i = 0; i < in[0].numel; i++) {
      if (gc_dtype_is_f8(to))
        ((uint8_t *)out[0].data)[i] = gc_f64_to_f8(to, (double)gc_load_i64(in[0].data, ti, i), sat);
      else if (gc_dtype_is_float(ti))
        gc_store_f64(out[0].data, to, i, gc_load_f64(in[0].data, ti, i));
      else
        gc_store_i64(out[0].data, to, i, gc_load_i64(in[0].data, ti, i));
    }
    return GRAPHC_STATUS_OK;
  }
  if (gc_dtype_is_float(ti)) {
    const char *approx = gc_op_attr_str(op, "approximate", "none");
    int gelu_tanh = strcmp(approx, "tanh") == 0;
    for (int64_t i = 0; i < in[0].numel; i++)
      gc_store_f64(out[0].data, to, i, unary_f(op->opcode, gc_load_f64(in[0].data, ti, i), gelu_tanh));
  } else {
    for (int64_t i = 0; i < in[0].numel; i++)
      gc_store_i64(out[0].data, to, i, unary_i(op->opcode, gc_load_i64(in[0].data, ti, i)));
  }
  return GRAPHC_STATUS_OK;
}

/* ---- binary elementwise ------------------------------------------------------------- */

/* One float binary op in double; comparisons give 0/1. */
static double binary_f(gc_opcode opc, double a, double b) {
  switch (opc) {
    case GC_OP_ADD: return a + b;
    case GC_OP_SUB: return a - b;
    case GC_OP_MUL: return a * b;
    case GC_OP_DIV: return a / b;
    case GC_OP_POW: return pow(a, b);
    case GC_OP_MAXIMUM: return interp_fmax(a, b);
    case GC_OP_MINIMUM: return interp_fmin(a, b);
    case GC_OP_EQ: return a == b;
    case GC_OP_NE: return a != b;
    case GC_OP_LT: return a < b;
    case GC_OP_LE: return a <= b;
    case GC_OP_GT: return a > b;
    case GC_OP_GE: return a >= b;
    default: GC_ASSERT(!"not a float binary op"); return 0;
  }
}

/* One integer/bool binary op, exact; add/sub/mul wrap, x/0 = 0. */
static int64_t binary_i(gc_opcode opc, int64_t a, int64_t b) {
  switch (opc) {
    case GC_OP_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case GC_OP_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case GC_OP_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case GC_OP_DIV:
      if (b == 0) return 0;
      if (a == INT64_MIN && b == -1) return INT64_MIN; /* wraps */
      return a / b;                                    /* C truncates toward zero */
    case GC_OP_MAXIMUM: return a > b ? a : b;
    case GC_OP_MINIMUM: return a < b ? a : b;
    case GC_OP_EQ: return a == b;
    case GC_OP_NE: return a != b;
    case GC_OP_LT: return a < b;
    case GC_OP_LE: return a <= b;
    case GC_OP_GT: return a > b;
    case GC_OP_GE: return a >= b;
    case GC_OP_AND: return a && b;
    case GC_OP_OR: return a || b;
    default: GC_ASSERT(!"not an integer binary op"); return 0;
  }
}

/* Two-operand elementwise ops with numpy broadcasting. */
graphc_status_t interp_binary(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *ot = out[0].type;
  gc_dtype ti = in[0].type->dtype;
  int64_t strides[2][GC_MAX_RANK], idx[GC_MAX_RANK] = {0}, offs[2] = {0, 0}, i = 0;
  interp_bcast_strides(in[0].type, ot, strides[0]);
  interp_bcast_strides(in[1].type, ot, strides[1]);
  do {
    if (op->opcode == GC_OP_HASH_UNIFORM) {
      gc_store_f64(out[0].data, ot->dtype, i,
                   gc_hash_uniform(gc_load_i64(in[0].data, ti, offs[0]),
                                   gc_load_i64(in[1].data, in[1].type->dtype, offs[1])));
    } else if (gc_dtype_is_float(ti)) {
      double r = binary_f(op->opcode, gc_load_f64(in[0].data, ti, offs[0]),
                          gc_load_f64(in[1].data, ti, offs[1]));
      gc_store_f64(out[0].data, ot->dtype, i, r);
    } else {
      int64_t r = binary_i(op->opcode, gc_load_i64(in[0].data, ti, offs[0]),
                           gc_load_i64(in[1].data, ti, offs[1]));
      gc_store_i64(out[0].data, ot->dtype, i, r);
    }
    i++;
  } while (interp_next(ot->rank, ot->dims, idx, 2, offs, strides));
  return GRAPHC_STATUS_OK;
}

/* select(cond, a, b): a where cond else b, all three broadcast together. */
graphc_status_t interp_select(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *ot = out[0].type;
  size_t es = esize(&out[0]);
  int64_t strides[3][GC_MAX_RANK], idx[GC_MAX_RANK] = {0}, offs[3] = {0, 0, 0}, i = 0;
  for (int k = 0; k < 3; k++) interp_bcast_strides(in[k].type, ot, strides[k]);
  do {
    int c = gc_load_i64(in[0].data, in[0].type->dtype, offs[0]) != 0;
    const unsigned char *src = c ? (const unsigned char *)in[1].data + offs[1] * es
                                 : (const unsigned char *)in[2].data + offs[2] * es;
    memcpy((unsigned char *)out[0].data + i * es, src, es);
    i++;
  } while (interp_next(ot->rank, ot->dims, idx, 3, offs, strides));
  return GRAPHC_STATUS_OK;
}

/* ---- data movement --------------------------------------------------------------------- */

/* Copy elements from `in` at offsets walked by `strides` (starting at `start`)
 * into `out` in row-major order of out's dims. */
static void gather_strided(const itensor *in, itensor *out, int64_t start, int64_t *strides) {
  const gc_type *ot = out[0].type;
  size_t es = esize(in);
  int64_t st[1][GC_MAX_RANK], idx[GC_MAX_RANK] = {0}, off = start, i = 0;
  memcpy(st[0], strides, sizeof st[0]);
  do {
    memcpy((unsigned char *)out->data + i * es, (const unsigned char *)in->data + off * es, es);
    i++;
  } while (interp_next(ot->rank, ot->dims, idx, 1, &off, st));
}

/* reshape: the same elements in the same order. */
graphc_status_t interp_reshape(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  memcpy(out[0].data, in[0].data, (size_t)in[0].numel * esize(&in[0]));
  return GRAPHC_STATUS_OK;
}

/* transpose: out.dims[k] = in.dims[perm[k]]. */
graphc_status_t interp_transpose(interp_ctx *cx, const gc_op *op, const itensor *in,
                                 itensor *out) {
  int64_t perm[GC_MAX_RANK], in_st[GC_MAX_RANK], st[GC_MAX_RANK];
  int r = in[0].type->rank;
  const gc_attr *a = gc_op_attr(op, "perm");
  int n = a ? gc_attr_ints(a, perm, GC_MAX_RANK) : -1;
  GC_ASSERT(n == r);  /* the verifier checked perm */
  interp_strides(in[0].type, in_st);
  for (int k = 0; k < r; k++) st[k] = in_st[perm[k]];
  gather_strided(&in[0], &out[0], 0, st);
  return GRAPHC_STATUS_OK;
}

/* broadcast: numpy broadcast to the result shape. */
graphc_status_t interp_broadcast(interp_ctx *cx, const gc_op *op, const itensor *in,
                                 itensor *out) {
  int64_t st[GC_MAX_RANK];
  interp_bcast_strides(in[0].type, out[0].type, st);
  gather_strided(&in[0], &out[0], 0, st);
  return GRAPHC_STATUS_OK;
}

/* Product of dims [from, to) of a type. */
static int64_t dims_prod(const gc_type *t, int from, int to) {
  int64_t p = 1;
  for (int k = from; k < to; k++) p *= t->dims[k];
  return p;
}

/* concat: operands laid side by side along `axis`. */
graphc_status_t interp_concat(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *ot = out[0].type;
  int axis = interp_axis(gc_op_attr_int(op, "axis", 0), ot->rank);
  size_t es = esize(&out[0]);
  int64_t outer = dims_prod(ot, 0, axis), inner = dims_prod(ot, axis + 1, ot->rank);
  unsigned char *dst = out[0].data;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < op->n_operands; k++) {
      size_t blk = (size_t)(in[k].type->dims[axis] * inner) * es;
      memcpy(dst, (const unsigned char *)in[k].data + (size_t)o * blk, blk);
      dst += blk;
    }
  return GRAPHC_STATUS_OK;
}

/* split: the inverse of concat, one result per size. */
graphc_status_t interp_split(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *it = in[0].type;
  int axis = interp_axis(gc_op_attr_int(op, "axis", 0), it->rank);
  size_t es = esize(&in[0]);
  int64_t outer = dims_prod(it, 0, axis), inner = dims_prod(it, axis + 1, it->rank);
  const unsigned char *src = in[0].data;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < op->n_results; k++) {
      size_t blk = (size_t)(out[k].type->dims[axis] * inner) * es;
      memcpy((unsigned char *)out[k].data + (size_t)o * blk, src, blk);
      src += blk;
    }
  return GRAPHC_STATUS_OK;
}

/* slice: start/end count from the end when negative, then clamp to [0, dim];
 * out[i] = in[start + i*step] per dim (sizes come from the result type). */
graphc_status_t interp_slice(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *it = in[0].type;
  int r = it->rank;
  int64_t start[GC_MAX_RANK], step[GC_MAX_RANK], in_st[GC_MAX_RANK], st[GC_MAX_RANK], off = 0;
  const gc_attr *sa = gc_op_attr(op, "start"), *pa = gc_op_attr(op, "step");
  for (int k = 0; k < r; k++) step[k] = 1;
  int ns = sa ? gc_attr_ints(sa, start, GC_MAX_RANK) : -1;
  int np = pa ? gc_attr_ints(pa, step, GC_MAX_RANK) : r;
  GC_ASSERT(ns == r && np == r);  /* the verifier checked start/step */
  interp_strides(it, in_st);
  for (int k = 0; k < r; k++) {
    int64_t s = start[k] < 0 ? start[k] + it->dims[k] : start[k];
    s = s < 0 ? 0 : s > it->dims[k] ? it->dims[k] : s;
    off += s * in_st[k];
    st[k] = step[k] * in_st[k];
  }
  gather_strided(&in[0], &out[0], off, st);
  return GRAPHC_STATUS_OK;
}

/* pad: the input placed at offset begin_k in a tensor filled with `value`. */
graphc_status_t interp_pad(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *it = in[0].type, *ot = out[0].type;
  int64_t pads[2 * GC_MAX_RANK], out_st[GC_MAX_RANK], st[1][GC_MAX_RANK], idx[GC_MAX_RANK] = {0};
  const gc_attr *pa = gc_op_attr(op, "pads"), *va = gc_op_attr(op, "value");
  int np = pa ? gc_attr_ints(pa, pads, 2 * GC_MAX_RANK) : -1;
  GC_ASSERT(np == 2 * it->rank);  /* the verifier checked pads */
  if (va)
    for (int64_t i = 0; i < out[0].numel; i++) interp_store_attr(out[0].data, ot->dtype, i, va);
  /* else: the buffer is already zero, and zero bytes are 0 in every dtype */
  interp_strides(ot, out_st);
  int64_t off = 0, i = 0;
  for (int k = 0; k < it->rank; k++) off += pads[k] * out_st[k];
  memcpy(st[0], out_st, sizeof st[0]);
  size_t es = esize(&in[0]);
  do {
    memcpy((unsigned char *)out[0].data + off * es, (const unsigned char *)in[0].data + i * es, es);
    i++;
  } while (interp_next(it->rank, it->dims, idx, 1, &off, st));
  return GRAPHC_STATUS_OK;
}

/* gather: numpy take along `axis`; negative indices count from the end, and an
 * index out of range is a run-time error at the op. */
graphc_status_t interp_gather(interp_ctx *cx, const gc_op *op, const itensor *in, itensor *out) {
  const gc_type *xt = in[0].type, *it = in[1].type;
  int axis = interp_axis(gc_op_attr_int(op, "axis", 0), xt->rank);
  int64_t dim = xt->dims[axis];
  int64_t outer = dims_prod(xt, 0, axis), inner = dims_prod(xt, axis + 1, xt->rank);
  int64_t n = in[1].numel;
  size_t es = esize(&in[0]);
  for (int64_t j = 0; j < n; j++) {
    int64_t k = gc_load_i64(in[1].data, it->dtype, j);
    if (k < -dim || k >= dim) {
      gc_error_at(cx->d, GRAPHC_STATUS_RUNTIME_ERROR, op->loc,
                  "gather index %lld is out of range for axis %d of size %lld", (long long)k,
                  axis, (long long)dim);
      return GRAPHC_STATUS_RUNTIME_ERROR;
    }
  }
  unsigned char *dst = out[0].data;
  size_t blk = (size_t)inner * es;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < n; j++) {
      int64_t k = gc_load_i64(in[1].data, it->dtype, j);
      if (k < 0) k += dim;
      memcpy(dst, (const unsigned char *)in[0].data + (size_t)((o * dim + k) * inner) * es, blk);
      dst += blk;
    }
  return GRAPHC_STATUS_OK;
}
