/* rt_api.c - the runtime API (include/graphc/graphc_rt.h): .gcx bundles
 * loaded and run with only the CUDA driver.
 *
 *   load:     file -> bytes -> gc_bundle_read (bundle.c: every field checked)
 *             -> the weights table (unique params over all plans)
 *   prepare:  gc_cu_exec_open (device 0) -> the plan of the best image for the
 *             device -> gc_cu_exec_load (cuda_exec.c)
 *   run:      signature checks -> gc_cu_exec_run / run_device
 *   host:     a bundle with a HOST section and the kernel functions linked
 *             into the program (load_host) -> gc_host_exec (host_exec.c)
 *
 * Built into libgraphc_rt together with bundle.c, cuda_exec.c, cuda_driver.c,
 * host_exec.c, threadpool.c, settings.c and ir/util.c (diagnostics and strings), and into
 * libgraphc as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graphc/graphc_rt.h"
#include <pthread.h>

#include "runtime/bundle.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_exec.h"
#include "runtime/host_exec.h"
#include "runtime/settings.h"

typedef struct rt_weight {
  const char *name;        /* bundle arena */
  graphc_tensor_info_t info;
  const void *data;        /* embedded, or `owned` */
  void *owned;             /* copy made by graphc_rt_set_weight */
} rt_weight;

struct graphc_rt_bundle {
  char *name;              /* path, or "<memory>" */
  void *file;              /* the file's bytes when loaded from a path */
  gc_bundle b;
  int n_weights;
  rt_weight *weights;
  gc_cu_exec *x;           /* NULL until prepared */
  int plan;                /* the plan loaded */
  void **aligned;          /* aligned copies of cubins (per image), or NULL */
  gc_host_kernel_fn *hfns; /* host bundle: per plan kernel, from load_host; else NULL */
  gc_host_exec *hx;        /* host bundle: NULL until prepared */
  gc_sbuf stats;
  pthread_mutex_t mu;      /* the lazy prepare and the list of contexts */
  struct graphc_rt_context *contexts;
};

struct graphc_rt_context {
  graphc_rt_bundle_t *r;
  gc_cu_ctx *c;            /* NULL for a host bundle: runs on the bundle's executor */
  struct graphc_rt_context *next;
};

/* Finish a call: first error to err, the status returned. */
static graphc_status_t finish(gc_diags *d, graphc_error_t *err) {
  graphc_status_t st = d->n_errors ? d->status : GRAPHC_STATUS_OK;
  if (err) {
    if (st == GRAPHC_STATUS_OK)
      memset(err, 0, sizeof *err);
    else
      gc_diags_to_error(d, err);
  }
  gc_diags_free(d);
  return st;
}

/* Read a whole regular file into malloc'd memory (64-byte aligned). */
static void *read_file(const char *path, size_t *len, gc_diags *d) {
  gc_loc nl = {0, 0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, nl, "cannot open '%s': %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  void *p = NULL;
  size_t n = (size_t)st.st_size, got = 0;
  if (!S_ISREG(st.st_mode)) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, nl, "cannot read '%s': not a regular file", path);
  } else if (posix_memalign(&p, 64, n + 1) != 0) {
    p = NULL;
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, nl, "out of memory reading '%s' (%zu bytes)", path, n);
  } else {
    while (got < n) {
      ssize_t r = read(fd, (char *)p + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (got != n) {
      gc_error_at(d, GRAPHC_STATUS_IO_ERROR, nl, "cannot read '%s': %s", path,
                  got < n && errno ? strerror(errno) : "the file changed while being read");
      free(p);
      p = NULL;
    }
  }
  close(fd);
  *len = n;
  return p;
}

/* The weights table: every param const, by name, first occurrence wins. */
static int collect_weights(graphc_rt_bundle_t *r, gc_diags *d) {
  int total = 0;
  for (int i = 0; i < r->b.n_plans; i++) total += r->b.plans[i].n_consts;
  r->weights = calloc((size_t)total + 1, sizeof *r->weights);
  if (!r->weights) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return -1;
  }
  for (int i = 0; i < r->b.n_plans; i++)
    for (int c = 0; c < r->b.plans[i].n_consts; c++) {
      const gc_lp_const *k = &r->b.plans[i].consts[c];
      if (!k->is_param) continue;
      int seen = -1;
      for (int j = 0; j < r->n_weights && seen < 0; j++)
        if (strcmp(r->weights[j].name, k->name) == 0) seen = j;
      if (seen >= 0) {
        if (r->weights[seen].info.nbytes != k->bytes) {
          gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0},
                      "%s: damaged bundle: weight '%s' has two sizes", r->name, k->name);
          return -1;
        }
        continue;
      }
      rt_weight *w = &r->weights[r->n_weights++];
      w->name = k->name;
      w->info.name = k->name;
      w->info.dtype = k->dtype;
      w->info.rank = k->rank;
      memcpy(w->info.dims, k->dims, sizeof w->info.dims);
      w->info.nbytes = (size_t)k->bytes;
      w->data = k->data;
    }
  return 0;
}

/* Match the host bundle's kernels with the linked functions (by name). */
static int bind_host(graphc_rt_bundle_t *r, const graphc_rt_host_kernel_t *k, size_t n,
                     gc_diags *d) {
  gc_loc nl = {0, 0};
  if (!r->b.host) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, nl,
                "%s: not a host bundle (it holds GPU code): load it with graphc_rt_bundle_load_memory",
                r->name);
    return -1;
  }
  const gc_launch_plan *p = &r->b.plans[r->b.host->plan];
  r->hfns = calloc((size_t)p->n_kernels + 1, sizeof *r->hfns);
  if (!r->hfns) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, nl, "out of memory");
    return -1;
  }
  for (int i = 0; i < p->n_kernels; i++) {
    for (size_t j = 0; j < n && !r->hfns[i]; j++)
      if (k[j].name && strcmp(k[j].name, p->kernels[i].name) == 0) r->hfns[i] = k[j].fn;
    if (!r->hfns[i]) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, nl,
                  "%s: kernel '%s' of the plan is not among the %zu linked functions "
                  "(the object and the bundle do not belong together)", r->name, p->kernels[i].name, n);
      return -1;
    }
  }
  return 0;
}

/* Parse `data` into a new handle; takes ownership of `file` (may be NULL).
 * With `hk`, a host bundle whose n_hk kernels are linked into the program. */
static graphc_status_t load(const char *name, void *file, const void *data, size_t len,
                            const graphc_rt_host_kernel_t *hk, size_t n_hk,
                            graphc_rt_bundle_t **out, graphc_error_t *err) {
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  graphc_rt_bundle_t *r = calloc(1, sizeof *r);
  if (!r || !(r->name = strdup(name))) {
    free(r);
    free(file);
    gc_error_at(&d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return finish(&d, err);
  }
  pthread_mutex_init(&r->mu, NULL);  /* default attributes: cannot fail on Linux */
  r->file = file;
  if (gc_bundle_read(&r->b, data, len, name, &d) == 0 && collect_weights(r, &d) == 0 &&
      (!hk || bind_host(r, hk, n_hk, &d) == 0)) {
    gc_sbuf_printf(&r->stats, "bundle: %s, graph @%s, format %u, written by graphc %s\n",
                   name, gc_bundle_meta(&r->b, "graph") ? gc_bundle_meta(&r->b, "graph") : "?",
                   r->b.format, r->b.graphc_version);
    char list[256];
    gc_cu_image imgs[16];
    int n = r->b.n_images < 16 ? r->b.n_images : 16;
    for (int i = 0; i < n; i++)
      imgs[i] = (gc_cu_image){r->b.images[i].sm, r->b.images[i].cubin, r->b.images[i].cubin_len,
                              r->b.images[i].ptx, NULL};
    gc_cu_image_list(imgs, n, list, sizeof list);
    if (r->b.host)
      snprintf(list, sizeof list, "host %s (%s), linked into the program", r->b.host->triple,
               r->b.host->cpu);
    gc_sbuf_printf(&r->stats, "bundle: %d plan%s, code: %s\n", r->b.n_plans,
                   r->b.n_plans == 1 ? "" : "s", list);
    *out = r;
  } else {
    graphc_rt_bundle_destroy(r);
  }
  return finish(&d, err);
}

graphc_status_t graphc_rt_bundle_load(const char *path, graphc_rt_bundle_t **out,
                                      graphc_error_t *err) {
  if (out) *out = NULL;
  if (!path || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_rt_bundle_load: NULL argument");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  size_t len = 0;
  void *file = read_file(path, &len, &d);
  if (!file) return finish(&d, err);
  gc_diags_free(&d);
  return load(path, file, file, len, NULL, 0, out, err);
}

graphc_status_t graphc_rt_bundle_load_memory(const void *data, size_t len,
                                             graphc_rt_bundle_t **out, graphc_error_t *err) {
  if (out) *out = NULL;
  if (!data || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_rt_bundle_load_memory: NULL argument");
  return load("<memory>", NULL, data, len, NULL, 0, out, err);
}

graphc_status_t graphc_rt_bundle_load_host(const void *data, size_t len,
                                           const graphc_rt_host_kernel_t *kernels,
                                           size_t n_kernels, graphc_rt_bundle_t **out,
                                           graphc_error_t *err) {
  if (out) *out = NULL;
  if (!data || !out || (!kernels && n_kernels))
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_rt_bundle_load_host: NULL argument");
  static const graphc_rt_host_kernel_t none = {NULL, NULL};
  return load("<memory>", NULL, data, len, kernels ? kernels : &none, n_kernels, out, err);
}

void graphc_rt_bundle_destroy(graphc_rt_bundle_t *r) {
  if (!r) return;
  while (r->contexts) {  /* their device side goes with the executor, after their work */
    struct graphc_rt_context *c = r->contexts;
    r->contexts = c->next;
    free(c);
  }
  gc_cu_exec_free(r->x);
  gc_host_exec_free(r->hx);
  free(r->hfns);
  for (int i = 0; i < r->n_weights; i++) free(r->weights[i].owned);
  free(r->weights);
  if (r->aligned)
    for (int i = 0; i < r->b.n_images; i++) free(r->aligned[i]);
  free(r->aligned);
  gc_bundle_free(&r->b);
  gc_sbuf_free(&r->stats);
  free(r->file);
  free(r->name);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

/* The signature (the same in every plan). */
static const gc_launch_plan *sig(const graphc_rt_bundle_t *r) { return &r->b.plans[0]; }

size_t graphc_rt_num_inputs(const graphc_rt_bundle_t *r) {
  return r ? (size_t)sig(r)->n_inputs : 0;
}
size_t graphc_rt_num_outputs(const graphc_rt_bundle_t *r) {
  return r ? (size_t)sig(r)->n_outputs : 0;
}

graphc_status_t graphc_rt_input_info(const graphc_rt_bundle_t *r, size_t i,
                                     graphc_tensor_info_t *info) {
  if (!r || !info || i >= (size_t)sig(r)->n_inputs) return GRAPHC_STATUS_INVALID_ARGUMENT;
  *info = sig(r)->inputs[i];
  return GRAPHC_STATUS_OK;
}

graphc_status_t graphc_rt_output_info(const graphc_rt_bundle_t *r, size_t i,
                                      graphc_tensor_info_t *info) {
  if (!r || !info || i >= (size_t)sig(r)->n_outputs) return GRAPHC_STATUS_INVALID_ARGUMENT;
  *info = sig(r)->outputs[i];
  return GRAPHC_STATUS_OK;
}

const char *graphc_rt_bundle_meta(const graphc_rt_bundle_t *r, const char *key) {
  return r && key ? gc_bundle_meta(&r->b, key) : NULL;
}

const char *graphc_rt_bundle_stats(const graphc_rt_bundle_t *r) {
  return r && r->stats.data ? r->stats.data : "";
}

size_t graphc_rt_num_weights(const graphc_rt_bundle_t *r) { return r ? (size_t)r->n_weights : 0; }

graphc_status_t graphc_rt_weight_info(const graphc_rt_bundle_t *r, size_t i,
                                      graphc_tensor_info_t *info, int *embedded) {
  if (!r || !info || i >= (size_t)r->n_weights) return GRAPHC_STATUS_INVALID_ARGUMENT;
  *info = r->weights[i].info;
  if (embedded) *embedded = r->weights[i].data != NULL;
  return GRAPHC_STATUS_OK;
}

graphc_status_t graphc_rt_set_weight(graphc_rt_bundle_t *r, const char *name, const void *data,
                                     size_t nbytes, graphc_error_t *err) {
  if (!r || !name || !data)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_rt_set_weight: NULL argument");
  rt_weight *w = NULL;
  for (int i = 0; i < r->n_weights && !w; i++)
    if (strcmp(r->weights[i].name, name) == 0) w = &r->weights[i];
  if (!w) return gc_set_error(err, GRAPHC_STATUS_WEIGHTS_ERROR, "the bundle has no weight '%s'", name);
  if (nbytes != w->info.nbytes)
    return gc_set_error(err, GRAPHC_STATUS_WEIGHTS_ERROR,
                        "weight '%s' is %s with %zu bytes, got %zu bytes", name,
                        graphc_dtype_name(w->info.dtype), w->info.nbytes, nbytes);
  void *copy = malloc(nbytes ? nbytes : 1);
  if (!copy) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  memcpy(copy, data, nbytes);
  free(w->owned);
  w->owned = copy;
  w->data = copy;
  /* Every plan const of that name now reads the copy (plans live in the bundle arena). */
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  for (int i = 0; i < r->b.n_plans; i++)
    for (int c = 0; c < r->b.plans[i].n_consts; c++) {
      gc_lp_const *k = &r->b.plans[i].consts[c];
      if (!k->is_param || strcmp(k->name, name) != 0) continue;
      k->data = copy;
      if (r->x && i == r->plan) gc_cu_exec_set_const(r->x, c, copy, nbytes, &d);
      if (r->hx && i == r->plan) gc_host_exec_set_const(r->hx, c, copy, &d);
    }
  return finish(&d, err);
}

/* Images of plan p as the loader wants them; cubins copied when misaligned. */
static int plan_images(graphc_rt_bundle_t *r, int p, gc_cu_image *out, gc_diags *d) {
  int n = 0;
  for (int i = 0; i < r->b.n_images; i++) {
    const gc_bundle_image *im = &r->b.images[i];
    if (im->plan != p) continue;
    const void *cubin = im->cubin;
    if (cubin && ((uintptr_t)cubin & 63)) {
      if (!r->aligned && !(r->aligned = calloc((size_t)r->b.n_images, sizeof *r->aligned))) goto oom;
      if (!r->aligned[i]) {
        if (posix_memalign(&r->aligned[i], 64, im->cubin_len) != 0) {
          r->aligned[i] = NULL;
          goto oom;
        }
        memcpy(r->aligned[i], im->cubin, im->cubin_len);
      }
      cubin = r->aligned[i];
    }
    out[n++] = (gc_cu_image){im->sm, cubin, im->cubin_len, im->ptx, NULL};
  }
  return n;
oom:
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
  return -1;
}

/* Host code: the executor over the linked functions (threads from s). */
static int prepare_host(graphc_rt_bundle_t *r, const gc_rt_settings *s, gc_diags *d) {
  const gc_bundle_host *h = r->b.host;
  if (!r->hfns) {
    gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0},
                "%s: a host bundle (%s) carries no code: the program that links the object "
                "of `graphc compile --target host --emit c` loads it (NAME_create)",
                r->name, h->triple);
    return -1;
  }
  double *work = calloc((size_t)h->n_kernels + 1, sizeof *work);
  if (!work) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return -1;
  }
  for (int i = 0; i < h->n_kernels; i++) work[i] = (double)h->work[i];
  gc_host_code code = {r->hfns, work, h->align};
  gc_host_exec *hx = gc_host_exec_load(&r->b.plans[h->plan], &code, gc_host_threads(s, NULL), d);
  free(work);
  if (!hx) return -1;
  r->plan = h->plan;
  gc_sbuf_puts(&r->stats, "host: ");
  gc_host_exec_describe(hx, &r->stats);
  gc_sbuf_putc(&r->stats, '\n');
  __atomic_store_n(&r->hx, hx, __ATOMIC_RELEASE);  /* published last: prepare()'s fast path */
  return 0;
}

/* Open the device and load the plan whose image suits it best (or the host code);
 * the runtime's settings are read here, the entry that needs them. */
static int prepare_locked(graphc_rt_bundle_t *r, gc_diags *d) {
  if (r->x || r->hx) return 0;
  gc_rt_settings s;
  gc_rt_settings_read(&s);
  for (int i = 0; i < r->n_weights; i++)
    if (!r->weights[i].data) {
      gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, (gc_loc){0, 0},
                  "%s: weight '%s' is not in the bundle (compiled without --embed-weights): "
                  "provide it with graphc_rt_set_weight",
                  r->name, r->weights[i].name);
      return -1;
    }
  if (r->b.host) return prepare_host(r, &s, d);
  gc_cu_exec *x = gc_cu_exec_open(&s, d);
  if (!x) return -1;
  int dsm = gc_cu_exec_props(x)->sm;
  int n = r->b.n_images;
  gc_cu_image *all = calloc((size_t)n + 1, sizeof *all);
  gc_cu_try *order = calloc(2 * (size_t)n + 1, sizeof *order);
  int rc = -1;
  if (!all || !order) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++)
    all[i] = (gc_cu_image){r->b.images[i].sm, r->b.images[i].cubin, r->b.images[i].cubin_len,
                           r->b.images[i].ptx, NULL};
  /* The plan of the image tried first; the loader falls back among its images. */
  int p = gc_cu_image_order(all, n, dsm, order) ? r->b.images[order[0].image].plan : 0;
  int k = plan_images(r, p, all, d);
  if (k < 0) goto out;
  if (k == 0 || gc_cu_image_order(all, k, dsm, order) == 0) {
    /* Nothing runs here: let the loader say so, listing every image. */
    for (int i = 0; i < n; i++)
      all[i] = (gc_cu_image){r->b.images[i].sm, r->b.images[i].cubin, r->b.images[i].cubin_len,
                             r->b.images[i].ptx, NULL};
    k = n;
  }
  const char *eager = gc_bundle_meta(&r->b, "eager");
  gc_sbuf_printf(&r->stats, "cuda: device 0 \"%s\" sm_%d, %d SMs, driver CUDA %d.%d\n",
                 gc_cu_exec_props(x)->name, dsm, gc_cu_exec_props(x)->num_sms,
                 gc_cu_exec_props(x)->driver_version / 1000,
                 gc_cu_exec_props(x)->driver_version % 1000 / 10);
  if (gc_cu_exec_load(x, &r->b.plans[p], all, k, eager && strcmp(eager, "1") == 0, &r->stats, d))
    goto out;
  r->plan = p;
  __atomic_store_n(&r->x, x, __ATOMIC_RELEASE);
  x = NULL;
  rc = 0;
out:
  gc_cu_exec_free(x);
  free(all);
  free(order);
  return rc;
}

/* Prepare once, whichever thread comes first (the others wait for it). */
static int prepare(graphc_rt_bundle_t *r, gc_diags *d) {
  if (__atomic_load_n(&r->x, __ATOMIC_ACQUIRE) || __atomic_load_n(&r->hx, __ATOMIC_ACQUIRE)) return 0;
  pthread_mutex_lock(&r->mu);
  int rc = prepare_locked(r, d);
  pthread_mutex_unlock(&r->mu);
  return rc;
}

graphc_status_t graphc_rt_bundle_prepare(graphc_rt_bundle_t *r, graphc_error_t *err) {
  if (!r) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_rt_bundle_prepare: NULL bundle");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  prepare(r, &d);
  return finish(&d, err);
}

/* Check caller tensors against the signature: count, dtype, shape, nbytes, data. */
static int check_tensors(const char *what, const graphc_tensor_info_t *info, int n_info,
                         const graphc_tensor_t *t, size_t n, gc_diags *d) {
  gc_loc nl = {0, 0};
  if (n != (size_t)n_info) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, nl, "expected %d %s, got %zu", n_info, what, n);
    return -1;
  }
  if (n && !t) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, nl, "%s array is NULL", what);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const graphc_tensor_info_t *e = &info[i];
    int same = t[i].dtype == e->dtype && t[i].rank == e->rank;
    for (int k = 0; same && k < e->rank; k++) same = t[i].dims[k] == e->dims[k];
    if (!same) {
      gc_sbuf got = {0}, want = {0};
      int ok_rank = t[i].rank >= 0 && t[i].rank <= GRAPHC_MAX_RANK;
      const char *gn = graphc_dtype_name(t[i].dtype);
      gc_sbuf_printf(&got, "%s[", gn ? gn : "?");
      for (int k = 0; ok_rank && k < t[i].rank; k++)
        gc_sbuf_printf(&got, "%s%lld", k ? ", " : "", (long long)t[i].dims[k]);
      gc_sbuf_printf(&want, "%s[", graphc_dtype_name(e->dtype));
      for (int k = 0; k < e->rank; k++)
        gc_sbuf_printf(&want, "%s%lld", k ? ", " : "", (long long)e->dims[k]);
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, nl, "%s %zu (%%%s): expected %s], got %s]",
                  what, i, e->name, want.data, ok_rank ? got.data : "<invalid rank>");
      gc_sbuf_free(&got);
      gc_sbuf_free(&want);
      return -1;
    }
    if (!t[i].data && e->nbytes) {  /* an empty tensor may have no buffer */
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, nl, "%s %zu (%%%s): data is NULL", what, i,
                  e->name);
      return -1;
    }
    if (t[i].nbytes < e->nbytes) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, nl,
                  "%s %zu (%%%s): buffer has %zu bytes, needs %zu", what, i, e->name,
                  t[i].nbytes, e->nbytes);
      return -1;
    }
  }
  return 0;
}

/* Shared body of the run calls. device: 0 host tensors, 1 device tensors, 2 enqueue
 * on `stream`. */
static graphc_status_t run(graphc_rt_bundle_t *r, const graphc_tensor_t *in, size_t n_in,
                           graphc_tensor_t *out, size_t n_out, int device, void *stream,
                           graphc_error_t *err) {
  if (!r) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_rt_run: NULL bundle");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  const gc_launch_plan *s = sig(r);
  if (check_tensors("inputs", s->inputs, s->n_inputs, in, n_in, &d) == 0 &&
      check_tensors("outputs", s->outputs, s->n_outputs, out, n_out, &d) == 0 &&
      prepare(r, &d) == 0) {
    int rc = -1;
    if (r->hx && device)
      gc_error_at(&d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0},
                  "host code has no device pointers or streams: use graphc_rt_run");
    else if (r->hx)
      rc = gc_host_exec_run(r->hx, in, out, &d);
    else if (device == 2)
      rc = gc_cu_exec_enqueue(r->x, in, out, stream, &d);
    else
      rc = device ? gc_cu_exec_run_device(r->x, in, out, &d) : gc_cu_exec_run(r->x, in, out, &d);
    if (rc && !d.n_errors)
      gc_error_at(&d, GRAPHC_STATUS_DEVICE_ERROR, (gc_loc){0, 0}, "run failed");
  }
  return finish(&d, err);
}

graphc_status_t graphc_rt_run(graphc_rt_bundle_t *r, const graphc_tensor_t *inputs,
                              size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                              graphc_error_t *err) {
  return run(r, inputs, n_inputs, outputs, n_outputs, 0, NULL, err);
}

graphc_status_t graphc_rt_run_device(graphc_rt_bundle_t *r, const graphc_tensor_t *inputs,
                                     size_t n_inputs, graphc_tensor_t *outputs,
                                     size_t n_outputs, graphc_error_t *err) {
  return run(r, inputs, n_inputs, outputs, n_outputs, 1, NULL, err);
}

graphc_status_t graphc_rt_enqueue(graphc_rt_bundle_t *r, const graphc_tensor_t *inputs,
                                  size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                  void *stream, graphc_error_t *err) {
  return run(r, inputs, n_inputs, outputs, n_outputs, 2, stream, err);
}

/* ---- execution contexts ------------------------------------------------------------- */
graphc_status_t graphc_rt_context_create(graphc_rt_bundle_t *r, graphc_rt_context_t **out,
                                         graphc_error_t *err) {
  if (out) *out = NULL;
  if (!r || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_rt_context_create: NULL argument");
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  struct graphc_rt_context *c = calloc(1, sizeof *c);
  if (!c) {
    gc_error_at(&d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
  } else if (prepare(r, &d) == 0 && (r->hx || (c->c = gc_cu_ctx_new(r->x, &d)))) {
    c->r = r;
    pthread_mutex_lock(&r->mu);
    c->next = r->contexts;
    r->contexts = c;
    pthread_mutex_unlock(&r->mu);
    *out = c;
    c = NULL;
  }
  free(c);
  return finish(&d, err);
}

void graphc_rt_context_destroy(graphc_rt_context_t *c) {
  if (!c) return;
  graphc_rt_bundle_t *r = c->r;
  pthread_mutex_lock(&r->mu);
  for (struct graphc_rt_context **pp = &r->contexts; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  pthread_mutex_unlock(&r->mu);
  gc_cu_ctx_free(c->c);
  free(c);
}

/* The runs on a context: as run(), on its own working memory. */
static graphc_status_t context_run(graphc_rt_context_t *c, const graphc_tensor_t *in, size_t n_in,
                                   graphc_tensor_t *out, size_t n_out, int device, void *stream,
                                   graphc_error_t *err) {
  if (!c) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_rt_context: NULL context");
  if (!c->c) return run(c->r, in, n_in, out, n_out, device, stream, err);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  const gc_launch_plan *s = sig(c->r);
  if (check_tensors("inputs", s->inputs, s->n_inputs, in, n_in, &d) == 0 &&
      check_tensors("outputs", s->outputs, s->n_outputs, out, n_out, &d) == 0) {
    int rc = device == 2   ? gc_cu_ctx_enqueue(c->c, in, out, stream, &d)
             : device == 1 ? gc_cu_ctx_run_device(c->c, in, out, &d)
                           : gc_cu_ctx_run(c->c, in, out, &d);
    if (rc && !d.n_errors) gc_error_at(&d, GRAPHC_STATUS_DEVICE_ERROR, (gc_loc){0, 0}, "run failed");
  }
  return finish(&d, err);
}

graphc_status_t graphc_rt_context_run(graphc_rt_context_t *c, const graphc_tensor_t *inputs,
                                      size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                      graphc_error_t *err) {
  return context_run(c, inputs, n_inputs, outputs, n_outputs, 0, NULL, err);
}

graphc_status_t graphc_rt_context_run_device(graphc_rt_context_t *c, const graphc_tensor_t *inputs,
                                             size_t n_inputs, graphc_tensor_t *outputs,
                                             size_t n_outputs, graphc_error_t *err) {
  return context_run(c, inputs, n_inputs, outputs, n_outputs, 1, NULL, err);
}

graphc_status_t graphc_rt_context_enqueue(graphc_rt_context_t *c, const graphc_tensor_t *inputs,
                                          size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                          void *stream, graphc_error_t *err) {
  return context_run(c, inputs, n_inputs, outputs, n_outputs, 2, stream, err);
}

/* ---- pinned host memory ------------------------------------------------------------- */
/* Pinned memory belongs to a context: the allocation keeps device 0's primary context
 * retained (one reference per buffer) so that it outlives every executable, and
 * graphc_host_free drops that reference. */
graphc_status_t graphc_host_alloc(size_t bytes, void **out, graphc_error_t *err) {
  if (!out) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_host_alloc: NULL out");
  *out = NULL;
  gc_rt_settings s;
  gc_rt_settings_read(&s);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  const gc_cu_driver *cu = gc_cu_driver_get(&s, &d);
  CUcontext c = NULL, dummy;
  if (cu && GC_CU(cu, &d, DevicePrimaryCtxRetain, &c, 0) == 0) {
    if (GC_CU(cu, &d, CtxPushCurrent, c) == 0) {
      if (gc_cu_check(cu, &d, cu->MemHostAlloc(out, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE),
                      "cuMemHostAlloc", "pinned host buffer"))
        *out = NULL;
      cu->CtxPopCurrent(&dummy);
    }
    if (!*out) cu->DevicePrimaryCtxRelease(0);
  }
  return finish(&d, err);
}

void graphc_host_free(void *p) {
  if (!p) return;
  gc_rt_settings s;
  gc_rt_settings_read(&s);
  const gc_cu_driver *cu = gc_cu_driver_get(&s, NULL);
  if (!cu) return;   /* nothing can have been allocated */
  CUcontext c = NULL, dummy;
  int pushed = cu->DevicePrimaryCtxRetain(&c, 0) == CUDA_SUCCESS && cu->CtxPushCurrent(c) == CUDA_SUCCESS;
  cu->MemFreeHost(p);
  if (pushed) cu->CtxPopCurrent(&dummy);
  if (c) cu->DevicePrimaryCtxRelease(0);   /* this call's reference */
  cu->DevicePrimaryCtxRelease(0);          /* the buffer's */
}
