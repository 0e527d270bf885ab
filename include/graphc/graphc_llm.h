/* graphc_llm.h - Hugging Face Llama-family checkpoints as graphc models.
 *
 * A checkpoint folder as it is (config.json, and model.safetensors or the shards that
 * model.safetensors.index.json names) becomes a model whose entry graph @forward is
 * generated from the config (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM):
 *
 *   @forward<B, S, K>(%ids: i32[B, S], %pos: i32[B], %last: i32[B]) -> (f32[B, V], i32[B])
 *
 * row b's tokens ids[b, 0..S) sit at positions pos[b] + i; every layer writes its keys
 * and values into the KV cache (states "cache.k.N" / "cache.v.N", max_batch rows x
 * max_context positions, kept between runs) and attends over positions 0..K-1 of it,
 * key j visible to query i iff j <= pos[b] + i. Results: the f32 logits of token
 * last[b] of each row, and their argmax (the greedy next token). Bind B (<= max_batch),
 * S and K (<= max_context, K >= max_b pos[b] + S) before compiling: a prefill binds S
 * to the padded prompt length, a decode step S = 1: compile one executable per binding
 * and let them share the cache (graphc_executable_share_states; reset_states starts new
 * sequences). Positions a padded row writes past its prompt are masked for it until its
 * decode steps overwrite them. With `stateless`, @forward<B, S>
 * keeps no cache: a plain causal pass over the S tokens given (pos 0 for whole
 * sequences).
 *
 * The weights are used where they lie (memory-mapped), in their dtype (f32, f16, bf16).
 * Errors name the file and the key or tensor: another architecture is UNSUPPORTED
 * ("unsupported architecture GPT2LMHeadModel"); a malformed config INVALID_ARGUMENT; a
 * missing or misshaped tensor WEIGHTS_ERROR. These errors come through `err`; the
 * context's diagnostics are those of the model's parse (graphc_model_load_string).
 */
#ifndef GRAPHC_GRAPHC_LLM_H
#define GRAPHC_GRAPHC_LLM_H

#include "graphc/graphc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct graphc_llm_options {
  int64_t max_batch;    /* rows of the KV cache, the largest B (default 1) */
  int64_t max_context;  /* positions of the KV cache, the largest S and K (default:
                           max_position_embeddings, at most 4096) */
  int stateless;        /* 1: no KV cache (see above); default 0 */
} graphc_llm_options_t;

/* What the generate loop needs to know about the model. */
typedef struct graphc_llm_info {
  char architecture[64];       /* "LlamaForCausalLM", ... */
  int64_t vocab_size, hidden_size, num_layers, num_heads, num_kv_heads, head_dim;
  int64_t max_position_embeddings;
  int64_t max_batch, max_context; /* as compiled (the options with defaults applied) */
  graphc_dtype_t dtype;        /* the weights' dtype (model.embed_tokens.weight) */
  int64_t bos_token_id;        /* -1 when the config names none */
  int n_eos;                   /* end-of-sequence ids (eos_token_id: one or a list) */
  int64_t eos_token_ids[8];
} graphc_llm_info_t;

/* Fill `opts` with the defaults. */
void graphc_llm_options_init(graphc_llm_options_t *opts);

/* The generated .graph text for the checkpoint in `dir` (what `graphc generate
 * --emit-graph` prints); *text is malloc'd (graphc_free). `opts` and `info` may be NULL. */
graphc_status_t graphc_llm_graph_text(const char *dir, const graphc_llm_options_t *opts, char **text,
                                      graphc_llm_info_t *info, graphc_error_t *err);

/* Load the checkpoint in `dir` as a model (its text as graphc_llm_graph_text, its
 * weights the folder). `opts` and `info` may be NULL. */
graphc_status_t graphc_llm_load(graphc_context_t *ctx, const char *dir, const graphc_llm_options_t *opts,
                                graphc_model_t **out, graphc_llm_info_t *info, graphc_error_t *err);


/* ---- generating tokens -------------------------------------------------------------------------
 * A session: the checkpoint loaded (graphc_llm_load) and compiled on demand for the shapes the
 * loop needs, one KV cache shared by all of them (lo.max_batch rows, lo.max_context positions;
 * see generate.c for the steps). Tokenizers are out of scope: ids in, ids out. A session is
 * used by one thread at a time. */
typedef struct graphc_llm_session graphc_llm_session_t;

typedef struct graphc_generate_options {
  int64_t max_new_tokens;  /* per sequence (default 16) */
  double temperature;      /* 0 (default): greedy, the most likely token; > 0: sample */
  double top_p;            /* nucleus sampling: the smallest set of likely tokens reaching this
                              probability (default 1: all) */
  uint64_t seed;           /* the sampler's seed (same seed, same tokens) */
  int ignore_eos;          /* 1: go on past an end-of-sequence id (default 0: stop there) */
  int64_t decode_window;   /* a decode step attends to the cache's first K positions, K the
                              smallest power of two >= this that covers every row's position
                              (at most max_context): each K is compiled once, at its first use,
                              and a step reads K positions of keys and values instead of all
                              max_context (default 256; 0: always max_context) */
} graphc_generate_options_t;

typedef struct graphc_llm_stats {
  double prefill_ms;         /* the prompts' step, its compile included: time to first token */
  double decode_ms;          /* every step after it (without compiling the decode shape) */
  double compile_ms;         /* compiling executables (a shape's first use) during the call */
  int64_t prompt_tokens, generated_tokens, decode_steps;
  size_t state_bytes;        /* the KV cache */
} graphc_llm_stats_t;

void graphc_generate_options_init(graphc_generate_options_t *o);
/* The checkpoint in `dir` (lo: cache size; co: backend, precision, ...; both may be NULL). */
graphc_status_t graphc_llm_session_create(graphc_context_t *ctx, const char *dir, const graphc_llm_options_t *lo,
                                          const graphc_compile_options_t *co, graphc_llm_session_t **out,
                                          graphc_error_t *err);
const graphc_llm_info_t *graphc_llm_session_info(const graphc_llm_session_t *s);
/* The backend the session runs on (as asked before its first generate call). */
graphc_backend_t graphc_llm_session_backend(const graphc_llm_session_t *s);
/* Continue n_seqs prompts (1..max_batch; prompts[i] has prompt_lens[i] ids in the vocabulary;
 * prompt + max_new_tokens within max_context): out_ids[i] (room for max_new_tokens ids) gets
 * the new ids of sequence i, out_lens[i] their number (fewer when it ended at an
 * end-of-sequence id, which is included). Each call starts from empty sequences. stats may
 * be NULL. */
graphc_status_t graphc_llm_generate(graphc_llm_session_t *s, size_t n_seqs, const int32_t *const *prompts,
                                    const size_t *prompt_lens, const graphc_generate_options_t *o,
                                    int32_t *const *out_ids, size_t *out_lens, graphc_llm_stats_t *stats,
                                    graphc_error_t *err);
void graphc_llm_session_destroy(graphc_llm_session_t *s);

#ifdef __cplusplus
}
#endif
#endif /* GRAPHC_GRAPHC_LLM_H */
