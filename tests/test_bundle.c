/* test_bundle.c - .gcx bundles (runtime/bundle.c), the runtime API
 * (include/graphc/graphc_rt.h, runtime/rt_api.c), `graphc compile` for bundles
 * and C (tools/aot_cli.c), image selection (runtime/cuda_exec.c) and
 * reproducibility.
 *
 * Without a GPU: bundle contents and signature, weights embedded or supplied,
 * input validation, the unavailable-driver path, damaged / truncated / other-
 * version files (every field fuzzed with a valid checksum: errors, never a
 * crash), crafted invalid plans, the image order rules, bit-identical output
 * from two processes in two directories (PTX, cubin, bundle; both code
 * paths), CLI errors, a C program linked with `--emit c` output and
 * libgraphc_rt that loads its bundle, and --precision f16 bundles that embed the
 * weights converted to f16 (the bytes checked; run and compared with a GPU). With a GPU: bundles run through
 * libgraphc_rt and match the interpreter (both paths, host and device
 * pointers, eager and graph replay), PTX fallback for an older arch, a clear
 * error for a wrong arch without PTX, the exact cubin preferred, weights given
 * at run time and replaced after setup, several bundles at once.
 *
 * Seed: $GRAPHC_TEST_SEED, else fresh (printed).
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "graphc/graphc_rt.h"
#include "runtime/bundle.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_exec.h"
#include "runtime/hash.h"
#include "ir/dtype.h"
#include "weights/safetensors.h"

static uint64_t g_seed;
static int g_have_device;
static int g_device_sm;

#define NEED_DEVICE()           \
  do {                          \
    if (!g_have_device) return; \
  } while (0)

/* Params, several kernel kinds, odd sizes; two outputs (one returned twice). */
static const char *const k_net =
    "version 1;\n"
    "weights \"net.safetensors\";\n"
    "graph @net<B>(%x: f32[B, 40], %0: f32[B, 24]) -> (f32[B, 24], f32[B], f32[B, 24]) {\n"
    "  param %w: f32[40, 24] = \"layer.weight\";\n"
    "  param %b: f32[24] = \"layer.bias\";\n"
    "  param %g: f32[24] = \"norm.gamma\";\n"
    "  %h = matmul(%x, %w);\n"
    "  %bm = reduce_max(%b, axes=[0], keepdims=true);\n"  /* weights alone: the plan's prologue */
    "  %hb = add(%h, %b);\n"
    "  %r1 = add(%hb, %0);\n"
    "  %r = sub(%r1, %bm);\n"
    "  %a = gelu(%r);\n"
    "  %n = rmsnorm(%a, %g);\n"
    "  %s = softmax(%n, axis=-1);\n"
    "  %m = reduce_max(%n, axes=[1]);\n"
    "  return %s, %m, %s;\n"
    "}\n";

/* A directory for this test with net.graph and its weights (B bound at compile). */
typedef struct fixture {
  char dir[512];
  char graph[600], weights[600];
} fixture;


static void fixture_init(fixture *f, const char *tag) {
  static int n;
  snprintf(f->dir, sizeof f->dir, "%s/%s-%d-%d", tu_tmpdir(), tag, (int)getpid(), n++);
  ck_assert_int_eq(mkdir(f->dir, 0700), 0);
  snprintf(f->graph, sizeof f->graph, "%s/net.graph", f->dir);
  snprintf(f->weights, sizeof f->weights, "%s/net.safetensors", f->dir);
  FILE *fp = fopen(f->graph, "w");
  ck_assert_ptr_nonnull(fp);
  fputs(k_net, fp);
  fclose(fp);
  TU_SH_OK("'%s' weights '%s' --bind B=5 --random --seed %llu -o '%s'", GRAPHC_CLI, f->graph,
         (unsigned long long)(g_seed % 1000), f->weights);
}

/* Compile f's graph into `name` in f->dir with extra CLI flags; returns the path. */
static const char *compile_bundle(const fixture *f, const char *name, const char *flags) {
  static char ring[8][700];
  static int k;
  char *p = ring[k++ & 7];
  snprintf(p, 700, "%s/%s", f->dir, name);
  TU_SH_OK("GRAPHC_CACHE=off '%s' compile '%s' --bind B=5 -o '%s' %s", GRAPHC_CLI, f->graph, p, flags);
  return p;
}

/* Load a bundle file or fail the test. */
static graphc_rt_bundle_t *must_load(const char *path) {
  graphc_rt_bundle_t *b = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_rt_bundle_load(path, &b, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "load %s: %s: %s", path, graphc_status_string(st), err.message);
  return b;
}

/* ==== contents ========================================================================== */

START_TEST(bundle_contents) {
  fixture f;
  fixture_init(&f, "contents");
  const char *path = compile_bundle(&f, "net.gcx", "--arch sm_90,sm_80 --embed-weights");
  graphc_rt_bundle_t *b = must_load(path);
  ck_assert_uint_eq(graphc_rt_num_inputs(b), 2);
  ck_assert_uint_eq(graphc_rt_num_outputs(b), 3);
  graphc_tensor_info_t t;
  ck_assert_int_eq(graphc_rt_input_info(b, 1, &t), GRAPHC_STATUS_OK);
  ck_assert_str_eq(t.name, "0");
  ck_assert(t.dtype == GRAPHC_DTYPE_F32 && t.rank == 2 && t.dims[0] == 5 && t.dims[1] == 24 &&
            t.nbytes == 5 * 24 * 4);
  ck_assert_int_eq(graphc_rt_output_info(b, 1, &t), GRAPHC_STATUS_OK);
  ck_assert(strcmp(t.name, "m") == 0 && t.rank == 1 && t.dims[0] == 5);
  ck_assert_int_eq(graphc_rt_output_info(b, 3, &t), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_str_eq(graphc_rt_bundle_meta(b, "graph"), "net");
  ck_assert_str_eq(graphc_rt_bundle_meta(b, "binds"), "B=5");
  ck_assert_str_eq(graphc_rt_bundle_meta(b, "archs"), "sm_90,sm_80");
  ck_assert_str_eq(graphc_rt_bundle_meta(b, "codegen"), "llvm");  /* the default */
  ck_assert_str_eq(graphc_rt_bundle_meta(b, "embed_weights"), "1");
  ck_assert_str_eq(graphc_rt_bundle_meta(b, "graphc"), GRAPHC_VERSION_STRING);
  ck_assert_ptr_null(graphc_rt_bundle_meta(b, "no such key"));
  ck_assert_msg(strstr(graphc_rt_bundle_stats(b), "cubin sm_90, sm_80; PTX sm_90, sm_80"), "%s",
                graphc_rt_bundle_stats(b));
  /* Weights: every param, embedded, byte for byte the file's. */
  ck_assert_uint_eq(graphc_rt_num_weights(b), 3);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_safetensors *w = gc_safetensors_load(f.weights, &d);
  ck_assert_ptr_nonnull(w);
  for (size_t i = 0; i < 3; i++) {
    int emb = 0;
    ck_assert_int_eq(graphc_rt_weight_info(b, i, &t, &emb), GRAPHC_STATUS_OK);
    ck_assert_int_eq(emb, 1);
    const gc_st_tensor *st = gc_safetensors_find(w, t.name);
    ck_assert_msg(st && st->nbytes == t.nbytes && st->rank == t.rank, "weight %s", t.name);
  }
  size_t len = 0;
  char *bytes = tu_read_file(path, &len);
  gc_bundle gb;
  ck_assert_int_eq(gc_bundle_read(&gb, bytes, len, path, &d), 0);
  ck_assert_int_eq(gb.n_plans, 1);  /* the same plan for both archs, stored once */
  ck_assert_int_eq(gb.n_images, 2);
  for (int i = 0; i < 2; i++) {
    const gc_bundle_image *im = &gb.images[i];
    ck_assert_int_eq(im->sm, i ? 80 : 90);
    ck_assert(im->cubin_len > 100 && memcmp(im->cubin, "\x7f" "ELF", 4) == 0);
    ck_assert_msg(strstr(im->ptx, i ? ".target sm_80" : ".target sm_90"), "PTX target of image %d", i);
    ck_assert_int_eq(((const char *)im->cubin - bytes) % 64, 0);  /* 64-byte aligned in the file */
  }
  int params = 0;
  for (int c = 0; c < gb.plans[0].n_consts; c++) {
    const gc_lp_const *k = &gb.plans[0].consts[c];
    if (!k->is_param) continue;
    params++;
    const gc_st_tensor *st = gc_safetensors_find(w, k->name);
    ck_assert_msg(st && k->data && memcmp(st->data, k->data, st->nbytes) == 0, "weight %s bytes",
                  k->name);
  }
  ck_assert_int_eq(params, 3);
  gc_bundle_free(&gb);
  gc_safetensors_free(w);
  gc_diags_free(&d);
  free(bytes);
  graphc_rt_bundle_destroy(b);
}
END_TEST

/* Without --embed-weights: small file, weights listed as missing, set at run time. */
START_TEST(weights_supplied_at_run_time) {
  fixture f;
  fixture_init(&f, "noweights");
  const char *with = compile_bundle(&f, "with.gcx", "");
  const char *emb = compile_bundle(&f, "emb.gcx", "--embed-weights");
  struct stat sa, sb, sw;
  ck_assert(stat(with, &sa) == 0 && stat(emb, &sb) == 0 && stat(f.weights, &sw) == 0);
  ck_assert_msg(sb.st_size >= sa.st_size + sw.st_size - 4096, "embedding added %lld bytes for %lld of weights",
                (long long)(sb.st_size - sa.st_size), (long long)sw.st_size);
  graphc_rt_bundle_t *b = must_load(with);
  ck_assert_str_eq(graphc_rt_bundle_meta(b, "embed_weights"), "0");
  ck_assert_str_eq(graphc_rt_bundle_meta(b, "weights"), "net.safetensors");
  graphc_error_t err;
  /* Missing weights are reported before any device work, by name. */
  ck_assert_int_eq(graphc_rt_bundle_prepare(b, &err), GRAPHC_STATUS_WEIGHTS_ERROR);
  ck_assert_msg(strstr(err.message, "layer.weight") && strstr(err.message, "graphc_rt_set_weight"),
                "%s", err.message);
  float junk[4] = {1, 2, 3, 4};
  ck_assert_int_eq(graphc_rt_set_weight(b, "nope", junk, sizeof junk, &err), GRAPHC_STATUS_WEIGHTS_ERROR);
  ck_assert_msg(strstr(err.message, "no weight 'nope'"), "%s", err.message);
  ck_assert_int_eq(graphc_rt_set_weight(b, "layer.bias", junk, sizeof junk, &err),
                   GRAPHC_STATUS_WEIGHTS_ERROR);
  ck_assert_msg(strstr(err.message, "96 bytes, got 16"), "%s", err.message);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_safetensors *w = gc_safetensors_load(f.weights, &d);
  for (size_t i = 0; i < graphc_rt_num_weights(b); i++) {
    graphc_tensor_info_t t;
    int e = 1;
    ck_assert_int_eq(graphc_rt_weight_info(b, i, &t, &e), GRAPHC_STATUS_OK);
    ck_assert_int_eq(e, 0);
    const gc_st_tensor *st = gc_safetensors_find(w, t.name);
    ck_assert_int_eq(graphc_rt_set_weight(b, t.name, st->data, st->nbytes, &err), GRAPHC_STATUS_OK);
    ck_assert_int_eq(graphc_rt_weight_info(b, i, &t, &e), GRAPHC_STATUS_OK);
    ck_assert_int_eq(e, 1);
  }
  graphc_status_t st = graphc_rt_bundle_prepare(b, &err);
  if (!g_have_device)
    ck_assert_msg(st == GRAPHC_STATUS_BACKEND_UNAVAILABLE && strstr(err.message, "CUDA backend unavailable"),
                  "%s: %s", graphc_status_string(st), err.message);
  else
    ck_assert_msg(st == GRAPHC_STATUS_OK, "%s", err.message);
  gc_safetensors_free(w);
  gc_diags_free(&d);
  graphc_rt_bundle_destroy(b);
}
END_TEST

/* Host tensors of the bundle's signature (inputs random, outputs zeroed). */
static void make_io(graphc_rt_bundle_t *b, uint64_t *s, graphc_tensor_t **in, graphc_tensor_t **out) {
  size_t ni = graphc_rt_num_inputs(b), no = graphc_rt_num_outputs(b);
  *in = calloc(ni, sizeof **in);
  *out = calloc(no, sizeof **out);
  for (size_t i = 0; i < ni + no; i++) {
    graphc_tensor_info_t t;
    graphc_tensor_t *x = i < ni ? &(*in)[i] : &(*out)[i - ni];
    if (i < ni)
      graphc_rt_input_info(b, i, &t);
    else
      graphc_rt_output_info(b, i - ni, &t);
    x->dtype = t.dtype;
    x->rank = t.rank;
    memcpy(x->dims, t.dims, sizeof x->dims);
    x->nbytes = t.nbytes;
    x->data = calloc(1, t.nbytes);
    if (i < ni) tu_fill(x->data, t.dtype, (int64_t)(t.nbytes / graphc_dtype_size(t.dtype)), 'x', 0, s);
  }
}

/* Signature checks happen before any device work. */
START_TEST(run_validates_tensors) {
  fixture f;
  fixture_init(&f, "validate");
  graphc_rt_bundle_t *b = must_load(compile_bundle(&f, "net.gcx", "--embed-weights"));
  uint64_t s = g_seed + 1;
  graphc_tensor_t *in, *out;
  make_io(b, &s, &in, &out);
  graphc_error_t err;
  ck_assert_int_eq(graphc_rt_run(b, in, 1, out, 3, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "expected 2 inputs, got 1"), "%s", err.message);
  in[1].dims[1] = 25;
  ck_assert_int_eq(graphc_rt_run(b, in, 2, out, 3, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "inputs 1 (%0): expected f32[5, 24], got f32[5, 25]"), "%s", err.message);
  in[1].dims[1] = 24;
  out[2].dtype = GRAPHC_DTYPE_F16;
  ck_assert_int_eq(graphc_rt_run(b, in, 2, out, 3, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "outputs 2 (%s)"), "%s", err.message);
  out[2].dtype = GRAPHC_DTYPE_F32;
  out[0].nbytes = 7;
  ck_assert_int_eq(graphc_rt_run(b, in, 2, out, 3, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "buffer has 7 bytes"), "%s", err.message);
  out[0].nbytes = 480;
  void *keep = in[0].data;
  in[0].data = NULL;
  ck_assert_int_eq(graphc_rt_run(b, in, 2, out, 3, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "data is NULL"), "%s", err.message);
  in[0].data = keep;
  ck_assert_int_eq(graphc_rt_run(NULL, in, 2, out, 3, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_rt_input_info(NULL, 0, NULL), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_uint_eq(graphc_rt_num_inputs(NULL), 0);
  tu_free_tensors(in, 2);
  tu_free_tensors(out, 3);
  graphc_rt_bundle_destroy(b);
}
END_TEST

/* No driver: a clear BACKEND_UNAVAILABLE at the first run, loading still works. */
START_TEST(no_driver_is_unavailable) {
  fixture f;
  fixture_init(&f, "nodriver");
  const char *path = compile_bundle(&f, "net.gcx", "--embed-weights");
  setenv("GRAPHC_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  graphc_rt_bundle_t *b = must_load(path);
  uint64_t s = g_seed + 2;
  graphc_tensor_t *in, *out;
  make_io(b, &s, &in, &out);
  graphc_error_t err;
  graphc_status_t st = graphc_rt_run(b, in, 2, out, 3, &err);
  ck_assert_int_eq(st, GRAPHC_STATUS_BACKEND_UNAVAILABLE);
  ck_assert_msg(strstr(err.message, "CUDA backend unavailable") && strstr(err.message, "not found"),
                "%s", err.message);
  tu_free_tensors(in, 2);
  tu_free_tensors(out, 3);
  graphc_rt_bundle_destroy(b);
}
END_TEST

/* ==== damaged files ======================================================================== */

/* Expect loading bytes to fail with `status` and a message containing `part`. */
static void expect_load_error(const void *bytes, size_t len, graphc_status_t status,
                              const char *part, const char *what) {
  graphc_rt_bundle_t *b = (graphc_rt_bundle_t *)0x1;
  graphc_error_t err;
  graphc_status_t st = graphc_rt_bundle_load_memory(bytes, len, &b, &err);
  ck_assert_msg(st == status, "%s: status %s, message: %s", what, graphc_status_string(st), err.message);
  ck_assert_ptr_null(b);
  ck_assert_msg(strstr(err.message, part), "%s: message '%s' lacks '%s'", what, err.message, part);
}

/* Recompute the checksum after editing a bundle image. */
static void fix_checksum(unsigned char *p, size_t len) {
  uint64_t h = gc_bundle_checksum(p, len);
  for (int i = 0; i < 8; i++) p[24 + i] = (unsigned char)(h >> (8 * i));
}

START_TEST(damaged_files) {
  fixture f;
  fixture_init(&f, "damaged");
  const char *path = compile_bundle(&f, "net.gcx", "--embed-weights --arch sm_90,sm_80");
  size_t len = 0;
  unsigned char *good = (unsigned char *)tu_read_file(path, &len);
  unsigned char *p = malloc(len + 1);
  uint64_t s = g_seed + 3;
  /* From memory, at an odd address: fine (cubins are copied to aligned memory on use). */
  unsigned char *odd = malloc(len + 1);
  memcpy(odd + 1, good, len);
  graphc_rt_bundle_t *b = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_rt_bundle_load_memory(odd + 1, len, &b, &err), GRAPHC_STATUS_OK);
  graphc_rt_bundle_destroy(b);
  free(odd);
  /* Truncated anywhere. */
  size_t cuts[] = {0, 1, 7, 8, 40, 63, 64, 65, 100, len / 3, len / 2, len - 64, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    char what[64];
    snprintf(what, sizeof what, "cut at %zu", cuts[i]);
    expect_load_error(good, cuts[i], GRAPHC_STATUS_IO_ERROR,
                      cuts[i] < 8 ? "not a graphc bundle" : "truncated", what);
  }
  /* Paths that are not readable bundle files. */
  graphc_rt_bundle_t *nb = (graphc_rt_bundle_t *)0x1;
  ck_assert_int_eq(graphc_rt_bundle_load("/nonexistent/x.gcx", &nb, &err), GRAPHC_STATUS_IO_ERROR);
  ck_assert_msg(nb == NULL && strstr(err.message, "cannot open '/nonexistent/x.gcx'"), "%s", err.message);
  ck_assert_int_eq(graphc_rt_bundle_load(f.dir, &nb, &err), GRAPHC_STATUS_IO_ERROR);
  ck_assert_msg(strstr(err.message, "not a regular file"), "%s", err.message);
  ck_assert_int_eq(graphc_rt_bundle_load(f.graph, &nb, &err), GRAPHC_STATUS_IO_ERROR);
  ck_assert_msg(strstr(err.message, "net.graph: not a graphc bundle"), "%s", err.message);
  ck_assert_int_eq(graphc_rt_bundle_load(NULL, &nb, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  /* Not a bundle at all. */
  expect_load_error(k_net, strlen(k_net), GRAPHC_STATUS_IO_ERROR, "not a graphc bundle", "text");
  /* Any flipped byte: caught by the checksum (or the header checks). */
  for (int i = 0; i < 300; i++) {
    memcpy(p, good, len);
    size_t at = i < 64 ? (size_t)i : (size_t)(tu_next(&s) % len);
    if (at >= 24 && at < 32) continue;  /* the checksum itself: next loop */
    p[at] ^= (unsigned char)(1u << (tu_next(&s) % 8));
    graphc_rt_bundle_t *x = (graphc_rt_bundle_t *)0x1;
    graphc_status_t st = graphc_rt_bundle_load_memory(p, len, &x, &err);
    ck_assert_msg(st != GRAPHC_STATUS_OK && x == NULL, "byte %zu flipped: loaded (seed %llu)", at,
                  (unsigned long long)g_seed);
    ck_assert_msg(st == GRAPHC_STATUS_IO_ERROR || st == GRAPHC_STATUS_UNSUPPORTED, "byte %zu: %s", at,
                  graphc_status_string(st));
  }
  memcpy(p, good, len);
  p[27] ^= 0x40;
  expect_load_error(p, len, GRAPHC_STATUS_IO_ERROR, "checksum mismatch", "checksum field");
  /* Another format version: UNSUPPORTED, naming both versions. */
  memcpy(p, good, len);
  p[8] = GC_BUNDLE_FORMAT + 1;
  fix_checksum(p, len);
  char want[64];
  snprintf(want, sizeof want, "bundle format version %d", GC_BUNDLE_FORMAT + 1);
  expect_load_error(p, len, GRAPHC_STATUS_UNSUPPORTED, want, "a newer format");
  /* Longer than the header says. */
  unsigned char *longer = malloc(len + 8);
  memcpy(longer, good, len);
  memset(longer + len, 0, 8);
  expect_load_error(longer, len + 8, GRAPHC_STATUS_IO_ERROR, "damaged bundle", "extra bytes");
  free(longer);
  free(p);
  free(good);
}
END_TEST

/* Random edits with a valid checksum: every field is bounds-checked. Loads that
 * succeed must give a consistent signature; none may crash (run under ASan). */
START_TEST(fuzz_fields_with_valid_checksum) {
  fixture f;
  fixture_init(&f, "fuzz");
  const char *path = compile_bundle(&f, "net.gcx", "--arch sm_90,sm_80");
  size_t len = 0;
  unsigned char *good = (unsigned char *)tu_read_file(path, &len);
  unsigned char *p = malloc(len);
  uint64_t s = g_seed + 4;
  int loaded = 0, rejected = 0;
  /* Find the end of the plan-heavy part: mutate mostly the first 4 KiB (tables). */
  size_t hot = len < 4096 ? len : 4096;
  for (int it = 0; it < 4000; it++) {
    memcpy(p, good, len);
    int edits = 1 + (int)(tu_next(&s) % 4);
    for (int e = 0; e < edits; e++) {
      size_t at = 64 + (size_t)(tu_next(&s) % (tu_next(&s) % 4 ? hot - 64 : len - 64));
      switch (tu_next(&s) % 4) {
        case 0: p[at] ^= (unsigned char)(1u << (tu_next(&s) % 8)); break;
        case 1: p[at] = (unsigned char)tu_next(&s); break;
        case 2: p[at] = 0xff; break;
        default: p[at] = 0; break;
      }
    }
    fix_checksum(p, len);
    graphc_rt_bundle_t *b = NULL;
    graphc_error_t err;
    graphc_status_t st = graphc_rt_bundle_load_memory(p, len, &b, &err);
    if (st == GRAPHC_STATUS_OK) {
      loaded++;
      /* Whatever loaded must be self-consistent enough to describe. */
      for (size_t i = 0; i < graphc_rt_num_inputs(b); i++) {
        graphc_tensor_info_t t;
        ck_assert_int_eq(graphc_rt_input_info(b, i, &t), GRAPHC_STATUS_OK);
        ck_assert(t.name && graphc_dtype_name(t.dtype) && t.rank >= 0 && t.rank <= GRAPHC_MAX_RANK);
      }
      ck_assert_ptr_nonnull(graphc_rt_bundle_stats(b));
      graphc_rt_bundle_destroy(b);
    } else {
      rejected++;
      ck_assert_msg(st == GRAPHC_STATUS_IO_ERROR || st == GRAPHC_STATUS_UNSUPPORTED, "%s: %s",
                    graphc_status_string(st), err.message);
      ck_assert_msg(strstr(err.message, "bundle"), "%s", err.message);
    }
  }
  printf("fuzz: %d loaded (edits in data or names), %d rejected\n", loaded, rejected);
  ck_assert_int_gt(rejected, 600);
  free(p);
  free(good);
}
END_TEST

/* Read path's bundle (kept alive in *bytes). */
static void read_bundle(const char *path, gc_bundle *b, char **bytes) {
  size_t len = 0;
  *bytes = tu_read_file(path, &len);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_eq(gc_bundle_read(b, *bytes, len, path, &d), 0);
  gc_diags_free(&d);
}

/* Write b and expect reading it back to fail with a message containing `part`. */
static void expect_rejected(const gc_bundle *b, const char *part) {
  void *out = NULL;
  size_t len = 0;
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_eq(gc_bundle_write(b, 1, &out, &len, &d), 0);
  expect_load_error(out, len, GRAPHC_STATUS_IO_ERROR, part, part);
  free(out);
  gc_diags_free(&d);
}

/* Well-formed files whose plans are wrong: each violation named. */
START_TEST(crafted_invalid_plans) {
  fixture f;
  fixture_init(&f, "crafted");
  const char *path = compile_bundle(&f, "net.gcx", "--embed-weights");
  gc_bundle b;
  char *bytes;
  read_bundle(path, &b, &bytes);
  gc_launch_plan *p = &b.plans[0];
  /* Unchanged, it round-trips to the same bytes. */
  {
    void *out = NULL;
    size_t len = 0, flen = 0;
    gc_diags d;
    gc_diags_init(&d, "", NULL, 0);
    ck_assert_int_eq(gc_bundle_write(&b, 1, &out, &len, &d), 0);
    char *file = tu_read_file(path, &flen);
    ck_assert_msg(len == flen && memcmp(out, file, len) == 0, "read + write changed the bytes");
    free(file);
    free(out);
    gc_diags_free(&d);
  }
  int temp = -1, bufparam_k = -1, bufparam_j = -1;
  for (int i = 0; i < p->n_buffers && temp < 0; i++)
    if (p->buffers[i].kind == GC_LP_TEMP) temp = i;
  for (int k = 0; k < p->n_kernels && bufparam_k < 0; k++)
    for (int j = 0; j < p->kernels[k].n_params; j++)
      if (p->kernels[k].params[j].kind == GC_LP_PARAM_BUFFER) {
        bufparam_k = k;
        bufparam_j = j;
        break;
      }
  ck_assert(temp >= 0 && bufparam_k >= 0 && p->n_launches > 0);

  int saved = p->launches[0];
  p->launches[0] = 99;
  expect_rejected(&b, "launch 0 names kernel 99");
  p->launches[0] = saved;

  uint64_t off = p->buffers[temp].offset;
  p->buffers[temp].offset = p->arena_bytes + 256;
  expect_rejected(&b, "outside the arena");
  p->buffers[temp].offset = off;

  int64_t v = p->kernels[bufparam_k].params[bufparam_j].value;
  p->kernels[bufparam_k].params[bufparam_j].value = p->n_buffers;
  expect_rejected(&b, "is bound to nothing");
  p->kernels[bufparam_k].params[bufparam_j].value = v;

  /* dynamic shared memory (bundle format 2): negative or beyond any device */
  int smem = p->kernels[0].smem;
  p->kernels[0].smem = -1;
  expect_rejected(&b, "invalid launch shape");
  p->kernels[0].smem = 1 << 21;
  expect_rejected(&b, "invalid launch shape");
  p->kernels[0].smem = smem;

  /* launch kinds: unknown, and one block per group past the grid's limit */
  gc_lp_launch_kind lkind = p->kernels[0].kind;
  int64_t n = p->kernels[0].n;
  p->kernels[0].kind = (gc_lp_launch_kind)3;
  expect_rejected(&b, "invalid launch shape");
  p->kernels[0].kind = GC_LP_BLOCKS_ONE;
  p->kernels[0].n = (int64_t)INT32_MAX + 1;
  expect_rejected(&b, "invalid launch shape");
  p->kernels[0].kind = lkind;
  p->kernels[0].n = n;

  /* the prologue (bundle format 4): within the launches */
  int np = p->n_prologue;
  ck_assert_msg(np >= 1, "the net's bias reduction is a prologue launch (%d)", np);
  p->n_prologue = p->n_launches + 1;
  expect_rejected(&b, "prologue of");
  p->n_prologue = -1;  /* written as 2^32 - 1: the reader's count check */
  expect_rejected(&b, "a count exceeds");
  p->n_prologue = np;

  const char *name = p->kernels[0].name;
  p->kernels[0].name = "bad name";
  expect_rejected(&b, "invalid name");
  p->kernels[0].name = name;

  size_t nb = p->inputs[0].nbytes;
  p->inputs[0].nbytes = nb + 4;
  expect_rejected(&b, "shape or size is invalid");
  p->inputs[0].nbytes = nb;

  gc_lp_buf_kind kind = p->buffers[0].kind;
  p->buffers[0].kind = (gc_lp_buf_kind)7;
  expect_rejected(&b, "unknown kind");
  p->buffers[0].kind = kind;

  int ci = -1;
  for (int i = 0; i < p->n_buffers && ci < 0; i++)
    if (p->buffers[i].kind == GC_LP_CONST) ci = i;
  ck_assert_int_ge(ci, 0);
  int idx = p->buffers[ci].index;
  p->buffers[ci].index = p->n_consts + 3;
  expect_rejected(&b, "refers to a missing tensor");
  p->buffers[ci].index = idx;

  int kc = -1;
  for (int i = 0; i < p->n_consts && kc < 0; i++)
    if (p->consts[i].rank >= 1) kc = i;
  ck_assert_int_ge(kc, 0);
  p->consts[kc].dims[0] += 1;
  expect_rejected(&b, "shape or size is invalid");
  p->consts[kc].dims[0] -= 1;

  const void *cubin = b.images[0].cubin;
  b.images[0].cubin = "NOTANELF-NOTANELF";
  b.images[0].cubin_len = 17;
  expect_rejected(&b, "not an ELF image");
  b.images[0].cubin = cubin;

  gc_bundle_free(&b);
  free(bytes);
}
END_TEST

/* ==== TMA tensor maps (bundle format 5) ==================================================== */

/* Two maps over the net's input x (f32[5, 40], 800 bytes): rows of 32 floats under a
 * 128-byte swizzle, and a rank-3 view from byte 16 whose last element is the buffer's
 * last (the bounds check's edge). */
static void tmap_pair(gc_lp_tmap *t, int xbuf) {
  memset(t, 0, 2 * sizeof *t);
  t[0] = (gc_lp_tmap){.buffer = xbuf, .dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {40, 5},
                      .strides = {4, 160}, .box = {32, 5}, .offset = 0, .swizzle = 128};
  t[1] = (gc_lp_tmap){.buffer = xbuf, .dtype = GRAPHC_DTYPE_F32, .rank = 3, .dims = {4, 9, 5},
                      .strides = {4, 16, 160}, .box = {4, 2, 1}, .offset = 16, .swizzle = 0};
}

/* The input buffer of x (input 0) in plan p. */
static int input_buffer(const gc_launch_plan *p) {
  for (int i = 0; i < p->n_buffers; i++)
    if (p->buffers[i].kind == GC_LP_INPUT && p->buffers[i].index == 0) return i;
  return -1;
}

/* A plan with tensor maps (and a kernel parameter naming one) is written and read back
 * field by field, and writes the same bytes again. */
START_TEST(tmaps_round_trip) {
  fixture f;
  fixture_init(&f, "tmaps");
  const char *path = compile_bundle(&f, "net.gcx", "--embed-weights");
  gc_bundle b;
  char *bytes;
  read_bundle(path, &b, &bytes);
  gc_launch_plan *p = &b.plans[0];
  ck_assert_int_eq(p->n_tmaps, 0);
  int xbuf = input_buffer(p);
  ck_assert_int_ge(xbuf, 0);
  ck_assert_int_eq(p->buffers[xbuf].bytes, 800);
  gc_lp_tmap tm[2];
  tmap_pair(tm, xbuf);
  p->n_tmaps = 2;
  p->tmaps = tm;
  /* kernel 0 gains a last parameter: tensor map 1 */
  gc_lp_kernel *k = &p->kernels[0];
  int np = k->n_params;
  gc_lp_param *params = calloc((size_t)np + 1, sizeof *params);
  ck_assert_ptr_nonnull(params);
  memcpy(params, k->params, (size_t)np * sizeof *params);
  params[np] = (gc_lp_param){GC_LP_PARAM_TMAP, 1, 0};
  k->params = params;
  k->n_params = np + 1;

  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  void *out = NULL, *again = NULL;
  size_t len = 0, len2 = 0;
  ck_assert_int_eq(gc_bundle_write(&b, 1, &out, &len, &d), 0);
  gc_bundle r;
  int rc = gc_bundle_read(&r, out, len, "tmaps.gcx", &d);
  ck_assert_msg(rc == 0, "read back: %s", d.n ? d.items[0].msg : "?");
  ck_assert_uint_eq(r.format, 5);
  const gc_launch_plan *q = &r.plans[0];
  ck_assert_int_eq(q->n_tmaps, 2);
  for (int i = 0; i < 2; i++) {
    const gc_lp_tmap *a = &tm[i], *c = &q->tmaps[i];
    ck_assert_int_eq(c->buffer, a->buffer);
    ck_assert_int_eq(c->dtype, a->dtype);
    ck_assert_int_eq(c->rank, a->rank);
    ck_assert_uint_eq(c->offset, a->offset);
    ck_assert_int_eq(c->swizzle, a->swizzle);
    for (int j = 0; j < a->rank; j++) {
      ck_assert_int_eq(c->dims[j], a->dims[j]);
      ck_assert_int_eq(c->strides[j], a->strides[j]);
      ck_assert_int_eq(c->box[j], a->box[j]);
    }
  }
  ck_assert_int_eq(q->kernels[0].n_params, np + 1);
  ck_assert_int_eq(q->kernels[0].params[np].kind, GC_LP_PARAM_TMAP);
  ck_assert_int_eq(q->kernels[0].params[np].value, 1);
  ck_assert_int_eq(gc_bundle_write(&r, 1, &again, &len2, &d), 0);
  ck_assert_msg(len2 == len && memcmp(again, out, len) == 0, "read + write changed the bytes");
  free(again);
  gc_bundle_free(&r);
  free(out);
  gc_diags_free(&d);
  gc_bundle_free(&b);
  free(params);
  free(bytes);
}
END_TEST

/* Tensor maps cuTensorMapEncodeTiled would refuse, or that reach past their buffer,
 * and parameters naming a missing map: each named when the bundle is read. */
START_TEST(tmaps_invalid_rejected) {
  fixture f;
  fixture_init(&f, "tmaps-bad");
  const char *path = compile_bundle(&f, "net.gcx", "--embed-weights");
  gc_bundle b;
  char *bytes;
  read_bundle(path, &b, &bytes);
  gc_launch_plan *p = &b.plans[0];
  int xbuf = input_buffer(p);
  ck_assert_int_ge(xbuf, 0);
  gc_lp_tmap tm[2];
  p->n_tmaps = 2;
  p->tmaps = tm;
  /* Map MAP of a good pair changed by STMT (on t) is rejected with MSG. */
#define REJECT(MAP, STMT, MSG)     \
  do {                             \
    tmap_pair(tm, xbuf);           \
    gc_lp_tmap *t = &tm[MAP];      \
    STMT;                          \
    expect_rejected(&b, MSG);      \
  } while (0)
  REJECT(0, t->strides[1] = 164, "tensor map 0: stride 1 (164 bytes) is not a multiple of 16");
  REJECT(1, t->strides[2] = INT64_C(1) << 40, "tensor map 1: stride 2 (1099511627776 bytes) is not");
  REJECT(0, t->box[0] = 40, "tensor map 0: the box's rows are 160 bytes, wider than its 128-byte swizzle");
  REJECT(1, t->box[0] = 2, "tensor map 1: the box's rows are 8 bytes, not a multiple of 16");
  REJECT(1, t->box[1] = 257, "tensor map 1: box dim 1 is 257 (1 to 256)");
  REJECT(1, t->box[2] = 0, "tensor map 1: box dim 2 is 0 (1 to 256)");
  REJECT(1, t->strides[0] = 2, "tensor map 1: stride 0 is 2 bytes, not the element size 4");
  REJECT(1, t->dims[2] = 0, "tensor map 1: dim 2 is 0 (1 to 2^32)");
  REJECT(0, t->dims[1] = (INT64_C(1) << 32) + 1, "tensor map 0: dim 1 is 4294967297 (1 to 2^32)");
  REJECT(1, t->dims[1] = 10, "tensor map 1 reaches past the end of buffer");  /* 816 bytes of 800 */
  REJECT(1, t->offset = 32, "tensor map 1 reaches past the end of buffer");
  REJECT(1, t->offset = UINT64_MAX - 15, "tensor map 1 reaches past the end of buffer");
  REJECT(1, t->offset = 8, "tensor map 1: offset 8 is not a multiple of 16");
  REJECT(0, t->dtype = GRAPHC_DTYPE_I32, "tensor map 0 has dtype");
  REJECT(0, t->rank = 1, "tensor map 0 has rank 1 (2 to 5)");
  REJECT(0, t->rank = 6, "a tensor map's rank is too large");  /* the reader's count check */
  REJECT(1, t->swizzle = 64, "tensor map 1 has swizzle 64 (0 or 128)");
  REJECT(0, t->buffer = p->n_buffers, "tensor map 0 refers to a missing buffer");
#undef REJECT
  tmap_pair(tm, xbuf);
  /* a parameter naming map 2 of 2 */
  gc_lp_kernel *k = &p->kernels[0];
  ck_assert_int_ge(k->n_params, 1);
  gc_lp_param saved = k->params[0];
  k->params[0] = (gc_lp_param){GC_LP_PARAM_TMAP, 2, 0};
  expect_rejected(&b, "parameter 0 names tensor map 2 of 2");
  k->params[0] = saved;
  /* and, restored, the plan is good again */
  void *out = NULL;
  size_t len = 0;
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_eq(gc_bundle_write(&b, 1, &out, &len, &d), 0);
  gc_bundle r;
  ck_assert_int_eq(gc_bundle_read(&r, out, len, "good.gcx", &d), 0);
  gc_bundle_free(&r);
  free(out);
  gc_diags_free(&d);
  gc_bundle_free(&b);
  free(bytes);
}
END_TEST

/* XXH64 as written in runtime/hash.h agrees with the reference implementation
 * (values from libxxhash 0.8), in one call and streamed in odd pieces. */
START_TEST(xxh64_reference_values) {
  unsigned char buf[1000];
  for (int i = 0; i < 1000; i++) buf[i] = (unsigned char)(i * 131 + 7);
  ck_assert_uint_eq(gc_xxh64("", 0, 0), UINT64_C(0xef46db3751d8e999));
  ck_assert_uint_eq(gc_xxh64("abc", 3, 0), UINT64_C(0x44bc2cf5ad770999));
  struct { size_t n; uint64_t s0, s1; } v[] = {
      {0, UINT64_C(0xef46db3751d8e999), UINT64_C(0xd5afba1336a3be4b)},
      {1, UINT64_C(0xa96c7f0ce858bbb7), UINT64_C(0x0766883a0a47a96a)},
      {32, UINT64_C(0x07f7b8e3bc5d6e25), UINT64_C(0xdf4f0f6ea84ebbca)},
      {100, UINT64_C(0x9ddada11d3dc2d8f), UINT64_C(0xe6a0d25e6e0a7f2a)}};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    ck_assert_uint_eq(gc_xxh64(buf, v[i].n, 0), v[i].s0);
    for (size_t piece = 1; piece < 40; piece += 6) {
      gc_xxh64_state st;
      gc_xxh64_init(&st, 1);
      for (size_t at = 0; at < v[i].n; at += piece)
        gc_xxh64_update(&st, buf + at, v[i].n - at < piece ? v[i].n - at : piece);
      ck_assert_uint_eq(gc_xxh64_digest(&st), v[i].s1);
    }
  }
  /* One call equals streaming at every split of a longer input. */
  uint64_t whole = gc_xxh64(buf, 1000, 7);
  for (size_t cut = 0; cut <= 1000; cut += 37) {
    gc_xxh64_state st;
    gc_xxh64_init(&st, 7);
    gc_xxh64_update(&st, buf, cut);
    gc_xxh64_update(&st, buf + cut, 1000 - cut);
    ck_assert_uint_eq(gc_xxh64_digest(&st), whole);
  }
}
END_TEST

/* ==== choosing code for a device =============================================================== */

/* The order as "c90 p80" text. */
static void order_text(const gc_cu_image *imgs, int n, int sm, char *buf, size_t len) {
  gc_cu_try t[16];
  int k = gc_cu_image_order(imgs, n, sm, t);
  buf[0] = 0;
  for (int i = 0; i < k; i++)
    snprintf(buf + strlen(buf), len - strlen(buf), "%s%c%d", i ? " " : "", t[i].ptx ? 'p' : 'c',
             imgs[t[i].image].sm);
}

START_TEST(image_order_rules) {
  const char *ptx = "ptx";
  gc_cu_image both[] = {{80, "c", 1, ptx, NULL}, {90, "c", 1, ptx, NULL}, {86, "c", 1, NULL, NULL}};
  char got[128];
  order_text(both, 3, 90, got, sizeof got);
  ck_assert_str_eq(got, "c90 p90 p80");
  order_text(both, 3, 86, got, sizeof got);
  ck_assert_str_eq(got, "c86 c80 p80");
  order_text(both, 3, 89, got, sizeof got);
  ck_assert_str_eq(got, "c86 c80 p80");
  order_text(both, 3, 100, got, sizeof got);   /* newer major: PTX only */
  ck_assert_str_eq(got, "p90 p80");
  order_text(both, 3, 75, got, sizeof got);    /* older than all: nothing */
  ck_assert_str_eq(got, "");
  gc_cu_image cubin_only[] = {{80, "c", 1, NULL, NULL}};
  order_text(cubin_only, 1, 90, got, sizeof got);
  ck_assert_str_eq(got, "");
  order_text(cubin_only, 1, 87, got, sizeof got);
  ck_assert_str_eq(got, "c80");
  gc_cu_image ptx_only[] = {{90, NULL, 0, ptx, NULL}, {70, NULL, 0, ptx, NULL}};
  order_text(ptx_only, 2, 90, got, sizeof got);
  ck_assert_str_eq(got, "p90 p70");
  gc_cu_image_list(both, 3, got, sizeof got);
  ck_assert_str_eq(got, "cubin sm_80, sm_90, sm_86; PTX sm_80, sm_90");
  gc_cu_image_list(NULL, 0, got, sizeof got);
  ck_assert_str_eq(got, "nothing");
}
END_TEST

/* ==== reproducibility ============================================================================ */

/* Two processes in two directories (different relative paths to the model) must
 * write the same bytes: PTX, cubin and bundle, on both code paths. */
START_TEST(reproducible_outputs) {
  fixture f;
  fixture_init(&f, "repro");
  char a[700], b[700];
  snprintf(a, sizeof a, "%s/a", f.dir);
  snprintf(b, sizeof b, "%s/b/deeper", f.dir);
  ck_assert_int_eq(mkdir(a, 0700), 0);
  TU_SH_OK("mkdir -p '%s'", b);
  const char *paths[] = {"../net.graph", "../../net.graph"};
  const char *dirs[] = {a, b};
  const char *what[] = {"ptx", "cubin", "bundle"};
  for (int cg = 0; cg < 2; cg++)
    for (int w = 0; w < 3; w++) {
      char *bytes[2];
      size_t len[2];
      for (int i = 0; i < 2; i++) {
        char out[800];
        snprintf(out, sizeof out, "%s/out.%s.%d", dirs[i], what[w], cg);
        TU_SH_OK("cd '%s' && GRAPHC_CACHE=off '%s' compile %s --bind B=5 --weights ../%snet.safetensors "
               "--codegen %s --arch sm_90%s --emit %s -o '%s'",
               dirs[i], GRAPHC_CLI, paths[i], i ? "../" : "", cg ? "llvm" : "nvrtc",
               w == 2 ? ",sm_80 --embed-weights" : "", what[w], out);
        bytes[i] = tu_read_file(out, &len[i]);
        ck_assert_ptr_nonnull(bytes[i]);
      }
      ck_assert_msg(len[0] == len[1] && memcmp(bytes[0], bytes[1], len[0]) == 0,
                    "%s via %s differs between two compiles (%zu vs %zu bytes)", what[w],
                    cg ? "llvm" : "nvrtc", len[0], len[1]);
      free(bytes[0]);
      free(bytes[1]);
    }
}
END_TEST

/* LLVM path, two identical matmul kernels (other operands): the bundle's PTX
 * has one entry and an alias line, and both plan kernels name that entry;
 * GRAPHC_COMPILE_THREADS=1, =3 and a malformed value (ignored) write the same bundle. */
START_TEST(llvm_identical_kernels_compiled_once) {
  fixture f;
  fixture_init(&f, "dedup");
  char graph[700], weights[700];
  snprintf(graph, sizeof graph, "%s/twice.graph", f.dir);
  snprintf(weights, sizeof weights, "%s/twice.safetensors", f.dir);
  FILE *fp = fopen(graph, "w");
  ck_assert_ptr_nonnull(fp);
  fputs("version 1;\n"
        "graph @twice(%x: f32[8, 32]) -> (f32[8, 32]) {\n"
        "  param %u: f32[32, 32] = \"u\";\n"
        "  param %v: f32[32, 32] = \"v\";\n"
        "  %a = matmul(%x, %u);\n"
        "  %b = matmul(%a, %v);\n"
        "  return %b;\n"
        "}\n", fp);
  fclose(fp);
  TU_SH_OK("'%s' weights '%s' --random -o '%s'", GRAPHC_CLI, graph, weights);
  char out[3][800];
  static const char *const threads[3] = {"1", "3", "-2x"};
  for (int i = 0; i < 3; i++) {
    snprintf(out[i], sizeof out[i], "%s/twice%d.gcx", f.dir, i);
    TU_SH_OK("GRAPHC_CACHE=off GRAPHC_COMPILE_THREADS=%s '%s' compile '%s' --weights '%s' --codegen llvm "
           "--arch sm_90 -o '%s'", threads[i], GRAPHC_CLI, graph, weights, out[i]);
  }
  size_t len = 0, len1 = 0, len2 = 0;
  char *bytes = tu_read_file(out[0], &len), *bytes1 = tu_read_file(out[1], &len1);
  char *bytes2 = tu_read_file(out[2], &len2);
  ck_assert(bytes && bytes1 && len == len1 && memcmp(bytes, bytes1, len) == 0);
  ck_assert(bytes2 && len2 == len && memcmp(bytes, bytes2, len) == 0);
  free(bytes2);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_bundle gb;
  ck_assert_int_eq(gc_bundle_read(&gb, bytes, len, out[0], &d), 0);
  ck_assert_int_eq(gb.n_images, 1);
  const char *ptx = gb.images[0].ptx;
  ck_assert_ptr_nonnull(ptx);
  const gc_launch_plan *lp = &gb.plans[0];
  ck_assert_int_eq(lp->n_kernels, 2);
  ck_assert_str_eq(lp->kernels[0].name, lp->kernels[1].name);
  char entry[300];
  snprintf(entry, sizeof entry, ".entry %s(", lp->kernels[0].name);
  const char *e = strstr(ptx, entry);
  ck_assert_msg(e && !strstr(e + 1, ".entry "), "one entry, for %s:\n%s", lp->kernels[0].name, ptx);
  ck_assert_ptr_nonnull(strstr(ptx, "\n// graphc alias "));
  ck_assert(lp->kernels[0].params[0].value != lp->kernels[1].params[0].value);  /* own arguments */
  gc_bundle_free(&gb);
  gc_diags_free(&d);
  free(bytes);
  free(bytes1);
}
END_TEST

/* ==== precision ================================================================================== */

/* The interpreter's outputs of examples/mlp.graph (B=4, weights w) at precision p on `in`. */
static graphc_tensor_t *interp_mlp(const char *w, graphc_precision_t p, const graphc_tensor_t *in) {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_load_file(ctx, tu_src("examples/mlp.graph"), &m, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(m, "B", 4, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_weights(m, w, &err), GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  o.precision = p;
  ck_assert_msg(graphc_compile(m, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  graphc_tensor_t *out = calloc(1, sizeof *out);
  *out = (graphc_tensor_t){GRAPHC_DTYPE_F32, 2, {4, 10}, calloc(40, sizeof(float)), 40 * sizeof(float)};
  ck_assert_msg(graphc_executable_run(exe, in, 1, out, 1, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return out;
}

/* --precision f16 --embed-weights: the MLP's params are f16 `from f32`, so the bundle's
 * weights section holds their f16 bytes (each the file's f32 value rounded to nearest
 * even) and the bundle is smaller by about half the weights; with a GPU it runs and
 * matches the interpreter at the same precision. */
START_TEST(precision_embeds_converted_weights) {
  const char *dir = tu_fresh_dir("bundle-prec");
  char w[700], b32[700], b16[700];
  snprintf(w, sizeof w, "%s/mlp.safetensors", dir);
  snprintf(b32, sizeof b32, "%s/f32.gcx", dir);
  snprintf(b16, sizeof b16, "%s/f16.gcx", dir);
  TU_SH_OK("'%s' weights '%s' --bind B=4 --random --seed %llu -o '%s'", GRAPHC_CLI, tu_src("examples/mlp.graph"),
           (unsigned long long)(g_seed % 1000), w);
  const char *cmd = "GRAPHC_CACHE=off '%s' compile '%s' --bind B=4 --weights '%s' --arch sm_%d --embed-weights %s -o '%s'";
  int sm = g_have_device ? g_device_sm : 90;
  TU_SH_OK(cmd, GRAPHC_CLI, tu_src("examples/mlp.graph"), w, sm, "", b32);
  TU_SH_OK(cmd, GRAPHC_CLI, tu_src("examples/mlp.graph"), w, sm, "--precision f16", b16);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_safetensors *st = gc_safetensors_load(w, &d);
  ck_assert_ptr_nonnull(st);
  size_t file = 0, len16 = 0, len32 = 0;
  for (int i = 0; i < st->n; i++) file += st->tensors[i].nbytes;
  char *bytes16 = tu_read_file(b16, &len16), *bytes32 = tu_read_file(b32, &len32);
  ck_assert_ptr_nonnull(bytes16);
  ck_assert_ptr_nonnull(bytes32);
  ck_assert_msg(len16 + file / 2 - 16384 <= len32 && len16 >= file / 2,
                "f16 bundle %zu bytes, f32 bundle %zu bytes, %zu bytes of f32 weights", len16, len32, file);
  gc_bundle gb;
  ck_assert_int_eq(gc_bundle_read(&gb, bytes16, len16, b16, &d), 0);
  size_t wbytes = 0;
  int params = 0;
  for (int c = 0; c < gb.plans[0].n_consts; c++) {
    const gc_lp_const *k = &gb.plans[0].consts[c];
    if (!k->is_param) continue;
    const gc_st_tensor *t = gc_safetensors_find(st, k->name);
    ck_assert_msg(t && t->dtype == GRAPHC_DTYPE_F32 && k->dtype == GRAPHC_DTYPE_F16 && k->bytes * 2 == t->nbytes,
                  "weight %s", k->name);
    for (size_t i = 0; i < k->bytes / 2; i++) {
      float f;
      uint16_t h;
      memcpy(&f, (const char *)t->data + 4 * i, 4);
      memcpy(&h, (const char *)k->data + 2 * i, 2);
      ck_assert_msg(h == gc_f64_to_f16(f), "weight %s[%zu]: %04x for %.9g", k->name, i, h, (double)f);
    }
    wbytes += k->bytes;
    params++;
  }
  ck_assert_int_eq(params, 4);
  ck_assert_uint_eq(wbytes, file / 2);
  gc_bundle_free(&gb);
  graphc_rt_bundle_t *rb = must_load(b16);
  graphc_tensor_info_t t;
  int emb = 0;
  ck_assert_int_eq(graphc_rt_weight_info(rb, 0, &t, &emb), GRAPHC_STATUS_OK);
  ck_assert(emb && t.dtype == GRAPHC_DTYPE_F16);
  if (g_have_device) {
    uint64_t s = g_seed;
    graphc_tensor_t *in, *out;
    make_io(rb, &s, &in, &out);
    graphc_error_t err;
    ck_assert_msg(graphc_rt_run(rb, in, 1, out, 1, &err) == GRAPHC_STATUS_OK, "%s", err.message);
    graphc_tensor_t *ref = interp_mlp(w, GRAPHC_PRECISION_F16, in);
    double atol, rtol;
    tu_tolerance(GRAPHC_DTYPE_F16, 1, &atol, &rtol);
    tu_cmp c = tu_compare(ref->data, out->data, GRAPHC_DTYPE_F32, 40, 4 * atol, 4 * rtol);
    ck_assert_msg(c.n_bad == 0, "f16 bundle vs interp: first at %lld: ref %.9g got %.9g (seed %llu)",
                  (long long)c.first_bad, c.ref_bad, c.got_bad, (unsigned long long)g_seed);
    tu_free_tensors(in, 1);
    tu_free_tensors(out, 1);
    tu_free_tensors(ref, 1);
  }
  graphc_rt_bundle_destroy(rb);
  gc_safetensors_free(st);
  gc_diags_free(&d);
  free(bytes16);
  free(bytes32);
}
END_TEST

/* ==== the CLI ===================================================================================== */

START_TEST(cli_errors) {
  fixture f;
  fixture_init(&f, "clierr");
  char *out = NULL;
  ck_assert_int_eq(tu_sh(&out, "'%s' compile '%s' --bind B=5 --arch sm_90a -o '%s/x.gcx'", GRAPHC_CLI, f.graph, f.dir), 1);
  ck_assert_msg(strstr(out, "unknown CUDA architecture 'sm_90a'"), "%s", out);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "'%s' compile '%s' --bind B=5 --arch sm_90,volta -o '%s/x.gcx'", GRAPHC_CLI, f.graph, f.dir), 1);
  ck_assert_msg(strstr(out, "'volta'"), "%s", out);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "'%s' compile '%s' --bind B=5 --emit bundle", GRAPHC_CLI, f.graph), 1);
  ck_assert_msg(strstr(out, "give -o MODEL.gcx"), "%s", out);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "'%s' compile '%s' --bind B=5 --backend interp -o '%s/x.gcx'", GRAPHC_CLI, f.graph, f.dir), 1);
  ck_assert_msg(strstr(out, "--backend must be cuda"), "%s", out);
  free(out);
  /* Unbound symbolic dim: the model's own diagnostic. */
  ck_assert_int_eq(tu_sh(&out, "'%s' compile '%s' -o '%s/x.gcx'", GRAPHC_CLI, f.graph, f.dir), 1);
  ck_assert_msg(strstr(out, "B"), "%s", out);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "CC=/nonexistent/cc '%s' compile '%s' --bind B=5 --emit c -o '%s/net'", GRAPHC_CLI, f.graph, f.dir), 1);
  ck_assert_msg(strstr(out, "the C compiler failed"), "%s", out);
  free(out);
  char h[800];
  snprintf(h, sizeof h, "%s/net.h", f.dir);
  ck_assert_msg(access(h, F_OK) != 0, "a header was written although the compile failed");
  ck_assert_int_eq(tu_sh(&out, "'%s' compile x.graph --emit bundle --help", GRAPHC_CLI), 0);
  ck_assert_msg(strstr(out, "--embed-weights") && strstr(out, "--no-ptx"), "%s", out);
  free(out);
}
END_TEST

/* --emit c: the header compiles, the object links with libgraphc_rt alone, and
 * the program loads its embedded bundle (a run needs a GPU). */
START_TEST(emit_c_links_with_rt) {
  fixture f;
  fixture_init(&f, "emitc");
  TU_SH_OK("GRAPHC_CACHE=off '%s' compile '%s' --bind B=5 --arch sm_90,sm_80 --embed-weights --emit c -o '%s/net.o'",
         GRAPHC_CLI, f.graph, f.dir);
  char prog[800];
  snprintf(prog, sizeof prog, "%s/main.c", f.dir);
  FILE *fp = fopen(prog, "w");
  fputs("#include <stdio.h>\n#include <string.h>\n#include \"net.h\"\n"
        "int main(void) {\n"
        "  static float x[NET_IN_X_NUMEL], x0[NET_IN_0_NUMEL], s[NET_OUT_S_NUMEL], m[NET_OUT_M_NUMEL], s2[NET_OUT_S_2_NUMEL];\n"
        "  net_t *n; graphc_error_t err;\n"
        "  if (net_create(&n, &err) != GRAPHC_STATUS_OK) { printf(\"create: %s\\n\", err.message); return 1; }\n"
        "  printf(\"inputs %d outputs %d dims %d %d %d bytes %zu graph %s weights %zu\\n\", NET_NUM_INPUTS,\n"
        "         NET_NUM_OUTPUTS, NET_IN_X_DIM0, NET_IN_X_DIM1, NET_OUT_M_RANK, (size_t)net_gcx_size,\n"
        "         graphc_rt_bundle_meta(net_bundle(n), \"graph\"), graphc_rt_num_weights(net_bundle(n)));\n"
        "  graphc_status_t st = net_run(n, x, x0, s, m, s2, &err);\n"
        "  printf(\"run: %s\\n\", graphc_status_string(st));\n"
        "  net_destroy(n);\n"
        "  return st == GRAPHC_STATUS_OK || st == GRAPHC_STATUS_BACKEND_UNAVAILABLE ? 0 : 2;\n}\n", fp);
  fclose(fp);
  char *out = NULL;
  int rc = tu_sh(&out, "cd '%s' && cc -std=c99 -Wall -Werror -I'%s/include' -o prog main.c net.o "
                     "-L'%s' -Wl,-rpath,'%s' -lgraphc_rt%s && ./prog",
               f.dir, GRAPHC_SOURCE_DIR, GRAPHC_BINARY_DIR, GRAPHC_BINARY_DIR,
#ifdef __SANITIZE_ADDRESS__
               " -fsanitize=address,undefined"
#else
               ""
#endif
  );
  ck_assert_msg(rc == 0, "%s", out);
  ck_assert_msg(strstr(out, "inputs 2 outputs 3 dims 5 40 1") && strstr(out, "graph net weights 3"), "%s", out);
  ck_assert_msg(strstr(out, g_have_device ? "run: ok" : "run: backend unavailable"), "%s", out);
  free(out);
  /* The program needs libgraphc_rt only. */
  rc = tu_sh(&out, "readelf -d '%s/prog' | grep NEEDED", f.dir);
  ck_assert_msg(strstr(out, "libgraphc_rt.so") && !strstr(out, "libgraphc.so"), "%s", out);
  free(out);
}
END_TEST

/* ==== with a device ================================================================================= */

/* Interpreter outputs of f's graph (B=5) for the given inputs. */
static graphc_tensor_t *interp_outputs(const fixture *f, const char *weights, const graphc_tensor_t *in) {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_load_file(ctx, f->graph, &m, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(m, "B", 5, &err), GRAPHC_STATUS_OK);
  if (weights) ck_assert_int_eq(graphc_model_set_weights(m, weights, &err), GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  ck_assert_msg(graphc_compile(m, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  graphc_tensor_t *out = calloc(3, sizeof *out);
  for (size_t i = 0; i < 3; i++) {
    graphc_tensor_info_t t;
    graphc_executable_output_info(exe, i, &t);
    out[i].dtype = t.dtype;
    out[i].rank = t.rank;
    memcpy(out[i].dims, t.dims, sizeof t.dims);
    out[i].nbytes = t.nbytes;
    out[i].data = calloc(1, t.nbytes);
  }
  ck_assert_msg(graphc_executable_run(exe, in, 2, out, 3, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return out;
}

/* Outputs within the chain tolerance of the reference. */
static void expect_close(const graphc_tensor_t *ref, const graphc_tensor_t *got, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    double atol, rtol;
    tu_tolerance(ref[i].dtype, 1, &atol, &rtol);
    int64_t numel = (int64_t)(ref[i].nbytes / graphc_dtype_size(ref[i].dtype));
    tu_cmp c = tu_compare(ref[i].data, got[i].data, ref[i].dtype, numel, atol, rtol);
    ck_assert_msg(c.n_bad == 0, "%s: output %zu: %lld of %lld differ; first at %lld: ref %.9g got %.9g (seed %llu)",
                  what, i, (long long)c.n_bad, (long long)numel, (long long)c.first_bad, c.ref_bad,
                  c.got_bad, (unsigned long long)g_seed);
  }
}

/* Run b on fresh random inputs and compare with the interpreter. */
static void run_and_compare(const fixture *f, graphc_rt_bundle_t *b, const char *weights, uint64_t seed,
                            const char *what) {
  uint64_t s = seed;
  graphc_tensor_t *in, *out;
  make_io(b, &s, &in, &out);
  graphc_error_t err;
  graphc_status_t st = graphc_rt_run(b, in, 2, out, 3, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: %s: %s\n%s", what, graphc_status_string(st), err.message,
                graphc_rt_bundle_stats(b));
  graphc_tensor_t *ref = interp_outputs(f, weights, in);
  expect_close(ref, out, 3, what);
  ck_assert_msg(memcmp(out[0].data, out[2].data, out[0].nbytes) == 0, "%s: repeated output differs", what);
  tu_free_tensors(in, 2);
  tu_free_tensors(out, 3);
  tu_free_tensors(ref, 3);
}

START_TEST(device_bundles_match_interp) {
  NEED_DEVICE();
  fixture f;
  fixture_init(&f, "gpu");
  char flags[128];
  for (int cg = 0; cg < 2; cg++)
    for (int eager = 0; eager < 2; eager++) {
      snprintf(flags, sizeof flags, "--embed-weights --codegen %s --arch sm_%d,sm_80%s", cg ? "llvm" : "nvrtc",
               g_device_sm, eager ? " --eager" : "");
      graphc_rt_bundle_t *b = must_load(compile_bundle(&f, "net.gcx", flags));
      for (int r = 0; r < 3; r++) run_and_compare(&f, b, NULL, g_seed + 10 * r + cg, flags);
      const char *st = graphc_rt_bundle_stats(b);
      char want[64];
      snprintf(want, sizeof want, "module loaded from cubin sm_%d", g_device_sm);
      ck_assert_msg(strstr(st, want), "%s: expected the exact cubin:\n%s", flags, st);
      ck_assert_msg(strstr(st, eager ? "(eager launches)" : "(CUDA graph replay, one chain)"), "%s", st);
      printf("%s:\n%s", flags, st);
      graphc_rt_bundle_destroy(b);
    }
}
END_TEST

/* Device pointers in and out (no copies by the runtime). */
START_TEST(device_run_device_pointers) {
  NEED_DEVICE();
  fixture f;
  fixture_init(&f, "devptr");
  graphc_rt_bundle_t *b = must_load(compile_bundle(&f, "net.gcx", "--embed-weights"));
  graphc_error_t err;
  ck_assert_int_eq(graphc_rt_bundle_prepare(b, &err), GRAPHC_STATUS_OK);
  const gc_cu_driver *cu = gc_cu_driver_get(tu_rt_settings(), NULL);
  ck_assert_ptr_nonnull(cu);
  CUdevice dev;
  CUcontext ctx;
  ck_assert_int_eq(cu->DeviceGet(&dev, 0), CUDA_SUCCESS);
  ck_assert_int_eq(cu->DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  ck_assert_int_eq(cu->CtxPushCurrent(ctx), CUDA_SUCCESS);
  uint64_t s = g_seed + 20;
  graphc_tensor_t *in, *out;
  make_io(b, &s, &in, &out);
  graphc_tensor_t din[2], dout[3];
  CUdeviceptr ptrs[5];
  for (int i = 0; i < 5; i++) {
    graphc_tensor_t *h = i < 2 ? &in[i] : &out[i - 2];
    graphc_tensor_t *dv = i < 2 ? &din[i] : &dout[i - 2];
    ck_assert_int_eq(cu->MemAlloc(&ptrs[i], h->nbytes), CUDA_SUCCESS);
    if (i < 2) ck_assert_int_eq(cu->MemcpyHtoD(ptrs[i], h->data, h->nbytes), CUDA_SUCCESS);
    *dv = *h;
    dv->data = (void *)(uintptr_t)ptrs[i];
  }
  for (int rep = 0; rep < 2; rep++)
    ck_assert_msg(graphc_rt_run_device(b, din, 2, dout, 3, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(cu->MemcpyDtoH(out[i].data, ptrs[2 + i], out[i].nbytes), CUDA_SUCCESS);
  graphc_tensor_t *ref = interp_outputs(&f, NULL, in);
  expect_close(ref, out, 3, "run_device");
  /* Then host tensors again on the same handle. */
  graphc_tensor_t *out2 = tu_clone_outputs(out, 3);
  ck_assert_int_eq(graphc_rt_run(b, in, 2, out2, 3, &err), GRAPHC_STATUS_OK);
  for (int i = 0; i < 3; i++) ck_assert(memcmp(out2[i].data, out[i].data, out[i].nbytes) == 0);
  for (int i = 0; i < 5; i++) cu->MemFree(ptrs[i]);
  CUcontext dummy;
  cu->CtxPopCurrent(&dummy);
  cu->DevicePrimaryCtxRelease(dev);
  tu_free_tensors(in, 2);
  tu_free_tensors(out, 3);
  tu_free_tensors(out2, 3);
  tu_free_tensors(ref, 3);
  graphc_rt_bundle_destroy(b);
}
END_TEST

/* An older arch's PTX runs through the driver JIT; a wrong arch without PTX is a clear error. */
START_TEST(device_arch_fallbacks) {
  NEED_DEVICE();
  fixture f;
  fixture_init(&f, "arch");
  int older = g_device_sm / 10 > 8 ? 80 : 70;   /* another major version, below the device */
  char flags[128];
  snprintf(flags, sizeof flags, "--embed-weights --arch sm_%d", older);
  graphc_rt_bundle_t *b = must_load(compile_bundle(&f, "old.gcx", flags));
  run_and_compare(&f, b, NULL, g_seed + 30, "older arch via PTX");
  ck_assert_msg(strstr(graphc_rt_bundle_stats(b), "PTX (driver JIT)"), "%s", graphc_rt_bundle_stats(b));
  graphc_rt_bundle_destroy(b);

  snprintf(flags, sizeof flags, "--embed-weights --no-ptx --arch sm_%d", older);
  b = must_load(compile_bundle(&f, "noptx.gcx", flags));
  graphc_error_t err;
  graphc_status_t st = graphc_rt_bundle_prepare(b, &err);
  char want[64];
  snprintf(want, sizeof want, "the code has cubin sm_%d", older);
  ck_assert_msg(st == GRAPHC_STATUS_UNSUPPORTED && strstr(err.message, "no code this device can run") &&
                    strstr(err.message, want),
                "%s: %s", graphc_status_string(st), err.message);
  /* The failure is not sticky: it says the same again, and nothing crashed. */
  ck_assert_int_eq(graphc_rt_bundle_prepare(b, &err), GRAPHC_STATUS_UNSUPPORTED);
  graphc_rt_bundle_destroy(b);

  /* A newer arch only: nothing runs here either (PTX of a newer sm cannot be JITted down). */
  b = must_load(compile_bundle(&f, "newer.gcx", "--embed-weights --arch sm_120"));
  ck_assert_int_eq(graphc_rt_bundle_prepare(b, &err), GRAPHC_STATUS_UNSUPPORTED);
  ck_assert_msg(strstr(err.message, "PTX sm_120"), "%s", err.message);
  graphc_rt_bundle_destroy(b);
}
END_TEST

/* Weights given at run time, then replaced after setup (uploaded at once). */
START_TEST(device_weights_at_run_time) {
  NEED_DEVICE();
  fixture f;
  fixture_init(&f, "wrt");
  graphc_rt_bundle_t *b = must_load(compile_bundle(&f, "net.gcx", ""));
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_safetensors *w = gc_safetensors_load(f.weights, &d);
  ck_assert_ptr_nonnull(w);
  graphc_error_t err;
  for (int i = 0; i < w->n; i++)
    ck_assert_int_eq(graphc_rt_set_weight(b, w->tensors[i].name, w->tensors[i].data, w->tensors[i].nbytes, &err),
                     GRAPHC_STATUS_OK);
  run_and_compare(&f, b, NULL, g_seed + 40, "weights set before the first run");
  /* New bias after setup: the next run uses it. */
  gc_st_tensor *ts = calloc((size_t)w->n, sizeof *ts);
  float bias[24];
  uint64_t s = g_seed + 41;
  for (int i = 0; i < 24; i++) bias[i] = (float)(tu_unit(&s) * 4 - 2);
  for (int i = 0; i < w->n; i++) {
    ts[i] = w->tensors[i];
    if (strcmp(ts[i].name, "layer.bias") == 0) ts[i].data = bias;
  }
  char path2[800];
  snprintf(path2, sizeof path2, "%s/net2.safetensors", f.dir);
  ck_assert_int_eq(gc_safetensors_write(path2, ts, w->n, &d), 0);
  ck_assert_int_eq(graphc_rt_set_weight(b, "layer.bias", bias, sizeof bias, &err), GRAPHC_STATUS_OK);
  /* the bias also feeds the prologue (reduce_max of it), which must run again */
  ck_assert_msg(strstr(graphc_rt_bundle_stats(b), "read only weights: run once per weights"), "%s",
                graphc_rt_bundle_stats(b));
  run_and_compare(&f, b, path2, g_seed + 42, "weight replaced after setup");
  free(ts);
  gc_safetensors_free(w);
  gc_diags_free(&d);
  graphc_rt_bundle_destroy(b);
}
END_TEST

/* Several bundles at once, destroyed in any order, loaded from memory too. */
START_TEST(device_many_bundles) {
  NEED_DEVICE();
  fixture f;
  fixture_init(&f, "many");
  const char *p1 = compile_bundle(&f, "a.gcx", "--embed-weights");
  const char *p2 = compile_bundle(&f, "b.gcx", "--embed-weights --codegen llvm");
  size_t len = 0;
  char *bytes = tu_read_file(p1, &len);
  char *odd = malloc(len + 3);
  memcpy(odd + 3, bytes, len);
  graphc_rt_bundle_t *b[3] = {must_load(p1), must_load(p2), NULL};
  graphc_error_t err;
  ck_assert_int_eq(graphc_rt_bundle_load_memory(odd + 3, len, &b[2], &err), GRAPHC_STATUS_OK);
  for (int i = 0; i < 3; i++) run_and_compare(&f, b[i], NULL, g_seed + 50 + i, "one of three");
  graphc_rt_bundle_destroy(b[1]);
  run_and_compare(&f, b[0], NULL, g_seed + 60, "after another was destroyed");
  run_and_compare(&f, b[2], NULL, g_seed + 61, "from unaligned memory");
  graphc_rt_bundle_destroy(b[0]);
  graphc_rt_bundle_destroy(b[2]);
  free(odd);
  free(bytes);
}
END_TEST

/* Execution contexts of a bundle: threads with a context each, against the interpreter;
 * contexts left alive go with the bundle. */
typedef struct rt_worker {
  graphc_rt_bundle_t *b;
  graphc_tensor_t *in, *out;
  int bad;
  char msg[300];
} rt_worker;

static void *rt_context_worker(void *arg) {
  rt_worker *w = arg;
  graphc_rt_context_t *c = NULL;
  graphc_error_t err;
  if (graphc_rt_context_create(w->b, &c, &err) != GRAPHC_STATUS_OK) {
    w->bad = 1;
    snprintf(w->msg, sizeof w->msg, "create: %.250s", err.message);
    return NULL;
  }
  for (int r = 0; r < 50 && !w->bad; r++)
    if (graphc_rt_context_run(c, w->in, 2, w->out, 3, &err) != GRAPHC_STATUS_OK) {
      w->bad = 1;
      snprintf(w->msg, sizeof w->msg, "run %d: %.250s", r, err.message);
    }
  graphc_rt_context_destroy(c);
  return NULL;
}

START_TEST(device_contexts) {
  NEED_DEVICE();
  fixture f;
  fixture_init(&f, "ctx");
  graphc_rt_bundle_t *b = must_load(compile_bundle(&f, "net.gcx", "--embed-weights"));
  enum { T = 4 };
  rt_worker w[T];
  pthread_t th[T];
  graphc_tensor_t *ref[T];
  for (int t = 0; t < T; t++) {
    memset(&w[t], 0, sizeof w[t]);
    w[t].b = b;
    uint64_t s = g_seed + 300 + (uint64_t)t;
    make_io(b, &s, &w[t].in, &w[t].out);
    ref[t] = interp_outputs(&f, NULL, w[t].in);
  }
  /* the first run prepares the bundle: the threads race for it */
  for (int t = 0; t < T; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, rt_context_worker, &w[t]), 0);
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < T; t++) {
    ck_assert_msg(!w[t].bad, "thread %d: %s", t, w[t].msg);
    expect_close(ref[t], w[t].out, 3, "bundle context");
  }
  graphc_rt_context_t *left = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_rt_context_create(b, &left, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_rt_context_run(left, w[0].in, 1, w[0].out, 3, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "expected 2 inputs"));
  ck_assert_int_eq(graphc_rt_context_enqueue(left, w[0].in, 2, w[0].out, 3, NULL, &err),
                   GRAPHC_STATUS_INVALID_ARGUMENT);  /* pageable host memory */
  graphc_rt_bundle_destroy(b);   /* `left` goes with it */
  for (int t = 0; t < T; t++) {
    tu_free_tensors(w[t].in, 2);
    tu_free_tensors(w[t].out, 3);
    tu_free_tensors(ref[t], 3);
  }
}
END_TEST

/* Device present, and its compute capability, asked in a child (CUDA must not
 * be initialized before Check forks). */
static int probe_device(int *sm) {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    gc_diags d;
    gc_diags_init(&d, "", NULL, 0);
    gc_cu_exec *x = gc_cu_exec_open(tu_rt_settings(), &d);
    int v = x ? gc_cu_exec_props(x)->sm : 0;
    gc_cu_exec_free(x);
    if (write(fds[1], &v, sizeof v) != sizeof v) _exit(2);
    _exit(x ? 0 : 1);
  }
  close(fds[1]);
  int v = 0, st = 0;
  if (read(fds[0], &v, sizeof v) != sizeof v) v = 0;
  close(fds[0]);
  if (pid < 0 || waitpid(pid, &st, 0) < 0) return 0;
  *sm = v;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 && v > 0;
}

int main(void) {
  g_seed = tu_seed();
  g_have_device = probe_device(&g_device_sm);
  printf("test_bundle: seed %llu (GRAPHC_TEST_SEED reproduces), CUDA device: %s (sm_%d)\n",
         (unsigned long long)g_seed, g_have_device ? "yes" : "no", g_device_sm);
  Suite *s = suite_create("bundle");
  TCase *tc = tcase_create("host");
  tcase_add_test(tc, bundle_contents);
  tcase_add_test(tc, weights_supplied_at_run_time);
  tcase_add_test(tc, run_validates_tensors);
  tcase_add_test(tc, no_driver_is_unavailable);
  tcase_add_test(tc, damaged_files);
  tcase_add_test(tc, fuzz_fields_with_valid_checksum);
  tcase_add_test(tc, crafted_invalid_plans);
  tcase_add_test(tc, tmaps_round_trip);
  tcase_add_test(tc, tmaps_invalid_rejected);
  tcase_add_test(tc, image_order_rules);
  tcase_add_test(tc, xxh64_reference_values);
  tcase_add_test(tc, reproducible_outputs);
  tcase_add_test(tc, llvm_identical_kernels_compiled_once);
  tcase_add_test(tc, cli_errors);
  tcase_add_test(tc, precision_embeds_converted_weights);
  tcase_add_test(tc, emit_c_links_with_rt);
  tcase_set_timeout(tc, 600);
  suite_add_tcase(s, tc);
  TCase *td = tcase_create("device");
  tcase_add_test(td, device_bundles_match_interp);
  tcase_add_test(td, device_run_device_pointers);
  tcase_add_test(td, device_arch_fallbacks);
  tcase_add_test(td, device_weights_at_run_time);
  tcase_add_test(td, device_many_bundles);
  tcase_add_test(td, device_contexts);
  tcase_set_timeout(td, 600);
  suite_add_tcase(s, td);
  int rc = tu_run_suite(s);
  if (rc == 0 && !g_have_device) {
    printf("SKIPPED: no CUDA device (the host cases passed; the device cases need a GPU)\n");
    return 77;
  }
  return rc;
}
