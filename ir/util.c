/* util.c - arenas, string buffers, diagnostics, dtypes, statuses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

void gc_assert_fail(const char *expr, const char *file, int line) {
  fprintf(stderr, "graphc: internal error: %s:%d: assertion failed: %s\n", file, line, expr);
  abort();
}

/* ---- arena ------------------------------------------------------------------ */
struct gc_arena_chunk {
  gc_arena_chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

void gc_arena_init(gc_arena *a) { memset(a, 0, sizeof *a); }

void gc_arena_free(gc_arena *a) {
  gc_arena_chunk *c = a->head;
  while (c) {
    gc_arena_chunk *n = c->next;
    free(c);
    c = n;
  }
  memset(a, 0, sizeof *a);
}

/* Bump-allocate from the head chunk; a new chunk (at least 4 KiB, and half the
 * arena's size so far, so the number of chunks grows with the log of the size)
 * when it does not fit. Small first chunks keep a module of many small graphs
 * (one arena each) from costing 64 KiB per graph. */
void *gc_arena_alloc(gc_arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (size == 0) size = 16;
  gc_arena_chunk *c = a->head;
  if (!c || c->cap - c->used < size) {
    size_t cap = 4096 - sizeof *c;
    if (a->total / 2 > cap) cap = a->total / 2;
    if (cap < size) cap = size;
    c = malloc(sizeof *c + cap);
    if (!c) {
      a->failed = 1;
      return NULL;
    }
    c->next = a->head;
    c->used = 0;
    c->cap = cap;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  a->total += size;
  memset(p, 0, size);
  return p;
}

char *gc_arena_strndup(gc_arena *a, const char *s, size_t n) {
  char *p = gc_arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *gc_arena_strdup(gc_arena *a, const char *s) { return gc_arena_strndup(a, s, strlen(s)); }

char *gc_arena_printf(gc_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = gc_arena_alloc(a, (size_t)n + 1);
  if (!p) return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

/* ---- string buffer ------------------------------------------------------------- */
static int sbuf_reserve(gc_sbuf *b, size_t extra) {
  if (b->failed) return 0;
  if (b->len + extra + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->failed = 1;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

/* Formats straight into the free space; only when that is too small, grows the
 * buffer and formats again. */
void gc_sbuf_vprintf(gc_sbuf *b, const char *fmt, va_list ap) {
  if (b->failed) return;
  size_t room = b->data ? b->cap - b->len : 0;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    if (room) b->data[b->len] = 0;
    return;
  }
  if ((size_t)n >= room) {
    if (!sbuf_reserve(b, (size_t)n)) {
      if (room) b->data[b->len] = 0;
      return;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  }
  b->len += (size_t)n;
}

void gc_sbuf_printf(gc_sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gc_sbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

void gc_sbuf_puts(gc_sbuf *b, const char *s) {
  size_t n = strlen(s);
  if (!sbuf_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n + 1);
  b->len += n;
}

void gc_sbuf_putc(gc_sbuf *b, char c) {
  if (!sbuf_reserve(b, 1)) return;
  b->data[b->len++] = c;
  b->data[b->len] = 0;
}

char *gc_sbuf_take(gc_sbuf *b) {
  if (b->failed) {
    gc_sbuf_free(b);
    return NULL;
  }
  if (!b->data && !sbuf_reserve(b, 0)) return NULL;
  b->data[b->len] = 0;
  char *p = b->data;
  memset(b, 0, sizeof *b);
  return p;
}

void gc_sbuf_free(gc_sbuf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

/* ---- diagnostics ----------------------------------------------------------------- */
void gc_diags_init(gc_diags *d, const char *file, const char *source, size_t len) {
  memset(d, 0, sizeof *d);
  d->file = strdup(file ? file : "");
  d->source = source;
  d->source_len = len;
}

void gc_diags_free(gc_diags *d) {
  for (int i = 0; i < d->n; i++) free(d->items[i].msg);
  free(d->items);
  free(d->file);
  memset(d, 0, sizeof *d);
}

/* At most this many diagnostics are kept per list (the first error always is):
 * later ones are still counted in n_errors, but neither formatted nor stored,
 * and gc_diags_render ends with "N more errors not shown". A binary file or a
 * long run of bad bytes (one error each) would otherwise cost time and memory
 * quadratic in its size to report, for a report nobody reads. */
enum { DIAGS_MAX = 100 };

static void diag_add(gc_diags *d, gc_diag_level lvl, gc_loc loc, const char *fmt, va_list ap) {
  if (d->n >= DIAGS_MAX && !(lvl == GC_DIAG_ERROR && d->n_errors == 1)) return;
  if (d->n == d->cap) {
    int cap = d->cap ? d->cap * 2 : 8;
    gc_diag *p = realloc(d->items, (size_t)cap * sizeof *p);
    if (!p) return; /* diagnostics are best effort when memory is gone */
    d->items = p;
    d->cap = cap;
  }
  /* A message passed as "%s" is copied; most others fit a small buffer:
   * format once, copy. */
  char buf[256], *msg;
  va_list ap2;
  va_copy(ap2, ap);
  if (fmt[0] == '%' && fmt[1] == 's' && !fmt[2]) {
    const char *s = va_arg(ap2, const char *);
    msg = strdup(s ? s : "(null)");
  } else {
    int len = vsnprintf(buf, sizeof buf, fmt, ap2);
    if (len >= 0 && (size_t)len < sizeof buf) {
      msg = malloc((size_t)len + 1);
      if (msg) memcpy(msg, buf, (size_t)len + 1);
    } else {
      gc_sbuf b = {0};
      gc_sbuf_vprintf(&b, fmt, ap);
      msg = gc_sbuf_take(&b);
    }
  }
  va_end(ap2);
  if (!msg) return;
  d->items[d->n].level = lvl;
  d->items[d->n].loc = loc;
  d->items[d->n].msg = msg;
  d->n++;
}

void gc_error_at(gc_diags *d, graphc_status_t status, gc_loc loc, const char *fmt, ...) {
  if (d->n_errors == 0) d->status = status;
  d->n_errors++;
  va_list ap;
  va_start(ap, fmt);
  diag_add(d, GC_DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
}

void gc_warning_at(gc_diags *d, gc_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_add(d, GC_DIAG_WARNING, loc, fmt, ap);
  va_end(ap);
}

void gc_note_at(gc_diags *d, gc_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_add(d, GC_DIAG_NOTE, loc, fmt, ap);
  va_end(ap);
}

/* Byte offset of the start of every line of the source (1-based lines in
 * [1, *n]); malloc'd, NULL when there is no source or no memory. */
static size_t *line_starts(const gc_diags *d, int *n) {
  *n = 0;
  if (!d->source) return NULL;
  const char *src = d->source, *end = src + d->source_len, *q;
  size_t count = 1;
  for (const char *p = src; p < end && (q = memchr(p, '\n', (size_t)(end - p))); p = q + 1) count++;
  size_t *starts = malloc((count + 1) * sizeof *starts);
  if (!starts) return NULL;
  starts[0] = 0; /* unused: lines are 1-based */
  starts[1] = 0;
  size_t k = 1;
  for (const char *p = src; p < end && (q = memchr(p, '\n', (size_t)(end - p))); p = q + 1)
    starts[++k] = (size_t)(q + 1 - src);
  *n = (int)k;
  return starts;
}

/* Append n bytes (may hold NULs) / n copies of c. */
static void sbuf_putn(gc_sbuf *b, const char *s, size_t n) {
  if (!sbuf_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

static void sbuf_fill(gc_sbuf *b, char c, size_t n) {
  if (!sbuf_reserve(b, n)) return;
  memset(b->data + b->len, c, n);
  b->len += n;
  b->data[b->len] = 0;
}

/* Append v in decimal, right-aligned in width columns. */
static void sbuf_putint(gc_sbuf *b, int v, int width) {
  char t[16];
  int n = 0;
  unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
  do t[sizeof t - 1 - n++] = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) t[sizeof t - 1 - n++] = '-';
  if (width > n) sbuf_fill(b, ' ', (size_t)(width - n));
  sbuf_putn(b, t + sizeof t - n, (size_t)n);
}

/* Source lines longer than this are shown as a window of this many bytes around
 * the caret, with "..." where the line was cut. */
enum { RENDER_LINE_MAX = 160 };

char *gc_diags_render(const gc_diags *d) {
  static const char *const names[] = {"error", "warning", "note"};
  const char *file = d->file ? d->file : ""; /* NULL when gc_diags_init ran out of memory */
  gc_sbuf b = {0};
  int n_lines, shown_errors = 0;
  size_t *starts = line_starts(d, &n_lines);
  for (int i = 0; i < d->n; i++) {
    const gc_diag *g = &d->items[i];
    shown_errors += g->level == GC_DIAG_ERROR;
    /* "file:line:col: level: msg" (or "file: level: msg"), without printf */
    gc_sbuf_puts(&b, file);
    if (g->loc.line > 0) {
      gc_sbuf_putc(&b, ':');
      sbuf_putint(&b, g->loc.line, 0);
      gc_sbuf_putc(&b, ':');
      sbuf_putint(&b, g->loc.col, 0);
      gc_sbuf_puts(&b, ": ");
    } else if (file[0]) {
      gc_sbuf_puts(&b, ": ");
    }
    gc_sbuf_puts(&b, names[g->level]);
    gc_sbuf_puts(&b, ": ");
    gc_sbuf_puts(&b, g->msg);
    gc_sbuf_putc(&b, '\n');
    if (!starts || g->loc.line <= 0 || g->loc.line > n_lines) continue;
    const char *ls = d->source + starts[g->loc.line];
    const char *next = g->loc.line < n_lines ? d->source + starts[g->loc.line + 1] - 1
                                             : d->source + d->source_len;
    const char *e = memchr(ls, '\r', (size_t)(next - ls));
    if (!e) e = next;
    /* The window [lo, hi) of the line, and the caret's offset in it. */
    size_t len = (size_t)(e - ls), col = g->loc.col > 1 ? (size_t)g->loc.col - 1 : 0;
    size_t lo = 0, hi = len;
    if (len > RENDER_LINE_MAX) {
      lo = col > RENDER_LINE_MAX / 2 ? col - RENDER_LINE_MAX / 2 : 0;
      if (lo > len - RENDER_LINE_MAX) lo = len - RENDER_LINE_MAX;
      hi = lo + RENDER_LINE_MAX;
    }
    sbuf_putint(&b, g->loc.line, 5);
    gc_sbuf_puts(&b, lo ? " | ..." : " | ");
    size_t at = b.len;
    sbuf_putn(&b, ls + lo, hi - lo);
    for (char *t; !b.failed && (t = memchr(b.data + at, '\t', b.len - at)); at = (size_t)(t - b.data))
      *t = ' ';
    gc_sbuf_puts(&b, hi < len ? "...\n      | " : "\n      | ");
    sbuf_fill(&b, ' ', col >= lo ? col - lo + (lo ? 3 : 0) : 0);
    gc_sbuf_puts(&b, "^\n");
  }
  if (d->n_errors > shown_errors)
    gc_sbuf_printf(&b, "%s%s%d more error%s not shown\n", file, file[0] ? ": " : "",
                   d->n_errors - shown_errors, d->n_errors - shown_errors == 1 ? "" : "s");
  free(starts);
  char *s = gc_sbuf_take(&b);
  return s;
}

void gc_diags_to_error(const gc_diags *d, graphc_error_t *err) {
  if (!err) return;
  memset(err, 0, sizeof *err);
  err->code = d->n_errors ? d->status : GRAPHC_STATUS_OK;
  snprintf(err->file, sizeof err->file, "%s", d->file ? d->file : "");
  for (int i = 0; i < d->n; i++) {
    if (d->items[i].level != GC_DIAG_ERROR) continue;
    err->line = d->items[i].loc.line;
    err->col = d->items[i].loc.col;
    snprintf(err->message, sizeof err->message, "%s", d->items[i].msg);
    break;
  }
  /* An error whose message could not be allocated still gets one. */
  if (d->n_errors && !err->message[0])
    snprintf(err->message, sizeof err->message, "%s (out of memory while reporting the error)",
             graphc_status_string(d->status));
}

graphc_status_t gc_set_error(graphc_error_t *err, graphc_status_t status, const char *fmt, ...) {
  if (!err) return status;
  memset(err, 0, sizeof *err);
  err->code = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return status;
}

/* ---- statuses and dtypes ------------------------------------------------------------ */
const char *graphc_status_string(graphc_status_t s) {
  static const char *const names[GRAPHC_STATUS_COUNT_] = {
      "ok",           "invalid argument", "syntax error",  "verification error",
      "I/O error",    "weights error",    "out of memory", "unsupported",
      "backend unavailable", "compile error", "device error", "runtime error",
      "internal error"};
  if ((unsigned)s >= GRAPHC_STATUS_COUNT_) return "unknown status";
  return names[s];
}

static const char *const dtype_names[GRAPHC_DTYPE_COUNT_] = {
    "f64", "f32", "f16", "bf16", "i64", "i32", "i8", "u8", "bool", "f8e4m3", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz"};
static const size_t dtype_sizes[GRAPHC_DTYPE_COUNT_] = {8, 4, 2, 2, 8, 4, 1, 1, 1, 1, 1, 1, 1};

const char *graphc_dtype_name(graphc_dtype_t t) {
  return (unsigned)t < GRAPHC_DTYPE_COUNT_ ? dtype_names[t] : NULL;
}

size_t graphc_dtype_size(graphc_dtype_t t) {
  return (unsigned)t < GRAPHC_DTYPE_COUNT_ ? dtype_sizes[t] : 0;
}

int gc_dtype_from_name(const char *s, size_t n) {
  for (int i = 0; i < GRAPHC_DTYPE_COUNT_; i++)
    if (strlen(dtype_names[i]) == n && memcmp(dtype_names[i], s, n) == 0) return i;
  return -1;
}

int gc_dtype_is_float(gc_dtype t) {
  return t == GRAPHC_DTYPE_F64 || t == GRAPHC_DTYPE_F32 || t == GRAPHC_DTYPE_F16 ||
         t == GRAPHC_DTYPE_BF16 || gc_dtype_is_f8(t);
}

int gc_dtype_is_f8(gc_dtype t) {
  return t == GRAPHC_DTYPE_F8E4M3 || t == GRAPHC_DTYPE_F8E5M2 || gc_dtype_is_fnuz(t);
}

int gc_dtype_is_fnuz(gc_dtype t) { return t == GRAPHC_DTYPE_F8E4M3FNUZ || t == GRAPHC_DTYPE_F8E5M2FNUZ; }

int gc_dtype_is_int(gc_dtype t) {
  return t == GRAPHC_DTYPE_I64 || t == GRAPHC_DTYPE_I32 || t == GRAPHC_DTYPE_I8 ||
         t == GRAPHC_DTYPE_U8;
}

int gc_dtype_is_signed(gc_dtype t) {
  return gc_dtype_is_float(t) || t == GRAPHC_DTYPE_I64 || t == GRAPHC_DTYPE_I32 ||
         t == GRAPHC_DTYPE_I8;
}

const char *graphc_backend_name(graphc_backend_t b) {
  switch (b) {
    case GRAPHC_BACKEND_DEFAULT: return "default";
    case GRAPHC_BACKEND_INTERP: return "interp";
    case GRAPHC_BACKEND_CPU: return "cpu";
    case GRAPHC_BACKEND_CUDA: return "cuda";
  }
  return "unknown";
}

const char *graphc_codegen_name(graphc_codegen_t c) {
  switch (c) {
    case GRAPHC_CODEGEN_DEFAULT: return "default";
    case GRAPHC_CODEGEN_NVRTC: return "nvrtc";
    case GRAPHC_CODEGEN_LLVM: return "llvm";
  }
  return "unknown";
}

void graphc_free(void *p) { free(p); }

/* ---- types ---------------------------------------------------------------------------- */
int gc_type_same_dims(const gc_type *a, const gc_type *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

int gc_type_equal(const gc_type *a, const gc_type *b) {
  return a->dtype == b->dtype && gc_type_same_dims(a, b);
}

int gc_type_is_concrete(const gc_type *t) {
  for (int i = 0; i < t->rank; i++)
    if (GC_DIM_IS_SYM(t->dims[i])) return 0;
  return 1;
}

const gc_hu_round gc_hu_rounds[4] = {
    {0, 1103515245, 0, 1, 1}, {15, 1664525, 0, 1, 0}, {13, 1103515245, 1, 0, 12345}, {16, 69621, 0, 0, 7}};

double gc_hash_uniform(int64_t a, int64_t b) {
  int64_t a1 = (a % GC_HU_P + GC_HU_P) % GC_HU_P, b1 = (b % GC_HU_P + GC_HU_P) % GC_HU_P, x = a1;
  for (int r = 0; r < 4; r++) {
    const gc_hu_round *h = &gc_hu_rounds[r];
    if (h->shift) x ^= x >> h->shift;  /* x >= 0: the shift is a division */
    x = (x * h->mul + (h->add_a ? a1 : 0) + (h->add_b ? b1 : 0) + h->add) % GC_HU_P;
  }
  x ^= x >> 11;
  return ((double)(x % 16777216) + 0.5) * 0x1p-24;
}

int64_t gc_type_numel(const gc_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    int64_t d = t->dims[i];
    if (GC_DIM_IS_SYM(d) || d < 0) return -1;
    if (d != 0 && n > (INT64_C(1) << 62) / d) return -1;
    n *= d;
  }
  return n;
}

void gc_type_print(gc_sbuf *b, const gc_type *t, const char *const *syms) {
  gc_sbuf_printf(b, "%s[", graphc_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) {
    if (i) gc_sbuf_puts(b, ", ");
    int64_t d = t->dims[i];
    if (GC_DIM_IS_SYM(d)) {
      if (syms)
        gc_sbuf_puts(b, syms[GC_DIM_SYM_INDEX(d)]);
      else
        gc_sbuf_printf(b, "?%d", GC_DIM_SYM_INDEX(d));
    } else {
      gc_sbuf_printf(b, "%lld", (long long)d);
    }
  }
  gc_sbuf_putc(b, ']');
}

/* Strides ost of a reshape to ot of a strided view of type it with strides ist, or 0
 * when the reshape is not a view (the dims it merges are not contiguous with each
 * other). Unit dims carry no stride; the remaining dims are matched group by group
 * (as numpy does). */
int gc_reshape_strides(const gc_type *it, const int64_t *ist, const gc_type *ot, int64_t *ost) {
  int64_t od[GC_MAX_RANK], os[GC_MAX_RANK], nd[GC_MAX_RANK];
  int on = 0, nn = 0, nidx[GC_MAX_RANK];
  for (int i = 0; i < it->rank; i++) {
    if (it->dims[i] == 0) return 0;
    if (it->dims[i] != 1) {
      od[on] = it->dims[i];
      os[on++] = ist[i];
    }
  }
  for (int i = 0; i < ot->rank; i++) {
    ost[i] = 0;
    if (ot->dims[i] != 1) {
      nidx[nn] = i;
      nd[nn++] = ot->dims[i];
    }
  }
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nn && oi < on) {
    int64_t np = nd[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= nn) return 0;
        np *= nd[nj++];
      } else {
        if (oj >= on) return 0;
        op *= od[oj++];
      }
    }
    for (int ok = oi; ok < oj - 1; ok++)
      if (os[ok] != od[ok + 1] * os[ok + 1]) return 0;
    int64_t s = os[oj - 1];
    for (int nk = nj - 1; nk >= ni; nk--) {
      ost[nidx[nk]] = s;
      s *= nd[nk];
    }
    ni = nj++;
    oi = oj++;
  }
  return ni >= nn && oi >= on;
}

char *gc_read_file(const char *path, size_t *len, gc_diags *d) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (d) gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *nb = cap < SIZE_MAX / 4 ? realloc(buf, cap * 2 + 1) : NULL;
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    if (d && bad) gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "cannot read '%s'", path);
    else if (d) gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory reading '%s'", path);
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}
