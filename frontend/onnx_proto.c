/* onnx_proto.c - decode ONNX protobuf messages (ModelProto and what it holds).
 *
 * Each message is read in two passes over its fields: the first counts the
 * repeated message fields so their arrays are allocated once in the model's
 * arena, the second decodes. Field numbers follow onnx/onnx.proto3. Unknown
 * fields are skipped (forward compatible); a field with the wrong wire type,
 * a length past the end, a truncated varint or nesting deeper than
 * GC_PB_MAX_DEPTH is an error with the byte offset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx.h"
#include "frontend/protobuf.h"

/* Decoder state: the arena that receives everything. */
typedef struct pstate {
  gc_arena *a;
  int oom;
} pstate;

/* Arena copy of a length-delimited string field. */
static const char *str_of(pstate *s, gc_pb_msg *m, const gc_pb_field *f) {
  const uint8_t *p;
  size_t n;
  if (gc_pb_bytes(m, f, &p, &n) != 0) return NULL;
  char *c = gc_arena_strndup(s->a, (const char *)p, n);
  if (!c) {
    s->oom = 1;
    gc_pb_fail(m, f, "out of memory");
  }
  return c;
}

/* Arena array of n elements of size sz (n may be 0). */
static void *arr_of(pstate *s, gc_pb_msg *m, size_t n, size_t sz) {
  if (n == 0) return NULL;
  if (n > SIZE_MAX / sz) {
    gc_pb_fail(m, NULL, "%s: too many elements", m->what);
    return NULL;
  }
  void *p = gc_arena_alloc(s->a, n * sz);
  if (!p) {
    s->oom = 1;
    gc_pb_fail(m, NULL, "out of memory");
  }
  return p;
}

/* Count the fields numbered `num` in a message (first pass). */
static int count_fields(gc_pb_msg m, uint32_t num, uint32_t num2, int *n2) {
  gc_pb_field f;
  int n = 0, r;
  if (n2) *n2 = 0;
  while ((r = gc_pb_next(&m, &f)) == 1) {
    if (f.num == num) n++;
    if (n2 && f.num == num2) (*n2)++;
  }
  return r < 0 ? -1 : n;
}

/* Move a malloc'd array into the arena (frees it). */
static void *to_arena(pstate *s, gc_pb_msg *m, void *arr, size_t n, size_t sz) {
  void *out = n ? arr_of(s, m, n, sz) : NULL;
  if (out) memcpy(out, arr, n * sz);
  free(arr);
  return out;
}

/* ---- element sizes and names -------------------------------------------------------- */

size_t gc_onnx_type_size(int t) {
  switch (t) {
    case GC_ONNX_FLOAT: case GC_ONNX_INT32: case GC_ONNX_UINT32: return 4;
    case GC_ONNX_UINT8: case GC_ONNX_INT8: case GC_ONNX_BOOL: return 1;
    case GC_ONNX_UINT16: case GC_ONNX_INT16: case GC_ONNX_FLOAT16: case GC_ONNX_BFLOAT16: return 2;
    case GC_ONNX_INT64: case GC_ONNX_UINT64: case GC_ONNX_DOUBLE: case GC_ONNX_COMPLEX64: return 8;
    case GC_ONNX_COMPLEX128: return 16;
    case 17: case 18: case 19: case 20: case 24: return 1; /* float8 variants, e8m0 */
    default: return 0;
  }
}

/* Name of an ONNX data type, for messages. */
const char *gc_onnx_type_name(int t) {
  static const char *const names[] = {
      "UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",         "INT16",
      "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16",        "DOUBLE",
      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",       "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
      "FLOAT8E8M0", "UINT2", "INT2"};
  if (t >= 0 && t < (int)(sizeof names / sizeof *names)) return names[t];
  return "unknown type";
}

/* graphc dtype of an ONNX data type, or -1. */
int gc_onnx_dtype(int t) {
  switch (t) {
    case GC_ONNX_FLOAT: return GRAPHC_DTYPE_F32;
    case GC_ONNX_DOUBLE: return GRAPHC_DTYPE_F64;
    case GC_ONNX_FLOAT16: return GRAPHC_DTYPE_F16;
    case GC_ONNX_BFLOAT16: return GRAPHC_DTYPE_BF16;
    case GC_ONNX_INT64: return GRAPHC_DTYPE_I64;
    case GC_ONNX_INT32: return GRAPHC_DTYPE_I32;
    case GC_ONNX_INT8: return GRAPHC_DTYPE_I8;
    case GC_ONNX_UINT8: return GRAPHC_DTYPE_U8;
    case GC_ONNX_BOOL: return GRAPHC_DTYPE_BOOL;
    case GC_ONNX_FLOAT8E4M3FN: return GRAPHC_DTYPE_F8E4M3;
    case GC_ONNX_FLOAT8E5M2: return GRAPHC_DTYPE_F8E5M2;
    case GC_ONNX_FLOAT8E4M3FNUZ: return GRAPHC_DTYPE_F8E4M3FNUZ;
    case GC_ONNX_FLOAT8E5M2FNUZ: return GRAPHC_DTYPE_F8E5M2FNUZ;
    default: return -1;
  }
}

/* ---- TensorProto ------------------------------------------------------------------------- */

/* Repeated typed-data fields collected before data_type is known. */
typedef struct tdata {
  float *f; size_t nf, cf;
  int64_t *i32; size_t ni32, ci32;
  int64_t *i64; size_t ni64, ci64;
  double *d; size_t nd, cd;
  int64_t *u64; size_t nu64, cu64;
} tdata;

/* Free the typed-field arrays. */
static void tdata_free(tdata *t) {
  free(t->f);
  free(t->i32);
  free(t->i64);
  free(t->d);
  free(t->u64);
}

/* Convert the typed repeated fields into the raw little-endian layout. */
static int typed_to_raw(pstate *s, gc_pb_msg *m, gc_onnx_tensor *t, tdata *td) {
  size_t es = gc_onnx_type_size(t->data_type);
  size_t have = td->nf + td->ni32 + td->ni64 + td->nd + td->nu64;
  if (!have) return 0;
  if (!es || t->numel < 0) {
    gc_pb_fail(m, NULL, "tensor '%s': typed data for type %s is not supported", t->name,
               gc_onnx_type_name(t->data_type));
    return -1;
  }
  size_t n = (size_t)t->numel, per = 1, got = 0;
  int dt = t->data_type;
  if (dt == GC_ONNX_COMPLEX64 || dt == GC_ONNX_COMPLEX128) per = 2;
  const char *field = "";
  switch (dt) {
    case GC_ONNX_FLOAT: case GC_ONNX_COMPLEX64: got = td->nf; field = "float_data"; break;
    case GC_ONNX_INT64: got = td->ni64; field = "int64_data"; break;
    case GC_ONNX_DOUBLE: case GC_ONNX_COMPLEX128: got = td->nd; field = "double_data"; break;
    case GC_ONNX_UINT32: case GC_ONNX_UINT64: got = td->nu64; field = "uint64_data"; break;
    default: got = td->ni32; field = "int32_data"; break;
  }
  if (got != n * per || have != got) {
    gc_pb_fail(m, NULL, "tensor '%s': %s has %zu values for %zu elements of type %s", t->name,
               field, got, n, gc_onnx_type_name(dt));
    return -1;
  }
  uint8_t *out = arr_of(s, m, n ? n * es : 1, 1);
  if (!out) return -1;
  for (size_t i = 0; i < n * per; i++) {
    switch (dt) {
      case GC_ONNX_FLOAT: case GC_ONNX_COMPLEX64: memcpy(out + i * 4, &td->f[i], 4); break;
      case GC_ONNX_DOUBLE: case GC_ONNX_COMPLEX128: memcpy(out + i * 8, &td->d[i], 8); break;
      case GC_ONNX_INT64: memcpy(out + i * 8, &td->i64[i], 8); break;
      case GC_ONNX_UINT64: memcpy(out + i * 8, &td->u64[i], 8); break;
      case GC_ONNX_UINT32: {
        uint32_t v = (uint32_t)td->u64[i];
        memcpy(out + i * 4, &v, 4);
        break;
      }
      default: { /* int32_data holds the value (or the bit pattern) of narrower types */
        uint64_t v = (uint64_t)td->i32[i];
        for (size_t k = 0; k < es; k++) out[i * es + k] = (uint8_t)(v >> (8 * k));
        break;
      }
    }
  }
  t->data = out;
  t->nbytes = n * es;
  return 0;
}

/* StringStringEntryProto of external_data: location / offset / length. */
static int parse_external_entry(pstate *s, gc_pb_msg *m, gc_onnx_tensor *t) {
  gc_pb_field f;
  int r;
  const char *key = NULL, *val = NULL;
  while ((r = gc_pb_next(m, &f)) == 1) {
    if (f.num == 1) key = str_of(s, m, &f);
    else if (f.num == 2) val = str_of(s, m, &f);
  }
  if (r < 0) return -1;
  if (!key || !val) return 0;
  if (strcmp(key, "location") == 0) {
    t->location = val;
  } else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
    char *end;
    errno = 0;
    long long v = strtoll(val, &end, 10);
    if (errno || *end || end == val || v < 0) {
      gc_pb_fail(m, NULL, "tensor '%s': external data %s '%s' is not a non-negative integer",
                 t->name, key, val);
      return -1;
    }
    if (key[0] == 'o') t->ext_offset = v; else t->ext_length = v;
  }
  return 0;
}

/* Decode a TensorProto into t (data points into the message or the arena). */
static int parse_tensor(pstate *s, gc_pb_msg *m, gc_onnx_tensor *t) {
  gc_pb_field f;
  int r;
  int64_t *dims = NULL;
  size_t nd = 0, cd = 0;
  tdata td;
  memset(&td, 0, sizeof td);
  memset(t, 0, sizeof *t);
  t->name = "";
  t->ext_length = -1;
  t->file_offset = (size_t)(m->p - m->base);
  const uint8_t *raw = NULL;
  size_t raw_len = 0;
  int has_raw = 0;
  int64_t loc = 0;
  while ((r = gc_pb_next(m, &f)) == 1) {
    int64_t v;
    switch (f.num) {
      case 1: r = gc_pb_append(m, &f, 'i', (void **)&dims, &nd, &cd); break;
      case 2: r = gc_pb_int64(m, &f, &v); t->data_type = (int)v; break;
      case 4: r = gc_pb_append(m, &f, 'f', (void **)&td.f, &td.nf, &td.cf); break;
      case 5: r = gc_pb_append(m, &f, 'i', (void **)&td.i32, &td.ni32, &td.ci32); break;
      case 6: t->has_strings = 1; break;
      case 7: r = gc_pb_append(m, &f, 'i', (void **)&td.i64, &td.ni64, &td.ci64); break;
      case 8: r = (t->name = str_of(s, m, &f)) ? 0 : -1; break;
      case 9: r = gc_pb_bytes(m, &f, &raw, &raw_len); has_raw = 1; break;
      case 10: r = gc_pb_append(m, &f, 'd', (void **)&td.d, &td.nd, &td.cd); break;
      case 11: r = gc_pb_append(m, &f, 'u', (void **)&td.u64, &td.nu64, &td.cu64); break;
      case 13: {
        gc_pb_msg sub;
        r = gc_pb_open(m, &f, "StringStringEntryProto", &sub);
        if (r == 0) r = parse_external_entry(s, &sub, t);
        break;
      }
      case 14: r = gc_pb_int64(m, &f, &loc); break;
      case 3: /* segment: unsupported, rejected below */
        gc_pb_fail(m, &f, "TensorProto: segmented tensors are not supported");
        r = -1;
        break;
      default: r = 0; break;
    }
    if (r < 0) break;
  }
  if (r < 0 || m->err->failed) goto fail;
  if (nd > 64) {
    gc_pb_fail(m, NULL, "tensor '%s': rank %zu is too large", t->name, nd);
    goto fail;
  }
  t->rank = (int)nd;
  t->dims = to_arena(s, m, dims, nd, sizeof *dims);
  dims = NULL;
  if (nd && !t->dims) goto fail;
  t->numel = 1;
  for (int k = 0; k < t->rank; k++) {
    if (t->dims[k] < 0) {
      gc_pb_fail(m, NULL, "tensor '%s': negative dim %lld", t->name, (long long)t->dims[k]);
      goto fail;
    }
    if (t->dims[k] && t->numel > (INT64_C(1) << 62) / t->dims[k]) t->numel = -1;
    if (t->numel >= 0) t->numel *= t->dims[k];
  }
  t->external = loc == 1;
  if (t->external) {
    if (!t->location) {
      gc_pb_fail(m, NULL, "tensor '%s': external data without a location", t->name);
      goto fail;
    }
  } else if (has_raw) {
    size_t es = gc_onnx_type_size(t->data_type);
    uint64_t want = 0;  /* numel < 2^62 here, but times the element size it may not fit */
    int too_big = es && t->numel >= 0 && __builtin_mul_overflow((uint64_t)t->numel, (uint64_t)es, &want);
    if (es && t->numel >= 0 && (too_big || (uint64_t)raw_len != want)) {
      if (too_big)
        gc_pb_fail(m, NULL, "tensor '%s': raw_data has %zu bytes, expected %lld x %s (over 2^64 bytes)",
                   t->name, raw_len, (long long)t->numel, gc_onnx_type_name(t->data_type));
      else
        gc_pb_fail(m, NULL, "tensor '%s': raw_data has %zu bytes, expected %llu (%lld x %s)", t->name,
                   raw_len, (unsigned long long)want, (long long)t->numel, gc_onnx_type_name(t->data_type));
      goto fail;
    }
    t->data = raw;
    t->nbytes = raw_len;
  } else if (typed_to_raw(s, m, t, &td) != 0) {
    goto fail;
  }
  tdata_free(&td);
  return 0;
fail:
  free(dims);
  tdata_free(&td);
  if (!m->err->failed) gc_pb_fail(m, NULL, "TensorProto: invalid");
  return -1;
}

/* ---- TypeProto / ValueInfoProto ------------------------------------------------------------ */

/* TensorShapeProto.Dimension. */
static int parse_dim(pstate *s, gc_pb_msg *m, gc_onnx_dim *d) {
  gc_pb_field f;
  int r;
  while ((r = gc_pb_next(m, &f)) == 1) {
    if (f.num == 1) {
      if (gc_pb_int64(m, &f, &d->value) != 0) return -1;
      d->has_value = 1;
    } else if (f.num == 2) {
      if (!(d->param = str_of(s, m, &f))) return -1;
    }
  }
  return r;
}

/* TypeProto.Tensor (or SparseTensor): elem_type and shape. */
static int parse_tensor_type(pstate *s, gc_pb_msg *m, gc_onnx_value_info *vi) {
  gc_pb_field f;
  int r;
  while ((r = gc_pb_next(m, &f)) == 1) {
    if (f.num == 1) {
      int64_t v;
      if (gc_pb_int64(m, &f, &v) != 0) return -1;
      vi->elem_type = (int)v;
    } else if (f.num == 2) {
      gc_pb_msg sh;
      if (gc_pb_open(m, &f, "TensorShapeProto", &sh) != 0) return -1;
      int n = count_fields(sh, 1, 0, NULL);
      if (n < 0) return -1;
      vi->has_shape = 1;
      vi->rank = n;
      vi->dims = arr_of(s, m, (size_t)n, sizeof *vi->dims);
      if (n && !vi->dims) return -1;
      int k = 0;
      while ((r = gc_pb_next(&sh, &f)) == 1) {
        if (f.num != 1) continue;
        gc_pb_msg dm;
        if (gc_pb_open(&sh, &f, "TensorShapeProto.Dimension", &dm) != 0 ||
            parse_dim(s, &dm, &vi->dims[k++]) < 0)
          return -1;
      }
      if (r < 0) return -1;
    }
  }
  return r;
}

/* TypeProto: which kind of value, and the tensor type when it is one. */
static int parse_type(pstate *s, gc_pb_msg *m, gc_onnx_value_info *vi) {
  gc_pb_field f;
  int r;
  while ((r = gc_pb_next(m, &f)) == 1) {
    gc_pb_msg sub;
    switch (f.num) {
      case 1:
      case 8:
        vi->kind = f.num == 1 ? GC_ONNX_TYPE_TENSOR : GC_ONNX_TYPE_SPARSE;
        if (gc_pb_open(m, &f, "TypeProto.Tensor", &sub) != 0 || parse_tensor_type(s, &sub, vi) < 0)
          return -1;
        break;
      case 4: vi->kind = GC_ONNX_TYPE_SEQUENCE; break;
      case 5: vi->kind = GC_ONNX_TYPE_MAP; break;
      case 9: vi->kind = GC_ONNX_TYPE_OPTIONAL; break;
      case 6: break; /* denotation */
      default: vi->kind = GC_ONNX_TYPE_OTHER; break;
    }
  }
  return r;
}

/* ValueInfoProto: name and type. */
static int parse_value_info(pstate *s, gc_pb_msg *m, gc_onnx_value_info *vi) {
  gc_pb_field f;
  int r;
  vi->name = "";
  while ((r = gc_pb_next(m, &f)) == 1) {
    if (f.num == 1) {
      if (!(vi->name = str_of(s, m, &f))) return -1;
    } else if (f.num == 2) {
      gc_pb_msg sub;
      if (gc_pb_open(m, &f, "TypeProto", &sub) != 0 || parse_type(s, &sub, vi) < 0) return -1;
    }
  }
  return r;
}

/* ---- AttributeProto / NodeProto ------------------------------------------------------------ */

static int parse_attr(pstate *s, gc_pb_msg *m, gc_onnx_attr *a) {
  gc_pb_field f;
  int r;
  float *fl = NULL;
  int64_t *in = NULL;
  size_t nf = 0, cf = 0, ni = 0, ci = 0;
  int seen_f = 0, seen_i = 0, seen_s = 0, seen_t = 0, seen_g = 0, other = 0;
  a->name = "";
  while ((r = gc_pb_next(m, &f)) == 1) {
    int64_t v;
    const uint8_t *p;
    size_t n;
    switch (f.num) {
      case 1: r = (a->name = str_of(s, m, &f)) ? 0 : -1; break;
      case 20: r = gc_pb_int64(m, &f, &v); a->type = (int)v; break;
      case 2: r = gc_pb_float(m, &f, &a->f); seen_f = 1; break;
      case 3: r = gc_pb_int64(m, &f, &a->i); seen_i = 1; break;
      case 4:
        r = gc_pb_bytes(m, &f, &p, &n);
        if (r == 0) {
          a->s = gc_arena_strndup(s->a, (const char *)p, n);
          a->s_len = n;
          if (!a->s) r = -1;
        }
        seen_s = 1;
        break;
      case 5: {
        gc_pb_msg sub;
        a->t = arr_of(s, m, 1, sizeof *a->t);
        r = a->t && gc_pb_open(m, &f, "TensorProto", &sub) == 0 ? parse_tensor(s, &sub, a->t) : -1;
        seen_t = 1;
        break;
      }
      case 6: seen_g = 1; break; /* subgraphs are not decoded: control flow is unsupported */
      case 7: r = gc_pb_append(m, &f, 'f', (void **)&fl, &nf, &cf); break;
      case 8: r = gc_pb_append(m, &f, 'i', (void **)&in, &ni, &ci); break;
      case 9: a->n_strings++; break;
      case 21: r = (a->ref_attr_name = str_of(s, m, &f)) ? 0 : -1; break;
      case 10: case 11: case 22: case 23: case 14: case 15: other = (int)f.num; break;
      default: break;
    }
    if (r < 0) break;
  }
  if (r < 0 || m->err->failed) {
    free(fl);
    free(in);
    return -1;
  }
  if (nf > INT32_MAX || ni > INT32_MAX) {
    free(fl);
    free(in);
    gc_pb_fail(m, NULL, "attribute '%s': too many values", a->name);
    return -1;
  }
  a->n_floats = (int)nf;
  a->n_ints = (int)ni;
  a->floats = to_arena(s, m, fl, nf, sizeof *fl);
  a->ints = to_arena(s, m, in, ni, sizeof *in);
  if (m->err->failed) return -1;
  if (a->type == GC_ONNX_ATTR_UNDEFINED) { /* IR version < 2 files: infer from the fields */
    a->type = seen_f ? GC_ONNX_ATTR_FLOAT : seen_i ? GC_ONNX_ATTR_INT : seen_s ? GC_ONNX_ATTR_STRING
            : seen_t ? GC_ONNX_ATTR_TENSOR : seen_g ? GC_ONNX_ATTR_GRAPH : nf ? GC_ONNX_ATTR_FLOATS
            : ni ? GC_ONNX_ATTR_INTS : a->n_strings ? GC_ONNX_ATTR_STRINGS
            : other == 10 ? GC_ONNX_ATTR_TENSORS : other == 11 ? GC_ONNX_ATTR_GRAPHS
            : GC_ONNX_ATTR_UNDEFINED;
  }
  return 0;
}

/* NodeProto. */
static int parse_node(pstate *s, gc_pb_msg *m, gc_onnx_node *n) {
  gc_pb_field f;
  int n_out = 0, n_attr = 0, r;
  int n_in = count_fields(*m, 1, 2, &n_out);
  if (n_in < 0 || (n_attr = count_fields(*m, 5, 0, NULL)) < 0) return -1;
  n->name = n->op_type = n->domain = "";
  n->inputs = arr_of(s, m, (size_t)n_in, sizeof *n->inputs);
  n->outputs = arr_of(s, m, (size_t)n_out, sizeof *n->outputs);
  n->attrs = arr_of(s, m, (size_t)n_attr, sizeof *n->attrs);
  if (m->err->failed) return -1;
  while ((r = gc_pb_next(m, &f)) == 1) {
    const char *str = NULL;
    switch (f.num) {
      case 1: if (!(str = str_of(s, m, &f))) return -1; n->inputs[n->n_inputs++] = str; break;
      case 2: if (!(str = str_of(s, m, &f))) return -1; n->outputs[n->n_outputs++] = str; break;
      case 3: if (!(n->name = str_of(s, m, &f))) return -1; break;
      case 4: if (!(n->op_type = str_of(s, m, &f))) return -1; break;
      case 7: if (!(n->domain = str_of(s, m, &f))) return -1; break;
      case 5: {
        gc_pb_msg sub;
        if (gc_pb_open(m, &f, "AttributeProto", &sub) != 0 ||
            parse_attr(s, &sub, &n->attrs[n->n_attrs++]) != 0)
          return -1;
        break;
      }
      default: break;
    }
  }
  return r;
}

/* ---- GraphProto / ModelProto ----------------------------------------------------------------- */

static int parse_graph(pstate *s, gc_pb_msg *m, gc_onnx_graph *g) {
  gc_pb_field f;
  int r, cnt[16] = {0};
  {
    gc_pb_msg c = *m;
    while ((r = gc_pb_next(&c, &f)) == 1)
      if (f.num < 16) cnt[f.num]++;
    if (r < 0) return -1;
  }
  g->name = "";
  g->nodes = arr_of(s, m, (size_t)cnt[1], sizeof *g->nodes);
  g->inits = arr_of(s, m, (size_t)cnt[5], sizeof *g->inits);
  g->inputs = arr_of(s, m, (size_t)cnt[11], sizeof *g->inputs);
  g->outputs = arr_of(s, m, (size_t)cnt[12], sizeof *g->outputs);
  g->value_infos = arr_of(s, m, (size_t)cnt[13], sizeof *g->value_infos);
  if (m->err->failed) return -1;
  while ((r = gc_pb_next(m, &f)) == 1) {
    gc_pb_msg sub;
    switch (f.num) {
      case 1:
        if (gc_pb_open(m, &f, "NodeProto", &sub) != 0) return -1;
        g->nodes[g->n_nodes].index = g->n_nodes;
        if (parse_node(s, &sub, &g->nodes[g->n_nodes]) < 0) return -1;
        g->n_nodes++;
        break;
      case 2: if (!(g->name = str_of(s, m, &f))) return -1; break;
      case 5:
        if (gc_pb_open(m, &f, "TensorProto", &sub) != 0 ||
            parse_tensor(s, &sub, &g->inits[g->n_inits++]) < 0)
          return -1;
        break;
      case 15: g->n_sparse_inits++; break;
      case 11: case 12: case 13: {
        gc_onnx_value_info *vi = f.num == 11 ? &g->inputs[g->n_inputs++]
                               : f.num == 12 ? &g->outputs[g->n_outputs++]
                                             : &g->value_infos[g->n_value_infos++];
        if (gc_pb_open(m, &f, "ValueInfoProto", &sub) != 0 || parse_value_info(s, &sub, vi) < 0)
          return -1;
        break;
      }
      default: break;
    }
  }
  return r;
}

/* OperatorSetIdProto. */
static int parse_opset(pstate *s, gc_pb_msg *m, gc_onnx_opset *o) {
  gc_pb_field f;
  int r;
  o->domain = "";
  while ((r = gc_pb_next(m, &f)) == 1) {
    if (f.num == 1 && !(o->domain = str_of(s, m, &f))) return -1;
    if (f.num == 2 && gc_pb_int64(m, &f, &o->version) != 0) return -1;
  }
  return r;
}

/* ModelProto: ir_version, producer, opset imports and the graph. */
static int parse_model(pstate *s, gc_pb_msg *m, gc_onnx_model *model) {
  gc_pb_field f;
  int r;
  int n_ops = count_fields(*m, 8, 25, &model->n_functions);
  if (n_ops < 0) return -1;
  model->opsets = arr_of(s, m, (size_t)n_ops, sizeof *model->opsets);
  if (m->err->failed) return -1;
  model->producer = "";
  while ((r = gc_pb_next(m, &f)) == 1) {
    gc_pb_msg sub;
    switch (f.num) {
      case 1: if (gc_pb_int64(m, &f, &model->ir_version) != 0) return -1; break;
      case 2: if (!(model->producer = str_of(s, m, &f))) return -1; break;
      case 7:
        if (model->has_graph) {
          gc_pb_fail(m, &f, "ModelProto: more than one graph");
          return -1;
        }
        if (gc_pb_open(m, &f, "GraphProto", &sub) != 0 || parse_graph(s, &sub, &model->graph) < 0)
          return -1;
        model->has_graph = 1;
        break;
      case 8:
        if (gc_pb_open(m, &f, "OperatorSetIdProto", &sub) != 0 ||
            parse_opset(s, &sub, &model->opsets[model->n_opsets++]) < 0)
          return -1;
        break;
      default: break;
    }
  }
  return r;
}

/* Turn a protobuf error into a diagnostic with the byte offset. */
static void report_pb(gc_diags *d, const gc_pb_error *e, int oom) {
  gc_error_at(d, oom ? GRAPHC_STATUS_OUT_OF_MEMORY : GRAPHC_STATUS_SYNTAX_ERROR, (gc_loc){0, 0},
              "invalid ONNX protobuf at byte %zu: %s", e->offset, e->msg);
}

/* Parse a model that owns `bytes` (malloc'd, taken over even on failure). */
static gc_onnx_model *parse_owned(void *bytes, size_t len, gc_diags *d) {
  gc_onnx_model *model = calloc(1, sizeof *model);
  if (!model) {
    free(bytes);
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return NULL;
  }
  gc_arena_init(&model->arena);
  model->bytes = bytes;
  model->len = len;
  gc_pb_error e = {0};
  pstate s = {&model->arena, 0};
  gc_pb_msg m = gc_pb_root(bytes, len, "ModelProto", &e);
  if (parse_model(&s, &m, model) < 0 || e.failed) {
    report_pb(d, &e, s.oom);
    gc_onnx_model_free(model);
    return NULL;
  }
  if (!model->has_graph) {
    gc_error_at(d, GRAPHC_STATUS_SYNTAX_ERROR, (gc_loc){0, 0}, "the ONNX model has no graph");
    gc_onnx_model_free(model);
    return NULL;
  }
  return model;
}

/* Parse a copy of bytes as a ModelProto. */
gc_onnx_model *gc_onnx_model_parse(const void *bytes, size_t len, gc_diags *d) {
  void *copy = malloc(len ? len : 1);
  if (!copy) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return NULL;
  }
  if (len) memcpy(copy, bytes, len);
  return parse_owned(copy, len, d);
}

/* Read and parse a .onnx file. */
gc_onnx_model *gc_onnx_model_load(const char *path, gc_diags *d) {
  size_t len;
  void *bytes = gc_read_file(path, &len, d);
  return bytes ? parse_owned(bytes, len, d) : NULL;
}

/* Free the model, its arena and its bytes. */
void gc_onnx_model_free(gc_onnx_model *m) {
  if (!m) return;
  gc_arena_free(&m->arena);
  free(m->bytes);
  free(m);
}

/* Imported opset of a domain ("" and "ai.onnx" alike), 0 when absent. */
int64_t gc_onnx_opset_version(const gc_onnx_model *m, const char *domain) {
  int main = !domain[0] || strcmp(domain, "ai.onnx") == 0;
  for (int i = 0; i < m->n_opsets; i++) {
    const char *dd = m->opsets[i].domain;
    int dmain = !dd[0] || strcmp(dd, "ai.onnx") == 0;
    if (main ? dmain : strcmp(dd, domain) == 0) return m->opsets[i].version;
  }
  return 0;
}

int gc_onnx_tensor_parse(const void *bytes, size_t len, gc_arena *arena, gc_onnx_tensor *out,
                         gc_diags *d) {
  gc_pb_error e = {0};
  pstate s = {arena, 0};
  gc_pb_msg m = gc_pb_root(bytes, len, "TensorProto", &e);
  if (parse_tensor(&s, &m, out) < 0 || e.failed) {
    report_pb(d, &e, s.oom);
    return -1;
  }
  return 0;
}
