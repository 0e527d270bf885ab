/* fuzz_cache.c - libFuzzer target for JIT cache entries (driver/cache.c).
 *
 * Input: bytes as the file "<key>.gcm" in a private cache directory (under
 * /dev/shm, else $TMPDIR, else /tmp; removed at exit). The key looked up and
 * the blob count asked for are taken from the entry's own header (bytes
 * 12..40), so an entry is always looked up as what it claims to be; when the
 * input is at least a header long the harness also writes the payload-size
 * and XXH64 fields (bytes 40..56), so mutations reach the blob table (those
 * two checks are one comparison each, covered by test_cache). Properties,
 * each aborting on a violation:
 *   - gc_cache_get either hits or misses; a miss leaves out[] zeroed, counts a
 *     rejection and removes the file;
 *   - a hit returns blobs whose sizes add up to the payload, each
 *     NUL-terminated one past its length;
 *   - storing the blobs again under another key (gc_cache_put) writes exactly
 *     the input's bytes (the format is canonical), and looking that key up
 *     hits with the same blobs; gc_cache_evict with a budget smaller than the
 *     directory removes entries and never the directory.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/ir.h"
#include "driver/cache.h"
#include "driver/settings.h"

#define MAX_BLOBS 16

static gc_cache g_cache;
static char g_dir[512];

/* Describe the violation and abort. */
static void fail(const char *what) {
  fprintf(stderr, "fuzz_cache: %s (cache note: '%s')\n", what, g_cache.note);
  abort();
}

static uint64_t get_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static void put_le(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Remove every file in the cache directory (and, at exit, the directory). */
static void clear_dir(int and_dir) {
  DIR *d = opendir(g_dir);
  if (d) {
    struct dirent *e;
    char path[1024];
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  if (and_dir) rmdir(g_dir);
}
static void at_exit(void) {
  clear_dir(1);
  gc_cache_close(&g_cache);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A private cache directory for this process. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/graphc-fuzz-cache-%ld", base ? base : "/tmp", (long)getpid());
  setenv("GRAPHC_CACHE_DIR", g_dir, 1);
  unsetenv("GRAPHC_CACHE");
  unsetenv("GRAPHC_CACHE_MAX_MB");
  gc_settings s;
  gc_settings_read(&s);
  gc_cache_open(&g_cache, &s);
  if (!g_cache.enabled) fail("cannot open the cache directory");
  atexit(at_exit);
  return 0;
}

/* Read a whole file (malloc'd); NULL when absent. */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *p = NULL;
  size_t cap = 0;
  *len = 0;
  for (;;) {
    if (*len == cap) {
      cap = cap ? 2 * cap : 4096;
      unsigned char *np = realloc(p, cap);
      if (!np) abort();
      p = np;
    }
    size_t got = fread(p + *len, 1, cap - *len, f);
    *len += got;
    if (got == 0) break;
  }
  fclose(f);
  return p;
}

static void write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) fail("cannot write the entry");
}

static void free_blobs(gc_cache_blob *b, int n) {
  for (int i = 0; i < n; i++) free(b[i].data);
}

/* libFuzzer entry. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) abort();
  memcpy(buf, data, size);
  gc_hash128 key = {0, 0, 0};
  int n = 1;
  if (size >= 40) {
    uint64_t cn = get_le(buf + 12, 4);
    n = cn > MAX_BLOBS ? MAX_BLOBS : (int)cn;
    key.a = get_le(buf + 16, 8);
    key.b = get_le(buf + 24, 8);
    key.len = get_le(buf + 32, 8);
  }
  if (size >= 64) {
    put_le(buf + 40, size - 64, 8);
    put_le(buf + 48, gc_xxh64(buf + 64, size - 64, 0), 8);
  }
  char path[4200];
  gc_cache_entry_path(&g_cache, &key, path, sizeof path);
  write_file(path, buf, size);

  gc_cache_blob out[MAX_BLOBS + 1];
  int rejected = g_cache.rejected;
  int hit = gc_cache_get(&g_cache, &key, n, out);
  if (!hit) {
    for (int i = 0; i < n; i++)
      if (out[i].data || out[i].len) fail("a miss left a blob behind");
    if (g_cache.rejected != rejected + 1) fail("a damaged entry was not counted as rejected");
    if (access(path, F_OK) == 0) fail("a damaged entry was not removed");
    free(buf);
    return 0;
  }
  /* A hit: the blobs are the payload. */
  uint64_t total = 8 * (uint64_t)n;
  for (int i = 0; i < n; i++) {
    if (!out[i].data) fail("a hit returned a NULL blob");
    if (((const char *)out[i].data)[out[i].len] != 0) fail("a blob is not NUL-terminated");
    total += out[i].len;
  }
  if (size < 64 || total != size - 64) fail("the blobs do not add up to the payload");
  /* Store them under another key: the same bytes but for the key, then a hit. */
  gc_hash128 key2 = key;
  key2.a ^= 1;
  if (gc_cache_put(&g_cache, &key2, n, out) != 0) fail("storing a valid entry failed");
  char path2[4200];
  gc_cache_entry_path(&g_cache, &key2, path2, sizeof path2);
  size_t len2 = 0;
  unsigned char *bytes2 = slurp(path2, &len2);
  if (!bytes2) fail("the stored entry is not there");
  put_le(buf + 16, key2.a, 8);
  if (len2 != size || memcmp(bytes2, buf, size) != 0) fail("the writer's bytes differ from the entry");
  free(bytes2);
  gc_cache_blob again[MAX_BLOBS + 1];
  if (!gc_cache_get(&g_cache, &key2, n, again)) fail("the stored entry does not hit");
  for (int i = 0; i < n; i++)
    if (again[i].len != out[i].len || memcmp(again[i].data, out[i].data, out[i].len) != 0)
      fail("a blob changed in the store + lookup round trip");
  free_blobs(again, n);
  free_blobs(out, n);
  /* Evict down to less than the directory holds: something goes, the directory stays. */
  uint64_t keep = g_cache.max_bytes;
  g_cache.max_bytes = size / 2;
  if (gc_cache_evict(&g_cache) < 1) fail("eviction over budget removed nothing");
  g_cache.max_bytes = keep;
  struct stat st;
  if (stat(g_dir, &st) != 0 || !S_ISDIR(st.st_mode)) fail("eviction removed the directory");
  clear_dir(0);
  free(buf);
  return 0;
}
