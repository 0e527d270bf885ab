/* llvm_emit.c - Kernel IR to LLVM IR with the LLVM-C API, for NVPTX and host.
 *
 *   kir_kernel --emit_kernel--> entry:  allocas (vars, host shared), item start
 *                               header: item < n ?
 *                               body:   statements (loops: header/body/latch/exit)
 *                               latch:  item += stride
 *
 * Variables live in allocas (SROA/mem2reg turn them into SSA). Everything
 * that depends on the target is in the "target switch" section below; the
 * rest is shared. See llvm_emit.h for the mapping table and the host ABI.
 */
#include "codegen/llvm_emit.h"
#include "codegen/llvm_hostmath.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT(x) GRAPHC_DTYPE_##x

/* Per-kernel emission state. */
typedef struct em {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  const gc_llvm_target *t;
  const kir_kernel *k;
  gc_diags *d;
  LLVMValueRef fn;          /* function holding the body */
  LLVMValueRef *vars;       /* one alloca per kir var */
  LLVMValueRef *params;     /* one argument per kir param */
  LLVMValueRef *shared;     /* base pointer per shared array */
  LLVMValueRef *scratch;    /* base pointer per scratch array (host allocas) */
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64;
  LLVMTypeRef t_f16, t_bf16, t_f32, t_f64;
  LLVMTypeRef t_gptr;       /* pointer to a global buffer */
} em;

/* ---- types --------------------------------------------------------------------- */

/* LLVM type of a value of dtype t in registers (bool is i1). */
static LLVMTypeRef reg_ty(const em *e, gc_dtype t) {
  switch (t) {
  case DT(F64): return e->t_f64;
  case DT(F32): return e->t_f32;
  case DT(F16): return e->t_f16;
  case DT(BF16): return e->t_bf16;
  case DT(I64): return e->t_i64;
  case DT(I32): return e->t_i32;
  case DT(I8): case DT(U8): return e->t_i8;
  case DT(F8E4M3): case DT(F8E5M2): case DT(F8E4M3FNUZ): case DT(F8E5M2FNUZ):
    return e->t_i8;  /* the bits; see KIR_E_BITCAST */
  case DT(BOOL): return e->t_i1;
  default: GC_ASSERT(!"bad dtype"); return NULL;
  }
}

/* LLVM type of an element of dtype t in memory (bool is i8 0/1). */
static LLVMTypeRef mem_ty(const em *e, gc_dtype t) {
  return t == DT(BOOL) ? e->t_i8 : reg_ty(e, t);
}

/* Bytes of one element of dtype t in memory. */
static unsigned dt_size(gc_dtype t) {
  switch (t) {
  case DT(F64): case DT(I64): return 8;
  case DT(F32): case DT(I32): return 4;
  case DT(F16): case DT(BF16): return 2;
  default: return 1;
  }
}

/* f16 and bf16: stored narrow, computed in f32. */
static int is_half(gc_dtype t) { return t == DT(F16) || t == DT(BF16); }

/* Signed integer dtypes (u8 and bool compare and extend as unsigned). */
static int is_sint(gc_dtype t) { return t == DT(I64) || t == DT(I32) || t == DT(I8); }

/* ---- small builders -------------------------------------------------------------- */

/* Call intrinsic `name` overloaded on ov[0..nov). */
static LLVMValueRef intr(em *e, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *args,
                         int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  GC_ASSERT(id != 0);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(e->mod, id, ov, (size_t)nov);
  LLVMTypeRef fty = LLVMIntrinsicGetType(e->ctx, id, ov, (size_t)nov);
  return LLVMBuildCall2(e->b, fty, f, args, (unsigned)nargs, "");
}

/* Unary intrinsic overloaded on the operand type. */
static LLVMValueRef intr1(em *e, const char *name, LLVMValueRef a) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  return intr(e, name, &ty, 1, &a, 1);
}

/* Binary intrinsic overloaded on the operand type. */
static LLVMValueRef intr2(em *e, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  LLVMValueRef args[2] = {a, b};
  return intr(e, name, &ty, 1, args, 2);
}

/* Call external function `name` of type ty(ty, ...) (n arguments), declaring it once. */
static LLVMValueRef call_ext(em *e, const char *name, LLVMTypeRef ty, LLVMValueRef *args, int n) {
  LLVMTypeRef ps[2] = {ty, ty};
  LLVMTypeRef fty = LLVMFunctionType(ty, ps, (unsigned)n, 0);
  LLVMValueRef f = LLVMGetNamedFunction(e->mod, name);
  if (!f) {
    f = LLVMAddFunction(e->mod, name, fty);
    unsigned kind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(e->ctx, kind, 0));
  }
  return LLVMBuildCall2(e->b, fty, f, args, (unsigned)n, "");
}

/* Add enum attribute `name` at index idx of function f. */
static void add_attr(em *e, LLVMValueRef f, LLVMAttributeIndex idx, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  GC_ASSERT(kind != 0);
  LLVMAddAttributeAtIndex(f, idx, LLVMCreateEnumAttribute(e->ctx, kind, 0));
}

/* Integer constant of type ty. */
static LLVMValueRef cint(LLVMTypeRef ty, int64_t v) {
  return LLVMConstInt(ty, (unsigned long long)v, 1);
}

/* Start a new basic block in the current function and move the builder there. */
static void enter(em *e, LLVMBasicBlockRef bb) { LLVMPositionBuilderAtEnd(e->b, bb); }

/* New basic block appended to the current function. */
static LLVMBasicBlockRef new_bb(em *e, const char *name) {
  return LLVMAppendBasicBlockInContext(e->ctx, e->fn, name);
}

/* ---- target switch: everything NVPTX and host do differently ---------------------- */

/* Read a PTX special register (i32). */
static LLVMValueRef sreg(em *e, const char *reg) {
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s", reg);
  return intr(e, name, NULL, 0, NULL, 0);
}

/* KIR_E_SPECIAL as i32. Host: one thread per group, warp of one. */
static LLVMValueRef t_special(em *e, kir_special sp) {
  if (e->t->arch == GC_LLVM_HOST) return cint(e->t_i32, sp == KIR_SP_BLOCK_DIM ? 1 : 0);
  switch (sp) {
  case KIR_SP_THREAD: return sreg(e, "tid.x");
  case KIR_SP_BLOCK_DIM: return sreg(e, "ntid.x");
  case KIR_SP_LANE: return LLVMBuildAnd(e->b, sreg(e, "tid.x"), cint(e->t_i32, 31), "lane");
  case KIR_SP_WARP: return LLVMBuildLShr(e->b, sreg(e, "tid.x"), cint(e->t_i32, 5), "warp");
  }
  GC_ASSERT(!"bad special");
  return NULL;
}

/* Group barrier (nothing on host: one thread per group). */
static void t_barrier(em *e) {
  if (e->t->arch == GC_LLVM_NVPTX) intr(e, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

/* One 32-bit butterfly shuffle (full warp, clamp 0x1f like __shfl_xor_sync). */
static LLVMValueRef shfl32(em *e, LLVMValueRef v, int mask) {
  int is_f = LLVMTypeOf(v) == e->t_f32;
  LLVMValueRef args[4] = {cint(e->t_i32, -1), v, cint(e->t_i32, mask), cint(e->t_i32, 0x1f)};
  return intr(e, is_f ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0,
              args, 4);
}

/* KIR_E_SHFL_XOR: value from lane ^ mask. 64-bit values go as two i32 halves,
 * narrow ones widened to i32. Host: a warp of one lane returns its own value. */
static LLVMValueRef t_shfl_xor(em *e, LLVMValueRef v, gc_dtype t, int mask) {
  if (e->t->arch == GC_LLVM_HOST) return v;
  LLVMBuilderRef b = e->b;
  switch (t) {
  case DT(F32): case DT(I32):
    return shfl32(e, v, mask);
  case DT(F64): case DT(I64): {
    LLVMValueRef bits = t == DT(F64) ? LLVMBuildBitCast(b, v, e->t_i64, "") : v;
    LLVMValueRef lo = LLVMBuildTrunc(b, bits, e->t_i32, "");
    LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, bits, cint(e->t_i64, 32), ""), e->t_i32, "");
    lo = LLVMBuildZExt(b, shfl32(e, lo, mask), e->t_i64, "");
    hi = LLVMBuildZExt(b, shfl32(e, hi, mask), e->t_i64, "");
    bits = LLVMBuildOr(b, LLVMBuildShl(b, hi, cint(e->t_i64, 32), ""), lo, "");
    return t == DT(F64) ? LLVMBuildBitCast(b, bits, e->t_f64, "") : bits;
  }
  case DT(F16): case DT(BF16): {
    LLVMValueRef bits = LLVMBuildZExt(b, LLVMBuildBitCast(b, v, e->t_i16, ""), e->t_i32, "");
    bits = LLVMBuildTrunc(b, shfl32(e, bits, mask), e->t_i16, "");
    return LLVMBuildBitCast(b, bits, reg_ty(e, t), "");
  }
  case DT(I8): case DT(U8): case DT(BOOL): case DT(F8E4M3): case DT(F8E5M2):  /* fp8: the bits */
  case DT(F8E4M3FNUZ): case DT(F8E5M2FNUZ):
    return LLVMBuildTrunc(b, shfl32(e, LLVMBuildZExt(b, v, e->t_i32, ""), mask), reg_ty(e, t), "");
  default:
    GC_ASSERT(!"bad shuffle dtype");
    return NULL;
  }
}

/* Name of the math function for op on f32/f64: libdevice (__nv_expf) or libm (expf). */
static void t_math_name(em *e, kir_op op, gc_dtype t, char *buf, size_t n) {
  const char *base = NULL;
  switch (op) {
  case KIR_EXP: base = "exp"; break;
  case KIR_EXP2: base = "exp2"; break;
  case KIR_LOG: base = "log"; break;
  case KIR_TANH: base = "tanh"; break;
  case KIR_ERF: base = "erf"; break;
  case KIR_SIN: base = "sin"; break;
  case KIR_COS: base = "cos"; break;
  case KIR_POW: base = "pow"; break;
  case KIR_REM: base = "fmod"; break;
  default: GC_ASSERT(!"not a math call");
  }
  snprintf(buf, n, "%s%s%s", e->t->arch == GC_LLVM_NVPTX ? "__nv_" : "", base,
           t == DT(F32) ? "f" : "");
}

/* Call the math function for op (f32 or f64 operands). */
static LLVMValueRef math_call(em *e, kir_op op, gc_dtype t, LLVMValueRef a, LLVMValueRef b) {
  char name[32];
  t_math_name(e, op, t, name, sizeof name);
  LLVMValueRef args[2] = {a, b};
  return call_ext(e, name, reg_ty(e, t), args, b ? 2 : 1);
}

/* Buffer parameter pointer type: addrspace(1) on NVPTX, generic on host. */
static LLVMTypeRef t_buffer_ptr(em *e) {
  return LLVMPointerTypeInContext(e->ctx, e->t->arch == GC_LLVM_NVPTX ? 1 : 0);
}

/* The kernel's dynamic shared memory (shared_dynamic, NVPTX), its base rounded up to
 * 1024 bytes: `KERNEL_dsmem`, an extern addrspace(3) array. */
static LLVMValueRef t_dynamic_shared_base(em *e) {
  LLVMTypeRef aty = LLVMArrayType2(e->t_i8, 0);
  char name[256];
  snprintf(name, sizeof name, "%s_dsmem", e->k->name);  /* one per kernel: joined PTX parts declare each once */
  LLVMValueRef g = LLVMGetNamedGlobal(e->mod, name);
  if (!g) {
    g = LLVMAddGlobalInAddressSpace(e->mod, aty, name, 3);
    LLVMSetLinkage(g, LLVMExternalLinkage);
    LLVMSetAlignment(g, 1024);
  }
  LLVMValueRef a = LLVMBuildPtrToInt(e->b, g, e->t_i64, "");
  LLVMValueRef pad = LLVMBuildAnd(e->b, LLVMBuildSub(e->b, cint(e->t_i64, 1024), LLVMBuildAnd(e->b, a, cint(e->t_i64, 1023), ""), ""),
                                  cint(e->t_i64, 1023), "");
  return LLVMBuildInBoundsGEP2(e->b, e->t_i8, g, &pad, 1, "dsmem");
}

/* Base pointer of shared array i: an addrspace(3) global (NVPTX) or an alloca (host;
 * must be called with the builder in the entry block). With shared_dynamic, a place in
 * the dynamic shared memory at `dyn` (NVPTX only). */
static LLVMValueRef t_shared_array(em *e, int i, LLVMValueRef dyn) {
  const kir_shared *s = &e->k->shared[i];
  if (dyn) {
    LLVMValueRef off = cint(e->t_i64, (unsigned long long)kir_shared_offset(e->k, i));
    return LLVMBuildInBoundsGEP2(e->b, e->t_i8, dyn, &off, 1, "smem");
  }
  LLVMTypeRef aty = LLVMArrayType2(mem_ty(e, s->dtype), (uint64_t)s->count);
  LLVMValueRef v;
  if (e->t->arch == GC_LLVM_NVPTX) {
    char name[256];
    snprintf(name, sizeof name, "%s_smem%d", e->k->name, i);
    v = LLVMAddGlobalInAddressSpace(e->mod, aty, name, 3);
    LLVMSetInitializer(v, LLVMGetUndef(aty));
    LLVMSetLinkage(v, LLVMInternalLinkage);
  } else {
    v = LLVMBuildAlloca(e->b, aty, "smem");
  }
  LLVMSetAlignment(v, 16);
  return v;
}

/* ---- conversions ----------------------------------------------------------------- */

/* Register value to memory form (bool i1 -> i8). */
static LLVMValueRef to_mem(em *e, LLVMValueRef v, gc_dtype t) {
  return t == DT(BOOL) ? LLVMBuildZExt(e->b, v, e->t_i8, "") : v;
}

/* Memory value to register form (bool i8 -> i1 as != 0). */
static LLVMValueRef from_mem(em *e, LLVMValueRef v, gc_dtype t) {
  return t == DT(BOOL) ? LLVMBuildICmp(e->b, LLVMIntNE, v, cint(e->t_i8, 0), "") : v;
}

/* Float to float of another width (f16 <-> bf16 through f32, exact). */
static LLVMValueRef cvt_ff(em *e, LLVMValueRef v, gc_dtype from, gc_dtype to) {
  if (from == DT(BF16) && e->t->arch != GC_LLVM_NVPTX) {
    /* exact: the bits shifted into f32's high half. x86 without AVX512-BF16 made each
     * fpext a scalar conversion (a bf16 matmul row on the cpu backend: 8 GB/s, 40% of copy) */
    LLVMValueRef bits = LLVMBuildBitCast(e->b, v, LLVMInt16TypeInContext(e->ctx), "");
    bits = LLVMBuildShl(e->b, LLVMBuildZExt(e->b, bits, e->t_i32, ""), cint(e->t_i32, 16), "");
    v = LLVMBuildBitCast(e->b, bits, e->t_f32, "");
    if (to == DT(F32)) return v;
    from = DT(F32);
  }
  if (is_half(from) && is_half(to)) {
    v = LLVMBuildFPExt(e->b, v, e->t_f32, "");
    from = DT(F32);
  }
  if (dt_size(to) > dt_size(from)) return LLVMBuildFPExt(e->b, v, reg_ty(e, to), "");
  return LLVMBuildFPTrunc(e->b, v, reg_ty(e, to), "");
}

/* f32 bits made round-to-odd: when f (the RNE result) is inexact and its last bit
 * even, step its magnitude toward the exact value. RNE of that to bf16 is then the
 * correctly rounded bf16 (f32 has more than 8 + 2 significant bits). `inexact`
 * and `bigger` (|f| > |exact|) are i1. */
static LLVMValueRef round_to_odd(em *e, LLVMValueRef f, LLVMValueRef inexact, LLVMValueRef bigger) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef bits = LLVMBuildBitCast(b, f, e->t_i32, "");
  LLVMValueRef even = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, bits, cint(e->t_i32, 1), ""),
                                    cint(e->t_i32, 0), "");
  LLVMValueRef adj = LLVMBuildSelect(b, bigger, LLVMBuildSub(b, bits, cint(e->t_i32, 1), ""),
                                     LLVMBuildAdd(b, bits, cint(e->t_i32, 1), ""), "");
  bits = LLVMBuildSelect(b, LLVMBuildAnd(b, inexact, even, ""), adj, bits, "");
  return LLVMBuildBitCast(b, bits, e->t_f32, "");
}

/* f32 -> bf16, nearest even. Host: bit arithmetic (x86 would call __truncsfbf2,
 * which libgcc < 13 lacks); NVPTX: cvt.rn.bf16.f32. */
static LLVMValueRef f32_to_bf16(em *e, LLVMValueRef v) {
  if (e->t->arch == GC_LLVM_NVPTX) return LLVMBuildFPTrunc(e->b, v, e->t_bf16, "");
  LLVMBuilderRef b = e->b;
  LLVMValueRef bits = LLVMBuildBitCast(b, v, e->t_i32, "");
  LLVMValueRef hi = LLVMBuildLShr(b, bits, cint(e->t_i32, 16), "");
  LLVMValueRef r = LLVMBuildAdd(b, bits, LLVMBuildAdd(b, cint(e->t_i32, 0x7fff),
                                                       LLVMBuildAnd(b, hi, cint(e->t_i32, 1), ""), ""), "");
  r = LLVMBuildLShr(b, r, cint(e->t_i32, 16), "");
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  r = LLVMBuildSelect(b, nan, LLVMBuildOr(b, hi, cint(e->t_i32, 0x40), ""), r, "");  /* quiet NaN */
  return LLVMBuildBitCast(b, LLVMBuildTrunc(b, r, e->t_i16, ""), e->t_bf16, "");
}

/* Float (f64, f32, f16) -> bf16 with one rounding. */
static LLVMValueRef float_to_bf16(em *e, LLVMValueRef v, gc_dtype from) {
  LLVMBuilderRef b = e->b;
  if (from == DT(F16)) v = LLVMBuildFPExt(b, v, e->t_f32, ""), from = DT(F32);
  if (from == DT(F32)) return f32_to_bf16(e, v);
  if (e->t->arch == GC_LLVM_NVPTX) return LLVMBuildFPTrunc(b, v, e->t_bf16, "");  /* rounds once */
  LLVMValueRef f = LLVMBuildFPTrunc(b, v, e->t_f32, "");
  LLVMValueRef back = LLVMBuildFPExt(b, f, e->t_f64, "");
  LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealONE, back, v, "");
  LLVMValueRef bigger = LLVMBuildFCmp(b, LLVMRealOGT, intr1(e, "llvm.fabs", back), intr1(e, "llvm.fabs", v), "");
  return f32_to_bf16(e, round_to_odd(e, f, inexact, bigger));
}

/* Integer -> bf16 with one rounding. sm_90 has cvt.rn.bf16.s32/s64; elsewhere LLVM
 * would round to f32 first, so i32/i64 go through a round-to-odd f32. */
static LLVMValueRef int_to_bf16(em *e, LLVMValueRef v, gc_dtype from) {
  LLVMBuilderRef b = e->b;
  int sgn = is_sint(from);
  if (e->t->arch == GC_LLVM_NVPTX && e->t->sm >= 90)
    return sgn ? LLVMBuildSIToFP(b, v, e->t_bf16, "") : LLVMBuildUIToFP(b, v, e->t_bf16, "");
  LLVMValueRef f = sgn ? LLVMBuildSIToFP(b, v, e->t_f32, "") : LLVMBuildUIToFP(b, v, e->t_f32, "");
  if (from != DT(I32) && from != DT(I64)) return f32_to_bf16(e, f);  /* exact in f32 */
  LLVMValueRef x = from == DT(I32) ? LLVMBuildSExt(b, v, e->t_i64, "") : v;
  LLVMTypeRef ov[2] = {e->t_i64, e->t_f32};
  LLVMValueRef back = intr(e, "llvm.fptosi.sat", ov, 2, &f, 1);  /* exact: |f| <= 2^63 */
  LLVMValueRef inexact = LLVMBuildICmp(b, LLVMIntNE, back, x, "");
  LLVMValueRef bigger = LLVMBuildXor(b, LLVMBuildICmp(b, LLVMIntSGT, back, x, ""),
                                     LLVMBuildICmp(b, LLVMIntSLT, x, cint(e->t_i64, 0), ""), "");
  return f32_to_bf16(e, round_to_odd(e, f, inexact, bigger));
}

/* KIR_E_CAST: BRIEF.md semantics (saturating float->int with NaN -> 0, int wrap,
 * ->bool is != 0, bool->number 0/1, round to nearest even into f16/bf16). */
static LLVMValueRef cvt(em *e, LLVMValueRef v, gc_dtype from, gc_dtype to) {
  LLVMBuilderRef b = e->b;
  if (from == to) return v;
  int ff = gc_dtype_is_float(from), tf = gc_dtype_is_float(to);
  if (to == DT(BOOL)) {  /* NaN != 0 is true, as in C */
    if (ff) return LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstReal(reg_ty(e, from), 0.0), "");
    return LLVMBuildICmp(b, LLVMIntNE, v, cint(reg_ty(e, from), 0), "");
  }
  if (ff && tf) return to == DT(BF16) ? float_to_bf16(e, v, from) : cvt_ff(e, v, from, to);
  if (ff) {              /* float -> int: saturate, NaN -> 0 */
    if (is_half(from)) {
      v = LLVMBuildFPExt(b, v, e->t_f32, "");
    }
    LLVMTypeRef ov[2] = {reg_ty(e, to), LLVMTypeOf(v)};
    return intr(e, to == DT(U8) ? "llvm.fptoui.sat" : "llvm.fptosi.sat", ov, 2, &v, 1);
  }
  if (tf) {              /* int -> float, round to nearest even */
    if (to == DT(BF16)) return int_to_bf16(e, v, from);
    return is_sint(from) ? LLVMBuildSIToFP(b, v, reg_ty(e, to), "")
                         : LLVMBuildUIToFP(b, v, reg_ty(e, to), "");
  }
  /* int -> int: two's complement truncation, sign/zero extension by source */
  unsigned fw = LLVMGetIntTypeWidth(reg_ty(e, from)), tw = LLVMGetIntTypeWidth(reg_ty(e, to));
  if (tw < fw) return LLVMBuildTrunc(b, v, reg_ty(e, to), "");
  if (tw == fw) return v;
  return is_sint(from) ? LLVMBuildSExt(b, v, reg_ty(e, to), "") : LLVMBuildZExt(b, v, reg_ty(e, to), "");
}

/* ---- expressions ----------------------------------------------------------------- */

static LLVMValueRef ex(em *e, const kir_expr *x);

/* Unary op on f32/f64. */
static LLVMValueRef float_unary(em *e, kir_op op, gc_dtype t, LLVMValueRef a) {
  if (e->t->arch == GC_LLVM_HOST && t == DT(F32)) {  /* inline, so that loops vectorize */
    LLVMValueRef r = gc_llvm_host_math_f32(e->b, e->mod, op, a);
    if (r) return r;
  }
  switch (op) {
  case KIR_NEG: return LLVMBuildFNeg(e->b, a, "");
  case KIR_ABS: return intr1(e, "llvm.fabs", a);
  case KIR_SQRT: return intr1(e, "llvm.sqrt", a);
  case KIR_RSQRT:  /* 1/sqrt(x): both correctly rounded, more accurate than rsqrt.approx */
    return LLVMBuildFDiv(e->b, LLVMConstReal(reg_ty(e, t), 1.0), intr1(e, "llvm.sqrt", a), "");
  case KIR_FLOOR: return intr1(e, "llvm.floor", a);
  case KIR_TANH_APPROX: {  /* no side effects: free to move and merge; the host has tanhf */
    if (e->t->arch != GC_LLVM_NVPTX) return math_call(e, KIR_TANH, t, a, NULL);
    LLVMTypeRef fty = LLVMFunctionType(e->t_f32, &e->t_f32, 1, 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, "tanh.approx.f32 $0, $1;", 23, "=f,f", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(e->b, fty, asmv, &a, 1, "");
  }
  case KIR_RCP_APPROX: {  /* MUFU.RCP; the host divides with `arcp ninf`: vectorized, x86 takes a
                           * reciprocal estimate and one Newton step (vrcp14ps + 2 FMAs against
                           * vdivps, a fifth of a depthwise conv + silu); scalar code divides */
    if (e->t->arch != GC_LLVM_NVPTX) {
      LLVMValueRef v = LLVMBuildFDiv(e->b, LLVMConstReal(reg_ty(e, t), 1.0), a, "");
      if (LLVMCanValueUseFastMathFlags(v))  /* the estimate needs ninf: callers keep x finite */
        LLVMSetFastMathFlags(v, LLVMFastMathAllowReciprocal | LLVMFastMathNoInfs | LLVMFastMathAllowContract);
      return v;
    }
    return intr(e, "llvm.nvvm.rcp.approx.ftz.f", NULL, 0, &a, 1);
  }
  case KIR_TF32_ROUND: {  /* cvt.rna.tf32.f32: the tf32 bits in an i32 */
    if (e->t->arch != GC_LLVM_NVPTX) return a;  /* (CUDA targets only; see kir.h) */
    LLVMValueRef r = intr(e, "llvm.nvvm.f2tf32.rna", NULL, 0, &a, 1);
    return LLVMBuildBitCast(e->b, r, e->t_f32, "");
  }
  case KIR_CEIL: return intr1(e, "llvm.ceil", a);
  case KIR_SIGMOID: {  /* (the host's f32 is inline, above) x < -88 ? 0 : 1 / (1 + e^-x) */
    LLVMTypeRef ty = reg_ty(e, t);
    LLVMValueRef ex = math_call(e, KIR_EXP, t, LLVMBuildFNeg(e->b, a, ""), NULL);
    LLVMValueRef y = LLVMBuildFDiv(e->b, LLVMConstReal(ty, 1.0), LLVMBuildFAdd(e->b, LLVMConstReal(ty, 1.0), ex, ""), "");
    LLVMValueRef lo = LLVMBuildFCmp(e->b, LLVMRealOLT, a, LLVMConstReal(ty, -88.0), "");
    return LLVMBuildSelect(e->b, lo, LLVMConstReal(ty, 0.0), y, "");
  }
  case KIR_EXP: case KIR_EXP2: case KIR_LOG: case KIR_TANH: case KIR_ERF: case KIR_SIN:
  case KIR_COS:
    return math_call(e, op, t, a, NULL);
  default: GC_ASSERT(!"bad float unary op"); return NULL;
  }
}

/* Unary op on an integer or bool. */
static LLVMValueRef int_unary(em *e, kir_op op, gc_dtype t, LLVMValueRef a) {
  switch (op) {
  case KIR_NEG: return LLVMBuildNeg(e->b, a, "");  /* wraps */
  case KIR_ABS: {
    if (!is_sint(t)) return a;
    LLVMValueRef args[2] = {a, LLVMConstInt(e->t_i1, 0, 0)};  /* abs(INT_MIN) wraps */
    LLVMTypeRef ty = LLVMTypeOf(a);
    return intr(e, "llvm.abs", &ty, 1, args, 2);
  }
  case KIR_NOT: return LLVMBuildNot(e->b, a, "");
  default: GC_ASSERT(!"bad integer unary op"); return NULL;
  }
}

/* KIR_F8E4M3_SAT / E5M2_SAT (NVPTX, sm_89+): cvt.rn.satfinite.e4m3x2.f32 of a into both
 * bytes of an i16, the low one as the fp8 bits (i8). */
static LLVMValueRef f8_hw(em *e, kir_op op, LLVMValueRef a) {
  GC_ASSERT(e->t->arch == GC_LLVM_NVPTX);
  const char *text = op == KIR_F8E4M3_SAT ? "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $1;" : "cvt.rn.satfinite.e5m2x2.f32 $0, $1, $1;";
  LLVMTypeRef i16 = LLVMInt16TypeInContext(e->ctx), fty = LLVMFunctionType(i16, &e->t_f32, 1, 0);
  LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), "=h,f", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef r = LLVMBuildCall2(e->b, fty, asmv, &a, 1, "");
  return LLVMBuildTrunc(e->b, r, LLVMInt8TypeInContext(e->ctx), "");
}

/* KIR_E_UNARY; f16/bf16 computed in f32. */
static LLVMValueRef emit_unary(em *e, kir_op op, gc_dtype t, LLVMValueRef a) {
  if (!gc_dtype_is_float(t)) return int_unary(e, op, t, a);
  if (!is_half(t)) return float_unary(e, op, t, a);
  LLVMValueRef r = float_unary(e, op, DT(F32), LLVMBuildFPExt(e->b, a, e->t_f32, ""));
  return cvt(e, r, DT(F32), t);
}

/* Let a*b+c fuse into an FMA (one rounding), on the host and on NVPTX alike: CUDA's
 * default (-fmad=true), which the NVRTC path compiles with. */
static LLVMValueRef contract(em *e, LLVMValueRef v) {
  if (LLVMCanValueUseFastMathFlags(v))
    LLVMSetFastMathFlags(v, LLVMFastMathAllowContract);
  return v;
}

/* Binary op on f32/f64 (comparisons give i1). */
static LLVMValueRef float_binary(em *e, kir_op op, gc_dtype t, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = e->b;
  switch (op) {
  case KIR_ADD: return contract(e, LLVMBuildFAdd(B, a, b, ""));
  case KIR_SUB: return contract(e, LLVMBuildFSub(B, a, b, ""));
  case KIR_MUL: return contract(e, LLVMBuildFMul(B, a, b, ""));
  case KIR_DIV: return LLVMBuildFDiv(B, a, b, "");
  case KIR_REM: case KIR_POW: return math_call(e, op, t, a, b);
  case KIR_MIN: return intr2(e, "llvm.minimum", a, b);  /* NaN if either is NaN */
  case KIR_MAX: return intr2(e, "llvm.maximum", a, b);
  case KIR_EQ: return LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "");
  case KIR_NE: return LLVMBuildFCmp(B, LLVMRealUNE, a, b, "");
  case KIR_LT: return LLVMBuildFCmp(B, LLVMRealOLT, a, b, "");
  case KIR_LE: return LLVMBuildFCmp(B, LLVMRealOLE, a, b, "");
  case KIR_GT: return LLVMBuildFCmp(B, LLVMRealOGT, a, b, "");
  case KIR_GE: return LLVMBuildFCmp(B, LLVMRealOGE, a, b, "");
  default: GC_ASSERT(!"bad float binary op"); return NULL;
  }
}

/* Integer division or remainder: x/0 = 0, x%0 = 0, INT_MIN/-1 = INT_MIN, x%-1 = 0. */
static LLVMValueRef int_divrem(em *e, kir_op op, gc_dtype t, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = e->b;
  LLVMTypeRef ty = LLVMTypeOf(a);
  int sgn = is_sint(t);
  LLVMValueRef zero = cint(ty, 0), one = LLVMConstInt(ty, 1, 0);
  LLVMValueRef is0 = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
  LLVMValueRef ism1 = sgn ? LLVMBuildICmp(B, LLVMIntEQ, b, cint(ty, -1), "") : NULL;
  LLVMValueRef bad = sgn ? LLVMBuildOr(B, is0, ism1, "") : is0;
  LLVMValueRef sb = LLVMBuildSelect(B, bad, one, b, "");
  LLVMValueRef r;
  if (op == KIR_DIV) {
    r = sgn ? LLVMBuildSDiv(B, a, sb, "") : LLVMBuildUDiv(B, a, sb, "");
    if (sgn) r = LLVMBuildSelect(B, ism1, LLVMBuildNeg(B, a, ""), r, "");
    return LLVMBuildSelect(B, is0, zero, r, "");
  }
  r = sgn ? LLVMBuildSRem(B, a, sb, "") : LLVMBuildURem(B, a, sb, "");
  return LLVMBuildSelect(B, bad, zero, r, "");
}

/* i32 min/max on NVPTX: setp + selp as inline PTX (LLVM would turn a compare-select back
 * into smin/smax), never min.s32/max.s32: ptxas 13.0 folds a tree of those over negated
 * operands into VIMNMX3 and drops a negation (docs/reliability.md, F29). */
static LLVMValueRef minmax_i32_ptx(em *e, int is_max, LLVMValueRef a, LLVMValueRef b) {
  const char *text = is_max ? "{ .reg .pred p; setp.gt.s32 p, $1, $2; selp.b32 $0, $1, $2, p; }"
                            : "{ .reg .pred p; setp.lt.s32 p, $1, $2; selp.b32 $0, $1, $2, p; }";
  LLVMTypeRef ats[2] = {e->t_i32, e->t_i32};
  LLVMTypeRef fty = LLVMFunctionType(e->t_i32, ats, 2, 0);
  LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)"=r,r,r", 6, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
  LLVMValueRef args[2] = {a, b};
  LLVMValueRef call = LLVMBuildCall2(e->b, fty, asmv, args, 2, "");
  unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);  /* memory(none): a pure function */
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(e->ctx, mem, 0));
  return call;
}

/* Binary op on integers or bool (u8 and bool unsigned). */
static LLVMValueRef int_binary(em *e, kir_op op, gc_dtype t, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = e->b;
  int sgn = is_sint(t);
  switch (op) {
  case KIR_ADD: return LLVMBuildAdd(B, a, b, "");  /* wrap: no nsw */
  case KIR_SUB: return LLVMBuildSub(B, a, b, "");
  case KIR_MUL: return LLVMBuildMul(B, a, b, "");
  case KIR_DIV: case KIR_REM: return int_divrem(e, op, t, a, b);
  case KIR_MIN:
    if (t == DT(BOOL)) return LLVMBuildAnd(B, a, b, "");
    if (t == DT(I32) && e->t->arch == GC_LLVM_NVPTX) return minmax_i32_ptx(e, 0, a, b);
    return intr2(e, sgn ? "llvm.smin" : "llvm.umin", a, b);
  case KIR_MAX:
    if (t == DT(BOOL)) return LLVMBuildOr(B, a, b, "");
    if (t == DT(I32) && e->t->arch == GC_LLVM_NVPTX) return minmax_i32_ptx(e, 1, a, b);
    return intr2(e, sgn ? "llvm.smax" : "llvm.umax", a, b);
  case KIR_AND: return LLVMBuildAnd(B, a, b, "");
  case KIR_OR: return LLVMBuildOr(B, a, b, "");
  case KIR_XOR: return LLVMBuildXor(B, a, b, "");
  case KIR_EQ: return LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
  case KIR_NE: return LLVMBuildICmp(B, LLVMIntNE, a, b, "");
  case KIR_LT: return LLVMBuildICmp(B, sgn ? LLVMIntSLT : LLVMIntULT, a, b, "");
  case KIR_LE: return LLVMBuildICmp(B, sgn ? LLVMIntSLE : LLVMIntULE, a, b, "");
  case KIR_GT: return LLVMBuildICmp(B, sgn ? LLVMIntSGT : LLVMIntUGT, a, b, "");
  case KIR_GE: return LLVMBuildICmp(B, sgn ? LLVMIntSGE : LLVMIntUGE, a, b, "");
  default: GC_ASSERT(!"bad integer binary op"); return NULL;
  }
}

/* Comparison ops give bool; everything else keeps the operand type. */
static int is_cmp(kir_op op) { return op >= KIR_EQ && op <= KIR_GE; }

/* KIR_E_BINARY; f16/bf16 computed in f32 and rounded back. */
static LLVMValueRef emit_binary(em *e, kir_op op, gc_dtype t, LLVMValueRef a, LLVMValueRef b) {
  if (!gc_dtype_is_float(t)) return int_binary(e, op, t, a, b);
  if (!is_half(t)) return float_binary(e, op, t, a, b);
  a = LLVMBuildFPExt(e->b, a, e->t_f32, "");
  b = LLVMBuildFPExt(e->b, b, e->t_f32, "");
  LLVMValueRef r = float_binary(e, op, DT(F32), a, b);
  return is_cmp(op) ? r : cvt(e, r, DT(F32), t);
}

/* An index expression as i64 (narrower ints extended by signedness). */
static LLVMValueRef index64(em *e, const kir_expr *x) {
  LLVMValueRef v = ex(e, x);
  return cvt(e, v, x->type, DT(I64));
}

/* Element pointer buf[idx] in global or shared memory; *dt gets the element dtype. */
static LLVMValueRef elem_ptr(em *e, kir_space sp, int buf, LLVMValueRef idx, gc_dtype *dt) {
  const kir_kernel *k = e->k;
  LLVMValueRef base;
  if (sp == KIR_GLOBAL) {
    GC_ASSERT(buf >= 0 && buf < k->n_params && k->params[buf].kind == KIR_PARAM_BUFFER);
    base = e->params[buf];
    *dt = k->params[buf].dtype;
  } else if (sp == KIR_SCRATCH) {
    GC_ASSERT(buf >= 0 && buf < k->n_scratch);
    base = e->scratch[buf];
    *dt = k->scratch[buf].dtype;
  } else {
    GC_ASSERT(buf >= 0 && buf < k->n_shared);
    base = e->shared[buf];
    *dt = k->shared[buf].dtype;
  }
  return LLVMBuildInBoundsGEP2(e->b, mem_ty(e, *dt), base, &idx, 1, "");
}

/* Scalar load of buf[index], in register form. */
static LLVMValueRef emit_load(em *e, const kir_expr *x) {
  gc_dtype dt;
  LLVMValueRef p = elem_ptr(e, x->u.mem.space, x->u.mem.buf, index64(e, x->u.mem.index), &dt);
  LLVMValueRef v = LLVMBuildLoad2(e->b, mem_ty(e, dt), p, "");
  LLVMSetAlignment(v, dt_size(dt));
  return from_mem(e, v, dt);
}

/* KIR_E_PACK2: lo and hi (f32) rounded to t like a cast (cvt), as i16 bits, lo in bits 0..15. */
static LLVMValueRef emit_pack2(em *e, gc_dtype t, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef l = LLVMBuildBitCast(b, cvt(e, lo, DT(F32), t), e->t_i16, "");
  LLVMValueRef h = LLVMBuildBitCast(b, cvt(e, hi, DT(F32), t), e->t_i16, "");
  l = LLVMBuildZExt(b, l, e->t_i32, "");
  h = LLVMBuildShl(b, LLVMBuildZExt(b, h, e->t_i32, ""), cint(e->t_i32, 16), "");
  return LLVMBuildOr(b, l, h, "pack2");
}

/* Emit expression x; the result has the register type of x->type. */
static LLVMValueRef ex(em *e, const kir_expr *x) {
  switch (x->kind) {
  case KIR_E_CONST:
    if (gc_dtype_is_float(x->type)) return LLVMConstReal(reg_ty(e, x->type), x->u.f);
    if (x->type == DT(BOOL)) return LLVMConstInt(e->t_i1, x->u.i != 0, 0);
    return cint(reg_ty(e, x->type), x->u.i);
  case KIR_E_VAR: {
    GC_ASSERT(x->u.var >= 0 && x->u.var < e->k->n_vars);
    return LLVMBuildLoad2(e->b, reg_ty(e, e->k->vars[x->u.var].type), e->vars[x->u.var],
                          e->k->vars[x->u.var].name);
  }
  case KIR_E_PARAM:
    GC_ASSERT(x->u.param >= 0 && x->u.param < e->k->n_params &&
              e->k->params[x->u.param].kind == KIR_PARAM_I64);
    return cvt(e, e->params[x->u.param], DT(I64), x->type);
  case KIR_E_SPECIAL:
    return cvt(e, t_special(e, x->u.special), DT(I32), x->type);
  case KIR_E_UNARY:
    if (x->u.op.op == KIR_F8E4M3_SAT || x->u.op.op == KIR_F8E5M2_SAT) return f8_hw(e, x->u.op.op, ex(e, x->u.op.a));
    return emit_unary(e, x->u.op.op, x->type, ex(e, x->u.op.a));
  case KIR_E_BINARY: {
    LLVMValueRef a = ex(e, x->u.op.a), b = ex(e, x->u.op.b);
    return emit_binary(e, x->u.op.op, x->u.op.a->type, a, b);
  }
  case KIR_E_SELECT: {
    LLVMValueRef c = ex(e, x->u.op.a), a = ex(e, x->u.op.b), b = ex(e, x->u.op.c);
    return LLVMBuildSelect(e->b, c, a, b, "");
  }
  case KIR_E_CAST:
    return cvt(e, ex(e, x->u.op.a), x->u.op.a->type, x->type);
  case KIR_E_BITCAST: {  /* fp8 <-> u8 are both i8 already */
    LLVMValueRef a = ex(e, x->u.op.a);
    LLVMTypeRef ty = reg_ty(e, x->type);
    return LLVMTypeOf(a) == ty ? a : LLVMBuildBitCast(e->b, a, ty, "");
  }
  case KIR_E_LOAD:
    return emit_load(e, x);
  case KIR_E_SHFL_XOR:
    return t_shfl_xor(e, ex(e, x->u.shfl.a), x->type, x->u.shfl.mask);
  case KIR_E_PACK2: {
    LLVMValueRef lo = ex(e, x->u.pack.lo), hi = ex(e, x->u.pack.hi);
    return emit_pack2(e, x->u.pack.dtype, lo, hi);
  }
  }
  GC_ASSERT(!"bad expression kind");
  return NULL;
}

/* ---- statements ------------------------------------------------------------------ */

static void emit_block(em *e, const kir_block *blk);

/* Alignment of a W-element vector access: its size, at most 16 bytes. */
static unsigned vec_align(gc_dtype dt, int width) {
  unsigned a = dt_size(dt) * (unsigned)width;
  return a > 16 ? 16 : a;
}

/* vars[0..W) = buf[index .. index+W) as one vector load. */
static void emit_load_vec(em *e, const kir_stmt *s) {
  gc_dtype dt;
  int w = s->u.vec.width;
  GC_ASSERT(w >= 1 && w <= KIR_MAX_VEC);
  LLVMValueRef p = elem_ptr(e, s->u.vec.space, s->u.vec.buf, index64(e, s->u.vec.index), &dt);
  LLVMTypeRef vty = LLVMVectorType(mem_ty(e, dt), (unsigned)w);
  LLVMValueRef v = LLVMBuildLoad2(e->b, vty, p, "");
  LLVMSetAlignment(v, vec_align(dt, w));
  for (int i = 0; i < w; i++) {
    LLVMValueRef x = LLVMBuildExtractElement(e->b, v, cint(e->t_i32, i), "");
    int var = s->u.vec.vars[i];
    GC_ASSERT(var >= 0 && var < e->k->n_vars && e->k->vars[var].type == dt);
    LLVMBuildStore(e->b, from_mem(e, x, dt), e->vars[var]);
  }
}

/* buf[index .. index+W) = values[0..W) as one vector store. */
static void emit_store_vec(em *e, const kir_stmt *s) {
  int w = s->u.vec.width;
  GC_ASSERT(w >= 1 && w <= KIR_MAX_VEC);
  LLVMValueRef vals[KIR_MAX_VEC];
  for (int i = 0; i < w; i++) vals[i] = ex(e, s->u.vec.values[i]);
  gc_dtype dt;
  LLVMValueRef p = elem_ptr(e, s->u.vec.space, s->u.vec.buf, index64(e, s->u.vec.index), &dt);
  LLVMTypeRef vty = LLVMVectorType(mem_ty(e, dt), (unsigned)w);
  LLVMValueRef v = LLVMGetPoison(vty);
  for (int i = 0; i < w; i++) {
    GC_ASSERT(s->u.vec.values[i]->type == dt);
    v = LLVMBuildInsertElement(e->b, v, to_mem(e, vals[i], dt), cint(e->t_i32, i), "");
  }
  LLVMValueRef st = LLVMBuildStore(e->b, v, p);
  LLVMSetAlignment(st, vec_align(dt, w));
}

/* Mark the loop whose back edge is br with its properties: !llvm.loop !{self, props...},
 * the loop ID referring to itself through a temporary node. "llvm.loop.unroll.disable"
 * keeps a loop rolled (NVPTX prints it as .pragma "nounroll");
 * !{"llvm.loop.vectorize.predicate.enable", i1 true} masks the vector tail. */
static void loop_props(em *e, LLVMValueRef br, int nounroll, int masked_tail) {
  LLVMMetadataRef ops[3];
  int n = 1;
  LLVMMetadataRef tru = LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(e->ctx), 1, 0));
  if (nounroll) {
    LLVMMetadataRef k = LLVMMDStringInContext2(e->ctx, "llvm.loop.unroll.disable", 24);
    ops[n++] = LLVMMDNodeInContext2(e->ctx, &k, 1);
  }
  if (masked_tail) {
    LLVMMetadataRef kv[2] = {LLVMMDStringInContext2(e->ctx, "llvm.loop.vectorize.predicate.enable", 36), tru};
    ops[n++] = LLVMMDNodeInContext2(e->ctx, kv, 2);
  }
  if (n == 1) return;
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(e->ctx, NULL, 0);
  ops[0] = tmp;
  LLVMMetadataRef id = LLVMMDNodeInContext2(e->ctx, ops, (size_t)n);
  LLVMMetadataReplaceAllUsesWith(tmp, id);  /* also disposes tmp */
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(e->ctx, "llvm.loop", 9), LLVMMetadataAsValue(e->ctx, id));
}

/* for (var = lo; var < hi; var += step) body: header / body / latch / exit blocks;
 * hi and step are evaluated every iteration, as in C. */
static void emit_for(em *e, const kir_stmt *s) {
  int var = s->u.loop.var;
  GC_ASSERT(var >= 0 && var < e->k->n_vars);
  gc_dtype vt = e->k->vars[var].type;
  LLVMTypeRef ty = reg_ty(e, vt);
  LLVMBuildStore(e->b, ex(e, s->u.loop.lo), e->vars[var]);
  LLVMBasicBlockRef hdr = new_bb(e, "for.header"), body = new_bb(e, "for.body");
  LLVMBasicBlockRef latch = new_bb(e, "for.latch"), exit = new_bb(e, "for.exit");
  LLVMBuildBr(e->b, hdr);
  enter(e, hdr);
  LLVMValueRef v = LLVMBuildLoad2(e->b, ty, e->vars[var], "");
  LLVMValueRef c = emit_binary(e, KIR_LT, vt, v, ex(e, s->u.loop.hi));
  LLVMBuildCondBr(e->b, c, body, exit);
  enter(e, body);
  emit_block(e, &s->u.loop.body);
  LLVMBuildBr(e->b, latch);
  enter(e, latch);
  v = LLVMBuildLoad2(e->b, ty, e->vars[var], "");
  LLVMBuildStore(e->b, emit_binary(e, KIR_ADD, vt, v, ex(e, s->u.loop.step)), e->vars[var]);
  LLVMValueRef back = LLVMBuildBr(e->b, hdr);
  loop_props(e, back, s->u.loop.nounroll, s->u.loop.masked_tail && e->t->arch == GC_LLVM_HOST);
  enter(e, exit);
}

/* if (cond) then [else els]. */
static void emit_if(em *e, const kir_stmt *s) {
  LLVMValueRef c = ex(e, s->u.cond.cond);
  int has_else = s->u.cond.els.head != NULL;
  LLVMBasicBlockRef th = new_bb(e, "if.then");
  LLVMBasicBlockRef el = has_else ? new_bb(e, "if.else") : NULL;
  LLVMBasicBlockRef end = new_bb(e, "if.end");
  LLVMBuildCondBr(e->b, c, th, has_else ? el : end);
  enter(e, th);
  emit_block(e, &s->u.cond.then);
  LLVMBuildBr(e->b, end);
  if (has_else) {
    enter(e, el);
    emit_block(e, &s->u.cond.els);
    LLVMBuildBr(e->b, end);
  }
  enter(e, end);
}

/* ---- tensor-core statements: the same PTX instructions the CUDA C printer writes ---- */

/* Call inline PTX `text` with constraints `cons` returning ret (void, i32 or a struct). */
static LLVMValueRef inline_ptx(em *e, const char *text, const char *cons, LLVMTypeRef ret,
                               LLVMValueRef *args, int n) {
  LLVMTypeRef ats[16];
  GC_ASSERT(n <= 16);
  for (int i = 0; i < n; i++) ats[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef fty = LLVMFunctionType(ret, ats, (unsigned)n, 0);
  LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(e->b, fty, asmv, args, (unsigned)n, "");
}

/* 32-bit shared-window address of shared[idx]. */
static LLVMValueRef shared_addr(em *e, int buf, const kir_expr *idx) {
  gc_dtype dt;
  LLVMValueRef p = elem_ptr(e, KIR_SHARED, buf, index64(e, idx), &dt);
  return LLVMBuildPtrToInt(e->b, p, e->t_i32, "");
}

/* Store element i of struct value v into var. */
static void store_field(em *e, LLVMValueRef v, unsigned i, int var) {
  LLVMBuildStore(e->b, LLVMBuildExtractValue(e->b, v, i, ""), e->vars[var]);
}

/* Load var (register form). */
static LLVMValueRef var_val(em *e, int var) {
  return LLVMBuildLoad2(e->b, reg_ty(e, e->k->vars[var].type), e->vars[var], "");
}

/* WGMMA: the matrix descriptors ((shared address & 0x3FFFF) >> 4 | kir_wg_desc_bits), then
 * wgmma.mma_async with the n/2 accumulators as outputs tied to their inputs. */
static void emit_wgmma(em *e, const kir_stmt *s) {
  int nd = s->u.wg.n / 2, ra = s->u.wg.a_in_regs;
  const kir_wg_opnd *ops[2] = {&s->u.wg.a, &s->u.wg.b};
  /* inputs before the tied accumulators: descriptor a (or the 4 A registers, tf32),
   * descriptor b, scale-d */
  int na = ra ? 4 : 1, nin = na + 2;
  LLVMValueRef args[6 + 128];
  LLVMTypeRef ats[6 + 128], fts[128];
  for (int i = 0; i < 4 && ra; i++) {
    args[i] = var_val(e, s->u.wg.a_regs[i]);
    if (LLVMTypeOf(args[i]) == e->t_f32) args[i] = LLVMBuildBitCast(e->b, args[i], e->t_i32, "");
  }
  for (int i = ra; i < 2; i++) {
    LLVMValueRef a = LLVMBuildZExt(e->b, shared_addr(e, ops[i]->buf, ops[i]->index), e->t_i64, "");
    a = LLVMBuildLShr(e->b, LLVMBuildAnd(e->b, a, cint(e->t_i64, 0x3FFFF), ""), cint(e->t_i64, 4), "");
    args[i ? na : 0] = LLVMBuildOr(e->b, a, cint(e->t_i64, (unsigned long long)kir_wg_desc_bits(ops[i])), "");
  }
  args[na + 1] = cint(e->t_i32, !s->u.wg.overwrite);  /* scale-d: 0 overwrites */
  for (int i = 0; i < nd; i++) {
    args[nin + i] = var_val(e, s->u.wg.d[i]);
    fts[i] = KIR_MMA_IS_INT(s->u.wg.kind) ? e->t_i32 : e->t_f32;
  }
  for (int i = 0; i < nin + nd; i++) ats[i] = LLVMTypeOf(args[i]);
  /* at most 128 accumulators: "$127, " and ",127" fit in 6 and 4 characters each */
  char text[2048], cons[2048];
  int f8 = s->u.wg.kind >= KIR_MMA_E4M3;  /* 8-bit: no transpose operands (K-major only) */
  int in = KIR_MMA_IS_INT(s->u.wg.kind);  /* i32 accumulators */
  int tl = snprintf(text, sizeof text,
                    "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\nwgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s {",
                    nd + na + 1, s->u.wg.n, kir_mma_k(s->u.wg.kind), in ? "s32" : "f32", kir_mma_type(s->u.wg.kind),
                    kir_mma_type(s->u.wg.kind_b));
  int cl = 0;
  for (int i = 0; i < nd; i++) {
    tl += snprintf(text + tl, sizeof text - (size_t)tl, "%s$%d", i ? ", " : "", i);
    cl += snprintf(cons + cl, sizeof cons - (size_t)cl, KIR_MMA_IS_INT(s->u.wg.kind) ? "=r," : "=f,");
  }
  if (ra) {
    tl += snprintf(text + tl, sizeof text - (size_t)tl, "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1;\n}", nd, nd + 1,
                   nd + 2, nd + 3, nd + 4);
    cl += snprintf(cons + cl, sizeof cons - (size_t)cl, "r,r,r,r,l,r");
  } else if (in) {  /* integers: no scale operands either */
    tl += snprintf(text + tl, sizeof text - (size_t)tl, "}, $%d, $%d, p;\n}", nd, nd + 1);
    cl += snprintf(cons + cl, sizeof cons - (size_t)cl, "l,l,r");
  } else if (f8) {
    tl += snprintf(text + tl, sizeof text - (size_t)tl, "}, $%d, $%d, p, 1, 1;\n}", nd, nd + 1);
    cl += snprintf(cons + cl, sizeof cons - (size_t)cl, "l,l,r");
  } else {
    tl += snprintf(text + tl, sizeof text - (size_t)tl, "}, $%d, $%d, p, 1, 1, 0, %d;\n}", nd, nd + 1,
                   ops[1]->mn_major);
    cl += snprintf(cons + cl, sizeof cons - (size_t)cl, "l,l,r");
  }
  for (int i = 0; i < nd; i++) cl += snprintf(cons + cl, sizeof cons - (size_t)cl, ",%d", i);
  cl += snprintf(cons + cl, sizeof cons - (size_t)cl, ",~{memory}");
  GC_ASSERT(nd <= 128 && tl < (int)sizeof text && cl < (int)sizeof cons);
  LLVMTypeRef ret = LLVMStructTypeInContext(e->ctx, fts, (unsigned)nd, 0);
  LLVMTypeRef fty = LLVMFunctionType(ret, ats, (unsigned)(nin + nd), 0);
  LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, (size_t)tl, cons, (size_t)cl, 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef r = LLVMBuildCall2(e->b, fty, asmv, args, (unsigned)(nin + nd), "");
  for (int i = 0; i < nd; i++) store_field(e, r, (unsigned)i, s->u.wg.d[i]);
}

/* Shared-memory barriers and bulk tensor copies (kir.h), the CUDA C printer's instructions. */
static void emit_tma(em *e, const kir_stmt *s) {
  char text[320];
  if (s->kind == KIR_S_TMAP_ACQUIRE) {
    LLVMValueRef a = e->params[s->u.tma.tmap];
    inline_ptx(e, "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l,~{memory}", e->t_void, &a, 1);
    return;
  }
  if (s->kind == KIR_S_TMA_LOAD) {
    int r = s->u.tma.rank;
    LLVMValueRef args[3 + KIR_TMAP_MAX_RANK] = {shared_addr(e, s->u.tma.sbuf, s->u.tma.sindex),
                                                e->params[s->u.tma.tmap],
                                                shared_addr(e, s->u.tma.mbuf, s->u.tma.mindex)};
    int tl = snprintf(text, sizeof text,
                      "cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {", r);
    char cons[64] = "r,l,r";
    for (int i = 0; i < r; i++) {
      args[3 + i] = LLVMBuildTrunc(e->b, index64(e, s->u.tma.coord[i]), e->t_i32, "");
      tl += snprintf(text + tl, sizeof text - (size_t)tl, "%s$%d", i ? ", " : "", 3 + i);
      strcat(cons, ",r");
    }
    snprintf(text + tl, sizeof text - (size_t)tl, "}], [$2];");
    strcat(cons, ",~{memory}");
    inline_ptx(e, text, cons, e->t_void, args, 3 + r);
    return;
  }
  LLVMValueRef args[2] = {shared_addr(e, s->u.mbar.buf, s->u.mbar.index), NULL};
  switch (s->kind) {
    case KIR_S_MBAR_INIT:
      snprintf(text, sizeof text, "mbarrier.init.shared::cta.b64 [$0], %d;\n\tfence.mbarrier_init.release.cluster;",
               s->u.mbar.count);
      inline_ptx(e, text, "r,~{memory}", e->t_void, args, 1);
      return;
    case KIR_S_MBAR_EXPECT:
      snprintf(text, sizeof text, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], %d;", s->u.mbar.count);
      inline_ptx(e, text, "r,~{memory}", e->t_void, args, 1);
      return;
    default:
      args[1] = LLVMBuildTrunc(e->b, index64(e, s->u.mbar.parity), e->t_i32, "");
      inline_ptx(e,
                 "{\n\t.reg .pred p;\n\tGC_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n\t"
                 "@!p bra GC_WAIT;\n\t}",
                 "r,r,~{memory}", e->t_void, args, 2);
      return;
  }
}

static void emit_tensor_core(em *e, const kir_stmt *s) {
  GC_ASSERT(e->t->arch == GC_LLVM_NVPTX);
  switch (s->kind) {
  case KIR_S_MBAR_INIT: case KIR_S_MBAR_EXPECT: case KIR_S_MBAR_WAIT: case KIR_S_TMA_LOAD: case KIR_S_TMAP_ACQUIRE:
    emit_tma(e, s);
    return;
  case KIR_S_CP_ASYNC: {
    LLVMValueRef q = ex(e, s->u.copy.pred);
    LLVMValueRef sa = shared_addr(e, s->u.copy.sbuf, s->u.copy.sindex);
    LLVMValueRef gi = LLVMBuildSelect(e->b, q, index64(e, s->u.copy.gindex), cint(e->t_i64, 0), "");
    gc_dtype dt;
    LLVMValueRef gp = elem_ptr(e, KIR_GLOBAL, s->u.copy.gbuf, gi, &dt);
    LLVMValueRef args[3] = {sa, LLVMBuildPtrToInt(e->b, gp, e->t_i64, ""),
                            LLVMBuildSelect(e->b, q, cint(e->t_i32, 16), cint(e->t_i32, 0), "")};
    inline_ptx(e, "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r,~{memory}", e->t_void, args, 3);
    return;
  }
  case KIR_S_CP_COMMIT:
    inline_ptx(e, "cp.async.commit_group;", "~{memory}", e->t_void, NULL, 0);
    return;
  case KIR_S_CP_WAIT: {
    char text[64];
    snprintf(text, sizeof text, "cp.async.wait_group %d;", s->u.wait);
    inline_ptx(e, text, "~{memory}", e->t_void, NULL, 0);
    return;
  }
  case KIR_S_LDMATRIX: {
    LLVMTypeRef f4[4] = {e->t_i32, e->t_i32, e->t_i32, e->t_i32};
    LLVMValueRef sa = shared_addr(e, s->u.ldm.buf, s->u.ldm.index);
    char text[128];
    snprintf(text, sizeof text, "ldmatrix.sync.aligned.m8n8.x4%s.shared.b16 {$0, $1, $2, $3}, [$4];",
             s->u.ldm.trans ? ".trans" : "");
    LLVMValueRef r = inline_ptx(e, text, "=r,=r,=r,=r,r,~{memory}", LLVMStructTypeInContext(e->ctx, f4, 4, 0),
                                &sa, 1);
    for (unsigned i = 0; i < 4; i++) store_field(e, r, i, s->u.ldm.vars[i]);
    return;
  }
  case KIR_S_MMA: {
    LLVMTypeRef f4[4] = {e->t_f32, e->t_f32, e->t_f32, e->t_f32};
    LLVMValueRef args[10];
    for (int i = 0; i < 4; i++) args[i] = var_val(e, s->u.mma.a[i]);
    for (int i = 0; i < 2; i++) args[4 + i] = var_val(e, s->u.mma.b[i]);
    for (int i = 0; i < 4; i++) args[6 + i] = var_val(e, s->u.mma.d[i]);
    char text[256];
    snprintf(text, sizeof text, "%s {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
             kir_mma_ptx(s->u.mma.kind));
    /* fragments are .b32 registers: f32 variables (tf32 operands) pass their bits */
    for (int i = 0; i < 6; i++)
      if (LLVMTypeOf(args[i]) == e->t_f32) args[i] = LLVMBuildBitCast(e->b, args[i], e->t_i32, "");
    LLVMValueRef r = inline_ptx(e, text, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3",
                                LLVMStructTypeInContext(e->ctx, f4, 4, 0), args, 10);
    for (unsigned i = 0; i < 4; i++) store_field(e, r, i, s->u.mma.d[i]);
    return;
  }
  case KIR_S_FENCE_ASYNC:
    inline_ptx(e, "fence.proxy.async.shared::cta;", "~{memory}", e->t_void, NULL, 0);
    return;
  case KIR_S_WG_FENCE:
    inline_ptx(e, "wgmma.fence.sync.aligned;", "~{memory}", e->t_void, NULL, 0);
    return;
  case KIR_S_WG_COMMIT:
    inline_ptx(e, "wgmma.commit_group.sync.aligned;", "~{memory}", e->t_void, NULL, 0);
    return;
  case KIR_S_WG_WAIT: {
    char text[64];
    snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", s->u.wait);
    inline_ptx(e, text, "~{memory}", e->t_void, NULL, 0);
    return;
  }
  case KIR_S_WGMMA: emit_wgmma(e, s); return;
  default: GC_ASSERT(!"not a tensor-core statement");
  }
}

/* One statement at the builder's position. */
static void emit_stmt(em *e, const kir_stmt *s) {
  switch (s->kind) {
  case KIR_S_ASSIGN: {
    int var = s->u.assign.var;
    GC_ASSERT(var >= 0 && var < e->k->n_vars && e->k->vars[var].type == s->u.assign.value->type);
    LLVMBuildStore(e->b, ex(e, s->u.assign.value), e->vars[var]);
    return;
  }
  case KIR_S_STORE: {
    LLVMValueRef v = ex(e, s->u.store.value);
    gc_dtype dt;
    LLVMValueRef p = elem_ptr(e, s->u.store.space, s->u.store.buf, index64(e, s->u.store.index), &dt);
    GC_ASSERT(s->u.store.value->type == dt);
    LLVMValueRef st = LLVMBuildStore(e->b, to_mem(e, v, dt), p);
    LLVMSetAlignment(st, dt_size(dt));
    return;
  }
  case KIR_S_LOAD_VEC: emit_load_vec(e, s); return;
  case KIR_S_STORE_VEC: emit_store_vec(e, s); return;
  case KIR_S_FOR: emit_for(e, s); return;
  case KIR_S_IF: emit_if(e, s); return;
  case KIR_S_BARRIER: t_barrier(e); return;
  case KIR_S_CP_ASYNC: case KIR_S_CP_COMMIT: case KIR_S_CP_WAIT: case KIR_S_LDMATRIX: case KIR_S_MMA:
  case KIR_S_FENCE_ASYNC: case KIR_S_WG_FENCE: case KIR_S_WG_COMMIT: case KIR_S_WG_WAIT: case KIR_S_WGMMA:
  case KIR_S_MBAR_INIT: case KIR_S_MBAR_EXPECT: case KIR_S_MBAR_WAIT: case KIR_S_TMA_LOAD:
  case KIR_S_TMAP_ACQUIRE:
    emit_tensor_core(e, s);
    return;
  }
  GC_ASSERT(!"bad statement kind");
}

/* Statements of a block in order. */
static void emit_block(em *e, const kir_block *blk) {
  for (const kir_stmt *s = blk->head; s; s = s->next) emit_stmt(e, s);
}

/* ---- kernels --------------------------------------------------------------------- */

/* Append {fn, key, i32 val} to !nvvm.annotations. */
static void nvvm_annotate(em *e, LLVMValueRef fn, const char *key, int val) {
  LLVMMetadataRef ops[3] = {
      LLVMValueAsMetadata(fn),
      LLVMMDStringInContext2(e->ctx, key, strlen(key)),
      LLVMValueAsMetadata(cint(e->t_i32, val)),
  };
  LLVMValueRef node = LLVMMetadataAsValue(e->ctx, LLVMMDNodeInContext2(e->ctx, ops, 3));
  LLVMAddNamedMetadataOperand(e->mod, "nvvm.annotations", node);
}

/* The function that holds the body: the kernel itself (NVPTX) or `name.body`
 * with trailing (i64 begin, i64 end) (host). Buffers get noalias [readonly]. */
static LLVMValueRef make_body_fn(em *e) {
  const kir_kernel *k = e->k;
  int host = e->t->arch == GC_LLVM_HOST;
  int n = k->n_params + (host ? 2 : 0);
  LLVMTypeRef *pt = malloc(sizeof(LLVMTypeRef) * (size_t)(n ? n : 1));
  if (!pt) return NULL;
  for (int i = 0; i < k->n_params; i++)
    pt[i] = k->params[i].kind == KIR_PARAM_BUFFER ? e->t_gptr : e->t_i64;
  if (host) pt[n - 2] = pt[n - 1] = e->t_i64;
  LLVMTypeRef fty = LLVMFunctionType(e->t_void, pt, (unsigned)n, 0);
  free(pt);
  char name[300];
  snprintf(name, sizeof name, host ? "%s.body" : "%s", k->name);
  LLVMValueRef fn = LLVMAddFunction(e->mod, name, fty);
  add_attr(e, fn, LLVMAttributeFunctionIndex, "nounwind");
  if (host) {
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_attr(e, fn, LLVMAttributeFunctionIndex, "alwaysinline");
  } else {
    LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
    nvvm_annotate(e, fn, "kernel", 1);
    /* the runtime launches exactly launch.block threads per block (CUDA C: __launch_bounds__) */
    nvvm_annotate(e, fn, "maxntidx", k->launch.block);
    if (k->min_blocks) nvvm_annotate(e, fn, "minctasm", k->min_blocks);
  }
  for (int i = 0; i < k->n_params; i++) {
    LLVMValueRef p = LLVMGetParam(fn, (unsigned)i);
    LLVMSetValueName2(p, k->params[i].name, strlen(k->params[i].name));
    if (k->params[i].kind != KIR_PARAM_BUFFER) continue;
    add_attr(e, fn, (LLVMAttributeIndex)(i + 1), "noalias");
    if (k->params[i].readonly) add_attr(e, fn, (LLVMAttributeIndex)(i + 1), "readonly");
  }
  return fn;
}

/* Host entry `name(ptr args, i64 begin, i64 end)`: unpack 8-byte slots, call the body. */
static int make_host_wrapper(em *e, LLVMValueRef body) {
  const kir_kernel *k = e->k;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(e->ctx, 0);
  LLVMTypeRef pt[3] = {ptr, e->t_i64, e->t_i64};
  LLVMValueRef fn = LLVMAddFunction(e->mod, k->name, LLVMFunctionType(e->t_void, pt, 3, 0));
  add_attr(e, fn, LLVMAttributeFunctionIndex, "nounwind");
  int n = k->n_params + 2;
  LLVMValueRef *args = malloc(sizeof(LLVMValueRef) * (size_t)n);
  if (!args) return -1;
  LLVMPositionBuilderAtEnd(e->b, LLVMAppendBasicBlockInContext(e->ctx, fn, "entry"));
  LLVMValueRef slots = LLVMGetParam(fn, 0);
  for (int i = 0; i < k->n_params; i++) {
    LLVMValueRef idx = cint(e->t_i64, i);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(e->b, e->t_i64, slots, &idx, 1, "");
    LLVMTypeRef ty = k->params[i].kind == KIR_PARAM_BUFFER ? ptr : e->t_i64;
    args[i] = LLVMBuildLoad2(e->b, ty, p, k->params[i].name);
    LLVMSetAlignment(args[i], 8);
  }
  args[n - 2] = LLVMGetParam(fn, 1);
  args[n - 1] = LLVMGetParam(fn, 2);
  LLVMBuildCall2(e->b, LLVMGlobalGetValueType(body), body, args, (unsigned)n, "");
  LLVMBuildRetVoid(e->b);
  free(args);
  return 0;
}

/* Item loop bounds: first item, stride and end for this thread / block / host call. */
static void item_bounds(em *e, LLVMValueRef *lo, LLVMValueRef *step, LLVMValueRef *hi) {
  const kir_kernel *k = e->k;
  LLVMBuilderRef b = e->b;
  LLVMValueRef n = cint(e->t_i64, k->launch.n);
  if (e->t->arch == GC_LLVM_HOST) {
    unsigned np = (unsigned)k->n_params;
    *lo = LLVMGetParam(e->fn, np);
    *step = cint(e->t_i64, 1);
    *hi = intr2(e, "llvm.smin", LLVMGetParam(e->fn, np + 1), n);
    return;
  }
  LLVMValueRef ctaid = LLVMBuildZExt(b, sreg(e, "ctaid.x"), e->t_i64, "");
  LLVMValueRef nctaid = LLVMBuildZExt(b, sreg(e, "nctaid.x"), e->t_i64, "");
  *hi = n;
  if (k->launch.kind == KIR_LAUNCH_BLOCKS) {
    *lo = ctaid;
    *step = nctaid;
    return;
  }
  LLVMValueRef ntid = LLVMBuildZExt(b, sreg(e, "ntid.x"), e->t_i64, "");
  LLVMValueRef tid = LLVMBuildZExt(b, sreg(e, "tid.x"), e->t_i64, "");
  *lo = LLVMBuildAdd(b, LLVMBuildMul(b, ctaid, ntid, ""), tid, "");
  *step = LLVMBuildMul(b, nctaid, ntid, "");
}

/* Nonzero when a kernel called `name` would clash with a function the emitter
 * declares (math library, intrinsics): the call would resolve to the kernel. */
static int reserved_name(const char *name) {
  static const char *const math[] = {"exp", "exp2", "log", "tanh", "erf", "sin", "cos", "pow", "fmod"};
  if (strncmp(name, "llvm.", 5) == 0 || strncmp(name, "__nv_", 5) == 0) return 1;
  for (size_t i = 0; i < sizeof math / sizeof math[0]; i++) {
    size_t n = strlen(math[i]);
    if (strncmp(name, math[i], n) == 0 && (name[n] == 0 || (name[n] == 'f' && name[n + 1] == 0)))
      return 1;
  }
  return 0;
}

/* Emit one kernel into e->mod. Returns -1 after reporting to e->d. */
static int emit_kernel(em *e, const kir_kernel *k) {
  e->k = k;
  int host = e->t->arch == GC_LLVM_HOST;
  gc_loc noloc = {0, 0};
  if (reserved_name(k->name)) {
    gc_error_at(e->d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "kernel name %s clashes with a math library function", k->name);
    return -1;
  }
  if (host && k->launch.kind == KIR_LAUNCH_BLOCKS && k->launch.block != 1) {
    gc_error_at(e->d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "kernel %s: host target needs BLOCKS launches with one thread per group (got %d)",
                k->name, k->launch.block);
    return -1;
  }
  GC_ASSERT(k->item_var >= 0 && k->item_var < k->n_vars);
  e->vars = calloc((size_t)k->n_vars + 1, sizeof(LLVMValueRef));
  e->params = calloc((size_t)k->n_params + 1, sizeof(LLVMValueRef));
  e->shared = calloc((size_t)k->n_shared + 1, sizeof(LLVMValueRef));
  e->scratch = calloc((size_t)k->n_scratch + 1, sizeof(LLVMValueRef));
  e->fn = (e->vars && e->params && e->shared && e->scratch) ? make_body_fn(e) : NULL;
  if (!e->fn || (host && make_host_wrapper(e, e->fn) != 0)) {
    gc_error_at(e->d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory emitting kernel %s", k->name);
    return -1;
  }
  for (int i = 0; i < k->n_params; i++) e->params[i] = LLVMGetParam(e->fn, (unsigned)i);

  LLVMBasicBlockRef entry = new_bb(e, "entry");
  enter(e, entry);
  for (int i = 0; i < k->n_vars; i++)
    e->vars[i] = LLVMBuildAlloca(e->b, reg_ty(e, k->vars[i].type), k->vars[i].name);
  GC_ASSERT(!k->shared_dynamic || !host);
  LLVMValueRef dyn = k->shared_dynamic && k->n_shared > 0 ? t_dynamic_shared_base(e) : NULL;
  for (int i = 0; i < k->n_shared; i++) e->shared[i] = t_shared_array(e, i, dyn);
  for (int i = 0; i < k->n_scratch; i++) {  /* per thread: the stack (host), local memory (NVPTX) */
    const kir_shared *s = &k->scratch[i];
    e->scratch[i] = LLVMBuildAlloca(e->b, LLVMArrayType2(mem_ty(e, s->dtype), (uint64_t)s->count), "scratch");
    LLVMSetAlignment(e->scratch[i], 64);
  }
  for (int i = 0; i < k->n_vars; i++)  /* zero-initialized, like the CUDA C printer's `T v{}` */
    LLVMBuildStore(e->b, LLVMConstNull(reg_ty(e, k->vars[i].type)), e->vars[i]);

  LLVMValueRef lo, step, hi;
  item_bounds(e, &lo, &step, &hi);
  LLVMValueRef item = e->vars[k->item_var];
  GC_ASSERT(k->vars[k->item_var].type == DT(I64));
  LLVMBuildStore(e->b, lo, item);
  LLVMBasicBlockRef hdr = new_bb(e, "item.header"), body = new_bb(e, "item.body");
  LLVMBasicBlockRef latch = new_bb(e, "item.latch"), exit = new_bb(e, "exit");
  LLVMBuildBr(e->b, hdr);
  enter(e, hdr);
  LLVMValueRef v = LLVMBuildLoad2(e->b, e->t_i64, item, "");
  LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, v, hi, ""), body, exit);
  enter(e, body);
  emit_block(e, &k->body);
  /* the next group reuses shared memory: wait until every thread is done with it */
  if (!host && k->one_pass) {
    LLVMBuildBr(e->b, exit);  /* one block per group: no next group (kir.h) */
  } else {
    if (k->launch.kind == KIR_LAUNCH_BLOCKS && k->n_shared > 0) t_barrier(e);
    LLVMBuildBr(e->b, latch);
  }
  enter(e, latch);
  v = LLVMBuildLoad2(e->b, e->t_i64, item, "");
  LLVMBuildStore(e->b, LLVMBuildAdd(e->b, v, step, ""), item);
  LLVMBuildBr(e->b, hdr);
  enter(e, exit);
  LLVMBuildRetVoid(e->b);
  return 0;
}

/* Release the per-kernel arrays. */
static void kernel_done(em *e) {
  free(e->vars);
  free(e->params);
  free(e->shared);
  free(e->scratch);
  e->vars = e->params = e->shared = e->scratch = NULL;
}

/* Host: define __truncsfbf2 (f32 -> bf16, nearest even; weak, hidden) in the module.
 * LLVM folds fpext into the bf16 operation consuming it (floor, fabs, minimum of two
 * extended bf16 values become bf16 operations); an x86 CPU without native bf16
 * conversions computes those in f32 and rounds back by calling __truncsfbf2, which only
 * libgcc 13 and later provide (not Debian 12's): neither the JIT nor a program linking
 * an AOT object would find it. CPUs with AVX512-BF16 convert natively and never call it. */
static void host_truncsfbf2(em *e) {
  if (LLVMGetNamedFunction(e->mod, "__truncsfbf2")) return;
  LLVMTypeRef fty = LLVMFunctionType(e->t_bf16, &e->t_f32, 1, 0);
  LLVMValueRef fn = LLVMAddFunction(e->mod, "__truncsfbf2", fty);
  LLVMSetLinkage(fn, LLVMWeakODRLinkage);
  LLVMSetVisibility(fn, LLVMHiddenVisibility);
  LLVMPositionBuilderAtEnd(e->b, LLVMAppendBasicBlockInContext(e->ctx, fn, "entry"));
  LLVMBuildRet(e->b, f32_to_bf16(e, LLVMGetParam(fn, 0)));
}

LLVMModuleRef gc_llvm_emit(LLVMContextRef ctx, const kir_module *m, const gc_llvm_target *t,
                           gc_diags *d) {
  em e;
  memset(&e, 0, sizeof e);
  e.ctx = ctx;
  e.t = t;
  e.d = d;
  e.mod = LLVMModuleCreateWithNameInContext("graphc", ctx);
  if (t->triple) LLVMSetTarget(e.mod, t->triple);
  if (t->data_layout) LLVMSetDataLayout(e.mod, t->data_layout);
  e.b = LLVMCreateBuilderInContext(ctx);
  e.t_void = LLVMVoidTypeInContext(ctx);
  e.t_i1 = LLVMInt1TypeInContext(ctx);
  e.t_i8 = LLVMInt8TypeInContext(ctx);
  e.t_i16 = LLVMInt16TypeInContext(ctx);
  e.t_i32 = LLVMInt32TypeInContext(ctx);
  e.t_i64 = LLVMInt64TypeInContext(ctx);
  e.t_f16 = LLVMHalfTypeInContext(ctx);
  e.t_bf16 = LLVMBFloatTypeInContext(ctx);
  e.t_f32 = LLVMFloatTypeInContext(ctx);
  e.t_f64 = LLVMDoubleTypeInContext(ctx);
  e.t_gptr = t_buffer_ptr(&e);
  if (t->arch == GC_LLVM_NVPTX) {  /* libdevice's __nvvm_reflect("__CUDA_FTZ"): no flush to zero */
    LLVMAddModuleFlag(e.mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                      LLVMValueAsMetadata(cint(e.t_i32, 0)));
  }
  int rc = 0;
  for (int i = 0; i < m->n_kernels && rc == 0; i++) {
    kir_verify(m->kernels[i]);
    rc = emit_kernel(&e, m->kernels[i]);
    kernel_done(&e);
  }
  if (rc == 0 && t->arch == GC_LLVM_HOST) host_truncsfbf2(&e);
  LLVMDisposeBuilder(e.b);
  if (rc != 0) {
    LLVMDisposeModule(e.mod);
    return NULL;
  }
  return e.mod;
}

/* ---- module utilities -------------------------------------------------------------- */

int gc_llvm_uses_libdevice(LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) && len > 5 && memcmp(name, "__nv_", 5) == 0) return 1;
  }
  return 0;
}

char *gc_llvm_host_features(void) {
  char *f = LLVMGetHostCPUFeatures();
  /* LLVM 19's x86 backend commutes the operands of an AVX512-FP16 vcmpph when it
   * folds a reload into it, without swapping the predicate: `fcmp ule half a, b`
   * became a >= b (a random-graph differential test found it: lt(gt(x, y), ne(z, w))
   * on f16 inputs). Without the feature, half values go through F16C conversions to
   * f32, which is exact for compares and arithmetic that rounds back to f16. */
  for (char *p = f ? strstr(f, "+avx512fp16") : NULL; p; p = strstr(p + 1, "+avx512fp16"))
    if (p[11] == ',' || p[11] == 0) *p = '-';
  return f;
}

int gc_llvm_host_simd_bytes(const char *cpu) {
  if (cpu && *cpu && strcmp(cpu, "native") != 0)
    return strcmp(cpu, "x86-64-v4") == 0 ? 64 : strcmp(cpu, "x86-64-v3") == 0 ? 32 : 16;
  char *f = LLVMGetHostCPUFeatures();
  int bytes = !f ? 16 : strstr(f, "+avx512f") ? 64 : strstr(f, "+avx2") ? 32 : 16;
  if (f) LLVMDisposeMessage(f);
  return bytes;
}

void gc_llvm_prefer_wide_vectors(LLVMModuleRef mod, int simd_bytes) {
  if (simd_bytes < 64) return;
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateStringAttribute(ctx, "prefer-vector-width", 19, "512", 3));
}

/* Nonzero when `name` (len bytes) is the name of a kernel of m. */
static int is_kernel_name(const kir_module *m, const char *name, size_t len) {
  for (int i = 0; i < m->n_kernels; i++) {
    const char *kn = m->kernels[i]->name;
    if (strlen(kn) == len && memcmp(kn, name, len) == 0) return 1;
  }
  return 0;
}

void gc_llvm_internalize(LLVMModuleRef mod, const kir_module *m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (!LLVMIsDeclaration(f) && !is_kernel_name(m, name, len) &&
        !(len == 12 && memcmp(name, "__truncsfbf2", 12) == 0))  /* the backend's calls: host_truncsfbf2 */
      LLVMSetLinkage(f, LLVMInternalLinkage);
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g)) LLVMSetLinkage(g, LLVMInternalLinkage);
}

int gc_llvm_verify(LLVMModuleRef mod, const char *what, gc_diags *d) {
  char *msg = NULL;
  int bad = LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg);
  if (bad) {
    gc_loc noloc = {0, 0};
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "LLVM IR verification failed %s (a graphc bug): %s", what, msg ? msg : "");
  }
  if (msg) LLVMDisposeMessage(msg);
  return bad ? -1 : 0;
}

int gc_llvm_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *passes,
                     gc_diags *d) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(mod, passes, tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (!err) return 0;
  char *msg = LLVMGetErrorMessage(err);
  gc_loc noloc = {0, 0};
  gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "LLVM pass pipeline \"%s\" failed: %s", passes,
              msg);
  LLVMDisposeErrorMessage(msg);
  return -1;
}

/* Diagnostic handler: keep errors and warnings, drop remarks and notes. */
static void diag_handler(LLVMDiagnosticInfoRef di, void *arg) {
  gc_llvm_diag *dg = arg;
  LLVMDiagnosticSeverity sev = LLVMGetDiagInfoSeverity(di);
  if (sev != LLVMDSError && sev != LLVMDSWarning) return;
  char *msg = LLVMGetDiagInfoDescription(di);
  gc_sbuf_printf(&dg->msgs, "%s%s: %s", dg->msgs.len ? "\n" : "",
                 sev == LLVMDSError ? "error" : "warning", msg ? msg : "");
  if (msg) LLVMDisposeMessage(msg);
  if (sev == LLVMDSError) dg->n_errors++;
}

void gc_llvm_diag_install(LLVMContextRef ctx, gc_llvm_diag *dg) {
  LLVMContextSetDiagnosticHandler(ctx, diag_handler, dg);
}

/* ---- host IR text (for --emit llvm and tests; the CPU backend adds its own JIT) ------- */

int gc_llvm_host_ir(const kir_module *m, int optimize, char **ir_text, gc_diags *d) {
  *ir_text = NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  gc_llvm_diag dg = {{0}, 0};
  gc_llvm_diag_install(ctx, &dg);
  char *triple = LLVMGetDefaultTargetTriple();
  gc_llvm_target t = {GC_LLVM_HOST, 0, triple, NULL};
  LLVMModuleRef mod = gc_llvm_emit(ctx, m, &t, d);
  LLVMDisposeMessage(triple);
  int rc = mod ? gc_llvm_verify(mod, "after emission", d) : -1;
  if (rc == 0 && optimize) rc = gc_llvm_optimize(mod, NULL, "default<O2>", d);
  if (rc == 0 && optimize) rc = gc_llvm_verify(mod, "after optimization", d);
  if (rc == 0) {
    char *s = LLVMPrintModuleToString(mod);
    *ir_text = s ? strdup(s) : NULL;
    if (s) LLVMDisposeMessage(s);
    if (!*ir_text) {
      gc_loc noloc = {0, 0};
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory printing LLVM IR");
      rc = -1;
    }
  }
  if (rc == 0 && dg.n_errors) {
    gc_loc noloc = {0, 0};
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "LLVM reported errors:\n%s", dg.msgs.data);
    free(*ir_text);
    *ir_text = NULL;
    rc = -1;
  }
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  gc_sbuf_free(&dg.msgs);
  return rc;
}
