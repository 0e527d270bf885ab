/* launch_plan.c - the launch plan's life cycle and its invariants (launch_plan.h).
 *
 * Shared by every target: the CUDA runtime half (cuda_exec.c) and the host
 * executor (host_exec.c) both check a plan here before running it, whether the
 * compile half (driver/launch_build.c) built it or the bundle reader
 * (bundle.c) read it from a file. Needs no CUDA.
 */
#include "runtime/launch_plan.h"

#include <inttypes.h>
#include <string.h>

#define LP_ALIGN 256   /* TEMP buffers' offsets in the arena (codegen/buffers.c) */

/* A zeroed plan with its arena ready. */
void gc_launch_plan_init(gc_launch_plan *p) {
  memset(p, 0, sizeof *p);
  gc_arena_init(&p->arena);
}

/* Free the arena (every array and string hangs off it) and zero the plan. */
void gc_launch_plan_free(gc_launch_plan *p) {
  if (!p) return;
  gc_arena_free(&p->arena);
  memset(p, 0, sizeof *p);
}

/* 1 when s is a non-empty C identifier of at most 1023 characters. */
static int is_c_ident(const char *s) {
  if (!s || !*s) return 0;
  for (size_t i = 0; s[i]; i++) {
    char c = s[i];
    int ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i && c >= '0' && c <= '9');
    if (!ok || i >= 1023) return 0;
  }
  return 1;
}

/* Bytes of a dtype x dims tensor; BAD_BYTES when a dim is out of range or it overflows. */
#define BAD_BYTES UINT64_MAX
static uint64_t tensor_bytes(gc_dtype dt, int rank, const int64_t *dims) {
  size_t es = graphc_dtype_size(dt);
  if (!es || rank < 0 || rank > GC_MAX_RANK) return BAD_BYTES;
  uint64_t n = es;
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0 || dims[k] > (INT64_C(1) << 40)) return BAD_BYTES;
    if (dims[k] && n > (UINT64_C(1) << 62) / (uint64_t)dims[k]) return BAD_BYTES;
    n *= (uint64_t)dims[k];
  }
  return n;  /* 0 for an empty tensor (a zero dim) */
}

/* Report a plan violation (printf-style) and return -1. */
static int bad_plan(gc_diags *d, graphc_status_t st, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad_plan(gc_diags *d, graphc_status_t st, const char *what, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  gc_error_at(d, st, (gc_loc){0, 0}, "%s: %s", what, msg);
  return -1;
}

/* Check a signature entry: C-safe name, valid dtype and dims, nbytes consistent. */
static int check_tensor(const graphc_tensor_info_t *t, const char *kind, int i, graphc_status_t st,
                        const char *what, gc_diags *d) {
  if (!t->name) return bad_plan(d, st, what, "%s %d has no name", kind, i);
  if (!graphc_dtype_name(t->dtype))
    return bad_plan(d, st, what, "%s %d (%s) has invalid dtype %d", kind, i, t->name, (int)t->dtype);
  uint64_t nb = tensor_bytes(t->dtype, t->rank, t->dims);
  if (nb == BAD_BYTES || nb != t->nbytes)
    return bad_plan(d, st, what, "%s %d (%s): shape or size is invalid", kind, i, t->name);
  return 0;
}

/* Check tensor map i against what cuTensorMapEncodeTiled accepts (so that at run time
 * only the buffer's address can make the encode fail) and against its buffer's bytes:
 * every element the map can address lies inside the buffer (TMA never reads past
 * globalDim, so the boxes' overhang is no concern). */
static int check_tmap(const gc_launch_plan *p, int i, graphc_status_t st, const char *what,
                      gc_diags *d) {
  const gc_lp_tmap *t = &p->tmaps[i];
  if (t->buffer < 0 || t->buffer >= p->n_buffers)
    return bad_plan(d, st, what, "tensor map %d refers to a missing buffer (%d)", i, t->buffer);
  if (t->dtype != GRAPHC_DTYPE_F16 && t->dtype != GRAPHC_DTYPE_BF16 && t->dtype != GRAPHC_DTYPE_F32 &&
      graphc_dtype_size(t->dtype) != 1)
    return bad_plan(d, st, what, "tensor map %d has dtype %d (f16, bf16, f32 or an 8-bit one expected)", i,
                    (int)t->dtype);
  if (t->rank < 2 || t->rank > GC_LP_TMAP_MAX_RANK)
    return bad_plan(d, st, what, "tensor map %d has rank %d (2 to %d)", i, t->rank,
                    GC_LP_TMAP_MAX_RANK);
  const int64_t es = (int64_t)graphc_dtype_size(t->dtype);
  if (t->strides[0] != es)
    return bad_plan(d, st, what,
                    "tensor map %d: stride 0 is %" PRId64 " bytes, not the element size %" PRId64, i,
                    t->strides[0], es);
  for (int k = 0; k < t->rank; k++) {
    if (t->dims[k] < 1 || t->dims[k] > (INT64_C(1) << 32))
      return bad_plan(d, st, what, "tensor map %d: dim %d is %" PRId64 " (1 to 2^32)", i, k,
                      t->dims[k]);
    if (k && (t->strides[k] < 16 || t->strides[k] % 16 || t->strides[k] >= (INT64_C(1) << 40)))
      return bad_plan(d, st, what,
                      "tensor map %d: stride %d (%" PRId64 " bytes) is not a multiple of 16 below 2^40",
                      i, k, t->strides[k]);
    if (t->box[k] < 1 || t->box[k] > 256)
      return bad_plan(d, st, what, "tensor map %d: box dim %d is %d (1 to 256)", i, k, t->box[k]);
  }
  int64_t row = (int64_t)t->box[0] * es;  /* bytes of the box's innermost run */
  if (row % 16)
    return bad_plan(d, st, what,
                    "tensor map %d: the box's rows are %" PRId64 " bytes, not a multiple of 16", i, row);
  if (t->swizzle != 0 && t->swizzle != 128)
    return bad_plan(d, st, what, "tensor map %d has swizzle %d (0 or 128)", i, t->swizzle);
  if (t->swizzle == 128 && row > 128)
    return bad_plan(d, st, what,
                    "tensor map %d: the box's rows are %" PRId64
                    " bytes, wider than its 128-byte swizzle", i, row);
  if (t->offset % 16)
    return bad_plan(d, st, what, "tensor map %d: offset %" PRIu64 " is not a multiple of 16", i,
                    t->offset);
  /* offset + sum (dims[k] - 1) * strides[k] + es <= bytes, each step kept below bytes */
  uint64_t bytes = p->buffers[t->buffer].bytes, end = t->offset;
  int inside = end <= bytes;
  for (int k = 0; k < t->rank && inside; k++) {
    uint64_t n = (uint64_t)(t->dims[k] - 1), s = (uint64_t)t->strides[k];
    inside = n <= (bytes - end) / s;
    if (inside) end += n * s;
  }
  if (!inside || (uint64_t)es > bytes - end)
    return bad_plan(d, st, what,
                    "tensor map %d reaches past the end of buffer %d (%" PRIu64 " bytes)", i,
                    t->buffer, bytes);
  return 0;
}

/* Every invariant cuda_exec.c and host_exec.c rely on, first violation reported. */
int gc_launch_plan_check(const gc_launch_plan *p, graphc_status_t st, const char *what,
                         gc_diags *d) {
  if (p->n_kernels < 0 || p->n_launches < 0 || p->n_buffers < 0 || p->n_consts < 0 ||
      p->n_inputs < 0 || p->n_outputs < 0 || p->n_tmaps < 0)
    return bad_plan(d, st, what, "negative count");
  if ((p->n_kernels && !p->kernels) || (p->n_launches && !p->launches) ||
      (p->n_buffers && !p->buffers) || (p->n_consts && !p->consts) ||
      (p->n_inputs && !p->inputs) || (p->n_outputs && !p->outputs) ||
      (p->n_tmaps && !p->tmaps))
    return bad_plan(d, st, what, "missing table");
  if (p->arena_bytes > (UINT64_C(1) << 50)) return bad_plan(d, st, what, "arena size is absurd");
  for (int i = 0; i < p->n_inputs; i++)
    if (check_tensor(&p->inputs[i], "input", i, st, what, d)) return -1;
  for (int i = 0; i < p->n_outputs; i++)
    if (check_tensor(&p->outputs[i], "output", i, st, what, d)) return -1;
  for (int i = 0; i < p->n_consts; i++) {
    const gc_lp_const *c = &p->consts[i];
    if (!c->name) return bad_plan(d, st, what, "const %d has no name", i);
    if (!graphc_dtype_name(c->dtype) || tensor_bytes(c->dtype, c->rank, c->dims) != c->bytes)
      return bad_plan(d, st, what, "const %d (%s): shape or size is invalid", i, c->name);
  }
  for (int i = 0; i < p->n_states; i++) {
    const gc_lp_state *s = &p->states[i];
    if (!s->name) return bad_plan(d, st, what, "state %d has no name", i);
    if (!graphc_dtype_name(s->dtype) || tensor_bytes(s->dtype, s->rank, s->dims) != s->bytes)
      return bad_plan(d, st, what, "state %d (%s): shape or size is invalid", i, s->name);
  }
  for (int i = 0; i < p->n_buffers; i++) {
    const gc_lp_buffer *b = &p->buffers[i];
    uint64_t limit = 0;
    switch (b->kind) {
      case GC_LP_INPUT:
        if (b->index < 0 || b->index >= p->n_inputs) goto bad_index;
        limit = p->inputs[b->index].nbytes;
        break;
      case GC_LP_OUTPUT:
        if (b->index < 0 || b->index >= p->n_outputs) goto bad_index;
        limit = p->outputs[b->index].nbytes;
        break;
      case GC_LP_CONST:
        if (b->index < 0 || b->index >= p->n_consts) goto bad_index;
        limit = p->consts[b->index].bytes;
        break;
      case GC_LP_STATE:
        if (b->index < 0 || b->index >= p->n_states) goto bad_index;
        limit = p->states[b->index].bytes;
        break;
      case GC_LP_TEMP:
        if (b->offset % LP_ALIGN || b->offset > p->arena_bytes ||
            b->bytes > p->arena_bytes - b->offset)
          return bad_plan(d, st, what, "buffer %d lies outside the arena", i);
        limit = b->bytes;
        break;
      default: return bad_plan(d, st, what, "buffer %d has unknown kind %d", i, (int)b->kind);
    }
    if (b->bytes > limit)
      return bad_plan(d, st, what, "buffer %d is larger than what backs it", i);
    continue;
  bad_index:
    return bad_plan(d, st, what, "buffer %d refers to a missing tensor (%d)", i, b->index);
  }
  for (int i = 0; i < p->n_tmaps; i++)
    if (check_tmap(p, i, st, what, d)) return -1;
  for (int i = 0; i < p->n_kernels; i++) {
    const gc_lp_kernel *k = &p->kernels[i];
    if (!is_c_ident(k->name)) return bad_plan(d, st, what, "kernel %d has an invalid name", i);
    if ((k->kind != GC_LP_ITEMS && k->kind != GC_LP_BLOCKS && k->kind != GC_LP_BLOCKS_ONE) || k->n < 0 ||
        (k->kind == GC_LP_BLOCKS_ONE && k->n > INT32_MAX) ||
        k->n > (INT64_C(1) << 50) || k->block < 0 || k->block > 65536 || k->smem < 0 ||
        k->smem > (1 << 20))
      return bad_plan(d, st, what, "kernel %s has an invalid launch shape", k->name);
    if (k->n_params < 0 || k->n_params > 4096 || (k->n_params && !k->params))
      return bad_plan(d, st, what, "kernel %s has an invalid parameter list", k->name);
    for (int j = 0; j < k->n_params; j++) {
      const gc_lp_param *q = &k->params[j];
      if (q->kind == GC_LP_PARAM_I64) continue;
      if (q->kind == GC_LP_PARAM_TMAP) {
        if (q->value < 0 || q->value >= p->n_tmaps)
          return bad_plan(d, st, what, "kernel %s: parameter %d names tensor map %" PRId64 " of %d",
                          k->name, j, q->value, p->n_tmaps);
        continue;
      }
      if (q->kind != GC_LP_PARAM_BUFFER || q->value < 0 || q->value >= p->n_buffers)
        return bad_plan(d, st, what, "kernel %s: parameter %d is bound to nothing", k->name, j);
    }
  }
  for (int i = 0; i < p->n_launches; i++)
    if (p->launches[i] < 0 || p->launches[i] >= p->n_kernels)
      return bad_plan(d, st, what, "launch %d names kernel %d of %d", i, p->launches[i],
                      p->n_kernels);
  if (p->n_prologue < 0 || p->n_prologue > p->n_launches)
    return bad_plan(d, st, what, "prologue of %d launches in a plan of %d", p->n_prologue, p->n_launches);
  return 0;
}
