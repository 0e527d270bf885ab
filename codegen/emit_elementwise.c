/* emit_elementwise.c - loop fusion groups: one ITEMS kernel over the roots'
 * shape computing every fused elementwise / movement / splat / iota op per
 * element through the element generator (emit_expr.c), and storing every
 * output of the group (the roots, sibling roots, extra outputs) at the item's
 * linear index.
 *
 *   out_j[pos] = f_j(in_0[map_0(pos)], in_1[map_1(pos)], ...)
 *
 * Identity analysis: a member is "at identity" when it is computed at the
 * roots' own linear index (roots; producers reached only through elementwise
 * ops of the same dims or reshapes). When the sizes divide, each item handles a
 * 16-byte vector (2 or 4 of them for compute-heavy groups: loop_vecs) per output and per input
 * read at identity (CUDA); the other
 * inputs (transposed, broadcast, gathered) are read element by element. An input read only at
 * identity may donate its buffer to an output of the same element size
 * (in-place hint for buffers.c).
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

enum {
  GC_LOOP_MAX_VECS = 4, /* vectors an item at most (loop_vecs) */
  GC_LOOP_WAVES = 4,    /* full waves of threads each copy keeps at least */
  GC_LOOP_ILP_FLOPS = 2 /* flops per byte moved from which an item takes several vectors */
};

/* Is the edge from value v to its user u index-preserving (same linear index)? */
static int identity_edge(const gc_value *v, const gc_op *u) {
  if (u->opcode == GC_OP_RESHAPE) return 1;
  if (gc_op_infos[u->opcode].kind != GC_KIND_ELEMENTWISE) return 0;
  return gc_type_same_dims(&v->type, &u->results[0]->type);
}

/* idn[i] = member i is computed at the roots' linear index (members in
 * program order, so users come later: walk backwards). */
static void identity_members(const gc_fusion_group *grp, unsigned char *idn) {
  for (int i = grp->n_ops - 1; i >= 0; i--) {
    const gc_op *op = grp->ops[i];
    if (grp->roles[i] & GC_FROLE_ROOT) {
      idn[i] = 1;
      continue;
    }
    int ok = 1, any = 0;
    for (int j = i + 1; j < grp->n_ops; j++) {
      const gc_op *u = grp->ops[j];
      for (int o = 0; o < u->n_operands; o++) {
        const gc_value *x = u->operands[o];
        if (x->def != op) continue;
        any = 1;
        ok &= idn[j] && identity_edge(x, u);
      }
    }
    idn[i] = ok && any;
  }
}

/* A loop group's input: a value read from memory and whether every read is at identity. */
typedef struct loop_in {
  const gc_value *v;
  int identity;
} loop_in;

/* Inputs of the group in first-read order; returns the count (at most cap). */
static int loop_inputs(gc_lowerer *c, const gc_fusion_group *grp, const unsigned char *idn, loop_in *in,
                       int cap) {
  int n = 0;
  for (int i = 0; i < grp->n_ops; i++) {
    const gc_op *u = grp->ops[i];
    for (int o = 0; o < u->n_operands; o++) {
      const gc_value *x = u->operands[o];
      if (x->def && c->inl[x->def->id]) continue;
      int id = idn[i] && identity_edge(x, u) && u->opcode != GC_OP_GATHER;
      int j = 0;
      while (j < n && in[j].v != x) j++;
      if (j == n) {
        if (n == cap) return -1;
        in[n++] = (loop_in){x, id};
      } else {
        in[j].identity &= id;
      }
    }
  }
  return n;
}

/* Vector body: identity inputs loaded `w` at a time, each lane computed by the
 * generator with its preloaded elements, one vector store per output. With `u` > 1
 * vectors an item, item i handles vectors i, i + h, ..., i + (u - 1) h (h = the item
 * count: each copy is coalesced across a warp), and every copy's loads come before the
 * first copy's arithmetic, so a thread has u loads of each input in flight. */
static void vector_body(gc_gen *G, const gc_fusion_group *grp, const loop_in *in, int n_in, int w, int u,
                        int64_t h) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  kir_block *b = &k->body;
  int base[GC_LOOP_MAX_VECS], lin[GC_LOOP_MAX_VECS][KIR_MAX_VEC];
  for (int q = 0; q < u; q++) {
    kir_expr *vi = ec_v(c, k, k->item_var);
    if (q > 0) vi = ec_add(c, vi, ec_i64(c, q * h));
    base[q] = gc_ec_let(c, k, b, "i", ec_mul(c, vi, ec_i64(c, w)));
    for (int l = 0; l < w; l++)
      lin[q][l] = l == 0 ? base[q] : gc_ec_let(c, k, b, "i", ec_add(c, ec_v(c, k, base[q]), ec_i64(c, l)));
  }
  for (int q = 0; q < u; q++)
    for (int i = 0; i < n_in; i++) {
      if (!in[i].identity) continue;  /* read lane by lane by the generator */
      gc_dtype dt = in[i].v->type.dtype, ct = gc_ec_compute_type(dt);
      int raw[KIR_MAX_VEC];
      for (int l = 0; l < w; l++) raw[l] = gc_ec_var(c, k, in[i].v->name, dt);
      int p = gc_gen_rparam(G, c->val_buf[in[i].v->id], dt);
      kir_emit_load_vec(c->km, b, KIR_GLOBAL, p, ec_v(c, k, base[q]), w, raw);
      for (int l = 0; l < w; l++) {
        int x = ct == dt ? raw[l] : gc_ec_let(c, k, b, in[i].v->name, kir_cast(c->km, ct, ec_v(c, k, raw[l])));
        gc_gen_bind(G, in[i].v, gc_gen_pt(G, &in[i].v->type, lin[q][l], NULL), x);
      }
    }
  int n = grp->n_outs;
  int *vals = malloc(((size_t)n + 1) * KIR_MAX_VEC * sizeof *vals);  /* vals[j * KIR_MAX_VEC + lane] */
  if (!vals) {
    c->oom = 1;
    return;
  }
  for (int q = 0; q < u; q++) {
    for (int l = 0; l < w; l++)
      for (int j = 0; j < n; j++) {
        const gc_value *o = grp->outs[j];
        vals[j * KIR_MAX_VEC + l] = gc_gen_val(G, b, o, gc_gen_pt(G, &o->type, lin[q][l], NULL));
      }
    for (int j = 0; j < n; j++) {
      const gc_value *o = grp->outs[j];
      kir_expr *v[KIR_MAX_VEC];
      for (int l = 0; l < w; l++) v[l] = ec_cast(c, o->type.dtype, ec_v(c, k, vals[j * KIR_MAX_VEC + l]));
      int p = gc_gen_wparam(G, c->val_buf[o->id], o->type.dtype);
      kir_emit_store_vec(c->km, b, KIR_GLOBAL, p, ec_v(c, k, base[q]), w, v);
    }
  }
  free(vals);
}

/* Vectors an item handles (vector_body): more than one only on the GPU, for a group that
 * computes at least GC_LOOP_ILP_FLOPS flops per byte it moves (an erf gelu in f16 / bf16:
 * independent work for each thread to overlap), when the vector count divides and leaves
 * at least GC_LOOP_WAVES full waves of resident threads (2048 a multiprocessor) per copy.
 * GRAPHC_LOOP_VECS=N (kir_target.loop_vecs) forces N. H200, 256 MB, queued, a block per
 * 256 items, u = 1 / 2 / 4 (docs/performance.md): bf16 gelu 0.1824 / 0.1665 / 0.1570 ms;
 * memory-bound groups lose with more (f32 neg 0.1285 / 0.1298 / 0.1320, f16
 * tanh(x + bias[col]) 0.1286 / 0.1297 / 0.1320, f32 silu 0.1301 / 0.1301 / 0.1318). */
static int loop_vecs(const gc_lowerer *c, int64_t nvec, double flops_per_byte) {
  const kir_target *t = c->t;
  if (t->kind != KIR_TARGET_CUDA) return 1;
  int u = t->loop_vecs;
  if (u <= 0 && flops_per_byte < GC_LOOP_ILP_FLOPS) return 1;
  if (u <= 0) {
    int64_t wave = (int64_t)(t->num_sms > 0 ? t->num_sms : 1) * 2048;
    u = 1;
    for (int q = GC_LOOP_MAX_VECS; q > 1; q /= 2)
      if (nvec / q >= GC_LOOP_WAVES * wave) {
        u = q;
        break;
      }
  }
  if (u > GC_LOOP_MAX_VECS) u = GC_LOOP_MAX_VECS;
  while (u > 1 && nvec % u != 0) u /= 2;
  return u;
}

/* Host, a group that reads an input other than at identity (a bias broadcast along
 * channels, a transposed operand): items over the roots' outer dims, a loop inside over
 * the trailing ones (at least GC_LOOP_HOST_ROW elements, or the whole shape), the outer
 * coordinates unravelled once per item. A per-element item unravelled its linear index
 * with divisions for the broadcast read and kept the item loop scalar: x + b[1, C, 1, 1]
 * then silu over [8, 144, 56, 56] took 13.9 ms, against 0.87 ms for the silu alone. Now
 * the broadcast element is invariant in the inner loop (or contiguous along it, a bias
 * on the last dim) and the loop vectorizes. */
enum { GC_LOOP_HOST_ROW = 64 };

static int host_rows(gc_lowerer *c, const gc_fusion_group *grp, const loop_in *in, int n_in) {
  const gc_type *rt = &grp->roots[0]->results[0]->type;
  if (c->t->kind != KIR_TARGET_HOST || n_in < 0 || rt->rank < 2 || gc_type_numel(rt) == 0) return 0;
  int any = 0;
  for (int i = 0; i < n_in; i++) any |= !in[i].identity;
  return any;
}

static kir_kernel *host_rows_kernel(gc_lowerer *c, const gc_fusion_group *grp, gc_gen *G) {
  const gc_type *rt = &grp->roots[0]->results[0]->type;
  int d = rt->rank - 1;
  int64_t R = rt->dims[d];
  while (d > 0 && R < GC_LOOP_HOST_ROW) R *= rt->dims[--d];
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, gc_type_numel(rt) / (R > 0 ? R : 1), 64);
  gc_gen_init(G, c, k);
  kir_block *b = &k->body;
  int co[GC_MAX_RANK];
  for (int i = 0; i < rt->rank; i++) co[i] = -1;
  if (d > 0) gc_ec_unravel(c, k, b, k->item_var, d, rt->dims, co);
  int r = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, r, ec_i64(c, 0), ec_i64(c, R), ec_i64(c, 1));
  int lin = gc_ec_let(c, k, lb, "lin", ec_add(c, ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, R)), ec_v(c, k, r)));
  if (d == rt->rank - 1) co[d] = r;
  gc_gen_push(G);
  gc_gen_store_outs(G, lb, grp, gc_gen_pt(G, rt, lin, co));
  gc_gen_pop(G);
  return k;
}

/* One ITEMS kernel for a loop group (see the file comment). */
int gc_emit_loop(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_type *rt = &grp->roots[0]->results[0]->type;
  int64_t numel = gc_type_numel(rt);
  unsigned char idn[256];
  loop_in in[64];
  int n_in = grp->n_ops <= 256 ? 0 : -1;
  if (n_in == 0) {
    identity_members(grp, idn);
    n_in = loop_inputs(c, grp, idn, in, 64);
  }
  /* vectorize: inputs read at identity a vector at a time, other reads (a transposed or
   * broadcast operand) lane by lane, outputs stored a vector at a time. H200: resnet_f16's
   * NCHW -> NHWC stem input (4 channels a pixel, 3 read from planes) 0.0442 -> 0.0180 ms */
  int vec = n_in >= 0;
  gc_dtype dts[128];
  int nd = 0;
  vec = vec && n_in + grp->n_outs <= 128;
  for (int i = 0; vec && i < n_in; i++)
    if (in[i].identity) dts[nd++] = in[i].v->type.dtype;
  for (int j = 0; vec && j < grp->n_outs; j++) dts[nd++] = grp->outs[j]->type.dtype;
  int w = vec && nd > 0 ? gc_ec_vec_width(c, numel, dts, nd) : 1;

  /* in-place: an input read only at identity may donate its slot to an output */
  for (int j = 0; j < grp->n_outs; j++) {
    int ob = c->val_buf[grp->outs[j]->id];
    for (int i = 0; i < n_in; i++) {
      const gc_value *x = in[i].v;
      if (in[i].identity && graphc_dtype_size(x->type.dtype) == graphc_dtype_size(grp->outs[j]->type.dtype) &&
          c->hints[ob].n < GC_MAX_INPLACE)
        c->hints[ob].cand[c->hints[ob].n++] = c->val_buf[x->id];
    }
  }

  double flops = 0;
  for (int i = 0; i < grp->n_ops; i++)
    if (gc_op_infos[grp->ops[i]->opcode].kind == GC_KIND_ELEMENTWISE)
      flops += (double)gc_type_numel(&grp->ops[i]->results[0]->type) * gc_ec_op_flops(grp->ops[i]);
  double elem_bytes = 0;  /* an element's bytes through the vector accesses */
  for (int i = 0; i < nd; i++) elem_bytes += graphc_dtype_size(dts[i]);
  int u = w > 1 ? loop_vecs(c, numel / w, flops / ((double)numel * elem_bytes)) : 1;
  gc_gen G;
  kir_kernel *k;
  if (host_rows(c, grp, in, n_in)) {
    k = host_rows_kernel(c, grp, &G);
  } else if (w > 1) {
    k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, numel / w / u, 256);
    gc_gen_init(&G, c, k);
    vector_body(&G, grp, in, n_in, w, u, numel / w / u);
  } else {
    k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, numel / w / u, 256);
    gc_gen_init(&G, c, k);
    int pt = gc_gen_pt(&G, rt, k->item_var, NULL);
    gc_gen_store_outs(&G, &k->body, grp, pt);
  }
  k->bytes_moved = gc_gen_bytes(&G, numel);
  k->flops = flops;
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}
