/* test_llm.c - Hugging Face Llama-family checkpoints (llm/, graphc_llm.h) against an
 * independent numpy reference.
 *
 * tests/llm/make_tiny_llama.py writes tiny random checkpoints in Hugging Face's layout
 * (numpy only: f32 / f16 / bf16, GQA 4 heads over 2 key/value heads, Qwen2's biases,
 * llama3 RoPE scaling, Mistral, 2 shards); tests/llm/ref_llama.py computes their logits
 * with transformers' math written plainly, and its greedy continuations. The generated
 * graph runs on the interpreter and the cpu backend (and cuda where there is a GPU) and
 * must match (f32: max |error| <= 1e-4 x max |logit|), its argmax the reference's greedy
 * token wherever the top two logits are apart: the stateless graph at several B, S and
 * positions, and through the KV cache token by token, in chunks, and as prefill + decode
 * executables sharing their states.
 * The error cases check each message (file and key or tensor named). Tests that need
 * numpy are skipped without it (as test_onnx's node tests are without onnx).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/fusion.h"
#include "driver/exec.h"
#include "frontend/parser.h"
#include "graphc/graphc_llm.h"
#include "passes/pipeline.h"
#include "weights/safetensors.h"
#include "testutil.h"

#define V_TINY 256  /* make_tiny_llama.py's vocabulary */

static int g_gpu;  /* a CUDA device is there (probed in main, before Check forks) */

/* Is numpy there for the scripts? (Once per test process.) */
static int have_numpy(void) {
  static int have = -1;
  if (have < 0) have = tu_sh(NULL, "python3 -c 'import numpy' 2>/dev/null") == 0;
  return have;
}

#define NEED_NUMPY(name)                                                              \
  do {                                                                                \
    if (!have_numpy()) {                                                              \
      printf("SKIPPED %s: python3 with numpy is needed (tools/dev.sh installs it)\n", \
             name);                                                                   \
      return;                                                                         \
    }                                                                                 \
  } while (0)

/* A tiny checkpoint from make_tiny_llama.py with `args`; its folder (static ring). */
static const char *make_ckpt(const char *tag, const char *args) {
  static char ring[4][600];
  static int k;
  char *dir = ring[k++ & 3];
  snprintf(dir, sizeof ring[0], "%s", tu_fresh_dir(tag));
  TU_SH_OK("cd %s && python3 make_tiny_llama.py %s %s 2>&1", tu_src("tests/llm"), dir, args);
  return dir;
}

/* A batch of inputs: ids [B, S] (random in the vocabulary), pos [B], last [B]. */
typedef struct batch {
  int B, S;
  int32_t ids[64], pos[8], last[8];
} batch;

static batch make_batch(int B, int S, uint32_t seed) {
  batch x = {.B = B, .S = S};
  ck_assert(B * S <= 64 && B <= 8);
  for (int i = 0; i < B * S; i++) {
    seed = seed * 1664525u + 1013904223u;
    x.ids[i] = (int32_t)((seed >> 8) % V_TINY);
  }
  for (int b = 0; b < B; b++) x.last[b] = S - 1 - (b % 2) * (S / 2);  /* padded rows end early */
  return x;
}

static gc_st_tensor i32_tensor(const char *name, const int32_t *data, int rank, int64_t d0, int64_t d1) {
  gc_st_tensor t = {.name = name, .dtype = GRAPHC_DTYPE_I32, .rank = rank, .data = data};
  t.dims[0] = d0;
  t.dims[1] = d1;
  t.nbytes = (size_t)(d0 * (rank > 1 ? d1 : 1)) * 4;
  return t;
}

/* ref_llama.py on `x` with `steps` greedy steps after it: logits [steps+1, B, V] and
 * next [steps+1, B] (free with gc_safetensors_free). */
static gc_safetensors *run_ref(const char *dir, const batch *x, int steps) {
  static int n;
  char in[1024], out[1024];
  snprintf(in, sizeof in, "%s/ref_in_%d_%d.safetensors", tu_tmpdir(), (int)getpid(), n);
  snprintf(out, sizeof out, "%s/ref_out_%d_%d.safetensors", tu_tmpdir(), (int)getpid(), n++);
  gc_st_tensor ts[3] = {i32_tensor("ids", x->ids, 2, x->B, x->S), i32_tensor("pos", x->pos, 1, x->B, 0),
                        i32_tensor("last", x->last, 1, x->B, 0)};
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_eq(gc_safetensors_write(in, ts, 3, &d), 0);
  gc_diags_free(&d);
  TU_SH_OK("cd %s && python3 ref_llama.py %s --inputs %s --output %s --steps %d 2>&1", tu_src("tests/llm"), dir, in,
           out, steps);
  gc_diags_init(&d, "", NULL, 0);
  gc_safetensors *r = gc_safetensors_load(out, &d);
  ck_assert_msg(r, "%s", d.n ? d.items[0].msg : "?");
  gc_diags_free(&d);
  return r;
}

/* The model of `dir`, bound to the batch's B and S (and K = kv when stateful). */
static graphc_model_t *load_bound(graphc_context_t *ctx, const char *dir, const graphc_llm_options_t *lo, int B, int S,
                                  int K, graphc_llm_info_t *info) {
  graphc_error_t err;
  graphc_model_t *m = NULL;
  graphc_status_t st = graphc_llm_load(ctx, dir, lo, &m, info, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "graphc_llm_load(%s): %s\n%s", dir, err.message, graphc_context_diagnostics(ctx));
  ck_assert_int_eq(graphc_model_bind(m, "B", B, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(m, "S", S, &err), GRAPHC_STATUS_OK);
  if (!lo->stateless) ck_assert_int_eq(graphc_model_bind(m, "K", K, &err), GRAPHC_STATUS_OK);
  return m;
}

static graphc_executable_t *compile_on(graphc_context_t *ctx, graphc_model_t *m, graphc_backend_t be) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_compile(m, &o, &exe, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "compile on %s: %s\n%s", graphc_backend_name(be), err.message,
                graphc_context_diagnostics(ctx));
  return exe;
}

/* Run exe on x: logits [B, V], next [B]. */
static void run_exe(graphc_executable_t *exe, const batch *x, float *logits, int32_t *next) {
  graphc_tensor_t in[3] = {
      {GRAPHC_DTYPE_I32, 2, {x->B, x->S}, (void *)x->ids, (size_t)(x->B * x->S) * 4},
      {GRAPHC_DTYPE_I32, 1, {x->B}, (void *)x->pos, (size_t)x->B * 4},
      {GRAPHC_DTYPE_I32, 1, {x->B}, (void *)x->last, (size_t)x->B * 4},
  };
  graphc_tensor_t out[2] = {
      {GRAPHC_DTYPE_F32, 2, {x->B, V_TINY}, logits, (size_t)x->B * V_TINY * 4},
      {GRAPHC_DTYPE_I32, 1, {x->B}, next, (size_t)x->B * 4},
  };
  graphc_error_t err;
  graphc_status_t st = graphc_executable_run(exe, in, 3, out, 2, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "run: %s", err.message);
}

/* Row b of got vs row b of the reference's step `step` (rows of B): max |error| <= tol x
 * max |ref|; the greedy token equal wherever the reference's top two logits are further
 * apart than the error allows. */
static void compare_row(const char *label, const float *got, int32_t got_next, const gc_safetensors *ref, int step,
                        int b, int B, double tol) {
  const gc_st_tensor *rl = gc_safetensors_find(ref, "logits"), *rn = gc_safetensors_find(ref, "next");
  ck_assert(rl && rn && rl->dims[1] == B && rl->dims[2] == V_TINY && step < rl->dims[0]);
  const float *r = (const float *)rl->data + ((size_t)step * B + b) * V_TINY;
  int32_t rnext = ((const int32_t *)rn->data)[(size_t)step * B + b];
  double maxref = 0, maxerr = 0, top = -INFINITY, second = -INFINITY;
  for (int v = 0; v < V_TINY; v++) {
    maxref = fmax(maxref, fabs(r[v]));
    maxerr = fmax(maxerr, fabs((double)got[v] - r[v]));
    if (r[v] > top) second = top, top = r[v];
    else if (r[v] > second) second = r[v];
  }
  ck_assert_msg(maxerr <= tol * maxref, "%s: row %d, step %d: max |error| %.3g > %.3g x max |logit| %.3g", label, b,
                step, maxerr, tol, maxref);
  if (top - second > 4 * tol * maxref)
    ck_assert_msg(got_next == rnext, "%s: row %d, step %d: greedy token %d, the reference's %d", label, b, step,
                  got_next, rnext);
}

/* Every row of got ([B, V]) vs the reference's step `step`. */
static void compare(const char *label, const float *got, const int32_t *got_next, const gc_safetensors *ref, int step,
                    int B, double tol) {
  for (int b = 0; b < B; b++) compare_row(label, got + (size_t)b * V_TINY, got_next[b], ref, step, b, B, tol);
}

/* The stateless graph of `dir` at (B, S) on the interpreter and the cpu backend against
 * the reference, within `tol`; row b's tokens at positions pos0 * (b + 1) + i (RoPE far
 * out; the rows still see only their own tokens). */
static void check_stateless_on(const char *dir, int B, int S, double tol, uint32_t seed, int pos0, int n_backends,
                               const graphc_backend_t *backends) {
  batch x = make_batch(B, S, seed);
  for (int b = 0; b < B; b++) x.pos[b] = pos0 * (b + 1);
  gc_safetensors *ref = run_ref(dir, &x, 0);
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.stateless = 1;
  lo.max_batch = 4;
  lo.max_context = 32;
  for (int k = 0; k < n_backends; k++) {
    graphc_model_t *m = load_bound(ctx, dir, &lo, B, S, 0, NULL);
    graphc_executable_t *exe = compile_on(ctx, m, backends[k]);
    float logits[8 * V_TINY];
    int32_t next[8];
    run_exe(exe, &x, logits, next);
    char label[800];
    snprintf(label, sizeof label, "%s B=%d S=%d on %s", dir, B, S, graphc_backend_name(backends[k]));
    compare(label, logits, next, ref, 0, B, tol);
    graphc_executable_destroy(exe);
    graphc_model_destroy(m);
  }
  graphc_context_destroy(ctx);
  gc_safetensors_free(ref);
}

static void check_stateless(const char *dir, int B, int S, double tol, uint32_t seed, int pos0) {
  static const graphc_backend_t host[2] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU};
  check_stateless_on(dir, B, S, tol, seed, pos0, 2, host);
}

/* ---- matching the reference ------------------------------------------------------------- */

START_TEST(stateless_f32_shapes) {
  NEED_NUMPY("stateless_f32_shapes");
  const char *dir = make_ckpt("llama_f32", "--seed 1");
  check_stateless(dir, 1, 7, 1e-4, 11, 0);
  check_stateless(dir, 3, 5, 1e-4, 12, 0);
  check_stateless(dir, 2, 1, 1e-4, 13, 0);
  check_stateless(dir, 2, 4, 1e-4, 14, 50);
}
END_TEST

START_TEST(stateless_f32_variants) {
  NEED_NUMPY("stateless_f32_variants");
  /* Qwen2: q/k/v biases, tied embeddings, theta 1e6 */
  check_stateless(make_ckpt("qwen2", "--arch qwen2 --tie --seed 2"), 2, 6, 1e-4, 21, 0);
  /* llama3 RoPE scaling (theta 5e5, original context 32: all three frequency bands, at
   * positions 60.. and 120..), Llama's attention_bias (q/k/v and o_proj biases), plain
   * multi-head attention: 2 heads of 32 */
  check_stateless(make_ckpt("llama3", "--rope-llama3 --attention-bias --heads 2 --kv-heads 2 --seed 3"), 2, 6, 1e-4,
                  22, 60);
  /* Mistral (its sliding_window = max_position_embeddings: no effect) */
  check_stateless(make_ckpt("mistral", "--arch mistral --seed 4"), 2, 6, 1e-4, 23, 0);
  /* two shards and model.safetensors.index.json */
  check_stateless(make_ckpt("shards", "--shards 2 --seed 5"), 2, 6, 1e-4, 24, 0);
}
END_TEST

START_TEST(stateless_half) {
  NEED_NUMPY("stateless_half");
  /* f16 / bf16 weights used as they are; the reference rounds each op's result to the
   * dtype as torch does, the interpreter once per op from float64: a few units in the
   * last place of the dtype apart */
  check_stateless(make_ckpt("llama_f16", "--dtype f16 --seed 6"), 2, 6, 2e-3, 31, 0);
  check_stateless(make_ckpt("llama_bf16", "--dtype bf16 --seed 7"), 2, 6, 2e-2, 32, 0);
}
END_TEST

static void check_prefill_decode(const char *dir, double tol, uint32_t seed, int n_backends,
                                 const graphc_backend_t *backends);

/* On the GPU: the stateless graph in f32 (full precision), and f16 / bf16 through the
 * flash-attention kernel (f32 scores where the reference rounds them: 4x the host
 * tolerance, as test_fusion); prefill + decode through the cache in f32 and f16. */
START_TEST(cuda_matches_reference) {
  NEED_NUMPY("cuda_matches_reference");
  if (!g_gpu) {
    printf("SKIPPED cuda_matches_reference: no CUDA device\n");
    return;
  }
  static const graphc_backend_t cuda[1] = {GRAPHC_BACKEND_CUDA};
  check_stateless_on(make_ckpt("gpu_f32", "--seed 41"), 2, 6, 1e-4, 41, 0, 1, cuda);
  check_stateless_on(make_ckpt("gpu_f16", "--dtype f16 --seed 42"), 2, 32, 8e-3, 42, 0, 1, cuda);
  check_stateless_on(make_ckpt("gpu_bf16", "--dtype bf16 --seed 43 --arch qwen2"), 2, 32, 8e-2, 43, 0, 1, cuda);
  check_prefill_decode(make_ckpt("gpu_cache", "--seed 44"), 1e-4, 44, 1, cuda);
  check_prefill_decode(make_ckpt("gpu_cache_f16", "--dtype f16 --seed 45"), 8e-3, 45, 1, cuda);
}
END_TEST

/* ---- the KV cache --------------------------------------------------------------------------- */

/* The stateful model of `dir` (Bmax rows, T positions) bound to (B, S, K). */
static graphc_model_t *load_stateful(graphc_context_t *ctx, const char *dir, int Bmax, int T, int B, int S, int K) {
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.max_batch = Bmax;
  lo.max_context = T;
  graphc_error_t err;
  graphc_model_t *m = NULL;
  graphc_status_t st = graphc_llm_load(ctx, dir, &lo, &m, NULL, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s\n%s", err.message, graphc_context_diagnostics(ctx));
  ck_assert_int_eq(graphc_model_bind(m, "B", B, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(m, "S", S, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(m, "K", K, &err), GRAPHC_STATUS_OK);
  return m;
}

/* One token per call (S = 1) through the cache: two rows, prompts of 5 and 3 tokens, each
 * row's prompt fed at positions 0, 1, ... and then its own greedy tokens; the logits at
 * and after each prompt's end against the reference's greedy steps. */
START_TEST(stateful_token_by_token) {
  NEED_NUMPY("stateful_token_by_token");
  const char *dir = make_ckpt("decode", "--seed 8");
  enum { B = 2, STEPS = 4 };
  batch x = make_batch(B, 5, 81);  /* last = [4, 2]: prompts of 5 and 3 tokens */
  gc_safetensors *ref = run_ref(dir, &x, STEPS);
  static const graphc_backend_t backends[2] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU};
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  for (int k = 0; k < 2; k++) {
    graphc_model_t *m = load_stateful(ctx, dir, B, 16, B, 1, 16);
    graphc_executable_t *exe = compile_on(ctx, m, backends[k]);
    int32_t gen[B][STEPS + 1];
    int t_end = 0;
    for (int b = 0; b < B; b++) t_end = t_end > x.last[b] + STEPS ? t_end : x.last[b] + STEPS;
    for (int t = 0; t <= t_end; t++) {
      batch in = {.B = B, .S = 1};
      for (int b = 0; b < B; b++) {
        int j = t - x.last[b];  /* the row's step: 0 at its prompt's last token */
        in.ids[b] = j <= 0 ? x.ids[b * 5 + t] : j - 1 <= STEPS ? gen[b][j - 1] : 0;
        in.pos[b] = t;
      }
      float logits[B * V_TINY];
      int32_t next[B];
      run_exe(exe, &in, logits, next);
      for (int b = 0; b < B; b++) {
        int j = t - x.last[b];
        if (j < 0 || j > STEPS) continue;
        char label[700];
        snprintf(label, sizeof label, "%s token by token on %s", dir, graphc_backend_name(backends[k]));
        compare_row(label, logits + b * V_TINY, next[b], ref, j, b, B, 1e-4);
        gen[b][j] = next[b];
      }
    }
    graphc_executable_destroy(exe);
    graphc_model_destroy(m);
  }
  graphc_context_destroy(ctx);
  gc_safetensors_free(ref);
}
END_TEST

/* A prompt in chunks of 3 (S = 3, K = 8, positions 0 and 3): the second call attends over
 * the first's keys in the cache; its last token's logits against the whole prompt's. */
START_TEST(stateful_chunked_prefill) {
  NEED_NUMPY("stateful_chunked_prefill");
  const char *dir = make_ckpt("chunks", "--seed 9 --arch qwen2");
  enum { B = 2, S = 6 };
  batch x = make_batch(B, S, 91);
  for (int b = 0; b < B; b++) x.last[b] = S - 1;
  gc_safetensors *ref = run_ref(dir, &x, 0);
  static const graphc_backend_t backends[2] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU};
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  for (int k = 0; k < 2; k++) {
    graphc_model_t *m = load_stateful(ctx, dir, 4, 32, B, 3, 8);
    graphc_executable_t *exe = compile_on(ctx, m, backends[k]);
    float logits[B * V_TINY];
    int32_t next[B];
    for (int c = 0; c < 2; c++) {
      batch in = {.B = B, .S = 3};
      for (int b = 0; b < B; b++) {
        memcpy(&in.ids[b * 3], &x.ids[b * S + 3 * c], 3 * sizeof(int32_t));
        in.pos[b] = 3 * c;
        in.last[b] = 2;
      }
      run_exe(exe, &in, logits, next);
    }
    char label[700];
    snprintf(label, sizeof label, "%s in chunks on %s", dir, graphc_backend_name(backends[k]));
    compare(label, logits, next, ref, 0, B, 1e-4);
    graphc_executable_destroy(exe);
    graphc_model_destroy(m);
  }
  graphc_context_destroy(ctx);
  gc_safetensors_free(ref);
}
END_TEST

/* Prefill and decode as two executables sharing the cache (graphc_executable_share_states):
 * prompts of 6 and 3 tokens padded to S = 6 (the padding's keys land in the cache past row
 * 1's prompt, masked, then overwritten by its decode steps), then S = 1 steps with K = 12
 * (fewer positions read than the cache holds), each fed the greedy token of the step
 * before; then reset_states and the same prefill again: the same logits. */
static void check_prefill_decode(const char *dir, double tol, uint32_t seed, int n_backends,
                                 const graphc_backend_t *backends) {
  enum { B = 2, S = 6, STEPS = 5 };
  batch x = make_batch(B, S, seed);  /* last = [5, 2] */
  gc_safetensors *ref = run_ref(dir, &x, STEPS);
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  for (int k = 0; k < n_backends; k++) {
    graphc_model_t *mp = load_stateful(ctx, dir, 4, 24, B, S, S);
    graphc_model_t *md = load_stateful(ctx, dir, 4, 24, B, 1, 12);
    graphc_executable_t *pre = compile_on(ctx, mp, backends[k]), *dec = compile_on(ctx, md, backends[k]);
    graphc_error_t err;
    ck_assert_int_eq(graphc_executable_share_states(dec, pre, &err), GRAPHC_STATUS_OK);
    ck_assert_int_eq(graphc_executable_num_states(dec), 4);  /* k and v of 2 layers */
    char label[700];
    snprintf(label, sizeof label, "%s prefill + decode on %s", dir, graphc_backend_name(backends[k]));
    float logits[B * V_TINY], first[B * V_TINY];
    int32_t next[B];
    run_exe(pre, &x, logits, next);
    compare(label, logits, next, ref, 0, B, tol);
    memcpy(first, logits, sizeof first);
    for (int j = 1; j <= STEPS; j++) {
      batch in = {.B = B, .S = 1};
      for (int b = 0; b < B; b++) {
        in.ids[b] = next[b];
        in.pos[b] = x.last[b] + j;
      }
      run_exe(dec, &in, logits, next);
      compare(label, logits, next, ref, j, B, tol);
    }
    ck_assert_int_eq(graphc_executable_reset_states(pre, &err), GRAPHC_STATUS_OK);
    run_exe(pre, &x, logits, next);
    ck_assert_msg(memcmp(logits, first, sizeof first) == 0, "%s: a prefill after reset_states differs", label);
    graphc_executable_destroy(pre);
    graphc_executable_destroy(dec);
    graphc_model_destroy(mp);
    graphc_model_destroy(md);
  }
  graphc_context_destroy(ctx);
  gc_safetensors_free(ref);
}

START_TEST(stateful_prefill_then_decode) {
  NEED_NUMPY("stateful_prefill_then_decode");
  static const graphc_backend_t host[2] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU};
  check_prefill_decode(make_ckpt("prefill", "--seed 10"), 1e-4, 101, 2, host);
  check_prefill_decode(make_ckpt("prefill_bf16", "--dtype bf16 --arch qwen2 --tie --seed 11"), 2e-2, 102, 2, host);
}
END_TEST

/* ---- what fusion makes of it -------------------------------------------------------------- */

/* Attention groups (and causal ones) that sm_90 fusion forms in the graph of `dir`. */
static void count_attention(const char *dir, int stateless, int *n_attn, int *n_causal) {
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.stateless = stateless;
  lo.max_batch = 4;
  lo.max_context = 64;
  char *text = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_llm_graph_text(dir, &lo, &text, NULL, &err), GRAPHC_STATUS_OK);
  gc_diags d;
  gc_diags_init(&d, "llm.graph", text, strlen(text));
  gc_module *m = gc_parse("llm.graph", text, strlen(text), &d);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(gc_verify_module(m, &d), 0);
  gc_graph *g = m->graphs[0];
  for (int i = 0; i < g->n_syms; i++) g->sym_values[i] = strcmp(g->sym_names[i], "B") == 0 ? 2 : 32;
  ck_assert_int_eq(gc_graph_specialize(g, &d), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;
  gc_sbuf stats = {0};
  ck_assert_int_eq(gc_run_pipeline(g, &o, &stats, &d), 0);
  kir_target t;
  kir_target_cuda(&t, 90);
  gc_fusion *f = gc_fusion_plan(g, &t, 1);
  ck_assert_ptr_nonnull(f);
  *n_attn = *n_causal = 0;
  for (int k = 0; k < f->n_groups; k++)
    if (f->groups[k].kind == GC_FUSION_ATTENTION) {
      (*n_attn)++;
      *n_causal += f->groups[k].causal;
    }
  gc_fusion_free(f);
  gc_sbuf_free(&stats);
  gc_diags_free(&d);
  gc_module_free(m);
  free(text);
}

START_TEST(fusion_forms_attention) {
  NEED_NUMPY("fusion_forms_attention");
  /* f16 and bf16, GQA: one flash-attention kernel per layer, causal in the stateless graph
   * (the iota mask) */
  const char *args[2] = {"--dtype f16 --layers 3", "--dtype bf16 --layers 2 --arch qwen2"};
  int layers[2] = {3, 2};
  for (int i = 0; i < 2; i++) {
    const char *dir = make_ckpt("fuse", args[i]);
    int n, causal;
    count_attention(dir, 1, &n, &causal);
    ck_assert_int_eq(n, layers[i]);
    ck_assert_int_eq(causal, layers[i]);
    /* through the cache: keys and values a slice of cache_write's result, the mask
     * j > pos[b] + i computed inline per score (no constant offset: not marked causal) */
    count_attention(dir, 0, &n, &causal);
    ck_assert_int_eq(n, layers[i]);
  }
}
END_TEST

/* ---- errors --------------------------------------------------------------------------------- */

/* A config.json that is fine but for what a case puts in front (its keys come first, and
 * cJSON's lookup finds the first of two equal keys). */
static const char *base_config =
    "{%s\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 64,\n"
    " \"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4,\n"
    " \"num_key_value_heads\": 2, \"vocab_size\": 256, \"max_position_embeddings\": 256,\n"
    " \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false}\n";

/* Load `dir` and expect `status` and the message `fmt` with the folder for each %s. */
static void expect_load_error(const char *dir, const graphc_llm_options_t *lo, graphc_status_t status,
                              const char *fmt) {
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  graphc_model_t *m = (graphc_model_t *)1;
  graphc_error_t err;
  graphc_status_t st = graphc_llm_load(ctx, dir, lo, &m, NULL, &err);
  ck_assert_ptr_null(m);
  char want[2048];
  snprintf(want, sizeof want, fmt, dir, dir, dir);
  ck_assert_msg(st == status && strcmp(err.message, want) == 0, "status %s, message\n  %s\nwanted %s,\n  %s",
                graphc_status_string(st), err.message, graphc_status_string(status), want);
  graphc_context_destroy(ctx);
}

/* A folder holding only config.json: `text`, or base_config with `front` in front. */
static const char *config_dir(const char *text, const char *front) {
  static char dir[600];
  snprintf(dir, sizeof dir, "%s", tu_fresh_dir("cfg"));
  char buf[2048];
  snprintf(buf, sizeof buf, base_config, front ? front : "");
  tu_write_text(dir, "config.json", text ? text : buf);
  return dir;
}

START_TEST(config_errors) {
  const char *cj = "%s/config.json: ";
  char fmt[512];
  struct {
    const char *text;   /* a whole config.json (NULL: base_config with `front`) */
    const char *front;
    graphc_status_t status;
    const char *msg;
  } cases[] = {
      {"{\"architectures\": [\"GPT2LMHeadModel\"], \"n_embd\": 768}", NULL, GRAPHC_STATUS_UNSUPPORTED,
       "unsupported architecture GPT2LMHeadModel (graphc reads LlamaForCausalLM, Qwen2ForCausalLM and "
       "MistralForCausalLM)"},
      {"{\"model_type\": \"gemma\"}", NULL, GRAPHC_STATUS_UNSUPPORTED,
       "unsupported model_type gemma (graphc reads LlamaForCausalLM, Qwen2ForCausalLM and MistralForCausalLM)"},
      {"{\"hidden_size\": 64}", NULL, GRAPHC_STATUS_INVALID_ARGUMENT,
       "neither \"architectures\" nor \"model_type\" is given"},
      {"{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64,}", NULL, GRAPHC_STATUS_INVALID_ARGUMENT,
       "not valid JSON (error at byte 58)"},
      {"[1, 2]", NULL, GRAPHC_STATUS_INVALID_ARGUMENT, "not a JSON object"},
      {"{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"intermediate_size\": 128}", NULL,
       GRAPHC_STATUS_INVALID_ARGUMENT, "the key \"num_hidden_layers\" is missing"},
      {NULL, "\"num_key_value_heads\": 3, ", GRAPHC_STATUS_INVALID_ARGUMENT,
       "num_attention_heads 4 is not a multiple of num_key_value_heads 3"},
      {NULL, "\"num_attention_heads\": 5, ", GRAPHC_STATUS_INVALID_ARGUMENT,
       "hidden_size 64 is not a multiple of num_attention_heads 5 (and no head_dim is given)"},
      {NULL, "\"vocab_size\": -3, ", GRAPHC_STATUS_INVALID_ARGUMENT, "\"vocab_size\" must be a positive integer, not -3"},
      {NULL, "\"rms_norm_eps\": \"small\", ", GRAPHC_STATUS_INVALID_ARGUMENT,
       "\"rms_norm_eps\" must be a positive number, not \"small\""},
      {NULL, "\"hidden_act\": \"gelu\", ", GRAPHC_STATUS_UNSUPPORTED,
       "hidden_act \"gelu\" is not supported (the Llama family uses \"silu\")"},
      {NULL, "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}, ", GRAPHC_STATUS_UNSUPPORTED,
       "rope_scaling of type \"yarn\" is not supported (graphc reads none, \"default\" and \"llama3\")"},
      {NULL, "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0}, ",
       GRAPHC_STATUS_INVALID_ARGUMENT, "the key \"high_freq_factor\" is missing"},
      {NULL, "\"tie_word_embeddings\": 1, ", GRAPHC_STATUS_INVALID_ARGUMENT,
       "\"tie_word_embeddings\" must be true or false, not 1"},
      {NULL, "\"head_dim\": 15, ", GRAPHC_STATUS_INVALID_ARGUMENT,
       "head_dim 15 is odd; rotary embeddings rotate pairs of dims"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(fmt, sizeof fmt, "%s%s", cj, cases[i].msg);
    expect_load_error(config_dir(cases[i].text, cases[i].front), NULL, cases[i].status, fmt);
  }
  /* no config.json; no folder */
  const char *dir = tu_fresh_dir("noconfig");
  expect_load_error(dir, NULL, GRAPHC_STATUS_IO_ERROR, "cannot open '%s/config.json': No such file or directory");
  char missing[700];
  snprintf(missing, sizeof missing, "%s/none", dir);
  expect_load_error(missing, NULL, GRAPHC_STATUS_IO_ERROR, "%s: cannot open: No such file or directory");
  /* a context longer than the model's */
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.max_context = 512;
  expect_load_error(config_dir(NULL, NULL), &lo, GRAPHC_STATUS_INVALID_ARGUMENT,
                    "max_context 512 is larger than the model's max_position_embeddings 256 (%s/config.json)");
}
END_TEST

START_TEST(weights_errors) {
  NEED_NUMPY("weights_errors");
  const char *dir = make_ckpt("drop", "--drop model.layers.1.mlp.up_proj.weight");
  expect_load_error(dir, NULL, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors: tensor 'model.layers.1.mlp.up_proj.weight' is missing");
  dir = make_ckpt("nolm", "--drop lm_head.weight");
  expect_load_error(dir, NULL, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors: tensor 'lm_head.weight' is missing (tie_word_embeddings is false)");
  dir = make_ckpt("qwen_nobias", "--arch qwen2 --drop model.layers.0.self_attn.k_proj.bias");
  expect_load_error(dir, NULL, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors: tensor 'model.layers.0.self_attn.k_proj.bias' is missing");
  dir = make_ckpt("misshape", "--misshape model.layers.0.self_attn.k_proj.weight");
  expect_load_error(dir, NULL, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors: tensor 'model.layers.0.self_attn.k_proj.weight' is [33, 64]; "
                    "%s/config.json implies [32, 64]");
  dir = make_ckpt("shard_gone", "--shards 2");
  char path[800];
  snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
  ck_assert_int_eq(unlink(path), 0);
  expect_load_error(dir, NULL, GRAPHC_STATUS_IO_ERROR,
                    "%s/model-00002-of-00002.safetensors: cannot open: No such file or directory (a shard named by "
                    "%s/model.safetensors.index.json)");
  dir = make_ckpt("shard_map", "--shards 2 --drop model.norm.weight");
  expect_load_error(dir, NULL, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors.index.json: tensor 'model.norm.weight' is missing");
  /* Mistral's window shorter than the context compiled */
  dir = make_ckpt("window", "--arch mistral --max-pos 256");
  char cfg[800];
  snprintf(cfg, sizeof cfg, "%s/config.json", dir);
  TU_SH_OK("sed -i 's/\"sliding_window\": 256/\"sliding_window\": 16/' %s", cfg);
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.max_context = 64;
  expect_load_error(dir, &lo, GRAPHC_STATUS_UNSUPPORTED,
                    "%s/config.json: sliding_window 16 is shorter than the 64 positions compiled (max_context); "
                    "sliding-window attention is not supported: compile at most 16 positions");
  lo.max_context = 16;
  lo.stateless = 1;
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_llm_load(ctx, dir, &lo, &m, NULL, &err), GRAPHC_STATUS_OK);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

/* ---- the info and the command line ----------------------------------------------------------- */

START_TEST(info_and_cli) {
  NEED_NUMPY("info_and_cli");
  const char *dir = make_ckpt("cli", "--rope-llama3 --dtype bf16 --shards 2");
  char *text = NULL;
  graphc_llm_info_t info;
  graphc_error_t err;
  ck_assert_int_eq(graphc_llm_graph_text(dir, NULL, &text, &info, &err), GRAPHC_STATUS_OK);
  ck_assert_str_eq(info.architecture, "LlamaForCausalLM");
  ck_assert_int_eq(info.vocab_size, 256);
  ck_assert_int_eq(info.num_layers, 2);
  ck_assert_int_eq(info.num_kv_heads, 2);
  ck_assert_int_eq(info.head_dim, 16);
  ck_assert_int_eq(info.max_batch, 1);
  ck_assert_int_eq(info.max_context, 256);  /* max_position_embeddings, below 4096 */
  ck_assert_int_eq(info.dtype, GRAPHC_DTYPE_BF16);
  ck_assert_int_eq(info.bos_token_id, 1);
  ck_assert_int_eq(info.n_eos, 2);
  ck_assert_int_eq(info.eos_token_ids[1], 3);
  /* HF's names, the KV-cache states, the folder as the weights */
  ck_assert_ptr_nonnull(strstr(text, "param %embed: bf16[256, 64] = \"model.embed_tokens.weight\";"));
  ck_assert_ptr_nonnull(strstr(text, "state %l1_vc: bf16[1, 2, 256, 16] = \"cache.v.1\";"));
  ck_assert_ptr_nonnull(strstr(text, "graph @forward<B: 1..1, S: 1..256, K: 1..256>(%ids: i32[B, S], %pos: i32[B], "
                                     "%last: i32[B]) -> (f32[B, 256], i32[B])"));
  char want[800];
  snprintf(want, sizeof want, "weights \"%s\";", dir);
  ck_assert_ptr_nonnull(strstr(text, want));
  graphc_free(text);

  /* graphc generate --emit-graph prints the text, which runs as it is (its weights the folder;
   * random inputs: ids, pos and last in [0, 4)) */
  char *out = NULL;
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --emit-graph --stateless --max-batch 2 --max-context 8 > %s/gen.graph && "
                               "%s check %s/gen.graph --bind B=2 --bind S=8",
                         tu_cli(), dir, dir, tu_cli(), dir),
                   0);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --emit-graph --max-batch 2 --max-context 8 > %s/gen.graph && "
                               "%s run %s/gen.graph --bind B=2 --bind S=4 --bind K=8 --backend interp",
                         tu_cli(), dir, dir, tu_cli(), dir),
                   0);
  ck_assert_ptr_nonnull(strstr(out, "%next: i32[2] = ["));
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --emit-graph --max-context 9999", tu_cli(), dir), 1);
  snprintf(want, sizeof want,
           "graphc: error: max_context 9999 is larger than the model's max_position_embeddings 256 (%s/config.json)\n",
           dir);
  ck_assert_str_eq(out, want);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s generate %s", tu_cli(), dir), 1);
  ck_assert_ptr_nonnull(strstr(out, "give --prompt-ids (or --emit-graph)"));
  free(out);
}
END_TEST

/* ---- the generate loop (llm/generate.c) ------------------------------------------------------- */
/* Greedy generation of two prompts of different lengths (one padded prefill, then decode
 * steps with S = 1 over the whole cache) equals the reference's greedy continuation, on
 * interp, cpu (and cuda with a device); the CLI prints the same ids. */
START_TEST(generate_greedy) {
  NEED_NUMPY("generate_greedy");
  const char *dir = make_ckpt("gen", "--seed 12 --max-pos 64");
  enum { B = 2, S = 5, NEW = 7 };
  batch x = make_batch(B, S, 5);  /* prompts of 5 and 3 tokens */
  gc_safetensors *ref = run_ref(dir, &x, NEW - 1);
  const int32_t *rn = (const int32_t *)gc_safetensors_find(ref, "next")->data;
  const int32_t *prompts[B] = {&x.ids[0], &x.ids[S]};
  size_t lens[B] = {(size_t)x.last[0] + 1, (size_t)x.last[1] + 1};
  const graphc_backend_t backends[3] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU, GRAPHC_BACKEND_CUDA};
  for (int k = 0; k < (g_gpu ? 3 : 2); k++) {
    graphc_context_t *ctx;
    graphc_error_t err;
    ck_assert_int_eq(graphc_context_create(&ctx), 0);
    graphc_llm_options_t lo;
    graphc_llm_options_init(&lo);
    lo.max_batch = B;
    lo.max_context = 32;
    graphc_compile_options_t co;
    graphc_compile_options_init(&co);
    co.backend = backends[k];
    graphc_llm_session_t *s = NULL;
    ck_assert_msg(graphc_llm_session_create(ctx, dir, &lo, &co, &s, &err) == 0, "%s", err.message);
    graphc_generate_options_t go;
    graphc_generate_options_init(&go);
    go.max_new_tokens = NEW;
    go.ignore_eos = 1;
    go.decode_window = 4;  /* positions up to 11: decode steps over the first 8, then 16 of 32 */
    int32_t o0[NEW], o1[NEW];
    int32_t *outs[B] = {o0, o1};
    size_t n_out[B];
    graphc_llm_stats_t st;
    for (int round = 0; round < 2; round++) {  /* the second call reuses the executables and the cache */
      ck_assert_msg(graphc_llm_generate(s, B, prompts, lens, &go, outs, n_out, &st, &err) == 0, "%s", err.message);
      for (int b = 0; b < B; b++) {
        ck_assert_int_eq(n_out[b], NEW);
        for (int j = 0; j < NEW; j++)
          ck_assert_msg(outs[b][j] == rn[j * B + b], "%s round %d: row %d token %d is %d, the reference's %d",
                        graphc_backend_name(backends[k]), round, b, j, outs[b][j], rn[j * B + b]);
      }
      ck_assert_int_eq(st.decode_steps, NEW - 1);
      ck_assert_int_eq(st.prompt_tokens, 8);
      ck_assert_int_eq(st.generated_tokens, 2 * NEW);
      ck_assert(st.state_bytes > 0 && st.prefill_ms > 0);
      ck_assert(round == 0 ? st.compile_ms > 0 : st.compile_ms == 0);
    }
    /* one sequence alone in the same session: the same continuation */
    ck_assert_msg(graphc_llm_generate(s, 1, &prompts[1], &lens[1], &go, &outs[1], &n_out[1], NULL, &err) == 0, "%s",
                  err.message);
    for (int j = 0; j < NEW; j++) ck_assert_int_eq(outs[1][j], rn[j * B + 1]);
    graphc_llm_session_destroy(s);
    graphc_context_destroy(ctx);
  }
  /* the CLI: one line per sequence */
  char *out = NULL, want[256] = "", *w = want;
  for (int b = 0; b < B; b++) {
    for (int j = 0; j < NEW; j++) w += sprintf(w, "%s%d", j ? " " : "", rn[j * B + b]);
    w += sprintf(w, "\n");
  }
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --prompt-ids %d,%d,%d,%d,%d --prompt-ids %d,%d,%d --max-new-tokens %d "
                               "--ignore-eos --backend cpu --max-context 32",
                         tu_cli(), dir, x.ids[0], x.ids[1], x.ids[2], x.ids[3], x.ids[4], x.ids[5], x.ids[6],
                         x.ids[7], NEW),
                   0);
  ck_assert_str_eq(out, want);
  free(out);
  gc_safetensors_free(ref);
}
END_TEST

/* A generate session on the interpreter (a new context in *ctx). */
static graphc_llm_session_t *interp_session(const char *dir, const graphc_llm_options_t *lo, graphc_context_t **ctx) {
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(ctx), 0);
  graphc_compile_options_t co;
  graphc_compile_options_init(&co);
  co.backend = GRAPHC_BACKEND_INTERP;
  graphc_llm_session_t *s = NULL;
  ck_assert_msg(graphc_llm_session_create(*ctx, dir, lo, &co, &s, &err) == 0, "%s", err.message);
  return s;
}

/* Sampling: the same seed gives the same ids, a temperature near 0 gives the greedy ones,
 * an end-of-sequence id stops a row (config eos_token_id [2, 3]). */
START_TEST(generate_sampling) {
  NEED_NUMPY("generate_sampling");
  const char *dir = make_ckpt("sample", "--seed 13 --max-pos 64");
  graphc_context_t *ctx;
  graphc_error_t err;
  graphc_llm_session_t *s = interp_session(dir, NULL, &ctx);
  const int32_t p[4] = {7, 100, 33, 250};
  const int32_t *prompts[1] = {p};
  size_t lens[1] = {4}, n[1];
  int32_t a[20], b[20], c[20];
  int32_t *oa[1] = {a}, *ob[1] = {b}, *oc[1] = {c};
  graphc_generate_options_t go;
  graphc_generate_options_init(&go);
  go.max_new_tokens = 20;
  go.ignore_eos = 1;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, oc, n, NULL, &err), 0);  /* greedy */
  go.temperature = 1.5;
  go.top_p = 0.9;
  go.seed = 42;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, oa, n, NULL, &err), 0);
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, ob, n, NULL, &err), 0);
  ck_assert_mem_eq(a, b, sizeof a);
  go.seed = 43;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, ob, n, NULL, &err), 0);
  ck_assert_msg(memcmp(a, b, sizeof a) != 0, "seeds 42 and 43 drew the same 20 tokens at temperature 1.5");
  go.temperature = 1e-6;
  go.top_p = 1;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, ob, n, NULL, &err), 0);
  ck_assert_mem_eq(c, b, sizeof c);
  /* stop at the first end-of-sequence id the greedy run produces, if any */
  int first_eos = -1;
  for (int j = 0; j < 20 && first_eos < 0; j++) first_eos = c[j] == 2 || c[j] == 3 ? j : -1;
  go.temperature = 0;
  go.ignore_eos = 0;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, ob, n, NULL, &err), 0);
  ck_assert_int_eq((int)n[0], first_eos < 0 ? 20 : first_eos + 1);
  graphc_llm_session_destroy(s);
  graphc_context_destroy(ctx);
}
END_TEST

/* Sampling on the device (a temperature without top-p: @forward_sample, Gumbel-max over
 * hash_uniform noise): the same seed gives the same ids, another seed others, and the
 * interpreter and the cpu backend draw the same ids (the noise is bit-identical; the logits
 * agree within rounding, far from the gaps between Gumbel-perturbed scores). Two rows. */
START_TEST(generate_device_sampling) {
  NEED_NUMPY("generate_device_sampling");
  const char *dir = make_ckpt("dsample", "--seed 15 --max-pos 64");
  graphc_context_t *ctx, *ctx2;
  graphc_error_t err;
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.max_batch = 2;
  graphc_llm_session_t *s = interp_session(dir, &lo, &ctx);
  ck_assert_int_eq(graphc_context_create(&ctx2), 0);
  graphc_compile_options_t co;
  graphc_compile_options_init(&co);
  co.backend = GRAPHC_BACKEND_CPU;
  graphc_llm_session_t *sc = NULL;
  ck_assert_msg(graphc_llm_session_create(ctx2, dir, &lo, &co, &sc, &err) == 0, "%s", err.message);
  const int32_t p0[4] = {7, 100, 33, 250}, p1[2] = {9, 41};
  const int32_t *prompts[2] = {p0, p1};
  size_t lens[2] = {4, 2}, n[2];
  int32_t a[2][16], b[2][16], c[2][16];
  int32_t *oa[2] = {a[0], a[1]}, *ob[2] = {b[0], b[1]}, *oc[2] = {c[0], c[1]};
  graphc_generate_options_t go;
  graphc_generate_options_init(&go);
  go.max_new_tokens = 16;
  go.ignore_eos = 1;
  go.temperature = 1.3;
  go.seed = 5;
  ck_assert_msg(graphc_llm_generate(s, 2, prompts, lens, &go, oa, n, NULL, &err) == 0, "%s", err.message);
  ck_assert_msg(graphc_llm_generate(sc, 2, prompts, lens, &go, ob, n, NULL, &err) == 0, "%s", err.message);
  for (int r = 0; r < 2; r++)
    for (int j = 0; j < 16; j++)
      ck_assert_msg(a[r][j] == b[r][j], "row %d token %d: interp drew %d, cpu %d", r, j, a[r][j], b[r][j]);
  ck_assert_msg(graphc_llm_generate(sc, 2, prompts, lens, &go, oc, n, NULL, &err) == 0, "%s", err.message);
  ck_assert_mem_eq(b, c, sizeof b);
  go.seed = 6;
  ck_assert_msg(graphc_llm_generate(sc, 2, prompts, lens, &go, oc, n, NULL, &err) == 0, "%s", err.message);
  ck_assert_msg(memcmp(b, c, sizeof b) != 0, "seeds 5 and 6 drew the same 32 tokens at temperature 1.3");
  graphc_llm_session_destroy(sc);
  graphc_llm_session_destroy(s);
  graphc_context_destroy(ctx2);
  graphc_context_destroy(ctx);
}
END_TEST

/* The Gumbel-max draw @forward_sample computes, argmax(l + -log(-log(hash_uniform(key, j)))),
 * follows softmax(l): 20,000 keys over 5 logits, each frequency within 5 standard deviations
 * of its probability, on the interpreter and the cpu backend (which agree draw for draw). */
START_TEST(gumbel_max_distribution) {
  static const char src[] =
      "version 1;\ngraph @g(%k: i64[20000, 1]) -> (i32[20000]) {\n"
      "  %l = const(value=[1.0, 0.0, 2.0, -1.0, 0.5], shape=[1, 5], dtype=f32);\n"
      "  %j = iota(shape=[20000, 5], axis=1, dtype=i32);\n"
      "  %u = hash_uniform(%k, %j);\n  %a = log(%u);\n  %b = neg(%a);\n  %c = log(%b);\n"
      "  %s = sub(%l, %c);\n  %m = argmax(%s, axis=-1);\n  %t = cast(%m, to=i32);\n  return %t;\n}\n";
  static int64_t keys[20000];
  static int32_t draws[2][20000];
  unsigned seed = (unsigned)time(NULL);
  printf("gumbel_max_distribution: seed %u\n", seed);
  int64_t base = rand_r(&seed);
  for (int i = 0; i < 20000; i++) keys[i] = base * 20000 + i;
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  ck_assert_int_eq(graphc_model_load_string(ctx, "gumbel.graph", src, strlen(src), &m, &err), 0);
  for (int be = 0; be < 2; be++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = be ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP;
    graphc_executable_t *e = NULL;
    ck_assert_msg(graphc_compile(m, &o, &e, &err) == 0, "%s", err.message);
    graphc_tensor_t in = {GRAPHC_DTYPE_I64, 2, {20000, 1}, keys, sizeof keys};
    graphc_tensor_t out = {GRAPHC_DTYPE_I32, 1, {20000}, draws[be], sizeof draws[be]};
    ck_assert_msg(graphc_executable_run(e, &in, 1, &out, 1, &err) == 0, "%s", err.message);
    graphc_executable_destroy(e);
  }
  ck_assert_mem_eq(draws[0], draws[1], sizeof draws[0]);
  const double l[5] = {1.0, 0.0, 2.0, -1.0, 0.5};
  double z = 0;
  for (int j = 0; j < 5; j++) z += exp(l[j]);
  int cnt[5] = {0};
  for (int i = 0; i < 20000; i++) {
    ck_assert(draws[0][i] >= 0 && draws[0][i] < 5);
    cnt[draws[0][i]]++;
  }
  for (int j = 0; j < 5; j++) {
    double p = exp(l[j]) / z, sd = sqrt(20000 * p * (1 - p));
    ck_assert_msg(fabs(cnt[j] - 20000 * p) < 5 * sd, "logit %d: %d draws of 20000, expected %.0f +- %.0f", j, cnt[j],
                  20000 * p, sd);
  }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

/* Bad requests: a prompt longer than the cache, ids outside the vocabulary, too many
 * sequences, an empty prompt, bad sampling options, a stateless session. */
START_TEST(generate_errors) {
  NEED_NUMPY("generate_errors");
  const char *dir = make_ckpt("generr", "--seed 14 --max-pos 64");
  graphc_context_t *ctx;
  graphc_error_t err;
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.max_context = 16;
  lo.stateless = 1;
  graphc_compile_options_t co;
  graphc_compile_options_init(&co);
  graphc_llm_session_t *s = NULL;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  ck_assert_int_eq(graphc_llm_session_create(ctx, dir, &lo, &co, &s, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "stateless"));
  graphc_context_destroy(ctx);
  lo.stateless = 0;
  s = interp_session(dir, &lo, &ctx);
  int32_t p[20] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  const int32_t *prompts[2] = {p, p};
  size_t lens[2] = {14, 3}, n[2];
  int32_t o[2][8];
  int32_t *outs[2] = {o[0], o[1]};
  graphc_generate_options_t go;
  graphc_generate_options_init(&go);
  go.max_new_tokens = 4;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, outs, n, NULL, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "prompt 0 has 14 tokens; with 4 new ones that is more than the cache's 16 positions"),
                "%s", err.message);
  lens[0] = 3;
  p[1] = 256;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, outs, n, NULL, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "prompt 0 token 1 is 256, outside the vocabulary 0..255"), "%s", err.message);
  p[1] = -1;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, outs, n, NULL, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  p[1] = 2;
  ck_assert_int_eq(graphc_llm_generate(s, 2, prompts, lens, &go, outs, n, NULL, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "2 sequences; the session's cache holds 1 to 1"), "%s", err.message);
  lens[0] = 0;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, outs, n, NULL, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "prompt 0 is empty"));
  lens[0] = 3;
  go.top_p = 0;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, outs, n, NULL, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  go.top_p = 1;
  go.temperature = -1;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, outs, n, NULL, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  go.temperature = 0;
  go.decode_window = -1;
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, outs, n, NULL, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "decode_window (-1) >= 0"), "%s", err.message);
  go.decode_window = 0;  /* every step over all 16 positions */
  ck_assert_int_eq(graphc_llm_generate(s, 1, prompts, lens, &go, outs, n, NULL, &err), 0);  /* still usable */
  graphc_llm_session_destroy(s);
  graphc_context_destroy(ctx);
  char *out = NULL;
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --prompt-ids 1,x,3", tu_cli(), dir), 1);
  ck_assert_ptr_nonnull(strstr(out, "--prompt-ids expects comma-separated token ids, got '1,x,3'"));
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --prompt-ids 1,2 --max-new-tokens 100 --max-context 16 --backend interp",
                         tu_cli(), dir), 1);
  ck_assert_ptr_nonnull(strstr(out, "more than the cache's 16 positions (max_context)"));
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --prompt-ids 1,2 --temperature -1", tu_cli(), dir), 1);
  ck_assert_ptr_nonnull(strstr(out, "--temperature expects a number in [0, 1000000], got '-1'"));
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --prompt-ids 1,2 --decode-window x", tu_cli(), dir), 1);
  ck_assert_ptr_nonnull(strstr(out, "--decode-window expects a number in [0, 1073741824], got 'x'"));
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --prompt-ids 1,2 --top-p", tu_cli(), dir), 1);
  ck_assert_ptr_nonnull(strstr(out, "--top-p expects a number"));
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s generate %s --prompt-ids 1,2 --backend tpu", tu_cli(), dir), 1);
  ck_assert_ptr_nonnull(strstr(out, "unknown backend 'tpu'"));
  free(out);
}
END_TEST

int main(void) {
  g_gpu = tu_probe_device();
  Suite *s = suite_create("llm");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, stateless_f32_shapes);
  tcase_add_test(tc, stateless_f32_variants);
  tcase_add_test(tc, stateless_half);
  tcase_add_test(tc, cuda_matches_reference);
  tcase_add_test(tc, stateful_token_by_token);
  tcase_add_test(tc, stateful_chunked_prefill);
  tcase_add_test(tc, stateful_prefill_then_decode);
  tcase_add_test(tc, fusion_forms_attention);
  tcase_add_test(tc, config_errors);
  tcase_add_test(tc, weights_errors);
  tcase_add_test(tc, info_and_cli);
  tcase_add_test(tc, generate_greedy);
  tcase_add_test(tc, generate_sampling);
  tcase_add_test(tc, generate_device_sampling);
  tcase_add_test(tc, gumbel_max_distribution);
  tcase_add_test(tc, generate_errors);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
