/* fuzz_safetensors.c - libFuzzer target for the safetensors reader and writer.
 *
 * Input: arbitrary bytes, parsed with gc_safetensors_parse. On success:
 *   - every tensor has a valid dtype and rank, nbytes = numel x dtype size, and
 *     its data range lies inside the file's data section;
 *   - non-empty tensors do not overlap;
 *   - gc_safetensors_write writes the tensors back (to a file under /dev/shm,
 *     or $TMPDIR), gc_safetensors_load re-reads them, and the result holds the
 *     same tensors (name, dtype, shape, bytes).
 * Any violation aborts with a description.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weights/safetensors.h"

/* Describe the violation and abort. */
static void fail(const char *fmt, const char *name) {
  fprintf(stderr, "fuzz_safetensors: ");
  fprintf(stderr, fmt, name ? name : "");
  fprintf(stderr, "\n");
  abort();
}

/* Check one tensor's invariants against the blob it came from. */
static void check_tensor(const gc_safetensors *st, const gc_st_tensor *t) {
  if (!t->name) fail("tensor without a name%s", "");
  if (!graphc_dtype_name(t->dtype)) fail("tensor '%s': invalid dtype", t->name);
  if (t->rank < 0 || t->rank > GC_MAX_RANK) fail("tensor '%s': invalid rank", t->name);
  uint64_t bytes = graphc_dtype_size(t->dtype);
  int overflow = 0;
  for (int k = 0; k < t->rank; k++) {
    if (t->dims[k] < 0) fail("tensor '%s': negative dim", t->name);
    if (__builtin_mul_overflow(bytes, (uint64_t)t->dims[k], &bytes)) overflow = 1;
  }
  if (overflow) fail("tensor '%s': shape x dtype size overflows 64 bits", t->name);
  if (bytes != t->nbytes) fail("tensor '%s': nbytes is not numel x dtype size", t->name);
  const unsigned char *blob = st->blob, *p = t->data;
  if (st->blob_len < 8) fail("a file shorter than 8 bytes was accepted%s", "");
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | blob[i];
  if (hlen > st->blob_len - 8) fail("header length past the end was accepted%s", "");
  const unsigned char *lo = blob + 8 + hlen, *hi = blob + st->blob_len;
  if (t->nbytes && (!p || p < lo || p > hi || (size_t)(hi - p) < t->nbytes))
    fail("tensor '%s': data range is outside the data section", t->name);
}

/* Compare function for sorting tensors by data pointer. */
static int cmp_data(const void *a, const void *b) {
  const gc_st_tensor *x = *(const gc_st_tensor *const *)a, *y = *(const gc_st_tensor *const *)b;
  const char *px = x->data, *py = y->data;
  return px < py ? -1 : px > py;
}

/* Non-empty tensors must not share bytes. */
static void check_overlap(const gc_safetensors *st) {
  const gc_st_tensor **v = malloc((size_t)(st->n ? st->n : 1) * sizeof *v);
  if (!v) abort();
  int n = 0;
  for (int i = 0; i < st->n; i++)
    if (st->tensors[i].nbytes) v[n++] = &st->tensors[i];
  qsort(v, (size_t)n, sizeof *v, cmp_data);
  for (int i = 1; i < n; i++)
    if ((const char *)v[i - 1]->data + v[i - 1]->nbytes > (const char *)v[i]->data)
      fail("tensor '%s' overlaps the one before it", v[i]->name);
  free(v);
}

/* Path of this process's scratch file. */
static const char *scratch_path(void) {
  static char path[512];
  if (!path[0]) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/graphc-fuzz-st-%ld.safetensors", dir ? dir : "/tmp",
             (long)getpid());
  }
  return path;
}

/* Write st back, read it again, and compare. */
static void check_roundtrip(const gc_safetensors *st) {
  const char *path = scratch_path();
  gc_diags d;
  gc_diags_init(&d, path, NULL, 0);
  if (gc_safetensors_write(path, st->tensors, st->n, &d) != 0) {
    fprintf(stderr, "fuzz_safetensors: %s\n", d.n ? d.items[0].msg : "?");
    fail("writing back an accepted file failed%s", "");
  }
  gc_safetensors *re = gc_safetensors_load(path, &d);
  unlink(path);
  if (!re) {
    fprintf(stderr, "fuzz_safetensors: %s\n", d.n ? d.items[0].msg : "?");
    fail("re-reading the written file failed%s", "");
  }
  gc_diags_free(&d);
  if (re->n != st->n) fail("re-read file has a different tensor count%s", "");
  for (int i = 0; i < st->n; i++) {
    const gc_st_tensor *a = &st->tensors[i];
    const gc_st_tensor *b = gc_safetensors_find(re, a->name);
    if (!b) fail("tensor '%s' is missing after the round trip", a->name);
    if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes ||
        memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) != 0)
      fail("tensor '%s' changed dtype or shape in the round trip", a->name);
    if (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0)
      fail("tensor '%s' changed bytes in the round trip", a->name);
  }
  gc_safetensors_free(re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: the parse + invariants + write/re-read on one input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gc_diags d;
  gc_diags_init(&d, "fuzz.safetensors", NULL, 0);
  gc_safetensors *st = gc_safetensors_parse("fuzz.safetensors", data, size, &d);
  if (!st && !d.n_errors) fail("rejected without an error message%s", "");
  if (st && d.n_errors) fail("accepted with an error message%s", "");
  char *r = gc_diags_render(&d);
  free(r);
  gc_diags_free(&d);
  if (!st) return 0;
  for (int i = 0; i < st->n; i++) check_tensor(st, &st->tensors[i]);
  check_overlap(st);
  for (int i = 0; i < st->n; i++)
    if (gc_safetensors_find(st, st->tensors[i].name) != &st->tensors[i])
      fail("duplicate tensor name '%s' accepted", st->tensors[i].name);
  check_roundtrip(st);
  gc_safetensors_free(st);
  return 0;
}
