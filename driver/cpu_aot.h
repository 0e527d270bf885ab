/* cpu_aot.h - host code ahead of time: `graphc compile --target host --emit c`.
 *
 *   executable graph --gc_lower_opts(host)--> plan --gc_llvm_emit(host)-->
 *   LLVM module --kernels renamed <prefix>__<name> (hidden), the rest
 *   internal--> default<O3> --TargetMachine (PIC)--> ELF relocatable object
 *   plan --gc_launch_plan_build--> .gcx bundle with a HOST section (bundle.h)
 *
 * The object holds only the kernels; tools/aot_cli.c writes the C wrapper
 * that embeds the bundle and the table of kernel functions, and links both
 * into NAME.o. At run time libgraphc_rt (host_exec.c) runs the plan over the
 * linked functions: no LLVM, no compiler.
 */
#ifndef GC_CPU_AOT_H
#define GC_CPU_AOT_H

#include "driver/exec.h"

typedef struct gc_host_aot_options {
  const char *prefix;      /* a C identifier: kernel symbols are <prefix>__<kernel> */
  const char *cpu;         /* NULL or "native": this machine's CPU and features; else an
                              LLVM CPU name ("x86-64", "x86-64-v3", "skylake-avx512") */
  int embed_weights;       /* 1: weights go into the bundle */
} gc_host_aot_options;

typedef struct gc_host_aot {
  void *object;            /* ELF relocatable (PIC), malloc'd */
  size_t object_len;
  void *bundle;            /* .gcx bytes, malloc'd */
  size_t bundle_len;
  int n_kernels;
  char **kernels;          /* plan kernel names, malloc'd */
  char **symbols;          /* their symbols in the object, malloc'd */
  char *target;            /* "x86_64-pc-linux-gnu (znver4)" */
} gc_host_aot;

/* Compile exe's (specialized, optimized) graph for the host ahead of time.
 * Appends "aot: ..." stage lines to st (may be NULL). 0, or -1 reported to d
 * (UNSUPPORTED: an unknown --cpu; COMPILE_ERROR: LLVM's message). */
int gc_host_build_aot(gc_exec *exe, const gc_host_aot_options *o, gc_host_aot *out, gc_sbuf *st,
                      gc_diags *d);
/* Free what gc_host_build_aot made (the struct itself is the caller's). */
void gc_host_aot_free(gc_host_aot *a);

#endif /* GC_CPU_AOT_H */
