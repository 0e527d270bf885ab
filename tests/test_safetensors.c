/* test_safetensors.c - safetensors reader/writer, weights checking, random weights. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frontend/parser.h"
#include "ir/dtype.h"
#include "weights/safetensors.h"
#include "testutil.h"

/* A fresh seed per test (time and pid), printed in failure messages. */
static uint64_t fresh_seed(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 32);
}

/* xorshift64* for test data (independent of the code under test). */
static uint64_t next_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * UINT64_C(2685821657736338717);
}

/* Path of `name` in this process's temporary directory (static ring). */
static const char *tmp_path(const char *name) {
  static char ring[4][1024];
  static int k;
  char *b = ring[k++ & 3];
  snprintf(b, sizeof ring[0], "%s/%s", tu_tmpdir(), name);
  return b;
}

/* A safetensors image: 8-byte length of `header`, the header, `data_len`
 * bytes of data (counting up). malloc'd; length in *len. */
static unsigned char *make_file(const char *header, size_t data_len, size_t *len) {
  size_t n = strlen(header);
  *len = 8 + n + data_len;
  unsigned char *p = malloc(*len);
  ck_assert_ptr_nonnull(p);
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)((uint64_t)n >> (8 * i));
  memcpy(p + 8, header, n);
  for (size_t i = 0; i < data_len; i++) p[8 + n + i] = (unsigned char)i;
  return p;
}

/* Parse `bytes` as "w.safetensors" and expect exactly one error with this
 * status and message, at no position. */
static void expect_error(const void *bytes, size_t len, graphc_status_t status, const char *msg) {
  gc_diags d;
  gc_diags_init(&d, "model.graph", NULL, 0);
  gc_safetensors *st = gc_safetensors_parse("w.safetensors", bytes, len, &d);
  ck_assert_ptr_null(st);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(d.status, status);
  ck_assert_int_eq(d.items[0].loc.line, 0);
  ck_assert_int_eq(d.items[0].loc.col, 0);
  ck_assert_str_eq(d.items[0].msg, msg);
  gc_diags_free(&d);
}

/* make_file + expect_error for a header with `data_len` data bytes. */
static void expect_header_error(const char *header, size_t data_len, const char *msg) {
  size_t len;
  unsigned char *p = make_file(header, data_len, &len);
  expect_error(p, len, GRAPHC_STATUS_WEIGHTS_ERROR, msg);
  free(p);
}

/* Parse a header that must be accepted; returns the file (caller frees). */
static gc_safetensors *parse_ok(const char *header, size_t data_len) {
  size_t len;
  unsigned char *p = make_file(header, data_len, &len);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_safetensors *st = gc_safetensors_parse("ok.safetensors", p, len, &d);
  ck_assert_msg(st != NULL, "unexpected error: %s", d.n ? d.items[0].msg : "?");
  ck_assert_int_eq(d.n, 0);
  gc_diags_free(&d);
  free(p);
  return st;
}

/* ---- round trip ------------------------------------------------------------------- */

START_TEST(roundtrip_all_dtypes) {
  uint64_t seed = fresh_seed(), rs = seed | 1;
  static const int64_t shapes[3][3] = {{0}, {3}, {2, 3, 4}};
  static const int ranks[3] = {0, 1, 3};
  gc_st_tensor ts[GRAPHC_DTYPE_COUNT_ * 3];
  char names[GRAPHC_DTYPE_COUNT_ * 3][32];
  int n = 0;
  /* Given order interleaves dtypes so the writer's layout sort matters. */
  for (int k = 0; k < 3; k++)
    for (int dt = 0; dt < GRAPHC_DTYPE_COUNT_; dt++) {
      gc_st_tensor *t = &ts[n];
      memset(t, 0, sizeof *t);
      snprintf(names[n], sizeof names[n], "%s.t%d", graphc_dtype_name((gc_dtype)dt), k);
      t->name = names[n];
      t->dtype = (gc_dtype)dt;
      t->rank = ranks[k];
      memcpy(t->dims, shapes[k], sizeof shapes[k]);
      size_t numel = 1;
      for (int i = 0; i < t->rank; i++) numel *= (size_t)t->dims[i];
      t->nbytes = numel * graphc_dtype_size(t->dtype);
      unsigned char *buf = malloc(t->nbytes);
      ck_assert_ptr_nonnull(buf);
      for (size_t i = 0; i < t->nbytes; i++)
        buf[i] = dt == GRAPHC_DTYPE_BOOL ? (unsigned char)(next_rand(&rs) & 1)
                                         : (unsigned char)next_rand(&rs);
      t->data = buf;
      n++;
    }
  const char *path = tmp_path("roundtrip.safetensors");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_eq(gc_safetensors_write(path, ts, n, &d), 0);
  ck_assert_int_eq(d.n, 0);
  gc_safetensors *st = gc_safetensors_load(path, &d);
  ck_assert_msg(st != NULL, "load failed: %s", d.n ? d.items[0].msg : "?");
  ck_assert_int_eq(st->n, n);
  ck_assert_str_eq(st->path, path);

  /* Header length is a multiple of 8; data packed; every tensor naturally aligned. */
  const unsigned char *blob = st->blob;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | blob[i];
  ck_assert_uint_eq(hlen % 8, 0);
  const unsigned char *data = blob + 8 + hlen;
  size_t pos = 0;
  for (int i = 0; i < st->n; i++) {
    const gc_st_tensor *t = &st->tensors[i];
    ck_assert_uint_eq((size_t)((const unsigned char *)t->data - data), pos);
    ck_assert_uint_eq(pos % graphc_dtype_size(t->dtype), 0);
    pos += t->nbytes;
  }
  ck_assert_uint_eq(8 + hlen + pos, st->blob_len);

  for (int i = 0; i < n; i++) {
    const gc_st_tensor *t = gc_safetensors_find(st, ts[i].name);
    ck_assert_msg(t != NULL, "tensor %s missing (seed %llu)", ts[i].name, (unsigned long long)seed);
    ck_assert_int_eq(t->dtype, ts[i].dtype);
    ck_assert_int_eq(t->rank, ts[i].rank);
    for (int k = 0; k < t->rank; k++) ck_assert_int_eq(t->dims[k], ts[i].dims[k]);
    ck_assert_uint_eq(t->nbytes, ts[i].nbytes);
    ck_assert_msg(memcmp(t->data, ts[i].data, t->nbytes) == 0, "%s: data differs (seed %llu)",
                  ts[i].name, (unsigned long long)seed);
  }
  ck_assert_ptr_null(gc_safetensors_find(st, "nope"));

  /* The same bytes through the in-memory parser. */
  gc_safetensors *st2 = gc_safetensors_parse("mem", st->blob, st->blob_len, &d);
  ck_assert_ptr_nonnull(st2);
  ck_assert_int_eq(st2->n, n);
  for (int i = 0; i < n; i++) {
    ck_assert_str_eq(st2->tensors[i].name, st->tensors[i].name);
    ck_assert_int_eq(memcmp(st2->tensors[i].data, st->tensors[i].data, st->tensors[i].nbytes), 0);
  }
  gc_safetensors_free(st2);
  gc_safetensors_free(st);
  gc_diags_free(&d);
  for (int i = 0; i < n; i++) free((void *)ts[i].data);
}
END_TEST

START_TEST(write_exact_bytes) {
  float b[2] = {1.0f, 2.0f};
  int8_t a[3] = {1, -2, 3};
  double s = 0.5;
  gc_st_tensor ts[3] = {
      {.name = "b", .dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {2}, .data = b, .nbytes = 8},
      {.name = "a", .dtype = GRAPHC_DTYPE_I8, .rank = 1, .dims = {3}, .data = a, .nbytes = 3},
      {.name = "s", .dtype = GRAPHC_DTYPE_F64, .rank = 0, .data = &s, .nbytes = 8},
  };
  static const char header[] =
      "{\"a\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[16,19]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
      "\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}       ";
  ck_assert_uint_eq(strlen(header), 168);
  unsigned char want[8 + 168 + 19];
  memset(want, 0, 8);
  want[0] = 168;
  memcpy(want + 8, header, 168);
  memcpy(want + 176, &s, 8);
  memcpy(want + 184, b, 8);
  memcpy(want + 192, a, 3);

  const char *path = tmp_path("exact.safetensors");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_eq(gc_safetensors_write(path, ts, 3, &d), 0);
  size_t len;
  char *got = tu_read_file(path, &len);
  ck_assert_ptr_nonnull(got);
  ck_assert_uint_eq(len, sizeof want);
  ck_assert_msg(memcmp(got, want, len) == 0, "file bytes differ; header: %.168s", got + 8);
  free(got);

  /* Overwriting in place works and leaves no temporary files behind. */
  ts[2].name = "c";
  ck_assert_int_eq(gc_safetensors_write(path, ts, 3, &d), 0);
  gc_safetensors *st = gc_safetensors_load(path, &d);
  ck_assert_ptr_nonnull(st);
  ck_assert_ptr_nonnull(gc_safetensors_find(st, "c"));
  ck_assert_ptr_null(gc_safetensors_find(st, "s"));
  gc_safetensors_free(st);
  DIR *dir = opendir(tu_tmpdir());
  ck_assert_ptr_nonnull(dir);
  for (struct dirent *e; (e = readdir(dir));)
    ck_assert_msg(strstr(e->d_name, ".tmp.") == NULL, "leftover %s", e->d_name);
  closedir(dir);
  ck_assert_int_eq(d.n, 0);
  gc_diags_free(&d);
}
END_TEST

START_TEST(write_errors) {
  float v[2] = {1, 2};
  gc_st_tensor ts[2] = {
      {.name = "x", .dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {2}, .data = v, .nbytes = 8},
      {.name = "x", .dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {2}, .data = v, .nbytes = 8},
  };
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  /* Directory does not exist. */
  const char *bad = tmp_path("no/such/dir/w.safetensors");
  ck_assert_int_ne(gc_safetensors_write(bad, ts, 1, &d), 0);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_IO_ERROR);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(strncmp(d.items[0].msg, bad, strlen(bad)), 0);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "No such file or directory"));
  gc_diags_free(&d);

  /* Target is a directory: the rename fails, the temporary file is removed. */
  gc_diags_init(&d, "", NULL, 0);
  const char *dirpath = tmp_path("adir");
  ck_assert_int_eq(mkdir(dirpath, 0777), 0);
  ck_assert_int_ne(gc_safetensors_write(dirpath, ts, 1, &d), 0);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_IO_ERROR);
  ck_assert_int_eq(strncmp(d.items[0].msg, dirpath, strlen(dirpath)), 0);
  DIR *dir = opendir(tu_tmpdir());
  for (struct dirent *e; (e = readdir(dir));)
    ck_assert_msg(strstr(e->d_name, ".tmp.") == NULL, "leftover %s", e->d_name);
  closedir(dir);
  gc_diags_free(&d);

  /* Duplicate names and wrong sizes. */
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_ne(gc_safetensors_write(tmp_path("dup.safetensors"), ts, 2, &d), 0);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "duplicate tensor name 'x'"));
  ck_assert_int_eq(access(tmp_path("dup.safetensors"), F_OK), -1);
  gc_diags_free(&d);
  gc_diags_init(&d, "", NULL, 0);
  ts[0].nbytes = 4;
  ck_assert_int_ne(gc_safetensors_write(tmp_path("size.safetensors"), ts, 1, &d), 0);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "tensor 'x': 4 bytes of data given, shape x dtype needs 8"));
  gc_diags_free(&d);
}
END_TEST

/* ---- malformed files ---------------------------------------------------------------- */

#define T1 "\"t\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}"

START_TEST(malformed_sizes) {
  expect_error("", 0, GRAPHC_STATUS_WEIGHTS_ERROR,
               "w.safetensors: file is empty; expected an 8-byte header length");
  expect_error("\x10\0\0\0\0", 5, GRAPHC_STATUS_WEIGHTS_ERROR,
               "w.safetensors: file is too short (5 bytes); expected an 8-byte header length");

  /* A valid file, truncated at several points. */
  size_t len;
  unsigned char *p = make_file("{" T1 "}", 16, &len);
  gc_safetensors *st = parse_ok("{" T1 "}", 16);
  gc_safetensors_free(st);
  size_t hl = len - 8 - 16;
  char msg[256];
  expect_error(p, 7, GRAPHC_STATUS_WEIGHTS_ERROR,
               "w.safetensors: file is too short (7 bytes); expected an 8-byte header length");
  snprintf(msg, sizeof msg,
           "w.safetensors: header length %zu is larger than the rest of the file (0 bytes)", hl);
  expect_error(p, 8, GRAPHC_STATUS_WEIGHTS_ERROR, msg);
  snprintf(msg, sizeof msg,
           "w.safetensors: header length %zu is larger than the rest of the file (%zu bytes)", hl,
           hl / 2);
  expect_error(p, 8 + hl / 2, GRAPHC_STATUS_WEIGHTS_ERROR, msg);
  expect_error(p, 8 + hl, GRAPHC_STATUS_WEIGHTS_ERROR,
               "w.safetensors: tensor 't': data_offsets [0, 16] are past the end of the data (0 bytes)");
  expect_error(p, len - 3, GRAPHC_STATUS_WEIGHTS_ERROR,
               "w.safetensors: tensor 't': data_offsets [0, 16] are past the end of the data (13 bytes)");

  /* Header length larger than the file, and absurd. */
  p[0] = 0xff, p[1] = 0x7f;
  snprintf(msg, sizeof msg,
           "w.safetensors: header length 32767 is larger than the rest of the file (%zu bytes)",
           len - 8);
  expect_error(p, len, GRAPHC_STATUS_WEIGHTS_ERROR, msg);
  p[0] = 0, p[1] = 0, p[5] = 1;
  expect_error(p, len, GRAPHC_STATUS_WEIGHTS_ERROR,
               "w.safetensors: header length 1099511627776 is absurd (more than 100000000 bytes)");
  memset(p, 0xff, 8);
  expect_error(p, len, GRAPHC_STATUS_WEIGHTS_ERROR,
               "w.safetensors: header length 18446744073709551615 is absurd (more than 100000000 bytes)");
  free(p);
}
END_TEST

START_TEST(malformed_json) {
  expect_header_error("", 0, "w.safetensors: header is not valid JSON (error at byte 0 of the header)");
  expect_header_error("{\"t\": {", 0,
                      "w.safetensors: header is not valid JSON (error at byte 6 of the header)");
  expect_header_error("{\"t\":{\"dtype\":\"F32\" \"shape\":[]}}", 4,
                      "w.safetensors: header is not valid JSON (error at byte 20 of the header)");
  expect_header_error("{} x", 0,
                      "w.safetensors: header has trailing characters after the JSON object (byte 3)");
  expect_header_error("[1, 2]", 0, "w.safetensors: header is not a JSON object");
  expect_header_error("\"t\"", 0, "w.safetensors: header is not a JSON object");
  expect_header_error("{\"\xff\":1}", 0,
                      "w.safetensors: header is not valid UTF-8 (byte 2 of the header is 0xff)");
  expect_header_error("{\"\xc0\xaf\":1}", 0, /* overlong encoding of '/' */
                      "w.safetensors: header is not valid UTF-8 (byte 2 of the header is 0xc0)");
  static const unsigned char nul[] = {4, 0, 0, 0, 0, 0, 0, 0, '{', '}', 0, ' '};
  expect_error(nul, sizeof nul, GRAPHC_STATUS_WEIGHTS_ERROR,
               "w.safetensors: header contains a NUL byte (byte 2 of the header)");
  expect_header_error("{\"t\":5}", 0, "w.safetensors: tensor 't': entry is not an object");
  expect_header_error("{\"__metadata__\":{\"a\":1}}", 0,
                      "w.safetensors: __metadata__: value of 'a' is not a string");
  expect_header_error("{\"__metadata__\":[]}", 0,
                      "w.safetensors: __metadata__ must be an object of strings");
}
END_TEST

START_TEST(malformed_entries) {
  expect_header_error("{\"t\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                      "w.safetensors: tensor 't': missing dtype");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8,
                      "w.safetensors: tensor 't': missing shape");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8,
                      "w.safetensors: tensor 't': missing data_offsets");
  expect_header_error("{\"t\":{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                      "w.safetensors: tensor 't': dtype must be a string");
  expect_header_error("{\"t\":{\"dtype\":\"F8_E8M0\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2,
                      "w.safetensors: tensor 't': unsupported dtype 'F8_E8M0' "
                      "(supported: F64 F32 F16 BF16 I64 I32 I8 U8 BOOL F8_E4M3 F8_E5M2)");
  expect_header_error("{\"t\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
                      "w.safetensors: tensor 't': unsupported dtype 'I16' "
                      "(supported: F64 F32 F16 BF16 I64 I32 I8 U8 BOOL F8_E4M3 F8_E5M2)");
  expect_header_error("{\"t\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                      "w.safetensors: tensor 't': unsupported dtype 'f32' "
                      "(supported: F64 F32 F16 BF16 I64 I32 I8 U8 BOOL F8_E4M3 F8_E5M2)");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":[-1,2],\"data_offsets\":[0,8]}}", 8,
                      "w.safetensors: tensor 't': shape entry -1 is not a non-negative integer");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]}}", 8,
                      "w.safetensors: tensor 't': shape entry 1.5 is not a non-negative integer");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8,
                      "w.safetensors: tensor 't': shape must be an array of non-negative integers");
  expect_header_error(
      "{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
      "w.safetensors: tensor 't': shape has rank 9; at most 8 is supported");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
                      "w.safetensors: tensor 't': data_offsets must be [begin, end] with "
                      "non-negative integers");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,-8]}}", 8,
                      "w.safetensors: tensor 't': data_offsets must be [begin, end] with "
                      "non-negative integers");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                      "w.safetensors: tensor 't': data_offsets [8, 0] have begin after end");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,80]}}", 8,
                      "w.safetensors: tensor 't': data_offsets [0, 80] are past the end of the "
                      "data (8 bytes)");
  expect_header_error(
      "{\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[784,128],\"data_offsets\":[0,100]}}", 100,
      "w.safetensors: tensor 'fc1.weight': data_offsets [0, 100] do not match shape [784, 128] x "
      "f32 = 401408 bytes");
  expect_header_error("{\"t\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
                      "w.safetensors: tensor 't': data_offsets [0, 4] do not match shape [] x "
                      "bf16 = 2 bytes");
  expect_header_error(
      "{\"t\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
      "w.safetensors: tensor 't': shape [4294967296, 4294967296] x f64 overflows 64 bits");
  expect_header_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                      12,
                      "w.safetensors: tensors 'a' and 'b' overlap (data_offsets [0, 8] and [4, 12])");
  expect_header_error("{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[6,8]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                      16,
                      "w.safetensors: tensors 'a' and 'b' overlap (data_offsets [0, 16] and [6, 8])");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
                      16, "w.safetensors: duplicate tensor name 't'");
  expect_header_error("{\"t\":{\"dtype\":\"F32\",\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                      8, "w.safetensors: tensor 't': duplicate key 'dtype'");
}
END_TEST

START_TEST(accepted_edge_cases) {
  /* __metadata__, scalars, zero-size tensors (also inside another's range),
   * gaps, trailing whitespace, unknown keys; tensors come back sorted by offset. */
  gc_safetensors *st = parse_ok(
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"z\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[4,4]},"
      "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[16,24],\"extra\":1},"
      "\"a\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}   \n",
      24);
  ck_assert_int_eq(st->n, 3);
  ck_assert_str_eq(st->tensors[0].name, "a");
  ck_assert_str_eq(st->tensors[1].name, "z");
  ck_assert_str_eq(st->tensors[2].name, "s");
  ck_assert_int_eq(st->tensors[2].rank, 0);
  ck_assert_int_eq(st->tensors[2].dtype, GRAPHC_DTYPE_I64);
  ck_assert_uint_eq(st->tensors[2].nbytes, 8);
  ck_assert_uint_eq(((const unsigned char *)st->tensors[2].data)[0], 16);
  ck_assert_uint_eq(st->tensors[1].nbytes, 0);
  ck_assert_int_eq(st->tensors[1].dims[0], 0);
  gc_safetensors_free(st);
  st = parse_ok("{}", 0);
  ck_assert_int_eq(st->n, 0);
  gc_safetensors_free(st);
}
END_TEST

START_TEST(load_io_errors) {
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  const char *path = tmp_path("missing.safetensors");
  ck_assert_ptr_null(gc_safetensors_load(path, &d));
  ck_assert_int_eq(d.status, GRAPHC_STATUS_IO_ERROR);
  char want[1200];
  snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
  ck_assert_str_eq(d.items[0].msg, want);
  gc_diags_free(&d);

  gc_diags_init(&d, "", NULL, 0);
  ck_assert_ptr_null(gc_safetensors_load(tu_tmpdir(), &d));
  ck_assert_int_eq(d.status, GRAPHC_STATUS_IO_ERROR);
  snprintf(want, sizeof want, "%s: not a regular file", tu_tmpdir());
  ck_assert_str_eq(d.items[0].msg, want);
  gc_diags_free(&d);

  /* An empty file on disk: content error, named by its path. */
  const char *empty = tmp_path("empty.safetensors");
  FILE *f = fopen(empty, "wb");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_ptr_null(gc_safetensors_load(empty, &d));
  ck_assert_int_eq(d.status, GRAPHC_STATUS_WEIGHTS_ERROR);
  snprintf(want, sizeof want, "%s: file is empty; expected an 8-byte header length", empty);
  ck_assert_str_eq(d.items[0].msg, want);
  gc_diags_free(&d);
}
END_TEST

/* ---- checking params ------------------------------------------------------------------ */

/* Add `param %pname: type = "tname";` at line `line`, column 3. */
static gc_op *add_param(gc_graph *g, const char *pname, gc_dtype dt, int rank,
                        const int64_t *dims, const char *tname, int line) {
  gc_op *op = gc_op_new(g, GC_OP_PARAM, 0, NULL, 1, (const char *const[]){pname},
                        (gc_loc){line, 3});
  ck_assert_ptr_nonnull(op);
  gc_type t = {.dtype = dt, .rank = rank};
  memcpy(t.dims, dims, (size_t)rank * sizeof *dims);
  op->results[0]->type = t;
  gc_named_attr a = {.name = "name", .val = {.kind = GC_ATTR_STR, .loc = {line, 30}, .u.s = tname}};
  gc_op_set_attrs(g, op, 1, &a);
  return op;
}

/* Write `ts` to a temporary file and read it back in memory as "w.safetensors". */
static gc_safetensors *write_and_parse(const gc_st_tensor *ts, int n) {
  const char *path = tmp_path("check.safetensors");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_eq(gc_safetensors_write(path, ts, n, &d), 0);
  size_t len;
  char *bytes = tu_read_file(path, &len);
  ck_assert_ptr_nonnull(bytes);
  gc_safetensors *st = gc_safetensors_parse("w.safetensors", bytes, len, &d);
  ck_assert_ptr_nonnull(st);
  free(bytes);
  gc_diags_free(&d);
  return st;
}

START_TEST(weights_check_messages) {
  gc_module *m = gc_module_new("model.graph");
  gc_graph *g = gc_graph_new(m, "mlp", (gc_loc){3, 1});
  add_param(g, "w1", GRAPHC_DTYPE_F32, 2, (int64_t[]){4, 3}, "fc1.weight", 4);
  add_param(g, "b1", GRAPHC_DTYPE_F32, 1, (int64_t[]){3}, "fc1.bias", 5);
  add_param(g, "w2", GRAPHC_DTYPE_F32, 2, (int64_t[]){3, 2}, "fc2.weight", 6);
  add_param(g, "b2", GRAPHC_DTYPE_F32, 1, (int64_t[]){2}, "fc2.bias", 7);
  add_param(g, "s", GRAPHC_DTYPE_I64, 0, (int64_t[]){0}, "step", 8);

  static float w1[12], w2[6];
  static uint16_t b1[3];
  static int64_t step;
  static float extra[5];
  gc_st_tensor ts[] = {
      {.name = "fc1.weight", .dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {4, 3}, .data = w1, .nbytes = 48},
      {.name = "fc1.bias", .dtype = GRAPHC_DTYPE_F16, .rank = 1, .dims = {3}, .data = b1, .nbytes = 6},
      {.name = "fc2.weight", .dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {2, 3}, .data = w2, .nbytes = 24},
      {.name = "step", .dtype = GRAPHC_DTYPE_I64, .rank = 0, .data = &step, .nbytes = 8},
      {.name = "unused", .dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {5}, .data = extra, .nbytes = 20},
  };
  gc_safetensors *st = write_and_parse(ts, 5);

  gc_diags d;
  gc_diags_init(&d, "model.graph", NULL, 0);
  ck_assert_int_eq(gc_weights_check(g, st, &d), 3);
  ck_assert_int_eq(d.n_errors, 3);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_WEIGHTS_ERROR);
  ck_assert_str_eq(d.items[0].msg,
                   "param %b1: dtype mismatch: tensor 'fc1.bias' in w.safetensors is f16[3], the "
                   "param is declared f32[3]");
  ck_assert_int_eq(d.items[0].loc.line, 5);
  ck_assert_int_eq(d.items[0].loc.col, 3);
  ck_assert_str_eq(d.items[1].msg,
                   "param %w2: shape mismatch: tensor 'fc2.weight' in w.safetensors is f32[2, 3], "
                   "the param is declared f32[3, 2]");
  ck_assert_int_eq(d.items[1].loc.line, 6);
  ck_assert_int_eq(d.items[1].loc.col, 3);
  ck_assert_str_eq(d.items[2].msg, "param %b2: tensor 'fc2.bias' not found in w.safetensors");
  ck_assert_int_eq(d.items[2].loc.line, 7);
  ck_assert_int_eq(d.items[2].loc.col, 3);

  /* Rendered with the position. */
  char *r = gc_diags_render(&d);
  ck_assert_ptr_nonnull(strstr(r, "model.graph:7:3: error: param %b2: tensor 'fc2.bias' not found"));
  free(r);
  gc_diags_free(&d);
  gc_safetensors_free(st);
  gc_module_free(m);
}
END_TEST

START_TEST(weights_check_parsed) {
  static const char text[] =
      "version 1;\n"
      "weights \"w.safetensors\";\n"
      "\n"
      "graph @mlp<B>(%x: f32[B, 4]) -> (f32[B, 3]) {\n"
      "  param %w1: f32[4, 3] = \"fc1.weight\";\n"
      "    param %b1: f32[3] = \"fc1.bias\";\n"
      "  %h = matmul(%x, %w1) : f32[B, 3];\n"
      "  param %w2: f32[3, 2] = \"nope\";\n"
      "  return %h;\n"
      "}\n";
  gc_diags d;
  gc_diags_init(&d, "model.graph", text, sizeof text - 1);
  gc_module *m = gc_parse("model.graph", text, sizeof text - 1, &d);
  ck_assert_msg(m != NULL, "parse failed: %s", d.n ? d.items[0].msg : "?");
  static float w1[12];
  static int32_t b1[3];
  gc_st_tensor ts[] = {
      {.name = "fc1.weight", .dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {4, 3}, .data = w1, .nbytes = 48},
      {.name = "fc1.bias", .dtype = GRAPHC_DTYPE_I32, .rank = 1, .dims = {3}, .data = b1, .nbytes = 12},
  };
  gc_safetensors *st = write_and_parse(ts, 2);
  ck_assert_int_eq(gc_weights_check(m->graphs[0], st, &d), 2);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_WEIGHTS_ERROR);
  ck_assert_str_eq(d.items[0].msg,
                   "param %b1: dtype mismatch: tensor 'fc1.bias' in w.safetensors is i32[3], the "
                   "param is declared f32[3]");
  ck_assert_int_eq(d.items[0].loc.line, 6);
  ck_assert_int_eq(d.items[0].loc.col, 5);
  ck_assert_str_eq(d.items[1].msg, "param %w2: tensor 'nope' not found in w.safetensors");
  ck_assert_int_eq(d.items[1].loc.line, 8);
  ck_assert_int_eq(d.items[1].loc.col, 3);
  char *r = gc_diags_render(&d);
  ck_assert_ptr_nonnull(strstr(r, "model.graph:8:3: error: param %w2: tensor 'nope' not found in "
                                  "w.safetensors\n    8 |   param %w2: f32[3, 2] = \"nope\";\n"
                                  "      |   ^\n"));
  free(r);
  gc_diags_free(&d);
  gc_safetensors_free(st);
  gc_module_free(m);
}
END_TEST

/* A param `from` another dtype wants the file tensor in that dtype (the loader converts). */
START_TEST(weights_check_from) {
  static const char text[] =
      "version 1;\n"
      "graph @g(%x: f16[2, 4]) -> (f16[2, 3]) {\n"
      "  param %w: f16[4, 3] = \"w\" from f32;\n"
      "  param %v: f16[4, 3] = \"v\" from f32;\n"
      "  %a = matmul(%x, %w);\n  %b = matmul(%x, %v);\n  %y = add(%a, %b);\n"
      "  return %y;\n"
      "}\n";
  gc_diags d;
  gc_diags_init(&d, "from.graph", text, sizeof text - 1);
  gc_module *m = gc_parse("from.graph", text, sizeof text - 1, &d);
  ck_assert_msg(m != NULL, "parse failed: %s", d.n ? d.items[0].msg : "?");
  static float w[12];
  static uint16_t v[12];
  gc_st_tensor ts[] = {
      {.name = "w", .dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {4, 3}, .data = w, .nbytes = 48},
      {.name = "v", .dtype = GRAPHC_DTYPE_F16, .rank = 2, .dims = {4, 3}, .data = v, .nbytes = 24},
  };
  gc_safetensors *st = write_and_parse(ts, 2);
  ck_assert_int_eq(gc_weights_check(m->graphs[0], st, &d), 1);
  ck_assert_str_eq(d.items[0].msg, "param %v: dtype mismatch: tensor 'v' in w.safetensors is f16[4, 3], the "
                                   "param is declared f16[4, 3] from f32");
  ck_assert_int_eq(d.items[0].loc.line, 4);
  gc_diags_free(&d);
  gc_safetensors_free(st);
  gc_module_free(m);
}
END_TEST

START_TEST(weights_check_symbolic) {
  gc_module *m = gc_module_new("model.graph");
  gc_graph *g = gc_graph_new(m, "g", (gc_loc){2, 1});
  g->n_syms = 1;
  g->sym_names = gc_arena_alloc(&g->arena, sizeof *g->sym_names);
  g->sym_values = gc_arena_alloc(&g->arena, sizeof *g->sym_values);
  g->sym_names[0] = "B";
  g->sym_values[0] = GC_SYM_UNBOUND;
  add_param(g, "e", GRAPHC_DTYPE_BF16, 2, (int64_t[]){GC_DIM_SYM(0), 4}, "emb", 3);

  /* Unbound: random weights cannot be written; the check prints the symbol. */
  gc_diags d;
  gc_diags_init(&d, "model.graph", NULL, 0);
  const char *path = tmp_path("sym.safetensors");
  ck_assert_int_ne(gc_weights_write_random(g, path, 1, &d), 0);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_WEIGHTS_ERROR);
  ck_assert_str_eq(d.items[0].msg, "param %e: shape has unbound symbolic dims");
  ck_assert_int_eq(d.items[0].loc.line, 3);
  ck_assert_int_eq(access(path, F_OK), -1);
  gc_diags_free(&d);

  static uint16_t data[8];
  gc_st_tensor t = {.name = "emb", .dtype = GRAPHC_DTYPE_BF16, .rank = 2, .dims = {2, 4},
                    .data = data, .nbytes = 16};
  gc_safetensors *st = write_and_parse(&t, 1);
  gc_diags_init(&d, "model.graph", NULL, 0);
  ck_assert_int_eq(gc_weights_check(g, st, &d), 1);
  ck_assert_str_eq(d.items[0].msg,
                   "param %e: shape mismatch: tensor 'emb' in w.safetensors is bf16[2, 4], the "
                   "param is declared bf16[B, 4]");
  gc_diags_free(&d);

  /* Bound B = 2: both work. */
  g->sym_values[0] = 2;
  gc_diags_init(&d, "model.graph", NULL, 0);
  ck_assert_int_eq(gc_weights_check(g, st, &d), 0);
  ck_assert_int_eq(gc_weights_write_random(g, path, 1, &d), 0);
  ck_assert_int_eq(d.n, 0);
  gc_safetensors *st2 = gc_safetensors_load(path, &d);
  ck_assert_ptr_nonnull(st2);
  ck_assert_int_eq(gc_weights_check(g, st2, &d), 0);
  gc_safetensors_free(st2);
  gc_safetensors_free(st);
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

/* ---- random weights ------------------------------------------------------------------- */

/* IEEE half bits -> float (test's own decoder). */
static float half_to_float(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                      : ldexpf((float)(m | 0x400), e - 25);
  return (h & 0x8000) ? -v : v;
}

/* bfloat16 bits -> float. */
static float bf16_to_float(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

START_TEST(random_golden) {
  /* Reference values computed independently (Python splitmix64). */
  static const uint32_t want_f32[8] = {0x3e775cc9, 0xbeae203a, 0xbe62b663, 0xbe1f8c78,
                                       0xbeec874f, 0x3ebc8864, 0xbe902d32, 0x3e99ec6c};
  static const int32_t want_i32[8] = {2, 0, 1, 1, 0, 3, 0, 3};
  gc_type t = {.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {2, 4}};
  uint32_t f[8];
  gc_random_fill(f, &t, 42);
  for (int i = 0; i < 8; i++) ck_assert_uint_eq(f[i], want_f32[i]);
  t.dtype = GRAPHC_DTYPE_I32;
  int32_t k[8];
  gc_random_fill(k, &t, 42);
  for (int i = 0; i < 8; i++) ck_assert_int_eq(k[i], want_i32[i]);
}
END_TEST

START_TEST(random_fill_properties) {
  uint64_t seed = fresh_seed();
  gc_type t = {.rank = 2, .dims = {64, 25}};
  const double s = 1.0 / 5.0; /* fan_in = 25 */
  enum { N = 64 * 25 };
  static unsigned char a[N * 8 + 1], b[N * 8 + 1];
  for (int dt = 0; dt < GRAPHC_DTYPE_COUNT_; dt++) {
    t.dtype = (gc_dtype)dt;
    size_t nbytes = N * graphc_dtype_size(t.dtype);
    memset(a, 0xaa, sizeof a);
    memset(b, 0x55, sizeof b);
    gc_random_fill(a, &t, seed);
    gc_random_fill(b, &t, seed);
    ck_assert_msg(memcmp(a, b, nbytes) == 0, "%s: same seed, different bytes (seed %llu)",
                  graphc_dtype_name(t.dtype), (unsigned long long)seed);
    ck_assert_uint_eq(a[nbytes], 0xaa); /* writes exactly numel elements */
    gc_random_fill(b, &t, seed + 1);
    ck_assert_msg(memcmp(a, b, nbytes) != 0, "%s: seeds %llu and +1 give the same bytes",
                  graphc_dtype_name(t.dtype), (unsigned long long)seed);
    int nonzero = 0, hist[4] = {0};
    double lo = 1e9, hi = -1e9;
    for (int i = 0; i < N; i++) {
      double v;
      switch (t.dtype) {
        case GRAPHC_DTYPE_F64: memcpy(&v, a + 8 * i, 8); break;
        case GRAPHC_DTYPE_F32: { float x; memcpy(&x, a + 4 * i, 4); v = x; break; }
        case GRAPHC_DTYPE_F16: { uint16_t h; memcpy(&h, a + 2 * i, 2); v = half_to_float(h); break; }
        case GRAPHC_DTYPE_BF16: { uint16_t h; memcpy(&h, a + 2 * i, 2); v = bf16_to_float(h); break; }
        case GRAPHC_DTYPE_I64: { int64_t x; memcpy(&x, a + 8 * i, 8); v = (double)x; break; }
        case GRAPHC_DTYPE_I32: { int32_t x; memcpy(&x, a + 4 * i, 4); v = x; break; }
        case GRAPHC_DTYPE_I8: v = (int8_t)a[i]; break;
        case GRAPHC_DTYPE_F8E4M3: v = gc_f8e4m3_to_f64(a[i]); break;
        case GRAPHC_DTYPE_F8E5M2: v = gc_f8e5m2_to_f64(a[i]); break;
        case GRAPHC_DTYPE_F8E4M3FNUZ:
        case GRAPHC_DTYPE_F8E5M2FNUZ: v = gc_f8_to_f64(t.dtype, a[i]); break;
        default: v = a[i]; break;
      }
      if (v != 0) nonzero++;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
      if (!gc_dtype_is_float(t.dtype)) {
        ck_assert_msg(v == floor(v) && v >= 0 && v < (dt == GRAPHC_DTYPE_BOOL ? 2 : 4),
                      "%s: value %g out of range", graphc_dtype_name(t.dtype), v);
        hist[(int)v]++;
      }
    }
    ck_assert_int_gt(nonzero, N / 3);
    if (gc_dtype_is_float(t.dtype)) {
      double tol = t.dtype == GRAPHC_DTYPE_BF16 ? s / 128 : t.dtype == GRAPHC_DTYPE_F16 ? s / 1024
                   : t.dtype == GRAPHC_DTYPE_F8E4M3 || t.dtype == GRAPHC_DTYPE_F8E4M3FNUZ ? s / 16
                   : t.dtype == GRAPHC_DTYPE_F8E5M2 || t.dtype == GRAPHC_DTYPE_F8E5M2FNUZ ? s / 8 : 0;
      ck_assert_msg(lo >= -s - tol && hi <= s + tol, "%s: range [%g, %g] outside +-%g (seed %llu)",
                    graphc_dtype_name(t.dtype), lo, hi, s, (unsigned long long)seed);
      ck_assert_msg(lo < -0.8 * s && hi > 0.8 * s, "%s: range [%g, %g] does not cover +-%g",
                    graphc_dtype_name(t.dtype), lo, hi, s);
    } else {
      int levels = dt == GRAPHC_DTYPE_BOOL ? 2 : 4;
      for (int v = 0; v < levels; v++)
        ck_assert_msg(hist[v] > N / levels / 2, "%s: value %d appears %d times",
                      graphc_dtype_name(t.dtype), v, hist[v]);
    }
  }

  /* Rank < 2: s = 1. */
  gc_type v1 = {.dtype = GRAPHC_DTYPE_F64, .rank = 1, .dims = {1000}};
  static double x[1000];
  gc_random_fill(x, &v1, seed);
  double mx = 0;
  for (int i = 0; i < 1000; i++) mx = fmax(mx, fabs(x[i]));
  ck_assert(mx <= 1.0 && mx > 0.9);
  gc_type sc = {.dtype = GRAPHC_DTYPE_F32, .rank = 0};
  float one;
  gc_random_fill(&one, &sc, seed);
  ck_assert(fabsf(one) <= 1.0f);
}
END_TEST

START_TEST(random_half_rounding) {
  /* f16 and bf16 are the f32 values rounded to nearest even. */
  uint64_t seed = fresh_seed();
  gc_type t = {.dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {4096}};
  static float f[4096];
  static uint16_t h[4096], bf[4096];
  gc_random_fill(f, &t, seed);
  t.dtype = GRAPHC_DTYPE_F16;
  gc_random_fill(h, &t, seed);
  t.dtype = GRAPHC_DTYPE_BF16;
  gc_random_fill(bf, &t, seed);
  for (int i = 0; i < 4096; i++) {
#ifdef __FLT16_MAX__
    _Float16 ref = (_Float16)f[i];
    uint16_t rb;
    memcpy(&rb, &ref, 2);
    ck_assert_msg(h[i] == rb, "f16(%a) = %04x, want %04x (seed %llu)", (double)f[i], h[i], rb,
                  (unsigned long long)seed);
#else
    ck_assert(fabs(half_to_float(h[i]) - f[i]) <= fabs(f[i]) / 2048 + 0x1p-25);
#endif
    /* bf16: nearest, ties to even. */
    uint32_t x;
    memcpy(&x, &f[i], 4);
    uint32_t lo = x & 0xffff0000u, rem = x & 0xffffu;
    uint16_t want = (uint16_t)(lo >> 16);
    if (rem > 0x8000 || (rem == 0x8000 && (want & 1))) want++;
    ck_assert_msg(bf[i] == want, "bf16(%a) = %04x, want %04x (seed %llu)", (double)f[i], bf[i],
                  want, (unsigned long long)seed);
  }
}
END_TEST

START_TEST(random_weights_file) {
  uint64_t seed = fresh_seed();
  gc_module *m = gc_module_new("model.graph");
  gc_graph *g = gc_graph_new(m, "g", (gc_loc){2, 1});
  add_param(g, "w1", GRAPHC_DTYPE_F32, 2, (int64_t[]){16, 8}, "fc1.weight", 3);
  add_param(g, "w2", GRAPHC_DTYPE_F32, 2, (int64_t[]){16, 8}, "fc2.weight", 4);
  add_param(g, "b", GRAPHC_DTYPE_F16, 1, (int64_t[]){8}, "fc1.bias", 5);
  add_param(g, "i", GRAPHC_DTYPE_I32, 1, (int64_t[]){5}, "idx", 6);
  add_param(g, "w1b", GRAPHC_DTYPE_F32, 2, (int64_t[]){16, 8}, "fc1.weight", 7); /* shared */
  const char *p1 = tmp_path("rand1.safetensors"), *p2 = tmp_path("rand2.safetensors"),
             *p3 = tmp_path("rand3.safetensors");
  gc_diags d;
  gc_diags_init(&d, "model.graph", NULL, 0);
  ck_assert_int_eq(gc_weights_write_random(g, p1, seed, &d), 0);
  ck_assert_int_eq(gc_weights_write_random(g, p2, seed, &d), 0);
  ck_assert_int_eq(gc_weights_write_random(g, p3, seed ^ 1, &d), 0);
  ck_assert_int_eq(d.n, 0);
  size_t l1, l2, l3;
  char *b1 = tu_read_file(p1, &l1), *b2 = tu_read_file(p2, &l2), *b3 = tu_read_file(p3, &l3);
  ck_assert(b1 && b2 && b3);
  ck_assert_uint_eq(l1, l2);
  ck_assert_msg(memcmp(b1, b2, l1) == 0, "same seed %llu, different files", (unsigned long long)seed);
  ck_assert_uint_eq(l1, l3);
  ck_assert_msg(memcmp(b1, b3, l1) != 0, "seed %llu and ^1 give the same file", (unsigned long long)seed);
  free(b1), free(b2), free(b3);

  gc_safetensors *st = gc_safetensors_load(p1, &d);
  ck_assert_ptr_nonnull(st);
  ck_assert_int_eq(st->n, 4);
  ck_assert_int_eq(gc_weights_check(g, st, &d), 0);
  const gc_st_tensor *t1 = gc_safetensors_find(st, "fc1.weight"),
                     *t2 = gc_safetensors_find(st, "fc2.weight");
  ck_assert_msg(memcmp(t1->data, t2->data, t1->nbytes) != 0, "params got the same data");
  /* Each tensor is gc_random_fill of its type with some seed: values in range. */
  const float *w = t1->data;
  for (int i = 0; i < 128; i++) ck_assert(fabsf(w[i]) <= 1.0f / sqrtf(8.0f));
  gc_safetensors_free(st);

  /* A shared name with a different type is an error at the second param. */
  add_param(g, "bad", GRAPHC_DTYPE_F32, 1, (int64_t[]){3}, "fc2.weight", 9);
  ck_assert_int_ne(gc_weights_write_random(g, tmp_path("rand4.safetensors"), seed, &d), 0);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_str_eq(d.items[0].msg,
                   "param %bad: tensor 'fc2.weight' is also used by param %w2 with type f32[16, 8]");
  ck_assert_int_eq(d.items[0].loc.line, 9);
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

int main(void) {
  Suite *s = suite_create("safetensors");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, roundtrip_all_dtypes);
  tcase_add_test(tc, write_exact_bytes);
  tcase_add_test(tc, write_errors);
  tcase_add_test(tc, malformed_sizes);
  tcase_add_test(tc, malformed_json);
  tcase_add_test(tc, malformed_entries);
  tcase_add_test(tc, accepted_edge_cases);
  tcase_add_test(tc, load_io_errors);
  tcase_add_test(tc, weights_check_messages);
  tcase_add_test(tc, weights_check_parsed);
  tcase_add_test(tc, weights_check_from);
  tcase_add_test(tc, weights_check_symbolic);
  tcase_add_test(tc, random_golden);
  tcase_add_test(tc, random_fill_properties);
  tcase_add_test(tc, random_half_rounding);
  tcase_add_test(tc, random_weights_file);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
