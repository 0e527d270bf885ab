/* emit_reduce.c - reduce groups (reduce_sum/max/min/mean, argmax) and norm
 * groups (softmax, log_softmax, layernorm, rmsnorm), with input fusion: every
 * read of the input goes through the element generator, so fused elementwise
 * producers (reduce_sum(exp(x - c)), layernorm(x + residual)) are computed
 * inline where the row is read; and output fusion: the final value is bound as
 * the root's value at its output index and the group's outputs (the root, its
 * epilogue, sibling reductions over the same input and axes) are stored there.
 *
 * Reductions: the input's dims are grouped into runs of kept and reduced dims
 * (unit dims dropped, neighbours of the same kind merged).
 *   one reduced run, innermost (a row), CUDA: BLOCKS, one group per output;
 *       threads stride over the row, warp shuffles, shared memory across warps.
 *   otherwise: ITEMS over outputs, each looping over the reduced elements
 *       (for [outer, R, inner] consecutive items read consecutive addresses).
 * Normalizations view the input as [outer, R, inner] around the axis:
 *   inner == 1 on CUDA: BLOCKS per row with block reductions;
 *   otherwise ITEMS per (outer, inner) with sequential loops.
 * Sums accumulate in f32 (f64 for f64, i64 for ints).
 */
#include <math.h>

#include "codegen/emit.h"

/* Partial accumulators of a host reduction over a contiguous row (reduce_lanes,
 * row_accumulate_lanes): the most f32 lanes of a SIMD register. */
enum { ROW_HOST_LANES = 16 };

/* Host: the partial accumulators for a contiguous row of R elements, 0 for one. */
static int host_lanes(const gc_lowerer *c, int64_t R) {
  if (c->t->kind != KIR_TARGET_HOST) return 0;
  int lanes = c->t->simd_bytes >= 16 ? c->t->simd_bytes / 4 : 4;
  if (lanes > ROW_HOST_LANES) lanes = ROW_HOST_LANES;
  return R >= 2 * lanes ? lanes : 0;
}

/* ---- reductions ----------------------------------------------------------------------------- */

/* Input dims grouped into kept and reduced runs with their element strides. */
typedef struct red_groups {
  int nk, nr;
  int64_t kdims[GC_MAX_RANK], kst[GC_MAX_RANK];
  int64_t rdims[GC_MAX_RANK], rst[GC_MAX_RANK];
  int row;                   /* a single reduced run, innermost: in index = out * R + r */
} red_groups;

/* Group dims by the reduce mask: drop unit dims, merge same-kind neighbours. */
static void group_dims(const gc_type *t, const int *red, red_groups *g) {
  int64_t size[GC_MAX_RANK], st[GC_MAX_RANK];
  int kind[GC_MAX_RANK], n = 0;
  int64_t stride = gc_type_numel(t);
  for (int i = 0; i < t->rank; i++) {
    stride /= t->dims[i];
    if (t->dims[i] == 1) continue;
    if (n > 0 && kind[n - 1] == red[i]) {
      size[n - 1] *= t->dims[i];
      st[n - 1] = stride;
      continue;
    }
    size[n] = t->dims[i];
    st[n] = stride;
    kind[n] = red[i];
    n++;
  }
  g->nk = g->nr = 0;
  for (int i = 0; i < n; i++) {
    if (kind[i]) {
      g->rdims[g->nr] = size[i];
      g->rst[g->nr++] = st[i];
    } else {
      g->kdims[g->nk] = size[i];
      g->kst[g->nk++] = st[i];
    }
  }
  g->row = g->nr == 1 && kind[n - 1];
}

/* Reduced-axis mask from `axes` (default: all). */
static void reduce_mask(const gc_op *op, int rank, int *red) {
  const gc_attr *a = gc_op_attr(op, "axes");
  int64_t axes[GC_MAX_RANK];
  int n = a ? gc_attr_ints(a, axes, GC_MAX_RANK) : -1;
  for (int i = 0; i < rank; i++) red[i] = n < 0;
  for (int i = 0; i < n; i++) red[gc_ec_axis(axes[i], rank)] = 1;
}

/* sum x stride over coordinate vars (i64). */
static kir_expr *dot_coords(gc_lowerer *c, kir_kernel *k, int n, const int *coord, const int64_t *st) {
  kir_expr *e = ec_i64(c, 0);
  for (int i = 0; i < n; i++) e = ec_add(c, e, ec_mul(c, ec_v(c, k, coord[i]), ec_i64(c, st[i])));
  return e;
}

/* Final value of a reduction: mean divides by the count. */
static kir_expr *finish(gc_lowerer *c, kir_kernel *k, const gc_op *op, int acc, int64_t count) {
  kir_expr *e = ec_v(c, k, acc);
  if (op->opcode == GC_OP_REDUCE_MEAN)
    e = ec_bin(c, KIR_DIV, e, gc_ec_num(c, e->type, (double)count));
  return e;
}

#define MAX_SIBLINGS GC_FUSION_MAX_ROOTS

/* Bind the final value of each root at output `lin` (var) and store the group's outputs. */
static void finish_outputs_at(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const int *fin, int lin) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  gc_gen_push(G);
  const gc_type *ot = &grp->roots[0]->results[0]->type;
  int pt = gc_gen_pt(G, ot, lin, NULL);
  for (int r = 0; r < grp->n_roots; r++) {
    const gc_value *rv = grp->roots[r]->results[0];
    int v = gc_ec_let(c, k, b, rv->name, gc_ec_round(c, rv->type.dtype, ec_v(c, k, fin[r])));
    gc_gen_bind(G, rv, pt, v);
  }
  gc_gen_store_outs(G, b, grp, pt);
  gc_gen_pop(G);
}

/* The same at the kernel's item. */
static void finish_outputs(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const int *fin) {
  finish_outputs_at(G, b, grp, fin, G->k->item_var);
}

/* Finish each root's accumulator acc[r] (a reduction over R) and store the outputs at `lin`. */
static void store_reduced(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const int *acc, int64_t R, int lin) {
  int fin[MAX_SIBLINGS];
  GC_ASSERT(grp->n_roots <= MAX_SIBLINGS);
  for (int r = 0; r < grp->n_roots; r++)
    fin[r] = gc_ec_let(G->c, G->k, b, "fin", finish(G->c, G->k, grp->roots[r], acc[r], R));
  finish_outputs_at(G, b, grp, fin, lin);
}

/* Modeled traffic and flops of a reduce kernel (nr roots over `in`), generator released, launched. */
static void close_reduce(gc_gen *G, int nr, const gc_value *in) {
  kir_kernel *k = G->k;
  gc_lowerer *c = G->c;
  k->bytes_moved = gc_gen_bytes(G, -1);
  k->flops = (double)nr * (double)gc_type_numel(&in->type);
  gc_gen_free(G);
  gc_ec_launch(c, k);
}

/* Accumulate every root's input at point pt of the input space (one step). */
static void accumulate(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const gc_ec_comb *comb,
                       const int *acc, const int *x, int pt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  for (int r = 0; r < grp->n_roots; r++) {
    int v = gc_gen_val(G, b, grp->roots[r]->operands[0], pt);
    kir_emit_assign(c->km, b, x[r], ec_cast(c, k->vars[x[r]].type, ec_v(c, k, v)));
    kir_emit_assign(c->km, b, acc[r], gc_ec_combine(c, k, comb[r], acc[r], x[r]));
  }
}


/* ---- vector reads of a computed input --------------------------------------------------------- */

enum { VEC_SRC_MAX = 8 };

/* Buffers a group reads at the linear index of value v on the way to v. */
typedef struct vec_src {
  int n;
  const gc_value *v[VEC_SRC_MAX];
} vec_src;

/* Collect into s the buffers read at v's own linear index on the way to v: v itself
 * when it is read from a buffer, else through the group's elementwise ops of v's
 * dims and reshapes (a fused cast(x) or x + residual). Loading them w at a time and
 * binding the lanes (bind_vec) lets the generator compute w adjacent elements of v
 * from vector loads; other reads (a broadcast operand) stay scalar loads. */
static void collect_sources(gc_lowerer *c, const gc_value *v, vec_src *s) {
  if (ec_reads_buffer(c, v)) {
    if (v->type.dtype == GRAPHC_DTYPE_BOOL) return;
    for (int i = 0; i < s->n; i++)
      if (s->v[i] == v) return;
    if (s->n < VEC_SRC_MAX) s->v[s->n++] = v;
    return;
  }
  const gc_op *d = v->def;
  if (!d || !c->inl[d->id]) return;
  int ew = gc_op_infos[d->opcode].kind == GC_KIND_ELEMENTWISE && d->opcode != GC_OP_GATHER;
  if (!ew && d->opcode != GC_OP_RESHAPE) return;
  for (int o = 0; o < d->n_operands; o++) {
    const gc_value *x = d->operands[o];
    if (ew ? gc_type_same_dims(&x->type, &v->type) : gc_type_numel(&x->type) == gc_type_numel(&v->type))
      collect_sources(c, x, s);
  }
}

/* The sources of v (collect_sources); none when one has elements wider than max_size
 * bytes (its vectors would pass the 16 bytes of v's, or the 4 bytes an item reads).
 * *size: the widest element among them (0 when there are none). */
static vec_src vec_sources(gc_lowerer *c, const gc_value *v, int max_size, int *size) {
  vec_src s = {0};
  collect_sources(c, v, &s);
  *size = 0;
  for (int i = 0; i < s.n; i++) {
    int z = (int)graphc_dtype_size(s.v[i]->type.dtype);
    if (z > *size) *size = z;
  }
  if (*size > max_size) s.n = 0, *size = 0;
  return s;
}

/* Load w elements of each of s's buffers at linear index var lins[0] (a multiple of
 * w) and bind lane e as the buffer's value at lins[e]. */
static void bind_vec(gc_gen *G, kir_block *b, const vec_src *s, int w, const int *lins) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  for (int i = 0; i < s->n; i++) {
    const gc_value *v = s->v[i];
    gc_dtype dt = v->type.dtype;
    int raw[KIR_MAX_VEC];
    for (int e = 0; e < w; e++) raw[e] = gc_ec_var(c, k, "xr", dt);
    kir_emit_load_vec(c->km, b, KIR_GLOBAL, gc_gen_rparam(G, c->val_buf[v->id], dt), ec_v(c, k, lins[0]), w, raw);
    for (int e = 0; e < w; e++) {
      int x = gc_ec_let(c, k, b, v->name, ec_cast(c, gc_ec_compute_type(dt), ec_v(c, k, raw[e])));
      gc_gen_bind(G, v, gc_gen_pt(G, &v->type, lins[e], NULL), x);
    }
  }
}

enum { COL_W = 8, COL_LANES = 128 };

/* The column kernel of lower_reduce: group q reduces outputs q * COL_W + (thread %
 * COL_W); thread / COL_W walks the reduced positions with stride `lanes`: COL_LANES,
 * halved while it leaves a lane fewer than 4 positions (a short R: the second step
 * of a split global pool, R = 98, took 9 us with 128 lanes combined one by one). */
static int lower_reduce_cols(gc_lowerer *c, const gc_fusion_group *grp, const red_groups *g,
                             const gc_ec_comb *comb, const gc_dtype *at, int64_t nout, int64_t R) {
  const gc_value *in = grp->roots[0]->operands[0];
  int nr = grp->n_roots;
  int lanes = COL_LANES;
  while (lanes > 8 && lanes * 4 > R) lanes /= 2;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, (nout + COL_W - 1) / COL_W, COL_W * lanes);
  gc_gen G;
  gc_gen_init(&G, c, k);
  kir_block *b = &k->body;
  int acc[MAX_SIBLINGS], x[MAX_SIBLINGS], sh[MAX_SIBLINGS];
  for (int r = 0; r < nr; r++) {
    acc[r] = gc_ec_let(c, k, b, "acc", gc_ec_identity(c, comb[r], at[r]));
    x[r] = gc_ec_var(c, k, "x", at[r]);
    sh[r] = kir_add_shared(c->km, k, at[r], COL_W * lanes);
  }
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  int col = gc_ec_let(c, k, b, "col", ec_bin(c, KIR_REM, ec_v(c, k, tid), ec_i64(c, COL_W)));
  int lane = gc_ec_let(c, k, b, "lane", ec_bin(c, KIR_DIV, ec_v(c, k, tid), ec_i64(c, COL_W)));
  int o = gc_ec_let(c, k, b, "o", ec_add(c, ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, COL_W)), ec_v(c, k, col)));
  kir_block *ob;
  kir_emit_if(c->km, b, ec_bin(c, KIR_LT, ec_v(c, k, o), ec_i64(c, nout)), &ob, NULL);
  int kc[GC_MAX_RANK], rc[GC_MAX_RANK];
  gc_ec_unravel(c, k, ob, o, g->nk, g->kdims, kc);
  int base = gc_ec_let(c, k, ob, "base", dot_coords(c, k, g->nk, kc, g->kst));
  int rv = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
  kir_block *body = kir_emit_for(c->km, ob, rv, ec_v(c, k, lane), ec_i64(c, R), ec_i64(c, lanes));
  gc_gen_push(&G);
  gc_ec_unravel(c, k, body, rv, g->nr, g->rdims, rc);
  int lin = gc_ec_let(c, k, body, "l", ec_add(c, ec_v(c, k, base), dot_coords(c, k, g->nr, rc, g->rst)));
  accumulate(&G, body, grp, comb, acc, x, gc_gen_pt(&G, &in->type, lin, NULL));
  gc_gen_pop(&G);
  for (int r = 0; r < nr; r++) kir_emit_store(c->km, b, KIR_SHARED, sh[r], ec_v(c, k, tid), ec_v(c, k, acc[r]));
  kir_emit_barrier(c->km, b);
  /* threads 0 .. COL_W-1 combine their column's partials in order */
  kir_block *tb;
  kir_expr *last = ec_bin(c, KIR_AND, ec_bin(c, KIR_LT, ec_v(c, k, tid), ec_i64(c, COL_W)),
                          ec_bin(c, KIR_LT, ec_v(c, k, o), ec_i64(c, nout)));
  kir_emit_if(c->km, b, last, &tb, NULL);
  int j = gc_ec_var(c, k, "j", GRAPHC_DTYPE_I64);
  kir_block *jb = kir_emit_for(c->km, tb, j, ec_i64(c, 1), ec_i64(c, lanes), ec_i64(c, 1));
  for (int r = 0; r < nr; r++) {
    kir_expr *si = ec_add(c, ec_mul(c, ec_v(c, k, j), ec_i64(c, COL_W)), ec_v(c, k, tid));
    kir_emit_assign(c->km, jb, x[r], kir_load(c->km, k, KIR_SHARED, sh[r], si));
    kir_emit_assign(c->km, jb, acc[r], gc_ec_combine(c, k, comb[r], acc[r], x[r]));
  }
  store_reduced(&G, tb, grp, acc, R, o);  /* the output point is o, not the group index */
  close_reduce(&G, nr, in);
  return 0;
}

/* ---- row groups (shared by row reductions and row kernels) ---------------------------------- */

enum { ROW_GROUP_BLOCK = 128 };  /* threads per block of row groups */

/* Lanes per row for a row of nvec vectors: the most, 4 to a warp, that leave each a
 * vector (4 when there are fewer than 4 vectors). */
static int group_lanes(int64_t nvec) {
  int tpr = 32;
  while (tpr > 4 && tpr > nvec) tpr /= 2;
  return tpr;
}

/* A BLOCKS kernel of ROW_GROUP_BLOCK threads over `rows` rows, tpr lanes per row:
 * vars *row (the thread's row, possibly past `rows` in the last block) and *lane. */
static kir_kernel *group_kernel(gc_lowerer *c, int64_t rows, int tpr, int *row, int *lane) {
  int rpb = ROW_GROUP_BLOCK / tpr;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, (rows + rpb - 1) / rpb, ROW_GROUP_BLOCK);
  int tid = gc_ec_let(c, k, &k->body, "tid", ec_thread(c));
  *row = gc_ec_let(c, k, &k->body, "row", ec_add(c, ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, rpb)),
                                                  ec_bin(c, KIR_DIV, ec_v(c, k, tid), ec_i64(c, tpr))));
  *lane = gc_ec_let(c, k, &k->body, "lane", ec_bin(c, KIR_REM, ec_v(c, k, tid), ec_i64(c, tpr)));
  return k;
}

/* Row groups for reductions of rows (CUDA, the reduced run innermost): 4-32 lanes of a
 * warp per row, 128 / lanes rows per block, each lane walking its 16-byte vectors of the
 * row (read 16 bytes at a time when the input is a buffer, element by element in the
 * same order when the group computes it), shuffles to combine. A block per row read
 * 4 bytes per thread per load and paid two barriers per root (H200, 65536 rows of 1024
 * f32: 62% of copy). Returns 0 when it does not apply, 1 when it lowered the group. */
static int lower_reduce_groups(gc_lowerer *c, const gc_fusion_group *grp, const gc_ec_comb *comb,
                               const gc_dtype *at, int64_t nout, int64_t R) {
  const gc_value *in = grp->roots[0]->operands[0];
  gc_dtype dt = in->type.dtype;
  if (!c->t->row_groups || c->t->warp_size != 32 || dt == GRAPHC_DTYPE_BOOL) return 0;
  int w = (int)(16 / graphc_dtype_size(dt));
  if (w < 2 || w > KIR_MAX_VEC || R % w || R / w < 4) return 0;
  int64_t nvec = R / w;
  int tpr = group_lanes(nvec);
  int rpb = ROW_GROUP_BLOCK / tpr, nr = grp->n_roots;
  int z;
  vec_src vs = vec_sources(c, in, (int)graphc_dtype_size(dt), &z);
  int row, lane;
  kir_kernel *k = group_kernel(c, nout, tpr, &row, &lane);
  gc_gen G;
  gc_gen_init(&G, c, k);
  kir_block *b = &k->body;
  int base = gc_ec_let(c, k, b, "base", ec_mul(c, ec_v(c, k, row), ec_i64(c, R)));
  int acc[MAX_SIBLINGS], x[MAX_SIBLINGS];
  for (int r = 0; r < nr; r++) {
    acc[r] = gc_ec_let(c, k, b, "acc", gc_ec_identity(c, comb[r], at[r]));
    x[r] = gc_ec_var(c, k, "x", at[r]);
  }
  kir_block *rb = b;  /* rows past nout (the last block) add nothing; every lane shuffles */
  if (nout % rpb) kir_emit_if(c->km, b, ec_bin(c, KIR_LT, ec_v(c, k, row), ec_i64(c, nout)), &rb, NULL);
  int v = gc_ec_var(c, k, "v", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, rb, v, ec_v(c, k, lane), ec_i64(c, nvec), ec_i64(c, tpr));
  gc_gen_push(&G);
  int l0 = gc_ec_let(c, k, lb, "l", ec_add(c, ec_v(c, k, base), ec_mul(c, ec_v(c, k, v), ec_i64(c, w))));
  int lins[KIR_MAX_VEC], pts[KIR_MAX_VEC];
  for (int e = 0; e < w; e++) lins[e] = e ? gc_ec_let(c, k, lb, "l", ec_add(c, ec_v(c, k, l0), ec_i64(c, e))) : l0;
  bind_vec(&G, lb, &vs, w, lins);
  for (int e = 0; e < w; e++) pts[e] = gc_gen_pt(&G, &in->type, lins[e], NULL);
  for (int e = 0; e < w; e++) accumulate(&G, lb, grp, comb, acc, x, pts[e]);
  gc_gen_pop(&G);
  for (int r = 0; r < nr; r++) gc_ec_group_reduce(c, k, b, comb[r], acc[r], tpr);
  kir_block *tb;
  kir_expr *first = ec_bin(c, KIR_EQ, ec_v(c, k, lane), ec_i64(c, 0));
  if (nout % rpb) first = ec_bin(c, KIR_AND, first, ec_bin(c, KIR_LT, ec_v(c, k, row), ec_i64(c, nout)));
  kir_emit_if(c->km, b, first, &tb, NULL);
  store_reduced(&G, tb, grp, acc, R, row);
  close_reduce(&G, nr, in);
  return 1;
}

/* reduce_sum/max/min/mean roots sharing one input space and reduced axes. */
/* The host kernel of a row reduction (one item per output, the row contiguous): `lanes`
 * partial accumulators per root, one per position of each chunk of the row (straight-line
 * code the SLP vectorizer turns into vector operations, where one accumulator is a serial
 * chain that also keeps a fused exp scalar), a tail into the first, a pairwise combine. */
static void reduce_lanes(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const gc_ec_comb *comb,
                         const gc_dtype *at, int *acc, int *x, int64_t R, int lanes) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_value *in = grp->roots[0]->operands[0];
  int nr = grp->n_roots;
  int la[ROW_HOST_LANES][MAX_SIBLINGS], lx[ROW_HOST_LANES][MAX_SIBLINGS];
  for (int l = 0; l < lanes; l++)
    for (int r = 0; r < nr; r++) {
      la[l][r] = l ? gc_ec_let(c, k, b, "acc", gc_ec_identity(c, comb[r], at[r])) : acc[r];
      lx[l][r] = l ? gc_ec_var(c, k, "x", at[r]) : x[r];
    }
  int base = gc_ec_let(c, k, b, "base", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, R)));
  int64_t full = R / lanes * lanes;
  int r0 = gc_ec_var(c, k, "r0", GRAPHC_DTYPE_I64);
  kir_block *body = kir_emit_for(c->km, b, r0, ec_i64(c, 0), ec_i64(c, full), ec_i64(c, lanes));
  gc_gen_push(G);
  int l0 = gc_ec_let(c, k, body, "l", ec_add(c, ec_v(c, k, base), ec_v(c, k, r0)));
  for (int l = 0; l < lanes; l++) {
    int lin = l ? gc_ec_let(c, k, body, "l", ec_add(c, ec_v(c, k, l0), ec_i64(c, l))) : l0;
    accumulate(G, body, grp, comb, la[l], lx[l], gc_gen_pt(G, &in->type, lin, NULL));
  }
  gc_gen_pop(G);
  if (full < R) {
    int rv = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
    kir_block *tb = kir_emit_for(c->km, b, rv, ec_i64(c, full), ec_i64(c, R), ec_i64(c, 1));
    gc_gen_push(G);
    int lin = gc_ec_let(c, k, tb, "l", ec_add(c, ec_v(c, k, base), ec_v(c, k, rv)));
    accumulate(G, tb, grp, comb, acc, x, gc_gen_pt(G, &in->type, lin, NULL));
    gc_gen_pop(G);
  }
  for (int w = lanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; l++)
      for (int r = 0; r < nr; r++)
        kir_emit_assign(c->km, b, la[l][r], gc_ec_combine(c, k, comb[r], la[l][r], la[l + w][r]));
  store_reduced(G, b, grp, acc, R, k->item_var);
}

static int lower_reduce(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *in = op->operands[0];
  int nr = grp->n_roots;
  GC_ASSERT(nr <= MAX_SIBLINGS);
  int red[GC_MAX_RANK];
  reduce_mask(op, in->type.rank, red);
  red_groups g;
  group_dims(&in->type, red, &g);
  int64_t nout = gc_ec_prod(g.kdims, 0, g.nk), R = gc_ec_prod(g.rdims, 0, g.nr);
  GC_ASSERT(nout == gc_type_numel(&op->results[0]->type));
  gc_ec_comb comb[MAX_SIBLINGS];
  gc_dtype at[MAX_SIBLINGS];
  for (int r = 0; r < nr; r++) {
    const gc_op *ro = grp->roots[r];
    comb[r] = ro->opcode == GC_OP_REDUCE_MAX ? GC_EC_MAX : ro->opcode == GC_OP_REDUCE_MIN ? GC_EC_MIN : GC_EC_SUM;
    gc_dtype ct = gc_ec_compute_type(ro->operands[0]->type.dtype);
    at[r] = comb[r] == GC_EC_SUM && !gc_dtype_is_float(ct) ? GRAPHC_DTYPE_I64 : ct;
  }
  int blocks = c->t->kind == KIR_TARGET_CUDA && g.row;
  /* Column kernel (CUDA): the innermost kept run is contiguous, R is long and there
   * are too few outputs to fill the GPU with one thread each: groups of COL_W
   * adjacent outputs x COL_LANES threads striding over R (a warp reads 4 full
   * 32-byte sectors per step), partials combined through shared memory. */
  int cols = c->t->kind == KIR_TARGET_CUDA && !g.row && g.nk > 0 && g.kst[g.nk - 1] == 1 && R >= 64 &&
             nout < (int64_t)c->t->num_sms * 1024 && nr * COL_W * COL_LANES * 8 <= c->t->shared_bytes;
  if (cols) return lower_reduce_cols(c, grp, &g, comb, at, nout, R);
  if (blocks && lower_reduce_groups(c, grp, comb, at, nout, R)) return 0;
  /* ITEMS on CUDA with the innermost kept run contiguous: the V outputs of an item read
   * adjacent elements; V = 4 bytes / the element of the input's sources, so a 16-bit input
   * is read 4 bytes per thread and step (H200, the first step of a split f16 column sum: 67% -> 85% of copy) */
  vec_src vs = {0};
  int V = 1;
  if (!blocks && c->t->kind == KIR_TARGET_CUDA && g.nk > 0 && g.kst[g.nk - 1] == 1) {
    int z;
    vs = vec_sources(c, in, 2, &z);
    if (z > 0) V = 4 / z;
    while (V > 1 && g.kdims[g.nk - 1] % V) V /= 2;
  }
  kir_kernel *k = blocks ? gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, nout, gc_ec_row_block(c, R))
                         : gc_ec_kernel(c, KIR_LAUNCH_ITEMS, nout / V, 256);
  gc_gen G;
  gc_gen_init(&G, c, k);
  kir_block *b = &k->body;
  int acc[MAX_SIBLINGS * 4], x[MAX_SIBLINGS];
  for (int r = 0; r < nr; r++) {
    acc[r] = gc_ec_let(c, k, b, "acc", gc_ec_identity(c, comb[r], at[r]));
    x[r] = gc_ec_var(c, k, "x", at[r]);
  }
  if (blocks) {
    int base = gc_ec_let(c, k, b, "base", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, R)));
    int rv;
    kir_block *body = gc_ec_thread_loop(c, k, b, &rv, R);
    gc_gen_push(&G);
    int lin = gc_ec_let(c, k, body, "l", ec_add(c, ec_v(c, k, base), ec_v(c, k, rv)));
    accumulate(&G, body, grp, comb, acc, x, gc_gen_pt(&G, &in->type, lin, NULL));
    gc_gen_pop(&G);
    for (int r = 0; r < nr; r++) {
      int sh = kir_add_shared(c->km, k, at[r], k->launch.block / c->t->warp_size);
      gc_ec_block_reduce(c, k, b, comb[r], acc[r], sh);
    }
    kir_block *tb;
    kir_emit_if(c->km, b, ec_bin(c, KIR_EQ, kir_special_ref(c->km, KIR_SP_THREAD), ec_i32(c, 0)), &tb, NULL);
    store_reduced(&G, tb, grp, acc, R, k->item_var);
  } else if (g.row && host_lanes(c, R)) {
    reduce_lanes(&G, b, grp, comb, at, acc, x, R, host_lanes(c, R));
  } else {
    /* V adjacent outputs per item (V > 1: their inputs read V at a time) */
    int o0 = V > 1 ? gc_ec_let(c, k, b, "o", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, V))) : k->item_var;
    int kc[GC_MAX_RANK], rc[GC_MAX_RANK];
    gc_ec_unravel(c, k, b, o0, g.nk, g.kdims, kc);
    int base = gc_ec_let(c, k, b, "base", dot_coords(c, k, g.nk, kc, g.kst));
    for (int i = nr; i < V * nr; i++)
      acc[i] = gc_ec_let(c, k, b, "acc", gc_ec_identity(c, comb[i % nr], at[i % nr]));
    int rv = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
    kir_block *body = kir_emit_for(c->km, b, rv, ec_i64(c, 0), ec_i64(c, R), ec_i64(c, 1));
    gc_gen_push(&G);
    gc_ec_unravel(c, k, body, rv, g.nr, g.rdims, rc);
    int lins[KIR_MAX_VEC];
    lins[0] = gc_ec_let(c, k, body, "l", ec_add(c, ec_v(c, k, base), dot_coords(c, k, g.nr, rc, g.rst)));
    for (int e = 1; e < V; e++) lins[e] = gc_ec_let(c, k, body, "l", ec_add(c, ec_v(c, k, lins[0]), ec_i64(c, e)));
    if (V > 1) bind_vec(&G, body, &vs, V, lins);
    for (int e = 0; e < V; e++) accumulate(&G, body, grp, comb, acc + e * nr, x, gc_gen_pt(&G, &in->type, lins[e], NULL));
    gc_gen_pop(&G);
    for (int e = 0; e < V; e++)
      store_reduced(&G, b, grp, acc + e * nr, R,
                    e ? gc_ec_let(c, k, b, "o", ec_add(c, ec_v(c, k, o0), ec_i64(c, e))) : o0);
  }
  close_reduce(&G, nr, in);
  return 0;
}

/* ---- argmax ------------------------------------------------------------------------------------ */

/* (av, ai) := the better of (av, ai) and (bv, bi): larger wins, NaN beats
 * numbers, ties (and NaN vs NaN) go to the lower index -- the first maximum. */
static void argmax_step(gc_lowerer *c, kir_kernel *k, kir_block *b, int av, int ai, int bv, int bi) {
  kir_expr *better = ec_bin(c, KIR_GT, ec_v(c, k, bv), ec_v(c, k, av));
  kir_expr *same = ec_bin(c, KIR_EQ, ec_v(c, k, bv), ec_v(c, k, av));
  if (gc_dtype_is_float(k->vars[av].type)) {
    kir_expr *bn = ec_bin(c, KIR_NE, ec_v(c, k, bv), ec_v(c, k, bv));
    kir_expr *an = ec_bin(c, KIR_EQ, ec_v(c, k, av), ec_v(c, k, av));
    better = ec_bin(c, KIR_OR, better, ec_bin(c, KIR_AND, bn, an));
    kir_expr *bn2 = ec_bin(c, KIR_NE, ec_v(c, k, bv), ec_v(c, k, bv));
    kir_expr *an2 = ec_bin(c, KIR_NE, ec_v(c, k, av), ec_v(c, k, av));
    same = ec_bin(c, KIR_OR, same, ec_bin(c, KIR_AND, bn2, an2));
  }
  kir_expr *tie = ec_bin(c, KIR_AND, same, ec_bin(c, KIR_LT, ec_v(c, k, bi), ec_v(c, k, ai)));
  int take = gc_ec_let(c, k, b, "take", ec_bin(c, KIR_OR, better, tie));
  kir_emit_assign(c->km, b, av, kir_select(c->km, ec_v(c, k, take), ec_v(c, k, bv), ec_v(c, k, av)));
  kir_emit_assign(c->km, b, ai, kir_select(c->km, ec_v(c, k, take), ec_v(c, k, bi), ec_v(c, k, ai)));
}

/* Block-wide argmax of (bv, bi): shuffles, then per-warp slots in two shared arrays. */
static void argmax_block(gc_lowerer *c, kir_kernel *k, kir_block *b, int bv, int bi) {
  int ws = c->t->warp_size, nw = k->launch.block / ws;
  int xv = gc_ec_var(c, k, "ov", k->vars[bv].type), xi = gc_ec_var(c, k, "oi", GRAPHC_DTYPE_I64);
  for (int off = ws / 2; off >= 1; off /= 2) {
    kir_emit_assign(c->km, b, xv, kir_shfl_xor(c->km, ec_v(c, k, bv), off));
    kir_emit_assign(c->km, b, xi, kir_shfl_xor(c->km, ec_v(c, k, bi), off));
    argmax_step(c, k, b, bv, bi, xv, xi);
  }
  if (nw == 1) return;
  int shv = kir_add_shared(c->km, k, k->vars[bv].type, nw);
  int shi = kir_add_shared(c->km, k, GRAPHC_DTYPE_I64, nw);
  kir_block *tb;
  kir_emit_if(c->km, b, ec_bin(c, KIR_EQ, kir_special_ref(c->km, KIR_SP_LANE), ec_i32(c, 0)), &tb, NULL);
  kir_expr *w = kir_cast(c->km, GRAPHC_DTYPE_I64, kir_special_ref(c->km, KIR_SP_WARP));
  kir_emit_store(c->km, tb, KIR_SHARED, shv, w, ec_v(c, k, bv));
  w = kir_cast(c->km, GRAPHC_DTYPE_I64, kir_special_ref(c->km, KIR_SP_WARP));
  kir_emit_store(c->km, tb, KIR_SHARED, shi, w, ec_v(c, k, bi));
  kir_emit_barrier(c->km, b);
  kir_emit_assign(c->km, b, bv, kir_load(c->km, k, KIR_SHARED, shv, ec_i64(c, 0)));
  kir_emit_assign(c->km, b, bi, kir_load(c->km, k, KIR_SHARED, shi, ec_i64(c, 0)));
  for (int i = 1; i < nw; i++) {
    kir_emit_assign(c->km, b, xv, kir_load(c->km, k, KIR_SHARED, shv, ec_i64(c, i)));
    kir_emit_assign(c->km, b, xi, kir_load(c->km, k, KIR_SHARED, shi, ec_i64(c, i)));
    argmax_step(c, k, b, bv, bi, xv, xi);
  }
  kir_emit_barrier(c->km, b);
}

/* Value of the root's input at input element index `lin` (a fresh var), in a new scope
 * the caller closes. */
static int input_at(gc_gen *G, kir_block *b, const gc_value *in, kir_expr *lin) {
  gc_gen_push(G);
  int l = gc_ec_let(G->c, G->k, b, "l", lin);
  return gc_gen_val(G, b, in, gc_gen_pt(G, &in->type, l, NULL));
}

/* argmax over one axis of [outer, R, inner]: i64 index of the first maximum. */
static int lower_argmax(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *in = op->operands[0];
  const gc_type *t = &in->type;
  int axis = t->rank ? gc_ec_axis(gc_op_attr_int(op, "axis", -1), t->rank) : 0;
  int64_t outer = t->rank ? gc_ec_prod(t->dims, 0, axis) : 1, R = t->rank ? t->dims[axis] : 1;
  int64_t inner = t->rank ? gc_ec_prod(t->dims, axis + 1, t->rank) : 1;
  gc_dtype ct = gc_ec_compute_type(t->dtype);
  int blocks = c->t->kind == KIR_TARGET_CUDA && inner == 1 && R > 1;
  kir_kernel *k = blocks ? gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, outer, gc_ec_row_block(c, R))
                         : gc_ec_kernel(c, KIR_LAUNCH_ITEMS, outer * inner, 256);
  gc_gen G;
  gc_gen_init(&G, c, k);
  kir_block *b = &k->body;
  int xv = gc_ec_var(c, k, "xv", ct), xi = gc_ec_var(c, k, "xi", GRAPHC_DTYPE_I64);
  int bi;
  if (blocks) {
    int bv = gc_ec_let(c, k, b, "bv", gc_ec_identity(c, GC_EC_MAX, ct));
    bi = gc_ec_let(c, k, b, "bi", ec_i64(c, INT64_MAX));
    int base = gc_ec_let(c, k, b, "base", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, R)));
    int r;
    kir_block *body = gc_ec_thread_loop(c, k, b, &r, R);
    int x = input_at(&G, body, in, ec_add(c, ec_v(c, k, base), ec_v(c, k, r)));
    kir_emit_assign(c->km, body, xv, ec_v(c, k, x));
    gc_gen_pop(&G);
    kir_emit_assign(c->km, body, xi, ec_v(c, k, r));
    argmax_step(c, k, body, bv, bi, xv, xi);
    argmax_block(c, k, b, bv, bi);
    kir_block *tb;
    kir_emit_if(c->km, b, ec_bin(c, KIR_EQ, kir_special_ref(c->km, KIR_SP_THREAD), ec_i32(c, 0)), &tb, NULL);
    finish_outputs(&G, tb, grp, &bi);
  } else {
    int64_t dims2[2] = {outer, inner};
    int co[2];
    gc_ec_unravel(c, k, b, k->item_var, 2, dims2, co);
    kir_expr *base_e = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, R * inner)), ec_v(c, k, co[1]));
    int base = gc_ec_let(c, k, b, "base", base_e);
    int x0 = input_at(&G, b, in, ec_v(c, k, base));
    int bv = gc_ec_let(c, k, b, "bv", ec_v(c, k, x0));
    gc_gen_pop(&G);
    bi = gc_ec_let(c, k, b, "bi", ec_i64(c, 0));
    int r = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
    kir_block *body = kir_emit_for(c->km, b, r, ec_i64(c, 1), ec_i64(c, R), ec_i64(c, 1));
    int x = input_at(&G, body, in, ec_add(c, ec_v(c, k, base), ec_mul(c, ec_v(c, k, r), ec_i64(c, inner))));
    kir_emit_assign(c->km, body, xv, ec_v(c, k, x));
    gc_gen_pop(&G);
    kir_emit_assign(c->km, body, xi, ec_v(c, k, r));
    argmax_step(c, k, body, bv, bi, xv, xi);
    finish_outputs(&G, b, grp, &bi);
  }
  k->bytes_moved = gc_gen_bytes(&G, -1);
  k->flops = (double)gc_type_numel(t);
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}

/* reduce_* and argmax groups. */
int gc_emit_reduce(gc_lowerer *c, const gc_fusion_group *grp) {
  return grp->roots[0]->opcode == GC_OP_ARGMAX ? lower_argmax(c, grp) : lower_reduce(c, grp);
}

/* ---- row-wise normalizations ------------------------------------------------------------------ */

/* A row kernel over [outer, R, inner]: BLOCKS (one group per row, inner == 1)
 * or ITEMS (one item per (outer, inner) pair, looping over the row). A BLOCKS
 * group is a whole block, or (row groups) `tpr` lanes of a warp, with several
 * rows per block: no shared memory, no barriers, reductions by shuffles alone. */
enum { ROW_CACHE_MAX = 32 };  /* row elements a thread may keep in registers */
/* layernorm and rmsnorm on a block per row: up to 64, in blocks of 128-256 threads.
 * H200, rows of 8192 (NVRTC): layernorm f32 65% -> 86% of copy (its 256-thread blocks
 * took 124 registers, two rows per SM), rmsnorm f16/bf16 76% -> 83%, the rest within
 * 2%; softmax lost 6% (its exp makes each thread's chain the limit), so it keeps 32. */
enum { ROW_CACHE_NORM = 64 };
enum { ROW_RED_MAX = 2 };        /* values one block reduction combines at once */

typedef struct row_kernel {
  kir_kernel *k;
  gc_gen G;
  int blocks;
  int64_t R, inner;
  int base;                  /* var: element index of r = 0 */
  int sh[2];                 /* BLOCKS: shared slots for block reductions, used in turn */
  int nred;                  /* block reductions so far */
  int tpr;                   /* BLOCKS: threads per row (the block, or a row group's lanes) */
  int lane;                  /* var: the thread's index among its row's tpr threads */
  int64_t outer;
  int row;                   /* row groups: var, the group's row; -1 in block mode */
  int row_guard;             /* row groups: outer % rows per block != 0 (rows past outer) */
  /* One pass over memory (BLOCKS, R <= block * ROW_CACHE_MAX): each thread loads
   * its nc elements r = thread + j * block once into xc[j]; every later pass reads
   * the registers. guard: R % block != 0, so the last positions may be past R. */
  int nc, guard;
  int rpos[ROW_CACHE_NORM], xc[ROW_CACHE_NORM];
  int cache_max;             /* elements a thread may cache: ROW_CACHE_MAX or ROW_CACHE_NORM */
  /* vec > 1: thread t holds elements (t + j * block) * vec + e, read with vec-wide
   * loads when the row input is a buffer (vload), and outputs are written vec-wide */
  int vec, vload;
  int npend, pend[KIR_MAX_VEC];  /* points bound by row_put, stored by row_flush */
} row_kernel;

/* Elements per 16 bytes of `in` when a thread may take its row elements in such
 * vectors, else 0: each thread must get at least one vector (of `min_threads`), and
 * the row must fit in registers. The layout does not depend on whether `in` is a
 * buffer (read 16 bytes at a time) or computed by the group (element by element),
 * so a fused input adds in the same order as the same input read from memory. */
static int row_vec_width(const gc_value *in, int64_t R, int64_t min_threads) {
  if (in->type.dtype == GRAPHC_DTYPE_BOOL) return 0;
  int w = (int)(16 / graphc_dtype_size(in->type.dtype));
  if (w < 2 || w > KIR_MAX_VEC || R % w || R / w < min_threads || R > 256 * ROW_CACHE_MAX) return 0;
  return w;
}

/* Threads per row of row groups for a row of R elements read `vec` wide (0: a block
 * per row): the most lanes, up to a warp, that leave every lane a vector, when each
 * lane's vectors then fit in ROW_CACHE_MAX registers. Short rows would otherwise
 * leave most of a block idle, and a block per row pays two barriers per reduction
 * (H200, rows of 1024: docs/performance.md). */
static int row_group_lanes(const gc_lowerer *c, int64_t R, int vec) {
  if (!vec || !c->t->row_groups || c->t->warp_size < 32) return 0;
  int64_t nvec = R / vec;
  int tpr = group_lanes(nvec);
  if (tpr > nvec) return 0;
  return (nvec + tpr - 1) / tpr * vec <= ROW_CACHE_MAX ? tpr : 0;
}

/* Create the kernel and compute the row base; `in` is the row input, `cache_max`
 * the elements a thread of a block per row may keep in registers. */
static void row_open(gc_lowerer *c, row_kernel *rk, int64_t outer, int64_t R, int64_t inner,
                     gc_dtype acc_t, const gc_value *in, int cache_max) {
  GC_ASSERT(cache_max == ROW_CACHE_MAX || cache_max == ROW_CACHE_NORM);
  rk->cache_max = ROW_CACHE_MAX;
  rk->R = R;
  rk->inner = inner;
  rk->outer = outer;
  rk->sh[0] = rk->sh[1] = -1;
  rk->nred = 0;
  rk->row = -1;
  rk->row_guard = 0;
  rk->blocks = c->t->kind == KIR_TARGET_CUDA && inner == 1;
  int gv = rk->blocks ? row_vec_width(in, R, 4) : 0;
  rk->tpr = row_group_lanes(c, R, gv);
  rk->vec = rk->tpr ? gv : rk->blocks ? row_vec_width(in, R, 32) : 0;
  rk->vload = rk->vec && ec_reads_buffer(c, in);
  if (rk->tpr) {
    rk->row_guard = outer % (ROW_GROUP_BLOCK / rk->tpr) != 0;
    rk->k = group_kernel(c, outer, rk->tpr, &rk->row, &rk->lane);
    kir_kernel *k = rk->k;
    rk->base = gc_ec_let(c, k, &k->body, "base", ec_mul(c, ec_v(c, k, rk->row), ec_i64(c, R)));
  } else if (rk->blocks) {
    int block = gc_ec_row_block(c, R);
    if (rk->vec) {  /* every thread gets whole vectors: at most R / vec threads, warp multiples */
      int64_t most = R / rk->vec / 32 * 32;
      if (most < block) block = (int)most;
      /* 16-bit rows: two vectors per thread where the row still fits in registers (half the
       * threads per row, twice the rows per SM). H200, rows of 1024 f16: softmax 57% -> 66% of
       * copy, rmsnorm 66% -> 80%, the f16 transformer block's softmax 0.209 -> 0.176 ms; f32
       * rows gained nothing (docs/performance.md). */
      int64_t half = R / rk->vec / 2 / 32 * 32;
      if (graphc_dtype_size(in->type.dtype) <= 2 && half >= 32 && half < block && R <= half * ROW_CACHE_MAX)
        block = (int)half;
      /* norms: the fewest threads, at least 128, that keep at most cache_max each */
      int64_t fit = (R + cache_max - 1) / cache_max;
      fit = (fit + 31) / 32 * 32;
      if (fit < 128) fit = 128;
      if (cache_max > ROW_CACHE_MAX && fit < block) {
        block = (int)fit;
        rk->cache_max = cache_max;
      }
    }
    rk->k = gc_ec_kernel(c, KIR_LAUNCH_BLOCKS, outer, block);
    kir_kernel *k = rk->k;
    rk->tpr = block;
    rk->lane = gc_ec_let(c, k, &k->body, "tid", ec_thread(c));
    for (int i = 0; i < 2; i++)
      rk->sh[i] = kir_add_shared(c->km, k, acc_t, ROW_RED_MAX * (k->launch.block / c->t->warp_size));
    rk->base = gc_ec_let(c, k, &k->body, "base", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, R)));
  } else {
    rk->k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, outer * inner, 256);
    kir_kernel *k = rk->k;
    rk->tpr = 1;
    rk->lane = -1;
    int64_t dims2[2] = {outer, inner};
    int co[2];
    gc_ec_unravel(c, k, &k->body, k->item_var, 2, dims2, co);
    kir_expr *e = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, R * inner)), ec_v(c, k, co[1]));
    rk->base = gc_ec_let(c, k, &k->body, "base", e);
  }
  /* A block per row or row group: no loop over groups (kir.h one_pass; rows of 8192 f16
   * softmax: 64 -> 48 registers, 77% -> 82% of copy on an H200). */
  if (rk->k->launch.kind == KIR_LAUNCH_BLOCKS && rk->k->launch.n <= INT32_MAX) rk->k->one_pass = 1;
  gc_gen_init(&rk->G, c, rk->k);
  rk->nc = 0;
  rk->npend = 0;
}

/* Guard of the thread's cached element j: inside the row and (row groups) a row
 * before `outer`; NULL when every thread's element j is there. */
static kir_expr *row_guard(gc_lowerer *c, row_kernel *rk, int j) {
  kir_kernel *k = rk->k;
  kir_expr *g = NULL;
  if (rk->guard) g = ec_bin(c, KIR_LT, ec_v(c, k, rk->rpos[j]), ec_i64(c, rk->R));
  if (rk->row_guard) {
    kir_expr *in = ec_bin(c, KIR_LT, ec_v(c, k, rk->row), ec_i64(c, rk->outer));
    g = g ? ec_bin(c, KIR_AND, g, in) : in;
  }
  return g;
}

/* row_cache with vec-wide loads: nv vectors per thread. */
static void row_cache_vec(gc_lowerer *c, row_kernel *rk, const gc_value *in, gc_dtype ct, int nv) {
  kir_kernel *k = rk->k;
  kir_block *b = &k->body;
  int w = rk->vec;
  int64_t block = rk->tpr;
  rk->nc = nv * w;
  rk->guard = rk->R % (block * w) != 0;
  int p = rk->vload ? gc_gen_rparam(&rk->G, c->val_buf[in->id], in->type.dtype) : -1;
  int z;
  vec_src vs = {0};
  if (!rk->vload) vs = vec_sources(c, in, (int)graphc_dtype_size(in->type.dtype), &z);
  int tid = rk->lane;
  for (int j = 0; j < nv; j++) {
    kir_expr *r0 = ec_mul(c, ec_add(c, ec_v(c, k, tid), ec_i64(c, block * j)), ec_i64(c, w));
    int r0v = gc_ec_let(c, k, b, "r", r0);
    int raw[KIR_MAX_VEC];
    for (int e = 0; e < w; e++) {
      rk->rpos[j * w + e] = e ? gc_ec_let(c, k, b, "r", ec_add(c, ec_v(c, k, r0v), ec_i64(c, e))) : r0v;
      rk->xc[j * w + e] = gc_ec_let(c, k, b, "xc", gc_ec_num(c, ct, 0.0));
      if (rk->vload) raw[e] = gc_ec_var(c, k, "xr", in->type.dtype);
    }
    kir_block *tb = b;
    kir_expr *g = row_guard(c, rk, j * w);
    if (g) kir_emit_if(c->km, b, g, &tb, NULL);
    if (!rk->vload) {  /* computed by the group: element by element, same layout, from vectors of its sources */
      gc_gen_push(&rk->G);
      int lins[KIR_MAX_VEC];
      for (int e = 0; e < w; e++)
        lins[e] = gc_ec_let(c, k, tb, "l", ec_add(c, ec_v(c, k, rk->base), ec_v(c, k, rk->rpos[j * w + e])));
      bind_vec(&rk->G, tb, &vs, w, lins);
      for (int e = 0; e < w; e++) {
        int v = gc_gen_val(&rk->G, tb, in, gc_gen_pt(&rk->G, &in->type, lins[e], NULL));
        kir_emit_assign(c->km, tb, rk->xc[j * w + e], ec_v(c, k, v));
      }
      gc_gen_pop(&rk->G);
      continue;
    }
    kir_expr *idx = ec_add(c, ec_v(c, k, rk->base), ec_v(c, k, r0v));
    kir_emit_load_vec(c->km, tb, KIR_GLOBAL, p, idx, w, raw);
    for (int e = 0; e < w; e++)
      kir_emit_assign(c->km, tb, rk->xc[j * w + e], ec_cast(c, ct, ec_v(c, k, raw[e])));
  }
}

/* Load the row of `in` into registers once (see row_kernel); no-op when the row is
 * too long or the kernel is not a BLOCKS row kernel. */
static void row_cache(gc_lowerer *c, row_kernel *rk, const gc_value *in, gc_dtype ct) {
  kir_kernel *k = rk->k;
  int64_t block = rk->tpr, nc = rk->blocks ? (rk->R + block - 1) / block : 0;
  if (rk->vec) {
    int64_t w = rk->vec, nv = (rk->R + block * w - 1) / (block * w);
    if (nv * w <= rk->cache_max) {
      row_cache_vec(c, rk, in, ct, (int)nv);
      return;
    }
    GC_ASSERT(rk->row < 0);  /* row groups are chosen only where the row fits */
    rk->vec = 0;
    rk->cache_max = ROW_CACHE_MAX;
  }
  if (!rk->blocks || nc > ROW_CACHE_MAX) return;
  kir_block *b = &k->body;
  rk->nc = (int)nc;
  rk->guard = rk->R % block != 0;
  int tid = rk->lane;
  for (int j = 0; j < rk->nc; j++) {
    rk->rpos[j] = gc_ec_let(c, k, b, "r", ec_add(c, ec_v(c, k, tid), ec_i64(c, block * j)));
    rk->xc[j] = gc_ec_let(c, k, b, "xc", gc_ec_num(c, ct, 0.0));
    kir_block *tb = b;
    if (rk->guard) kir_emit_if(c->km, b, ec_bin(c, KIR_LT, ec_v(c, k, rk->rpos[j]), ec_i64(c, rk->R)), &tb, NULL);
    gc_gen_push(&rk->G);
    kir_expr *off = ec_mul(c, ec_v(c, k, rk->rpos[j]), ec_i64(c, rk->inner));
    int l = gc_ec_let(c, k, tb, "l", ec_add(c, ec_v(c, k, rk->base), off));
    int v = gc_gen_val(&rk->G, tb, in, gc_gen_pt(&rk->G, &in->type, l, NULL));
    kir_emit_assign(c->km, tb, rk->xc[j], ec_v(c, k, v));
    gc_gen_pop(&rk->G);
  }
}

/* Body block for cached element j (inside its guard), with a generator scope that
 * row_end closes. */
static kir_block *row_elem(gc_lowerer *c, row_kernel *rk, int j) {
  kir_block *tb = &rk->k->body;
  kir_expr *g = row_guard(c, rk, j);
  if (g) kir_emit_if(c->km, tb, g, &tb, NULL);
  gc_gen_push(&rk->G);
  return tb;
}

/* Modeled traffic, generator released, kernel launched. */
static void row_close(gc_lowerer *c, row_kernel *rk, double flops_per_elem, int64_t n) {
  /* the next row of this block (the launch loop) starts again with sh[0]: after an odd
   * count of reductions, sh[0] may still be read until every thread passes a barrier */
  if (rk->nred & 1) kir_emit_barrier(c->km, &rk->k->body);
  rk->k->bytes_moved = gc_gen_bytes(&rk->G, -1);
  rk->k->flops = flops_per_elem * (double)n;
  gc_gen_free(&rk->G);
  gc_ec_launch(c, rk->k);
}

/* Loop over the row: threads stride (BLOCKS) or one item walks it (ITEMS).
 * Opens a generator scope that row_end closes. */
static kir_block *row_loop(gc_lowerer *c, row_kernel *rk, int *r) {
  kir_kernel *k = rk->k;
  GC_ASSERT(rk->row < 0);  /* row groups always hold the row in registers */
  gc_gen_push(&rk->G);
  if (rk->blocks) return gc_ec_thread_loop(c, k, &k->body, r, rk->R);
  *r = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
  return kir_emit_for(c->km, &k->body, *r, ec_i64(c, 0), ec_i64(c, rk->R), ec_i64(c, 1));
}

/* Close the scope of a row loop. */
static void row_end(row_kernel *rk) { gc_gen_pop(&rk->G); }

/* Point of the row element at position r (inside a row loop body). */
static int row_point(gc_lowerer *c, row_kernel *rk, kir_block *body, const gc_type *t, int r) {
  kir_kernel *k = rk->k;
  kir_expr *off = ec_mul(c, ec_v(c, k, r), ec_i64(c, rk->inner));
  int l = gc_ec_let(c, k, body, "l", ec_add(c, ec_v(c, k, rk->base), off));
  return gc_gen_pt(&rk->G, t, l, NULL);
}

/* Value of a per-row parameter (gamma, beta: shape x.shape[axis:]) at row position r. */
static int row_param(row_kernel *rk, kir_block *body, const gc_value *v, int r) {
  return gc_gen_val(&rk->G, body, v, gc_gen_pt(&rk->G, &v->type, r, NULL));
}

/* Load the per-row parameter v at the vector of cached elements j0 .. j0 + vec - 1
 * with one vector load when v is a buffer, so that row_param finds the lanes
 * (else row_param loads them one by one). */
static void row_param_vec(gc_lowerer *c, row_kernel *rk, kir_block *body, const gc_value *v, int j0) {
  int w = rk->vec;
  gc_dtype dt = v->type.dtype;
  if (w < 2 || !ec_reads_buffer(c, v) || dt == GRAPHC_DTYPE_BOOL ||
      graphc_dtype_size(dt) * (size_t)w > 16 || gc_type_numel(&v->type) != rk->R)
    return;
  kir_kernel *k = rk->k;
  int p = gc_gen_rparam(&rk->G, c->val_buf[v->id], dt);
  int raw[KIR_MAX_VEC];
  for (int e = 0; e < w; e++) raw[e] = gc_ec_var(c, k, "pr", dt);
  kir_emit_load_vec(c->km, body, KIR_GLOBAL, p, ec_v(c, k, rk->rpos[j0]), w, raw);
  for (int e = 0; e < w; e++) {
    int var = gc_ec_let(c, k, body, v->name, ec_cast(c, gc_ec_compute_type(dt), ec_v(c, k, raw[e])));
    gc_gen_bind(&rk->G, v, gc_gen_pt(&rk->G, &v->type, rk->rpos[j0 + e], NULL), var);
  }
}

/* Combine per-thread partials across the group (BLOCKS only). */
static void row_reduce_n(gc_lowerer *c, row_kernel *rk, gc_ec_comb op, const int *v, int n) {
  kir_kernel *k = rk->k;
  kir_block *b = &k->body;
  if (!rk->blocks) return;
  GC_ASSERT(n >= 1 && n <= ROW_RED_MAX);
  int ws = c->t->warp_size, nw = k->launch.block / ws;
  for (int i = 0; i < n; i++) gc_ec_group_reduce(c, k, b, op, v[i], rk->row >= 0 ? rk->tpr : ws);
  if (rk->row >= 0 || nw == 1) return;
  /* Warp w's values go to slots i * nw + w of one of two arrays, used in turn: a
   * reduction's barrier orders every read of the array two reductions back before
   * this one's writes, so one barrier per reduction is enough. Warps fold in order
   * (as gc_ec_block_reduce). */
  int sh = rk->sh[rk->nred++ & 1];
  kir_block *then_b;
  kir_expr *lane0 = ec_bin(c, KIR_EQ, kir_special_ref(c->km, KIR_SP_LANE), ec_i32(c, 0));
  kir_emit_if(c->km, b, lane0, &then_b, NULL);
  kir_expr *wi = kir_cast(c->km, GRAPHC_DTYPE_I64, kir_special_ref(c->km, KIR_SP_WARP));
  for (int i = 0; i < n; i++)
    kir_emit_store(c->km, then_b, KIR_SHARED, sh, ec_add(c, wi, ec_i64(c, (int64_t)i * nw)), ec_v(c, k, v[i]));
  kir_emit_barrier(c->km, b);
  for (int i = 0; i < n; i++) {
    int tmp = gc_ec_var(c, k, "o", k->vars[v[i]].type);
    kir_emit_assign(c->km, b, v[i], kir_load(c->km, k, KIR_SHARED, sh, ec_i64(c, (int64_t)i * nw)));
    for (int w = 1; w < nw; w++) {
      kir_emit_assign(c->km, b, tmp, kir_load(c->km, k, KIR_SHARED, sh, ec_i64(c, (int64_t)i * nw + w)));
      kir_emit_assign(c->km, b, v[i], gc_ec_combine(c, k, op, v[i], tmp));
    }
  }
}

static void row_reduce(gc_lowerer *c, row_kernel *rk, gc_ec_comb op, int v) { row_reduce_n(c, rk, op, &v, 1); }

/* f(x) of row_accumulate at row position var r, combined into var acc. */
static void row_acc_at(gc_lowerer *c, row_kernel *rk, kir_block *body, const gc_value *in, gc_ec_comb op,
                       int acc, int r, int sub, int sq, int ex) {
  kir_kernel *k = rk->k;
  int xin = gc_gen_val(&rk->G, body, in, row_point(c, rk, body, &in->type, r));
  kir_expr *x = ec_v(c, k, xin);
  if (sub >= 0) x = ec_bin(c, KIR_SUB, x, ec_v(c, k, sub));
  if (ex) x = kir_unary(c->km, KIR_EXP, x);
  int xv = gc_ec_let(c, k, body, "x", x);
  if (sq) xv = gc_ec_let(c, k, body, "x", ec_bin(c, KIR_MUL, ec_v(c, k, xv), ec_v(c, k, xv)));
  kir_emit_assign(c->km, body, acc, gc_ec_combine(c, k, op, acc, xv));
}

/* row_accumulate on the host over a contiguous row: `lanes` partial accumulators, one per
 * position of each chunk of `lanes` elements (straight-line code LLVM's SLP vectorizer turns
 * into vector operations; one accumulator is a serial chain of adds that also keeps the
 * exp of a softmax's sum scalar), a tail into the first, then a pairwise combine. The sum's
 * order differs from the sequential one as the GPU's block reductions do. */
static int row_accumulate_lanes(gc_lowerer *c, row_kernel *rk, const gc_value *in, gc_ec_comb op, gc_dtype t,
                                int acc0, int sub, int sq, int ex, int lanes) {
  kir_kernel *k = rk->k;
  int acc[ROW_HOST_LANES];
  acc[0] = acc0;
  for (int l = 1; l < lanes; l++) acc[l] = gc_ec_let(c, k, &k->body, "acc", gc_ec_identity(c, op, t));
  int64_t full = rk->R / lanes * lanes;
  int r0 = gc_ec_var(c, k, "r0", GRAPHC_DTYPE_I64);
  gc_gen_push(&rk->G);
  kir_block *body = kir_emit_for(c->km, &k->body, r0, ec_i64(c, 0), ec_i64(c, full), ec_i64(c, lanes));
  for (int l = 0; l < lanes; l++) {
    int r = gc_ec_let(c, k, body, "r", ec_add(c, ec_v(c, k, r0), ec_i64(c, l)));
    row_acc_at(c, rk, body, in, op, acc[l], r, sub, sq, ex);
  }
  gc_gen_pop(&rk->G);
  if (full < rk->R) {
    int r = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
    gc_gen_push(&rk->G);
    kir_block *tb = kir_emit_for(c->km, &k->body, r, ec_i64(c, full), ec_i64(c, rk->R), ec_i64(c, 1));
    row_acc_at(c, rk, tb, in, op, acc[0], r, sub, sq, ex);
    gc_gen_pop(&rk->G);
  }
  for (int w = lanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; l++) kir_emit_assign(c->km, &k->body, acc[l], gc_ec_combine(c, k, op, acc[l], acc[l + w]));
  return acc0;
}

/* A new var holding the reduction (op) over the row of f(x), where f subtracts
 * var `sub` (when >= 0), then exponentiates (ex) or squares (sq). */
static int row_accumulate(gc_lowerer *c, row_kernel *rk, const gc_value *in, gc_ec_comb op, gc_dtype t,
                          int sub, int sq, int ex) {
  kir_kernel *k = rk->k;
  int acc = gc_ec_let(c, k, &k->body, "acc", gc_ec_identity(c, op, t));
  for (int j = 0; j < rk->nc; j++) {
    kir_block *body = row_elem(c, rk, j);
    kir_expr *x = ec_v(c, k, rk->xc[j]);
    if (sub >= 0) x = ec_bin(c, KIR_SUB, x, ec_v(c, k, sub));
    if (ex) x = kir_unary(c->km, KIR_EXP, x);
    int xv = gc_ec_let(c, k, body, "x", x);
    if (sq) xv = gc_ec_let(c, k, body, "x", ec_bin(c, KIR_MUL, ec_v(c, k, xv), ec_v(c, k, xv)));
    kir_emit_assign(c->km, body, acc, gc_ec_combine(c, k, op, acc, xv));
    row_end(rk);
  }
  if (rk->nc) {
    row_reduce(c, rk, op, acc);
    return acc;
  }
  int lanes = !rk->blocks && rk->inner == 1 ? host_lanes(c, rk->R) : 0;
  if (lanes) return row_accumulate_lanes(c, rk, in, op, t, acc, sub, sq, ex, lanes);
  int r;
  kir_block *body = row_loop(c, rk, &r);
  row_acc_at(c, rk, body, in, op, acc, r, sub, sq, ex);
  row_end(rk);
  row_reduce(c, rk, op, acc);
  return acc;
}

/* Final loop body: y (compute type) is the root's value at the element's point. */
static void row_put(gc_lowerer *c, row_kernel *rk, kir_block *body, const gc_fusion_group *grp, int pt,
                    kir_expr *y) {
  const gc_value *rv = grp->roots[0]->results[0];
  int v = gc_ec_let(c, rk->k, body, rv->name, gc_ec_round(c, rv->type.dtype, y));
  gc_gen_bind(&rk->G, rv, pt, v);
  GC_ASSERT(rk->npend < KIR_MAX_VEC);
  rk->pend[rk->npend++] = pt;
}

/* Store the group's outputs at the points row_put bound: one vector store per
 * output for a whole vector of the row, else element by element. */
static void row_flush(row_kernel *rk, kir_block *body, const gc_fusion_group *grp) {
  if (rk->npend > 1)
    gc_gen_store_outs_vec(&rk->G, body, grp, rk->pend, rk->npend);
  else if (rk->npend == 1)
    gc_gen_store_outs(&rk->G, body, grp, rk->pend[0]);
  rk->npend = 0;
}

/* softmax = exp(x - max) / sum;  log_softmax = x - max - log(sum). */
static int lower_softmax(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *in = op->operands[0];
  const gc_type *t = &in->type;
  int axis = t->rank ? gc_ec_axis(gc_op_attr_int(op, "axis", -1), t->rank) : 0;
  int64_t outer = t->rank ? gc_ec_prod(t->dims, 0, axis) : 1, R = t->rank ? t->dims[axis] : 1;
  int64_t inner = t->rank ? gc_ec_prod(t->dims, axis + 1, t->rank) : 1;
  gc_dtype ct = gc_ec_compute_type(t->dtype);
  row_kernel rk;
  row_open(c, &rk, outer, R, inner, ct, in, ROW_CACHE_MAX);
  kir_kernel *k = rk.k;
  row_cache(c, &rk, in, ct);
  int mx = row_accumulate(c, &rk, in, GC_EC_MAX, ct, -1, 0, 0);
  int sum = row_accumulate(c, &rk, in, GC_EC_SUM, ct, mx, 0, 1);
  int r, fin;
  if (op->opcode == GC_OP_LOG_SOFTMAX)
    fin = gc_ec_let(c, k, &k->body, "ls", kir_unary(c->km, KIR_LOG, ec_v(c, k, sum)));
  else  /* one division per row, a multiply per element */
    fin = gc_ec_let(c, k, &k->body, "inv", ec_bin(c, KIR_DIV, gc_ec_num(c, ct, 1.0), ec_v(c, k, sum)));
  /* cached: one block per register-held element; else a loop reading the row again */
  int step = rk.nc && rk.vec ? rk.vec : 1;
  for (int j0 = 0; j0 < (rk.nc ? rk.nc : 1); j0 += step) {
    kir_block *body = rk.nc ? row_elem(c, &rk, j0) : row_loop(c, &rk, &r);
    for (int j = j0; j < j0 + step; j++) {
      int pt = row_point(c, &rk, body, t, rk.nc ? rk.rpos[j] : r);
      int xin = rk.nc ? rk.xc[j] : gc_gen_val(&rk.G, body, in, pt);
      int xv = gc_ec_let(c, k, body, "x", ec_bin(c, KIR_SUB, ec_v(c, k, xin), ec_v(c, k, mx)));
      kir_expr *y = op->opcode == GC_OP_LOG_SOFTMAX
                        ? ec_bin(c, KIR_SUB, ec_v(c, k, xv), ec_v(c, k, fin))
                        : ec_bin(c, KIR_MUL, kir_unary(c->km, KIR_EXP, ec_v(c, k, xv)), ec_v(c, k, fin));
      row_put(c, &rk, body, grp, pt, y);
    }
    row_flush(&rk, body, grp);
    row_end(&rk);
  }
  row_close(c, &rk, 6.0, gc_type_numel(t));
  return 0;
}

/* layernorm over dims [axis, rank): (x - mean) / sqrt(var + eps) * gamma + beta.
 * Corrected two-pass (Chan, Golub, LeVeque): m0 = sum(x) / R, then with
 * d = x - m0: s1 = sum(d), s2 = sum(d^2), var = (s2 - s1^2 / R) / R, and each
 * element is centered as d - s1 / R. The correction removes the rounding error
 * of m0 that f32 accumulation leaves (a near-constant row would otherwise be
 * amplified by 1 / sqrt(eps)). */
static int lower_layernorm(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *in = op->operands[0];
  const gc_type *t = &in->type;
  int axis = t->rank ? gc_ec_axis(gc_op_attr_int(op, "axis", -1), t->rank) : 0;
  int64_t outer = gc_ec_prod(t->dims, 0, axis), R = gc_ec_prod(t->dims, axis, t->rank);
  gc_dtype ct = gc_ec_compute_type(t->dtype);
  double eps = gc_op_attr_float(op, "eps", 1e-5);
  row_kernel rk;
  row_open(c, &rk, outer, R, 1, ct, in, ROW_CACHE_NORM);
  kir_kernel *k = rk.k;
  kir_block *kb = &k->body;
  row_cache(c, &rk, in, ct);
  int sum = row_accumulate(c, &rk, in, GC_EC_SUM, ct, -1, 0, 0);
  int m0 = gc_ec_let(c, k, kb, "mean", ec_bin(c, KIR_DIV, ec_v(c, k, sum), gc_ec_num(c, ct, (double)R)));
  int s1 = gc_ec_let(c, k, kb, "s1", gc_ec_num(c, ct, 0.0));
  int s2 = gc_ec_let(c, k, kb, "s2", gc_ec_num(c, ct, 0.0));
  int r;
  for (int j = 0; j < (rk.nc ? rk.nc : 1); j++) {
    kir_block *body = rk.nc ? row_elem(c, &rk, j) : row_loop(c, &rk, &r);
    int xin = rk.nc ? rk.xc[j] : gc_gen_val(&rk.G, body, in, row_point(c, &rk, body, t, r));
    int dv = gc_ec_let(c, k, body, "d", ec_bin(c, KIR_SUB, ec_v(c, k, xin), ec_v(c, k, m0)));
    kir_emit_assign(c->km, body, s1, ec_bin(c, KIR_ADD, ec_v(c, k, s1), ec_v(c, k, dv)));
    kir_expr *sq = ec_bin(c, KIR_MUL, ec_v(c, k, dv), ec_v(c, k, dv));
    kir_emit_assign(c->km, body, s2, ec_bin(c, KIR_ADD, ec_v(c, k, s2), sq));
    row_end(&rk);
  }
  int s12[2] = {s1, s2};
  row_reduce_n(c, &rk, GC_EC_SUM, s12, 2);
  int corr = gc_ec_let(c, k, kb, "corr", ec_bin(c, KIR_DIV, ec_v(c, k, s1), gc_ec_num(c, ct, (double)R)));
  kir_expr *var = ec_bin(c, KIR_SUB, ec_v(c, k, s2), ec_bin(c, KIR_MUL, ec_v(c, k, s1), ec_v(c, k, corr)));
  var = ec_bin(c, KIR_MAX, ec_bin(c, KIR_DIV, var, gc_ec_num(c, ct, (double)R)), gc_ec_num(c, ct, 0.0));
  kir_expr *den = kir_unary(c->km, KIR_SQRT, ec_bin(c, KIR_ADD, var, gc_ec_num(c, ct, eps)));
  int rstd = gc_ec_let(c, k, kb, "rstd", ec_bin(c, KIR_DIV, gc_ec_num(c, ct, 1.0), den));
  int step = rk.nc && rk.vec ? rk.vec : 1;
  for (int j0 = 0; j0 < (rk.nc ? rk.nc : 1); j0 += step) {
    kir_block *body = rk.nc ? row_elem(c, &rk, j0) : row_loop(c, &rk, &r);
    if (step > 1) {
      row_param_vec(c, &rk, body, op->operands[1], j0);
      row_param_vec(c, &rk, body, op->operands[2], j0);
    }
    for (int j = j0; j < j0 + step; j++) {
      int rv = rk.nc ? rk.rpos[j] : r;
      int pt = row_point(c, &rk, body, t, rv);
      int xin = rk.nc ? rk.xc[j] : gc_gen_val(&rk.G, body, in, pt);
      kir_expr *xc = ec_bin(c, KIR_SUB, ec_bin(c, KIR_SUB, ec_v(c, k, xin), ec_v(c, k, m0)), ec_v(c, k, corr));
      int gv = row_param(&rk, body, op->operands[1], rv);
      int bv = row_param(&rk, body, op->operands[2], rv);
      kir_expr *y = ec_bin(c, KIR_MUL, ec_bin(c, KIR_MUL, xc, ec_v(c, k, rstd)), ec_v(c, k, gv));
      y = ec_bin(c, KIR_ADD, y, ec_v(c, k, bv));
      row_put(c, &rk, body, grp, pt, y);
    }
    row_flush(&rk, body, grp);
    row_end(&rk);
  }
  row_close(c, &rk, 10.0, gc_type_numel(t));
  return 0;
}

/* rmsnorm over the last dim: x / sqrt(mean(x^2) + eps) * gamma. */
static int lower_rmsnorm(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *in = op->operands[0];
  const gc_type *t = &in->type;
  int64_t R = t->rank ? t->dims[t->rank - 1] : 1, outer = gc_type_numel(t) / R;
  gc_dtype ct = gc_ec_compute_type(t->dtype);
  double eps = gc_op_attr_float(op, "eps", 1e-6);
  row_kernel rk;
  row_open(c, &rk, outer, R, 1, ct, in, ROW_CACHE_NORM);
  kir_kernel *k = rk.k;
  kir_block *kb = &k->body;
  row_cache(c, &rk, in, ct);
  int ss = row_accumulate(c, &rk, in, GC_EC_SUM, ct, -1, 1, 0);
  kir_expr *ms = ec_bin(c, KIR_DIV, ec_v(c, k, ss), gc_ec_num(c, ct, (double)R));
  kir_expr *den = kir_unary(c->km, KIR_SQRT, ec_bin(c, KIR_ADD, ms, gc_ec_num(c, ct, eps)));
  int inv = gc_ec_let(c, k, kb, "inv", ec_bin(c, KIR_DIV, gc_ec_num(c, ct, 1.0), den));
  int r;
  int step = rk.nc && rk.vec ? rk.vec : 1;
  for (int j0 = 0; j0 < (rk.nc ? rk.nc : 1); j0 += step) {
    kir_block *body = rk.nc ? row_elem(c, &rk, j0) : row_loop(c, &rk, &r);
    if (step > 1) row_param_vec(c, &rk, body, op->operands[1], j0);
    for (int j = j0; j < j0 + step; j++) {
      int rv = rk.nc ? rk.rpos[j] : r;
      int pt = row_point(c, &rk, body, t, rv);
      int xin = rk.nc ? rk.xc[j] : gc_gen_val(&rk.G, body, in, pt);
      int gv = row_param(&rk, body, op->operands[1], rv);
      kir_expr *y = ec_bin(c, KIR_MUL, ec_v(c, k, xin), ec_v(c, k, inv));
      y = ec_bin(c, KIR_MUL, y, ec_v(c, k, gv));
      row_put(c, &rk, body, grp, pt, y);
    }
    row_flush(&rk, body, grp);
    row_end(&rk);
  }
  row_close(c, &rk, 4.0, gc_type_numel(t));
  return 0;
}

/* softmax, log_softmax, layernorm, rmsnorm groups. */
int gc_emit_norm(gc_lowerer *c, const gc_fusion_group *grp) {
  switch (grp->roots[0]->opcode) {
    case GC_OP_SOFTMAX:
    case GC_OP_LOG_SOFTMAX: return lower_softmax(c, grp);
    case GC_OP_LAYERNORM: return lower_layernorm(c, grp);
    case GC_OP_RMSNORM: return lower_rmsnorm(c, grp);
    default: GC_ASSERT(!"not a normalization op"); return -1;
  }
}
