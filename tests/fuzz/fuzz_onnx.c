/* fuzz_onnx.c - libFuzzer target for the ONNX reader and importer
 * (frontend/protobuf.c, frontend/onnx_proto.c, frontend/onnx*.c).
 *
 * Input: bytes as a ModelProto, and the same bytes as a lone TensorProto (the
 * .pb files of ONNX test data). Properties, each aborting on a violation:
 *   - gc_onnx_model_parse returns a model with no error or NULL with an error;
 *     gc_onnx_tensor_parse likewise, and a parsed tensor's data holds exactly
 *     numel x element size bytes;
 *   - gc_onnx_import of a parsed model (no model folder, so external data is
 *     refused and no file is ever opened) either fails with errors (never
 *     INTERNAL) or returns .graph text that parses, verifies and prints back
 *     identically, and weight tensors with valid dtypes, consistent sizes and
 *     unique names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx.h"
#include "frontend/parser.h"

/* Describe the violation (with the first diagnostic) and abort. */
static void fail(const char *what, const gc_diags *d, const char *text) {
  fprintf(stderr, "fuzz_onnx: %s\n", what);
  if (d && d->n) fprintf(stderr, "first diagnostic (status %d): %s\n", (int)d->status,
                         d->items[0].msg);
  if (text) fprintf(stderr, "--- text ---\n%s\n", text);
  abort();
}

/* Failing calls report errors; never INTERNAL. */
static void check_failed(const char *what, const gc_diags *d) {
  if (!d->n_errors) fail(what, d, NULL);
  if (d->status == GRAPHC_STATUS_INTERNAL || d->status == GRAPHC_STATUS_OK) fail(what, d, NULL);
  for (int i = 0; i < d->n; i++)
    if (!d->items[i].msg || !d->items[i].msg[0]) fail("a diagnostic without a message", d, NULL);
}

/* The lone-tensor reader. */
static void check_tensor(const uint8_t *data, size_t size) {
  gc_diags d;
  gc_diags_init(&d, "fuzz.pb", NULL, 0);
  gc_arena a;
  gc_arena_init(&a);
  gc_onnx_tensor t;
  memset(&t, 0, sizeof t);
  int rc = gc_onnx_tensor_parse(data, size, &a, &t, &d);
  if (rc != 0) {
    check_failed("gc_onnx_tensor_parse failed without a proper error", &d);
  } else {
    if (d.n_errors) fail("a tensor was parsed together with errors", &d, NULL);
    if (t.rank < 0 || (t.rank && !t.dims)) fail("a parsed tensor has no valid dims", &d, NULL);
    size_t es = gc_onnx_type_size(t.data_type);
    if (t.data && es && t.numel >= 0 && t.nbytes != (size_t)t.numel * es)
      fail("a parsed tensor's data is not numel x element size bytes", &d, NULL);
    if (t.data && t.nbytes) {
      volatile uint8_t sink = t.data[0] ^ t.data[t.nbytes - 1];   /* ASan checks both ends */
      (void)sink;
    }
  }
  gc_arena_free(&a);
  gc_diags_free(&d);
}

/* Imported text must parse, verify and print back to itself. */
static void check_text(const char *text) {
  gc_diags d;
  size_t len = strlen(text);
  gc_diags_init(&d, "imported.graph", text, len);
  gc_module *m = gc_parse("imported.graph", text, len, &d);
  if (!m || gc_verify_module(m, &d) > 0 || d.n_errors)
    fail("the imported text does not parse and verify", &d, text);
  gc_sbuf b = {0};
  gc_print_module(&b, m);
  if (b.failed) fail("printing the imported module failed", NULL, NULL);
  char *again = gc_sbuf_take(&b);
  if (!again || strcmp(again, text) != 0) fail("the imported text does not print back identically", NULL, text);
  free(again);
  gc_module_free(m);
  gc_diags_free(&d);
}

/* Weight tensors: valid, consistent, uniquely named. */
static void check_weights(const gc_onnx_result *r) {
  for (int i = 0; i < r->n_tensors; i++) {
    const gc_st_tensor *t = &r->tensors[i];
    if (!t->name || !t->name[0]) fail("a weight without a name", NULL, NULL);
    if (!graphc_dtype_name(t->dtype) || t->rank < 0 || t->rank > GC_MAX_RANK)
      fail("a weight with an invalid dtype or rank", NULL, NULL);
    uint64_t n = graphc_dtype_size(t->dtype);
    for (int k = 0; k < t->rank; k++) {
      if (t->dims[k] < 0 || __builtin_mul_overflow(n, (uint64_t)t->dims[k], &n))
        fail("a weight with an invalid shape", NULL, NULL);
    }
    if (n != t->nbytes || (n && !t->data)) fail("a weight's size does not match its shape", NULL, NULL);
    if (n) {
      volatile uint8_t sink = ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[n - 1];
      (void)sink;
    }
    for (int j = 0; j < i; j++)
      if (strcmp(r->tensors[j].name, t->name) == 0) fail("two weights with one name", NULL, NULL);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_tensor(data, size);
  gc_diags d;
  gc_diags_init(&d, "fuzz.onnx", NULL, 0);
  gc_onnx_model *m = gc_onnx_model_parse(data, size, &d);
  if (!m) {
    check_failed("gc_onnx_model_parse failed without a proper error", &d);
    gc_diags_free(&d);
    return 0;
  }
  if (d.n_errors) fail("a model was parsed together with errors", &d, NULL);
  gc_onnx_options o = {.model_dir = NULL, .weights_ref = "fuzz.safetensors"};
  gc_onnx_result r;
  if (gc_onnx_import(m, "fuzz.onnx", &o, &r, &d) != 0) {
    check_failed("gc_onnx_import failed without a proper error", &d);
  } else {
    if (d.n_errors) fail("an import succeeded together with errors", &d, NULL);
    if (!r.text) fail("an import succeeded without text", &d, NULL);
    check_text(r.text);
    check_weights(&r);
    gc_onnx_result_free(&r);
  }
  char *rendered = gc_diags_render(&d);
  free(rendered);
  gc_diags_free(&d);
  gc_onnx_model_free(m);
  return 0;
}
