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
 *
 * A mask may also be causal AND a residual mask (gc_attn_causal_resid): select(and(C, R),
 * a, b) with C a causal condition, a finite and b <= -1e4 (or select(or(F, R), b, a), F
 * true above the diagonal), or add(C, R) with C causal and additive -- the key-padding
 * masks of decoders. The group is causal (the kernel skips the blocks above the
 * diagonal) and still reads the residual select(R, a, b) (or R) where keys are visible.
 * Only a row the residual hides entirely can differ from the graph's mask with a finite
 * b: the graph's softmax then spreads over every key, the kernel's over the row's
 * causal keys (with b = -inf both give NaN, or 0 behind the NaN guard).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/fusion.h"

enum { MAX_DEPTH = 24, MAX_NODES = 64 };
#define MAX_EVALS ((int64_t)1 << 26)
#define MASKED_MAX (-1e4)

/* One op of the mask's subgraph, its attributes read once. */
typedef struct mk_node {
  gc_opcode op;
  gc_dtype dt;
  int rank;
  int64_t dims[GC_MAX_RANK];
  int n_in, in[3];        /* operand nodes */
  double k;               /* splat const: its value */
  double *list;           /* value list const: its leaves, row-major (owned) */
  int64_t a[GC_MAX_RANK]; /* iota: a[0] the axis; transpose: perm; slice: start */
  int64_t b[GC_MAX_RANK]; /* slice: step */
} mk_node;

typedef struct mk {
  mk_node nodes[MAX_NODES];
  int n;
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

/* v's node (a closed subgraph of known ops, small enough), -1 when there is none. */
static int mk_build(mk *m, const gc_value *v, int depth) {
  const gc_op *d = v->def;
  if (!d || depth > MAX_DEPTH || m->n == MAX_NODES || !known_op(d->opcode) || d->n_operands > 3) return -1;
  int ni = m->n++;
  mk_node *nd = &m->nodes[ni];
  memset(nd, 0, sizeof *nd);
  nd->op = d->opcode;
  nd->dt = v->type.dtype;
  nd->rank = v->type.rank;
  memcpy(nd->dims, v->type.dims, sizeof nd->dims);
  if (d->opcode == GC_OP_CONST) {
    const gc_attr *a = gc_op_attr(d, "value");
    if (!a) return -1;
    if (a->kind != GC_ATTR_LIST) {
      nd->k = leaf_value(a);
      return isnan(nd->k) ? -1 : ni;
    }
    int64_t n = gc_type_numel(&v->type);
    if (leaf_count(a) != n) return -1;
    nd->list = malloc((size_t)(n ? n : 1) * sizeof *nd->list);
    if (!nd->list) return -1;
    int64_t k = 0;
    leaf_fill(a, nd->list, &k);
    return ni;
  }
  if (d->opcode == GC_OP_IOTA) {
    nd->a[0] = gc_op_attr_int(d, "axis", 0);
    if (nd->a[0] < 0) nd->a[0] += nd->rank;
    return nd->a[0] >= 0 && nd->a[0] < nd->rank ? ni : -1;
  }
  if (d->opcode == GC_OP_TRANSPOSE && gc_attr_ints(gc_op_attr(d, "perm"), nd->a, GC_MAX_RANK) != nd->rank) return -1;
  if (d->opcode == GC_OP_SLICE) {
    int r = d->operands[0]->type.rank;
    if (gc_attr_ints(gc_op_attr(d, "start"), nd->a, GC_MAX_RANK) != r) return -1;
    const gc_attr *sa = gc_op_attr(d, "step");
    for (int i = 0; i < r; i++) nd->b[i] = 1;
    if (sa && gc_attr_ints(sa, nd->b, GC_MAX_RANK) != r) return -1;
    for (int i = 0; i < r; i++)
      if (nd->a[i] < 0 || nd->b[i] <= 0) return -1;
  }
  nd->n_in = d->n_operands;
  for (int i = 0; i < d->n_operands; i++) {
    int c = mk_build(m, d->operands[i], depth + 1);
    if (c < 0) return -1;
    m->nodes[ni].in[i] = c;
  }
  return ni;
}

/* Coordinates in operand node o of result coordinates co (node r), numpy broadcasting. */
static void bcast_coords(const mk_node *r, const int64_t *co, const mk_node *o, int64_t *oc) {
  for (int i = 0; i < o->rank; i++) {
    int ri = i + r->rank - o->rank;
    oc[i] = o->dims[i] == 1 || ri < 0 ? 0 : co[ri];
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

/* Value of node ni at coordinates co. */
static double mk_eval(const mk *m, int ni, const int64_t *co) {
  const mk_node *nd = &m->nodes[ni];
  const mk_node *o0 = nd->n_in > 0 ? &m->nodes[nd->in[0]] : NULL;
  int64_t oc[GC_MAX_RANK], lin = 0;
  double a, b;
  switch (nd->op) {
    case GC_OP_CONST:
      if (!nd->list) return as_dtype(nd->k, nd->dt);
      for (int i = 0; i < nd->rank; i++) lin = lin * nd->dims[i] + co[i];
      return as_dtype(nd->list[lin], nd->dt);
    case GC_OP_IOTA:
      return (double)co[nd->a[0]];
    case GC_OP_BROADCAST:
      bcast_coords(nd, co, o0, oc);
      return mk_eval(m, nd->in[0], oc);
    case GC_OP_RESHAPE:
      for (int i = 0; i < nd->rank; i++) lin = lin * nd->dims[i] + co[i];
      for (int i = o0->rank - 1; i >= 0; i--) {
        oc[i] = lin % o0->dims[i];
        lin /= o0->dims[i];
      }
      return mk_eval(m, nd->in[0], oc);
    case GC_OP_TRANSPOSE:
      for (int i = 0; i < nd->rank; i++) oc[nd->a[i]] = co[i];
      return mk_eval(m, nd->in[0], oc);
    case GC_OP_SLICE:
      for (int i = 0; i < nd->rank; i++) oc[i] = nd->a[i] + co[i] * nd->b[i];
      return mk_eval(m, nd->in[0], oc);
    case GC_OP_SELECT: {
      bcast_coords(nd, co, o0, oc);
      int which = mk_eval(m, nd->in[0], oc) != 0.0 ? 1 : 2;
      bcast_coords(nd, co, &m->nodes[nd->in[which]], oc);
      return as_dtype(mk_eval(m, nd->in[which], oc), nd->dt);
    }
    default:
      break;
  }
  bcast_coords(nd, co, o0, oc);
  a = mk_eval(m, nd->in[0], oc);
  if (nd->n_in == 1) {
    switch (nd->op) {
      case GC_OP_CAST: return as_dtype(a, nd->dt);
      case GC_OP_NEG: return as_dtype(-a, nd->dt);
      case GC_OP_ABS: return fabs(a);
      case GC_OP_NOT: return a == 0.0;
      default: return NAN;
    }
  }
  bcast_coords(nd, co, &m->nodes[nd->in[1]], oc);
  b = mk_eval(m, nd->in[1], oc);
  switch (nd->op) {
    case GC_OP_ADD: return as_dtype(a + b, nd->dt);
    case GC_OP_SUB: return as_dtype(a - b, nd->dt);
    case GC_OP_MUL: return as_dtype(a * b, nd->dt);
    case GC_OP_DIV: return b == 0.0 && gc_dtype_is_int(nd->dt) ? NAN : as_dtype(a / b, nd->dt);
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

/* How a mask's values read: an additive mask (0 visible, <= -1e4 masked), a condition that
 * is true where a key is visible, or one that is true where it is masked. */
typedef enum mk_mode { MK_ADDITIVE, MK_VISIBLE, MK_HIDDEN } mk_mode;

/* The mask's class at (batch entry bi of its own batch dims, row i, key j): 0 visible,
 * 1 masked, -1 neither. */
static int mk_class(const mk *m, mk_mode mode, int64_t bi, int64_t i, int64_t j) {
  const mk_node *t = &m->nodes[0];
  int64_t co[GC_MAX_RANK];
  int r = t->rank;
  for (int x = r - 3; x >= 0; x--) {
    co[x] = bi % t->dims[x];
    bi /= t->dims[x];
  }
  if (r >= 2) co[r - 2] = t->dims[r - 2] == 1 ? 0 : i;
  if (r >= 1) co[r - 1] = t->dims[r - 1] == 1 ? 0 : j;
  double x = mk_eval(m, 0, co);
  if (mode != MK_ADDITIVE) return (x != 0.0) == (mode == MK_HIDDEN);
  return x == 0.0 ? 0 : x <= MASKED_MAX ? 1 : -1;
}

/* Is `mask` (read as `mode`) causal over scores of type st? Sets *off. */
static int causal_of(const gc_value *mask, const gc_type *st, mk_mode mode, int64_t *off) {
  int rs = st->rank;
  const gc_type *t = &mask->type;
  if (rs < 2 || t->rank > rs) return 0;
  int64_t Sq = st->dims[rs - 2], Sk = st->dims[rs - 1], nb = 1;
  for (int x = 0; x < t->rank - 2; x++) nb *= t->dims[x];
  if (Sq < 1 || Sk < 1 || (double)nb * (double)Sq * (double)Sk > (double)MAX_EVALS) return 0;
  mk *m = malloc(sizeof *m);
  if (!m) return 0;
  m->n = 0;
  int ok = mk_build(m, mask, 0) == 0;
  int64_t o = Sk - 1;
  if (ok) {
    /* the offset: the last visible key of row 0, less one */
    for (int64_t j = 0; j < Sk; j++) {
      int c = mk_class(m, mode, 0, 0, j);
      if (c != 0) {
        ok = c == 1 && j > 0;
        o = j - 1;
        break;
      }
    }
  }
  for (int64_t bi = 0; ok && bi < nb; bi++)
    for (int64_t i = 0; ok && i < Sq; i++)
      for (int64_t j = 0; ok && j < Sk; j++) ok = mk_class(m, mode, bi, i, j) == (j > i + o);
  for (int i = 0; i < m->n; i++) free(m->nodes[i].list);
  free(m);
  if (ok) *off = o;
  return ok;
}

int gc_attn_causal_mask(const gc_value *mask, const gc_type *st, int64_t *off) {
  return causal_of(mask, st, MK_ADDITIVE, off);
}

/* The value of a splat const (any shape) as dtype t holds it; NAN when v is none. */
static double splat_value(const gc_value *v, gc_dtype t) {
  const gc_op *d = v->def;
  const gc_attr *a = d && d->opcode == GC_OP_CONST ? gc_op_attr(d, "value") : NULL;
  if (!a || a->kind == GC_ATTR_LIST) return NAN;
  return as_dtype(leaf_value(a), t);
}

/* Which operand of the two-operand op d (of `opc`) is causal read as `mode`; -1 none. */
static int causal_operand(const gc_op *d, gc_opcode opc, const gc_type *st, mk_mode mode, int64_t *off) {
  if (!d || d->opcode != opc) return -1;
  for (int i = 0; i < 2; i++)
    if (causal_of(d->operands[i], st, mode, off)) return i;
  return -1;
}

int gc_attn_causal_resid(const gc_value *mask, const gc_type *st, int64_t *off, gc_attn_resid *r) {
  const gc_op *d = mask->def;
  memset(r, 0, sizeof *r);
  if (!d) return 0;
  gc_dtype t = mask->type.dtype;
  int ci;
  /* additive: add(causal, residual) */
  if ((ci = causal_operand(d, GC_OP_ADD, st, MK_ADDITIVE, off)) >= 0) {
    r->v = d->operands[1 - ci];
    return 1;
  }
  if (d->opcode != GC_OP_SELECT) return 0;
  /* select(c, a, b), one of a and b finite (visible) and the other masked */
  double a = splat_value(d->operands[1], t), b = splat_value(d->operands[2], t);
  const gc_op *c = d->operands[0]->def;
  if (isfinite(a) && b <= MASKED_MAX)
    ci = causal_operand(c, GC_OP_AND, st, MK_VISIBLE, off);  /* and(causal, residual) */
  else if (isfinite(b) && a <= MASKED_MAX)
    ci = causal_operand(c, GC_OP_OR, st, MK_HIDDEN, off);    /* or(future, residual) */
  else
    return 0;
  if (ci < 0) return 0;
  r->v = c->operands[1 - ci];
  r->sel = 1;
  r->t = a;
  r->f = b;
  return 1;
}
