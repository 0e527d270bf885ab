/* bundle.h - the .gcx bundle: one self-describing, versioned, checksummed file
 * holding everything needed to run a compiled model with only the CUDA driver.
 *
 *   header   magic, format version, file size, XXH64 checksum, graphc version
 *   META     key/value strings: entry graph, codegen path, archs, options
 *   SIGN     inputs and outputs: names, dtypes, shapes
 *   PLAN     one per distinct launch plan (usually one for all archs)
 *   WGHT     const data: folded constants always, weights with --embed-weights
 *   IMAG     one per arch: cubin and/or PTX, and which plan it runs
 *   HOST     instead of IMAG, for host code linked into the program
 *            (graphc compile --target host --emit c): target, per-kernel
 *            work and per-buffer alignment; the functions are in the object
 *
 * The byte layout is specified in docs/bundle.md. Writing is deterministic:
 * the same inputs give the same bytes.
 *
 * Reading borrows: pointers in a read bundle (cubins, PTX, const data) point
 * into the caller's bytes, which must outlive the bundle. Every count, offset
 * and size is checked against the file before use, and each plan is checked
 * with gc_launch_plan_check; a damaged, truncated or foreign file is an error
 * (GRAPHC_STATUS_IO_ERROR), another format version is UNSUPPORTED.
 */
#ifndef GC_BUNDLE_H
#define GC_BUNDLE_H

#include "runtime/launch_plan.h"

#define GC_BUNDLE_MAGIC "\x89GCX\r\n\x1a\n"
#define GC_BUNDLE_FORMAT 5  /* 2: kernels' dynamic shared memory (2026-11-30); 3: GC_LP_BLOCKS_ONE (2026-12-01);
                               4: the plan's prologue count (2026-12-02); 5: TMA tensor maps (2026-12-02) */
#define GC_BUNDLE_HEADER_BYTES 64

typedef struct gc_bundle_image {
  int sm;                  /* compute capability x10 */
  int plan;                /* index into plans */
  const void *cubin;       /* NULL when none */
  size_t cubin_len;
  const char *ptx;         /* NUL-terminated; NULL when none */
} gc_bundle_image;

typedef struct gc_bundle_host {
  const char *triple;      /* "x86_64-pc-linux-gnu" */
  const char *cpu;         /* the CPU the code was compiled for ("znver4") */
  int plan;                /* index into plans */
  int n_kernels;           /* = the plan's */
  uint64_t *work;          /* per kernel: modeled bytes + flops (parallel chunking) */
  int n_buffers;           /* = the plan's */
  uint32_t *align;         /* per buffer: alignment the kernels assume (power of 2, <= 64) */
} gc_bundle_host;

typedef struct gc_bundle {
  gc_arena arena;          /* what a read allocates (tables, strings) */
  unsigned format;         /* of a read bundle */
  char graphc_version[32]; /* that wrote it */
  int n_meta;
  const char **meta_keys, **meta_values;
  int n_plans;
  gc_launch_plan *plans;   /* all share one signature (inputs/outputs) */
  int n_images;
  gc_bundle_image *images;
  gc_bundle_host *host;    /* NULL: CUDA code (images); else host code, no images */
} gc_bundle;

/* Serialize b. Const data is written for every const that is not a param,
 * and for params too when embed_weights (their data must then be set).
 * Identical plans are stored once. *out is malloc'd. 0, or -1 reported to d. */
int gc_bundle_write(const gc_bundle *b, int embed_weights, void **out, size_t *len, gc_diags *d);

/* Parse and validate len bytes at data into b (zeroed by the call). 0, or -1
 * with a message naming the problem (and `name`, the file, for context). */
int gc_bundle_read(gc_bundle *b, const void *data, size_t len, const char *name, gc_diags *d);

/* Free what gc_bundle_read allocated (not the bytes it borrowed). */
void gc_bundle_free(gc_bundle *b);

/* Value of a META key, or NULL. */
const char *gc_bundle_meta(const gc_bundle *b, const char *key);

/* Append a META pair, both strings copied into b's arena (v NULL: ""); *cap is
 * the capacity of b's META arrays (0 before the first pair). Out of memory sets
 * b->arena.failed, which the bundle builders check before writing. */
void gc_bundle_meta_add(gc_bundle *b, int *cap, const char *k, const char *v);
/* The pairs every bundle starts with: graphc (version), graph (name), binds
 * ("B=8,S=128": the bound symbolic dims). */
void gc_bundle_meta_head(gc_bundle *b, int *cap, const char *graph, int n_syms, const char *const *names,
                         const int64_t *values);

/* XXH64 (seed 0) of a bundle image with the checksum field (bytes 24..31) taken as zero. */
uint64_t gc_bundle_checksum(const void *data, size_t len);

#endif /* GC_BUNDLE_H */
