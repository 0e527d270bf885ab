/* llama_graph.c - writing the .graph text of a Llama-family decoder (llama_graph.h).
 *
 * The math is transformers' LlamaForCausalLM (Qwen2 and Mistral are the same blocks):
 *   x = embed[ids]
 *   per layer: h = rmsnorm(x); q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv)
 *              q, k = rope(q), rope(k) at positions pos[b] + i (rotate_half convention)
 *              [cache_write k, v at pos; read the first K positions]
 *              a = softmax(q k^T / sqrt(D) + mask) v, the Hkv heads repeated H / Hkv times
 *              x = x + a Wo^T (+bo); x = x + (silu(g Wg^T) * (g Wu^T)) Wd^T, g = rmsnorm(x)
 *   logits = rmsnorm(x[b, last[b]]) W_lm^T (the embedding when tied), f32; next = argmax
 * written the way the passes read it: HF's [out, in] weights as matmul(x, W, transpose_b),
 * the scores as matmul(q, k, transpose_b) * scale + mask -> softmax -> matmul with v (the
 * attention chain fusion forms), GQA as reshape -> broadcast -> reshape (a view the attention
 * kernel reads in place), the causal mask of the stateless graph from iotas (marked causal).
 * RoPE's inverse frequencies are computed here in float32 as transformers does (llama3
 * scaling included) and written as a constant.
 */
#include "llm/llama_graph.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lg {
  gc_sbuf *b;
  const gc_hf_config *c;
  const gc_safetensors *w;
  const gc_llama_opts *o;
  gc_diags *d;
  gc_dtype dt;          /* the model's dtype */
  const char *dn;       /* its name */
  char kv[8];           /* the key/value length symbol: "K" (stateful) or "S" */
  int sample;           /* writing @forward_sample (see llama_graph.h) */
} lg;

#define WERR(g, fmt, ...) \
  gc_error_at((g)->d, GRAPHC_STATUS_WEIGHTS_ERROR, (gc_loc){0, 0}, "%s: " fmt, (g)->w->path, __VA_ARGS__)

/* Append one statement line (two-space indent). */
__attribute__((format(printf, 2, 3))) static void line(lg *g, const char *fmt, ...) {
  gc_sbuf_puts(g->b, "  ");
  va_list ap;
  va_start(ap, fmt);
  gc_sbuf_vprintf(g->b, fmt, ap);
  va_end(ap);
  gc_sbuf_putc(g->b, '\n');
}

/* `v` as a .graph float literal: the fewest digits that read back to the same float
 * (f32 when `single`, else double), always with a '.' or an exponent. */
static void put_float(gc_sbuf *b, double v, int single) {
  if (isinf(v)) {
    gc_sbuf_puts(b, v < 0 ? "-inf" : "inf");
    return;
  }
  char buf[48];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    double r = strtod(buf, NULL);
    if (single ? (float)r == (float)v : r == v) break;
  }
  if (!strpbrk(buf, ".en")) strcat(buf, ".0");
  gc_sbuf_puts(b, buf);
}

/* ---- the checkpoint's tensors ---------------------------------------------------------- */

static void put_dims(gc_sbuf *b, int rank, const int64_t *dims) {
  gc_sbuf_putc(b, '[');
  for (int i = 0; i < rank; i++) gc_sbuf_printf(b, "%s%lld", i ? ", " : "", (long long)dims[i]);
  gc_sbuf_putc(b, ']');
}

/* Tensor `name` of w, checked: present, a float dtype, shape [d0] or [d0, d1]. NULL after
 * reporting (the hint says why the model wants it). */
static const gc_st_tensor *tensor(lg *g, const char *name, int rank, int64_t d0, int64_t d1, const char *hint) {
  const gc_st_tensor *t = gc_safetensors_find(g->w, name);
  if (!t) {
    WERR(g, "tensor '%s' is missing%s%s", name, hint ? " " : "", hint ? hint : "");
    return NULL;
  }
  int64_t want[2] = {d0, d1};
  int ok = t->rank == rank && t->dims[0] == d0 && (rank == 1 || t->dims[1] == d1);
  if (!ok) {
    gc_sbuf have = {0}, exp = {0};
    put_dims(&have, t->rank, t->dims);
    put_dims(&exp, rank, want);
    WERR(g, "tensor '%s' is %s; %s implies %s", name, have.data ? have.data : "?",
         g->o->config ? g->o->config : "the config", exp.data ? exp.data : "?");
    gc_sbuf_free(&have);
    gc_sbuf_free(&exp);
    return NULL;
  }
  if (t->dtype != GRAPHC_DTYPE_F32 && t->dtype != GRAPHC_DTYPE_F16 && t->dtype != GRAPHC_DTYPE_BF16) {
    gc_error_at(g->d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0}, "%s: tensor '%s' is %s; graphc reads f32, f16 and bf16 checkpoints",
                g->w->path, name, graphc_dtype_name(t->dtype));
    return NULL;
  }
  return t;
}

/* `param %val: T = "name";` in the model's dtype (a cast after it when the tensor's
 * differs). 0 or -1. */
static int param(lg *g, const char *val, const char *name, int rank, int64_t d0, int64_t d1, const char *hint) {
  const gc_st_tensor *t = tensor(g, name, rank, d0, d1, hint);
  if (!t) return -1;
  gc_sbuf dims = {0};
  put_dims(&dims, t->rank, t->dims);
  const char *ds = dims.data ? dims.data : "[]";
  if (t->dtype == g->dt) {
    line(g, "param %%%s: %s%s = \"%s\";", val, g->dn, ds, name);
  } else {
    line(g, "param %%%s_%s: %s%s = \"%s\";", val, graphc_dtype_name(t->dtype), graphc_dtype_name(t->dtype), ds, name);
    line(g, "%%%s = cast(%%%s_%s, to=%s);", val, val, graphc_dtype_name(t->dtype), g->dn);
  }
  gc_sbuf_free(&dims);
  return 0;
}

/* ---- RoPE ------------------------------------------------------------------------------ */

/* transformers' inverse frequencies in float32: 1 / theta^(2i / D), then llama3's
 * scaling (_compute_llama3_parameters: long wavelengths divided by factor, short ones
 * kept, a smooth blend between). */
static void inv_freq(const gc_hf_config *c, float *out) {
  const float two_pi = 6.283185307179586f;
  int64_t half = c->head_dim / 2;
  for (int64_t i = 0; i < half; i++) {
    float e = (float)(2 * i) / (float)c->head_dim;
    float f = 1.0f / powf((float)c->rope_theta, e);
    if (c->rope_llama3) {
      float old = (float)c->rope_original_max_position, low = (float)c->rope_low_freq_factor;
      float high = (float)c->rope_high_freq_factor, factor = (float)c->rope_factor;
      float wl = two_pi / f, low_wl = old / low, high_wl = old / high;
      float s = (old / wl - low) / (high - low);
      if (wl > low_wl) f = f / factor;
      else if (!(wl < high_wl)) f = (1 - s) * f / factor + s * f;
    }
    out[i] = f;
  }
}

/* Positions, angles, cos and sin ([B, S, 1, D] in the model's dtype: %cos, %sin). */
static void emit_rope_tables(lg *g) {
  int64_t D = g->c->head_dim, half = D / 2;
  float *f = malloc((size_t)half * sizeof *f);
  if (!f) {
    g->b->failed = 1;
    return;
  }
  inv_freq(g->c, f);
  line(g, "%%si = iota(shape=[B, S], axis=1, dtype=i32);");
  line(g, "%%pb = reshape(%%pos, shape=[B, 1]);");
  line(g, "%%p = add(%%si, %%pb);");
  line(g, "%%pf = cast(%%p, to=f32);");
  line(g, "%%pf4 = reshape(%%pf, shape=[B, S, 1, 1]);");
  gc_sbuf_puts(g->b, "  %inv_freq = const(value=[");
  for (int64_t i = 0; i < D; i++) {
    if (i) gc_sbuf_puts(g->b, ", ");
    put_float(g->b, f[i % half], 1);
  }
  gc_sbuf_printf(g->b, "], dtype=f32);\n");
  free(f);
  line(g, "%%ang = mul(%%pf4, %%inv_freq);");
  const char *suffix = g->dt == GRAPHC_DTYPE_F32 ? "" : "32";
  line(g, "%%cos%s = cos(%%ang);", suffix);
  line(g, "%%sin%s = sin(%%ang);", suffix);
  if (suffix[0]) {
    line(g, "%%cos = cast(%%cos32, to=%s);", g->dn);
    line(g, "%%sin = cast(%%sin32, to=%s);", g->dn);
  }
}

/* q * cos + rotate_half(q) * sin on x [B, S, n, D] (rotate_half: [-x2, x1]). */
static void emit_rope(lg *g, const char *x, const char *out, int64_t n) {
  int64_t D = g->c->head_dim, h = D / 2;
  line(g, "%%%s_1 = slice(%%%s, start=[0, 0, 0, 0], end=[B, S, %lld, %lld]);", x, x, (long long)n, (long long)h);
  line(g, "%%%s_2 = slice(%%%s, start=[0, 0, 0, %lld], end=[B, S, %lld, %lld]);", x, x, (long long)h, (long long)n,
       (long long)D);
  line(g, "%%%s_2n = neg(%%%s_2);", x, x);
  line(g, "%%%s_rot = concat(%%%s_2n, %%%s_1, axis=3);", x, x, x);
  line(g, "%%%s_c = mul(%%%s, %%cos);", x, x);
  line(g, "%%%s_s = mul(%%%s_rot, %%sin);", x, x);
  line(g, "%%%s = add(%%%s_c, %%%s_s);", out, x, x);
}

/* ---- one layer ------------------------------------------------------------------------- */

/* A linear layer: %out = x W^T (+ b), W named `base`.weight ([n, k]). */
static int emit_linear(lg *g, const char *x, const char *out, const char *base, int64_t n, int64_t k, int bias) {
  char wn[256], bn[256], wv[64], bv[64];
  snprintf(wn, sizeof wn, "%s.weight", base);
  snprintf(bn, sizeof bn, "%s.bias", base);
  snprintf(wv, sizeof wv, "%s_w", out);
  snprintf(bv, sizeof bv, "%s_b", out);
  if (param(g, wv, wn, 2, n, k, NULL)) return -1;
  if (!bias) {
    line(g, "%%%s = matmul(%%%s, %%%s, transpose_b=true);", out, x, wv);
    return 0;
  }
  if (param(g, bv, bn, 1, n, 0, NULL)) return -1;
  line(g, "%%%s_mm = matmul(%%%s, %%%s, transpose_b=true);", out, x, wv);
  line(g, "%%%s = add(%%%s_mm, %%%s);", out, out, bv);
  return 0;
}

/* %out = rmsnorm(x) with the weight `name`. */
static int emit_norm(lg *g, const char *x, const char *out, const char *name) {
  char wv[64];
  snprintf(wv, sizeof wv, "%s_w", out);
  if (param(g, wv, name, 1, g->c->hidden_size, 0, NULL)) return -1;
  gc_sbuf_printf(g->b, "  %%%s = rmsnorm(%%%s, %%%s, eps=", out, x, wv);
  put_float(g->b, g->c->rms_norm_eps, 0);
  gc_sbuf_puts(g->b, ");\n");
  return 0;
}

/* Keys or values of layer l, [B, Hkv, kv, D] as %lN_<kind>s: through the cache (stateful)
 * or the new ones; `t` the new ones, [B, Hkv, S, D]. */
static void emit_kv(lg *g, int l, const char *kind, const char *t) {
  const gc_hf_config *c = g->c;
  if (g->o->stateless) {
    line(g, "%%l%d_%ss = reshape(%%%s, shape=[B, %lld, S, %lld]);", l, kind, t, (long long)c->num_key_value_heads,
         (long long)c->head_dim);
    return;
  }
  line(g, "state %%l%d_%sc: %s[%lld, %lld, %lld, %lld] = \"cache.%s.%d\";", l, kind, g->dn, (long long)g->o->max_batch,
       (long long)c->num_key_value_heads, (long long)g->o->max_context, (long long)c->head_dim, kind, l);
  line(g, "%%l%d_%sw = cache_write(%%l%d_%sc, %%%s, %%pos, axis=2);", l, kind, l, kind, t);
  line(g, "%%l%d_%ss = slice(%%l%d_%sw, start=[0, 0, 0, 0], end=[B, %lld, K, %lld]);", l, kind, l, kind,
       (long long)c->num_key_value_heads, (long long)c->head_dim);
}

/* GQA: the Hkv heads of %lN_<kind>s repeated to H heads, %lN_<kind>g (a view). */
static void emit_repeat(lg *g, int l, const char *kind) {
  const gc_hf_config *c = g->c;
  long long H = c->num_attention_heads, Hkv = c->num_key_value_heads, D = c->head_dim, rep = H / Hkv;
  if (rep == 1) {
    line(g, "%%l%d_%sg = reshape(%%l%d_%ss, shape=[B, %lld, %s, %lld]);", l, kind, l, kind, H, g->kv, D);
    return;
  }
  line(g, "%%l%d_%su = reshape(%%l%d_%ss, shape=[B, %lld, 1, %s, %lld]);", l, kind, l, kind, Hkv, g->kv, D);
  line(g, "%%l%d_%se = broadcast(%%l%d_%su, shape=[B, %lld, %lld, %s, %lld]);", l, kind, l, kind, Hkv, rep, g->kv, D);
  line(g, "%%l%d_%sg = reshape(%%l%d_%se, shape=[B, %lld, %s, %lld]);", l, kind, l, kind, H, g->kv, D);
}

/* Self-attention of layer l on %lN_h1 ([B, S, hidden]) -> %lN_attn. */
static int emit_attention(lg *g, int l) {
  const gc_hf_config *c = g->c;
  long long H = c->num_attention_heads, Hkv = c->num_key_value_heads, D = c->head_dim, hid = c->hidden_size;
  char x[32], q[32], k[32], v[32], base[96];
  snprintf(x, sizeof x, "l%d_h1", l);
  const char *names[3] = {"q", "k", "v"};
  long long heads[3] = {H, Hkv, Hkv};
  for (int i = 0; i < 3; i++) {
    char out[32];
    snprintf(out, sizeof out, "l%d_%s", l, names[i]);
    snprintf(base, sizeof base, "model.layers.%d.self_attn.%s_proj", l, names[i]);
    if (emit_linear(g, x, out, base, heads[i] * D, hid, c->qkv_bias)) return -1;
    line(g, "%%l%d_%s4 = reshape(%%l%d_%s, shape=[B, S, %lld, %lld]);", l, names[i], l, names[i], heads[i], D);
  }
  snprintf(q, sizeof q, "l%d_q4", l);
  snprintf(k, sizeof k, "l%d_k4", l);
  snprintf(v, sizeof v, "l%d_v4", l);
  char qr[32], kr[32];
  snprintf(qr, sizeof qr, "l%d_qr", l);
  snprintf(kr, sizeof kr, "l%d_kr", l);
  emit_rope(g, q, qr, H);
  emit_rope(g, k, kr, Hkv);
  line(g, "%%l%d_qt = transpose(%%l%d_qr, perm=[0, 2, 1, 3]);", l, l);
  line(g, "%%l%d_kt = transpose(%%l%d_kr, perm=[0, 2, 1, 3]);", l, l);
  line(g, "%%l%d_vt = transpose(%%l%d_v4, perm=[0, 2, 1, 3]);", l, l);
  char kt[32], vt[32];
  snprintf(kt, sizeof kt, "l%d_kt", l);
  snprintf(vt, sizeof vt, "l%d_vt", l);
  emit_kv(g, l, "k", kt);
  emit_kv(g, l, "v", vt);
  emit_repeat(g, l, "k");
  emit_repeat(g, l, "v");
  line(g, "%%l%d_sc = matmul(%%l%d_qt, %%l%d_kg, transpose_b=true);", l, l, l);
  line(g, "%%l%d_ss = mul(%%l%d_sc, %%scale);", l, l);
  line(g, "%%l%d_sm = add(%%l%d_ss, %%mask);", l, l);
  line(g, "%%l%d_pr = softmax(%%l%d_sm, axis=-1);", l, l);
  line(g, "%%l%d_at = matmul(%%l%d_pr, %%l%d_vg);", l, l, l);
  line(g, "%%l%d_atT = transpose(%%l%d_at, perm=[0, 2, 1, 3]);", l, l);
  line(g, "%%l%d_atm = reshape(%%l%d_atT, shape=[B, S, %lld]);", l, l, H * D);
  char atm[32], out[32];
  snprintf(atm, sizeof atm, "l%d_atm", l);
  snprintf(out, sizeof out, "l%d_attn", l);
  snprintf(base, sizeof base, "model.layers.%d.self_attn.o_proj", l);
  return emit_linear(g, atm, out, base, hid, H * D, c->o_bias);
}

/* Layer l: %xN -> %x(N+1). */
static int emit_layer(lg *g, int l) {
  const gc_hf_config *c = g->c;
  char name[128], x[32], h[32];
  gc_sbuf_printf(g->b, "  # layer %d\n", l);
  snprintf(x, sizeof x, "x%d", l);
  snprintf(h, sizeof h, "l%d_h1", l);
  snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l);
  if (emit_norm(g, x, h, name) || emit_attention(g, l)) return -1;
  line(g, "%%l%d_r1 = add(%%x%d, %%l%d_attn);", l, l, l);
  snprintf(x, sizeof x, "l%d_r1", l);
  snprintf(h, sizeof h, "l%d_h2", l);
  snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight", l);
  if (emit_norm(g, x, h, name)) return -1;
  const char *proj[2] = {"gate", "up"};
  for (int i = 0; i < 2; i++) {
    char out[32], base[96];
    snprintf(out, sizeof out, "l%d_%s", l, proj[i]);
    snprintf(base, sizeof base, "model.layers.%d.mlp.%s_proj", l, proj[i]);
    if (emit_linear(g, h, out, base, c->intermediate_size, c->hidden_size, c->mlp_bias)) return -1;
  }
  line(g, "%%l%d_act = silu(%%l%d_gate);", l, l);
  line(g, "%%l%d_gu = mul(%%l%d_act, %%l%d_up);", l, l, l);
  char gu[32], down[32], base[96];
  snprintf(gu, sizeof gu, "l%d_gu", l);
  snprintf(down, sizeof down, "l%d_down", l);
  snprintf(base, sizeof base, "model.layers.%d.mlp.down_proj", l);
  if (emit_linear(g, gu, down, base, c->hidden_size, c->intermediate_size, c->mlp_bias)) return -1;
  line(g, "%%x%d = add(%%l%d_r1, %%l%d_down);", l + 1, l, l);
  return 0;
}

/* ---- the graph ------------------------------------------------------------------------- */

/* The header: what the graph is, from where. */
static void emit_header(lg *g) {
  const gc_hf_config *c = g->c;
  gc_sbuf *b = g->b;
  gc_sbuf_puts(b, "version 1;\n");
  if (g->o->weights) {
    gc_sbuf_puts(b, "weights \"");
    for (const char *p = g->o->weights; *p; p++) {
      if (*p == '"' || *p == '\\') gc_sbuf_putc(b, '\\');
      gc_sbuf_putc(b, *p);
    }
    gc_sbuf_puts(b, "\";\n");
  }
  gc_sbuf_printf(b, "# %s from %s (graphc generate --emit-graph):\n", c->architecture, g->o->config ? g->o->config : "config.json");
  gc_sbuf_printf(b, "#   %lld layers, hidden %lld, %lld heads (%lld key/value heads) of %lld, MLP %lld, vocabulary %lld, %s\n",
                 (long long)c->num_hidden_layers, (long long)c->hidden_size, (long long)c->num_attention_heads,
                 (long long)c->num_key_value_heads, (long long)c->head_dim, (long long)c->intermediate_size,
                 (long long)c->vocab_size, g->dn);
  gc_sbuf_printf(b, "#   RoPE theta %g%s", c->rope_theta, c->rope_llama3 ? ", llama3 scaling" : "");
  if (c->rope_llama3)
    gc_sbuf_printf(b, " (factor %g, low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %lld)",
                   c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor, (long long)c->rope_original_max_position);
  gc_sbuf_printf(b, "; %s embeddings%s%s\n", c->tie_word_embeddings ? "tied" : "separate",
                 c->qkv_bias ? "; q/k/v biases" : "", c->o_bias ? "; o_proj bias" : "");
  if (c->sliding_window)
    gc_sbuf_printf(b, "#   sliding_window %lld >= the %lld positions compiled: no effect\n", (long long)c->sliding_window,
                   (long long)g->o->max_context);
  if (g->o->stateless)
    gc_sbuf_puts(b, "#   stateless: no KV cache; keys and values are this call's (K = S)\n");
  else
    gc_sbuf_printf(b, "#   KV cache: states cache.k.N / cache.v.N, %lld rows x %lld positions\n", (long long)g->o->max_batch,
                   (long long)g->o->max_context);
}

/* The signature and what every layer shares: embedding, RoPE tables, mask, scale. */
static int emit_prologue(lg *g) {
  const gc_hf_config *c = g->c;
  long long Bm = g->o->max_batch, T = g->o->max_context, V = c->vocab_size, H = c->hidden_size;
  if (g->o->stateless)
    gc_sbuf_printf(g->b, "\ngraph @forward<B: 1..%lld, S: 1..%lld>", Bm, T);
  else
    gc_sbuf_printf(g->b, "\ngraph @forward%s<B: 1..%lld, S: 1..%lld, K: 1..%lld>", g->sample ? "_sample" : "", Bm, T, T);
  if (g->sample)
    gc_sbuf_printf(g->b, "(%%ids: i32[B, S], %%pos: i32[B], %%last: i32[B], %%seed: i64[B], %%inv_temp: f32[B]) -> "
                   "(f32[B, %lld], i32[B], i32[B]) {\n", V);
  else
    gc_sbuf_printf(g->b, "(%%ids: i32[B, S], %%pos: i32[B], %%last: i32[B]) -> (f32[B, %lld], i32[B]) {\n", V);
  if (param(g, "embed", "model.embed_tokens.weight", 2, V, H, NULL)) return -1;
  line(g, "%%x0 = gather(%%embed, %%ids, axis=0);");
  emit_rope_tables(g);
  gc_sbuf_printf(g->b, "  %%scale = const(value=");
  put_float(g->b, 1.0 / sqrt((double)c->head_dim), g->dt == GRAPHC_DTYPE_F32);
  gc_sbuf_printf(g->b, ", dtype=%s);\n", g->dn);
  line(g, "%%ninf = const(value=-inf, dtype=%s);", g->dn);
  line(g, "%%zero = const(value=0.0, dtype=%s);", g->dn);
  if (g->o->stateless) {
    /* key j visible to query i iff j <= i: the causal mask fusion recognizes */
    line(g, "%%qi = iota(shape=[S, S], axis=0, dtype=i32);");
    line(g, "%%kj = iota(shape=[S, S], axis=1, dtype=i32);");
    line(g, "%%future = gt(%%kj, %%qi);");
  } else {
    /* key j visible to query i of row b iff j <= pos[b] + i */
    line(g, "%%kj = iota(shape=[B, 1, S, K], axis=3, dtype=i32);");
    line(g, "%%pq = reshape(%%p, shape=[B, 1, S, 1]);");
    line(g, "%%future = gt(%%kj, %%pq);");
  }
  line(g, "%%mask = select(%%future, %%ninf, %%zero);");
  return 0;
}

/* The last hidden row of each sequence, the final norm, the logits and their argmax. */
static int emit_epilogue(lg *g) {
  const gc_hf_config *c = g->c;
  long long H = c->hidden_size, V = c->vocab_size;
  int L = (int)c->num_hidden_layers;
  gc_sbuf_puts(g->b, "  # the hidden state of token last[b] of each row: row b * S + last[b] of [B * S, hidden]\n");
  line(g, "%%xs = reshape(%%x%d, shape=[-1, %lld]);", L, H);
  line(g, "%%ones = const(value=1, shape=[S], dtype=i32);");
  line(g, "%%slen = reduce_sum(%%ones);");
  line(g, "%%bi = iota(shape=[B], axis=0, dtype=i32);");
  line(g, "%%boff = mul(%%bi, %%slen);");
  line(g, "%%rows = add(%%boff, %%last);");
  line(g, "%%xl = gather(%%xs, %%rows, axis=0);");
  if (emit_norm(g, "xl", "hn", "model.norm.weight")) return -1;
  const char *lm = "embed";
  if (!c->tie_word_embeddings) {
    if (param(g, "lm_head", "lm_head.weight", 2, V, H, "(tie_word_embeddings is false)")) return -1;
    lm = "lm_head";
  }
  if (g->dt == GRAPHC_DTYPE_F32) {
    line(g, "%%logits = matmul(%%hn, %%%s, transpose_b=true);", lm);
  } else {
    line(g, "%%logits_%s = matmul(%%hn, %%%s, transpose_b=true);", g->dn, lm);
    line(g, "%%logits = cast(%%logits_%s, to=f32);", g->dn);
  }
  line(g, "%%argmax = argmax(%%logits, axis=-1);");
  line(g, "%%next = cast(%%argmax, to=i32);");
  if (!g->sample) {
    line(g, "return %%logits, %%next;");
  } else {
    /* a token from softmax(logits * inv_temp) by the Gumbel-max trick: the argmax of
     * logits * inv_temp - log(-log(u)), u = hash_uniform(seed[b], column) */
    gc_sbuf_puts(g->b, "  # sampling: argmax(logits * inv_temp + Gumbel noise from hash_uniform(seed, column))\n");
    line(g, "%%itemp = reshape(%%inv_temp, shape=[B, 1]);");
    line(g, "%%slog = mul(%%logits, %%itemp);");
    line(g, "%%key = reshape(%%seed, shape=[B, 1]);");
    line(g, "%%col = iota(shape=[B, %lld], axis=1, dtype=i32);", V);
    line(g, "%%u = hash_uniform(%%key, %%col);");
    line(g, "%%lu = log(%%u);");
    line(g, "%%nlu = neg(%%lu);");
    line(g, "%%llu = log(%%nlu);");
    line(g, "%%gum = sub(%%slog, %%llu);");
    line(g, "%%sam = argmax(%%gum, axis=-1);");
    line(g, "%%sampled = cast(%%sam, to=i32);");
    line(g, "return %%logits, %%next, %%sampled;");
  }
  gc_sbuf_puts(g->b, "}\n");
  return 0;
}

int gc_llama_graph(const gc_hf_config *cfg, const gc_safetensors *w, const gc_llama_opts *o, gc_sbuf *out,
                   gc_dtype *dtype, gc_diags *d) {
  GC_ASSERT(o->max_batch >= 1 && o->max_context >= 1);
  lg g = {.b = out, .c = cfg, .w = w, .o = o, .d = d};
  snprintf(g.kv, sizeof g.kv, "%s", o->stateless ? "S" : "K");
  if (cfg->sliding_window && cfg->sliding_window < o->max_context) {
    gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0},
                "%s: sliding_window %lld is shorter than the %lld positions compiled (max_context); sliding-window "
                "attention is not supported: compile at most %lld positions",
                o->config ? o->config : "config.json", (long long)cfg->sliding_window, (long long)o->max_context,
                (long long)cfg->sliding_window);
    return -1;
  }
  const gc_st_tensor *emb = tensor(&g, "model.embed_tokens.weight", 2, cfg->vocab_size, cfg->hidden_size, NULL);
  if (!emb) return -1;
  g.dt = emb->dtype;
  g.dn = graphc_dtype_name(g.dt);
  *dtype = g.dt;
  emit_header(&g);
  /* stateful: @forward, then @forward_sample (the same model, sampling on the device) */
  for (g.sample = 0; g.sample <= !o->stateless; g.sample++) {
    if (emit_prologue(&g)) return -1;
    for (int l = 0; l < cfg->num_hidden_layers; l++)
      if (emit_layer(&g, l)) return -1;
    if (emit_epilogue(&g)) return -1;
  }
  if (out->failed) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory writing the graph");
    return -1;
  }
  return 0;
}
