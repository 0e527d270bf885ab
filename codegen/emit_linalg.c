/* emit_linalg.c - matmul, conv2d, max_pool2d, avg_pool2d groups.
 *
 *   matmul, CUDA (what the tensor cores do not take: emit_mma.c, emit_wgmma.c): f32 with M and N
 *       of 64 or more on the register-blocked kernel (mm_simt: 128x128 or 64x64 tiles,
 *       8x8 or 4x4 accumulators per thread); else shared-memory tiles: a BLOCKS launch
 *       over (batch, tile_m, tile_n) groups of 256 threads; each group computes a 32x32 output tile,
 *       each thread 4 rows of one column; A and B tiles (32x33, padded against
 *       bank conflicts) are staged per 32-wide K step, loaded so that consecutive
 *       threads read consecutive addresses: which of an operand's two matrix
 *       dims is contiguous is probed on its index map (transpose flags and
 *       absorbed transposes alike).
 *   matmul, host: ITEMS over 8x16 output tiles (8x32 with AVX-512; row tiles
 *       fastest: a thread's chunk reuses one column panel of B), each a register-
 *       blocked pass over K that LLVM vectorizes (FMAs across the columns); edge
 *       tiles loop with bounds tests. Large f32 matmuls whose B the tiles would
 *       read badly (mm_use_packed) take the packed path instead: per item a block
 *       of C, per K block of 256 both operand blocks packed into per-thread scratch
 *       (KIR_SCRATCH) as contiguous tile panels, then the same register tiles. A B
 *       that the group computes (an im2col) is packed a panel per item (mm_items_bpack);
 *       batches of a shared A with few, ragged columns (1x1 convs over small maps) share
 *       panels across batches (mm_items_bcols).
 *   Operands are read through the element generator, so reshape / transpose /
 *   broadcast / slice producers fused into them are strided loads (a transposed
 *   head split costs no kernel); the epilogue (bias, activation, residual,
 *   scale, cast) runs on the accumulator before the store.
 *   conv2d, pools: ITEMS over outputs with loops over C/groups, KH, KW and
 *       bounds tests for padding (direct convolution: what conv-gemm left and
 *       emit_dwconv.c does not take, grouped convs wider than 16 taps); pool inputs go through
 *       the generator (fused producers), both end with the epilogue. An NHWC
 *       pool (layout="nhwc") has the channels fastest: coalesced loads.
 * Accumulation: f32 (f64 for f64, i64 for ints, which wrap on the store).
 */
#include <math.h>
#include <string.h>

#include "codegen/emit_tc.h"

/* Tile geometry of the CUDA matmul kernel. */
enum { MM_T = 32, MM_PAD = MM_T + 1, MM_ROWS = 8, MM_RPT = MM_T / MM_ROWS };

/* i64 bounds test lo <= v < hi on a var (lo omitted when the var cannot be negative). */
static kir_expr *in_range(gc_lowerer *c, kir_kernel *k, int v, int64_t hi, int check_lo) {
  kir_expr *e = ec_bin(c, KIR_LT, ec_v(c, k, v), ec_i64(c, hi));
  if (check_lo) e = ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, ec_v(c, k, v), ec_i64(c, 0)), e);
  return e;
}

/* ---- matmul --------------------------------------------------------------------------------- */

typedef gc_mm_shape mm_shape;

/* Element index of coordinates co of value v in the buffer it is finally read
 * from, following the index maps the group computes inline; -1 when another op
 * is in the way (host-side, for probing contiguity). */
static int64_t view_index(const gc_lowerer *c, const gc_value *v, const int64_t *co) {
  const gc_type *t = &v->type;
  const gc_op *op = v->def;
  if (!op || !c->inl[op->id]) {
    int64_t lin = 0;
    for (int i = 0; i < t->rank; i++) lin = lin * t->dims[i] + co[i];
    return lin;
  }
  if (op->n_operands == 0) return -1;  /* a splat or iota: no buffer behind it */
  const gc_value *x = op->operands[0];
  const gc_type *it = &x->type;
  int64_t ic[GC_MAX_RANK], a[2 * GC_MAX_RANK];
  switch (op->opcode) {
    case GC_OP_RESHAPE: {
      int64_t lin = 0;
      for (int i = 0; i < t->rank; i++) lin = lin * t->dims[i] + co[i];
      for (int i = it->rank - 1; i >= 0; i--) {
        ic[i] = lin % it->dims[i];
        lin /= it->dims[i];
      }
      break;
    }
    case GC_OP_TRANSPOSE:
      gc_attr_ints(gc_op_attr(op, "perm"), a, GC_MAX_RANK);
      for (int i = 0; i < t->rank; i++) ic[a[i]] = co[i];
      break;
    case GC_OP_BROADCAST:
      for (int j = 0; j < it->rank; j++) ic[j] = it->dims[j] == 1 ? 0 : co[j + t->rank - it->rank];
      break;
    case GC_OP_SLICE: {
      int64_t st[GC_MAX_RANK];
      gc_attr_ints(gc_op_attr(op, "start"), a, GC_MAX_RANK);
      for (int i = 0; i < it->rank; i++) st[i] = 1;
      if (gc_op_attr(op, "step")) gc_attr_ints(gc_op_attr(op, "step"), st, GC_MAX_RANK);
      for (int i = 0; i < it->rank; i++) {
        int64_t s0 = a[i] < 0 ? a[i] + it->dims[i] : a[i];
        s0 = s0 < 0 ? 0 : s0 > it->dims[i] ? it->dims[i] : s0;
        ic[i] = s0 + co[i] * st[i];
      }
      break;
    }
    case GC_OP_SPLIT: {
      int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), it->rank);
      for (int i = 0; i < it->rank; i++) ic[i] = co[i];
      for (int r = 0; r < v->def_index; r++) ic[axis] += op->results[r]->type.dims[axis];
      break;
    }
    default: {
      /* a cheap elementwise op in a host operand (fusion.c, GC_FROLE_CHEAP): follow its
       * operand of the same shape, the one read element by element */
      if (gc_op_infos[op->opcode].kind != GC_KIND_ELEMENTWISE) return -1;
      for (int i = 0; i < op->n_operands; i++)
        if (gc_type_same_dims(&op->operands[i]->type, t)) return view_index(c, op->operands[i], co);
      return -1;
    }
  }
  return view_index(c, x, ic);
}

/* Is the last coordinate (1), the one before it (0) or neither (-1) of operand v
 * contiguous in memory? */
static int mm_contig_last(const gc_lowerer *c, const gc_value *v) {
  const gc_type *t = &v->type;
  int64_t co[GC_MAX_RANK] = {0};
  int64_t base = view_index(c, v, co);
  if (base < 0) return -1;
  if (t->dims[t->rank - 1] > 1) {
    co[t->rank - 1] = 1;
    int64_t x = view_index(c, v, co);
    co[t->rank - 1] = 0;
    if (x - base == 1) return 1;
  }
  if (t->dims[t->rank - 2] > 1) {
    co[t->rank - 2] = 1;
    if (view_index(c, v, co) - base == 1) return 0;
  }
  return -1;
}

/* Does operand x walk its logical inner dim (A's k, B's n) along memory? From the index
 * map when it can be probed, else from the transpose flag. */
static int mm_walks_inner(const gc_lowerer *c, const gc_value *x, int trans) {
  int cl = mm_contig_last(c, x);
  return cl < 0 ? !trans : (cl == 1) == !trans;
}

/* Tile (batch, tile row, tile column) of a BLOCKS group over tm x tn tiles of bm x bn: the
 * output batch coordinates (bco) and the tile's first row and column (i64 vars). */
static void mm_tile_origin(gc_lowerer *c, kir_kernel *k, kir_block *b, const mm_shape *s, int64_t tm, int64_t tn,
                           int64_t bm, int64_t bn, int *bco, int *m0, int *n0) {
  int64_t dims3[3] = {s->batch, tm, tn};
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  gc_mm_batch_coords(c, k, b, s, co[0], bco);
  *m0 = gc_ec_let(c, k, b, "m0", ec_mul(c, ec_v(c, k, co[1]), ec_i64(c, bm)));
  *n0 = gc_ec_let(c, k, b, "n0", ec_mul(c, ec_v(c, k, co[2]), ec_i64(c, bn)));
}

/* One staged element: shared[sr * MM_PAD + sc] = (row < rows && col < cols) ? X(row, col) : 0,
 * where (row, col) are the logical matrix coordinates (A: m, k; B: k, n). */
static void mm_stage(gc_gen *G, kir_block *b, int sh, const gc_value *x, const mm_shape *s, const int *bco,
                     int sr, int sc, int grow, int gcol, int trans, int64_t rows, int64_t cols, gc_dtype at) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  kir_expr *cond = ec_bin(c, KIR_AND, in_range(c, k, grow, rows, 0), in_range(c, k, gcol, cols, 0));
  kir_block *tb, *eb;
  kir_emit_if(c->km, b, cond, &tb, &eb);
  gc_gen_push(G);
  int v = trans ? gc_mm_operand(G, tb, x, s, bco, gcol, grow) : gc_mm_operand(G, tb, x, s, bco, grow, gcol);
  kir_expr *si = ec_add(c, ec_mul(c, ec_v(c, k, sr), ec_i64(c, MM_PAD)), ec_v(c, k, sc));
  kir_emit_store(c->km, tb, KIR_SHARED, sh, si, ec_cast(c, at, ec_v(c, k, v)));
  gc_gen_pop(G);
  si = ec_add(c, ec_mul(c, ec_v(c, k, sr), ec_i64(c, MM_PAD)), ec_v(c, k, sc));
  kir_emit_store(c->km, eb, KIR_SHARED, sh, si, gc_ec_num(c, at, 0.0));
}

/* The tiled CUDA kernel. */
static kir_kernel *mm_tiled(gc_lowerer *c, const gc_fusion_group *grp, const mm_shape *s, gc_dtype at,
                            gc_gen *G) {
  const gc_op *op = grp->roots[0];
  const gc_value *A = op->operands[0], *B = op->operands[1];
  int64_t TM = (s->M + MM_T - 1) / MM_T, TN = (s->N + MM_T - 1) / MM_T;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, s->batch * TM * TN, MM_T * MM_ROWS);
  if (k) k->min_blocks = 1;  /* register-tiled: no occupancy target (kir.h) */
  gc_gen_init(G, c, k);
  /* which logical coordinate tx walks: A's k (a_kx) or m; B's n (b_nx) or k */
  int a_kx = mm_walks_inner(c, A, s->ta), b_nx = mm_walks_inner(c, B, s->tb);
  int sa = kir_add_shared(c->km, k, at, MM_T * MM_PAD);
  int sb = kir_add_shared(c->km, k, at, MM_T * MM_PAD);
  kir_block *b = &k->body;
  int bco[GC_MAX_RANK], m0, n0;
  mm_tile_origin(c, k, b, s, TM, TN, MM_T, MM_T, bco, &m0, &n0);
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  int tx = gc_ec_let(c, k, b, "tx", ec_bin(c, KIR_REM, ec_v(c, k, tid), ec_i64(c, MM_T)));
  int ty = gc_ec_let(c, k, b, "ty", ec_bin(c, KIR_DIV, ec_v(c, k, tid), ec_i64(c, MM_T)));
  int acc[MM_RPT];
  for (int j = 0; j < MM_RPT; j++) acc[j] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, at, 0.0));

  int k0 = gc_ec_var(c, k, "k0", GRAPHC_DTYPE_I64);
  kir_block *kb = kir_emit_for(c->km, b, k0, ec_i64(c, 0), ec_i64(c, s->K), ec_i64(c, MM_T));
  gc_gen_push(G);
  for (int j = 0; j < MM_RPT; j++) {
    int row = gc_ec_let(c, k, kb, "row", ec_add(c, ec_v(c, k, ty), ec_i64(c, MM_ROWS * j)));
    /* A tile: (mm, kk); tx walks A's contiguous dim */
    int am = a_kx ? row : tx, ak = a_kx ? tx : row;
    int gm = gc_ec_let(c, k, kb, "gm", ec_add(c, ec_v(c, k, m0), ec_v(c, k, am)));
    int gk = gc_ec_let(c, k, kb, "gk", ec_add(c, ec_v(c, k, k0), ec_v(c, k, ak)));
    mm_stage(G, kb, sa, A, s, bco, am, ak, gm, gk, s->ta, s->M, s->K, at);
    /* B tile: (bk, bn) */
    int bn = b_nx ? tx : row, bk = b_nx ? row : tx;
    gk = gc_ec_let(c, k, kb, "gk", ec_add(c, ec_v(c, k, k0), ec_v(c, k, bk)));
    int gn = gc_ec_let(c, k, kb, "gn", ec_add(c, ec_v(c, k, n0), ec_v(c, k, bn)));
    mm_stage(G, kb, sb, B, s, bco, bk, bn, gk, gn, s->tb, s->K, s->N, at);
  }
  gc_gen_pop(G);
  kir_emit_barrier(c->km, kb);
  int kk = gc_ec_var(c, k, "kk", GRAPHC_DTYPE_I64);
  kir_block *ib = kir_emit_for(c->km, kb, kk, ec_i64(c, 0), ec_i64(c, MM_T), ec_i64(c, 1));
  kir_expr *bi = ec_add(c, ec_mul(c, ec_v(c, k, kk), ec_i64(c, MM_PAD)), ec_v(c, k, tx));
  int bv = gc_ec_let(c, k, ib, "bv", kir_load(c->km, k, KIR_SHARED, sb, bi));
  for (int j = 0; j < MM_RPT; j++) {
    kir_expr *r = ec_add(c, ec_v(c, k, ty), ec_i64(c, MM_ROWS * j));
    kir_expr *ai = ec_add(c, ec_mul(c, r, ec_i64(c, MM_PAD)), ec_v(c, k, kk));
    kir_expr *prod = ec_bin(c, KIR_MUL, kir_load(c->km, k, KIR_SHARED, sa, ai), ec_v(c, k, bv));
    kir_emit_assign(c->km, ib, acc[j], ec_bin(c, KIR_ADD, ec_v(c, k, acc[j]), prod));
  }
  kir_emit_barrier(c->km, kb);

  int gn = gc_ec_let(c, k, b, "gn", ec_add(c, ec_v(c, k, n0), ec_v(c, k, tx)));
  for (int j = 0; j < MM_RPT; j++) {
    kir_expr *r = ec_add(c, ec_v(c, k, ty), ec_i64(c, MM_ROWS * j));
    int gm = gc_ec_let(c, k, b, "gm", ec_add(c, ec_v(c, k, m0), r));
    kir_expr *cond = ec_bin(c, KIR_AND, in_range(c, k, gm, s->M, 0), in_range(c, k, gn, s->N, 0));
    kir_block *tb;
    kir_emit_if(c->km, b, cond, &tb, NULL);
    gc_gen_push(G);
    int pt = gc_mm_out_point(G, op->results[0], s, bco, gm, gn, -1);
    gc_mm_epilogue(G, tb, grp, pt, ec_v(c, k, acc[j]));
    gc_gen_pop(G);
  }
  return k;
}

/* The register-blocked CUDA kernel for f32 (no tensor cores): BM x BM output tiles (128, or
 * 64 when the 128 grid would leave SMs idle) of 256 threads as 16 x 16, each thread a TM x TM
 * block (TM = BM / 16: 8 or 4) of accumulators; K advances 8 at a time through two shared
 * stages (A stored k-major, so a thread's TM rows are one or two 16-byte loads, and B's TM
 * columns likewise); the next K tile's global loads are issued into registers before the
 * current tile's FMAs and stored to the other stage after them (one barrier per K tile).
 * Operands come through the element generator (any view or prologue the group computes),
 * loaded along whichever of their dims is contiguous. */
enum { SG_BK = 8, SG_THREADS = 256 };

static int mm_simt_ok(const gc_lowerer *c, const mm_shape *s, gc_dtype at) {
  return c->t->kind == KIR_TARGET_CUDA && c->t->simt_blocked && at == GRAPHC_DTYPE_F32 && s->M >= 64 &&
         s->N >= 64 && s->K >= 16;
}

/* The operand tiles of mm_simt: operand o (0: A as (m, k), 1: B as (k, n)); this thread's
 * n elements of a tile, element i at (tile row or k: r[o][i], tile k or col: q[o][i]) in
 * register reg[o][i]; walk[o]: consecutive threads take consecutive inner elements (A's k,
 * B's n) when that dim is contiguous in memory. */
typedef struct sg_tiles {
  const gc_value *x[2];
  int trans[2], walk[2], sh[2];
  int bm, n;
  int64_t stage;
  gc_dtype at;
  int bco[GC_MAX_RANK], o[2];  /* output batch coordinates; tile origin (m0, n0) */
  int r[2][8], q[2][8], reg[2][8];
} sg_tiles;

/* Register reg[o][i] = operand o at K tile `kt` (i64 var), 0 outside the matrix. */
static void sg_load(gc_gen *G, kir_block *b, const sg_tiles *g, const mm_shape *s, int kt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  int kb = gc_ec_let(c, k, b, "kb", ec_mul(c, ec_v(c, k, kt), ec_i64(c, SG_BK)));
  for (int o = 0; o < 2; o++)
    for (int i = 0; i < g->n; i++) {
      /* A: (m0 + r, kb + q); B: (kb + r, n0 + q) */
      int row = gc_ec_let(c, k, b, "gr", ec_add(c, ec_v(c, k, o ? kb : g->o[0]), ec_v(c, k, g->r[o][i])));
      int col = gc_ec_let(c, k, b, "gc", ec_add(c, ec_v(c, k, o ? g->o[1] : kb), ec_v(c, k, g->q[o][i])));
      int64_t rows = o ? s->K : s->M, cols = o ? s->N : s->K;
      int reg = g->reg[o][i];
      kir_emit_assign(c->km, b, reg, gc_ec_num(c, g->at, 0.0));
      kir_block *tb;
      kir_emit_if(c->km, b, ec_bin(c, KIR_AND, in_range(c, k, row, rows, 0), in_range(c, k, col, cols, 0)), &tb, NULL);
      gc_gen_push(G);
      int v = g->trans[o] ? gc_mm_operand(G, tb, g->x[o], s, g->bco, col, row)
                          : gc_mm_operand(G, tb, g->x[o], s, g->bco, row, col);
      kir_emit_assign(c->km, tb, reg, ec_cast(c, g->at, ec_v(c, k, v)));
      gc_gen_pop(G);
    }
}

/* The registers into stage `st` (i64 var), k-major: A at k * bm + m, B at k * bm + n. */
static void sg_store(gc_lowerer *c, kir_kernel *k, kir_block *b, const sg_tiles *g, int st) {
  for (int o = 0; o < 2; o++)
    for (int i = 0; i < g->n; i++) {
      int kk = o ? g->r[o][i] : g->q[o][i], mn = o ? g->q[o][i] : g->r[o][i];
      kir_expr *idx = ec_add(c, ec_mul(c, ec_v(c, k, st), ec_i64(c, g->stage)),
                             ec_add(c, ec_mul(c, ec_v(c, k, kk), ec_i64(c, g->bm)), ec_v(c, k, mn)));
      kir_emit_store(c->km, b, KIR_SHARED, g->sh[o], idx, ec_v(c, k, g->reg[o][i]));
    }
}

static kir_kernel *mm_simt(gc_lowerer *c, const gc_fusion_group *grp, const mm_shape *s, gc_dtype at, gc_gen *G) {
  const gc_op *op = grp->roots[0];
  const gc_value *A = op->operands[0], *B = op->operands[1];
  int BM = 128;
  if (s->batch * ((s->M + 127) / 128) * ((s->N + 127) / 128) < (c->t->num_sms > 0 ? c->t->num_sms : 1)) BM = 64;
  const int TM = BM / 16;
  int64_t TMn = (s->M + BM - 1) / BM, TNn = (s->N + BM - 1) / BM, nk = (s->K + SG_BK - 1) / SG_BK;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, s->batch * TMn * TNn, SG_THREADS);
  if (k) k->min_blocks = 1;  /* register-tiled: no occupancy target (kir.h) */
  gc_gen_init(G, c, k);
  sg_tiles g = {.x = {A, B}, .trans = {s->ta, s->tb}, .bm = BM, .n = BM * SG_BK / SG_THREADS, .at = at};
  g.walk[0] = mm_walks_inner(c, A, s->ta);  /* A's k is its contiguous dim */
  g.walk[1] = mm_walks_inner(c, B, s->tb);  /* B's n is */
  const int64_t stage = (int64_t)SG_BK * BM;
  g.stage = stage;
  g.sh[0] = kir_add_shared(c->km, k, at, 2 * stage);
  g.sh[1] = kir_add_shared(c->km, k, at, 2 * stage);
  kir_block *b = &k->body;
  mm_tile_origin(c, k, b, s, TMn, TNn, BM, BM, g.bco, &g.o[0], &g.o[1]);
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  int tx = gc_ec_let(c, k, b, "tx", ec_bin(c, KIR_REM, ec_v(c, k, tid), ec_i64(c, 16)));
  int ty = gc_ec_let(c, k, b, "ty", ec_bin(c, KIR_DIV, ec_v(c, k, tid), ec_i64(c, 16)));
  /* this thread's elements e = tid + 256 i of a tile: the outer coordinate (A's m, B's k)
   * and the inner one (A's k, B's n), the inner fastest when it is contiguous in memory */
  for (int o = 0; o < 2; o++) {
    int64_t inner = o ? BM : SG_BK, outer = o ? SG_BK : BM;
    for (int i = 0; i < g.n; i++) {
      int e = gc_ec_let(c, k, b, "e", ec_add(c, ec_v(c, k, tid), ec_i64(c, (int64_t)SG_THREADS * i)));
      g.q[o][i] = gc_ec_let(c, k, b, "tq", g.walk[o] ? ec_bin(c, KIR_REM, ec_v(c, k, e), ec_i64(c, inner))
                                                     : ec_bin(c, KIR_DIV, ec_v(c, k, e), ec_i64(c, outer)));
      g.r[o][i] = gc_ec_let(c, k, b, "tr", g.walk[o] ? ec_bin(c, KIR_DIV, ec_v(c, k, e), ec_i64(c, inner))
                                                     : ec_bin(c, KIR_REM, ec_v(c, k, e), ec_i64(c, outer)));
      g.reg[o][i] = gc_ec_var(c, k, o ? "rb" : "ra", at);
    }
  }
  int acc[8][8];
  for (int i = 0; i < TM; i++)
    for (int j = 0; j < TM; j++) acc[i][j] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, at, 0.0));

  int z = gc_ec_let(c, k, b, "z", ec_i64(c, 0));
  gc_gen_push(G);
  sg_load(G, b, &g, s, z);
  sg_store(c, k, b, &g, z);
  gc_gen_pop(G);
  kir_emit_barrier(c->km, b);

  int kt = gc_ec_var(c, k, "kt", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, kt, ec_i64(c, 0), ec_i64(c, nk), ec_i64(c, 1));
  gc_gen_push(G);
  int nt = gc_ec_let(c, k, lb, "nt", ec_add(c, ec_v(c, k, kt), ec_i64(c, 1)));
  sg_load(G, lb, &g, s, nt);  /* past K: zeros, stored to the free stage and never read */
  int cs = gc_ec_let(c, k, lb, "cs", ec_bin(c, KIR_REM, ec_v(c, k, kt), ec_i64(c, 2)));
  int abase = gc_ec_let(c, k, lb, "ab", ec_add(c, ec_mul(c, ec_v(c, k, cs), ec_i64(c, stage)),
                                               ec_mul(c, ec_v(c, k, ty), ec_i64(c, TM))));
  int bbase = gc_ec_let(c, k, lb, "bb", ec_add(c, ec_mul(c, ec_v(c, k, cs), ec_i64(c, stage)),
                                               ec_mul(c, ec_v(c, k, tx), ec_i64(c, TM))));
  /* The 8 K steps of a tile are unrolled only for matmuls of at least simt_unroll_macs
   * multiply-adds (2^25 by default). Smaller ones run in a few microseconds, bound by latency,
   * and step through the tile 2 at a time in a loop: the same speed (resmlp21's 64x256x512
   * 0.0166 against 0.0168 ms on the H200), a 4x smaller K loop, and resmlp21's cold compile
   * 118 -> 94 ms (median, H200 host). Larger ones lose 10-20% in that loop (4096^3 + bias +
   * GELU 3.91 -> 4.75 ms), so they keep the unrolled tile (docs/performance.md). */
  const int KU = (double)s->batch * s->M * s->N * s->K < (double)c->t->simt_unroll_macs ? 2 : SG_BK;
  kir_block *kb = lb;
  int kq = -1;
  if (KU < SG_BK) {
    kq = gc_ec_var(c, k, "kq", GRAPHC_DTYPE_I64);
    kb = kir_emit_for_nounroll(c->km, lb, kq, ec_i64(c, 0), ec_i64(c, SG_BK / KU), ec_i64(c, 1));
  }
  for (int kk = 0; kk < KU; kk++) {
    int av[8], bv[8];
    for (int i = 0; i < TM; i++) {
      av[i] = gc_ec_var(c, k, "a", at);
      bv[i] = gc_ec_var(c, k, "b", at);
    }
    for (int h = 0; h < TM; h += 4)
      for (int o = 0; o < 2; o++) {  /* the k-th row of each stage: kq * KU + kk */
        kir_expr *off = ec_i64(c, (int64_t)kk * BM + h);
        if (kq >= 0) off = ec_add(c, ec_mul(c, ec_v(c, k, kq), ec_i64(c, (int64_t)KU * BM)), off);
        kir_emit_load_vec(c->km, kb, KIR_SHARED, g.sh[o], ec_add(c, ec_v(c, k, o ? bbase : abase), off), 4,
                          o ? bv + h : av + h);
      }
    for (int i = 0; i < TM; i++)
      for (int j = 0; j < TM; j++)
        kir_emit_assign(c->km, kb, acc[i][j],
                        ec_bin(c, KIR_ADD, ec_v(c, k, acc[i][j]), ec_bin(c, KIR_MUL, ec_v(c, k, av[i]), ec_v(c, k, bv[j]))));
  }
  int ns = gc_ec_let(c, k, lb, "ns", ec_bin(c, KIR_REM, ec_v(c, k, nt), ec_i64(c, 2)));
  sg_store(c, k, lb, &g, ns);
  gc_gen_pop(G);
  kir_emit_barrier(c->km, lb);

  /* A thread's TM outputs of a row are contiguous: with N % 4 == 0, four of them (the first
   * at a multiple of 4) are in or out of range together and go out in one 16-byte store
   * (one 4-byte store per thread per instruction wrote an eighth of each 32-byte sector:
   * the f32 transformer's score matmul ran at 440-800 GB/s). */
  const int W = s->N % 4 == 0 ? 4 : 1;
  /* With fused epilogue ops (bias, GELU, ...), the rows go through one loop that is not
   * unrolled: each pass stores row 0 of the accumulators, then moves rows 1.. up by one
   * (register moves; registers cannot be indexed). The body then holds TM epilogues, not
   * TM * TM: for resmlp21's f32 matmul + bias + GELU, PTX 30 -> 17 KB, and its cold compile
   * on the H200 host ~24 ms faster, no slower to run (docs/performance.md). */
  int epi_ops = 0;
  for (int i = 0; i < grp->n_ops; i++) epi_ops += (grp->roles[i] & GC_FROLE_EPILOGUE) != 0;
  const int rows_loop = epi_ops > 0 && TM > 1;
  kir_block *eb = b;
  int row = -1;
  if (rows_loop) {
    row = gc_ec_var(c, k, "row", GRAPHC_DTYPE_I64);
    eb = kir_emit_for_nounroll(c->km, b, row, ec_i64(c, 0), ec_i64(c, TM), ec_i64(c, 1));
  }
  for (int i = 0; i < (rows_loop ? 1 : TM); i++) {
    kir_expr *ri = rows_loop ? ec_v(c, k, row) : ec_i64(c, i);
    int gm = gc_ec_let(c, k, eb, "gm", ec_add(c, ec_v(c, k, g.o[0]), ec_add(c, ec_mul(c, ec_v(c, k, ty), ec_i64(c, TM)), ri)));
    kir_block *rbk;
    kir_emit_if(c->km, eb, in_range(c, k, gm, s->M, 0), &rbk, NULL);
    for (int j0 = 0; j0 < TM; j0 += W) {
      int gn[4] = {0}, pts[4];
      for (int j = j0; j < j0 + W; j++)
        gn[j - j0] = gc_ec_let(c, k, rbk, "gn", ec_add(c, ec_v(c, k, g.o[1]), ec_add(c, ec_mul(c, ec_v(c, k, tx), ec_i64(c, TM)), ec_i64(c, j))));
      kir_block *tb;
      kir_emit_if(c->km, rbk, in_range(c, k, gn[0], s->N, 0), &tb, NULL);
      gc_gen_push(G);
      for (int j = j0; j < j0 + W; j++) {
        pts[j - j0] = gc_mm_out_point(G, op->results[0], s, g.bco, gm, gn[j - j0], -1);
        const gc_value *rv = op->results[0];
        int v = gc_ec_let(c, k, tb, rv->name, gc_ec_round(c, rv->type.dtype, ec_v(c, k, acc[i][j])));
        gc_gen_bind(G, rv, pts[j - j0], v);
      }
      gc_gen_store_outs_vec(G, tb, grp, pts, W);
      gc_gen_pop(G);
    }
  }
  for (int i = 0; rows_loop && i + 1 < TM; i++)
    for (int j = 0; j < TM; j++) kir_emit_assign(c->km, eb, acc[i][j], ec_v(c, k, acc[i + 1][j]));
  return k;
}

/* Host micro-tile: MM_MR x mm_nr(target) outputs per item, accumulators in registers:
 * 8 x 16 f32 = 16 ymm (AVX2: all but the operands' registers), 8 x 32 = 16 zmm on
 * AVX-512 CPUs (which have 32, and LLVM uses 512-bit vectors there: llvm_emit.h). */
enum { MM_MR = 8, MM_NR = 32 };

/* Register tile width in f32 columns: two vector registers. */
static int mm_nr(const gc_lowerer *c) { return c->t->simd_bytes >= 64 ? 32 : 16; }

/* Coordinate var of row/col `base + off` (GC_PT_ZERO for a unit dim). */
static int mm_coord(gc_lowerer *c, kir_kernel *k, kir_block *b, int64_t dim, int base, int64_t off,
                    const char *name) {
  if (dim == 1) return GC_PT_ZERO;
  return gc_ec_let(c, k, b, name, ec_add(c, ec_v(c, k, base), ec_i64(c, off)));
}

/* min(cap, total - start): the extent of a block starting at var `start`. */
static kir_expr *pk_extent(gc_lowerer *c, kir_kernel *k, int64_t cap, int64_t total, int start) {
  return ec_bin(c, KIR_MIN, ec_i64(c, cap), ec_bin(c, KIR_SUB, ec_i64(c, total), ec_v(c, k, start)));
}

/* A whole mr x nr tile at (m0, n0): one pass over K, acc[i][j] += A[m0+i, k] * B[k, n0+j]
 * as straight-line code (mr loads of A, nr contiguous loads of B per k when B's n is
 * contiguous), which LLVM's SLP vectorizer turns into vector FMAs; then the epilogues. */
static void mm_host_tile(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const mm_shape *s,
                         gc_dtype at, const int *bco, int m0, int n0, int mr, int nr, int cs, int bs) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_op *op = grp->roots[0];
  int mi[MM_MR], nj[MM_NR], acc[MM_MR * MM_NR], av[MM_MR], bv[MM_NR];
  for (int i = 0; i < mr; i++) mi[i] = mm_coord(c, k, b, s->M, m0, i, "m");
  for (int j = 0; j < nr; j++) nj[j] = mm_coord(c, k, b, s->N, n0, j, "n");
  for (int i = 0; i < mr * nr; i++) acc[i] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, at, 0.0));
  int kk = gc_ec_var(c, k, "kk", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, kk, ec_i64(c, 0), ec_i64(c, s->K), ec_i64(c, 1));
  int kz = s->K == 1 ? GC_PT_ZERO : kk;
  gc_gen_push(G);
  for (int i = 0; i < mr; i++) {
    int x = s->ta ? gc_mm_operand(G, lb, op->operands[0], s, bco, kz, mi[i])
                  : gc_mm_operand(G, lb, op->operands[0], s, bco, mi[i], kz);
    av[i] = gc_ec_let(c, k, lb, "a", ec_cast(c, at, ec_v(c, k, x)));
  }
  for (int j = 0; j < nr; j++) {
    if (bs >= 0) {  /* the item's packed panel of B (mm_items_bpack): row kk, nr wide */
      kir_expr *bi = ec_add(c, ec_mul(c, ec_v(c, k, kk), ec_i64(c, nr)), ec_i64(c, j));
      bv[j] = gc_ec_let(c, k, lb, "b", kir_load(c->km, k, KIR_SCRATCH, bs, bi));
      continue;
    }
    int y = s->tb ? gc_mm_operand(G, lb, op->operands[1], s, bco, nj[j], kz)
                  : gc_mm_operand(G, lb, op->operands[1], s, bco, kz, nj[j]);
    bv[j] = gc_ec_let(c, k, lb, "b", ec_cast(c, at, ec_v(c, k, y)));
  }
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++) {
      kir_expr *prod = ec_bin(c, KIR_MUL, ec_v(c, k, av[i]), ec_v(c, k, bv[j]));
      kir_emit_assign(c->km, lb, acc[i * nr + j], ec_bin(c, KIR_ADD, ec_v(c, k, acc[i * nr + j]), prod));
    }
  gc_gen_pop(G);
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++) {
      if (cs >= 0) {  /* row stride MM_NR: every tile shape shares the caller's epilogue loop */
        kir_emit_store(c->km, b, KIR_SCRATCH, cs, ec_i64(c, i * MM_NR + j), ec_v(c, k, acc[i * nr + j]));
        continue;
      }
      gc_gen_push(G);
      int pt = gc_mm_out_point(G, op->results[0], s, bco, mi[i], nj[j], -1);
      gc_mm_epilogue(G, b, grp, pt, ec_v(c, k, acc[i * nr + j]));
      gc_gen_pop(G);
    }
}

/* The epilogue of the tile at (m0, n0) whose accumulators mm_host_tile left in scratch cs:
 * one loop nest over its mv x nv valid outputs (vars, or constants when every tile is
 * whole; row stride ld in scratch; the packed kernel's block too), which LLVM vectorizes along n. Written once per kernel instead of once per
 * output of each tile shape, it cut the IR of a 1x1 convolution with a silu epilogue
 * eightfold and its optimization time with it. */
static void mm_host_epilogue(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const mm_shape *s,
                             const int *bco, int m0, int n0, kir_expr *mv, kir_expr *nv, int cs, int64_t ld) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_op *op = grp->roots[0];
  int i = gc_ec_var(c, k, "i", GRAPHC_DTYPE_I64), j = gc_ec_var(c, k, "j", GRAPHC_DTYPE_I64);
  kir_block *ib = kir_emit_for_nounroll(c->km, b, i, ec_i64(c, 0), mv, ec_i64(c, 1));
  kir_block *jb = kir_emit_for(c->km, ib, j, ec_i64(c, 0), nv, ec_i64(c, 1));
  int m = s->M == 1 ? GC_PT_ZERO : gc_ec_let(c, k, jb, "m", ec_add(c, ec_v(c, k, m0), ec_v(c, k, i)));
  int n = s->N == 1 ? GC_PT_ZERO : gc_ec_let(c, k, jb, "n", ec_add(c, ec_v(c, k, n0), ec_v(c, k, j)));
  kir_expr *ci = ec_add(c, ec_mul(c, ec_v(c, k, i), ec_i64(c, ld)), ec_v(c, k, j));
  gc_gen_push(G);
  int pt = gc_mm_out_point(G, op->results[0], s, bco, m, n, -1);
  gc_mm_epilogue(G, jb, grp, pt, kir_load(c->km, k, KIR_SCRATCH, cs, ci));
  gc_gen_pop(G);
}

/* B is worth packing per item: computed by the group rather than read through an index
 * map (an im2col: each element a window test and index arithmetic), which the tiles
 * of mm_items would compute again for each block of rows; its panel of K x nr f32 fits
 * 128 KiB of scratch. */
enum { BP_MAX_ELEMS = 32768 };
static int mm_bpack_ok(const gc_lowerer *c, const mm_shape *s, const gc_value *B, gc_dtype at) {
  return c->t->kind == KIR_TARGET_HOST && at == GRAPHC_DTYPE_F32 && s->N >= mm_nr(c) && s->M > 1 &&
         s->K * mm_nr(c) <= BP_MAX_ELEMS && mm_contig_last(c, B) < 0;
}

/* mm_items with B packed: ITEMS over (batch, column block); each item writes its K x nr
 * panel of B to scratch once (zeros past N), then walks the row blocks over it: the
 * panel's rows are contiguous vector loads in the tiles, and the edge columns compute on
 * the zeros (the epilogue stores only the valid ones). A first convolution of a CNN (3
 * input channels through im2col, M 16, N 12544 per image) computed each B element twice
 * in mm_items, with its window test and index arithmetic inside the FMA loop. */
static kir_kernel *mm_items_bpack(gc_lowerer *c, const gc_fusion_group *grp, const mm_shape *s, gc_dtype at,
                                  gc_gen *G) {
  const gc_value *B = grp->roots[0]->operands[1];
  int mr = s->M < MM_MR ? (int)s->M : MM_MR, nr = mm_nr(c);
  int64_t TN = (s->N + nr - 1) / nr, TM = s->M / mr, rm = s->M % mr;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, s->batch * TN, 64);
  gc_gen_init(G, c, k);
  kir_block *b = &k->body;
  int64_t dims2[2] = {s->batch, TN};
  int co[2], bco[GC_MAX_RANK];
  gc_ec_unravel(c, k, b, k->item_var, 2, dims2, co);
  gc_mm_batch_coords(c, k, b, s, co[0], bco);
  int n0 = gc_ec_let(c, k, b, "n0", ec_mul(c, ec_v(c, k, co[1]), ec_i64(c, nr)));
  int bs = kir_add_scratch(c->km, k, at, s->K * nr);
  int cs = kir_add_scratch(c->km, k, at, MM_MR * MM_NR);
  /* the panel, column by column: what depends on n alone (an im2col's output pixel and
   * its window origin) is computed once per column, the k loop inside walks the taps */
  int kk = gc_ec_var(c, k, "bk", GRAPHC_DTYPE_I64), j = gc_ec_var(c, k, "bj", GRAPHC_DTYPE_I64);
  kir_block *kb = kir_emit_for_nounroll(c->km, b, j, ec_i64(c, 0), ec_i64(c, nr), ec_i64(c, 1));
  int n = gc_ec_let(c, k, kb, "bn", ec_add(c, ec_v(c, k, n0), ec_v(c, k, j)));
  kir_block *jb = kir_emit_for(c->km, kb, kk, ec_i64(c, 0), ec_i64(c, s->K), ec_i64(c, 1));
  kir_expr *bi = ec_add(c, ec_mul(c, ec_v(c, k, kk), ec_i64(c, nr)), ec_v(c, k, j));
  int iv = gc_ec_let(c, k, jb, "bi", bi);
  kir_block *tb = jb, *eb = NULL;
  if (s->N % nr) kir_emit_if(c->km, jb, in_range(c, k, n, s->N, 0), &tb, &eb);
  gc_gen_push(G);
  int kz = s->K == 1 ? GC_PT_ZERO : kk;
  int v = s->tb ? gc_mm_operand(G, tb, B, s, bco, n, kz) : gc_mm_operand(G, tb, B, s, bco, kz, n);
  kir_emit_store(c->km, tb, KIR_SCRATCH, bs, ec_v(c, k, iv), ec_cast(c, at, ec_v(c, k, v)));
  gc_gen_pop(G);
  if (eb) kir_emit_store(c->km, eb, KIR_SCRATCH, bs, ec_v(c, k, iv), gc_ec_num(c, at, 0.0));
  kir_expr *nv = s->N % nr ? pk_extent(c, k, nr, s->N, n0) : ec_i64(c, nr);
  /* the row blocks over the panel; then a last block of rm rows */
  if (TM > 0) {
    int mt = gc_ec_var(c, k, "mt", GRAPHC_DTYPE_I64);
    kir_block *mb = kir_emit_for_nounroll(c->km, b, mt, ec_i64(c, 0), ec_i64(c, TM), ec_i64(c, 1));
    int m0 = gc_ec_let(c, k, mb, "m0", ec_mul(c, ec_v(c, k, mt), ec_i64(c, mr)));
    mm_host_tile(G, mb, grp, s, at, bco, m0, n0, mr, nr, cs, bs);
    mm_host_epilogue(G, mb, grp, s, bco, m0, n0, ec_i64(c, mr), nv, cs, MM_NR);
  }
  if (rm) {
    int m0 = gc_ec_let(c, k, b, "m0", ec_i64(c, TM * mr));
    mm_host_tile(G, b, grp, s, at, bco, m0, n0, (int)rm, nr, cs, bs);
    mm_host_epilogue(G, b, grp, s, bco, m0, n0, ec_i64(c, rm), nv, cs, MM_NR);
  }
  return k;
}

/* Batched matmuls whose A is one matrix for every batch (a 1x1 convolution through conv-gemm:
 * W [O, C] times each image's [C, H W]) with ragged columns per batch (7 x 7 = 49: a whole
 * tile and one of 17, half of it scalar): the columns of all batches in one row, (b, n) at
 * b N + n, in panels of nr that an item packs (as mm_items_bpack, up to BC_MAX_ELEMS: 256 KiB
 * of scratch, K 2048) and walks a block of BC_MC rows over; the panel is packed and the
 * epilogue stored by runs of consecutive columns of one batch (at most BC_RUNS). Batch 8,
 * 192 -> 1152 channels over 7 x 7 + silu: 0.91 -> 0.82 ms; 1152 -> 320: 1.29 -> 1.16. */
enum { BC_MC = 384, BC_MIN_N = 16, BC_MAX_N = 256, BC_RUNS = 3, BC_MAX_ELEMS = 65536 };
static int mm_bcols_ok(const gc_lowerer *c, const mm_shape *s, const gc_value *A, gc_dtype at) {
  if (c->t->kind != KIR_TARGET_HOST || at != GRAPHC_DTYPE_F32 || s->batch < 2 || s->M < MM_MR) return 0;
  int nr = mm_nr(c);
  if (s->N < BC_MIN_N || s->N >= BC_MAX_N || s->N % nr == 0 || s->K * nr > BC_MAX_ELEMS) return 0;
  int64_t abatch = 1;
  for (int i = 0; i + 2 < A->type.rank; i++) abatch *= A->type.dims[i];
  return abatch == 1 && (nr - 1) / s->N + 2 <= BC_RUNS;
}

/* The runs of panel c0 (nv valid columns): run r covers the panel's columns [js, js + len)
 * of batch bb from column nst of its matrix (lets in b; len 0 past the valid columns), for
 * r < (nr - 1) / N + 2. */
typedef struct bc_run {
  int js, bb, nst, len;
} bc_run;
static void mm_bcols_runs(gc_lowerer *c, kir_kernel *k, kir_block *b, const mm_shape *s, int c0, int nv, bc_run *run,
                          int nruns) {
  kir_expr *js = ec_i64(c, 0);
  for (int r = 0; r < nruns; r++) {
    run[r].js = gc_ec_let(c, k, b, "js", js);
    int col = gc_ec_let(c, k, b, "col", ec_add(c, ec_v(c, k, c0), ec_v(c, k, run[r].js)));
    run[r].bb = gc_ec_let(c, k, b, "bb", ec_bin(c, KIR_DIV, ec_v(c, k, col), ec_i64(c, s->N)));
    run[r].nst = gc_ec_let(c, k, b, "nst", ec_bin(c, KIR_REM, ec_v(c, k, col), ec_i64(c, s->N)));
    kir_expr *len = ec_bin(c, KIR_MIN, ec_bin(c, KIR_SUB, ec_v(c, k, nv), ec_v(c, k, run[r].js)),
                           ec_bin(c, KIR_SUB, ec_i64(c, s->N), ec_v(c, k, run[r].nst)));
    run[r].len = gc_ec_let(c, k, b, "len", ec_bin(c, KIR_MAX, len, ec_i64(c, 0)));
    js = ec_add(c, ec_v(c, k, run[r].js), ec_v(c, k, run[r].len));
  }
}

/* The loops over run r when it is not empty: var ov over [0, hi) (no unrolling), inside it
 * var j along the run (a masked vector tail); the run's batch coordinates into bco. Returns
 * the inner loop's body. */
static kir_block *mm_bcols_run_loops(gc_lowerer *c, kir_kernel *k, kir_block *b, const mm_shape *s, const bc_run *run,
                                     int ov, int64_t hi, int j, int *bco) {
  kir_block *rb;
  kir_emit_if(c->km, b, ec_bin(c, KIR_GT, ec_v(c, k, run->len), ec_i64(c, 0)), &rb, NULL);
  gc_mm_batch_coords(c, k, rb, s, run->bb, bco);
  kir_block *ob = kir_emit_for_nounroll(c->km, rb, ov, ec_i64(c, 0), ec_i64(c, hi), ec_i64(c, 1));
  return kir_emit_for_masked_tail(c->km, ob, j, ec_i64(c, 0), ec_v(c, k, run->len), ec_i64(c, 1));
}

/* The epilogue of the mv rows at m0 from scratch cs: per run, a loop nest along it. */
static void mm_bcols_epilogue(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const mm_shape *s, int m0,
                              int64_t mv, const bc_run *run, int nruns, int cs) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_op *op = grp->roots[0];
  int i = gc_ec_var(c, k, "i", GRAPHC_DTYPE_I64), j = gc_ec_var(c, k, "j", GRAPHC_DTYPE_I64);
  for (int r = 0; r < nruns; r++) {
    int bco[GC_MAX_RANK];
    kir_block *jb = mm_bcols_run_loops(c, k, b, s, &run[r], i, mv, j, bco);
    int m = gc_ec_let(c, k, jb, "m", ec_add(c, ec_v(c, k, m0), ec_v(c, k, i)));
    int n = gc_ec_let(c, k, jb, "n", ec_add(c, ec_v(c, k, run[r].nst), ec_v(c, k, j)));
    kir_expr *ci = ec_add(c, ec_add(c, ec_mul(c, ec_v(c, k, i), ec_i64(c, MM_NR)), ec_v(c, k, run[r].js)), ec_v(c, k, j));
    gc_gen_push(G);
    int pt = gc_mm_out_point(G, op->results[0], s, bco, m, n, -1);
    gc_mm_epilogue(G, jb, grp, pt, kir_load(c->km, k, KIR_SCRATCH, cs, ci));
    gc_gen_pop(G);
  }
}

static kir_kernel *mm_items_bcols(gc_lowerer *c, const gc_fusion_group *grp, const mm_shape *s, gc_dtype at,
                                  gc_gen *G) {
  const gc_value *B = grp->roots[0]->operands[1];
  int mr = MM_MR, nr = mm_nr(c);
  int64_t NT = s->batch * s->N, TN = (NT + nr - 1) / nr, MB = (s->M + BC_MC - 1) / BC_MC;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, TN * MB, 16);
  gc_gen_init(G, c, k);
  kir_block *b = &k->body;
  int64_t dims2[2] = {TN, MB};
  int co[2], bco0[GC_MAX_RANK];
  gc_ec_unravel(c, k, b, k->item_var, 2, dims2, co);
  int c0 = gc_ec_let(c, k, b, "c0", ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, nr)));
  int mlo = gc_ec_let(c, k, b, "mlo", ec_mul(c, ec_v(c, k, co[1]), ec_i64(c, BC_MC)));
  int nv = gc_ec_let(c, k, b, "nv", pk_extent(c, k, nr, NT, c0));
  int bs = kir_add_scratch(c->km, k, at, s->K * nr);
  int cs = kir_add_scratch(c->km, k, at, MM_MR * MM_NR);
  /* the panel by runs of one batch's columns, row by row (contiguous along n: column by
   * column, with k inner, the loads were gathers), zeros past the valid columns (the last
   * panel) */
  int nruns = (nr - 1) / (int)s->N + 2;
  bc_run run[BC_RUNS];
  mm_bcols_runs(c, k, b, s, c0, nv, run, nruns);
  int kk = gc_ec_var(c, k, "bk", GRAPHC_DTYPE_I64), j = gc_ec_var(c, k, "bj", GRAPHC_DTYPE_I64);
  for (int r = 0; r < nruns; r++) {
    int bco[GC_MAX_RANK];
    kir_block *jb = mm_bcols_run_loops(c, k, b, s, &run[r], kk, s->K, j, bco);
    int n = gc_ec_let(c, k, jb, "bn", ec_add(c, ec_v(c, k, run[r].nst), ec_v(c, k, j)));
    gc_gen_push(G);
    int kz = s->K == 1 ? GC_PT_ZERO : kk;
    int v = s->tb ? gc_mm_operand(G, jb, B, s, bco, n, kz) : gc_mm_operand(G, jb, B, s, bco, kz, n);
    kir_expr *bi = ec_add(c, ec_mul(c, ec_v(c, k, kk), ec_i64(c, nr)), ec_add(c, ec_v(c, k, run[r].js), ec_v(c, k, j)));
    kir_emit_store(c->km, jb, KIR_SCRATCH, bs, bi, ec_cast(c, at, ec_v(c, k, v)));
    gc_gen_pop(G);
  }
  kir_block *zb;
  kir_emit_if(c->km, b, ec_bin(c, KIR_LT, ec_v(c, k, nv), ec_i64(c, nr)), &zb, NULL);
  kir_block *zk = kir_emit_for_nounroll(c->km, zb, kk, ec_i64(c, 0), ec_i64(c, s->K), ec_i64(c, 1));
  kir_block *zj = kir_emit_for(c->km, zk, j, ec_v(c, k, nv), ec_i64(c, nr), ec_i64(c, 1));
  kir_emit_store(c->km, zj, KIR_SCRATCH, bs, ec_add(c, ec_mul(c, ec_v(c, k, kk), ec_i64(c, nr)), ec_v(c, k, j)),
                 gc_ec_num(c, at, 0.0));
  /* A has no batch dims: any batch coordinates do */
  int zero = gc_ec_let(c, k, b, "zero", ec_i64(c, 0));
  gc_mm_batch_coords(c, k, b, s, zero, bco0);
  /* the block's whole row tiles over the panel; the last block's rows past a multiple of mr */
  int mt = gc_ec_var(c, k, "mt", GRAPHC_DTYPE_I64);
  kir_expr *tiles = ec_bin(c, KIR_DIV, pk_extent(c, k, BC_MC, s->M / mr * mr, mlo), ec_i64(c, mr));
  kir_block *mb = kir_emit_for_nounroll(c->km, b, mt, ec_i64(c, 0), tiles, ec_i64(c, 1));
  int m0 = gc_ec_let(c, k, mb, "m0", ec_add(c, ec_v(c, k, mlo), ec_mul(c, ec_v(c, k, mt), ec_i64(c, mr))));
  mm_host_tile(G, mb, grp, s, at, bco0, m0, c0, mr, nr, cs, bs);
  mm_bcols_epilogue(G, mb, grp, s, m0, mr, run, nruns, cs);
  int rm = (int)(s->M % mr);
  if (rm) {
    kir_block *lb;
    kir_emit_if(c->km, b, ec_bin(c, KIR_EQ, ec_v(c, k, co[1]), ec_i64(c, MB - 1)), &lb, NULL);
    int m1 = gc_ec_let(c, k, lb, "m0", ec_i64(c, s->M / mr * mr));
    mm_host_tile(G, lb, grp, s, at, bco0, m1, c0, rm, nr, cs, bs);
    mm_bcols_epilogue(G, lb, grp, s, m1, rm, run, nruns, cs);
  }
  return k;
}

/* The host kernel: ITEMS over (batch, column block, row block) with the row block
 * fastest, so that the items of one thread's contiguous chunk reuse one column panel
 * of B from cache; each item a register-blocked tile (mm_host_tile), smaller ones
 * at the edges. Tiles shrink to M or N when smaller. */
static kir_kernel *mm_items(gc_lowerer *c, const gc_fusion_group *grp, const mm_shape *s, gc_dtype at,
                            gc_gen *G) {
  int mr = s->M < MM_MR ? (int)s->M : MM_MR, nr = s->N < mm_nr(c) ? (int)s->N : mm_nr(c);
  if (mr < 1) mr = 1;
  if (nr < 1) nr = 1;
  int64_t TM = (s->M + mr - 1) / mr, TN = (s->N + nr - 1) / nr;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, s->batch * TN * TM, 256);
  gc_gen_init(G, c, k);
  kir_block *b = &k->body;
  int64_t dims3[3] = {s->batch, TN, TM};
  int co[3], bco[GC_MAX_RANK];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  gc_mm_batch_coords(c, k, b, s, co[0], bco);
  int m0 = gc_ec_let(c, k, b, "m0", ec_mul(c, ec_v(c, k, co[2]), ec_i64(c, mr)));
  int n0 = gc_ec_let(c, k, b, "n0", ec_mul(c, ec_v(c, k, co[1]), ec_i64(c, nr)));
  /* the epilogue as a loop over scratch (mm_host_epilogue) unless the tile is a few outputs */
  int cs = mr * nr > 16 ? kir_add_scratch(c->km, k, at, MM_MR * MM_NR) : -1;
  if (s->M % mr == 0 && s->N % nr == 0) {
    mm_host_tile(G, b, grp, s, at, bco, m0, n0, mr, nr, cs, -1);
    if (cs >= 0) mm_host_epilogue(G, b, grp, s, bco, m0, n0, ec_i64(c, mr), ec_i64(c, nr), cs, MM_NR);
    return k;
  }
  /* The partial tiles at the right and bottom edges are register tiles too, of the
   * remainders' static sizes (rm x nr, mr x rn, rm x rn): a scalar dot product per output
   * there (mm_host_edge) cost more than all the whole tiles of a matmul with N = 49 (a
   * 1x1 convolution over 7 x 7 pixels: 17 of 49 columns). */
  int rm = (int)(s->M % mr), rn = (int)(s->N % nr);
  kir_expr *mfull = ec_bin(c, KIR_LE, ec_add(c, ec_v(c, k, m0), ec_i64(c, mr)), ec_i64(c, s->M));
  kir_expr *nfull = ec_bin(c, KIR_LE, ec_add(c, ec_v(c, k, n0), ec_i64(c, nr)), ec_i64(c, s->N));
  kir_block *tb, *eb;
  kir_emit_if(c->km, b, ec_bin(c, KIR_AND, mfull, nfull), &tb, &eb);
  mm_host_tile(G, tb, grp, s, at, bco, m0, n0, mr, nr, cs, -1);
  if (!rm || !rn) {   /* one kind of edge */
    mm_host_tile(G, eb, grp, s, at, bco, m0, n0, rm ? rm : mr, rn ? rn : nr, cs, -1);
  } else {
    kir_block *rb, *cb, *nb, *xb;   /* the right edge (rows whole), else the bottom row of tiles */
    kir_emit_if(c->km, eb, ec_bin(c, KIR_LE, ec_add(c, ec_v(c, k, m0), ec_i64(c, mr)), ec_i64(c, s->M)), &rb, &cb);
    mm_host_tile(G, rb, grp, s, at, bco, m0, n0, mr, rn, cs, -1);
    kir_emit_if(c->km, cb, ec_bin(c, KIR_LE, ec_add(c, ec_v(c, k, n0), ec_i64(c, nr)), ec_i64(c, s->N)), &nb, &xb);
    mm_host_tile(G, nb, grp, s, at, bco, m0, n0, rm, nr, cs, -1);
    mm_host_tile(G, xb, grp, s, at, bco, m0, n0, rm, rn, cs, -1);
  }
  if (cs >= 0)
    mm_host_epilogue(G, b, grp, s, bco, m0, n0, s->M % mr ? pk_extent(c, k, mr, s->M, m0) : ec_i64(c, mr),
                     s->N % nr ? pk_extent(c, k, nr, s->N, n0) : ec_i64(c, nr), cs, MM_NR);
  return k;
}

/* ---- host, packed: large f32 matmuls ------------------------------------------------------- */

/* Register tile PK_MR x mm_nr (16 zmm accumulators with AVX-512, 16 ymm with AVX2); an
 * item computes an MC x NC block of C (at most PK_MC x PK_NC) in K blocks of at most
 * PK_KC, packing each operand block into per-thread scratch first: A's block
 * (128 KiB) and the B panel of a tile (32 KiB) stay in L2 and L1; with the f32 block of C
 * that is at most 512 KiB of scratch (the stack of the thread that runs the item). */
enum { PK_MR = MM_MR, PK_KC = 256, PK_MC = 128, PK_NC = 256 };

/* Least multiple of m not below x. */
static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* Is the packed path worth it: f32 accumulation, at least one register tile, enough work
 * (256^3 multiply-adds), and a B that the unpacked kernel reads badly: rows of 2 KiB or
 * more (a column panel walks one L1 set) or over 1 MiB in all. Below that, mm_items with B
 * in cache is faster (no packing, no accumulator round trips). */
static int mm_use_packed(const gc_lowerer *c, const mm_shape *s, gc_dtype at, const gc_op *op) {
  if (c->t->kind != KIR_TARGET_HOST || at != GRAPHC_DTYPE_F32 || s->M < PK_MR || s->N < mm_nr(c)) return 0;
  /* fp8 operands: converted once into the panels, where the register tiles would convert every
   * element M / 8 or N / 32 times (a dozen integer steps each, codegen/kir_f8.c) */
  if (gc_dtype_is_f8(op->operands[0]->type.dtype) || gc_dtype_is_f8(op->operands[1]->type.dtype))
    return (double)s->M * (double)s->N * (double)s->K >= 64.0 * 64 * 64;
  if ((double)s->M * (double)s->N * (double)s->K < 256.0 * 256 * 256) return 0;
  return s->N >= 512 || (double)s->K * (double)s->N >= 512.0 * 512;
}

/* One operand block of the packed path. Logical rows r (m of A, n of B) [r0, r0 + rows)
 * and k [k0, k0 + kc) go to scratch `sbuf` as panels of P rows: element (r0 + p0 + i,
 * k0 + kk) at p0 * KC + kk * P + i, and 0 for rows at or past `lim`. */
typedef struct pk_operand {
  const gc_value *x;
  int is_a;          /* A (coordinates (m, k)) or B ((k, n)) */
  int trans;         /* the matmul's transpose flag of this operand */
  int kfast;         /* k is the operand's contiguous dim: loop over k innermost */
  int sbuf, P;
  int64_t lim, KC;
} pk_operand;

/* Store one packed element (row var r, k var kv) at scratch index var iv; checked: 0 past lim. */
static void pk_elem(gc_gen *G, kir_block *b, const pk_operand *o, const mm_shape *s, const int *bco, int r,
                    int kv, int iv, int checked, gc_dtype at) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  kir_block *tb = b, *eb = NULL;
  if (checked) kir_emit_if(c->km, b, in_range(c, k, r, o->lim, 0), &tb, &eb);
  gc_gen_push(G);
  int rz = o->lim == 1 ? GC_PT_ZERO : r, kz = s->K == 1 ? GC_PT_ZERO : kv;
  int d0 = o->is_a ? rz : kz, d1 = o->is_a ? kz : rz;  /* logical (row, col) of the operand */
  int v = o->trans ? gc_mm_operand(G, tb, o->x, s, bco, d1, d0) : gc_mm_operand(G, tb, o->x, s, bco, d0, d1);
  kir_emit_store(c->km, tb, KIR_SCRATCH, o->sbuf, ec_v(c, k, iv), ec_cast(c, at, ec_v(c, k, v)));
  gc_gen_pop(G);
  if (eb) kir_emit_store(c->km, eb, KIR_SCRATCH, o->sbuf, ec_v(c, k, iv), gc_ec_num(c, at, 0.0));
}

/* The loops over one panel at row offset p0 (var) of the block at r0 (var): k innermost
 * when k is the operand's contiguous dim, else the panel's rows. */
static void pk_panel(gc_gen *G, kir_block *b, const pk_operand *o, const mm_shape *s, const int *bco, int r0,
                     int p0, int k0, int kc, int checked, gc_dtype at) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  int kk = gc_ec_var(c, k, "pk", GRAPHC_DTYPE_I64);
  kir_block *ob, *ib;
  if (o->kfast && o->P <= 8) {
    /* rows unrolled inside the k loop: P contiguous streams in, one contiguous run of P out
     * per k, which LLVM vectorizes as an interleaved (transposing) store group */
    ob = kir_emit_for(c->km, b, kk, ec_i64(c, 0), ec_v(c, k, kc), ec_i64(c, 1));
    int kv = gc_ec_let(c, k, ob, "pkk", ec_add(c, ec_v(c, k, k0), ec_v(c, k, kk)));
    int base = gc_ec_let(c, k, ob, "pidx", ec_add(c, ec_mul(c, ec_v(c, k, p0), ec_i64(c, o->KC)),
                                                    ec_mul(c, ec_v(c, k, kk), ec_i64(c, o->P))));
    for (int ii = 0; ii < o->P; ii++) {
      int r = gc_ec_let(c, k, ob, "pr", ec_add(c, ec_add(c, ec_v(c, k, r0), ec_v(c, k, p0)), ec_i64(c, ii)));
      int iv = gc_ec_let(c, k, ob, "pidx", ec_add(c, ec_v(c, k, base), ec_i64(c, ii)));
      pk_elem(G, ob, o, s, bco, r, kv, iv, checked, at);
    }
    return;
  }
  int i = gc_ec_var(c, k, "pi", GRAPHC_DTYPE_I64);
  if (o->kfast) {
    ob = kir_emit_for(c->km, b, i, ec_i64(c, 0), ec_i64(c, o->P), ec_i64(c, 1));
    ib = kir_emit_for(c->km, ob, kk, ec_i64(c, 0), ec_v(c, k, kc), ec_i64(c, 1));
  } else {
    ob = kir_emit_for(c->km, b, kk, ec_i64(c, 0), ec_v(c, k, kc), ec_i64(c, 1));
    ib = kir_emit_for(c->km, ob, i, ec_i64(c, 0), ec_i64(c, o->P), ec_i64(c, 1));
  }
  int r = gc_ec_let(c, k, ib, "pr", ec_add(c, ec_add(c, ec_v(c, k, r0), ec_v(c, k, p0)), ec_v(c, k, i)));
  int kv = gc_ec_let(c, k, ib, "pkk", ec_add(c, ec_v(c, k, k0), ec_v(c, k, kk)));
  kir_expr *idx = ec_add(c, ec_mul(c, ec_v(c, k, p0), ec_i64(c, o->KC)),
                         ec_add(c, ec_mul(c, ec_v(c, k, kk), ec_i64(c, o->P)), ec_v(c, k, i)));
  int iv = gc_ec_let(c, k, ib, "pidx", idx);
  pk_elem(G, ib, o, s, bco, r, kv, iv, checked, at);
}

/* Pack the block: panels p0 = 0, P, .. below rv = min(rows, lim - r0); whole panels
 * without bounds tests, the last partial one with them (zeros past lim). */
static void pk_pack(gc_gen *G, kir_block *b, const pk_operand *o, const mm_shape *s, const int *bco, int r0,
                    int rv, int k0, int kc, gc_dtype at) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  int p0 = gc_ec_var(c, k, "p0", GRAPHC_DTYPE_I64);
  kir_block *pb = kir_emit_for(c->km, b, p0, ec_i64(c, 0), ec_v(c, k, rv), ec_i64(c, o->P));
  kir_expr *whole = ec_bin(c, KIR_LE, ec_add(c, ec_v(c, k, p0), ec_i64(c, o->P)), ec_v(c, k, rv));
  kir_block *tb, *eb;
  kir_emit_if(c->km, pb, whole, &tb, &eb);
  pk_panel(G, tb, o, s, bco, r0, p0, k0, kc, 0, at);
  pk_panel(G, eb, o, s, bco, r0, p0, k0, kc, 1, at);
}

/* k is x's contiguous dim (a probe on its index map; default: A row-major, B row-major). */
static int pk_kfast(const gc_lowerer *c, const gc_value *x, int is_a, int trans) {
  int ct = mm_contig_last(c, x);
  int k_last = is_a ? !trans : trans;  /* k is x's own last dim */
  if (ct < 0) return is_a;
  return (ct == 1) == k_last;
}

/* MR x NR register tile at (ir, jr) of the block, K block k0 of depth kc: accumulators
 * from Cs (0 in the first K block), a pass over the packed panels, back to Cs. */
static void pk_micro(gc_gen *G, kir_block *b, int ap, int bp, int cs, int64_t KC, int64_t NC, int ir, int jr,
                     int k0, int kc, gc_dtype at) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const int nr = mm_nr(c);
  int acc[PK_MR * MM_NR], av[PK_MR], bv[MM_NR];
  int cb = gc_ec_let(c, k, b, "cb", ec_add(c, ec_mul(c, ec_v(c, k, ir), ec_i64(c, NC)), ec_v(c, k, jr)));
  for (int i = 0; i < PK_MR * nr; i++) acc[i] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, at, 0.0));
  kir_block *tb;
  kir_emit_if(c->km, b, ec_bin(c, KIR_GT, ec_v(c, k, k0), ec_i64(c, 0)), &tb, NULL);
  for (int i = 0; i < PK_MR; i++)
    for (int j = 0; j < nr; j++)
      kir_emit_assign(c->km, tb, acc[i * nr + j],
                      kir_load(c->km, k, KIR_SCRATCH, cs, ec_add(c, ec_v(c, k, cb), ec_i64(c, i * NC + j))));
  int ab = gc_ec_let(c, k, b, "ab", ec_mul(c, ec_v(c, k, ir), ec_i64(c, KC)));
  int bb = gc_ec_let(c, k, b, "bb", ec_mul(c, ec_v(c, k, jr), ec_i64(c, KC)));
  int kk = gc_ec_var(c, k, "kk", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, kk, ec_i64(c, 0), ec_v(c, k, kc), ec_i64(c, 1));
  int ao = gc_ec_let(c, k, lb, "ao", ec_add(c, ec_v(c, k, ab), ec_mul(c, ec_v(c, k, kk), ec_i64(c, PK_MR))));
  int bo = gc_ec_let(c, k, lb, "bo", ec_add(c, ec_v(c, k, bb), ec_mul(c, ec_v(c, k, kk), ec_i64(c, nr))));
  for (int i = 0; i < PK_MR; i++) {
    kir_expr *ai = ec_add(c, ec_v(c, k, ao), ec_i64(c, i));
    av[i] = gc_ec_let(c, k, lb, "a", kir_load(c->km, k, KIR_SCRATCH, ap, ai));
  }
  for (int j = 0; j < nr; j++) {
    kir_expr *bi = ec_add(c, ec_v(c, k, bo), ec_i64(c, j));
    bv[j] = gc_ec_let(c, k, lb, "b", kir_load(c->km, k, KIR_SCRATCH, bp, bi));
  }
  for (int i = 0; i < PK_MR; i++)
    for (int j = 0; j < nr; j++) {
      kir_expr *prod = ec_bin(c, KIR_MUL, ec_v(c, k, av[i]), ec_v(c, k, bv[j]));
      kir_emit_assign(c->km, lb, acc[i * nr + j], ec_bin(c, KIR_ADD, ec_v(c, k, acc[i * nr + j]), prod));
    }
  for (int i = 0; i < PK_MR; i++)
    for (int j = 0; j < nr; j++)
      kir_emit_store(c->km, b, KIR_SCRATCH, cs, ec_add(c, ec_v(c, k, cb), ec_i64(c, i * NC + j)),
                     ec_v(c, k, acc[i * nr + j]));
}

/* The packed host kernel: ITEMS over (batch, column block, row block), row blocks fastest.
 * Per K block an item packs its MC x kc block of A and kc x NC block of B into scratch
 * (zero-padded to whole tiles; operands read through the generator, so fused producers
 * and transposes are handled here once), runs the register tiles over them, accumulating
 * in a scratch MC x NC block, and ends with the epilogue over the block's valid part. */
static kir_kernel *mm_packed(gc_lowerer *c, const gc_fusion_group *grp, const mm_shape *s, gc_dtype at,
                             gc_gen *G) {
  const gc_op *op = grp->roots[0];
  const int nr = mm_nr(c);
  int64_t KC = s->K < PK_KC ? s->K : PK_KC;
  int64_t MC = round_up(s->M, PK_MR), NC = round_up(s->N, nr);
  if (MC > PK_MC) MC = PK_MC;
  if (NC > PK_NC) NC = PK_NC;
  /* enough items for every core (two each), shrinking the wider side first */
  int64_t want = 2 * (int64_t)(c->t->num_sms > 0 ? c->t->num_sms : 1);
  for (;;) {
    int64_t items = s->batch * ((s->M + MC - 1) / MC) * ((s->N + NC - 1) / NC);
    if (items >= want) break;
    if (NC > nr && NC >= MC) NC = round_up(NC / 2, nr);
    else if (MC > PK_MR) MC = round_up(MC / 2, PK_MR);
    else break;
  }
  int64_t TM = (s->M + MC - 1) / MC, TN = (s->N + NC - 1) / NC;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, s->batch * TN * TM, 1);
  gc_gen_init(G, c, k);
  int ap = kir_add_scratch(c->km, k, at, MC * KC), bp = kir_add_scratch(c->km, k, at, KC * NC);
  int cs = kir_add_scratch(c->km, k, at, MC * NC);
  kir_block *b = &k->body;
  int64_t dims3[3] = {s->batch, TN, TM};
  int co[3], bco[GC_MAX_RANK];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  gc_mm_batch_coords(c, k, b, s, co[0], bco);
  int m0 = gc_ec_let(c, k, b, "m0", ec_mul(c, ec_v(c, k, co[2]), ec_i64(c, MC)));
  int n0 = gc_ec_let(c, k, b, "n0", ec_mul(c, ec_v(c, k, co[1]), ec_i64(c, NC)));
  int mv = gc_ec_let(c, k, b, "mv", pk_extent(c, k, MC, s->M, m0));
  int nv = gc_ec_let(c, k, b, "nv", pk_extent(c, k, NC, s->N, n0));
  pk_operand oa = {op->operands[0], 1, s->ta, pk_kfast(c, op->operands[0], 1, s->ta), ap, PK_MR, s->M, KC};
  pk_operand ob = {op->operands[1], 0, s->tb, pk_kfast(c, op->operands[1], 0, s->tb), bp, nr, s->N, KC};

  int k0 = gc_ec_var(c, k, "k0", GRAPHC_DTYPE_I64);
  kir_block *kb = kir_emit_for(c->km, b, k0, ec_i64(c, 0), ec_i64(c, s->K), ec_i64(c, KC));
  int kc = gc_ec_let(c, k, kb, "kc", pk_extent(c, k, KC, s->K, k0));
  pk_pack(G, kb, &oa, s, bco, m0, mv, k0, kc, at);
  pk_pack(G, kb, &ob, s, bco, n0, nv, k0, kc, at);
  int jr = gc_ec_var(c, k, "jr", GRAPHC_DTYPE_I64), ir = gc_ec_var(c, k, "ir", GRAPHC_DTYPE_I64);
  kir_block *jb = kir_emit_for(c->km, kb, jr, ec_i64(c, 0), ec_v(c, k, nv), ec_i64(c, nr));
  kir_block *ib = kir_emit_for(c->km, jb, ir, ec_i64(c, 0), ec_v(c, k, mv), ec_i64(c, PK_MR));
  pk_micro(G, ib, ap, bp, cs, KC, NC, ir, jr, k0, kc, at);

  mm_host_epilogue(G, b, grp, s, bco, m0, n0, ec_v(c, k, mv), ec_v(c, k, nv), cs, NC);
  return k;
}

/* The tensor-core kernel of a matmul group (CUDA, sm_80 and later), NULL when the tensor
 * cores do not take it (gc_tc_plan_of). Hopper: warpgroup MMAs (emit_wgmma.c) when both
 * operands load by cp.async as they are, unless a tuning entry names one of the mma.sync
 * kernel's tiles or a tile is forced (kir_target.tc_bm / tc_bn); else mma.sync (emit_mma.c). */
static kir_kernel *tensor_core(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G) {
  gc_tc_plan p;
  if (!gc_tc_plan_of(c, grp, s, &p)) return NULL;
  const gc_tuning_entry *te = p.te;
  /* 8-bit operands (fp8, i8 / u8): the warpgroup kernel with both operands K-major in memory (B
   * stored N x K), 16-byte aligned; anything else the CUDA-core kernels, converting on load */
  if (p.f8)
    return !p.a_gen && !p.b_gen && !p.b_nmajor && s->M >= 64 && s->N >= 64 && !c->t->tc_bm && !c->t->tc_bn
               ? gc_mm_wgmma(c, grp, s, G, &p.oa, NULL, &p.ob, 0, te && te->wgmma ? te->bm : 0,
                             te && te->wgmma ? te->bn : 0, p.key)
               : NULL;
  /* tf32 on Hopper: the transposed warpgroup-MMA kernel (emit_wgmma.c) */
  if (c->t->wgmma && p.tf32 && !p.a_gen && !p.b_gen && s->M >= 64 && s->N >= 64 && !c->t->tc_bm &&
      !c->t->tc_bn)
    return gc_mm_wgmma_tf32(c, grp, s, G, &p.oa, &p.ob, p.b_nmajor, te && te->wgmma ? te->bm : 0,
                            te && te->wgmma ? te->bn : 0, p.key);
  if (c->t->wgmma && !p.tf32 && (!p.a_gen || p.a_nhwc) && !p.b_gen && s->M >= 64 && s->N >= 64 &&
      !c->t->tc_bm && !c->t->tc_bn && (!te || te->wgmma) && !p.short_k)
    return gc_mm_wgmma(c, grp, s, G, &p.oa, p.a_nhwc ? p.aic : NULL, &p.ob, p.b_nmajor, te ? te->bm : 0,
                       te ? te->bn : 0, p.key);
  return gc_mm_mma(c, grp, s, G, &p);
}

/* matmul group: tensor cores (emit_mma.c), a few rows (emit_gemv.c) or the tiled BLOCKS kernel on CUDA, ITEMS dot
 * products on the host. */
int gc_emit_matmul(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  mm_shape s;
  gc_mm_shape_of(op, &s);
  gc_dtype ct = gc_ec_compute_type(op->results[0]->type.dtype);
  gc_dtype at = gc_dtype_is_float(ct) ? ct : GRAPHC_DTYPE_I64;
  gc_gen G;
  kir_kernel *k = c->t->kind == KIR_TARGET_CUDA ? tensor_core(c, grp, &s, &G) : NULL;
  if (!k) k = gc_mm_gemv(c, grp, &s, &G);
  if (!k && mm_use_packed(c, &s, at, op)) k = mm_packed(c, grp, &s, at, &G);
  if (!k && mm_bpack_ok(c, &s, op->operands[1], at)) k = mm_items_bpack(c, grp, &s, at, &G);
  if (!k && mm_bcols_ok(c, &s, op->operands[0], at)) k = mm_items_bcols(c, grp, &s, at, &G);
  if (!k && mm_simt_ok(c, &s, at)) k = mm_simt(c, grp, &s, at, &G);
  if (!k) k = c->t->kind == KIR_TARGET_CUDA ? mm_tiled(c, grp, &s, at, &G) : mm_items(c, grp, &s, at, &G);
  k->bytes_moved = gc_gen_bytes(&G, -1);
  k->flops = 2.0 * (double)s.batch * (double)s.M * (double)s.N * (double)s.K;
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}

/* ---- conv2d and pools --------------------------------------------------------------------------- */

/* conv2d group: direct convolution, one item per output element, then the epilogue. */
int gc_emit_conv(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  if (gc_dwconv_ok(c, op)) return gc_emit_dwconv(c, grp);
  const gc_value *xv = op->operands[0], *wv = op->operands[1], *ov = op->results[0];
  const gc_type *xt = &xv->type, *wt = &wv->type, *ot = &ov->type;
  int64_t C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];
  int64_t O = wt->dims[0], Cg = wt->dims[1], KH = wt->dims[2], KW = wt->dims[3];
  int64_t groups = gc_op_attr_int(op, "groups", 1), Og = O / groups;
  gc_window w;
  gc_window_of(op, KH, KW, 1, 1, &w);
  gc_dtype at = gc_ec_compute_type(ot->dtype);
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, gc_type_numel(ot), 256);
  gc_gen G;
  gc_gen_init(&G, c, k);
  int px = gc_gen_rparam(&G, c->val_buf[xv->id], xt->dtype);
  int pw = gc_gen_rparam(&G, c->val_buf[wv->id], wt->dtype);
  kir_block *b = &k->body;
  int co[4];
  gc_ec_unravel(c, k, b, k->item_var, 4, ot->dims, co);
  kir_expr *grp_e = ec_bin(c, KIR_DIV, ec_v(c, k, co[1]), ec_i64(c, Og));
  /* x[n, g*Cg + ci, ih, iw] and w[o, ci, kh, kw] */
  kir_expr *xb = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, C)), ec_mul(c, grp_e, ec_i64(c, Cg)));
  int xbase = gc_ec_let(c, k, b, "xbase", ec_mul(c, xb, ec_i64(c, H * W)));
  int wbase = gc_ec_let(c, k, b, "wbase", ec_mul(c, ec_v(c, k, co[1]), ec_i64(c, Cg * KH * KW)));
  int acc = gc_ec_let(c, k, b, "acc", gc_ec_num(c, at, 0.0));
  int ci = gc_ec_var(c, k, "ci", GRAPHC_DTYPE_I64);
  kir_block *cb = kir_emit_for(c->km, b, ci, ec_i64(c, 0), ec_i64(c, Cg), ec_i64(c, 1));
  int kh = gc_ec_var(c, k, "kh", GRAPHC_DTYPE_I64);
  kir_block *hb = kir_emit_for(c->km, cb, kh, ec_i64(c, 0), ec_i64(c, KH), ec_i64(c, 1));
  int ih = gc_ec_tap_coord(c, k, hb, co[2], w.sh, w.top, kh, w.dh);
  kir_block *hin;
  kir_emit_if(c->km, hb, in_range(c, k, ih, H, 1), &hin, NULL);
  int kw = gc_ec_var(c, k, "kw", GRAPHC_DTYPE_I64);
  kir_block *wb = kir_emit_for(c->km, hin, kw, ec_i64(c, 0), ec_i64(c, KW), ec_i64(c, 1));
  int iw = gc_ec_tap_coord(c, k, wb, co[3], w.sw, w.left, kw, w.dw);
  kir_block *win;
  kir_emit_if(c->km, wb, in_range(c, k, iw, W, 1), &win, NULL);
  kir_expr *xi = ec_add(c, ec_v(c, k, xbase), ec_mul(c, ec_v(c, k, ci), ec_i64(c, H * W)));
  xi = ec_add(c, xi, ec_add(c, ec_mul(c, ec_v(c, k, ih), ec_i64(c, W)), ec_v(c, k, iw)));
  kir_expr *wi = ec_add(c, ec_v(c, k, wbase), ec_mul(c, ec_v(c, k, ci), ec_i64(c, KH * KW)));
  wi = ec_add(c, wi, ec_add(c, ec_mul(c, ec_v(c, k, kh), ec_i64(c, KW)), ec_v(c, k, kw)));
  kir_expr *prod = ec_bin(c, KIR_MUL, ec_cast(c, at, gc_ec_load(c, k, px, xi)),
                          ec_cast(c, at, gc_ec_load(c, k, pw, wi)));
  kir_emit_assign(c->km, win, acc, ec_bin(c, KIR_ADD, ec_v(c, k, acc), prod));
  int pt = gc_gen_pt(&G, ot, k->item_var, co);
  gc_mm_epilogue(&G, b, grp, pt, ec_v(c, k, acc));
  k->bytes_moved = gc_gen_bytes(&G, -1);
  k->flops = 2.0 * (double)gc_type_numel(ot) * (double)(Cg * KH * KW);
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}

/* Channels per item of an NHWC pool read 16 bytes at a time: x must be a buffer (not
 * computed by the group) whose C is a multiple of them; 1 otherwise. */
static int pool_vec_width(const gc_lowerer *c, const gc_value *xv, const gc_window *w) {
  if (w->ah != 1 || c->t->kind != KIR_TARGET_CUDA || !ec_reads_buffer(c, xv))
    return 1;
  int V = (int)(16 / graphc_dtype_size(xv->type.dtype));
  return V >= 2 && V <= KIR_MAX_VEC && xv->type.dims[3] % V == 0 ? V : 1;
}

/* NHWC pool, V channels per item: one V-wide load per tap, V-wide stores (an item per
 * channel made one 2-byte load per tap: H200, resnet_f16's stem pool, 64 channels). */
static int pool_nhwc_vec(gc_lowerer *c, const gc_fusion_group *grp, const gc_window *w, int V) {
  const gc_op *op = grp->roots[0];
  const gc_value *xv = op->operands[0], *ov = op->results[0];
  const gc_type *xt = &xv->type, *ot = &ov->type;
  int64_t H = xt->dims[1], W = xt->dims[2], C = xt->dims[3];
  int is_max = op->opcode == GC_OP_MAX_POOL2D;
  gc_dtype at = gc_ec_compute_type(ot->dtype);
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, gc_type_numel(ot) / V, 256);
  gc_gen G;
  gc_gen_init(&G, c, k);
  int px = gc_gen_rparam(&G, c->val_buf[xv->id], xt->dtype);
  kir_block *b = &k->body;
  int64_t dims[4] = {ot->dims[0], ot->dims[1], ot->dims[2], ot->dims[3] / V};
  int co[4];
  gc_ec_unravel(c, k, b, k->item_var, 4, dims, co);
  int acc[KIR_MAX_VEC], raw[KIR_MAX_VEC];
  for (int e = 0; e < V; e++) {
    acc[e] = gc_ec_let(c, k, b, "acc", gc_ec_identity(c, is_max ? GC_EC_MAX : GC_EC_SUM, at));
    raw[e] = gc_ec_var(c, k, "xr", xt->dtype);
  }
  int cnt = is_max ? -1 : gc_ec_let(c, k, b, "cnt", gc_ec_num(c, at, 0.0));
  int kh = gc_ec_var(c, k, "kh", GRAPHC_DTYPE_I64);
  /* the window's rows stay a loop (its columns unroll): LLVM O3 unrolled resnet_f16's 3x3 stem
   * pool to 9 taps, 0.0450 ms against 0.0398 with 3 per row (H200, docs/performance.md) */
  kir_block *hb = kir_emit_for_nounroll(c->km, b, kh, ec_i64(c, 0), ec_i64(c, w->kh), ec_i64(c, 1));
  int ih = gc_ec_tap_coord(c, k, hb, co[1], w->sh, w->top, kh, w->dh);
  kir_block *hin;
  kir_emit_if(c->km, hb, in_range(c, k, ih, H, 1), &hin, NULL);
  int kw = gc_ec_var(c, k, "kw", GRAPHC_DTYPE_I64);
  kir_block *wb = kir_emit_for(c->km, hin, kw, ec_i64(c, 0), ec_i64(c, w->kw), ec_i64(c, 1));
  int iw = gc_ec_tap_coord(c, k, wb, co[2], w->sw, w->left, kw, w->dw);
  kir_block *win;
  kir_emit_if(c->km, wb, in_range(c, k, iw, W, 1), &win, NULL);
  /* x[n, ih, iw, cv * V .. + V) */
  kir_expr *pix = ec_add(c, ec_mul(c, ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, H)), ec_v(c, k, ih)), ec_i64(c, W)),
                         ec_v(c, k, iw));
  kir_expr *xi = ec_add(c, ec_mul(c, pix, ec_i64(c, C)), ec_mul(c, ec_v(c, k, co[3]), ec_i64(c, V)));
  kir_emit_load_vec(c->km, win, KIR_GLOBAL, px, xi, V, raw);
  for (int e = 0; e < V; e++) {
    int x = gc_ec_let(c, k, win, "x", ec_cast(c, at, ec_v(c, k, raw[e])));
    kir_emit_assign(c->km, win, acc[e], is_max ? gc_ec_maxmin(c, k, 1, acc[e], x)
                                               : ec_bin(c, KIR_ADD, ec_v(c, k, acc[e]), ec_v(c, k, x)));
  }
  if (!is_max) kir_emit_assign(c->km, win, cnt, ec_bin(c, KIR_ADD, ec_v(c, k, cnt), gc_ec_num(c, at, 1.0)));
  /* the V outputs: consecutive linear indices item * V + e */
  int pts[KIR_MAX_VEC];
  for (int e = 0; e < V; e++) {
    int lin = gc_ec_let(c, k, b, "lin", ec_add(c, ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, V)), ec_i64(c, e)));
    pts[e] = gc_gen_pt(&G, ot, lin, NULL);
    kir_expr *y = is_max ? ec_v(c, k, acc[e]) : ec_bin(c, KIR_DIV, ec_v(c, k, acc[e]), ec_v(c, k, cnt));
    gc_gen_bind(&G, ov, pts[e], gc_ec_let(c, k, b, ov->name, gc_ec_round(c, ot->dtype, y)));
  }
  gc_gen_store_outs_vec(&G, b, grp, pts, V);
  k->bytes_moved = gc_gen_bytes(&G, -1);
  k->flops = (double)gc_type_numel(ot) * (double)(w->kh * w->kw);
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}

/* max_pool2d (padding reads -inf) and avg_pool2d (divides by in-bounds taps);
 * the input is read through the generator, the result goes through the epilogue.
 * layout="nhwc": x [N, H, W, C], out [N, OH, OW, C]; the item order is the output's,
 * so consecutive items are consecutive channels and their loads are coalesced. */
int gc_emit_pool(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *xv = op->operands[0], *ov = op->results[0];
  const gc_type *xt = &xv->type, *ot = &ov->type;
  int64_t ker[2];
  GC_ASSERT(gc_attr_ints(gc_op_attr(op, "kernel"), ker, 2) == 2);
  gc_window w;
  gc_window_of(op, ker[0], ker[1], ker[0], ker[1], &w);
  int ah = w.ah;
  int64_t H = xt->dims[ah], W = xt->dims[ah + 1];
  int is_max = op->opcode == GC_OP_MAX_POOL2D;
  gc_dtype at = gc_ec_compute_type(ot->dtype);
  int V = pool_vec_width(c, xv, &w);
  if (V > 1) return pool_nhwc_vec(c, grp, &w, V);
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, gc_type_numel(ot), 256);
  gc_gen G;
  gc_gen_init(&G, c, k);
  kir_block *b = &k->body;
  int co[4];
  gc_ec_unravel(c, k, b, k->item_var, 4, ot->dims, co);
  int acc = gc_ec_let(c, k, b, "acc", gc_ec_identity(c, is_max ? GC_EC_MAX : GC_EC_SUM, at));
  int cnt = is_max ? -1 : gc_ec_let(c, k, b, "cnt", gc_ec_num(c, at, 0.0));
  int kh = gc_ec_var(c, k, "kh", GRAPHC_DTYPE_I64);
  kir_block *hb = kir_emit_for(c->km, b, kh, ec_i64(c, 0), ec_i64(c, w.kh), ec_i64(c, 1));
  int ih = gc_ec_tap_coord(c, k, hb, co[ah], w.sh, w.top, kh, w.dh);
  kir_block *hin;
  kir_emit_if(c->km, hb, in_range(c, k, ih, H, 1), &hin, NULL);
  int kw = gc_ec_var(c, k, "kw", GRAPHC_DTYPE_I64);
  kir_block *wb = kir_emit_for(c->km, hin, kw, ec_i64(c, 0), ec_i64(c, w.kw), ec_i64(c, 1));
  int iw = gc_ec_tap_coord(c, k, wb, co[ah + 1], w.sw, w.left, kw, w.dw);
  kir_block *win;
  kir_emit_if(c->km, wb, in_range(c, k, iw, W, 1), &win, NULL);
  gc_gen_push(&G);
  int xc[4] = {co[0], co[1], co[2], co[3]};  /* x at the output's n and c */
  xc[ah] = ih;
  xc[ah + 1] = iw;
  int x = gc_gen_val(&G, win, xv, gc_gen_pt(&G, xt, -1, xc));
  if (is_max) {
    kir_emit_assign(c->km, win, acc, gc_ec_maxmin(c, k, 1, acc, x));
  } else {
    kir_emit_assign(c->km, win, acc, ec_bin(c, KIR_ADD, ec_v(c, k, acc), ec_v(c, k, x)));
    kir_emit_assign(c->km, win, cnt, ec_bin(c, KIR_ADD, ec_v(c, k, cnt), gc_ec_num(c, at, 1.0)));
  }
  gc_gen_pop(&G);
  kir_expr *y = is_max ? ec_v(c, k, acc) : ec_bin(c, KIR_DIV, ec_v(c, k, acc), ec_v(c, k, cnt));
  int pt = gc_gen_pt(&G, ot, k->item_var, co);
  gc_mm_epilogue(&G, b, grp, pt, y);
  k->bytes_moved = gc_gen_bytes(&G, -1);
  k->flops = (double)gc_type_numel(ot) * (double)(w.kh * w.kw);
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}
