/* lower.h - from a specialized graph to an execution plan: Kernel IR for every
 * fusion group (codegen/fusion.h), the buffers they bind, and the launch order.
 *
 *   gc_graph --gc_lower(target)--> gc_plan { kir_module, buffers, consts, launches }
 *
 * One kernel per fusion group; buffers only for values that cross group
 * boundaries (or are returned). gc_lower_opts(fuse = 0) lowers one op per
 * kernel (for testing fused against unfused plans, and -O0).
 *
 * Backends consume plans: the CUDA backend prints the kir_module to CUDA C or
 * LLVM IR, loads it, places TEMP buffers in one arena and launches in order;
 * the CPU backend does the same through the host JIT.
 */
#ifndef GC_LOWER_H
#define GC_LOWER_H

#include "codegen/kir.h"

typedef enum gc_buf_kind {
  GC_BUF_INPUT,          /* caller's input `index` */
  GC_BUF_OUTPUT,         /* caller's output `index` */
  GC_BUF_CONST,          /* weights and folded constants: consts[index], uploaded once */
  GC_BUF_TEMP,           /* intermediate: arena + offset, placed by buffer assignment */
  GC_BUF_STATE           /* a state: states[index], the executable's memory, kept between runs */
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
  const void *data;      /* list consts: the plan's arena; params: NULL until the driver binds
                            the weights file's tensor `name` (gc_plan_bind_weights) */
  size_t bytes;
  int is_param;          /* 1: a param (its data comes from the weights) */
  gc_dtype file_dtype;   /* params: the tensor's dtype in the weights file (`from`); when it
                            is not the buffer's, gc_plan_bind_weights converts it into the
                            plan's arena, so only the converted tensor reaches the device */
  const char *param;     /* params: the param's value name and position, for messages */
  gc_loc loc;
  uint64_t origin[5];    /* params from a weights file: where the bytes come from
                            (gc_weights_origin; a converted param's are its file tensor's, the
                            buffer's dtype tells the conversion); zeros otherwise */
} gc_plan_const;

typedef struct gc_plan_state {
  const char *name;      /* the state's name (`state %k: T = "name"`) */
  gc_type type;
  size_t bytes;
} gc_plan_state;

typedef struct gc_plan {
  gc_arena arena;
  kir_module *kir;
  int n_buffers;
  gc_plan_buffer *buffers;  /* kir_param.binding indexes this */
  int n_consts;
  gc_plan_const *consts;
  int n_states;
  gc_plan_state *states;    /* STATE buffers index this; cache_write kernels write them in place */
  int n_launches;
  int *launches;            /* kernel index (into kir->kernels) of each launch, in order */
  int n_prologue;           /* launches [0, n_prologue) read only constants: the CUDA runtime runs
                               them once per weights, not every run (codegen/prologue.c; CUDA
                               targets with kir_target.prologue only, else 0) */
  size_t arena_bytes;       /* peak bytes of TEMP buffers after assignment */
  size_t arena_lower_bound; /* max over launches of live TEMP bytes */
  /* fusion (filled by gc_lower_opts; arena-owned) */
  int fused;                /* fusion was on */
  int n_graph_ops;          /* ops needing code before fusion (all but params and list consts) */
  const char **kernel_ops;  /* per kernel (kir->kernels index): the ops it computes, "matmul %q, add %y" */
  const char *absorbed;     /* transposes computed by another kernel's index math ("" when none) */
  int n_op_ids;             /* the graph's next_op_id */
  int *op_kernel;           /* op id -> kernel index computing it (-1: none, e.g. params) */
} gc_plan;

/* Lower every op of g (specialized and verified) for target t. Params become
 * CONST buffers with no data yet (is_param; the driver binds the weights to
 * them by name). Returns NULL with errors in d. */
gc_plan *gc_lower(const gc_graph *g, const kir_target *t, gc_diags *d);
/* The same with fusion on (fuse != 0, what gc_lower does) or off (one kernel per op). */
gc_plan *gc_lower_opts(const gc_graph *g, const kir_target *t, int fuse, gc_diags *d);
void gc_plan_free(gc_plan *p);
/* The `fuse` argument for compile options: 1 unless -O0 (optimize == 0) or
 * "fusion" is in disable_passes. NULL options: 1. */
int gc_lower_fusion_enabled(const graphc_compile_options_t *o);
/* Human-readable summary (for --stats): ops before and kernels after fusion,
 * each kernel with its launch, modeled bytes and flops and the ops it fuses,
 * absorbed transposes, consts, arena size against its lower bound. */
void gc_plan_stats(gc_sbuf *b, const gc_plan *p);
/* Its consts line: "consts: N tensors, BYTES" and, for params whose weights file holds
 * another dtype, "; K weights converted once at load: f32 -> f16 (BYTES in the file)". */
void gc_plan_consts_stats(gc_sbuf *b, const gc_plan *p);

#endif
