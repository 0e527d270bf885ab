/* generate.c - the generate loop (graphc_llm.h): a session compiles the checkpoint's
 * @forward for the shapes it needs and runs prefill and decode steps over one KV cache.
 *
 *   prefill   one run over the prompts, padded to S = the next power of two >= the longest
 *             (at least 16, at most max_context), K = S: row b's tokens at positions
 *             0..len_b-1, last[b] = len_b - 1 -> the first new token of each row.
 *             Padding tokens write keys and values past len_b; the decode step at each
 *             such position overwrites it before any query can see it (key j is visible
 *             to a query at position p only when j <= p).
 *   decode    S = 1: row b's last token at position len_b -> the next, attending to the first
 *             K positions of the cache, K the smallest power of two >= decode_window covering
 *             every row's position (at most max_context; decode_window 0: max_context).
 *             Positions past a row's are masked, so K changes nothing but the work.
 * Executables are compiled once per (B, S, K) and kept for the session; all share the
 * states of the first (graphc_executable_share_states). Greedy decoding reads the graph's
 * argmax from executables compiled with only that output (graphc_compile_options_t.outputs:
 * the logits, V floats a row, stay on the device); with a temperature the logits come back
 * and a token is drawn on the host (softmax at the temperature, top-p nucleus, a seeded
 * xorshift generator) when top_p < 1; without top-p the draw happens on the device
 * (@forward_sample, compiled with outputs "sampled": Gumbel-max over hash_uniform noise keyed
 * by a per-row, per-draw seed), so nothing but B token ids comes back.
 * A row stops at an end-of-sequence id (unless ignore_eos) or max_new_tokens; the
 * batch runs until every row has stopped.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graphc/graphc_llm.h"
#include "ir/ir.h"

#define MAX_EXES 16

/* What a step returns: greedy: @forward's next tokens only (the logits stay on the device);
 * logits: @forward's logits and next (a temperature with top-p: drawn on the host); device:
 * @forward_sample's sampled tokens (a temperature without top-p: Gumbel-max on the device). */
enum { MODE_GREEDY, MODE_LOGITS, MODE_DEVICE };

typedef struct llm_exe {
  int64_t b, s, k;
  int mode;    /* MODE_*: which entry and outputs it was compiled with */
  graphc_executable_t *exe;
} llm_exe;

struct graphc_llm_session {
  graphc_context_t *ctx;
  graphc_model_t *model;
  graphc_llm_info_t info;
  graphc_compile_options_t copts;
  llm_exe exes[MAX_EXES];
  int n_exes;
  graphc_executable_t *owner;  /* the first executable: its states are everyone's */
};

void graphc_generate_options_init(graphc_generate_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->max_new_tokens = 16;
  o->top_p = 1.0;
  o->decode_window = 256;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

graphc_status_t graphc_llm_session_create(graphc_context_t *ctx, const char *dir, const graphc_llm_options_t *lo,
                                          const graphc_compile_options_t *co, graphc_llm_session_t **out,
                                          graphc_error_t *err) {
  if (out) *out = NULL;
  if (!ctx || !dir || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_llm_session_create: NULL argument");
  if (lo && lo->stateless)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_llm_session_create: a session decodes with a KV cache (stateless is for single passes)");
  graphc_llm_session_t *s = calloc(1, sizeof *s);
  if (!s) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  s->ctx = ctx;
  if (co)
    s->copts = *co;
  else
    graphc_compile_options_init(&s->copts);
  graphc_status_t st = graphc_llm_load(ctx, dir, lo, &s->model, &s->info, err);
  if (st != GRAPHC_STATUS_OK) {
    free(s);
    return st;
  }
  *out = s;
  return GRAPHC_STATUS_OK;
}

const graphc_llm_info_t *graphc_llm_session_info(const graphc_llm_session_t *s) { return s ? &s->info : NULL; }

graphc_backend_t graphc_llm_session_backend(const graphc_llm_session_t *s) {
  return s && s->owner ? graphc_executable_backend(s->owner) : s ? s->copts.backend : GRAPHC_BACKEND_DEFAULT;
}

void graphc_llm_session_destroy(graphc_llm_session_t *s) {
  if (!s) return;
  for (int i = 0; i < s->n_exes; i++) graphc_executable_destroy(s->exes[i].exe);
  graphc_model_destroy(s->model);
  free(s);
}

/* The executable for (b, sl, k) and mode (MODE_*): kept, or compiled now (sharing the
 * session's states). *compile_ms grows by the time it took. */
static graphc_executable_t *exe_for(graphc_llm_session_t *s, int64_t b, int64_t sl, int64_t k, int mode,
                                    double *compile_ms, graphc_error_t *err) {
  for (int i = 0; i < s->n_exes; i++)
    if (s->exes[i].b == b && s->exes[i].s == sl && s->exes[i].k == k && s->exes[i].mode == mode)
      return s->exes[i].exe;
  if (s->n_exes == MAX_EXES) {  /* the oldest shape goes (never the owner of the states) */
    graphc_executable_destroy(s->exes[1].exe);
    memmove(&s->exes[1], &s->exes[2], (size_t)(MAX_EXES - 2) * sizeof s->exes[0]);
    s->n_exes--;
  }
  double t0 = now_ms();
  graphc_executable_t *exe = NULL;
  graphc_compile_options_t co = s->copts;
  co.outputs = mode == MODE_GREEDY ? "next" : mode == MODE_DEVICE ? "sampled" : NULL;
  if (graphc_model_set_entry(s->model, mode == MODE_DEVICE ? "forward_sample" : "forward", err) ||
      graphc_model_bind(s->model, "B", b, err) || graphc_model_bind(s->model, "S", sl, err) ||
      graphc_model_bind(s->model, "K", k, err) || graphc_compile(s->model, &co, &exe, err))
    return NULL;
  if (s->owner && graphc_executable_share_states(exe, s->owner, err)) {
    graphc_executable_destroy(exe);
    return NULL;
  }
  if (!s->owner) s->owner = exe;
  s->exes[s->n_exes++] = (llm_exe){b, sl, k, mode, exe};
  *compile_ms += now_ms() - t0;
  return exe;
}

/* ---- sampling -------------------------------------------------------------------------------- */
static uint64_t xorshift(uint64_t *x) {
  uint64_t v = *x ? *x : 0x9E3779B97F4A7C15ull;
  v ^= v << 13;
  v ^= v >> 7;
  v ^= v << 17;
  return *x = v;
}

typedef struct prob {
  float p;
  int32_t id;
} prob;

static int by_p_desc(const void *a, const void *b) {
  float x = ((const prob *)a)->p, y = ((const prob *)b)->p;
  return x < y ? 1 : x > y ? -1 : ((const prob *)a)->id - ((const prob *)b)->id;
}

/* A token drawn from softmax(logits / temperature), within the smallest set of most likely
 * tokens whose probability reaches top_p. work: v entries. */
static int32_t sample(const float *logits, int64_t v, double temperature, double top_p, uint64_t *rng, prob *work) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < v; i++) mx = logits[i] > mx ? logits[i] : mx;
  double sum = 0;
  for (int64_t i = 0; i < v; i++) {
    work[i].p = (float)exp((logits[i] - mx) / temperature);
    work[i].id = (int32_t)i;
    sum += work[i].p;
  }
  qsort(work, (size_t)v, sizeof *work, by_p_desc);
  int64_t n = 0;
  double kept = 0;
  while (n < v && (n == 0 || kept < top_p * sum)) kept += work[n++].p;
  double u = (double)(xorshift(rng) >> 11) * 0x1.0p-53 * kept, acc = 0;
  for (int64_t i = 0; i < n; i++) {
    acc += work[i].p;
    if (u < acc) return work[i].id;
  }
  return work[n - 1].id;
}

/* MODE_DEVICE's keys for the next draw: row i's is base + draw * b + i (hash_uniform takes it
 * modulo 2^31 - 1: distinct keys for the first 2^31 / b draws). */
static void draw_keys(int64_t *seed, int64_t b, int64_t base, int64_t *draws) {
  for (int64_t i = 0; i < b; i++) seed[i] = base + *draws * b + i;
  ++*draws;
}

/* ---- the loop ----------------------------------------------------------------------------------- */
static int is_eos(const graphc_llm_info_t *info, int32_t t) {
  for (int i = 0; i < info->n_eos; i++)
    if (info->eos_token_ids[i] == t) return 1;
  return 0;
}

static int64_t pow2_at_least(int64_t n, int64_t lo) {
  int64_t p = lo;
  while (p < n) p *= 2;
  return p;
}

/* One run of exe: ids [b, sl], pos [b], last [b] (and for MODE_DEVICE seed [b], inv_temp
 * [b]) -> next [b] (greedy or sampled), and logits [b, V] for MODE_LOGITS. */
static graphc_status_t step(graphc_executable_t *exe, int mode, int64_t b, int64_t sl, int32_t *ids, int32_t *pos,
                            int32_t *last, int64_t *seed, float *inv_temp, float *logits, int64_t vocab, int32_t *next,
                            graphc_error_t *err) {
  graphc_tensor_t in[5] = {{GRAPHC_DTYPE_I32, 2, {b, sl}, ids, sizeof *ids * (size_t)(b * sl)},
                           {GRAPHC_DTYPE_I32, 1, {b}, pos, sizeof *pos * (size_t)b},
                           {GRAPHC_DTYPE_I32, 1, {b}, last, sizeof *last * (size_t)b},
                           {GRAPHC_DTYPE_I64, 1, {b}, seed, sizeof *seed * (size_t)b},
                           {GRAPHC_DTYPE_F32, 1, {b}, inv_temp, sizeof *inv_temp * (size_t)b}};
  graphc_tensor_t out[2] = {{GRAPHC_DTYPE_F32, 2, {b, vocab}, logits, sizeof *logits * (size_t)(b * vocab)},
                            {GRAPHC_DTYPE_I32, 1, {b}, next, sizeof *next * (size_t)b}};
  if (mode == MODE_LOGITS) return graphc_executable_run(exe, in, 3, out, 2, err);
  return graphc_executable_run(exe, in, mode == MODE_DEVICE ? 5 : 3, &out[1], 1, err);
}

graphc_status_t graphc_llm_generate(graphc_llm_session_t *s, size_t n_seqs, const int32_t *const *prompts,
                                    const size_t *prompt_lens, const graphc_generate_options_t *o,
                                    int32_t *const *out_ids, size_t *out_lens, graphc_llm_stats_t *stats,
                                    graphc_error_t *err) {
  graphc_generate_options_t def;
  graphc_generate_options_init(&def);
  if (!o) o = &def;
  if (stats) memset(stats, 0, sizeof *stats);
  if (!s || !prompts || !prompt_lens || !out_ids || !out_lens)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_llm_generate: NULL argument");
  const graphc_llm_info_t *info = &s->info;
  const int64_t b = (int64_t)n_seqs, vocab = info->vocab_size, tmax = info->max_context;
  if (b < 1 || b > info->max_batch)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_llm_generate: %zu sequences; the session's cache holds 1 to %lld (max_batch)",
                        n_seqs, (long long)info->max_batch);
  if (o->max_new_tokens < 0 || !(o->temperature >= 0) || !(o->top_p > 0 && o->top_p <= 1) || o->decode_window < 0)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_llm_generate: max_new_tokens (%lld) must be >= 0, temperature (%g) >= 0, "
                        "top_p (%g) in (0, 1] and decode_window (%lld) >= 0", (long long)o->max_new_tokens,
                        o->temperature, o->top_p, (long long)o->decode_window);
  int64_t longest = 0;
  for (size_t i = 0; i < n_seqs; i++) {
    int64_t len = (int64_t)prompt_lens[i];
    if (len < 1 || !prompts[i])
      return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_llm_generate: prompt %zu is empty", i);
    if (len + o->max_new_tokens > tmax)
      return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                          "graphc_llm_generate: prompt %zu has %lld tokens; with %lld new ones that is more than the "
                          "cache's %lld positions (max_context)", i, (long long)len, (long long)o->max_new_tokens,
                          (long long)tmax);
    for (int64_t j = 0; j < len; j++)
      if (prompts[i][j] < 0 || prompts[i][j] >= vocab)
        return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                            "graphc_llm_generate: prompt %zu token %lld is %d, outside the vocabulary 0..%lld", i,
                            (long long)j, prompts[i][j], (long long)vocab - 1);
    longest = len > longest ? len : longest;
    out_lens[i] = 0;
  }
  if (o->max_new_tokens == 0) return GRAPHC_STATUS_OK;
  int64_t sl = pow2_at_least(longest, 16);
  if (sl > tmax) sl = tmax;
  int32_t *ids = calloc((size_t)(b * sl), sizeof *ids), *pos = calloc((size_t)b, sizeof *pos);
  int32_t *last = calloc((size_t)b, sizeof *last), *next = calloc((size_t)b, sizeof *next);
  int *done = calloc((size_t)b, sizeof *done);
  const int mode = !(o->temperature > 0) ? MODE_GREEDY : o->top_p < 1 ? MODE_LOGITS : MODE_DEVICE;
  float *logits = mode == MODE_LOGITS ? malloc(sizeof *logits * (size_t)(b * vocab)) : NULL;
  int64_t *seed = calloc((size_t)b, sizeof *seed);
  float *inv_temp = malloc(sizeof *inv_temp * (size_t)b);
  prob *work = mode == MODE_LOGITS ? malloc(sizeof *work * (size_t)vocab) : NULL;
  graphc_status_t st = GRAPHC_STATUS_OK;
  if (!ids || !pos || !last || !next || !done || !seed || !inv_temp || (mode == MODE_LOGITS && (!logits || !work))) {
    st = gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "graphc_llm_generate: out of memory");
    goto out;
  }
  uint64_t rng = o->seed * 0x9E3779B97F4A7C15ull + 1;
  /* MODE_DEVICE: keys from a base the seed gives (draw_keys) */
  int64_t base = (int64_t)(xorshift(&rng) >> 34), draws = 0;
  for (int64_t i = 0; i < b; i++) inv_temp[i] = (float)(1.0 / (o->temperature > 0 ? o->temperature : 1.0));
  double compile_ms = 0, t0 = now_ms();
  /* prefill: the prompts from position 0 (the cache's earlier contents are never visible) */
  for (int64_t i = 0; i < b; i++) {
    memcpy(&ids[i * sl], prompts[i], sizeof *ids * prompt_lens[i]);
    pos[i] = 0;
    last[i] = (int32_t)prompt_lens[i] - 1;
  }
  draw_keys(seed, b, base, &draws);
  graphc_executable_t *exe = exe_for(s, b, sl, sl, mode, &compile_ms, err);
  if (!exe || (st = step(exe, mode, b, sl, ids, pos, last, seed, inv_temp, logits, vocab, next, err)) != GRAPHC_STATUS_OK) {
    if (!exe) st = err ? err->code : GRAPHC_STATUS_INTERNAL;
    goto out;
  }
  double t1 = now_ms(), compile_prefill = compile_ms;
  if (stats) {
    stats->prefill_ms = t1 - t0;
    for (int64_t i = 0; i < b; i++) stats->prompt_tokens += (int64_t)prompt_lens[i];
  }
  int64_t steps = 0;
  for (;;) {
    int live = 0;
    for (int64_t i = 0; i < b; i++) {
      if (done[i]) continue;
      int32_t t = mode == MODE_LOGITS ? sample(&logits[i * vocab], vocab, o->temperature, o->top_p, &rng, work) : next[i];
      out_ids[i][out_lens[i]++] = t;
      if ((!o->ignore_eos && is_eos(info, t)) || (int64_t)out_lens[i] >= o->max_new_tokens) done[i] = 1;
      live += !done[i];
    }
    if (!live) break;
    /* decode: each row's newest token at the position after the ones before it, over the
     * first K positions of the cache (a power of two covering every row: decode_window) */
    int64_t need = 1;
    for (int64_t i = 0; i < b; i++) {
      ids[i] = out_ids[i][out_lens[i] - 1];
      pos[i] = (int32_t)(prompt_lens[i] + out_lens[i] - 1);
      last[i] = 0;
      need = pos[i] + 1 > need ? pos[i] + 1 : need;
    }
    int64_t kw = o->decode_window ? pow2_at_least(need, pow2_at_least(o->decode_window, 1)) : tmax;
    draw_keys(seed, b, base, &draws);
    exe = exe_for(s, b, 1, kw < tmax ? kw : tmax, mode, &compile_ms, err);
    if (!exe || (st = step(exe, mode, b, 1, ids, pos, last, seed, inv_temp, logits, vocab, next, err)) != GRAPHC_STATUS_OK) {
      if (!exe) st = err ? err->code : GRAPHC_STATUS_INTERNAL;
      goto out;
    }
    steps++;
  }
  if (stats) {
    stats->decode_ms = now_ms() - t1 - (compile_ms - compile_prefill);  /* the steps alone */
    stats->decode_steps = steps;
    stats->compile_ms = compile_ms;
    for (int64_t i = 0; i < b; i++) stats->generated_tokens += (int64_t)out_lens[i];
    for (size_t i = 0; s->owner && i < graphc_executable_num_states(s->owner); i++) {
      graphc_tensor_info_t ti;
      if (graphc_executable_state_info(s->owner, i, &ti) == GRAPHC_STATUS_OK) stats->state_bytes += ti.nbytes;
    }
  }
out:
  free(ids);
  free(pos);
  free(last);
  free(next);
  free(done);
  free(logits);
  free(seed);
  free(inv_temp);
  free(work);
  return st;
}
