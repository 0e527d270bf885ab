/* llama_graph.h - the .graph text of a Llama-family decoder, from its config and the
 * checkpoint's tensors.
 *
 * One entry, stateful (the default):
 *   graph @forward<B: 1..Bmax, S: 1..Tmax, K: 1..Tmax>(%ids: i32[B, S], %pos: i32[B], %last: i32[B])
 *       -> (f32[B, V], i32[B])
 * row b's tokens ids[b, i] sit at positions pos[b] + i; each layer writes its new keys and
 * values into the states "cache.k.N" / "cache.v.N" ([Bmax, Hkv, Tmax, D], the model's
 * dtype) at pos[b] (cache_write) and attends over the first K positions of the cache
 * (key j visible to query i iff j <= pos[b] + i); the results are the logits (f32) of the
 * token at (b, last[b]) and their argmax, the greedy next token. Prefill binds S to the
 * padded prompt length, decode S = 1; K bounds the positions read (K > max pos[b] + S - 1).
 *
 * Stateful text has a second entry, the same model with sampling on the device:
 *   graph @forward_sample<...>(%ids, %pos, %last, %seed: i64[B], %inv_temp: f32[B])
 *       -> (f32[B, V], i32[B], i32[B])
 * whose third result is a token drawn from softmax(logits * inv_temp[b]) by the Gumbel-max
 * trick, argmax(logits * inv_temp - log(-log(hash_uniform(seed[b], column)))) (llm/generate.c
 * compiles it with outputs "sampled" for a temperature without top-p).
 *
 * Stateless (gc_llama_opts.stateless): @forward<B: 1..Bmax, S: 1..Tmax>, no states: the
 * keys and values are the new ones (K = S), a plain causal forward pass of tokens at
 * positions pos[b] + i (pos is 0 for a whole sequence).
 *
 * Params carry Hugging Face's tensor names and the checkpoint's dtypes; the model computes
 * in the dtype of model.embed_tokens.weight (other float tensors are cast to it once).
 */
#ifndef GC_LLAMA_GRAPH_H
#define GC_LLAMA_GRAPH_H

#include "llm/hf_config.h"
#include "weights/safetensors.h"

typedef struct gc_llama_opts {
  int64_t max_batch;    /* Bmax: rows of the KV cache, the range of B */
  int64_t max_context;  /* Tmax: positions of the KV cache, the range of S and K */
  int stateless;        /* 1: no states (see above) */
  const char *weights;  /* the path the graph's `weights` statement names (NULL: none) */
  const char *config;   /* the config's path, for the header comment and messages */
} gc_llama_opts;

/* Append the graph text for cfg to `out`. Every tensor the model reads is checked
 * against w first: present, of a float dtype, shaped as the config implies (errors
 * WEIGHTS_ERROR naming the tensor and w->path; UNSUPPORTED for a sliding window
 * shorter than max_context). *dtype gets the model's dtype. 0, or -1 with d's error. */
int gc_llama_graph(const gc_hf_config *cfg, const gc_safetensors *w, const gc_llama_opts *o, gc_sbuf *out,
                   gc_dtype *dtype, gc_diags *d);

#endif
