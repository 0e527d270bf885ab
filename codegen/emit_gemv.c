/* emit_gemv.c - matmuls of a few rows on CUDA (M <= 8: a language model's decode step, a
 * batch-1 linear layer), where a GEMM tile of 32+ rows would compute mostly padding and a
 * grid of N / 64 tiles would leave most SMs idle: the time is reading B once, so the kernel
 * is a bandwidth kernel.
 *
 * B must be a 16-byte aligned strided window with K contiguous (a [N, K] weight used with
 * transpose_b, as Hugging Face and ONNX Gemm store linears). A group of LPC lanes owns one
 * output column n (LPC = 32, or fewer when K has fewer than 32 16-byte vectors: then a warp
 * takes 32 / LPC columns); its lanes walk B's row n in 16-byte vectors, vector j to lane
 * j % LPC, GV_UNROLL vectors each before any arithmetic (four loads in flight per lane), and
 * keep one f32 sum per row of A. A is read as 16-byte vectors too when it is such a window
 * (the usual case: a materialized activation), else element by element through the group's
 * generator (a view or a prologue the group computes). The LPC partial sums of each row
 * meet by shuffles; the group's first lane stores row m's output through the epilogue.
 * GV_WARPS warps a block, a block per group of columns (one_pass); columns past N read row
 * N - 1 and store nothing.
 *
 * On the host (gv_host) an item owns one column and keeps W f32 partial sums per row of A, W
 * two SIMD registers of f32 lanes (two FMA chains): a step
 * of W consecutive K values is W independent multiply-adds on consecutive loads of B's row
 * and A's, which LLVM's SLP vectorizer turns into vector FMAs; a scalar loop takes the K
 * tail, the lanes are summed in order and the epilogue stores. The register-tiled host
 * matmul vectorizes across N and read a [N, K] weight with a stride of K: 12% of copy
 * bandwidth on a Llama-3.2-1B decode step.
 */
#include "codegen/emit_tc.h"

enum { GV_WARPS = 4, GV_MAXM = 8, GV_UNROLL = 4 };

static kir_expr *cx(gc_lowerer *c, int64_t v) { return ec_i64(c, v); }
static kir_expr *vx(gc_lowerer *c, kir_kernel *k, int v) { return ec_v(c, k, v); }

/* The K-contiguous, 16-byte aligned window of operand x whose logical (row, k) are its
 * own (last-2, last-1) dims, or swapped when `swap`. */
static int gv_window(const gc_lowerer *c, const gc_value *x, int swap, int epc, tc_opnd *o) {
  int r = x->type.rank;
  return gc_tc_operand(c, x, swap, o) && o->s_k == 1 && gc_tc_aligned(x, o, swap ? r - 2 : r - 1, epc);
}

/* The kernel over batch x nb groups of output columns (both targets): the generator set up,
 * the output batch coordinates in bco, the group's index among the nb in *gi (a var). */
static kir_kernel *gv_kernel(gc_lowerer *c, gc_gen *G, const gc_mm_shape *s, kir_launch_kind kind, int64_t nb,
                             int block, int *bco, int *gi) {
  kir_kernel *k = gc_ec_kernel(c, kind, s->batch * nb, block);
  gc_gen_init(G, c, k);
  int64_t dims2[2] = {s->batch, nb};
  int co[2];
  gc_ec_unravel(c, k, &k->body, k->item_var, 2, dims2, co);
  gc_mm_batch_coords(c, k, &k->body, s, co[0], bco);
  *gi = co[1];
  return k;
}

/* A(m, k) for vars m and k: a load of its window when pa >= 0, else through the generator. */
static kir_expr *gv_a(gc_gen *G, kir_block *b, const gc_value *A, const gc_mm_shape *s, const int *bco, int pa,
                      int arow, int m, int kk) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  if (pa >= 0)
    return ec_cast(c, GRAPHC_DTYPE_F32, kir_load(c->km, k, KIR_GLOBAL, pa, ec_add(c, vx(c, k, arow), vx(c, k, kk))));
  int v = s->ta ? gc_mm_operand(G, b, A, s, bco, kk, m) : gc_mm_operand(G, b, A, s, bco, m, kk);
  return ec_cast(c, GRAPHC_DTYPE_F32, vx(c, k, v));
}

/* The host kernel (see the top). */
static kir_kernel *gv_host(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G,
                           const tc_opnd *ob) {
  enum { MAXW = 32 };
  const gc_op *op = grp->roots[0];
  const gc_value *A = op->operands[0], *B = op->operands[1];
  const gc_dtype dt = B->type.dtype, F = GRAPHC_DTYPE_F32;
  /* two vector registers of f32 partial sums: two independent FMA chains */
  int W = 2 * (c->t->simd_bytes >= 16 ? c->t->simd_bytes / 4 : 4);
  if (W > MAXW) W = MAXW;
  /* one column an item: with 2 or 4 (A loaded once for them) SLP vectorized across the columns
   * instead, 2-3x slower; the loops keep NC general */
  const int NC = 1;
  tc_opnd oa;
  int a_win = gc_tc_operand(c, A, s->ta, &oa) && oa.s_k == 1 && A->type.dtype == dt;
  int bco[GC_MAX_RANK], gi;
  kir_kernel *k = gv_kernel(c, G, s, KIR_LAUNCH_ITEMS, (s->N + NC - 1) / NC, 64, bco, &gi);
  kir_block *b = &k->body;
  int n0 = gc_ec_let(c, k, b, "n0", ec_mul(c, vx(c, k, gi), cx(c, NC)));
  int pb = gc_gen_rparam(G, c->val_buf[ob->v.base->id], dt);
  kir_expr *boff = gc_tc_batch_off(c, k, B, ob, s, bco);
  int brow[4], mrow[GV_MAXM], arow[GV_MAXM], pa = -1;
  for (int j = 0; j < NC; j++) {
    kir_expr *n = ec_bin(c, KIR_MIN, ec_add(c, vx(c, k, n0), cx(c, j)), cx(c, s->N - 1));
    brow[j] = gc_ec_let(c, k, b, "brow", ec_add(c, boff, ec_mul(c, n, cx(c, ob->s_outer))));
  }
  if (a_win) pa = gc_gen_rparam(G, c->val_buf[oa.v.base->id], dt);
  for (int m = 0; m < s->M; m++) {
    mrow[m] = gc_ec_let(c, k, b, "m", cx(c, m));
    arow[m] = a_win ? gc_ec_let(c, k, b, "arow", ec_add(c, gc_tc_batch_off(c, k, A, &oa, s, bco),
                                                        cx(c, (int64_t)m * oa.s_outer)))
                    : -1;
  }
  int acc[GV_MAXM][4][MAXW], bv[MAXW];
  for (int m = 0; m < s->M; m++)
    for (int j = 0; j < NC; j++)
      for (int l = 0; l < W; l++) acc[m][j][l] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, F, 0.0));
  for (int l = 0; l < W; l++) bv[l] = gc_ec_var(c, k, "bv", F);
  int64_t KW = s->K / W * W;
  for (int pass = 0; pass < 2; pass++) {
    int U = pass ? 1 : W;
    if (pass ? KW == s->K : KW == 0) continue;
    int k0 = gc_ec_var(c, k, "k0", GRAPHC_DTYPE_I64);
    kir_block *lb = kir_emit_for(c->km, b, k0, cx(c, pass ? KW : 0), cx(c, pass ? s->K : KW), cx(c, U));
    int kk[MAXW];
    for (int l = 0; l < U; l++) kk[l] = gc_ec_let(c, k, lb, "kk", ec_add(c, vx(c, k, k0), cx(c, l)));
    for (int j = 0; j < NC; j++) {
      for (int l = 0; l < U; l++)
        kir_emit_assign(c->km, lb, bv[l],
                        ec_cast(c, F, kir_load(c->km, k, KIR_GLOBAL, pb, ec_add(c, vx(c, k, brow[j]), vx(c, k, kk[l])))));
      for (int m = 0; m < s->M; m++) {
        gc_gen_push(G);
        for (int l = 0; l < U; l++) {
          kir_expr *a = gv_a(G, lb, A, s, bco, pa, a_win ? arow[m] : -1, mrow[m], kk[l]);
          kir_emit_assign(c->km, lb, acc[m][j][l],
                          ec_add(c, vx(c, k, acc[m][j][l]), ec_mul(c, a, vx(c, k, bv[l]))));
        }
        gc_gen_pop(G);
      }
    }
  }
  for (int j = 0; j < NC; j++) {
    kir_block *tb;
    kir_emit_if(c->km, b, ec_bin(c, KIR_LT, ec_add(c, vx(c, k, n0), cx(c, j)), cx(c, s->N)), &tb, NULL);
    int n = gc_ec_let(c, k, tb, "n", ec_add(c, vx(c, k, n0), cx(c, j)));
    for (int m = 0; m < s->M; m++) {
      /* the lanes in order: with a pairwise tree here LLVM's SLP vectorizer paired lanes
       * (l, l + w) and ran the loop above two lanes wide (8 GB/s instead of 14.7 for a bf16
       * row on AVX2) */
      for (int l = 1; l < W; l++)
        kir_emit_assign(c->km, tb, acc[m][j][0], ec_add(c, vx(c, k, acc[m][j][0]), vx(c, k, acc[m][j][l])));
      gc_gen_push(G);
      int pt = gc_mm_out_point(G, op->results[0], s, bco, mrow[m], n, -1);
      gc_mm_epilogue(G, tb, grp, pt, vx(c, k, acc[m][j][0]));
      gc_gen_pop(G);
    }
  }
  return k;
}

kir_kernel *gc_mm_gemv(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G) {
  const gc_op *op = grp->roots[0];
  const gc_value *A = op->operands[0], *B = op->operands[1];
  gc_dtype dt = B->type.dtype;
  if (c->t->kind == KIR_TARGET_HOST) {
    tc_opnd ob;
    if (s->M > GV_MAXM || s->M < 1 || s->N < 1 || s->K < 16 || A->type.dtype != dt ||
        (dt != GRAPHC_DTYPE_F16 && dt != GRAPHC_DTYPE_BF16 && dt != GRAPHC_DTYPE_F32) ||
        !gc_tc_operand(c, B, !s->tb, &ob) || ob.s_k != 1)
      return NULL;
    return gv_host(c, grp, s, G, &ob);
  }
  if (c->t->kind != KIR_TARGET_CUDA || s->M > GV_MAXM || s->M < 1 || s->N < 1 ||
      (dt != GRAPHC_DTYPE_F16 && dt != GRAPHC_DTYPE_BF16 && dt != GRAPHC_DTYPE_F32) ||
      A->type.dtype != dt)
    return NULL;
  const int V = 16 / (int)graphc_dtype_size(dt);
  tc_opnd ob, oa;
  if (s->K % V || !gv_window(c, B, !s->tb, V, &ob)) return NULL;
  int a_vec = gv_window(c, A, s->ta, V, &oa);
  int64_t KV = s->K / V;  /* vectors per row */
  int LPC = 32;
  while (LPC > 1 && LPC / 2 >= KV) LPC /= 2;
  const int CPW = 32 / LPC, CPB = CPW * GV_WARPS;  /* columns per warp, per block */
  int bco[GC_MAX_RANK], gi;
  kir_kernel *k = gv_kernel(c, G, s, KIR_LAUNCH_BLOCKS, (s->N + CPB - 1) / CPB, 32 * GV_WARPS, bco, &gi);
  if (k->launch.n <= INT32_MAX) k->one_pass = 1;  /* a block per group: no grid-stride loop (kir.h) */
  kir_block *b = &k->body;
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  int sub = gc_ec_let(c, k, b, "sub", ec_bin(c, KIR_REM, vx(c, k, tid), cx(c, LPC)));
  int n = gc_ec_let(c, k, b, "n", ec_add(c, ec_mul(c, vx(c, k, gi), cx(c, CPB)),
                                         ec_bin(c, KIR_DIV, vx(c, k, tid), cx(c, LPC))));
  kir_expr *nr = ec_bin(c, KIR_MIN, vx(c, k, n), cx(c, s->N - 1));
  int pb = gc_gen_rparam(G, c->val_buf[ob.v.base->id], dt);
  int brow = gc_ec_let(c, k, b, "brow", ec_add(c, gc_tc_batch_off(c, k, B, &ob, s, bco),
                                                ec_mul(c, nr, cx(c, ob.s_outer))));
  int pa = -1, arow[GV_MAXM], mrow[GV_MAXM];
  for (int m = 0; m < s->M; m++) mrow[m] = gc_ec_let(c, k, b, "m", cx(c, m));
  if (a_vec) {
    pa = gc_gen_rparam(G, c->val_buf[oa.v.base->id], dt);
    kir_expr *a0 = gc_tc_batch_off(c, k, A, &oa, s, bco);
    for (int m = 0; m < s->M; m++)
      arow[m] = gc_ec_let(c, k, b, "arow", ec_add(c, a0, cx(c, (int64_t)m * oa.s_outer)));
  }
  int acc[GV_MAXM];
  for (int m = 0; m < s->M; m++) acc[m] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, GRAPHC_DTYPE_F32, 0.0));
  int breg[GV_UNROLL][8], areg[8];
  for (int u = 0; u < GV_UNROLL; u++)
    for (int e = 0; e < V; e++) breg[u][e] = gc_ec_var(c, k, "bv", dt);
  for (int e = 0; e < V; e++) areg[e] = gc_ec_var(c, k, "av", dt);

  /* vectors j = it * LPC * U + u * LPC + sub: whole rounds of U, then one at a time */
  int64_t full = KV / ((int64_t)LPC * GV_UNROLL);
  for (int pass = 0; pass < 2; pass++) {
    int U = pass ? 1 : GV_UNROLL;
    int it = gc_ec_var(c, k, "it", GRAPHC_DTYPE_I64);
    kir_block *lb;
    if (!pass) {
      if (full == 0) continue;
      lb = kir_emit_for(c->km, b, it, cx(c, 0), cx(c, full), cx(c, 1));
    } else {
      if (full * LPC * GV_UNROLL == KV) break;
      lb = kir_emit_for(c->km, b, it, ec_add(c, cx(c, full * LPC * GV_UNROLL), vx(c, k, sub)), cx(c, KV),
                        cx(c, LPC));
    }
    int jv[GV_UNROLL];
    for (int u = 0; u < U; u++) {
      kir_expr *j = pass ? vx(c, k, it)
                         : ec_add(c, ec_mul(c, vx(c, k, it), cx(c, (int64_t)LPC * U)),
                                  ec_add(c, cx(c, (int64_t)u * LPC), vx(c, k, sub)));
      jv[u] = gc_ec_let(c, k, lb, "j", j);
      kir_emit_load_vec(c->km, lb, KIR_GLOBAL, pb, ec_add(c, vx(c, k, brow), ec_mul(c, vx(c, k, jv[u]), cx(c, V))),
                        V, breg[u]);
    }
    for (int u = 0; u < U; u++)
      for (int m = 0; m < s->M; m++) {
        gc_gen_push(G);
        int av[8];
        if (a_vec) {
          kir_emit_load_vec(c->km, lb, KIR_GLOBAL, pa,
                            ec_add(c, vx(c, k, arow[m]), ec_mul(c, vx(c, k, jv[u]), cx(c, V))), V, areg);
          for (int e = 0; e < V; e++) av[e] = areg[e];
        } else {
          for (int e = 0; e < V; e++) {
            int kk = gc_ec_let(c, k, lb, "kk", ec_add(c, ec_mul(c, vx(c, k, jv[u]), cx(c, V)), cx(c, e)));
            av[e] = s->ta ? gc_mm_operand(G, lb, A, s, bco, kk, mrow[m]) : gc_mm_operand(G, lb, A, s, bco, mrow[m], kk);
          }
        }
        kir_expr *sum = vx(c, k, acc[m]);
        for (int e = 0; e < V; e++)
          sum = ec_add(c, sum, ec_mul(c, ec_cast(c, GRAPHC_DTYPE_F32, vx(c, k, av[e])),
                                      ec_cast(c, GRAPHC_DTYPE_F32, vx(c, k, breg[u][e]))));
        kir_emit_assign(c->km, lb, acc[m], sum);
        gc_gen_pop(G);
      }
  }
  for (int m = 0; m < s->M; m++)
    for (int w = LPC / 2; w >= 1; w /= 2)
      kir_emit_assign(c->km, b, acc[m], ec_add(c, vx(c, k, acc[m]), kir_shfl_xor(c->km, vx(c, k, acc[m]), w)));

  kir_block *tb;
  kir_emit_if(c->km, b, ec_bin(c, KIR_AND, ec_bin(c, KIR_EQ, vx(c, k, sub), cx(c, 0)),
                              ec_bin(c, KIR_LT, vx(c, k, n), cx(c, s->N))), &tb, NULL);
  for (int m = 0; m < s->M; m++) {
    gc_gen_push(G);
    int pt = gc_mm_out_point(G, op->results[0], s, bco, mrow[m], n, -1);
    gc_mm_epilogue(G, tb, grp, pt, vx(c, k, acc[m]));
    gc_gen_pop(G);
  }
  return k;
}
