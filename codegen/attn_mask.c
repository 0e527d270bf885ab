/* attn_mask.c - is an attention group's additive mask causal? (fusion.c, step 0)
 *
 * A mask m added to the scores [batch..., Sq, Sk] is causal with offset off >= 0 when, for
 * every batch entry, m(i, j) = 0 for j <= i + off and m(i, j) <= -1e4 (-inf, finfo.min, a
 * large negative) for j > i + off. off = 0 is torch's is_causal (top-left aligned); off =
 * Sk - Sq the bottom-right alignment of HF decoders with past keys. The emitter then
 * computes the mask from row and key indices on the diagonal blocks and skips the key
 * blocks above the diagonal (codegen/emit_attn.c).
 *
 * The mask is read by a point evaluator over the ops that make it: consts (splats and
 * value lists), iotas, broadcasts, reshapes, transposes, slices, casts, unary and binary
 * elementwise ops (numpy broadcasting), comparisons and selects -- the forms exporters'
 * Trilu / Where / masked_fill land in after import and folding. Anything else (a param: a
 * padding mask) is no causal mask: the group keeps its mask from memory. Every element
 * the scores see is checked (at most MAX_EVALS evaluations), so a wrong entry anywhere
 * keeps the memory mask.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/fusion.h"

enum { MAX_DEPTH = 24, MAX_NODES = 64, MAX_LISTS = 8 };
#define MAX_EVALS ((int64_t)1 << 26)
#define MASKED_MAX (-1e4)

typedef struct mk_list {
  const gc_value *v;
  double *data;           /* the const's leaves, row-major */
} mk_list;

typedef struct mk {
  mk_list lists[MAX_LISTS];
  int n_lists;
  int nodes;
} mk;

/* Number of leaves of a (nested) list attribute. */
static int64_t leaf_count(const gc_attr *a) {
  if (a->kind != GC_ATTR_LIST) return 1;
  int64_t n = 0;
  for (int i = 0; i < a->u.list.n; i++) n += leaf_count(&a->u.list.items[i]);
  return n;
}

static double leaf_value(const gc_attr *a) {
  switch (a->kind) {
    case GC_ATTR_INT: return (double)a->u.i;
    case GC_ATTR_FLOAT: return a->u.f;
    case GC_ATTR_BOOL: return a->u.b ? 1.0 : 0.0;
    default: return NAN;
  }
}

static void leaf_fill(const gc_attr *a, double *out, int64_t *n) {
  if (a->kind != GC_ATTR_LIST) {
    out[(*n)++] = leaf_value(a);
    return;
  }
  for (int i = 0; i < a->u.list.n; i++) leaf_fill(&a->u.list.items[i], out, n);
}

/* Ops the evaluator knows. */
static int known_op(gc_opcode o) {
  switch (o) {
    case GC_OP_CONST: case GC_OP_IOTA: case GC_OP_BROADCAST: case GC_OP_RESHAPE: case GC_OP_TRANSPOSE:
    case GC_OP_SLICE: case GC_OP_CAST: case GC_OP_NEG: case GC_OP_NOT: case GC_OP_ABS:
    case GC_OP_ADD: case GC_OP_SUB: case GC_OP_MUL: case GC_OP_DIV: case GC_OP_MAXIMUM: case GC_OP_MINIMUM:
    case GC_OP_EQ: case GC_OP_NE: case GC_OP_LT: case GC_OP_LE: case GC_OP_GT: case GC_OP_GE:
    case GC_OP_AND: case GC_OP_OR: case GC_OP_SELECT:
      return 1;
    default:
      return 0;
  }
}

/* Can v be evaluated (a closed subgraph of known ops, small enough)? Flattens value lists. */
static int mk_check(mk *m, const gc_value *v, int depth) {
  const gc_op *d = v->def;
  if (!d || depth > MAX_DEPTH || ++m->nodes > MAX_NODES || !known_op(d->opcode)) return 0;
  if (d->opcode == GC_OP_CONST) {
    const gc_attr *a = gc_op_attr(d, "value");
    if (!a) return 0;
    if (a->kind != GC_ATTR_LIST) return !isnan(leaf_value(a));
    for (int i = 0; i < m->n_lists; i++)
      if (m->lists[i].v == v) return 1;
    int64_t n = gc_type_numel(&v->type);
    if (m->n_lists == MAX_LISTS || leaf_count(a) != n) return 0;
    double *data = malloc((size_t)(n ? n : 1) * sizeof *data);
    if (!data) return 0;
    int64_t k = 0;
    leaf_fill(a, data, &k);
    m->lists[m->n_lists++] = (mk_list){v, data};
    return 1;
  }
  if (d->opcode == GC_OP_SLICE) {
    int64_t st[GC_MAX_RANK], sp[GC_MAX_RANK];
    int r = d->operands[0]->type.rank;
    if (gc_attr_ints(gc_op_attr(d, "start"), st, GC_MAX_RANK) != r) return 0;
    const gc_attr *sa = gc_op_attr(d, "step");
    if (sa && gc_attr_ints(sa, sp, GC_MAX_RANK) != r) return 0;
    for (int i = 0; i < r; i++)
      if (st[i] < 0 || (sa && sp[i] <= 0)) return 0;
  }
  for (int i = 0; i < d->n_operands; i++)
    if (!mk_check(m, d->operands[i], depth + 1)) return 0;
  return 1;
}

/* Coordinates in operand type ot of result coordinates co (type rt), numpy broadcasting. */
static void bcast_coords(const gc_type *rt, const int64_t *co, const gc_type *ot, int64_t *oc) {
  for (int i = 0; i < ot->rank; i++) {
    int ri = i + rt->rank - ot->rank;
    oc[i] = ot->dims[i] == 1 || ri < 0 ? 0 : co[ri];
  }
}

/* Round a value to dtype t as the graph would hold it (integers truncate, bools 0 / 1). */
static double as_dtype(double x, gc_dtype t) {
  if (t == GRAPHC_DTYPE_BOOL) return x != 0.0;
  if (gc_dtype_is_int(t)) return trunc(x);
  if (t == GRAPHC_DTYPE_F32 || t == GRAPHC_DTYPE_F16 || t == GRAPHC_DTYPE_BF16) {
    float f = (float)x;
    /* beyond the half types' range: their infinity (the classes below only need the sign) */
    if (t == GRAPHC_DTYPE_F16 && fabsf(f) > 65504.0f) return x < 0 ? -INFINITY : INFINITY;
    return f;
  }
  return x;
}

/* Value of v at coordinates co (mk_check passed). */
static double mk_eval(const mk *m, const gc_value *v, const int64_t *co) {
  const gc_op *d = v->def;
  const gc_type *rt = &v->type;
  int64_t oc[GC_MAX_RANK], p[GC_MAX_RANK];
  double a, b;
  switch (d->opcode) {
    case GC_OP_CONST: {
      const gc_attr *at = gc_op_attr(d, "value");
      if (at->kind != GC_ATTR_LIST) return as_dtype(leaf_value(at), rt->dtype);
      int64_t lin = 0;
      for (int i = 0; i < rt->rank; i++) lin = lin * rt->dims[i] + co[i];
      for (int i = 0; i < m->n_lists; i++)
        if (m->lists[i].v == v) return as_dtype(m->lists[i].data[lin], rt->dtype);
      return NAN;
    }
    case GC_OP_IOTA: {
      int64_t ax = gc_op_attr_int(d, "axis", 0);
      if (ax < 0) ax += rt->rank;
      return (double)co[ax];
    }
    case GC_OP_BROADCAST:
      bcast_coords(rt, co, &d->operands[0]->type, oc);
      return mk_eval(m, d->operands[0], oc);
    case GC_OP_RESHAPE: {
      const gc_type *ot = &d->operands[0]->type;
      int64_t lin = 0;
      for (int i = 0; i < rt->rank; i++) lin = lin * rt->dims[i] + co[i];
      for (int i = ot->rank - 1; i >= 0; i--) {
        oc[i] = lin % ot->dims[i];
        lin /= ot->dims[i];
      }
      return mk_eval(m, d->operands[0], oc);
    }
    case GC_OP_TRANSPOSE:
      gc_attr_ints(gc_op_attr(d, "perm"), p, GC_MAX_RANK);
      for (int i = 0; i < rt->rank; i++) oc[p[i]] = co[i];
      return mk_eval(m, d->operands[0], oc);
    case GC_OP_SLICE: {
      int64_t st[GC_MAX_RANK], sp[GC_MAX_RANK];
      int r = rt->rank;
      gc_attr_ints(gc_op_attr(d, "start"), st, GC_MAX_RANK);
      const gc_attr *sa = gc_op_attr(d, "step");
      for (int i = 0; i < r; i++) sp[i] = 1;
      if (sa) gc_attr_ints(sa, sp, GC_MAX_RANK);
      for (int i = 0; i < r; i++) oc[i] = st[i] + co[i] * sp[i];
      return mk_eval(m, d->operands[0], oc);
    }
    case GC_OP_SELECT: {
      bcast_coords(rt, co, &d->operands[0]->type, oc);
      int which = mk_eval(m, d->operands[0], oc) != 0.0 ? 1 : 2;
      bcast_coords(rt, co, &d->operands[which]->type, oc);
      return as_dtype(mk_eval(m, d->operands[which], oc), rt->dtype);
    }
    default:
      break;
  }
  bcast_coords(rt, co, &d->operands[0]->type, oc);
  a = mk_eval(m, d->operands[0], oc);
  if (d->n_operands == 1) {
    switch (d->opcode) {
      case GC_OP_CAST: return as_dtype(a, rt->dtype);
      case GC_OP_NEG: return as_dtype(-a, rt->dtype);
      case GC_OP_ABS: return fabs(a);
      case GC_OP_NOT: return a == 0.0;
      default: return NAN;
    }
  }
  bcast_coords(rt, co, &d->operands[1]->type, oc);
  b = mk_eval(m, d->operands[1], oc);
  switch (d->opcode) {
    case GC_OP_ADD: return as_dtype(a + b, rt->dtype);
    case GC_OP_SUB: return as_dtype(a - b, rt->dtype);
    case GC_OP_MUL: return as_dtype(a * b, rt->dtype);
    case GC_OP_DIV: return b == 0.0 && gc_dtype_is_int(rt->dtype) ? NAN : as_dtype(a / b, rt->dtype);
    case GC_OP_MAXIMUM: return a > b ? a : b;
    case GC_OP_MINIMUM: return a < b ? a : b;
    case GC_OP_EQ: return a == b;
    case GC_OP_NE: return a != b;
    case GC_OP_LT: return a < b;
    case GC_OP_LE: return a <= b;
    case GC_OP_GT: return a > b;
    case GC_OP_GE: return a >= b;
    case GC_OP_AND: return a != 0.0 && b != 0.0;
    case GC_OP_OR: return a != 0.0 || b != 0.0;
    default: return NAN;
  }
}

/* The mask's class at (batch entry bi of its own batch dims, row i, key j): 0 visible,
 * 1 masked, -1 neither. */
static int mk_class(const mk *m, const gc_value *mask, int64_t bi, int64_t i, int64_t j) {
  const gc_type *t = &mask->type;
  int64_t co[GC_MAX_RANK];
  int r = t->rank;
  for (int x = r - 3; x >= 0; x--) {
    co[x] = bi % t->dims[x];
    bi /= t->dims[x];
  }
  if (r >= 2) co[r - 2] = t->dims[r - 2] == 1 ? 0 : i;
  if (r >= 1) co[r - 1] = t->dims[r - 1] == 1 ? 0 : j;
  double x = mk_eval(m, mask, co);
  return x == 0.0 ? 0 : x <= MASKED_MAX ? 1 : -1;
}

int gc_attn_causal_mask(const gc_value *mask, const gc_type *st, int64_t *off) {
  int rs = st->rank;
  const gc_type *t = &mask->type;
  if (rs < 2 || t->rank > rs) return 0;
  int64_t Sq = st->dims[rs - 2], Sk = st->dims[rs - 1], nb = 1;
  for (int x = 0; x < t->rank - 2; x++) nb *= t->dims[x];
  if (Sq < 1 || Sk < 1 || (double)nb * (double)Sq * (double)Sk > (double)MAX_EVALS) return 0;
  mk m;
  memset(&m, 0, sizeof m);
  int ok = mk_check(&m, mask, 0);
  int64_t o = Sk - 1;
  if (ok) {
    /* the offset: the last visible key of row 0, less one */
    for (int64_t j = 0; j < Sk; j++) {
      int c = mk_class(&m, mask, 0, 0, j);
      if (c != 0) {
        ok = c == 1 && j > 0;
        o = j - 1;
        break;
      }
    }
  }
  for (int64_t bi = 0; ok && bi < nb; bi++)
    for (int64_t i = 0; ok && i < Sq; i++)
      for (int64_t j = 0; ok && j < Sk; j++) ok = mk_class(&m, mask, bi, i, j) == (j > i + o);
  for (int i = 0; i < m.n_lists; i++) free(m.lists[i].data);
  if (ok) *off = o;
  return ok;
}
