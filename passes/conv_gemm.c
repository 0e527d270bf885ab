/* conv_gemm.c - conv2d as a matrix product (implicit GEMM).
 *
 *   y = conv2d(x [N, C, H, W], w [O, C, KH, KW])            groups = 1
 *     ->
 *   a = reshape(w, shape=[O, C*KH*KW])
 *   b = im2col(x, kernel=[KH, KW], stride, padding, dilation)   [N, C*KH*KW, OH*OW]
 *       (reshape(x, shape=[N, C, H*W]) for a 1x1 window, stride 1, no padding)
 *   m = matmul(a, b)                                          [N, O, OH*OW]
 *   y = reshape(m, shape=[N, O, OH, OW])
 *
 * Same sums in the same precision (f32 accumulation for f16/bf16); only their
 * order differs. The direct convolution the backends had computed one output per
 * thread with scalar loops; as a matmul it takes the tiled kernels: shared-memory
 * tiles and tensor cores on the GPU, register tiles on the CPU. Fusion reads
 * im2col in place inside the matmul's operand loads (it is never stored) and puts
 * the trailing reshape, bias and activation in the matmul's epilogue.
 *
 * Not rewritten: grouped convolutions (groups > 1; depthwise convs are no GEMM
 * worth the name) and symbolic shapes. Not run for the interpreter, the float64
 * reference, which keeps its direct loops (and no KH*KW-times copy of x).
 */
#include "passes/rewrite.h"

static void rewrite_conv(gc_rewriter *rw, gc_op *op) {
  if (!gc_conv_gemm_ok(op)) return;
  gc_value *x = op->operands[0], *w = op->operands[1];
  const gc_type *xt = &x->type, *wt = &w->type, *yt = &op->results[0]->type;
  int64_t N = xt->dims[0], C = xt->dims[1], O = wt->dims[0], KH = wt->dims[2], KW = wt->dims[3];
  int64_t P = yt->dims[2] * yt->dims[3], CK = C * KH * KW;
  int64_t adims[2] = {O, CK}, ydims[4] = {N, O, yt->dims[2], yt->dims[3]};
  gc_value *a = gc_rw_reshape(rw, op, w, 2, adims);
  if (!a) return;
  gc_value *b;
  if (gc_conv_is_pointwise(op)) {
    int64_t bdims[3] = {N, C, xt->dims[2] * xt->dims[3]};
    b = gc_rw_reshape(rw, op, x, 3, bdims);
  } else {
    gc_named_attr at[5];
    int n = gc_conv_im2col_attrs(rw, op, NULL, at);
    gc_type bt = {.dtype = xt->dtype, .rank = 3, .dims = {N, CK, P}};
    gc_op *im = gc_rw_new_op(rw, GC_OP_IM2COL, op, 1, &x, n, at, &bt, NULL, op->loc);
    b = im ? im->results[0] : NULL;
  }
  if (!b) return;
  gc_type mt = {.dtype = yt->dtype, .rank = 3, .dims = {N, O, P}};
  gc_value *ab[2] = {a, b};
  gc_op *mm = gc_rw_new_op(rw, GC_OP_MATMUL, op, 2, ab, 0, NULL, &mt, NULL, op->loc);
  if (!mm) return;
  gc_named_attr shape = {"shape", gc_rw_attr_ints(rw, ydims, 4)};
  gc_rw_replace_with_new(rw, op, GC_OP_RESHAPE, 1, &mm->results[0], 1, &shape);
}

int gc_pass_conv_gemm(gc_graph *g, gc_diags *d) {
  gc_rewriter rw;
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    if (op->opcode == GC_OP_CONV2D) rewrite_conv(&rw, op);
  }
  return gc_rw_finish(&rw);
}
