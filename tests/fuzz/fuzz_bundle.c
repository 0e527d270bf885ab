/* fuzz_bundle.c - libFuzzer target for loading .gcx bundles (runtime/bundle.c,
 * runtime/rt_api.c, the plan checks of runtime/cuda_exec.c).
 *
 * Input: bytes as a bundle. When the input starts with the magic number and
 * byte 63 (the unused last byte of the header's version field) is zero, the
 * harness writes the header's size and XXH64 checksum fields, so mutations get
 * past the header into the sections; a non-zero byte 63 leaves the header as it
 * is (the header checks themselves). Then, each step aborting on a violation:
 *   - graphc_rt_bundle_load_memory either succeeds or fails with IO_ERROR,
 *     UNSUPPORTED or OUT_OF_MEMORY and a non-empty message equal to err.code;
 *   - on success: the signature, meta, stats and weight queries answer; a
 *     weight of the wrong size is refused (WEIGHTS_ERROR), every missing weight
 *     up to 1 MiB is set; the image order for several devices names only
 *     existing code; graphc_rt_bundle_prepare fails cleanly (the driver is
 *     pointed at a path that does not exist, so no device is ever touched);
 *   - gc_bundle_read -> gc_bundle_write -> gc_bundle_read -> gc_bundle_write:
 *     the second read succeeds and both writes give the same bytes (the writer's
 *     output is a fixed point of read + write).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc_rt.h"
#include "runtime/bundle.h"
#include "runtime/cuda_exec.h"

/* Describe the violation and abort. */
static void fail(const char *what, graphc_status_t st, const graphc_error_t *err) {
  fprintf(stderr, "fuzz_bundle: %s (status %d '%s', message '%s')\n", what, (int)st,
          graphc_status_string(st), err ? err->message : "");
  abort();
}

/* A failing call must fill err with its status and a message. */
static void check_error(const char *call, graphc_status_t st, const graphc_error_t *err) {
  if (st == GRAPHC_STATUS_OK) return;
  if (err->code != st || !err->message[0]) fail(call, st, err);
  if (st == GRAPHC_STATUS_INTERNAL) fail(call, st, err);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* No device, whatever the machine: prepare must fail at opening the driver. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  setenv("GRAPHC_CUDA_DRIVER", "/nonexistent/graphc-fuzz/libcuda.so.1", 1);
  return 0;
}

/* The public load path and every query on an accepted bundle. */
static void check_api(const unsigned char *buf, size_t size) {
  graphc_rt_bundle_t *b = NULL;
  graphc_error_t err;
  memset(&err, 0, sizeof err);
  graphc_status_t st = graphc_rt_bundle_load_memory(buf, size, &b, &err);
  check_error("graphc_rt_bundle_load_memory", st, &err);
  if (st != GRAPHC_STATUS_OK) {
    if (b) fail("a failed load returned a bundle", st, &err);
    if (st != GRAPHC_STATUS_IO_ERROR && st != GRAPHC_STATUS_UNSUPPORTED &&
        st != GRAPHC_STATUS_OUT_OF_MEMORY)
      fail("a damaged bundle was refused with an unexpected status", st, &err);
    return;
  }
  if (!b) fail("a successful load returned no bundle", st, &err);
  graphc_tensor_info_t info;
  size_t ni = graphc_rt_num_inputs(b), no = graphc_rt_num_outputs(b);
  for (size_t i = 0; i < ni; i++)
    if (graphc_rt_input_info(b, i, &info) != GRAPHC_STATUS_OK || !info.name ||
        !graphc_dtype_name(info.dtype))
      fail("an input of an accepted bundle has no valid info", st, &err);
  for (size_t i = 0; i < no; i++)
    if (graphc_rt_output_info(b, i, &info) != GRAPHC_STATUS_OK || !info.name ||
        !graphc_dtype_name(info.dtype))
      fail("an output of an accepted bundle has no valid info", st, &err);
  if (graphc_rt_input_info(b, ni, &info) != GRAPHC_STATUS_INVALID_ARGUMENT)
    fail("input info past the end was answered", st, &err);
  (void)graphc_rt_bundle_meta(b, "graph");
  (void)graphc_rt_bundle_meta(b, "");
  if (!graphc_rt_bundle_stats(b)[0]) fail("an accepted bundle has no stats", st, &err);
  /* Weights: a wrong size is refused; missing ones (up to 1 MiB) are provided. */
  size_t nw = graphc_rt_num_weights(b);
  for (size_t i = 0; i < nw; i++) {
    int embedded = 0;
    if (graphc_rt_weight_info(b, i, &info, &embedded) != GRAPHC_STATUS_OK || !info.name)
      fail("a weight of an accepted bundle has no valid info", st, &err);
    static const unsigned char one = 0;
    graphc_status_t ws = graphc_rt_set_weight(b, info.name, &one, info.nbytes + 1, &err);
    if (ws != GRAPHC_STATUS_WEIGHTS_ERROR) fail("a weight of the wrong size was accepted", ws, &err);
    check_error("graphc_rt_set_weight", ws, &err);
    if (embedded || info.nbytes > (1u << 20)) continue;
    void *zeros = calloc(1, info.nbytes ? info.nbytes : 1);
    if (!zeros) abort();
    ws = graphc_rt_set_weight(b, info.name, zeros, info.nbytes, &err);
    free(zeros);
    check_error("graphc_rt_set_weight", ws, &err);
    if (ws != GRAPHC_STATUS_OK) fail("setting a weight of the right size failed", ws, &err);
  }
  st = graphc_rt_bundle_prepare(b, &err);
  check_error("graphc_rt_bundle_prepare", st, &err);
  if (st != GRAPHC_STATUS_BACKEND_UNAVAILABLE && st != GRAPHC_STATUS_WEIGHTS_ERROR)
    fail("prepare without a driver did not fail as unavailable", st, &err);
  graphc_rt_bundle_destroy(b);
}

/* The loader's image order names only code that exists, each choice once. */
static void check_image_order(const gc_bundle *b) {
  int n = b->n_images;
  gc_cu_image *imgs = calloc((size_t)n + 1, sizeof *imgs);
  gc_cu_try *order = calloc(2 * (size_t)n + 1, sizeof *order);
  if (!imgs || !order) abort();
  for (int i = 0; i < n; i++)
    imgs[i] = (gc_cu_image){b->images[i].sm, b->images[i].cubin, b->images[i].cubin_len,
                            b->images[i].ptx, NULL};
  static const int sms[] = {70, 80, 86, 89, 90, 100, 120};
  for (size_t s = 0; s < sizeof sms / sizeof sms[0]; s++) {
    int k = gc_cu_image_order(imgs, n, sms[s], order);
    if (k < 0 || k > 2 * n) fail("image order: count out of range", GRAPHC_STATUS_OK, NULL);
    for (int j = 0; j < k; j++) {
      const gc_cu_try *t = &order[j];
      if (t->image < 0 || t->image >= n) fail("image order: no such image", GRAPHC_STATUS_OK, NULL);
      const gc_cu_image *im = &imgs[t->image];
      if (t->ptx ? !im->ptx || im->sm > sms[s] : !im->cubin || !im->cubin_len ||
                                                     im->sm / 10 != sms[s] / 10 || im->sm > sms[s])
        fail("image order: a choice the device cannot run", GRAPHC_STATUS_OK, NULL);
      for (int q = 0; q < j; q++)
        if (order[q].image == t->image && order[q].ptx == t->ptx)
          fail("image order: a choice listed twice", GRAPHC_STATUS_OK, NULL);
    }
  }
  char list[256];
  gc_cu_image_list(imgs, n, list, sizeof list);
  free(imgs);
  free(order);
}

/* 1 when every param const has data (or none is needed): weights can be embedded. */
static int can_embed(const gc_bundle *b) {
  for (int i = 0; i < b->n_plans; i++)
    for (int c = 0; c < b->plans[i].n_consts; c++)
      if (b->plans[i].consts[c].is_param && !b->plans[i].consts[c].data &&
          b->plans[i].consts[c].bytes)
        return 0;
  return 1;
}

/* Write an accepted bundle, read it back, write again: same bytes. */
static void check_roundtrip(const unsigned char *buf, size_t size) {
  gc_diags d;
  gc_diags_init(&d, "fuzz.gcx", NULL, 0);
  gc_bundle b1, b2;
  if (gc_bundle_read(&b1, buf, size, "fuzz.gcx", &d) != 0) {
    if (!d.n_errors) fail("gc_bundle_read failed without an error", GRAPHC_STATUS_OK, NULL);
    gc_diags_free(&d);
    return;
  }
  check_image_order(&b1);
  void *w1 = NULL, *w2 = NULL;
  size_t n1 = 0, n2 = 0;
  int embed = can_embed(&b1);
  if (gc_bundle_write(&b1, embed, &w1, &n1, &d) != 0)
    fail(d.n ? d.items[0].msg : "gc_bundle_write failed", d.status, NULL);
  if (gc_bundle_read(&b2, w1, n1, "rewritten.gcx", &d) != 0)
    fail(d.n ? d.items[0].msg : "re-reading a written bundle failed", d.status, NULL);
  if (gc_bundle_write(&b2, embed, &w2, &n2, &d) != 0)
    fail(d.n ? d.items[0].msg : "gc_bundle_write (2) failed", d.status, NULL);
  if (n1 != n2 || memcmp(w1, w2, n1) != 0)
    fail("read + write is not a fixed point of the writer's output", GRAPHC_STATUS_OK, NULL);
  if (b2.n_plans > b1.n_plans || b2.n_images != b1.n_images || b2.n_meta != b1.n_meta)
    fail("the round trip changed the bundle's tables", GRAPHC_STATUS_OK, NULL);
  gc_bundle_free(&b2);
  gc_bundle_free(&b1);
  free(w1);
  free(w2);
  gc_diags_free(&d);
}

/* libFuzzer entry. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) abort();
  memcpy(buf, data, size);
  if (size >= GC_BUNDLE_HEADER_BYTES && memcmp(buf, GC_BUNDLE_MAGIC, 8) == 0 && buf[63] == 0) {
    for (int i = 0; i < 8; i++) buf[16 + i] = (unsigned char)((uint64_t)size >> (8 * i));
    uint64_t sum = gc_bundle_checksum(buf, size);
    for (int i = 0; i < 8; i++) buf[24 + i] = (unsigned char)(sum >> (8 * i));
  }
  check_api(buf, size);
  check_roundtrip(buf, size);
  free(buf);
  return 0;
}
