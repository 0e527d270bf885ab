/* tuning.h - tuning files: per-problem kernel configurations chosen by measurement.
 *
 * `graphc tune` times the configurations of a model's tunable kernels on a GPU and
 * writes the winners; `graphc compile/run --tuning FILE` (API: the `tuning` compile
 * option) reads them back, and the code generators take a listed configuration in
 * place of their heuristic. Same model, options, arch and tuning file: same bytes.
 *
 * Format (text, one entry per line, `#` comments, blank lines ignored):
 *
 *   graphc-tuning 1
 *   matmul f16 b=1 m=127 n=4096 k=4096 ab=nn tile=64x64
 *
 * The first line names the format and its version. An entry is a key (kernel
 * family and problem: dtype, batch, M, N, K, A/B layouts n|t) and `tile=BMxBN`
 * (64 or 128 each) for the mma.sync tensor-core matmul, or `tile=wgBMxBN` (128x256, 128x128, 128x64, 64x128, 64x64)
 * for the warpgroup-MMA kernel (sm_90; where that kernel cannot take the problem, the
 * mma.sync kernel's heuristic). f32 matmuls compiled with tf32 are `matmul tf32 ...`
 * entries with `tile=wgBMxBN` (256x128, 128x128, 128x64, 64x128, 64x64) for the transposed
 * tf32 warpgroup-MMA kernel (sm_90; elsewhere, or without an entry, the heuristic). Keys are compared as text, so the
 * generator's key (gc_tuning_key_mm) and the file's must match exactly.
 */
#ifndef GC_TUNING_H
#define GC_TUNING_H

#include "ir/ir.h"

typedef struct gc_tuning_entry {
  char *key;             /* "matmul f16 b=1 m=127 n=4096 k=4096 ab=nn" */
  int bm, bn;
  int wgmma;             /* tile=wg...: the warpgroup-MMA kernel */
} gc_tuning_entry;

typedef struct gc_tuning {
  int n;
  gc_tuning_entry *e;
} gc_tuning;

#define GC_TUNING_KEY_MAX 160

/* Read and check a tuning file. NULL on error, reported to d as "PATH:LINE:COL: why"
 * (status INVALID_ARGUMENT, or IO_ERROR / OUT_OF_MEMORY). */
gc_tuning *gc_tuning_load(const char *path, gc_diags *d);
/* Parse tuning text (name for messages). */
gc_tuning *gc_tuning_parse(const char *name, const char *text, size_t len, gc_diags *d);
void gc_tuning_free(gc_tuning *t);
/* The entry for key, or NULL (t may be NULL). */
const gc_tuning_entry *gc_tuning_find(const gc_tuning *t, const char *key);
/* Key of a matmul problem into buf (GC_TUNING_KEY_MAX bytes). */
void gc_tuning_key_mm(char *buf, gc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, int ta,
                      int tb);

#endif
