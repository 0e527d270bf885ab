/* kir.h - Kernel IR: small, target-neutral, structured kernels.
 *
 *   Graph IR op (or fused group) --emitter(target)--> kir_kernel --printer--> CUDA C  (NVRTC)
 *                                                                 \-printer--> LLVM IR (NVPTX / host)
 *
 * A kernel has parameters (buffers and i64 scalars), an iteration space, local
 * variables, optional shared-memory arrays, and a body of statements over
 * scalar expressions. Every value has a gc_dtype; arithmetic happens only in
 * f32, f64, i32, i64 and bool (emitters cast f16/bf16/i8/u8 on load and store).
 *
 * Iteration spaces (kir_launch):
 *   KIR_LAUNCH_ITEMS  `n` independent items; the body runs once per item with
 *                     the item index (i64) in variable `item_var`. GPU: grid-stride
 *                     loop over threads. CPU: a loop, split across threads.
 *   KIR_LAUNCH_BLOCKS `n` independent groups of `block` cooperating threads; the
 *                     body runs once per group per thread with the group index in
 *                     `item_var`; it may use KIR_SP_THREAD, KIR_SP_BLOCK_DIM, shared
 *                     memory, barriers and warp shuffles. GPU: grid-stride loop over
 *                     blocks (barriers stay uniform), or with `one_pass` one block
 *                     per group and no loop. CPU emitters do not produce it.
 *
 * Ownership: a kir_module owns an arena holding all its kernels; the builder
 * functions allocate from it. kir_module_free releases everything.
 */
#ifndef GC_KIR_H
#define GC_KIR_H

#include "ir/ir.h"

typedef enum kir_target_kind { KIR_TARGET_CUDA, KIR_TARGET_HOST } kir_target_kind;

/* What an emitter may assume about the machine it schedules for. */
typedef struct kir_target {
  kir_target_kind kind;
  int sm;                 /* CUDA compute capability x10 (90 for sm_90); 0 for host */
  int warp_size;          /* 32 on CUDA, 1 on host */
  int max_threads;        /* per block */
  int num_sms;            /* multiprocessors (or host cores) */
  int shared_bytes;       /* shared memory per block usable without opt-in */
  int vector_bytes;       /* widest vector access, 16 */
  int simd_bytes;         /* host: widest SIMD register (64 AVX-512, 32 AVX2); 16 by default */
  int tf32;               /* f32 matmuls may round their operands to tf32 (tensor cores) */
  int tf32_round;         /* tf32 operands rounded to nearest before the MMA (KIR_TF32_ROUND);
                             GRAPHC_TF32_ROUND=0: the f32 bits go in as they are and the tensor
                             cores truncate them (a little faster, biased toward zero) */
  int tc_bm, tc_bn;       /* tensor-core matmul output tile, 64 or 128 each; 0: chosen per
                             matmul from its grid and num_sms (codegen/emit_mma.c) */
  int wgmma;              /* Hopper warpgroup MMAs (sm_90 exactly: code for sm_90a); set by
                             kir_target_cuda for sm 90 unless GRAPHC_WGMMA=0 (codegen/emit_wgmma.c) */
  int tma;                /* Hopper bulk tensor copies (TMA) fill the f16 / bf16 wgmma kernel's
                             stages (codegen/emit_wgmma.c); set with wgmma unless GRAPHC_TMA=0 */
  int short_k_mma;        /* matmuls with K <= 128 and no tuning entry take the mma.sync kernel,
                             128x64 tiles first, not wgmma (codegen/emit_mma.c); set by
                             kir_target_cuda, cleared by tests of the wgmma kernel */
  int attention;          /* fuse matmul -> softmax -> matmul chains into one flash-attention
                             kernel (codegen/emit_attn.c); set by kir_target_cuda for sm_80+
                             unless GRAPHC_FLASH=0 */
  int simt_blocked;        /* f32 matmuls (no tensor cores) on the register-blocked kernel
                             (codegen/emit_linalg.c mm_simt); GRAPHC_SIMT=0: the 32x32 one */
  int64_t simt_unroll_macs; /* f32 register-blocked matmuls with at least this many multiply-adds
                             unroll their 8-deep K tile; smaller ones step it in a loop of
                             2-deep steps, for compile time (codegen/emit_linalg.c mm_simt) */
  int prologue;            /* launches that read only constants run once per weights, not every run
                             (codegen/prologue.c); GRAPHC_PROLOGUE=0: every launch every run */
  int row_groups;          /* rows of at most 32 registers per thread in thread groups of <= 32
                             lanes, several rows per block, reduced with shuffles alone
                             (codegen/emit_reduce.c); GRAPHC_ROW_GROUPS=0: a block per row */
  int loop_vecs;           /* 16-byte vectors per item of a loop kernel (codegen/emit_elementwise.c):
                             0 chooses from the size; GRAPHC_LOOP_VECS=N forces N (1, 2 or 4) */
  const struct gc_tuning *tuning; /* measured choices (codegen/tuning.h), or NULL */
} kir_target;

/* Fill a target description with defaults (sm_90 / host). The GRAPHC_* variables the
 * fields above name are applied on top by the driver (gc_settings_apply_target,
 * driver/settings.c): nothing in codegen reads the environment. */
void kir_target_cuda(kir_target *t, int sm);
void kir_target_host(kir_target *t, int cores);

typedef enum kir_op {
  /* unary */
  KIR_NEG, KIR_ABS, KIR_NOT, KIR_EXP, KIR_EXP2 /* 2^x */, KIR_LOG, KIR_SQRT, KIR_RSQRT, KIR_TANH,
  KIR_ERF, KIR_SIN, KIR_COS, KIR_FLOOR, KIR_CEIL,
  KIR_SIGMOID,      /* f32 1 / (1 + e^-x): 0 below -88, NaN kept, within 4 ulps above 1e-30. The
                       host's (codegen/llvm_hostmath.c) takes e^-x only where the sum is not 1,
                       with one 2^n scale, and a reciprocal estimate with one Newton step;
                       CUDA divides */
  KIR_TANH_APPROX,  /* f32 tanh with relative error below 2^-10.9 (PTX tanh.approx.f32, sm_75+);
                       CUDA targets only, where the result is rounded to f16 / bf16 at once */
  KIR_RCP_APPROX,   /* f32 1/x within 1 ulp, subnormals flushed (PTX rcp.approx.ftz.f32) on CUDA,
                       where the result is rounded to f16 / bf16; on the host a division LLVM may
                       turn into an estimate with one Newton step when it vectorizes (~1 ulp), so
                       x must be finite there (or NaN) */
  KIR_TF32_ROUND,   /* f32 rounded to tf32 (10 mantissa bits, nearest, ties away: PTX
                       cvt.rna.tf32.f32, sm_80+), low 13 bits zero; NaN and infinities kept.
                       CUDA targets only: tf32 MMA operands, which the tensor cores would
                       otherwise truncate (a bias toward zero that grows with K) */
  KIR_F8E4M3_SAT,   /* f32 -> f8e4m3 bits (the result's type; kir_f8_hw), nearest even,
                       saturating to +-448 (infinities too), NaN stays NaN: PTX
                       cvt.rn.satfinite.e4m3x2.f32, sm_89+; what kir_f8_cast writes in integer
                       steps for saturate = 1, in one instruction */
  KIR_F8E5M2_SAT,   /* likewise to f8e5m2 (+-57344) */
  /* binary */
  KIR_ADD, KIR_SUB, KIR_MUL, KIR_DIV, KIR_REM, KIR_MIN, KIR_MAX, KIR_POW,
  KIR_AND, KIR_OR, KIR_XOR,  /* bool or integer */
  KIR_EQ, KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE,  /* result bool */
  KIR_OP_COUNT_
} kir_op;

typedef enum kir_special {
  KIR_SP_THREAD,          /* thread index in its group (i32), BLOCKS launches */
  KIR_SP_BLOCK_DIM,       /* threads per group (i32) */
  KIR_SP_LANE,            /* thread index within the warp (i32) */
  KIR_SP_WARP             /* warp index within the group (i32) */
} kir_special;

typedef enum kir_expr_kind {
  KIR_E_CONST,            /* literal: u.i for ints and bool, u.f for floats */
  KIR_E_VAR,              /* read local variable u.var */
  KIR_E_PARAM,            /* read scalar parameter u.param */
  KIR_E_SPECIAL,          /* u.special */
  KIR_E_UNARY,            /* u.op.op on a */
  KIR_E_BINARY,           /* u.op.op on a, b (same type, comparisons give bool) */
  KIR_E_SELECT,           /* a ? b : c  (a bool) */
  KIR_E_CAST,             /* a converted to `type` (float->int truncates, ->bool is != 0) */
  KIR_E_LOAD,             /* element u.mem.index of buffer/shared u.mem.buf */
  KIR_E_SHFL_XOR,         /* warp shuffle: a from lane (lane ^ u.shfl_mask) */
  KIR_E_BITCAST,          /* a's bits reinterpreted as `type` of the same size (f32<->i32,
                             f64<->i64, f8e4m3/f8e5m2<->u8); fp8 values exist only as loads,
                             stores and bitcasts: kir_cast expands fp8 conversions (kir_f8.c) */
  KIR_E_PACK2             /* i32: u.pack.lo (f32) rounded to u.pack.dtype (f16 or bf16, nearest
                             even, like a cast) in bits 0..15, u.pack.hi likewise in bits 16..31:
                             one mma.sync A/B fragment register (see kir_mma_kind) */
} kir_expr_kind;

/* Memory spaces: buffer parameters, shared arrays (BLOCKS launches), and scratch arrays:
 * private to the executing thread, contents undefined at the start of every item (an
 * item writes before it reads), in ITEMS launches only. Host emitters use them to pack
 * matmul operands (the LLVM printer makes them stack allocas); GPU emitters do not
 * produce them (the printers would make them per-thread local arrays). */
typedef enum kir_space { KIR_GLOBAL, KIR_SHARED, KIR_SCRATCH } kir_space;

typedef struct kir_expr kir_expr;
struct kir_expr {
  kir_expr_kind kind;
  gc_dtype type;
  union {
    int64_t i;
    double f;
    int var;
    int param;
    kir_special special;
    struct { kir_op op; kir_expr *a, *b, *c; } op;  /* UNARY, BINARY, SELECT, CAST(a) */
    struct { kir_space space; int buf; kir_expr *index; } mem;  /* LOAD; index i64 */
    struct { kir_expr *a; int mask; } shfl;
    struct { gc_dtype dtype; kir_expr *lo, *hi; } pack;  /* PACK2 */
  } u;
};

typedef enum kir_stmt_kind {
  KIR_S_ASSIGN,           /* var = value (declares on first assignment in printers) */
  KIR_S_STORE,            /* buf[index] = value */
  KIR_S_LOAD_VEC,         /* vars[0..width) = buf[index .. index+width); index % width == 0 */
  KIR_S_STORE_VEC,        /* buf[index .. index+width) = values[0..width) */
  KIR_S_FOR,              /* for (var = lo; var < hi; var += step) body   (i64) */
  KIR_S_IF,               /* if (cond) then else els */
  KIR_S_BARRIER,          /* all threads of the group; shared memory visible after */
  /* Tensor-core building blocks (CUDA targets, sm_80+, BLOCKS launches only). The
   * warp-collective ones (LDMATRIX, MMA) must be reached by all 32 lanes together. */
  KIR_S_CP_ASYNC,         /* 16 bytes shared[dst ..] = pred ? global[src ..] : zeros, asynchronously */
  KIR_S_CP_COMMIT,        /* close the group of async copies issued by this thread */
  KIR_S_CP_WAIT,          /* wait until at most u.wait of this thread's groups are pending */
  KIR_S_LDMATRIX,         /* warp: vars[0..4) (i32) = four 8x8 b16 matrices from shared memory */
  KIR_S_MMA,              /* warp: d[0..4) (f32) += A * B on the tensor cores, see kir_mma_kind */
  /* Hopper warpgroup MMA (sm_90a; kernels with shared_dynamic, blocks of whole warpgroups):
   * the tensor cores read both operands from shared memory asynchronously. */
  KIR_S_FENCE_ASYNC,      /* fence.proxy.async.shared::cta: this thread's shared writes (landed
                             cp.async copies included) become visible to wgmma's reads */
  KIR_S_WG_FENCE,         /* wgmma.fence: before the first WGMMA touching the accumulators */
  KIR_S_WG_COMMIT,        /* close the group of WGMMAs issued by this warpgroup */
  KIR_S_WG_WAIT,          /* wait until at most u.wait of the warpgroup's WGMMA groups are pending */
  KIR_S_WGMMA,            /* warpgroup: d[0..n/2) (f32) += A (64 x k) * B (k x n), see kir_wg_opnd */
  /* Hopper bulk tensor copies (TMA) and the shared-memory barriers they complete (sm_90;
   * kernels with shared_dynamic). A barrier is an element of an I64 shared array. */
  KIR_S_MBAR_INIT,        /* mbarrier.init: barrier u.mbar (buf, index) expects u.mbar.count arrivals
                             per phase; then fence.mbarrier_init. One thread, before a KIR barrier
                             that publishes it */
  KIR_S_MBAR_EXPECT,      /* mbarrier.arrive.expect_tx: this thread arrives and the current phase
                             also waits for u.mbar.count bytes of bulk copies */
  KIR_S_MBAR_WAIT,        /* wait until the phase of parity u.mbar.parity (i64, 0 or 1) has completed */
  KIR_S_TMAP_ACQUIRE,     /* fence.proxy.tensormap::generic.acquire on tensor map param u.tma.tmap:
                             the host wrote it with a copy; once per block before its first TMA_LOAD */
  KIR_S_TMA_LOAD          /* cp.async.bulk.tensor: the box of tensor map param u.tma.tmap at
                             coordinates u.tma.coord[0..rank) (i64, innermost first; outside the
                             tensor reads zeros) into shared u.tma.sbuf from element u.tma.sindex
                             (1024-byte aligned with a 128-byte swizzle: 16-byte chunk c of
                             128-byte row r at chunk c ^ (r % 8)), completing box bytes on barrier
                             u.tma.mbuf[u.tma.mindex] */
} kir_stmt_kind;

/* Warp-level matrix multiply-accumulate shapes (PTX mma.sync, row.col, f32 accumulators).
 * Fragments live in i32 variables holding two packed 16-bit values (low half first)
 * or one tf32; lane = 4 * g + t (g = lane / 4, t = lane % 4):
 *   F16, BF16  m16n8k16: a[0..4) = A(g, 2t..2t+1), A(g+8, 2t..), A(g, 2t+8..), A(g+8, 2t+8..)
 *                        b[0..2) = B(2t..2t+1, g), B(2t+8.., g)
 *   TF32       m16n8k8:  a[0..4) = A(g, t), A(g+8, t), A(g, t+4), A(g+8, t+4)
 *                        b[0..2) = B(t, g), B(t+4, g)
 *                        (a and b may also be f32 variables: the printers pass their
 *                        bits; the tensor cores read sign, exponent and 10 mantissa bits)
 *   all        d[0..4)  = C(g, 2t), C(g, 2t+1), C(g+8, 2t), C(g+8, 2t+1)
 * LDMATRIX (ldmatrix.sync.aligned.m8n8.x4.b16): lane l gives the address (u.ldm.index,
 * in elements of the shared array) of row l % 8 of matrix l / 8; lane l receives in
 * vars[q] the elements (l / 4, 2 (l % 4) .. +1) of matrix q, or of its transpose when
 * u.ldm.trans. */
/* E4M3, E5M2: fp8 operands (f32 accumulators); S8, U8: 8-bit integers (i32 accumulators,
 * wrapping). Warpgroup MMAs only (m64nNk32, both operands K-major in shared memory; A's and
 * B's kinds may differ within fp8: u.wg.kind_b; an s8 x u8 form would need PTX ISA 8.4). */
typedef enum kir_mma_kind {
  KIR_MMA_F16, KIR_MMA_BF16, KIR_MMA_TF32, KIR_MMA_E4M3, KIR_MMA_E5M2, KIR_MMA_S8, KIR_MMA_U8
} kir_mma_kind;
/* Is kind one of the 8-bit integer kinds (i32 accumulators)? */
#define KIR_MMA_IS_INT(kind) ((kind) >= KIR_MMA_S8)

/* A WGMMA operand in shared memory (wgmma.mma_async m64nNk16 for f16 / bf16, m64nNk8 for tf32,
 * m64nNk32 for fp8; f32 accumulators; tf32 and fp8 operands only K-major, tf32's A only from
 * registers, see below):
 * 128-byte swizzled rows (16-byte chunk c of row r stored at chunk c ^ (r % 8); the tile 1024-byte
 * aligned), starting at element `index` of shared array `buf`. K-major (mn_major 0): rows are
 * M (A) or N (B) with 128 bytes of K each (64 16-bit values, 128 fp8), `sbo` bytes from one 8-row group to the next. MN-major
 * (B stored K x N): rows are K with 64 N values each, `sbo` bytes per 8 K rows, `lbo` bytes from
 * one 64-wide N block to the next. The printers encode the PTX matrix descriptor from these.
 * Accumulators: lane l of warp w (of the warpgroup), g = l / 4, t = l % 4:
 *   d[4j + 2h + e] = C(16w + g + 8h, 8j + 2t + e).
 * A from registers (tf32, kir_emit_wgmma_ra: a_regs, f32 or i32 variables whose bits the
 * tensor cores read as tf32): a[0..4) = A(16w + g, t), A(16w + g + 8, t), A(16w + g, t + 4),
 * A(16w + g + 8, t + 4), as mma.sync's m16n8k8 per warp. */
typedef struct kir_wg_opnd {
  int buf;
  kir_expr *index;        /* i64, element of the tile's first row */
  int lbo, sbo;           /* bytes */
  int mn_major;
} kir_wg_opnd;

#define KIR_MAX_VEC 8
#define KIR_TMAP_MAX_RANK 5

/* Statement lists: a kir_block collects statements in order. */
typedef struct kir_stmt kir_stmt;
typedef struct kir_block { kir_stmt *head, *tail; } kir_block;

struct kir_stmt {
  kir_stmt_kind kind;
  kir_stmt *next;         /* statements form singly linked lists */
  union {
    struct { int var; kir_expr *value; } assign;
    struct { kir_space space; int buf; kir_expr *index; kir_expr *value; } store;
    struct {
      kir_space space; int buf; kir_expr *index; int width;
      int vars[KIR_MAX_VEC];        /* LOAD_VEC */
      kir_expr *values[KIR_MAX_VEC];/* STORE_VEC */
    } vec;
    struct { int var; kir_expr *lo, *hi, *step; struct kir_block body; int nounroll, masked_tail; } loop;
    struct { kir_expr *cond; struct kir_block then, els; } cond;  /* els.head NULL: no else */
    struct {                        /* CP_ASYNC: indices in elements of each array */
      int sbuf; kir_expr *sindex;   /* shared destination (16-byte aligned) */
      int gbuf; kir_expr *gindex;   /* global source param (16-byte aligned) */
      kir_expr *pred;               /* bool: false zero-fills and reads nothing */
    } copy;
    int wait;                       /* CP_WAIT */
    struct { int buf; kir_expr *index; int trans; int vars[4]; } ldm;  /* LDMATRIX */
    struct { kir_mma_kind kind; int d[4], a[4], b[2]; } mma;            /* MMA */
    struct {                        /* WGMMA: d[0..n/2) += a (or a_regs) x b */
      kir_mma_kind kind, kind_b; int n; int *d; kir_wg_opnd a, b;  /* kind_b: B's (fp8 may mix) */
      int a_in_regs, a_regs[4];
      int overwrite;  /* d = A B, the accumulators' old values ignored (scale-d 0), else d += A B */
    } wg;
    struct { int buf; kir_expr *index; int count; kir_expr *parity; } mbar;  /* MBAR_* */
    struct {                        /* TMA_LOAD */
      int sbuf; kir_expr *sindex; int tmap; int rank; kir_expr *coord[KIR_TMAP_MAX_RANK];
      int mbuf; kir_expr *mindex;
    } tma;
  } u;
};

/* A TMA tensor map over a buffer (KIR_PARAM_TMAP): a tiled view the runtime encodes
 * (cuTensorMapEncodeTiled) once the buffer's address is known, and passes as the device
 * address of the 128-byte map. */
typedef struct kir_tmap {
  int rank;                            /* 2 .. KIR_TMAP_MAX_RANK */
  int64_t dims[KIR_TMAP_MAX_RANK];     /* elements; dims[0] contiguous */
  int64_t strides[KIR_TMAP_MAX_RANK];  /* bytes from one coordinate of dim i to the next;
                                          strides[0] is the element size */
  int box[KIR_TMAP_MAX_RANK];          /* elements per copy along each dim (1 .. 256) */
  int64_t offset;                      /* bytes from the buffer's start to element (0, .., 0) */
  int swizzle;                         /* 0 or 128 (box[0] elements span at most 128 bytes) */
} kir_tmap;

typedef enum kir_param_kind { KIR_PARAM_BUFFER, KIR_PARAM_I64, KIR_PARAM_TMAP } kir_param_kind;

typedef struct kir_param {
  const char *name;
  kir_param_kind kind;
  gc_dtype dtype;         /* element type of a buffer (or of a tensor map's tensor) */
  int readonly;           /* buffer only read (const __restrict__ / noalias readonly) */
  int binding;            /* which executable buffer this is (a tensor map's too): codegen/lower.h */
  kir_tmap tmap;          /* KIR_PARAM_TMAP */
} kir_param;

typedef struct kir_shared {
  gc_dtype dtype;
  int64_t count;
} kir_shared;

typedef struct kir_var {
  const char *name;       /* hint for printers, unique in the kernel */
  gc_dtype type;
} kir_var;

typedef enum kir_launch_kind { KIR_LAUNCH_ITEMS, KIR_LAUNCH_BLOCKS } kir_launch_kind;

typedef struct kir_launch {
  kir_launch_kind kind;
  int64_t n;              /* items or groups */
  int block;              /* threads per group (BLOCKS); preferred block size (ITEMS) */
} kir_launch;

typedef struct kir_kernel {
  const char *name;       /* C identifier, unique in the module */
  int n_params, cap_params;
  kir_param *params;
  int n_shared, cap_shared;
  kir_shared *shared;
  int n_scratch, cap_scratch;
  kir_shared *scratch;    /* per-thread scratch arrays (KIR_SCRATCH), host ITEMS only */
  int n_vars, cap_vars;
  kir_var *vars;
  kir_launch launch;
  int item_var;           /* i64 variable holding the item / group index */
  kir_block body;
  double bytes_moved;     /* modeled bytes read + written, for stats */
  double flops;           /* modeled arithmetic, for stats */
  char tune_key[160];     /* tunable kernels: their problem's tuning key (tuning.h); "" else */
  int min_blocks;         /* blocks per SM the compiler must leave room for (CUDA C: __launch_bounds__'s
                             second argument; PTX .minnctapersm); 0: its choice. The f32 SIMT
                             matmuls set 1: ptxas' whole-program mode otherwise trades their
                             registers for occupancy (mlp B=4096's matmul on the LLVM path: 64
                             instead of 96 registers, 0.044 -> 0.067 ms on an H200). The tensor-core
                             kernels keep 0: ptxas' choice measured as fast or faster there. */
  int one_pass;           /* BLOCKS (n <= INT32_MAX): one block per group, grid = n, no loop over
                             groups (the plan's GC_LP_BLOCKS_ONE). A grid-stride loop keeps the
                             next group's index and addresses live through the body: the f16
                             softmax over rows of 8192 took 64 registers with it, 48 without, and
                             went from 77% to 82% of copy on an H200 (docs/performance.md). Set
                             by the row kernels; matmuls and convolutions keep the loop (resnet_f16
                             measured 1.7% slower with it everywhere). */
  int shared_dynamic;     /* shared arrays in dynamic shared memory, each 1024-byte aligned, up
                             to KIR_MAX_DYNAMIC_SHARED bytes in all (the launch asks for
                             kir_shared_bytes); 0: static arrays, 48 KiB in all */
} kir_kernel;

#define KIR_MAX_DYNAMIC_SHARED (227 * 1024)  /* per block with opt-in, sm_80 .. sm_90 */

typedef struct kir_module {
  gc_arena arena;
  int f8_cvt;             /* fp8 conversions may use KIR_F8E4M3_SAT / E5M2_SAT (a CUDA target,
                             sm_89+; set by the lowering) */
  int n_kernels, cap_kernels;
  kir_kernel **kernels;
} kir_module;

/* ---- building (codegen/kir.c) --------------------------------------------------- */
kir_module *kir_module_new(void);
void kir_module_free(kir_module *m);
kir_kernel *kir_kernel_new(kir_module *m, const char *name, kir_launch launch);
int kir_add_param(kir_module *m, kir_kernel *k, const char *name, kir_param_kind kind,
                  gc_dtype dtype, int readonly, int binding);
/* A tensor map over buffer `binding` (elements of dtype): a read-only KIR_PARAM_TMAP. */
int kir_add_tmap(kir_module *m, kir_kernel *k, const char *name, gc_dtype dtype, int binding,
                 const kir_tmap *tm);
int kir_add_shared(kir_module *m, kir_kernel *k, gc_dtype dtype, int64_t count);
int kir_add_scratch(kir_module *m, kir_kernel *k, gc_dtype dtype, int64_t count);
int kir_add_var(kir_module *m, kir_kernel *k, const char *hint, gc_dtype type);

kir_expr *kir_const_i(kir_module *m, gc_dtype t, int64_t v);
kir_expr *kir_const_f(kir_module *m, gc_dtype t, double v);
kir_expr *kir_var_ref(kir_module *m, const kir_kernel *k, int var);
kir_expr *kir_param_ref(kir_module *m, const kir_kernel *k, int param);
kir_expr *kir_special_ref(kir_module *m, kir_special sp);
kir_expr *kir_unary(kir_module *m, kir_op op, kir_expr *a);
/* f32 a -> fp8 `to` (f8e4m3 or f8e5m2) bits in one instruction (KIR_F8E4M3_SAT / E5M2_SAT). */
kir_expr *kir_f8_hw(kir_module *m, gc_dtype to, kir_expr *a);
kir_expr *kir_binary(kir_module *m, kir_op op, kir_expr *a, kir_expr *b);
kir_expr *kir_select(kir_module *m, kir_expr *c, kir_expr *a, kir_expr *b);
kir_expr *kir_cast(kir_module *m, gc_dtype t, kir_expr *a);
/* A cast to or from fp8: saturate 1 / 0 as the graph cast's attribute, -1 as a store
 * (ir/dtype.h: finite overflow saturates, infinities stay); kir_cast is -1. */
kir_expr *kir_cast_sat(kir_module *m, gc_dtype t, kir_expr *a, int saturate);
kir_expr *kir_bitcast(kir_module *m, gc_dtype t, kir_expr *a);
/* kir_f8.c: the fp8 conversions kir_cast_sat expands to. */
kir_expr *kir_f8_cast(kir_module *m, gc_dtype to, kir_expr *a, int saturate);
kir_expr *kir_load(kir_module *m, const kir_kernel *k, kir_space sp, int buf, kir_expr *index);
kir_expr *kir_shfl_xor(kir_module *m, kir_expr *a, int mask);
/* Two f32 values rounded to t (F16 or BF16) and packed into an i32, lo in the low half:
 * an MMA fragment register built from values in registers (KIR_E_PACK2). */
kir_expr *kir_pack2(kir_module *m, gc_dtype t, kir_expr *lo, kir_expr *hi);

void kir_emit_assign(kir_module *m, kir_block *b, int var, kir_expr *value);
void kir_emit_store(kir_module *m, kir_block *b, kir_space sp, int buf, kir_expr *index,
                    kir_expr *value);
void kir_emit_load_vec(kir_module *m, kir_block *b, kir_space sp, int buf, kir_expr *index,
                       int width, const int *vars);
void kir_emit_store_vec(kir_module *m, kir_block *b, kir_space sp, int buf, kir_expr *index,
                        int width, kir_expr *const *values);
/* Returns the body block (inside the new statement) to fill. */
kir_block *kir_emit_for(kir_module *m, kir_block *b, int var, kir_expr *lo, kir_expr *hi,
                        kir_expr *step);
/* The same loop, kept a loop: neither LLVM nor ptxas unroll it (CUDA C: #pragma unroll 1;
 * LLVM: llvm.loop.unroll.disable, which NVPTX prints as .pragma "nounroll"). For a body
 * that is large and runs a few times, such as a matmul epilogue, where unrolling buys
 * nothing at run time and costs compile time. */
kir_block *kir_emit_for_nounroll(kir_module *m, kir_block *b, int var, kir_expr *lo, kir_expr *hi,
                                 kir_expr *step);
/* A loop whose vectorized form on the host runs its last partial vector masked instead of
 * as a scalar remainder (LLVM: llvm.loop.vectorize.predicate.enable; CUDA: a plain loop).
 * For short unit-stride loops: 77 iterations of 16 lanes left 13 scalar ones. Strided
 * accesses become masked gathers, slower than the scalar tail: not for those. */
kir_block *kir_emit_for_masked_tail(kir_module *m, kir_block *b, int var, kir_expr *lo, kir_expr *hi,
                                    kir_expr *step);
/* Sets *then_b and *else_b (else_b may be NULL: no else) to blocks inside the new statement. */
void kir_emit_if(kir_module *m, kir_block *b, kir_expr *cond, kir_block **then_b,
                 kir_block **else_b);
void kir_emit_barrier(kir_module *m, kir_block *b);
void kir_emit_cp_async(kir_module *m, kir_block *b, int sbuf, kir_expr *sindex, int gbuf,
                       kir_expr *gindex, kir_expr *pred);
void kir_emit_cp_commit(kir_module *m, kir_block *b);
void kir_emit_cp_wait(kir_module *m, kir_block *b, int pending);
void kir_emit_ldmatrix(kir_module *m, kir_block *b, int buf, kir_expr *index, int trans,
                       const int *vars);
void kir_emit_mma(kir_module *m, kir_block *b, kir_mma_kind kind, const int *d, const int *a,
                  const int *bfrag);
/* PTX instruction of an mma kind ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
 * its K and the dtype of its operands; both printers use these. */
const char *kir_mma_ptx(kir_mma_kind kind);
int kir_mma_k(kir_mma_kind kind);
gc_dtype kir_mma_dtype(kir_mma_kind kind);
/* The PTX type of an operand kind: "f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8". */
const char *kir_mma_type(kir_mma_kind kind);
/* The 8-bit kind of dtype t (f8e4m3, f8e5m2, i8, u8), or -1. */
int kir_mma_byte_kind(gc_dtype t);
/* Does the kernel use any tensor-core statement (needs sm_80+)? */
int kir_uses_tensor_cores(const kir_kernel *k);
/* Hopper warpgroup MMAs: d[0..n/2) += A * B (n a multiple of 8, 8..256; with overwrite,
 * d = A * B), and the fences and groups around them (see KIR_S_WGMMA). */
void kir_emit_fence_async(kir_module *m, kir_block *b);
void kir_emit_wg_fence(kir_module *m, kir_block *b);
void kir_emit_wg_commit(kir_module *m, kir_block *b);
void kir_emit_wg_wait(kir_module *m, kir_block *b, int pending);
void kir_emit_wgmma(kir_module *m, kir_block *b, kir_mma_kind kind, kir_mma_kind kind_b, int n, const int *d,
                    int overwrite, const kir_wg_opnd *a, const kir_wg_opnd *bop);
/* tf32 warpgroup MMA with A from registers (a[0..4), layout at kir_wg_opnd), B in shared
 * memory K-major: d[0..n/2) += A (64 x 8) * B (8 x n). */
void kir_emit_wgmma_ra(kir_module *m, kir_block *b, int n, const int *d, const int *a,
                       const kir_wg_opnd *bop);
/* Hopper bulk tensor copies and shared-memory barriers (see KIR_S_TMA_LOAD, KIR_S_MBAR_*):
 * barrier (buf, index) of an I64 shared array. */
void kir_emit_mbar_init(kir_module *m, kir_block *b, int buf, kir_expr *index, int count);
void kir_emit_mbar_expect(kir_module *m, kir_block *b, int buf, kir_expr *index, int bytes);
void kir_emit_mbar_wait(kir_module *m, kir_block *b, int buf, kir_expr *index, kir_expr *parity);
void kir_emit_tmap_acquire(kir_module *m, kir_block *b, int tmap);
void kir_emit_tma_load(kir_module *m, kir_block *b, int sbuf, kir_expr *sindex, int tmap,
                       kir_expr *const *coord, int mbuf, kir_expr *mindex);
/* The PTX matrix descriptor's constant bits for an operand (swizzle, lbo, sbo); the
 * printers OR in (shared address & 0x3FFFF) >> 4. */
uint64_t kir_wg_desc_bits(const kir_wg_opnd *o);
/* Does a kernel (any kernel of the module) use WGMMA statements (code for sm_90a only)? */
int kir_uses_wgmma(const kir_kernel *k);
int kir_module_uses_wgmma(const kir_module *m);
/* Shared memory: byte offset of array i, and the bytes a block needs (dynamic: the
 * arrays plus 1024 bytes to align their base; the launch passes it). */
int64_t kir_shared_offset(const kir_kernel *k, int i);
int64_t kir_shared_bytes(const kir_kernel *k);

/* Check invariants (types agree, vars assigned before use, shared only in
 * BLOCKS launches, scratch only in ITEMS launches); GC_ASSERT on violation: a violation is an emitter bug. */
void kir_verify(const kir_kernel *k);
/* Human-readable dump for --emit kir and debugging. */
void kir_print(gc_sbuf *b, const kir_kernel *k);
/* The canonical text of a kernel (deduplication and cache keys): its Kernel IR as
 * printed with the names that differ between copies of the same code masked (the
 * kernel's name, variable and parameter names, which come from graph values, and
 * buffer bindings, which only say what a launch passes). Kernels with equal texts
 * get the same LLVM IR and machine code up to those names. malloc'd; NULL when out
 * of memory. */
char *kir_canonical_text(const kir_kernel *k);
/* Could kernels a and b have the same code? (The same launch, parameters, shared
 * arrays and variable count; decides whether a canonical text is worth printing.
 * Stricter than the text, so it never merges different kernels.) */
int kir_maybe_same(const kir_kernel *a, const kir_kernel *b);

#endif /* GC_KIR_H */
