/* aot_cli.c - `graphc compile` for ahead-of-time use: .gcx bundles and C.
 *
 *   FILE --(graphc_compile, interpreter backend: parse, bind, weights, passes)-->
 *        executable graph --gc_cuda_build_bundle (per arch: lower, codegen)--> .gcx
 *   --emit c: the .gcx plus a C wrapper (NAME.c, compiled here with $CC or cc)
 *        --> NAME.h (entry points, shape constants) + NAME.o (wrapper + bytes)
 *   --target host --emit c: gc_host_build_aot (runtime/cpu_aot.c) gives the
 *        kernels as a native object and a bundle with a HOST section; the
 *        wrapper adds the table of kernel functions, and `cc -r` joins the
 *        two objects into NAME.o (libgraphc_rt runs it on a thread pool)
 *
 * The wrapper embeds the bundle with the assembler's .incbin (GNU as and
 * clang both have it), so even gigabytes of weights compile in a blink; the
 * object needs only libgraphc_rt at link time. Options of our own
 * (--embed-weights, --no-ptx, --no-cache) are taken out of argv before the
 * shared option parser (tools/graphc.c) sees the rest.
 */
#include "tools/aot_cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "graphc/graphc_rt.h"
#include "driver/cpu_aot.h"
#include "driver/cuda_backend.h"
#include "tools/cli.h"

#ifndef GRAPHC_INCLUDE_DIR
#define GRAPHC_INCLUDE_DIR "/usr/local/include"
#endif

/* Value of option `name` in argv ("--name V" or "--name=V"), else NULL. */
static const char *opt_value(int argc, char **argv, const char *name, const char *alias) {
  size_t n = strlen(name);
  for (int i = 0; i < argc; i++) {
    if ((strcmp(argv[i], name) == 0 || (alias && strcmp(argv[i], alias) == 0)) && i + 1 < argc)
      return argv[i + 1];
    if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
  }
  return NULL;
}

/* 1 when s ends with suffix. */
static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

int cli_aot_wanted(int argc, char **argv) {
  const char *emit = opt_value(argc, argv, "--emit", NULL);
  if (opt_value(argc, argv, "--target", NULL)) return 1;  /* checked by cli_cmd_compile_aot */
  if (emit) return strcmp(emit, "bundle") == 0 || strcmp(emit, "c") == 0;
  const char *out = opt_value(argc, argv, "--output", "-o");
  return out && ends_with(out, ".gcx");
}

/* Parse "sm_90,sm_80" into sms (deduplicated, in order); count, or -1 (printed). */
static int parse_archs(const char *s, int *sms, int cap) {
  int n = 0;
  const char *p = s;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char one[32];
    snprintf(one, sizeof one, "%.*s", (int)(len < 31 ? len : 31), p);
    int sm = gc_parse_arch(one);
    if (!sm || one[strlen(one) - 1] == 'a' || len >= 31) {
      fprintf(stderr, "graphc: error: unknown CUDA architecture '%.*s' in --arch (expected e.g. "
                      "sm_90 or sm_90,sm_80)\n", (int)len, p);
      return -1;
    }
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= sms[i] == sm;
    if (!dup) {
      if (n == cap) {
        fprintf(stderr, "graphc: error: too many architectures in --arch (at most %d)\n", cap);
        return -1;
      }
      sms[n++] = sm;
    }
    p += len;
    if (*p == ',') p++;
  }
  if (n == 0) fprintf(stderr, "graphc: error: --arch is empty\n");
  return n ? n : -1;
}

/* Write len bytes to path through a temporary file and a rename. 0, or -1 (printed). */
static int write_file(const char *path, const void *data, size_t len) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  int ok = f && fwrite(data, 1, len, f) == len;
  if (f && fclose(f) != 0) ok = 0;
  if (ok && rename(tmp, path) == 0) return 0;
  fprintf(stderr, "graphc: error: cannot write '%s': %s\n", path, strerror(errno));
  unlink(tmp);
  return -1;
}

/* A C identifier (or, with `inner`, the tail of one) from s: other characters
 * become '_'; a leading digit gets a '_' unless inner. */
static void c_ident_part(char *out, size_t n, const char *s, int upper, int inner) {
  size_t k = 0;
  if (!inner && isdigit((unsigned char)*s) && k + 1 < n) out[k++] = '_';
  for (; *s && k + 1 < n; s++) {
    int c = (unsigned char)*s;
    c = isalnum(c) ? (upper ? toupper(c) : c) : '_';
    out[k++] = (char)c;
  }
  if (k == 0 && n > 1) out[k++] = '_';
  out[k] = 0;
}

/* A C identifier from s. */
static void c_ident(char *out, size_t n, const char *s, int upper) { c_ident_part(out, n, s, upper, 0); }

/* C type a generated entry point uses for a dtype's elements. */
static const char *c_type(graphc_dtype_t t) {
  switch (t) {
    case GRAPHC_DTYPE_F64: return "double";
    case GRAPHC_DTYPE_F32: return "float";
    case GRAPHC_DTYPE_F16:
    case GRAPHC_DTYPE_BF16: return "uint16_t";
    case GRAPHC_DTYPE_I64: return "int64_t";
    case GRAPHC_DTYPE_I32: return "int32_t";
    case GRAPHC_DTYPE_I8: return "int8_t";
    default: return "uint8_t";  /* u8 and bool (one byte, 0 or 1) */
  }
}

/* "GRAPHC_DTYPE_F32" etc. */
static void dtype_enum(char *out, size_t n, graphc_dtype_t t) {
  char up[16];
  c_ident(up, sizeof up, graphc_dtype_name(t), 1);
  snprintf(out, n, "GRAPHC_DTYPE_%s", up);
}

typedef struct io_name {
  char param[128];  /* in_x / out_y, unique */
  char macro[192];  /* PREFIX_IN_X / PREFIX_OUT_Y */
} io_name;

/* Unique parameter and macro names for every input and output. */
static void io_names(const gc_exec *exe, const char *up, io_name *names) {
  size_t n = exe->n_inputs + exe->n_outputs;
  for (size_t i = 0; i < n; i++) {
    int in = i < exe->n_inputs;
    const graphc_tensor_info_t *t = in ? &exe->inputs[i] : &exe->outputs[i - exe->n_inputs];
    char lo[64], hi[64];
    c_ident_part(lo, sizeof lo, t->name, 0, 1);
    c_ident_part(hi, sizeof hi, t->name, 1, 1);
    snprintf(names[i].param, sizeof names[i].param, "%s_%s", in ? "in" : "out", lo);
    snprintf(names[i].macro, sizeof names[i].macro, "%s_%s_%s", up, in ? "IN" : "OUT", hi);
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[j].param, names[i].param) == 0 || strcmp(names[j].macro, names[i].macro) == 0) {
        size_t k = in ? i : i - exe->n_inputs;
        snprintf(names[i].param, sizeof names[i].param, "%s_%s_%zu", in ? "in" : "out", lo, k);
        snprintf(names[i].macro, sizeof names[i].macro, "%s_%s_%s_%zu", up, in ? "IN" : "OUT", hi, k);
        break;
      }
  }
}

/* The generated header: constants, the handle type, the entry points. */
static void gen_header(gc_sbuf *h, const gc_exec *exe, const char *pre, const char *up,
                       const io_name *names, const char *file, const char *archs, int embed,
                       int host) {
  char wnote[256];
  if (!exe->weights)
    snprintf(wnote, sizeof wnote, "The graph has no weights.");
  else if (embed)
    snprintf(wnote, sizeof wnote, "The weights are embedded.");
  else
    snprintf(wnote, sizeof wnote, "The weights are NOT embedded: before the first run, give each "
             "with\n * graphc_rt_set_weight(%s_bundle(m), name, data, nbytes, &err).", pre);
  gc_sbuf_printf(h,
      "/* %s.h - generated by graphc %s from %s (graph @%s, %s): do not edit.\n"
      " * Link %s.o and libgraphc_rt (pkg-config graphc_rt, or CMake graphc::graphc_rt)%s.\n"
      " * Shapes are fixed at compile time. %s */\n"
      "#ifndef %s_GRAPHC_H\n#define %s_GRAPHC_H\n\n"
      "#include <stddef.h>\n#include <stdint.h>\n\n#include <graphc/graphc_rt.h>\n\n"
      "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
      pre, GRAPHC_VERSION_STRING, file, exe->graph->name, archs, pre,
      host ? " and -lm;\n * host code: runs on the CPU (a thread pool), no GPU, no LLVM" : "", wnote, up, up);
  gc_sbuf_printf(h, "#define %s_NUM_INPUTS %zu\n#define %s_NUM_OUTPUTS %zu\n\n", up, exe->n_inputs,
                 up, exe->n_outputs);
  for (size_t i = 0; i < exe->n_inputs + exe->n_outputs; i++) {
    int in = i < exe->n_inputs;
    const graphc_tensor_info_t *t = in ? &exe->inputs[i] : &exe->outputs[i - exe->n_inputs];
    const char *m = names[i].macro;
    char dt[32];
    dtype_enum(dt, sizeof dt, t->dtype);
    gc_sbuf_printf(h, "/* %s %zu: %%%s %s[", in ? "input" : "output", in ? i : i - exe->n_inputs,
                   t->name, graphc_dtype_name(t->dtype));
    int64_t numel = 1;
    for (int k = 0; k < t->rank; k++) {
      gc_sbuf_printf(h, "%s%lld", k ? ", " : "", (long long)t->dims[k]);
      numel *= t->dims[k];
    }
    gc_sbuf_printf(h, "] */\n#define %s_DTYPE %s\n#define %s_RANK %d\n", m, dt, m, t->rank);
    for (int k = 0; k < t->rank; k++)
      gc_sbuf_printf(h, "#define %s_DIM%d %lld\n", m, k, (long long)t->dims[k]);
    gc_sbuf_printf(h, "#define %s_NUMEL %lld\n#define %s_NBYTES %zu\n\n", m, (long long)numel, m,
                   t->nbytes);
  }
  gc_sbuf_printf(h, "typedef struct %s %s_t;\n\n", pre, pre);
  gc_sbuf_printf(h,
      "/* Load the embedded bundle (checks it; %s). */\n"
      "graphc_status_t %s_create(%s_t **out, graphc_error_t *err);\n"
      "/* Run on host buffers (sizes in the constants above); the first run sets up the %s. */\n"
      "graphc_status_t %s_run(%s_t *m", host ? "binds the linked kernels" : "no GPU work yet",
      pre, pre, host ? "thread pool" : "GPU", pre, pre);
  for (size_t i = 0; i < exe->n_inputs + exe->n_outputs; i++) {
    int in = i < exe->n_inputs;
    const graphc_tensor_info_t *t = in ? &exe->inputs[i] : &exe->outputs[i - exe->n_inputs];
    gc_sbuf_printf(h, ", %s%s *%s", in ? "const " : "", c_type(t->dtype), names[i].param);
  }
  if (!host) {
    gc_sbuf_printf(h, ",\n    graphc_error_t *err);\n"
                      "/* Run on device pointers (CUdeviceptr values, primary context of device 0). */\n"
                      "graphc_status_t %s_run_device(%s_t *m", pre, pre);
    for (size_t i = 0; i < exe->n_inputs + exe->n_outputs; i++)
      gc_sbuf_printf(h, ", %svoid *%s", i < exe->n_inputs ? "const " : "", names[i].param);
  }
  gc_sbuf_printf(h,
      ",\n    graphc_error_t *err);\n"
      "/* The bundle handle, for the rest of graphc_rt.h (stats, weights, info). */\n"
      "graphc_rt_bundle_t *%s_bundle(%s_t *m);\n"
      "void %s_destroy(%s_t *m);\n\n"
      "/* The embedded .gcx bytes. */\nextern const unsigned char %s_gcx[];\nextern const size_t %s_gcx_size;\n\n"
      "#ifdef __cplusplus\n}\n#endif\n#endif\n",
      pre, pre, pre, pre, pre, pre);
}

/* Tensor array initializer for the wrapper (data from the parameters). */
static void gen_tensors(gc_sbuf *c, const gc_exec *exe, const io_name *names, int in,
                        int device) {
  size_t n = in ? exe->n_inputs : exe->n_outputs, base = in ? 0 : exe->n_inputs;
  gc_sbuf_printf(c, "  graphc_tensor_t %s[%zu] = {\n", in ? "in" : "out", n ? n : 1);
  for (size_t i = 0; i < n; i++) {
    const graphc_tensor_info_t *t = in ? &exe->inputs[i] : &exe->outputs[i];
    char dt[32];
    dtype_enum(dt, sizeof dt, t->dtype);
    gc_sbuf_printf(c, "      {.dtype = %s, .rank = %d, .dims = {", dt, t->rank);
    for (int k = 0; k < t->rank; k++) gc_sbuf_printf(c, "%s%lld", k ? ", " : "", (long long)t->dims[k]);
    gc_sbuf_printf(c, "}, .data = (void *)%s, .nbytes = %zu},\n", names[base + i].param, t->nbytes);
  }
  gc_sbuf_printf(c, "  };\n");
  (void)device;
}

/* The wrapper's C source: the bundle bytes (.incbin) and the entry points. */
static void gen_source(gc_sbuf *c, const gc_exec *exe, const char *pre, const io_name *names,
                       const char *gcx_path, size_t gcx_len, const gc_host_aot *host) {
  gc_sbuf_printf(c, "/* %s.c - generated by graphc %s: the bundle and the entry points of %s.h. */\n"
                    "#include <stdlib.h>\n\n#include \"%s.h\"\n\n",
                 pre, GRAPHC_VERSION_STRING, pre, pre);
  gc_sbuf_printf(c, "__asm__(\".section .rodata\\n.balign 64\\n.globl %s_gcx\\n.type %s_gcx, %%object\\n"
                    "%s_gcx:\\n.incbin \\\"", pre, pre, pre);
  for (const char *p = gcx_path; *p; p++) {  /* escaped for C, then for the assembler */
    if (*p == '"' || *p == '\\') gc_sbuf_puts(c, "\\\\\\");
    gc_sbuf_putc(c, *p);
  }
  gc_sbuf_printf(c, "\\\"\\n.size %s_gcx, .-%s_gcx\\n.previous\\n\");\n", pre, pre);
  gc_sbuf_printf(c, "const size_t %s_gcx_size = %zu;\n\nstruct %s {\n  graphc_rt_bundle_t *b;\n};\n\n",
                 pre, gcx_len, pre);
  if (host) {  /* the kernels, in the object joined to this one */
    for (int i = 0; i < host->n_kernels; i++)
      gc_sbuf_printf(c, "void %s(void *const *args, int64_t begin, int64_t end);\n", host->symbols[i]);
    gc_sbuf_printf(c, "\nstatic const graphc_rt_host_kernel_t %s_kernels[] = {\n", pre);
    for (int i = 0; i < host->n_kernels; i++)
      gc_sbuf_printf(c, "    {\"%s\", %s},\n", host->kernels[i], host->symbols[i]);
    gc_sbuf_printf(c, "    {0, 0}};\n\n");
  }
  gc_sbuf_printf(c,
      "graphc_status_t %s_create(%s_t **out, graphc_error_t *err) {\n"
      "  if (!out) return GRAPHC_STATUS_INVALID_ARGUMENT;\n"
      "  *out = calloc(1, sizeof **out);\n"
      "  if (!*out) return GRAPHC_STATUS_OUT_OF_MEMORY;\n"
      "  graphc_status_t st = graphc_rt_bundle_load_%s(%s_gcx, %s_gcx_size, ", pre, pre,
      host ? "host" : "memory", pre, pre);
  if (host) gc_sbuf_printf(c, "%s_kernels, %d, ", pre, host->n_kernels);
  gc_sbuf_printf(c, "&(*out)->b, err);\n"
      "  if (st != GRAPHC_STATUS_OK) {\n    free(*out);\n    *out = NULL;\n  }\n  return st;\n}\n\n");
  for (int device = 0; device < (host ? 1 : 2); device++) {
    gc_sbuf_printf(c, "graphc_status_t %s_run%s(%s_t *m", pre, device ? "_device" : "", pre);
    for (size_t i = 0; i < exe->n_inputs + exe->n_outputs; i++) {
      int in = i < exe->n_inputs;
      const graphc_tensor_info_t *t = in ? &exe->inputs[i] : &exe->outputs[i - exe->n_inputs];
      gc_sbuf_printf(c, ", %s%s *%s", in ? "const " : "", device ? "void" : c_type(t->dtype),
                     names[i].param);
    }
    gc_sbuf_printf(c, ",\n    graphc_error_t *err) {\n  if (!m) return GRAPHC_STATUS_INVALID_ARGUMENT;\n");
    gen_tensors(c, exe, names, 1, device);
    gen_tensors(c, exe, names, 0, device);
    gc_sbuf_printf(c, "  return graphc_rt_run%s(m->b, in, %zu, out, %zu, err);\n}\n\n",
                   device ? "_device" : "", exe->n_inputs, exe->n_outputs);
  }
  gc_sbuf_printf(c,
      "graphc_rt_bundle_t *%s_bundle(%s_t *m) { return m ? m->b : NULL; }\n\n"
      "void %s_destroy(%s_t *m) {\n  if (!m) return;\n  graphc_rt_bundle_destroy(m->b);\n  free(m);\n}\n",
      pre, pre, pre, pre);
}

/* Single-quote s for /bin/sh. */
static void sh_quote(gc_sbuf *b, const char *s) {
  gc_sbuf_putc(b, '\'');
  for (; *s; s++) {
    if (*s == '\'')
      gc_sbuf_puts(b, "'\\''");
    else
      gc_sbuf_putc(b, *s);
  }
  gc_sbuf_putc(b, '\'');
}

/* Directory holding graphc/graphc_rt.h: $GRAPHC_INCLUDE_DIR, <exe>/../include, the source tree. */
static void include_dir(char *out, size_t n) {
  const char *env = getenv("GRAPHC_INCLUDE_DIR");
  char probe[4400];
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return;
  }
  char exe[4096];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k > 0) {
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = 0;
      snprintf(probe, sizeof probe, "%s/../include/graphc/graphc_rt.h", exe);
      if (access(probe, R_OK) == 0 && snprintf(out, n, "%s/../include", exe) < (int)n) return;
    }
  }
  snprintf(out, n, "%s", GRAPHC_INCLUDE_DIR);
}

/* Write NAME.h and compile NAME.o from the bundle (base = output path without extension). */
static int emit_c(const gc_exec *exe, const char *base, const void *gcx, size_t gcx_len,
                  const char *file, const char *archs, int embed, const gc_host_aot *host) {
  const char *slash = strrchr(base, '/');
  char pre[64], up[64];
  c_ident(pre, sizeof pre, slash ? slash + 1 : base, 0);
  c_ident(up, sizeof up, pre, 1);
  size_t nio = exe->n_inputs + exe->n_outputs;
  io_name *names = calloc(nio + 1, sizeof *names);
  if (!names) return -1;
  io_names(exe, up, names);
  gc_sbuf h = {0}, c = {0}, cmd = {0};
  gen_header(&h, exe, pre, up, names, file, archs, embed, host != NULL);
  const char *tmpdir = getenv("TMPDIR");
  char dirbuf[3000];
  snprintf(dirbuf, sizeof dirbuf, "%s/graphc-cc-XXXXXX",
           tmpdir && *tmpdir && strlen(tmpdir) < 2900 ? tmpdir : "/tmp");
  char *dir = mkdtemp(dirbuf);
  char hpath[4200], gpath[4200], cpath[4200], opath[4200], hdr_tmp[4200], inc[4096];
  char kpath[4200], wpath[4200];  /* host: the kernels' object and the wrapper's */
  int rc = -1;
  if (!dir) {
    fprintf(stderr, "graphc: error: cannot create a temporary directory: %s\n", strerror(errno));
    goto out;
  }
  snprintf(gpath, sizeof gpath, "%s/%s.gcx", dir, pre);
  snprintf(cpath, sizeof cpath, "%s/%s.c", dir, pre);
  snprintf(hdr_tmp, sizeof hdr_tmp, "%s/%s.h", dir, pre);
  snprintf(hpath, sizeof hpath, "%s.h", base);
  snprintf(opath, sizeof opath, "%s.o", base);
  snprintf(kpath, sizeof kpath, "%s/%s_kernels.o", dir, pre);
  snprintf(wpath, sizeof wpath, "%s/%s_wrapper.o", dir, pre);
  gen_source(&c, exe, pre, names, gpath, gcx_len, host);
  if (h.failed || c.failed) {
    fprintf(stderr, "graphc: error: out of memory\n");
    goto clean;
  }
  if (write_file(gpath, gcx, gcx_len) || write_file(cpath, c.data, c.len) ||
      write_file(hdr_tmp, h.data, h.len) ||
      (host && write_file(kpath, host->object, host->object_len)))
    goto clean;
  include_dir(inc, sizeof inc);
  const char *cc = getenv("CC");
  gc_sbuf_puts(&cmd, cc && *cc ? cc : "cc");  /* $CC may carry flags: not quoted */
  gc_sbuf_puts(&cmd, " -c -O2 -fPIC -I");
  sh_quote(&cmd, dir);
  gc_sbuf_puts(&cmd, " -I");
  sh_quote(&cmd, inc);
  gc_sbuf_puts(&cmd, " -o ");
  sh_quote(&cmd, host ? wpath : opath);
  gc_sbuf_putc(&cmd, ' ');
  sh_quote(&cmd, cpath);
  if (host) {  /* then one relocatable object of the wrapper and the kernels */
    gc_sbuf_puts(&cmd, " && ");
    gc_sbuf_puts(&cmd, cc && *cc ? cc : "cc");
    gc_sbuf_puts(&cmd, " -r -nostdlib -o ");
    sh_quote(&cmd, opath);
    gc_sbuf_putc(&cmd, ' ');
    sh_quote(&cmd, wpath);
    gc_sbuf_putc(&cmd, ' ');
    sh_quote(&cmd, kpath);
  }
  int st = cmd.failed ? -1 : system(cmd.data);
  if (st != 0) {
    fprintf(stderr, "graphc: error: the C compiler failed (%s%s): %s\n",
            st == -1 ? "could not run it" : "exit status ", st == -1 ? "" : "non-zero", cmd.data);
    fprintf(stderr, "graphc: set CC to a C compiler (gcc or clang) if `cc` is not one\n");
    unlink(opath);
    goto clean;
  }
  if (write_file(hpath, h.data, h.len) == 0) rc = 0;
clean:
  unlink(gpath);
  unlink(cpath);
  unlink(kpath);
  unlink(wpath);
  unlink(hdr_tmp);
  rmdir(dir);
out:
  gc_sbuf_free(&h);
  gc_sbuf_free(&c);
  gc_sbuf_free(&cmd);
  free(names);
  return rc;
}

static const char *const usage_aot =
    "usage: graphc compile FILE --arch sm_90[,sm_80...] -o MODEL.gcx [options]\n"
    "       graphc compile FILE --emit bundle -o MODEL.gcx [options]\n"
    "       graphc compile FILE --emit c -o NAME [options]      (writes NAME.h and NAME.o)\n"
    "       graphc compile FILE --target host --emit c -o NAME [--cpu CPU] [options]\n"
    "Compile the entry graph (all symbolic dims bound) ahead of time: cubins per\n"
    "architecture plus PTX, the launch plan and the I/O signature in one file that\n"
    "libgraphc_rt runs with only the CUDA driver.\n\noptions:\n"
    "  --emit bundle|c   a .gcx bundle (default for -o *.gcx), or a C header + object\n"
    "  --target cuda|host  GPU code (default), or native code for this machine's CPU\n"
    "                    (--emit c only; the program runs it on a thread pool)\n"
    "  --cpu CPU         host: native (default), generic, x86-64, x86-64-v2/v3/v4\n"
    "  --arch LIST       comma-separated architectures (default sm_90)\n"
    "  --embed-weights   put the weights into the bundle (else supply them at run time)\n"
    "  --no-ptx          cubins only, no PTX fallback for other GPUs\n"
    "  --no-cache        do not use the JIT cache for the module images\n"
    "  -o, --output OUT  the .gcx file, or the path prefix of NAME.h / NAME.o\n";

int cli_cmd_compile_aot(int argc, char **argv, const char *usage_common, const char *usage_compile) {
  char usage[6144];
  snprintf(usage, sizeof usage, "%s%s%s", usage_aot, usage_common, usage_compile);
  /* Our own flags out, the rest to the shared parser. */
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  if (!rest) return 2;
  int nrest = 0, embed = 0, no_ptx = 0, no_cache = 0;
  const char *target = NULL, *cpu = NULL;
  for (int i = 0; i < argc; i++) {
    const char **val = strncmp(argv[i], "--target", 8) == 0 ? &target
                     : strncmp(argv[i], "--cpu", 5) == 0 ? &cpu : NULL;
    size_t n = val == &target ? 8 : 5;
    if (val && argv[i][n] == '=') {
      *val = argv[i] + n + 1;
    } else if (val && argv[i][n] == 0 && i + 1 < argc) {
      *val = argv[++i];
    } else if (strcmp(argv[i], "--embed-weights") == 0) embed = 1;
    else if (strcmp(argv[i], "--no-ptx") == 0) no_ptx = 1;
    else if (strcmp(argv[i], "--no-cache") == 0) no_cache = 1;
    else rest[nrest++] = argv[i];
  }
  cli_opts o;
  int prc = cli_parse(nrest, rest, &o, usage);
  free(rest);
  if (prc != 0) return 1;
  if (o.help) return 0;
  int c_mode = o.emit && strcmp(o.emit, "c") == 0;
  int host = target && strcmp(target, "host") == 0;
  if (target && !host && strcmp(target, "cuda") != 0) {
    fprintf(stderr, "graphc: error: unknown --target '%s' (expected cuda or host)\n", target);
    return 1;
  }
  if (host && !c_mode) {
    fprintf(stderr, "graphc: error: --target host writes a C header and an object: use --emit c "
                    "-o NAME\n");
    return 1;
  }
  if (cpu && !host) {
    fprintf(stderr, "graphc: error: --cpu applies to --target host\n");
    return 1;
  }
  if (!o.output) {
    fprintf(stderr, "graphc: error: --emit %s writes files: give -o %s\n", c_mode ? "c" : "bundle",
            c_mode ? "NAME" : "MODEL.gcx");
    return 1;
  }
  if (!host && o.copts.backend != GRAPHC_BACKEND_DEFAULT && o.copts.backend != GRAPHC_BACKEND_CUDA) {
    fprintf(stderr, "graphc: error: bundles hold CUDA code: --backend must be cuda\n");
    return 1;
  }
  int sms[32];
  int n_sms = host ? 0 : parse_archs(o.copts.arch ? o.copts.arch : "sm_90", sms, 32);
  if (n_sms < 0) return 1;
  char archs[512] = "";
  for (int i = 0; i < n_sms; i++)
    snprintf(archs + strlen(archs), sizeof archs - strlen(archs), "%ssm_%d", i ? "," : "", sms[i]);

  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  graphc_model_t *m = NULL;
  graphc_executable_t *exe = NULL;
  double t0 = cli_now_ms();
  graphc_status_t st = cli_load(ctx, &o, &m, &err);
  graphc_compile_options_t copts = o.copts;
  copts.backend = GRAPHC_BACKEND_INTERP;  /* the graph after parsing, weights and passes */
  copts.arch = NULL;
  if (st == GRAPHC_STATUS_OK)
    st = gc_compile_for(m, &copts, host ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_CUDA, &exe, &err);
  int rc = cli_report(ctx, st, &err);
  if (rc == 0) {
    gc_aot_options ao = {sms, n_sms, o.copts.codegen, embed, no_ptx, o.copts.eager, !no_cache};
    gc_diags d;
    gc_diags_init(&d, o.file, NULL, 0);
    gc_sbuf stats = {0};
    gc_sbuf_printf(&stats, "aot: parse, weights, passes %.2f ms\n%s", cli_now_ms() - t0,
                   graphc_executable_stats(exe));  /* the passes' lines (precision: ...) */
    void *bytes = NULL;
    size_t len = 0;
    double t1 = cli_now_ms();
    char base[4096], pre[64];
    snprintf(base, sizeof base, "%s", o.output);
    if (ends_with(base, ".o") || ends_with(base, ".h")) base[strlen(base) - 2] = 0;
    c_ident(pre, sizeof pre, strrchr(base, '/') ? strrchr(base, '/') + 1 : base, 0);
    gc_host_aot ha;
    gc_host_aot_options hao = {pre, cpu, embed};
    memset(&ha, 0, sizeof ha);
    int built = host ? gc_host_build_aot(exe, &hao, &ha, &stats, &d)
                     : gc_cuda_build_bundle(exe, &ao, &bytes, &len, &stats, &d);
    if (host && built == 0) {
      bytes = ha.bundle;  /* ours now */
      len = ha.bundle_len;
      ha.bundle = NULL;
    }
    if (built != 0) {
      char *r = gc_diags_render(&d);
      fputs(r ? r : "graphc: error: bundle failed\n", stderr);
      free(r);
      rc = d.status == GRAPHC_STATUS_INTERNAL ? 2 : 1;
    } else if (c_mode) {
      rc = emit_c(exe, base, bytes, len, o.file, host ? ha.target : archs, embed,
                  host ? &ha : NULL) == 0 ? 0 : 1;
    } else {
      rc = write_file(o.output, bytes, len) == 0 ? 0 : 1;
    }
    if (rc == 0 && o.stats) {
      /* The total, and the bundle read back the way libgraphc_rt loads it (host part). */
      gc_sbuf_printf(&stats, "aot: total %.2f ms (parse to module images and bundle: %.2f ms)\n",
                     cli_now_ms() - t0, cli_now_ms() - t1 + 0.0);
      double t2 = cli_now_ms();
      graphc_rt_bundle_t *rb = NULL;
      graphc_error_t rerr;
      graphc_status_t rst = graphc_rt_bundle_load_memory(bytes, len, &rb, &rerr);
      gc_sbuf_printf(&stats, "aot: bundle load (host: checksum, parse, checks) %.3f ms: %s\n",
                     cli_now_ms() - t2, rst == GRAPHC_STATUS_OK ? "ok" : rerr.message);
      graphc_rt_bundle_destroy(rb);
      if (rst != GRAPHC_STATUS_OK) rc = 2;
    }
    if (o.stats && stats.data) printf("# stats\n%s", stats.data);
    free(bytes);
    gc_host_aot_free(&ha);
    gc_sbuf_free(&stats);
    gc_diags_free(&d);
  }
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return rc;
}
