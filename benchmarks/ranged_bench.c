/* ranged_bench.c - one executable for many shapes (graphc_compile_ranged) against an executable
 * compiled for exactly each shape (issue 35's targets): the same model, the same inputs, the
 * same backend and timing (median of host-timed graphc_executable_run calls after a warm-up).
 *
 *   ranged_bench MODEL.graph [--weights W] [--backend cuda|cpu|interp] [--runs N]
 *                --shape SYM=V,SYM=V [--shape ...]
 *
 * Per shape: the ranged executable's first run (it compiles the binding), its median run, the
 * exact executable's compile and median run, and ranged / exact. Then the totals: compile time
 * of all exact executables against the ranged one's, and what switching costs: the first two
 * shapes alternated through the ranged executable against their exact executables (10 x runs
 * runs, microseconds; issue 35's bar: a switch between cached shapes adds <= 5 us). Inputs are deterministic: floats in
 * [-1, 1), integers 0..6 (valid token ids and masks of 1 for a language model's inputs would be
 * the caller's job; any value works for timing). The model's symbols not named in --shape stay
 * as the model binds them.
 *
 * Build (not part of the CMake targets):
 *   gcc -std=gnu17 -O2 -Iinclude benchmarks/ranged_bench.c -Lbuild -lgraphc \
 *       -Wl,-rpath,$PWD/build -lm -o build/ranged_bench
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graphc/graphc.h"

#define MAX_SHAPES 16
#define MAX_SYMS 8

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void check(graphc_status_t st, const graphc_error_t *err, graphc_context_t *ctx, const char *what) {
  if (st == GRAPHC_STATUS_OK) return;
  fprintf(stderr, "ranged_bench: %s: %s\n%s", what, err->message, graphc_context_diagnostics(ctx));
  exit(1);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct shape {
  int n;
  char names[MAX_SYMS][32];
  int64_t vals[MAX_SYMS];
} shape;

static graphc_model_t *load(graphc_context_t *ctx, const char *file, const char *weights, const shape *s) {
  graphc_model_t *m;
  graphc_error_t err;
  check(graphc_model_load_file(ctx, file, &m, &err), &err, ctx, "load");
  if (weights) check(graphc_model_set_weights(m, weights, &err), &err, ctx, "weights");
  for (int i = 0; s && i < s->n; i++) check(graphc_model_bind(m, s->names[i], s->vals[i], &err), &err, ctx, "bind");
  return m;
}

/* Host tensors shaped like exact's inputs and outputs. */
static void make_io(graphc_executable_t *exact, graphc_tensor_t *in, graphc_tensor_t *out) {
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass ? graphc_executable_num_outputs(exact) : graphc_executable_num_inputs(exact);
    for (size_t i = 0; i < n; i++) {
      graphc_tensor_info_t info;
      if (pass)
        graphc_executable_output_info(exact, i, &info);
      else
        graphc_executable_input_info(exact, i, &info);
      graphc_tensor_t *t = pass ? &out[i] : &in[i];
      *t = (graphc_tensor_t){.dtype = info.dtype, .rank = info.rank, .nbytes = info.nbytes};
      memcpy(t->dims, info.dims, sizeof t->dims);
      t->data = calloc(1, info.nbytes ? info.nbytes : 1);
      size_t es = graphc_dtype_size(info.dtype);
      for (size_t k = 0; !pass && k < info.nbytes / es; k++) {
        unsigned char *p = (unsigned char *)t->data + k * es;
        uint64_t h = (k * 0x9E3779B97F4A7C15ull) >> 40;
        if (info.dtype == GRAPHC_DTYPE_F32) {
          float v = (float)((double)(h % 2000) / 1000.0 - 1.0);
          memcpy(p, &v, 4);
        } else if (info.dtype == GRAPHC_DTYPE_I64) {
          int64_t v = (int64_t)(k % 7);
          memcpy(p, &v, 8);
        } else if (info.dtype == GRAPHC_DTYPE_I32) {
          int32_t v = (int32_t)(k % 7);
          memcpy(p, &v, 4);
        } else if (es == 1) {
          *p = (unsigned char)(k % 2);
        }  /* f16 / bf16 stay 0: a fine value for timing */
      }
    }
  }
}

/* Median ms of `runs` runs of exe. */
static double median_run(graphc_context_t *ctx, graphc_executable_t *exe, graphc_tensor_t *in, size_t ni,
                         graphc_tensor_t *out, size_t no, int runs) {
  double *t = malloc(sizeof *t * (size_t)runs);
  graphc_error_t err;
  for (int r = 0; r < runs; r++) {
    double t0 = now_ms();
    check(graphc_executable_run(exe, in, ni, out, no, &err), &err, ctx, "run");
    t[r] = now_ms() - t0;
  }
  qsort(t, (size_t)runs, sizeof *t, cmp);
  double m = t[runs / 2];
  free(t);
  return m;
}

int main(int argc, char **argv) {
  const char *file = NULL, *weights = NULL;
  graphc_backend_t be = GRAPHC_BACKEND_DEFAULT;
  int runs = 50, n_shapes = 0;
  static shape shapes[MAX_SHAPES];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--weights") && i + 1 < argc) {
      weights = argv[++i];
    } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
      const char *b = argv[++i];
      be = !strcmp(b, "cuda") ? GRAPHC_BACKEND_CUDA : !strcmp(b, "interp") ? GRAPHC_BACKEND_INTERP : GRAPHC_BACKEND_CPU;
    } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--shape") && i + 1 < argc && n_shapes < MAX_SHAPES) {
      shape *s = &shapes[n_shapes++];
      char buf[256];
      snprintf(buf, sizeof buf, "%s", argv[++i]);
      for (char *tok = strtok(buf, ","); tok && s->n < MAX_SYMS; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        snprintf(s->names[s->n], sizeof s->names[0], "%s", tok);
        s->vals[s->n++] = atoll(eq + 1);
      }
    } else {
      file = argv[i];
    }
  }
  if (!file || !n_shapes || runs < 1) {
    fprintf(stderr, "usage: ranged_bench MODEL.graph [--weights W] [--backend B] [--runs N] --shape S=V,T=V ...\n");
    return 2;
  }
  graphc_context_t *ctx;
  graphc_error_t err;
  graphc_context_create(&ctx);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  graphc_model_t *rm = load(ctx, file, weights, NULL);
  graphc_executable_t *ranged;
  double t0 = now_ms();
  check(graphc_compile_ranged(rm, &o, &ranged, &err), &err, ctx, "compile_ranged");
  double ranged_compile = now_ms() - t0, exact_compile_total = 0, first_total = 0;
  printf("%s on %s, %d runs a shape (median of host-timed runs)\n", file,
         graphc_backend_name(graphc_executable_backend(ranged)), runs);
  printf("| shape | ranged 1st run ms | ranged ms | exact compile ms | exact ms | ranged / exact |\n"
         "|---|---:|---:|---:|---:|---:|\n");
  graphc_executable_t *exacts[MAX_SHAPES];
  graphc_tensor_t *ins[MAX_SHAPES], *outs[MAX_SHAPES];
  size_t nis[MAX_SHAPES], nos[MAX_SHAPES];
  graphc_model_t *models[MAX_SHAPES];
  for (int k = 0; k < n_shapes; k++) {
    graphc_model_t *m = models[k] = load(ctx, file, weights, &shapes[k]);
    graphc_executable_t *exact;
    t0 = now_ms();
    check(graphc_compile(m, &o, &exact, &err), &err, ctx, "compile");
    double ec = now_ms() - t0;
    exact_compile_total += ec;
    size_t ni = graphc_executable_num_inputs(exact), no = graphc_executable_num_outputs(exact);
    graphc_tensor_t *in = calloc(ni + 1, sizeof *in), *out = calloc(no + 1, sizeof *out);
    make_io(exact, in, out);
    t0 = now_ms();
    check(graphc_executable_run(ranged, in, ni, out, no, &err), &err, ctx, "ranged first run");
    double first = now_ms() - t0;
    first_total += first;
    for (int w = 0; w < 3; w++) check(graphc_executable_run(exact, in, ni, out, no, &err), &err, ctx, "warm-up");
    double re = median_run(ctx, ranged, in, ni, out, no, runs), ex = median_run(ctx, exact, in, ni, out, no, runs);
    char label[256] = "";
    for (int i = 0; i < shapes[k].n; i++)
      snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s=%lld", i ? " " : "", shapes[k].names[i],
               (long long)shapes[k].vals[i]);
    printf("| %s | %.3f | %.4f | %.1f | %.4f | %.3f |\n", label, first, re, ec, ex, re / ex);
    exacts[k] = exact, ins[k] = in, outs[k] = out, nis[k] = ni, nos[k] = no;
  }
  printf("\ncompiles: ranged %.1f ms up front + %.1f ms of first runs (bindings compiled there), exact %.1f ms for "
         "%d executables\n", ranged_compile, first_total, exact_compile_total, n_shapes);
  if (n_shapes >= 2) {  /* switching: shapes 0 and 1 alternated, each run timed on the host */
    int n = 10 * runs;
    double *te = malloc(sizeof *te * (size_t)n), *tr = malloc(sizeof *tr * (size_t)n);
    for (int r = 0; r < n; r++) {
      int k = r & 1;
      double t0 = now_us();
      check(graphc_executable_run(exacts[k], ins[k], nis[k], outs[k], nos[k], &err), &err, ctx, "exact run");
      double t1 = now_us();
      check(graphc_executable_run(ranged, ins[k], nis[k], outs[k], nos[k], &err), &err, ctx, "ranged run");
      te[r] = t1 - t0, tr[r] = now_us() - t1;
    }
    qsort(te, (size_t)n, sizeof *te, cmp);
    qsort(tr, (size_t)n, sizeof *tr, cmp);
    printf("switching between the first two shapes (%d runs, medians): exact executables %.2f us, ranged %.2f us, "
           "adds %.2f us\n", n, te[n / 2], tr[n / 2], tr[n / 2] - te[n / 2]);
    free(te);
    free(tr);
  }
  printf("%s", graphc_executable_stats(ranged));
  for (int k = 0; k < n_shapes; k++) {
    for (size_t i = 0; i < nis[k]; i++) free(ins[k][i].data);
    for (size_t i = 0; i < nos[k]; i++) free(outs[k][i].data);
    free(ins[k]);
    free(outs[k]);
    graphc_executable_destroy(exacts[k]);
    graphc_model_destroy(models[k]);
  }
  graphc_executable_destroy(ranged);
  graphc_model_destroy(rm);
  graphc_context_destroy(ctx);
  return 0;
}
