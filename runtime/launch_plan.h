/* launch_plan.h - what a runtime half needs to run compiled kernels, with no
 * Kernel IR in it: kernel names and launch shapes, what each kernel parameter
 * is bound to, the buffers (inputs, outputs, constants, arena temporaries), and
 * the I/O signature. One form for every target: the CUDA executor and the host
 * (CPU) executor run the same plan.
 *
 *   gc_plan (codegen/lower.h) --gc_launch_plan_build--> gc_launch_plan --bundle.c--> bytes
 *                                                            |
 *                               runtime/cuda_exec.c or runtime/host_exec.c runs it
 *
 * The compile half (driver/launch_build.c) builds one from a gc_plan; the
 * bundle reader (runtime/bundle.c) builds one from a file. Either way
 * gc_launch_plan_check (runtime/launch_plan.c) runs before anything is
 * launched, so a damaged file cannot index outside an array.
 *
 * Ownership: everything hangs off `arena` (strings and arrays); const data is
 * borrowed (from the weights file, the plan or the bundle bytes) and must
 * outlive the plan's use.
 */
#ifndef GC_LAUNCH_PLAN_H
#define GC_LAUNCH_PLAN_H

#include <stdint.h>

#include "ir/ir.h"

typedef enum gc_lp_buf_kind {
  GC_LP_INPUT = 0,     /* caller's input `index` */
  GC_LP_OUTPUT = 1,    /* caller's output `index` */
  GC_LP_CONST = 2,     /* consts[index], uploaded once */
  GC_LP_TEMP = 3,      /* arena + offset */
  GC_LP_STATE = 4      /* states[index]: the executable's memory, kept between runs */
} gc_lp_buf_kind;

typedef struct gc_lp_buffer {
  gc_lp_buf_kind kind;
  int index;
  uint64_t bytes;
  uint64_t offset;     /* TEMP: byte offset in the arena */
} gc_lp_buffer;

typedef enum gc_lp_param_kind {
  GC_LP_PARAM_BUFFER = 0,  /* value: index into buffers */
  GC_LP_PARAM_I64 = 1,     /* value: the scalar passed */
  GC_LP_PARAM_TMAP = 2     /* value: index into tmaps; passed as the device address of the
                              encoded 128-byte CUtensorMap */
} gc_lp_param_kind;

/* A TMA tensor map (kir_tmap, codegen/kir.h) over buffers[buffer]: encoded with
 * cuTensorMapEncodeTiled at the buffer's device address + offset whenever that address
 * changes, kept in a device table the kernels read. */
#define GC_LP_TMAP_MAX_RANK 5
typedef struct gc_lp_tmap {
  int buffer;              /* index into buffers */
  gc_dtype dtype;          /* F16, BF16 or F32 */
  int rank;                /* 2 .. GC_LP_TMAP_MAX_RANK */
  int64_t dims[GC_LP_TMAP_MAX_RANK];     /* elements, dims[0] contiguous */
  int64_t strides[GC_LP_TMAP_MAX_RANK];  /* bytes; strides[0] = element size */
  int box[GC_LP_TMAP_MAX_RANK];          /* 1 .. 256 elements */
  uint64_t offset;         /* bytes from the buffer's start, a multiple of 16 */
  int swizzle;             /* 0 or 128 */
} gc_lp_tmap;

/* What a kernel does to a BUFFER or TMAP param's memory, when known (the compiler
 * says; bundles do not record it: unknown counts as a write). */
enum { GC_LP_ACCESS_UNKNOWN = 0, GC_LP_ACCESS_READ = 1, GC_LP_ACCESS_WRITE = 2 };

typedef struct gc_lp_param {
  gc_lp_param_kind kind;
  int64_t value;
  int access;              /* GC_LP_ACCESS_* */
} gc_lp_param;

/* ITEMS: grid-stride over items; BLOCKS: grid-stride over groups; BLOCKS_ONE: one block per
 * group, grid = n (<= INT32_MAX; kir_kernel.one_pass: the code has no loop over groups). */
typedef enum gc_lp_launch_kind { GC_LP_ITEMS = 0, GC_LP_BLOCKS = 1, GC_LP_BLOCKS_ONE = 2 } gc_lp_launch_kind;

typedef struct gc_lp_kernel {
  const char *name;        /* the function's name in the module */
  gc_lp_launch_kind kind;  /* as kir_launch: independent items or cooperating groups */
  int64_t n;               /* items or groups */
  int block;               /* threads per group (BLOCKS) or preferred block (ITEMS) */
  int smem;                /* bytes of dynamic shared memory per block (0: none) */
  int n_params;
  gc_lp_param *params;
} gc_lp_kernel;

typedef struct gc_lp_const {
  const char *name;        /* the param's tensor name, or "const.N" */
  uint64_t bytes;
  const void *data;        /* NULL: not provided yet (weights not embedded) */
  int is_param;            /* 1: a weight from the weights file */
  gc_dtype dtype;          /* type of the buffer it backs */
  int rank;
  int64_t dims[GC_MAX_RANK];
  uint64_t origin[5];      /* a weight from a file: the file's identity and the offset
                              (gc_weights_origin); equal origins and dtypes mean equal bytes, so
                              executors may share one device copy. Zeros: private (bundles') */
} gc_lp_const;

/* A state (`state %k: T = "name"`): memory the executable owns (zero when made, or
 * shared with another executable's state of the same name and type), kept between
 * runs; cache_write kernels update it in place. */
typedef struct gc_lp_state {
  const char *name;
  uint64_t bytes;
  gc_dtype dtype;
  int rank;
  int64_t dims[GC_MAX_RANK];
} gc_lp_state;

typedef struct gc_launch_plan {
  gc_arena arena;
  int n_kernels;
  gc_lp_kernel *kernels;
  int n_launches;
  int *launches;           /* kernel index of each launch, in order */
  int n_prologue;          /* launches [0, n_prologue) read only consts: run once after the
                              consts reach the device and again after one changes, not every
                              run (codegen/prologue.c) */
  int n_buffers;
  gc_lp_buffer *buffers;   /* param values of kind BUFFER index this */
  int n_tmaps;
  gc_lp_tmap *tmaps;       /* param values of kind TMAP index this */
  int n_consts;
  gc_lp_const *consts;
  int n_states;
  gc_lp_state *states;
  uint64_t arena_bytes;    /* bytes of the TEMP arena */
  int n_inputs, n_outputs;
  graphc_tensor_info_t *inputs, *outputs;  /* names in the arena */
} gc_launch_plan;

/* A zeroed plan with its arena ready. */
void gc_launch_plan_init(gc_launch_plan *p);
/* Free the arena (and with it every array and string). */
void gc_launch_plan_free(gc_launch_plan *p);

/* Check every invariant the runtime relies on: indices in range, sizes
 * consistent with dtypes and shapes, TEMP buffers inside the arena, INPUT and
 * OUTPUT buffers no bigger than the signature says, kernel names C
 * identifiers, launch shapes sane. Reports the first violation to d (status
 * `st`, prefixed with `what`) and returns -1; 0 when the plan is usable.
 * Const data may be missing (checked when loading). runtime/launch_plan.c. */
int gc_launch_plan_check(const gc_launch_plan *p, graphc_status_t st, const char *what,
                         gc_diags *d);

#endif /* GC_LAUNCH_PLAN_H */
