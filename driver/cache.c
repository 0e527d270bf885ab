/* cache.c - the persistent JIT cache (see cache.h and docs/bundle.md).
 *
 * An entry file:
 *   0   8  magic "\x89GCM\r\n\x1a\n"
 *   8   4  entry format version (1), little-endian like every field
 *   12  4  number of blobs n
 *   16  24 the key: lane a, lane b, bytes hashed (u64 each)
 *   40  8  payload size P
 *   48  8  XXH64 (seed 0) of the payload
 *   56  8  zero
 *   64  P  payload: n u64 blob sizes, then the blobs back to back
 * Written to "<key>.gcm.tmp.<pid>.<n>" and renamed to "<key>.gcm".
 */
#define _GNU_SOURCE
#include "driver/cache.h"

#include "ir/ir.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_MAGIC "\x89GCM\r\n\x1a\n"
#define ENTRY_VERSION 1
#define HEADER_BYTES 64
#define ENTRY_EXT ".gcm"
#define MAX_ENTRY_BYTES ((uint64_t)1 << 32)
#define STALE_TMP_SECONDS 3600

/* Little-endian field access. */
static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Keep the first problem worth telling the user (printf-style). */
static void note(gc_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(gc_cache *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->note, sizeof c->note, fmt, ap);
  va_end(ap);
}

/* mkdir -p with mode 0700 for what it creates; 0 when dir exists afterwards. */
static int make_dirs(const char *dir) {
  char *p = strdup(dir);
  if (!p) return -1;
  int rc = 0;
  for (char *s = p + 1; ; s++) {
    if (*s == '/' || *s == 0) {
      char save = *s;
      *s = 0;
      if (mkdir(p, 0700) != 0 && errno != EEXIST) rc = -1;
      *s = save;
      if (!save || rc) break;
    }
  }
  free(p);
  struct stat st;
  return rc == 0 && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* 1 when the variable says "off". */
static int is_off(const char *v) {
  return v && (strcmp(v, "off") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0 ||
               strcmp(v, "false") == 0 || strcmp(v, "OFF") == 0);
}

void gc_cache_open(gc_cache *c, const gc_settings *s) {
  memset(c, 0, sizeof *c);
  c->max_bytes = (uint64_t)GC_CACHE_DEFAULT_MAX_MB << 20;
  if (is_off(s->cache)) {
    note(c, "GRAPHC_CACHE=%s", s->cache);
    return;
  }
  const char *mb = s->cache_max_mb;
  if (mb && *mb) {
    char *end;
    unsigned long long v = strtoull(mb, &end, 10);
    if (*end || v == 0 || v > (1ull << 30))
      note(c, "ignoring GRAPHC_CACHE_MAX_MB=%s (expected a positive number of MiB)", mb);
    else
      c->max_bytes = (uint64_t)v << 20;
  }
  const char *env = s->cache_dir;
  gc_sbuf b = {0};
  if (env && *env) {
    gc_sbuf_puts(&b, env);
  } else if ((env = s->xdg_cache_home) && env[0] == '/') {
    gc_sbuf_printf(&b, "%s/graphc", env);
  } else if ((env = s->home) && *env) {
    gc_sbuf_printf(&b, "%s/.cache/graphc", env);
  } else {
    note(c, "no cache directory: set GRAPHC_CACHE_DIR, XDG_CACHE_HOME or HOME");
    return;
  }
  char *dir = gc_sbuf_take(&b);
  if (!dir) {
    note(c, "out of memory");
    return;
  }
  while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/') dir[strlen(dir) - 1] = 0;
  if (make_dirs(dir) != 0 || access(dir, W_OK | X_OK) != 0) {
    note(c, "cannot use cache directory '%s': %s", dir, strerror(errno));
    free(dir);
    return;
  }
  c->dir = dir;
  c->enabled = 1;
}

void gc_cache_close(gc_cache *c) {
  if (!c) return;
  free(c->dir);
  c->dir = NULL;
  c->enabled = 0;
}

void gc_cache_entry_path(const gc_cache *c, const gc_hash128 *key, char *buf, size_t len) {
  snprintf(buf, len, "%s/%016llx%016llx" ENTRY_EXT, c->dir ? c->dir : ".",
           (unsigned long long)key->a, (unsigned long long)key->b);
}

void gc_cache_describe(const gc_cache *c, char *buf, size_t len) {
  if (!c->enabled)
    snprintf(buf, len, "cache: off (%s)", c->note[0] ? c->note : "disabled");
  else
    snprintf(buf, len, "cache: %d hit%s, %d miss%s, %d stored, %d evicted, %d rejected (%s)%s%s",
             c->hits, c->hits == 1 ? "" : "s", c->misses, c->misses == 1 ? "" : "es", c->stores,
             c->evicted, c->rejected, c->dir, c->note[0] ? "; " : "", c->note);
}

/* Read all of fd (size `size`) into a malloc'd buffer; NULL on a short read. */
static unsigned char *read_all(int fd, size_t size) {
  unsigned char *p = malloc(size ? size : 1);
  size_t got = 0;
  while (p && got < size) {
    ssize_t r = read(fd, p + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      free(p);
      return NULL;
    }
    got += (size_t)r;
  }
  return p;
}

/* Validate an entry image against key and n; 0 when it is whole and ours. */
static int check_entry(const unsigned char *p, size_t size, const gc_hash128 *key, int n) {
  if (size < HEADER_BYTES || memcmp(p, ENTRY_MAGIC, 8) != 0) return -1;
  if (get_u32(p + 8) != ENTRY_VERSION || get_u32(p + 12) != (uint32_t)n) return -1;
  if (get_u64(p + 16) != key->a || get_u64(p + 24) != key->b || get_u64(p + 32) != key->len)
    return -1;
  uint64_t payload = get_u64(p + 40);
  if (get_u64(p + 56) != 0) return -1;
  if (payload != size - HEADER_BYTES || payload < 8 * (uint64_t)n) return -1;
  if (gc_xxh64(p + HEADER_BYTES, payload, 0) != get_u64(p + 48)) return -1;
  uint64_t total = 8 * (uint64_t)n;
  for (int i = 0; i < n; i++) {
    uint64_t len = get_u64(p + HEADER_BYTES + 8 * (size_t)i);
    if (len > payload - total) return -1;
    total += len;
  }
  return total == payload ? 0 : -1;
}

int gc_cache_get(gc_cache *c, const gc_hash128 *key, int n, gc_cache_blob *out) {
  memset(out, 0, (size_t)n * sizeof *out);
  if (!c->enabled) return 0;
  char path[4200];
  gc_cache_entry_path(c, key, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    c->misses++;
    return 0;
  }
  struct stat st;
  unsigned char *p = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= MAX_ENTRY_BYTES)
    p = read_all(fd, (size_t)st.st_size);
  close(fd);
  if (!p || check_entry(p, (size_t)st.st_size, key, n) != 0) {
    /* Damaged, truncated or not ours: a miss; remove it so it gets rewritten. */
    free(p);
    c->misses++;
    c->rejected++;
    note(c, "rejected damaged or foreign entry %s", path);
    unlink(path);
    return 0;
  }
  size_t off = HEADER_BYTES + 8 * (size_t)n;
  for (int i = 0; i < n; i++) {
    size_t len = (size_t)get_u64(p + HEADER_BYTES + 8 * (size_t)i);
    out[i].data = malloc(len + 1);
    if (!out[i].data) {
      for (int j = 0; j < i; j++) free(out[j].data);
      memset(out, 0, (size_t)n * sizeof *out);
      free(p);
      c->misses++;
      note(c, "out of memory reading %s", path);
      return 0;
    }
    memcpy(out[i].data, p + off, len);
    ((char *)out[i].data)[len] = 0;
    out[i].len = len;
    off += len;
  }
  free(p);
  utimensat(AT_FDCWD, path, NULL, 0);   /* recently used: evicted last */
  c->hits++;
  return 1;
}

/* Write all of buf to fd; 0 on success. */
static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int gc_cache_put(gc_cache *c, const gc_hash128 *key, int n, const gc_cache_blob *in) {
  if (!c->enabled) return -1;
  uint64_t payload = 8 * (uint64_t)n;
  for (int i = 0; i < n; i++) payload += in[i].len;
  if (payload + HEADER_BYTES > c->max_bytes || payload + HEADER_BYTES > MAX_ENTRY_BYTES) {
    note(c, "entry of %llu bytes is larger than the cache", (unsigned long long)payload);
    return -1;
  }
  unsigned char head[HEADER_BYTES] = {0};
  unsigned char *lens = malloc(8 * (size_t)n + 1);
  if (!lens) return -1;
  gc_xxh64_state hs;
  gc_xxh64_init(&hs, 0);
  for (int i = 0; i < n; i++) put_u64(lens + 8 * i, in[i].len);
  gc_xxh64_update(&hs, lens, 8 * (size_t)n);
  for (int i = 0; i < n; i++) gc_xxh64_update(&hs, in[i].data, in[i].len);
  uint64_t h = gc_xxh64_digest(&hs);
  memcpy(head, ENTRY_MAGIC, 8);
  put_u32(head + 8, ENTRY_VERSION);
  put_u32(head + 12, (uint32_t)n);
  put_u64(head + 16, key->a);
  put_u64(head + 24, key->b);
  put_u64(head + 32, key->len);
  put_u64(head + 40, payload);
  put_u64(head + 48, h);

  char path[4200], tmp[4300];
  gc_cache_entry_path(c, key, path, sizeof path);
  int fd = -1;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  /* A name no other writer uses: pid plus a counter seeded from the clock. */
  for (unsigned k = 0; k < 100 && fd < 0; k++) {
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lx", path, (long)getpid(),
             (unsigned long)(ts.tv_nsec + k * 7919u));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  int rc = -1;
  if (fd < 0) {
    note(c, "cannot create a file in %s: %s", c->dir, strerror(errno));
  } else {
    int bad = write_all(fd, head, sizeof head) || write_all(fd, lens, 8 * (size_t)n);
    for (int i = 0; i < n && !bad; i++) bad = write_all(fd, in[i].data, in[i].len);
    int err = errno;
    if (close(fd) != 0 && !bad) bad = 1, err = errno;
    if (!bad && rename(tmp, path) == 0) {
      rc = 0;
      c->stores++;
    } else {
      note(c, "cannot write %s: %s", path, strerror(bad ? err : errno));
      unlink(tmp);
    }
  }
  free(lens);
  if (rc == 0) gc_cache_evict(c);
  return rc;
}

typedef struct cache_file {
  char *name;
  uint64_t size;
  struct timespec mtime;
} cache_file;

/* Oldest first; the name breaks ties so the order is deterministic. */
static int by_age(const void *pa, const void *pb) {
  const cache_file *a = pa, *b = pb;
  if (a->mtime.tv_sec != b->mtime.tv_sec) return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
  if (a->mtime.tv_nsec != b->mtime.tv_nsec) return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* 1 when name is "<32 hex digits>.gcm", optionally followed by ".tmp..." (*tmp = 1). */
static int is_ours(const char *name, int *tmp) {
  for (int i = 0; i < 32; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
  if (strncmp(name + 32, ENTRY_EXT, 4) != 0) return 0;
  *tmp = strncmp(name + 36, ".tmp.", 5) == 0;
  return name[36] == 0 || *tmp;
}

int gc_cache_evict(gc_cache *c) {
  if (!c->enabled) return 0;
  DIR *dir = opendir(c->dir);
  if (!dir) return 0;
  cache_file *files = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  char path[4400];
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    int tmp = 0;
    if (!is_ours(e->d_name, &tmp)) continue;
    snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (tmp) {  /* left behind by a writer that died */
      if (now - st.st_mtime > STALE_TMP_SECONDS) unlink(path);
      continue;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      cache_file *nf = realloc(files, cap * sizeof *nf);
      if (!nf) break;
      files = nf;
    }
    files[n].name = strdup(e->d_name);
    if (!files[n].name) break;
    files[n].size = (uint64_t)st.st_size;
    files[n].mtime = st.st_mtim;
    total += files[n].size;
    n++;
  }
  closedir(dir);
  int removed = 0;
  if (total > c->max_bytes && n) {
    qsort(files, n, sizeof *files, by_age);
    for (size_t i = 0; i < n && total > c->max_bytes; i++) {
      snprintf(path, sizeof path, "%s/%s", c->dir, files[i].name);
      if (unlink(path) == 0 || errno == ENOENT) removed++;
      total -= files[i].size;
    }
  }
  for (size_t i = 0; i < n; i++) free(files[i].name);
  free(files);
  c->evicted += removed;
  return removed;
}

void gc_cache_key_identity(gc_hash128 *key) {
  static const char version[] = GRAPHC_VERSION_STRING;
  gc_hash128_field(key, "graphc", version, strlen(version));
  Dl_info info;
  struct stat st;
  char id[128] = "unknown";
  if (dladdr((void *)&gc_cache_key_identity, &info) && info.dli_fname &&
      stat(info.dli_fname, &st) == 0)
    snprintf(id, sizeof id, "%lld:%lld.%09ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
             (long)st.st_mtim.tv_nsec);
  gc_hash128_field(key, "build", id, strlen(id));
}
