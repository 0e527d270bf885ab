/* emit_wgmma.c - Hopper (sm_90a) tensor-core matmul groups: warpgroup MMAs that read both
 * operands from shared memory asynchronously.
 *
 * Chosen by emit_linalg.c's tensor_core when the target has wgmma (kir_target.wgmma: sm_90
 * exactly) and both operands are 16-byte aligned strided windows of their buffers (A with K
 * contiguous, B with N or K contiguous), or A an NHWC im2col of a materialized input whose
 * channels come in whole 16-byte chunks, or in half chunks of two pixels that are inside or
 * outside the image together (the layout pass's convs and its pair form of a stem, decided
 * by emit_tc.c's tc_nhwc_pairs: wg_issue_nhwc), f16 / bf16
 * with f32 accumulators, M and N at least 64; anything else keeps the mma.sync kernel. The epilogue is the mma.sync kernel's
 * (gc_tc_store_tile): bias, activation, residual, scale, cast, whatever the group fuses.
 *
 * Schedule: one BLOCKS group of 2 BM threads (a warpgroup per 64 rows) per BM x BN output
 * tile (wg_tile: 128x256 while that grid still covers the SMs, 128x128, 128x64 for N up to
 * 64, and 64-row tiles when the grid of 128-row tiles would leave SMs idle; tiles in groups
 * of 8 tile rows for L2 reuse); warpgroup w computes rows 64w .. 64w+63 with wgmma.m64nBNk16,
 * its accumulators in registers (BN / 2 f32 per thread).
 *   - K advances 64 at a time through a ring of 4 shared-memory stages (dynamic shared
 *     memory: 4 x (128 x 64 + 64 x BN) halves, 192 KiB at BN 256), filled by TMA bulk
 *     tensor copies that thread 0 issues (kir_target.tma, see "TMA" below: one block per tile,
 *     a shared-memory barrier per stage), or, for an NHWC im2col A, a window TMA cannot
 *     describe or GRAPHC_TMA=0, by 16-byte cp.async copies of all 256 threads; both zero-fill
 *     outside the matrix;
 *   - the stages are laid out as wgmma reads them: 128-byte rows, 16-byte chunk c of row r
 *     at chunk c ^ (r % 8) (the 128-byte swizzle), every stage 1024-byte aligned. A rows are
 *     M (K-major); B rows are N (K-major, B stored N x K) or K (MN-major, B stored K x N, in
 *     blocks of 64 N values: kir_wg_opnd);
 *   - step kt: wait for tile kt's copies, fence them into the async proxy, barrier; issue
 *     the 4 wgmmas of tile kt (one commit group) and wait until at most that group is
 *     pending, so tile kt-1's wgmmas are done in this warpgroup (and tile kt-2's in both,
 *     by the barrier); then refill tile kt-2's stage with tile kt+2. Two tiles load while
 *     the tensor cores work. (Releasing stages through per-stage "empty" mbarriers instead,
 *     three tiles ahead with no block barrier, measured no better on 2026-12-03, and 18% slower
 *     on 127 x 4096 x 4096: docs/performance.md.)
 * Measured on the H200 (docs/performance.md): against cuBLASLt on random operands, rounds in
 * turn (2026-12-03), f16 / bf16 4096^3 0.90 / 0.89, 8192^3 0.94 / 0.96. Against a cuBLASLt on
 * constant operands (2026-12-02), TMA gave 4096^3 f16 0.85x, cp.async 0.80x, the mma.sync
 * kernel 0.47x.
 *
 * f32 matmuls with tf32 allowed (kir_target.tf32) take gc_mm_wgmma_tf32 at the end of this
 * file: the same pipeline over the tile transposed, A from registers (see there).
 */
#include "codegen/emit_tc.h"

#include <string.h>

enum {
  WG_BK = 64, WG_STAGES = 4,
  WG_EPC = 8,            /* f16 / bf16 elements per 16-byte chunk */
  WG_ROW = 64,           /* elements per 128-byte shared row */
  WG_GROUP = 8           /* tile rows per raster group */
};

static kir_expr *vx(gc_lowerer *c, kir_kernel *k, int v) { return ec_v(c, k, v); }
static kir_expr *cx(gc_lowerer *c, int64_t v) { return ec_i64(c, v); }
static kir_expr *rem(gc_lowerer *c, kir_expr *a, int64_t m) { return ec_bin(c, KIR_REM, a, cx(c, m)); }
static kir_expr *quo(gc_lowerer *c, kir_expr *a, int64_t m) { return ec_bin(c, KIR_DIV, a, cx(c, m)); }
static kir_expr *lt(gc_lowerer *c, kir_expr *a, kir_expr *b) { return ec_bin(c, KIR_LT, a, b); }

/* One operand's copies: this thread's chunks i = 0 .. n-1 of a stage land at shared element
 * sidx + i * sstep and come from global element gidx + i * gstep + kt * kstep; chunk i is in
 * the matrix when row_ok(i) (outer coordinate o0 + i * ostep < outer extent) and its K
 * coordinate k0 + i * k_istep + kt * 64 < K. */
typedef struct wg_copy {
  int n, nt;                     /* chunks per thread, threads (64 per 32 tile rows of A) */
  int epc, bk;                   /* elements per 16-byte chunk, K per tile (128 bytes) */
  int pad;                       /* shared row stride in elements; 0: 128-byte swizzled rows */
  int sidx, gidx, o0, k0;        /* i64 vars */
  int64_t sstep, gstep, ostep, k_istep, kstep, outer;
} wg_copy;

/* Issue the copies of K tile `kt` (i64 var) into stage `slot` (i64 var). */
static void wg_issue(gc_lowerer *c, kir_kernel *k, kir_block *b, const wg_copy *cp, int sh, int param,
                     int64_t stage, int kt, int slot, int64_t K) {
  int sbase = gc_ec_let(c, k, b, "sbase", ec_add(c, ec_mul(c, vx(c, k, slot), cx(c, stage)), vx(c, k, cp->sidx)));
  int gbase = gc_ec_let(c, k, b, "gbase", ec_add(c, vx(c, k, cp->gidx), ec_mul(c, vx(c, k, kt), cx(c, cp->kstep))));
  int kb = gc_ec_let(c, k, b, "kb", ec_add(c, vx(c, k, cp->k0), ec_mul(c, vx(c, k, kt), cx(c, cp->bk))));
  for (int i = 0; i < cp->n; i++) {
    kir_expr *ok = ec_bin(c, KIR_AND, lt(c, ec_add(c, vx(c, k, cp->o0), cx(c, i * cp->ostep)), cx(c, cp->outer)),
                          lt(c, ec_add(c, vx(c, k, kb), cx(c, i * cp->k_istep)), cx(c, K)));
    kir_emit_cp_async(c->km, b, sh, ec_add(c, vx(c, k, sbase), cx(c, i * cp->sstep)), param,
                      ec_add(c, vx(c, k, gbase), cx(c, i * cp->gstep)), ok);
  }
}

/* Copies of a K-major tile of `rows` rows x 128 bytes of K (A, or B stored N x K): chunk
 * column tid % 8, rows tid / 8 + nt / 8 i; the swizzle key (row % 8) is the same for all of
 * them (or rows cp->pad elements apart, unswizzled). */
static void wg_plan_kmajor(gc_lowerer *c, kir_kernel *k, kir_block *b, int tid, const tc_opnd *o, int base,
                           int r0, int64_t extent, int rows, wg_copy *cp) {
  int ch = gc_ec_let(c, k, b, "ch", rem(c, vx(c, k, tid), 8));
  int row = gc_ec_let(c, k, b, "row", quo(c, vx(c, k, tid), 8));
  kir_expr *key = rem(c, vx(c, k, row), 8);
  int stride = cp->pad ? cp->pad : 8 * cp->epc;
  cp->n = rows * 8 / cp->nt;
  cp->sidx = gc_ec_let(c, k, b, "sidx", ec_add(c, ec_mul(c, vx(c, k, row), cx(c, stride)),
                                              ec_mul(c, cp->pad ? vx(c, k, ch) : ec_bin(c, KIR_XOR, vx(c, k, ch), key),
                                                     cx(c, cp->epc))));
  cp->sstep = (cp->nt / 8) * stride;
  cp->o0 = gc_ec_let(c, k, b, "orow", ec_add(c, vx(c, k, r0), vx(c, k, row)));
  cp->ostep = cp->nt / 8;
  cp->outer = extent;
  cp->k0 = gc_ec_let(c, k, b, "kpos", ec_mul(c, vx(c, k, ch), cx(c, cp->epc)));
  cp->k_istep = 0;
  cp->kstep = cp->bk;  /* K is contiguous */
  if (!o) return;     /* an NHWC im2col: addresses per tile (wg_issue_nhwc) */
  cp->gidx = gc_ec_let(c, k, b, "gidx", ec_add(c, ec_add(c, vx(c, k, base), ec_mul(c, vx(c, k, cp->o0), cx(c, o->s_outer))),
                                              vx(c, k, cp->k0)));
  cp->gstep = cp->ostep * o->s_outer;
}

/* A an NHWC im2col of a materialized x [N, H, W, C] with C a multiple of 8 (the layout pass's
 * convs): row m of A is output pixel m (image m / (OH OW)), K index kk = (kh KW + kw) C + c;
 * a chunk is 8 channels of one input pixel, one cp.async. With C = 4 (the pair form: KW, the
 * stride and left padding along W and W even, dilation 1) the same formulas give the first
 * of two adjacent pixels, iw even, both in or out of x: one copy and one bounds test for
 * both, the 16 bytes at ((n H + ih) W + iw) 4, aligned. Per row the image's offset and the
 * window's top-left corner (i64 vars, im[i]); per K tile the tap (kh, kw) of the thread's
 * chunk column. Padding reads zeros. */
typedef struct wg_nhwc {
  const gc_op *op;
  gc_im2col_geom ge;
  int nb[8], ih0[8], iw0[8];
} wg_nhwc;

static void wg_plan_nhwc(gc_lowerer *c, kir_kernel *k, kir_block *b, const wg_copy *cp, wg_nhwc *nh) {
  gc_im2col_geom *ge = &nh->ge;
  gc_im2col_geom_of(nh->op, ge);
  for (int i = 0; i < cp->n; i++) {
    kir_expr *m = ec_add(c, vx(c, k, cp->o0), cx(c, i * cp->ostep));
    int p = gc_ec_let(c, k, b, "p", rem(c, m, ge->OH * ge->OW));
    nh->nb[i] = gc_ec_let(c, k, b, "nb", ec_mul(c, quo(c, m, ge->OH * ge->OW), cx(c, ge->H * ge->W * ge->C)));
    nh->ih0[i] = gc_ec_let(c, k, b, "ih0", ec_bin(c, KIR_SUB, ec_mul(c, quo(c, vx(c, k, p), ge->OW), cx(c, ge->st[0])),
                                                 cx(c, ge->pad[0])));
    nh->iw0[i] = gc_ec_let(c, k, b, "iw0", ec_bin(c, KIR_SUB, ec_mul(c, rem(c, vx(c, k, p), ge->OW), cx(c, ge->st[1])),
                                                 cx(c, ge->pad[1])));
  }
}

static void wg_issue_nhwc(gc_lowerer *c, kir_kernel *k, kir_block *b, const wg_copy *cp, const wg_nhwc *nh, int sh,
                          int param, int64_t stage, int kt, int slot, int64_t K) {
  const gc_im2col_geom *ge = &nh->ge;
  int sbase = gc_ec_let(c, k, b, "sbase", ec_add(c, ec_mul(c, vx(c, k, slot), cx(c, stage)), vx(c, k, cp->sidx)));
  int kk = gc_ec_let(c, k, b, "kk", ec_add(c, vx(c, k, cp->k0), ec_mul(c, vx(c, k, kt), cx(c, WG_BK))));
  int r = gc_ec_let(c, k, b, "tap", quo(c, vx(c, k, kk), ge->C));
  int dh = gc_ec_let(c, k, b, "dh", ec_mul(c, quo(c, vx(c, k, r), ge->kern[1]), cx(c, ge->dil[0])));
  int dw = gc_ec_let(c, k, b, "dw", ec_mul(c, rem(c, vx(c, k, r), ge->kern[1]), cx(c, ge->dil[1])));
  int ch = gc_ec_let(c, k, b, "cin", rem(c, vx(c, k, kk), ge->C));
  int kin = gc_ec_let(c, k, b, "kin", lt(c, vx(c, k, kk), cx(c, K)));
  for (int i = 0; i < cp->n; i++) {
    int ih = gc_ec_let(c, k, b, "ih", ec_add(c, vx(c, k, nh->ih0[i]), vx(c, k, dh)));
    int iw = gc_ec_let(c, k, b, "iw", ec_add(c, vx(c, k, nh->iw0[i]), vx(c, k, dw)));
    kir_expr *in = ec_bin(c, KIR_AND, ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, vx(c, k, ih), cx(c, 0)), lt(c, vx(c, k, ih), cx(c, ge->H))),
                          ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, vx(c, k, iw), cx(c, 0)), lt(c, vx(c, k, iw), cx(c, ge->W))));
    kir_expr *rok = lt(c, ec_add(c, vx(c, k, cp->o0), cx(c, i * cp->ostep)), cx(c, cp->outer));
    int pred = gc_ec_let(c, k, b, "ok", ec_bin(c, KIR_AND, ec_bin(c, KIR_AND, rok, vx(c, k, kin)), in));
    kir_expr *off = ec_add(c, vx(c, k, nh->nb[i]),
                           ec_add(c, ec_mul(c, ec_add(c, ec_mul(c, vx(c, k, ih), cx(c, ge->W)), vx(c, k, iw)), cx(c, ge->C)),
                                  vx(c, k, ch)));
    /* no address outside x, even for a copy that reads nothing */
    kir_expr *gi = kir_select(c->km, vx(c, k, pred), off, cx(c, 0));
    kir_emit_cp_async(c->km, b, sh, ec_add(c, vx(c, k, sbase), cx(c, i * cp->sstep)), param, gi, vx(c, k, pred));
  }
}

/* Copies of an MN-major B tile (64 K x bn N, N contiguous) stored as bn / 64 blocks of
 * 64 K rows x 64 N: chunk column tid % (bn / 8) (block cn / 8, chunk cn % 8 in it), K rows
 * tid / (bn / 8) + (256 / (bn / 8)) i, a multiple of 8 apart: one swizzle key per thread. */
static void wg_plan_nmajor(gc_lowerer *c, kir_kernel *k, kir_block *b, int tid, const tc_opnd *o, int base,
                           int n0, int64_t N, int bn, wg_copy *cp) {
  int cpr = bn / cp->epc;
  int cn = gc_ec_let(c, k, b, "cn", rem(c, vx(c, k, tid), cpr));
  int kr = gc_ec_let(c, k, b, "krow", quo(c, vx(c, k, tid), cpr));
  cp->n = cp->bk * cpr / cp->nt;
  if (cp->pad) {  /* plain rows of K, pad elements apart */
    cp->sidx = gc_ec_let(c, k, b, "sidx", ec_add(c, ec_mul(c, vx(c, k, kr), cx(c, cp->pad)),
                                                ec_mul(c, vx(c, k, cn), cx(c, cp->epc))));
    cp->sstep = (cp->nt / cpr) * cp->pad;
  } else {
    kir_expr *key = rem(c, vx(c, k, kr), 8);
    kir_expr *blk = ec_mul(c, quo(c, vx(c, k, cn), 8), cx(c, WG_BK * WG_ROW));
    kir_expr *chunk = ec_mul(c, ec_bin(c, KIR_XOR, rem(c, vx(c, k, cn), 8), key), cx(c, WG_EPC));
    cp->sidx = gc_ec_let(c, k, b, "sidx", ec_add(c, blk, ec_add(c, ec_mul(c, vx(c, k, kr), cx(c, WG_ROW)), chunk)));
    cp->sstep = (cp->nt / cpr) * WG_ROW;
  }
  cp->o0 = gc_ec_let(c, k, b, "ncol", ec_add(c, vx(c, k, n0), ec_mul(c, vx(c, k, cn), cx(c, cp->epc))));
  cp->ostep = 0;
  cp->outer = N;
  cp->k0 = kr;
  cp->k_istep = cp->nt / cpr;  /* a multiple of 8 (wg_tile: no 64 x 256 tiles) */
  cp->gidx = gc_ec_let(c, k, b, "gidx", ec_add(c, ec_add(c, vx(c, k, base), ec_mul(c, vx(c, k, kr), cx(c, o->s_k))),
                                              vx(c, k, cp->o0)));
  cp->gstep = cp->k_istep * o->s_k;
  cp->kstep = cp->bk * o->s_k;
}

/* Both operands' copies of K tile kt into stage slot (A through nh when it is an NHWC im2col). */
static void wg_issue_tile(gc_lowerer *c, kir_kernel *k, kir_block *b, const wg_copy *ca, const wg_nhwc *nh,
                          const wg_copy *cb, int sa, int sb, int pa, int pb, int bm, int bn, int kt, int slot,
                          int64_t K) {
  if (nh)
    wg_issue_nhwc(c, k, b, ca, nh, sa, pa, (int64_t)bm * ca->bk, kt, slot, K);
  else
    wg_issue(c, k, b, ca, sa, pa, (int64_t)bm * ca->bk, kt, slot, K);
  wg_issue(c, k, b, cb, sb, pb, (int64_t)cb->bk * bn, kt, slot, K);
}

/* The tile BM x BN: the first of 128x256 (N above 128), 128x128, 64x128, 64x64 whose grid
 * covers the SMs, else the last (64-wide N tiles only, for N up to 64: 128x64, 64x64; 64-row
 * tiles only when the 128-row grid falls short: M = 127 gets twice the blocks). A tuning
 * file's `tile=wgBMxBN` overrides it. */
static void wg_tile(const gc_lowerer *c, const gc_mm_shape *s, int *bm, int *bn) {
  static const int cand[][2] = {{128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
  int64_t sms = c->t->num_sms > 0 ? c->t->num_sms : 1;
  for (int i = 0; i < 5; i++) {
    int m = cand[i][0], n = cand[i][1];
    if ((n == 256 && s->N <= 128) || (n >= 128 && s->N <= 64) || (n == 64 && s->N > 64)) continue;
    *bm = m;
    *bn = n;
    if (s->batch * ((s->M + m - 1) / m) * ((s->N + n - 1) / n) >= sms) return;
  }
}

/* Which tile this block computes: batch coordinates bco, first row m0 and column n0 (i64
 * vars). Tiles go in groups of WG_GROUP tile rows, columns outer within a group: the blocks
 * running at once share rows of A and columns of B in L2 (8 measured best on the H200, 3-4%
 * over plain row order on 8192^3 and 4096 x 4096 x 1000). */
static void wg_tile_origin(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_mm_shape *s, int BM, int BN,
                           int *bco, int *m0, int *n0) {
  int64_t TM = (s->M + BM - 1) / BM, TN = (s->N + BN - 1) / BN;
  int64_t dims2[2] = {s->batch, TM * TN};
  int co[2];
  gc_ec_unravel(c, k, b, k->item_var, 2, dims2, co);
  gc_mm_batch_coords(c, k, b, s, co[0], bco);
  int64_t per = (int64_t)WG_GROUP * TN;
  int t = co[1];
  int gi = gc_ec_let(c, k, b, "grp", quo(c, vx(c, k, t), per));
  int gs = gc_ec_let(c, k, b, "gsz", ec_bin(c, KIR_MIN, ec_bin(c, KIR_SUB, cx(c, TM), ec_mul(c, vx(c, k, gi), cx(c, WG_GROUP))),
                                            cx(c, WG_GROUP)));
  int gr = gc_ec_let(c, k, b, "gr", rem(c, vx(c, k, t), per));
  kir_expr *tm = ec_add(c, ec_mul(c, vx(c, k, gi), cx(c, WG_GROUP)), ec_bin(c, KIR_REM, vx(c, k, gr), vx(c, k, gs)));
  kir_expr *tn = ec_bin(c, KIR_DIV, vx(c, k, gr), vx(c, k, gs));
  *m0 = gc_ec_let(c, k, b, "m0", ec_mul(c, tm, cx(c, BM)));
  *n0 = gc_ec_let(c, k, b, "n0", ec_mul(c, tn, cx(c, BN)));
}

/* ---- TMA ------------------------------------------------------------------------------------
 * With kir_target.tma the f16 / bf16 kernel fills its stages with bulk tensor copies: thread 0
 * issues one copy per operand box (BN / 64 for an MN-major B) into the stage, and the stage's
 * shared-memory barrier completes when all its bytes have landed; every thread waits on it
 * instead of on its own cp.async groups. TMA's 128-byte swizzle is the layout wgmma reads, and
 * it zero-fills the parts of a box outside the matrix, so no thread computes an address or a
 * bound. */

/* A tensor map over operand o of x (dtype dt) viewed as `inner` contiguous elements x `outer`
 * rows `ostride` elements apart, plus its batch dims (as gc_tc_batch_off: those of extent > 1
 * and non-zero stride; bj[] their indices), box box0 x box1. 0 when TMA cannot express it:
 * a base or stride not a multiple of 16 bytes, a negative stride, or more than 3 batch dims. */
static int wg_tma_geom(const gc_value *x, const tc_opnd *o, gc_dtype dt, int64_t inner, int64_t outer, int64_t ostride,
                       int box0, int box1, kir_tmap *tm, int *nb, int *bj) {
  int64_t es = (int64_t)graphc_dtype_size(dt);
  memset(tm, 0, sizeof *tm);
  if ((o->v.off * es) % 16 || o->v.off < 0 || ostride <= 0 || (ostride * es) % 16) return 0;
  tm->rank = 2;
  tm->dims[0] = inner;
  tm->dims[1] = outer;
  tm->strides[0] = es;
  tm->strides[1] = ostride * es;
  tm->box[0] = box0;
  tm->box[1] = box1;
  tm->offset = o->v.off * es;
  tm->swizzle = 128;
  *nb = 0;
  for (int j = 0; j < o->rank - 2; j++) {
    if (x->type.dims[j] == 1 || o->v.st[j] == 0) continue;
    if (tm->rank == KIR_TMAP_MAX_RANK || o->v.st[j] < 0 || (o->v.st[j] * es) % 16) return 0;
    tm->dims[tm->rank] = x->type.dims[j];
    tm->strides[tm->rank] = o->v.st[j] * es;
    tm->box[tm->rank++] = 1;
    bj[(*nb)++] = j;
  }
  for (int i = 0; i < tm->rank; i++)
    if (tm->dims[i] > ((int64_t)1 << 32) || tm->strides[i] >= ((int64_t)1 << 40)) return 0;
  return 1;
}

/* An operand's tensor map in the kernel: param, and the batch coordinates' expressions. */
typedef struct wg_tma {
  int param;
  int nb;
  int bc[3];   /* i64 vars, or GC_PT_ZERO */
} wg_tma;

static void wg_tma_add(gc_lowerer *c, kir_kernel *k, const char *name, gc_dtype dt, int buf, const kir_tmap *tm,
                       int nb, const int *bj, const tc_opnd *o, const gc_mm_shape *s, const int *bco, wg_tma *w) {
  (void)k;
  w->param = kir_add_tmap(c->km, k, name, dt, buf, tm);
  w->nb = nb;
  for (int i = 0; i < nb; i++) {
    w->bc[i] = bco[bj[i] + s->ob - (o->rank - 2)];
  }
}

/* One box of w at (x0, x1) into shared element sidx, completing on barrier mb[slot]. */
static void wg_tma_box(gc_lowerer *c, kir_kernel *k, kir_block *b, const wg_tma *w, int sh, kir_expr *sidx,
                       kir_expr *x0, kir_expr *x1, int mb, kir_expr *slot) {
  kir_expr *co[KIR_TMAP_MAX_RANK + 1] = {x0, x1};
  for (int i = 0; i < w->nb; i++) co[2 + i] = w->bc[i] == GC_PT_ZERO ? cx(c, 0) : vx(c, k, w->bc[i]);
  kir_emit_tma_load(c->km, b, sh, sidx, w->param, co, mb, slot);
}

/* Thread 0, when `cond`: K tile kt (i64 var) of both operands into stage `slot` (i64 var);
 * elements of es bytes, BK = 128 / es of them per tile row. */
static void wg_tma_tile(gc_lowerer *c, kir_kernel *k, kir_block *b, kir_expr *cond, const wg_tma *ta,
                        const wg_tma *tb, int b_nmajor, int sa, int sb, int mb, int BM, int BN, int kt, int slot,
                        int m0, int n0, int64_t es) {
  kir_block *tb_;
  kir_emit_if(c->km, b, cond, &tb_, NULL);
  const int64_t BK = 128 / es, a_stage = (int64_t)BM * BK, b_stage = BK * BN;
  kir_emit_mbar_expect(c->km, tb_, mb, vx(c, k, slot), (int)((a_stage + b_stage) * es));
  kir_expr *k0 = ec_mul(c, vx(c, k, kt), cx(c, BK));
  wg_tma_box(c, k, tb_, ta, sa, ec_mul(c, vx(c, k, slot), cx(c, a_stage)), k0, vx(c, k, m0), mb, vx(c, k, slot));
  if (!b_nmajor) {
    wg_tma_box(c, k, tb_, tb, sb, ec_mul(c, vx(c, k, slot), cx(c, b_stage)), k0, vx(c, k, n0), mb, vx(c, k, slot));
    return;
  }
  for (int j = 0; j < BN / WG_ROW; j++)  /* blocks of 64 K rows x 64 N */
    wg_tma_box(c, k, tb_, tb, sb, ec_add(c, ec_mul(c, vx(c, k, slot), cx(c, b_stage)), cx(c, (int64_t)j * WG_BK * WG_ROW)),
               ec_add(c, vx(c, k, n0), cx(c, (int64_t)j * WG_ROW)), k0, mb, vx(c, k, slot));
}

kir_kernel *gc_mm_wgmma(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G,
                        const tc_opnd *oa_in, const gc_op *a_nhwc, const tc_opnd *ob_in, int b_nmajor, int bm,
                        int bn, const char *key) {
  const gc_op *op = grp->roots[0];
  const gc_value *A = op->operands[0], *B = op->operands[1];
  gc_dtype dt = A->type.dtype, dtb = B->type.dtype;
  tc_opnd oa = *oa_in, ob = *ob_in;
  int BM = bm, BN = bn;
  if (!((BM == 128 && (BN == 64 || BN == 128 || BN == 256)) || (BM == 64 && (BN == 64 || BN == 128))))
    wg_tile(c, s, &BM, &BN);
  /* a tile row is 128 bytes of K: 64 16-bit elements or 128 8-bit ones (fp8, i8 / u8: K-major only) */
  const int f8 = graphc_dtype_size(dt) == 1, BK = f8 ? 2 * WG_BK : WG_BK, ROW = BK, EPC = f8 ? 2 * WG_EPC : WG_EPC;
  /* fp8: the tensor cores' own fp8 accumulation keeps fewer bits than f32 (measured on the
   * H100, 2026-12-07: 1.6e-2 absolute error at K = 1023 against the exact sum, 0.21 at K = 512
   * on larger values), so each K tile's four wgmmas go into zeroed partial sums that are
   * added to the f32 accumulators in ordinary instructions (the promotion DeepGEMM does every
   * 128 K). The partial sums double the registers: at most 128 columns a tile. */
  const int promote = f8 && !KIR_MMA_IS_INT(kir_mma_byte_kind(dt));
  if (promote && BN == 256) BN = 128;
  const int NT = 2 * BM;  /* a warpgroup (128 threads) per 64 rows */
  GC_ASSERT(!f8 || (!b_nmajor && !a_nhwc));
  const int64_t a_stage = (int64_t)BM * BK, b_stage = (int64_t)BK * BN;
  int64_t TM = (s->M + BM - 1) / BM, TN = (s->N + BN - 1) / BN;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, s->batch * TM * TN, NT);
  k->shared_dynamic = 1;
  snprintf(k->tune_key, sizeof k->tune_key, "%s", key);
  gc_gen_init(G, c, k);
  kir_mma_kind kind = f8 ? (kir_mma_kind)kir_mma_byte_kind(dt) : dt == GRAPHC_DTYPE_F16 ? KIR_MMA_F16 : KIR_MMA_BF16;
  kir_mma_kind kind_b = f8 ? (kir_mma_kind)kir_mma_byte_kind(dtb) : kind;
  const int64_t es = (int64_t)graphc_dtype_size(dt);
  int abuf = c->val_buf[a_nhwc ? a_nhwc->operands[0]->id : oa.v.base->id], bbuf = c->val_buf[ob.v.base->id];
  oa.param = gc_gen_rparam(G, abuf, dt);
  ob.param = gc_gen_rparam(G, bbuf, dtb);
  int sa = kir_add_shared(c->km, k, dt, WG_STAGES * a_stage);
  int sb = kir_add_shared(c->km, k, dtb, WG_STAGES * b_stage);
  kir_tmap tma_a, tma_b;
  int nba = 0, nbb = 0, bja[3], bjb[3];
  int tma = c->t->tma && !a_nhwc && wg_tma_geom(A, &oa, dt, s->K, s->M, oa.s_outer, ROW, BM, &tma_a, &nba, bja) &&
            (b_nmajor ? wg_tma_geom(B, &ob, dtb, s->N, s->K, ob.s_k, ROW, BK, &tma_b, &nbb, bjb)
                      : wg_tma_geom(B, &ob, dtb, s->K, s->N, ob.s_outer, ROW, BN, &tma_b, &nbb, bjb));
  /* TMA: a barrier per stage, initialized once per block: one block per tile */
  int mb = tma ? kir_add_shared(c->km, k, GRAPHC_DTYPE_I64, WG_STAGES) : -1;
  k->one_pass = tma;
  kir_block *b = &k->body;

  int bco[GC_MAX_RANK], m0, n0;
  wg_tile_origin(c, k, b, s, BM, BN, bco, &m0, &n0);
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  int wg = gc_ec_let(c, k, b, "wg", quo(c, vx(c, k, tid), 128));
  wg_copy ca = {.nt = NT, .epc = EPC, .bk = BK}, cb = {.nt = NT, .epc = EPC, .bk = BK};
  wg_nhwc nh = {.op = a_nhwc};
  wg_tma ta = {0}, tb = {0};
  if (tma) {
    wg_tma_add(c, k, "amap", dt, abuf, &tma_a, nba, bja, &oa, s, bco, &ta);
    wg_tma_add(c, k, "bmap", dtb, bbuf, &tma_b, nbb, bjb, &ob, s, bco, &tb);
  } else {
    int abase = a_nhwc ? -1 : gc_ec_let(c, k, b, "abase", gc_tc_batch_off(c, k, A, &oa, s, bco));
    int bbase = gc_ec_let(c, k, b, "bbase", gc_tc_batch_off(c, k, B, &ob, s, bco));
    wg_plan_kmajor(c, k, b, tid, a_nhwc ? NULL : &oa, abase, m0, s->M, BM, &ca);
    if (a_nhwc) wg_plan_nhwc(c, k, b, &ca, &nh);
    if (b_nmajor)
      wg_plan_nmajor(c, k, b, tid, &ob, bbase, n0, s->N, BN, &cb);
    else
      wg_plan_kmajor(c, k, b, tid, &ob, bbase, n0, s->N, BN, &cb);
  }

  int nd = BN / 2, acc[128], part[64];  /* BN 64, 128 or 256; i32 for 8-bit integers */
  gc_dtype accdt = KIR_MMA_IS_INT(kind) ? GRAPHC_DTYPE_I32 : GRAPHC_DTYPE_F32;
  for (int i = 0; i < nd; i++) acc[i] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, accdt, 0.0));
  for (int i = 0; promote && i < nd; i++) part[i] = gc_ec_let(c, k, b, "part", gc_ec_num(c, accdt, 0.0));

  /* prologue: K tiles 0 .. STAGES-3 into stages 0 .. STAGES-3 (a commit group each) */
  int64_t ktiles = (s->K + BK - 1) / BK;
  int first = tma ? gc_ec_let(c, k, b, "first", ec_bin(c, KIR_EQ, vx(c, k, tid), cx(c, 0))) : -1;
  if (tma) {
    kir_block *ib;
    kir_emit_if(c->km, b, vx(c, k, first), &ib, NULL);
    for (int st = 0; st < WG_STAGES; st++) kir_emit_mbar_init(c->km, ib, mb, cx(c, st), 1);
    kir_emit_tmap_acquire(c->km, ib, ta.param);
    kir_emit_tmap_acquire(c->km, ib, tb.param);
    kir_emit_barrier(c->km, b);
  }
  for (int st = 0; st < WG_STAGES - 2; st++) {
    int kt = gc_ec_let(c, k, b, "kt", cx(c, st));
    if (tma) {
      if (st < ktiles) wg_tma_tile(c, k, b, vx(c, k, first), &ta, &tb, b_nmajor, sa, sb, mb, BM, BN, kt, kt, m0, n0, es);
      continue;
    }
    if (st < ktiles) wg_issue_tile(c, k, b, &ca, a_nhwc ? &nh : NULL, &cb, sa, sb, oa.param, ob.param, BM, BN, kt, kt, s->K);
    kir_emit_cp_commit(c->km, b);
  }
  /* this warpgroup's 64 rows of A in a stage */
  int arow = gc_ec_let(c, k, b, "arow", ec_mul(c, vx(c, k, wg), cx(c, 64 * ROW)));

  int kt = gc_ec_var(c, k, "kt", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, kt, cx(c, 0), cx(c, ktiles), cx(c, 1));
  int cs = gc_ec_let(c, k, lb, "cs", rem(c, vx(c, k, kt), WG_STAGES));
  if (tma) {  /* the stage's phase: its (kt / STAGES)-th fill */
    kir_emit_mbar_wait(c->km, lb, mb, vx(c, k, cs), rem(c, quo(c, vx(c, k, kt), WG_STAGES), 2));
  } else {
    kir_emit_cp_wait(c->km, lb, WG_STAGES - 3);
    kir_emit_fence_async(c->km, lb);
  }
  kir_emit_barrier(c->km, lb);
  int as = gc_ec_let(c, k, lb, "as", ec_add(c, ec_mul(c, vx(c, k, cs), cx(c, a_stage)), vx(c, k, arow)));
  int bs = gc_ec_let(c, k, lb, "bs", ec_mul(c, vx(c, k, cs), cx(c, b_stage)));
  kir_emit_wg_fence(c->km, lb);
  const int KS = kir_mma_k(kind);  /* K per wgmma: 32 bytes of each K-major row */
  for (int j = 0; j < BK / KS; j++) {
    /* K step j: 32 bytes into each K-major row; 16 rows = 2 KiB of an MN-major B */
    kir_wg_opnd a = {sa, ec_add(c, vx(c, k, as), cx(c, j * KS)), 16, 1024, 0};
    kir_wg_opnd bo = {sb, ec_add(c, vx(c, k, bs), cx(c, b_nmajor ? j * KS * ROW : j * KS)),
                      b_nmajor ? (int)(BK * ROW * es) : 16, 1024, b_nmajor};
    kir_emit_wgmma(c->km, lb, kind, kind_b, BN, promote ? part : acc, promote && j == 0, &a, &bo);
  }
  kir_emit_wg_commit(c->km, lb);
  kir_emit_wg_wait(c->km, lb, promote ? 0 : 1);
  for (int i = 0; promote && i < nd; i++)  /* the tile's partial sums, complete: into f32 */
    kir_emit_assign(c->km, lb, acc[i], ec_add(c, vx(c, k, acc[i]), vx(c, k, part[i])));
  /* refill tile kt-2's stage (done in both warpgroups) with tile kt+2 */
  int nk = gc_ec_let(c, k, lb, "nk", ec_add(c, vx(c, k, kt), cx(c, WG_STAGES - 2)));
  int ns = gc_ec_let(c, k, lb, "ns", rem(c, vx(c, k, nk), WG_STAGES));
  if (tma) {  /* no copies past K: nothing is in flight after the loop */
    wg_tma_tile(c, k, lb, ec_bin(c, KIR_AND, vx(c, k, first), lt(c, vx(c, k, nk), cx(c, ktiles))), &ta, &tb, b_nmajor, sa, sb,
                mb, BM, BN, nk, ns, m0, n0, es);
    kir_emit_wg_wait(c->km, b, 0);
  } else {
    wg_issue_tile(c, k, lb, &ca, a_nhwc ? &nh : NULL, &cb, sa, sb, oa.param, ob.param, BM, BN, nk, ns, s->K);
    kir_emit_cp_commit(c->km, lb);
    kir_emit_wg_wait(c->km, b, 0);
    /* the zero fills past K still in flight must land before shared memory is reused */
    kir_emit_cp_wait(c->km, b, 0);
  }

  /* epilogue: thread (warp w of the warpgroup, lane l = 4 g + t): accumulator 4j + 2h + e is
   * output (m0 + 64 wg + 16 w + g + 8h, n0 + 8j + 2t + e) */
  int lt_ = gc_ec_let(c, k, b, "lt", rem(c, vx(c, k, tid), 128));
  int lane = gc_ec_let(c, k, b, "lane", rem(c, vx(c, k, lt_), 32));
  kir_expr *r0 = ec_add(c, ec_add(c, vx(c, k, m0), ec_mul(c, vx(c, k, wg), cx(c, 64))),
                        ec_add(c, ec_mul(c, quo(c, vx(c, k, lt_), 32), cx(c, 16)), quo(c, vx(c, k, lane), 4)));
  int rbase = gc_ec_let(c, k, b, "gm0", r0);
  int t2 = gc_ec_let(c, k, b, "t2", ec_mul(c, rem(c, vx(c, k, lane), 4), cx(c, 2)));
  int rows[2], cols[32][2], accv[2 * 32 * 2];
  for (int h = 0; h < 2; h++) rows[h] = gc_ec_let(c, k, b, "gm", ec_add(c, vx(c, k, rbase), cx(c, 8 * h)));
  for (int j = 0; j < BN / 8; j++)
    for (int e = 0; e < 2; e++) {
      cols[j][e] = gc_ec_let(c, k, b, "gn", ec_add(c, ec_add(c, vx(c, k, n0), vx(c, k, t2)), cx(c, 8 * j + e)));
      for (int h = 0; h < 2; h++) accv[(h * (BN / 8) + j) * 2 + e] = acc[4 * j + 2 * h + e];
    }
  gc_tc_store_tile(G, b, grp, s, bco, 2, rows, BN / 8, (const int(*)[2])cols, accv, 1);
  return k;
}

/* ---- tf32 -----------------------------------------------------------------------------------
 * wgmma's tf32 form reads shared operands K-major only, and a row-major B (K x N, the usual
 * weight layout) is N-major. So the kernel computes its tile transposed, C^T = B^T A^T:
 * wgmma's A (64 rows per warpgroup: 64 output columns) is B^T, loaded from shared memory into
 * registers, where any layout will do; wgmma's B (BM output rows, BM up to 256, its widest N)
 * is A itself, K-major as stored. One BLOCKS group of 128 BN / 64 threads per BM x BN tile
 * (wt_tile), K advancing 32 (128 bytes) at a time through WG_STAGES stages:
 *   - A tile: BM rows x 32 K in 128-byte swizzled rows (the f16 kernel's layout);
 *   - B tile: 32 K rows x BN (B stored K x N) or BN rows x 32 K (stored N x K), plain rows
 *     padded by 8 or 4 floats so that a fragment load (lane (g, t) reads column n + g of row
 *     k + t, or the transpose) touches 32 banks;
 *   - step kt as in the f16 kernel, except that after the barrier every thread loads tile kt's
 *     16 fragment registers. Two sets of them alternate (the loop takes tiles in pairs, an odd
 *     last tile paired with a zero-filled one), so no register of the group still in flight
 *     is rewritten.
 * Accumulator d[4j + 2h + e] of warp w, lane (g, t) of warpgroup wg is output
 * (m0 + 8j + 2t + e, n0 + 64 wg + 16 w + g + 8h).
 * On the H200 (2026-12-02, docs/performance.md) 4096^3 runs at 0.84-0.87x cuBLASLt's tf32
 * (the mma.sync kernel: 0.46x), 8192^3 at 0.68-0.78x. Raster groups of 2-16 tile rows and
 * 128x128 or 128x256 tiles were no faster.
 */
enum { WT_BK = 32, WT_EPC = 4 };

/* BM x BN: the first of 256x128, 128x128, 128x64, 64x128, 64x64 whose grid covers the SMs,
 * else the last allowed: 256 rows only for M above 128, 128 only above 64, 128 columns only
 * for N above 64. */
static void wt_tile(const gc_lowerer *c, const gc_mm_shape *s, int *bm, int *bn) {
  static const int cand[][2] = {{256, 128}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
  int64_t sms = c->t->num_sms > 0 ? c->t->num_sms : 1;
  for (int i = 0; i < 5; i++) {
    int m = cand[i][0], n = cand[i][1];
    if ((m == 256 && s->M <= 128) || (m == 128 && s->M <= 64) || (n == 128 && s->N <= 64)) continue;
    *bm = m;
    *bn = n;
    if (s->batch * ((s->M + m - 1) / m) * ((s->N + n - 1) / n) >= sms) return;
  }
}

kir_kernel *gc_mm_wgmma_tf32(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G,
                             const tc_opnd *oa_in, const tc_opnd *ob_in, int b_nmajor, int bm, int bn,
                             const char *key) {
  const gc_op *op = grp->roots[0];
  const gc_value *A = op->operands[0], *B = op->operands[1];
  const gc_dtype F = GRAPHC_DTYPE_F32;
  tc_opnd oa = *oa_in, ob = *ob_in;
  int BM = bm, BN = bn;
  if (!((BM == 256 && BN == 128) || ((BM == 128 || BM == 64) && (BN == 128 || BN == 64)))) {
    BM = BN = 64;
    wt_tile(c, s, &BM, &BN);
  }
  const int NT = 2 * BN;  /* a warpgroup per 64 columns */
  const int bpad = b_nmajor ? BN + 8 : WT_BK + 4;
  const int64_t a_stage = (int64_t)BM * WT_BK, b_stage = (int64_t)(b_nmajor ? WT_BK : BN) * bpad;
  int64_t TM = (s->M + BM - 1) / BM, TN = (s->N + BN - 1) / BN;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, s->batch * TM * TN, NT);
  k->shared_dynamic = 1;
  snprintf(k->tune_key, sizeof k->tune_key, "%s", key);
  gc_gen_init(G, c, k);
  oa.param = gc_gen_rparam(G, c->val_buf[oa.v.base->id], F);
  ob.param = gc_gen_rparam(G, c->val_buf[ob.v.base->id], F);
  int sa = kir_add_shared(c->km, k, F, WG_STAGES * a_stage);
  int sb = kir_add_shared(c->km, k, F, WG_STAGES * b_stage);
  kir_block *b = &k->body;

  int bco[GC_MAX_RANK], m0, n0;
  wg_tile_origin(c, k, b, s, BM, BN, bco, &m0, &n0);
  int abase = gc_ec_let(c, k, b, "abase", gc_tc_batch_off(c, k, A, &oa, s, bco));
  int bbase = gc_ec_let(c, k, b, "bbase", gc_tc_batch_off(c, k, B, &ob, s, bco));
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  wg_copy ca = {.nt = NT, .epc = WT_EPC, .bk = WT_BK}, cb = {.nt = NT, .epc = WT_EPC, .bk = WT_BK, .pad = bpad};
  wg_plan_kmajor(c, k, b, tid, &oa, abase, m0, s->M, BM, &ca);
  if (b_nmajor)
    wg_plan_nmajor(c, k, b, tid, &ob, bbase, n0, s->N, BN, &cb);
  else
    wg_plan_kmajor(c, k, b, tid, &ob, bbase, n0, s->N, BN, &cb);

  int nd = BM / 2, acc[128];
  for (int i = 0; i < nd; i++) acc[i] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, F, 0.0));
  /* this thread's fragment elements: B^T (n, kk) with n = 64 wg + 16 w + g (+ 8), kk = t (+ 4,
   * + 8 j); fbase is (n, t)'s offset in a stage */
  int lt_ = gc_ec_let(c, k, b, "lt", rem(c, vx(c, k, tid), 128));
  int lane = gc_ec_let(c, k, b, "lane", rem(c, vx(c, k, lt_), 32));
  kir_expr *nl = ec_add(c, ec_add(c, ec_mul(c, quo(c, vx(c, k, tid), 128), cx(c, 64)),
                                  ec_mul(c, quo(c, vx(c, k, lt_), 32), cx(c, 16))),
                        quo(c, vx(c, k, lane), 4));
  int nloc = gc_ec_let(c, k, b, "nl", nl);
  int tq = gc_ec_let(c, k, b, "tq", rem(c, vx(c, k, lane), 4));
  int fbase = gc_ec_let(c, k, b, "fb", b_nmajor ? ec_add(c, ec_mul(c, vx(c, k, tq), cx(c, bpad)), vx(c, k, nloc))
                                                : ec_add(c, ec_mul(c, vx(c, k, nloc), cx(c, bpad)), vx(c, k, tq)));
  int fr[2][WT_BK / 8][4];
  for (int h = 0; h < 2; h++)
    for (int j = 0; j < WT_BK / 8; j++)
      for (int q = 0; q < 4; q++) fr[h][j][q] = gc_ec_var(c, k, "fa", F);
  int rv[4];
  for (int e = 0; e < 4; e++) rv[e] = gc_ec_var(c, k, "ra", F);

  /* tiles 0 .. 2 kpairs - 1: the last one zero-filled when K has an odd number of tiles */
  int64_t ktiles = (s->K + WT_BK - 1) / WT_BK, kpairs = (ktiles + 1) / 2;
  for (int st = 0; st < WG_STAGES - 2; st++) {
    int kt = gc_ec_let(c, k, b, "kt", cx(c, st));
    if (st < 2 * kpairs) {
      wg_issue(c, k, b, &ca, sa, oa.param, a_stage, kt, kt, s->K);
      wg_issue(c, k, b, &cb, sb, ob.param, b_stage, kt, kt, s->K);
    }
    kir_emit_cp_commit(c->km, b);
  }
  int kp = gc_ec_var(c, k, "kp", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, kp, cx(c, 0), cx(c, kpairs), cx(c, 1));
  for (int h = 0; h < 2; h++) {
    int kt = gc_ec_let(c, k, lb, "kt", ec_add(c, ec_mul(c, vx(c, k, kp), cx(c, 2)), cx(c, h)));
    kir_emit_cp_wait(c->km, lb, WG_STAGES - 3);
    kir_emit_fence_async(c->km, lb);
    kir_emit_barrier(c->km, lb);
    int cs = gc_ec_let(c, k, lb, "cs", rem(c, vx(c, k, kt), WG_STAGES));
    int as = gc_ec_let(c, k, lb, "as", ec_mul(c, vx(c, k, cs), cx(c, a_stage)));
    int bs = gc_ec_let(c, k, lb, "bs", ec_add(c, ec_mul(c, vx(c, k, cs), cx(c, b_stage)), vx(c, k, fbase)));
    /* the tensor cores truncate f32 bits to tf32: round the A tile to nearest in place
     * (each thread 4-float vectors tid, tid + NT, ...; generic stores, then a proxy fence and
     * a barrier before wgmma reads them), and the B^T fragments as they reach registers */
    for (int r = 0; c->t->tf32_round && r < BM * WT_BK / 4 / NT; r++) {
      kir_expr *ix = ec_add(c, vx(c, k, as), ec_mul(c, ec_add(c, ec_cast(c, GRAPHC_DTYPE_I64, vx(c, k, tid)),
                                                               cx(c, (int64_t)NT * r)), cx(c, 4)));
      int ixv = gc_ec_let(c, k, lb, "rix", ix);
      kir_expr *vals[4];
      kir_emit_load_vec(c->km, lb, KIR_SHARED, sa, vx(c, k, ixv), 4, rv);
      for (int e = 0; e < 4; e++) {
        gc_tc_round_tf32(c, k, lb, rv[e]);
        vals[e] = vx(c, k, rv[e]);
      }
      kir_emit_store_vec(c->km, lb, KIR_SHARED, sa, vx(c, k, ixv), 4, vals);
    }
    if (c->t->tf32_round) {
      kir_emit_fence_async(c->km, lb);
      kir_emit_barrier(c->km, lb);
    }
    for (int j = 0; j < WT_BK / 8; j++)
      for (int q = 0; q < 4; q++) {
        int dn = 8 * (q % 2), dk = 8 * j + 4 * (q / 2);
        int64_t off = b_nmajor ? (int64_t)dk * bpad + dn : (int64_t)dn * bpad + dk;
        kir_emit_assign(c->km, lb, fr[h][j][q], kir_load(c->km, k, KIR_SHARED, sb, ec_add(c, vx(c, k, bs), cx(c, off))));
        if (c->t->tf32_round) gc_tc_round_tf32(c, k, lb, fr[h][j][q]);
      }
    kir_emit_wg_fence(c->km, lb);
    for (int j = 0; j < WT_BK / 8; j++) {
      /* K step j: 8 K values = 32 bytes into each 128-byte row of A */
      kir_wg_opnd bo = {sa, ec_add(c, vx(c, k, as), cx(c, j * 8)), 16, 8 * 128, 0};
      kir_emit_wgmma_ra(c->km, lb, BM, acc, fr[h][j], &bo);
    }
    kir_emit_wg_commit(c->km, lb);
    kir_emit_wg_wait(c->km, lb, 1);
    /* refill tile kt-2's stage (done in both warpgroups) with tile kt+2 */
    int nk = gc_ec_let(c, k, lb, "nk", ec_add(c, vx(c, k, kt), cx(c, WG_STAGES - 2)));
    int ns = gc_ec_let(c, k, lb, "ns", rem(c, vx(c, k, nk), WG_STAGES));
    wg_issue(c, k, lb, &ca, sa, oa.param, a_stage, nk, ns, s->K);
    wg_issue(c, k, lb, &cb, sb, ob.param, b_stage, nk, ns, s->K);
    kir_emit_cp_commit(c->km, lb);
  }
  kir_emit_wg_wait(c->km, b, 0);
  kir_emit_cp_wait(c->km, b, 0);

  /* epilogue: rows m0 + 8j + 2t + e (r = 2j + e), columns n0 + nl and + 8 (h) */
  int rows[64], cols[1][2], accv[128];
  int c0 = gc_ec_let(c, k, b, "gn", ec_add(c, vx(c, k, n0), vx(c, k, nloc)));
  cols[0][0] = c0;
  cols[0][1] = gc_ec_let(c, k, b, "gn", ec_add(c, vx(c, k, c0), cx(c, 8)));
  int t2 = gc_ec_let(c, k, b, "t2", ec_add(c, vx(c, k, m0), ec_mul(c, vx(c, k, tq), cx(c, 2))));
  for (int j = 0; j < BM / 8; j++)
    for (int e = 0; e < 2; e++) {
      int r = 2 * j + e;
      rows[r] = gc_ec_let(c, k, b, "gm", ec_add(c, vx(c, k, t2), cx(c, 8 * j + e)));
      for (int h = 0; h < 2; h++) accv[r * 2 + h] = acc[4 * j + 2 * h + e];
    }
  gc_tc_store_tile(G, b, grp, s, bco, BM / 4, rows, 1, (const int(*)[2])cols, accv, 0);
  return k;
}
