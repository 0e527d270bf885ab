/* emit_mma.c - tensor-core matmul groups for CUDA targets (sm_80 and later).
 *
 *   f16 / bf16 operands, f32 accumulators, any epilogue the group fuses
 *   (bias, activation, residual, scale, cast), batched and broadcast batch dims.
 *
 * Schedule (one BLOCKS group per BM x BN output tile, 128 threads = 4 warps as
 * 2 (M) x 2 (N), each warp a (BM/2) x (BN/2) sub-tile of m16n8k16 MMAs. 128x128
 * (warps of 4 x 8 MMAs, 4 KiB of fragments read from shared memory per 32 MMAs,
 * which keeps shared-memory bandwidth below what the tensor cores consume) unless
 * its grid would leave SMs idle; then 128x64, 64x128 or 64x64 (tc_tile; a tuning
 * file's entry for the problem overrides the choice, see tuning.h)):
 *   - K advances 32 at a time through a 3-stage ring of shared-memory tiles
 *     filled with 16-byte cp.async copies (zero-filled outside the matrix), so
 *     two tiles are in flight while the tensor cores work on the third;
 *   - fragments come from shared memory with ldmatrix (.trans for a B operand
 *     whose N dim is contiguous); 16-byte chunks are XOR-swizzled within each
 *     row so ldmatrix and cp.async are free of bank conflicts without padding
 *     (3 stages x (128x32 + 32x128) halves = 48 KiB at 128x128, the static limit);
 *   - the epilogue runs on the accumulators through the element generator and
 *     stores each output element the group produces.
 * Operands are read straight from the buffers behind them when they are a
 * strided window of one buffer (emit_tc.c's tc_view: the views the group computes inline,
 * reshape, transpose, broadcast, slice, split), A has K contiguous, B has K or
 * N contiguous, and every 8-element chunk is 16-byte aligned. Any other operand
 * (a head merge that is no strided window, a transposed A, a cast or other
 * prologue the group fuses) is staged through the element generator: 8 values
 * per chunk, one 16-byte shared store, except an NHWC im2col A of a materialized
 * input (the layout pass's convs), read by cp.async with a bounds test per chunk:
 * 8 channels of one pixel, or, in the pair form of a stem (4 channels, even window
 * width, stride and left padding along W), 4 channels of two adjacent pixels that
 * are both inside the image or both in its padding (tc_issue_nhwc). How each operand
 * is read is planned by gc_tc_plan_of (emit_tc.c); other dtypes, sm < 80 or small
 * outputs (M or N below 32) get no plan and emit_linalg.c uses the CUDA-core kernel.
 */
#include "codegen/emit_tc.h"
#include "codegen/tuning.h"

enum {
  TC_STAGES = 3, TC_THREADS = 128,      /* 4 warps: 2 (M) x 2 (N), each a (BM/2) x (BN/2) tile */
  TC_MAXMI = 4, TC_MAXNI = 8,           /* MMAs per warp per k16 step, at most (128x128 tiles) */
  TC_MAXCPT = 4                         /* 16-byte chunks per thread per operand tile, at most */
};

/* i64 helpers on variables. */
static kir_expr *vx(gc_lowerer *c, kir_kernel *k, int v) { return ec_v(c, k, v); }
static kir_expr *cx(gc_lowerer *c, int64_t v) { return ec_i64(c, v); }
static kir_expr *rem(gc_lowerer *c, kir_expr *a, int64_t m) { return ec_bin(c, KIR_REM, a, cx(c, m)); }
static kir_expr *quo(gc_lowerer *c, kir_expr *a, int64_t m) { return ec_bin(c, KIR_DIV, a, cx(c, m)); }
static kir_expr *lt(gc_lowerer *c, kir_expr *a, kir_expr *b) { return ec_bin(c, KIR_LT, a, b); }
static kir_expr *and_(gc_lowerer *c, kir_expr *a, kir_expr *b) { return ec_bin(c, KIR_AND, a, b); }

/* Swizzled element offset of chunk `ch` (8 elements) of row `row` in a tile whose
 * rows hold `row_chunks` chunks (4: 64-byte rows, two per 128-byte bank line; 16:
 * 256-byte rows). Eight consecutive rows read at one chunk column hit 8 distinct
 * 16-byte bank groups. */
static kir_expr *swz(gc_lowerer *c, kir_kernel *k, int row, kir_expr *ch, int row_chunks, int epc) {
  kir_expr *key;
  if (row_chunks == 4)
    key = rem(c, quo(c, vx(c, k, row), 2), 4);
  else if (epc == 8)
    key = rem(c, vx(c, k, row), 8);
  else  /* f32 rows of 32 chunks read by scalar loads: 4 rows x 8 columns per warp access */
    key = ec_mul(c, rem(c, vx(c, k, row), 4), cx(c, 2));
  kir_expr *pc = ec_bin(c, KIR_XOR, ch, key);
  return ec_add(c, ec_mul(c, vx(c, k, row), cx(c, (int64_t)row_chunks * epc)), ec_mul(c, pc, cx(c, epc)));
}

/* Per-thread copy plan for one operand tile: cpt 16-byte chunks per thread. */
typedef struct tc_copy {
  int sidx[TC_MAXCPT]; /* swizzled shared offsets (without the stage base) */
  int gidx[TC_MAXCPT]; /* global element index at kt = 0 */
  int ok[TC_MAXCPT];   /* bool: the chunk's row (M or N) is in range */
  int kpos[TC_MAXCPT]; /* i64: K coordinate of the chunk at kt = 0 */
  int outer[TC_MAXCPT];/* i64: M or N coordinate of the chunk (its first element) */
  int64_t kstep;    /* global index advance per K tile */
  int nmajor;       /* chunks run along N (rows of the tile are K) */
  int epc, bk;      /* elements per 16-byte chunk (8: f16/bf16, 4: f32) and the K tile */
  int cpt, bn;      /* chunks per thread (tile rows / 32); the tile's N extent (N-major B) */
  /* generic staging (operand not a strided window): elements through the generator */
  const gc_value *x;/* the operand; NULL: cp.async from a strided window */
  int swap;         /* x's matrix coordinates are (k, outer) instead of (outer, k) */
  /* B an im2col the group computes (N-major chunks along output pixels): the pixel
   * of each chunk's first element, (oh0, ow0) as i32 vars (tc_stage_im2col) */
  const gc_op *im2col;
  int oh0, ow0;
  /* A an NHWC im2col of a materialized x [N, H, W, C] (C a multiple of the chunk, or
   * half a chunk with paired pixels: tc_nhwc_pairs): each chunk is 8 channels of one
   * pixel (4 of two), one cp.async (tc_issue_nhwc); per chunk row
   * the image's element offset and the window's top-left corner (i64 vars) */
  const gc_op *nhwc;
  int nb[TC_MAXCPT], ih0[TC_MAXCPT], iw0[TC_MAXCPT];
  /* the chunks' values and shared offsets, held in registers between the loads
   * (tc_issue) and the shared stores (tc_store_regs): the loads of K tile kt + 2
   * are in flight while the tensor cores work on tile kt */
  int rv[TC_MAXCPT][8], rsi[TC_MAXCPT];
  int defer;        /* staged chunks go through rv / rsi (always for an im2col) */
} tc_copy;

/* Plan for a tile of `rows` x 32 (K contiguous: A, or B stored N x K). */
static void tc_plan_kmajor(gc_lowerer *c, kir_kernel *k, kir_block *b, int tid, const tc_opnd *o, int base,
                           int r0, int64_t extent, tc_copy *cp) {
  int epc = cp->epc;
  int ch = gc_ec_let(c, k, b, "ch", rem(c, vx(c, k, tid), 4));
  for (int i = 0; i < cp->cpt; i++) {
    int row = gc_ec_let(c, k, b, "row", ec_add(c, quo(c, vx(c, k, tid), 4), cx(c, TC_THREADS / 4 * i)));
    cp->sidx[i] = gc_ec_let(c, k, b, "sidx", swz(c, k, row, vx(c, k, ch), 4, epc));
    int gr = gc_ec_let(c, k, b, "grow", ec_add(c, vx(c, k, r0), vx(c, k, row)));
    cp->outer[i] = gr;
    cp->ok[i] = gc_ec_let(c, k, b, "rok", lt(c, vx(c, k, gr), cx(c, extent)));
    cp->kpos[i] = gc_ec_let(c, k, b, "kpos", ec_mul(c, vx(c, k, ch), cx(c, epc)));
    if (!o) continue;
    kir_expr *g = ec_add(c, vx(c, k, base), ec_mul(c, vx(c, k, gr), cx(c, o->s_outer)));
    cp->gidx[i] = gc_ec_let(c, k, b, "gidx", ec_add(c, g, ec_mul(c, vx(c, k, ch), cx(c, epc))));
  }
  cp->kstep = cp->bk;
  cp->nmajor = 0;
}

/* Plan for a bk x bn B tile stored K x N (N contiguous). */
static void tc_plan_nmajor(gc_lowerer *c, kir_kernel *k, kir_block *b, int tid, const tc_opnd *o, int base,
                           int n0, int64_t N, tc_copy *cp) {
  int epc = cp->epc, rc = cp->bn / epc;  /* chunks per row */
  int ch = gc_ec_let(c, k, b, "ch", rem(c, vx(c, k, tid), rc));
  int gn = gc_ec_let(c, k, b, "gn", ec_add(c, vx(c, k, n0), ec_mul(c, vx(c, k, ch), cx(c, epc))));
  for (int i = 0; i < cp->cpt; i++) {
    int row = gc_ec_let(c, k, b, "row", ec_add(c, quo(c, vx(c, k, tid), rc), cx(c, TC_THREADS / rc * i)));
    cp->sidx[i] = gc_ec_let(c, k, b, "sidx", swz(c, k, row, vx(c, k, ch), rc, epc));
    cp->outer[i] = gn;
    cp->ok[i] = gc_ec_let(c, k, b, "nok", lt(c, vx(c, k, gn), cx(c, N)));
    cp->kpos[i] = gc_ec_let(c, k, b, "kpos", vx(c, k, row));
    if (!o) continue;
    kir_expr *g = ec_add(c, vx(c, k, base), ec_mul(c, vx(c, k, row), cx(c, o->s_k)));
    cp->gidx[i] = gc_ec_let(c, k, b, "gidx", ec_add(c, g, vx(c, k, gn)));
  }
  cp->kstep = o ? cp->bk * o->s_k : 0;
  cp->nmajor = 1;
}

/* Generic staging of K tile `kt` into ring slot `slot`: each chunk's 8 elements
 * computed by the element generator (any view, cast or elementwise prologue the
 * group computes inline), then one 16-byte shared store; zeros outside. */
static void tc_stage(gc_gen *G, kir_block *b, const tc_copy *cp, const gc_mm_shape *s, const int *bco, int sh,
                     int64_t stage_elems, int kt, int slot, gc_dtype dt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_type *t = &cp->x->type;
  int bx = t->rank - 2;
  int epc = cp->epc;
  for (int i = 0; i < cp->cpt; i++) {
    int kk = gc_ec_let(c, k, b, "kk", ec_add(c, vx(c, k, cp->kpos[i]), ec_mul(c, vx(c, k, kt), cx(c, cp->bk))));
    int si = gc_ec_let(c, k, b, "si", ec_add(c, ec_mul(c, vx(c, k, slot), cx(c, stage_elems)), vx(c, k, cp->sidx[i])));
    kir_block *tb, *eb;
    kir_emit_if(c->km, b, and_(c, vx(c, k, cp->ok[i]), lt(c, vx(c, k, kk), cx(c, s->K))), &tb, &eb);
    gc_gen_push(G);
    kir_expr *vals[8], *zeros[8];
    for (int e = 0; e < epc; e++) {
      int ov = cp->outer[i], kv = kk;
      if (cp->nmajor)
        ov = gc_ec_let(c, k, tb, "on", ec_add(c, vx(c, k, cp->outer[i]), cx(c, e)));
      else
        kv = gc_ec_let(c, k, tb, "kn", ec_add(c, vx(c, k, kk), cx(c, e)));
      int co[GC_MAX_RANK];
      for (int j = 0; j < bx; j++) co[j] = t->dims[j] == 1 ? GC_PT_ZERO : bco[j + s->ob - bx];
      co[bx] = cp->swap ? kv : ov;
      co[bx + 1] = cp->swap ? ov : kv;
      zeros[e] = gc_ec_num(c, dt, 0.0);
      if (!cp->nmajor && e > 0 && s->K % epc) {
        /* K not a multiple of the chunk: the chunk's tail past K reads as 0, never loads */
        int r = gc_ec_let(c, k, tb, "kv", zeros[e]);
        kir_block *ib;
        kir_emit_if(c->km, tb, lt(c, vx(c, k, kv), cx(c, s->K)), &ib, NULL);
        gc_gen_push(G);
        int v = gc_gen_val(G, ib, cp->x, gc_gen_pt(G, t, -1, co));
        kir_emit_assign(c->km, ib, r, ec_cast(c, dt, vx(c, k, v)));
        gc_gen_pop(G);
        vals[e] = vx(c, k, r);
        continue;
      }
      int v = gc_gen_val(G, tb, cp->x, gc_gen_pt(G, t, -1, co));
      vals[e] = ec_cast(c, dt, vx(c, k, v));
    }
    gc_gen_pop(G);
    if (cp->defer) {  /* into registers; tc_store_regs writes them after the MMAs */
      for (int e = 0; e < epc; e++) {
        kir_emit_assign(c->km, tb, cp->rv[i][e], vals[e]);
        kir_emit_assign(c->km, eb, cp->rv[i][e], zeros[e]);
      }
      kir_emit_assign(c->km, b, cp->rsi[i], vx(c, k, si));
      continue;
    }
    kir_emit_store_vec(c->km, tb, KIR_SHARED, sh, vx(c, k, si), epc, vals);
    kir_emit_store_vec(c->km, eb, KIR_SHARED, sh, vx(c, k, si), epc, zeros);
  }
}

/* tc_stage for a B operand that is an im2col of x [N, C, H, W] computed by the group,
 * chunks along the output pixels p = oh * OW + ow. Per chunk the window offset comes
 * from k = (c * KH + kh) * KW + kw once; per element the pixel advances from the
 * chunk's first (oh0, ow0) without a division, in i32, and a materialized x is read
 * at its plane's base plus ih * W + iw. A padding or a pixel past N reads as 0. */
static void tc_stage_im2col(gc_gen *G, kir_block *b, const tc_copy *cp, const gc_mm_shape *s, const int *bco,
                            int sh, int64_t stage_elems, int kt, int slot, gc_dtype dt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_op *op = cp->im2col;
  const gc_value *x = op->operands[0];
  const gc_type *xt = &x->type;
  gc_im2col_geom ge;
  gc_im2col_geom_of(op, &ge);
  int64_t KK = ge.kern[0] * ge.kern[1], H = ge.H, W = ge.W, OW = ge.OW, C = xt->dims[1];
  int epc = cp->epc;
  int ncoord = xt->dims[0] == 1 ? GC_PT_ZERO : bco[s->ob - 1];  /* B [N, C*KH*KW, P]: batch dim 0 */
  int inline_x = x->def && c->inl[x->def->id];
  int xp = inline_x ? -1 : gc_gen_rparam(G, c->val_buf[x->id], xt->dtype);
  int tail = s->N % epc != 0;  /* chunks may run past N: checked per element */
  for (int i = 0; i < cp->cpt; i++) {
    int kk = gc_ec_let(c, k, b, "kk", ec_add(c, vx(c, k, cp->kpos[i]), ec_mul(c, vx(c, k, kt), cx(c, cp->bk))));
    int si = gc_ec_let(c, k, b, "si", ec_add(c, ec_mul(c, vx(c, k, slot), cx(c, stage_elems)), vx(c, k, cp->sidx[i])));
    kir_expr *pred = lt(c, vx(c, k, kk), cx(c, s->K));
    if (!tail) pred = and_(c, vx(c, k, cp->ok[i]), pred);
    kir_block *tb, *eb;
    kir_emit_if(c->km, b, pred, &tb, &eb);
    gc_gen_push(G);
    int ci = gc_ec_let(c, k, tb, "ci", quo(c, vx(c, k, kk), KK));
    int kr = gc_ec_let(c, k, tb, "kr", ec_cast(c, GRAPHC_DTYPE_I32, rem(c, vx(c, k, kk), KK)));
    /* window offsets: ih = oh * sh + hoff, iw = ow * sw + woff (i32) */
    kir_expr *i32c = ec_i32(c, ge.kern[1]);
    int hoff = gc_ec_let(c, k, tb, "hoff", ec_bin(c, KIR_SUB, ec_mul(c, ec_bin(c, KIR_DIV, vx(c, k, kr), i32c),
                                                                  ec_i32(c, ge.dil[0])), ec_i32(c, ge.pad[0])));
    int woff = gc_ec_let(c, k, tb, "woff", ec_bin(c, KIR_SUB, ec_mul(c, ec_bin(c, KIR_REM, vx(c, k, kr), i32c),
                                                                  ec_i32(c, ge.dil[1])), ec_i32(c, ge.pad[1])));
    /* a materialized x: element (n, ci, 0, 0) */
    int plane = -1;
    if (!inline_x) {
      kir_expr *nc = ncoord == GC_PT_ZERO ? vx(c, k, ci) : ec_add(c, ec_mul(c, vx(c, k, ncoord), cx(c, C)), vx(c, k, ci));
      plane = gc_ec_let(c, k, tb, "plane", ec_mul(c, nc, cx(c, H * W)));
    }
    kir_expr *zeros[8];
    for (int e = 0; e < epc; e++) {
      zeros[e] = gc_ec_num(c, dt, 0.0);
      /* pixel p0 + e: ow0 + e wraps past OW at most (OW - 1 + e) / OW times */
      kir_expr *ow = ec_add(c, vx(c, k, cp->ow0), ec_i32(c, e)), *oh = vx(c, k, cp->oh0);
      /* (chunks start at multiples of epc: with OW a multiple of epc a chunk stays in one row) */
      for (int64_t w = 0; OW % epc && w < (OW - 1 + e) / OW; w++) {
        int wr = gc_ec_let(c, k, tb, "wr", ec_bin(c, KIR_GE, ow, ec_i32(c, OW)));
        ow = vx(c, k, gc_ec_let(c, k, tb, "ow", kir_select(c->km, vx(c, k, wr), ec_bin(c, KIR_SUB, ow, ec_i32(c, OW)), ow)));
        oh = vx(c, k, gc_ec_let(c, k, tb, "oh", kir_select(c->km, vx(c, k, wr), ec_add(c, oh, ec_i32(c, 1)), oh)));
      }
      int ih = gc_ec_let(c, k, tb, "ih", ec_add(c, ec_mul(c, oh, ec_i32(c, ge.st[0])), vx(c, k, hoff)));
      int iw = gc_ec_let(c, k, tb, "iw", ec_add(c, ec_mul(c, ow, ec_i32(c, ge.st[1])), vx(c, k, woff)));
      kir_expr *ok = and_(c, and_(c, ec_bin(c, KIR_GE, vx(c, k, ih), ec_i32(c, 0)), lt(c, vx(c, k, ih), ec_i32(c, H))),
                          and_(c, ec_bin(c, KIR_GE, vx(c, k, iw), ec_i32(c, 0)), lt(c, vx(c, k, iw), ec_i32(c, W))));
      if (tail) ok = and_(c, ok, lt(c, ec_add(c, vx(c, k, cp->outer[i]), cx(c, e)), cx(c, s->N)));
      int r = cp->rv[i][e];
      kir_emit_assign(c->km, tb, r, zeros[e]);
      kir_block *ib;
      kir_emit_if(c->km, tb, ok, &ib, NULL);
      gc_gen_push(G);
      kir_expr *v;
      if (!inline_x) {
        kir_expr *off = ec_cast(c, GRAPHC_DTYPE_I64, ec_add(c, ec_mul(c, vx(c, k, ih), ec_i32(c, W)), vx(c, k, iw)));
        v = kir_load(c->km, k, KIR_GLOBAL, xp, ec_add(c, vx(c, k, plane), off));
      } else {
        int ih64 = gc_ec_let(c, k, ib, "ih", ec_cast(c, GRAPHC_DTYPE_I64, vx(c, k, ih)));
        int iw64 = gc_ec_let(c, k, ib, "iw", ec_cast(c, GRAPHC_DTYPE_I64, vx(c, k, iw)));
        int co[4] = {ncoord, C == 1 ? GC_PT_ZERO : ci, H == 1 ? GC_PT_ZERO : ih64, W == 1 ? GC_PT_ZERO : iw64};
        v = vx(c, k, gc_gen_val(G, ib, x, gc_gen_pt(G, xt, -1, co)));
      }
      kir_emit_assign(c->km, ib, r, ec_cast(c, dt, v));
      gc_gen_pop(G);
    }
    gc_gen_pop(G);
    for (int e = 0; e < epc; e++) kir_emit_assign(c->km, eb, cp->rv[i][e], zeros[e]);
    kir_emit_assign(c->km, b, cp->rsi[i], vx(c, k, si));
  }
}

/* The shared stores of the chunks tc_stage / tc_stage_im2col left in registers (defer). */
static void tc_store_regs(gc_lowerer *c, kir_kernel *k, kir_block *b, const tc_copy *cp, int sh) {
  for (int i = 0; i < cp->cpt; i++) {
    kir_expr *vals[8];
    for (int e = 0; e < cp->epc; e++) vals[e] = vx(c, k, cp->rv[i][e]);
    kir_emit_store_vec(c->km, b, KIR_SHARED, sh, vx(c, k, cp->rsi[i]), cp->epc, vals);
  }
}

/* The per-row part of an NHWC im2col A operand's chunks: row m = (n*OH + oh)*OW + ow. */
static void tc_plan_nhwc(gc_lowerer *c, kir_kernel *k, kir_block *b, tc_copy *cp) {
  gc_im2col_geom ge;
  gc_im2col_geom_of(cp->nhwc, &ge);
  for (int i = 0; i < cp->cpt; i++) {
    int m = cp->outer[i];
    int p = gc_ec_let(c, k, b, "p", rem(c, vx(c, k, m), ge.OH * ge.OW));
    cp->nb[i] = gc_ec_let(c, k, b, "nb", ec_mul(c, quo(c, vx(c, k, m), ge.OH * ge.OW), cx(c, ge.H * ge.W * ge.C)));
    cp->ih0[i] = gc_ec_let(c, k, b, "ih0", ec_bin(c, KIR_SUB, ec_mul(c, quo(c, vx(c, k, p), ge.OW), cx(c, ge.st[0])),
                                               cx(c, ge.pad[0])));
    cp->iw0[i] = gc_ec_let(c, k, b, "iw0", ec_bin(c, KIR_SUB, ec_mul(c, rem(c, vx(c, k, p), ge.OW), cx(c, ge.st[1])),
                                               cx(c, ge.pad[1])));
  }
}

/* tc_issue for an NHWC im2col A operand: chunk i of K tile kt is x[n, ih, iw, c0 .. c0 + 7]
 * with k = (kh*KW + kw)*C + c0, one 16-byte cp.async; zeros in the padding and past M or K.
 * With 4 channels (tc_nhwc_pairs) the same copy is x[n, ih, iw .. iw + 1, 0 .. 3]. */
static void tc_issue_nhwc(gc_lowerer *c, kir_kernel *k, kir_block *b, const tc_copy *cp, const gc_mm_shape *s,
                          int sh, int param, int64_t stage_elems, int kt, int slot) {
  gc_im2col_geom ge;
  gc_im2col_geom_of(cp->nhwc, &ge);
  for (int i = 0; i < cp->cpt; i++) {
    int kk = gc_ec_let(c, k, b, "kk", ec_add(c, vx(c, k, cp->kpos[i]), ec_mul(c, vx(c, k, kt), cx(c, cp->bk))));
    int r = gc_ec_let(c, k, b, "kr", quo(c, vx(c, k, kk), ge.C));
    int ih = gc_ec_let(c, k, b, "ih", ec_add(c, vx(c, k, cp->ih0[i]), ec_mul(c, quo(c, vx(c, k, r), ge.kern[1]), cx(c, ge.dil[0]))));
    int iw = gc_ec_let(c, k, b, "iw", ec_add(c, vx(c, k, cp->iw0[i]), ec_mul(c, rem(c, vx(c, k, r), ge.kern[1]), cx(c, ge.dil[1]))));
    kir_expr *in = and_(c, and_(c, ec_bin(c, KIR_GE, vx(c, k, ih), cx(c, 0)), lt(c, vx(c, k, ih), cx(c, ge.H))),
                        and_(c, ec_bin(c, KIR_GE, vx(c, k, iw), cx(c, 0)), lt(c, vx(c, k, iw), cx(c, ge.W))));
    int pred = gc_ec_let(c, k, b, "ok", and_(c, and_(c, vx(c, k, cp->ok[i]), lt(c, vx(c, k, kk), cx(c, s->K))), in));
    kir_expr *off = ec_add(c, vx(c, k, cp->nb[i]),
                           ec_add(c, ec_mul(c, ec_add(c, ec_mul(c, vx(c, k, ih), cx(c, ge.W)), vx(c, k, iw)), cx(c, ge.C)),
                                  rem(c, vx(c, k, kk), ge.C)));
    /* no address outside x, even for a copy that reads nothing */
    kir_expr *gi = kir_select(c->km, vx(c, k, pred), off, cx(c, 0));
    kir_expr *si = ec_add(c, ec_mul(c, vx(c, k, slot), cx(c, stage_elems)), vx(c, k, cp->sidx[i]));
    kir_emit_cp_async(c->km, b, sh, si, param, gi, vx(c, k, pred));
  }
}

/* Issue the copies of K tile `kt` (an i64 var) into ring slot `slot` (an i64 var). */
static void tc_issue(gc_gen *G, kir_block *b, const tc_copy *cp, const gc_mm_shape *s, const int *bco, int sh,
                     int param, int64_t stage_elems, int kt, int slot, gc_dtype dt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  int64_t K = s->K;
  if (cp->nhwc) {
    tc_issue_nhwc(c, k, b, cp, s, sh, param, stage_elems, kt, slot);
    return;
  }
  if (cp->im2col) {
    tc_stage_im2col(G, b, cp, s, bco, sh, stage_elems, kt, slot, dt);
    return;
  }
  if (cp->x) {
    tc_stage(G, b, cp, s, bco, sh, stage_elems, kt, slot, dt);
    return;
  }
  for (int i = 0; i < cp->cpt; i++) {
    kir_expr *kk = ec_add(c, vx(c, k, cp->kpos[i]), ec_mul(c, vx(c, k, kt), cx(c, cp->bk)));
    kir_expr *pred = and_(c, vx(c, k, cp->ok[i]), lt(c, kk, cx(c, K)));
    kir_expr *si = ec_add(c, ec_mul(c, vx(c, k, slot), cx(c, stage_elems)), vx(c, k, cp->sidx[i]));
    kir_expr *gi = ec_add(c, vx(c, k, cp->gidx[i]), ec_mul(c, vx(c, k, kt), cx(c, cp->kstep)));
    kir_emit_cp_async(c->km, b, sh, si, param, gi, pred);
  }
}

/* Output tile (BM x BN, each 64 or 128) of a tensor-core matmul. kir_target's
 * tc_bm / tc_bn when set (tests); else the tuning file's entry for `key`; else the
 * largest tile whose grid fills
 * every SM once (128x128, then 128x64, 64x128), and 64x64 when none does: at M 127
 * and N 4096 the 128x128 grid is 32 blocks on 132 SMs, the 64x64 one 128. No
 * 128 side over at most 64 rows or columns (a conv with 64 output channels takes
 * 64x128). tf32 keeps 128x128 (its B reads assume 128-wide rows). */
static void tc_tile(const gc_lowerer *c, const gc_mm_shape *s, int tf32, int short_k, const char *key, int *bm,
                    int *bn) {
  *bm = *bn = 128;
  if (tf32) return;
  if ((c->t->tc_bm == 64 || c->t->tc_bm == 128) && (c->t->tc_bn == 64 || c->t->tc_bn == 128)) {
    *bm = c->t->tc_bm;
    *bn = c->t->tc_bn;
    return;
  }
  const gc_tuning_entry *e = gc_tuning_find(c->t->tuning, key);
  if (e && !e->wgmma) {  /* a wg tile, for a problem this kernel takes: the heuristic */
    *bm = e->bm;
    *bn = e->bn;
    return;
  }
  static const int cand[][2] = {{128, 128}, {128, 64}, {64, 128}, {64, 64}};
  int64_t sms = c->t->num_sms > 0 ? c->t->num_sms : 1;
  for (int i = short_k ? 1 : 0; i < 4; i++) {
    *bm = cand[i][0];
    *bn = cand[i][1];
    /* a 128 tile over at most 64 rows or columns would compute half of it for nothing */
    if ((*bm == 128 && s->M <= 64) || (*bn == 128 && s->N <= 64)) continue;
    if (s->batch * ((s->M + *bm - 1) / *bm) * ((s->N + *bn - 1) / *bn) >= sms) return;
  }
}

/* The mma.sync kernel of a matmul group planned by gc_tc_plan_of (see emit_tc.h). */
kir_kernel *gc_mm_mma(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G,
                      const gc_tc_plan *p) {
  const gc_op *op = grp->roots[0];
  const gc_value *A = op->operands[0], *B = op->operands[1];
  const gc_dtype dt = p->dt;
  const int tf32 = p->tf32, epc = p->epc, bk = p->bk, a_gen = p->a_gen, b_gen = p->b_gen;
  const int b_nmajor = p->b_nmajor, b_im2col = p->b_im2col, a_nhwc = p->a_nhwc, short_k = p->short_k;
  const gc_op *aic = p->aic, *bic = p->bic;
  const gc_value *ax = p->ax;
  const char *key = p->key;
  tc_opnd oa = p->oa, ob = p->ob;
  int BM, BN;
  tc_tile(c, s, tf32, short_k, key, &BM, &BN);
  const int WM = BM / 2, WN = BN / 2, MI = WM / 16, NI = WN / 8;
  const int64_t a_stage = BM * bk, b_stage = bk * BN;
  int64_t TM = (s->M + BM - 1) / BM, TN = (s->N + BN - 1) / BN;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, s->batch * TM * TN, TC_THREADS);
  if (!tf32) snprintf(k->tune_key, sizeof k->tune_key, "%s", key);
  gc_gen_init(G, c, k);
  kir_mma_kind kind = tf32 ? KIR_MMA_TF32 : dt == GRAPHC_DTYPE_F16 ? KIR_MMA_F16 : KIR_MMA_BF16;
  oa.param = a_nhwc ? gc_gen_rparam(G, c->val_buf[ax->id], dt)
           : a_gen  ? -1
                    : gc_gen_rparam(G, c->val_buf[oa.v.base->id], dt);
  ob.param = b_gen ? -1 : gc_gen_rparam(G, c->val_buf[ob.v.base->id], dt);
  int sa = kir_add_shared(c->km, k, dt, TC_STAGES * a_stage);
  int sb = kir_add_shared(c->km, k, dt, TC_STAGES * b_stage);
  kir_block *b = &k->body;

  /* which tile: (batch, tile row, tile column), columns fastest */
  int64_t dims3[3] = {s->batch, TM, TN};
  int co[3], bco[GC_MAX_RANK];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  gc_mm_batch_coords(c, k, b, s, co[0], bco);
  int m0 = gc_ec_let(c, k, b, "m0", ec_mul(c, vx(c, k, co[1]), cx(c, BM)));
  int n0 = gc_ec_let(c, k, b, "n0", ec_mul(c, vx(c, k, co[2]), cx(c, BN)));
  int abase = a_gen ? -1 : gc_ec_let(c, k, b, "abase", gc_tc_batch_off(c, k, A, &oa, s, bco));
  int bbase = b_gen ? -1 : gc_ec_let(c, k, b, "bbase", gc_tc_batch_off(c, k, B, &ob, s, bco));
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  int lane = gc_ec_let(c, k, b, "lane", rem(c, vx(c, k, tid), 32));
  int warp = gc_ec_let(c, k, b, "warp", quo(c, vx(c, k, tid), 32));
  int wm = gc_ec_let(c, k, b, "wm", ec_mul(c, rem(c, vx(c, k, warp), 2), cx(c, WM)));
  int wn = gc_ec_let(c, k, b, "wn", ec_mul(c, quo(c, vx(c, k, warp), 2), cx(c, WN)));
  int lq = gc_ec_let(c, k, b, "lq", quo(c, vx(c, k, lane), 8));  /* ldmatrix: matrix of this lane's row */
  int lr = gc_ec_let(c, k, b, "lr", rem(c, vx(c, k, lane), 8));  /* ... and the row */

  /* copy plans */
  tc_copy ca, cb;
  ca.epc = cb.epc = epc;
  ca.bk = cb.bk = bk;
  ca.cpt = BM / 32;
  cb.cpt = BN / 32;
  ca.bn = cb.bn = BN;
  tc_plan_kmajor(c, k, b, tid, a_gen ? NULL : &oa, abase, m0, s->M, &ca);
  if (b_nmajor)
    tc_plan_nmajor(c, k, b, tid, b_gen ? NULL : &ob, bbase, n0, s->N, &cb);
  else
    tc_plan_kmajor(c, k, b, tid, b_gen ? NULL : &ob, bbase, n0, s->N, &cb);
  ca.x = a_gen && !a_nhwc ? A : NULL;
  ca.swap = s->ta;
  cb.x = b_gen ? B : NULL;
  cb.swap = !s->tb;
  ca.im2col = cb.im2col = NULL;
  ca.nhwc = a_nhwc ? aic : NULL;
  cb.nhwc = NULL;
  if (a_nhwc) tc_plan_nhwc(c, k, b, &ca);
  /* Staged operands keep their chunks in registers across the MMAs of a step (the
   * global loads of tile kt + 2 overlap the tensor-core work on tile kt) while the
   * accumulators plus those registers stay within 160 per thread, so nothing spills:
   * B's (an im2col's) first, then A's. */
  int budget = 160 - BM * BN / 32;
  cb.defer = b_gen && (b_im2col || BN / 4 <= budget);
  if (cb.defer) budget -= BN / 4;
  ca.defer = a_gen && !a_nhwc && BM / 4 <= budget;
  tc_copy *cps[2] = {&ca, &cb};
  for (int o = 0; o < 2; o++)
    for (int i = 0; i < cps[o]->cpt && cps[o]->defer; i++) {
      cps[o]->rsi[i] = gc_ec_var(c, k, o ? "bsi" : "asi", GRAPHC_DTYPE_I64);
      for (int e = 0; e < epc; e++) cps[o]->rv[i][e] = gc_ec_var(c, k, o ? "bv" : "av", dt);
    }
  if (b_im2col) {  /* the pixel of this thread's chunks (one column of chunks per thread) */
    gc_im2col_geom ge;
    gc_im2col_geom_of(bic, &ge);
    cb.im2col = bic;
    kir_expr *p0 = ec_cast(c, GRAPHC_DTYPE_I32, vx(c, k, cb.outer[0]));
    cb.oh0 = gc_ec_let(c, k, b, "oh0", ec_bin(c, KIR_DIV, p0, ec_i32(c, ge.OW)));
    cb.ow0 = gc_ec_let(c, k, b, "ow0", ec_bin(c, KIR_REM, p0, ec_i32(c, ge.OW)));
  }

  /* ldmatrix offsets (without the stage base), per MMA k step (two chunks of K) */
  int aoff[2][TC_MAXMI], boff[2][TC_MAXNI / 2];
  for (int kk = 0; kk < 2; kk++) {
    for (int mi = 0; mi < MI; mi++) {
      kir_expr *row = ec_add(c, ec_add(c, vx(c, k, wm), cx(c, mi * 16)),
                             ec_add(c, ec_mul(c, rem(c, vx(c, k, lq), 2), cx(c, 8)), vx(c, k, lr)));
      int rv = gc_ec_let(c, k, b, "arow", row);
      kir_expr *ch = ec_add(c, cx(c, kk * 2), quo(c, vx(c, k, lq), 2));
      aoff[kk][mi] = gc_ec_let(c, k, b, "aoff", swz(c, k, rv, ch, 4, epc));
    }
    for (int p = 0; p < NI / 2; p++) {
      if (b_nmajor && tf32) {
        boff[kk][p] = -1;  /* scalar loads, below */
      } else if (b_nmajor) {
        kir_expr *krow = ec_add(c, cx(c, kk * 16), ec_add(c, ec_mul(c, rem(c, vx(c, k, lq), 2), cx(c, 8)), vx(c, k, lr)));
        int kv = gc_ec_let(c, k, b, "brow", krow);
        kir_expr *ch = ec_add(c, quo(c, vx(c, k, wn), 8), ec_add(c, cx(c, p * 2), quo(c, vx(c, k, lq), 2)));
        boff[kk][p] = gc_ec_let(c, k, b, "boff", swz(c, k, kv, ch, BN / epc, epc));
      } else {
        kir_expr *nrow = ec_add(c, ec_add(c, vx(c, k, wn), cx(c, p * 16)),
                                ec_add(c, ec_mul(c, quo(c, vx(c, k, lq), 2), cx(c, 8)), vx(c, k, lr)));
        int nv = gc_ec_let(c, k, b, "brow", nrow);
        kir_expr *ch = ec_add(c, cx(c, kk * 2), rem(c, vx(c, k, lq), 2));
        boff[kk][p] = gc_ec_let(c, k, b, "boff", swz(c, k, nv, ch, 4, epc));
      }
    }
  }

  int acc[TC_MAXMI][TC_MAXNI][4];
  for (int mi = 0; mi < MI; mi++)
    for (int ni = 0; ni < NI; ni++)
      for (int j = 0; j < 4; j++) acc[mi][ni][j] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, GRAPHC_DTYPE_F32, 0.0));
  int af[TC_MAXMI][4], bf[TC_MAXNI][2];
  for (int mi = 0; mi < MI; mi++)
    for (int j = 0; j < 4; j++) af[mi][j] = gc_ec_var(c, k, "af", GRAPHC_DTYPE_I32);
  for (int ni = 0; ni < NI; ni++)
    for (int j = 0; j < 2; j++)
      bf[ni][j] = gc_ec_var(c, k, "bf", b_nmajor && tf32 ? GRAPHC_DTYPE_F32 : GRAPHC_DTYPE_I32);
  /* tf32 B stored K x N: b0 = B(k = t, n = g), b1 = B(t + 4, g) read one by one; row k of
   * the tile at element (k * 128 + wn + g + 4 * ((2 ni) ^ (2 t))) (the f32 swizzle of swz) */
  int t2b = -1, bcol = -1;
  if (b_nmajor && tf32) {
    t2b = gc_ec_let(c, k, b, "t2b", ec_mul(c, rem(c, vx(c, k, lane), 4), cx(c, 2)));
    bcol = gc_ec_let(c, k, b, "bcol", ec_add(c, vx(c, k, wn), quo(c, vx(c, k, lane), 4)));
  }

  /* prologue: K tiles 0 .. STAGES-2 into slots 0 .. STAGES-2 */
  int64_t ktiles = (s->K + bk - 1) / bk;
  for (int st = 0; st < TC_STAGES - 1; st++) {
    int kt = gc_ec_let(c, k, b, "kt", cx(c, st));
    tc_issue(G, b, &ca, s, bco, sa, oa.param, a_stage, kt, kt, dt);
    tc_issue(G, b, &cb, s, bco, sb, ob.param, b_stage, kt, kt, dt);
    if (ca.defer) tc_store_regs(c, k, b, &ca, sa);
    if (cb.defer) tc_store_regs(c, k, b, &cb, sb);
    kir_emit_cp_commit(c->km, b);
  }

  int kt = gc_ec_var(c, k, "kt", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, kt, cx(c, 0), cx(c, ktiles), cx(c, 1));
  kir_emit_cp_wait(c->km, lb, TC_STAGES - 2);
  kir_emit_barrier(c->km, lb);
  /* refill the slot everyone finished reading in the previous step */
  int nk = gc_ec_let(c, k, lb, "nk", ec_add(c, vx(c, k, kt), cx(c, TC_STAGES - 1)));
  int ns = gc_ec_let(c, k, lb, "ns", rem(c, vx(c, k, nk), TC_STAGES));
  tc_issue(G, lb, &ca, s, bco, sa, oa.param, a_stage, nk, ns, dt);
  tc_issue(G, lb, &cb, s, bco, sb, ob.param, b_stage, nk, ns, dt);
  kir_emit_cp_commit(c->km, lb);
  int cs = gc_ec_let(c, k, lb, "cs", rem(c, vx(c, k, kt), TC_STAGES));
  int abs_ = gc_ec_let(c, k, lb, "abs", ec_mul(c, vx(c, k, cs), cx(c, a_stage)));
  int bbs = gc_ec_let(c, k, lb, "bbs", ec_mul(c, vx(c, k, cs), cx(c, b_stage)));
  for (int kk = 0; kk < 2; kk++) {
    for (int mi = 0; mi < MI; mi++)
      kir_emit_ldmatrix(c->km, lb, sa, ec_add(c, vx(c, k, abs_), vx(c, k, aoff[kk][mi])), 0, af[mi]);
    for (int p = 0; p < NI / 2 && boff[kk][p] >= 0; p++) {
      int regs[4] = {bf[2 * p][0], bf[2 * p][1], bf[2 * p + 1][0], bf[2 * p + 1][1]};
      kir_emit_ldmatrix(c->km, lb, sb, ec_add(c, vx(c, k, bbs), vx(c, k, boff[kk][p])), b_nmajor, regs);
    }
    for (int ni = 0; ni < NI && boff[kk][0] < 0; ni++)
      for (int h = 0; h < 2; h++) {
        /* row kk * 8 + t + 4 h = kk * 8 + t2b / 2 + 4 h */
        kir_expr *row = ec_add(c, quo(c, vx(c, k, t2b), 2), cx(c, kk * 8 + 4 * h));
        kir_expr *col = ec_add(c, vx(c, k, bcol), ec_mul(c, ec_bin(c, KIR_XOR, cx(c, 2 * ni), vx(c, k, t2b)), cx(c, 4)));
        kir_expr *idx = ec_add(c, vx(c, k, bbs), ec_add(c, ec_mul(c, row, cx(c, BN)), col));
        kir_emit_assign(c->km, lb, bf[ni][h], kir_load(c->km, k, KIR_SHARED, sb, idx));
      }
    if (tf32 && c->t->tf32_round) {  /* f32 bits in, tf32 rounded to nearest (the MMA would truncate) */
      for (int mi = 0; mi < MI; mi++)
        for (int j = 0; j < 4; j++) gc_tc_round_tf32(c, k, lb, af[mi][j]);
      for (int ni = 0; ni < NI; ni++)
        for (int j = 0; j < 2; j++) gc_tc_round_tf32(c, k, lb, bf[ni][j]);
    }
    for (int mi = 0; mi < MI; mi++)
      for (int ni = 0; ni < NI; ni++) kir_emit_mma(c->km, lb, kind, acc[mi][ni], af[mi], bf[ni]);
  }
  /* the staged chunks of tile kt + 2, loaded before the MMAs above, into slot ns (read
   * last in step kt - 1, which every thread finished before this step's barrier) */
  if (ca.defer) tc_store_regs(c, k, lb, &ca, sa);
  if (cb.defer) tc_store_regs(c, k, lb, &cb, sb);
  /* the copies still in flight (zero fills past K) must land before shared memory is reused */
  kir_emit_cp_wait(c->km, b, 0);
  kir_emit_barrier(c->km, b);

  /* epilogue: accumulator (mi, ni, j) is output (row g + 8 (j / 2), column 2 t + j % 2) */
  int g = gc_ec_let(c, k, b, "g", quo(c, vx(c, k, lane), 4));
  int t2 = gc_ec_let(c, k, b, "t2", ec_mul(c, rem(c, vx(c, k, lane), 4), cx(c, 2)));
  int rows[TC_MAXMI][2], cols[TC_MAXNI][2];
  for (int mi = 0; mi < MI; mi++)
    for (int h = 0; h < 2; h++) {
      kir_expr *r = ec_add(c, ec_add(c, vx(c, k, m0), vx(c, k, wm)), ec_add(c, vx(c, k, g), cx(c, mi * 16 + 8 * h)));
      rows[mi][h] = gc_ec_let(c, k, b, "gm", r);
    }
  for (int ni = 0; ni < NI; ni++)
    for (int e = 0; e < 2; e++) {
      kir_expr *cn = ec_add(c, ec_add(c, vx(c, k, n0), vx(c, k, wn)), ec_add(c, vx(c, k, t2), cx(c, ni * 8 + e)));
      cols[ni][e] = gc_ec_let(c, k, b, "gn", cn);
    }
  int rv[2 * TC_MAXMI], accv[2 * TC_MAXMI * TC_MAXNI * 2];
  for (int mi = 0; mi < MI; mi++)
    for (int h = 0; h < 2; h++) {
      rv[2 * mi + h] = rows[mi][h];
      for (int ni = 0; ni < NI; ni++)
        for (int e = 0; e < 2; e++) accv[((2 * mi + h) * NI + ni) * 2 + e] = acc[mi][ni][2 * h + e];
    }
  gc_tc_store_tile(G, b, grp, s, bco, 2 * MI, rv, NI, (const int(*)[2])cols, accv, 1);
  return k;
}
