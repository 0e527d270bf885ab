/* generate.c - the `generate` command of the graphc tool: a Hugging Face checkpoint
 * folder (config.json + safetensors, graphc_llm.h).
 *
 *   graphc generate MODEL_DIR --prompt-ids 1,2,3 [--prompt-ids ...] [--max-new-tokens N]
 *                  [--backend cpu|cuda|interp] [--precision P] [--temperature T] [--top-p P]
 *                  [--seed S] [--ignore-eos] [--max-batch N] [--max-context T]
 *                  [--decode-window W] [--stats]
 *   graphc generate MODEL_DIR --emit-graph [--max-batch N] [--max-context T] [--stateless]
 *
 * Generation (llm/generate.c): each --prompt-ids is one sequence of the batch; the new ids
 * of each sequence are printed space-separated, one line per sequence (the last line is the
 * last sequence's); --stats prints time to first token, tokens/s and the cache's memory on
 * stderr. --emit-graph prints the generated .graph text (it names the folder as its
 * weights, so the printed file runs with `graphc run FILE --bind B=.. --bind S=.. --bind K=..`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc_llm.h"
#include "tools/cli.h"
#include "passes/pipeline.h"
#include "ir/ir.h"

static const char *const usage_generate =
    "usage: graphc generate MODEL_DIR --prompt-ids 1,2,3 [--prompt-ids ...] [options]\n"
    "       graphc generate MODEL_DIR --emit-graph [options]\n"
    "A Hugging Face Llama-family checkpoint folder (config.json, model.safetensors or shards\n"
    "named by model.safetensors.index.json): LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM.\n"
    "\noptions:\n"
    "  --prompt-ids L    a prompt: comma-separated token ids (repeat for a batch of sequences)\n"
    "  --max-new-tokens N  new tokens per sequence (default 16)\n"
    "  --backend B       cuda (default when a GPU is there), cpu or interp\n"
    "  --precision P     f32 | tf32 | f16 | bf16 | fp8 (as graphc run)\n"
    "  --temperature T   0 (default): greedy; > 0: sample from softmax(logits / T), on the device\n"
    "                    (Gumbel-max over the model's hash_uniform noise) unless --top-p is below 1\n"
    "  --top-p P         nucleus sampling: the most likely tokens up to probability P (default 1;\n"
    "                    below 1 the logits come back and the host draws)\n"
    "  --seed S          the sampler's seed (default 0)\n"
    "  --ignore-eos      keep going past an end-of-sequence id\n"
    "  --stats           time to first token, tokens/s and the KV cache's memory on stderr\n"
    "  --emit-graph      print the generated .graph text of the model's @forward\n"
    "  --max-batch N     rows of the KV cache, the largest batch (default: the number of prompts)\n"
    "  --max-context T   positions of the KV cache (default: max_position_embeddings, at most 4096)\n"
    "  --decode-window W decode steps attend to the cache's first K positions, K a power of two\n"
    "                    >= W covering every sequence, compiled once each (default 256; 0: all)\n"
    "  --stateless       no KV cache: a plain causal forward pass (keys and values of the call)\n";

/* A positive integer option value; -1 (message printed) when it is not one. */
static int64_t positive(const char *opt, const char *v) {
  char *end = NULL;
  long long n = v ? strtoll(v, &end, 10) : 0;
  if (!v || !*v || *end || n < 1) {
    fprintf(stderr, "graphc: %s expects a positive integer, got '%s'\n", opt, v ? v : "");
    return -1;
  }
  return n;
}

/* A number option value in [lo, hi]; 0, or -1 (message printed). */
static int number(const char *opt, const char *v, double lo, double hi, double *out) {
  char *end = NULL;
  double x = v ? strtod(v, &end) : 0;
  if (!v || !*v || *end || !(x >= lo && x <= hi)) {
    fprintf(stderr, "graphc: %s expects a number in [%.15g, %.15g], got '%s'\n", opt, lo, hi, v ? v : "");
    return -1;
  }
  *out = x;
  return 0;
}

#define MAX_PROMPTS 256

/* "1,2,3" into a new array; -1 (message printed) when malformed. */
static int parse_ids(const char *v, int32_t **ids, size_t *n) {
  size_t cap = 1;
  for (const char *c = v; *c; c++) cap += *c == ',';
  *ids = malloc(cap * sizeof **ids);
  *n = 0;
  if (!*ids) return -1;
  const char *c = v;
  while (*c) {
    char *end = NULL;
    long long x = strtoll(c, &end, 10);
    if (end == c || x < INT32_MIN || x > INT32_MAX || (*end && *end != ',')) {
      fprintf(stderr, "graphc: --prompt-ids expects comma-separated token ids, got '%s'\n", v);
      return -1;
    }
    (*ids)[(*n)++] = (int32_t)x;
    c = *end ? end + 1 : end;
  }
  if (!*n) fprintf(stderr, "graphc: --prompt-ids is empty\n");
  return *n ? 0 : -1;
}

/* The generate loop: prompts in, new ids out (one line per sequence). */
static int generate(const char *dir, const graphc_llm_options_t *lo, const graphc_compile_options_t *co,
                    int32_t **prompts, size_t *lens, size_t n, const graphc_generate_options_t *go, int stats) {
  graphc_context_t *ctx = NULL;
  graphc_llm_session_t *s = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_context_create(&ctx);
  if (st != GRAPHC_STATUS_OK) return cli_report(NULL, st, NULL);
  int32_t **out = calloc(n, sizeof *out);
  size_t *out_lens = calloc(n, sizeof *out_lens);
  st = out && out_lens ? graphc_llm_session_create(ctx, dir, lo, co, &s, &err)
                       : gc_set_error(&err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; st == GRAPHC_STATUS_OK && i < n; i++)
    if (!(out[i] = malloc(sizeof **out * (size_t)(go->max_new_tokens ? go->max_new_tokens : 1))))
      st = gc_set_error(&err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  graphc_llm_stats_t ls;
  if (st == GRAPHC_STATUS_OK)
    st = graphc_llm_generate(s, n, (const int32_t *const *)prompts, lens, go, out, out_lens, &ls, &err);
  if (st == GRAPHC_STATUS_OK) {
    for (size_t i = 0; i < n; i++) {
      for (size_t j = 0; j < out_lens[i]; j++) printf("%s%d", j ? " " : "", out[i][j]);
      printf("\n");
    }
    if (stats) {
      const graphc_llm_info_t *info = graphc_llm_session_info(s);
      double dec_s = ls.decode_ms * 1e-3;
      fprintf(stderr, "model: %s, %lld layers, vocab %lld, %s weights, backend %s\n", info->architecture,
              (long long)info->num_layers, (long long)info->vocab_size, graphc_dtype_name(info->dtype),
              graphc_backend_name(graphc_llm_session_backend(s)));
      fprintf(stderr, "time to first token ms: %.3f\n", ls.prefill_ms);
      fprintf(stderr, "compile ms: %.3f\n", ls.compile_ms);
      fprintf(stderr, "prompt tokens: %lld\n", (long long)ls.prompt_tokens);
      fprintf(stderr, "generated tokens: %lld\n", (long long)ls.generated_tokens);
      fprintf(stderr, "decode steps: %lld\n", (long long)ls.decode_steps);
      fprintf(stderr, "decode ms: %.3f\n", ls.decode_ms);
      if (ls.decode_steps && dec_s > 0)
        fprintf(stderr, "decode tokens per s: %.2f (%lld sequences)\n", (double)ls.decode_steps * (double)n / dec_s,
                (long long)n);
      fprintf(stderr, "kv cache MiB: %.2f\n", (double)ls.state_bytes / (1 << 20));
    }
  }
  for (size_t i = 0; out && i < n; i++) free(out[i]);
  free(out);
  free(out_lens);
  graphc_llm_session_destroy(s);
  int rc = cli_report(ctx, st, &err);
  graphc_context_destroy(ctx);
  return rc;
}

int cli_cmd_generate(int argc, char **argv) {
  const char *dir = NULL;
  int emit = 0, stats = 0, bad = 0;
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.max_batch = 0;  /* default: the number of prompts */
  graphc_compile_options_t co;
  graphc_compile_options_init(&co);
  graphc_generate_options_t go;
  graphc_generate_options_init(&go);
  int32_t *prompts[MAX_PROMPTS];
  size_t lens[MAX_PROMPTS], n = 0;
  for (int i = 0; i < argc && !bad; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    double x = 0;
    int takes = 1;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_generate, stdout);
      for (size_t k = 0; k < n; k++) free(prompts[k]);
      return 0;
    } else if (strcmp(a, "--emit-graph") == 0) {
      emit = 1, takes = 0;
    } else if (strcmp(a, "--stateless") == 0) {
      lo.stateless = 1, takes = 0;
    } else if (strcmp(a, "--stats") == 0) {
      stats = 1, takes = 0;
    } else if (strcmp(a, "--ignore-eos") == 0) {
      go.ignore_eos = 1, takes = 0;
    } else if (strcmp(a, "--max-batch") == 0 || strcmp(a, "--max-context") == 0) {
      int64_t k = positive(a, v);
      bad = k < 0;
      *(a[6] == 'b' ? &lo.max_batch : &lo.max_context) = k;
    } else if (strcmp(a, "--decode-window") == 0) {
      bad = number(a, v, 0, 1 << 30, &x) != 0;
      go.decode_window = (int64_t)x;
    } else if (strcmp(a, "--max-new-tokens") == 0) {
      bad = number(a, v, 0, 1 << 30, &x) != 0;
      go.max_new_tokens = (int64_t)x;
    } else if (strcmp(a, "--temperature") == 0) {
      bad = number(a, v, 0, 1e6, &x) != 0;
      go.temperature = x;
    } else if (strcmp(a, "--top-p") == 0) {
      bad = number(a, v, 1e-9, 1, &x) != 0;
      go.top_p = x;
    } else if (strcmp(a, "--seed") == 0) {
      bad = number(a, v, 0, 9007199254740992.0, &x) != 0;
      go.seed = (uint64_t)x;
    } else if (strcmp(a, "--prompt-ids") == 0) {
      if (n == MAX_PROMPTS) {
        fprintf(stderr, "graphc: at most %d prompts\n", MAX_PROMPTS);
        bad = 1;
      } else {
        bad = !v || parse_ids(v, &prompts[n], &lens[n]) != 0;
        if (!bad) n++;
        else if (v) free(prompts[n]);
      }
    } else if (strcmp(a, "--backend") == 0) {
      if (v && strcmp(v, "cuda") == 0) co.backend = GRAPHC_BACKEND_CUDA;
      else if (v && strcmp(v, "cpu") == 0) co.backend = GRAPHC_BACKEND_CPU;
      else if (v && strcmp(v, "interp") == 0) co.backend = GRAPHC_BACKEND_INTERP;
      else fprintf(stderr, "graphc: unknown backend '%s' (cuda, cpu, interp)\n", v ? v : ""), bad = 1;
    } else if (strcmp(a, "--precision") == 0) {
      if (gc_precision_parse(v, &co.precision) != 0)
        fprintf(stderr, "graphc: unknown precision '%s' (f32, tf32, f16, bf16, fp8)\n", v ? v : ""), bad = 1;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "graphc: unknown option '%s'\n%s", a, usage_generate);
      bad = 1;
    } else if (!dir) {
      dir = a, takes = 0;
    } else {
      fprintf(stderr, "graphc: unexpected argument '%s'\n", a);
      bad = 1;
    }
    if (takes && !bad && !v) {
      fprintf(stderr, "graphc: option %s needs a value\n", a);
      bad = 1;
    }
    i += takes;
  }
  if (!bad && !dir) {
    fprintf(stderr, "graphc: no model folder\n%s", usage_generate);
    bad = 1;
  }
  if (!bad && !emit && !n) {
    fprintf(stderr, "graphc generate: give --prompt-ids (or --emit-graph)\n%s", usage_generate);
    bad = 1;
  }
  int rc = 1;
  if (!bad && emit) {
    if (!lo.max_batch) lo.max_batch = n ? (int64_t)n : 1;
    char *text = NULL;
    graphc_error_t err;
    graphc_status_t st = graphc_llm_graph_text(dir, &lo, &text, NULL, &err);
    if (st == GRAPHC_STATUS_OK) fputs(text, stdout);
    graphc_free(text);
    rc = cli_report(NULL, st, &err);
  } else if (!bad) {
    if (!lo.max_batch) lo.max_batch = (int64_t)n;
    rc = generate(dir, &lo, &co, prompts, lens, n, &go, stats);
  }
  for (size_t k = 0; k < n; k++) free(prompts[k]);
  return rc;
}
