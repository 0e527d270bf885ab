/* emit_tc.h - what the two tensor-core matmul emitters share: operands read in place
 * as strided windows of their buffers, and the epilogue over a register tile.
 *
 *   emit_mma.c    mma.sync kernel (sm_80 and later), the operand analysis, the epilogue
 *   emit_wgmma.c  Hopper warpgroup-MMA kernel (sm_90a), called by emit_mma.c's
 *                 gc_mm_tensor_core when the target has wgmma and both operands are
 *                 strided windows loaded by cp.async
 */
#ifndef GC_EMIT_TC_H
#define GC_EMIT_TC_H

#include "codegen/emit.h"

/* An operand as a strided window of a materialized buffer:
 * element co of the operand = base[off + sum co[i] * st[i]]. */
typedef struct tc_view_t {
  const gc_value *base;
  int64_t off;
  int64_t st[GC_MAX_RANK];
} tc_view_t;

/* One operand's addressing for the kernel. */
typedef struct tc_opnd {
  tc_view_t v;
  int rank;
  int64_t s_outer, s_k;     /* strides of the operand's row (M or N) and K coordinates */
  int param;
} tc_opnd;

/* Fill o for operand x (a strided window of a materialized buffer) whose logical (row, k)
 * are its (last-2, last-1) dims, or swapped when `swap`. 0: not such a window. */
int gc_tc_operand(const gc_lowerer *c, const gc_value *x, int swap, tc_opnd *o);
/* Every epc-element chunk along dim `chunk` (stride 1) of x starts 16-byte aligned. */
int gc_tc_aligned(const gc_value *x, const tc_opnd *o, int chunk, int epc);
/* Element offset of an operand's batch for output batch coordinates bco. */
kir_expr *gc_tc_batch_off(gc_lowerer *c, kir_kernel *k, const gc_value *x, const tc_opnd *o,
                          const gc_mm_shape *s, const int *bco);
/* Epilogue of a register tile: output (rows[r], cols[q][e]) (i64 vars) is f32 accumulator
 * var acc[(r * nq + q) * 2 + e]; rows past M and columns past N store nothing. `adjacent`:
 * cols[q][1] is cols[q][0] + 1 (with N even, each pair goes out as one vector store). */
void gc_tc_store_tile(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const gc_mm_shape *s,
                      const int *bco, int nr, const int *rows, int nq, const int (*cols)[2], const int *acc,
                      int adjacent);
/* emit_wgmma.c: the warpgroup-MMA kernel for operands oa (K contiguous; or, when a_nhwc is
 * not NULL, that NHWC im2col of its materialized input, channels in whole chunks) and ob (N
 * contiguous when b_nmajor, else K contiguous), 16-byte aligned windows; tile bm x bn (0 x 0:
 * the heuristic); `key` the problem's tuning key. */
kir_kernel *gc_mm_wgmma(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G,
                        const tc_opnd *oa, const gc_op *a_nhwc, const tc_opnd *ob, int b_nmajor, int bm,
                        int bn, const char *key);
/* emit_wgmma.c: the tf32 warpgroup-MMA kernel for f32 operands oa (K contiguous) and ob (N
 * contiguous when b_nmajor, else K contiguous), 16-byte aligned windows, M and N at least 64;
 * tile bm x bn (a tuning entry's; 0 x 0: the heuristic), `key` the problem's tuning key.
 * wgmma's tf32 reads shared operands K-major only, so it computes C^T = B^T A^T: B^T from
 * registers, A from shared memory. */
kir_kernel *gc_mm_wgmma_tf32(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G,
                             const tc_opnd *oa, const tc_opnd *ob, int b_nmajor, int bm, int bn, const char *key);

#endif /* GC_EMIT_TC_H */
