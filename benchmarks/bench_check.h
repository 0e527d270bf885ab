/* bench_check.h - error checks shared by the standalone GPU benchmark programs
 * (gemm_peer.c, ptx_jit_bench.c): a failed call prints its text and the
 * result's name, prefixed with BENCH_NAME, and exits. */
#ifndef GC_BENCH_CHECK_H
#define GC_BENCH_CHECK_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef BENCH_NAME
#error "define BENCH_NAME (the program's name) before including bench_check.h"
#endif

/* A CUDA driver call. */
#define CK(x)                                                                   \
  do {                                                                          \
    CUresult r_ = (x);                                                          \
    if (r_ != CUDA_SUCCESS) {                                                   \
      const char *s_ = NULL;                                                    \
      cuGetErrorName(r_, &s_);                                                  \
      fprintf(stderr, BENCH_NAME ": %s failed: %s\n", #x, s_ ? s_ : "?");       \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

/* A library call returning a status enum whose success value is `ok`. */
#define CK_STATUS(x, ok)                                                        \
  do {                                                                          \
    int s_ = (int)(x);                                                          \
    if (s_ != (int)(ok)) {                                                      \
      fprintf(stderr, BENCH_NAME ": %s failed: status %d\n", #x, s_);           \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

#endif /* GC_BENCH_CHECK_H */
