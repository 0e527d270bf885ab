/* mkseeds.c - small hand-made seeds for fuzz_bundle and fuzz_cache, written
 * with the library's own writers (gc_bundle_write, gc_cache_put), so they need
 * no GPU, no NVRTC and no example build. tests/fuzz/build.sh runs it:
 *
 *   mkseeds BUNDLE_DIR CACHE_DIR
 *
 * Bundles: one plan of two kernels (items and blocks launches, buffer and i64
 * parameters, input, output, const and temp buffers, a folded constant and a
 * param), with and without embedded weights, one and two architectures
 * (cubin + PTX, PTX only), two distinct plans (the second with a TMA tensor
 * map parameter), and a plan without consts.
 * The "cubins" are ELF-looking bytes: only the loader's checks see them.
 * Cache entries: zero, one, two and three blobs, empty blobs included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/bundle.h"
#include "driver/cache.h"
#include "driver/settings.h"

static const char k_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                            ".visible .entry k0(.param .u64 a, .param .u64 b, .param .u64 n) { ret; }\n"
                            ".visible .entry k1(.param .u64 a, .param .u64 b, .param .u64 c) { ret; }\n";
static const unsigned char k_cubin[48] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, 7};
static const float k_w[6] = {1, 2, 3, 4, 5, 6};
static const float k_c[3] = {0.5f, -1, 2};

/* Write len bytes to dir/name. */
static void put_file(const char *dir, const char *name, const void *p, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "mkseeds: cannot write %s\n", path);
    exit(1);
  }
}

/* The two-kernel plan; variant 1 changes a launch shape and passes k0 a tensor map over
 * the input, variant 2 drops the consts. */
static void make_plan(gc_launch_plan *p, int variant) {
  static graphc_tensor_info_t in = {"x", GRAPHC_DTYPE_F32, 2, {2, 3}, 24};
  static graphc_tensor_info_t out = {"y", GRAPHC_DTYPE_F32, 2, {2, 3}, 24};
  static gc_lp_buffer bufs[4] = {{GC_LP_INPUT, 0, 24, 0}, {GC_LP_OUTPUT, 0, 24, 0},
                                 {GC_LP_CONST, 1, 12, 0}, {GC_LP_TEMP, 0, 24, 256}};
  static gc_lp_const consts[2] = {
      {"fc.weight", 24, k_w, 1, GRAPHC_DTYPE_F32, 2, {2, 3}},
      {"const.0", 12, k_c, 0, GRAPHC_DTYPE_F32, 1, {3}}};
  static gc_lp_param p0[3] = {{GC_LP_PARAM_BUFFER, 0}, {GC_LP_PARAM_BUFFER, 3}, {GC_LP_PARAM_I64, 6}};
  static gc_lp_param p1[3] = {{GC_LP_PARAM_BUFFER, 3}, {GC_LP_PARAM_BUFFER, 2}, {GC_LP_PARAM_BUFFER, 1}};
  static gc_lp_param p2[3] = {{GC_LP_PARAM_TMAP, 0}, {GC_LP_PARAM_BUFFER, 3}, {GC_LP_PARAM_I64, 6}};
  static gc_lp_kernel ks[2][2] = {
      {{"k0", GC_LP_ITEMS, 6, 256, 0, 3, p0}, {"k1", GC_LP_BLOCKS, 2, 32, 0, 3, p1}},
      {{"k0", GC_LP_ITEMS, 6, 128, 0, 3, p2}, {"k1", GC_LP_BLOCKS, 2, 64, 1024, 3, p1}}};
  /* 4 floats of the input's first 16 bytes, as one row of a 2-d map */
  static gc_lp_tmap tmap = {.buffer = 0, .dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {4, 1},
                            .strides = {4, 16}, .box = {4, 1}, .offset = 0, .swizzle = 0};
  static gc_lp_buffer bufs_nc[3] = {{GC_LP_INPUT, 0, 24, 0}, {GC_LP_OUTPUT, 0, 24, 0},
                                    {GC_LP_TEMP, 0, 24, 0}};
  static gc_lp_param q0[2] = {{GC_LP_PARAM_BUFFER, 0}, {GC_LP_PARAM_BUFFER, 1}};
  static gc_lp_kernel k_nc = {"copy", GC_LP_ITEMS, 6, 0, 0, 2, q0};
  static int launches[3] = {0, 1, 1};
  gc_launch_plan_init(p);
  p->n_inputs = p->n_outputs = 1;
  p->inputs = &in;
  p->outputs = &out;
  if (variant == 2) {
    p->n_buffers = 3;
    p->buffers = bufs_nc;
    p->n_kernels = 1;
    p->kernels = &k_nc;
    p->n_launches = 1;
    p->launches = launches;
    p->arena_bytes = 256;
    return;
  }
  p->n_buffers = 4;
  p->buffers = bufs;
  p->n_consts = 2;
  p->consts = consts;
  p->n_kernels = 2;
  p->kernels = ks[variant];
  if (variant == 1) {
    p->n_tmaps = 1;
    p->tmaps = &tmap;
  }
  p->n_launches = 3;
  p->launches = launches;
  p->arena_bytes = 512;
}

/* One bundle: n_plans plans (variants 0.., or 2 alone), images per `archs`. */
static void bundle(const char *dir, const char *name, int plan_variant, int n_plans, int two_archs,
                   int embed) {
  static const char *keys[] = {"graph", "codegen", "archs", "eager"};
  static const char *vals[] = {"mlp", "nvrtc", "sm_90,sm_80", "0"};
  gc_launch_plan plans[2];
  for (int i = 0; i < n_plans; i++) make_plan(&plans[i], plan_variant + i);
  gc_bundle_image imgs[2] = {{.sm = 90, .plan = 0, .cubin = k_cubin, .cubin_len = sizeof k_cubin, .ptx = k_ptx},
                             {.sm = 80, .plan = 0, .ptx = k_ptx}};
  imgs[1].plan = n_plans - 1;
  gc_bundle b;
  memset(&b, 0, sizeof b);
  b.n_meta = 4;
  b.meta_keys = keys;
  b.meta_values = vals;
  b.n_plans = n_plans;
  b.plans = plans;
  b.n_images = two_archs ? 2 : 1;
  b.images = imgs;
  gc_diags d;
  gc_diags_init(&d, name, NULL, 0);
  void *out = NULL;
  size_t len = 0;
  if (gc_bundle_write(&b, embed, &out, &len, &d) != 0) {
    fprintf(stderr, "mkseeds: %s: %s\n", name, d.n ? d.items[0].msg : "write failed");
    exit(1);
  }
  put_file(dir, name, out, len);
  free(out);
  gc_diags_free(&d);
  for (int i = 0; i < n_plans; i++) gc_launch_plan_free(&plans[i]);
}

/* One cache entry of n blobs. */
static void entry(gc_cache *c, uint64_t k, int n, const gc_cache_blob *blobs) {
  gc_hash128 key;
  memset(&key, 0, sizeof key);
  key.a = k;
  key.b = ~k;
  key.len = 1000 + k;
  if (gc_cache_put(c, &key, n, blobs) != 0) {
    fprintf(stderr, "mkseeds: cache entry: %s\n", c->note);
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: mkseeds BUNDLE_DIR CACHE_DIR\n");
    return 2;
  }
  bundle(argv[1], "seed_plan2.gcx", 0, 1, 1, 1);
  bundle(argv[1], "seed_plan2_noweights.gcx", 0, 1, 1, 0);
  bundle(argv[1], "seed_one_arch.gcx", 0, 1, 0, 0);
  bundle(argv[1], "seed_two_plans.gcx", 0, 2, 1, 1);
  bundle(argv[1], "seed_no_consts.gcx", 2, 1, 1, 0);

  setenv("GRAPHC_CACHE_DIR", argv[2], 1);
  unsetenv("GRAPHC_CACHE");
  gc_cache c;
  gc_settings s;
  gc_settings_read(&s);
  gc_cache_open(&c, &s);
  if (!c.enabled) {
    fprintf(stderr, "mkseeds: cache: %s\n", c.note);
    return 1;
  }
  gc_cache_blob b[3] = {{(void *)k_cubin, sizeof k_cubin}, {(void *)k_ptx, sizeof k_ptx}, {"", 0}};
  entry(&c, 1, 0, b);
  entry(&c, 2, 1, b + 1);
  entry(&c, 3, 2, b);
  entry(&c, 4, 3, b);
  gc_cache_close(&c);
  return 0;
}
