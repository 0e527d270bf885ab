/* safetensors.c - reading, validating and writing safetensors files, and
 * checking a graph's params against a loaded file.
 *
 * File layout: u64 little-endian header length N, N bytes of UTF-8 JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value"}}, then the data section; offsets are
 * relative to the data section.
 *
 * Reader: the whole file is one blob, a read-only private mapping of the file
 * (malloc'd and read where mmap fails, or copied for gc_safetensors_parse), and
 * tensor data pointers point into it: a loaded checkpoint is paged in as its
 * tensors are read, never copied. Every error names the file and (where it
 * applies) the tensor; the first error stops the load.
 *
 * Writer: header keys sorted by name (deterministic bytes), header padded
 * with spaces to a multiple of 8, data packed without gaps (the reference
 * implementation rejects gaps) in the given order, stable-sorted by element
 * size, largest first, so every tensor starts at a multiple of its element
 * size. Written to a temporary file in the same directory, then renamed.
 */
#include "weights/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "safetensors data is little-endian; graphc assumes a little-endian host");

#define ST_MAX_HEADER 100000000ull        /* "absurd" header length, as in the reference */
#define ST_MAX_INT (UINT64_C(1) << 53)   /* JSON numbers are doubles: exact up to 2^53 */

/* safetensors dtype names, indexed by graphc_dtype_t. */
static const char *const st_dtype_names[GRAPHC_DTYPE_COUNT_] = {
    "F64", "F32", "F16", "BF16", "I64", "I32", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2",
    "F8_E4M3FNUZ", "F8_E5M2FNUZ"};  /* the fnuz names: graphc's, as safetensors has none */

/* graphc dtype for a safetensors dtype name, or -1 when unsupported. */
static int st_dtype_from_name(const char *s) {
  for (int i = 0; i < GRAPHC_DTYPE_COUNT_; i++)
    if (strcmp(st_dtype_names[i], s) == 0) return i;
  return -1;
}

/* ---- reading ------------------------------------------------------------------- */

/* One tensor entry while validating: offsets still relative to the data section. */
typedef struct st_entry {
  const char *name;      /* borrowed from the cJSON tree */
  gc_dtype dtype;
  int rank;
  int64_t dims[GC_MAX_RANK];
  uint64_t begin, end;
} st_entry;

/* Read a little-endian u64. */
static uint64_t load_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Offset of the first byte that is not valid UTF-8 (or is NUL) in s[0..n), or n. */
static size_t utf8_invalid_at(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c == 0) return i;
    if (c < 0x80) {
      i++;
      continue;
    }
    int len;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) len = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) len = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) len = 4, cp = c & 0x07, min = 0x10000;
    else return i;
    if (n - i < (size_t)len) return i;
    for (int k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += (size_t)len;
  }
  return n;
}

/* Compare two C strings through pointers (qsort). */
static int cmp_str_ptr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Name of a key that occurs twice in object `obj` (the smallest such), or NULL.
 * cJSON keeps duplicate keys; the reference reader rejects them. `*oom` is
 * set when out of memory. */
static const char *json_duplicate_key(const cJSON *obj, int *oom) {
  size_t n = 0;
  for (const cJSON *c = obj->child; c; c = c->next) n++;
  if (n < 2) return NULL;
  const char **keys = malloc(n * sizeof *keys);
  if (!keys) {
    *oom = 1;
    return NULL;
  }
  size_t k = 0;
  for (const cJSON *c = obj->child; c; c = c->next) keys[k++] = c->string ? c->string : "";
  qsort(keys, n, sizeof *keys, cmp_str_ptr);
  const char *dup = NULL;
  for (size_t i = 1; i < n && !dup; i++)
    if (strcmp(keys[i - 1], keys[i]) == 0) dup = keys[i];
  free(keys);
  return dup;
}

/* A JSON number that is an integer in [0, 2^53]; stores it in *out. */
static int json_uint(const cJSON *j, uint64_t *out) {
  if (!cJSON_IsNumber(j)) return 0;
  double v = j->valuedouble;
  if (!(v >= 0 && v <= (double)ST_MAX_INT)) return 0; /* also rejects NaN */
  uint64_t u = (uint64_t)v;
  if ((double)u != v) return 0;
  *out = u;
  return 1;
}

/* Print a shape as "[784, 128]". */
static void print_dims(gc_sbuf *b, int rank, const int64_t *dims) {
  gc_sbuf_putc(b, '[');
  for (int i = 0; i < rank; i++) gc_sbuf_printf(b, "%s%lld", i ? ", " : "", (long long)dims[i]);
  gc_sbuf_putc(b, ']');
}

/* Report a content error about file `path` (no source position). */
#define ST_ERR(d, path, fmt, ...) \
  gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, (gc_loc){0, 0}, "%s: " fmt, path, __VA_ARGS__)

/* Report running out of memory while validating `path`. */
#define ST_OOM(d, path) \
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "%s: out of memory while reading the header", path)

/* Validate the "__metadata__" entry: an object whose values are strings. */
static int check_metadata(const char *path, const cJSON *meta, gc_diags *d) {
  if (!cJSON_IsObject(meta)) {
    ST_ERR(d, path, "%s", "__metadata__ must be an object of strings");
    return 0;
  }
  for (const cJSON *c = meta->child; c; c = c->next)
    if (!cJSON_IsString(c)) {
      ST_ERR(d, path, "__metadata__: value of '%s' is not a string", c->string ? c->string : "");
      return 0;
    }
  int oom = 0;
  const char *dup = json_duplicate_key(meta, &oom);
  if (oom || dup) {
    if (oom) ST_OOM(d, path);
    else ST_ERR(d, path, "__metadata__: duplicate key '%s'", dup);
    return 0;
  }
  return 1;
}

/* Validate one tensor entry of the header and fill `e`. `data_len` is the size
 * of the data section. */
static int check_entry(const char *path, const cJSON *j, uint64_t data_len, st_entry *e,
                       gc_diags *d) {
  const char *name = j->string ? j->string : "";
  e->name = name;
  if (!cJSON_IsObject(j)) {
    ST_ERR(d, path, "tensor '%s': entry is not an object", name);
    return 0;
  }
  int oom = 0;
  const char *dup = json_duplicate_key(j, &oom);
  if (oom || dup) {
    if (oom) ST_OOM(d, path);
    else ST_ERR(d, path, "tensor '%s': duplicate key '%s'", name, dup);
    return 0;
  }

  /* dtype */
  const cJSON *jd = cJSON_GetObjectItemCaseSensitive(j, "dtype");
  if (!jd) {
    ST_ERR(d, path, "tensor '%s': missing dtype", name);
    return 0;
  }
  if (!cJSON_IsString(jd)) {
    ST_ERR(d, path, "tensor '%s': dtype must be a string", name);
    return 0;
  }
  int dt = st_dtype_from_name(jd->valuestring);
  if (dt < 0) {
    ST_ERR(d, path, "tensor '%s': unsupported dtype '%s' (supported: F64 F32 F16 BF16 I64 I32 I8 U8 BOOL F8_E4M3 "
           "F8_E5M2)",
           name, jd->valuestring);
    return 0;
  }
  e->dtype = (gc_dtype)dt;

  /* shape */
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(j, "shape");
  if (!js) {
    ST_ERR(d, path, "tensor '%s': missing shape", name);
    return 0;
  }
  if (!cJSON_IsArray(js)) {
    ST_ERR(d, path, "tensor '%s': shape must be an array of non-negative integers", name);
    return 0;
  }
  int rank = cJSON_GetArraySize(js);
  if (rank > GC_MAX_RANK) {
    ST_ERR(d, path, "tensor '%s': shape has rank %d; at most %d is supported", name, rank,
           GC_MAX_RANK);
    return 0;
  }
  e->rank = 0;
  for (const cJSON *c = js->child; c; c = c->next) {
    uint64_t v;
    if (!json_uint(c, &v)) {
      char *txt = cJSON_PrintUnformatted(c);
      ST_ERR(d, path, "tensor '%s': shape entry %s is not a non-negative integer", name,
             txt ? txt : "?");
      cJSON_free(txt);
      return 0;
    }
    e->dims[e->rank++] = (int64_t)v;
  }

  /* data_offsets */
  const cJSON *jo = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
  if (!jo) {
    ST_ERR(d, path, "tensor '%s': missing data_offsets", name);
    return 0;
  }
  if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2 || !json_uint(jo->child, &e->begin) ||
      !json_uint(jo->child->next, &e->end)) {
    ST_ERR(d, path, "tensor '%s': data_offsets must be [begin, end] with non-negative integers",
           name);
    return 0;
  }
  if (e->begin > e->end) {
    ST_ERR(d, path, "tensor '%s': data_offsets [%llu, %llu] have begin after end", name,
           (unsigned long long)e->begin, (unsigned long long)e->end);
    return 0;
  }
  if (e->end > data_len) {
    ST_ERR(d, path, "tensor '%s': data_offsets [%llu, %llu] are past the end of the data (%llu bytes)",
           name, (unsigned long long)e->begin, (unsigned long long)e->end,
           (unsigned long long)data_len);
    return 0;
  }

  /* size = numel x dtype size, overflow-safe */
  uint64_t size = graphc_dtype_size(e->dtype);
  int overflow = 0;
  for (int i = 0; i < e->rank; i++)
    if (__builtin_mul_overflow(size, (uint64_t)e->dims[i], &size)) overflow = 1;
  if (overflow || size != e->end - e->begin) {
    gc_sbuf b = {0};
    print_dims(&b, e->rank, e->dims);
    char *shape = gc_sbuf_take(&b);
    if (overflow)
      ST_ERR(d, path, "tensor '%s': shape %s x %s overflows 64 bits", name, shape ? shape : "?",
             graphc_dtype_name(e->dtype));
    else
      ST_ERR(d, path, "tensor '%s': data_offsets [%llu, %llu] do not match shape %s x %s = %llu bytes",
             name, (unsigned long long)e->begin, (unsigned long long)e->end, shape ? shape : "?",
             graphc_dtype_name(e->dtype), (unsigned long long)size);
    free(shape);
    return 0;
  }
  return 1;
}

/* Order entries by data offset (then end, then name: deterministic). */
static int cmp_entry(const void *a, const void *b) {
  const st_entry *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Release a blob: unmap a mapping, free a malloc'd copy. */
static void blob_release(void *blob, size_t len, int mapped) {
  if (mapped) munmap(blob, len);
  else free(blob);
}

/* Parse and validate the header of `blob` (the whole file; `mapped`: a mapping of
 * `len` bytes, else malloc'd) and build the result. Takes ownership of `blob`
 * (released on error). */
static gc_safetensors *st_parse_blob(const char *path, unsigned char *blob, size_t len, int mapped,
                                     gc_diags *d) {
  gc_safetensors *st = NULL;
  cJSON *root = NULL;
  char *hdr = NULL;
  st_entry *ents = NULL;

  if (len == 0) {
    ST_ERR(d, path, "%s", "file is empty; expected an 8-byte header length");
    goto fail;
  }
  if (len < 8) {
    ST_ERR(d, path, "file is too short (%zu bytes); expected an 8-byte header length", len);
    goto fail;
  }
  uint64_t n = load_le64(blob);
  if (n > ST_MAX_HEADER) {
    ST_ERR(d, path, "header length %llu is absurd (more than %llu bytes)", (unsigned long long)n,
           ST_MAX_HEADER);
    goto fail;
  }
  if (n > len - 8) {
    ST_ERR(d, path, "header length %llu is larger than the rest of the file (%zu bytes)",
           (unsigned long long)n, len - 8);
    goto fail;
  }
  size_t bad = utf8_invalid_at(blob + 8, (size_t)n);
  if (bad < n) {
    if (blob[8 + bad] == 0)
      ST_ERR(d, path, "header contains a NUL byte (byte %zu of the header)", bad);
    else
      ST_ERR(d, path, "header is not valid UTF-8 (byte %zu of the header is 0x%02x)", bad,
             blob[8 + bad]);
    goto fail;
  }
  /* cJSON wants a terminated string; copy the header. */
  hdr = malloc((size_t)n + 1);
  if (!hdr) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0},
                "%s: out of memory for a %llu-byte header", path, (unsigned long long)n);
    goto fail;
  }
  memcpy(hdr, blob + 8, (size_t)n);
  hdr[n] = 0;
  const char *end = NULL;
  root = cJSON_ParseWithLengthOpts(hdr, (size_t)n, &end, 0);
  if (!root) {
    size_t at = end && end >= hdr && end <= hdr + n ? (size_t)(end - hdr) : 0;
    ST_ERR(d, path, "header is not valid JSON (error at byte %zu of the header)", at);
    goto fail;
  }
  for (const char *p = end; p && p < hdr + n; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      ST_ERR(d, path, "header has trailing characters after the JSON object (byte %zu)",
             (size_t)(p - hdr));
      goto fail;
    }
  if (!cJSON_IsObject(root)) {
    ST_ERR(d, path, "%s", "header is not a JSON object");
    goto fail;
  }
  int oom = 0;
  const char *dup = json_duplicate_key(root, &oom);
  if (oom || dup) {
    if (oom) ST_OOM(d, path);
    else ST_ERR(d, path, "duplicate tensor name '%s'", dup);
    goto fail;
  }

  /* Validate entries. */
  uint64_t data_len = len - 8 - n;
  int count = 0;
  for (const cJSON *c = root->child; c; c = c->next) count++;
  ents = calloc((size_t)(count ? count : 1), sizeof *ents);
  if (!ents) {
    ST_OOM(d, path);
    goto fail;
  }
  int nt = 0;
  size_t names_len = 0;
  for (const cJSON *c = root->child; c; c = c->next) {
    if (c->string && strcmp(c->string, "__metadata__") == 0) {
      if (!check_metadata(path, c, d)) goto fail;
      continue;
    }
    if (!check_entry(path, c, data_len, &ents[nt], d)) goto fail;
    names_len += strlen(ents[nt].name) + 1;
    nt++;
  }

  /* Sort by offset and reject overlaps (zero-size tensors occupy no bytes). */
  qsort(ents, (size_t)nt, sizeof *ents, cmp_entry);
  const st_entry *prev = NULL;
  for (int i = 0; i < nt; i++) {
    if (ents[i].begin == ents[i].end) continue;
    if (prev && ents[i].begin < prev->end) {
      ST_ERR(d, path, "tensors '%s' and '%s' overlap (data_offsets [%llu, %llu] and [%llu, %llu])",
             prev->name, ents[i].name, (unsigned long long)prev->begin,
             (unsigned long long)prev->end, (unsigned long long)ents[i].begin,
             (unsigned long long)ents[i].end);
      goto fail;
    }
    if (!prev || ents[i].end > prev->end) prev = &ents[i];
  }

  /* Build the result: the tensor array and its names share one allocation. */
  st = calloc(1, sizeof *st);
  if (st) st->path = strdup(path);
  if (st) st->tensors = malloc((size_t)nt * sizeof *st->tensors + names_len + 1);
  if (!st || !st->path || !st->tensors) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "%s: out of memory", path);
    goto fail;
  }
  char *names = (char *)(st->tensors + nt);
  const unsigned char *data = blob + 8 + n;
  for (int i = 0; i < nt; i++) {
    gc_st_tensor *t = &st->tensors[i];
    memset(t, 0, sizeof *t);
    size_t nl = strlen(ents[i].name) + 1;
    memcpy(names, ents[i].name, nl);
    t->name = names;
    names += nl;
    t->dtype = ents[i].dtype;
    t->rank = ents[i].rank;
    memcpy(t->dims, ents[i].dims, sizeof t->dims);
    t->data = data + ents[i].begin;
    t->nbytes = (size_t)(ents[i].end - ents[i].begin);
  }
  st->n = nt;
  st->blob = blob;
  st->blob_len = len;
  st->mapped = mapped;
  free(ents);
  free(hdr);
  cJSON_Delete(root);
  return st;

fail:
  if (st) {
    free(st->tensors);
    free(st->path);
    free(st);
  }
  free(ents);
  free(hdr);
  cJSON_Delete(root);
  blob_release(blob, len, mapped);
  return NULL;
}

/* Report an I/O error about `path` with errno's text. */
static void st_io_error(gc_diags *d, const char *path, const char *what, int err) {
  gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "%s: %s: %s", path, what, strerror(err));
}

/* Load and validate a safetensors file. */
/* Record the identity of the file st was loaded from (gc_weights_origin). */
static void file_identity(gc_safetensors *st, const struct stat *sb) {
  st->file_id[0] = (uint64_t)sb->st_dev;
  st->file_id[1] = (uint64_t)sb->st_ino;
  st->file_id[2] = (uint64_t)sb->st_size;
  st->file_id[3] = (uint64_t)sb->st_mtim.tv_sec * 1000000000u + (uint64_t)sb->st_mtim.tv_nsec;
}

gc_safetensors *gc_safetensors_load(const char *path, gc_diags *d) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    st_io_error(d, path, "cannot open", errno);
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    st_io_error(d, path, "cannot stat", errno);
    close(fd);
    return NULL;
  }
  if (!S_ISREG(sb.st_mode)) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "%s: not a regular file", path);
    close(fd);
    return NULL;
  }
  size_t len = (size_t)sb.st_size;
  if (len > 0) {
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      close(fd);
      gc_safetensors *st = st_parse_blob(path, map, len, 1, d);
      if (st) file_identity(st, &sb);
      return st;
    }
  }
  /* An empty file, or one on a file system that cannot map it: read it. */
  unsigned char *blob = malloc(len ? len : 1);
  if (!blob) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0},
                "%s: out of memory reading %zu bytes", path, len);
    close(fd);
    return NULL;
  }
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, blob + got, len - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      st_io_error(d, path, "read failed", errno);
      free(blob);
      close(fd);
      return NULL;
    }
    if (r == 0) break; /* shrank while reading: validate what we have */
    got += (size_t)r;
  }
  close(fd);
  gc_safetensors *st = st_parse_blob(path, blob, got, 0, d);
  if (st) file_identity(st, &sb);
  return st;
}

int gc_weights_origin(const gc_safetensors *st, const void *data, uint64_t key[5]) {
  memset(key, 0, 5 * sizeof *key);
  if (!st || !data) return -1;
  for (int i = 0; i < st->n_parts; i++)
    if (gc_weights_origin(st->parts[i], data, key) == 0) return 0;
  const unsigned char *p = data, *b = st->blob;
  if (!st->file_id[1] || !b || p < b || p >= b + st->blob_len) return -1;
  memcpy(key, st->file_id, sizeof st->file_id);
  key[4] = (uint64_t)(p - b);
  return 0;
}

/* Validate a safetensors image in memory (copied). */
gc_safetensors *gc_safetensors_parse(const char *name, const void *bytes, size_t len,
                                     gc_diags *d) {
  unsigned char *blob = malloc(len ? len : 1);
  if (!blob) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0},
                "%s: out of memory copying %zu bytes", name, len);
    return NULL;
  }
  if (len) memcpy(blob, bytes, len);
  return st_parse_blob(name, blob, len, 0, d);
}

/* Free a loaded file or a set with its parts (NULL is fine). */
void gc_safetensors_free(gc_safetensors *st) {
  if (!st) return;
  for (int i = 0; i < st->n_parts; i++) gc_safetensors_free(st->parts[i]);
  free(st->parts);
  free(st->tensors);
  if (st->blob) blob_release(st->blob, st->blob_len, st->mapped);
  free(st->path);
  free(st);
}

/* Tensor by name (linear search), or NULL. */
const gc_st_tensor *gc_safetensors_find(const gc_safetensors *st, const char *name) {
  for (int i = 0; i < st->n; i++)
    if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
  return NULL;
}

/* ---- writing --------------------------------------------------------------------- */

/* Append `s` as a JSON string literal. */
static void json_string(gc_sbuf *b, const char *s) {
  gc_sbuf_putc(b, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      gc_sbuf_putc(b, '\\');
      gc_sbuf_putc(b, (char)*p);
    } else if (*p == '\n') {
      gc_sbuf_puts(b, "\\n");
    } else if (*p == '\t') {
      gc_sbuf_puts(b, "\\t");
    } else if (*p < 0x20) {
      gc_sbuf_printf(b, "\\u%04x", *p);
    } else {
      gc_sbuf_putc(b, (char)*p);
    }
  }
  gc_sbuf_putc(b, '"');
}

/* Order pointers to tensors by name (qsort). */
static int cmp_tensor_name(const void *a, const void *b) {
  const gc_st_tensor *x = *(const gc_st_tensor *const *)a, *y = *(const gc_st_tensor *const *)b;
  return strcmp(x->name, y->name);
}

/* Data order for writing: element size descending, then given order. */
static int cmp_tensor_layout(const void *a, const void *b) {
  const gc_st_tensor *x = *(const gc_st_tensor *const *)a, *y = *(const gc_st_tensor *const *)b;
  size_t sx = graphc_dtype_size(x->dtype), sy = graphc_dtype_size(y->dtype);
  if (sx != sy) return sx > sy ? -1 : 1;
  return x < y ? -1 : x > y; /* same array: position = given order */
}

/* Check that the caller's tensors are writable: valid dtype, rank, dims,
 * nbytes and names (non-NULL, UTF-8, unique, not "__metadata__"). */
static int check_tensors(const char *path, const gc_st_tensor *const *by_name, int n,
                         gc_diags *d) {
  for (int i = 0; i < n; i++) {
    const gc_st_tensor *t = by_name[i];
    const char *name = t->name;
    int bad = 0;
    uint64_t size = graphc_dtype_size(t->dtype);
    if (size == 0 || t->rank < 0 || t->rank > GC_MAX_RANK) bad = 1;
    for (int k = 0; !bad && k < t->rank; k++)
      if (t->dims[k] < 0 || __builtin_mul_overflow(size, (uint64_t)t->dims[k], &size)) bad = 1;
    if (bad) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s: tensor '%s': invalid dtype or shape", path, name);
      return 0;
    }
    if (size != t->nbytes || (size && !t->data)) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s: tensor '%s': %zu bytes of data given, shape x dtype needs %llu", path,
                  name, t->data ? t->nbytes : 0, (unsigned long long)size);
      return 0;
    }
    size_t len = strlen(name);
    if (utf8_invalid_at((const unsigned char *)name, len) != len ||
        strcmp(name, "__metadata__") == 0) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s: tensor name '%s' is not allowed", path, name);
      return 0;
    }
    if (i > 0 && strcmp(by_name[i - 1]->name, name) == 0) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s: duplicate tensor name '%s'", path, name);
      return 0;
    }
  }
  return 1;
}

/* write() all of buf, retrying on EINTR; 0 on success, else errno. */
static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    size_t chunk = len > (1u << 30) ? (1u << 30) : len;
    ssize_t r = write(fd, p, chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    p += r;
    len -= (size_t)r;
  }
  return 0;
}

/* Create a fresh temporary file next to `path`; returns fd and its name in *tmp. */
static int create_temp(const char *path, char **tmp, int *err) {
  for (int attempt = 0; attempt < 100; attempt++) {
    gc_sbuf b = {0};
    gc_sbuf_printf(&b, "%s.tmp.%ld.%d", path, (long)getpid(), attempt);
    char *name = gc_sbuf_take(&b);
    if (!name) {
      *err = ENOMEM;
      return -1;
    }
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      *tmp = name;
      return fd;
    }
    *err = errno;
    if (errno != EEXIST) {
      free(name);
      return -1;
    }
    free(name);
  }
  return -1;
}

/* Write tensors to `path` atomically (see the file comment for the layout). */
int gc_safetensors_write(const char *path, const gc_st_tensor *tensors, int n, gc_diags *d) {
  const gc_st_tensor **by_name = malloc((size_t)(n > 0 ? n : 1) * sizeof *by_name);
  const gc_st_tensor **by_layout = malloc((size_t)(n > 0 ? n : 1) * sizeof *by_layout);
  uint64_t *offsets = malloc((size_t)(n > 0 ? n : 1) * sizeof *offsets);
  gc_sbuf hb = {0};
  char *header = NULL, *tmp = NULL;
  int fd = -1, rc = -1;
  if (!by_name || !by_layout || !offsets) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "%s: out of memory", path);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    if (!tensors[i].name) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s: tensor %d has no name", path, i);
      goto done;
    }
    by_name[i] = by_layout[i] = &tensors[i];
  }
  qsort(by_name, (size_t)n, sizeof *by_name, cmp_tensor_name);
  if (!check_tensors(path, by_name, n, d)) goto done;

  /* Data offsets in layout order, packed. */
  qsort(by_layout, (size_t)n, sizeof *by_layout, cmp_tensor_layout);
  uint64_t pos = 0;
  for (int i = 0; i < n; i++) {
    offsets[by_layout[i] - tensors] = pos;
    pos += by_layout[i]->nbytes;
  }

  /* Header: keys sorted by name, compact JSON, padded with spaces. */
  gc_sbuf_putc(&hb, '{');
  for (int i = 0; i < n; i++) {
    const gc_st_tensor *t = by_name[i];
    uint64_t off = offsets[t - tensors];
    if (i) gc_sbuf_putc(&hb, ',');
    json_string(&hb, t->name);
    gc_sbuf_printf(&hb, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_names[t->dtype]);
    for (int k = 0; k < t->rank; k++)
      gc_sbuf_printf(&hb, "%s%lld", k ? "," : "", (long long)t->dims[k]);
    gc_sbuf_printf(&hb, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                   (unsigned long long)(off + t->nbytes));
  }
  gc_sbuf_putc(&hb, '}');
  while (hb.len % 8 && !hb.failed) gc_sbuf_putc(&hb, ' '); /* putc cannot grow a failed buffer */
  size_t hlen = hb.len;
  header = gc_sbuf_take(&hb);
  if (!header) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "%s: out of memory", path);
    goto done;
  }

  int err = 0;
  fd = create_temp(path, &tmp, &err);
  if (fd < 0) {
    if (err == ENOMEM)
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "%s: out of memory", path);
    else
      st_io_error(d, path, "cannot create a temporary file next to it", err);
    goto done;
  }
  unsigned char lenbuf[8];
  for (int i = 0; i < 8; i++) lenbuf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
  err = write_all(fd, lenbuf, 8);
  if (!err) err = write_all(fd, header, hlen);
  for (int i = 0; i < n && !err; i++) err = write_all(fd, by_layout[i]->data, by_layout[i]->nbytes);
  if (!err && fsync(fd) != 0) err = errno;
  if (err) {
    st_io_error(d, path, "write failed", err);
    goto done;
  }
  int cfd = fd;
  fd = -1;
  if (close(cfd) != 0) {
    st_io_error(d, path, "write failed", errno);
    goto done;
  }
  if (rename(tmp, path) != 0) {
    st_io_error(d, path, "cannot rename the temporary file into place", errno);
    goto done;
  }
  free(tmp);
  tmp = NULL;
  rc = 0;

done:
  if (fd >= 0) close(fd);
  if (tmp) {
    unlink(tmp);
    free(tmp);
  }
  gc_sbuf_free(&hb);
  free(header);
  free(offsets);
  free(by_layout);
  free(by_name);
  return rc;
}

/* ---- checking params --------------------------------------------------------------- */

/* Check every param of g: tensor present, same shape, same dtype (the `from` one if given). */
int gc_weights_check(const gc_graph *g, const gc_safetensors *st, gc_diags *d) {
  int errors = 0;
  for (const gc_op *op = g->first; op; op = op->next) {
    if (op->opcode != GC_OP_PARAM || op->n_results != 1) continue;
    const char *pname = op->results[0]->name;
    const char *tname = gc_op_attr_str(op, "name", NULL);
    if (!tname) {
      gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc, "param %%%s: no tensor name", pname);
      errors++;
      continue;
    }
    const gc_st_tensor *t = gc_safetensors_find(st, tname);
    if (!t) {
      gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc, "param %%%s: tensor '%s' not found in %s",
                  pname, tname, st->path);
      errors++;
      continue;
    }
    gc_type want = gc_param_type(g, op), decl = want, have = {.dtype = t->dtype, .rank = t->rank};
    gc_dtype from = gc_param_file_dtype(op);  /* want's dtype */
    decl.dtype = op->results[0]->type.dtype;
    memcpy(have.dims, t->dims, sizeof have.dims);
    if (gc_type_equal(&want, &have)) continue;
    gc_sbuf b = {0};
    gc_sbuf_printf(&b, "param %%%s: %s mismatch: tensor '%s' in %s is ", pname,
                   want.dtype != have.dtype ? "dtype" : "shape", tname, st->path);
    gc_type_print(&b, &have, NULL);
    gc_sbuf_puts(&b, ", the param is declared ");
    gc_type_print(&b, &decl, g->sym_names);
    if (from != decl.dtype) gc_sbuf_printf(&b, " from %s", graphc_dtype_name(from));
    char *msg = gc_sbuf_take(&b);
    gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc, "%s", msg ? msg : "param type mismatch");
    free(msg);
    errors++;
  }
  return errors;
}
