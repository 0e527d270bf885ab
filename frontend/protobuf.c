/* protobuf.c - bounds-checked protobuf wire-format reader (see protobuf.h). */
#include "frontend/protobuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const wire_names[8] = {"varint", "fixed64", "length-delimited", "start-group",
                                          "end-group", "fixed32", "invalid (6)", "invalid (7)"};

/* A top-level message over the whole buffer. */
gc_pb_msg gc_pb_root(const void *data, size_t len, const char *what, gc_pb_error *err) {
  gc_pb_msg m;
  m.base = data;
  m.p = data;
  m.end = m.p + len;
  m.depth = 0;
  m.what = what;
  m.err = err;
  return m;
}

/* Record the first error: message plus the byte offset it happened at. */
static void vfail(gc_pb_msg *m, size_t offset, const char *fmt, va_list ap) {
  if (m->err->failed) return;
  m->err->failed = 1;
  m->err->offset = offset;
  vsnprintf(m->err->msg, sizeof m->err->msg, fmt, ap);
}

/* Report an error at field f (or at the current position). */
void gc_pb_fail(gc_pb_msg *m, const gc_pb_field *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(m, f ? f->offset : (size_t)(m->p - m->base), fmt, ap);
  va_end(ap);
}

/* Decode a base-128 varint; at most 10 bytes, never past end. */
int gc_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  const uint8_t *q = *p;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q >= end) return -1;
    uint8_t b = *q++;
    if (shift == 63 && (b & 0x7e)) return -1; /* more than 64 bits */
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *p = q;
      *out = v;
      return 0;
    }
  }
  return -1;
}

/* Read the next field's key and payload; checks every length against the end. */
int gc_pb_next(gc_pb_msg *m, gc_pb_field *f) {
  if (m->err->failed) return -1;
  if (m->p >= m->end) return 0;
  memset(f, 0, sizeof *f);
  f->offset = (size_t)(m->p - m->base);
  uint64_t key;
  if (gc_pb_varint(&m->p, m->end, &key) != 0) {
    gc_pb_fail(m, f, "%s: truncated or overlong varint in a field key", m->what);
    return -1;
  }
  f->num = (uint32_t)(key >> 3);
  f->wire = (int)(key & 7);
  if (key >> 3 == 0 || key >> 3 > 0x1fffffff) {
    gc_pb_fail(m, f, "%s: invalid field number %llu", m->what, (unsigned long long)(key >> 3));
    return -1;
  }
  switch (f->wire) {
    case GC_PB_VARINT:
      if (gc_pb_varint(&m->p, m->end, &f->u) != 0) {
        gc_pb_fail(m, f, "%s: field %u: truncated or overlong varint", m->what, f->num);
        return -1;
      }
      return 1;
    case GC_PB_FIXED64:
    case GC_PB_FIXED32: {
      size_t n = f->wire == GC_PB_FIXED64 ? 8 : 4;
      if ((size_t)(m->end - m->p) < n) {
        gc_pb_fail(m, f, "%s: field %u: truncated %s value", m->what, f->num, wire_names[f->wire]);
        return -1;
      }
      uint64_t v = 0;
      for (size_t i = 0; i < n; i++) v |= (uint64_t)m->p[i] << (8 * i);
      m->p += n;
      f->u = v;
      return 1;
    }
    case GC_PB_LEN: {
      uint64_t len;
      if (gc_pb_varint(&m->p, m->end, &len) != 0) {
        gc_pb_fail(m, f, "%s: field %u: truncated or overlong length", m->what, f->num);
        return -1;
      }
      if (len > (uint64_t)(m->end - m->p)) {
        gc_pb_fail(m, f, "%s: field %u: length %llu runs past the end of the data (%zu bytes left)",
                   m->what, f->num, (unsigned long long)len, (size_t)(m->end - m->p));
        return -1;
      }
      f->data = m->p;
      f->len = (size_t)len;
      m->p += len;
      return 1;
    }
    default:
      gc_pb_fail(m, f, "%s: field %u: bad wire type %d (%s)", m->what, f->num, f->wire,
                 wire_names[f->wire]);
      return -1;
  }
}

/* Open a length-delimited field as a nested message, counting depth. */
int gc_pb_open(const gc_pb_msg *parent, const gc_pb_field *f, const char *what, gc_pb_msg *out) {
  gc_pb_msg *pm = (gc_pb_msg *)parent;
  if (f->wire != GC_PB_LEN) {
    gc_pb_fail(pm, f, "%s: field %u: expected a %s message, got wire type %s", parent->what, f->num,
               what, wire_names[f->wire]);
    return -1;
  }
  if (parent->depth + 1 > GC_PB_MAX_DEPTH) {
    gc_pb_fail(pm, f, "%s: messages nested deeper than %d levels", what, GC_PB_MAX_DEPTH);
    return -1;
  }
  out->base = parent->base;
  out->p = f->data;
  out->end = f->data + f->len;
  out->depth = parent->depth + 1;
  out->what = what;
  out->err = parent->err;
  return 0;
}

/* Integer-like scalar (varint). */
int gc_pb_int64(gc_pb_msg *m, const gc_pb_field *f, int64_t *out) {
  if (f->wire != GC_PB_VARINT) {
    gc_pb_fail(m, f, "%s: field %u: expected a varint, got wire type %s", m->what, f->num,
               wire_names[f->wire]);
    return -1;
  }
  *out = (int64_t)f->u;
  return 0;
}

/* float scalar (fixed32). */
int gc_pb_float(gc_pb_msg *m, const gc_pb_field *f, float *out) {
  if (f->wire != GC_PB_FIXED32) {
    gc_pb_fail(m, f, "%s: field %u: expected a float (fixed32), got wire type %s", m->what, f->num,
               wire_names[f->wire]);
    return -1;
  }
  uint32_t b = (uint32_t)f->u;
  memcpy(out, &b, sizeof *out);
  return 0;
}

/* Bytes or string (length-delimited). */
int gc_pb_bytes(gc_pb_msg *m, const gc_pb_field *f, const uint8_t **data, size_t *len) {
  if (f->wire != GC_PB_LEN) {
    gc_pb_fail(m, f, "%s: field %u: expected bytes, got wire type %s", m->what, f->num,
               wire_names[f->wire]);
    return -1;
  }
  *data = f->data;
  *len = f->len;
  return 0;
}

/* Make room for `more` elements of `size` bytes in a malloc'd array. */
static int grow(gc_pb_msg *m, const gc_pb_field *f, void **arr, size_t *n, size_t *cap,
                size_t more, size_t size) {
  if (*n + more <= *cap) return 0;
  size_t want = *cap ? *cap : 16;
  while (want < *n + more) {
    if (want > SIZE_MAX / 2 / size) {
      gc_pb_fail(m, f, "%s: field %u: too many elements", m->what, f->num);
      return -1;
    }
    want *= 2;
  }
  void *p = realloc(*arr, want * size);
  if (!p) {
    gc_pb_fail(m, f, "%s: field %u: out of memory for %zu elements", m->what, f->num, want);
    return -1;
  }
  *arr = p;
  *cap = want;
  return 0;
}

/* Store one decoded element of `kind` into the array at index i. */
static void put(void *arr, size_t i, char kind, uint64_t u) {
  switch (kind) {
    case 'f': {
      uint32_t b = (uint32_t)u;
      float v;
      memcpy(&v, &b, sizeof v);
      ((float *)arr)[i] = v;
      break;
    }
    case 'd': {
      double v;
      memcpy(&v, &u, sizeof v);
      ((double *)arr)[i] = v;
      break;
    }
    case 'z': ((int64_t *)arr)[i] = (int64_t)(u >> 1) ^ -(int64_t)(u & 1); break;
    default: ((int64_t *)arr)[i] = (int64_t)u; break;
  }
}

/* Append a repeated numeric field (packed or not) to a growing array. */
int gc_pb_append(gc_pb_msg *m, const gc_pb_field *f, char kind, void **arr, size_t *n, size_t *cap) {
  int fixed = kind == 'f' ? 4 : kind == 'd' ? 8 : 0;
  int want_wire = kind == 'f' ? GC_PB_FIXED32 : kind == 'd' ? GC_PB_FIXED64 : GC_PB_VARINT;
  size_t size = kind == 'f' ? sizeof(float) : 8;
  if (f->wire == want_wire) {
    if (grow(m, f, arr, n, cap, 1, size) != 0) return -1;
    put(*arr, (*n)++, kind, f->u);
    return 0;
  }
  if (f->wire != GC_PB_LEN) {
    gc_pb_fail(m, f, "%s: field %u: expected a repeated %s, got wire type %s", m->what, f->num,
               wire_names[want_wire], wire_names[f->wire]);
    return -1;
  }
  if (fixed) {
    if (f->len % (size_t)fixed) {
      gc_pb_fail(m, f, "%s: field %u: packed length %zu is not a multiple of %d", m->what, f->num,
                 f->len, fixed);
      return -1;
    }
    size_t cnt = f->len / (size_t)fixed;
    if (grow(m, f, arr, n, cap, cnt, size) != 0) return -1;
    for (size_t i = 0; i < cnt; i++) {
      uint64_t u = 0;
      for (int k = 0; k < fixed; k++) u |= (uint64_t)f->data[i * (size_t)fixed + (size_t)k] << (8 * k);
      put(*arr, (*n)++, kind, u);
    }
    return 0;
  }
  const uint8_t *p = f->data, *end = f->data + f->len;
  while (p < end) {
    uint64_t u;
    if (gc_pb_varint(&p, end, &u) != 0) {
      gc_pb_fail(m, f, "%s: field %u: truncated or overlong varint in a packed array", m->what,
                 f->num);
      return -1;
    }
    if (grow(m, f, arr, n, cap, 1, size) != 0) return -1;
    put(*arr, (*n)++, kind, u);
  }
  return 0;
}
