/* random_graph_gen.h - the random graph generator of the differential test
 * (tests/test_random_graphs.c): random valid graphs from ir/ops.def, printed as
 * .graph text. Deterministic from a seed. See random_graph_gen.c.
 */
#ifndef GC_RANDOM_GRAPH_GEN_H
#define GC_RANDOM_GRAPH_GEN_H

#include <stdint.h>

#include "ir/ir.h"

#define RG_MAX_VALS 768
#define RG_MAX_OPS 96
#define RG_MAX_IN 4
#define RG_MAX_OUT 6
#define RG_MAX_NUMEL 2048
/* Attention chains (random_graph_gen.c, build_attention) go past RG_MAX_NUMEL up to
 * this many elements per value (query and key counts up to 130, head dims up to
 * 64); such values are never picked as operands of other ops. */
#define RG_MAX_ATTN_NUMEL 16384

/* ---- random numbers (splitmix64) ------------------------------------------------------- */
typedef struct rng {
  uint64_t s;
} rng;

/* Next 64 random bits. */
static inline uint64_t rnext(rng *r) {
  uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Mix a seed with a stream id (independent streams per value). */
static inline uint64_t rmix(uint64_t a, uint64_t b) {
  rng r = {a ^ (b * UINT64_C(0xd1b54a32d192ed03))};
  return rnext(&r);
}

/* Uniform integer in [lo, hi]. */
static inline int64_t rint_in(rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnext(r) % (uint64_t)(hi - lo + 1));
}

/* Uniform double in [0, 1). */
static inline double runit(rng *r) { return (double)(rnext(r) >> 11) * 0x1p-53; }

/* True with probability pct/100. */
static inline int rchance(rng *r, int pct) { return (int)(rnext(r) % 100) < pct; }

/* ---- the graph being built ------------------------------------------------------------------ */
typedef struct rg_val {
  int id;                /* printed as %v<id> */
  gc_type t;
  int exact;             /* bit-identical on every correct backend */
  int is_arg;            /* graph argument (else an op result) */
  char kind;             /* args: 'n' normal, 'p' positive, 'i' index in [-range, range) */
  int64_t range;
  double mag;            /* rough bound on |element| */
  double tol;            /* tolerance: the loosest of its dtype and its inexact operands' */
  int cancels;           /* rounding noise around an exact zero (sub(a, a) of an inexact a, where
                            a contracted FMA leaves a's rounding error) or computed from such a
                            value: a norm, which is scale-invariant, would blow the noise up */
  int dead;
  int hidden;            /* never picked as an operand (an attention chain's intermediates
                            stay single-use, so the chain is what fusion sees) */
} rg_val;

typedef struct rg_op {
  gc_opcode opc;
  int n_in, in[RG_MAX_IN];
  int n_out, out[RG_MAX_OUT];
  char attrs[600];       /* "a=1, b=[2, 3]" */
  int dead;
} rg_op;

typedef struct rg_graph {
  uint64_t seed;
  int n_vals;
  rg_val vals[RG_MAX_VALS];
  int n_ops;
  rg_op ops[RG_MAX_OPS];
  int n_outs;
  int outs[RG_MAX_VALS];
  int next_id;
} rg_graph;

/* Element count of a (small, concrete) type. */
static inline int64_t numel_of(const gc_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}


/* Ops per generated graph at most (GRAPHC_RANDOM_GRAPHS_MAX_OPS; default 30). */
extern int g_max_ops;

/* A random graph from seed; `first` forces the first op (-1: none). Returns
 * -1 - opcode when an op of the table has no builder. */
int generate(rg_graph *g, uint64_t seed, int first);
/* Which values are used by live ops (used[v] counts). */
void uses(const rg_graph *g, int *used);
/* The graph as .graph text (malloc'd); result types are written when `typed`. */
char *graph_text(const rg_graph *g, int typed);
/* The same graph with a symbolic dim: every argument and output dim equal to the
 * first live argument's leading dim d (>= 2) is written as S (`graph @random<S>`),
 * op result types are left to inference; binding S = d gives back the graph.
 * NULL when no argument has such a dim. *bound gets d. */
char *graph_text_sym(const rg_graph *g, int64_t *bound);
/* Re-derive every value's type with the library's shape inference (after shrinking
 * changed operands); see the definition. */
int retype(rg_graph *g);
/* Tolerance scale of a dtype (the brief's per-dtype tolerance). */
double dtype_tol(gc_dtype t);

/* Fill argument v's data (numel_of(&v->t) elements) by its kind, deterministic from
 * the graph's seed and v's id. */
void rg_fill_input(const rg_graph *g, const rg_val *v, void *data);
/* Whether `got` matches `ref` (exact for non-floats and `exact` values, else within
 * tol, at least the dtype's, scaled by the largest |ref|); why gets the first mismatch. */
int rg_close(const graphc_tensor_t *ref, const graphc_tensor_t *got, int exact, double tol,
             char *why, size_t n);

#endif /* GC_RANDOM_GRAPH_GEN_H */
