/* hf_config.c - reading a Llama-family config.json (hf_config.h).
 *
 * One reader per kind of key (a positive integer, a number, a flag), each naming the
 * file and the key in its error; the architecture first, so that another model's
 * config fails with "unsupported architecture X" rather than a missing key.
 */
#include "llm/hf_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Report an error about the config file. */
#define CFG_ERR(d, st, path, fmt, ...) gc_error_at(d, st, (gc_loc){0, 0}, "%s: " fmt, path, __VA_ARGS__)
#define CFG_BAD GRAPHC_STATUS_INVALID_ARGUMENT

typedef struct arch_row {
  const char *architecture, *model_type;
  gc_hf_arch arch;
  int64_t max_position;  /* transformers' default max_position_embeddings */
} arch_row;

static const arch_row arch_rows[] = {
    {"LlamaForCausalLM", "llama", GC_HF_LLAMA, 2048},
    {"Qwen2ForCausalLM", "qwen2", GC_HF_QWEN2, 32768},
    {"MistralForCausalLM", "mistral", GC_HF_MISTRAL, 4096 * 32},
};
#define N_ARCH ((int)(sizeof arch_rows / sizeof arch_rows[0]))

/* The JSON value as short text for a message ("-3", "\"abc\"", "null"); malloc'd. */
static char *json_text(const cJSON *j) {
  char *t = cJSON_PrintUnformatted(j);
  if (t && strlen(t) > 60) strcpy(t + 57, "...");
  return t;
}

/* Report `key` as being of the wrong kind: "must be WHAT, not VALUE". */
static int bad_kind(const char *path, const char *key, const char *what, const cJSON *j, gc_diags *d) {
  char *t = json_text(j);
  CFG_ERR(d, CFG_BAD, path, "\"%s\" must be %s, not %s", key, what, t ? t : "?");
  cJSON_free(t);
  return -1;
}

/* The entry `key` of obj, NULL when absent or JSON null. */
static const cJSON *get(const cJSON *obj, const char *key) {
  const cJSON *j = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
  return j && !cJSON_IsNull(j) ? j : NULL;
}

/* A positive integer `key` (`def` when absent; def < 0: required). */
static int read_pos_int(const char *path, const cJSON *obj, const char *key, int64_t def, int64_t *out,
                        gc_diags *d) {
  const cJSON *j = get(obj, key);
  if (!j) {
    if (def < 0) {
      CFG_ERR(d, CFG_BAD, path, "the key \"%s\" is missing", key);
      return -1;
    }
    *out = def;
    return 0;
  }
  double v = cJSON_IsNumber(j) ? j->valuedouble : 0;
  if (!cJSON_IsNumber(j) || !(v >= 1 && v <= 9007199254740992.0) || v != floor(v))
    return bad_kind(path, key, "a positive integer", j, d);
  *out = (int64_t)v;
  return 0;
}

/* A finite number `key` (def when absent; NAN def: required), > 0 when `positive`. */
static int read_num(const char *path, const cJSON *obj, const char *key, double def, int positive, double *out,
                    gc_diags *d) {
  const cJSON *j = get(obj, key);
  if (!j) {
    if (isnan(def)) {
      CFG_ERR(d, CFG_BAD, path, "the key \"%s\" is missing", key);
      return -1;
    }
    *out = def;
    return 0;
  }
  if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || (positive && !(j->valuedouble > 0)))
    return bad_kind(path, key, positive ? "a positive number" : "a number", j, d);
  *out = j->valuedouble;
  return 0;
}

/* A true/false `key` (def when absent). */
static int read_flag(const char *path, const cJSON *obj, const char *key, int def, int *out, gc_diags *d) {
  const cJSON *j = get(obj, key);
  if (!j) {
    *out = def;
    return 0;
  }
  if (!cJSON_IsBool(j)) return bad_kind(path, key, "true or false", j, d);
  *out = cJSON_IsTrue(j);
  return 0;
}

/* The architecture: architectures[0], else model_type. */
static int read_arch(const char *path, const cJSON *root, gc_hf_config *c, gc_diags *d) {
  const cJSON *a = get(root, "architectures"), *mt = get(root, "model_type");
  const char *name = NULL;
  if (a) {
    if (!cJSON_IsArray(a) || !cJSON_IsString(a->child))
      return bad_kind(path, "architectures", "a list of class names", a, d);
    name = a->child->valuestring;
  } else if (mt) {
    if (!cJSON_IsString(mt)) return bad_kind(path, "model_type", "a string", mt, d);
  } else {
    CFG_ERR(d, CFG_BAD, path, "%s", "neither \"architectures\" nor \"model_type\" is given");
    return -1;
  }
  for (int i = 0; i < N_ARCH; i++)
    if (name ? strcmp(name, arch_rows[i].architecture) == 0 : strcmp(mt->valuestring, arch_rows[i].model_type) == 0) {
      c->arch = arch_rows[i].arch;
      snprintf(c->architecture, sizeof c->architecture, "%s", arch_rows[i].architecture);
      return 0;
    }
  CFG_ERR(d, GRAPHC_STATUS_UNSUPPORTED, path,
          "unsupported %s %s (graphc reads LlamaForCausalLM, Qwen2ForCausalLM and MistralForCausalLM)",
          name ? "architecture" : "model_type", name ? name : mt->valuestring);
  return -1;
}

/* The dims: the sizes, the heads, and that they fit together. */
static int read_dims(const char *path, const cJSON *root, gc_hf_config *c, gc_diags *d) {
  if (read_pos_int(path, root, "hidden_size", -1, &c->hidden_size, d) ||
      read_pos_int(path, root, "intermediate_size", -1, &c->intermediate_size, d) ||
      read_pos_int(path, root, "num_hidden_layers", -1, &c->num_hidden_layers, d) ||
      read_pos_int(path, root, "num_attention_heads", -1, &c->num_attention_heads, d) ||
      read_pos_int(path, root, "vocab_size", -1, &c->vocab_size, d) ||
      read_pos_int(path, root, "num_key_value_heads", c->num_attention_heads, &c->num_key_value_heads, d))
    return -1;
  int64_t max_pos = 0;
  for (int i = 0; i < N_ARCH; i++)
    if (arch_rows[i].arch == c->arch) max_pos = arch_rows[i].max_position;
  if (read_pos_int(path, root, "max_position_embeddings", max_pos, &c->max_position_embeddings, d)) return -1;
  if (!get(root, "head_dim") && c->hidden_size % c->num_attention_heads) {
    CFG_ERR(d, CFG_BAD, path, "hidden_size %lld is not a multiple of num_attention_heads %lld (and no head_dim is given)",
            (long long)c->hidden_size, (long long)c->num_attention_heads);
    return -1;
  }
  if (read_pos_int(path, root, "head_dim", c->hidden_size / c->num_attention_heads, &c->head_dim, d)) return -1;
  if (c->num_attention_heads % c->num_key_value_heads) {
    CFG_ERR(d, CFG_BAD, path, "num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
            (long long)c->num_attention_heads, (long long)c->num_key_value_heads);
    return -1;
  }
  if (c->head_dim % 2) {
    CFG_ERR(d, CFG_BAD, path, "head_dim %lld is odd; rotary embeddings rotate pairs of dims", (long long)c->head_dim);
    return -1;
  }
  return 0;
}

/* rope_type "llama3": its four numbers. */
static int read_llama3(const char *path, const cJSON *rs, gc_hf_config *c, gc_diags *d) {
  c->rope_llama3 = 1;
  if (read_num(path, rs, "factor", NAN, 1, &c->rope_factor, d) ||
      read_num(path, rs, "low_freq_factor", NAN, 1, &c->rope_low_freq_factor, d) ||
      read_num(path, rs, "high_freq_factor", NAN, 1, &c->rope_high_freq_factor, d) ||
      read_pos_int(path, rs, "original_max_position_embeddings", -1, &c->rope_original_max_position, d))
    return -1;
  if (!(c->rope_high_freq_factor > c->rope_low_freq_factor)) {
    CFG_ERR(d, CFG_BAD, path, "rope_scaling: high_freq_factor %g must be larger than low_freq_factor %g",
            c->rope_high_freq_factor, c->rope_low_freq_factor);
    return -1;
  }
  return 0;
}

/* RoPE: rope_theta and rope_scaling (or transformers 5's rope_parameters, which holds both). */
static int read_rope(const char *path, const cJSON *root, gc_hf_config *c, gc_diags *d) {
  const cJSON *rp = get(root, "rope_parameters"), *rs = get(root, "rope_scaling");
  if (rp && !cJSON_IsObject(rp)) return bad_kind(path, "rope_parameters", "an object", rp, d);
  if (rs && !cJSON_IsObject(rs)) return bad_kind(path, "rope_scaling", "null or an object", rs, d);
  double theta_def = 10000.0;
  if (rp && read_num(path, rp, "rope_theta", 10000.0, 1, &theta_def, d)) return -1;
  if (read_num(path, root, "rope_theta", theta_def, 1, &c->rope_theta, d)) return -1;
  if (!rs) rs = rp;
  double partial = 1.0;
  if (read_num(path, root, "partial_rotary_factor", 1.0, 1, &partial, d)) return -1;
  if (partial != 1.0) {
    CFG_ERR(d, GRAPHC_STATUS_UNSUPPORTED, path, "partial_rotary_factor %g is not supported (only 1)", partial);
    return -1;
  }
  if (!rs) return 0;
  const cJSON *t = get(rs, "rope_type");
  if (!t) t = get(rs, "type");
  if (t && !cJSON_IsString(t)) return bad_kind(path, "rope_type", "a string", t, d);
  const char *type = t ? t->valuestring : "default";
  if (strcmp(type, "default") == 0) return 0;
  if (strcmp(type, "llama3") == 0) return read_llama3(path, rs, c, d);
  CFG_ERR(d, GRAPHC_STATUS_UNSUPPORTED, path, "rope_scaling of type \"%s\" is not supported (graphc reads none, \"default\" and \"llama3\")",
          type);
  return -1;
}

/* The rest: norm, activation, biases, tying, window, dtype, special tokens. */
static int read_misc(const char *path, const cJSON *root, gc_hf_config *c, gc_diags *d) {
  if (read_num(path, root, "rms_norm_eps", 1e-6, 1, &c->rms_norm_eps, d) ||
      read_flag(path, root, "tie_word_embeddings", 0, &c->tie_word_embeddings, d))
    return -1;
  const cJSON *act = get(root, "hidden_act");
  if (act && !cJSON_IsString(act)) return bad_kind(path, "hidden_act", "a string", act, d);
  if (act && strcmp(act->valuestring, "silu") != 0) {
    CFG_ERR(d, GRAPHC_STATUS_UNSUPPORTED, path, "hidden_act \"%s\" is not supported (the Llama family uses \"silu\")",
            act->valuestring);
    return -1;
  }
  int attention_bias = 0, mlp_bias = 0, use_window = c->arch == GC_HF_MISTRAL;
  if (read_flag(path, root, "attention_bias", 0, &attention_bias, d) || read_flag(path, root, "mlp_bias", 0, &mlp_bias, d))
    return -1;
  if (c->arch == GC_HF_QWEN2 && read_flag(path, root, "use_sliding_window", 0, &use_window, d)) return -1;
  c->qkv_bias = c->arch == GC_HF_QWEN2 || (c->arch == GC_HF_LLAMA && attention_bias);
  c->o_bias = c->arch == GC_HF_LLAMA && attention_bias;
  c->mlp_bias = c->arch == GC_HF_LLAMA && mlp_bias;
  c->sliding_window = 0;
  if (use_window && read_pos_int(path, root, "sliding_window", 0, &c->sliding_window, d)) return -1;
  const cJSON *dt = get(root, "torch_dtype");
  if (!dt) dt = get(root, "dtype");
  c->torch_dtype = -1;
  if (dt && cJSON_IsString(dt)) {
    static const char *const names[] = {"float32", "float16", "bfloat16"};
    static const gc_dtype types[] = {GRAPHC_DTYPE_F32, GRAPHC_DTYPE_F16, GRAPHC_DTYPE_BF16};
    for (int i = 0; i < 3; i++)
      if (strcmp(dt->valuestring, names[i]) == 0) c->torch_dtype = (int)types[i];
  }
  return 0;
}

/* A token id: a non-negative integer. */
static int token_id(const cJSON *j, int64_t *out) {
  if (!cJSON_IsNumber(j) || !(j->valuedouble >= 0 && j->valuedouble < 9007199254740992.0) ||
      j->valuedouble != floor(j->valuedouble))
    return -1;
  *out = (int64_t)j->valuedouble;
  return 0;
}

/* bos_token_id (one id) and eos_token_id (one id or a list). */
static int read_tokens(const char *path, const cJSON *root, gc_hf_config *c, gc_diags *d) {
  const cJSON *b = get(root, "bos_token_id"), *e = get(root, "eos_token_id");
  c->bos_token_id = -1;
  if (b && token_id(b, &c->bos_token_id)) return bad_kind(path, "bos_token_id", "a token id", b, d);
  c->n_eos = 0;
  if (!e) return 0;
  if (!cJSON_IsArray(e)) {
    if (token_id(e, &c->eos_token_ids[0])) return bad_kind(path, "eos_token_id", "a token id or a list of them", e, d);
    c->n_eos = 1;
    return 0;
  }
  for (const cJSON *x = e->child; x; x = x->next) {
    if (c->n_eos == GC_HF_MAX_EOS) break;  /* more end-of-sequence ids than any model has: the first 8 */
    if (token_id(x, &c->eos_token_ids[c->n_eos++])) return bad_kind(path, "eos_token_id", "a token id or a list of them", e, d);
  }
  return 0;
}

int gc_hf_config_parse(const char *path, const char *text, size_t len, gc_hf_config *cfg, gc_diags *d) {
  memset(cfg, 0, sizeof *cfg);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!root || !cJSON_IsObject(root)) {
    if (root) CFG_ERR(d, CFG_BAD, path, "%s", "not a JSON object");
    else {
      size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
      CFG_ERR(d, CFG_BAD, path, "not valid JSON (error at byte %zu)", at);
    }
    cJSON_Delete(root);
    return -1;
  }
  int rc = read_arch(path, root, cfg, d) || read_dims(path, root, cfg, d) || read_rope(path, root, cfg, d) ||
                   read_misc(path, root, cfg, d) || read_tokens(path, root, cfg, d)
               ? -1
               : 0;
  cJSON_Delete(root);
  return rc;
}

int gc_hf_config_load(const char *path, gc_hf_config *cfg, gc_diags *d) {
  size_t len = 0;
  char *text = gc_read_file(path, &len, d);
  if (!text) return -1;
  int rc = gc_hf_config_parse(path, text, len, cfg, d);
  free(text);
  return rc;
}
