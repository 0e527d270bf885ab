/* bundle.c - writing and reading .gcx bundles (layout: docs/bundle.md).
 *
 * Writer: header placeholder, then sections in a fixed order (META, SIGN,
 * PLAN..., WGHT, IMAG...), then the size and checksum patched into the header.
 * Everything is little-endian; strings are a u32 length and the bytes; each
 * section starts 8-byte aligned; cubins, PTX and const data start 64-byte
 * aligned (file offsets), so a file read into malloc'd memory hands the driver
 * aligned images.
 *
 * Reader: header checks (magic, version, size, checksum), then every section
 * through a bounds-checked cursor; counts are checked against the bytes left
 * before anything is allocated, so a damaged file never makes a huge
 * allocation or reads out of bounds.
 */
#include "runtime/bundle.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/hash.h"

#define SEC_META 0x4154454du  /* "META" read as a little-endian u32 */
#define SEC_SIGN 0x4e474953u  /* "SIGN" */
#define SEC_PLAN 0x4e414c50u  /* "PLAN" */
#define SEC_WGHT 0x54484757u  /* "WGHT" */
#define SEC_IMAG 0x47414d49u  /* "IMAG" */
#define SEC_HOST 0x54534f48u  /* "HOST" */
#define NO_BLOB 0xffffffffu

/* ---- writing ------------------------------------------------------------------------ */
typedef struct wbuf {
  unsigned char *p;
  size_t len, cap;
  int failed;
} wbuf;

/* Append n bytes (NULL: zeros). */
static void w_bytes(wbuf *w, const void *src, size_t n) {
  if (w->failed || n == 0) return;
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->len + n) cap *= 2;
    unsigned char *np = realloc(w->p, cap);
    if (!np) {
      w->failed = 1;
      return;
    }
    w->p = np;
    w->cap = cap;
  }
  if (src)
    memcpy(w->p + w->len, src, n);
  else
    memset(w->p + w->len, 0, n);
  w->len += n;
}

/* Little-endian integers at the end, or patched at position pos. */
static void put_le(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void w_u32(wbuf *w, uint32_t v) {
  unsigned char b[4];
  put_le(b, v, 4);
  w_bytes(w, b, 4);
}
static void w_u64(wbuf *w, uint64_t v) {
  unsigned char b[8];
  put_le(b, v, 8);
  w_bytes(w, b, 8);
}
static void w_i64(wbuf *w, int64_t v) { w_u64(w, (uint64_t)v); }
static void w_str(wbuf *w, const char *s) {
  size_t n = s ? strlen(s) : 0;
  w_u32(w, (uint32_t)n);
  w_bytes(w, s, n);
}
static void w_patch64(wbuf *w, size_t pos, uint64_t v) {
  if (!w->failed) put_le(w->p + pos, v, 8);
}
/* Zero-pad to a multiple of `align` (a file offset). */
static void w_align(wbuf *w, size_t align) {
  size_t r = w->len % align;
  if (r) w_bytes(w, NULL, align - r);
}

/* Start a section; returns the position of its size field. */
static size_t sec_begin(wbuf *w, uint32_t tag) {
  w_align(w, 8);
  w_u32(w, tag);
  w_u32(w, 0);
  size_t at = w->len;
  w_u64(w, 0);
  return at;
}
/* Finish the section whose size field is at `at`. */
static void sec_end(wbuf *w, size_t at) { w_patch64(w, at, w->len - (at + 8)); }

/* One signature entry. */
static void w_tensor(wbuf *w, const graphc_tensor_info_t *t) {
  w_str(w, t->name);
  w_u32(w, (uint32_t)t->dtype);
  w_u32(w, (uint32_t)t->rank);
  for (int k = 0; k < t->rank; k++) w_i64(w, t->dims[k]);
  w_u64(w, t->nbytes);
}

/* The body of a PLAN section; blob[i] is const i's blob or NO_BLOB. */
static void w_plan(wbuf *w, const gc_launch_plan *p, const uint32_t *blob) {
  w_u64(w, p->arena_bytes);
  w_u32(w, (uint32_t)p->n_buffers);
  for (int i = 0; i < p->n_buffers; i++) {
    w_u32(w, (uint32_t)p->buffers[i].kind);
    w_u32(w, (uint32_t)p->buffers[i].index);
    w_u64(w, p->buffers[i].bytes);
    w_u64(w, p->buffers[i].offset);
  }
  w_u32(w, (uint32_t)p->n_consts);
  for (int i = 0; i < p->n_consts; i++) {
    const gc_lp_const *c = &p->consts[i];
    w_str(w, c->name);
    w_u64(w, c->bytes);
    w_u32(w, c->is_param ? 1u : 0u);
    w_u32(w, blob[i]);
    w_u32(w, (uint32_t)c->dtype);
    w_u32(w, (uint32_t)c->rank);
    for (int k = 0; k < c->rank; k++) w_i64(w, c->dims[k]);
  }
  w_u32(w, (uint32_t)p->n_kernels);
  for (int i = 0; i < p->n_kernels; i++) {
    const gc_lp_kernel *k = &p->kernels[i];
    w_str(w, k->name);
    w_u32(w, (uint32_t)k->kind);
    w_i64(w, k->n);
    w_u32(w, (uint32_t)k->block);
    w_u32(w, (uint32_t)k->smem);
    w_u32(w, (uint32_t)k->n_params);
    for (int j = 0; j < k->n_params; j++) {
      w_u32(w, (uint32_t)k->params[j].kind);
      w_i64(w, k->params[j].value);
    }
  }
  w_u32(w, (uint32_t)p->n_launches);
  for (int i = 0; i < p->n_launches; i++) w_u32(w, (uint32_t)p->launches[i]);
  w_u32(w, (uint32_t)p->n_prologue);
  w_u32(w, (uint32_t)p->n_tmaps);
  for (int i = 0; i < p->n_tmaps; i++) {
    const gc_lp_tmap *t = &p->tmaps[i];
    w_u32(w, (uint32_t)t->buffer);
    w_u32(w, (uint32_t)t->dtype);
    w_u32(w, (uint32_t)t->rank);
    w_u32(w, (uint32_t)t->swizzle);
    w_u64(w, t->offset);
    for (int k = 0; k < t->rank && k < GC_LP_TMAP_MAX_RANK; k++) {  /* a bad rank: the reader's error */
      w_i64(w, t->dims[k]);
      w_i64(w, t->strides[k]);
      w_u32(w, (uint32_t)t->box[k]);
    }
  }
}

typedef struct blob_ref {
  const void *data;
  uint64_t bytes;
} blob_ref;

uint64_t gc_bundle_checksum(const void *data, size_t len) {
  const unsigned char *p = data;
  /* The first 32 bytes with the checksum field (bytes 24..31) read as zero. */
  unsigned char head[32] = {0};
  size_t nhead = len < 32 ? len : 32;
  memcpy(head, p, nhead < 24 ? nhead : 24);
  gc_xxh64_state s;
  gc_xxh64_init(&s, 0);
  gc_xxh64_update(&s, head, nhead);
  if (len > 32) gc_xxh64_update(&s, p + 32, len - 32);
  return gc_xxh64_digest(&s);
}

int gc_bundle_write(const gc_bundle *b, int embed_weights, void **out, size_t *len, gc_diags *d) {
  *out = NULL;
  *len = 0;
  GC_ASSERT(b->n_plans >= 1 && (b->n_images >= 1 || b->host));
  for (int i = 0; i < b->n_plans; i++)
    if (b->plans[i].n_states) {
      gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0},
                  "the graph declares states (state \"%s\"): bundles and --emit c do not hold "
                  "states yet; run it with the JIT API (graphc_compile)", b->plans[i].states[0].name);
      return -1;
    }
  wbuf w = {0};
  int rc = -1;
  /* Const data: one blob per distinct content, in first-use order. */
  int total_consts = 0;
  for (int i = 0; i < b->n_plans; i++) total_consts += b->plans[i].n_consts;
  uint32_t *blob_of = calloc((size_t)total_consts + 1, sizeof *blob_of);
  blob_ref *blobs = calloc((size_t)total_consts + 1, sizeof *blobs);
  int *plan_slot = calloc((size_t)b->n_plans + 1, sizeof *plan_slot);
  wbuf *plan_bytes = calloc((size_t)b->n_plans + 1, sizeof *plan_bytes);
  int n_blobs = 0;
  if (!blob_of || !blobs || !plan_slot || !plan_bytes) goto oom;
  for (int i = 0, at = 0; i < b->n_plans; i++)
    for (int c = 0; c < b->plans[i].n_consts; c++, at++) {
      const gc_lp_const *k = &b->plans[i].consts[c];
      blob_of[at] = NO_BLOB;
      if (k->is_param && !embed_weights) continue;
      if (!k->data && k->bytes) {
        gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "const '%s' has no data to embed",
                    k->name);
        goto out;
      }
      for (int j = 0; j < n_blobs && blob_of[at] == NO_BLOB; j++)
        if (blobs[j].bytes == k->bytes && (!k->bytes || memcmp(blobs[j].data, k->data, k->bytes) == 0))
          blob_of[at] = (uint32_t)j;
      if (blob_of[at] == NO_BLOB) {
        blobs[n_blobs] = (blob_ref){k->data, k->bytes};
        blob_of[at] = (uint32_t)n_blobs++;
      }
    }
  /* Plans: identical bodies are stored once (plan_slot maps to the stored index). */
  int n_stored = 0;
  for (int i = 0, at = 0; i < b->n_plans; i++) {
    wbuf *pb = &plan_bytes[n_stored];
    w_plan(pb, &b->plans[i], blob_of + at);
    at += b->plans[i].n_consts;
    if (pb->failed) goto oom;
    plan_slot[i] = n_stored;
    for (int j = 0; j < n_stored; j++)
      if (plan_bytes[j].len == pb->len && memcmp(plan_bytes[j].p, pb->p, pb->len) == 0) {
        plan_slot[i] = j;
        break;
      }
    if (plan_slot[i] == n_stored)
      n_stored++;
    else
      free(pb->p), *pb = (wbuf){0};
  }

  w_bytes(&w, NULL, GC_BUNDLE_HEADER_BYTES);
  size_t at = sec_begin(&w, SEC_META);
  w_u32(&w, (uint32_t)b->n_meta);
  for (int i = 0; i < b->n_meta; i++) {
    w_str(&w, b->meta_keys[i]);
    w_str(&w, b->meta_values[i]);
  }
  sec_end(&w, at);
  const gc_launch_plan *p0 = &b->plans[0];
  at = sec_begin(&w, SEC_SIGN);
  w_u32(&w, (uint32_t)p0->n_inputs);
  w_u32(&w, (uint32_t)p0->n_outputs);
  for (int i = 0; i < p0->n_inputs; i++) w_tensor(&w, &p0->inputs[i]);
  for (int i = 0; i < p0->n_outputs; i++) w_tensor(&w, &p0->outputs[i]);
  sec_end(&w, at);
  for (int i = 0; i < n_stored; i++) {
    at = sec_begin(&w, SEC_PLAN);
    w_bytes(&w, plan_bytes[i].p, plan_bytes[i].len);
    sec_end(&w, at);
  }
  at = sec_begin(&w, SEC_WGHT);
  w_u32(&w, (uint32_t)n_blobs);
  size_t table = w.len;
  w_bytes(&w, NULL, 16 * (size_t)n_blobs);
  for (int i = 0; i < n_blobs; i++) {
    w_align(&w, 64);
    w_patch64(&w, table + 16 * (size_t)i, w.len);
    w_patch64(&w, table + 16 * (size_t)i + 8, blobs[i].bytes);
    w_bytes(&w, blobs[i].data, blobs[i].bytes);
  }
  sec_end(&w, at);
  for (int i = 0; i < b->n_images; i++) {
    const gc_bundle_image *im = &b->images[i];
    GC_ASSERT(im->plan >= 0 && im->plan < b->n_plans);
    at = sec_begin(&w, SEC_IMAG);
    w_u32(&w, (uint32_t)im->sm);
    w_u32(&w, (uint32_t)plan_slot[im->plan]);
    size_t fields = w.len;
    w_bytes(&w, NULL, 32);   /* cubin offset, length; PTX offset, length (with its NUL) */
    if (im->cubin && im->cubin_len) {
      w_align(&w, 64);
      w_patch64(&w, fields, w.len);
      w_patch64(&w, fields + 8, im->cubin_len);
      w_bytes(&w, im->cubin, im->cubin_len);
    }
    if (im->ptx) {
      size_t n = strlen(im->ptx) + 1;
      w_align(&w, 64);
      w_patch64(&w, fields + 16, w.len);
      w_patch64(&w, fields + 24, n);
      w_bytes(&w, im->ptx, n);
    }
    sec_end(&w, at);
  }
  if (b->host) {
    const gc_bundle_host *h = b->host;
    GC_ASSERT(h->plan >= 0 && h->plan < b->n_plans);
    at = sec_begin(&w, SEC_HOST);
    w_str(&w, h->triple);
    w_str(&w, h->cpu);
    w_u32(&w, (uint32_t)plan_slot[h->plan]);
    w_u32(&w, (uint32_t)h->n_kernels);
    for (int i = 0; i < h->n_kernels; i++) w_u64(&w, h->work[i]);
    w_u32(&w, (uint32_t)h->n_buffers);
    for (int i = 0; i < h->n_buffers; i++) w_u32(&w, h->align[i]);
    sec_end(&w, at);
  }
  w_align(&w, 8);
  if (w.failed) goto oom;
  memcpy(w.p, GC_BUNDLE_MAGIC, 8);
  put_le(w.p + 8, GC_BUNDLE_FORMAT, 4);
  put_le(w.p + 12, GC_BUNDLE_HEADER_BYTES, 4);
  put_le(w.p + 16, w.len, 8);
  snprintf((char *)w.p + 32, 32, "%s", GRAPHC_VERSION_STRING);
  put_le(w.p + 24, gc_bundle_checksum(w.p, w.len), 8);
  *out = w.p;
  *len = w.len;
  w.p = NULL;
  rc = 0;
  goto out;
oom:
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory writing the bundle");
out:
  free(w.p);
  if (plan_bytes)
    for (int i = 0; i < b->n_plans; i++) free(plan_bytes[i].p);
  free(plan_bytes);
  free(plan_slot);
  free(blobs);
  free(blob_of);
  return rc;
}

/* ---- reading ------------------------------------------------------------------------ */
typedef struct rd {
  const unsigned char *base;  /* the whole file */
  size_t pos, end;            /* cursor and end of the current section */
  const char *err;            /* first problem, static text */
} rd;

/* Fail the cursor with a reason (keeps the first). */
static void r_fail(rd *r, const char *why) {
  if (!r->err) r->err = why;
}

/* Take n bytes; NULL (and failed) when the section has fewer left. */
static const unsigned char *r_take(rd *r, size_t n) {
  if (r->err) return NULL;
  if (n > r->end - r->pos) {
    r_fail(r, "a field runs past the end of its section");
    return NULL;
  }
  const unsigned char *p = r->base + r->pos;
  r->pos += n;
  return p;
}
static uint64_t get_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint32_t r_u32(rd *r) {
  const unsigned char *p = r_take(r, 4);
  return p ? (uint32_t)get_le(p, 4) : 0;
}
static uint64_t r_u64(rd *r) {
  const unsigned char *p = r_take(r, 8);
  return p ? get_le(p, 8) : 0;
}
static int64_t r_i64(rd *r) { return (int64_t)r_u64(r); }
/* A count of items each at least `min_item` bytes long, checked against what is left. */
static int r_count(rd *r, size_t min_item, uint32_t limit) {
  uint32_t n = r_u32(r);
  if (r->err) return 0;
  if (n > limit || (size_t)n * min_item > r->end - r->pos) {
    r_fail(r, "a count exceeds the section's size");
    return 0;
  }
  return (int)n;
}
/* A string copied into the arena (NUL-terminated); embedded NULs are damage. */
static const char *r_str(rd *r, gc_arena *a) {
  uint32_t n = r_u32(r);
  const unsigned char *p = r_take(r, n);
  if (!p) return NULL;
  if (memchr(p, 0, n)) {
    r_fail(r, "a string contains a NUL byte");
    return NULL;
  }
  char *s = gc_arena_strndup(a, (const char *)p, n);
  if (!s) r_fail(r, "out of memory");
  return s;
}
/* Zeroed arena array of n items of size sz. */
static void *r_array(rd *r, gc_arena *a, size_t n, size_t sz) {
  void *p = gc_arena_alloc(a, n * sz + 1);
  if (!p) r_fail(r, "out of memory");
  return p;
}
/* dtype, rank and dims, with range checks. */
static void r_shape(rd *r, gc_dtype *dt, int *rank, int64_t *dims) {
  uint32_t t = r_u32(r), k = r_u32(r);
  if (r->err) return;
  if (!graphc_dtype_name((gc_dtype)t) || k > GC_MAX_RANK) {
    r_fail(r, "invalid dtype or rank");
    return;
  }
  *dt = (gc_dtype)t;
  *rank = (int)k;
  for (uint32_t i = 0; i < k; i++) dims[i] = r_i64(r);
}

/* An (offset, length) pair that must lie inside [lo, hi) of the file. */
static const unsigned char *r_region(rd *r, uint64_t off, uint64_t len, size_t lo, size_t hi) {
  if (r->err) return NULL;
  if (off < lo || off > hi || len > hi - off) {
    r_fail(r, "data lies outside its section");
    return NULL;
  }
  return r->base + off;
}

static int read_meta(rd *r, gc_bundle *b) {
  int n = r_count(r, 8, 1u << 16);
  b->meta_keys = r_array(r, &b->arena, (size_t)n, sizeof *b->meta_keys);
  b->meta_values = r_array(r, &b->arena, (size_t)n, sizeof *b->meta_values);
  for (int i = 0; i < n && !r->err; i++) {
    b->meta_keys[i] = r_str(r, &b->arena);
    b->meta_values[i] = r_str(r, &b->arena);
  }
  if (!r->err) b->n_meta = n;
  return r->err ? -1 : 0;
}

/* SIGN: into the signature shared by every plan. */
static int read_sign(rd *r, gc_bundle *b, gc_launch_plan *sig) {
  int ni = r_count(r, 20, 1u << 16), no = r_count(r, 20, 1u << 16);
  sig->inputs = r_array(r, &b->arena, (size_t)ni, sizeof *sig->inputs);
  sig->outputs = r_array(r, &b->arena, (size_t)no, sizeof *sig->outputs);
  for (int i = 0; i < ni + no && !r->err; i++) {
    graphc_tensor_info_t *t = i < ni ? &sig->inputs[i] : &sig->outputs[i - ni];
    t->name = r_str(r, &b->arena);
    r_shape(r, &t->dtype, &t->rank, t->dims);
    t->nbytes = (size_t)r_u64(r);
  }
  if (r->err) return -1;
  sig->n_inputs = ni;
  sig->n_outputs = no;
  return 0;
}

/* PLAN: buffers, consts (blob indices kept in blob[]), kernels, launches, prologue,
 * tensor maps. */
static int read_plan(rd *r, gc_bundle *b, gc_launch_plan *p, uint32_t **blob) {
  p->arena_bytes = r_u64(r);
  p->n_buffers = r_count(r, 24, 1u << 24);
  p->buffers = r_array(r, &b->arena, (size_t)p->n_buffers, sizeof *p->buffers);
  for (int i = 0; i < p->n_buffers && !r->err; i++) {
    gc_lp_buffer *x = &p->buffers[i];
    x->kind = (gc_lp_buf_kind)r_u32(r);
    x->index = (int)r_u32(r);
    x->bytes = r_u64(r);
    x->offset = r_u64(r);
  }
  p->n_consts = r_count(r, 28, 1u << 24);
  p->consts = r_array(r, &b->arena, (size_t)p->n_consts, sizeof *p->consts);
  *blob = r_array(r, &b->arena, (size_t)p->n_consts, sizeof **blob);
  for (int i = 0; i < p->n_consts && !r->err; i++) {
    gc_lp_const *c = &p->consts[i];
    c->name = r_str(r, &b->arena);
    c->bytes = r_u64(r);
    c->is_param = r_u32(r) & 1;
    (*blob)[i] = r_u32(r);
    r_shape(r, &c->dtype, &c->rank, c->dims);
  }
  p->n_kernels = r_count(r, 24, 1u << 20);
  p->kernels = r_array(r, &b->arena, (size_t)p->n_kernels, sizeof *p->kernels);
  for (int i = 0; i < p->n_kernels && !r->err; i++) {
    gc_lp_kernel *k = &p->kernels[i];
    k->name = r_str(r, &b->arena);
    k->kind = (gc_lp_launch_kind)r_u32(r);
    k->n = r_i64(r);
    k->block = (int)r_u32(r);
    k->smem = (int)r_u32(r);
    k->n_params = r_count(r, 12, 4096);
    k->params = r_array(r, &b->arena, (size_t)k->n_params, sizeof *k->params);
    for (int j = 0; j < k->n_params && !r->err; j++) {
      k->params[j].kind = (gc_lp_param_kind)r_u32(r);
      k->params[j].value = r_i64(r);
    }
  }
  p->n_launches = r_count(r, 4, 1u << 24);
  p->launches = r_array(r, &b->arena, (size_t)p->n_launches, sizeof *p->launches);
  for (int i = 0; i < p->n_launches && !r->err; i++) p->launches[i] = (int)r_u32(r);
  p->n_prologue = (int)r_count(r, 0, 1u << 24);  /* at most n_launches: gc_launch_plan_check */
  p->n_tmaps = r_count(r, 24, 1u << 20);
  p->tmaps = r_array(r, &b->arena, (size_t)p->n_tmaps, sizeof *p->tmaps);
  for (int i = 0; i < p->n_tmaps && !r->err; i++) {
    gc_lp_tmap *t = &p->tmaps[i];
    t->buffer = (int)r_u32(r);
    t->dtype = (gc_dtype)r_u32(r);
    uint32_t rank = r_u32(r);
    t->swizzle = (int)r_u32(r);
    t->offset = r_u64(r);
    if (!r->err && rank > GC_LP_TMAP_MAX_RANK) r_fail(r, "a tensor map's rank is too large");
    t->rank = (int)rank;   /* below 2: gc_launch_plan_check */
    for (uint32_t k = 0; k < rank && !r->err; k++) {
      t->dims[k] = r_i64(r);
      t->strides[k] = r_i64(r);
      t->box[k] = (int)r_u32(r);
    }
  }
  return r->err ? -1 : 0;
}

/* WGHT: the blob table (pointers into the file). */
static int read_wght(rd *r, gc_bundle *b, int *n_blobs, blob_ref **blobs) {
  size_t lo = r->pos, hi = r->end;
  int n = r_count(r, 16, 1u << 24);
  *blobs = r_array(r, &b->arena, (size_t)n, sizeof **blobs);
  for (int i = 0; i < n && !r->err; i++) {
    uint64_t off = r_u64(r), len = r_u64(r);
    (*blobs)[i].data = r_region(r, off, len, lo, hi);
    (*blobs)[i].bytes = len;
  }
  r->pos = r->end;   /* the data follows the table */
  if (r->err) return -1;
  *n_blobs = n;
  return 0;
}

/* IMAG: one image, pointers into the file. */
static int read_imag(rd *r, gc_bundle_image *im) {
  size_t lo = r->pos, hi = r->end;
  im->sm = (int)r_u32(r);
  im->plan = (int)r_u32(r);
  uint64_t coff = r_u64(r), clen = r_u64(r), poff = r_u64(r), plen = r_u64(r);
  if (r->err) return -1;
  if (clen) {
    im->cubin = r_region(r, coff, clen, lo, hi);
    im->cubin_len = (size_t)clen;
    if (im->cubin && (clen < 4 || memcmp(im->cubin, "\x7f" "ELF", 4) != 0))
      r_fail(r, "a cubin is not an ELF image");
  }
  if (plen) {
    const unsigned char *p = r_region(r, poff, plen, lo, hi);
    if (p && p[plen - 1] != 0) r_fail(r, "PTX text is not NUL-terminated");
    im->ptx = (const char *)p;
  }
  if (!r->err && !im->cubin && !im->ptx) r_fail(r, "an image has neither cubin nor PTX");
  if (!r->err && (im->sm < 10 || im->sm > 10000)) r_fail(r, "an image names an invalid sm");
  r->pos = r->end;
  return r->err ? -1 : 0;
}

/* HOST: the target and the per-kernel / per-buffer tables. */
static int read_host(rd *r, gc_bundle *b) {
  gc_bundle_host *h = r_array(r, &b->arena, 1, sizeof *h);
  if (!h) return -1;
  h->triple = r_str(r, &b->arena);
  h->cpu = r_str(r, &b->arena);
  h->plan = (int)r_u32(r);
  h->n_kernels = r_count(r, 8, 1u << 20);
  h->work = r_array(r, &b->arena, (size_t)h->n_kernels, sizeof *h->work);
  for (int i = 0; i < h->n_kernels && !r->err; i++) h->work[i] = r_u64(r);
  h->n_buffers = r_count(r, 4, 1u << 24);
  h->align = r_array(r, &b->arena, (size_t)h->n_buffers, sizeof *h->align);
  for (int i = 0; i < h->n_buffers && !r->err; i++) {
    h->align[i] = r_u32(r);
    if (!r->err && (h->align[i] == 0 || h->align[i] > 64 || (h->align[i] & (h->align[i] - 1))))
      r_fail(r, "a buffer alignment is not a power of two up to 64");
  }
  if (r->err) return -1;
  b->host = h;
  return 0;
}

/* Name of a section tag for messages. */
static const char *tag_name(uint32_t tag) {
  switch (tag) {
    case SEC_META: return "META";
    case SEC_SIGN: return "SIGN";
    case SEC_PLAN: return "PLAN";
    case SEC_WGHT: return "WGHT";
    case SEC_IMAG: return "IMAG";
    case SEC_HOST: return "HOST";
    default: return "unknown";
  }
}

/* Check the header; 0 when the sections may be read. */
static int read_header(gc_bundle *b, const unsigned char *p, size_t len, const char *name,
                       gc_diags *d) {
  gc_loc nl = {0, 0};
  if (len < 8 || memcmp(p, GC_BUNDLE_MAGIC, 8) != 0) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, nl, "%s: not a graphc bundle (no .gcx magic number)", name);
    return -1;
  }
  if (len < GC_BUNDLE_HEADER_BYTES) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, nl, "%s: truncated bundle (%zu bytes, the header alone is %d)",
                name, len, GC_BUNDLE_HEADER_BYTES);
    return -1;
  }
  memcpy(b->graphc_version, p + 32, 31);
  b->graphc_version[31] = 0;
  for (char *s = b->graphc_version; *s; s++)
    if (*s < 32 || *s > 126) *s = '?';
  b->format = (unsigned)get_le(p + 8, 4);
  if (b->format != GC_BUNDLE_FORMAT) {
    gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, nl,
                "%s: bundle format version %u (written by graphc %s); this graphc (%s) reads "
                "format version %d: recompile the model with this graphc",
                name, b->format, b->graphc_version[0] ? b->graphc_version : "?",
                GRAPHC_VERSION_STRING, GC_BUNDLE_FORMAT);
    return -1;
  }
  uint64_t size = get_le(p + 16, 8);
  if (get_le(p + 12, 4) != GC_BUNDLE_HEADER_BYTES || size < GC_BUNDLE_HEADER_BYTES) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, nl, "%s: damaged bundle header", name);
    return -1;
  }
  if (size != len) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, nl, "%s: %s bundle: the header says %" PRIu64
                " bytes, there are %zu", name, size > len ? "truncated" : "damaged", size, len);
    return -1;
  }
  if (gc_bundle_checksum(p, len) != get_le(p + 24, 8)) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, nl,
                "%s: damaged bundle: checksum mismatch (the file was modified or corrupted)", name);
    return -1;
  }
  return 0;
}

int gc_bundle_read(gc_bundle *b, const void *data, size_t len, const char *name, gc_diags *d) {
  memset(b, 0, sizeof *b);
  gc_arena_init(&b->arena);
  const unsigned char *p = data;
  if (!name) name = "<bundle>";
  if (!p) len = 0;
  if (read_header(b, p, len, name, d)) return -1;

  rd r = {p, GC_BUNDLE_HEADER_BYTES, len, NULL};
  gc_launch_plan sig;
  memset(&sig, 0, sizeof sig);
  int have_meta = 0, have_sign = 0, have_wght = 0, n_blobs = 0, cap_plans = 0, cap_images = 0;
  blob_ref *blobs = NULL;
  uint32_t **plan_blobs = NULL;
  uint32_t tag = 0;
  while (!r.err && r.pos < len) {
    r.pos = (r.pos + 7) & ~(size_t)7;
    if (r.pos >= len) break;
    r.end = len;
    tag = r_u32(&r);
    r_u32(&r);
    uint64_t size = r_u64(&r);
    if (r.err) break;
    if (size > len - r.pos) {
      r_fail(&r, "a section runs past the end of the file");
      break;
    }
    r.end = r.pos + (size_t)size;
    if (tag == SEC_META && !have_meta) {
      have_meta = read_meta(&r, b) == 0;
    } else if (tag == SEC_SIGN && !have_sign) {
      have_sign = read_sign(&r, b, &sig) == 0;
    } else if (tag == SEC_PLAN && have_sign) {
      if (b->n_plans == cap_plans) {
        cap_plans = cap_plans ? 2 * cap_plans : 4;
        gc_launch_plan *np = r_array(&r, &b->arena, (size_t)cap_plans, sizeof *np);
        uint32_t **nb = r_array(&r, &b->arena, (size_t)cap_plans, sizeof *nb);
        if (r.err) break;
        if (b->n_plans) {
          memcpy(np, b->plans, (size_t)b->n_plans * sizeof *np);
          memcpy(nb, plan_blobs, (size_t)b->n_plans * sizeof *nb);
        }
        b->plans = np;
        plan_blobs = nb;
      }
      gc_launch_plan *pl = &b->plans[b->n_plans];
      if (read_plan(&r, b, pl, &plan_blobs[b->n_plans]) == 0) b->n_plans++;
    } else if (tag == SEC_WGHT && !have_wght) {
      have_wght = read_wght(&r, b, &n_blobs, &blobs) == 0;
    } else if (tag == SEC_IMAG) {
      if (b->n_images == cap_images) {
        cap_images = cap_images ? 2 * cap_images : 4;
        gc_bundle_image *ni = r_array(&r, &b->arena, (size_t)cap_images, sizeof *ni);
        if (r.err) break;
        if (b->n_images) memcpy(ni, b->images, (size_t)b->n_images * sizeof *ni);
        b->images = ni;
      }
      if (read_imag(&r, &b->images[b->n_images]) == 0) b->n_images++;
    } else if (tag == SEC_HOST && !b->host) {
      read_host(&r, b);
    } else if (tag == SEC_META || tag == SEC_SIGN || tag == SEC_WGHT || tag == SEC_PLAN ||
               tag == SEC_HOST) {
      r_fail(&r, "a section is repeated or out of order");
    } else {
      r.pos = r.end;   /* unknown section: skipped (a later minor addition) */
    }
    if (!r.err && r.pos != r.end) r_fail(&r, "a section has trailing bytes");
  }
  if (!r.err && (!have_meta || !have_sign || !have_wght || !b->n_plans ||
                 (!b->n_images && !b->host)))
    r_fail(&r, "a required section is missing");
  if (!r.err && b->host && b->n_images) r_fail(&r, "a bundle has both GPU images and host code");
  if (!r.err && b->host &&
      (b->host->plan < 0 || b->host->plan >= b->n_plans ||
       b->host->n_kernels != b->plans[b->host->plan].n_kernels ||
       b->host->n_buffers != b->plans[b->host->plan].n_buffers))
    r_fail(&r, "the host code does not match its plan");
  for (int i = 0; i < b->n_images && !r.err; i++)
    if (b->images[i].plan < 0 || b->images[i].plan >= b->n_plans)
      r_fail(&r, "an image refers to a missing plan");
  /* Resolve consts to blobs and give every plan the shared signature. */
  for (int i = 0; i < b->n_plans && !r.err; i++) {
    gc_launch_plan *pl = &b->plans[i];
    pl->n_inputs = sig.n_inputs;
    pl->inputs = sig.inputs;
    pl->n_outputs = sig.n_outputs;
    pl->outputs = sig.outputs;
    for (int c = 0; c < pl->n_consts && !r.err; c++) {
      uint32_t k = plan_blobs[i][c];
      if (k == NO_BLOB) {
        if (!pl->consts[c].is_param) r_fail(&r, "a folded constant has no data");
        continue;
      }
      if (k >= (uint32_t)n_blobs || blobs[k].bytes != pl->consts[c].bytes)
        r_fail(&r, "a const refers to missing or mis-sized data");
      else
        pl->consts[c].data = blobs[k].data;
    }
  }
  if (r.err) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "%s: damaged bundle (%s section at byte %zu): %s",
                name, tag_name(tag), r.pos, r.err);
    gc_bundle_free(b);
    return -1;
  }
  for (int i = 0; i < b->n_plans; i++) {
    char what[600];
    snprintf(what, sizeof what, "%s: damaged bundle: plan %d", name, i);
    if (gc_launch_plan_check(&b->plans[i], GRAPHC_STATUS_IO_ERROR, what, d)) {
      gc_bundle_free(b);
      return -1;
    }
  }
  return 0;
}

void gc_bundle_free(gc_bundle *b) {
  if (!b) return;
  gc_arena_free(&b->arena);
  memset(b, 0, sizeof *b);
}

const char *gc_bundle_meta(const gc_bundle *b, const char *key) {
  for (int i = 0; i < b->n_meta; i++)
    if (strcmp(b->meta_keys[i], key) == 0) return b->meta_values[i];
  return NULL;
}

void gc_bundle_meta_add(gc_bundle *b, int *cap, const char *k, const char *v) {
  if (b->n_meta == *cap) {
    int nc = *cap ? 2 * *cap : 16;
    const char **nk = gc_arena_alloc(&b->arena, (size_t)nc * sizeof *nk);
    const char **nv = gc_arena_alloc(&b->arena, (size_t)nc * sizeof *nv);
    if (!nk || !nv) return;
    if (b->n_meta) {
      memcpy(nk, b->meta_keys, (size_t)b->n_meta * sizeof *nk);
      memcpy(nv, b->meta_values, (size_t)b->n_meta * sizeof *nv);
    }
    b->meta_keys = nk;
    b->meta_values = nv;
    *cap = nc;
  }
  const char *ks = gc_arena_strdup(&b->arena, k), *vs = gc_arena_strdup(&b->arena, v ? v : "");
  if (!ks || !vs) return;
  b->meta_keys[b->n_meta] = ks;
  b->meta_values[b->n_meta++] = vs;
}

void gc_bundle_meta_head(gc_bundle *b, int *cap, const char *graph, int n_syms, const char *const *names,
                         const int64_t *values) {
  gc_bundle_meta_add(b, cap, "graphc", GRAPHC_VERSION_STRING);
  gc_bundle_meta_add(b, cap, "graph", graph);
  gc_sbuf s = {0};
  for (int i = 0; i < n_syms; i++) gc_sbuf_printf(&s, "%s%s=%" PRId64, i ? "," : "", names[i], values[i]);
  gc_bundle_meta_add(b, cap, "binds", s.data);
  gc_sbuf_free(&s);
}
