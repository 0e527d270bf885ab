/* fold.c - constant folding: an op whose operands are all `const` ops is
 * evaluated at compile time and replaced by a `const` op.
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
    default: return x;
  }
}

/* An exact int64 rounded once to a float dtype. */
static double int_to_float(gc_dtype t, int64_t v) {
  switch (t) {
    case GRAPHC_DTYPE_F32: return (double)(float)v;
    case GRAPHC_DTYPE_F16: return gc_f16_to_f64(gc_i64_to_f16(v));
    case GRAPHC_DTYPE_BF16: return gc_bf16_to_f64(gc_i64_to_bf16(v));
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
    case GC_OP_CAST: return flt ? from_f64(to, x[0].f) : from_i64(to, x[0].i);
    case GC_OP_SELECT: return x[0].i != 0 ? x[1] : x[2];
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

/* Allocate a result: one element for a splat, else numel (0 when too big). */
static int result_alloc(gc_cval *r, const gc_type *t, int splat) {
  r->type = *t;
  r->splat = splat;
  int64_t numel = gc_type_numel(t);
  if (splat)
    r->n = 1;
  else if (numel < 0 || numel > FOLD_MAX_ELEMS)
    return 0;
  else
    r->n = numel;
  r->e = malloc((size_t)r->n * sizeof *r->e);
  return r->e ? 1 : -1;
}

/* Elementwise ops and broadcast: each output element from the operands'
 * elements at the broadcast positions. */
static int eval_elementwise(const gc_op *op, const gc_cval *in, gc_cval *r) {
  int n = op->n_operands, splat = 1;
  const gc_type *ot = &op->results[0]->type;
  for (int k = 0; k < n; k++) splat &= in[k].splat;
  int rc = result_alloc(r, ot, splat);
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
static int eval_transpose(const gc_op *op, const gc_cval *in, gc_cval *r) {
  const gc_type *ot = &op->results[0]->type;
  int rc = result_alloc(r, ot, in->splat);
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
static int eval_reshape(const gc_op *op, const gc_cval *in, gc_cval *r) {
  int rc = result_alloc(r, &op->results[0]->type, in->splat);
  if (rc <= 0) return rc;
  memcpy(r->e, in->e, (size_t)r->n * sizeof *r->e);
  return 1;
}

/* Ops this pass evaluates. */
static int foldable(const gc_op *op) {
  if (op->n_results != 1 || op->n_operands < 1) return 0;
  switch (op->opcode) {
    case GC_OP_RESHAPE:
    case GC_OP_TRANSPOSE:
    case GC_OP_BROADCAST: return 1;
    default: return gc_op_infos[op->opcode].kind == GC_KIND_ELEMENTWISE && op->n_operands <= 3;
  }
}

/* Evaluate op on its constant operands: 1 with *r filled, 0 when not folded, -1 OOM. */
static int eval_op(const gc_op *op, const gc_cval *in, gc_cval *r) {
  switch (op->opcode) {
    case GC_OP_RESHAPE: return eval_reshape(op, in, r);
    case GC_OP_TRANSPOSE: return eval_transpose(op, in, r);
    default: return eval_elementwise(op, in, r);
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
  if (rc == 1) rc = eval_op(op, in, &r);
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
