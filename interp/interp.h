/* interp.h - the reference interpreter: slow, simple, the oracle for every backend.
 *
 * Runs a verified, fully specialized graph on host tensors. Every value is
 * stored in its own dtype (so f16/bf16 rounding matches the graph's meaning);
 * reductions, matmul, conv and normalizations accumulate in float64 (int64 for
 * integer sums). It shares no code with codegen on purpose, except the scalar
 * conversions of ir/dtype.c (the f16/bf16 rounding rule, written once and
 * checked against independent references by tests/test_dtype.c).
 */
#ifndef GC_INTERP_H
#define GC_INTERP_H

#include "ir/dtype.h"
#include "ir/ir.h"
#include "weights/safetensors.h"

/* inputs: one per graph argument, checked by the caller for dtype/shape.
 * outputs: one per graph output, caller-allocated with the right nbytes.
 * Run-time errors (gather index out of range, out of memory) are reported at
 * the op's source position; returns GRAPHC_STATUS_OK or the error status. */
graphc_status_t gc_interp_run(const gc_graph *g, const gc_safetensors *weights,
                              const graphc_tensor_t *inputs, int n_inputs,
                              graphc_tensor_t *outputs, int n_outputs, gc_diags *d);

/* The memory of one state (`state %k: T = "name"`): host bytes of its type that the
 * run reads and cache_write updates in place. */
typedef struct gc_interp_state {
  const char *name;
  void *data;
  size_t nbytes;
} gc_interp_state;

/* gc_interp_run for a graph with states: states[0..n_states) by name (a state the
 * graph declares and the list lacks, or of another size, is an error). */
graphc_status_t gc_interp_run_states(const gc_graph *g, const gc_safetensors *weights,
                                     const gc_interp_state *states, int n_states,
                                     const graphc_tensor_t *inputs, int n_inputs,
                                     graphc_tensor_t *outputs, int n_outputs, gc_diags *d);


#endif
