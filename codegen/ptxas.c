/* ptxas.c - PTX to cubin through the toolkit's ptxas program (whole-program mode).
 *
 *   PTX text --> $TMPDIR/graphc-ptxas-XXXXXX/graphc.ptx --ptxas -arch=sm_NN -O3--> graphc.cubin
 *
 * Why a program and not only nvJitLink (jitlink.c): nvJitLink, like the driver's
 * cuLink*, compiles PTX as relocatable device code (ptxas -c), and ptxas then keeps
 * more registers per thread. The f16 softmax over rows of 8192 took 96 registers
 * there and 64 in whole-program mode: two blocks of 256 threads per SM instead of
 * four, 67% of copy bandwidth instead of 82% (H200, docs/performance.md). XLA runs
 * ptxas the same way. nvJitLink stays the fallback when no ptxas is found: that rule
 * is gc_ptx_compiler_pick, here, and every caller asks it.
 *
 * Which ptxas (gc_toolchain, from the settings): GRAPHC_PTXAS (a path; "off" or "0":
 * none), else bin/ptxas under CUDA_HOME, CUDA_PATH, the toolkit this build was
 * configured with, /usr/local/cuda. Its files go to a new folder under TMPDIR.
 * The cubin records ptxas' options but not its file names, so the bytes do not
 * depend on the temporary directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"

extern char **environ;

#ifndef GRAPHC_PTXAS  /* the toolkit's ptxas at configure time (CMakeLists.txt) */
#define GRAPHC_PTXAS "/usr/local/cuda/bin/ptxas"
#endif

/* Is dir/ptxas (dir NULL: path itself) an executable file? Writes it to out. */
static int try_ptxas(const char *dir, const char *path, char *out, size_t cap) {
  if (dir) {
    if (!*dir || snprintf(out, cap, "%s/ptxas", dir) >= (int)cap) return 0;
  } else if (snprintf(out, cap, "%s", path) >= (int)cap) {
    return 0;
  }
  struct stat s;
  return stat(out, &s) == 0 && S_ISREG(s.st_mode) && access(out, X_OK) == 0;
}

int gc_ptxas_find(const gc_toolchain *tc, char *out, size_t cap) {
  const char *env = tc ? tc->ptxas : NULL;
  if (env && *env) {
    if (strcmp(env, "off") == 0 || strcmp(env, "0") == 0) return 0;
    return try_ptxas(NULL, env, out, cap);
  }
  char dir[4096];
  const char *roots[] = {tc ? tc->cuda_home : NULL, tc ? tc->cuda_path : NULL};
  for (int i = 0; i < 2; i++)
    if (roots[i] && snprintf(dir, sizeof dir, "%s/bin", roots[i]) < (int)sizeof dir &&
        try_ptxas(dir, NULL, out, cap))
      return 1;
  return try_ptxas(NULL, GRAPHC_PTXAS, out, cap) || try_ptxas("/usr/local/cuda/bin", NULL, out, cap);
}

/* The ptxas program when there is one, else nvJitLink. */
gc_ptx_compiler gc_ptx_compiler_pick(const gc_toolchain *tc, char *ptxas, size_t cap) {
  return gc_ptxas_find(tc, ptxas, cap) ? GC_PTXC_PTXAS : GC_PTXC_NVJITLINK;
}

void gc_ptx_compiler_id(const gc_toolchain *tc, char *out, size_t cap) {
  char p[4096];
  struct stat s;
  if (gc_ptx_compiler_pick(tc, p, sizeof p) == GC_PTXC_PTXAS && stat(p, &s) == 0)
    snprintf(out, cap, "ptxas %s %lld %lld", p, (long long)s.st_size, (long long)s.st_mtime);
  else
    gc_nvjitlink_id(out, cap);
}

/* Write text to path; 0 on success. */
static int spill(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t n = strlen(text);
  int bad = fwrite(text, 1, n, f) != n;
  bad |= fclose(f) != 0;
  return bad ? -1 : 0;
}

int gc_ptxas_compile(const char *ptxas, const char *ptx, int sm, int arch_a, int threads, void **cubin,
                     size_t *cubin_len, const gc_toolchain *tc, gc_diags *d) {
  *cubin = NULL;
  *cubin_len = 0;
  gc_loc noloc = {0, 0};
  const char *tmp = tc ? tc->tmpdir : NULL;
  char dir[4096], in[4200], outp[4200], logp[4200];
  if (snprintf(dir, sizeof dir, "%s/graphc-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)sizeof dir ||
      !mkdtemp(dir)) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, noloc, "ptxas: cannot make a temporary directory (%s)",
                strerror(errno));
    return -1;
  }
  snprintf(in, sizeof in, "%s/graphc.ptx", dir);
  snprintf(outp, sizeof outp, "%s/graphc.cubin", dir);
  snprintf(logp, sizeof logp, "%s/ptxas.log", dir);
  int rc = -1;
  char *log = NULL;
  if (spill(in, ptx) != 0) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, noloc, "ptxas: cannot write %s (%s)", in, strerror(errno));
    goto done;
  }
  char arch[32], split[32];
  snprintf(arch, sizeof arch, "-arch=sm_%d%s", sm, arch_a ? "a" : "");
  snprintf(split, sizeof split, "--split-compile=%d", threads);
  char *argv[] = {"ptxas", arch, "-O3", split, in, "-o", outp, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid;
  int se = posix_spawn(&pid, ptxas, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (se != 0) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "cannot run %s (%s)", ptxas, strerror(se));
    goto done;
  }
  int status = 0;
  pid_t w;
  do w = waitpid(pid, &status, 0);
  while (w < 0 && errno == EINTR);
  size_t loglen = 0;
  log = gc_read_file(logp, &loglen, NULL);
  while (log && loglen && (log[loglen - 1] == '\n' || log[loglen - 1] == '\r')) log[--loglen] = 0;
  if (w < 0 || !WIFEXITED(status)) {  /* killed (a crash, out of memory): not the PTX's fault */
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "%s for sm_%d did not finish%s%s", ptxas, sm,
                log && *log ? ":\n" : "", log ? log : "");
    goto done;
  }
  if (WEXITSTATUS(status) != 0) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "ptxas (%s) for sm_%d failed (exit %d)%s%s", ptxas, sm,
                WEXITSTATUS(status), log && *log ? ":\n" : "", log ? log : "");
    goto done;
  }
  size_t n = 0;
  char *bin = gc_read_file(outp, &n, NULL);
  if (!bin || n < 4 || memcmp(bin, "\177ELF", 4) != 0) {
    free(bin);
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "ptxas (%s) for sm_%d wrote no cubin", ptxas, sm);
    goto done;
  }
  *cubin = bin;
  *cubin_len = n;
  rc = 0;
done:
  free(log);
  unlink(in);
  unlink(outp);
  unlink(logp);
  rmdir(dir);
  return rc;
}
