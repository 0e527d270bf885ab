/* fusion.c - fusion decisions over a specialized graph (see fusion.h).
 *
 *   gc_fusion_plan
 *     index      op id -> op and program position, value id -> uses, outputs
 *     phase 1    roots (reduce, norm, matmul, conv, pool) in program order, each
 *                growing its epilogue chain (output fusion)
 *     phase 2    every other op in reverse program order: joins all its users'
 *                groups (loop / input fusion, duplication of cheap producers,
 *                index maps into matmul operands), joins its single user group
 *                as an extra output, or starts a loop group
 *     phase 3    sibling merges (multi-output loop and reduce kernels)
 *     finish     materialized values, group outputs, reshape views, launch
 *                order (topological, program order of the first root on ties)
 *
 * A membership is (op, group, role bits); an op is in several groups when it
 * is duplicated. Group-graph edges are "memory edges": a member u of h whose
 * result is read by a member w of h2 that does not compute u itself. The
 * cycle check walks these edges (ops not yet in a group count as groups of one).
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/fusion.h"

/* Most a duplicated producer may cost per element, summed over the extra copies. */
#define DUP_BUDGET 4
/* Sibling candidates per shared value (bounds the pairwise cycle checks). */
#define MAX_READERS 64

typedef struct fz_memb {
  int group, role, next;
} fz_memb;

typedef struct fz_grp {
  gc_fusion_kind kind;
  int alive;
  int n_ops, cap_ops;
  int *ops;                /* op ids, in insertion order */
  int causal;              /* attention: causal mask (gc_fusion_group.causal) */
  int64_t causal_off;
  gc_attn_resid resid;     /* attention: gc_fusion_group.resid */
  int nan_guard;           /* attention: gc_fusion_group.nan_guard */
} fz_grp;

typedef struct fz_use {
  int op, idx, next;
} fz_use;

typedef struct fz {
  const gc_graph *g;
  int fuse;
  int host;                /* the host target: matmul operands take cheap elementwise producers */
  int n_op_ids, n_val_ids;
  const gc_op **op;        /* op id -> op (NULL: no such op) */
  const gc_value **val;    /* value id -> value (NULL: no such value) */
  int *pos;                /* op id -> program position */
  int *use_head;           /* value id -> first use (-1) */
  fz_use *uses;
  int n_uses;
  unsigned char *is_out;   /* value id -> graph output */
  fz_memb *memb;
  int n_memb, cap_memb;
  int *memb_head;          /* op id -> first membership (-1) */
  fz_grp *grps;
  int n_grps, cap_grps;
  int *gstamp, *ostamp;    /* DFS marks */
  int stamp;
  int *stack;
  int cap_stack;
  int oom;
} fz;

/* ---- op classes ---------------------------------------------------------------------------- */

/* States live in STATE buffers, params and list consts in CONST buffers: no kernel, never
 * fused. */
int gc_fusion_is_buffer_source(const gc_op *op) {
  return op->opcode == GC_OP_STATE || gc_fusion_is_const_source(op);
}

/* Params and list consts live in CONST buffers: no kernel, never fused. */
int gc_fusion_is_const_source(const gc_op *op) {
  if (op->opcode == GC_OP_PARAM) return 1;
  if (op->opcode != GC_OP_CONST) return 0;
  const gc_attr *a = gc_op_attr(op, "value");
  return a && a->kind == GC_ATTR_LIST;
}

/* Ops a loop kernel computes per element through an index map. */
static int is_loop_op(const gc_op *op) {
  gc_kind k = gc_op_infos[op->opcode].kind;
  if (k == GC_KIND_ELEMENTWISE || k == GC_KIND_MOVE) return 1;
  return (op->opcode == GC_OP_CONST || op->opcode == GC_OP_IOTA) && !gc_fusion_is_const_source(op);
}

/* Pure index maps: a matmul can read through them with strided loads. */
static int is_view_op(const gc_op *op) {
  switch (op->opcode) {
    case GC_OP_RESHAPE:
    case GC_OP_TRANSPOSE:
    case GC_OP_BROADCAST:
    case GC_OP_SLICE:
    case GC_OP_SPLIT: return 1;
    default: return 0;
  }
}

/* Per-element cost of recomputing op (duplication budget): transcendentals are costly. */
static int op_cost(const gc_op *op) {
  switch (op->opcode) {
    case GC_OP_EXP:
    case GC_OP_LOG:
    case GC_OP_SQRT:
    case GC_OP_RSQRT:
    case GC_OP_TANH:
    case GC_OP_SIGMOID:
    case GC_OP_GELU:
    case GC_OP_SILU:
    case GC_OP_ERF:
    case GC_OP_SIN:
    case GC_OP_COS:
    case GC_OP_POW:
    case GC_OP_HASH_UNIFORM: return 8;
    case GC_OP_CLAMP:
    case GC_OP_DIV: return 2;
    case GC_OP_CAST:  /* to or from fp8: a few dozen integer steps (codegen/kir_f8.c) */
      return gc_dtype_is_f8(op->results[0]->type.dtype) || gc_dtype_is_f8(op->operands[0]->type.dtype) ? 8 : 1;
    default: return is_view_op(op) || op->opcode == GC_OP_CONST || op->opcode == GC_OP_IOTA ? 0 : 1;
  }
}

/* The kind of group an op starts when it is a root. */
static gc_fusion_kind root_kind(const gc_op *op) {
  switch (gc_op_infos[op->opcode].kind) {
    case GC_KIND_REDUCE: return GC_FUSION_REDUCE;
    case GC_KIND_NORM: return GC_FUSION_NORM;
    case GC_KIND_MATMUL: return GC_FUSION_MATMUL;
    case GC_KIND_CONV: return GC_FUSION_CONV;
    case GC_KIND_POOL: return GC_FUSION_POOL;
    case GC_KIND_WRITE: return GC_FUSION_STATE_WRITE;
    default: return op->opcode == GC_OP_SPLIT ? GC_FUSION_SPLIT : GC_FUSION_LOOP;
  }
}

/* ---- memberships and groups ------------------------------------------------------------------- */

/* Role bits of op id in group gi (0: not a member). */
static int fz_role(const fz *f, int gi, int id) {
  for (int m = f->memb_head[id]; m >= 0; m = f->memb[m].next)
    if (f->memb[m].group == gi) return f->memb[m].role;
  return 0;
}

/* A new empty group; -1 on OOM. */
static int fz_new_group(fz *f, gc_fusion_kind kind) {
  if (f->n_grps == f->cap_grps) {
    int cap = f->cap_grps ? 2 * f->cap_grps : 16;
    fz_grp *ng = realloc(f->grps, (size_t)cap * sizeof *ng);
    int *gs = ng ? realloc(f->gstamp, (size_t)cap * sizeof *gs) : NULL;
    if (ng) f->grps = ng;
    if (!ng || !gs) {
      f->oom = 1;
      return -1;
    }
    f->gstamp = gs;
    f->cap_grps = cap;
  }
  int gi = f->n_grps++;
  memset(&f->grps[gi], 0, sizeof f->grps[gi]);
  f->grps[gi].kind = kind;
  f->grps[gi].alive = 1;
  f->gstamp[gi] = 0;
  return gi;
}

/* Make op id a member of gi with `role` (or add the bits when it already is). */
static void fz_add(fz *f, int gi, int id, int role) {
  for (int m = f->memb_head[id]; m >= 0; m = f->memb[m].next)
    if (f->memb[m].group == gi) {
      f->memb[m].role |= role;
      return;
    }
  fz_grp *gr = &f->grps[gi];
  if (f->n_memb == f->cap_memb) {
    int cap = f->cap_memb ? 2 * f->cap_memb : 64;
    fz_memb *nm = realloc(f->memb, (size_t)cap * sizeof *nm);
    if (!nm) {
      f->oom = 1;
      return;
    }
    f->memb = nm;
    f->cap_memb = cap;
  }
  if (gr->n_ops == gr->cap_ops) {
    int cap = gr->cap_ops ? 2 * gr->cap_ops : 8;
    int *no = realloc(gr->ops, (size_t)cap * sizeof *no);
    if (!no) {
      f->oom = 1;
      return;
    }
    gr->ops = no;
    gr->cap_ops = cap;
  }
  gr->ops[gr->n_ops++] = id;
  int m = f->n_memb++;
  f->memb[m] = (fz_memb){gi, role, f->memb_head[id]};
  f->memb_head[id] = m;
}

/* Move every member of `from` into `into` (roles or'ed); `from` dies. */
static void fz_merge(fz *f, int into, int from) {
  fz_grp *src = &f->grps[from];
  for (int i = 0; i < src->n_ops && !f->oom; i++) {
    int id = src->ops[i], role = 0;
    int *link = &f->memb_head[id];
    while (*link >= 0) {  /* unlink the membership in `from` */
      fz_memb *m = &f->memb[*link];
      if (m->group == from) {
        role = m->role;
        *link = m->next;
        break;
      }
      link = &m->next;
    }
    fz_add(f, into, id, role);
  }
  src->alive = 0;
  src->n_ops = 0;
}

/* ---- the cycle check --------------------------------------------------------------------------- */

/* Push a DFS node: groups as gi >= 0, ungrouped ops as -(id + 1). */
static void fz_push(fz *f, int *n, int node) {
  if (*n == f->cap_stack) {
    int cap = f->cap_stack ? 2 * f->cap_stack : 64;
    int *ns = realloc(f->stack, (size_t)cap * sizeof *ns);
    if (!ns) {
      f->oom = 1;
      return;
    }
    f->stack = ns;
    f->cap_stack = cap;
  }
  f->stack[(*n)++] = node;
}

/* Successors of op u (member of group `in`, or ungrouped when in < 0) across memory edges. */
static void fz_succ(fz *f, int *n, int in, int u) {
  const gc_op *op = f->op[u];
  for (int r = 0; r < op->n_results; r++)
    for (int x = f->use_head[op->results[r]->id]; x >= 0; x = f->uses[x].next) {
      int w = f->uses[x].op;
      if (f->memb_head[w] < 0) {
        if (f->ostamp[w] != f->stamp) {
          f->ostamp[w] = f->stamp;
          fz_push(f, n, -(w + 1));
        }
        continue;
      }
      for (int m = f->memb_head[w]; m >= 0; m = f->memb[m].next) {
        int h = f->memb[m].group;
        if (h == in || fz_role(f, h, u)) continue;  /* h computes u inline */
        if (f->gstamp[h] != f->stamp) {
          f->gstamp[h] = f->stamp;
          fz_push(f, n, h);
        }
      }
    }
}

/* Is there a path of memory edges from group `from` to group `tg` (tg >= 0) or
 * to op `top` (top >= 0: the op itself or any group holding it)? */
static int fz_reaches(fz *f, int from, int tg, int top) {
  f->stamp++;
  int n = 0;
  f->gstamp[from] = f->stamp;
  fz_push(f, &n, from);
  while (n > 0 && !f->oom) {
    int node = f->stack[--n];
    if (node >= 0) {
      if (node != from && node == tg) return 1;
      if (node != from && top >= 0 && fz_role(f, node, top)) return 1;
      fz_grp *gr = &f->grps[node];
      for (int i = 0; i < gr->n_ops; i++) fz_succ(f, &n, node, gr->ops[i]);
    } else {
      int u = -node - 1;
      if (u == top) return 1;
      fz_succ(f, &n, -1, u);
    }
  }
  return 0;
}

/* ---- phase 1: roots and epilogues --------------------------------------------------------------- */

/* A cast to a wider element: its readers compute it for less than its store costs. */
static int widens(const gc_op *E) {
  return E->opcode == GC_OP_CAST &&
         graphc_dtype_size(E->results[0]->type.dtype) > graphc_dtype_size(E->operands[0]->type.dtype);
}

/* Can elementwise op E join the epilogue of group gi (root value type rt)? */
static int epilogue_ok(fz *f, int gi, const gc_op *E, const gc_type *rt) {
  if (f->memb_head[E->id] >= 0 || E->n_results != 1) return 0;
  const gc_type *et = &E->results[0]->type;
  /* A reshape of a matmul's chain keeps each element's linear index (a conv2d
   * written as a matmul: [N, O, OH*OW] -> [N, O, OH, OW]); ops after it are read
   * at the same linear index, so they join too. */
  if (E->opcode == GC_OP_RESHAPE) {
    if (f->grps[gi].kind != GC_FUSION_MATMUL || !E->operands[0]->def || !fz_role(f, gi, E->operands[0]->def->id))
      return 0;
    /* a returned reshape (matmul-canon's 2-D chain back in the output's shape): stored
     * by the epilogue, where as a view of the chain's buffer it would cost a copy */
    if (f->is_out[E->results[0]->id]) return 1;
    /* only on the way to an elementwise op (a bias): a bare reshape is a view its
     * readers take in place (attention's head split), better stored in the root's shape */
    for (int x = f->use_head[E->results[0]->id]; x >= 0; x = f->uses[x].next) {
      const gc_op *u = f->op[f->uses[x].op];
      if (gc_op_infos[u->opcode].kind == GC_KIND_ELEMENTWISE && gc_type_same_dims(&u->results[0]->type, et) && !widens(u))
        return 1;
    }
    return 0;
  }
  if (gc_op_infos[E->opcode].kind != GC_KIND_ELEMENTWISE) return 0;
  if (gc_type_numel(et) != gc_type_numel(rt)) return 0;
  if (!gc_type_same_dims(et, rt) && f->grps[gi].kind != GC_FUSION_MATMUL) return 0;
  for (int i = 0; i < E->n_operands; i++) {
    const gc_value *x = E->operands[i];
    const gc_op *d = x->def;
    if (d && fz_role(f, gi, d->id)) {
      if (!gc_type_same_dims(&x->type, et)) return 0;  /* the chain is read at its own index */
      continue;
    }
    if (!d || gc_fusion_is_buffer_source(d)) continue;
    if (fz_reaches(f, gi, -1, d->id)) return 0;  /* x is computed from this group */
  }
  return 1;
}

/* Can use U of a chain value join the epilogue once E has: an elementwise op of E's
 * dims whose every operand is in the group, E's result, independent of the group (a
 * constant, an input), or (depth-bounded) an elementwise op of the same kind in turn. HardSwish as exporters
 * write it, y * clamp(y / 6 + 0.5, 0, 1), reads y twice: the second read (the final
 * mul) joins after the clamp, so y is not "written anyway" because of it. */
static int joins_after(fz *f, int gi, const gc_op *E, const gc_op *U, int depth) {
  if (U == E) return 1;
  if (depth > 6 || U->n_results != 1 || gc_op_infos[U->opcode].kind != GC_KIND_ELEMENTWISE ||
      f->memb_head[U->id] >= 0 || !gc_type_same_dims(&U->results[0]->type, &E->results[0]->type))
    return 0;
  for (int i = 0; i < U->n_operands; i++) {
    const gc_op *d = U->operands[i]->def;
    if (!d || gc_fusion_is_buffer_source(d) || fz_role(f, gi, d->id) || !fz_reaches(f, gi, -1, d->id)) continue;
    if (!joins_after(f, gi, E, d, depth + 1)) return 0;
  }
  return 1;
}

/* Would widening cast E's result have to be stored if E joined group gi: a reader of it that is
 * not elementwise of its dims (a split reduction's reshape, a reduction), or that reads another
 * value computed from the group (a per-row scale: x / amax(x))? A chain that narrows again
 * (f16 -> f32 -> scaled -> f8, an fp8 matmul's quantized input) joins as a whole. */
static int widened_store(fz *f, int gi, const gc_op *E) {
  const gc_value *ev = E->results[0];
  for (int x = f->use_head[ev->id]; x >= 0; x = f->uses[x].next) {
    const gc_op *U = f->op[f->uses[x].op];
    if (gc_op_infos[U->opcode].kind != GC_KIND_ELEMENTWISE || U->n_results != 1 ||
        !gc_type_same_dims(&U->results[0]->type, &ev->type))
      return 1;
    for (int i = 0; i < U->n_operands; i++) {
      const gc_op *d = U->operands[i]->def;
      if (U->operands[i] == ev || !d || gc_fusion_is_buffer_source(d) || fz_role(f, gi, d->id)) continue;
      if (fz_reaches(f, gi, -1, d->id)) return 1;
    }
  }
  return 0;
}

/* Is E better left to its users? Its chain operand is written anyway (read
 * outside the chain and not by an op that joins after E) or E widens it and would be stored
 * wider (a cast to f32 before a split reduction: widened_store),
 * E is not returned, and its users can all compute it inline (elementwise,
 * movement, reductions, norms, pools; not matmul or conv operands), within the
 * duplication budget. Then the epilogue would only add a store. */
static int leave_out(fz *f, int gi, const gc_op *E) {
  const gc_value *ev = E->results[0];
  if (f->is_out[ev->id]) return 0;
  int shared = 0;
  for (int i = 0; i < E->n_operands; i++) {
    const gc_value *x = E->operands[i];
    if (!x->def || !fz_role(f, gi, x->def->id)) continue;
    for (int u = f->use_head[x->id]; u >= 0; u = f->uses[u].next)
      if (f->uses[u].op != E->id && !fz_role(f, gi, f->uses[u].op) && !joins_after(f, gi, E, f->op[f->uses[u].op], 0))
        shared = 1;
  }
  if (!shared && !(widens(E) && widened_store(f, gi, E))) return 0;
  int n = 0;
  for (int u = f->use_head[ev->id]; u >= 0; u = f->uses[u].next) {
    gc_kind k = gc_op_infos[f->op[f->uses[u].op]->opcode].kind;
    if (k == GC_KIND_MATMUL || k == GC_KIND_CONV || k == GC_KIND_SOURCE) return 0;
    n++;
  }
  return n > 0 && op_cost(E) * (n - 1) <= DUP_BUDGET;
}

/* Grow the epilogue of root R (group gi) along its consumers, in program order. */
static void grow_epilogue(fz *f, int gi, const gc_op *R) {
  int n = 0, cap = 8;
  int *cand = malloc((size_t)cap * sizeof *cand);
  if (!cand) {
    f->oom = 1;
    return;
  }
  const gc_op *last = R;
  for (;;) {
    /* consumers of the newest chain value become candidates (kept sorted by position) */
    for (int r = 0; r < last->n_results; r++)
      for (int x = f->use_head[last->results[r]->id]; x >= 0; x = f->uses[x].next) {
        int w = f->uses[x].op, dup = 0;
        for (int j = 0; j < n; j++) dup |= cand[j] == w;
        if (dup) continue;
        if (n == cap) {
          int *nc = realloc(cand, (size_t)(cap *= 2) * sizeof *nc);
          if (!nc) {
            f->oom = 1;
            free(cand);
            return;
          }
          cand = nc;
        }
        int j = n++;
        while (j > 0 && f->pos[cand[j - 1]] < f->pos[w]) {
          cand[j] = cand[j - 1];
          j--;
        }
        cand[j] = w;  /* descending positions: the smallest is at the end */
      }
    const gc_op *next = NULL;
    while (n > 0 && !next) {
      const gc_op *e = f->op[cand[--n]];
      if (epilogue_ok(f, gi, e, &R->results[0]->type) && !leave_out(f, gi, e)) next = e;
    }
    if (!next || f->oom) break;
    fz_add(f, gi, next->id, GC_FROLE_EPILOGUE | GC_FROLE_WRITE);
    last = next;
  }
  free(cand);
}

/* ---- phase 0: attention ------------------------------------------------------------------------ */

/* The op reading v when v has exactly one use and is not returned, else NULL. */
static const gc_op *only_user(const fz *f, const gc_value *v) {
  int x = f->use_head[v->id];
  if (x < 0 || f->uses[x].next >= 0 || f->is_out[v->id]) return NULL;
  return f->op[f->uses[x].op];
}

/* A const with one scalar value (a splat): attention's scale. */
static int scalar_const(const gc_value *v) {
  const gc_op *d = v->def;
  if (!d || d->opcode != GC_OP_CONST) return 0;
  const gc_attr *a = gc_op_attr(d, "value");
  return a && (a->kind == GC_ATTR_FLOAT || a->kind == GC_ATTR_INT);
}

/* The guard exporters put between the softmax and the second matmul (torch's SDPA:
 * where(isnan(p), 0, p), which zeroes the rows a mask hides entirely): a select of a
 * zero splat for ne(p, p), read only by M2; NULL when `g` is none. Fills the ne op. */
static const gc_op *nan_guard(const fz *f, const gc_op *g, const gc_op *M2, const gc_op **ne) {
  if (!g || g->opcode != GC_OP_SELECT || only_user(f, g->results[0]) != M2) return NULL;
  const gc_op *c = g->operands[0]->def, *z = g->operands[1]->def, *p = g->operands[2]->def;
  if (!c || c->opcode != GC_OP_NE || !p || c->operands[0] != p->results[0] || c->operands[1] != p->results[0] ||
      only_user(f, c->results[0]) != g || !scalar_const(g->operands[1]))
    return NULL;
  const gc_attr *a = gc_op_attr(z, "value");
  if (!((a->kind == GC_ATTR_FLOAT && a->u.f == 0.0) || (a->kind == GC_ATTR_INT && a->u.i == 0))) return NULL;
  /* p's uses: the ne (both operands) and the select, nothing else */
  int n = 0;
  for (int x = f->use_head[p->results[0]->id]; x >= 0; x = f->uses[x].next) {
    const gc_op *u = f->op[f->uses[x].op];
    if (u != c && u != g) return NULL;
    n++;
  }
  if (n != 3 || f->is_out[p->results[0]->id]) return NULL;
  *ne = c;
  return g;
}

/* Is M2 the second matmul of an attention chain (see fusion.h, step 0)? Fills the
 * scores matmul S, the scale op X and the mask add A (NULL: none), the softmax P and
 * the NaN guard G and its ne op (NULL: none). */
static int attention_chain(const fz *f, const gc_op *M2, const gc_op **S, const gc_op **X, const gc_op **A,
                           const gc_op **P, const gc_value **mask, const gc_op **G, const gc_op **Gne) {
  if (M2->opcode != GC_OP_MATMUL || gc_op_attr_bool(M2, "transpose_a", 0)) return 0;
  const gc_op *p = M2->operands[0]->def;
  *G = nan_guard(f, p, M2, Gne);
  if (*G) p = (*G)->operands[2]->def;
  if (!p || p->opcode != GC_OP_SOFTMAX || (!*G && only_user(f, p->results[0]) != M2)) return 0;
  int r = p->results[0]->type.rank;
  int64_t ax = gc_op_attr_int(p, "axis", -1);
  if (r < 2 || (ax < 0 ? ax + r : ax) != r - 1) return 0;
  const gc_op *x = p->operands[0]->def, *next = p;
  *X = *A = NULL;
  *mask = NULL;
  /* an additive mask: add(chain, m), m any value broadcasting to the scores (not their result) */
  if (x && x->opcode == GC_OP_ADD && only_user(f, x->results[0]) == next) {
    const gc_op *d0 = x->operands[0]->def, *d1 = x->operands[1]->def;
    int ci = d0 && (d0->opcode == GC_OP_MATMUL || d0->opcode == GC_OP_MUL || d0->opcode == GC_OP_DIV) &&
                     only_user(f, x->operands[0]) == x ? 0
             : d1 && (d1->opcode == GC_OP_MATMUL || d1->opcode == GC_OP_MUL || d1->opcode == GC_OP_DIV) &&
                     only_user(f, x->operands[1]) == x ? 1 : -1;
    if (ci < 0 || !gc_type_same_dims(&x->results[0]->type, &x->operands[ci]->type)) return 0;
    *A = x;
    *mask = x->operands[1 - ci];
    next = x;
    x = x->operands[ci]->def;
  }
  const gc_op *s = x;
  if (x && (x->opcode == GC_OP_MUL || x->opcode == GC_OP_DIV)) {
    if (only_user(f, x->results[0]) != next) return 0;
    int si = scalar_const(x->operands[1]) ? 0 : (x->opcode == GC_OP_MUL && scalar_const(x->operands[0])) ? 1 : -1;
    if (si < 0) return 0;
    s = x->operands[si]->def;
    *X = x;
    next = x;
  }
  if (!s || s->opcode != GC_OP_MATMUL || gc_op_attr_bool(s, "transpose_a", 0) || only_user(f, s->results[0]) != next)
    return 0;
  if (*A && (*A)->results[0]->type.dtype != M2->results[0]->type.dtype) return 0;
  /* one dtype (f16 / bf16) throughout; the scores' batch dims are the output's */
  gc_dtype dt = M2->results[0]->type.dtype;
  if (dt != GRAPHC_DTYPE_F16 && dt != GRAPHC_DTYPE_BF16) return 0;
  const gc_value *vals[] = {s->operands[0], s->operands[1], s->results[0], p->results[0], M2->operands[1]};
  for (int i = 0; i < 5; i++)
    if (vals[i]->type.dtype != dt) return 0;
  if (*X && ((*X)->results[0]->type.dtype != dt || !gc_type_same_dims(&(*X)->results[0]->type, &s->results[0]->type)))
    return 0;
  const gc_type *st = &s->results[0]->type, *ot = &M2->results[0]->type;
  if (st->rank != ot->rank || st->rank < 2) return 0;
  for (int i = 0; i < st->rank - 2; i++)
    if (st->dims[i] != ot->dims[i]) return 0;
  const gc_type *qt = &s->operands[0]->type;
  int64_t D = qt->dims[qt->rank - 1], Dv = ot->dims[ot->rank - 1];
  /* 16, 32, 64 or 128: tile rows of 2 .. 16 whole 16-byte chunks (the swizzle's period) */
  if (D < 16 || D > 128 || (D & (D - 1)) || Dv < 16 || Dv > 128 || (Dv & (Dv - 1))) return 0;
  *S = s;
  *P = p;
  return 1;
}

/* Strides of chain[0]'s operand in the buffer of chain[n-1]'s result (row-major), through
 * the transposes and reshapes of the chain, each reading the one before; 0 when a reshape
 * is not a view of it. */
int gc_fusion_view_strides(const gc_op *const *chain, int n, int64_t *st) {
  const gc_type *ft = &chain[n - 1]->results[0]->type;
  int64_t cur[GC_MAX_RANK], prev[GC_MAX_RANK], p[GC_MAX_RANK];
  int64_t s = 1;
  for (int i = ft->rank - 1; i >= 0; i--) {
    cur[i] = s;
    s *= ft->dims[i];
  }
  for (int k = n - 1; k >= 0; k--) {
    const gc_op *op = chain[k];
    const gc_type *rt = &op->results[0]->type, *it = &op->operands[0]->type;
    if (op->opcode == GC_OP_TRANSPOSE) {
      if (gc_attr_ints(gc_op_attr(op, "perm"), p, GC_MAX_RANK) != rt->rank) return 0;
      for (int i = 0; i < rt->rank; i++) prev[p[i]] = cur[i];
    } else if (op->opcode != GC_OP_RESHAPE || !gc_reshape_strides(rt, cur, it, prev)) {
      return 0;
    }
    memcpy(cur, prev, sizeof cur);
  }
  memcpy(st, cur, sizeof cur);
  return 1;
}

/* Step 0: every attention chain becomes one group; the head merge after it (transposes
 * and reshapes, each the only use of the one before) joins as output views. */
static void plan_attention(fz *f) {
  /* the last mask checked: the layers of a decoder share theirs */
  const gc_value *seen = NULL;
  gc_type seen_st;
  int seen_causal = 0;
  int64_t seen_off = 0;
  gc_attn_resid seen_resid = {0};
  for (const gc_op *op = f->g->first; op && !f->oom; op = op->next) {
    const gc_op *S, *X, *A, *P, *G, *Gne = NULL;
    const gc_value *mask;
    if (f->memb_head[op->id] >= 0 || !attention_chain(f, op, &S, &X, &A, &P, &mask, &G, &Gne)) continue;
    int gi = fz_new_group(f, GC_FUSION_ATTENTION);
    if (gi < 0) return;
    /* a causal mask (attn_mask.c): the kernel computes it from indices and skips the key
     * blocks above the diagonal; its producers still join (the kernel reads none of them
     * but a residual mask's) */
    if (mask && !(mask == seen && gc_type_same_dims(&seen_st, &S->results[0]->type))) {
      seen = mask;
      seen_st = S->results[0]->type;
      seen_causal = gc_attn_causal_mask(mask, &seen_st, &seen_off);
      memset(&seen_resid, 0, sizeof seen_resid);
      if (!seen_causal) seen_causal = gc_attn_causal_resid(mask, &seen_st, &seen_off, &seen_resid);
    }
    if (mask) {
      f->grps[gi].causal = seen_causal;
      f->grps[gi].causal_off = seen_off;
      f->grps[gi].resid = seen_resid;
    }
    fz_add(f, gi, S->id, GC_FROLE_ELEM | GC_FROLE_MMA);
    if (X) fz_add(f, gi, X->id, GC_FROLE_ELEM);
    /* the mask is computed per score element: its producers join as elementwise ops */
    if (A) fz_add(f, gi, A->id, GC_FROLE_ELEM);
    fz_add(f, gi, P->id, GC_FROLE_ELEM);
    /* the guard: rows whose keys are all hidden (l = 0) give 0, not 0 / 0 */
    if (G) {
      fz_add(f, gi, Gne->id, GC_FROLE_ELEM);
      fz_add(f, gi, G->id, GC_FROLE_ELEM);
      f->grps[gi].nan_guard = 1;
    }
    fz_add(f, gi, op->id, GC_FROLE_ROOT | GC_FROLE_WRITE);
    const gc_op *chain[GC_MAX_VIEW_CHAIN], *u, *last = op;
    int n = 0;
    int64_t st[GC_MAX_RANK];
    while (n < GC_MAX_VIEW_CHAIN && (u = only_user(f, last->results[0])) &&
           (u->opcode == GC_OP_TRANSPOSE || u->opcode == GC_OP_RESHAPE))
      chain[n++] = last = u;
    while (n > 0 && !gc_fusion_view_strides(chain, n, st)) n--;  /* the longest that is a view */
    for (int i = 0; i < n; i++) fz_add(f, gi, chain[i]->id, GC_FROLE_EPILOGUE | (i == n - 1 ? GC_FROLE_WRITE : 0));
    if (n == 0) grow_epilogue(f, gi, op);
  }
}

/* ---- phase 2: producers --------------------------------------------------------------------------- */

/* The role a group of kind k asks of operand producers of a member with role rw. On the
 * host a matmul's operands also compute cheap elementwise producers inline (CHEAP): the
 * register tiles read each operand element M/8 or N/32 times, a multiply or an add more
 * per load against a pass over memory to write and read the product back (the
 * squeeze-and-excitation scale before a 1x1 projection of every EfficientNet block). The
 * GPU's operand loads are copies into shared memory (cp.async, TMA): index maps only. */
static int operand_role(const fz *f, gc_fusion_kind k, int rw) {
  /* attention: both matmuls read index maps; the mask (and the scale) computes inline */
  if (k == GC_FUSION_ATTENTION) return rw & (GC_FROLE_ROOT | GC_FROLE_MMA | GC_FROLE_VIEW) ? GC_FROLE_VIEW : GC_FROLE_ELEM;
  if (rw & GC_FROLE_ROOT) {
    if (k == GC_FUSION_MATMUL) return GC_FROLE_VIEW | (f->host ? GC_FROLE_CHEAP : 0);
    if (k == GC_FUSION_CONV || k == GC_FUSION_STATE_WRITE) return 0;
    return GC_FROLE_ELEM;
  }
  if (rw & GC_FROLE_EPILOGUE) return GC_FROLE_ELEM;
  return rw & (GC_FROLE_ELEM | GC_FROLE_VIEW | GC_FROLE_CHEAP);
}

/* A param (through reshapes and casts) read through a transpose that is more than a swap of
 * the last two dims: as a matmul operand it would be staged element by element on
 * every K tile of every run. Materialized instead (one small loop kernel), the
 * matmul reads it in 16-byte chunks: the layout pass's NHWC conv weights,
 * [O, C, KH, KW] as [KH*KW*C, O]. */
static int permuted_weight(const gc_op *P) {
  if (P->opcode != GC_OP_TRANSPOSE) return 0;
  int r = P->results[0]->type.rank;
  int64_t p[GC_MAX_RANK];
  const gc_attr *a = gc_op_attr(P, "perm");
  if (!a || gc_attr_ints(a, p, GC_MAX_RANK) != r) return 0;
  int swap = r >= 2 && p[r - 2] == r - 1 && p[r - 1] == r - 2;
  for (int i = 0; i < r - 2; i++) swap &= p[i] == i;
  /* an 8-bit B (fp8, i8, u8) read K-major through a swap of its stored K x N (qdq-fold): the
   * 8-bit tensor cores take K-major operands only, so the swap is materialized too */
  gc_dtype pt = P->results[0]->type.dtype;
  if (swap && (graphc_dtype_size(pt) != 1 || pt == GRAPHC_DTYPE_BOOL)) return 0;
  const gc_op *d = P->operands[0]->def;  /* a cast: the precision pass's weights in f16 / bf16 */
  while (d && (d->opcode == GC_OP_RESHAPE || d->opcode == GC_OP_CAST)) d = d->operands[0]->def;
  return d && d->opcode == GC_OP_PARAM;
}

/* Does P compute from params and constants alone (through loop ops, within a few steps)?
 * Such an op is better a kernel of its own: prologue.c runs it once per weights. */
static int weights_only(const gc_op *P, int depth) {
  if (gc_fusion_is_const_source(P) || P->opcode == GC_OP_CONST || P->opcode == GC_OP_IOTA) return 1;
  if (depth > 8 || !is_loop_op(P)) return 0;
  for (int i = 0; i < P->n_operands; i++)
    if (!P->operands[i]->def || !weights_only(P->operands[i]->def, depth + 1)) return 0;
  return 1;
}

/* Does a site with role bits `role` accept producer P inline? Matmul operands
 * (VIEW) take index maps and splat / iota sources (no arithmetic per load), but
 * not a permuted weight; a host matmul's (CHEAP) also elementwise ops of cost 1 that do
 * not compute from the weights alone (a weight's cast runs once, in the prologue). */
static int site_accepts(const gc_op *P, int role) {
  if (!role) return 0;
  if ((role & GC_FROLE_VIEW) && permuted_weight(P)) return 0;
  /* im2col is an index map with a bounds test: a conv2d's windows read in place */
  if ((role & GC_FROLE_VIEW) && !is_view_op(P) && P->opcode != GC_OP_CONST && P->opcode != GC_OP_IOTA &&
      P->opcode != GC_OP_IM2COL &&
      !((role & GC_FROLE_CHEAP) && gc_op_infos[P->opcode].kind == GC_KIND_ELEMENTWISE && op_cost(P) <= 1 &&
        !weights_only(P, 0)))
    return 0;
  return is_loop_op(P);
}

/* Is member w of loop group gi computed at the roots' own linear index? */
static int at_identity(fz *f, int gi, const gc_op *w, int depth) {
  int role = fz_role(f, gi, w->id);
  if (role & GC_FROLE_ROOT) return 1;
  if (!role || depth > 64) return 0;
  int any = 0;
  for (int r = 0; r < w->n_results; r++)
    for (int x = f->use_head[w->results[r]->id]; x >= 0; x = f->uses[x].next) {
      const gc_op *u = f->op[f->uses[x].op];
      if (!fz_role(f, gi, u->id)) continue;
      int edge = u->opcode == GC_OP_RESHAPE ||
                 (gc_op_infos[u->opcode].kind == GC_KIND_ELEMENTWISE &&
                  gc_type_same_dims(&w->results[r]->type, &u->results[0]->type));
      if (!edge || !at_identity(f, gi, u, depth + 1)) return 0;
      any = 1;
    }
  return any;
}

/* May graph-output producer P join loop group gi as an extra output written at
 * the roots' index? */
static int extra_output_ok(fz *f, const gc_op *P, int gi) {
  if (f->grps[gi].kind != GC_FUSION_LOOP || P->n_results != 1 || !is_loop_op(P) ||
      P->opcode == GC_OP_SPLIT)
    return 0;
  const gc_value *v = P->results[0];
  for (int x = f->use_head[v->id]; x >= 0; x = f->uses[x].next) {
    const gc_op *u = f->op[f->uses[x].op];
    int edge = u->opcode == GC_OP_RESHAPE ||
               (gc_op_infos[u->opcode].kind == GC_KIND_ELEMENTWISE && gc_type_same_dims(&v->type, &u->results[0]->type));
    if (!edge || !at_identity(f, gi, u, 0)) return 0;
  }
  return 1;
}

typedef struct fz_site {
  int group, role;
} fz_site;

static int siblings(fz *f, int a, int b);

/* A costly producer whose users sit in several sibling groups (same shape, no
 * path between any two of them): merge those groups first, so it is computed
 * once, inline. Every pair is checked, not only the first against the others: a
 * path from site 1 through another group to site 2 would become a cycle once
 * both are merged into site 0 (found by test_random_graphs, F28). Returns the
 * number of sites left. */
static int merge_sites(fz *f, fz_site *sites, int ns) {
  for (int i = 0; i < ns; i++)
    for (int j = i + 1; j < ns; j++)
      if (!siblings(f, sites[i].group, sites[j].group)) return ns;
  for (int j = 1; j < ns; j++) {
    fz_merge(f, sites[0].group, sites[j].group);
    sites[0].role |= sites[j].role;
  }
  return 1;
}

/* A transpose that an NHWC im2col reads, with whole 16-byte chunks of channels (an
 * NCHW tensor entering the layout pass's NHWC convs, after a pool or at the input):
 * materialized by one coalesced copy, the conv's operand loads are a cp.async per
 * chunk (emit_mma.c) instead of strided elements on every K tile. */
static int feeds_nhwc_im2col(fz *f, const gc_op *P) {
  if (P->opcode != GC_OP_TRANSPOSE) return 0;
  const gc_type *t = &P->results[0]->type;
  size_t es = graphc_dtype_size(t->dtype);
  if (t->rank != 4 || !es || t->dims[3] % (int64_t)(16 / es)) return 0;
  for (int x = f->use_head[P->results[0]->id]; x >= 0; x = f->uses[x].next) {
    const gc_op *u = f->op[f->uses[x].op];
    const gc_attr *la = u->opcode == GC_OP_IM2COL ? gc_op_attr(u, "layout") : NULL;
    if (la && la->kind == GC_ATTR_STR && strcmp(la->u.s, "nhwc") == 0) return 1;
  }
  return 0;
}

/* Decide producer P: fuse into its users' groups, extra output, or a root. */
static void decide(fz *f, const gc_op *P) {
  fz_site sites[16];
  int ns = 0, nuse = 0, out = 0, ok = f->fuse && is_loop_op(P) && !feeds_nhwc_im2col(f, P);
  for (int r = 0; r < P->n_results; r++) {
    const gc_value *v = P->results[r];
    out |= f->is_out[v->id];
    for (int x = f->use_head[v->id]; x >= 0; x = f->uses[x].next) {
      int w = f->uses[x].op;
      nuse++;
      if (f->memb_head[w] < 0) ok = 0;
      for (int m = f->memb_head[w]; m >= 0; m = f->memb[m].next) {
        int gi = f->memb[m].group;
        int role = operand_role(f, f->grps[gi].kind, f->memb[m].role);
        int j = 0;
        while (j < ns && sites[j].group != gi) j++;
        if (j == ns) {
          if (ns == 16) {
            ok = 0;
            continue;
          }
          sites[ns++] = (fz_site){gi, role};
        } else {
          /* both roles must hold; a site with no role (conv operand) stays 0 */
          sites[j].role = (sites[j].role && role) ? (sites[j].role | role) : 0;
        }
      }
    }
  }
  for (int j = 0; j < ns; j++) ok &= site_accepts(P, sites[j].role);
  if (ok && !out && ns > 1 && op_cost(P) * (ns - 1) > DUP_BUDGET) ns = merge_sites(f, sites, ns);
  if (ok && !out && nuse > 0 && (ns == 1 || op_cost(P) * (ns - 1) <= DUP_BUDGET)) {
    for (int j = 0; j < ns; j++) fz_add(f, sites[j].group, P->id, sites[j].role);
    return;
  }
  if (ok && out && ns == 1 && (sites[0].role & GC_FROLE_ELEM) && extra_output_ok(f, P, sites[0].group)) {
    fz_add(f, sites[0].group, P->id, GC_FROLE_ELEM | GC_FROLE_WRITE);
    return;
  }
  int gi = fz_new_group(f, root_kind(P));
  if (gi >= 0) fz_add(f, gi, P->id, GC_FROLE_ROOT | GC_FROLE_WRITE);
}

/* ---- phase 3: siblings -------------------------------------------------------------------------- */

/* Root op of a live group (its first root member). */
static const gc_op *first_root(const fz *f, int gi) {
  const fz_grp *gr = &f->grps[gi];
  const gc_op *best = NULL;
  for (int i = 0; i < gr->n_ops; i++)
    if ((fz_role(f, gi, gr->ops[i]) & GC_FROLE_ROOT) && (!best || f->pos[gr->ops[i]] < f->pos[best->id]))
      best = f->op[gr->ops[i]];
  return best;
}

/* Reduced-axes bit mask of a reduce op over its input rank. */
static unsigned reduce_mask(const gc_op *op) {
  int rank = op->operands[0]->type.rank;
  const gc_attr *a = gc_op_attr(op, "axes");
  int64_t axes[GC_MAX_RANK];
  int n = a ? gc_attr_ints(a, axes, GC_MAX_RANK) : -1;
  if (n < 0) return (1u << rank) - 1;
  unsigned m = 0;
  for (int i = 0; i < n; i++) m |= 1u << (axes[i] < 0 ? axes[i] + rank : axes[i]);
  return m;
}

/* Roots of group gi. */
static int n_roots(const fz *f, int gi) {
  int n = 0;
  for (int i = 0; i < f->grps[gi].n_ops; i++) n += (fz_role(f, gi, f->grps[gi].ops[i]) & GC_FROLE_ROOT) != 0;
  return n;
}

/* Can groups a and b (a earlier) become one multi-output kernel? Reductions up to
 * GC_FUSION_MAX_ROOTS roots (--precision fp8 scales every weight of a model by a row max:
 * dozens of siblings reading one constant). */
static int siblings(fz *f, int a, int b) {
  const fz_grp *ga = &f->grps[a], *gb = &f->grps[b];
  if (!ga->alive || !gb->alive || ga->kind != gb->kind) return 0;
  if (ga->kind == GC_FUSION_REDUCE && n_roots(f, a) + n_roots(f, b) > GC_FUSION_MAX_ROOTS) return 0;
  const gc_op *ra = first_root(f, a), *rb = first_root(f, b);
  if (!ra || !rb) return 0;
  if (ga->kind == GC_FUSION_LOOP) {
    if (!gc_type_same_dims(&ra->results[0]->type, &rb->results[0]->type)) return 0;
  } else if (ga->kind == GC_FUSION_REDUCE) {
    if (ra->opcode == GC_OP_ARGMAX || rb->opcode == GC_OP_ARGMAX) return 0;
    if (!gc_type_same_dims(&ra->operands[0]->type, &rb->operands[0]->type) ||
        !gc_type_same_dims(&ra->results[0]->type, &rb->results[0]->type) || reduce_mask(ra) != reduce_mask(rb))
      return 0;
  } else {
    return 0;
  }
  return !fz_reaches(f, a, b, -1) && !fz_reaches(f, b, a, -1);
}

/* Merge sibling groups reading a common value: for each value (id order), the
 * groups reading it from memory (the first MAX_READERS), in creation order,
 * fold into the first compatible earlier one. */
static void merge_siblings(fz *f) {
  int cap = 16, *rd = malloc((size_t)cap * sizeof *rd);
  if (!rd) {
    f->oom = 1;
    return;
  }
  for (int vi = 0; vi < f->n_val_ids && !f->oom; vi++) {
    const gc_value *v = f->val[vi];
    if (!v) continue;
    int n = 0;
    for (int x = f->use_head[vi]; x >= 0; x = f->uses[x].next)
      for (int m = f->memb_head[f->uses[x].op]; m >= 0; m = f->memb[m].next) {
        int gi = f->memb[m].group, seen = 0;
        if (v->def && fz_role(f, gi, v->def->id)) continue;  /* computed inline, not read */
        for (int j = 0; j < n; j++) seen |= rd[j] == gi;
        if (seen || n == MAX_READERS) continue;
        if (n == cap) {
          int *nr = realloc(rd, (size_t)(cap *= 2) * sizeof *nr);
          if (!nr) {
            f->oom = 1;
            free(rd);
            return;
          }
          rd = nr;
        }
        int j = n++;
        while (j > 0 && rd[j - 1] > gi) {  /* creation order */
          rd[j] = rd[j - 1];
          j--;
        }
        rd[j] = gi;
      }
    for (int i = 1; i < n && !f->oom; i++)
      for (int j = 0; j < i; j++)
        if (f->grps[rd[j]].alive && siblings(f, rd[j], rd[i])) {
          fz_merge(f, rd[j], rd[i]);
          break;
        }
  }
  free(rd);
}

/* ---- indexing the graph ----------------------------------------------------------------------- */

/* Op table, positions, uses and outputs. Returns 0, -1 on OOM. */
static int fz_index(fz *f) {
  const gc_graph *g = f->g;
  f->n_op_ids = g->next_op_id + 1;
  f->n_val_ids = g->next_value_id + 1;
  int n_uses = 0;
  for (const gc_op *op = g->first; op; op = op->next) n_uses += op->n_operands;
  f->op = calloc((size_t)f->n_op_ids, sizeof *f->op);
  f->pos = calloc((size_t)f->n_op_ids, sizeof *f->pos);
  f->memb_head = malloc((size_t)f->n_op_ids * sizeof *f->memb_head);
  f->ostamp = calloc((size_t)f->n_op_ids, sizeof *f->ostamp);
  f->use_head = malloc((size_t)f->n_val_ids * sizeof *f->use_head);
  f->uses = malloc(((size_t)n_uses + 1) * sizeof *f->uses);
  f->is_out = calloc((size_t)f->n_val_ids, 1);
  f->val = calloc((size_t)f->n_val_ids, sizeof *f->val);
  if (!f->val || !f->op || !f->pos || !f->memb_head || !f->ostamp || !f->use_head || !f->uses || !f->is_out)
    return -1;
  for (int i = 0; i < f->n_op_ids; i++) f->memb_head[i] = -1;
  for (int i = 0; i < f->n_val_ids; i++) f->use_head[i] = -1;
  int p = 0;
  for (const gc_op *op = g->first; op; op = op->next) {
    GC_ASSERT(op->id >= 0 && op->id < f->n_op_ids);
    f->op[op->id] = op;
    f->pos[op->id] = p++;
    for (int i = 0; i < op->n_results; i++) f->val[op->results[i]->id] = op->results[i];
  }
  for (int i = 0; i < g->n_args; i++) f->val[g->args[i]->id] = g->args[i];
  /* uses in reverse so each list ends up in program order */
  for (const gc_op *op = g->last; op; op = op->prev)
    for (int i = op->n_operands - 1; i >= 0; i--) {
      int vid = op->operands[i]->id;
      f->uses[f->n_uses] = (fz_use){op->id, i, f->use_head[vid]};
      f->use_head[vid] = f->n_uses++;
    }
  for (int i = 0; i < g->n_outputs; i++) f->is_out[g->outputs[i]->id] = 1;
  return 0;
}

/* ---- finishing: outputs, views, order ------------------------------------------------------------ */

/* Is value v (result of a grouped op) read from memory or returned? */
static int needs_buffer(const fz *f, const gc_value *v) {
  if (f->is_out[v->id]) return 1;
  for (int x = f->use_head[v->id]; x >= 0; x = f->uses[x].next) {
    int w = f->uses[x].op;
    for (int m = f->memb_head[w]; m >= 0; m = f->memb[m].next)
      if (!fz_role(f, f->memb[m].group, v->def->id)) return 1;
  }
  return 0;
}

/* Launch order: Kahn's algorithm over memory edges, smallest first-root position first. */
static int *schedule(fz *f, int *n_live) {
  int n = 0;
  for (int gi = 0; gi < f->n_grps; gi++) n += f->grps[gi].alive;
  int *order = malloc(((size_t)n + 1) * sizeof *order);
  int *indeg = calloc((size_t)f->n_grps + 1, sizeof *indeg);
  int *key = calloc((size_t)f->n_grps + 1, sizeof *key);
  int *done = calloc((size_t)f->n_grps + 1, sizeof *done);
  if (!order || !indeg || !key || !done) {
    free(order);
    free(indeg);
    free(key);
    free(done);
    f->oom = 1;
    return NULL;
  }
  /* in-degrees: distinct memory-edge predecessors */
  for (int gi = 0; gi < f->n_grps; gi++) {
    if (!f->grps[gi].alive) continue;
    key[gi] = f->pos[first_root(f, gi)->id];
    f->stamp++;
    int sn = 0;
    fz_grp *gr = &f->grps[gi];
    for (int i = 0; i < gr->n_ops; i++) fz_succ(f, &sn, gi, gr->ops[i]);
    for (int i = 0; i < sn; i++) {
      GC_ASSERT(f->stack[i] >= 0);  /* after phase 2 every op is grouped */
      indeg[f->stack[i]]++;
    }
  }
  int k = 0;
  while (k < n && !f->oom) {
    int best = -1;
    for (int gi = 0; gi < f->n_grps; gi++)
      if (f->grps[gi].alive && !done[gi] && indeg[gi] == 0 && (best < 0 || key[gi] < key[best])) best = gi;
    GC_ASSERT(best >= 0);  /* a cycle between groups is a fusion bug */
    done[best] = 1;
    order[k++] = best;
    f->stamp++;
    int sn = 0;
    fz_grp *gr = &f->grps[best];
    for (int i = 0; i < gr->n_ops; i++) fz_succ(f, &sn, best, gr->ops[i]);
    for (int i = 0; i < sn; i++) indeg[f->stack[i]]--;
  }
  free(indeg);
  free(key);
  free(done);
  *n_live = n;
  return order;
}

/* Sort op ids by program position (insertion sort: groups are small). */
static void sort_by_pos(const fz *f, int *ids, int n) {
  for (int i = 1; i < n; i++) {
    int x = ids[i], j = i;
    while (j > 0 && f->pos[ids[j - 1]] > f->pos[x]) {
      ids[j] = ids[j - 1];
      j--;
    }
    ids[j] = x;
  }
}

/* Copy the live groups, in launch order, into the result. */
static gc_fusion *fz_result(fz *f) {
  gc_fusion *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  gc_arena_init(&r->arena);
  r->fused = f->fuse;
  int n = 0;
  int *order = schedule(f, &n);
  r->n_op_ids = f->n_op_ids;
  r->n_value_ids = f->n_val_ids;
  r->home = gc_arena_alloc(&r->arena, (size_t)f->n_op_ids * sizeof *r->home);
  r->n_homes = gc_arena_alloc(&r->arena, (size_t)f->n_op_ids * sizeof *r->n_homes);
  r->materialized = gc_arena_alloc(&r->arena, (size_t)f->n_val_ids);
  r->groups = gc_arena_alloc(&r->arena, ((size_t)n + 1) * sizeof *r->groups);
  if (!order || !r->home || !r->n_homes || !r->materialized || !r->groups) {
    free(order);
    gc_fusion_free(r);
    return NULL;
  }
  for (int i = 0; i < f->n_op_ids; i++) r->home[i] = -1;
  const gc_graph *g = f->g;
  for (int i = 0; i < g->n_args; i++) r->materialized[g->args[i]->id] = 1;
  for (const gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++)
      r->materialized[op->results[i]->id] =
          gc_fusion_is_buffer_source(op) || (f->memb_head[op->id] >= 0 && needs_buffer(f, op->results[i]));
  r->n_groups = n;
  for (int k = 0; k < n; k++) {
    int gi = order[k];
    fz_grp *src = &f->grps[gi];
    gc_fusion_group *dst = &r->groups[k];
    sort_by_pos(f, src->ops, src->n_ops);
    dst->kind = src->kind;
    dst->causal = src->causal;
    dst->causal_off = src->causal_off;
    dst->resid = src->resid;
    dst->nan_guard = src->nan_guard;
    dst->n_ops = src->n_ops;
    dst->ops = gc_arena_alloc(&r->arena, (size_t)src->n_ops * sizeof *dst->ops);
    dst->roles = gc_arena_alloc(&r->arena, (size_t)src->n_ops * sizeof *dst->roles);
    dst->roots = gc_arena_alloc(&r->arena, (size_t)src->n_ops * sizeof *dst->roots);
    int n_res = 0;
    for (int i = 0; i < src->n_ops; i++) n_res += f->op[src->ops[i]]->n_results;
    dst->outs = gc_arena_alloc(&r->arena, ((size_t)n_res + 1) * sizeof *dst->outs);
    if (!dst->ops || !dst->roles || !dst->roots || !dst->outs) {
      free(order);
      gc_fusion_free(r);
      return NULL;
    }
    for (int i = 0; i < src->n_ops; i++) {
      const gc_op *op = f->op[src->ops[i]];
      int role = fz_role(f, gi, op->id);
      dst->ops[i] = op;
      dst->roles[i] = role;
      if (role & GC_FROLE_ROOT) dst->roots[dst->n_roots++] = op;
      r->n_homes[op->id]++;
      if ((role & GC_FROLE_WRITE) || r->home[op->id] < 0) r->home[op->id] = k;
      for (int j = 0; j < op->n_results; j++) {
        const gc_value *v = op->results[j];
        if (!r->materialized[v->id]) continue;
        GC_ASSERT(role & GC_FROLE_WRITE);  /* a fused producer never needs a buffer */
        dst->outs[dst->n_outs++] = v;
      }
    }
    /* a lone reshape of a buffer is a view: no kernel */
    if (dst->kind == GC_FUSION_LOOP && dst->n_ops == 1 && dst->ops[0]->opcode == GC_OP_RESHAPE)
      dst->kind = GC_FUSION_VIEW;
    const gc_op *r0 = dst->roots[0];
    dst->name = dst->n_ops == 1 ? gc_arena_printf(&r->arena, "%s_%d", gc_op_infos[r0->opcode].name, r0->id)
                : dst->causal   ? gc_arena_printf(&r->arena, "fusion_causal_%d", r0->id)
                                : gc_arena_printf(&r->arena, "fusion_%d", r0->id);
    if (!dst->name) {
      free(order);
      gc_fusion_free(r);
      return NULL;
    }
  }
  free(order);
  if (r->arena.failed) {
    gc_fusion_free(r);
    return NULL;
  }
  return r;
}

/* Release the index. */
static void fz_free(fz *f) {
  for (int i = 0; i < f->n_grps; i++) free(f->grps[i].ops);
  free(f->grps);
  free(f->op);
  free(f->val);
  free(f->pos);
  free(f->use_head);
  free(f->uses);
  free(f->is_out);
  free(f->memb);
  free(f->memb_head);
  free(f->gstamp);
  free(f->ostamp);
  free(f->stack);
}

/* ---- public -------------------------------------------------------------------------------------- */

/* All three phases, then the result (see the file comment). */
gc_fusion *gc_fusion_plan(const gc_graph *g, const kir_target *t, int fuse) {
  fz f;
  memset(&f, 0, sizeof f);
  f.g = g;
  f.fuse = fuse != 0;
  f.host = t && t->kind == KIR_TARGET_HOST;
  gc_fusion *r = NULL;
  if (fz_index(&f) == 0) {
    if (f.fuse && t && t->kind == KIR_TARGET_CUDA && t->attention) plan_attention(&f);
    for (const gc_op *op = g->first; op && !f.oom; op = op->next) {
      if (gc_fusion_is_buffer_source(op) || is_loop_op(op) || f.memb_head[op->id] >= 0) continue;
      int gi = fz_new_group(&f, root_kind(op));
      if (gi < 0) break;
      fz_add(&f, gi, op->id, GC_FROLE_ROOT | GC_FROLE_WRITE);
      if (f.fuse && root_kind(op) != GC_FUSION_STATE_WRITE) grow_epilogue(&f, gi, op);
    }
    for (const gc_op *op = g->last; op && !f.oom; op = op->prev)
      if (!gc_fusion_is_buffer_source(op) && f.memb_head[op->id] < 0) decide(&f, op);
    if (f.fuse && !f.oom) merge_siblings(&f);
    if (!f.oom) r = fz_result(&f);
  }
  fz_free(&f);
  return r;
}

/* Free a fusion result. */
void gc_fusion_free(gc_fusion *f) {
  if (!f) return;
  gc_arena_free(&f->arena);
  free(f);
}

/* Role bits of op in group gi. */
int gc_fusion_role(const gc_fusion *f, int gi, const gc_op *op) {
  const gc_fusion_group *gr = &f->groups[gi];
  for (int i = 0; i < gr->n_ops; i++)
    if (gr->ops[i] == op) return gr->roles[i];
  return 0;
}

/* Group per op id for `graphc dot` (views and const sources: -1). */
int gc_fusion_groups(const gc_graph *g, const kir_target *t, int *group_of_op_id) {
  gc_fusion *f = gc_fusion_plan(g, t, 1);
  if (!f) return -1;
  int n = 0;
  int *kernel = malloc(((size_t)f->n_groups + 1) * sizeof *kernel);
  if (!kernel) {
    gc_fusion_free(f);
    return -1;
  }
  for (int k = 0; k < f->n_groups; k++) kernel[k] = f->groups[k].kind == GC_FUSION_VIEW ? -1 : n++;
  for (int i = 0; i < g->next_op_id; i++)
    group_of_op_id[i] = i < f->n_op_ids && f->home[i] >= 0 ? kernel[f->home[i]] : -1;
  free(kernel);
  gc_fusion_free(f);
  return n;
}

/* Kind names for listings. */
const char *gc_fusion_kind_name(gc_fusion_kind k) {
  static const char *const names[] = {"view", "loop",  "reduce",    "norm",       "matmul",
                                      "conv", "pool",  "split",     "attention",  "state_write"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* One line per group (see fusion.h). */
void gc_fusion_print(gc_sbuf *b, const gc_graph *g, const gc_fusion *f) {
  (void)g;
  for (int k = 0; k < f->n_groups; k++) {
    const gc_fusion_group *gr = &f->groups[k];
    gc_sbuf_printf(b, "%3d %-6s %s:", k, gc_fusion_kind_name(gr->kind), gr->name);
    if (gr->causal && !gr->resid.v) gc_sbuf_printf(b, " [causal, offset %lld]", (long long)gr->causal_off);
    if (gr->causal && gr->resid.v && gr->resid.sel)
      gc_sbuf_printf(b, " [causal, offset %lld, residual select(%%%s, %g, %g)]", (long long)gr->causal_off,
                     gr->resid.v->name, gr->resid.t, gr->resid.f);
    if (gr->causal && gr->resid.v && !gr->resid.sel)
      gc_sbuf_printf(b, " [causal, offset %lld, residual %%%s]", (long long)gr->causal_off, gr->resid.v->name);
    for (int i = 0; i < gr->n_ops; i++) {
      const gc_op *op = gr->ops[i];
      gc_sbuf_printf(b, "%s %s %%%s", i ? "," : "", gc_op_infos[op->opcode].name, op->results[0]->name);
      if (f->n_homes[op->id] > 1) gc_sbuf_putc(b, '*');
      if (gr->roles[i] & GC_FROLE_VIEW) gc_sbuf_putc(b, '^');
    }
    gc_sbuf_puts(b, " ->");
    for (int i = 0; i < gr->n_outs; i++) gc_sbuf_printf(b, " %%%s", gr->outs[i]->name);
    gc_sbuf_putc(b, '\n');
  }
}
