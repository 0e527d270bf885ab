/* lower.h - from a specialized graph to an execution plan: Kernel IR for every
 * op (or fused group), the buffers they bind, and the launch order.
 *
 *   gc_graph --gc_lower(target)--> gc_plan { kir_module, buffers, consts, launches }
 *
 * Backends consume plans: the CUDA backend prints the kir_module to CUDA C or
 * LLVM IR, loads it, places TEMP buffers in one arena and launches in order;
 * the CPU backend does the same through the host JIT.
 */
#ifndef GC_LOWER_H
#define GC_LOWER_H

#include "kir.h"
#include "../runtime/safetensors.h"

typedef enum gc_buf_kind {
  GC_BUF_INPUT,          /* caller's input `index` */
  GC_BUF_OUTPUT,         /* caller's output `index` */
  GC_BUF_CONST,          /* weights and folded constants: consts[index], uploaded once */
  GC_BUF_TEMP            /* intermediate: arena + offset, placed by buffer assignment */
} gc_buf_kind;

typedef struct gc_plan_buffer {
  gc_buf_kind kind;
  int index;
  gc_type type;
  size_t bytes;
  size_t offset;         /* TEMP only: byte offset in the arena, 256-byte aligned */
  int first_use, last_use; /* launch indices, for buffer assignment */
} gc_plan_buffer;

typedef struct gc_plan_const {
  const char *name;      /* param's tensor name, or "const.N" */
  const void *data;      /* owned by the weights file or the plan's arena */
  size_t bytes;
} gc_plan_const;

typedef struct gc_plan {
  gc_arena arena;
  kir_module *kir;
  int n_buffers;
  gc_plan_buffer *buffers;  /* kir_param.binding indexes this */
  int n_consts;
  gc_plan_const *consts;
  int n_launches;
  int *launches;            /* kernel index (into kir->kernels) of each launch, in order */
  size_t arena_bytes;       /* peak bytes of TEMP buffers after assignment */
  size_t arena_lower_bound; /* max over launches of live TEMP bytes */
} gc_plan;

/* Lower every op of g (specialized and verified) for target t. Params become
 * CONST buffers backed by `w`. Returns NULL with errors in d. */
gc_plan *gc_lower(const gc_graph *g, const gc_safetensors *w, const kir_target *t, gc_diags *d);
void gc_plan_free(gc_plan *p);
/* Human-readable summary: kernels, bytes, arena size (for --stats). */
void gc_plan_stats(gc_sbuf *b, const gc_plan *p);

#endif
