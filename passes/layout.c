/* layout.c - layout selection: convolutions in NHWC, transposes sunk until they cancel.
 *
 * 1. Each conv2d that can be a GEMM (groups 1, concrete shapes) and runs faster in
 *    NHWC (nhwc_pays: f16 / bf16 with channel counts in 16-byte chunks, or f32 in 16-byte
 *    chunks when tf32 is on (--precision tf32 / --tf32: the tensor cores take them); or the pair
 *    form, 1b) becomes an NHWC implicit GEMM, whatever layout its input arrived in:
 *
 *      t = transpose(x, perm=[0, 2, 3, 1])                  [N, H, W, C]
 *      a = im2col(t, kernel, stride, padding, dilation, layout="nhwc")
 *                                                           [N*OH*OW, KH*KW*C]
 *          (reshape(t, shape=[N*H*W, C]) for a 1x1 window, stride 1, no padding)
 *      b = reshape(transpose(w, perm=[2, 3, 1, 0]), shape=[KH*KW*C, O])
 *      m = matmul(a, b)                                     [N*OH*OW, O]
 *      y = transpose(reshape(m, shape=[N, OH, OW, O]), perm=[0, 3, 1, 2])
 *
 *    One GEMM for the whole batch: M is every output pixel of every image (a
 *    7x7 layer at batch 64 has M 3136, where the NCHW form has N 49 per image);
 *    K runs along the channels, contiguous in memory, so an operand chunk of 8
 *    K values is one 16-byte load; the output is NHWC, the bias (along O) is a
 *    row vector of the epilogue.
 *
 * 1b. The pair form, for a stem: fewer than 4 channels (f16 / bf16, O in whole
 *    chunks), dilation 1, an even stride along W and an even W. The channels are
 *    padded to 4 and the window to an even width KW2 (zero taps: e = pad_left % 2 in
 *    front, so that the left padding becomes even, and one at the back if needed; the
 *    right padding the least that keeps OW), so that a chunk of 8 K values,
 *    kk = (kh*KW2 + kw)*4 + c, is the 4 channels of two horizontally adjacent pixels
 *    iw, iw + 1 with iw = ow*stride - pad_left + kw even: both inside the even W or
 *    both outside, one 16-byte load (emit_mma.c / emit_wgmma.c) instead of elements:
 *
 *      t4 = pad(transpose(x, perm=[0, 2, 3, 1]), pads=[0, 0, 0, 0, 0, 0, 0, 4 - C])
 *      a  = im2col(t4, kernel=[KH, KW2], stride, padding=[t, l + e, b, r'], layout="nhwc")
 *                                                           [N*OH*OW, KH*KW2*4]
 *      b  = reshape(pad(transpose(w, perm=[2, 3, 1, 0]), pads=[0, e, 0, 0, 0, KW2 - KW - e, 4 - C, 0]),
 *                   shape=[KH*KW2*4, O])
 *
 *    (the 7x7 stride-2 stem with padding 3 on 3 channels: KW2 = 8, padding [3, 4, 3, 2],
 *    K = 224 instead of 147 elements, where padding the channels to 8 made K 392 and
 *    ran slower). Measured on the H200, resnet_f16 at N=64 with the LLVM path: the stem
 *    0.162 ms on the wgmma kernel plus 0.044 ms for t4, where the NCHW stem took 0.294 ms
 *    and the copy of its pool's output to NHWC 0.059; the model 0.680 -> 0.556 ms (NVRTC
 *    0.747 -> 0.726: its code for the stem kernel takes 0.29 ms). The zero taps and
 *    channels add exact zeros. Fusion materializes t4
 *    (one small loop kernel with the transpose: a pad is no view) and the padded
 *    weight; the matmul reads both in 16-byte chunks. With exactly 4 channels x
 *    itself would be the im2col's input, a transpose that fusion reads in place
 *    (feeds_nhwc_im2col copies only whole chunks of channels): left in NCHW.
 *
 * 1c. A grouped or depthwise conv2d (groups > 1, no GEMM) in f16 / bf16 becomes the
 *    NHWC direct conv of codegen/emit_dwconv.c, the layout of the GEMM convs around it
 *    (mobilenet's 1x1 -> depthwise 3x3 -> 1x1), so that their transposes cancel:
 *
 *      y = transpose(conv2d(transpose(x, perm=[0, 2, 3, 1]), w, ..., layout="nhwc"),
 *                    perm=[0, 3, 1, 2])
 *
 *    w stays [O, C/groups, KH, KW]; each thread computes a few adjacent output channels
 *    of a few pixels, its loads along the contiguous channels (one vector load per
 *    input pixel for a depthwise conv). Windows wider than 16 taps (what the kernel holds
 *    in registers) and f32 convs (whose neighbours stay NCHW) keep NCHW.
 *
 * 2. A transpose that feeds an elementwise op sinks below it:
 *
 *      e(transpose(a, p), b) -> transpose(e(a, b'), p)
 *
 *    where b' is b permuted back: the input of a transpose by the same p, else
 *    transpose(b, inverse(p)) (a lower-rank b, which broadcasts, first gets its
 *    leading 1s through a reshape; a scalar stays as it is). One walk in program
 *    order, so a transpose moves down chains of elementwise ops (bias, residual
 *    add, activation, cast) until something else reads it. Between two convs it
 *    then meets the next conv's transpose(.., perm=[0, 2, 3, 1]); simplify
 *    composes the two into nothing, and the chain stays NHWC. A reduction reads
 *    through its transpose: reduce(transpose(a, p), axes) becomes
 *    reduce(a, p(axes)) (a global average pool over NHWC's H and W).
 *
 * 3. A window pool of an NHWC tensor pools it in NHWC, in the same walk:
 *
 *      pool(transpose(a, perm=[0, 3, 1, 2])) -> transpose(pool(a, layout="nhwc"), perm=[0, 3, 1, 2])
 *
 *    so the transpose sinks on (residual add, relu) and cancels against the next
 *    conv's: a conv -> pool -> conv chain stays NHWC, and the pool's consecutive
 *    threads read consecutive channels (coalesced) instead of NHWC through an NCHW
 *    index map. A pool of an NCHW tensor (after a conv that stays NCHW, such as an
 *    f32 stem) is left as it is.
 *
 *    What is left are transposes at the graph's inputs and outputs and around ops
 *    without an NHWC form or left in NCHW (reshapes, NCHW convs and the pools after
 *    them): index maps that fusion reads in place (strided) or copies once.
 *
 * The choice is visible in the printed IR (--print-after=layout). Not run for the
 * interpreter, the float64 reference, which keeps conv2d whole; with the pass
 * disabled (--disable-pass=layout) conv-gemm writes the NCHW form.
 */
#include <string.h>

#include "passes/rewrite.h"

/* transpose(v, perm) before `before`. NULL on OOM (flagged). */
static gc_value *transpose_of(gc_rewriter *rw, gc_op *before, gc_value *v, const int64_t *perm) {
  gc_type t = {.dtype = v->type.dtype, .rank = v->type.rank};
  for (int i = 0; i < t.rank; i++) t.dims[i] = v->type.dims[perm[i]];
  gc_named_attr a = {"perm", gc_rw_attr_ints(rw, perm, t.rank)};
  gc_op *op = gc_rw_new_op(rw, GC_OP_TRANSPOSE, before, 1, &v, 1, &a, &t, NULL, before->loc);
  return op ? op->results[0] : NULL;
}

/* The perms between the layouts: NCHW -> NHWC and back. */
static const int64_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};

/* Does the NHWC form pay for conv2d with C input and O output channels? Measured on the
 * H200 (docs/performance.md, layout pass): on the tensor cores (f16, bf16) with whole
 * 16-byte chunks of channels, its im2col loads are one cp.async per 8 channels, and
 * ResNet's 3x3 layers ran 2.0-2.5x faster than in the NCHW form. Otherwise its operand is
 * staged element by element: a 3-channel stem took 1.7x as long (its own form, conv_pairs,
 * loads two pixels per chunk), and the f32 convs (no tensor cores) gained nothing while
 * the pools after them read NCHW through a transpose. */
static int nhwc_pays(gc_dtype dt, int64_t C, int64_t O, int tf32) {
  if (dt == GRAPHC_DTYPE_F32) return tf32 && C % 4 == 0 && O % 4 == 0;
  return (dt == GRAPHC_DTYPE_F16 || dt == GRAPHC_DTYPE_BF16) && C % 8 == 0 && O % 8 == 0;
}

/* A stride / dilation attribute of conv2d `op` (absent: 1, 1) into v[2]. */
static void conv_attr2(const gc_op *op, const char *name, int64_t *v) {
  const gc_attr *a = gc_op_attr(op, name);
  if (!a || gc_attr_ints(a, v, 2) != 2) v[0] = v[1] = 1;
}

/* The pair form (1b at the top) for conv2d `op` of x [N, C, H, W], w [O, C, KH, KW]:
 * f16 / bf16, C below 4, O in whole chunks, dilation 1, an even stride along W and an
 * even W. Returns 1 with the window's new padding pad[4] (t, l, b, r), its width *kw2
 * and the zero taps in front of it *e; 0 when the form does not apply. */
static int conv_pairs(const gc_op *op, int64_t *pad, int64_t *kw2, int64_t *e) {
  const gc_type *xt = &op->operands[0]->type, *wt = &op->operands[1]->type;
  int64_t C = xt->dims[1], W = xt->dims[3], O = wt->dims[0], KW = wt->dims[3];
  int64_t OW = op->results[0]->type.dims[3];
  int64_t st[2], dil[2];
  conv_attr2(op, "stride", st);
  conv_attr2(op, "dilation", dil);
  if ((xt->dtype != GRAPHC_DTYPE_F16 && xt->dtype != GRAPHC_DTYPE_BF16) || C >= 4 || O % 8 != 0 ||
      dil[0] != 1 || dil[1] != 1 || st[1] % 2 != 0 || W % 2 != 0)
    return 0;
  pad[0] = pad[1] = pad[2] = pad[3] = 0;
  const gc_attr *pa = gc_op_attr(op, "padding");
  if (pa && gc_attr_ints(pa, pad, 4) == 2) pad[2] = pad[0], pad[3] = pad[1];
  *e = pad[1] % 2;                 /* a zero tap in front makes the left padding even */
  pad[1] += *e;
  *kw2 = (KW + *e + 1) / 2 * 2;    /* and one at the back, if needed, an even width */
  /* the least right padding that keeps OW (the last window starts at (OW-1)*stride) */
  int64_t pr = (OW - 1) * st[1] + *kw2 - W - pad[1];
  pad[3] = pr > 0 ? pr : 0;
  return 1;
}

/* pad(v, pads) before `before` (zeros; pads = begin..., end... as the op takes them),
 * or v when every entry is 0. NULL on OOM (flagged). */
static gc_value *pad_of(gc_rewriter *rw, gc_op *before, gc_value *v, const int64_t *pads) {
  int r = v->type.rank, any = 0;
  gc_type t = v->type;
  for (int i = 0; i < r; i++) {
    t.dims[i] += pads[i] + pads[r + i];
    any |= pads[i] || pads[r + i];
  }
  if (!any) return v;
  gc_named_attr a = {"pads", gc_rw_attr_ints(rw, pads, 2 * r)};
  gc_op *op = gc_rw_new_op(rw, GC_OP_PAD, before, 1, &v, 1, &a, &t, NULL, before->loc);
  return op ? op->results[0] : NULL;
}

/* Step 1: conv2d -> the NHWC implicit GEMM (see the top; 1b: the pair form). */
static void conv_nhwc(gc_rewriter *rw, gc_op *op, int tf32) {
  if (!gc_conv_gemm_ok(op)) return;
  gc_value *x = op->operands[0], *w = op->operands[1];
  const gc_type *xt = &x->type, *wt = &w->type, *yt = &op->results[0]->type;
  int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];
  int64_t O = wt->dims[0], KH = wt->dims[2], KW = wt->dims[3], OH = yt->dims[2], OW = yt->dims[3];
  int64_t pad[4], KW2 = KW, e = 0;
  int pairs = !nhwc_pays(xt->dtype, C, O, tf32);
  if (pairs && !conv_pairs(op, pad, &KW2, &e)) return;
  static const int64_t w_perm[4] = {2, 3, 1, 0};
  gc_value *t = transpose_of(rw, op, x, to_nhwc);
  if (!t) return;
  gc_value *a;
  if (pairs) {  /* channels padded to 4, the window to KW2 taps (zeros) */
    int64_t xpads[8] = {0, 0, 0, 0, 0, 0, 0, 4 - C};
    t = pad_of(rw, op, t, xpads);
    if (!t) return;
    gc_named_attr at[4];
    int n = 0;
    int64_t kern[2] = {KH, KW2};
    at[n++] = (gc_named_attr){"kernel", gc_rw_attr_ints(rw, kern, 2)};
    const gc_attr *sa = gc_op_attr(op, "stride");
    if (sa) at[n++] = (gc_named_attr){"stride", *sa};
    at[n++] = (gc_named_attr){"padding", gc_rw_attr_ints(rw, pad, 4)};
    at[n++] = (gc_named_attr){"layout", {.kind = GC_ATTR_STR, .u.s = "nhwc"}};
    gc_type it = {.dtype = xt->dtype, .rank = 2, .dims = {N * OH * OW, KH * KW2 * 4}};
    gc_op *im = gc_rw_new_op(rw, GC_OP_IM2COL, op, 1, &t, n, at, &it, NULL, op->loc);
    a = im ? im->results[0] : NULL;
  } else if (gc_conv_is_pointwise(op)) {
    int64_t adims[2] = {N * H * W, C};
    a = gc_rw_reshape(rw, op, t, 2, adims);
  } else {
    gc_named_attr at[5];
    int n = gc_conv_im2col_attrs(rw, op, "nhwc", at);
    gc_type it = {.dtype = xt->dtype, .rank = 2, .dims = {N * OH * OW, KH * KW * C}};
    gc_op *im = gc_rw_new_op(rw, GC_OP_IM2COL, op, 1, &t, n, at, &it, NULL, op->loc);
    a = im ? im->results[0] : NULL;
  }
  gc_value *wtr = a ? transpose_of(rw, op, w, w_perm) : NULL;
  if (wtr && pairs) {  /* [KH, KW, C, O] -> [KH, KW2, 4, O]: after the transpose, one small kernel */
    int64_t wpads[8] = {0, e, 0, 0, 0, KW2 - KW - e, 4 - C, 0};
    wtr = pad_of(rw, op, wtr, wpads);
  }
  int64_t bdims[2] = {KH * KW2 * (pairs ? 4 : C), O};
  gc_value *b = wtr ? gc_rw_reshape(rw, op, wtr, 2, bdims) : NULL;
  if (!b) return;
  gc_type mt = {.dtype = yt->dtype, .rank = 2, .dims = {N * OH * OW, O}};
  gc_value *ab[2] = {a, b};
  gc_op *mm = gc_rw_new_op(rw, GC_OP_MATMUL, op, 2, ab, 0, NULL, &mt, NULL, op->loc);
  int64_t ydims[4] = {N, OH, OW, O};
  gc_value *y4 = mm ? gc_rw_reshape(rw, op, mm->results[0], 4, ydims) : NULL;
  if (!y4) return;
  gc_named_attr perm = {"perm", gc_rw_attr_ints(rw, to_nchw, 4)};
  gc_rw_replace_with_new(rw, op, GC_OP_TRANSPOSE, 1, &y4, 1, &perm);
}

/* Step 1c: a grouped or depthwise conv2d (groups > 1) in f16 / bf16, where the convs
 * around it are NHWC GEMMs, becomes the NHWC direct conv (see the top):
 * transpose(conv2d(transpose(x, [0, 2, 3, 1]), w, layout="nhwc"), [0, 3, 1, 2]). */
static void conv_grouped_nhwc(gc_rewriter *rw, gc_op *op) {
  gc_value *x = op->operands[0], *w = op->operands[1];
  const gc_type *xt = &x->type, *yt = &op->results[0]->type;
  if ((xt->dtype != GRAPHC_DTYPE_F16 && xt->dtype != GRAPHC_DTYPE_BF16) || !gc_type_is_concrete(xt) ||
      !gc_type_is_concrete(&w->type) || !gc_type_is_concrete(yt) ||
      strcmp(gc_op_attr_str(op, "layout", "nchw"), "nchw") != 0 || w->type.dims[3] > 16)
    return;
  gc_value *t = transpose_of(rw, op, x, to_nhwc);
  if (!t) return;
  gc_named_attr at[8];
  int n = 0;
  for (int i = 0; i < op->n_attrs && n < 7; i++) at[n++] = op->attrs[i];
  at[n++] = (gc_named_attr){"layout", {.kind = GC_ATTR_STR, .u.s = "nhwc"}};
  gc_type ct = {.dtype = yt->dtype, .rank = 4};
  for (int j = 0; j < 4; j++) ct.dims[j] = yt->dims[to_nhwc[j]];
  gc_value *tw[2] = {t, w};
  gc_op *cv = gc_rw_new_op(rw, GC_OP_CONV2D, op, 2, tw, n, at, &ct, NULL, op->loc);
  if (!cv) return;
  gc_named_attr perm = {"perm", gc_rw_attr_ints(rw, to_nchw, 4)};
  gc_rw_replace_with_new(rw, op, GC_OP_TRANSPOSE, 1, &cv->results[0], 1, &perm);
}

/* The perm of a transpose op into p (rank r). 1 ok. */
static int perm_of(const gc_op *t, int64_t *p, int r) {
  const gc_attr *a = gc_op_attr(t, "perm");
  return a && gc_attr_ints(a, p, GC_MAX_RANK) == r;
}

/* Step 2: sink a transpose feeding elementwise op `op` below it (see the top). */
static void sink(gc_rewriter *rw, gc_op *op) {
  if (gc_op_infos[op->opcode].kind != GC_KIND_ELEMENTWISE || op->n_results != 1 || op->n_operands > 3)
    return;
  const gc_type *rt = &op->results[0]->type;
  int r = rt->rank;
  if (r < 2 || !gc_type_is_concrete(rt)) return;
  /* the first rank-r operand that is a transpose gives p */
  int64_t p[GC_MAX_RANK], q[GC_MAX_RANK], pinv[GC_MAX_RANK];
  int have = 0;
  for (int i = 0; i < op->n_operands && !have; i++) {
    const gc_op *d = op->operands[i]->def;
    have = d && d->opcode == GC_OP_TRANSPOSE && op->operands[i]->type.rank == r && perm_of(d, p, r);
  }
  if (!have) return;
  for (int i = 0; i < r; i++) pinv[p[i]] = i;
  gc_value *ops[3];
  for (int i = 0; i < op->n_operands; i++) {
    gc_value *v = op->operands[i];
    const gc_op *d = v->def;
    int same = d && d->opcode == GC_OP_TRANSPOSE && v->type.rank == r && perm_of(d, q, r);
    for (int j = 0; same && j < r; j++) same = q[j] == p[j];
    if (same) {
      ops[i] = d->operands[0];
      continue;
    }
    if (v->type.rank == 0) {  /* a scalar broadcasts in any layout */
      ops[i] = v;
      continue;
    }
    if (!gc_type_is_concrete(&v->type)) return;
    if (v->type.rank < r) {  /* numpy broadcasting aligns the trailing dims */
      int64_t dims[GC_MAX_RANK];
      int lead = r - v->type.rank;
      for (int j = 0; j < r; j++) dims[j] = j < lead ? 1 : v->type.dims[j - lead];
      v = gc_rw_reshape(rw, op, v, r, dims);
      if (!v) return;
    }
    ops[i] = transpose_of(rw, op, v, pinv);
    if (!ops[i]) return;
  }
  gc_type et = {.dtype = rt->dtype, .rank = r};
  for (int j = 0; j < r; j++) et.dims[j] = rt->dims[pinv[j]];
  gc_op *e = gc_rw_new_op(rw, op->opcode, op, op->n_operands, ops, op->n_attrs, op->attrs, &et, NULL, op->loc);
  if (!e) return;
  gc_value *ev = e->results[0];
  gc_named_attr perm = {"perm", gc_rw_attr_ints(rw, p, r)};
  gc_rw_replace_with_new(rw, op, GC_OP_TRANSPOSE, 1, &ev, 1, &perm);
}

/* A reduction of a transpose reads its input directly: reduce(transpose(a, p), axes A)
 * = reduce(a, p(A)) with the kept dims put back in order by a transpose (none when
 * they keep their order, as for a global pool over NHWC's H and W). */
static void sink_reduce(gc_rewriter *rw, gc_op *op) {
  if (gc_op_infos[op->opcode].kind != GC_KIND_REDUCE || op->opcode == GC_OP_ARGMAX) return;
  const gc_op *t = op->operands[0]->def;
  int r = op->operands[0]->type.rank;
  int64_t p[GC_MAX_RANK], ax[GC_MAX_RANK];
  if (!t || t->opcode != GC_OP_TRANSPOSE || !perm_of(t, p, r) || !gc_type_is_concrete(&op->results[0]->type))
    return;
  const gc_attr *aa = gc_op_attr(op, "axes");
  int na = aa ? gc_attr_ints(aa, ax, GC_MAX_RANK) : 0;
  if (!aa || na <= 0) return;  /* all axes: a scalar either way (left to simplify) */
  int red[GC_MAX_RANK] = {0};   /* axes of a reduced */
  for (int i = 0; i < na; i++) {
    int64_t x = ax[i] < 0 ? ax[i] + r : ax[i];
    if (x < 0 || x >= r) return;
    red[p[x]] = 1;
  }
  int64_t nax[GC_MAX_RANK], pos[GC_MAX_RANK];
  int n = 0, kept = 0;
  for (int j = 0; j < r; j++) {
    if (red[j]) nax[n++] = j;
    else pos[j] = kept++;
  }
  int keep = gc_op_attr_bool(op, "keepdims", 0);
  /* the result's dims as positions in reduce(a)'s result: q */
  int64_t q[GC_MAX_RANK];
  int rr = 0, identity = 1;
  for (int i = 0; i < r; i++) {
    if (keep) q[rr] = p[i];
    else if (!red[p[i]]) q[rr] = pos[p[i]];
    else continue;
    identity &= q[rr] == rr;
    rr++;
  }
  gc_named_attr at[2];
  int nat = 0;
  at[nat++] = (gc_named_attr){"axes", gc_rw_attr_ints(rw, nax, n)};
  if (keep) at[nat++] = (gc_named_attr){"keepdims", {.kind = GC_ATTR_BOOL, .u.b = 1}};
  const gc_type *rt = &op->results[0]->type;
  gc_type et = {.dtype = rt->dtype, .rank = rr};
  for (int i = 0; i < rr; i++) et.dims[q[i]] = rt->dims[i];
  gc_value *a = t->operands[0];
  if (identity) {
    gc_rw_replace_with_new(rw, op, op->opcode, 1, &a, nat, at);
    return;
  }
  gc_op *e = gc_rw_new_op(rw, op->opcode, op, 1, &a, nat, at, &et, NULL, op->loc);
  if (!e) return;
  gc_value *ev = e->results[0];
  gc_named_attr perm = {"perm", gc_rw_attr_ints(rw, q, rr)};
  gc_rw_replace_with_new(rw, op, GC_OP_TRANSPOSE, 1, &ev, 1, &perm);
}

/* Step 3: a pool of an NHWC tensor seen as NCHW pools it in NHWC (see the top):
 * pool(transpose(a, [0, 3, 1, 2])) -> transpose(pool(a, layout="nhwc"), [0, 3, 1, 2]). */
static void sink_pool(gc_rewriter *rw, gc_op *op) {
  if (gc_op_infos[op->opcode].kind != GC_KIND_POOL) return;
  if (strcmp(gc_op_attr_str(op, "layout", "nchw"), "nchw") != 0) return;
  const gc_op *t = op->operands[0]->def;
  int64_t p[4];
  if (!t || t->opcode != GC_OP_TRANSPOSE || !perm_of(t, p, 4) || memcmp(p, to_nchw, sizeof p) != 0 ||
      !gc_type_is_concrete(&op->results[0]->type))
    return;
  gc_named_attr at[8];
  int n = 0;
  for (int i = 0; i < op->n_attrs && n < 7; i++)
    if (strcmp(op->attrs[i].name, "layout") != 0) at[n++] = op->attrs[i];
  at[n++] = (gc_named_attr){"layout", {.kind = GC_ATTR_STR, .u.s = "nhwc"}};
  const gc_type *rt = &op->results[0]->type;
  gc_type et = {.dtype = rt->dtype, .rank = 4};
  for (int j = 0; j < 4; j++) et.dims[j] = rt->dims[to_nhwc[j]];
  gc_value *a = t->operands[0];
  gc_op *e = gc_rw_new_op(rw, op->opcode, op, 1, &a, n, at, &et, NULL, op->loc);
  if (!e) return;
  gc_value *ev = e->results[0];
  gc_named_attr perm = {"perm", gc_rw_attr_ints(rw, to_nchw, 4)};
  gc_rw_replace_with_new(rw, op, GC_OP_TRANSPOSE, 1, &ev, 1, &perm);
}

static int layout_run(gc_graph *g, int tf32, gc_diags *d) {
  gc_rewriter rw;
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    if (op->opcode == GC_OP_CONV2D && gc_op_attr_int(op, "groups", 1) > 1) conv_grouped_nhwc(&rw, op);
    else if (op->opcode == GC_OP_CONV2D) conv_nhwc(&rw, op, tf32);
  }
  int convs = gc_rw_finish(&rw);
  if (convs <= 0) return convs;  /* no conv in NHWC: nothing to sink toward */
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    sink(&rw, op);
    sink_reduce(&rw, op);
    sink_pool(&rw, op);
  }
  int sunk = gc_rw_finish(&rw);
  return sunk < 0 ? -1 : convs + sunk;
}

int gc_pass_layout(gc_graph *g, gc_diags *d) { return layout_run(g, 0, d); }

/* With f32 convs on the tensor cores when tf32 is on (--tf32, --precision tf32). */
int gc_pass_layout_opts(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats, gc_diags *d) {
  (void)stats;
  return layout_run(g, opts && (opts->allow_tf32 || opts->precision == GRAPHC_PRECISION_TF32), d);
}
