/* emit_attn.c - attention groups: ctx = softmax(q k^T * scale) v in one kernel (flash
 * attention, FlashAttention-2's schedule on mma.sync tensor cores, sm_80 and later).
 *
 *   fusion.c (step 0) groups matmul -> [mul / div by a scalar const] -> [add a mask] ->
 *   softmax(last axis) -> [select(ne(p, p), 0, p): torch SDPA's NaN guard] -> matmul in f16 / bf16 with head dims D, Dv of 16, 32, 64 or 128; the scores and
 *   probabilities never reach memory.
 *
 * Schedule: one BLOCKS group of AT_WARPS warps per 16 * MT query rows per warp (MT = 2 for
 * head dims up to 64: each K and V fragment read from shared memory feeds two MMAs) of one
 * batch entry (batch and heads flattened; the query tiles of one head run next to each
 * other, so its K and V stay in L2). Warp w owns query rows 16 MT w .. 16 MT (w + 1) - 1:
 *   - the Q tile lands in shared memory once (16-byte cp.async, zero-filled past Sq) and
 *     its m16n8k16 A fragments stay in registers (D / 4 i32 per thread);
 *   - keys advance AT_BKV = 64 at a time through two shared-memory stages of K and V
 *     (cp.async; block kb + 1 loads while block kb computes);
 *   - per key block: S = Q K^T on the tensor cores (64 columns: 32 f32 per thread), the
 *     online softmax in registers (row max and sum across the 4 threads of a row by
 *     shuffles, exp2 of scores pre-scaled by scale * log2(e), the running output rescaled),
 *     and O += P V, where P's accumulators become the next MMA's A fragments directly
 *     (the m16n8 accumulator layout of two adjacent column tiles is the m16n8k16 A layout:
 *     kir_pack2 rounds them to f16 / bf16 pairs);
 *   - at the end O / l goes through the matmul epilogue (gc_tc_store_tile: whatever
 *     elementwise ops the group fused), or, when the group's output is a head merge
 *     (transposes / reshapes of the result, fusion.c), straight into that buffer at the
 *     result's strides in it.
 * A causal group (fusion.c, attn_mask.c: key j visible to row i when j <= i + off) reads no
 * mask: each query tile's key loop stops at the block of the last key its last row sees
 * (the blocks above the diagonal are never loaded), and only a block past the last key of
 * the warp's first row (the diagonal, or the tail past Sk; a warp-uniform branch) sets the
 * scores past each row's last key to -inf. Every row sees key 0 (off >= 0), so the running
 * max is finite after the first block and needs no guard -- unless the group keeps a
 * residual mask beside the causal one (attn_mask.c: key padding, select(R, t, f) or an
 * additive R), which the kernel reads at the visible keys as any mask (the guard then too;
 * the whole mask instead when the residual is neither computed in the group nor stored).
 * K and V tiles use the swizzle of emit_mma.c (16-byte chunk c of row r at c ^ key(r)), so
 * cp.async stores and ldmatrix reads are free of bank conflicts. Operands that are no
 * 16-byte aligned window with a contiguous head dim are staged through the element
 * generator (8 values, one 16-byte shared store per chunk).
 */
#include <math.h>
#include <string.h>

#include "codegen/emit_tc.h"

#define AT_LOG2E 1.4426950408889634

enum {
  AT_WARPS = 4, AT_THREADS = 32 * AT_WARPS,
  AT_BKV = 64,            /* keys per step */
  AT_EPC = 8,             /* f16 / bf16 elements per 16-byte chunk */
  AT_MAXD = 128
};

static kir_expr *vx(gc_lowerer *c, kir_kernel *k, int v) { return ec_v(c, k, v); }
static kir_expr *cx(gc_lowerer *c, int64_t v) { return ec_i64(c, v); }
static kir_expr *rem(gc_lowerer *c, kir_expr *a, int64_t m) { return ec_bin(c, KIR_REM, a, cx(c, m)); }
static kir_expr *quo(gc_lowerer *c, kir_expr *a, int64_t m) { return ec_bin(c, KIR_DIV, a, cx(c, m)); }
static kir_expr *lt(gc_lowerer *c, kir_expr *a, kir_expr *b) { return ec_bin(c, KIR_LT, a, b); }
static kir_expr *f32c(gc_lowerer *c, double v) { return gc_ec_num(c, GRAPHC_DTYPE_F32, v); }

/* Swizzle key of tile row `row` (i64 expr) for rows of cpr 16-byte chunks: eight rows read
 * at one chunk column hit eight distinct 16-byte bank groups (rows of 2 or 4 chunks share
 * a 128-byte line with the next rows). */
static kir_expr *at_key(gc_lowerer *c, kir_expr *row, int cpr) {
  if (cpr >= 8) return rem(c, row, 8);
  return rem(c, quo(c, row, 8 / cpr), cpr);
}

/* Element offset of chunk `ch` of row `row` (vars) in a tile of rows of cpr chunks. */
static kir_expr *at_swz(gc_lowerer *c, kir_kernel *k, int row, kir_expr *ch, int key, int cpr) {
  return ec_add(c, ec_mul(c, vx(c, k, row), cx(c, (int64_t)cpr * AT_EPC)),
                ec_mul(c, ec_bin(c, KIR_XOR, ch, vx(c, k, key)), cx(c, AT_EPC)));
}

/* Q, K or V as a matrix of rows (queries or keys) x cols (head dim). */
typedef struct at_opnd {
  const gc_value *x;
  int swap;               /* x's last two dims are (col, row) */
  tc_opnd o;              /* direct: the strided window (s_outer: row stride; s_k = 1) */
  int direct;
  int64_t rows, cols;
  int base;               /* direct: i64 var, element offset of the batch entry */
  /* this thread's chunks of a tile of `trows` rows: rows row0 + i * rstep, chunk column ch */
  int trows, n, row0, ch, sidx;
  int64_t rstep;
} at_opnd;

static void at_operand(gc_lowerer *c, const gc_value *x, int swap, at_opnd *a) {
  memset(a, 0, sizeof *a);
  a->x = x;
  a->swap = swap;
  int r = x->type.rank;
  a->rows = x->type.dims[swap ? r - 1 : r - 2];
  a->cols = x->type.dims[swap ? r - 2 : r - 1];
  a->direct = gc_tc_operand(c, x, swap, &a->o) && a->o.s_k == 1 &&
              gc_tc_aligned(x, &a->o, swap ? r - 2 : r - 1, AT_EPC);
}

/* This thread's chunk plan for a tile of `trows` rows (one stage); the swizzle key is the
 * same for all of its rows (rstep is a multiple of 8 rows, or of the key's period). */
static void at_plan(gc_lowerer *c, kir_kernel *k, kir_block *b, int tid, at_opnd *a, int trows) {
  int cpr = (int)(a->cols / AT_EPC);
  a->trows = trows;
  a->n = trows * cpr / AT_THREADS;
  a->rstep = AT_THREADS / cpr;
  a->ch = gc_ec_let(c, k, b, "ch", rem(c, vx(c, k, tid), cpr));
  a->row0 = gc_ec_let(c, k, b, "row", quo(c, vx(c, k, tid), cpr));
  int key = gc_ec_let(c, k, b, "key", at_key(c, vx(c, k, a->row0), cpr));
  a->sidx = gc_ec_let(c, k, b, "sidx", at_swz(c, k, a->row0, vx(c, k, a->ch), key, cpr));
}

/* Load rows r0 .. r0 + trows - 1 (r0 an i64 var) of operand a into shared array sh at element
 * `sbase` (i64 var): cp.async from a direct window, else values from the element generator;
 * rows past the operand read as zeros. */
static void at_load(gc_gen *G, kir_block *b, at_opnd *a, const gc_mm_shape *s, const int *bco, int sh, int sbase,
                    int r0, gc_dtype dt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  int64_t tstride = a->cols;  /* tile row: cols elements */
  for (int i = 0; i < a->n; i++) {
    int row = gc_ec_let(c, k, b, "lr", ec_add(c, ec_add(c, vx(c, k, r0), vx(c, k, a->row0)), cx(c, i * a->rstep)));
    int si = gc_ec_let(c, k, b, "si", ec_add(c, ec_add(c, vx(c, k, sbase), vx(c, k, a->sidx)),
                                             cx(c, i * a->rstep * tstride)));
    int ok = gc_ec_let(c, k, b, "ok", lt(c, vx(c, k, row), cx(c, a->rows)));
    if (a->direct) {
      kir_expr *gi = ec_add(c, ec_add(c, vx(c, k, a->base), ec_mul(c, vx(c, k, row), cx(c, a->o.s_outer))),
                            ec_mul(c, vx(c, k, a->ch), cx(c, AT_EPC)));
      /* no address outside the buffer, even for a copy that reads nothing */
      kir_emit_cp_async(c->km, b, sh, vx(c, k, si), a->o.param, kir_select(c->km, vx(c, k, ok), gi, cx(c, 0)),
                        vx(c, k, ok));
      continue;
    }
    const gc_type *t = &a->x->type;
    int bx = t->rank - 2;
    kir_block *tb, *eb;
    kir_emit_if(c->km, b, vx(c, k, ok), &tb, &eb);
    gc_gen_push(G);
    kir_expr *vals[AT_EPC], *zeros[AT_EPC];
    for (int e = 0; e < AT_EPC; e++) {
      int col = gc_ec_let(c, k, tb, "lc", ec_add(c, ec_mul(c, vx(c, k, a->ch), cx(c, AT_EPC)), cx(c, e)));
      int co[GC_MAX_RANK];
      for (int j = 0; j < bx; j++) co[j] = t->dims[j] == 1 ? GC_PT_ZERO : bco[j + s->ob - bx];
      co[bx] = a->swap ? col : row;
      co[bx + 1] = a->swap ? row : col;
      int v = gc_gen_val(G, tb, a->x, gc_gen_pt(G, t, -1, co));
      vals[e] = ec_cast(c, dt, vx(c, k, v));
      zeros[e] = gc_ec_num(c, dt, 0.0);
    }
    gc_gen_pop(G);
    kir_emit_store_vec(c->km, tb, KIR_SHARED, sh, vx(c, k, si), AT_EPC, vals);
    kir_emit_store_vec(c->km, eb, KIR_SHARED, sh, vx(c, k, si), AT_EPC, zeros);
  }
}

/* The chain between the scores matmul S and the softmax P (fusion.c): S's scale (1 without a
 * scale op) and the additive mask value (NULL: none). */
static double at_chain(gc_lowerer *c, const gc_fusion_group *grp, const gc_op *P, const gc_op **S,
                       const gc_value **mask) {
  *S = NULL;
  for (int i = 0; i < grp->n_ops; i++)
    if (grp->ops[i]->opcode == GC_OP_MATMUL && grp->ops[i] != grp->roots[0]) *S = grp->ops[i];
  const gc_op *x = P->operands[0]->def;
  *mask = NULL;
  if (x->opcode == GC_OP_ADD) {
    /* the chain operand is S's result or its scale op's */
    int ci = 1;
    const gc_op *d0 = x->operands[0]->def;
    if (d0 == *S || (d0 && (d0->opcode == GC_OP_MUL || d0->opcode == GC_OP_DIV) &&
                     (d0->operands[0]->def == *S || d0->operands[1]->def == *S)))
      ci = 0;
    *mask = x->operands[1 - ci];
    x = x->operands[ci]->def;
  }
  if (x == *S) return 1.0;
  int ci = x->operands[1]->def && x->operands[1]->def->opcode == GC_OP_CONST ? 1 : 0;
  const gc_value *cv = x->operands[ci];
  kir_expr *e = gc_ec_scalar_const(c, gc_op_attr(cv->def, "value"), cv->type.dtype);
  double v = e->kind == KIR_E_CONST ? (gc_dtype_is_float(e->type) ? e->u.f : (double)e->u.i) : 1.0;
  return x->opcode == GC_OP_DIV ? 1.0 / v : v;
}

/* The group's output views (fusion.c): strides of the result's coordinates in the buffer of
 * the last view, which the group writes. 0: the result itself is written (epilogue). */
static const gc_value *at_view_out(const gc_fusion_group *grp, int64_t *st) {
  const gc_op *chain[GC_MAX_VIEW_CHAIN];
  int n = 0;
  for (int i = 0; i < grp->n_ops; i++)
    if ((grp->roles[i] & GC_FROLE_EPILOGUE) &&
        (grp->ops[i]->opcode == GC_OP_TRANSPOSE || grp->ops[i]->opcode == GC_OP_RESHAPE) && n < GC_MAX_VIEW_CHAIN)
      chain[n++] = grp->ops[i];
  if (n == 0 || chain[0]->operands[0] != grp->roots[0]->results[0]) return NULL;
  if (!gc_fusion_view_strides(chain, n, st)) return NULL;
  return chain[n - 1]->results[0];
}

/* Can the element generator read v here: computed in the group, or in a buffer? */
static int at_readable(const gc_lowerer *c, const gc_value *v) {
  return (v->def && c->inl[v->def->id]) || c->val_buf[v->id] >= 0;
}

int gc_emit_attention(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *M2 = grp->roots[0], *P = M2->operands[0]->def, *S = NULL;
  if (grp->nan_guard) P = P->operands[2]->def;  /* select(ne(p, p), 0, p): fusion.c */
  const gc_value *mask;
  double scale = at_chain(c, grp, P, &S, &mask);
  /* a causal mask (fusion.c, attn_mask.c): key j visible to row i when j <= i + coff; no
   * mask reads, the key blocks above the diagonal are skipped */
  const int causal = grp->causal;
  const int64_t coff = grp->causal_off;
  /* a residual mask (key padding) is still read: the residual itself when the group
   * computes it or it has a buffer, else the whole mask (equal to it at the visible keys) */
  const gc_attn_resid *resid = &grp->resid;
  int rsel = 0;
  if (causal && resid->v && at_readable(c, resid->v)) {
    mask = resid->v;
    rsel = resid->sel;
  } else if (causal && !resid->v) {
    mask = NULL;
  }
  gc_mm_shape s, s1;
  gc_mm_shape_of(M2, &s);
  gc_mm_shape_of(S, &s1);
  gc_dtype dt = M2->results[0]->type.dtype;
  kir_mma_kind kind = dt == GRAPHC_DTYPE_F16 ? KIR_MMA_F16 : KIR_MMA_BF16;
  at_opnd q, kk_, v;
  at_operand(c, S->operands[0], 0, &q);
  at_operand(c, S->operands[1], !s1.tb, &kk_);
  at_operand(c, M2->operands[1], s.tb, &v);
  const int64_t Sq = s.M, Sk = s.K, D = s1.K, Dv = s.N;
  GC_ASSERT(D >= 16 && D <= AT_MAXD && !(D & (D - 1)) && Dv >= 16 && Dv <= AT_MAXD && !(Dv & (Dv - 1)) && s1.N == Sk);
  const int nd = (int)(D / 16), nv = (int)(Dv / 8);  /* k16 steps of S; n8 tiles of O */
  /* m16 tiles per warp: 2 (32 query rows) halves the shared-memory reads of K and V per
   * MMA, which bound the kernel at 1; with D or Dv 128 the registers do not allow it */
  const int MT = D <= 64 && Dv <= 64 && Sq > 16 * AT_WARPS ? 2 : 1;
  const int64_t BQ = 16 * AT_WARPS * MT;
  int64_t nqt = (Sq + BQ - 1) / BQ, nkb = (Sk + AT_BKV - 1) / AT_BKV;

  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, s.batch * nqt, AT_THREADS);
  gc_gen G;
  gc_gen_init(&G, c, k);
  at_opnd *ops[3] = {&q, &kk_, &v};
  for (int i = 0; i < 3; i++)
    if (ops[i]->direct) ops[i]->o.param = gc_gen_rparam(&G, c->val_buf[ops[i]->o.v.base->id], dt);
  int64_t q_el = BQ * D, k_el = AT_BKV * D, v_el = AT_BKV * Dv;
  int64_t smem = (q_el + 2 * k_el + 2 * v_el) * 2;
  k->shared_dynamic = smem > 48 * 1024;
  int sq = kir_add_shared(c->km, k, dt, q_el);
  int sk = kir_add_shared(c->km, k, dt, 2 * k_el);
  int sv = kir_add_shared(c->km, k, dt, 2 * v_el);
  kir_block *b = &k->body;

  /* which tile: (batch entry, query tile), query tiles fastest */
  int64_t dims2[2] = {s.batch, nqt};
  int co[2], bco[GC_MAX_RANK];
  gc_ec_unravel(c, k, b, k->item_var, 2, dims2, co);
  gc_mm_batch_coords(c, k, b, &s, co[0], bco);
  /* causal: a head's last query tiles (the most key blocks) first, so that the light ones
   * fill the end of the grid */
  kir_expr *qt = causal ? ec_bin(c, KIR_SUB, cx(c, nqt - 1), vx(c, k, co[1])) : vx(c, k, co[1]);
  int q0 = gc_ec_let(c, k, b, "q0", ec_mul(c, qt, cx(c, BQ)));
  for (int i = 0; i < 3; i++)
    if (ops[i]->direct) ops[i]->base = gc_ec_let(c, k, b, "base", gc_tc_batch_off(c, k, ops[i]->x, &ops[i]->o, &s, bco));
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  int lane = gc_ec_let(c, k, b, "lane", rem(c, vx(c, k, tid), 32));
  int warp = gc_ec_let(c, k, b, "warp", quo(c, vx(c, k, tid), 32));
  at_plan(c, k, b, tid, &q, (int)BQ);
  at_plan(c, k, b, tid, &kk_, AT_BKV);
  at_plan(c, k, b, tid, &v, AT_BKV);

  /* prologue: the Q tile (one commit group), key block 0 (another) */
  int zero = gc_ec_let(c, k, b, "zero", cx(c, 0));
  at_load(&G, b, &q, &s, bco, sq, zero, q0, dt);
  kir_emit_cp_commit(c->km, b);
  at_load(&G, b, &kk_, &s, bco, sk, zero, zero, dt);
  at_load(&G, b, &v, &s, bco, sv, zero, zero, dt);
  kir_emit_cp_commit(c->km, b);
  kir_emit_cp_wait(c->km, b, 1);
  kir_emit_barrier(c->km, b);

  /* ldmatrix lanes: matrix l / 8, its row l % 8. Pattern A (Q's A fragments, V's transposed
   * B fragments): row + 8 (q % 2), chunk + q / 2; pattern B (K's B fragments): row + 8 (q / 2),
   * chunk + q % 2. */
  int lq = gc_ec_let(c, k, b, "lq", quo(c, vx(c, k, lane), 8));
  int lra = gc_ec_let(c, k, b, "lra", ec_add(c, rem(c, vx(c, k, lane), 8), ec_mul(c, rem(c, vx(c, k, lq), 2), cx(c, 8))));
  int lca = gc_ec_let(c, k, b, "lca", quo(c, vx(c, k, lq), 2));
  int lrb = gc_ec_let(c, k, b, "lrb", ec_add(c, rem(c, vx(c, k, lane), 8), ec_mul(c, quo(c, vx(c, k, lq), 2), cx(c, 8))));
  int lcb = gc_ec_let(c, k, b, "lcb", rem(c, vx(c, k, lq), 2));
  int cq = (int)(D / AT_EPC), cv = (int)(Dv / AT_EPC);
  int keyq = gc_ec_let(c, k, b, "kq", at_key(c, vx(c, k, lra), cq));  /* rows 16 i + lra: same key */
  int keyk = gc_ec_let(c, k, b, "kk", at_key(c, vx(c, k, lrb), cq));
  int keyv = gc_ec_let(c, k, b, "kv", at_key(c, vx(c, k, lra), cv));

  /* Q fragments: m-tile mt of the warp is rows 16 (MT warp + mt) + lra */
  int qa[2][AT_MAXD / 16][4];
  for (int mt = 0; mt < MT; mt++) {
    int qrow = gc_ec_let(c, k, b, "qrow", ec_add(c, ec_mul(c, vx(c, k, warp), cx(c, 16 * MT)), ec_add(c, vx(c, k, lra), cx(c, 16 * mt))));
    for (int j = 0; j < nd; j++) {
      for (int r = 0; r < 4; r++) qa[mt][j][r] = gc_ec_var(c, k, "qa", GRAPHC_DTYPE_I32);
      kir_expr *ch = ec_add(c, vx(c, k, lca), cx(c, 2 * j));
      kir_emit_ldmatrix(c->km, b, sq, at_swz(c, k, qrow, ch, keyq, cq), 0, qa[mt][j]);
    }
  }

  /* running state per m-tile: O (f32, nv tiles x 4), row max and partial row sum for rows
   * g (h 0) and g + 8 (h 1) */
  int o[2][AT_MAXD / 8][4], m[2][2], l[2][2];
  for (int mt = 0; mt < MT; mt++) {
    for (int j = 0; j < nv; j++)
      for (int r = 0; r < 4; r++) o[mt][j][r] = gc_ec_let(c, k, b, "o", f32c(c, 0.0));
    for (int h = 0; h < 2; h++) {
      m[mt][h] = gc_ec_let(c, k, b, "m", f32c(c, -INFINITY));
      l[mt][h] = gc_ec_let(c, k, b, "l", f32c(c, 0.0));
    }
  }
  int t2 = gc_ec_let(c, k, b, "t2", ec_mul(c, rem(c, vx(c, k, lane), 4), cx(c, 2)));
  const double c2 = scale * AT_LOG2E;
  /* the mask's query coordinates of this thread's rows (clamped into the matrix) */
  int mrow[2][2];
  for (int mt = 0; mt < MT && mask; mt++)
    for (int h = 0; h < 2; h++)
      mrow[mt][h] = gc_ec_let(c, k, b, "mq", ec_bin(c, KIR_MIN, ec_add(c, ec_add(c, vx(c, k, q0), ec_mul(c, vx(c, k, warp), cx(c, 16 * MT))),
                                                                        ec_add(c, quo(c, vx(c, k, lane), 4), cx(c, 16 * mt + 8 * h))),
                                                     cx(c, Sq - 1)));

  /* causal: the tile's last row min(q0 + BQ, Sq) - 1 sees keys up to it + coff: the key
   * blocks past that are never loaded; each row's last key (clamped to Sk - 1) and the
   * warp's first row's (below it every key block is whole) */
  int nkbv = -1, wlim = -1, rlim[2][2];
  if (causal) {
    nkbv = gc_ec_let(c, k, b, "nkb", ec_bin(c, KIR_MIN, quo(c, ec_add(c, ec_bin(c, KIR_MIN, ec_add(c, vx(c, k, q0), cx(c, BQ)), cx(c, Sq)),
                                                                     cx(c, coff - 1 + AT_BKV)), AT_BKV),
                                            cx(c, nkb)));
    int wr0 = gc_ec_let(c, k, b, "wr0", ec_add(c, vx(c, k, q0), ec_mul(c, vx(c, k, warp), cx(c, 16 * MT))));
    wlim = gc_ec_let(c, k, b, "wlim", ec_bin(c, KIR_MIN, ec_add(c, vx(c, k, wr0), cx(c, coff)), cx(c, Sk - 1)));
    for (int mt = 0; mt < MT; mt++)
      for (int h = 0; h < 2; h++)
        rlim[mt][h] = gc_ec_let(c, k, b, "rlim", ec_bin(c, KIR_MIN, ec_add(c, ec_add(c, vx(c, k, wr0), quo(c, vx(c, k, lane), 4)),
                                                                           cx(c, 16 * mt + 8 * h + coff)),
                                                        cx(c, Sk - 1)));
  }
#define NKB (causal ? vx(c, k, nkbv) : cx(c, nkb))
  int kb = gc_ec_var(c, k, "kb", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, kb, cx(c, 0), NKB, cx(c, 1));
  {
    /* key block kb + 1 into the other stage while this one computes */
    kir_block *nb;
    kir_emit_if(c->km, lb, lt(c, ec_add(c, vx(c, k, kb), cx(c, 1)), NKB), &nb, NULL);
    gc_gen_push(&G);
    int ns = gc_ec_let(c, k, nb, "ns", rem(c, ec_add(c, vx(c, k, kb), cx(c, 1)), 2));
    int nr = gc_ec_let(c, k, nb, "nr", ec_mul(c, ec_add(c, vx(c, k, kb), cx(c, 1)), cx(c, AT_BKV)));
    int ksb = gc_ec_let(c, k, nb, "ksb", ec_mul(c, vx(c, k, ns), cx(c, k_el)));
    int vsb = gc_ec_let(c, k, nb, "vsb", ec_mul(c, vx(c, k, ns), cx(c, v_el)));
    at_load(&G, nb, &kk_, &s, bco, sk, ksb, nr, dt);
    at_load(&G, nb, &v, &s, bco, sv, vsb, nr, dt);
    gc_gen_pop(&G);
  }
  kir_emit_cp_commit(c->km, lb);
  kir_emit_cp_wait(c->km, lb, 1);
  kir_emit_barrier(c->km, lb);
  int cs = gc_ec_let(c, k, lb, "cs", rem(c, vx(c, k, kb), 2));
  int ks0 = gc_ec_let(c, k, lb, "ks0", ec_mul(c, vx(c, k, cs), cx(c, k_el)));
  int vs0 = gc_ec_let(c, k, lb, "vs0", ec_mul(c, vx(c, k, cs), cx(c, v_el)));

  /* S = Q K^T: 8 n8 tiles of keys per m-tile; K's fragments for keys 16 p .. 16 p + 15 and
   * D step j, read once for all m-tiles */
  int sacc[2][AT_BKV / 8][4];
  for (int mt = 0; mt < MT; mt++)
    for (int j = 0; j < AT_BKV / 8; j++)
      for (int r = 0; r < 4; r++) sacc[mt][j][r] = gc_ec_let(c, k, lb, "s", f32c(c, 0.0));
  for (int j = 0; j < nd; j++)
    for (int p = 0; p < AT_BKV / 16; p++) {
      int kf[4];
      for (int r = 0; r < 4; r++) kf[r] = gc_ec_var(c, k, "kf", GRAPHC_DTYPE_I32);
      int row = gc_ec_let(c, k, lb, "krow", ec_add(c, vx(c, k, lrb), cx(c, 16 * p)));
      kir_expr *ch = ec_add(c, vx(c, k, lcb), cx(c, 2 * j));
      kir_emit_ldmatrix(c->km, lb, sk, ec_add(c, vx(c, k, ks0), at_swz(c, k, row, ch, keyk, cq)), 0, kf);
      for (int mt = 0; mt < MT; mt++) {
        kir_emit_mma(c->km, lb, kind, sacc[mt][2 * p], qa[mt][j], kf);
        kir_emit_mma(c->km, lb, kind, sacc[mt][2 * p + 1], qa[mt][j], kf + 2);
      }
    }

  /* online softmax: y = (s * scale [+ mask]) * log2(e) (-inf past Sk) */
  int kbase = gc_ec_let(c, k, lb, "kbase", ec_add(c, ec_mul(c, vx(c, k, kb), cx(c, AT_BKV)), vx(c, k, t2)));
  int mkey[AT_BKV / 8][2];  /* the mask's key coordinates, clamped into the matrix */
  for (int j = 0; j < AT_BKV / 8 && mask; j++)
    for (int e = 0; e < 2; e++)
      mkey[j][e] = gc_ec_let(c, k, lb, "mk", ec_bin(c, KIR_MIN, ec_add(c, vx(c, k, kbase), cx(c, 8 * j + e)), cx(c, Sk - 1)));
  int pa[2][AT_BKV / 16][4];
  for (int mt = 0; mt < MT; mt++) {
    int y[AT_BKV / 8][4];
    for (int j = 0; j < AT_BKV / 8; j++)
      for (int r = 0; r < 4; r++) {
        kir_expr *e;
        if (mask) {
          /* the mask element (computed inline or loaded) at (batch, row, key), in the graph's
           * order: x = s * scale + m, then * log2(e) */
          const gc_type *mt_ = &mask->type;
          int rs = S->results[0]->type.rank, co[GC_MAX_RANK];
          for (int i = 0; i < mt_->rank; i++) {
            int jd = i + rs - mt_->rank;
            co[i] = mt_->dims[i] == 1 ? GC_PT_ZERO
                    : jd == rs - 1   ? mkey[j][r & 1]
                    : jd == rs - 2   ? mrow[mt][r / 2]
                                     : bco[jd];
          }
          int mv = gc_gen_val(&G, lb, mask, gc_gen_pt(&G, mt_, -1, co));
          kir_expr *me = ec_cast(c, GRAPHC_DTYPE_F32, vx(c, k, mv));
          if (rsel) me = kir_select(c->km, vx(c, k, mv), f32c(c, resid->t), f32c(c, resid->f));
          e = ec_mul(c, ec_add(c, ec_mul(c, vx(c, k, sacc[mt][j][r]), f32c(c, scale)), me), f32c(c, AT_LOG2E));
        } else {
          e = ec_mul(c, vx(c, k, sacc[mt][j][r]), f32c(c, c2));
        }
        if (Sk % AT_BKV && !causal)
          e = kir_select(c->km, lt(c, ec_add(c, vx(c, k, kbase), cx(c, 8 * j + (r & 1))), cx(c, Sk)), e,
                         f32c(c, -INFINITY));
        y[j][r] = gc_ec_let(c, k, lb, "y", e);
      }
    if (causal) {
      /* a block past the warp's first row's last key (the diagonal, or the tail past Sk):
       * keys past each row's last one are -inf */
      kir_block *db;
      kir_emit_if(c->km, lb, lt(c, vx(c, k, wlim), ec_add(c, ec_mul(c, vx(c, k, kb), cx(c, AT_BKV)), cx(c, AT_BKV - 1))), &db,
                  NULL);
      for (int j = 0; j < AT_BKV / 8; j++)
        for (int r = 0; r < 4; r++)
          kir_emit_assign(c->km, db, y[j][r],
                          kir_select(c->km, ec_bin(c, KIR_LE, ec_add(c, vx(c, k, kbase), cx(c, 8 * j + (r & 1))),
                                                   vx(c, k, rlim[mt][r / 2])),
                                     vx(c, k, y[j][r]), f32c(c, -INFINITY)));
    }
    int alpha[2], msub[2];
    for (int h = 0; h < 2; h++) {
      int mx = y[0][2 * h];
      for (int j = 0; j < AT_BKV / 8; j++)
        for (int e = 0; e < 2; e++)
          if (j || e) mx = gc_ec_let(c, k, lb, "mx", ec_bin(c, KIR_MAX, vx(c, k, mx), vx(c, k, y[j][2 * h + e])));
      for (int sh = 1; sh <= 2; sh *= 2)
        mx = gc_ec_let(c, k, lb, "mx", ec_bin(c, KIR_MAX, vx(c, k, mx), kir_shfl_xor(c->km, vx(c, k, mx), sh)));
      int mn = gc_ec_let(c, k, lb, "mn", ec_bin(c, KIR_MAX, vx(c, k, m[mt][h]), vx(c, k, mx)));
      /* a mask may leave every key so far at -inf: subtract 0 then (exp2(-inf) = 0, no NaN);
       * the running max itself stays -inf */
      msub[h] = !mask ? mn
                      : gc_ec_let(c, k, lb, "ms", kir_select(c->km, ec_bin(c, KIR_EQ, vx(c, k, mn), f32c(c, -INFINITY)),
                                                             f32c(c, 0.0), vx(c, k, mn)));
      alpha[h] = gc_ec_let(c, k, lb, "alpha",
                           kir_unary(c->km, KIR_EXP2, ec_bin(c, KIR_SUB, vx(c, k, m[mt][h]), vx(c, k, msub[h]))));
      kir_emit_assign(c->km, lb, m[mt][h], vx(c, k, mn));
    }
    int pv[AT_BKV / 8][4], rs[2] = {-1, -1};
    for (int j = 0; j < AT_BKV / 8; j++)
      for (int r = 0; r < 4; r++) {
        int h = r / 2;
        pv[j][r] = gc_ec_let(c, k, lb, "p",
                             kir_unary(c->km, KIR_EXP2, ec_bin(c, KIR_SUB, vx(c, k, y[j][r]), vx(c, k, msub[h]))));
        rs[h] = rs[h] < 0 ? pv[j][r] : gc_ec_let(c, k, lb, "rs", ec_add(c, vx(c, k, rs[h]), vx(c, k, pv[j][r])));
      }
    for (int h = 0; h < 2; h++)
      kir_emit_assign(c->km, lb, l[mt][h],
                      ec_add(c, ec_mul(c, vx(c, k, l[mt][h]), vx(c, k, alpha[h])), vx(c, k, rs[h])));
    for (int j = 0; j < nv; j++)
      for (int r = 0; r < 4; r++)
        kir_emit_assign(c->km, lb, o[mt][j][r], ec_mul(c, vx(c, k, o[mt][j][r]), vx(c, k, alpha[r / 2])));
    /* P's A fragments for key step j (keys 16 j ..): S tiles 2 j and 2 j + 1 */
    for (int j = 0; j < AT_BKV / 16; j++)
      for (int r = 0; r < 4; r++) {
        int tile = 2 * j + r / 2, h = r % 2;
        pa[mt][j][r] = gc_ec_let(c, k, lb, "pa",
                                 kir_pack2(c->km, dt, vx(c, k, pv[tile][2 * h]), vx(c, k, pv[tile][2 * h + 1])));
      }
  }

  /* O += P V; V's fragments read once for all m-tiles */
  for (int j = 0; j < AT_BKV / 16; j++) {
    int row = gc_ec_let(c, k, lb, "vrow", ec_add(c, vx(c, k, lra), cx(c, 16 * j)));
    for (int p = 0; p < nv / 2; p++) {
      int vf[4];
      for (int r = 0; r < 4; r++) vf[r] = gc_ec_var(c, k, "vf", GRAPHC_DTYPE_I32);
      kir_expr *ch = ec_add(c, vx(c, k, lca), cx(c, 2 * p));
      kir_emit_ldmatrix(c->km, lb, sv, ec_add(c, vx(c, k, vs0), at_swz(c, k, row, ch, keyv, cv)), 1, vf);
      for (int mt = 0; mt < MT; mt++) {
        kir_emit_mma(c->km, lb, kind, o[mt][2 * p], pa[mt][j], vf);
        kir_emit_mma(c->km, lb, kind, o[mt][2 * p + 1], pa[mt][j], vf + 2);
      }
    }
  }
  /* every warp is done with this stage before the next iteration refills it */
  kir_emit_barrier(c->km, lb);
  kir_emit_cp_wait(c->km, b, 0);

  /* O / l (the row sums across the 4 threads of a row); output rows 2 mt + h */
  int rows[4], cols[AT_MAXD / 8][2], acc[4 * (AT_MAXD / 8) * 2];
  int grow = gc_ec_let(c, k, b, "grow", ec_add(c, ec_add(c, vx(c, k, q0), ec_mul(c, vx(c, k, warp), cx(c, 16 * MT))),
                                                quo(c, vx(c, k, lane), 4)));
  for (int j = 0; j < nv; j++)
    for (int e = 0; e < 2; e++) cols[j][e] = gc_ec_let(c, k, b, "gn", ec_add(c, vx(c, k, t2), cx(c, 8 * j + e)));
  for (int mt = 0; mt < MT; mt++)
    for (int h = 0; h < 2; h++) {
      int sum = l[mt][h];
      for (int sh = 1; sh <= 2; sh *= 2)
        sum = gc_ec_let(c, k, b, "l", ec_add(c, vx(c, k, sum), kir_shfl_xor(c->km, vx(c, k, sum), sh)));
      kir_expr *rcp = ec_bin(c, KIR_DIV, f32c(c, 1.0), vx(c, k, sum));
      /* the guard's 0 for a row with every key masked: l = 0 there, and O = 0 */
      if (grp->nan_guard)
        rcp = kir_select(c->km, ec_bin(c, KIR_EQ, vx(c, k, sum), f32c(c, 0.0)), f32c(c, 0.0), rcp);
      int inv = gc_ec_let(c, k, b, "inv", rcp);
      int r = 2 * mt + h;
      rows[r] = gc_ec_let(c, k, b, "gm", ec_add(c, vx(c, k, grow), cx(c, 16 * mt + 8 * h)));
      for (int j = 0; j < nv; j++)
        for (int e = 0; e < 2; e++)
          acc[(r * nv + j) * 2 + e] = gc_ec_let(c, k, b, "out", ec_mul(c, vx(c, k, o[mt][j][2 * h + e]), vx(c, k, inv)));
    }
  int nr = 2 * MT;
  int64_t vst[GC_MAX_RANK];
  const gc_value *vo = at_view_out(grp, vst);
  if (!vo) {
    gc_tc_store_tile(&G, b, grp, &s, bco, nr, rows, nv, (const int(*)[2])cols, acc, 1);
  } else {
    /* the head merge: result element (batch, row, col) at sum coords * vst in vo's buffer */
    int op_ = gc_gen_wparam(&G, c->val_buf[vo->id], vo->type.dtype);
    kir_expr *bo = cx(c, 0);
    for (int j = 0; j < s.ob; j++)
      if (bco[j] != GC_PT_ZERO && vst[j]) bo = ec_add(c, bo, ec_mul(c, vx(c, k, bco[j]), cx(c, vst[j])));
    int ob = gc_ec_let(c, k, b, "ob", bo);
    int64_t srow = vst[s.ob], scol = vst[s.ob + 1];
    for (int r = 0; r < nr; r++) {
      kir_block *rb;
      kir_emit_if(c->km, b, lt(c, vx(c, k, rows[r]), cx(c, Sq)), &rb, NULL);
      int ri = gc_ec_let(c, k, rb, "ri", ec_add(c, vx(c, k, ob), ec_mul(c, vx(c, k, rows[r]), cx(c, srow))));
      for (int j = 0; j < nv; j++)
        for (int e = 0; e < 2; e++)
          gc_ec_store(c, k, rb, op_, ec_add(c, vx(c, k, ri), ec_mul(c, vx(c, k, cols[j][e]), cx(c, scol))),
                      vx(c, k, acc[(r * nv + j) * 2 + e]));
    }
  }
  k->bytes_moved = gc_gen_bytes(&G, -1);
  double pairs = (double)Sq * (double)Sk;  /* (row, key) pairs computed: causal, those visible */
  if (causal) {
    pairs = 0;
    for (int64_t i = 0; i < Sq; i++) pairs += (double)(i + coff + 1 < Sk ? i + coff + 1 : Sk);
  }
  k->flops = 2.0 * (double)s.batch * pairs * (double)(D + Dv);
#undef NKB
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}
