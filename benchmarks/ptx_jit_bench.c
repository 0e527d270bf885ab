/* ptx_jit_bench.c - how long each way of turning graphc's PTX into a loaded
 * module takes on the machine it runs on (the compile-latency work).
 *
 *   ptx_jit_bench MODE FILE.ptx CALLS
 *
 * MODE:
 *   nvjitlink    nvJitLink -O3 -split-compile=8 (graphc's PTX -> cubin step), then load the cubin
 *   nvjitlink1   the same without -split-compile
 *   culink       the driver's linker (cuLinkCreate/AddData/Complete, O4 = -O3,
 *                CU_JIT_SPLIT_COMPILE 8), then load the cubin it returns
 *   culink1      the same without the split
 *   modload      cuModuleLoadDataEx on the PTX (the driver JITs it; its disk
 *                cache should be off: CUDA_CACHE_DISABLE=1)
 * Each of CALLS calls in this process is timed (wall ms, create to loaded
 * module); prints "MODE first F ms, rest median M ms (n), cubin B bytes".
 * Without a device (cuInit fails), or with PTX_JIT_BENCH_NO_CUDA=1 (the driver is then never
 * initialized, as in `graphc compile -o x.gcx`), the nvjitlink modes time PTX -> cubin only,
 * for sm_90.
 *
 * Build (on the GPU machine):
 *   gcc -O2 -I/usr/local/cuda/include benchmarks/ptx_jit_bench.c -L/usr/local/cuda/lib64 \
 *       -lcuda -lnvJitLink -o ptx_jit_bench
 */
#include <cuda.h>
#include <nvJitLink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "ptx_jit_bench"
#include "bench_check.h"
#define JL(x) CK_STATUS(x, NVJITLINK_SUCCESS)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
  s[n] = 0;
  fclose(f);
  return s;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One PTX -> loaded module; returns the cubin's size (0 for modload). */
static int g_device = 1;

static size_t once(const char *mode, const char *ptx, const char *arch) {
  CUmodule mod = NULL;
  size_t size = 0;
  if (!strncmp(mode, "nvjitlink", 9)) {
    const char *opts[] = {arch, "-O3", "-Xptxas=-split-compile=8"};
    nvJitLinkHandle h;
    JL(nvJitLinkCreate(&h, strcmp(mode, "nvjitlink1") ? 3 : 2, opts));
    JL(nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx, strlen(ptx) + 1, "graphc.ptx"));
    JL(nvJitLinkComplete(h));
    JL(nvJitLinkGetLinkedCubinSize(h, &size));
    void *cubin = malloc(size);
    JL(nvJitLinkGetLinkedCubin(h, cubin));
    JL(nvJitLinkDestroy(&h));
    if (!g_device) {
      free(cubin);
      return size;
    }
    CK(cuModuleLoadData(&mod, cubin));
    free(cubin);
  } else if (!strncmp(mode, "culink", 6)) {
    CUjit_option o[2] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_SPLIT_COMPILE};
    void *v[2] = {(void *)(size_t)4, (void *)(size_t)8};
    CUlinkState ls;
    CK(cuLinkCreate(strcmp(mode, "culink1") ? 2 : 1, o, v, &ls));
    CK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, "graphc.ptx", 0, NULL, NULL));
    void *cubin;
    CK(cuLinkComplete(ls, &cubin, &size));
    CK(cuModuleLoadData(&mod, cubin));
    CK(cuLinkDestroy(ls));
  } else if (!strcmp(mode, "modload")) {
    CK(cuModuleLoadDataEx(&mod, ptx, 0, NULL, NULL));
  } else {
    fprintf(stderr, "ptx_jit_bench: unknown mode %s\n", mode);
    exit(2);
  }
  CK(cuModuleUnload(mod));
  return size;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: ptx_jit_bench nvjitlink|nvjitlink1|culink|culink1|modload FILE.ptx CALLS\n");
    return 2;
  }
  int calls = atoi(argv[3]);
  if (calls < 1 || calls > 1000) calls = 1;
  char *ptx = read_text(argv[2]);
  CUdevice dev = 0;
  CUcontext ctx;
  int maj = 9, min = 0;
  const char *no_cuda = getenv("PTX_JIT_BENCH_NO_CUDA");
  if ((no_cuda && !strcmp(no_cuda, "1")) || cuInit(0) != CUDA_SUCCESS) {
    if (strncmp(argv[1], "nvjitlink", 9)) {
      fprintf(stderr, "ptx_jit_bench: no CUDA device for %s\n", argv[1]);
      return 1;
    }
    g_device = 0;
  } else {
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CK(cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  }
  char arch[32];
  snprintf(arch, sizeof arch, "-arch=sm_%d%d", maj, min);
  double *t = malloc(sizeof *t * (size_t)calls);
  size_t size = 0;
  for (int i = 0; i < calls; i++) {
    double t0 = now_ms();
    size = once(argv[1], ptx, arch);
    t[i] = now_ms() - t0;
  }
  double first = t[0], med = 0;
  if (calls > 1) {
    qsort(t + 1, (size_t)calls - 1, sizeof *t, cmp_d);
    med = t[1 + (calls - 1) / 2];
  }
  printf("%-10s %s: first %.1f ms, rest median %.1f ms (%d), cubin %zu bytes\n", argv[1], argv[2], first, med,
         calls - 1, size);
  free(t);
  free(ptx);
  if (g_device) CK(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
