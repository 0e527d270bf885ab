/* plan_compile.h - compile a lowered plan's Kernel IR both ways and let ptxas
 * judge the PTX (sm_90, or another sm), without a GPU: CUDA C through NVRTC, LLVM IR through
 * NVPTX. Shared by test_lower.c and test_fusion.c. Header-only (static). */
#ifndef GC_PLAN_COMPILE_H
#define GC_PLAN_COMPILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/lower.h"
#include "tests/testutil.h"

/* ptxas on PTX text for sm_<sm>, or sm_90a for PTX that targets it (Hopper warpgroup MMAs;
 * tag names the temporary file). */
static void pc_ptxas_ok_sm(const char *ptx, const char *tag, int sm) {
  static int n;
  char path[512], cmd[1200];
  snprintf(path, sizeof path, "%s/plan_%s_%d.ptx", tu_tmpdir(), tag, n++);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(ptx, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s -arch=sm_%d%s %s -o /dev/null", GRAPHC_PTXAS, sm,
           strstr(ptx, ".target sm_90a") ? "a" : "", path);
  char *out = NULL;
  int st = tu_run_cmd(cmd, &out);
  ck_assert_msg(st == 0, "ptxas rejected %s: %s", path, out ? out : "");
  free(out);
  remove(path);
}

/* CUDA C through NVRTC (every kernel must be an entry of the PTX) and LLVM IR
 * through NVPTX, both PTXs through ptxas for sm_<sm> (a plan lowered for that target);
 * label prefixes the failure messages. */
static void pc_compile_plan_sm(const gc_plan *p, const char *label, int sm) {
  gc_sbuf b = {0};
  gc_cuda_c_print(&b, p->kir);
  char *src = gc_sbuf_take(&b);
  ck_assert_ptr_nonnull(src);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  char *ptx = NULL;
  int rc = gc_nvrtc_compile(src, gc_module_sm(p->kir, sm), &ptx, NULL, NULL, tu_toolchain(), &d);
  if (rc != 0) {
    char *r = gc_diags_render(&d);
    fprintf(stderr, "%s: %s\n--- source ---\n%s\n", label, r ? r : "?", src);
    free(r);
  }
  ck_assert_msg(rc == 0, "%s: NVRTC failed", label);
  for (int i = 0; i < p->kir->n_kernels; i++) {
    char entry[160];
    snprintf(entry, sizeof entry, ".entry %s(", p->kir->kernels[i]->name);
    ck_assert_msg(strstr(ptx, entry) != NULL, "%s: PTX lacks %s", label, entry);
  }
  pc_ptxas_ok_sm(ptx, "nvrtc", sm);
  free(ptx);
  ptx = NULL;
  rc = gc_llvm_ptx(p->kir, sm, &ptx, NULL, tu_toolchain(), &d);
  if (rc != 0) {
    char *r = gc_diags_render(&d);
    fprintf(stderr, "%s: LLVM: %s\n", label, r ? r : "?");
    free(r);
  }
  ck_assert_msg(rc == 0, "%s: LLVM NVPTX failed", label);
  pc_ptxas_ok_sm(ptx, "llvm", sm);
  free(ptx);
  free(src);
  gc_diags_free(&d);
}

static void pc_compile_plan(const gc_plan *p, const char *label) { pc_compile_plan_sm(p, label, 90); }

#endif /* GC_PLAN_COMPILE_H */
