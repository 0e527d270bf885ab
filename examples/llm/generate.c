/* generate.c - text generation from C with a Hugging Face checkpoint folder (graphc_llm.h).
 *
 *   llm_generate MODEL_DIR [ID ...]      (default prompt: 1 2 3)
 *
 * Loads the Llama-family checkpoint (config.json + safetensors, as downloaded), opens a
 * session with a KV cache for one sequence (up to 4096 positions), and prints 32 greedy
 * tokens after the prompt, then the same prompt sampled at temperature 0.8 (top-p 0.95,
 * seed 7). Token ids in, token ids out: tokenizers are out of scope. On the GPU when one is
 * there, else on the CPU. Build: CMakeLists.txt (target llm_generate; needs only libgraphc).
 */
#include <stdio.h>
#include <stdlib.h>

#include <graphc/graphc_llm.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: llm_generate MODEL_DIR [ID ...]\n");
    return 2;
  }
  enum { MAX_PROMPT = 256, NEW = 32 };
  int32_t prompt[MAX_PROMPT] = {1, 2, 3};
  size_t n_prompt = 3;
  if (argc > 2) {
    n_prompt = 0;
    for (int i = 2; i < argc && n_prompt < MAX_PROMPT; i++) prompt[n_prompt++] = (int32_t)atoi(argv[i]);
  }
  graphc_context_t *ctx = NULL;
  graphc_llm_session_t *s = NULL;
  graphc_error_t err;
  graphc_llm_options_t lo;
  graphc_llm_options_init(&lo);
  lo.max_batch = 1;
  lo.max_context = 0;  /* the model's max_position_embeddings, at most 4096 */
  if (graphc_context_create(&ctx) || graphc_llm_session_create(ctx, argv[1], &lo, NULL, &s, &err)) {
    fprintf(stderr, "llm_generate: %s\n", ctx ? err.message : "cannot create a context");
    graphc_context_destroy(ctx);
    return 1;
  }
  const graphc_llm_info_t *info = graphc_llm_session_info(s);
  printf("%s: %lld layers, vocab %lld, %s weights\n", info->architecture, (long long)info->num_layers,
         (long long)info->vocab_size, graphc_dtype_name(info->dtype));
  graphc_generate_options_t go;
  graphc_generate_options_init(&go);
  go.max_new_tokens = NEW;
  const int32_t *prompts[1] = {prompt};
  int32_t ids[NEW];
  int32_t *outs[1] = {ids};
  size_t n_out = 0;
  int rc = 0;
  for (int pass = 0; pass < 2 && !rc; pass++) {
    if (pass == 1) go.temperature = 0.8, go.top_p = 0.95, go.seed = 7;
    graphc_llm_stats_t st;
    if (graphc_llm_generate(s, 1, prompts, &n_prompt, &go, outs, &n_out, &st, &err)) {
      fprintf(stderr, "llm_generate: %s\n", err.message);
      rc = 1;
      break;
    }
    printf("%s:", pass ? "sampled" : "greedy");
    for (size_t i = 0; i < n_out; i++) printf(" %d", ids[i]);
    printf("\n  (first token %.1f ms, %lld decode steps in %.1f ms, on %s)\n", st.prefill_ms,
           (long long)st.decode_steps, st.decode_ms, graphc_backend_name(graphc_llm_session_backend(s)));
  }
  graphc_llm_session_destroy(s);
  graphc_context_destroy(ctx);
  return rc;
}
