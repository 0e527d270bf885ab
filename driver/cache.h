/* cache.h - the persistent JIT cache: compiled modules on disk, keyed by a
 * hash of everything that affects their bytes.
 *
 *   key = hash(generated code, arch, codegen path, compiler versions, graphc
 *         version, build identity)          (runtime/cuda_backend.c builds it)
 *   <dir>/<32 hex digits of the key>.gcm   one entry: header + blobs (cubin, PTX)
 *
 * Where (from the settings, driver/settings.h): $GRAPHC_CACHE_DIR, else
 * $XDG_CACHE_HOME/graphc, else ~/.cache/graphc.
 * GRAPHC_CACHE=off (or 0, no, false) disables it. GRAPHC_CACHE_MAX_MB caps its
 * size (default 256); after each store, the least recently used entries
 * (oldest mtime; a hit refreshes it) are removed until the total fits.
 *
 * Safety: an entry is written to a temporary file in the same directory and
 * renamed into place, so readers see a whole entry or none, and several
 * processes may store the same key at once. Each entry carries its full key
 * and an XXH64 checksum of its contents: a truncated, corrupted or foreign
 * file is a miss (counted as rejected), removed, and rewritten by the store
 * that follows the recompilation. The cache never fails a compilation: when
 * it cannot be used it says why in `note` and behaves as disabled.
 * Entry layout: docs/bundle.md ("The JIT cache").
 */
#ifndef GC_CACHE_H
#define GC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "driver/settings.h"
#include "runtime/hash.h"

#define GC_CACHE_DEFAULT_MAX_MB 256

typedef struct gc_cache {
  int enabled;
  char *dir;              /* malloc'd; NULL when disabled */
  uint64_t max_bytes;
  int hits, misses;       /* lookups */
  int stores, evicted;    /* entries written, entries removed to fit max_bytes */
  int rejected;           /* entries found damaged or foreign */
  char note[512];         /* why disabled, or the last problem met; "" if none */
} gc_cache;

/* Configure from the settings s (GRAPHC_CACHE*, XDG_CACHE_HOME, HOME) and create the
 * directory. Never fails: a cache that cannot be used is disabled, with the reason
 * in c->note. */
void gc_cache_open(gc_cache *c, const gc_settings *s);
/* Free what open allocated (the files stay). */
void gc_cache_close(gc_cache *c);

typedef struct gc_cache_blob {
  void *data;             /* get: malloc'd by the cache, freed by the caller */
  size_t len;
} gc_cache_blob;

/* Look up key; on a hit fill out[0..n) (each malloc'd, NUL-terminated one
 * past len) and return 1. A miss (absent, damaged, foreign, or an entry with
 * a different blob count) returns 0 with out zeroed. */
int gc_cache_get(gc_cache *c, const gc_hash128 *key, int n, gc_cache_blob *out);
/* Store n blobs under key (atomically), then evict down to max_bytes.
 * Returns 0 when stored, -1 when not (reason in c->note). */
int gc_cache_put(gc_cache *c, const gc_hash128 *key, int n, const gc_cache_blob *in);
/* Remove least recently used entries until the total is at most max_bytes,
 * and temporary files older than an hour. Returns the entries removed. */
int gc_cache_evict(gc_cache *c);
/* Add the fields every key starts with: the graphc version and the identity of
 * the library holding this code (its file's size and mtime), so a rebuilt graphc
 * never reads what another build stored. */
void gc_cache_key_identity(gc_hash128 *key);
/* Path of key's entry (for tests and messages). */
void gc_cache_entry_path(const gc_cache *c, const gc_hash128 *key, char *buf, size_t len);
/* One line for stats: "cache: 1 hit, 0 misses (DIR)" or "cache: off (why)". */
void gc_cache_describe(const gc_cache *c, char *buf, size_t len);

#endif /* GC_CACHE_H */
