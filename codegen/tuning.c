/* tuning.c - tuning files (see tuning.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/tuning.h"

#define MAX_TOKENS 16

typedef struct tok {
  const char *s;
  int len, col;
} tok;

/* Split line [s, s + len) at spaces and tabs into at most MAX_TOKENS + 1 tokens. */
static int split(const char *s, int len, tok *t) {
  int n = 0;
  for (int i = 0; i < len;) {
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
    if (i >= len) break;
    int j = i;
    while (j < len && s[j] != ' ' && s[j] != '\t' && s[j] != '\r') j++;
    if (n <= MAX_TOKENS) t[n++] = (tok){s + i, j - i, i + 1};
    i = j;
  }
  return n;
}

static int tok_is(const tok *t, const char *w) { return t->len == (int)strlen(w) && memcmp(t->s, w, (size_t)t->len) == 0; }

/* "name=<int >= 1>" into *v. */
static int tok_int(const tok *t, const char *name, int64_t *v) {
  size_t nl = strlen(name);
  if ((size_t)t->len <= nl + 1 || memcmp(t->s, name, nl) != 0 || t->s[nl] != '=') return 0;
  int64_t x = 0;
  for (int i = (int)nl + 1; i < t->len; i++) {
    if (t->s[i] < '0' || t->s[i] > '9' || x > (INT64_MAX - 9) / 10) return 0;
    x = x * 10 + (t->s[i] - '0');
  }
  *v = x;
  return x >= 1;
}

/* Report "name:line:col: message" (INVALID_ARGUMENT). */
static void fail(gc_diags *d, const char *name, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void fail(gc_diags *d, const char *name, int line, int col, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "%s:%d:%d: %s", name, line, col, msg);
}

void gc_tuning_key_mm(char *buf, gc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, int ta, int tb) {
  /* f32 matmuls are tunable only on the tensor cores, as tf32 */
  snprintf(buf, GC_TUNING_KEY_MAX, "matmul %s b=%lld m=%lld n=%lld k=%lld ab=%c%c",
           dt == GRAPHC_DTYPE_F32 ? "tf32" : graphc_dtype_name(dt),
           (long long)batch, (long long)m, (long long)n, (long long)k, ta ? 't' : 'n', tb ? 't' : 'n');
}

/* Check one entry's tokens; fill e (key malloc'd). 0 ok, -1 error reported, -2 OOM. */
static int parse_entry(const char *name, int line, const tok *t, int nt, gc_tuning_entry *e, gc_diags *d) {
  if (nt != 8 || !tok_is(&t[0], "matmul")) {
    if (!tok_is(&t[0], "matmul"))
      fail(d, name, line, t[0].col, "unknown kernel family '%.*s' (tuning files list 'matmul' entries)", t[0].len, t[0].s);
    else
      fail(d, name, line, t[0].col, "a matmul entry needs 8 fields: matmul DTYPE b=N m=N n=N k=N ab=nn|nt|tn|tt tile=BMxBN");
    return -1;
  }
  int tf32 = tok_is(&t[1], "tf32");
  int dt = tf32 ? GRAPHC_DTYPE_F32 : gc_dtype_from_name(t[1].s, (size_t)t[1].len);
  if (dt < 0) {
    fail(d, name, line, t[1].col, "unknown dtype '%.*s'", t[1].len, t[1].s);
    return -1;
  }
  if (dt == GRAPHC_DTYPE_F32 && !tf32) {
    fail(d, name, line, t[1].col, "f32 matmuls are tuned on the tensor cores: write 'tf32'");
    return -1;
  }
  static const char *const fields[] = {"b", "m", "n", "k"};
  int64_t v[4];
  for (int i = 0; i < 4; i++)
    if (!tok_int(&t[2 + i], fields[i], &v[i])) {
      fail(d, name, line, t[2 + i].col, "expected %s=N (N >= 1)", fields[i]);
      return -1;
    }
  const tok *ab = &t[6];
  if (ab->len != 5 || memcmp(ab->s, "ab=", 3) != 0 || (ab->s[3] != 'n' && ab->s[3] != 't') ||
      (ab->s[4] != 'n' && ab->s[4] != 't')) {
    fail(d, name, line, ab->col, "expected ab=nn, nt, tn or tt (A and B layouts), got '%.*s'", ab->len, ab->s);
    return -1;
  }
  const tok *tl = &t[7];
  /* the tiles each kernel has: the mma.sync kernel's, the f16/bf16 warpgroup kernel's, the tf32 one's */
  static const char *const mma_tiles[] = {"64x64", "64x128", "128x64", "128x128", NULL};
  static const char *const wg_tiles[] = {"wg128x64", "wg128x128", "wg128x256", "wg64x64", "wg64x128", NULL};
  static const char *const tf32_tiles[] = {"wg256x128", "wg128x128", "wg128x64", "wg64x128", "wg64x64", NULL};
  int bm = 0, bn = 0;
  char tiles[16] = "";
  if (tl->len > 5 && tl->len < 15 && memcmp(tl->s, "tile=", 5) == 0) snprintf(tiles, sizeof tiles, "%.*s", tl->len - 5, tl->s + 5);
  int wg = memcmp(tiles, "wg", 2) == 0;
  for (const char *const *l = tf32 ? tf32_tiles : wg ? wg_tiles : mma_tiles; *l; l++)
    if (strcmp(tiles, *l) == 0 && sscanf(tiles + (wg ? 2 : 0), "%dx%d", &bm, &bn) != 2) bm = 0;
  if (tf32 && (!bm || !bn)) {
    fail(d, name, line, tl->col,
         "expected tile=wgBMxBN (256x128, 128x128, 128x64, 64x128, 64x64) for tf32, got '%.*s'", tl->len, tl->s);
    return -1;
  }
  if (!bm || !bn) {
    fail(d, name, line, tl->col,
         "expected tile=BMxBN with BM and BN 64 or 128, or tile=wgBMxBN (128x64, 128x128, 128x256, 64x64, 64x128), got '%.*s'", tl->len,
         tl->s);
    return -1;
  }
  char key[GC_TUNING_KEY_MAX];
  gc_tuning_key_mm(key, (gc_dtype)dt, v[0], v[1], v[2], v[3], ab->s[3] == 't', ab->s[4] == 't');
  e->key = strdup(key);
  e->bm = bm;
  e->bn = bn;
  e->wgmma = wg;
  return e->key ? 0 : -2;
}

gc_tuning *gc_tuning_parse(const char *name, const char *text, size_t len, gc_diags *d) {
  gc_tuning *t = calloc(1, sizeof *t);
  if (!t) goto oom;
  int line = 0, seen_header = 0, cap = 0;
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && text[j] != '\n') j++;
    line++;
    const char *s = text + i;
    int n = (int)(j - i);
    i = j + 1;
    for (int c = 0; c < n; c++)
      if (s[c] == '#') n = c;
      else if (s[c] == 0) {
        fail(d, name, line, c + 1, "a NUL byte (not a text file)");
        goto bad;
      }
    tok tk[MAX_TOKENS + 1];
    int nt = split(s, n, tk);
    if (nt == 0) continue;
    if (!seen_header) {
      int64_t ver = 0;
      if (nt != 2 || !tok_is(&tk[0], "graphc-tuning")) {
        fail(d, name, line, tk[0].col, "not a graphc tuning file: the first line must be 'graphc-tuning 1'");
        goto bad;
      }
      char vs[24];
      snprintf(vs, sizeof vs, "v=%.*s", tk[1].len < 20 ? tk[1].len : 20, tk[1].s);
      if (!tok_int(&(tok){vs, (int)strlen(vs), 0}, "v", &ver) || ver != 1) {
        fail(d, name, line, tk[1].col, "tuning file version '%.*s' is not supported (this graphc reads version 1)",
             tk[1].len, tk[1].s);
        goto bad;
      }
      seen_header = 1;
      continue;
    }
    if (t->n == cap) {
      int nc = cap ? 2 * cap : 8;
      gc_tuning_entry *ne = realloc(t->e, (size_t)nc * sizeof *ne);
      if (!ne) goto oom;
      t->e = ne;
      cap = nc;
    }
    int rc = parse_entry(name, line, tk, nt, &t->e[t->n], d);
    if (rc == -2) goto oom;
    if (rc < 0) goto bad;
    for (int k = 0; k < t->n; k++)
      if (strcmp(t->e[k].key, t->e[t->n].key) == 0) {
        fail(d, name, line, tk[0].col, "a second entry for the same problem");
        free(t->e[t->n].key);
        goto bad;
      }
    t->n++;
  }
  if (!seen_header) {
    fail(d, name, line > 0 ? line : 1, 1, "not a graphc tuning file: the first line must be 'graphc-tuning 1'");
    goto bad;
  }
  return t;
oom:
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "%s: out of memory reading the tuning file", name);
bad:
  gc_tuning_free(t);
  return NULL;
}

gc_tuning *gc_tuning_load(const char *path, gc_diags *d) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "%s: cannot open the tuning file: %s", path,
                strerror(errno));
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  int err = 0;
  while (buf && !err) {
    if (len == cap) {
      char *nb = cap < ((size_t)1 << 24) ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        err = cap < ((size_t)1 << 24) ? 2 : 3;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) err = ferror(f) ? 1 : -1;
  }
  fclose(f);
  if (!buf || err > 0) {
    gc_error_at(d, !buf || err == 2 ? GRAPHC_STATUS_OUT_OF_MEMORY : GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0},
                "%s: cannot read the tuning file%s", path, err == 3 ? " (larger than 16 MiB)" : "");
    free(buf);
    return NULL;
  }
  gc_tuning *t = gc_tuning_parse(path, buf, len, d);
  free(buf);
  return t;
}

void gc_tuning_free(gc_tuning *t) {
  if (!t) return;
  for (int i = 0; i < t->n; i++) free(t->e[i].key);
  free(t->e);
  free(t);
}

const gc_tuning_entry *gc_tuning_find(const gc_tuning *t, const char *key) {
  for (int i = 0; t && i < t->n; i++)
    if (strcmp(t->e[i].key, key) == 0) return &t->e[i];
  return NULL;
}
