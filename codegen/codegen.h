/* codegen.h - Kernel IR to device code: the two printers and the compilers
 * behind them. One kir_module becomes ONE CUDA C program (one NVRTC call) or
 * ONE LLVM module; never one per kernel.
 *
 *   kir_module --gc_cuda_c_print--> CUDA C --gc_nvrtc_compile--> PTX + cubin
 *   kir_module --gc_llvm_ptx------> LLVM IR (nvptx64-nvidia-cuda) --NVPTX--> PTX
 *   PTX        --gc_ptx_to_cubin--> cubin (nvJitLink)
 *
 * All functions return 0 on success; on failure they report to `d` with status
 * GRAPHC_STATUS_COMPILE_ERROR (NVRTC log / LLVM message included) and return -1.
 * Returned buffers are malloc'd; the caller frees them.
 */
#ifndef GC_CODEGEN_H
#define GC_CODEGEN_H

#include "kir.h"

/* codegen/cuda_c.c: the whole module as one CUDA C translation unit; each
 * kernel is `extern "C" __global__`, named kir_kernel.name. */
void gc_cuda_c_print(gc_sbuf *b, const kir_module *m);

/* codegen/nvrtc.c: compile CUDA C for sm_<sm>. *ptx always (may be NULL to skip),
 * *cubin when cubin != NULL. Options fixed and deterministic. */
int gc_nvrtc_compile(const char *src, int sm, char **ptx, void **cubin, size_t *cubin_len,
                     gc_diags *d);
/* NVRTC version as "13.0". Static string. */
const char *gc_nvrtc_version(void);

/* codegen/llvm_nvptx.c: build the module with the LLVM-C API for
 * nvptx64-nvidia-cuda, optimize (O3) and emit PTX for sm_<sm>. When ir_text is
 * not NULL it receives the LLVM IR text (before codegen). */
int gc_llvm_ptx(const kir_module *m, int sm, char **ptx, char **ir_text, gc_diags *d);

/* codegen/jitlink.c: PTX to cubin through nvJitLink for sm_<sm>. */
int gc_ptx_to_cubin(const char *ptx, int sm, void **cubin, size_t *cubin_len, gc_diags *d);

#endif
