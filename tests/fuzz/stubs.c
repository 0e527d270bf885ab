/* stubs.c - stand-ins for the code generators and the compiled backends, so
 * that the fuzz targets and the fault-injection test can link the frontend,
 * IR, interpreter, weights reader and public API from source without LLVM,
 * NVRTC or CUDA.
 *
 * Everything here reports GRAPHC_STATUS_UNSUPPORTED: these programs only use
 * the interpreter backend. The cpu backend's .prepare is NULL, which is how
 * runtime/api.c recognizes a build without a CPU backend.
 */
#include "codegen/codegen.h"
#include "codegen/lower.h"
#include "driver/exec.h"

/* Report that this program was built without code generation. */
static int no_codegen(gc_diags *d, const char *what) {
  gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0},
              "%s is not part of this build (interpreter-only test program)", what);
  return -1;
}

/* No CUDA here. */
int gc_cuda_available(const gc_rt_settings *s) { return 0; }
void *gc_cuda_hold_open(const gc_rt_settings *s) { return NULL; }
void gc_cuda_hold_free(void *hold) {}
void *gc_cuda_prefetch_start(const gc_rt_settings *s) { return NULL; }
void gc_cuda_prefetch_join(void *p) {}

/* CUDA backend stand-in: prepare refuses; release has nothing to free. */
static graphc_status_t stub_prepare(gc_exec *exe, const graphc_compile_options_t *opts,
                                    gc_diags *d) {
  no_codegen(d, "the cuda backend");
  return GRAPHC_STATUS_UNSUPPORTED;
}

/* Never reached: prepare always fails. */
static graphc_status_t stub_run(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                gc_diags *d) {
  return GRAPHC_STATUS_UNSUPPORTED;
}

/* Nothing to release. */
static void stub_release(gc_exec *exe) {}

const gc_backend gc_backend_cuda = {
    .name = "cuda", .prepare = stub_prepare, .run = stub_run, .release = stub_release};
/* .prepare NULL: "the cpu backend is not part of this build". */
const gc_backend gc_backend_cpu = {.name = "cpu", .prepare = NULL, .run = stub_run,
                                   .release = stub_release};

/* Lowering is unavailable: report and return no plan. */
gc_plan *gc_lower(const gc_graph *g, const kir_target *t, gc_diags *d) {
  no_codegen(d, "lowering to Kernel IR");
  return NULL;
}

/* Likewise with fusion chosen explicitly. */
gc_plan *gc_lower_opts(const gc_graph *g, const kir_target *t, int fuse, gc_diags *d) {
  return gc_lower(g, t, d);
}

/* Fusion is on unless disabled; irrelevant without lowering. */
int gc_lower_fusion_enabled(const graphc_compile_options_t *o) { return 1; }

/* gc_lower never returns a plan, so there is nothing to free. */
void gc_plan_free(gc_plan *p) {}

/* A zeroed target description (only ever passed to the stub gc_lower). */
void kir_target_cuda(kir_target *t, int sm) {
  *t = (kir_target){.kind = KIR_TARGET_CUDA, .sm = sm};
}

/* Unreachable without a plan. */
void kir_print(gc_sbuf *b, const kir_kernel *k) {}
int kir_module_uses_wgmma(const kir_module *m) { return 0; }
void gc_cuda_c_print(gc_sbuf *b, const kir_module *m) {}

/* NVRTC: unsupported. */
int gc_nvrtc_compile(const char *src, int sm, char **ptx, void **cubin, size_t *cubin_len,
                     const gc_toolchain *tc, gc_diags *d) {
  return no_codegen(d, "NVRTC");
}

/* LLVM: unsupported. */
int gc_llvm_ptx(const kir_module *m, int sm, char **ptx, char **ir_text, const gc_toolchain *tc,
                gc_diags *d) {
  return no_codegen(d, "LLVM");
}
int gc_llvm_ptx_ex(const kir_module *m, int sm, const gc_llvm_ptx_opts *opts, char **ptx,
                   gc_llvm_times *times, const gc_toolchain *tc, gc_diags *d) {
  if (times) *times = (gc_llvm_times){0};
  return no_codegen(d, "LLVM");
}

/* nvJitLink: unsupported. */
int gc_ptx_to_cubin(const char *ptx, int sm, void **cubin, size_t *cubin_len, const gc_toolchain *tc,
                    gc_diags *d) {
  return no_codegen(d, "nvJitLink");
}
int gc_ptx_to_cubin_ex(const char *ptx, int sm, void **cubin, size_t *cubin_len, const char **via,
                       const gc_toolchain *tc, gc_diags *d) {
  return no_codegen(d, "nvJitLink");
}
