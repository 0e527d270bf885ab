/* buffers.c - the plan's buffers: creating them, and placing TEMP buffers in
 * one arena by liveness.
 *
 * Creation: lower.c (inputs, group outputs, temporaries) and the emitters (the
 * CONST buffers of params and list consts, emit_move.c) append buffers here,
 * below both, so no emitter calls back into lower.c.
 *
 * Assignment: walk the launches in order. At launch L, first place every TEMP buffer whose
 * first use is L (in buffer order), then release every TEMP buffer whose last
 * use is L, so a kernel's inputs and outputs never share memory -- except:
 *   in-place: an elementwise result may take over the slot of an operand that
 *   dies at L when the kernel reads that operand at exactly the index it
 *   writes (hints from the emitter) and the sizes match.
 * Placement is best fit among freed intervals (smallest that fits, lowest
 * offset on ties), else the top of the arena grows (absorbing a free interval
 * that ends there). Everything is 256-byte aligned and deterministic.
 *
 * arena_lower_bound = max over launches of the live TEMP bytes (a donated
 * pair counted once): no placement can use less.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

/* ---- creating buffers and consts -------------------------------------------------------- */

/* Append a buffer of `kind` for a value of type t; returns its index (-1: out of memory). */
int gc_lower_new_buffer(gc_lowerer *c, gc_buf_kind kind, int index, const gc_type *t) {
  gc_plan *p = c->p;
  if (p->n_buffers == c->cap_buffers) {
    int cap = c->cap_buffers ? 2 * c->cap_buffers : 16;
    gc_plan_buffer *nb = realloc(p->buffers, (size_t)cap * sizeof *nb);
    gc_buf_hint *nh = nb ? realloc(c->hints, (size_t)cap * sizeof *nh) : NULL;
    if (nb) p->buffers = nb;
    if (!nb || !nh) {
      c->oom = 1;
      return -1;
    }
    c->hints = nh;
    c->cap_buffers = cap;
  }
  int bi = p->n_buffers++;
  gc_plan_buffer *b = &p->buffers[bi];
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->index = index;
  b->type = *t;
  b->bytes = (size_t)gc_type_numel(t) * graphc_dtype_size(t->dtype);
  b->first_use = b->last_use = -1;
  memset(&c->hints[bi], 0, sizeof c->hints[bi]);
  return bi;
}

/* A CONST buffer for value v backed by `data` (the plan arena's, or NULL for a param). */
int gc_lower_const_buffer(gc_lowerer *c, const gc_value *v, const char *name, const void *data,
                          size_t bytes) {
  gc_plan *p = c->p;
  if (p->n_consts == c->cap_consts) {
    int cap = c->cap_consts ? 2 * c->cap_consts : 8;
    gc_plan_const *nc = realloc(p->consts, (size_t)cap * sizeof *nc);
    if (!nc) {
      c->oom = 1;
      return -1;
    }
    p->consts = nc;
    c->cap_consts = cap;
  }
  int ci = p->n_consts++;
  memset(&p->consts[ci], 0, sizeof p->consts[ci]);
  p->consts[ci].name = gc_arena_strdup(&p->arena, name);
  p->consts[ci].data = data;
  p->consts[ci].bytes = bytes;
  int bi = gc_lower_new_buffer(c, GC_BUF_CONST, ci, &v->type);
  if (bi >= 0) c->val_buf[v->id] = bi;
  return bi;
}

/* ---- assignment ---------------------------------------------------------------------------- */

#define ALIGN 256

typedef struct interval {
  size_t off, size;
} interval;

typedef struct free_list {
  interval *v;
  int n, cap;
  int oom;
} free_list;

/* Round up to the arena alignment. */
static size_t align_up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* Bytes a buffer occupies in the arena (at least one slot, so offsets stay distinct). */
static size_t slot_bytes(const gc_plan_buffer *b) { return align_up(b->bytes ? b->bytes : 1); }

/* Insert [off, off+size) keeping the list sorted and coalesced. */
static void fl_release(free_list *fl, size_t off, size_t size) {
  int i = 0;
  while (i < fl->n && fl->v[i].off < off) i++;
  if (fl->n == fl->cap) {
    int cap = fl->cap ? 2 * fl->cap : 16;
    interval *nv = realloc(fl->v, (size_t)cap * sizeof *nv);
    if (!nv) {
      fl->oom = 1;  /* losing a free interval only wastes arena space */
      return;
    }
    fl->v = nv;
    fl->cap = cap;
  }
  memmove(&fl->v[i + 1], &fl->v[i], (size_t)(fl->n - i) * sizeof *fl->v);
  fl->v[i] = (interval){off, size};
  fl->n++;
  if (i + 1 < fl->n && fl->v[i].off + fl->v[i].size == fl->v[i + 1].off) {
    fl->v[i].size += fl->v[i + 1].size;
    memmove(&fl->v[i + 1], &fl->v[i + 2], (size_t)(fl->n - i - 2) * sizeof *fl->v);
    fl->n--;
  }
  if (i > 0 && fl->v[i - 1].off + fl->v[i - 1].size == fl->v[i].off) {
    fl->v[i - 1].size += fl->v[i].size;
    memmove(&fl->v[i], &fl->v[i + 1], (size_t)(fl->n - i - 1) * sizeof *fl->v);
    fl->n--;
  }
}

/* Remove list entry i. */
static void fl_remove(free_list *fl, int i) {
  memmove(&fl->v[i], &fl->v[i + 1], (size_t)(fl->n - i - 1) * sizeof *fl->v);
  fl->n--;
}

/* Best fit, else grow the top (absorbing a free tail); returns the offset. */
static size_t fl_take(free_list *fl, size_t need, size_t *top) {
  int best = -1;
  for (int i = 0; i < fl->n; i++)
    if (fl->v[i].size >= need && (best < 0 || fl->v[i].size < fl->v[best].size)) best = i;
  if (best >= 0) {
    size_t off = fl->v[best].off;
    fl->v[best].off += need;
    fl->v[best].size -= need;
    if (fl->v[best].size == 0) fl_remove(fl, best);
    return off;
  }
  if (fl->n > 0 && fl->v[fl->n - 1].off + fl->v[fl->n - 1].size == *top) {
    size_t off = fl->v[fl->n - 1].off;
    fl_remove(fl, fl->n - 1);
    *top = off + need;
    return off;
  }
  size_t off = *top;
  *top += need;
  return off;
}

/* The donor buffer that b can take over at launch L, or -1. */
static int pick_donor(const gc_plan *p, const gc_buf_hint *h, int b, int L, const char *donated,
                      const char *placed) {
  for (int i = 0; i < h->n; i++) {
    int d = h->cand[i];
    if (d < 0 || d == b) continue;
    const gc_plan_buffer *db = &p->buffers[d];
    if (db->kind != GC_BUF_TEMP || db->last_use != L || !placed[d] || donated[d]) continue;
    if (slot_bytes(db) != slot_bytes(&p->buffers[b]) || db->bytes != p->buffers[b].bytes) continue;
    return d;
  }
  return -1;
}

/* The kernel launched at L reads the donor through a param that now aliases its
 * output: drop the readonly promise on it. */
static void clear_readonly(gc_plan *p, int L, int donor) {
  kir_kernel *k = p->kir->kernels[p->launches[L]];
  for (int i = 0; i < k->n_params; i++)
    if (k->params[i].kind == KIR_PARAM_BUFFER && k->params[i].binding == donor)
      k->params[i].readonly = 0;
}

/* Buffer indices bucketed by a launch index (first or last use), buffer order
 * inside a bucket: start[L] .. start[L+1] in `order`. Returns 0 on OOM. */
static int bucket(const gc_plan *p, int by_last, int **start_out, int **order_out) {
  int nl = p->n_launches, nb = p->n_buffers;
  int *start = calloc((size_t)nl + 2, sizeof *start), *order = malloc(((size_t)nb + 1) * sizeof *order);
  if (!start || !order) {
    free(start);
    free(order);
    return 0;
  }
  for (int b = 0; b < nb; b++) {
    const gc_plan_buffer *pb = &p->buffers[b];
    int L = by_last ? pb->last_use : pb->first_use;
    if (pb->kind == GC_BUF_TEMP && L >= 0) start[L + 1]++;
  }
  for (int L = 0; L < nl; L++) start[L + 1] += start[L];
  int *fill = calloc((size_t)nl + 1, sizeof *fill);
  if (!fill) {
    free(start);
    free(order);
    return 0;
  }
  for (int b = 0; b < nb; b++) {
    const gc_plan_buffer *pb = &p->buffers[b];
    int L = by_last ? pb->last_use : pb->first_use;
    if (pb->kind == GC_BUF_TEMP && L >= 0) order[start[L] + fill[L]++] = b;
  }
  free(fill);
  *start_out = start;
  *order_out = order;
  return 1;
}

/* Every TEMP buffer in its own slot: valid when there is no memory to do better. */
static void assign_naive(gc_plan *p) {
  size_t top = 0;
  for (int i = 0; i < p->n_buffers; i++)
    if (p->buffers[i].kind == GC_BUF_TEMP) {
      p->buffers[i].offset = top;
      top += slot_bytes(&p->buffers[i]);
    }
  p->arena_bytes = p->arena_lower_bound = top;
}

/* Place every TEMP buffer (see the file comment); falls back to one slot each on OOM. */
void gc_assign_buffers(gc_plan *p, const gc_buf_hint *hints) {
  int nb = p->n_buffers;
  char *placed = calloc((size_t)nb + 1, 1), *donated = calloc((size_t)nb + 1, 1);
  int *fs = NULL, *fo = NULL, *ls = NULL, *lo = NULL;
  int ok = placed && donated && bucket(p, 0, &fs, &fo);
  ok = ok && bucket(p, 1, &ls, &lo);
  free_list fl = {0};
  size_t top = 0, bound = 0, live = 0;
  for (int L = 0; ok && L < p->n_launches; L++) {
    for (int j = fs[L]; j < fs[L + 1]; j++) {
      int b = fo[j];
      gc_plan_buffer *pb = &p->buffers[b];
      int d = hints ? pick_donor(p, &hints[b], b, L, donated, placed) : -1;
      if (d >= 0) {
        pb->offset = p->buffers[d].offset;  /* shares the donor's slot: live unchanged */
        donated[d] = 1;
        clear_readonly(p, L, d);
      } else {
        pb->offset = fl_take(&fl, slot_bytes(pb), &top);
        live += slot_bytes(pb);
      }
      placed[b] = 1;
    }
    if (live > bound) bound = live;
    for (int j = ls[L]; j < ls[L + 1]; j++) {
      int b = lo[j];
      if (donated[b]) continue;
      fl_release(&fl, p->buffers[b].offset, slot_bytes(&p->buffers[b]));
      live -= slot_bytes(&p->buffers[b]);
    }
  }
  if (ok) {
    /* TEMP buffers no launch touches still get a distinct slot. */
    for (int b = 0; b < nb; b++)
      if (p->buffers[b].kind == GC_BUF_TEMP && !placed[b]) {
        p->buffers[b].offset = top;
        top += slot_bytes(&p->buffers[b]);
      }
    p->arena_bytes = top;
    p->arena_lower_bound = bound;
  } else {
    assign_naive(p);
  }
  free(fl.v);
  free(placed);
  free(donated);
  free(fs);
  free(fo);
  free(ls);
  free(lo);
}
