/* lower_common.h - shared helpers of the lowering suites (test_lower.c,
 * test_lower_matmul.c), defined in lower_common.c: a graph-text builder, the
 * structural plan checks, and run_case_w, which lowers a graph for both targets
 * (fused and unfused), checks each plan, compares its values on the host evaluator
 * with the interpreter and compiles the CUDA module.
 */
#ifndef GRAPHC_TESTS_LOWER_COMMON_H
#define GRAPHC_TESTS_LOWER_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/codegen.h"
#include "codegen/emit.h"
#include "codegen/lower.h"
#include "driver/launch_build.h"
#include "tests/cuda_testutil.h"
#include "tests/testutil.h"

/* The run's random seed (set by each suite's main, printed on failure). */
extern uint64_t g_seed;
/* Tensor-core tile forced on CUDA targets (kir_target.tc_bm / tc_bn; 0: the heuristic),
 * and the other kir_target overrides of lower_common.c. */
extern int g_tc_tile[2], g_no_wgmma, g_tc_sms, g_wgmma_short_k, g_no_tma, g_loop_vecs;
extern int64_t g_simt_unroll_macs;
/* Host plans: kir_target.simd_bytes (0: the default), and run_case_w on the fused host
 * plan only, which must use scratch arrays (the packed matmul). */
extern int g_host_simd, g_host_packed;
/* 1: run_case_w evaluates CUDA plans but does not compile them through NVRTC / LLVM and
 * ptxas (for variants whose code another case of the same suite compiles already). */
extern int g_no_compile;

static const char *const FLOATS[] = {"f32", "f16", "bf16", "f64"};
static const char *const NUMERIC[] = {"f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8"};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- graph builder ---- */

/* A graph under construction: args (with data kinds), statements, returns. */
typedef struct gb {
  gc_sbuf args, body, rets, rtys;
  char kinds[64];
  int na, nr;
} gb;

/* Argument %name: type, random data of `kind` (see cuda_testutil.h). */
void gb_arg(gb *b, const char *name, const char *type, char kind);
/* One statement (printf-style, without the trailing ';'). */
void gb_op(gb *b, const char *fmt, ...);
/* Return %val of type `type`. */
void gb_ret(gb *b, const char *val, const char *type);
/* The whole text (malloc'd); frees the builder's buffers. */
char *gb_text(gb *b);
/* "f32[dims]" in a static ring (for building texts). */
const char *ty(const char *dt, const char *dims);
/* f32 f16 bf16 f64 */
int is_float_name(const char *dt);

/* ---- plan checks ---- */

/* Does kernel k write plan buffer `buf`? */
int kernel_writes(const kir_kernel *k, int buf);
/* Bytes a buffer occupies in the arena. */
size_t slot(const gc_plan_buffer *b);
/* Every structural property of a plan for graph g. */
void check_plan(const gc_plan *p, const gc_graph *g, kir_target_kind tk);

/* ---- running a case ---- */

/* Parse and verify text; fails the test with rendered diagnostics otherwise. */
gc_module *parse_ok(const char *text);
/* Lower for target t, fusion on or off; fails with diagnostics when lowering fails. */
gc_plan *lower_ok_f(const gc_graph *g, const gc_safetensors *w, kir_target_kind tk, int fuse);
/* Lower with fusion on (what gc_lower does). */
gc_plan *lower_ok(const gc_graph *g, const gc_safetensors *w, kir_target_kind tk);
/* Lower `text` (malloc'd; taken) for both targets, check structure, compare values with
 * the interpreter, compile the CUDA module. `irange` bounds index ('i') data. */
void run_case_w(char *text, int chain, int64_t irange, const gc_safetensors *w, gb *b_kinds);
/* Finish the builder and run it (no weights). */
void run_gb(gb *b, int chain, int64_t irange);

#endif
