/* dtype_masks.h - dtype classes as bit masks, for the tests that pick dtypes per
 * op family (test_backend_ops.c, test_cpu_backend.c, random_graph_gen.c):
 * M(t) one dtype, MF floats, MI integers, MN numbers, MB bool, MA all but fp8 (M8),
 * MS all. */
#ifndef GC_TEST_DTYPE_MASKS_H
#define GC_TEST_DTYPE_MASKS_H

#include "graphc/graphc.h"

#define M(t) (1u << (t))
#define MF (M(GRAPHC_DTYPE_F64) | M(GRAPHC_DTYPE_F32) | M(GRAPHC_DTYPE_F16) | M(GRAPHC_DTYPE_BF16))
#define MI (M(GRAPHC_DTYPE_I64) | M(GRAPHC_DTYPE_I32) | M(GRAPHC_DTYPE_I8) | M(GRAPHC_DTYPE_U8))
#define MN (MF | MI)
#define MB M(GRAPHC_DTYPE_BOOL)
#define MA (MN | MB)
#define M8 (M(GRAPHC_DTYPE_F8E4M3) | M(GRAPHC_DTYPE_F8E5M2))
#define MS (MA | M8) /* storage: every dtype (params, consts, casts, data movement) */

#endif /* GC_TEST_DTYPE_MASKS_H */
