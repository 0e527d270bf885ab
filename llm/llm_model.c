/* llm_model.c - a Hugging Face checkpoint folder as a graphc model (graphc_llm.h):
 * config.json (hf_config.c) + the weight set (weights/weight_set.c) -> the graph text
 * (llama_graph.c) -> graphc_model_load_string. The folder's absolute path goes into the
 * text's `weights` statement, so the printed graph runs as it is (`graphc run`).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc_llm.h"
#include "llm/hf_config.h"
#include "llm/llama_graph.h"
#include "weights/weight_set.h"

#define LLM_DEFAULT_CONTEXT 4096

void graphc_llm_options_init(graphc_llm_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->max_batch = 1;
}

/* The options with defaults applied, checked against the config. 0 or -1. */
static int resolve_opts(const graphc_llm_options_t *in, const gc_hf_config *c, const char *cfg_path,
                        gc_llama_opts *o, gc_diags *d) {
  graphc_llm_options_t def;
  graphc_llm_options_init(&def);
  if (!in) in = &def;
  o->max_batch = in->max_batch ? in->max_batch : 1;
  o->max_context = in->max_context ? in->max_context
                   : c->max_position_embeddings < LLM_DEFAULT_CONTEXT ? c->max_position_embeddings
                                                                     : LLM_DEFAULT_CONTEXT;
  o->stateless = in->stateless;
  if (o->max_batch < 1 || o->max_context < 1) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "max_batch (%lld) and max_context (%lld) must be positive",
                (long long)o->max_batch, (long long)o->max_context);
    return -1;
  }
  if (o->max_context > c->max_position_embeddings) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "max_context %lld is larger than the model's max_position_embeddings %lld (%s)", (long long)o->max_context,
                (long long)c->max_position_embeddings, cfg_path);
    return -1;
  }
  return 0;
}

static void fill_info(graphc_llm_info_t *info, const gc_hf_config *c, const gc_llama_opts *o, gc_dtype dt) {
  if (!info) return;
  memset(info, 0, sizeof *info);
  snprintf(info->architecture, sizeof info->architecture, "%s", c->architecture);
  info->vocab_size = c->vocab_size;
  info->hidden_size = c->hidden_size;
  info->num_layers = c->num_hidden_layers;
  info->num_heads = c->num_attention_heads;
  info->num_kv_heads = c->num_key_value_heads;
  info->head_dim = c->head_dim;
  info->max_position_embeddings = c->max_position_embeddings;
  info->max_batch = o->max_batch;
  info->max_context = o->max_context;
  info->dtype = dt;
  info->bos_token_id = c->bos_token_id;
  info->n_eos = c->n_eos;
  memcpy(info->eos_token_ids, c->eos_token_ids, sizeof info->eos_token_ids);
}

/* The graph text for `dir` into *text (malloc'd), its absolute path into abs. 0 or -1. */
static int llm_text(const char *dir, const graphc_llm_options_t *opts, char **text, graphc_llm_info_t *info,
                    char abs[PATH_MAX], gc_diags *d) {
  if (!realpath(dir, abs)) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "%s: cannot open: %s", dir, strerror(errno));
    return -1;
  }
  char cfg_path[PATH_MAX + 16];
  snprintf(cfg_path, sizeof cfg_path, "%s/config.json", abs);
  gc_hf_config cfg;
  gc_llama_opts o = {.weights = abs, .config = cfg_path};
  if (gc_hf_config_load(cfg_path, &cfg, d) || resolve_opts(opts, &cfg, cfg_path, &o, d)) return -1;
  gc_safetensors *w = gc_weights_open(abs, d);
  if (!w) return -1;
  gc_sbuf b = {0};
  gc_dtype dt;
  int rc = gc_llama_graph(&cfg, w, &o, &b, &dt, d);
  gc_safetensors_free(w);
  if (rc == 0 && !(*text = gc_sbuf_take(&b))) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    rc = -1;
  }
  gc_sbuf_free(&b);
  if (rc == 0) fill_info(info, &cfg, &o, dt);
  return rc;
}

/* Finish a call: the first error into err, its status returned. */
static graphc_status_t finish(gc_diags *d, graphc_error_t *err) {
  graphc_status_t st = d->n_errors ? d->status : GRAPHC_STATUS_OK;
  if (st != GRAPHC_STATUS_OK) gc_diags_to_error(d, err);
  else if (err) memset(err, 0, sizeof *err);
  gc_diags_free(d);
  return st;
}

graphc_status_t graphc_llm_graph_text(const char *dir, const graphc_llm_options_t *opts, char **text,
                                      graphc_llm_info_t *info, graphc_error_t *err) {
  if (text) *text = NULL;
  if (!dir || !text) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_llm_graph_text: NULL argument");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  char abs[PATH_MAX];
  llm_text(dir, opts, text, info, abs, &d);
  return finish(&d, err);
}

graphc_status_t graphc_llm_load(graphc_context_t *ctx, const char *dir, const graphc_llm_options_t *opts,
                                graphc_model_t **out, graphc_llm_info_t *info, graphc_error_t *err) {
  if (out) *out = NULL;
  if (!ctx || !dir || !out) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_llm_load: NULL argument");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  char abs[PATH_MAX], *text = NULL;
  if (llm_text(dir, opts, &text, info, abs, &d) != 0) return finish(&d, err);
  gc_diags_free(&d);
  char name[PATH_MAX + 32];
  snprintf(name, sizeof name, "%s/generated.graph", abs);
  graphc_status_t st = graphc_model_load_string(ctx, name, text, strlen(text), out, err);
  free(text);
  return st;
}
