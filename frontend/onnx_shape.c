/* onnx_shape.c - ONNX op mappings for data movement and shape computations:
 * Reshape Flatten Transpose Concat Slice Gather GatherElements Unsqueeze
 * Squeeze Expand Split Tile Pad DepthToSpace SpaceToDepth Trilu, and the ops
 * that produce constants from static shapes: Shape Size Range ConstantOfShape
 * EyeLike, plus OneHot.
 *
 * ONNX passes shapes, axes, starts/ends and pads as tensors; graphc wants
 * them as attributes, so they must be constants at import time (initializers,
 * Constant nodes, or anything folded from them).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_internal.h"

#define MAXL (4 * GC_MAX_RANK) /* longest int list read from a constant input */

/* Set output 0; -1 when v is NULL (its error was reported). */
static int out1(ox *x, gc_value *v) {
  x->out_v[0] = v;
  return v ? 0 : -1;
}

/* Output 0 as constant data. */
static int outk(ox *x, ox_const *k) {
  x->out_k[0] = k;
  return k ? 0 : -1;
}

/* Input 0 is an empty constant: ops on it keep a constant result. */
static ox_const *empty_in(ox *x) {
  ox_const *k = ox_in_const(x, 0);
  return k && k->numel == 0 ? k : NULL;
}

/* Reshape with ONNX's 0 (copy the input dim) and -1 (inferred) entries. */
int ox_reshape_op(ox *x, int arg) {
  gc_type t;
  int64_t s[MAXL];
  if (ox_in_type(x, 0, &t) != 0) return -1;
  int n = ox_in_dims(x, 1, "shape", s, MAXL);
  if (n < 0) return -1;
  if (n > GC_MAX_RANK) return ox_unsup(x, "rank %d; graphc supports up to %d", n, GC_MAX_RANK);
  int allowzero = (int)ox_attr_int(x, "allowzero", 0);
  int has_zero = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] == 0 && !allowzero) {
      if (i >= t.rank)
        return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "shape[%d] = 0 copies a missing dim", i);
      s[i] = t.dims[i];
    }
    if (s[i] == 0) has_zero = 1;
    if (s[i] < -1) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "shape[%d] = %lld", i, (long long)s[i]);
  }
  ox_const *e = empty_in(x);
  if (e || has_zero) {
    if (!e) return out1(x, ox_reshape(x, ox_in(x, 0), n, s));  /* an empty value (or a count error) */
    for (int i = 0; i < n; i++)
      if (s[i] < 0) s[i] = 0;
    return outk(x, ox_const_new(x, e->dtype, n, s));
  }
  return out1(x, ox_reshape(x, ox_in(x, 0), n, s));
}

/* Flatten to 2-D at `axis`. */
int ox_flatten(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  int64_t ax = ox_attr_int(x, "axis", 1);
  if (ax < 0) ax += r;
  if (ax < 0 || ax > r) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "axis out of range");
  int64_t d[2];
  for (int h = 0; h < 2; h++) { /* the product of each half; a derived symbol when symbolic */
    const gc_sym_expr *e = gc_sx_const(x->g, 1);
    for (int i = h ? (int)ax : 0; i < (h ? r : (int)ax) && e; i++)
      e = gc_sx_mul(x->g, e, gc_sx_dim(x->g, a->type.dims[i]));
    if ((d[h] = gc_sym_intern(x->g, e)) < 0)
      return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "flattening: out of memory or overflow");
  }
  return out1(x, ox_reshape(x, a, 2, d));
}

/* Transpose with perm (default: reversed). */
int ox_transpose_op(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  int64_t p[GC_MAX_RANK];
  int n = ox_attr_ints(x, "perm", p, GC_MAX_RANK);
  if (n < 0) {
    for (int i = 0; i < r; i++) p[i] = r - 1 - i;
    n = r;
  }
  if (n != r) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "perm has %d entries for rank %d", n, r);
  return out1(x, ox_transpose(x, a, p));
}

/* Concat; empty constant inputs contribute nothing and are dropped. */
int ox_concat(ox *x, int arg) {
  int n = ox_n_in(x), m = 0;
  if (n == 0)   /* found by fuzz_onnx */
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "Concat needs at least one input");
  gc_value **in = ox_alloc(x, (size_t)n * sizeof *in);
  if (!in) return -1;
  int64_t ax = ox_attr_int(x, "axis", 0);
  for (int i = 0; i < n; i++) {
    ox_const *k = ox_in_const(x, i);
    if (k && k->numel == 0) continue;
    if (!(in[m++] = ox_in(x, i))) return -1;
  }
  if (m == 0) {
    /* All empty: an empty constant whose axis is the sum (still 0 elements). */
    ox_const *k = ox_in_const(x, 0);
    int64_t d[GC_MAX_RANK];
    memcpy(d, k->dims, sizeof d);
    int64_t a;
    if (ox_axis(x, ax, k->rank, &a) != 0) return -1;
    d[a] = 0;
    for (int i = 0; i < n; i++) d[a] += ox_in_const(x, i)->dims[a];
    return outk(x, ox_const_new(x, k->dtype, k->rank, d));
  }
  if (m == 1) return out1(x, in[0]);
  int64_t a;
  if (ox_axis(x, ax, in[0]->type.rank, &a) != 0) return -1;
  ox_attrs at = {0};
  at_int(x, &at, "axis", a);
  return out1(x, ox_op(x, GC_OP_CONCAT, m, in, &at));
}

/* Index list (i64 constant) as a value: positions picked along an axis. */
static gc_value *index_list(ox *x, const int64_t *idx, int64_t n) {
  ox_const *k = ox_const_new(x, GRAPHC_DTYPE_I64, 1, &n);
  if (!k) return NULL;
  for (int64_t i = 0; i < n; i++) ox_const_seti(k, i, idx[i]);
  return ox_materialize(x, k, NULL);
}

/* gather(a, idx, axis) with a constant index list. */
static gc_value *take(ox *x, gc_value *a, int axis, const int64_t *idx, int64_t n) {
  ox_attrs at = {0};
  at_int(x, &at, "axis", axis);
  gc_value *in[2] = {a, index_list(x, idx, n)};
  return ox_op(x, GC_OP_GATHER, 2, in, &at);
}

#define TO_END (GC_DIM_SYM_BASE - 1) /* a slice end past any dim */
#define PAD_INDEX_LIMIT (INT64_C(1) << 24) /* positions of an edge / reflect / wrap padded axis */

/* Checks for a slice of a symbolic dim, or with a symbolic end: step 1 and a start >= 0
 * (graphc's slice computes the length). An end that is a base symbol slicing a
 * concrete dim D narrows the symbol's range to at most D: the model cannot run
 * past it (e.g. position_ids[:, :S] of a 512-long table), and min(S, D) is S then. */
static int slice_sym(ox *x, int64_t dim, int64_t st, int64_t en, int64_t step) {
  if (step != 1 || st < 0 || ox_is_sym(x, st))
    return ox_unsup(x, "a slice of a symbolic dim (or to a symbolic end) needs step 1 and a start >= 0");
  if (ox_is_sym(x, en) && !GC_DIM_IS_SYM(dim)) {
    int i = GC_DIM_SYM_INDEX(en);
    gc_graph *g = x->g;
    if (!g->sym_defs[i] && g->sym_hi[i] > dim) g->sym_hi[i] = dim > g->sym_lo[i] ? dim : g->sym_lo[i];
  }
  return 0;
}

/* Slice: starts/ends/axes/steps from inputs (opset >= 10) or attributes. */
int ox_slice(ox *x, int arg) {
  gc_type t;
  if (ox_in_type(x, 0, &t) != 0) return -1;
  int r = t.rank;
  int64_t st[MAXL], en[MAXL], ax[MAXL], sp[MAXL];
  int ns, ne, na = -1, np = -1;
  if (x->opset < 10) {
    ns = ox_attr_ints(x, "starts", st, MAXL);
    ne = ox_attr_ints(x, "ends", en, MAXL);
    na = ox_attr_ints(x, "axes", ax, MAXL);
  } else {
    ns = ox_in_ints(x, 1, "starts", st, MAXL);
    if (ns < 0) return -1;
    ne = ox_in_dims(x, 2, "ends", en, MAXL);
    if (ne < 0) return -1;
    if (ox_has_in(x, 3) && (na = ox_in_ints(x, 3, "axes", ax, MAXL)) < 0) return -1;
    if (ox_has_in(x, 4) && (np = ox_in_ints(x, 4, "steps", sp, MAXL)) < 0) return -1;
  }
  if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns))
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "starts, ends, axes and steps disagree in length");
  int64_t b[GC_MAX_RANK], e[GC_MAX_RANK], s[GC_MAX_RANK], cnt[GC_MAX_RANK];
  for (int i = 0; i < r; i++) b[i] = 0, e[i] = t.dims[i], s[i] = 1, cnt[i] = t.dims[i];
  int neg = 0, any = 0;
  for (int j = 0; j < ns; j++) {
    int64_t a;
    if (ox_axis(x, na >= 0 ? ax[j] : j, r, &a) != 0) return -1;
    int64_t step = np >= 0 ? sp[j] : 1, dim = t.dims[a];
    if (step == 0) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "step 0");
    if (GC_DIM_IS_SYM(dim) || ox_is_sym(x, en[j])) {
      if (slice_sym(x, dim, st[j], en[j], step) != 0) return -1;
      b[a] = st[j], s[a] = 1, cnt[a] = -1; /* graphc's slice infers the length */
      e[a] = ox_is_sym(x, en[j]) || en[j] < TO_END ? en[j] : TO_END;
      any = 1;
      continue;
    }
    int64_t s0 = st[j] < 0 ? st[j] + dim : st[j], e0 = en[j] < 0 ? en[j] + dim : en[j];
    int64_t c;
    if (step > 0) {
      s0 = s0 < 0 ? 0 : s0 > dim ? dim : s0;
      e0 = e0 < 0 ? 0 : e0 > dim ? dim : e0;
      c = e0 > s0 ? (e0 - s0 + step - 1) / step : 0;
    } else {
      s0 = s0 < 0 ? 0 : s0 > dim - 1 ? dim - 1 : s0;
      e0 = e0 < -1 ? -1 : e0 > dim - 1 ? dim - 1 : e0;
      c = s0 > e0 ? (s0 - e0 + (-step) - 1) / (-step) : 0;
      neg = 1;
    }
    b[a] = s0, s[a] = step, cnt[a] = c;
    e[a] = step > 0 ? s0 + (c - 1) * step + 1 : 0;
    if (c != dim || step != 1) any = 1;
  }
  for (int i = 0; i < r; i++)
    if (cnt[i] == 0) {
      /* cnt -1: symbolic, never empty; an empty result is a constant of no elements */
      return outk(x, ox_const_new(x, t.dtype, r, cnt));
    }
  gc_value *v = ox_in(x, 0);
  if (!any || !v) return out1(x, v);
  int pos = 0;
  int64_t pb[GC_MAX_RANK], pe[GC_MAX_RANK], ps[GC_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int p = s[i] > 0 && (b[i] != 0 || cnt[i] != t.dims[i] || s[i] != 1);
    pos |= p;
    pb[i] = p ? b[i] : 0, pe[i] = p ? e[i] : GC_DIM_IS_SYM(t.dims[i]) ? TO_END : t.dims[i];
    ps[i] = p ? s[i] : 1;
  }
  if (pos) {
    ox_attrs at = {0};
    at_ints(x, &at, "start", pb, r);
    at_ints(x, &at, "end", pe, r);
    at_ints(x, &at, "step", ps, r);
    v = ox_op(x, GC_OP_SLICE, 1, &v, &at);
  }
  for (int i = 0; neg && i < r && v; i++) {
    if (s[i] > 0) continue;
    int64_t *idx = ox_alloc(x, (size_t)cnt[i] * sizeof *idx);
    if (!idx) return -1;
    for (int64_t k = 0; k < cnt[i]; k++) idx[k] = b[i] + k * s[i];
    v = take(x, v, i, idx, cnt[i]);
  }
  return out1(x, v);
}

/* Gather(data, indices, axis): numpy take. */
int ox_gather(ox *x, int arg) {
  gc_value *a = ox_in(x, 0), *i = ox_in(x, 1);
  if (!a || !i) return -1;
  int64_t ax;
  if (ox_axis(x, ox_attr_int(x, "axis", 0), a->type.rank, &ax) != 0) return -1;
  ox_attrs at = {0};
  at_int(x, &at, "axis", ax);
  gc_value *in[2] = {a, i};
  return out1(x, ox_op(x, GC_OP_GATHER, 2, in, &at));
}

/* Axes of Unsqueeze / Squeeze: an input from opset 13, an attribute before. */
static int squeeze_axes(ox *x, int64_t *axes, int *n) {
  if (x->opset >= 13) {
    *n = ox_has_in(x, 1) ? ox_in_ints(x, 1, "axes", axes, MAXL) : -1;
    return ox_has_in(x, 1) && *n < 0 ? -1 : 0;
  }
  *n = ox_attr_ints(x, "axes", axes, MAXL);
  return 0;
}

/* Unsqueeze: insert dims of size 1. */
int ox_unsqueeze(ox *x, int arg) {
  gc_type t;
  int64_t axes[MAXL], d[GC_MAX_RANK];
  int n;
  if (ox_in_type(x, 0, &t) != 0 || squeeze_axes(x, axes, &n) != 0) return -1;
  if (n < 0) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "Unsqueeze needs axes");
  int ro = t.rank + n;
  if (ro > GC_MAX_RANK) return ox_unsup(x, "rank %d; graphc supports up to %d", ro, GC_MAX_RANK);
  uint8_t ins[GC_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) {
    int64_t a;
    if (ox_axis(x, axes[i], ro, &a) != 0) return -1;
    if (ins[a]++) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "repeated axis");
  }
  for (int i = 0, k = 0; i < ro; i++) d[i] = ins[i] ? 1 : t.dims[k++];
  ox_const *e = empty_in(x);
  if (e) return outk(x, ox_const_new(x, e->dtype, ro, d));
  return out1(x, ox_reshape(x, ox_in(x, 0), ro, d));
}

/* Squeeze: drop the given dims of size 1 (default: all of them). */
int ox_squeeze(ox *x, int arg) {
  gc_type t;
  int64_t axes[MAXL], d[GC_MAX_RANK];
  int n, ro = 0;
  if (ox_in_type(x, 0, &t) != 0 || squeeze_axes(x, axes, &n) != 0) return -1;
  uint8_t drop[GC_MAX_RANK] = {0};
  if (n < 0) {
    for (int i = 0; i < t.rank; i++) drop[i] = t.dims[i] == 1;
  } else {
    for (int i = 0; i < n; i++) {
      int64_t a;
      if (ox_axis(x, axes[i], t.rank, &a) != 0) return -1;
      if (t.dims[a] != 1)
        return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "cannot squeeze dim %lld of size %lld",
                       (long long)a, (long long)t.dims[a]);
      drop[a] = 1;
    }
  }
  for (int i = 0; i < t.rank; i++)
    if (!drop[i]) d[ro++] = t.dims[i];
  ox_const *e = empty_in(x);
  if (e) return outk(x, ox_const_new(x, e->dtype, ro, d));
  return out1(x, ox_reshape(x, ox_in(x, 0), ro, d));
}

/* Expand: bidirectional broadcast of the input with a constant shape. */
int ox_expand(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  int64_t s[MAXL], d[GC_MAX_RANK];
  if (!a) return -1;
  int n = ox_in_dims(x, 1, "shape", s, MAXL);
  if (n < 0) return -1;
  int r = a->type.rank, ro = n > r ? n : r, empty = 0;
  if (ro > GC_MAX_RANK) return ox_unsup(x, "rank %d; graphc supports up to %d", ro, GC_MAX_RANK);
  for (int i = 0; i < ro; i++) {
    int64_t u = i - (ro - r) >= 0 ? a->type.dims[i - (ro - r)] : 1;
    int64_t v = i - (ro - n) >= 0 ? s[i - (ro - n)] : 1;
    if (v == 0 && (u == 0 || u == 1)) d[i] = 0, empty = 1;
    else if (u == v || v == 1) d[i] = u;
    else if (u == 1) d[i] = v;
    else {
      gc_sbuf b = {0};
      gc_type_print(&b, &a->type, x->g->sym_names);
      gc_sbuf_printf(&b, " and shape entry %d = ", i - (ro - n));
      if (ox_is_sym(x, v)) gc_sbuf_puts(&b, x->g->sym_names[GC_DIM_SYM_INDEX(v)]);
      else gc_sbuf_printf(&b, "%lld", (long long)v);
      int rc = ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "shape does not broadcast with the input: %s",
                       b.data ? b.data : "");
      gc_sbuf_free(&b);
      return rc;
    }
  }
  if (empty) return outk(x, ox_const_new(x, a->type.dtype, ro, d));
  return out1(x, ox_broadcast(x, a, ro, d));
}

/* Split into the node's outputs: sizes from the input (opset >= 13), the
 * `split` attribute (before), or equal parts (num_outputs, opset 18). */
int ox_split(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int nout = x->node->n_outputs;
  int64_t ax, sizes[OX_MAX_OUTS];
  if (ox_axis(x, ox_attr_int(x, "axis", 0), a->type.rank, &ax) != 0) return -1;
  int64_t dim = a->type.dims[ax];
  if (GC_DIM_IS_SYM(dim)) return ox_unsup(x, "splitting a symbolic dim; bind it first");
  int n = -1;
  if (x->opset >= 13 && ox_has_in(x, 1)) {
    if ((n = ox_in_ints(x, 1, "split", sizes, OX_MAX_OUTS)) < 0) return -1;
  } else if (x->opset < 13) {
    n = ox_attr_ints(x, "split", sizes, OX_MAX_OUTS);
  }
  if (n < 0) {
    int64_t parts = ox_attr_int(x, "num_outputs", nout);
    if (parts != nout || parts < 1 || parts > OX_MAX_OUTS)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "num_outputs does not match the outputs");
    int64_t each = (dim + parts - 1) / parts;
    if (x->opset < 18 && dim % parts)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "dim %lld does not split evenly", (long long)dim);
    for (int i = 0; i < nout; i++) sizes[i] = i < nout - 1 ? each : dim - each * (nout - 1);
    n = nout;
  }
  int64_t sum = 0;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "a split of size %lld", (long long)sizes[i]);
    sum += sizes[i];
  }
  if (n != nout || sum != dim)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "split sizes do not match the outputs or the dim");
  if (n == 1) return out1(x, a);
  ox_attrs at = {0};
  at_int(x, &at, "axis", ax);
  at_ints(x, &at, "sizes", sizes, n);
  return ox_opn(x, GC_OP_SPLIT, 1, &a, &at, n, x->out_v);
}

/* Tile: per repeated axis, reshape [.., 1, d, ..], broadcast [.., r, d, ..], merge. */
int ox_tile(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  int64_t rep[MAXL];
  if (!a) return -1;
  int r = a->type.rank, n = ox_in_ints(x, 1, "repeats", rep, MAXL);
  if (n < 0) return -1;
  if (n != r) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "repeats has %d entries for rank %d", n, r);
  for (int k = 0; k < r; k++) {
    if (rep[k] < 0) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "repeat %lld", (long long)rep[k]);
    if (rep[k] == 0) {  /* an empty result */
      int64_t m[GC_MAX_RANK];
      for (int i = 0; i < r; i++) m[i] = i == k ? 0 : a->type.dims[i];
      for (int i = 0; i < r; i++)
        if (GC_DIM_IS_SYM(m[i])) return ox_unsup(x, "tiling a symbolic dim");
      return outk(x, ox_const_new(x, a->type.dtype, r, m));
    }
  }
  for (int k = 0; k < r && a; k++) {
    if (rep[k] == 1) continue;
    if (r + 1 > GC_MAX_RANK) return ox_unsup(x, "tiling rank %d", r);
    int64_t d[GC_MAX_RANK], m[GC_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++) {
      if (i == k) d[j++] = 1;
      d[j++] = a->type.dims[i];
    }
    memcpy(m, a->type.dims, sizeof m);
    if (GC_DIM_IS_SYM(m[k])) return ox_unsup(x, "tiling a symbolic dim");
    if (__builtin_mul_overflow(m[k], rep[k], &m[k]))   /* found by fuzz_onnx */
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "repeat %lld of axis %d overflows its size",
                     (long long)rep[k], k);
    gc_value *u = ox_reshape(x, a, r + 1, d);
    d[k] = rep[k];
    a = ox_reshape(x, ox_broadcast(x, u, r + 1, d), r, m);
  }
  return out1(x, a);
}

/* Source index of output position o along a padded axis (edge / reflect / wrap). */
static int64_t pad_src(int mode, int64_t i, int64_t dim) {
  if (mode == 'e') return i < 0 ? 0 : i >= dim ? dim - 1 : i;
  if (mode == 'w') return ((i % dim) + dim) % dim;
  if (dim == 1) return 0;
  while (i < 0 || i >= dim) i = i < 0 ? -i : 2 * (dim - 1) - i;
  return i;
}

/* Pad: constant (graphc pad), edge / reflect / wrap (gathers); negative pads crop. */
int ox_pad(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  int64_t p[MAXL], axes[MAXL], pb[GC_MAX_RANK] = {0}, pe[GC_MAX_RANK] = {0};
  double val = 0;
  int n, na = -1;
  const char *mode = ox_attr_str(x, "mode", "constant");
  if (x->opset < 11) {
    n = ox_attr_ints(x, "pads", p, MAXL);
    val = ox_attr_float(x, "value", 0.0);
  } else {
    if ((n = ox_in_ints(x, 1, "pads", p, MAXL)) < 0) return -1;
    if (ox_has_in(x, 2) && ox_in_scalar(x, 2, "constant_value", &val) != 0) return -1;
    if (ox_has_in(x, 3) && (na = ox_in_ints(x, 3, "axes", axes, MAXL)) < 0) return -1;
  }
  if (na < 0) {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  if (n != 2 * na) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "pads has %d entries for %d axes", n, na);
  for (int i = 0; i < na; i++) {
    int64_t ax;
    if (ox_axis(x, axes[i], r, &ax) != 0) return -1;
    pb[ax] = p[i], pe[ax] = p[na + i];
  }
  /* Negative pads remove elements: a slice first. */
  int crop = 0;
  int64_t cs[GC_MAX_RANK], ce[GC_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int64_t dim = a->type.dims[i];
    if ((pb[i] || pe[i]) && GC_DIM_IS_SYM(dim)) return ox_unsup(x, "padding a symbolic dim");
    cs[i] = pb[i] < 0 ? -pb[i] : 0;
    ce[i] = pe[i] < 0 ? dim + pe[i] : dim;
    if (pb[i] < 0 || pe[i] < 0) crop = 1;
    if (ce[i] < cs[i]) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "the pads remove more than the dim");
    if (pb[i] < 0) pb[i] = 0;
    if (pe[i] < 0) pe[i] = 0;
  }
  if (crop) {
    ox_attrs at = {0};
    at_ints(x, &at, "start", cs, r);
    at_ints(x, &at, "end", ce, r);
    a = ox_op(x, GC_OP_SLICE, 1, &a, &at);
    if (!a) return -1;
  }
  int any = 0;
  for (int i = 0; i < r; i++) any |= pb[i] || pe[i];
  if (!any) return out1(x, a);
  if (strcmp(mode, "constant") == 0) {
    int64_t pads[2 * GC_MAX_RANK];
    for (int i = 0; i < r; i++) pads[i] = pb[i], pads[r + i] = pe[i];
    ox_attrs at = {0};
    at_ints(x, &at, "pads", pads, 2 * r);
    at_scalar(x, &at, "value", a->type.dtype, val);
    return out1(x, ox_op(x, GC_OP_PAD, 1, &a, &at));
  }
  int m = strcmp(mode, "edge") == 0 ? 'e' : strcmp(mode, "reflect") == 0 ? 'r'
        : strcmp(mode, "wrap") == 0 ? 'w' : 0;
  if (!m) return ox_unsup(x, "pad mode '%s'", mode);
  for (int i = 0; i < r && a; i++) {
    if (!pb[i] && !pe[i]) continue;
    /* the padded axis becomes a gather with one index per output position */
    if (pb[i] > PAD_INDEX_LIMIT || pe[i] > PAD_INDEX_LIMIT || a->type.dims[i] + pb[i] + pe[i] > PAD_INDEX_LIMIT)
      return ox_unsup(x, "%s padding to more than %lld positions along axis %d", mode, (long long)PAD_INDEX_LIMIT, i);
    int64_t dim = a->type.dims[i], len = dim + pb[i] + pe[i];
    int64_t *idx = ox_alloc(x, (size_t)len * sizeof *idx);
    if (!idx) return -1;
    for (int64_t o = 0; o < len; o++) idx[o] = pad_src(m, o - pb[i], dim);
    a = take(x, a, i, idx, len);
  }
  return out1(x, a);
}

/* Concrete rank-4 input for DepthToSpace / SpaceToDepth. */
static gc_value *nchw_in(ox *x) {
  gc_value *a = ox_in(x, 0);
  if (a && (a->type.rank != 4 || !gc_type_is_concrete(&a->type))) {
    ox_unsup(x, "needs a rank-4 input with concrete dims");
    return NULL;
  }
  return a;
}

/* DepthToSpace (modes DCR and CRD): reshape, transpose, reshape. */
int ox_depth_to_space(ox *x, int arg) {
  gc_value *a = nchw_in(x);
  if (!a) return -1;
  int64_t b = ox_attr_int(x, "blocksize", 0), *d = a->type.dims;
  if (b < 1 || d[1] % (b * b)) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "bad blocksize");
  int crd = strcmp(ox_attr_str(x, "mode", "DCR"), "CRD") == 0;
  int64_t c = d[1] / (b * b);
  int64_t s6[6] = {d[0], b, b, c, d[2], d[3]}, p_dcr[6] = {0, 3, 4, 1, 5, 2};
  int64_t s6c[6] = {d[0], c, b, b, d[2], d[3]}, p_crd[6] = {0, 1, 4, 2, 5, 3};
  int64_t o[4] = {d[0], c, d[2] * b, d[3] * b};
  gc_value *v = ox_reshape(x, a, 6, crd ? s6c : s6);
  return out1(x, ox_reshape(x, ox_transpose(x, v, crd ? p_crd : p_dcr), 4, o));
}

/* SpaceToDepth (modes DCR and CRD, opset 28): reshape, transpose, reshape. */
int ox_space_to_depth(ox *x, int arg) {
  gc_value *a = nchw_in(x);
  if (!a) return -1;
  int64_t b = ox_attr_int(x, "blocksize", 0), *d = a->type.dims;
  if (b < 1 || d[2] % b || d[3] % b) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "bad blocksize");
  int crd = strcmp(ox_attr_str(x, "mode", "DCR"), "CRD") == 0;
  int64_t s6[6] = {d[0], d[1], d[2] / b, b, d[3] / b, b}, p[6] = {0, 3, 5, 1, 2, 4};
  if (crd) p[1] = 1, p[2] = 3, p[3] = 5, p[4] = 2, p[5] = 4;
  int64_t o[4] = {d[0], d[1] * b * b, d[2] / b, d[3] / b};
  return out1(x, ox_reshape(x, ox_transpose(x, ox_reshape(x, a, 6, s6), p), 4, o));
}

/* Trilu: keep the upper (col - row >= k) or lower (col - row <= k) triangle. */
int ox_trilu(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  if (!a) return -1;
  int r = a->type.rank;
  if (r < 2) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "rank < 2");
  int64_t k = 0;
  if (ox_has_in(x, 1)) {
    int64_t kk[1];
    if (ox_in_ints(x, 1, "k", kk, 1) < 0) return -1;
    k = kk[0];
  }
  int upper = (int)ox_attr_int(x, "upper", 1);
  int64_t mn[2] = {a->type.dims[r - 2], a->type.dims[r - 1]};
  gc_value *diff = ox_bin(x, GC_OP_SUB, ox_iota(x, 2, mn, 1, GRAPHC_DTYPE_I64),
                          ox_iota(x, 2, mn, 0, GRAPHC_DTYPE_I64));
  gc_value *mask = ox_binc(x, upper ? GC_OP_GE : GC_OP_LE, diff, (double)k);
  return out1(x, ox_sel(x, mask, a, ox_scalar(x, a->type.dtype, 0)));
}

/* Shape (with start/end, opset 15): a constant; symbolic dims become symbolic entries
 * (onnx_sym.c folds the shape arithmetic on them). */
int ox_shape(ox *x, int arg) {
  gc_type t;
  if (ox_in_type(x, 0, &t) != 0) return -1;
  int64_t r = t.rank, s = ox_attr_int(x, "start", 0), e = ox_attr_int(x, "end", r);
  if (s < 0) s += r;
  if (e < 0) e += r;
  s = s < 0 ? 0 : s > r ? r : s;
  e = e < 0 ? 0 : e > r ? r : e;
  int64_t n = e > s ? e - s : 0;
  ox_const *k = ox_const_new(x, GRAPHC_DTYPE_I64, 1, &n);
  if (!k) return -1;
  for (int64_t i = 0; i < n; i++) ox_const_seti(k, i, t.dims[s + i]); /* symbols stay symbols */
  return outk(x, k);
}

/* Size: the element count as an i64 scalar constant. */
int ox_size(ox *x, int arg) {
  gc_type t;
  if (ox_in_type(x, 0, &t) != 0) return -1;
  int64_t n = 1;
  for (int i = 0; i < t.rank; i++) {
    if (GC_DIM_IS_SYM(t.dims[i])) return ox_unsup(x, "size of a symbolic shape; bind it");
    n *= t.dims[i];
  }
  ox_const *k = ox_const_new(x, GRAPHC_DTYPE_I64, 0, NULL);
  if (!k) return -1;
  ox_const_seti(k, 0, n);
  return outk(x, k);
}

/* Range with a symbolic limit (integer start and delta constants): iota over a
 * derived length ceildiv(limit - start, delta), scaled and shifted. 1 done,
 * 0 not symbolic, -1 error. */
static int ox_range_sym(ox *x) {
  ox_const *lk = ox_in_const(x, 1), *sk = ox_in_const(x, 0), *dk = ox_in_const(x, 2);
  if (!lk || !ox_const_has_sym(x, lk)) return 0;
  if (!sk || !dk || ox_const_has_sym(x, sk) || ox_const_has_sym(x, dk) || lk->numel != 1 ||
      sk->numel != 1 || dk->numel != 1 || gc_dtype_is_float(sk->dtype))
    return ox_unsup(x, "a Range with a symbolic limit needs integer constant start and delta");
  int64_t st = ox_const_geti(sk, 0), de = ox_const_geti(dk, 0), lim = ox_const_geti(lk, 0);
  if (de <= 0) return ox_unsup(x, "a Range with a symbolic limit needs a positive delta");
  gc_graph *g = x->g;
  const gc_sym_expr *len = gc_sx_op(g, GC_SX_CEILDIV, gc_sx_add(g, gc_sx_dim(g, lim), gc_sx_const(g, -st)),
                                    gc_sx_const(g, de));
  int64_t n = gc_sym_intern(g, len);
  if (n < 0) return ox_unsup(x, "the range's length is not positive");
  gc_value *v = ox_iota(x, 1, &n, 0, sk->dtype);
  if (v && de != 1) v = ox_binc(x, GC_OP_MUL, v, (double)de);
  if (v && st != 0) v = ox_binc(x, GC_OP_ADD, v, (double)st);
  return out1(x, v) < 0 ? -1 : 1;
}

/* Range(start, limit, delta) with constant scalars. */
int ox_range(ox *x, int arg) {
  ox_const *ks[3];
  int sym = ox_range_sym(x);
  if (sym != 0) return sym < 0 ? -1 : 0;
  for (int i = 0; i < 3; i++) {
    ks[i] = ox_in_need(x, i);
    if (!ks[i]) return ox_unsup(x, "input %d must be a constant (dynamic Range is not supported)", i);
    if (ks[i]->numel != 1) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "input %d is not a scalar", i);
  }
  gc_dtype t = ks[0]->dtype;
  int64_t n;
  if (gc_dtype_is_float(t)) {
    double s = ox_const_get(ks[0], 0), l = ox_const_get(ks[1], 0), d = ox_const_get(ks[2], 0);
    double c = __builtin_ceil((l - s) / d);
    if (c != c) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "the range's length is not a number");
    if (c > (double)(INT64_C(1) << 24)) return ox_unsup(x, "a range of %g elements", c);
    n = c > 0 ? (int64_t)c : 0;   /* checked before converting (out-of-range casts are UB) */
    ox_const *k = ox_const_new(x, t, 1, &n);
    for (int64_t i = 0; k && i < n; i++) ox_const_set(k, i, s + (double)i * d);
    return outk(x, k);
  }
  int64_t s = ox_const_geti(ks[0], 0), l = ox_const_geti(ks[1], 0), d = ox_const_geti(ks[2], 0);
  if (d == 0) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "delta is 0");
  /* In 128 bits: limit - start overflows 64 for extreme values. */
  __int128 w = d > 0 ? (l > s ? ((__int128)l - s + d - 1) / d : 0)
                     : (s > l ? ((__int128)s - l - d - 1) / -(__int128)d : 0);
  if (w > (INT64_C(1) << 24)) return ox_unsup(x, "a range of more than 2^24 elements");
  n = (int64_t)w;
  ox_const *k = ox_const_new(x, t, 1, &n);
  for (int64_t i = 0; k && i < n; i++) ox_const_seti(k, i, s + i * d);
  return outk(x, k);
}

/* ConstantOfShape(shape) filled with `value` (default f32 0). */
int ox_constant_of_shape(ox *x, int arg) {
  int64_t s[MAXL];
  int n = ox_in_dims(x, 0, "shape", s, MAXL);
  if (n < 0) return -1;
  if (n > GC_MAX_RANK) return ox_unsup(x, "rank %d", n);
  int sym = 0;
  for (int i = 0; i < n; i++) sym |= ox_is_sym(x, s[i]);
  const gc_onnx_attr *va = ox_attr(x, "value");
  ox_const *v = NULL;
  if (va && va->t) {
    v = ox_tensor_const(x, va->t, 1);
    if (!v) return -1;
    if (v->numel != 1) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "value must hold one element");
  }
  gc_dtype t = v ? v->dtype : GRAPHC_DTYPE_F32;
  double val = v ? ox_const_get(v, 0) : 0;
  int64_t numel = 1;
  for (int i = 0; i < n; i++)   /* saturating: only compared with 2^20 below */
    if (__builtin_mul_overflow(numel, s[i] > 0 ? s[i] : 0, &numel)) numel = INT64_MAX;
  if (sym || numel > (INT64_C(1) << 20)) { /* large or symbolic: a const op, never data at import */
    ox_attrs at = {0};
    at_scalar(x, &at, "value", t, val);
    at_ints(x, &at, "shape", s, n);
    at_dtype(x, &at, "dtype", t);
    return out1(x, ox_op(x, GC_OP_CONST, 0, NULL, &at));
  }
  ox_const *k = ox_const_new(x, t, n, s);
  if (!k) return -1;
  size_t es = graphc_dtype_size(t);
  for (int64_t i = 0; i < k->numel; i++)
    if (v) memcpy((char *)k->data + i * (int64_t)es, v->data, es);
  return outk(x, k);
}

/* EyeLike: ones where col - row == k, of the input's shape. */
int ox_eye_like(ox *x, int arg) {
  gc_type t;
  if (ox_in_type(x, 0, &t) != 0) return -1;
  if (t.rank != 2 || !gc_type_is_concrete(&t)) return ox_unsup(x, "needs a concrete 2-D input");
  gc_dtype dt = t.dtype;
  const gc_onnx_attr *da = ox_attr(x, "dtype");
  if (da && ox_dtype(x, (int)da->i, &dt) != 0) return -1;
  int64_t k = ox_attr_int(x, "k", 0);
  ox_const *c = ox_const_new(x, dt, 2, t.dims);
  if (!c) return -1;
  for (int64_t i = 0; i < t.dims[0]; i++)
    for (int64_t j = 0; j < t.dims[1]; j++) ox_const_set(c, i * t.dims[1] + j, j - i == k ? 1 : 0);
  return outk(x, c);
}

/* OneHot(indices, depth, values[off, on], axis). */
int ox_one_hot(ox *x, int arg) {
  gc_value *idx = ox_in(x, 0);
  double depth;
  if (!idx || ox_in_scalar(x, 1, "depth", &depth) != 0) return -1;
  ox_const *vals = ox_in_need(x, 2);
  if (!vals || vals->numel != 2) return ox_unsup(x, "values must be a constant of 2 elements");
  int r = idx->type.rank;
  if (r + 1 > GC_MAX_RANK) return ox_unsup(x, "rank %d", r + 1);
  int64_t ax, dep = (int64_t)depth;
  if (ox_axis(x, ox_attr_int(x, "axis", -1), r + 1, &ax) != 0) return -1;
  int64_t od[GC_MAX_RANK], ud[GC_MAX_RANK];
  for (int i = 0, j = 0; i <= r; i++) {
    od[i] = i == ax ? dep : idx->type.dims[j];
    ud[i] = i == ax ? 1 : idx->type.dims[j];
    if (i != ax) j++;
  }
  gc_value *i64 = ox_cast(x, idx, GRAPHC_DTYPE_I64);
  if (!gc_dtype_is_int(idx->type.dtype)) i64 = ox_cast(x, idx, GRAPHC_DTYPE_I64);
  i64 = ox_sel(x, ox_binc(x, GC_OP_LT, i64, 0), ox_binc(x, GC_OP_ADD, i64, (double)dep), i64);
  gc_value *mask = ox_bin(x, GC_OP_EQ, ox_reshape(x, i64, r + 1, ud), ox_iota(x, r + 1, od, (int)ax, GRAPHC_DTYPE_I64));
  gc_value *on = ox_scalar(x, vals->dtype, ox_const_get(vals, 1));
  gc_value *off = ox_scalar(x, vals->dtype, ox_const_get(vals, 0));
  return out1(x, ox_sel(x, mask, on, off));
}

/* HannWindow (arg 0), HammingWindow (1), BlackmanWindow (2) of a constant size. */
int ox_window(ox *x, int kind) {
  int64_t n[1];
  if (ox_in_ints(x, 0, "size", n, 1) < 0) return -1;
  if (n[0] < 1) return ox_unsup(x, "a window of size %lld", (long long)n[0]);
  gc_dtype t;
  if (ox_dtype(x, (int)ox_attr_int(x, "output_datatype", 1), &t) != 0) return -1;
  int periodic = (int)ox_attr_int(x, "periodic", 1);
  double den = (double)(periodic ? n[0] : n[0] - 1), pi = 3.14159265358979323846;
  ox_const *k = ox_const_new(x, t, 1, n);
  for (int64_t i = 0; k && i < n[0]; i++) {
    double w = den > 0 ? 2 * pi * (double)i / den : 0, v;
    if (kind == 0) v = 0.5 - 0.5 * cos(w);
    else if (kind == 1) v = 25.0 / 46 - (1 - 25.0 / 46) * cos(w);
    else v = 0.42 - 0.5 * cos(w) + 0.08 * cos(2 * w);
    ox_const_set(k, i, v);
  }
  return outk(x, k);
}

/* CenterCropPad(data, shape) over `axes`: crop or zero-pad each axis around its center. */
int ox_center_crop_pad(ox *x, int arg) {
  gc_value *a = ox_in(x, 0);
  int64_t shp[MAXL], axes[MAXL];
  if (!a) return -1;
  int r = a->type.rank, n = ox_in_ints(x, 1, "shape", shp, MAXL);
  if (n < 0) return -1;
  int na = ox_attr_ints(x, "axes", axes, MAXL);
  if (na < 0) {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  if (na != n) return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "shape and axes differ in length");
  int64_t cs[GC_MAX_RANK] = {0}, ce[GC_MAX_RANK], pads[2 * GC_MAX_RANK] = {0};
  memcpy(ce, a->type.dims, sizeof ce);
  int crop = 0, pad = 0;
  for (int i = 0; i < na; i++) {
    int64_t ax;
    if (ox_axis(x, axes[i], r, &ax) != 0) return -1;
    int64_t dim = a->type.dims[ax], want = shp[i];
    if (GC_DIM_IS_SYM(dim)) return ox_unsup(x, "a symbolic dim; bind it");
    if (want < 1) return ox_unsup(x, "an empty result");
    if (want < dim) cs[ax] = (dim - want) / 2, ce[ax] = cs[ax] + want, crop = 1;
    if (want > dim) pads[ax] = (want - dim) / 2, pads[r + ax] = want - dim - pads[ax], pad = 1;
  }
  if (crop) {
    ox_attrs at = {0};
    at_ints(x, &at, "start", cs, r);
    at_ints(x, &at, "end", ce, r);
    a = ox_op(x, GC_OP_SLICE, 1, &a, &at);
  }
  if (pad && a) {
    ox_attrs at = {0};
    at_ints(x, &at, "pads", pads, 2 * r);
    a = ox_op(x, GC_OP_PAD, 1, &a, &at);
  }
  return out1(x, a);
}
