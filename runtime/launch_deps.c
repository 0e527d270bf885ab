/* launch_deps.c - which launches of a plan must wait for which (launch_deps.h).
 *
 * Each launch touches regions: a TEMP buffer is its byte range in the arena; every
 * INPUT and OUTPUT buffer is one region together (the caller's pointers may alias:
 * an in-place run); a CONST buffer is its own region. A tensor map param touches its
 * buffer. A param's access is what the compiler said (gc_lp_param.access); unknown
 * (a plan read from a bundle) counts as a write. Launch j depends on an earlier
 * launch i when they touch overlapping regions and one of them writes it (read
 * after write, write after read, write after write: the arena reuses bytes).
 * Only the edges not implied by others are kept (transitive reduction with a
 * bitset of ancestors per launch), so a plan without independent launches comes
 * out as a chain.
 */
#include "runtime/launch_deps.h"

#include <stdlib.h>
#include <string.h>

enum { SPACE_IO, SPACE_CONST, SPACE_TEMP, SPACE_STATE };

typedef struct region {
  int space;
  uint64_t lo, hi;    /* [lo, hi) in the space (IO: everything) */
  int write;
} region;

/* The region of plan buffer b. */
static region buffer_region(const gc_launch_plan *p, int b, int write) {
  const gc_lp_buffer *B = &p->buffers[b];
  region r = {SPACE_IO, 0, UINT64_MAX, write};
  if (B->kind == GC_LP_TEMP) r = (region){SPACE_TEMP, B->offset, B->offset + (B->bytes ? B->bytes : 1), write};
  else if (B->kind == GC_LP_CONST) r = (region){SPACE_CONST, (uint64_t)B->index, (uint64_t)B->index + 1, write};
  else if (B->kind == GC_LP_STATE) r = (region){SPACE_STATE, (uint64_t)B->index, (uint64_t)B->index + 1, write};
  return r;
}

/* Do two regions conflict? */
static int conflict(const region *a, const region *b) {
  return a->space == b->space && (a->write || b->write) && a->lo < b->hi && b->lo < a->hi;
}

void gc_launch_deps_free(gc_launch_deps *g) {
  if (!g) return;
  free(g->off);
  free(g->idx);
  memset(g, 0, sizeof *g);
}

int gc_launch_deps_build(const gc_launch_plan *p, int from, int to, gc_launch_deps *g) {
  memset(g, 0, sizeof *g);
  int n = to - from;
  if (n < 0) return -1;
  g->n = n;
  int *roff = calloc((size_t)n + 1, sizeof *roff);
  size_t words = ((size_t)n + 63) / 64;
  uint64_t *anc = calloc((size_t)n * words + 1, sizeof *anc);
  g->off = calloc((size_t)n + 1, sizeof *g->off);
  size_t nreg = 0;
  for (int L = from; L < to; L++) nreg += (size_t)p->kernels[p->launches[L]].n_params;
  region *reg = calloc(nreg + 1, sizeof *reg);
  int *cand = calloc((size_t)n + 1, sizeof *cand);
  size_t cap = (size_t)n * 2 + 4, used = 0;
  g->idx = calloc(cap, sizeof *g->idx);
  if (!roff || !anc || !g->off || !reg || !cand || !g->idx) goto oom;
  /* the regions of every launch */
  size_t k = 0;
  for (int j = 0; j < n; j++) {
    const gc_lp_kernel *K = &p->kernels[p->launches[from + j]];
    roff[j] = (int)k;
    for (int q = 0; q < K->n_params; q++) {
      const gc_lp_param *P = &K->params[q];
      int write = P->access != GC_LP_ACCESS_READ;
      if (P->kind == GC_LP_PARAM_BUFFER) reg[k++] = buffer_region(p, (int)P->value, write);
      else if (P->kind == GC_LP_PARAM_TMAP) reg[k++] = buffer_region(p, p->tmaps[P->value].buffer, write);
    }
  }
  roff[n] = (int)k;
  for (int j = 0; j < n; j++) {
    uint64_t *aj = anc + (size_t)j * words;
    g->off[j] = (int)used;
    int nc = 0;
    for (int i = j - 1; i >= 0; i--) {   /* nearest first: they imply the older ones */
      int hit = 0;
      for (int a = roff[i]; a < roff[i + 1] && !hit; a++)
        for (int b = roff[j]; b < roff[j + 1] && !hit; b++) hit = conflict(&reg[a], &reg[b]);
      if (!hit || (aj[i / 64] >> (i % 64) & 1)) continue;   /* independent, or already implied */
      cand[nc++] = i;
      const uint64_t *ai = anc + (size_t)i * words;
      for (size_t w = 0; w < words; w++) aj[w] |= ai[w];
      aj[i / 64] |= (uint64_t)1 << (i % 64);
    }
    if (used + (size_t)nc > cap) {
      while (used + (size_t)nc > cap) cap *= 2;
      int *t = realloc(g->idx, cap * sizeof *t);
      if (!t) goto oom;
      g->idx = t;
    }
    /* A candidate found later (older) may have been implied by none before it but is
     * implied by none after either: the scan goes newest to oldest and skips what the
     * kept ones imply, so every kept edge is needed. */
    for (int c = nc - 1; c >= 0; c--) g->idx[used++] = cand[c];
    if (j > 0 && !(nc == 1 && cand[0] == j - 1)) g->branches = 1;
  }
  g->off[n] = (int)used;
  free(roff);
  free(anc);
  free(reg);
  free(cand);
  return 0;
oom:
  free(roff);
  free(anc);
  free(reg);
  free(cand);
  gc_launch_deps_free(g);
  return -1;
}
