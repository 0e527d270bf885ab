/* driver_init.c - what opening the GPU costs a new process: cuInit, reading
 * device attributes, retaining the primary context, the first allocation.
 * Part of benchmarks/cold_start.sh (the compile-latency work): graphc runs
 * the first and the third beside its own compile work.
 *
 * Build (on the GPU machine):
 *   gcc -O2 -I/usr/local/cuda/include benchmarks/driver_init.c -L/usr/local/cuda/lib64 -lcuda \
 *       -o driver_init
 */
#include <cuda.h>
#include <stdio.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(void) {
  double t0 = now_ms();
  CUresult r = cuInit(0);
  double t1 = now_ms();
  if (r != CUDA_SUCCESS) {
    printf("cuInit failed (%d) after %.1f ms\n", (int)r, t1 - t0);
    return 1;
  }
  CUdevice dev;
  int sms = 0;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuDeviceGet(&dev, 0) ||
      cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev))
    return 1;
  double t2 = now_ms();
  if (cuDevicePrimaryCtxRetain(&ctx, dev)) return 1;
  double t3 = now_ms();
  if (cuCtxSetCurrent(ctx) || cuMemAlloc(&p, 1 << 20)) return 1;
  double t4 = now_ms();
  printf("cuInit %.1f ms, attributes %.1f ms, primary context %.1f ms, first 1 MiB alloc %.1f ms\n",
         t1 - t0, t2 - t1, t3 - t2, t4 - t3);
  cuMemFree(p);
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
