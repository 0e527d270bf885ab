/* random_graph_gen.c - the random graph generator of tests/test_random_graphs.c.
 *
 * Every op of ir/ops.def has a builder below that picks or creates operands of
 * allowed dtypes and shapes and writes valid attributes (an op without a builder
 * makes generate() fail, and the suite with it). Shapes have small dims; dtypes
 * are all nine. Float values that depend on rounding ("inexact") never feed a
 * discontinuous op (comparisons, argmax, floor/ceil, float->int casts), and
 * domain-sensitive operands (log, sqrt, rsqrt, pow's base, float division's
 * divisor) are fresh positive inputs, and norms (scale-invariant) never
 * normalize the noise of sub(a, a) (see rg_val.cancels), so a mismatch means a
 * bug, not rounding noise. Everything is deterministic from a seed.
 *
 * Beside one op at a time, builders draw what later stages look for: attention
 * chains that codegen/fusion.c fuses into one flash-attention kernel (see
 * build_attention), matmul operands that are a transpose of another value's last
 * two dims (passes/simplify.c folds them into transpose_a / transpose_b) and
 * NHWC pools (layout="nhwc").
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "random_graph_gen.h"
#include "ir/dtype.h"
#include "frontend/parser.h"

/* ---- dtype classes ------------------------------------------------------------------------ */
#include "dtype_masks.h"

/* Random dtype from a mask; f32 is four times as likely as each other one. */
static gc_dtype rdtype(rng *r, unsigned mask) {
  int w[GRAPHC_DTYPE_COUNT_], total = 0;
  for (int t = 0; t < GRAPHC_DTYPE_COUNT_; t++) {
    w[t] = (mask & M(t)) ? (t == GRAPHC_DTYPE_F32 ? 4 : 1) : 0;
    total += w[t];
  }
  GC_ASSERT(total > 0);
  int k = (int)rint_in(r, 0, total - 1);
  for (int t = 0; t < GRAPHC_DTYPE_COUNT_; t++) {
    if (k < w[t]) return (gc_dtype)t;
    k -= w[t];
  }
  return GRAPHC_DTYPE_F32;
}


/* Append to an op's attribute text ("x=1" joined with ", "). */
static void attr(rg_op *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void attr(rg_op *op, const char *fmt, ...) {
  size_t n = strlen(op->attrs);
  if (n) n += (size_t)snprintf(op->attrs + n, sizeof op->attrs - n, ", ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(op->attrs + n, sizeof op->attrs - n, fmt, ap);
  va_end(ap);
}

/* "[1, 2, 3]" into buf. */
static const char *ints_str(char *buf, size_t n, const int64_t *v, int k) {
  size_t at = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < k; i++) at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? ", " : "", (long long)v[i]);
  snprintf(buf + at, n - at, "]");
  return buf;
}

/* A new value (not yet defined by anything). */
static int new_val(rg_graph *g, const gc_type *t, int exact, double mag) {
  GC_ASSERT(g->n_vals < RG_MAX_VALS);
  rg_val *v = &g->vals[g->n_vals];
  memset(v, 0, sizeof *v);
  v->id = g->next_id++;
  v->t = *t;
  v->exact = exact;
  v->mag = mag > 1e300 ? 1e300 : mag;
  return g->n_vals++;
}

/* A new graph argument with data of the given kind. */
static int new_arg(rg_graph *g, const gc_type *t, char kind, int64_t range) {
  double mag = kind == 'i' ? (double)range : gc_dtype_is_float(t->dtype) ? 2.0 : t->dtype == GRAPHC_DTYPE_BOOL ? 1 : 12;
  int i = new_val(g, t, 1, mag);
  g->vals[i].is_arg = 1;
  g->vals[i].kind = kind;
  g->vals[i].range = range;
  return i;
}

/* Start a new op; results are added with op_result. */
static rg_op *new_op(rg_graph *g, gc_opcode opc) {
  GC_ASSERT(g->n_ops < RG_MAX_OPS);
  rg_op *op = &g->ops[g->n_ops++];
  memset(op, 0, sizeof *op);
  op->opc = opc;
  return op;
}

/* Add value v as the op's next operand. */
static void op_in(rg_op *op, int v) {
  GC_ASSERT(op->n_in < RG_MAX_IN);
  op->in[op->n_in++] = v;
}

/* The brief's tolerance for a float dtype (f32: the one for chains). */
double dtype_tol(gc_dtype t) {
  return t == GRAPHC_DTYPE_F64 ? 1e-10 : t == GRAPHC_DTYPE_F32 ? 2e-4
         : t == GRAPHC_DTYPE_F16 ? 2e-3 : t == GRAPHC_DTYPE_BF16 ? 2e-2 : 0;
}

/* A result of op; its tolerance inherits the precision lost upstream (an f32
 * rsqrt cast to f64 is only f32-accurate). Operands must be added first. */
static int op_result(rg_graph *g, rg_op *op, const gc_type *t, int exact, double mag) {
  GC_ASSERT(op->n_out < RG_MAX_OUT);
  int v = new_val(g, t, exact, mag);
  double tol = dtype_tol(t->dtype);
  for (int i = 0; i < op->n_in; i++) {
    const rg_val *in = &g->vals[op->in[i]];
    if (!in->exact && in->tol > tol) tol = in->tol;
  }
  g->vals[v].tol = tol;
  for (int i = 0; i < op->n_in; i++) g->vals[v].cancels |= g->vals[op->in[i]].cancels;
  op->out[op->n_out++] = v;
  return v;
}

/* ---- shapes -------------------------------------------------------------------------------- */
/* A random dim: mostly tiny, sometimes odd sizes that cross vector widths. */
static int64_t rdim(rng *r) {
  static const int64_t dims[] = {1, 2, 3, 4, 5, 2, 3, 4, 1, 6, 7, 8, 9, 16, 17, 33};
  return dims[rnext(r) % (sizeof dims / sizeof dims[0])];
}

/* Random rank in [lo, hi], biased to 1..3. */
static int rrank(rng *r, int lo, int hi) {
  int k = (int)rint_in(r, 0, 9);
  int rank = k < 1 ? 0 : k < 4 ? 1 : k < 7 ? 2 : k < 9 ? 3 : 4;
  if (rank < lo) rank = lo;
  if (rank > hi) rank = hi;
  return rank;
}

/* Random shape of the given rank, numel kept small. */
static void rshape(rng *r, gc_type *t, int rank) {
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = rdim(r);
  while (numel_of(t) > RG_MAX_NUMEL / 4) {
    int i = (int)rint_in(r, 0, rank - 1);
    t->dims[i] = t->dims[i] > 1 ? t->dims[i] / 2 : 1;
  }
}

/* A random type with a dtype from mask and rank in [lo, hi]. */
static gc_type rtype(rng *r, unsigned mask, int lo, int hi) {
  gc_type t = {.dtype = rdtype(r, mask)};
  rshape(r, &t, rrank(r, lo, hi));
  return t;
}

/* numpy broadcast of a and b into out; 0 when incompatible or too large. */
static int bcast(const gc_type *a, const gc_type *b, gc_type *out) {
  int rank = a->rank > b->rank ? a->rank : b->rank;
  out->rank = rank;
  for (int i = 0; i < rank; i++) {
    int ia = a->rank - rank + i, ib = b->rank - rank + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) return 0;
    out->dims[i] = da == 1 ? db : da;
  }
  return numel_of(out) <= RG_MAX_NUMEL;
}

/* A shape that broadcasts against t without growing the result: leading dims
 * dropped and some dims set to 1. */
static gc_type compat_shape(rng *r, const gc_type *t) {
  gc_type s = *t;
  int drop = rchance(r, 30) ? (int)rint_in(r, 0, t->rank) : 0;
  s.rank = t->rank - drop;
  for (int i = 0; i < s.rank; i++) {
    s.dims[i] = t->dims[i + drop];
    if (rchance(r, 30)) s.dims[i] = 1;
  }
  return s;
}

/* ---- operand choice -------------------------------------------------------------------------- */
typedef struct want {
  unsigned dtypes;
  int min_rank, max_rank;
  int exact;             /* must be exact */
  double max_mag;        /* for float values (0: 1e4) */
  int no_cancel;         /* no value with rg_val.cancels */
} want;

/* Does value v satisfy w? */
static int fits(const rg_val *v, const want *w) {
  if (v->dead || v->hidden || !(w->dtypes & M(v->t.dtype)) || numel_of(&v->t) > RG_MAX_NUMEL) return 0;
  if (v->t.rank < w->min_rank || v->t.rank > w->max_rank) return 0;
  if (w->exact && !v->exact) return 0;
  if (w->no_cancel && v->cancels) return 0;
  if (gc_dtype_is_float(v->t.dtype) && v->mag > (w->max_mag > 0 ? w->max_mag : 1e4)) return 0;
  if (!gc_dtype_is_float(v->t.dtype) && v->kind == 'i') return 0; /* keep index inputs for gather */
  return 1;
}

/* Pick an existing value that fits (recent ones preferred), or make a new argument. */
static int pick(rg_graph *g, rng *r, const want *w) {
  int cands[RG_MAX_VALS], n = 0;
  for (int i = 0; i < g->n_vals; i++)
    if (fits(&g->vals[i], w)) cands[n++] = i;
  if (n > 0 && !rchance(r, 12)) {
    if (rchance(r, 65)) return cands[n - 1 - (int)rint_in(r, 0, n < 4 ? n - 1 : 3)];
    return cands[rint_in(r, 0, n - 1)];
  }
  gc_type t = rtype(r, w->dtypes, w->min_rank, w->max_rank);
  return new_arg(g, &t, 'n', 0);
}

/* A value of exactly dtype dt and a shape that broadcasts with t (existing or new). */
static int pick_partner(rg_graph *g, rng *r, gc_dtype dt, const gc_type *t, int exact) {
  if (!rchance(r, 30)) {
    int cands[RG_MAX_VALS], n = 0;
    for (int i = 0; i < g->n_vals; i++) {
      const rg_val *v = &g->vals[i];
      gc_type o;
      if (v->dead || v->hidden || v->t.dtype != dt || (exact && !v->exact) || v->kind == 'i' || v->mag > 1e4 ||
          !bcast(&v->t, t, &o) || o.rank > 5)
        continue;
      cands[n++] = i;
    }
    if (n) return cands[n - 1 - (int)rint_in(r, 0, n < 3 ? n - 1 : 2)];
  }
  gc_type s = compat_shape(r, t);
  s.dtype = dt;
  return new_arg(g, &s, 'n', 0);
}

/* A fresh positive input (for log, sqrt, rsqrt, pow's base, float divisors). */
static int positive_arg(rg_graph *g, rng *r, gc_dtype dt, const gc_type *like) {
  gc_type s = like ? compat_shape(r, like) : rtype(r, M(dt), 0, 3);
  s.dtype = dt;
  return new_arg(g, &s, 'p', 0);
}

/* A scalar literal of dtype t (float literals always carry a '.'). */
static const char *lit(rng *r, gc_dtype t, char *buf, size_t n) {
  if (t == GRAPHC_DTYPE_BOOL) return rchance(r, 50) ? "true" : "false";
  if (gc_dtype_is_float(t)) {
    snprintf(buf, n, "%.2f", (double)rint_in(r, -12, 12) / 4);
    return buf;
  }
  snprintf(buf, n, "%lld", (long long)rint_in(r, t == GRAPHC_DTYPE_U8 ? 0 : -9, 9));
  return buf;
}

/* Larger of two doubles. */
static double dmax(double a, double b) { return a > b ? a : b; }

/* transpose(x) swapping its last two dims, batch dims in place (rank >= 2). */
static int swap_last2(rg_graph *g, int x) {
  gc_type t = g->vals[x].t;
  int64_t perm[GC_MAX_RANK];
  char b1[64];
  for (int i = 0; i < t.rank; i++) perm[i] = i;
  perm[t.rank - 2] = t.rank - 1, perm[t.rank - 1] = t.rank - 2;
  t.dims[t.rank - 2] = g->vals[x].t.dims[t.rank - 1], t.dims[t.rank - 1] = g->vals[x].t.dims[t.rank - 2];
  rg_op *op = new_op(g, GC_OP_TRANSPOSE);
  op_in(op, x);
  attr(op, "perm=%s", ints_str(b1, sizeof b1, perm, t.rank));
  return op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
}

/* ---- attention chains ----------------------------------------------------------------------- */
/* The chain codegen/fusion.c (step 0) turns into one flash-attention kernel on CUDA targets
 * (codegen/emit_attn.c):
 *   s = matmul(q, k, transpose_b=true|false) [x = mul(s, c) | mul(c, s) | div(s, c)]
 *   p = softmax(x, axis=-1)  o = matmul(p, v)  [head merge | elementwise epilogue]
 * in f16 / bf16, head dims D, Dv in {16, 32, 64}, query and key counts 1..130 (mostly not
 * multiples of the kernel's 64-key blocks), batch dims with K / V broadcasting over some.
 * Numerics: the kernel keeps the scores in f32 where the graph rounds them to f16 / bf16,
 * so q and k hold small integers ('i' data in [-range, range)) with |s| <= 256 in bf16
 * (2048 in f16) and c is a power of two: s and x are exact on every backend, and the
 * chain's result needs only its dtype's tolerance (the probabilities' rounding, 2^-9
 * relative in bf16 either way, moves |o| <= max|v| = 2 by less than 2e-2). A kernel that
 * mixes up key columns, masks keys past Sk wrongly or loses the running rescale is off by
 * O(1). Every value of the chain is hidden: no other op reads s, x or p (the chain would
 * not fuse), nor the result, whose error (up to about two ulps of max|v|) would grow past
 * the tolerance of a later op that amplifies absolute errors (cos of a product). */

/* A query or key count: mostly short, sometimes past one or two 64-key blocks. */
static int64_t rseq(rng *r) { return rchance(r, 70) ? rint_in(r, 1, 20) : rint_in(r, 21, 130); }

/* An attention operand of type t ([batch..., rows, D], or [batch..., D, rows] when swap):
 * a fresh argument, or for rank 4 (B, H) the head split of a [B, S, H*D] argument,
 * transpose(reshape(a, [B, S, H, D]), perm=[0, 2, 1, 3]) (perm=[0, 2, 3, 1] when swap).
 * range > 0: integer data in [-range, range). */
static int attn_operand(rg_graph *g, rng *r, const gc_type *t, int swap, int64_t range) {
  char kind = range > 0 ? 'i' : 'n';
  if (t->rank != 4 || !rchance(r, 40)) return new_arg(g, t, kind, range);
  int64_t B = t->dims[0], H = t->dims[1], S = t->dims[swap ? 3 : 2], D = t->dims[swap ? 2 : 3];
  gc_type at = {.dtype = t->dtype, .rank = 3, .dims = {B, S, H * D}};
  int a = new_arg(g, &at, kind, range);
  char b1[128];
  rg_op *op = new_op(g, GC_OP_RESHAPE);
  op_in(op, a);
  gc_type rt = {.dtype = t->dtype, .rank = 4, .dims = {B, S, H, D}};
  attr(op, "shape=%s", ints_str(b1, sizeof b1, rt.dims, 4));
  int x = op_result(g, op, &rt, 1, g->vals[a].mag);
  op = new_op(g, GC_OP_TRANSPOSE);
  op_in(op, x);
  attr(op, "perm=%s", swap ? "[0, 2, 3, 1]" : "[0, 2, 1, 3]");
  int y = op_result(g, op, t, 1, g->vals[a].mag);
  g->vals[x].hidden = g->vals[y].hidden = 1;
  return y;
}

/* Append an attention chain (see above). */
static void build_attention(rg_graph *g, rng *r) {
  static const int64_t heads[] = {16, 32, 64};
  gc_dtype dt = rchance(r, 50) ? GRAPHC_DTYPE_F16 : GRAPHC_DTYPE_BF16;
  int64_t D = heads[rint_in(r, 0, 2)], Dv = heads[rint_in(r, 0, 2)];
  int64_t Sq = rseq(r), Sk = rseq(r);
  int rank = (int)rint_in(r, 2, 4), nb = rank - 2;
  int64_t batch[2] = {1, 1}, nbatch = 1;
  for (int i = 0; i < nb; i++) batch[i] = rint_in(r, 1, 3), nbatch *= batch[i];
  while (nbatch * Sq * (Sk > D ? Sk : D) > RG_MAX_ATTN_NUMEL || nbatch * Sk * (D > Dv ? D : Dv) > RG_MAX_ATTN_NUMEL) {
    if (Sq > 1 && (Sq >= Sk || Sk == 1)) Sq = (Sq + 1) / 2;
    else Sk = (Sk + 1) / 2;
  }
  /* integer q, k: |s| <= D * range^2 exact in dt (ints up to 256 in bf16, 2048 in f16) */
  int64_t range = 1;
  while ((range + 1) * (range + 1) * D <= (dt == GRAPHC_DTYPE_BF16 ? 256 : 2048)) range++;
  range = rint_in(r, range > 2 ? 2 : range, range > 4 ? 4 : range);
  int tb = rchance(r, 60);
  gc_type qt = {.dtype = dt, .rank = rank}, kt = qt, vt = qt;
  for (int i = 0; i < nb; i++) {
    qt.dims[i] = batch[i];
    kt.dims[i] = rchance(r, 25) ? 1 : batch[i];  /* K / V broadcast over this batch dim */
    vt.dims[i] = rchance(r, 50) ? kt.dims[i] : rchance(r, 25) ? 1 : batch[i];
  }
  qt.dims[nb] = Sq, qt.dims[nb + 1] = D;
  kt.dims[nb] = tb ? Sk : D, kt.dims[nb + 1] = tb ? D : Sk;
  vt.dims[nb] = Sk, vt.dims[nb + 1] = Dv;
  int q = attn_operand(g, r, &qt, 0, range);
  int k = attn_operand(g, r, &kt, !tb, range);
  int v = attn_operand(g, r, &vt, 0, 0);
  char b1[64];
  gc_type st = qt;
  st.dims[nb + 1] = Sk;
  rg_op *op = new_op(g, GC_OP_MATMUL);
  op_in(op, q);
  op_in(op, k);
  if (tb || rchance(r, 20)) attr(op, "transpose_b=%s", tb ? "true" : "false");
  double smag = (double)(D * range * range);
  int s = op_result(g, op, &st, 1, smag), x = s;
  if (rchance(r, 75)) { /* scale by a power of two: x stays exact */
    static const char *const scales[] = {"0.125", "0.25", "0.5", "2.0"};
    int si = (int)rint_in(r, 0, 3);
    op = new_op(g, GC_OP_CONST);
    attr(op, "value=%s", scales[si]);
    attr(op, "dtype=%s", graphc_dtype_name(dt));
    gc_type ct = {.dtype = dt};
    int c = op_result(g, op, &ct, 1, 2);
    g->vals[c].hidden = 1;
    int how = (int)rint_in(r, 0, 2);  /* mul(s, c), mul(c, s), div(s, c) */
    op = new_op(g, how == 2 ? GC_OP_DIV : GC_OP_MUL);
    op_in(op, how == 1 ? c : s);
    op_in(op, how == 1 ? s : c);
    x = op_result(g, op, &st, 1, smag * 8);
  }
  op = new_op(g, GC_OP_SOFTMAX);
  op_in(op, x);
  if (rchance(r, 60)) attr(op, "axis=%d", rchance(r, 50) ? -1 : rank - 1);
  int pv = op_result(g, op, &st, 0, 1);
  g->vals[s].hidden = g->vals[x].hidden = g->vals[pv].hidden = 1;
  gc_type ot = qt;
  for (int i = 0; i < nb; i++) ot.dims[i] = batch[i];
  ot.dims[nb + 1] = Dv;
  op = new_op(g, GC_OP_MATMUL);
  op_in(op, pv);
  op_in(op, v);
  int o = op_result(g, op, &ot, 0, 2);
  g->vals[o].hidden = 1;
  int epi = (int)rint_in(r, 0, 4);
  if (epi == 0 && rank == 4) { /* head merge: [B, H, Sq, Dv] -> [B, Sq, H * Dv] */
    op = new_op(g, GC_OP_TRANSPOSE);
    op_in(op, o);
    attr(op, "perm=[0, 2, 1, 3]");
    gc_type tt = {.dtype = dt, .rank = 4, .dims = {ot.dims[0], Sq, ot.dims[1], Dv}};
    int t = op_result(g, op, &tt, 0, 2);
    g->vals[t].hidden = 1;
    op = new_op(g, GC_OP_RESHAPE);
    op_in(op, t);
    gc_type mt = {.dtype = dt, .rank = 3, .dims = {ot.dims[0], Sq, ot.dims[1] * Dv}};
    attr(op, "shape=%s", ints_str(b1, sizeof b1, mt.dims, 3));
    g->vals[op_result(g, op, &mt, 0, 2)].hidden = 1;
  } else if (epi == 1) { /* residual */
    gc_type rt = rchance(r, 70) ? ot : compat_shape(r, &ot);
    rt.dtype = dt;
    int res = new_arg(g, &rt, 'n', 0);
    op = new_op(g, GC_OP_ADD);
    int sw = rchance(r, 50);
    op_in(op, sw ? res : o);
    op_in(op, sw ? o : res);
    g->vals[op_result(g, op, &ot, 0, 4)].hidden = 1;
  } else if (epi == 2) {
    op = new_op(g, GC_OP_RELU);
    op_in(op, o);
    g->vals[op_result(g, op, &ot, 0, 2)].hidden = 1;
  } else if (epi == 3) {
    gc_type ct = ot;
    ct.dtype = rchance(r, 70) ? GRAPHC_DTYPE_F32 : dt == GRAPHC_DTYPE_F16 ? GRAPHC_DTYPE_BF16 : GRAPHC_DTYPE_F16;
    op = new_op(g, GC_OP_CAST);
    op_in(op, o);
    attr(op, "to=%s", graphc_dtype_name(ct.dtype));
    g->vals[op_result(g, op, &ct, 0, 2)].hidden = 1;
  }
}

/* ---- builders: one per op family, driven by ir/ops.def ------------------------------------------ */
/* Append one op of opcode opc to g; returns 0, or -1 when opc has no builder. */
static int build_op(rg_graph *g, rng *r, gc_opcode opc) {
  char b1[256], b2[256], b3[256];
  switch (opc) {
    case GC_OP_PARAM: {
      gc_type t = rtype(r, MA, 0, 3);
      rg_op *op = new_op(g, opc);
      int v = op_result(g, op, &t, 1, gc_dtype_is_float(t.dtype) ? 1.0 : 4.0);
      attr(op, "name=\"p%d\"", g->vals[v].id);
      return 0;
    }
    case GC_OP_STATE: {  /* read only here: zero on every fresh executable */
      gc_type t = rtype(r, MA, 0, 3);
      rg_op *op = new_op(g, opc);
      int v = op_result(g, op, &t, 1, 1.0);
      attr(op, "name=\"s%d\"", g->vals[v].id);
      return 0;
    }
    case GC_OP_CACHE_WRITE: {  /* a fresh state of its own (hidden: the write is its only use) */
      want w = {MA, 2, 4, 0, 0, 0};
      int u = pick(g, r, &w);
      const gc_type ut = g->vals[u].t;
      int axis = (int)rint_in(r, 1, ut.rank - 1);
      gc_type st = ut;
      st.dims[axis] += rint_in(r, 0, 5);
      if (rchance(r, 40)) st.dims[0] += rint_in(r, 1, 2);
      rg_op *sop = new_op(g, GC_OP_STATE);
      int sv = op_result(g, sop, &st, 1, 1.0);
      attr(sop, "name=\"s%d\"", g->vals[sv].id);
      g->vals[sv].hidden = 1;
      gc_type pt = {.dtype = rchance(r, 50) ? GRAPHC_DTYPE_I32 : GRAPHC_DTYPE_I64};
      if (rchance(r, 70)) pt.rank = 1, pt.dims[0] = ut.dims[0];
      int p = new_arg(g, &pt, 'i', st.dims[axis]);  /* some positions fall outside: dropped */
      rg_op *op = new_op(g, opc);
      op_in(op, sv);
      op_in(op, u);
      op_in(op, p);
      attr(op, "axis=%d", rchance(r, 30) ? axis - ut.rank : axis);
      op_result(g, op, &st, g->vals[u].exact, dmax(g->vals[u].mag, 1.0));
      return 0;
    }
    case GC_OP_CONST: {
      gc_dtype dt = rdtype(r, MA);
      rg_op *op = new_op(g, opc);
      gc_type t = {.dtype = dt};
      if (rchance(r, 50)) { /* scalar value */
        attr(op, "value=%s", lit(r, dt, b1, sizeof b1));
        if (rchance(r, 60)) {
          rshape(r, &t, rrank(r, 1, 3));
          attr(op, "shape=%s", ints_str(b2, sizeof b2, t.dims, t.rank));
        }
      } else { /* flat list, reshaped or not */
        int len = (int)rint_in(r, 1, 6);
        size_t at = (size_t)snprintf(b1, sizeof b1, "[");
        for (int i = 0; i < len; i++)
          at += (size_t)snprintf(b1 + at, sizeof b1 - at, "%s%s", i ? ", " : "", lit(r, dt, b3, sizeof b3));
        snprintf(b1 + at, sizeof b1 - at, "]");
        attr(op, "value=%s", b1);
        t.rank = 1;
        t.dims[0] = len;
        if (len % 2 == 0 && rchance(r, 50)) {
          t.rank = 2, t.dims[0] = 2, t.dims[1] = len / 2;
          attr(op, "shape=%s", ints_str(b2, sizeof b2, t.dims, t.rank));
        }
      }
      int implicit = dt == GRAPHC_DTYPE_F32 || dt == GRAPHC_DTYPE_I64 || dt == GRAPHC_DTYPE_BOOL;
      if (!implicit || rchance(r, 30)) attr(op, "dtype=%s", graphc_dtype_name(dt));
      op_result(g, op, &t, 1, 4);
      return 0;
    }
    case GC_OP_IOTA: {
      gc_type t = rtype(r, MN, 1, 3);
      rg_op *op = new_op(g, opc);
      attr(op, "shape=%s", ints_str(b1, sizeof b1, t.dims, t.rank));
      int64_t axis = rint_in(r, -t.rank, t.rank - 1);
      if (axis != 0 || rchance(r, 30)) attr(op, "axis=%lld", (long long)axis);
      if (t.dtype != GRAPHC_DTYPE_I64 || rchance(r, 30)) attr(op, "dtype=%s", graphc_dtype_name(t.dtype));
      op_result(g, op, &t, 1, 40);
      return 0;
    }
    case GC_OP_NEG: case GC_OP_ABS: case GC_OP_RELU: {
      want w = {MN, 0, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      op_result(g, op, &g->vals[x].t, g->vals[x].exact, g->vals[x].mag);
      return 0;
    }
    case GC_OP_EXP: case GC_OP_TANH: case GC_OP_SIGMOID: case GC_OP_GELU: case GC_OP_SILU:
    case GC_OP_ERF: case GC_OP_SIN: case GC_OP_COS: {
      want w = {MF, 0, 4, 0, opc == GC_OP_EXP ? 6 : 100, 0};
      int x = pick(g, r, &w);
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      if (opc == GC_OP_GELU && rchance(r, 70))
        attr(op, "approximate=\"%s\"", rchance(r, 50) ? "tanh" : "none");
      double m = g->vals[x].mag;
      double mag = opc == GC_OP_EXP ? exp(m) : (opc == GC_OP_GELU || opc == GC_OP_SILU) ? m : 1;
      op_result(g, op, &g->vals[x].t, 0, mag);
      return 0;
    }
    case GC_OP_LOG: case GC_OP_SQRT: case GC_OP_RSQRT: {
      int x = positive_arg(g, r, rdtype(r, MF), NULL);
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      op_result(g, op, &g->vals[x].t, 0, 2);
      return 0;
    }
    case GC_OP_FLOOR: case GC_OP_CEIL: {
      want w = {MF, 0, 4, 1, 0, 0};
      int x = pick(g, r, &w);
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      op_result(g, op, &g->vals[x].t, 1, g->vals[x].mag + 1);
      return 0;
    }
    case GC_OP_NOT: {
      want w = {MB, 0, 4, 1, 0, 0};
      int x = pick(g, r, &w);
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      op_result(g, op, &g->vals[x].t, 1, 1);
      return 0;
    }
    case GC_OP_CLAMP: {
      want w = {MN, 0, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      gc_dtype dt = g->vals[x].t.dtype;
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      int which = (int)rint_in(r, 0, 2);
      double lo = 0, hi = 0;
      if (gc_dtype_is_float(dt)) lo = (double)rint_in(r, -8, 0) / 4, hi = (double)rint_in(r, 1, 8) / 4;
      else lo = (double)rint_in(r, dt == GRAPHC_DTYPE_U8 ? 0 : -5, 2), hi = (double)rint_in(r, 3, 9);
      const char *fmt = gc_dtype_is_float(dt) ? "%s=%.2f" : "%s=%.0f";
      if (which != 1) attr(op, fmt, "min", lo);
      if (which != 0) attr(op, fmt, "max", hi);
      op_result(g, op, &g->vals[x].t, g->vals[x].exact, g->vals[x].mag);
      return 0;
    }
    case GC_OP_CAST: {
      gc_dtype to = rdtype(r, MA);
      want w = {MA, 0, 4, !gc_dtype_is_float(to), 0, 0};
      int x = pick(g, r, &w);
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      attr(op, "to=%s", graphc_dtype_name(to));
      gc_type t = g->vals[x].t;
      t.dtype = to;
      op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
      return 0;
    }
    case GC_OP_ADD: case GC_OP_SUB: case GC_OP_MUL: case GC_OP_DIV: case GC_OP_MAXIMUM:
    case GC_OP_MINIMUM: case GC_OP_POW: {
      unsigned mask = opc == GC_OP_POW ? MF : MN;
      want w = {mask, 0, 4, 0, opc == GC_OP_MUL ? 100 : 0, 0};
      int a = pick(g, r, &w), b;
      gc_dtype dt = g->vals[a].t.dtype;
      int fl = gc_dtype_is_float(dt);
      if (opc == GC_OP_POW) { /* positive base, small exponent */
        want we = {M(dt), 0, 4, 0, 3, 0};
        int e = pick(g, r, &we);
        a = positive_arg(g, r, dt, &g->vals[e].t);
        b = e;
      } else if (opc == GC_OP_DIV && fl) {
        b = positive_arg(g, r, dt, &g->vals[a].t);
      } else {
        b = pick_partner(g, r, dt, &g->vals[a].t, 0);
      }
      gc_type t;
      if (!bcast(&g->vals[a].t, &g->vals[b].t, &t)) { /* partner was too large: fresh one */
        gc_type s = compat_shape(r, &g->vals[a].t);
        s.dtype = dt;
        b = new_arg(g, &s, opc == GC_OP_DIV && fl ? 'p' : 'n', 0);
        bcast(&g->vals[a].t, &g->vals[b].t, &t);
      }
      t.dtype = dt;
      if (rchance(r, 50) && opc != GC_OP_POW && !(opc == GC_OP_DIV && fl)) {
        int tmp = a; a = b; b = tmp;
      }
      rg_op *op = new_op(g, opc);
      op_in(op, a);
      op_in(op, b);
      double ma = g->vals[a].mag, mb = g->vals[b].mag;
      double mag = opc == GC_OP_ADD || opc == GC_OP_SUB ? ma + mb
                   : opc == GC_OP_MUL ? ma * mb
                   : opc == GC_OP_DIV ? (fl ? ma * 4 : ma)
                   : opc == GC_OP_POW ? 64 : dmax(ma, mb);
      int exact = !fl || ((opc == GC_OP_MAXIMUM || opc == GC_OP_MINIMUM) &&
                          g->vals[a].exact && g->vals[b].exact);
      int v = op_result(g, op, &t, exact, mag);
      if (fl && opc == GC_OP_SUB && a == b && !g->vals[a].exact) g->vals[v].cancels = 1;
      return 0;
    }
    case GC_OP_EQ: case GC_OP_NE: case GC_OP_LT: case GC_OP_LE: case GC_OP_GT: case GC_OP_GE:
    case GC_OP_AND: case GC_OP_OR: {
      int logic = opc == GC_OP_AND || opc == GC_OP_OR;
      want w = {logic ? MB : MA, 0, 4, 1, 0, 0};
      int a = pick(g, r, &w);
      int b = pick_partner(g, r, g->vals[a].t.dtype, &g->vals[a].t, 1);
      gc_type t;
      if (!bcast(&g->vals[a].t, &g->vals[b].t, &t)) {
        gc_type s = compat_shape(r, &g->vals[a].t);
        s.dtype = g->vals[a].t.dtype;
        b = new_arg(g, &s, 'n', 0);
        bcast(&g->vals[a].t, &g->vals[b].t, &t);
      }
      t.dtype = GRAPHC_DTYPE_BOOL;
      rg_op *op = new_op(g, opc);
      op_in(op, a);
      op_in(op, b);
      op_result(g, op, &t, 1, 1);
      return 0;
    }
    case GC_OP_HASH_UNIFORM: {  /* two fresh index arguments, broadcast: f32 in (0, 1), bit-exact */
      const unsigned ix = M(GRAPHC_DTYPE_I32) | M(GRAPHC_DTYPE_I64);
      gc_type ta = rtype(r, ix, 1, 3), tb = compat_shape(r, &ta), t;
      tb.dtype = rdtype(r, ix);
      int a = new_arg(g, &ta, 'n', 0), b = new_arg(g, &tb, 'n', 0);
      if (!bcast(&ta, &tb, &t)) return -1;
      t.dtype = GRAPHC_DTYPE_F32;
      rg_op *op = new_op(g, opc);
      op_in(op, a);
      op_in(op, b);
      op_result(g, op, &t, 1, 1);
      return 0;
    }
    case GC_OP_SELECT: {
      want w = {MA, 0, 4, 0, 0, 0};
      int a = pick(g, r, &w);
      int c = pick_partner(g, r, GRAPHC_DTYPE_BOOL, &g->vals[a].t, 1);
      int b = pick_partner(g, r, g->vals[a].t.dtype, &g->vals[a].t, 0);
      gc_type t1, t;
      if (!bcast(&g->vals[a].t, &g->vals[b].t, &t1) || !bcast(&t1, &g->vals[c].t, &t)) {
        gc_type s = compat_shape(r, &g->vals[a].t);
        s.dtype = GRAPHC_DTYPE_BOOL;
        c = new_arg(g, &s, 'n', 0);
        b = a;
        bcast(&g->vals[a].t, &g->vals[c].t, &t);
      }
      t.dtype = g->vals[a].t.dtype;
      rg_op *op = new_op(g, opc);
      op_in(op, c);
      op_in(op, a);
      op_in(op, b);
      op_result(g, op, &t, g->vals[a].exact && g->vals[b].exact, dmax(g->vals[a].mag, g->vals[b].mag));
      return 0;
    }
    case GC_OP_REDUCE_SUM: case GC_OP_REDUCE_MAX: case GC_OP_REDUCE_MIN: case GC_OP_REDUCE_MEAN:
    case GC_OP_ARGMAX: {
      int am = opc == GC_OP_ARGMAX;
      want w = {opc == GC_OP_REDUCE_MEAN ? MF : MN, am ? 1 : 0, 4, am, 0, 0};
      int x = pick(g, r, &w);
      const gc_type *xt = &g->vals[x].t;
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      int keep = rchance(r, 40);
      int red[GC_MAX_RANK] = {0};
      int64_t count = 1;
      if (am) {
        int64_t axis = rint_in(r, -xt->rank, xt->rank - 1);
        red[axis < 0 ? axis + xt->rank : axis] = 1;
        if (axis != -1 || rchance(r, 30)) attr(op, "axis=%lld", (long long)axis);
      } else if (xt->rank > 0 && rchance(r, 75)) {
        int64_t axes[GC_MAX_RANK];
        int n = 0;
        for (int i = 0; i < xt->rank; i++)
          if (rchance(r, 50)) {
            red[i] = 1;
            axes[n++] = rchance(r, 30) ? i - xt->rank : i;
          }
        if (n == 0) red[xt->rank - 1] = 1, axes[n++] = xt->rank - 1;
        for (int i = n - 1; i > 0; i--) { /* shuffle: order must not matter */
          int j = (int)rint_in(r, 0, i);
          int64_t tmp = axes[i]; axes[i] = axes[j]; axes[j] = tmp;
        }
        attr(op, "axes=%s", ints_str(b1, sizeof b1, axes, n));
      } else {
        for (int i = 0; i < xt->rank; i++) red[i] = 1;
      }
      if (keep || rchance(r, 20)) attr(op, "keepdims=%s", keep ? "true" : "false");
      gc_type t = {.dtype = am ? GRAPHC_DTYPE_I64 : xt->dtype};
      for (int i = 0; i < xt->rank; i++) {
        if (red[i]) count *= xt->dims[i];
        if (!red[i]) t.dims[t.rank++] = xt->dims[i];
        else if (keep) t.dims[t.rank++] = 1;
      }
      int fl = gc_dtype_is_float(xt->dtype);
      int exact = am || !fl || opc == GC_OP_REDUCE_MAX || opc == GC_OP_REDUCE_MIN;
      double mag = opc == GC_OP_REDUCE_SUM ? g->vals[x].mag * (double)count
                   : am ? (double)count : g->vals[x].mag;
      op_result(g, op, &t, exact && g->vals[x].exact, mag);
      return 0;
    }
    case GC_OP_SOFTMAX: case GC_OP_LOG_SOFTMAX: {
      if (opc == GC_OP_SOFTMAX && rchance(r, 12)) {
        build_attention(g, r);
        return 0;
      }
      want w = {MF, 1, 4, 0, 1000, 0};
      int x = pick(g, r, &w);
      int rank = g->vals[x].t.rank;
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      if (rchance(r, 60)) attr(op, "axis=%lld", (long long)rint_in(r, -rank, rank - 1));
      op_result(g, op, &g->vals[x].t, 0, opc == GC_OP_SOFTMAX ? 1 : 2 * g->vals[x].mag + 8);
      return 0;
    }
    case GC_OP_LAYERNORM: case GC_OP_RMSNORM: {
      want w = {MF, 1, 4, 0, 1000, 1};
      int x = pick(g, r, &w);
      const gc_type *xt = &g->vals[x].t;
      int axis = xt->rank - 1;
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      if (opc == GC_OP_LAYERNORM && rchance(r, 60)) {
        axis = (int)rint_in(r, 0, xt->rank - 1);
        attr(op, "axis=%d", rchance(r, 30) ? axis - xt->rank : axis);
      }
      if (rchance(r, 30)) attr(op, "eps=%s", rchance(r, 50) ? "0.001" : "1e-05");
      gc_type gt = {.dtype = xt->dtype, .rank = xt->rank - axis};
      int64_t n = 1;
      for (int i = axis; i < xt->rank; i++) gt.dims[i - axis] = xt->dims[i], n *= xt->dims[i];
      op_in(op, new_arg(g, &gt, 'n', 0));
      if (opc == GC_OP_LAYERNORM) op_in(op, new_arg(g, &gt, 'n', 0));
      op_result(g, op, xt, 0, 2 * sqrt((double)n) * 2 + 2);
      return 0;
    }
    case GC_OP_MATMUL: {
      if (rchance(r, 6)) {
        build_attention(g, r);
        return 0;
      }
      want w = {MF | MI, 2, 4, 0, 100, 0};
      int a = pick(g, r, &w);
      if (rchance(r, 15)) a = swap_last2(g, a);  /* simplify folds it into transpose_a */
      const gc_type *at = &g->vals[a].t;
      int ta = rchance(r, 30), tb = rchance(r, 30);
      int64_t m = at->dims[at->rank - (ta ? 1 : 2)], k = at->dims[at->rank - (ta ? 2 : 1)];
      int64_t n = rdim(r);
      gc_type bt = {.dtype = at->dtype, .rank = (int)rint_in(r, 2, at->rank)};
      int nb = bt.rank - 2;
      for (int i = 0; i < nb; i++) { /* batch dims broadcast against a's */
        int64_t d = at->dims[at->rank - 2 - nb + i];
        bt.dims[i] = rchance(r, 25) ? 1 : d;
      }
      bt.dims[nb] = tb ? n : k;
      bt.dims[nb + 1] = tb ? k : n;
      while (numel_of(&bt) > RG_MAX_NUMEL / 4 && n > 1) {
        n = n / 2;
        bt.dims[nb + (tb ? 0 : 1)] = n;
      }
      int b;
      if (rchance(r, 35)) { /* B a transpose of the last two dims of another value, which
                             * simplify folds into transpose_b (flipped) */
        gc_type ut = bt;
        ut.dims[nb] = bt.dims[nb + 1], ut.dims[nb + 1] = bt.dims[nb];
        int cands[RG_MAX_VALS], nc = 0;
        for (int i = 0; i < g->n_vals; i++) {
          const rg_val *v = &g->vals[i];
          if (!v->dead && !v->hidden && v->kind != 'i' && v->mag <= 100 && gc_type_equal(&v->t, &ut))
            cands[nc++] = i;
        }
        b = swap_last2(g, nc && rchance(r, 70) ? cands[rint_in(r, 0, nc - 1)] : new_arg(g, &ut, 'n', 0));
      } else {
        b = new_arg(g, &bt, 'n', 0);
      }
      rg_op *op = new_op(g, opc);
      op_in(op, a);
      op_in(op, b);
      if (ta || rchance(r, 15)) attr(op, "transpose_a=%s", ta ? "true" : "false");
      if (tb || rchance(r, 15)) attr(op, "transpose_b=%s", tb ? "true" : "false");
      gc_type t = *at;
      t.dims[t.rank - 2] = m;
      t.dims[t.rank - 1] = n;
      if (at->dtype == GRAPHC_DTYPE_I8 || at->dtype == GRAPHC_DTYPE_U8) t.dtype = GRAPHC_DTYPE_I32;  /* ir/infer.c */
      op_result(g, op, &t, !gc_dtype_is_float(at->dtype), g->vals[a].mag * g->vals[b].mag * (double)k);
      return 0;
    }
    case GC_OP_CONV2D: case GC_OP_MAX_POOL2D: case GC_OP_AVG_POOL2D: case GC_OP_IM2COL: {
      want w = {opc == GC_OP_IM2COL ? MA : MF, 4, 4, 0, 1000, 0};
      int x = pick(g, r, &w);
      /* pools: NHWC ([N, H, W, C], layout="nhwc") a third of the time */
      int nhwc = (opc == GC_OP_MAX_POOL2D || opc == GC_OP_AVG_POOL2D) && rchance(r, 35);
      if (rchance(r, 40)) { /* a fresh image with room for windows */
        static const int64_t chans[] = {1, 2, 3, 4, 8, 16};
        int64_t c = nhwc ? chans[rint_in(r, 0, 5)] : rint_in(r, 1, 4);
        gc_type t = {.dtype = rdtype(r, opc == GC_OP_IM2COL ? MA : MF), .rank = 4,
                     .dims = {rint_in(r, 1, 2), c, rint_in(r, 1, 9), rint_in(r, 1, 9)}};
        if (nhwc) t.dims[1] = t.dims[2], t.dims[2] = t.dims[3], t.dims[3] = c;
        x = new_arg(g, &t, 'n', 0);
      }
      const gc_type *xt = &g->vals[x].t;
      int64_t H = xt->dims[nhwc ? 1 : 2], W = xt->dims[nhwc ? 2 : 3], C = xt->dims[nhwc ? 3 : 1];
      int64_t kh = rint_in(r, 1, 3), kw = rint_in(r, 1, 3), sh = rint_in(r, 1, 2), sw = rint_in(r, 1, 2);
      int64_t dh = 1, dw = 1, pad[4] = {0, 0, 0, 0}, groups = 1, O = 0;
      int conv = opc == GC_OP_CONV2D || opc == GC_OP_IM2COL;  /* im2col: conv2d's windows */
      if (conv && rchance(r, 30)) dh = rint_in(r, 1, 2), dw = rint_in(r, 1, 2);
      int four = rchance(r, 30);
      for (int i = 0; i < 4; i++) {
        int64_t kk = i % 2 ? kw : kh;
        pad[i] = rint_in(r, 0, conv ? 2 : kk - 1);
        if (!four && i >= 2) pad[i] = pad[i - 2];
      }
      /* shrink the window until at least one output row/column exists */
      while (H + pad[0] + pad[2] - dh * (kh - 1) - 1 < 0) kh > 1 ? kh-- : (pad[0]++, 0);
      while (W + pad[1] + pad[3] - dw * (kw - 1) - 1 < 0) kw > 1 ? kw-- : (pad[1]++, 0);
      if (!conv) { /* pools: pad < kernel so every window sees a real element */
        pad[0] = pad[0] < kh ? pad[0] : kh - 1, pad[2] = pad[2] < kh ? pad[2] : kh - 1;
        pad[1] = pad[1] < kw ? pad[1] : kw - 1, pad[3] = pad[3] < kw ? pad[3] : kw - 1;
        if (!four) pad[2] = pad[0], pad[3] = pad[1];
        while (H + pad[0] + pad[2] - kh < 0) kh--;
        while (W + pad[1] + pad[3] - kw < 0) kw--;
        if (kh < 1 || kw < 1) return build_op(g, r, GC_OP_RELU);
        pad[0] = pad[0] < kh ? pad[0] : kh - 1, pad[2] = pad[2] < kh ? pad[2] : kh - 1;
        pad[1] = pad[1] < kw ? pad[1] : kw - 1, pad[3] = pad[3] < kw ? pad[3] : kw - 1;
      }
      int64_t OH = (H + pad[0] + pad[2] - dh * (kh - 1) - 1) / sh + 1;
      int64_t OW = (W + pad[1] + pad[3] - dw * (kw - 1) - 1) / sw + 1;
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      int wv = -1;
      if (opc == GC_OP_IM2COL) {
        int64_t k2[2] = {kh, kw};
        attr(op, "kernel=%s", ints_str(b1, sizeof b1, k2, 2));
        if (sh != 1 || sw != 1 || rchance(r, 20)) attr(op, "stride=[%lld, %lld]", (long long)sh, (long long)sw);
      } else if (conv) {
        int64_t divs[8], nd = 0;
        for (int64_t d = 1; d <= C && nd < 8; d++)
          if (C % d == 0) divs[nd++] = d;
        groups = divs[rint_in(r, 0, nd - 1)];
        O = groups * rint_in(r, 1, 3);
        gc_type wt = {.dtype = xt->dtype, .rank = 4, .dims = {O, C / groups, kh, kw}};
        wv = new_arg(g, &wt, 'n', 0);
        op_in(op, wv);
        if (sh != 1 || sw != 1 || rchance(r, 20)) attr(op, "stride=[%lld, %lld]", (long long)sh, (long long)sw);
      } else {
        int64_t k2[2] = {kh, kw};
        attr(op, "kernel=%s", ints_str(b1, sizeof b1, k2, 2));
        if (sh != kh || sw != kw || rchance(r, 20)) attr(op, "stride=[%lld, %lld]", (long long)sh, (long long)sw);
        OH = (H + pad[0] + pad[2] - kh) / sh + 1;
        OW = (W + pad[1] + pad[3] - kw) / sw + 1;
      }
      if (four) attr(op, "padding=%s", ints_str(b2, sizeof b2, pad, 4));
      else if (pad[0] || pad[1] || rchance(r, 20)) attr(op, "padding=[%lld, %lld]", (long long)pad[0], (long long)pad[1]);
      if (conv && (dh != 1 || dw != 1)) attr(op, "dilation=[%lld, %lld]", (long long)dh, (long long)dw);
      if (opc == GC_OP_CONV2D && (groups != 1 || rchance(r, 10))) attr(op, "groups=%lld", (long long)groups);
      if (nhwc) attr(op, "layout=\"nhwc\"");
      else if (!conv && rchance(r, 10)) attr(op, "layout=\"nchw\"");
      if (opc == GC_OP_IM2COL) {
        gc_type t = {.dtype = xt->dtype, .rank = 3, .dims = {xt->dims[0], C * kh * kw, OH * OW}};
        op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
        return 0;
      }
      gc_type t = {.dtype = xt->dtype, .rank = 4, .dims = {xt->dims[0], conv ? O : C, OH, OW}};
      if (nhwc) t.dims[1] = OH, t.dims[2] = OW, t.dims[3] = C;
      double mag = conv ? g->vals[x].mag * 2 * (double)(C / groups * kh * kw) : g->vals[x].mag;
      op_result(g, op, &t, opc == GC_OP_MAX_POOL2D && g->vals[x].exact, mag);
      return 0;
    }
    case GC_OP_RESHAPE: {
      want w = {MA, 0, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      int64_t n = numel_of(&g->vals[x].t);
      gc_type t = {.dtype = g->vals[x].t.dtype};
      int64_t rest = n;
      int rank = rrank(r, 0, 4);
      for (int i = 0; i < rank - 1 && rest > 1; i++) { /* factor n */
        int64_t divs[64], nd = 0;
        for (int64_t d = 1; d <= rest && nd < 64; d++)
          if (rest % d == 0) divs[nd++] = d;
        int64_t d = divs[rint_in(r, 0, nd - 1)];
        t.dims[t.rank++] = d;
        rest /= d;
      }
      if (rank > 0 || rest > 1) t.dims[t.rank++] = rest;
      int64_t shown[GC_MAX_RANK];
      memcpy(shown, t.dims, sizeof shown);
      if (t.rank > 0 && rchance(r, 30)) shown[rint_in(r, 0, t.rank - 1)] = -1;
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      attr(op, "shape=%s", ints_str(b1, sizeof b1, shown, t.rank));
      op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
      return 0;
    }
    case GC_OP_TRANSPOSE: {
      want w = {MA, 1, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      const gc_type *xt = &g->vals[x].t;
      int64_t perm[GC_MAX_RANK];
      for (int i = 0; i < xt->rank; i++) perm[i] = i;
      for (int i = xt->rank - 1; i > 0; i--) {
        int j = (int)rint_in(r, 0, i);
        int64_t tmp = perm[i]; perm[i] = perm[j]; perm[j] = tmp;
      }
      gc_type t = *xt;
      for (int i = 0; i < xt->rank; i++) t.dims[i] = xt->dims[perm[i]];
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      attr(op, "perm=%s", ints_str(b1, sizeof b1, perm, xt->rank));
      op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
      return 0;
    }
    case GC_OP_BROADCAST: {
      want w = {MA, 0, 3, 0, 0, 0};
      int x = pick(g, r, &w);
      const gc_type *xt = &g->vals[x].t;
      gc_type t = {.dtype = xt->dtype, .rank = xt->rank + (int)rint_in(r, 0, 2)};
      int lead = t.rank - xt->rank;
      for (int i = 0; i < t.rank; i++) {
        int64_t d = i < lead ? 1 : xt->dims[i - lead];
        t.dims[i] = d == 1 && rchance(r, 60) ? rdim(r) : d;
      }
      for (int changed = 1; changed && numel_of(&t) > RG_MAX_NUMEL;) { /* shrink expanded dims */
        changed = 0;
        for (int i = 0; i < t.rank; i++)
          if ((i < lead || xt->dims[i - lead] == 1) && t.dims[i] > 1)
            t.dims[i] = (t.dims[i] + 1) / 2, changed = 1;
      }
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      attr(op, "shape=%s", ints_str(b1, sizeof b1, t.dims, t.rank));
      op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
      return 0;
    }
    case GC_OP_CONCAT: {
      want w = {MA, 1, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      gc_type t = g->vals[x].t;
      int axis = (int)rint_in(r, 0, t.rank - 1);
      int n = (int)rint_in(r, 1, 3);
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      int exact = g->vals[x].exact;
      double mag = g->vals[x].mag;
      for (int i = 1; i < n; i++) {
        int y = x;
        if (rchance(r, 70)) {
          gc_type s = g->vals[x].t;
          s.dims[axis] = rdim(r);
          y = new_arg(g, &s, 'n', 0);
        }
        op_in(op, y);
        t.dims[axis] += g->vals[y].t.dims[axis];
        exact = exact && g->vals[y].exact;
        mag = dmax(mag, g->vals[y].mag);
      }
      attr(op, "axis=%d", rchance(r, 30) ? axis - t.rank : axis);
      op_result(g, op, &t, exact, mag);
      return 0;
    }
    case GC_OP_SLICE: {
      want w = {MA, 1, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      const gc_type *xt = &g->vals[x].t;
      int64_t st[GC_MAX_RANK], en[GC_MAX_RANK], sp[GC_MAX_RANK];
      int steps = rchance(r, 50);
      gc_type t = *xt;
      for (int i = 0; i < xt->rank; i++) {
        int64_t d = xt->dims[i];
        int64_t s0 = rint_in(r, 0, d - 1), e0 = rint_in(r, s0 + 1, d), step = steps ? rint_in(r, 1, 3) : 1;
        t.dims[i] = (e0 - s0 + step - 1) / step;
        st[i] = rchance(r, 30) ? s0 - d : s0;
        en[i] = e0 == d && rchance(r, 30) ? d + rint_in(r, 1, 5) : rchance(r, 30) && e0 < d ? e0 - d : e0;
        sp[i] = step;
      }
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      attr(op, "start=%s", ints_str(b1, sizeof b1, st, xt->rank));
      attr(op, "end=%s", ints_str(b2, sizeof b2, en, xt->rank));
      if (steps) attr(op, "step=%s", ints_str(b3, sizeof b3, sp, xt->rank));
      op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
      return 0;
    }
    case GC_OP_PAD: {
      want w = {MA, 1, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      const gc_type *xt = &g->vals[x].t;
      int64_t pads[2 * GC_MAX_RANK];
      gc_type t = *xt;
      for (int i = 0; i < 2 * xt->rank; i++) {
        pads[i] = rint_in(r, 0, 2);
        t.dims[i % xt->rank] += pads[i];
      }
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      attr(op, "pads=%s", ints_str(b1, sizeof b1, pads, 2 * xt->rank));
      if (rchance(r, 50)) attr(op, "value=%s", lit(r, xt->dtype, b2, sizeof b2));
      op_result(g, op, &t, g->vals[x].exact, dmax(g->vals[x].mag, 3));
      return 0;
    }
    case GC_OP_GATHER: {
      want w = {MA, 1, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      const gc_type *xt = &g->vals[x].t;
      int axis = (int)rint_in(r, 0, xt->rank - 1);
      gc_type it = {.dtype = rchance(r, 50) ? GRAPHC_DTYPE_I32 : GRAPHC_DTYPE_I64};
      rshape(r, &it, rrank(r, 0, 2));
      if (xt->rank + it.rank - 1 > 4) it.rank = 0;
      int idx = new_arg(g, &it, 'i', xt->dims[axis]);
      gc_type t = {.dtype = xt->dtype};
      for (int i = 0; i < axis; i++) t.dims[t.rank++] = xt->dims[i];
      for (int i = 0; i < it.rank; i++) t.dims[t.rank++] = it.dims[i];
      for (int i = axis + 1; i < xt->rank; i++) t.dims[t.rank++] = xt->dims[i];
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      op_in(op, idx);
      if (axis != 0 || rchance(r, 30)) attr(op, "axis=%d", rchance(r, 30) ? axis - xt->rank : axis);
      op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
      return 0;
    }
    case GC_OP_SPLIT: {
      want w = {MA, 1, 4, 0, 0, 0};
      int x = pick(g, r, &w);
      const gc_type *xt = &g->vals[x].t;
      int axis = (int)rint_in(r, 0, xt->rank - 1);
      int64_t d = xt->dims[axis], sizes[RG_MAX_OUT];
      int n = 0;
      while (d > 0 && n < RG_MAX_OUT - 1) {
        int64_t s = n == 3 ? d : rint_in(r, 1, d);
        sizes[n++] = s;
        d -= s;
      }
      if (d > 0) sizes[n - 1] += d;
      rg_op *op = new_op(g, opc);
      op_in(op, x);
      attr(op, "axis=%d", rchance(r, 30) ? axis - xt->rank : axis);
      attr(op, "sizes=%s", ints_str(b1, sizeof b1, sizes, n));
      for (int i = 0; i < n; i++) {
        gc_type t = *xt;
        t.dims[axis] = sizes[i];
        op_result(g, op, &t, g->vals[x].exact, g->vals[x].mag);
      }
      return 0;
    }
    default:
      return -1;
  }
}

/* ---- text ------------------------------------------------------------------------------------ */
/* Which values are used by live ops. */
void uses(const rg_graph *g, int *used) {
  memset(used, 0, sizeof(int) * RG_MAX_VALS);
  for (int i = 0; i < g->n_ops; i++)
    if (!g->ops[i].dead)
      for (int k = 0; k < g->ops[i].n_in; k++) used[g->ops[i].in[k]]++;
}

/* Outputs = every live op result that no live op uses. */
static void default_outputs(rg_graph *g) {
  int used[RG_MAX_VALS];
  uses(g, used);
  g->n_outs = 0;
  for (int i = 0; i < g->n_ops; i++) {
    const rg_op *op = &g->ops[i];
    if (op->dead) continue;
    for (int k = 0; k < op->n_out; k++)
      if (!used[op->out[k]]) g->outs[g->n_outs++] = op->out[k];
  }
}

/* A type, with every dim equal to sym (when sym > 0) written as the symbol S. */
static void type_text(gc_sbuf *b, const gc_type *t, int64_t sym) {
  if (sym <= 0) {
    gc_type_print(b, t, NULL);
    return;
  }
  gc_sbuf_printf(b, "%s[", graphc_dtype_name((graphc_dtype_t)t->dtype));
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] == sym) gc_sbuf_printf(b, "%sS", i ? ", " : "");
    else gc_sbuf_printf(b, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
  gc_sbuf_puts(b, "]");
}

/* The graph as .graph text; result types are written when `typed`. With
 * sym > 0, argument and output dims equal to sym are the symbol S. */
static char *text_of(const rg_graph *g, int typed, int64_t sym) {
  int used[RG_MAX_VALS];
  uses(g, used);
  for (int i = 0; i < g->n_outs; i++) used[g->outs[i]]++;
  gc_sbuf b = {0};
  gc_sbuf_puts(&b, sym > 0 ? "version 1;\ngraph @random<S>(" : "version 1;\ngraph @random(");
  int first = 1;
  for (int i = 0; i < g->n_vals; i++) {
    const rg_val *v = &g->vals[i];
    if (!v->is_arg || v->dead || !used[i]) continue;
    gc_sbuf_printf(&b, "%s%%v%d: ", first ? "" : ", ", v->id);
    type_text(&b, &v->t, sym);
    first = 0;
  }
  gc_sbuf_puts(&b, ") -> (");
  for (int i = 0; i < g->n_outs; i++) {
    if (i) gc_sbuf_puts(&b, ", ");
    type_text(&b, &g->vals[g->outs[i]].t, sym);
  }
  gc_sbuf_puts(&b, ") {\n");
  for (int i = 0; i < g->n_ops; i++) {
    const rg_op *op = &g->ops[i];
    if (op->dead) continue;
    if (op->opc == GC_OP_PARAM || op->opc == GC_OP_STATE) {
      int st = op->opc == GC_OP_STATE;
      gc_sbuf_printf(&b, "  %s %%v%d: ", st ? "state" : "param", g->vals[op->out[0]].id);
      gc_type_print(&b, &g->vals[op->out[0]].t, NULL);
      gc_sbuf_printf(&b, " = \"%c%d\";\n", st ? 's' : 'p', g->vals[op->out[0]].id);
      continue;
    }
    gc_sbuf_puts(&b, "  ");
    for (int k = 0; k < op->n_out; k++) gc_sbuf_printf(&b, "%s%%v%d", k ? ", " : "", g->vals[op->out[k]].id);
    gc_sbuf_printf(&b, " = %s(", gc_op_infos[op->opc].name);
    for (int k = 0; k < op->n_in; k++) gc_sbuf_printf(&b, "%s%%v%d", k ? ", " : "", g->vals[op->in[k]].id);
    if (op->attrs[0]) gc_sbuf_printf(&b, "%s%s", op->n_in ? ", " : "", op->attrs);
    gc_sbuf_puts(&b, ")");
    if (typed) {
      gc_sbuf_puts(&b, " : ");
      for (int k = 0; k < op->n_out; k++) {
        if (k) gc_sbuf_puts(&b, ", ");
        gc_type_print(&b, &g->vals[op->out[k]].t, NULL);
      }
    }
    gc_sbuf_puts(&b, ";\n");
  }
  gc_sbuf_puts(&b, "  return ");
  for (int i = 0; i < g->n_outs; i++) gc_sbuf_printf(&b, "%s%%v%d", i ? ", " : "", g->vals[g->outs[i]].id);
  gc_sbuf_puts(&b, ";\n}\n");
  GC_ASSERT(!b.failed);
  return gc_sbuf_take(&b);
}

char *graph_text(const rg_graph *g, int typed) { return text_of(g, typed, 0); }

char *graph_text_sym(const rg_graph *g, int64_t *bound) {
  int used[RG_MAX_VALS];
  uses(g, used);
  for (int i = 0; i < g->n_outs; i++) used[g->outs[i]]++;
  int64_t d = 0;
  for (int i = 0; i < g->n_vals && !d; i++) {
    const rg_val *v = &g->vals[i];
    if (v->is_arg && !v->dead && used[i] && v->t.rank >= 1 && v->t.dims[0] >= 2) d = v->t.dims[0];
  }
  if (!d) return NULL;
  *bound = d;
  return text_of(g, 0, d);
}

/* Re-derive every value's type from the library's shape inference (after the
 * shrinker changed dims). Returns 0 when the graph does not verify. */
int retype(rg_graph *g) {
  /* Parse the text without result annotations (the parser does not verify, so
   * the stale signature does not matter) and infer op by op. */
  char *text = graph_text(g, 0);
  gc_diags d;
  gc_diags_init(&d, "shrink.graph", text, strlen(text));
  gc_module *m = gc_parse("shrink.graph", text, strlen(text), &d);
  int ok = 0;
  if (m && m->n_graphs == 1) {
    gc_graph *gr = m->graphs[0];
    ok = 1;
    for (gc_op *op = gr->first; op && ok; op = op->next) {
      gc_type out[RG_MAX_OUT + 8];
      if (op->n_results > RG_MAX_OUT || !gc_infer_op(gr, op, out, &d)) {
        ok = 0;
        break;
      }
      for (int k = 0; k < op->n_results; k++) {
        int id = atoi(op->results[k]->name + 1);
        op->results[k]->type = out[k];
        for (int i = 0; i < g->n_vals; i++)
          if (g->vals[i].id == id) g->vals[i].t = out[k];
        if (gc_type_numel(&out[k]) > RG_MAX_NUMEL * 4) ok = 0;
      }
    }
  }
  gc_module_free(m);
  gc_diags_free(&d);
  free(text);
  return ok;
}

/* ---- generation ------------------------------------------------------------------------------------ */
int g_max_ops = 30;

/* A random graph from seed; `first` forces the first op (-1: none). Returns
 * -1 (with the op's name) when an op of the table has no builder. */
int generate(rg_graph *g, uint64_t seed, int first) {
  memset(g, 0, sizeof *g);
  g->seed = seed;
  rng r = {seed};
  int n_ops = (int)rint_in(&r, 1, g_max_ops);
  for (int i = 0; i < n_ops && g->n_ops < RG_MAX_OPS - 8 && g->n_vals < RG_MAX_VALS - 40; i++) {
    int opc = i == 0 && first >= 0 ? first : (int)rint_in(&r, 0, GC_OP_COUNT_ - 1);
    /* sources and params are rarer: they start no chain */
    if (first < 0 || i > 0)
      while (((opc == GC_OP_PARAM || opc == GC_OP_STATE) && !rchance(&r, 30)) ||
             (opc == GC_OP_CONST && !rchance(&r, 50)))
        opc = (int)rint_in(&r, 0, GC_OP_COUNT_ - 1);
    if (build_op(g, &r, (gc_opcode)opc) < 0) return -1 - opc;
  }
  default_outputs(g);
  return 0;
}


/* Deterministic input data for argument v (depends on its id and the graph seed). */
void rg_fill_input(const rg_graph *g, const rg_val *v, void *data) {
  rng r = {rmix(g->seed, (uint64_t)v->id + 1000)};
  int64_t n = numel_of(&v->t);
  for (int64_t i = 0; i < n; i++) {
    double x;
    if (v->kind == 'i') {
      x = (double)rint_in(&r, -v->range, v->range - 1);
    } else if (v->t.dtype == GRAPHC_DTYPE_BOOL) {
      x = (double)(rnext(&r) & 1);
    } else if (gc_dtype_is_float(v->t.dtype)) {
      x = v->kind == 'p' ? 0.25 + 1.75 * runit(&r) : 4 * runit(&r) - 2;
      if (rchance(&r, 10)) x = (double)rint_in(&r, -8, 8) / 4; /* exact ties and integers */
    } else if (v->t.dtype == GRAPHC_DTYPE_U8) {
      x = rchance(&r, 10) ? (double)rint_in(&r, 0, 255) : (double)rint_in(&r, 0, 12);
    } else if (v->t.dtype == GRAPHC_DTYPE_I8) {
      x = rchance(&r, 10) ? (double)rint_in(&r, -128, 127) : (double)rint_in(&r, -12, 12);
    } else {
      x = (double)rint_in(&r, -12, 12);
    }
    gc_store_f64(data, v->t.dtype, i, x);
  }
}

/* Values flagged exact (only exact operations on inputs: integer math, data
 * movement, max/min, comparisons, casts, ...) must be equal (NaN equals NaN).
 * Others: |got - ref| <= atol*scale + rtol*|ref| with the brief's per-dtype
 * tolerances (f32: the chain tolerance 2e-4; the loosest dtype on the way to
 * the value counts, see op_result) and scale = max(1, max |ref| of
 * the tensor), since rounding noise in a sum scales with its terms. NaN
 * matches NaN; infinities must match exactly. */
int rg_close(const graphc_tensor_t *ref, const graphc_tensor_t *got, int exact,
                    double tol, char *why, size_t n) {
  if (ref->nbytes != got->nbytes || ref->dtype != got->dtype) {
    snprintf(why, n, "different dtype or size");
    return 0;
  }
  gc_dtype dt = ref->dtype;
  int64_t count = (int64_t)(ref->nbytes / graphc_dtype_size(dt));
  if (!gc_dtype_is_float(dt) || exact) {
    for (int64_t i = 0; i < count; i++) {
      double a = gc_load_f64(ref->data, dt, i), b = gc_load_f64(got->data, dt, i);
      if (a != b && !(isnan(a) && isnan(b))) {
        snprintf(why, n, "element %lld: expected %.17g, got %.17g", (long long)i, a, b);
        return 0;
      }
    }
    return 1;
  }
  if (tol < dtype_tol(dt)) tol = dtype_tol(dt);
  double scale = 1;
  for (int64_t i = 0; i < count; i++) {
    double a = fabs(gc_load_f64(ref->data, dt, i));
    if (isfinite(a) && a > scale) scale = a;
  }
  for (int64_t i = 0; i < count; i++) {
    double a = gc_load_f64(ref->data, dt, i), b = gc_load_f64(got->data, dt, i);
    if (isnan(a) && isnan(b)) continue;
    if (isinf(a) || isinf(b) || isnan(a) || isnan(b)) {
      if (a == b) continue;
    } else if (fabs(a - b) <= tol * scale + tol * fabs(a)) {
      continue;
    }
    snprintf(why, n, "element %lld: expected %.9g, got %.9g (tolerance %.3g)", (long long)i, a, b,
             tol * scale + tol * fabs(a));
    return 0;
  }
  return 1;
}
