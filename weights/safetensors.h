/* safetensors.h - reading and writing safetensors weight files.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON (parsed with
 * cJSON) mapping tensor names to {dtype, shape, data_offsets}, then the data.
 * The reader checks the header size, dtypes, shapes, and that offsets are in
 * range, do not overlap, and cover shape x dtype bytes exactly.
 */
#ifndef GC_SAFETENSORS_H
#define GC_SAFETENSORS_H

#include "ir/ir.h"

typedef struct gc_st_tensor {
  const char *name;
  gc_dtype dtype;
  int rank;
  int64_t dims[GC_MAX_RANK];
  const void *data;      /* points into the file's data section (or caller's, for write) */
  size_t nbytes;
} gc_st_tensor;

typedef struct gc_safetensors {
  int n;
  gc_st_tensor *tensors; /* in file order of data offsets (a set: the index's order) */
  void *blob;            /* whole file contents: mapped (loaded files) or malloc'd; NULL for a set */
  size_t blob_len;
  char *path;
  int mapped;            /* blob is a read-only private mapping of the file (munmap) */
  /* A set of files (weights/weight_set.h): the files its tensors point into, each
   * a gc_safetensors of its own, freed with the set; tensors' names are theirs. */
  struct gc_safetensors **parts;
  int n_parts;
  /* A loaded file's identity: st_dev, st_ino, st_size and st_mtime in ns at load time
   * (zeros for a set and for an image parsed from memory); see gc_weights_origin. */
  uint64_t file_id[4];
} gc_safetensors;

/* Load and validate `path`, memory-mapped (read into memory where the file cannot be
 * mapped); tensor data points into the mapping, which lives until the free. Errors
 * go to `d` (status GRAPHC_STATUS_IO_ERROR or GRAPHC_STATUS_WEIGHTS_ERROR, no source
 * position, message names the file). */
gc_safetensors *gc_safetensors_load(const char *path, gc_diags *d);
/* The same from memory (copied); `name` for messages. */
gc_safetensors *gc_safetensors_parse(const char *name, const void *bytes, size_t len, gc_diags *d);
/* Free a file or a set (and its parts); NULL is fine. */
void gc_safetensors_free(gc_safetensors *st);
const gc_st_tensor *gc_safetensors_find(const gc_safetensors *st, const char *name);
/* Where tensor data `data` (a tensor of st, or of one of its parts) comes from: key[0..3]
 * the file's identity (file_id), key[4] the byte offset in the file. Two loads of one
 * unchanged file give the same key for the same tensor, so executables compiled apart can
 * share one device copy of it. 0 when known; -1 (key zeroed) for data of no file. */
int gc_weights_origin(const gc_safetensors *st, const void *data, uint64_t key[5]);

/* Write tensors (names unique) to `path`; header keys sorted by name, data in
 * the given order, 8-byte aligned. Returns 0 on success, else reports to d. */
int gc_safetensors_write(const char *path, const gc_st_tensor *tensors, int n, gc_diags *d);

/* Check every param of `g` against `st`: present, shape equal, dtype equal (the
 * param's `from` dtype when it has one: the loader converts the tensor). Errors
 * are reported at each param's source position (status WEIGHTS_ERROR). Returns
 * the number of errors. */
int gc_weights_check(const gc_graph *g, const gc_safetensors *st, gc_diags *d);

/* Deterministic pseudo-random data for a tensor of type t (seeded, splitmix64):
 * floats uniform in [-s, s] with s = 1/sqrt(fan_in) for rank >= 2 (fan_in =
 * last dim for 2-D weights, product of all but the first dim otherwise) and
 * s = 1 otherwise; ints uniform in [0, 4); bools 0/1. `out` holds numel x size. */
void gc_random_fill(void *out, const gc_type *t, uint64_t seed);

/* Write a weights file with random data for every param of g (seeded). */
int gc_weights_write_random(const gc_graph *g, const char *path, uint64_t seed, gc_diags *d);

#endif
