/* test_cache.c - the persistent JIT cache (driver/cache.c) and its use by the
 * CUDA compile path (gc_cuda_codegen) and the CLI.
 *
 * Runs without a GPU: the cache stores code generator outputs (cubin, PTX),
 * which NVRTC, LLVM and nvJitLink make without a device. Covered: where the
 * cache lives (GRAPHC_CACHE_DIR, XDG_CACHE_HOME, HOME) and GRAPHC_CACHE=off,
 * hit after miss, corrupted / truncated / foreign entries (a miss, removed,
 * rewritten), several processes writing at once, LRU eviction under a size
 * cap, stale temporary files, the key's sensitivity, and compiles through the
 * cache giving the same bytes as compiles without it. One device case checks
 * that a JIT executable reports the hit and runs the same.
 *
 * The suites run with GRAPHC_CACHE=off (tests/CMakeLists.txt); each case here
 * sets its own environment (Check forks every test).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "driver/cache.h"
#include "driver/cuda_backend.h"
#include "driver/exec.h"
#include "driver/launch_build.h"

static uint64_t g_seed;
static int g_have_device;

/* A fresh directory under the suite's temporary directory. */
static const char *fresh_dir(const char *tag) {
  static char ring[8][512];
  static int k;
  char *p = ring[k++ & 7];
  static int n;
  snprintf(p, 512, "%s/%s-%d-%d", tu_tmpdir(), tag, (int)getpid(), n++);
  ck_assert_int_eq(mkdir(p, 0700), 0);
  return p;
}

/* Open a cache in dir with the environment set as a user would. */
static void open_in(gc_cache *c, const char *dir) {
  unsetenv("GRAPHC_CACHE");
  unsetenv("GRAPHC_CACHE_MAX_MB");
  setenv("GRAPHC_CACHE_DIR", dir, 1);
  gc_cache_open(c, tu_settings());
  ck_assert_msg(c->enabled, "cache in %s not enabled: %s", dir, c->note);
}

/* A key from a string. */
static gc_hash128 key_of(const char *s) {
  gc_hash128 k;
  gc_hash128_init(&k);
  gc_hash128_field(&k, "test", s, strlen(s));
  return k;
}

/* n random bytes (never all zero), malloc'd. */
static void *random_bytes(size_t n, uint64_t *s) {
  unsigned char *p = malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)tu_next(s);
  if (n) p[0] |= 1;
  return p;
}

/* Size of a file, -1 when absent. */
static long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Number of directory entries whose name contains `part`. */
static int count_files(const char *dir, const char *part) {
  char cmd[2200];
  snprintf(cmd, sizeof cmd, "ls -1 '%s' | grep -c -- '%s'", dir, part);
  char *out = NULL;
  tu_run_cmd(cmd, &out);
  int n = out ? atoi(out) : -1;
  free(out);
  return n;
}

/* Put two blobs under key and check a get returns them. */
static void put_two(gc_cache *c, const gc_hash128 *k, gc_cache_blob *b) {
  ck_assert_int_eq(gc_cache_put(c, k, 2, b), 0);
}

/* get() must hit with exactly the blobs `want`. */
static void expect_hit(gc_cache *c, const gc_hash128 *k, const gc_cache_blob *want, int n) {
  gc_cache_blob got[4];
  ck_assert_msg(gc_cache_get(c, k, n, got) == 1, "expected a hit (%s)", c->note);
  for (int i = 0; i < n; i++) {
    ck_assert_uint_eq(got[i].len, want[i].len);
    ck_assert_msg(memcmp(got[i].data, want[i].data, want[i].len) == 0, "blob %d differs", i);
    ck_assert_int_eq(((char *)got[i].data)[got[i].len], 0);
    free(got[i].data);
  }
}

/* get() must miss. */
static void expect_miss(gc_cache *c, const gc_hash128 *k, int n) {
  gc_cache_blob got[4];
  ck_assert_int_eq(gc_cache_get(c, k, n, got), 0);
  for (int i = 0; i < n; i++) ck_assert_ptr_null(got[i].data);
}

/* ==== where the cache lives ================================================================= */

START_TEST(locations_and_switches) {
  gc_cache c;
  const char *base = fresh_dir("loc");
  char want[1100];
  /* GRAPHC_CACHE_DIR, created with its parents. */
  snprintf(want, sizeof want, "%s/a/b/c", base);
  open_in(&c, want);
  ck_assert_str_eq(c.dir, want);
  ck_assert_uint_eq(c.max_bytes, (uint64_t)GC_CACHE_DEFAULT_MAX_MB << 20);
  gc_cache_close(&c);
  /* XDG_CACHE_HOME/graphc, then HOME/.cache/graphc. */
  unsetenv("GRAPHC_CACHE_DIR");
  setenv("XDG_CACHE_HOME", base, 1);
  gc_cache_open(&c, tu_settings());
  snprintf(want, sizeof want, "%s/graphc", base);
  ck_assert_msg(c.enabled && strcmp(c.dir, want) == 0, "XDG: %s (%s)", c.dir, c.note);
  gc_cache_close(&c);
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", base, 1);
  gc_cache_open(&c, tu_settings());
  snprintf(want, sizeof want, "%s/.cache/graphc", base);
  ck_assert_msg(c.enabled && strcmp(c.dir, want) == 0, "HOME: %s (%s)", c.dir, c.note);
  gc_cache_close(&c);
  /* Off, in every spelling we accept. */
  const char *offs[] = {"off", "0", "no", "false"};
  for (int i = 0; i < 4; i++) {
    setenv("GRAPHC_CACHE", offs[i], 1);
    gc_cache_open(&c, tu_settings());
    ck_assert_msg(!c.enabled && c.dir == NULL && strstr(c.note, offs[i]), "GRAPHC_CACHE=%s", offs[i]);
    char line[1024];
    gc_cache_describe(&c, line, sizeof line);
    ck_assert_msg(strstr(line, "cache: off"), "%s", line);
    gc_cache_close(&c);
  }
  unsetenv("GRAPHC_CACHE");
  /* Size cap from the environment; a bad value keeps the default and says so. */
  setenv("GRAPHC_CACHE_MAX_MB", "3", 1);
  gc_cache_open(&c, tu_settings());
  ck_assert_uint_eq(c.max_bytes, (uint64_t)3 << 20);
  gc_cache_close(&c);
  setenv("GRAPHC_CACHE_MAX_MB", "lots", 1);
  gc_cache_open(&c, tu_settings());
  ck_assert_uint_eq(c.max_bytes, (uint64_t)GC_CACHE_DEFAULT_MAX_MB << 20);
  ck_assert_msg(strstr(c.note, "GRAPHC_CACHE_MAX_MB"), "%s", c.note);
  gc_cache_close(&c);
  unsetenv("GRAPHC_CACHE_MAX_MB");
  /* A directory that cannot be made: disabled, with the reason. */
  char file[1024];
  snprintf(file, sizeof file, "%s/plainfile", base);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(want, sizeof want, "%s/sub", file);
  setenv("GRAPHC_CACHE_DIR", want, 1);
  gc_cache_open(&c, tu_settings());
  ck_assert_msg(!c.enabled && strstr(c.note, "cannot use cache directory"), "%s", c.note);
  gc_cache_blob b = {"x", 1};
  gc_hash128 k = key_of("k");
  ck_assert_int_eq(gc_cache_put(&c, &k, 1, &b), -1);
  expect_miss(&c, &k, 1);
  gc_cache_close(&c);
}
END_TEST

/* Disabled: nothing is read or written, even with a directory configured. */
START_TEST(disabled_writes_nothing) {
  const char *dir = fresh_dir("off");
  setenv("GRAPHC_CACHE_DIR", dir, 1);
  setenv("GRAPHC_CACHE", "off", 1);
  gc_cache c;
  gc_cache_open(&c, tu_settings());
  ck_assert(!c.enabled);
  gc_hash128 k = key_of("model");
  gc_cache_blob b[2] = {{"cubin", 5}, {"ptx", 3}};
  ck_assert_int_eq(gc_cache_put(&c, &k, 2, b), -1);
  expect_miss(&c, &k, 2);
  ck_assert_int_eq(count_files(dir, "."), 0);
  gc_cache_close(&c);
}
END_TEST

/* ==== entries ================================================================================ */

START_TEST(hit_after_miss) {
  uint64_t s = g_seed + 1;
  gc_cache c;
  open_in(&c, fresh_dir("hit"));
  gc_hash128 k = key_of("module-1");
  expect_miss(&c, &k, 2);
  ck_assert_int_eq(c.misses, 1);
  gc_cache_blob b[3] = {{random_bytes(70001, &s), 70001}, {random_bytes(0, &s), 0},
                        {random_bytes(13, &s), 13}};
  ck_assert_int_eq(gc_cache_put(&c, &k, 3, b), 0);
  ck_assert_int_eq(c.stores, 1);
  expect_hit(&c, &k, b, 3);
  expect_hit(&c, &k, b, 3);
  ck_assert_int_eq(c.hits, 2);
  /* Another key, and the same key asked with another blob count: misses. */
  gc_hash128 k2 = key_of("module-2");
  expect_miss(&c, &k2, 3);
  char path[4200];
  gc_cache_entry_path(&c, &k, path, sizeof path);
  ck_assert_int_eq(file_size(path), 64 + 3 * 8 + 70001 + 13);
  /* Overwriting with other contents: the new ones are read. */
  gc_cache_blob b2[3] = {{random_bytes(5, &s), 5}, {random_bytes(6, &s), 6}, {random_bytes(7, &s), 7}};
  ck_assert_int_eq(gc_cache_put(&c, &k, 3, b2), 0);
  expect_hit(&c, &k, b2, 3);
  ck_assert_int_eq(count_files(c.dir, ".tmp."), 0);
  for (int i = 0; i < 3; i++) free(b[i].data), free(b2[i].data);
  gc_cache_close(&c);
}
END_TEST

/* Any damaged byte: a miss, the entry removed, the next store rewrites it. */
START_TEST(corruption_is_a_miss_and_rewritten) {
  uint64_t s = g_seed + 2;
  gc_cache c;
  open_in(&c, fresh_dir("corrupt"));
  gc_hash128 k = key_of("module");
  gc_cache_blob b[2] = {{random_bytes(4000, &s), 4000}, {random_bytes(900, &s), 900}};
  char path[4200];
  gc_cache_entry_path(&c, &k, path, sizeof path);
  long long size = 64 + 16 + 4900;
  /* Every header byte and a sample of payload bytes. */
  int positions[96], np = 0;
  for (int i = 0; i < 64; i++) positions[np++] = i;
  while (np < 96) positions[np++] = 64 + (int)(tu_next(&s) % (uint64_t)(size - 64));
  for (int i = 0; i < np; i++) {
    put_two(&c, &k, b);
    ck_assert_int_eq(file_size(path), size);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    unsigned char byte;
    ck_assert_int_eq(pread(fd, &byte, 1, positions[i]), 1);
    byte ^= (unsigned char)(1u << (tu_next(&s) % 8));
    ck_assert_int_eq(pwrite(fd, &byte, 1, positions[i]), 1);
    close(fd);
    int rejected = c.rejected;
    expect_miss(&c, &k, 2);
    ck_assert_msg(c.rejected == rejected + 1, "byte %d flipped: not rejected", positions[i]);
    ck_assert_msg(file_size(path) == -1, "damaged entry (byte %d) not removed", positions[i]);
  }
  put_two(&c, &k, b);
  expect_hit(&c, &k, b, 2);
  free(b[0].data);
  free(b[1].data);
  gc_cache_close(&c);
}
END_TEST

START_TEST(truncation_is_a_miss) {
  uint64_t s = g_seed + 3;
  gc_cache c;
  open_in(&c, fresh_dir("trunc"));
  gc_hash128 k = key_of("module");
  gc_cache_blob b[2] = {{random_bytes(3000, &s), 3000}, {random_bytes(100, &s), 100}};
  char path[4200];
  gc_cache_entry_path(&c, &k, path, sizeof path);
  long long full = 64 + 16 + 3100;
  long long cuts[] = {0, 1, 8, 40, 63, 64, 70, 80, 81, full / 2, full - 100, full - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    put_two(&c, &k, b);
    ck_assert_int_eq(truncate(path, cuts[i]), 0);
    expect_miss(&c, &k, 2);
    ck_assert_msg(file_size(path) == -1, "truncated entry (%lld bytes) kept", cuts[i]);
  }
  /* Longer than it says: also damage. */
  put_two(&c, &k, b);
  FILE *f = fopen(path, "ab");
  fputs("tail", f);
  fclose(f);
  expect_miss(&c, &k, 2);
  put_two(&c, &k, b);
  expect_hit(&c, &k, b, 2);
  free(b[0].data);
  free(b[1].data);
  gc_cache_close(&c);
}
END_TEST

/* Files that are not our entry for this key: misses. */
START_TEST(foreign_files_are_misses) {
  uint64_t s = g_seed + 4;
  gc_cache c;
  open_in(&c, fresh_dir("foreign"));
  gc_hash128 k = key_of("mine"), other = key_of("other");
  char path[4200], opath[4200];
  gc_cache_entry_path(&c, &k, path, sizeof path);
  gc_cache_entry_path(&c, &other, opath, sizeof opath);
  /* Garbage of several sizes, an empty file, a directory. */
  size_t sizes[] = {0, 5, 64, 200, 5000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *junk = random_bytes(sizes[i], &s);
    FILE *f = fopen(path, "wb");
    fwrite(junk, 1, sizes[i], f);
    fclose(f);
    free(junk);
    expect_miss(&c, &k, 2);
  }
  ck_assert_int_eq(mkdir(path, 0700), 0);
  expect_miss(&c, &k, 2);
  rmdir(path);
  /* A valid entry of another key under this key's name. */
  gc_cache_blob b[2] = {{"abc", 3}, {"defg", 4}};
  put_two(&c, &other, b);
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", opath, path);
  ck_assert_int_eq(tu_run_cmd(cmd, NULL), 0);
  expect_miss(&c, &k, 2);
  expect_hit(&c, &other, b, 2);
  /* Same key, other blob count: a miss (and rewritten by the next store). */
  expect_miss(&c, &other, 3);
  put_two(&c, &k, b);
  expect_hit(&c, &k, b, 2);
  gc_cache_close(&c);
}
END_TEST

/* Several processes storing and reading the same and different keys at once. */
START_TEST(concurrent_writers) {
  const char *dir = fresh_dir("conc");
  enum { KIDS = 6, ROUNDS = 40 };
  uint64_t s = g_seed + 5;
  size_t shared_len = 50000 + (size_t)(tu_next(&s) % 1000);
  unsigned char *shared = random_bytes(shared_len, &s);
  pid_t pids[KIDS];
  fflush(stdout);
  for (int i = 0; i < KIDS; i++) {
    pids[i] = fork();
    ck_assert_int_ge(pids[i], 0);
    if (pids[i] == 0) {
      gc_cache c;
      setenv("GRAPHC_CACHE_DIR", dir, 1);
      unsetenv("GRAPHC_CACHE");
      gc_cache_open(&c, tu_settings());
      if (!c.enabled) _exit(10);
      /* A small cap so evictions run while others write and read. */
      c.max_bytes = 6 * 60000;
      gc_hash128 ks = key_of("shared");
      char name[32];
      snprintf(name, sizeof name, "own-%d", i);
      gc_hash128 ko = key_of(name);
      uint64_t t = g_seed + 100 + (uint64_t)i;
      size_t own_len = 20000 + (size_t)i * 100;
      unsigned char *own = random_bytes(own_len, &t);
      int hits = 0;
      for (int r = 0; r < ROUNDS; r++) {
        gc_cache_blob bs[2] = {{shared, shared_len}, {"ptx", 3}};
        gc_cache_blob bo[2] = {{own, own_len}, {name, strlen(name)}};
        gc_cache_put(&c, &ks, 2, bs);
        gc_cache_put(&c, &ko, 2, bo);
        gc_cache_blob got[2];
        if (gc_cache_get(&c, &ks, 2, got)) {
          if (got[0].len != shared_len || memcmp(got[0].data, shared, shared_len) != 0 ||
              got[1].len != 3 || memcmp(got[1].data, "ptx", 3) != 0)
            _exit(11);  /* a torn or mixed entry: the property under test */
          hits++;
          free(got[0].data);
          free(got[1].data);
        }
        if (gc_cache_get(&c, &ko, 2, got)) {
          if (got[0].len != own_len || memcmp(got[0].data, own, own_len) != 0) _exit(12);
          free(got[0].data);
          free(got[1].data);
        }
      }
      free(own);
      gc_cache_close(&c);
      _exit(hits > 0 ? 0 : 13);
    }
  }
  for (int i = 0; i < KIDS; i++) {
    int st = 0;
    ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed: status %d (seed %llu)", i,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, (unsigned long long)g_seed);
  }
  ck_assert_int_eq(count_files(dir, ".tmp."), 0);
  gc_cache c;
  open_in(&c, dir);
  gc_hash128 ks = key_of("shared");
  gc_cache_blob want[2] = {{shared, shared_len}, {"ptx", 3}};
  gc_cache_blob got[2];
  if (gc_cache_get(&c, &ks, 2, got)) {  /* may have been evicted last; if present, whole */
    ck_assert(got[0].len == shared_len && memcmp(got[0].data, shared, shared_len) == 0);
    free(got[0].data);
    free(got[1].data);
  }
  ck_assert_int_eq(c.rejected, 0);
  put_two(&c, &ks, want);
  expect_hit(&c, &ks, want, 2);
  free(shared);
  gc_cache_close(&c);
}
END_TEST

/* Set a file's mtime to `t` seconds since the epoch. */
static void set_mtime(const char *path, time_t t) {
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* Least recently used first; a hit refreshes; stale temporary files go; others stay. */
START_TEST(eviction_lru) {
  uint64_t s = g_seed + 6;
  gc_cache c;
  open_in(&c, fresh_dir("evict"));
  const size_t blob = 10000, entry = 64 + 8 + blob;
  c.max_bytes = 3 * entry + entry / 2;   /* room for three entries */
  gc_hash128 k[5];
  gc_cache_blob b[5];
  char path[5][4200];
  const char *names[5] = {"A", "B", "C", "D", "E"};
  time_t t0 = time(NULL) - 1000;
  for (int i = 0; i < 3; i++) {
    k[i] = key_of(names[i]);
    b[i] = (gc_cache_blob){random_bytes(blob, &s), blob};
    ck_assert_int_eq(gc_cache_put(&c, &k[i], 1, &b[i]), 0);
    gc_cache_entry_path(&c, &k[i], path[i], sizeof path[i]);
    set_mtime(path[i], t0 + 10 * i);  /* A oldest, then B, then C */
  }
  ck_assert_int_eq(c.evicted, 0);
  expect_hit(&c, &k[0], &b[0], 1);    /* A is now the most recent */
  k[3] = key_of(names[3]);
  b[3] = (gc_cache_blob){random_bytes(blob, &s), blob};
  ck_assert_int_eq(gc_cache_put(&c, &k[3], 1, &b[3]), 0);
  gc_cache_entry_path(&c, &k[3], path[3], sizeof path[3]);
  ck_assert_int_eq(c.evicted, 1);
  ck_assert_msg(file_size(path[1]) == -1, "B (least recently used) should be gone");
  ck_assert(file_size(path[0]) > 0 && file_size(path[2]) > 0 && file_size(path[3]) > 0);
  expect_miss(&c, &k[1], 1);
  /* Stale temporaries are removed, fresh ones and unrelated files stay. */
  char stale[4300], fresh[4300], other[4300];
  snprintf(stale, sizeof stale, "%s.tmp.1.2", path[2]);
  snprintf(fresh, sizeof fresh, "%s.tmp.3.4", path[2]);
  snprintf(other, sizeof other, "%s/README.txt", c.dir);
  const char *files[] = {stale, fresh, other};
  for (int i = 0; i < 3; i++) {
    FILE *f = fopen(files[i], "w");
    fputs("x", f);
    fclose(f);
  }
  set_mtime(stale, time(NULL) - 7200);
  set_mtime(other, t0 - 5000);
  gc_cache_evict(&c);
  ck_assert_msg(file_size(stale) == -1, "stale temporary kept");
  ck_assert_msg(file_size(fresh) == 1 && file_size(other) == 1, "a file not ours was removed");
  /* An entry bigger than the whole cache is not stored. */
  gc_cache_blob big = {random_bytes(4 * entry, &s), 4 * entry};
  k[4] = key_of(names[4]);
  ck_assert_int_eq(gc_cache_put(&c, &k[4], 1, &big), -1);
  expect_miss(&c, &k[4], 1);
  ck_assert(file_size(path[0]) > 0);
  free(big.data);
  for (int i = 0; i < 4; i++) free(b[i].data);
  gc_cache_close(&c);
}
END_TEST

/* ==== through the code generators ============================================================== */

static const char *const k_model =
    "version 1;\n"
    "graph @m(%x: f32[37, 64], %w: f32[64, 48], %b: f32[48]) -> (f32[37, 48], f32[37]) {\n"
    "  %h = matmul(%x, %w);\n"
    "  %hb = add(%h, %b);\n"
    "  %a = gelu(%hb);\n"
    "  %s = softmax(%a, axis=-1);\n"
    "  %m = reduce_max(%a, axes=[1]);\n"
    "  return %s, %m;\n"
    "}\n";

/* Parse, verify and optimize text (interpreter backend) and lower it for sm. */
typedef struct lowered {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe;
  gc_plan *plan;
} lowered;

static void lower_text(lowered *l, const char *text, int sm) {
  memset(l, 0, sizeof *l);
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&l->ctx), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_load_string(l->ctx, "m.graph", text, strlen(text), &l->m, &err),
                   GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  ck_assert_int_eq(graphc_compile(l->m, &o, &l->exe, &err), GRAPHC_STATUS_OK);
  kir_target t;
  kir_target_cuda(&t, sm);
  gc_diags d;
  gc_diags_init(&d, "m.graph", NULL, 0);
  l->plan = gc_lower(l->exe->graph, &t, &d);
  if (l->plan && gc_plan_bind_weights(l->plan, l->exe->weights, &d)) {
    gc_plan_free(l->plan);
    l->plan = NULL;
  }
  ck_assert_msg(l->plan != NULL, "lowering failed: %s", d.n ? d.items[0].msg : "?");
  gc_diags_free(&d);
}

static void lowered_free(lowered *l) {
  gc_plan_free(l->plan);
  graphc_executable_destroy(l->exe);
  graphc_model_destroy(l->m);
  graphc_context_destroy(l->ctx);
}

/* Compile through gc_cuda_codegen (cache may be NULL) or fail the test. */
static void codegen(const lowered *l, int sm, graphc_codegen_t cg, gc_cache *c, gc_cuda_code *out) {
  gc_diags d;
  gc_diags_init(&d, "m.graph", NULL, 0);
  int rc = gc_cuda_codegen(l->plan->kir, sm, cg, tu_settings(), c, out, NULL, &d);
  ck_assert_msg(rc == 0, "codegen failed: %s", d.n ? d.items[0].msg : "?");
  gc_diags_free(&d);
}

/* The same bytes (cubin and PTX). */
static void expect_same_code(const gc_cuda_code *a, const gc_cuda_code *b, const char *what) {
  ck_assert_msg(a->cubin_len == b->cubin_len &&
                    (!a->cubin_len || memcmp(a->cubin, b->cubin, a->cubin_len) == 0),
                "%s: cubins differ (%zu vs %zu bytes)", what, a->cubin_len, b->cubin_len);
  ck_assert_msg(a->ptx && b->ptx && strcmp(a->ptx, b->ptx) == 0, "%s: PTX differs", what);
}

/* Miss, then hit with the same bytes as an uncached compile, on both paths. */
static void codegen_roundtrip(graphc_codegen_t cg) {
  lowered l;
  lower_text(&l, k_model, 90);
  gc_cache c;
  open_in(&c, fresh_dir(cg == GRAPHC_CODEGEN_LLVM ? "cg-llvm" : "cg-nvrtc"));
  gc_cuda_code plain, first, second, other;
  codegen(&l, 90, cg, NULL, &plain);
  ck_assert_int_eq(plain.cache_hit, 0);
  ck_assert_msg(plain.cubin_len > 0, "no cubin from %s", graphc_codegen_name(cg));
  codegen(&l, 90, cg, &c, &first);
  ck_assert_int_eq(first.cache_hit, 0);
  ck_assert_int_eq(c.misses, 1);
  ck_assert_int_eq(c.stores, 1);
  codegen(&l, 90, cg, &c, &second);
  ck_assert_int_eq(second.cache_hit, 1);
  ck_assert_int_eq(c.hits, 1);
  expect_same_code(&plain, &first, "uncached vs first");
  expect_same_code(&plain, &second, "uncached vs cache hit");
  printf("cache %s: compile %.1f ms, hit %.3f ms\n", graphc_codegen_name(cg), first.ms, second.ms);
  /* Another arch is another key. */
  codegen(&l, 80, cg, &c, &other);
  ck_assert_int_eq(other.cache_hit, 0);
  ck_assert_int_eq(c.stores, 2);
  /* A damaged entry: recompiled, rewritten, same bytes. */
  gc_hash128 k;
  gc_cuda_cache_key(l.plan->kir, 90, cg, tu_settings(), &k);
  char path[4200];
  gc_cache_entry_path(&c, &k, path, sizeof path);
  long long size = file_size(path);
  ck_assert_int_gt(size, 100);
  ck_assert_int_eq(truncate(path, size - 7), 0);
  gc_cuda_code again, last;
  codegen(&l, 90, cg, &c, &again);
  ck_assert_int_eq(again.cache_hit, 0);
  ck_assert_int_eq(c.rejected, 1);
  ck_assert_int_eq(file_size(path), size);
  codegen(&l, 90, cg, &c, &last);
  ck_assert_int_eq(last.cache_hit, 1);
  expect_same_code(&plain, &again, "recompiled after damage");
  expect_same_code(&plain, &last, "hit after rewrite");
  gc_cuda_code *all[] = {&plain, &first, &second, &other, &again, &last};
  for (int i = 0; i < 6; i++) gc_cuda_code_free(all[i]);
  gc_cache_close(&c);
  lowered_free(&l);
}

START_TEST(codegen_nvrtc_through_cache) { codegen_roundtrip(GRAPHC_CODEGEN_NVRTC); }
END_TEST

START_TEST(codegen_llvm_through_cache) { codegen_roundtrip(GRAPHC_CODEGEN_LLVM); }
END_TEST

/* The key: deterministic, and different for another model, arch or path. */
START_TEST(key_sensitivity) {
  lowered a, b;
  lower_text(&a, k_model, 90);
  char *text2 = strdup(k_model);
  char *p = strstr(text2, "gelu");
  memcpy(p, "relu", 4);
  lower_text(&b, text2, 90);
  free(text2);
  gc_hash128 k1, k2, k3, k4, k5;
  gc_cuda_cache_key(a.plan->kir, 90, GRAPHC_CODEGEN_NVRTC, tu_settings(), &k1);
  gc_cuda_cache_key(a.plan->kir, 90, GRAPHC_CODEGEN_DEFAULT, tu_settings(), &k2);
  gc_hash128 k6;  /* the default is the LLVM path */
  gc_cuda_cache_key(a.plan->kir, 90, GRAPHC_CODEGEN_LLVM, tu_settings(), &k6);
  gc_cuda_cache_key(a.plan->kir, 80, GRAPHC_CODEGEN_NVRTC, tu_settings(), &k3);
  gc_cuda_cache_key(a.plan->kir, 90, GRAPHC_CODEGEN_LLVM, tu_settings(), &k4);
  gc_cuda_cache_key(b.plan->kir, 90, GRAPHC_CODEGEN_NVRTC, tu_settings(), &k5);
  ck_assert(k6.a == k2.a && k6.b == k2.b && k6.len == k2.len);
  /* the LLVM path's PTX compiler is part of it: nvJitLink's cubins differ from ptxas' */
  gc_hash128 k7, k8;
  setenv("GRAPHC_PTXAS", "off", 1);  /* forked test: local */
  gc_cuda_cache_key(a.plan->kir, 90, GRAPHC_CODEGEN_LLVM, tu_settings(), &k7);
  gc_cuda_cache_key(a.plan->kir, 90, GRAPHC_CODEGEN_NVRTC, tu_settings(), &k8);
  unsetenv("GRAPHC_PTXAS");
  ck_assert(k8.a == k1.a && k8.b == k1.b);  /* NVRTC runs its own ptxas */
  gc_hash128 ks[] = {k1, k3, k4, k5, k7};
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++) ck_assert_msg(ks[i].a != ks[j].a || ks[i].b != ks[j].b, "keys %d and %d equal", i, j);
  lowered_free(&a);
  lowered_free(&b);
}
END_TEST

/* Several processes compiling the same model into one cache at once. */
START_TEST(concurrent_compiles) {
  const char *dir = fresh_dir("cc");
  lowered l;
  lower_text(&l, k_model, 90);
  gc_cuda_code plain;
  codegen(&l, 90, GRAPHC_CODEGEN_NVRTC, NULL, &plain);
  enum { KIDS = 3 };
  pid_t pids[KIDS];
  fflush(stdout);
  for (int i = 0; i < KIDS; i++) {
    pids[i] = fork();
    ck_assert_int_ge(pids[i], 0);
    if (pids[i] == 0) {
      gc_cache c;
      setenv("GRAPHC_CACHE_DIR", dir, 1);
      unsetenv("GRAPHC_CACHE");
      gc_cache_open(&c, tu_settings());
      gc_cuda_code out;
      gc_diags d;
      gc_diags_init(&d, "", NULL, 0);
      int rc = gc_cuda_codegen(l.plan->kir, 90, GRAPHC_CODEGEN_NVRTC, tu_settings(), &c, &out, NULL, &d);
      int same = rc == 0 && out.cubin_len == plain.cubin_len &&
                 memcmp(out.cubin, plain.cubin, plain.cubin_len) == 0 && strcmp(out.ptx, plain.ptx) == 0;
      _exit(rc ? 20 : same ? 0 : 21);
    }
  }
  for (int i = 0; i < KIDS; i++) {
    int st = 0;
    ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "compiler %d: status %d", i,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  ck_assert_int_eq(count_files(dir, ".tmp."), 0);
  ck_assert_int_eq(count_files(dir, ".gcm"), 1);
  gc_cache c;
  open_in(&c, dir);
  gc_cuda_code hit;
  codegen(&l, 90, GRAPHC_CODEGEN_NVRTC, &c, &hit);
  ck_assert_int_eq(hit.cache_hit, 1);
  expect_same_code(&plain, &hit, "after concurrent compiles");
  gc_cuda_code_free(&hit);
  gc_cuda_code_free(&plain);
  gc_cache_close(&c);
  lowered_free(&l);
}
END_TEST

/* The CLI: a second bundle compile hits, says so, and writes the same bytes; the
 * cache moves with GRAPHC_CACHE_DIR and stays out of the way with GRAPHC_CACHE=off. */
START_TEST(cli_uses_cache) {
  const char *dir = fresh_dir("cli");
  char graph[1024], cmd[8192], a[1024], b[1024], cdir[1024];
  snprintf(graph, sizeof graph, "%s/m.graph", dir);
  FILE *f = fopen(graph, "w");
  fputs(k_model, f);
  fclose(f);
  snprintf(cdir, sizeof cdir, "%s/cache", dir);
  snprintf(a, sizeof a, "%s/a.gcx", dir);
  snprintf(b, sizeof b, "%s/b.gcx", dir);
  char *out = NULL;
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "env -u GRAPHC_CACHE GRAPHC_CACHE_DIR='%s' '%s' compile '%s' -o '%s' --stats",
             cdir, GRAPHC_CLI, graph, i ? b : a);
    ck_assert_msg(tu_run_cmd(cmd, &out) == 0, "%s\n%s", cmd, out);
    ck_assert_msg(strstr(out, i ? "module from cache" : "module compiled"), "run %d:\n%s", i, out);
    ck_assert_msg(strstr(out, i ? "1 hit" : "1 stored"), "run %d:\n%s", i, out);
    free(out);
  }
  size_t la, lb;
  char *ba = tu_read_file(a, &la), *bb = tu_read_file(b, &lb);
  ck_assert_msg(ba && bb && la == lb && memcmp(ba, bb, la) == 0, "bundles from cache differ");
  free(ba);
  free(bb);
  ck_assert_int_eq(count_files(cdir, ".gcm"), 1);
  snprintf(cmd, sizeof cmd, "GRAPHC_CACHE=off GRAPHC_CACHE_DIR='%s/none' '%s' compile '%s' -o '%s' --stats",
           dir, GRAPHC_CLI, graph, b);
  ck_assert_msg(tu_run_cmd(cmd, &out) == 0, "%s", out);
  ck_assert_msg(strstr(out, "cache: off"), "%s", out);
  free(out);
  char none[1100];
  snprintf(none, sizeof none, "%s/none", dir);
  ck_assert_msg(access(none, F_OK) != 0, "GRAPHC_CACHE=off created the directory");
}
END_TEST

/* ==== with a device ======================================================================= */

/* A JIT executable reports the hit, and the hit runs the same as a compile. */
START_TEST(device_jit_hit_runs_the_same) {
  if (!g_have_device) return;
  const char *dir = fresh_dir("jit");
  unsetenv("GRAPHC_CACHE");
  setenv("GRAPHC_CACHE_DIR", dir, 1);
  for (int cg = GRAPHC_CODEGEN_NVRTC; cg <= GRAPHC_CODEGEN_LLVM; cg++) {
    graphc_context_t *ctx;
    graphc_model_t *m;
    graphc_error_t err;
    graphc_executable_t *exe[2];
    ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
    ck_assert_int_eq(graphc_model_load_string(ctx, "m.graph", k_model, strlen(k_model), &m, &err),
                     GRAPHC_STATUS_OK);
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = GRAPHC_BACKEND_CUDA;
    o.codegen = (graphc_codegen_t)cg;
    graphc_tensor_t *in = NULL, *out[2];
    for (int i = 0; i < 2; i++) {
      ck_assert_msg(graphc_compile(m, &o, &exe[i], &err) == GRAPHC_STATUS_OK, "%s", err.message);
      gc_cuda_info info;
      ck_assert_int_eq(gc_cuda_exec_info(exe[i], &info), GRAPHC_STATUS_OK);
      ck_assert_msg(info.cache_hit == i, "compile %d (%s): cache_hit %d\n%s", i,
                    graphc_codegen_name(cg), info.cache_hit, graphc_executable_stats(exe[i]));
      ck_assert_msg(strstr(graphc_executable_stats(exe[i]), i ? "from the JIT cache" : "1 stored"),
                    "%s", graphc_executable_stats(exe[i]));
      uint64_t s = g_seed + 40;
      if (i == 0) {
        ck_assert_int_eq(tu_make_io(exe[0], NULL, &s, &in, &out[0]), 0);
      } else {
        out[1] = tu_clone_outputs(out[0], 2);
      }
      ck_assert_int_eq(graphc_executable_run(exe[i], in, 3, out[i], 2, &err), GRAPHC_STATUS_OK);
    }
    for (int j = 0; j < 2; j++)
      ck_assert_msg(memcmp(out[0][j].data, out[1][j].data, out[0][j].nbytes) == 0,
                    "%s: output %d differs between the compile and the cache hit (seed %llu)",
                    graphc_codegen_name(cg), j, (unsigned long long)g_seed);
    tu_free_tensors(in, 3);
    tu_free_tensors(out[0], 2);
    tu_free_tensors(out[1], 2);
    graphc_executable_destroy(exe[0]);
    graphc_executable_destroy(exe[1]);
    graphc_model_destroy(m);
    graphc_context_destroy(ctx);
  }
}
END_TEST

int main(void) {
  g_seed = tu_seed();
  g_have_device = tu_probe_device();
  printf("test_cache: seed %llu (GRAPHC_TEST_SEED reproduces), CUDA device: %s\n",
         (unsigned long long)g_seed, g_have_device ? "yes" : "no");
  Suite *s = suite_create("cache");
  TCase *tc = tcase_create("cache");
  tcase_add_test(tc, locations_and_switches);
  tcase_add_test(tc, disabled_writes_nothing);
  tcase_add_test(tc, hit_after_miss);
  tcase_add_test(tc, corruption_is_a_miss_and_rewritten);
  tcase_add_test(tc, truncation_is_a_miss);
  tcase_add_test(tc, foreign_files_are_misses);
  tcase_add_test(tc, concurrent_writers);
  tcase_add_test(tc, eviction_lru);
  tcase_add_test(tc, codegen_nvrtc_through_cache);
  tcase_add_test(tc, codegen_llvm_through_cache);
  tcase_add_test(tc, key_sensitivity);
  tcase_add_test(tc, concurrent_compiles);
  tcase_add_test(tc, cli_uses_cache);
  tcase_set_timeout(tc, 600);
  suite_add_tcase(s, tc);
  TCase *td = tcase_create("device");
  tcase_add_test(td, device_jit_hit_runs_the_same);
  tcase_set_timeout(td, 600);
  suite_add_tcase(s, td);
  int rc = tu_run_suite(s);
  if (rc == 0 && !g_have_device) {
    printf("SKIPPED: no CUDA device (the cache cases passed; the device case needs a GPU)\n");
    return 77;
  }
  return rc;
}
