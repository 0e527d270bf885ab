/* hf_config.h - a Hugging Face config.json of the Llama family (LlamaForCausalLM,
 * Qwen2ForCausalLM, MistralForCausalLM), read with cJSON.
 *
 * Defaults are transformers' where a key may be left out (num_key_value_heads =
 * num_attention_heads, head_dim = hidden_size / num_attention_heads, rope_theta 10000,
 * rms_norm_eps 1e-6, max_position_embeddings per architecture); the sizes that make the
 * model (hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
 * vocab_size) must be there. Errors name the file and the key: GRAPHC_STATUS_IO_ERROR
 * (unreadable), INVALID_ARGUMENT (malformed JSON, a key missing or of the wrong kind,
 * sizes that do not fit together), UNSUPPORTED (another architecture, activation or
 * RoPE scaling).
 */
#ifndef GC_HF_CONFIG_H
#define GC_HF_CONFIG_H

#include "ir/ir.h"

typedef enum gc_hf_arch { GC_HF_LLAMA, GC_HF_QWEN2, GC_HF_MISTRAL } gc_hf_arch;

#define GC_HF_MAX_EOS 8

typedef struct gc_hf_config {
  gc_hf_arch arch;
  char architecture[64];          /* "LlamaForCausalLM" (from model_type when no architectures) */
  int64_t hidden_size, intermediate_size, num_hidden_layers;
  int64_t num_attention_heads, num_key_value_heads, head_dim;
  int64_t max_position_embeddings, vocab_size;
  double rms_norm_eps, rope_theta;
  /* rope_scaling of rope_type "llama3" (transformers' _compute_llama3_parameters) */
  int rope_llama3;
  double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
  int64_t rope_original_max_position;
  int tie_word_embeddings;
  int qkv_bias;                   /* q/k/v_proj.bias: Qwen2 always, Llama with attention_bias */
  int o_bias;                     /* o_proj.bias: Llama with attention_bias */
  int mlp_bias;                   /* gate/up/down_proj.bias: Llama with mlp_bias */
  int64_t sliding_window;         /* 0: none (Qwen2 without use_sliding_window: none) */
  int torch_dtype;                /* a gc_dtype (torch_dtype or dtype), -1 when not given */
  int64_t bos_token_id;           /* -1 when not given */
  int n_eos;
  int64_t eos_token_ids[GC_HF_MAX_EOS];
} gc_hf_config;

/* Read and check `path`; 0, or -1 with the error reported to d (which names `path`). */
int gc_hf_config_load(const char *path, gc_hf_config *cfg, gc_diags *d);
/* The same from text (`path` for messages). */
int gc_hf_config_parse(const char *path, const char *text, size_t len, gc_hf_config *cfg, gc_diags *d);

#endif
