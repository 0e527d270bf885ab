/* tune.c - `graphc tune`: measure the configurations of a graph's tunable kernels.
 *
 *   graphc tune FILE [--bind B=N]... [--codegen nvrtc|llvm] [--runs N] [--weights W]
 *                    [--arch sm_XX] -o TUNING
 *
 * Compiles the graph for the CUDA backend once to find its tunable kernels (those
 * whose Kernel IR carries a tuning key: the tensor-core matmuls), then once per
 * candidate configuration with a temporary tuning file that gives every key that
 * configuration, times every kernel (eager launches bracketed by events, median
 * of --runs, default 30) and writes, per key, the fastest configuration to TUNING
 * (format: codegen/tuning.h), keys in the order the graph first uses them.
 * `graphc compile|run|bench --tuning TUNING` then builds the same kernels with
 * those configurations. Needs a GPU; without one it says so and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/tuning.h"
#include "driver/cuda_backend.h"
#include "weights/safetensors.h"
#include "tools/cli.h"

static const char *const usage_tune =
    "usage: graphc tune FILE -o TUNING [options]\n"
    "Time each configuration of FILE's tunable kernels (tensor-core matmul tiles: the mma.sync\n"
    "kernel's, and on sm_90 the warpgroup-MMA kernels' wg128x256 .. wg64x64, tf32 wg256x128 ..) on the\n"
    "GPU and write the fastest per problem to TUNING, which compile, run and bench read\n"
    "with --tuning TUNING.\n\noptions:\n"
    "  --bind S=N        bind symbolic dim S of the entry graph to N (repeatable)\n"
    "  --entry @name     entry graph (default: the first)\n"
    "  --codegen C       llvm | nvrtc (default llvm)\n"
    "  --arch sm_XX      GPU architecture (default: the device's)\n"
    "  --runs N          timed launches per kernel and configuration (default 30)\n"
    "  --weights W       weights file (default: the file's; random weights when missing)\n"
    "  --inputs F        inputs by argument name from safetensors file F (default: random)\n"
    "  --precision P     f32 | tf32 | f16 | bf16 | fp8 (default f32; see graphc run --help)\n"
    "  --keep-f32=REGEX  ops whose result name matches REGEX stay f32\n"
    "  -o TUNING         the tuning file to write\n";

enum { N_TILES = 10, MAX_KEYS = 256 };
/* BM, BN, and 1 for the warpgroup-MMA kernels' tiles (sm_90 only; 256x128 only for tf32) */
static const int k_tiles[N_TILES][3] = {{128, 128, 0}, {128, 64, 0}, {64, 128, 0}, {64, 64, 0}, {128, 256, 1},
                                        {128, 128, 1}, {128, 64, 1}, {64, 128, 1}, {64, 64, 1}, {256, 128, 1}};

/* Does tile t apply to the problem `key`? tf32 problems take only the tf32 warpgroup
 * kernel's tiles (codegen/tuning.h), the others every tile but 256x128. */
static int tile_ok(const char *key, int t) {
  int tf32 = strncmp(key, "matmul tf32 ", 12) == 0;
  if (!tf32) return k_tiles[t][0] != 256;
  return k_tiles[t][2] && k_tiles[t][1] != 256;
}

/* "128x64" or "wg128x256" */
static const char *tile_name(int t, char *buf, size_t len) {
  snprintf(buf, len, "%s%dx%d", k_tiles[t][2] ? "wg" : "", k_tiles[t][0], k_tiles[t][1]);
  return buf;
}

typedef struct tune_state {
  int sm;                        /* the device's; the wg tiles only on sm_90 */
  int n_keys;
  char keys[MAX_KEYS][GC_TUNING_KEY_MAX];
  double ms[MAX_KEYS][N_TILES];  /* summed median kernel time per key; < 0: not measured */
} tune_state;

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

/* Index of key in st (added when new); -1 when the table is full. */
static int key_index(tune_state *st, const char *key) {
  for (int i = 0; i < st->n_keys; i++)
    if (strcmp(st->keys[i], key) == 0) return i;
  if (st->n_keys == MAX_KEYS) return -1;
  snprintf(st->keys[st->n_keys], GC_TUNING_KEY_MAX, "%s", key);
  for (int t = 0; t < N_TILES; t++) st->ms[st->n_keys][t] = -1;
  return st->n_keys++;
}

/* Write a tuning file giving every key of st tile `ti` (ti < 0: the winners). */
static int write_tuning(const char *path, const tune_state *st, int ti, const char *device) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "graphc-tuning 1\n");
  if (ti < 0) fprintf(f, "# written by graphc tune on %s; fastest tile per problem\n", device);
  for (int i = 0; i < st->n_keys; i++) {
    int t = ti;
    if (t >= 0 && !tile_ok(st->keys[i], t)) continue;  /* the heuristic's tile in this run */
    if (t < 0) {
      for (int j = 0; j < N_TILES; j++)
        if (st->ms[i][j] >= 0 && (t < 0 || st->ms[i][j] < st->ms[i][t])) t = j;
      if (t < 0) continue;  /* nothing measured (not on sm_90) */
    }
    char tn[32];
    fprintf(f, "%s tile=%s\n", st->keys[i], tile_name(t, tn, sizeof tn));
  }
  return fclose(f) == 0 ? 0 : -1;
}

/* Compile with the current options, run once, time every kernel; add the tunable
 * kernels' medians to column ti (ti < 0: only collect the keys). */
static graphc_status_t measure(graphc_model_t *m, cli_opts *o, tune_state *st, int ti, char *device,
                               size_t device_len, char *tmp_weights, size_t tmp_len, graphc_error_t *err) {
  graphc_executable_t *exe = NULL;
  graphc_tensor_t *in = NULL, *out = NULL;
  gc_safetensors *file = NULL;
  size_t n_in = 0, n_out = 0;
  float *kms = NULL, *col = NULL;
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  graphc_status_t rc = cli_compile_cuda(m, o, &exe, tmp_weights, tmp_len, err);
  if (rc != GRAPHC_STATUS_OK) goto out;
  gc_cuda_info info;
  if ((rc = gc_cuda_exec_info(exe, &info)) != GRAPHC_STATUS_OK) goto out;
  snprintf(device, device_len, "%s (sm_%d, %d SMs)", info.device, info.device_sm, info.num_sms);
  st->sm = info.device_sm;
  const gc_plan *p = info.plan;
  int nl = p->n_launches;
  if (ti < 0) {
    for (int i = 0; i < nl; i++) {
      const kir_kernel *k = p->kir->kernels[p->launches[i]];
      if (k->tune_key[0] && key_index(st, k->tune_key) < 0) {
        rc = gc_set_error(err, GRAPHC_STATUS_UNSUPPORTED, "more than %d tunable problems", MAX_KEYS);
        goto out;
      }
    }
    goto out;
  }
  n_in = graphc_executable_num_inputs(exe);
  n_out = graphc_executable_num_outputs(exe);
  in = calloc(n_in + 1, sizeof *in);
  out = calloc(n_out + 1, sizeof *out);
  kms = calloc((size_t)o->runs * (size_t)(nl > 0 ? nl : 1) + 1, sizeof *kms);
  col = calloc((size_t)o->runs + 1, sizeof *col);
  if (!in || !out || !kms || !col) {
    rc = gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    goto out;
  }
  if ((rc = cli_make_tensors(exe, o, in, out, &file, err)) != GRAPHC_STATUS_OK) goto out;
  if ((rc = graphc_executable_run(exe, in, n_in, out, n_out, err)) != GRAPHC_STATUS_OK) goto out;
  if ((rc = gc_cuda_time_kernels(exe, o->runs, kms, &d)) != GRAPHC_STATUS_OK) {
    gc_diags_to_error(&d, err);
    goto out;
  }
  for (int i = 0; i < nl; i++) {
    const kir_kernel *k = p->kir->kernels[p->launches[i]];
    if (!k->tune_key[0]) continue;
    int ki = key_index(st, k->tune_key);
    if (ki < 0 || !tile_ok(st->keys[ki], ti)) continue;
    for (int r = 0; r < o->runs; r++) col[r] = kms[(size_t)r * nl + i];
    qsort(col, (size_t)o->runs, sizeof *col, cmp_float);
    st->ms[ki][ti] = (st->ms[ki][ti] < 0 ? 0 : st->ms[ki][ti]) + col[o->runs / 2];
  }
out:
  for (size_t i = 0; in && i < n_in; i++) free(in[i].data);
  for (size_t i = 0; out && i < n_out; i++) free(out[i].data);
  free(in);
  free(out);
  free(kms);
  free(col);
  gc_safetensors_free(file);
  gc_diags_free(&d);
  graphc_executable_destroy(exe);
  return rc;
}

int gc_cli_tune(int argc, char **argv) {
  cli_opts o;
  if (cli_parse(argc, argv, &o, usage_tune) != 0) return 1;
  if (o.help) return 0;
  if (!o.output) {
    fprintf(stderr, "graphc tune: give -o TUNING (the file to write)\n%s", usage_tune);
    return 1;
  }
  if (o.copts.tuning) {
    fprintf(stderr, "graphc tune: --tuning is what tune writes (-o); it does not read one\n");
    return 1;
  }
  if (o.copts.backend != GRAPHC_BACKEND_DEFAULT && o.copts.backend != GRAPHC_BACKEND_CUDA) {
    fprintf(stderr, "graphc tune: only the cuda backend has tunable kernels\n");
    return 1;
  }
  o.copts.backend = GRAPHC_BACKEND_CUDA;
  o.copts.eager = 1;
  if (o.runs <= 0) o.runs = 30;  /* --runs not given */
  if (!cli_have_gpu("graphc tune: no GPU to measure on")) return 1;

  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  memset(&err, 0, sizeof err);
  graphc_model_t *m = NULL;
  char tmp_weights[256] = "", tmp_tuning[256], device[320] = "";
  snprintf(tmp_tuning, sizeof tmp_tuning, "/tmp/graphc-tune-%ld.txt", (long)getpid());
  tune_state *st = calloc(1, sizeof *st);
  graphc_status_t rc = st ? cli_load(ctx, &o, &m, &err)
                          : gc_set_error(&err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  if (rc == GRAPHC_STATUS_OK)
    rc = measure(m, &o, st, -1, device, sizeof device, tmp_weights, sizeof tmp_weights, &err);
  for (int t = 0; rc == GRAPHC_STATUS_OK && st->n_keys && t < N_TILES; t++) {
    if (k_tiles[t][2] && st->sm != 90) continue;
    int any = 0;
    for (int i = 0; i < st->n_keys; i++) any |= tile_ok(st->keys[i], t);
    if (!any) continue;
    if (write_tuning(tmp_tuning, st, t, device) != 0) {
      rc = gc_set_error(&err, GRAPHC_STATUS_IO_ERROR, "cannot write %s", tmp_tuning);
      break;
    }
    o.copts.tuning = tmp_tuning;
    rc = measure(m, &o, st, t, device, sizeof device, tmp_weights, sizeof tmp_weights, &err);
    o.copts.tuning = NULL;
  }
  if (rc == GRAPHC_STATUS_OK && write_tuning(o.output, st, -1, device) != 0)
    rc = gc_set_error(&err, GRAPHC_STATUS_IO_ERROR, "cannot write the tuning file %s", o.output);
  int code = cli_report(ctx, rc, &err);
  if (rc == GRAPHC_STATUS_OK) {
    printf("graphc tune: %s on %s: %d tunable problem%s -> %s\n", o.file, device, st->n_keys,
           st->n_keys == 1 ? "" : "s", o.output);
    for (int i = 0; i < st->n_keys; i++) {
      printf("  %s:", st->keys[i]);
      char tn[32];
      for (int t = 0; t < N_TILES; t++)
        if (st->ms[i][t] >= 0) printf("  %s %.4f ms", tile_name(t, tn, sizeof tn), st->ms[i][t]);
      printf("\n");
    }
  }
  free(st);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  unlink(tmp_tuning);
  if (tmp_weights[0]) unlink(tmp_weights);
  return code;
}
