/* llvm_hostmath.h - f32 exp, exp2, tanh and erf as inline LLVM IR for the host (internal;
 * see llvm_hostmath.c for the method and the measured accuracy). */
#ifndef GC_LLVM_HOSTMATH_H
#define GC_LLVM_HOSTMATH_H

#include <llvm-c/Core.h>

#include "codegen/kir.h"

/* op (KIR_EXP, KIR_EXP2, KIR_TANH, KIR_TANH_APPROX, KIR_ERF, KIR_SIGMOID) of the f32 value a, built at
 * b's position in mod; NULL for any other op or type (the caller calls libm). */
LLVMValueRef gc_llvm_host_math_f32(LLVMBuilderRef b, LLVMModuleRef mod, kir_op op, LLVMValueRef a);

#endif /* GC_LLVM_HOSTMATH_H */
