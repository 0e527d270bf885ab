/* emit_tc.h - the tensor-core matmul kernels and what they share: operands read in
 * place as strided windows of their buffers, the plan of how each operand is read,
 * and the epilogue over a register tile.
 *
 *   emit_linalg.c the dispatcher: plans a matmul group (gc_tc_plan_of) and picks a kernel
 *   emit_mma.c    mma.sync kernel (sm_80 and later)
 *   emit_wgmma.c  Hopper warpgroup-MMA kernels (sm_90a), taken when the target has wgmma
 *                 and both operands are strided windows loaded by cp.async
 *   emit_gemv.c   matmuls of a few rows (M <= 8) on the CUDA cores, B read once in 16-byte vectors
 *   emit_tc.c     the shared pieces below (and gc_mm_* of emit.h), which the others
 *                 (emit_attn.c too) call down into; it calls none of them
 */
#ifndef GC_EMIT_TC_H
#define GC_EMIT_TC_H

#include "codegen/emit.h"
#include "codegen/tuning.h"

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
/* Round the tf32 MMA operand in var (f32, or i32 holding f32 bits) to tf32, nearest: the
 * tensor cores would truncate its low 13 bits, a bias toward zero that grows with K
 * (resnet50 in tf32: 2.3e-2 relative error truncated, PyTorch's rounding gives 5.7e-4). */
void gc_tc_round_tf32(gc_lowerer *c, kir_kernel *k, kir_block *b, int var);
/* How a matmul group's operands reach the tensor cores, decided once (gc_tc_plan_of) for
 * the dispatcher and the kernel it picks. */
typedef struct gc_tc_plan {
  gc_dtype dt;               /* the operands' dtype (A's, when both are fp8) */
  int tf32;                  /* f32 operands read as tf32 (kir_target.tf32) */
  int f8;                    /* 8-bit operands (f8e4m3 / f8e5m2 into f32, i8 / u8 into i32): warpgroup
                                MMAs only */
  int epc, bk;               /* elements per 16-byte chunk, and the K tile (4 chunks) */
  tc_opnd oa, ob;            /* the operands as strided windows, unless staged */
  int a_gen, b_gen;          /* staged element by element through the generator */
  int b_nmajor;              /* B's chunks run along N (B stored K x N) */
  int b_im2col;              /* B an NCHW im2col (bic) the group computes, staged along pixels */
  int a_nhwc;                /* A an NHWC im2col (aic) of materialized ax, one cp.async a chunk */
  const gc_op *aic, *bic;    /* the ops defining A and B */
  const gc_value *ax;        /* aic's input when aic is an im2col, else NULL */
  char key[GC_TUNING_KEY_MAX];  /* the problem's tuning key */
  const gc_tuning_entry *te; /* its tuning entry, NULL when none */
  int short_k;               /* K of at most 128 and no entry: mma.sync, 128x64 tiles first */
} gc_tc_plan;
/* Plan matmul group grp for the tensor cores: 0 when the target (CUDA sm_80 and later),
 * dtypes (f16, bf16; f32 with tf32; fp8 on sm_90 with wgmma) or sizes (M or N below 32, 64 for tf32; K below 16)
 * rule them out. Emits nothing. */
int gc_tc_plan_of(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_tc_plan *p);
/* emit_mma.c: the mma.sync kernel of a group planned by gc_tc_plan_of. */
kir_kernel *gc_mm_mma(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G,
                      const gc_tc_plan *p);
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
/* emit_gemv.c: the kernel of a matmul of at most 8 rows whose B is a 16-byte aligned window
 * with K contiguous (f16, bf16, f32), NULL when it does not apply. */
kir_kernel *gc_mm_gemv(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_gen *G);

#endif /* GC_EMIT_TC_H */
