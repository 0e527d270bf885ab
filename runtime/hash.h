/* hash.h - XXH64, the one hash graphc's files use: bundle checksums, cache
 * entry checksums and (with two seeds) cache keys. Header-only, no state but
 * the caller's.
 *
 * XXH64 is Yann Collet's xxHash, 64-bit variant (spec:
 * github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md), written here from
 * the specification so libgraphc_rt depends on nothing; tests/test_bundle.c
 * checks it against the specification's reference values. It reads ~8 bytes
 * per step in four independent lanes, so checksumming a bundle of weights
 * costs a fraction of copying it to the GPU; anyone can verify a file with
 * `xxhsum -H1` or python's xxhash.xxh64.
 */
#ifndef GC_HASH_H
#define GC_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GC_XXH_P1 UINT64_C(0x9E3779B185EBCA87)
#define GC_XXH_P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define GC_XXH_P3 UINT64_C(0x165667B19E3779F9)
#define GC_XXH_P4 UINT64_C(0x85EBCA77C2B2AE63)
#define GC_XXH_P5 UINT64_C(0x27D4EB2F165667C5)

/* Streaming XXH64 state. */
typedef struct gc_xxh64_state {
  uint64_t total, v[4];
  unsigned char buf[32];
  size_t nbuf;
  uint64_t seed;
} gc_xxh64_state;

static inline uint64_t gc_xxh_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads (any alignment). */
static inline uint64_t gc_xxh_read64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static inline uint64_t gc_xxh_read32(const unsigned char *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

/* One lane step. */
static inline uint64_t gc_xxh_round(uint64_t acc, uint64_t in) {
  acc += in * GC_XXH_P2;
  acc = gc_xxh_rotl(acc, 31);
  return acc * GC_XXH_P1;
}

/* Fold a lane into the final accumulator. */
static inline uint64_t gc_xxh_merge(uint64_t acc, uint64_t v) {
  acc ^= gc_xxh_round(0, v);
  return acc * GC_XXH_P1 + GC_XXH_P4;
}

/* Start a hash with `seed`. */
static inline void gc_xxh64_init(gc_xxh64_state *s, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->seed = seed;
  s->v[0] = seed + GC_XXH_P1 + GC_XXH_P2;
  s->v[1] = seed + GC_XXH_P2;
  s->v[2] = seed;
  s->v[3] = seed - GC_XXH_P1;
}

/* Process whole 32-byte stripes of p (n a multiple of 32). */
static inline void gc_xxh64_stripes(gc_xxh64_state *s, const unsigned char *p, size_t n) {
  uint64_t v0 = s->v[0], v1 = s->v[1], v2 = s->v[2], v3 = s->v[3];
  for (size_t i = 0; i < n; i += 32) {
    v0 = gc_xxh_round(v0, gc_xxh_read64(p + i));
    v1 = gc_xxh_round(v1, gc_xxh_read64(p + i + 8));
    v2 = gc_xxh_round(v2, gc_xxh_read64(p + i + 16));
    v3 = gc_xxh_round(v3, gc_xxh_read64(p + i + 24));
  }
  s->v[0] = v0, s->v[1] = v1, s->v[2] = v2, s->v[3] = v3;
}

/* Add n bytes. */
static inline void gc_xxh64_update(gc_xxh64_state *s, const void *data, size_t n) {
  const unsigned char *p = data;
  if (n == 0) return;
  s->total += n;
  if (s->nbuf) {
    size_t take = 32 - s->nbuf < n ? 32 - s->nbuf : n;
    memcpy(s->buf + s->nbuf, p, take);
    s->nbuf += take;
    p += take;
    n -= take;
    if (s->nbuf < 32) return;
    gc_xxh64_stripes(s, s->buf, 32);
    s->nbuf = 0;
  }
  size_t whole = n & ~(size_t)31;
  gc_xxh64_stripes(s, p, whole);
  memcpy(s->buf, p + whole, n - whole);
  s->nbuf = n - whole;
}

/* The hash of everything added (the state stays usable). */
static inline uint64_t gc_xxh64_digest(const gc_xxh64_state *s) {
  uint64_t h;
  if (s->total >= 32) {
    h = gc_xxh_rotl(s->v[0], 1) + gc_xxh_rotl(s->v[1], 7) + gc_xxh_rotl(s->v[2], 12) +
        gc_xxh_rotl(s->v[3], 18);
    for (int i = 0; i < 4; i++) h = gc_xxh_merge(h, s->v[i]);
  } else {
    h = s->seed + GC_XXH_P5;
  }
  h += s->total;
  const unsigned char *p = s->buf;
  size_t n = s->nbuf;
  for (; n >= 8; p += 8, n -= 8) {
    h ^= gc_xxh_round(0, gc_xxh_read64(p));
    h = gc_xxh_rotl(h, 27) * GC_XXH_P1 + GC_XXH_P4;
  }
  if (n >= 4) {
    h ^= gc_xxh_read32(p) * GC_XXH_P1;
    h = gc_xxh_rotl(h, 23) * GC_XXH_P2 + GC_XXH_P3;
    p += 4;
    n -= 4;
  }
  for (; n; p++, n--) {
    h ^= *p * GC_XXH_P5;
    h = gc_xxh_rotl(h, 11) * GC_XXH_P1;
  }
  h ^= h >> 33;
  h *= GC_XXH_P2;
  h ^= h >> 29;
  h *= GC_XXH_P3;
  h ^= h >> 32;
  return h;
}

/* XXH64 of n bytes in one call. */
static inline uint64_t gc_xxh64(const void *data, size_t n, uint64_t seed) {
  gc_xxh64_state s;
  gc_xxh64_init(&s, seed);
  gc_xxh64_update(&s, data, n);
  return gc_xxh64_digest(&s);
}

/* A 128-bit cache key: XXH64 of the same bytes with seeds 0 and 1, and the length. */
typedef struct gc_hash128 {
  uint64_t a, b;
  uint64_t len;
  gc_xxh64_state sa, sb;         /* running states; a and b are their digests */
} gc_hash128;

/* Start a fresh key. */
static inline void gc_hash128_init(gc_hash128 *h) {
  memset(h, 0, sizeof *h);
  gc_xxh64_init(&h->sa, 0);
  gc_xxh64_init(&h->sb, 1);
  h->a = gc_xxh64_digest(&h->sa);
  h->b = gc_xxh64_digest(&h->sb);
}

/* Add n bytes at p to the key. */
static inline void gc_hash128_add(gc_hash128 *h, const void *p, size_t n) {
  gc_xxh64_update(&h->sa, p, n);
  gc_xxh64_update(&h->sb, p, n);
  h->len += n;
  h->a = gc_xxh64_digest(&h->sa);
  h->b = gc_xxh64_digest(&h->sb);
}

/* Add a labelled field: "name=", the length as 8 little-endian bytes, the
 * bytes; so ("ab","c") and ("a","bc") give different keys. */
static inline void gc_hash128_field(gc_hash128 *h, const char *name, const void *p, size_t n) {
  unsigned char len[8];
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)n >> (8 * i));
  gc_hash128_add(h, name, strlen(name));
  gc_hash128_add(h, "=", 1);
  gc_hash128_add(h, len, 8);
  gc_hash128_add(h, p, n);
}

#endif /* GC_HASH_H */
