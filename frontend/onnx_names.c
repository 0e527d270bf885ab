/* onnx_names.c - the ONNX importer's bookkeeping, which every other importer
 * file calls down into and which calls none of them: errors prefixed with the
 * node being translated, memory owned until the import is freed, string-keyed
 * maps, the ONNX name -> ox_val bindings, and unique graphc value names and
 * weights tensor names.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_internal.h"

/* ---- errors and ownership -------------------------------------------------------------------- */

/* Report an error prefixed with the node being translated. */
static void vreport(ox *x, graphc_status_t st, const char *fmt, va_list ap) {
  char msg[900];
  vsnprintf(msg, sizeof msg, fmt, ap);
  const gc_onnx_node *n = x->node;
  if (n && n->name[0])
    gc_error_at(x->d, st, (gc_loc){0, 0}, "node '%s' (#%d, %s): %s", n->name, n->index, n->op_type,
                msg);
  else if (n)
    gc_error_at(x->d, st, (gc_loc){0, 0}, "node #%d (%s): %s", n->index, n->op_type, msg);
  else
    gc_error_at(x->d, st, (gc_loc){0, 0}, "%s", msg);
  x->errors++;
}

/* Report an unsupported feature of the current node (status UNSUPPORTED). */
int ox_unsup(ox *x, const char *fmt, ...) {
  char msg[800];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* Short reasons ("dilated pooling") read as "not supported: dilated pooling". */
  int says = strstr(msg, "support") || strstr(msg, "must") || strstr(msg, "bind");
  return ox_fail(x, GRAPHC_STATUS_UNSUPPORTED, "%s%s", says ? "" : "not supported: ", msg);
}

/* Report an error of the current node with a status. */
int ox_fail(ox *x, graphc_status_t st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(x, st, fmt, ap);
  va_end(ap);
  return -1;
}

/* Keep a malloc'd block until the importer (or its result) is freed. */
void *ox_own(ox *x, void *p) {
  if (!p) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  if (x->n_owned == x->cap_owned) {
    int nc = x->cap_owned ? 2 * x->cap_owned : 64;
    void **no = realloc(x->owned, (size_t)nc * sizeof *no);
    if (!no) {
      free(p);
      ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
      return NULL;
    }
    x->owned = no;
    x->cap_owned = nc;
  }
  x->owned[x->n_owned++] = p;
  return p;
}

/* A zeroed block, owned like ox_own (NULL: out of memory, reported). */
void *ox_alloc(ox *x, size_t n) { return ox_own(x, calloc(1, n ? n : 1)); }

/* ---- string-keyed hash map (open addressing) ------------------------------------------------- */

struct ox_map {
  const char **keys;
  void **vals;
  size_t cap, n;
};

/* FNV-1a. */
static size_t hash_str(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

/* An empty map. */
ox_map *ox_map_new(void) {
  ox_map *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->cap = 64;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = calloc(m->cap, sizeof *m->vals);
  if (!m->keys || !m->vals) {
    free(m->keys);
    free(m->vals);
    free(m);
    return NULL;
  }
  return m;
}

/* Free a map (not its keys or values). */
void ox_map_free(ox_map *m) {
  if (!m) return;
  free(m->keys);
  free(m->vals);
  free(m);
}

/* Value stored under k, or NULL. */
void *ox_map_get(const ox_map *m, const char *k) {
  for (size_t i = hash_str(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return NULL;
    if (strcmp(m->keys[i], k) == 0) return m->vals[i];
  }
}

/* Insert or replace; the key must outlive the map. 0 or -1 (out of memory). */
int ox_map_put(ox_map *m, const char *k, void *v) {
  if (2 * (m->n + 1) > m->cap) {
    size_t nc = m->cap * 2;
    const char **nk = calloc(nc, sizeof *nk);
    void **nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->keys[i]) continue;
      size_t j = hash_str(m->keys[i]) & (nc - 1);
      while (nk[j]) j = (j + 1) & (nc - 1);
      nk[j] = m->keys[i];
      nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = nc;
  }
  size_t i = hash_str(k) & (m->cap - 1);
  while (m->keys[i] && strcmp(m->keys[i], k) != 0) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) m->n++;
  m->keys[i] = k;
  m->vals[i] = v;
  return 0;
}

/* The binding of an ONNX value name, or NULL. */
ox_val *ox_lookup(ox *x, const char *name) { return ox_map_get(x->vals, name); }

/* ---- names ----------------------------------------------------------------------------------- */

/* Register a name as used (the string must live in the graph arena). */
static const char *claim(ox *x, const char *s) {
  if (!s || ox_map_put(x->names, s, (void *)s) != 0) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  return s;
}

/* A fresh temporary value name "tN" not used yet. */
const char *ox_temp_name(ox *x) {
  for (;;) {
    char buf[32];
    snprintf(buf, sizeof buf, "t%d", x->n_tmp++);
    if (!ox_map_get(x->names, buf)) return claim(x, gc_arena_strdup(&x->g->arena, buf));
  }
}

/* An identifier made of [A-Za-z0-9_] from an ONNX name, starting with a letter or '_'. */
char *ox_sanitize(ox *x, const char *s, const char *prefix) {
  size_t n = strlen(s);
  if (n > 200) n = 200;
  char *buf = gc_arena_alloc(&x->g->arena, n + strlen(prefix) + 2);
  if (!buf) return NULL;
  size_t k = 0;
  if (!n || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
    for (const char *p = prefix; *p; p++) buf[k++] = *p;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    buf[k++] = ok ? c : '_';
  }
  buf[k] = 0;
  return buf;
}

/* `base`, or base_1, base_2, ... : the first not in `set`. */
static const char *unique_in(ox *x, ox_map *set, const char *base) {
  if (!ox_map_get(set, base)) return base;
  for (int i = 1;; i++) {
    const char *s = gc_arena_printf(&x->g->arena, "%s_%d", base, i);
    if (!s) return NULL;
    if (!ox_map_get(set, s)) return s;
  }
}

/* A unique graphc value name for an ONNX name (sanitized, suffixed). */
const char *ox_value_name(ox *x, const char *onnx_name) {
  char *s = ox_sanitize(x, onnx_name, "v");
  return s ? claim(x, unique_in(x, x->names, s)) : NULL;
}

/* Weight tensor names: the ONNX name when free, else suffixed. */
const char *ox_weight_name(ox *x, const char *hint) {
  const char *s;
  if (!hint || strcmp(hint, "__metadata__") == 0)
    s = gc_arena_printf(&x->g->arena, "const_%d", x->n_weights);
  else
    s = gc_arena_strdup(&x->g->arena, hint);
  s = s ? unique_in(x, x->wnames, s) : NULL;
  if (!s || ox_map_put(x->wnames, s, (void *)s) != 0) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  return s;
}

/* Bind an ONNX name to a value / constant. */
ox_val *ox_bind(ox *x, const char *name, gc_value *v, ox_const *k) {
  ox_val *ov = ox_alloc(x, sizeof *ov);
  if (!ov) return NULL;
  ov->name = name;
  ov->v = v;
  ov->k = k;
  if (ox_map_put(x->vals, name, ov) != 0) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  return ov;
}

