/* bench.c - `graphc bench`: time a compiled graph on the GPU (or the CPU).
 *
 *   graphc bench FILE [--bind B=N]... [--codegen nvrtc|llvm] [--runs N] [--warmup N]
 *                     [--weights W] [--seed S] [--arch sm_XX] [--eager] [--stats]
 *                     [--backend cuda|cpu] [--json]
 *
 * In one process: compile for the CUDA backend, run once with random inputs
 * (this uploads them), measure the device's copy bandwidth (cuMemcpyDtoD of a
 * 1 GiB buffer, bytes read + written), then time the whole graph (CUDA graph
 * replay, or eager launches with --eager) and every kernel separately (eager
 * launches bracketed by events). Achieved bandwidth and FLOP rate come from
 * the plan's modeled bytes and flops (kir_kernel.bytes_moved / flops); the
 * bandwidth is also shown as a percentage of the measured copy bandwidth.
 * Without a GPU it says so and exits 1. --backend cpu: the same report for the
 * host (tools/bench_cpu.c). --json prints only the whole-graph times, as one JSON
 * object on stdout, for scripts (benchmarks/models/run.py); it skips the copy
 * bandwidth and per-kernel tables.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "driver/cuda_backend.h"
#include "driver/settings.h"
#include "runtime/host_exec.h"
#include "weights/safetensors.h"
#include "tools/cli.h"

static const char *const usage_bench =
    "usage: graphc bench FILE [options]\n"
    "Time FILE's entry graph on the GPU (--backend cpu: on the host, against a measured memcpy\n"
    "bandwidth and GEMM rate): whole-graph time (median, min, p90), per-kernel\n"
    "times, achieved GB/s and TFLOP/s from the plan's modeled bytes and flops, and the\n"
    "fraction of the device's measured copy bandwidth.\n\noptions:\n"
    "  --backend B       cuda (default) | cpu: the cpu backend, wall clock\n"
    "  --json            print only the whole-graph times as one JSON object\n"
    "                    (median_ms, min_ms, p90_ms, queued_ms on cuda, runs, warmup, threads)\n"
    "  --bind S=N        bind symbolic dim S of the entry graph to N (repeatable)\n"
    "  --entry @name     entry graph (default: the first)\n"
    "  --codegen C       llvm | nvrtc (default llvm)\n"
    "  --arch sm_XX      GPU architecture (default: the device's)\n"
    "  --runs N          timed runs (default 100)\n"
    "  --warmup N        untimed runs first (default 10)\n"
    "  --weights W       weights file (default: the file's; random weights when missing)\n"
    "  --inputs F        inputs by argument name from safetensors file F (default: random)\n"
    "  --seed N          seed for random inputs (default 0)\n"
    "  --eager           time eager launches instead of CUDA graph replay\n"
    "  --pipeline N      also time requests with host inputs and outputs: serial runs against\n"
    "                    N execution contexts in flight (copies overlapping compute)\n"
    "  --precision P     f32 | tf32 | f16 | bf16 | fp8 (default f32; see graphc run --help)\n"
    "  --keep-f32=REGEX  ops whose result name matches REGEX stay f32\n"
    "  --outputs LIST    keep only these results of the entry (comma-separated names)\n"
    "  --stats           print compile statistics\n";

/* qsort comparator for floats. */
static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Value at quantile q (0..1) of n sorted floats (nearest rank). */
static double quantile(const float *sorted, int n, double q) {
  int i = (int)ceil(q * n) - 1;
  if (i < 0) i = 0;
  if (i >= n) i = n - 1;
  return sorted[i];
}

/* Median of n floats (sorts them in place). */
static double median(float *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_float);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Print diagnostics collected in d (if any) and free them. */
static void print_diags(gc_diags *d) {
  char *r = gc_diags_render(d);
  if (r) fputs(r, stderr);
  free(r);
  gc_diags_free(d);
}

/* --json: the whole-graph times as one JSON object on stdout, given the run times sorted and
 * their median (queued < 0: not measured; threads 0: not a cpu run). */
static void print_json(const cli_opts *o, const char *backend, int runs, const float *sorted, double med,
                       double queued, int threads) {
  printf("{\"backend\": \"%s\", \"runs\": %d, \"warmup\": %d, \"median_ms\": %.6f, "
         "\"min_ms\": %.6f, \"p90_ms\": %.6f",
         backend, runs, o->warmup, med, sorted[0], quantile(sorted, runs, 0.9));
  if (queued >= 0) printf(", \"queued_ms\": %.6f", queued);
  if (threads > 0) printf(", \"threads\": %d", threads);
  printf("}\n");
}

/* The timing tables, given a compiled, once-run executable. Returns 0 on success. */
static int bench_exec(graphc_executable_t *exe, const cli_opts *o) {
  gc_cuda_info info;
  if (gc_cuda_exec_info(exe, &info) != GRAPHC_STATUS_OK) return -1;
  const gc_plan *p = info.plan;
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  int rc = -1;
  int runs = o->runs > 0 ? o->runs : 100, nl = p->n_launches;
  int kruns = runs < 50 ? runs : 50;
  float *ms = calloc((size_t)runs + 1, sizeof *ms);
  float *kms = calloc((size_t)kruns * (nl > 0 ? nl : 1) + 1, sizeof *kms);
  float *col = calloc((size_t)kruns + 1, sizeof *col);
  if (!ms || !kms || !col) {
    fprintf(stderr, "graphc bench: out of memory\n");
    goto out;
  }
  if (o->json) {
    if (gc_cuda_time_runs(exe, o->warmup, runs, ms, &d) != GRAPHC_STATUS_OK) goto out;
    double med = median(ms, runs);  /* sorts ms */
    float *qms = calloc((size_t)runs, sizeof *qms);
    if (!qms || gc_cuda_time_queued(exe, o->warmup, runs, qms, &d) != GRAPHC_STATUS_OK) {
      free(qms);
      goto out;
    }
    print_json(o, "cuda", runs, ms, med, median(qms, runs), 0);
    free(qms);
    rc = 0;
    goto out;
  }
  printf("graphc bench: %s\n", o->file);
  printf("  device   %s (sm_%d, %d SMs, %.1f GiB), driver CUDA %d.%d\n", info.device,
         info.device_sm, info.num_sms, (double)info.total_mem / (1024.0 * 1024 * 1024),
         info.driver_version / 1000, info.driver_version % 1000 / 10);
  printf("  code     sm_%d via %s, module from %s, %d kernels, %d launches\n", info.sm,
         graphc_codegen_name(gc_codegen_resolve(o->copts.codegen)),
         info.from_ptx ? "PTX (driver JIT)" : "cubin", p->kir->n_kernels, nl);

  double copy_gbps = 0;
  size_t copy_bytes = 0;
  if (gc_cuda_copy_bandwidth(exe, (size_t)1 << 30, 20, &copy_gbps, &copy_bytes, &d) !=
      GRAPHC_STATUS_OK)
    goto out;
  printf("  copy     %.1f GB/s device copy bandwidth (cuMemcpyDtoD of %.0f MiB x 20, read + "
         "write)\n",
         copy_gbps, (double)copy_bytes / (1024.0 * 1024));

  if (gc_cuda_time_runs(exe, o->warmup, runs, ms, &d) != GRAPHC_STATUS_OK) goto out;
  double bytes = 0, flops = 0;
  for (int i = p->n_prologue; i < nl; i++) {  /* the prologue does not run per run */
    const kir_kernel *k = p->kir->kernels[p->launches[i]];
    bytes += k->bytes_moved;
    flops += k->flops;
  }
  double med = median(ms, runs);  /* sorts ms */
  printf("\nwhole graph (%s, %d runs after %d warm-up):\n",
         info.eager ? "eager launches" : "CUDA graph replay", runs, o->warmup);
  printf("  median %.4f ms   min %.4f ms   p90 %.4f ms   (each run alone, as a caller waits)\n",
         med, ms[0], quantile(ms, runs, 0.9));
  /* The copy baseline queues its copies back to back; so, for the roofline ratio, do the
   * runs: their device time without the idle wait for the host to issue each one. */
  if (gc_cuda_time_queued(exe, o->warmup, runs, ms, &d) != GRAPHC_STATUS_OK) goto out;
  double qmed = median(ms, runs);
  printf("  queued %.4f ms   min %.4f ms   p90 %.4f ms   (runs back to back, as the copies)\n",
         qmed, ms[0], quantile(ms, runs, 0.9));
  double gbps = qmed > 0 ? bytes / (qmed * 1e-3) / 1e9 : 0;
  printf("  modeled %.3f MB, %.3f GFLOP -> %.1f GB/s (%.1f%% of copy), %.3f TFLOP/s (queued)\n",
         bytes / 1e6, flops / 1e9, gbps, copy_gbps > 0 ? 100.0 * gbps / copy_gbps : 0,
         qmed > 0 ? flops / (qmed * 1e-3) / 1e12 : 0);
  /* the CPU side of a run: what a caller pays per run before the GPU does anything */
  if (gc_cuda_time_issue(exe, runs, ms, &d) != GRAPHC_STATUS_OK) goto out;
  qsort(ms, (size_t)runs, sizeof *ms, cmp_float);
  printf("  host     %.1f us per run to issue (%s; median, min %.1f us)\n",
         runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]),
         info.eager ? "every kernel launch" : "one cuGraphLaunch", ms[0]);

  if (nl > 0) {
    if (gc_cuda_time_kernels(exe, kruns, kms, &d) != GRAPHC_STATUS_OK) goto out;
    printf("\nper kernel (eager launches, median of %d runs):\n", kruns);
    printf("  %3s  %-36s %14s %10s %10s %9s %7s %8s\n", "#", "kernel", "grid x block", "ms", "MB",
           "GB/s", "%copy", "TFLOP/s");
    double sum = 0;
    for (int i = 0; i < nl; i++) {
      const kir_kernel *k = p->kir->kernels[p->launches[i]];
      for (int r = 0; r < kruns; r++) col[r] = kms[(size_t)r * nl + i];
      double t = median(col, kruns);
      if (i >= p->n_prologue) sum += t;
      double g = t > 0 ? k->bytes_moved / (t * 1e-3) / 1e9 : 0;
      char geo[48];
      unsigned grid = 0, block = 0;
      gc_cuda_kernel_geometry(exe, p->launches[i], &grid, &block);
      snprintf(geo, sizeof geo, "%s%ux%u", k->launch.kind == KIR_LAUNCH_BLOCKS ? "B " : "", grid,
               block);
      printf("  %3d%c %-36.36s %14s %10.4f %10.3f %9.1f %6.1f%% %8.3f\n", i, i < p->n_prologue ? '*' : ' ',
             k->name, geo, t,
             k->bytes_moved / 1e6, g, copy_gbps > 0 ? 100.0 * g / copy_gbps : 0,
             t > 0 ? k->flops / (t * 1e-3) / 1e12 : 0);
    }
    printf("  %3s  %-36s %14s %10.4f %10.3f %9.1f %6.1f%%\n", "", "sum of kernels", "", sum,
           bytes / 1e6, sum > 0 ? bytes / (sum * 1e-3) / 1e9 : 0,
           sum > 0 && copy_gbps > 0 ? 100.0 * bytes / (sum * 1e-3) / 1e9 / copy_gbps : 0);
    printf("  (grid x block as launched; B: one thread block per group of a row kernel)\n");
    if (p->n_prologue)
      printf("  (*: reads only weights; runs once per weights, not in the runs above nor in the sum)\n");
  }
  rc = 0;
out:
  if (d.n) print_diags(&d);
  else gc_diags_free(&d);
  free(ms);
  free(kms);
  free(col);
  return rc;
}

/* --backend cpu --json: whole runs with host tensors after o->warmup untimed ones; median,
 * min, p90 as JSON (the full report: tools/bench_cpu.c). Returns 0 on success. */
static int bench_host(graphc_executable_t *exe, const cli_opts *o, const graphc_tensor_t *in,
                      size_t n_in, graphc_tensor_t *out, size_t n_out) {
  int runs = o->runs > 0 ? o->runs : 100;
  float *ms = calloc((size_t)runs, sizeof *ms);
  if (!ms) {
    fprintf(stderr, "graphc bench: out of memory\n");
    return -1;
  }
  graphc_error_t err;
  memset(&err, 0, sizeof err);
  for (int r = -o->warmup; r < runs; r++) {
    double t0 = cli_now_ms();
    graphc_status_t st = graphc_executable_run(exe, in, n_in, out, n_out, &err);
    if (st != GRAPHC_STATUS_OK) {
      cli_report(NULL, st, &err);
      free(ms);
      return -1;
    }
    if (r >= 0) ms[r] = (float)(cli_now_ms() - t0);
  }
  gc_settings set;
  gc_settings_read(&set);
  int threads = gc_host_threads(&set.rt, NULL);
  double med = median(ms, runs);  /* sorts ms */
  print_json(o, "cpu", runs, ms, med, -1, threads);
  free(ms);
  return 0;
}

/* `graphc bench FILE ...`: compile for CUDA (or the CPU), run once, then time and print the
 * tables. */
int gc_cli_bench(int argc, char **argv) {
  cli_opts o;
  if (cli_parse(argc, argv, &o, usage_bench) != 0) return 1;
  if (o.help) return 0;
  int host = o.copts.backend == GRAPHC_BACKEND_CPU;
  if (o.copts.backend != GRAPHC_BACKEND_DEFAULT && o.copts.backend != GRAPHC_BACKEND_CUDA && !host) {
    fprintf(stderr, "graphc bench: only the cuda and cpu backends can be benchmarked\n");
    return 1;
  }
  if (host && o.pipeline > 0) {
    fprintf(stderr, "graphc bench: --pipeline is for the cuda backend\n");
    return 1;
  }
  if (!host) o.copts.backend = GRAPHC_BACKEND_CUDA;
  if (!host && !cli_have_gpu("graphc bench: no GPU to benchmark on")) return 1;

  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  memset(&err, 0, sizeof err);
  graphc_model_t *m = NULL;
  graphc_executable_t *exe = NULL;
  char tmp_weights[256] = "";
  size_t n_in = 0, n_out = 0;
  graphc_tensor_t *in = NULL, *out = NULL;
  gc_safetensors *file = NULL;
  graphc_status_t st = cli_load(ctx, &o, &m, &err);
  if (st == GRAPHC_STATUS_OK) st = cli_compile_cuda(m, &o, &exe, tmp_weights, sizeof tmp_weights, &err);
  if (st == GRAPHC_STATUS_OK) cli_print_warnings(ctx);
  if (st == GRAPHC_STATUS_OK) {
    n_in = graphc_executable_num_inputs(exe);
    n_out = graphc_executable_num_outputs(exe);
    in = calloc(n_in + 1, sizeof *in);
    out = calloc(n_out + 1, sizeof *out);
    st = in && out ? cli_make_tensors(exe, &o, in, out, &file, &err)
                   : gc_set_error(&err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory for host tensors");
  }
  /* One checked run uploads the inputs and proves the executable works. */
  if (st == GRAPHC_STATUS_OK) st = graphc_executable_run(exe, in, n_in, out, n_out, &err);
  int rc = cli_report(ctx, st, &err);
  if (st == GRAPHC_STATUS_OK) {
    if (o.stats) printf("# stats\n%s\n", graphc_executable_stats(exe));
    if (host && o.json)
      rc = bench_host(exe, &o, in, n_in, out, n_out) == 0 ? 0 : 1;
    else if (host)
      rc = cli_bench_cpu(ctx, exe, &o, in, n_in, out, n_out) == 0 ? 0 : 1;
    else
      rc = bench_exec(exe, &o) == 0 ? 0 : 1;
    if (rc == 0 && o.pipeline > 0 && !host)
      rc = cli_bench_pipeline(exe, in, n_in, out, n_out, o.pipeline, o.runs > 0 ? o.runs : 100,
                              o.warmup > 0 ? o.warmup : 10) == 0 ? 0 : 1;
  }
  for (size_t i = 0; in && i < n_in; i++) free(in[i].data);
  for (size_t i = 0; out && i < n_out; i++) free(out[i].data);
  free(in);
  free(out);
  gc_safetensors_free(file);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  if (tmp_weights[0]) unlink(tmp_weights);
  return rc;
}
