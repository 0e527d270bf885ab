/* onnx_sym.c - shape arithmetic on symbolic dims at import time.
 *
 * `Shape` of a tensor with symbolic dims gives an i64 constant whose entries
 * may be GC_DIM_SYM(i) (a graph symbol). Such a "symbolic int vector" folds
 * through the ops torch's exporter builds shapes with:
 *   - data movement (reshape, transpose, broadcast, concat, slice, gather,
 *     split, a cast to i64) copies the entries unchanged: gc_fold_eval does it;
 *   - elementwise add, sub, mul, div, min, max, neg on such entries build symbol
 *     expressions (ir/symexpr.c) and store the resulting symbol (derived symbols
 *     are interned, so B*S computed twice is one symbol);
 *   - comparisons fold when the answer holds for every binding (dims are >= 1
 *     and within their ranges), and select picks by a concrete condition.
 * Anything else on a symbolic vector is not folded; a symbolic vector never
 * becomes tensor data (ox_materialize refuses it), it only ends up in `dims`
 * attributes (reshape, broadcast, const, iota), which binding substitutes.
 */
#include <string.h>

#include "frontend/onnx_internal.h"

int ox_is_sym(const ox *x, int64_t v) {
  return GC_DIM_IS_SYM(v) && v - GC_DIM_SYM_BASE < x->g->n_syms; /* 64-bit: INT64_MAX is no symbol */
}

int ox_const_has_sym(const ox *x, const ox_const *k) {
  if (!k || k->dtype != GRAPHC_DTYPE_I64) return 0;
  for (int64_t i = 0; i < k->numel; i++)
    if (ox_is_sym(x, ox_const_geti(k, i))) return 1;
  return 0;
}

/* Flat index into operand type t of element `flat` of the (broadcast) result type o. */
static int64_t bcast_index(const gc_type *t, const gc_type *o, int64_t flat) {
  int64_t idx = 0, stride = 1;
  for (int i = o->rank - 1, j = t->rank - 1; i >= 0; i--, j--) {
    int64_t c = flat % o->dims[i];
    flat /= o->dims[i];
    if (j < 0) continue;
    if (t->dims[j] != 1) idx += c * stride;
    stride *= t->dims[j];
  }
  return idx;
}

/* Element `flat` of the result, read from operand i, as an expression. */
static const gc_sym_expr *operand_expr(ox *x, const gc_op *op, int i, int64_t flat) {
  const ox_const *k = x->kv[op->operands[i]->id];
  int64_t v = ox_const_geti(k, bcast_index(&op->operands[i]->type, &op->results[0]->type, flat));
  return ox_is_sym(x, v) ? gc_sx_dim(x->g, v) : gc_sx_const(x->g, v);
}

/* A comparison a OP b that holds or fails for every binding: 1 true, 0 false, -1 unknown. */
static int decide(ox *x, gc_opcode opc, const gc_sym_expr *a, const gc_sym_expr *b) {
  const gc_sym_expr *d = gc_sx_add(x->g, a, gc_sx_mul(x->g, gc_sx_const(x->g, -1), b));
  int64_t lo, hi;
  if (!d || !gc_sx_bounds(x->g, d, &lo, &hi)) return -1;
  switch (opc) { /* on d = a - b, within lo..hi */
    case GC_OP_EQ: return lo == 0 && hi == 0 ? 1 : (lo > 0 || hi < 0) ? 0 : -1;
    case GC_OP_NE: return lo == 0 && hi == 0 ? 0 : (lo > 0 || hi < 0) ? 1 : -1;
    case GC_OP_LT: return hi < 0 ? 1 : lo >= 0 ? 0 : -1;
    case GC_OP_LE: return hi <= 0 ? 1 : lo > 0 ? 0 : -1;
    case GC_OP_GT: return lo > 0 ? 1 : hi <= 0 ? 0 : -1;
    case GC_OP_GE: return lo >= 0 ? 1 : hi < 0 ? 0 : -1;
    default: return -1;
  }
}

/* One element of an elementwise op; 0 with *out set, 1 when it cannot be folded. */
static int elem(ox *x, const gc_op *op, int64_t flat, int64_t *out) {
  gc_graph *g = x->g;
  gc_opcode opc = op->opcode;
  if (opc == GC_OP_SELECT) {
    const ox_const *c = x->kv[op->operands[0]->id];
    int64_t ci = bcast_index(&op->operands[0]->type, &op->results[0]->type, flat);
    const gc_sym_expr *e = operand_expr(x, op, ox_const_geti(c, ci) ? 1 : 2, flat);
    if (!e) return 1;
    *out = e->kind == GC_SX_CONST ? e->c : gc_sym_intern(g, e);
    return e->kind != GC_SX_CONST && *out < 0;
  }
  const gc_sym_expr *a = operand_expr(x, op, 0, flat), *b = NULL, *r = NULL;
  if (op->n_operands > 1) b = operand_expr(x, op, 1, flat);
  if (!a || (op->n_operands > 1 && !b)) return 1;
  switch (opc) {
    case GC_OP_NEG: r = gc_sx_mul(g, gc_sx_const(g, -1), a); break;
    case GC_OP_ADD: r = gc_sx_add(g, a, b); break;
    case GC_OP_SUB: r = gc_sx_add(g, a, gc_sx_mul(g, gc_sx_const(g, -1), b)); break;
    case GC_OP_MUL: r = gc_sx_mul(g, a, b); break;
    case GC_OP_DIV: r = gc_sx_op(g, GC_SX_FLOORDIV, a, b); break; /* dims are >= 0: floor = trunc */
    case GC_OP_MINIMUM: r = gc_sx_op(g, GC_SX_MIN, a, b); break;
    case GC_OP_MAXIMUM: r = gc_sx_op(g, GC_SX_MAX, a, b); break;
    case GC_OP_EQ: case GC_OP_NE: case GC_OP_LT: case GC_OP_LE: case GC_OP_GT: case GC_OP_GE: {
      int v = decide(x, opc, a, b);
      if (v < 0) return 1;
      *out = v;
      return 0;
    }
    default: return 1;
  }
  if (!r) return 1;
  *out = r->kind == GC_SX_CONST ? r->c : gc_sym_intern(g, r);
  return r->kind != GC_SX_CONST && *out < 0;
}

int ox_fold_sym(ox *x, const gc_op *op, ox_const **res) {
  switch (op->opcode) {
    case GC_OP_RESHAPE: case GC_OP_TRANSPOSE: case GC_OP_BROADCAST: case GC_OP_CONCAT:
    case GC_OP_SLICE: case GC_OP_SPLIT:
      return 2;
    case GC_OP_GATHER: return ox_const_has_sym(x, x->kv[op->operands[1]->id]) ? 0 : 2;
    case GC_OP_CAST: return op->results[0]->type.dtype == GRAPHC_DTYPE_I64 ? 2 : 0;
    default: break;
  }
  if (op->n_results != 1) return 0;
  const gc_type *t = &op->results[0]->type;
  if (t->dtype != GRAPHC_DTYPE_I64 && t->dtype != GRAPHC_DTYPE_BOOL) return 0;
  ox_const *k = ox_const_new(x, t->dtype, t->rank, t->dims);
  if (!k) return -1;
  for (int64_t i = 0; i < k->numel; i++) {
    int64_t v;
    if (elem(x, op, i, &v)) return 0;
    ox_const_seti(k, i, v);
  }
  res[0] = k;
  return 1;
}

int ox_in_dims(ox *x, int i, const char *what, int64_t *out, int max) {
  return ox_in_ints_sym(x, i, what, out, max, 1);
}
