/* llvm_emit.h - Kernel IR to LLVM IR through the LLVM-C API (internal).
 *
 *   kir_module --gc_llvm_emit(target)--> LLVMModuleRef --(caller)--> O3 --> PTX / host code
 *
 * One emitter serves every LLVM target; what differs per target sits behind
 * gc_llvm_target (see the `switch (t->arch)` helpers in llvm_emit.c):
 *
 *                      NVPTX (nvptx64-nvidia-cuda)          HOST (x86-64 etc.)
 *   kernel             ptx_kernel fn(params...)              fn(ptr args, i64 begin, i64 end)
 *   ITEMS loop         item = ctaid*ntid+tid; += nctaid*ntid item = begin; item < end; ++item
 *   BLOCKS loop        item = ctaid; += nctaid               same as ITEMS (launch.block must be 1)
 *   specials           llvm.nvvm.read.ptx.sreg.{tid,ntid}.x  thread 0, block_dim 1, lane 0, warp 0
 *   shared arrays      globals in addrspace(3)               allocas (one thread per group)
 *   scratch arrays     allocas (local memory)                allocas, 64-byte aligned (stack)
 *   barrier            llvm.nvvm.barrier0                    nothing
 *   shfl_xor           llvm.nvvm.shfl.sync.bfly.{i32,f32}    the value itself (warp of 1)
 *   exp log tanh ...   libdevice __nv_* (linked by caller)   libm (expf, log, ...); f32 exp, exp2,
 *                                                            tanh, erf inline (llvm_hostmath.c)
 *   buffers            ptr addrspace(1) noalias [readonly]   ptr noalias [readonly]
 *   ->bf16             fptrunc (cvt.rn.bf16.*)               bit arithmetic (no __truncsfbf2
 *                                                              needed: libgcc < 13 lacks it)
 *   int->bf16          sm_90: cvt.rn.bf16.s32/s64; else (and host) a round-to-odd f32, then RNE
 *   f32/f64 + - *      plain                                 `contract`: a*b+c may become an FMA
 *
 * Host kernel ABI: `void name(void *const *args, int64_t begin, int64_t end)`.
 * args has one 8-byte slot per kir_param in order: a buffer's base pointer, or
 * an I64 parameter's value. The call runs items (or groups) [begin, end); the
 * caller splits [0, launch.n) across threads. The real body lives in the
 * internal function `name.body` (noalias params), inlined by O2/O3.
 *
 * Semantics follow BRIEF.md: NaN-propagating min/max, integer x/0 = 0 and
 * x%0 = 0 (INT_MIN/-1 wraps), saturating float->int casts with NaN -> 0,
 * bool as i8 0/1 in memory and i1 in registers, f16/bf16 arithmetic in f32.
 */
#ifndef GC_LLVM_EMIT_H
#define GC_LLVM_EMIT_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "codegen/kir.h"

typedef enum gc_llvm_arch { GC_LLVM_NVPTX, GC_LLVM_HOST } gc_llvm_arch;

typedef struct gc_llvm_target {
  gc_llvm_arch arch;
  int sm;                   /* NVPTX: compute capability x10; 0 for host */
  const char *triple;       /* module target triple */
  const char *data_layout;  /* from the target machine (LLVMCreateTargetDataLayout) */
} gc_llvm_target;

/* Widest SIMD register of a host CPU in bytes: 64 with AVX-512F, 32 with AVX2, else 16.
 * cpu: NULL, "" or "native" (this machine's features) or an x86-64 level name. */
/* The host CPU's LLVM feature string (LLVMDisposeMessage it) with the features graphc
 * must not use turned off (avx512fp16: an LLVM 19 miscompile, see llvm_emit.c). */
char *gc_llvm_host_features(void);
int gc_llvm_host_simd_bytes(const char *cpu);
/* Host: with simd_bytes >= 64, let the vectorizers use 512-bit vectors in every function
 * of mod (the "prefer-vector-width" attribute; LLVM keeps 256 bits on AVX-512 CPUs). */
void gc_llvm_prefer_wide_vectors(LLVMModuleRef mod, int simd_bytes);

/* Collects LLVM diagnostics of one context (install with gc_llvm_diag_install). */
typedef struct gc_llvm_diag {
  gc_sbuf msgs;             /* errors and warnings, one per line */
  int n_errors;
} gc_llvm_diag;

/* Route the context's diagnostics into `dg` (so LLVM never prints or exits). */
void gc_llvm_diag_install(LLVMContextRef ctx, gc_llvm_diag *dg);

/* Build one LLVM module in `ctx` holding every kernel of `m` (names = kernel
 * names). Unoptimized (allocas for variables). Returns NULL and reports to d
 * on an unsupported construct. Math functions are declarations: for NVPTX the
 * caller links libdevice (gc_llvm_uses_libdevice tells whether it must). */
LLVMModuleRef gc_llvm_emit(LLVMContextRef ctx, const kir_module *m, const gc_llvm_target *t,
                           gc_diags *d);

/* Nonzero when the module declares a libdevice function (__nv_*). */
int gc_llvm_uses_libdevice(LLVMModuleRef mod);

/* Give every defined function and global that is not a kernel internal
 * linkage (after linking libdevice) so O3 drops what is unused. */
void gc_llvm_internalize(LLVMModuleRef mod, const kir_module *m);

/* Verify `mod`; on failure report LLVM's message (prefixed with `what`) and return -1. */
int gc_llvm_verify(LLVMModuleRef mod, const char *what, gc_diags *d);

/* Run the new-PM pipeline `passes` (e.g. "default<O3>") for target machine tm. */
int gc_llvm_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *passes,
                     gc_diags *d);

/* Host-target module of m as LLVM IR text (default triple, no target machine),
 * verified and, when `optimize`, run through default<O2>. *ir_text malloc'd.
 * Declared without LLVM types so code outside codegen/ (tests) can use it. */
int gc_llvm_host_ir(const kir_module *m, int optimize, char **ir_text, gc_diags *d);

#endif /* GC_LLVM_EMIT_H */
