/* matmul_canon.c - a linear over a batch of rows as one 2-D GEMM, its epilogue on 2-D values.
 *
 *   y = matmul(a [d.., M, K], w [1.., K, N])        a of rank > 2 or w with unit
 *                                                   batch dims; transpose_b kept
 *     ->
 *   a2 = reshape(a, shape=[R, K])                    R = prod(d..) * M
 *   w2 = reshape(w, shape=[K, N])                    (only when w has batch dims)
 *   m  = matmul(a2, w2)                              [R, N]
 *   y  = reshape(m, shape=[d.., M, N])
 *
 * Exporters write every linear of a transformer ([B, S, K] x [K, N]) and of a
 * convnext block ([N, H, W, C] x [C, 4C]) this way. As a batched matmul each
 * batch is a GEMM of M rows only (a convnext stage at 7x7 has M = 7, below what
 * the tensor-core kernels take); flattened, all rows of all batches are one M.
 *
 * Then the trailing reshape sinks below the elementwise ops that read it:
 *
 *   e = op(reshape(m, [d.., M, N]), x, ...)  ->  reshape(op(m, x2, ...), [d.., M, N])
 *
 * when every other operand is [R, N] for free: a value of the result's shape
 * whose reshape to [R, N] is a view (a residual), a bias broadcast along the
 * rows (all dims but the last 1: [N], [1, 1, N]; passed as [N] or [1, N]), a
 * scalar. The sunk reshape sinks further, and a matmul whose a is one reads its
 * 2-D source directly, so matmul -> add -> gelu -> matmul -> add -> add chains are
 * 2-D throughout and the reshapes remain only at the ends; codegen's epilogue
 * fusion then puts the bias, activation and residual into each GEMM's epilogue.
 *
 * Left alone: symbolic shapes, transpose_a (a's rows are not contiguous), both
 * sides batched (attention), a batched w with a broadcast a (the result's batches
 * would be interleaved columns of one GEMM: no view), and an a whose reshape to
 * [R, K] would not be a view of what it views (a broadcast batch: stride 0 merged
 * with M; a transpose that moves M or K). An a that is no strided view at all
 * (the attention heads merged by reshape(transpose(o))) is staged through its
 * index map either way and is rewritten. Not run for the interpreter, the
 * float64 reference, which keeps the batched form (like conv-gemm).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/rewrite.h"

typedef struct mmc {
  gc_rewriter rw;
  unsigned char *sunk;   /* value id -> a trailing reshape [R, N] -> [.., N] of this pass */
  int n_sunk;
} mmc;

/* ---- helpers -------------------------------------------------------------------------- */

/* Product of dims [lo, hi). */
static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= d[i];
  return p;
}

/* Are dims [lo, hi) of t all 1? */
static int units(const gc_type *t, int lo, int hi) {
  for (int i = lo; i < hi; i++)
    if (t->dims[i] != 1) return 0;
  return 1;
}

/* Strides of v as a strided view of the buffer it reads (through reshape,
 * transpose, broadcast and slice; anything else is materialized, contiguous).
 * 0 when v is no strided view of one buffer. */
static int view_strides(const gc_value *v, int64_t *st) {
  const gc_type *t = &v->type;
  const gc_op *op = v->def;
  int64_t in[GC_MAX_RANK], a[GC_MAX_RANK];
  int moves = op && (op->opcode == GC_OP_RESHAPE || op->opcode == GC_OP_TRANSPOSE ||
                     op->opcode == GC_OP_BROADCAST || op->opcode == GC_OP_SLICE);
  if (!moves) {
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
      st[i] = s;
      s *= t->dims[i];
    }
    return 1;
  }
  const gc_type *it = &op->operands[0]->type;
  if (!view_strides(op->operands[0], in)) return 0;
  switch (op->opcode) {
    case GC_OP_RESHAPE: return gc_reshape_strides(it, in, t, st);
    case GC_OP_TRANSPOSE:
      if (gc_attr_ints(gc_op_attr(op, "perm"), a, GC_MAX_RANK) != t->rank) return 0;
      for (int i = 0; i < t->rank; i++) st[i] = in[a[i]];
      return 1;
    case GC_OP_BROADCAST:
      for (int i = 0; i < t->rank; i++) {
        int j = i - (t->rank - it->rank);
        st[i] = (j < 0 || it->dims[j] == 1) ? 0 : in[j];
      }
      return 1;
    default: { /* slice: the steps scale the strides; the start is an offset */
      int64_t step[GC_MAX_RANK];
      for (int i = 0; i < it->rank; i++) step[i] = 1;
      const gc_attr *sa = gc_op_attr(op, "step");
      if (sa && gc_attr_ints(sa, step, GC_MAX_RANK) != it->rank) return 0;
      for (int i = 0; i < it->rank; i++) st[i] = in[i] * step[i];
      return 1;
    }
  }
}

/* May v be read as (rank, dims)? Its reshape is a view of what v views, or v is
 * no strided view at all (then its readers go through an index map anyway). */
static int free_reshape(const gc_value *v, int rank, const int64_t *dims) {
  int64_t st[GC_MAX_RANK], ost[GC_MAX_RANK];
  gc_type ot = {.dtype = v->type.dtype, .rank = rank};
  memcpy(ot.dims, dims, (size_t)rank * sizeof *dims);
  return !view_strides(v, st) || gc_reshape_strides(&v->type, st, &ot, ost);
}

/* Is v a trailing reshape of this pass? Then its source is 2-D [R, N]. */
static int is_sunk(const mmc *p, const gc_value *v) {
  return v->id < p->n_sunk && p->sunk[v->id];
}

/* Mark v as a trailing reshape. */
static void mark_sunk(mmc *p, const gc_value *v) {
  if (v->id >= p->n_sunk) {
    int n = v->id + 64;
    unsigned char *s = realloc(p->sunk, (size_t)n);
    if (!s) {
      p->rw.oom = 1;
      return;
    }
    memset(s + p->n_sunk, 0, (size_t)(n - p->n_sunk));
    p->sunk = s;
    p->n_sunk = n;
  }
  p->sunk[v->id] = 1;
}

/* v as (rank, dims), before `before`: the source of a trailing reshape when that is
 * it, v itself when it has that shape, else a new reshape. NULL on OOM. */
static gc_value *as_shape(mmc *p, gc_op *before, gc_value *v, int rank, const int64_t *dims) {
  gc_type t = {.dtype = v->type.dtype, .rank = rank};
  memcpy(t.dims, dims, (size_t)rank * sizeof *dims);
  if (is_sunk(p, v) && gc_type_same_dims(&v->def->operands[0]->type, &t)) return v->def->operands[0];
  if (gc_type_same_dims(&v->type, &t)) return v;
  return gc_rw_reshape(&p->rw, before, v, rank, dims);
}

/* The trailing reshape of a 2-D value m to `t`'s dims, replacing op (taking its place
 * and name), marked for sinking. */
static void replace_by_reshape(mmc *p, gc_op *op, gc_value *m, const gc_type *t) {
  gc_named_attr shape = {"shape", gc_rw_attr_ints(&p->rw, t->dims, t->rank)};
  gc_op *r = gc_rw_replace_with_new(&p->rw, op, GC_OP_RESHAPE, 1, &m, 1, &shape);
  if (r) mark_sunk(p, r->results[0]);
}

/* ---- flattening ------------------------------------------------------------------------- */

/* matmul(a [d.., M, K], w [1.., K, N]) as a 2-D matmul between reshapes. */
static void flatten_matmul(mmc *p, gc_op *op) {
  gc_value *a = op->operands[0], *w = op->operands[1];
  const gc_type *at = &a->type, *wt = &w->type, *yt = &op->results[0]->type;
  int ra = at->rank, rb = wt->rank;
  if (!gc_type_is_concrete(at) || !gc_type_is_concrete(wt) || !gc_type_is_concrete(yt)) return;
  if (gc_op_attr_bool(op, "transpose_a", 0) || (ra == 2 && rb == 2) || !units(wt, 0, rb - 2)) return;
  if (gc_type_numel(at) == 0 || gc_type_numel(wt) == 0) return;
  int64_t K = at->dims[ra - 1];
  int64_t adims[2] = {prod(at->dims, 0, ra - 1), K};
  int64_t wdims[2] = {wt->dims[rb - 2], wt->dims[rb - 1]};
  if (!is_sunk(p, a) && !free_reshape(a, 2, adims)) return;
  gc_value *a2 = as_shape(p, op, a, 2, adims);
  gc_value *w2 = a2 ? as_shape(p, op, w, 2, wdims) : NULL;
  if (!w2) return;
  gc_type mt = {.dtype = yt->dtype, .rank = 2, .dims = {adims[0], yt->dims[yt->rank - 1]}};
  gc_value *ops[2] = {a2, w2};
  gc_op *mm = gc_rw_new_op(&p->rw, GC_OP_MATMUL, op, 2, ops, op->n_attrs, op->attrs, &mt, NULL, op->loc);
  if (mm) replace_by_reshape(p, op, mm->results[0], yt);
}

/* ---- sinking ------------------------------------------------------------------------------- */

/* Can operand x of an elementwise op whose result has dims t be read as [R, N]
 * (dims2) without a copy? The same dims with a reshape that is a view (a residual),
 * or a broadcast along the rows: every dim but the last 1 (a bias, a scalar). */
static int operand_ok(const mmc *p, const gc_value *x, const gc_type *t, const int64_t *dims2) {
  const gc_type *xt = &x->type;
  if (gc_type_same_dims(xt, t)) return is_sunk(p, x) || free_reshape(x, 2, dims2);
  if (xt->rank > t->rank || !units(xt, 0, xt->rank - 1)) return 0;
  int64_t last = xt->rank ? xt->dims[xt->rank - 1] : 1;
  return last == 1 || last == dims2[1];
}

/* Operand x (operand_ok) as [R, N], or as a row ([N] or [1, N]) it broadcasts from. */
static gc_value *operand_2d(mmc *p, gc_op *before, gc_value *x, const gc_type *t, const int64_t *dims2) {
  const gc_type *xt = &x->type;
  if (gc_type_same_dims(xt, t)) return as_shape(p, before, x, 2, dims2);
  if (xt->rank <= 2) return x;
  int64_t row[2] = {1, xt->dims[xt->rank - 1]};
  return gc_rw_reshape(&p->rw, before, x, 2, row);
}

/* Elementwise op e reading a trailing reshape: computed on [R, N], reshaped after. */
static void sink_reshape(mmc *p, gc_op *e) {
  if (gc_op_infos[e->opcode].kind != GC_KIND_ELEMENTWISE || e->n_results != 1) return;
  const gc_type *t = &e->results[0]->type;
  const gc_value *src = NULL;
  for (int i = 0; i < e->n_operands && !src; i++)
    if (is_sunk(p, e->operands[i]) && gc_type_same_dims(&e->operands[i]->type, t))
      src = e->operands[i]->def->operands[0];
  if (!src || e->n_operands > 3) return;
  const int64_t *dims2 = src->type.dims;
  for (int i = 0; i < e->n_operands; i++)
    if (!operand_ok(p, e->operands[i], t, dims2)) return;
  gc_value *ops[3];
  for (int i = 0; i < e->n_operands; i++)
    if (!(ops[i] = operand_2d(p, e, e->operands[i], t, dims2))) return;
  gc_type t2 = {.dtype = t->dtype, .rank = 2, .dims = {dims2[0], dims2[1]}};
  gc_op *n = gc_rw_new_op(&p->rw, e->opcode, e, e->n_operands, ops, e->n_attrs, e->attrs, &t2, NULL, e->loc);
  if (n) replace_by_reshape(p, e, n->results[0], t);
}

int gc_pass_matmul_canon(gc_graph *g, gc_diags *d) {
  mmc p = {0};
  if (gc_rw_init(&p.rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !p.rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&p.rw, op);
    if (op->opcode == GC_OP_MATMUL)
      flatten_matmul(&p, op);
    else
      sink_reshape(&p, op);
  }
  free(p.sunk);
  return gc_rw_finish(&p.rw);
}
