/* cpu_backend.h - internals of the host backend (runtime/cpu_backend.c), shared
 * with its tests and benchmarks. The backend itself is gc_backend_cpu (exec.h).
 *
 *   kir_module --gc_llvm_emit(host)--> LLVM module --verify, default<O3>-->
 *              --ORC LLJIT (process symbols: libm)--> one function per kernel
 *
 * Host kernel ABI (codegen/llvm_emit.h): fn(args, begin, end) runs items
 * [begin, end) of the kernel's launch; args holds one 8-byte slot per
 * kir_param (a buffer's base pointer or an I64 parameter's value).
 */
#ifndef GC_CPU_BACKEND_H
#define GC_CPU_BACKEND_H

#include "codegen/lower.h"
#include "runtime/settings.h"

typedef void (*gc_cpu_kernel_fn)(void *const *args, int64_t begin, int64_t end);

/* Compiled code of one kir_module; owns the LLVM JIT that holds it. */
typedef struct gc_cpu_jit gc_cpu_jit;

/* JIT-compile every kernel of m for this host with the new-PM pipeline
 * `passes` (NULL or "": "default<O3>"). When `times` is not NULL, a line with
 * the emit / optimize / JIT times is appended to it. Returns NULL after
 * reporting to d (COMPILE_ERROR carrying LLVM's message). */
gc_cpu_jit *gc_cpu_jit_compile(const kir_module *m, const char *passes, gc_sbuf *times,
                               gc_diags *d);
/* Entry point of kernel i (index into m->kernels). */
gc_cpu_kernel_fn gc_cpu_jit_kernel(const gc_cpu_jit *j, int i);
/* "x86_64-pc-linux-gnu (znver4)": the target the code was compiled for. */
const char *gc_cpu_jit_target(const gc_cpu_jit *j);
/* Dispose the JIT and everything it compiled; NULL is allowed. */
void gc_cpu_jit_free(gc_cpu_jit *j);

/* Threads the cpu backend uses: gc_host_threads (host_exec.h). */
int gc_cpu_threads(const gc_rt_settings *s, gc_diags *d);

/* Alignment the kernels of p assume for each plan buffer: its element size,
 * or the width of a vector load/store on it (at most 16). align[n_buffers]. */
void gc_cpu_buffer_aligns(const gc_plan *p, uint32_t *align);

#endif
