/* generate.c - the `generate` command of the graphc tool: a Hugging Face checkpoint
 * folder (config.json + safetensors, graphc_llm.h).
 *
 *   graphc generate MODEL_DIR --emit-graph [--max-batch N] [--max-context T] [--stateless]
 *
 * --emit-graph prints the generated .graph text (it names the folder as its weights, so
 * the printed file runs with `graphc run FILE --bind B=.. --bind S=.. --bind K=..`).
 * The generate loop itself (prompt ids in, token ids out) is not written yet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc_llm.h"
#include "tools/cli.h"

static const char *const usage_generate =
    "usage: graphc generate MODEL_DIR --emit-graph [options]\n"
    "A Hugging Face Llama-family checkpoint folder (config.json, model.safetensors or shards\n"
    "named by model.safetensors.index.json): LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM.\n"
    "\noptions:\n"
    "  --emit-graph      print the generated .graph text of the model's @forward\n"
    "  --max-batch N     rows of the KV cache, the largest batch (default 1)\n"
    "  --max-context T   positions of the KV cache (default: max_position_embeddings, at most 4096)\n"
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

int cli_cmd_generate(int argc, char **argv) {
  const char *dir = NULL;
  int emit = 0;
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_generate, stdout);
      return 0;
    } else if (strcmp(a, "--emit-graph") == 0) {
      emit = 1;
    } else if (strcmp(a, "--stateless") == 0) {
      lo.stateless = 1;
    } else if (strcmp(a, "--max-batch") == 0 || strcmp(a, "--max-context") == 0) {
      int64_t n = positive(a, i + 1 < argc ? argv[i + 1] : NULL);
      if (n < 0) return 1;
      *(a[6] == 'b' ? &lo.max_batch : &lo.max_context) = n;
      i++;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "graphc: unknown option '%s'\n%s", a, usage_generate);
      return 1;
    } else if (!dir) {
      dir = a;
    } else {
      fprintf(stderr, "graphc: unexpected argument '%s'\n", a);
      return 1;
    }
  }
  if (!dir) {
    fprintf(stderr, "graphc: no model folder\n%s", usage_generate);
    return 1;
  }
  if (!emit) {
    fprintf(stderr, "graphc generate: only --emit-graph is implemented so far (the generate loop is to come)\n");
    return 1;
  }
  char *text = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_llm_graph_text(dir, &lo, &text, NULL, &err);
  if (st == GRAPHC_STATUS_OK) fputs(text, stdout);
  graphc_free(text);
  return cli_report(NULL, st, &err);
}
