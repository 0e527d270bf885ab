/* test_onnx.c - the protobuf reader and the ONNX importer.
 *
 * Models are built in the test with a tiny protobuf encoder (pb_*), so every
 * case states exactly which bytes the reader sees. Covered: varints, packed and
 * unpacked repeated fields, malformed input (truncated varints, lengths past
 * the end, bad wire types, every truncation of a valid model, deep nesting),
 * initializers (raw, typed, external with path checks), the mapping of common
 * ops checked by running the imported graph against values computed here,
 * constant folding of shape arithmetic, one error listing every unsupported
 * op, and, when the `onnx` Python package is present, ~30 ONNX node tests
 * through `graphc run-onnx-test`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "frontend/protobuf.h"
#include "graphc/graphc.h"
#include "testutil.h"

/* ---- a tiny protobuf encoder -------------------------------------------------------------- */

typedef struct pb {
  uint8_t *p;
  size_t n, cap;
} pb;

/* Append raw bytes. */
static void pb_raw(pb *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    ck_assert_ptr_nonnull(b->p);
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}

/* Append a base-128 varint. */
static void pb_varint(pb *b, uint64_t v) {
  do {
    uint8_t c = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) c |= 0x80;
    pb_raw(b, &c, 1);
  } while (v);
}

static void pb_key(pb *b, int f, int wire) { pb_varint(b, (uint64_t)f << 3 | (uint64_t)wire); }
static void pb_int(pb *b, int f, int64_t v) { pb_key(b, f, 0), pb_varint(b, (uint64_t)v); }

/* Length-delimited field f. */
static void pb_bytes(pb *b, int f, const void *d, size_t n) {
  pb_key(b, f, 2);
  pb_varint(b, n);
  pb_raw(b, d, n);
}

static void pb_str(pb *b, int f, const char *s) { pb_bytes(b, f, s, strlen(s)); }

/* Embed sub as field f and free it. */
static void pb_msg(pb *b, int f, pb *sub) {
  pb_bytes(b, f, sub->p, sub->n);
  free(sub->p);
  memset(sub, 0, sizeof *sub);
}

/* fixed32 float field f. */
static void pb_f32(pb *b, int f, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  pb_key(b, f, 5);
  for (int i = 0; i < 4; i++) {
    uint8_t c = (uint8_t)(u >> (8 * i));
    pb_raw(b, &c, 1);
  }
}

/* TensorProto of floats: raw_data (raw=1) or packed float_data. */
static pb tensor_f32(const char *name, int rank, const int64_t *dims, const float *v, int raw) {
  pb t = {0};
  int64_t n = 1;
  for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]), n *= dims[i];
  pb_int(&t, 2, 1);
  pb_str(&t, 8, name);
  if (raw) {
    pb_bytes(&t, 9, v, (size_t)n * 4);
  } else {
    pb_key(&t, 4, 2);
    pb_varint(&t, (uint64_t)n * 4);
    pb_raw(&t, v, (size_t)n * 4);
  }
  return t;
}

/* TensorProto of int64s in unpacked int64_data fields. */
static pb tensor_i64(const char *name, int rank, const int64_t *dims, const int64_t *v) {
  pb t = {0};
  int64_t n = 1;
  for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]), n *= dims[i];
  pb_int(&t, 2, 7);
  pb_str(&t, 8, name);
  for (int64_t i = 0; i < n; i++) pb_int(&t, 7, v[i]);
  return t;
}

/* ValueInfoProto of a tensor; a dim -1 is written as dim_param "N", -2 as "S". */
static pb value_info(const char *name, int elem, int rank, const int64_t *dims) {
  pb shape = {0}, tt = {0}, ty = {0}, vi = {0};
  for (int i = 0; i < rank; i++) {
    pb d = {0};
    if (dims[i] >= 0) pb_int(&d, 1, dims[i]);
    else pb_str(&d, 2, dims[i] == -2 ? "S" : "N");
    pb_msg(&shape, 1, &d);
  }
  pb_int(&tt, 1, elem);
  pb_msg(&tt, 2, &shape);
  pb_msg(&ty, 1, &tt);
  pb_str(&vi, 1, name);
  pb_msg(&vi, 2, &ty);
  return vi;
}

/* AttributeProto INT. */
static pb attr_int(const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 2);
  pb_int(&a, 3, v);
  return a;
}

/* AttributeProto FLOAT. */
static pb attr_float(const char *name, float v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 1);
  pb_f32(&a, 2, v);
  return a;
}

/* AttributeProto INTS (unpacked). */
static pb attr_ints(const char *name, int n, const int64_t *v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 7);
  for (int i = 0; i < n; i++) pb_int(&a, 8, v[i]); /* unpacked */
  return a;
}

/* AttributeProto TENSOR (takes t). */
static pb attr_tensor(const char *name, pb *t) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 4);
  pb_msg(&a, 5, t);
  return a;
}

/* NodeProto: inputs and outputs are comma-separated ("" entries allowed). */
static pb node(const char *op, const char *name, const char *ins, const char *outs, pb *attrs,
               int n_attrs, const char *domain) {
  pb n = {0};
  char buf[256];
  for (int k = 0; k < 2; k++) {
    snprintf(buf, sizeof buf, "%s", k ? outs : ins);
    char *s = buf;
    while (s && *s) {
      char *c = strchr(s, ',');
      if (c) *c = 0;
      pb_str(&n, k ? 2 : 1, s);
      s = c ? c + 1 : NULL;
    }
  }
  if (name) pb_str(&n, 3, name);
  pb_str(&n, 4, op);
  if (domain) pb_str(&n, 7, domain);
  for (int i = 0; i < n_attrs; i++) pb_msg(&n, 5, &attrs[i]);
  return n;
}

/* ModelProto around a finished graph, importing ai.onnx at `opset`. */
static pb model(pb *graph, int opset) {
  pb m = {0}, os = {0};
  pb_int(&m, 1, 8);
  pb_str(&m, 2, "test_onnx");
  pb_str(&os, 1, "");
  pb_int(&os, 2, opset);
  pb_msg(&m, 8, &os);
  pb_msg(&m, 7, graph);
  return m;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

/* A fresh seed per run (time and pid), printed on failure. */
static uint64_t fresh_seed(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 32);
}

/* Uniform in [-1, 1), never all zero over a few draws. */
static float rnd(uint64_t *s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return (float)((double)((*s * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0 * 2 - 1);
}

/* Import model bytes in memory; returns 0/-1 with d filled. */
static int import_mem(const pb *m, gc_onnx_result *r, gc_diags *d, const char *dir) {
  gc_diags_init(d, "m.onnx", NULL, 0);
  gc_onnx_model *om = gc_onnx_model_parse(m->p, m->n, d);
  if (!om) return -1;
  gc_onnx_options o = {.model_dir = dir, .weights_ref = "m.safetensors"};
  int rc = gc_onnx_import(om, "m.onnx", &o, r, d);
  gc_onnx_model_free(om);
  return rc;
}

/* First error message of d ("" when none). */
static const char *first_error(const gc_diags *d) {
  for (int i = 0; i < d->n; i++)
    if (d->items[i].level == GC_DIAG_ERROR) return d->items[i].msg;
  return "";
}

/* Parse bytes as a model and expect one SYNTAX_ERROR containing msg. */
static void expect_parse_error(const void *bytes, size_t n, const char *msg) {
  gc_diags d;
  gc_diags_init(&d, "bad.onnx", NULL, 0);
  gc_onnx_model *m = gc_onnx_model_parse(bytes, n, &d);
  ck_assert_ptr_null(m);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_SYNTAX_ERROR);
  ck_assert_msg(strstr(first_error(&d), msg), "expected '%s' in '%s'", msg, first_error(&d));
  gc_diags_free(&d);
}

/* Path of name in this process's temporary folder (static ring). */
static const char *tmp_path(const char *name) {
  static char ring[8][1024];
  static int k;
  char *b = ring[k++ & 7];
  snprintf(b, sizeof ring[0], "%s/%s", tu_tmpdir(), name);
  return b;
}

/* Write a whole file. */
static void write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(p, 1, n, f), n);
  fclose(f);
}

/* ---- protobuf reader ------------------------------------------------------------------------ */

START_TEST(varints) {
  struct { const char *bytes; int n; int ok; uint64_t v; } cases[] = {
      {"\x00", 1, 1, 0},
      {"\x7f", 1, 1, 127},
      {"\x80\x01", 2, 1, 128},
      {"\xac\x02", 2, 1, 300},
      {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10, 1, UINT64_MAX},
      {"\x80", 1, 0, 0},                                          /* truncated */
      {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10, 0, 0},     /* more than 64 bits */
      {"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11, 0, 0}, /* 11 bytes */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const uint8_t *p = (const uint8_t *)cases[i].bytes;
    uint64_t v = 12345;
    int rc = gc_pb_varint(&p, p + cases[i].n, &v);
    ck_assert_msg(rc == (cases[i].ok ? 0 : -1), "case %zu", i);
    if (cases[i].ok) {
      ck_assert_uint_eq(v, cases[i].v);
      ck_assert_ptr_eq(p, (const uint8_t *)cases[i].bytes + cases[i].n);
    }
  }
}
END_TEST

START_TEST(packed_and_unpacked) {
  pb b = {0};
  /* field 1 ints: unpacked 5, packed [1, 300, -1], unpacked 7 */
  pb_int(&b, 1, 5);
  pb p = {0};
  pb_varint(&p, 1), pb_varint(&p, 300), pb_varint(&p, (uint64_t)-1);
  pb_msg(&b, 1, &p);
  pb_int(&b, 1, 7);
  /* field 2 floats: packed [1.5, -2], unpacked 3.25 */
  pb q = {0};
  float fl[2] = {1.5f, -2.0f};
  pb_raw(&q, fl, 8);
  pb_msg(&b, 2, &q);
  pb_f32(&b, 2, 3.25f);
  /* field 3 sint64 zigzag: -3 is 5 */
  pb_int(&b, 3, 5);
  gc_pb_error e = {0};
  gc_pb_msg m = gc_pb_root(b.p, b.n, "Test", &e);
  gc_pb_field f;
  int64_t *iv = NULL, *zv = NULL;
  float *fv = NULL;
  size_t ni = 0, ci = 0, nf = 0, cf = 0, nz = 0, cz = 0;
  int r;
  while ((r = gc_pb_next(&m, &f)) == 1) {
    if (f.num == 1) ck_assert_int_eq(gc_pb_append(&m, &f, 'i', (void **)&iv, &ni, &ci), 0);
    if (f.num == 2) ck_assert_int_eq(gc_pb_append(&m, &f, 'f', (void **)&fv, &nf, &cf), 0);
    if (f.num == 3) ck_assert_int_eq(gc_pb_append(&m, &f, 'z', (void **)&zv, &nz, &cz), 0);
  }
  ck_assert_int_eq(r, 0);
  ck_assert_uint_eq(ni, 5);
  int64_t want[5] = {5, 1, 300, -1, 7};
  for (int i = 0; i < 5; i++) ck_assert_int_eq(iv[i], want[i]);
  ck_assert_uint_eq(nf, 3);
  ck_assert(fv[0] == 1.5f && fv[1] == -2.0f && fv[2] == 3.25f);
  ck_assert_uint_eq(nz, 1);
  ck_assert_int_eq(zv[0], -3);
  /* a packed float array whose length is not a multiple of 4 */
  pb bad = {0};
  pb_bytes(&bad, 2, "\x00\x00\x80", 3);
  gc_pb_error e2 = {0};
  gc_pb_msg m2 = gc_pb_root(bad.p, bad.n, "Test", &e2);
  ck_assert_int_eq(gc_pb_next(&m2, &f), 1);
  ck_assert_int_eq(gc_pb_append(&m2, &f, 'f', (void **)&fv, &nf, &cf), -1);
  ck_assert_ptr_nonnull(strstr(e2.msg, "not a multiple of 4"));
  free(iv), free(fv), free(zv), free(b.p), free(bad.p);
}
END_TEST

START_TEST(malformed_bytes) {
  expect_parse_error("\x08\x80", 2, "truncated or overlong varint");          /* ir_version */
  expect_parse_error("\x3a\x10\x01", 3, "runs past the end");                 /* graph, len 16 */
  expect_parse_error("\x0f", 1, "bad wire type 7");
  expect_parse_error("\x0b\x00", 2, "bad wire type 3");                       /* groups */
  expect_parse_error("\x3d\x00\x00", 3, "truncated fixed32");
  expect_parse_error("\x00\x01", 2, "invalid field number 0");
  expect_parse_error("\x08", 1, "truncated or overlong varint");
  expect_parse_error("\x3a\x02\x0a\x05", 4, "runs past the end");             /* node inside graph */
  expect_parse_error("\x3a\x02\x08\x01", 4, "expected a NodeProto message");  /* node as a varint */
  expect_parse_error("", 0, "the ONNX model has no graph");
}
END_TEST

/* Nested messages: opening past GC_PB_MAX_DEPTH fails. */
START_TEST(depth_limit) {
  pb inner = {0};
  pb_int(&inner, 1, 1);
  for (int i = 0; i < GC_PB_MAX_DEPTH + 5; i++) {
    pb outer = {0};
    pb_msg(&outer, 2, &inner);
    inner = outer;
  }
  gc_pb_error e = {0};
  gc_pb_msg m = gc_pb_root(inner.p, inner.n, "Deep", &e);
  int depth = 0;
  gc_pb_field f;
  while (gc_pb_next(&m, &f) == 1 && f.num == 2) {
    gc_pb_msg sub;
    if (gc_pb_open(&m, &f, "Deep", &sub) != 0) break;
    m = sub;
    depth++;
  }
  ck_assert_int_eq(depth, GC_PB_MAX_DEPTH);
  ck_assert(e.failed);
  ck_assert_ptr_nonnull(strstr(e.msg, "nested deeper than"));
  free(inner.p);
}
END_TEST

/* ---- importer ------------------------------------------------------------------------------- */

/* x [N, 3] -> relu(x @ W + B) -> Softmax; W raw_data, B float_data; N symbolic. */
static pb mlp_model(const float *w, const float *bias) {
  pb g = {0}, t;
  pb a[1];
  int64_t xd[2] = {-1, 3}, wd[2] = {3, 4}, bd[1] = {4}, yd[2] = {-1, 4};
  pb n1 = node("MatMul", "mm", "x,W", "h", NULL, 0, NULL);
  pb n2 = node("Add", "bias", "h,B", "hb", NULL, 0, NULL);
  pb n3 = node("Relu", NULL, "hb", "r", NULL, 0, NULL);
  a[0] = attr_int("axis", -1);
  pb n4 = node("Softmax", "sm", "r", "y", a, 1, NULL);
  pb_msg(&g, 1, &n1), pb_msg(&g, 1, &n2), pb_msg(&g, 1, &n3), pb_msg(&g, 1, &n4);
  pb_str(&g, 2, "mlp");
  t = tensor_f32("W", 2, wd, w, 1);
  pb_msg(&g, 5, &t);
  t = tensor_f32("B", 1, bd, bias, 0);
  pb_msg(&g, 5, &t);
  pb vi = value_info("x", 1, 2, xd);
  pb_msg(&g, 11, &vi);
  vi = value_info("y", 1, 2, yd);
  pb_msg(&g, 12, &vi);
  return model(&g, 17);
}

/* The imported MLP: text, weights, and values when run with the interpreter. */
START_TEST(import_and_run_mlp) {
  uint64_t seed = fresh_seed(), s = seed;
  float w[12], bias[4], x[6];
  for (int i = 0; i < 12; i++) w[i] = rnd(&s);
  for (int i = 0; i < 4; i++) bias[i] = rnd(&s);
  for (int i = 0; i < 6; i++) x[i] = rnd(&s) * 3;
  pb m = mlp_model(w, bias);
  write_bytes(tmp_path("mlp.onnx"), m.p, m.n);
  gc_diags d;
  gc_diags_init(&d, "mlp.onnx", NULL, 0);
  int rc = gc_onnx_import_file(tmp_path("mlp.onnx"), tmp_path("mlp.graph"),
                               tmp_path("w/mlp.safetensors"), NULL, &d);
  ck_assert_int_eq(rc, -1); /* the weights folder does not exist yet */
  gc_diags_free(&d);
  mkdir(tmp_path("w"), 0755);
  gc_diags_init(&d, "mlp.onnx", NULL, 0);
  rc = gc_onnx_import_file(tmp_path("mlp.onnx"), tmp_path("mlp.graph"),
                           tmp_path("w/mlp.safetensors"), NULL, &d);
  ck_assert_msg(rc == 0, "%s", first_error(&d));
  gc_diags_free(&d);
  char *text = tu_read_file(tmp_path("mlp.graph"), NULL);
  ck_assert_ptr_nonnull(text);
  const char *want[] = {"weights \"w/mlp.safetensors\";", "graph @mlp<N>(%x: f32[N, 3]) -> (f32[N, 4])",
                        "param %W: f32[3, 4] = \"W\";", "param %B: f32[4] = \"B\";",
                        "%h = matmul(%x, %W) : f32[N, 4];", "%r = relu(%hb) : f32[N, 4];",
                        "%y = softmax(%r, axis=1) : f32[N, 4];", "return %y;"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    ck_assert_msg(strstr(text, want[i]), "missing '%s' in:\n%s", want[i], text);
  free(text);

  graphc_context_t *ctx;
  graphc_model_t *gm;
  graphc_executable_t *exe;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_load_file(ctx, tmp_path("mlp.graph"), &gm, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(gm, "N", 2, &err), GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  ck_assert_msg(graphc_compile(gm, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  float y[8];
  graphc_tensor_t in = {GRAPHC_DTYPE_F32, 2, {2, 3}, x, sizeof x};
  graphc_tensor_t out = {GRAPHC_DTYPE_F32, 2, {2, 4}, y, sizeof y};
  ck_assert_msg(graphc_executable_run(exe, &in, 1, &out, 1, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  for (int r = 0; r < 2; r++) {
    double h[4], mx = -INFINITY, sum = 0;
    for (int j = 0; j < 4; j++) {
      h[j] = bias[j];
      for (int k = 0; k < 3; k++) h[j] += (double)x[r * 3 + k] * w[k * 4 + j];
      h[j] = h[j] > 0 ? h[j] : 0;
      mx = fmax(mx, h[j]);
    }
    for (int j = 0; j < 4; j++) sum += exp(h[j] - mx);
    for (int j = 0; j < 4; j++)
      ck_assert_msg(fabs(y[r * 4 + j] - exp(h[j] - mx) / sum) < 1e-5, "seed %llu: y[%d][%d] = %g",
                    (unsigned long long)seed, r, j, y[r * 4 + j]);
  }
  graphc_executable_destroy(exe);
  graphc_model_destroy(gm);
  graphc_context_destroy(ctx);
  free(m.p);
}
END_TEST

/* Every truncation of a valid model fails cleanly (or parses); never crashes. */
START_TEST(every_truncation) {
  float w[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, b[4] = {1, 2, 3, 4};
  pb m = mlp_model(w, b);
  int failures = 0;
  for (size_t n = 0; n < m.n; n++) {
    gc_diags d;
    gc_diags_init(&d, "t.onnx", NULL, 0);
    gc_onnx_model *om = gc_onnx_model_parse(m.p, n, &d);
    if (!om) {
      failures++;
      ck_assert_int_eq(d.n_errors, 1);
      const char *msg = first_error(&d);
      ck_assert_msg(strstr(msg, "invalid ONNX protobuf at byte") || strstr(msg, "has no graph"),
                    "prefix %zu: '%s'", n, msg);
    }
    gc_onnx_model_free(om);
    gc_diags_free(&d);
  }
  ck_assert_int_gt(failures, (int)m.n / 2);
  free(m.p);
}
END_TEST

/* Unsupported ops of every kind are listed in one error. */
START_TEST(unsupported_listed_together) {
  pb g = {0};
  int64_t d2[2] = {2, 2};
  pb n1 = node("Relu", "ok", "x", "a", NULL, 0, NULL);
  pb n2 = node("FancyOp", "fancy", "a", "b", NULL, 0, NULL);
  pb n3 = node("Thing", "custom", "b", "c", NULL, 0, "com.example");
  pb n4 = node("LSTM", NULL, "c", "y", NULL, 0, NULL);
  pb_msg(&g, 1, &n1), pb_msg(&g, 1, &n2), pb_msg(&g, 1, &n3), pb_msg(&g, 1, &n4);
  pb vi = value_info("x", 1, 2, d2);
  pb_msg(&g, 11, &vi);
  vi = value_info("y", 1, 2, d2);
  pb_msg(&g, 12, &vi);
  pb m = model(&g, 13);
  gc_onnx_result r;
  gc_diags d;
  ck_assert_int_eq(import_mem(&m, &r, &d, NULL), -1);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_UNSUPPORTED);
  const char *msg = first_error(&d);
  const char *want[] = {"3 unsupported ONNX nodes", "node 'fancy' #1: FancyOp (domain 'ai.onnx', opset 13)",
                        "node 'custom' #2: Thing (domain 'com.example', opset 0)", "#3: LSTM"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    ck_assert_msg(strstr(msg, want[i]), "missing '%s' in '%s'", want[i], msg);
  ck_assert_ptr_null(strstr(msg, "Relu"));
  gc_diags_free(&d);
  free(m.p);
}
END_TEST

/* A Reshape whose shape is a graph input: the error names the node and input. */
START_TEST(dynamic_shape_input) {
  pb g = {0};
  int64_t d2[2] = {2, 3}, d1[1] = {2}, d3[2] = {3, 2};
  pb n1 = node("Reshape", "rs", "x,shape", "y", NULL, 0, NULL);
  pb_msg(&g, 1, &n1);
  pb vi = value_info("x", 1, 2, d2);
  pb_msg(&g, 11, &vi);
  vi = value_info("shape", 7, 1, d1);
  pb_msg(&g, 11, &vi);
  vi = value_info("y", 1, 2, d3);
  pb_msg(&g, 12, &vi);
  pb m = model(&g, 14);
  gc_onnx_result r;
  gc_diags d;
  ck_assert_int_eq(import_mem(&m, &r, &d, NULL), -1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_UNSUPPORTED);
  ck_assert_msg(strstr(first_error(&d), "node 'rs' (#0, Reshape): input 1 'shape' (shape) must be a constant"),
                "%s", first_error(&d));
  gc_diags_free(&d);
  free(m.p);
}
END_TEST

/* A TensorProto with dims and a dtype but no data at all. */
static pb tensor_empty(const char *name, int elem, int rank, const int64_t *dims) {
  pb t = {0};
  for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]);
  pb_int(&t, 2, elem);
  pb_str(&t, 8, name);
  return t;
}

/* Append an attribute-less node of op type `op` to graph g. */
static void add_node(pb *g, const char *op, const char *ins, const char *outs) {
  pb n = node(op, NULL, ins, outs, NULL, 0, NULL);
  pb_msg(g, 1, &n);
}

/* Graph input "x" and output "y", both of element type elem and these dims. */
static void add_xy(pb *g, int elem, int rank, const int64_t *dims) {
  pb vi = value_info("x", elem, rank, dims);
  pb_msg(g, 11, &vi);
  vi = value_info("y", elem, rank, dims);
  pb_msg(g, 12, &vi);
}

/* The Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain torch writes, on
 * x: f32[N, S, 4] and m: f32[N, S]:
 *   y = 2 * reshape(reshape(x, [N*S, 4]) @ W, [N, S, 3]) + m[..., None] + range(S)[:, None] / S
 *       + P[0, :S][:, None]
 * with the 2 from ConstantOfShape(Where(Equal([N, S, 1], -1), 1, [N, S, 1])), the N*S
 * from Mul of two gathered dims, and P a [1, 16] i64 table sliced to a symbolic end. */
static pb dyn_model(const float *w) {
  pb g = {0}, t, a[1];
  int64_t wd[2] = {4, 3}, one = 1, zero = 0, four = 4, three = 3, neg1 = -1;
  int64_t xd[3] = {-1, -2, 4}, md[2] = {-1, -2}, yd[3] = {-1, -2, 3};
  t = tensor_f32("W", 2, wd, w, 1), pb_msg(&g, 5, &t);
  t = tensor_i64("i0", 0, NULL, &zero), pb_msg(&g, 5, &t);
  t = tensor_i64("i1", 0, NULL, &one), pb_msg(&g, 5, &t);
  t = tensor_i64("ax0", 1, &one, &zero), pb_msg(&g, 5, &t);
  t = tensor_i64("ax_1", 1, &one, &neg1), pb_msg(&g, 5, &t);
  t = tensor_i64("c4", 1, &one, &four), pb_msg(&g, 5, &t);
  t = tensor_i64("c3", 1, &one, &three), pb_msg(&g, 5, &t);
  t = tensor_i64("c1", 1, &one, &one), pb_msg(&g, 5, &t);
  t = tensor_i64("z", 0, NULL, &zero), pb_msg(&g, 5, &t);
  t = tensor_i64("o", 0, NULL, &one), pb_msg(&g, 5, &t);
  int64_t three1 = 3, negs[3] = {-1, -1, -1}, ones3[3] = {1, 1, 1}, pd[2] = {1, 16}, p[16];
  for (int i = 0; i < 16; i++) p[i] = 100 * i + 7;
  t = tensor_i64("negs", 1, &three1, negs), pb_msg(&g, 5, &t);
  t = tensor_i64("ones3", 1, &three1, ones3), pb_msg(&g, 5, &t);
  t = tensor_i64("P", 2, pd, p), pb_msg(&g, 5, &t);
  t = tensor_i64("i1v", 1, &one, &one), pb_msg(&g, 5, &t);
  add_node(&g, "Shape", "x", "sh");
  add_node(&g, "Gather", "sh,i0", "n");
  add_node(&g, "Gather", "sh,i1", "s");
  add_node(&g, "Unsqueeze", "n,ax0", "nu");
  add_node(&g, "Unsqueeze", "s,ax0", "su");
  add_node(&g, "Mul", "nu,su", "ns");
  a[0] = attr_int("axis", 0);
  pb n = node("Concat", NULL, "ns,c4", "t1", a, 1, NULL);
  pb_msg(&g, 1, &n);
  add_node(&g, "Reshape", "x,t1", "x2");
  add_node(&g, "MatMul", "x2,W", "h");
  a[0] = attr_int("axis", 0);
  n = node("Concat", NULL, "nu,su,c3", "t2", a, 1, NULL);
  pb_msg(&g, 1, &n);
  add_node(&g, "Reshape", "h,t2", "h3");
  a[0] = attr_int("axis", 0);
  n = node("Concat", NULL, "nu,su,c1", "t3", a, 1, NULL);
  pb_msg(&g, 1, &n);
  int64_t d1 = 1;
  float two = 2;
  pb vt = tensor_f32("v", 1, &d1, &two, 1);
  a[0] = attr_tensor("value", &vt);
  add_node(&g, "Equal", "t3,negs", "eq"); /* torch's Expand idiom: -1 entries become 1 */
  add_node(&g, "Where", "eq,ones3,t3", "t4");
  n = node("ConstantOfShape", NULL, "t4", "twos", a, 1, NULL);
  pb_msg(&g, 1, &n);
  add_node(&g, "Mul", "h3,twos", "h4");
  add_node(&g, "Unsqueeze", "m,ax_1", "m3");
  add_node(&g, "Add", "h4,m3", "h5");
  add_node(&g, "Range", "z,s,o", "r");
  a[0] = attr_int("to", 1);
  n = node("Cast", NULL, "r", "rf", a, 1, NULL);
  pb_msg(&g, 1, &n);
  a[0] = attr_int("to", 1);
  n = node("Cast", NULL, "s", "sf", a, 1, NULL);
  pb_msg(&g, 1, &n);
  add_node(&g, "Div", "rf,sf", "rs");
  add_node(&g, "Unsqueeze", "rs,ax_1", "r2");
  add_node(&g, "Add", "h5,r2", "h6");
  add_node(&g, "Slice", "P,ax0,su,i1v", "pos"); /* P[:, 0:S] of a 16-long table */
  a[0] = attr_int("to", 1);
  n = node("Cast", NULL, "pos", "posf", a, 1, NULL);
  pb_msg(&g, 1, &n);
  add_node(&g, "Unsqueeze", "posf,ax_1", "pos3");
  add_node(&g, "Add", "h6,pos3", "y");
  pb_str(&g, 2, "dyn");
  pb vi = value_info("x", 1, 3, xd);
  pb_msg(&g, 11, &vi);
  vi = value_info("m", 1, 2, md);
  pb_msg(&g, 11, &vi);
  vi = value_info("y", 1, 3, yd);
  pb_msg(&g, 12, &vi);
  return model(&g, 17);
}

/* dyn_model imports with symbols N and S (N*S one derived symbol), binds them from
 * the inputs' shapes and runs at two shapes on interp and cpu against values
 * computed here; inputs that disagree on N are refused. */
START_TEST(dynamic_shapes) {
  uint64_t seed = fresh_seed(), st = seed;
  float w[12];
  for (int i = 0; i < 12; i++) w[i] = rnd(&st);
  pb m = dyn_model(w);
  write_bytes(tmp_path("dyn.onnx"), m.p, m.n);
  free(m.p);
  gc_diags d;
  gc_diags_init(&d, "dyn.onnx", NULL, 0);
  int rc = gc_onnx_import_file(tmp_path("dyn.onnx"), tmp_path("dyn.graph"), tmp_path("dyn.safetensors"),
                               NULL, &d);
  ck_assert_msg(rc == 0, "%s", first_error(&d));
  gc_diags_free(&d);
  char *text = tu_read_file(tmp_path("dyn.graph"), NULL);
  ck_assert_ptr_nonnull(text);
  const char *want[] = {"graph @dyn<N, S: 1..16, _s2 = N * S>(%x: f32[N, S, 4], %m: f32[N, S]) -> (f32[N, S, 3])",
                        "slice(%P, start=[0, 0], end=[1, S], step=[1, 1]) : i64[1, S]",
                        "reshape(%x, shape=[_s2, 4])", "iota(shape=[S], axis=0, dtype=i64)"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    ck_assert_msg(strstr(text, want[i]), "missing '%s' in:\n%s", want[i], text);
  free(text);
  graphc_context_t *ctx;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  static const int64_t shapes[2][2] = {{2, 5}, {3, 4}};
  for (int backend = 0; backend < 2; backend++)
    for (int sh = 0; sh < 2; sh++) {
      int64_t N = shapes[sh][0], S = shapes[sh][1];
      float *x = malloc((size_t)(N * S * 4) * sizeof *x), *mk = malloc((size_t)(N * S) * sizeof *mk);
      float *y = malloc((size_t)(N * S * 3) * sizeof *y);
      for (int64_t i = 0; i < N * S * 4; i++) x[i] = rnd(&st);
      for (int64_t i = 0; i < N * S; i++) mk[i] = rnd(&st);
      graphc_tensor_t in[2] = {{GRAPHC_DTYPE_F32, 3, {N, S, 4}, x, (size_t)(N * S * 4) * 4},
                               {GRAPHC_DTYPE_F32, 2, {N, S}, mk, (size_t)(N * S) * 4}};
      graphc_tensor_t out = {GRAPHC_DTYPE_F32, 3, {N, S, 3}, y, (size_t)(N * S * 3) * 4};
      const char *names[2] = {"x", "m"};
      graphc_model_t *gm;
      ck_assert_int_eq(graphc_model_load_file(ctx, tmp_path("dyn.graph"), &gm, &err), GRAPHC_STATUS_OK);
      if (sh == 1) { /* inputs that disagree on N: refused, naming both */
        graphc_tensor_t bad = in[1];
        bad.dims[0] = N + 1;
        graphc_tensor_t both[2] = {in[0], bad};
        ck_assert_int_eq(graphc_model_bind_inputs(gm, 2, names, both, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
        ck_assert_str_eq(err.message, "inputs disagree on symbolic dim N: %x (dim 0 = 3) and %m (dim 0 = 4)");
      }
      ck_assert_msg(graphc_model_bind_inputs(gm, 2, names, in, &err) == GRAPHC_STATUS_OK, "%s", err.message);
      graphc_compile_options_t o;
      graphc_compile_options_init(&o);
      o.backend = backend ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP;
      graphc_executable_t *exe;
      ck_assert_msg(graphc_compile(gm, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
      ck_assert_msg(graphc_executable_run(exe, in, 2, &out, 1, &err) == GRAPHC_STATUS_OK, "%s", err.message);
      for (int64_t i = 0; i < N * S; i++)
        for (int j = 0; j < 3; j++) {
          double h = 0;
          for (int k = 0; k < 4; k++) h += (double)x[i * 4 + k] * w[k * 3 + j];
          double want_y = 2 * h + mk[i] + (double)(i % S) / (double)S + (double)(100 * (i % S) + 7);
          ck_assert_msg(fabs(y[i * 3 + j] - want_y) < 1e-5 * (1 + fabs(want_y)), "seed %llu backend %d N=%lld S=%lld: y[%lld][%d] = %g, want %g",
                        (unsigned long long)seed, backend, (long long)N, (long long)S, (long long)i, j,
                        y[i * 3 + j], want_y);
        }
      graphc_executable_destroy(exe);
      graphc_model_destroy(gm);
      free(x), free(mk), free(y);
    }
  graphc_context_destroy(ctx);
}
END_TEST

/* Sizes that do not fit (F20 in docs/reliability.md): each is refused with a
 * status and a message, before any allocation of that size and without an
 * overflow (the ASan + UBSan suite runs this too). */
START_TEST(sizes_that_do_not_fit) {
  static const struct {
    const char *what;
    graphc_status_t status;
    const char *msg;
  } k_cases[] = {
      {"graph input of 2^31 x 2^31 x 4 elements", GRAPHC_STATUS_INVALID_ARGUMENT, "more than 2^62 elements"},
      {"initializer with a negative dim", GRAPHC_STATUS_SYNTAX_ERROR, "tensor 'W': negative dim -1"},
      {"initializer of 2^30 x 2^30 elements without data", GRAPHC_STATUS_UNSUPPORTED,
       "tensor 'W' (1073741824 x 1073741824) has more than 2^40 elements"},
      {"Range over the whole int64 line", GRAPHC_STATUS_UNSUPPORTED, "a range of more than 2^24 elements"},
      {"Range starting at NaN", GRAPHC_STATUS_INVALID_ARGUMENT, "the range's length is not a number"},
      {"ConstantOfShape of 2^40 x 2^40", GRAPHC_STATUS_UNSUPPORTED,
       "element count of f32[1099511627776, 1099511627776] overflows 2^62"},
  };
  for (int c = 0; c < (int)(sizeof k_cases / sizeof *k_cases); c++) {
    pb g = {0}, t;
    int64_t big[3] = {INT64_C(1) << 31, INT64_C(1) << 31, 4}, neg[2] = {-1, 2};
    int64_t sq[2] = {INT64_C(1) << 30, INT64_C(1) << 30};
    int64_t d2[2] = {2, 2}, one[1] = {1};
    switch (c) {
      case 0:
        add_node(&g, "Relu", "x", "y");
        add_xy(&g, 1, 3, big);
        break;
      case 1:
      case 2:
        add_node(&g, "Add", "x,W", "y");
        t = tensor_empty("W", 1, 2, c == 1 ? neg : sq);
        pb_msg(&g, 5, &t);
        add_xy(&g, 1, 2, d2);
        break;
      case 3:
      case 4:
        if (c == 3) {
          int64_t lo = INT64_MIN, hi = INT64_MAX, step = 1;
          t = tensor_i64("s", 0, NULL, &lo), pb_msg(&g, 5, &t);
          t = tensor_i64("l", 0, NULL, &hi), pb_msg(&g, 5, &t);
          t = tensor_i64("d", 0, NULL, &step), pb_msg(&g, 5, &t);
        } else {
          float lo = NAN, hi = 4, step = 1;
          t = tensor_f32("s", 0, NULL, &lo, 1), pb_msg(&g, 5, &t);
          t = tensor_f32("l", 0, NULL, &hi, 1), pb_msg(&g, 5, &t);
          t = tensor_f32("d", 0, NULL, &step, 1), pb_msg(&g, 5, &t);
        }
        add_node(&g, "Range", "s,l,d", "r");
        add_node(&g, "Add", "x,r", "y");
        add_xy(&g, c == 3 ? 7 : 1, 1, one);
        break;
      default:
        t = tensor_i64("shape", 1, (int64_t[]){2}, (int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40});
        pb_msg(&g, 5, &t);
        add_node(&g, "ConstantOfShape", "shape", "k");
        add_node(&g, "Add", "x,k", "y");
        add_xy(&g, 1, 2, d2);
        break;
    }
    pb m = model(&g, 13);
    gc_onnx_result r;
    gc_diags d;
    int rc = import_mem(&m, &r, &d, NULL);
    if (rc == 0) gc_onnx_result_free(&r);
    ck_assert_msg(rc == -1, "%s: imported", k_cases[c].what);
    ck_assert_msg(d.status == k_cases[c].status && strstr(first_error(&d), k_cases[c].msg),
                  "%s: %s: %s", k_cases[c].what, graphc_status_string(d.status), first_error(&d));
    gc_diags_free(&d);
    free(m.p);
  }
}
END_TEST

/* Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds to a reshape attribute;
 * Conv with auto_pad and bias, Gemm with alpha/transB, opset-11 Softmax. */
START_TEST(folding_and_mappings) {
  pb g = {0}, a[3], t;
  int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 3, 3}, bd[1] = {3}, idx0[1] = {0}, m1[1] = {-1};
  float w[54], b[3] = {0.5f, -1, 2};
  for (int i = 0; i < 54; i++) w[i] = (float)((i * 7) % 11) / 10 - 0.5f;
  pb nodes[8];
  a[0] = attr_int("axis", 0);
  nodes[0] = node("Shape", NULL, "x", "s", NULL, 0, NULL);
  nodes[1] = node("Gather", NULL, "s,i0", "n", a, 1, NULL);
  a[0] = attr_ints("axes", 1, idx0);
  nodes[2] = node("Unsqueeze", NULL, "n", "nu", a, 1, NULL);
  a[0] = attr_int("axis", 0);
  nodes[3] = node("Concat", NULL, "nu,m1", "shp", a, 1, NULL);
  pb st = {0};
  pb_str(&st, 1, "auto_pad");
  pb_int(&st, 20, 3);
  pb_str(&st, 4, "SAME_UPPER");
  a[0] = st;
  nodes[4] = node("Conv", "conv", "x,W,B", "c", a, 1, NULL);
  nodes[5] = node("Reshape", NULL, "c,shp", "f", NULL, 0, NULL);
  a[0] = attr_float("alpha", 0.5f);
  a[1] = attr_int("transB", 1);
  nodes[6] = node("Gemm", NULL, "f,G", "gm", a, 2, NULL);
  a[0] = attr_int("axis", 1);
  nodes[7] = node("Softmax", NULL, "gm", "y", a, 1, NULL);
  pb mt = tensor_i64("", 1, (int64_t[]){1}, m1);
  a[0] = attr_tensor("value", &mt);
  pb cn = node("Constant", NULL, "", "m1", a, 1, NULL);
  pb_msg(&g, 1, &cn);
  for (int i = 0; i < 8; i++) pb_msg(&g, 1, &nodes[i]);
  t = tensor_f32("W", 4, wd, w, 0);
  pb_msg(&g, 5, &t);
  t = tensor_f32("B", 1, bd, b, 1);
  pb_msg(&g, 5, &t);
  t = tensor_i64("i0", 0, NULL, idx0);
  pb_msg(&g, 5, &t);
  float gw[5 * 48];
  for (int i = 0; i < 5 * 48; i++) gw[i] = (float)(i % 13) / 13 - 0.4f;
  t = tensor_f32("G", 2, (int64_t[]){5, 48}, gw, 1);
  pb_msg(&g, 5, &t);
  pb vi = value_info("x", 1, 4, xd);
  pb_msg(&g, 11, &vi);
  vi = value_info("y", 1, 2, (int64_t[]){1, 5});
  pb_msg(&g, 12, &vi);
  pb m = model(&g, 11);
  gc_onnx_result r;
  gc_diags d;
  ck_assert_msg(import_mem(&m, &r, &d, NULL) == 0, "%s", first_error(&d));
  const char *want[] = {"conv2d(%x, %W, stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1)",
                        "const(value=[0.5, -1.0, 2.0], shape=[1, 3, 1, 1], dtype=f32)",
                        "reshape(%c, shape=[1, -1]) : f32[1, 48]",
                        "matmul(%f, %G, transpose_b=true) : f32[1, 5]", "softmax(", "= mul("};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    ck_assert_msg(strstr(r.text, want[i]), "missing '%s' in:\n%s", want[i], r.text);
  ck_assert_ptr_null(strstr(r.text, "gather"));
  ck_assert_ptr_null(strstr(r.text, "concat"));
  ck_assert_int_eq(r.n_tensors, 2); /* W and G; B was folded into the reshaped bias */
  ck_assert_str_eq(r.tensors[0].name, "W");
  ck_assert_str_eq(r.tensors[1].name, "G");
  gc_onnx_result_free(&r);
  gc_diags_free(&d);
  free(m.p);
}
END_TEST

/* External data: read from a file in the model's folder; escapes are refused. */
static pb external_model(const char *location, int64_t offset) {
  pb g = {0}, t = {0}, e = {0};
  int64_t d2[2] = {2, 2};
  pb_int(&t, 1, 2), pb_int(&t, 1, 2), pb_int(&t, 2, 1);
  pb_str(&t, 8, "W");
  pb_str(&e, 1, "location"), pb_str(&e, 2, location);
  pb_msg(&t, 13, &e);
  char off[32];
  snprintf(off, sizeof off, "%lld", (long long)offset);
  pb_str(&e, 1, "offset"), pb_str(&e, 2, off);
  pb_msg(&t, 13, &e);
  pb_str(&e, 1, "length"), pb_str(&e, 2, "16");
  pb_msg(&t, 13, &e);
  pb_int(&t, 14, 1);
  pb_msg(&g, 5, &t);
  pb n = node("Add", NULL, "x,W", "y", NULL, 0, NULL);
  pb_msg(&g, 1, &n);
  pb vi = value_info("x", 1, 2, d2);
  pb_msg(&g, 11, &vi);
  vi = value_info("y", 1, 2, d2);
  pb_msg(&g, 12, &vi);
  return model(&g, 14);
}

START_TEST(external_data) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", tmp_path("ext"));
  mkdir(dir, 0755);
  float data[6] = {99, 1.5f, -2, 3, 4.25f, 99};
  write_bytes(tmp_path("ext/w.bin"), data, sizeof data);
  write_bytes(tmp_path("outside.bin"), data, sizeof data);
  unlink(tmp_path("ext/link.bin"));
  ck_assert_int_eq(symlink(tmp_path("outside.bin"), tmp_path("ext/link.bin")), 0);
  struct { const char *loc; int64_t off; const char *msg; } cases[] = {
      {"w.bin", 4, NULL},
      {"../outside.bin", 4, "leaves the model's folder"},
      {"sub/../../outside.bin", 4, "leaves the model's folder"},
      {"/etc/passwd", 0, "leaves the model's folder"},
      {"link.bin", 4, "symbolic link"},
      {"w.bin", 12, "runs past the end"},
      {"missing.bin", 0, "cannot open external data"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    pb m = external_model(cases[i].loc, cases[i].off);
    gc_onnx_result r;
    gc_diags d;
    int rc = import_mem(&m, &r, &d, dir);
    if (!cases[i].msg) {
      ck_assert_msg(rc == 0, "%s", first_error(&d));
      ck_assert_int_eq(r.n_tensors, 1);
      ck_assert_uint_eq(r.tensors[0].nbytes, 16);
      ck_assert_int_eq(memcmp(r.tensors[0].data, data + 1, 16), 0);
      gc_onnx_result_free(&r);
    } else {
      ck_assert_int_eq(rc, -1);
      ck_assert_msg(strstr(first_error(&d), cases[i].msg), "case %zu: '%s'", i, first_error(&d));
    }
    gc_diags_free(&d);
    free(m.p);
  }
}
END_TEST

/* TensorProto .pb files: typed fields for narrow types, raw data, bad sizes. */
START_TEST(tensor_pb) {
  pb t = {0};
  pb_int(&t, 1, 3);
  pb_int(&t, 2, 10); /* FLOAT16 in int32_data: the bit patterns */
  pb_int(&t, 5, 0x3c00), pb_int(&t, 5, 0xc000), pb_int(&t, 5, 0x3800);
  gc_arena a;
  gc_arena_init(&a);
  gc_onnx_tensor ot;
  gc_diags d;
  gc_diags_init(&d, "t.pb", NULL, 0);
  ck_assert_int_eq(gc_onnx_tensor_parse(t.p, t.n, &a, &ot, &d), 0);
  ck_assert_int_eq(ot.data_type, 10);
  ck_assert_uint_eq(ot.nbytes, 6);
  uint16_t h[3];
  memcpy(h, ot.data, 6);
  ck_assert(h[0] == 0x3c00 && h[1] == 0xc000 && h[2] == 0x3800);
  pb_int(&t, 5, 1); /* one value too many */
  ck_assert_int_eq(gc_onnx_tensor_parse(t.p, t.n, &a, &ot, &d), -1);
  ck_assert_ptr_nonnull(strstr(first_error(&d), "int32_data has 4 values for 3 elements"));
  free(t.p);
  pb r = {0};
  pb_int(&r, 1, 2), pb_int(&r, 2, 1);
  pb_bytes(&r, 9, "\x00\x00\x80\x3f", 4); /* 4 bytes for 2 floats */
  gc_diags_free(&d);
  gc_diags_init(&d, "t.pb", NULL, 0);
  ck_assert_int_eq(gc_onnx_tensor_parse(r.p, r.n, &a, &ot, &d), -1);
  ck_assert_ptr_nonnull(strstr(first_error(&d), "raw_data has 4 bytes, expected 8"));
  free(r.p);
  gc_diags_free(&d);
  gc_arena_free(&a);
}
END_TEST

/* ---- ONNX node tests through the CLI ----------------------------------------------------------- */

static const char *const node_tests[] = {
    "test_add_bcast", "test_sub", "test_mul", "test_div", "test_pow", "test_relu", "test_sigmoid",
    "test_tanh", "test_exp", "test_sqrt", "test_matmul_3d", "test_gemm_all_attributes",
    "test_conv_with_strides_padding", "test_conv_with_autopad_same", "test_maxpool_2d_pads",
    "test_averagepool_2d_pads", "test_globalaveragepool", "test_softmax_axis_1",
    "test_logsoftmax_default_axis", "test_layer_normalization_3d_axis1_epsilon",
    "test_batchnorm_example", "test_reshape_negative_dim", "test_transpose_default",
    "test_concat_3d_axis_negative_1", "test_slice_neg_steps", "test_gather_negative_indices",
    "test_unsqueeze_two_axes", "test_squeeze", "test_flatten_negative_axis1", "test_expand_dim_changed",
    "test_split_equal_parts_1d_opset18", "test_reduce_mean_keepdims_example", "test_argmax_keepdims_example",
    "test_where_example", "test_cast_FLOAT_to_FLOAT16", "test_clip", "test_gelu_tanh_1",
    "test_layer_normalization_2d_axis0_expanded", "test_shape_start_1", "test_range_float_type_positive_delta",
    "test_resize_upsample_scales_linear", "test_attention_4d", "test_einsum_batch_matmul", "test_top_k",
    "test_convtranspose", "test_nllloss_NCd1_weight", "test_sce_mean", "test_scatternd",
    "test_maxpool_3d_default", "test_mod_mixed_sign_float32",
    /* quantization (#34) and fp8 */
    "test_quantizelinear_axis", "test_quantizelinear_blocked_asymmetric", "test_quantizelinear_e4m3fn",
    "test_dequantizelinear_blocked", "test_dequantizelinear_e5m2", "test_dynamicquantizelinear",
    "test_matmulinteger", "test_convinteger_with_padding", "test_qlinearmatmul_3D_uint8_float16",
    "test_qlinearconv", "test_cast_no_saturate_FLOAT_to_FLOAT8E5M2", "test_cast_FLOAT8E4M3FN_to_FLOAT16",
};

/* TensorProto with raw_data of any element type. */
static pb tensor_raw(const char *name, int elem, int rank, const int64_t *dims, const void *data, size_t n) {
  pb t = {0};
  for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]);
  pb_int(&t, 2, elem);
  pb_str(&t, 8, name);
  pb_bytes(&t, 9, data, n);
  return t;
}

/* Bad quantization parameters are errors that name the node and say what is wrong. */
START_TEST(quant_errors) {
  static const struct {
    const char *op;
    int xelem, selem, zelem;         /* ONNX element types; zelem 0: no zero point */
    int srank; int64_t sdims[2]; float sv[6];
    int64_t axis, block;
    uint8_t zp;
    const char *msg;
  } c[] = {
      {"QuantizeLinear", 1, 1, 0, 1, {4}, {1, 1, 1, 1}, 1, 0, 0,
       "y_scale has 1 dims and 4 elements; per-axis quantization along axis 1 needs a 1-D tensor of 3"},
      {"QuantizeLinear", 1, 1, 0, 1, {3}, {0.5f, 0, 1}, 1, 0, 0,
       "y_scale element 1 is 0; a quantization scale must be finite and non-zero"},
      {"QuantizeLinear", 1, 1, 0, 0, {0}, {INFINITY}, 1, 0, 0, "y_scale element 0 is inf"},
      {"QuantizeLinear", 1, 1, 0, 2, {2, 3}, {1, 1, 1, 1, 1, 1}, 1, 2, 0,
       "y_scale of blocked quantization must have x's shape with ceil(3 / block_size 2) = 2 along axis 1"},
      {"QuantizeLinear", 1, 1, 0, 1, {3}, {1, 1, 1}, 5, 0, 0, "axis"},
      {"QuantizeLinear", 1, 1, 17, 0, {0}, {1}, 1, 0, 0x38,
       "the zero point of an fp8 quantization must be 0 (element 0 is 1)"},
      {"DequantizeLinear", 2, 1, 3, 0, {0}, {1}, 1, 0, 0, "x_zero_point has dtype i8, x has u8"},
      {"DequantizeLinear", 2, 1, 0, 1, {2}, {1, 1}, 1, 0, 0,
       "x_scale has 1 dims and 2 elements; per-axis quantization along axis 1 needs a 1-D tensor of 3"},
  };
  int64_t xd[2] = {2, 3};
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    pb g = {0}, a[2];
    int na = 0;
    a[na++] = attr_int("axis", c[i].axis);
    if (c[i].block) a[na++] = attr_int("block_size", c[i].block);
    pb n = node(c[i].op, "q", c[i].zelem ? "x,s,z" : "x,s", "y", a, na, NULL);
    pb_msg(&g, 1, &n);
    int64_t sn = 1;
    for (int k = 0; k < c[i].srank; k++) sn *= c[i].sdims[k];
    pb t = tensor_f32("s", c[i].srank, c[i].sdims, c[i].sv, 1);
    pb_msg(&g, 5, &t);
    if (c[i].zelem) {
      t = tensor_raw("z", c[i].zelem, 0, NULL, &c[i].zp, 1);
      pb_msg(&g, 5, &t);
    }
    pb vi = value_info("x", c[i].xelem, 2, xd);
    pb_msg(&g, 11, &vi);
    vi = value_info("y", c[i].xelem == 1 ? 2 : 1, 2, xd);
    pb_msg(&g, 12, &vi);
    pb m = model(&g, 21);
    gc_onnx_result r;
    gc_diags d;
    ck_assert_int_eq(import_mem(&m, &r, &d, NULL), -1);
    ck_assert_msg(d.status == GRAPHC_STATUS_INVALID_ARGUMENT, "case %zu: status %d: %s", i, d.status,
                  first_error(&d));
    ck_assert_msg(strstr(first_error(&d), c[i].msg) && strstr(first_error(&d), "'q'"),
                  "case %zu: expected '%s' in '%s'", i, c[i].msg, first_error(&d));
    gc_diags_free(&d);
    free(m.p);
    (void)sn;
  }
}
END_TEST

/* Run graph text on a backend: inputs in, outputs out (sizes from the caller). */
static void run_text(const char *text, graphc_backend_t be, graphc_tensor_t *in, int ni,
                     graphc_tensor_t *out, int no) {
  graphc_context_t *ctx;
  graphc_model_t *gm;
  graphc_executable_t *exe;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_msg(graphc_model_load_string(ctx, "q.graph", text, strlen(text), &gm, &err) == GRAPHC_STATUS_OK,
                "%s\n%s", err.message, text);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  ck_assert_msg(graphc_compile(gm, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  ck_assert_msg(graphc_executable_run(exe, in, (size_t)ni, out, (size_t)no, &err) == GRAPHC_STATUS_OK, "%s",
                err.message);
  graphc_executable_destroy(exe);
  graphc_model_destroy(gm);
  graphc_context_destroy(ctx);
}

/* QuantizeLinear -> DequantizeLinear per axis (u8 and i8 with zero points) on random data
 * with exact ties, on the interpreter and the cpu backend, against rint/clip computed here. */
START_TEST(quant_random) {
  uint64_t seed = fresh_seed(), rs = seed;
  enum { R = 64, C = 5 };
  for (int signed_q = 0; signed_q < 2; signed_q++) {
    int qe = signed_q ? 3 : 2;  /* INT8, UINT8 */
    pb g = {0}, a[1];
    a[0] = attr_int("axis", 1);
    pb n = node("QuantizeLinear", "q", "x,s,z", "y", a, 1, NULL);
    pb_msg(&g, 1, &n);
    a[0] = attr_int("axis", 1);
    n = node("DequantizeLinear", "dq", "y,s,z", "w", a, 1, NULL);
    pb_msg(&g, 1, &n);
    int64_t xd[2] = {R, C}, cd[1] = {C};
    pb vi = value_info("x", 1, 2, xd);
    pb_msg(&g, 11, &vi);
    vi = value_info("s", 1, 1, cd);
    pb_msg(&g, 11, &vi);
    vi = value_info("z", qe, 1, cd);
    pb_msg(&g, 11, &vi);
    vi = value_info("y", qe, 2, xd);
    pb_msg(&g, 12, &vi);
    vi = value_info("w", 1, 2, xd);
    pb_msg(&g, 12, &vi);
    pb m = model(&g, 21);
    gc_onnx_result r;
    gc_diags d;
    ck_assert_msg(import_mem(&m, &r, &d, NULL) == 0, "%s", first_error(&d));
    gc_diags_free(&d);
    float x[R * C], sc[C], w[2][R * C];
    uint8_t z[C], y[2][R * C];
    for (int j = 0; j < C; j++) {
      sc[j] = (float)ldexp(1.0, (int)(rnd(&rs) * 4)) * (j == 2 ? 0.1f : 1.0f);  /* powers of two: exact ties */
      z[j] = (uint8_t)(signed_q ? (int8_t)(rnd(&rs) * 20) : (uint8_t)(100 + rnd(&rs) * 50));
    }
    for (int i = 0; i < R * C; i++) {
      float k = (float)(int)(rnd(&rs) * 300);
      x[i] = (i % 3 == 0 ? k + 0.5f : rnd(&rs) * 300) * sc[i % C];
    }
    for (int be = 0; be < 2; be++) {
      graphc_tensor_t in[3] = {{GRAPHC_DTYPE_F32, 2, {R, C}, x, sizeof x},
                               {GRAPHC_DTYPE_F32, 1, {C}, sc, sizeof sc},
                               {signed_q ? GRAPHC_DTYPE_I8 : GRAPHC_DTYPE_U8, 1, {C}, z, sizeof z}};
      graphc_tensor_t out[2] = {{signed_q ? GRAPHC_DTYPE_I8 : GRAPHC_DTYPE_U8, 2, {R, C}, y[be], sizeof y[be]},
                                {GRAPHC_DTYPE_F32, 2, {R, C}, w[be], sizeof w[be]}};
      run_text(r.text, be ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP, in, 3, out, 2);
    }
    for (int i = 0; i < R * C; i++) {
      int j = i % C;
      double zj = signed_q ? (int8_t)z[j] : z[j];
      double q = nearbyint((double)(x[i] / sc[j])) + zj;  /* f32 division, ties to even */
      double lo = signed_q ? -128 : 0, hi = signed_q ? 127 : 255;
      q = q < lo ? lo : q > hi ? hi : q;
      for (int be = 0; be < 2; be++) {
        double got = signed_q ? (int8_t)y[be][i] : y[be][i];
        ck_assert_msg(got == q, "seed %llu backend %d: q[%d] = %g, expected %g (x %a scale %a zp %g)",
                      (unsigned long long)seed, be, i, got, q, (double)x[i], (double)sc[j], zj);
        float want = (float)((float)(q - zj) * sc[j]);
        ck_assert_msg(w[be][i] == want, "seed %llu backend %d: dq[%d] = %a, expected %a",
                      (unsigned long long)seed, be, i, (double)w[be][i], (double)want);
      }
    }
    gc_onnx_result_free(&r);
    free(m.p);
  }
}
END_TEST

/* A statically quantized fp8 linear as onnxruntime's and TensorRT's QDQ exporters write it:
 * Q -> DQ on the activation (per tensor), DQ of an FLOAT8E4M3FN weight initializer [K, N] with
 * per-column scales (axis 1), MatMul, Add. The weight is imported as an f8e4m3 param (its
 * dequantization not folded to f32), qdq-fold makes the matmul fp8 on the cpu backend (stats),
 * and the cpu results equal the interpreter's, which computes the graph as written. */
START_TEST(qdq_fp8_matmul) {
  uint64_t seed = fresh_seed(), rs = seed;
  enum { M = 8, K = 128, N = 48 };
  static uint8_t wq[K * N];
  float sw[N], bias[N], sx = 0.03125f, x[M * K], y[2][M * N];
  for (int i = 0; i < K * N; i++) {  /* finite e4m3 codes of moderate size, both signs */
    uint8_t b = (uint8_t)(rnd(&rs) * 256);
    wq[i] = (uint8_t)((b & 0x87) | ((uint8_t)(4 + (int)(rnd(&rs) * 5)) << 3));
  }
  for (int j = 0; j < N; j++) sw[j] = 0.001f + 0.01f * rnd(&rs), bias[j] = rnd(&rs) - 0.5f;
  for (int i = 0; i < M * K; i++) x[i] = (rnd(&rs) - 0.5f) * 8;
  pb g = {0}, a[1];
  pb n = node("QuantizeLinear", "q", "x,sx,zx", "xq", NULL, 0, NULL);
  pb_msg(&g, 1, &n);
  n = node("DequantizeLinear", "dqx", "xq,sx,zx", "xd", NULL, 0, NULL);
  pb_msg(&g, 1, &n);
  a[0] = attr_int("axis", 1);
  n = node("DequantizeLinear", "dqw", "Wq,sw", "Wd", a, 1, NULL);
  pb_msg(&g, 1, &n);
  n = node("MatMul", "mm", "xd,Wd", "h", NULL, 0, NULL);
  pb_msg(&g, 1, &n);
  n = node("Add", "add", "h,B", "y", NULL, 0, NULL);
  pb_msg(&g, 1, &n);
  int64_t wd[2] = {K, N}, nd[1] = {N}, xd[2] = {M, K}, yd[2] = {M, N};
  uint8_t zero = 0;
  pb t = tensor_raw("Wq", 17, 2, wd, wq, sizeof wq);
  pb_msg(&g, 5, &t);
  t = tensor_f32("sw", 1, nd, sw, 0);
  pb_msg(&g, 5, &t);
  t = tensor_f32("B", 1, nd, bias, 0);
  pb_msg(&g, 5, &t);
  t = tensor_f32("sx", 0, NULL, &sx, 0);
  pb_msg(&g, 5, &t);
  t = tensor_raw("zx", 17, 0, NULL, &zero, 1);
  pb_msg(&g, 5, &t);
  pb vi = value_info("x", 1, 2, xd);
  pb_msg(&g, 11, &vi);
  vi = value_info("y", 1, 2, yd);
  pb_msg(&g, 12, &vi);
  pb m = model(&g, 21);
  write_bytes(tmp_path("qdq8.onnx"), m.p, m.n);
  free(m.p);
  gc_diags d;
  gc_diags_init(&d, "qdq8.onnx", NULL, 0);
  int rc = gc_onnx_import_file(tmp_path("qdq8.onnx"), tmp_path("qdq8.graph"), tmp_path("qdq8.safetensors"), NULL, &d);
  ck_assert_msg(rc == 0, "%s", first_error(&d));
  gc_diags_free(&d);
  char *text = tu_read_file(tmp_path("qdq8.graph"), NULL);
  ck_assert_msg(strstr(text, "param %Wq: f8e4m3[128, 48] = \"Wq\";"), "the fp8 weight was not kept:\n%s", text);
  free(text);
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  for (int be = 0; be < 2; be++) {
    graphc_model_t *gm;
    graphc_executable_t *exe;
    graphc_error_t err;
    ck_assert_int_eq(graphc_model_load_file(ctx, tmp_path("qdq8.graph"), &gm, &err), GRAPHC_STATUS_OK);
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = be ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP;
    ck_assert_msg(graphc_compile(gm, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
    if (be) ck_assert_msg(strstr(graphc_executable_stats(exe), "qdq-fold 1,"), "%s", graphc_executable_stats(exe));
    graphc_tensor_t in = {GRAPHC_DTYPE_F32, 2, {M, K}, x, sizeof x};
    graphc_tensor_t out = {GRAPHC_DTYPE_F32, 2, {M, N}, y[be], sizeof y[be]};
    ck_assert_msg(graphc_executable_run(exe, &in, 1, &out, 1, &err) == GRAPHC_STATUS_OK, "%s", err.message);
    graphc_executable_destroy(exe);
    graphc_model_destroy(gm);
  }
  graphc_context_destroy(ctx);
  for (int i = 0; i < M * N; i++)  /* the same products, summed in f32 in another order */
    ck_assert_msg(fabsf(y[1][i] - y[0][i]) <= 1e-5f * (1 + fabsf(y[0][i])), "seed %llu: y[%d] cpu %g interp %g",
                  (unsigned long long)seed, i, (double)y[1][i], (double)y[0][i]);
}
END_TEST

/* Triangular constants (a causal mask, bool; its complement in f32 with -inf) are imported as
 * iota / compare / select expressions, not params, and run equal to the values computed
 * here; one wrong element keeps the param. */
START_TEST(triangular_constants) {
  uint64_t seed = fresh_seed(), rs = seed;
  enum { B = 2, R = 16, C = 20 };
  for (int broken = 0; broken < 2; broken++) {
    uint8_t tri[R * C];
    float up[R * C];
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++) {
        tri[i * C + j] = j <= i + 2;
        up[i * C + j] = j <= i - 4 ? -INFINITY : 0.5f;
      }
    if (broken) up[3 * C + 17] = 0.25f;
    int64_t td[2] = {R, C}, ud[3] = {1, R, C}, xd[3] = {B, R, C};
    pb g = {0}, a[1];
    pb t = tensor_raw("", 9, 2, td, tri, sizeof tri);
    a[0] = attr_tensor("value", &t);
    pb n = node("Constant", NULL, "", "tri", a, 1, NULL);
    pb_msg(&g, 1, &n);
    t = tensor_raw("", 1, 3, ud, up, sizeof up);
    a[0] = attr_tensor("value", &t);
    n = node("Constant", NULL, "", "up", a, 1, NULL);
    pb_msg(&g, 1, &n);
    n = node("Where", NULL, "tri,x,up", "y", NULL, 0, NULL);
    pb_msg(&g, 1, &n);
    pb vi = value_info("x", 1, 3, xd);
    pb_msg(&g, 11, &vi);
    vi = value_info("y", 1, 3, xd);
    pb_msg(&g, 12, &vi);
    pb m = model(&g, 17);
    gc_onnx_result r;
    gc_diags d;
    ck_assert_msg(import_mem(&m, &r, &d, NULL) == 0, "%s", first_error(&d));
    gc_diags_free(&d);
    ck_assert_int_eq(r.n_tensors, broken);
    ck_assert_msg(!strstr(r.text, "param") == !broken, "%s", r.text);
    ck_assert_msg(strstr(r.text, "iota("), "%s", r.text);
    if (!broken) {
      float x[B * R * C], y[2][B * R * C];
      for (int i = 0; i < B * R * C; i++) x[i] = rnd(&rs);
      for (int be = 0; be < 2; be++) {
        graphc_tensor_t in = {GRAPHC_DTYPE_F32, 3, {B, R, C}, x, sizeof x};
        graphc_tensor_t out = {GRAPHC_DTYPE_F32, 3, {B, R, C}, y[be], sizeof y[be]};
        run_text(r.text, be ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP, &in, 1, &out, 1);
      }
      for (int e = 0; e < B * R * C; e++) {
        int i = e / C % R, j = e % C;
        float want = tri[i * C + j] ? x[e] : up[i * C + j];
        for (int be = 0; be < 2; be++)
          ck_assert_msg(y[be][e] == want, "seed %llu backend %d: y[%d] = %g, expected %g\n%s",
                        (unsigned long long)seed, be, e, (double)y[be][e], (double)want, r.text);
      }
    }
    gc_onnx_result_free(&r);
    free(m.p);
  }
}
END_TEST

START_TEST(onnx_node_tests) {
  char *out = NULL;
  if (tu_run_cmd("python3 -c 'import onnx'", &out) != 0) {
    printf("SKIPPED onnx_node_tests: the onnx Python package is not installed "
           "(python3 -m pip install onnx)\n");
    free(out);
    return;
  }
  free(out);
  char cmd[8192], dir[4096];
  snprintf(cmd, sizeof cmd, "python3 %s --generate-only --data %s/onnx-node-tests 2>/dev/null",
           tu_src("tests/onnx_conformance.py"), tu_binary_dir());
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 0);
  snprintf(dir, sizeof dir, "%s", out);
  dir[strcspn(dir, "\n")] = 0;
  free(out);
  snprintf(cmd, sizeof cmd, "%s run-onnx-test --help", tu_cli());
  int has = tu_run_cmd(cmd, &out) == 0;
  free(out);
  ck_assert_msg(has, "%s has no run-onnx-test command (tools/graphc.c must dispatch to "
                     "cli_cmd_run_onnx_test)", tu_cli());
  int failed = 0;
  for (size_t i = 0; i < sizeof node_tests / sizeof *node_tests; i++) {
    struct stat st;
    snprintf(cmd, sizeof cmd, "%s/%s", dir, node_tests[i]);
    if (stat(cmd, &st) != 0) { /* older onnx packages lack the newest tests */
      printf("%s: not in this onnx version, skipped\n", node_tests[i]);
      continue;
    }
    snprintf(cmd, sizeof cmd, "%s run-onnx-test %s/%s --backend interp", tu_cli(), dir, node_tests[i]);
    int rc = tu_run_cmd(cmd, &out);
    if (rc != 0 || !strstr(out, "ok:")) {
      printf("%s: exit %d\n%s\n", node_tests[i], rc, out);
      failed++;
    }
    free(out);
  }
  ck_assert_msg(failed == 0, "%d of %zu ONNX node tests failed", failed,
                sizeof node_tests / sizeof *node_tests);
}
END_TEST

/* The suite: protobuf reader, importer, ONNX node tests. */
int main(void) {
  Suite *s = suite_create("onnx");
  TCase *tc = tcase_create("protobuf");
  tcase_add_test(tc, varints);
  tcase_add_test(tc, packed_and_unpacked);
  tcase_add_test(tc, malformed_bytes);
  tcase_add_test(tc, depth_limit);
  suite_add_tcase(s, tc);
  tc = tcase_create("import");
  tcase_add_test(tc, import_and_run_mlp);
  tcase_add_test(tc, every_truncation);
  tcase_add_test(tc, unsupported_listed_together);
  tcase_add_test(tc, dynamic_shape_input);
  tcase_add_test(tc, sizes_that_do_not_fit);
  tcase_add_test(tc, dynamic_shapes);
  tcase_add_test(tc, folding_and_mappings);
  tcase_add_test(tc, external_data);
  tcase_add_test(tc, tensor_pb);
  tcase_add_test(tc, quant_errors);
  tcase_add_test(tc, quant_random);
  tcase_add_test(tc, qdq_fp8_matmul);
  tcase_add_test(tc, triangular_constants);
  suite_add_tcase(s, tc);
  tc = tcase_create("node_tests");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, onnx_node_tests);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
