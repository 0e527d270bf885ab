/* protobuf.h - a small, bounds-checked reader for the protobuf wire format.
 *
 * Just enough to walk ONNX files without generated code or libprotobuf:
 * a message is a byte range; gc_pb_next() returns its fields one by one
 * (number, wire type, and the varint / fixed value or the length-delimited
 * bytes). Every read checks the range, so a truncated or malicious file gives
 * an error, never an out-of-bounds access. Nested messages are opened with
 * gc_pb_open(), which counts the depth and refuses to go past GC_PB_MAX_DEPTH.
 *
 * Errors are kept in a gc_pb_error (message and byte offset in the file);
 * the first error wins and every later call fails fast.
 */
#ifndef GC_PROTOBUF_H
#define GC_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#define GC_PB_MAX_DEPTH 32

/* Wire types. */
enum {
  GC_PB_VARINT = 0,
  GC_PB_FIXED64 = 1,
  GC_PB_LEN = 2,
  GC_PB_SGROUP = 3, /* groups: deprecated, rejected */
  GC_PB_EGROUP = 4,
  GC_PB_FIXED32 = 5
};

typedef struct gc_pb_error {
  int failed;
  size_t offset;          /* byte offset in the whole buffer */
  char msg[256];
} gc_pb_error;

/* A message: the byte range [p, end) inside the buffer that starts at base. */
typedef struct gc_pb_msg {
  const uint8_t *base;    /* start of the whole buffer (for offsets in messages) */
  const uint8_t *p, *end;
  int depth;
  const char *what;       /* message type name, for errors ("TensorProto") */
  gc_pb_error *err;
} gc_pb_msg;

typedef struct gc_pb_field {
  uint32_t num;
  int wire;
  uint64_t u;             /* VARINT, FIXED64, FIXED32 */
  const uint8_t *data;    /* LEN */
  size_t len;             /* LEN */
  size_t offset;          /* where the field's key starts */
} gc_pb_field;

/* A top-level message over len bytes at data. */
gc_pb_msg gc_pb_root(const void *data, size_t len, const char *what, gc_pb_error *err);
/* Next field of m: 1 when f was filled, 0 at the end, -1 on an error (in m->err). */
int gc_pb_next(gc_pb_msg *m, gc_pb_field *f);
/* Open a length-delimited field as a nested message; depth-checked. Returns 0
 * or -1 (wrong wire type, too deep). */
int gc_pb_open(const gc_pb_msg *parent, const gc_pb_field *f, const char *what, gc_pb_msg *out);
/* Report an error at field f (or at the current position when f is NULL). */
void gc_pb_fail(gc_pb_msg *m, const gc_pb_field *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Scalar accessors: check the wire type, report "field N of <what>: ..." on a
 * mismatch and return -1; else store and return 0. */
int gc_pb_int64(gc_pb_msg *m, const gc_pb_field *f, int64_t *out);   /* int32/int64/enum/bool */
int gc_pb_float(gc_pb_msg *m, const gc_pb_field *f, float *out);     /* fixed32 float */
int gc_pb_bytes(gc_pb_msg *m, const gc_pb_field *f, const uint8_t **data, size_t *len);

/* Repeated numeric fields, packed (one LEN field) or unpacked (one element per
 * field): each call appends the field's elements to a malloc'd array grown as
 * needed (*arr, *n, *cap). kind: 'i' varint int64, 'z' zigzag sint64,
 * 'f' float (fixed32), 'd' double (fixed64), 'u' uint64 varint. The array
 * element is int64_t for 'i' 'z' 'u' (u stored bit-for-bit), float for 'f',
 * double for 'd'. Returns 0 or -1. */
int gc_pb_append(gc_pb_msg *m, const gc_pb_field *f, char kind, void **arr, size_t *n, size_t *cap);

/* Decode one varint at *p (below end); advances *p. Returns 0 or -1 (truncated
 * or longer than 10 bytes). Exposed for tests. */
int gc_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

#endif
