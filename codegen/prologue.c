/* prologue.c - launches that depend on the weights alone run once, not every run.
 *
 * A kernel whose buffers are all CONST (weights, folded constants) or TEMP
 * buffers that such kernels write, and that writes only TEMP buffers, computes
 * the same bytes on every run: NHWC weight permutations ([KH*KW*C, O]), a padded
 * stem's weights, a cast of a weight. gc_plan_hoist_prologue moves these
 * launches, in their order, to the front of the plan (they read nothing the
 * others write, so the move changes no result) and counts them in
 * plan->n_prologue; their outputs live to the end of the plan, so buffer
 * assignment never gives their slots to anything else. The CUDA and host runtimes
 * run the prologue once after the weights are in place, and again after a weight
 * changes (runtime/cuda_exec.c, runtime/host_exec.c); every run then runs the
 * launches after it. Running every launch every time (the evaluator,
 * GRAPHC_PROLOGUE=0) computes the same results.
 *
 *   before: [transpose w1] [conv x] [transpose w2] [conv]    n_prologue 0
 *   after:  [transpose w1] [transpose w2] | [conv x] [conv]  n_prologue 2
 *
 * Runs after lowering, before gc_assign_buffers (codegen/lower.c).
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

/* Does launch L's kernel read only constants and prologue results (written[b]),
 * and write only TEMP buffers? */
static int const_only(const gc_plan *p, int L, const char *written) {
  const kir_kernel *k = p->kir->kernels[p->launches[L]];
  int any = 0;
  for (int i = 0; i < k->n_params; i++) {
    const kir_param *q = &k->params[i];
    if (q->kind != KIR_PARAM_BUFFER) continue;
    const gc_plan_buffer *b = &p->buffers[q->binding];
    any = 1;
    if (!q->readonly) {
      if (b->kind != GC_BUF_TEMP) return 0;
    } else if (b->kind != GC_BUF_CONST && !(b->kind == GC_BUF_TEMP && written[q->binding])) {
      return 0;
    }
  }
  return any;
}

/* Reorder p's launches (see the file comment); 0, or -1 when out of memory (the
 * plan is then unchanged). */
int gc_plan_hoist_prologue(gc_plan *p) {
  int nl = p->n_launches, nb = p->n_buffers;
  p->n_prologue = 0;
  if (nl == 0) return 0;
  char *written = calloc((size_t)nb + 1, 1), *pro = calloc((size_t)nl, 1);
  int *order = malloc((size_t)nl * sizeof *order);
  if (!written || !pro || !order) {
    free(written);
    free(pro);
    free(order);
    return -1;
  }
  int n = 0;
  for (int L = 0; L < nl; L++) {
    if (!const_only(p, L, written)) continue;
    /* A buffer another launch also writes (none in an SSA plan) keeps its launch in place. */
    const kir_kernel *k = p->kir->kernels[p->launches[L]];
    int shared = 0;
    for (int i = 0; i < k->n_params; i++)
      if (k->params[i].kind == KIR_PARAM_BUFFER && !k->params[i].readonly) {
        const gc_plan_buffer *b = &p->buffers[k->params[i].binding];
        shared |= b->first_use != L;
      }
    if (shared) continue;
    pro[L] = 1;
    n++;
    for (int i = 0; i < k->n_params; i++)
      if (k->params[i].kind == KIR_PARAM_BUFFER && !k->params[i].readonly) written[k->params[i].binding] = 1;
  }
  if (n > 0) {
    int at = 0;
    for (int L = 0; L < nl; L++)
      if (pro[L]) order[at++] = p->launches[L];
    for (int L = 0; L < nl; L++)
      if (!pro[L]) order[at++] = p->launches[L];
    memcpy(p->launches, order, (size_t)nl * sizeof *order);
    /* lifetimes in the new order; a prologue result lives to the end */
    for (int b = 0; b < nb; b++) p->buffers[b].first_use = p->buffers[b].last_use = -1;
    for (int L = 0; L < nl; L++) {
      const kir_kernel *k = p->kir->kernels[p->launches[L]];
      for (int i = 0; i < k->n_params; i++) {
        if (k->params[i].kind != KIR_PARAM_BUFFER) continue;
        gc_plan_buffer *b = &p->buffers[k->params[i].binding];
        if (b->first_use < 0) b->first_use = L;
        b->last_use = L;
      }
    }
    for (int b = 0; b < nb; b++)
      if (written[b]) p->buffers[b].last_use = nl - 1;
    p->n_prologue = n;
  }
  free(written);
  free(pro);
  free(order);
  return 0;
}
