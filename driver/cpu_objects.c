/* cpu_objects.c - the cpu backend's kernels compiled to host objects (cpu_backend.h).
 *
 *   kir_module -> canonical text per kernel (kir_canonical_text) -> distinct kernels,
 *              symbol "gck_<hash of the text>" (copies share one function)
 *           -> optimization level per kernel (cpu_level) -> groups: per level,
 *              balanced by text size, their number from the sizes only
 *           -> per group: the JIT cache (a hit is the object), else on a thread:
 *              LLVMContext -> gc_llvm_emit -> verify -> internalize -> optimize
 *              -> object file in memory -> stored in the cache
 *
 * Nothing in the objects depends on the thread count or on the kernels' names:
 * a group's bytes are a function of its kernels' canonical texts, the target
 * and the pipeline, which is also what its cache key hashes. The caller
 * (cpu_backend.c) links the objects into one ORC JIT.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/llvm_emit.h"
#include "driver/cache.h"
#include "driver/cpu_backend.h"

static const gc_loc noloc = {0, 0};

/* Groups a level is split into per GROUP_TEXT bytes of canonical text (at most
 * MAX_GROUPS in all): enough to keep a few threads busy, few enough that the
 * per-module costs (a context, a target machine, the pass setup) stay small. */
#define GROUP_TEXT (16 * 1024)
#define MAX_GROUPS 16

static double wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
static double thread_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* LLVM 19's default<O3> pipeline (as `opt -passes='default<O3>' -print-pipeline-passes`
 * prints it) without its dead store elimination: the compute kernels are register-tiled
 * matmul and convolution bodies with thousands of stores to distinct output addresses,
 * where DSE (MemorySSA walks) took 30-45% of the optimization time and removed nothing
 * that mattered (mobilenet_v3_small: 2258 -> 1629 ms of optimization, the kernels' run
 * time unchanged within noise; docs/architecture.md). An LLVM that cannot parse it
 * runs default<O3> instead (o3_pipeline). */
static const char o3_no_dse[] =
    "annotation2metadata,forceattrs,inferattrs,coro-early,function<eager-inv>(ee-instrument<>"
    ",lower-expect,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-range-"
    "to-icmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts;specul"
    "ate-blocks;simplify-cond-branch;no-speculate-unpredictables>,sroa<modify-cfg>,early-cse<"
    ">,callsite-splitting),openmp-opt,ipsccp,called-value-propagation,globalopt,function<eage"
    "r-inv>(mem2reg,instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>,simplif"
    "ycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-loo"
    "kup;keep-loops;no-hoist-common-insts;no-sink-common-insts;speculate-blocks;simplify-cond"
    "-branch;no-speculate-unpredictables>),always-inline,require<globals-aa>,function(invalid"
    "ate<aa>),require<profile-summary>,cgscc(devirt<4>(inline,function-attrs<skip-non-recursi"
    "ve-function-attrs>,argpromotion,openmp-opt-cgscc,function<eager-inv;no-rerun>(sroa<modif"
    "y-cfg>,early-cse<memssa>,speculative-execution<only-if-divergent-target>,jump-threading,"
    "correlated-propagation,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-"
    "range-to-icmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts;"
    "speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,instcombine<max-itera"
    "tions=1;no-use-loop-info;no-verify-fixpoint>,aggressive-instcombine,libcalls-shrinkwrap,"
    "tailcallelim,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-i"
    "cmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts;speculate-"
    "blocks;simplify-cond-branch;no-speculate-unpredictables>,reassociate,constraint-eliminat"
    "ion,loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,loop-rotate<h"
    "eader-duplication;no-prepare-for-lto>,licm<allowspeculation>,simple-loop-unswitch<nontri"
    "vial;trivial>),simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to"
    "-icmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts;speculat"
    "e-blocks;simplify-cond-branch;no-speculate-unpredictables>,instcombine<max-iterations=1;"
    "no-use-loop-info;no-verify-fixpoint>,loop(loop-idiom,indvars,simple-loop-unswitch<nontri"
    "vial;trivial>,loop-deletion,loop-unroll-full),sroa<modify-cfg>,vector-combine,mldst-moti"
    "on<no-split-footer-bb>,gvn<>,sccp,bdce,instcombine<max-iterations=1;no-use-loop-info;no-"
    "verify-fixpoint>,jump-threading,correlated-propagation,adce,memcpyopt,move-auto-init,loo"
    "p-mssa(licm<allowspeculation>),coro-elide,simplifycfg<bonus-inst-threshold=1;no-forward-"
    "switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;hoist-common-insts;sink-"
    "common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,instcomb"
    "ine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>),function-attrs,function(requi"
    "re<should-not-run-function-passes>),coro-split)),deadargelim,coro-cleanup,globalopt,glob"
    "aldce,elim-avail-extern,rpo-function-attrs,recompute-globalsaa,function<eager-inv>(float"
    "2int,lower-constant-intrinsics,chr,loop(loop-rotate<header-duplication;no-prepare-for-lt"
    "o>,loop-deletion),loop-distribute,inject-tli-mappings,loop-vectorize<no-interleave-force"
    "d-only;no-vectorize-forced-only;>,infer-alignment,loop-load-elim,instcombine<max-iterati"
    "ons=1;no-use-loop-info;no-verify-fixpoint>,simplifycfg<bonus-inst-threshold=1;forward-sw"
    "itch-cond;switch-range-to-icmp;switch-to-lookup;no-keep-loops;hoist-common-insts;sink-co"
    "mmon-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,slp-vector"
    "izer,vector-combine,instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>,lo"
    "op-unroll<O3>,transform-warning,sroa<preserve-cfg>,infer-alignment,instcombine<max-itera"
    "tions=1;no-use-loop-info;no-verify-fixpoint>,loop-mssa(licm<allowspeculation>),alignment"
    "-from-assumptions,loop-sink,instsimplify,div-rem-pairs,tailcallelim,simplifycfg<bonus-in"
    "st-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loop"
    "s;no-hoist-common-insts;no-sink-common-insts;speculate-blocks;simplify-cond-branch;specu"
    "late-unpredictables>),globaldce,constmerge,cg-profile,rel-lookup-table-converter,functio"
    "n(annotation-remarks)";

static pthread_once_t o3_once = PTHREAD_ONCE_INIT;
static const char *o3_parsed;  /* o3_no_dse, or "default<O3>"; written once, under o3_once */

/* Try o3_no_dse on an empty module (once per process). */
static void o3_check(void) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("o3-check", ctx);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(mod, o3_no_dse, NULL, opts);
  o3_parsed = err ? "default<O3>" : o3_no_dse;
  if (err) LLVMConsumeError(err);
  LLVMDisposePassBuilderOptions(opts);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
}

/* The pipeline of a group: the caller's (NULL: none), else its level's (gc_cpu_level). */
static const char *group_passes(const char *caller, int level) {
  if (caller) return caller;
  if (level == GC_CPU_LEVEL_O2) return "default<O2>";
  pthread_once(&o3_once, o3_check);
  return o3_parsed;
}

int gc_cpu_level(const kir_kernel *k) {
  /* Arithmetic intensity: matmuls and convolutions do several flops per byte
   * moved and have inner loops O3's unrolling and vectorization pay off in;
   * elementwise kernels, copies, norms and softmaxes are memory bound. */
  return k->flops >= 4.0 * k->bytes_moved && k->flops > 0 ? GC_CPU_LEVEL_O3 : GC_CPU_LEVEL_O2;
}

typedef struct cpu_group {
  int level;
  int n;                     /* distinct kernels in it */
  int *members;              /* indices into the distinct list */
  long text;                 /* canonical text bytes */
  gc_hash128 key;
  int cached;
  /* thread results */
  void *obj;
  size_t len;
  int rc;
  gc_diags d;
  double t_emit, t_opt, t_cg;
} cpu_group;

typedef struct cpu_job {
  const kir_module *m;
  int n_distinct;
  int *rep;                  /* per distinct: its first kernel */
  char **text;               /* per distinct: canonical text */
  char **sym;                /* per distinct: symbol */
  cpu_group *groups;
  int n_groups;
  int *order;                /* groups to compile, biggest first */
  int n_order;
  atomic_int next;
  const char *triple, *cpu, *features, *layout;
  const char *passes;        /* the caller's pipeline for every group, or NULL */
  int simd_bytes;
} cpu_job;

/* A target machine for the host (PIC: the JIT links the object anywhere). */
static LLVMTargetMachineRef host_tm(const cpu_job *j, int level) {
  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(j->triple, &target, &msg)) {
    LLVMDisposeMessage(msg);
    return NULL;
  }
  return LLVMCreateTargetMachine(target, j->triple, j->cpu, j->features,
                                 level == GC_CPU_LEVEL_O3 ? LLVMCodeGenLevelAggressive
                                                          : LLVMCodeGenLevelDefault,
                                 LLVMRelocPIC, LLVMCodeModelSmall);
}

/* Emit, optimize and compile group g to an object (any thread). */
static void compile_group(cpu_job *j, cpu_group *g) {
  gc_diags *d = &g->d;
  LLVMTargetMachineRef tm = host_tm(j, g->level);
  if (!tm) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "cpu backend: cannot create an LLVM target machine for %s (%s)", j->triple, j->cpu);
    g->rc = -1;
    return;
  }
  kir_kernel *copies = calloc((size_t)g->n + 1, sizeof *copies);
  kir_kernel **ptrs = calloc((size_t)g->n + 1, sizeof *ptrs);
  LLVMContextRef ctx = LLVMContextCreate();
  gc_llvm_diag dg = {{0}, 0};
  gc_llvm_diag_install(ctx, &dg);
  LLVMModuleRef mod = NULL;
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  g->rc = -1;
  if (!copies || !ptrs) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->n; i++) {
    int u = g->members[i];
    copies[i] = *j->m->kernels[j->rep[u]];
    copies[i].name = j->sym[u];
    ptrs[i] = &copies[i];
  }
  kir_module sub;
  memset(&sub, 0, sizeof sub);
  sub.n_kernels = g->n;
  sub.kernels = ptrs;
  double t0 = thread_ms();
  gc_llvm_target lt = {GC_LLVM_HOST, 0, j->triple, j->layout};
  mod = gc_llvm_emit(ctx, &sub, &lt, d);
  if (!mod || gc_llvm_verify(mod, "after emission", d) != 0) goto out;
  gc_llvm_prefer_wide_vectors(mod, j->simd_bytes);
  gc_llvm_internalize(mod, &sub);
  double t1 = thread_ms();
  g->t_emit = t1 - t0;
  const char *passes = group_passes(j->passes, g->level);
  if (gc_llvm_optimize(mod, tm, passes, d) != 0 || gc_llvm_verify(mod, "after optimization", d) != 0)
    goto out;
  double t2 = thread_ms();
  g->t_opt = t2 - t1;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &buf)) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "cpu backend: LLVM could not emit code: %s",
                msg ? msg : "");
    goto out;
  }
  g->t_cg = thread_ms() - t2;
  if (dg.n_errors) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "cpu backend: LLVM reported errors:\n%s",
                dg.msgs.data ? dg.msgs.data : "");
    goto out;
  }
  g->len = LLVMGetBufferSize(buf);
  g->obj = malloc(g->len ? g->len : 1);
  if (!g->obj) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    goto out;
  }
  memcpy(g->obj, LLVMGetBufferStart(buf), g->len);
  g->rc = 0;
out:
  if (buf) LLVMDisposeMemoryBuffer(buf);
  if (msg) LLVMDisposeMessage(msg);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  gc_sbuf_free(&dg.msgs);
  LLVMDisposeTargetMachine(tm);
  free(copies);
  free(ptrs);
}

/* Worker: compile the next group until none is left. */
static void *worker(void *arg) {
  cpu_job *j = arg;
  for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->n_order;)
    compile_group(j, &j->groups[j->order[i]]);
  return NULL;
}

/* Distinct kernels: canonical texts compared exactly (kir_maybe_same first). */
static int find_distinct(cpu_job *j, gc_cpu_objects *o, const gc_cpu_compile_opts *opts,
                         gc_diags *d) {
  const kir_module *m = j->m;
  int n = m->n_kernels;
  j->rep = calloc((size_t)n + 1, sizeof *j->rep);
  j->text = calloc((size_t)n + 1, sizeof *j->text);
  j->sym = calloc((size_t)n + 1, sizeof *j->sym);
  o->kernel_sym = calloc((size_t)n + 1, sizeof *o->kernel_sym);
  if (!j->rep || !j->text || !j->sym || !o->kernel_sym) goto oom;
  for (int i = 0; i < n; i++) {
    char *t = kir_canonical_text(m->kernels[i]);
    if (!t) goto oom;
    int same = -1;
    for (int u = 0; u < j->n_distinct && same < 0 && !(opts && opts->no_dedup); u++)
      if (kir_maybe_same(m->kernels[j->rep[u]], m->kernels[i]) && strcmp(j->text[u], t) == 0)
        same = u;
    if (same >= 0) {
      free(t);
      o->kernel_sym[i] = same;
      continue;
    }
    int u = j->n_distinct++;
    j->rep[u] = i;
    j->text[u] = t;
    gc_hash128 h;
    gc_hash128_init(&h);
    gc_hash128_field(&h, "kir", t, strlen(t));
    char name[64];
    /* without dedup two kernels may share a text: the index keeps their symbols apart */
    if (opts && opts->no_dedup)
      snprintf(name, sizeof name, "gck_%016" PRIx64 "%016" PRIx64 "_%d", h.a, h.b, u);
    else
      snprintf(name, sizeof name, "gck_%016" PRIx64 "%016" PRIx64, h.a, h.b);
    if (!(j->sym[u] = strdup(name))) goto oom;
    o->kernel_sym[i] = u;
  }
  return 0;
oom:
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
  return -1;
}

/* Split the distinct kernels into groups: per level, ceil(text / GROUP_TEXT)
 * groups (at most MAX_GROUPS in all), filled biggest kernel first into the
 * smallest group; members in kernel order. Depends on the kernels only. */
static int make_groups(cpu_job *j, gc_diags *d) {
  int nd = j->n_distinct;
  int *lvl = calloc((size_t)nd + 1, sizeof *lvl);
  long *size = calloc((size_t)nd + 1, sizeof *size);
  int *by_size = calloc((size_t)nd + 1, sizeof *by_size);
  int *gof = calloc((size_t)nd + 1, sizeof *gof);
  j->groups = calloc(MAX_GROUPS + 1, sizeof *j->groups);
  j->order = calloc(MAX_GROUPS + 1, sizeof *j->order);
  int rc = -1;
  if (!lvl || !size || !by_size || !gof || !j->groups || !j->order) goto out;
  long level_text[GC_CPU_LEVELS] = {0};
  int level_n[GC_CPU_LEVELS] = {0};
  for (int u = 0; u < nd; u++) {
    lvl[u] = j->passes ? 0 : gc_cpu_level(j->m->kernels[j->rep[u]]);
    size[u] = (long)strlen(j->text[u]);
    level_text[lvl[u]] += size[u];
    level_n[lvl[u]]++;
  }
  int first[GC_CPU_LEVELS + 1];
  int budget = MAX_GROUPS;
  for (int l = 0; l < GC_CPU_LEVELS; l++) {
    int want = level_n[l] ? (int)((level_text[l] + GROUP_TEXT - 1) / GROUP_TEXT) : 0;
    if (level_n[l] && want < 1) want = 1;
    int reserve = 0;  /* one group for each later nonempty level */
    for (int k = l + 1; k < GC_CPU_LEVELS; k++) reserve += level_n[k] ? 1 : 0;
    if (want > budget - reserve) want = budget - reserve;
    if (want > level_n[l]) want = level_n[l];
    first[l] = j->n_groups;
    for (int g = 0; g < want; g++) j->groups[j->n_groups++].level = l;
    budget -= want;
  }
  first[GC_CPU_LEVELS] = j->n_groups;
  for (int u = 0; u < nd; u++) {  /* insertion sort, biggest first, then kernel order */
    int at = u;
    while (at > 0 && size[by_size[at - 1]] < size[u]) by_size[at] = by_size[at - 1], at--;
    by_size[at] = u;
  }
  for (int i = 0; i < nd; i++) {
    int u = by_size[i], best = -1;
    for (int g = first[lvl[u]]; g < first[lvl[u] + 1]; g++)
      if (best < 0 || j->groups[g].text < j->groups[best].text) best = g;
    gof[u] = best;
    j->groups[best].text += size[u];
    j->groups[best].n++;
  }
  for (int g = 0; g < j->n_groups; g++) {
    j->groups[g].members = calloc((size_t)j->groups[g].n + 1, sizeof(int));
    if (!j->groups[g].members) goto out;
    j->groups[g].n = 0;
    gc_diags_init(&j->groups[g].d, "", NULL, 0);
  }
  for (int u = 0; u < nd; u++) {
    cpu_group *g = &j->groups[gof[u]];
    g->members[g->n++] = u;
  }
  rc = 0;
out:
  if (rc) gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
  free(lvl);
  free(size);
  free(by_size);
  free(gof);
  return rc;
}

/* The part of every group's key that is the same for the whole compile: graphc
 * and LLVM versions, the build, the target. */
static void base_key(const cpu_job *j, gc_hash128 *key) {
  gc_hash128_init(key);
  gc_cache_key_identity(key);
  unsigned v1 = 0, v2 = 0, v3 = 0;
  LLVMGetVersion(&v1, &v2, &v3);
  char buf[64];
  snprintf(buf, sizeof buf, "%u.%u.%u", v1, v2, v3);
  gc_hash128_field(key, "llvm", buf, strlen(buf));
  gc_hash128_field(key, "codegen", "cpu-object-1", 12);
  gc_hash128_field(key, "triple", j->triple, strlen(j->triple));
  gc_hash128_field(key, "cpu", j->cpu, strlen(j->cpu));
  gc_hash128_field(key, "features", j->features, strlen(j->features));
  snprintf(buf, sizeof buf, "%d", j->simd_bytes);
  gc_hash128_field(key, "simd", buf, strlen(buf));
}

/* The cache key of group g (base: base_key): everything its object's bytes depend on. */
static void group_key(const cpu_job *j, const gc_hash128 *base, cpu_group *g) {
  gc_hash128 *key = &g->key;
  *key = *base;
  const char *passes = group_passes(j->passes, g->level);
  gc_hash128_field(key, "passes", passes, strlen(passes));
  char buf[32];
  snprintf(buf, sizeof buf, "%d", g->level);
  gc_hash128_field(key, "level", buf, strlen(buf));
  for (int i = 0; i < g->n; i++) {
    int u = g->members[i];
    gc_hash128_field(key, "sym", j->sym[u], strlen(j->sym[u]));
    gc_hash128_field(key, "kir", j->text[u], strlen(j->text[u]));
  }
}

int gc_cpu_compile_objects(const kir_module *m, const gc_cpu_compile_opts *opts,
                           gc_cpu_objects *o, gc_diags *d) {
  memset(o, 0, sizeof *o);
  double w0 = wall_ms();
  cpu_job j;
  memset(&j, 0, sizeof j);
  j.m = m;
  j.passes = opts && opts->passes && *opts->passes ? opts->passes : NULL;
  char *triple = LLVMGetDefaultTargetTriple();
  char *cpu = LLVMGetHostCPUName();
  char *features = gc_llvm_host_features();
  char *layout = NULL;
  j.triple = triple;
  j.cpu = cpu;
  j.features = features;
  j.simd_bytes = gc_llvm_host_simd_bytes(NULL);
  int rc = -1;
  LLVMTargetMachineRef tm = host_tm(&j, GC_CPU_LEVEL_O3);
  if (!tm) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "cpu backend: cannot create an LLVM target machine for %s (%s)", triple, cpu);
    goto out;
  }
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  layout = LLVMCopyStringRepOfTargetData(td);
  LLVMDisposeTargetData(td);
  LLVMDisposeTargetMachine(tm);
  j.layout = layout;
  size_t tlen = strlen(triple) + strlen(cpu) + 4;
  if (!(o->target = malloc(tlen))) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    goto out;
  }
  snprintf(o->target, tlen, "%s (%s)", triple, cpu);
  double t0 = thread_ms();
  if (find_distinct(&j, o, opts, d) || make_groups(&j, d)) goto out;
  gc_cache *cache = opts ? opts->cache : NULL;
  gc_hash128 base;
  if (cache && cache->enabled) base_key(&j, &base);
  for (int g = 0; g < j.n_groups; g++) {
    cpu_group *gr = &j.groups[g];
    if (cache && cache->enabled) {
      group_key(&j, &base, gr);
      gc_cache_blob b;
      if (gc_cache_get(cache, &gr->key, 1, &b)) {
        gr->obj = b.data;
        gr->len = b.len;
        gr->cached = 1;
        o->cached++;
        continue;
      }
    }
    int at = j.n_order++;  /* biggest first; only balances the threads */
    while (at > 0 && j.groups[j.order[at - 1]].text < gr->text) j.order[at] = j.order[at - 1], at--;
    j.order[at] = g;
  }
  o->t_prepare = thread_ms() - t0;
  int nt = j.n_order ? gc_llvm_pick_threads(opts ? opts->threads : 0, opts ? opts->configured_threads : 0,
                                            j.n_order)
                     : 0;
  pthread_t th[64];
  int started = 0;
  for (int t = 1; t < nt; t++, started++)  /* the calling thread is worker 0 */
    if (pthread_create(&th[t], NULL, worker, &j) != 0) break;
  worker(&j);
  for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
  o->threads = j.n_order ? started + 1 : 0;
  rc = 0;
  for (int g = 0; g < j.n_groups; g++) {
    cpu_group *gr = &j.groups[g];
    for (int k = 0; k < gr->d.n; k++) gc_error_at(d, gr->d.status, noloc, "%s", gr->d.items[k].msg);
    if (gr->cached) continue;
    if (gr->rc != 0) rc = -1;
    o->t_emit += gr->t_emit;
    o->t_opt += gr->t_opt;
    o->t_cg += gr->t_cg;
    if (gr->rc == 0 && cache && cache->enabled) {
      gc_cache_blob b = {gr->obj, gr->len};
      gc_cache_put(cache, &gr->key, 1, &b);
    }
  }
  if (rc) goto out;
  o->n_kernels = m->n_kernels;
  o->n_syms = j.n_distinct;
  o->syms = j.sym;
  j.sym = NULL;
  o->n_objects = j.n_groups;
  o->objects = calloc((size_t)j.n_groups + 1, sizeof *o->objects);
  o->object_lens = calloc((size_t)j.n_groups + 1, sizeof *o->object_lens);
  if (!o->objects || !o->object_lens) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    rc = -1;
    goto out;
  }
  for (int g = 0; g < j.n_groups; g++) {
    o->objects[g] = j.groups[g].obj;
    o->object_lens[g] = j.groups[g].len;
    j.groups[g].obj = NULL;
  }
out:
  if (j.sym)
    for (int u = 0; u < j.n_distinct; u++) free(j.sym[u]);
  free(j.sym);
  if (j.text)
    for (int u = 0; u < j.n_distinct; u++) free(j.text[u]);
  free(j.text);
  free(j.rep);
  if (j.groups)
    for (int g = 0; g < j.n_groups; g++) {
      free(j.groups[g].members);
      free(j.groups[g].obj);
      gc_diags_free(&j.groups[g].d);
    }
  free(j.groups);
  free(j.order);
  if (layout) LLVMDisposeMessage(layout);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  o->wall = wall_ms() - w0;
  if (rc) gc_cpu_objects_free(o);
  return rc;
}

void gc_cpu_objects_free(gc_cpu_objects *o) {
  if (!o) return;
  for (int i = 0; i < o->n_objects; i++)
    if (o->objects) free(o->objects[i]);
  free(o->objects);
  free(o->object_lens);
  for (int i = 0; i < o->n_syms; i++)
    if (o->syms) free(o->syms[i]);
  free(o->syms);
  free(o->kernel_sym);
  free(o->target);
  double wall = o->wall;
  memset(o, 0, sizeof *o);
  o->wall = wall;
}
