/* launch_build.c - codegen's plan -> the runtime's launch plan, and the weights
 * bound to the plan's params (see launch_build.h).
 *
 * One builder for every target: the CUDA backend (cuda_backend.c), the CPU
 * backend (cpu_backend.c) and both ahead-of-time paths (bundles, cpu_aot.c)
 * hand their plan to gc_launch_plan_build. Params reach it already bound: the
 * backends call gc_plan_bind_weights right after lowering, the only place a
 * param's tensor is looked up by name.
 */
#include "driver/launch_build.h"

#include <string.h>

#include "ir/dtype.h"

/* Report out of memory; returns -1. */
static int oom(gc_diags *d) {
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
  return -1;
}

/* The CONST buffer const i of p backs (same size), or NULL when no buffer uses it. */
static const gc_plan_buffer *const_buffer(const gc_plan *p, int i) {
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].kind == GC_BUF_CONST && p->buffers[b].index == i &&
        p->buffers[b].bytes == p->consts[i].bytes)
      return &p->buffers[b];
  return NULL;
}

/* ---- weights ------------------------------------------------------------------------------ */

/* Report that the tensor (type `have`) does not fit param const c (`want`: its buffer's
 * shape in the file's dtype, NULL: no buffer); returns -1. */
static int bad_tensor(const gc_plan_const *c, const gc_type *have, const gc_type *want, gc_diags *d) {
  gc_sbuf got = {0}, exp = {0};
  gc_type_print(&got, have, NULL);
  if (want) gc_type_print(&exp, want, NULL);
  gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, c->loc, "tensor \"%s\" is %s, param %%%s needs %s", c->name,
              got.data ? got.data : "?", c->param ? c->param : "?", exp.data ? exp.data : "?");
  gc_sbuf_free(&got);
  gc_sbuf_free(&exp);
  return -1;
}

/* Each param const's data: its tensor in w, which must have the buffer's shape and
 * the const's file dtype. A tensor of another dtype (`from`) is converted once, here,
 * into the plan's arena (cast's rounding, ir/dtype.h); any other is borrowed. */
int gc_plan_bind_weights(gc_plan *p, const gc_safetensors *w, gc_diags *d) {
  if (!w) return 0;
  for (int i = 0; i < p->n_consts; i++) {
    gc_plan_const *c = &p->consts[i];
    if (!c->is_param) continue;
    const gc_st_tensor *st = gc_safetensors_find(w, c->name);
    if (!st) {
      gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, c->loc, "tensor \"%s\" not found in weights %s",
                  c->name, w->path ? w->path : "");
      return -1;
    }
    const gc_plan_buffer *b = const_buffer(p, i);
    gc_type have = {st->dtype, st->rank, {0}}, want;
    memcpy(have.dims, st->dims, sizeof have.dims);
    if (b) want = b->type, want.dtype = c->file_dtype;
    if (!b || !gc_type_equal(&have, &want) ||
        st->nbytes != c->bytes / graphc_dtype_size(b->type.dtype) * graphc_dtype_size(st->dtype))
      return bad_tensor(c, &have, b ? &want : NULL, d);
    if (st->dtype == b->type.dtype) {
      c->data = st->data;
      gc_weights_origin(w, st->data, c->origin);
      continue;
    }
    void *conv = gc_arena_alloc(&p->arena, c->bytes ? c->bytes : 1);
    if (!conv) return oom(d);
    gc_convert_floats(conv, b->type.dtype, st->data, st->dtype, gc_type_numel(&b->type), 1);
    c->data = conv;
    gc_weights_origin(w, st->data, c->origin);  /* the same bytes in every plan: shareable too */
  }
  return 0;
}

/* ---- the launch plan ---------------------------------------------------------------------- */

/* The launch plan's copy of a KIR_PARAM_TMAP param's geometry (checked by
 * gc_launch_plan_check, encoded by cuda_exec.c once its buffer has an address). */
static void lp_tmap(gc_lp_tmap *t, const kir_param *kp) {
  _Static_assert(GC_LP_TMAP_MAX_RANK == KIR_TMAP_MAX_RANK, "tensor map ranks differ");
  const kir_tmap *m = &kp->tmap;
  memset(t, 0, sizeof *t);
  t->buffer = kp->binding;
  t->dtype = kp->dtype;
  t->rank = m->rank;
  for (int i = 0; i < KIR_TMAP_MAX_RANK; i++) {
    t->dims[i] = m->dims[i];
    t->strides[i] = m->strides[i];
    t->box[i] = m->box[i];
  }
  t->offset = (uint64_t)m->offset;
  t->swizzle = m->swizzle;
}

/* gc_plan -> gc_launch_plan: kernels, launches, buffers, tensor maps, consts, signature. */
int gc_launch_plan_build(const gc_plan *p, const graphc_tensor_info_t *in, size_t n_in,
                         const graphc_tensor_info_t *out, size_t n_out, gc_launch_plan *lp,
                         gc_diags *d) {
  gc_launch_plan_init(lp);
  gc_arena *a = &lp->arena;
  const kir_module *km = p->kir;
  lp->n_kernels = km->n_kernels;
  lp->kernels = gc_arena_alloc(a, (size_t)km->n_kernels * sizeof *lp->kernels + 1);
  /* Every tensor map param gets its own map: two kernels over one buffer may view it
   * through different boxes. */
  int n_tmaps = 0;
  for (int i = 0; i < km->n_kernels; i++)
    for (int j = 0; j < km->kernels[i]->n_params; j++)
      n_tmaps += km->kernels[i]->params[j].kind == KIR_PARAM_TMAP;
  lp->tmaps = gc_arena_alloc(a, (size_t)n_tmaps * sizeof *lp->tmaps + 1);
  for (int i = 0; lp->kernels && i < km->n_kernels; i++) {
    const kir_kernel *k = km->kernels[i];
    gc_lp_kernel *q = &lp->kernels[i];
    q->name = gc_arena_strdup(a, k->name);
    q->kind = k->launch.kind != KIR_LAUNCH_BLOCKS ? GC_LP_ITEMS : k->one_pass ? GC_LP_BLOCKS_ONE : GC_LP_BLOCKS;
    q->n = k->launch.n;
    q->block = k->launch.block;
    q->smem = k->shared_dynamic ? (int)kir_shared_bytes(k) : 0;
    q->n_params = k->n_params;
    q->params = gc_arena_alloc(a, (size_t)k->n_params * sizeof *q->params + 1);
    for (int j = 0; q->params && j < k->n_params; j++) {
      const kir_param *kp = &k->params[j];
      if (kp->kind == KIR_PARAM_TMAP) {
        if (lp->tmaps) lp_tmap(&lp->tmaps[lp->n_tmaps], kp);
        q->params[j] = (gc_lp_param){GC_LP_PARAM_TMAP, lp->n_tmaps++, GC_LP_ACCESS_READ};
        continue;
      }
      q->params[j].kind = kp->kind == KIR_PARAM_I64 ? GC_LP_PARAM_I64 : GC_LP_PARAM_BUFFER;
      /* lower.h: a buffer's binding indexes plan buffers; an I64's is its value. */
      q->params[j].value = kp->binding;
      if (kp->kind != KIR_PARAM_I64) q->params[j].access = kp->readonly ? GC_LP_ACCESS_READ : GC_LP_ACCESS_WRITE;
    }
  }
  lp->n_launches = p->n_launches;
  lp->launches = gc_arena_alloc(a, (size_t)p->n_launches * sizeof *lp->launches + 1);
  if (lp->launches && p->n_launches)  /* none: every output empty */
    memcpy(lp->launches, p->launches, (size_t)p->n_launches * sizeof *p->launches);
  lp->n_prologue = p->n_prologue;
  lp->n_buffers = p->n_buffers;
  lp->buffers = gc_arena_alloc(a, (size_t)p->n_buffers * sizeof *lp->buffers + 1);
  for (int i = 0; lp->buffers && i < p->n_buffers; i++) {
    const gc_plan_buffer *b = &p->buffers[i];
    gc_lp_buffer *q = &lp->buffers[i];
    switch (b->kind) {
      case GC_BUF_INPUT: q->kind = GC_LP_INPUT; break;
      case GC_BUF_OUTPUT: q->kind = GC_LP_OUTPUT; break;
      case GC_BUF_CONST: q->kind = GC_LP_CONST; break;
      case GC_BUF_TEMP: q->kind = GC_LP_TEMP; break;
      case GC_BUF_STATE: q->kind = GC_LP_STATE; break;
    }
    q->index = b->index;
    q->bytes = b->bytes;
    q->offset = b->kind == GC_BUF_TEMP ? b->offset : 0;
  }
  lp->n_consts = p->n_consts;
  lp->consts = gc_arena_alloc(a, (size_t)p->n_consts * sizeof *lp->consts + 1);
  for (int i = 0; lp->consts && i < p->n_consts; i++) {
    const gc_plan_const *c = &p->consts[i];
    gc_lp_const *q = &lp->consts[i];
    q->name = gc_arena_strdup(a, c->name);
    q->bytes = c->bytes;
    q->data = c->data;
    q->is_param = c->is_param;
    memcpy(q->origin, c->origin, sizeof q->origin);
    /* The type of the buffer it backs; raw bytes when no buffer uses it. */
    const gc_plan_buffer *b = const_buffer(p, i);
    q->dtype = b ? b->type.dtype : GRAPHC_DTYPE_U8;
    q->rank = b ? b->type.rank : 1;
    if (b)
      memcpy(q->dims, b->type.dims, sizeof q->dims);
    else
      q->dims[0] = (int64_t)c->bytes;
  }
  lp->n_states = p->n_states;
  lp->states = gc_arena_alloc(a, (size_t)p->n_states * sizeof *lp->states + 1);
  for (int i = 0; lp->states && i < p->n_states; i++) {
    const gc_plan_state *s = &p->states[i];
    gc_lp_state *q = &lp->states[i];
    q->name = gc_arena_strdup(a, s->name);
    q->bytes = s->bytes;
    q->dtype = s->type.dtype;
    q->rank = s->type.rank;
    memcpy(q->dims, s->type.dims, sizeof q->dims);
  }
  lp->arena_bytes = p->arena_bytes;
  lp->n_inputs = (int)n_in;
  lp->n_outputs = (int)n_out;
  lp->inputs = gc_arena_alloc(a, n_in * sizeof *lp->inputs + 1);
  lp->outputs = gc_arena_alloc(a, n_out * sizeof *lp->outputs + 1);
  for (size_t i = 0; lp->inputs && lp->outputs && i < n_in + n_out; i++) {
    graphc_tensor_info_t *t = i < n_in ? &lp->inputs[i] : &lp->outputs[i - n_in];
    *t = i < n_in ? in[i] : out[i - n_in];
    t->name = gc_arena_strdup(a, t->name ? t->name : "");
  }
  if (a->failed) {
    gc_launch_plan_free(lp);
    return oom(d);
  }
  return gc_launch_plan_check(lp, GRAPHC_STATUS_INTERNAL, "launch plan", d);
}
