/* launch_build.h - from codegen's plan to the runtime's launch plan, for every
 * target, and the binding of the weights to the plan's params.
 *
 *   gc_lower (codegen/lower.h) --> gc_plan, params as CONST buffers with no data
 *     --gc_plan_bind_weights(weights)--> each param's data is its tensor's
 *     --gc_launch_plan_build--> gc_launch_plan (runtime/launch_plan.h)
 *         --> cuda_exec.c (CUDA backend), host_exec.c (CPU backend), bundle.c (AOT)
 *
 * The driver joins codegen and the runtime here: neither includes the other.
 */
#ifndef GC_LAUNCH_BUILD_H
#define GC_LAUNCH_BUILD_H

#include "codegen/lower.h"
#include "runtime/launch_plan.h"
#include "weights/safetensors.h"

/* Point every param const of p at the tensor of w with its name (once, by name);
 * a param whose file dtype differs (`param ... from f32`) gets the tensor converted
 * to its dtype once, into p's arena, so only the converted bytes reach the device
 * or a bundle.
 * gc_weights_check (weights/safetensors.h) has already compared each param with
 * its tensor when compiling through the API; here a missing tensor, or one
 * whose type or size does not fit the buffer, is reported at the param
 * (WEIGHTS_ERROR) and -1 returned. w NULL: nothing is bound (code generation
 * only), 0. The data stays w's: w must outlive the plan's use. */
int gc_plan_bind_weights(gc_plan *p, const gc_safetensors *w, gc_diags *d);

/* The launch plan of p with the given signature. Const data is borrowed from
 * the plan (list consts) or the bound weights (params, marked is_param). lp is
 * initialized by the call; free with gc_launch_plan_free. 0, or -1 reported to
 * d (out of memory, or a plan that fails gc_launch_plan_check). */
int gc_launch_plan_build(const gc_plan *p, const graphc_tensor_info_t *in, size_t n_in,
                         const graphc_tensor_info_t *out, size_t n_out, gc_launch_plan *lp,
                         gc_diags *d);

#endif /* GC_LAUNCH_BUILD_H */
