/* cuda_context.c - execution contexts of the CUDA executor (see cuda_exec.h and
 * runtime/cuda_exec_impl.h): the memory, kernel arguments, tensor maps, CUDA graph
 * and stream that one run in flight needs, and the runs themselves.
 *
 * CUDA graph: only the kernel launches are captured. The copies stay outside
 * because their host pointers change from call to call (and pageable host
 * memory cannot be captured); the launches always read and write the same
 * device buffers, so one capture serves every run. run_device binds other
 * pointers: the graph is re-captured and the instantiated graph updated in
 * place (cuGraphExecUpdate) whenever they differ from the last ones.
 *
 * TMA tensor maps: the plan's maps live in one device table of 128-byte
 * CUtensorMaps per context, and a kernel's TMAP argument is its map's address in
 * the table, which never changes, so the captured graph stays valid. A map embeds
 * its buffer's address: it is encoded into a host copy of the table whenever that
 * address changes (at creation; when run_device binds other pointers), and the copy
 * is uploaded on the stream before the next launches, after earlier runs'
 * kernels have read the old maps.
 *
 * Prologue: launches that read only weights write their results into the arena, so
 * each context runs them once per weights generation (x->weights_gen, bumped by
 * gc_cu_exec_set_const) before its first run.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#include "runtime/cuda_exec_impl.h"

#define now_ms gc_cu_now_ms
#define align_up gc_cu_align_up
#define fmt_bytes gc_cu_fmt_bytes
#define oom gc_cu_oom
#define ctx_push gc_cu_ctx_push
#define ctx_pop gc_cu_ctx_pop
#define dev_alloc gc_cu_dev_alloc

static int bind_io(gc_cu_ctx *c, const CUdeviceptr *in, const CUdeviceptr *out, gc_diags *d);

/* ---- making and releasing ------------------------------------------------------------- */
/* Arena, I/O buffers, argument slots and tensor map table of context c. */
static int setup_memory(gc_cu_ctx *c, gc_sbuf *st, gc_diags *d) {
  gc_cu_exec *x = c->x;
  const gc_launch_plan *p = x->plan;
  if (dev_alloc(x, &c->arena, align_up(p->arena_bytes), "the intermediate-buffer arena", d))
    return -1;
  size_t ni = (size_t)p->n_inputs, no = (size_t)p->n_outputs;
  c->in_buf = calloc(ni + 1, sizeof *c->in_buf);
  c->out_buf = calloc(no + 1, sizeof *c->out_buf);
  c->bound_in = calloc(ni + 1, sizeof *c->bound_in);
  c->bound_out = calloc(no + 1, sizeof *c->bound_out);
  c->graph_in = calloc(ni + 1, sizeof *c->graph_in);
  c->graph_out = calloc(no + 1, sizeof *c->graph_out);
  c->args = calloc((size_t)x->n_args + 1, sizeof *c->args);
  c->argp = calloc((size_t)x->n_args + 1, sizeof *c->argp);
  c->checked_in = calloc(ni + 1, sizeof *c->checked_in);
  c->checked_out = calloc(no + 1, sizeof *c->checked_out);
  c->checked_in_host = calloc(ni + 1, 1);
  c->checked_out_host = calloc(no + 1, 1);
  c->scratch_in = calloc(ni + 1, sizeof *c->scratch_in);
  c->scratch_out = calloc(no + 1, sizeof *c->scratch_out);
  c->scratch_hin = calloc(ni + 1, 1);
  c->scratch_hout = calloc(no + 1, 1);
  if (!c->in_buf || !c->out_buf || !c->bound_in || !c->bound_out || !c->graph_in || !c->graph_out ||
      !c->args || !c->argp || !c->checked_in || !c->checked_out || !c->checked_in_host ||
      !c->checked_out_host || !c->scratch_in || !c->scratch_out || !c->scratch_hin || !c->scratch_hout)
    return oom(d);
  for (int i = 0; i < x->n_args; i++) c->argp[i] = &c->args[i];
  size_t iobytes = 0;
  for (size_t i = 0; i < ni; i++) iobytes += align_up(p->inputs[i].nbytes);
  for (size_t i = 0; i < no; i++) iobytes += align_up(p->outputs[i].nbytes);
  if (dev_alloc(x, &c->io, iobytes, "inputs and outputs", d)) return -1;
  size_t off = 0;
  for (size_t i = 0; i < ni; i++) {
    c->in_buf[i] = c->io + off;
    off += align_up(p->inputs[i].nbytes);
  }
  for (size_t i = 0; i < no; i++) {
    c->out_buf[i] = c->io + off;
    off += align_up(p->outputs[i].nbytes);
  }
  if (p->n_tmaps) {
    size_t nt = (size_t)p->n_tmaps, tbytes = nt * TMAP_BYTES;
    /* cuTensorMapEncodeTiled writes only to aligned maps (64 bytes; CUDA 13's
     * CUtensorMap says 128) */
    c->tmap_host = aligned_alloc(TMAP_BYTES, tbytes);
    c->tmap_at = calloc(nt, sizeof *c->tmap_at);
    c->tmap_valid = calloc(nt, 1);
    if (!c->tmap_host || !c->tmap_at || !c->tmap_valid) return oom(d);
    memset(c->tmap_host, 0, tbytes);
    if (dev_alloc(x, &c->tmaps, tbytes, "TMA tensor maps", d)) return -1;
  }
  if (st) {
    char a[64], io[64];
    fmt_bytes(a, sizeof a, (double)p->arena_bytes);
    fmt_bytes(io, sizeof io, (double)iobytes);
    gc_sbuf_printf(st, "cuda: device memory per context: arena %s, inputs+outputs %s\n", a, io);
  }
  return 0;
}

/* Take c off the executor's list. */
static void unlist(gc_cu_ctx *c) {
  gc_cu_exec *x = c->x;
  pthread_mutex_lock(&x->mu);
  for (gc_cu_ctx **pp = &x->contexts; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  pthread_mutex_unlock(&x->mu);
}

gc_cu_ctx *gc_cu_ctx_make(gc_cu_exec *x, gc_sbuf *st, gc_diags *d) {
  gc_cu_ctx *c = calloc(1, sizeof *c);
  if (!c) {
    oom(d);
    return NULL;
  }
  c->x = x;
  if (pthread_mutex_init(&c->run_mu, NULL) != 0) {
    free(c);
    gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "CUDA executor: cannot initialize a mutex");
    return NULL;
  }
  c->run_mu_ok = 1;
  if (GC_CU(x->cu, d, StreamCreate, &c->stream, CU_STREAM_NON_BLOCKING) || setup_memory(c, st, d) ||
      bind_io(c, c->in_buf, c->out_buf, d)) {
    gc_cu_ctx_release(c);
    return NULL;
  }
  pthread_mutex_lock(&x->mu);
  c->next = x->contexts;
  x->contexts = c;
  pthread_mutex_unlock(&x->mu);
  return c;
}

void gc_cu_ctx_release(gc_cu_ctx *c) {
  gc_cu_exec *x = c->x;
  const gc_cu_driver *cu = x->cu;
  /* Errors are ignored (see gc_cu_exec_free); the executor's context is current. */
  if (c->stream) cu->StreamSynchronize(c->stream);
  /* Work enqueued on callers' streams: releasing waits for it to finish. */
  if (c->done) {
    if (c->pending) cu->EventSynchronize(c->done);
    cu->EventDestroy(c->done);
  }
  if (c->gexec) cu->GraphExecDestroy(c->gexec);
  if (c->stream) cu->StreamDestroy(c->stream);
  if (c->arena) cu->MemFree(c->arena);
  if (c->io) cu->MemFree(c->io);
  if (c->tmaps) cu->MemFree(c->tmaps);
  free(c->in_buf);
  free(c->out_buf);
  free(c->bound_in);
  free(c->bound_out);
  free(c->graph_in);
  free(c->graph_out);
  free(c->args);
  free(c->argp);
  free(c->checked_in);
  free(c->checked_out);
  free(c->checked_in_host);
  free(c->checked_out_host);
  free(c->scratch_in);
  free(c->scratch_out);
  free(c->scratch_hin);
  free(c->scratch_hout);
  free(c->tmap_host);
  free(c->tmap_at);
  free(c->tmap_valid);
  if (c->run_mu_ok) pthread_mutex_destroy(&c->run_mu);
  free(c);
}

gc_cu_ctx *gc_cu_ctx_new(gc_cu_exec *x, gc_diags *d) {
  if (!x || !x->plan || !x->main) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "executable is not prepared");
    return NULL;
  }
  if (ctx_push(x, d)) return NULL;
  gc_cu_ctx *c = gc_cu_ctx_make(x, NULL, d);
  ctx_pop(x);
  return c;
}

void gc_cu_ctx_free(gc_cu_ctx *c) {
  if (!c) return;
  gc_cu_exec *x = c->x;
  GC_ASSERT(c != x->main);
  unlist(c);
  int pushed = x->cu->CtxPushCurrent(x->ctx) == CUDA_SUCCESS;
  gc_cu_ctx_release(c);
  if (pushed) ctx_pop(x);
}

gc_cu_ctx *gc_cu_exec_main(gc_cu_exec *x) { return x ? x->main : NULL; }

/* ---- binding -------------------------------------------------------------------------- */
/* Device address of plan buffer `buf` with the given I/O buffers bound. */
static CUdeviceptr buffer_addr(const gc_cu_ctx *c, int buf, const CUdeviceptr *in,
                               const CUdeviceptr *out) {
  gc_cu_exec *x = c->x;
  const gc_lp_buffer *b = &x->plan->buffers[buf];
  switch (b->kind) {
    case GC_LP_INPUT: return in[b->index];
    case GC_LP_OUTPUT: return out[b->index];
    case GC_LP_CONST: return x->const_ptr[b->index];
    case GC_LP_TEMP: return c->arena + b->offset;
    case GC_LP_STATE: return x->state_addr ? x->state_addr[b->index] : 0;
  }
  return 0;
}

/* The first kernel reading tensor map i, for messages. */
static const char *tmap_kernel(const gc_cu_exec *x, int i) {
  const gc_launch_plan *p = x->plan;
  for (int k = 0; k < p->n_kernels; k++)
    for (int j = 0; j < p->kernels[k].n_params; j++)
      if (p->kernels[k].params[j].kind == GC_LP_PARAM_TMAP && p->kernels[k].params[j].value == i)
        return p->kernels[k].name;
  return "(no kernel)";
}

/* Report a failed encode of tensor map i at addr: the kernel, the tensor, the CUresult.
 * A misaligned address is the caller's (run_device pointers): INVALID_ARGUMENT. */
static int tmap_failed(gc_cu_ctx *c, int i, CUdeviceptr addr, CUresult r, gc_diags *d) {
  gc_cu_exec *x = c->x;
  const gc_launch_plan *p = x->plan;
  const gc_lp_tmap *t = &p->tmaps[i];
  const gc_lp_buffer *b = &p->buffers[t->buffer];
  char tensor[600];
  if (b->kind == GC_LP_INPUT || b->kind == GC_LP_OUTPUT)
    snprintf(tensor, sizeof tensor, "%s '%s'", b->kind == GC_LP_INPUT ? "input" : "output",
             b->kind == GC_LP_INPUT ? p->inputs[b->index].name : p->outputs[b->index].name);
  else
    snprintf(tensor, sizeof tensor, "%s buffer %d", b->kind == GC_LP_CONST ? "const" : "temp",
             t->buffer);
  int misaligned = addr % 16 != 0;
  gc_error_at(d, misaligned ? GRAPHC_STATUS_INVALID_ARGUMENT : gc_cu_status(r), (gc_loc){0, 0},
              "kernel %s: tensor map %d over %s at 0x%llx: cuTensorMapEncodeTiled failed: %s (%s)%s",
              tmap_kernel(x, i), i, tensor, (unsigned long long)addr, gc_cu_error_name(x->cu, r),
              gc_cu_error_string(x->cu, r),
              misaligned ? " [TMA needs 16-byte aligned tensors: pass 16-byte aligned device pointers]"
                         : "");
  return -1;
}

/* Encode tensor map i, whose element (0, .., 0) is at addr, into the host table. */
static CUresult encode_tmap(gc_cu_ctx *c, int i, CUdeviceptr addr) {
  gc_cu_exec *x = c->x;
  const gc_lp_tmap *t = &x->plan->tmaps[i];
  cuuint64_t dims[GC_LP_TMAP_MAX_RANK], strides[GC_LP_TMAP_MAX_RANK];
  cuuint32_t box[GC_LP_TMAP_MAX_RANK], ones[GC_LP_TMAP_MAX_RANK];
  for (int k = 0; k < t->rank; k++) {
    dims[k] = (cuuint64_t)t->dims[k];
    strides[k] = k + 1 < t->rank ? (cuuint64_t)t->strides[k + 1] : 0;  /* strides[0] is implied */
    box[k] = (cuuint32_t)t->box[k];
    ones[k] = 1;
  }
  /* fp8, i8 and u8 tiles are bytes to the copy engine */
  CUtensorMapDataType dt = t->dtype == GRAPHC_DTYPE_F16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                           : t->dtype == GRAPHC_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                           : t->dtype == GRAPHC_DTYPE_F32  ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                           : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  return x->cu->TensorMapEncodeTiled(
      &c->tmap_host[i], dt, (cuuint32_t)t->rank, (void *)(uintptr_t)addr, dims, strides, box, ones,
      CU_TENSOR_MAP_INTERLEAVE_NONE,
      t->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* Re-encode the tensor maps whose buffer moved (only I/O buffers move: run_device)
 * and mark the table for upload. A map that fails to encode is left invalid, so the
 * next bind tries it again; nothing launches with it (the caller fails). */
static int bind_tmaps(gc_cu_ctx *c, const CUdeviceptr *in, const CUdeviceptr *out, gc_diags *d) {
  gc_cu_exec *x = c->x;
  const gc_launch_plan *p = x->plan;
  for (int i = 0; i < p->n_tmaps; i++) {
    CUdeviceptr addr = buffer_addr(c, p->tmaps[i].buffer, in, out) + p->tmaps[i].offset;
    if (c->tmap_valid[i] && c->tmap_at[i] == addr) continue;
    c->tmaps_dirty = 1;
    c->tmap_valid[i] = 0;
    CUresult r = encode_tmap(c, i, addr);
    if (r != CUDA_SUCCESS) return tmap_failed(c, i, addr, r, d);
    c->tmap_at[i] = addr;
    c->tmap_valid[i] = 1;
  }
  return 0;
}

/* Point every kernel argument at the given I/O buffers (TEMP and CONST fixed), and
 * the tensor maps over them. */
static int bind_io(gc_cu_ctx *c, const CUdeviceptr *in, const CUdeviceptr *out, gc_diags *d) {
  gc_cu_exec *x = c->x;
  const gc_launch_plan *p = x->plan;
  /* the same pointers as bound now (and every tensor map good for them): nothing to do */
  unsigned sg = __atomic_load_n(&x->states_gen, __ATOMIC_ACQUIRE);
  if (c->bound && c->bound_states == sg) {
    int same = memcmp(c->bound_in, in, (size_t)p->n_inputs * sizeof *in) == 0 &&
               memcmp(c->bound_out, out, (size_t)p->n_outputs * sizeof *out) == 0;
    for (int i = 0; same && i < p->n_tmaps; i++) same = c->tmap_valid[i];
    if (same) return 0;
  }
  memcpy(c->bound_in, in, (size_t)p->n_inputs * sizeof *in);
  memcpy(c->bound_out, out, (size_t)p->n_outputs * sizeof *out);
  for (int i = 0; i < p->n_kernels; i++) {
    const cu_kernel *ck = &x->kernels[i];
    uint64_t *args = c->args + ck->arg0;
    for (int j = 0; j < ck->k->n_params; j++) {
      const gc_lp_param *q = &ck->k->params[j];
      switch (q->kind) {
        case GC_LP_PARAM_I64: args[j] = (uint64_t)q->value; break;
        case GC_LP_PARAM_TMAP: args[j] = c->tmaps + (uint64_t)q->value * TMAP_BYTES; break;
        case GC_LP_PARAM_BUFFER: args[j] = buffer_addr(c, (int)q->value, in, out); break;
      }
    }
  }
  if (bind_tmaps(c, in, out, d)) return -1;
  c->bound = 1;
  c->bound_states = sg;
  return 0;
}

/* ---- launching ---------------------------------------------------------------------- */
/* Upload the tensor map table when bind_tmaps changed it. Stream order puts the copy
 * after the kernels of earlier runs that read the old maps and before every launch
 * that reads the new ones (a replayed graph reads the table at the same address). The
 * copy is never captured: its source is pageable host memory, which the driver stages
 * before returning (so binding again right after an enqueue cannot change what it
 * uploads). */
static int upload_tmaps(gc_cu_ctx *c, CUstream s, gc_diags *d) {
  gc_cu_exec *x = c->x;
  if (!c->tmaps_dirty) return 0;
  if (GC_CU_WHAT(x->cu, d, "TMA tensor maps", MemcpyHtoDAsync, c->tmaps, c->tmap_host,
                 (size_t)x->plan->n_tmaps * TMAP_BYTES, s))
    return -1;
  c->tmaps_dirty = 0;
  return 0;
}

/* Launch the i-th launch of the plan on stream s (kernel arguments are copied at the
 * launch, so binding other pointers afterwards cannot change it). */
static int launch_one(gc_cu_ctx *c, int i, CUstream s, gc_diags *d) {
  gc_cu_exec *x = c->x;
  cu_kernel *ck = &x->kernels[x->plan->launches[i]];
  if (ck->k->n <= 0) return 0;
  return GC_CU_WHAT(x->cu, d, ck->k->name, LaunchKernel, ck->fn, ck->grid, 1, 1, ck->block, 1, 1,
                    (unsigned)ck->k->smem, s, c->argp + ck->arg0, NULL);
}

/* Launches [from, to) in order, directly on the stream; with GRAPHC_CUDA_SYNC=1 each
 * is followed by a synchronize so a failing kernel is named. */
static int launch_range(gc_cu_ctx *c, int from, int to, CUstream s, gc_diags *d) {
  gc_cu_exec *x = c->x;
  for (int i = from; i < to; i++) {
    if (launch_one(c, i, s, d)) return -1;
    if (x->sync_each) {
      char what[256];
      snprintf(what, sizeof what, "after kernel %s, launch %d of %d",
               x->kernels[x->plan->launches[i]].k->name, i + 1, x->plan->n_launches);
      if (GC_CU_WHAT(x->cu, d, what, StreamSynchronize, s)) return -1;
    }
  }
  return 0;
}

/* The launches after the prologue as a CUDA graph built node by node, each kernel
 * waiting only for the launches it depends on (x->deps), so independent kernels are
 * parallel branches. A kernel with nothing to do is an empty node (it keeps the
 * ordering its dependents inherit). */
static int build_graph(gc_cu_ctx *c, CUgraph *out, gc_diags *d) {
  gc_cu_exec *x = c->x;
  const gc_cu_driver *cu = x->cu;
  const gc_launch_deps *g = &x->deps;
  const int np = x->plan->n_prologue;
  CUgraph graph = NULL;
  CUgraphNode *nodes = calloc((size_t)g->n + 1, sizeof *nodes);
  CUgraphNode *deps = calloc((size_t)g->n + 1, sizeof *deps);
  int bad = !nodes || !deps ? oom(d) : GC_CU(cu, d, GraphCreate, &graph, 0);
  for (int j = 0; j < g->n && !bad; j++) {
    size_t nd = 0;
    for (int e = g->off[j]; e < g->off[j + 1]; e++) deps[nd++] = nodes[g->idx[e]];
    const cu_kernel *ck = &x->kernels[x->plan->launches[np + j]];
    if (ck->k->n <= 0) {
      bad = GC_CU_WHAT(cu, d, ck->k->name, GraphAddEmptyNode, &nodes[j], graph, nd ? deps : NULL, nd);
      continue;
    }
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = ck->fn;
    kp.gridDimX = ck->grid;
    kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = ck->block;
    kp.blockDimY = kp.blockDimZ = 1;
    kp.sharedMemBytes = (unsigned)ck->k->smem;
    kp.kernelParams = c->argp + ck->arg0;   /* copied into the node */
    bad = GC_CU_WHAT(cu, d, ck->k->name, GraphAddKernelNode, &nodes[j], graph, nd ? deps : NULL, nd, &kp);
  }
  free(nodes);
  free(deps);
  if (bad) {
    if (graph) cu->GraphDestroy(graph);
    return -1;
  }
  *out = graph;
  return 0;
}

/* Capture the launches (bound to the current pointers) into a CUDA graph (built
 * node by node when the plan has independent launches) and instantiate it, or update the existing instantiation in place. The capture is on
 * the executor's own stream whatever stream the graph is launched on; an update
 * (or a new instantiation; cuGraphExecDestroy of a graph in flight frees it when it
 * completes) affects only later launches, never one already enqueued, so enqueued
 * work still in flight keeps the pointers it was launched with. */
static int capture_graph(gc_cu_ctx *c, gc_diags *d) {
  gc_cu_exec *x = c->x;
  const gc_cu_driver *cu = x->cu;
  size_t ni = (size_t)x->plan->n_inputs, no = (size_t)x->plan->n_outputs;
  CUgraph g = NULL;
  if (x->deps.branches) {
    if (build_graph(c, &g, d)) return -1;
  } else {
    if (GC_CU(cu, d, StreamBeginCapture, c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) return -1;
    int bad = 0;
    for (int i = x->plan->n_prologue; i < x->plan->n_launches && !bad; i++)
      bad = launch_one(c, i, c->stream, d);
    CUresult r = cu->StreamEndCapture(c->stream, &g);
    if (bad) {
      if (g) cu->GraphDestroy(g);
      return -1;
    }
    if (gc_cu_check(cu, d, r, "cuStreamEndCapture", NULL)) return -1;
  }
  int rc = 0;
  if (c->gexec) {
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    if (cu->GraphExecUpdate(c->gexec, g, &info) != CUDA_SUCCESS) {
      cu->GraphExecDestroy(c->gexec);
      c->gexec = NULL;
    }
  }
  if (!c->gexec) rc = GC_CU(cu, d, GraphInstantiate, &c->gexec, g, 0);
  if (rc) c->gexec = NULL;
  cu->GraphDestroy(g);
  if (rc == 0) {
    c->graph_states = c->bound_states;
    memcpy(c->graph_in, c->bound_in, ni * sizeof *c->graph_in);
    memcpy(c->graph_out, c->bound_out, no * sizeof *c->graph_out);
  }
  return rc;
}

/* The plan's launches on stream s: the prologue first when it is due (eagerly, once
 * per weights), then the rest as a graph replay or eagerly. */
static int launch_all(gc_cu_ctx *c, CUstream s, gc_diags *d) {
  gc_cu_exec *x = c->x;
  const int np = x->plan->n_prologue, nl = x->plan->n_launches;
  if (upload_tmaps(c, s, d)) return -1;
  unsigned gen = __atomic_load_n(&x->weights_gen, __ATOMIC_ACQUIRE);
  if (c->prologue_gen != gen) {
    if (launch_range(c, 0, np, s, d)) return -1;
    c->prologue_gen = gen;
  }
  if (nl == np) return 0;
  if (x->eager) return launch_range(c, np, nl, s, d);
  size_t ni = (size_t)x->plan->n_inputs, no = (size_t)x->plan->n_outputs;
  int same = c->gexec && c->graph_states == c->bound_states &&
             memcmp(c->graph_in, c->bound_in, ni * sizeof *c->graph_in) == 0 &&
             memcmp(c->graph_out, c->bound_out, no * sizeof *c->graph_out) == 0;
  if (!same && capture_graph(c, d)) return -1;
  return GC_CU(x->cu, d, GraphLaunch, c->gexec, s);
}

/* Synchronize the stream; a failure here is an error of some kernel (reported to d
 * unless d is NULL). */
static int sync_stream(gc_cu_ctx *c, gc_diags *d) {
  gc_cu_exec *x = c->x;
  CUresult r = x->cu->StreamSynchronize(c->stream);
  if (r == CUDA_SUCCESS) return 0;
  if (!d) return -1;
  gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
              "cuStreamSynchronize failed: %s (%s) [a kernel failed while running; set "
              "GRAPHC_CUDA_SYNC=1 to find which]",
              gc_cu_error_name(x->cu, r), gc_cu_error_string(x->cu, r));
  return -1;
}

/* Report that the executor has nothing loaded. */
static int not_loaded(const gc_cu_ctx *c, gc_diags *d) {
  if (c && c->x->plan && c->x->kernels && c->stream) return 0;
  gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "executable is not prepared");
  return -1;
}

/* ---- caller pointers and streams ------------------------------------------------------ */
/* Check the caller's pointers for I/O tensors t[0..n) (inputs, or outputs when `output`)
 * with cuPointerGetAttribute: device memory of this executor's device and context, large
 * enough from the pointer on. When host_ok (enqueue), pinned host memory (cuMemHostAlloc,
 * graphc_host_alloc) is accepted too and host[i] set to 1; pageable host memory is never
 * accepted (the driver cannot copy it asynchronously). Context pushed. */
static int check_ptrs(gc_cu_ctx *c, const graphc_tensor_t *t, int n, int output, int host_ok,
                      unsigned char *host, gc_diags *d) {
  gc_cu_exec *x = c->x;
  const gc_cu_driver *cu = x->cu;
  const gc_launch_plan *p = x->plan;
  const char *what = output ? "output" : "input";
  const char *need = host_ok ? "device memory of this executable's device or pinned host memory "
                               "(graphc_host_alloc)"
                             : "device memory of this executable's device";
  for (int i = 0; i < n; i++) {
    const char *name = output ? p->outputs[i].name : p->inputs[i].name;
    size_t bytes = output ? p->outputs[i].nbytes : p->inputs[i].nbytes;
    CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)t[i].data;
    unsigned int type = 0;
    if (host) host[i] = 0;
    if (bytes == 0) continue;  /* an empty tensor: no memory is read or written, any pointer will do */
    CUresult r = cu->PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
    if (r == CUDA_ERROR_INVALID_VALUE) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s %d (%%%s): %p is not memory CUDA knows (pageable host memory, or freed): "
                  "needs %s", what, i, name, t[i].data, need);
      return -1;
    }
    if (gc_cu_check(cu, d, r, "cuPointerGetAttribute", name)) return -1;
    if (type == CU_MEMORYTYPE_HOST && host_ok) {
      host[i] = 1;
    } else if (type != CU_MEMORYTYPE_DEVICE) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s %d (%%%s): %p is %s memory, not device memory: needs %s%s", what, i, name,
                  t[i].data, type == CU_MEMORYTYPE_HOST ? "pinned host" : "non-device", need,
                  type == CU_MEMORYTYPE_HOST ? " (graphc_executable_enqueue copies pinned host "
                                               "tensors)" : "");
      return -1;
    } else {
      int ordinal = -1;
      CUcontext owner = NULL;
      if (GC_CU_WHAT(cu, d, name, PointerGetAttribute, &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                     ptr) ||
          GC_CU_WHAT(cu, d, name, PointerGetAttribute, &owner, CU_POINTER_ATTRIBUTE_CONTEXT, ptr))
        return -1;
      if (ordinal != (int)x->dev) {
        gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                    "%s %d (%%%s): %p is memory of device %d, not device memory of this "
                    "executable's device (%d)", what, i, name, t[i].data, ordinal, (int)x->dev);
        return -1;
      }
      /* NULL: memory of no one context (cuMemMap, memory pools), usable from any */
      if (owner && owner != x->ctx) {
        gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                    "%s %d (%%%s): %p is device memory of another CUDA context: this executable "
                    "runs in device %d's primary context (allocate with it current, as the CUDA "
                    "runtime does)", what, i, name, t[i].data, (int)x->dev);
        return -1;
      }
    }
    /* The allocation must hold the tensor from the pointer on (when the driver says). */
    CUdeviceptr start = 0;
    size_t size = 0;
    if (cu->PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr) == CUDA_SUCCESS &&
        cu->PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr) == CUDA_SUCCESS &&
        size && start <= ptr && (size_t)(start + size - ptr) < bytes) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s %d (%%%s): the allocation at %p holds %zu bytes from there, the tensor "
                  "needs %zu", what, i, name, t[i].data, (size_t)(start + size - ptr), bytes);
      return -1;
    }
  }
  return 0;
}

/* Order work about to go on stream s after every earlier enqueue still in flight (they
 * share the arena, the I/O buffers and the tensor map table). */
static int wait_pending(gc_cu_ctx *c, CUstream s, gc_diags *d) {
  gc_cu_exec *x = c->x;
  if (!c->pending) return 0;
  return GC_CU_WHAT(x->cu, d, "waiting for earlier enqueued work", StreamWaitEvent, s, c->done, 0);
}

/* One run with host tensors; run_mu held. */
static int run_host(gc_cu_ctx *c, const graphc_tensor_t *in, graphc_tensor_t *out, gc_diags *d) {
  gc_cu_exec *x = c->x;
  if (ctx_push(x, d)) return -1;
  const gc_cu_driver *cu = x->cu;
  const gc_launch_plan *p = x->plan;
  int bad = wait_pending(c, c->stream, d) || bind_io(c, c->in_buf, c->out_buf, d);
  for (int i = 0; i < p->n_inputs && !bad; i++)  /* nothing to copy for an empty tensor */
    bad = p->inputs[i].nbytes && GC_CU_WHAT(cu, d, p->inputs[i].name, MemcpyHtoDAsync, c->in_buf[i],
                                            in[i].data, p->inputs[i].nbytes, c->stream);
  if (!bad) bad = launch_all(c, c->stream, d);
  for (int i = 0; i < p->n_outputs && !bad; i++)
    bad = p->outputs[i].nbytes && GC_CU_WHAT(cu, d, p->outputs[i].name, MemcpyDtoHAsync, out[i].data,
                                             c->out_buf[i], p->outputs[i].nbytes, c->stream);
  /* Synchronize even after a failed enqueue: host buffers must not be in flight. */
  CUresult r = cu->StreamSynchronize(c->stream);
  if (!bad && r != CUDA_SUCCESS) {
    gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
                "cuStreamSynchronize failed: %s (%s) [a kernel failed while running; set "
                "GRAPHC_CUDA_SYNC=1 to find which]",
                gc_cu_error_name(cu, r), gc_cu_error_string(cu, r));
    bad = 1;
  }
  if (r == CUDA_SUCCESS) c->pending = 0;   /* what it waited on has finished too */
  ctx_pop(x);
  return bad ? -1 : 0;
}

int gc_cu_ctx_run(gc_cu_ctx *c, const graphc_tensor_t *in, graphc_tensor_t *out, gc_diags *d) {
  if (not_loaded(c, d)) return -1;
  pthread_mutex_lock(&c->run_mu);
  int rc = run_host(c, in, out, d);
  pthread_mutex_unlock(&c->run_mu);
  return rc;
}

int gc_cu_ctx_run_device(gc_cu_ctx *c, const graphc_tensor_t *in, graphc_tensor_t *out,
                         gc_diags *d) {
  if (not_loaded(c, d)) return -1;
  gc_cu_exec *x = c->x;
  size_t ni = (size_t)x->plan->n_inputs, no = (size_t)x->plan->n_outputs;
  CUdeviceptr *pin = calloc(ni + 1, sizeof *pin);
  CUdeviceptr *pout = calloc(no + 1, sizeof *pout);
  if (!pin || !pout) {
    free(pin);
    free(pout);
    return oom(d);
  }
  for (size_t i = 0; i < ni; i++) pin[i] = (CUdeviceptr)(uintptr_t)in[i].data;
  for (size_t i = 0; i < no; i++) pout[i] = (CUdeviceptr)(uintptr_t)out[i].data;
  int rc = -1;
  pthread_mutex_lock(&c->run_mu);
  if (ctx_push(x, d) == 0) {
    rc = check_ptrs(c, in, (int)ni, 0, 0, NULL, d) || check_ptrs(c, out, (int)no, 1, 0, NULL, d) ||
                 wait_pending(c, c->stream, d) || bind_io(c, pin, pout, d) ||
                 launch_all(c, c->stream, d)
             ? -1
             : 0;
    /* Synchronize even after a failed enqueue: nothing of this run stays in flight. */
    if (sync_stream(c, rc ? NULL : d) == 0) c->pending = 0;
    else rc = -1;
    ctx_pop(x);
  }
  pthread_mutex_unlock(&c->run_mu);
  free(pin);
  free(pout);
  return rc;
}

/* One enqueue; run_mu held. */
static int enqueue(gc_cu_ctx *c, const graphc_tensor_t *in, graphc_tensor_t *out, CUstream s,
                   gc_diags *d) {
  gc_cu_exec *x = c->x;
  const gc_cu_driver *cu = x->cu;
  const gc_launch_plan *p = x->plan;
  size_t ni = (size_t)p->n_inputs, no = (size_t)p->n_outputs;
  CUresult r;
  if (!c->stream_checked || c->checked_stream != s) {
    CUcontext sctx = NULL;
    r = cu->StreamGetCtx(s, &sctx);
    if (r == CUDA_SUCCESS && sctx != x->ctx) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "stream %p belongs to another CUDA context: this executable runs in device %d's "
                  "primary context (create the stream with it current, as the CUDA runtime does)",
                  (void *)s, (int)x->dev);
      return -1;
    }
    if (gc_cu_check(cu, d, r, "cuStreamGetCtx", "the caller's stream")) return -1;
    c->checked_stream = s;
    c->stream_checked = 1;
  }
  CUdeviceptr *pin = c->scratch_in, *pout = c->scratch_out;
  unsigned char *hin = c->scratch_hin, *hout = c->scratch_hout;
  /* pointers accepted last time are not asked about again (the fast path of a server
   * that enqueues into the same buffers); a new pointer is checked */
  int same = 1;
  for (size_t i = 0; i < ni && same; i++) same = in[i].data == c->checked_in[i];
  for (size_t i = 0; i < no && same; i++) same = out[i].data == c->checked_out[i];
  int bad = 0;
  if (same) {
    memcpy(hin, c->checked_in_host, ni);
    memcpy(hout, c->checked_out_host, no);
  } else {
    bad = check_ptrs(c, in, (int)ni, 0, 1, hin, d) || check_ptrs(c, out, (int)no, 1, 1, hout, d);
    for (size_t i = 0; i < ni; i++) c->checked_in[i] = bad ? NULL : in[i].data;
    for (size_t i = 0; i < no; i++) c->checked_out[i] = bad ? NULL : out[i].data;
    if (!bad) {
      memcpy(c->checked_in_host, hin, ni);
      memcpy(c->checked_out_host, hout, no);
    }
  }
  if (!bad && !c->done) bad = GC_CU(cu, d, EventCreate, &c->done, CU_EVENT_DISABLE_TIMING);
  if (!bad) {
    /* Pinned host tensors go through the context's own I/O buffers. */
    for (size_t i = 0; i < ni; i++) pin[i] = hin[i] ? c->in_buf[i] : (CUdeviceptr)(uintptr_t)in[i].data;
    for (size_t i = 0; i < no; i++)
      pout[i] = hout[i] ? c->out_buf[i] : (CUdeviceptr)(uintptr_t)out[i].data;
    bad = wait_pending(c, s, d) || bind_io(c, pin, pout, d);
  }
  int queued = 0;   /* something went on the stream: later work must wait for it */
  for (size_t i = 0; i < ni && !bad; i++)
    if (hin[i] && p->inputs[i].nbytes) {
      bad = GC_CU_WHAT(cu, d, p->inputs[i].name, MemcpyHtoDAsync, pin[i], in[i].data,
                       p->inputs[i].nbytes, s);
      queued = 1;
    }
  if (!bad) {
    queued = 1;
    bad = launch_all(c, s, d);
  }
  for (size_t i = 0; i < no && !bad; i++)
    if (hout[i] && p->outputs[i].nbytes)
      bad = GC_CU_WHAT(cu, d, p->outputs[i].name, MemcpyDtoHAsync, out[i].data, pout[i],
                       p->outputs[i].nbytes, s);
  if (queued) {
    r = cu->EventRecord(c->done, s);
    if (r == CUDA_SUCCESS) {
      c->pending = 1;
    } else {
      /* Nothing to wait on: drain the stream so no later run overlaps this one. */
      if (!bad) bad = gc_cu_check(cu, d, r, "cuEventRecord", "after the enqueued work");
      cu->StreamSynchronize(s);
    }
  }
  return bad ? -1 : 0;
}

int gc_cu_ctx_enqueue(gc_cu_ctx *c, const graphc_tensor_t *in, graphc_tensor_t *out, void *stream,
                      gc_diags *d) {
  if (not_loaded(c, d)) return -1;
  gc_cu_exec *x = c->x;
  pthread_mutex_lock(&c->run_mu);
  int rc = -1;
  if (ctx_push(x, d) == 0) {
    rc = enqueue(c, in, out, (CUstream)stream, d);
    ctx_pop(x);
  }
  pthread_mutex_unlock(&c->run_mu);
  return rc;
}

/* The executor's own context. */
int gc_cu_exec_run(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out, gc_diags *d) {
  return gc_cu_ctx_run(x ? x->main : NULL, in, out, d);
}

int gc_cu_exec_run_device(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out,
                          gc_diags *d) {
  return gc_cu_ctx_run_device(x ? x->main : NULL, in, out, d);
}

int gc_cu_exec_enqueue(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out, void *stream,
                       gc_diags *d) {
  return gc_cu_ctx_enqueue(x ? x->main : NULL, in, out, stream, d);
}

/* ---- timing hooks (graphc bench, GPU tests) ------------------------------------------- */
/* Create n events (timing enabled); 0 on success, else destroys what it made. */
static int make_events(gc_cu_exec *x, CUevent *ev, int n, gc_diags *d) {
  for (int i = 0; i < n; i++)
    if (GC_CU(x->cu, d, EventCreate, &ev[i], CU_EVENT_DEFAULT)) {
      while (i-- > 0) x->cu->EventDestroy(ev[i]);
      return -1;
    }
  return 0;
}

/* Destroy n events (NULL entries skipped). */
static void free_events(gc_cu_exec *x, CUevent *ev, int n) {
  for (int i = 0; i < n; i++)
    if (ev[i]) x->cu->EventDestroy(ev[i]);
}

int gc_cu_exec_time_runs(gc_cu_exec *x, int warmup, int runs, float *ms, gc_diags *d) {
  gc_cu_ctx *c = x ? x->main : NULL;
  if (not_loaded(c, d) || ctx_push(x, d)) return -1;
  CUevent ev[2] = {0, 0};
  int bad = make_events(x, ev, 2, d) || bind_io(c, c->in_buf, c->out_buf, d);
  for (int i = 0; i < warmup && !bad; i++) bad = launch_all(c, c->stream, d);
  if (!bad) bad = sync_stream(c, d);
  for (int i = 0; i < runs && !bad; i++) {
    bad = GC_CU(x->cu, d, EventRecord, ev[0], c->stream) || launch_all(c, c->stream, d) ||
          GC_CU(x->cu, d, EventRecord, ev[1], c->stream) ||
          GC_CU(x->cu, d, EventSynchronize, ev[1]) ||
          GC_CU(x->cu, d, EventElapsedTime, &ms[i], ev[0], ev[1]);
  }
  if (bad) x->cu->StreamSynchronize(c->stream);
  if (ev[0]) free_events(x, ev, 2);
  ctx_pop(x);
  return bad ? -1 : 0;
}

/* Host time to issue one run (graph launch, or every eager launch), in microseconds:
 * the CPU clock around each launch_all; the stream is drained every 8 runs so the
 * launches never wait for queue space. */
int gc_cu_exec_time_issue(gc_cu_exec *x, int runs, float *us, gc_diags *d) {
  gc_cu_ctx *c = x ? x->main : NULL;
  if (not_loaded(c, d) || ctx_push(x, d)) return -1;
  /* capture the graph first */
  int bad = bind_io(c, c->in_buf, c->out_buf, d) || launch_all(c, c->stream, d) || sync_stream(c, d);
  for (int i = 0; i < runs && !bad; i++) {
    double t0 = now_ms();
    bad = launch_all(c, c->stream, d);
    us[i] = (float)((now_ms() - t0) * 1e3);
    if (!bad && i % 8 == 7) bad = sync_stream(c, d);
  }
  if (!bad) bad = sync_stream(c, d);
  else x->cu->StreamSynchronize(c->stream);
  ctx_pop(x);
  return bad ? -1 : 0;
}

/* Runs queued back to back (as the copy baseline's copies are): events[i] after run i-1,
 * so ms[i] is the interval between the ends of two runs: one run's device time, with no
 * idle wait for the host to issue it (the host issues faster than a run takes). */
int gc_cu_exec_time_queued(gc_cu_exec *x, int warmup, int runs, float *ms, gc_diags *d) {
  gc_cu_ctx *c = x ? x->main : NULL;
  if (not_loaded(c, d) || runs < 1) return -1;
  CUevent *ev = calloc((size_t)runs + 1, sizeof *ev);
  if (!ev) return oom(d);
  if (ctx_push(x, d)) {
    free(ev);
    return -1;
  }
  int bad = make_events(x, ev, runs + 1, d);
  int made = !bad;
  if (!bad) bad = bind_io(c, c->in_buf, c->out_buf, d);
  for (int i = 0; i < warmup && !bad; i++) bad = launch_all(c, c->stream, d);
  if (!bad) bad = GC_CU(x->cu, d, EventRecord, ev[0], c->stream);
  for (int i = 0; i < runs && !bad; i++)
    bad = launch_all(c, c->stream, d) || GC_CU(x->cu, d, EventRecord, ev[i + 1], c->stream);
  if (!bad) bad = sync_stream(c, d);
  for (int i = 0; i < runs && !bad; i++)
    bad = GC_CU(x->cu, d, EventElapsedTime, &ms[i], ev[i], ev[i + 1]);
  if (bad) x->cu->StreamSynchronize(c->stream);
  if (made) free_events(x, ev, runs + 1);
  free(ev);
  ctx_pop(x);
  return bad ? -1 : 0;
}

/* Per-launch times. Two sets of n + 1 events take turns: run r is queued behind run r - 1
 * before the host waits for run r - 1 and reads its times, so no launch but the very first
 * starts on an idle device (whose wait for the host would count as the first kernel's). */
int gc_cu_exec_time_kernels(gc_cu_exec *x, int runs, float *ms, gc_diags *d) {
  gc_cu_ctx *c = x ? x->main : NULL;
  if (not_loaded(c, d)) return -1;
  int n = x->plan->n_launches;
  CUevent *ev = calloc(2 * ((size_t)n + 1), sizeof *ev);
  if (!ev) return oom(d);
  if (ctx_push(x, d)) {
    free(ev);
    return -1;
  }
  int bad = make_events(x, ev, 2 * (n + 1), d);
  int made = !bad;
  if (!bad) bad = bind_io(c, c->in_buf, c->out_buf, d) || upload_tmaps(c, c->stream, d);
  /* one untimed run first, so that run 0 is queued behind work too */
  if (!bad) bad = launch_range(c, 0, n, c->stream, d);
  for (int r = 0; r <= runs && !bad; r++) {
    if (r < runs) {
      CUevent *e = ev + (size_t)(r & 1) * (n + 1);
      for (int i = 0; i < n && !bad; i++)
        bad = GC_CU(x->cu, d, EventRecord, e[i], c->stream) || launch_one(c, i, c->stream, d);
      if (!bad) bad = GC_CU(x->cu, d, EventRecord, e[n], c->stream);
    }
    if (r == 0 || bad) continue;
    CUevent *p = ev + (size_t)((r - 1) & 1) * (n + 1);  /* run r - 1: read its times */
    bad = GC_CU(x->cu, d, EventSynchronize, p[n]);
    for (int i = 0; i < n && !bad; i++)
      bad = GC_CU(x->cu, d, EventElapsedTime, &ms[(size_t)(r - 1) * n + i], p[i], p[i + 1]);
  }
  if (!bad) bad = sync_stream(c, d);
  else x->cu->StreamSynchronize(c->stream);
  if (made) free_events(x, ev, 2 * (n + 1));
  free(ev);
  ctx_pop(x);
  return bad ? -1 : 0;
}

int gc_cu_exec_copy_bandwidth(gc_cu_exec *x, size_t bytes, int reps, double *gbps,
                              size_t *bytes_used, gc_diags *d) {
  gc_cu_ctx *c = x ? x->main : NULL;
  if (not_loaded(c, d) || ctx_push(x, d)) return -1;
  const gc_cu_driver *cu = x->cu;
  CUdeviceptr src = 0, dst = 0;
  /* Halve the size while memory is short; other failures are errors. */
  for (;;) {
    CUresult r = cu->MemAlloc(&src, bytes);
    if (r == CUDA_SUCCESS) {
      r = cu->MemAlloc(&dst, bytes);
      if (r != CUDA_SUCCESS) {
        cu->MemFree(src);
        src = 0;
      }
    }
    if (r == CUDA_SUCCESS) break;
    if (r != CUDA_ERROR_OUT_OF_MEMORY || bytes <= ((size_t)64 << 20)) {
      gc_cu_check(cu, d, r, "cuMemAlloc", "copy-bandwidth buffers");
      ctx_pop(x);
      return -1;
    }
    bytes /= 2;
  }
  CUevent ev[2] = {0, 0};
  int bad = make_events(x, ev, 2, d);
  float ms = 0;
  if (!bad)
    bad = GC_CU(cu, d, MemsetD8Async, src, 1, bytes, c->stream) ||
          GC_CU(cu, d, MemcpyDtoDAsync, dst, src, bytes, c->stream) ||  /* warm-up */
          GC_CU(cu, d, EventRecord, ev[0], c->stream);
  for (int i = 0; i < reps && !bad; i++)
    bad = GC_CU(cu, d, MemcpyDtoDAsync, dst, src, bytes, c->stream);
  if (!bad)
    bad = GC_CU(cu, d, EventRecord, ev[1], c->stream) || GC_CU(cu, d, EventSynchronize, ev[1]) ||
          GC_CU(cu, d, EventElapsedTime, &ms, ev[0], ev[1]);
  cu->StreamSynchronize(c->stream);
  if (ev[0]) free_events(x, ev, 2);
  cu->MemFree(src);
  cu->MemFree(dst);
  ctx_pop(x);
  if (bad) return -1;
  *gbps = ms > 0 ? 2.0 * (double)bytes * reps / (ms * 1e-3) / 1e9 : 0;
  if (bytes_used) *bytes_used = bytes;
  return 0;
}
