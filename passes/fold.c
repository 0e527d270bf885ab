/* fold.c - constant folding: an op whose operands are all `const` ops is
 * evaluated at compile time and replaced by a `const` op; and the evaluator
 * behind it, gc_fold_eval (passes/fold.h), which the ONNX importer also folds
 * with (it evaluates more ops than the pass folds: see fold.h).
 *
 * Folded: elementwise ops (unary, cast, clamp, binary, compare, select) and the
 * data movement ops reshape, transpose and broadcast. Params are never folded
 * (their data is only known at load), nor iota (already compact), nor ops with
 * no operands. A result whose elements are all equal becomes a splat
 * (`const(value=x, shape=[...])`) of any size; any other result is written as a
 * list and folded only up to FOLD_MAX_ELEMS elements.
 *
 * The scalar semantics are the ones in the brief (nothing but ir/dtype.c's
 * rounding rule is shared with the interpreter, which stays an independent
 * oracle): float math in double, rounded once to the result dtype (f16/bf16
 * round to nearest even); integer math exact in int64 and wrapped to the
 * dtype; float->int casts truncate and saturate, NaN -> 0; int->int casts
 * wrap; anything->bool is x != 0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "passes/rewrite.h"

#define FOLD_MAX_ELEMS 4096
#define LITERAL_LIMIT (INT64_C(1) << 62) /* integer literals must be below 2^62 */

/* ---- scalar conversions ---------------------------------------------------------- */

/* Two's-complement truncation of an exact integer to an int dtype; bool is v != 0. */
static int64_t int_wrap(gc_dtype t, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (t) {
    case GRAPHC_DTYPE_I32: return (int32_t)(uint32_t)u;
    case GRAPHC_DTYPE_I8: return (int8_t)(uint8_t)u;
    case GRAPHC_DTYPE_U8: return (uint8_t)u;
    case GRAPHC_DTYPE_BOOL: return v != 0;
    default: return v;
  }
}

/* Truncate toward zero and saturate to [lo, hi]; NaN -> 0. */
static int64_t trunc_sat(double x, int64_t lo, int64_t hi) {
  if (isnan(x)) return 0;
  if (x <= (double)lo) return lo;
  if (x >= (double)hi) return hi; /* (double)INT64_MAX rounds up to 2^63: still right */
  return (int64_t)x;
}

/* A double rounded once to a float dtype (f16/bf16 by ir/dtype.h's rule; a NaN
 * stays the same double, payload and all). */
static double float_round(gc_dtype t, double x) {
  switch (t) {
    case GRAPHC_DTYPE_F32: return (double)(float)x;
    case GRAPHC_DTYPE_F16: return isnan(x) ? x : gc_f16_to_f64(gc_f64_to_f16(x));
    case GRAPHC_DTYPE_BF16: return isnan(x) ? x : gc_bf16_to_f64(gc_f64_to_bf16(x));
    case GRAPHC_DTYPE_F8E4M3:  /* like a store: infinities stay (NaN for e4m3 and fnuz) */
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: return isnan(x) ? x : gc_f8_to_f64(t, gc_f64_to_f8(t, x, !isinf(x)));
    default: return x;
  }
}

/* An exact int64 rounded once to a float dtype. */
static double int_to_float(gc_dtype t, int64_t v) {
  switch (t) {
    case GRAPHC_DTYPE_F32: return (double)(float)v;
    case GRAPHC_DTYPE_F16: return gc_f16_to_f64(gc_i64_to_f16(v));
    case GRAPHC_DTYPE_BF16: return gc_bf16_to_f64(gc_i64_to_bf16(v));
    case GRAPHC_DTYPE_F8E4M3:
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: return float_round(t, (double)v);  /* saturates long before 2^53 */
    default: return (double)v;
  }
}

/* A value computed as a double, stored into dtype t (like cast from a float). */
static gc_scalar from_f64(gc_dtype t, double x) {
  gc_scalar s;
  if (gc_dtype_is_float(t)) {
    s.f = float_round(t, x);
  } else if (t == GRAPHC_DTYPE_BOOL) {
    s.i = x != 0; /* NaN != 0: true */
  } else {
    int64_t lo, hi;
    gc_int_range(t, &lo, &hi);
    s.i = trunc_sat(x, lo, hi);
  }
  return s;
}

/* An exact integer stored into dtype t (like cast from an int). */
static gc_scalar from_i64(gc_dtype t, int64_t v) {
  gc_scalar s;
  if (gc_dtype_is_float(t))
    s.f = int_to_float(t, v);
  else
    s.i = int_wrap(t, v);
  return s;
}

/* A numeric attribute stored into dtype t: INT and BOOL exact, FLOAT like cast. */
static gc_scalar from_attr(gc_dtype t, const gc_attr *a) {
  switch (a->kind) {
    case GC_ATTR_FLOAT: return from_f64(t, a->u.f);
    case GC_ATTR_BOOL: return from_i64(t, a->u.b != 0);
    default: return from_i64(t, a->u.i);
  }
}

/* Two elements are the same bits (so -0.0 differs from 0.0; NaN equals NaN). */
static int scalar_same(gc_scalar a, gc_scalar b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- reading constants -------------------------------------------------------------- */

/* Is a a number attribute (not a symbolic dim)? */
static int is_number(const gc_attr *a) {
  return a->kind == GC_ATTR_FLOAT || a->kind == GC_ATTR_BOOL ||
         (a->kind == GC_ATTR_INT && !GC_DIM_IS_SYM(a->u.i));
}

/* Free a constant's elements. */
void gc_cval_free(gc_cval *c) {
  free(c->e);
  c->e = NULL;
}

/* Keep one element when all are equal. */
static void compress_splat(gc_cval *c) {
  int64_t i = 1;
  while (i < c->n && scalar_same(c->e[i], c->e[0])) i++;
  if (i == c->n) {
    c->n = 1;
    c->splat = 1;
  }
}

/* A const op's elements in its dtype (splats compressed to one element). */
int gc_cval_read(const gc_op *op, gc_cval *out) {
  memset(out, 0, sizeof *out);
  if (op->opcode != GC_OP_CONST || op->n_results != 1) return 0;
  const gc_attr *v = gc_op_attr(op, "value");
  if (!v) return 0;
  out->type = op->results[0]->type;
  gc_dtype t = out->type.dtype;
  int64_t numel = gc_type_numel(&out->type);
  int n = v->kind == GC_ATTR_LIST ? v->u.list.n : 1;
  const gc_attr *items = v->kind == GC_ATTR_LIST ? v->u.list.items : v;
  if (n != 1 && n != numel) return 0; /* a scalar may have a symbolic shape, a list not */
  for (int i = 0; i < n; i++)
    if (!is_number(&items[i])) return 0;
  out->e = malloc((size_t)n * sizeof *out->e);
  if (!out->e) return -1;
  out->n = n;
  for (int i = 0; i < n; i++) out->e[i] = from_attr(t, &items[i]);
  out->splat = n == 1;
  compress_splat(out);
  return 1;
}

/* The common element of a const whose elements are all equal. */
int gc_value_const_splat(const gc_value *v, gc_scalar *s) {
  if (!v->def || v->def->opcode != GC_OP_CONST) return 0;
  const gc_attr *a = gc_op_attr(v->def, "value");
  if (!a) return 0;
  gc_dtype t = v->type.dtype;
  int n = a->kind == GC_ATTR_LIST ? a->u.list.n : 1;
  const gc_attr *items = a->kind == GC_ATTR_LIST ? a->u.list.items : a;
  if (n < 1 || !is_number(&items[0])) return 0;
  gc_scalar first = from_attr(t, &items[0]);
  for (int i = 1; i < n; i++) /* stops at the first difference: no allocation */
    if (!is_number(&items[i]) || !scalar_same(from_attr(t, &items[i]), first)) return 0;
  *s = first;
  return 1;
}

/* ---- scalar operations ---------------------------------------------------------------- */

/* maximum as the ops define it: NaN if either is NaN; +0 is above -0. */
static double fmax_op(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}

/* minimum as the ops define it: NaN if either is NaN; -0 is below +0. */
static double fmin_op(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}

/* A float unary op in double (formulas exactly as the brief writes them). */
static double unary_float(gc_opcode opc, double x, int gelu_tanh) {
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
      if (gelu_tanh) return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1.0 + erf(x / M_SQRT2));
    case GC_OP_ERF: return erf(x);
    case GC_OP_SIN: return sin(x);
    case GC_OP_COS: return cos(x);
    case GC_OP_FLOOR: return floor(x);
    case GC_OP_CEIL: return ceil(x);
    default: GC_ASSERT(!"not a float unary op"); return 0;
  }
}

/* An integer or bool unary op, exact; negation wraps. */
static int64_t unary_int(gc_opcode opc, int64_t x) {
  switch (opc) {
    case GC_OP_NEG: return (int64_t)(UINT64_C(0) - (uint64_t)x);
    case GC_OP_ABS: return x < 0 ? (int64_t)(UINT64_C(0) - (uint64_t)x) : x;
    case GC_OP_RELU: return x > 0 ? x : 0;
    case GC_OP_NOT: return !x;
    default: GC_ASSERT(!"not an integer unary op"); return 0;
  }
}

/* A float binary op in double; comparisons give 0 or 1. */
static double binary_float(gc_opcode opc, double a, double b) {
  switch (opc) {
    case GC_OP_ADD: return a + b;
    case GC_OP_SUB: return a - b;
    case GC_OP_MUL: return a * b;
    case GC_OP_DIV: return a / b;
    case GC_OP_POW: return pow(a, b);
    case GC_OP_MAXIMUM: return fmax_op(a, b);
    case GC_OP_MINIMUM: return fmin_op(a, b);
    case GC_OP_EQ: return a == b;
    case GC_OP_NE: return a != b;
    case GC_OP_LT: return a < b;
    case GC_OP_LE: return a <= b;
    case GC_OP_GT: return a > b;
    case GC_OP_GE: return a >= b;
    default: GC_ASSERT(!"not a float binary op"); return 0;
  }
}

/* An integer or bool binary op, exact; add/sub/mul wrap, x / 0 = 0, division truncates. */
static int64_t binary_int(gc_opcode opc, int64_t a, int64_t b) {
  switch (opc) {
    case GC_OP_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case GC_OP_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case GC_OP_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case GC_OP_DIV:
      if (b == 0) return 0;
      if (a == INT64_MIN && b == -1) return INT64_MIN;
      return a / b;
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

/* clamp bound for an int operand: INT exact, FLOAT like cast, BOOL 0/1. */
static int64_t int_bound(const gc_attr *a, int64_t dflt) {
  if (!a) return dflt;
  if (a->kind == GC_ATTR_INT) return a->u.i;
  return trunc_sat(gc_attr_number(a), INT64_MIN, INT64_MAX);
}

/* One element of an elementwise op: x[k] is operand k's element in its dtype
 * in[k]; the result is in dtype `to`. */
static gc_scalar eval_scalar(const gc_op *op, const gc_dtype *in, gc_dtype to,
                             const gc_scalar *x) {
  gc_opcode opc = op->opcode;
  int flt = gc_dtype_is_float(in[0]);
  switch (opc) {
    case GC_OP_CAST:
      if (gc_dtype_is_f8(to) && in[0] != to) {  /* to its own dtype: the identity */
        double v = flt ? x[0].f : (double)x[0].i;
        int sat = gc_op_attr_bool(op, "saturate", 1);
        gc_scalar s;
        s.f = gc_f8_to_f64(to, gc_f64_to_f8(to, v, sat));
        return s;
      }
      return flt ? from_f64(to, x[0].f) : from_i64(to, x[0].i);
    case GC_OP_SELECT: return x[0].i != 0 ? x[1] : x[2];
    case GC_OP_HASH_UNIFORM: return from_f64(to, gc_hash_uniform(x[0].i, x[1].i));
    case GC_OP_CLAMP: {
      const gc_attr *lo = gc_op_attr(op, "min"), *hi = gc_op_attr(op, "max");
      if (flt) {
        double v = x[0].f;
        if (lo) v = fmax_op(v, gc_attr_number(lo));
        if (hi) v = fmin_op(v, gc_attr_number(hi));
        return from_f64(to, v);
      }
      int64_t v = x[0].i, l = int_bound(lo, INT64_MIN), h = int_bound(hi, INT64_MAX);
      if (v < l) v = l;
      if (v > h) v = h;
      return from_i64(to, v);
    }
    default: break;
  }
  if (op->n_operands == 1) {
    if (!flt) return from_i64(to, unary_int(opc, x[0].i));
    int gelu_tanh = strcmp(gc_op_attr_str(op, "approximate", "none"), "tanh") == 0;
    return from_f64(to, unary_float(opc, x[0].f, gelu_tanh));
  }
  return flt ? from_f64(to, binary_float(opc, x[0].f, x[1].f))
             : from_i64(to, binary_int(opc, x[0].i, x[1].i));
}

/* ---- evaluating ops on constants ------------------------------------------------------ */

/* Row-major strides of `in` read through numpy broadcasting to `out` (0 along
 * broadcast dims; all 0 for a splat, which stores one element). */
static void bcast_strides(const gc_cval *in, const gc_type *out, int64_t *st) {
  int64_t s = 1;
  int shift = out->rank - in->type.rank;
  for (int k = out->rank - 1; k >= 0; k--) {
    int j = k - shift;
    int64_t dim = j >= 0 ? in->type.dims[j] : 1;
    st[k] = in->splat || dim == 1 ? 0 : s;
    if (!in->splat) s *= dim; /* a splat may have symbolic dims: never multiplied */
  }
}

/* Allocate a result: one element for a splat, else numel (0 when symbolic or
 * above max elements). */
static int result_alloc(gc_cval *r, const gc_type *t, int splat, int64_t max) {
  r->type = *t;
  r->splat = splat;
  int64_t numel = gc_type_numel(t);
  if (splat)
    r->n = 1;
  else if (numel < 0 || numel > max || (uint64_t)numel > SIZE_MAX / sizeof *r->e)
    return 0;
  else
    r->n = numel;
  r->e = malloc((size_t)r->n * sizeof *r->e);
  return r->e ? 1 : -1;
}

/* Elementwise ops and broadcast: each output element from the operands'
 * elements at the broadcast positions. */
static int eval_elementwise(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  int n = op->n_operands, splat = 1;
  const gc_type *ot = &op->results[0]->type;
  for (int k = 0; k < n; k++) splat &= in[k].splat;
  int rc = result_alloc(r, ot, splat, max);
  if (rc <= 0) return rc;
  gc_dtype dts[3];
  int64_t st[3][GC_MAX_RANK], idx[GC_MAX_RANK] = {0};
  for (int k = 0; k < n; k++) {
    dts[k] = in[k].type.dtype;
    bcast_strides(&in[k], ot, st[k]);
  }
  for (int64_t i = 0; i < r->n; i++) {
    gc_scalar x[3];
    for (int k = 0; k < n; k++) {
      int64_t off = 0;
      for (int d = 0; d < ot->rank; d++) off += idx[d] * st[k][d];
      x[k] = in[k].e[off];
    }
    r->e[i] = op->opcode == GC_OP_BROADCAST ? x[0] : eval_scalar(op, dts, ot->dtype, x);
    for (int d = ot->rank - 1; !splat && d >= 0 && ++idx[d] == ot->dims[d]; d--) idx[d] = 0;
  }
  compress_splat(r);
  return 1;
}

/* transpose: out.dims[k] = in.dims[perm[k]]. */
static int eval_transpose(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  const gc_type *ot = &op->results[0]->type;
  int rc = result_alloc(r, ot, in->splat, max);
  if (rc <= 0) return rc;
  if (in->splat) {
    r->e[0] = in->e[0];
    return 1;
  }
  int64_t perm[GC_MAX_RANK], ist[GC_MAX_RANK], idx[GC_MAX_RANK] = {0}, s = 1;
  const gc_attr *pa = gc_op_attr(op, "perm");
  if (!pa || gc_attr_ints(pa, perm, GC_MAX_RANK) != ot->rank) return 0;
  for (int k = in->type.rank - 1; k >= 0; k--) {
    ist[k] = s;
    s *= in->type.dims[k];
  }
  for (int64_t i = 0; i < r->n; i++) {
    int64_t off = 0;
    for (int d = 0; d < ot->rank; d++) off += idx[d] * ist[perm[d]];
    r->e[i] = in->e[off];
    for (int d = ot->rank - 1; d >= 0 && ++idx[d] == ot->dims[d]; d--) idx[d] = 0;
  }
  return 1;
}

/* reshape: the same elements in the same order. */
static int eval_reshape(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  int rc = result_alloc(r, &op->results[0]->type, in->splat, max);
  if (rc <= 0) return rc;
  memcpy(r->e, in->e, (size_t)r->n * sizeof *r->e);
  return 1;
}

/* ---- more ops for gc_fold_eval (the importer's folding) --------------------------------- */

/* Element i of c in row-major order (a splat stores one element for all). */
static gc_scalar elem(const gc_cval *c, int64_t i) { return c->e[c->splat ? 0 : i]; }

/* Row-major strides of a concrete type. */
static void row_strides(const gc_type *t, int64_t *st) {
  int64_t s = 1;
  for (int k = t->rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= t->dims[k];
  }
}

/* Product of dims [from, to) of a concrete type. */
static int64_t dims_prod(const gc_type *t, int from, int to) {
  int64_t p = 1;
  for (int k = from; k < to; k++) p *= t->dims[k];
  return p;
}

/* The `axis` attribute (default dflt) counted from the end when negative; -1
 * when it is not an axis of a rank-`rank` tensor. */
static int axis_attr(const gc_op *op, int64_t dflt, int rank) {
  int64_t a = gc_op_attr_int(op, "axis", dflt);
  if (a < 0) a += rank;
  return a >= 0 && a < rank ? (int)a : -1;
}

/* Step the row-major multi-index idx over dims and move *off along st;
 * 0 after the last element. */
static int next_index(int rank, const int64_t *dims, int64_t *idx, int64_t *off,
                      const int64_t *st) {
  for (int k = rank - 1; k >= 0; k--) {
    if (++idx[k] < dims[k]) {
      *off += st[k];
      return 1;
    }
    *off -= st[k] * (dims[k] - 1);
    idx[k] = 0;
  }
  return 0;
}

/* iota: each element is its index along `axis`. */
static int eval_iota(const gc_op *op, gc_cval *r, int64_t max) {
  const gc_type *ot = &op->results[0]->type;
  int axis = ot->rank ? axis_attr(op, 0, ot->rank) : 0;
  if (axis < 0) return 0;
  int rc = result_alloc(r, ot, 0, max);
  if (rc <= 0) return rc;
  int64_t st[GC_MAX_RANK];
  row_strides(ot, st);
  for (int64_t i = 0; i < r->n; i++)
    r->e[i] = from_i64(ot->dtype, ot->rank ? (i / st[axis]) % ot->dims[axis] : 0);
  compress_splat(r);
  return 1;
}

/* reduce_sum/max/min/mean over `axes` (default all), visiting the input in
 * row-major order: floats accumulate in double and round once, ints in int64
 * (sums wrap). keepdims does not change the order of the kept elements. */
static int eval_reduce(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  const gc_type *it = &in->type;
  int rank = it->rank, reduced[GC_MAX_RANK];
  const gc_attr *aa = gc_op_attr(op, "axes");
  for (int k = 0; k < rank; k++) reduced[k] = aa == NULL;
  if (aa) {
    int64_t axes[GC_MAX_RANK];
    int n = gc_attr_ints(aa, axes, GC_MAX_RANK);
    if (n < 0) return 0;
    for (int j = 0; j < n; j++) {
      int64_t a = axes[j] < 0 ? axes[j] + rank : axes[j];
      if (a < 0 || a >= rank) return 0;
      reduced[a] = 1;
    }
  }
  int64_t st[GC_MAX_RANK], idx[GC_MAX_RANK] = {0}, kept = 1, o = 0;
  for (int k = rank - 1; k >= 0; k--) { /* each input dim's stride in the result */
    st[k] = reduced[k] ? 0 : kept;
    if (!reduced[k]) kept *= it->dims[k];
  }
  int rc = result_alloc(r, &op->results[0]->type, 0, max);
  if (rc <= 0) return rc;
  int64_t numel = gc_type_numel(it);
  if (r->n != kept || numel < 1) return 0;
  gc_opcode opc = op->opcode;
  gc_dtype t = it->dtype;
  if (gc_dtype_is_float(t)) {
    double *acc = malloc((size_t)kept * sizeof *acc);
    if (!acc) return -1;
    double init = opc == GC_OP_REDUCE_MAX ? -INFINITY : opc == GC_OP_REDUCE_MIN ? INFINITY : 0.0;
    for (int64_t j = 0; j < kept; j++) acc[j] = init;
    for (int64_t i = 0; i < numel; i++, next_index(rank, it->dims, idx, &o, st)) {
      double x = elem(in, i).f;
      if (opc == GC_OP_REDUCE_MAX) acc[o] = fmax_op(acc[o], x);
      else if (opc == GC_OP_REDUCE_MIN) acc[o] = fmin_op(acc[o], x);
      else acc[o] += x;
    }
    for (int64_t j = 0; j < kept; j++)
      r->e[j] = from_f64(t, opc == GC_OP_REDUCE_MEAN ? acc[j] / (double)(numel / kept) : acc[j]);
    free(acc);
  } else {
    int64_t init = opc == GC_OP_REDUCE_MAX ? INT64_MIN : opc == GC_OP_REDUCE_MIN ? INT64_MAX : 0;
    for (int64_t j = 0; j < kept; j++) r->e[j].i = init;
    for (int64_t i = 0; i < numel; i++, next_index(rank, it->dims, idx, &o, st)) {
      int64_t x = elem(in, i).i, *a = &r->e[o].i;
      if (opc == GC_OP_REDUCE_MAX) *a = x > *a ? x : *a;
      else if (opc == GC_OP_REDUCE_MIN) *a = x < *a ? x : *a;
      else *a = (int64_t)((uint64_t)*a + (uint64_t)x); /* wraps */
    }
    for (int64_t j = 0; j < kept; j++) r->e[j] = from_i64(t, r->e[j].i);
  }
  compress_splat(r);
  return 1;
}

/* argmax along `axis` (default -1): the first index of the maximum; a NaN
 * counts as the maximum, so the first NaN wins. */
static int eval_argmax(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  const gc_type *it = &in->type, *ot = &op->results[0]->type;
  int axis = axis_attr(op, -1, it->rank);
  if (axis < 0) return 0;
  int64_t outer = dims_prod(it, 0, axis), dim = it->dims[axis];
  int64_t inner = dims_prod(it, axis + 1, it->rank);
  int rc = result_alloc(r, ot, 0, max);
  if (rc <= 0) return rc;
  if (r->n != outer * inner || dim < 1) return 0;
  int flt = gc_dtype_is_float(it->dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t q = 0; q < inner; q++) {
      int64_t best = 0, base = o * dim * inner + q;
      gc_scalar bv = elem(in, base);
      for (int64_t j = 1; j < dim && !(flt && isnan(bv.f)); j++) {
        gc_scalar x = elem(in, base + j * inner);
        if (flt ? isnan(x.f) || x.f > bv.f : x.i > bv.i) bv = x, best = j;
      }
      r->e[o * inner + q] = from_i64(ot->dtype, best);
    }
  compress_splat(r);
  return 1;
}

/* concat: the operands side by side along `axis`. */
static int eval_concat(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  const gc_type *ot = &op->results[0]->type;
  int axis = axis_attr(op, 0, ot->rank);
  if (axis < 0) return 0;
  int rc = result_alloc(r, ot, 0, max);
  if (rc <= 0) return rc;
  int64_t outer = dims_prod(ot, 0, axis), inner = dims_prod(ot, axis + 1, ot->rank), p = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < op->n_operands; k++) {
      int64_t blk = in[k].type.dims[axis] * inner;
      if (blk > r->n - p) return 0;
      for (int64_t j = 0; j < blk; j++) r->e[p++] = elem(&in[k], o * blk + j);
    }
  if (p != r->n) return 0;
  compress_splat(r);
  return 1;
}

/* split: the inverse of concat, one result per size along `axis`. */
static int eval_split(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  const gc_type *it = &in->type;
  int axis = axis_attr(op, 0, it->rank);
  if (axis < 0) return 0;
  for (int k = 0; k < op->n_results; k++) {
    int rc = result_alloc(&r[k], &op->results[k]->type, 0, max);
    if (rc <= 0) return rc;
  }
  int64_t outer = dims_prod(it, 0, axis), inner = dims_prod(it, axis + 1, it->rank), p = 0;
  int64_t numel = gc_type_numel(it);
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < op->n_results; k++) {
      int64_t blk = r[k].type.dims[axis] * inner;
      if ((o + 1) * blk > r[k].n || blk > numel - p) return 0;
      for (int64_t j = 0; j < blk; j++) r[k].e[o * blk + j] = elem(in, p++);
    }
  for (int k = 0; k < op->n_results; k++) compress_splat(&r[k]);
  return 1;
}

/* slice: start/end count from the end when negative, then clamp to [0, dim];
 * out[i] = in[start + i*step] per dim (the sizes come from the result type). */
static int eval_slice(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  const gc_type *it = &in->type, *ot = &op->results[0]->type;
  int rank = it->rank;
  int64_t start[GC_MAX_RANK], step[GC_MAX_RANK], ist[GC_MAX_RANK], st[GC_MAX_RANK];
  int64_t idx[GC_MAX_RANK] = {0}, off = 0;
  const gc_attr *sa = gc_op_attr(op, "start"), *pa = gc_op_attr(op, "step");
  for (int k = 0; k < rank; k++) step[k] = 1;
  if (!sa || gc_attr_ints(sa, start, GC_MAX_RANK) != rank ||
      (pa && gc_attr_ints(pa, step, GC_MAX_RANK) != rank) || ot->rank != rank)
    return 0;
  int rc = result_alloc(r, ot, in->splat, max);
  if (rc <= 0) return rc;
  if (in->splat) {
    r->e[0] = in->e[0];
    return 1;
  }
  row_strides(it, ist);
  for (int k = 0; k < rank; k++) {
    int64_t s = start[k] < 0 ? start[k] + it->dims[k] : start[k];
    s = s < 0 ? 0 : s > it->dims[k] ? it->dims[k] : s;
    off += s * ist[k];
    st[k] = step[k] * ist[k];
  }
  for (int64_t i = 0; i < r->n; i++, next_index(rank, ot->dims, idx, &off, st)) {
    if (off < 0 || off >= in->n) return 0;
    r->e[i] = in->e[off];
  }
  compress_splat(r);
  return 1;
}

/* pad: the input placed at offset begin_k in a tensor filled with `value` (default 0). */
static int eval_pad(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max) {
  const gc_type *it = &in->type, *ot = &op->results[0]->type;
  int64_t pads[2 * GC_MAX_RANK], ost[GC_MAX_RANK], idx[GC_MAX_RANK] = {0}, off = 0;
  const gc_attr *pa = gc_op_attr(op, "pads"), *va = gc_op_attr(op, "value");
  if (!pa || gc_attr_ints(pa, pads, 2 * GC_MAX_RANK) != 2 * it->rank || ot->rank != it->rank ||
      (va && !is_number(va)))
    return 0;
  int rc = result_alloc(r, ot, 0, max);
  if (rc <= 0) return rc;
  gc_scalar fill;
  memset(&fill, 0, sizeof fill); /* 0 and +0.0 */
  if (va) fill = from_attr(ot->dtype, va);
  for (int64_t i = 0; i < r->n; i++) r->e[i] = fill;
  row_strides(ot, ost);
  for (int k = 0; k < it->rank; k++) off += pads[k] * ost[k];
  int64_t numel = gc_type_numel(it);
  for (int64_t i = 0; i < numel; i++, next_index(it->rank, it->dims, idx, &off, ost)) {
    if (off < 0 || off >= r->n) return 0;
    r->e[off] = elem(in, i);
  }
  compress_splat(r);
  return 1;
}

/* gather: numpy take along `axis`; negative indices count from the end, and an
 * index out of range is an error at the op (reported when d is not NULL). */
static int eval_gather(const gc_op *op, const gc_cval *in, gc_cval *r, int64_t max,
                       gc_diags *d) {
  const gc_type *xt = &in[0].type;
  int axis = axis_attr(op, 0, xt->rank);
  if (axis < 0 || gc_dtype_is_float(in[1].type.dtype)) return 0;
  int64_t dim = xt->dims[axis], n = gc_type_numel(&in[1].type);
  int64_t outer = dims_prod(xt, 0, axis), inner = dims_prod(xt, axis + 1, xt->rank);
  for (int64_t j = 0; j < n; j++) {
    int64_t k = elem(&in[1], j).i;
    if (k < -dim || k >= dim) {
      if (d)
        gc_error_at(d, GRAPHC_STATUS_RUNTIME_ERROR, op->loc,
                    "gather index %lld is out of range for axis %d of size %lld", (long long)k,
                    axis, (long long)dim);
      return 0;
    }
  }
  int rc = result_alloc(r, &op->results[0]->type, 0, max);
  if (rc <= 0) return rc;
  if (r->n != outer * n * inner) return 0;
  int64_t p = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < n; j++) {
      int64_t k = elem(&in[1], j).i;
      if (k < 0) k += dim;
      for (int64_t q = 0; q < inner; q++) r->e[p++] = elem(&in[0], (o * dim + k) * inner + q);
    }
  compress_splat(r);
  return 1;
}

/* Evaluate op on constant operands; see fold.h. */
int gc_fold_eval(const gc_op *op, const gc_cval *in, gc_cval *out, int64_t max_elems,
                 gc_diags *d) {
  int rc;
  memset(out, 0, (size_t)op->n_results * sizeof *out);
  if (op->n_results != 1 && op->opcode != GC_OP_SPLIT) return 0;
  switch (op->opcode) {
    case GC_OP_CONST: rc = gc_cval_read(op, out); break;
    case GC_OP_IOTA: rc = eval_iota(op, out, max_elems); break;
    case GC_OP_RESHAPE: rc = eval_reshape(op, in, out, max_elems); break;
    case GC_OP_TRANSPOSE: rc = eval_transpose(op, in, out, max_elems); break;
    case GC_OP_BROADCAST: rc = eval_elementwise(op, in, out, max_elems); break;
    case GC_OP_CONCAT: rc = eval_concat(op, in, out, max_elems); break;
    case GC_OP_SPLIT: rc = eval_split(op, in, out, max_elems); break;
    case GC_OP_SLICE: rc = eval_slice(op, in, out, max_elems); break;
    case GC_OP_PAD: rc = eval_pad(op, in, out, max_elems); break;
    case GC_OP_GATHER: rc = eval_gather(op, in, out, max_elems, d); break;
    case GC_OP_ARGMAX: rc = eval_argmax(op, in, out, max_elems); break;
    case GC_OP_REDUCE_SUM:
    case GC_OP_REDUCE_MAX:
    case GC_OP_REDUCE_MIN:
    case GC_OP_REDUCE_MEAN: rc = eval_reduce(op, in, out, max_elems); break;
    default:
      if (gc_op_infos[op->opcode].kind != GC_KIND_ELEMENTWISE || op->n_operands > 3) return 0;
      rc = eval_elementwise(op, in, out, max_elems);
      break;
  }
  if (rc != 1)
    for (int k = 0; k < op->n_results; k++) gc_cval_free(&out[k]);
  return rc;
}

/* Ops this pass folds (gc_fold_eval evaluates more; see fold.h). */
static int foldable(const gc_op *op) {
  if (op->n_results != 1 || op->n_operands < 1) return 0;
  switch (op->opcode) {
    case GC_OP_RESHAPE:
    case GC_OP_TRANSPOSE:
    case GC_OP_BROADCAST: return 1;
    default: return gc_op_infos[op->opcode].kind == GC_KIND_ELEMENTWISE && op->n_operands <= 3;
  }
}

/* ---- writing constants --------------------------------------------------------------- */

/* One element as an attribute of the dtype's kind. */
static gc_attr elem_attr(gc_dtype t, gc_scalar s) {
  gc_attr a = {0};
  if (gc_dtype_is_float(t)) {
    a.kind = GC_ATTR_FLOAT;
    a.u.f = s.f;
  } else if (t == GRAPHC_DTYPE_BOOL) {
    a.kind = GC_ATTR_BOOL;
    a.u.b = s.i != 0;
  } else {
    a.kind = GC_ATTR_INT;
    a.u.i = s.i;
  }
  return a;
}

/* Write c as `const(value=..., shape=..., dtype=...)` in op's place. */
gc_op *gc_fold_replace_by_const(gc_rewriter *rw, gc_op *op, const gc_cval *c) {
  gc_dtype t = c->type.dtype;
  if (gc_dtype_is_int(t))
    for (int64_t i = 0; i < c->n; i++)
      if (c->e[i].i <= -LITERAL_LIMIT || c->e[i].i >= LITERAL_LIMIT) return NULL;
  gc_named_attr attrs[3];
  int na = 0;
  attrs[na].name = "value";
  if (c->splat) {
    attrs[na++].val = elem_attr(t, c->e[0]);
  } else {
    gc_attr *items = gc_arena_alloc(&rw->g->arena, (size_t)c->n * sizeof *items);
    if (!items) {
      rw->oom = 1;
      return NULL;
    }
    for (int64_t i = 0; i < c->n; i++) items[i] = elem_attr(t, c->e[i]);
    attrs[na].val = (gc_attr){.kind = GC_ATTR_LIST};
    attrs[na].val.u.list.items = items;
    attrs[na++].val.u.list.n = (int)c->n;
  }
  /* shape: needed unless the default ([] for a scalar, [len] for a list) is right */
  if (c->splat ? c->type.rank > 0 : c->type.rank != 1) {
    attrs[na].name = "shape";
    attrs[na++].val = gc_rw_attr_ints(rw, c->type.dims, c->type.rank);
  }
  attrs[na].name = "dtype";
  attrs[na++].val = gc_rw_attr_dtype(t);
  return gc_rw_replace_with_new(rw, op, GC_OP_CONST, 0, NULL, na, attrs);
}

/* ---- the pass --------------------------------------------------------------------------- */

/* Fold op if every operand is a const op; 1 folded, 0 not, -1 out of memory. */
static int fold_op(gc_rewriter *rw, gc_op *op) {
  gc_cval in[3], r = {0};
  memset(in, 0, sizeof in);
  int n = op->n_operands, rc = 1;
  for (int k = 0; k < n; k++)
    if (!op->operands[k]->def || op->operands[k]->def->opcode != GC_OP_CONST) return 0;
  for (int k = 0; k < n && rc == 1; k++) rc = gc_cval_read(op->operands[k]->def, &in[k]);
  if (rc == 1) rc = gc_fold_eval(op, in, &r, FOLD_MAX_ELEMS, NULL);
  if (rc == 1 && !gc_fold_replace_by_const(rw, op, &r)) rc = 0;
  for (int k = 0; k < n; k++) gc_cval_free(&in[k]);
  gc_cval_free(&r);
  if (rc < 0) rw->oom = 1;
  return rc;
}

/* Walk the ops in program order and fold each one whose operands are consts
 * (results of earlier folds included). Returns the number folded. */
int gc_pass_fold(gc_graph *g, gc_diags *d) {
  gc_rewriter rw;
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    if (foldable(op)) fold_op(&rw, op);
  }
  return gc_rw_finish(&rw);
}
